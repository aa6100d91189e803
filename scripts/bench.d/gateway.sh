#!/usr/bin/env bash
# scripts/bench.d/gateway.sh — `scripts/bench gateway`: the provider
# gateway (intutic-proxy(8), PROVIDER GATEWAY) beside a client that talks
# to the provider itself, the same client, the same provider double, in
# one run.
#
#   scripts/bench gateway [--rounds N] [--calls N] [--events N]
#                         [--delay-ms D] [--long-events N]
#                         [--proxy-cpu C] [--client-cpu C] [--keep]
#
#   --rounds N       rounds (default 3); each measures every way in turn,
#                    the one going first changing each round; the table
#                    shows medians, and each round's figures below it
#   --calls N        calls of each TTFB measurement (default 200)
#   --events N       events of the relay-delay stream (default 200; at
#                    most 9,990 so that the double's log times them all)
#   --delay-ms D     the double's gap between those events (default 2)
#   --long-events N  events of the throughput stream (default 100,000; the
#                    double's LONG_EVENTS_MAX is 1,000,000)
#   --proxy-cpu C    the proxy's CPU (default the last one; 0 puts it with
#                    the doubles: a look at what crossing CPUs costs, not
#                    the figures of record)
#   --client-cpu C   the client's CPU (default the proxy's: the agent's
#                    host, where the client and the proxy share the
#                    machine and the provider is elsewhere; 0 puts the
#                    client with the doubles instead, the layout of the
#                    figures before 2026-12-06, in which every event
#                    crosses CPUs twice through the gateway and never
#                    directly, and the double and the client share one
#                    CPU)
#   --keep           keep the work directory (certificates, logs, raw
#                    results)
#
# The provider is t/helpers/provider.py, the tests' double of the
# providers' HTTPS APIs, twice: one answering at once, one with
# --event-delay-ms D; both on 127.0.0.1 with a certificate for
# api.provider.test from a CA made for the run.  intutic-proxy serves them
# as providers "bench" and "benchslow" (`providers:` with their api,
# `gateway:` on), its --hosts file naming api.provider.test 127.0.0.1, its
# --resolv-conf empty, --gateway-ca the run's CA, the audit log on (as in
# use: one call record a call, counted at the end against the calls made),
# --workers 1.  The client is scripts/bench.d/gwclient.c (C, OpenSSL),
# which see; on one keep-alive connection, after a first call not counted,
# it makes streamed POST /v1/messages calls (model claude-bench: 14
# events; test-long with x-test-events: N deltas and 7 events around them)
# in three ways:
#   direct           TLS to the double, the certificate checked
#                    (api.provider.test, the run's CA), as an SDK would;
#   gateway          plain HTTP to the proxy, /providers/NAME/v1/messages;
#                    the proxy speaks TLS to the double, on a connection
#                    it keeps from one call to the next;
#   gateway+tlscost  the same, and the client then spends on every read
#                    what decrypting it would cost (AES-256-GCM over each
#                    16 KiB of it): the direct way's client cost, which
#                    the plain client does not pay, added back, so that
#                    only the proxy's part differs from direct.
# The measurements:
#   1. TTFB: N calls one after the other; from the request written to the
#      answer's first byte (and to its first event, and its end); median
#      and p90.  Target: the gateway adds at most 0.5 ms to the median.
#   2. Relay delay: one stream of --events events, --delay-ms apart.  The
#      double's log has the wall-clock time each event was written (its
#      "events": [{"t": ...}], after the write returned); the client notes
#      the wall-clock time of the read that completed each, on the same
#      host; an event's delay is the second minus the first (on the direct
#      way it can be below zero: the double notes the time after its
#      write).  Target: the median delay through the gateway at most
#      0.1 ms above direct's.
#   3. Throughput: one stream of --long-events events, as fast as the
#      double writes them: MB/s of the events' bytes (the chunked framing
#      not counted) and events/s.  Target: gateway/direct at least 0.90.
#      The double is Python: its CPU over the stream is shown (its share
#      of the stream's time); near 100%, it, not the proxy, sets the rate.
# Each comparison is the median of the rounds' own (each round measures
# the ways within seconds of each other).  The targets are judged on the
# gateway way; gateway+tlscost is shown beside it.
#
# Runs as root: everything inside a network namespace of its own
# (intutic-bench-gw-PID, loopback only), deleted on exit.  The doubles on
# CPU 0, standing apart as a remote provider does; the proxy and the
# client on the last CPU, as on an agent's host: both ways then cross
# CPUs once between the provider and the client, as both cross a network.
# About 20 s a round.
#
# Environment: INTUTIC_BUILD_DIR (build directory, default build/).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/scripts/bench.d
builddir=${INTUTIC_BUILD_DIR:-$top/build}
proxybin=$builddir/proxy/intutic-proxy

