#!/bin/sh
test_description='enforce: the host firewall (nftables table inet intutic), in namespaces'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"

# This script's namespace is "host": the proxy runs there as PROXY_UID, the
# test's client as USER_UID.  "outside" is a second namespace the script
# makes, joined by a veth pair; only its addresses (and loopback) are ever
# targets.  `intutic enforce` and nft run only in "host".
test_require_root "a second named namespace, setpriv to other users, the host's conntrack"
test_isolate_netns
test_require_proxy curl nft setpriv capsh
PY=/usr/bin/python3	# the users the test runs as can run it
PROXY_UID=65534		# nobody
USER_UID=4242		# no such user: a plain uid, not the proxy's
HOST4=10.200.0.1 OUT4=10.200.0.2 HOST6=fd00:200::1 OUT6=fd00:200::2
OUTSIDE=intutic-t8001-outside-$$
FAST_MS=1000		# a rejection answers within this

# outside_teardown: stop what runs in "outside" (only the servers this
# script started, by PID), then delete it.
OUTSIDE_PIDS=
outside_teardown () {
	for p in $OUTSIDE_PIDS; do
		test_stop_child_ "$p"
	done
	ip netns delete "$OUTSIDE" 2>/dev/null
	return 0
}

# start_outside NAME SCRIPT ARGS...: t/helpers/SCRIPT in "outside";
# exports <NAME>_PORT.
start_outside () {
	n=$1 s=$2
	shift 2
	mkdir -p srv && rm -f "srv/$n.port" &&
	ip netns exec "$OUTSIDE" python3 "$top_srcdir/t/helpers/$s" \
		--port-file "srv/$n.port" "$@" </dev/null >>"srv/$n.log" 2>&1 &
	OUTSIDE_PIDS="$OUTSIDE_PIDS $!"
	test_wait_for_file "srv/$n.port" 10 &&
	eval "$(test_var_name_ "$n")_PORT=\$(cat srv/\$n.port)"
}

# as UID CMD...: CMD with that uid and gid, no groups.
as () {
	u=$1
	shift
	setpriv --reuid="$u" --regid="$u" --clear-groups -- "$@"
}

# as_member UID CMD...: as, and a member of the proxy's control group.
as_member () {
	u=$1
	shift
	setpriv --reuid="$u" --regid="$u" --groups="$PROXY_UID" -- "$@"
}

# probe UID tcp|udp ADDR PORT: as UID, one connection (tcp), or one
# datagram and its answer (udp: a DNS query), bounded by 5 s; prints "ok
# MS" or "fail MS", exits 0 when it got through.
PROBE_PY='
import socket, sys, time
proto, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
t = time.monotonic()
try:
    if proto == "tcp":
        s = socket.create_connection((host, port), timeout=5)
    else:
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.settimeout(5)
        s.connect((host, port))
        s.send(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x01x\x04test\x00\x00\x01\x00\x01")
        s.recv(512)
    ok = True
except OSError as e:
    ok = False
    sys.stderr.write("%s\n" % e)
print("%s %d" % ("ok" if ok else "fail", (time.monotonic() - t) * 1000))
sys.exit(0 if ok else 1)
'
probe () {
	u=$1
	shift
	as "$u" "$PY" -c "$PROBE_PY" "$@"
}

# fails_fast UID tcp|udp ADDR PORT: the probe fails, within FAST_MS.
fails_fast () {
	! probe "$@" >probe.out &&
	read -r verdict ms <probe.out &&
	test_diag "$* : $verdict in $ms ms" &&
	test "$ms" -lt "$FAST_MS"
}

# start_proxy_as UID: intutic-proxy as UID on HOST4, port 0, its control
# socket open to the group of the same number (whose members may register
# runs: as_member); PPORT, PROXY_PID_.
start_proxy_as () {
	# setpriv itself, not the function as: $! must be the proxy
	setpriv --reuid="$1" --regid="$1" --clear-groups -- \
		"$top_builddir/proxy/intutic-proxy" --rules "$PWD/rules.yaml" \
		--bind "$HOST4" --port 0 --state-dir "$PWD/pstate" \
		--control-group "$1" \
		--resolv-conf "$PWD/resolv.conf" --hosts "$PWD/hosts" \
		</dev/null >>proxy.log 2>&1 &
	PROXY_PID_=$!
	test_atexit "test_stop_child_ $PROXY_PID_" &&
	test_wait_for_file pstate/proxy.json 10 &&
	PPORT=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))[\"port\"])" pstate/proxy.json)
}

