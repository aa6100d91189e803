#!/usr/bin/env bash
# scripts/bench.d/dns.sh — `scripts/bench dns`: intutic-proxy's DNS filter
# beside dnsmasq and unbound, each a forwarder on loopback to the same
# name server, and that name server alone (the direct figure).
#
#   scripts/bench dns [--rounds N] [--secs S] [--keep]
#
#   --rounds N   rounds (default 3); each measures every server in turn,
#                the order turning each round; the table shows medians,
#                then each round's intutic and dnsmasq figures (each round
#                says the load average it began with: other work on the
#                machine moves them)
#   --secs S     seconds of each measurement (default 5)
#   --keep       keep the work directory (configs, logs, raw results)
#
# The name server is t/helpers/dnsd.py (the tests'), with 200 names under
# bench.example (A, TTL 300).  The servers under test: intutic-proxy
# --dns-bind with rules that allow bench.example's names; dnsmasq
# (--cache-size 10000) and unbound (forward-zone ".", no validation,
# cache as packaged); each answers the names from what it keeps after one
# warm-up pass.  dnsperf sends the queries (UDP, 100 outstanding at most,
# as fast as answers come), with -v, so that each answer's latency is
# known: queries per second and the 99th percentile.  The server's CPU
# time over each measurement (/proc/PID/stat) gives its cost per answer,
# which still tells the servers apart when dnsperf, not the server, is
# what limits the rate (the table's "CPU us/q").
#   - allowed: the 200 names, each asked in turn;
#   - denied: 200 names under evil.example: intutic answers REFUSED and
#     never asks upstream; dnsmasq and unbound, which are no filters, ask
#     upstream once (NXDOMAIN) and answer from what they keep after.
# The target (issue 23): intutic's rate for allowed, cached names at least
# dnsmasq's.
#
# Runs as root.  Installs dnsperf, dnsmasq and unbound with apt-get when
# missing, without starting their services.  Everything runs inside a
# network namespace of its own (intutic-bench-dns-PID, loopback only),
# deleted on exit; the server under test on the last CPU, the rest on CPU 0.
#
# Environment: INTUTIC_BUILD_DIR (build directory, default build/).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
builddir=${INTUTIC_BUILD_DIR:-$top/build}
proxybin=$builddir/proxy/intutic-proxy

rounds=3 secs=5 keep=0
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=${2:?--rounds N}; shift ;;
	--secs) secs=${2:?--secs S}; shift ;;
	--keep) keep=1 ;;
	-h|--help) sed -n '2,/^set -e/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) echo "bench dns: unknown option '$1'" >&2; exit 2 ;;
	esac
	shift
done
case "$rounds" in ''|*[!0-9]*|0) echo "bench dns: --rounds N, N >= 1" >&2; exit 2 ;; esac
case "$secs" in ''|*[!0-9]*|0) echo "bench dns: --secs S, S >= 1" >&2; exit 2 ;; esac

