#!/bin/sh
test_description='the provider gateway: /providers/NAME/PATH forwarded to the provider over verified TLS, the answer streamed as it comes, one audit record per call with the model and the tokens the answer names (the last cumulative message_delta), the key passed through and only its fingerprint recorded; faults (429, a reset mid-stream, malformed events, a client that leaves, a certificate that does not verify, an unknown provider); decided by the run'"'"'s policy; exec points the SDKs at it; the official SDKs and Claude Code as clients, judged at the test provider'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
. "$top_srcdir/t/lib-gateway.sh"

# Outside the namespace: installs the pinned clients once (npm needs the
# registry); inside: the cache only.
gateway_npm_clients
test_isolate_netns
test_require_proxy curl node unshare mount timeout

# ASan: no quarantine, freed memory back at once (as t3503 does), so that
# the bound on what the proxy holds (bounds, below) holds in both builds.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0:allocator_release_to_os_interval_ms=0"
export ASAN_OPTIONS

KEY=sk-ant-api03-gatewaytestkey0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJ
OKEY=sk-proj-gatewaytestopenai0123456789abcdefghijklmnop
MSGS='[{"role":"user","content":"say hi"}]'

# gw PATH ARGS...: curl to the gateway (plain HTTP to the proxy).
gw () {
	test_gw_path_=$1
	shift
	curl -sS --noproxy "*" --max-time 20 "$@" "$PROXY_URL$test_gw_path_"
}

# calls_wait N: wait until N call records follow the mark (at most
# TEST_AUDIT_WAIT_SECONDS); since.jsonl then holds every record after it.
calls_wait () {
	python3 "$test_helpers_/audit.py" --since --mark "$test_audit_mark_" \
		--out since.jsonl --min "$1" --seconds "$TEST_AUDIT_WAIT_SECONDS" \
		"$AUDIT_FILE" event=call
}

# conns_one: the proxy has one connection open (the one asking).
conns_one () {
	test "$(proxy_metric intutic_connections_active)" = 1
}

# the double's request log since a mark
provider_mark () {
	provider_mark_=$(wc -l <"$PROVIDER_REQUESTS")
}
provider_since () {
	tail -n "+$((provider_mark_ + 1))" "$PROVIDER_REQUESTS" >psince.jsonl
}

