#!/usr/bin/env bash
# scripts/bench.d/transparent.sh — `scripts/bench transparent`: the
# transparent listener (--transparent-bind) side by side with CONNECT on
# the data port, on one proxy, for the same client and origin.
#
#   scripts/bench transparent [--rounds N] [--secs S] [--bulk-mib M]
#                             [--workers N] [--perf] [--keep]
#
#   --rounds N     rounds (default 3); each measures both ways in turn, the
#                  one going first changing each round; the table shows
#                  medians, and each round's figures below it
#   --secs S       seconds of each set-up measurement (default 3)
#   --bulk-mib M   MiB moved by each bulk measurement (default 1024)
#   --workers N    intutic-proxy --workers (default: the proxy's own, one
#                  per processor it may run on: 1, as it is pinned)
#   --perf         after the rounds, a set-up run of each way, 8 at a
#                  time, under `perf record -e cpu-clock` (no hardware
#                  counters; dwarf call graphs) of the proxy: its CPU per
#                  set-up in each of its functions (inclusive) and in any
#                  function (self) that differs most, side by side; the
#                  recordings are kept (implies --keep)
#   --keep         keep the work directory (configs, logs, raw results)
#
# Two network namespaces made for the run and deleted on exit, joined by
# a veth pair and nothing else: the proxy's (loopback and its end of the
# pair, 10.233.0.1) and the clients' (the other end, 10.233.0.2, with a
# route to the origin's address through the first and no other).  The
# origin is `benchtool serve` on 198.51.100.10:9001 (TEST-NET-2, on the
# proxy namespace's loopback), named sink.test in the proxy's --hosts
# file (its --resolv-conf is empty: nothing is asked of a name server);
# the rules allow sink.test:9001 and, as the proxy counts TEST-NET
# internal, 198.51.100.10/32:9001 too (as t3602 does).  The proxy listens
# with --bind 10.233.0.1 (CONNECT) and --transparent-bind 10.233.0.1:3129;
# the proxy namespace's nftables table redirects the clients' TCP to
# 198.51.100.10:9001 to the latter, and lets them reach nothing else there
# (a drop counted, and shown).  One run is registered on the control socket
# (POST /v1/runs, then PUT /v1/runs/RUN/addr with the clients' address):
# every connection of the clients is that run's; the CONNECT clients send
# its credentials (Proxy-Authorization: Basic) as well.  Both ways thus
# cross the veth, pass the same table and connection tracking, and are
# decided for the same run by the same rules.
#
# The clients are benchtool's (scripts/bench.d/benchtool.c, as `scripts/
# bench proxy` uses them) with BENCHTOOL_HTTP=1: the first bytes of every
# connection are a request head whose Host is sink.test:9001, which is
# what the transparent listener names the destination from, and which
# passes the peek of a CONNECT tunnel.  CONNECT: connect to the data port,
# CONNECT sink.test:9001 with the credentials, 200, then those bytes;
# transparent: connect to 198.51.100.10:9001, redirected, then the same
# bytes.
#   - set-up: connect, the head echoed back, close; 1 and 8 at a time;
#     the rate, p50/p99 latency (1 at a time), and the proxy's CPU time
#     (its threads' schedstat) per set-up.  A transparent set-up has one
#     round-trip fewer for the client (no CONNECT and 200), so its rate
#     with one at a time gains from that; the CPU per set-up compares the
#     proxy's work alone;
#   - bulk: 1 and 8 connections, up (to the sink, until it acknowledges the
#     byte count) and down (from the source); MiB/s and the proxy's CPU
#     time per GiB.
# The audit log is on, as in use: after each set-up measurement the
# decision records it added are counted, by way and run, against the
# set-ups the client made (a shortfall, a transparent one recorded as a
# mismatch, or one of another run is reported as a failure).
# The target (issue 23): transparent within 10% of CONNECT: its rates at
# least 0.90 of CONNECT's, the proxy's CPU per set-up and per GiB at most
# 1/0.90 of it; each the median of the rounds' own ratios.
#
# Runs as root: namespaces and nftables.  The proxy on the last CPU, the
# clients and the origin on CPU 0.  About 30 s a round.
#
# Environment: INTUTIC_BUILD_DIR (build directory, default build/).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/scripts/bench.d
builddir=${INTUTIC_BUILD_DIR:-$top/build}
proxybin=$builddir/proxy/intutic-proxy