rounds=3 calls=200 events=200 delay_ms=2 long_events=100000 keep=0
proxy_cpu= client_cpu=
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=${2:?--rounds N}; shift ;;
	--calls) calls=${2:?--calls N}; shift ;;
	--events) events=${2:?--events N}; shift ;;
	--delay-ms) delay_ms=${2:?--delay-ms D}; shift ;;
	--long-events) long_events=${2:?--long-events N}; shift ;;
	--proxy-cpu) proxy_cpu=${2:?--proxy-cpu C}; shift ;;
	--client-cpu) client_cpu=${2:?--client-cpu C}; shift ;;
	--keep) keep=1 ;;
	-h|--help) sed -n '2,/^set -e/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) echo "bench gateway: unknown option '$1'" >&2; exit 2 ;;
	esac
	shift
done
num_ok() { case "$1" in ''|*[!0-9]*) return 1 ;; esac; [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }
num_ok "$rounds" 1 100 || { echo "bench gateway: --rounds N, 1 to 100" >&2; exit 2; }
num_ok "$calls" 1 100000 || { echo "bench gateway: --calls N, 1 to 100,000" >&2; exit 2; }
num_ok "$events" 1 9990 || { echo "bench gateway: --events N, 1 to 9,990" >&2; exit 2; }
num_ok "$delay_ms" 0 1000 || { echo "bench gateway: --delay-ms D, 0 to 1,000" >&2; exit 2; }
num_ok "$long_events" 1 1000000 || { echo "bench gateway: --long-events N, 1 to 1,000,000" >&2; exit 2; }

