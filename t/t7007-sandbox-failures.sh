#!/bin/sh
test_description='intutic exec --sandbox when things fail, with real podman: an image build shows a line per step and its output only when it fails, once; a base that cannot be pulled names INTUTIC_SANDBOX_BASE; SIGTERM during a build ends it, nothing runs after and no container is left; the runtime'\''s known failures in one line with the fix and exit 125 (each cause on recorded texts: t/unit/test-oci-fail), unknown ones as the runtime said them; doctor'\''s checks for them'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
. "$top_srcdir/t/lib-sandbox.sh"
sandbox_isolate_netns
test_require_proxy curl

test_exec_env

# t7007_dir NAME: a sandbox directory of the launcher's (INTUTIC_SANDBOX_DIR)
# whose Dockerfile is stdin, beside the shipped seccomp.json, resolv.conf and
# connect.sh.
t7007_dir () {
	mkdir -p "$1" &&
	cp "$top_srcdir/sandbox/seccomp.json" "$top_srcdir/sandbox/resolv.conf" \
		"$top_srcdir/sandbox/connect.sh" "$1/" &&
	cat >"$1/Dockerfile"
}

# t7007_storage: the storage (buildah) containers podman has, sorted.
t7007_storage () {
	sandbox_podman ps -a --external --format "{{.ID}} {{.Status}}" |
	    grep " Storage\$" | sort
}

# t7007_build [ENV=VALUE...]: intutic exec --sandbox of the default image
# (INTUTIC_SANDBOX_IMAGE, built on first use from INTUTIC_SANDBOX_DIR on
# INTUTIC_SANDBOX_BASE), podman called through wrap/podman (its log in
# podman.log); out, err, rc.
t7007_build () {
	rc=0
	env PATH="$PWD/wrap:$PATH" "$@" timeout -k 5 "$SANDBOX_BUILD_SECONDS" \
		"$INTUTIC" exec --state-dir "$PROXY_DIR/state" --sandbox \
		--sandbox-runtime podman -- true >out 2>err || rc=$?
}

test_expect_success 'setup: the image, the proxy on the bridge, a podman that logs its calls' '
	sandbox_setup &&
	start_origin origin &&
	fill_rules proxy-http/forward.yaml rules.yaml PORTS="$ORIGIN_PORT" &&
	start_sandbox_proxy rules.yaml &&
	real=$(command -v podman) &&
	mkdir wrap &&
	cat >wrap/podman <<-WRAP &&
	#!/bin/sh
	printf "%s\n" "\$*" >>"$PWD/podman.log"
	if test "\$1" = run && test -n "\${T7005_RUN_ERR:-}"; then
		printf "%s\n" "\$T7005_RUN_ERR" >&2
		exit "\${T7005_RUN_STATUS:-126}"
	fi
	exec "$real" "\$@"
	WRAP
	chmod +x wrap/podman &&
	INTUTIC_SANDBOX_BASE=$SANDBOX_BASE_IMAGE &&
	export INTUTIC_SANDBOX_BASE &&
	test_atexit "sandbox_podman rmi -f localhost/intutic/t7007:fail-$$ \
		localhost/intutic/t7007:sleep-$$ localhost/intutic/t7007:pull-$$ \
		localhost/intutic/t7007:ok-$$ >/dev/null 2>&1" &&
	t7007_storage >storage.before
'

test_expect_success 'a failing build: a line per step, its output once, the script once, exit 125, nothing run' '
	t7007_dir fail <<-\EOF &&
	ARG BASE
	FROM ${BASE}
	RUN echo t7007-step-two
	RUN set -e; : padding-so-that-the-progress-line-is-cut-before-the-marker; echo t7007-marker; exit 3
	EOF
	: >podman.log &&
	t7007_build INTUTIC_SANDBOX_DIR="$PWD/fail" \
		INTUTIC_SANDBOX_IMAGE=localhost/intutic/t7007:fail-$$ &&
	test "$rc" = 125 &&
	test_grep "^intutic exec: building localhost/intutic/t7007:fail-$$: step 1/3: FROM " err &&
	test_grep "^intutic exec: building localhost/intutic/t7007:fail-$$: step 2/3: RUN echo t7007-step-two\$" err &&
	test_grep "^intutic exec: building localhost/intutic/t7007:fail-$$: step 3/3: RUN set -e; : padding.*\.\.\.\$" err &&
	test_grep "^t7007-marker\$" err &&
	test "$(grep -c "echo t7007-marker" err)" = 1 &&
	test_grep "^Error: building at step 3/3: " err &&
	test_grep "building localhost/intutic/t7007:fail-$$ failed \(exit [0-9]+; podman build.s output is above\): fix what it says and re-run; nothing was run" err &&
	test_grep -v "^run " podman.log &&
	t7007_storage >storage.after &&
	test_cmp storage.before storage.after
'

