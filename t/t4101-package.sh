#!/bin/sh
test_description='the Debian package: built by scripts/package, lintian, installed into a fresh Debian root, its user, files, rules, the proxy as its unit runs it, enforce, and purge'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"

# The root: `debootstrap --variant=minbase bookworm` with what the package
# depends on (and systemd, for systemd-tmpfiles and a boot), kept as a
# tarball in $PKG_TEST_CACHE (default /var/cache/intutic-tests), named after
# its package list, made once before the script enters its namespace (a
# download of Debian packages from the mirror apt uses, as apt-get does;
# nothing else leaves the machine).  Everything after runs in the script's
# network namespace, whose only interface is lo; in the root, by chroot.

# --- limits -----------------------------------------------------------------
PKG_DEBOOTSTRAP_SECONDS=900	# the base root (a download)
PKG_BUILD_SECONDS=600		# scripts/package: configure and compile
PKG_LINTIAN_SECONDS=120
PKG_DPKG_SECONDS=120		# dpkg -i, dpkg --purge
PKG_NOTIFY_SECONDS=15		# the proxy's READY=1
PKG_NOTIFY_WAIT_SECONDS=60	# the notify listener, for READY=1 then STOPPING=1
PKG_BOOT_SECONDS=60		# systemd in systemd-nspawn, to its checks' end
PKG_SCORE_MAX=2.0		# systemd-analyze security, the proxy's unit

PKG_SUITE=bookworm
PKG_BASE_PACKAGES=adduser,logrotate,libcurl4,libevent-2.1-7,libevent-openssl-2.1-7,libevent-pthreads-2.1-7,libmnl0,libnetfilter-conntrack3,libnftnl11,libssl3,libyaml-0-2,systemd,systemd-sysv,curl,iproute2,nftables
: "${PKG_TEST_CACHE:=/var/cache/intutic-tests}"
pkg_key=$PKG_SUITE-$(printf '%s' "$PKG_BASE_PACKAGES" | cksum | awk '{ print $1 }')
pkg_tarball=$PKG_TEST_CACHE/pkg-base-$pkg_key.tar.gz

test_require_root "debootstrap, chroot, dpkg in a root of its own, nftables"
for tool in dpkg-buildpackage dh debootstrap chroot flock timeout tar ip curl python3 setpriv; do
	command -v "$tool" >/dev/null 2>&1 ||
		test_skip_all "needs $tool (scripts/bootstrap installs dpkg-dev, debhelper, debootstrap)"
done


# Outside the namespace: the base root, once.
if test -z "${TEST_NETNS:-}" && ! test -s "$pkg_tarball"; then
	printf '%s\n' "# building the base root with debootstrap (once; cached in $PKG_TEST_CACHE)"
	mkdir -p "$PKG_TEST_CACHE" &&
	# shellcheck disable=SC2016 # expanded by the inner shell
	timeout -k 10 "$PKG_DEBOOTSTRAP_SECONDS" flock "$PKG_TEST_CACHE/.lock" sh -c '
		set -e
		test -s "$1" && exit 0
		dir=$2/pkgroot.$$
		rm -rf "$dir"
		trap "rm -rf \"$dir\" \"$1.tmp\"" EXIT
		debootstrap --variant=minbase --include="$5" "$3" "$dir" "$4" \
		    >"$2/debootstrap-pkg.log" 2>&1
		rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
		tar -C "$dir" --numeric-owner -czf "$1.tmp" .
		mv "$1.tmp" "$1"
	' sh "$pkg_tarball" "$PKG_TEST_CACHE" "$PKG_SUITE" "$("$top_srcdir/sandbox/mkbase" --print-mirror)" \
	    "$PKG_BASE_PACKAGES" </dev/null >/dev/null 2>&1 ||
		test_skip_all "cannot make the base root: debootstrap of $PKG_SUITE failed (see $PKG_TEST_CACHE/debootstrap-pkg.log)"
