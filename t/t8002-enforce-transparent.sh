#!/bin/sh
test_description='enforce on --transparent: the TCP 80 and 443 of every user but the proxy'"'"'s goes to the transparent listener, their DNS to the filter; judged by what the outside origins and name server received'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"

# This script's namespace is "host": the proxy runs there as PROXY_UID,
# the test's clients as USER_UID, and neither honours a proxy setting.
# "outside" is a second namespace the script makes, joined by a veth pair:
# OUT4 serves web.test (allowed), OUT4B another origin no name or address
# of the rules leads to, and a name server that must never be asked.
test_require_root "a second named namespace, setpriv to other users, nftables"
test_isolate_netns
test_require_proxy curl nft setpriv dig
PY=/usr/bin/python3
PROXY_UID=65534		# nobody
USER_UID=4242		# no such user: a plain uid, not the proxy's
HOST4=10.201.0.1 OUT4=10.201.0.2 OUT4B=10.201.0.3
OUTSIDE=intutic-t8002-outside-$$

# as UID CMD...: CMD with that uid and gid, no groups.
as () {
	u=$1
	shift
	setpriv --reuid="$u" --regid="$u" --clear-groups -- "$@"
}

# start_proxy_as UID: intutic-proxy as UID on HOST4 (port 0), with its
# transparent listener and its DNS filter on loopback (ports 0).
start_proxy_as () {
	# setpriv itself, not the function as: $! must be the proxy
	setpriv --reuid="$1" --regid="$1" --clear-groups -- \
		"$top_builddir/proxy/intutic-proxy" --rules "$PWD/rules.yaml" \
		--bind "$HOST4" --port 0 --state-dir "$PWD/pstate" \
		--transparent-bind 127.0.0.1:0 --dns-bind 127.0.0.1:0 \
		--audit "$PWD/audit.jsonl" --workers 1 \
		--resolv-conf "$PWD/resolv.conf" --hosts "$PWD/hosts" \
		</dev/null >>proxy.log 2>&1 &
	test_atexit "test_stop_child_ $!"
}

# as_client UID CMD...: CMD as UID in a mount namespace of its own whose
# /etc/resolv.conf names the outside's name server (so getaddrinfo(3) asks
# it, and the table sends the query to the filter); nothing of the host's
# /etc changes.
as_client () {
	u=$1
	shift
	unshare -m sh -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"' \
		"$PWD/client-resolv.conf" setpriv --reuid="$u" --regid="$u" \
		--clear-groups -- env -u http_proxy -u https_proxy \
		-u HTTP_PROXY -u HTTPS_PROXY "$@"
}

# user_curl ARGS...: curl as the test user, no proxy, the test CA trusted.
user_curl () {
	as "$USER_UID" env -u http_proxy -u https_proxy -u HTTP_PROXY \
		-u HTTPS_PROXY curl -sS --max-time 10 --noproxy "*" \
		--cacert "$CA_FILE" "$@"
}

test_expect_success 'setup: outside, veth, origins, a name server, the proxy as its own user with its transparent listener and DNS filter' '
	peer_netns "$OUTSIDE" "$HOST4/24" "$OUT4/24 $OUT4B/24" &&
	test_certs &&
	chmod -R a+rX "$TRASH_DIRECTORY/certs" &&
	test_leaf_cert web web.test other.test &&
	peer_start web origin.py --bind "$OUT4" --port 443 --name web \
		--tls certs/web.crt certs/web.key &&
	peer_start web8443 origin.py --bind "$OUT4" --port 8443 --name web8443 \
		--tls certs/web.crt certs/web.key &&
	peer_start web80 origin.py --bind "$OUT4" --port 80 --name web80 &&
	peer_start other origin.py --bind "$OUT4B" --port 443 --name other \
		--tls certs/web.crt certs/web.key &&
	peer_start ns dnsd.py --bind "$OUT4" --port 53 \
		--query-log "$PWD/srv/ns-queries.log" &&
	write_hosts hosts web.test="$OUT4" other.test="$OUT4B" &&
	printf "%s\n" "version: 1" "ports: [443, 80]" "allow:" "  - web.test" \
		"  - web.test:8443" \
		"  - \"$OUT4/32\"" "  - \"$OUT4/32:8443\"" >rules.yaml &&
	: >resolv.conf &&
	echo "nameserver $OUT4" >client-resolv.conf &&
	mkdir pstate && chown "$PROXY_UID" pstate &&
	: >audit.jsonl && chown "$PROXY_UID" audit.jsonl &&
	start_proxy_as "$PROXY_UID" &&
	test_wait_for_file pstate/proxy.json 10 &&
	"$PY" -c "
