#!/bin/sh
test_description='HTTP: malformed, ambiguous, oversized and slow requests are refused, and the proxy goes on'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl

HEAD_MAX=4096		# the proxy's limits in this script
HEADERS_MAX=20
URI_MAX=1024
HEAD_TIMEOUT_MS=2000

# Every request here is written byte for byte (printf), sent by raw.py on a
# connection of its own, and the proxy's answer read until the proxy closes.
cat >raw.py <<\EOF
# raw.py PORT FILE [SECONDS]: send FILE's bytes to 127.0.0.1:PORT, all at
# once, or one byte every SECONDS; read the answer until the other side
# closes.  The answer goes to stdout; how the connection ended to stderr:
# "closed: eof", "closed: reset" or "open".  Exit 0 when the other side
# closed it, 3 when it was still open WAIT seconds after the last byte sent.
import select, socket, sys, time
WAIT = 8
port, path = int(sys.argv[1]), sys.argv[2]
gap = float(sys.argv[3]) if len(sys.argv) > 3 else 0
data = open(path, "rb").read()
s = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
got, how = b"", "open"
def read(timeout):
    """One read, waiting at most timeout; True once the peer closed."""
    global got, how
    r, _, _ = select.select([s], [], [], timeout)
    if not r:
        return False
    try:
        d = s.recv(65536)
    except ConnectionResetError:
        how = "reset"
        return True
    if not d:
        how = "eof"
        return True
    got += d
    return False
try:
    if gap == 0:
        s.sendall(data)
    else:
        for i in range(len(data)):
            s.sendall(data[i:i + 1])
            end = time.time() + gap
            while how == "open" and time.time() < end:
                if read(max(0, end - time.time())):
                    break
            if how != "open":
                break
except (BrokenPipeError, ConnectionResetError):
    how = "reset"
deadline = time.time() + WAIT
while how == "open" and time.time() < deadline:
    read(deadline - time.time())
sys.stdout.buffer.write(got)
sys.stderr.write("closed: %s\n" % how if how != "open" else "open\n")
sys.exit(0 if how != "open" else 3)
EOF

# send_raw [SECONDS]: the bytes of ./req to the proxy (raw.py), the answer
# in resp.raw and, without CRs, in resp.  Fails when the proxy left the
# connection open.
send_raw () {
	if ! python3 raw.py "$PROXY_PORT" req ${1:+"$1"} >resp.raw 2>closed; then
		echo "the proxy did not close the connection; it answered:" >&2
		cat resp.raw closed >&2
		return 1
	fi
	tr -d "\r" <resp.raw >resp
}

# mark: once every earlier connection has closed (audit_settle), remember
# where the audit log and the origin's log end
# (audit_since, audit_expect and server_since origin read what came after).
mark () {
	audit_settle &&
	audit_mark &&
	server_mark origin
}

# refused STATUS REASON: after send_raw, what every refusal must show: the
# answer is STATUS with X-Intutic-Error: REASON and nothing follows it; the
# audit log has one decision record and one close record for it, both with
# REASON and STATUS; the origin saw nothing; the proxy serves a good request
# on a new connection.
refused () {
	head -n 1 resp >status.line &&
	test_grep "^HTTP/1.1 $1 " status.line &&
	test_grep "^X-Intutic-Error: $2\$" resp &&
	test "$(grep -c "^HTTP/" resp)" = 1 &&
	audit_since 1 &&
	test_line_count = 2 since.jsonl &&
	audit_expect 1 event=decision decision=deny reason="$2" status="$1" &&
	audit_expect 1 event=close reason="$2" status="$1" &&
	server_since origin &&
	test_must_be_empty origin.new &&
	alive
}

# alive: a good request through the proxy works.
alive () {
	proxy_serves "origin.test:$ORIGIN_PORT"
}

test_expect_success 'setup: an origin, names, rules, and a proxy with small limits' '
	start_origin origin &&
	write_hosts hosts origin.test=127.0.0.1 &&
	fill_rules proxy-http/forward.yaml rules.yaml PORTS="$ORIGIN_PORT" &&
	start_proxy rules.yaml --head-max $HEAD_MAX --headers-max $HEADERS_MAX \
		--uri-max $URI_MAX --head-timeout $HEAD_TIMEOUT_MS &&
	H=origin.test:$ORIGIN_PORT &&
	alive
