#!/bin/sh
test_description='CONNECT peek: the SNI of a ClientHello, the Host of an HTTP request, other protocols only on a port the entry names, timeouts'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy "openssl (s_client, test certificates)"
openssl s_client -help 2>&1 | grep -q -e '-proxy ' ||
	test_skip_all "needs an openssl s_client with -proxy (OpenSSL 3.0)"

TUNNEL=$top_srcdir/t/helpers/tunnel.py
WAIT_SECONDS=10		# a server to log a connection's end
PEEK_MS=1000		# the second proxy's --peek-timeout
BANNER='SSH-2.0-banner.test ready'
# The TLS alert the proxy closes a refused ClientHello with: a fatal (2)
# access_denied (49), TLS 1.2 record version.
ALERT_HEX=15030300020231

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

# count_is N PATTERN FILE: N lines of FILE match the ERE PATTERN now.
count_is () {
	test "$(grep_count "$2" "$3")" = "$1"
}

# wait_count N PATTERN FILE: until N lines of FILE match PATTERN (a server
# logs a connection's end when it sees it), at most WAIT_SECONDS.
wait_count () {
	wait_until "$WAIT_SECONDS" count_is "$@" && return 0
	echo "wait_count: not $1 lines matching '$2' in $3 after ${WAIT_SECONDS}s:" >&2
	cat "$3" >&2
	return 1
}

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

test_expect_success 'setup: servers, names, rules, the proxy' '
	test_certs &&
	start_origin tls --tls "$CERT_FILE" "$KEY_FILE" &&
	start_origin http &&
	start_echo echo &&
	start_echo banner --mode banner "$BANNER" &&
	write_hosts hosts origin.test=127.0.0.1 plain.test=127.0.0.1 \
		api.example.com=127.0.0.1 banner.test=127.0.0.1 &&
	fill_rules proxy-connect/peek.yaml rules.yaml TLS_PORT="$TLS_PORT" \
		HTTP_PORT="$HTTP_PORT" ECHO_PORT="$ECHO_PORT" \
		BANNER_PORT="$BANNER_PORT" &&
	RULES=$PWD/rules.yaml &&
	"$INTUTIC" rules check "$RULES" &&
	start_proxy "$RULES"
'

# --- TLS: the SNI ------------------------------------------------------------

test_expect_success 's_client, SNI equal to the CONNECT host: the handshake completes' '
	printf "GET / HTTP/1.1\\r\\nHost: origin.test:%s\\r\\nConnection: close\\r\\n\\r\\n" \
		"$TLS_PORT" >req &&
	audit_mark &&
	{ sclient -connect "origin.test:$TLS_PORT" -servername origin.test \
		<req >out 2>err || :; } &&
	test_grep "^Verify return code: 0 \\(ok\\)" out &&
	test_grep "^hello from origin\\.test:$TLS_PORT" out &&
	test_grep "^X-TLS-SNI: origin\\.test" out &&
	audit_conn proto=connect host=origin.test port="$TLS_PORT" \
		sni=origin.test addr=127.0.0.1 decision=allow reason=allowed \
		rule="$RULES:9" \
		-- "bytes_up>=$(wc -c <req)" "bytes_down>100"
'

test_expect_success 's_client, SNI the same name in other letter case: passes' '
	audit_mark &&
	{ sclient -connect "origin.test:$TLS_PORT" -servername ORIGIN.Test \
		<req >out 2>err || :; } &&
	test_grep "^hello from origin\\.test:$TLS_PORT" out &&
	audit_conn host=origin.test "sni~^(?i:origin\\.test)\$" decision=allow \
		reason=allowed
'

test_expect_success 's_client, another SNI: access_denied alert, sni-mismatch, nothing reaches the origin' '
	before=$(grep_count "^tls: GET " "$TLS_LOG") &&
	audit_mark &&
	test_must_fail sclient -connect "origin.test:$TLS_PORT" \
		-servername other.test <req >out 2>err &&
	test_grep "alert access denied" err &&
	test_grep -v "hello from" out &&
	audit_conn proto=connect host=origin.test port="$TLS_PORT" \
		sni=other.test decision=deny reason=sni-mismatch rule="$RULES:9" \
		-- decision=deny reason=sni-mismatch bytes_up=0 bytes_down=0 &&
	test "$(grep_count "^tls: GET " "$TLS_LOG")" = "$before"
'