fi
# nsenter --net=, not ip netns exec, whose fresh /sys hides the cgroup
# file systems systemd-nspawn needs.
test_netns_via_=nsenter
test_isolate_netns

ROOT=$TRASH_DIRECTORY/root
DEB_DIR=$TRASH_DIRECTORY/deb
VERSION=$(sed -n 's/^AC_INIT(\[intutic\], \[\([^]]*\)\].*/\1/p' "$top_srcdir/configure.ac")
ARCH=$(dpkg --print-architecture)
DEB=$DEB_DIR/intutic_${VERSION}_$ARCH.deb
PROXY_UNIT=$ROOT/lib/systemd/system/intutic-proxy.service
ENFORCE_UNIT=$ROOT/lib/systemd/system/intutic-enforce.service
PATH_IN=/usr/sbin:/usr/bin:/sbin:/bin

# in_root CMD...: CMD in the root, as root, with a clean environment.
in_root () {
	chroot "$ROOT" /usr/bin/env -i PATH="$PATH_IN" HOME=/root LC_ALL=C "$@"
}

# pkg_unmount: the file systems the test mounted in the root.
pkg_unmount () {
	for m in "$ROOT/proc" "$ROOT/dev/pts"; do
		mountpoint -q "$m" 2>/dev/null && umount -l "$m"
	done
	return 0
}

# unit_exec UNIT KEY: the command line of UNIT's KEY= (ExecStart, ...).
unit_exec () {
	sed -n "s/^$2=//p" "$1" | head -n 1
}

# listing: every path in the root but /proc, /dev and dpkg's own records,
# for what purge must leave as it found it.
listing () {
	(cd "$ROOT" && find . -xdev \( -path ./proc -o -path ./dev -o \
	    -path ./var/lib/dpkg -o -path ./var/log/dpkg.log -o \
	    -path ./var/cache/debconf -o -path ./var/log/apt \) -prune -o -print) |
	    sort
}

PROXY_RUN_PID=
LISTENER_PID=
stop_unit_proxy () {
	test -z "$LISTENER_PID" || test_stop_child_ "$LISTENER_PID" 5
	if test -n "$PROXY_RUN_PID"; then
		test_stop_child_ "$PROXY_RUN_PID" 15
		PROXY_RUN_PID=
	fi
	return 0
}
test_atexit 'stop_unit_proxy; in_root /usr/bin/intutic enforce off >/dev/null 2>&1; pkg_unmount'

test_expect_success 'scripts/package builds intutic_VERSION_ARCH.deb (nocheck, no debug package)' '
	start=$(date +%s) &&
	timeout -k 10 "$PKG_BUILD_SECONDS" "$top_srcdir/scripts/package" \
	    --out "$DEB_DIR" --jobs "$(nproc)" >out 2>err &&
	test_path_is_file "$DEB" &&
	test_path_is_file "$DEB_DIR/intutic_${VERSION}_$ARCH.changes" &&
	test_diag "built in $(($(date +%s) - start)) s" &&
	ls "$DEB_DIR" >files &&
	test_grep -v dbgsym files &&
	dpkg-deb -f "$DEB" Package Version Architecture Depends >fields &&
	test_grep "^Package: intutic$" fields &&
	test_grep "^Version: $VERSION$" fields &&
	test_grep "^Depends: .*adduser" fields
'

test_lazy_prereq LINTIAN 'command -v lintian'
test_expect_success LINTIAN 'lintian: no error and no warning' '
	timeout -k 10 "$PKG_LINTIAN_SECONDS" lintian --fail-on error,warning \
	    "$DEB_DIR/intutic_${VERSION}_$ARCH.changes" >out 2>err ||
		{ cat out >&2; false; } &&
	test_grep -v "^[EW]: " out
'

