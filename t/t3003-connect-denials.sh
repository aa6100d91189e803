#!/bin/sh
test_description='CONNECT denials: not allowlisted, deny wins, ports, IP literals and their other spellings, internal and own addresses, report mode'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns

test -x "$top_builddir/proxy/intutic-proxy" ||
	test_skip_all "intutic-proxy was not built (make in $top_builddir)"
command -v python3 >/dev/null 2>&1 || test_skip_all "needs python3 (the test servers)"
command -v curl >/dev/null 2>&1 || test_skip_all "needs curl"

CLIENT=$top_srcdir/t/helpers/client.py
WAIT_SECONDS=10		# an audit record, a metric to change
PUBLIC=100.128.0.1	# a public-class address, on an interface of the namespace
METADATA=169.254.169.254

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

# mark: remember how long the audit log is; `since` reads what came after.
mark () {
	MARK=$(wc -l <"$AUDIT_FILE") || return 1
	MARK=$((MARK))
}

# since N: wait (at most WAIT_SECONDS) until N close records were written
# after the mark; since.jsonl then holds every record written after it.
since () {
	since_n_=$((WAIT_SECONDS * 10))
	while :; do
		tail -n "+$((MARK + 1))" "$AUDIT_FILE" >since.jsonl || return 1
		since_got_=$(recs event=close) || return 1
		test "$since_got_" -ge "$1" && return 0
		if test "$since_n_" -le 0; then
			echo "since: $since_got_ close records after ${WAIT_SECONDS}s, expected $1; the records since the mark:" >&2
			cat since.jsonl >&2
			return 1
		fi
		sleep 0.1
		since_n_=$((since_n_ - 1))
	done
}

