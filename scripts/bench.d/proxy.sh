#!/usr/bin/env bash
# scripts/bench.d/proxy.sh — `scripts/bench proxy`: intutic-proxy side by
# side with a direct connection, squid and tinyproxy.
#
#   scripts/bench proxy [--quick] [--rounds N] [--markdown FILE]
#                       [--no-pin] [--workers N] [--keep]
#                       [--only LIST] [--with LIST]
#
#   --quick          one short round (about two minutes): a smoke test
#   --rounds N       rounds of the interleaved measurements (default 3);
#                    the table shows the median of each
#   --markdown FILE  also write the tables as Markdown to FILE
#   --no-pin         no CPU pinning (default: the proxy under test on the
#                    last CPU, the load generators and servers on CPU 0)
#   --workers N      intutic-proxy --workers (default: the proxy's own,
#                    one per processor it may run on: 1 when pinned)
#   --keep           keep the work directory (configs, logs, raw results)
#   --only LIST      only these measurements, comma-separated, of
#                    memory, get, bulk, setup, runs-get, runs-setup,
#                    revoke (default: all seven)
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
# And for intutic-proxy alone, with 1,000 runs registered on its control
# socket (runs.py; each with a policy of its own: an allowlist of the
# origin and the sink, and a deny entry of its own; registered by users
# of no account in the group of its --control-group, 250 each, as the
# proxy keeps at most RUNS_PER_USER_MAX (proxy/runs.h) runs of one user):
#   - runs-get: the GET above with each request a run's (Proxy-
#     Authorization: Basic, the 1,000 runs in turn), against the same
#     requests without credentials (the operator's rules alone, on the
#     same proxy: no part of their way looks at runs); both from a wrk
#     script that hands out a prepared request each time;
#   - runs-setup: the set-up above, 1 and 8 at a time, each connection
#     the next run's, against the same without credentials;
#     for both, also the proxy's CPU time (its threads' schedstat) per
#     request, which other work on the machine moves far less than rates;
#   - revoke: 1,000 tunnels open to sink.test, then (put) a PUT of a
#     policy that denies sink.test to their run, all 1,000 of one run
#     (bench-0001), timed from before the request to its answer and to
#     the end the last tunnel sees; (hup) 1,000 tunnels again, one of
#     each run, and sink.test taken out of the operator's rules with a
#     SIGHUP, timed from the signal.  Put back after each.  Also the
#     proxy's CPU time meanwhile.
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
only=memory,get,bulk,setup,runs-get,runs-setup,revoke
with=direct,intutic,squid,tinyproxy,relay
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
	case "$m" in memory|get|bulk|setup|runs-get|runs-setup|revoke) ;;
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
runs_n=1000 revoke_n=1000

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

# Runs (runs-get, runs-setup, revoke): registered by users of no account,
# as many as RUNS_PER_USER_MAX (proxy/runs.h) asks for $runs_n runs, in the
# group of the proxy's --control-group, which opens its control socket to
# them.  Numbers from 64000 up that name no user or group here and no
# process's; they are given to short-lived registering processes only.
runs_per_user=$(sed -n 's/^#define[[:space:]]*RUNS_PER_USER_MAX[[:space:]]*\([0-9]*\).*/\1/p' \
    "$top/proxy/runs.h")
