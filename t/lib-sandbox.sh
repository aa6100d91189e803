# t/lib-sandbox.sh — what a container test needs: the script in a network
# namespace of its own entered with nsenter (podman and runc run in it, and
# podman's bridge lives there), podman configured through CONTAINERS_CONF,
# a Debian base image built offline (debootstrap, cached), the sandbox image
# built from sandbox/Dockerfile on it, containers run with the launcher's
# envelope and removed by the test's own tracking, and a "far" host that a
# container can reach but that its firewall must not let it reach.
# Sourced after lib-test.sh and lib-proxy.sh:
#
#	#!/bin/sh
#	test_description='sandbox: ...'
#	. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
#	. "$top_srcdir/t/lib-proxy.sh"
#	. "$top_srcdir/t/lib-sandbox.sh"
#	sandbox_isolate_netns
#	test_require_proxy curl
#	test_expect_success 'setup' '
#		sandbox_setup &&
#		start_origin origin &&
#		write_hosts hosts origin.test=127.0.0.1 &&
#		fill_rules proxy-http/forward.yaml rules.yaml PORTS="$ORIGIN_PORT" &&
#		start_sandbox_proxy rules.yaml
#	'
#	test_expect_success 'the agent reaches the origin through the proxy' '
#		sandbox_proxy_env &&
#		sandbox_run -- curl -sS "http://origin.test:$ORIGIN_PORT/" >out &&
#		test_grep "hello from" out
#	'
#	test_done
#
# Functions (each documented where it is defined):
#   sandbox_isolate_netns    test_isolate_netns for container tests: builds the
#                            cached base tarball first (outside: it downloads
#                            Debian packages), then runs the script again in a
#                            namespace of its own, entered with nsenter;
#                            skips unless root, podman, runc, debootstrap, nft
#   sandbox_setup            in the namespace: the far host, CONTAINERS_CONF,
#                            the base image, $SANDBOX_IMAGE built, cleanup of
#                            containers registered; sets SANDBOX_GATEWAY
#   sandbox_podman ARGS...   podman, bounded in time (SANDBOX_PODMAN_SECONDS)
#   sandbox_run [OPTS] -- CMD...
#                            podman run of $SANDBOX_IMAGE exactly as the
#                            launcher runs it (SANDBOX_ENVELOPE), -e NAME for
#                            each SANDBOX_ENV_NAMES set, --rm, labelled,
#                            tracked by a cidfile; OPTS go before the image
#   sandbox_exec [OPTS] -- CMD...
#                            intutic exec --sandbox with $SANDBOX_IMAGE and
#                            the test's limits, through start_proxy's proxy:
#                            out, err and rc
#   sandbox_proxy_env [ADDR:PORT]
#                            export INTUTIC_SANDBOX_RULESET and the *_PROXY
#                            variables for the proxy on the gateway
#   sandbox_gateway6         the bridge's IPv6 link-local address (after a
#                            container ran), on stdout
#   start_far_echo [NAME]    an echo server on $SANDBOX_FAR_ADDR (10.99.0.2),
#                            reachable from a container, never allowed
#   start_far_dns [ZONE]     the containers' resolver on $SANDBOX_DNS_ADDR
#                            port 53 (start_dns there)
#   sandbox_rm_containers    remove every container this script started
#
# Variables: SANDBOX_IMAGE (the image under test), SANDBOX_BASE_IMAGE,
# SANDBOX_GATEWAY (podman's bridge gateway, 10.88.0.1), SANDBOX_FAR_ADDR,
# SANDBOX_DNS_ADDR, SANDBOX_ENVELOPE (the launcher's run flags), CONTAINERS_CONF.
#
# The base image: what sandbox/mkbase (the shipped recipe for a base
# without a container registry) makes with SANDBOX_MKBASE_ARGS: Debian
# minbase with every package the Dockerfiles check for and the tests' own
# (SANDBOX_BASE_PACKAGES), Node.js from Debian, npm and Claude Code
# (SANDBOX_NPM) from the npm registry; so no build installs anything.  The
# tree is kept as a tarball in $SANDBOX_TEST_CACHE (default
# /var/cache/intutic-tests), named after those arguments and mkbase's own
# text, made once (a minute or two, from the mirror apt uses here and the
# npm registry, before the script enters its namespace: the only traffic
# that leaves the machine, a package download like apt-get's and npm's),
# and imported into podman's own storage as
# localhost/intutic-test-base:<suite>-<key> when that image is missing.
# Remove the tarball and the image to build them again.
#
# Network rule: the containers and every server live in the script's
# namespace, whose only interfaces are lo (which also holds the far host's
# addresses) and podman's bridge; nothing in it routes
# anywhere else.  Containers get --dns naming the test's resolver, or
# --dns none: the machine's resolver is never asked.