rounds=3 secs=3 bulk_mib=1024 workers= perf=0 keep=0
perf_hz=2000
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=${2:?--rounds N}; shift ;;
	--secs) secs=${2:?--secs S}; shift ;;
	--bulk-mib) bulk_mib=${2:?--bulk-mib M}; shift ;;
	--workers) workers=${2:?--workers N}; shift ;;
	--perf) perf=1 keep=1 ;;
	--keep) keep=1 ;;
	-h|--help) sed -n '2,/^set -e/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) echo "bench transparent: unknown option '$1'" >&2; exit 2 ;;
	esac
	shift
done
case "$rounds" in ''|*[!0-9]*|0) echo "bench transparent: --rounds N, N >= 1" >&2; exit 2 ;; esac
case "$secs" in ''|*[!0-9]*|0) echo "bench transparent: --secs S, S >= 1" >&2; exit 2 ;; esac
case "$bulk_mib" in ''|*[!0-9]*|0) echo "bench transparent: --bulk-mib M, M >= 1" >&2; exit 2 ;; esac
case "${workers:-1}" in *[!0-9]*|0) echo "bench transparent: --workers N, N >= 1" >&2; exit 2 ;; esac

say() { printf 'bench transparent: %s\n' "$*" >&2; }
die() { printf 'bench transparent: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (network namespaces, nftables)"
for c in ip nft unshare taskset timeout cc python3; do
	command -v "$c" >/dev/null 2>&1 || die "'$c' is needed"
done
[ "$perf" = 0 ] || command -v perf >/dev/null 2>&1 || die "--perf: 'perf' is needed"
[ -x "$proxybin" ] || die "no $proxybin: build first (scripts/bootstrap)"

# The two namespaces, their addresses and ports.
ns=intutic-bench-tp-$$ nsc=intutic-bench-tpc-$$
gw=10.233.0.1 cl=10.233.0.2 origin=198.51.100.10
sink_port=9001 data_port=3128 tport=3129
target=sink.test:$sink_port
run=bench-transparent
bulk_bytes=$((bulk_mib << 20))

work=$(mktemp -d /tmp/intutic-bench-tp.XXXXXX)
chmod 755 "$work"
pids=()
ns_made=0

cleanup() {
	local rc=$? pid i alive n
	trap - EXIT INT TERM
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for i in $(seq 1 20); do
		alive=0
		for pid in "${pids[@]}"; do
			kill -0 "$pid" 2>/dev/null && alive=1
		done
		[ "$alive" = 0 ] && break
		sleep 0.2
	done
	for pid in "${pids[@]}"; do
		kill -KILL "$pid" 2>/dev/null || true
	done
	if [ "$ns_made" = 1 ]; then
		# Anything left in our namespaces was started by this run.
		for n in "$ns" "$nsc"; do
			for pid in $(ip netns pids "$n" 2>/dev/null); do
				kill -KILL "$pid" 2>/dev/null || true
			done
		done
		sleep 0.2
		ip netns del "$nsc" 2>/dev/null || true
		ip netns del "$ns" 2>/dev/null || say "could not delete netns $ns"
	fi
	if [ "$keep" = 1 ] || [ "$rc" != 0 ]; then
		say "work directory kept: $work"
	else
		rm -rf "$work"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cc -O2 -Wall -Wextra -o "$work/benchtool" "$here/benchtool.c" ||
	die "cannot build benchtool"
tool=$work/benchtool

# ------------------------------------------------------- the namespaces

ip netns add "$ns"
ns_made=1
ip netns add "$nsc"
# No IPv6 at all (no neighbour or router messages on the pair), and the
# settings of `scripts/bench proxy`'s namespace: at most 4096 sockets in
# TIME_WAIT, so that a connect(2) never searches a port range full of them.
for n in "$ns" "$nsc"; do
	ip netns exec "$n" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 \
	    net.ipv6.conf.default.disable_ipv6=1 >/dev/null
	ip netns exec "$n" sysctl -q -w net.ipv4.ip_local_port_range="1024 65000" \
	    net.ipv4.tcp_tw_reuse=1 net.core.somaxconn=8192 \
	    net.ipv4.tcp_max_tw_buckets=4096 >/dev/null 2>&1 || true
	ip -n "$n" link set lo up
done
ip -n "$ns" link add tb-host type veth peer name tb-cl netns "$nsc"
ip -n "$ns" addr add "$gw/24" dev tb-host
ip -n "$ns" addr add "$origin/32" dev lo
ip -n "$ns" link set tb-host up
ip -n "$nsc" addr add "$cl/24" dev tb-cl
ip -n "$nsc" link set tb-cl up
ip -n "$nsc" route add "$origin/32" via "$gw"

cat >"$work/fw.nft" <<EOF
table inet intutic_bench {
	chain prerouting {
		type nat hook prerouting priority dstnat;
		iifname "tb-host" ip daddr $origin tcp dport $sink_port redirect to :$tport
	}
	chain input {
		type filter hook input priority filter; policy accept;
		iifname "tb-host" ct state established,related accept
		iifname "tb-host" ct status dnat accept
		iifname "tb-host" ip daddr $gw tcp dport $data_port accept
		iifname "tb-host" counter drop
	}
	chain forward {
		type filter hook forward priority filter; policy drop;
	}
}
EOF
ip netns exec "$ns" nft -f "$work/fw.nft" || die "cannot load the nftables table"
# Connection tracking keeps every connection of both ways (client side and
# origin side) for 120 s after its end by default; at thousands of set-ups
# a second its table would fill (262,144 entries) and drop packets.
ip netns exec "$ns" sysctl -q -w net.netfilter.nf_conntrack_tcp_timeout_time_wait=2 \
    >/dev/null 2>&1 || say "warning: cannot shorten conntrack's TIME_WAIT"

nofile=$(ulimit -Hn)
case "$nofile" in unlimited|*[!0-9]*) nofile=65536 ;; esac
[ "$nofile" -gt 65536 ] && nofile=65536
ulimit -n "$nofile" 2>/dev/null || true

ncpu=$(nproc)
cpu_proxy=$((ncpu - 1)) cpu_load=0
[ "$ncpu" -ge 2 ] || cpu_proxy=0

# ------------------------------------------------------------- files

hosts=$work/hosts empty=$work/resolv.conf
cat >"$hosts" <<EOF
127.0.0.1 localhost
$origin sink.test
EOF
: >"$empty"
chmod 644 "$hosts" "$empty"
cat >"$work/rules.yaml" <<EOF
version: 1
ports: [$sink_port]
allow:
  - "$target"
  - "$origin/32:$sink_port"
EOF

# nsrun NS CPUS CMD...: CMD in namespace NS, with the hosts file and an
# empty resolv.conf over /etc's (its own mount namespace), $nofile files,
# pinned to CPUS.  Every step execs the next.
nsrun() {
	local n=$1 cpus=$2
	shift 2
	ip netns exec "$n" unshare --mount --propagation private -- \
	    /bin/sh -c 'mount --bind "$1" /etc/hosts || exit 125
		mount --bind "$2" /etc/resolv.conf 2>/dev/null
		ulimit -n "$4" || exit 125
		cpus=$3; shift 4
		exec taskset -c "$cpus" "$@"' sh "$hosts" "$empty" "$cpus" "$nofile" "$@"
}

# nsbg NS CPUS CMD... &: the same in the background; the function's
# subshell execs, so that $! is CMD's own pid.
nsbg() {
	local n=$1 cpus=$2
	shift 2
	exec ip netns exec "$n" unshare --mount --propagation private -- \
	    /bin/sh -c 'mount --bind "$1" /etc/hosts || exit 125
		mount --bind "$2" /etc/resolv.conf 2>/dev/null
		ulimit -n "$4" || exit 125
		cpus=$3; shift 4
		exec taskset -c "$cpus" "$@"' sh "$hosts" "$empty" "$cpus" "$nofile" "$@"
}

# cpu_ns PID: the CPU time PID's threads have had, in ns (schedstat).
cpu_ns() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null |
	    awk '{ s += $1 } END { printf "%.0f", s }'
}

