#!/bin/sh
test_description='more faults: origins that stall, DNS slow, truncated or dead, clients that half-close or vanish with a reset'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl

IDLE_MS=1000		# --idle-timeout of the proxy
STALL_MS=4000		# how long the origin stalls: well past it
DNS_SLOW_MS=700		# a DNS answer this late, the resolver's timeout 2 s
SOURCE_BYTES=200000000	# a source that would take long to drain
READ_BYTES=300000	# what a vanishing client reads first
WAIT_SECONDS=10		# for a connection to go away


# metric_is NAME VALUE; 2 when it cannot be read.
metric_is () {
	metric_is_v_=$(proxy_metric "$1") || return 2
	test "$metric_is_v_" = "$2"
}

# settled: no tunnel, one connection (the scrape).
settled () {
	wait_until "$WAIT_SECONDS" metric_is intutic_tunnels_active 0 &&
	wait_until "$WAIT_SECONDS" metric_is intutic_connections_active 1
}

# alive: a good request through the proxy works, and its connection is
# over (the proxy may see curl's FIN after curl exited: its close record
# must not land after the next test's mark).
alive () {
	proxy_serves "origin.test:$ORIGIN_PORT" &&
	settled
}

# vanish.py MODE PROXY_PORT TARGET...: a client that goes away with a TCP
# reset (SO_LINGER 0), never a FIN:
#   tunnel HOST:PORT   CONNECT, "hi\n", waits for the decision record in
#                      AUDIT (the 5th argument), reads READ bytes of what
#                      the origin sends, reset; prints how many bytes it read
#   response URL       an absolute-form GET, read READ bytes of the answer
#                      (head and body), reset; prints how many
#   request HOST:PORT  a POST that promises 100000 bytes and sends 50000,
#                      waits for the proxy to connect the origin, reset
# (tcpinfo.py tells that, from the kernel's socket table: PYTHONPATH).
PYTHONPATH=$top_srcdir/t/helpers
export PYTHONPATH
cat >vanish.py <<\EOF
import socket, struct, sys, time
from tcpinfo import wait_established
mode, proxy, target, want = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
s = socket.create_connection(("127.0.0.1", proxy), timeout=10)
def reset():
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
def read(n):
    got = 0
    while got < n:
        d = s.recv(min(65536, n - got))
        if not d:
            sys.exit("closed after %d bytes" % got)
        got += len(d)
    return got
if mode == "tunnel":
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        d = s.recv(1)
        if not d:
            sys.exit("no answer to CONNECT")
        head += d
    if not head.startswith(b"HTTP/1.1 200 "):
        sys.exit("answer %r" % head)
    s.sendall(b"hi\n")     # past the peek: a tunnel, relaying
    # The origin speaks first, so its bytes come before the proxy has read
    # "hi": no reset until the proxy's decision record says it has (the
    # audit log is the 5th argument).
    me = '"client":"%s:%d"' % s.getsockname()[:2]
    for _ in range(100):
        with open(sys.argv[5]) as f:
            if any('"event":"decision"' in l and me in l for l in f):
                break
        time.sleep(0.1)
    else:
        sys.exit("no decision record for %s" % me)
    n = read(want)
elif mode == "response":
    host = target.split("/")[2]
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, host)).encode())
    n = read(want)
else:
    host, port = target.rsplit(":", 1)
    s.sendall(("POST http://%s/echo HTTP/1.1\r\nHost: %s\r\n"
               "Content-Length: 100000\r\n\r\n" % (target, target)).encode()
              + b"x" * 50000)
    if not wait_established(int(port)):
        sys.exit("the proxy never connected to the origin")
    n = 50000
reset()
print(n)
EOF

test_expect_success 'setup: an origin, a sink, a source, an echo, a DNS server, rules, the proxy' '
	start_origin origin &&
	start_echo sink --mode sink &&
	start_echo source --mode source $SOURCE_BYTES &&
	start_echo echo &&
	cat >zone <<-EOF &&
	slow.test SLOW $DNS_SLOW_MS
	slow.test A 127.0.0.1
	trunc.test TRUNCATED
	trunc.test A 127.0.0.1
	EOF
	start_dns zone &&
	write_resolv_conf "$PWD/resolv.conf" timeout:2 attempts:1 &&
	write_hosts hosts origin.test=127.0.0.1 sink.test=127.0.0.1 \
		source.test=127.0.0.1 echo.test=127.0.0.1 &&
	cat >rules.yaml <<-EOF &&
	version: 1
	ports: [$ORIGIN_PORT]
	allow:
	  - origin.test
	  - slow.test
	  - trunc.test
	  - "sink.test:$SINK_PORT"
	  - "source.test:$SOURCE_PORT"
	  - "echo.test:$ECHO_PORT"
	  - "127.0.0.0/8:$ORIGIN_PORT,$SINK_PORT,$SOURCE_PORT,$ECHO_PORT"
	EOF
	start_proxy rules.yaml --idle-timeout $IDLE_MS &&
	alive
'

# --- origins that stall ------------------------------------------------------------