say() { printf 'bench dns: %s\n' "$*" >&2; }
die() { printf 'bench dns: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (network namespaces)"
[ -x "$proxybin" ] || die "no $proxybin: build first (scripts/bootstrap)"
missing=()
for p in dnsperf:dnsperf dnsmasq:dnsmasq-base unbound:unbound; do
	command -v "${p%%:*}" >/dev/null 2>&1 || missing+=("${p#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
	say "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	    "${missing[@]}" >/dev/null
fi

ns=intutic-bench-dns-$$
work=$(mktemp -d /tmp/intutic-bench-dns.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	ip netns delete "$ns" 2>/dev/null || true
	if [ "$keep" = 1 ]; then
		say "work directory kept: $work"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
ip netns add "$ns"
ip netns exec "$ns" ip link set lo up

ncpu=$(nproc)
cpu_srv=$((ncpu - 1)) cpu_load=0
[ "$ncpu" -ge 2 ] || cpu_srv=0

# nsbg CPU CMD...: CMD in the namespace on CPU, in the background.
nsbg() {
	local cpu=$1
	shift
	ip netns exec "$ns" taskset -c "$cpu" "$@" &
	pids+=("$!")
}
# nsrun CPU CMD...: the same, waited for.
nsrun() {
	local cpu=$1
	shift
	ip netns exec "$ns" taskset -c "$cpu" "$@"
}

# The name server, and the names.
up_port=5300 port_intutic=5301 port_dnsmasq=5302 port_unbound=5303
names=200
{
	for i in $(seq 1 "$names"); do
		echo "n$i.bench.example A 127.0.0.$(( (i % 250) + 1 ))"
		echo "n$i.bench.example TTL 300"
	done
} >"$work/zone"
for i in $(seq 1 "$names"); do echo "n$i.bench.example A"; done >"$work/allowed.txt"
for i in $(seq 1 "$names"); do echo "s$i.evil.example A"; done >"$work/denied.txt"
nsbg "$cpu_load" python3 "$top/t/helpers/dnsd.py" --port "$up_port" \
    --port-file "$work/dnsd.port" --zone "$work/zone" --lifetime 3600 \
    --query-log "$work/queries.log" \
    2>"$work/dnsd.log"
declare -A pid=([up]=$!)

# intutic-proxy: the bench.example names allowed (and the loopback
# addresses they resolve to), evil.example not.
mkdir -p "$work/intutic/state"
cat >"$work/intutic/rules.yaml" <<EOF
version: 1
allow:
  - "*.bench.example"
  - "127.0.0.0/8"
EOF
echo "nameserver 127.0.0.1:$up_port" >"$work/intutic/resolv.conf"
: >"$work/intutic/hosts"
nsbg "$cpu_srv" "$proxybin" --rules "$work/intutic/rules.yaml" \
    --bind 127.0.0.1 --port 0 --state-dir "$work/intutic/state" \
    --resolv-conf "$work/intutic/resolv.conf" --hosts "$work/intutic/hosts" \
    --dns-bind "127.0.0.1:$port_intutic" 2>"$work/intutic/proxy.log"
pid[intutic]=$!

# dnsmasq: a forwarder with a cache, nothing else read.
nsbg "$cpu_srv" dnsmasq --keep-in-foreground --conf-file=/dev/null \
    --port="$port_dnsmasq" --listen-address=127.0.0.1 --bind-interfaces \
    --no-resolv --no-hosts --server="127.0.0.1#$up_port" --cache-size=10000 \
    --user=root --pid-file="$work/dnsmasq.pid" --log-facility="$work/dnsmasq.log"
pid[dnsmasq]=$!

# unbound: a forwarder, no validation, its own names ("example." is no
# local zone of its defaults).
cat >"$work/unbound.conf" <<EOF
server:
	interface: 127.0.0.1@$port_unbound
	do-daemonize: no
	chroot: ""
	username: ""
	directory: "$work"
	pidfile: "$work/unbound.pid"
	use-syslog: no
	logfile: "$work/unbound.log"
	do-not-query-localhost: no
	module-config: "iterator"
	access-control: 127.0.0.0/8 allow
	num-threads: 1
forward-zone:
	name: "."
	forward-addr: 127.0.0.1@$up_port
remote-control:
	control-enable: no
EOF
nsbg "$cpu_srv" unbound -d -c "$work/unbound.conf"
pid[unbound]=$!

# ready PORT: a server answers on PORT (at most 10 s).
ready() {
	local i
	for i in $(seq 1 100); do
		nsrun "$cpu_load" dig -p "$1" @127.0.0.1 +tries=1 +time=1 \
		    n1.bench.example A >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}
for s in up:$up_port intutic:$port_intutic dnsmasq:$port_dnsmasq unbound:$port_unbound; do
	ready "${s#*:}" || die "${s%%:*} does not answer on port ${s#*:} (logs in $work; --keep)"
done

# cputime PID: the CPU time a process used so far, all its threads, in
# clock ticks (user and system: /proc/PID/stat's 14th and 15th fields,
# counted after the command name, which may hold blanks).
cputime() {
	sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}
hz=$(getconf CLK_TCK)

# measure PORT PID FILE OUT: dnsperf against PORT with FILE's queries;
# OUT gets "QPS P99_US ANSWERED SENT CPU_US_PER_ANSWER CLIENT_CPU_PCT":
# the server's (PID) CPU time over the run by the answers it gave, and
# dnsperf's own CPU time by the run's (at 100, it is what sets the rate).
measure() {
	local port=$1 spid=$2 file=$3 out=$4 t0 t1 TIMEFORMAT='%U %S %R'
	t0=$(cputime "$spid")
	{ time nsrun "$cpu_load" dnsperf -s 127.0.0.1 -p "$port" -d "$file" \
	    -l "$secs" -q 100 -t 2 -v >"$out.raw" 2>&1; } 2>"$out.time" || true
	t1=$(cputime "$spid")
	awk -v ticks=$((t1 - t0)) -v hz="$hz" -v client="$(tail -n 1 "$out.time")" '
	/^> / { lat[n++] = $NF }
	/Queries sent:/ { sent = $3 }
	/Queries completed:/ { done = $3 }
	/Queries per second:/ { qps = $4 }
	END {
		if (n == 0 || done == 0) { print "0 0 0 0 0 0"; exit }
		asort(lat)
		i = int(n * 0.99); if (i < 1) i = 1
		split(client, c, " ")
		printf "%.0f %.0f %d %d %.2f %.0f\n", qps, lat[i] * 1e6, done,
		    sent, ticks * 1e6 / hz / done,
		    (c[3] > 0 ? (c[1] + c[2]) * 100 / c[3] : 0)
	}' "$out.raw" >"$out"
}

servers="up intutic dnsmasq unbound"
declare -A port=([up]=$up_port [intutic]=$port_intutic
    [dnsmasq]=$port_dnsmasq [unbound]=$port_unbound)
# Warm-up: every name once through each server (intutic, dnsmasq and
# unbound then answer from what they keep).
for s in intutic dnsmasq unbound; do
	for f in allowed denied; do
		nsrun "$cpu_load" dnsperf -s 127.0.0.1 -p "${port[$s]}" \
		    -d "$work/$f.txt" -n 1 -q 10 -t 2 >/dev/null 2>&1 || true
	done
done

results=$work/results.txt
: >"$results"
for r in $(seq 1 "$rounds"); do
	say "round $r of $rounds (load average $(cut -d" " -f1-3 /proc/loadavg))"
	order=$servers
	for _ in $(seq 2 "$r"); do order="${order#* } ${order%% *}"; done
	for s in $order; do
		for f in allowed denied; do
			measure "${port[$s]}" "${pid[$s]}" "$work/$f.txt" \
			    "$work/m.$r.$s.$f"
			echo "$r $s $f $(cat "$work/m.$r.$s.$f")" >>"$results"
		done
	done
done

upq=$(grep -c 'evil\.example' "$work/queries.log" || true)
python3 - "$results" "$rounds" "$secs" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
names = {"up": "name server alone", "intutic": "intutic-proxy",
         "dnsmasq": "dnsmasq", "unbound": "unbound"}
med = {}
for s in names:
    for f in ("allowed", "denied"):
        rs = [r for r in rows if r[1] == s and r[2] == f]
        if rs:
            med[s, f] = (statistics.median(float(r[3]) for r in rs),
                         statistics.median(float(r[4]) for r in rs),
                         sum(int(r[5]) for r in rs), sum(int(r[6]) for r in rs),
                         statistics.median(float(r[7]) for r in rs),
                         statistics.median(float(r[8]) for r in rs))
print("%-20s %11s %9s %9s %11s %9s %9s" % ("DNS (UDP, dnsperf)",
      "allowed q/s", "p99 (us)", "CPU us/q", "denied q/s", "p99 (us)",
      "CPU us/q"))
print("-" * 84)
for s, label in names.items():
    a, d = med.get((s, "allowed")), med.get((s, "denied"))
    if a and d:
        print("%-20s %11s %9.0f %9.2f %11s %9.0f %9.2f" % (label,
              "{:,.0f}".format(a[0]), a[1], a[4], "{:,.0f}".format(d[0]),
              d[1], d[4]))
if ("intutic", "allowed") in med and ("dnsmasq", "allowed") in med:
    ratio = med["intutic", "allowed"][0] / med["dnsmasq", "allowed"][0]
    print("\nintutic/dnsmasq, allowed (cached): %.3f  target >= 1.0  %s" %
          (ratio, "pass" if ratio >= 1.0 else "miss"))
    if med["dnsmasq", "allowed"][4] > 0:
        print("intutic/dnsmasq, CPU per kept answer: %.3f  (lower is cheaper)" %
              (med["intutic", "allowed"][4] / med["dnsmasq", "allowed"][4]))
    # When dnsperf's CPU is all used, every server answers at its rate.
    print("dnsperf's CPU, allowed: %.0f%% with intutic, %.0f%% with dnsmasq "
          "(at 100%%, dnsperf sets the rate)" % (med["intutic", "allowed"][5],
          med["dnsmasq", "allowed"][5]))
    # Each round's pair: a median hides how far apart the rounds were.
    print("\nallowed, each round:")
    print("%-5s %11s %8s %8s %7s %11s %8s %8s %7s %6s" % ("round",
          "intutic q/s", "p99 (us)", "CPU us/q", "dnsperf", "dnsmasq q/s",
          "p99 (us)", "CPU us/q", "dnsperf", "ratio"))
    for rnd in sorted({r[0] for r in rows}, key=int):
        i = [r for r in rows if r[:3] == [rnd, "intutic", "allowed"]]
        d = [r for r in rows if r[:3] == [rnd, "dnsmasq", "allowed"]]
        if i and d and float(d[0][3]) > 0:
            i, d = [float(x) for x in i[0][3:]], [float(x) for x in d[0][3:]]
            print("%-5s %11s %8.0f %8.2f %6.0f%% %11s %8.0f %8.2f %6.0f%% "
                  "%6.3f" % (rnd, "{:,.0f}".format(i[0]), i[1], i[4], i[5],
                  "{:,.0f}".format(d[0]), d[1], d[4], d[5], i[0] / d[0]))
print("\nMedians of %s round(s) of %s s each; answered/sent over all rounds:" %
      (sys.argv[2], sys.argv[3]))
for (s, f), v in sorted(med.items()):
    print("  %-9s %-8s %d/%d" % (s, f, v[2], v[3]))
EOF
echo
echo "The name server saw $upq queries for evil.example names (intutic's refusals never reach it; dnsmasq's and unbound's first ones do)."