# recs COND...: how many of the records since the mark (since.jsonl, which
# `since` and `conn` write) match every COND.
recs () {
	audit_count since.jsonl "$@"
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

# raw_connect TARGET [SECONDS]: "CONNECT TARGET" straight to the proxy, with
# curl out of the way (it would rewrite some targets), reading until the
# proxy closes or for SECONDS (default 10); the answer, CRs removed, in
# resp, its body in body.
raw_connect () {
	printf "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" "$1" "$1" >req &&
	python3 "$CLIENT" tcp --to "127.0.0.1:$PROXY_PORT" --send-file req \
		--timeout "${2:-10}" >raw &&
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

# free_port: a port nothing listens on at 127.0.0.1 (nothing else runs in
# this namespace to take it before the proxy does).
free_port () {
	python3 -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
'
}

# count PATTERN FILE: how many lines of FILE match the ERE PATTERN.
count () {
	grep -c -E -e "$1" "$2" || :
}

# An address of this namespace other than loopback: on a dummy interface
# where the kernel has them, else on lo.  Only in the namespace that
# test_isolate_netns made, which has nothing but lo.
test "$(ip netns identify 2>/dev/null)" = "${INTUTIC_TEST_NETNS:-}" &&
test -n "$INTUTIC_TEST_NETNS" ||
	test_bug_ "not in the test's own network namespace"
if ip link add intutic-d0 type dummy 2>/dev/null &&
    ip link set intutic-d0 up; then
	ADDR_DEV=intutic-d0
else
	ADDR_DEV=lo
fi
if ip addr add "$PUBLIC/32" dev "$ADDR_DEV" &&
    ip addr add "$METADATA/32" dev "$ADDR_DEV"; then
	test_set_prereq ADDRS
fi

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
	fill denials.yaml rules.yaml ORIGIN_PORT="$ORIGIN_PORT" \
		SPELL_PORT="$SPELL_PORT" INTERNAL_PORT="$INTERNAL_PORT" \
		META_PORT="$META_PORT" DUAL_PORT="$DUAL_PORT" \
		PROXY_PORT="$SELF_PORT" &&
	RULES=$PWD/rules.yaml &&
	"$INTUTIC" rules check "$RULES" &&
	start_proxy "$RULES" --port "$SELF_PORT" &&
	test "$PROXY_PORT" = "$SELF_PORT"
'

test_expect_success ADDRS 'an allowed name passes (the rules and servers work)' '
	mark &&
	proxy_curl -p -D head -o body "http://allowed.test:$ORIGIN_PORT/" &&
	echo "hello from allowed.test:$ORIGIN_PORT" >expect &&
	test_cmp expect body &&
	conn proto=connect host=allowed.test port="$ORIGIN_PORT" \
		addr=127.0.0.1 decision=allow reason=allowed rule="$RULES:11"
'

test_expect_success ADDRS 'a name not on the allowlist: 403 not-allowlisted, and a body that says so' '
	mark &&
	raw_connect "nope.test:$ORIGIN_PORT" &&
	refused not-allowlisted &&
	test_grep "^intutic: blocked nope\\.test:$ORIGIN_PORT: " body &&
	conn proto=connect host=nope.test port="$ORIGIN_PORT" addr= \
		decision=deny reason=not-allowlisted rule= status=403 \
		-- decision=deny reason=not-allowlisted bytes_up=0 bytes_down=0 &&
	test_grep -v "host=nope\\.test" "$ORIGIN_LOG"
'

test_expect_success ADDRS 'curl sees the refusal as the answer to its CONNECT' '
	mark &&
	test_expect_code 56 proxy_curl -p "http://nope.test:$ORIGIN_PORT/" \
		>out 2>err &&
	test_grep "CONNECT tunnel failed, response 403" err &&
	conn host=nope.test decision=deny reason=not-allowlisted
'

test_expect_success ADDRS 'deny wins: allowed by **.x.test, denied by its deny entry' '
	mark &&
	proxy_curl -p -o body "http://a.x.test:$ORIGIN_PORT/" &&
	test_grep "^hello from a\\.x\\.test:" body &&
	conn host=a.x.test decision=allow reason=allowed rule="$RULES:12" &&
	mark &&
	raw_connect "blocked.x.test:$ORIGIN_PORT" &&
	refused denied &&
	test_grep -F "(rule $RULES:20)" body &&
	conn host=blocked.x.test port="$ORIGIN_PORT" decision=deny \
		reason=denied rule="$RULES:20" status=403 &&
	test_grep -v "host=blocked" "$ORIGIN_LOG"
'

test_expect_success ADDRS 'a port the name does not allow: 403 port-not-allowed' '
	mark &&
	raw_connect "allowed.test:$SPELL_PORT" &&
	refused port-not-allowed &&
	test_grep -F "(rule $RULES:11)" body &&
	conn host=allowed.test port="$SPELL_PORT" decision=deny \
		reason=port-not-allowed rule="$RULES:11" &&
	test "$(count " in=" "$SPELL_LOG")" = 0
'

test_expect_success ADDRS 'IP literals outside the allowed CIDRs: refused, never dialled' '
	mark &&
	raw_connect "$PUBLIC:$DUAL_PORT" &&
	refused not-allowlisted &&
	raw_connect "127.0.0.1:$INTERNAL_PORT" &&
	refused port-not-allowed &&
	test_grep -F "(rule $RULES:18)" body &&
	since 2 &&
	test "$(recs event=decision)" = 2 &&
	test "$(recs event=decision host=$PUBLIC port=$DUAL_PORT \
		decision=deny reason=not-allowlisted)" = 1 &&
	test "$(recs event=decision host=127.0.0.1 port=$INTERNAL_PORT \
		decision=deny reason=port-not-allowed rule=$RULES:18)" = 1 &&
	test_grep -v "^public: GET" "$PUBLIC_LOG" &&
	test "$(count " in=" "$INTERNAL_LOG")" = 0
'

test_expect_success ADDRS 'the loopback literal on a port the CIDR names passes (the witness works)' '
	mark &&
	tcp --to "127.0.0.1:$SPELL_PORT" --send ping --half-close >out 2>err &&
	printf ping >expect &&
	test_cmp expect out &&
	conn host=127.0.0.1 port="$SPELL_PORT" addr=127.0.0.1 \
		decision=allow reason=allowed rule="$RULES:18" &&
	test "$(count " in=4 out=4\$" "$SPELL_LOG")" = 1
'

test_expect_success ADDRS 'other spellings of 127.0.0.1: invalid-host, never dialled' '
	mark &&
	for t in 127.1 0x7f.0.0.1 2130706433 017.0.0.1 0177.0.0.1 127.0.0.01; do
		raw_connect "$t:$SPELL_PORT" &&
		refused invalid-host || return 1
	done &&
	since 6 &&
	test "$(recs event=decision)" = 6 &&
	test "$(recs event=decision decision=deny reason=invalid-host \
		status=403)" = 6 &&
	test "$(recs event=decision addr!=)" = 0 &&
	test "$(count " in=" "$SPELL_LOG")" = 1
'

test_expect_success ADDRS 'a name that resolves to loopback, on a port no CIDR covers: internal-address' '
	mark &&
	raw_connect "internal.test:$INTERNAL_PORT" &&
	refused internal-address &&
	conn host=internal.test port="$INTERNAL_PORT" addr= decision=deny \
		reason=internal-address rule="$RULES:13" status=403 &&
	test "$(count " in=" "$INTERNAL_LOG")" = 0
'

test_expect_success ADDRS 'a name that resolves to 169.254.169.254: internal-address, nothing dialled' '
	mark &&
	raw_connect "metadata.test:$META_PORT" &&
	refused internal-address &&
	conn host=metadata.test port="$META_PORT" addr= decision=deny \
		reason=internal-address rule="$RULES:14" &&
	test "$(count " in=" "$META_LOG")" = 0
'

test_expect_success ADDRS 'public and loopback addresses, the public one first: the public one is dialled' '
	mark &&
	proxy_curl -p -D head -o body "http://dual-a.test:$DUAL_PORT/" &&
	echo "hello from dual-a.test:$DUAL_PORT" >expect &&
	test_cmp expect body &&
	test_grep "^X-Origin: public" head &&
	conn host=dual-a.test addr="$PUBLIC" decision=allow reason=allowed \
		rule="$RULES:15" &&
	test "$(count " in=" "$LOOP_LOG")" = 0
'

test_expect_success ADDRS 'loopback and public addresses, loopback first: still the public one' '
	mark &&
	proxy_curl -p -D head -o body "http://dual-b.test:$DUAL_PORT/" &&
	echo "hello from dual-b.test:$DUAL_PORT" >expect &&
	test_cmp expect body &&
	test_grep "^X-Origin: public" head &&
	conn host=dual-b.test addr="$PUBLIC" decision=allow reason=allowed \
		rule="$RULES:16" &&
	test "$(count " in=" "$LOOP_LOG")" = 0
'

test_expect_success ADDRS 'the proxy itself as the target, allowed by a CIDR and by name: own-address' '
	mark &&
	raw_connect "127.0.0.1:$PROXY_PORT" &&
	refused own-address &&
	raw_connect "self.test:$PROXY_PORT" &&
	refused own-address &&
	since 2 &&
	test "$(recs event=decision)" = 2 &&
	test "$(recs event=decision host=127.0.0.1 port=$PROXY_PORT \
		decision=deny reason=own-address status=403)" = 1 &&
	test "$(recs event=decision host=self.test port=$PROXY_PORT \
		decision=deny reason=own-address status=403)" = 1 &&
	test "$(proxy_metric intutic_connections_active)" = 1
'

test_expect_success ADDRS 'the proxy itself as an IPv4-mapped IPv6 literal: refused, no loop' '
	mark &&
	before=$(proxy_metric intutic_connections_total) &&
	raw_connect "[::ffff:127.0.0.1]:$PROXY_PORT" 2 &&
	test_grep "^HTTP/1\\.1 403 " resp &&
	since 1 &&
	test "$(recs event=decision)" = 1 &&
	test "$(recs event=decision decision=deny status=403 \
		"reason~^(own-address|invalid-host)\$")" = 1 &&
	test "$(proxy_metric intutic_connections_total)" = $((before + 2))
'

# --- report mode -------------------------------------------------------------

test_expect_success ADDRS 'report mode: a proxy with the same names, mode: report' '
	stop_proxy &&
	fill report.yaml report.yaml ORIGIN_PORT="$ORIGIN_PORT" \
		DUAL_PORT="$DUAL_PORT" &&
	RULES=$PWD/report.yaml &&
	"$INTUTIC" rules check "$RULES" &&
	start_proxy "$RULES"
'

test_expect_success ADDRS 'report mode: a name not on the allowlist passes, logged as deny not-allowlisted' '
	mark &&
	proxy_curl -p -o body "http://nope.test:$ORIGIN_PORT/" &&
	echo "hello from nope.test:$ORIGIN_PORT" >expect &&
	test_cmp expect body &&
	conn host=nope.test port="$ORIGIN_PORT" addr=127.0.0.1 \
		decision=deny reason=not-allowlisted rule= \
		-- decision=deny reason=not-allowlisted "bytes_down>0"
'

test_expect_success ADDRS 'report mode: a denied name passes, logged as deny denied with its rule' '
	mark &&
	proxy_curl -p -o body "http://blocked.x.test:$ORIGIN_PORT/" &&
	test_grep "^hello from blocked\\.x\\.test:" body &&
	conn host=blocked.x.test decision=deny reason=denied \
		rule="$RULES:12"
'

test_expect_success ADDRS 'report mode: a wrong port passes, logged as deny port-not-allowed' '
	mark &&
	printf "GET / HTTP/1.1\\r\\nHost: allowed.test:%s\\r\\n\\r\\n" \
		"$SPELL_PORT" >req &&
	tcp --to "allowed.test:$SPELL_PORT" --send-file req --half-close \
		>out 2>err &&
	test_cmp req out &&
	conn host=allowed.test port="$SPELL_PORT" decision=deny \
		reason=port-not-allowed rule="$RULES:8"
'

test_expect_success ADDRS 'report mode: an allowed name at an internal address passes, logged as deny internal-address' '
	mark &&
	proxy_curl -p -o body "http://allowed.test:$ORIGIN_PORT/" &&
	test_grep "^hello from allowed\\.test:" body &&
	conn host=allowed.test addr=127.0.0.1 decision=deny \
		reason=internal-address
'

test_expect_success ADDRS 'report mode: loopback and public addresses: the public one, as in enforce mode' '
	mark &&
	proxy_curl -p -D head -o body "http://dual-b.test:$DUAL_PORT/" &&
	echo "hello from dual-b.test:$DUAL_PORT" >expect &&
	test_cmp expect body &&
	test_grep "^X-Origin: public" head &&
	conn host=dual-b.test addr="$PUBLIC" decision=allow reason=allowed \
		rule="$RULES:10" &&
	test "$(count " in=" "$LOOP_LOG")" = 0
'

test_done