# The origin.
nsbg "$ns" "$cpu_load" "$tool" serve "$origin:$sink_port" >"$work/serve.log" 2>&1 &
pids+=($!)
nsrun "$ns" "$cpu_load" "$tool" probe "$origin:$sink_port" 10 ||
	die "the origin did not start"

# The run: its credentials for the CONNECT clients (RUN:TOKEN).
token=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
auth=$work/auth.txt
( umask 077; echo "$run:$token" >"$auth" )

proxy_pid=
# start_proxy: the proxy started (again), its run registered with the
# clients' address.
start_proxy() {
	local i
	rm -rf "$work/state"
	nsbg "$ns" "$cpu_proxy" "$proxybin" --rules "$work/rules.yaml" \
	    --bind "$gw" --port "$data_port" --transparent-bind "$gw:$tport" \
	    --state-dir "$work/state" --audit "$work/audit.jsonl" \
	    --resolv-conf "$empty" --hosts "$hosts" \
	    ${workers:+--workers "$workers"} --grace 1000 \
	    >>"$work/proxy.log" 2>&1 &
	proxy_pid=$!
	pids+=("$proxy_pid")
	for i in $(seq 1 100); do
		[ -s "$work/state/proxy.json" ] && break
		kill -0 "$proxy_pid" 2>/dev/null || break
		sleep 0.1
	done
	if ! [ -s "$work/state/proxy.json" ]; then
		tail -5 "$work/proxy.log" >&2
		return 1
	fi
	# The control socket is a file: no packet is sent.
	timeout -k 5 30 python3 - "$here" "$work/state" "$run" "$token" "$cl" \
	    >>"$work/register.log" 2>&1 <<'EOF' || return 1
import sys
sys.path.insert(0, sys.argv[1])
import runs
state, run, token, addr = sys.argv[2:6]
status, body = runs.call(state, "POST", "/v1/runs", {
    "run": run, "token": token, "command": "bench", "project": None,
    "pid": None, "policy": None})
if status != 201:
    sys.exit("POST /v1/runs: %d %s" % (status, body.decode()))
status, body = runs.call(state, "PUT", "/v1/runs/%s/addr" % run,
                         {"addr": addr})
if status != 200:
    sys.exit("PUT /v1/runs/%s/addr: %d %s" % (run, status, body.decode()))
print("registered %s at %s" % (run, addr))
EOF
	nsrun "$nsc" "$cpu_load" "$tool" probe "$gw:$data_port" 10
}

