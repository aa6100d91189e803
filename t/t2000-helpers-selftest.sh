#!/bin/sh
test_description='the proxy tests'"'"' own tools: namespace, certificates, origin, DNS and echo servers, with real clients and no proxy'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns

CLIENT=$top_srcdir/t/helpers/client.py
# The RFC 6455 example: this key must be answered with this accept value.
WS_KEY=dGhlIHNhbXBsZSBub25jZQ==
WS_ACCEPT=s3pPLMBiTxaQ9kYGzzhZRbK+xOo=

# curl straight to a server on loopback, bounded in time.
dcurl () {
	curl -sS --noproxy '*' --max-time 10 "$@"
}

# https to the TLS origin under NAME, trusting only the test CA.
scurl () {
	scurl_name_=$1
	shift
	dcurl --cacert "$CA_FILE" \
		--resolve "$scurl_name_:$TLS_PORT:127.0.0.1" "$@"
}

test_expect_success 'only lo exists in the namespace, up, with no route out' '
	test -n "$INTUTIC_TEST_NETNS" &&
	test "$(readlink /proc/self/ns/net)" = "$INTUTIC_TEST_NETNS_ID" &&
	if test_have_prereq NETNS
	then
		ip netns identify >ns &&
		test_grep "^$INTUTIC_TEST_NETNS\$" ns
	else
		test "$(readlink /proc/self/ns/user)" != "$(readlink /proc/1/ns/user)"
	fi &&
	ip -o link >links &&
	test_line_count = 1 links &&
	test_grep "^1: lo: <LOOPBACK,UP" links &&
	ip -4 route show >routes4 &&
	test_must_be_empty routes4 &&
	ip -6 route show >routes6 &&
	test_grep -v "^default" routes6
'

test_expect_success OPENSSL 'test_certs: a CA and a server certificate for the test names' '
	test_certs &&
	test_path_is_file "$CA_FILE" &&
	test_path_is_file "$KEY_FILE" &&
	openssl verify -CAfile "$CA_FILE" -purpose sslserver "$CERT_FILE" &&
	openssl x509 -in "$CERT_FILE" -noout -ext subjectAltName >san &&
	for n in "\\*.test" origin.test a.test b.test ws.test; do
		test_grep "DNS:$n(,|\$)" san || return 1
	done &&
	openssl x509 -in "$CERT_FILE" -noout -checkend 0 &&
	test_must_fail openssl x509 -in "$CERT_FILE" -noout -checkend 90000 &&
	test_leaf_cert other other.example &&
	openssl x509 -in certs/other.crt -noout -ext subjectAltName >san2 &&
	test_grep -v "\\.test" san2 &&
	openssl verify -CAfile "$CA_FILE" certs/other.crt
'

test_expect_success PYTHON 'the start_* functions fail, and say why, when a server cannot start' '
	test_must_fail start_origin bad --no-such-option 2>err &&
	test_grep "did not start" err &&
	test_grep "unrecognized arguments" err &&
	test_must_fail start_origin "9lives" 2>err &&
	test_grep "bad server name" err
'

test_expect_success PYTHON,OPENSSL 'start an origin, a TLS origin and a docroot origin' '
	start_origin origin &&
	start_origin tls --tls "$CERT_FILE" "$KEY_FILE" &&
	mkdir docroot &&
	printf "file contents\\n" >docroot/hello.txt &&
	start_origin files --docroot "$PWD/docroot" &&
	test "$ORIGIN_PORT" -gt 0 &&
	test "$TLS_PORT" -gt 0 &&
	test "$ORIGIN_PORT" != "$TLS_PORT" &&
	test_proc_alive_ "$ORIGIN_PID" &&
	test_grep "listening on 127.0.0.1 port $ORIGIN_PORT" "$ORIGIN_LOG" &&
	test_must_fail start_origin origin 2>err &&
	test_grep "already runs" err
'

test_expect_success CURL '/ says hello to the Host, and the origin logs the request line' '
	dcurl --resolve "origin.test:$ORIGIN_PORT:127.0.0.1" -D head -o out \
		"http://origin.test:$ORIGIN_PORT/" &&
	echo "hello from origin.test:$ORIGIN_PORT" >expect &&
	test_cmp expect out &&
	test_grep "^X-Origin: origin" head &&
	test_grep "^origin: GET / HTTP/1.1 host=origin.test:$ORIGIN_PORT\$" "$ORIGIN_LOG"
'

test_expect_success CURL '/bytes, /chunked and /close carry the same bytes, framed three ways' '
	dcurl -D h.bytes -o bytes "http://127.0.0.1:$ORIGIN_PORT/bytes/100000" &&
	dcurl -D h.chunked -o chunked "http://127.0.0.1:$ORIGIN_PORT/chunked/100000" &&
	dcurl -D h.close -o close "http://127.0.0.1:$ORIGIN_PORT/close/100000" &&
	test "$(wc -c <bytes)" = 100000 &&
	test_cmp bytes chunked &&
	test_cmp bytes close &&
	test_grep "^Content-Length: 100000" h.bytes &&
	test_grep "^Transfer-Encoding: chunked" h.chunked &&
	test_grep -v -i "^Content-Length" h.chunked &&
	test_grep -v -i "^Content-Length" h.close &&
	test_grep "^Connection: close" h.close
'

