#!/bin/sh
test_description='HTTP: absolute-form requests forwarded by the proxy, with real clients'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl

# The records since a mark: audit_mark, audit_since, audit_expect
# (lib-proxy.sh); the request lines an origin logged since its mark:
# server_mark NAME, server_since NAME (NAME.new).

test_expect_success 'setup: origins, names, rules and the proxy' '
	start_origin origin &&
	start_origin a.test &&
	start_origin b.test &&
	write_hosts hosts origin.test=127.0.0.1 a.test=127.0.0.1 \
		b.test=127.0.0.1 ws.test=127.0.0.1 denied.test=127.0.0.1 \
		other.test=127.0.0.1 &&
	fill_rules proxy-http/forward.yaml rules.yaml \
		PORTS="$ORIGIN_PORT, $A_TEST_PORT, $B_TEST_PORT" &&
	"$INTUTIC" rules check rules.yaml &&
	start_proxy rules.yaml &&
	O=http://origin.test:$ORIGIN_PORT &&
	A=http://a.test:$A_TEST_PORT &&
	B=http://b.test:$B_TEST_PORT
'

# --- a plain GET ----------------------------------------------------------------

test_expect_success 'GET in absolute form: the origin answers, in origin form' '
	audit_mark && server_mark origin &&
	proxy_curl -D head -o out -w "%{http_code}\n" "$O/" >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	echo "hello from origin.test:$ORIGIN_PORT" >expect &&
	test_cmp expect out &&
	test_grep "^X-Origin: origin" head &&
	server_since origin &&
	echo "origin: GET / HTTP/1.1 host=origin.test:$ORIGIN_PORT" >expect &&
	test_cmp expect origin.new
'

test_expect_success 'the GET: one decision record (allowed, its rule) and one close record' '
	audit_since 1 &&
	test_line_count = 2 since.jsonl &&
	audit_expect 1 event=decision proto=http host=origin.test \
		port=$ORIGIN_PORT decision=allow reason=allowed \
		"rule~rules\.yaml:9$" addr=127.0.0.1 &&
	audit_expect 1 event=close proto=http host=origin.test status=200 \
		"bytes_up>=60" "bytes_down>=$(wc -c <out)" "bytes_down<1000" \
		"duration_ms>=0" &&
	audit_records since.jsonl event=decision >d &&
	audit_records since.jsonl event=close >c &&
	test "$(sed "s/.*\"id\": *\([0-9]*\).*/\1/" d)" = \
		"$(sed "s/.*\"id\": *\([0-9]*\).*/\1/" c)"
'

# --- keep-alive: every request decided on its own ---------------------------------

test_expect_success 'keep-alive: a.test, b.test, a.test on one client connection' '
	audit_mark && server_mark a.test && server_mark b.test &&
	proxy_curl -w "%{http_code} %{num_connects}\n" \
		-o a1 "$A/" -o b1 "$B/" -o a2 "$A/bytes/10" >codes &&
	printf "200 1\n200 0\n200 0\n" >expect &&
	test_cmp expect codes &&
	echo "hello from a.test:$A_TEST_PORT" >expect &&
	test_cmp expect a1 &&
	echo "hello from b.test:$B_TEST_PORT" >expect &&
	test_cmp expect b1 &&
	test "$(wc -c <a2)" = 10 &&
	server_since a.test && server_since b.test &&
	test_line_count = 2 a.test.new &&
	test_line_count = 1 b.test.new
'

test_expect_success 'keep-alive: three decision records and one close, for one connection' '
	audit_since 1 &&
	audit_expect 3 event=decision decision=allow reason=allowed &&
	audit_expect 2 event=decision host=a.test port=$A_TEST_PORT &&
	audit_expect 1 event=decision host=b.test port=$B_TEST_PORT &&
	audit_expect 1 event=close &&
	audit_records since.jsonl event=decision >d &&
	head -n 1 d | grep -q "\"host\": *\"a.test\"" &&
	sed -n 2p d | grep -q "\"host\": *\"b.test\"" &&
	sed "s/.*\"id\": *\([0-9]*\).*/\1/" since.jsonl | sort -u >ids &&
	test_line_count = 1 ids
'

test_expect_success 'a denied host between two allowed ones: 403 with X-Intutic-Error, the others served' '
	audit_mark &&
	proxy_curl -D head -w "%{http_code}\n" \
		-o r1 "$A/" -o r2 "http://denied.test:$A_TEST_PORT/" -o r3 "$B/" >codes &&
	printf "200\n403\n200\n" >expect &&
	test_cmp expect codes &&
	test_grep "^X-Intutic-Error: denied" head &&
	test_grep "policy decision of this workspace" r2 &&
	test_grep "rule rules\.yaml:15" r2 &&
	test_grep -i "retrying without the proxy will not work" r2 &&
	echo "hello from b.test:$B_TEST_PORT" >expect &&
	test_cmp expect r3 &&
	test_grep -v "host=denied" "$A_TEST_LOG"
