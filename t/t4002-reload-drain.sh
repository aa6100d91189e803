#!/bin/sh
test_description='reload (SIGHUP), audit reopen (SIGUSR1) and drain (SIGTERM) with tunnels and requests in flight'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl

WAIT_SECONDS=10		# a tunnel's answer, a file, a process
GRACE_MS=5000		# the first proxy's --grace
HEAD_TIMEOUT_MS=30000	# and --head-timeout: keep-alive connections wait
SHORT_GRACE_MS=1000	# the second proxy's

# make_rules TEMPLATE: t/data/rules/proxy-http/TEMPLATE with this script's
# ports, as rules.yaml (written whole, then renamed into place).
make_rules () {
	fill_rules "proxy-http/$1" rules.yaml \
		PORTS="$A_TEST_PORT, $B_TEST_PORT, $ECHO_PORT" ECHO_PORT="$ECHO_PORT"
}

# code URL: the status curl gets for URL through the proxy.
code () {
	proxy_curl -o /dev/null -w "%{http_code}\n" "$1"
}

# now: seconds since the epoch, with milliseconds.
now () {
	date +%s.%N | cut -c 1-14
}

# connect_refused: a new connection to the proxy's port is refused now
# (curl's 7).
connect_refused () {
	curl -sS --noproxy "*" --max-time 2 -o /dev/null \
		"$PROXY_URL/healthz" 2>/dev/null
	test $? = 7
}

# refused_now: a new connection to the proxy's port is refused (curl's 7),
# within 3 s.
refused_now () {
	wait_until 3 connect_refused && return 0
	echo "the proxy still accepts connections" >&2
	return 1
}

# closed.py FILE...: every connection with a decision record
# in the FILEs has exactly one close record there.
cat >closed.py <<\EOF
import json, sys
dec, close = set(), {}
for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)
        if r["event"] == "decision":
            dec.add(r["id"])
        elif r["event"] == "close":
            close[r["id"]] = close.get(r["id"], 0) + 1
bad = sorted(i for i in dec if close.get(i) != 1)
extra = sorted(i for i in close if i not in dec)
print("%d connections with decisions, %d closed" % (len(dec), len(close)))
if bad or extra:
    sys.exit("not closed exactly once: %s; closed, never decided: %s" % (bad, extra))
EOF

test_expect_success 'setup: two origins, an echo server, names, rules, a proxy with --no-revoke' '
	start_origin a.test &&
	start_origin b.test &&
	start_echo &&
	write_hosts hosts a.test=127.0.0.1 b.test=127.0.0.1 echo.test=127.0.0.1 &&
	make_rules reload-before.yaml &&
	start_proxy rules.yaml --grace $GRACE_MS --head-timeout $HEAD_TIMEOUT_MS \
		--no-revoke &&
	A=http://a.test:$A_TEST_PORT &&
	B=http://b.test:$B_TEST_PORT &&
	test "$(code "$A/")" = 200 &&
	test "$(code "$B/")" = 403
'

test_expect_success 'a tunnel to echo.test (an explicit-port entry) carries bytes both ways' '
	tunnel_open t1 "echo.test:$ECHO_PORT" &&
	echo "HTTP/1.1 200 Connection established" >expect &&
	test_cmp expect t1/ready &&
	tunnel_echo t1 1 "one, before any reload" &&
	test "$(proxy_metric intutic_tunnels_active)" = 1
'

test_expect_success 'a keep-alive connection: a.test allowed on it' '
	drive k1 http - &&
	ka_get k1 1 "a.test:$A_TEST_PORT" &&
	printf "HTTP/1.1 200 OK\nhello from a.test:%s\n" "$A_TEST_PORT" >expect &&
	test_cmp expect k1/recv.1
'

# --- SIGHUP --------------------------------------------------------------------------

test_expect_success 'SIGHUP with a good file: b.test newly allowed, a.test and echo.test newly denied' '
	make_rules reload-after.yaml &&
	reload_proxy &&
	test "$(proxy_metric intutic_reloads_total)" = 1 &&
	test_grep "rules reloaded from .rules\.yaml.: 4 entries" "$PROXY_LOG" &&
	test "$(code "$B/")" = 200 &&
	proxy_curl -D head -o body -w "%{http_code}\n" "$A/" >status &&
	echo 403 >expect &&
	test_cmp expect status &&
	test_grep "^X-Intutic-Error: denied" head &&
	tunnel_open t1b "echo.test:$ECHO_PORT" &&
	test_grep "^HTTP/1.1 403 " t1b/ready
'

test_expect_success '--no-revoke: the tunnel opened before the reload is not dropped and still carries bytes' '
	tunnel_echo t1 2 "two, after the reload" &&
	test_path_is_missing t1/eof &&
	test "$(proxy_metric intutic_tunnels_active)" = 1
'

