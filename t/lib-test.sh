# t/lib-test.sh — the shell test library: TAP output, a scratch directory
# per script, prerequisites and small assertion helpers (after git's
# t/test-lib.sh and t/test-lib-functions.sh, much smaller).
#
# A test script sets test_description, sources this file, declares its tests
# and ends with test_done:
#
#	#!/bin/sh
#	test_description='rules check: exit codes and messages'
#	. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
#	test_expect_success 'valid file passes' '
#		"$INTUTIC" rules check "$TEST_DATA/rules/x.yaml"
#	'
#	test_done
#
# It must run under any POSIX sh: make runs it with /bin/sh, dash on Debian.
# No `local`, no arrays, no [[ ]].  The library's own variables and helpers
# end in '_' so that test bodies, which are eval'ed in this very shell, do
# not trip over them.
#
# Options: -v/--verbose (or TEST_VERBOSE=1) shows every test's body and
# output as "# " lines; -i/--immediate stops at the first failure;
# -d/--debug keeps the scratch directory even when every test passed.
#
# Every wait in here is bounded, and nothing in here touches the network.

# --- limits -----------------------------------------------------------------
TEST_OUTPUT_LINES_MAX=200	# lines of a test's stdout/stderr shown on failure
TEST_WAIT_SECONDS_MAX=60	# upper bound for test_wait_for_file

# --- options ----------------------------------------------------------------
test_verbose_=
case ${TEST_VERBOSE:-0} in
0|'')	;;
*)	test_verbose_=1 ;;
esac
test_immediate_=
test_debug_=
for test_arg_ in "$@"; do
	case $test_arg_ in
	-v|--verbose)
		test_verbose_=1 ;;
	-i|--immediate)
		test_immediate_=1 ;;
	-d|--debug)
		test_debug_=1 ;;
	-h|--help)
		printf '%s\n' "usage: sh $0 [-v|--verbose] [-i|--immediate] [-d|--debug]"
		printf '%s\n' "${test_description:-}"
		exit 0 ;;
	*)
		printf '%s\n' "Bail out! $0: unknown option '$test_arg_'"
		exit 1 ;;
	esac
done

# --- where things are -------------------------------------------------------
# make provides top_srcdir, top_builddir, INTUTIC and TEST_DATA; by hand they
# are found from the script's own place and the current directory.
if test -z "${top_srcdir:-}"; then
	top_srcdir=$(dirname "$0")/..
fi
top_srcdir=$(cd "$top_srcdir" && pwd) || {
	printf '%s\n' "Bail out! cannot find the source tree (top_srcdir)"
	exit 1
}
if test -z "${top_builddir:-}"; then
	if test -f "$PWD/launcher/intutic"; then
		top_builddir=$PWD
	elif test -f "$top_srcdir/build/launcher/intutic"; then
		top_builddir=$top_srcdir/build
	else
		top_builddir=$top_srcdir
	fi
fi
mkdir -p "$top_builddir/t/trash" &&
top_builddir=$(cd "$top_builddir" && pwd) || {
	printf '%s\n' "Bail out! cannot use the build tree '$top_builddir'"
	exit 1
}
: "${INTUTIC:=$top_builddir/launcher/intutic}"
: "${TEST_DATA:=$top_srcdir/t/data}"
# The shell running this script, for scripts that run nested shell scripts.
if test -z "${TEST_SHELL_PATH:-}"; then
	TEST_SHELL_PATH=$(readlink "/proc/$$/exe" 2>/dev/null) ||
		TEST_SHELL_PATH=/bin/sh
fi
export top_srcdir top_builddir INTUTIC TEST_DATA TEST_SHELL_PATH

# --- a predictable environment ----------------------------------------------
# Tests talk to proxies of their own on loopback: an ambient proxy setting
# must never redirect a client elsewhere.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy \
    NO_PROXY no_proxy ftp_proxy FTP_PROXY