'

test_expect_success 'the denial is one deny record, with its rule and status 403' '
	audit_since 2 &&
	audit_expect 3 event=decision &&
	audit_expect 1 event=decision host=denied.test decision=deny \
		reason=denied "rule~rules\.yaml:15$" &&
	audit_expect 1 event=close host=denied.test decision=deny \
		reason=denied status=403 &&
	audit_expect 2 event=decision decision=allow
'

# --- bodies -------------------------------------------------------------------------

test_expect_success 'chunked download: the same bytes, the same chunks, as straight from the origin' '
	audit_mark &&
	proxy_curl -D head -o via "$O/chunked/100000" &&
	curl -sS --noproxy "*" --max-time 10 -o direct \
		"http://127.0.0.1:$ORIGIN_PORT/chunked/100000" &&
	test "$(wc -c <via)" = 100000 &&
	test_cmp direct via &&
	test_grep "^Transfer-Encoding: chunked" head &&
	proxy_curl --raw -o via.raw "$O/chunked/100000" &&
	curl -sS --noproxy "*" --max-time 10 --raw -o direct.raw \
		"http://127.0.0.1:$ORIGIN_PORT/chunked/100000" &&
	test_cmp direct.raw via.raw &&
	audit_since 2 &&
	audit_expect 2 event=close status=200 "bytes_down>=$(wc -c <via.raw)"
'

test_expect_success 'chunked upload: POST /echo gets every byte back' '
	head -c 70000 /dev/urandom >body &&
	audit_mark &&
	proxy_curl -D head -o back -H "Transfer-Encoding: chunked" \
		--data-binary @body "$O/echo" &&
	test_cmp body back &&
	test_grep "^X-Body-Framing: chunked" head &&
	audit_since 1 &&
	audit_expect 1 event=close status=200 "bytes_up>70000" "bytes_down>70000"
'

test_expect_success 'Content-Length upload: POST /echo gets every byte back' '
	head -c 70000 /dev/urandom >body &&
	audit_mark &&
	proxy_curl -D head -o back --data-binary @body "$O/echo" &&
	test_cmp body back &&
	test_grep "^X-Body-Framing: length" head &&
	audit_since 1 &&
	audit_expect 1 event=close status=200 "bytes_up>70000" "bytes_down>70000"
'

test_expect_success 'close-delimited download: every byte, then the proxy closes too' '
	proxy_curl -v -D head -o via "$O/close/100000" 2>err &&
	curl -sS --noproxy "*" --max-time 10 -o direct \
		"http://127.0.0.1:$ORIGIN_PORT/bytes/100000" &&
	test_cmp direct via &&
	test_grep -v -i "^Content-Length" head &&
	test_grep -i "^Connection: close" head &&
	test_grep -v "left intact" err &&
	proxy_curl -D head -o via "$O/close/5000?v=1.0" &&
	test "$(wc -c <via)" = 5000 &&
	test_grep "^HTTP/1.1 200" head
'

test_expect_success 'HEAD: the headers GET would get, no body, and the connection is reused' '
	proxy_curl -I -o head -w "%{num_connects}\n" "$O/bytes/1000" \
		--next --proxy "$PROXY_URL" --max-time 10 -o out \
		-w "%{num_connects}\n" "$O/" >nc &&
	printf "1\n0\n" >expect &&
	test_cmp expect nc &&
	test_grep "^HTTP/1.1 200" head &&
	test_grep "^Content-Length: 1000" head &&
	echo "hello from origin.test:$ORIGIN_PORT" >expect &&
	test_cmp expect out
'

for code in 204 304; do
	test_expect_success "$code: no body, and the connection serves the next request" '
		audit_mark &&
		proxy_curl -D head -o body -w "%{http_code} %{num_connects}\n" \
			"$O/status/'$code'" \
			--next --proxy "$PROXY_URL" --max-time 10 -o out \
			-w "%{http_code} %{num_connects}\n" "$O/" >codes &&
		printf "'$code' 1\n200 0\n" >expect &&
		test_cmp expect codes &&
		test_must_be_empty body &&
		echo "hello from origin.test:$ORIGIN_PORT" >expect &&
		test_cmp expect out &&
		audit_since 1 &&
		audit_expect 2 event=decision &&
		audit_expect 1 event=close status=200
	'
done

