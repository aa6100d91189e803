#!/bin/sh
test_description='intutic doctor: the proxy, the rules, the level, the sandbox backends, nftables'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy

DOCTOR_SECONDS=30	# one run of intutic doctor, at most
HANG_MIN_SECONDS=5	# a runtime whose `info` hangs is killed after 5 s...
HANG_MAX_SECONDS=12	# ...and not much later

# The container runtimes and firecracker doctor finds are the fakes a test
# puts in its PATH ($BIN), never the host's: what a host has installed does
# not change what these tests see.  The fakes use tools by absolute path.
SLEEP=$(command -v sleep)
READLINK=$(command -v readlink)
STATE=$TRASH_DIRECTORY/no-state
SETTINGS=$TRASH_DIRECTORY/settings.yaml
INTUTIC_SETTINGS_FILE=$SETTINGS
INTUTIC_RULES=$TRASH_DIRECTORY/good.yaml
export INTUTIC_SETTINGS_FILE INTUTIC_RULES

test_lazy_prereq MANDOC 'command -v mandoc'
test_lazy_prereq SETPRIV 'command -v setpriv'
test_lazy_prereq KVM 'test -c /dev/kvm && test -r /dev/kvm && test -w /dev/kvm'

# doctor [ARGS...]: intutic doctor with PATH=$BIN and the state directory
# $DOCTOR_STATE (unless ARGS name --proxy), bounded in time; its output in
# out and err, its status in doctor_code.  It fails when the status is
# neither 0 nor 1, or when anything came on stderr (a sanitizer report).
doctor () {
	timeout -s KILL "$DOCTOR_SECONDS" env PATH="$BIN" "$INTUTIC" doctor \
		--state-dir "$DOCTOR_STATE" "$@" >out 2>err
	doctor_code=$?
	test "$doctor_code" = 0 || test "$doctor_code" = 1 || {
		echo "intutic doctor exited $doctor_code" >&2
		cat err >&2
		return 1
	}
	test_must_be_empty err
}

# line CHECK: the line of that check, in line.CHECK ("/" made "_").
line () {
	line_file_=line.$(printf '%s' "$1" | tr / _)
	grep "^$1 " out >"$line_file_" || { echo "no line for $1:" >&2; cat out >&2; return 1; }
}

# expect_line CHECK VERDICT TEXT: the line of CHECK is exactly that.
expect_line () {
	line "$1" &&
	printf '%-12s %-8s %s\n' "$1" "$2" "$3" >expect.line &&
	test_cmp expect.line "$line_file_"
}

# json_lines [PY-CHECK]: doctor --json's object (in out) as the lines the
# text output has for its checks (no result line), into json.lines, after
# the object's keys and types were checked; PY-CHECK, a Python expression
# of j (the object), must hold too.
json_lines () {
	cat >json_lines.py <<-\EOF &&
	import json, sys
	text = sys.stdin.read()
	assert text.count("\n") == 1 and text.endswith("}\n"), "not one line"
	j = json.loads(text)
	assert list(j) == ["ready", "level", "level_source", "missing",
	    "checks"], list(j)
	assert isinstance(j["ready"], bool)
	assert j["level"] in ("off", "recommend", "require", None), j["level"]
	assert (j["level"] is None) == (j["level_source"] is None), j
	assert all(isinstance(m, str) for m in j["missing"]), j["missing"]
	assert j["ready"] == (j["missing"] == []), j
	for c in j["checks"]:
	    assert list(c) == ["check", "verdict", "detail", "fix", "note"], c
	    assert c["verdict"] in ("ok", "warn", "missing", "fail"), c
	    assert c["verdict"] != "ok" or c["fix"] is None, c
	    line = "%-12s %-8s %s" % (c["check"], c["verdict"], c["detail"])
	    if c["fix"] is not None:
	        line += "; fix: " + c["fix"]
	    print(line)
	    if c["note"] is not None:
	        print("%-12s %-8s %s" % ("", "note", c["note"]))
	assert eval(sys.argv[1]), sys.argv[1]
	EOF
	python3 json_lines.py "${1:-True}" <out >json.lines
}

# fake NAME BODY: $BIN/NAME, a shell script doing BODY.
fake () {
	printf '#!/bin/sh\n%s\n' "$2" >"$BIN/$1" &&
	chmod +x "$BIN/$1"
}