test_expect_success 'the package holds its files under /usr, /etc and /lib/systemd, with their modes' '
	dpkg-deb -c "$DEB" | awk "{ print \$1, \$2, \$6 }" >contents &&
	for f in \
	    "-rwxr-xr-x root/root ./usr/bin/intutic" \
	    "-rwxr-xr-x root/root ./usr/libexec/intutic/intutic-proxy" \
	    "-rw-r--r-- root/root ./usr/share/intutic/rules/default.yaml" \
	    "-rw-r--r-- root/root ./usr/share/intutic/rules/agents.yaml" \
	    "-rw-r--r-- root/root ./usr/share/intutic/rules/providers.yaml" \
	    "-rw-r--r-- root/root ./etc/intutic/rules.yaml" \
	    "-rw-r--r-- root/root ./etc/default/intutic" \
	    "-rw-r--r-- root/root ./etc/logrotate.d/intutic" \
	    "-rw-r--r-- root/root ./usr/lib/tmpfiles.d/intutic.conf" \
	    "-rw-r--r-- root/root ./lib/systemd/system/intutic-proxy.service" \
	    "-rw-r--r-- root/root ./lib/systemd/system/intutic-enforce.service" \
	    "-rw-r--r-- root/root ./usr/share/man/man1/intutic-start.1.gz" \
	    "-rw-r--r-- root/root ./usr/share/man/man5/intutic-rules.5.gz" \
	    "-rw-r--r-- root/root ./usr/share/man/man8/intutic-proxy.8.gz" \
	    "-rwxr-xr-x root/root ./usr/share/intutic/sandbox/entrypoint.sh" \
	    "-rwxr-xr-x root/root ./usr/share/intutic/sandbox/mkbase" \
	    "-rwxr-xr-x root/root ./usr/share/intutic/sandbox/connect.sh"
	do
		grep -q -x -F -e "$f" contents ||
			{ echo "not in the package: $f" >&2; return 1; }
	done &&
	test_grep -v " \./usr/local" contents &&
	dpkg-deb -e "$DEB" control &&
	cat >expect <<-\EOF &&
	/etc/default/intutic
	/etc/intutic/rules.yaml
	/etc/logrotate.d/intutic
	EOF
	sort control/conffiles >actual &&
	test_cmp expect actual
'

test_expect_success 'setup: the base root, unpacked, with /proc' '
	cat >"$TRASH_DIRECTORY/notify.py" <<-\EOF &&
	# notify.py SOCKET FILE SECONDS: systemd'"'"'s side of sd_notify: the
	# datagrams to the abstract SOCKET (@NAME), one a line in FILE, until
	# STOPPING=1 or SECONDS.
	import socket, sys
	s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
	s.bind("\0" + sys.argv[1][1:])
	open(sys.argv[2], "w").close()
	s.settimeout(float(sys.argv[3]))
	with open(sys.argv[2], "a") as out:
	    try:
	        while True:
	            m = s.recv(4096).decode()
	            out.write(m + "\n")
	            out.flush()
	            if "STOPPING=1" in m.split("\n"):
	                break
	    except socket.timeout:
	        sys.exit(1)
	EOF
	mkdir "$ROOT" &&
	tar -C "$ROOT" --numeric-owner -xzf "$pkg_tarball" &&
	mount -t proc proc "$ROOT/proc" &&
	: >"$ROOT/etc/intutic-test-resolv.conf" &&
	: >"$ROOT/etc/resolv.conf" &&
	printf "127.0.0.1 localhost\n::1 localhost\n" >"$ROOT/etc/hosts" &&
	listing >"$TRASH_DIRECTORY/before"
'

test_expect_success 'dpkg -i installs it; the system user and group intutic exist' '
	cp "$DEB" "$ROOT/tmp/intutic.deb" &&
	timeout -k 10 "$PKG_DPKG_SECONDS" chroot "$ROOT" /usr/bin/env -i \
	    PATH="$PATH_IN" DEBIAN_FRONTEND=noninteractive \
	    dpkg -i /tmp/intutic.deb >out 2>err &&
	rm "$ROOT/tmp/intutic.deb" &&
	in_root getent passwd intutic >pw &&
	IFS=: read -r name x uid gid gecos home shell <pw &&
	test "$uid" -gt 0 && test "$uid" -lt 1000 &&
	test "$home" = /nonexistent && test "$shell" = /usr/sbin/nologin &&
	in_root getent group intutic >gr &&
	IFS=: read -r gname x ggid members <gr &&
	test "$ggid" = "$gid" &&
	test_path_is_missing "$ROOT/nonexistent"
