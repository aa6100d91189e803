#!/bin/sh
test_description='the provider double (t/helpers/provider.py) against the real clients, no proxy: the official Anthropic and OpenAI SDKs and Claude Code from npm, over TLS by name, in every mode the gateway tests will use; its token numbers, behaviours, request log and WebSocket echo'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
. "$top_srcdir/t/lib-gateway.sh"

# Outside the namespace: installs the pinned clients once (npm needs the
# registry); inside: the cache only.
gateway_npm_clients
test_isolate_netns
test_require_proxy curl node unshare mount timeout

ANSWER='Hello from the provider double.'

# what the double reports for the prompt sdk.cjs sends (provider.py's
# formulas, computed here on their own): input 3 + C(messages) // 4 for
# Messages and Chat, 3 + C(input) // 4 for Responses; output 13 (six text
# deltas: 2 * 6 + 1); the first of the two message_delta events says 7
test_expect_success 'setup: the CA, the double, the numbers it will report' '
	test_certs &&
	start_provider provider &&
	python3 -c "
import json
def c(x):
    return len(json.dumps(x, sort_keys=True, separators=(\",\", \":\"), ensure_ascii=False))
print(3 + c([{\"role\": \"user\", \"content\": \"say hi\"}]) // 4, 3 + c(\"say hi\") // 4)
" >numbers &&
	read IN_MSG IN_RESP <numbers &&
	test "$IN_MSG" = 12 && test "$IN_RESP" = 5 &&
	OUT=13
'

# pcurl ARGS...: curl to the double by name, the test CA trusted.
pcurl () {
	curl -sS --max-time 10 --cacert "$CA_FILE" --noproxy "*" \
		--resolve "$GATEWAY_PROVIDER_HOST:$PROVIDER_PORT:127.0.0.1" "$@"
}

# records COND...: how many of the double's log records match.
records () {
	audit_count "$PROVIDER_REQUESTS" "$@"
}

# records_are N COND...: exactly N match; else show the log.
records_are () {
	test_rec_want_=$1
	shift
	test_rec_got_=$(records "$@") || return 1
	test "$test_rec_got_" = "$test_rec_want_" && return 0
	echo "$test_rec_got_ records of the double match $*, not $test_rec_want_:" >&2
	cat "$PROVIDER_REQUESTS" >&2
	return 1
}

test_expect_success 'curl: a key is required (401 in each provider'"'"'s shape), other paths are 404, the stream has two message_delta events' '
	pcurl -o none.json -w "%{http_code}\n" -d "{\"model\": \"m\", \"max_tokens\": 5, \"messages\": []}" \
		"$PROVIDER_URL/v1/messages" >code &&
	echo 401 >expect && test_cmp expect code &&
	test_grep "\"type\":\"error\",\"error\":{\"type\":\"authentication_error\"" none.json &&
	pcurl -o none2.json -w "%{http_code}\n" -d "{\"model\": \"m\", \"messages\": []}" \
		"$PROVIDER_URL/v1/chat/completions" >code &&
	test_cmp expect code &&
	test_grep "^{\"error\":{\"message\":\"You didn" none2.json &&
	pcurl -o nf.json -w "%{http_code}\n" -H "x-api-key: k" "$PROVIDER_URL/v2/nothing" >code &&
	echo 404 >expect && test_cmp expect code &&
	pcurl -N -D head -o sse -H "x-api-key: sk-ant-t3700-curl" \
		-d "{\"model\": \"m\", \"max_tokens\": 5, \"stream\": true, \"messages\": [{\"role\": \"user\", \"content\": \"say hi\"}]}" \
		"$PROVIDER_URL/v1/messages" &&
	test_grep -i "^transfer-encoding: chunked" head &&
	test_grep -i "^content-type: text/event-stream" head &&
	test_grep -i "^request-id: req_" head &&
	grep "^data: {\"type\":\"message_delta\"" sse | sed "s/.*\"output_tokens\":\([0-9]*\).*/\1/" >deltas &&
	printf "7\n13\n" >expect && test_cmp expect deltas &&
	test_grep "^event: ping" sse &&
	records_are 1 key=sk-ant-t3700-curl key_header=x-api-key api=messages \
		stream=true status=200 input_tokens=$IN_MSG output_tokens=$OUT end=ok events_total=13
'

# @anthropic-ai/sdk 1.x sends its apiKey as "Authorization: Bearer KEY"
# (and anthropic-version 2026-10-21); Claude Code 2.1.112 (which bundles
# the SDK 0.81) sends x-api-key: a gateway sees both.
test_expect_success NPM_CLIENTS 'Anthropic SDK: messages.create gets the text and the usage; the double got its key, as a bearer token' '
	gateway_sdk anthropic create "$PROVIDER_URL" sk-ant-t3700-create claude-test-1 >out &&
	gateway_json_is out \
		"j[\"text\"]" "$ANSWER" \
		"j[\"usage\"][\"input_tokens\"]" "$IN_MSG" \
		"j[\"usage\"][\"output_tokens\"]" "$OUT" \
		"j[\"usage\"][\"cache_creation_input_tokens\"]" 17 \
		"j[\"usage\"][\"cache_read_input_tokens\"]" 19 \
		"j[\"request_id\"].startswith(\"req_\")" True &&
	records_are 1 key=sk-ant-t3700-create key_header=authorization \
		method=POST path=/v1/messages model=claude-test-1 stream=false status=200 &&
	audit_records "$PROVIDER_REQUESTS" key=sk-ant-t3700-create >sdk.rec &&
	test_grep "\[\"User-Agent\",\"Anthropic/JS 1\." sdk.rec &&
	test_grep -v "\[\"x-api-key\"," sdk.rec
'

test_expect_success NPM_CLIENTS 'Anthropic SDK: messages.stream and create({stream: true}): the final output_tokens is the last message_delta'"'"'s (13), not the first'"'"'s (7)' '
	gateway_sdk anthropic stream "$PROVIDER_URL" sk-ant-t3700-stream claude-test-1 >out &&
	gateway_json_is out \
		"j[\"text\"]" "$ANSWER" \
		"j[\"usage\"][\"output_tokens\"]" "$OUT" \
		"j[\"usage\"][\"input_tokens\"]" "$IN_MSG" \
		"j[\"event_types\"].count(\"message_delta\")" 2 &&
	gateway_sdk anthropic create-stream "$PROVIDER_URL" sk-ant-t3700-raw claude-test-1 >raw &&
	gateway_json_is raw \
		"j[\"message_delta_output_tokens\"]" "[7, 13]" \
		"j[\"usage\"][\"output_tokens\"]" "$OUT" \
		"j[\"text\"]" "$ANSWER" &&
	records_are 1 key=sk-ant-t3700-stream stream=true output_tokens=$OUT &&
	records_are 1 key=sk-ant-t3700-raw stream=true output_tokens=$OUT
'

test_expect_success NPM_CLIENTS 'OpenAI SDK, Chat Completions: not streamed, and streamed with include_usage (the usage chunk parsed); the key came as a bearer token' '
	gateway_sdk chat create "$PROVIDER_URL/v1" sk-t3700-chat gpt-test-1 >out &&
	gateway_json_is out \
		"j[\"text\"]" "$ANSWER" \
		"j[\"usage\"][\"prompt_tokens\"]" "$IN_MSG" \
		"j[\"usage\"][\"completion_tokens\"]" "$OUT" &&
	gateway_sdk chat stream "$PROVIDER_URL/v1" sk-t3700-chat-stream gpt-test-1 >st &&
	gateway_json_is st \
		"j[\"text\"]" "$ANSWER" \
		"j[\"event_types\"][-1]" usage \
		"j[\"usage\"][\"prompt_tokens\"]" "$IN_MSG" \
		"j[\"usage\"][\"completion_tokens\"]" "$OUT" \
		"j[\"usage\"][\"total_tokens\"]" $((IN_MSG + OUT)) \
		"j[\"usage\"][\"prompt_tokens_details\"][\"cached_tokens\"]" $((IN_MSG / 2)) \
		"j[\"usage\"][\"completion_tokens_details\"][\"reasoning_tokens\"]" 5 &&
	records_are 1 key=sk-t3700-chat key_header=authorization api=chat stream=false &&
	records_are 1 key=sk-t3700-chat-stream key_header=authorization api=chat stream=true \
		input_tokens=$IN_MSG output_tokens=$OUT
'

test_expect_success NPM_CLIENTS 'OpenAI SDK, Responses: not streamed (output_text), and streamed (response.completed'"'"'s usage parsed)' '
	gateway_sdk responses create "$PROVIDER_URL/v1" sk-t3700-resp gpt-test-1 >out &&
	gateway_json_is out \
		"j[\"text\"]" "$ANSWER" \
		"j[\"usage\"][\"input_tokens\"]" "$IN_RESP" &&
	gateway_sdk responses stream "$PROVIDER_URL/v1" sk-t3700-resp-stream gpt-test-1 >st &&
	gateway_json_is st \
		"j[\"text\"]" "$ANSWER" \
		"j[\"event_types\"][-1]" response.completed \
		"j[\"usage\"][\"input_tokens\"]" "$IN_RESP" \
		"j[\"usage\"][\"output_tokens\"]" "$OUT" \
		"j[\"usage\"][\"total_tokens\"]" $((IN_RESP + OUT)) \
		"j[\"usage\"][\"input_tokens_details\"][\"cached_tokens\"]" $((IN_RESP / 2)) \
		"j[\"usage\"][\"output_tokens_details\"][\"reasoning_tokens\"]" 5 &&
	records_are 1 key=sk-t3700-resp-stream api=responses stream=true output_tokens=$OUT
'

test_expect_success NPM_CLIENTS 'errors: 429 is each SDK'"'"'s RateLimitError, 500 its InternalServerError, with the status' '
	for api in anthropic chat responses; do
		base=$PROVIDER_URL/v1 &&
		if test $api = anthropic; then base=$PROVIDER_URL; fi &&
		test_expect_code 1 gateway_sdk $api stream "$base" sk-t3700-429 test-error-429 >out.$api &&
		gateway_json_is out.$api \
			"j[\"error_class\"]" RateLimitError \
			"j[\"rate_limit_error\"]" True \
			"j[\"status\"]" 429 &&
		test_expect_code 1 gateway_sdk $api create "$base" sk-t3700-500 test-error-500 >err.$api &&
		gateway_json_is err.$api \
			"j[\"error_class\"]" InternalServerError \
			"j[\"status\"]" 500 || return 1
	done &&
	records_are 3 key=sk-t3700-429 status=429 &&
	records_are 3 key=sk-t3700-500 status=500
'

test_expect_success NPM_CLIENTS 'test-reset: the SDK'"'"'s stream iteration throws after the first events; the double logged the reset' '
	for api in anthropic chat responses; do
		base=$PROVIDER_URL/v1 &&
		if test $api = anthropic; then base=$PROVIDER_URL; fi &&
		test_expect_code 1 gateway_sdk $api stream "$base" sk-t3700-reset-$api test-reset >out.$api &&
		gateway_json_is out.$api \
			"j[\"ok\"]" False \
			"0 < j[\"events\"] <= 3" True &&
		records_are 1 key=sk-t3700-reset-$api end=reset events_total=3 || return 1
	done
'

test_expect_success NPM_CLIENTS 'test-malformed: the SDK fails on the event that is not JSON' '
	test_expect_code 1 gateway_sdk anthropic stream "$PROVIDER_URL" sk-t3700-bad test-malformed >out &&
	gateway_json_is out \
		"j[\"ok\"]" False \
		"j[\"events\"]" 0 &&
	test_expect_code 1 gateway_sdk chat stream "$PROVIDER_URL/v1" sk-t3700-bad test-malformed >out2 &&
	gateway_json_is out2 "j[\"error_class\"]" SyntaxError &&
	records_are 2 key=sk-t3700-bad behaviour=test-malformed status=200
'

test_expect_success NPM_CLIENTS 'Claude Code: cli.js --version is the pinned version' '
	gateway_claude "$PROVIDER_URL" sk-ant-api03-t3700-version --version >out &&
	want=${GATEWAY_NPM_CLIENTS##*@anthropic-ai/claude-code@} &&
	want=${want%% *} &&
	test_grep "^$want \(Claude Code\)$" out
'

test_expect_success NPM_CLIENTS 'Claude Code: claude -p prints the double'"'"'s answer and exits 0; its POST /v1/messages carried its key' '
	gateway_claude "$PROVIDER_URL" sk-ant-api03-t3700-claude -p "say hi" >out 2>err &&
	echo "$ANSWER" >expect &&
	test_cmp expect out &&
	records_are 1 key=sk-ant-api03-t3700-claude key_header=x-api-key method=POST \
		"path~^/v1/messages(\?|$)" stream=true status=200 end=ok &&
	audit_records "$PROVIDER_REQUESTS" key=sk-ant-api03-t3700-claude api=messages >claude.rec &&
	test_grep "\[\"User-Agent\",\"claude-cli/" claude.rec
'

test_expect_success 'WebSocket on /v1/responses: 101 with the right accept, a text frame echoed, the close answered; none without a key' '
	client_py ws --to "127.0.0.1:$PROVIDER_PORT" --tls --cacert "$CA_FILE" \
		--sni "$GATEWAY_PROVIDER_HOST" --host "$GATEWAY_PROVIDER_HOST:$PROVIDER_PORT" \
		--path /v1/responses --header "Authorization: Bearer sk-t3700-ws" \
		--message "{\"type\": \"response.create\"}" >out &&
	printf "%s\n" "HTTP/1.1 101 Switching Protocols" \
		"echo: {\"type\": \"response.create\"}" "close: 1000" >expect &&
	test_cmp expect out &&
	records_are 1 key=sk-t3700-ws api=ws status=101 events_total=2 &&
	test_expect_code 1 client_py ws --to "127.0.0.1:$PROVIDER_PORT" --tls --cacert "$CA_FILE" \
		--sni "$GATEWAY_PROVIDER_HOST" --host "$GATEWAY_PROVIDER_HOST:$PROVIDER_PORT" \
		--path /v1/responses --message x >out2 &&
	test_grep "^HTTP/1.1 401 " out2
'

test_expect_success NPM_CLIENTS 'test-slow: the SDK had the first event before the double sent the last (200 ms apart: no buffering)' '
	for api in anthropic chat; do
		base=$PROVIDER_URL/v1 &&
		if test $api = anthropic; then base=$PROVIDER_URL; fi &&
		gateway_sdk $api stream "$base" sk-t3700-slow-$api test-slow >out.$api &&
		gateway_json_is out.$api "j[\"text\"]" "$ANSWER" &&
		audit_records "$PROVIDER_REQUESTS" key=sk-t3700-slow-$api >rec.$api &&
		python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))
r = json.loads(open(sys.argv[2]).read())
last = r[\"events\"][-1][\"t\"] * 1000
first = r[\"events\"][0][\"t\"] * 1000
print(\"first seen %.0f ms after the first sent, %.0f ms before the last sent\" % (c[\"first_event_ms\"] - first, last - c[\"first_event_ms\"]))
sys.exit(0 if c[\"first_event_ms\"] < last - 1000 and last - first > 1000 else 1)
" out.$api rec.$api || return 1
	done
'

test_expect_success NPM_CLIENTS 'test-long: x-test-events: 5000 gives 5000 text deltas and output_tokens 10001' '
	gateway_sdk anthropic create-stream "$PROVIDER_URL" sk-t3700-long test-long \
		"x-test-events: 5000" >out &&
	gateway_json_is out \
		"j[\"events\"]" 5006 \
		"len(j[\"text\"])" 20000 \
		"j[\"usage\"][\"output_tokens\"]" 10001 &&
	records_are 1 key=sk-t3700-long events_total=5007 output_tokens=10001
'

test_expect_success 'SIGTERM ends the double at once, status 0' '
	kill -TERM "$PROVIDER_PID" &&
	wait_until 5 test_proc_gone_ "$PROVIDER_PID" &&
	wait "$PROVIDER_PID"
'

test_done
