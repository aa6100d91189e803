#!/bin/sh
test_description='a run'"'"'s own policy: enforced for that run only, held to the operator'"'"'s rules, changed live with its open tunnels decided again, kept across a restart; bad changes refused with nothing changed'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl

TOK=0123456789abcdef0123456789abcdef
TOK2=fedcba9876543210fedcba9876543210
DRIVE_WAIT_SECONDS=10

# doc.py: the JSON bodies of the control API, made with json.dumps.
#   doc.py reg RUN TOKEN PID [POLICY]	a registration
#   doc.py put GENERATION [POLICY]	a change of policy (none: null)
#   doc.py get FILE KEY...		a value of the answer in FILE
cat >doc.py <<\EOF
import json, sys
a = sys.argv[1:]
if a[0] == "reg":
    d = {"run": a[1], "token": a[2], "command": "agent", "pid": int(a[3])}
    if len(a) > 4:
        d["policy"] = a[4]
    print(json.dumps(d))
elif a[0] == "put":
    print(json.dumps({"generation": int(a[1]),
                      "policy": a[2] if len(a) > 2 else None}))
else:
    v = json.load(open(a[1]))
    for k in a[2:]:
        v = v[int(k)] if isinstance(v, list) else v[k]
    print(v if not isinstance(v, (dict, list)) else json.dumps(v))
EOF

# register RUN TOKEN [POLICY]: POST /v1/runs for RUN (this shell its
# launcher), with POLICY (a rule document) as its policy; the status in
# code, the answer in body.
register () {
	python3 doc.py reg "$1" "$2" $$ ${3+"$3"} >reg.json &&
	control_curl /v1/runs -o body -w "%{http_code}\n" --data-binary @reg.json >code
}

# set_policy RUN GENERATION [POLICY]: PUT /v1/runs/RUN/policy; the status
# in code, the answer in body.
set_policy () {
	python3 doc.py put "$2" ${3+"$3"} >put.json &&
	control_curl "/v1/runs/$1/policy" -X PUT -o body -w "%{http_code}\n" \
		--data-binary @put.json >code
}

# generation RUN: the generation of RUN's policy (GET /v1/runs/RUN).
generation () {
	control_curl "/v1/runs/$1" -o gen.json &&
	python3 doc.py get gen.json generation
}

# as RUN TOKEN URL: the status curl gets for URL through the proxy as RUN.
as () {
	curl -sS --max-time "$TEST_CURL_SECONDS" -o /dev/null -w "%{http_code}\n" \
		-x "http://$1:$2@127.0.0.1:$PROXY_PORT" "$3"
}

# as_connect RUN TOKEN URL: the same through a CONNECT tunnel: the
# proxy's answer to the CONNECT.
as_connect () {
	{ curl -sS --max-time "$TEST_CURL_SECONDS" -p -o /dev/null \
		-w "%{http_connect}\n" -x "http://$1:$2@127.0.0.1:$PROXY_PORT" "$3" \
		2>/dev/null || :; }
}

# expect_code CODE: the file code holds CODE.
expect_code () {
	echo "$1" >expect &&
	test_cmp expect code
}

test_expect_success 'setup: two origins, an echo server, nginx when there is one, the rules, the proxy' '
	start_origin allowed.test &&
	start_origin other.test &&
	start_echo &&
	{ ! test_have_prereq NGINX || start_nginx; } &&
	write_hosts hosts allowed.test=127.0.0.1 other.test=127.0.0.1 \
		echo.test=127.0.0.1 nginx.test=127.0.0.1 &&
	A=http://allowed.test:$ALLOWED_TEST_PORT/ &&
	O=http://other.test:$OTHER_TEST_PORT/ &&
	cat >rules.yaml <<-EOF &&
	version: 1
	ports: [$ALLOWED_TEST_PORT, $OTHER_TEST_PORT]
	allow:
	  - allowed.test
	  - other.test
	  - "echo.test:$ECHO_PORT"
	  - "nginx.test:${NGINX_PORT:-1}"
	  - "127.0.0.0/8"
	  - "127.0.0.0/8:$ECHO_PORT,${NGINX_PORT:-1}"
	EOF
	start_proxy rules.yaml
'