'

test_expect_success 'the directories tmpfiles made for the user, and the installed modes' '
	uid=$(in_root id -u intutic) && gid=$(in_root id -g intutic) &&
	stat -c "%a %u:%g %n" "$ROOT/run/intutic" "$ROOT/var/log/intutic" \
	    "$ROOT/usr/bin/intutic" "$ROOT/usr/libexec/intutic/intutic-proxy" \
	    "$ROOT/etc/intutic/rules.yaml" >modes &&
	sed "s|$ROOT||" modes >actual &&
	cat >expect <<-EOF &&
	755 $uid:$gid /run/intutic
	750 $uid:$gid /var/log/intutic
	755 0:0 /usr/bin/intutic
	755 0:0 /usr/libexec/intutic/intutic-proxy
	644 0:0 /etc/intutic/rules.yaml
	EOF
	test_cmp expect actual
'

test_expect_success 'intutic rules check: the conffile, which includes the shipped entries' '
	in_root /usr/bin/intutic rules check >out 2>err &&
	test_grep "^/etc/intutic/rules\.yaml: ok \(43 entries, 8 providers, mode enforce\)$" out &&
	test_expect_code 1 in_root /usr/bin/intutic rules test /etc/intutic/rules.yaml gist.github.com >out &&
	test_grep "^rule:     /usr/share/intutic/rules/agents\.yaml:[0-9]+ \(deny gist\.github\.com\)$" out
'

test_expect_success 'systemd-analyze security --offline: the proxy unit scores at most 2.0' '
	if ! systemd-analyze security --help 2>/dev/null | grep -q -e "--offline"; then
		test_diag "systemd-analyze has no --offline here: not scored"
		return 0
	fi &&
	systemd-analyze security --offline=true "$PROXY_UNIT" >out 2>&1 &&
	score=$(sed -n "s/^.*Overall exposure level for intutic-proxy\.service: \([0-9.]*\).*/\1/p" out) &&
	test -n "$score" &&
	test_diag "intutic-proxy.service: exposure $score" &&
	awk -v s="$score" -v m="$PKG_SCORE_MAX" "BEGIN { exit !(s <= m) }" &&
	systemd-analyze security --offline=true "$ENFORCE_UNIT" >out 2>&1 &&
	score=$(sed -n "s/^.*Overall exposure level for intutic-enforce\.service: \([0-9.]*\).*/\1/p" out) &&
	test_diag "intutic-enforce.service: exposure $score"
'

test_expect_success 'the units: notify, the user, reload by intutic reload, the hardening asked for' '
	for k in Type=notify User=intutic Group=intutic \
	    "ExecReload=/usr/bin/intutic reload --state-dir /run/intutic" \
	    NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes \
	    PrivateTmp=yes PrivateDevices=yes ProtectKernelTunables=yes \
	    ProtectKernelModules=yes ProtectKernelLogs=yes \
	    RestrictNamespaces=yes LockPersonality=yes \
	    MemoryDenyWriteExecute=yes SystemCallFilter=@system-service \
	    CapabilityBoundingSet=
	do
		grep -q -x -F -e "$k" "$PROXY_UNIT" ||
			{ echo "not in intutic-proxy.service: $k" >&2; return 1; }
	done &&
	test_grep "^RestrictAddressFamilies=" "$PROXY_UNIT" &&
	grep -q -x -F "CapabilityBoundingSet=CAP_NET_ADMIN" "$ENFORCE_UNIT" &&
	grep -q -x -F "After=intutic-proxy.service" "$ENFORCE_UNIT"