# A client with flows opened before `enforce on`: a TCP connection and a
# UDP flow to the witness, each carrying "[TAG]before-*" (and answered: both
# are established for connection tracking); then, once FILE.go exists (at
# most 60 s), "[TAG]after-*" on the same sockets.  Its local ports go to
# FILE.ports ("TCP UDP"), what each send and read did to FILE.out; the
# witness's log is what counts.
FLOWS_PY='
import os, socket, sys, time
host, port, base = sys.argv[1], int(sys.argv[2]), sys.argv[3]
tag = sys.argv[4].encode() if len(sys.argv) > 4 else b""
out = open(base + ".out", "w")
def say(s):
    out.write(s + "\n"); out.flush()
t = socket.create_connection((host, port), timeout=5)
t.sendall(tag + b"before-tcp"); say("tcp before: %r" % t.recv(64))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(5); u.connect((host, port))
u.send(tag + b"before-udp"); say("udp before: %r" % u.recv(64))
open(base + ".ports", "w").write("%d %d\n" % (t.getsockname()[1], u.getsockname()[1]))
open(base + ".ready", "w").write("ready\n")
end = time.monotonic() + 60
while not os.path.exists(base + ".go") and time.monotonic() < end:
    time.sleep(0.1)
for name, s, data in (("tcp", t, tag + b"after-tcp"), ("udp", u, tag + b"after-udp")):
    s.settimeout(2)
    for i in range(3):
        try:
            s.send(data); say("%s after: sent" % name)
            say("%s after: %r" % (name, s.recv(64)))
        except OSError as e:
            say("%s after: %s" % (name, e))
        time.sleep(0.2)
'

# dns_from UID PORT TEXT: as UID, one datagram from local port PORT to the
# witness on OUT4:53 (a name server's port); "answered" or the error.
DNS_FROM_PY='
import socket, sys
port, text, to = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", port)); s.settimeout(2)
try:
    s.sendto(text, (to, 53)); s.recv(64); print("answered")
except OSError as e:
    print(e)
'
dns_from () {
	as "$1" "$PY" -c "$DNS_FROM_PY" "$2" "$3" "$OUT4"
}

# tracked PROTO PORT: how many flows connection tracking holds from local
# port PORT to the witness (its /proc/net/nf_conntrack lines).
tracked () {
	grep -c " $1 .* src=$HOST4 dst=$OUT4 sport=$2 dport=$WITNESS_PORT " \
		/proc/net/nf_conntrack
}

norm_counters () {
	sed 's/packets [0-9]* bytes [0-9]*/packets 0 bytes 0/' "$1"
}

test_expect_success 'setup: outside, veth, servers, the proxy as its own user' '
	test_atexit outside_teardown &&
	ip netns add "$OUTSIDE" &&
	ip link add veth-host type veth peer name veth-out netns "$OUTSIDE" &&
	ip addr add "$HOST4/24" dev veth-host &&
	ip -6 addr add "$HOST6/64" dev veth-host nodad &&
	ip link set veth-host up &&
	ip netns exec "$OUTSIDE" ip link set lo up &&
	ip netns exec "$OUTSIDE" ip addr add "$OUT4/24" dev veth-out &&
	ip netns exec "$OUTSIDE" ip -6 addr add "$OUT6/64" dev veth-out nodad &&
	ip netns exec "$OUTSIDE" ip link set veth-out up &&
	start_outside origin origin.py --bind "$OUT4" --name origin.test &&
	start_outside echo6 echo.py --bind "$OUT6" &&
	start_outside udp dnsd.py --bind "$OUT4" &&
	start_outside witness witness.py --bind "$OUT4" &&
	start_outside witness53 witness.py --bind "$OUT4" --port 53 &&
	write_hosts hosts origin.test="$OUT4" &&
	printf "%s\n" "version: 1" "ports: [$ORIGIN_PORT]" "allow:" \
		"  - origin.test" "  - \"10.200.0.0/24\"" >rules.yaml &&
	write_resolv_conf &&
	mkdir pstate && chown "$PROXY_UID" pstate &&
	start_proxy_as "$PROXY_UID" &&
	test_diag "proxy pid $PROXY_PID_ uid $PROXY_UID on $HOST4:$PPORT" &&
	ip -6 route get "$OUT6" >/dev/null