# --- limits -----------------------------------------------------------------
SANDBOX_DEBOOTSTRAP_SECONDS=900	# building the base tree (a download)
SANDBOX_BUILD_SECONDS=300	# podman build of the sandbox image
SANDBOX_PODMAN_SECONDS=120	# any other podman command
SANDBOX_RUN_SECONDS=60		# one container, start to end
SANDBOX_PIDS=64			# the containers' --pids-limit
SANDBOX_MEMORY=512m		# --memory
SANDBOX_CPUS=1			# --cpus

# --- names ------------------------------------------------------------------
SANDBOX_SUITE=bookworm
SANDBOX_BASE_PACKAGES="python3 bind9-dnsutils openssl openssh-client git"	# beyond mkbase's
SANDBOX_NPM=@anthropic-ai/claude-code@2.1.112	# as lib-gateway.sh's
SANDBOX_MKBASE_ARGS="--suite $SANDBOX_SUITE --node --npm $SANDBOX_NPM"
# other arguments or another mkbase, another tarball and image
test_sandbox_key_=$SANDBOX_SUITE-$({ printf '%s|%s\n' "$SANDBOX_MKBASE_ARGS" \
    "$SANDBOX_BASE_PACKAGES"; cat "$top_srcdir/sandbox/mkbase"; } | cksum | awk '{ print $1 }')
SANDBOX_BASE_IMAGE=localhost/intutic-test-base:$test_sandbox_key_
SANDBOX_IMAGE=localhost/intutic/sandbox:test-$test_name_
SANDBOX_FAR_ADDR=10.99.0.2	# a host a container reaches, never allowed
SANDBOX_DNS_ADDR=10.99.0.53	# the containers' resolver
SANDBOX_GATEWAY=10.88.0.1	# read again from podman by sandbox_setup
: "${SANDBOX_TEST_CACHE:=/var/cache/intutic-tests}"
test_sandbox_tarball_=$SANDBOX_TEST_CACHE/base-$test_sandbox_key_.tar.gz
CONTAINERS_CONF=$TEST_DATA/sandbox/containers.conf
export CONTAINERS_CONF SANDBOX_IMAGE SANDBOX_BASE_IMAGE SANDBOX_FAR_ADDR \
    SANDBOX_DNS_ADDR SANDBOX_GATEWAY

# What `intutic exec --sandbox` gives podman run (intutic-exec(1), The
# envelope): every capability dropped but the four the entrypoint needs (and
# CHOWN: podman 4 cannot mount the home tmpfs owned by uid 1000), no new
# privileges, intutic's seccomp profile, a read-only root with tmpfs /tmp,
# /run and home, an init, and limits.  (Not the launcher's resolv.conf:
# sandbox_run gives containers the test's resolver with --dns.)
SANDBOX_SECCOMP=$top_srcdir/sandbox/seccomp.json
SANDBOX_ENVELOPE="--cap-drop=ALL --cap-add=NET_ADMIN --cap-add=SETUID --cap-add=SETGID --cap-add=SETPCAP --cap-add=CHOWN --security-opt=no-new-privileges --security-opt seccomp=$SANDBOX_SECCOMP --read-only --tmpfs /tmp --tmpfs /run --tmpfs /sandbox/home:mode=0700 --init --pids-limit $SANDBOX_PIDS --memory $SANDBOX_MEMORY --cpus $SANDBOX_CPUS"
# Passed by name (-e NAME) when set, as the launcher does.
SANDBOX_ENV_NAMES="INTUTIC_SANDBOX_RULESET INTUTIC_SANDBOX_WORKDIR INTUTIC_SANDBOX_UID INTUTIC_SANDBOX_GID HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy all_proxy NO_PROXY no_proxy"

test_sandbox_atexit_=
test_sandbox_n_=0

# --- the namespace ------------------------------------------------------------

