#!/bin/sh
test_description='intutic exec on the host: the proxy found and checked, the run registered and in the audit log, the environment by name, exit statuses, the enforcement level and the profile'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl

# Nothing of this machine's settings: no workspace API, a settings file of
# the test's own (absent unless a test writes it), caches in the scratch
# directory, no profile.
test_exec_env
SETTINGS=$INTUTIC_SETTINGS_FILE
XDG_STATE_HOME=$TRASH_DIRECTORY/xdg-state
export XDG_STATE_HOME

SECRET_VALUE=s3cr3t-value-6001

# run_exec ARGS...: intutic exec against the test's proxy, stdout in out,
# stderr in err; the exit status in rc.
run_exec () {
	rc=0
	"$INTUTIC" exec --state-dir "$PROXY_DIR/state" "$@" >out 2>err || rc=$?
}

test_expect_success 'setup: an origin and a second host, names, rules, the proxy' '
	start_origin origin.test &&
	start_origin other.test &&
	write_hosts hosts origin.test=127.0.0.1 other.test=127.0.0.1 &&
	cat >rules.yaml <<-EOF &&
	version: 1
	ports: [443]
	allow:
	  - "origin.test:$ORIGIN_TEST_PORT"
	  - "127.0.0.0/8:$ORIGIN_TEST_PORT,$OTHER_TEST_PORT"
	EOF
	start_proxy rules.yaml
'

test_expect_success 'curl inside the command reaches an allowed origin; the audit records carry the run' '
	audit_mark &&
	run_exec -- sh -c "curl -sS http://origin.test:$ORIGIN_TEST_PORT/ &&
		printf \"%s\\n\" \"\$INTUTIC_RUN\" >run" &&
	test "$rc" = 0 &&
	test_grep "^hello from origin.test:$ORIGIN_TEST_PORT\$" out &&
	RUN=$(cat run) &&
	case $RUN in run-[0-9a-f]*) ;; *) false ;; esac &&
	audit_since 1 &&
	audit_expect 1 event=run run="$RUN" command=sh &&
	audit_expect 1 event=decision run="$RUN" host=origin.test \
		decision=allow reason=allowed &&
	audit_expect 1 event=close run="$RUN" host=origin.test
'

test_expect_success 'a host the rules do not allow gets 403, attributed to the run' '
	audit_mark &&
	run_exec -- sh -c "curl -sS -o body -w \"%{http_code}\\n\" \
		http://other.test:$OTHER_TEST_PORT/; printf \"%s\\n\" \"\$INTUTIC_RUN\" >run" &&
	test "$rc" = 0 &&
	echo 403 >expect &&
	test_cmp expect out &&
	test_grep "not-allowlisted" body &&
	audit_since 1 &&
	audit_expect 1 event=decision run="$(cat run)" host=other.test \
		decision=deny reason=not-allowlisted
'

test_expect_success 'the command is exec()ed: same pid as intutic exec' '
	"$INTUTIC" exec --state-dir "$PROXY_DIR/state" -- sh -c "echo \$\$" \
		>pid 2>err &
	launched=$! &&
	wait "$launched" &&
	echo "$launched" >expect &&
	test_cmp expect pid
'

test_expect_success 'exit statuses propagate: 0, 3, 42, and 128+N for a signal' '
	for want in 0 3 42; do
		run_exec -- sh -c "exit $want" &&
		test "$rc" = "$want" || return 1
	done &&
	run_exec -- sh -c "kill -TERM \$\$" &&
	test "$rc" = 143
'

test_expect_success 'a command that is not there: 127; not executable: 126' '
	run_exec -- no-such-command-6001 &&
	test "$rc" = 127 &&
	test_grep "no-such-command-6001" err &&
	printf "#!/bin/sh\nexit 0\n" >not-exec &&
	chmod 644 not-exec &&
	run_exec -- ./not-exec &&
	test "$rc" = 126
'

