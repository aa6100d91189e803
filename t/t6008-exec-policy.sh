#!/bin/sh
test_description='a run'"'"'s policy made by intutic exec (the project file, --allow, --deny) and changed by intutic runs allow|deny: enforced for that run only, never past the operator'"'"'s rules the proxy holds, open tunnels closed when denied; rules test --run decides as the proxy did'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl

test_exec_env
XDG_STATE_HOME=$TRASH_DIRECTORY/xdg-state
export XDG_STATE_HOME

# run_exec ARGS...: intutic exec against the test's proxy, stdout in out,
# stderr in err; the exit status in rc.
run_exec () {
	rc=0
	"$INTUTIC" exec --state-dir "$PROXY_DIR/state" "$@" >out 2>err || rc=$?
}

# in_repo ARGS...: run_exec from the repository repo/, whose project file
# repo/.intutic.yaml is the run's.
in_repo () {
	rc=0
	(cd repo && "$INTUTIC" exec --state-dir "$PROXY_DIR/state" "$@") \
		>out 2>err || rc=$?
}

# runs ARGS...: intutic runs against the test's proxy, stdout in out,
# stderr in err; the exit status in rc.
runs () {
	rc=0
	"$INTUTIC" runs "$@" --state-dir "$PROXY_DIR/state" >out 2>err || rc=$?
}

# A command to run under intutic exec, in the scratch directory:
#   curls URL...   GET each URL through the proxy (the command's proxy
#                  variables), its status a line in out; the run's id in
#                  run.id, and what `intutic runs show` says of the run (from
#                  inside it) in show.out.
cat >curls <<EOF
#!/bin/sh
echo "\$INTUTIC_RUN" >"$TRASH_DIRECTORY/run.id"
"$INTUTIC" runs show "\$INTUTIC_RUN" --state-dir "$TRASH_DIRECTORY/state" \\
	>"$TRASH_DIRECTORY/show.out"
for u; do
	curl -sS --max-time 10 -o /dev/null -w "%{http_code}\n" "\$u"
