#!/bin/sh
test_description='the DNS filter (--dns-bind): A and AAAA only for allowed names, a refused name never sent upstream, no HTTPS/SVCB/TXT data, answers checked as dials, upstream failure apart from denial, UDP and TCP, malformed messages counted and dropped, a sandbox under its run'"'"'s policy; judged by dig and by what the upstream name server saw'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_require_root "a second named namespace: the sandbox"
test_isolate_netns
test_require_proxy dig

# ask [DIG ARGS...]: dig at the filter (UDP unless +tcp), one try; its
# status in status ("NOERROR", "REFUSED", ...), its answer lines (TYPE
# DATA, sorted) in answers.
ask () {
	dig -p "$FILTER_PORT" @127.0.0.1 +tries=1 +time=5 +nocookie "$@" >dig.out &&
	sed -n 's/.*status: \([A-Z]*\),.*/\1/p' dig.out >status &&
	sed -n '/^;; ANSWER SECTION:/,/^$/p' dig.out |
		awk 'NF >= 5 { print $4, $5 }' | sort >answers
}

# expect_status STATUS
expect_status () {
	echo "$1" >expect &&
	test_cmp expect status
}

# upstream_saw NAME: the test's name server was asked for NAME (any type).
upstream_saw () {
	grep -q "^$1 " "$DNS_QUERY_LOG"
}

# query_bytes HEX...: a raw datagram to the filter; what comes back (or
# "none" within 1 s) in raw.
query_bytes () {
	python3 - "$FILTER_PORT" "$@" >raw <<-\EOF
	import socket, sys
	s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	s.settimeout(1.0)
	s.sendto(bytes.fromhex("".join(sys.argv[2:])), ("127.0.0.1", int(sys.argv[1])))
	try:
	    print(s.recv(4096).hex())
	except socket.timeout:
	    print("none")
	EOF
}

