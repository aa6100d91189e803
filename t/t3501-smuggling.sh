#!/bin/sh
test_description='adversarial: smuggling -- chunked framing, CL/TE, request targets inside tunnels, absolute-form and CONNECT mixed on one connection; every case of t/data/adversarial/cases against the real proxy with a lenient origin behind it (origin.py, and nginx), judged by the answers, the audit records and what reached the origin'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy

# The cases are data: t/data/adversarial/cases, one a line (its header says
# how to write one), run by t/helpers/adversarial.py, which writes what
# happened to each case in a directory of its own (out-ORIGIN/ID/).  Each
# case runs twice: against origin.py and against nginx (Debian's, with a
# configuration of this script's on a port of its own).  Both origins are
# lenient where a strict parser is not: a chunk's data ended by a bare LF
# is taken, and what follows is the next request (the first tests show
# it), so a proxy that passed such bytes on would have its origin read a
# request it never decided on.
#
# What each case must show (check.py, below):
#   - the answers and the decision records of its connection are the ones
#     the case gives, in order; one close record; no connection left open;
#   - the origin's log since the case began has no line naming a host the
#     rules refuse or the smuggled marker: NEVER below, case-insensitive,
#     on the request line and host fields (nginx logs the body too, after
#     " body=": a body is data, not a request, and may hold anything);
#   - a case with no "allow" decision: nothing at all reached the origin
#     (its log is empty for the case);
#   - a case that expects an origin's answer and sends a body to /echo:
#     the body, "wholebody" by the cases' convention, arrived whole
#     (origin.py echoes it back; nginx logs it).
#
# The names (the proxy's hosts file): allowed.test, denied.test (a deny
# entry) and unlisted.test (no entry) are all 127.0.0.1, where both origins
# listen: were the proxy to let a refused name through, it WOULD arrive at
# an origin, and show in its log.
ADVERSARIAL=$top_srcdir/t/helpers/adversarial.py
CASES=$TEST_DATA/adversarial/cases
RULES_TEMPLATE=$TEST_DATA/adversarial/rules.yaml
NEVER='denied\.test|unlisted\.test|smuggled'	# grep -i -E
WHOLE=wholebody
CASE_GROUPS='chunk clte tunnel mix'	# the first part of every case's id
GROUP_SECONDS=120	# one group of cases against one origin, at most
LATE_SECONDS=0.5	# for an origin to log a request after its case ended

# lenient_origin PORT LOG: straight to the origin (no proxy), a chunked POST
# whose chunk data ends in a bare LF, then a request for denied.test: the
# origin must take both, and log the second (as what strict parsing calls
# one malformed request).
lenient_origin () {
	python3 - "$1" <<\PY >direct.out || return 1
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"POST /echo HTTP/1.1\r\nHost: allowed.test\r\n"
          b"Transfer-Encoding: chunked\r\n\r\n"
          b"4\r\nwhol\n5\r\nebody\r\n0\r\n\r\n"
          b"GET /SMUGGLED HTTP/1.1\r\nHost: denied.test\r\n"
          b"Connection: close\r\n\r\n")
got = b""
end = time.monotonic() + 5
while time.monotonic() < end:
    d = s.recv(65536)
    if not d:
        break
    got += d
sys.stdout.write(got.decode("latin-1"))
PY
	wait_until 5 grep -q "GET /SMUGGLED .*denied\.test" "$2" || {
		echo "the origin did not take the smuggled request; it answered:" >&2
		cat direct.out >&2
		echo "and logged:" >&2
		cat "$2" >&2
		return 1
	}
}

# check.py OUT ID...: the assertions above on each case's directory OUT/ID
# (what adversarial.py wrote there); each failure names the case, says
# what is wrong and shows the case's bytes and audit records, on stderr.
# Exit 1 when a case failed.  (One process for a group of cases: the same
# checks in shell cost a few dozen processes a case.)
cat >check.py <<\PY
import difflib, os, re, sys

