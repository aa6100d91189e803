#!/bin/sh
test_description='--upstream-proxy: after its own decision the proxy reaches what it allowed through a parent proxy (squid, in this namespace): absolute-form HTTP with the decided name, CONNECT NAME:PORT for tunnels, the transparent listener and the provider gateway, the parent'"'"'s credentials from a file; denied requests never reach the parent; the parent'"'"'s refusals and absence are 502s that say so; the parent itself is never a destination; a parent that is the proxy itself, or given wrongly, is refused at start with the fix; judged at the parent'"'"'s access log and at the origins (python and nginx)'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
. "$top_srcdir/t/lib-gateway.sh"
test_isolate_netns
test_require_proxy curl openssl

SQUID=$(command -v squid || echo /usr/sbin/squid)
test -x "$SQUID" && test_set_prereq SQUID
NCSA=/usr/lib/squid/basic_ncsa_auth
test -x "$NCSA" && test_set_prereq NCSA
SQUID_START_SECONDS=20
USER_PW=agentgw:s3cret-upstream-pw
KEY=sk-ant-api03-upstreamtestkey0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH

# squid_listens: both of squid's ports take connections.
squid_listens () {
	python3 - "$SQUID_PORT" "$SQUID_AUTH_PORT" <<\PY
import socket, sys
for p in sys.argv[1:]:
    try:
        socket.create_connection(("127.0.0.1", int(p)), timeout=1).close()
    except OSError:
        sys.exit(1)
PY
}