'

test_expect_success 'without enforce the test user gets out directly' '
	probe "$USER_UID" tcp "$OUT4" "$ORIGIN_PORT" &&
	probe "$USER_UID" tcp "$OUT6" "$ECHO6_PORT" &&
	probe "$USER_UID" udp "$OUT4" "$UDP_PORT"
'

test_expect_success 'a foreign table, and the ruleset before' '
	nft add table inet foreign &&
	nft add chain inet foreign c "{ type filter hook output priority 10; policy accept; }" &&
	nft add rule inet foreign c tcp dport 9 counter accept &&
	# connection tracking on, as docker, podman or firewalld have it
	nft add rule inet foreign c ct state established &&
	nft list ruleset >before.rules
'

test_expect_success 'flows of the test user opened before enforce: TCP and UDP carry data, tracked' '
	mkdir flows && chown "$USER_UID" flows || return 1
	as "$USER_UID" "$PY" -c "$FLOWS_PY" "$OUT4" "$WITNESS_PORT" "$PWD/flows/f" \
		</dev/null >flows.log 2>&1 &
	FLOWS_PID=$!
	test_atexit "touch $PWD/flows/f.go; test_stop_child_ $FLOWS_PID" &&
	test_wait_for_file flows/f.ready 10 &&
	test_grep "^tcp before: b.before-tcp.\$" flows/f.out &&
	test_grep "^udp before: b.ack:before-udp.\$" flows/f.out &&
	test_grep "data=before-tcp\$" srv/witness.log &&
	test_grep "data=before-udp\$" srv/witness.log &&
	read -r TPORT UPORT <flows/f.ports &&
	test "$(tracked tcp "$TPORT")" = 1 &&
	test "$(tracked udp "$UPORT")" = 1
'

test_expect_success 'flows of the proxy user opened before enforce: tracked as well' '
	mkdir pflows && chown "$PROXY_UID" pflows || return 1
	as "$PROXY_UID" "$PY" -c "$FLOWS_PY" "$OUT4" "$WITNESS_PORT" "$PWD/pflows/p" proxy- \
		</dev/null >pflows.log 2>&1 &
	PFLOWS_PID=$!
	test_atexit "touch $PWD/pflows/p.go; test_stop_child_ $PFLOWS_PID" &&
	test_wait_for_file pflows/p.ready 10 &&
	test_grep "data=proxy-before-tcp\$" srv/witness.log &&
	read -r PTPORT PUPORT <pflows/p.ports &&
	test "$(tracked tcp "$PTPORT")" = 1 &&
	test "$(tracked udp "$PUPORT")" = 1
'

test_expect_success 'doctor, before enforce: the tracked flows enforce on would cut, the test user'"'"'s first' '
	{ "$INTUTIC" doctor --state-dir "$PWD/pstate" >doc.out || :; } &&
	grep "^conntrack " doc.out >line &&
	cat line &&
	test_grep "^conntrack +warn +[0-9]+ of [0-9]+ tracked flows would outlive .intutic enforce on. were they not cut \\(sent by users other than the proxy.s, uid $PROXY_UID, or with no socket left\\): uid $USER_UID " line &&
	test_grep -F "uid $USER_UID tcp $HOST4:$TPORT > $OUT4:$WITNESS_PORT" line &&
	test_grep -F "uid $USER_UID udp $HOST4:$UPORT > $OUT4:$WITNESS_PORT" line &&
	test_grep -v -F "$HOST4:$PTPORT >" line &&
	test_grep "; fix: .intutic enforce on. cuts them\$" line
'

test_expect_success 'status while off: exit 3' '
	test_expect_code 3 "$INTUTIC" enforce status >st.out &&
	test_grep "^enforce: off" st.out