say() { printf 'bench gateway: %s\n' "$*" >&2; }
die() { printf 'bench gateway: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (network namespaces)"
for c in ip taskset timeout cc python3 openssl; do
	command -v "$c" >/dev/null 2>&1 || die "'$c' is needed"
done
[ -x "$proxybin" ] || die "no $proxybin: build first (scripts/bootstrap)"

ns=intutic-bench-gw-$$
host=api.provider.test

# others: the namespaces of the test suite's scripts (intutic-t-*) and of
# other benches, which would share the CPUs with this one.
others() {
	ip netns list 2>/dev/null | awk -v me="$ns" '
	    $1 != me && $1 ~ /^intutic-(t|bench)-/ { printf "%s%s", sep, $1; sep = " " }'
}
# Wait for them (OTHERS_WAIT seconds at most), then go on, saying so.
OTHERS_WAIT=600
busy=$(others)
if [ -n "$busy" ]; then
	say "waiting for $busy to end (${OTHERS_WAIT} s at most)"
	for _ in $(seq 1 $((OTHERS_WAIT / 5))); do
		sleep 5
		busy=$(others)
		[ -z "$busy" ] && break
	done
	[ -z "$busy" ] || say "warning: $busy still running: figures will be noisy"
fi
seen_others=$busy
work=$(mktemp -d /tmp/intutic-bench-gw.XXXXXX)
pids=()
ns_made=0
cleanup() {
	local rc=$? pid i alive
	trap - EXIT INT TERM
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for i in $(seq 1 25); do
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
		# Anything left in our namespace was started by this run.
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -KILL "$pid" 2>/dev/null || true
		done
		sleep 0.2
		ip netns delete "$ns" 2>/dev/null || say "could not delete netns $ns"
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

cc -O2 -Wall -Wextra -o "$work/gwclient" "$here/gwclient.c" -lssl -lcrypto ||
	die "cannot build gwclient (it needs OpenSSL's headers)"
client=$work/gwclient

ip netns add "$ns"
ns_made=1
ip -n "$ns" link set lo up

ncpu=$(nproc)
cpu_proxy=$((ncpu - 1)) cpu_load=0
[ "$ncpu" -ge 2 ] || cpu_proxy=0
if [ -n "$proxy_cpu" ]; then
	num_ok "$proxy_cpu" 0 $((ncpu - 1)) || die "--proxy-cpu C, 0 to $((ncpu - 1))"
	cpu_proxy=$proxy_cpu
fi
cpu_client=$cpu_proxy
if [ -n "$client_cpu" ]; then
	num_ok "$client_cpu" 0 $((ncpu - 1)) || die "--client-cpu C, 0 to $((ncpu - 1))"
	cpu_client=$client_cpu
fi

# nsbg CPU CMD... &: CMD in the namespace on CPU; the function's subshell
# execs, so that $! is CMD's own pid.
nsbg() {
	local cpu=$1
	shift
	exec ip netns exec "$ns" taskset -c "$cpu" "$@"
}
# nsrun CPU CMD...: the same, waited for.
nsrun() {
	local cpu=$1
	shift
	ip netns exec "$ns" taskset -c "$cpu" "$@"
}

# cpu_ns PID: the CPU time PID's threads have had, in ns (schedstat).
cpu_ns() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null |
	    awk '{ s += $1 } END { printf "%.0f", s }'
}
# cpu_ticks_ns PID: the CPU time of PID and of its threads that have
# ended too (/proc/PID/stat's utime and stime, in clock ticks), in ns:
# the double's threads end with their connections.
hz=$(getconf CLK_TCK)
cpu_ticks_ns() {
	sed 's/.*) //' "/proc/$1/stat" | awk -v hz="$hz" '{ printf "%.0f", ($12 + $13) * 1e9 / hz }'
}

# ------------------------------------------------- certificates, files

certs=$work/certs
mkdir -p "$certs"
printf '%s\n' '[req]' 'distinguished_name = dn' 'prompt = no' '[dn]' 'CN = x' \
    '[ca]' 'basicConstraints = critical, CA:TRUE' \
    'keyUsage = critical, keyCertSign, cRLSign' 'subjectKeyIdentifier = hash' \
    '[leaf]' 'basicConstraints = critical, CA:FALSE' \
    'keyUsage = critical, digitalSignature, keyEncipherment' \
    'extendedKeyUsage = serverAuth' 'subjectKeyIdentifier = hash' \
    'authorityKeyIdentifier = keyid:always' "subjectAltName = DNS:$host" \
    >"$certs/x509.cnf"
{
	openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$certs/ca.key" -out "$certs/ca.crt" -days 1 \
	    -subj "/CN=intutic bench CA $$" -config "$certs/x509.cnf" -extensions ca &&
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$certs/provider.key" -out "$certs/provider.csr" \
	    -subj "/CN=$host" -config "$certs/x509.cnf" &&
	openssl x509 -req -in "$certs/provider.csr" -days 1 -CA "$certs/ca.crt" \
	    -CAkey "$certs/ca.key" -set_serial "$$" -extfile "$certs/x509.cnf" \
	    -extensions leaf -out "$certs/provider.crt"
} >"$certs/openssl.log" 2>&1 || die "cannot make the certificates ($certs/openssl.log)"

printf '127.0.0.1 localhost\n127.0.0.1 %s\n' "$host" >"$work/hosts"
: >"$work/resolv.conf"

# ------------------------------------------------------- the doubles

# start_double NAME [OPTIONS]: provider.py on CPU 0; sets port[NAME],
# pid[NAME].
declare -A port pid
start_double() {
	local name=$1 i
	shift
	: >"$work/$name.jsonl"
	nsbg "$cpu_load" python3 "$top/t/helpers/provider.py" \
	    --cert "$certs/provider.crt" --key "$certs/provider.key" \
	    --port-file "$work/$name.port" --lifetime 3600 \
	    --log "$work/$name.jsonl" "$@" 2>"$work/$name.log" &
	pid[$name]=$!
	pids+=("${pid[$name]}")
	for i in $(seq 1 100); do
		[ -s "$work/$name.port" ] && break
		kill -0 "${pid[$name]}" 2>/dev/null || break
		sleep 0.1
	done
	[ -s "$work/$name.port" ] || die "the double $name did not start: $(tail -3 "$work/$name.log")"
	port[$name]=$(cat "$work/$name.port")
}
start_double fast
start_double slow --event-delay-ms "$delay_ms"

# ------------------------------------------------------- the proxy

cat >"$work/rules.yaml" <<EOF
version: 1
ports: [${port[fast]}, ${port[slow]}]
allow:
  - $host
  - "127.0.0.0/8"
providers:
  bench:
    api: "$host:${port[fast]}"
    key-headers: [x-api-key]
  benchslow:
    api: "$host:${port[slow]}"
    key-headers: [x-api-key]
gateway:
  bench: on
  benchslow: on
EOF
mkdir -p "$work/state"
nsbg "$cpu_proxy" "$proxybin" --rules "$work/rules.yaml" \
    --bind 127.0.0.1 --port 0 --state-dir "$work/state" \
    --audit "$work/audit.jsonl" --resolv-conf "$work/resolv.conf" \
    --hosts "$work/hosts" --gateway-ca "$certs/ca.crt" --workers 1 \
    >"$work/proxy.log" 2>&1 &
proxy_pid=$!
pids+=("$proxy_pid")
proxy_port=
for i in $(seq 1 100); do
	if [ -s "$work/state/proxy.json" ]; then
		proxy_port=$(python3 -c 'import json, sys
print(int(json.load(open(sys.argv[1]))["port"]))' "$work/state/proxy.json" 2>/dev/null) && break
	fi
	kill -0 "$proxy_pid" 2>/dev/null || break
	sleep 0.1
done
[ -n "$proxy_port" ] || die "the proxy did not start: $(tail -5 "$work/proxy.log")"

# ------------------------------------------------------- the ways

# gw WAY MODE DOUBLE ARGS...: gwclient MODE in WAY to DOUBLE (fast|slow),
# at most 300 s.
gw() {
	local way=$1 mode=$2 d=$3 name
	shift 3
	name=bench
	[ "$d" = slow ] && name=benchslow
	case "$way" in
	direct)
		nsrun "$cpu_client" env GWCLIENT_CA="$certs/ca.crt" \
		    timeout -k 5 300 "$client" "$mode" tls "127.0.0.1:${port[$d]}" \
		    "$host:${port[$d]}" /v1/messages "$@" ;;
	gateway|gateway+tlscost)
		local w=plain
		[ "$way" = gateway+tlscost ] && w=plain-cost
		nsrun "$cpu_client" timeout -k 5 300 "$client" "$mode" "$w" \
		    "127.0.0.1:$proxy_port" "127.0.0.1:$proxy_port" \
		    "/providers/$name/v1/messages" "$@" ;;
	esac
}

