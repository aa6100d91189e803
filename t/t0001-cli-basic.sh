#!/bin/sh
test_description='intutic: usage, help, version, unknown commands, start'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"

# The rule files used here are written in the scratch directory.

# config.h of the build: what configure decided, to compare `version` with.
test_lazy_prereq CONFIG_H 'test -f "$top_builddir/config.h"'

# config_h NAME — the string value of NAME in the build's config.h.
config_h () {
	sed -n "s/^#define $1 \"\\(.*\\)\"\$/\\1/p" "$top_builddir/config.h"
}

# --- usage and help -------------------------------------------------------------

test_expect_success 'no arguments: exit 2, usage on stderr' '
	test_expect_code 2 "$INTUTIC" >out 2>err &&
	test_must_be_empty out &&
	head -n 1 err >actual &&
	echo "usage: intutic COMMAND [ARG...]" >expect &&
	test_cmp expect actual
'

test_expect_success '--help: exit 0, usage on stdout with every command' '
	"$INTUTIC" --help >out 2>err &&
	test_must_be_empty err &&
	test_grep "^usage: intutic COMMAND \[ARG\.\.\.\]\$" out &&
	test_grep "^  start  +[a-z]" out &&
	test_grep "^  rules  +[a-z]" out &&
	test_grep "^  version  +[a-z]" out &&
	test_grep "^  help  +[a-z]" out
'

test_expect_success '-h and help print what --help prints' '
	"$INTUTIC" --help >expect &&
	"$INTUTIC" -h >out 2>err &&
	test_must_be_empty err &&
	test_cmp expect out &&
	"$INTUTIC" help >out 2>err &&
	test_must_be_empty err &&
	test_cmp expect out
'

test_expect_success 'no arguments prints the same usage as --help, to stderr' '
	"$INTUTIC" --help >expect &&
	test_expect_code 2 "$INTUTIC" 2>err &&
	test_cmp expect err
'

test_expect_success 'help rules and rules --help print the same text' '
	"$INTUTIC" help rules >expect 2>err &&
	test_must_be_empty err &&
	test_grep "^usage: intutic rules check \[FILE\.\.\.\]\$" expect &&
	test_grep "^       intutic rules test \[--json\] FILE HOST\[:PORT\] \[ADDRESS\.\.\.\]\$" expect &&
	"$INTUTIC" rules --help >out 2>err &&
	test_must_be_empty err &&
	test_cmp expect out &&
	"$INTUTIC" rules check -h >out 2>err &&
	test_must_be_empty err &&
	test_cmp expect out
'

test_expect_success 'help start and start --help print the same text' '
	"$INTUTIC" help start >expect &&
	test_grep "^usage: intutic start \[--rules FILE\]\$" expect &&
	"$INTUTIC" start --help >out &&
	test_cmp expect out
'

# The option names a text lists ("--NAME"), sorted, one a line.
option_names () {
	grep -o -- "--[a-z][a-z-]*" | sed "s/^--//" | sort -u
}

test_expect_success 'intutic-proxy: --help, its options list and intutic-proxy(8)'"'"'s SYNOPSIS name the same options; start knows each' '
	"$top_builddir/proxy/intutic-proxy" --help >help &&
	sed -n "1,/^\$/p" help | option_names >synopsis &&
	sed -n "/^\$/,\$p" help | sed -n "s/^  \(--[a-z-]*\).*/\1/p" |
		option_names >listed &&
	printf "%s\n" help version >>listed &&
	sort -o listed listed &&
	test_cmp synopsis listed &&
	sed -n "/^\.Sh SYNOPSIS/,/^\.Sh DESCRIPTION/p" \
		"$top_srcdir/man/intutic-proxy.8" | sed "s/\\\\-/--/g" |
		option_names >man &&
	test_cmp man synopsis &&
	test_line_count -gt 15 synopsis &&
	"$INTUTIC" start --help >start.help &&
	sed -n "/^Each PROXY-OPTION/,/^\$/p" start.help | option_names >start.listed &&
	grep -v -x -e help -e version -e rules synopsis >proxy.opts &&
	test_cmp proxy.opts start.listed
'