NEVER = re.compile(os.environ["NEVER"], re.I)
WHOLE = os.environ["WHOLE"].encode()
ALLOW = re.compile(r":allow(:|$)")


def read(d, name):
    with open(os.path.join(d, name), "rb") as f:
        return f.read()


def lines(d, name):
    return read(d, name).decode("latin-1").splitlines()


def shown(data):
    """Bytes as the cases file writes them: printable, escapes for the rest."""
    out = []
    for b in data:
        c = chr(b)
        if c == "\\":
            out.append("\\\\")
        elif c == "\r":
            out.append("\\r")
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif 32 <= b < 127:
            out.append(c)
        else:
            out.append("\\x%02x" % b)
    return "".join(out)


def check(d, cid):
    bad = []
    for what in ("answers", "decisions"):
        want, got = lines(d, what + ".expect"), lines(d, what)
        if want != got:
            bad.append("%s differ (expected, got):\n%s" % (what, "\n".join(
                difflib.unified_diff(want, got, "expected", "got", lineterm=""))))
    closes = read(d, "closes").strip().decode()
    if closes != "1":
        bad.append("%s close records, not 1" % closes)
    active = read(d, "active").strip().decode()
    if active != "1":
        bad.append("intutic_connections_active is %s after the case, not 1" % active)
    log = read(d, "origin.log").decode("latin-1").splitlines()
    never = [l for l in log if NEVER.search(re.sub(r" body=.*", "", l))]
    if never:
        bad.append("the origin got what it must never get:\n" + "\n".join(never))
    if log and not any(ALLOW.search(t) for t in lines(d, "decisions.expect")):
        bad.append("nothing was allowed, but the origin got:\n" + "\n".join(log))
    raw = read(d, "raw")
    if (any(":" not in t for t in lines(d, "answers.expect"))
            and b"/echo HTTP/" in read(d, "request")
            and WHOLE not in raw and WHOLE not in read(d, "origin.log")):
        bad.append("the body '%s' did not reach the origin whole; the answer:\n%s"
                   "\nthe origin's log:\n%s" % (WHOLE.decode(), shown(raw), "\n".join(log)))
    if bad:
        for b in bad:
            sys.stderr.write("%s: %s\n" % (cid, b))
        sys.stderr.write("%s: the bytes sent: %s\n" % (cid, shown(read(d, "request"))))
        sys.stderr.write("%s: the answers: %s\n" % (cid, shown(raw)))
        sys.stderr.write("%s: the audit records:\n%s" % (cid, read(d, "audit.jsonl").decode()))
    return not bad


failed = []
for cid in sys.argv[2:]:
    d = os.path.join(sys.argv[1], cid)
    try:
        ok = check(d, cid)
    except OSError as e:
        sys.stderr.write("%s: did not run (%s)\n" % (cid, e))
        ok = False
    if not ok:
        failed.append(cid)
if failed:
    sys.stderr.write("failed: %s (files in %s/ID/)\n" % (" ".join(failed),
                     os.path.abspath(sys.argv[1])))
sys.exit(1 if failed else 0)
PY