results=$work/results.tsv failures=$work/failures.txt
: >"$results"
: >"$failures"
record() { printf '%s\t%s\t%s\t%s\n' "$@" >>"$results"; }
fail() {
	printf '== round %s, %s: %s\n' "$1" "$2" "$3" >>"$failures"
	[ -s "$4" ] && tail -5 "$4" | sed 's/^/   | /' >>"$failures"
	say "round $1: $2: $3 failed (see the end of the report)"
}
gw_calls=0	# calls made through the gateway, each a call record due

# m_ttfb ROUND WAY
m_ttfb() {
	local r=$1 way=$2 out=$work/ttfb.$1.$2
	if gw "$way" ttfb fast "$calls" >"$out" 2>"$out.err"; then
		awk -v r="$r" -v w="$way" '$1 == "call" {
			printf "%s\t%s\tttfb\t%s\n%s\t%s\tfirst_event\t%s\n%s\t%s\tcall\t%s\n",
			    r, w, $3, r, w, $4, r, w, $5 }' "$out" >>"$results"
	else
		fail "$r" "$way" "TTFB" "$out.err"
	fi
	[ "$way" = direct ] || gw_calls=$((gw_calls + calls + 1))
}

# m_events ROUND WAY: one stream through the slow double; each event's
# delay from the double's log (the record whose x-bench-id is ours).
m_events() {
	local r=$1 way=$2 out=$work/events.$1.$2 id
	id=bench-$r-${way//+/-}-$$
	if gw "$way" events slow "$events" "$id" >"$out" 2>"$out.err"; then
		if ! python3 - "$work/slow.jsonl" "$id" "$out" "$r" "$way" \
		    >>"$results" 2>>"$out.err" <<'EOF'
import json, sys, time
log, ident, out, rnd, way = sys.argv[1:6]
rec = None
for _ in range(100):            # the record is written once the call is over
    for line in open(log):
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if any(k.lower() == "x-bench-id" and v == ident for k, v in j["headers"]):
            rec = j
    if rec is not None:
        break
    time.sleep(0.05)
if rec is None:
    sys.exit("no record of %s in %s" % (ident, log))
got = [float(l.split()[2]) for l in open(out) if l.startswith("event ")]
sent = [e["t"] for e in rec["events"]]
if len(got) != rec["events_total"]:
    sys.exit("the client counted %d events, the double sent %d" %
             (len(got), rec["events_total"]))
for i, (s, g) in enumerate(zip(sent, got)):
    print("%s\t%s\tevent_delay\t%.1f" % (rnd, way, (g - s) * 1e6))
EOF
		then
			fail "$r" "$way" "relay delay" "$out.err"
		fi
	else
		fail "$r" "$way" "relay delay" "$out.err"
	fi
	[ "$way" = direct ] || gw_calls=$((gw_calls + 2))
}

# m_bulk ROUND WAY: one long stream through the fast double; its CPU and
# the proxy's over it.
m_bulk() {
	local r=$1 way=$2 out=$work/bulk.$1.$2 line d0 d1 p0 p1
	d0=$(cpu_ticks_ns "${pid[fast]}") p0=$(cpu_ns "$proxy_pid")
	if gw "$way" bulk fast "$long_events" >"$out" 2>"$out.err" &&
	    line=$(grep '^done ' "$out"); then
		d1=$(cpu_ticks_ns "${pid[fast]}") p1=$(cpu_ns "$proxy_pid")
		awk -v r="$r" -v w="$way" -v d="$((d1 - d0))" -v p="$((p1 - p0))" '
		{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
		END {
			printf "%s\t%s\tbulk_mbps\t%.3f\n", r, w, v["bytes"] / v["secs"] / 1e6
			printf "%s\t%s\tbulk_eps\t%.0f\n", r, w, v["events"] / v["secs"]
			printf "%s\t%s\tbulk_client_cpu\t%.1f\n", r, w, v["cpu_ms"] / 10 / v["secs"]
			printf "%s\t%s\tbulk_double_cpu\t%.1f\n", r, w, d / 1e7 / v["secs"]
			printf "%s\t%s\tbulk_proxy_cpu\t%.1f\n", r, w, p / 1e7 / v["secs"]
			printf "%s\t%s\tbulk_bytes\t%d\n", r, w, v["bytes"]
		}' <<<"$line" >>"$results"
	else
		fail "$r" "$way" "throughput" "$out.err"
	fi
	[ "$way" = direct ] || gw_calls=$((gw_calls + 2))
}

# ------------------------------------------------------- the run

say "work directory $work; namespace $ns"
say "CPU $cpu_proxy: the proxy; CPU $cpu_client: the client; CPU $cpu_load: the doubles"
# A first pass of each way, not counted: each works at all.
for way in direct gateway; do
	gw "$way" ttfb fast 5 >"$work/warmup.$way" 2>&1 ||
		die "$way: a call does not work: $(tail -3 "$work/warmup.$way")"
	[ "$way" = direct ] || gw_calls=$((gw_calls + 6))
done
cipher=$(sed -n 's/^gwclient: //p' "$work/warmup.direct" | head -1)

ways="direct gateway gateway+tlscost"
load_start=$(cut -d' ' -f1 /proc/loadavg)
started=$(date +%s)
for ((r = 1; r <= rounds; r++)); do
	order=$ways
	for ((i = 1; i < r; i++)); do order="${order#* } ${order%% *}"; done
	say "round $r of $rounds: $order"
	say "  TTFB, $calls calls"
	for way in $order; do m_ttfb "$r" "$way"; done
	say "  relay delay, $events events ${delay_ms} ms apart"
	for way in $order; do m_events "$r" "$way"; done
	say "  throughput, $long_events events"
	for way in $order; do m_bulk "$r" "$way"; done
	busy=$(others)
	[ -z "$busy" ] || { say "warning: $busy running"; seen_others="$seen_others $busy"; }
done
elapsed=$(( $(date +%s) - started ))
load_end=$(cut -d' ' -f1 /proc/loadavg)

# The audit log: a call record (status 200) for every call through the
# gateway.
sleep 0.5
audit_calls=$(python3 -c '
import json, sys
n = bad = 0
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if r.get("event") == "call":
        n += 1
        bad += r.get("status") != 200
print(n, bad)' "$work/audit.jsonl" 2>/dev/null || echo "? ?")
read -r audit_n audit_bad <<<"$audit_calls"
if [ "$audit_n" != "$gw_calls" ] || [ "$audit_bad" != 0 ]; then
	printf '== the audit log has %s call records (%s not a 200) for %s calls through the gateway\n' \
	    "$audit_n" "$audit_bad" "$gw_calls" >>"$failures"
fi

python3 - "$results" "$rounds" <<'EOF'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
rounds = int(sys.argv[2])
WAYS = ["direct", "gateway", "gateway+tlscost"]
vals = {}
for rnd, way, metric, v in rows:
    vals.setdefault((int(rnd), way, metric), []).append(float(v))


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))]