done
EOF
#   agent NAME TARGET...  an agent that stays: its run's id in NAME.run,
#                  then a CONNECT tunnel to each TARGET, as its run, driven
#                  from NAME-1/, NAME-2/, ... (t/helpers/drive.py); its proxy
#                  URL, credentials included, in NAME.url once it began
#                  them; it ends when NAME.stop appears (at most 60 s).
cat >agent <<EOF
#!/bin/sh
name=\$1
shift
echo "\$INTUTIC_RUN" >"\$name.run"
auth=\${HTTPS_PROXY#http://}
auth=\${auth%@*}
i=0
for t; do
	i=\$((i + 1))
	mkdir -p "\$name-\$i"
	DRIVE_AUTH=\$auth python3 "$top_srcdir/t/helpers/drive.py" tunnel \\
		"\${HTTPS_PROXY##*:}" "\$t" "\$name-\$i" >"\$name-\$i.log" 2>&1 &
done
echo "\$HTTPS_PROXY" >"\$name.url"
n=0
while ! test -f "\$name.stop" && test \$n -lt 600; do
	sleep 0.1
	n=\$((n + 1))
done
for d in "\$name"-*/; do
	: >"\$d/quit"
done
wait
EOF
chmod +x curls agent

# start_agent NAME EXEC-OPTION... -- TARGET...: agent NAME under intutic
# exec with those options; waits for its tunnels (NAME-N/ready, each a 200).
start_agent () {
	start_agent_name_=$1
	shift
	start_agent_opts_=
	while test $# -gt 0 && test "$1" != --; do
		start_agent_opts_="$start_agent_opts_ $1"
		shift
	done
	shift
	# shellcheck disable=SC2086 # the options are words
	{ "$INTUTIC" exec --state-dir "$PROXY_DIR/state" $start_agent_opts_ \
		-- ./agent "$start_agent_name_" "$@" \
		>"$start_agent_name_.out" 2>"$start_agent_name_.err" & }
	eval "$(test_var_name_ "$start_agent_name_")_PID=\$!"
	test_atexit ": >$start_agent_name_.stop" &&
	test_wait_for_file "$start_agent_name_.url" &&
	start_agent_i_=0 &&
	for start_agent_t_; do
		start_agent_i_=$((start_agent_i_ + 1))
		test_wait_for_file "$start_agent_name_-$start_agent_i_/ready" &&
		test_grep "^HTTP/1.1 200" "$start_agent_name_-$start_agent_i_/ready" ||
			return 1
	done
}

# as NAME URL: the status curl gets for URL through the proxy as the run of
# agent NAME (its credentials).
as () {
	curl -sS --max-time "$TEST_CURL_SECONDS" -o /dev/null \
		-w "%{http_code}\n" -x "$(cat "$1.url")" "$2"
}

# policy_line TEXT: the line of the deny entry TEXT in the policy that
# `intutic runs show` printed in show.out ("deny: TEXT (line N)").
policy_line () {
	sed -n "s/^deny: *$1 (line \([0-9]*\))\$/\1/p" show.out
}

# denied_other: the run of the last `curls "$O" "$A"` (out, run.id,
# show.out; server_mark other.test and audit_mark before it) got 403 from
# other.test, denied by the deny entry of its policy that `runs show` named,
# and 200 from allowed.test; nothing reached other.test.
denied_other () {
	test "$rc" = 0 &&
	printf "403\n200\n" >expect &&
	test_cmp expect out &&
	run=$(cat run.id) &&
	line=$(policy_line other.test) &&
	test -n "$line" &&
	audit_since 2 &&
	audit_expect 1 event=decision run="$run" host=other.test decision=deny \
		reason=denied "rule=run $run's policy:$line" &&
	audit_expect 1 event=decision run="$run" host=allowed.test decision=allow &&
	server_since other.test &&
	test_must_be_empty other.test.new
}

# reaches_other: a run without a policy reaches other.test.
reaches_other () {
	server_mark other.test &&
	run_exec -- ./curls "$O" &&
	test "$rc" = 0 &&
	echo 200 >expect &&
	test_cmp expect out &&
	test_grep "^policy: +none" show.out &&
	server_since other.test &&
	test_line_count = 1 other.test.new
}

# generation RUN: the generation of RUN's policy, as the proxy says it.
generation () {
	control_curl "/v1/runs/$1" |
	python3 -c "import json, sys; print(json.load(sys.stdin)[\"generation\"])"
}

# auth NAME: the credentials (RUN:TOKEN) of agent NAME's proxy URL.
auth () {
	sed "s|^http://\([^@]*\)@.*|\1|" "$1.url"
}

test_expect_success 'setup: two origins, an echo server, the operator'"'"'s rules, the proxy, a repository' '
	start_origin allowed.test &&
	start_origin other.test &&
	start_echo &&
	write_hosts hosts allowed.test=127.0.0.1 other.test=127.0.0.1 \
		echo.test=127.0.0.1 echo2.test=127.0.0.1 &&
	A=http://allowed.test:$ALLOWED_TEST_PORT/ &&
	O=http://other.test:$OTHER_TEST_PORT/ &&
	cat >rules.yaml <<-EOF &&
	version: 1
	ports: [$ALLOWED_TEST_PORT, $OTHER_TEST_PORT]
	allow:
	  - allowed.test
	  - other.test
	  - "echo.test:$ECHO_PORT"
	  - "echo2.test:$ECHO_PORT"
	  - "127.0.0.0/8:$ALLOWED_TEST_PORT,$OTHER_TEST_PORT,$ECHO_PORT"
	EOF
	cp rules.yaml rules.good &&
	start_proxy rules.yaml &&
	mkdir -p repo/.git
'

test_expect_success 'a project file'"'"'s deny entry: the run gets 403 there, denied by its policy, and nothing reaches other.test' '
	cat >repo/.intutic.yaml <<-EOF &&
	version: 1
	deny:
	  - other.test
	EOF
	server_mark other.test &&
	audit_mark &&
	in_repo -- ../curls "$O" "$A" &&
	denied_other &&
	test_grep "^policy: +its own" show.out &&
	test_grep "^allow: +- \(no allowlist of its own" show.out &&
	audit_expect 1 event=run run="$run" \
		project="$TRASH_DIRECTORY/repo/.intutic.yaml"
'

test_expect_success 'a run without the project file reaches other.test' '
	reaches_other
'

test_expect_success '--deny: the run gets 403 there, denied by its policy; nothing reaches other.test; the next run without it does' '
	server_mark other.test &&
	audit_mark &&
	run_exec --deny other.test -- ./curls "$O" "$A" &&
	denied_other &&
	reaches_other
'

test_expect_success '--allow narrows: the run reaches only the host it names' '
	server_mark other.test &&
	audit_mark &&
	run_exec --allow allowed.test -- ./curls "$A" "$O" &&
	test "$rc" = 0 &&
	printf "200\n403\n" >expect &&
	test_cmp expect out &&
	run=$(cat run.id) &&
	test_grep "^allow: +allowed.test \(line [0-9]*\)\$" show.out &&
	audit_since 2 &&
	audit_expect 1 event=decision run="$run" host=other.test decision=deny \
		reason=not-allowlisted &&
	server_since other.test &&
	test_must_be_empty other.test.new
'

test_expect_success 'the project file'"'"'s entries and the options together, in order, with the project'"'"'s ports' '
	cat >repo/.intutic.yaml <<-EOF &&
	version: 1
	ports: [$ALLOWED_TEST_PORT]
	allow:
	  - allowed.test
	deny:
	  - "*.allowed.test"
	EOF
	in_repo --allow "other.test:$OTHER_TEST_PORT" --deny echo.test \
		--deny echo2.test -- ../curls "$A" "$O" &&
	test "$rc" = 0 &&
	printf "200\n200\n" >expect &&
	test_cmp expect out &&
	sed -n "s/^\(ports\|allow\|deny\): *\([^ ]*\).*/\1 \2/p" show.out >got &&
	cat >expect <<-EOF &&
	ports $ALLOWED_TEST_PORT
	allow allowed.test
	allow other.test:$OTHER_TEST_PORT
	deny *.allowed.test
	deny echo.test
	deny echo2.test
	EOF
	test_cmp expect got &&
	rm repo/.intutic.yaml
'

test_expect_success 'a widening or malformed --allow, --deny: refused (2) naming the option and the entry; nothing registered, nothing run' '
	audit_mark &&
	while IFS="|" read -r opt entry why; do
		run_exec "$opt" "$entry" -- touch started &&
		test "$rc" = 2 &&
		test_grep "^intutic exec: $opt .$entry.: $why" err || return 1
	done <<-EOF &&
	--allow|evil.test|the operator.s rules .* do not allow evil.test:$ALLOWED_TEST_PORT\$
	--allow|allowed.test:8443|.* do not allow allowed.test:8443 .*is for other ports\)\$
	--allow|a..b|empty label
	--deny|*|a wildcard alone
	--deny|x.test, y.test|character not allowed in a name
	EOF
	test_path_is_missing started &&
	audit_since 0 &&
	audit_expect 0 event=run
