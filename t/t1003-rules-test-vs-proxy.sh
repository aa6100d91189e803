#!/bin/sh
test_description='rules test vs the proxy: names with several addresses, both asked, the same answer'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl

# Each case (the table below) is a name with several addresses in the
# proxy's hosts file.  `intutic rules test` is given the same addresses in
# the same order as ADDRESS operands, the real proxy is asked for the name
# (a CONNECT tunnel and an absolute-form GET), and both must say the same:
# allow or deny, the same reason, the same address dialled (none in
# enforce mode when denied), the same deciding entry (none for
# internal-address: not the entry that allowed the name), and when refused
# the same refused addresses (the proxy's decision record names them in
# addr).  The proxy's side is judged by what the servers received: a
# witness origin listens on every address of the table, on the test's
# ports, so an address dialled that should not have been shows in its log.
#
# Every address here is on lo of the test's own namespace (test_isolate_
# netns: nothing but lo), so nothing dialled can leave it.  The public ones
# are public in class only (intutic-rules(5), ADDRESSES); setup checks that
# `rules test` classifies each as the table needs.

PUB_A=100.128.0.1	# public
PUB_B=100.128.0.2	# public
DENY_A=100.128.0.66	# public, in the deny block 100.128.0.64/26
LOOP=127.0.0.1		# loopback
PRIV_A=10.0.0.1		# private
PRIV_B=192.168.1.1	# private; the allow block 192.168.1.0/24 on PORT2
PUB6=2a01:db8:100::1	# public
DENY6=2a01:db8:100::66	# public, denied by [2a01:db8:100::66]/128
LOOP6=::1		# loopback
ULA6=fd00::1		# unique-local
MAPLOOP=::ffff:127.0.0.1	# loopback, IPv4-mapped (no witness of its own:
			# dialled, it would reach LOOP's)

V4_WITNESSES="PUB_A PUB_B DENY_A LOOP PRIV_A PRIV_B"
V6_WITNESSES="PUB6 DENY6 LOOP6 ULA6"
PORT2_WITNESSES="PUB_A PRIV_A PRIV_B"

# The cases, one a line:
#   MODE PREREQ NAME PORT ADDRESSES EXPECT...
# MODE enforce or report (the rule file the proxy runs with); PREREQ a
# prerequisite or "-"; NAME the name asked for; PORT "P" (every entry
# applies) or "P2" (192.168.1.0/24 is allowed too); ADDRESSES the symbols
# above, in hosts-file order, comma-separated; EXPECT "VERDICT REASON DIAL":
# what both must say, DIAL the symbol of the address dialled or "-".
CASES='
enforce - pub-loop.multi.test P PUB_A,LOOP allow allowed PUB_A
enforce - loop-pub.multi.test P LOOP,PUB_A allow allowed PUB_A
enforce - priv-priv.multi.test P PRIV_A,PRIV_B deny internal-address -
enforce - loop-priv-pub.multi.test P LOOP,PRIV_A,PUB_B allow allowed PUB_B
enforce - pub-pub.multi.test P PUB_A,PUB_B allow allowed PUB_A
enforce - pub-pub-b.multi.test P PUB_B,PUB_A allow allowed PUB_B
enforce - deny-pub.multi.test P DENY_A,PUB_B allow allowed PUB_B
enforce - deny-loop.multi.test P DENY_A,LOOP deny denied -
enforce - loop-deny.multi.test P LOOP,DENY_A deny internal-address -
enforce - pub-deny.multi.test P PUB_A,DENY_A allow allowed PUB_A
enforce - block-port2.multi.test P2 PRIV_A,PRIV_B allow allowed PRIV_B
enforce - block-port.multi.test P PRIV_A,PRIV_B deny internal-address -
enforce - block-first.multi.test P2 PRIV_B,PUB_A allow allowed PRIV_B
enforce IPV6 v6-v4.multi.test P PUB6,PUB_A allow allowed PUB_A
enforce IPV6 v6-loop.multi.test P PUB6,LOOP allow allowed PUB6
enforce IPV6 loop6-pub.multi.test P LOOP6,PUB_A allow allowed PUB_A
enforce IPV6 loop-ula-loop6.multi.test P LOOP,ULA6,LOOP6 deny internal-address -
enforce IPV6 deny6-pub6.multi.test P DENY6,PUB6 allow allowed PUB6
enforce IPV6 deny6-loop.multi.test P DENY6,LOOP deny internal-address -
enforce IPV6 maploop-pub6.multi.test P MAPLOOP,PUB6 allow allowed PUB6
enforce IPV6 maploop-ula.multi.test P MAPLOOP,ULA6 deny internal-address -
enforce - unlisted.other.test P PUB_A,LOOP deny not-allowlisted -
report - rep-priv.multi.test P PRIV_A,PRIV_B deny internal-address PRIV_A
report - rep-loop-pub.multi.test P LOOP,PUB_A allow allowed PUB_A
report - rep-deny-priv.multi.test P DENY_A,PRIV_B deny denied DENY_A
report - unlisted-b.other.test P LOOP,PUB_A deny not-allowlisted PUB_A
report IPV6 v6-priv.other.test P PUB6,PRIV_A deny not-allowlisted PUB6
'
# (The last line is a name the report rules do not list, with its only
# allowed address IPv6 behind a refused IPv4 one: the name keeps its
# reason, the IPv6 address is dialled.)