test_expect_success 'setup: a name server, the rules, the proxy with its filter' '
	cat >zone <<-\EOF &&
	allowed.test A 127.0.0.1
	allowed.test AAAA ::1
	allowed.test TTL 3600
	x.wild.test A 127.0.0.2
	bad.wild.test A 127.0.0.3
	internal.test A 10.9.0.5
	mixed.test A 127.0.0.4 10.9.0.6
	v4only.test A 127.0.0.5
	broken.test SERVFAIL
	secret-c2VjcmV0.evil.test A 127.0.0.9
	kept.test A 127.0.0.8
	kept.test TTL 1
	EOF
	start_dns zone &&
	write_resolv_conf &&
	cat >rules.yaml <<-\EOF &&
	version: 1
	ports: [443, 80]
	allow:
	  - allowed.test
	  - "*.wild.test"
	  - internal.test
	  - mixed.test
	  - v4only.test
	  - broken.test
	  - missing.test
	  - hosted.test
	  - kept.test
	  - "127.0.0.0/8"
	  - "[::1]"
	deny:
	  - bad.wild.test
	EOF
	write_hosts hosts hosted.test=127.0.0.7 &&
	start_proxy rules.yaml --dns-bind 127.0.0.1:0 --workers 1 &&
	FILTER_PORT=$(python3 -c "
import json, sys
print(json.load(open(sys.argv[1]))[\"dns\"][0].rsplit(\":\", 1)[1])
" state/proxy.json) &&
	test -n "$FILTER_PORT"
'

test_expect_success 'an allowed name: its A and AAAA, from upstream, with a bounded TTL; audited with the answers' '
	audit_mark &&
	ask allowed.test A &&
	expect_status NOERROR &&
	echo "A 127.0.0.1" >expect &&
	test_cmp expect answers &&
	ttl=$(awk "/^allowed.test/ { print \$2; exit }" dig.out) &&
	test "$ttl" -le 300 &&
	ask allowed.test AAAA &&
	expect_status NOERROR &&
	echo "AAAA ::1" >expect &&
	test_cmp expect answers &&
	grep -q "^allowed.test A udp" "$DNS_QUERY_LOG" &&
	grep -q "^allowed.test AAAA udp" "$DNS_QUERY_LOG" &&
	audit_since 0 &&
	audit_expect 1 proto=dns host=allowed.test qtype=A decision=allow \
		reason=allowed rcode=NOERROR answers=127.0.0.1 &&
	audit_expect 1 proto=dns host=allowed.test qtype=AAAA decision=allow \
		answers=::1
'

test_expect_success 'a name the rules do not allow: REFUSED, never asked upstream, audited' '
	audit_mark &&
	ask secret-c2VjcmV0.evil.test A &&
	expect_status REFUSED &&
	test_must_be_empty answers &&
	ask bad.wild.test A &&
	expect_status REFUSED &&
	ask x.wild.test A &&
	expect_status NOERROR &&
	echo "A 127.0.0.2" >expect &&
	test_cmp expect answers &&
	! upstream_saw secret-c2vjcmv0.evil.test &&
	! upstream_saw bad.wild.test &&
	audit_since 0 &&
	audit_expect 1 proto=dns host=secret-c2VjcmV0.evil.test decision=deny \
		reason=not-allowlisted rcode=REFUSED &&
	audit_expect 1 proto=dns host=bad.wild.test decision=deny \
		reason=denied "rule=rules.yaml:16"
'

test_expect_success 'HTTPS, SVCB, TXT, ANY of an allowed name: no records, nothing asked upstream; a zone transfer refused' '
	: >"$DNS_QUERY_LOG" &&
	for t in HTTPS SVCB TXT ANY MX; do
		ask allowed.test "$t" &&
		expect_status NOERROR &&
		test_must_be_empty answers || return 1
	done &&
	test_must_be_empty "$DNS_QUERY_LOG" &&
	audit_mark &&
	ask +tcp allowed.test AXFR &&
	test_grep "Transfer failed" dig.out &&
	test_must_be_empty "$DNS_QUERY_LOG" &&
	audit_since 0 &&
	audit_expect 1 proto=dns host=allowed.test qtype=AXFR decision=deny \
		reason=protocol-not-allowed rcode=REFUSED rule=
'

test_expect_success 'answers checked as dials: one internal address no CIDR covers refuses the whole set' '
	audit_mark &&
	ask internal.test A &&
	expect_status REFUSED &&
	ask mixed.test A &&
	expect_status REFUSED &&
	audit_since 0 &&
	audit_expect 1 proto=dns host=internal.test decision=deny \
		reason=internal-address &&
	audit_expect 1 proto=dns host=mixed.test decision=deny \
		reason=internal-address
'

test_expect_success 'upstream: SERVFAIL passed on and counted apart, NXDOMAIN, no data for a missing family, the hosts file' '
	ask broken.test A &&
	expect_status SERVFAIL &&
	test "$(proxy_metric intutic_dns_upstream_failures_total)" -ge 1 &&
	ask missing.test A &&
	expect_status NXDOMAIN &&
	ask v4only.test AAAA &&
	expect_status NOERROR &&
	test_must_be_empty answers &&
	ask v4only.test A &&
	echo "A 127.0.0.5" >expect &&
	test_cmp expect answers &&
	: >"$DNS_QUERY_LOG" &&
	ask hosted.test A &&
	echo "A 127.0.0.7" >expect &&
	test_cmp expect answers &&
	test_must_be_empty "$DNS_QUERY_LOG"
'

# (One worker: each keeps answers of its own, and the kernel hands each
# datagram to one of them.)
test_expect_success 'answers kept for their TTL, at least 5 s: asked upstream once, again once it ran out' '
	: >"$DNS_QUERY_LOG" &&
	hits=$(proxy_metric intutic_dns_cache_hits_total) &&
	ask kept.test A &&
	echo "A 127.0.0.8" >expect &&
	test_cmp expect answers &&
	ask kept.test A &&
	test_cmp expect answers &&
	ttl=$(awk "/^kept.test/ { print \$2; exit }" dig.out) &&
	test "$ttl" -ge 1 && test "$ttl" -le 5 &&
	test "$(grep -c "^kept.test A" "$DNS_QUERY_LOG")" = 1 &&
	test "$(proxy_metric intutic_dns_cache_hits_total)" -gt "$hits" &&
	sleep 6 &&
	ask kept.test A &&
	test_cmp expect answers &&
	test "$(grep -c "^kept.test A" "$DNS_QUERY_LOG")" = 2
'

test_expect_success 'over TCP: the same answers, several queries on one connection' '
	ask +tcp allowed.test A &&
	expect_status NOERROR &&
	echo "A 127.0.0.1" >expect &&
	test_cmp expect answers &&
	ask +tcp +keepopen allowed.test A allowed.test AAAA x.wild.test A &&
	test "$(grep -c "status: NOERROR" dig.out)" = 3 &&
	ask +tcp secret-c2VjcmV0.evil.test A &&
	expect_status REFUSED
'

test_expect_success 'malformed messages: dropped or FORMERR, counted, the filter still answers' '
	before=$(proxy_metric intutic_dns_malformed_total) &&
	query_bytes 1234 &&
	test "$(cat raw)" = none &&
	query_bytes 1234 8180 0001 0000 0000 0000 07616c6c6f776564 0474657374 00 0001 0001 &&
	test "$(cat raw)" = none &&
	query_bytes 1234 0100 0002 0000 0000 0000 07616c6c6f776564 0474657374 00 0001 0001 &&
	case $(cat raw) in 1234*) ;; *) false ;; esac &&
	test $(( $(python3 -c "import sys; print(int(sys.argv[1][6:8], 16) & 15)" "$(cat raw)") )) = 1 &&
	query_bytes 1234 0100 0001 0000 0000 0000 c00c 0001 0001 &&
	test $(( $(python3 -c "import sys; print(int(sys.argv[1][6:8], 16) & 15)" "$(cat raw)") )) = 1 &&
	after=$(proxy_metric intutic_dns_malformed_total) &&
	test "$after" -ge $((before + 4)) &&
	ask allowed.test A &&
	expect_status NOERROR
'

test_expect_success 'the metrics count the queries by verdict' '
	test "$(proxy_metric intutic_dns_queries_total 'decision="allow"')" -ge 5 &&
	test "$(proxy_metric intutic_dns_queries_total 'decision="deny"')" -ge 4
'

# --- a sandbox's queries ---------------------------------------------------------
# The sandbox is a second namespace the script makes, joined by a veth
# pair: SBX_A and SBX_B are its addresses, the filter listens on SBX_GW,
# this namespace's end.  (Addresses of this namespace's own would be this
# host's: a query from one is the host's, as one that `intutic enforce`
# redirected to the filter is.)
SBX_GW=10.231.0.1
SBX_A=10.231.0.2
SBX_B=10.231.0.3
SBX=intutic-t3601-sbx-$$

# sbx_ask FROM DIG ARGS...: dig from FROM (the sandbox's addresses: in the
# sandbox; else here) at the filter on SBX_GW.
sbx_ask () {
	sbx_from_=$1
	shift
	case $sbx_from_ in
	"$SBX_A"|"$SBX_B")	set -- ip netns exec "$SBX" dig "$@" ;;
	*)			set -- dig "$@" ;;
	esac
	"$@" -p "$SBX_PORT" @"$SBX_GW" -b "$sbx_from_" +tries=1 +time=5 \
		+nocookie >dig.out &&
	sed -n 's/.*status: \([A-Z]*\),.*/\1/p' dig.out >status
}

