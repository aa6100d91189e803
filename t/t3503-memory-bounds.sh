#!/bin/sh
test_description='memory bounds: a keep-alive origin that floods after its answer is disconnected, not read without limit; 200 tunnels whose clients never read hold at most the transit budget (--transit-max), and the tunnels still work'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl

FLOOD=$top_srcdir/t/helpers/flood.py
MIB=1048576

# --- (a) the origin that floods after its answer ----------------------------
FLOOD_BYTES=268435456	# 256 MiB: the most it sends unasked on one connection
FLOOD_SECONDS=8		# or for this long
IDLE_SAMPLES=12		# the client idles between its requests while RSS is
SAMPLE_SECONDS=0.25	# sampled this many times, this far apart (3 s)
# RSS while it floods: at most this much above the baseline (KiB).  The
# proxy must drop the origin once unasked bytes come: what it holds then is
# one read of them at most (PROXY_IO_CHUNK, 1 MiB) and the connection's own
# structures; the rest is the allocator's and libevent's noise (the first
# request's buffers, a few hundred KiB).  Today's proxy reads all 256 MiB.
FLOOD_SLACK_KIB=16384
# What the origin managed to write unasked: at most what the kernel holds
# (its send buffer, the proxy's receive buffer: the namespace's tcp_wmem
# and tcp_rmem maxima, read below) plus the same 16 MiB for what the proxy
# read before it closed.
FLOOD_END_SECONDS=10	# the origin connection closed by the proxy, at most

# --- (b) 200 tunnels whose clients never read --------------------------------
TUNNELS=200
BUDGET_SMALL=8388608	# --transit-max of the first round (8 MiB)
BUDGET_DEFAULT=33554432	# the default (32 MiB a worker): the second round
FILL_SECONDS=30		# the origin's writes stop (every tunnel full), at most
SETTLED_SAMPLES=4	# its byte count the same this many samples in a row
# RSS with them held: at most baseline + budget + this (KiB).  The budget
# may be passed by one read (1 MiB); the rest is the 200 tunnels' own
# memory (their pool objects and libevent's slots: 10,000 idle tunnels take
# about 25 MiB in t5003, 200 about 0.5 MiB), each read's short-lived copy,
# and the allocator's fragmentation of freed 1 MiB pieces.  Today's proxy
# holds one read for each stuck tunnel: about 0.6 MiB each, 117 MiB.
TUNNEL_SLACK_KIB=12288
READ_BYTES=4194304	# a client that reads, while the 200 are held, gets this
READ_SECONDS=15		# within this
HOLD_SECONDS=30		# the 200 tunnels up, at most
RELEASE_SECONDS=20	# every connection released after the clients close
# Descriptors: two a tunnel in the proxy, one in the clients' process and
# one in the origin's, each in a process of its own.
FDS_WANT=$((2 * TUNNELS + 100))

# ASan: no quarantine, freed memory back at once (as t5003 does), and its
# shadow memory left out of proxy_rss().  What is left is the proxy's heap with
# ASan's redzones, a few per cent for the large pieces that transit is made
# of: the same bounds hold.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0:allocator_release_to_os_interval_ms=0"
export ASAN_OPTIONS
if grep -q __asan_init "$top_builddir/proxy/intutic-proxy" 2>/dev/null; then
	test_set_prereq ASAN
	test_diag "a sanitizer build: RSS without ASan's shadow memory"
fi

hard=$(ulimit -Hn)
case $hard in
unlimited) hard=$((FDS_WANT * 2)) ;;
*[!0-9]*|'') test_skip_all "cannot read the descriptor limit (ulimit -Hn: '$hard')" ;;
esac
test "$hard" -ge "$FDS_WANT" ||
	test_skip_all "the hard descriptor limit ($hard) is under the $FDS_WANT that $TUNNELS tunnels need"
soft=$(ulimit -Sn)
if test "$soft" != unlimited && test "$soft" -lt "$FDS_WANT"; then
	ulimit -n "$FDS_WANT" ||
		test_skip_all "cannot raise the descriptor limit to $FDS_WANT"
fi