import json, sys
s = json.load(open(sys.argv[1]))
print(s[\"transparent\"][0].rsplit(\":\", 1)[1], s[\"dns\"][0].rsplit(\":\", 1)[1])
" pstate/proxy.json >ports &&
	read TPORT FPORT <ports &&
	test -n "$FPORT" &&
	user_curl -o /dev/null -w "%{http_code}\n" "https://web.test/?before" \
		--resolve "web.test:443:$OUT4" >code &&
	echo 200 >expect &&
	test_cmp expect code
'

test_expect_success 'enforce on --transparent: the web'"'"'s TCP and DNS of everyone but the proxy'"'"'s user go to its listeners' '
	"$INTUTIC" enforce on --transparent --state-dir "$PWD/pstate" >on.out &&
	test_atexit "\"$INTUTIC\" enforce off >/dev/null 2>&1" &&
	nft list table inet intutic >table &&
	for p in 80 443 8443; do
		test_grep "meta skuid != $PROXY_UID meta nfproto ipv4 tcp dport $p dnat ip to 127.0.0.1:$TPORT" table || return 1
	done &&
	test "$(grep -c "dnat ip to 127.0.0.1:$TPORT" table)" = 3 &&
	test_grep "oif \"lo\" accept comment \"loopback: not redirected\"" table &&
	test_grep "meta skuid != $PROXY_UID meta nfproto ipv4 udp dport 53 dnat ip to 127.0.0.1:$FPORT" table &&
	test_grep "ip daddr 127.0.0.1 tcp dport $TPORT accept comment \"the transparent listener at 127.0.0.1:$TPORT\"" table &&
	"$INTUTIC" enforce status >status &&
	test_grep "TCP to port 443: to the transparent listener at 127.0.0.1:$TPORT" status
'

test_expect_success 'another user'"'"'s HTTPS to an allowed name: through the listener, at the origin, audited with the original destination' '
	audit_mark &&
	user_curl -o /dev/null -w "%{http_code}\n" "https://web.test/?redirected" \
		--resolve "web.test:443:$OUT4" >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	test_grep "GET /[?]redirected " srv/web.log &&
	audit_since 1 &&
	audit_expect 1 event=decision proto=transparent run= host=web.test \
		port=443 "original=$OUT4:443" "addr=$OUT4" decision=allow
'

test_expect_success 'another user'"'"'s HTTPS at a port an allow entry names (8443): redirected too, decided at that port' '
	audit_mark &&
	user_curl -o /dev/null -w "%{http_code}\n" "https://web.test:8443/?port" \
		--resolve "web.test:8443:$OUT4" >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	test_grep "GET /[?]port " srv/web8443.log &&
	audit_since 1 &&
	audit_expect 1 event=decision proto=transparent host=web.test \
		port=8443 "original=$OUT4:8443" decision=allow "rule=$PWD/rules.yaml:5"
'

test_expect_success 'another user'"'"'s HTTPS to a name the rules do not allow, and with no name: refused, nothing at the origin' '
	audit_mark &&
	test_must_fail user_curl "https://other.test/" \
		--resolve "other.test:443:$OUT4B" 2>err &&
	test_grep "alert access denied" err &&
	{ printf "Q" | as "$USER_UID" openssl s_client -connect "$OUT4B:443" \
		-noservername -quiet >out 2>err; true; } &&
	test_grep "alert access denied" err &&
	test_must_fail grep -q "GET " srv/other.log &&
	audit_since 2 &&
	audit_expect 1 event=decision proto=transparent host=other.test \
		decision=deny reason=not-allowlisted &&
	audit_expect 1 event=decision proto=transparent "host=$OUT4B" \
		"original=$OUT4B:443" decision=deny
'

test_expect_success 'another user'"'"'s DNS to any server: answered by the filter, which refuses a denied name; the outside name server is asked nothing' '
	audit_mark &&
	as "$USER_UID" dig @"$OUT4" +tries=1 +time=5 +nocookie web.test A >dig.out &&
	test_grep "status: NOERROR" dig.out &&
	test_grep "^web.test\.[[:space:]].*IN[[:space:]]*A[[:space:]]*$OUT4\$" dig.out &&
	as "$USER_UID" dig @"$OUT4" +tries=1 +time=5 +nocookie secret-c2VjcmV0.other.test A >dig.out &&
	test_grep "status: REFUSED" dig.out &&
	test_must_be_empty srv/ns-queries.log &&
	audit_since 0 &&
	audit_expect 1 proto=dns host=web.test decision=allow &&
	audit_expect 1 proto=dns host=secret-c2VjcmV0.other.test decision=deny
'

test_expect_success 'another user'"'"'s Node fetch and http.get, python socket + ssl, getent: their names from the filter, their connections through the listener' '
	audit_mark &&
	: >srv/ns-queries.log &&
	as_client "$USER_UID" getent hosts web.test >out &&
	test_grep "^$OUT4 *web.test\$" out &&
	as_client "$USER_UID" env NODE_EXTRA_CA_CERTS="$CA_FILE" node -e "
fetch(\"https://web.test/?fetch\").then(r => { console.log(\"fetch \" + r.status); })
  .catch(e => { console.log(\"fetch failed: \" + (e.cause || e)); process.exit(1); });" >out &&
	as_client "$USER_UID" node -e "
require(\"http\").get(\"http://web.test/?get\", r => { console.log(\"get \" + r.statusCode); r.resume(); })
  .on(\"error\", e => { console.log(\"get failed: \" + e); process.exit(1); });" >>out &&
	as_client "$USER_UID" "$PY" -c "
import socket, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[1])
with socket.create_connection((\"web.test\", 443), timeout=10) as s:
    with ctx.wrap_socket(s, server_hostname=\"web.test\") as t:
        t.sendall(b\"GET /?py HTTP/1.1\\r\\nHost: web.test\\r\\nConnection: close\\r\\n\\r\\n\")
        print(\"py \" + t.recv(64).split(b\"\\r\\n\")[0].decode())
" "$CA_FILE" >>out &&
	test_grep "^fetch 200\$" out &&
	test_grep "^get 200\$" out &&
	test_grep "^py HTTP/1.1 200 OK\$" out &&
	test_grep "GET /[?]fetch " srv/web.log &&
	test_grep "GET /[?]py " srv/web.log &&
	test_grep "GET /[?]get " srv/web80.log &&
	test_must_be_empty srv/ns-queries.log &&
	audit_since 3 &&
	test "$(audit_count since.jsonl event=decision proto=transparent host=web.test decision=allow)" = 3 &&
	test "$(audit_count since.jsonl event=decision proto=dns host=web.test decision=allow)" -ge 1
'

test_expect_success 'the proxy'"'"'s own user is not redirected' '
	audit_mark &&
	as "$PROXY_UID" curl -sS --max-time 10 --noproxy "*" --cacert "$CA_FILE" \
		-o /dev/null -w "%{http_code}\n" "https://web.test/?own" \
		--resolve "web.test:443:$OUT4" >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	test_grep "GET /[?]own " srv/web.log &&
	sleep 0.2 &&
	audit_since 0 &&
	audit_expect 0 proto=transparent
'

test_expect_success 'enforce on --transparent with a proxy that serves no transparent listener: 125 naming the option, nothing changed' '
	nft list table inet intutic | sed "s/packets [0-9]* bytes [0-9]*//" >table.before &&
	mkdir -p nt-state &&
	"$PY" -c "
import json, sys
d = json.load(open(sys.argv[1]))
d[\"transparent\"] = []
json.dump(d, open(sys.argv[2], \"w\"))
" pstate/proxy.json nt-state/proxy.json &&
	test_expect_code 125 "$INTUTIC" enforce on --transparent \
		--state-dir "$PWD/nt-state" >out 2>err &&
	test_grep "the proxy serves no transparent listener: nothing installed" err &&
	test_grep -F -- "--transparent-bind 127.0.0.1:3129" err &&
	nft list table inet intutic | sed "s/packets [0-9]* bytes [0-9]*//" >table.after &&
	test_cmp table.before table.after
'

test_expect_success 'enforce off: the table goes, the user gets out directly again' '
	"$INTUTIC" enforce off >off.out &&
	test_must_fail nft list table inet intutic 2>/dev/null &&
	audit_mark &&
	user_curl -o /dev/null -w "%{http_code}\n" "https://web.test/?after" \
		--resolve "web.test:443:$OUT4" >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	audit_since 0 &&
	audit_expect 0 proto=transparent
'

test_done