'

test_expect_success 'the way requests are sent here works for a good one' '
	printf "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" \
		"$H" "$H" >req &&
	send_raw &&
	test_grep "^HTTP/1.1 200 OK\$" resp &&
	test_grep "^hello from $H\$" resp
'

# --- the request line ------------------------------------------------------------

test_expect_success 'a request line with something after the version: 400' '
	mark &&
	printf "GET http://%s/ HTTP/1.1 junk\r\nHost: %s\r\n\r\n" "$H" "$H" >req &&
	send_raw &&
	refused 400 bad-request
'

test_expect_success 'a request line without a version (HTTP/0.9 form) and with headers: 400' '
	mark &&
	printf "GET http://%s/request\r\nHost: %s\r\n\r\n" "$H" "$H" >req &&
	send_raw &&
	refused 400 bad-request
'

test_expect_success 'a request line that is no HTTP at all: 400' '
	mark &&
	printf "HELLO THERE\r\n\r\n" >req &&
	send_raw &&
	refused 400 bad-request
'

# --- framing -------------------------------------------------------------------------

test_expect_success 'Content-Length and Transfer-Encoding together: 400' '
	mark &&
	printf "POST http://%s/echo HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" \
		"$H" "$H" >req &&
	send_raw &&
	refused 400 bad-request
'

test_expect_success 'two Content-Length headers, equal or not: 400' '
	mark &&
	printf "POST http://%s/echo HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello" \
		"$H" "$H" >req &&
	send_raw &&
	refused 400 bad-request &&
	mark &&
	printf "POST http://%s/echo HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\nhello" \
		"$H" "$H" >req &&
	send_raw &&
	refused 400 bad-request
'

# The head is good, so the request is decided (allowed) and may already be
# on its way to the origin when the body turns out bad: the origin may see
# the head, never the bad bytes; the client still gets a 400.
test_expect_success 'a bad chunk size: 400, the connection closed, the bad bytes never forwarded' '
	mark &&
	printf "POST http://%s/echo HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n" \
		"$H" "$H" >req &&
	send_raw &&
	test_grep "^HTTP/1.1 400 " resp &&
	test_grep "^X-Intutic-Error: bad-request\$" resp &&
	audit_since 1 &&
	audit_expect 1 event=close status=400 &&
	server_since origin &&
	test_grep -v "bad request" origin.new &&
	alive
'

test_expect_success 'a header folded over two lines (obs-fold): 400' '
	mark &&
	printf "GET http://%s/headers HTTP/1.1\r\nHost: %s\r\nX-Folded: a\r\n  b\r\n\r\n" \
		"$H" "$H" >req &&
	send_raw &&
	refused 400 bad-request
'

test_expect_success 'a header line ended by a bare LF: 400' '
	mark &&
	printf "GET http://%s/headers HTTP/1.1\r\nHost: %s\r\nX-Bare: lf\nX-Next: 1\r\n\r\n" \
		"$H" "$H" >req &&
	send_raw &&
	refused 400 bad-request
'

# --- limits ----------------------------------------------------------------------------

test_expect_success "a head over --head-max ($HEAD_MAX bytes): 431" '
	mark &&
	big=$(head -c 5000 /dev/zero | tr "\0" a) &&
	printf "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nX-Big: %s\r\n\r\n" \
		"$H" "$H" "$big" >req &&
	send_raw &&
	refused 431 bad-request
'

test_expect_success "more header lines than --headers-max ($HEADERS_MAX): 431; as many pass" '
	mark &&
	{
		printf "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n" "$H" "$H" &&
		i=1 &&
		while test $i -le $HEADERS_MAX; do
			printf "X-H%d: %d\r\n" $i $i || return 1
			i=$((i + 1))
		done &&
		printf "\r\n"
	} >req &&
	send_raw &&
	refused 431 bad-request &&
	{
		printf "GET http://%s/request HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n" \
			"$H" "$H" &&
		i=3 &&
		while test $i -le $HEADERS_MAX; do
			printf "X-H%d: %d\r\n" $i $i || return 1
			i=$((i + 1))
		done &&
		printf "\r\n"
	} >req &&
	send_raw &&
	test_grep "^HTTP/1.1 200 OK\$" resp &&
	test_grep "^X-H$HEADERS_MAX: $HEADERS_MAX\$" resp
