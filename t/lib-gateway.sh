# t/lib-gateway.sh — what a provider gateway test needs: a test double of
# the model providers' HTTPS APIs (t/helpers/provider.py) on loopback, and
# the providers' real client libraries from npm, pinned (the SDKs driven
# by t/helpers/sdk.cjs, and Claude Code).  Sourced after lib-test.sh and
# lib-proxy.sh:
#
#	#!/bin/sh
#	test_description='gateway: ...'
#	. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
#	. "$top_srcdir/t/lib-proxy.sh"
#	. "$top_srcdir/t/lib-gateway.sh"
#	gateway_npm_clients
#	test_isolate_netns
#	test_require_proxy node unshare mount
#	test_expect_success 'setup' '
#		test_certs &&
#		start_provider provider
#	'
#	test_expect_success NPM_CLIENTS 'the Anthropic SDK gets its answer' '
#		gateway_sdk anthropic stream "$PROVIDER_URL" sk-ant-test m >out &&
#		test_grep "\"ok\":true" out
#	'
#	test_done
#
# The clients: GATEWAY_NPM_CLIENTS below, exact versions, installed once
# with npm into $GATEWAY_TEST_CACHE (default $SANDBOX_TEST_CACHE, else
# /var/cache/intutic-tests) in a directory named after that list.  npm
# needs the registry, which the test's namespace cannot reach: the install
# happens when gateway_npm_clients runs OUTSIDE the namespace, that is when
# the script calls it before test_isolate_netns (whose outside half runs
# the script's top lines once, then runs the whole script again inside).
# Inside, gateway_npm_clients only looks at the cache.  The prerequisite
# NPM_CLIENTS holds when the clients are there; when they are not, the
# tests that need them are skipped and a "# " line says why.  Remove the
# directory to install them again.
#
# Names: the double's certificate (from the test CA, certs/provider.crt)
# is for GATEWAY_PROVIDER_HOST, api.provider.test.  The clients resolve it
# to 127.0.0.1 through a hosts file bind-mounted over /etc/hosts in a
# mount namespace of their own (gateway_with_hosts), so that they connect
# by name, send that SNI and Host, and check the certificate against it,
# as they would a provider's.  The script's /etc/hosts is left alone.
#
# POSIX sh (dash).  The library's own variables end in '_', as in
# lib-test.sh.

# --- the pinned clients ---------------------------------------------------------
# The newest versions that run on the Node of Debian 12 / the test machines
# (v20), checked with `npm view PKG@VER engines`:
#   @anthropic-ai/sdk 1.17.0         the newest; no engines field (the
#                                    install runs with --engine-strict);
#                                    sends its apiKey as "Authorization:
#                                    Bearer", not x-api-key (Claude Code
#                                    2.1.112, on the SDK 0.81, sends
#                                    x-api-key)
#   openai 6.49.0                    the newest 6.x; 7.0.0 and later want
#                                    node >=22
#   @anthropic-ai/claude-code 2.1.112
#                                    the newest that is a Node program
#                                    (bin cli.js, no install script);
#                                    2.1.113 and later ship a native
#                                    binary that a postinstall script
#                                    (install.cjs) puts in place, and
#                                    2.1.198 and later want node >=22
GATEWAY_NPM_CLIENTS="@anthropic-ai/sdk@1.17.0 openai@6.49.0 @anthropic-ai/claude-code@2.1.112"

# --- limits -----------------------------------------------------------------
GATEWAY_NPM_SECONDS=600		# npm install of the clients (a download)
GATEWAY_NODE_SECONDS=60		# gateway_node, gateway_sdk: one client run
GATEWAY_CLAUDE_SECONDS=120	# gateway_claude: one Claude Code run

GATEWAY_PROVIDER_HOST=api.provider.test
: "${GATEWAY_TEST_CACHE:=${SANDBOX_TEST_CACHE:-/var/cache/intutic-tests}}"
test_gw_key_=$(printf '%s' "$GATEWAY_NPM_CLIENTS" | cksum | awk '{ print $1 }')
test_gw_dir_=$GATEWAY_TEST_CACHE/npm-clients-$test_gw_key_
GATEWAY_NODE_MODULES=$test_gw_dir_/node_modules
GATEWAY_CLAUDE=$GATEWAY_NODE_MODULES/@anthropic-ai/claude-code/cli.js
export GATEWAY_TEST_CACHE GATEWAY_NODE_MODULES GATEWAY_CLAUDE \
    GATEWAY_PROVIDER_HOST

# --- the clients from npm --------------------------------------------------------

