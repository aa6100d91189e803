#!/usr/bin/env bash
# scripts/bench.d/proxy.sh — `scripts/bench proxy`: intutic-proxy side by
# side with a direct connection, squid and tinyproxy.
#
#   scripts/bench proxy [--quick] [--rounds N] [--markdown FILE]
#                       [--no-pin] [--workers N] [--keep]
#                       [--only LIST] [--with LIST]
#
#   --quick          one short round (about a minute): a smoke test
#   --rounds N       rounds of the interleaved measurements (default 3);
#                    the table shows the median of each
#   --markdown FILE  also write the table as Markdown to FILE
#   --no-pin         no CPU pinning (default: the proxy under test on the
#                    last CPU, the load generators and servers on CPU 0)
#   --workers N      intutic-proxy --workers (default: the proxy's own,
#                    one per processor it may run on: 1 when pinned)
#   --keep           keep the work directory (configs, logs, raw results)
#   --only LIST      only these measurements, comma-separated, of
#                    memory, get, bulk, setup (default: all four)
#   --with LIST      only these, comma-separated, of direct, intutic,
#                    squid, tinyproxy, relay (default: all five)
#
# Measures, for a direct connection (client to server), intutic-proxy,
# squid and tinyproxy, in rotation, R rounds, medians:
#   - absolute-form GET of a 100-byte file from nginx: wrk, 64 keep-alive
#     connections, req/s and p50/p99 latency;
#   - CONNECT bulk MiB/s, 1 and 8 tunnels, up (to a sink that acknowledges
#     the byte count) and down (from a source);
#   - CONNECT set-up to a name (sink.test): connect, CONNECT, 200, one echo
#     round-trip, close; 1 and 8 at a time; rate and p50/p99 latency;
#   - RSS per idle tunnel (2,000 tunnels, each past the proxy's peek), on
#     a freshly started proxy, and 10,000 tunnels held (or as many as the
#     descriptor limit allows).
# "relay" is a yardstick, not a proxy one would run: `benchtool relay`,
# the least a CONNECT proxy can do (blocking, one tunnel at a time, no
# names, rules or log), on the proxies' CPU.  It takes part where one
# tunnel at a time is the measurement (bulk with 1 tunnel, set-up 1 at a
# time) and shows about the most any proxy can reach there.
# The load generators and servers are benchtool.c (built here with cc -O2)
# and wrk; proxy-report.py prints the table.
#
# Runs as root.  Installs tinyproxy, squid, nginx and wrk with apt-get when
# missing, without starting their services.  All traffic stays inside a
# network namespace made for the run (intutic-bench-PID, loopback only) and
# deleted on exit; every process of the run is started in it, under a
# mount namespace where /etc/hosts names the test hosts and resolv.conf is
# empty, so nothing is resolved or reached outside.
#
# Environment: INTUTIC_BUILD_DIR (build directory, default build/).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/scripts/bench.d
builddir=${INTUTIC_BUILD_DIR:-$top/build}
proxybin=$builddir/proxy/intutic-proxy

rounds= quick=0 markdown= pin=1 workers= keep=0
only=memory,get,bulk,setup with=direct,intutic,squid,tinyproxy,relay
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=1 ;;
	--rounds) rounds=${2:?--rounds N}; shift ;;
	--markdown) markdown=${2:?--markdown FILE}; shift ;;
	--no-pin) pin=0 ;;
	--workers) workers=${2:?--workers N}; shift ;;
	--keep) keep=1 ;;
	--only) only=${2:?--only LIST}; shift ;;
	--with) with=${2:?--with LIST}; shift ;;
	-h|--help) sed -n '2,/^set -e/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) echo "bench proxy: unknown option '$1'" >&2; exit 2 ;;
	esac
	shift
done
case "${rounds:-1}" in *[!0-9]*|0) echo "bench proxy: --rounds N, N >= 1" >&2; exit 2 ;; esac
case "${workers:-1}" in *[!0-9]*|0) echo "bench proxy: --workers N, N >= 1" >&2; exit 2 ;; esac
for m in ${only//,/ }; do
	case "$m" in memory|get|bulk|setup) ;;
	*) echo "bench proxy: --only: unknown measurement '$m'" >&2; exit 2 ;; esac
