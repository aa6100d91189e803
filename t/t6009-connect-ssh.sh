#!/bin/sh
test_description='intutic connect: real ssh and git over ssh through the proxy to an sshd in the test namespace, decided and audited as any CONNECT (with the run'"'"'s identity under intutic exec, which sets GIT_SSH_COMMAND), refusals in one line, half-close, usage errors, no proxy'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy

test_exec_env
XDG_STATE_HOME=$TRASH_DIRECTORY/xdg-state
export XDG_STATE_HOME

SSHD=/usr/sbin/sshd	# sshd must be started by its absolute path
SSHD_PORT=2222		# in the test's own namespace: nothing else listens
SSH_SECONDS=20		# one ssh or git command, at most
INTUTIC_ABS=$(readlink -f "$INTUTIC")

test_lazy_prereq MANDOC 'command -v mandoc'
test_lazy_prereq SSH 'command -v ssh && command -v ssh-keygen'
test_lazy_prereq GIT 'command -v git'
# sshd runs as root only where its privilege separation user can be
# switched to: the machine's root (uid 0 of the first user namespace), not
# the root of a user namespace that maps an ordinary user alone.
test_lazy_prereq SSHD '
	test -x "$SSHD" && getent passwd sshd &&
	awk "NR == 1 && \$1 == 0 && \$2 == 0 && \$3 == 4294967295 { ok = 1 }
	    END { exit !ok }" /proc/self/uid_map &&
	unshare -m --propagation private true
'
test_have_prereq SSH || test_diag "no ssh or ssh-keygen: install openssh-client"
test_have_prereq GIT || test_diag "no git: install git"
test_have_prereq SSHD || test_diag "sshd cannot run here: it needs $SSHD (openssh-server), its user sshd, the machine's root and a mount namespace"

# connect ARGS...: intutic connect, stdin from ./in (empty unless made),
# out and err, the status in rc; bounded in time.
connect () {
	test -f in || : >in
	rc=0
	timeout -s KILL "$SSH_SECONDS" "$INTUTIC" connect "$@" <in >out 2>err || rc=$?
}

# connect_env NAME=VALUE... -- ARGS...: connect with those variables set
# for intutic alone.
connect_env () {
	test -f in || : >in
	rc=0
	(
		while test $# -gt 0 && test "$1" != --; do
			export "$1"
			shift
		done
		shift
		exec timeout -s KILL "$SSH_SECONDS" "$INTUTIC" connect "$@" \
			<in >out 2>err
	) || rc=$?
}

# usage_error TEXT ARGS...: exit 2, stdout empty, the mistake and where to
# look on stderr (two lines).
usage_error () {
	usage_text_=$1
	shift
	connect "$@" &&
	test "$rc" = 2 &&
	test_must_be_empty out &&
	test_grep -F "intutic: connect: $usage_text_" err &&
	test_grep "^intutic: see intutic connect --help\$" err &&
	test_line_count = 2 err
}

# sshd_connections: how many connections sshd has logged.
sshd_connections () {
	grep_count "^Connection from 127\\.0\\.0\\.1 " "$SSHD_LOG"
}

# ssh_to USER@NAME COMMAND...: real ssh through intutic connect (the
# proxy found by its state directory), the test's key and known hosts,
# nothing of the machine's configuration; out, err, rc.
ssh_to () {
	rc=0
	timeout -s KILL "$SSH_SECONDS" ssh -F "$TRASH_DIRECTORY/ssh_config" \
		-o "ProxyCommand=$INTUTIC connect --state-dir $PROXY_DIR/state %h %p" \
		-p "$SSHD_PORT" "$@" </dev/null >out 2>err || rc=$?
}

# --- help, usage, no proxy --------------------------------------------------------