'

test_expect_success 'the proxy as its unit runs it: user intutic, READY=1 to NOTIFY_SOCKET, /healthz, state and audit files' '
	uid=$(in_root id -u intutic) && gid=$(in_root id -g intutic) &&
	sock=@intutic-t4101-$$ &&
	{ python3 "$TRASH_DIRECTORY/notify.py" "$sock" notify.txt "$PKG_NOTIFY_WAIT_SECONDS" & } &&
	listener=$! &&
	i=0 && while test $i -lt 50 && ! test -f notify.txt; do sleep 0.1; i=$((i + 1)); done &&
	test -f notify.txt &&
	exec_start=$(unit_exec "$PROXY_UNIT" ExecStart) &&
	INTUTIC_START_OPTS="--resolv-conf /etc/intutic-test-resolv.conf" &&
	cmd=$(printf "%s\n" "$exec_start" | sed "s|\\\$INTUTIC_START_OPTS|$INTUTIC_START_OPTS|") &&
	test_diag "as the unit: $cmd" &&
	{ chroot --userspec="$uid:$gid" --groups="$gid" "$ROOT" /usr/bin/env -i \
	    PATH="$PATH_IN" HOME=/nonexistent NOTIFY_SOCKET="$sock" \
	    $cmd >"$TRASH_DIRECTORY/unit-proxy.log" 2>&1 & } &&
	PROXY_RUN_PID=$! &&
	LISTENER_PID=$listener &&
	i=0 && while test $i -lt $((PKG_NOTIFY_SECONDS * 10)) && ! grep -q "^READY=1$" notify.txt; do sleep 0.1; i=$((i + 1)); done &&
	test_grep "^READY=1$" notify.txt &&
	test_grep "^STATUS=listening on port 8877$" notify.txt &&
	grep -E "^(Uid|Gid):" /proc/$PROXY_RUN_PID/status >ids &&
	test_grep "^Uid:	$uid	$uid	$uid	$uid$" ids &&
	curl -sS --max-time 5 --noproxy "*" http://127.0.0.1:8877/healthz >health &&
	test_grep "ok" health &&
	stat -c "%u %a %n" "$ROOT/run/intutic/proxy.json" "$ROOT/var/log/intutic/audit.jsonl" >files &&
	sed "s|$ROOT||" files >actual &&
	printf "%s\n" "$uid 644 /run/intutic/proxy.json" \
	    "$uid 640 /var/log/intutic/audit.jsonl" >expect &&
	test_cmp expect actual &&
	in_root /usr/bin/intutic status >status &&
	test_grep "^state: +running" status &&
	test_grep "^pid: +$PROXY_RUN_PID$" status
'

test_expect_success 'reload as the unit does (ExecReload, as intutic): the rules checked, then applied' '
	uid=$(in_root id -u intutic) && gid=$(in_root id -g intutic) &&
	cmd=$(unit_exec "$PROXY_UNIT" ExecReload) &&
	chroot --userspec="$uid:$gid" --groups="$gid" "$ROOT" /usr/bin/env -i \
	    PATH="$PATH_IN" HOME=/nonexistent $cmd >out 2>err &&
	test_grep "reload" out
'

test_expect_success 'enforce on, as its unit runs it, is accepted for the proxy of user intutic; off removes it' '
	cmd=$(unit_exec "$ENFORCE_UNIT" ExecStart) &&
	in_root $cmd >out 2>err &&
	test_grep "only intutic .*may open connections" out &&
	in_root /usr/bin/intutic enforce status >status &&
	test_grep -i "on" status &&
	cmd=$(unit_exec "$ENFORCE_UNIT" ExecStop) &&
	in_root $cmd >out 2>err &&
	test_expect_code 3 in_root /usr/bin/intutic enforce status >status
'

