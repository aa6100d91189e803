# t/lib-proxy.sh — what a proxy test needs around intutic-proxy: a network
# namespace of its own, throwaway certificates, origin/DNS/echo servers on
# loopback (t/helpers/), the proxy started and stopped, its audit log and
# metrics read.  Sourced after lib-test.sh:
#
#	#!/bin/sh
#	test_description='HTTP: plain requests through the proxy'
#	. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
#	. "$top_srcdir/t/lib-proxy.sh"
#	test_isolate_netns
#	test_require_proxy curl
#	test_expect_success 'setup' '
#		test_certs &&
#		start_origin origin &&
#		write_hosts hosts origin.test=127.0.0.1 &&
#		fill_rules proxy-http/forward.yaml rules.yaml PORTS="$ORIGIN_PORT" &&
#		start_proxy rules.yaml
#	'
#	test_expect_success 'a GET passes, one connection in the audit log' '
#		audit_mark &&
#		proxy_curl -o out "http://origin.test:$ORIGIN_PORT/" &&
#		test_grep "hello from origin.test" out &&
#		audit_conn host=origin.test decision=allow -- status=200
#	'
#	test_done
#
# POSIX sh (dash).  As in lib-test.sh, the library's own variables and
# helpers end in '_'.  Servers are started in the script's own shell (not
# in a subshell: no $(start_origin ...)), so that it can wait for them;
# each is stopped by PID at the end of the script (test_atexit).
#
# Network rule: every server binds 127.0.0.1; every client here talks to
# 127.0.0.1 only; test_isolate_netns puts the whole script in a namespace
# whose only interface is lo, so nothing can leave even by mistake.

# --- limits -----------------------------------------------------------------
TEST_PROXY_START_SECONDS=10	# a server's port file, the proxy's proxy.json
TEST_PROXY_STOP_SECONDS=5	# SIGTERM to exit, before SIGKILL
TEST_NETNS_STOP_SECONDS=10	# the namespaced script, after a signal
TEST_CURL_SECONDS=20		# proxy_curl, proxy_metric: --max-time
TEST_AUDIT_WAIT_SECONDS=10	# audit_wait, audit_since, audit_conn

# `make check-valgrind` sets TEST_VALGRIND: every proxy runs under valgrind
# memcheck, ten to fifty times slower (so the limits are longer), and a
# definite leak or a memory error fails the script (test_sanitizer_check_
# reads PROXY_DIR/valgrind.PID.log).
if test -n "${TEST_VALGRIND:-}"; then
	TEST_PROXY_START_SECONDS=60
	TEST_PROXY_STOP_SECONDS=60
	TEST_CURL_SECONDS=60
	TEST_AUDIT_WAIT_SECONDS=30
fi

test_helpers_=$top_srcdir/t/helpers
test_proxy_atexit_=		# set once the proxy's cleanup is registered
test_proxy_pid_=		# the proxy this shell started (PROXY_PID is a copy)

# What this library exports, come from the caller's environment (a test
# script that runs this one), would name another script's servers: none
# survives.  The library's own decisions use unexported variables.
unset PROXY_PORT PROXY_PID PROXY_URL PROXY_DIR PROXY_LOG AUDIT_FILE \
    DNS_PORT DNS_PID DNS_LOG DNS_QUERY_LOG CA_FILE CERT_FILE KEY_FILE

# --- processes ----------------------------------------------------------------

# test_proc_alive_ PID: PID runs (exists and is not a zombie).
test_proc_alive_ () {
	kill -0 "$1" 2>/dev/null || return 1
	test_proc_state_=$(sed -n 's/^.*) \([A-Za-z]\) .*/\1/p' "/proc/$1/stat" 2>/dev/null)
	test "$test_proc_state_" != Z
}

# test_own_alive_ PID: PID runs and is a child of this shell.  A child that
# ended may have been reaped (dash reaps while it waits for any command) and
# its number given to another process: signals go only where this holds.
test_own_alive_ () {
	test_proc_alive_ "$1" || return 1
	test_proc_ppid_=$(sed -n 's/^.*) [A-Za-z] \([0-9]*\) .*/\1/p' "/proc/$1/stat" 2>/dev/null)
	test "$test_proc_ppid_" = "$$"
}

# test_stop_pid_ PID [SECONDS]: SIGTERM, up to SECONDS (default
# TEST_PROXY_STOP_SECONDS) for it to end, then SIGKILL; reaps it when it is
# a child of this shell.  Succeeds when PID ended on SIGTERM (or was gone).
# For a PID the caller knows is its own (a daemon it started); the library's
# own children go through test_stop_child_.
test_stop_pid_ () {
	test_stop_with_ test_proc_alive_ "$@"
}

# test_stop_child_ PID [SECONDS]: the same, only while PID is a child of this
# shell (safe from PID reuse, for cleanups registered long before).
test_stop_child_ () {
	test_stop_with_ test_own_alive_ "$@"
}

# test_stop_with_ CHECK PID [SECONDS]: signal PID while CHECK PID holds.
test_stop_with_ () {
	test_stop_check_=$1
	shift
	test_stop_pid_n_=$((${2:-$TEST_PROXY_STOP_SECONDS} * 10))
	test_stop_pid_ok_=0
	if "$test_stop_check_" "$1"; then
		kill -TERM "$1" 2>/dev/null
		while test "$test_stop_pid_n_" -gt 0 && "$test_stop_check_" "$1"; do
			sleep 0.1
			test_stop_pid_n_=$((test_stop_pid_n_ - 1))
		done
		if "$test_stop_check_" "$1"; then
			printf '%s\n' "process $1 still runs ${2:-$TEST_PROXY_STOP_SECONDS}s after SIGTERM: SIGKILL" >&2
			kill -KILL "$1" 2>/dev/null
			test_stop_pid_ok_=1
		fi
	fi
	wait "$1" 2>/dev/null
	return "$test_stop_pid_ok_"
}

# --- the network namespace ----------------------------------------------------

test_netns_name_=
test_netns_child_=
test_netns_sig_=

# test_descendants_ PID...: the PIDs and, recursively, their children (a
# script run by a test may have made a namespace of its own: its processes
# are not in ours, but they descend from ones that are).
test_descendants_ () {
	# shellcheck disable=SC2009 # ps is the portable way to get ppids
	ps -e -o pid= -o ppid= 2>/dev/null | awk -v roots="$*" '
		BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) want[r[i]] = 1 }
		{ parent[$1] = $2 }
		END {
			for (round = 0; round < 32; round++) {
				added = 0
				for (p in parent)
					if (!(p in want) && (parent[p] in want)) {
						want[p] = 1
						added = 1
					}
				if (!added)
					break
			}
			for (p in want)
				printf "%s ", p
		}'
}

# Kill what is left in the namespace, and what descends from it (by PID),
# then delete it.  Returns 1 when something was left: a test that did not
# stop what it started.
test_netns_teardown_ () {
	test -n "$test_netns_name_" || return 0
	test_netns_ret_=0
	test_netns_left_=$(test_netns_pids_ | tr '\n' ' ')
	test -z "$test_netns_left_" ||
		test_netns_left_=$(test_descendants_ $test_netns_left_)
	if test -n "$test_netns_left_"; then
		test_netns_ret_=1
		printf '%s\n' "# processes left in namespace $test_netns_name_, killed: $test_netns_left_"
		for test_netns_pid_ in $test_netns_left_; do
			printf '#   %s: %s\n' "$test_netns_pid_" \
			    "$(tr '\0' ' ' <"/proc/$test_netns_pid_/cmdline" 2>/dev/null)"
			kill -KILL "$test_netns_pid_" 2>/dev/null
		done
	fi
	if test "${test_netns_via_:-ip}" = userns; then
		# gone with the last process in it
		rm -f "$test_netns_idfile_"
	else
		ip netns delete "$test_netns_name_" 2>/dev/null ||
			printf '%s\n' "# cannot delete namespace $test_netns_name_"
	fi
	test_netns_name_=
	return "$test_netns_ret_"
}

# test_netns_pids_: the processes in the script's namespace, one a line: ip
# netns pids for a named one; for a user namespace's, those whose
# /proc/PID/ns/net is the id its inside wrote (none when it wrote none: it
# never got that far).
test_netns_pids_ () {
	if test "${test_netns_via_:-ip}" != userns; then
		ip netns pids "$test_netns_name_" 2>/dev/null
		return 0
	fi
	test_netns_id_=$(cat "$test_netns_idfile_" 2>/dev/null)
	test -n "$test_netns_id_" || return 0
	for test_netns_p_ in /proc/[0-9]*; do
		test "$(readlink "$test_netns_p_/ns/net" 2>/dev/null)" = "$test_netns_id_" &&
			printf '%s\n' "${test_netns_p_#/proc/}"
	done
	return 0
}

