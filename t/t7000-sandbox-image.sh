#!/bin/sh
test_description='sandbox image: sandbox/Dockerfile built offline, its entrypoint run with real podman as the launcher runs it'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
. "$top_srcdir/t/lib-sandbox.sh"
sandbox_isolate_netns
test_require_proxy curl

# Every check runs as the agent would: the command is what the entrypoint
# exec()s once it has put the firewall up and dropped its privileges.

test_expect_success 'setup: image, resolver, origin, far host, proxy on the bridge' '
	sandbox_setup &&
	printf "%s\n" "far.test A $SANDBOX_FAR_ADDR" "origin.test A 127.0.0.1" >zone &&
	start_far_dns zone &&
	start_origin origin &&
	start_far_echo &&
	start_echo six --bind :: &&
	write_hosts hosts origin.test=127.0.0.1 &&
	printf "nameserver %s:53\n" "$SANDBOX_DNS_ADDR" >resolv.conf &&
	fill_rules proxy-http/forward.yaml rules.yaml PORTS="$ORIGIN_PORT" &&
	start_sandbox_proxy rules.yaml &&
	sandbox_proxy_env
'

test_expect_success 'the image: entrypoint, label, user sandbox (uid 1000)' '
	sandbox_podman image inspect --format "{{json .Config.Entrypoint}}" \
		"$SANDBOX_IMAGE" >entry &&
	test_grep -F "[\"/usr/local/bin/intutic-entrypoint\"]" entry &&
	sandbox_podman image inspect --format "{{index .Labels \"intutic.version\"}}" \
		"$SANDBOX_IMAGE" >label &&
	echo test >label.expect &&
	test_cmp label.expect label &&
	grep -q "nothing to install" sandbox-build.log
'

test_expect_success 'the agent is uid/gid 1000, no other group, in its home' '
	sandbox_run -- sh -c "id -u; id -g; id -G; id -un; echo \$HOME; pwd" >out &&
	printf "%s\n" 1000 1000 1000 sandbox /sandbox/home /sandbox/home >expect &&
	test_cmp expect out
'

test_expect_success 'the agent has no capability: every set empty, bounding included' '
	sandbox_run -- grep -E "^(Cap|NoNewPrivs)" /proc/self/status >out &&
	for set in CapInh CapPrm CapEff CapBnd CapAmb; do
		test_grep "^$set:[[:space:]]*0000000000000000\$" out || return 1
	done &&
	test_grep "^NoNewPrivs:[[:space:]]*1\$" out
'

test_expect_success 'capsh --print shows empty sets' '
	sandbox_run -- capsh --print >out &&
	test_grep "^Current: =\$" out &&
	test_grep "^Bounding set =\$" out &&
	test_grep "^Ambient set =\$" out &&
	test_grep "^uid=1000\(sandbox\) euid=1000\(sandbox\)\$" out &&
	test_grep "^groups=\$" out
'

test_expect_success 'the agent can neither list nor flush the firewall' '
	sandbox_run -- sh -c "
		if nft list ruleset; then echo LISTED; fi
		if nft flush ruleset; then echo FLUSHED; fi
		if nft delete table inet intutic; then echo DELETED; fi
		curl -sS --max-time 10 http://origin.test:$ORIGIN_PORT/
	" >out 2>err &&
	test_grep -v "LISTED|FLUSHED|DELETED" out &&
	test_grep "Operation not permitted" err &&
	test_grep "hello from origin.test:$ORIGIN_PORT" out
'

test_expect_success 'through the proxy, an allowed origin answers' '
	audit_mark &&
	sandbox_run -- curl -sS --max-time 10 "http://origin.test:$ORIGIN_PORT/" >out &&
	test_grep "^hello from origin.test:$ORIGIN_PORT\$" out &&
	audit_conn host=origin.test decision=allow -- status=200
'

test_expect_success 'through the proxy, a denied name gets 403' '
	audit_mark &&
	sandbox_run -- curl -sS --max-time 10 -o /dev/null -w "%{http_code}\n" \
		"http://denied.test:$ORIGIN_PORT/" >out &&
	echo 403 >expect &&
	test_cmp expect out &&
	audit_conn host=denied.test decision=deny
'

# A connection the firewall drops times out (a SYN that never leaves):
# "status 124" from timeout(1) in the container.  A host that answered
# would refuse it at once (nothing listens on the proxy's address on the
# origin's port) or accept it.
test_expect_success 'a direct connection to the far host times out (dropped); it sees nothing' '
	server_mark far &&
	sandbox_run -- sh -c "timeout 3 bash -c \"exec 3<>/dev/tcp/$SANDBOX_FAR_ADDR/$FAR_PORT && echo CONNECTED\"; echo status \$?" >out &&
	echo "status 124" >expect &&
	test_cmp expect out &&
	server_since far &&
	test_must_be_empty far.new
'

