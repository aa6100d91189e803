#!/bin/sh
test_description='the sandbox'"'"'s kernel surface, with real podman: intutic'"'"'s seccomp profile leaves the agent no socket family but unix, inet, inet6 and netlink, no namespace of its own, no key ring or io_uring, where podman'"'"'s default profile allows them; the launcher refuses to run without the profile; the image'"'"'s resolv.conf is replaced by intutic'"'"'s'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
. "$top_srcdir/t/lib-sandbox.sh"
sandbox_isolate_netns
test_require_proxy curl
test_exec_env

# The calls are tried by t/data/sandbox/probe.pl, as the agent (uid 1000,
# no capability, after the entrypoint), mounted read-only into the
# container; the same probe under podman's own default profile shows what
# the kernel answers without intutic's, so that each line the profile
# decides is seen to change.
PODMAN_DEFAULT_SECCOMP=/usr/share/containers/seccomp.json
RESOLV_IMAGE=localhost/intutic/sandbox:test-$test_name_-resolv
# an address no test sends to (TEST-NET-1): only read from a file
IMAGE_RESOLVER=192.0.2.53

test_lazy_prereq DEFAULT_SECCOMP 'test -r "$PODMAN_DEFAULT_SECCOMP"'
# the kernel has vsock (the control expects the socket to open)
test_lazy_prereq HOST_VSOCK 'python3 -c "import socket; socket.socket(40, socket.SOCK_STREAM).close()"'

test_expect_success 'setup: the image, an origin, the proxy on the bridge, the probe' '
	sandbox_setup &&
	start_origin origin &&
	write_hosts hosts origin.test=127.0.0.1 &&
	fill_rules proxy-http/forward.yaml rules.yaml PORTS="$ORIGIN_PORT" &&
	start_sandbox_proxy rules.yaml &&
	mkdir probe &&
	cp "$TEST_DATA/sandbox/probe.pl" probe/
'

test_expect_success 'the profile: x86_64 and aarch64 only, no 32-bit sub-architecture' '
	python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))
