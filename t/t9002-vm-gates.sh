#!/bin/sh
test_description='intutic exec --sandbox=firecracker|qemu: every health gate refuses with its own line and code before anything is made; the dry run shows the firecracker configuration (checked against firecracker'"'"'s schema), the qemu command line and the host'"'"'s table, and makes nothing'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
. "$top_srcdir/t/lib-vm.sh"
test_isolate_netns
test_require_proxy ssh-keygen mkfs.ext4 nft

test_exec_env
INTUTIC_VM_RUNDIR=$TRASH_DIRECTORY/vmrun
export INTUTIC_VM_RUNDIR

# A usable /dev/kvm: the KVM gates run with it hidden (vmx_nokvm).
if vm_kvm_usable; then
	test_set_prereq KVM
fi

# vmx ARGS...: intutic exec with the test's proxy; stdout in out, stderr in
# err, the status in rc.
vmx () {
	rc=0
	timeout -k 5 60 "$INTUTIC" exec --state-dir "$PROXY_DIR/state" \
		"$@" >out 2>err || rc=$?
}

# vmx_nokvm ARGS...: vmx as on a host without a usable /dev/kvm.  On one
# that has it, in a mount namespace of its own where /dev/kvm is /dev/null
# (it opens, and answers no KVM ioctl), so the gate is tested everywhere.
vmx_nokvm () {
	test_have_prereq KVM || {
		vmx "$@"
		return
	}
	rc=0
	timeout -k 5 60 unshare -m sh -c \
		'mount --bind /dev/null /dev/kvm && exec "$@"' sh \
		"$INTUTIC" exec --state-dir "$PROXY_DIR/state" "$@" \
		>out 2>err || rc=$?
}

# Nothing of a microVM run exists: no tap, no table, no run directory, no
# run registered with the proxy since audit_mark.
nothing_made () {
	! ip -o link show | grep -q ": intvm" &&
	! nft list tables | grep -q intutic_vm_ &&
	! ls "$INTUTIC_VM_RUNDIR"/run-* >/dev/null 2>&1 &&
	audit_since 0 &&
	test "$(audit_count since.jsonl event=run)" = 0
}

# The guest's files: the gates look at them, the dry run names them.
guest_files () {
	mkdir -p guest &&
	head -c 4096 /dev/zero >guest/vmlinux &&
	head -c 4096 /dev/zero >guest/initrd.img &&
	head -c 65536 /dev/zero >guest/rootfs.ext4 &&
	rm -f guest/key guest/key.pub &&
	ssh-keygen -q -t ed25519 -N "" -f guest/key &&
	INTUTIC_FC_KERNEL=$PWD/guest/vmlinux &&
	INTUTIC_FC_ROOTFS=$PWD/guest/rootfs.ext4 &&
	INTUTIC_FC_GUEST_KEY=$PWD/guest/key &&
	export INTUTIC_FC_KERNEL INTUTIC_FC_ROOTFS INTUTIC_FC_GUEST_KEY
}

test_expect_success 'setup: guest files, a proxy on every address' '
	guest_files &&
	start_origin origin &&
	write_hosts hosts origin.test=127.0.0.1 &&
	fill_rules proxy-http/forward.yaml rules.yaml PORTS="$ORIGIN_PORT" &&
	start_vm_proxy rules.yaml
'

test_expect_success '--sandbox=bogus is a usage error; --sandbox-dry-run needs a microVM' '
	vmx --sandbox=bogus -- true &&
	test "$rc" = 2 &&
	test_grep "is not oci, firecracker or qemu" err &&
	vmx --sandbox --sandbox-dry-run -- true &&
	test "$rc" = 2 &&
	test_grep "needs --sandbox=firecracker or qemu" err
'

test_expect_success 'firecracker not in PATH: 125, one line, nothing made' '
	audit_mark &&
	PATH=/usr/bin:/bin vmx --sandbox=firecracker -- true &&
	test "$rc" = 125 &&
	test_grep "no firecracker in PATH; install firecracker in PATH or set INTUTIC_FC_BIN" err &&
	test_line_count = 1 err &&
	nothing_made
'

test_expect_success 'INTUTIC_FC_BIN not executable: 125' '
	INTUTIC_FC_BIN=$PWD/guest/vmlinux vmx --sandbox=firecracker -- true &&
	test "$rc" = 125 &&
	test_grep "guest/vmlinux is not executable" err
