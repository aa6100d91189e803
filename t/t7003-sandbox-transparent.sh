#!/bin/sh
test_description='intutic exec --sandbox with real podman, clients that ignore the proxy settings: the container'"'"'s table sends its TCP 80 and 443 to the transparent listener and its DNS to the filter, drops QUIC; judged by what the origins (python and nginx) and the name server received'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
. "$top_srcdir/t/lib-sandbox.sh"
sandbox_isolate_netns
test_require_proxy curl

test_exec_env

# The origins' addresses (TEST-NET-2) are on the namespace's loopback: the
# containers reach them through the bridge's gateway, as they would a host
# on the internet, and the proxy counts them internal: the rules allow
# them by CIDR too, as an operator allows a host on a private network.
ALLOWED=198.51.100.10	# allowed.test
OTHER=198.51.100.11	# other.test: on no allowlist
QUIC_PORT=443		# UDP: what a QUIC client would send

# in_box SCRIPT: sh -c SCRIPT in a sandbox, with no proxy in its
# environment (as a client that ignores it), the test's CA in
# $TRASH_DIRECTORY/certs (the same path inside).
in_box () {
	sandbox_exec --sandbox-mount "$TRASH_DIRECTORY/certs:ro" -- \
		sh -c "unset HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy all_proxy; $1"
}