done
for m in ${with//,/ }; do
	case "$m" in direct|intutic|squid|tinyproxy|relay) ;;
	*) echo "bench proxy: --with: unknown proxy '$m'" >&2; exit 2 ;; esac
done
# wanted WORD LIST: WORD is one of the comma-separated LIST.
wanted() { case ",$2," in *",$1,"*) return 0 ;; esac; return 1; }
if [ -n "$markdown" ]; then
	case "$markdown" in /*) ;; *) markdown=$PWD/$markdown ;; esac
fi

# Sizes and durations: default, or --quick.
if [ "$quick" = 1 ]; then
	rounds=${rounds:-1}
	get_secs=2 bulk_bytes=$((256 << 20)) setup_secs=1 idle_n=2000
	many_n=10000 many_for=intutic
else
	get_secs=5 bulk_bytes=$((1024 << 20)) setup_secs=3 idle_n=2000
	many_n=10000 many_for="intutic squid tinyproxy"
	rounds=${rounds:-3}
fi
get_conns=64

say() { printf 'bench proxy: %s\n' "$*" >&2; }
die() { printf 'bench proxy: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (network namespace, packages)"
for c in ip unshare taskset timeout cc python3; do
	command -v "$c" >/dev/null 2>&1 || die "'$c' is needed"
done
[ -x "$proxybin" ] || die "no $proxybin: build first (scripts/bootstrap)"

# ------------------------------------------------------------ packages

pkg_installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# Installs what is missing without letting the packages start their
# daemons: a policy-rc.d that refuses (the Debian mechanism) for the
# length of the install, when the machine has none; and should a daemon
# run all the same, it is stopped by the pid of its own pidfile.
policy=/usr/sbin/policy-rc.d made_policy=0
drop_policy() {
	if [ "$made_policy" = 1 ]; then
		rm -f "$policy"
		made_policy=0
	fi
}

install_packages() {
	local missing=() p
	for p in tinyproxy squid nginx wrk; do
		pkg_installed "$p" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	command -v apt-get >/dev/null 2>&1 || die "install by hand: ${missing[*]}"
	say "installing ${missing[*]}"
	if [ ! -e "$policy" ]; then
		made_policy=1
		printf '#!/bin/sh\n# scripts/bench proxy: no daemons during the install\nexit 101\n' >"$policy"
		chmod 755 "$policy"
	fi
	DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null || true
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	    --no-install-recommends "${missing[@]}" >"$work/apt.log" 2>&1; then
		drop_policy
		tail -20 "$work/apt.log" >&2
		die "apt-get install failed"
	fi
	drop_policy
	# Their services are not ours to run: off, and stopped if running.
	if [ -d /run/systemd/system ]; then
		for p in "${missing[@]}"; do
			case "$p" in squid|tinyproxy|nginx)
				systemctl disable --now "$p" >/dev/null 2>&1 || true ;;
			esac
		done
	fi
	local f pid
	for f in /run/squid.pid /run/tinyproxy/tinyproxy.pid /run/nginx.pid; do
		[ -s "$f" ] || continue
		pid=$(head -1 "$f" | tr -dc 0-9)
		[ -n "$pid" ] && [ -d "/proc/$pid" ] || continue
		case "$(cat "/proc/$pid/comm" 2>/dev/null)" in
		squid|tinyproxy|nginx)
			say "stopping the $(cat "/proc/$pid/comm") the package started (pid $pid)"
			kill "$pid" 2>/dev/null || true ;;
		esac
	done
}

# ------------------------------------------------------- the namespace

ns=intutic-bench-$$
work=$(mktemp -d /tmp/intutic-bench.XXXXXX)
chmod 755 "$work"
pids=()
ns_made=0

cleanup() {
	local rc=$? pid i
	trap - EXIT INT TERM
	drop_policy
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for i in 1 2 3 4 5 6 7 8 9 10; do
		local alive=0
		for pid in "${pids[@]}"; do
			kill -0 "$pid" 2>/dev/null && alive=1
		done
		[ "$alive" = 0 ] && break
		sleep 0.3
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

install_packages
for c in wrk nginx tinyproxy; do
	command -v "$c" >/dev/null 2>&1 || [ -x "/usr/sbin/$c" ] || [ -x "/usr/bin/$c" ] ||
		die "'$c' is missing after the install"
done
squidbin=$(command -v squid 2>/dev/null || echo /usr/sbin/squid)
nginxbin=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
tinybin=$(command -v tinyproxy 2>/dev/null || echo /usr/bin/tinyproxy)
wrkbin=$(command -v wrk)

cc -O2 -Wall -Wextra -o "$work/benchtool" "$here/benchtool.c" ||
	die "cannot build benchtool"
tool=$work/benchtool

ip netns add "$ns"
ns_made=1
ip -n "$ns" link set lo up
# Per-namespace settings, for this namespace only.  At most 4096 sockets
# in TIME_WAIT: a set-up run leaves tens of thousands of them (every
# connection goes to the same address and port), and with the port range
# full of them each connect(2) searches longer for a free port, so that
# whoever ran next measured slower (here direct, 1 at a time, fell from
# 11,556 to 8,526 and then 7,828 set-ups a second over three rounds of
# runs): the order of the runs, not the proxies, made the difference.
ip netns exec "$ns" sysctl -q -w net.ipv4.ip_local_port_range="1024 65000" \
    net.ipv4.tcp_tw_reuse=1 net.core.somaxconn=8192 \
    net.ipv4.tcp_max_tw_buckets=4096 >/dev/null 2>&1 || true

# Descriptors: as many as the hard limit allows, 65536 at most.  A tunnel
# takes two in a proxy (client and origin side), so the many-tunnel test
# opens what fits when the limit is below 2 x 10,000 + a margin (this
# machine's containers cap it at 20000 without CAP_SYS_RESOURCE).
nofile=$(ulimit -Hn)
case "$nofile" in unlimited|*[!0-9]*) nofile=65536 ;; esac
[ "$nofile" -gt 65536 ] && nofile=65536
ulimit -n "$nofile" 2>/dev/null || true
many_wanted=$many_n
many_fit=$(( (nofile - 100) / 2 ))
if [ "$many_n" -gt "$many_fit" ]; then
	say "RLIMIT_NOFILE hard limit $nofile: holding $many_fit tunnels, not $many_n (2 descriptors each in the proxy)"
	many_n=$many_fit
fi

# CPUs: the proxy under test alone on the last CPU, the rest on CPU 0.
ncpu=$(nproc)
if [ "$pin" = 1 ] && [ "$ncpu" -ge 2 ]; then
	cpu_proxy=$((ncpu - 1)) cpu_load=0
else
	pin=0 cpu_proxy=all cpu_load=all
fi

# ------------------------------------------------------------- files

origin_port=8080 sink_port=9001 squid_port=3128 tiny_port=8888 relay_port=9101
hosts=$work/hosts
empty=$work/resolv.conf
cat >"$hosts" <<EOF
127.0.0.1 localhost
127.0.0.1 origin.test
127.0.0.1 sink.test
::1 localhost
EOF
: >"$empty"
chmod 644 "$hosts" "$empty"

mkdir -p "$work/www" "$work/nginx"
head -c 100 /dev/zero | tr '\0' 'a' >"$work/www/100b"
chmod -R a+rX "$work/www"
cat >"$work/nginx/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 20000; }
http {
	access_log off;
	keepalive_requests 10000000;
	keepalive_timeout 600s;
	client_body_temp_path $work/nginx/body;
	proxy_temp_path $work/nginx/proxy;
	fastcgi_temp_path $work/nginx/fastcgi;
	uwsgi_temp_path $work/nginx/uwsgi;
	scgi_temp_path $work/nginx/scgi;
	server {
		listen 127.0.0.1:$origin_port;
		root $work/www;
	}
}
EOF

# intutic: names from the hosts file, loopback let through by a block.
mkdir -p "$work/intutic"
cat >"$work/intutic/rules.yaml" <<EOF
version: 1
ports: [80, 443, $origin_port]
allow:
  - origin.test
  - "sink.test:$sink_port"
  - "127.0.0.0/8:$origin_port,$sink_port"
EOF

# squid: no cache (the origin's file would be served from memory), the
# access log on as intutic's audit log is, names from the hosts file.
mkdir -p "$work/squid"
cat >"$work/squid/squid.conf" <<EOF
http_port 127.0.0.1:$squid_port
http_access allow all
cache deny all
cache_mem 8 MB
hosts_file $hosts
dns_nameservers 127.0.0.1
pid_filename $work/squid/squid.pid
cache_log $work/squid/cache.log
access_log stdio:$work/squid/access.log
cache_store_log none
coredump_dir $work/squid
netdb_filename none
pinger_enable off
max_filedescriptors $nofile
shutdown_lifetime 0 seconds
visible_hostname bench.test
via off
forwarded_for transparent
EOF
chown -R proxy:proxy "$work/squid" 2>/dev/null || chmod 777 "$work/squid"

# tinyproxy: every port for CONNECT (no ConnectPort), enough clients, one
# log line per connection (at Info, its default, it logs eight, and its
# set-up rate falls from about 450/s to about 100/s).
mkdir -p "$work/tinyproxy"
cat >"$work/tinyproxy/tinyproxy.conf" <<EOF
Port $tiny_port
Listen 127.0.0.1
Timeout 600
MaxClients 12000
LogFile "$work/tinyproxy/tinyproxy.log"
LogLevel Connect
PidFile "$work/tinyproxy/tinyproxy.pid"
DisableViaHeader Yes
EOF
chown -R nobody "$work/tinyproxy" 2>/dev/null || chmod 777 "$work/tinyproxy"

# wrk: absolute-form through a proxy; results as one parseable line.
cat >"$work/get.lua" <<'EOF'
local url = os.getenv("BENCH_URL")
if url ~= nil and url ~= "" then
	wrk.path = url
	wrk.headers["Host"] = os.getenv("BENCH_HOST")
end
done = function(summary, latency, requests)
	local e = summary.errors
	io.write(string.format("wrk: requests=%d duration_us=%d "
	    .. "connect=%d read=%d write=%d status=%d timeout=%d "
	    .. "p50_us=%d p99_us=%d\n", summary.requests, summary.duration,
	    e.connect, e.read, e.write, e.status, e.timeout,
	    latency:percentile(50), latency:percentile(99)))
end
EOF

# ------------------------------------------------------------ running

# nsrun CPUS CMD...: CMD in the namespace, with the test hosts file and an
# empty resolv.conf over /etc's (its own mount namespace), $nofile files,
# pinned to CPUS ("all": not pinned).  Every step execs the next.
nsrun() {
	local cpus=$1
	shift
	ip netns exec "$ns" unshare --mount --propagation private -- \
	    /bin/sh -c 'mount --bind "$1" /etc/hosts || exit 125
		mount --bind "$2" /etc/resolv.conf 2>/dev/null
		ulimit -n "$4" || exit 125
		cpus=$3; shift 4
		[ "$cpus" = all ] && exec "$@"
		exec taskset -c "$cpus" "$@"' sh "$hosts" "$empty" "$cpus" "$nofile" "$@"
}

# nsbg CPUS CMD... &: the same in the background; the function's subshell
# execs, so that $! is CMD's own pid (to signal it and read its RSS).
nsbg() {
	local cpus=$1
	shift
	exec ip netns exec "$ns" unshare --mount --propagation private -- \
	    /bin/sh -c 'mount --bind "$1" /etc/hosts || exit 125
		mount --bind "$2" /etc/resolv.conf 2>/dev/null
		ulimit -n "$4" || exit 125
		cpus=$3; shift 4
		[ "$cpus" = all ] && exec "$@"
		exec taskset -c "$cpus" "$@"' sh "$hosts" "$empty" "$cpus" "$nofile" "$@"
}

probe() { nsrun "$cpu_load" "$tool" probe "$1" "${2:-10}" 2>/dev/null; }

# The resident memory of a process and its descendants, KiB.
rss_kib() {
	ps -e -o pid=,ppid=,rss= | awk -v root="$1" '
	{ ppid[$1] = $2; rss[$1] = $3 }
	END {
		inset[root] = 1; changed = 1
		while (changed) {
			changed = 0
			for (p in ppid) if (!(p in inset) && (ppid[p] in inset)) {
				inset[p] = 1; changed = 1
			}
		}
		for (p in inset) sum += rss[p]
		print sum + 0
	}'
}

stop_pid() {
	local pid=$1 i
	kill -TERM "$pid" 2>/dev/null || return 0
	for i in $(seq 1 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

declare -A ppid=() paddr=()

start_proxy() {
	local p=$1 i port=
	case "$p" in
	direct) paddr[$p]=direct; return 0 ;;
	intutic)
		rm -rf "$work/intutic/state"
		nsbg "$cpu_proxy" "$proxybin" --rules "$work/intutic/rules.yaml" \
		    --bind 127.0.0.1 --port 0 --state-dir "$work/intutic/state" \
		    --audit "$work/intutic/audit.jsonl" --resolv-conf "$empty" \
		    --hosts "$hosts" ${workers:+--workers "$workers"} --grace 1000 \
		    >>"$work/intutic/stderr.log" 2>&1 &
		ppid[$p]=$!
		for i in $(seq 1 100); do
			[ -s "$work/intutic/state/proxy.json" ] && break
			kill -0 "${ppid[$p]}" 2>/dev/null || break
			sleep 0.1
		done
		port=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' \
		    "$work/intutic/state/proxy.json" 2>/dev/null || true)
		;;
	squid)
		nsbg "$cpu_proxy" "$squidbin" -N -f "$work/squid/squid.conf" \
		    >>"$work/squid/stderr.log" 2>&1 &
		ppid[$p]=$! port=$squid_port
		;;
	tinyproxy)
		nsbg "$cpu_proxy" "$tinybin" -d -c "$work/tinyproxy/tinyproxy.conf" \
		    >>"$work/tinyproxy/stderr.log" 2>&1 &
		ppid[$p]=$! port=$tiny_port
		;;
	relay)
		mkdir -p "$work/relay"
		nsbg "$cpu_proxy" "$tool" relay "$relay_port" \
		    "127.0.0.1:$sink_port" >>"$work/relay/stderr.log" 2>&1 &
		ppid[$p]=$! port=$relay_port
		;;
	esac
	pids+=("${ppid[$p]}")
	if [ -z "$port" ] || ! probe "127.0.0.1:$port" 15; then
		say "$p did not start; its log:"
		tail -5 "$work/$p/stderr.log" >&2 || true
		return 1
	fi
	paddr[$p]=127.0.0.1:$port
}

stop_proxy() {
	[ "$1" = direct ] && return 0
	[ -n "${ppid[$1]:-}" ] && stop_pid "${ppid[$1]}"
	ppid[$1]=
	rm -f "$work/$1/squid.pid" "$work/$1/tinyproxy.pid"
}

restart_proxy() { stop_proxy "$1"; start_proxy "$1"; }

results=$work/results.tsv
: >"$results"
failures=$work/failures.txt
: >"$failures"

# record ROUND PROXY METRIC VALUE  (VALUE "FAIL" for a failure)
record() { printf '%s\t%s\t%s\t%s\n' "$@" >>"$results"; }

# fail ROUND PROXY WHAT DETAIL-FILE: a failed measurement, with the
# stderr of the tool and the tail of the proxy's log.
fail() {
	local r=$1 p=$2 what=$3 detail=$4
	{
		printf '== round %s, %s: %s\n' "$r" "$p" "$what"
		[ -s "$detail" ] && sed 's/^/   | /' "$detail" | tail -8
		if [ "$p" != direct ] && [ -s "$work/$p/stderr.log" ]; then
			printf '   proxy stderr (last lines):\n'
			tail -5 "$work/$p/stderr.log" | sed 's/^/   | /'
		fi
	} >>"$failures"
	say "round $r: $p: $what failed (see the end of the report)"
}

alive_or_restart() {
	local p=$1
	[ "$p" = direct ] && return 0
	if ! kill -0 "${ppid[$p]:-none}" 2>/dev/null; then
		say "$p is not running any more: restarting it"
		printf '== %s exited during the run; last stderr:\n' "$p" >>"$failures"
		tail -5 "$work/$p/stderr.log" 2>/dev/null | sed 's/^/   | /' >>"$failures"
		start_proxy "$p" || return 1
	fi
}

# ready ROUND PROXY METRIC: the proxy runs (restarted if it died), else
# the measurement is recorded as failed.
ready() {
	alive_or_restart "$2" && return 0
	record "$1" "$2" "$3" FAIL
	printf '== round %s, %s: %s not measured: the proxy does not start\n' \
	    "$1" "$2" "$3" >>"$failures"
	return 1
}

# ---------------------------------------------------------- measurements

m_get() {
	local r=$1 p=$2 out=$work/out.$$ line req dur errs rerrs url
	local -a env=()
	if [ "$p" = direct ]; then
		url=http://127.0.0.1:$origin_port/100b
	else
		url=http://${paddr[$p]}/
		env=(BENCH_URL="http://origin.test:$origin_port/100b"
		    BENCH_HOST="origin.test:$origin_port")
	fi
	if ! nsrun "$cpu_load" env "${env[@]}" timeout -k 5 $((get_secs + 30)) \
	    "$wrkbin" -t 1 -c "$get_conns" -d "${get_secs}s" --timeout 5s \
	    -s "$work/get.lua" "$url" >"$out" 2>&1; then
		fail "$r" "$p" "GET (wrk exited non-zero)" "$out"
		record "$r" "$p" get_rps FAIL
		return
	fi
	line=$(grep '^wrk: ' "$out" | tail -1)
	req=$(sed -n 's/.*requests=\([0-9]*\).*/\1/p' <<<"$line")
	dur=$(sed -n 's/.*duration_us=\([0-9]*\).*/\1/p' <<<"$line")
	# Errors that void the run: answers other than 2xx/3xx, time-outs,
	# failed connects.  wrk counts a connection the proxy closes after an
	# answer as a read error, and reconnects: tinyproxy does that after
	# every answer (no keep-alive towards its clients); noted, not fatal.
	errs=$(awk '{ n = 0; for (i = 1; i <= NF; i++) if ($i ~ /^(connect|status|timeout)=/) { split($i, a, "="); n += a[2] } print n }' <<<"$line")
	rerrs=$(awk '{ n = 0; for (i = 1; i <= NF; i++) if ($i ~ /^(read|write)=/) { split($i, a, "="); n += a[2] } print n }' <<<"$line")
	if [ -z "$req" ] || [ "${req:-0}" -eq 0 ] || [ "$errs" -gt $((req / 100)) ]; then
		fail "$r" "$p" "GET ($errs errors of $req requests: $line)" "$out"
		record "$r" "$p" get_rps FAIL
		return
	fi
	if [ "$errs" -gt 0 ] || [ "$rerrs" -gt 0 ]; then
		printf '== round %s, %s: GET: %s failed requests (under 1%%, kept), %s read/write errors (connections closed by the proxy) of %s requests\n' \
		    "$r" "$p" "$errs" "$rerrs" "$req" >>"$failures"
	fi
	record "$r" "$p" get_rps "$(awk -v n="$req" -v d="$dur" 'BEGIN { printf "%.1f", n / (d / 1e6) }')"
	record "$r" "$p" get_p50 "$(sed -n 's/.*p50_us=\([0-9]*\).*/\1/p' <<<"$line" | awk '{ printf "%.3f", $1 / 1000 }')"
	record "$r" "$p" get_p99 "$(sed -n 's/.*p99_us=\([0-9]*\).*/\1/p' <<<"$line" | awk '{ printf "%.3f", $1 / 1000 }')"
}