results=$work/results.tsv failures=$work/failures.txt
: >"$results"
: >"$failures"

# record ROUND WAY METRIC VALUE  (VALUE "FAIL" for a failure)
record() { printf '%s\t%s\t%s\t%s\n' "$@" >>"$results"; }

# fail ROUND WAY WHAT DETAIL-FILE
fail() {
	{
		printf '== round %s, %s: %s\n' "$1" "$2" "$3"
		[ -s "$4" ] && sed 's/^/   | /' "$4" | tail -8
		if [ -s "$work/proxy.log" ]; then
			printf '   proxy stderr (last lines):\n'
			tail -5 "$work/proxy.log" | sed 's/^/   | /'
		fi
	} >>"$failures"
	say "round $1: $2: $3 failed (see the end of the report)"
}

# ready ROUND WAY METRIC: the proxy runs (started again if it died), else
# METRIC is recorded as failed.
ready() {
	kill -0 "$proxy_pid" 2>/dev/null && return 0
	say "the proxy is not running any more: starting it again"
	printf '== the proxy exited during the run; last stderr:\n' >>"$failures"
	tail -5 "$work/proxy.log" 2>/dev/null | sed 's/^/   | /' >>"$failures"
	start_proxy && return 0
	record "$1" "$2" "$3" FAIL
	return 1
}

