#!/bin/sh
test_description='contrib/kubernetes: the manifests read with python3-yaml and checked against this tree (kinds, selectors and labels, ports, the proxy options, the ConfigMap'"'"'s rules), then the proxy container'"'"'s command run as written, in a namespace of its own: /healthz, a denial audited on stderr, the reloader'"'"'s script reloading a changed rule file and not a broken one'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl

K8S=$top_srcdir/contrib/kubernetes
WAIT_SECONDS=20		# the proxy to listen, a reload to be counted
RELOAD_INTERVAL=1	# the reloader's rounds here (10 s in the manifest)

# No schema validator (kubeconform, kubeval) is packaged by Debian: the
# structure is checked by t/helpers/k8s-manifests.py, with PyYAML, from the
# python3 on PATH or Debian's.
PY=
for py in python3 /usr/bin/python3; do
	if "$py" -c "import yaml" 2>/dev/null; then
		PY=$py
		break
	fi
done
test -n "$PY" || test_skip_all "no Python with the yaml module (apt-get install python3-yaml)"

# The manifest's paths, moved into the scratch directory.
RULES_DIR=$TRASH_DIRECTORY/etc-intutic-rules
STATE_DIR=$TRASH_DIRECTORY/run-intutic

# wait_for SECONDS COMMAND...: until COMMAND succeeds, at most SECONDS.
wait_for () {
	wait_for_n_=$(($1 * 10))
	shift
	until "$@"; do
		test "$wait_for_n_" -gt 0 || return 1
		sleep 0.1
		wait_for_n_=$((wait_for_n_ - 1))
	done
}

# stop_ours PID: stop a process this script started, and the children it
# has (the reloader's sleep).
stop_ours () {
	test -n "$1" || return 0
	stop_ours_kids_=$(ps -o pid= --ppid "$1" 2>/dev/null)
	test_stop_child_ "$1"
	for stop_ours_kid_ in $stop_ours_kids_; do
		kill "$stop_ours_kid_" 2>/dev/null
	done
	return 0
}

K8S_PROXY_PID=
RELOADER_PID=
test_atexit 'stop_ours "$RELOADER_PID"; stop_ours "$K8S_PROXY_PID"'

test_expect_success 'the manifests: kinds, selectors, ports, options, volumes and policies agree' '
	{
		"$INTUTIC" start --help |
			awk "/^--[a-z]/ { print \$1 (\$2 ~ /^[A-Z]/ ? \" ARG\" : \"\") }" &&
		"$top_builddir/proxy/intutic-proxy" --help |
			awk "/^  --[a-z]/ { print \$1 (\$2 ~ /^[A-Z]/ ? \" ARG\" : \"\") }"
	} | sort -u >options &&
	test_grep "^--rules ARG\$" options &&
	test_grep "^--audit ARG\$" options &&
	"$PY" "$top_srcdir/t/helpers/k8s-manifests.py" "$K8S" options out &&
	test "$(sed -n "s/^port //p" out/facts)" = 8877
'

test_expect_success 'a manifest that passes an option the proxy does not know is refused' '
	mkdir -p bad &&
	cp "$K8S/agent-example.yaml" bad/ &&
	sed "s/- --workers/- --wrokers/" "$K8S/intutic.yaml" >bad/intutic.yaml &&
	test_must_fail "$PY" "$top_srcdir/t/helpers/k8s-manifests.py" bad options bad.out 2>err &&
	test_grep "passes .--wrokers., which neither" err
'

