#!/usr/bin/env bash
# scripts/bench.d/sandbox.sh — `scripts/bench sandbox`: the start-up of
# `intutic exec --sandbox -- true` beside the container runtime's own
# `podman run ... IMAGE true`, and of `intutic exec --sandbox=qemu -- true`
# beside the guest's own boot, in one run.
#
#   scripts/bench sandbox [--rounds N] [--vm-rounds N] [--base IMAGE]
#                         [--guest DIR] [--no-oci] [--no-vm] [--clean]
#                         [--keep]
#
#   --rounds N     container rounds (default 5); each times every way once,
#                  the one going first changing each round; the table shows
#                  medians and p90s over the rounds
#   --vm-rounds N  microVM rounds (default 3; under TCG a boot takes many
#                  seconds)
#   --base IMAGE   INTUTIC_SANDBOX_BASE for the bench image (default: the
#                  newest localhost/intutic-test-base:* in podman's
#                  storage, which the container tests import; with none,
#                  make one with `sudo sandbox/mkbase --import
#                  localhost/intutic-base:bookworm` and pass --base)
#   --guest DIR    the microVM guest, a directory of scripts/mkguest's
#                  (kernel, initrd, rootfs, key and its env file; default
#                  the newest /var/cache/intutic-tests/guest-* that has
#                  one, the tests' guest; else the microVM part is
#                  skipped, saying so)
#   --no-oci       skip the container part
#   --no-vm        skip the microVM part
#   --clean        remove the bench image (localhost/intutic/sandbox-bench:
#                  default) at the end; it is kept otherwise, and built
#                  only when missing
#   --keep         keep the work directory (strace logs, proxy logs)
#
# Containers (podman, runc, CONTAINERS_CONF=t/data/sandbox/containers.conf
# as in the tests).  The image is INTUTIC_SANDBOX_IMAGE=localhost/intutic/
# sandbox-bench:default, built by the launcher itself from sandbox/
# Dockerfile on --base when missing, in a first untimed run.  The ways:
#   podman run --rm --entrypoint= IMAGE true
#                                  the runtime alone: no flags but
#                                  --pull=never and a label, and the
#                                  image's entrypoint cleared (it refuses
#                                  to run without the egress table);
#   podman run ENVELOPE IMAGE true the argv and environment the launcher
#                                  gives podman (taken from an strace of
#                                  its first run: the envelope, the
#                                  entrypoint with the egress table, the
#                                  proxy variables), replayed as they
#                                  are but for the container's name and a
#                                  label;
#   intutic exec --sandbox -- true the launcher, through a proxy of the
#                                  bench's own (--sandbox-runtime podman).
# "added by the launcher" is the median over the rounds of each round's
# launcher minus envelope (target: at most 150 ms).  Then, from one more
# run of the launcher each round under `strace -f --seccomp-bpf` (not
# counted in the times above: strace slows it), where its time goes: each
# process it starts (podman network inspect, podman image inspect, nft,
# podman run, ...) from its execve to its exit, and the launcher's own
# time before, between and after them.
#
# MicroVMs (qemu, INTUTIC_QEMU_ACCEL=tcg: no /dev/kvm here).  `intutic exec
# --sandbox=qemu -- true` through a proxy bound on 0.0.0.0 (in the
# namespace), its run directory in the work directory, timed; and the
# guest's own boot: qemu with the argv the launcher gave it (the same
# machine, kernel, initrd, root image as a snapshot, memory, CPUs, a copy
# of the run's config disk, a tap of the same name and address), from
# qemu's start until `ssh ... true` to the guest returns, then qemu
# stopped.  Target: the launcher at most 10% above that boot.  Its phases
# as for containers (setup until qemu starts, qemu until the launcher's
# ssh starts, the ssh, teardown).
#
# Network: root only; everything in a network namespace of its own
# (intutic-bench-sandbox-PID: lo, podman's bridge, the microVM's tap),
# entered with `nsenter --net` (ip netns exec would hide the cgroups runc
# needs); the proxy's --resolv-conf is empty: no packet leaves the
# namespace.  On exit (Ctrl-C too): the proxies stopped by PID, the
# containers the bench made removed (its label intutic.bench=NAMESPACE,
# and the launcher's by the names in its straced argv), the namespace
# deleted.  Every command bounded in time.
#
# Environment: INTUTIC_BUILD_DIR (build directory, default build/).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
builddir=${INTUTIC_BUILD_DIR:-$top/build}
intutic=$builddir/launcher/intutic
proxybin=$builddir/proxy/intutic-proxy

rounds=5 vm_rounds=3 base='' guest='' do_oci=1 do_vm=1 clean=0 keep=0
# the tests' guest (t/lib-vm.sh names it after what builds it): the newest
# shellcheck disable=SC2012 # guest-DIGITS: ls -t orders them by age
default_guest=$(ls -dt /var/cache/intutic-tests/guest-*/ 2>/dev/null |
    while read -r d; do [ -s "$d/env" ] && { echo "${d%/}"; break; }; done || true)
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=${2:?--rounds N}; shift ;;
	--vm-rounds) vm_rounds=${2:?--vm-rounds N}; shift ;;
	--base) base=${2:?--base IMAGE}; shift ;;
	--guest) guest=${2:?--guest DIR}; shift ;;
	--no-oci) do_oci=0 ;;
	--no-vm) do_vm=0 ;;
	--clean) clean=1 ;;
	--keep) keep=1 ;;
	-h|--help) sed -n '2,/^set -e/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) echo "bench sandbox: unknown option '$1'" >&2; exit 2 ;;
	esac
	shift