# client WAY SECONDS CMD ARGS...: `benchtool CMD VIA sink.test:9001 ARGS`
# in the clients' namespace, SECONDS at most, the way's: through the data
# port with the run's credentials (connect), or straight to the origin's
# address (transparent).
client() {
	local way=$1 limit=$2 cmd=$3
	shift 3
	if [ "$way" = connect ]; then
		nsrun "$nsc" "$cpu_load" env BENCHTOOL_HTTP=1 BENCHTOOL_AUTH="$auth" \
		    timeout -k 5 "$limit" "$tool" "$cmd" "$gw:$data_port" "$target" "$@"
	else
		nsrun "$nsc" "$cpu_load" env BENCHTOOL_HTTP=1 \
		    timeout -k 5 "$limit" "$tool" "$cmd" direct "$target" "$@"
	fi
}

# audit_check ROUND WAY OFFSET DONE: the decision records the audit log got
# past byte OFFSET: DONE allowed of this way and run, none of another way,
# none a mismatch.
audit_check() {
	local r=$1 way=$2 off=$3 done=$4 out=$work/audit-check.out
	sleep 0.3	# the last closes written
	tail -c +"$((off + 1))" "$work/audit.jsonl" | python3 -c '
import json, sys
way, run = sys.argv[1], sys.argv[2]
n = other = mism = wrong = 0
for line in sys.stdin:
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if r.get("event") != "decision":
        continue
    if r.get("proto") != way:
        other += 1
    elif r.get("decision") != "allow" or r.get("run") != run:
        wrong += 1
    else:
        n += 1
        mism += r.get("mismatch") is True
print(n, other, mism, wrong)
' "$way" "$run" >"$out" 2>&1 || true
	read -r a_n a_other a_mism a_wrong <"$out" || true
	if [ "${a_n:-x}" != "$done" ] || [ "${a_other:-x}" != 0 ] ||
	    [ "${a_mism:-x}" != 0 ] || [ "${a_wrong:-x}" != 0 ]; then
		printf 'audit log: %s allowed decisions of %s for %s, %s set-ups made; %s of another way, %s mismatched, %s denied or of another run\n' \
		    "${a_n:-?}" "$way" "$run" "$done" "${a_other:-?}" \
		    "${a_mism:-?}" "${a_wrong:-?}" >>"$out"
		fail "$r" "$way" "set-up: the audit log does not match" "$out"
	fi
}

# m_setup ROUND WAY PAR: set-ups, PAR at a time, for $secs seconds.
m_setup() {
	local r=$1 way=$2 par=$3 out=$work/out.setup line c0 c1 done off
	ready "$r" "$way" "setup_rate_$par" || return 0
	off=$(stat -c %s "$work/audit.jsonl" 2>/dev/null || echo 0)
	c0=$(cpu_ns "$proxy_pid")
	if client "$way" $((secs + 40)) setup 1000000 "$par" "$secs" >"$out" 2>&1 &&
	    line=$(grep '^done=' "$out"); then
		c1=$(cpu_ns "$proxy_pid")
		done=$(sed -n 's/^done=\([0-9]*\).*/\1/p' <<<"$line")
		record "$r" "$way" "setup_rate_$par" \
		    "$(sed -n 's/.*rate=\([0-9.]*\).*/\1/p' <<<"$line")"
		record "$r" "$way" "setup_cpu_us_$par" \
		    "$(awk -v a="$c1" -v b="$c0" -v n="$done" 'BEGIN { printf "%.2f", (a - b) / n / 1000 }')"
		if [ "$par" = 1 ]; then
			record "$r" "$way" setup_p50_1 "$(sed -n 's/.*p50_ms=\([0-9.]*\).*/\1/p' <<<"$line")"
			record "$r" "$way" setup_p99_1 "$(sed -n 's/.*p99_ms=\([0-9.]*\).*/\1/p' <<<"$line")"
		fi
		audit_check "$r" "$way" "$off" "$done"
	else
		fail "$r" "$way" "set-up, $par at a time" "$out"
		record "$r" "$way" "setup_rate_$par" FAIL
	fi
}

