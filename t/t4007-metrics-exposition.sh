#!/bin/sh
test_description='/metrics: the exposition checked by real parsers (promtool check metrics and its lint, prometheus_client) after allowed, denied and gateway traffic; every name intutic_, counters _total, HELP and TYPE for each; intutic_build_info'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
. "$top_srcdir/t/lib-gateway.sh"
test_isolate_netns
test_require_proxy curl

# The parsers: promtool from Debian's prometheus package, the Python client
# from python3-prometheus-client (scripts/bootstrap installs both).  The
# client is Debian's python3's: the python3 on PATH may be another.
test_lazy_prereq PROMTOOL 'command -v promtool'
PROMPY=
for py in python3 /usr/bin/python3; do
	if "$py" -c "import prometheus_client.parser" 2>/dev/null; then
		PROMPY=$py
		test_set_prereq PROMCLIENT
		break
	fi
done
if ! test_have_prereq PROMTOOL && ! test_have_prereq PROMCLIENT; then
	test_skip_all "no Prometheus parser: neither promtool (apt-get install prometheus) nor python3-prometheus-client"
fi

KEY=sk-ant-api03-metricstestkey0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH

# scrape FILE: the proxy's /metrics page into FILE.
scrape () {
	curl -sS --fail --noproxy '*' --max-time "$TEST_CURL_SECONDS" \
		-o "$1" "$PROXY_URL/metrics"
}

test_expect_success 'setup: an origin, the test provider, the proxy with the gateway on' '
	test_certs &&
	start_origin origin &&
	start_provider provider &&
	write_hosts hosts origin.test=127.0.0.1 denied.test=127.0.0.1 \
		api.provider.test=127.0.0.1 &&
	cat >rules.yaml <<-EOF &&
	version: 1
	ports: [$ORIGIN_PORT, $PROVIDER_PORT]
	allow:
	  - origin.test
	  - api.provider.test
	  - "127.0.0.0/8"
	deny:
	  - denied.test
	providers:
	  anthropic:
	    api: "api.provider.test:$PROVIDER_PORT"
	    key-headers: [x-api-key]
	gateway:
	  anthropic: on
	EOF
	start_proxy rules.yaml --gateway-ca "$CA_FILE"
'

test_expect_success 'traffic: an allowed GET, a denied one, a gateway call' '
	proxy_curl -o out "http://origin.test:$ORIGIN_PORT/" &&
	test_grep "hello from origin.test" out &&
	test_expect_code 22 proxy_curl --fail -o /dev/null \
		"http://denied.test:$ORIGIN_PORT/" &&
	curl -sS --fail --noproxy "*" --max-time 20 -o call.json \
		-H "x-api-key: $KEY" -H "anthropic-version: 2023-06-01" \
		-H "content-type: application/json" \
		-d "{\"model\":\"claude-x\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" \
		"$PROXY_URL/providers/anthropic/v1/messages" &&
	test_grep "output_tokens" call.json &&
	scrape metrics.txt
'

test_expect_success 'the samples the traffic made are there' '
	test "$(proxy_metric intutic_decisions_total decision=allow)" -ge 2 &&
	test "$(proxy_metric intutic_decisions_total decision=deny)" -ge 1 &&
	test "$(proxy_metric intutic_gateway_calls_total provider=anthropic)" = 1 &&
	test "$(proxy_metric intutic_bytes_total direction=down)" -gt 0
'

test_expect_success PROMTOOL 'promtool check metrics: it parses, and its lint says nothing' '
	promtool check metrics <metrics.txt >lint.out 2>&1 ||
		{ cat lint.out; false; } &&
	test_must_be_empty lint.out
'

test_expect_success PROMCLIENT 'prometheus_client parses it: every family intutic_, HELP and a type, counters _total, build_info 1' '
	"$PROMPY" - metrics.txt <<-\EOF
	import sys
	from prometheus_client.parser import text_string_to_metric_families
	text = open(sys.argv[1]).read()
	fams = list(text_string_to_metric_families(text))
	assert len(fams) >= 20, len(fams)
	names = set()
	for f in fams:
	    assert f.name.startswith("intutic_"), f.name
	    assert f.name not in names, "twice: " + f.name
	    names.add(f.name)
	    assert f.documentation, "no HELP: " + f.name
	    assert f.type in ("counter", "gauge"), (f.name, f.type)
	    for s in f.samples:
	        if f.type == "counter":
	            # the client takes the _total off the family, not the sample
	            assert s.name == f.name + "_total", (f.name, s.name)
	        assert s.value >= 0, s
	for line in text.splitlines():
	    if line.startswith("# TYPE ") and line.endswith(" counter"):
	        assert line.split()[2].endswith("_total"), line
	bi = [f for f in fams if f.name == "intutic_build_info"]
	assert len(bi) == 1 and bi[0].type == "gauge", bi
	(s,) = bi[0].samples
	assert s.value == 1, s
	assert s.labels["version"], s.labels
	assert set(s.labels) == {"version", "libevent", "openssl", "llhttp"}, s.labels
	EOF
'

test_expect_success 'intutic_build_info names the version intutic-proxy --version says' '
	v=$("$top_builddir/proxy/intutic-proxy" --version | sed "s/^intutic-proxy //") &&
	test_grep "^intutic_build_info\{version=\"$v\",libevent=\"[^\"]+\",openssl=\"[^\"]+\",llhttp=\"[^\"]+\"\} 1$" metrics.txt
'

test_expect_success 'intutic_start_time_seconds: the Unix time the state file says it started' '
	started=$(python3 -c "import json; print(json.load(open(\"state/proxy.json\"))[\"started\"])") &&
	test "$(proxy_metric intutic_start_time_seconds)" = "$started"
'

test_done