test_expect_success 'the ConfigMap'"'"'s rules pass intutic rules check' '
	"$INTUTIC" rules check out/rules/*.yaml >check.out &&
	test_grep "^out/rules/rules\.yaml: ok \([0-9]+ entries, " check.out
'

test_expect_success 'the proxy container'"'"'s command as written (paths moved here): it listens, /healthz answers on the probes'"'"' port' '
	mkdir -p "$RULES_DIR" "$STATE_DIR" &&
	cp out/rules/* "$RULES_DIR/" &&
	start_dns &&
	write_resolv_conf &&
	: >hosts &&
	set -- &&
	while IFS= read -r arg; do
		case $arg in
		/usr/bin/intutic)	arg=$INTUTIC ;;
		/etc/intutic/rules*)	arg=$RULES_DIR${arg#/etc/intutic/rules} ;;
		/run/intutic*)		arg=$STATE_DIR${arg#/run/intutic} ;;
		esac
		set -- "$@" "$arg"
	done <out/proxy.args &&
	# the test'"'"'s resolver and hosts file: nothing is looked up outside
	{ "$@" --resolv-conf "$PWD/resolv.conf" --hosts "$PWD/hosts" \
		</dev/null >proxy.out 2>proxy.err & } &&
	K8S_PROXY_PID=$! &&
	wait_for "$WAIT_SECONDS" test -s "$STATE_DIR/proxy.json" &&
	wait_for "$WAIT_SECONDS" curl -sS --fail --noproxy "*" --max-time 5 \
		-o health "http://127.0.0.1:8877/healthz" &&
	PROXY_URL=http://127.0.0.1:8877 &&
	test "$(proxy_metric intutic_rules_entries)" -gt 0
'

test_expect_success 'a denied request: 403, and its audit record on the container'"'"'s log (stderr)' '
	code=$(curl -sS --max-time 10 -o /dev/null -w "%{http_code}" \
		-x http://127.0.0.1:8877 http://not-listed.example/) &&
	test "$code" = 403 &&
	wait_for 10 grep -q "^{.*\"host\": *\"not-listed.example\".*\"decision\": *\"deny\"" proxy.err &&
	test_grep -v "^\{" proxy.out
'

test_expect_success 'the reloader'"'"'s script, run as written: a changed rule file is reloaded' '
	sed -n "s/^RELOAD_INTERVAL //p" out/reloader.env >interval &&
	test "$(cat interval)" -ge 1 &&
	test "$(proxy_metric intutic_reloads_total)" = 0 &&
	before=$(proxy_metric intutic_rules_entries) &&
	{ RULES_DIR=$RULES_DIR STATE_DIR=$STATE_DIR \
		RELOAD_INTERVAL=$RELOAD_INTERVAL \
		PATH="$top_builddir/launcher:$PATH" \
		sh out/reloader.sh </dev/null >reloader.out 2>reloader.err & } &&
	RELOADER_PID=$! &&
	sleep 1.5 &&
	{ cat "$RULES_DIR/rules.yaml" && echo "  - extra.example.com"; } >new.yaml &&
	"$INTUTIC" rules check new.yaml &&
	mv new.yaml "$RULES_DIR/rules.yaml" &&
	reloaded () { test "$(proxy_metric intutic_reloads_total)" = 1; } &&
	wait_for "$WAIT_SECONDS" reloaded &&
	test "$(proxy_metric intutic_rules_entries)" = $((before + 1))
'

test_expect_success 'a broken rule file: the reloader names it, the proxy is not signalled and keeps its rules' '
	printf "version: 1\nallow: [\n" >"$RULES_DIR/broken.tmp" &&
	mv "$RULES_DIR/broken.tmp" "$RULES_DIR/rules.yaml" &&
	wait_for "$WAIT_SECONDS" grep -q "rules\.yaml:3:1: " reloader.err &&
	sleep 1.5 &&
	test "$(proxy_metric intutic_reloads_total)" = 1 &&
	test "$(proxy_metric intutic_reload_errors_total)" = 0 &&
	test "$(grep -c "rules\.yaml:3:1: " reloader.err)" = 1 &&
	kill -0 "$K8S_PROXY_PID"
'

test_expect_success 'stopped: the reloader and the proxy end on SIGTERM' '
	stop_ours "$RELOADER_PID" &&
	RELOADER_PID= &&
	test_stop_child_ "$K8S_PROXY_PID" &&
	K8S_PROXY_PID=
'

test_done
