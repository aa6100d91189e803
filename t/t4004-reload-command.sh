#!/bin/sh
test_description='intutic reload: the rule file checked first (a bad one named with FILE:LINE:COL, the proxy not signalled), then SIGHUP, and what the proxy made of it (reloaded, or refused and its rules kept)'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl

# reload ARGS...: intutic reload against the test's proxy; rc, out, err.
reload () {
	rc=0
	"$INTUTIC" reload --state-dir "$PROXY_DIR/state" "$@" >out 2>err || rc=$?
}

counts () {
	echo "$(proxy_metric intutic_reloads_total) $(proxy_metric intutic_reload_errors_total)"
}

test_expect_success 'setup: a proxy with a rule file' '
	printf "version: 1\nallow:\n  - a.test\n" >rules.yaml &&
	start_proxy rules.yaml &&
	echo "0 0" >expect && counts >got && test_cmp expect got
'

test_expect_success 'a changed rule file: checked, loaded, said' '
	printf "version: 1\nallow:\n  - a.test\n  - b.test\n" >rules.yaml &&
	reload &&
	test "$rc" = 0 &&
	test_grep "^intutic: the proxy [(]pid $PROXY_PID[)] reloaded .*rules.yaml.: 2 entries\$" out &&
	echo "1 0" >expect && counts >got && test_cmp expect got &&
	test_grep "rules reloaded from" "$PROXY_LOG"
'

test_expect_success 'a rule file that does not load: FILE:LINE:COL, exit 2, the proxy not signalled' '
	printf "version: 1\nallow:\n  - a.test\n  - \"*\"\n" >rules.yaml &&
	reload &&
	test "$rc" = 2 &&
	test_grep "rules.yaml:4:[0-9]*: " err &&
	test_grep "not reloaded: the proxy [(]pid $PROXY_PID[)] keeps its rules" err &&
	echo "1 0" >expect && counts >got && test_cmp expect got
'

test_expect_success 'rules the proxy refuses (a brokered provider it holds no key for): exit 1, its rules kept' '
	cat >rules.yaml <<-\EOF &&
	version: 1
	allow: [a.test]
	providers:
	  acme:
	    api: api.acme.test
	    key-headers: [x-api-key]
	    broker: {env: ACME_KEY_4002, header: x-api-key, prefix: acme-, length: 40}
	gateway: {acme: broker}
	EOF
	reload &&
	test "$rc" = 1 &&
	test_grep "refused the new rules and keeps its own" err &&
	echo "1 1" >expect && counts >got && test_cmp expect got &&
	test_grep "ACME_KEY_4002" "$PROXY_LOG"
'

test_expect_success 'no proxy: exit 3, naming intutic start' '
	rc=0 &&
	"$INTUTIC" reload --state-dir "$TRASH_DIRECTORY/none" >out 2>err || rc=$? &&
	test "$rc" = 3 &&
	test_grep "intutic start" err
'

test_expect_success 'a usage error: exit 2, one line naming it' '
	rc=0 &&
	"$INTUTIC" reload --bogus >out 2>err || rc=$? &&
	test "$rc" = 2 &&
	test_grep "unknown argument" err
'

test_expect_success 'a state file whose pid is an intutic-proxy started at another time: another proxy, left alone by status, reload and stop' '
	cp state/proxy.json proxy.json.saved &&
	python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
j[\"started\"] -= 1000
json.dump(j, open(sys.argv[1], \"w\"))
" state/proxy.json &&
	rc=0 && "$INTUTIC" status --state-dir state >out 2>err || rc=$? &&
	test "$rc" = 3 &&
	test_grep "not the one the state file names" out &&
	reload &&
	test "$rc" = 3 &&
	test_grep "not the one the state file names" err &&
	rc=0 && "$INTUTIC" stop --state-dir state >out 2>err || rc=$? &&
	test "$rc" = 3 &&
	test_grep "not signalled" err &&
	test_own_alive_ "$PROXY_PID" &&
	cp proxy.json.saved state/proxy.json &&
	"$INTUTIC" status --state-dir state >out
'

test_expect_success 'status --json: the same as one object, running and not' '
	"$INTUTIC" status --json --state-dir state >st.json &&
	python3 - "$PROXY_PID" "$PROXY_PORT" <<-\EOF &&
	import json, sys
	j = json.load(open("st.json"))
	assert j["state"] == "running", j
	assert j["pid"] == int(sys.argv[1]), j
	assert j["listen"] == ["127.0.0.1:%s" % sys.argv[2]], j
	assert j["rules"].endswith("rules.yaml"), j
	assert j["reloads"] == 1 and j["reload_errors"] == 1, j
	assert isinstance(j["connections_total"], int), j
	assert j["state_file"].endswith("state/proxy.json"), j
	EOF
	rc=0 && "$INTUTIC" status --json --state-dir none >st2.json || rc=$? &&
	test "$rc" = 3 &&
	python3 -c "
import json
j = json.load(open(\"st2.json\"))
assert j[\"state\"] == \"not running\" and j[\"why\"] == \"no state file\", j
"
'

unshare -m true 2>/dev/null && test_set_prereq MOUNTNS

test_expect_success MOUNTNS 'no proxy of the user'"'"'s own: the service'"'"'s, in /run/intutic, is found by status, reload and stop' '
	printf "version: 1\nallow: [a.test]\n" >rules-svc.yaml &&
	mkdir -p home &&
	cat >svc.sh <<-EOF &&
	set -e
	mount -t tmpfs tmpfs /run
	mkdir -m 700 /run/intutic
	"$top_builddir/proxy/intutic-proxy" --rules "$PWD/rules-svc.yaml" \
		--bind 127.0.0.1 --port 0 --state-dir /run/intutic \
		--resolv-conf "$PWD/resolv.conf" --hosts "$PWD/hosts" 2>svc.log &
	p=\$!
	trap "kill \$p 2>/dev/null || :" EXIT
	n=0
	while ! test -s /run/intutic/proxy.json && test \$n -lt 100; do
		sleep 0.1; n=\$((n + 1))
	done
	export HOME="$PWD/home" XDG_STATE_HOME=
	"$INTUTIC" status >svc-status.out
	"$INTUTIC" reload >svc-reload.out
	"$INTUTIC" stop >svc-stop.out
	EOF
	unshare -m sh svc.sh &&
	test_grep "^state: *running" svc-status.out &&
	test_grep "reloaded .*rules-svc.yaml" svc-reload.out &&
	test_grep "state file /run/intutic/proxy.json" svc-stop.out
'

test_done
