#!/bin/sh
test_description='intutic exec --sandbox=qemu, a guest whose root was taken (emulated, one boot): frames with a forged source address or MAC (a TCP SYN and ACK to the proxy port, an ICMP echo, a datagram with TTL 1, a gratuitous ARP) are dropped on the tap before routing and counted, and the host sends nothing for them: the far host receives nothing, no ICMP error comes back; the tap does not route, filters reverse paths strictly and has no IPv6'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
. "$top_srcdir/t/lib-vm.sh"
vm_isolate_netns
test_require_proxy debugfs
# the guest has no compiler: the helper is built static here
printf 'int main(void) { return 0; }\n' >"$TRASH_DIRECTORY/static.c"
cc -static -o "$TRASH_DIRECTORY/static" "$TRASH_DIRECTORY/static.c" 2>/dev/null ||
	test_skip_all "needs cc -static (a C compiler and a static libc) for t/helpers/vmspoof.c"

vm_env

# The frames of vmspoof.c with a forged source: 8 attempts, 3 times each.
SPOOFED=24

# bg_said LINE-PATTERN: the background run's output has such a line (0),
# or not yet (1).
bg_said () {
	test -f bg.out && grep -q "^$1" bg.out
}

# counter TABLE-FAMILY NAME: a counter's packets in the run's table.
counter () {
	sed -n "/counter $2 {/{n;s/^[[:space:]]*packets \([0-9]*\) .*/\1/p;}" "table-$1.txt"
}

# The launcher and the sniffer, when a failed test left them running.
test_spoof_down_ () {
	for test_spoof_f_ in bg.pid sniff.pid; do
		test -s "$TRASH_DIRECTORY/$test_spoof_f_" || continue
		kill -TERM "$(cat "$TRASH_DIRECTORY/$test_spoof_f_")" 2>/dev/null
	done
	return 0
}
test_atexit test_spoof_down_

test_expect_success 'setup: the proxy on every address, the far host, a copy of the guest image with vmspoof setuid root' '
	start_origin origin &&
	vm_far_host &&
	write_hosts hosts origin.test=127.0.0.1 &&
	fill_rules proxy-http/forward.yaml rules.yaml PORTS="$ORIGIN_PORT" &&
	start_vm_proxy rules.yaml &&
	cc -static -O2 -o vmspoof "$top_srcdir/t/helpers/vmspoof.c" &&
	cp --sparse=always "$INTUTIC_VM_ROOTFS" guest.ext4 &&
	debugfs -w -R "write vmspoof /usr/local/bin/vmspoof" guest.ext4 >debugfs.out 2>&1 &&
	debugfs -w -R "set_inode_field /usr/local/bin/vmspoof mode 0104755" guest.ext4 >>debugfs.out 2>&1 &&
	debugfs -w -R "set_inode_field /usr/local/bin/vmspoof uid 0" guest.ext4 >>debugfs.out 2>&1 &&
	debugfs -R "stat /usr/local/bin/vmspoof" guest.ext4 >stat.out 2>&1 &&
	test_grep "Mode:  04755" stat.out &&
	test -z "$(vm_leftovers)"
'

test_expect_success 'in the guest, as root: every forged frame goes out on its interface' '
	rm -f far.ready &&
	ip netns exec "$VM_FAR_NS" python3 "$top_srcdir/t/helpers/sniff.py" \
		--iface vmfar1 --out far.frames --ready far.ready &
	echo $! >sniff.pid &&
	wait_until 10 test -s far.ready &&
	INTUTIC_VM_ROOTFS=$PWD/guest.ext4 &&
	( "$INTUTIC" exec \
		--state-dir "$PROXY_DIR/state" --sandbox=qemu \
		--sandbox-memory 512m --sandbox-cpus 1 -- sh -c "
		gw=\$(ip route show default | cut -d\" \" -f3)
		/usr/local/bin/vmspoof eth0 \$gw $PROXY_PORT $VM_FAR_ADDR $VM_FAR_PORT
		echo vmspoof-rc=\$?
		sleep 240" >bg.out 2>bg.err & echo $! >bg.pid; wait $!; echo $? >bg.rc ) &
	wait_until 240 bg_said vmspoof-rc= &&
	test_grep "^vmspoof-rc=0\$" bg.out &&
	test_grep "^sent syn-from-far 3\$" bg.out &&
	test_grep "^sent arp-claims-far 3\$" bg.out &&
	test_grep "^spoofed $SPOOFED\$" bg.out &&
	table=$(nft list tables | sed -n "s/^table netdev \(intutic_vm_[0-9a-f]*\)\$/\1/p") &&
	test -n "$table" &&
	nft list table netdev "$table" >table-netdev.txt &&
	nft list table inet "$table" >table-inet.txt &&
	tap=$(sed -n "s/.*hook ingress device \"\(intvm[0-9a-f]*\)\".*/\1/p" table-netdev.txt) &&
	test -n "$tap" &&
	for k in forwarding rp_filter; do
		cat "/proc/sys/net/ipv4/conf/$tap/$k" >"$k.txt" || return 1
	done &&
	cat "/proc/sys/net/ipv6/conf/$tap/disable_ipv6" >disable_ipv6.txt
'

test_expect_success 'the tap'"'"'s table dropped each forged frame before routing and counted it' '
	test "$(counter netdev vm_spoofed_dropped)" = "$SPOOFED"
'

test_expect_success 'the far host received nothing while the guest tried (no SYN-ACK, reset, echo reply, ICMP error)' '
	test_must_be_empty far.frames
'

test_expect_success 'no ICMP error came back to the guest: the tap does not route (no time-exceeded for TTL 1)' '
	test_grep "^icmp-errors 0\$" bg.out &&
	test_grep "^sent udp-ttl1-to-far 3\$" bg.out
'

test_expect_success 'the tap: no forwarding, strict reverse-path filter, no IPv6' '
	test "$(cat forwarding.txt)" = 0 &&
	test "$(cat rp_filter.txt)" = 1 &&
	test "$(cat disable_ipv6.txt)" = 1
'

test_expect_success 'SIGTERM ends the run: 143, nothing left' '
	kill -TERM "$(cat bg.pid)" &&
	wait_until 60 test -s bg.rc &&
	test "$(cat bg.rc)" = 143 &&
	test -z "$(vm_leftovers)"
'

# The far host was not spoken to before the run (not even ARP): what it
# received came from the guest's frames.  It is there, and listened:
test_expect_success 'the capture was live: a datagram from the host to the far host is in it' '
	python3 -c "
import socket, sys
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b\"x\", (sys.argv[1], 9))
" "$VM_FAR_ADDR" &&
	wait_until 10 grep -q "dst=$VM_FAR_ADDR proto=17" far.frames &&
	kill -TERM "$(cat sniff.pid)" &&
	rm -f sniff.pid
'

test_done
