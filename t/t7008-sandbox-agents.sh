#!/bin/sh
test_description='real agents in the sandbox: the -node image, built with no network on a base that sandbox/mkbase made from Debian'\''s packages and the npm registry: node and npm, Claude Code from npm answers --version and a real call through the provider gateway; a -node image whose base cannot be pulled names mkbase --node; git over ssh through the proxy with the GIT_SSH_COMMAND exec sets (intutic-connect in every container), decided and audited as the run'\''s CONNECT'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
. "$top_srcdir/t/lib-sandbox.sh"
. "$top_srcdir/t/lib-gateway.sh"
sandbox_isolate_netns
test_require_proxy curl

test_exec_env

test_lazy_prereq SSHD 'test -x /usr/sbin/sshd && getent passwd sshd && command -v ssh-keygen && command -v git'
test_have_prereq SSHD || test_diag "no sshd here: git over ssh is not tried (openssh-server, openssh-client and git)"

# The launcher's own images, named for this script: the default one and
# its -node variant, built on first use from sandbox/ on the test base
# (sandbox/mkbase's, lib-sandbox.sh).
T7008_IMAGE=localhost/intutic/sandbox-t7008:default-$$
ANSWER='Hello from the provider double.'	# provider.py's
REAL=sk-ant-api03-REALt7008key0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789012

# t7008_exec [OPTIONS...] -- COMMAND...: sandbox_exec with the launcher's
# default image names and the -node image; at most SANDBOX_BUILD_SECONDS
# (the first run builds both images).
t7008_exec () {
	rc=0
	INTUTIC_SANDBOX_IMAGE=$T7008_IMAGE INTUTIC_SANDBOX_BASE=$SANDBOX_BASE_IMAGE \
	INTUTIC_SANDBOX_DIR=$top_srcdir/sandbox \
		timeout -k 5 "$SANDBOX_BUILD_SECONDS" "$INTUTIC" exec \
		--state-dir "$PROXY_DIR/state" --sandbox --sandbox-runtime podman \
		--sandbox-image "$T7008_IMAGE-node" --sandbox-pids "$SANDBOX_PIDS" \
		--sandbox-memory "$SANDBOX_MEMORY" --sandbox-cpus "$SANDBOX_CPUS" \
		"$@" >out 2>err || rc=$?
}

test_expect_success 'setup: the base from mkbase, the test provider, the proxy with the gateway' '
	sandbox_setup &&
	test_atexit "sandbox_podman rmi -f $T7008_IMAGE-node $T7008_IMAGE >/dev/null 2>&1" &&
	start_sandbox_gateway "$REAL"
'

test_expect_success 'the base: what mkbase put there, Node.js from Debian and npm from the registry' '
	sandbox_podman run --rm --network none --entrypoint /bin/sh "$SANDBOX_BASE_IMAGE" -c "
		node --version; npm --version; command -v claude
		test -s /etc/resolv.conf && echo resolv-not-empty
		ls /var/lib/apt/lists | grep -v -e ^lock\$ -e ^partial\$ | head -n 1
		ls /root/.npm 2>&1 | head -n 1" >base.out &&
	cat base.out &&
	test_grep "^v18\." base.out &&
	test_grep "^10\.9\.4\$" base.out &&
	test_grep "^/usr/bin/claude\$" base.out &&
	test_grep -v "resolv-not-empty" base.out &&
	test_grep "No such file" base.out
'

test_expect_success 'intutic exec --sandbox-image VERSION-node -- node --version: both images built on first use, with no network' '
	! sandbox_podman image exists "$T7008_IMAGE" &&
	! sandbox_podman image exists "$T7008_IMAGE-node" &&
	t7008_exec -- sh -c "node --version; npm --version" &&
	cat err &&
	test "$rc" = 0 &&
	test_grep "^v18\." out &&
	test_grep "^10\.9\.4\$" out &&
	test_grep "building the sandbox image $T7008_IMAGE from .*/Dockerfile " err &&
	test_grep "building the sandbox image $T7008_IMAGE-node from .*/Dockerfile.node " err &&
	sandbox_podman image exists "$T7008_IMAGE-node"
'

