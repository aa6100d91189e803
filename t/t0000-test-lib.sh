#!/bin/sh
test_description='the test library: TAP output, scratch directories, prerequisites, helpers'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"

# Most tests here write a small test script, run it with the shell running
# this one, and compare what it printed.  The nested scripts get their own
# build tree inside this script's scratch directory, so their scratch
# directories never meet ours.  Their test bodies are in double quotes
# because this file's bodies are in single quotes.

SUB_BUILD=$TRASH_DIRECTORY/build
OUTER=$TRASH_DIRECTORY
export OUTER

# write_sub NAME < SCRIPT — the script sources the library itself.
write_sub () {
	{
		echo '#!/bin/sh'
		cat
	} >"$1.sh"
}

# run_sub NAME [ARGS...] — NAME.out, NAME.err, and NAME.exit (its status).
run_sub () {
	run_sub_name=$1
	shift
	top_builddir=$SUB_BUILD TEST_VERBOSE='' \
		"$TEST_SHELL_PATH" "./$run_sub_name.sh" "$@" \
		>"$run_sub_name.out" 2>"$run_sub_name.err"
	echo $? >"$run_sub_name.exit"
}

# tap_lines NAME — the nested script's TAP without its diagnostics.
tap_lines () {
	grep -v '^#' "$1.out"
}

test_expect_success 'a passing script prints ok lines, the plan last, and exits 0' '
	write_sub pass <<-\EOF &&
	. "$top_srcdir/t/lib-test.sh"
	test_expect_success "first" "true"
	test_expect_success "second" "echo noise && echo more noise >&2"
	test_done
	EOF
	run_sub pass &&
	cat >expect <<-\EOF &&
	ok 1 - first
	ok 2 - second
	1..2
	# passed 2, failed 0, skipped 0, known breakage 0
	EOF
	test_cmp expect pass.out &&
	echo 0 >expect &&
	test_cmp expect pass.exit
'

test_expect_success 'a failing test prints not ok and the script exits 1' '
	write_sub fail <<-\EOF &&
	. "$top_srcdir/t/lib-test.sh"
	test_expect_success "good" "true"
	test_expect_success "bad" "
		echo to-stdout &&
		echo oops-on-stderr >&2 &&
		false
	"
	test_expect_success "good again" "true"
	test_done
	EOF
	run_sub fail &&
	cat >expect <<-\EOF &&
	ok 1 - good
	not ok 2 - bad
	ok 3 - good again
	1..3
	EOF
	tap_lines fail >actual &&
	test_cmp expect actual &&
	echo 1 >expect &&
	test_cmp expect fail.exit &&
	test_grep "^# passed 2, failed 1, skipped 0, known breakage 0$" fail.out
'

test_expect_success 'a failed test shows its body, status and output as diagnostics' '
	test_grep "^# +false$" fail.out &&
	test_grep "^# exit status 1$" fail.out &&
	test_grep "^#   to-stdout$" fail.out &&
	test_grep "^#   oops-on-stderr$" fail.out
'

test_expect_success 'output of a passing test stays out of the TAP stream' '
	write_sub quiet <<-\EOF &&
	. "$top_srcdir/t/lib-test.sh"
	test_expect_success "chatty" "echo ok 99 - fake && echo not ok 98 >&2"
	test_done
	EOF
	run_sub quiet &&
	test_grep -v "99|98" quiet.out &&
	test_must_be_empty quiet.err
'

test_expect_success '-v shows the output of passing tests as diagnostics' '
	run_sub quiet -v &&
	test_grep "^#   ok 99 - fake$" quiet.out &&
	test_grep "^#   not ok 98$" quiet.out &&
	test_grep -v "^ok 99" quiet.out
'

test_expect_success 'a missing prerequisite skips the test as SKIP' '
	write_sub prereq <<-\EOF &&
	. "$top_srcdir/t/lib-test.sh"
	test_set_prereq HAVE
	test_lazy_prereq LAZY_NO "false"
	test_expect_success HAVE "has it" "true"
	test_expect_success NOPE "lacks it" "false"
	test_expect_success !NOPE "negated" "true"
	test_expect_success HAVE,LAZY_NO,!HAVE "several" "false"
	test_done
	EOF
	run_sub prereq &&
	cat >expect <<-\EOF &&
	ok 1 - has it
	ok 2 # SKIP lacks it (missing NOPE)
	ok 3 - negated
	ok 4 # SKIP several (missing LAZY_NO,!HAVE)
	1..4
	EOF
	tap_lines prereq >actual &&
	test_cmp expect actual &&
	test_grep "^# passed 2, failed 0, skipped 2, known breakage 0$" prereq.out &&
	echo 0 >expect &&
	test_cmp expect prereq.exit
