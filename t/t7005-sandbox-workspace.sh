#!/bin/sh
test_description='intutic exec --sandbox --sandbox-mount: a writable workspace is the agent'"'"'s to write, and what it makes there is the invoking user'"'"'s on the host'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
. "$top_srcdir/t/lib-sandbox.sh"
sandbox_isolate_netns
test_require_proxy curl

test_exec_env

test_expect_success 'setup: the image, an origin, the proxy on the bridge' '
	sandbox_setup &&
	start_origin origin &&
	write_hosts hosts origin.test=127.0.0.1 &&
	fill_rules proxy-http/forward.yaml rules.yaml PORTS="$ORIGIN_PORT" &&
	start_sandbox_proxy rules.yaml
'

test_expect_success 'as root: a root-owned workspace is written; the file is root'"'"'s on the host; the agent has no capability' '
	mkdir ws && chmod 755 ws &&
	sandbox_exec --sandbox-mount "$PWD/ws" -- sh -c "
		id -u; id -g; echo made >made && mkdir sub && echo WROTE;
		grep ^CapEff: /proc/self/status" &&
	test "$rc" = 0 &&
	test_grep "^WROTE\$" out &&
	test_grep "^CapEff:[[:space:]]*0*\$" out &&
	test "$(stat -c %u:%g ws/made ws/sub)" = "0:0
0:0"
'

test_expect_success 'a read-only workspace: the agent stays the image'"'"'s uid 1000' '
	sandbox_exec --sandbox-mount "$PWD/ws:ro" -- sh -c "id -u; touch x 2>/dev/null && echo WROTE; exit 0" &&
	test "$rc" = 0 &&
	test_grep "^1000\$" out &&
	test_grep -v WROTE out
'

test_expect_success 'an ordinary user'"'"'s uid and gid (docker, rootful, run by a user of its group): the agent is that user, its files too' '
	mkdir ws2 && chown 4242:4343 ws2 && chmod 700 ws2 &&
	sandbox_proxy_env &&
	(
		INTUTIC_SANDBOX_WORKDIR=$PWD/ws2 INTUTIC_SANDBOX_UID=4242 &&
		INTUTIC_SANDBOX_GID=4343 &&
		export INTUTIC_SANDBOX_WORKDIR INTUTIC_SANDBOX_UID \
			INTUTIC_SANDBOX_GID &&
		sandbox_run -v "$PWD/ws2:$PWD/ws2" -- sh -c "
			id -u; id -g; pwd; echo made >made && echo WROTE;
			grep ^CapEff: /proc/self/status; stat -c %u:%g \$HOME"
	) >out 2>err &&
	test_grep "^4242\$" out &&
	test_grep "^4343\$" out &&
	test_grep "^$PWD/ws2\$" out &&
	test_grep "^WROTE\$" out &&
	test_grep "^CapEff:[[:space:]]*0*\$" out &&
	test_grep "^4242:4343\$" out &&
	test "$(stat -c %u:%g ws2/made)" = 4242:4343
'

test_expect_success 'a uid that is not a number: nothing runs, 125 and the fix' '
	sandbox_proxy_env &&
	rc=0 &&
	(
		INTUTIC_SANDBOX_UID=root && export INTUTIC_SANDBOX_UID &&
		sandbox_run -- true
	) 2>err || rc=$? ;
	test "$rc" = 125 &&
	test_grep "not UID:GID in numbers; unset them or set numbers" err
'

# Rootless podman: an ordinary user (nobody, its home in the scratch
# directory) runs `intutic exec --sandbox` with podman.  Its subordinate
# ids come from /etc/subuid and /etc/subgid, which newuidmap reads: a
# mount namespace of the test's own puts files of its own over them, so
# the machine's are never changed.  The proxy lets nobody's group use its
# control socket (--control-group), as an operator would for its users.
test_lazy_prereq ROOTLESS '
	command -v newuidmap && command -v newgidmap && command -v slirp4netns &&
	command -v setpriv && getent passwd nobody && unshare -m true
'
test_have_prereq ROOTLESS || test_diag "no rootless podman here: it needs newuidmap and newgidmap (uidmap), slirp4netns, setpriv and a mount namespace"

