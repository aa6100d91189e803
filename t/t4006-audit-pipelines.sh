#!/bin/sh
test_description='--audit syslog and journal: the records that reach a stand-in syslog daemon on /dev/log and a stand-in journald on its native socket (each bound by the test in a mount namespace of the proxy'"'"'s own), judged field by field; refused starts; the real journald where one is reachable'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl

test_lazy_prereq MNTNS 'unshare -m --propagation private -- mount -t tmpfs tmpfs /mnt'
test_lazy_prereq JOURNALD '
	test -S /run/systemd/journal/socket &&
	command -v journalctl >/dev/null &&
	journalctl --quiet -n 0 >/dev/null 2>&1
'

mntns="$top_srcdir/t/helpers/mntns.sh"

# sink KIND SOCKET: t/helpers/logsink.py on SOCKET (--syslog or
# --journal), its datagrams parsed into KIND.jsonl; SINK_PID, and
# SINK_READY, which holds its own pid.
sink () {
	rm -f "$1.jsonl" "$1.ready" || return 1
	python3 "$top_srcdir/t/helpers/logsink.py" "$2" "--$1" --out "$1.jsonl" \
		--ready "$1.ready" --lifetime 60 --max 100 2>"$1.err" &
	SINK_PID=$!
	SINK_READY=$1.ready
	test_atexit "test_stop_child_ $SINK_PID" &&
	wait_until 10 test -e "$1.ready"
}

# sink_stop: the sink by the pid it wrote (python3 may be a wrapper's
# child), then its job.
sink_stop () {
	test_stop_pid_ "$(cat "$SINK_READY")" 5 &&
	test_stop_child_ "$SINK_PID" 5
}

# requests: one allowed request (a.test) and one denied (b.test), then
# the proxy stopped, so that every record has been sent.
requests () {
	proxy_curl -o a.out "http://a.test:$A_TEST_PORT/" &&
	echo "hello from a.test:$A_TEST_PORT" >a.expect && test_cmp a.expect a.out &&
	proxy_curl -o b.out -w "%{http_code}\n" "http://b.test:$A_TEST_PORT/" >code &&
	echo 403 >code.expect && test_cmp code.expect code &&
	stop_proxy
}

test_expect_success 'setup: an origin, a rule file' '
	start_origin a.test &&
	write_hosts hosts a.test=127.0.0.1 b.test=127.0.0.1 &&
	printf "version: 1\nports: [%s]\nallow:\n  - a.test\n  - 127.0.0.1/32\n" "$A_TEST_PORT" >rules.yaml
'