test_expect_success 'a captured ClientHello naming another host: exactly the alert comes back' '
	before=$(grep_count "in=0 out=0\$" "$ECHO_LOG") &&
	busy=$(grep_count "in=[1-9]" "$ECHO_LOG") &&
	audit_mark &&
	proxy_tcp --to "origin.test:$ECHO_PORT" \
		--send-file "$TEST_DATA/tls/openssl-sni.bin" >out 2>err &&
	test "$(hex out)" = "$ALERT_HEX" &&
	audit_conn host=origin.test port="$ECHO_PORT" sni=api.example.com \
		decision=deny reason=sni-mismatch \
		-- bytes_up=0 bytes_down=0 &&
	wait_count $((before + 1)) "in=0 out=0\$" "$ECHO_LOG" &&
	test "$(grep_count "in=[1-9]" "$ECHO_LOG")" = "$busy"
'

test_expect_success 's_client without SNI: access_denied alert, sni-missing' '
	before=$(grep_count "^tls: GET " "$TLS_LOG") &&
	audit_mark &&
	test_must_fail sclient -connect "origin.test:$TLS_PORT" -noservername \
		<req >out 2>err &&
	test_grep "alert access denied" err &&
	audit_conn host=origin.test port="$TLS_PORT" sni= decision=deny \
		reason=sni-missing &&
	test "$(grep_count "^tls: GET " "$TLS_LOG")" = "$before"
'

test_expect_success 'a ClientHello one byte per write: the handshake completes' '
	audit_mark &&
	python3 "$TUNNEL" tls "$PROXY_PORT" "origin.test:$TLS_PORT" origin.test \
		"$CA_FILE" >out 2>err &&
	test_grep "^ClientHello: [0-9]+ bytes, one a write" err &&
	test_grep "^hello from origin\\.test:$TLS_PORT" out &&
	audit_conn host=origin.test sni=origin.test decision=allow reason=allowed
'

test_expect_success 'a captured ClientHello one byte per write: passes, forwarded byte for byte' '
	audit_mark &&
	python3 "$TUNNEL" bytes "$PROXY_PORT" "api.example.com:$ECHO_PORT" \
		"$TEST_DATA/tls/openssl-sni.bin" >out 2>err &&
	cmp "$TEST_DATA/tls/openssl-sni.bin" out &&
	n=$(wc -c <out) &&
	audit_conn host=api.example.com port="$ECHO_PORT" sni=api.example.com \
		decision=allow reason=allowed rule="$RULES:11" \
		-- bytes_up=$n bytes_down=$n
'

test_expect_success 'a ClientHello in two TLS records: passes, forwarded as sent' '
	python3 split.py "$TEST_DATA/tls/openssl-sni.bin" 60 >two.bin &&
	test "$(wc -c <two.bin)" = $(($(wc -c <"$TEST_DATA/tls/openssl-sni.bin") + 5)) &&
	audit_mark &&
	proxy_tcp --to "api.example.com:$ECHO_PORT" --send-file two.bin --half-close \
		>out 2>err &&
	cmp two.bin out &&
	audit_conn host=api.example.com sni=api.example.com decision=allow \
		reason=allowed
'

test_expect_success 'a ClientHello sent with the CONNECT, before the 200: peeked all the same' '
	printf "CONNECT api.example.com:%s HTTP/1.1\\r\\nHost: api.example.com:%s\\r\\n\\r\\n" \
		"$ECHO_PORT" "$ECHO_PORT" >req &&
	cat req "$TEST_DATA/tls/openssl-sni.bin" >early &&
	printf "HTTP/1.1 200 Connection established\\r\\n\\r\\n" >expect &&
	cat "$TEST_DATA/tls/openssl-sni.bin" >>expect &&
	audit_mark &&
	proxy_send --send-file early \
		--half-close >out 2>err &&
	cmp expect out &&
	audit_conn host=api.example.com sni=api.example.com decision=allow \
		reason=allowed
'