m_bulk() {
	local r=$1 p=$2 n=$3 dir=$4 out=$work/out.$$ v
	if nsrun "$cpu_load" timeout -k 5 120 "$tool" bulk "${paddr[$p]}" \
	    "sink.test:$sink_port" "$n" "$bulk_bytes" "$dir" 100 >"$out" 2>&1 &&
	    v=$(sed -n 's/.*mibps=\([0-9.]*\).*/\1/p' "$out") && [ -n "$v" ]; then
		record "$r" "$p" "bulk_${dir}_$n" "$v"
	else
		fail "$r" "$p" "CONNECT bulk $dir, $n tunnel(s)" "$out"
		record "$r" "$p" "bulk_${dir}_$n" FAIL
	fi
}

m_setup() {
	local r=$1 p=$2 par=$3 out=$work/out.$$ line
	if nsrun "$cpu_load" timeout -k 5 $((setup_secs + 40)) "$tool" setup \
	    "${paddr[$p]}" "sink.test:$sink_port" 1000000 "$par" "$setup_secs" \
	    >"$out" 2>&1; then
		line=$(grep '^done=' "$out")
		record "$r" "$p" "setup_rate_$par" "$(sed -n 's/.*rate=\([0-9.]*\).*/\1/p' <<<"$line")"
		if [ "$par" = 1 ]; then
			record "$r" "$p" setup_p50 "$(sed -n 's/.*p50_ms=\([0-9.]*\).*/\1/p' <<<"$line")"
			record "$r" "$p" setup_p99 "$(sed -n 's/.*p99_ms=\([0-9.]*\).*/\1/p' <<<"$line")"
		fi
	else
		fail "$r" "$p" "CONNECT set-up, $par at a time" "$out"
		record "$r" "$p" "setup_rate_$par" FAIL
	fi
}

