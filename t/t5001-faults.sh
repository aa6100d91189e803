#!/bin/sh
test_description='faults: origins that refuse, reset or never answer, DNS that fails or hangs, clients that give up'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl

CONNECT_TIMEOUT_MS=1000	# the second proxy's --connect-timeout
DNS_TIMEOUT_MS=2000	# and its --dns-timeout: a bound of its own

# one_request STATUS REASON: since the mark (audit_mark), one decision and
# one close record, both with REASON, the close with STATUS (the decision
# names no status when the request was decided before it was answered).
one_request () {
	audit_since 1 &&
	audit_expect 1 event=decision reason="$2" &&
	audit_expect 1 event=close reason="$2" status="$1" &&
	test_line_count = 2 since.jsonl
}

# alive: a good request through the proxy works.
alive () {
	proxy_serves "origin.test:$ORIGIN_PORT" &&
	wait_until 10 only_the_scrape
}

# only_the_scrape: the proxy has one connection open, the metrics scrape's
# (curl's connection of alive may end after curl did: its close record
# must not land after the next test's mark).
only_the_scrape () {
	test "$(proxy_metric intutic_connections_active)" = 1
}

# A listener whose accept queue is full and never drained: the kernel drops
# every further SYN, so a connect to it neither succeeds nor fails, it
# hangs (a blackhole on loopback, without a firewall).
cat >blackhole.py <<\EOF
import socket, sys, time
LIFETIME = 120
l = socket.socket()
l.bind(("127.0.0.1", 0))
l.listen(0)
port = l.getsockname()[1]
fill = []
for _ in range(3):
    c = socket.socket()
    c.setblocking(False)
    try:
        c.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    fill.append(c)
time.sleep(0.2)
probe = socket.socket()
probe.settimeout(0.5)
try:
    probe.connect(("127.0.0.1", port))
    sys.exit("blackhole: a connect went through; the accept queue is not full")
except socket.timeout:
    pass
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%d\n" % port)
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(LIFETIME)
EOF

# A client that sends half of a Content-Length body, waits until the proxy
# has the origin connection open, and goes away.
cat >abort.py <<\EOF
import socket, sys
from tcpinfo import wait_established
proxy, host, port = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", proxy), timeout=10)
s.sendall(("POST http://%s:%d/echo HTTP/1.1\r\nHost: %s:%d\r\n"
           "Content-Length: 100000\r\n\r\n" % (host, port, host, port)).encode()
          + b"x" * 50000)
if not wait_established(port):
    sys.exit("the proxy never connected to the origin")
print("upstream open")
s.close()
EOF

test_expect_success 'setup: an origin, a DNS server, a dead port, names, rules, the proxy' '
	start_origin origin &&
	cat >zone <<-\EOF &&
	ok.test A 127.0.0.1
	hang.test TIMEOUT
	fail.test SERVFAIL
	EOF
	start_dns zone &&
	write_resolv_conf "$PWD/resolv.conf" timeout:1 attempts:1 &&
	write_hosts hosts origin.test=127.0.0.1 blackhole.test=127.0.0.1 &&
	DEAD_PORT=$(free_port) &&
	test -n "$DEAD_PORT" || return 1
	python3 blackhole.py "$PWD/blackhole.port" >blackhole.log 2>&1 &
	BH_PID=$! &&
	test_atexit "test_stop_pid_ $BH_PID" &&
	test_wait_for_file blackhole.port &&
	read -r BH_PORT <blackhole.port &&
	fill_rules proxy-http/faults.yaml rules.yaml \
		PORTS="$ORIGIN_PORT, $DEAD_PORT, $BH_PORT" &&
	start_proxy rules.yaml &&
	alive
'

# --- the origin ------------------------------------------------------------------

test_expect_success 'an origin port where nothing listens: 502 connect-failed' '
	audit_mark &&
	proxy_curl -D head -o body -w "%{http_code}\n" \
		"http://origin.test:$DEAD_PORT/" >code &&
	echo 502 >expect &&
	test_cmp expect code &&
	test_grep "^X-Intutic-Error: connect-failed" head &&
	test_grep "127.0.0.1" body &&
	one_request 502 connect-failed &&
	audit_expect 1 event=decision host=origin.test port=$DEAD_PORT &&
	alive