'

test_expect_success 'a lazy prerequisite is evaluated once' '
	write_sub lazy <<-\EOF &&
	. "$top_srcdir/t/lib-test.sh"
	test_lazy_prereq COUNTED "echo run >>\"\$OUTER/lazy.count\""
	test_expect_success COUNTED "one" "true"
	test_expect_success COUNTED "two" "true"
	test_expect_success "in a body" "test_have_prereq COUNTED"
	test_done
	EOF
	rm -f lazy.count &&
	run_sub lazy &&
	test_line_count = 1 lazy.count &&
	test_grep "^# passed 3, failed 0" lazy.out
'

test_expect_success 'built-in prerequisites agree with the machine' '
	if test "$(id -u)" = 0 && grep -Eq "^ +0 +0 +4294967295\$" /proc/self/uid_map
	then
		test_have_prereq ROOT
	else
		test_have_prereq !ROOT
	fi &&
	if command -v python3 >/dev/null
	then
		test_have_prereq PYTHON
	else
		test_have_prereq !PYTHON
	fi &&
	if test_have_prereq NETNS
	then
		test_have_prereq ROOT
	else
		:
	fi
'

test_expect_success USERNS 'the root a user namespace maps is not ROOT, and test_require_root skips' '
	write_sub mapped <<-\EOF &&
	. "$top_srcdir/t/lib-test.sh"
	test_expect_success "uid 0 in here" "test \"\$(id -u)\" = 0"
	test_expect_success "not ROOT" "test_have_prereq !ROOT"
	test_done
	EOF
	write_sub mappedroot <<-\EOF &&
	. "$top_srcdir/t/lib-test.sh"
	test_require_root "the machine itself"
	test_expect_success "never runs" "false"
	test_done
	EOF
	top_builddir=$SUB_BUILD TEST_VERBOSE= unshare --user --map-root-user \
		"$TEST_SHELL_PATH" ./mapped.sh >mapped.out 2>mapped.err &&
	test_grep "^# passed 2, failed 0" mapped.out &&
	{
		top_builddir=$SUB_BUILD TEST_VERBOSE= unshare --user --map-root-user \
			"$TEST_SHELL_PATH" ./mappedroot.sh >mappedroot.out 2>&1 ||
		echo "exit $?" >>mappedroot.out
	} &&
	test_grep "^1\.\.0 # SKIP needs root \(the machine itself\)" mappedroot.out &&
	test_grep -v "never runs|^exit" mappedroot.out
'

test_expect_success 'test_expect_failure reports a known breakage as TODO' '
	write_sub broken <<-\EOF &&
	. "$top_srcdir/t/lib-test.sh"
	test_expect_failure "still broken" "false"
	test_done
	EOF
	run_sub broken &&
	cat >expect <<-\EOF &&
	not ok 1 - still broken # TODO known breakage
	1..1
	# passed 0, failed 0, skipped 0, known breakage 1
	EOF
	test_cmp expect broken.out &&
	echo 0 >expect &&
	test_cmp expect broken.exit
'

test_expect_success 'a known breakage that passes is reported and fails the script' '
	write_sub vanished <<-\EOF &&
	. "$top_srcdir/t/lib-test.sh"
	test_expect_failure "fixed now" "true"
	test_done
	EOF
	run_sub vanished &&
	test_grep "^ok 1 - fixed now # TODO known breakage vanished$" vanished.out &&
	echo 1 >expect &&
	test_cmp expect vanished.exit
'

test_expect_success 'test_when_finished runs after success and failure, last first' '
	write_sub finished <<-\EOF &&
	. "$top_srcdir/t/lib-test.sh"
	test_expect_success "passes" "
		test_when_finished \"echo pass-first >>\$OUTER/finished.log\" &&
		test_when_finished \"echo pass-second >>\$OUTER/finished.log\" &&
		true
	"
	test_expect_success "fails" "
		test_when_finished \"echo fail-cleanup >>\$OUTER/finished.log\" &&
		false
	"
	test_done
	EOF
	rm -f finished.log &&
	run_sub finished &&
	cat >expect <<-\EOF &&
	pass-second
	pass-first
	fail-cleanup
	EOF
	test_cmp expect finished.log &&
	test_grep "^ok 1 - passes$" finished.out &&
	test_grep "^not ok 2 - fails$" finished.out
'

