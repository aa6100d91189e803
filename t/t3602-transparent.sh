#!/bin/sh
test_description='the transparent listener (--transparent-bind): connections nftables redirected from a sandbox, named by their SNI or Host, decided with the run'"'"'s policy, dialled at the proxy'"'"'s own resolution of the name; judged by what the origins (python and nginx) received'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"

# This script's namespace is the host: the proxy, the origins and a name
# server run here.  "sbx" is a second namespace the script makes, joined by
# a veth pair: the sandbox, whose clients ignore every proxy setting.  The
# host's table sends the sandbox's TCP 80 and 443 to the transparent
# listener and its DNS to the filter, and lets it reach nothing else of the
# host.  The origins' addresses (TEST-NET-2, and 2001:db8::/32) are on the
# host's loopback: only this namespace has them, and it has no uplink.  The
# proxy counts them internal: the rules allow them by CIDR as well, as an
# operator allows a host on a private network.
test_require_root "a second named namespace and nftables"
test_isolate_netns
test_require_proxy curl nft dig openssl node
SBX=intutic-t3602-sbx-$$
GW4=10.232.0.1 SBX4=10.232.0.2 GW6=fd00:232::1 SBX6=fd00:232::2
ALLOWED=198.51.100.10	# allowed.test
OTHER=198.51.100.11	# other.test: allowed by the rules, denied by the run
DENIED=198.51.100.12	# denied.test: on no allowlist
PLAIN=198.51.100.13	# no name: a raw TCP server an allow CIDR covers
MOVED=198.51.100.14	# rr.test, until its name server says otherwise
ALLOWED6=2001:db8:10::10

# in_sbx CMD...: CMD in the sandbox, with the resolv.conf that names the
# filter (its own mount namespace: nothing of the host's /etc changes).
in_sbx () {
	ip netns exec "$SBX" unshare -m sh -c \
		'mount --bind "$0" /etc/resolv.conf && exec "$@"' \
		"$TRASH_DIRECTORY/sbx-resolv.conf" "$@"
}

test_expect_success 'setup: the sandbox, the origins, the name server, the proxy' '
	peer_netns "$SBX" "$GW4/24 $GW6/64" "$SBX4/24 $SBX6/64" &&
	ip netns exec "$SBX" ip route add default via "$GW4" &&
	ip netns exec "$SBX" ip -6 route add default via "$GW6" &&
	for a in $ALLOWED $OTHER $DENIED $PLAIN $MOVED; do
		ip addr add "$a/32" dev lo || return 1
	done &&
	ip -6 addr add "$ALLOWED6/128" dev lo &&
	test_certs &&
	test_leaf_cert web allowed.test other.test denied.test rr.test \
		rr2.test &&
	WEB_CRT=$TRASH_DIRECTORY/certs/web.crt WEB_KEY=$TRASH_DIRECTORY/certs/web.key &&
	start_origin allowed --bind "$ALLOWED" --port 443 \
		--tls "$WEB_CRT" "$WEB_KEY" &&
	start_origin allowed6 --bind "$ALLOWED6" --port 443 \
		--tls "$WEB_CRT" "$WEB_KEY" &&
	start_origin other --bind "$OTHER" --port 443 \
		--tls "$WEB_CRT" "$WEB_KEY" &&
	start_origin denied --bind "$DENIED" --port 443 \
		--tls "$WEB_CRT" "$WEB_KEY" &&
	start_origin denied80 --bind "$DENIED" --port 80 &&
	start_origin moved --bind "$MOVED" --port 443 \
		--tls "$WEB_CRT" "$WEB_KEY" &&
	start_echo plain --bind "$PLAIN" --port 7000 &&
	start_nginx "$ALLOWED" 80 &&
	cat >zone <<-EOF &&
	allowed.test A $ALLOWED
	allowed.test AAAA $ALLOWED6
	other.test A $OTHER
	denied.test A $DENIED
	rr.test A $MOVED
	rr2.test A $ALLOWED
	EOF
	start_dns zone &&
	write_resolv_conf &&
	cat >rules.yaml <<-EOF &&
	version: 1
	ports: [443, 80]
	allow:
	  - allowed.test
	  - other.test
	  - "$ALLOWED/32"
	  - "$OTHER/32"
	  - "[$ALLOWED6]"
	  - "$PLAIN/32:7000"
	  - rr.test
	  - rr2.test
	  - "$MOVED/32"
	EOF
	start_proxy rules.yaml --bind "127.0.0.1,$GW4" \
		--transparent-bind "$GW4:0,[$GW6]:0" \
		--dns-bind "$GW4:0" --workers 1 &&
	python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