print(p[\"defaultAction\"], p[\"defaultErrnoRet\"])
for a in p[\"archMap\"]:
    print(a[\"architecture\"], len(a[\"subArchitectures\"]))
" "$SANDBOX_SECCOMP" >out &&
	printf "%s\n" "SCMP_ACT_ERRNO 38" "SCMP_ARCH_X86_64 0" \
		"SCMP_ARCH_AARCH64 0" >expect &&
	test_cmp expect out
'

cat >expect.sandbox <<EOF
socket-vsock errno=97
socket-packet errno=97
socket-key errno=97
socket-unix ok
socket-inet ok
socket-inet6 ok
socket-netlink ok
socketpair-unix ok
socketpair-inet errno=97
clone-plain ok
clone-newuser errno=1
clone-newuser-newnet errno=1
clone3 errno=38
setns errno=1
keyctl errno=1
io_uring_setup errno=1
EOF

test_expect_success 'in the sandbox: only the allowed socket families, no namespace, no key ring, no io_uring' '
	audit_mark &&
	sandbox_exec --sandbox-mount "$PWD/probe:ro" -- sh -c "
		grep -E \"^(Seccomp|NoNewPrivs):\" /proc/self/status
		perl probe.pl
		curl -sS --max-time 10 http://origin.test:$ORIGIN_PORT/" &&
	test "$rc" = 0 &&
	test_grep "^Seccomp:[[:space:]]*2\$" out &&
	grep -E "^[a-z0-9_-]+ (ok|errno=[0-9]+)\$" out >probe.out &&
	test_cmp expect.sandbox probe.out &&
	test_grep "^hello from origin.test:$ORIGIN_PORT\$" out &&
	audit_since 1 &&
	audit_expect 1 event=decision host=origin.test decision=allow
'

test_expect_success DEFAULT_SECCOMP 'control: under podman'"'"'s default profile the kernel answers those calls itself' '
	sandbox_proxy_env &&
	# (the last --security-opt seccomp= is the one podman takes)
	sandbox_run -v "$PWD/probe:/probe:ro" \
		--security-opt "seccomp=$PODMAN_DEFAULT_SECCOMP" -- \
		perl /probe/probe.pl >out &&
	# the kernel: a namespace of its own, the key ring, capability and
	# argument errors; never the profile'"'"'s answers
	test_grep "^clone-newuser ok\$" out &&
	test_grep "^clone-newuser-newnet ok\$" out &&
	test_grep "^keyctl ok\$" out &&
	test_grep "^setns errno=9\$" out &&
	test_grep "^clone3 errno=22\$" out &&
	test_grep "^io_uring_setup errno=38\$" out &&
	test_grep "^socket-packet errno=1\$" out &&
	test_grep "^socketpair-inet errno=95\$" out &&
	test_grep "^socket-unix ok\$" out &&
	if test_have_prereq HOST_VSOCK
	then
		test_grep "^socket-vsock ok\$" out
	fi
'

test_expect_success 'in the sandbox: unshare(1) can make no user or network namespace, nft none of its own' '
	sandbox_exec -- sh -c "
		unshare -U true && echo USERNS
		unshare -r -n nft list ruleset && echo OWN-NFT
		exit 0" &&
	test "$rc" = 0 &&
	test_grep -v "USERNS|OWN-NFT" out &&
	test_grep "unshare failed: Operation not permitted" err
'

test_expect_success DEFAULT_SECCOMP 'control: under podman'"'"'s default profile the agent makes both, and lists its own ruleset' '
	sandbox_proxy_env &&
	sandbox_run --security-opt "seccomp=$PODMAN_DEFAULT_SECCOMP" -- sh -c "
		unshare -U true && echo USERNS
		unshare -r -n nft list ruleset && echo OWN-NFT
		exit 0" >out &&
	test_grep "^USERNS\$" out &&
	test_grep "^OWN-NFT\$" out
'

test_expect_success 'no seccomp profile: 125, the path and the fix, nothing run' '
	mkdir -p no-profile &&
	cp "$top_srcdir/sandbox/resolv.conf" no-profile/ &&
	INTUTIC_SANDBOX_DIR=$PWD/no-profile &&
	export INTUTIC_SANDBOX_DIR &&
	test_when_finished "unset INTUTIC_SANDBOX_DIR" &&
	sandbox_exec -- touch /tmp/started &&
	test "$rc" = 125 &&
	test_grep -F "no seccomp.json in INTUTIC_SANDBOX_DIR '\''$PWD/no-profile'\''" err &&
	test_grep "point it at a directory that holds the sandbox.s files" err &&
	sandbox_podman ps -a --filter label=intutic.run --format "{{.Names}}" >ps &&
	test_must_be_empty ps
'

test_expect_success 'setup: an image whose own resolv.conf names a resolver' '
	test_atexit "sandbox_podman rmi -f $RESOLV_IMAGE >/dev/null 2>&1" &&
	mkdir -p resolv-image &&
	echo "nameserver $IMAGE_RESOLVER" >resolv-image/resolv.conf &&
	printf "%s\n" "FROM $SANDBOX_IMAGE" "COPY resolv.conf /etc/resolv.conf" \
		>resolv-image/Containerfile &&
	timeout -k 10 "$SANDBOX_BUILD_SECONDS" podman build --pull=never \
		--label "intutic.test=$INTUTIC_TEST_NETNS" -t "$RESOLV_IMAGE" \
		resolv-image >resolv-build.log 2>&1 &&
	sandbox_proxy_env &&
	SANDBOX_RUN_IMAGE=$RESOLV_IMAGE &&
	test_when_finished "unset SANDBOX_RUN_IMAGE" &&
	sandbox_run -- cat /etc/resolv.conf >out &&
	test_grep "^nameserver $IMAGE_RESOLVER\$" out
'

test_expect_success 'in the sandbox: /etc/resolv.conf names the bridge'"'"'s gateway alone (the table sends it to the DNS filter), not the image'"'"'s resolver; read-only' '
	sandbox_exec --sandbox-image "$RESOLV_IMAGE" -- sh -c "
		cat /etc/resolv.conf
		echo nameserver 10.0.0.1 >>/etc/resolv.conf && echo WROTE
		exit 0" &&
	test "$rc" = 0 &&
	test_grep -v "WROTE" out &&
	grep "^nameserver" out >resolv.out &&
	echo "nameserver $SANDBOX_GATEWAY" >expect &&
	test_cmp expect resolv.out &&
	test_grep -v "$IMAGE_RESOLVER" out
'

test_done