# addr_of SYMBOL: the address a symbol stands for.
addr_of () {
	eval "printf '%s\n' \"\$$1\""
}

# --- the namespace's addresses --------------------------------------------------

test_addr_dev_
ok=1
for sym in PUB_A PUB_B DENY_A PRIV_A PRIV_B; do
	ip addr add "$(addr_of $sym)/32" dev "$ADDR_DEV" || ok=
done
test -n "$ok" && test_set_prereq ADDRS
ok=1
for sym in PUB6 DENY6 ULA6; do
	ip -6 addr add "$(addr_of $sym)/128" dev "$ADDR_DEV" nodad 2>/dev/null || ok=
done
test -n "$ok" && ip -6 addr show dev lo | grep -q 'inet6 ::1/128' &&
	test_set_prereq IPV6

# --- the rule files -------------------------------------------------------------

# write_rules FILE MODE: the rules of the table (line numbers matter to
# nobody: both sides name entries as FILE:LINE of the same file).
write_rules () {
	{
		echo "version: 1"
		echo "mode: $2"
		echo "ports: [$PORT, $PORT2]"
		echo "allow:"
		echo "  - \"**.multi.test\""
		echo "  - \"192.168.1.0/24:$PORT2\""
		echo "deny:"
		echo "  - 100.128.0.64/26"
		echo "  - \"[2a01:db8:100::66]/128\""
	} >"$1"
}

# --- asking both ------------------------------------------------------------------

# cli_ask NAME PORT ADDRESS...: `intutic rules test` with the rules the
# proxy runs; its answer in CLI_VERDICT, CLI_REASON, CLI_DIAL (an address,
# or "-") and CLI_RULE (FILE:LINE or "-"), its output in cli.out.
cli_ask () {
	cli_host_=$1:$2
	shift 2
	"$INTUTIC" rules test "$RULES" "$cli_host_" "$@" >cli.out 2>cli.err
	cli_code_=$?
	case $cli_code_ in
	0|1)	;;
	*)	echo "rules test exited $cli_code_:" >&2
		cat cli.out cli.err >&2
		return 1 ;;
	esac
	CLI_VERDICT=$(sed -n 's/^decision: //p' cli.out)
	CLI_REASON=$(sed -n 's/^reason:   //p' cli.out)
	CLI_DIAL=$(sed -n 's/^dial:     //p' cli.out)
	CLI_RULE=$(sed -n 's/^rule:     \([^ ]*\).*/\1/p' cli.out)
	# The addresses it refused, sorted, comma-separated ("-": none).
	CLI_REFUSED=$(sed -n 's/^address:  \([^ ]*\) .*: deny .*/\1/p' cli.out |
		tr -d '[]' | sort | paste -sd, -)
	: "${CLI_REFUSED:=-}"
	: "${CLI_DIAL:=-}"
	if test -z "$CLI_VERDICT" || test -z "$CLI_REASON" || test -z "$CLI_RULE"; then
		echo "rules test said no decision, reason or rule:" >&2
		cat cli.out >&2
		return 1
	fi
	# Its exit status says the same as its decision: line.
	if test "$CLI_VERDICT" = allow; then
		test "$cli_code_" = 0
	else
		test "$cli_code_" = 1
	fi || {
		echo "rules test: decision $CLI_VERDICT but exit $cli_code_" >&2
		return 1
	}
}

# witnesses_mark / witnesses_got: the request lines every witness logged
# since the mark, "NAME: GET ..." lines, in got.lines.
witnesses_mark () {
	for w_ in $WITNESSES; do
		server_mark "$w_" || return 1
	done
}
witnesses_got () {
	: >got.lines
	for w_ in $WITNESSES; do
		server_since "$w_" || return 1
		grep "^$w_: " "$w_.new" >>got.lines
	done
	return 0
}