test_expect_success 'so is a direct connection to the proxy'"'"'s address on another port' '
	sandbox_run -- sh -c "timeout 3 bash -c \"exec 3<>/dev/tcp/$SANDBOX_GATEWAY/$ORIGIN_PORT && echo CONNECTED\"; echo status \$?" >out &&
	echo "status 124" >expect &&
	test_cmp expect out
'

test_expect_success 'control: with its network allowed in the table, the far host answers' '
	server_mark far &&
	(
		sandbox_ruleset --allow 10.99.0.0/24 --allow fd00::/8 &&
		sandbox_run -- bash -c "exec 3<>/dev/tcp/$SANDBOX_FAR_ADDR/$FAR_PORT &&
			echo ping >&3 && read -r line <&3 && echo got \$line"
	) >out &&
	echo "got ping" >expect &&
	test_cmp expect out &&
	wait_until 5 grep -q "in=5" "$FAR_LOG"
'

test_expect_success 'the root file system is read-only; /tmp and the home are writable' '
	sandbox_run -- sh -c "
		if touch /x 2>/dev/null; then echo ROOT-WRITABLE; fi
		if touch /usr/local/bin/x 2>/dev/null; then echo USR-WRITABLE; fi
		echo t >/tmp/t && cat /tmp/t &&
		echo h >\$HOME/h && cat \$HOME/h && ls -nd \$HOME
	" >out &&
	test_grep -v WRITABLE out &&
	test_grep "^t\$" out &&
	test_grep "^h\$" out &&
	test_grep "^drwx------ [0-9]+ 1000 1000 " out
'

test_expect_success 'a fork bomb stops at the pids limit' '
	sandbox_run -- sh -c "
		n=0
		while test \$n -lt $((SANDBOX_PIDS * 4)); do
			sleep 30 &
			n=\$((n + 1))
		done
		echo STARTED \$n
	" >out 2>err
	test_grep -v "^STARTED" out &&
	test_grep -i "fork" err
'

# The bomb runs for 5 s (a sleep forked before it), then the shell counts
# the processes with a glob (no fork needed) and exits: the container ends
# and its pid namespace with it.
test_expect_success 'a fork bomb proper is held at the pids limit, ends with the container; the host is fine' '
	start=$(date +%s) &&
	sandbox_run -- sh -c "
		sleep 5 &
		bash -c \":(){ :|:& };:\"
		wait \$!
		set -- /proc/[0-9]*
		echo procs \$#
	" >out 2>err &&
	procs=$(sed -n "s/^procs //p" out) &&
	test_diag "processes in the container: $procs (limit $SANDBOX_PIDS)" &&
	test "$procs" -le "$SANDBOX_PIDS" &&
	test "$procs" -gt $((SANDBOX_PIDS / 2)) &&
	test $(($(date +%s) - start)) -lt 30 &&
	proxy_serves "origin.test:$ORIGIN_PORT"
'

test_expect_success 'DNS: the configured resolver answers' '
	: >"$DNS_QUERY_LOG" &&
	(
		sandbox_ruleset --dns "$SANDBOX_DNS_ADDR:53" &&
		sandbox_run --dns "$SANDBOX_DNS_ADDR" -- getent ahostsv4 far.test
	) >out &&
	test_grep "^$SANDBOX_FAR_ADDR " out &&
	test_grep "^far.test A udp\$" "$DNS_QUERY_LOG"
'

test_expect_success 'UDP to anything but the resolver is dropped' '
	: >"$DNS_QUERY_LOG" &&
	(
		sandbox_ruleset --dns "$SANDBOX_DNS_ADDR:53" &&
		sandbox_run -- bash -c "
			if echo x >/dev/udp/$SANDBOX_FAR_ADDR/53; then echo SENT1; fi
			if echo x >/dev/udp/$SANDBOX_DNS_ADDR/5353; then echo SENT2; fi
			if echo x >/dev/udp/$SANDBOX_GATEWAY/53; then echo SENT3; fi
			echo done
		"
	) >out 2>err &&
	test_grep -v SENT out &&
	test_grep "^done\$" out &&
	test_line_count = 3 err &&
	test_grep "Operation not permitted" err
'

test_expect_success 'without a resolver in the table no DNS at all, not even to that resolver' '
	: >"$DNS_QUERY_LOG" &&
	test_must_fail sandbox_run --dns "$SANDBOX_DNS_ADDR" -- getent ahostsv4 far.test >out &&
	test_must_be_empty out &&
	test_must_be_empty "$DNS_QUERY_LOG"
'

# The container's own link-local address must have passed DAD (no
# "tentative" flag, 0x40, in /proc/net/if_inet6) before it can connect:
# wait for that first.  Then TRIES attempts of 3 s each; the status of the
# last one.
cat >v6-connect.sh <<'EOF6'
n=0
while test $n -lt 50; do
	grep -qE "^fe80[0-9a-f]* [0-9a-f]+ [0-9a-f]+ 20 (00|80) +eth0$" /proc/net/if_inet6 && break
	sleep 0.2
	n=$((n + 1))
