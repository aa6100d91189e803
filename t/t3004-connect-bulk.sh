#!/bin/sh
test_description='CONNECT bulk: 9 MiB each way and both ways at once, every byte arrives, half-close still passes, a stalled receiver stops the sender with at most one read (1 MiB) held in the proxy'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns

BULK=9437191	# 9 MiB and a bit: many reads of PROXY_IO_CHUNK
STALL_AFTER=2097152	# the stalling receiver reads this much first
IO_CHUNK=1048576	# proxy.h's PROXY_IO_CHUNK: the most a direction holds
CLIENT=$top_srcdir/t/helpers/client.py

test_expect_success 'setup: an echo, a source and a sink, names, rules, the proxy' '
	start_echo echo &&
	start_echo source --mode source "$BULK" &&
	start_echo sink --mode sink &&
	start_echo stall --mode stall "$STALL_AFTER" &&
	write_hosts hosts echo.test=127.0.0.1 source.test=127.0.0.1 \
		sink.test=127.0.0.1 stall.test=127.0.0.1 &&
	cat >rules.yaml <<-EOF &&
	version: 1
	allow:
	  - "echo.test:$ECHO_PORT"
	  - "source.test:$SOURCE_PORT"
	  - "sink.test:$SINK_PORT"
	  - "stall.test:$STALL_PORT"
	  - "127.0.0.0/8:$ECHO_PORT,$SOURCE_PORT,$SINK_PORT,$STALL_PORT"
	EOF
	start_proxy rules.yaml
'

# pattern N: what echo.py --mode source N sends (its PATTERN, repeated, cut)
pattern () {
	PYTHONPATH=$top_srcdir/t/helpers python3 -c "
import sys, echo
n = int(sys.argv[1])
sys.stdout.buffer.write((echo.PATTERN * (n // len(echo.PATTERN) + 1))[:n])" "$1"
}

test_expect_success 'a 9 MiB download after a half-close: every byte' '
	python3 "$CLIENT" tcp --proxy "127.0.0.1:$PROXY_PORT" \
		--to "source.test:$SOURCE_PORT" --send x --half-close \
		--timeout 30 >down 2>err &&
	pattern "$BULK" >down.expect &&
	cmp down.expect down &&
	audit_wait event=close host=source.test bytes_down="$BULK" bytes_up=1
'

test_expect_success 'a 9 MiB upload, then a half-close: the sink counts every byte' '
	pattern "$BULK" >up &&
	python3 "$CLIENT" tcp --proxy "127.0.0.1:$PROXY_PORT" \
		--to "sink.test:$SINK_PORT" --send-file up --half-close \
		--timeout 30 >out 2>err &&
	test_must_be_empty out &&
	audit_wait event=close host=sink.test bytes_up="$BULK" bytes_down=0 &&
	test_wait_for_file "$SINK_LOG" &&
	i=0 && until grep -q "in=$BULK out=0\$" "$SINK_LOG" || test $i -ge 100; do
		sleep 0.1; i=$((i + 1)); done &&
	test_grep "in=$BULK out=0\$" "$SINK_LOG"
'

test_expect_success 'echo both ways at once: 9 MiB up and the same 9 MiB back, byte for byte' '
	python3 "$CLIENT" tcp --proxy "127.0.0.1:$PROXY_PORT" \
		--to "echo.test:$ECHO_PORT" --send-file up --half-close \
		--timeout 30 >back 2>err &&
	cmp up back &&
	audit_wait event=close host=echo.test bytes_up="$BULK" bytes_down="$BULK"
'

# push.py PROXY_PORT TARGET: a CONNECT, then bytes until the tunnel takes
# no more for 2 s; then "stuck SENT" on stdout, and it holds the connection
# until killed (at most 30 s).
cat >push.py <<'EOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % ((sys.argv[2].encode(),) * 2))
head = b""
while b"\r\n\r\n" not in head:
    b = s.recv(1)
    if not b:
        sys.exit("push: the proxy closed before its answer")
    head += b
if not head.startswith(b"HTTP/1.1 200"):
    sys.exit("push: " + head.decode(errors="replace"))
s.settimeout(2)
sent, chunk = 0, b"x" * 65536
try:
    while sent < 256 << 20:
        sent += s.send(chunk)
except socket.timeout:
    pass
print("stuck", sent, flush=True)
time.sleep(30)
EOF

# held HEAD CONNS: what the proxy read from the client and did not write on
# to the stalled receiver, from its two sockets in CONNS (tcp_conns): read =
# the client side's bytes received less its receive queue (and the CONNECT
# head); written = the receiver side's bytes acked (which count the SYN)
# plus its send queue.
held () {
	awk -v pp="127.0.0.1:$PROXY_PORT" -v sp="127.0.0.1:$STALL_PORT" \
	    -v head="$1" '
	{
		for (i = 3; i <= NF; i++) {
			split($i, kv, "=")
			f[kv[1]] = kv[2]
		}
	}
	$1 == pp { read = f["received"] - f["rq"] - head }
	$2 == sp { wrote = f["acked"] - 1 + f["wq"] }
	END {
		if (read == "" || wrote == "")
			exit 1
		print read - wrote
	}' "$2"
}

test_expect_success "a receiver that stopped: the sender is stopped, the proxy holds at most $IO_CHUNK bytes of it" '
	python3 push.py "$PROXY_PORT" "stall.test:$STALL_PORT" >push.out 2>push.err &
	push=$!
	i=0
	until grep -q "^stuck" push.out || test $i -ge 300 ||
		! test_proc_alive_ "$push"; do sleep 0.1; i=$((i + 1)); done
	tcp_conns --sport "$PROXY_PORT" --dport "$STALL_PORT" >conns.out
	test_stop_pid_ "$push" 1
	# Its close resets the tunnel, whose client end is stuck behind data.
	stop_server stall
	cat push.err conns.out &&
	grep "^stuck" push.out &&
	sent=$(sed -n "s/^stuck //p" push.out) &&
	head=$(printf "CONNECT stall.test:%s HTTP/1.1\r\nHost: stall.test:%s\r\n\r\n" \
		"$STALL_PORT" "$STALL_PORT" | wc -c) &&
	kept=$(held "$head" conns.out) &&
	echo "sent $sent, held in the proxy $kept" &&
	test "$sent" -gt $((STALL_AFTER + IO_CHUNK)) &&
	test "$sent" -lt $((256 << 20)) &&
	test "$kept" -ge 0 &&
	test "$kept" -le "$IO_CHUNK" &&
	test_grep "stalled after $STALL_AFTER bytes" "$STALL_LOG" &&
	audit_wait event=close host=stall.test
'

test_expect_success 'nothing is left open: no tunnel, and a clean stop' '
	i=0 && until test "$(proxy_metric intutic_tunnels_active)" = 0 ||
		test $i -ge 50; do sleep 0.1; i=$((i + 1)); done &&
	test "$(proxy_metric intutic_tunnels_active)" = 0 &&
	stop_proxy
'

test_done