test_expect_success 'a run whose policy denies other.test: 403 there for it, as denied by its policy; nothing reaches other.test' '
	register run-deny $TOK "{\"version\": 1, \"deny\": [\"other.test\"]}" &&
	expect_code 201 &&
	server_mark other.test &&
	audit_mark &&
	as run-deny $TOK "$O" >code &&
	expect_code 403 &&
	as_connect run-deny $TOK "$O" >code &&
	expect_code 403 &&
	as run-deny $TOK "$A" >code &&
	expect_code 200 &&
	audit_since 3 &&
	audit_expect 2 event=decision run=run-deny host=other.test decision=deny \
		reason=denied "rule=run run-deny'"'"'s policy:1" &&
	server_since other.test &&
	test_must_be_empty other.test.new
'

test_expect_success 'another run, and a request of no run, reach other.test' '
	register run-free $TOK2 &&
	expect_code 201 &&
	server_mark other.test &&
	as run-free $TOK2 "$O" >code &&
	expect_code 200 &&
	proxy_curl -o /dev/null -w "%{http_code}\n" "$O" >code &&
	expect_code 200 &&
	server_since other.test &&
	test_line_count = 2 other.test.new
'

test_expect_success NGINX 'judged by nginx: the run denied nginx.test never reaches it; a run without that entry does' '
	register run-nginx $TOK "{\"version\": 1, \"deny\": [\"nginx.test\"]}" &&
	expect_code 201 &&
	: >"$NGINX_LOG" &&
	as run-nginx $TOK "http://nginx.test:$NGINX_PORT/denied-path" >code &&
	expect_code 403 &&
	as run-free $TOK2 "http://nginx.test:$NGINX_PORT/free-path" >code &&
	expect_code 200 &&
	sleep 0.5 &&
	test_grep "GET /free-path" "$NGINX_LOG" &&
	test_grep -v "denied-path" "$NGINX_LOG"
'

test_expect_success 'a run with an allowlist of its own: only allowed.test, by name and through a tunnel' '
	register run-list $TOK "version: 1
ports: [$ALLOWED_TEST_PORT]
allow:
  - allowed.test" &&
	expect_code 201 &&
	audit_mark &&
	as run-list $TOK "$A" >code &&
	expect_code 200 &&
	as run-list $TOK "$O" >code &&
	expect_code 403 &&
	as_connect run-list $TOK "$O" >code &&
	expect_code 403 &&
	audit_since 3 &&
	audit_expect 2 event=decision run=run-list host=other.test reason=not-allowlisted
'

test_expect_success 'a policy that would widen the rules is refused, naming the entry; no run is made' '
	register run-wide $TOK "{\"version\": 1, \"allow\": [\"evil.test\"]}" &&
	expect_code 400 &&
	test_grep "would widen the operator" body &&
	test_grep "evil.test" body &&
	control_curl /v1/runs/run-wide -o /dev/null -w "%{http_code}\n" >code &&
	expect_code 404
'

test_expect_success 'bad policies are refused with where and why, and no run is made' '
	for p in "{\"version\": 1, \"allow\": [\"a..b\"]}" "{\"version\": 1, \"include\": [\"x.yaml\"]}" \
		"{\"version\": 1, \"mode\": \"report\"}" "{\"version\": 1, \"providers\": {\"x\": {\"env\": [\"X\"]}}}" \
		"{\"version\": 1, \"gateway\": {\"anthropic\": \"on\"}}" \
		"{\"allow\": " "[1, 2]"
	do
		register run-bad $TOK "$p" &&
		expect_code 400 &&
		test_grep "run run-bad'"'"'s policy" body &&
		control_curl /v1/runs/run-bad -o /dev/null -w "%{http_code}\n" >code &&
		expect_code 404 || return 1
	done &&
	printf "{\"run\":\"run-bad\",\"token\":\"%s\",\"command\":\"a\",\"policy\":{\"deny\":[]}}" \
		$TOK >reg.json &&
	control_curl /v1/runs -o body -w "%{http_code}\n" --data-binary @reg.json >code &&
	expect_code 400 &&
	test_grep "policy.. is not a string" body &&
	python3 -c "print(\"# \" + \"x\" * 20000)" >big &&
	register run-bad $TOK "$(cat big)" &&
	expect_code 400 &&
	test_grep "1 to 16384 bytes" body
'

test_expect_success 'a run shows its policy, generation 1, its counters and last denials' '
	control_curl /v1/runs/run-deny -o one.json &&
	test "$(python3 doc.py get one.json generation)" = 1 &&
	test "$(python3 doc.py get one.json policy)" = "{\"version\": 1, \"deny\": [\"other.test\"]}" &&
	test "$(python3 doc.py get one.json requests)" = 3 &&
	test "$(python3 doc.py get one.json denials)" = 2 &&
	test "$(python3 doc.py get one.json bytes_down)" -gt 0 &&
	test "$(python3 doc.py get one.json bytes_up)" -gt 0 &&
	test "$(python3 doc.py get one.json last_denials 0 host)" = other.test &&
	test "$(python3 doc.py get one.json last_denials 0 reason)" = denied &&
	test "$(python3 doc.py get one.json last_denials 0 rule)" = "run run-deny'"'"'s policy:1"