test_expect_success CURL '/chunked/N comes in several chunks' '
	dcurl --raw -o raw "http://127.0.0.1:$ORIGIN_PORT/chunked/10" &&
	printf "3\\r\\nabc\\r\\n3\\r\\ndef\\r\\n3\\r\\nghi\\r\\n1\\r\\nj\\r\\n0\\r\\n\\r\\n" >expect &&
	test_cmp expect raw
'

test_expect_success CURL '/close/N?v=1.0 answers as HTTP/1.0 and closes' '
	dcurl -v -D head -o out "http://127.0.0.1:$ORIGIN_PORT/close/50?v=1.0" 2>err &&
	test_grep "^HTTP/1.0 200 OK" head &&
	test "$(wc -c <out)" = 50 &&
	test_grep -i "closing connection" err
'

test_expect_success CURL '/status: any code; 204 and 304 without a body' '
	for code in 204 304; do
		dcurl -D head -o body -w "%{http_code}\\n" \
			"http://127.0.0.1:$ORIGIN_PORT/status/$code" >code &&
		echo $code >expect &&
		test_cmp expect code &&
		test_must_be_empty body &&
		test_grep -v -i "^Content-Length" head || return 1
	done &&
	dcurl -o body -w "%{http_code}\\n" "http://127.0.0.1:$ORIGIN_PORT/status/418" >code &&
	echo 418 >expect &&
	test_cmp expect code &&
	echo "status 418" >expect &&
	test_cmp expect body &&
	dcurl -o body -w "%{http_code}\\n" "http://127.0.0.1:$ORIGIN_PORT/nowhere" >code &&
	echo 404 >expect &&
	test_cmp expect code
'

test_expect_success PYTHON 'HEAD sends the headers GET would, and no body (the next response follows at once)' '
	printf "HEAD /bytes/1000 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\nGET / HTTP/1.1\\r\\nHost: second\\r\\nConnection: close\\r\\n\\r\\n" >req &&
	python3 "$CLIENT" tcp --to "127.0.0.1:$ORIGIN_PORT" --send-file req >out &&
	tr -d "\\r" <out >resp &&
	grep "^HTTP/1.1 " resp >status &&
	test_line_count = 2 status &&
	test_grep "^Content-Length: 1000\$" resp &&
	tail -n 1 resp >last &&
	echo "hello from second" >expect &&
	test_cmp expect last &&
	test "$(wc -c <resp)" -lt 400
'

test_expect_success CURL 'connections are kept alive between requests' '
	dcurl -v -o /dev/null -o /dev/null "http://127.0.0.1:$ORIGIN_PORT/bytes/10" \
		"http://127.0.0.1:$ORIGIN_PORT/" 2>err &&
	test_grep -i "re-using existing connection" err
'

test_expect_success CURL 'POST /echo with a Content-Length body' '
	head -c 5000 /dev/urandom >body &&
	dcurl -D head -o back --data-binary @body "http://127.0.0.1:$ORIGIN_PORT/echo" &&
	test_cmp body back &&
	test_grep "^X-Body-Framing: length" head
'

test_expect_success CURL 'POST /echo with a chunked upload' '
	head -c 70000 /dev/urandom >body &&
	dcurl -D head -o back -H "Transfer-Encoding: chunked" --data-binary @body \
		"http://127.0.0.1:$ORIGIN_PORT/echo" &&
	test_cmp body back &&
	test_grep "^X-Body-Framing: chunked" head
'

test_expect_success CURL 'Expect: 100-continue is answered with 100 Continue, then the echo' '
	head -c 3000 /dev/urandom >body &&
	dcurl -v -o back -H "Expect: 100-continue" --data-binary @body \
		"http://127.0.0.1:$ORIGIN_PORT/echo" 2>err &&
	test_cmp body back &&
	test_grep "^< HTTP/1.1 100 Continue" err &&
	test_grep "^< X-Expect: 100-continue" err &&
	test_grep "^< HTTP/1.1 200 OK" err
'

test_expect_success CURL '/headers echoes the header lines as they came, proxy ones included' '
	dcurl -o out -H "Proxy-Authorization: Basic dGVzdA==" \
		-H "x-MiXeD-Case:  two  spaces" -H "Connection: keep-alive, X-Hop" \
		"http://127.0.0.1:$ORIGIN_PORT/headers" &&
	test_grep "^Proxy-Authorization: Basic dGVzdA==\$" out &&
	test_grep "^x-MiXeD-Case:  two  spaces\$" out &&
	test_grep "^Connection: keep-alive, X-Hop\$" out &&
	test_grep "^Host: 127.0.0.1:$ORIGIN_PORT\$" out
'

test_expect_success CURL '/request shows the request line: an absolute-form target is served too' '
	dcurl -o out --request-target "http://origin.test/request?x=1" \
		"http://127.0.0.1:$ORIGIN_PORT/" &&
	head -n 1 out >line &&
	echo "GET http://origin.test/request?x=1 HTTP/1.1" >expect &&
	test_cmp expect line
'

test_expect_success CURL '/slow waits before it answers' '
	dcurl -o out -w "%{time_total}\\n" "http://127.0.0.1:$ORIGIN_PORT/slow?ms=300" >time &&
	echo "slept 300 ms" >expect &&
	test_cmp expect out &&
	awk "{ exit !(\$1 >= 0.3) }" time &&
	test_expect_code 28 curl -sS --max-time 0.2 -o /dev/null \
		"http://127.0.0.1:$ORIGIN_PORT/slow?ms=2000" &&
	dcurl -D head -o out "http://127.0.0.1:$ORIGIN_PORT/slow?ms=200&after=headers" &&
	test_grep "^Content-Length: 13" head