test_expect_success 'the second run reuses the image; npm works as the agent (uid 1000, its home)' '
	t7008_exec -- sh -c "id -u; npm config get prefix; npm ls --global --depth=0" &&
	test "$rc" = 0 &&
	test_grep -v "building the sandbox image" err &&
	test_grep "^1000\$" out &&
	test_grep "@anthropic-ai/claude-code@${SANDBOX_NPM##*@}" out
'

test_expect_success 'Claude Code from npm in the sandbox: claude --version' '
	t7008_exec -- claude --version &&
	test "$rc" = 0 &&
	test_grep "^${SANDBOX_NPM##*@} \(Claude Code\)\$" out
'

test_expect_success 'Claude Code in the sandbox: claude -p through the gateway, the provider gets the real key, the run is audited' '
	audit_mark &&
	DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 DISABLE_ERROR_REPORTING=1 \
	CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 ANTHROPIC_API_KEY=$REAL \
		t7008_exec -e DISABLE_TELEMETRY -e DISABLE_AUTOUPDATER \
		-e DISABLE_ERROR_REPORTING -e CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC \
		-- sh -c "claude -p \"say hi\" </dev/null" &&
	cat err &&
	test "$rc" = 0 &&
	echo "$ANSWER" >expect &&
	test_cmp expect out &&
	audit_count "$PROVIDER_REQUESTS" key=$REAL >n && echo 1 >expect && test_cmp expect n &&
	audit_records "$PROVIDER_REQUESTS" key=$REAL >claude.rec &&
	test_grep -i "\[\"user-agent\",\"claude-cli/${SANDBOX_NPM##*@} " claude.rec &&
	audit_wait event=call provider=anthropic key_mode=broker \
		status=200 "run~^run-" "client~^10[.]"
'

test_expect_success 'a -node image whose base cannot be pulled: the error names mkbase --node' '
	rc=0 &&
	INTUTIC_SANDBOX_IMAGE=localhost/intutic/sandbox-t7008:pull-$$ \
	INTUTIC_SANDBOX_BASE=localhost/intutic-t7008-none:$$ \
	INTUTIC_SANDBOX_DIR=$top_srcdir/sandbox \
		timeout -k 5 "$SANDBOX_BUILD_SECONDS" "$INTUTIC" exec \
		--state-dir "$PROXY_DIR/state" --sandbox --sandbox-runtime podman \
		--sandbox-image localhost/intutic/sandbox-t7008:pull-$$-node \
		-- true >out 2>err || rc=$? &&
	test "$rc" = 125 &&
	test_grep "cannot be pulled; build a base from Debian.s packages with .sudo $top_srcdir/sandbox/mkbase --runtime podman --import localhost/intutic-base:bookworm-node --node., then re-run with INTUTIC_SANDBOX_BASE=localhost/intutic-base:bookworm-node " err
'

# --- git over ssh ---------------------------------------------------------------