# test_gw_clients_ok_: the cache holds every pinned package, at its version.
test_gw_clients_ok_ () {
	test -f "$GATEWAY_CLAUDE" || return 1
	for test_gw_spec_ in $GATEWAY_NPM_CLIENTS; do
		test_gw_pkg_=${test_gw_spec_%@*}
		test_gw_ver_=$(node -p 'require(process.argv[1]).version' \
		    "$GATEWAY_NODE_MODULES/$test_gw_pkg_/package.json" 2>/dev/null) || return 1
		test "$test_gw_ver_" = "${test_gw_spec_##*@}" || return 1
	done
}

# test_gw_install_: npm install of GATEWAY_NPM_CLIENTS into a temporary
# directory beside the cache's, checked, then renamed into place (a reader
# never sees half of it); under a lock (another script may be at it), at
# most GATEWAY_NPM_SECONDS.  --ignore-scripts: none of the pinned packages
# needs its install scripts (Claude Code 2.1.112 has none); --engine-strict:
# a package that wants another Node fails the install.  npm's own cache is
# a temporary one, removed.  Output in $GATEWAY_TEST_CACHE/npm-clients.log.
test_gw_install_ () {
	if ! mkdir -p "$GATEWAY_TEST_CACHE" 2>/dev/null || ! test -w "$GATEWAY_TEST_CACHE"; then
		echo "cannot write the cache $GATEWAY_TEST_CACHE (set GATEWAY_TEST_CACHE)"
		return 1
	fi
	# shellcheck disable=SC2016,SC2086 # expanded by the inner shell; the list is words
	timeout -k 10 "$GATEWAY_NPM_SECONDS" flock "$GATEWAY_TEST_CACHE/npm-clients.lock" sh -c '
		set -e
		final=$1
		shift
		test -d "$final" && exit 0
		tmp=$final.tmp.$$
		rm -rf "$tmp"
		trap "rm -rf \"$tmp\"" EXIT
		mkdir "$tmp"
		printf "%s\n" "{\"name\": \"intutic-test-clients\", \"private\": true}" >"$tmp/package.json"
		cd "$tmp"
		npm install --no-audit --no-fund --ignore-scripts --engine-strict \
		    --save-exact --cache "$tmp/.npm-cache" "$@"
		rm -rf "$tmp/.npm-cache"
		for spec in "$@"; do
			got=$(node -p "require(\"./node_modules/${spec%@*}/package.json\").version")
			test "$got" = "${spec##*@}" ||
				{ echo "${spec%@*}: got $got, not ${spec##*@}" >&2; exit 1; }
		done
		test -f node_modules/@anthropic-ai/claude-code/cli.js
		cd /
		mv -T "$tmp" "$final"
	' sh "$test_gw_dir_" $GATEWAY_NPM_CLIENTS \
	    </dev/null >"$GATEWAY_TEST_CACHE/npm-clients.log" 2>&1 || {
		# npm's error code and its first message, else the last line
		test_gw_err_=$(grep -E '^npm error (code |.*(Error|notsup|Not compatible|No matching))' \
		    "$GATEWAY_TEST_CACHE/npm-clients.log" | head -n 2 | sed 's/^npm error //' |
		    tr '\n' ' ')
		test -n "$test_gw_err_" ||
			test_gw_err_=$(grep -v '^[[:space:]]*$' "$GATEWAY_TEST_CACHE/npm-clients.log" | tail -n 1)
		echo "npm install of $GATEWAY_NPM_CLIENTS failed: ${test_gw_err_% } (see $GATEWAY_TEST_CACHE/npm-clients.log)"
		return 1
	}
}

