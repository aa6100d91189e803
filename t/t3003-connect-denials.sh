#!/bin/sh
test_description='CONNECT denials: not allowlisted, deny wins, ports, IP literals and their other spellings, internal and own addresses, report mode'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl

PUBLIC=100.128.0.1	# a public-class address, on an interface of the namespace
METADATA=169.254.169.254

# raw_connect TARGET [SECONDS]: "CONNECT TARGET" straight to the proxy, with
# curl out of the way (it would rewrite some targets), reading until the
# proxy closes or for SECONDS (default 10); the answer, CRs removed, in
# resp, its body in body.
raw_connect () {
	printf "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" "$1" "$1" >req &&
	proxy_send --send-file req --timeout "${2:-10}" >raw &&
	tr -d '\r' <raw >resp &&
	sed '1,/^$/d' resp >body
}

# refused REASON: resp is a 403 for REASON with a body that says why, that
# it is this workspace's policy and that going around the proxy will not
# work, and as long as its Content-Length says.
refused () {
	test_grep "^HTTP/1\.1 403 " resp &&
	test_grep "^X-Intutic-Error: $1\$" resp &&
	test_grep "^Content-Length: $(wc -c <body)\$" resp &&
	test_grep "^Connection: close\$" resp &&
	test_grep "^intutic: blocked .*\($1\)\.\$" body &&
	test_grep "^This is a policy decision of this workspace" body &&
	test_grep "^Retrying without the proxy will not work" body
}

# An address of this namespace other than loopback: on a dummy interface
# where the kernel has them, else on lo.  Only in the namespace that
# test_isolate_netns made, which has nothing but lo.
test_addr_dev_
if ip addr add "$PUBLIC/32" dev "$ADDR_DEV" &&
    ip addr add "$METADATA/32" dev "$ADDR_DEV"; then
	test_set_prereq ADDRS
fi

test_expect_success ADDRS 'setup: servers, names, rules, the proxy on a port picked first' '
	start_origin origin &&
	start_echo spell &&
	start_echo internal &&
	start_echo meta --bind "$METADATA" &&
	start_origin public --bind "$PUBLIC" &&
	start_echo loop --port "$PUBLIC_PORT" &&
	test "$LOOP_PORT" = "$PUBLIC_PORT" &&
	DUAL_PORT=$PUBLIC_PORT &&
	write_hosts hosts allowed.test=127.0.0.1 nope.test=127.0.0.1 \
		a.x.test=127.0.0.1 blocked.x.test=127.0.0.1 \
		internal.test=127.0.0.1 metadata.test="$METADATA" \
		dual-a.test="$PUBLIC" dual-a.test=127.0.0.1 \
		dual-b.test=127.0.0.1 dual-b.test="$PUBLIC" \
		self.test=127.0.0.1 &&
	SELF_PORT=$(free_port) &&
	fill_rules proxy-connect/denials.yaml rules.yaml \
		ORIGIN_PORT="$ORIGIN_PORT" SPELL_PORT="$SPELL_PORT" \
		INTERNAL_PORT="$INTERNAL_PORT" \
		META_PORT="$META_PORT" DUAL_PORT="$DUAL_PORT" \
		PROXY_PORT="$SELF_PORT" &&
	RULES=$PWD/rules.yaml &&
	"$INTUTIC" rules check "$RULES" &&
	start_proxy "$RULES" --port "$SELF_PORT" &&
	test "$PROXY_PORT" = "$SELF_PORT"
'

test_expect_success ADDRS 'an allowed name passes (the rules and servers work)' '
	audit_mark &&
	proxy_curl -p -D head -o body "http://allowed.test:$ORIGIN_PORT/" &&
	echo "hello from allowed.test:$ORIGIN_PORT" >expect &&
	test_cmp expect body &&
	audit_conn proto=connect host=allowed.test port="$ORIGIN_PORT" \
		addr=127.0.0.1 decision=allow reason=allowed rule="$RULES:11"
'

test_expect_success ADDRS 'a name not on the allowlist: 403 not-allowlisted, and a body that says so' '
	audit_mark &&
	raw_connect "nope.test:$ORIGIN_PORT" &&
	refused not-allowlisted &&
	test_grep "^intutic: blocked nope\\.test:$ORIGIN_PORT: " body &&
	audit_conn proto=connect host=nope.test port="$ORIGIN_PORT" addr= \
		decision=deny reason=not-allowlisted rule= status=403 \
		-- decision=deny reason=not-allowlisted bytes_up=0 bytes_down=0 &&
	test_grep -v "host=nope\\.test" "$ORIGIN_LOG"
'

test_expect_success ADDRS 'curl sees the refusal as the answer to its CONNECT' '
	audit_mark &&
	test_expect_code 56 proxy_curl -p "http://nope.test:$ORIGIN_PORT/" \
		>out 2>err &&
	test_grep "CONNECT tunnel failed, response 403" err &&
	audit_conn host=nope.test decision=deny reason=not-allowlisted
'