test_expect_success "an origin that answers nothing: the exchange ends after --idle-timeout ($IDLE_MS ms), not when the origin wakes up" '
	audit_mark &&
	timeouts=$(proxy_metric intutic_timeouts_total) &&
	{
		proxy_curl -D head -o body -w "%{http_code} %{time_total}\n" \
			"http://origin.test:$ORIGIN_PORT/slow?ms=$STALL_MS" >code 2>err
		echo $? >rc
	} &&
	read -r status secs <code &&
	awk -v t="$secs" -v i="$IDLE_MS" -v s="$STALL_MS" \
		"BEGIN { exit !(t >= i / 1000 - 0.05 && t < s / 1000 - 1) }" &&
	wait_upstreams "$ORIGIN_PORT" 0 &&
	audit_since 1 &&
	audit_expect 1 event=decision decision=allow reason=allowed host=origin.test &&
	audit_expect 1 event=close bytes_down=0 "bytes_up>50" "duration_ms>=$((IDLE_MS - 50))" &&
	test "$(proxy_metric intutic_timeouts_total)" = $((timeouts + 1)) &&
	alive
'

# A timeout is a 504 (intutic-proxy(8)).  Nothing of the answer has gone to the
# client yet, so it is told: 504 upstream-timeout.
test_expect_success 'the client of that exchange is answered 504 with a timeout reason' '
	read -r rc <rc &&
	read -r status secs <code &&
	test "$rc" = 0 &&
	test "$status" = 504 &&
	test_grep "^X-Intutic-Error: [a-z-]*timeout" head
'

test_expect_success 'an origin that stalls in the middle of its body: the client has the head, the body is cut after --idle-timeout' '
	audit_mark &&
	rm -f head body code &&
	{
		proxy_curl -D head -o body -w "%{http_code} %{time_total}\n" \
			"http://origin.test:$ORIGIN_PORT/slow?ms=$STALL_MS&after=headers" >code 2>err
		echo $? >rc
	} &&
	read -r rc <rc &&
	test "$rc" = 18 &&
	read -r status secs <code &&
	test "$status" = 200 &&
	awk -v t="$secs" -v i="$IDLE_MS" -v s="$STALL_MS" \
		"BEGIN { exit !(t >= i / 1000 - 0.05 && t < s / 1000 - 1) }" &&
	test ! -s body &&
	wait_upstreams "$ORIGIN_PORT" 0 &&
	audit_since 1 &&
	audit_expect 1 event=close status=200 "bytes_down>50" &&
	alive
'

test_expect_success 'a tunnel whose origin never answers: closed after --idle-timeout, the bytes sent in its close record' '
	audit_mark &&
	start=$(date +%s) &&
	proxy_tcp --to "sink.test:$SINK_PORT" --send "hello, anyone" --timeout 8 \
		>out 2>err &&
	end=$(date +%s) &&
	test_must_be_empty out &&
	test $((end - start)) -le 4 &&
	audit_conn proto=connect host=sink.test decision=allow reason=allowed \
		-- bytes_up=13 bytes_down=0 "duration_ms>=$((IDLE_MS - 50))" &&
	wait_upstreams "$SINK_PORT" 0 &&
	settled
'

# --- DNS ---------------------------------------------------------------------------

test_expect_success "a DNS answer ${DNS_SLOW_MS} ms late, within the resolver's timeout: the request works" '
	audit_mark &&
	proxy_curl -o out -w "%{http_code} %{time_total}\n" \
		"http://slow.test:$ORIGIN_PORT/" >code &&
	read -r status secs <code &&
	test "$status" = 200 &&
	awk -v t="$secs" -v d="$DNS_SLOW_MS" "BEGIN { exit !(t >= d / 1000 - 0.05) }" &&
	echo "hello from slow.test:$ORIGIN_PORT" >expect &&
	test_cmp expect out &&
	test_grep "^slow.test A udp" "$DNS_QUERY_LOG" &&
	audit_conn host=slow.test decision=allow reason=allowed addr=127.0.0.1 \
		-- status=200
'

# libevent 2.1 evdns takes a truncated UDP answer (TC) for a failure and
# does not ask again over TCP (t/helpers/README.md): the name fails at
# once, dns-failed, and nothing is dialled.
test_expect_success 'a truncated DNS answer (TC over UDP): 502 dns-failed at once, no retry over TCP, nothing dialled' '
	audit_mark &&
	: >"$DNS_QUERY_LOG" &&
	failures=$(proxy_metric intutic_dns_failures_total) &&
	proxy_curl -D head -o body -w "%{http_code} %{time_total}\n" \
		"http://trunc.test:$ORIGIN_PORT/" >code &&
	read -r status secs <code &&
	test "$status" = 502 &&
	awk -v t="$secs" "BEGIN { exit !(t < 1) }" &&
	test_grep "^X-Intutic-Error: dns-failed" head &&
	test_grep "trunc.test.*the nameserver failed" body &&
	test_grep "^trunc.test A udp" "$DNS_QUERY_LOG" &&
	test_grep -v " tcp\$" "$DNS_QUERY_LOG" &&
	audit_conn host=trunc.test reason=dns-failed addr= status=502 \
		-- status=502 bytes_up=0 bytes_down=0 &&
	test "$(proxy_metric intutic_dns_failures_total)" = $((failures + 1))