# peak_rss N: the largest of N samples of rss, SAMPLE_SECONDS apart.
peak_rss () {
	peak_rss_max_=0
	peak_rss_n_=$1
	while test "$peak_rss_n_" -gt 0; do
		peak_rss_v_=$(proxy_rss) || return 1
		test "$peak_rss_v_" -gt "$peak_rss_max_" && peak_rss_max_=$peak_rss_v_
		sleep "$SAMPLE_SECONDS"
		peak_rss_n_=$((peak_rss_n_ - 1))
	done
	echo "$peak_rss_max_"
}

# fill SECONDS: sample proxy_rss every SAMPLE_SECONDS, the largest in PEAK, until
# the raw origin's count of bytes written (source.stats) stays the same for
# SETTLED_SAMPLES samples: the clients read nothing, so every byte is as
# far as it will go, in the kernel's buffers or in the proxy.  At most
# SECONDS; else say so, and fail.
fill () {
	PEAK=0
	fill_last_=
	fill_same_=0
	fill_n_=$(($1 * 4))
	while test "$fill_n_" -gt 0; do
		fill_v_=$(proxy_rss) || return 1
		test "$fill_v_" -gt "$PEAK" && PEAK=$fill_v_
		fill_now_=$(sed -n "s/.* flooded=\([0-9]*\) .*/\1/p" "$SOURCE_STATS")
		if test -n "$fill_now_" && test "$fill_now_" = "$fill_last_"; then
			fill_same_=$((fill_same_ + 1))
			test "$fill_same_" -ge "$SETTLED_SAMPLES" && return 0
		else
			fill_same_=0
		fi
		fill_last_=$fill_now_
		sleep "$SAMPLE_SECONDS"
		fill_n_=$((fill_n_ - 1))
	done
	echo "the origin still writes after ${1}s: $(cat "$SOURCE_STATS"), RSS peak $PEAK KiB" >&2
	return 1
}

# baseline: the proxy's RSS once started and scraped once (KiB), in BASE.
baseline () {
	proxy_metric intutic_connections_active >/dev/null &&
	sleep 0.5 &&
	BASE=$(proxy_rss) &&
	test_diag "baseline RSS $BASE KiB"
}

# at_most WHAT KIB MAX_KIB: KIB <= MAX_KIB, else say so.
at_most () {
	test "$2" -le "$3" && return 0
	echo "$1: $2 KiB, more than the bound of $3 KiB" >&2
	return 1
}

# metric_is NAME VALUE; 2 when it cannot be read.
metric_is () {
	metric_is_v_=$(proxy_metric "$1") || return 2
	test "$metric_is_v_" = "$2"
}

# released: no tunnel left, and no connection but the scrape's own.
released () {
	metric_is intutic_tunnels_active 0 &&
	metric_is intutic_connections_active 1
}

# ends_logged NAME N: N "end=" lines in the flood server NAME's log since
# its mark (1: not yet).
ends_logged () {
	server_since "$1" || return 2
	test "$(grep_count " end=" "$1.new")" -ge "$2"
}

# flood_logged REGEX: the flood server's log since its mark (flood.new,
# read again on each call) has a line matching REGEX (1: not yet).
flood_logged () {
	server_since flood || return 2
	grep -q -e "$1" flood.new
}

# sysctl_max NAME: the last of the three numbers of net.ipv4.NAME, bytes.
sysctl_max () {
	awk '{ print $3 }' "/proc/sys/net/ipv4/$1"
}

test_expect_success 'setup: a flooding origin, names, rules, the proxy; its baseline' '
	test_start_helper_ flood flood.py --mode http \
		--flood-bytes "$FLOOD_BYTES" --flood-seconds "$FLOOD_SECONDS" &&
	SOURCE_STATS=$PWD/source.stats &&
	test_start_helper_ source flood.py --mode raw --stats "$SOURCE_STATS" \
		--sndbuf 65536 \
		--flood-bytes 4294967296 --flood-seconds 60 &&
	write_hosts hosts flood.test=127.0.0.1 source.test=127.0.0.1 &&
	cat >rules.yaml <<-EOF &&
	version: 1
	allow:
	  - "flood.test:$FLOOD_PORT"
	  - "source.test:$SOURCE_PORT"
	  - "127.0.0.0/8:$FLOOD_PORT,$SOURCE_PORT"
	EOF
	start_proxy rules.yaml --workers 1 &&
	baseline &&
	FLOOD_BASE=$BASE