test_expect_success 'start passes every proxy option through, and knows which take a value' '
	printf "version: 1\nallow: []\n" >ok.yaml &&
	# the options --help lists with no value after them: flags
	sed -n "s/^  --\([a-z-]*\)  .*/\1/p" help >flags &&
	grep -qx debug flags &&
	for o in $(cat proxy.opts); do
		grep -qx -e "$o" flags && continue
		test_expect_code 2 "$INTUTIC" start --rules ok.yaml "--$o" 2>err ||
			return 1
		test_grep "needs" err || return 1
	done
'

test_expect_success 'help nope: exit 2, unknown command' '
	test_expect_code 2 "$INTUTIC" help nope >out 2>err &&
	test_must_be_empty out &&
	test_grep "^intutic: unknown command '\''nope'\''\$" err &&
	test_line_count = 2 err
'

test_expect_success 'help with two commands: exit 2' '
	test_expect_code 2 "$INTUTIC" help rules start >out 2>err &&
	test_must_be_empty out &&
	test_grep "^intutic: too many arguments\$" err
'

test_expect_success 'an unknown command: exit 2, one line naming it and --help' '
	test_expect_code 2 "$INTUTIC" x >out 2>err &&
	test_must_be_empty out &&
	cat >expect <<-\EOF &&
	intutic: unknown command '\''x'\''
	intutic: see intutic --help
	EOF
	test_cmp expect err
'

test_expect_success 'an unknown option: exit 2, one line naming it and --help' '
	test_expect_code 2 "$INTUTIC" --bogus >out 2>err &&
	test_must_be_empty out &&
	cat >expect <<-\EOF &&
	intutic: unknown option '\''--bogus'\''
	intutic: see intutic --help
	EOF
	test_cmp expect err
'

# --- version ------------------------------------------------------------------

test_expect_success 'version: intutic X.Y.Z, llhttp and its origin, libyaml' '
	"$INTUTIC" version >out 2>err &&
	test_must_be_empty err &&
	head -n 1 out >first &&
	test_grep "^intutic [0-9]+\.[0-9]+\.[0-9]+\$" first &&
	test_grep "^llhttp [0-9]+\.[0-9]+\.[0-9]+ \((system libllhttp|built from the sources of Debian'\''s node-llhttp)\)\$" out &&
	test_grep "^libyaml [0-9]+\.[0-9]+\.[0-9]+ \(built with [0-9]+\.[0-9]+\.[0-9]+\)\$" out
'

test_expect_success '--version prints what version prints' '
	"$INTUTIC" version >expect &&
	"$INTUTIC" --version >out 2>err &&
	test_must_be_empty err &&
	test_cmp expect out
'

test_expect_success CONFIG_H 'version names the version and llhttp origin configure chose' '
	"$INTUTIC" version >out &&
	echo "intutic $(config_h PACKAGE_VERSION)" >expect &&
	head -n 1 out >actual &&
	test_cmp expect actual &&
	case $(config_h LLHTTP_ORIGIN) in
	system)
		origin="system libllhttp" ;;
	*)
		origin="built from the sources of Debian'\''s node-llhttp" ;;
	esac &&
	echo "llhttp $(config_h LLHTTP_VERSION) ($origin)" >expect &&
	grep "^llhttp " out >actual &&
	test_cmp expect actual
'

test_expect_success 'version extra: exit 2' '
	test_expect_code 2 "$INTUTIC" version extra >out 2>err &&
	test_must_be_empty out &&
	test_grep "^intutic: too many arguments\$" err &&
	test_line_count = 2 err
'

# --- start ----------------------------------------------------------------------

test_expect_success 'setup: a good and a bad rule file' '
	printf "version: 1\nallow: [a.example.com, b.example.com]\n" >good.yaml &&
	printf "version: 1\nmode: loud\n" >bad.yaml
'

test_expect_success 'start --rules BADFILE: the loader error, exit 2' '
	test_expect_code 2 "$INTUTIC" start --rules bad.yaml >out 2>err &&
	test_must_be_empty out &&
	cat >expect <<-\EOF &&
	bad.yaml:2:7: found mode '\''loud'\'': expected enforce or report
	intutic: not starting: the rule file does not load
	EOF
	test_cmp expect err
'

test_expect_success 'start --rules=BADFILE and $INTUTIC_RULES=BADFILE: exit 2 too' '
	test_expect_code 2 "$INTUTIC" start --rules=bad.yaml >out 2>err &&
	test_grep "^bad\.yaml:2:7: found mode" err &&
	test_expect_code 2 env INTUTIC_RULES=bad.yaml "$INTUTIC" start >out 2>err &&
	test_grep "^bad\.yaml:2:7: found mode" err &&
	test_grep "^intutic: not starting: the rule file does not load\$" err