'

test_expect_success "a request-target over --uri-max ($URI_MAX bytes): 414" '
	mark &&
	long=$(head -c 2000 /dev/zero | tr "\0" a) &&
	printf "GET http://%s/%s HTTP/1.1\r\nHost: %s\r\n\r\n" "$H" "$long" "$H" >req &&
	send_raw &&
	refused 414 bad-request
'

# --- hosts -------------------------------------------------------------------------------

test_expect_success 'two Host headers: 400 host-mismatch' '
	mark &&
	printf "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nHost: %s\r\n\r\n" "$H" "$H" "$H" >req &&
	send_raw &&
	refused 400 host-mismatch
'

test_expect_success 'a host that is not ASCII: refused (400, or 403 invalid-host)' '
	mark &&
	printf "GET http://b\303\274cher.test:%s/ HTTP/1.1\r\nHost: b\303\274cher.test:%s\r\n\r\n" \
		"$ORIGIN_PORT" "$ORIGIN_PORT" >req &&
	send_raw &&
	if grep -q "^HTTP/1.1 403 " resp
	then
		refused 403 invalid-host
	else
		refused 400 bad-request
	fi
'

for spelling in 2130706433 0x7f000001 0177.0.0.1 127.1 0x7f.0.0.1 127.0.0.01; do
	test_expect_success "IPv4 spelled $spelling: 403 invalid-host" '
		mark &&
		printf "GET http://%s:%s/ HTTP/1.1\r\nHost: %s:%s\r\n\r\n" \
			'$spelling' "$ORIGIN_PORT" '$spelling' "$ORIGIN_PORT" >req &&
		send_raw &&
		refused 403 invalid-host
	'
done

test_expect_success 'https:// in absolute form: 400 (HTTPS goes through CONNECT)' '
	mark &&
	printf "GET https://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n" "$H" "$H" >req &&
	send_raw &&
	refused 400 bad-request
'

test_expect_success 'credentials in the URI: 400, and they are written nowhere' '
	mark &&
	printf "GET http://user:s3cr3t-pw@%s/ HTTP/1.1\r\nHost: %s\r\n\r\n" "$H" "$H" >req &&
	send_raw &&
	refused 400 bad-request &&
	test_grep -v "s3cr3t-pw" "$AUDIT_FILE" &&
	test_grep -v "s3cr3t-pw" "$PROXY_LOG"
'

# --- time ----------------------------------------------------------------------------------

test_expect_success "a slowloris head, one byte a second: 408 after --head-timeout (${HEAD_TIMEOUT_MS} ms)" '
	mark &&
	before=$(proxy_metric intutic_timeouts_total) &&
	printf "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nX-Slow: abcdefghijklmnopqrstuvwxyz\r\n\r\n" \
		"$H" "$H" >req &&
	start=$(date +%s) &&
	send_raw 1 &&
	end=$(date +%s) &&
	test $((end - start)) -le 5 &&
	refused 408 head-timeout &&
	after=$(proxy_metric intutic_timeouts_total) &&
	test "$after" = $((before + 1))
'

test_expect_success 'a connection that sends nothing is closed after --head-timeout, with no record' '
	mark &&
	: >req &&
	start=$(date +%s) &&
	send_raw &&
	end=$(date +%s) &&
	test $((end - start)) -le 5 &&
	test_must_be_empty resp &&
	sleep 0.2 &&
	audit_since 0 &&
	test_must_be_empty since.jsonl
'

test_expect_success 'the proxy counted the bad requests and still serves' '
	bad=$(proxy_metric intutic_bad_requests_total) &&
	refusals=$(audit_count event=decision reason=bad-request) &&
	test "$refusals" -ge 12 &&
	test "$bad" -ge "$refusals" &&
	alive &&
	test_proc_alive_ "$PROXY_PID"
'

test_done