'

# --- (a) ---------------------------------------------------------------------------

test_expect_success "a keep-alive origin that floods after its answer: RSS stays within ${FLOOD_SLACK_KIB} KiB of the baseline" '
	audit_mark && server_mark flood && rm -f a.ready a.go a.out || return 1
	python3 "$FLOOD" get "$PROXY_PORT" "flood.test:$FLOOD_PORT" \
		--ready a.ready --go a.go --out a.out --wait 30 \
		>a.stdout 2>a.err &
	get_pid=$! &&
	test_atexit "touch $PWD/a.go; wait $get_pid; :" &&
	test_wait_for_file a.ready 10 &&
	echo "first 200 1" >expect &&
	test_cmp expect a.ready &&
	peak=$(peak_rss "$IDLE_SAMPLES") &&
	server_since flood &&
	test_diag "flood: peak RSS $peak KiB (baseline $FLOOD_BASE), the origin: $(grep "conn 1 " flood.new | tail -n 1)" &&
	echo "$peak" >a.peak &&
	at_most "RSS while the origin floods" "$peak" $((FLOOD_BASE + FLOOD_SLACK_KIB))
'

test_expect_success 'the flooding origin connection is closed by the proxy, after a bounded number of bytes' '
	wmem=$(sysctl_max tcp_wmem) && rmem=$(sysctl_max tcp_rmem) &&
	most=$((wmem + rmem + FLOOD_SLACK_KIB * 1024)) &&
	test "$most" -lt "$FLOOD_BYTES" || {
		echo "the bound ($most bytes) is not under the flood ($FLOOD_BYTES): the test proves nothing here" >&2
		return 1
	}
	wait_until "$FLOOD_END_SECONDS" flood_logged "conn 1 end="
	server_since flood &&
	cat flood.new &&
	line=$(grep "conn 1 end=" flood.new) || {
		echo "the origin connection still runs ${FLOOD_END_SECONDS}s later" >&2
		return 1
	}
	sent=$(echo "$line" | sed -n "s/.* flooded=\([0-9]*\) .*/\1/p") &&
	test_diag "the origin: $line (bound $most bytes)" &&
	case $line in
	*" end=reset "*|*" end=epipe "*|*" end=eof "*) ;;
	*)	echo "not closed by the proxy: $line" >&2; return 1 ;;
	esac &&
	test_grep -v "conn 1 flood-limit=" flood.new &&
	test "$sent" -le "$most"
'

test_expect_success 'the next request on that client connection: answered by a fresh origin connection' '
	touch a.go &&
	test_wait_for_file a.out 15 &&
	echo "second 200 2" >expect &&
	test_cmp expect a.out &&
	wait "$get_pid" &&
	server_since flood &&
	test "$(grep_count "conn [0-9]+ [^ ]+ accepted" flood.new)" = 2 &&
	test_grep "conn 2 request 1: GET / HTTP/1.1" flood.new &&
	test_grep -v "conn 1 request 2" flood.new &&
	audit_since 1 &&
	audit_expect 2 event=decision proto=http host=flood.test decision=allow &&
	audit_expect 1 event=close proto=http host=flood.test
'

test_expect_success 'after the flood: RSS back near the baseline, connections released, the proxy still serves' '
	wait_until "$RELEASE_SECONDS" released &&
	now=$(proxy_rss) &&
	test_diag "RSS after the flood: $now KiB" &&
	at_most "RSS after the flood" "$now" $((FLOOD_BASE + FLOOD_SLACK_KIB)) &&
	wait_until "$RELEASE_SECONDS" ends_logged flood 2 &&
	stop_proxy
'

# --- (b) ---------------------------------------------------------------------------

