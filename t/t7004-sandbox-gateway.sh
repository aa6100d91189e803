#!/bin/sh
test_description='intutic exec --sandbox with real podman and the provider gateway: the container gets base URLs pointing at the gateway on the bridge and, for a brokered provider, only its run'"'"'s sentinel; its calls are audited as its run'"'"'s, and the test provider receives the real key'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
. "$top_srcdir/t/lib-sandbox.sh"
. "$top_srcdir/t/lib-gateway.sh"
sandbox_isolate_netns
test_require_proxy curl

test_exec_env

REAL=sk-ant-api03-REALsandboxkey0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789012
OKEY=sk-proj-sandboxpassthrough0123456789

test_expect_success 'setup: the image, the test provider, the proxy with the gateway (anthropic brokered, openai passed through)' '
	sandbox_setup &&
	start_sandbox_gateway "$REAL"
'

test_expect_success 'in the sandbox: base URLs at the gateway on the bridge, the sentinel and not the key; calls go through, the provider gets the real key' '
	audit_mark &&
	printf "{\"model\":\"claude-box\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\"say hi\"}]}" >body.json &&
	printf "{\"model\":\"gpt-box\",\"messages\":[{\"role\":\"user\",\"content\":\"say hi\"}]}" >obody.json &&
	OPENAI_API_KEY=$OKEY ANTHROPIC_API_KEY=$REAL sandbox_exec \
		--sandbox-mount "$TRASH_DIRECTORY:ro" -- sh -c "
		env >/tmp/env.txt
		echo \"A=\$ANTHROPIC_BASE_URL\"
		echo \"O=\$OPENAI_BASE_URL\"
		echo \"K=\$ANTHROPIC_API_KEY\"
		grep -c REALsandbox /tmp/env.txt || true
		curl -sS -o /tmp/a.json -w \"acode=%{http_code}\n\" \
			-H \"x-api-key: \$ANTHROPIC_API_KEY\" -d @$TRASH_DIRECTORY/body.json \
			\"\$ANTHROPIC_BASE_URL/v1/messages\"
		curl -sS -o /tmp/o.json -w \"ocode=%{http_code}\n\" \
			-H \"authorization: Bearer \$OPENAI_API_KEY\" -d @$TRASH_DIRECTORY/obody.json \
			\"\$OPENAI_BASE_URL/chat/completions\"
	" &&
	cat out &&
	test "$rc" = 0 &&
	test_grep "^A=http://[^/]*:$PROXY_PORT/r/run-[0-9a-f]*:[0-9a-f]*/providers/anthropic\$" out &&
	test_grep "^O=http://[^/]*:$PROXY_PORT/r/run-[0-9a-f]*:[0-9a-f]*/providers/openai/v1\$" out &&
	test_grep "^K=sk-ant-api03-" out &&
	! grep -F "$REAL" out &&
	test_grep "^0\$" out &&
	test_grep "^acode=200\$" out &&
	test_grep "^ocode=200\$" out &&
	audit_count "$PROVIDER_REQUESTS" key=$REAL >n && echo 1 >expect && test_cmp expect n &&
	audit_count "$PROVIDER_REQUESTS" key=$OKEY >n && test_cmp expect n &&
	audit_wait event=call provider=anthropic key_mode=broker model=claude-box \
		status=200 usage=final "run~^run-" "client~^10[.]" &&
	audit_wait event=call provider=openai key_mode=passthrough model=gpt-box \
		status=200 "run~^run-"
'

test_done