'

test_expect_success 'an origin that resets in the middle of a response: the client sees it fail, the close is recorded' '
	audit_mark &&
	test_must_fail proxy_curl -D head -o part "http://origin.test:$ORIGIN_PORT/reset" \
		2>err &&
	test_grep "^HTTP/1.1 200" head &&
	test_grep -v "timed out" err &&
	test "$(wc -c <part)" -ge 1000 &&
	test "$(wc -c <part)" -lt 1000000 &&
	audit_since 1 &&
	audit_expect 1 event=decision decision=allow reason=allowed &&
	audit_expect 1 event=close status=200 "bytes_down>=1000" "bytes_down<1000000" &&
	alive
'

test_expect_success 'an origin that resets in the middle of a tunnel: the tunnel ends, the close is recorded' '
	audit_mark &&
	printf "GET /reset HTTP/1.1\r\nHost: origin.test:%s\r\n\r\n" "$ORIGIN_PORT" >req &&
	{
		proxy_tcp --to "origin.test:$ORIGIN_PORT" --send-file req \
			--timeout 8 >out 2>err
		echo $? >rc
	} &&
	read -r rc <rc &&
	test "$rc" != 3 &&
	test_grep "^HTTP/1.1 200" out &&
	test "$(wc -c <out)" -lt 1000000 &&
	test_grep -v "timeout" err &&
	audit_since 1 &&
	audit_expect 1 event=decision proto=connect decision=allow reason=allowed &&
	audit_expect 1 event=close proto=connect status=200 "bytes_down>=1000" &&
	test "$(proxy_metric intutic_tunnels_active)" = 0 &&
	alive
'

# --- DNS ---------------------------------------------------------------------------

test_expect_success 'a name the DNS server knows: resolved there, answered' '
	audit_mark &&
	proxy_curl -o out "http://ok.test:$ORIGIN_PORT/" &&
	echo "hello from ok.test:$ORIGIN_PORT" >expect &&
	test_cmp expect out &&
	test_grep "^ok.test A " "$DNS_QUERY_LOG" &&
	one_request 200 allowed
'

test_expect_success 'NXDOMAIN: 502 dns-failed' '
	audit_mark &&
	failures=$(proxy_metric intutic_dns_failures_total) &&
	proxy_curl -D head -o body -w "%{http_code}\n" \
		"http://nosuch.test:$ORIGIN_PORT/" >code &&
	echo 502 >expect &&
	test_cmp expect code &&
	test_grep "^X-Intutic-Error: dns-failed" head &&
	test_grep "nosuch.test" body &&
	test_grep "^nosuch.test A " "$DNS_QUERY_LOG" &&
	one_request 502 dns-failed &&
	test "$(proxy_metric intutic_dns_failures_total)" = $((failures + 1)) &&
	alive
'

# evdns answers a SERVFAIL by trying the query again (another nameserver
# may know better) and lets it time out: to the proxy it is a resolver that
# gave no answer in time, 504 dns-timeout -- never an answer, never a dial.
test_expect_success 'SERVFAIL: no answer in time, 504 dns-timeout, nothing dialled' '
	audit_mark &&
	proxy_curl -D head -o body -w "%{http_code}\n" \
		"http://fail.test:$ORIGIN_PORT/" >code &&
	echo 504 >expect &&
	test_cmp expect code &&
	test_grep "^X-Intutic-Error: dns-timeout" head &&
	test_grep "^fail.test A " "$DNS_QUERY_LOG" &&
	one_request 504 dns-timeout &&
	alive
'

# intutic-proxy(8), DNS: a name that does not resolve is 502 dns-failed, a
# look-up that times out 504 dns-timeout.  A DNS
# server that never answers is a timeout, not an answer that the name does
# not exist.
test_expect_success 'a DNS server that never answers (resolver timeout:1 attempts:1): 504 within seconds' '
	audit_mark &&
	start=$(date +%s) &&
	proxy_curl -D head -o body -w "%{http_code}\n" \
		"http://hang.test:$ORIGIN_PORT/" >code &&
	end=$(date +%s) &&
	test $((end - start)) -le 5 &&
	test_grep "^hang.test A " "$DNS_QUERY_LOG" &&
	echo 504 >expect &&
	test_cmp expect code &&
	test_grep "^X-Intutic-Error: [a-z-]*timeout" head &&
	audit_since 1 &&
	audit_expect 1 event=close status=504 &&
	alive
