#!/bin/sh
test_description='intutic exec and a project'"'"'s .intutic.yaml: found up to the repository root, accepted when it tightens, refused (naming the entry) when it widens or does not load'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl

unset INTUTIC_API_URL INTUTIC_TOKEN INTUTIC_PROXY_URL INTUTIC_PROFILE \
	INTUTIC_RULES
INTUTIC_SETTINGS_FILE=$TRASH_DIRECTORY/no-settings.yaml
XDG_CACHE_HOME=$TRASH_DIRECTORY/cache
export INTUTIC_SETTINGS_FILE XDG_CACHE_HOME

# in_project DIR ARGS...: intutic exec run from DIR against the test's
# proxy; stdout in out, stderr in err, the exit status in rc.
in_project () {
	rc=0
	in_project_dir_=$1
	shift
	(cd "$in_project_dir_" &&
	 "$INTUTIC" exec --state-dir "$PROXY_DIR/state" "$@") >out 2>err || rc=$?
}

test_expect_success 'setup: an origin, the operator rules, the proxy, a repository' '
	start_origin origin.test &&
	write_hosts hosts origin.test=127.0.0.1 docs.origin.test=127.0.0.1 &&
	cat >rules.yaml <<-EOF &&
	version: 1
	ports: [443]
	allow:
	  - "origin.test:443,$ORIGIN_TEST_PORT"
	  - "*.origin.test:443"
	  - "127.0.0.0/8:$ORIGIN_TEST_PORT"
	EOF
	start_proxy rules.yaml &&
	mkdir -p repo/.git repo/src/deep
'

test_expect_success 'no project file: the run goes ahead, registered without one' '
	audit_mark &&
	in_project repo/src true &&
	test "$rc" = 0 &&
	audit_since 0 &&
	audit_wait event=run command=true project= &&
	true
'

test_expect_success 'a file that tightens, found from a subdirectory: accepted, its path registered' '
	cat >repo/.intutic.yaml <<-EOF &&
	version: 1
	ports: [443]
	allow:
	  - "origin.test:$ORIGIN_TEST_PORT"
	deny:
	  - "docs.origin.test"
	EOF
	audit_mark &&
	in_project repo/src/deep sh -c "curl -sS http://origin.test:$ORIGIN_TEST_PORT/" &&
	test "$rc" = 0 &&
	test_grep "^hello from origin.test:$ORIGIN_TEST_PORT\$" out &&
	audit_since 1 &&
	audit_expect 1 event=run command=sh \
		project="$TRASH_DIRECTORY/repo/.intutic.yaml"
'

test_expect_success 'a file that widens: refused (2), naming the file, line and entry; nothing run' '
	cat >repo/.intutic.yaml <<-EOF &&
	version: 1
	ports: [443]
	allow:
	  - "origin.test:$ORIGIN_TEST_PORT"
	  - "elsewhere.test"
	EOF
	in_project repo/src touch started &&
	test "$rc" = 2 &&
	test_grep "repo/.intutic.yaml: refused" err &&
	test_grep "\.intutic\.yaml:5" err &&
	test_grep "elsewhere\.test" err &&
	test_path_is_missing repo/src/started
'

test_expect_success 'a port the operator does not allow: refused' '
	cat >repo/.intutic.yaml <<-EOF &&
	version: 1
	allow:
	  - "origin.test:8443"
	EOF
	in_project repo touch started &&
	test "$rc" = 2 &&
	test_grep "\.intutic\.yaml:3" err &&
	test_grep "8443" err &&
	test_path_is_missing repo/started
'

test_expect_success 'report mode under an enforcing operator: refused' '
	cat >repo/.intutic.yaml <<-EOF &&
	version: 1
	mode: report
	deny:
	  - "docs.origin.test"
	EOF
	in_project repo touch started &&
	test "$rc" = 2 &&
	test_grep "report" err &&
	test_path_is_missing repo/started
'

test_expect_success 'a file that does not load: refused with file:line:col' '
	printf "version: 1\nallow:\n  - [unclosed\n" >repo/.intutic.yaml &&
	in_project repo touch started &&
	test "$rc" = 2 &&
	test_grep "\.intutic\.yaml:[0-9]*:[0-9]*" err &&
	test_path_is_missing repo/started
'

test_expect_success 'a file above the repository root is not the project'"'"'s' '
	rm -f repo/.intutic.yaml &&
	printf "version: 1\nallow:\n  - \"elsewhere.test\"\n" >.intutic.yaml &&
	in_project repo/src true &&
	test "$rc" = 0 &&
	rm -f .intutic.yaml
'

test_done