'

test_expect_success 'a change with a stale generation: 409 naming the generation, nothing changed' '
	set_policy run-deny 7 "{\"version\": 1, \"deny\": [\"allowed.test\"]}" &&
	expect_code 409 &&
	test_grep "generation 1, not 7" body &&
	test "$(generation run-deny)" = 1 &&
	as run-deny $TOK "$A" >code &&
	expect_code 200
'

test_expect_success 'bad changes: 400, nothing changed' '
	set_policy run-deny 1 "{\"version\": 1, \"allow\": [\"evil.test\"]}" &&
	expect_code 400 &&
	set_policy run-deny 1 "{\"version\": 1, \"mode\": \"report\"}" &&
	expect_code 400 &&
	echo "{\"policy\": null}" >put.json &&
	control_curl /v1/runs/run-deny/policy -X PUT -o body -w "%{http_code}\n" \
		--data-binary @put.json >code &&
	expect_code 400 &&
	test_grep "generation.. and ..policy.. are required" body &&
	echo "{\"generation\": 1, \"policy\": null, \"run\": \"x\"}" >put.json &&
	control_curl /v1/runs/run-deny/policy -X PUT -o body -w "%{http_code}\n" \
		--data-binary @put.json >code &&
	expect_code 400 &&
	set_policy run-nope 1 &&
	expect_code 404 &&
	control_curl /v1/runs/run-deny/policy -o body -w "%{http_code}\n" >code &&
	expect_code 405 &&
	test "$(generation run-deny)" = 1 &&
	as run-deny $TOK "$O" >code &&
	expect_code 403
'

test_expect_success 'live: two tunnels of a run and one of another run to echo.test are open' '
	DRIVE_AUTH=run-free:$TOK2 tunnel_open e1 "echo.test:$ECHO_PORT" &&
	DRIVE_AUTH=run-free:$TOK2 tunnel_open e2 "127.0.0.1:$ECHO_PORT" &&
	DRIVE_AUTH=run-deny:$TOK tunnel_open e3 "echo.test:$ECHO_PORT" &&
	tunnel_echo e1 1 one &&
	tunnel_echo e2 1 two &&
	tunnel_echo e3 1 three
'

test_expect_success 'live: a change denying echo.test to run-free closes its tunnel there within 1 s, with a revoke record; the others stay' '
	audit_mark &&
	python3 doc.py put 1 "{\"version\": 1, \"deny\": [\"echo.test\"]}" >put.json &&
	T0=$(date +%s.%N) &&
	control_curl /v1/runs/run-free/policy -X PUT -o body -w "%{http_code}\n" \
		--data-binary @put.json >code &&
	T1=$(date +%s.%N) &&
	expect_code 200 &&
	test "$(python3 doc.py get body generation)" = 2 &&
	test_wait_for_file e1/eof 2 &&
	awk -v a="$T0" -v b="$(cat e1/eof)" "BEGIN { exit !(b - a < 1) }" &&
	awk -v a="$T0" -v b="$T1" "BEGIN { exit !(b - a < 1) }" &&
	audit_count "$AUDIT_FILE" event=revoke run=run-free host=echo.test \
		reason=denied "rule=run run-free'"'"'s policy:1" >n &&
	echo 1 >expect &&
	test_cmp expect n &&
	audit_count "$AUDIT_FILE" event=run-policy run=run-free >n &&
	test_cmp expect n &&
	test_path_is_missing e2/eof &&
	test_path_is_missing e3/eof &&
	tunnel_echo e2 2 "two, after" &&
	tunnel_echo e3 2 "three, after" &&
	as run-free $TOK2 "$O" >code &&
	expect_code 200
'

test_expect_success 'live: the answer comes once the change is in force: a new tunnel right after it is refused' '
	set_policy run-free 2 "{\"version\": 1, \"deny\": [\"echo.test\", \"other.test\"]}" &&
	expect_code 200 &&
	as run-free $TOK2 "$O" >code &&
	expect_code 403 &&
	set_policy run-free 3 &&
	expect_code 200 &&
	as run-free $TOK2 "$O" >code &&
	expect_code 200
'

