#!/bin/sh
test_description='load: 10,000 idle tunnels held (or what the descriptor limit allows), then closed: descriptors back to the baseline, memory bounded, every tunnel in the audit log with its bytes'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl

LOAD=$top_srcdir/t/helpers/load.py
WANT=10000		# tunnels, when the descriptor limit allows them
SPARE_FDS=100		# the proxy's own descriptors (listeners, audit log,
			# evdns, the reserve of four), the scrapes, a margin
HOLD_SECONDS=80		# opening them all, at most (ASan: about 25 s)
SETTLE_SECONDS=30	# the proxy's descriptors back to the baseline
# RSS: after a second round of N tunnels, at most this much above what the
# first round left (KiB, plus a share of the first round's growth): the
# allocator keeps what it once got, but a second round must reuse it.  With
# 10,000 tunnels growing RSS by some 25 MiB the bound is about 2.3 MiB: a
# leak of 250 bytes a tunnel or more fails (a second round here: +0.7 MiB).
ROUND_SLACK_KIB=1024	# fixed part
ROUND_SLACK_PCT=5	# % of the first round's growth (fragmentation)
# RSS back to the baseline: within this much (KiB, plus a share of the
# peak's growth).  The tunnels' own memory is in the workers' pools, whose
# chunks go back to the system as they empty; what the heap may keep is
# libevent's slot for each descriptor number (about 1 MiB at 20,000) and
# what the tunnels' set-up used and freed (here: +1.8 MiB, ASan +3.5).
BASE_SLACK_KIB=4096
BASE_SLACK_PCT=10

# ASan keeps freed memory in quarantine (256 MiB by default) on purpose, and
# a second round of tunnels could not reuse it: RSS would say nothing about
# the proxy.  None here, and ASan's allocator gives back what is free as
# soon as it can rather than every 5 s at most (the rest of ASan, and
# LeakSanitizer, still work).  Its shadow memory, an eighth of all the
# memory the process ever touched, stays resident for good: proxy_rss() leaves it
# out.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0:allocator_release_to_os_interval_ms=0"
export ASAN_OPTIONS

# How many: two descriptors a tunnel in the proxy (client and origin), the
# client and the server one each, in processes of their own.
hard=$(ulimit -Hn)
case $hard in
unlimited) hard=$((2 * WANT + SPARE_FDS)) ;;
*[!0-9]*|'') test_skip_all "cannot read the descriptor limit (ulimit -Hn: '$hard')" ;;
esac
N=$(( (hard - SPARE_FDS) / 2 ))
test "$N" -gt "$WANT" && N=$WANT
if test "$N" -lt "$WANT"; then
	printf '# %s tunnels, not %s: the hard descriptor limit is %s (two a tunnel in the proxy, %s kept for its own)\n' \
		"$N" "$WANT" "$hard" "$SPARE_FDS"
else
	printf '# %s tunnels (hard descriptor limit %s)\n' "$N" "$hard"
fi
test "$N" -ge 1000 ||
	test_skip_all "the hard descriptor limit ($hard) allows only $N tunnels"
ulimit -n "$hard" ||
	test_skip_all "cannot raise the descriptor limit to $hard"

# fds: the proxy's open descriptors now.
fds () {
	ls "/proc/$PROXY_PID/fd" | wc -l
}


# fds_are N: the proxy has N descriptors open (1: not yet).
fds_are () {
	test "$(fds)" = "$1"
}

# metric_is NAME VALUE; 2 when it cannot be read.
metric_is () {
	metric_is_v_=$(proxy_metric "$1") || return 2
	test "$metric_is_v_" = "$2"
}

# within A B SLACK_KIB PCT GROWTH: A <= B + SLACK_KIB + PCT% of GROWTH,
# else say so.
within () {
	within_max_=$(( $2 + $3 + $4 * $5 / 100 ))
	test "$1" -le "$within_max_" && return 0
	echo "RSS ${1} KiB, more than $within_max_ KiB ($2 + $3 + $4% of $5)" >&2
	return 1
}

# round NAME: N tunnels held by load.py hold in NAME.*; their echo checked,
# the proxy's figures while they are held in NAME.held ("FDS RSS").
round () {
	rm -f "$1.ready" "$1.go" "$1.out" &&
	python3 "$LOAD" hold "$PROXY_PORT" "echo.test:$LOAD_PORT" "$N" \
		"$1.ready" "$1.go" "$1.out" >"$1.stdout" 2>"$1.err" &
	round_pid_=$!
	test_when_finished "touch $1.go; wait $round_pid_; :" &&
	test_wait_for_file "$1.ready" "$HOLD_SECONDS" &&
	echo "held=$N failed=0" >"$1.expect" &&
	test_cmp "$1.expect" "$1.ready" &&
	metric_is intutic_tunnels_active "$N" &&
	echo "$(fds) $(proxy_rss)" >"$1.held" &&
	read -r held_fds held_rss <"$1.held" &&
	test_diag "$N tunnels held: $held_fds descriptors, RSS $held_rss KiB" &&
	test "$held_fds" -ge $((BASE_FDS + 2 * N)) &&
	touch "$1.go" &&
	wait "$round_pid_" &&
	echo "alive=$N" >"$1.expect" &&
	test_cmp "$1.expect" "$1.stdout"
}