test_expect_success ADDRS 'deny wins: allowed by **.x.test, denied by its deny entry' '
	audit_mark &&
	proxy_curl -p -o body "http://a.x.test:$ORIGIN_PORT/" &&
	test_grep "^hello from a\\.x\\.test:" body &&
	audit_conn host=a.x.test decision=allow reason=allowed rule="$RULES:12" &&
	audit_mark &&
	raw_connect "blocked.x.test:$ORIGIN_PORT" &&
	refused denied &&
	test_grep -F "(rule $RULES:20)" body &&
	audit_conn host=blocked.x.test port="$ORIGIN_PORT" decision=deny \
		reason=denied rule="$RULES:20" status=403 &&
	test_grep -v "host=blocked" "$ORIGIN_LOG"
'

test_expect_success ADDRS 'a port the name does not allow: 403 port-not-allowed' '
	audit_mark &&
	raw_connect "allowed.test:$SPELL_PORT" &&
	refused port-not-allowed &&
	test_grep -F "(rule $RULES:11)" body &&
	audit_conn host=allowed.test port="$SPELL_PORT" decision=deny \
		reason=port-not-allowed rule="$RULES:11" &&
	test "$(grep_count " in=" "$SPELL_LOG")" = 0
'

test_expect_success ADDRS 'IP literals outside the allowed CIDRs: refused, never dialled' '
	audit_mark &&
	raw_connect "$PUBLIC:$DUAL_PORT" &&
	refused not-allowlisted &&
	raw_connect "127.0.0.1:$INTERNAL_PORT" &&
	refused port-not-allowed &&
	test_grep -F "(rule $RULES:18)" body &&
	audit_since 2 &&
	audit_expect 2 event=decision &&
	audit_expect 1 event=decision host=$PUBLIC port=$DUAL_PORT \
		decision=deny reason=not-allowlisted &&
	audit_expect 1 event=decision host=127.0.0.1 port=$INTERNAL_PORT \
		decision=deny reason=port-not-allowed rule=$RULES:18 &&
	test_grep -v "^public: GET" "$PUBLIC_LOG" &&
	test "$(grep_count " in=" "$INTERNAL_LOG")" = 0
'

test_expect_success ADDRS 'the loopback literal on a port the CIDR names passes (the witness works)' '
	audit_mark &&
	proxy_tcp --to "127.0.0.1:$SPELL_PORT" --send ping --half-close >out 2>err &&
	printf ping >expect &&
	test_cmp expect out &&
	audit_conn host=127.0.0.1 port="$SPELL_PORT" addr=127.0.0.1 \
		decision=allow reason=allowed rule="$RULES:18" &&
	test "$(grep_count " in=4 out=4\$" "$SPELL_LOG")" = 1
'

test_expect_success ADDRS 'other spellings of 127.0.0.1: invalid-host, never dialled' '
	audit_mark &&
	for t in 127.1 0x7f.0.0.1 2130706433 017.0.0.1 0177.0.0.1 127.0.0.01; do
		raw_connect "$t:$SPELL_PORT" &&
		refused invalid-host || return 1
	done &&
	audit_since 6 &&
	audit_expect 6 event=decision &&
	audit_expect 6 event=decision decision=deny reason=invalid-host \
		status=403 &&
	audit_expect 0 event=decision addr!= &&
	test "$(grep_count " in=" "$SPELL_LOG")" = 1
'

test_expect_success ADDRS 'a name that resolves to loopback, on a port no CIDR covers: internal-address' '
	audit_mark &&
	raw_connect "internal.test:$INTERNAL_PORT" &&
	refused internal-address &&
	test_grep "^intutic: blocked internal\.test:$INTERNAL_PORT: the name resolves only to refused addresses: 127\.0\.0\.1 \(loopback\) \(internal-address\)\.\$" body &&
	test_grep -v -F "(rule " body &&
	audit_conn host=internal.test port="$INTERNAL_PORT" addr=127.0.0.1 \
		decision=deny reason=internal-address rule= status=403 &&
	test "$(grep_count " in=" "$INTERNAL_LOG")" = 0
'

test_expect_success ADDRS 'a name that resolves to 169.254.169.254: internal-address, nothing dialled' '
	audit_mark &&
	raw_connect "metadata.test:$META_PORT" &&
	refused internal-address &&
	test_grep -F "the name resolves only to refused addresses: $METADATA (link-local) (internal-address)." body &&
	audit_conn host=metadata.test port="$META_PORT" addr="$METADATA" \
		decision=deny reason=internal-address rule= &&
	test "$(grep_count " in=" "$META_LOG")" = 0
'

test_expect_success ADDRS 'public and loopback addresses, the public one first: the public one is dialled' '
	audit_mark &&
	proxy_curl -p -D head -o body "http://dual-a.test:$DUAL_PORT/" &&
	echo "hello from dual-a.test:$DUAL_PORT" >expect &&
	test_cmp expect body &&
	test_grep "^X-Origin: public" head &&
	audit_conn host=dual-a.test addr="$PUBLIC" decision=allow reason=allowed \
		rule="$RULES:15" &&
	test "$(grep_count " in=" "$LOOP_LOG")" = 0
