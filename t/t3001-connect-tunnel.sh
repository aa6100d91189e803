#!/bin/sh
test_description='CONNECT tunnels: https and http through them, large transfers both ways, half-close, keep-alive, several at once'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl "openssl (test certificates)"

TUNNEL=$top_srcdir/t/helpers/tunnel.py
DOWN_BYTES=1572871	# 1.5 MiB and a bit: not a multiple of any buffer
UP_BYTES=1310727	# 1.25 MiB and a bit
WAIT_SECONDS=10		# a metric to change
PARALLEL=6		# tunnels open at the same time

# repeat N TEXT: N bytes of TEXT lines, over and over.
repeat () {
	python3 -c '
import sys
n, line = int(sys.argv[1]), sys.argv[2].encode() + b"\n"
sys.stdout.buffer.write((line * (n // len(line) + 1))[:n])
' "$1" "$2"
}

# metric_is NAME VALUE: the proxy's NAME is VALUE now; 2 when it cannot
# be read (wait_until stops there).
metric_is () {
	metric_is_v_=$(proxy_metric "$1") || return 2
	test "$metric_is_v_" = "$2"
}

# wait_metric NAME VALUE: until the proxy's NAME is VALUE, at most
# WAIT_SECONDS.
wait_metric () {
	wait_until "$WAIT_SECONDS" metric_is "$1" "$2"
	case $? in
	0)	return 0 ;;
	1)	echo "wait_metric: $1 is $metric_is_v_ after ${WAIT_SECONDS}s, expected $2" >&2 ;;
	esac
	return 1
}

test_expect_success 'setup: servers, names, rules, the proxy' '
	test_certs &&
	start_origin tls --tls "$CERT_FILE" "$KEY_FILE" &&
	start_origin http &&
	start_echo echo &&
	start_echo source --mode source "$DOWN_BYTES" &&
	start_echo sink --mode sink &&
	write_hosts hosts origin.test=127.0.0.1 plain.test=127.0.0.1 \
		echo.test=127.0.0.1 source.test=127.0.0.1 sink.test=127.0.0.1 &&
	fill_rules proxy-connect/tunnel.yaml rules.yaml TLS_PORT="$TLS_PORT" \
		HTTP_PORT="$HTTP_PORT" ECHO_PORT="$ECHO_PORT" \
		SOURCE_PORT="$SOURCE_PORT" SINK_PORT="$SINK_PORT" &&
	RULES=$PWD/rules.yaml &&
	"$INTUTIC" rules check "$RULES" &&
	start_proxy "$RULES" &&
	test "$(proxy_metric intutic_tunnels_active)" = 0
'

# --- real clients ------------------------------------------------------------

test_expect_success 'curl https through CONNECT: the origin answers, SNI and Host are the name' '
	audit_mark &&
	proxy_curl_ca -D head -o body "https://origin.test:$TLS_PORT/" &&
	echo "hello from origin.test:$TLS_PORT" >expect &&
	test_cmp expect body &&
	test_grep "^X-TLS-SNI: origin\\.test" head &&
	test_grep "^tls: GET / HTTP/1\\.1 host=origin\\.test:$TLS_PORT\$" "$TLS_LOG" &&
	audit_conn proto=connect host=origin.test port="$TLS_PORT" \
		sni=origin.test addr=127.0.0.1 decision=allow reason=allowed \
		rule="$RULES:8" status=200 client~"^127\\.0\\.0\\.1:[0-9]+\$" \
		-- proto=connect host=origin.test sni=origin.test \
		decision=allow reason=allowed "bytes_up>300" \
		"bytes_down>$(wc -c <body)" "duration_ms>=0"
'

test_expect_success 'curl --proxytunnel http: plain HTTP inside the tunnel, no SNI' '
	audit_mark &&
	proxy_curl_ca --proxytunnel -D head -o body "http://plain.test:$HTTP_PORT/" &&
	echo "hello from plain.test:$HTTP_PORT" >expect &&
	test_cmp expect body &&
	test_grep "^X-Origin: http" head &&
	test_grep "^HTTP/1\\.1 200 Connection established" head &&
	# what the origin sent: the headers curl saved, less the 39 bytes of
	# the proxy answer to CONNECT, and the body
	audit_conn proto=connect host=plain.test port="$HTTP_PORT" sni= \
		addr=127.0.0.1 decision=allow reason=allowed rule="$RULES:9" \
		-- "bytes_up>=50" \
		bytes_down=$(($(wc -c <head) - 39 + $(wc -c <body)))
'

test_expect_success 'a download of 1.5 MiB after a half-close: every byte, counted in the close record' '
	audit_mark &&
	python3 "$TUNNEL" get "$PROXY_PORT" "source.test:$SOURCE_PORT" x \
		>down 2>err &&
	test "$(wc -c <down)" = "$DOWN_BYTES" &&
	# what echo.py --mode source sends
	repeat "$DOWN_BYTES" \
		abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ \
		>down.expect &&
	cmp down.expect down &&
	audit_conn host=source.test port="$SOURCE_PORT" decision=allow \
		reason=allowed rule="$RULES:11" sni= \
		-- bytes_up=1 bytes_down="$DOWN_BYTES" &&
	test_grep "in=0 out=$DOWN_BYTES\$" "$SOURCE_LOG"
'

test_expect_success 'an upload of 1.25 MiB, then a half-close: the sink gets every byte' '
	repeat "$UP_BYTES" "upload line 0123456789 abcdefghijklmnopqrstuvwxyz" >up &&
	test "$(wc -c <up)" = "$UP_BYTES" &&
	audit_mark &&
	proxy_tcp --to "sink.test:$SINK_PORT" --send-file up --half-close >out 2>err &&
	test_must_be_empty out &&
	audit_conn host=sink.test port="$SINK_PORT" decision=allow reason=allowed \
		rule="$RULES:12" \
		-- bytes_up="$UP_BYTES" bytes_down=0 &&
	test_grep "in=$UP_BYTES out=0\$" "$SINK_LOG"
'

test_expect_success 'half-close: the echo still comes back after the client sent its FIN' '
	audit_mark &&
	proxy_tcp --to "echo.test:$ECHO_PORT" --send "hello, half-closed" \
		--half-close >out 2>err &&
	printf "hello, half-closed" >expect &&
	test_cmp expect out &&
	audit_conn host=echo.test port="$ECHO_PORT" decision=allow \
		reason=allowed rule="$RULES:10" \
		-- bytes_up=18 bytes_down=18 &&
	test_grep "in=18 out=18\$" "$ECHO_LOG"
'

test_expect_success 'keep-alive: two https requests in one tunnel, one decision' '
	audit_mark &&
	proxy_curl_ca -v -o body1 -o body2 "https://origin.test:$TLS_PORT/" \
		"https://origin.test:$TLS_PORT/bytes/5000" 2>err &&
	echo "hello from origin.test:$TLS_PORT" >expect &&
	test_cmp expect body1 &&
	test "$(wc -c <body2)" = 5000 &&
	test_grep -i "re-using existing connection" err &&
	audit_conn host=origin.test port="$TLS_PORT" sni=origin.test \
		decision=allow reason=allowed \
		-- "bytes_down>5000"
'

test_expect_success 'keep-alive: three pipelined http requests in one tunnel' '
	for path in / /bytes/7; do
		printf "GET %s HTTP/1.1\\r\\nHost: plain.test:%s\\r\\n\\r\\n" \
			"$path" "$HTTP_PORT" || return 1
	done >req &&
	printf "GET /chunked/10 HTTP/1.1\\r\\nHost: plain.test:%s\\r\\n%s\\r\\n\\r\\n" \
		"$HTTP_PORT" "Connection: close" >>req &&
	audit_mark &&
	proxy_tcp --to "plain.test:$HTTP_PORT" --send-file req >out 2>err &&
	grep -o "HTTP/1\\.1 200 OK" out >statuses &&
	test_line_count = 3 statuses &&
	test_grep "hello from plain\\.test:$HTTP_PORT" out &&
	audit_conn host=plain.test port="$HTTP_PORT" decision=allow \
		-- bytes_up="$(wc -c <req)" bytes_down="$(wc -c <out)"
'

test_expect_success "$PARALLEL tunnels at once, each with its own bytes" '
	audit_mark &&
	i=0 && pids= &&
	while test $i -lt $PARALLEL; do
		repeat $((20000 + i * 7001)) "tunnel $i says hello" >in.$i &&
		{ proxy_tcp --to "echo.test:$ECHO_PORT" --send-file in.$i \
			--half-close >out.$i 2>err.$i & } &&
		pids="$pids $!" &&
		i=$((i + 1)) || return 1
	done &&
	for pid in $pids; do
		wait $pid || return 1
	done &&
	i=0 &&
	while test $i -lt $PARALLEL; do
		cmp in.$i out.$i || return 1
		i=$((i + 1))
	done &&
	audit_since $PARALLEL &&
	audit_expect $PARALLEL event=decision host=echo.test decision=allow \
		reason=allowed &&
	audit_expect $PARALLEL event=decision &&
	audit_expect $PARALLEL event=close &&
	i=0 &&
	while test $i -lt $PARALLEL; do
		n=$(wc -c <in.$i) &&
		audit_expect 1 event=close bytes_up=$n bytes_down=$n || return 1
		i=$((i + 1))
	done
'

test_expect_success 'intutic_tunnels_active: up while tunnels are open, back to 0 after' '
	rm -f ready go &&
	audit_mark || return 1
	python3 "$TUNNEL" hold "$PROXY_PORT" "echo.test:$ECHO_PORT" 3 ready go \
		>hold.out 2>&1 &
	HOLD=$! &&
	test_when_finished "touch go; kill $HOLD 2>/dev/null; wait $HOLD 2>/dev/null; :" &&
	test_wait_for_file ready 15 &&
	test "$(proxy_metric intutic_tunnels_active)" = 3 &&
	touch go &&
	wait $HOLD &&
	wait_metric intutic_tunnels_active 0 &&
	audit_since 3 &&
	audit_expect 3 event=decision reason=allowed host=echo.test &&
	audit_expect 3 event=close bytes_up=7 bytes_down=7
'

test_expect_success 'after all that: no tunnel left, one connection (this scrape)' '
	wait_metric intutic_tunnels_active 0 &&
	wait_metric intutic_connections_active 1
'

test_done
