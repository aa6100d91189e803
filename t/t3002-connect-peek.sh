#!/bin/sh
test_description='CONNECT peek: the SNI of a ClientHello, the Host of an HTTP request, other protocols only on a port the entry names, timeouts'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns

test -x "$top_builddir/proxy/intutic-proxy" ||
	test_skip_all "intutic-proxy was not built (make in $top_builddir)"
command -v python3 >/dev/null 2>&1 || test_skip_all "needs python3 (the test servers)"
command -v openssl >/dev/null 2>&1 || test_skip_all "needs openssl (s_client, test certificates)"
openssl s_client -help 2>&1 | grep -q -e '-proxy ' ||
	test_skip_all "needs an openssl s_client with -proxy (OpenSSL 3.0)"

CLIENT=$top_srcdir/t/helpers/client.py
WAIT_SECONDS=10		# an audit record, a metric to change
PEEK_MS=1000		# the second proxy's --peek-timeout
BANNER='SSH-2.0-banner.test ready'
# The TLS alert the proxy closes a refused ClientHello with: a fatal (2)
# access_denied (49), TLS 1.2 record version.
ALERT_HEX=15030300020231

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

# mark: remember how long the audit log is; `conn` reads what came after.
mark () {
	MARK=$(wc -l <"$AUDIT_FILE") || return 1
	MARK=$((MARK))
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

# sclient ARGS...: openssl s_client through the proxy, bounded in time, with
# what it reads from the server on stdout and a request from stdin.  It
# reads until the server closes, and exits 1 then: the origin closes
# without a close_notify ("unexpected eof while reading").
sclient () {
	timeout -s KILL 20 openssl s_client -proxy "127.0.0.1:$PROXY_PORT" \
		-CAfile "$CA_FILE" -verify_return_error -ign_eof "$@"
}

# hex FILE: FILE as one line of hex digits.
hex () {
	od -An -v -tx1 "$1" | tr -d ' \n'
}

# count PATTERN FILE: how many lines of FILE match the ERE PATTERN.
count () {
	grep -c -E -e "$1" "$2" || :
}

# wait_count N PATTERN FILE: until N lines of FILE match PATTERN (a server
# logs a connection's end when it sees it), at most WAIT_SECONDS.
wait_count () {
	wait_count_n_=$((WAIT_SECONDS * 10))
	until test "$(count "$2" "$3")" = "$1"; do
		if test "$wait_count_n_" -le 0; then
			echo "wait_count: not $1 lines matching '$2' in $3 after ${WAIT_SECONDS}s:" >&2
			cat "$3" >&2
			return 1
		fi
		sleep 0.1
		wait_count_n_=$((wait_count_n_ - 1))
	done
}

cat >peek.py <<\PY
# peek.py MODE PROXY_PORT HOST:PORT ...: clients that the proxy's peek must
# see through.  Each opens a CONNECT tunnel, reading the answer one byte at
# a time so that no byte of the tunnel is taken for it.
#   banner PROXY_PORT HOST:PORT        reads the server's first line before
#                                      sending anything, then "ping\n"
#   bytes PROXY_PORT HOST:PORT FILE    sends FILE one byte per write, then
#                                      half-closes; what comes back: stdout
#   tls PROXY_PORT HOST:PORT SNI CA    a TLS handshake whose ClientHello goes
#                                      one byte per write, then GET /
import socket, ssl, sys, time

GAP = 0.002	# between two bytes
TIMEOUT = 10

def tunnel(port, to):
    s = socket.create_connection(("127.0.0.1", int(port)), timeout=TIMEOUT)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
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

def dribble(s, data):
    for i in range(len(data)):
        s.send(data[i:i + 1])
        time.sleep(GAP)

def read_all(s):
    out = b""
    while True:
        d = s.recv(65536)
        if not d:
            return out
        out += d

mode, port, to = sys.argv[1:4]
s = tunnel(port, to)
if mode == "banner":
    line = b""
    while not line.endswith(b"\r\n"):
        d = s.recv(1)
        if not d or len(line) > 1000:
            sys.exit("no banner: %r" % line)
        line += d
    print("banner: %s" % line.decode().rstrip("\r\n"))
    s.sendall(b"ping\n")
    s.shutdown(socket.SHUT_WR)
    print("then: %s" % read_all(s).decode("latin-1").rstrip("\n"))
elif mode == "bytes":
    dribble(s, open(sys.argv[4], "rb").read())
    s.shutdown(socket.SHUT_WR)
    sys.stdout.buffer.write(read_all(s))
elif mode == "tls":
    sni, ca = sys.argv[4:6]
    ctx = ssl.create_default_context(cafile=ca)
    inb, outb = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(inb, outb, server_hostname=sni)
    hello = True
    while True:
        try:
            tls.do_handshake()
            done = True
        except ssl.SSLWantReadError:
            done = False
        out = outb.read()
        if out and hello:
            sys.stderr.write("ClientHello: %d bytes, one a write\n" % len(out))
            dribble(s, out)
            hello = False
        elif out:
            s.sendall(out)
        if done:
            break
        d = s.recv(65536)
        if not d:
            sys.exit("closed in the handshake")
        inb.write(d)
    tls.write(("GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % to).encode())
    s.sendall(outb.read())
    resp = b""
    while True:
        try:
            d = tls.read(65536)
            if not d:
                break
            resp += d
        except ssl.SSLWantReadError:
            d = s.recv(65536)
            if not d:
                break
            inb.write(d)
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
            break
    sys.stdout.write(resp.decode("latin-1"))
else:
    sys.exit("peek.py: unknown mode %s" % mode)
PY

cat >split.py <<\PY
# split.py HELLO K: the ClientHello in the file HELLO (one record) as two
# records, the first with the first K bytes of the handshake message.
import sys
h = open(sys.argv[1], "rb").read()
k = int(sys.argv[2])
msg = h[5:]
assert h[0] == 22 and len(msg) == (h[3] << 8 | h[4]) and 0 < k < len(msg)
rec = lambda b: h[:3] + bytes([len(b) >> 8, len(b) & 255]) + b
sys.stdout.buffer.write(rec(msg[:k]) + rec(msg[k:]))
PY

cat >lie.py <<\PY
# lie.py HELLO: the ClientHello in the file HELLO (one record) with its
# extensions length 3 more than the extensions it has.
import sys
h = bytearray(open(sys.argv[1], "rb").read())
i = 5 + 4 + 2 + 32                # record and handshake headers, version, random
i += 1 + h[i]                     # session id
i += 2 + (h[i] << 8 | h[i + 1])   # cipher suites
i += 1 + h[i]                     # compression methods
n = (h[i] << 8 | h[i + 1]) + 3
h[i], h[i + 1] = n >> 8, n & 255
sys.stdout.buffer.write(h)
PY

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

test_expect_success 'setup: servers, names, rules, the proxy' '
	test_certs &&
	start_origin tls --tls "$CERT_FILE" "$KEY_FILE" &&
	start_origin http &&
	start_echo echo &&
	start_echo banner --mode banner "$BANNER" &&
	write_hosts hosts origin.test=127.0.0.1 plain.test=127.0.0.1 \
		api.example.com=127.0.0.1 banner.test=127.0.0.1 &&
	fill peek.yaml rules.yaml TLS_PORT="$TLS_PORT" HTTP_PORT="$HTTP_PORT" \
		ECHO_PORT="$ECHO_PORT" BANNER_PORT="$BANNER_PORT" &&
	RULES=$PWD/rules.yaml &&
	"$INTUTIC" rules check "$RULES" &&
	start_proxy "$RULES"
'

# --- TLS: the SNI ------------------------------------------------------------

test_expect_success 's_client, SNI equal to the CONNECT host: the handshake completes' '
	printf "GET / HTTP/1.1\\r\\nHost: origin.test:%s\\r\\nConnection: close\\r\\n\\r\\n" \
		"$TLS_PORT" >req &&
	mark &&
	{ sclient -connect "origin.test:$TLS_PORT" -servername origin.test \
		<req >out 2>err || :; } &&
	test_grep "^Verify return code: 0 \\(ok\\)" out &&
	test_grep "^hello from origin\\.test:$TLS_PORT" out &&
	test_grep "^X-TLS-SNI: origin\\.test" out &&
	conn proto=connect host=origin.test port="$TLS_PORT" \
		sni=origin.test addr=127.0.0.1 decision=allow reason=allowed \
		rule="$RULES:9" \
		-- "bytes_up>=$(wc -c <req)" "bytes_down>100"
'

test_expect_success 's_client, SNI the same name in other letter case: passes' '
	mark &&
	{ sclient -connect "origin.test:$TLS_PORT" -servername ORIGIN.Test \
		<req >out 2>err || :; } &&
	test_grep "^hello from origin\\.test:$TLS_PORT" out &&
	conn host=origin.test "sni~^(?i:origin\\.test)\$" decision=allow \
		reason=allowed
'

test_expect_success 's_client, another SNI: access_denied alert, sni-mismatch, nothing reaches the origin' '
	before=$(count "^tls: GET " "$TLS_LOG") &&
	mark &&
	test_must_fail sclient -connect "origin.test:$TLS_PORT" \
		-servername other.test <req >out 2>err &&
	test_grep "alert access denied" err &&
	test_grep -v "hello from" out &&
	conn proto=connect host=origin.test port="$TLS_PORT" \
		sni=other.test decision=deny reason=sni-mismatch rule="$RULES:9" \
		-- decision=deny reason=sni-mismatch bytes_up=0 bytes_down=0 &&
	test "$(count "^tls: GET " "$TLS_LOG")" = "$before"
'

test_expect_success 'a captured ClientHello naming another host: exactly the alert comes back' '
	before=$(count "in=0 out=0\$" "$ECHO_LOG") &&
	busy=$(count "in=[1-9]" "$ECHO_LOG") &&
	mark &&
	tcp --to "origin.test:$ECHO_PORT" \
		--send-file "$TEST_DATA/tls/openssl-sni.bin" >out 2>err &&
	test "$(hex out)" = "$ALERT_HEX" &&
	conn host=origin.test port="$ECHO_PORT" sni=api.example.com \
		decision=deny reason=sni-mismatch \
		-- bytes_up=0 bytes_down=0 &&
	wait_count $((before + 1)) "in=0 out=0\$" "$ECHO_LOG" &&
	test "$(count "in=[1-9]" "$ECHO_LOG")" = "$busy"
'

test_expect_success 's_client without SNI: access_denied alert, sni-missing' '
	before=$(count "^tls: GET " "$TLS_LOG") &&
	mark &&
	test_must_fail sclient -connect "origin.test:$TLS_PORT" -noservername \
		<req >out 2>err &&
	test_grep "alert access denied" err &&
	conn host=origin.test port="$TLS_PORT" sni= decision=deny \
		reason=sni-missing &&
	test "$(count "^tls: GET " "$TLS_LOG")" = "$before"
'

test_expect_success 'a ClientHello one byte per write: the handshake completes' '
	mark &&
	python3 peek.py tls "$PROXY_PORT" "origin.test:$TLS_PORT" origin.test \
		"$CA_FILE" >out 2>err &&
	test_grep "^ClientHello: [0-9]+ bytes, one a write" err &&
	test_grep "^hello from origin\\.test:$TLS_PORT" out &&
	conn host=origin.test sni=origin.test decision=allow reason=allowed
'

test_expect_success 'a captured ClientHello one byte per write: passes, forwarded byte for byte' '
	mark &&
	python3 peek.py bytes "$PROXY_PORT" "api.example.com:$ECHO_PORT" \
		"$TEST_DATA/tls/openssl-sni.bin" >out 2>err &&
	cmp "$TEST_DATA/tls/openssl-sni.bin" out &&
	n=$(wc -c <out) &&
	conn host=api.example.com port="$ECHO_PORT" sni=api.example.com \
		decision=allow reason=allowed rule="$RULES:11" \
		-- bytes_up=$n bytes_down=$n
'

test_expect_success 'a ClientHello in two TLS records: passes, forwarded as sent' '
	python3 split.py "$TEST_DATA/tls/openssl-sni.bin" 60 >two.bin &&
	test "$(wc -c <two.bin)" = $(($(wc -c <"$TEST_DATA/tls/openssl-sni.bin") + 5)) &&
	mark &&
	tcp --to "api.example.com:$ECHO_PORT" --send-file two.bin --half-close \
		>out 2>err &&
	cmp two.bin out &&
	conn host=api.example.com sni=api.example.com decision=allow \
		reason=allowed
'

test_expect_success 'a ClientHello sent with the CONNECT, before the 200: peeked all the same' '
	printf "CONNECT api.example.com:%s HTTP/1.1\\r\\nHost: api.example.com:%s\\r\\n\\r\\n" \
		"$ECHO_PORT" "$ECHO_PORT" >req &&
	cat req "$TEST_DATA/tls/openssl-sni.bin" >early &&
	printf "HTTP/1.1 200 Connection established\\r\\n\\r\\n" >expect &&
	cat "$TEST_DATA/tls/openssl-sni.bin" >>expect &&
	mark &&
	python3 "$CLIENT" tcp --to "127.0.0.1:$PROXY_PORT" --send-file early \
		--half-close >out 2>err &&
	cmp expect out &&
	conn host=api.example.com sni=api.example.com decision=allow \
		reason=allowed
'

test_expect_success 'a ClientHello naming another host, sent with the CONNECT: refused all the same' '
	printf "CONNECT origin.test:%s HTTP/1.1\\r\\nHost: origin.test:%s\\r\\n\\r\\n" \
		"$ECHO_PORT" "$ECHO_PORT" >req &&
	cat req "$TEST_DATA/tls/openssl-sni.bin" >early &&
	before=$(count "in=0 out=0\$" "$ECHO_LOG") &&
	busy=$(count "in=[1-9]" "$ECHO_LOG") &&
	mark &&
	python3 "$CLIENT" tcp --to "127.0.0.1:$PROXY_PORT" --send-file early \
		>out 2>err &&
	printf "HTTP/1.1 200 Connection established\\r\\n\\r\\n" >expect &&
	cmp -n 39 expect out &&
	tail -c +40 out >alert &&
	test "$(hex alert)" = "$ALERT_HEX" &&
	conn host=origin.test sni=api.example.com decision=deny \
		reason=sni-mismatch \
		-- bytes_up=0 bytes_down=0 &&
	wait_count $((before + 1)) "in=0 out=0\$" "$ECHO_LOG" &&
	test "$(count "in=[1-9]" "$ECHO_LOG")" = "$busy"
'

test_expect_success 'a ClientHello whose lengths lie: access_denied alert, bad-tls, nothing forwarded' '
	python3 lie.py "$TEST_DATA/tls/openssl-sni.bin" >lie.bin &&
	test "$(wc -c <lie.bin)" = "$(wc -c <"$TEST_DATA/tls/openssl-sni.bin")" &&
	! cmp -s lie.bin "$TEST_DATA/tls/openssl-sni.bin" &&
	before=$(count "in=0 out=0\$" "$ECHO_LOG") &&
	busy=$(count "in=[1-9]" "$ECHO_LOG") &&
	mark &&
	tcp --to "api.example.com:$ECHO_PORT" --send-file lie.bin >out 2>err &&
	test "$(hex out)" = "$ALERT_HEX" &&
	conn host=api.example.com port="$ECHO_PORT" sni= decision=deny \
		reason=bad-tls \
		-- bytes_up=0 bytes_down=0 &&
	wait_count $((before + 1)) "in=0 out=0\$" "$ECHO_LOG" &&
	test "$(count "in=[1-9]" "$ECHO_LOG")" = "$busy"
'

# --- other protocols ---------------------------------------------------------

test_expect_success 'plain bytes on a port the entry does not name: closed, protocol-not-allowed' '
	before=$(count "in=0 out=0\$" "$ECHO_LOG") &&
	busy=$(count "in=[1-9]" "$ECHO_LOG") &&
	mark &&
	tcp --to "plain.test:$ECHO_PORT" --send "hello there" >out 2>err &&
	test_must_be_empty out &&
	conn host=plain.test port="$ECHO_PORT" sni= decision=deny \
		reason=protocol-not-allowed rule="$RULES:10" \
		-- bytes_up=0 bytes_down=0 &&
	wait_count $((before + 1)) "in=0 out=0\$" "$ECHO_LOG" &&
	test "$(count "in=[1-9]" "$ECHO_LOG")" = "$busy"
'

test_expect_success 'a server-first protocol on a port the entry names: the banner comes, then the echo' '
	mark &&
	python3 peek.py banner "$PROXY_PORT" "banner.test:$BANNER_PORT" >out 2>err &&
	cat >expect <<-EOF &&
	banner: $BANNER
	then: ping
	EOF
	test_cmp expect out &&
	conn host=banner.test port="$BANNER_PORT" decision=allow \
		reason=allowed rule="$RULES:12" \
		-- bytes_up=5 bytes_down=$((${#BANNER} + 2 + 5))
'

# --- HTTP: the Host ----------------------------------------------------------

test_expect_success 'HTTP in the tunnel, Host equal to the CONNECT host: passes' '
	printf "GET / HTTP/1.1\\r\\nHost: plain.test:%s\\r\\nConnection: close\\r\\n\\r\\n" \
		"$HTTP_PORT" >req &&
	mark &&
	tcp --to "plain.test:$HTTP_PORT" --send-file req >out 2>err &&
	test_grep "^HTTP/1\\.1 200 " out &&
	test_grep "hello from plain\\.test:$HTTP_PORT" out &&
	conn host=plain.test port="$HTTP_PORT" sni= decision=allow \
		reason=allowed rule="$RULES:10" \
		-- bytes_up=$(wc -c <req) bytes_down=$(wc -c <out)
'

test_expect_success 'HTTP in the tunnel, another Host: 403 host-mismatch, the origin sees nothing' '
	before=$(count "^http: " "$HTTP_LOG") &&
	printf "GET / HTTP/1.1\\r\\nHost: origin.test:%s\\r\\nConnection: close\\r\\n\\r\\n" \
		"$HTTP_PORT" >req &&
	mark &&
	tcp --to "plain.test:$HTTP_PORT" --send-file req >out 2>err &&
	tr -d "\\r" <out >resp &&
	test_grep "^HTTP/1\\.1 403 " resp &&
	test_grep "^X-Intutic-Error: host-mismatch\$" resp &&
	test_grep "Host header does not name the CONNECT host" resp &&
	conn host=plain.test port="$HTTP_PORT" decision=deny \
		reason=host-mismatch status=403 \
		-- bytes_up=0 bytes_down=0 &&
	test "$(count "^http: " "$HTTP_LOG")" = "$before"
'

test_expect_success 'HTTP in the tunnel with two Host headers: 403 host-mismatch' '
	before=$(count "^http: " "$HTTP_LOG") &&
	printf "GET / HTTP/1.1\\r\\nHost: plain.test:%s\\r\\nHost: origin.test:%s\\r\\n\\r\\n" \
		"$HTTP_PORT" "$HTTP_PORT" >req &&
	mark &&
	tcp --to "plain.test:$HTTP_PORT" --send-file req >out 2>err &&
	test_grep "^X-Intutic-Error: host-mismatch" out &&
	conn host=plain.test decision=deny reason=host-mismatch &&
	test "$(count "^http: " "$HTTP_LOG")" = "$before"
'

# --- timeouts ----------------------------------------------------------------

test_expect_success "a proxy with --peek-timeout $PEEK_MS" '
	stop_proxy &&
	start_proxy "$RULES" --peek-timeout "$PEEK_MS" &&
	test "$(proxy_metric intutic_timeouts_total)" = 0
'

test_expect_success 'a client silent after the 200: closed at the peek timeout, counted' '
	mark &&
	start=$(date +%s%N) &&
	tcp --to "origin.test:$TLS_PORT" >out 2>err &&
	ms=$((($(date +%s%N) - start) / 1000000)) &&
	test_must_be_empty out &&
	test "$ms" -ge $((PEEK_MS - 100)) &&
	test "$ms" -lt $((PEEK_MS + 4000)) &&
	conn host=origin.test port="$TLS_PORT" sni= decision=deny \
		reason=peek-timeout \
		-- bytes_up=0 bytes_down=0 &&
	test "$(proxy_metric intutic_timeouts_total)" = 1 &&
	test "$(proxy_metric intutic_decision_reasons_total reason=peek-timeout)" = 1
'

test_expect_success 'half a ClientHello, then silence: closed at the peek timeout' '
	head -c 100 "$TEST_DATA/tls/openssl-sni.bin" >half.bin &&
	busy=$(count "in=[1-9]" "$ECHO_LOG") &&
	mark &&
	start=$(date +%s%N) &&
	tcp --to "api.example.com:$ECHO_PORT" --send-file half.bin >out 2>err &&
	ms=$((($(date +%s%N) - start) / 1000000)) &&
	test_must_be_empty out &&
	test "$ms" -ge $((PEEK_MS - 100)) &&
	test "$ms" -lt $((PEEK_MS + 4000)) &&
	conn host=api.example.com decision=deny reason=peek-timeout \
		-- bytes_up=0 bytes_down=0 &&
	test "$(proxy_metric intutic_timeouts_total)" = 2 &&
	test "$(count "in=[1-9]" "$ECHO_LOG")" = "$busy"
'

test_expect_success 'a whole ClientHello in time still passes on this proxy' '
	mark &&
	printf "GET / HTTP/1.1\\r\\nHost: origin.test:%s\\r\\nConnection: close\\r\\n\\r\\n" \
		"$TLS_PORT" >req &&
	{ sclient -connect "origin.test:$TLS_PORT" -servername origin.test \
		<req >out 2>err || :; } &&
	test_grep "^Verify return code: 0 \\(ok\\)" out &&
	test_grep "^hello from origin\\.test:$TLS_PORT" out &&
	conn host=origin.test sni=origin.test decision=allow reason=allowed &&
	test "$(proxy_metric intutic_timeouts_total)" = 2
'

test_done
