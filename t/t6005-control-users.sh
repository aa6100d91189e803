#!/bin/sh
test_description='the control socket between local users: who may reach it (--control-group), who sees and ends which run, the cap per user refusing without evicting'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_require_root "setpriv to other users"
test_isolate_netns
test_require_proxy curl setpriv

GROUP_GID=65534		# nogroup: the control group
MEMBER_UID=65534	# nobody, whose group it is
OTHER_UID=4242		# no such user, in no group: not a member
TOK=0123456789abcdef0123456789abcdef

# as UID GID CMD...: CMD as that user and group, no other group.
as () {
	as_uid_=$1 as_gid_=$2
	shift 2
	setpriv --reuid="$as_uid_" --regid="$as_gid_" --clear-groups "$@"
}

# reg ID [PID]: a registration body for run ID in ./reg.
reg () {
	printf '{"run":"%s","token":"%s","command":"agent","pid":%s}' \
		"$1" "$TOK" "${2:-null}" >reg
}

# ctl UID GID PATH ARGS...: control_curl as that user (who cannot write
# here: the shell writes for it); the answer in body, the status (or
# curl's error) in code.
ctl () {
	ctl_uid_=$1 ctl_gid_=$2 ctl_path_=$3
	shift 3
	as "$ctl_uid_" "$ctl_gid_" curl -sS --max-time "$TEST_CURL_SECONDS" \
		--noproxy "*" --unix-socket /proc/self/fd/9/control.sock \
		-w "%{stderr}%{http_code}\n" "$@" "http://localhost$ctl_path_" \
		>body 2>code 9<"${CONTROL_SOCKET%/*}"
}

test_expect_success 'setup: an origin, and a proxy whose control group is nogroup' '
	chmod 755 "$TRASH_DIRECTORY" &&
	start_origin origin.test &&
	write_hosts hosts origin.test=127.0.0.1 &&
	cat >rules.yaml <<-EOF &&
	version: 1
	allow:
	  - "origin.test:$ORIGIN_TEST_PORT"
	  - "127.0.0.0/8:$ORIGIN_TEST_PORT"
	EOF
	start_proxy rules.yaml --control-group "$GROUP_GID" &&
	stat -c "%a %u %g" "$CONTROL_SOCKET" >got &&
	echo "660 0 $GROUP_GID" >expect &&
	test_cmp expect got &&
	stat -c "%a %g" "$PROXY_DIR/state" >got &&
	echo "710 $GROUP_GID" >expect &&
	test_cmp expect got
'

test_expect_success 'a user outside the group cannot reach the socket at all' '
	test_must_fail ctl $OTHER_UID $OTHER_UID /v1/runs &&
	test_grep -i "permission denied|couldn.t connect" code
'

test_expect_success 'a member registers a run, owned by its uid; it sees its own runs only' '
	reg run-root &&
	control_curl /v1/runs -o /dev/null --data-binary @reg &&
	reg run-member &&
	ctl $MEMBER_UID $GROUP_GID /v1/runs --data-binary @reg &&
	echo 201 >expect &&
	test_cmp expect code &&
	ctl $MEMBER_UID $GROUP_GID /v1/runs &&
	echo 200 >expect &&
	test_cmp expect code &&
	test_grep "\"run\":\"run-member\",\"uid\":$MEMBER_UID," body &&
	test_grep -v "run-root" body &&
	control_curl /v1/runs >all &&
	test_grep "\"run\":\"run-root\",\"uid\":0," all &&
	test_grep "\"run\":\"run-member\"" all
'

test_expect_success 'a member can neither see nor end another user'"'"'s run; root can end the member'"'"'s' '
	ctl $MEMBER_UID $GROUP_GID /v1/runs/run-root &&
	echo 403 >expect &&
	test_cmp expect code &&
	test_grep "another user.s" body &&
	ctl $MEMBER_UID $GROUP_GID /v1/runs/run-root -X DELETE &&
	test_cmp expect code &&
	control_curl /v1/runs/run-root -o /dev/null -w "%{http_code}\n" >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	proxy_curl -o /dev/null -w "%{http_code}\n" \
		-x "http://run-root:$TOK@127.0.0.1:$PROXY_PORT" \
		"http://origin.test:$ORIGIN_TEST_PORT/" >code &&
	test_cmp expect code &&
	control_curl /v1/runs/run-member -X DELETE -o /dev/null -w "%{http_code}\n" >code &&
	test_cmp expect code &&
	ctl $MEMBER_UID $GROUP_GID /v1/runs &&
	test_grep -v "run-member" body
'

test_expect_success 'intutic runs as a member: its own runs only; another user'"'"'s cannot be ended (1)' '
	reg run-root-cli &&
	control_curl /v1/runs -o /dev/null --data-binary @reg &&
	reg run-member-cli &&
	ctl $MEMBER_UID $GROUP_GID /v1/runs --data-binary @reg &&
	as $MEMBER_UID $GROUP_GID "$INTUTIC" runs --state-dir "$PROXY_DIR/state" >out 2>err &&
	test_grep "^run-member-cli " out &&
	test_grep -v "run-root-cli" out &&
	test_expect_code 1 as $MEMBER_UID $GROUP_GID "$INTUTIC" runs end run-root-cli \
		--state-dir "$PROXY_DIR/state" 2>err &&
	test_grep "another user.s" err &&
	"$INTUTIC" runs --state-dir "$PROXY_DIR/state" >out &&
	test_grep "^run-root-cli " out &&
	test_grep "^run-member-cli +$MEMBER_UID " out &&
	"$INTUTIC" runs end run-member-cli --state-dir "$PROXY_DIR/state" &&
	"$INTUTIC" runs end run-root-cli --state-dir "$PROXY_DIR/state"
