#!/bin/sh
test_description='loops: every address that reaches the proxy itself is own-address (unspecified, mapped, the loopback block, the host'"'"'s addresses under a wildcard bind), as a CONNECT and as an absolute-form GET, by literal and by name, with one connection an attempt'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl

SEND_SECONDS=3		# one attempt: a loop would hang it, not the script

# Addresses this test adds to lo, only in the namespace test_isolate_netns
# made (which has nothing but lo): a second IPv4 address and, with IPv6,
# a second IPv6 one.  The proxy never listens on them by name; a wildcard
# bind makes them its own.
EXTRA4=10.99.0.1
EXTRA6=fd00:99::1

test_own_netns_
ip addr add "$EXTRA4/32" dev lo ||
	test_bug_ "cannot add $EXTRA4 to lo in the test's namespace"
if ip -6 addr show dev lo 2>/dev/null | grep -q 'inet6 ::1/' &&
    ip -6 addr add "$EXTRA6/128" dev lo nodad 2>/dev/null; then
	test_set_prereq IPV6
fi

# The cases: one line each.  TARGET is what the client asks for (a
# literal, or a name); ADDR what the hosts file gives the name ("-" for a
# literal); then, for each bind of the proxy (127.0.0.1, 0.0.0.0, [::]),
# what the proxy must do: "own" (403 own-address, nothing dialled), or
# "dial" (not its own: it dials, nobody listens there on its port, 502
# connect-failed).  A case with a non-mapped IPv6 address needs IPV6.
cat >cases <<EOF
# target              addr                lo    any4  any6
0.0.0.0               -                   own   own   own
[::]                  -                   own   own   own
[::ffff:0.0.0.0]      -                   own   own   own
127.0.0.1             -                   own   own   own
127.0.0.2             -                   own   own   own
127.1.2.3             -                   own   own   own
127.255.255.254       -                   own   own   own
[::ffff:127.0.0.1]    -                   own   own   own
[::ffff:127.1.2.3]    -                   own   own   own
[::1]                 -                   own   own   own
$EXTRA4             -                   dial  own   own
[::ffff:$EXTRA4]    -                   dial  own   own
[$EXTRA6]        -                   dial  own   own
zero.test             0.0.0.0             own   own   own
zero6.test            ::                  own   own   own
zero-mapped.test      ::ffff:0.0.0.0      own   own   own
lo2.test              127.0.0.2           own   own   own
lo123.test            127.1.2.3           own   own   own
lo-mapped.test        ::ffff:127.0.0.1    own   own   own
lo6.test              ::1                 own   own   own
extra.test            $EXTRA4           dial  own   own
extra-mapped.test     ::ffff:$EXTRA4    dial  own   own
extra6.test           $EXTRA6          dial  own   own
EOF

# the names of the table, for the hosts file
sed -n 's/^\([a-z0-9-]*\.test\)  *\([^ ]*\) .*/\1=\2/p' cases >names

# needs_ipv6 TARGET ADDR: the case dials (or names) a non-mapped IPv6
# address other than :: and ::1 (which are refused before any dial).
needs_ipv6 () {
	needs_ipv6_=$2
	test "$needs_ipv6_" != - || needs_ipv6_=$1
	needs_ipv6_=${needs_ipv6_#[}
	needs_ipv6_=${needs_ipv6_%]}
	case $needs_ipv6_ in
	::|::1|::ffff:*)	return 1 ;;
	*:*)			return 0 ;;
	*)			return 1 ;;
	esac
}

# send_req FILE: the bytes of FILE to the proxy; its answer, CRs removed,
# in resp.
send_req () {
	client_py tcp --to "$PROXY_HOST:$PROXY_PORT" --send-file "$1" \
		--timeout "$SEND_SECONDS" >raw 2>err
	tr -d '\r' <raw >resp
}