test_expect_success MNTNS '--audit syslog: one datagram a record on /dev/log, daemon facility, intutic-audit[PID], the file'"'"'s JSON as the message, a denial a notice' '
	mkdir dev &&
	sink syslog dev/log &&
	PROXY_WRAP="$mntns --dev-log $PWD/dev --" &&
	start_proxy rules.yaml --audit syslog &&
	PROXY_WRAP= &&
	syslog_pid=$PROXY_PID &&
	python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[\"audit\"])" \
		state/proxy.json >audit.got &&
	echo syslog >audit.expect && test_cmp audit.expect audit.got &&
	requests &&
	wait_until 5 test "$(wc -l <syslog.jsonl)" -ge 4 &&
	sink_stop &&
	python3 - "$syslog_pid" <<-\EOF >syslog.out &&
	import json, sys
	pid = int(sys.argv[1])
	n = 0
	for line in open("syslog.jsonl"):
	    d = json.loads(line)
	    assert "tag" in d, "not syslog(3)'\''s framing: %r" % d
	    assert d["tag"] == "intutic-audit" and d["pid"] == pid, d
	    assert d["facility"] == 3, d
	    rec = json.loads(d["msg"])
	    want = 5 if rec["decision"] == "deny" else 6
	    assert d["severity"] == want, (d["severity"], rec)
	    print(json.dumps(rec))
	    n += 1
	print("%d datagrams" % n, file=sys.stderr)
	EOF
	test_line_count = 4 syslog.out &&
	test "$(audit_count syslog.out event=decision decision=allow host=a.test status=)" = 1 &&
	test "$(audit_count syslog.out event=close decision=allow host=a.test status=200)" = 1 &&
	test "$(audit_count syslog.out event=decision decision=deny host=b.test reason=not-allowlisted)" = 1 &&
	test "$(audit_count syslog.out event=close decision=deny host=b.test status=403)" = 1 &&
	test_path_is_missing audit.jsonl
'

test_expect_success MNTNS '--audit journal: one native-protocol datagram a record, MESSAGE the JSON, PRIORITY, SYSLOG_IDENTIFIER, INTUTIC_* equal to the record'"'"'s fields, null ones left out' '
	mkdir jdir &&
	sink journal jdir/socket &&
	PROXY_WRAP="$mntns --journal $PWD/jdir --" &&
	start_proxy rules.yaml --audit journal &&
	PROXY_WRAP= &&
	requests &&
	wait_until 5 test "$(wc -l <journal.jsonl)" -ge 4 &&
	sink_stop &&
	python3 - <<-\EOF >journal.out &&
	import json
	names = ["event", "id", "run", "client", "proto", "host", "port",
	         "decision", "reason", "rule", "status"]
	for line in open("journal.jsonl"):
	    d = json.loads(line)
	    assert "malformed" not in d, d
	    rec = json.loads(d.pop("MESSAGE"))
	    want = "5" if rec["decision"] == "deny" else "6"
	    assert d.pop("PRIORITY") == want, rec
	    assert d.pop("SYSLOG_IDENTIFIER") == "intutic-audit"
	    assert d.pop("SYSLOG_FACILITY") == "3"
	    for k in names:
	        v = d.pop("INTUTIC_" + k.upper(), None)
	        if rec[k] is None:
	            assert v is None, (k, v)
	        else:
	            assert v == str(rec[k]), (k, v, rec[k])
	    assert not d, "fields left: %r" % d
	    print(json.dumps(rec))
	EOF
	test_line_count = 4 journal.out &&
	test "$(audit_count journal.out event=close decision=allow host=a.test status=200)" = 1 &&
	test "$(audit_count journal.out event=close decision=deny host=b.test status=403)" = 1 &&
	test "$(audit_count journal.out decision=allow rule~rules.yaml:4)" = 2
'

test_expect_success MNTNS 'nothing takes messages: the proxy does not start (125), naming the socket and what to do' '
	mkdir empty &&
	test_expect_code 125 "$mntns" --journal "$PWD/empty" -- \
		"$top_builddir/proxy/intutic-proxy" --rules rules.yaml --port 0 \
		--state-dir st --audit journal --resolv-conf resolv.conf \
		--hosts hosts 2>err &&
	test_grep "cannot audit to the journal: nothing takes messages at .*/run/systemd/journal/socket.*; start systemd-journald, or give --audit syslog or FILE" err &&
	mkdir dev2 &&
	test_expect_code 125 "$mntns" --dev-log "$PWD/dev2" -- \
		"$top_builddir/proxy/intutic-proxy" --rules rules.yaml --port 0 \
		--state-dir st --audit syslog --resolv-conf resolv.conf \
		--hosts hosts 2>err &&
	test_grep "cannot audit to syslog: nothing takes messages at ./dev/log.*; start the syslog daemon or journald, or give --audit FILE" err &&
	test_path_is_missing st/proxy.json
'

test_expect_success MNTNS 'contrib/logging (Vector and Fluent Bit are not run: neither is in Debian): its field table is every field proxy/audit.c writes; the renames of vector.yaml'"'"'s remap and fluent-bit.conf'"'"'s modify filter, read from them, are the table'"'"'s and leave no field of the real records behind; parsers.conf'"'"'s Time_Format parses their ts, its syslog Regex matches the datagrams syslog(3) sent, as sent and as forwarded' '
	cat syslog.out journal.out >records.jsonl &&
	python3 "$top_srcdir/t/helpers/logconf.py" "$top_srcdir/contrib/logging" \
		"$top_srcdir/proxy/audit.c" records.jsonl syslog.jsonl >out &&
	cat out &&
	test_grep "^46 fields, 8 records mapped by vector.yaml and fluent-bit.conf\$" out &&
	test_grep "^4 syslog datagrams matched by intutic_syslog, as sent and forwarded\$" out
'

test_expect_success MNTNS 'contrib/logging: the check fails on a broken copy (a Rename gone, a Vector line renamed, the syslog Regex changed, a field the table lacks)' '
	cp -R "$top_srcdir/contrib/logging" broken &&
	sed -i "/Rename  sni /d" broken/fluent-bit.conf &&
	test_expect_code 1 python3 "$top_srcdir/t/helpers/logconf.py" broken \
		"$top_srcdir/proxy/audit.c" records.jsonl syslog.jsonl 2>err &&
	test_grep "fluent-bit.conf: the Renames and README.md.s table differ: .*tls.client.server_name" err &&
	rm -r broken && cp -R "$top_srcdir/contrib/logging" broken &&
	sed -i "s/^      .destination.port = r.port\$/      .destination.ports = r.port/" broken/vector.yaml &&
	test_expect_code 1 python3 "$top_srcdir/t/helpers/logconf.py" broken \
		"$top_srcdir/proxy/audit.c" records.jsonl syslog.jsonl 2>err &&
	test_grep "vector.yaml: the remap and README.md.s table differ: .*destination.ports" err &&
	rm -r broken && cp -R "$top_srcdir/contrib/logging" broken &&
	sed -i "s/(?<ident>/(?<ident>x/" broken/parsers.conf &&
	test_expect_code 1 python3 "$top_srcdir/t/helpers/logconf.py" broken \
		"$top_srcdir/proxy/audit.c" records.jsonl syslog.jsonl 2>err &&
	test_grep "intutic_syslog does not match" err &&
	rm -r broken && cp -R "$top_srcdir/contrib/logging" broken &&
	sed -i "/^| .sni. /d" broken/README.md &&
	test_expect_code 1 python3 "$top_srcdir/t/helpers/logconf.py" broken \
		"$top_srcdir/proxy/audit.c" records.jsonl syslog.jsonl 2>err &&
	test_grep "README.md.s table and proxy/audit.c differ: .*written only ..sni.." err
'

test_expect_success JOURNALD 'the real journald: the records under intutic-audit, with the proxy'"'"'s pid' '
	start_proxy rules.yaml --audit journal &&
	jpid=$PROXY_PID &&
	requests &&
	wait_until 10 sh -c "journalctl -q -o cat -t intutic-audit _PID=$jpid | grep -c . | grep -qx 4" &&
	journalctl -q -o cat -t intutic-audit "_PID=$jpid" >real.out &&
	test "$(audit_count real.out event=close host=a.test status=200)" = 1
'

test_done