test_expect_success 'a build that succeeds: its steps, not its output; the run follows' '
	t7007_dir ok <<-\EOF &&
	ARG BASE
	FROM ${BASE}
	RUN echo t7007-quiet-output
	EOF
	test_when_finished "sandbox_podman rmi -f localhost/intutic/t7007:ok-$$ >/dev/null 2>&1" &&
	: >podman.log &&
	t7007_build INTUTIC_SANDBOX_DIR="$PWD/ok" \
		INTUTIC_SANDBOX_IMAGE=localhost/intutic/t7007:ok-$$ &&
	test_grep "building localhost/intutic/t7007:ok-$$: step 2/2: RUN echo t7007-quiet-output\$" err &&
	test_grep -v "^t7007-quiet-output" err &&
	test_grep -v "^STEP " err &&
	test_grep "^run " podman.log
'

test_expect_success 'what podman answered is remembered: the next run only runs; an image removed since is looked for again, built, run; another configuration asks again' '
	t7007_dir cached <<-EOF &&
	FROM $SANDBOX_IMAGE
	RUN echo t7007-cached
	EOF
	img=localhost/intutic/t7007:cached-$$ &&
	test_when_finished "sandbox_podman rmi -f $img >/dev/null 2>&1" &&
	rm -f "$XDG_CACHE_HOME/intutic/oci-podman" &&
	: >podman.log &&
	t7007_build INTUTIC_SANDBOX_DIR="$PWD/cached" INTUTIC_SANDBOX_IMAGE=$img &&
	test "$rc" = 0 &&
	test_grep "^network inspect podman " podman.log &&
	test_grep "^image inspect $img\$" podman.log &&
	test_grep "^build " podman.log &&
	test_grep -v "^info" podman.log &&
	test "$(stat -c %a "$XDG_CACHE_HOME/intutic/oci-podman")" = 600 &&
	: >podman.log &&
	t7007_build INTUTIC_SANDBOX_DIR="$PWD/cached" INTUTIC_SANDBOX_IMAGE=$img &&
	test "$rc" = 0 &&
	cut -d" " -f1 podman.log >calls && echo run >expect && test_cmp expect calls &&
	sandbox_podman rmi -f "$img" >/dev/null &&
	: >podman.log &&
	t7007_build INTUTIC_SANDBOX_DIR="$PWD/cached" INTUTIC_SANDBOX_IMAGE=$img &&
	test "$rc" = 0 &&
	test_grep "^intutic exec: $img is no longer in podman.s storage \(an earlier run found it there\): looking for it again\$" err &&
	test_grep "building the sandbox image $img" err &&
	test "$(grep -c "^run " podman.log)" = 2 &&
	cp "$CONTAINERS_CONF" other.conf &&
	: >podman.log &&
	t7007_build CONTAINERS_CONF="$PWD/other.conf" INTUTIC_SANDBOX_DIR="$PWD/cached" \
		INTUTIC_SANDBOX_IMAGE=$img &&
	test "$rc" = 0 &&
	test_grep "^network inspect podman " podman.log &&
	test_grep "^image inspect $img\$" podman.log
'

test_expect_success 'a base that cannot be pulled: the error names INTUTIC_SANDBOX_BASE and a recipe' '
	t7007_build INTUTIC_SANDBOX_DIR="$top_srcdir/sandbox" \
		INTUTIC_SANDBOX_IMAGE=localhost/intutic/t7007:pull-$$ \
		INTUTIC_SANDBOX_BASE=localhost/intutic-t7007-none:$$ &&
	test "$rc" = 125 &&
	test_grep "its base image localhost/intutic-t7007-none:$$ cannot be pulled; build a base from Debian.s packages with .sudo $top_srcdir/sandbox/mkbase --runtime podman --import localhost/intutic-base:bookworm., then re-run with INTUTIC_SANDBOX_BASE=localhost/intutic-base:bookworm " err &&
	test "$(grep -c "INTUTIC_SANDBOX_BASE" err)" = 1
'

test_expect_success 'SIGTERM during a build: the launcher ends it, no podman run, no container left' '
	t7007_dir sleep <<-\EOF &&
	ARG BASE
	FROM ${BASE}
	RUN sleep 47.25
	EOF
	: >podman.log &&
	(
		env PATH="$PWD/wrap:$PATH" INTUTIC_SANDBOX_DIR="$PWD/sleep" \
			INTUTIC_SANDBOX_IMAGE=localhost/intutic/t7007:sleep-$$ \
			"$INTUTIC" exec --state-dir "$PROXY_DIR/state" --sandbox \
			--sandbox-runtime podman -- true >out 2>err &
		echo $! >launcher.pid
		wait $!
		echo $? >launcher.rc
	) &
	i=0 &&
	until grep -q "step 2/2: RUN sleep 47.25" err 2>/dev/null; do
		i=$((i + 1)) && test $i -le 300 && sleep 0.2 || return 1
	done &&
	sleep 1 &&
	kill -TERM "$(cat launcher.pid)" &&
	i=0 &&
	until test -s launcher.rc; do
		i=$((i + 1)) && test $i -le 150 && sleep 0.2 || return 1
	done &&
	test "$(cat launcher.rc)" = 143 &&
	test_grep "building localhost/intutic/t7007:sleep-$$ was stopped by signal 15 \([0-9]+ containers? it made removed\); nothing was run" err &&
	test_grep -v "^run " podman.log &&
	t7007_storage >storage.after &&
	test_cmp storage.before storage.after &&
	! ps -eo args | grep -v grep | grep -q -F "sleep 47.25" &&
	! sandbox_podman image exists localhost/intutic/t7007:sleep-$$