# m_bulk ROUND WAY CONNS up|down
m_bulk() {
	local r=$1 way=$2 n=$3 dir=$4 out=$work/out.bulk v c0 c1
	ready "$r" "$way" "bulk_${dir}_$n" || return 0
	c0=$(cpu_ns "$proxy_pid")
	if client "$way" 120 bulk "$n" "$bulk_bytes" "$dir" 100 >"$out" 2>&1 &&
	    v=$(sed -n 's/.*mibps=\([0-9.]*\).*/\1/p' "$out") && [ -n "$v" ]; then
		c1=$(cpu_ns "$proxy_pid")
		record "$r" "$way" "bulk_${dir}_$n" "$v"
		record "$r" "$way" "bulk_cpu_ms_${dir}_$n" \
		    "$(awk -v a="$c1" -v b="$c0" -v m="$bulk_mib" 'BEGIN { printf "%.1f", (a - b) / 1e6 / (m / 1024) }')"
	else
		fail "$r" "$way" "bulk $dir, $n connection(s)" "$out"
		record "$r" "$way" "bulk_${dir}_$n" FAIL
	fi
}

# ------------------------------------------------------------- the run

say "work directory $work; namespaces $ns (proxy, origin) and $nsc (clients)"
say "CPU $cpu_proxy: the proxy; CPU $cpu_load: the clients and the origin"
start_proxy || die "the proxy did not start (its log: $work/proxy.log)"
# A first pass of each way, not counted: the proxy's first connections,
# and a check that each way works at all.
for way in connect transparent; do
	client "$way" 30 setup 200 1 5 >"$work/warmup.$way" 2>&1 ||
		die "$way: the set-up does not work: $(tail -3 "$work/warmup.$way")"
done

load_start=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load_start" 'BEGIN { exit !(l > 1.0) }'; then
	say "warning: the machine is busy (load average $load_start): figures will be noisy"
fi
started=$(date +%s)
for ((r = 1; r <= rounds; r++)); do
	if ((r % 2)); then order="connect transparent"; else order="transparent connect"; fi
	say "round $r of $rounds: $order"
	for par in 1 8; do
		say "  set-up, $par at a time, ${secs}s"
		for way in $order; do
			m_setup "$r" "$way" "$par"
		done
	done
	for spec in "1 up" "1 down" "8 up" "8 down"; do
		say "  bulk ${spec#* }, ${spec% *} connection(s), $bulk_mib MiB"
		for way in $order; do
			m_bulk "$r" "$way" $spec
		done
	done
done
elapsed=$(( $(date +%s) - started ))
load_end=$(cut -d' ' -f1 /proc/loadavg)
dropped=$(ip netns exec "$ns" nft list chain inet intutic_bench input 2>/dev/null |
    sed -n 's/.*counter packets \([0-9]*\) .*drop.*/\1/p')

python3 - "$results" "$rounds" <<'EOF'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
rounds = int(sys.argv[2])
val = {}
for rnd, way, metric, v in rows:
    val[(way, metric, int(rnd))] = v

# key, label, format, higher is better, target (the lowest ratio allowed
# when higher is better, else the highest; None: no target)
METRICS = [
    ("setup_rate_1", "set-ups/s, 1 at a time", "{:,.0f}", True, 0.90),
    ("setup_rate_8", "set-ups/s, 8 at a time", "{:,.0f}", True, 0.90),
    ("setup_p50_1", "set-up p50 (ms), 1 at a time", "{:.3f}", False, None),
    ("setup_p99_1", "set-up p99 (ms), 1 at a time", "{:.3f}", False, None),
    ("setup_cpu_us_1", "proxy CPU per set-up (us), 1 at a time", "{:.1f}",
     False, 1 / 0.90),
    ("setup_cpu_us_8", "proxy CPU per set-up (us), 8 at a time", "{:.1f}",
     False, 1 / 0.90),
    ("bulk_up_1", "bulk up, 1 connection (MiB/s)", "{:,.0f}", True, 0.90),
    ("bulk_down_1", "bulk down, 1 connection (MiB/s)", "{:,.0f}", True, 0.90),
    ("bulk_up_8", "bulk up, 8 connections (MiB/s)", "{:,.0f}", True, 0.90),
    ("bulk_down_8", "bulk down, 8 connections (MiB/s)", "{:,.0f}", True, 0.90),
    ("bulk_cpu_ms_up_1", "proxy CPU per GiB (ms), up, 1", "{:.0f}", False,
     1 / 0.90),
    ("bulk_cpu_ms_down_1", "proxy CPU per GiB (ms), down, 1", "{:.0f}",
     False, 1 / 0.90),
    ("bulk_cpu_ms_up_8", "proxy CPU per GiB (ms), up, 8", "{:.0f}", False,
     1 / 0.90),
    ("bulk_cpu_ms_down_8", "proxy CPU per GiB (ms), down, 8", "{:.0f}",
     False, 1 / 0.90),
]