'

test_expect_success 'no proxy and no --proxy-user: 125, nothing installed' '
	mkdir empty &&
	test_expect_code 125 "$INTUTIC" enforce on --state-dir "$PWD/empty" 2>err &&
	test_grep "does not run" err &&
	nft list ruleset >now.rules && test_cmp before.rules now.rules
'

test_expect_success 'proxy user root: 125, nothing installed' '
	test_expect_code 125 "$INTUTIC" enforce on --proxy-user root --state-dir "$PWD/empty" 2>err &&
	test_grep "root" err &&
	nft list ruleset >now.rules && test_cmp before.rules now.rules
'

test_expect_success 'no CAP_NET_ADMIN: 125, nothing installed' '
	test_expect_code 125 capsh --drop=cap_net_admin -- -c "exec \"\$0\" enforce on --state-dir \"\$1\"" "$INTUTIC" "$PWD/pstate" 2>err &&
	test_grep "CAP_NET_ADMIN" err &&
	nft list ruleset >now.rules && test_cmp before.rules now.rules
'

test_expect_success 'on: the owner of the running proxy, its address; --dry-run is what gets installed' '
	"$INTUTIC" enforce on --state-dir "$PWD/pstate" --dry-run >dry.nft &&
	test_grep "meta skuid $PROXY_UID accept" dry.nft &&
	test_grep "ip daddr $HOST4 tcp dport $PPORT accept" dry.nft &&
	nft list ruleset >now.rules && test_cmp before.rules now.rules &&
	"$INTUTIC" enforce on --state-dir "$PWD/pstate" >on.out &&
	nft list table inet intutic >live.nft &&
	# the counters may have counted already: only their values are set to 0
	norm_counters live.nft >live0.nft &&
	test_cmp dry.nft live0.nft &&
	nft list table inet foreign >foreign.now &&
	sed -n "/^table inet foreign/,/^}/p" before.rules >foreign.before &&
	test_cmp foreign.before foreign.now
'

test_expect_success 'on: the test user'"'"'s tracked flows are cut, the proxy user'"'"'s kept (as /proc/net/nf_conntrack shows)' '
	cat on.out &&
	test_grep "^intutic: enforce on: [1-9][0-9]* of [0-9]+ tracked flows cut \\(the table would not let them out\\):\$" on.out &&
	test_grep -F "  uid $USER_UID tcp $HOST4:$TPORT > $OUT4:$WITNESS_PORT" on.out &&
	test_grep -F "  uid $USER_UID udp $HOST4:$UPORT > $OUT4:$WITNESS_PORT" on.out &&
	test_grep -v -F "$HOST4:$PTPORT >" on.out &&
	test "$(tracked tcp "$TPORT")" = 0 &&
	test "$(tracked udp "$UPORT")" = 0 &&
	test "$(tracked tcp "$PTPORT")" = 1 &&
	test "$(tracked udp "$PUPORT")" = 1
'

test_expect_success 'doctor while on: no tracked flow of another user left' '
	{ "$INTUTIC" doctor --state-dir "$PWD/pstate" >doc.out || :; } &&
	test_grep "^enforce +ok +active \\(table inet intutic\\)" doc.out &&
	test_grep "^conntrack +ok +[0-9]+ tracked flows, none that .intutic enforce on. does not let out\$" doc.out
'

test_expect_success 'the record enforce on left: root'"'"'s, readable; another user'"'"'s doctor and exec know the table is on' '
	rec=$(ls /run/intutic-enforce/net-*.json | while read -r f; do
		grep -q "\"uid\": $PROXY_UID," "$f" && echo "$f"; done | head -n 1) &&
	test -n "$rec" && cat "$rec" &&
	test "$(stat -c "%u %a" "$rec")" = "0 644" &&
	test_grep "\"proxy\": \\[\"$HOST4:$PPORT\"\\]" "$rec" &&
	as "$USER_UID" "$INTUTIC" doctor --state-dir "$PWD/pstate" >udoc.out ;
	cat udoc.out &&
	test_grep "^enforce +ok +active, as .intutic enforce on. recorded at .* \\(nftables not asked: that needs root\\)\$" udoc.out &&
	test_grep "^conntrack +warn +cannot tell " udoc.out &&
	as_member "$USER_UID" env HOME="$PWD/uhome" "$INTUTIC" exec --state-dir "$PWD/pstate" -- true 2>uexec.err &&
	cat uexec.err &&
	test_grep -v "host firewall" uexec.err