'

test_expect_success 'a missing --sandbox-image: the pull fails, exit 125 with what to do' '
	sandbox_exec --sandbox-image localhost/intutic-t7007-none:$$ -- true &&
	test "$rc" = 125 &&
	test_grep "cannot pull localhost/intutic-t7007-none:$$ \(podman pull.s message is above\): check the name, or pull, build or load it as the user who runs intutic" err
'

test_expect_success 'runc cannot set the ulimits (hybrid cgroups): one line naming containers.conf, exit 125' '
	T7005_RUN_ERR="Error: OCI runtime error: runc: runc create failed: unable to start container process: error during container init: error setting rlimit type 7: operation not permitted" &&
	export T7005_RUN_ERR &&
	test_when_finished "unset T7005_RUN_ERR" &&
	PATH="$PWD/wrap:$PATH" sandbox_exec -- true &&
	test "$rc" = 125 &&
	test_grep "error setting rlimit type 7" err &&
	test_grep "^intutic exec: podman run failed: the OCI runtime cannot set the container.s ulimits on this host.s cgroup layout \(hybrid or v1\): give podman explicit default_ulimits, as .*containers.conf does \(\`CONTAINERS_CONF=" err &&
	test "$(grep -c "^intutic exec:" err)" = 1
'

test_expect_success 'an unknown failure: the runtime.s message and its exit status, no guess' '
	T7005_RUN_ERR="Error: t7007: something no one has seen before" &&
	T7005_RUN_STATUS=126 &&
	export T7005_RUN_ERR T7005_RUN_STATUS &&
	test_when_finished "unset T7005_RUN_ERR T7005_RUN_STATUS" &&
	PATH="$PWD/wrap:$PATH" sandbox_exec -- true &&
	test "$rc" = 126 &&
	test_grep "^Error: t7007: something no one has seen before\$" err &&
	test_grep -v "^intutic exec:" err
'

test_expect_success 'the command'\''s own output still passes through, its status kept' '
	sandbox_exec -- sh -c "echo to-stderr >&2; echo to-stdout; exit 7" &&
	test "$rc" = 7 &&
	test_grep "^to-stdout\$" out &&
	test_grep "^to-stderr\$" err
'

test_expect_success 'doctor: the cgroup layout and podman'\''s default_ulimits, the bridge, the default image' '
	rc=0 &&
	INTUTIC_SANDBOX_IMAGE=$SANDBOX_IMAGE "$INTUTIC" doctor \
		--state-dir "$PROXY_DIR/state" >doc 2>doc.err || rc=$? &&
	test_grep "^bridge +ok +$SANDBOX_GATEWAY \(podman.s default network\)\$" doc &&
	test_grep "^image +ok +$SANDBOX_IMAGE, in podman.s storage\$" doc &&
	if test "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs; then
		test_grep "^cgroups +ok +cgroup2 \(unified\)" doc
	else
		test_grep "^cgroups +ok +(hybrid|v1) layout on /sys/fs/cgroup; default_ulimits set in $CONTAINERS_CONF\$" doc
	fi &&
	: >empty.conf &&
	rc=0 &&
	CONTAINERS_CONF=$PWD/empty.conf INTUTIC_SANDBOX_IMAGE=localhost/intutic-t7007-none:$$ \
		"$INTUTIC" doctor --state-dir "$PROXY_DIR/state" --json >doc.json 2>doc.err || rc=$? &&
	python3 -c "
import json, sys
d = json.load(open(\"doc.json\"))
c = {x[\"check\"]: x for x in d[\"checks\"]}
assert c[\"image\"][\"verdict\"] == \"warn\", c[\"image\"]
assert \"INTUTIC_SANDBOX_BASE\" in c[\"image\"][\"fix\"], c[\"image\"]
assert c[\"bridge\"][\"verdict\"] == \"ok\", c[\"bridge\"]
g = c[\"cgroups\"]
if sys.argv[1] == \"cgroup2fs\":
    assert g[\"verdict\"] == \"ok\", g
else:
    assert g[\"verdict\"] == \"warn\" and \"rlimit type 7\" in g[\"detail\"], g
    assert \"containers.conf\" in g[\"fix\"], g
" "$(stat -f -c %T /sys/fs/cgroup)"
'

test_done