'

test_expect_success 'a member can change neither the policy nor the address of another user'"'"'s run; root can change the member'"'"'s; the member its own' '
	reg run-root-pol &&
	control_curl /v1/runs -o /dev/null --data-binary @reg &&
	reg run-member-pol &&
	ctl $MEMBER_UID $GROUP_GID /v1/runs --data-binary @reg &&
	printf "%s\n" "{\"generation\": 1, \"policy\": \"{\\\"version\\\": 1, \\\"deny\\\": [\\\"origin.test\\\"]}\"}" >put &&
	echo "{\"addr\": \"10.9.8.7\"}" >addr &&
	ctl $MEMBER_UID $GROUP_GID /v1/runs/run-root-pol/policy -X PUT --data-binary @put &&
	echo 403 >expect &&
	test_cmp expect code &&
	ctl $MEMBER_UID $GROUP_GID /v1/runs/run-root-pol/addr -X PUT --data-binary @addr &&
	test_cmp expect code &&
	test_expect_code 1 as $MEMBER_UID $GROUP_GID "$INTUTIC" runs deny run-root-pol \
		origin.test --state-dir "$PROXY_DIR/state" 2>err &&
	test_grep "another user.s" err &&
	control_curl /v1/runs/run-root-pol >one &&
	test_grep "\"generation\":1," one &&
	test_grep "\"addr\":null" one &&
	control_curl /v1/runs/run-member-pol/policy -X PUT --data-binary @put \
		-o /dev/null -w "%{http_code}\n" >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	as $MEMBER_UID $GROUP_GID "$INTUTIC" runs allow run-member-pol origin.test \
		--state-dir "$PROXY_DIR/state" >out &&
	test_grep "generation 3" out &&
	"$INTUTIC" runs end run-member-pol --state-dir "$PROXY_DIR/state" &&
	"$INTUTIC" runs end run-root-pol --state-dir "$PROXY_DIR/state"
'

test_expect_success 'a member may end its own run' '
	reg run-own &&
	ctl $MEMBER_UID $GROUP_GID /v1/runs --data-binary @reg &&
	ctl $MEMBER_UID $GROUP_GID /v1/runs/run-own -X DELETE &&
	echo 200 >expect &&
	test_cmp expect code &&
	control_curl /v1/runs >all &&
	test_grep -v "run-own" all
'

test_expect_success 'the cap per user: the 257th run of a member is refused (429), no run is pushed out' '
	i=0 &&
	while test $i -lt 256
	do
		reg "run-cap-$i" &&
		ctl $MEMBER_UID $GROUP_GID /v1/runs --data-binary @reg &&
		echo 201 >expect &&
		test_cmp expect code || return 1
		i=$((i + 1))
	done &&
	reg run-cap-256 &&
	ctl $MEMBER_UID $GROUP_GID /v1/runs --data-binary @reg &&
	echo 429 >expect &&
	test_cmp expect code &&
	test_grep "256 runs registered, the most one user may have" body &&
	proxy_curl -o /dev/null -w "%{http_code}\n" \
		-x "http://run-cap-0:$TOK@127.0.0.1:$PROXY_PORT" \
		"http://origin.test:$ORIGIN_TEST_PORT/" >code &&
	echo 200 >expect &&
	test_cmp expect code &&
	reg run-root-2 &&
	control_curl /v1/runs -o /dev/null -w "%{http_code}\n" --data-binary @reg >code &&
	echo 201 >expect &&
	test_cmp expect code
'

test_expect_success 'runs whose launcher is gone end: at the cap at once, and no run is pushed out' '
	i=0 &&
	while test $i -lt 256
	do
		control_curl "/v1/runs/run-cap-$i" -X DELETE -o /dev/null || return 1
		i=$((i + 1))
	done &&
	{ sleep 60 </dev/null >/dev/null 2>&1 & } &&
	launcher=$! &&
	test_when_finished "kill $launcher 2>/dev/null || :" &&
	i=0 &&
	while test $i -lt 256
	do
		reg "run-gone-$i" "$launcher" &&
		ctl $MEMBER_UID $GROUP_GID /v1/runs --data-binary @reg &&
		echo 201 >expect &&
		test_cmp expect code || return 1
		i=$((i + 1))
	done &&
	reg run-next "$$" &&
	ctl $MEMBER_UID $GROUP_GID /v1/runs --data-binary @reg &&
	echo 429 >expect &&
	test_cmp expect code &&
	kill $launcher &&
	wait $launcher
	ctl $MEMBER_UID $GROUP_GID /v1/runs --data-binary @reg &&
	echo 201 >expect &&
	test_cmp expect code &&
	ctl $MEMBER_UID $GROUP_GID /v1/runs &&
	test_grep "\"run\":\"run-next\"" body &&
	test_grep -v "run-gone-" body
'

test_expect_success 'a registration naming a pid that runs nothing is refused (400)' '
	{ sh -c "exit 0" & } &&
	gone=$! &&
	wait $gone &&
	reg run-dead "$gone" &&
	control_curl /v1/runs -o body -w "%{http_code}\n" --data-binary @reg >code &&
	echo 400 >expect &&
	test_cmp expect code &&
	test_grep "pid $gone is not a running process" body
'

test_done
