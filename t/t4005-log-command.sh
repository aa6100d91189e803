#!/bin/sh
test_description='intutic log: a real proxy'"'"'s records of allowed and denied requests (with and without a run), one line each; --denied, --run, --since, --json, --follow across a logrotate move and SIGUSR1, colour on a terminal only and never with NO_COLOR, lines that are not records named FILE:LINE and skipped, the journal through journalctl, and the errors'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl

test_exec_env
XDG_STATE_HOME=$TRASH_DIRECTORY/xdg-state
export XDG_STATE_HOME
unset NO_COLOR

test_lazy_prereq MNTNS 'unshare -m --propagation private -- mount -t tmpfs tmpfs /mnt'

# log ARGS...: intutic log against the test's proxy; rc, out, err.
log () {
	rc=0
	"$INTUTIC" log --state-dir "$PROXY_DIR/state" "$@" >out 2>err || rc=$?
}

# The start of every line: time, decision, event.
TS='20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]\.[0-9]{3}Z'

test_expect_success '--help and intutic-log(1)'"'"'s SYNOPSIS name the same options; intutic(1) too' '
	"$INTUTIC" log --help >help &&
	grep -o -- "--[a-z][a-z-]*" help | sort -u >expect &&
	sed -n "/^\.Sh SYNOPSIS/,/^\.Sh DESCRIPTION/p" "$top_srcdir/man/intutic-log.1" |
		sed "s/\\\\-/--/g" | grep -o -- "--[a-z][a-z-]*" | sort -u >man &&
	test_cmp expect man &&
	sed -n "/^\.Sh SYNOPSIS/,/^\.Sh DESCRIPTION/p" "$top_srcdir/man/intutic.1" |
		sed -n "/^\.Cm log\$/,/^\.Nm\$/p" |
		sed "s/\\\\-/--/g" | grep -o -- "--[a-z][a-z-]*" | sort -u >man1 &&
	test_cmp expect man1
'

test_expect_success 'setup: an origin, rules, the proxy; allowed and denied requests, with and without a run' '
	start_origin a.test &&
	write_hosts hosts a.test=127.0.0.1 b.test=127.0.0.1 &&
	printf "version: 1\nports: [%s]\nallow:\n  - a.test\n  - 127.0.0.1/32\n" \
		"$A_TEST_PORT" >rules.yaml &&
	start_proxy rules.yaml &&
	proxy_curl -o /dev/null "http://a.test:$A_TEST_PORT/" &&
	proxy_curl -o /dev/null "http://b.test:$A_TEST_PORT/" &&
	"$INTUTIC" exec --state-dir "$PROXY_DIR/state" -- sh -c "
		curl -sS -o /dev/null http://a.test:$A_TEST_PORT/ &&
		curl -sS -o /dev/null http://b.test:$A_TEST_PORT/ &&
		printf \"%s\\n\" \"\$INTUTIC_RUN\" >run" &&
	RUN=$(cat run) &&
	audit_settle &&
	test "$(audit_count event=close)" = 4 &&
	test "$(audit_count run="$RUN" event=close)" = 2
'

test_expect_success 'a line a record, in order: time, decision, event, proto, host:port, reason, then the rest; no colour into a pipe' '
	log &&
	test "$rc" = 0 && test_must_be_empty err &&
	test_line_count = "$(wc -l <"$AUDIT_FILE")" out &&
	test "$(grep -cE "^$TS " out)" = "$(wc -l <out)" &&
	test_grep "^$TS deny  decision http        b\.test:$A_TEST_PORT not-allowlisted status=403 client=127\.0\.0\.1:[0-9]+\$" out &&
	test_grep "^$TS allow close    http        a\.test:$A_TEST_PORT allowed status=200 up=[0-9]+ down=[0-9]+ ms=[0-9]+ rule=.*rules\.yaml:4 client=" out &&
	test_grep "^$TS -     run      -           - - run=$RUN status=201 command=sh client=control:uid=[0-9]+,pid=[0-9]+\$" out &&
	! grep -q "$(printf "\033")" out
'

test_expect_success '--denied: the denials only' '
	log --denied &&
	test "$rc" = 0 &&
	test_line_count = "$(audit_count decision=deny)" out &&
	test_line_count = 4 out &&
	! grep -vE "^$TS deny " out
'