'

test_expect_success CURL '/reset breaks the response with a TCP reset' '
	test_expect_code 56 dcurl -o part "http://127.0.0.1:$ORIGIN_PORT/reset" 2>err &&
	test_grep "Connection reset by peer" err &&
	test "$(wc -c <part)" -le 1000
'

test_expect_success CURL '/ws: curl gets 101 with the RFC 6455 accept value' '
	test_expect_code 28 curl -sS --max-time 1 --http1.1 -N -o /dev/null -D head \
		-H "Upgrade: websocket" -H "Connection: Upgrade" \
		-H "Sec-WebSocket-Key: $WS_KEY" -H "Sec-WebSocket-Version: 13" \
		"http://127.0.0.1:$ORIGIN_PORT/ws" 2>err &&
	test_grep "^HTTP/1.1 101 Switching Protocols" head &&
	test_grep -F "Sec-WebSocket-Accept: $WS_ACCEPT" head &&
	dcurl -o /dev/null -w "%{http_code}\\n" "http://127.0.0.1:$ORIGIN_PORT/ws" >code &&
	echo 426 >expect &&
	test_cmp expect code
'

test_expect_success PYTHON '/ws: a WebSocket client exchanges a message and closes' '
	python3 "$CLIENT" ws --to "127.0.0.1:$ORIGIN_PORT" --host ws.test \
		--message "hello, socket" >out &&
	cat >expect <<-\EOF &&
	HTTP/1.1 101 Switching Protocols
	echo: hello, socket
	close: 1000
	EOF
	test_cmp expect out
'

test_expect_success PYTHON '/ws: the upgrade in absolute form, as a forward proxy sends it' '
	python3 "$CLIENT" ws --to "ws.test:$ORIGIN_PORT" --proxy "127.0.0.1:$ORIGIN_PORT" \
		--forward --message forwarded >out &&
	test_grep "^echo: forwarded\$" out &&
	test_grep "GET ws://ws.test:$ORIGIN_PORT/ws HTTP/1.1" "$ORIGIN_LOG"
'

test_expect_success PYTHON '/ws?mode=raw echoes raw bytes after the upgrade' '
	printf "GET /ws?mode=raw HTTP/1.1\\r\\nHost: ws.test\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Key: %s\\r\\nSec-WebSocket-Version: 13\\r\\n\\r\\nraw bytes" "$WS_KEY" >req &&
	python3 "$CLIENT" tcp --to "127.0.0.1:$ORIGIN_PORT" --send-file req --half-close >out &&
	test_grep "^HTTP/1.1 101 " out &&
	tail -c 9 out >tail &&
	printf "raw bytes" >expect &&
	test_cmp expect tail
'

test_expect_success CURL '/files serves the docroot, and nothing outside it' '
	dcurl -o out "http://127.0.0.1:$FILES_PORT/files/hello.txt" &&
	test_cmp docroot/hello.txt out &&
	dcurl -o out -w "%{http_code}\\n" "http://127.0.0.1:$FILES_PORT/files/..%2Fsan" >code &&
	echo 404 >expect &&
	test_cmp expect code
'

test_expect_success CURL,OPENSSL 'https: the test CA verifies the origin, the SNI is seen' '
	scurl origin.test -D head -o out "https://origin.test:$TLS_PORT/" &&
	echo "hello from origin.test:$TLS_PORT" >expect &&
	test_cmp expect out &&
	test_grep "^X-TLS-SNI: origin.test" head &&
	scurl a.test -D head -o out "https://a.test:$TLS_PORT/" &&
	test_grep "^X-TLS-SNI: a.test" head &&
	test_grep "^X-Origin: tls" head
'

test_expect_success CURL,OPENSSL 'https: without the test CA, or for a name not in the certificate, curl refuses' '
	test_expect_code 60 dcurl --resolve "origin.test:$TLS_PORT:127.0.0.1" \
		-o /dev/null "https://origin.test:$TLS_PORT/" 2>err &&
	test_expect_code 60 scurl other.example -o /dev/null \
		"https://other.example:$TLS_PORT/" 2>err &&
	test_grep "other.example" err
'

test_expect_success CURL,OPENSSL 'https: bytes, chunked, close-delimited, uploads and 100-continue' '
	scurl origin.test -o bytes "https://origin.test:$TLS_PORT/bytes/65536" &&
	scurl origin.test -o chunked "https://origin.test:$TLS_PORT/chunked/65536" &&
	scurl origin.test -o close "https://origin.test:$TLS_PORT/close/65536" &&
	test "$(wc -c <bytes)" = 65536 &&
	test_cmp bytes chunked &&
	test_cmp bytes close &&
	head -c 4000 /dev/urandom >body &&
	scurl origin.test -o back -H "Transfer-Encoding: chunked" --data-binary @body \
		"https://origin.test:$TLS_PORT/echo" &&
	test_cmp body back &&
	scurl origin.test -v -o back -H "Expect: 100-continue" --data-binary @body \
		"https://origin.test:$TLS_PORT/echo" 2>err &&
	test_cmp body back &&
	test_grep "^< HTTP/1.1 100 Continue" err &&
	scurl origin.test -D head -o /dev/null -I "https://origin.test:$TLS_PORT/bytes/7" &&
	test_grep "^Content-Length: 7" head
'