'

test_expect_success 'a project file that widens: refused (2) naming its file:line and entry; nothing registered' '
	cat >repo/.intutic.yaml <<-EOF &&
	version: 1
	deny:
	  - other.test
	allow:
	  - evil.test
	EOF
	audit_mark &&
	in_repo -- touch started &&
	test "$rc" = 2 &&
	test_grep "repo/\.intutic\.yaml: refused" err &&
	test_grep "\.intutic\.yaml:5: allow .evil\.test." err &&
	test_path_is_missing repo/started &&
	audit_since 0 &&
	audit_expect 0 event=run &&
	rm repo/.intutic.yaml
'

test_expect_success 'more than 64 --deny: a usage error (2)' '
	set -- &&
	for i in $(seq 65); do set -- "$@" --deny "h$i.test"; done &&
	run_exec "$@" -- touch started &&
	test "$rc" = 2 &&
	test_grep "more than 64 --deny entries" err &&
	test_path_is_missing started
'

test_expect_success 'live: agent A (--deny other.test) holds tunnels to echo.test and echo2.test, agent B (--allow) one to echo.test' '
	start_agent a --deny other.test -- "echo.test:$ECHO_PORT" \
		"echo2.test:$ECHO_PORT" &&
	start_agent b --allow allowed.test --allow "echo.test:$ECHO_PORT" -- \
		"echo.test:$ECHO_PORT" &&
	tunnel_echo a-1 1 one &&
	tunnel_echo a-2 1 two &&
	tunnel_echo b-1 1 three