# run_group NAME PORT LOG GROUP: the cases whose id starts with GROUP-,
# against the origin NAME on PORT (its log LOG); then check.py on each.
# Every case is checked; the failing ones are named at the end.  Last,
# the origin's whole log since the group began, once it had time to write
# a late line, must name nothing of NEVER either (a line written after its
# case ended is then caught all the same).
run_group () {
	run_out_=out-$1
	mkdir -p "$run_out_" &&
	run_mark_=$(wc -c <"$3") &&
	run_ids_=$(awk -v g="$4" 'index($1, g "-") == 1 { printf "%s%s", sep, $1; sep = "," }' cases.list) ||
		return 1
	if test -z "$run_ids_"; then
		echo "no case in group $4" >&2
		return 1
	fi
	timeout -s KILL "$GROUP_SECONDS" python3 "$ADVERSARIAL" --cases "$CASES" \
		--proxy "$PROXY_PORT" --origin-port "$2" --origin-log "$3" \
		--audit "$AUDIT_FILE" --out "$run_out_" --only "$run_ids_" \
		>"$run_out_/$4.run" 2>&1 || {
		echo "adversarial.py failed:" >&2
		cat "$run_out_/$4.run" >&2
		return 1
	}
	run_failed_=
	# shellcheck disable=SC2046 # one id a word
	NEVER=$NEVER WHOLE=$WHOLE python3 check.py "$run_out_" \
		$(echo "$run_ids_" | tr ',' ' ') ||
		run_failed_=" (the cases above)"
	sleep "$LATE_SECONDS"
	tail -c "+$((run_mark_ + 1))" "$3" | sed 's/ body=.*//' >"$run_out_/$4.log"
	if grep -i -E -e "$NEVER" "$run_out_/$4.log" >&2; then
		echo "the origin's log since the $4 cases began has the lines above" >&2
		run_failed_="$run_failed_ (log)"
	fi
	test -z "$run_failed_" && return 0
	echo "$4 cases against $1: failed$run_failed_" >&2
	return 1
}

test_expect_success 'setup: origin.py, the names, the rules, the proxy' '
	start_origin origin &&
	write_hosts hosts allowed.test=127.0.0.1 denied.test=127.0.0.1 \
		unlisted.test=127.0.0.1 &&
	python3 "$ADVERSARIAL" --cases "$CASES" --proxy 1 --origin-port 1 \
		--origin-log /dev/null --audit /dev/null --out . --list >cases.list &&
	test_line_count -ge 40 cases.list &&
	awk -v groups=" $CASE_GROUPS " '"'"'index(groups, " " substr($1, 1, index($1, "-") - 1) " ") == 0 {
		print "case " $1 ": its id starts with no group of: " groups; bad = 1 }
		END { exit bad }'"'"' cases.list >&2
'

test_expect_success NGINX 'setup: nginx on a port of its own' '
	start_nginx
'

test_expect_success 'setup: the proxy, allowing allowed.test on both origins'"'"' ports' '
	fill_rules "$RULES_TEMPLATE" rules.yaml \
		PORTS="$ORIGIN_PORT${NGINX_PORT:+, $NGINX_PORT}" &&
	"$INTUTIC" rules check rules.yaml &&
	start_proxy rules.yaml &&
	"$INTUTIC" rules test rules.yaml "allowed.test:$ORIGIN_PORT" >out &&
	test_grep "^decision: allow" out &&
	test_expect_code 1 "$INTUTIC" rules test rules.yaml \
		"denied.test:$ORIGIN_PORT" >out &&
	test_grep "^reason: *denied\$" out &&
	test_expect_code 1 "$INTUTIC" rules test rules.yaml \
		"unlisted.test:$ORIGIN_PORT" >out &&
	test_grep "^reason: *not-allowlisted\$" out
'

test_expect_success 'origin.py is lenient: straight to it, a bare LF after chunk data passes and a smuggled request is served' '
	lenient_origin "$ORIGIN_PORT" "$ORIGIN_LOG"
'

test_expect_success NGINX 'nginx is lenient: straight to it, a bare LF after chunk data passes and a smuggled request is served' '
	lenient_origin "$NGINX_PORT" "$NGINX_LOG"
'

# Two rounds, the same cases: origin.py, then nginx; a test for each group.
for group in $CASE_GROUPS; do
	test_expect_success "origin.py: the $group cases" '
		run_group origin "$ORIGIN_PORT" "$ORIGIN_LOG" '"$group"'
	'
done
for group in $CASE_GROUPS; do
	test_expect_success NGINX "nginx: the $group cases" '
		run_group nginx "$NGINX_PORT" "$NGINX_LOG" '"$group"'
	'
done

test_done