test_expect_success '--no-revoke: the keep-alive connection from before the reload keeps its rules: a.test still allowed there' '
	ka_get k1 2 "a.test:$A_TEST_PORT" &&
	printf "HTTP/1.1 200 OK\nhello from a.test:%s\n" "$A_TEST_PORT" >expect &&
	test_cmp expect k1/recv.2 &&
	ka_get k1 3 "b.test:$B_TEST_PORT" &&
	head -n 1 k1/recv.3 >status &&
	echo "HTTP/1.1 403 Forbidden" >expect &&
	test_cmp expect status &&
	test "$(audit_count audit.jsonl event=revoke)" = 0
'

test_expect_success 'SIGHUP with a file that does not load: refused, counted, logged with file:line:col' '
	cp rules.yaml rules.good &&
	cp "$TEST_DATA/rules/proxy-http/reload-bad.yaml" rules.yaml.tmp &&
	mv rules.yaml.tmp rules.yaml &&
	test_must_fail reload_proxy 2>err &&
	test_grep "refused the reload" err &&
	test "$(proxy_metric intutic_reload_errors_total)" = 1 &&
	test "$(proxy_metric intutic_reloads_total)" = 1 &&
	test_grep "reload refused, the old rules stay: rules\.yaml:7:7: found mode .loud." "$PROXY_LOG" &&
	test "$(grep -c "reload refused" "$PROXY_LOG")" = 1 &&
	test_proc_alive_ "$PROXY_PID"
'

test_expect_success 'after the refused reload the rules in force are still the good ones' '
	test "$(code "$B/")" = 200 &&
	test "$(code "$A/")" = 403 &&
	test "$(proxy_metric intutic_rules_entries)" = 4 &&
	tunnel_echo t1 3 "three, after the bad reload" &&
	curl -sS --noproxy "*" --max-time 10 "$PROXY_URL/healthz" >out &&
	echo ok >expect &&
	test_cmp expect out &&
	mv rules.good rules.yaml
'

# --- SIGUSR1 ----------------------------------------------------------------------------

test_expect_success 'SIGUSR1 reopens the audit log: after a rename, new records go to a new file' '
	mv audit.jsonl audit.1.jsonl &&
	kill -USR1 "$PROXY_PID" &&
	n=50 &&
	until test -f audit.jsonl; do
		test $n -gt 0 || { echo "no new audit.jsonl after SIGUSR1" >&2; return 1; }
		sleep 0.1
		n=$((n - 1))
	done &&
	lines=$(($(wc -l <audit.1.jsonl))) &&
	test "$(code "$B/status/204")" = 204 &&
	audit_wait audit.jsonl event=close status=204 &&
	test "$(audit_count audit.jsonl event=decision)" = 1 &&
	test "$(($(wc -l <audit.1.jsonl)))" = "$lines"
'

# --- SIGTERM --------------------------------------------------------------------------------

test_expect_success 'SIGTERM with a tunnel open, a keep-alive connection idle and a slow answer in flight' '
	drive k2 http - &&
	ka_get k2 1 "b.test:$B_TEST_PORT" &&
	test_grep "^HTTP/1.1 200 OK\$" k2/recv.1 || return 1
	proxy_curl -o slow.out -w "%{http_code}\n" "$B/slow?ms=1500" \
		>slow.code 2>slow.err &
	SLOW_PID=$!
	n=50 &&
	until grep -q "GET /slow" "$B_TEST_LOG"; do
		test $n -gt 0 || { echo "the slow request never reached b.test" >&2; return 1; }
		sleep 0.1
		n=$((n - 1))
	done &&
	TERM_AT=$(now) &&
	kill -TERM "$PROXY_PID"
'

test_expect_success 'it drains: new connections are refused, the idle keep-alive one is closed at once' '
	refused_now &&
	test_wait_for_file k2/eof 2 &&
	test_proc_alive_ "$PROXY_PID"
'

test_expect_success 'while it drains, the open tunnel still works' '
	tunnel_echo t1 4 "four, while draining"
'

test_expect_success 'the answer in flight completes' '
	wait "$SLOW_PID" &&
	echo 200 >expect &&
	test_cmp expect slow.code &&
	echo "slept 1500 ms" >expect &&
	test_cmp expect slow.out
'

test_expect_success 'once the tunnel ends, the proxy exits 0, well within the grace period' '
	: >t1/quit &&
	proxy_wait_exit "$WAIT_SECONDS" &&
	END_AT=$(now) &&
	awk -v a="$TERM_AT" -v b="$END_AT" -v g="$GRACE_MS" \
		"BEGIN { exit !(b - a < g / 1000 - 1) }" &&
	test_path_is_missing state/proxy.json &&
	test_grep "stopping: no new connections" "$PROXY_LOG" &&
	test_grep -v "grace period over" "$PROXY_LOG"
'

