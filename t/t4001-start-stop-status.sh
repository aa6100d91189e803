#!/bin/sh
test_description='intutic start (foreground and --detach), stop and status'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns

test -x "$top_builddir/proxy/intutic-proxy" ||
	test_skip_all "intutic-proxy was not built (make in $top_builddir)"

WAIT_SECONDS=10		# a proxy to write or remove its state file, to exit
STOP_SECONDS=40		# intutic stop: it waits at most 30 s itself

# Every proxy this script starts: loopback, a port of its own, the state in
# the scratch directory, and an empty resolv.conf and hosts file, so that it
# never looks anything up outside.
STATE=$TRASH_DIRECTORY/state
STATE_FILE=$STATE/proxy.json
PROXY_OPTS="--bind 127.0.0.1 --port 0 --state-dir $STATE"
PROXY_OPTS="$PROXY_OPTS --resolv-conf $TRASH_DIRECTORY/resolv.conf"
PROXY_OPTS="$PROXY_OPTS --hosts $TRASH_DIRECTORY/hosts"

# json_num KEY: the number KEY in the state file.
json_num () {
	sed -n "s/.*\"$1\": \([0-9][0-9]*\).*/\1/p" "$STATE_FILE"
}

# is_proxy PID: PID runs, and it is an intutic-proxy.
is_proxy () {
	test_proc_alive_ "$1" &&
	is_proxy_exe_=$(readlink "/proc/$1/exe" 2>/dev/null) &&
	case ${is_proxy_exe_% (deleted)} in
	*/intutic-proxy)	true ;;
	*)			false ;;
	esac
}

# wait_state PID: until the state file names PID, at most WAIT_SECONDS.
wait_state () {
	wait_state_n_=$((WAIT_SECONDS * 10))
	until test -s "$STATE_FILE" && test "$(json_num pid)" = "$1"; do
		if test "$wait_state_n_" -le 0; then
			echo "no state file naming pid $1 after ${WAIT_SECONDS}s" >&2
			return 1
		fi
		sleep 0.1
		wait_state_n_=$((wait_state_n_ - 1))
	done
}

# wait_gone PID: until PID has exited, at most WAIT_SECONDS.
wait_gone () {
	wait_gone_n_=$((WAIT_SECONDS * 10))
	while test_proc_alive_ "$1"; do
		if test "$wait_gone_n_" -le 0; then
			echo "pid $1 still runs after ${WAIT_SECONDS}s" >&2
			return 1
		fi
		sleep 0.1
		wait_gone_n_=$((wait_gone_n_ - 1))
	done
}

# stop_ours PID: at the end, a proxy this script started and that still
# runs: SIGTERM (then SIGKILL), by PID, and only if it is an intutic-proxy.
stop_ours () {
	is_proxy "$1" || return 0
	test_stop_pid_ "$1"
}

# timed SECONDS CMD...: CMD, killed if it runs longer.
timed () {
	timeout -s KILL "$@"
}

test_expect_success 'setup: rule files, an empty resolv.conf and hosts' '
	printf "version: 1\nallow: [a.example.com, b.example.com]\n" >good.yaml &&
	printf "version: 1\nmode: loud\n" >bad.yaml &&
	: >resolv.conf &&
	: >hosts
'

# --- start --detach, status, stop ----------------------------------------------

test_expect_success 'start --detach: pidfile and state file, the proxy listens' '
	timed 30 "$INTUTIC" start --rules good.yaml --detach \
		--pidfile "$PWD/proxy.pid" --log "$PWD/proxy.log" \
		$PROXY_OPTS >out 2>err &&
	test_path_is_file proxy.pid &&
	read -r PID <proxy.pid &&
	test_atexit "stop_ours $PID" &&
	test_path_is_file "$STATE_FILE" &&
	test "$(json_num pid)" = "$PID" &&
	PORT=$(json_num port) &&
	test -n "$PORT" && test "$PORT" != 0 &&
	is_proxy "$PID" &&
	cat >expect <<-EOF &&
	intutic: rules '\''good.yaml'\'' loaded: 2 entries, mode enforce
	intutic: proxy running on 127.0.0.1:$PORT (pid $PID)
	EOF
	test_cmp expect out &&
	if test "$(id -u)" = 0; then
		# root without --user: the one warning, naming the fix
		test_grep "^intutic: warning: the proxy will run as root, .*intutic start --user intutic" err &&
		test_line_count = 1 err
	else
		test_must_be_empty err
	fi &&
	test_grep "^intutic-proxy: listening on port $PORT " proxy.log