'

test_expect_success 'runs show and list: the policy, its generation, the counters and the last denials' '
	as a "$O" >code &&
	echo 403 >expect &&
	test_cmp expect code &&
	runs show "$(cat a.run)" &&
	test "$rc" = 0 &&
	mv out show.out &&
	test_grep "^generation: +1\$" show.out &&
	test_grep "^ports: +$ALLOWED_TEST_PORT, $OTHER_TEST_PORT\$" show.out &&
	test_grep "^deny: +other.test \(line [0-9]+\)\$" show.out &&
	test_grep "^requests: +3\$" show.out &&
	test_grep "^denials: +1\$" show.out &&
	test_grep "^denied: +other.test:$OTHER_TEST_PORT: denied \(run $(cat a.run).s policy:$(policy_line other.test)\), [0-9]+s ago\$" show.out &&
	runs show "$(cat a.run)" --json &&
	control_curl "/v1/runs/$(cat a.run)" >expect &&
	test_cmp expect out &&
	runs list &&
	test_grep "^RUN +UID +PID +AGE +GEN +REQUESTS +DENIALS +BYTES +COMMAND +PROJECT\$" out &&
	test_grep "^$(cat a.run) +$(id -u) +[0-9]+ +[0-9]+s +1 +3 +1 +[0-9]+ +agent +-\$" out
'

test_expect_success 'rules test --run decides as the proxy did: a host its policy denies, one it allows' '
	a=$(cat a.run) &&
	audit_mark &&
	as a "$O" >code &&
	echo 403 >expect &&
	test_cmp expect code &&
	as a "$A" >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	audit_since 2 &&
	test_expect_code 1 "$INTUTIC" rules test --run "$a" \
		--state-dir "$PROXY_DIR/state" "other.test:$OTHER_TEST_PORT" >rt &&
	test_grep "^decision: deny\$" rt &&
	test_grep "^reason:   denied\$" rt &&
	rule=$(sed -n "s/^rule: *\(.*\) (deny other.test)\$/\1/p" rt) &&
	test "$rule" = "run $a'"'"'s policy:$(policy_line other.test)" &&
	audit_expect 1 event=decision run="$a" host=other.test decision=deny \
		reason=denied "rule=$rule" &&
	test_expect_code 1 "$INTUTIC" rules test --json --run "$a" \
		--state-dir "$PROXY_DIR/state" "other.test:$OTHER_TEST_PORT" >rt.json &&
	python3 -c "
