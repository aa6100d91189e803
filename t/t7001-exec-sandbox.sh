#!/bin/sh
test_description='intutic exec --sandbox with real podman: the agent reaches only the proxy, runs without privileges, its run id in the audit log, no secret on a command line; refusals before anything runs'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
. "$top_srcdir/t/lib-sandbox.sh"
sandbox_isolate_netns
test_require_proxy curl

test_exec_env

SECRET_VALUE=s3cr3t-7001-value

test_expect_success 'setup: the image, an origin, the far host, the proxy on the bridge' '
	sandbox_setup &&
	start_origin origin &&
	start_far_echo &&
	write_hosts hosts origin.test=127.0.0.1 other.test=127.0.0.1 &&
	fill_rules proxy-http/forward.yaml rules.yaml PORTS="$ORIGIN_PORT" &&
	start_sandbox_proxy rules.yaml
'

test_expect_success 'inside: an allowed origin through the proxy, the audit records carry the run' '
	audit_mark &&
	sandbox_exec -- sh -c "curl -sS --max-time 10 http://origin.test:$ORIGIN_PORT/ &&
		echo run=\$INTUTIC_RUN" &&
	test "$rc" = 0 &&
	test_grep "^hello from origin.test:$ORIGIN_PORT\$" out &&
	run=$(sed -n "s/^run=//p" out) &&
	case $run in run-[0-9a-f]*) ;; *) false ;; esac &&
	audit_since 1 &&
	audit_expect 1 event=run run="$run" command=sh &&
	audit_expect 1 event=decision run="$run" host=origin.test decision=allow
'