'

test_expect_success 'the pid is the leader of a session of its own' '
	sid=$(sed "s/^.*) //" "/proc/$PID/stat" | cut -d " " -f 4) &&
	test "$sid" = "$PID"
'

test_expect_success 'status: running, with its pid, port and rules; exit 0' '
	timed 20 "$INTUTIC" status --state-dir "$STATE" >out 2>err &&
	test_must_be_empty err &&
	test_grep "^state: +running\$" out &&
	test_grep "^pid: +$PID\$" out &&
	test_grep "^listen: +127\.0\.0\.1:$PORT\$" out &&
	test_grep -F "rules:       $PWD/good.yaml" out &&
	test_grep "^uptime: +([0-9]+h )?([0-9]+m )?[0-9]+s\$" out &&
	test_grep "^connections: +[0-9]+ total, [0-9]+ active\$" out &&
	test_grep "^tunnels: +0 active\$" out &&
	test_grep "^decisions: +0 allow, 0 deny\$" out &&
	test_grep "^reloads: +0, 0 errors\$" out
'

test_expect_success CURL 'the proxy answers /healthz with ok' '
	curl -sS --noproxy "*" --max-time 10 \
		"http://127.0.0.1:$PORT/healthz" >out &&
	test_grep "^ok" out
'

test_expect_success 'status of a proxy that does not answer: exit 1 within its timeout' '
	kill -STOP "$PID" &&
	test_when_finished "kill -CONT $PID" &&
	test_expect_code 1 timed 20 "$INTUTIC" status --state-dir "$STATE" \
		>out 2>err &&
	test_grep "^state: +running, not answering\$" out &&
	test_grep "^pid: +$PID\$" out &&
	test_line_count = 1 err &&
	test_grep "^intutic: the proxy \(pid $PID\) does not answer at http://127\.0\.0\.1:$PORT/metrics: " err
'

test_expect_success 'start again with the same state directory: refused, exit 125' '
	test_expect_code 125 timed 30 "$INTUTIC" start --rules good.yaml \
		--detach --log "$PWD/proxy2.log" $PROXY_OPTS >out 2>err &&
	test_grep "^intutic: a proxy already runs on 127\.0\.0\.1:$PORT \(pid $PID, state file .*\): stop it first with .intutic stop.\$" err &&
	test "$(json_num pid)" = "$PID"
'

test_expect_success 'a second proxy on the same port (another state directory, other rules): refused, exit 125, naming the first' '
	printf "version: 1\nallow: [c.example.com]\n" >other.yaml &&
	test_expect_code 125 timed 30 "$INTUTIC" start --rules other.yaml \
		--detach --log "$PWD/second.log" --bind 127.0.0.1 \
		--port "$PORT" --state-dir "$TRASH_DIRECTORY/state2" \
		--resolv-conf resolv.conf --hosts hosts >out 2>err &&
	test_grep "^intutic: the proxy exited with status 125 before it listened" err &&
	test_grep -F "intutic-proxy: 127.0.0.1:$PORT is already in use by pid $PID (intutic-proxy, listening on 127.0.0.1:$PORT); stop it (\`intutic stop --state-dir $STATE\`) or choose another --port" second.log &&
	test_path_is_missing "$TRASH_DIRECTORY/state2/proxy.json" &&
	test "$(json_num pid)" = "$PID"
'

test_expect_success 'the same with a wildcard bind, in the foreground: refused, exit 125' '
	test_expect_code 125 timed 30 "$INTUTIC" start --rules other.yaml \
		--bind 0.0.0.0 --port "$PORT" \
		--state-dir "$TRASH_DIRECTORY/state3" \
		--resolv-conf resolv.conf --hosts hosts >out 2>err &&
	test_grep -F "intutic-proxy: 0.0.0.0:$PORT is already in use by pid $PID (intutic-proxy" err &&
	test_path_is_missing "$TRASH_DIRECTORY/state3/proxy.json"