# Delete this script's namespaces left by an earlier run that was killed
# (SIGKILL leaves no chance to clean up): intutic-t-<script>-PID where PID
# is gone and nothing runs in the namespace.
test_netns_gc_ () {
	for test_netns_old_ in $(ip netns list 2>/dev/null |
	    sed -n "s/^\(intutic-t-$test_name_-[0-9][0-9]*\)\( .*\)\{0,1\}\$/\1/p"); do
		kill -0 "${test_netns_old_##*-}" 2>/dev/null && continue
		test -z "$(ip netns pids "$test_netns_old_" 2>/dev/null)" || continue
		ip netns delete "$test_netns_old_" 2>/dev/null &&
			printf '%s\n' "deleted namespace $test_netns_old_, left by a killed run" >&2
	done
	return 0
}

# A signal to the outer script: pass it on to the script in the namespace
# as SIGTERM (as an asynchronous child it ignores SIGINT), which stops its
# servers on the way out.
test_netns_signal_ () {
	test_netns_sig_=$1
	test -n "$test_netns_child_" && kill -TERM "$test_netns_child_" 2>/dev/null
	return 0
}

test_netns_exit_ () {
	trap - EXIT
	test -z "$test_netns_name_" || test -z "$test_netns_on_exit_" ||
		"$test_netns_on_exit_" "$test_netns_name_"
	test_netns_teardown_ || test "$1" != 0 || set -- 1
	exit "$1"
}

# test_sanitizer_check_: fails (and shows the report) when a proxy the
# script ran wrote a sanitizer report to its log: CI builds with ASan and
# UBSan, and a report in a background process must fail the script.  The
# proxy's own "internal error" counts too: it is how a connection object
# never given back to its pool shows, which LeakSanitizer cannot see.
test_sanitizer_check_ () {
	test_san_logs_=$(grep -rlE 'ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: UndefinedBehaviorSanitizer|intutic-proxy: internal error' \
		--include=proxy.log "$TRASH_DIRECTORY" 2>/dev/null)
	test_vg_logs_=$(grep -rlE 'definitely lost: [1-9]|ERROR SUMMARY: [1-9]' \
		--include='valgrind.*.log' "$TRASH_DIRECTORY" 2>/dev/null)
	for test_vg_log_ in $test_vg_logs_; do
		printf '%s\n' "valgrind report in $test_vg_log_:" >&2
		grep -E '^==[0-9]+== ' "$test_vg_log_" | head -80 >&2
	done
	test -z "$test_san_logs_" && test -z "$test_vg_logs_" && return 0
	for test_san_log_ in $test_san_logs_; do
		printf '%s\n' "sanitizer report in $test_san_log_:" >&2
		grep -A30 -E 'Sanitizer|runtime error|internal error' "$test_san_log_" | head -60 >&2
	done
	return 1
}

# test_exec_env: what `intutic exec` reads from the environment, made the
# test's own: the proxy's and the workspace's variables (INTUTIC_API_URL,
# INTUTIC_TOKEN, INTUTIC_PROXY_URL, INTUTIC_PROFILE, INTUTIC_RULES) and every
# *_proxy variable unset; INTUTIC_SETTINGS_FILE (settings.yaml, not made)
# and XDG_CACHE_HOME in the scratch directory.
test_exec_env () {
	unset INTUTIC_API_URL INTUTIC_TOKEN INTUTIC_PROXY_URL INTUTIC_PROFILE \
		INTUTIC_RULES HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy \
		all_proxy NO_PROXY no_proxy
	INTUTIC_SETTINGS_FILE=$TRASH_DIRECTORY/settings.yaml
	XDG_CACHE_HOME=$TRASH_DIRECTORY/cache
	export INTUTIC_SETTINGS_FILE XDG_CACHE_HOME
}

# test_isolate_netns: run this script in a network namespace of its own, where
# only lo exists.  Call it right after sourcing the libraries, before any
# test.  Outside: makes the namespace, brings lo up, runs the script again
# inside with the same options (its TAP goes straight to our stdout), ends
# the namespace when it ends, whatever the way, and exits with its status.
# As root the namespace is named intutic-t-<script>-<pid> (ip netns add);
# as anyone else it is a user namespace with a network namespace of its own
# (unshare --user --map-root-user --net), where the script is "root" of
# nothing but its namespace: scripts that need the machine's root say so
# with test_require_root first.  Inside: exports INTUTIC_TEST_NETNS (the
# name) and INTUTIC_TEST_NETNS_ID (the namespace's /proc/self/ns/net) and
# returns.  Skips the script when neither way works.
test_isolate_netns () {
	# lib-test.sh removes INTUTIC_* from the environment, so the name
	# comes in as TEST_NETNS and the outside's namespaces as
	# TEST_NETNS_FROM; we trust them only if the name is this script's and
	# we really are somewhere else.  They go no further: a script that
	# this one runs makes a namespace of its own.
	if test -n "${TEST_NETNS:-}"; then
		test_netns_in_=$TEST_NETNS
		test_netns_from_=${TEST_NETNS_FROM:-}
		unset TEST_NETNS TEST_NETNS_FROM
		case $test_netns_in_ in
		"intutic-t-$test_name_-"*)
			if test_netns_inside_ "$test_netns_in_" \
			    "${test_netns_from_%% *}" "${test_netns_from_#* }"; then
				INTUTIC_TEST_NETNS=$test_netns_in_
				INTUTIC_TEST_NETNS_ID=$(readlink /proc/self/ns/net)
				export INTUTIC_TEST_NETNS INTUTIC_TEST_NETNS_ID
				return 0
			fi ;;
		esac
		test_bug_ "TEST_NETNS is '$test_netns_in_' but this shell is not in that namespace"
	fi
	case ${test_netns_via_:-} in
	userns)
		test_have_prereq USERNS ||
			test_skip_all "needs user namespaces (unshare --user --map-root-user --net)" ;;
	*)
		if ! test_have_prereq NETNS; then
			test_have_prereq USERNS ||
				test_skip_all "needs root and ip netns, or user namespaces (unshare --user --map-root-user --net)"
			test_netns_via_=userns
		fi ;;
	esac
	test_netns_reexec_
}

# test_netns_inside_ NAME NET USER: this shell is in the namespace NAME was
# made for, by the outside whose network and user namespaces were NET and
# USER: a network namespace other than NET, and either the named one (ip
# netns identify) or in a user namespace other than USER.
test_netns_inside_ () {
	test -n "$2" && test -n "$3" &&
	test "$(readlink /proc/self/ns/net)" != "$2" || return 1
	ip netns identify 2>/dev/null | grep -qxF -- "$1" ||
		test "$(readlink /proc/self/ns/user)" != "$3"
}