'

test_expect_success 'no kernel: 125 naming the variable' '
	audit_mark &&
	INTUTIC_FC_KERNEL= INTUTIC_FC_BIN=/bin/true vmx --sandbox=firecracker -- true &&
	test "$rc" = 125 &&
	test_grep "set INTUTIC_FC_KERNEL or INTUTIC_VM_KERNEL to the guest.s kernel" err &&
	nothing_made
'

test_expect_success 'an unreadable root image: 125 naming it' '
	INTUTIC_FC_ROOTFS=$PWD/guest/missing.ext4 INTUTIC_FC_BIN=/bin/true \
		vmx --sandbox=firecracker -- true &&
	test "$rc" = 125 &&
	test_grep "root file system image .*guest/missing.ext4 cannot be read" err
'

test_expect_success 'no INTUTIC_FC_GUEST_KEY: exit 2 before anything is set up' '
	audit_mark &&
	INTUTIC_FC_GUEST_KEY= INTUTIC_FC_BIN=/bin/true vmx --sandbox=firecracker -- true &&
	test "$rc" = 2 &&
	test_grep "INTUTIC_FC_GUEST_KEY is not set" err &&
	test_line_count = 1 err &&
	nothing_made &&
	INTUTIC_FC_GUEST_KEY= INTUTIC_QEMU_ACCEL=tcg vmx --sandbox=qemu -- true &&
	test "$rc" = 2 &&
	nothing_made
'

test_expect_success 'a guest key that is no key: exit 2' '
	INTUTIC_FC_GUEST_KEY=$PWD/guest/vmlinux INTUTIC_FC_BIN=/bin/true \
		vmx --sandbox=firecracker -- true &&
	test "$rc" = 2 &&
	test_grep "is not an ssh private key without a passphrase" err
'

test_expect_success 'firecracker without a usable /dev/kvm: 125, nothing made' '
	audit_mark &&
	INTUTIC_FC_BIN=/bin/true vmx_nokvm --sandbox=firecracker -- true &&
	test "$rc" = 125 &&
	test_grep "needs KVM, and /dev/kvm" err &&
	test_line_count = 1 err &&
	nothing_made
'

test_expect_success 'qemu without KVM: refused, no silent emulation; INTUTIC_QEMU_ACCEL=tcg is named' '
	audit_mark &&
	vmx_nokvm --sandbox=qemu -- true &&
	test "$rc" = 125 &&
	test_grep "INTUTIC_QEMU_ACCEL=tcg runs qemu emulated" err &&
	nothing_made
'

test_expect_success 'INTUTIC_QEMU_ACCEL must be kvm or tcg' '
	INTUTIC_QEMU_ACCEL=hvf vmx --sandbox=qemu -- true &&
	test "$rc" = 2 &&
	test_grep "INTUTIC_QEMU_ACCEL=.hvf.: expected kvm or tcg" err
'

test_expect_success 'a proxy on loopback only: 125 with the INTUTIC_PROXY_BIND to use' '
	mkdir -p lo-state &&
	cp "$PROXY_DIR/state/proxy.json" lo-state/ &&
	python3 -c "