test_expect_success CURL,OPENSSL 'https: /reset is a reset under TLS too' '
	test_expect_code 56 scurl origin.test -o /dev/null \
		"https://origin.test:$TLS_PORT/reset" 2>err &&
	test_grep -i "reset by peer" err
'

test_expect_success PYTHON,OPENSSL 'wss: the WebSocket exchange over TLS, verified' '
	python3 "$CLIENT" ws --to "127.0.0.1:$TLS_PORT" --tls --cacert "$CA_FILE" \
		--sni ws.test --host ws.test --message "over tls" >out &&
	test_grep "^echo: over tls\$" out &&
	test_grep "^close: 1000\$" out
'

test_expect_success PYTHON 'stop_server stops an origin with SIGTERM; then nothing listens' '
	start_origin short &&
	stop_server short &&
	test_must_fail test_proc_alive_ "$SHORT_PID" &&
	test_expect_code 7 dcurl -o /dev/null "http://127.0.0.1:$SHORT_PORT/" 2>err &&
	test_grep "short: listening" "$SHORT_LOG"
'

# --- DNS ---------------------------------------------------------------------

test_expect_success PYTHON 'start_dns with a zone' '
	cat >zone <<-\EOF &&
	# the test zone
	a.test A 10.9.0.1 10.9.0.2
	a.test AAAA 2001:db8::1
	v4only.test A 10.9.0.3
	v4only.test TTL 5
	fail.test SERVFAIL
	hang.test TIMEOUT
	trunc.test TRUNCATED
	trunc.test A 10.9.0.4
	slow.test SLOW 300
	slow.test A 10.9.0.5
	EOF
	i=0 &&
	while test $i -lt 40; do
		echo "many.test A 10.8.0.$i" || return 1
		i=$((i + 1))
	done >>zone &&
	start_dns zone &&
	test "$DNS_PORT" -gt 0 &&
	test_path_is_file "$DNS_QUERY_LOG"
'

dnsq () {
	python3 "$CLIENT" dns --server "127.0.0.1:$DNS_PORT" "$@"
}

test_expect_success PYTHON 'A and AAAA answers, several addresses, TTLs' '
	dnsq a.test A >out &&
	cat >expect <<-\EOF &&
	rcode=NOERROR tc=0 answers=2
	a.test A 60 10.9.0.1
	a.test A 60 10.9.0.2
	EOF
	test_cmp expect out &&
	dnsq a.test AAAA >out &&
	cat >expect <<-\EOF &&
	rcode=NOERROR tc=0 answers=1
	a.test AAAA 60 2001:db8::1
	EOF
	test_cmp expect out &&
	dnsq v4only.test >out &&
	test_grep "^v4only.test A 5 10.9.0.3\$" out
'

test_expect_success PYTHON 'names match in any case, and the question comes back as asked' '
	dnsq A.TeSt. A >out &&
	test_grep "^A.TeSt A 60 10.9.0.1\$" out
'

test_expect_success PYTHON 'no record of the type: NOERROR and no answer; unknown name: NXDOMAIN' '
	dnsq v4only.test AAAA >out &&
	echo "rcode=NOERROR tc=0 answers=0" >expect &&
	test_cmp expect out &&
	dnsq nosuch.test A >out &&
	echo "rcode=NXDOMAIN tc=0 answers=0" >expect &&
	test_cmp expect out
'

test_expect_success PYTHON 'SERVFAIL, and TIMEOUT never answers (over UDP or TCP)' '
	dnsq fail.test >out &&
	echo "rcode=SERVFAIL tc=0 answers=0" >expect &&
	test_cmp expect out &&
	test_expect_code 1 dnsq hang.test --timeout 0.5 >out &&
	echo timeout >expect &&
	test_cmp expect out &&
	test_expect_code 1 dnsq hang.test --tcp --timeout 0.5 >out &&
	test_cmp expect out
'

test_expect_success PYTHON 'TRUNCATED: the TC bit over UDP, the answer over TCP' '
	dnsq trunc.test >out &&
	echo "rcode=NOERROR tc=1 answers=0" >expect &&
	test_cmp expect out &&
	dnsq trunc.test --tcp >out &&
	test_grep "^rcode=NOERROR tc=0 answers=1\$" out &&
	test_grep "^trunc.test A 60 10.9.0.4\$" out
'

test_expect_success PYTHON 'an answer over 512 bytes is truncated over UDP, whole over TCP' '
	dnsq many.test >out &&
	echo "rcode=NOERROR tc=1 answers=0" >expect &&
	test_cmp expect out &&
	dnsq many.test --tcp >out &&
	test_grep "^rcode=NOERROR tc=0 answers=40\$" out
'

test_expect_success PYTHON 'SLOW answers late' '
	python3 -c "
import subprocess, sys, time
t = time.monotonic()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(time.monotonic() - t)
" python3 "$CLIENT" dns --server "127.0.0.1:$DNS_PORT" slow.test >time &&
	awk "{ exit !(\$1 >= 0.3) }" time &&
	dnsq slow.test >out &&
	test_grep "^slow.test A 60 10.9.0.5\$" out
'

test_expect_success PYTHON 'the query log has every query: name, type, transport' '
	test_grep "^a\\.test A udp\$" "$DNS_QUERY_LOG" &&
	test_grep "^a\\.test AAAA udp\$" "$DNS_QUERY_LOG" &&
	test_grep "^nosuch\\.test A udp\$" "$DNS_QUERY_LOG" &&
	test_grep "^trunc\\.test A tcp\$" "$DNS_QUERY_LOG" &&
	grep -c "^hang.test A " "$DNS_QUERY_LOG" >n &&
	echo 2 >expect &&
	test_cmp expect n