done
num_ok() { case "$1" in ''|*[!0-9]*) return 1 ;; esac; [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }
num_ok "$rounds" 1 100 || { echo "bench sandbox: --rounds N, 1 to 100" >&2; exit 2; }
num_ok "$vm_rounds" 1 20 || { echo "bench sandbox: --vm-rounds N, 1 to 20" >&2; exit 2; }

say() { printf 'bench sandbox: %s\n' "$*" >&2; }
die() { printf 'bench sandbox: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (network namespaces, podman's bridge, taps)"
for c in ip nsenter timeout strace python3 podman runc nft; do
	command -v "$c" >/dev/null 2>&1 || die "'$c' is needed (scripts/bootstrap installs it)"
done
[ -x "$intutic" ] || die "no $intutic: build first (scripts/bootstrap)"
[ -x "$proxybin" ] || die "no $proxybin: build first (scripts/bootstrap)"

image=localhost/intutic/sandbox-bench:default
export CONTAINERS_CONF=$top/t/data/sandbox/containers.conf
PODMAN_SECONDS=120	# any podman query or removal
RUN_SECONDS=120		# one container run, or the first one (a build)
BUILD_SECONDS=600	# the first run, which may build the image
VM_SECONDS=600		# one microVM run, boot to teardown (TCG)

if [ "$do_vm" = 1 ]; then
	if [ -z "$guest" ] && [ -n "$default_guest" ]; then
		guest=$default_guest
	fi
	if [ -z "$guest" ]; then
		say "no microVM guest (no /var/cache/intutic-tests/guest-*/env): the microVM part is skipped; make one with scripts/mkguest --out DIR and pass --guest DIR"
		do_vm=0
	elif [ ! -s "$guest/env" ]; then
		die "--guest $guest: no env file there (scripts/mkguest --out DIR makes one)"
	fi
	if [ "$do_vm" = 1 ]; then
		for c in qemu-system-x86_64 ssh ssh-keygen mkfs.ext4; do
			command -v "$c" >/dev/null 2>&1 || die "'$c' is needed for the microVM part (--no-vm skips it)"
		done
		[ -c /dev/net/tun ] || die "no /dev/net/tun: the microVM part needs a tap (--no-vm skips it)"
	fi
fi
if [ "$do_oci" = 1 ] && [ -z "$base" ]; then
	base=$(timeout -k 5 "$PODMAN_SECONDS" podman images \
	    --format '{{.CreatedAt}}|{{.Repository}}:{{.Tag}}' 2>/dev/null |
	    awk -F'|' '$2 ~ /^localhost\/intutic-test-base:/' | sort -r | head -1 | cut -d'|' -f2)
	[ -n "$base" ] || die "no localhost/intutic-test-base:* image in podman's storage: make a base with \`sudo sandbox/mkbase --import localhost/intutic-base:bookworm\` and pass --base localhost/intutic-base:bookworm"
fi

ns=intutic-bench-sandbox-$$
nspath=/var/run/netns/$ns
work=$(mktemp -d /tmp/intutic-bench-sandbox.XXXXXX)
pids=()
ns_made=0
# nsx CMD...: CMD in the namespace (nsenter execs it).
nsx() { nsenter --net="$nspath" "$@"; }
# nsbg CMD... &: the same in the background; the function's subshell
# execs, so that $! is CMD's own pid (a signal to it reaches CMD).
nsbg() { exec nsenter --net="$nspath" "$@"; }