# as_nobody CMD...: CMD as nobody, with subordinate ids of its own, HOME
# in the scratch directory, the test's CONTAINERS_CONF; at most
# SANDBOX_RUN_SECONDS.  /dev/net/tun (which slirp4netns opens as the
# user) is a node of mode TUN_MODE (default 0666, Debian's; this
# machine's own may be 0600), also in the mount namespace alone.
as_nobody () {
	mkdir -p "$TRASH_DIRECTORY/tundir" &&
	timeout -k 5 "$SANDBOX_RUN_SECONDS" unshare -m --propagation private sh -c '
		mount --bind "$1/subid" /etc/subuid &&
		mount --bind "$1/subid" /etc/subgid &&
		mount -t tmpfs -o mode=0755 tmpfs "$1/tundir" &&
		mknod -m "$2" "$1/tundir/tun" c 10 200 &&
		mount --bind "$1/tundir/tun" /dev/net/tun &&
		shift 2 && exec setpriv --reuid=65534 --regid=65534 --clear-groups \
			env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$PWD/nb" \
			CONTAINERS_CONF="$CONTAINERS_CONF" "$@"
	' sh "$TRASH_DIRECTORY" "${TUN_MODE:-0666}" "$@"
}

# Rootless podman keeps a pause process whose namespaces (the mount
# namespace with this tun among them) later podman commands join:
# `podman system migrate` ends it after each test.
test_expect_success ROOTLESS 'rootless: setup: the image in nobody'"'"'s storage, the proxy lets nobody'"'"'s group use its control socket' '
	mkdir -p nb/ws && chown -R 65534:65534 nb && chmod 755 nb &&
	printf "nobody:200000:65536\n" >subid &&
	stop_proxy &&
	start_sandbox_proxy rules.yaml --control-group 65534 &&
	sandbox_podman save -o img.tar "$SANDBOX_IMAGE" && chmod 644 img.tar &&
	test_atexit "as_nobody podman system reset --force >/dev/null 2>&1" &&
	as_nobody podman load -q -i "$PWD/img.tar" >load.out 2>&1 || { cat load.out; false; } &&
	as_nobody podman system migrate
'

test_expect_success ROOTLESS 'rootless, a /dev/net/tun the user may not open: one line naming the fix, exit 125, nothing ran' '
	test_when_finished "as_nobody podman system migrate" &&
	rc=0 &&
	TUN_MODE=0600 as_nobody "$INTUTIC" exec --state-dir "$PROXY_DIR/state" \
		--sandbox --sandbox-runtime podman --sandbox-image "$SANDBOX_IMAGE" \
		-- sh -c "echo RAN" >out 2>err || rc=$? ;
	test "$rc" = 125 &&
	test_grep -v "^RAN" out &&
	test_grep "^intutic exec: podman run failed: rootless networking \(slirp4netns\) cannot open /dev/net/tun as this user \(its mode is 0600; Debian.s is 0666\): .chmod 0666 /dev/net/tun. as root, or run intutic as root; nothing was run\$" err &&
	test "$(grep -c "^intutic exec:" err)" = 1
'

test_expect_success ROOTLESS 'an ordinary user with rootless podman: the agent is 1000 inside, writes the workspace, its files are the user'"'"'s; slirp4netns, the proxy on the host'"'"'s loopback, the run'"'"'s audit; the host'"'"'s loopback itself unreachable (nothing arrived at the origin)' '
	test_when_finished "as_nobody podman system migrate" &&
	audit_mark &&
	rc=0 &&
	as_nobody "$INTUTIC" exec --state-dir "$PROXY_DIR/state" --sandbox \
		--sandbox-runtime podman --sandbox-image "$SANDBOX_IMAGE" \
		--sandbox-mount "$PWD/nb/ws" -- sh -c "
		id -u; echo made >made && echo WROTE
		curl -sS --max-time 10 http://origin.test:$ORIGIN_PORT/
		curl -sS --noproxy \"*\" --max-time 5 -H \"Host: direct.test\" \
			http://10.0.2.2:$ORIGIN_PORT/ && echo DIRECT-REACHED
		echo run=\$INTUTIC_RUN" >out 2>err || rc=$? ;
	cat err &&
	test "$rc" = 0 &&
	test_grep "^1000\$" out &&
	test_grep "^WROTE\$" out &&
	test "$(stat -c %u:%g nb/ws/made)" = 65534:65534 &&
	test_grep "^hello from origin.test:$ORIGIN_PORT\$" out &&
	test_grep -v "DIRECT-REACHED" out &&
	test_grep -v "host=direct.test" "$ORIGIN_LOG" &&
	run=$(sed -n "s/^run=//p" out) &&
	audit_since 1 &&
	audit_expect 1 event=decision run="$run" host=origin.test decision=allow
'

test_done