'

test_expect_success 'start --rules MISSING: cannot read, exit 2' '
	test_expect_code 2 "$INTUTIC" start --rules no-such.yaml >out 2>err &&
	test_must_be_empty out &&
	test_grep "^no-such\.yaml: cannot read: No such file or directory\$" err
'

# start with good rules runs the proxy: t4001-start-stop-status.sh, in a
# network namespace of its own.

test_expect_success 'start --bogus: exit 2' '
	test_expect_code 2 "$INTUTIC" start --bogus >out 2>err &&
	test_must_be_empty out &&
	test_grep "^intutic: start: unknown argument '\''--bogus'\''\$" err &&
	test_line_count = 2 err
'

test_expect_success 'start --rules without FILE: exit 2' '
	test_expect_code 2 "$INTUTIC" start --rules >out 2>err &&
	test_must_be_empty out &&
	test_grep "^intutic: start: --rules needs a FILE\$" err
'

# --- enforce container: the sandbox container's table ----------------------------

test_expect_success 'enforce container: the table a sandbox gets, policy drop, its rules in order' '
	"$INTUTIC" enforce container --proxy 10.88.0.1:3128 \
		--allow 10.99.0.7/24 --allow "[fd00::/8]:443" --dns 10.88.0.1:53 >out 2>err &&
	test_must_be_empty err &&
	# (the tabs that indent it go: <<- takes them off)
	cat >expect <<-\EOF &&
	table inet intutic {
		chain output {
			type filter hook output priority filter; policy drop;
			oif "lo" accept comment "loopback"
			ct state established,related accept comment "replies and related traffic of accepted connections"
			ip daddr 10.88.0.1 tcp dport 3128 accept comment "the proxy at 10.88.0.1:3128"
			ip daddr 10.88.0.1 tcp dport 53 accept comment "the resolver 10.88.0.1:53 tcp"
			ip daddr 10.88.0.1 udp dport 53 accept comment "the resolver 10.88.0.1:53 udp"
			ip daddr 10.99.0.0/24 accept comment "allowed: 10.99.0.0/24"
			ip6 daddr fd00::/8 tcp dport 443 accept comment "allowed: [fd00::/8]:443 tcp"
			ip6 daddr fd00::/8 udp dport 443 accept comment "allowed: [fd00::/8]:443 udp"
			icmpv6 type nd-neighbor-solicit accept comment "IPv6 neighbour discovery: nd-neighbor-solicit"
			icmpv6 type nd-neighbor-advert accept comment "IPv6 neighbour discovery: nd-neighbor-advert"
		}
	}
	EOF
	sed "s/^[[:space:]]*//" out >actual &&
	test_cmp expect actual &&
	"$INTUTIC" enforce container --proxy 10.88.0.1:3128 >out &&
	test_grep -v "icmpv6|resolver|allowed" out &&
	test_line_count = 8 out
'

test_expect_success 'enforce container: bad arguments, exit 2 and what is wrong' '
	for args in "" "--proxy 10.88.0.1" "--proxy 10.88.0.1:0" "--proxy x:80" \
	    "--proxy 10.88.0.1:3128 --allow 0.0.0.0/0" \
	    "--proxy 10.88.0.1:3128 --allow 10.0.0.0/33" \
	    "--proxy 10.88.0.1:3128 --dns 10.88.0.1" \
	    "--proxy 10.88.0.1:3128 --nope"
	do
		# shellcheck disable=SC2086 # the arguments are words
		test_expect_code 2 "$INTUTIC" enforce container $args >out 2>err ||
			{ echo "for: $args" >&2; return 1; }
		test_must_be_empty out || return 1
		test_grep "^intutic: enforce( container)?: " err || return 1
	done &&
	test_expect_code 2 "$INTUTIC" enforce container --allow 10.0.0.0/8 2>err &&
	test_grep "proxy ADDR:PORT is required" err &&
	test_expect_code 2 "$INTUTIC" enforce container --proxy 10.88.0.1:3128 \
		--allow 0.0.0.0/0 2>err &&
	test_grep "would let everything out" err
'

test_done