'

test_expect_success PYTHON 'SIGHUP reloads the zone; a broken zone keeps the old one' '
	echo "a.test A 10.9.9.9" >zone &&
	kill -HUP "$DNS_PID" &&
	i=0 &&
	until dnsq a.test >out && grep -q "10\\.9\\.9\\.9" out; do
		test $i -lt 50 || break
		sleep 0.1
		i=$((i + 1))
	done &&
	test_grep "^a.test A 60 10.9.9.9\$" out &&
	echo "a.test BOGUS" >zone &&
	kill -HUP "$DNS_PID" &&
	i=0 &&
	while test $i -lt 50 && ! grep -q "keeping the old zone" "$DNS_LOG"; do
		sleep 0.1
		i=$((i + 1))
	done &&
	test_grep "zone:1: unknown directive" "$DNS_LOG" &&
	dnsq a.test >out &&
	test_grep "^a.test A 60 10.9.9.9\$" out
'

test_expect_success PYTHON 'write_resolv_conf names the test DNS server by port' '
	write_resolv_conf &&
	echo "nameserver 127.0.0.1:$DNS_PORT" >expect &&
	test_cmp expect resolv.conf &&
	write_resolv_conf "$PWD/r2.conf" timeout:1 attempts:2 &&
	printf "nameserver 127.0.0.1:%s\\noptions timeout:1 attempts:2\\n" "$DNS_PORT" >expect &&
	test_cmp expect r2.conf
'

# --- echo ---------------------------------------------------------------------

tcpc () {
	python3 "$CLIENT" tcp "$@"
}

test_expect_success PYTHON 'echo: bytes come back unchanged' '
	start_echo &&
	head -c 200000 /dev/urandom >data &&
	tcpc --to "127.0.0.1:$ECHO_PORT" --send-file data --half-close >back &&
	test_cmp data back
'

test_expect_success PYTHON 'echo --mode sink: reads all, sends nothing' '
	start_echo sink --mode sink &&
	head -c 100000 /dev/urandom >data &&
	tcpc --to "127.0.0.1:$SINK_PORT" --send-file data --half-close >back &&
	test_must_be_empty back &&
	i=0 &&
	while test $i -lt 50 && ! grep -q "in=100000 out=0" "$SINK_LOG"; do
		sleep 0.1
		i=$((i + 1))
	done &&
	test_grep "in=100000 out=0" "$SINK_LOG"
'

test_expect_success PYTHON 'echo --mode source N: N bytes, then the close' '
	start_echo source --mode source 123456 &&
	tcpc --to "127.0.0.1:$SOURCE_PORT" >back &&
	test "$(wc -c <back)" = 123456 &&
	dcurl -o bytes "http://127.0.0.1:$ORIGIN_PORT/bytes/123456" &&
	test_cmp bytes back
'

test_expect_success PYTHON 'echo --mode banner: the banner first, then an echo' '
	start_echo banner --mode banner "SSH-2.0-intutic-test" &&
	tcpc --to "127.0.0.1:$BANNER_PORT" --send "client hello" --half-close >back &&
	printf "SSH-2.0-intutic-test\\r\\nclient hello" >expect &&
	test_cmp expect back
'

test_expect_success PYTHON,OPENSSL 'echo --tls: an echo inside TLS, the SNI logged' '
	start_echo tlsecho --tls "$CERT_FILE" "$KEY_FILE" &&
	tcpc --to "127.0.0.1:$TLSECHO_PORT" --tls --cacert "$CA_FILE" --sni b.test \
		--send "in tls" --read 6 >back &&
	printf "in tls" >expect &&
	test_cmp expect back &&
	test_grep "TLS, SNI b.test" "$TLSECHO_LOG"
'

# --- the library's own functions ---------------------------------------------

test_expect_success 'write_hosts writes ADDR NAME lines and refuses a bad pair' '
	write_hosts hosts a.test=127.0.0.1 b.test=::1 a.test=127.0.0.2 &&
	cat >expect <<-\EOF &&
	127.0.0.1 a.test
	::1 b.test
	127.0.0.2 a.test
	EOF
	test_cmp expect hosts &&
	test_must_fail write_hosts h2 a.test 2>err &&
	test_grep "expected NAME=ADDR" err
'

test_expect_success PYTHON 'audit_records, audit_count, audit_wait select by KEY=VALUE' '
	cat >audit.jsonl <<-\EOF &&
	{"ts":"t1","event":"decision","id":1,"proto":"connect","host":"a.test","port":443,"sni":"b.test","decision":"deny","reason":"sni-mismatch","rule":null}
	{"ts":"t2","event":"decision","id":2,"proto":"http","host":"a.test","port":80,"decision":"allow","reason":"rule","rule":"allow-a"}
	{"ts":"t3","event":"close","id":2,"proto":"http","host":"a.test","port":80,"bytes_up":10,"bytes_down":5000,"status":200}
	EOF
	test "$(audit_count event=decision host=a.test reason=sni-mismatch)" = 1 &&
	test "$(audit_count event=decision)" = 2 &&
	test "$(audit_count port=443)" = 1 &&
	test "$(audit_count rule=)" = 2 &&
	test "$(audit_count decision!=deny event=decision)" = 1 &&
	test "$(audit_count "bytes_down>=5000")" = 1 &&
	test "$(audit_count "bytes_down>5000")" = 0 &&
	test "$(audit_count "reason~^sni")" = 1 &&
	test "$(audit_count audit.jsonl)" = 3 &&
	audit_records audit.jsonl event=close >out &&
	sed -n 3p audit.jsonl >expect &&
	test_cmp expect out &&
	audit_wait event=close status=200 &&
	(
		TEST_AUDIT_WAIT_SECONDS=1 &&
		test_must_fail audit_wait event=close status=500 2>err
	) &&
	test_grep "0 of 1 records matching event=close status=500 after 1s" err