test_expect_success 'a ClientHello naming another host, sent with the CONNECT: refused all the same' '
	printf "CONNECT origin.test:%s HTTP/1.1\\r\\nHost: origin.test:%s\\r\\n\\r\\n" \
		"$ECHO_PORT" "$ECHO_PORT" >req &&
	cat req "$TEST_DATA/tls/openssl-sni.bin" >early &&
	before=$(grep_count "in=0 out=0\$" "$ECHO_LOG") &&
	busy=$(grep_count "in=[1-9]" "$ECHO_LOG") &&
	audit_mark &&
	proxy_send --send-file early \
		>out 2>err &&
	printf "HTTP/1.1 200 Connection established\\r\\n\\r\\n" >expect &&
	cmp -n 39 expect out &&
	tail -c +40 out >alert &&
	test "$(hex alert)" = "$ALERT_HEX" &&
	audit_conn host=origin.test sni=api.example.com decision=deny \
		reason=sni-mismatch \
		-- bytes_up=0 bytes_down=0 &&
	wait_count $((before + 1)) "in=0 out=0\$" "$ECHO_LOG" &&
	test "$(grep_count "in=[1-9]" "$ECHO_LOG")" = "$busy"
'

test_expect_success 'a ClientHello whose lengths lie: access_denied alert, bad-tls, nothing forwarded' '
	python3 lie.py "$TEST_DATA/tls/openssl-sni.bin" >lie.bin &&
	test "$(wc -c <lie.bin)" = "$(wc -c <"$TEST_DATA/tls/openssl-sni.bin")" &&
	! cmp -s lie.bin "$TEST_DATA/tls/openssl-sni.bin" &&
	before=$(grep_count "in=0 out=0\$" "$ECHO_LOG") &&
	busy=$(grep_count "in=[1-9]" "$ECHO_LOG") &&
	audit_mark &&
	proxy_tcp --to "api.example.com:$ECHO_PORT" --send-file lie.bin >out 2>err &&
	test "$(hex out)" = "$ALERT_HEX" &&
	audit_conn host=api.example.com port="$ECHO_PORT" sni= decision=deny \
		reason=bad-tls \
		-- bytes_up=0 bytes_down=0 &&
	wait_count $((before + 1)) "in=0 out=0\$" "$ECHO_LOG" &&
	test "$(grep_count "in=[1-9]" "$ECHO_LOG")" = "$busy"
'

# --- other protocols ---------------------------------------------------------

test_expect_success 'plain bytes on a port the entry does not name: closed, protocol-not-allowed' '
	before=$(grep_count "in=0 out=0\$" "$ECHO_LOG") &&
	busy=$(grep_count "in=[1-9]" "$ECHO_LOG") &&
	audit_mark &&
	proxy_tcp --to "plain.test:$ECHO_PORT" --send "hello there" >out 2>err &&
	test_must_be_empty out &&
	audit_conn host=plain.test port="$ECHO_PORT" sni= decision=deny \
		reason=protocol-not-allowed rule="$RULES:10" \
		-- bytes_up=0 bytes_down=0 &&
	wait_count $((before + 1)) "in=0 out=0\$" "$ECHO_LOG" &&
	test "$(grep_count "in=[1-9]" "$ECHO_LOG")" = "$busy"
'

