#!/bin/sh
test_description='intutic exec --sandbox=qemu end to end (qemu -M microvm, emulated): the agent in a booted guest reaches an allowed origin through the proxy and gets 403 for a denied name, reaches no other host and no other port of the host, its exit status comes back; the image is never written; teardown leaves nothing, also after SIGTERM or the VM'"'"'s death, and what a killed launcher left is found and removed'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
. "$top_srcdir/t/lib-vm.sh"
vm_isolate_netns
test_require_proxy curl

vm_env

SECRET_VALUE=s3cr3t-9001-value
WEB_ADDR=198.51.100.20	# web.test: TEST-NET-2, on this namespace's loopback

# vmx ARGS... -- CMD...: intutic exec --sandbox=qemu with the test's limits;
# stdout in out, stderr in err, the status in rc.
vmx () {
	rc=0
	timeout -k 5 "$VM_RUN_SECONDS" "$INTUTIC" exec \
		--state-dir "$PROXY_DIR/state" --sandbox=qemu \
		--sandbox-memory 512m --sandbox-cpus 1 \
		"$@" >out 2>err || rc=$?
}

# agent_said FILE LINE: the background launcher's output FILE has the
# line LINE (0), or not yet (1): also when the background shell has not
# made FILE yet.
agent_said () {
	test -f "$1" || return 1
	grep -q "^$2\$" "$1" || return 1
}

# A hypervisor of a run is up (0), or not yet (1).
vm_running () {
	vm_leftovers | grep -q "^process"
}

