#!/bin/sh
test_description='reload and drain under load: SIGHUP 100 times (and a few bad files) while tunnels and HTTP requests keep coming, then SIGTERM: nothing dropped, every request in the audit log with the bytes its client counted'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl

LOAD=$top_srcdir/t/helpers/load.py
AUDIT=$top_srcdir/t/helpers/audit.py
RELOADS=100		# good reloads, the two rule files in turn
BAD_EVERY=25		# and after every 25th, one file that does not load
LANES=4			# load.py churn: threads of short tunnels and requests
LONG=4			# and tunnels held through everything
PAUSE_MS=10		# each lane, between two connections: a steady load
			# (some 300 requests a second here), not the most
CHURN_SECONDS=120	# the load's own bound (it is stopped long before)
GRACE_MS=10000		# --grace: the drain must end well before
RELOAD_SECONDS=10	# a reload to be counted
WAIT_SECONDS=30		# the load to end, the audit log to settle
MIN_ANSWERED=200	# requests answered before the signals start

# churn_state KEY: requests, answered or errors, from the load's state file.
churn_state () {
	sed -n "s/.*$1=\\([0-9]*\\).*/\\1/p" "$CHURN.state" 2>/dev/null
}

# answered_at_least N: the load has had N answers (1: not yet).
answered_at_least () {
	answered_at_least_n_=$(churn_state answered)
	test -n "$answered_at_least_n_" && test "$answered_at_least_n_" -ge "$1"
}

# churn NAME [ARGS]: load.py churn through the proxy in the background,
# in NAME.*; CHURN is NAME, CHURN_PID its pid; waits for MIN_ANSWERED.
churn () {
	CHURN=$1
	shift
	rm -f "$CHURN".* &&
	python3 "$LOAD" churn "$PROXY_PORT" --echo "echo.test:$LOAD_PORT" \
		--http "web.test:$LOAD_PORT" --out "$CHURN.out" --lanes $LANES \
		--seconds $CHURN_SECONDS --stop "$CHURN.stop" \
		--state "$CHURN.state" --pause $PAUSE_MS "$@" >"$CHURN.stdout" 2>"$CHURN.err" &
	CHURN_PID=$!
	test_atexit "touch $PWD/$CHURN.stop; test_stop_pid_ $CHURN_PID" &&
	wait_until 20 answered_at_least $MIN_ANSWERED
}

# churn_end: stop the load, wait for it (WAIT_SECONDS at most).
churn_end () {
	touch "$CHURN.stop" &&
	wait_until "$WAIT_SECONDS" test_proc_gone_ "$CHURN_PID" &&
	wait "$CHURN_PID" &&
	cat "$CHURN.stdout"
}

# rules_file A|B: that rule file becomes rules.yaml (written whole, then
# renamed).  A has 3 entries, B 4; both allow what the load asks for.
rules_file () {
	cp "rules-$1.yaml" rules.yaml.tmp && mv rules.yaml.tmp rules.yaml
}

# logged TEXT: the proxy has logged TEXT (1: not yet).
logged () {
	grep -q -F -e "$1" "$PROXY_LOG"
}

# reload_counts: "RELOADS ERRORS ENTRIES" from the proxy's /metrics.
reload_counts () {
	curl -sS --fail --noproxy "*" --max-time 5 "$PROXY_URL/metrics" | awk '
		$1 == "intutic_reloads_total" { r = $2 }
		$1 == "intutic_reload_errors_total" { e = $2 }
		$1 == "intutic_rules_entries" { n = $2 }
		END { print r, e, n }'
}

# hup_and_wait RELOADS ERRORS ENTRIES: SIGHUP, then until the proxy's
# /metrics say RELOADS reloads, ERRORS refused and ENTRIES entries in
# force (a scrape every 20 ms, RELOAD_SECONDS at most; reload_proxy's
# tenth of a second would make 100 reloads take a minute).
hup_and_wait () {
	kill -HUP "$PROXY_PID" || return 1
	hup_n_=$((RELOAD_SECONDS * 50))
	while test $hup_n_ -gt 0; do
		hup_got_=$(reload_counts)
		test "$hup_got_" = "$1 $2 $3" && return 0
		sleep 0.02
		hup_n_=$((hup_n_ - 1))
	done
	echo "after SIGHUP: reloads, errors, entries are \"$hup_got_\", expected \"$1 $2 $3\"" >&2
	return 1
}

# entries_are N: the proxy's rule set has N entries.
entries_are () {
	test "$(proxy_metric intutic_rules_entries)" = "$1"
}

