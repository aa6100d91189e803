#!/bin/sh
test_description='descriptors run out: existing tunnels keep working, new ones are refused cleanly, accept pauses, and the proxy recovers'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy prlimit

# A client that opens CONNECT tunnels to the echo server one after another
# until one is refused (no 200) or MAX are open, then idle connections that
# send nothing (one descriptor each in the proxy) until the proxy stops
# taking them; checks that every tunnel still echoes; writes "TUNNELS
# REFUSED IDLE" to stdout; holds everything until the file GO exists
# (bounded) and closes it all.
cat >fill.py <<'PY'
import os, socket, sys, time
port, target, most, go = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
def tunnel():
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
    head = b""
    while b"\r\n\r\n" not in head and len(head) < 4096:
        b = s.recv(1)
        if not b:
            raise OSError("closed before an answer")
        head += b
    if not head.startswith(b"HTTP/1.1 200"):
        s.close()
        raise OSError("answer: %r" % head[:40])
    return s
socks, idle, refused = [], [], 0
for i in range(most):
    try:
        socks.append(tunnel())
    except OSError as e:
        refused += 1
        sys.stderr.write("tunnel %d refused: %s\n" % (i, e))
        break
for i in range(most):
    idle.append(socket.create_connection(("127.0.0.1", port), timeout=3))
time.sleep(1)
for i, s in enumerate(socks):
    s.sendall(b"ping %d\n" % i)
    want = b"ping %d\n" % i
    got = b""
    while len(got) < len(want):
        b = s.recv(len(want) - len(got))
        if not b:
            raise SystemExit("tunnel %d: closed" % i)
        got += b
    if got != want:
        raise SystemExit("tunnel %d: %r" % (i, got))
print(len(socks), refused, len(idle), flush=True)
for _ in range(300):
    if os.path.exists(go):
        break
    time.sleep(0.1)
for s in socks + idle:
    s.close()
PY

no_tunnels () {
	test "$(proxy_metric intutic_tunnels_active)" = 0
}

test_expect_success 'setup: an echo server, rules, the proxy with few descriptors' '
	start_echo echo &&
	write_hosts hosts echo.test=127.0.0.1 &&
	cat >rules.yaml <<-EOF &&
	version: 1
	allow:
	  - "echo.test:$ECHO_PORT"
	  - "127.0.0.0/8:$ECHO_PORT"
	EOF
	start_proxy rules.yaml --workers 1 &&
	base=$(ls /proc/$PROXY_PID/fd | wc -l) &&
	limit=$((base + 24)) &&
	prlimit --pid "$PROXY_PID" --nofile="$limit:$limit" &&
	soft=$(prlimit --pid "$PROXY_PID" --nofile --noheadings --output SOFT) &&
	test $soft = "$limit"
'

test_expect_success 'tunnels until the descriptors run out: the open ones echo, the next are refused' '
	rm -f go &&
	python3 fill.py "$PROXY_PORT" "echo.test:$ECHO_PORT" 40 "$PWD/go" \
		>filled 2>fill.err &
	fill_pid=$! &&
	test_when_finished "touch go; wait $fill_pid" &&
	wait_until 30 test -s filled &&
	read open refused idle <filled &&
	test "$open" -ge 5 &&
	test "$refused" = 1
'

test_expect_success 'once the tunnels are gone, new ones are accepted again' '
	touch go &&
	wait_until 10 no_tunnels &&
	# while it had no descriptor left, accepting paused (and never spun)
	test "$(proxy_metric intutic_accept_paused_total)" -ge 1 &&
	printf "again\n" >again &&
	i=0 && until proxy_tcp --to "echo.test:$ECHO_PORT" --send-file again \
		--half-close >back 2>err || test $i -ge 50; do
		sleep 0.1; i=$((i + 1)); done &&
	test_cmp again back
'

test_expect_success 'the proxy still answers and stops cleanly' '
	curl -sS --noproxy "*" --max-time 10 -o health "$PROXY_URL/healthz" &&
	echo ok >expect &&
	test_cmp expect health &&
	stop_proxy
'

test_done