test_expect_success 'logrotate takes the package'"'"'s configuration' '
	in_root logrotate -d /etc/logrotate.d/intutic >out 2>&1 &&
	test_grep "/var/log/intutic/\*\.jsonl" out
'

test_expect_success 'the proxy stops on SIGTERM (exit 0, STOPPING)' '
	pid=$PROXY_RUN_PID &&
	kill -TERM "$pid" &&
	i=0 && while test $i -lt 150 && test_proc_alive_ "$pid"; do sleep 0.1; i=$((i + 1)); done &&
	wait "$pid" &&
	PROXY_RUN_PID= &&
	wait "$LISTENER_PID" &&
	test_grep "^STOPPING=1$" "$TRASH_DIRECTORY/notify.txt" &&
	test_path_is_missing "$ROOT/run/intutic/proxy.json"
'

test_expect_success 'intutic start --user intutic as root: no warning, the proxy leaves root once bound' '
	in_root /usr/bin/intutic start --user intutic --port 0 \
	    --resolv-conf /etc/intutic-test-resolv.conf --detach \
	    --log /var/log/intutic/start.log >out 2>err &&
	test_grep -v "warning" err &&
	pid=$(sed -n "s/^.*\"pid\": \([0-9]*\).*/\1/p" "$ROOT/run/intutic/proxy.json") &&
	test -n "$pid" &&
	uid=$(in_root id -u intutic) &&
	grep "^Uid:" /proc/$pid/status >ids &&
	test_grep "^Uid:	$uid	$uid	$uid	$uid$" ids &&
	in_root /usr/bin/intutic stop >out 2>err &&
	test_grep "proxy stopped" out
'

test_expect_success 'intutic start as root without --user: the warning names enforce and the fix' '
	in_root /usr/bin/intutic start --port 0 --state-dir /tmp/st \
	    --resolv-conf /etc/intutic-test-resolv.conf --detach \
	    --log /tmp/start.log >out 2>err &&
	in_root /usr/bin/intutic stop --state-dir /tmp/st >/dev/null &&
	test_grep "^intutic: warning: the proxy will run as root, and .intutic enforce on. refuses a root proxy" err &&
	test_grep "intutic start --user intutic" err
'