test_expect_success 'setup: a server for many connections, rules, the proxy; its baseline' '
	start_load &&
	write_hosts hosts echo.test=127.0.0.1 &&
	cat >rules.yaml <<-EOF &&
	version: 1
	allow:
	  - "echo.test:$LOAD_PORT"
	  - "127.0.0.0/8:$LOAD_PORT"
	EOF
	start_proxy rules.yaml --workers 2 &&
	test "$(proxy_metric intutic_tunnels_active)" = 0 &&
	soft=$(awk "/^Max open files/ { print \$4 }" /proc/$PROXY_PID/limits) &&
	test "$soft" -ge $((2 * N + 8)) &&
	sleep 0.5 &&
	BASE_FDS=$(fds) && BASE_RSS=$(proxy_rss) &&
	test_diag "baseline: $BASE_FDS descriptors, RSS $BASE_RSS KiB" &&
	test "$BASE_FDS" -lt "$SPARE_FDS" &&
	audit_mark
'

test_expect_success "$N tunnels held at once, past the peek: each echoes, then again before it closes" '
	round r1 &&
	read -r PEAK_FDS PEAK_RSS <r1.held
'

test_expect_success 'once they are closed: descriptors exactly back to the baseline, no tunnel or connection left' '
	wait_until "$SETTLE_SECONDS" fds_are "$BASE_FDS" || {
		echo "$(fds) descriptors, the baseline was $BASE_FDS" >&2
		return 1
	}
	wait_until 10 metric_is intutic_tunnels_active 0 &&
	metric_is intutic_connections_active 1 &&
	AFTER1_RSS=$(proxy_rss) &&
	test_diag "after: $(fds) descriptors, RSS $AFTER1_RSS KiB (peak $PEAK_RSS)" &&
	# closing them takes little more (their close records)
	within "$AFTER1_RSS" "$PEAK_RSS" "$ROUND_SLACK_KIB" "$ROUND_SLACK_PCT" \
		$((PEAK_RSS - BASE_RSS))
'

test_expect_success "audit: $N decision records, $N close records, each with the bytes its client counted" '
	python3 "$top_srcdir/t/helpers/audit.py" --tally "$AUDIT_FILE" \
		--mark "$test_audit_mark_" --seconds 30 --counts r1.out >tally &&
	cat tally &&
	echo "tally: $N connections, $N requests, $N decision records, $N close records" >expect &&
	test_cmp expect tally &&
	test "$(audit_count event=decision reason=allowed host=echo.test)" = "$N" &&
	audit_mark
'

test_expect_success "a second round of $N: the memory of the first is reused (RSS within ${ROUND_SLACK_KIB} KiB + ${ROUND_SLACK_PCT}% of the first growth)" '
	round r2 &&
	wait_until "$SETTLE_SECONDS" fds_are "$BASE_FDS" &&
	AFTER2_RSS=$(proxy_rss) &&
	test_diag "after the second round: RSS $AFTER2_RSS KiB (first: $AFTER1_RSS)" &&
	within "$AFTER2_RSS" "$AFTER1_RSS" "$ROUND_SLACK_KIB" "$ROUND_SLACK_PCT" \
		$((PEAK_RSS - BASE_RSS)) &&
	python3 "$top_srcdir/t/helpers/audit.py" --tally "$AUDIT_FILE" \
		--mark "$test_audit_mark_" --seconds 30 --counts r2.out
'

# Before the pools, the tunnels' memory came from malloc, between libevent's
# slots for the descriptor numbers, which live as long as the worker: they
# held every page, and RSS stayed at its peak (27.8 MiB against 2.7 at the
# start; malloc_trim(0) gave back only 8 of the 26 MiB).
test_expect_success "RSS back to the baseline (within ${BASE_SLACK_KIB} KiB + ${BASE_SLACK_PCT}% of the peak growth)" '
	within "$(proxy_rss)" "$BASE_RSS" "$BASE_SLACK_KIB" "$BASE_SLACK_PCT" \
		$((PEAK_RSS - BASE_RSS))
'

test_expect_success 'the proxy still serves, and stops cleanly' '
	echo "after all" >in &&
	proxy_tcp --to "echo.test:$LOAD_PORT" --send-file in --half-close >out &&
	test_cmp in out &&
	stop_proxy
'

test_done