test_expect_success 'a server-first protocol on a port the entry names: the banner comes, then the echo' '
	audit_mark &&
	python3 "$TUNNEL" banner "$PROXY_PORT" "banner.test:$BANNER_PORT" >out 2>err &&
	cat >expect <<-EOF &&
	banner: $BANNER
	then: ping
	EOF
	test_cmp expect out &&
	audit_conn host=banner.test port="$BANNER_PORT" decision=allow \
		reason=allowed rule="$RULES:12" \
		-- bytes_up=5 bytes_down=$((${#BANNER} + 2 + 5))
'

# --- HTTP: the Host ----------------------------------------------------------

test_expect_success 'HTTP in the tunnel, Host equal to the CONNECT host: passes' '
	printf "GET / HTTP/1.1\\r\\nHost: plain.test:%s\\r\\nConnection: close\\r\\n\\r\\n" \
		"$HTTP_PORT" >req &&
	audit_mark &&
	proxy_tcp --to "plain.test:$HTTP_PORT" --send-file req >out 2>err &&
	test_grep "^HTTP/1\\.1 200 " out &&
	test_grep "hello from plain\\.test:$HTTP_PORT" out &&
	audit_conn host=plain.test port="$HTTP_PORT" sni= decision=allow \
		reason=allowed rule="$RULES:10" \
		-- bytes_up=$(wc -c <req) bytes_down=$(wc -c <out)
'

test_expect_success 'HTTP in the tunnel, another Host: 403 host-mismatch, the origin sees nothing' '
	before=$(grep_count "^http: " "$HTTP_LOG") &&
	printf "GET / HTTP/1.1\\r\\nHost: origin.test:%s\\r\\nConnection: close\\r\\n\\r\\n" \
		"$HTTP_PORT" >req &&
	audit_mark &&
	proxy_tcp --to "plain.test:$HTTP_PORT" --send-file req >out 2>err &&
	tr -d "\\r" <out >resp &&
	test_grep "^HTTP/1\\.1 403 " resp &&
	test_grep "^X-Intutic-Error: host-mismatch\$" resp &&
	test_grep "Host header does not name the CONNECT host" resp &&
	audit_conn host=plain.test port="$HTTP_PORT" decision=deny \
		reason=host-mismatch status=403 \
		-- bytes_up=0 bytes_down=0 &&
	test "$(grep_count "^http: " "$HTTP_LOG")" = "$before"
'

test_expect_success 'HTTP in the tunnel with two Host headers: 403 host-mismatch' '
	before=$(grep_count "^http: " "$HTTP_LOG") &&
	printf "GET / HTTP/1.1\\r\\nHost: plain.test:%s\\r\\nHost: origin.test:%s\\r\\n\\r\\n" \
		"$HTTP_PORT" "$HTTP_PORT" >req &&
	audit_mark &&
	proxy_tcp --to "plain.test:$HTTP_PORT" --send-file req >out 2>err &&
	test_grep "^X-Intutic-Error: host-mismatch" out &&
	audit_conn host=plain.test decision=deny reason=host-mismatch &&
	test "$(grep_count "^http: " "$HTTP_LOG")" = "$before"
'

# --- timeouts ----------------------------------------------------------------

test_expect_success "a proxy with --peek-timeout $PEEK_MS" '
	stop_proxy &&
	start_proxy "$RULES" --peek-timeout "$PEEK_MS" &&
	test "$(proxy_metric intutic_timeouts_total)" = 0
'

test_expect_success 'a client silent after the 200: closed at the peek timeout, counted' '
	audit_mark &&
	start=$(date +%s%N) &&
	proxy_tcp --to "origin.test:$TLS_PORT" >out 2>err &&
	ms=$((($(date +%s%N) - start) / 1000000)) &&
	test_must_be_empty out &&
	test "$ms" -ge $((PEEK_MS - 100)) &&
	test "$ms" -lt $((PEEK_MS + 4000)) &&
	audit_conn host=origin.test port="$TLS_PORT" sni= decision=deny \
		reason=peek-timeout \
		-- bytes_up=0 bytes_down=0 &&
	test "$(proxy_metric intutic_timeouts_total)" = 1 &&
	test "$(proxy_metric intutic_decision_reasons_total reason=peek-timeout)" = 1
'

test_expect_success 'half a ClientHello, then silence: closed at the peek timeout' '
	head -c 100 "$TEST_DATA/tls/openssl-sni.bin" >half.bin &&
	busy=$(grep_count "in=[1-9]" "$ECHO_LOG") &&
	audit_mark &&
	start=$(date +%s%N) &&
	proxy_tcp --to "api.example.com:$ECHO_PORT" --send-file half.bin >out 2>err &&
	ms=$((($(date +%s%N) - start) / 1000000)) &&
	test_must_be_empty out &&
	test "$ms" -ge $((PEEK_MS - 100)) &&
	test "$ms" -lt $((PEEK_MS + 4000)) &&
	audit_conn host=api.example.com decision=deny reason=peek-timeout \
		-- bytes_up=0 bytes_down=0 &&
	test "$(proxy_metric intutic_timeouts_total)" = 2 &&
	test "$(grep_count "in=[1-9]" "$ECHO_LOG")" = "$busy"
'

test_expect_success 'a whole ClientHello in time still passes on this proxy' '
	audit_mark &&
	printf "GET / HTTP/1.1\\r\\nHost: origin.test:%s\\r\\nConnection: close\\r\\n\\r\\n" \
		"$TLS_PORT" >req &&
	{ sclient -connect "origin.test:$TLS_PORT" -servername origin.test \
		<req >out 2>err || :; } &&
	test_grep "^Verify return code: 0 \\(ok\\)" out &&
	test_grep "^hello from origin\\.test:$TLS_PORT" out &&
	audit_conn host=origin.test sni=origin.test decision=allow reason=allowed &&
	test "$(proxy_metric intutic_timeouts_total)" = 2
'

test_done