test_expect_success 'the proxy down: 125 with the message, and the command never started' '
	port=$(free_port) &&
	rc=0 &&
	"$INTUTIC" exec --proxy "http://127.0.0.1:$port" -- touch started \
		>out 2>err || rc=$? &&
	test "$rc" = 125 &&
	test_grep "the intutic proxy is not running at http://127.0.0.1:$port" err &&
	test_grep "start it with .intutic start." err &&
	test_path_is_missing started &&
	rc=0 &&
	INTUTIC_PROXY_URL="http://127.0.0.1:$port" "$INTUTIC" exec -- \
		touch started >out 2>err || rc=$? &&
	test "$rc" = 125 &&
	test_path_is_missing started
'

test_expect_success 'no state file and nothing at the default address: 125' '
	rc=0 &&
	"$INTUTIC" exec --state-dir "$TRASH_DIRECTORY/no-state" -- \
		touch started >out 2>err || rc=$? &&
	test "$rc" = 125 &&
	test_grep "not running at http://127.0.0.1:8877" err &&
	test_path_is_missing started
'

test_expect_success 'the environment: a base set, -e names, nothing else' '
	SECRET_6001=$SECRET_VALUE OTHER_6001=not-for-the-agent \
		run_exec -e SECRET_6001 -- sh -c "env >env.out" &&
	test "$rc" = 0 &&
	test_grep "^SECRET_6001=$SECRET_VALUE\$" env.out &&
	test_grep -v "^OTHER_6001=" env.out &&
	test_grep "^PATH=" env.out &&
	test_grep "^HOME=" env.out &&
	test_grep "^NO_PROXY=localhost,127.0.0.1,::1\$" env.out &&
	test_grep "^no_proxy=localhost,127.0.0.1,::1\$" env.out &&
	test_grep "^NODE_USE_ENV_PROXY=1\$" env.out &&
	test_grep "^INTUTIC_PROXY_URL=http://127.0.0.1:$PROXY_PORT\$" env.out &&
	run=$(sed -n "s/^INTUTIC_RUN=//p" env.out) &&
	for v in HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy all_proxy; do
		test_grep "^$v=http://$run:[0-9a-f]*@127.0.0.1:$PROXY_PORT\$" env.out ||
			return 1
	done
'

test_expect_success 'the key variables of the providers the operator names (in the rules the proxy holds) are passed when set' '
	cp rules.yaml rules.saved &&
	cat >>rules.yaml <<-EOF &&
	providers:
	  acme:
	    hosts: [api.acme.test]
	    env: [ACME_API_KEY, ACME_BASE_URL]
	EOF
	reload_proxy &&
	ACME_API_KEY=$SECRET_VALUE OPENAI_API_KEY=not-named-here \
		run_exec -- sh -c "env >env.out" &&
	mv rules.saved rules.yaml &&
	reload_proxy &&
	test "$rc" = 0 &&
	test_grep "^ACME_API_KEY=$SECRET_VALUE\$" env.out &&
	test_grep -v "^ACME_BASE_URL=" env.out &&
	test_grep -v "^OPENAI_API_KEY=" env.out
'

test_expect_success 'a key the shipped providers.yaml forwards but these rules do not: named once on stderr, never its value; -e passes it' '
	OPENAI_API_KEY=$SECRET_VALUE GROQ_API_KEY=$SECRET_VALUE GEMINI_API_KEY= \
		run_exec -- sh -c "env >env.out" &&
	test "$rc" = 0 &&
	test "$(grep -c "not passed to the agent" err)" = 1 &&
	test_grep "^intutic exec: not passed to the agent \(not in the forward list of the proxy.s rules \(rules.yaml\)\): OPENAI_API_KEY, GROQ_API_KEY; -e NAME passes one, or include providers.yaml in the rules\$" err &&
	test_grep -v "$SECRET_VALUE" err &&
	test_grep -v "^OPENAI_API_KEY=" env.out &&
	OPENAI_API_KEY=$SECRET_VALUE GROQ_API_KEY=$SECRET_VALUE \
		run_exec -e OPENAI_API_KEY -- sh -c "env >env.out" &&
	test "$rc" = 0 &&
	test_grep "forward list of .*: GROQ_API_KEY; -e NAME" err &&
	test_grep "^OPENAI_API_KEY=$SECRET_VALUE\$" env.out &&
	run_exec -- true &&
	test_grep -v "not passed to the agent" err
'