# use_bin NAME: an empty directory of fakes, $TRASH_DIRECTORY/NAME, as $BIN.
use_bin () {
	BIN=$TRASH_DIRECTORY/$1
	mkdir -p "$BIN"
}

# man_page: intutic-doctor(1) as plain text.
man_page () {
	mandoc -T ascii "$top_srcdir/man/intutic-doctor.1" |
		sed "s/.$(printf '\b')//g"
}

test_expect_success 'setup: rule files, an empty resolv.conf and hosts, PATHs of fakes' '
	printf "version: 1\nallow: [a.example.com, b.example.com]\n" >good.yaml &&
	printf "version: 1\nmode: loud\n" >bad.yaml &&
	cp good.yaml live.yaml &&
	: >resolv.conf &&
	: >hosts &&
	mkdir -p "$STATE" &&
	DOCTOR_STATE=$STATE &&
	use_bin bin-none
'

# --- help and usage -------------------------------------------------------------

test_expect_success MANDOC '--help: the synopsis, description and options of intutic-doctor(1)' '
	"$INTUTIC" doctor --help >help 2>err &&
	test_must_be_empty err &&
	man_page >man.txt &&
	sed -n "s/^usage: //p" help >help.synopsis &&
	sed -n "/^SYNOPSIS/,/^DESCRIPTION/p" man.txt | sed "1d;\$d" | text_of >man.synopsis &&
	test_cmp help.synopsis man.synopsis &&
	echo "intutic doctor [--state-dir DIR] [--proxy URL] [--json]" >expect &&
	test_cmp expect help.synopsis &&
	awk "NR > 2 && /^\$/ { exit } NR > 2" help | text_of |
		sed "s/^Says/intutic doctor says/" >help.desc &&
	sed -n "/^DESCRIPTION/,/^\$/p" man.txt | sed 1d | text_of >man.desc &&
	test_cmp help.desc man.desc &&
	options_of <help >help.options &&
	sed -n "/^DESCRIPTION/,/^ *An option may also/p" man.txt |
		sed "1,/^\$/d; \$d; /^ *\$/d" | options_of >man.options &&
	test_line_count = 4 help.options &&
	test_cmp help.options man.options &&
	"$INTUTIC" help doctor >help2 &&
	test_cmp help help2 &&
	"$INTUTIC" doctor -h >help3 &&
	test_cmp help help3
'

test_expect_success MANDOC 'the manual page passes mandoc -T lint' '
	mandoc -T lint -W warning "$top_srcdir/man/intutic-doctor.1" >lint 2>&1 &&
	test_must_be_empty lint
'

test_expect_success 'usage errors: exit 2, the usage on stderr' '
	test_expect_code 2 "$INTUTIC" doctor --bogus >out 2>err &&
	test_must_be_empty out &&
	test_grep "^intutic: doctor: unknown argument '\''--bogus'\''\$" err &&
	test_line_count = 2 err &&
	test_expect_code 2 "$INTUTIC" doctor --state-dir >out 2>err &&
	test_grep "^intutic: doctor: --state-dir needs a DIR\$" err &&
	test_expect_code 2 "$INTUTIC" doctor --proxy >out 2>err &&
	test_grep "^intutic: doctor: --proxy needs an? URL\$" err &&
	test_expect_code 2 "$INTUTIC" doctor --proxy https://127.0.0.1:1 >out 2>err &&
	test_must_be_empty out &&
	test_grep "^intutic: doctor: --proxy: '\''https://127.0.0.1:1'\'' is not a proxy URL of the form http://HOST:PORT\$" err &&
	test_expect_code 2 "$INTUTIC" doctor --state-dir= >out 2>err &&
	test_grep "^intutic: --state-dir: empty directory name\$" err
'

# --- no proxy ---------------------------------------------------------------------

test_expect_success 'no proxy: missing, the fix is intutic start; exit 1' '
	doctor &&
	test "$doctor_code" = 1 &&
	line proxy &&
	test_grep "^proxy +missing +not running at http://127\.0\.0\.1:8877 \(the default address\): .*; fix: start it with \`intutic start\`\$" line.proxy &&
	expect_line rules ok "$INTUTIC_RULES: 2 entries, mode enforce" &&
	expect_line level ok "off, from default (no workspace API, no $SETTINGS)" &&
	expect_line result missing "level off needs the proxy running"