test_expect_success 'setup: the CA, the test provider and one with the wrong certificate, the proxy with --gateway-ca' '
	test_certs &&
	start_provider provider &&
	start_provider badprov &&
	start_origin other.test &&
	write_hosts hosts api.provider.test=127.0.0.1 \
		wrong.provider.test=127.0.0.1 other.test=127.0.0.1 &&
	fill_rules gateway/rules.yaml rules.yaml PORT="$PROVIDER_PORT" \
		BADPORT="$BADPROV_PORT" OTHERPORT="$OTHER_TEST_PORT" &&
	start_proxy rules.yaml --gateway-ca "$CA_FILE" --gateway-bind 127.0.0.1:0 &&
	GW_PORT=$(python3 -c "
import json, sys
print(json.load(open(sys.argv[1]))[\"gateway\"][0].rsplit(\":\", 1)[1])
" state/proxy.json) &&
	test -s state/gateway.secret &&
	test "$(stat -c %a state/gateway.secret)" = 600
'

test_expect_success 'a call: forwarded with the provider'"'"'s Host, the key untouched, identity encoding; one call record with the model, the tokens and a fingerprint of the key' '
	audit_mark && provider_mark &&
	gw /providers/anthropic/v1/messages?beta=true -o out.json \
		-H "x-api-key: $KEY" -H "anthropic-version: 2023-06-01" \
		-H "content-type: application/json" -H "accept-encoding: gzip" \
		-d "{\"model\":\"claude-x\",\"max_tokens\":10,\"messages\":$MSGS}" &&
	gateway_json_is out.json "j[\"usage\"][\"output_tokens\"]" 13 &&
	provider_since &&
	audit_count psince.jsonl method=POST path=/v1/messages?beta=true \
		key=$KEY >n && echo 1 >expect && test_cmp expect n &&
	python3 -c "
import json, sys
r = [json.loads(l) for l in open(\"psince.jsonl\")][-1]
h = {k.lower(): v for k, v in r[\"headers\"]}
assert h[\"host\"] == \"api.provider.test:%s\" % sys.argv[1], h
assert h.get(\"accept-encoding\") == \"identity\", h
assert \"connection\" in h
" "$PROVIDER_PORT" &&
	calls_wait 1 &&
	audit_expect 1 event=call proto=gateway provider=anthropic method=POST \
		path=/v1/messages model=claude-x model_response=claude-x \
		status=200 stream=false input_tokens=12 output_tokens=13 \
		cache_read_tokens=19 cache_write_tokens=17 usage=final \
		stop=end_turn key_mode=passthrough "key~^hmac:[0-9a-f]{16}$" \
		"request_id~^req_" host=api.provider.test decision=allow &&
	! grep -F "${KEY#sk-ant-api03-}" audit.jsonl &&
	! grep -F "gatewaytestkey" audit.jsonl &&
	! grep -F "beta=true" since.jsonl
'

test_expect_success 'a provider connection outlives the client connection: calls on new connections reuse it (one per worker at most)' '
	provider_mark &&
	for i in 1 2 3 4; do
		gw /providers/anthropic/v1/messages -o reuse$i.json -H "x-api-key: $KEY" \
			-d "{\"model\":\"claude-r\",\"max_tokens\":10,\"messages\":$MSGS}" ||
			return 1
	done &&
	provider_since && test_line_count = 4 psince.jsonl &&
	n=$(upstreams "$PROVIDER_PORT") &&
	echo "provider connections after 4 calls on 4 client connections: $n" &&
	test "$n" -ge 1 && test "$n" -le 2
'

test_expect_success 'the fingerprint is HMAC-SHA256 of provider NUL key under state/gateway.secret, as the manual says' '
	fp=$(printf "anthropic\0%s" "$KEY" | openssl dgst -sha256 -mac HMAC \
		-macopt hexkey:$(cat state/gateway.secret) | sed "s/.*= //" | cut -c1-16) &&
	audit_expect 1 event=call key=hmac:$fp
'

test_expect_success 'a stream: relayed event by event; the record takes the last cumulative message_delta (13, not 7)' '
	audit_mark &&
	gw /providers/anthropic/v1/messages -N -o stream.txt \
		-H "x-api-key: $KEY" -H "content-type: application/json" \
		-d "{\"model\":\"claude-x\",\"max_tokens\":10,\"stream\":true,\"messages\":$MSGS}" &&
	test_grep "event: message_stop" stream.txt &&
	test "$(grep -c "^event: message_delta" stream.txt)" = 2 &&
	calls_wait 1 &&
	audit_expect 1 event=call stream=true output_tokens=13 input_tokens=12 \
		usage=final stop=end_turn
'

test_expect_success NPM_CLIENTS 'the official Anthropic SDK, create and stream, through the gateway: its usage is the record'"'"'s' '
	audit_mark &&
	gateway_sdk anthropic create "$PROXY_URL/providers/anthropic" "$KEY" claude-sdk >c.json &&
	gateway_sdk anthropic stream "$PROXY_URL/providers/anthropic" "$KEY" claude-sdk >s.json &&
	gateway_json_is c.json "j[\"usage\"][\"output_tokens\"]" 13 &&
	gateway_json_is s.json "j[\"usage\"][\"output_tokens\"]" 13 &&
	calls_wait 2 &&
	audit_expect 2 event=call model=claude-sdk input_tokens=12 \
		output_tokens=13 usage=final &&
	audit_expect 1 event=call model=claude-sdk stream=true
'

test_expect_success NPM_CLIENTS 'the official OpenAI SDK: chat completions streamed with include_usage, and responses, streamed and not' '
	audit_mark &&
	gateway_sdk chat stream "$PROXY_URL/providers/openai/v1" "$OKEY" gpt-x >chat.json &&
	gateway_sdk responses stream "$PROXY_URL/providers/openai/v1" "$OKEY" gpt-x >resp.json &&
	gateway_sdk responses create "$PROXY_URL/providers/openai/v1" "$OKEY" gpt-x >resp2.json &&
	calls_wait 3 &&
	out=$(gateway_json chat.json "j[\"usage\"][\"completion_tokens\"]") &&
	audit_expect 1 event=call provider=openai path=/v1/chat/completions \
		stream=true usage=final output_tokens=$out "reasoning_tokens~^[0-9]+$" &&
	out=$(gateway_json resp.json "j[\"usage\"][\"output_tokens\"]") &&
	audit_expect 2 event=call provider=openai path=/v1/responses \
		usage=final output_tokens=$out stop=completed &&
	audit_expect 3 event=call provider=openai "key~^hmac:"
'

test_expect_success NPM_CLIENTS 'streaming is not buffered: the client has the first event before the provider sent the last' '
	provider_mark &&
	gateway_sdk anthropic create-stream "$PROXY_URL/providers/anthropic" "$KEY" test-slow >slow.json &&
	provider_since &&
	first=$(gateway_json slow.json "j[\"first_event_ms\"]") &&
	python3 -c "
import json, sys
r = [json.loads(l) for l in open(\"psince.jsonl\")][-1]
last = r[\"events\"][-1][\"t\"] * 1000
first = float(sys.argv[1])
print(\"first event seen %.1f ms before the last was sent\" % (last - first))
assert first < last, (first, last)
" "$first"
'

test_expect_success NPM_CLIENTS 'a 429 reaches the SDK as its RateLimitError; the record has the status and the error type, no usage' '
	audit_mark &&
	test_must_fail gateway_sdk anthropic create "$PROXY_URL/providers/anthropic" "$KEY" test-error-429 >e.json &&
	gateway_json_is e.json "j[\"rate_limit_error\"]" True &&
	calls_wait 1 &&
	audit_expect 1 event=call status=429 error=rate_limit_error usage=none
'

test_expect_success 'a reset mid-stream: the client sees the cut, the record says partial and cut-short' '
	audit_mark &&
	test_must_fail gw /providers/anthropic/v1/messages -N -o reset.txt \
		-H "x-api-key: $KEY" -H "content-type: application/json" \
		-d "{\"model\":\"test-reset\",\"max_tokens\":10,\"stream\":true,\"messages\":$MSGS}" &&
	test_grep "message_start" reset.txt &&
	calls_wait 1 &&
	audit_expect 1 event=call reason=cut-short usage=partial input_tokens=12
'

test_expect_success 'malformed events are relayed as they are, counted, usage none' '
	audit_mark && provider_mark &&
	before=$(proxy_metric intutic_gateway_malformed_total provider=anthropic) &&
	gw /providers/anthropic/v1/messages -N -o bad.txt \
		-H "x-api-key: $KEY" -H "content-type: application/json" \
		-d "{\"model\":\"test-malformed\",\"max_tokens\":10,\"stream\":true,\"messages\":$MSGS}" &&
	test_grep "^data: " bad.txt &&
	calls_wait 1 &&
	audit_expect 1 event=call malformed=true usage=none model=test-malformed &&
	after=$(proxy_metric intutic_gateway_malformed_total provider=anthropic) &&
	test "$after" -gt "$before"
'

test_expect_success 'a client that goes away mid-stream: the call gets its record, the connections close' '
	audit_mark &&
	test_must_fail gw /providers/anthropic/v1/messages -N --max-time 0.5 -o gone.txt \
		-H "x-api-key: $KEY" -H "content-type: application/json" \
		-d "{\"model\":\"test-slow\",\"max_tokens\":10,\"stream\":true,\"messages\":$MSGS}" &&
	calls_wait 1 &&
	audit_expect 1 event=call reason=cut-short model=test-slow &&
	wait_until 10 conns_one
'

test_expect_success '--gateway-bind: the gateway alone on a port of its own; anything else there is 404' '
	audit_mark &&
	curl -sS --noproxy "*" --max-time 20 -o gb.json -H "x-api-key: $KEY" \
		-d "{\"model\":\"claude-gb\",\"max_tokens\":10,\"messages\":$MSGS}" \
		"http://127.0.0.1:$GW_PORT/providers/anthropic/v1/messages" &&
	gateway_json_is gb.json "j[\"usage\"][\"output_tokens\"]" 13 &&
	calls_wait 1 && audit_expect 1 event=call model=claude-gb status=200 &&
	curl -sS --noproxy "*" -o gb2.txt -w "%{http_code}\n" \
		"http://127.0.0.1:$GW_PORT/healthz" >code &&
	echo 404 >expect && test_cmp expect code &&
	test_grep "serves the provider gateway alone" gb2.txt &&
	curl -sS -o /dev/null -w "%{http_code}\n" -x "http://127.0.0.1:$GW_PORT" \
		"http://other.test:$OTHER_TEST_PORT/?tag" >code &&
	test_cmp expect code
'

test_expect_success 'an unknown provider, or one the rules do not switch on: 404 naming those served' '
	gw /providers/nope/v1/messages -o nope.txt -w "%{http_code}\n" >code &&
	echo 404 >expect && test_cmp expect code &&
	test_grep "it serves: anthropic, openai, badcert" nope.txt &&
	gw /providers/dormant/v1/x -o dormant.txt -w "%{http_code}\n" >code &&
	test_cmp expect code &&
	test_grep "no provider .dormant." dormant.txt
'

test_expect_success 'a provider whose certificate does not name it: 502 tls-failed with the reason, nothing sent' '
	gw /providers/badcert/v1/chat/completions -o tls.txt -w "%{http_code}\n" \
		-H "authorization: Bearer $OKEY" -d "{}" >code &&
	echo 502 >expect && test_cmp expect code &&
	test_grep "certificate verify failed" tls.txt &&
	test_grep "nothing was sent" tls.txt &&
	test "$(wc -l <"$BADPROV_REQUESTS")" = 0
'

test_expect_success 'intutic exec points the base-URL variables at the gateway, with the run; the calls carry the run' '
	audit_mark &&
	"$INTUTIC" exec --state-dir "$PROXY_DIR/state" -- sh -c "
		echo \$INTUTIC_RUN >run.id &&
		echo \"\$ANTHROPIC_BASE_URL\" >base.a && echo \"\$OPENAI_BASE_URL\" >base.o &&
		curl -sS --noproxy \"*\" -o ex.json -H \"x-api-key: $KEY\" \
			-d \"{\\\"model\\\":\\\"claude-exec\\\",\\\"messages\\\":[]}\" \
			\"\$ANTHROPIC_BASE_URL/v1/messages\"" &&
	run=$(cat run.id) &&
	test_grep "^$PROXY_URL/r/$run:[0-9a-f]*/providers/anthropic\$" base.a &&
	test_grep "^$PROXY_URL/r/$run:[0-9a-f]*/providers/openai/v1\$" base.o &&
	calls_wait 1 &&
	audit_expect 1 event=call run=$run model=claude-exec status=200 &&
	! grep -F "/r/$run:" audit.jsonl
'

test_expect_success 'the gateway is no way around the policy: a run that denies the provider'"'"'s host is refused there, nothing reaches it' '
	audit_mark && provider_mark &&
	"$INTUTIC" exec --state-dir "$PROXY_DIR/state" --deny api.provider.test -- sh -c "
		curl -sS --noproxy \"*\" -o denied.txt -w \"%{http_code}\\n\" \
			-H \"x-api-key: $KEY\" -d \"{}\" \
			\"\$ANTHROPIC_BASE_URL/v1/messages\" >code" &&
	echo 403 >expect && test_cmp expect code &&
	provider_since && test_must_be_empty psince.jsonl &&
	audit_wait event=decision proto=gateway decision=deny host=api.provider.test
'

test_expect_success 'wrong run credentials in the gateway URL: 407, nothing sent' '
	gw /r/run-0000000000000000:00/providers/anthropic/v1/messages -o cred.txt \
		-w "%{http_code}\n" -d "{}" >code &&
	echo 407 >expect && test_cmp expect code &&
	test_grep "intutic exec" cred.txt
'

test_expect_success 'a WebSocket upgrade (the Responses API'"'"'s) is relayed both ways' '
	python3 - "$PROXY_PORT" "$OKEY" <<-\EOF
	import base64, os, socket, struct, sys
	port, key = int(sys.argv[1]), sys.argv[2]
	s = socket.create_connection(("127.0.0.1", port), timeout=10)
	k = base64.b64encode(os.urandom(16)).decode()
	s.sendall(("GET /providers/openai/v1/responses HTTP/1.1\r\n"
	    "Host: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	    "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
	    "Authorization: Bearer %s\r\n\r\n" % (k, key)).encode())
	head = b""
	while b"\r\n\r\n" not in head:
	    head += s.recv(4096)
	assert head.startswith(b"HTTP/1.1 101"), head
	msg = b"hello through the gateway"
	mask = os.urandom(4)
	s.sendall(bytes([0x81, 0x80 | len(msg)]) + mask +
	    bytes(b ^ mask[i % 4] for i, b in enumerate(msg)))
	buf = head.split(b"\r\n\r\n", 1)[1]
	while len(buf) < 2 + len(msg):
	    d = s.recv(4096)
	    assert d, "closed"
	    buf += d
	assert buf[0] == 0x81 and buf[1] == len(msg) and buf[2:2 + len(msg)] == msg, buf
	print("echoed")
	EOF
	audit_wait event=call status=101 path=/v1/responses malformed=false usage=none
'

test_expect_success NPM_CLIENTS 'Claude Code under intutic exec: its call is audited with the model and the tokens' '
	audit_mark &&
	mkdir -p claude-home &&
	"$INTUTIC" exec --state-dir "$PROXY_DIR/state" -- env HOME="$TRASH_DIRECTORY/claude-home" NODE_EXTRA_CA_CERTS="$CA_FILE" \
		ANTHROPIC_API_KEY="$KEY" DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 \
		DISABLE_ERROR_REPORTING=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
		timeout -k 5 "$GATEWAY_CLAUDE_SECONDS" node "$GATEWAY_CLAUDE" -p "say hi" \
		</dev/null >claude.out 2>claude.err || { cat claude.err >&2; false; } &&
	test_grep "Hello from the provider double" claude.out &&
	calls_wait 1 &&
	audit_count since.jsonl event=call provider=anthropic path=/v1/messages \
		"run~^run-" usage=final "model~." "output_tokens~^[0-9]+$" >n &&
	test "$(cat n)" -ge 1
'

# A 48 MiB body to a provider that takes 4 s to start reading it: the
# proxy holds at most one flow-control window of it meanwhile (256 KiB
# queued for the provider, 64 KiB in its socket's buffer, a 1 MiB read),
# not the 38 MiB that the kernel's buffers (at most 10 MiB here) leave.
BIG_BYTES=50331648
BIG_SLACK_KIB=16384
test_expect_success 'bounds: a large body to a provider slow to read it is held back, not buffered (RSS), and arrives whole' '
	python3 -c "
import json, sys
pad = int(sys.argv[1]) - len(json.dumps({\"model\": \"claude-x\", \"max_tokens\": 10, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"pad\": \"\"}))
json.dump({\"model\": \"claude-x\", \"max_tokens\": 10, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"pad\": \"x\" * pad}, open(\"big.json\", \"w\"))
" "$BIG_BYTES" &&
	test "$(wc -c <big.json)" = "$BIG_BYTES" &&
	base=$(proxy_rss) &&
	provider_mark &&
	{ gw /providers/anthropic/v1/messages -o big.out -w "%{http_code}" \
		-H "x-api-key: $KEY" -H "anthropic-version: 2023-06-01" \
		-H "content-type: application/json" -H "x-test-read-pause-ms: 4000" \
		--data-binary @big.json >big.code & } &&
	bigpid=$! &&
	top=$base &&
	for i in $(seq 1 12); do
		sleep 0.25 &&
		now=$(proxy_rss) &&
		if test "$now" -gt "$top"; then top=$now; fi || return 1
	done &&
	wait "$bigpid" &&
	test_diag "RSS $base KiB before, at most $top KiB while the provider waited" &&
	test "$top" -le $((base + BIG_SLACK_KIB)) &&
	test "$(cat big.code)" = 200 &&
	provider_since &&
	audit_count psince.jsonl body_len=$BIG_BYTES status=200 >n &&
	echo 1 >expect && test_cmp expect n
'

test_expect_success 'metrics: calls, errors and tokens by provider' '
	test "$(proxy_metric intutic_gateway_calls_total provider=anthropic)" -ge 8 &&
	test "$(proxy_metric intutic_gateway_errors_total provider=anthropic)" -ge 3 &&
	test "$(proxy_metric intutic_gateway_tokens_total "provider=anthropic,kind=output")" -ge 26 &&
	test "$(proxy_metric intutic_decision_reasons_total reason=tls-failed)" = 1
'

# --- the key broker -------------------------------------------------------------

REAL=sk-ant-api03-REALKEYrealkey0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ012345678901234
command -v dig >/dev/null 2>&1 && test_set_prereq DIG

test_expect_success 'broker: a brokered provider without a key: the proxy does not start, and says where to put it' '
	stop_proxy &&
	fill_rules gateway/broker.yaml broker.yaml PORT="$PROVIDER_PORT" \
		OTHERPORT="$OTHER_TEST_PORT" &&
	mkdir -p keys && chmod 700 keys &&
	test_must_fail env -u ANTHROPIC_API_KEY "$top_builddir/proxy/intutic-proxy" \
		--rules broker.yaml --port 0 --state-dir state-nokey \
		--resolv-conf resolv.conf --hosts hosts --gateway-keys keys 2>nokey.err &&
	test_grep "broker anthropic.s key" nokey.err &&
	test_grep "keys/anthropic [(]mode 600[)]" nokey.err &&
	test_grep "ANTHROPIC_API_KEY" nokey.err &&
	printf "%s\n" "$REAL" >keys/anthropic && chmod 644 keys/anthropic &&
	test_must_fail env -u ANTHROPIC_API_KEY "$top_builddir/proxy/intutic-proxy" \
		--rules broker.yaml --port 0 --state-dir state-nokey \
		--resolv-conf resolv.conf --hosts hosts --gateway-keys keys 2>mode.err &&
	test_grep "chmod 600" mode.err &&
	chmod 600 keys/anthropic &&
	DNS_FILTER_PORT=$(free_port) &&
	start_proxy broker.yaml --gateway-ca "$CA_FILE" --gateway-keys keys \
		--dns-bind "127.0.0.1:$DNS_FILTER_PORT"
'

test_expect_success 'broker: the agent holds only its run'"'"'s sentinel (shaped like a key), the provider receives the real key' '
	audit_mark && provider_mark &&
	printf "{\"model\":\"claude-b\",\"max_tokens\":10,\"messages\":%s}" "$MSGS" >body.json &&
	ANTHROPIC_API_KEY=$REAL "$INTUTIC" exec --state-dir "$PROXY_DIR/state" -e ANTHROPIC_API_KEY -- sh -c "
		echo \$INTUTIC_RUN >run.id && env >agent.env &&
		printf %s \"\$ANTHROPIC_API_KEY\" >sentinel &&
		curl -sS --noproxy \"*\" -o b1.json -w \"%{http_code}\\n\" \
			-H \"x-api-key: \$ANTHROPIC_API_KEY\" -d @body.json \
			\"\$ANTHROPIC_BASE_URL/v1/messages\" >b1.code &&
		curl -sS --noproxy \"*\" -o b2.json -w \"%{http_code}\\n\" \
			-H \"authorization: Bearer \$ANTHROPIC_API_KEY\" -d @body.json \
			\"\$ANTHROPIC_BASE_URL/v1/messages\" >b2.code" 2>exec.err &&
	echo 200 >expect && test_cmp expect b1.code && test_cmp expect b2.code &&
	! grep -F "$REAL" agent.env &&
	! grep -F "REALKEY" agent.env &&
	s=$(cat sentinel) &&
	test "${#s}" = 108 &&
	case $s in sk-ant-api03-*) ;; *) false ;; esac &&
	test "$s" != "$REAL" &&
	provider_since &&
	audit_count psince.jsonl key=$REAL key_header=x-api-key >n &&
	echo 2 >expect && test_cmp expect n &&
	! grep -F "$s" psince.jsonl &&
	fp=$(printf "anthropic\0%s" "$REAL" | openssl dgst -sha256 -mac HMAC \
		-macopt hexkey:$(cat state/gateway.secret) | sed "s/.*= //" | cut -c1-16) &&
	calls_wait 2 &&
	audit_expect 2 event=call key_mode=broker key=hmac:$fp run=$(cat run.id) \
		status=200 usage=final &&
	! grep -F "$s" audit.jsonl && ! grep -F "$REAL" audit.jsonl
'

test_expect_success 'broker: a call with any other key than the run'"'"'s sentinel is refused (key-mismatch), nothing reaches the provider' '
	audit_mark && provider_mark &&
	"$INTUTIC" exec --state-dir "$PROXY_DIR/state" -- sh -c "
		curl -sS --noproxy \"*\" -o m.txt -w \"%{http_code}\\n\" \
			-H \"x-api-key: $REAL\" -d \"{}\" \
			\"\$ANTHROPIC_BASE_URL/v1/messages\" >m.code &&
		curl -sS --noproxy \"*\" -o m2.txt -w \"%{http_code}\\n\" \
			-H \"x-api-key: \$ANTHROPIC_API_KEY\" \
			-H \"authorization: Bearer sk-ant-api03-other\" -d \"{}\" \
			\"\$ANTHROPIC_BASE_URL/v1/messages\" >m2.code" &&
	echo 403 >expect && test_cmp expect m.code && test_cmp expect m2.code &&
	test_grep "key-mismatch" m.txt &&
	test_grep "ANTHROPIC_API_KEY" m.txt &&
	provider_since && test_must_be_empty psince.jsonl &&
	audit_since 2 && audit_expect 2 event=decision reason=key-mismatch
'

test_expect_success 'broker: the sentinel sent to another allowed host, in a header, in a host name, in a CONNECT, to another provider, is refused and audited as credential-leak' '
	audit_mark && provider_mark && server_mark other.test &&
	"$INTUTIC" exec --state-dir "$PROXY_DIR/state" -- sh -c "
		s=\$ANTHROPIC_API_KEY &&
		part=\$(printf %s \"\$s\" | cut -c20-60 | tr A-Z a-z) &&
		curl -sS -o l1.txt -w \"%{http_code}\\n\" -H \"x-leak: \$s\" \
			http://other.test:$OTHER_TEST_PORT/?tag >l1.code;
		curl -sS -o l2.txt -w \"%{http_code}\\n\" \
			\"http://other.test:$OTHER_TEST_PORT/?q=\$s\" >l2.code;
		curl -sS -o l3.txt -w \"%{http_code}\\n\" \
			\"http://\$part.other.test:$OTHER_TEST_PORT/?tag\" >l3.code;
		curl -sS -o l4.txt -w \"%{http_code}\\n\" -p \
			\"http://\$part.other.test:$OTHER_TEST_PORT/?tag\" >l4.code;
		curl -sS --noproxy \"*\" -o l5.txt -w \"%{http_code}\\n\" \
			-H \"authorization: Bearer \$s\" -d \"{}\" \
			\"\$OPENAI_BASE_URL/chat/completions\" >l5.code;
		true" &&
	for n in 1 2 3 5; do
		echo 403 >expect && test_cmp expect l$n.code &&
		test_grep "credential-leak" l$n.txt || return 1
	done &&
	echo 000 >expect && test_cmp expect l4.code &&
	server_since other.test && test_must_be_empty other.test.new &&
	provider_since && test_must_be_empty psince.jsonl &&
	audit_since 5 &&
	audit_expect 5 event=decision decision=deny reason=credential-leak "run~^run-"
'

test_expect_success DIG 'broker: the sentinel in a DNS name is refused (credential-leak), never asked upstream' '
	audit_mark &&
	"$INTUTIC" exec --state-dir "$PROXY_DIR/state" -- sh -c "
		part=\$(printf %s \"\$ANTHROPIC_API_KEY\" | cut -c14-50 | tr A-Z a-z) &&
		dig +tries=1 +time=2 -p $DNS_FILTER_PORT @127.0.0.1 \
			\$part.api.provider.test A >dig.full 2>&1" &&
	test_grep "status: REFUSED" dig.full &&
	audit_wait proto=dns reason=credential-leak rcode=REFUSED
'

test_expect_success 'broker: the sentinel dies with its run' '
	s=$(cat sentinel) && run=$(cat run.id) &&
	gw /providers/anthropic/v1/messages -o dead.txt -w "%{http_code}\n" \
		-H "x-api-key: $s" -d "{}" >code &&
	echo 403 >expect && test_cmp expect code &&
	test_grep "must be a run" dead.txt &&
	curl -sS -x "$PROXY_URL" -o dead2.txt -w "%{http_code}\n" \
		-H "x-leak: $s" "http://other.test:$OTHER_TEST_PORT/?tag" >code &&
	echo 200 >expect && test_cmp expect code
'

test_done