'

test_expect_success PYTHON 'the audit functions fail on a line that is not a JSON object, or no file' '
	printf "{\"event\":\"decision\"}\\nnot json\\n" >bad.jsonl &&
	test_expect_code 2 audit_count bad.jsonl event=decision 2>err &&
	test_grep "bad.jsonl:2: not JSON" err &&
	printf "[1]\\n" >bad2.jsonl &&
	test_expect_code 2 audit_count bad2.jsonl 2>err &&
	test_grep "not a JSON object" err &&
	test_expect_code 2 audit_count missing.jsonl event=close 2>err &&
	test_grep "cannot read" err &&
	printf "{\"event\":\"close\"}\\n{\"event\":\"clo" >partial.jsonl &&
	test "$(audit_count partial.jsonl event=close)" = 1 &&
	test_expect_code 2 audit_count "no-operator-here" 2>err
'

test_expect_success PYTHON,CURL 'proxy_metric reads one Prometheus sample (served here by an origin)' '
	cat >docroot/metrics <<-\EOF &&
	# HELP intutic_requests_total Requests.
	# TYPE intutic_requests_total counter
	intutic_requests_total{proto="http",decision="allow"} 3
	intutic_requests_total{proto="http",decision="deny"} 2
	intutic_requests_total{proto="connect",decision="deny"} 1
	intutic_connections_open 4
	intutic_up{version="0.1, beta"} 1 1700000000000
	EOF
	(
		PROXY_URL=http://127.0.0.1:$FILES_PORT/files &&
		test "$(proxy_metric intutic_connections_open)" = 4 &&
		test "$(proxy_metric intutic_requests_total)" = 6 &&
		test "$(proxy_metric intutic_requests_total decision=\"deny\")" = 3 &&
		test "$(proxy_metric intutic_requests_total "proto=\"http\",decision=\"deny\"")" = 2 &&
		test "$(proxy_metric intutic_requests_total decision=deny,proto=connect)" = 1 &&
		test "$(proxy_metric intutic_up "version=\"0.1, beta\"")" = 1 &&
		test_must_fail proxy_metric intutic_requests_total decision=\"maybe\" 2>err &&
		test_grep "no sample" err &&
		test_must_fail proxy_metric intutic_nothing 2>err &&
		test_grep "intutic_connections_open intutic_requests_total intutic_up" err
	)
'

test_expect_success 'start_proxy fails, and says so, when the proxy was not built' '
	mkdir -p nobuild &&
	(
		top_builddir=$PWD/nobuild &&
		test_must_fail start_proxy rules.yaml 2>err
	) &&
	test_grep "nobuild/proxy/intutic-proxy.* was not built" err &&
	test_must_fail stop_proxy 2>err &&
	test_grep "no proxy was started" err &&
	test_must_fail reload_proxy 2>err &&
	test_grep "no proxy runs" err
'

# --- test_isolate_netns itself, on scripts of its own -------------------------
# Each runs in its own namespace inside this one, with its own build tree, by
# an absolute path; each twice: in a named namespace (as root) and in a user
# namespace (test_netns_via_=userns: how an ordinary user runs them).

SUB_BUILD=$TRASH_DIRECTORY/build
OUTER=$TRASH_DIRECTORY
export OUTER

# write_sub NAME: NAME.sh, the libraries, the way in ($SUB_VIA) and stdin.
write_sub () {
	{
		echo '#!/bin/sh'
		echo '. "$top_srcdir/t/lib-test.sh"'
		echo '. "$top_srcdir/t/lib-proxy.sh"'
		test "$SUB_VIA" = ip || echo "test_netns_via_=$SUB_VIA"
		cat
	} >"$1.sh"
}

# run_sub NAME [ARGS...]: NAME.out, NAME.err, NAME.exit (its status) and
# NAME.ns, the namespace it was to make.
run_sub () {
	run_sub_name=$1
	shift
	top_builddir=$SUB_BUILD TEST_VERBOSE='' \
		"$TEST_SHELL_PATH" "$PWD/$run_sub_name.sh" "$@" \
		>"$run_sub_name.out" 2>"$run_sub_name.err" &
	run_sub_pid=$!
	# stopped (its namespace deleted) should this script be interrupted
	test_atexit "test_stop_child_ $run_sub_pid 12"
	echo "intutic-t-$run_sub_name-$run_sub_pid" >"$run_sub_name.ns"
	wait $run_sub_pid
	echo $? >"$run_sub_name.exit"
}

# no_namespace NAME: the namespace of the script NAME is gone: no longer
# listed by ip netns, and no process is in it (NAME.nsid, its id, written
# by a script that got that far).
no_namespace () {
	ip netns list 2>/dev/null >netns.list &&
	test_grep -v "^$(cat "$1.ns")( |\$)" netns.list &&
	if test -s "$1.nsid"
	then
		for p in /proc/[0-9]*
		do
			test "$(readlink $p/ns/net 2>/dev/null)" != "$(cat "$1.nsid")" || {
				echo "process ${p#/proc/} is still in the namespace of $1" >&2
				return 1
			}
		done
	fi
}