'

test_expect_success 'one line per check, in order, each with a verdict' '
	doctor &&
	cut -c 1-21 out | sed "s/  *\$//; s/   */ /g" >checks &&
	cat >expect <<-\EOF &&
	proxy missing
	rules ok
	level ok
	podman missing
	docker missing
	/dev/kvm ok
	firecracker missing
	qemu missing
	microvm ok
	nftables ok
	enforce missing
	conntrack warn
	result missing
	EOF
	if ! test -r /dev/kvm || ! test -w /dev/kvm; then
		sed -i "s|^/dev/kvm ok|/dev/kvm missing|" expect
	fi &&
	test_cmp expect checks
'

test_expect_success '--json: one object, its checks the lines without --json, with ready, level and what is missing; exit 1 as without' '
	doctor &&
	sed "/^result /d" out >lines &&
	doctor --json &&
	test "$doctor_code" = 1 &&
	json_lines "j[\"ready\"] is False and j[\"level\"] == \"off\" and j[\"missing\"] == [\"the proxy running\"] and j[\"level_source\"] == \"default (no workspace API, no $SETTINGS)\"" &&
	# what may change between two runs: a time, a count of flows
	sed -E "s/ after [0-9]+ ms/ after N ms/; s/[0-9]+ tracked flows/N tracked flows/" \
		lines >expect &&
	sed -E "s/ after [0-9]+ ms/ after N ms/; s/[0-9]+ tracked flows/N tracked flows/" \
		json.lines >actual &&
	test_cmp expect actual
'

test_expect_success 'no runtime, no firecracker: each missing, with the fix' '
	doctor &&
	expect_line podman missing "not found in PATH; fix: install podman (apt-get install podman), or Docker" &&
	expect_line docker missing "not found in PATH; fix: install Docker (apt-get install docker.io), or podman" &&
	expect_line firecracker missing "not found in PATH; fix: install the firecracker binary in PATH"
'

test_expect_success 'a rule file that does not load: fail, file:line:col, exit 1' '
	INTUTIC_RULES=$TRASH_DIRECTORY/bad.yaml doctor &&
	test "$doctor_code" = 1 &&
	expect_line rules fail "$TRASH_DIRECTORY/bad.yaml:2:7: found mode '\''loud'\'': expected enforce or report; fix: correct it (intutic rules check $TRASH_DIRECTORY/bad.yaml)" &&
	expect_line result missing "level off needs the proxy running, valid rules"
'

test_expect_success 'a malformed state file: fail, and the other checks still run' '
	mkdir -p broken &&
	echo "{\"pid\": 1" >broken/proxy.json &&
	DOCTOR_STATE=$TRASH_DIRECTORY/broken &&
	test_when_finished "DOCTOR_STATE=\$STATE" &&
	doctor &&
	test "$doctor_code" = 1 &&
	line proxy &&
	test_grep "^proxy +fail +state file '\''$TRASH_DIRECTORY/broken/proxy.json'\'' is malformed: .*; fix: correct it, or stop and start the proxy again\$" line.proxy &&
	line result &&
	line nftables
'

# --- a running proxy ----------------------------------------------------------------

test_expect_success 'a running proxy: ok, with its pid, address, rules, uptime; exit 0 at level off' '
	start_proxy live.yaml &&
	DOCTOR_STATE=$PROXY_DIR/state &&
	doctor &&
	test "$doctor_code" = 0 &&
	line proxy &&
	test_grep -F "proxy        ok       running at $PROXY_URL (pid $PROXY_PID, listening on 127.0.0.1:$PROXY_PORT), rules $PROXY_DIR/live.yaml, up " line.proxy &&
	test_grep "up ([0-9]+h )?([0-9]+m )?[0-9]+s\$" line.proxy &&
	expect_line rules ok "$PROXY_DIR/live.yaml: 2 entries, mode enforce (the running proxy'\''s)" &&
	expect_line result ok "this host has what level off needs"
'