import json, sys
p = sys.argv[1]
d = json.load(open(p))
d[\"bind\"] = [\"127.0.0.1\"]
json.dump(d, open(p, \"w\"))
" lo-state/proxy.json &&
	rc=0 &&
	INTUTIC_QEMU_ACCEL=tcg "$INTUTIC" exec --state-dir lo-state --sandbox=qemu \
		-- true >out 2>err || rc=$? &&
	test "$rc" = 125 &&
	test_grep "restart it with INTUTIC_PROXY_BIND=0.0.0.0" err
'

test_expect_success 'a microVM subnet that overlaps the host: 125 naming what it overlaps; a malformed one: 2' '
	INTUTIC_VM_SUBNET=127.0.0.0/8 INTUTIC_QEMU_ACCEL=tcg vmx --sandbox=qemu -- true &&
	test "$rc" = 125 &&
	test_grep "overlaps lo.s address 127.0.0.1" err &&
	INTUTIC_VM_SUBNET=10.213.0.1/16 INTUTIC_QEMU_ACCEL=tcg vmx --sandbox=qemu -- true &&
	test "$rc" = 2 &&
	test_grep "expected an IPv4 network" err
'

test_expect_success '--sandbox-cpus: firecracker takes 1 or an even number' '
	INTUTIC_FC_BIN=/bin/true vmx --sandbox=firecracker --sandbox-cpus 3 --sandbox-dry-run -- true &&
	test "$rc" = 2 &&
	test_grep "firecracker: 1 or an even number" err
'

test_expect_success 'firecracker dry run: the configuration, valid against the schema, nothing made' '
	audit_mark &&
	INTUTIC_FC_INITRD=$PWD/guest/initrd.img \
		vmx --sandbox=firecracker --sandbox-dry-run --sandbox-memory 768m \
		--sandbox-cpus 2 -- true &&
	test "$rc" = 0 &&
	sed -n "/^# firecracker/,/^# the host/p" out | sed "1d;\$d" >vm.json &&
	python3 "$top_srcdir/t/helpers/fcconfig.py" vm.json \
		--kernel "$PWD/guest/vmlinux" --initrd "$PWD/guest/initrd.img" \
		--rundir "$INTUTIC_VM_RUNDIR" --mem 768 --vcpus 2 >check.out &&
	test_grep "^ok" check.out &&
	# no vsock device: it is in no network namespace
	test_grep -v vsock vm.json &&
	nothing_made
'

test_expect_success 'firecracker dry run: the root drive is a copy in the run directory, never the operator image' '
	python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))
root = [d for d in c[\"drives\"] if d[\"is_root_device\"]][0]
assert root[\"path_on_host\"] != sys.argv[2], root
assert root[\"path_on_host\"].startswith(sys.argv[3] + \"/run-\"), root
" vm.json "$INTUTIC_FC_ROOTFS" "$INTUTIC_VM_RUNDIR"
'

test_expect_success 'the schema check fails on a configuration that breaks it' '
	python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))
del c[\"boot-source\"][\"kernel_image_path\"]
c[\"machine-config\"][\"vcpu_count\"] = 0
c[\"drives\"][0][\"bogus\"] = 1
json.dump(c, open(\"bad.json\", \"w\"))
" vm.json &&
	test_must_fail python3 "$top_srcdir/t/helpers/fcconfig.py" bad.json >bad.out &&
	test_grep "kernel_image_path" bad.out &&
	test_grep "vcpu_count" bad.out &&
	test_grep "bogus" bad.out
'

test_expect_success 'dry run: the host table lets the tap reach the proxy port only, drops and counts the rest' '
	sed -n "/^# the host.s table:/,\$p" out | sed 1d >table.txt &&
	tap=$(sed -n "s/^# run directory .*, tap \(intvm[0-9a-f]*\) .*/\1/p" out) &&
	guest=$(sed -n "s/^# run directory .*, guest \([0-9.]*\)\$/\1/p" out) &&
	test -n "$tap" &&
	test -n "$guest" &&
	test_grep "^table inet intutic_vm_[0-9a-f]* {" table.txt &&
	test_grep "type filter hook input priority filter; policy accept;" table.txt &&
	test_grep "type filter hook forward priority filter; policy accept;" table.txt &&
	test_grep "iifname \"$tap\" ip daddr 10\.213\.[0-9.]* tcp dport $PROXY_PORT accept" table.txt &&
	test_grep "iifname \"$tap\" counter name \"vm_input_dropped\" drop" table.txt &&
	test_grep "iifname \"$tap\" counter name \"vm_forward_dropped\" drop" table.txt &&
	test_grep "oifname \"$tap\" counter name \"vm_forward_dropped\" drop" table.txt
'

test_expect_success 'dry run: the tap'"'"'s TCP to ports 80, 443 and those the rules allow goes to the transparent listener, its DNS to the filter, both let in' '
	python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
print(s[\"transparent\"][0].rsplit(\":\", 1)[1], s[\"dns\"][0].rsplit(\":\", 1)[1])
" "$PROXY_DIR/state/proxy.json" >ports &&
	read tport dport <ports &&
	test_grep "type nat hook prerouting priority -100; policy accept;" table.txt &&
	for p in 80 443 "$ORIGIN_PORT"; do
		test_grep "iifname \"$tap\" meta nfproto ipv4 tcp dport $p dnat ip to 10\.213\.[0-9.]*:$tport comment" table.txt || return 1
	done &&
	for p in udp tcp; do
		test_grep "iifname \"$tap\" meta nfproto ipv4 $p dport 53 dnat ip to 10\.213\.[0-9.]*:$dport comment" table.txt &&
		test_grep "iifname \"$tap\" ip daddr 10\.213\.[0-9.]* $p dport $dport accept" table.txt || return 1
	done &&
	test_grep "iifname \"$tap\" ip daddr 10\.213\.[0-9.]* tcp dport $tport accept" table.txt
'

test_expect_success 'a proxy without its transparent listener or DNS filter on every address: 125 naming the options to add' '
	mkdir -p nt-state &&
	python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
d[\"transparent\"] = []
json.dump(d, open(sys.argv[2], \"w\"))
" "$PROXY_DIR/state/proxy.json" nt-state/proxy.json &&
	rc=0 &&
	INTUTIC_QEMU_ACCEL=tcg "$INTUTIC" exec --state-dir nt-state --sandbox=qemu \
		-- true >out 2>err || rc=$? &&
	test "$rc" = 125 &&
	test_grep -F "serves no transparent listener on every address" err &&
	test_grep -F "restart it with --transparent-bind 0.0.0.0:3129 (" err &&
	test -z "$(vm_leftovers)"
'

test_expect_success 'dry run: before routing, only the guest'"'"'s own address and MAC pass the tap (netdev ingress), in words' '
	mac=$(python3 -c "
import json, sys
print(json.load(open(sys.argv[1]))[\"network-interfaces\"][0][\"guest_mac\"])
" vm.json) &&
	case $mac in 02:49:[0-9a-f][0-9a-f]:[0-9a-f][0-9a-f]:[0-9a-f][0-9a-f]:[0-9a-f][0-9a-f]) ;; *) false ;; esac &&
	test_grep "^table netdev intutic_vm_[0-9a-f]* {" table.txt &&
	test_grep "type filter hook ingress device \"$tap\" priority filter; policy accept;" table.txt &&
	test_grep -F "meta protocol ip ether saddr $mac ip saddr $guest accept comment \"IPv4 from the guest ($guest, MAC $mac)" table.txt &&
	test_grep "meta protocol arp ether saddr $mac arp .*arp saddr ether $mac arp saddr ip $guest accept comment \"ARP from the guest, for its own address and MAC\"" table.txt &&
	test_grep -F "meta protocol ip counter name \"vm_spoofed_dropped\" drop comment \"IPv4 from another address or MAC (a forged source): dropped before routing, never answered\"" table.txt &&
	test_grep "meta protocol arp counter name \"vm_spoofed_dropped\" drop comment \"ARP claiming another address or MAC: dropped\"" table.txt &&
	test_grep -F "counter name \"vm_other_dropped\" drop comment \"everything else (IPv6, other protocols): dropped\"" table.txt
'

test_expect_success 'qemu dry run: microvm, its code cache bounded (tb-size), the image behind a snapshot, the run disk read-only, the tap, ip= on the command line' '
	audit_mark &&
	INTUTIC_QEMU_ACCEL=tcg INTUTIC_VM_INITRD=$PWD/guest/initrd.img \
		vmx --sandbox=qemu --sandbox-dry-run -- true &&
	test "$rc" = 0 &&
	sed -n "/^# the hypervisor:/{n;p}" out >argv.txt &&
	test_grep -- "-M microvm -accel tcg,tb-size=64 " argv.txt &&
	test_grep -- "-drive id=root,file=$INTUTIC_FC_ROOTFS,format=raw,if=none,snapshot=on" argv.txt &&
	test_grep -- "config.ext4,format=raw,if=none,readonly=on" argv.txt &&
	test_grep -- "-netdev tap,id=net0,ifname=intvm[0-9a-f]*,script=no" argv.txt &&
	test_grep -- "ip=10\.213\.[0-9.]*::10\.213\.[0-9.]*:255\.255\.255\.252::eth0:off" argv.txt &&
	test_grep -- "tsc_early_khz=" argv.txt &&
	# no device but the disks and the NIC: no vsock (not in any network
	# namespace, unseen by the tap'"'"'s table), no defaults
	test_grep -- "-nodefaults " argv.txt &&
	tr " " "\n" <argv.txt | sed -n "/^-device\$/{n;p}" | sed "s/,.*//" | sort -u >devices &&
	printf "%s\n" virtio-blk-device virtio-net-device >expect &&
	test_cmp expect devices &&
	test_grep -v vsock argv.txt &&
	nothing_made
'

test_done