# run_cases COLUMN FORM: every case that can run, as FORM (connect: a
# CONNECT; get: an absolute-form GET), against the proxy that runs, whose
# bind is the table's column COLUMN (3, 4 or 5).  Each answer must be what
# the table says; then the audit must hold exactly one decision and one
# close record a case, with its reason, and the proxy must have accepted
# exactly one connection a case (a loop would make two).
run_cases () {
	: >expect &&
	n=0 &&
	before=$(proxy_metric intutic_connections_total) &&
	audit_mark &&
	while read -r target addr lo any4 any6; do
		case $target in '#'*|'') continue ;; esac
		needs_ipv6 "$target" "$addr" && ! test_have_prereq IPV6 &&
			continue
		want=$(echo "$lo $any4 $any6" | cut -d' ' -f$(($1 - 2)))
		hp=$target:$PROXY_PORT
		if test "$2" = connect; then
			printf 'CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n' \
				"$hp" "$hp" >req
		else
			printf 'GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n' \
				"$hp" "$hp" >req
		fi
		send_req req || { cat err >&2; return 1; }
		case $want in
		own)	status=403 reason=own-address ;;
		dial)	status=502 reason=connect-failed ;;
		*)	echo "cases: bad expectation '$want' for $target" >&2
			return 1 ;;
		esac
		if ! grep -q "^HTTP/1\.1 $status " resp ||
		    ! grep -q "^X-Intutic-Error: $reason\$" resp; then
			echo "$2 $hp: expected $status $reason, got:" >&2
			cat resp >&2
			return 1
		fi
		echo "$target $PROXY_PORT $status $reason" >>expect
		n=$((n + 1))
	done <cases &&
	test "$n" -gt 0 &&
	audit_since "$n" &&
	python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("event") == "decision":
        print(r["host"], r["port"], r["status"], r["reason"])
' since.jsonl >got &&
	test_cmp expect got &&
	audit_expect "$n" event=close &&
	audit_expect 0 event=decision decision=allow reason=own-address &&
	after=$(proxy_metric intutic_connections_total) &&
	test "$after" = $((before + n + 1)) || {
		echo "the proxy accepted $((after - before - 1)) connections for $n cases" >&2
		return 1
	}
}

# with_proxy BIND: the proxy on BIND, on the port picked first, and the
# address its clients use.
with_proxy () {
	if test -n "${PROXY_PID:-}"; then
		stop_proxy || return 1
	fi
	start_proxy rules.yaml --bind "$1" --port "$SELF_PORT" &&
	test "$PROXY_PORT" = "$SELF_PORT" || return 1
	case $1 in
	::)	PROXY_HOST=::1
		PROXY_URL=http://[::1]:$PROXY_PORT ;;
	*)	PROXY_HOST=127.0.0.1 ;;
	esac
}

test_expect_success 'setup: rules that allow every case on the proxy'"'"'s port, the names' '
	SELF_PORT=$(free_port) &&
	{
		printf "version: 1\nallow:\n" &&
		printf "  - \"0.0.0.0/0:%s\"\n" "$SELF_PORT" &&
		printf "  - \"[::]/0:%s\"\n" "$SELF_PORT" &&
		sed "s/=.*//; s/.*/  - \"&:$SELF_PORT\"/" names
	} >rules.yaml &&
	"$INTUTIC" rules check rules.yaml &&
	# shellcheck disable=SC2046 # one NAME=ADDR a word
	write_hosts hosts $(cat names) &&
	test_line_count = 10 names &&
	"$INTUTIC" rules test rules.yaml "0.0.0.0:$SELF_PORT" >out &&
	test_grep "^decision: allow" out &&
	"$INTUTIC" rules test rules.yaml "[::1]:$SELF_PORT" >out &&
	test_grep "^decision: allow" out
'

test_expect_success 'bind 127.0.0.1: the proxy serves, and the rules let a case through to a real listener' '
	with_proxy 127.0.0.1 &&
	start_echo witness --bind "$EXTRA4" --port "$SELF_PORT" &&
	proxy_tcp --to "$EXTRA4:$SELF_PORT" --send ping --half-close >out &&
	printf ping >expect &&
	test_cmp expect out &&
	stop_server witness
'

test_expect_success 'bind 127.0.0.1: CONNECT to each case' '
	run_cases 3 connect
'

test_expect_success 'bind 127.0.0.1: absolute-form GET to each case' '
	run_cases 3 get
'

test_expect_success 'bind 0.0.0.0: CONNECT to each case' '
	with_proxy 0.0.0.0 &&
	run_cases 4 connect
'

test_expect_success 'bind 0.0.0.0: absolute-form GET to each case' '
	run_cases 4 get
'

test_expect_success 'bind 0.0.0.0: an address added while it runs is its own at once' '
	ip addr add 10.99.0.2/32 dev lo &&
	test_when_finished "ip addr del 10.99.0.2/32 dev lo" &&
	printf "CONNECT 10.99.0.2:%s HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n" \
		"$PROXY_PORT" >req &&
	send_req req &&
	test_grep "^X-Intutic-Error: own-address\$" resp
'

test_expect_success IPV6 'bind [::]: CONNECT to each case' '
	with_proxy :: &&
	run_cases 5 connect
'

test_expect_success IPV6 'bind [::]: absolute-form GET to each case' '
	run_cases 5 get
'

test_done