'

test_expect_success 'another program listening with SO_REUSEPORT on the port: the proxy refuses, naming its pid' '
	rp_port=$(free_port) || return 1
	python3 -c "
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind((\"127.0.0.1\", int(sys.argv[1])))
s.listen(8)
open(\"rp.ready\", \"w\").write(\"up\\n\")
time.sleep(60)
" "$rp_port" &
	rp_pid=$! &&
	test_atexit "kill $rp_pid 2>/dev/null; wait $rp_pid 2>/dev/null; :" &&
	test_wait_for_file rp.ready 10 &&
	test_expect_code 125 timed 30 "$top_builddir/proxy/intutic-proxy" --rules good.yaml \
		--bind 127.0.0.1 --port "$rp_port" \
		--state-dir "$TRASH_DIRECTORY/state4" \
		--resolv-conf resolv.conf --hosts hosts >out 2>err &&
	test_grep "^intutic-proxy: 127\.0\.0\.1:$rp_port is already in use by pid $rp_pid \(python3[.0-9]*, listening on 127\.0\.0\.1:$rp_port\); stop it or choose another --port\$" err
'

test_expect_success 'stop: SIGTERM, it exits, the state file is gone; exit 0' '
	timed $STOP_SECONDS "$INTUTIC" stop --state-dir "$STATE" >out 2>err &&
	echo "intutic: proxy stopped (pid $PID, state file $STATE_FILE)" >expect &&
	test_cmp expect out &&
	test_must_be_empty err &&
	wait_gone "$PID" &&
	test_path_is_missing "$STATE_FILE" &&
	test_grep "^intutic-proxy: stopped\$" proxy.log
'

test_expect_success 'status after stop: not running, exit 3' '
	test_expect_code 3 timed 20 "$INTUTIC" status --state-dir "$STATE" \
		>out 2>err &&
	echo "intutic: not running (no state file '\''$STATE_FILE'\'')" >expect &&
	test_cmp expect out &&
	test_must_be_empty err
'

test_expect_success 'stop again: not running, exit 3' '
	test_expect_code 3 timed 20 "$INTUTIC" stop --state-dir "$STATE" \
		>out 2>err &&
	test_must_be_empty out &&
	echo "intutic: not running (no state file '\''$STATE_FILE'\'')" >expect &&
	test_cmp expect err
'

test_expect_success 'stop --timeout: a proxy that does not exit in time, exit 1' '
	timed 30 "$INTUTIC" start --rules good.yaml --detach \
		--pidfile "$PWD/proxy.pid" --log "$PWD/proxy.log" \
		$PROXY_OPTS >out 2>err &&
	read -r PID <proxy.pid &&
	test_atexit "stop_ours $PID" &&
	kill -STOP "$PID" &&
	test_when_finished "kill -CONT $PID" &&
	test_expect_code 1 timed 20 "$INTUTIC" stop --state-dir "$STATE" \
		--timeout 1 >out 2>err &&
	test_must_be_empty out &&
	echo "intutic: the proxy (pid $PID) still runs 1 s after SIGTERM" >expect &&
	test_cmp expect err &&
	test_path_is_file "$STATE_FILE"
'

test_expect_success 'once it runs again, the SIGTERM of stop ends it' '
	wait_gone "$PID" &&
	test_path_is_missing "$STATE_FILE"
'

# --- stale and broken state files ------------------------------------------------

test_expect_success 'a state file naming another process: stop never signals it, exit 3' '
	sleep 60 &
	SLEEP_PID=$! &&
	mkdir -p "$STATE" &&
	test_when_finished "kill $SLEEP_PID && { wait $SLEEP_PID || :; }" &&
	printf "{\"pid\": %d, \"port\": 1, \"bind\": [\"127.0.0.1\"], \"rules\": \"/x.yaml\", \"audit\": null, \"started\": 1, \"workers\": 1, \"version\": \"0.1.0\"}\n" \
		"$SLEEP_PID" >"$STATE_FILE" &&
	test_expect_code 3 timed 20 "$INTUTIC" status --state-dir "$STATE" \
		>out 2>err &&
	test_grep "^intutic: not running \(stale state file .*: pid $SLEEP_PID is .*sleep.*, not intutic-proxy\)\$" out &&
	test_path_is_file "$STATE_FILE" &&
	test_expect_code 3 timed 20 "$INTUTIC" stop --state-dir "$STATE" \
		>out 2>err &&
	test_must_be_empty out &&
	test_grep "^intutic: not running: removed the stale state file '\''$STATE_FILE'\'' \(pid $SLEEP_PID is .*sleep.*, not intutic-proxy: not signalled\)\$" err &&
	test_path_is_missing "$STATE_FILE" &&
	sleep 0.2 &&
	test_proc_alive_ "$SLEEP_PID"
'

test_expect_success 'a state file naming a process that is gone: removed, exit 3' '
	sh -c "exit 0" &
	GONE_PID=$! &&
	wait "$GONE_PID" &&
	mkdir -p "$STATE" &&
	printf "{\"pid\": %d, \"port\": 1, \"bind\": [\"127.0.0.1\"], \"rules\": \"/x.yaml\", \"audit\": null, \"started\": 1}\n" \
		"$GONE_PID" >"$STATE_FILE" &&
	test_expect_code 3 timed 20 "$INTUTIC" status --state-dir "$STATE" \
		>out 2>err &&
	test_grep "^intutic: not running \(stale state file .*: pid $GONE_PID is gone\)\$" out &&
	test_expect_code 3 timed 20 "$INTUTIC" stop --state-dir "$STATE" \
		>out 2>err &&
	test_grep "^intutic: not running: removed the stale state file .* \(pid $GONE_PID is gone\)\$" err &&
	test_path_is_missing "$STATE_FILE"
'

test_expect_success 'a malformed state file: one error naming it, exit 1' '
	mkdir -p "$STATE" &&
	test_when_finished "rm -f \"$STATE_FILE\"" &&
	printf "{\"pid\": 1, \"port\": \n" >"$STATE_FILE" &&
	test_expect_code 1 timed 20 "$INTUTIC" status --state-dir "$STATE" \
		>out 2>err &&
	test_must_be_empty out &&
	test_line_count = 1 err &&
	test_grep "^intutic: state file '\''$STATE_FILE'\'' is malformed: line [0-9]+ column [0-9]+: " err &&
	test_expect_code 1 timed 20 "$INTUTIC" stop --state-dir "$STATE" \
		>out 2>err &&
	test_line_count = 1 err &&
	test_grep "is malformed" err &&
	printf "{\"pid\": \"12\", \"port\": 1, \"bind\": [\"127.0.0.1\"], \"rules\": \"/x\", \"started\": 1}\n" >"$STATE_FILE" &&
	test_expect_code 1 timed 20 "$INTUTIC" status --state-dir "$STATE" \
		>out 2>err &&
	test_grep "^intutic: state file .* is malformed: line 1 column 9: .pid. is not a number" err &&
	printf "{\"pid\": 1, \"port\": 1, \"rules\": \"/x\", \"started\": 1}\n" >"$STATE_FILE" &&
	test_expect_code 1 timed 20 "$INTUTIC" stop --state-dir "$STATE" \
		>out 2>err &&
	test_grep "is malformed: line 1 column 1: .bind. is missing\$" err &&
	test_path_is_file "$STATE_FILE"
'

# --- start refuses ---------------------------------------------------------------

test_expect_success 'start with a rule file that does not load: exit 2, nothing runs' '
	test_expect_code 2 timed 30 "$INTUTIC" start --rules bad.yaml --detach \
		--pidfile "$PWD/bad.pid" $PROXY_OPTS >out 2>err &&
	test_must_be_empty out &&
	cat >expect <<-\EOF &&
	bad.yaml:2:7: found mode '\''loud'\'': expected enforce or report
	intutic: not starting: the rule file does not load
	EOF
	test_cmp expect err &&
	test_path_is_missing bad.pid &&
	test_path_is_missing "$STATE_FILE" &&
	test_expect_code 2 timed 30 "$INTUTIC" start --rules bad.yaml \
		$PROXY_OPTS >out 2>err &&
	test_path_is_missing "$STATE_FILE"
'

test_expect_success 'an unknown option: exit 2 before anything runs' '
	test_expect_code 2 timed 30 "$INTUTIC" start --rules good.yaml \
		--detach --bogus $PROXY_OPTS >out 2>err &&
	test_must_be_empty out &&
	test_grep "^intutic: start: unknown argument '\''--bogus'\''\$" err &&
	test_grep "^intutic: see intutic start --help\$" err &&
	test_line_count = 2 err &&
	test_path_is_missing "$STATE_FILE"
'

test_expect_success 'a value the proxy refuses: its error, exit 2, no pidfile' '
	test_expect_code 2 timed 30 "$INTUTIC" start --rules good.yaml \
		--detach --pidfile "$PWD/bad.pid" $PROXY_OPTS --workers 0 \
		>out 2>err &&
	test_grep "^intutic-proxy: --workers: '\''0'\'' is not a number from 1 to " err &&
	test_path_is_missing bad.pid &&
	test_path_is_missing "$STATE_FILE"
'

test_expect_success '--pidfile or --log without --detach: usage error, exit 2' '
	test_expect_code 2 "$INTUTIC" start --rules good.yaml \
		--pidfile p $PROXY_OPTS >out 2>err &&
	test_grep "^intutic: start: --pidfile needs --detach\$" err &&
	test_expect_code 2 "$INTUTIC" start --rules good.yaml \
		--log l $PROXY_OPTS >out 2>err &&
	test_grep "^intutic: start: --log needs --detach\$" err &&
	test_expect_code 2 "$INTUTIC" start --detach --port >out 2>err &&
	test_grep "^intutic: start: --port needs an N\$" err &&
	test_expect_code 2 "$INTUTIC" start --detach=yes >out 2>err &&
	test_grep "^intutic: start: --detach takes no value\$" err &&
	test_path_is_missing p
'

# --- start in the foreground ---------------------------------------------------

test_expect_success 'start in the foreground: the proxy in its place; SIGTERM: exit 0' '
	"$INTUTIC" start --rules=good.yaml $PROXY_OPTS >fg.out 2>fg.err &
	FG_PID=$! &&
	test_when_finished "stop_ours $FG_PID" &&
	wait_state "$FG_PID" &&
	is_proxy "$FG_PID" &&
	timed 20 "$INTUTIC" status --state-dir "$STATE" >out &&
	test_grep "^pid: +$FG_PID\$" out &&
	kill -TERM "$FG_PID" &&
	wait_gone "$FG_PID" &&
	wait "$FG_PID" &&
	test_path_is_missing "$STATE_FILE" &&
	test_grep "^intutic: rules '\''good.yaml'\'' loaded: 2 entries" fg.out &&
	test_grep "^intutic-proxy: stopped\$" fg.err
'

test_expect_success 'without --workers: one worker per processor it may run on (taskset -c 0: one; as it is: nproc)' '
	for cpus in 0 ""; do
		if test -n "$cpus"; then
			want=1 run="taskset -c $cpus"
		else
			want=$(nproc) run=
		fi
		test "$want" -le 64 || want=64
		$run "$INTUTIC" start --rules=good.yaml $PROXY_OPTS >w.out 2>w.err &
		W_PID=$! &&
		wait_state "$W_PID" &&
		test "$(json_num workers)" = $want &&
		kill -TERM "$W_PID" &&
		wait_gone "$W_PID" &&
		wait "$W_PID" || {
			stop_ours "$W_PID"
			echo "taskset ${cpus:-(none)}: $(json_num workers) workers, expected $want" >&2
			return 1
		}
		if test $want = 1; then
			test_grep -F " (1 worker), rules " w.err || return 1
		fi
	done
'

test_done