# test_netns_reexec_: the outside half of test_isolate_netns, which see.
# How the namespace is made and entered: test_netns_via_ "ip" (ip netns
# exec, the default), "nsenter" (nsenter --net=, which leaves /sys alone:
# what runc needs) or "userns" (unshare, with no name in ip netns);
# test_netns_on_exit_ names a function run with the namespace's name before
# it is deleted (none by default).
test_netns_reexec_ () {
	# The script to run again: lib-test.sh has left the directory it was
	# started from, so a relative $0 means "in $top_srcdir/t" (where make
	# runs them from, and where $top_srcdir was found from otherwise).
	case $0 in
	/*)	test_netns_script_=$0 ;;
	*)	test_netns_script_=$top_srcdir/t/${0##*/} ;;
	esac
	test -f "$test_netns_script_" ||
		test_bug_ "cannot find this script again as '$test_netns_script_': run it by an absolute path"
	test_netns_opts_=
	test -z "$test_verbose_" || test_netns_opts_="$test_netns_opts_ -v"
	test -z "$test_immediate_" || test_netns_opts_="$test_netns_opts_ -i"
	test -z "$test_debug_" || test_netns_opts_="$test_netns_opts_ -d"

	test_netns_try_=intutic-t-$test_name_-$$
	test_netns_from_="$(readlink /proc/self/ns/net) $(readlink /proc/self/ns/user)"
	if test "${test_netns_via_:-ip}" = userns; then
		# The namespace lives as long as something runs in it; the
		# inside writes its id, by which teardown finds what is left.
		test_netns_idfile_=$(mktemp "${TMPDIR:-/tmp}/intutic-t-netns.XXXXXX") ||
			test_skip_all "cannot make a file in ${TMPDIR:-/tmp}"
		test_netns_name_=$test_netns_try_
		trap 'test_netns_exit_ $?' EXIT
		trap 'test_netns_signal_ 129' HUP
		trap 'test_netns_signal_ 130' INT
		trap 'test_netns_signal_ 143' TERM
	else
		test_netns_gc_
		if ! test_netns_err_=$(ip netns add "$test_netns_try_" 2>&1); then
			test_skip_all "needs root and ip netns (network namespaces): $test_netns_err_"
		fi
		test_netns_name_=$test_netns_try_
		if test "${test_netns_via_:-ip}" = nsenter; then
			test_netns_enter_="nsenter --net=/var/run/netns/$test_netns_name_"
		else
			test_netns_enter_="ip netns exec $test_netns_name_"
		fi
		trap 'test_netns_exit_ $?' EXIT
		trap 'test_netns_signal_ 129' HUP
		trap 'test_netns_signal_ 130' INT
		trap 'test_netns_signal_ 143' TERM
		# shellcheck disable=SC2086 # the command is words (no spaces in names)
		if ! test_netns_err_=$($test_netns_enter_ ip link set lo up 2>&1); then
			test_netns_teardown_
			test_skip_all "needs root and ip netns (network namespaces): $test_netns_err_"
		fi
	fi

	# From here the script's output is the inner script's.  The inner one
	# removes and makes again the scratch directory: stand elsewhere.
	test_done_called_='netns'
	cd / || exit 1
	# Each way ends in an exec of the script: $! is the script's shell.
	if test "${test_netns_via_:-ip}" = userns; then
		# shellcheck disable=SC2016,SC2086 # $0 and $@ are the inner sh's
		unshare --user --map-root-user --net -- sh -c \
		    'ip link set lo up && readlink /proc/self/ns/net >"$0" && exec "$@"' \
		    "$test_netns_idfile_" env TEST_NETNS="$test_netns_name_" \
		    TEST_NETNS_FROM="$test_netns_from_" \
		    "$TEST_SHELL_PATH" "$test_netns_script_" $test_netns_opts_ &
	else
		# shellcheck disable=SC2086 # the command and the options are words
		$test_netns_enter_ env TEST_NETNS="$test_netns_name_" \
			TEST_NETNS_FROM="$test_netns_from_" \
			"$TEST_SHELL_PATH" "$test_netns_script_" $test_netns_opts_ &
	fi
	test_netns_child_=$!
	wait "$test_netns_child_"
	test_netns_status_=$?
	if test -n "$test_netns_sig_"; then
		# wait returned for a signal: give the inner script its time
		# to stop its servers, then make sure.
		test_netns_n_=$((TEST_NETNS_STOP_SECONDS * 10))
		while test "$test_netns_n_" -gt 0 &&
		    test_own_alive_ "$test_netns_child_"; do
			sleep 0.1
			test_netns_n_=$((test_netns_n_ - 1))
		done
		if test_own_alive_ "$test_netns_child_"; then
			printf '%s\n' "# the script in $test_netns_name_ still runs ${TEST_NETNS_STOP_SECONDS}s after SIGTERM: SIGKILL"
			kill -KILL "$test_netns_child_" 2>/dev/null
		fi
		wait "$test_netns_child_"
		test_netns_code_=$?
		test "$test_netns_code_" = 127 || test_netns_status_=$test_netns_code_
		test "$test_netns_status_" != 0 || test_netns_status_=$test_netns_sig_
	fi
	test_netns_child_=
	exit "$test_netns_status_"
}

# test_require_proxy [TOOL...]: skip the whole script unless intutic-proxy
# was built and python3 (the test servers) is there, and each TOOL is on
# PATH.  A TOOL may say why after a space: "openssl (test certificates)"
# skips with "needs openssl (test certificates)".  Right after
# test_isolate_netns.
test_require_proxy () {
	test -x "$top_builddir/proxy/intutic-proxy" ||
		test_skip_all "intutic-proxy was not built (make in $top_builddir)"
	command -v python3 >/dev/null 2>&1 || test_skip_all "needs python3 (the test servers)"
	for test_require_tool_ in "$@"; do
		command -v "${test_require_tool_%% *}" >/dev/null 2>&1 ||
			test_skip_all "needs $test_require_tool_"
	done
}

# --- certificates -------------------------------------------------------------

# test_cert_leaf_ STEM CN SAN: a key and a certificate signed by the test CA.
test_cert_leaf_ () {
	test_cert_dir_=$TRASH_DIRECTORY/certs
	printf '%s\n' \
	    '[req]' 'distinguished_name = dn' 'prompt = no' '[dn]' 'CN = x' \
	    '[leaf]' \
	    'basicConstraints = critical, CA:FALSE' \
	    'keyUsage = critical, digitalSignature, keyEncipherment' \
	    'extendedKeyUsage = serverAuth' \
	    'subjectKeyIdentifier = hash' \
	    'authorityKeyIdentifier = keyid:always' \
	    "subjectAltName = $3" >"$test_cert_dir_/$1.cnf" &&
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$test_cert_dir_/$1.key" -out "$test_cert_dir_/$1.csr" \
	    -subj "/CN=$2" -config "$test_cert_dir_/$1.cnf" 2>"$test_cert_dir_/$1.err" &&
	test_cert_serial_=$((${test_cert_serial_:-0} + 1)) &&
	openssl x509 -req -in "$test_cert_dir_/$1.csr" -days 1 \
	    -CA "$test_cert_dir_/ca.crt" -CAkey "$test_cert_dir_/ca.key" \
	    -set_serial "$(($$ * 100 + test_cert_serial_))" \
	    -extfile "$test_cert_dir_/$1.cnf" -extensions leaf \
	    -out "$test_cert_dir_/$1.crt" 2>>"$test_cert_dir_/$1.err" || {
		cat "$test_cert_dir_/$1.err" >&2
		return 1
	}
}

# test_certs: a throwaway CA and a server certificate for *.test,
# origin.test, a.test, b.test, ws.test and 127.0.0.1 (EC P-256, valid one
# day), made in the scratch directory's certs/ once per script.  Exports
# CA_FILE, CERT_FILE and KEY_FILE.
test_certs () {
	test_cert_dir_=$TRASH_DIRECTORY/certs
	CA_FILE=$test_cert_dir_/ca.crt
	CERT_FILE=$test_cert_dir_/server.crt
	KEY_FILE=$test_cert_dir_/server.key
	export CA_FILE CERT_FILE KEY_FILE
	test -s "$CERT_FILE" && return 0
	mkdir -p "$test_cert_dir_" &&
	printf '%s\n' \
	    '[req]' 'distinguished_name = dn' 'prompt = no' '[dn]' 'CN = x' \
	    '[ca]' \
	    'basicConstraints = critical, CA:TRUE' \
	    'keyUsage = critical, keyCertSign, cRLSign' \
	    'subjectKeyIdentifier = hash' >"$test_cert_dir_/ca.cnf" &&
	openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$test_cert_dir_/ca.key" -out "$CA_FILE" -days 1 \
	    -subj "/CN=intutic test CA $$" -config "$test_cert_dir_/ca.cnf" \
	    -extensions ca 2>"$test_cert_dir_/ca.err" || {
		cat "$test_cert_dir_/ca.err" >&2
		return 1
	}
	test_cert_leaf_ server origin.test \
	    'DNS:*.test, DNS:origin.test, DNS:a.test, DNS:b.test, DNS:ws.test, IP:127.0.0.1'
}

# test_leaf_cert STEM NAME...: one more certificate from the test CA (after
# test_certs), for exactly these DNS names: certs/STEM.crt and
# certs/STEM.key.  For a server that must present the wrong name.
test_leaf_cert () {
	test $# -ge 2 || { echo "test_leaf_cert: needs STEM NAME..." >&2; return 1; }
	test -s "${CA_FILE:-}" || { echo "test_leaf_cert: run test_certs first" >&2; return 1; }
	test_leaf_stem_=$1
	shift
	test_leaf_cn_=$1
	test_leaf_san_=
	for test_leaf_name_ in "$@"; do
		test_leaf_san_="${test_leaf_san_:+$test_leaf_san_, }DNS:$test_leaf_name_"
	done
	test_cert_leaf_ "$test_leaf_stem_" "$test_leaf_cn_" "$test_leaf_san_"
}

# --- a second namespace ---------------------------------------------------------

# peer_netns NAME "HOST_CIDR..." "PEER_CIDR...": a second network namespace
# NAME, joined to the script's by a veth pair, pn-host here and pn-peer
# there, each end with its addresses (IPv6 ones without DAD) and up, lo up
# there; deleted at the end of the script, after the servers peer_start
# started in it.  Only the script's own namespaces are behind either end.
test_peer_netns_=
test_peer_pids_=
test_peer_down_ () {
	for test_peer_p_ in $test_peer_pids_; do
		test_stop_child_ "$test_peer_p_"
	done
	ip netns delete "$test_peer_netns_" 2>/dev/null
	return 0
}
peer_netns () {
	test $# = 3 || { echo "peer_netns: needs NAME HOST_CIDRS PEER_CIDRS" >&2; return 1; }
	test -z "$test_peer_netns_" ||
		{ echo "peer_netns: $test_peer_netns_ is made already" >&2; return 1; }
	test_peer_netns_=$1
	test_atexit test_peer_down_ &&
	ip netns add "$1" &&
	ip link add pn-host type veth peer name pn-peer netns "$1" || return 1
	for test_peer_a_ in $2; do
		case $test_peer_a_ in
		*:*)	ip -6 addr add "$test_peer_a_" dev pn-host nodad ;;
		*)	ip addr add "$test_peer_a_" dev pn-host ;;
		esac || return 1
	done
	for test_peer_a_ in $3; do
		case $test_peer_a_ in
		*:*)	ip netns exec "$1" ip -6 addr add "$test_peer_a_" dev pn-peer nodad ;;
		*)	ip netns exec "$1" ip addr add "$test_peer_a_" dev pn-peer ;;
		esac || return 1
	done
	ip link set pn-host up &&
	ip netns exec "$1" ip link set lo up &&
	ip netns exec "$1" ip link set pn-peer up
}