test_expect_success SSHD 'setup: an sshd on 127.0.0.1:2222, a repository, rules that allow git.test:2222 alone (and its loopback address)' '
	mkdir -p ssh-client &&
	ssh-keygen -q -t ed25519 -N "" -C "t7008 agent" -f ssh-client/id_ed25519 &&
	start_sshd ssh-client/id_ed25519.pub &&
	printf "[git.test]:%s %s\n" "$SSHD_PORT" \
		"$(cut -d" " -f1,2 "$SSHD_HOST_KEY")" >ssh-client/known_hosts &&
	chmod 0755 ssh-client && chmod 0644 ssh-client/* &&
	git init -q src &&
	echo "from the ssh remote" >src/README &&
	git -C src add README &&
	git -C src -c user.name=t -c user.email=t@t.test commit -q -m one &&
	git clone -q --bare src repo.git &&
	stop_proxy &&
	write_hosts hosts git.test=127.0.0.1 other.test=127.0.0.1 &&
	cat >ssh-rules.yaml <<-EOF &&
	version: 1
	ports: [443]
	allow:
	  - "git.test:$SSHD_PORT"
	  - "127.0.0.0/8:$SSHD_PORT"
	EOF
	start_sandbox_proxy ssh-rules.yaml
'

# agent_ssh: the sandbox's part of an ssh test: its key and known hosts
# into the agent's home (ssh wants the key to be its own, mode 0600).
AGENT_SSH="mkdir -p ~/.ssh && cp $TRASH_DIRECTORY/ssh-client/id_ed25519 $TRASH_DIRECTORY/ssh-client/known_hosts ~/.ssh/ && chmod 600 ~/.ssh/id_ed25519 &&"

test_expect_success SSHD 'git clone over ssh in the sandbox: GIT_SSH_COMMAND is exec'\''s, intutic-connect is there, the tunnel is the run'\''s' '
	audit_mark &&
	sandbox_exec --sandbox-mount "$TRASH_DIRECTORY:ro" -- sh -c "
		echo \"G=\$GIT_SSH_COMMAND\"
		$AGENT_SSH
		cd /tmp && git clone -q ssh://$(id -un)@git.test:$SSHD_PORT$PWD/repo.git clone &&
		cat clone/README && echo run=\$INTUTIC_RUN" &&
	cat err &&
	test "$rc" = 0 &&
	test_grep "^G=ssh -o '\''ProxyCommand=/usr/local/libexec/intutic-connect %h %p'\''\$" out &&
	test_grep "^from the ssh remote\$" out &&
	run=$(sed -n "s/^run=//p" out) &&
	case $run in run-[0-9a-f]*) ;; *) false ;; esac &&
	audit_conn proto=connect host=git.test port="$SSHD_PORT" \
		decision=allow run="$run" -- "bytes_down>1000" &&
	test_grep "Accepted publickey for $(id -un) from 127\\.0\\.0\\.1" "$SSHD_LOG"
'

test_expect_success SSHD 'ssh to a port the rules do not allow: ssh fails, intutic-connect says why in one line, the run'\''s denial is audited, nothing reached sshd' '
	before=$(grep -c "^Connection from " "$SSHD_LOG") &&
	audit_mark &&
	sandbox_exec --sandbox-mount "$TRASH_DIRECTORY:ro" -- sh -c "
		$AGENT_SSH
		eval \"\$GIT_SSH_COMMAND -p $SSHD_PORT $(id -un)@other.test true\"; echo ssh=\$?
		echo run=\$INTUTIC_RUN" &&
	cat err &&
	test_grep "^ssh=255\$" out &&
	run=$(sed -n "s/^run=//p" out) &&
	test_grep "^intutic-connect: the proxy at http://host.docker.internal:$PROXY_PORT refused other.test:$SSHD_PORT \(403, not-allowlisted\): blocked other.test:$SSHD_PORT: " err &&
	audit_conn proto=connect host=other.test port="$SSHD_PORT" \
		decision=deny reason=not-allowlisted run="$run" &&
	test "$(grep -c "^Connection from " "$SSHD_LOG")" = "$before"
'

test_expect_success SSHD '-e GIT_SSH_COMMAND: the user'\''s own wins' '
	GIT_SSH_COMMAND="ssh -o BatchMode=yes" sandbox_exec -e GIT_SSH_COMMAND \
		-- sh -c "echo \"G=\$GIT_SSH_COMMAND\"" &&
	test "$rc" = 0 &&
	test_grep "^G=ssh -o BatchMode=yes\$" out
'

test_expect_success 'intutic-connect: usage errors, exit 2, one line' '
	sandbox_exec -- sh -c "
		/usr/local/libexec/intutic-connect; echo a=\$?
		/usr/local/libexec/intutic-connect git.test 0; echo b=\$?
		/usr/local/libexec/intutic-connect \"a b\" 22; echo c=\$?
		INTUTIC_PROXY_URL= /usr/local/libexec/intutic-connect git.test 22; echo d=\$?" &&
	test "$rc" = 0 &&
	test_grep "^a=2\$" out && test_grep "^b=2\$" out &&
	test_grep "^c=2\$" out && test_grep "^d=2\$" out &&
	test_grep "^intutic-connect: usage: intutic-connect HOST PORT" err &&
	test_grep "^intutic-connect: .0. is not a port \(1 to 65535\)\$" err &&
	test_grep "^intutic-connect: .a b. is not a host name or address\$" err &&
	test_grep "^intutic-connect: INTUTIC_PROXY_URL is not set: run the command under intutic exec\$" err
'

test_done