'

test_expect_success ADDRS 'loopback and public addresses, loopback first: still the public one' '
	audit_mark &&
	proxy_curl -p -D head -o body "http://dual-b.test:$DUAL_PORT/" &&
	echo "hello from dual-b.test:$DUAL_PORT" >expect &&
	test_cmp expect body &&
	test_grep "^X-Origin: public" head &&
	audit_conn host=dual-b.test addr="$PUBLIC" decision=allow reason=allowed \
		rule="$RULES:16" &&
	test "$(grep_count " in=" "$LOOP_LOG")" = 0
'

test_expect_success ADDRS 'the proxy itself as the target, allowed by a CIDR and by name: own-address' '
	audit_mark &&
	raw_connect "127.0.0.1:$PROXY_PORT" &&
	refused own-address &&
	raw_connect "self.test:$PROXY_PORT" &&
	refused own-address &&
	audit_since 2 &&
	audit_expect 2 event=decision &&
	audit_expect 1 event=decision host=127.0.0.1 port=$PROXY_PORT \
		decision=deny reason=own-address status=403 &&
	audit_expect 1 event=decision host=self.test port=$PROXY_PORT \
		decision=deny reason=own-address status=403 &&
	test "$(proxy_metric intutic_connections_active)" = 1
'

test_expect_success ADDRS 'the proxy itself as an IPv4-mapped IPv6 literal: refused, no loop' '
	audit_mark &&
	before=$(proxy_metric intutic_connections_total) &&
	raw_connect "[::ffff:127.0.0.1]:$PROXY_PORT" 2 &&
	test_grep "^HTTP/1\\.1 403 " resp &&
	audit_since 1 &&
	audit_expect 1 event=decision &&
	audit_expect 1 event=decision decision=deny status=403 \
		"reason~^(own-address|invalid-host)\$" &&
	test "$(proxy_metric intutic_connections_total)" = $((before + 2))
'

# --- report mode -------------------------------------------------------------

test_expect_success ADDRS 'report mode: a proxy with the same names, mode: report' '
	stop_proxy &&
	fill_rules proxy-connect/report.yaml report.yaml \
		ORIGIN_PORT="$ORIGIN_PORT" DUAL_PORT="$DUAL_PORT" &&
	RULES=$PWD/report.yaml &&
	"$INTUTIC" rules check "$RULES" &&
	start_proxy "$RULES"
'

test_expect_success ADDRS 'report mode: a name not on the allowlist passes, logged as deny not-allowlisted' '
	audit_mark &&
	proxy_curl -p -o body "http://nope.test:$ORIGIN_PORT/" &&
	echo "hello from nope.test:$ORIGIN_PORT" >expect &&
	test_cmp expect body &&
	audit_conn host=nope.test port="$ORIGIN_PORT" addr=127.0.0.1 \
		decision=deny reason=not-allowlisted rule= \
		-- decision=deny reason=not-allowlisted "bytes_down>0"
'

test_expect_success ADDRS 'report mode: a denied name passes, logged as deny denied with its rule' '
	audit_mark &&
	proxy_curl -p -o body "http://blocked.x.test:$ORIGIN_PORT/" &&
	test_grep "^hello from blocked\\.x\\.test:" body &&
	audit_conn host=blocked.x.test decision=deny reason=denied \
		rule="$RULES:12"
'

test_expect_success ADDRS 'report mode: a wrong port passes, logged as deny port-not-allowed' '
	audit_mark &&
	printf "GET / HTTP/1.1\\r\\nHost: allowed.test:%s\\r\\n\\r\\n" \
		"$SPELL_PORT" >req &&
	proxy_tcp --to "allowed.test:$SPELL_PORT" --send-file req --half-close \
		>out 2>err &&
	test_cmp req out &&
	audit_conn host=allowed.test port="$SPELL_PORT" decision=deny \
		reason=port-not-allowed rule="$RULES:8"
'

test_expect_success ADDRS 'report mode: an allowed name at an internal address passes, logged as deny internal-address' '
	audit_mark &&
	proxy_curl -p -o body "http://allowed.test:$ORIGIN_PORT/" &&
	test_grep "^hello from allowed\\.test:" body &&
	audit_conn host=allowed.test addr=127.0.0.1 decision=deny \
		reason=internal-address
'

test_expect_success ADDRS 'report mode: loopback and public addresses: the public one, as in enforce mode' '
	audit_mark &&
	proxy_curl -p -D head -o body "http://dual-b.test:$DUAL_PORT/" &&
	echo "hello from dual-b.test:$DUAL_PORT" >expect &&
	test_cmp expect body &&
	test_grep "^X-Origin: public" head &&
	audit_conn host=dual-b.test addr="$PUBLIC" decision=allow reason=allowed \
		rule="$RULES:10" &&
	test "$(grep_count " in=" "$LOOP_LOG")" = 0
'

test_done