# hold P N OUT: opens N tunnels through proxy P, reads P's RSS while they
# are held, checks them again; sets held, alive and rss (KiB).
held=0 alive=0 rss=0
hold() {
	local p=$1 n=$2 out=$3 hpid i
	held=0 alive=0 rss=0
	# No timeout(1) here: SIGUSR1 must reach benchtool, which bounds
	# itself (opening <= 60 s, holding <= 120 s, the last check <= 30 s).
	nsbg "$cpu_load" "$tool" hold "${paddr[$p]}" \
	    "sink.test:$sink_port" "$n" 120 >"$out" 2>"$out.err" &
	hpid=$!
	pids+=("$hpid")
	for i in $(seq 1 700); do
		grep -q '^held=' "$out" 2>/dev/null && break
		kill -0 "$hpid" 2>/dev/null || break
		sleep 0.1
	done
	held=$(sed -n 's/^held=\([0-9]*\).*/\1/p' "$out")
	if [ -n "$held" ]; then
		sleep 1		# let the proxy settle
		rss=$(rss_kib "${ppid[$p]}")
	fi
	kill -USR1 "$hpid" 2>/dev/null || true
	for i in $(seq 1 400); do
		kill -0 "$hpid" 2>/dev/null || break
		sleep 0.1
	done
	kill -TERM "$hpid" 2>/dev/null || true
	wait "$hpid" 2>/dev/null || true
	alive=$(sed -n 's/^alive=\([0-9]*\).*/\1/p' "$out")
	held=${held:-0} alive=${alive:-0}
}