# peer_start NAME SCRIPT ARGS...: t/helpers/SCRIPT in the peer namespace,
# its port in srv/NAME.port (<NAME>_PORT), its log srv/NAME.log; stopped
# at the end of the script.
peer_start () {
	test_peer_n_=$1 test_peer_s_=$2
	shift 2
	mkdir -p srv && rm -f "srv/$test_peer_n_.port" || return 1
	ip netns exec "$test_peer_netns_" python3 "$test_helpers_/$test_peer_s_" \
		--port-file "srv/$test_peer_n_.port" "$@" \
		</dev/null >>"srv/$test_peer_n_.log" 2>&1 &
	test_peer_pids_="$test_peer_pids_ $!"
	test_wait_for_file "srv/$test_peer_n_.port" 10 &&
	eval "$(test_var_name_ "$test_peer_n_")_PORT=\$(cat srv/\$test_peer_n_.port)"
}

# --- servers on loopback ------------------------------------------------------

# test_var_name_ NAME: NAME as the start of a shell variable: upper case,
# other characters than letters and digits made '_'.
test_var_name_ () {
	printf '%s\n' "$1" | tr 'a-z' 'A-Z' | tr -c 'A-Z0-9\n' '_'
}

# test_start_helper_ NAME SCRIPT ARGS...: start t/helpers/SCRIPT on
# 127.0.0.1 port 0, wait for its port, export <NAME>_PORT, <NAME>_PID and
# <NAME>_LOG (its stderr), register its stop.
test_start_helper_ () {
	test_helper_name_=$1
	test_helper_script_=$2
	shift 2
	case $test_helper_name_ in
	''|[!A-Za-z]*|*[!A-Za-z0-9_.-]*)
		echo "start: bad server name '$test_helper_name_' (a letter, then letters, digits, '_', '.', '-')" >&2
		return 1 ;;
	esac
	command -v python3 >/dev/null 2>&1 ||
		{ echo "start: python3 is needed for the test servers" >&2; return 1; }
	test_helper_var_=$(test_var_name_ "$test_helper_name_")
	test_helper_dir_=$TRASH_DIRECTORY/srv
	mkdir -p "$test_helper_dir_" || return 1
	test_helper_port_file_=$test_helper_dir_/$test_helper_name_.port
	test_helper_log_=$test_helper_dir_/$test_helper_name_.log
	eval "test_helper_old_=\${test_srv_pid_${test_helper_var_}_:-}"
	if test -n "$test_helper_old_" && test_own_alive_ "$test_helper_old_"; then
		echo "start: '$test_helper_name_' already runs (pid $test_helper_old_)" >&2
		return 1
	fi
	rm -f "$test_helper_port_file_"
	python3 "$test_helpers_/$test_helper_script_" \
		--port-file "$test_helper_port_file_" "$@" \
		</dev/null >>"$test_helper_log_" 2>&1 &
	test_helper_pid_=$!
	test_atexit "test_stop_child_ $test_helper_pid_" || {
		kill -KILL "$test_helper_pid_"
		return 1
	}
	test_helper_n_=$((TEST_PROXY_START_SECONDS * 10))
	while ! test -s "$test_helper_port_file_"; do
		if ! test_own_alive_ "$test_helper_pid_" || test "$test_helper_n_" -le 0; then
			echo "start: $test_helper_script_ for '$test_helper_name_' did not start; its log:" >&2
			cat "$test_helper_log_" >&2
			test_stop_child_ "$test_helper_pid_" 1
			return 1
		fi
		sleep 0.1
		test_helper_n_=$((test_helper_n_ - 1))
	done
	read -r test_helper_port_ <"$test_helper_port_file_" || return 1
	eval "test_srv_pid_${test_helper_var_}_=\$test_helper_pid_
		${test_helper_var_}_PORT=\$test_helper_port_
		${test_helper_var_}_PID=\$test_helper_pid_
		${test_helper_var_}_LOG=\$test_helper_log_
		export ${test_helper_var_}_PORT ${test_helper_var_}_PID ${test_helper_var_}_LOG"
}

# start_origin NAME [OPTIONS...]: an HTTP origin (t/helpers/origin.py, which
# see for the endpoints and OPTIONS, e.g. --tls "$CERT_FILE" "$KEY_FILE").
# Exports <NAME>_PORT, <NAME>_PID and <NAME>_LOG, NAME upper-cased with
# '.' and '-' made '_': start_origin a.test -> A_TEST_PORT.  Its responses
# carry X-Origin: NAME.
start_origin () {
	test $# -ge 1 || { echo "start_origin: needs NAME" >&2; return 1; }
	test_origin_name_=$1
	shift
	test_start_helper_ "$test_origin_name_" origin.py --name "$test_origin_name_" "$@"
}

# start_dns [ZONE] [OPTIONS...]: the DNS server (t/helpers/dnsd.py) with that
# zone file (none: every name is NXDOMAIN) and a query log.  Exports
# DNS_PORT, DNS_PID, DNS_LOG and DNS_QUERY_LOG ("NAME TYPE udp|tcp" lines).
start_dns () {
	test_dns_zone_=
	case ${1:-} in
	''|-*)	;;
	*)	test_dns_zone_=$1; shift ;;
	esac
	DNS_QUERY_LOG=$TRASH_DIRECTORY/srv/dns-queries.log
	export DNS_QUERY_LOG
	mkdir -p "$TRASH_DIRECTORY/srv" && : >"$DNS_QUERY_LOG" &&
	test_start_helper_ dns dnsd.py --query-log "$DNS_QUERY_LOG" \
		${test_dns_zone_:+--zone "$test_dns_zone_"} "$@"
}

# start_sshd AUTHORIZED_KEYS: a real sshd on 127.0.0.1:$SSHD_PORT (2222
# unless set; nothing else listens in a test's own namespace) for
# $(id -un), key logins only from AUTHORIZED_KEYS, with a host key of its
# own, in a mount namespace of its own (its /run, where it wants its
# privilege separation directory); stopped at the end of the script.  Sets
# SSHD_PID, SSHD_LOG (its log, VERBOSE) and SSHD_HOST_KEY (the public half,
# for a known_hosts line).  Needs the machine's root (sshd switches to its
# user sshd) and /usr/sbin/sshd (by its absolute path, as sshd wants).
start_sshd () {
	test $# = 1 || { echo "start_sshd: needs AUTHORIZED_KEYS" >&2; return 1; }
	: "${SSHD_PORT:=2222}"
	test_sshd_dir_=$TRASH_DIRECTORY/sshd
	mkdir -p "$test_sshd_dir_" &&
	ssh-keygen -q -t ed25519 -N "" -C "sshd of $test_name_" \
		-f "$test_sshd_dir_/host_key" &&
	cp "$1" "$test_sshd_dir_/authorized_keys" &&
	cat >"$test_sshd_dir_/sshd_config" <<-EOF &&
	Port $SSHD_PORT
	ListenAddress 127.0.0.1
	HostKey $test_sshd_dir_/host_key
	PidFile none
	AuthorizedKeysFile $test_sshd_dir_/authorized_keys
	AllowUsers $(id -un)
	StrictModes no
	UsePAM no
	PasswordAuthentication no
	KbdInteractiveAuthentication no
	PermitRootLogin prohibit-password
	PrintMotd no
	LogLevel VERBOSE
	EOF
	SSHD_LOG=$test_sshd_dir_/log
	SSHD_HOST_KEY=$test_sshd_dir_/host_key.pub
	: >"$SSHD_LOG" &&
	{
		unshare -m --propagation private sh -c "
			mount -t tmpfs -o mode=0755 tmpfs /run &&
			mkdir -m 0755 /run/sshd &&
			exec /usr/sbin/sshd -D -e -f $test_sshd_dir_/sshd_config" \
			</dev/null >>"$SSHD_LOG" 2>&1 &
	} &&
	SSHD_PID=$! &&
	test_atexit "test_stop_child_ $SSHD_PID" &&
	wait_until 10 sshd_listens || {
		cat "$SSHD_LOG" >&2
		return 1
	}
}

# sshd_listens: start_sshd's sshd takes a connection (2: sshd is gone).
sshd_listens () {
	test_own_alive_ "$SSHD_PID" || return 2
	python3 -c '
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
except OSError:
    sys.exit(1)
' "$SSHD_PORT"
}

