#!/bin/sh
test_description='CONNECT tunnels: https and http through them, large transfers both ways, half-close, keep-alive, several at once'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns

test -x "$top_builddir/proxy/intutic-proxy" ||
	test_skip_all "intutic-proxy was not built (make in $top_builddir)"
command -v python3 >/dev/null 2>&1 || test_skip_all "needs python3 (the test servers)"
command -v curl >/dev/null 2>&1 || test_skip_all "needs curl"
command -v openssl >/dev/null 2>&1 || test_skip_all "needs openssl (test certificates)"

CLIENT=$top_srcdir/t/helpers/client.py
DOWN_BYTES=1572871	# 1.5 MiB and a bit: not a multiple of any buffer
UP_BYTES=1310727	# 1.25 MiB and a bit
WAIT_SECONDS=10		# an audit record, a metric to change, a client to end
PARALLEL=6		# tunnels open at the same time

# fill TEMPLATE OUT NAME=VALUE...: t/data/rules/proxy-connect/TEMPLATE with
# every @NAME@ replaced by VALUE, as OUT; a placeholder left over fails.
fill () {
	fill_in_=$TEST_DATA/rules/proxy-connect/$1
	fill_out_=$2
	shift 2
	: >"$fill_out_.sed" || return 1
	for fill_pair_ in "$@"; do
		printf 's/@%s@/%s/g\n' "${fill_pair_%%=*}" "${fill_pair_#*=}" \
			>>"$fill_out_.sed" || return 1
	done
	sed -f "$fill_out_.sed" "$fill_in_" >"$fill_out_" || return 1
	rm -f "$fill_out_.sed"
	if grep -n '^[^#]*@[A-Z_]*@' "$fill_out_" >&2; then
		echo "fill: placeholders left in $fill_out_" >&2
		return 1
	fi
}

# mark: remember how long the audit log is; `since` reads what came after.
mark () {
	MARK=$(wc -l <"$AUDIT_FILE") || return 1
	MARK=$((MARK))
}

# since N: wait (at most WAIT_SECONDS) until N close records were written
# after the mark; since.jsonl then holds every record written after it.
since () {
	since_n_=$((WAIT_SECONDS * 10))
	while :; do
		tail -n "+$((MARK + 1))" "$AUDIT_FILE" >since.jsonl || return 1
		since_got_=$(recs event=close) || return 1
		test "$since_got_" -ge "$1" && return 0
		if test "$since_n_" -le 0; then
			echo "since: $since_got_ close records after ${WAIT_SECONDS}s, expected $1; the records since the mark:" >&2
			cat since.jsonl >&2
			return 1
		fi
		sleep 0.1
		since_n_=$((since_n_ - 1))
	done
}

# recs COND...: how many of the records since the mark (since.jsonl, which
# `since` and `conn` write) match every COND.
recs () {
	audit_count since.jsonl "$@"
}

# conn [COND...] [-- COND...]: the connection made since the mark had one
# decision record, matching the CONDs before "--", and one close record,
# with its id, matching those after it (conn.py, written below).
conn () {
	HELPERS=$top_srcdir/t/helpers python3 conn.py "$AUDIT_FILE" "$MARK" "$@"
}

# tcp ARGS...: client.py tcp through the proxy.
tcp () {
	python3 "$CLIENT" tcp --proxy "127.0.0.1:$PROXY_PORT" "$@"
}

# pcurl ARGS...: curl through the proxy, trusting the test CA only.
pcurl () {
	proxy_curl --cacert "$CA_FILE" "$@"
}