test_expect_success 'a failing test_when_finished command fails the test' '
	write_sub badclean <<-\EOF &&
	. "$top_srcdir/t/lib-test.sh"
	test_expect_success "body passes" "test_when_finished false && true"
	test_expect_success "in a subshell" "(test_when_finished true)"
	test_done
	EOF
	run_sub badclean &&
	cat >expect <<-\EOF &&
	not ok 1 - body passes
	not ok 2 - in a subshell
	1..2
	EOF
	tap_lines badclean >actual &&
	test_cmp expect actual &&
	test_grep "^# a test_when_finished command failed$" badclean.out &&
	test_grep "in a subshell it would do nothing" badclean.out
'

test_expect_success 'the scratch directory is the cwd and HOME, removed on success' '
	write_sub scratch <<-\EOF &&
	. "$top_srcdir/t/lib-test.sh"
	test_expect_success "where am I" "
		test \"\$PWD\" = \"\$TRASH_DIRECTORY\" &&
		test \"\$HOME\" = \"\$TRASH_DIRECTORY\" &&
		echo made >file &&
		mkdir -p sub && cd sub
	"
	test_expect_success "back in the scratch directory" "
		test \"\$PWD\" = \"\$TRASH_DIRECTORY\" && test -f file
	"
	test_done
	EOF
	run_sub scratch &&
	test_grep "^# passed 2, failed 0" scratch.out &&
	test_path_is_dir "$SUB_BUILD/t/trash" &&
	test_path_is_missing "$SUB_BUILD/t/trash/scratch" &&
	test_path_is_missing "$SUB_BUILD/t/trash/scratch.out" &&
	test_path_is_missing "$SUB_BUILD/t/trash/scratch.err"
'

test_expect_success 'the scratch directory is kept when a test failed' '
	write_sub keep <<-\EOF &&
	. "$top_srcdir/t/lib-test.sh"
	test_expect_success "leaves evidence" "echo evidence >file && false"
	test_done
	EOF
	run_sub keep &&
	echo "# kept scratch directory: $SUB_BUILD/t/trash/keep" >expect &&
	tail -n 1 keep.out >actual &&
	test_cmp expect actual &&
	test_path_is_file "$SUB_BUILD/t/trash/keep/file" &&
	echo stale >"$SUB_BUILD/t/trash/keep/stale" &&
	run_sub keep &&
	test_path_is_missing "$SUB_BUILD/t/trash/keep/stale"
'

test_expect_success 'skip_all before sourcing prints a 1..0 SKIP plan and exits 0' '
	write_sub skipall <<-\EOF &&
	skip_all="no frobnicator here"
	. "$top_srcdir/t/lib-test.sh"
	test_expect_success "never run" "false"
	test_done
	EOF
	run_sub skipall &&
	echo "1..0 # SKIP no frobnicator here" >expect &&
	test_cmp expect skipall.out &&
	echo 0 >expect &&
	test_cmp expect skipall.exit &&
	test_path_is_missing "$SUB_BUILD/t/trash/skipall"
'

test_expect_success 'test_skip_all after sourcing does the same' '
	write_sub skipall2 <<-\EOF &&
	. "$top_srcdir/t/lib-test.sh"
	test_have_prereq NO_SUCH_THING || test_skip_all "needs NO_SUCH_THING"
	test_expect_success "never run" "false"
	test_done
	EOF
	run_sub skipall2 &&
	echo "1..0 # SKIP needs NO_SUCH_THING" >expect &&
	test_cmp expect skipall2.out &&
	echo 0 >expect &&
	test_cmp expect skipall2.exit &&
	test_path_is_missing "$SUB_BUILD/t/trash/skipall2"
'

test_expect_success 'an exit inside a test body is an error, not a pass' '
	write_sub exits <<-\EOF &&
	. "$top_srcdir/t/lib-test.sh"
	test_expect_success "runs away" "exit 0"
	test_expect_success "never reached" "true"
	test_done
	EOF
	run_sub exits &&
	echo 1 >expect &&
	test_cmp expect exits.exit &&
	test_grep -v "^1\.\." exits.out &&
	test_grep -v "^ok" exits.out &&
	test_path_is_dir "$SUB_BUILD/t/trash/exits"
'

test_expect_success 'a hash sign in a description is escaped' '
	write_sub hash <<-\EOF &&
	. "$top_srcdir/t/lib-test.sh"
	test_expect_success "handles # SKIP in text" "true"
	test_done
	EOF
	run_sub hash &&
	test_grep -F "ok 1 - handles \# SKIP in text" hash.out
'

test_expect_success 'test_must_fail accepts an ordinary failure' '
	test_must_fail false &&
	test_must_fail sh -c "exit 1" &&
	test_must_fail sh -c "exit 2"
'