def stat(rnd, way, metric, f):
    v = vals.get((rnd, way, metric))
    return None if not v else f(v)


med = statistics.median
p90 = lambda v: pct(v, 0.90)
one = lambda v: v[0]
# key, label, metric, statistic, format, comparison (diff: gateway minus
# direct; ratio: gateway/direct), target, higher is better
METRICS = [
    ("ttfb_p50", "TTFB median (us)", "ttfb", med, "{:.0f}", "diff", 500, False),
    ("ttfb_p90", "TTFB p90 (us)", "ttfb", p90, "{:.0f}", "diff", None, False),
    ("fe_p50", "first event median (us)", "first_event", med, "{:.0f}", "diff", None, False),
    ("call_p50", "whole call median (us)", "call", med, "{:.0f}", "diff", None, False),
    ("ev_p50", "relay delay median (us)", "event_delay", med, "{:.0f}", "diff", 100, False),
    ("ev_p90", "relay delay p90 (us)", "event_delay", p90, "{:.0f}", "diff", None, False),
    ("mbps", "long stream MB/s", "bulk_mbps", one, "{:.2f}", "ratio", 0.90, True),
    ("eps", "long stream events/s", "bulk_eps", one, "{:,.0f}", "ratio", 0.90, True),
    ("dcpu", "  the double's CPU (% of the stream)", "bulk_double_cpu", one, "{:.0f}", None, None, None),
    ("pcpu", "  the proxy's CPU (% of the stream)", "bulk_proxy_cpu", one, "{:.0f}", None, None, None),
    ("ccpu", "  the client's CPU (% of the stream)", "bulk_client_cpu", one, "{:.0f}", None, None, None),
]


