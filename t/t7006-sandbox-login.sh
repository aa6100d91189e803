#!/bin/sh
test_description='intutic exec --sandbox-login AGENT: the agent'"'"'s login files (only those) in the sandbox home, mode 0600, and back out when it changed them; links not followed'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
. "$top_srcdir/t/lib-sandbox.sh"
sandbox_isolate_netns
test_require_proxy curl

test_exec_env

# login_exec ARGS...: sandbox_exec with HOME=$PWD/h and TMPDIR=$PWD/tmp.
login_exec () {
	rc=0
	(
		HOME=$PWD/h TMPDIR=$PWD/tmp &&
		export HOME TMPDIR &&
		sandbox_exec "$@" &&
		exit "$rc"
	) || rc=$?
}

test_expect_success 'setup: the image, an origin, the proxy on the bridge, a home with logins' '
	sandbox_setup &&
	start_origin origin &&
	write_hosts hosts origin.test=127.0.0.1 &&
	fill_rules proxy-http/forward.yaml rules.yaml PORTS="$ORIGIN_PORT" &&
	start_sandbox_proxy rules.yaml &&
	mkdir -p h/.claude h/.codex h/.ssh tmp &&
	echo claude-cred-1 >h/.claude/.credentials.json &&
	echo "{\"claude\": 1}" >h/.claude.json &&
	echo codex-auth-1 >h/.codex/auth.json &&
	echo not-for-the-agent >h/.ssh/id_ed25519 &&
	echo not-for-the-agent >h/.claude/history.jsonl &&
	echo victim >victim
'

test_expect_success 'unknown agent: exit 2 naming the known ones; without --sandbox: exit 2' '
	login_exec --sandbox-login vim -- true &&
	test "$rc" = 2 &&
	test_grep "'"'"'vim'"'"' is not an agent intutic knows \(claude, codex\)" err &&
	rc=0 && "$INTUTIC" exec --state-dir "$PROXY_DIR/state" \
		--sandbox-login claude -- true 2>err || rc=$? ;
	test "$rc" = 2 &&
	test_grep "need --sandbox" err
'

test_expect_success 'logins: deny in the workspace settings: exit 125 before anything runs, saying where it came from' '
	printf "sandbox: {enforcement: off, logins: deny}\n" >settings.yaml &&
	test_when_finished "rm -f settings.yaml" &&
	cp h/.claude/.credentials.json cred.before &&
	sandbox_podman ps -a -q >ps.before &&
	login_exec --sandbox-login claude \
		-- sh -c "echo RAN" &&
	test "$rc" = 125 &&
	test_must_be_empty out &&
	test_grep "^intutic exec: --sandbox-login is forbidden by this workspace.s settings \(sandbox.logins: deny, from $PWD/settings.yaml\): run without it and log in inside the sandbox, or ask the operator; nothing was run\$" err &&
	test_cmp cred.before h/.claude/.credentials.json &&
	sandbox_podman ps -a -q >ps.after &&
	test_cmp ps.before ps.after &&
	rm -f settings.yaml &&
	login_exec -- sh -c "echo RAN" &&
	test "$rc" = 0 &&
	test_grep "^RAN\$" out
'

test_expect_success 'inside: exactly the login files, 0600, the agent'"'"'s; a refreshed one comes back, the others stay' '
	login_exec --sandbox-login claude --sandbox-login codex -- sh -c "
		cd && find . -type f | sort &&
		stat -c \"%a %u %n\" .claude/.credentials.json .claude.json .codex/auth.json &&
		cat .codex/auth.json && echo codex-auth-1b >.codex/auth.json" &&
	test "$rc" = 0 &&
	cat >expect <<-\EOF &&
	./.claude.json
	./.claude/.credentials.json
	./.codex/auth.json
	600 1000 .claude/.credentials.json
	600 1000 .claude.json
	600 1000 .codex/auth.json
	codex-auth-1
	EOF
	test_cmp expect out &&
	test "$(cat h/.codex/auth.json)" = codex-auth-1b &&
	test "$(stat -c %a h/.codex/auth.json)" = 600 &&
	test "$(cat h/.claude/.credentials.json)" = claude-cred-1 &&
	test -z "$(ls -A tmp)"
'

test_expect_success 'with a writable workspace (the agent is root'"'"'s uid here): the files are its, and come back' '
	mkdir ws &&
	login_exec --sandbox-mount "$PWD/ws" --sandbox-login codex -- sh -c "
		stat -c \"%a %u\" ~/.codex/auth.json &&
		echo codex-auth-2 >~/.codex/auth.json" &&
	test "$rc" = 0 &&
	test "$(cat out)" = "600 0" &&
	test "$(cat h/.codex/auth.json)" = codex-auth-2 &&
	test -z "$(ls -A tmp)"
'

test_expect_success 'the agent plants a link in the copy it hands back: not followed, the home untouched' '
	login_exec --sandbox-login codex -- sh -c "
		echo codex-auth-3 >~/.codex/auth.json &&
		rm -rf /run/intutic-login/.codex && ln -s /etc /run/intutic-login/.codex" &&
	test "$rc" = 0 &&
	test_grep "the sandbox.s .codex/auth.json is a symbolic link \(not followed\): not copied back" err &&
	test "$(cat h/.codex/auth.json)" = codex-auth-2 &&
	test -z "$(ls -A tmp)"
'

test_expect_success 'a link planted in the home during the run: not followed, not written over, said' '
	(
		i=0 &&
		while test $i -lt 200 && ! ls tmp/intutic-login-*/home/.claude.json >/dev/null 2>&1; do
			sleep 0.1; i=$((i + 1))
		done &&
		ln -sfn "$PWD/victim" h/.claude.json
	) &
	planter=$! &&
	login_exec --sandbox-login claude -- sh -c "sleep 4; echo refreshed >~/.claude.json" &&
	wait $planter &&
	test "$rc" = 0 &&
	test_grep "h/.claude.json changed on the host during the run: the sandbox.s newer copy is not written over it" err &&
	test -L h/.claude.json &&
	test "$(cat victim)" = victim
'

test_expect_success 'a login file that is a link on the host: refused before anything runs, 125 and the fix' '
	rm -f h/.claude.json &&
	ln -s "$PWD/victim" h/.claude.json &&
	login_exec --sandbox-login claude -- echo RAN &&
	test "$rc" = 125 &&
	test_grep -v RAN out &&
	test_grep "h/.claude.json is a symbolic link \(not followed\); make it a regular file, or leave out --sandbox-login claude" err &&
	test -z "$(ls -A tmp)"
'

test_done