# gateway_npm_clients: the pinned clients, in $GATEWAY_NODE_MODULES.  Outside
# the test's namespace (before test_isolate_netns): installs them when the
# cache lacks them.  Inside: only the cache.  Sets the prerequisite
# NPM_CLIENTS when they are there; otherwise the run inside says why not
# (a "# " line; outside, the reason is handed to it in the environment).
gateway_npm_clients () {
	test_gw_why_=
	if ! command -v node >/dev/null 2>&1; then
		test_gw_why_="needs node"
	elif test_gw_clients_ok_; then
		:
	elif test -n "${TEST_NETNS:-}${INTUTIC_TEST_NETNS:-}"; then
		# inside: the outside's reason, if it had one
		test_gw_why_=${TEST_GATEWAY_NPM_WHY:-"no clients in $test_gw_dir_, and no registry in the test's namespace: gateway_npm_clients installs them when called before test_isolate_netns"}
	elif ! command -v npm >/dev/null 2>&1; then
		test_gw_why_="needs npm (scripts/bootstrap installs it)"
	else
		printf '%s\n' "# installing $GATEWAY_NPM_CLIENTS with npm (once; cached in $test_gw_dir_)"
		test_gw_why_=$(test_gw_install_)
		if test_gw_clients_ok_; then
			test_gw_why_=
		elif test -z "$test_gw_why_"; then
			test_gw_why_="npm installed, but $test_gw_dir_ does not hold $GATEWAY_NPM_CLIENTS"
		fi
	fi
	unset TEST_GATEWAY_NPM_WHY
	if test -z "$test_gw_why_"; then
		test_set_prereq NPM_CLIENTS
		return 0
	fi
	if test -z "${TEST_NETNS:-}${INTUTIC_TEST_NETNS:-}"; then
		# for the run inside the namespace (test_isolate_netns), which
		# says it
		TEST_GATEWAY_NPM_WHY=$test_gw_why_
		export TEST_GATEWAY_NPM_WHY
		return 0
	fi
	printf '%s\n' "# no NPM_CLIENTS: $test_gw_why_"
	return 0
}

# --- the double -------------------------------------------------------------------

# start_provider NAME [OPTIONS...]: t/helpers/provider.py (which see for the
# endpoints, the behaviours by model name and the token numbers) on
# 127.0.0.1 with certs/provider.crt, a certificate from the test CA for
# GATEWAY_PROVIDER_HOST (made after test_certs, once).  Exports
# <NAME>_PORT, <NAME>_PID, <NAME>_LOG (its stderr), <NAME>_REQUESTS (its
# JSON Lines request log: audit_records "$<NAME>_REQUESTS" COND... reads
# it) and <NAME>_URL (https://api.provider.test:PORT).  OPTIONS:
# --event-delay-ms N.
start_provider () {
	test $# -ge 1 || { echo "start_provider: needs NAME" >&2; return 1; }
	test -s "${CA_FILE:-}" || { echo "start_provider: run test_certs first" >&2; return 1; }
	test_gw_name_=$1
	shift
	if ! test -s "$TRASH_DIRECTORY/certs/provider.crt"; then
		test_leaf_cert provider "$GATEWAY_PROVIDER_HOST" || return 1
	fi
	test_gw_var_=$(test_var_name_ "$test_gw_name_")
	mkdir -p "$TRASH_DIRECTORY/srv" &&
	: >"$TRASH_DIRECTORY/srv/$test_gw_name_.jsonl" &&
	test_start_helper_ "$test_gw_name_" provider.py \
		--cert "$TRASH_DIRECTORY/certs/provider.crt" \
		--key "$TRASH_DIRECTORY/certs/provider.key" \
		--log "$TRASH_DIRECTORY/srv/$test_gw_name_.jsonl" "$@" || return 1
	eval "${test_gw_var_}_REQUESTS=\$TRASH_DIRECTORY/srv/\$test_gw_name_.jsonl
		${test_gw_var_}_URL=https://\$GATEWAY_PROVIDER_HOST:\$${test_gw_var_}_PORT
		export ${test_gw_var_}_REQUESTS ${test_gw_var_}_URL"
}

# start_sandbox_gateway KEY [OPTIONS...]: for a container test
# (lib-sandbox.sh, after sandbox_setup): the provider double "provider"
# (start_provider), rules with the gateway (t/data/gateway/broker.yaml:
# anthropic brokered, openai passed through) and KEY as anthropic's real
# key in keys/anthropic, and the proxy on the bridge with its gateway
# (start_sandbox_proxy, one worker, the test CA for the provider; OPTIONS
# after those).
start_sandbox_gateway () {
	test $# -ge 1 || { echo "start_sandbox_gateway: needs KEY" >&2; return 1; }
	test_gw_key_=$1
	shift
	test_certs &&
	start_provider provider &&
	write_hosts hosts "$GATEWAY_PROVIDER_HOST=127.0.0.1" &&
	fill_rules gateway/broker.yaml rules.yaml PORT="$PROVIDER_PORT" \
		OTHERPORT=443 &&
	mkdir -p keys && chmod 700 keys &&
	printf "%s\n" "$test_gw_key_" >keys/anthropic && chmod 600 keys/anthropic &&
	start_sandbox_proxy rules.yaml --workers 1 --gateway-ca "$CA_FILE" \
		--gateway-keys keys "$@"
}

# --- the clients -----------------------------------------------------------------