def table(header, rows):
    widths = [max(len(str(r[i])) for r in rows + [header])
              for i in range(len(header))]
    line = lambda r: "  ".join(
        str(c).ljust(widths[i]) if i == 0 else str(c).rjust(widths[i])
        for i, c in enumerate(r)).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths])] +
                     [line(r) for r in rows])


def cmp(kind, g, d):
    if g is None or d is None:
        return None
    return g - d if kind == "diff" else (g / d if d else None)


def cfmt(kind, v):
    if v is None:
        return "-"
    return "{:+.0f} us".format(v) if kind == "diff" else "{:.3f}".format(v)


summary, by_round, targets = [], [], []
for key, label, metric, f, fmt, kind, target, higher in METRICS:
    per = {w: [stat(r, w, metric, f) for r in range(1, rounds + 1)] for w in WAYS}
    cols = []
    for w in WAYS:
        ok = [v for v in per[w] if v is not None]
        cols.append(fmt.format(med(ok)) if ok else "-")
    cmps = {}
    for w in ("gateway", "gateway+tlscost"):
        cs = [cmp(kind, per[w][i], per["direct"][i]) for i in range(rounds)] if kind else []
        cs = [c for c in cs if c is not None]
        cmps[w] = med(cs) if cs else None
        if w == "gateway" and kind:
            rng = "-" if len(cs) < 2 else (cfmt(kind, min(cs)) + " .. " + cfmt(kind, max(cs)))
    ttext = result = ""
    if target is not None:
        ttext = ("<= +%g us" % target) if kind == "diff" else (">= %.2f" % target)
        c = cmps["gateway"]
        result = "FAIL" if c is None else ("pass" if (c >= target if higher else c <= target) else "miss")
        targets.append((label, cfmt(kind, c), ttext, result,
                        cfmt(kind, cmps["gateway+tlscost"])))
    summary.append([label] + cols + ([cfmt(kind, cmps["gateway"]), rng,
                    cfmt(kind, cmps["gateway+tlscost"])] if kind else ["", "", ""]))
    for i in range(rounds):
        by_round.append([label if i == 0 else "", i + 1] +
                        ["-" if per[w][i] is None else fmt.format(per[w][i]) for w in WAYS])