import json, sys
j = json.load(open(\"rt.json\"))
assert j[\"run\"] == sys.argv[1] and j[\"decision\"] == \"deny\", j
assert j[\"reason\"] == \"denied\", j
assert j[\"rule\"] == {\"where\": sys.argv[2], \"kind\": \"deny\",
    \"entry\": \"other.test\"}, j
" "$a" "$rule" &&
	"$INTUTIC" rules test --run "$a" --state-dir "$PROXY_DIR/state" \
		"allowed.test:$ALLOWED_TEST_PORT" 127.0.0.1 >rt &&
	test_grep "^decision: allow\$" rt &&
	test_grep "^reason:   allowed\$" rt &&
	line=$(grep -n "^  - allowed.test\$" rules.yaml | cut -d: -f1) &&
	test_grep "^rule:     rules.yaml:$line \(allow allowed.test\)\$" rt &&
	test_grep "^dial:     127.0.0.1\$" rt &&
	audit_expect 1 event=decision run="$a" host=allowed.test decision=allow \
		reason=allowed addr=127.0.0.1 "rule=rules.yaml:$line" &&
	test_expect_code 1 "$INTUTIC" rules test --run "$(cat b.run)" \
		--state-dir "$PROXY_DIR/state" "other.test:$OTHER_TEST_PORT" >rt &&
	test_grep "^reason:   not-allowlisted\$" rt &&
	test_expect_code 2 "$INTUTIC" rules test --run run-nosuch \
		--state-dir "$PROXY_DIR/state" allowed.test 2>err &&
	test_grep "no run .run-nosuch." err &&
	test_expect_code 2 "$INTUTIC" rules test --state-dir "$PROXY_DIR/state" \
		rules.yaml allowed.test 2>err &&
	test_grep "goes with --run" err
'

test_expect_success 'runs deny while agent A holds its tunnels: the one to echo.test closes within 1 s, with a revoke record; the others stay' '
	a=$(cat a.run) &&
	audit_mark &&
	T0=$(date +%s.%N) &&
	runs deny "$a" echo.test &&
	T1=$(date +%s.%N) &&
	test "$rc" = 0 &&
	echo "run $a: policy generation 2: denied echo.test" >expect &&
	test_cmp expect out &&
	test_wait_for_file a-1/eof 2 &&
	awk -v a="$T0" -v b="$(cat a-1/eof)" "BEGIN { exit !(b - a < 1) }" &&
	awk -v a="$T0" -v b="$T1" "BEGIN { exit !(b - a < 1) }" &&
	"$INTUTIC" runs show "$a" --state-dir "$PROXY_DIR/state" >show.out &&
	audit_count "$AUDIT_FILE" event=revoke run="$a" host=echo.test \
		reason=denied "rule=run $a'"'"'s policy:$(policy_line echo.test)" >n &&
	echo 1 >expect &&
	test_cmp expect n &&
	test_path_is_missing a-2/eof &&
	test_path_is_missing b-1/eof &&
	tunnel_echo a-2 2 "two, after" &&
	tunnel_echo b-1 2 "three, after" &&
	DRIVE_AUTH=$(auth a) tunnel_open a-new "echo.test:$ECHO_PORT" &&
	test_grep "^HTTP/1.1 403" a-new/ready
'

test_expect_success 'runs deny again: nothing to change, said so, the generation stays' '
	runs deny "$(cat a.run)" echo.test &&
	test "$rc" = 0 &&
	echo "run $(cat a.run): policy generation 2: echo.test denied already" >expect &&
	test_cmp expect out
'

test_expect_success 'runs allow lifts the deny: the run reaches echo.test again' '
	a=$(cat a.run) &&
	runs allow "$a" echo.test &&
	test "$rc" = 0 &&
	echo "run $a: policy generation 3: allowed echo.test (its deny entry removed)" >expect &&
	test_cmp expect out &&
	DRIVE_AUTH=$(auth a) tunnel_open a-3 "echo.test:$ECHO_PORT" &&
	test_grep "^HTTP/1.1 200" a-3/ready &&
	tunnel_echo a-3 1 "back" &&
	: >a-3/quit
'

test_expect_success 'runs allow on a run without an allowlist of its own: refused (1), nothing changed' '
	a=$(cat a.run) &&
	runs allow "$a" allowed.test &&
	test "$rc" = 1 &&
	test_grep "run $a has no allowlist of its own" err &&
	test_grep "nothing to allow" err &&
	test "$(generation "$a")" = 3
'

test_expect_success 'runs allow on a run with an allowlist: added to it, and the run reaches the host; a widening one is refused (1)' '
	b=$(cat b.run) &&
	as b "$O" >code &&
	echo 403 >expect &&
	test_cmp expect code &&
	runs allow "$b" other.test &&
	test "$rc" = 0 &&
	echo "run $b: policy generation 2: allowed other.test (on its allowlist)" >expect &&
	test_cmp expect out &&
	as b "$O" >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	runs allow "$b" evil.test &&
	test "$rc" = 1 &&
	test_grep "runs allow: .evil.test.: the operator.s rules .* do not allow evil.test" err &&
	runs allow "$b" "a..b" &&
	test "$rc" = 2 &&
	test_grep "runs allow: .a\.\.b.: empty label" err
'

test_expect_success 'runs deny on an unknown run: its 404 message, exit 1; on no run or no entry: usage (2)' '
	runs deny run-nosuch echo.test &&
	test "$rc" = 1 &&
	test_grep "^intutic: runs deny: no run .run-nosuch. \(HTTP 404\)\$" err &&
	runs deny &&
	test "$rc" = 2 &&
	test_grep "which RUN" err &&
	runs deny run-nosuch &&
	test "$rc" = 2 &&
	test_grep "which ENTRY" err
'

test_expect_success 'the agents end: their tunnels close, their runs are forgotten' '
	: >a.stop &&
	: >b.stop &&
	wait "$A_PID" &&
	wait "$B_PID" &&
	control_curl /v1/runs >list &&
	test_grep -v "$(cat a.run)" list &&
	test_grep -v "$(cat b.run)" list
'

test_expect_success 'setup: a control socket that answers as a proxy would when things change under it (fake/)' '
	mkdir -p fake &&
	control_curl /v1/rules >fake/rules.json &&
	cat >fake/control.py <<-\EOF &&
	# The control API as a proxy answers it when things change meanwhile:
	# GET /v1/rules: the answer of the proxy of the test; POST /v1/runs: kept in
	# reg.json, refused (400); run-once and run-always are runs whose
	# generation goes up after the first read, or after every read, as if
	# someone changed them then: a PUT of another generation gets 409, one
	# of the right one 200 (and is kept in put.N.json).
	import json, os, socketserver, sys
	from http.server import BaseHTTPRequestHandler
	d = sys.argv[1]
	gen = {"run-once": 1, "run-always": 1}
	reads = {"run-once": 0, "run-always": 0}
	puts = [0]
	class H(BaseHTTPRequestHandler):
	    def log_message(self, *a):
	        pass
	    def answer(self, status, doc):
	        body = (doc if isinstance(doc, bytes) else json.dumps(doc).encode())
	        self.send_response(status)
	        self.send_header("Content-Type", "application/json")
	        self.send_header("Content-Length", str(len(body)))
	        self.send_header("Connection", "close")
	        self.end_headers()
	        self.wfile.write(body)
	    def body(self):
	        return self.rfile.read(int(self.headers["Content-Length"]))
	    def do_GET(self):
	        if self.path == "/v1/rules":
	            return self.answer(200, open(os.path.join(d, "rules.json"), "rb").read())
	        run = self.path.rsplit("/", 1)[-1]
	        if run not in gen:
	            return self.answer(404, {"error": "no run %r" % run})
	        self.answer(200, {"run": run, "generation": gen[run], "policy": None})
	        reads[run] += 1
	        if run == "run-always" or reads[run] == 1:
	            gen[run] += 1
	    def do_POST(self):
	        open(os.path.join(d, "reg.json"), "wb").write(self.body())
	        self.answer(400, {"error": "run X\u0027s policy would widen the "
	                          "operator\u0027s rules: \u001b[31mred"})
	    def do_PUT(self):
	        run = self.path.split("/")[3]
	        change = json.loads(self.body())
	        if change["generation"] != gen[run]:
	            return self.answer(409, {"error": "run %r has policy generation "
	                "%d, not %d" % (run, gen[run], change["generation"])})
	        puts[0] += 1
	        json.dump(change, open(os.path.join(d, "put.%d.json" % puts[0]), "w"))
	        gen[run] += 1
	        self.answer(200, {"run": run, "generation": gen[run]})
	s = socketserver.UnixStreamServer(os.path.join(d, "control.sock"), H)
	open(os.path.join(d, "ready"), "w").write("ready\n")
	s.serve_forever()
	EOF
	{ python3 fake/control.py fake >fake/log 2>&1 & } &&
	test_atexit "test_stop_child_ $!" &&
	test_wait_for_file fake/ready &&
	python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
s[\"control\"] = sys.argv[2]
json.dump(s, open(sys.argv[3], \"w\"))
" state/proxy.json "$PWD/fake/control.sock" fake/proxy.json
'

test_expect_success 'the proxy'"'"'s refusal of a registration reaches the user as it said it, and nothing runs (125); what was sent: the policy' '
	rc=0 &&
	"$INTUTIC" exec --proxy "$PROXY_URL" --state-dir fake --deny other.test \
		-- touch started >out 2>err || rc=$? &&
	test "$rc" = 125 &&
	test_grep "did not take the run: run X.s policy would widen the operator.s rules: \\\\x1b\[31mred \(HTTP 400\)\$" err &&
	test_path_is_missing started &&
	python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
p = json.loads(r[\"policy\"])
assert p == {\"version\": 1, \"ports\": [int(sys.argv[2]), int(sys.argv[3])],
             \"allow\": [], \"deny\": [\"other.test\"]}, p
assert r[\"command\"] == \"touch\" and r[\"project\"] is None, r
" fake/reg.json "$ALLOWED_TEST_PORT" "$OTHER_TEST_PORT"
'

test_expect_success 'a change made meanwhile is never undone: on 409 the run is read again and the change tried once more; twice: refused (1)' '
	"$INTUTIC" runs deny run-once x.test --state-dir fake >out 2>err &&
	echo "run run-once: policy generation 3: denied x.test" >expect &&
	test_cmp expect out &&
	test_path_is_missing fake/put.2.json &&
	python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))
assert c[\"generation\"] == 2, c
assert json.loads(c[\"policy\"])[\"deny\"] == [\"x.test\"], c
" fake/put.1.json &&
	test_expect_code 1 "$INTUTIC" runs deny run-always x.test \
		--state-dir fake >out 2>err &&
	test_grep "runs deny: run .run-always. has policy generation 3, not 2 \(HTTP 409\) \(nothing changed\)" err &&
	test_must_be_empty out &&
	test_path_is_missing fake/put.2.json
'

test_expect_success 'exec without its control socket known: refused (125), naming --state-dir' '
	rc=0 &&
	"$INTUTIC" exec --proxy "$PROXY_URL" -- touch started >out 2>err || rc=$? &&
	test "$rc" = 125 &&
	test_grep "cannot read the operator.s rules from the proxy at $PROXY_URL: its control socket is not known.*give --state-dir" err &&
	test_path_is_missing started
'

test_expect_success 'a rule file on disk that no longer loads: the proxy keeps its rules, and exec goes on with them, saying nothing of the file' '
	printf "version: 1\nallow:\n  - [broken\n" >rules.yaml &&
	test_must_fail reload_proxy &&
	run_exec --deny other.test -- ./curls "$A" "$O" &&
	test "$rc" = 0 &&
	printf "200\n403\n" >expect &&
	test_cmp expect out &&
	! grep -i "rule" err &&
	INTUTIC_RULES=$TRASH_DIRECTORY/no-such-rules.yaml \
		run_exec --proxy "$PROXY_URL" -- ./curls "$A" &&
	test "$rc" = 0 &&
	echo 200 >expect &&
	test_cmp expect out &&
	! grep -i "rule" err &&
	INTUTIC_PROXY_URL=$PROXY_URL INTUTIC_RULES=$TRASH_DIRECTORY/no-such-rules.yaml \
		run_exec -- ./curls "$A" &&
	test "$rc" = 0 &&
	test_cmp expect out &&
	cp rules.good rules.yaml
'

test_done