test_expect_success 'ending a run closes its open tunnels (run-ended) before the answer' '
	control_curl /v1/runs/run-deny -X DELETE -o body -w "%{http_code}\n" >code &&
	expect_code 200 &&
	test_wait_for_file e3/eof 2 &&
	audit_count "$AUDIT_FILE" event=revoke run=run-deny reason=run-ended >n &&
	echo 1 >expect &&
	test_cmp expect n &&
	test_path_is_missing e2/eof &&
	tunnel_echo e2 3 "two, still" &&
	: >e2/quit
'

test_expect_success 'a run whose launcher is gone ends within seconds: a run-end record, its tunnel closed (run-ended)' '
	{ sleep 60 </dev/null >/dev/null 2>&1 & } &&
	launcher=$! &&
	test_when_finished "kill $launcher 2>/dev/null || :" &&
	python3 doc.py reg run-gone $TOK $launcher >reg.json &&
	control_curl /v1/runs -o /dev/null -w "%{http_code}\n" --data-binary @reg.json >code &&
	expect_code 201 &&
	DRIVE_AUTH=run-gone:$TOK tunnel_open g1 "echo.test:$ECHO_PORT" &&
	tunnel_echo g1 1 "before" &&
	kill $launcher &&
	wait $launcher
	test_wait_for_file g1/eof 6 &&
	audit_count "$AUDIT_FILE" event=run-end run=run-gone \
		client=proxy:launcher-gone >n &&
	echo 1 >expect &&
	test_cmp expect n &&
	audit_count "$AUDIT_FILE" event=revoke run=run-gone reason=run-ended >n &&
	test_cmp expect n &&
	control_curl /v1/runs/run-gone -o /dev/null -w "%{http_code}\n" >code &&
	expect_code 404
'

test_expect_success 'GET /v1/rules: the operator'"'"'s rules as a rule document, with their generation' '
	control_curl /v1/rules -o rules.json -w "%{http_code}\n" >code &&
	expect_code 200 &&
	test "$(python3 doc.py get rules.json generation)" = 1 &&
	test "$(python3 doc.py get rules.json path)" = rules.yaml &&
	python3 doc.py get rules.json rules >doc &&
	test_grep "\"allowed.test\"" doc &&
	control_curl /v1/rules -X POST -d x -o body -w "%{http_code}\n" >code &&
	expect_code 405
'

test_expect_success 'SIGHUP: the generation of the rules goes up' '
	reload_proxy &&
	control_curl /v1/rules -o rules.json &&
	test "$(python3 doc.py get rules.json generation)" = 2
'

test_expect_success 'a restart keeps each run with its policy and generation' '
	test "$(generation run-list)" = 1 &&
	stop_proxy &&
	start_proxy rules.yaml &&
	test "$(generation run-list)" = 1 &&
	control_curl /v1/runs/run-list -o one.json &&
	test "$(python3 doc.py get one.json policy)" = "version: 1
ports: [$ALLOWED_TEST_PORT]
allow:
  - allowed.test" &&
	as run-list $TOK "$O" >code &&
	expect_code 403 &&
	as run-list $TOK "$A" >code &&
	expect_code 200 &&
	as run-free $TOK2 "$O" >code &&
	expect_code 200 &&
	test "$(generation run-free)" = 4
'

# --- identity by address -------------------------------------------------------
# A sandbox reaches the proxy from an address of its own (a container on
# its bridge, a microVM on its tap), not from the address it connects to
# (as a process of the host does).  Here the loopback interface of the
# test's namespace holds three more addresses, none in 127.0.0.0/8: the
# proxy listens on SBX_GW as well, and a client that binds SBX_A (curl
# --interface) comes from there to SBX_GW, as a sandbox would.
SBX_GW=10.231.0.1
SBX_A=10.231.0.2
SBX_B=10.231.0.3

# from ADDR ARGS...: curl from ADDR to the proxy on SBX_GW.
from () {
	from_=$1
	shift
	curl -sS --max-time "$TEST_CURL_SECONDS" --interface "$from_" \
		-x "http://$SBX_GW:$PROXY_PORT" "$@"
}

test_expect_success 'identity: a sandbox network, the proxy on it too' '
	ip addr add "$SBX_GW/32" dev lo &&
	ip addr add "$SBX_A/32" dev lo &&
	ip addr add "$SBX_B/32" dev lo &&
	stop_proxy &&
	start_proxy rules.yaml --bind "127.0.0.1,$SBX_GW"
'