unset CDPATH XDG_CONFIG_HOME XDG_CACHE_HOME XDG_DATA_HOME
# intutic's own settings from the caller's environment would change what a
# test sees: none survives (INTUTIC, the binary's path, is not a setting).
for test_var_ in $(env | sed -n 's/^\(INTUTIC_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$test_var_"
done
LC_ALL=C
LANG=C
TZ=UTC
export LC_ALL LANG TZ

# --- state ------------------------------------------------------------------
test_count_=0		# test points printed
test_pass_=0
test_fail_=0
test_skip_=0
test_broken_=0		# test_expect_failure that failed, as expected
test_fixed_=0		# test_expect_failure that passed: reported as failed
test_in_body_=		# set while a test body or its cleanup runs
test_done_called_=	# set once the script ends through the library
test_cleanup_=		# test_when_finished commands of the current test
test_cleanup_failed_=0
test_atexit_=		# test_atexit commands, run at the end
test_atexit_failed_=0
test_desc_=
test_satisfied_prereq_=' '
test_lazy_tested_=' '
test_lazy_set_=
test_lazy_script_=
test_missing_prereq_=

test_name_=$(basename "$0" .sh)
TRASH_DIRECTORY=$top_builddir/t/trash/$test_name_
# A test's stdout and stderr go beside the scratch directory, not into it,
# so that a test listing its directory sees only what it made.
test_out_=$TRASH_DIRECTORY.out
test_err_=$TRASH_DIRECTORY.err
test_pid_file_=$TRASH_DIRECTORY.pid
export TRASH_DIRECTORY

# --- internal helpers -------------------------------------------------------

# Print the lines on stdin as TAP diagnostics.
test_diag_stdin_ () {
	awk '{ print "# " $0 }'
}

# test_diag MESSAGE...: print a "# " diagnostic line (in a test body it is
# captured with the test's output, like anything else the body prints).
test_diag () {
	printf '%s\n' "$*" | test_diag_stdin_
}

# Show the current test's body without the blank first and last lines that
# quoting it leaves.
test_diag_body_ () {
	printf '%s\n' "$test_body_" | awk '
		NR == 1 && /^[ \t]*$/ { next }
		{ line[++n] = $0 }
		END {
			if (n > 0 && line[n] ~ /^[ \t]*$/)
				n--
			for (i = 1; i <= n; i++)
				print "# " line[i]
		}'
}

# Show a captured output file, its last TEST_OUTPUT_LINES_MAX lines.
test_diag_file_ () {
	test -s "$2" || return 0
	printf '%s\n' "# $1:"
	awk -v max="$TEST_OUTPUT_LINES_MAX" '
		{ line[NR % max] = $0 }
		END {
			first = NR > max ? NR - max + 1 : 1
			if (first > 1)
				print "#   (" first - 1 " earlier lines not shown)"
			for (i = first; i <= NR; i++)
				print "#   " line[i % max]
		}' "$2"
}

test_remove_trash_ () {
	cd "$top_builddir" || cd / || return 1
	if test -d "$TRASH_DIRECTORY"; then
		# A test may leave read-only directories behind.
		chmod -R u+rwx "$TRASH_DIRECTORY" 2>/dev/null
		rm -rf "$TRASH_DIRECTORY"
	fi
	rm -f "$test_out_" "$test_err_" "$test_pid_file_"
}

# A bug in the test script itself: stop, and make the driver report an error.
test_bug_ () {
	test_done_called_='bug'
	printf '%s\n' "Bail out! bug in test script $0: $*"
	printf '%s\n' "# kept scratch directory: $TRASH_DIRECTORY"
	exit 1
}

# Succeed when called from a subshell of the test script, where a change to
# the library's variables would be lost.
test_in_subshell_ () {
	# $$ stays the script's pid in a subshell; the parent of a child
	# process is the shell that really forked it.
	sh -c 'echo $PPID' >"$test_pid_file_" 2>/dev/null || return 1
	read -r test_real_pid_ <"$test_pid_file_" || return 1
	test "$test_real_pid_" != "$$"
}

test_run_atexit_ () {
	test -n "$test_atexit_" || return 0
	cd "$TRASH_DIRECTORY" 2>/dev/null || cd / || return 1
	test_atexit_failed_=0
	eval "$test_atexit_" </dev/null >"$test_out_" 2>"$test_err_"
	test_atexit_=
	if test "$test_atexit_failed_" != 0; then
		printf '%s\n' "# test_atexit cleanup failed"
		test_diag_file_ stdout "$test_out_"
		test_diag_file_ stderr "$test_err_"
		return 1
	fi
	return 0
}

# The script exited without test_done (an `exit` in a body, a signal, a
# failing command at top level): say so in a way the driver counts as an
# error, keep the scratch directory, run the test_atexit cleanup.
test_exit_trap_ () {
	test_code_=$1
	trap - EXIT
	test -z "$test_done_called_" || exit "$test_code_"
	test_done_called_='exit trap'
	test_where_=
	test -z "$test_in_body_" ||
		test_where_=" in test $test_count_ '$test_desc_'"
	test_run_atexit_ >/dev/null 2>&1
	# In bash a redirection of the body is still in force here, and this
	# lands in the test's output file; the missing plan still fails.
	printf '%s\n' "Bail out! $0 exited with status $test_code_ before test_done$test_where_"
	printf '%s\n' "# kept scratch directory: $TRASH_DIRECTORY"
	test "$test_code_" = 0 && test_code_=1
	exit "$test_code_"
}

# --- prerequisites ----------------------------------------------------------

test_check_prereq_name_ () {
	case $1 in
	''|*[!A-Za-z0-9_]*)
		test_bug_ "bad prerequisite name '$1' (letters, digits, '_')" ;;
	esac
}