test_expect_success 'setup: a server for many connections, two rule files, the proxy, a steady load' '
	start_load &&
	write_hosts hosts echo.test=127.0.0.1 web.test=127.0.0.1 &&
	cat >rules-A.yaml <<-EOF &&
	version: 1
	allow:
	  - "echo.test:$LOAD_PORT"
	  - "web.test:$LOAD_PORT"
	  - "127.0.0.0/8:$LOAD_PORT"
	EOF
	cat >rules-B.yaml <<-EOF &&
	version: 1
	allow:
	  - "echo.test:$LOAD_PORT"
	  - "web.test:$LOAD_PORT"
	  - "only-b.test"
	  - "127.0.0.0/8:$LOAD_PORT"
	EOF
	"$INTUTIC" rules check rules-A.yaml &&
	"$INTUTIC" rules check rules-B.yaml &&
	rules_file A &&
	start_proxy rules.yaml --workers 2 --grace $GRACE_MS &&
	entries_are 3 &&
	audit_mark &&
	churn c1 --long $LONG &&
	test "$(churn_state errors)" = 0
'

test_expect_success "$RELOADS reloads, A and B in turn, a bad file after every $BAD_EVERY-th: each counted, each in force" '
	i=1 && bad=0 &&
	while test $i -le $RELOADS; do
		if test $((i % 2)) = 1; then
			rules_file B && n=4
		else
			rules_file A && n=3
		fi &&
		hup_and_wait $i $bad $n || {
			echo "reload $i of $RELOADS failed" >&2
			return 1
		}
		if test $((i % BAD_EVERY)) = 0; then
			cp rules.yaml rules.good &&
			cp "$TEST_DATA/rules/proxy-http/reload-bad.yaml" rules.yaml.tmp &&
			mv rules.yaml.tmp rules.yaml &&
			bad=$((bad + 1)) &&
			hup_and_wait $i $bad $n &&
			mv rules.good rules.yaml || {
				echo "the bad file after reload $i" >&2
				return 1
			}
		fi
		i=$((i + 1))
	done &&
	test "$(proxy_metric intutic_reloads_total)" = $RELOADS &&
	test "$(proxy_metric intutic_reload_errors_total)" = $bad &&
	test $bad = $((RELOADS / BAD_EVERY)) &&
	test "$(grep -c "reload refused" "$PROXY_LOG")" = $bad &&
	test "$(grep -c "rules reloaded from" "$PROXY_LOG")" = $RELOADS
'

test_expect_success 'the load went on throughout: every request answered, no tunnel dropped, not one error' '
	test "$(churn_state errors)" = 0 &&
	churn_end >result &&
	test_diag "$(cat result)" &&
	read -r requests answered errors conns long <result &&
	test "${requests#requests=}" = "${answered#answered=}" &&
	test "${requests#requests=}" -gt $MIN_ANSWERED &&
	test "$errors" = errors=0 &&
	test "$long" = "long_alive=$LONG/$LONG" &&
	test_must_be_empty c1.err
'

test_expect_success 'audit: as many decision records as requests, every close record with the bytes its client counted' '
	python3 "$AUDIT" --tally "$AUDIT_FILE" --mark "$test_audit_mark_" \
		--seconds $WAIT_SECONDS --counts c1.out >tally &&
	cat tally &&
	read -r requests answered errors conns long <result &&
	echo "tally: ${conns#connections=} connections, ${requests#requests=} requests, ${requests#requests=} decision records, ${conns#connections=} close records" >expect &&
	test_cmp expect tally &&
	test "$(audit_count event=decision decision=deny)" = 0
'

test_expect_success 'the metrics agree: nothing left open' '
	wait_until 10 entries_are 3 &&
	test "$(proxy_metric intutic_tunnels_active)" = 0 &&
	test "$(proxy_metric intutic_connections_active)" = 1
'

# --- SIGTERM under load ---------------------------------------------------------

test_expect_success 'SIGTERM under load: new connections refused, the tunnels open at the signal keep working' '
	audit_mark &&
	churn c2 --long 2 &&
	TERM_AT=$(date +%s) &&
	kill -TERM "$PROXY_PID" &&
	wait_until 5 logged "stopping: no new connections" &&
	sleep 1 &&
	test_proc_alive_ "$PROXY_PID" &&
	churn_end >result2 &&
	test_diag "$(cat result2)" &&
	read -r requests answered errors conns long <result2 &&
	test "$long" = "long_alive=2/2"
'

test_expect_success 'it drains and exits 0, well within the grace period' '
	proxy_wait_exit 15 &&
	END_AT=$(date +%s) &&
	test $((END_AT - TERM_AT)) -lt $((GRACE_MS / 1000)) &&
	test_path_is_missing state/proxy.json &&
	test_grep -v "grace period over" "$PROXY_LOG"
'

test_expect_success 'every connection it took has its close record; those that ended well, with their bytes' '
	python3 "$AUDIT" --settled --seconds 1 "$AUDIT_FILE" &&
	python3 "$AUDIT" --tally "$AUDIT_FILE" --mark "$test_audit_mark_" \
		--seconds 1 --counts c2.out >tally2 &&
	cat tally2 &&
	test_grep "^tally: [1-9][0-9]* connections" tally2
'

test_done