def num(way, key, rnd):
    v = val.get((way, key, rnd))
    return None if v in (None, "", "FAIL") else float(v)


def table(header, rows):
    widths = [max(len(str(r[i])) for r in rows + [header])
              for i in range(len(header))]
    line = lambda r: "  ".join(
        str(c).ljust(widths[i]) if i == 0 else str(c).rjust(widths[i])
        for i, c in enumerate(r)).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths])] +
                     [line(r) for r in rows])


summary, by_round = [], []
for key, label, f, higher, target in METRICS:
    cols = {}
    for way in ("connect", "transparent"):
        vs = [num(way, key, r) for r in range(1, rounds + 1)]
        ok = [v for v in vs if v is not None]
        failed = sum(1 for r in range(1, rounds + 1)
                     if val.get((way, key, r)) == "FAIL")
        text = f.format(statistics.median(ok)) if ok else "-"
        if failed:
            text += " ({}/{} failed)".format(failed, rounds)
        cols[way] = text
    ratios = []
    for r in range(1, rounds + 1):
        c, t = num("connect", key, r), num("transparent", key, r)
        ratio = t / c if c and t is not None else None
        if ratio is not None:
            ratios.append(ratio)
        by_round.append([label if r == 1 else "", r,
                         "-" if c is None else f.format(c),
                         "-" if t is None else f.format(t),
                         "-" if ratio is None else "{:.3f}".format(ratio)])
    med = statistics.median(ratios) if ratios else None
    ttext = result = ""
    if target is not None:
        ttext = "{} {:.2f}".format(">=" if higher else "<=", target)
        result = "FAIL" if med is None else (
            "pass" if (med >= target if higher else med <= target)
            else "miss")
    summary.append([label, cols["connect"], cols["transparent"],
                    "-" if med is None else "{:.3f}".format(med),
                    "-" if len(ratios) < 2 else "{:.3f}-{:.3f}".format(
                        min(ratios), max(ratios)), ttext, result])

print(table(["through the proxy", "CONNECT", "transparent",
             "transparent/CONNECT", "by round", "target", "result"],
            summary))
print()
print(table(["each round", "round", "CONNECT", "transparent",
             "transparent/CONNECT"], by_round))
EOF
echo
echo "Medians of $rounds round(s); transparent/CONNECT is the median of the rounds' own ratios (both ways measured within seconds of each other), 'by round' their range; the one going first changes each round."
echo "Set-up: ${secs} s each, connect + a request head echoed back + close (CONNECT: with CONNECT and its 200 before); bulk: $bulk_mib MiB each.  Proxy CPU: its threads' CPU time (schedstat) over the set-ups made or the GiB moved."
echo "CPU $cpu_proxy: intutic-proxy ($("$proxybin" --version 2>/dev/null | awk '{ print $2 }'), --workers ${workers:-default}); CPU $cpu_load: clients and origin; elapsed $elapsed s; 1-minute load average $load_start at the start, $load_end at the end (above 1 on 2 CPUs: other work shared the machine, the figures are noisy)."
echo "The proxy namespace's table dropped ${dropped:-?} packets of the clients (anything but the data port and the redirected origin)."

# ----------------------------------------------------------- perf