'

# --- the client ---------------------------------------------------------------------

test_expect_success 'a client that goes away in the middle of its body: the origin connection is closed' '
	audit_mark &&
	wait_upstreams "$ORIGIN_PORT" 0 &&
	PYTHONPATH=$top_srcdir/t/helpers \
		python3 abort.py "$PROXY_PORT" origin.test "$ORIGIN_PORT" >out &&
	echo "upstream open" >expect &&
	test_cmp expect out &&
	wait_upstreams "$ORIGIN_PORT" 0 &&
	audit_since 1 &&
	audit_expect 1 event=decision decision=allow &&
	audit_expect 1 event=close "bytes_up>=50000" "bytes_up<100000" &&
	test "$(proxy_metric intutic_connections_active)" = 1 &&
	alive
'

# --- the proxy's own deadlines --------------------------------------------------------

test_expect_success "a second proxy: --connect-timeout $CONNECT_TIMEOUT_MS, --dns-timeout $DNS_TIMEOUT_MS, a resolver slower than both" '
	stop_proxy &&
	write_resolv_conf "$PWD/resolv.conf" timeout:5 attempts:1 &&
	mv audit.jsonl audit-1.jsonl &&
	start_proxy rules.yaml --connect-timeout $CONNECT_TIMEOUT_MS \
		--dns-timeout $DNS_TIMEOUT_MS &&
	alive
'

test_expect_success 'an origin that never completes the handshake: 504 connect-timeout after --connect-timeout' '
	audit_mark &&
	timeouts=$(proxy_metric intutic_timeouts_total) &&
	start=$(date +%s) &&
	proxy_curl -D head -o body -w "%{http_code} %{time_total}\n" \
		"http://blackhole.test:$BH_PORT/" >code &&
	end=$(date +%s) &&
	test $((end - start)) -le 4 &&
	read -r status secs <code &&
	test "$status" = 504 &&
	awk -v t="$secs" "BEGIN { exit !(t >= 0.9 && t < 4) }" &&
	test_grep "^X-Intutic-Error: connect-timeout" head &&
	one_request 504 connect-timeout &&
	audit_expect 1 event=decision host=blackhole.test port=$BH_PORT &&
	test "$(proxy_metric intutic_timeouts_total)" = $((timeouts + 1)) &&
	test_proc_alive_ "$BH_PID" &&
	alive
'

# The look-up has a bound of its own (--dns-timeout), longer here than
# --connect-timeout: a name server that never answers is a dns-timeout
# after it, never a connect-timeout (nothing was dialled).
test_expect_success 'a name that does not resolve within --dns-timeout: 504 dns-timeout after it, not connect-timeout' '
	audit_mark &&
	proxy_curl -D head -o body -w "%{http_code} %{time_total}\n" \
		"http://hang.test:$ORIGIN_PORT/" >code &&
	read -r status secs <code &&
	test "$status" = 504 &&
	awk -v t="$secs" -v b="$DNS_TIMEOUT_MS" \
		"BEGIN { exit !(t >= b / 1000 - 0.1 && t < b / 1000 + 2) }" || {
		echo "504 after ${secs}s, not after --dns-timeout (${DNS_TIMEOUT_MS} ms)" >&2
		return 1
	}
	test_grep "^X-Intutic-Error: dns-timeout" head &&
	test_grep -F "within $DNS_TIMEOUT_MS ms (--dns-timeout)" body &&
	one_request 504 dns-timeout &&
	audit_expect 1 event=close addr= status=504 &&
	alive
'

test_expect_success 'after all that: the proxy runs, nothing is left open, a clean stop' '
	test "$(proxy_metric intutic_connections_active)" = 1 &&
	test "$(proxy_metric intutic_tunnels_active)" = 0 &&
	stop_proxy
'

test_done