print(table(["", "direct", "gateway", "gateway+tlscost", "gateway vs direct",
             "by round", "gateway+tlscost vs direct"], summary))
print()
print(table(["each round", "round"] + WAYS, by_round))
print()
print("targets (gateway vs direct, the median of the rounds' own comparisons):")
for label, c, ttext, result, c2 in targets:
    print("  %-24s %10s  target %-10s %s   (gateway+tlscost: %s)" %
          (label.strip(), c, ttext, result, c2))
EOF
echo
echo "Medians of $rounds round(s); each round measures the three ways one after the other, the one going first changing each round."
echo "direct: the client speaks TLS ($cipher) to the double; gateway: it speaks plain HTTP to the proxy, which speaks TLS to the double, so the client does less work than direct; gateway+tlscost: the same with an AES-256-GCM pass over every read added to the client, about what its TLS decryption costs on the direct way."
echo "TTFB: $calls calls (model claude-bench, 14 events each) on one keep-alive connection; from the request written to the first byte read, the first event and the last byte."
echo "Relay delay: $events text deltas (+7 events), ${delay_ms} ms apart; an event's delay = the client's wall-clock time of the read that completed it minus the double's time after its write of it (same host clock)."
echo "Long stream: $long_events text deltas as fast as the double sends them; MB/s of the events' bytes; CPU shares are of the stream's wall time (the double: Python, on CPU $cpu_load; near 100%, it sets the rate, for both ways)."
echo "CPU $cpu_proxy: intutic-proxy ($("$proxybin" --version 2>/dev/null | awk '{ print $2 }'), --workers 1); CPU $cpu_client: the client; CPU $cpu_load: the doubles; elapsed $elapsed s; 1-minute load average $load_start at the start, $load_end at the end."
if [ -n "${seen_others// /}" ]; then
	echo "Warning: other tests or benches ran during the measurement ($(tr ' ' '\n' <<<"$seen_others" | sort -u | xargs)): the figures are noisy."
fi
echo "The audit log has ${audit_n} call records for the ${gw_calls} calls made through the gateway (${audit_bad} not a 200)."

if [ -s "$failures" ]; then
	echo
	echo "Failures:"
	cat "$failures"
	exit 1
fi