m_memory() {
	local r=$1 p=$2 out=$work/hold.$$ base
	if ! restart_proxy "$p"; then
		record "$r" "$p" idle_kib FAIL
		record "$r" "$p" many_held FAIL
		printf '== round %s, %s: memory not measured: the proxy does not start\n' \
		    "$r" "$p" >>"$failures"
		return
	fi
	sleep 0.5
	base=$(rss_kib "${ppid[$p]}")
	hold "$p" "$idle_n" "$out"
	if [ "$held" = "$idle_n" ] && [ "$alive" = "$idle_n" ]; then
		record "$r" "$p" idle_kib "$(awk -v a="$rss" -v b="$base" -v n="$idle_n" \
		    'BEGIN { printf "%.2f", (a - b) / n }')"
	else
		cat "$out.err" >>"$out"
		fail "$r" "$p" "$idle_n idle tunnels: $held held, $alive answered after" "$out"
		record "$r" "$p" idle_kib FAIL
	fi
	alive_or_restart "$p" || return 0
	case " $many_for " in *" $p "*) ;; *) return 0 ;; esac
	sleep 1
	hold "$p" "$many_n" "$out"
	record "$r" "$p" many_held "$alive"
	[ "$rss" != 0 ] && record "$r" "$p" many_mib "$(awk -v a="$rss" 'BEGIN { printf "%.1f", a / 1024 }')"
	if [ "$held" != "$many_n" ] || [ "$alive" != "$many_n" ]; then
		cat "$out.err" >>"$out"
		fail "$r" "$p" "$many_n tunnels: $held held, $alive answered after" "$out"
	fi
	alive_or_restart "$p" || true
	sleep 1
}