# test_set_prereq NAME: NAME is satisfied from now on.
test_set_prereq () {
	test_check_prereq_name_ "$1"
	case $test_satisfied_prereq_ in
	*" $1 "*)	;;
	*)	test_satisfied_prereq_="$test_satisfied_prereq_$1 " ;;
	esac
}

# test_lazy_prereq NAME SCRIPT: NAME is satisfied when SCRIPT succeeds; it
# runs once, in a subshell in the scratch directory, output discarded, the
# first time a test asks for NAME.
test_lazy_prereq () {
	test $# = 2 || test_bug_ "test_lazy_prereq needs NAME SCRIPT"
	test_check_prereq_name_ "$1"
	eval "test_lazy_script_$1=\$2"
}

test_have_one_prereq_ () {
	case $test_satisfied_prereq_ in
	*" $1 "*)
		return 0 ;;
	esac
	case $test_lazy_tested_ in
	*" $1 "*)
		return 1 ;;
	esac
	eval "test_lazy_set_=\${test_lazy_script_$1+set}"
	test "$test_lazy_set_" = set || return 1
	test_lazy_tested_="$test_lazy_tested_$1 "
	eval "test_lazy_script_=\$test_lazy_script_$1"
	if (eval "$test_lazy_script_") </dev/null >/dev/null 2>&1; then
		test_set_prereq "$1"
		return 0
	fi
	return 1
}