test_expect_success '--run RUN: that run'"'"'s records only; --run of no run: none' '
	log --run "$RUN" &&
	test "$rc" = 0 &&
	test_line_count = "$(audit_count run="$RUN")" out &&
	! grep -v " run=$RUN " out &&
	log --run run-0000 --denied &&
	test "$rc" = 0 && test_must_be_empty out &&
	log --run "$RUN" --denied &&
	test_line_count = 2 out
'

test_expect_success '--json: the records as they are, filtered as asked' '
	log --json &&
	test_cmp "$AUDIT_FILE" out &&
	log --json --denied &&
	audit_records decision=deny >expect &&
	test_cmp expect out
'

test_expect_success '--since: RFC 3339 at a record keeps it and what follows; a time ago; the future; a date' '
	ts=$(audit_records event=run | python3 -c "import json,sys; print(json.loads(sys.stdin.readline())[\"ts\"])") &&
	python3 - "$ts" "$AUDIT_FILE" <<-\EOF >expect &&
	import json, sys
	for line in open(sys.argv[2]):
	    if json.loads(line)["ts"] >= sys.argv[1]:
	        sys.stdout.write(line)
	EOF
	log --json --since "$ts" &&
	test_cmp expect out &&
	log --json --since 10m &&
	test_cmp "$AUDIT_FILE" out &&
	log --since 2099-01-01T00:00:00+01:00 &&
	test "$rc" = 0 && test_must_be_empty out &&
	log --since 2099-01-01 &&
	test_must_be_empty out &&
	log --since "$(date -u +%Y-%m-%d)" --json &&
	test_cmp "$AUDIT_FILE" out
'

test_expect_success '--since that is no time: exit 2, saying what is taken' '
	for bad in yesterday 10 10x -5m 2026-13-01 2026-12-06T25:00Z "2026-12-06T10:00:00+1" 2026-12-06X; do
		log --since "$bad"
		test "$rc" = 2 || return 1
		test_grep "^intutic: log: --since: .* is not a time: give RFC 3339 [(]2026-12-06T17:00:00Z[)], a date [(]2026-12-06[)] or a time ago [(]30s, 10m, 2h, 1d[)]\$" err || return 1
	done
'

test_expect_success '--follow: the records written from then on, across a logrotate move and SIGUSR1, until SIGTERM (exit 0)' '
	"$INTUTIC" log --state-dir "$PROXY_DIR/state" --follow >follow.out 2>follow.err &
	fpid=$! &&
	test_when_finished "test_stop_child_ $fpid 2" &&
	n0=$(wc -l <"$AUDIT_FILE") &&
	sleep 1 &&
	proxy_curl -o /dev/null "http://b.test:$A_TEST_PORT/before" &&
	wait_until 10 grep -q "b.test:$A_TEST_PORT.*status=403" follow.out &&
	mv "$AUDIT_FILE" "$AUDIT_FILE.1" &&
	kill -USR1 "$PROXY_PID" &&
	wait_until 10 test -e "$AUDIT_FILE" &&
	proxy_curl -o /dev/null "http://a.test:$A_TEST_PORT/after" &&
	wait_until 10 sh -c "test \$(grep -c a.test: follow.out) -ge 2" &&
	kill -TERM "$fpid" && wait "$fpid" && fpid= &&
	test_must_be_empty follow.err &&
	test_line_count = 4 follow.out &&
	test "$(grep -c " b.test:" follow.out)" = 2 &&
	test "$(grep -c " a.test:" follow.out)" = 2 &&
	head -n 2 follow.out | grep -q " b.test:" &&
	tail -n 2 follow.out | grep -q " a.test:" &&
	test "$(wc -l <"$AUDIT_FILE.1")" = $((n0 + 2))
'

# on_tty CMD...: CMD with its stdout and stderr on a pseudo-terminal that
# python opens; what it wrote there on stdout, its exit status.
on_tty () {
	python3 - "$@" <<-\EOF
	import os, subprocess, sys
	m, s = os.openpty()
	p = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=s,
	                     stderr=s)
	os.close(s)
	out = b""
	while len(out) < 1 << 20:
	    try:
	        d = os.read(m, 65536)
	    except OSError:
	        break
	    if not d:
	        break
	    out += d
	sys.stdout.buffer.write(out)
	sys.exit(p.wait(timeout=10))
	EOF
}

