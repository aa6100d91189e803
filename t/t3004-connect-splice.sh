#!/bin/sh
test_description='CONNECT bulk: a direction that moved bulk goes to splice(2), every byte arrives, half-close still passes'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns

BULK=9437191	# 9 MiB and a bit: well past PROXY_SPLICE_AFTER (1 MiB)
CLIENT=$top_srcdir/t/helpers/client.py

test_expect_success 'setup: an echo, a source and a sink, names, rules, the proxy' '
	start_echo echo &&
	start_echo source --mode source "$BULK" &&
	start_echo sink --mode sink &&
	write_hosts hosts echo.test=127.0.0.1 source.test=127.0.0.1 \
		sink.test=127.0.0.1 &&
	cat >rules.yaml <<-EOF &&
	version: 1
	allow:
	  - "echo.test:$ECHO_PORT"
	  - "source.test:$SOURCE_PORT"
	  - "sink.test:$SINK_PORT"
	  - "127.0.0.0/8:$ECHO_PORT,$SOURCE_PORT,$SINK_PORT"
	EOF
	start_proxy rules.yaml &&
	test "$(proxy_metric intutic_tunnel_splices_total)" = 0
'

# pattern N: what echo.py --mode source N sends (its PATTERN, repeated, cut)
pattern () {
	PYTHONPATH=$top_srcdir/t/helpers python3 -c "
import sys, echo
n = int(sys.argv[1])
sys.stdout.buffer.write((echo.PATTERN * (n // len(echo.PATTERN) + 1))[:n])" "$1"
}

test_expect_success 'a 9 MiB download after a half-close: every byte, spliced' '
	before=$(proxy_metric intutic_tunnel_splices_total) &&
	python3 "$CLIENT" tcp --proxy "127.0.0.1:$PROXY_PORT" \
		--to "source.test:$SOURCE_PORT" --send x --half-close \
		--timeout 30 >down 2>err &&
	pattern "$BULK" >down.expect &&
	cmp down.expect down &&
	after=$(proxy_metric intutic_tunnel_splices_total) &&
	test "$after" -gt "$before" &&
	audit_wait event=close host=source.test bytes_down="$BULK" bytes_up=1
'

test_expect_success 'a 9 MiB upload, then a half-close: the sink counts every byte, spliced' '
	before=$(proxy_metric intutic_tunnel_splices_total) &&
	pattern "$BULK" >up &&
	python3 "$CLIENT" tcp --proxy "127.0.0.1:$PROXY_PORT" \
		--to "sink.test:$SINK_PORT" --send-file up --half-close \
		--timeout 30 >out 2>err &&
	test_must_be_empty out &&
	after=$(proxy_metric intutic_tunnel_splices_total) &&
	test "$after" -gt "$before" &&
	audit_wait event=close host=sink.test bytes_up="$BULK" bytes_down=0 &&
	test_wait_for_file "$SINK_LOG" &&
	i=0 && until grep -q "in=$BULK out=0\$" "$SINK_LOG" || test $i -ge 100; do
		sleep 0.1; i=$((i + 1)); done &&
	test_grep "in=$BULK out=0\$" "$SINK_LOG"
'

test_expect_success 'echo both ways at once: 9 MiB up and the same 9 MiB back, byte for byte' '
	before=$(proxy_metric intutic_tunnel_splices_total) &&
	python3 "$CLIENT" tcp --proxy "127.0.0.1:$PROXY_PORT" \
		--to "echo.test:$ECHO_PORT" --send-file up --half-close \
		--timeout 30 >back 2>err &&
	cmp up back &&
	after=$(proxy_metric intutic_tunnel_splices_total) &&
	test "$after" -ge $((before + 2)) &&
	audit_wait event=close host=echo.test bytes_up="$BULK" bytes_down="$BULK"
'

test_expect_success 'nothing is left open: no tunnel, and a clean stop' '
	i=0 && until test "$(proxy_metric intutic_tunnels_active)" = 0 ||
		test $i -ge 50; do sleep 0.1; i=$((i + 1)); done &&
	test "$(proxy_metric intutic_tunnels_active)" = 0 &&
	stop_proxy
'

test_done