# repeat N TEXT: N bytes of TEXT lines, over and over.
repeat () {
	python3 -c '
import sys
n, line = int(sys.argv[1]), sys.argv[2].encode() + b"\n"
sys.stdout.buffer.write((line * (n // len(line) + 1))[:n])
' "$1" "$2"
}

# wait_metric NAME VALUE: until the proxy's NAME is VALUE, at most
# WAIT_SECONDS.
wait_metric () {
	wait_metric_n_=$((WAIT_SECONDS * 10))
	while :; do
		wait_metric_v_=$(proxy_metric "$1") || return 1
		test "$wait_metric_v_" = "$2" && return 0
		if test "$wait_metric_n_" -le 0; then
			echo "wait_metric: $1 is $wait_metric_v_ after ${WAIT_SECONDS}s, expected $2" >&2
			return 1
		fi
		sleep 0.1
		wait_metric_n_=$((wait_metric_n_ - 1))
	done
}

cat >conn.py <<\PY
# conn.py AUDIT MARK [COND...] [-- COND...]: the one connection whose
# records came after line MARK of the audit log AUDIT.  Waits (10 s at
# most) for a close record; then exactly one decision record must have
# come, matching the CONDs before "--" (audit.py's), and exactly one close
# record, with the decision's id, matching the CONDs after it.  Leaves the
# records after MARK in since.jsonl.  One process for what would take a
# handful of audit.py runs.
import json, os, sys, time
sys.path.insert(0, os.environ["HELPERS"])
import audit

path, mark, rest = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
cut = rest.index("--") if "--" in rest else len(rest)
dwords, cwords = rest[:cut], rest[cut + 1:]
try:
    dconds, cconds = audit.parse_conds(dwords), audit.parse_conds(cwords)
except audit.Bad as e:
    sys.exit("conn: %s" % e)
deadline = time.monotonic() + 10
while True:
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")[:-1][mark:]
    recs = [json.loads(l) for l in lines]
    closes = [r for r in recs if r.get("event") == "close"]
    if closes or time.monotonic() > deadline:
        break
    time.sleep(0.05)
with open("since.jsonl", "wb") as f:
    f.write(b"".join(l + b"\n" for l in lines))

def fail(msg):
    sys.stderr.write("conn: %s; the records since the mark:\n" % msg)
    for l in lines:
        sys.stderr.write(l.decode("utf-8", "replace") + "\n")
    sys.exit(1)

decisions = [r for r in recs if r.get("event") == "decision"]
if len(decisions) != 1:
    fail("%d decision records, expected one" % len(decisions))
d = decisions[0]
if not audit.matches(d, dconds):
    fail("the decision record does not match %s" % " ".join(dwords))
if len(closes) != 1 or closes[0].get("id") != d.get("id"):
    fail("%d close records, expected one with id %s" % (len(closes), d.get("id")))
if not audit.matches(closes[0], cconds):
    fail("the close record does not match %s" % " ".join(cwords))
PY

cat >tunnel.py <<\EOF
# tunnel.py PROXY_PORT HOST:PORT MODE ...: a CONNECT tunnel to HOST:PORT,
# its answer read one byte at a time, so that bytes a server sends first
# are never taken for part of it (client.py refuses them).
#   get TEXT          sends TEXT, half-closes, writes what comes back to
#                     stdout
#   hold N READY GO   N tunnels, each seeing a line echoed; then writes
#                     READY, waits (30 s at most) until GO exists, closes
#                     them all
import os, socket, sys, time

def tunnel(port, to):
    s = socket.create_connection(("127.0.0.1", int(port)), timeout=10)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (to, to)).encode())
    buf = b""
    while not buf.endswith(b"\r\n\r\n"):
        d = s.recv(1)
        if not d or len(buf) > 4096:
            sys.exit("no answer to CONNECT: %r" % buf)
        buf += d
    if not buf.startswith(b"HTTP/1.1 200 "):
        sys.exit("answer to CONNECT: %r" % buf)
    return s

port, to, mode = sys.argv[1:4]
if mode == "get":
    s = tunnel(port, to)
    s.sendall(sys.argv[4].encode())
    s.shutdown(socket.SHUT_WR)
    out = sys.stdout.buffer
    while True:
        d = s.recv(65536)
        if not d:
            break
        out.write(d)
elif mode == "hold":
    n, ready, go = int(sys.argv[4]), sys.argv[5], sys.argv[6]
    socks = []
    for i in range(n):
        s = tunnel(port, to)
        msg = b"ping %d\n" % i
        s.sendall(msg)
        got = b""
        while len(got) < len(msg):
            d = s.recv(100)
            if not d:
                sys.exit("tunnel %d: closed after %r" % (i, got))
            got += d
        if got != msg:
            sys.exit("tunnel %d: echo %r" % (i, got))
        socks.append(s)
    with open(ready, "w") as f:
        f.write("%d\n" % n)
    deadline = time.monotonic() + 30
    while not os.path.exists(go):
        if time.monotonic() > deadline:
            sys.exit("no %s after 30 s" % go)
        time.sleep(0.05)
    for s in socks:
        s.close()
else:
    sys.exit("tunnel.py: unknown mode %s" % mode)
EOF

test_expect_success 'setup: servers, names, rules, the proxy' '
	test_certs &&
	start_origin tls --tls "$CERT_FILE" "$KEY_FILE" &&
	start_origin http &&
	start_echo echo &&
	start_echo source --mode source "$DOWN_BYTES" &&
	start_echo sink --mode sink &&
	write_hosts hosts origin.test=127.0.0.1 plain.test=127.0.0.1 \
		echo.test=127.0.0.1 source.test=127.0.0.1 sink.test=127.0.0.1 &&
	fill tunnel.yaml rules.yaml TLS_PORT="$TLS_PORT" \
		HTTP_PORT="$HTTP_PORT" ECHO_PORT="$ECHO_PORT" \
		SOURCE_PORT="$SOURCE_PORT" SINK_PORT="$SINK_PORT" &&
	RULES=$PWD/rules.yaml &&
	"$INTUTIC" rules check "$RULES" &&
	start_proxy "$RULES" &&
	test "$(proxy_metric intutic_tunnels_active)" = 0
'

# --- real clients ------------------------------------------------------------

test_expect_success 'curl https through CONNECT: the origin answers, SNI and Host are the name' '
	mark &&
	pcurl -D head -o body "https://origin.test:$TLS_PORT/" &&
	echo "hello from origin.test:$TLS_PORT" >expect &&
	test_cmp expect body &&
	test_grep "^X-TLS-SNI: origin\\.test" head &&
	test_grep "^tls: GET / HTTP/1\\.1 host=origin\\.test:$TLS_PORT\$" "$TLS_LOG" &&
	conn proto=connect host=origin.test port="$TLS_PORT" \
		sni=origin.test addr=127.0.0.1 decision=allow reason=allowed \
		rule="$RULES:8" status=200 client~"^127\\.0\\.0\\.1:[0-9]+\$" \
		-- proto=connect host=origin.test sni=origin.test \
		decision=allow reason=allowed "bytes_up>300" \
		"bytes_down>$(wc -c <body)" "duration_ms>=0"
'

test_expect_success 'curl --proxytunnel http: plain HTTP inside the tunnel, no SNI' '
	mark &&
	pcurl --proxytunnel -D head -o body "http://plain.test:$HTTP_PORT/" &&
	echo "hello from plain.test:$HTTP_PORT" >expect &&
	test_cmp expect body &&
	test_grep "^X-Origin: http" head &&
	test_grep "^HTTP/1\\.1 200 Connection established" head &&
	# what the origin sent: the headers curl saved, less the 39 bytes of
	# the proxy answer to CONNECT, and the body
	conn proto=connect host=plain.test port="$HTTP_PORT" sni= \
		addr=127.0.0.1 decision=allow reason=allowed rule="$RULES:9" \
		-- "bytes_up>=50" \
		bytes_down=$(($(wc -c <head) - 39 + $(wc -c <body)))
'

test_expect_success 'a download of 1.5 MiB after a half-close: every byte, counted in the close record' '
	mark &&
	python3 tunnel.py "$PROXY_PORT" "source.test:$SOURCE_PORT" get x \
		>down 2>err &&
	test "$(wc -c <down)" = "$DOWN_BYTES" &&
	# what echo.py --mode source sends
	repeat "$DOWN_BYTES" \
		abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ \
		>down.expect &&
	cmp down.expect down &&
	conn host=source.test port="$SOURCE_PORT" decision=allow \
		reason=allowed rule="$RULES:11" sni= \
		-- bytes_up=1 bytes_down="$DOWN_BYTES" &&
	test_grep "in=0 out=$DOWN_BYTES\$" "$SOURCE_LOG"
'

test_expect_success 'an upload of 1.25 MiB, then a half-close: the sink gets every byte' '
	repeat "$UP_BYTES" "upload line 0123456789 abcdefghijklmnopqrstuvwxyz" >up &&
	test "$(wc -c <up)" = "$UP_BYTES" &&
	mark &&
	tcp --to "sink.test:$SINK_PORT" --send-file up --half-close >out 2>err &&
	test_must_be_empty out &&
	conn host=sink.test port="$SINK_PORT" decision=allow reason=allowed \
		rule="$RULES:12" \
		-- bytes_up="$UP_BYTES" bytes_down=0 &&
	test_grep "in=$UP_BYTES out=0\$" "$SINK_LOG"
'

test_expect_success 'half-close: the echo still comes back after the client sent its FIN' '
	mark &&
	tcp --to "echo.test:$ECHO_PORT" --send "hello, half-closed" \
		--half-close >out 2>err &&
	printf "hello, half-closed" >expect &&
	test_cmp expect out &&
	conn host=echo.test port="$ECHO_PORT" decision=allow \
		reason=allowed rule="$RULES:10" \
		-- bytes_up=18 bytes_down=18 &&
	test_grep "in=18 out=18\$" "$ECHO_LOG"
'

test_expect_success 'keep-alive: two https requests in one tunnel, one decision' '
	mark &&
	pcurl -v -o body1 -o body2 "https://origin.test:$TLS_PORT/" \
		"https://origin.test:$TLS_PORT/bytes/5000" 2>err &&
	echo "hello from origin.test:$TLS_PORT" >expect &&
	test_cmp expect body1 &&
	test "$(wc -c <body2)" = 5000 &&
	test_grep -i "re-using existing connection" err &&
	conn host=origin.test port="$TLS_PORT" sni=origin.test \
		decision=allow reason=allowed \
		-- "bytes_down>5000"
'

test_expect_success 'keep-alive: three pipelined http requests in one tunnel' '
	for path in / /bytes/7; do
		printf "GET %s HTTP/1.1\\r\\nHost: plain.test:%s\\r\\n\\r\\n" \
			"$path" "$HTTP_PORT" || return 1
	done >req &&
	printf "GET /chunked/10 HTTP/1.1\\r\\nHost: plain.test:%s\\r\\n%s\\r\\n\\r\\n" \
		"$HTTP_PORT" "Connection: close" >>req &&
	mark &&
	tcp --to "plain.test:$HTTP_PORT" --send-file req >out 2>err &&
	grep -o "HTTP/1\\.1 200 OK" out >statuses &&
	test_line_count = 3 statuses &&
	test_grep "hello from plain\\.test:$HTTP_PORT" out &&
	conn host=plain.test port="$HTTP_PORT" decision=allow \
		-- bytes_up="$(wc -c <req)" bytes_down="$(wc -c <out)"
'

test_expect_success "$PARALLEL tunnels at once, each with its own bytes" '
	mark &&
	i=0 && pids= &&
	while test $i -lt $PARALLEL; do
		repeat $((20000 + i * 7001)) "tunnel $i says hello" >in.$i &&
		{ tcp --to "echo.test:$ECHO_PORT" --send-file in.$i \
			--half-close >out.$i 2>err.$i & } &&
		pids="$pids $!" &&
		i=$((i + 1)) || return 1
	done &&
	for pid in $pids; do
		wait $pid || return 1
	done &&
	i=0 &&
	while test $i -lt $PARALLEL; do
		cmp in.$i out.$i || return 1
		i=$((i + 1))
	done &&
	since $PARALLEL &&
	test "$(recs event=decision host=echo.test decision=allow \
		reason=allowed)" = $PARALLEL &&
	test "$(recs event=decision)" = $PARALLEL &&
	test "$(recs event=close)" = $PARALLEL &&
	i=0 &&
	while test $i -lt $PARALLEL; do
		n=$(wc -c <in.$i) &&
		test "$(recs event=close bytes_up=$n bytes_down=$n)" = 1 || return 1
		i=$((i + 1))
	done
'

test_expect_success 'intutic_tunnels_active: up while tunnels are open, back to 0 after' '
	rm -f ready go &&
	mark || return 1
	python3 tunnel.py "$PROXY_PORT" "echo.test:$ECHO_PORT" hold 3 ready go \
		>hold.out 2>&1 &
	HOLD=$! &&
	test_when_finished "touch go; kill $HOLD 2>/dev/null; wait $HOLD 2>/dev/null; :" &&
	test_wait_for_file ready 15 &&
	test "$(proxy_metric intutic_tunnels_active)" = 3 &&
	touch go &&
	wait $HOLD &&
	wait_metric intutic_tunnels_active 0 &&
	since 3 &&
	test "$(recs event=decision reason=allowed host=echo.test)" = 3 &&
	test "$(recs event=close bytes_up=7 bytes_down=7)" = 3
'

test_expect_success 'after all that: no tunnel left, one connection (this scrape)' '
	wait_metric intutic_tunnels_active 0 &&
	wait_metric intutic_connections_active 1
'

test_done