test_expect_success '--follow: a log cut to nothing in place (logrotate copytruncate) is read again from its start' '
	"$INTUTIC" log --state-dir "$PROXY_DIR/state" --follow >follow2.out 2>follow2.err &
	fpid=$! &&
	test_when_finished "test_stop_child_ $fpid 2" &&
	sleep 1 &&
	cp "$AUDIT_FILE" "$AUDIT_FILE.2" &&
	: >"$AUDIT_FILE" &&
	sleep 0.5 &&
	proxy_curl -o /dev/null "http://b.test:$A_TEST_PORT/truncated" &&
	wait_until 10 sh -c "test \$(grep -c b.test: follow2.out) -ge 2" &&
	kill -TERM "$fpid" && wait "$fpid" && fpid= &&
	test_must_be_empty follow2.err &&
	test_line_count = 2 follow2.out &&
	test_line_count = 2 "$AUDIT_FILE"
'

test_expect_success 'on a terminal: the decision in colour; NO_COLOR: none, an empty one: colour; --json: none' '
	on_tty "$INTUTIC" log --file "$AUDIT_FILE.1" --denied >tty.out &&
	test_line_count = 6 tty.out &&
	test "$(grep -c "$(printf "\033")\[1;31mdeny" tty.out)" = 6 &&
	test "$(grep -c "$(printf "\033")\[32mallow" tty.out)" = 0 &&
	NO_COLOR=1 on_tty "$INTUTIC" log --file "$AUDIT_FILE.1" --denied >tty.out &&
	test_line_count = 6 tty.out &&
	test "$(grep -c "deny  decision" tty.out)" = 3 &&
	! grep -q "$(printf "\033")" tty.out &&
	NO_COLOR= on_tty "$INTUTIC" log --file "$AUDIT_FILE.1" --denied >tty.out &&
	grep -q "$(printf "\033")" tty.out &&
	on_tty "$INTUTIC" log --file "$AUDIT_FILE.1" --json >tty.out &&
	! grep -q "$(printf "\033")" tty.out
'

test_expect_success 'lines that are not records: named FILE:LINE[:COL], skipped, the records around them shown, exit 0' '
	{
		head -n 1 "$AUDIT_FILE.1" &&
		printf "{\"ts\":\"2026-12-06T10:00:00.000Z\",\"event\":\"decision\",\"ho\n" &&
		echo "not json" &&
		echo "[1,2]" &&
		echo "{\"ts\":\"x\",\"run\":\"r\"}" &&
		echo "{\"event\":\"close\",\"host\":{\"a\":1}}" &&
		echo &&
		echo "{\"event\":\"decision\",\"id\":9,\"truncated\":true}" &&
		printf "{\"event\":\"decision\",\"host\":\"x\\\\u001b[31m.test\"}\n" &&
		printf "{\"event\":\"close\""
	} >bad.jsonl &&
	"$INTUTIC" log --file bad.jsonl >out 2>err &&
	test_line_count = 3 out &&
	test_grep " [(]truncated[)]\$" out &&
	test_grep -F "x\\x1b[31m.test" out &&
	! grep -q "$(printf "\033")" out &&
	test_grep "^intutic: warning: bad.jsonl:2:[0-9]*: skipped, not an audit record: " err &&
	test_grep "^intutic: warning: bad.jsonl:3:1: skipped, not an audit record: not JSON" err &&
	test_grep "^intutic: warning: bad.jsonl:4:1: skipped, not an audit record: found an array: expected a JSON object" err &&
	test_grep "^intutic: warning: bad.jsonl:5:[0-9]*: skipped, not an audit record: no .event.: not an audit record" err &&
	test_grep "^intutic: warning: bad.jsonl:6:[0-9]*: skipped, not an audit record: .host. is not a string, a number or null" err &&
	test_grep "^intutic: warning: bad.jsonl:7: skipped, not an audit record: an empty line" err &&
	test_grep "^intutic: warning: bad.jsonl:10: skipped, not an audit record: the line is cut short" err &&
	test_line_count = 7 err
'

test_expect_success 'a line longer than 64 KiB: named and read past, the next record shown' '
	{
		python3 -c "print(\"{\\\"event\\\":\\\"\" + \"x\" * 70000 + \"\\\"}\")" &&
		head -n 1 "$AUDIT_FILE.1"
	} >long.jsonl &&
	"$INTUTIC" log --file long.jsonl >out 2>err &&
	test_line_count = 1 out &&
	test_grep "^intutic: warning: long.jsonl:1: skipped, not an audit record: longer than 65536 bytes\$" err &&
	test_line_count = 1 err
'

test_expect_success 'errors: unknown argument, --file with --state-dir (2); a missing file (1); no proxy (3)' '
	log --nope &&
	test "$rc" = 2 && test_grep "^intutic: log: unknown argument .--nope.\$" err &&
	test_grep "^intutic: see intutic log --help\$" err &&
	log --file x &&
	test "$rc" = 2 && test_grep "give one" err &&
	rc=0 && "$INTUTIC" log --file missing.jsonl 2>err || rc=$? &&
	test "$rc" = 1 &&
	test_grep "^intutic: cannot read the audit log .missing.jsonl.: No such file or directory\$" err &&
	rc=0 && "$INTUTIC" log --state-dir "$TRASH_DIRECTORY/none" 2>err || rc=$? &&
	test "$rc" = 3 &&
	test_grep "^intutic: not running [(]no state file .*none/proxy.json.[)]: no audit log to show; start the proxy with .intutic start --audit FILE., or give a log with --file FILE\$" err
'

test_expect_success 'a proxy without an audit log, or with it on its stderr: exit 1, saying what to do' '
	stop_proxy &&
	mkdir -p s2 &&
	printf "{\"pid\": %d, \"port\": 1, \"bind\": [\"127.0.0.1\"], \"rules\": \"/r\", \"audit\": null, \"started\": 1}\n" $$ >s2/proxy.json &&
	rc=0 && "$INTUTIC" log --state-dir s2 2>err || rc=$? &&
	test "$rc" = 1 &&
	test_grep "writes no audit log: start it with --audit FILE, syslog or journal" err &&
	printf "{\"pid\": %d, \"port\": 1, \"bind\": [\"127.0.0.1\"], \"rules\": \"/r\", \"audit\": \"-\", \"started\": 1}\n" $$ >s2/proxy.json &&
	rc=0 && "$INTUTIC" log --state-dir s2 2>err || rc=$? &&
	test "$rc" = 1 &&
	test_grep "writes its audit log to its standard error, which intutic log cannot read: .*give that file with --file FILE" err
'

test_expect_success MNTNS 'from the journal: journalctl (a stand-in that prints what a stand-in journald took) asked for intutic-audit as cat, --since and --follow passed on' '
	mkdir jdir bin || return 1
	python3 "$top_srcdir/t/helpers/logsink.py" jdir/socket --journal \
		--out journal.jsonl --ready journal.ready --lifetime 60 --max 100 &
	spid=$! &&
	test_when_finished "test_stop_child_ $spid 2; test_stop_pid_ \$(cat journal.ready) 2" &&
	wait_until 10 test -e journal.ready &&
	cat >bin/journalctl <<-\EOF &&
	#!/bin/sh
	printf "%s\n" "$*" >>"$TRASH_DIRECTORY/journalctl.args"
	exec python3 -c "
	import json, sys
	for line in open(sys.argv[1]):
	    print(json.loads(line)[\"MESSAGE\"])
	" "$TRASH_DIRECTORY/journal.jsonl"
	EOF
	chmod +x bin/journalctl &&
	PROXY_WRAP="$top_srcdir/t/helpers/mntns.sh --journal $PWD/jdir --" &&
	start_proxy rules.yaml --audit journal &&
	PROXY_WRAP= &&
	proxy_curl -o /dev/null "http://b.test:$A_TEST_PORT/" &&
	wait_until 10 test "$(wc -l <journal.jsonl)" -ge 2 &&
	PATH=$PWD/bin:$PATH log --denied &&
	test "$rc" = 0 &&
	test_line_count = 2 out &&
	test_grep "^$TS deny  decision http        b\.test:$A_TEST_PORT not-allowlisted" out &&
	PATH=$PWD/bin:$PATH log --since 2026-01-01T00:00:00Z --json &&
	test_line_count = 2 out &&
	cat >expect <<-\EOF &&
	--quiet --no-pager --output=cat --identifier=intutic-audit
	--quiet --no-pager --output=cat --identifier=intutic-audit --since=@1767225600
	EOF
	test_cmp expect journalctl.args
'

test_done
