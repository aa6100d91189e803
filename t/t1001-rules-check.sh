#!/bin/sh
test_description='rules check: every loader error, exit codes and messages'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"

# Each t/data/rules/bad/NAME.yaml is one broken rule file whose first line
# is "# expect: LINE": LINE is exactly what `intutic rules check NAME.yaml`,
# run in that directory, prints on stderr.  Files that are only included by
# those live in bad/inc/ (or start with "# helper:") and are not checked on
# their own.  The source tree may be read-only (distcheck): the cases are
# read in place, and everything this script writes goes to the scratch
# directory.

BAD=$TEST_DATA/rules/bad

# run_check DIR FILE... — `rules check FILE...` run in DIR; its stdout and
# stderr in ./out and ./err, its exit status returned.
run_check () {
	run_check_dir=$1
	shift
	(cd "$run_check_dir" && exec "$INTUTIC" rules check "$@") >out 2>err
}

test_expect_success 'the loader error cases are there' '
	ls "$BAD"/*.yaml >cases &&
	test_line_count -ge 60 cases
'

for test_case in "$BAD"/*.yaml; do
	test -f "$test_case" || continue
	name=${test_case##*/}
	read -r first_line <"$test_case" || first_line=
	case $first_line in
	'# expect: '?*)
		test_expect_success "$name" '
			sed -n "1s/^# expect: //p" "$BAD/$name" >expect &&
			test_expect_code 1 run_check "$BAD" "$name" &&
			test_must_be_empty out &&
			test_cmp expect err
		'
		;;
	'# helper:'*)
		;;
	*)
		test_expect_success "$name: first line is an expect or a helper comment" '
			echo "$BAD/$name: first line: $first_line" >&2 &&
			false
		'
		;;
	esac
done

# --- the shipped rule files --------------------------------------------------

for name in default.yaml agents.yaml providers.yaml; do
	test_expect_success "the shipped $name passes" '
		run_check "$top_srcdir/rules" "$name" &&
		test_must_be_empty err &&
		test_line_count = 1 out &&
		test_grep "^$name: ok \([1-9][0-9]* entries, [1-9][0-9]* providers, mode enforce\)\$" out
	'
done

# --- several files, unreadable files -----------------------------------------

test_expect_success 'good and bad files at once: every error, every ok line, exit 1' '
	printf "version: 1\nallow: [a.example.com, b.example.com]\n" >good-a.yaml &&
	printf "version: 1\nmode: loud\n" >bad-a.yaml &&
	printf "version: 1\nmode: report\ndeny: [c.example.com]\n" >good-b.yaml &&
	printf "version: 1\nallow:\n  - \"*\"\n" >bad-b.yaml &&
	test_expect_code 1 run_check . good-a.yaml bad-a.yaml good-b.yaml bad-b.yaml &&
	cat >expect.out <<-\EOF &&
	good-a.yaml: ok (2 entries, 0 providers, mode enforce)
	good-b.yaml: ok (1 entry, 0 providers, mode report)
	EOF
	cat >expect.err <<-\EOF &&
	bad-a.yaml:2:7: found mode '\''loud'\'': expected enforce or report
	bad-b.yaml:3:5: allow entry '\''*'\'': a wildcard alone would allow every name: name a domain ('\''*.example.com'\'')
	EOF
	test_cmp expect.out out &&
	test_cmp expect.err err
'

test_expect_success 'all good files: exit 0, one ok line each' '
	printf "version: 1\n" >empty-rules.yaml &&
	printf "version: 1\nallow: [a.example.com]\n" >one.yaml &&
	run_check . empty-rules.yaml one.yaml &&
	test_must_be_empty err &&
	cat >expect <<-\EOF &&
	empty-rules.yaml: ok (0 entries, 0 providers, mode enforce)
	one.yaml: ok (1 entry, 0 providers, mode enforce)
	EOF
	test_cmp expect out
'

test_expect_success 'a missing file: cannot read, exit 1' '
	test_expect_code 1 run_check . no-such-file.yaml &&
	test_must_be_empty out &&
	echo "no-such-file.yaml: cannot read: No such file or directory" >expect &&
	test_cmp expect err
'

test_expect_success 'a directory: not a regular file, exit 1' '
	mkdir dir.yaml &&
	test_expect_code 1 run_check . dir.yaml &&
	test_must_be_empty out &&
	echo "dir.yaml: cannot read: not a regular file" >expect &&
	test_cmp expect err
'

# 32 MiB of spaces with a rule file's first line written over the start:
# a valid file of exactly the largest size (the comment runs to its end).
test_expect_success 'a file of exactly 32 MiB loads' '
	dd if=/dev/zero bs=1048576 count=32 2>/dev/null | tr "\000" " " >max.yaml &&
	printf "version: 1\n#" | dd of=max.yaml conv=notrunc 2>/dev/null &&
	test "$(wc -c <max.yaml)" -eq 33554432 &&
	run_check . max.yaml &&
	test_must_be_empty err &&
	echo "max.yaml: ok (0 entries, 0 providers, mode enforce)" >expect &&
	test_cmp expect out
'

test_expect_success 'a file one byte over 32 MiB: file too large, exit 1' '
	test_when_finished "rm -f big.yaml max.yaml" &&
	cp max.yaml big.yaml &&
	printf " " >>big.yaml &&
	test "$(wc -c <big.yaml)" -eq 33554433 &&
	test_expect_code 1 run_check . big.yaml &&
	test_must_be_empty out &&
	echo "big.yaml: cannot read: file too large (at most 32 MiB)" >expect &&
	test_cmp expect err