test_expect_success 'recommend needs no more than off' '
	printf "sandbox: {enforcement: recommend}\n" >"$SETTINGS" &&
	test_when_finished "rm -f \"\$SETTINGS\"" &&
	doctor &&
	test "$doctor_code" = 0 &&
	expect_line level ok "recommend, from $SETTINGS" &&
	expect_line result ok "this host has what level recommend needs"
'

test_expect_success '--proxy URL and INTUTIC_PROXY_URL name the proxy' '
	DOCTOR_STATE=$STATE &&
	test_when_finished "DOCTOR_STATE=\$PROXY_DIR/state" &&
	doctor --proxy "$PROXY_URL" &&
	test "$doctor_code" = 0 &&
	expect_line proxy ok "running at $PROXY_URL (--proxy)" &&
	expect_line rules ok "$INTUTIC_RULES: 2 entries, mode enforce" &&
	INTUTIC_PROXY_URL=$PROXY_URL/ doctor &&
	test "$doctor_code" = 0 &&
	expect_line proxy ok "running at $PROXY_URL (INTUTIC_PROXY_URL)"
'

test_expect_success 'the running proxy'\''s rule file broken since: fail, exit 1' '
	printf "version: 1\nallow: [\n" >live.yaml &&
	test_when_finished "cp good.yaml live.yaml" &&
	doctor &&
	test "$doctor_code" = 1 &&
	line rules &&
	test_grep "^rules +fail +$PROXY_DIR/live\.yaml:3:1: .*; fix: correct it \(intutic rules check $PROXY_DIR/live\.yaml\)\$" line.rules &&
	expect_line result missing "level off needs valid rules"
'

test_expect_success 'settings that cannot be read: fail, exit 1' '
	printf "sandbox: {enforcement: maybe}\n" >"$SETTINGS" &&
	test_when_finished "rm -f \"\$SETTINGS\"" &&
	doctor &&
	test "$doctor_code" = 1 &&
	expect_line level fail "$SETTINGS:1:24: '\''enforcement'\'' is '\''maybe'\'': expected off, recommend or require; fix: correct the setting; until then \`intutic exec\` refuses to run" &&
	expect_line result missing "the level is not known; missing: readable settings, a sandbox backend (podman or docker running, or /dev/kvm and firecracker or qemu)" &&
	doctor --json &&
	test "$doctor_code" = 1 &&
	json_lines "j[\"level\"] is None and j[\"missing\"] == [\"readable settings\", \"a sandbox backend (podman or docker running, or /dev/kvm and firecracker or qemu)\"]" &&
	grep "^level " json.lines >json.level &&
	test_cmp line.level json.level
'

# --- require: a sandbox backend -------------------------------------------------------

test_expect_success 'require without a sandbox backend: exit 1, the result says what is missing' '
	printf "sandbox: {enforcement: require}\n" >"$SETTINGS" &&
	use_bin bin-none &&
	doctor &&
	test "$doctor_code" = 1 &&
	expect_line level ok "require, from $SETTINGS" &&
	expect_line result missing "level require needs a sandbox backend (podman or docker running, or /dev/kvm and firecracker or qemu)"
'

test_expect_success 'require with podman running: exit 0; podman info ran with no input or output (only its info call logged)' '
	use_bin bin-podman &&
	fake podman "test \"\$1\" = info || exit 0
printf \"%s\\n\" \"\$@\" >\"$TRASH_DIRECTORY/podman.args\"
fds=\$($READLINK /proc/\$\$/fd/0 /proc/\$\$/fd/1 /proc/\$\$/fd/2)
printf \"%s\\n\" \"\$fds\" >\"$TRASH_DIRECTORY/podman.fds\"
exit 0" &&
	doctor &&
	test "$doctor_code" = 0 &&
	expect_line podman ok "$BIN/podman, running" &&
	expect_line result ok "this host has what level require needs" &&
	echo info >expect &&
	test_cmp expect podman.args &&
	printf "/dev/null\n/dev/null\n/dev/null\n" >expect &&
	test_cmp expect podman.fds
'

test_expect_success '--json with what level require needs: ready, nothing missing, exit 0' '
	doctor --json &&
	test "$doctor_code" = 0 &&
	json_lines "j[\"ready\"] is True and j[\"level\"] == \"require\" and j[\"missing\"] == []" &&
	grep "^podman " json.lines >json.podman &&
	printf "%-12s %-8s %s\n" podman ok "$BIN/podman, running" >expect &&
	test_cmp expect json.podman