print(s[\"transparent\"][0].rsplit(\":\", 1)[1], s[\"transparent\"][1].rsplit(\":\", 1)[1], s[\"dns\"][0].rsplit(\":\", 1)[1])
" state/proxy.json >ports &&
	read TPORT TPORT6 FPORT <ports &&
	test -n "$FPORT" &&
	echo "nameserver $GW4" >sbx-resolv.conf &&
	cat >fw.nft <<-EOF &&
	table inet t3602
	delete table inet t3602
	table inet t3602 {
		chain prerouting {
			type nat hook prerouting priority dstnat;
			iifname "pn-host" ip daddr != $GW4 tcp dport { 80, 443, 7000 } redirect to :$TPORT
			iifname "pn-host" ip6 daddr != $GW6 tcp dport { 80, 443 } redirect to :$TPORT6
			iifname "pn-host" meta l4proto { tcp, udp } th dport 53 redirect to :$FPORT
		}
		chain input {
			type filter hook input priority filter; policy accept;
			iifname "pn-host" ct state established,related accept
			iifname "pn-host" ct status dnat accept
			iifname "pn-host" meta l4proto ipv6-icmp accept
			iifname "pn-host" tcp dport $PROXY_PORT accept
			iifname "pn-host" counter drop
		}
		chain forward {
			type filter hook forward priority filter; policy drop;
		}
	}
	EOF
	nft -f fw.nft &&
	run_sandbox run-sbx "$SBX4" \
		"{\"version\": 1, \"deny\": [\"other.test\"]}" &&
	run_sandbox run-sbx6 "$SBX6" \
		"{\"version\": 1, \"deny\": [\"other.test\"]}"
'

# sbx_curl ARGS...: curl in the sandbox with no proxy, the test CA trusted.
sbx_curl () {
	in_sbx env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY \
		-u ALL_PROXY -u all_proxy curl -sS --max-time 10 --noproxy "*" \
		--cacert "$CA_FILE" "$@"
}

# conn_expect COND...: after the mark, exactly one transparent connection,
# whose decision record matches COND (and the DNS filter's records aside).
conn_expect () {
	audit_since 1 &&
	audit_expect 1 event=decision proto=transparent "$@" &&
	audit_expect 1 event=close proto=transparent
}

# sbx_node SCRIPT: node in the sandbox, no proxy, the test CA trusted.
sbx_node () {
	in_sbx env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY \
		NODE_EXTRA_CA_CERTS="$CA_FILE" node -e "$1"
}

test_expect_success 'curl to an allowed name (HTTPS): through the listener, at the origin, audited with the run' '
	audit_mark &&
	server_mark allowed &&
	sbx_curl -4 -o body -w "%{http_code}\n" https://allowed.test/ >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	server_since allowed &&
	test_grep "GET / " allowed.new &&
	conn_expect run=run-sbx host=allowed.test port=443 sni=allowed.test \
		"addr=$ALLOWED" "original=$ALLOWED:443" mismatch=false \
		decision=allow reason=allowed
'

test_expect_success 'over IPv6: the original destination from ip6 conntrack, the same decision' '
	audit_mark &&
	server_mark allowed6 &&
	sbx_curl -6 -o body -w "%{http_code}\n" https://allowed.test/ >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	server_since allowed6 &&
	test_grep "GET / " allowed6.new &&
	conn_expect run=run-sbx6 host=allowed.test "original=[$ALLOWED6]:443" \
		mismatch=false decision=allow
'

test_expect_success 'plain HTTP to an allowed name: named by its Host, at nginx' '
	audit_mark &&
	: >"$NGINX_LOG" &&
	sbx_curl -4 -o body -w "%{http_code}\n" http://allowed.test/x >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	test_grep "GET /x HTTP/1.1 host=allowed.test" "$NGINX_LOG" &&
	conn_expect run=run-sbx host=allowed.test port=80 "original=$ALLOWED:80" \
		decision=allow
'

test_expect_success 'Node fetch and http.get, python socket + ssl, getent: an allowed name through the filter and the listener' '
	audit_mark &&
	server_mark allowed &&
	sbx_node "
fetch(\"https://allowed.test/?fetch\").then(async r => {
  console.log(r.status); process.exit(r.status === 200 ? 0 : 1);
}).catch(e => { console.error(String(e.cause || e)); process.exit(1); });
" >out &&
	echo 200 >expect &&
	test_cmp expect out &&
	sbx_node "
require(\"http\").get(\"http://allowed.test/get\", r => {
  console.log(r.statusCode); process.exit(r.statusCode === 200 ? 0 : 1);
}).on(\"error\", e => { console.error(String(e)); process.exit(1); });
" >out &&
	test_cmp expect out &&
	in_sbx python3 -c "
import socket, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[1])
with socket.create_connection((\"allowed.test\", 443), timeout=10) as s:
    with ctx.wrap_socket(s, server_hostname=\"allowed.test\") as t:
        t.sendall(b\"GET /?py HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n\")
        print(t.recv(64).split(b\"\r\n\")[0].decode())
" "$CA_FILE" >out &&
	echo "HTTP/1.1 200 OK" >expect &&
	test_cmp expect out &&
	in_sbx getent ahostsv4 allowed.test >out &&
	test_grep "^$ALLOWED " out &&
	server_since allowed &&
	test_grep "GET /[?]fetch " allowed.new &&
	test_grep "GET /[?]py " allowed.new &&
	test_grep "GET /get HTTP/1.1 host=allowed.test" "$NGINX_LOG" &&
	audit_since 3 &&
	test "$(audit_count since.jsonl event=decision proto=transparent run=run-sbx host=allowed.test decision=allow)" -ge 3 &&
	test "$(audit_count since.jsonl event=decision proto=dns run=run-sbx host=allowed.test decision=allow)" -ge 1
'

test_expect_success 'a denied name: refused by the filter and by the listener, nothing at its origin' '
	audit_mark &&
	: >"$DNS_QUERY_LOG" &&
	server_mark denied &&
	server_mark denied80 &&
	in_sbx dig +tries=1 +time=5 +nocookie secret-c2VjcmV0.denied.test A >dig.out &&
	test_grep "status: REFUSED" dig.out &&
	! grep -qi "secret" "$DNS_QUERY_LOG" &&
	test_must_fail sbx_curl -4 --resolve "denied.test:443:$DENIED" \
		https://denied.test/ 2>err &&
	test_must_fail sbx_node "
fetch(\"https://denied.test/\").then(r => process.exit(0)).catch(e => process.exit(1));
" &&
	sbx_curl -4 --resolve "denied.test:80:$DENIED" -o body \
		-w "%{http_code}\n" http://denied.test/ >code &&
	echo 403 >expect &&
	test_cmp expect code &&
	test_grep "blocked denied.test:80" body &&
	server_since denied &&
	test_must_be_empty denied.new &&
	server_since denied80 &&
	test_must_be_empty denied80.new &&
	audit_since 2 &&
	test "$(audit_count since.jsonl event=decision proto=transparent host=denied.test decision=deny reason=not-allowlisted)" -ge 2 &&
	audit_expect 1 proto=dns host=secret-c2VjcmV0.denied.test decision=deny
'

test_expect_success 'a name the operator allows but the run'"'"'s policy denies: refused, nothing at its origin' '
	audit_mark &&
	server_mark other &&
	test_must_fail sbx_curl -4 https://other.test/ &&
	server_since other &&
	test_must_be_empty other.new &&
	audit_since 0 &&
	test "$(audit_count since.jsonl event=decision proto=dns host=other.test decision=deny "rule=run run-sbx'"'"'s policy:1")" -ge 1 &&
	audit_mark &&
	test_must_fail sbx_curl -4 --resolve "other.test:443:$OTHER" \
		https://other.test/ &&
	server_since other &&
	test_must_be_empty other.new &&
	conn_expect run=run-sbx host=other.test decision=deny reason=denied \
		"rule=run run-sbx'"'"'s policy:1"
'

test_expect_success 'an SNI of an allowed name sent to another address: the proxy'"'"'s own resolution is dialled, the mismatch recorded' '
	audit_mark &&
	server_mark allowed &&
	server_mark other &&
	sbx_curl -4 --resolve "allowed.test:443:$OTHER" -o body \
		-w "%{http_code}\n" https://allowed.test/?mismatch >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	server_since allowed &&
	test_grep "GET /[?]mismatch " allowed.new &&
	server_since other &&
	test_must_be_empty other.new &&
	conn_expect host=allowed.test "addr=$ALLOWED" "original=$OTHER:443" \
		mismatch=true decision=allow &&
	test "$(proxy_metric intutic_transparent_mismatches_total)" -ge 1
'

test_expect_success 'an address the filter gave the run for the name, no longer among the name'"'"'s answers: dialled as the client chose it; one it never gave: not' '
	in_sbx dig +short +tries=1 +time=5 rr.test A >dig.out &&
	echo "$MOVED" >expect &&
	test_cmp expect dig.out &&
	sed "s/^rr.test A .*/rr.test A $ALLOWED/" zone >zone.new &&
	mv zone.new zone &&
	kill -HUP "$DNS_PID" &&
	wait_until 10 grep -q "zone reloaded" "$DNS_LOG" &&
	audit_mark &&
	server_mark moved &&
	server_mark allowed &&
	sbx_curl -4 -o /dev/null -w "%{http_code}\n" https://rr.test/?given >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	server_since moved &&
	test_grep "GET /[?]given " moved.new &&
	conn_expect run=run-sbx host=rr.test "addr=$MOVED" \
		"original=$MOVED:443" mismatch=false decision=allow &&
	audit_mark &&
	sbx_curl -4 --resolve "rr2.test:443:$MOVED" -o /dev/null \
		-w "%{http_code}\n" https://rr2.test/?never >code &&
	test_cmp expect code &&
	server_since allowed &&
	test_grep "GET /[?]never " allowed.new &&
	server_since moved &&
	test_grep -v "never" moved.new &&
	conn_expect run=run-sbx host=rr2.test "addr=$ALLOWED" \
		"original=$MOVED:443" mismatch=true decision=allow
'

# sbx_raw ADDR PORT BYTES: one connection from the sandbox to ADDR:PORT
# that sends BYTES (printf's escapes) and prints the first line it gets
# back, or "closed".
sbx_raw () {
	printf "$3" | in_sbx python3 -c "
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
s.sendall(sys.stdin.buffer.read())
d = s.recv(256)
print(d.split(b\"\r\n\")[0].decode() if d else \"closed\")
" "$1" "$2"
}

test_expect_success 'HTTP that names two destinations (a target that is not its Host, two Hosts, a Host at another port): refused, nothing at nginx' '
	audit_mark &&
	: >"$NGINX_LOG" &&
	sbx_raw "$ALLOWED" 80 "GET http://denied.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n" >out &&
	sbx_raw "$ALLOWED" 80 "GET / HTTP/1.1\r\nHost: allowed.test\r\nHost: denied.test\r\n\r\n" >>out &&
	sbx_raw "$ALLOWED" 80 "GET / HTTP/1.1\r\nHost: allowed.test:8080\r\n\r\n" >>out &&
	sbx_raw "$ALLOWED" 80 "GET / HTTP/1.1\r\nHost: denied.test\r\n\r\n" >>out &&
	test "$(grep -c "^HTTP/1.1 4[0-9][0-9] " out)" = 4 &&
	test_must_be_empty "$NGINX_LOG" &&
	audit_since 4 &&
	test "$(audit_count since.jsonl event=decision proto=transparent run=run-sbx decision=deny "original=$ALLOWED:80")" = 4 &&
	audit_expect 3 event=decision proto=transparent reason=host-mismatch &&
	sbx_raw "$ALLOWED" 80 "GET /fine HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n" >out &&
	echo "HTTP/1.1 200 OK" >expect &&
	test_cmp expect out &&
	test_grep "GET /fine HTTP/1.1 host=allowed.test" "$NGINX_LOG"
'

test_expect_success 'no SNI, no Host, another protocol: refused unless an allow CIDR covers the original address' '
	audit_mark &&
	server_mark denied &&
	server_mark denied80 &&
	{ printf "Q" | in_sbx openssl s_client -connect "$DENIED:443" \
		-noservername -quiet >out 2>err; true; } &&
	test_grep "alert access denied" err &&
	printf "GET / HTTP/1.0\r\n\r\n" | in_sbx python3 -c "
import socket, sys
s = socket.create_connection((sys.argv[1], 80), timeout=10)
s.sendall(sys.stdin.buffer.read())
print(s.recv(64).split(b\"\r\n\")[0].decode())
" "$DENIED" >out &&
	echo "HTTP/1.1 403 Forbidden" >expect &&
	test_cmp expect out &&
	server_since denied &&
	test_must_be_empty denied.new &&
	server_since denied80 &&
	test_must_be_empty denied80.new &&
	audit_since 2 &&
	audit_expect 1 event=decision proto=transparent sni= \
		"original=$DENIED:443" decision=deny &&
	audit_expect 1 event=decision proto=transparent \
		"original=$DENIED:80" decision=deny &&
	audit_mark &&
	printf "hello\n" | in_sbx python3 -c "
import socket, sys
s = socket.create_connection((sys.argv[1], 7000), timeout=10)
s.sendall(sys.stdin.buffer.read())
s.shutdown(socket.SHUT_WR)
print(s.recv(64).decode().strip())
" "$PLAIN" >out &&
	echo hello >expect &&
	test_cmp expect out &&
	conn_expect "host=$PLAIN" port=7000 "original=$PLAIN:7000" decision=allow
'

test_expect_success 'a connection to the listener itself (nothing redirected it): the port is the protocol'"'"'s, no original address' '
	audit_mark &&
	server_mark allowed &&
	curl -sS --max-time 10 --noproxy "*" --cacert "$CA_FILE" \
		--connect-to "allowed.test:443:$GW4:$TPORT" -o body \
		-w "%{http_code}\n" https://allowed.test/?direct >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	server_since allowed &&
	test_grep "GET /[?]direct " allowed.new &&
	conn_expect run= host=allowed.test port=443 original= decision=allow
'

test_expect_success 'an open transparent tunnel is closed when the run'"'"'s policy comes to deny its name' '
	audit_mark || return 1
	# alone, not after &&: the mark is this shell'"'"'s, $! the client
	in_sbx python3 -c "
import socket, ssl, sys, time
ctx = ssl.create_default_context(cafile=sys.argv[1])
s = socket.create_connection((\"allowed.test\", 443), timeout=10)
t = ctx.wrap_socket(s, server_hostname=\"allowed.test\")
open(sys.argv[2], \"w\").write(\"open\n\")
try:
    while t.recv(1):
        pass
    print(\"closed\")
except OSError as e:
    print(\"closed\")
" "$CA_FILE" tunnel.state >tunnel.out &
	pid=$! &&
	test_wait_for_file tunnel.state 10 &&
	control_curl /v1/runs/run-sbx -o run.json &&
	python3 -c "
import json, sys
g = json.load(open(sys.argv[1]))[\"generation\"]
print(json.dumps({\"generation\": g, \"policy\": json.dumps(
    {\"version\": 1, \"deny\": [\"allowed.test\"]})}))
" run.json >pol.json &&
	control_curl /v1/runs/run-sbx/policy -X PUT -o body \
		-w "%{http_code}\n" --data-binary @pol.json >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	wait "$pid" &&
	echo closed >expect &&
	test_cmp expect tunnel.out &&
	audit_since 1 &&
	audit_expect 1 event=revoke proto=transparent host=allowed.test \
		run=run-sbx
'

test_done