# test_have_prereq LIST: LIST is comma-separated, "!NAME" wants NAME absent.
# Succeeds when every item holds; the failing items are left in
# test_missing_prereq_.
test_have_prereq () {
	test_missing_prereq_=
	test_ifs_=$IFS
	IFS=,
	set -f
	set -- $1
	set +f
	IFS=$test_ifs_
	for test_prereq_item_ in "$@"; do
		test_prereq_name_=${test_prereq_item_#!}
		test_check_prereq_name_ "$test_prereq_name_"
		if test_have_one_prereq_ "$test_prereq_name_"; then
			test_prereq_ok_=1
		else
			test_prereq_ok_=
		fi
		if test "$test_prereq_name_" != "$test_prereq_item_"; then
			# negated
			if test -z "$test_prereq_ok_"; then
				test_prereq_ok_=1
			else
				test_prereq_ok_=
			fi
		fi
		test -n "$test_prereq_ok_" ||
			test_missing_prereq_="${test_missing_prereq_:+$test_missing_prereq_,}$test_prereq_item_"
	done
	test -z "$test_missing_prereq_"
}

# test_real_root_: this shell is root of the machine, uid 0 of the first user
# namespace, not the root a user namespace maps to an ordinary user.
test_real_root_ () {
	test "$(id -u)" = 0 &&
	awk 'NR == 1 && $1 == 0 && $2 == 0 && $3 == 4294967295 { ok = 1 }
	    END { exit !ok }' /proc/self/uid_map 2>/dev/null
}

# test_require_root WHY: skip the whole script unless it runs as the
# machine's root (test_real_root_), saying "needs root (WHY)".
test_require_root () {
	test_real_root_ || test_skip_all "needs root ($1)"
}

test_lazy_prereq ROOT 'test_real_root_'
test_lazy_prereq PYTHON 'command -v python3'
test_lazy_prereq CURL 'command -v curl'
test_lazy_prereq OPENSSL 'command -v openssl'
test_lazy_prereq PODMAN 'command -v podman'
# Could create a named network namespace: root and an ip(8) that knows
# netns.  Listing them creates nothing.
test_lazy_prereq NETNS '
	test_real_root_ && command -v ip && ip netns list
'
# Could make a user namespace with a network namespace of its own, as
# whoever runs the tests, and bring its lo up there.
test_lazy_prereq USERNS '
	command -v unshare && command -v ip &&
	unshare --user --map-root-user --net ip link set lo up
'

# --- running tests ----------------------------------------------------------

# Evaluate the body with no positional parameters, stdin from /dev/null and
# its output in files.  Holding no extra descriptor matters: a server a body
# starts in the background must not keep the driver's pipe open.
test_eval_body_ () {
	eval "$test_body_"
}

test_eval_cleanup_ () {
	eval "$test_cleanup_"
}

# test_run_ KIND DESC BODY — KIND is success or failure.
test_run_ () {
	test -z "$test_in_body_" ||
		test_bug_ "test_expect_$1 inside the body of test $test_count_"
	test_count_=$((test_count_ + 1))
	test_desc_=$2
	test_body_=$3

	if ! test_have_prereq "$test_prereq_"; then
		test_skip_=$((test_skip_ + 1))
		printf 'ok %d # SKIP %s (missing %s)\n' "$test_count_" "$2" \
		    "$test_missing_prereq_"
		return 0
	fi

	# A '#' in a description would start a TAP directive: escape it.
	case $test_desc_ in
	*'#'*)
		test_desc_=$(printf '%s\n' "$test_desc_" | sed 's/#/\\#/g') ;;
	esac

	test_cleanup_=
	test_cleanup_failed_=0
	test_in_body_=1
	test_eval_body_ </dev/null >"$test_out_" 2>"$test_err_"
	test_ret_=$?
	if test -n "$test_cleanup_"; then
		test_eval_cleanup_ </dev/null >>"$test_out_" 2>>"$test_err_"
	fi
	test_in_body_=
	test_cleanup_=
	cd "$TRASH_DIRECTORY" ||
		test_bug_ "test $test_count_ removed the scratch directory"

	test_ok_=
	test "$test_ret_" = 0 && test "$test_cleanup_failed_" = 0 && test_ok_=1
	test_show_=$test_verbose_
	case $1,$test_ok_ in
	success,1)
		test_pass_=$((test_pass_ + 1))
		printf '%s\n' "ok $test_count_ - $test_desc_" ;;
	success,)
		test_fail_=$((test_fail_ + 1))
		test_show_=1
		printf '%s\n' "not ok $test_count_ - $test_desc_" ;;
	failure,1)
		test_fixed_=$((test_fixed_ + 1))
		printf '%s\n' "ok $test_count_ - $test_desc_ # TODO known breakage vanished" ;;
	failure,)
		test_broken_=$((test_broken_ + 1))
		printf '%s\n' "not ok $test_count_ - $test_desc_ # TODO known breakage" ;;
	esac
	if test -n "$test_show_"; then
		test_diag_body_
		test "$test_ret_" = 0 || printf '%s\n' "# exit status $test_ret_"
		test "$test_cleanup_failed_" = 0 ||
			printf '%s\n' "# a test_when_finished command failed"
		test_diag_file_ stdout "$test_out_"
		test_diag_file_ stderr "$test_err_"
	fi
	if test -n "$test_immediate_" && test "$1,$test_ok_" = success,; then
		printf '%s\n' "# stopping at the first failure (--immediate)"
		test_done
	fi
	return 0
}

# test_expect_success [PREREQS] DESC BODY
test_expect_success () {
	test_prereq_=
	if test $# = 3; then
		test_prereq_=$1
		shift
	fi
	test $# = 2 ||
		test_bug_ "test_expect_success needs [PREREQS] DESC BODY, got $# arguments"
	test_run_ success "$1" "$2"
}

# test_expect_failure [PREREQS] DESC BODY: a known breakage.
test_expect_failure () {
	test_prereq_=
	if test $# = 3; then
		test_prereq_=$1
		shift
	fi
	test $# = 2 ||
		test_bug_ "test_expect_failure needs [PREREQS] DESC BODY, got $# arguments"
	test_run_ failure "$1" "$2"
}

# test_when_finished CMD...: run CMD after the current test's body, passed
# or not; the last registered runs first; a failing CMD fails the test.
test_when_finished () {
	if test -z "$test_in_body_"; then
		test_bug_ "test_when_finished outside a test body"
	fi
	if test_in_subshell_; then
		printf '%s\n' "test_when_finished: in a subshell it would do nothing" >&2
		return 1
	fi
	test_cleanup_="{ $*
} || test_cleanup_failed_=1
$test_cleanup_"
}