'

test_expect_success 'a record others could have written is not believed' '
	rec=$(ls /run/intutic-enforce/net-*.json | while read -r f; do
		grep -q "\"uid\": $PROXY_UID," "$f" && echo "$f"; done | head -n 1) &&
	chmod 666 "$rec" &&
	as "$USER_UID" "$INTUTIC" doctor --state-dir "$PWD/pstate" >udoc.out ;
	chmod 644 "$rec" &&
	test_grep "^enforce +warn +cannot tell whether .intutic enforce. is active: enforce record .* is not to be trusted: it must belong to root and be writable by root only \\(owner uid 0, mode 0666\\); fix: run intutic doctor as root\$" udoc.out
'

test_expect_success 'status while on: exit 0, the rules in words, the counters' '
	"$INTUTIC" enforce status >st.out &&
	test_grep "^enforce: on" st.out &&
	test_grep "the proxy.s user \\(uid $PROXY_UID\\)" st.out &&
	test_grep "the proxy at $HOST4:$PPORT" st.out &&
	test_grep "reject_ipv4_tcp +[0-9]+ packets" st.out
'

test_expect_success 'the test user: direct TCP, UDP, IPv6 to outside fail at once, counted' '
	fails_fast "$USER_UID" tcp "$OUT4" "$ORIGIN_PORT" &&
	fails_fast "$USER_UID" udp "$OUT4" "$UDP_PORT" &&
	fails_fast "$USER_UID" tcp "$OUT6" "$ECHO6_PORT" &&
	fails_fast 0 tcp "$OUT4" "$ORIGIN_PORT" &&
	"$INTUTIC" enforce status >st.out &&
	test_grep "reject_ipv4_tcp +[1-9][0-9]* packets" st.out &&
	test_grep "reject_ipv4_udp +[1-9][0-9]* packets" st.out &&
	test_grep "reject_ipv6_tcp +[1-9][0-9]* packets" st.out
'

test_expect_success 'the test user: DNS is rejected at once' '
	fails_fast "$USER_UID" udp "$OUT4" 53 &&
	fails_fast "$USER_UID" tcp "$OUT4" 53 &&
	"$INTUTIC" enforce status >st.out &&
	test_grep "dns_rejected +[1-9][0-9]* packets" st.out
'

test_expect_success 'the test user: raw and packet sockets refused; a namespace of its own, nft in it, reaches nothing' '
	test_must_fail as "$USER_UID" "$PY" -c "import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)" 2>raw.err &&
	test_grep "PermissionError" raw.err &&
	test_must_fail as "$USER_UID" "$PY" -c "import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)" 2>raw.err &&
	test_grep "PermissionError" raw.err &&
	as "$USER_UID" unshare -rn sh -c "
		nft add table ip mine && nft add chain ip mine out \"{ type filter hook output priority 0; policy accept; }\" &&
		ip link set lo up && echo nft-ok
		exec $PY -c \"\$1\" udp $OUT4 $WITNESS_PORT" sh "$PROBE_PY" >ns.out 2>ns.err;
	cat ns.out ns.err &&
	test_grep "^nft-ok\$" ns.out &&
	test_grep "^fail " ns.out &&
	test_grep "Network is unreachable" ns.err
'

test_expect_success 'the flows opened before: nothing more reaches the outside (judged by its witness)' '
	touch flows/f.go &&
	wait "$FLOWS_PID"
	cat flows/f.out &&
	test "$(grep -c " after: " flows/f.out)" -ge 2 &&
	test_grep -v "data=after-" srv/witness.log &&
	test_grep -v "after: b.ack:after-udp" flows/f.out &&
	test_grep -v "after: b.after-tcp" flows/f.out
'