# start_quic_sink: a UDP server on the far host's port 443 (what a QUIC
# client would send to): each datagram it gets is a line of quic.log.
start_quic_sink () {
	rm -f quic.ready &&
	: >quic.log || return 1
	# alone, not after &&: $! is then the server, not a subshell
	python3 -c "
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
s.settimeout(1.0)
open(sys.argv[4], \"w\").write(\"ready\\n\")
end = time.monotonic() + 900
while time.monotonic() < end:
    try:
        d, a = s.recvfrom(2048)
    except socket.timeout:
        continue
    with open(sys.argv[3], \"a\") as f:
        f.write(\"%s %d\\n\" % (a[0], len(d)))
" "$SANDBOX_FAR_ADDR" "$QUIC_PORT" quic.log quic.ready </dev/null >/dev/null 2>&1 &
	test_quic_pid_=$!
	test_atexit "test_stop_child_ $test_quic_pid_" &&
	test_wait_for_file quic.ready 10
}

test_expect_success 'setup: the image, the origins, the name server, the proxy with its listeners on the bridge' '
	sandbox_setup &&
	for a in $ALLOWED $OTHER; do
		ip addr add "$a/32" dev lo || return 1
	done &&
	test_certs &&
	test_leaf_cert web allowed.test other.test &&
	start_origin allowed --bind "$ALLOWED" --port 443 \
		--tls certs/web.crt certs/web.key &&
	start_origin other --bind "$OTHER" --port 443 \
		--tls certs/web.crt certs/web.key &&
	start_nginx "$ALLOWED" 80 &&
	start_quic_sink &&
	cat >zone <<-EOF &&
	allowed.test A $ALLOWED
	other.test A $OTHER
	EOF
	start_dns zone &&
	write_resolv_conf &&
	cat >rules.yaml <<-EOF &&
	version: 1
	ports: [443, 80]
	allow:
	  - allowed.test
	  - "$ALLOWED/32"
	EOF
	start_sandbox_proxy rules.yaml --workers 1
'

test_expect_success 'curl with no proxy, HTTPS and HTTP to an allowed name: through the filter and the listener, at the origins, audited with the run' '
	audit_mark &&
	server_mark allowed &&
	: >"$NGINX_LOG" &&
	in_box "curl -sS --max-time 10 --cacert $TRASH_DIRECTORY/certs/ca.crt -o /dev/null \
		-w \"%{http_code}\n\" https://allowed.test/?curl &&
		curl -sS --max-time 10 -o /dev/null -w \"%{http_code}\n\" \
		http://allowed.test/curl80 && echo run=\$INTUTIC_RUN" &&
	test "$rc" = 0 &&
	printf "200\n200\n" >expect &&
	grep -v "^run=" out >got &&
	test_cmp expect got &&
	run=$(sed -n "s/^run=//p" out) &&
	server_since allowed &&
	test_grep "GET /[?]curl " allowed.new &&
	test_grep "GET /curl80 HTTP/1.1 host=allowed.test" "$NGINX_LOG" &&
	audit_since 2 &&
	audit_expect 1 event=decision proto=transparent run="$run" \
		host=allowed.test port=443 sni=allowed.test "addr=$ALLOWED" \
		decision=allow &&
	audit_expect 1 event=decision proto=transparent run="$run" \
		host=allowed.test port=80 decision=allow &&
	test "$(audit_count since.jsonl event=decision proto=dns run="$run" host=allowed.test decision=allow)" -ge 1
'

test_expect_success 'Node fetch and http.get, python socket + ssl, getent, dig: an allowed name through the filter and the listener' '
	server_mark allowed &&
	: >"$NGINX_LOG" &&
	in_box "
		NODE_EXTRA_CA_CERTS=$TRASH_DIRECTORY/certs/ca.crt node -e \"
fetch(\\\"https://allowed.test/?fetch\\\").then(r => { console.log(\\\"fetch \\\" + r.status); process.exit(0); })
  .catch(e => { console.log(\\\"fetch failed: \\\" + (e.cause || e)); process.exit(1); });\" &&
		node -e \"
require(\\\"http\\\").get(\\\"http://allowed.test/get\\\", r => { console.log(\\\"get \\\" + r.statusCode); process.exit(0); })
  .on(\\\"error\\\", e => { console.log(\\\"get failed: \\\" + e); process.exit(1); });\" &&
		python3 -c \"
import socket, ssl
ctx = ssl.create_default_context(cafile=\\\"$TRASH_DIRECTORY/certs/ca.crt\\\")
with socket.create_connection((\\\"allowed.test\\\", 443), timeout=10) as s:
    with ctx.wrap_socket(s, server_hostname=\\\"allowed.test\\\") as t:
        t.sendall(b\\\"GET /?py HTTP/1.1\\\\r\\\\nHost: allowed.test\\\\r\\\\nConnection: close\\\\r\\\\n\\\\r\\\\n\\\")
        print(\\\"py \\\" + t.recv(64).split(b\\\"\\\\r\\\\n\\\")[0].decode())
\" &&
		getent hosts allowed.test &&
		dig +short +tries=1 +time=5 allowed.test A" &&
	test "$rc" = 0 &&
	test_grep "^fetch 200\$" out &&
	test_grep "^get 200\$" out &&
	test_grep "^py HTTP/1.1 200 OK\$" out &&
	test_grep "^$ALLOWED  *allowed.test\$" out &&
	test_grep "^$ALLOWED\$" out &&
	server_since allowed &&
	test_grep "GET /[?]fetch " allowed.new &&
	test_grep "GET /[?]py " allowed.new &&
	test_grep "GET /get HTTP/1.1 host=allowed.test" "$NGINX_LOG"
'

test_expect_success 'a name the rules do not allow: REFUSED by the filter (never asked upstream, also when asked of another resolver), refused by the listener, nothing at its origin' '
	audit_mark &&
	server_mark other &&
	: >"$DNS_QUERY_LOG" &&
	in_box "
		dig +tries=1 +time=5 secret-c2VjcmV0.other.test A | grep status: ;
		dig +tries=1 +time=5 @$SANDBOX_FAR_ADDR leak-bGVhaw.other.test A | grep status: ;
		curl -sS --max-time 10 --cacert $TRASH_DIRECTORY/certs/ca.crt \
			--resolve other.test:443:$OTHER https://other.test/ ||
			echo curl-refused ;
		exit 0" &&
	{ test "$rc" = 0 && test "$(grep -c "status: REFUSED" out)" = 2 ||
		{ echo "exec exited $rc; what it wrote:" >&2; cat out err >&2; false; }; } &&
	test_grep "^curl-refused\$" out &&
	{ ! grep -i -e secret -e leak "$DNS_QUERY_LOG" >&2 ||
		{ echo "asked of the upstream name server (above)" >&2; false; }; } &&
	server_since other &&
	test_must_be_empty other.new &&
	audit_since 1 &&
	audit_expect 1 event=decision proto=transparent host=other.test \
		decision=deny reason=not-allowlisted &&
	audit_expect 1 event=decision proto=dns host=leak-bGVhaw.other.test \
		decision=deny
'

test_expect_success 'an allowed SNI sent to another address: the proxy dials its own resolution of the name' '
	audit_mark &&
	server_mark allowed &&
	server_mark other &&
	in_box "curl -sS --max-time 10 --cacert $TRASH_DIRECTORY/certs/ca.crt -o /dev/null \
		-w \"%{http_code}\n\" --resolve allowed.test:443:$OTHER \
		https://allowed.test/?moved" &&
	test "$rc" = 0 &&
	echo 200 >expect &&
	test_cmp expect out &&
	server_since allowed &&
	test_grep "GET /[?]moved " allowed.new &&
	server_since other &&
	test_must_be_empty other.new &&
	audit_since 1 &&
	audit_expect 1 event=decision proto=transparent host=allowed.test \
		"addr=$ALLOWED" decision=allow
'

test_expect_success 'no SNI, no name: refused, nothing at the origin; QUIC (UDP 443) never leaves the container' '
	audit_mark &&
	server_mark allowed &&
	: >quic.log &&
	in_box "
		python3 -c \"
import socket, ssl
ctx = ssl.create_default_context(cafile=\\\"$TRASH_DIRECTORY/certs/ca.crt\\\")
ctx.check_hostname = False
try:
    with socket.create_connection((\\\"$ALLOWED\\\", 443), timeout=10) as s:
        ctx.wrap_socket(s, server_hostname=None)
    print(\\\"nosni-connected\\\")
except (OSError, ssl.SSLError) as e:
    print(\\\"nosni-refused\\\")
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(3):
    try:
        s.sendto(b\\\"\\\\xc0quic-initial\\\", (\\\"$SANDBOX_FAR_ADDR\\\", $QUIC_PORT))
    except OSError:
        pass
print(\\\"quic-sent\\\")
\"" &&
	test "$rc" = 0 &&
	test_grep "^nosni-refused\$" out &&
	test_grep "^quic-sent\$" out &&
	sleep 1 &&
	test_must_be_empty quic.log &&
	server_since allowed &&
	test_must_be_empty allowed.new &&
	audit_since 1 &&
	audit_expect 1 event=decision proto=transparent host= original= \
		decision=deny reason=sni-missing
'

test_done