test_expect_success 'the proxy'\''s rules with a provider gateway (every key, switched on) still load in exec; the key passes, the base URL is the gateway'\''s' '
	cp rules.yaml rules.saved &&
	cat >>rules.yaml <<-EOF &&
	gateway: {acme: on}
	providers:
	  acme:
	    hosts: [api.acme.test]
	    env: [ACME_API_KEY, ACME_BASE_URL]
	    api: "api.acme.test:8443"
	    base-url: [ACME_BASE_URL=/v1]
	    key-headers: [X-Api-Key, Authorization]
	    broker: {env: ACME_API_KEY, header: x-api-key, scheme: "",
	             prefix: acme-, length: 40}
	EOF
	reload_proxy &&
	ACME_API_KEY=$SECRET_VALUE ACME_BASE_URL=http://elsewhere.test \
		run_exec -- sh -c "env >env.out" &&
	mv rules.saved rules.yaml &&
	reload_proxy &&
	test "$rc" = 0 &&
	test_grep "^ACME_API_KEY=$SECRET_VALUE\$" env.out &&
	test_grep "^ACME_BASE_URL=$PROXY_URL/r/run-[0-9a-f]*:[0-9a-f]*/providers/acme/v1\$" env.out &&
	test_grep "ACME_BASE_URL is set; the command gets the provider gateway" err
'

reload_errors_above () {
	test "$(proxy_metric intutic_reload_errors_total)" -gt "$1"
}

test_expect_success 'a brokered provider the proxy holds no key for: the reload is refused, the old rules stay' '
	cp rules.yaml rules.saved &&
	cat >>rules.yaml <<-EOF &&
	gateway: {acme: broker}
	providers:
	  acme:
	    api: "api.acme.test:8443"
	    key-headers: [x-api-key]
	    broker: {env: ACME_KEY_6001, header: x-api-key, prefix: acme-, length: 40}
	EOF
	errs=$(proxy_metric intutic_reload_errors_total) &&
	kill -HUP "$PROXY_PID" &&
	wait_until 10 reload_errors_above "$errs" &&
	mv rules.saved rules.yaml &&
	test_grep "reload refused, the old rules stay: the provider gateway: the rules broker acme" "$PROXY_LOG" &&
	reload_proxy
'

test_expect_success 'a -e name that is not set is skipped with a note' '
	run_exec -e UNSET_6001 -- sh -c "env >env.out" &&
	test "$rc" = 0 &&
	test_grep "UNSET_6001: not set" err &&
	test_grep -v "^UNSET_6001" env.out
'

test_expect_success 'loader and shell instructions are refused (2), unless --allow-env' '
	for name in LD_PRELOAD LD_LIBRARY_PATH BASH_ENV ENV PROMPT_COMMAND \
	    PYTHONSTARTUP PERL5OPT NODE_OPTIONS; do
		run_exec -e "$name" -- touch started &&
		test "$rc" = 2 &&
		test_grep "$name instructs a loader, shell or interpreter" err &&
		test_path_is_missing started || return 1
	done &&
	NODE_OPTIONS=--no-warnings run_exec --allow-env NODE_OPTIONS -- \
		sh -c "env >env.out" &&
	test "$rc" = 0 &&
	test_grep "^NODE_OPTIONS=--no-warnings\$" env.out
'

test_expect_success 'values never on a command line: -e NAME=VALUE is refused, and says no value' '
	run_exec -e "SECRET_6001=$SECRET_VALUE" -- touch started &&
	test "$rc" = 2 &&
	test_path_is_missing started &&
	test_grep "takes a variable.s name, not a value" err &&
	! grep -F "$SECRET_VALUE" out err
'

test_expect_success 'the variables intutic sets cannot be passed with -e' '
	for name in HTTP_PROXY https_proxy NO_PROXY INTUTIC_RUN; do
		run_exec -e "$name" -- touch started &&
		test "$rc" = 2 &&
		test_grep "intutic sets $name itself" err || return 1
	done &&
	test_path_is_missing started
'