# -------------------------------------------------------------- the run

say "work directory $work, namespace $ns"
if [ "$pin" = 1 ]; then
	say "CPU $cpu_proxy: the proxy under test; CPU $cpu_load: load generators, nginx, sink/echo"
else
	say "no CPU pinning"
fi

nsbg "$cpu_load" "$nginxbin" -p "$work/nginx" -e "$work/nginx/error.log" \
    -c "$work/nginx/nginx.conf" >"$work/nginx/stderr.log" 2>&1 &
pids+=($!)
nsbg "$cpu_load" "$tool" serve "$sink_port" >"$work/serve.log" 2>&1 &
pids+=($!)
probe "127.0.0.1:$origin_port" 10 || { cat "$work/nginx/stderr.log" >&2; die "nginx did not start"; }
probe "127.0.0.1:$sink_port" 10 || die "the sink/echo server did not start"

all=()
for p in direct intutic squid tinyproxy relay; do
	wanted "$p" "$with" && all+=("$p")
done
[ ${#all[@]} -gt 0 ] || die "--with names no proxy"
for p in "${all[@]}"; do
	start_proxy "$p" || true
done

load_start=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load_start" 'BEGIN { exit !(l > 1.0) }'; then
	say "warning: the machine is busy (load average $load_start): figures will be noisy"
fi
started=$(date +%s)
for ((r = 1; r <= rounds; r++)); do
	# Each round rotates who goes first.
	order=()
	for ((i = 0; i < ${#all[@]}; i++)); do
		order+=("${all[$(((i + r - 1) % ${#all[@]}))]}")
	done
	say "round $r of $rounds: ${order[*]}"
	# Memory first, on freshly started proxies.
	for p in "${order[@]}"; do
		wanted memory "$only" || break
		[ "$p" = direct ] || [ "$p" = relay ] && continue
		case " $many_for " in
		*" $p "*) say "  $p: $idle_n idle tunnels, then $many_n" ;;
		*) say "  $p: $idle_n idle tunnels" ;;
		esac
		m_memory "$r" "$p"
	done
	wanted get "$only" && say "  GET, wrk -c $get_conns, ${get_secs}s"
	for p in "${order[@]}"; do
		wanted get "$only" || break
		[ "$p" = relay ] && continue
		ready "$r" "$p" get_rps && m_get "$r" "$p"
	done
	for spec in "1 up" "1 down" "8 up" "8 down"; do
		wanted bulk "$only" || break
		say "  CONNECT bulk $spec, $((bulk_bytes >> 20)) MiB"
		for p in "${order[@]}"; do
			[ "$p" = relay ] && [ "${spec% *}" != 1 ] && continue
			ready "$r" "$p" "bulk_${spec#* }_${spec% *}" && m_bulk "$r" "$p" $spec
		done
	done
	for par in 1 8; do
		wanted setup "$only" || break
		say "  CONNECT set-up, $par at a time, ${setup_secs}s"
		for p in "${order[@]}"; do
			[ "$p" = relay ] && [ "$par" != 1 ] && continue
			ready "$r" "$p" "setup_rate_$par" && m_setup "$r" "$p" "$par"
		done
	done
done
elapsed=$(( $(date +%s) - started ))

{
	echo "pin=$pin cpu_proxy=$cpu_proxy cpu_load=$cpu_load ncpu=$ncpu"
	echo "rounds=$rounds get_secs=$get_secs get_conns=$get_conns bulk_mib=$((bulk_bytes >> 20))"
	echo "setup_secs=$setup_secs idle_n=$idle_n many_n=$many_n workers=${workers:-default} elapsed=$elapsed"
	echo "many_wanted=$many_wanted nofile=$nofile"
	echo "load_start=$load_start load_end=$(cut -d' ' -f1 /proc/loadavg)"
	echo "versions: intutic=$("$proxybin" --version 2>/dev/null | awk '{ print $2 }')$(
	    git -C "$top" rev-parse --short HEAD 2>/dev/null | sed 's/^/(tree-at-/; s/$/)/')" \
	    "squid=$(dpkg-query -W -f='${Version}' squid 2>/dev/null)" \
	    "tinyproxy=$(dpkg-query -W -f='${Version}' tinyproxy 2>/dev/null)" \
	    "nginx=$(dpkg-query -W -f='${Version}' nginx 2>/dev/null)" \
	    "wrk=$(dpkg-query -W -f='${Version}' wrk 2>/dev/null)"
} >"$work/meta.txt"

python3 "$here/proxy-report.py" "$results" "$work/meta.txt" "$failures" \
    ${markdown:+"$markdown"}