# No process's command line holds the secret (the reader's own has it in
# its environment only).
secret_on_no_cmdline () {
	SV=$SECRET_VALUE python3 -c "
import os
v = os.environ[\"SV\"].encode()
for p in os.listdir(\"/proc\"):
    if not p.isdigit() or int(p) == os.getpid():
        continue
    try:
        c = open(\"/proc/%s/cmdline\" % p, \"rb\").read()
    except OSError:
        continue
    assert v not in c, (p, c)
"
}

# The image's identity: size, modification time, and a sum of its start.
image_id () {
	stat -c '%s %Y' "$INTUTIC_VM_ROOTFS" &&
	head -c 16777216 "$INTUTIC_VM_ROOTFS" | cksum
}

# A launcher a test left running (it failed before it ended it): ended.
test_vm_bg_down_ () {
	for test_vm_f_ in bg.pid kill.pid crash.pid; do
		test -s "$TRASH_DIRECTORY/$test_vm_f_" || continue
		test_vm_p_=$(cat "$TRASH_DIRECTORY/$test_vm_f_")
		# still the launcher this script started
		tr '\0' ' ' <"/proc/$test_vm_p_/cmdline" 2>/dev/null |
		    grep -q -- "--sandbox=qemu" && kill -TERM "$test_vm_p_" 2>/dev/null
	done
	return 0
}
test_atexit test_vm_bg_down_

test_expect_success 'setup: an origin, a service on the host, the far host, the proxy on every address' '
	start_origin origin &&
	start_echo hostsvc --bind 0.0.0.0 --mode banner host-service &&
	vm_far_host &&
	ip addr add "$WEB_ADDR/32" dev lo &&
	test_certs &&
	test_leaf_cert web web.test &&
	start_origin web --bind "$WEB_ADDR" --port 443 \
		--tls certs/web.crt certs/web.key &&
	write_hosts hosts origin.test=127.0.0.1 other.test=127.0.0.1 \
		web.test="$WEB_ADDR" &&
	fill_rules proxy-http/forward.yaml rules.yaml PORTS="$ORIGIN_PORT" &&
	sed -i "/^allow:/a\\  - web.test:443\\n  - \"$WEB_ADDR/32:443\"" rules.yaml &&
	test_grep "^  - \"$WEB_ADDR/32:443\"" rules.yaml &&
	start_vm_proxy rules.yaml &&
	image_id >image.before &&
	test -z "$(vm_leftovers)"
'

test_expect_success 'the far host and the host service answer from the host (what the guest must not reach is there)' '
	python3 -c "
import socket, sys
for host, port in ((sys.argv[1], int(sys.argv[2])), (\"127.0.0.1\", int(sys.argv[3]))):
    s = socket.create_connection((host, port), timeout=5)
    assert s.recv(64).startswith((b\"far-host\", b\"host-service\")), host
" "$VM_FAR_ADDR" "$VM_FAR_PORT" "$HOSTSVC_PORT"
'

test_expect_success 'in the guest: the origin through the proxy, 403 for a denied name, no direct way out, the secret by name' '
	audit_mark &&
	AGENT_SECRET=$SECRET_VALUE && export AGENT_SECRET &&
	vmx -e AGENT_SECRET -- sh -c "
		gw=\$(ip route show default | cut -d\" \" -f3)
		echo gw=\$gw
		curl -sS --max-time 30 http://origin.test:$ORIGIN_PORT/; echo allowed=\$?
		curl -sS --max-time 30 -o /dev/null -w \"denied=%{http_code}\n\" http://other.test:$ORIGIN_PORT/
		if timeout 5 bash -c \"exec 3<>/dev/tcp/$VM_FAR_ADDR/$VM_FAR_PORT; head -c 8 <&3\"; then
			echo FAR-REACHED; else echo far-blocked; fi
		if timeout 5 bash -c \"exec 3<>/dev/tcp/\$gw/$HOSTSVC_PORT; head -c 12 <&3\"; then
			echo HOSTPORT-REACHED; else echo hostport-blocked; fi
		echo secret=\$AGENT_SECRET
		echo run=\$INTUTIC_RUN
		echo \"G=\$GIT_SSH_COMMAND\"
		printf \"GET / HTTP/1.0\\r\\nHost: origin.test\\r\\n\\r\\n\" |
			timeout 30 /usr/local/libexec/intutic-connect origin.test $ORIGIN_PORT |
			sed -n \"s/^hello from /tunnel: hello from /p\"
		echo written >/home/agent/persisted
		exit 0" &&
	test "$rc" = 0 &&
	test_grep "^hello from origin.test:$ORIGIN_PORT\$" out &&
	test_grep "^allowed=0\$" out &&
	test_grep "^denied=403\$" out &&
	test_grep "^far-blocked\$" out &&
	test_grep -v "FAR-REACHED" out &&
	test_grep "^hostport-blocked\$" out &&
	test_grep -v "HOSTPORT-REACHED" out &&
	test_grep "^secret=$SECRET_VALUE\$" out &&
	test_grep "^G=ssh -o '\''ProxyCommand=/usr/local/libexec/intutic-connect %h %p'\''\$" out &&
	test_grep "^tunnel: hello from origin.test" out &&
	test_grep "INTUTIC_QEMU_ACCEL=tcg: the microVM is emulated" err &&
	run=$(sed -n "s/^run=//p" out) &&
	case $run in run-[0-9a-f]*) ;; *) false ;; esac &&
	audit_since 1 &&
	audit_expect 1 event=run run="$run" command=sh &&
	audit_expect 2 event=decision run="$run" host=origin.test decision=allow &&
	audit_expect 1 event=decision run="$run" host=origin.test proto=connect decision=allow &&
	audit_expect 1 event=decision run="$run" host=other.test decision=deny reason=not-allowlisted &&
	audit_expect 3 event=decision run="$run" client~"^10[.]213[.]"
'

# What a client that ignores the proxy settings does in the guest: its
# names from the resolver (the filter, through the tap's table), HTTPS to
# the address it got (the transparent listener, through the tap's table);
# a name the rules do not allow; a QUIC-style datagram to the far host.
cat >bypass.sh <<\EOF
unset HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy all_proxy
printf '%s\n' "$CA_PEM" >/tmp/ca.crt
getent hosts web.test
curl -sS --max-time 60 --cacert /tmp/ca.crt -o /dev/null \
	-w "web=%{http_code}\n" "https://web.test/?vm"
python3 - "$FAR" <<\PY
import socket, ssl, sys
ctx = ssl.create_default_context(cafile="/tmp/ca.crt")
with socket.create_connection(("web.test", 443), timeout=60) as s:
    with ctx.wrap_socket(s, server_hostname="web.test") as t:
        t.sendall(b"GET /?vmpy HTTP/1.1\r\nHost: web.test\r\nConnection: close\r\n\r\n")
        print("py " + t.recv(64).split(b"\r\n")[0].decode())
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(3):
    u.sendto(b"\xc0quic-initial", (sys.argv[1], 443))
print("quic-sent")
PY
NODE_EXTRA_CA_CERTS=/tmp/ca.crt node -e '
fetch("https://web.test/?vmfetch").then(r => console.log("fetch " + r.status))
  .catch(e => console.log("fetch failed: " + (e.cause || e)));'
node -e '
require("https").get("https://web.test/?vmget", { ca: require("fs").readFileSync("/tmp/ca.crt") },
  r => { console.log("get " + r.statusCode); r.resume(); })
  .on("error", e => console.log("get failed: " + e));'
getent hosts secret-c2VjcmV0.other.test || echo denied-name-refused
exit 0
EOF

# start_quic_sink: a UDP server on the far host's port 443 (what a QUIC
# client would send to), for as long as a run lasts: each datagram it gets
# is a line of quic.log.
start_quic_sink () {
	rm -f quic.ready &&
	: >quic.log || return 1
	# alone, not after &&: $! is then the server, not a subshell
	ip netns exec "$VM_FAR_NS" python3 -c "
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 443))
s.settimeout(1.0)
open(sys.argv[4], \"w\").write(\"ready\\n\")
end = time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    try:
        d, a = s.recvfrom(2048)
    except socket.timeout:
        continue
    open(sys.argv[2], \"a\").write(\"%s %d\\n\" % (a[0], len(d)))
" "$VM_FAR_ADDR" quic.log "$VM_RUN_SECONDS" quic.ready </dev/null >/dev/null 2>&1 &
	test_quic_pid_=$!
	test_atexit "test_stop_child_ $test_quic_pid_" &&
	test_wait_for_file quic.ready 10
}

test_expect_success 'in the guest, clients that ignore the proxy settings: DNS through the filter, HTTPS through the transparent listener, audited with the run; a denied name refused; QUIC dropped at the tap' '
	audit_mark &&
	server_mark web &&
	start_quic_sink &&
	CA_PEM=$(cat certs/ca.crt) FAR=$VM_FAR_ADDR BYPASS=$(cat bypass.sh) &&
	export CA_PEM FAR BYPASS &&
	vmx -e CA_PEM -e FAR -e BYPASS -- sh -c "eval \"\$BYPASS\"" &&
	test "$rc" = 0 &&
	test_grep "^$WEB_ADDR  *web.test\$" out &&
	test_grep "^web=200\$" out &&
	test_grep "^py HTTP/1.1 200 OK\$" out &&
	test_grep "^fetch 200\$" out &&
	test_grep "^get 200\$" out &&
	test_grep "^quic-sent\$" out &&
	test_grep "^denied-name-refused\$" out &&
	test_must_be_empty quic.log &&
	server_since web &&
	test_grep "GET /[?]vm " web.new &&
	test_grep "GET /[?]vmpy " web.new &&
	test_grep "GET /[?]vmfetch " web.new &&
	test_grep "GET /[?]vmget " web.new &&
	audit_since 4 &&
	run=$(python3 -c "
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get(\"event\") == \"run\":
        print(r[\"run\"]); break
" since.jsonl) &&
	test -n "$run" &&
	test "$(audit_count since.jsonl event=decision proto=transparent run="$run" host=web.test "original=$WEB_ADDR:443" mismatch=false decision=allow)" = 4 &&
	test "$(audit_count since.jsonl event=decision proto=dns run="$run" host=web.test decision=allow)" -ge 1 &&
	test "$(audit_count since.jsonl event=decision proto=dns run="$run" host=secret-c2VjcmV0.other.test decision=deny)" -ge 1
'

# What the agent tries against the control API from inside the guest: a
# forged registration, a change and an end of its own run, and the rules,
# on the proxy's port (the only one of the host it reaches); then any
# control socket in sight.  Each status on a line.
cat >forge.sh <<\EOF
gw=$(ip route show default | cut -d" " -f3)
for path in /v1/runs "/v1/runs/$INTUTIC_RUN" "/v1/runs/$INTUTIC_RUN/policy"; do
	curl -sS --noproxy "*" --max-time 30 -o /dev/null -w "%{http_code}\n" \
		-H "Content-Type: application/json" --data "$FORGED" \
		"http://$gw:$PORT$path"
done
curl -sS --noproxy "*" --max-time 30 -o /dev/null -w "%{http_code}\n" \
	-X DELETE "http://$gw:$PORT/v1/runs/$INTUTIC_RUN"
curl -sS --noproxy "*" --max-time 30 -o /dev/null -w "%{http_code}\n" \
	"http://$gw:$PORT/v1/rules"
find / -xdev -name control.sock 2>/dev/null | sed "s/^/FOUND /"
echo "run=$INTUTIC_RUN"
EOF

test_expect_success 'in the guest: no control API: a forged registration, a change or end of its run, the rules: 404 each; no socket in sight' '
	FORGED="{\"run\":\"run-forged\",\"token\":\"0123456789abcdef0123456789abcdef\",\"command\":\"x\"}" &&
	PORT=$PROXY_PORT FORGE=$(cat forge.sh) &&
	export FORGED PORT FORGE &&
	vmx -e FORGED -e PORT -e FORGE -- sh -c "eval \"\$FORGE\"" &&
	test "$rc" = 0 &&
	printf "%s\n" 404 404 404 404 404 >expect &&
	grep -E "^[0-9]{3}\$" out >codes &&
	test_cmp expect codes &&
	test_grep -v "^FOUND" out &&
	run=$(sed -n "s/^run=//p" out) &&
	case $run in run-[0-9a-f]*) ;; *) false ;; esac &&
	control_curl /v1/runs >list &&
	test_grep -v "run-forged" list &&
	test_grep -v "\"$run\"" list
'

test_expect_success 'after the run: no tap, no table, no hypervisor, no overlay or run directory left' '
	test -z "$(vm_leftovers)"
'

test_expect_success 'the exit status of the agent comes back; the guest starts from the image again (nothing persisted); the image is unchanged' '
	vmx -- sh -c "test -e /home/agent/persisted && echo PERSISTED; exit 7" &&
	test "$rc" = 7 &&
	test_grep -v PERSISTED out &&
	image_id >image.after &&
	test_cmp image.before image.after &&
	test -z "$(vm_leftovers)"
'

# What a long run makes the emulator translate: perl, ls and find, again
# and again.  Without a bound, qemu's cache of translated code (1 GiB by
# default) holds 300 MiB of it after this.
WORKLOAD='for i in 1 2 3 4 5 6 7 8 9 10; do
		perl -e "my %h; \$h{\$_} = \$_ * 2 for 1..20000" >/dev/null
		ls -lR /usr/share >/dev/null 2>&1
		find / -xdev -name \"*.so*\" >/dev/null 2>&1
	done'
# The hypervisor's own memory beyond the guest's: its translated code
# (64 MiB) and the rest of qemu (about 60 MiB), with room.
VM_OVERHEAD_KIB=$((160 * 1024))

test_expect_success 'mid-run: the table counted the drops, nothing was routed; while the agent worked, the hypervisor held at most the guest'"'"'s memory + 160 MiB (its peak RSS)' '
	AGENT_SECRET=$SECRET_VALUE && export AGENT_SECRET &&
	( "$INTUTIC" exec \
		--state-dir "$PROXY_DIR/state" --sandbox=qemu \
		--sandbox-memory 256m --sandbox-cpus 1 -e AGENT_SECRET -- sh -c "
		gw=\$(ip route show default | cut -d\" \" -f3)
		timeout 3 bash -c \"exec 3<>/dev/tcp/\$gw/$HOSTSVC_PORT\"
		timeout 3 bash -c \"exec 3<>/dev/tcp/$VM_FAR_ADDR/$VM_FAR_PORT\"
		curl -sS --max-time 30 -o /dev/null http://origin.test:$ORIGIN_PORT/
		$WORKLOAD
		echo tried
		sleep 240" >bg.out 2>bg.err & echo $! >bg.pid; wait $!; echo $? >bg.rc ) &
	wait_until 240 agent_said bg.out tried &&
	table=$(nft list tables | sed -n "s/^table inet \(intutic_vm_[0-9a-f]*\)\$/\1/p") &&
	test -n "$table" &&
	nft list table inet "$table" >table.txt &&
	python3 -c "
import re, sys
t = open(sys.argv[1]).read()
def packets(name):
    return int(re.search(r\"counter %s \{\s*packets (\d+)\" % name, t).group(1))
# the host port: dropped on input; the far host: not routed at all (the
# tap does not forward), so nothing reached the forward chain
assert packets(\"vm_input_dropped\") > 0, t
assert packets(\"vm_forward_dropped\") == 0, t
" table.txt &&
	qemu= &&
	for p in $(vm_leftovers | sed -n "s/^process //p"); do
		if tr "\0" " " <"/proc/$p/cmdline" | grep -q "^[^ ]*qemu-system"; then
			qemu=$p
		fi
	done &&
	test -n "$qemu" &&
	hwm=$(sed -n "s/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$qemu/status") &&
	test_diag "the hypervisor'"'"'s peak RSS: $hwm KiB, for a guest of 256 MiB" &&
	test "$hwm" -lt $((256 * 1024 + VM_OVERHEAD_KIB))
'

test_expect_success 'SIGTERM to the launcher mid-run: 143, then nothing left' '
	secret_on_no_cmdline &&
	kill -TERM "$(cat bg.pid)" &&
	wait_until 60 test -s bg.rc &&
	test "$(cat bg.rc)" = 143 &&
	test -z "$(vm_leftovers)"
'

test_expect_success 'the VM dies under the agent: the launcher says so, exits 125 and removes everything' '
	( "$INTUTIC" exec \
		--state-dir "$PROXY_DIR/state" --sandbox=qemu \
		--sandbox-memory 512m --sandbox-cpus 1 -- sh -c "echo up; sleep 240" \
		>crash.out 2>crash.err & echo $! >crash.pid; wait $!; echo $? >crash.rc ) &
	wait_until 240 agent_said crash.out up &&
	vm_leftovers >left.txt &&
	qemu= &&
	for p in $(sed -n "s/^process //p" left.txt); do
		if tr "\0" " " <"/proc/$p/cmdline" | grep -q "^[^ ]*qemu-system"; then
			qemu=$p
		fi
	done &&
	test -n "$qemu" &&
	kill -KILL "$qemu" &&
	wait_until 60 test -s crash.rc &&
	test "$(cat crash.rc)" = 125 &&
	test_grep "the microVM stopped under the command .signal 9.: its status is not known" crash.err &&
	test -z "$(vm_leftovers)"
'

test_expect_success 'a launcher killed with SIGKILL leaves its VM behind: doctor reports it, the next run removes it' '
	( "$INTUTIC" exec \
		--state-dir "$PROXY_DIR/state" --sandbox=qemu \
		--sandbox-memory 512m --sandbox-cpus 1 -- sleep 240 \
		>kill.out 2>kill.err & echo $! >kill.pid; wait $! ) &
	wait_until 60 vm_running &&
	kill -KILL "$(cat kill.pid)" &&
	sleep 1 &&
	vm_leftovers >left.txt &&
	test_grep "^tap intvm" left.txt &&
	test_grep "^table intutic_vm_" left.txt &&
	test_grep "^run directory " left.txt &&
	rc=0 && "$INTUTIC" doctor --state-dir "$PROXY_DIR/state" >doctor.out 2>&1 || rc=$? &&
	test_grep "^microvm  *warn  *1 run left by a launcher that is gone .*: run-[0-9a-f]*" doctor.out &&
	vmx -- true &&
	test "$rc" = 0 &&
	test_grep "removing what 1 earlier microVM run left" err &&
	test -z "$(vm_leftovers)"
'

test_done
