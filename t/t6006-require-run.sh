#!/bin/sh
test_description='--require-run: a request without a run'"'"'s credentials gets 407 with the challenge; git, curl and python under intutic exec are attributed to their run'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl git

test_exec_env

# run_exec ARGS...: intutic exec against the test's proxy, stdout in out,
# stderr in err; the exit status in rc.
run_exec () {
	rc=0
	"$INTUTIC" exec --state-dir "$PROXY_DIR/state" "$@" >out 2>err || rc=$?
}

# A bare repository served as files (git's dumb HTTP protocol) by python's
# http.server on loopback: REPO_PORT, stopped at the end.
start_repo () {
	git init -q --bare repo/r.git &&
	git init -q work &&
	git -C work -c user.name=t -c user.email=t@test commit -q --allow-empty -m one &&
	git -C work push -q ../repo/r.git HEAD:refs/heads/main &&
	git -C repo/r.git update-server-info &&
	REPO_PORT=$(free_port) &&
	{ python3 -m http.server --bind 127.0.0.1 --directory repo "$REPO_PORT" \
		</dev/null >repo.log 2>&1 & } &&
	REPO_PID=$! &&
	test_atexit "test_stop_child_ $REPO_PID" &&
	wait_until 10 repo_up
}

# repo_up: the repository's server answers (1: not yet).
repo_up () {
	curl -s --noproxy "*" -o /dev/null "http://127.0.0.1:$REPO_PORT/r.git/info/refs" ||
		return 1
}

test_expect_success 'setup: an origin, a git repository over HTTP, the proxy with --require-run' '
	start_origin origin.test &&
	start_repo &&
	write_hosts hosts origin.test=127.0.0.1 repo.test=127.0.0.1 &&
	cat >rules.yaml <<-EOF &&
	version: 1
	allow:
	  - "origin.test:$ORIGIN_TEST_PORT"
	  - "repo.test:$REPO_PORT"
	  - "127.0.0.0/8:$ORIGIN_TEST_PORT,$REPO_PORT"
	EOF
	start_proxy rules.yaml --require-run
'

test_expect_success 'no credentials: 407 with Proxy-Authenticate, denied as proxy-auth, nothing reaches the origin' '
	server_mark origin.test &&
	audit_mark &&
	proxy_curl -D head -o body -w "%{http_code}\n" \
		"http://origin.test:$ORIGIN_TEST_PORT/" >code &&
	echo 407 >expect &&
	test_cmp expect code &&
	test_grep -i "^Proxy-Authenticate: Basic realm=\"intutic\"" head &&
	test_grep "require-run" body &&
	{ proxy_curl -o /dev/null -w "%{http_connect}\n" -p \
		"http://origin.test:$ORIGIN_TEST_PORT/" >code 2>/dev/null || :; } &&
	test_grep "407" code &&
	audit_since 2 &&
	audit_expect 2 event=decision decision=deny reason=proxy-auth run= &&
	server_since origin.test &&
	test_must_be_empty origin.test.new
'

test_expect_success '/healthz and /metrics still answer without credentials' '
	curl -sS --noproxy "*" -o /dev/null -w "%{http_code}\n" "$PROXY_URL/healthz" >code &&
	echo 200 >expect &&
	test_cmp expect code
'

test_expect_success 'git under intutic exec: ls-remote and clone through the proxy, after the challenge, as its run' '
	audit_mark &&
	run_exec -- sh -c "echo \$INTUTIC_RUN >run.id &&
		git ls-remote http://repo.test:$REPO_PORT/r.git &&
		git clone -q http://repo.test:$REPO_PORT/r.git clone" &&
	test "$rc" = 0 &&
	test_grep "refs/heads/main" out &&
	test -d clone/.git &&
	run=$(cat run.id) &&
	audit_since 1 &&
	audit_records event=decision decision=allow host=repo.test >allowed &&
	test_line_count -gt 0 allowed &&
	audit_expect 0 event=decision decision=allow host=repo.test run= &&
	test "$(audit_count event=decision decision=allow host=repo.test run="$run")" = \
		"$(wc -l <allowed)"
'

test_expect_success 'curl and python under intutic exec: their requests carry the run' '
	audit_mark &&
	run_exec -- sh -c "echo \$INTUTIC_RUN >run.id &&
		curl -sS -o /dev/null -w \"%{http_code}\n\" http://origin.test:$ORIGIN_TEST_PORT/ &&
		python3 -c \"import urllib.request; print(urllib.request.urlopen(\\\"http://origin.test:$ORIGIN_TEST_PORT/\\\").status)\"" &&
	test "$rc" = 0 &&
	printf "200\n200\n" >expect &&
	test_cmp expect out &&
	audit_since 2 &&
	audit_expect 2 event=decision decision=allow host=origin.test run="$(cat run.id)"
'

test_done