# round NAME BUDGET [ARGS...]: a proxy (--workers 1, ARGS), its baseline;
# TUNNELS clients that never read (flood.py hold, in NAME.*) while the
# origin writes to each; RSS sampled while held, at most baseline + BUDGET
# + TUNNEL_SLACK_KIB; a client that reads gets its bytes; all released once
# the clients close.
round_start () {
	# A proxy left by a test that failed before its stop_proxy.
	stop_proxy 2>/dev/null
	if test -f audit.jsonl; then mv audit.jsonl "audit-$1.jsonl"; fi &&
	shift 2 &&
	start_proxy rules.yaml --workers 1 "$@" &&
	baseline
}

round_hold () {
	server_mark source && rm -f "$1.ready" "$1.go" || return 1
	python3 "$FLOOD" hold "$PROXY_PORT" "source.test:$SOURCE_PORT" \
		"$TUNNELS" --ready "$1.ready" --go "$1.go" --rcvbuf 4096 \
		--wait 60 >"$1.stdout" 2>"$1.err" &
	hold_pid=$! &&
	test_atexit "touch $PWD/$1.go; wait $hold_pid; :" &&
	test_wait_for_file "$1.ready" "$HOLD_SECONDS" &&
	echo "held=$TUNNELS failed=0" >expect &&
	test_cmp expect "$1.ready" &&
	metric_is intutic_tunnels_active "$TUNNELS" &&
	started=$(date +%s) &&
	fill "$FILL_SECONDS" &&
	peak=$PEAK &&
	echo "$peak" >"$1.peak" &&
	test_diag "the origin: $(cat "$SOURCE_STATS") after $(($(date +%s) - started)) s" &&
	test_diag "$TUNNELS tunnels not read: peak RSS $peak KiB, baseline $BASE, bound $((BASE + $2 / 1024 + TUNNEL_SLACK_KIB))" &&
	at_most "RSS with $TUNNELS tunnels not read" "$peak" \
		$((BASE + $2 / 1024 + TUNNEL_SLACK_KIB))
}

round_read () {
	python3 "$FLOOD" read "$PROXY_PORT" "source.test:$SOURCE_PORT" \
		"$READ_BYTES" --timeout "$READ_SECONDS" >"$1.read" 2>"$1.read.err"
	cat "$1.read" "$1.read.err" &&
	echo "read=$READ_BYTES" >expect &&
	test_cmp expect "$1.read"
}

round_release () {
	touch "$1.go" &&
	wait "$hold_pid" &&
	echo "closed=$TUNNELS" >expect &&
	test_cmp expect "$1.stdout" &&
	wait_until "$RELEASE_SECONDS" released || {
		echo "not released: $(proxy_metric intutic_tunnels_active) tunnels, $(proxy_metric intutic_connections_active) connections" >&2
		return 1
	}
	# Every origin connection of the round ended, none on a limit.
	wait_until "$RELEASE_SECONDS" ends_logged source $((TUNNELS + 1)) || {
		server_since source
		echo "$(grep_count " end=" source.new) origin connections ended, not $((TUNNELS + 1))" >&2
		return 1
	}
	test "$(grep -c " end=\(reset\|epipe\|eof\) " source.new)" = $((TUNNELS + 1)) &&
	test_diag "RSS after the round: $(proxy_rss) KiB" &&
	stop_proxy
}

for r in small default; do
	if test $r = small; then
		budget=$BUDGET_SMALL
		opts="--transit-max $BUDGET_SMALL"
	else
		budget=$BUDGET_DEFAULT
		opts=
	fi
	test_expect_success "a proxy with --workers 1 ${opts:-and the default --transit-max}" "
		round_start $r $budget $opts
	"
	test_expect_success "$TUNNELS tunnels whose clients never read: RSS at most the baseline + $((budget / MIB)) MiB + $((TUNNEL_SLACK_KIB / 1024)) MiB" "
		round_hold $r $budget
	"
	test_expect_success "while they are held, a tunnel whose client reads gets $((READ_BYTES / MIB)) MiB" "
		round_read $r
	"
	test_expect_success 'once their clients close: every tunnel and origin connection released' "
		round_release $r
	"
done

test_done