test_expect_success 'no record lost: every connection decided has its close record' '
	python3 closed.py audit.1.jsonl audit.jsonl &&
	audit_count audit.jsonl event=close proto=connect "bytes_up>=80" >n &&
	echo 1 >expect &&
	test_cmp expect n &&
	audit_count audit.jsonl event=close status=200 host=b.test "duration_ms>=1500" >n &&
	test_cmp expect n
'

# --- revocation (the default) -----------------------------------------------------------------

# A proxy without --no-revoke: a reload decides every open connection again.
# The new rules deny a.test and echo.test (line 3): the tunnel to echo.test
# and the keep-alive connection to a.test are revoked; the tunnel to
# 127.0.0.1 (allowed by a block in both) is not.
test_expect_success 'a proxy that revokes: two tunnels and a keep-alive connection open' '
	mkdir p3 &&
	cp hosts resolv.conf p3/ &&
	cd p3 &&
	cat >rules.yaml <<-EOF &&
	version: 1
	ports: [$A_TEST_PORT]
	allow:
	  - a.test
	  - "echo.test:$ECHO_PORT"
	  - "127.0.0.0/8:$A_TEST_PORT,$ECHO_PORT"
	EOF
	sed "s/^allow:/deny: [a.test, echo.test]\nallow:/" rules.yaml >rules.after &&
	start_proxy rules.yaml --head-timeout $HEAD_TIMEOUT_MS &&
	tunnel_open r1 "echo.test:$ECHO_PORT" &&
	tunnel_echo r1 1 "to be revoked" &&
	tunnel_open r2 "127.0.0.1:$ECHO_PORT" &&
	tunnel_echo r2 1 "to stay" &&
	drive k3 http - &&
	ka_get k3 1 "a.test:$A_TEST_PORT" &&
	test_grep "^HTTP/1.1 200 OK\$" k3/recv.1 &&
	cd ..
'

test_expect_success 'SIGHUP: within 1 s the denied tunnel and keep-alive connection close, each with its revoke record' '
	cd p3 &&
	cp rules.after rules.yaml.tmp &&
	mv rules.yaml.tmp rules.yaml &&
	HUP_AT=$(now) &&
	reload_proxy &&
	test_wait_for_file r1/eof 2 &&
	test_wait_for_file k3/eof 2 &&
	awk -v a="$HUP_AT" -v b="$(cat r1/eof)" -v c="$(cat k3/eof)" \
		"BEGIN { exit !(b - a < 1 && c - a < 1) }" &&
	audit_count audit.jsonl event=revoke host=echo.test proto=connect \
		reason=denied "rule=rules.yaml:3" >n &&
	echo 1 >expect &&
	test_cmp expect n &&
	audit_count audit.jsonl event=revoke host=a.test proto=http \
		reason=denied "rule=rules.yaml:3" >n &&
	test_cmp expect n &&
	test "$(proxy_metric intutic_revocations_total)" = 2 &&
	cd ..
'

test_expect_success 'the tunnel the new rules still allow stays open and carries bytes' '
	cd p3 &&
	test_path_is_missing r2/eof &&
	tunnel_echo r2 2 "still here after the reload" &&
	: >r2/quit &&
	stop_proxy &&
	cd ..
'

# --- the grace period ends ---------------------------------------------------------------------

# Four workers whatever the machine: one tunnel leaves at least three of them
# with nothing to drain, which ends at once while the other waits.
test_expect_success "a proxy with --grace $SHORT_GRACE_MS and a tunnel that stays open" '
	mkdir p2 &&
	cp hosts resolv.conf p2/ &&
	cd p2 &&
	make_rules reload-before.yaml &&
	start_proxy rules.yaml --grace $SHORT_GRACE_MS --workers 4 &&
	cd .. &&
	tunnel_open t2 "echo.test:$ECHO_PORT" &&
	tunnel_echo t2 1 "hello from a tunnel that stays"
'

test_expect_success 'SIGTERM: after about the grace period, the proxy closes the tunnel and exits 0' '
	TERM_AT=$(now) &&
	kill -TERM "$PROXY_PID" &&
	proxy_wait_exit "$WAIT_SECONDS" &&
	END_AT=$(now) &&
	awk -v a="$TERM_AT" -v b="$END_AT" -v g="$SHORT_GRACE_MS" \
		"BEGIN { d = b - a; exit !(d >= g / 1000 - 0.1 && d < g / 1000 + 2) }" &&
	test_wait_for_file t2/eof 5 &&
	test_grep "grace period over" p2/proxy.log
'

test_expect_success 'the closed tunnel has its close record too' '
	python3 closed.py p2/audit.jsonl &&
	audit_count p2/audit.jsonl event=close proto=connect host=echo.test \
		"bytes_up>=30" "bytes_down>=30" >n &&
	echo 1 >expect &&
	test_cmp expect n
'

test_done