# start_squid: squid in the foreground (-N), everything under squid/: two
# ports, SQUID_PORT open to all and SQUID_AUTH_PORT asking for Basic
# credentials (USER_PW, checked by squid's basic_ncsa_auth); CONNECT to any
# port; blocked.test refused (403); names from its own hosts file; each
# request in SQUID_LOG ("METHOD URL STATUS" as squid's access log has it).
start_squid () {
	SQUID_DIR=$TRASH_DIRECTORY/squid
	SQUID_LOG=$SQUID_DIR/access.log
	mkdir -p "$SQUID_DIR" &&
	SQUID_PORT=$(free_port) && SQUID_AUTH_PORT=$(free_port) || return 1
	test "$SQUID_PORT" != "$SQUID_AUTH_PORT" || SQUID_AUTH_PORT=$(free_port) || return 1
	write_hosts "$SQUID_DIR/hosts" web.test=127.0.0.1 a.test=127.0.0.1 \
		nginx.test=127.0.0.1 blocked.test=127.0.0.1 \
		api.provider.test=127.0.0.1 || return 1
	printf '%s:%s\n' "${USER_PW%%:*}" \
		"$(openssl passwd -1 "${USER_PW#*:}")" >"$SQUID_DIR/passwd" || return 1
	cat >"$SQUID_DIR/squid.conf" <<EOF || return 1
http_port 127.0.0.1:$SQUID_PORT name=open
http_port 127.0.0.1:$SQUID_AUTH_PORT name=auth
auth_param basic program $NCSA $SQUID_DIR/passwd
auth_param basic realm intutic-test
acl on_auth myportname auth
acl login proxy_auth REQUIRED
acl blocked dstdomain blocked.test
acl CONNECT method CONNECT
http_access deny blocked
http_access deny on_auth !login
http_access allow all
cache deny all
cache_mem 8 MB
strip_query_terms off
hosts_file $SQUID_DIR/hosts
dns_nameservers 127.0.0.1
pid_filename $SQUID_DIR/squid.pid
cache_log $SQUID_DIR/cache.log
logformat plain %rm %ru %>Hs
access_log stdio:$SQUID_LOG plain
cache_store_log none
coredump_dir $SQUID_DIR
netdb_filename none
pinger_enable off
shutdown_lifetime 0 seconds
visible_hostname parent.test
via off
forwarded_for delete
EOF
	: >"$SQUID_LOG" &&
	chmod -R a+rwX "$SQUID_DIR" || return 1
	"$SQUID" -N -f "$SQUID_DIR/squid.conf" </dev/null \
		>>"$SQUID_DIR/stderr.log" 2>&1 &
	SQUID_PID=$!
	test_atexit "test_stop_child_ $SQUID_PID" || return 1
	wait_until "$SQUID_START_SECONDS" squid_listens && return 0
	echo "squid did not start; its logs:" >&2
	cat "$SQUID_DIR/stderr.log" "$SQUID_DIR/cache.log" >&2
	return 1
}

# squid_mark / squid_since: the parent's access log since a mark (squid.new).
# squid writes its log line when the request is over; squid_since waits
# for N lines (at most 5 s) when asked.
squid_mark () {
	squid_mark_=$(wc -l <"$SQUID_LOG")
}
squid_since () {
	squid_want_=${1:-0}
	squid_n_=50
	while :; do
		tail -n "+$((squid_mark_ + 1))" "$SQUID_LOG" >squid.new
		test "$(wc -l <squid.new)" -ge "$squid_want_" && return 0
		test "$squid_n_" -le 0 && return 0
		sleep 0.1
		squid_n_=$((squid_n_ - 1))
	done
}

test_expect_success SQUID 'setup: squid as the parent, the origins (python, TLS, nginx), the provider double, the proxy with --upstream-proxy and nothing in its hosts file' '
	test_certs &&
	start_origin web.test &&
	start_origin a.test --tls "$CERT_FILE" "$KEY_FILE" &&
	start_nginx 127.0.0.1 80 &&
	start_provider provider &&
	start_squid &&
	fill_rules upstream/rules.yaml rules.yaml WEB="$WEB_TEST_PORT" \
		TLS="$A_TEST_PORT" NGINX="$NGINX_PORT" SQUID="$SQUID_PORT" \
		SQUIDAUTH="$SQUID_AUTH_PORT" PROV="$PROVIDER_PORT" &&
	: >hosts &&
	: >resolv.conf &&
	TPORT=$(free_port) &&
	start_proxy rules.yaml --upstream-proxy "http://127.0.0.1:$SQUID_PORT" \
		--gateway-ca "$CA_FILE" --transparent-bind "127.0.0.1:$TPORT" &&
	test_grep "through the upstream proxy http://127.0.0.1:$SQUID_PORT" "$PROXY_LOG"
'

test_expect_success SQUID 'HTTP: sent to the parent in absolute form with the decided name; the origin answers; the audit names the parent as the address dialled' '
	squid_mark && server_mark web.test && audit_mark &&
	proxy_curl -o out "http://web.test:$WEB_TEST_PORT/?via-parent" &&
	echo "hello from web.test:$WEB_TEST_PORT" >expect && test_cmp expect out &&
	squid_since 1 &&
	test_grep "^GET http://web.test:$WEB_TEST_PORT/[?]via-parent 200$" squid.new &&
	server_since web.test &&
	test_grep "via-parent" web.test.new &&
	audit_wait event=decision host=web.test decision=allow \
		"addr=127.0.0.1:$SQUID_PORT"
'

test_expect_success SQUID 'HTTP to nginx (the lenient origin) through the parent: one request, the Host it was decided for' '
	squid_mark && : >"$NGINX_LOG" &&
	proxy_curl -o out "http://nginx.test:$NGINX_PORT/via-parent-nginx" &&
	echo ok >expect && test_cmp expect out &&
	squid_since 1 &&
	test_grep "^GET http://nginx.test(:$NGINX_PORT)?/via-parent-nginx 200$" squid.new &&
	grep_count "via-parent-nginx" "$NGINX_LOG" >n && echo 1 >expect && test_cmp expect n &&
	test_grep "host=nginx.test " "$NGINX_LOG"
'

test_expect_success SQUID 'CONNECT: the parent is asked for the decided name and port; TLS end to end, the origin answers' '
	squid_mark && server_mark a.test &&
	proxy_curl_ca -o out "https://a.test:$A_TEST_PORT/?tunnel" &&
	echo "hello from a.test:$A_TEST_PORT" >expect && test_cmp expect out &&
	squid_since 1 &&
	test_grep "^CONNECT a.test:$A_TEST_PORT 200$" squid.new &&
	server_since a.test &&
	test_grep "tunnel" a.test.new
'

test_expect_success SQUID 'the transparent listener through the parent: CONNECT with the name its Host gave and the protocol'"'"'s port, at nginx once' '
	squid_mark && : >"$NGINX_LOG" &&
	curl -sS --max-time 10 --noproxy "*" -o out \
		--connect-to "nginx.test:80:127.0.0.1:$TPORT" \
		http://nginx.test/via-transparent &&
	echo ok >expect && test_cmp expect out &&
	squid_since 1 &&
	test_grep "^CONNECT nginx.test:80 200$" squid.new &&
	grep_count "via-transparent" "$NGINX_LOG" >n && echo 1 >expect && test_cmp expect n
'

test_expect_success SQUID 'a denied name: 403 from the proxy, nothing asked of the parent' '
	squid_mark && audit_mark &&
	proxy_curl -o out -w "%{http_code}" "http://evil.test:$WEB_TEST_PORT/" >code &&
	test "$(cat code)" = 403 &&
	proxy_curl_ca -o /dev/null "https://evil.test:$A_TEST_PORT/" 2>err;
	test_grep "403" err &&
	audit_wait event=decision host=evil.test decision=deny &&
	sleep 0.3 && squid_since &&
	test_must_fail grep evil squid.new
'

test_expect_success SQUID 'the parent refuses a CONNECT: 502 naming the parent and its answer, audited' '
	audit_mark &&
	proxy_curl_ca -o /dev/null "https://blocked.test:$A_TEST_PORT/" 2>err;
	test_grep "502" err &&
	audit_wait event=decision host=blocked.test reason=connect-failed &&
	printf "CONNECT blocked.test:%s HTTP/1.1\r\nHost: blocked.test:%s\r\n\r\n" \
		"$A_TEST_PORT" "$A_TEST_PORT" >req &&
	proxy_send --send-file req >resp &&
	test_grep "^HTTP/1.1 502" resp &&
	test_grep "the upstream proxy 127.0.0.1:$SQUID_PORT answered CONNECT blocked.test:$A_TEST_PORT with 403 Forbidden" resp
'

test_expect_success SQUID 'the parent itself is never a destination: by its address, as CONNECT and as HTTP (own-address), nothing reaches it' '
	squid_mark && audit_mark &&
	proxy_curl -o resp -w "%{http_code}" "http://127.0.0.1:$SQUID_PORT/" >code &&
	test "$(cat code)" = 403 &&
	test_grep "the upstream proxy itself" resp &&
	printf "CONNECT 127.0.0.1:%s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n" \
		"$SQUID_PORT" "$SQUID_PORT" >req &&
	proxy_send --send-file req >resp &&
	test_grep "^HTTP/1.1 403" resp &&
	audit_wait event=decision host=127.0.0.1 reason=own-address &&
	sleep 0.3 && squid_since &&
	! test -s squid.new
'

test_expect_success SQUID 'the provider gateway through the parent: CONNECT to the provider'"'"'s api host, TLS verified through it, the call audited' '
	squid_mark && audit_mark &&
	curl -sS --noproxy "*" --max-time 20 -o out.json \
		"$PROXY_URL/providers/anthropic/v1/messages" \
		-H "x-api-key: $KEY" -H "anthropic-version: 2023-06-01" \
		-H "content-type: application/json" \
		-d "{\"model\":\"claude-x\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" &&
	gateway_json_is out.json "j[\"usage\"][\"output_tokens\"]" 13 &&
	audit_wait event=call provider=anthropic status=200 &&
	# squid logs a tunnel when it ends: the proxy keeps this one for the
	# next call until it stops
	stop_proxy &&
	squid_since 1 &&
	test_grep "^CONNECT api.provider.test:$PROVIDER_PORT 200$" squid.new &&
	start_proxy rules.yaml --upstream-proxy "http://127.0.0.1:$SQUID_PORT" \
		--gateway-ca "$CA_FILE" --transparent-bind "127.0.0.1:$TPORT"
'

test_expect_success SQUID,NCSA 'a parent that asks for credentials: without them a 502 naming its 407; with --upstream-proxy-auth they are sent, and never written anywhere' '
	stop_proxy &&
	start_proxy rules.yaml --upstream-proxy "http://127.0.0.1:$SQUID_AUTH_PORT" &&
	audit_mark &&
	proxy_curl_ca -o /dev/null "https://a.test:$A_TEST_PORT/" 2>err;
	test_grep "502" err &&
	printf "CONNECT a.test:%s HTTP/1.1\r\nHost: a.test:%s\r\n\r\n" \
		"$A_TEST_PORT" "$A_TEST_PORT" >req &&
	proxy_send --send-file req >resp &&
	test_grep "answered CONNECT a.test:$A_TEST_PORT with 407" resp &&
	stop_proxy &&
	printf "%s\n" "$USER_PW" >auth.txt && chmod 600 auth.txt &&
	start_proxy rules.yaml --upstream-proxy "http://127.0.0.1:$SQUID_AUTH_PORT" \
		--upstream-proxy-auth auth.txt &&
	test_grep "with credentials" "$PROXY_LOG" &&
	squid_mark &&
	proxy_curl_ca -o out "https://a.test:$A_TEST_PORT/?authed" &&
	echo "hello from a.test:$A_TEST_PORT" >expect && test_cmp expect out &&
	proxy_curl -o out "http://web.test:$WEB_TEST_PORT/?authed" &&
	echo "hello from web.test:$WEB_TEST_PORT" >expect && test_cmp expect out &&
	squid_since 2 &&
	test_grep "^CONNECT a.test:$A_TEST_PORT 200$" squid.new &&
	test_grep "^GET http://web.test:$WEB_TEST_PORT/[?]authed 200$" squid.new &&
	b64=$(printf "%s" "$USER_PW" | base64) &&
	test_must_fail grep -r -e "${USER_PW#*:}" -e "$b64" "$AUDIT_FILE" "$PROXY_LOG" state
'

test_expect_success SQUID 'the parent down: 502 naming the upstream proxy and why' '
	stop_proxy &&
	down=$(free_port) &&
	start_proxy rules.yaml --upstream-proxy "http://127.0.0.1:$down" &&
	proxy_curl -o resp -w "%{http_code}" "http://web.test:$WEB_TEST_PORT/" >code &&
	test "$(cat code)" = 502 &&
	test_grep "cannot connect to the upstream proxy 127.0.0.1:$down" resp
'

# start_fails ARGS...: intutic-proxy with ARGS exits 2 at once; its stderr
# in err.  (Its port is the default one, free in this namespace, unless
# ARGS name one.)
start_fails () {
	test_expect_code 2 timeout 10 "$top_builddir/proxy/intutic-proxy" \
		--rules rules.yaml --state-dir bad-state \
		--resolv-conf resolv.conf --hosts hosts "$@" 2>err
}

test_expect_success SQUID 'refused at start, each with its fix: https, credentials in the URL, a path, not a URL, the proxy itself (a loop), an auth file others can read or without USER:PASSWORD, auth without a parent' '
	stop_proxy &&
	start_fails --upstream-proxy "https://127.0.0.1:$SQUID_PORT" &&
	test_grep "only http:// parents are supported" err &&
	start_fails --upstream-proxy "http://u:p@127.0.0.1:$SQUID_PORT" &&
	test_grep "no credentials in the URL.*--upstream-proxy-auth FILE" err &&
	start_fails --upstream-proxy "http://127.0.0.1:$SQUID_PORT/x" &&
	test_grep "HOST and PORT only" err &&
	start_fails --upstream-proxy "not a url" &&
	test_grep "not a URL" err &&
	own=$(free_port) &&
	start_fails --port "$own" --upstream-proxy "http://127.0.0.1:$own" &&
	test_grep "is this proxy itself .*every request would come back" err &&
	printf "%s\n" "$USER_PW" >open.txt && chmod 644 open.txt &&
	start_fails --upstream-proxy "http://127.0.0.1:$SQUID_PORT" \
		--upstream-proxy-auth open.txt &&
	test_grep "others may read it [(]mode 644[)]: chmod 600" err &&
	printf "nocolon\n" >bad.txt && chmod 600 bad.txt &&
	start_fails --upstream-proxy "http://127.0.0.1:$SQUID_PORT" \
		--upstream-proxy-auth bad.txt &&
	test_grep "must be USER:PASSWORD" err &&
	start_fails --upstream-proxy-auth auth.txt &&
	test_grep "needs --upstream-proxy URL" err
'

test_done