# test_sandbox_tarball_build_: the base tree as a tarball in the cache,
# made with sandbox/mkbase when missing (under a lock: another script may be
# at it).  Runs outside the test's namespace.  Fails with the reason on
# stderr.
test_sandbox_tarball_build_ () {
	test -s "$test_sandbox_tarball_" && return 0
	mkdir -p "$SANDBOX_TEST_CACHE" || return 1
	# shellcheck disable=SC2086 # the arguments are words
	timeout -k 10 "$SANDBOX_DEBOOTSTRAP_SECONDS" flock "$SANDBOX_TEST_CACHE/.lock" \
	    "$top_srcdir/sandbox/mkbase" --out "$test_sandbox_tarball_" \
	    --packages "$SANDBOX_BASE_PACKAGES" $SANDBOX_MKBASE_ARGS \
	    </dev/null >"$SANDBOX_TEST_CACHE/mkbase.out" 2>&1 || {
		echo "sandbox/mkbase failed: $(tail -n 1 "$SANDBOX_TEST_CACHE/mkbase.out") (see $SANDBOX_TEST_CACHE/mkbase.out)" >&2
		return 1
	}
}

# test_sandbox_rm_labelled_ NETNS: remove the containers labelled with this
# namespace (intutic.test=NETNS): what a killed script left.
test_sandbox_rm_labelled_ () {
	for test_sandbox_c_ in $(timeout -k 5 "$SANDBOX_PODMAN_SECONDS" podman ps -a -q \
	    --filter "label=intutic.test=$1" 2>/dev/null); do
		printf '%s\n' "# container $test_sandbox_c_ left by the script: removed"
		timeout -k 5 "$SANDBOX_PODMAN_SECONDS" podman rm -f -t 0 "$test_sandbox_c_" >/dev/null 2>&1
	done
	return 0
}

# sandbox_isolate_netns: test_isolate_netns for container tests.  Outside:
# skips the script unless it is root and podman, runc, nsenter, debootstrap,
# nft, flock and timeout are there; makes the base tarball when missing
# (before the namespace exists: a download of Debian packages); creates
# intutic-t-<script>-<pid> with lo up and runs the script again in it with
# `nsenter --net=` (ip netns exec would remount /sys and hide the cgroups
# runc needs); at the end removes the containers labelled with the
# namespace's name and deletes it.  Inside: exports INTUTIC_TEST_NETNS and
# returns.  Call it right after sourcing the libraries.
sandbox_isolate_netns () {
	if test -n "${TEST_NETNS:-}"; then
		test_isolate_netns
		return
	fi
	test_require_root "named network namespaces, podman's bridge"
	for test_sandbox_tool_ in podman runc nsenter debootstrap nft flock timeout ip; do
		command -v "$test_sandbox_tool_" >/dev/null 2>&1 ||
			test_skip_all "needs $test_sandbox_tool_ (scripts/bootstrap installs it)"
	done
	ip netns list >/dev/null 2>&1 ||
		test_skip_all "needs root and ip netns (network namespaces)"
	if ! timeout -k 5 "$SANDBOX_PODMAN_SECONDS" podman image exists "$SANDBOX_BASE_IMAGE" 2>/dev/null; then
		test -s "$test_sandbox_tarball_" ||
			printf '%s\n' "# building the test base image's tree with sandbox/mkbase (once; cached in $SANDBOX_TEST_CACHE)"
		test_sandbox_err_=$(test_sandbox_tarball_build_ 2>&1) ||
			test_skip_all "cannot build the base image offline: $test_sandbox_err_"
	fi

	test_netns_via_=nsenter
	test_netns_on_exit_=test_sandbox_rm_labelled_
	test_netns_reexec_
}

# --- podman -------------------------------------------------------------------

# sandbox_podman ARGS...: podman with CONTAINERS_CONF, at most
# SANDBOX_PODMAN_SECONDS.
sandbox_podman () {
	timeout -k 5 "$SANDBOX_PODMAN_SECONDS" podman "$@"
}