test_expect_success MANDOC '--help: the synopsis, description and options of intutic-connect(1); intutic(1) names the same options' '
	"$INTUTIC" connect --help >help 2>err &&
	test_must_be_empty err &&
	mandoc -T ascii "$top_srcdir/man/intutic-connect.1" |
		sed "s/.$(printf "\b")//g" >man.txt &&
	sed -n "/^usage: /,/^\$/p" help | sed "s/^usage: //" | text_of >help.synopsis &&
	sed -n "/^SYNOPSIS/,/^DESCRIPTION/p" man.txt | sed "1d;\$d" | text_of >man.synopsis &&
	test_cmp help.synopsis man.synopsis &&
	echo "intutic connect [--proxy URL] [--state-dir DIR] [--timeout SECONDS] HOST PORT" >expect &&
	test_cmp expect help.synopsis &&
	awk "/^\$/ { n++; next } n == 1" help | text_of |
		sed "s/^Opens/intutic connect opens/" >help.desc &&
	sed -n "/^DESCRIPTION/,/^\$/p" man.txt | sed 1d | text_of >man.desc &&
	test_cmp help.desc man.desc &&
	awk "/^\$/ { n++ } n >= 2" help | sed 1d | options_of >help.options &&
	sed -n "/^DESCRIPTION/,/^ *An option may also/p" man.txt |
		sed "1,/^\$/d; \$d; /^ *\$/d" | options_of >man.options &&
	test_line_count = 3 help.options &&
	test_cmp help.options man.options &&
	grep -o -- "--[a-z][a-z-]*" help.synopsis | sort -u >opts &&
	sed -n "/^\.Sh SYNOPSIS/,/^\.Sh DESCRIPTION/p" "$top_srcdir/man/intutic.1" |
		sed -n "/^\.Cm connect\$/,/^\.Nm\$/p" |
		sed "s/\\\\-/--/g" | grep -o -- "--[a-z][a-z-]*" | sort -u >man1 &&
	test_cmp opts man1 &&
	"$INTUTIC" help connect >help2 &&
	test_cmp help help2 &&
	"$INTUTIC" --help >all &&
	test_grep "^  connect +open a tunnel through the proxy" all
'

test_expect_success MANDOC 'the manual pages pass mandoc -T lint' '
	mandoc -T lint -W warning "$top_srcdir/man/intutic-connect.1" \
		"$top_srcdir/man/intutic-exec.1" "$top_srcdir/man/intutic.1" >lint 2>&1 &&
	test_must_be_empty lint
'

test_expect_success 'usage errors: exit 2, the mistake and --help, nothing else' '
	usage_error "needs HOST and PORT" &&
	usage_error "needs HOST and PORT" git.test &&
	usage_error "too many arguments" git.test 22 more &&
	usage_error "the PORT '\''0'\'' is not a number from 1 to 65535" git.test 0 &&
	usage_error "the PORT '\''65536'\'' is not a number" git.test 65536 &&
	usage_error "the PORT '\''ssh'\'' is not a number" git.test ssh &&
	usage_error "the PORT '\''+22'\'' is not a number" git.test +22 &&
	usage_error "'\''a b'\'' is not a host name or address" "a b" 22 &&
	usage_error "'\''a??X: y'\'' is not a host name or address" "$(printf "a\\r\\nX: y")" 22 &&
	usage_error "'\''u@git.test'\'' is not a host name or address" u@git.test 22 &&
	usage_error "the HOST is empty" "" 22 &&
	usage_error "the HOST is longer than 255 bytes" "$(printf "%0256d" 0)" 22 &&
	usage_error "unknown option '\''--nope'\''" --nope git.test 22 &&
	usage_error "--timeout: '\''0'\'' is not a number of seconds" --timeout 0 git.test 22 &&
	usage_error "--proxy needs a URL" --proxy
'

test_expect_success 'no proxy: exit 125, one line naming where it looked and what to do' '
	port=$(free_port) &&
	connect --proxy "http://127.0.0.1:$port" git.test 22 &&
	test "$rc" = 125 &&
	test_must_be_empty out &&
	echo "intutic connect: the intutic proxy is not running at http://127.0.0.1:$port (--proxy): Connection refused; start it with \`intutic start\`" >expect &&
	test_cmp expect err &&
	connect --state-dir "$TRASH_DIRECTORY/no-state" git.test 22 &&
	test "$rc" = 125 &&
	test_grep "^intutic connect: the intutic proxy is not running at http://127\\.0\\.0\\.1:8877 \\(the default address\\): Connection refused; start it with .intutic start.\$" err &&
	test_line_count = 1 err &&
	connect --proxy "https://127.0.0.1:$port" git.test 22 &&
	test "$rc" = 2 &&
	test_grep "is not a proxy URL of the form http://HOST:PORT" err