done
n=0
while test $n -lt "$TRIES"; do
	timeout 3 bash -c 'exec 3<>"/dev/tcp/$0%eth0/$1" && echo ping >&3 && read -r line <&3 && echo "got $line"' "$ADDR" "$PORT"
	status=$?
	test $status = 0 && break
	n=$((n + 1))
done
echo "status $status"
EOF6

test_expect_success 'IPv6 egress is dropped (the bridge'"'"'s link-local address)' '
	server_mark six &&
	gw6=$(sandbox_gateway6) &&
	test -n "$gw6" &&
	(
		# an IPv6 CIDR allowed, which is not this one: neighbour
		# discovery passes, the connection must not
		sandbox_ruleset --allow fd00::/8 &&
		sandbox_run -- bash -c "TRIES=1 ADDR=$gw6 PORT=$SIX_PORT; $(cat "$TRASH_DIRECTORY/v6-connect.sh")"
	) >out &&
	echo "status 124" >expect &&
	test_cmp expect out &&
	server_since six &&
	test_must_be_empty six.new
'

test_expect_success 'control: with fe80::/10 allowed, the same IPv6 connection works' '
	gw6=$(sandbox_gateway6) &&
	(
		sandbox_ruleset --allow fe80::/10 &&
		sandbox_run -- bash -c "TRIES=5 ADDR=$gw6 PORT=$SIX_PORT; $(cat "$TRASH_DIRECTORY/v6-connect.sh")"
	) >out &&
	printf "%s\n" "got ping" "status 0" >expect &&
	test_cmp expect out
'

# Rulesets the entrypoint must refuse, each from the one the launcher makes:
# none at all, TEXT instead, edited by a sed SCRIPT, or with TEXT added.
cat >bad-rulesets <<'EOF'
none
text garbage {
sed s/policy drop/policy accept/
sed s/priority filter;/priority 10;/
sed s/hook output/hook postrouting/
sed s/\(tcp dport [0-9]*\) accept/\1 counter accept/
sed s/oif "lo" accept/oif "lo" drop/
sed s/oif "lo" accept/meta l4proto tcp accept/
add table inet other {\n\tchain c {\n\t\ttype filter hook output priority 10; policy accept;\n\t}\n}
add table inet intutic {\n\tchain input {\n\t\ttype filter hook input priority 0; policy accept;\n\t}\n}
add table inet intutic {\n\tset s {\n\t\ttype ipv4_addr\n\t}\n}
EOF

test_expect_success 'a ruleset that is not the launcher'"'"'s: exit 125, a message, nothing run' '
	good=$INTUTIC_SANDBOX_RULESET &&
	while IFS= read -r bad
	do
		(
			case $bad in
			none)	unset INTUTIC_SANDBOX_RULESET ;;
			text\ *)
				INTUTIC_SANDBOX_RULESET=${bad#text } ;;
			sed\ *)
				INTUTIC_SANDBOX_RULESET=$(printf "%s\n" "$good" |
				    sed "${bad#sed }") &&
				test "$INTUTIC_SANDBOX_RULESET" != "$good" ||
				{ echo "the edit changed nothing" >&2; exit 1; } ;;
			add\ *)
				INTUTIC_SANDBOX_RULESET=$(printf "%s\n%b\n" "$good" "${bad#add }") ;;
			esac &&
			test_expect_code 125 sandbox_run -- sh -c "echo RAN"
		) >out 2>err || { echo "for: $bad" >&2; cat err >&2; return 1; }
		test_must_be_empty out || return 1
		test_grep "^intutic-entrypoint: " err || return 1
		test_diag "$bad: $(cat err)"
	done <bad-rulesets
'

test_expect_success 'without CAP_NET_ADMIN the entrypoint refuses: 125, nothing run' '
	(
		SANDBOX_ENVELOPE=$(printf "%s\n" "$SANDBOX_ENVELOPE" | sed "s/--cap-add=NET_ADMIN//") &&
		test_expect_code 125 sandbox_run -- sh -c "echo RAN"
	) >out 2>err &&
	test_must_be_empty out &&
	test_grep "cannot install the egress firewall" err
'

test_expect_success 'no command: exit 2 and the usage' '
	test_expect_code 2 sandbox_run -- >out 2>err &&
	test_grep "^usage: intutic-entrypoint COMMAND" err
'

test_expect_success 'the exit status is the command'"'"'s' '
	test_expect_code 7 sandbox_run -- sh -c "exit 7"
'

test_expect_success 'nothing is left: no container of this script, none running' '
	sandbox_podman ps -a -q --filter "label=intutic.test=$INTUTIC_TEST_NETNS" >left &&
	test_must_be_empty left
'

test_done