test_expect_success 'test_must_fail rejects success, not-found and signals' '
	! test_must_fail true 2>err &&
	test_grep "command succeeded" err &&
	! test_must_fail no-such-command-here 2>err &&
	test_grep "not found" err &&
	! test_must_fail sh -c "exit 127" 2>err &&
	! test_must_fail sh -c "exit 126" 2>err &&
	test_grep "not executable" err &&
	! test_must_fail sh -c "kill -TERM \$\$" 2>err &&
	test_grep "died by signal 15" err &&
	! test_must_fail sh -c "kill -KILL \$\$" 2>err &&
	test_grep "died by signal 9" err
'

test_expect_success 'test_expect_code checks the exact status' '
	test_expect_code 0 true &&
	test_expect_code 3 sh -c "exit 3" &&
	! test_expect_code 3 sh -c "exit 4" 2>err &&
	test_grep "expected exit status 3, got 4" err &&
	! test_expect_code 0 false 2>err
'

test_expect_success 'test_cmp, test_grep and the path helpers' '
	printf "a\nb\n" >two &&
	printf "a\nb\n" >same &&
	printf "a\nc\n" >other &&
	: >empty &&
	test_cmp two same &&
	! test_cmp two other 2>err &&
	test_grep "^\+c$" err &&
	test_grep "^b$" two &&
	test_grep -v "^c$" two &&
	! test_grep "^z" two 2>err &&
	test_grep "no match" err &&
	! test_grep -v "^a" two 2>err &&
	! test_grep "x" no-such-file 2>err &&
	! test_grep -v "x" no-such-file 2>err &&
	test_grep -F "a" two &&
	test_line_count = 2 two &&
	test_line_count -gt 1 two &&
	! test_line_count = 3 two 2>err &&
	test_grep "has 2 lines" err &&
	test_must_be_empty empty &&
	! test_must_be_empty two 2>err &&
	! test_must_be_empty no-such-file 2>err &&
	test_path_is_file two &&
	! test_path_is_file . 2>err &&
	test_path_is_dir . &&
	test_path_is_missing no-such-file &&
	! test_path_is_missing two 2>err
'

test_expect_success 'test_wait_for_file is bounded' '
	! test_wait_for_file never-written 1 2>err &&
	test_grep "still empty after 1s" err &&
	echo 8080 >port &&
	test_wait_for_file port 1
'

test_expect_success 't/summary lists skips and failures and counts them' '
	mkdir -p fake/t/unit &&
	cat >fake/t/t0001-a.trs <<-\EOF &&
	:global-test-result: FAIL
	:test-result: PASS
	:test-result: SKIP
	:test-result: FAIL
	:test-result: XFAIL
	:test-result: ERROR
	EOF
	cat >fake/t/t0001-a.log <<-\EOF &&
	ok 1 - works
	PASS: t/t0001-a.sh 1 - works
	ok 2 # SKIP needs curl (missing CURL)
	SKIP: t/t0001-a.sh 2 # SKIP needs curl (missing CURL)
	not ok 3 - broken thing
	FAIL: t/t0001-a.sh 3 - broken thing
	not ok 4 - known # TODO known breakage
	XFAIL: t/t0001-a.sh 4 - known # TODO known breakage
	1..4
	ERROR: t/t0001-a.sh - exited with status 1
	EOF
	cat >fake/t/t0002-b.trs <<-\EOF &&
	:test-result: SKIP
	EOF
	cat >fake/t/t0002-b.log <<-\EOF &&
	1..0 # SKIP no podman here
	SKIP: t/t0002-b.sh - no podman here
	EOF
	cat >fake/t/unit/test-x.trs <<-\EOF &&
	:test-result: PASS
	:test-result: PASS
	EOF
	: >fake/t/unit/test-x.log &&
	echo "stale: not a trs" >fake/t/test-suite.log &&
	test_expect_code 1 sh "$top_srcdir/t/summary" fake >actual &&
	cat >expect <<-\EOF &&
	SKIP t/t0001-a.sh: needs curl (missing CURL)
	SKIP t/t0002-b.sh: whole script: no podman here
	TODO t/t0001-a.sh: known (known breakage)
	FAIL t/t0001-a.sh: broken thing
	3 passed, 1 failed, 3 skipped
	EOF
	test_cmp expect actual
'

test_expect_success 't/summary exits 0 when nothing failed, 1 when nothing ran' '
	rm fake/t/t0001-a.trs &&
	sh "$top_srcdir/t/summary" fake >actual &&
	tail -n 1 actual >last &&
	echo "2 passed, 0 failed, 1 skipped" >expect &&
	test_cmp expect last &&
	mkdir -p none/t &&
	test_expect_code 1 sh "$top_srcdir/t/summary" none >actual &&
	tail -n 1 actual >last &&
	echo "0 passed, 0 failed, 0 skipped" >expect &&
	test_cmp expect last
'

test_done