'

# --- an sshd, a proxy -----------------------------------------------------------

test_expect_success 'setup: names, rules, an echo server, the proxy' '
	start_echo echo &&
	write_hosts hosts git.test=127.0.0.1 other.test=127.0.0.1 \
		echo.test=127.0.0.1 plain.test=127.0.0.1 &&
	cat >rules.yaml <<-EOF &&
	version: 1
	ports: [443, $ECHO_PORT]
	allow:
	  - "git.test:$SSHD_PORT"
	  - "echo.test:$ECHO_PORT"
	  - plain.test
	  - "127.0.0.0/8:$SSHD_PORT,$ECHO_PORT"
	EOF
	RULES=$PWD/rules.yaml &&
	start_proxy "$RULES"
'

test_expect_success 'a refusal: exit 3, one line with the proxy'\''s status, reason and words; the audit has the denial' '
	audit_mark &&
	connect --state-dir "$PROXY_DIR/state" other.test "$SSHD_PORT" &&
	test "$rc" = 3 &&
	test_must_be_empty out &&
	echo "intutic connect: the proxy at http://127.0.0.1:$PROXY_PORT refused other.test:$SSHD_PORT (403, not-allowlisted): blocked other.test:$SSHD_PORT: this host is not on the allowlist (not-allowlisted)." >expect &&
	test_cmp expect err &&
	audit_conn proto=connect host=other.test port="$SSHD_PORT" \
		decision=deny reason=not-allowlisted run= &&
	audit_mark &&
	connect --state-dir "$PROXY_DIR/state" git.test 22 &&
	test "$rc" = 3 &&
	test_grep "^intutic connect: the proxy at http://127\\.0\\.0\\.1:$PROXY_PORT refused git\\.test:22 \\(403, port-not-allowed\\): blocked git\\.test:22: " err &&
	test_line_count = 1 err &&
	audit_conn proto=connect host=git.test port=22 decision=deny \
		reason=port-not-allowed
'

test_expect_success 'half-close: stdin'\''s end reaches the echo server, all of its answer comes back, exit 0' '
	{ echo hello && head -c 3000000 /dev/urandom; } >in &&
	audit_mark &&
	connect --state-dir "$PROXY_DIR/state" echo.test "$ECHO_PORT" &&
	test "$rc" = 0 &&
	test_must_be_empty err &&
	cmp in out &&
	audit_conn proto=connect host=echo.test port="$ECHO_PORT" \
		decision=allow reason=allowed rule="$RULES:5" \
		-- bytes_up=3000006 bytes_down=3000006 &&
	test_grep "in=3000006 out=3000006\$" "$ECHO_LOG" &&
	rm in
'

test_expect_success 'a tunnel the proxy closes before anything came back: a line says so, exit 0 at the end of stdin' '
	audit_mark &&
	rc=0 &&
	{ echo hello && sleep 2; } |
		timeout -s KILL "$SSH_SECONDS" "$INTUTIC" connect \
		--state-dir "$PROXY_DIR/state" plain.test "$ECHO_PORT" >out 2>err ||
		rc=$? &&
	test "$rc" = 0 &&
	test_must_be_empty out &&
	echo "intutic connect: warning: the tunnel to plain.test:$ECHO_PORT ended before any byte came through it: the far end closed it, or the proxy did (\`intutic log --denied\` says why)" >expect &&
	test_cmp expect err &&
	audit_conn proto=connect host=plain.test decision=deny \
		reason=protocol-not-allowed
'