test_expect_success 'no secret value in the command line of anything started, nor in a log' '
	SECRET_6001=$SECRET_VALUE run_exec -e SECRET_6001 -- sh -c "
		cat /proc/\$\$/cmdline >cmdline.self &&
		curl -sS -o /dev/null http://origin.test:$ORIGIN_TEST_PORT/ &
		sleep 0.2; cat /proc/\$!/cmdline >cmdline.curl 2>/dev/null; wait
		env >env.out" &&
	test "$rc" = 0 &&
	token=$(sed -n "s/^HTTP_PROXY=http:[/][/][^:]*:\([0-9a-f]*\)@.*/\1/p" env.out) &&
	test -n "$token" &&
	! grep -F "$SECRET_VALUE" cmdline.self out err "$PROXY_LOG" "$AUDIT_FILE" &&
	! grep -F "$token" cmdline.self out err "$PROXY_LOG" "$AUDIT_FILE" &&
	! grep -aF "$SECRET_VALUE" "/proc/$PROXY_PID/cmdline"
'

test_expect_success 'proxy variables that pointed elsewhere are replaced, with a note that shows no value' '
	HTTPS_PROXY=http://user:pw-6001@elsewhere.test:3128 run_exec -- \
		sh -c "env >env.out" &&
	test "$rc" = 0 &&
	test_grep "HTTPS_PROXY pointed to another proxy" err &&
	! grep -F "pw-6001" err out &&
	test_grep "^HTTPS_PROXY=http://run-[0-9a-f]*:[0-9a-f]*@127.0.0.1:$PROXY_PORT\$" env.out
'

test_expect_success 'credentials of no registered run: 407, denied as proxy-auth, the token not logged' '
	audit_mark &&
	rc=0 &&
	curl -sS -o body -w "%{http_code}\n" \
		-x "http://run-nosuch:0123456789abcdef0123456789abcdef@127.0.0.1:$PROXY_PORT" \
		"http://origin.test:$ORIGIN_TEST_PORT/" >code || rc=$? &&
	echo 407 >expect &&
	test_cmp expect code &&
	audit_since 1 &&
	audit_expect 1 event=decision decision=deny reason=proxy-auth run= &&
	! grep -F 0123456789abcdef0123456789abcdef "$AUDIT_FILE" "$PROXY_LOG"
'

test_expect_success 'the data port registers no run: /v1/runs and /v1/rules answer 404 naming the control socket' '
	tok=0123456789abcdef0123456789abcdef &&
	printf "{\"run\":\"run-data\",\"token\":\"%s\",\"command\":\"c\"}" "$tok" >reg &&
	for path in /v1/runs /v1/runs/run-data /v1/runs/run-data/policy /v1/rules; do
		curl -sS --noproxy "*" -o body -w "%{http_code}\n" --data-binary @reg \
			"$PROXY_URL$path" >code &&
		echo 404 >expect &&
		test_cmp expect code &&
		test_grep "control socket, $CONTROL_SOCKET, not on its data port" body ||
		return 1
	done &&
	control_curl /v1/runs >list &&
	test_grep -v "run-data" list &&
	rc=0 &&
	curl -sS -o /dev/null -w "%{http_code}\n" \
		-x "http://run-data:$tok@127.0.0.1:$PROXY_PORT" \
		"http://origin.test:$ORIGIN_TEST_PORT/" >code || rc=$? &&
	echo 407 >expect &&
	test_cmp expect code
'