# gateway_with_hosts CMD...: CMD in a mount namespace of its own whose
# /etc/hosts is $TRASH_DIRECTORY/gateway-hosts: localhost and
# GATEWAY_PROVIDER_HOST at 127.0.0.1 (made when missing; a test may write
# it first, with write_hosts, to name other hosts).
gateway_with_hosts () {
	test_gw_hosts_=$TRASH_DIRECTORY/gateway-hosts
	test -s "$test_gw_hosts_" ||
		write_hosts "$test_gw_hosts_" localhost=127.0.0.1 \
			"$GATEWAY_PROVIDER_HOST=127.0.0.1" || return 1
	# shellcheck disable=SC2016 # $0 and $@ are the inner sh's
	unshare -m sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' \
		"$test_gw_hosts_" "$@"
}

# gateway_node ARGS...: node with the pinned clients on NODE_PATH (CommonJS
# require() finds them), the test CA trusted, the hosts above, at most
# GATEWAY_NODE_SECONDS; no proxy variables.
gateway_node () {
	test -n "${CA_FILE:-}" || { echo "gateway_node: run test_certs first" >&2; return 1; }
	gateway_with_hosts env NODE_PATH="$GATEWAY_NODE_MODULES" \
		NODE_EXTRA_CA_CERTS="$CA_FILE" \
		timeout -k 5 "$GATEWAY_NODE_SECONDS" node "$@"
}

# gateway_sdk API MODE BASE_URL KEY MODEL [NAME:VALUE...]: one call of an
# official SDK (t/helpers/sdk.cjs, which see): its JSON result on stdout;
# fails when the call failed.  BASE_URL as the SDK takes it: Anthropic's
# without /v1, OpenAI's with it.
gateway_sdk () {
	gateway_node "$top_srcdir/t/helpers/sdk.cjs" "$@"
}

# gateway_claude BASE_URL KEY ARGS...: Claude Code (cli.js of the pinned
# version) with ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY, its telemetry,
# updater, error reporting and other traffic off, HOME a directory of its
# own in the scratch directory (claude-home: its settings and logs), stdin
# /dev/null, at most GATEWAY_CLAUDE_SECONDS.
gateway_claude () {
	test $# -ge 2 || { echo "gateway_claude: needs BASE_URL KEY ARGS..." >&2; return 1; }
	test_gw_base_=$1 test_gw_apikey_=$2
	shift 2
	mkdir -p "$TRASH_DIRECTORY/claude-home" || return 1
	gateway_with_hosts env HOME="$TRASH_DIRECTORY/claude-home" \
		NODE_EXTRA_CA_CERTS="$CA_FILE" \
		ANTHROPIC_BASE_URL="$test_gw_base_" \
		ANTHROPIC_API_KEY="$test_gw_apikey_" \
		DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 \
		DISABLE_ERROR_REPORTING=1 \
		CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
		timeout -k 5 "$GATEWAY_CLAUDE_SECONDS" node "$GATEWAY_CLAUDE" "$@" \
		</dev/null
}

# gateway_json FILE EXPR: the value of the Python expression EXPR over the
# JSON object in FILE, named j (gateway_json out 'j["usage"]["output_tokens"]'),
# printed (JSON for lists and objects, else as str()).
gateway_json () {
	python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
v = eval(sys.argv[2], {"j": j})
print(json.dumps(v) if isinstance(v, (list, dict)) else v)
' "$1" "$2"
}

# gateway_json_is FILE EXPR VALUE [EXPR VALUE]...: each EXPR over FILE's
# object prints VALUE (as gateway_json: out "j[\"ok\"]" True); else says
# which did not, what they printed, and shows FILE.  One python for all.
gateway_json_is () {
	python3 -c '
import json, sys
text = open(sys.argv[1]).read()
bad = 0
try:
    j = json.loads(text)
except ValueError as e:
    sys.exit("%s is not JSON: %s: %r" % (sys.argv[1], e, text[:2000]))
args = sys.argv[2:]
if not args or len(args) % 2:
    sys.exit("gateway_json_is: needs FILE EXPR VALUE [EXPR VALUE]...")
for expr, want in zip(args[0::2], args[1::2]):
    try:
        v = eval(expr, {"j": j})
        got = json.dumps(v) if isinstance(v, (list, dict)) else str(v)
    except Exception as e:
        got = "(%s: %s)" % (type(e).__name__, e)
    if got != want:
        sys.stderr.write("%s is %r, not %r\n" % (expr, got, want))
        bad = 1
if bad:
    sys.stderr.write("in %s: %s\n" % (sys.argv[1], text))
sys.exit(bad)
' "$@"
}