test_expect_success SSH,SSHD 'setup: keys, an sshd on 127.0.0.1:2222 in a mount namespace of its own' '
	ssh-keygen -q -t ed25519 -N "" -C "t6009 user" -f key &&
	start_sshd key.pub &&
	printf "[git.test]:%s %s\n" "$SSHD_PORT" \
		"$(cut -d" " -f1,2 "$SSHD_HOST_KEY")" >known_hosts &&
	cat >ssh_config <<-EOF
	IdentityFile $PWD/key
	IdentitiesOnly yes
	UserKnownHostsFile $PWD/known_hosts
	GlobalKnownHostsFile /dev/null
	StrictHostKeyChecking yes
	BatchMode yes
	ConnectTimeout 10
	EOF
'

test_expect_success SSH,SSHD 'ssh through intutic connect: the command runs; the audit has the CONNECT decision and its close' '
	audit_mark &&
	ssh_to "$(id -un)@git.test" echo hi from sshd &&
	test "$rc" = 0 &&
	echo "hi from sshd" >expect &&
	test_cmp expect out &&
	audit_conn proto=connect host=git.test port="$SSHD_PORT" \
		addr=127.0.0.1 decision=allow reason=allowed rule="$RULES:4" run= \
		-- "bytes_up>1000" "bytes_down>1000" &&
	test_grep "Accepted publickey for $(id -un) from 127\\.0\\.0\\.1" "$SSHD_LOG"
'

test_expect_success SSH,SSHD 'ssh to a name or a port the rules deny: ssh fails, the line says why, the audit has the denial, nothing reached sshd' '
	before=$(sshd_connections) &&
	audit_mark &&
	ssh_to "$(id -un)@other.test" echo hi &&
	test "$rc" = 255 &&
	test_must_be_empty out &&
	test_grep "^intutic connect: the proxy at http://127\\.0\\.0\\.1:$PROXY_PORT refused other\\.test:$SSHD_PORT \\(403, not-allowlisted\\)" err &&
	audit_conn proto=connect host=other.test port="$SSHD_PORT" \
		decision=deny reason=not-allowlisted &&
	audit_mark &&
	rc=0 &&
	timeout -s KILL "$SSH_SECONDS" ssh -F ssh_config \
		-o "ProxyCommand=$INTUTIC connect --state-dir $PROXY_DIR/state %h %p" \
		-p 2223 "$(id -un)@git.test" echo hi </dev/null >out 2>err || rc=$? &&
	test "$rc" = 255 &&
	test_grep "refused git\\.test:2223 \\(403, port-not-allowed\\)" err &&
	audit_conn proto=connect host=git.test port=2223 decision=deny \
		reason=port-not-allowed &&
	test "$(sshd_connections)" = "$before"
'

test_expect_success SSH,SSHD 'a tunnel of a run: its credentials go with it, the run'\''s policy decides it (exec --deny), the audit names the run' '
	audit_mark &&
	rc=0 &&
	"$INTUTIC" exec --state-dir "$PROXY_DIR/state" --deny git.test -- sh -c "
		printf \"%s\\n\" \"\$INTUTIC_RUN\" >run &&
		timeout -s KILL $SSH_SECONDS ssh -F ssh_config \
			-o \"ProxyCommand=$INTUTIC connect %h %p\" -p $SSHD_PORT \
			$(id -un)@git.test echo hi" </dev/null >out 2>err || rc=$? &&
	test "$rc" = 255 &&
	RUN=$(cat run) &&
	test_grep "^intutic connect: the proxy at http://127\\.0\\.0\\.1:$PROXY_PORT refused git\\.test:$SSHD_PORT \\(403, denied\\): blocked git\\.test:$SSHD_PORT: " err &&
	audit_since 1 &&
	audit_expect 1 event=decision proto=connect run="$RUN" host=git.test \
		port="$SSHD_PORT" decision=deny reason=denied
'