test_expect_success 'pipelined: HEAD, GET and a denied GET in one write, answered in order' '
	printf "HEAD %s/bytes/1000 HTTP/1.1\r\nHost: origin.test:%s\r\n\r\nGET %s/request HTTP/1.1\r\nHost: origin.test:%s\r\n\r\nGET http://denied.test:%s/ HTTP/1.1\r\nHost: denied.test:%s\r\n\r\n" \
		"$O" "$ORIGIN_PORT" "$O" "$ORIGIN_PORT" "$ORIGIN_PORT" "$ORIGIN_PORT" >req &&
	audit_mark &&
	proxy_send --send-file req >out &&
	tr -d "\r" <out >resp &&
	grep "^HTTP/1.1 " resp >status &&
	cat >expect <<-\EOF &&
	HTTP/1.1 200 OK
	HTTP/1.1 200 OK
	HTTP/1.1 403 Forbidden
	EOF
	test_cmp expect status &&
	test_grep "^Content-Length: 1000\$" resp &&
	test_grep "^GET /request HTTP/1.1\$" resp &&
	test_grep "^X-Intutic-Error: denied\$" resp &&
	test "$(wc -c <resp)" -lt 1500 &&
	audit_since 1 &&
	audit_expect 3 event=decision &&
	audit_expect 1 event=close status=403
'

test_expect_success 'HTTP/1.0 without a Host: forwarded as 1.0, with the Host of the URI' '
	printf "GET %s/request HTTP/1.0\r\n\r\n" "$O" >req &&
	proxy_send --send-file req >out &&
	tr -d "\r" <out >resp &&
	test_grep "^HTTP/1.1 200 OK\$" resp &&
	test_grep "^GET /request HTTP/1.0\$" resp &&
	test_grep "^Host: origin.test:$ORIGIN_PORT\$" resp
'

test_expect_success 'Expect: 100-continue with 100 KiB: the 100 reaches curl, the body is echoed' '
	head -c 102400 /dev/urandom >body &&
	proxy_curl -v -o back -H "Expect: 100-continue" --data-binary @body \
		-w "%{http_code}\n" "$O/echo" >code 2>err &&
	echo 200 >expect &&
	test_cmp expect code &&
	test_cmp body back &&
	test_grep "^< HTTP/1.1 100 Continue" err &&
	test_grep "^< X-Expect: 100-continue" err
'

test_expect_success 'WebSocket upgrade in absolute form: 101, a message echoed, a clean close' '
	audit_mark &&
	client_py ws --to "origin.test:$ORIGIN_PORT" \
		--proxy "127.0.0.1:$PROXY_PORT" --forward --message "through the proxy" \
		>out 2>err &&
	cat >expect <<-\EOF &&
	HTTP/1.1 101 Switching Protocols
	echo: through the proxy
	close: 1000
	EOF
	test_cmp expect out &&
	audit_since 1 &&
	audit_expect 1 event=decision decision=allow host=origin.test &&
	audit_expect 1 event=close status=101 "bytes_up>0" "bytes_down>0"
'

test_expect_success 'an Upgrade in http:// absolute form: 101, then raw bytes both ways' '
	printf "GET %s/ws?mode=raw HTTP/1.1\\r\\nHost: origin.test:%s\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\nSec-WebSocket-Version: 13\\r\\n\\r\\nraw bytes" \
		"$O" "$ORIGIN_PORT" >req &&
	audit_mark &&
	proxy_send --send-file req \
		--half-close >out &&
	tr -d "\\r" <out >resp &&
	test_grep "^HTTP/1.1 101 " resp &&
	test_grep "^Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK\\+xOo=\$" resp &&
	test_grep -i "^Upgrade: websocket" resp &&
	tail -c 9 out >tail &&
	printf "raw bytes" >expect &&
	test_cmp expect tail &&
	audit_since 1 &&
	audit_expect 1 event=decision decision=allow host=origin.test &&
	audit_expect 1 event=close status=101 "bytes_up>=9" "bytes_down>=9"
'

# --- headers ---------------------------------------------------------------------------