test_expect_success 'the proxy user'"'"'s flows opened before: they go on' '
	touch pflows/p.go &&
	wait "$PFLOWS_PID"
	cat pflows/p.out &&
	test_grep "data=proxy-after-tcp\$" srv/witness.log &&
	test_grep "data=proxy-after-udp\$" srv/witness.log
'

test_expect_success 'a UDP port the proxy'"'"'s user used, taken by the test user: its tracked flow carries nothing more' '
	dport=$(free_port) &&
	dns_from "$PROXY_UID" "$dport" proxy-query >dns1.out &&
	echo answered >expect &&
	test_cmp expect dns1.out &&
	test_grep "data=proxy-query\$" srv/witness53.log &&
	dns_from "$USER_UID" "$dport" exfil-query >dns2.out &&
	test_grep -v "^answered" dns2.out &&
	test_grep -v "data=exfil-query" srv/witness53.log
'

test_expect_success 'the test user: through the proxy, to an allowed name' '
	as "$USER_UID" curl -sS --max-time 10 --proxy "http://$HOST4:$PPORT" \
		"http://origin.test:$ORIGIN_PORT/" >got &&
	echo "hello from origin.test:$ORIGIN_PORT" >expect &&
	test_cmp expect got
'

test_expect_success 'the proxy user gets out directly (IPv4, IPv6, UDP)' '
	probe "$PROXY_UID" tcp "$OUT4" "$ORIGIN_PORT" &&
	probe "$PROXY_UID" tcp "$OUT6" "$ECHO6_PORT" &&
	probe "$PROXY_UID" udp "$OUT4" "$UDP_PORT"
'

test_expect_success 'on twice: replaced, the same rules, no error' '
	"$INTUTIC" enforce on --state-dir "$PWD/pstate" &&
	nft list table inet intutic >live2.nft &&
	norm_counters live2.nft >live20.nft &&
	test_cmp dry.nft live20.nft &&
	test "$(nft list ruleset | grep -c "^table inet intutic")" = 1
'

test_expect_success '--allow and --dns-to: the test user reaches the network, DNS goes to the filter' '
	"$INTUTIC" enforce on --state-dir "$PWD/pstate" --allow "$OUT4/32:$UDP_PORT" \
		--allow "[fd00:200::/64]:$ECHO6_PORT" --dns-to "127.0.0.1:$DNS_PORT" --dry-run >dry2.nft &&
	"$INTUTIC" enforce on --state-dir "$PWD/pstate" --allow "$OUT4/32:$UDP_PORT" \
		--allow "[fd00:200::/64]:$ECHO6_PORT" --dns-to "127.0.0.1:$DNS_PORT" &&
	nft list table inet intutic >live3.nft &&
	norm_counters live3.nft >live30.nft &&
	test_cmp dry2.nft live30.nft &&
	probe "$USER_UID" udp "$OUT4" "$UDP_PORT" &&
	probe "$USER_UID" tcp "$OUT6" "$ECHO6_PORT" &&
	fails_fast "$USER_UID" tcp "$OUT4" "$ORIGIN_PORT" &&
	: >"$DNS_QUERY_LOG" &&
	as "$USER_UID" "$PY" "$top_srcdir/t/helpers/client.py" dns --timeout 5 \
		--server "$OUT4:53" redirected.test A >dns.out &&
	test_grep "^redirected\\.test" "$DNS_QUERY_LOG"
'

test_expect_success 'off: exactly the ruleset from before; off twice' '
	"$INTUTIC" enforce off >off.out &&
	test_grep "removed" off.out &&
	nft list ruleset >now.rules && test_cmp before.rules now.rules &&
	"$INTUTIC" enforce off >off.out &&
	test_grep "was not there" off.out &&
	nft list ruleset >now.rules && test_cmp before.rules now.rules &&
	test_expect_code 3 "$INTUTIC" enforce status >st.out &&
	probe "$USER_UID" tcp "$OUT4" "$ORIGIN_PORT" &&
	as "$USER_UID" "$INTUTIC" doctor --state-dir "$PWD/pstate" >udoc.out ;
	test_grep "^enforce +missing +not active \\(no record of .intutic enforce on. in /run/intutic-enforce\\)" udoc.out
'

test_expect_success 'cleanup: the foreign table' '
	nft delete table inet foreign
'

test_done