# proxy_ask FORM NAME PORT: the proxy asked for NAME:PORT, FORM connect (a
# CONNECT tunnel, then a GET in it) or http (an absolute-form GET).  Its
# answer in PROXY_STATUS, PROXY_ERROR (X-Intutic-Error, "-" for none),
# PROXY_ORIGIN (X-Origin: the witness that answered, "-" for none), and
# from the audit log's decision record PROXY_VERDICT, PROXY_REASON,
# PROXY_ADDR and PROXY_RULE ("-" for null).
proxy_ask () {
	rm -f head.raw body
	audit_mark &&
	witnesses_mark || return 1
	if test "$1" = connect; then
		proxy_curl -p -D head.raw -o body "http://$2:$3/" 2>curl.err
	else
		proxy_curl -D head.raw -o body "http://$2:$3/" 2>curl.err
	fi
	tr -d '\r' <head.raw >head.txt
	# The last answer: a CONNECT's 200 comes before the origin's.
	PROXY_STATUS=$(sed -n 's/^HTTP\/1\.1 \([0-9]*\).*/\1/p' head.txt | tail -n 1)
	PROXY_ERROR=$(sed -n 's/^X-Intutic-Error: //p' head.txt | tail -n 1)
	PROXY_ORIGIN=$(sed -n 's/^X-Origin: //p' head.txt | tail -n 1)
	: "${PROXY_ERROR:=-}" "${PROXY_ORIGIN:=-}"
	test -n "$PROXY_STATUS" || {
		echo "no answer from the proxy:" >&2
		cat curl.err >&2
		return 1
	}
	audit_conn || return 1
	# shellcheck disable=SC2046 # four words, none empty
	set -- $(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("event") == "decision":
        print(*[r.get(k) or "-" for k in ("decision", "reason", "addr", "rule")])
' since.jsonl)
	test $# = 4 || { echo "no decision record:" >&2; cat since.jsonl >&2; return 1; }
	PROXY_VERDICT=$1 PROXY_REASON=$2 PROXY_ADDR=$3 PROXY_RULE=$4
	witnesses_got
}

# same WHAT CLI PROXY: the two sides say the same.
same () {
	test "$2" = "$3" && return 0
	echo "$1: rules test says '$2', the proxy '$3'" >&2
	return 1
}

# check_case: the case in CASE_* (see the loop below).
check_case () {
	# The addresses, in hosts-file order, as rules test's operands.
	set --
	for sym in $(echo "$CASE_ADDRS" | tr ',' ' '); do
		set -- "$@" "$(addr_of "$sym")"
	done
	cli_ask "$CASE_NAME" "$CASE_PORT" "$@" || return 1
	want_dial=-
	test "$CASE_DIAL" = - || want_dial=$(addr_of "$CASE_DIAL")
	# rules test says what the table says ...
	test "$CLI_VERDICT $CLI_REASON $CLI_DIAL" = \
	    "$CASE_VERDICT $CASE_REASON $want_dial" || {
		echo "rules test: '$CLI_VERDICT $CLI_REASON $CLI_DIAL'," \
		    "want '$CASE_VERDICT $CASE_REASON $want_dial'; it printed:" >&2
		cat cli.out >&2
		return 1
	}
	# ... and the proxy, asked both ways, says what rules test says.
	for form in connect http; do
		proxy_ask "$form" "$CASE_NAME" "$CASE_PORT" &&
		same "$form: decision" "$CLI_VERDICT" "$PROXY_VERDICT" &&
		same "$form: reason" "$CLI_REASON" "$PROXY_REASON" || return 1
		same "$form: deciding entry" "$CLI_RULE" "$PROXY_RULE" ||
			return 1
		if test "$CLI_DIAL" = -; then
			# Refused, the refused addresses named, and nothing
			# reached any address.
			proxy_refused_=$(echo "$PROXY_ADDR" | tr , "\n" | sort |
				paste -sd, -) &&
			same "$form: refused addresses (audit addr)" \
				"$CLI_REFUSED" "$proxy_refused_" &&
			same "$form: status" 403 "$PROXY_STATUS" &&
			same "$form: X-Intutic-Error" "$CLI_REASON" "$PROXY_ERROR" &&
			test_must_be_empty got.lines || return 1
			continue
		fi
		# Dialled: exactly one request arrived, at that address.
		same "$form: status" 200 "$PROXY_STATUS" &&
		same "$form: address dialled (audit addr)" "$CLI_DIAL" "$PROXY_ADDR" &&
		same "$form: address that answered (X-Origin)" "$CLI_DIAL" \
		    "$(addr_of "${PROXY_ORIGIN%.2}")" &&
		test_line_count = 1 got.lines &&
		test_grep "^$PROXY_ORIGIN: GET / HTTP/1\\.1 host=$CASE_NAME:$CASE_PORT\$" \
			got.lines || return 1
	done
}

# --- setup --------------------------------------------------------------------------

test_expect_success ADDRS 'setup: witnesses on every address, both ports; the names; the rules' '
	start_origin PUB_A --bind "$PUB_A" &&
	PORT=$PUB_A_PORT &&
	PORT2=$(free_port) &&
	WITNESSES=PUB_A &&
	for w in $V4_WITNESSES; do
		test "$w" = PUB_A && continue
		start_origin "$w" --bind "$(addr_of $w)" --port "$PORT" || return 1
		WITNESSES="$WITNESSES $w"
	done &&
	if test_have_prereq IPV6; then
		for w in $V6_WITNESSES; do
			start_origin "$w" --bind "$(addr_of $w)" --port "$PORT" ||
				return 1
			WITNESSES="$WITNESSES $w"
		done
	fi &&
	for w in $PORT2_WITNESSES; do
		start_origin "$w.2" --bind "$(addr_of $w)" --port "$PORT2" ||
			return 1
		WITNESSES="$WITNESSES $w.2"
	done &&
	echo "$CASES" | awk "NF { print \$3 }" | sort | uniq -d >dups &&
	test_must_be_empty dups &&
	hosts= &&
	for name_addrs in $(echo "$CASES" | awk "NF { print \$3 \"=\" \$5 }"); do
		for sym in $(echo "${name_addrs#*=}" | tr "," " "); do
			hosts="$hosts ${name_addrs%%=*}=$(addr_of $sym)"
		done
	done &&
	write_hosts hosts $hosts &&
	write_rules "$PWD/enforce.yaml" enforce &&
	write_rules "$PWD/report.yaml" report &&
	RULES=$PWD/enforce.yaml &&
	"$INTUTIC" rules check "$RULES" "$PWD/report.yaml" &&
	start_proxy "$RULES" &&
	test "$PROXY_PORT" != "$PORT" && test "$PROXY_PORT" != "$PORT2"
'

# literal SYMBOL: the address as a HOST operand (IPv6 in brackets).
literal () {
	case $(addr_of "$1") in
	*:*)	printf '[%s]\n' "$(addr_of "$1")" ;;
	*)	addr_of "$1" ;;
	esac
}