test_expect_success SSH,SSHD 'a run without its credentials: exit 125, said; a wrong token: the proxy'\''s 407, exit 3' '
	connect_env INTUTIC_RUN=run-0123456789abcdef -- \
		--state-dir "$PROXY_DIR/state" git.test "$SSHD_PORT" &&
	test "$rc" = 125 &&
	echo "intutic connect: INTUTIC_RUN is '\''run-0123456789abcdef'\'', but no proxy variable (HTTPS_PROXY, ALL_PROXY, HTTP_PROXY) holds its credentials for the proxy at http://127.0.0.1:$PROXY_PORT (the state file $PROXY_DIR/state/proxy.json), and a tunnel without them would not be the run'\''s: run the command under \`intutic exec\` as it is, or unset INTUTIC_RUN outside a run" >expect &&
	test_cmp expect err &&
	audit_mark &&
	connect_env INTUTIC_RUN=run-0123456789abcdef \
		HTTPS_PROXY=http://run-0123456789abcdef:nope@127.0.0.1:$PROXY_PORT \
		INTUTIC_PROXY_URL=http://127.0.0.1:$PROXY_PORT -- \
		git.test "$SSHD_PORT" &&
	test "$rc" = 3 &&
	test_grep "^intutic connect: the proxy at http://127\\.0\\.0\\.1:$PROXY_PORT refused git\\.test:$SSHD_PORT \\(407, proxy-auth\\): " err &&
	test_line_count = 1 err &&
	test_grep -v nope err &&
	audit_conn proto=connect decision=deny reason=proxy-auth &&
	! grep -q nope "$AUDIT_FILE" "$PROXY_LOG"
'

test_expect_success SSH,SSHD,GIT 'git clone over ssh under intutic exec: GIT_SSH_COMMAND is exec'\''s, the tunnel is the run'\''s' '
	git init -q src &&
	echo "hello over ssh" >src/README &&
	git -C src add README &&
	git -C src -c user.name=t6009 -c user.email=t6009@git.test \
		commit -q -m "t6009 commit" &&
	git clone -q --bare src repo.git &&
	mkdir -p bin &&
	cat >bin/ssh <<-EOF &&
	#!/bin/sh
	# ssh with the test'\''s configuration and nothing of the machine'\''s
	printf "%s\\n" "\$@" >>"$PWD/ssh-args"
	exec $(command -v ssh) -F "$PWD/ssh_config" "\$@"
	EOF
	chmod +x bin/ssh &&
	audit_mark &&
	rc=0 &&
	PATH=$PWD/bin:$PATH timeout -s KILL 30 "$INTUTIC" exec \
		--state-dir "$PROXY_DIR/state" -- sh -c "
		printf \"%s\\n\" \"\$INTUTIC_RUN\" >run &&
		printf \"%s\\n\" \"\$GIT_SSH_COMMAND\" >gsc &&
		git clone -q ssh://$(id -un)@git.test:$SSHD_PORT$PWD/repo.git clone" \
		</dev/null >out 2>err || rc=$? &&
	test "$rc" = 0 &&
	RUN=$(cat run) &&
	echo "ssh -o '\''ProxyCommand=$INTUTIC_ABS connect %h %p'\''" >expect &&
	test_cmp expect gsc &&
	grep -qxF "ProxyCommand=$INTUTIC_ABS connect %h %p" ssh-args &&
	echo "hello over ssh" >expect &&
	test_cmp expect clone/README &&
	audit_since 1 &&
	audit_expect 1 event=decision proto=connect run="$RUN" host=git.test \
		port="$SSHD_PORT" decision=allow reason=allowed rule="$RULES:4" &&
	audit_expect 1 event=close proto=connect run="$RUN" host=git.test
'

test_expect_success 'exec: -e GIT_SSH_COMMAND passes the user'\''s own; without -e it is exec'\''s' '
	GIT_SSH_COMMAND="ssh -o SomeOption=mine" "$INTUTIC" exec \
		--state-dir "$PROXY_DIR/state" -e GIT_SSH_COMMAND -- \
		sh -c "printf \"%s\\n\" \"\$GIT_SSH_COMMAND\"" </dev/null >out 2>err &&
	echo "ssh -o SomeOption=mine" >expect &&
	test_cmp expect out &&
	GIT_SSH_COMMAND="ssh -o SomeOption=mine" "$INTUTIC" exec \
		--state-dir "$PROXY_DIR/state" -- \
		sh -c "printf \"%s\\n\" \"\$GIT_SSH_COMMAND\"" </dev/null >out 2>err &&
	echo "ssh -o '\''ProxyCommand=$INTUTIC_ABS connect %h %p'\''" >expect &&
	test_cmp expect out
'

test_done