[ -n "$runs_per_user" ] || die "no RUNS_PER_USER_MAX in $top/proxy/runs.h"
used_ids=" $(ps -e -o uid=,gid= | tr -s ' \n' '  ') "
# free_ids N DB: N numbers from 64000 up of no entry of DB (passwd,
# group) and no process.
free_ids() {
	local n=$1 db=$2 id ids=()
	for ((id = 64000; id < 65000 && ${#ids[@]} < n; id++)); do
		getent "$db" "$id" >/dev/null 2>&1 && continue
		case "$used_ids" in *" $id "*) continue ;; esac
		ids+=("$id")
	done
	[ ${#ids[@]} -eq "$n" ] && echo "${ids[*]}"
}
runs_uids=$(free_ids $(( (runs_n + runs_per_user - 1) / runs_per_user )) passwd) ||
	die "no free user ids from 64000 up for the runs' owners"
runs_uids=${runs_uids// /,}
bench_gid=$(free_ids 1 group) || die "no free group id from 64000 up"

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
# rules-nosink.yaml: the same without sink.test (revoke, hup); rules.yaml
# is put back from rules-all.yaml.
mkdir -p "$work/intutic" "$work/runs"
chmod 755 "$work/intutic"
cat >"$work/intutic/rules-all.yaml" <<EOF
version: 1
ports: [80, 443, $origin_port]
allow:
  - origin.test
  - "sink.test:$sink_port"
  - "127.0.0.0/8:$origin_port,$sink_port"
EOF
grep -v '^  - "sink.test:' "$work/intutic/rules-all.yaml" \
    >"$work/intutic/rules-nosink.yaml"
cp "$work/intutic/rules-all.yaml" "$work/intutic/rules.yaml"

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
# With BENCH_DYNAMIC set, a request() hands out prepared requests in turn:
# one with each line of BENCH_AUTH_B64 (base64 of RUN:TOKEN) as Proxy-
# Authorization, or one without when it is unset (runs-get).
cat >"$work/get.lua" <<'EOF'
local url = os.getenv("BENCH_URL")
if url ~= nil and url ~= "" then
	wrk.path = url
	wrk.headers["Host"] = os.getenv("BENCH_HOST")
end
if os.getenv("BENCH_DYNAMIC") ~= nil then
	local reqs, n, i = {}, 0, 0
	local auth = os.getenv("BENCH_AUTH_B64")
	if auth ~= nil and auth ~= "" then
		for line in io.lines(auth) do
			n = n + 1
			reqs[n] = wrk.format(nil, nil, {
			    ["Host"] = wrk.headers["Host"],
			    ["Proxy-Authorization"] = "Basic " .. line })
		end
	else
		n = 1
		reqs[1] = wrk.format()
	end
	request = function()
		i = i % n + 1
		return reqs[i]
	end
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

# cpu_ns PID: the CPU time PID's threads have had, in ns (schedstat): what
# the proxy spent, whatever else shared its CPU.
cpu_ns() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null |
	    awk '{ s += $1 } END { printf "%.0f", s }'
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
		    --control-group "$bench_gid" \
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

# wrk_get ROUND PROXY METRIC [VAR=VALUE...]: the GET through PROXY, with
# these in wrk's environment (get.lua); records METRIC_rps, _p50, _p99,
# and with cpu_of set to a pid, METRIC_cpu_us: the CPU time that process
# had per request.
cpu_of=
wrk_get() {
	local r=$1 p=$2 m=$3 out=$work/out.$$ line req dur errs rerrs url c0
	local what=GET
	local -a env=()
	shift 3
	[ "$m" = get ] || what="GET, $m"
	if [ "$p" = direct ]; then
		url=http://127.0.0.1:$origin_port/100b
	else
		url=http://${paddr[$p]}/
		env=(BENCH_URL="http://origin.test:$origin_port/100b"
		    BENCH_HOST="origin.test:$origin_port")
	fi
	[ -n "$cpu_of" ] && c0=$(cpu_ns "$cpu_of")
	if ! nsrun "$cpu_load" env "${env[@]}" "$@" timeout -k 5 $((get_secs + 30)) \
	    "$wrkbin" -t 1 -c "$get_conns" -d "${get_secs}s" --timeout 5s \
	    -s "$work/get.lua" "$url" >"$out" 2>&1; then
		fail "$r" "$p" "$what (wrk exited non-zero)" "$out"
		record "$r" "$p" "${m}_rps" FAIL
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
		fail "$r" "$p" "$what ($errs errors of $req requests: $line)" "$out"
		record "$r" "$p" "${m}_rps" FAIL
		return
	fi
	if [ "$errs" -gt 0 ] || [ "$rerrs" -gt 0 ]; then
		printf '== round %s, %s: %s: %s failed requests (under 1%%, kept), %s read/write errors (connections closed by the proxy) of %s requests\n' \
		    "$r" "$p" "$what" "$errs" "$rerrs" "$req" >>"$failures"
	fi
	record "$r" "$p" "${m}_rps" "$(awk -v n="$req" -v d="$dur" 'BEGIN { printf "%.1f", n / (d / 1e6) }')"
	record "$r" "$p" "${m}_p50" "$(sed -n 's/.*p50_us=\([0-9]*\).*/\1/p' <<<"$line" | awk '{ printf "%.3f", $1 / 1000 }')"
	record "$r" "$p" "${m}_p99" "$(sed -n 's/.*p99_us=\([0-9]*\).*/\1/p' <<<"$line" | awk '{ printf "%.3f", $1 / 1000 }')"
	[ -n "$cpu_of" ] && record "$r" "$p" "${m}_cpu_us" \
	    "$(awk -v a="$(cpu_ns "$cpu_of")" -v b="$c0" -v n="$req" 'BEGIN { printf "%.2f", (a - b) / n / 1000 }')"
	return 0
}

m_get() { wrk_get "$1" "$2" get; }

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

# setup_run ROUND PROXY PAR METRIC [VAR=VALUE...]: the set-up through
# PROXY, PAR at a time, with these in benchtool's environment; records
# METRIC_rate_PAR, with PAR 1 METRIC_p50 and _p99, and with cpu_of set
# METRIC_cpu_us_PAR (as wrk_get).
setup_run() {
	local r=$1 p=$2 par=$3 m=$4 out=$work/out.$$ line c0 what
	shift 4
	[ -n "$cpu_of" ] && c0=$(cpu_ns "$cpu_of")
	if nsrun "$cpu_load" env "$@" timeout -k 5 $((setup_secs + 40)) "$tool" setup \
	    "${paddr[$p]}" "sink.test:$sink_port" 1000000 "$par" "$setup_secs" \
	    >"$out" 2>&1; then
		line=$(grep '^done=' "$out")
		record "$r" "$p" "${m}_rate_$par" "$(sed -n 's/.*rate=\([0-9.]*\).*/\1/p' <<<"$line")"
		[ -n "$cpu_of" ] && record "$r" "$p" "${m}_cpu_us_$par" \
		    "$(awk -v a="$(cpu_ns "$cpu_of")" -v b="$c0" \
		    -v n="$(sed -n 's/^done=\([0-9]*\).*/\1/p' <<<"$line")" \
		    'BEGIN { printf "%.2f", (a - b) / n / 1000 }')"
		if [ "$par" = 1 ]; then
			record "$r" "$p" "${m}_p50" "$(sed -n 's/.*p50_ms=\([0-9.]*\).*/\1/p' <<<"$line")"
			record "$r" "$p" "${m}_p99" "$(sed -n 's/.*p99_ms=\([0-9.]*\).*/\1/p' <<<"$line")"
		fi
	else
		what="CONNECT set-up, $par at a time"
		[ "$m" = setup ] || what="$what, $m"
		fail "$r" "$p" "$what" "$out"
		record "$r" "$p" "${m}_rate_$par" FAIL
	fi
}

m_setup() { setup_run "$1" "$2" "$3" setup; }

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

# ------------------------------------------------------------------ runs

# The intutic-proxy (pid) whose runs are registered, and how long that took.
runs_pid= reg_secs=

# runs_ready ROUND METRIC: $runs_n runs registered on intutic-proxy (again
# if it was started again since); else METRIC recorded as failed.
runs_ready() {
	local r=$1 m=$2 out=$work/runs/register.out
	ready "$r" intutic "$m" || return 1
	[ "$runs_pid" = "${ppid[intutic]}" ] && return 0
	say "  registering $runs_n runs as users $runs_uids (group $bench_gid)"
	if nsrun "$cpu_load" timeout -k 5 300 python3 "$here/runs.py" register \
	    "$work/intutic/state" "$runs_n" "$runs_uids" "$bench_gid" \
	    "$origin_port" "$sink_port" "$work/runs" >"$out" 2>&1; then
		reg_secs=$(sed -n 's/^registered=.* seconds=\([0-9.]*\).*/\1/p' "$out")
		runs_pid=${ppid[intutic]}
		return 0
	fi
	fail "$r" intutic "registering $runs_n runs" "$out"
	record "$r" intutic "$m" FAIL
	return 1
}

# m_runs_get ROUND: the GET with and without the runs' credentials, in
# an order that turns each round.
m_runs_get() {
	local r=$1 mode cpu_of
	runs_ready "$r" runs_get_runs_rps || return 0
	cpu_of=${ppid[intutic]}
	for mode in $( ((r % 2)) && echo anon runs || echo runs anon); do
		ready "$r" intutic "runs_get_${mode}_rps" || continue
		if [ "$mode" = runs ]; then
			wrk_get "$r" intutic runs_get_runs BENCH_DYNAMIC=1 \
			    BENCH_AUTH_B64="$work/runs/auth.b64"
		else
			wrk_get "$r" intutic runs_get_anon BENCH_DYNAMIC=1
		fi
	done
}

# m_runs_setup ROUND PAR: the set-up, PAR at a time, with and without.
m_runs_setup() {
	local r=$1 par=$2 mode cpu_of
	runs_ready "$r" "runs_setup_runs_rate_$par" || return 0
	cpu_of=${ppid[intutic]}
	for mode in $( ((r % 2)) && echo anon runs || echo runs anon); do
		ready "$r" intutic "runs_setup_${mode}_rate_$par" || continue
		if [ "$mode" = runs ]; then
			setup_run "$r" intutic "$par" runs_setup_runs \
			    BENCHTOOL_AUTH="$work/runs/auth.txt"
		else
			setup_run "$r" intutic "$par" runs_setup_anon
		fi
	done
}

# rules_swap FILE: the operator's rules file becomes a copy of FILE.
rules_swap() {
	cp "$1" "$work/intutic/rules.yaml.new" &&
	    mv -f "$work/intutic/rules.yaml.new" "$work/intutic/rules.yaml"
}

# m_revoke ROUND put|hup: $revoke_n tunnels to sink.test, then sink.test
# denied (put: to their run by a PUT of its policy; hup: by the operator's
# rules and a SIGHUP); records revoke_KIND_answer_ms (put), _first_ms,
# _last_ms (to the end each tunnel saw), _closed, and _cpu_ms (the CPU
# time the proxy had from just before to the last end, or somewhat
# later); puts it all back.
m_revoke() {
	local r=$1 kind=$2 out=$work/revoke.$$ auth bpid i held line t0 t1
	local closed first last c0= c1=
	runs_ready "$r" "revoke_${kind}_last_ms" || return 0
	if [ "$kind" = put ]; then
		auth=$work/runs/auth-one.txt
	else
		auth=$work/runs/auth.txt
	fi
	: >"$out.act"
	# benchtool bounds itself: opening <= 30 s, all of it <= 60 s.
	nsbg "$cpu_load" env BENCHTOOL_AUTH="$auth" "$tool" revoke \
	    "${paddr[intutic]}" "sink.test:$sink_port" "$revoke_n" 60 \
	    >"$out" 2>"$out.err" &
	bpid=$!
	pids+=("$bpid")
	for i in $(seq 1 350); do
		grep -q '^held=' "$out" 2>/dev/null && break
		kill -0 "$bpid" 2>/dev/null || break
		sleep 0.1
	done
	held=$(sed -n 's/^held=\([0-9]*\).*/\1/p' "$out")
	if [ "${held:-0}" = "$revoke_n" ]; then
		sleep 0.5	# the proxy past every peek, quiet
		c0=$(cpu_ns "${ppid[intutic]}")
		if [ "$kind" = put ]; then
			nsrun "$cpu_load" timeout -k 5 30 python3 "$here/runs.py" \
			    put "$work/intutic/state" bench-0001 1 deny \
			    "$origin_port" "$sink_port" >"$out.act" 2>&1 || true
		else
			rules_swap "$work/intutic/rules-nosink.yaml"
			nsrun "$cpu_load" timeout -k 5 30 python3 "$here/runs.py" \
			    hup "${ppid[intutic]}" >"$out.act" 2>&1 || true
		fi
		for i in $(seq 1 700); do
			kill -0 "$bpid" 2>/dev/null || break
			sleep 0.1
		done
		c1=$(cpu_ns "${ppid[intutic]}")
	fi
	stop_pid "$bpid"
	# Put back what was changed; a proxy that cannot is started again.
	rules_swap "$work/intutic/rules-all.yaml"
	if [ "$kind" = put ]; then
		if ! nsrun "$cpu_load" timeout -k 5 30 python3 "$here/runs.py" \
		    put "$work/intutic/state" bench-0001 1 allow "$origin_port" \
		    "$sink_port" >>"$out.act" 2>&1; then
			say "cannot put bench-0001's policy back: restarting intutic"
			restart_proxy intutic || true
		fi
	elif grep -q '^t0=' "$out.act" &&
	    ! nsrun "$cpu_load" timeout -k 5 30 python3 "$here/runs.py" \
	    reload "$work/intutic/state" "${ppid[intutic]}" >>"$out.act" 2>&1; then
		say "the operator's rules were not put back: restarting intutic"
		restart_proxy intutic || true
	fi
	line=$(grep '^closed=' "$out" || true)
	t0=$(sed -n 's/^t0=\([0-9.]*\).*/\1/p' "$out.act" | head -1)
	t1=$(sed -n 's/^t0=.* answered=\([0-9.]*\).*/\1/p' "$out.act" | head -1)
	closed=$(sed -n 's/^closed=\([0-9]*\).*/\1/p' <<<"$line")
	first=$(sed -n 's/.* first=\([0-9.]*\).*/\1/p' <<<"$line")
	last=$(sed -n 's/.* last=\([0-9.]*\).*/\1/p' <<<"$line")
	if [ "${held:-0}" != "$revoke_n" ] || [ -z "$t0" ] || [ -z "$last" ]; then
		cat "$out.err" "$out.act" >>"$out" 2>/dev/null
		fail "$r" intutic "revoke ($kind): ${held:-0} of $revoke_n tunnels open, or no change made" "$out"
		record "$r" intutic "revoke_${kind}_last_ms" FAIL
		return
	fi
	record "$r" intutic "revoke_${kind}_closed" "$closed"
	if [ "$kind" = put ]; then
		if grep -q 'status=200' "$out.act" && [ -n "$t1" ]; then
			record "$r" intutic revoke_put_answer_ms \
			    "$(awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.2f", (a - b) * 1000 }')"
		else
			fail "$r" intutic "revoke (put): the PUT was not answered 200" "$out.act"
			record "$r" intutic revoke_put_answer_ms FAIL
		fi
	fi
	if [ "$closed" != "$revoke_n" ]; then
		cat "$out.err" >>"$out"
		fail "$r" intutic "revoke ($kind): $closed of $revoke_n tunnels closed" "$out"
		record "$r" intutic "revoke_${kind}_last_ms" FAIL
		return
	fi
	record "$r" intutic "revoke_${kind}_first_ms" \
	    "$(awk -v a="$first" -v b="$t0" 'BEGIN { printf "%.2f", (a - b) * 1000 }')"
	record "$r" intutic "revoke_${kind}_last_ms" \
	    "$(awk -v a="$last" -v b="$t0" 'BEGIN { printf "%.2f", (a - b) * 1000 }')"
	record "$r" intutic "revoke_${kind}_cpu_ms" \
	    "$(awk -v a="$c1" -v b="$c0" 'BEGIN { printf "%.2f", (a - b) / 1e6 }')"
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
if ! wanted intutic "$with"; then
	for m in runs-get runs-setup revoke; do
		wanted "$m" "$only" && say "$m: measured on intutic-proxy alone, which --with leaves out"
	done
fi

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
	# intutic-proxy with runs: with and without credentials, then revoke.
	wanted intutic "$with" || continue
	if wanted runs-get "$only"; then
		say "  intutic, $runs_n runs: GET, wrk -c $get_conns, ${get_secs}s, with and without"
		m_runs_get "$r"
	fi
	for par in 1 8; do
		wanted runs-setup "$only" || break
		say "  intutic, $runs_n runs: CONNECT set-up, $par at a time, ${setup_secs}s, with and without"
		m_runs_setup "$r" "$par"
	done
	if wanted revoke "$only"; then
		say "  intutic, $runs_n runs: revoking $revoke_n tunnels (PUT of a run's policy, SIGHUP)"
		m_revoke "$r" put
		m_revoke "$r" hup
	fi
done
elapsed=$(( $(date +%s) - started ))

{
	echo "pin=$pin cpu_proxy=$cpu_proxy cpu_load=$cpu_load ncpu=$ncpu"
	echo "rounds=$rounds get_secs=$get_secs get_conns=$get_conns bulk_mib=$((bulk_bytes >> 20))"
	echo "setup_secs=$setup_secs idle_n=$idle_n many_n=$many_n workers=${workers:-default} elapsed=$elapsed"
	echo "many_wanted=$many_wanted nofile=$nofile"
	echo "runs_n=$runs_n runs_uids=$runs_uids runs_per_user=$runs_per_user reg_secs=${reg_secs:-none} revoke_n=$revoke_n"
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