test_expect_success ADDRS 'setup: rules test classifies the addresses as the table says' '
	for sym in PUB_A PUB_B DENY_A PUB6 DENY6; do
		"$INTUTIC" rules test "$RULES" "$(literal $sym)" >out
		test_grep "^class:    public\$" out || return 1
	done &&
	for sym in LOOP LOOP6 MAPLOOP PRIV_A PRIV_B ULA6; do
		"$INTUTIC" rules test "$RULES" "$(literal $sym)" >out
		test_grep "^class:    " out &&
		test_grep -v "^class:    public\$" out || return 1
	done
'

test_expect_success ADDRS 'the hosts file names several addresses, in the table order' '
	test "$(grep -c " loop-priv-pub\\.multi\\.test\$" hosts)" = 3 &&
	grep " loop-priv-pub\\.multi\\.test\$" hosts >lines &&
	printf "%s loop-priv-pub.multi.test\n" "$LOOP" "$PRIV_A" "$PUB_B" >expect &&
	test_cmp expect lines
'

# --- the cases ------------------------------------------------------------------------

# run_cases MODE: one test per case of MODE.
run_cases () {
	echo "$CASES" | awk -v mode="$1" '$1 == mode' >cases.now
	while read -r CASE_MODE CASE_PREREQ CASE_NAME CASE_PORT CASE_ADDRS \
	    CASE_VERDICT CASE_REASON CASE_DIAL; do
		prereq=ADDRS
		test "$CASE_PREREQ" = - || prereq="$prereq,$CASE_PREREQ"
		case $CASE_PORT in
		P)	CASE_PORT=$PORT ;;
		P2)	CASE_PORT=$PORT2 ;;
		esac
		test_expect_success "$prereq" \
		    "$CASE_MODE: $CASE_NAME at $CASE_ADDRS: $CASE_VERDICT $CASE_REASON, dial $CASE_DIAL" \
		    'check_case' </dev/null
	done <cases.now
}

# (cases.now is written in the current directory, the scratch one.)
run_cases enforce

test_expect_success ADDRS 'setup: the proxy again, with the same rules in report mode' '
	stop_proxy &&
	RULES=$PWD/report.yaml &&
	start_proxy "$RULES"
'

run_cases report

test_done