test_expect_success 'identity: a request from a sandbox address that is no run'"'"'s: 407, nothing reaches the origin' '
	server_mark allowed.test &&
	audit_mark &&
	from $SBX_A -D head -o body -w "%{http_code}\n" "$A" >code &&
	expect_code 407 &&
	test_grep -i "^Proxy-Authenticate: Basic" head &&
	test_grep "a connection from $SBX_A .not from this host itself" body &&
	audit_since 1 &&
	audit_expect 1 event=decision reason=proxy-auth decision=deny &&
	server_since allowed.test &&
	test_must_be_empty allowed.test.new
'

test_expect_success 'identity: a run given SBX_A: its requests from there are its own, with no credentials, under its policy' '
	register run-sbx $TOK "{\"version\": 1, \"deny\": [\"other.test\"]}" &&
	expect_code 201 &&
	echo "{\"addr\": \"$SBX_A\"}" >addr.json &&
	control_curl /v1/runs/run-sbx/addr -X PUT -o body -w "%{http_code}\n" \
		--data-binary @addr.json >code &&
	expect_code 200 &&
	test "$(python3 doc.py get body addr)" = "$SBX_A" &&
	audit_mark &&
	from $SBX_A -o /dev/null -w "%{http_code}\n" "$A" >code &&
	expect_code 200 &&
	from $SBX_A -o /dev/null -w "%{http_code}\n" "$O" >code &&
	expect_code 403 &&
	audit_since 2 &&
	audit_expect 1 event=decision run=run-sbx host=allowed.test decision=allow &&
	audit_expect 1 event=decision run=run-sbx host=other.test reason=denied &&
	from $SBX_B -o /dev/null -w "%{http_code}\n" "$A" >code &&
	expect_code 407
'

test_expect_success 'identity: from SBX_A, the credentials of another run are refused (407); its own are taken' '
	from $SBX_A -o body -w "%{http_code}\n" -U "run-free:$TOK2" "$A" >code &&
	expect_code 407 &&
	test_grep "another run" body &&
	from $SBX_A -o /dev/null -w "%{http_code}\n" -U "run-sbx:$TOK" "$A" >code &&
	expect_code 200 &&
	from $SBX_B -o /dev/null -w "%{http_code}\n" -U "run-free:$TOK2" "$A" >code &&
	expect_code 200
'

test_expect_success 'identity: an address is one run'"'"'s, set once; bad addresses refused' '
	register run-sbx2 $TOK2 &&
	expect_code 201 &&
	control_curl /v1/runs/run-sbx2/addr -X PUT -o body -w "%{http_code}\n" \
		--data-binary @addr.json >code &&
	expect_code 409 &&
	test_grep "another run" body &&
	echo "{\"addr\": \"$SBX_B\"}" >addr2.json &&
	control_curl /v1/runs/run-sbx/addr -X PUT -o body -w "%{http_code}\n" \
		--data-binary @addr2.json >code &&
	expect_code 409 &&
	test_grep "already" body &&
	for a in 127.0.0.1 ::1 0.0.0.0 :: "::ffff:127.0.0.1" "10.1.2.300" "[10.0.0.1]" null; do
		printf "{\"addr\": \"%s\"}" "$a" >bad.json &&
		control_curl /v1/runs/run-sbx2/addr -X PUT -o body -w "%{http_code}\n" \
			--data-binary @bad.json >code &&
		expect_code 400 || return 1
	done &&
	control_curl /v1/runs/run-sbx2 -o one.json &&
	test "$(python3 doc.py get one.json addr)" = None
'

test_expect_success 'identity: kept across a restart; under --require-run the address is the run, a request of no run from the host still 407' '
	stop_proxy &&
	start_proxy rules.yaml --bind "127.0.0.1,$SBX_GW" --require-run &&
	audit_mark &&
	from $SBX_A -o /dev/null -w "%{http_code}\n" "$A" >code &&
	expect_code 200 &&
	audit_since 1 &&
	audit_expect 1 event=decision run=run-sbx host=allowed.test decision=allow &&
	curl -sS --max-time "$TEST_CURL_SECONDS" -o /dev/null -w "%{http_code}\n" \
		-x "http://127.0.0.1:$PROXY_PORT" "$A" >code &&
	expect_code 407 &&
	stop_proxy &&
	start_proxy rules.yaml --bind "127.0.0.1,$SBX_GW" &&
	from $SBX_A -o /dev/null -w "%{http_code}\n" "$A" >code &&
	expect_code 200 &&
	control_curl /v1/runs/run-sbx -X DELETE -o /dev/null &&
	from $SBX_A -o /dev/null -w "%{http_code}\n" "$A" >code &&
	expect_code 407
'

test_done