# test_atexit CMD...: run CMD when the script ends (test_done, or an early
# exit), last registered first: stops a server that several tests share.
test_atexit () {
	if test_in_subshell_; then
		printf '%s\n' "test_atexit: in a subshell it would do nothing" >&2
		return 1
	fi
	test_atexit_="{ $*
} || test_atexit_failed_=1
$test_atexit_"
}

# test_skip_all REASON: nothing in this script can run here.
test_skip_all () {
	test "$test_count_" = 0 ||
		test_bug_ "test_skip_all after $test_count_ tests"
	test_done_called_='skip'
	test_remove_trash_
	printf '%s\n' "1..0 # SKIP $*"
	exit 0
}

# test_done: the plan, the summary, and the exit status.
test_done () {
	test -z "$test_in_body_" || test_bug_ "test_done inside a test body"
	test_done_called_='test_done'
	test_status_=0
	test_run_atexit_ || test_status_=1
	printf '%s\n' "1..$test_count_"
	printf '%s\n' "# passed $test_pass_, failed $((test_fail_ + test_fixed_)), skipped $test_skip_, known breakage $test_broken_"
	if test "$test_fixed_" != 0; then
		printf '%s\n' "# $test_fixed_ known breakage vanished: make it test_expect_success"
	fi
	if test "$test_fail_" != 0 || test "$test_fixed_" != 0; then
		test_status_=1
	fi
	if test "$test_status_" != 0 || test -n "$test_debug_"; then
		printf '%s\n' "# kept scratch directory: $TRASH_DIRECTORY"
	else
		test_remove_trash_
	fi
	exit "$test_status_"
}

# --- helpers for test bodies --------------------------------------------------
# Each returns non-zero on failure and says why on stderr, which the library
# shows under the failed test.

# test_cmp EXPECTED ACTUAL
test_cmp () {
	if test $# != 2; then
		printf '%s\n' "test_cmp: needs EXPECTED ACTUAL" >&2
		return 1
	fi
	diff -u "$1" "$2" >&2
}

# test_must_fail CMD...: CMD must fail in the ordinary way: not succeed, not
# die by a signal, not be missing (127) or unrunnable (126).
test_must_fail () {
	"$@"
	test_code_=$?
	if test "$test_code_" = 0; then
		printf '%s\n' "test_must_fail: command succeeded: $*" >&2
		return 1
	elif test "$test_code_" -gt 128 && test "$test_code_" -le 192; then
		printf '%s\n' "test_must_fail: died by signal $((test_code_ - 128)): $*" >&2
		return 1
	elif test "$test_code_" = 127; then
		printf '%s\n' "test_must_fail: command not found: $*" >&2
		return 1
	elif test "$test_code_" = 126; then
		printf '%s\n' "test_must_fail: command not executable: $*" >&2
		return 1
	fi
	return 0
}

# test_expect_code N CMD...: CMD must exit with status N.
test_expect_code () {
	test_want_code_=$1
	shift
	"$@"
	test_code_=$?
	test "$test_code_" = "$test_want_code_" && return 0
	printf '%s\n' "test_expect_code: expected exit status $test_want_code_, got $test_code_: $*" >&2
	return 1
}

# text_of: stdin as one line, quotes dropped, blanks squeezed (to compare
# a help text with its man page).
text_of () {
	tr -d "\`'" | tr -s ' \t\n' '   ' | sed 's/^ //; s/ $//'
	echo
}

# options_of: the option list of a help text or of a page rendered by
# mandoc, on stdin: one "-x, --opt ARG Description..." line per option.
options_of () {
	awk '
		/^ *-/ { if (cur != "") print cur; cur = $0; next }
		cur != "" && /^ *$/ { print cur; cur = ""; exit }
		cur != "" { cur = cur " " $0 }
		END { if (cur != "") print cur }
	' | tr -s ' \t' '  ' | sed 's/^ //; s/ $//'
}