# start_echo [NAME] [OPTIONS...]: a TCP server (t/helpers/echo.py; OPTIONS
# such as --mode banner TEXT, --mode source N, --mode sink, --tls CERT KEY).
# NAME defaults to echo: ECHO_PORT, ECHO_PID, ECHO_LOG.
start_echo () {
	test_echo_name_=echo
	case ${1:-} in
	''|-*)	;;
	*)	test_echo_name_=$1; shift ;;
	esac
	test_start_helper_ "$test_echo_name_" echo.py "$@"
}

# start_load [NAME]: the server of the load tests (t/helpers/load.py
# serve: thousands of connections at once, each an echo, or an HTTP origin
# that tells the client its byte counts).  NAME defaults to load:
# LOAD_PORT, LOAD_PID, LOAD_LOG.
start_load () {
	test_start_helper_ "${1:-load}" load.py
}

# stop_server NAME: stop a server started by start_origin/start_dns/
# start_echo before the end of the script (an origin going away).
stop_server () {
	test_stop_var_=$(test_var_name_ "$1")
	eval "test_stop_srv_pid_=\${test_srv_pid_${test_stop_var_}_:-}"
	test -n "$test_stop_srv_pid_" ||
		{ echo "stop_server: no server '$1' was started" >&2; return 1; }
	test_stop_child_ "$test_stop_srv_pid_"
}

# server_mark NAME: remember where the log of the server NAME (<NAME>_LOG:
# its request lines, its connections) ends now.
# server_since NAME: the lines it logged since then, in NAME.new.
server_mark () {
	test_server_var_=$(test_var_name_ "$1")
	eval "test_server_log_=\${${test_server_var_}_LOG:-}"
	test -n "$test_server_log_" ||
		{ echo "server_mark: no server '$1' was started" >&2; return 1; }
	test_server_n_=$(wc -l <"$test_server_log_") || return 1
	eval "test_server_mark_${test_server_var_}_=\$((test_server_n_))"
}
server_since () {
	test_server_var_=$(test_var_name_ "$1")
	eval "test_server_log_=\${${test_server_var_}_LOG:-}
		test_server_n_=\${test_server_mark_${test_server_var_}_:-}"
	test -n "$test_server_n_" ||
		{ echo "server_since: no server_mark $1 first" >&2; return 1; }
	tail -n "+$((test_server_n_ + 1))" "$test_server_log_" >"$1.new"
}

# write_hosts FILE NAME=ADDR...: a hosts file ("ADDR NAME" lines) for the
# proxy's --hosts; a NAME given twice gets both addresses.
write_hosts () {
	test $# -ge 1 || { echo "write_hosts: needs FILE NAME=ADDR..." >&2; return 1; }
	test_hosts_file_=$1
	shift
	: >"$test_hosts_file_" || return 1
	for test_hosts_pair_ in "$@"; do
		case $test_hosts_pair_ in
		?*=?*)	;;
		*)	echo "write_hosts: expected NAME=ADDR, got '$test_hosts_pair_'" >&2
			return 1 ;;
		esac
		printf '%s %s\n' "${test_hosts_pair_#*=}" "${test_hosts_pair_%%=*}" \
			>>"$test_hosts_file_" || return 1
	done
}