test_expect_success 'a sandbox network: the filter on it, a run given SBX_A with a policy of its own' '
	peer_netns "$SBX" "$SBX_GW/24" "$SBX_A/24 $SBX_B/24" &&
	stop_proxy &&
	start_proxy rules.yaml --dns-bind "127.0.0.1:0,$SBX_GW:0" &&
	SBX_PORT=$(python3 -c "
import json, sys
print(json.load(open(sys.argv[1]))[\"dns\"][1].rsplit(\":\", 1)[1])
" state/proxy.json) &&
	run_sandbox run-sbx "$SBX_A" \
		"{\"version\": 1, \"deny\": [\"allowed.test\"]}"
'

test_expect_success 'from the run'"'"'s sandbox: its policy decides; from another sandbox address: refused; from this host: the operator'"'"'s rules' '
	audit_mark &&
	: >"$DNS_QUERY_LOG" &&
	sbx_ask "$SBX_A" allowed.test A &&
	expect_status REFUSED &&
	sbx_ask "$SBX_A" x.wild.test A &&
	expect_status NOERROR &&
	sbx_ask "$SBX_B" x.wild.test A &&
	expect_status REFUSED &&
	sbx_ask 127.0.0.1 allowed.test A &&
	expect_status NOERROR &&
	test "$(grep -c "^allowed.test A" "$DNS_QUERY_LOG")" = 1 &&
	audit_since 0 &&
	audit_expect 1 proto=dns run=run-sbx host=allowed.test decision=deny \
		reason=denied "rule=run run-sbx'"'"'s policy:1" &&
	audit_expect 1 proto=dns run=run-sbx host=x.wild.test decision=allow &&
	audit_expect 1 proto=dns "client~^$SBX_B:" host=x.wild.test \
		decision=deny reason=proxy-auth &&
	audit_expect 1 proto=dns run= host=allowed.test decision=allow
'

test_done