# sandbox_rm_containers: remove every container this script started
# (sandbox_run's cidfiles; registered at the end of the script by
# sandbox_setup).  A container that ended was removed by --rm already.
sandbox_rm_containers () {
	for test_sandbox_cid_ in "$TRASH_DIRECTORY"/containers/*.cid; do
		test -s "$test_sandbox_cid_" || continue
		read -r test_sandbox_id_ <"$test_sandbox_cid_" || continue
		if sandbox_podman container exists "$test_sandbox_id_" 2>/dev/null; then
			sandbox_podman rm -f -t 0 "$test_sandbox_id_" >/dev/null 2>&1
		fi
		rm -f "$test_sandbox_cid_"
	done
	return 0
}

# test_sandbox_far_host_: the far host's addresses, on the namespace's lo
# (a kernel may lack the dummy interface): a container reaches them
# through the bridge's gateway, as local addresses of the namespace, and
# nothing else is behind them.
test_sandbox_far_host_ () {
	for test_sandbox_a_ in "$SANDBOX_FAR_ADDR" "$SANDBOX_DNS_ADDR"; do
		ip -4 -o addr show dev lo | grep -qF " $test_sandbox_a_/32 " && continue
		ip addr add "$test_sandbox_a_/32" dev lo || return 1
	done
}

# sandbox_setup: in the script's namespace (sandbox_isolate_netns), the far
# host, the base image (imported from the cached tarball when podman lacks
# it) and $SANDBOX_IMAGE built from sandbox/Dockerfile on it (no network
# needed: the base has every package); containers removed at the end;
# SANDBOX_GATEWAY read from podman's default network.  The build's output
# is in sandbox-build.log.
sandbox_setup () {
	test -n "${INTUTIC_TEST_NETNS:-}" ||
		{ echo "sandbox_setup: not in the test's namespace (sandbox_isolate_netns first)" >&2; return 1; }
	if test -z "$test_sandbox_atexit_"; then
		test_atexit sandbox_rm_containers || return 1
		test_sandbox_atexit_=1
	fi
	mkdir -p "$TRASH_DIRECTORY/containers" || return 1
	test_sandbox_far_host_ || return 1
	if ! sandbox_podman image exists "$SANDBOX_BASE_IMAGE"; then
		test -s "$test_sandbox_tarball_" ||
			{ echo "sandbox_setup: no $SANDBOX_BASE_IMAGE and no $test_sandbox_tarball_" >&2; return 1; }
		flock "$SANDBOX_TEST_CACHE/.lock" timeout -k 5 "$SANDBOX_PODMAN_SECONDS" \
		    podman import --change 'CMD ["/bin/bash"]' "$test_sandbox_tarball_" \
		    "$SANDBOX_BASE_IMAGE" >sandbox-import.log 2>&1 || {
			cat sandbox-import.log >&2
			return 1
		}
	fi
	test_sandbox_old_=$(sandbox_podman image inspect --format '{{.Id}}' \
	    "$SANDBOX_IMAGE" 2>/dev/null) || test_sandbox_old_=
	timeout -k 10 "$SANDBOX_BUILD_SECONDS" podman build --pull=never \
	    --build-arg "BASE=$SANDBOX_BASE_IMAGE" --build-arg VERSION=test \
	    --label "intutic.test=$INTUTIC_TEST_NETNS" \
	    -t "$SANDBOX_IMAGE" -f "$top_srcdir/sandbox/Dockerfile" \
	    "$top_srcdir/sandbox" >sandbox-build.log 2>&1 || {
		tail -n 30 sandbox-build.log >&2
		return 1
	}
	# The image this tag named before (an older entrypoint): not kept.
	if test -n "$test_sandbox_old_" && test "$test_sandbox_old_" != \
	    "$(sandbox_podman image inspect --format '{{.Id}}' "$SANDBOX_IMAGE" 2>/dev/null)"; then
		sandbox_podman rmi "$test_sandbox_old_" >/dev/null 2>&1
	fi
	test_sandbox_gw_=$(sandbox_podman network inspect podman \
	    --format '{{range .Subnets}}{{.Gateway}} {{end}}' 2>/dev/null | awk '{ print $1 }')
	test -n "$test_sandbox_gw_" || {
		echo "sandbox_setup: no gateway in podman's default network (podman network inspect podman)" >&2
		return 1
	}
	SANDBOX_GATEWAY=$test_sandbox_gw_
	export SANDBOX_GATEWAY
}

# start_sandbox_proxy RULES [OPTIONS...]: start_proxy as `intutic exec
# --sandbox` needs it: on loopback and the bridge's gateway, with its
# transparent listener and its DNS filter there too (ports the system
# picks; the state file says which).
start_sandbox_proxy () {
	test $# -ge 1 || { echo "start_sandbox_proxy: needs RULES" >&2; return 1; }
	test_sandbox_rules_=$1
	shift
	start_proxy "$test_sandbox_rules_" --bind "127.0.0.1,$SANDBOX_GATEWAY" \
		--transparent-bind "$SANDBOX_GATEWAY:0" \
		--dns-bind "$SANDBOX_GATEWAY:0" "$@"
}

# sandbox_proxy_env [ADDR:PORT]: the environment the launcher gives the
# container for the proxy (default $SANDBOX_GATEWAY:$PROXY_PORT): the
# egress table that lets out only the proxy (sandbox_ruleset), HTTP_PROXY,
# HTTPS_PROXY (both cases) and NO_PROXY, exported.  The proxy takes from a
# sandbox only a run's requests: with a proxy of the test's started, the
# run SANDBOX_RUN (this shell its launcher) is registered there, and the
# proxy URL carries its credentials, as the launcher's does.
SANDBOX_RUN=run-sandbox-test
SANDBOX_RUN_TOKEN=5a4db0c50000000000000000000000000000000000000000
sandbox_proxy_env () {
	test_sandbox_proxy_=${1:-$SANDBOX_GATEWAY:${PROXY_PORT:-}}
	case $test_sandbox_proxy_ in
	*:)	echo "sandbox_proxy_env: no proxy was started" >&2; return 1 ;;
	esac
	sandbox_ruleset || return 1
	if test -n "${CONTROL_SOCKET:-}"; then
		printf '{"run":"%s","token":"%s","command":"sandbox-test","pid":%d}' \
			"$SANDBOX_RUN" "$SANDBOX_RUN_TOKEN" $$ >"$TRASH_DIRECTORY/sandbox-run.json" &&
		test_sandbox_code_=$(control_curl /v1/runs -o /dev/null -w "%{http_code}" \
			--data-binary @"$TRASH_DIRECTORY/sandbox-run.json") || return 1
		case $test_sandbox_code_ in
		201|409) ;;
		*)	echo "sandbox_proxy_env: the proxy did not register $SANDBOX_RUN: $test_sandbox_code_" >&2
			return 1 ;;
		esac
		HTTP_PROXY=http://$SANDBOX_RUN:$SANDBOX_RUN_TOKEN@$test_sandbox_proxy_
	else
		HTTP_PROXY=http://$test_sandbox_proxy_
	fi
	HTTPS_PROXY=$HTTP_PROXY
	http_proxy=$HTTP_PROXY
	https_proxy=$HTTP_PROXY
	NO_PROXY=localhost,127.0.0.1,::1
	no_proxy=$NO_PROXY
	export HTTP_PROXY HTTPS_PROXY http_proxy https_proxy NO_PROXY no_proxy
}

# sandbox_ruleset [OPTION...]: INTUTIC_SANDBOX_RULESET, exported: the table
# `intutic enforce container --proxy` makes for the proxy of
# sandbox_proxy_env, with the OPTIONs (--allow CIDR[:PORT], --dns
# ADDR:PORT) as well; what the launcher hands the entrypoint.
sandbox_ruleset () {
	INTUTIC_SANDBOX_RULESET=$("$INTUTIC" enforce container \
	    --proxy "$test_sandbox_proxy_" "$@") || {
		echo "sandbox_ruleset: intutic enforce container failed" >&2
		return 1
	}
	export INTUTIC_SANDBOX_RULESET
}

# sandbox_run [OPTIONS...] -- COMMAND [ARG...]: run COMMAND in a container of
# $SANDBOX_IMAGE (SANDBOX_RUN_IMAGE overrides) with the launcher's envelope,
# -e NAME for each of SANDBOX_ENV_NAMES that is set, --rm, the label
# intutic.test=<namespace>, a cidfile under containers/ (for
# sandbox_rm_containers), and --dns none unless OPTIONS say --dns.  OPTIONS
# go before the image.  At most SANDBOX_RUN_SECONDS; the status is the
# container's (podman's own errors are 125 too: look at stderr).
sandbox_run () {
	test_sandbox_n_=$((test_sandbox_n_ + 1))
	test_sandbox_cidf_=$TRASH_DIRECTORY/containers/$$-$test_sandbox_n_-$(date +%s%N).cid
	test_sandbox_opts_=
	test_sandbox_dns_=--dns=none
	while test $# -gt 0 && test "$1" != --; do
		case $1 in
		--dns|--dns=*)	test_sandbox_dns_= ;;
		esac
		test_sandbox_opts_="$test_sandbox_opts_ $(test_sandbox_quote_ "$1")"
		shift
	done
	test "${1:-}" = -- ||
		{ echo "sandbox_run: needs [OPTIONS...] -- COMMAND..." >&2; return 1; }
	shift
	test_sandbox_env_=
	for test_sandbox_name_ in $SANDBOX_ENV_NAMES; do
		eval "test_sandbox_set_=\${$test_sandbox_name_+set}"
		test "$test_sandbox_set_" = set &&
			test_sandbox_env_="$test_sandbox_env_ -e $test_sandbox_name_"
	done
	# shellcheck disable=SC2086 # the envelope and the -e flags are words
	eval "timeout -k 10 \"\$SANDBOX_RUN_SECONDS\" podman run --rm --pull=never \
	    --label \"intutic.test=\$INTUTIC_TEST_NETNS\" \
	    --cidfile \"\$test_sandbox_cidf_\" \
	    $SANDBOX_ENVELOPE $test_sandbox_dns_ $test_sandbox_env_ $test_sandbox_opts_ \
	    \"\${SANDBOX_RUN_IMAGE:-\$SANDBOX_IMAGE}\" \"\$@\""
	test_sandbox_code_=$?
	case $test_sandbox_code_ in
	124|137)
		# timeout ended the client: the container may still run.
		if test -s "$test_sandbox_cidf_"; then
			read -r test_sandbox_id_ <"$test_sandbox_cidf_" &&
			sandbox_podman rm -f -t 0 "$test_sandbox_id_" >/dev/null 2>&1
		fi
		echo "sandbox_run: the container still ran after ${SANDBOX_RUN_SECONDS}s: removed" >&2 ;;
	esac
	return "$test_sandbox_code_"
}

# test_sandbox_quote_ WORD: WORD quoted for eval.
test_sandbox_quote_ () {
	printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

# sandbox_exec [OPTIONS...] -- COMMAND [ARG...]: `intutic exec --sandbox`
# through the proxy of start_proxy, with podman, $SANDBOX_IMAGE and the
# test's limits (OPTIONS after them: a --sandbox-image of their own wins);
# at most SANDBOX_RUN_SECONDS; stdout in out, stderr in err, the status in
# rc (the function itself returns 0).
sandbox_exec () {
	rc=0
	timeout -k 5 "$SANDBOX_RUN_SECONDS" "$INTUTIC" exec \
		--state-dir "$PROXY_DIR/state" --sandbox --sandbox-runtime podman \
		--sandbox-image "$SANDBOX_IMAGE" --sandbox-pids "$SANDBOX_PIDS" \
		--sandbox-memory "$SANDBOX_MEMORY" --sandbox-cpus "$SANDBOX_CPUS" \
		"$@" >out 2>err || rc=$?
}

# sandbox_gateway6: the IPv6 link-local address of podman's bridge in this
# namespace (there once a container has run).
sandbox_gateway6 () {
	ip -6 -o addr show dev cni-podman0 scope link 2>/dev/null |
	    awk '{ sub(/\/.*/, "", $4); print $4; exit }'
}

# start_far_echo [NAME] [OPTIONS...]: start_echo on $SANDBOX_FAR_ADDR (a
# host a container reaches but must not be let through to).  NAME defaults
# to far: FAR_PORT, FAR_PID, FAR_LOG.
start_far_echo () {
	test_far_name_=far
	case ${1:-} in
	''|-*)	;;
	*)	test_far_name_=$1; shift ;;
	esac
	start_echo "$test_far_name_" --bind "$SANDBOX_FAR_ADDR" "$@"
}

# start_far_dns [ZONE] [OPTIONS...]: start_dns on $SANDBOX_DNS_ADDR port 53,
# the resolver containers get with --dns "$SANDBOX_DNS_ADDR" and
# sandbox_ruleset --dns "$SANDBOX_DNS_ADDR:53".  DNS_QUERY_LOG has what it was asked.
start_far_dns () {
	start_dns "$@" --bind "$SANDBOX_DNS_ADDR" --port 53
}