# write_resolv_conf [FILE] [OPTION...]: a resolv.conf (evdns syntax) naming
# the test's DNS server, 127.0.0.1:$DNS_PORT (started empty if none runs),
# with "options OPTION..." when given (timeout:1 attempts:1, ndots:N).
# FILE defaults to $PWD/resolv.conf, the one start_proxy passes.
write_resolv_conf () {
	test_resolv_file_=$PWD/resolv.conf
	case ${1:-} in
	*/*)	test_resolv_file_=$1; shift ;;
	esac
	if test -z "${test_srv_pid_DNS_:-}"; then
		start_dns || return 1
	fi
	{
		printf 'nameserver 127.0.0.1:%s\n' "$DNS_PORT"
		test $# = 0 || printf 'options %s\n' "$*"
	} >"$test_resolv_file_"
}

# fill_rules TEMPLATE OUT NAME=VALUE...: a rules template with every @NAME@
# replaced by VALUE (the ports the test's servers got), as OUT.  TEMPLATE
# is a path under $TEST_DATA/rules (proxy-http/forward.yaml) or an
# absolute one.  OUT is written whole, then renamed into place (a proxy
# that reloads it never reads half a file).  A placeholder left over
# outside a comment fails.
fill_rules () {
	test $# -ge 2 || { echo "fill_rules: needs TEMPLATE OUT NAME=VALUE..." >&2; return 1; }
	case $1 in
	/*)	test_fill_in_=$1 ;;
	*)	test_fill_in_=$TEST_DATA/rules/$1 ;;
	esac
	test_fill_out_=$2
	shift 2
	test -f "$test_fill_in_" ||
		{ echo "fill_rules: no template $test_fill_in_" >&2; return 1; }
	: >"$test_fill_out_.sed" || return 1
	for test_fill_pair_ in "$@"; do
		case $test_fill_pair_ in
		[A-Z_]*=*)	;;
		*)	echo "fill_rules: expected NAME=VALUE, got '$test_fill_pair_'" >&2
			return 1 ;;
		esac
		# a VALUE may hold what sed would read: / & \
		test_fill_val_=$(printf '%s\n' "${test_fill_pair_#*=}" | sed 's/[\/&]/\\&/g')
		printf 's/@%s@/%s/g\n' "${test_fill_pair_%%=*}" "$test_fill_val_" \
			>>"$test_fill_out_.sed" || return 1
	done
	sed -f "$test_fill_out_.sed" "$test_fill_in_" >"$test_fill_out_.tmp" || return 1
	rm -f "$test_fill_out_.sed"
	if grep -n '^[^#]*@[A-Z_]*@' "$test_fill_out_.tmp" >&2; then
		echo "fill_rules: placeholders left in $test_fill_out_" >&2
		rm -f "$test_fill_out_.tmp"
		return 1
	fi
	mv "$test_fill_out_.tmp" "$test_fill_out_"
}

# --- the proxy ----------------------------------------------------------------

# start_proxy RULES [ARGS...]: run $top_builddir/proxy/intutic-proxy on
# 127.0.0.1 port 0 with its state, audit log, resolv.conf and hosts file in
# the current directory (resolv.conf and hosts made when missing: the
# test's own DNS server, no hosts), wait for state/proxy.json and export
# PROXY_PORT, PROXY_PID, PROXY_URL, PROXY_DIR, PROXY_LOG and AUDIT_FILE.
# The proxy is stopped at the end of the script.  Fails, loudly, when the
# proxy was not built or does not start.  PROXY_WRAP, when set, is words put
# before the proxy's command: a wrapper that exec()s it, keeping its pid
# (t/helpers/mntns.sh).
start_proxy () {
	test $# -ge 1 || { echo "start_proxy: needs RULES [ARGS...]" >&2; return 1; }
	test_proxy_bin_=$top_builddir/proxy/intutic-proxy
	if ! test -x "$test_proxy_bin_"; then
		echo "start_proxy: '$test_proxy_bin_' was not built (make in $top_builddir)" >&2
		return 1
	fi
	if test -n "$test_proxy_pid_" && test_own_alive_ "$test_proxy_pid_"; then
		echo "start_proxy: the proxy already runs (pid $test_proxy_pid_): stop_proxy first" >&2
		return 1
	fi
	test_proxy_rules_=$1
	shift
	PROXY_DIR=$PWD
	PROXY_LOG=$PROXY_DIR/proxy.log
	AUDIT_FILE=$PROXY_DIR/audit.jsonl
	export PROXY_DIR PROXY_LOG AUDIT_FILE
	mkdir -p "$PROXY_DIR/state" || return 1
	rm -f "$PROXY_DIR/state/proxy.json"
	test -f "$PROXY_DIR/hosts" || : >"$PROXY_DIR/hosts" || return 1
	test -f "$PROXY_DIR/resolv.conf" || write_resolv_conf || return 1
	if test -z "$test_proxy_atexit_"; then
		# Last in, first out: stop the proxy, then read its logs.
		test_atexit 'test_sanitizer_check_' || return 1
		test_atexit 'test_proxy_cleanup_' || return 1
		test_proxy_atexit_=1
	fi
	test_proxy_vg_=${PROXY_WRAP:-}
	if test -n "${TEST_VALGRIND:-}"; then
		case $PROXY_DIR in
		*[[:space:]]*)
			echo "start_proxy: under valgrind, PROXY_DIR may not hold a space" >&2
			return 1 ;;
		esac
		test_proxy_vg_="$test_proxy_vg_ valgrind --tool=memcheck --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99 --log-file=$PROXY_DIR/valgrind.%p.log"
	fi
	# shellcheck disable=SC2086 # the valgrind command is words
	$test_proxy_vg_ "$test_proxy_bin_" --rules "$test_proxy_rules_" \
		--bind 127.0.0.1 --port 0 \
		--state-dir "$PROXY_DIR/state" \
		--audit "$AUDIT_FILE" \
		--resolv-conf "$PROXY_DIR/resolv.conf" \
		--hosts "$PROXY_DIR/hosts" \
		"$@" </dev/null >>"$PROXY_LOG" 2>&1 &
	test_proxy_pid_=$!
	PROXY_PID=$test_proxy_pid_
	export PROXY_PID
	test_proxy_n_=$((TEST_PROXY_START_SECONDS * 10))
	test_proxy_port_=
	while :; do
		if test -s "$PROXY_DIR/state/proxy.json"; then
			# a half-written file does not parse: try again
			test_proxy_port_=$(python3 -c '
import json, sys
print(int(json.load(open(sys.argv[1]))["port"]))
' "$PROXY_DIR/state/proxy.json" 2>/dev/null) && break
		fi
		if ! test_own_alive_ "$test_proxy_pid_"; then
			wait "$test_proxy_pid_"
			echo "start_proxy: intutic-proxy exited with status $? before writing state/proxy.json; its log:" >&2
			tail -n 50 "$PROXY_LOG" >&2
			test_proxy_pid_=
			return 1
		fi
		if test "$test_proxy_n_" -le 0; then
			echo "start_proxy: no port in state/proxy.json after ${TEST_PROXY_START_SECONDS}s; its log:" >&2
			tail -n 50 "$PROXY_LOG" >&2
			test -f "$PROXY_DIR/state/proxy.json" && cat "$PROXY_DIR/state/proxy.json" >&2
			test_stop_child_ "$test_proxy_pid_"
			test_proxy_pid_=
			return 1
		fi
		sleep 0.1
		test_proxy_n_=$((test_proxy_n_ - 1))
	done
	PROXY_PORT=$test_proxy_port_
	PROXY_URL=http://127.0.0.1:$PROXY_PORT
	CONTROL_SOCKET=$PROXY_DIR/state/control.sock
	export PROXY_PORT PROXY_URL CONTROL_SOCKET
}

test_proxy_cleanup_ () {
	test -n "$test_proxy_pid_" || return 0
	test_stop_child_ "$test_proxy_pid_"
	test_proxy_pid_=
	return 0
}

# stop_proxy: SIGTERM, wait (TEST_PROXY_STOP_SECONDS), and return the
# proxy's exit status; still running then: SIGKILL, and fail.
stop_proxy () {
	if test -z "$test_proxy_pid_"; then
		echo "stop_proxy: no proxy was started" >&2
		return 1
	fi
	test_stop_proxy_pid_=$test_proxy_pid_
	test_proxy_pid_=
	if ! test_own_alive_ "$test_stop_proxy_pid_"; then
		wait "$test_stop_proxy_pid_"
		test_stop_proxy_code_=$?
		echo "stop_proxy: the proxy had already exited, status $test_stop_proxy_code_" >&2
		return 1
	fi
	kill -TERM "$test_stop_proxy_pid_"
	test_stop_proxy_n_=$((TEST_PROXY_STOP_SECONDS * 10))
	while test "$test_stop_proxy_n_" -gt 0 &&
	    test_own_alive_ "$test_stop_proxy_pid_"; do
		sleep 0.1
		test_stop_proxy_n_=$((test_stop_proxy_n_ - 1))
	done
	if test_own_alive_ "$test_stop_proxy_pid_"; then
		kill -KILL "$test_stop_proxy_pid_"
		wait "$test_stop_proxy_pid_"
		echo "stop_proxy: the proxy still ran ${TEST_PROXY_STOP_SECONDS}s after SIGTERM: killed" >&2
		return 1
	fi
	wait "$test_stop_proxy_pid_"
}

# proxy_wait_exit SECONDS: wait until the proxy (signalled by the test)
# has exited, at most SECONDS, and return its exit status: 125 when it
# still runs; otherwise a status not 0 shows the end of its log.
proxy_wait_exit () {
	if test -z "$test_proxy_pid_"; then
		echo "proxy_wait_exit: no proxy was started" >&2
		return 1
	fi
	if ! wait_until "${1:-$TEST_PROXY_STOP_SECONDS}" test_proc_gone_ "$test_proxy_pid_"; then
		echo "the proxy (pid $test_proxy_pid_) still runs ${1:-$TEST_PROXY_STOP_SECONDS}s later" >&2
		return 125
	fi
	wait "$test_proxy_pid_"
	test_proxy_exit_code_=$?
	test_proxy_pid_=
	test "$test_proxy_exit_code_" = 0 && return 0
	if test "$test_proxy_exit_code_" -gt 128; then
		echo "the proxy died by signal $((test_proxy_exit_code_ - 128)); its log:" >&2
	else
		echo "the proxy exited with status $test_proxy_exit_code_; its log:" >&2
	fi
	tail -n 5 "$PROXY_LOG" >&2
	return "$test_proxy_exit_code_"
}

# test_proc_gone_ PID: PID no longer runs.
test_proc_gone_ () {
	! test_proc_alive_ "$1"
}

# test_reload_counts_: "RELOADS ERRORS" from the proxy's /metrics.
test_reload_counts_ () {
	curl -sS --fail --noproxy '*' --max-time "$TEST_CURL_SECONDS" \
		"$PROXY_URL/metrics" | awk '
		$1 == "intutic_reloads_total" { r = $2 }
		$1 == "intutic_reload_errors_total" { e = $2 }
		END { if (r == "" || e == "") exit 1; print r, e }'
}

# reload_proxy [--no-wait]: SIGHUP to the proxy, and wait (at most
# TEST_PROXY_START_SECONDS) until its /metrics count the reload: succeeds
# when intutic_reloads_total went up, fails when intutic_reload_errors_total
# did (the old rules stay).  --no-wait: only the signal.
reload_proxy () {
	if test -z "$test_proxy_pid_" || ! test_own_alive_ "$test_proxy_pid_"; then
		echo "reload_proxy: no proxy runs" >&2
		return 1
	fi
	if test "${1:-}" = --no-wait; then
		kill -HUP "$test_proxy_pid_"
		return
	fi
	test_reload_before_=$(test_reload_counts_) || {
		echo "reload_proxy: cannot read intutic_reloads_total and intutic_reload_errors_total from $PROXY_URL/metrics" >&2
		return 1
	}
	kill -HUP "$test_proxy_pid_" || return 1
	test_reload_n_=$((TEST_PROXY_START_SECONDS * 10))
	while :; do
		test_reload_now_=$(test_reload_counts_) &&
		test "$test_reload_now_" != "$test_reload_before_" && break
		if test "$test_reload_n_" -le 0; then
			echo "reload_proxy: no reload counted ${TEST_PROXY_START_SECONDS}s after SIGHUP" >&2
			return 1
		fi
		sleep 0.1
		test_reload_n_=$((test_reload_n_ - 1))
	done
	test "${test_reload_now_#* }" = "${test_reload_before_#* }" && return 0
	echo "reload_proxy: the proxy refused the reload (intutic_reload_errors_total went up); its log:" >&2
	tail -n 5 "$PROXY_LOG" >&2
	return 1
}

# control_curl PATH [ARGS...]: curl to the proxy's control API at PATH
# (/v1/runs...), on its unix socket (CONTROL_SOCKET); quiet but for
# errors, bounded in time.  The socket is reached through its directory
# on descriptor 9 (/proc/self/fd/9/control.sock), as a path of any length
# must be: a sockaddr_un holds 107 bytes.
control_curl () {
	test -n "${CONTROL_SOCKET:-}" || { echo "control_curl: no proxy was started" >&2; return 1; }
	test_control_path_=$1
	shift
	curl -sS --max-time "$TEST_CURL_SECONDS" --noproxy "*" \
		--unix-socket /proc/self/fd/9/control.sock "$@" \
		"http://localhost$test_control_path_" 9<"${CONTROL_SOCKET%/*}"
}

# run_sandbox RUN ADDR [POLICY]: registers RUN (token TEST_RUN_TOKEN, this
# shell its launcher; POLICY, a policy document, its own) on the control
# socket and gives it the sandbox address ADDR, as `intutic exec` does for
# a container; fails unless both are taken (201, then 200).
TEST_RUN_TOKEN=0123456789abcdef0123456789abcdef
run_sandbox () {
	test $# -ge 2 || { echo "run_sandbox: needs RUN ADDR [POLICY]" >&2; return 1; }
	python3 -c "
import json, sys
d = {\"run\": sys.argv[1], \"token\": sys.argv[2], \"command\": \"agent\",
     \"pid\": int(sys.argv[3])}
if len(sys.argv) > 4:
    d[\"policy\"] = sys.argv[4]
print(json.dumps(d))
" "$1" "$TEST_RUN_TOKEN" $$ ${3+"$3"} >run-reg.json &&
	test_run_code_=$(control_curl /v1/runs -o run-reg.out -w "%{http_code}" \
		--data-binary @run-reg.json) &&
	test "$test_run_code_" = 201 || {
		echo "run_sandbox: registering $1: $test_run_code_ $(cat run-reg.out)" >&2
		return 1
	}
	printf '{"addr": "%s"}\n' "$2" >run-addr.json &&
	test_run_code_=$(control_curl "/v1/runs/$1/addr" -X PUT -o run-reg.out \
		-w "%{http_code}" --data-binary @run-addr.json) &&
	test "$test_run_code_" = 200 || {
		echo "run_sandbox: giving $1 the address $2: $test_run_code_ $(cat run-reg.out)" >&2
		return 1
	}
}

# proxy_curl ARGS...: curl through the proxy, quiet but for errors, and
# bounded in time (TEST_CURL_SECONDS).
proxy_curl () {
	test -n "${PROXY_URL:-}" || { echo "proxy_curl: no proxy was started" >&2; return 1; }
	curl -sS --max-time "$TEST_CURL_SECONDS" --proxy "$PROXY_URL" "$@"
}

# proxy_curl_ca ARGS...: proxy_curl trusting the test CA only (test_certs).
proxy_curl_ca () {
	test -n "${CA_FILE:-}" || { echo "proxy_curl_ca: run test_certs first" >&2; return 1; }
	proxy_curl --cacert "$CA_FILE" "$@"
}

# proxy_serves HOST:PORT: a GET of http://HOST:PORT/ through the proxy gets
# what origin.py answers there, "hello from HOST:PORT" (the proxy still
# serves).  The answer stays in alive.out.
proxy_serves () {
	proxy_curl -o alive.out "http://$1/" &&
	echo "hello from $1" >alive.expect &&
	test_cmp alive.expect alive.out
}

# drive NAME MODE TARGET: a connection driven by t/helpers/drive.py in
# ./NAME/ (with DRIVE_AUTH, as a run's); waits for it to be ready
# (NAME/ready; DRIVE_WAIT_SECONDS, 10 by default, for each wait here).
# Its PID is NAME_PID (upper case); it is stopped at the end of the script.
drive () {
	rm -rf "$1" && mkdir "$1" || return 1
	python3 "$top_srcdir/t/helpers/drive.py" "$2" "$PROXY_PORT" "$3" "$1" >"$1/log" 2>&1 &
	drive_pid_=$!
	eval "$(test_var_name_ "$1")_PID=\$drive_pid_"
	test_atexit "test_stop_pid_ $drive_pid_" &&
	test_wait_for_file "$1/ready" "${DRIVE_WAIT_SECONDS:-10}"
}

# tunnel_open NAME TARGET: a tunnel, driven.
tunnel_open () {
	drive "$1" tunnel "$2"
}

# drive_send NAME N: NAME/send.N.tmp becomes message N; wait for its answer.
drive_send () {
	mv "$1/send.$2.tmp" "$1/send.$2" &&
	test_wait_for_file "$1/recv.$2" "${DRIVE_WAIT_SECONDS:-10}"
}

# tunnel_echo NAME N TEXT: send TEXT through the tunnel NAME as message N;
# its echo must come back.
tunnel_echo () {
	printf "%s" "$3" >"$1/send.$2.tmp" &&
	drive_send "$1" "$2" &&
	printf "%s" "$3" >"$1/expect.$2" &&
	test_cmp "$1/expect.$2" "$1/recv.$2"
}

# ka_get NAME N HOST:PORT: GET / from HOST:PORT on the keep-alive connection
# NAME as request N; the answer (status line, body) in NAME/recv.N.
ka_get () {
	printf "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n" "$3" "$3" >"$1/send.$2.tmp" &&
	drive_send "$1" "$2"
}

# --- nginx: a real, lenient origin ------------------------------------------
# The prerequisite NGINX when it is installed (Debian's, from the package
# list); start_nginx (NGINX_START_SECONDS, 10 by default, to listen).

NGINX=$(command -v nginx 2>/dev/null) ||
	{ test -x /usr/sbin/nginx && NGINX=/usr/sbin/nginx; } ||
	NGINX=
test -n "$NGINX" && test_set_prereq NGINX

# nginx_listens: both ports of nginx take a connection (2: nginx is gone).
nginx_listens () {
	test_own_alive_ "$NGINX_PID" || return 2
	python3 - "$NGINX_ADDR" "$NGINX_PORT" "$NGINX_BACK_PORT" <<\PY
import socket, sys
for a, p in ((sys.argv[1], sys.argv[2]), ("127.0.0.1", sys.argv[3])):
    try:
        socket.create_connection((a, int(p)), timeout=1).close()
    except OSError:
        sys.exit(1)
PY
}

# start_nginx [ADDR [PORT]]: nginx in the foreground of a background process of this
# shell (stopped by PID at the end), everything it writes under nginx/: the
# front server on NGINX_PORT logs each request to NGINX_LOG (request line,
# host, Host header, status, body) and hands it to a back server on
# NGINX_BACK_PORT that answers 200 "ok".  The front reads the whole body
# (proxy_pass, buffered): a chunked body is decoded by nginx's own parser,
# and whatever it takes for the end of the body, the next bytes are the
# next request on a keep-alive connection.  The front listens on ADDR
# (NGINX_ADDR; 127.0.0.1 by default) and PORT (any free one by default).
start_nginx () {
	NGINX_DIR=$TRASH_DIRECTORY/nginx
	NGINX_LOG=$NGINX_DIR/access.log
	NGINX_ADDR=${1:-127.0.0.1}
	mkdir -p "$NGINX_DIR" || return 1
	NGINX_PORT=${2:-$(free_port)} &&
	NGINX_BACK_PORT=$(free_port) || return 1
	if test "$NGINX_PORT" = "$NGINX_BACK_PORT"; then
		NGINX_BACK_PORT=$(free_port) || return 1
	fi
	# As root (the machine's, or a user namespace's), nginx would hand
	# its temporary directories to nobody: no such user in a user
	# namespace.  It keeps them, and runs as who runs it.
	NGINX_USER=
	test "$(id -u)" != 0 || NGINX_USER="user $(id -un) $(id -gn);"
	cat >"$NGINX_DIR/nginx.conf" <<EOF || return 1
$NGINX_USER
daemon off;
master_process off;
worker_processes 1;
pid $NGINX_DIR/nginx.pid;
error_log $NGINX_DIR/error.log info;
events { worker_connections 256; }
http {
	log_format adversarial 'nginx: \$request host=\$host hosthdr=\$http_host status=\$status body=\$request_body';
	access_log $NGINX_LOG adversarial;
	client_body_temp_path $NGINX_DIR/body;
	proxy_temp_path $NGINX_DIR/proxy;
	fastcgi_temp_path $NGINX_DIR/fastcgi;
	uwsgi_temp_path $NGINX_DIR/uwsgi;
	scgi_temp_path $NGINX_DIR/scgi;
	client_body_buffer_size 64k;
	client_body_in_single_buffer on;
	keepalive_timeout 30s;
	server {
		listen $NGINX_ADDR:$NGINX_PORT;
		location / { proxy_pass http://127.0.0.1:$NGINX_BACK_PORT; }
	}
	server {
		listen 127.0.0.1:$NGINX_BACK_PORT;
		access_log off;
		location / { return 200 "ok\n"; }
	}
}
EOF
	: >"$NGINX_LOG" || return 1
	"$NGINX" -p "$NGINX_DIR/" -e "$NGINX_DIR/error.log" \
		-c "$NGINX_DIR/nginx.conf" </dev/null >>"$NGINX_DIR/stderr.log" 2>&1 &
	NGINX_PID=$!
	test_atexit "test_stop_child_ $NGINX_PID" || return 1
	wait_until "${NGINX_START_SECONDS:-10}" nginx_listens && return 0
	echo "nginx did not start; its logs:" >&2
	cat "$NGINX_DIR/stderr.log" "$NGINX_DIR/error.log" >&2
	return 1
}

# client_py ARGS...: t/helpers/client.py (dns, tcp, ws).
client_py () {
	python3 "$test_helpers_/client.py" "$@"
}

# proxy_tcp ARGS...: client.py tcp through a CONNECT tunnel of the proxy
# (ARGS: --to HOST:PORT, --send, --send-file, --half-close...).
proxy_tcp () {
	test -n "${PROXY_PORT:-}" || { echo "proxy_tcp: no proxy was started" >&2; return 1; }
	client_py tcp --proxy "127.0.0.1:$PROXY_PORT" "$@"
}

# proxy_send ARGS...: client.py tcp straight to the proxy's port, for bytes
# written by hand (--send-file req): what the proxy answers on stdout.
proxy_send () {
	test -n "${PROXY_PORT:-}" || { echo "proxy_send: no proxy was started" >&2; return 1; }
	client_py tcp --to "127.0.0.1:$PROXY_PORT" "$@"
}

# proxy_metric NAME [LABELS]: the value of the Prometheus sample NAME (with
# LABELS among its labels: 'decision="deny",proto="http"'; several samples:
# their sum) from $PROXY_URL/metrics.  The last scrape stays in
# srv/metrics.txt.  No such sample: a message, and failure.
proxy_metric () {
	test $# -ge 1 || { echo "proxy_metric: needs NAME [LABELS]" >&2; return 1; }
	test -n "${PROXY_URL:-}" || { echo "proxy_metric: no proxy was started" >&2; return 1; }
	mkdir -p "$TRASH_DIRECTORY/srv" || return 1
	curl -sS --fail --noproxy '*' --max-time "$TEST_CURL_SECONDS" \
		-o "$TRASH_DIRECTORY/srv/metrics.txt" "$PROXY_URL/metrics" || {
		echo "proxy_metric: cannot fetch $PROXY_URL/metrics" >&2
		return 1
	}
	python3 "$test_helpers_/metric.py" "$@" <"$TRASH_DIRECTORY/srv/metrics.txt"
}

# --- small tools --------------------------------------------------------------

# test_own_netns_: a test that adds addresses of its own does it only in
# the namespace test_isolate_netns made (it has nothing but lo): anywhere
# else it is a bug in the test.
test_own_netns_ () {
	test -n "${INTUTIC_TEST_NETNS_ID:-}" &&
	test "$(readlink /proc/self/ns/net)" = "$INTUTIC_TEST_NETNS_ID" ||
		test_bug_ "not in the test's own network namespace"
}

# test_addr_dev_: test_own_netns_, then ADDR_DEV: the interface to add
# addresses on, a dummy one where the kernel has them, else lo.
test_addr_dev_ () {
	test_own_netns_
	if ip link add intutic-d0 type dummy 2>/dev/null &&
	    ip link set intutic-d0 up; then
		ADDR_DEV=intutic-d0
	else
		ADDR_DEV=lo
	fi
}

# proxy_rss: the running proxy's resident memory now, KiB; under ASan
# without its shadow memory (the mappings in x86-64's shadow range,
# 0x7fff8000 to 0x10007fff8000), so that bounds hold in both builds.
proxy_rss () {
	if grep -q libasan "/proc/$PROXY_PID/maps"; then
		python3 -c '
import re, sys
kib, shadow = 0, False
for line in open("/proc/%s/smaps" % sys.argv[1]):
    m = re.match(r"([0-9a-f]+)-[0-9a-f]+ ", line)
    if m:
        shadow = 0x7fff8000 <= int(m.group(1), 16) < 0x10007fff8000
    elif line.startswith("Rss:") and not shadow:
        kib += int(line.split()[1])
print(kib)' "$PROXY_PID"
	else
		awk '$1 == "VmRSS:" { print $2 }' "/proc/$PROXY_PID/status"
	fi
}

# free_port: a port nothing listens on at 127.0.0.1 (bound once to get it,
# then closed; nothing else runs in the test's namespace to take it).
free_port () {
	python3 -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
'
}

# tcp_conns [--sport N] [--dport N] [--state established|all] [--count]:
# this namespace's TCP connections with their queues and TCP_INFO counters
# (t/helpers/tcpinfo.py, from sock_diag), one a line, or how many.
tcp_conns () {
	python3 "$top_srcdir/t/helpers/tcpinfo.py" "$@"
}

# upstreams PORT: how many established connections there are to port PORT
# (from the proxy, when only it talks to the servers).
upstreams () {
	tcp_conns --count --dport "$1"
}

# upstreams_are PORT N: there are N now.
upstreams_are () {
	test "$(upstreams "$1")" = "$2"
}

# wait_upstreams PORT N [SECONDS]: until there are N (at most SECONDS, 10 by
# default); else says how many there are, and the connections, and fails.
wait_upstreams () {
	wait_until "${3:-10}" upstreams_are "$1" "$2" && return 0
	echo "still $(upstreams "$1") connections to port $1, not $2:" >&2
	tcp_conns --state all >&2
	return 1
}

# wait_until SECONDS CMD...: run CMD until it succeeds, every 0.1 s, at
# most SECONDS (whole seconds; the last try when they are over).  CMD's
# status 1 means "not yet"; any other failure ends the wait at once, with
# that status.  Fails (1) when the time is over.
wait_until () {
	test_wait_until_n_=$(($1 * 10))
	shift
	while :; do
		"$@"
		test_wait_until_s_=$?
		test "$test_wait_until_s_" = 0 && return 0
		test "$test_wait_until_s_" = 1 || return "$test_wait_until_s_"
		test "$test_wait_until_n_" -le 0 && return 1
		sleep 0.1
		test_wait_until_n_=$((test_wait_until_n_ - 1))
	done
}

# grep_count PATTERN FILE: how many lines of FILE match the ERE PATTERN
# (0 when none).
grep_count () {
	grep -c -E -e "$1" "$2" || :
}

# --- the audit log ------------------------------------------------------------
# The records are JSON objects, one a line: ts, event (decision|close), id,
# run, client, proto (connect|http), host, port, sni, addr, decision
# (allow|deny), reason, rule, bytes_up, bytes_down, duration_ms, status.
# A COND is KEY=VALUE, KEY!=VALUE, KEY~REGEX, or KEY>=N, <=, >, < (numbers);
# a missing key or null reads as "".  FILE, when given first, has none of = ~ < >
# in it; by default it is $AUDIT_FILE (set by start_proxy), else
# ./audit.jsonl.  A line that is not a JSON object fails them all.

test_audit_ () {
	test_audit_mode_=$1
	shift
	test_audit_file_=${AUDIT_FILE:-$PWD/audit.jsonl}
	case ${1-=} in
	*[=~\<\>]*)	;;
	*)	test_audit_file_=$1; shift ;;
	esac
	python3 "$test_helpers_/audit.py" "$test_audit_mode_" "$test_audit_file_" "$@"
}

# audit_records [FILE] COND...: print the matching records, as they are.
audit_records () {
	test_audit_ --records "$@"
}

# audit_count [FILE] COND...: print how many records match.
audit_count () {
	test_audit_ --count "$@"
}

# audit_wait [FILE] COND...: wait until a record matches (the proxy writes
# the close record after the client is done), at most
# TEST_AUDIT_WAIT_SECONDS; else fail and show the log.
audit_wait () {
	test_audit_ --wait "$@" --seconds "$TEST_AUDIT_WAIT_SECONDS"
}

# --- the records since a mark --------------------------------------------------
# A test takes a mark before it makes its requests, then reads what the
# proxy wrote after it: since.jsonl, in the current directory.

test_audit_mark_=
test_audit_mark_file_=

# audit_mark: remember where the audit log ($AUDIT_FILE, else
# ./audit.jsonl) ends now (none yet: at its start).
audit_mark () {
	test_audit_mark_file_=${AUDIT_FILE:-$PWD/audit.jsonl}
	test_audit_mark_=0
	test -e "$test_audit_mark_file_" || return 0
	test_audit_mark_=$(wc -l <"$test_audit_mark_file_") || return 1
	test_audit_mark_=$((test_audit_mark_))
}

# audit_settle: wait (at most TEST_AUDIT_WAIT_SECONDS) until every
# connection in the audit log with a decision record has its close record,
# so that a mark taken next sees nothing of the connections before it.
audit_settle () {
	python3 "$test_helpers_/audit.py" --settled \
		--seconds "$TEST_AUDIT_WAIT_SECONDS" "${AUDIT_FILE:-$PWD/audit.jsonl}"
}

# audit_since N: wait (at most TEST_AUDIT_WAIT_SECONDS) until N close
# records follow the mark (N 0: no wait); since.jsonl then holds every
# record written after the mark.  Else fail and show them.
audit_since () {
	test $# = 1 || { echo "audit_since: needs N" >&2; return 1; }
	test -n "$test_audit_mark_" || { echo "audit_since: no audit_mark first" >&2; return 1; }
	python3 "$test_helpers_/audit.py" --since --mark "$test_audit_mark_" \
		--out since.jsonl --min "$1" --seconds "$TEST_AUDIT_WAIT_SECONDS" \
		"$test_audit_mark_file_" event=close
}

# audit_expect N COND...: exactly N records of since.jsonl (audit_since,
# audit_conn) match every COND; else say how many did, and show them.
audit_expect () {
	test $# -ge 1 || { echo "audit_expect: needs N COND..." >&2; return 1; }
	test_audit_want_=$1
	shift
	test_audit_got_=$(audit_count since.jsonl "$@") || return 1
	test "$test_audit_got_" = "$test_audit_want_" && return 0
	echo "expected $test_audit_want_ records with $*, found $test_audit_got_ in:" >&2
	cat since.jsonl >&2
	return 1
}

# audit_conn [COND...] [-- COND...]: the one connection made since the
# mark.  Waits (at most TEST_AUDIT_WAIT_SECONDS) for its close record;
# then exactly one decision record must have come after the mark, matching
# the CONDs before "--", and exactly one close record, with the decision's
# id, matching those after it.  Leaves the records in since.jsonl.
audit_conn () {
	test -n "$test_audit_mark_" || { echo "audit_conn: no audit_mark first" >&2; return 1; }
	python3 "$test_helpers_/audit.py" --conn --mark "$test_audit_mark_" \
		--out since.jsonl --seconds "$TEST_AUDIT_WAIT_SECONDS" \
		"$test_audit_mark_file_" "$@"
}