'

# --- which file, without FILE ------------------------------------------------

test_expect_success 'setup: a good and a bad rule file' '
	printf "version: 1\nallow: [a.example.com]\n" >good.yaml &&
	printf "version: 1\nallow: [a.example.com]\nalow: []\n" >bad.yaml
'

test_expect_success 'no FILE: checks $INTUTIC_RULES (good)' '
	env INTUTIC_RULES=good.yaml "$INTUTIC" rules check >out 2>err &&
	test_must_be_empty err &&
	echo "good.yaml: ok (1 entry, 0 providers, mode enforce)" >expect &&
	test_cmp expect out
'

test_expect_success 'no FILE: checks $INTUTIC_RULES (bad), exit 1' '
	test_expect_code 1 env INTUTIC_RULES=bad.yaml "$INTUTIC" rules check \
		>out 2>err &&
	test_must_be_empty out &&
	echo "bad.yaml:3:1: unknown key '\''alow'\'' (expected version, mode, ports, allow, deny, include, providers or gateway)" >expect &&
	test_cmp expect err
'

test_expect_success 'no FILE: $XDG_CONFIG_HOME/intutic/rules.yaml when $INTUTIC_RULES is unset' '
	mkdir -p xdg/intutic &&
	cp good.yaml xdg/intutic/rules.yaml &&
	(
		unset INTUTIC_RULES &&
		XDG_CONFIG_HOME=$PWD/xdg &&
		export XDG_CONFIG_HOME &&
		exec "$INTUTIC" rules check
	) >out 2>err &&
	test_must_be_empty err &&
	echo "$PWD/xdg/intutic/rules.yaml: ok (1 entry, 0 providers, mode enforce)" >expect &&
	test_cmp expect out
'

test_expect_success 'no FILE: $INTUTIC_RULES wins over $XDG_CONFIG_HOME' '
	test_expect_code 1 env XDG_CONFIG_HOME="$PWD/xdg" INTUTIC_RULES=bad.yaml \
		"$INTUTIC" rules check >out 2>err &&
	test_must_be_empty out &&
	test_grep "^bad\.yaml:3:1: unknown key" err
'

# --- usage --------------------------------------------------------------------

test_expect_success 'rules check -x: exit 2, usage on stderr' '
	test_expect_code 2 run_check . -x &&
	test_must_be_empty out &&
	test_grep "^intutic: rules: unknown option '\''-x'\''\$" err &&
	test_grep "^intutic: see intutic rules --help\$" err &&
	test_line_count = 2 err
'

test_expect_success 'rules check -- -name.yaml: a file name that starts with a dash' '
	cp good.yaml ./-name.yaml &&
	run_check . -- -name.yaml &&
	test_must_be_empty err &&
	printf "%s\n" "-name.yaml: ok (1 entry, 0 providers, mode enforce)" >expect &&
	test_cmp expect out
'

# --- positions of reader errors, escaping, "--" ------------------------------

# libyaml reports reader errors (control characters, bad UTF-8) with a byte
# offset, not a mark; the loader prints the unset mark, 1:1.
test_expect_success 'a control character is reported at its own line' '
	printf "version: 1\nallow:\n  - exa\001mple.com\n" >ctrl.yaml &&
	test_expect_code 1 run_check . ctrl.yaml &&
	test_grep "^ctrl\.yaml:3:" err
'

test_expect_success 'invalid UTF-8 is reported at its own line' '
	printf "version: 1\nallow:\n  - b\374cher.de\n" >latin1.yaml &&
	test_expect_code 1 run_check . latin1.yaml &&
	test_grep "^latin1\.yaml:3:" err
'

# Text from a rule file is quoted with control bytes escaped (\xHH): a
# newline cannot split the one-line FILE:LINE:COL: message, and no escape
# sequence reaches the terminal.
test_expect_success 'control characters in a quoted entry are escaped' '
	printf "version: 1\nallow:\n  - \"a\\\\nb\\\\e[31m.example.com\"\n" >esc.yaml &&
	test_expect_code 1 run_check . esc.yaml &&
	test_line_count = 1 err &&
	test_grep -v "$(printf "\033")" err &&
	test_grep -F "'\''a\x0ab\x1b[31m.example.com'\''" err
'

test_expect_success 'control characters in an include name are escaped' '
	printf "version: 1\ninclude: [\"a\\\\nb\\\\e[31m.yaml\"]\n" >esc-include.yaml &&
	test_expect_code 1 run_check . esc-include.yaml &&
	test_line_count = 1 err &&
	test_grep -v "$(printf "\033")" err
'

test_expect_success 'control characters in a YAML tag are escaped' '
	printf "version: 1\nallow:\n  - !<%%0a%%1b[31m> a.example.com\n" >esc-tag.yaml &&
	test_expect_code 1 run_check . esc-tag.yaml &&
	test_line_count = 1 err &&
	test_grep -v "$(printf "\033")" err
'

# "--" ends the options anywhere (no_options stops there), but only a "--"
# right after the subcommand is removed; elsewhere it is taken as a FILE.
test_expect_success 'rules check FILE -- FILE: the -- is not a file' '
	cp good.yaml ./-name.yaml &&
	run_check . good.yaml -- -name.yaml &&
	test_must_be_empty err
'

test_done