if [ "$perf" = 1 ]; then
	for way in connect transparent; do
		kill -0 "$proxy_pid" 2>/dev/null || break
		say "perf: $way, set-up 8 at a time, ${secs}s"
		# Only the proxy's pid: the samples are its CPU time, whichever
		# thread.  dwarf: its build keeps no frame pointers.
		timeout -k 5 $((secs + 60)) perf record -e cpu-clock -F "$perf_hz" \
		    --call-graph dwarf,16384 -p "$proxy_pid" \
		    -o "$work/perf.$way.data" -- sleep $((secs + 1)) \
		    >"$work/perf.$way.log" 2>&1 &
		perf_pid=$!
		pids+=("$perf_pid")
		sleep 0.5
		client "$way" $((secs + 40)) setup 1000000 8 "$secs" \
		    >"$work/perf.$way.out" 2>&1 || true
		wait "$perf_pid" || true
		# --no-inline: a function inlined into some of its callers only
		# would count in one way and not the other.
		timeout -k 5 300 perf report -i "$work/perf.$way.data" --children \
		    --no-inline --sort dso,sym --stdio -g none \
		    >"$work/perf.$way.txt" 2>/dev/null || true
	done
	echo
	python3 - "$work" "${proxybin##*/}" "$perf_hz" <<'EOF'
import re, sys
work, proxy, hz = sys.argv[1], sys.argv[2], sys.argv[3]
ROW = re.compile(r"\s*([\d.]+)%\s+([\d.]+)%\s+(\S+)\s+\[(.)\]\s+(.*?)\s*$")


def load(way):
    """(set-ups, CPU ns sampled, {(dso, symbol): (children %, self %)})."""
    done, total, rows = 0, 0, {}
    for line in open("%s/perf.%s.out" % (work, way)):
        m = re.match(r"done=(\d+)", line)
        if m:
            done = int(m.group(1))
    for line in open("%s/perf.%s.txt" % (work, way)):
        m = re.match(r"# Event count \(approx\.\): (\d+)", line)
        if m:
            total = int(m.group(1))
        m = ROW.match(line)
        if m:
            rows[(m.group(3), m.group(5))] = (float(m.group(1)),
                                              float(m.group(2)))
    return done, total, rows


data = {w: load(w) for w in ("connect", "transparent")}
if any(d[0] == 0 or d[1] == 0 for d in data.values()):
    print("perf: no profile (see %s/perf.*.log)" % work)
    sys.exit(0)


def us(way, key, col):
    """Microseconds of the proxy's CPU per set-up in key (col 0:
    inclusive, 1: self)."""
    done, total, rows = data[way]
    return rows.get(key, (0.0, 0.0))[col] / 100 * total / 1e3 / done


def show(title, keys, col):
    print(title)
    print("  %-44s %9s %12s %11s" % ("", "CONNECT", "transparent",
                                     "difference"))
    for k in keys:
        c, t = us("connect", k, col), us("transparent", k, col)
        print("  %-44s %9.2f %12.2f %+11.2f" % (k[1][:44], c, t, t - c))


print("perf (cpu-clock, %s Hz, dwarf call graphs), set-up 8 at a time: "
      "the proxy's CPU per set-up, microseconds" % hz)
for w in ("connect", "transparent"):
    done, total, _ = data[w]
    print("  %-11s %6d set-ups, %7.1f ms sampled: %6.1f us a set-up" %
          (w, done, total / 1e6, total / 1e3 / done))
keys = set(data["connect"][2]) | set(data["transparent"][2])
own = sorted((k for k in keys if k[0] == proxy),
             key=lambda k: -max(us("connect", k, 0), us("transparent", k, 0)))
show("\nthe proxy's functions, inclusive (callees counted), the 30 "
     "costliest", [k for k in own if k[1] != "main"][:30], 0)
diff = sorted(keys, key=lambda k: -abs(us("transparent", k, 1) -
                                       us("connect", k, 1)))
show("\nany function's self time, the 20 that differ most", diff[:20], 1)
print("\n(recordings and reports: %s/perf.*)" % work)
EOF
fi

if [ -s "$failures" ]; then
	echo
	echo "Failures:"
	cat "$failures"
	exit 1
fi