# Booted: systemd as PID 1 of a container of the root (systemd-nspawn
# --boot), on a throw-away overlay of it (--volatile=overlay), with no
# network but its own lo (--private-network); the checks run there as a
# unit the kernel command line asks for, and write key=value lines into a
# directory bound from the scratch directory; then it powers off.
test_lazy_prereq NSPAWN 'command -v systemd-nspawn'
test_expect_success NSPAWN 'booted by systemd: the proxy unit starts (notify) as intutic, answers, reloads after checking; enforce starts after it' '
	mkdir boot &&
	cat >boot/check.sh <<-\EOF &&
	#!/bin/sh
	# the checks, in the booted root
	exec >/t4101/result 2>&1
	systemctl start intutic-proxy; echo "start-proxy=$?"
	systemctl show -p ActiveState -p StatusText -p User intutic-proxy
	pid=$(systemctl show -p MainPID --value intutic-proxy)
	echo "uid=$(awk "/^Uid:/ { print \$2 }" /proc/$pid/status) intutic=$(id -u intutic)"
	echo "comm=$(cat /proc/$pid/comm)"
	curl -sS --max-time 5 --noproxy "*" -o /tmp/health http://127.0.0.1:8877/healthz; echo "healthz=$?"
	echo "health=$(cat /tmp/health)"
	stat -c "file=%U %a %n" /run/intutic/proxy.json /var/log/intutic/audit.jsonl
	systemctl start intutic-enforce; echo "start-enforce=$?"
	intutic enforce status >/dev/null; echo "enforce-status=$?"
	systemctl reload intutic-proxy; echo "reload=$?"
	cp /etc/intutic/rules.yaml /tmp/rules.yaml
	printf "allow: [\"*\"]\n" >>/etc/intutic/rules.yaml
	systemctl reload intutic-proxy; echo "reload-bad=$?"
	cp /tmp/rules.yaml /etc/intutic/rules.yaml
	systemctl show -p ActiveState intutic-proxy | sed "s/^/after-bad-/"
	systemctl stop intutic-enforce; echo "stop-enforce=$?"
	intutic enforce status >/dev/null; echo "enforce-status-after=$?"
	systemctl stop intutic-proxy; echo "stop-proxy=$?"
	journalctl -b --no-pager -u intutic-proxy -u intutic-enforce >/t4101/journal
	echo "done"
	systemctl poweroff --no-block
	EOF
	chmod +x boot/check.sh &&
	cat >boot/t4101-check.service <<-\EOF &&
	[Unit]
	Description=t4101: the package'"'"'s units under systemd
	After=multi-user.target
	[Service]
	Type=oneshot
	ExecStart=/t4101/check.sh
	EOF
	timeout -k 5 "$PKG_BOOT_SECONDS" systemd-nspawn --quiet --register=no \
	    --keep-unit --volatile=overlay --private-network \
	    --bind="$TRASH_DIRECTORY/boot:/t4101" \
	    --bind-ro="$TRASH_DIRECTORY/boot/t4101-check.service:/etc/systemd/system/t4101-check.service" \
	    -D "$ROOT" --boot systemd.wants=t4101-check.service >boot.log 2>&1 ||
		{ tail -20 boot.log >&2; }
	test_diag "$(cat boot/result 2>/dev/null)" &&
	test_grep "^done$" boot/result &&
	test_grep "^start-proxy=0$" boot/result &&
	test_grep "^ActiveState=active$" boot/result &&
	test_grep "^StatusText=listening on port 8877$" boot/result &&
	test_grep "^User=intutic$" boot/result &&
	uid=$(sed -n "s/^uid=\([0-9]*\) intutic=\1$/\1/p" boot/result) &&
	test -n "$uid" && test "$uid" != 0 &&
	test_grep "^comm=intutic-proxy$" boot/result &&
	test_grep "^healthz=0$" boot/result &&
	test_grep "^health=ok" boot/result &&
	test_grep "^file=intutic 644 /run/intutic/proxy\.json$" boot/result &&
	test_grep "^file=intutic 640 /var/log/intutic/audit\.jsonl$" boot/result &&
	test_grep "^start-enforce=0$" boot/result &&
	test_grep "^enforce-status=0$" boot/result &&
	test_grep "^reload=0$" boot/result &&
	test_grep -v "^reload-bad=0$" boot/result &&
	test_grep "^after-bad-ActiveState=active$" boot/result &&
	test_grep "^stop-enforce=0$" boot/result &&
	test_grep "^enforce-status-after=3$" boot/result &&
	test_grep "^stop-proxy=0$" boot/result &&
	test_grep "only intutic \(uid [0-9]+\) may open connections" boot/journal &&
	test_grep "/etc/intutic/rules\.yaml:[0-9]+:[0-9]+: " boot/journal &&
	test_grep "not reloaded: the proxy \(pid [0-9]+\) keeps its rules" boot/journal
'

test_expect_success 'dpkg --purge: nothing is left but the user' '
	rm -rf "$ROOT/tmp/st" "$ROOT/tmp/start.log" &&
	timeout -k 10 "$PKG_DPKG_SECONDS" chroot "$ROOT" /usr/bin/env -i \
	    PATH="$PATH_IN" dpkg --purge intutic >out 2>err &&
	listing >after &&
	{ diff "$TRASH_DIRECTORY/before" after >diff || :; } &&
	{ grep "^[<>]" diff >changed || :; } &&
	{ grep -v -E "^> \./etc/(passwd|group|shadow|gshadow)-$" changed >left || :; } &&
	test_diag "purge left, besides dpkg'"'"'s records: $(cat changed)" &&
	test_must_be_empty left &&
	in_root getent passwd intutic &&
	in_root getent group intutic
'

test_done