for SUB_VIA in ip userns
do
	if test $SUB_VIA = ip
	then
		PREREQ=NETNS IDENT='^intutic-t-subpass-'
	else
		PREREQ=USERNS IDENT=
	fi

test_expect_success $PREREQ "$SUB_VIA: a passing script: its TAP unchanged, status 0, namespace gone" '
	write_sub subpass <<-\EOF &&
	test_isolate_netns
	test_expect_success "in a namespace" "
		readlink /proc/self/ns/net >\"\$OUTER/subpass.nsid\" &&
		test \"\$INTUTIC_TEST_NETNS_ID\" = \"\$(cat \"\$OUTER/subpass.nsid\")\" &&
		{ ip netns identify || :; } >\"\$OUTER/subpass.ident\" &&
		ip -o link >links && test \$(wc -l <links) = 1
	"
	test_done
	EOF
	rm -f subpass.nsid &&
	run_sub subpass &&
	cat >expect <<-\EOF &&
	ok 1 - in a namespace
	1..1
	# passed 1, failed 0, skipped 0, known breakage 0
	EOF
	test_cmp expect subpass.out &&
	echo 0 >expect &&
	test_cmp expect subpass.exit &&
	if test -n "$IDENT"
	then
		echo "$(cat subpass.ns)" >expect &&
		test_cmp expect subpass.ident
	else
		test_grep -v . subpass.ident
	fi &&
	test "$(cat subpass.nsid)" != "$(readlink /proc/self/ns/net)" &&
	no_namespace subpass
'

test_expect_success $PREREQ "$SUB_VIA: a failing script: status 1, scratch kept, servers stopped, namespace gone" '
	write_sub subfail <<-\EOF &&
	test_isolate_netns
	test_expect_success "start" "
		readlink /proc/self/ns/net >\"\$OUTER/subfail.nsid\" &&
		start_echo && echo \$ECHO_PID >\"\$OUTER/subfail.pid\"
	"
	test_expect_success "fails" "false"
	test_done
	EOF
	run_sub subfail -v &&
	echo 1 >expect &&
	test_cmp expect subfail.exit &&
	test_grep "^ok 1 - start" subfail.out &&
	test_grep "^not ok 2 - fails" subfail.out &&
	test_grep "^# kept scratch directory: $SUB_BUILD/t/trash/subfail" subfail.out &&
	test_grep -v "processes left" subfail.out &&
	test_must_fail test_proc_alive_ "$(cat subfail.pid)" &&
	no_namespace subfail
'

test_expect_success $PREREQ "$SUB_VIA: a script that leaves a process behind: it is killed, and the script fails" '
	write_sub subleak <<-\EOF &&
	test_isolate_netns
	test_expect_success "leak" "
		readlink /proc/self/ns/net >\"\$OUTER/subleak.nsid\"
		sleep 30 </dev/null >/dev/null 2>&1 &
		echo \$! >\"\$OUTER/subleak.pid\"
	"
	test_done
	EOF
	run_sub subleak &&
	echo 1 >expect &&
	test_cmp expect subleak.exit &&
	test_grep "^ok 1 - leak" subleak.out &&
	test_grep "^# processes left in namespace intutic-t-subleak-" subleak.out &&
	test_grep "sleep 30" subleak.out &&
	test_must_fail test_proc_alive_ "$(cat subleak.pid)" &&
	no_namespace subleak
'

test_expect_success $PREREQ "$SUB_VIA: SIGTERM to a running script: its servers stop, the namespace goes" '
	write_sub subterm <<-\EOF &&
	test_isolate_netns
	test_expect_success "wait" "
		readlink /proc/self/ns/net >\"\$OUTER/subterm.nsid\" &&
		start_echo &&
		echo \$ECHO_PID >\"\$OUTER/subterm.pid\" &&
		i=0 &&
		while test \$i -lt 300; do sleep 0.1; i=\$((i + 1)); done
	"
	test_done
	EOF
	rm -f subterm.pid &&
	{
		top_builddir=$SUB_BUILD "$TEST_SHELL_PATH" "$PWD/subterm.sh" \
			>subterm.out 2>subterm.err &
	} &&
	sub=$! &&
	test_atexit "test_stop_child_ $sub 12" &&
	echo "intutic-t-subterm-$sub" >subterm.ns &&
	test_wait_for_file subterm.pid &&
	kill -TERM $sub &&
	{ wait $sub; echo $? >subterm.exit; } &&
	echo 143 >expect &&
	test_cmp expect subterm.exit &&
	test_grep -v "^1\.\." subterm.out &&
	test_grep -v "processes left" subterm.out &&
	test_must_fail test_proc_alive_ "$(cat subterm.pid)" &&
	no_namespace subterm
'

