# t/lib-vm.sh — what a microVM test needs: a guest (kernel, initramfs,
# root image and key, built once by scripts/mkguest and cached), the
# script in a network namespace of its own, a "far" host in a second
# namespace joined by a veth pair (routable from the microVM through the
# test's namespace, which forwards; never allowed), and a record of what
# exists of microVM runs (taps, tables, run directories, hypervisors).
# Sourced after lib-test.sh and lib-proxy.sh:
#
#	#!/bin/sh
#	test_description='microVM: ...'
#	. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
#	. "$top_srcdir/t/lib-proxy.sh"
#	. "$top_srcdir/t/lib-vm.sh"
#	vm_isolate_netns
#	test_require_proxy curl
#	vm_env
#
# Functions:
#   vm_isolate_netns     skips unless root, qemu-system-x86_64, ssh,
#                        ssh-keygen, mkfs.ext4, debootstrap, nft and ip are
#                        there; builds the guest when it is not cached (outside
#                        the namespace: a download of Debian packages); then
#                        test_isolate_netns
#   vm_env               test_exec_env (lib-proxy.sh), then exports the
#                        guest's variables (INTUTIC_VM_KERNEL,
#                        INTUTIC_VM_INITRD, INTUTIC_VM_ROOTFS,
#                        INTUTIC_FC_GUEST_KEY), INTUTIC_VM_RUNDIR in the
#                        scratch directory, INTUTIC_QEMU_ACCEL=tcg
#                        (TEST_VM_ACCEL=kvm: kvm, skipped without a usable
#                        /dev/kvm)
#   vm_kvm_usable        /dev/kvm opens and answers KVM_GET_API_VERSION
#   vm_far_host          the far host: namespace $VM_FAR_NS, 10.99.0.2 behind
#                        the veth 10.99.0.1 (vmfar0; vmfar1 in the far
#                        namespace), IPv4 only (what it receives is what
#                        was sent to it), an echo server on $VM_FAR_PORT;
#                        forwarding on in the test's namespace
#   vm_leftovers         what exists of microVM runs, one line each, on
#                        stdout (empty: nothing)
#
# Network rule: the guest's tap, the far host and every server live in the
# script's namespaces; nothing in them routes anywhere else.

VM_TEST_CACHE=${SANDBOX_TEST_CACHE:-/var/cache/intutic-tests}
VM_BUILD_SECONDS=1500	# scripts/mkguest: a download and an image
VM_RUN_SECONDS=300	# one intutic exec --sandbox=qemu, boot to teardown
VM_FAR_ADDR=10.99.0.2
VM_FAR_GW=10.99.0.1

# The guest is cached under a name made from what builds it: a change to
# mkguest or to the guest's files builds a new one.
test_vm_guest_dir_ () {
	test_vm_sum_=$(cat "$top_srcdir/scripts/mkguest" \
	    "$top_srcdir/sandbox/vm/guest-init" "$top_srcdir/sandbox/vm/sshd_config" \
	    "$top_srcdir/sandbox/connect.sh" |
	    cksum | awk '{ print $1 }')
	printf '%s\n' "$VM_TEST_CACHE/guest-$test_vm_sum_"
}

vm_isolate_netns () {
	if test -n "${TEST_NETNS:-}"; then
		test_isolate_netns
		return
	fi
	test_require_root "named network namespaces, a tap, nftables"
	for test_vm_tool_ in qemu-system-x86_64 ssh ssh-keygen mkfs.ext4 debootstrap nft ip flock timeout; do
		command -v "$test_vm_tool_" >/dev/null 2>&1 ||
			test_skip_all "needs $test_vm_tool_ (scripts/bootstrap installs it)"
	done
	test -c /dev/net/tun || test_skip_all "needs /dev/net/tun (tap devices)"
	test_vm_dir_=$(test_vm_guest_dir_)
	if ! test -s "$test_vm_dir_/env"; then
		printf '%s\n' "# building the test guest with scripts/mkguest (once; cached in $test_vm_dir_)"
		mkdir -p "$VM_TEST_CACHE" ||
			test_skip_all "cannot make $VM_TEST_CACHE"
		timeout -k 10 "$VM_BUILD_SECONDS" flock "$VM_TEST_CACHE/.lock-guest" \
		    "$top_srcdir/scripts/mkguest" --out "$test_vm_dir_" --size 768 \
		    </dev/null >"$VM_TEST_CACHE/mkguest.log" 2>&1 ||
			test_skip_all "scripts/mkguest failed (see $VM_TEST_CACHE/mkguest.log)"
	fi
	test_isolate_netns
}