'

test_expect_success 'docker there but not running: missing, with the fix; exit 1' '
	use_bin bin-docker-down &&
	fake docker "exit 1" &&
	doctor &&
	test "$doctor_code" = 1 &&
	expect_line docker missing "$BIN/docker is there but not running: '\''docker info'\'' exits 1; fix: start the Docker daemon (systemctl start docker)"
'

test_expect_success 'docker whose info hangs: killed after 5 s, not running' '
	use_bin bin-docker-hang &&
	fake docker "echo \$\$ >\"$TRASH_DIRECTORY/hang.pid\"; exec $SLEEP 60" &&
	start=$(date +%s) &&
	doctor &&
	end=$(date +%s) &&
	test "$doctor_code" = 1 &&
	test $((end - start)) -ge $HANG_MIN_SECONDS &&
	test $((end - start)) -le $HANG_MAX_SECONDS &&
	expect_line docker missing "$BIN/docker is there but not running: '\''docker info'\'' did not finish within 5 s; fix: start the Docker daemon (systemctl start docker)" &&
	read -r hang_pid <hang.pid &&
	! kill -0 "$hang_pid" 2>/dev/null
'

test_expect_success 'docker running and podman not: exit 0' '
	use_bin bin-docker &&
	fake docker "exit 0" &&
	doctor &&
	test "$doctor_code" = 0 &&
	expect_line docker ok "$BIN/docker, running" &&
	expect_line podman missing "not found in PATH; fix: install podman (apt-get install podman), or Docker"
'

test_expect_success KVM 'require with /dev/kvm and firecracker: exit 0' '
	use_bin bin-fc &&
	fake firecracker "exit 0" &&
	doctor &&
	test "$doctor_code" = 0 &&
	expect_line /dev/kvm ok "usable" &&
	expect_line firecracker ok "$BIN/firecracker" &&
	expect_line result ok "this host has what level require needs"
'

test_expect_success 'firecracker without a usable /dev/kvm is no backend' '
	use_bin bin-fc &&
	fake firecracker "exit 0" &&
	test_have_prereq KVM || {
		doctor &&
		test "$doctor_code" = 1 &&
		expect_line firecracker ok "$BIN/firecracker" &&
		line /dev/kvm &&
		test_grep "^/dev/kvm +missing +cannot open /dev/kvm: " line._dev_kvm
	}
'

# --- nftables ------------------------------------------------------------------------

test_expect_success 'nftables in this namespace: usable; enforce not active' '
	rm -f "$SETTINGS" &&
	use_bin bin-none &&
	doctor &&
	expect_line nftables ok "usable" &&
	expect_line enforce missing "not active (no table inet intutic); fix: \`intutic enforce on\`"
'

test_expect_success ROOT,SETPRIV 'without root: nftables cannot be told, said so; the rest still runs' '
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		timeout -s KILL "$DOCTOR_SECONDS" env PATH="$BIN" "$INTUTIC" doctor \
		--state-dir "$DOCTOR_STATE" >out 2>err
	code=$? &&
	test "$code" = 0 &&
	test_must_be_empty err &&
	expect_line nftables warn "cannot tell: asking nftables needs root (CAP_NET_ADMIN); fix: run intutic doctor as root" &&
	expect_line enforce missing "not active (no record of \`intutic enforce on\` in /run/intutic-enforce); fix: \`intutic enforce on\`" &&
	expect_line conntrack warn "cannot tell which tracked flows \`intutic enforce on\` would cut: reading connection tracking needs root (CAP_NET_ADMIN); fix: run intutic doctor as root" &&
	line proxy &&
	test_grep "^proxy +ok " line.proxy &&
	expect_line result ok "this host has what level off needs"
'

test_expect_success 'the proxy stopped: missing again, exit 1' '
	stop_proxy &&
	doctor &&
	test "$doctor_code" = 1 &&
	line proxy &&
	test_grep "^proxy +missing +not running at http://127\.0\.0\.1:8877 \(the default address\): .*; fix: start it with \`intutic start\`\$" line.proxy
'

test_done