# test_grep [-v] [-i] [-F] PATTERN FILE: some line of FILE matches the
# extended regular expression PATTERN (-v: no line does; -F: fixed string).
test_grep () {
	test_grep_not_=
	test_grep_how_=-E
	test_grep_case_=
	while test $# -gt 2; do
		case $1 in
		-v)	test_grep_not_=1 ;;
		-i)	test_grep_case_=-i ;;
		-F)	test_grep_how_=-F ;;
		--)	shift; break ;;
		*)	break ;;
		esac
		shift
	done
	if test $# != 2; then
		printf '%s\n' "test_grep: needs [-v] [-i] [-F] PATTERN FILE" >&2
		return 1
	fi
	grep $test_grep_how_ $test_grep_case_ -e "$1" -- "$2" >/dev/null
	test_code_=$?
	if test "$test_code_" -gt 1; then
		printf '%s\n' "test_grep: cannot read '$2'" >&2
		return 1
	fi
	if test -z "$test_grep_not_" && test "$test_code_" = 0; then
		return 0
	fi
	if test -n "$test_grep_not_" && test "$test_code_" = 1; then
		return 0
	fi
	if test -n "$test_grep_not_"; then
		printf '%s\n' "test_grep: '$1' should not match in '$2', which has:" >&2
	else
		printf '%s\n' "test_grep: no match for '$1' in '$2', which has:" >&2
	fi
	head -n "$TEST_OUTPUT_LINES_MAX" -- "$2" >&2
	return 1
}

test_path_is_file () {
	test -f "$1" && return 0
	printf '%s\n' "test_path_is_file: '$1' is not a file" >&2
	return 1
}

test_path_is_dir () {
	test -d "$1" && return 0
	printf '%s\n' "test_path_is_dir: '$1' is not a directory" >&2
	return 1
}

test_path_is_missing () {
	test ! -e "$1" && test ! -L "$1" && return 0
	printf '%s\n' "test_path_is_missing: '$1' exists:" >&2
	ls -ld -- "$1" >&2
	return 1
}

# test_must_be_empty FILE: FILE exists and is empty.
test_must_be_empty () {
	test_path_is_file "$1" || return 1
	test -s "$1" || return 0
	printf '%s\n' "test_must_be_empty: '$1' is not empty, it has:" >&2
	head -n "$TEST_OUTPUT_LINES_MAX" -- "$1" >&2
	return 1
}

# test_line_count OP N FILE: OP is = != -eq -ne -lt -le -gt -ge.
test_line_count () {
	if test $# != 3; then
		printf '%s\n' "test_line_count: needs OP N FILE" >&2
		return 1
	fi
	test_path_is_file "$3" || return 1
	test_lines_=$(($(wc -l <"$3")))
	case $1 in
	=)	test_line_op_=-eq ;;
	!=)	test_line_op_=-ne ;;
	-eq|-ne|-lt|-le|-gt|-ge)
		test_line_op_=$1 ;;
	*)
		printf '%s\n' "test_line_count: unknown operator '$1'" >&2
		return 1 ;;
	esac
	test "$test_lines_" "$test_line_op_" "$2" && return 0
	printf '%s\n' "test_line_count: '$3' has $test_lines_ lines, expected $1 $2:" >&2
	head -n "$TEST_OUTPUT_LINES_MAX" -- "$3" >&2
	return 1
}

# test_wait_for_file FILE [SECONDS]: wait until FILE exists and is not empty
# (a server writing the port it bound), at most SECONDS (default 10, at most
# TEST_WAIT_SECONDS_MAX).
test_wait_for_file () {
	test_wait_s_=${2:-10}
	test "$test_wait_s_" -le "$TEST_WAIT_SECONDS_MAX" 2>/dev/null ||
		test_wait_s_=$TEST_WAIT_SECONDS_MAX
	test_wait_i_=$((test_wait_s_ * 10))
	while test "$test_wait_i_" -gt 0; do
		test -s "$1" && return 0
		sleep 0.1
		test_wait_i_=$((test_wait_i_ - 1))
	done
	test -s "$1" && return 0
	printf '%s\n' "test_wait_for_file: '$1' still empty after ${test_wait_s_}s" >&2
	return 1
}

# --- start ------------------------------------------------------------------
if test -n "${skip_all:-}"; then
	test_skip_all "$skip_all"
fi

trap 'test_exit_trap_ $?' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

test_remove_trash_
mkdir -p "$TRASH_DIRECTORY" && cd "$TRASH_DIRECTORY" || {
	test_done_called_='bug'
	printf '%s\n' "Bail out! cannot make the scratch directory '$TRASH_DIRECTORY'"
	exit 1
}
HOME=$TRASH_DIRECTORY
export HOME