'

# --- clients that half-close ------------------------------------------------------

test_expect_success 'HTTP: a client that half-closes after its request still gets the whole answer' '
	printf "GET http://origin.test:%s/bytes/70000 HTTP/1.1\r\nHost: origin.test:%s\r\n\r\n" \
		"$ORIGIN_PORT" "$ORIGIN_PORT" >req &&
	audit_mark &&
	proxy_send --send-file req --half-close >out 2>err &&
	test_grep "^HTTP/1.1 200 OK" out &&
	body_len=$(python3 -c "import sys; print(len(open(sys.argv[1], \"rb\").read().split(b\"\\r\\n\\r\\n\", 1)[1]))" out) &&
	test "$body_len" = 70000 &&
	audit_conn host=origin.test decision=allow -- status=200 "bytes_down>70000"
'

test_expect_success 'HTTP: the same with an answer that comes late: it is waited for, not cut' '
	printf "GET http://origin.test:%s/slow?ms=500 HTTP/1.1\r\nHost: origin.test:%s\r\n\r\n" \
		"$ORIGIN_PORT" "$ORIGIN_PORT" >req &&
	audit_mark &&
	proxy_send --send-file req --half-close >out 2>err &&
	test_grep "^HTTP/1.1 200 OK" out &&
	test_grep "^slept 500 ms" out &&
	audit_conn host=origin.test -- status=200
'

test_expect_success 'CONNECT: first bytes and the FIN in one go, before the peek is over: the echo still comes back' '
	audit_mark &&
	proxy_tcp --to "echo.test:$ECHO_PORT" --send "ping and bye" --half-close \
		>out 2>err &&
	printf "ping and bye" >expect &&
	test_cmp expect out &&
	audit_conn host=echo.test decision=allow reason=allowed \
		-- bytes_up=12 bytes_down=12 &&
	settled
'

# --- clients that vanish ------------------------------------------------------------

test_expect_success 'a client that resets in the middle of a tunnel the origin fills: the origin side is closed, the close recorded' '
	audit_mark &&
	python3 vanish.py tunnel "$PROXY_PORT" "source.test:$SOURCE_PORT" $READ_BYTES \
		"$AUDIT_FILE" >n &&
	read -r n <n &&
	test "$n" = $READ_BYTES &&
	wait_upstreams "$SOURCE_PORT" 0 &&
	audit_conn host=source.test decision=allow reason=allowed \
		-- bytes_up=3 "bytes_down>=$READ_BYTES" "bytes_down<$SOURCE_BYTES" &&
	settled &&
	alive
'

test_expect_success 'a client that resets in the middle of an answer: the origin connection is closed, the close recorded' '
	audit_mark &&
	python3 vanish.py response "$PROXY_PORT" \
		"http://origin.test:$ORIGIN_PORT/bytes/$SOURCE_BYTES" $READ_BYTES >n &&
	read -r n <n &&
	test "$n" = $READ_BYTES &&
	wait_upstreams "$ORIGIN_PORT" 0 &&
	audit_conn host=origin.test decision=allow reason=allowed \
		-- status=200 "bytes_down>=$((READ_BYTES - 200))" "bytes_down<$SOURCE_BYTES" &&
	settled &&
	alive
'

test_expect_success 'a client that resets in the middle of its request body: the origin connection is closed, the close recorded' '
	audit_mark &&
	python3 vanish.py request "$PROXY_PORT" "origin.test:$ORIGIN_PORT" 0 >n &&
	wait_upstreams "$ORIGIN_PORT" 0 &&
	audit_conn host=origin.test decision=allow \
		-- "bytes_up>=50000" "bytes_up<100000" bytes_down=0 &&
	settled &&
	alive
'

# --- a DNS server that is not there ---------------------------------------------------

# The port is closed: the kernel answers each query with an ICMP port
# unreachable, which evdns does not take for an answer; the query times out
# (timeout:1 attempts:1), as for a server that is silent (t5001).
test_expect_success 'a second proxy whose name server does not exist (nothing on its port): 504 dns-timeout after the resolver timeout; hosts-file names work' '
	stop_proxy &&
	mkdir p2 && cp hosts rules.yaml p2/ && cd p2 &&
	dead=$(free_port) &&
	printf "nameserver 127.0.0.1:%s\noptions timeout:1 attempts:1\n" "$dead" >resolv.conf &&
	start_proxy rules.yaml &&
	cd .. &&
	alive &&
	audit_mark &&
	proxy_curl -D head -o body -w "%{http_code} %{time_total}\n" \
		"http://slow.test:$ORIGIN_PORT/" >code &&
	read -r status secs <code &&
	test "$status" = 504 &&
	awk -v t="$secs" "BEGIN { exit !(t >= 0.9 && t < 4) }" &&
	test_grep "^X-Intutic-Error: dns-timeout" head &&
	audit_conn host=slow.test addr= reason=dns-timeout -- status=504 &&
	alive &&
	stop_proxy
'

test_done