test_expect_success 'the control socket: the proxy user'"'"'s, mode 0660, named in the state file' '
	test -S "$CONTROL_SOCKET" &&
	stat -c "%a %u" "$CONTROL_SOCKET" >got &&
	echo "660 $(id -u)" >expect &&
	test_cmp expect got &&
	python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[\"control\"])" \
		"$PROXY_DIR/state/proxy.json" >got &&
	echo "$CONTROL_SOCKET" >expect &&
	test_cmp expect got
'

test_expect_success 'control API: register, list, show, end; its records; a run ended is 407' '
	tok=0123456789abcdef0123456789abcdef &&
	audit_mark &&
	printf "{\"run\":\"run-ctl\",\"token\":\"%s\",\"command\":\"agent\",\"project\":\"/p\",\"pid\":%d}" \
		"$tok" $$ >reg &&
	control_curl /v1/runs -o body -w "%{http_code}\n" --data-binary @reg >code &&
	echo 201 >expect &&
	test_cmp expect code &&
	test_grep "\"run\":\"run-ctl\"" body &&
	control_curl /v1/runs -o list -w "%{http_code}\n" >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	python3 -c "
import json, sys
runs = json.load(open(\"list\"))[\"runs\"]
r = [x for x in runs if x[\"run\"] == \"run-ctl\"][0]
assert r[\"uid\"] == int(sys.argv[1]) and r[\"pid\"] == int(sys.argv[2]), r
assert r[\"command\"] == \"agent\" and r[\"project\"] == \"/p\", r
assert \"token\" not in r, r
" "$(id -u)" $$ &&
	control_curl /v1/runs/run-ctl -o one >/dev/null &&
	test_grep "\"run\":\"run-ctl\"" one &&
	proxy_curl -o /dev/null -w "%{http_code}\n" \
		-x "http://run-ctl:$tok@127.0.0.1:$PROXY_PORT" \
		"http://origin.test:$ORIGIN_TEST_PORT/" >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	control_curl /v1/runs/run-ctl -X DELETE -o body -w "%{http_code}\n" >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	control_curl /v1/runs/run-ctl -o body -w "%{http_code}\n" >code &&
	echo 404 >expect &&
	test_cmp expect code &&
	rc=0 &&
	curl -sS -o /dev/null -w "%{http_code}\n" \
		-x "http://run-ctl:$tok@127.0.0.1:$PROXY_PORT" \
		"http://origin.test:$ORIGIN_TEST_PORT/" >code || rc=$? &&
	echo 407 >expect &&
	test_cmp expect code &&
	audit_since 2 &&
	audit_expect 1 event=run run=run-ctl status=201 command=agent &&
	audit_expect 1 event=run-end run=run-ctl status=200 &&
	! grep -F "$tok" "$AUDIT_FILE" "$PROXY_LOG"
'

test_expect_success 'intutic runs: list, show, --json, end; a run ended is gone; exit statuses' '
	tok=0123456789abcdef0123456789abcdef &&
	printf "{\"run\":\"run-cli\",\"token\":\"%s\",\"command\":\"claude\",\"project\":\"/src/app/.intutic.yaml\",\"pid\":%d}" \
		"$tok" $$ >reg &&
	control_curl /v1/runs -o /dev/null --data-binary @reg &&
	"$INTUTIC" runs --state-dir "$PROXY_DIR/state" >out 2>err &&
	test_must_be_empty err &&
	head -n 1 out >head &&
	test_grep "^RUN +UID +PID +AGE +GEN +REQUESTS +DENIALS +BYTES +COMMAND +PROJECT\$" head &&
	test_grep "^run-cli +$(id -u) +$$ +[0-9]+s +1 +0 +0 +0 +claude +/src/app/.intutic.yaml\$" out &&
	"$INTUTIC" runs show run-cli --state-dir "$PROXY_DIR/state" >out &&
	test_grep "^run: +run-cli\$" out &&
	test_grep "^pid: +$$\$" out &&
	test_grep "^command: +claude\$" out &&
	"$INTUTIC" runs list --json --state-dir "$PROXY_DIR/state" >json &&
	control_curl /v1/runs >expect &&
	test_cmp expect json &&
	"$INTUTIC" runs end run-cli --state-dir "$PROXY_DIR/state" >out &&
	echo "run run-cli ended" >expect &&
	test_cmp expect out &&
	test_expect_code 1 "$INTUTIC" runs show run-cli --state-dir "$PROXY_DIR/state" 2>err &&
	test_grep "no run .run-cli." err &&
	test_expect_code 1 "$INTUTIC" runs end run-cli --state-dir "$PROXY_DIR/state" 2>err &&
	test_expect_code 3 "$INTUTIC" runs --state-dir "$TRASH_DIRECTORY/no-state" 2>err &&
	test_grep "not running" err &&
	test_expect_code 2 "$INTUTIC" runs show 2>err &&
	test_grep "which RUN" err &&
	test_expect_code 2 "$INTUTIC" runs frob 2>err &&
	test_grep "list, show RUN, end RUN, allow RUN ENTRY... or deny RUN ENTRY..." err
'

test_expect_success 'control answers are framed exactly: the body is Content-Length bytes, then the connection closes' '
	for req in "GET /v1/runs" "GET /v1/runs/no-such" "PUT /v1/runs"; do
		python3 -c "
import os, socket, sys
d = os.open(os.path.dirname(sys.argv[1]), os.O_PATH)
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(\"/proc/self/fd/%d/control.sock\" % d)
s.sendall(sys.argv[2].encode() + b\" HTTP/1.1\r\nHost: x\r\n\r\n\")
data = b\"\"
while True:
    d = s.recv(65536)
    if not d:
        break
    data += d
head, _, body = data.partition(b\"\r\n\r\n\")
n = [int(l.split(b\":\")[1]) for l in head.split(b\"\r\n\") if l.lower().startswith(b\"content-length:\")][0]
assert len(body) == n, (len(body), n, data)
assert body.endswith(b\"}\n\"), body
" "$CONTROL_SOCKET" "$req" || return 1
	done
'

test_expect_success 'a registration the proxy cannot take: 400, and a run id registered twice: 409' '
	printf "{\"run\":\"run-x\",\"token\":\"short\",\"command\":\"c\"}" >reg &&
	control_curl /v1/runs -o body -w "%{http_code}\n" --data-binary @reg >code &&
	echo 400 >expect &&
	test_cmp expect code &&
	test_grep "\"error\":.*token" body &&
	printf "{\"run\":\"run-twice\",\"token\":\"%s\",\"command\":\"c\"}" \
		0123456789abcdef0123456789abcdef >reg &&
	control_curl /v1/runs -o body -w "%{http_code}\n" --data-binary @reg >code &&
	echo 201 >expect &&
	test_cmp expect code &&
	control_curl /v1/runs -o body -w "%{http_code}\n" --data-binary @reg >code &&
	echo 409 >expect &&
	test_cmp expect code &&
	test_grep "registered already" body
'

test_expect_success 'malformed control requests: 400, 404, 405, 411, 413 with the reason, nothing registered' '
	tok=0123456789abcdef0123456789abcdef &&
	control_curl /v1/runs >before &&
	for body in "not json" "[1,2]" "{\"run\":{\"a\":1}}" \
	    "{\"run\":\"r1\",\"command\":\"c\"}" \
	    "{\"run\":\"bad id\",\"token\":\"$tok\",\"command\":\"c\"}" \
	    "{\"run\":\"r2\",\"token\":\"$tok\",\"command\":\"c\",\"run\":\"r3\"}" \
	    "{\"run\":\"r4\",\"token\":\"ABCDEF0123456789ABCDEF0123456789\",\"command\":\"c\"}" \
	    "{\"run\":\"r5\",\"token\":\"$tok\",\"command\":\"c\",\"pid\":-3}"; do
		printf "%s" "$body" >reg &&
		control_curl /v1/runs -o body -w "%{http_code}\n" --data-binary @reg >code &&
		echo 400 >expect &&
		test_cmp expect code &&
		test_grep "^\{\"error\":\"" body || return 1
	done &&
	head -c 60000 /dev/zero | tr "\0" x >reg &&
	control_curl /v1/runs -o body -w "%{http_code}\n" --data-binary @reg >code &&
	echo 413 >expect &&
	test_cmp expect code &&
	control_curl /v1/runs -o body -w "%{http_code}\n" -X PUT >code &&
	echo 405 >expect &&
	test_cmp expect code &&
	control_curl /v1/runs/no-such-run -o body -w "%{http_code}\n" -X DELETE >code &&
	echo 404 >expect &&
	test_cmp expect code &&
	control_curl "/v1/runs/bad%20id" -o body -w "%{http_code}\n" >code &&
	echo 404 >expect &&
	test_cmp expect code &&
	control_curl /v1/other -o body -w "%{http_code}\n" >code &&
	echo 404 >expect &&
	test_cmp expect code &&
	control_curl /healthz -o body -w "%{http_code}\n" >code &&
	echo 404 >expect &&
	test_cmp expect code &&
	control_curl /v1/runs -o body -w "%{http_code}\n" \
		-H "Transfer-Encoding: chunked" --data-binary @/dev/null >code &&
	echo 411 >expect &&
	test_cmp expect code &&
	control_curl /v1/runs >after &&
	test_cmp before after &&
	! grep -F "$tok" "$AUDIT_FILE" "$PROXY_LOG"
'

test_expect_success 'the control socket proxies nothing: CONNECT and absolute-form are refused there' '
	audit_mark &&
	control_curl /v1/runs -o body -w "%{http_code}\n" \
		--request-target "http://origin.test:$ORIGIN_TEST_PORT/" >code &&
	echo 404 >expect &&
	test_cmp expect code &&
	control_curl /v1/runs -o body -w "%{http_code}\n" -X CONNECT \
		--request-target "origin.test:$ORIGIN_TEST_PORT" >code &&
	test "$(cat code)" -ge 400 &&
	audit_since 0 &&
	audit_expect 0 event=decision
'

test_expect_success 'a host-mode run ends with its command: the proxy forgets it once its pid is gone' '
	run_exec -- sh -c "echo \$INTUTIC_RUN >run.id" &&
	test "$rc" = 0 &&
	id=$(cat run.id) &&
	test -n "$id" &&
	control_curl /v1/runs >list &&
	test_grep -v "\"$id\"" list
'

test_expect_success '--sandbox=firecracker without firecracker: refused (125) by its first gate, nothing run (t9002 has the rest)' '
	PATH=/usr/bin:/bin run_exec --sandbox=firecracker -- touch started &&
	test "$rc" = 125 &&
	test_grep "no firecracker in PATH" err &&
	test_path_is_missing started
'

test_expect_success '--sandbox with a runtime that is not there or not running: 125, nothing run' '
	mkdir -p fakebin &&
	printf "#!/bin/sh\nexit 1\n" >fakebin/docker &&
	chmod +x fakebin/docker &&
	PATH=$PWD/fakebin:$PATH run_exec --sandbox --sandbox-runtime docker -- \
		touch started &&
	test "$rc" = 125 &&
	test_grep "docker isn.t running" err &&
	test_path_is_missing started
'

test_expect_success '--sandbox-* options: checked, and only with --sandbox (2)' '
	run_exec --sandbox-pids 10 -- touch started &&
	test "$rc" = 2 &&
	test_grep "need --sandbox" err &&
	for bad in "--sandbox-pids 0" "--sandbox-pids x" "--sandbox-memory 4q" \
	    "--sandbox-cpus -1" "--sandbox-allow 10.0.0.0/33" \
	    "--sandbox-allow example.test" "--sandbox-runtime lxc"; do
		run_exec --sandbox $bad -- touch started &&
		test "$rc" = 2 || return 1
	done &&
	test_path_is_missing started
'

test_expect_success 'enforcement level off (no settings): runs without a word about it' '
	rm -f "$SETTINGS" &&
	run_exec -- true &&
	test "$rc" = 0 &&
	test_grep -v "sandbox" err
'

test_expect_success 'enforcement level recommend: runs, with one warning suggesting --sandbox' '
	printf "sandbox:\n  enforcement: recommend\n" >"$SETTINGS" &&
	run_exec -- touch started &&
	test "$rc" = 0 &&
	test_path_is_file started &&
	test "$(grep -c "recommends a sandbox.*--sandbox" err)" = 1 &&
	rm -f started
'

test_expect_success 'enforcement level require: refused (125) with the command to re-run, nothing run' '
	printf "sandbox:\n  enforcement: require\n" >"$SETTINGS" &&
	run_exec -- touch started &&
	test "$rc" = 125 &&
	test_grep "requires a sandbox" err &&
	test_grep "intutic exec --sandbox -- touch" err &&
	test_path_is_missing started &&
	rm -f "$SETTINGS"
'

test_expect_success 'profile dev: the host firewall is not active here: a warning, and it runs' '
	run_exec --profile dev -- touch started &&
	test "$rc" = 0 &&
	test_grep -F "warning: the host firewall (intutic enforce) is not active" err &&
	test_path_is_file started &&
	rm -f started
'

test_expect_success 'profile prod (option or INTUTIC_PROFILE): refused (125) without the host firewall' '
	run_exec --profile prod -- touch started &&
	test "$rc" = 125 &&
	test_grep "profile prod" err &&
	test_grep "intutic enforce on" err &&
	test_path_is_missing started &&
	INTUTIC_PROFILE=prod run_exec -- touch started &&
	test "$rc" = 125 &&
	test_path_is_missing started &&
	run_exec --profile staging -- touch started &&
	test "$rc" = 2
'

test_expect_success 'usage errors: no command, an unknown option: 2' '
	run_exec &&
	test "$rc" = 2 &&
	test_grep "no COMMAND to run" err &&
	run_exec --frobnicate -- true &&
	test "$rc" = 2 &&
	test_grep "unknown option" err
'

test_expect_success 'a restart keeps the runs whose launcher lives: an agent started before it works after; no token is written down' '
	cat >agent.sh <<-EOF &&
	curl -sS -o /dev/null -w "%{http_code}\n" http://origin.test:$ORIGIN_TEST_PORT/ >first
	echo ready >ready
	n=0
	while ! test -f go && test \$n -lt 300; do sleep 0.1; n=\$((n + 1)); done
	curl -sS -o /dev/null -w "%{http_code}\n" http://origin.test:$ORIGIN_TEST_PORT/ >second
	EOF
	rm -f first second ready go &&
	{ "$INTUTIC" exec --state-dir "$PROXY_DIR/state" -- sh agent.sh >agent.out 2>agent.err & } &&
	agent=$! &&
	test_when_finished "kill $agent 2>/dev/null || :" &&
	test_wait_for_file ready &&
	{ sleep 60 </dev/null >/dev/null 2>&1 & } &&
	gone=$! &&
	printf "{\"run\":\"run-gone\",\"token\":\"%s\",\"command\":\"c\",\"pid\":%d}" \
		0123456789abcdef0123456789abcdef $gone >reg &&
	control_curl /v1/runs -o /dev/null --data-binary @reg &&
	port=$PROXY_PORT &&
	stop_proxy &&
	stat -c "%a" "$PROXY_DIR/state/runs.json" "$PROXY_DIR/state/runs.key" >modes &&
	printf "600\n600\n" >expect &&
	test_cmp expect modes &&
	test_grep "\"run-gone\"" "$PROXY_DIR/state/runs.json" &&
	! grep -rF 0123456789abcdef0123456789abcdef "$PROXY_DIR/state" &&
	kill $gone &&
	{ wait $gone || :; } &&
	start_proxy rules.yaml --port "$port" &&
	: >go &&
	wait $agent &&
	echo 200 >expect &&
	test_cmp expect first &&
	test_cmp expect second &&
	control_curl /v1/runs >list &&
	test_grep -v "run-gone" list &&
	{
		curl -sS -o /dev/null -w "%{http_code}\n" \
			-x "http://run-gone:0123456789abcdef0123456789abcdef@127.0.0.1:$PROXY_PORT" \
			"http://origin.test:$ORIGIN_TEST_PORT/" >code || :
	} &&
	echo 407 >expect &&
	test_cmp expect code
'

# Last: it stops the proxy the tests above share.
test_expect_success 'a state directory deeper than a socket address holds: the proxy binds its control socket there, exec registers' '
	stop_proxy &&
	deep=$TRASH_DIRECTORY/$(printf "%0120d" 0 | tr 0 d) &&
	mkdir "$deep" &&
	cp rules.yaml hosts resolv.conf "$deep"/ &&
	cd "$deep" &&
	start_proxy rules.yaml &&
	cd "$TRASH_DIRECTORY" &&
	test ${#CONTROL_SOCKET} -gt 108 &&
	test -S "$CONTROL_SOCKET" &&
	audit_mark &&
	run_exec -- sh -c "echo \$INTUTIC_RUN >run.id; curl -sS -o /dev/null http://origin.test:$ORIGIN_TEST_PORT/" &&
	test "$rc" = 0 &&
	audit_since 1 &&
	audit_expect 1 event=run run="$(cat run.id)" &&
	audit_expect 1 event=decision run="$(cat run.id)" decision=allow &&
	control_curl /v1/runs -o /dev/null -w "%{http_code}\n" >code &&
	echo 200 >expect &&
	test_cmp expect code
'

test_done