vm_env () {
	test_exec_env
	test_vm_dir_=$(test_vm_guest_dir_)
	test -s "$test_vm_dir_/env" || test_bug_ "no guest in $test_vm_dir_ (vm_isolate_netns first)"
	INTUTIC_VM_KERNEL=$test_vm_dir_/vmlinuz
	INTUTIC_VM_INITRD=$test_vm_dir_/initrd.img
	INTUTIC_VM_ROOTFS=$test_vm_dir_/rootfs.ext4
	INTUTIC_FC_GUEST_KEY=$test_vm_dir_/guest_key
	INTUTIC_VM_RUNDIR=$TRASH_DIRECTORY/vmrun
	# qemu emulated unless TEST_VM_ACCEL=kvm: a /dev/kvm that answers the
	# API is not enough.  The test machines' is a nested one (PVM) that
	# boots only guest kernels made for it: a stock kernel stops after
	# "Probing EDD", and the launcher gives up when sshd never answers.
	case ${TEST_VM_ACCEL:-tcg} in
	kvm) vm_kvm_usable || test_skip_all "TEST_VM_ACCEL=kvm: no usable /dev/kvm" ;;
	tcg) ;;
	*) test_bug_ "TEST_VM_ACCEL='$TEST_VM_ACCEL': kvm or tcg" ;;
	esac
	INTUTIC_QEMU_ACCEL=${TEST_VM_ACCEL:-tcg}
	printf '# qemu accelerator: %s\n' "$INTUTIC_QEMU_ACCEL"
	export INTUTIC_VM_KERNEL INTUTIC_VM_INITRD INTUTIC_VM_ROOTFS \
	    INTUTIC_FC_GUEST_KEY INTUTIC_VM_RUNDIR INTUTIC_QEMU_ACCEL
}

# start_vm_proxy RULES [OPTIONS...]: start_proxy as `intutic exec
# --sandbox=qemu|firecracker` needs it: on every address, with its
# transparent listener and its DNS filter there too (ports the system
# picks; the state file says which).
start_vm_proxy () {
	test $# -ge 1 || { echo "start_vm_proxy: needs RULES" >&2; return 1; }
	test_vm_rules_=$1
	shift
	start_proxy "$test_vm_rules_" --bind 0.0.0.0 \
		--transparent-bind 0.0.0.0:0 --dns-bind 0.0.0.0:0 "$@"
}

# vm_kvm_usable: /dev/kvm opens and answers KVM_GET_API_VERSION with 12.
vm_kvm_usable () {
	test -c /dev/kvm && python3 -c '
import fcntl, os
fd = os.open("/dev/kvm", os.O_RDWR)
assert fcntl.ioctl(fd, 0xAE00) == 12
' 2>/dev/null
}

# The far host's namespace: removed (and its echo server with it) at the end.
test_vm_far_down_ () {
	if test -n "${test_vm_far_pid_:-}"; then
		kill -TERM "$test_vm_far_pid_" 2>/dev/null
		wait "$test_vm_far_pid_" 2>/dev/null
	fi
	ip netns del "$VM_FAR_NS" 2>/dev/null
	return 0
}

vm_far_host () {
	VM_FAR_NS=intutic-t-far-$$
	export VM_FAR_NS
	ip netns add "$VM_FAR_NS" || return 1
	test_atexit test_vm_far_down_ || return 1
	ip link add vmfar0 type veth peer name vmfar1 || return 1
	ip link set vmfar1 netns "$VM_FAR_NS" || return 1
	# no IPv6 on the link: nothing of its own (router solicitations,
	# multicast reports) arrives there
	if test -d /proc/sys/net/ipv6; then
		sysctl -q -w net.ipv6.conf.vmfar0.disable_ipv6=1 &&
		ip netns exec "$VM_FAR_NS" sysctl -q -w net.ipv6.conf.vmfar1.disable_ipv6=1 ||
			return 1
	fi
	ip addr add "$VM_FAR_GW/24" dev vmfar0 && ip link set vmfar0 up || return 1
	ip -n "$VM_FAR_NS" addr add "$VM_FAR_ADDR/24" dev vmfar1 &&
	ip -n "$VM_FAR_NS" link set vmfar1 up &&
	ip -n "$VM_FAR_NS" link set lo up &&
	ip -n "$VM_FAR_NS" route add default via "$VM_FAR_GW" || return 1
	# routed: without the microVM's table, its packets would get there
	sysctl -q -w net.ipv4.ip_forward=1 || return 1
	mkdir -p "$TRASH_DIRECTORY/srv" || return 1
	rm -f "$TRASH_DIRECTORY/srv/far.port"
	ip netns exec "$VM_FAR_NS" python3 "$top_srcdir/t/helpers/echo.py" \
	    --bind "$VM_FAR_ADDR" --port-file "$TRASH_DIRECTORY/srv/far.port" \
	    --mode banner far-host </dev/null >>"$TRASH_DIRECTORY/srv/far.log" 2>&1 &
	test_vm_far_pid_=$!
	wait_until 10 test -s "$TRASH_DIRECTORY/srv/far.port" || return 1
	read -r VM_FAR_PORT <"$TRASH_DIRECTORY/srv/far.port" || return 1
	export VM_FAR_PORT
}

vm_leftovers () {
	ip -o link show 2>/dev/null | awk -F': ' '$2 ~ /^intvm/ { print "tap " $2 }'
	nft list tables 2>/dev/null | awk '$3 ~ /^intutic_vm_/ { print "table " $3 }'
	if test -d "$INTUTIC_VM_RUNDIR"; then
		for test_vm_d_ in "$INTUTIC_VM_RUNDIR"/run-*; do
			test -e "$test_vm_d_" && printf 'run directory %s\n' "$test_vm_d_"
		done
	fi
	for test_vm_p_ in /proc/[0-9]*; do
		test -r "$test_vm_p_/cmdline" || continue
		tr '\0' ' ' <"$test_vm_p_/cmdline" 2>/dev/null |
		    grep -qF -- "$INTUTIC_VM_RUNDIR/" &&
		    printf 'process %s\n' "${test_vm_p_#/proc/}"
	done
	return 0
}