# rm_ours: the containers of this run: the bench's label, and the
# launcher's names as its straced argv has them.
rm_ours() {
	local id
	for id in $(timeout -k 5 "$PODMAN_SECONDS" podman ps -a -q \
	    --filter "label=intutic.bench=$ns" 2>/dev/null); do
		timeout -k 5 "$PODMAN_SECONDS" podman rm -f -t 0 "$id" >/dev/null 2>&1 || true
	done
	grep -ho '"--name", "intutic-[A-Za-z0-9_.-]*"' "$work"/*.strace 2>/dev/null |
	    sed 's/.*"\(intutic-[^"]*\)"/\1/' | sort -u | while read -r id; do
		if timeout -k 5 "$PODMAN_SECONDS" podman container exists "$id" 2>/dev/null; then
			say "removing the launcher's container $id"
			timeout -k 5 "$PODMAN_SECONDS" podman rm -f -t 0 "$id" >/dev/null 2>&1 || true
		fi
	done
}

cleanup() {
	local rc=$? pid i alive
	trap - EXIT INT TERM
	# Best effort, every step: under set -e a step that finds nothing
	# (rm_ours' grep without a launcher's container) would end the
	# cleanup before the namespace goes.
	set +e
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
		rm_ours
		# Anything left in our namespace was started by this run.
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -KILL "$pid" 2>/dev/null || true
		done
		sleep 0.2
		ip netns delete "$ns" 2>/dev/null || say "could not delete netns $ns"
	fi
	if [ "$clean" = 1 ] && [ "$do_oci" = 1 ]; then
		timeout -k 5 "$PODMAN_SECONDS" podman rmi "$image" >/dev/null 2>&1 &&
			say "removed $image"
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

ip netns add "$ns"
ns_made=1
ip -n "$ns" link set lo up
say "work directory $work; namespace $ns"

: >"$work/resolv.conf"
printf '127.0.0.1 localhost\n' >"$work/hosts"
# A policy that allows nothing in particular: nothing here is reached.
printf 'version: 1\nallow:\n  - bench.invalid\n' >"$work/rules.yaml"

# start_proxy NAME BIND TBIND DBIND: intutic-proxy in the namespace, its
# state in $work/NAME; sets proxy_pid.
start_proxy() {
	local name=$1 bind=$2 tbind=$3 dbind=$4 i
	mkdir -p "$work/$name/state"
	nsbg "$proxybin" --rules "$work/rules.yaml" --bind "$bind" --port 0 \
	    --transparent-bind "$tbind" --dns-bind "$dbind" \
	    --state-dir "$work/$name/state" --audit "$work/$name/audit.jsonl" \
	    --resolv-conf "$work/resolv.conf" --hosts "$work/hosts" \
	    >"$work/$name/proxy.log" 2>&1 &
	proxy_pid=$!
	pids+=("$proxy_pid")
	for i in $(seq 1 100); do
		[ -s "$work/$name/state/proxy.json" ] && return 0
		kill -0 "$proxy_pid" 2>/dev/null || break
		sleep 0.1
	done
	die "the proxy ($name) did not start: $(tail -5 "$work/$name/proxy.log")"
}
stop_proxy() {
	kill -TERM "$1" 2>/dev/null || true
	for _ in $(seq 1 50); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
	kill -KILL "$1" 2>/dev/null || true
}

export INTUTIC_SETTINGS_FILE=$work/settings.yaml XDG_CACHE_HOME=$work/cache
unset INTUTIC_API_URL INTUTIC_TOKEN INTUTIC_PROXY_URL INTUTIC_PROFILE \
    INTUTIC_RULES HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy \
    all_proxy NO_PROXY no_proxy

now_ns() { date +%s%N; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
results=$work/results.tsv
: >"$results"
# record PART ROUND WAY MS
record() { printf '%s\t%s\t%s\t%s\n' "$@" >>"$results"; }
# timed PART ROUND WAY CMD...: CMD's wall time, recorded; its output in
# $work/PART.WAY.ROUND.log; fails as it does.
timed() {
	local part=$1 r=$2 way=$3 t0 t1 st=0
	shift 3
	t0=$(now_ns)
	"$@" >"$work/$part.${way// /_}.$r.log" 2>&1 || st=$?
	t1=$(now_ns)
	if [ "$st" != 0 ]; then
		say "round $r: $way failed (exit $st): $(tail -3 "$work/$part.${way// /_}.$r.log")"
		return "$st"
	fi
	record "$part" "$r" "$way" "$(( (t1 - t0) / 1000 ))"
}
# traced FILE CMD...: CMD under strace (the launcher's processes, their
# execs and exits, with times; seccomp-bpf so that the processes' other
# system calls are not stopped).
traced() {
	local out=$1
	shift
	strace -f --seccomp-bpf -ttt -v -s 65536 -o "$out" \
	    -e trace=execve,exit_group,wait4,clone,clone3,fork,vfork "$@"
}
# phases PART ROUND CMD...: CMD traced (traced), its phases appended to
# phases.tsv as "PART ROUND PHASE MS"; a failed run or none found is said.
phases() {
	local part=$1 r=$2
	shift 2
	if traced "$work/$part.$r.strace" "$@" >"$work/$part.traced.$r.log" 2>&1; then
		python3 "$work/strace.py" phases "$work/$part.$r.strace" "$part" |
		    awk -v p="$part" -v r="$r" -F'\t' '{ printf "%s\t%s\t%s\t%s\n", p, r, $1, $2 }' >>"$work/phases.tsv" ||
			say "round $r: no phases in $work/$part.$r.strace"
	else
		say "round $r: the traced launcher failed: $(tail -3 "$work/$part.traced.$r.log")"
	fi
}

# ================================================== containers

oci_part() {
	local gw st r way order i
	say "containers: base $base, image $image"
	# podman's bridge, so that the proxy can bind on its gateway: made by
	# a first container of the base image (not timed).
	nsx timeout -k 5 "$RUN_SECONDS" podman run --rm --pull=never \
	    --label "intutic.bench=$ns" --network podman "$base" true \
	    >"$work/bridge.log" 2>&1 || die "podman run of $base failed: $(tail -3 "$work/bridge.log")"
	gw=$(nsx timeout -k 5 "$PODMAN_SECONDS" podman network inspect podman \
	    --format '{{range .Subnets}}{{.Gateway}} {{end}}' 2>/dev/null | awk '{ print $1 }')
	[ -n "$gw" ] || die "no gateway in podman's default network"
	nsx ip -4 -o addr show | grep -qF " $gw/" || die "the bridge's gateway $gw is not up in $ns"
	start_proxy oci "127.0.0.1,$gw" "$gw:0" "$gw:0"
	oci_proxy=$proxy_pid
	say "containers: proxy on 127.0.0.1 and $gw (pid $oci_proxy)"

	# The launcher's command, bounded.
	launch=(nsenter --net="$nspath" timeout -k 5 "$RUN_SECONDS" env INTUTIC_SANDBOX_IMAGE="$image"
	    INTUTIC_SANDBOX_BASE="$base" "$intutic" exec --state-dir "$work/oci/state"
	    --sandbox --sandbox-runtime podman -- true)
	if timeout -k 5 "$PODMAN_SECONDS" podman image exists "$image"; then
		say "containers: $image is there (not rebuilt; --clean removes it at the end)"
	else
		say "containers: building $image from sandbox/Dockerfile on $base (the launcher's first run; not timed)"
	fi
	# The first run, traced (not timed): builds the image when missing,
	# and gives the envelope: podman run's argv and environment.
	st=0
	traced "$work/first.strace" nsenter --net="$nspath" timeout -k 5 "$BUILD_SECONDS" env \
	    INTUTIC_SANDBOX_IMAGE="$image" INTUTIC_SANDBOX_BASE="$base" \
	    "$intutic" exec --state-dir "$work/oci/state" --sandbox \
	    --sandbox-runtime podman -- true >"$work/first.log" 2>&1 || st=$?
	[ "$st" = 0 ] || die "intutic exec --sandbox -- true failed (exit $st): $(tail -5 "$work/first.log")"
	python3 "$work/strace.py" envelope "$work/first.strace" "$ns" \
	    "$work/envelope.argv" "$work/envelope.env" ||
		die "no podman run in the launcher's strace ($work/first.strace)"
	mapfile -d '' -t env_argv <"$work/envelope.argv"
	mapfile -d '' -t env_env <"$work/envelope.env"
	say "containers: the launcher's podman run has ${#env_argv[@]} words (in $work/envelope.txt)"
	plain=(nsenter --net="$nspath" timeout -k 5 "$RUN_SECONDS" podman run --rm --pull=never
	    --label "intutic.bench=$ns" --entrypoint= "$image" true)
	envelope=(nsenter --net="$nspath" timeout -k 5 "$RUN_SECONDS" env -i "${env_env[@]}" "${env_argv[@]}")
	# Each works at all (and a warm-up of each).
	"${plain[@]}" >"$work/warm.plain" 2>&1 ||
		die "podman run --rm --entrypoint= $image true failed: $(tail -3 "$work/warm.plain")"
	"${envelope[@]}" >"$work/warm.envelope" 2>&1 ||
		die "the envelope's podman run failed: $(tail -3 "$work/warm.envelope")"

	local ways=(plain envelope intutic)
	for ((r = 1; r <= rounds; r++)); do
		order=("${ways[@]}")
		for ((i = 1; i < r; i++)); do order=("${order[@]:1}" "${order[0]}"); done
		say "containers: round $r of $rounds (${order[*]}); load average $(loadavg)"
		record oci "$r" load "$(cut -d' ' -f1 /proc/loadavg)"
		for way in "${order[@]}"; do
			case "$way" in
			plain) timed oci "$r" plain "${plain[@]}" || true ;;
			envelope) timed oci "$r" envelope "${envelope[@]}" || true ;;
			intutic) timed oci "$r" intutic "${launch[@]}" || true ;;
			esac
		done
		phases oci "$r" "${launch[@]}"
	done
	stop_proxy "$oci_proxy"
}

# ================================================== microVMs

# vm_copier DIR: while the first microVM run runs, a copy of its run
# directory (the config disk, the known hosts) and the tap's address, for
# the bare boot.
vm_copier() {
	local d=$1 i r tap
	for i in $(seq 1 $((VM_SECONDS * 5))); do
		for r in "$work"/vmrun/run-*; do
			[ -s "$r/config.ext4" ] || continue
			tap=$(nsx ip -o link show 2>/dev/null | awk -F': ' '$2 ~ /^intvm/ { print $2; exit }')
			[ -n "$tap" ] || continue
			nsx ip -4 -o addr show dev "$tap" 2>/dev/null | awk '{ print $4; exit }' >"$d/tap.addr"
			[ -s "$d/tap.addr" ] || continue
			printf '%s\n' "$tap" >"$d/tap.name"
			printf '%s\n' "$r" >"$d/rundir.path"
			sleep 0.5
			cp -a "$r" "$d/rundir.copy" && return 0
		done
		sleep 0.2
	done
	return 1
}

# bare_boot ROUND: qemu with the launcher's argv, its run directory put
# back from the copy, a tap of the same name and address; from qemu's start
# until the launcher's `ssh ... true` (the same argv and environment)
# returns; qemu stopped, the tap and the directory removed.  Records
# vm/bare and vm/bare_sshd (until the banner).
bare_boot() {
	local r=$1 d=$work/bare tap addr rundir qpid t0 t1 t2 i ok=0 st=0
	tap=$(cat "$d/tap.name") addr=$(cat "$d/tap.addr") rundir=$(cat "$d/rundir.path")
	guest_ip=$(python3 -c 'import ipaddress, sys
n = ipaddress.ip_interface(sys.argv[1]); print(n.ip + 1)' "$addr")
	rm -rf "$rundir" && cp -a "$d/rundir.copy" "$rundir"
	rm -f "$rundir/console.log"
	if ! { nsx ip tuntap add dev "$tap" mode tap &&
	    nsx ip addr add "$addr" dev "$tap" && nsx ip link set "$tap" up; }; then
		say "round $r: bare boot: cannot make the tap $tap"
		nsx ip link del "$tap" 2>/dev/null || true
		return 1
	fi
	t0=$(now_ns)
	# qemu itself (no timeout in between: the loop below bounds it, and
	# stops it by its pid)
	nsbg "${qemu_argv[@]}" >"$work/vm.bare.$r.log" 2>&1 &
	qpid=$!
	pids+=("$qpid")
	# One poller for the whole boot, as the launcher polls: connect, the
	# banner within 1 s, else 200 ms and again; gives up when qemu is gone.
	# shellcheck disable=SC2016 # python
	if nsx timeout -k 5 "$VM_SECONDS" python3 -c 'import socket, sys, time
ip, qpid = sys.argv[1], int(sys.argv[2])
while True:
    try:
        if open("/proc/%d/stat" % qpid).read().rsplit(")", 1)[1].split()[0] == "Z":
            sys.exit(1)
    except OSError:
        sys.exit(1)
    try:
        s = socket.create_connection((ip, 22), timeout=1)
        s.settimeout(1)
        if s.recv(4).startswith(b"SSH-"):
            sys.exit(0)
    except OSError:
        pass
    time.sleep(0.2)' "$guest_ip" "$qpid" 2>>"$work/vm.bare.$r.log"; then
		ok=1
	fi
	t1=$(now_ns)
	if [ "$ok" = 1 ]; then
		nsx timeout -k 5 120 env -i "${ssh_env[@]}" "${ssh_argv[@]}" \
		    </dev/null >>"$work/vm.bare.$r.log" 2>&1 || st=$?
		t2=$(now_ns)
	fi
	kill -TERM "$qpid" 2>/dev/null || true
	for i in $(seq 1 50); do kill -0 "$qpid" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$qpid" 2>/dev/null || true
	wait "$qpid" 2>/dev/null || true
	nsx ip link del "$tap" 2>/dev/null || true
	rm -rf "$rundir"
	if [ "$ok" != 1 ] || [ "$st" != 0 ]; then
		say "round $r: bare boot failed (sshd answered: $ok, ssh exit $st): $(tail -3 "$work/vm.bare.$r.log")"
		return 1
	fi
	record vm "$r" bare "$(( (t2 - t0) / 1000 ))"
	record vm "$r" bare_sshd "$(( (t1 - t0) / 1000 ))"
}

vm_part() {
	local st r way order i
	# shellcheck disable=SC1091 # the guest's
	. "$guest/env"
	export INTUTIC_VM_KERNEL INTUTIC_VM_INITRD INTUTIC_VM_ROOTFS INTUTIC_FC_GUEST_KEY
	export INTUTIC_VM_RUNDIR=$work/vmrun INTUTIC_QEMU_ACCEL=tcg
	mkdir -p "$INTUTIC_VM_RUNDIR" "$work/bare"
	say "microVMs: guest $guest, qemu under TCG (no /dev/kvm)"
	start_proxy vm 0.0.0.0 0.0.0.0:0 0.0.0.0:0
	vm_proxy=$proxy_pid
	say "microVMs: proxy on 0.0.0.0 in $ns (pid $vm_proxy)"
	vlaunch=(nsenter --net="$nspath" timeout -k 10 "$VM_SECONDS" "$intutic" exec
	    --state-dir "$work/vm/state" --sandbox=qemu -- true)
	nsx timeout 60 "$intutic" exec --state-dir "$work/vm/state" --sandbox=qemu \
	    --sandbox-dry-run -- true >"$work/vm.dry-run" 2>&1 ||
		say "microVMs: --sandbox-dry-run failed: $(tail -3 "$work/vm.dry-run")"
	# The first run, traced (not timed): qemu's and ssh's argv, and a copy
	# of the run directory, for the bare boot.
	say "microVMs: a first run (not timed), traced, for qemu's argv and the run's config disk"
	vm_copier "$work/bare" &
	local cpid=$!
	pids+=("$cpid")
	st=0
	traced "$work/vm.first.strace" "${vlaunch[@]}" >"$work/vm.first.log" 2>&1 </dev/null || st=$?
	[ "$st" = 0 ] || die "intutic exec --sandbox=qemu -- true failed (exit $st): $(tail -5 "$work/vm.first.log")"
	kill -TERM "$cpid" 2>/dev/null || true
	wait "$cpid" 2>/dev/null || true
	bare_ok=1
	if ! python3 "$work/strace.py" vmcapture "$work/vm.first.strace" "$work/bare"; then
		say "microVMs: no qemu or ssh in the launcher's strace: no bare boot"
		bare_ok=0
	elif [ ! -d "$work/bare/rundir.copy" ]; then
		say "microVMs: the run directory could not be copied while it ran: no bare boot"
		bare_ok=0
	else
		mapfile -d '' -t qemu_argv <"$work/bare/qemu.argv"
		mapfile -d '' -t ssh_argv <"$work/bare/ssh.argv"
		mapfile -d '' -t ssh_env <"$work/bare/ssh.env"
		tr '\0' ' ' <"$work/bare/qemu.argv" >"$work/bare/qemu.txt"
		say "microVMs: qemu's argv in $work/bare/qemu.txt; the tap $(cat "$work/bare/tap.name") $(cat "$work/bare/tap.addr")"
	fi
	python3 "$work/strace.py" phases "$work/vm.first.strace" vm |
	    awk -F'\t' '{ printf "vm\t0\t%s\t%s\n", $1, $2 }' >>"$work/phases.tsv" || true

	local ways=(bare intutic)
	[ "$bare_ok" = 1 ] || ways=(intutic)
	for ((r = 1; r <= vm_rounds; r++)); do
		order=("${ways[@]}")
		for ((i = 1; i < r; i++)); do order=("${order[@]:1}" "${order[0]}"); done
		say "microVMs: round $r of $vm_rounds (${order[*]}); load average $(loadavg)"
		record vm "$r" load "$(cut -d' ' -f1 /proc/loadavg)"
		for way in "${order[@]}"; do
			case "$way" in
			bare) bare_boot "$r" || true ;;
			intutic) timed vm "$r" intutic "${vlaunch[@]}" </dev/null || true ;;
			esac
		done
		phases vm "$r" "${vlaunch[@]}" </dev/null
	done
	stop_proxy "$vm_proxy"
}

# ================================================== the strace reader

cat >"$work/strace.py" <<'EOF'
"""Reads strace -f -ttt -v -o output of intutic exec.

envelope FILE NS ARGV ENV: the launcher's `podman run` argv and environment,
NUL-separated, --name changed and a label intutic.bench=NS added (ENV.txt:
readable).
phases FILE KIND: tab-separated phase rows (name, ms) on stdout."""
import os, re, sys

LINE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(.*)$")


def cstr(s, i):
    """The C-escaped string starting at s[i] == '"': (value, next index)."""
    assert s[i] == '"'
    i += 1
    out = bytearray()
    while s[i] != '"':
        c = s[i]
        if c == "\\":
            n = s[i + 1]
            if n == "x":
                out.append(int(s[i + 2:i + 4], 16)); i += 4; continue
            if n in "01234567":
                j = i + 1
                while j < i + 4 and s[j] in "01234567":
                    j += 1
                out.append(int(s[i + 1:j], 8)); i = j; continue
            out += {"n": b"\n", "t": b"\t", "r": b"\r", "v": b"\v",
                    "f": b"\f", "\\": b"\\", '"': b'"'}.get(n, n.encode())
            i += 2
            continue
        out += c.encode()
        i += 1
    i += 1
    if s.startswith("...", i):
        i += 3
    return out.decode("utf-8", "replace"), i


def strlist(s, i):
    """The ["..", ..] list at s[i]: (values, next index)."""
    assert s[i] == "["
    i += 1
    vals = []
    while s[i] != "]":
        if s[i] == '"':
            v, i = cstr(s, i)
            vals.append(v)
        else:
            i += 1
    return vals, i + 1


def events(path):
    """(pid, t, kind, data): exec (argv, env), spawn (child), exit."""
    for line in open(path, errors="replace"):
        m = LINE.match(line)
        if not m:
            continue
        pid, t, rest = int(m.group(1)), float(m.group(2)), m.group(3)
        if rest.startswith("execve(") and not re.search(r"= -1 E\w+", rest[-60:]):
            i = rest.index(", [") + 2
            argv, i = strlist(rest, i)
            env = []
            j = rest.find(", [", i)
            if j >= 0:
                env, _ = strlist(rest, j + 2)
            yield pid, t, "exec", (argv, env)
        elif re.match(r"(<\.\.\. )?(clone3?|v?fork)", rest):
            r = re.search(r"= (\d+)\s*$", rest)
            if r:
                yield pid, t, "spawn", int(r.group(1))
        elif rest.startswith("+++ exited") or rest.startswith("+++ killed"):
            yield pid, t, "exit", None


def envelope(path, ns, argv_out, env_out):
    for pid, t, kind, data in events(path):
        if kind != "exec":
            continue
        argv, env = data
        if len(argv) > 2 and os.path.basename(argv[0]) == "podman" and argv[1] == "run":
            a = [argv[0], "run"]
            k = 2
            while k < len(argv):
                w = argv[k]
                if w == "--name":
                    a += ["--name", "intutic-bench-%s-%d" % (ns[-12:], os.getpid())]
                    k += 2
                    continue
                a.append(w)
                k += 1
            # the name is made unique per replay by the shell: drop it
            i = a.index("--name")
            del a[i:i + 2]
            a[2:2] = ["--label", "intutic.bench=" + ns]
            open(argv_out, "w").write("\0".join(a) + "\0")
            open(env_out, "w").write("\0".join(env) + "\0")
            with open(os.path.join(os.path.dirname(argv_out), "envelope.txt"), "w") as f:
                f.write(" ".join(a) + "\n\nenvironment:\n" + "\n".join(env) + "\n")
            return 0
    return 1


def name_of(argv, kind):
    b = os.path.basename(argv[0])
    if b == "podman":
        words = [w for w in argv[1:] if not w.startswith("-")][:2]
        if words and words[0] in ("run", "build"):
            words = words[:1]
        return "podman " + " ".join(words)
    if b.startswith("qemu-system"):
        return "qemu (boot until the launcher's ssh starts)" if kind == "vm" else b
    return b


def phases(path, kind):
    evs = list(events(path))
    if not evs:
        return 1
    parent, execs, exits, first = {}, {}, {}, {}
    for pid, t, k, d in evs:
        first.setdefault(pid, t)
        if k == "spawn":
            parent[d] = pid
        elif k == "exec":
            execs.setdefault(pid, []).append((t, d[0]))
        elif k == "exit":
            exits[pid] = t
    # the launcher: the process that execs intutic
    launcher = None
    for pid, lst in execs.items():
        if any(os.path.basename(a[0]) == "intutic" for _, a in lst):
            launcher = pid
            break
    if launcher is None:
        return 1
    t_start = min(t for t, a in execs[launcher] if os.path.basename(a[0]) == "intutic")
    t_end = exits.get(launcher)
    kids = []
    for pid, p in parent.items():
        if p == launcher and pid in execs:
            t0, argv = execs[pid][-1]
            kids.append((t0, exits.get(pid, t_end), pid, argv))
    kids.sort()
    rows = []
    ms = lambda a, b: (b - a) * 1000
    if kind == "vm":
        q = [k for k in kids if os.path.basename(k[3][0]).startswith("qemu")]
        s = [k for k in kids if os.path.basename(k[3][0]) == "ssh" and q and k[0] > q[0][0]]
        if not q or not s:
            return 1
        tq, ts, tse = q[0][0], s[-1][0], s[-1][1]
        seen = {}
        for t0, t1, pid, argv in kids:
            if t0 < tq:
                name = name_of(argv, kind)
                seen[name] = seen.get(name, 0) + 1
                if seen[name] > 1:
                    name += " (%d)" % seen[name]
                rows.append(("  " + name, ms(t0, t1)))
        own = ms(t_start, tq) - sum(r[1] for r in rows)
        rows.insert(0, ("setup: launch until qemu starts", ms(t_start, tq)))
        rows.append(("  the launcher's own work in setup", own))
        rows.append(("qemu start until the launcher's ssh starts (boot, sshd)", ms(tq, ts)))
        rows.append(("ssh ... true", ms(ts, tse)))
        rows.append(("teardown: ssh's exit until the launcher's", ms(tse, t_end)))
        rows.append(("total (under strace)", ms(t_start, t_end)))
    else:
        seen = {}
        prev = t_start
        own_before = own_between = 0.0
        for n, (t0, t1, pid, argv) in enumerate(kids):
            name = name_of(argv, kind)
            seen[name] = seen.get(name, 0) + 1
            if seen[name] > 1:
                name += " (%d)" % seen[name]
            if n == 0:
                own_before = ms(prev, t0)
            else:
                own_between += ms(prev, t0)
            rows.append((name, ms(t0, t1)))
            prev = max(prev, t1)
        rows.insert(0, ("launcher: start until its first child", own_before))
        rows.append(("launcher: between its children", own_between))
        rows.append(("launcher: after its last child", ms(prev, t_end)))
        rows.append(("total (under strace)", ms(t_start, t_end)))
    for name, v in rows:
        print("%s\t%.1f" % (name, v))
    return 0


def vmcapture(path, out):
    """qemu's argv, and the launcher's last ssh's argv and environment."""
    q = sa = se = None
    for pid, t, kind, data in events(path):
        if kind != "exec":
            continue
        b = os.path.basename(data[0][0])
        if b.startswith("qemu-system"):
            q = data[0]
        elif b == "ssh" and q is not None:
            sa, se = data
    if q is None or sa is None:
        return 1
    for name, v in (("qemu.argv", q), ("ssh.argv", sa), ("ssh.env", se)):
        open(os.path.join(out, name), "w").write("\0".join(v) + "\0")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "vmcapture":
        sys.exit(vmcapture(sys.argv[2], sys.argv[3]))
    if sys.argv[1] == "envelope":
        sys.exit(envelope(*sys.argv[2:6]))
    sys.exit(phases(sys.argv[2], sys.argv[3]))
EOF

# ================================================== the run

started=$(date +%s)
load_start=$(loadavg)
busy=$(ip netns list 2>/dev/null | awk -v me="$ns" '$1 != me && $1 ~ /^intutic-(t|bench)-/ { printf "%s ", $1 }')
[ -z "$busy" ] || say "warning: other tests or benches are running ($busy): figures will be noisy"
[ "$do_oci" = 1 ] && oci_part
[ "$do_vm" = 1 ] && vm_part

# ================================================== the report

elapsed=$(( $(date +%s) - started ))
load_end=$(loadavg)
touch "$work/phases.tsv"
python3 - "$results" "$work/phases.tsv" "$do_oci" "$do_vm" "${bare_ok:-0}" <<'PY'
import statistics, sys
res, ph, do_oci, do_vm, bare_ok = sys.argv[1:6]
rows = [l.rstrip("\n").split("\t") for l in open(res) if l.strip()]
vals, per = {}, {}
for part, rnd, way, v in rows:
    v = float(v)
    if way != "load":
        v /= 1000.0           # us -> ms
    vals.setdefault((part, way), []).append(v)
    per[(part, int(rnd), way)] = v
med = statistics.median


def p90(v):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * 0.9))]


def line(label, v, extra=""):
    if not v:
        print("  %-50s %10s %8s %s" % (label, "-", "-", extra))
    else:
        print("  %-50s %10.0f %8.0f %s" % (label, med(v), p90(v), extra))


def diffs(part, a, b):
    out = []
    for (p, r, w), v in per.items():
        if p == part and w == a and (p, r, b) in per:
            out.append(v - per[(p, r, b)])
    return out


def ratios(part, a, b):
    out = []
    for (p, r, w), v in per.items():
        if p == part and w == a and (p, r, b) in per and per[(p, r, b)] > 0:
            out.append(v / per[(p, r, b)])
    return out


phases = {}
order = {}
for l in open(ph):
    f = l.rstrip("\n").split("\t")
    if len(f) != 4:
        continue
    part, rnd, name, v = f
    key = (part, name)
    order.setdefault(part, [])
    if name not in order[part]:
        order[part].append(name)
    phases.setdefault(key, []).append(float(v))


def phase_table(part, title, skip_round0=False):
    if part not in order:
        return
    print()
    print(title)
    print("  %-58s %10s %6s" % ("phase", "median ms", "runs"))
    for name in order[part]:
        v = phases[(part, name)]
        print("  %-58s %10.1f %6d" % (name, med(v), len(v)))


if do_oci == "1":
    print("%-52s %10s %8s" % ("containers (podman, runc)", "median ms", "p90 ms"))
    line("podman run --rm --entrypoint= IMAGE true", vals.get(("oci", "plain")))
    line("podman run ENVELOPE IMAGE true (the launcher's)", vals.get(("oci", "envelope")))
    line("intutic exec --sandbox -- true", vals.get(("oci", "intutic")))
    d = diffs("oci", "envelope", "plain")
    line("envelope minus plain (the envelope's cost)", d)
    d = diffs("oci", "intutic", "envelope")
    res = "-" if not d else ("PASS" if med(d) <= 150 else "MISS")
    line("added by the launcher (intutic - envelope)", d, "  target <= 150 ms: " + res)
    print("  (differences: the median and p90 of each round's own difference; load average (1 min) at the rounds' starts: %s)"
          % ", ".join("%.2f" % x for x in vals.get(("oci", "load"), [])))
    phase_table("oci", "where the launcher's time goes (intutic exec --sandbox -- true under strace -f, one run a round; strace slows the launcher's own steps):")
if do_vm == "1":
    print()
    print("%-52s %10s %8s" % ("microVMs (qemu, TCG)", "median ms", "p90 ms"))
    line("bare boot: qemu until the guest's sshd answers", vals.get(("vm", "bare_sshd")))
    line("bare boot: qemu until ssh ... true returns", vals.get(("vm", "bare")))
    line("intutic exec --sandbox=qemu -- true", vals.get(("vm", "intutic")))
    d = diffs("vm", "intutic", "bare")
    line("added by the launcher (intutic - bare)", d)
    rt = ratios("vm", "intutic", "bare")
    if rt:
        print("  %-50s %10.3f %8.3f   target <= 1.10: %s" % (
            "intutic / bare boot", med(rt), p90(rt), "PASS" if med(rt) <= 1.10 else "MISS"))
    else:
        print("  intutic / bare boot: no bare boot measured: target not judged")
    print("  (load average (1 min) at the rounds' starts: %s)"
          % ", ".join("%.2f" % x for x in vals.get(("vm", "load"), [])))
    phase_table("vm", "where the launcher's time goes (intutic exec --sandbox=qemu -- true under strace -f, the first run and one a round):")
PY
echo
echo "Elapsed $elapsed s; load average $load_start at the start, $load_end at the end."
if [ "$do_oci" = 1 ]; then
	echo "Containers: $rounds round(s), each timing the three ways one after the other (the first changing each round), wall time of the whole command from the shell; IMAGE $image on $base; CONTAINERS_CONF=t/data/sandbox/containers.conf (runc)."
	echo "  plain: the image's entrypoint cleared (it refuses to run without the egress table); ENVELOPE: the launcher's own podman argv and environment (its entrypoint, which installs the egress table), replayed."
fi
if [ "$do_vm" = 1 ]; then
	echo "MicroVMs: $vm_rounds round(s); bare boot: qemu with the launcher's argv (same machine, kernel, initrd, root image snapshot, memory, CPUs, config disk copy, tap), sshd polled every 200 ms as the launcher does, then the launcher's own ssh ... true."
fi
if [ -n "${busy// /}" ]; then
	echo "Warning: other tests or benches were running at the start ($busy): the figures are noisy."
fi