test_expect_success 'hop-by-hop and Proxy-* headers are removed; Host and the others arrive' '
	# the credentials of a registered run (others are answered 407)
	printf "{\"run\":\"run-hop\",\"token\":\"%s\",\"command\":\"t2001\"}" \
		5ec2e7000000000000000000000000042 >reg &&
	control_curl /v1/runs -o /dev/null --data-binary @reg &&
	cred=$(printf "run-hop:5ec2e7000000000000000000000000042" | base64 -w0) &&
	proxy_curl -o out \
		-H "Proxy-Authorization: Basic $cred" \
		-H "Proxy-Connection: keep-alive" \
		-H "Keep-Alive: timeout=5" \
		-H "Connection: keep-alive, X-Hop" \
		-H "X-Hop: private to this hop" \
		-H "TE: trailers" \
		-H "X-Ordinary: kept" \
		"$O/headers" &&
	test_grep "^Host: origin.test:$ORIGIN_PORT\$" out &&
	test_grep "^X-Ordinary: kept\$" out &&
	test_grep -i -v "^Proxy-" out &&
	test_grep -i -v "^Keep-Alive:" out &&
	test_grep -i -v "^X-Hop:" out &&
	test_grep -i -v "^TE:" out &&
	test_grep -i -v "^Connection:.*X-Hop" out &&
	test_grep -v "$cred" "$AUDIT_FILE" &&
	test_grep -v "5ec2e7000000000000000000000000042" "$AUDIT_FILE" &&
	test_grep -v "5ec2e7000000000000000000000000042" "$PROXY_LOG"
'

test_expect_success 'a Host header that names another host: 400 host-mismatch, the origin never asked' '
	audit_mark && server_mark origin &&
	proxy_curl -D head -o out -w "%{http_code}\n" -H "Host: other.test" "$O/" >code &&
	echo 400 >expect &&
	test_cmp expect code &&
	test_grep "^X-Intutic-Error: host-mismatch" head &&
	proxy_curl -D head -o out -w "%{http_code}\n" \
		-H "Host: origin.test:$A_TEST_PORT" "$O/" >code &&
	test_cmp expect code &&
	server_since origin &&
	test_must_be_empty origin.new &&
	audit_since 2 &&
	audit_expect 2 event=decision reason=host-mismatch &&
	audit_expect 2 event=close reason=host-mismatch status=400
'

# --- the origin side ---------------------------------------------------------------------

# Two requests for one origin on one client connection, holding it open;
# after each, the proxy's connections to the origin port as the kernel's
# socket table has them (tcpinfo.py: established, destination port the
# origin's): "1 LOCALPORT".
cat >reuse.py <<\EOF
import socket, sys
from tcpinfo import established
proxy, host, port = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", proxy), timeout=10)
buf = b""
def response():
    global buf
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            sys.exit("proxy closed the connection")
        buf += d
    head, _, buf = buf.partition(b"\r\n\r\n")
    n = [int(l.split(b":")[1]) for l in head.split(b"\r\n")
         if l.lower().startswith(b"content-length:")][0]
    while len(buf) < n:
        d = s.recv(65536)
        if not d:
            sys.exit("proxy closed the connection in a body")
        buf += d
    buf = buf[n:]
    return head.split(b"\r\n")[0].decode()
for path in ("/", "/bytes/100"):
    s.sendall(("GET http://%s:%d%s HTTP/1.1\r\nHost: %s:%d\r\n\r\n"
               % (host, port, path, host, port)).encode())
    print(response())
    ports = [str(c["sport"]) for c in established(port)]
    print(len(ports), " ".join(ports))
s.close()
EOF

test_expect_success 'the origin connection is reused for the same host and port' '
	PYTHONPATH=$top_srcdir/t/helpers \
		python3 reuse.py "$PROXY_PORT" origin.test "$ORIGIN_PORT" >out &&
	sed -n 1p out >first && sed -n 3p out >second &&
	echo "HTTP/1.1 200 OK" >expect &&
	test_cmp expect first &&
	test_cmp expect second &&
	sed -n 2p out >conn1 && sed -n 4p out >conn2 &&
	test_grep "^1 [0-9]+\$" conn1 &&
	test_cmp conn1 conn2
'

test_expect_success 'a request on a reused origin connection names the address too' '
	audit_records event=decision host=origin.test >d &&
	tail -n 2 d >last2 &&
	audit_count last2 event=decision >n &&
	echo 2 >expect &&
	test_cmp expect n &&
	audit_count last2 addr=127.0.0.1 >n &&
	test_cmp expect n
'

# --- the proxy's own pages ------------------------------------------------------------------

test_expect_success '/healthz says ok, /metrics counts the decisions' '
	curl -sS --noproxy "*" --max-time 10 -o out "$PROXY_URL/healthz" &&
	echo ok >expect &&
	test_cmp expect out &&
	curl -sS --noproxy "*" --max-time 10 -D head -o metrics "$PROXY_URL/metrics" &&
	test_grep "^intutic_decisions_total\{decision=\"allow\"\} [0-9]+\$" metrics &&
	allow=$(proxy_metric intutic_decisions_total decision=allow) &&
	deny=$(proxy_metric intutic_decisions_total decision=deny) &&
	test "$allow" = "$(audit_count event=decision decision=allow)" &&
	test "$deny" = "$(audit_count event=decision decision=deny)" &&
	test "$deny" -ge 3
'

test_done