test_expect_success 'inside: the container'"'"'s address is its run'"'"'s: a request without credentials is the run'"'"'s; another run'"'"'s credentials are refused' '
	tok=0123456789abcdef0123456789abcdef &&
	printf "{\"run\":\"run-other\",\"token\":\"%s\",\"command\":\"x\",\"pid\":%d}" \
		"$tok" $$ >reg &&
	control_curl /v1/runs -o /dev/null --data-binary @reg &&
	audit_mark &&
	sandbox_exec -- sh -c "
		echo run=\$INTUTIC_RUN
		curl -sS --max-time 10 --proxy http://$SANDBOX_GATEWAY:$PROXY_PORT \
			-o /dev/null -w \"bare=%{http_code}\n\" http://origin.test:$ORIGIN_PORT/
		curl -sS --max-time 10 --proxy http://run-other:$tok@$SANDBOX_GATEWAY:$PROXY_PORT \
			-o /dev/null -w \"other=%{http_code}\n\" http://origin.test:$ORIGIN_PORT/
		exit 0" &&
	test "$rc" = 0 &&
	run=$(sed -n "s/^run=//p" out) &&
	test_grep "^bare=200\$" out &&
	test_grep "^other=407\$" out &&
	audit_since 2 &&
	audit_expect 1 event=run-addr run="$run" "addr~^10[.]" &&
	addr=$(python3 -c "
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r[\"event\"] == \"run-addr\":
        print(r[\"addr\"])" since.jsonl) &&
	test -n "$addr" &&
	audit_expect 1 event=decision run="$run" host=origin.test decision=allow \
		"client~^$addr:" &&
	audit_expect 1 event=decision reason=proxy-auth "client~^$addr:"
'

test_expect_success 'inside: a name the rules do not allow gets 403' '
	sandbox_exec -- curl -sS --max-time 10 -o /dev/null -w "%{http_code}\n" \
		"http://other.test:$ORIGIN_PORT/" &&
	test "$rc" = 0 &&
	echo 403 >expect &&
	test_cmp expect out
'

test_expect_success 'inside: a direct connection to another host fails, through the proxy it is denied' '
	sandbox_exec -- sh -c "
		if curl -sS --noproxy \"*\" --max-time 5 http://$SANDBOX_FAR_ADDR:$FAR_PORT/; then
			echo DIRECT-REACHED
		fi
		exit 0" &&
	test "$rc" = 0 &&
	test_grep -v "DIRECT-REACHED" out
'

test_expect_success 'inside: no capability, not root, the firewall out of reach, / read-only' '
	sandbox_exec -- sh -c "
		grep -E \"^Cap(Eff|Bnd)\" /proc/self/status
		id -u
		nft flush ruleset 2>/dev/null && echo FLUSHED
		touch /etc/x 2>/dev/null && echo ROOT-WRITABLE
		touch /tmp/x && echo TMP-OK
		exit 0" &&
	test "$rc" = 0 &&
	test_grep "^CapEff:[[:space:]]*0000000000000000\$" out &&
	test_grep "^CapBnd:[[:space:]]*0000000000000000\$" out &&
	test_grep "^1000\$" out &&
	test_grep -v "FLUSHED" out &&
	test_grep -v "ROOT-WRITABLE" out &&
	test_grep "^TMP-OK\$" out
'

test_expect_success 'the exit status of the agent is the run'"'"'s' '
	sandbox_exec -- sh -c "exit 42" &&
	test "$rc" = 42
'

# What the agent tries against the control API, from inside: a forged
# registration on the data port, an end of its own run; what the proxy
# answers, each on a line; then any control socket in sight.
cat >forge.sh <<\EOF
for path in /v1/runs "/v1/runs/$INTUTIC_RUN"; do
	curl -sS --noproxy "*" --max-time 10 -o /dev/null -w "%{http_code}\n" \
		-H "Content-Type: application/json" --data "$FORGED" \
		"http://$GATEWAY$path"
done
curl -sS --noproxy "*" --max-time 10 -o /dev/null -w "%{http_code}\n" \
	-X DELETE "http://$GATEWAY/v1/runs/$INTUTIC_RUN"
find / -xdev -name control.sock 2>/dev/null | sed "s/^/FOUND /"
echo "run=$INTUTIC_RUN"
EOF

test_expect_success 'inside: no control API: a forged registration is refused, no socket in sight; the run ends with the sandbox' '
	FORGED="{\"run\":\"run-forged\",\"token\":\"0123456789abcdef0123456789abcdef\",\"command\":\"x\"}" \
	GATEWAY="$SANDBOX_GATEWAY:$PROXY_PORT" FORGE=$(cat forge.sh) \
		sandbox_exec -e FORGED -e GATEWAY -e FORGE -- sh -c "eval \"\$FORGE\"" &&
	test "$rc" = 0 &&
	printf "%s\n" 404 404 404 >expect &&
	grep -E "^[0-9]{3}\$" out >codes &&
	test_cmp expect codes &&
	test_grep -v "^FOUND" out &&
	run=$(sed -n "s/^run=//p" out) &&
	case $run in run-[0-9a-f]*) ;; *) false ;; esac &&
	control_curl /v1/runs >list &&
	test_grep -v "run-forged" list &&
	test_grep -v "\"$run\"" list
'

test_expect_success 'the environment by name: a secret is inside, and on no command line' '
	# (compared by its digest: the value itself on this command line would
	# be what the test looks for)
	printf "%s" "$SECRET_VALUE" | sha256sum >digest.expect &&
	SECRET_7001=$SECRET_VALUE sandbox_exec -e SECRET_7001 -- sh -c "
		printf %s \"\$SECRET_7001\" | sha256sum
		sleep 3" &
	sbx_pid=$! &&
	# every process of this namespace, the runtime included, while it runs
	found=0 &&
	for i in 1 2 3 4 5 6 7 8 9 10; do
		sleep 0.2
		for f in /proc/[0-9]*/cmdline; do
			if grep -qaF "$SECRET_VALUE" "$f" 2>/dev/null; then
				found=1
				echo "secret in $f" >&2
			fi
		done
	done &&
	wait "$sbx_pid" &&
	test "$found" = 0 &&
	test_cmp digest.expect out &&
	! grep -F "$SECRET_VALUE" err "$PROXY_LOG" "$AUDIT_FILE"
'

test_expect_success 'a proxy bound to loopback only: 125 with the exact fix, nothing run' '
	mkdir -p lo-state &&
	sed "s/\"$SANDBOX_GATEWAY\"//; s/, *\]/]/; s/\[ *,/[/" \
		"$PROXY_DIR/state/proxy.json" >lo-state/proxy.json &&
	test_grep -v "\"$SANDBOX_GATEWAY\"" lo-state/proxy.json &&
	rc=0 &&
	"$INTUTIC" exec --state-dir lo-state --sandbox --sandbox-runtime podman \
		--sandbox-image "$SANDBOX_IMAGE" -- touch /tmp/started \
		>out 2>err || rc=$? &&
	test "$rc" = 125 &&
	test_grep -F "INTUTIC_PROXY_BIND=127.0.0.1,$SANDBOX_GATEWAY" err &&
	sandbox_podman ps -a --filter label=intutic.run --format "{{.Names}}" >ps &&
	test_must_be_empty ps
'

test_expect_success 'a proxy without its transparent listener or DNS filter on the bridge: 125 naming the options to add, nothing run' '
	mkdir -p nt-state &&
	sed "s/\"transparent\": \[[^]]*\]/\"transparent\": []/" \
		"$PROXY_DIR/state/proxy.json" >nt-state/proxy.json &&
	test_grep "\"transparent\": \[\]" nt-state/proxy.json &&
	rc=0 &&
	"$INTUTIC" exec --state-dir nt-state --sandbox --sandbox-runtime podman \
		--sandbox-image "$SANDBOX_IMAGE" -- touch /tmp/started \
		>out 2>err || rc=$? &&
	test "$rc" = 125 &&
	test_grep -F "serves no transparent listener on podman" err &&
	test_grep -F "restart it with --transparent-bind $SANDBOX_GATEWAY:3129 (" err &&
	sed "s/\"dns\": \[[^]]*\]/\"dns\": []/" nt-state/proxy.json \
		>nt-state/p.json && mv nt-state/p.json nt-state/proxy.json &&
	rc=0 &&
	"$INTUTIC" exec --state-dir nt-state --sandbox --sandbox-runtime podman \
		--sandbox-image "$SANDBOX_IMAGE" -- touch /tmp/started \
		>out 2>err || rc=$? &&
	test "$rc" = 125 &&
	test_grep -F "transparent listener and no DNS filter" err &&
	test_grep -F -- "--transparent-bind $SANDBOX_GATEWAY:3129 --dns-bind $SANDBOX_GATEWAY:5300 (" err &&
	sandbox_podman ps -a --filter label=intutic.run --format "{{.Names}}" >ps &&
	test_must_be_empty ps
'

test_expect_success 'podman not there: 125 with the message, nothing started' '
	rc=0 &&
	PATH=/nonexistent "$INTUTIC" exec --state-dir "$PROXY_DIR/state" \
		--sandbox --sandbox-runtime podman -- true >out 2>err || rc=$? &&
	test "$rc" = 125 &&
	test_grep "podman isn.t running" err
'

test_expect_success 'enforcement level require: a sandboxed run goes ahead' '
	printf "sandbox:\n  enforcement: require\n" >"$INTUTIC_SETTINGS_FILE" &&
	sandbox_exec -- sh -c "echo sandboxed" &&
	rm -f "$INTUTIC_SETTINGS_FILE" &&
	test "$rc" = 0 &&
	test_grep "^sandboxed\$" out
'

test_expect_success 'the default image: built from sandbox/Dockerfile on first use, then reused' '
	INTUTIC_SANDBOX_IMAGE=localhost/intutic/sandbox-t7001:default-$$ &&
	INTUTIC_SANDBOX_BASE=$SANDBOX_BASE_IMAGE &&
	INTUTIC_SANDBOX_DIR=$top_srcdir/sandbox &&
	export INTUTIC_SANDBOX_IMAGE INTUTIC_SANDBOX_BASE INTUTIC_SANDBOX_DIR &&
	test_when_finished "sandbox_podman rmi -f $INTUTIC_SANDBOX_IMAGE >/dev/null 2>&1;
		unset INTUTIC_SANDBOX_IMAGE INTUTIC_SANDBOX_BASE INTUTIC_SANDBOX_DIR" &&
	! sandbox_podman image exists "$INTUTIC_SANDBOX_IMAGE" &&
	rc=0 &&
	timeout -k 5 "$SANDBOX_BUILD_SECONDS" "$INTUTIC" exec \
		--state-dir "$PROXY_DIR/state" --sandbox --sandbox-runtime podman \
		-- sh -c "echo first" >out 2>err || rc=$? &&
	test "$rc" = 0 &&
	test_grep "^first\$" out &&
	test_grep "building the sandbox image $INTUTIC_SANDBOX_IMAGE" err &&
	sandbox_podman image exists "$INTUTIC_SANDBOX_IMAGE" &&
	rc=0 &&
	timeout -k 5 "$SANDBOX_RUN_SECONDS" "$INTUTIC" exec \
		--state-dir "$PROXY_DIR/state" --sandbox --sandbox-runtime podman \
		-- sh -c "echo second" >out 2>err || rc=$? &&
	test "$rc" = 0 &&
	test_grep "^second\$" out &&
	test_grep -v "building the sandbox image" err
'

test_expect_success '--sandbox-mount: the directory inside, read-only with :ro, the working directory' '
	mkdir -p work &&
	echo "from the host" >work/file &&
	sandbox_exec --sandbox-mount "$PWD/work:ro" -- sh -c "
		pwd; cat file; touch new 2>/dev/null && echo WROTE; exit 0" &&
	test "$rc" = 0 &&
	test_grep "^$PWD/work\$" out &&
	test_grep "^from the host\$" out &&
	test_grep -v "WROTE" out &&
	test_path_is_missing work/new
'

test_done