test_expect_success $PREREQ "$SUB_VIA: a script deaf to SIGTERM is killed after TEST_NETNS_STOP_SECONDS" '
	write_sub subdeaf <<-\EOF &&
	TEST_NETNS_STOP_SECONDS=1
	test_isolate_netns
	test_expect_success "deaf" "
		readlink /proc/self/ns/net >\"\$OUTER/subdeaf.nsid\" &&
		start_echo &&
		echo \$ECHO_PID >\"\$OUTER/subdeaf.pid\" &&
		sleep 20
	"
	test_done
	EOF
	rm -f subdeaf.pid &&
	{
		top_builddir=$SUB_BUILD "$TEST_SHELL_PATH" "$PWD/subdeaf.sh" \
			>subdeaf.out 2>subdeaf.err &
	} &&
	sub=$! &&
	test_atexit "test_stop_child_ $sub 12" &&
	echo "intutic-t-subdeaf-$sub" >subdeaf.ns &&
	test_wait_for_file subdeaf.pid &&
	kill -TERM $sub &&
	{ wait $sub; echo $? >subdeaf.exit; } &&
	echo 137 >expect &&
	test_cmp expect subdeaf.exit &&
	test_grep "still runs 1s after SIGTERM: SIGKILL" subdeaf.out &&
	test_grep "^# processes left in namespace intutic-t-subdeaf-" subdeaf.out &&
	test_must_fail test_proc_alive_ "$(cat subdeaf.pid)" &&
	no_namespace subdeaf
'
done

test_done
	EOF
	run_sub subpass &&
	cat >expect <<-\EOF &&
	ok 1 - in a namespace
	1..1
	# passed 1, failed 0, skipped 0, known breakage 0
	EOF
	test_cmp expect subpass.out &&
	echo 0 >expect &&
	test_cmp expect subpass.exit &&
	no_namespace subpass
'

test_expect_success NETNS 'a failing script: status 1, scratch kept, servers stopped, namespace gone' '
	write_sub subfail <<-\EOF &&
	test_isolate_netns
	test_expect_success "start" "start_echo && echo \$ECHO_PID >\"\$OUTER/subfail.pid\""
	test_expect_success "fails" "false"
	test_done
	EOF
	run_sub subfail -v &&
	echo 1 >expect &&
	test_cmp expect subfail.exit &&
	test_grep "^ok 1 - start" subfail.out &&
	test_grep "^not ok 2 - fails" subfail.out &&
	test_grep "^# kept scratch directory: $SUB_BUILD/t/trash/subfail" subfail.out &&
	test_grep -v "processes left" subfail.out &&
	test_must_fail test_proc_alive_ "$(cat subfail.pid)" &&
	no_namespace subfail
'

test_expect_success NETNS 'a script that leaves a process behind: it is killed, and the script fails' '
	write_sub subleak <<-\EOF &&
	test_isolate_netns
	test_expect_success "leak" "
		sleep 30 </dev/null >/dev/null 2>&1 &
		echo \$! >\"\$OUTER/subleak.pid\"
	"
	test_done
	EOF
	run_sub subleak &&
	echo 1 >expect &&
	test_cmp expect subleak.exit &&
	test_grep "^ok 1 - leak" subleak.out &&
	test_grep "^# processes left in namespace intutic-t-subleak-" subleak.out &&
	test_grep "sleep 30" subleak.out &&
	test_must_fail test_proc_alive_ "$(cat subleak.pid)" &&
	no_namespace subleak
'

test_expect_success NETNS 'SIGTERM to a running script: its servers stop, the namespace goes' '
	write_sub subterm <<-\EOF &&
	test_isolate_netns
	test_expect_success "wait" "
		start_echo &&
		echo \$ECHO_PID >\"\$OUTER/subterm.pid\" &&
		i=0 &&
		while test \$i -lt 300; do sleep 0.1; i=\$((i + 1)); done
	"
	test_done
	EOF
	rm -f subterm.pid &&
	{
		top_builddir=$SUB_BUILD "$TEST_SHELL_PATH" "$PWD/subterm.sh" \
			>subterm.out 2>subterm.err &
	} &&
	sub=$! &&
	test_atexit "test_stop_child_ $sub 12" &&
	echo "intutic-t-subterm-$sub" >subterm.ns &&
	test_wait_for_file subterm.pid &&
	kill -TERM $sub &&
	{ wait $sub; echo $? >subterm.exit; } &&
	echo 143 >expect &&
	test_cmp expect subterm.exit &&
	test_grep -v "^1\.\." subterm.out &&
	test_grep -v "processes left" subterm.out &&
	test_must_fail test_proc_alive_ "$(cat subterm.pid)" &&
	no_namespace subterm
'

test_expect_success NETNS 'a script deaf to SIGTERM is killed after TEST_NETNS_STOP_SECONDS' '
	write_sub subdeaf <<-\EOF &&
	TEST_NETNS_STOP_SECONDS=1
	test_isolate_netns
	test_expect_success "deaf" "
		start_echo &&
		echo \$ECHO_PID >\"\$OUTER/subdeaf.pid\" &&
		sleep 20
	"
	test_done
	EOF
	rm -f subdeaf.pid &&
	{
		top_builddir=$SUB_BUILD "$TEST_SHELL_PATH" "$PWD/subdeaf.sh" \
			>subdeaf.out 2>subdeaf.err &
	} &&
	sub=$! &&
	test_atexit "test_stop_child_ $sub 12" &&
	echo "intutic-t-subdeaf-$sub" >subdeaf.ns &&
	test_wait_for_file subdeaf.pid &&
	kill -TERM $sub &&
	{ wait $sub; echo $? >subdeaf.exit; } &&
	echo 137 >expect &&
	test_cmp expect subdeaf.exit &&
	test_grep "still runs 1s after SIGTERM: SIGKILL" subdeaf.out &&
	test_grep "^# processes left in namespace intutic-t-subdeaf-" subdeaf.out &&
	test_must_fail test_proc_alive_ "$(cat subdeaf.pid)" &&
	no_namespace subdeaf
'

test_done
