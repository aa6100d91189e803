#!/bin/sh
# intutic-entrypoint — the entrypoint of the intutic sandbox image.
#
# Run as root by `intutic exec --sandbox` with only NET_ADMIN, SETUID,
# SETGID, SETPCAP and CHOWN (for the home tmpfs).  It installs a default-deny egress table (nftables,
# inet: IPv4 and IPv6), checks that the table is what it asked for, drops
# every capability (the bounding set included), becomes the unprivileged
# user sandbox and exec()s the command.  Whatever goes wrong before the
# exec, nothing runs: exit 125 with one line on stderr (2: no command).
#
# Environment (set by the launcher, values passed by name):
#   INTUTIC_SANDBOX_PROXY    ADDR:PORT of the proxy as the container sees it:
#                            an IPv4 address, [IPv6], or a name resolved once
#                            (getent) before the firewall goes up.  Required.
#   INTUTIC_SANDBOX_DNS      the one resolver allowed (UDP and TCP 53), an
#                            address.  Unset: no DNS at all.
#   INTUTIC_SANDBOX_ALLOW    CIDR[,CIDR...]: more destinations allowed.
#   INTUTIC_SANDBOX_WORKDIR  the directory to run in (a --sandbox-mount);
#                            default the sandbox home.
#   HTTP_PROXY, HTTPS_PROXY... are passed on untouched.
#
# POSIX sh: it runs on Alpine (busybox) and Debian (dash) bases alike.

PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH

SANDBOX_USER=sandbox
SANDBOX_UID=1000
SANDBOX_GID=1000
SANDBOX_HOME=/sandbox/home
EXIT_SETUP=125			# the sandbox could not be set up: nothing ran
EXIT_USAGE=2
ALLOW_MAX=64			# CIDRs in INTUTIC_SANDBOX_ALLOW
TABLE='inet intutic'

me=intutic-entrypoint

die () {
	printf '%s: %s\n' "$me" "$*" >&2
	exit "$EXIT_SETUP"
}

if test $# = 0; then
	printf '%s\n' "usage: $me COMMAND [ARG...]" \
	    "  (the entrypoint of the intutic sandbox image: run by 'intutic exec --sandbox')" >&2
	exit "$EXIT_USAGE"
fi

# --- validating addresses -------------------------------------------------------

# is_ipv4 ADDR: a dotted quad, each part 0-255 without leading zeros.
is_ipv4 () {
	case $1 in
	*[!0-9.]*|.*|*.|*..*)	return 1 ;;
	esac
	v4_ifs=$IFS
	IFS=.
	# shellcheck disable=SC2086 # split on the dots
	set -- $1
	IFS=$v4_ifs
	test $# = 4 || return 1
	for v4_part in "$@"; do
		case $v4_part in
		''|0?*)	return 1 ;;
		esac
		test "${#v4_part}" -le 3 && test "$v4_part" -le 255 || return 1
	done
	return 0
}

# is_ipv6 ADDR: hex digits and colons (an IPv4 tail allowed); nft parses the
# rest, and the check after the table went in catches what it did not take.
is_ipv6 () {
	case $1 in
	*:*)	;;
	*)	return 1 ;;
	esac
	case $1 in
	*[!0-9A-Fa-f:.]*|*:::*)	return 1 ;;
	esac
	test "${#1}" -le 45
}

# is_port N: 1-65535.
is_port () {
	case $1 in
	''|*[!0-9]*|0*)	return 1 ;;
	esac
	test "${#1}" -le 5 && test "$1" -le 65535
}

# ipv4_int ADDR: the address as a number.
ipv4_int () {
	v4_ifs=$IFS
	IFS=.
	# shellcheck disable=SC2086
	set -- $1
	IFS=$v4_ifs
	echo $(( ($1 << 24) + ($2 << 16) + ($3 << 8) + $4 ))
}

# --- the inputs -------------------------------------------------------------------

# The proxy: ADDR:PORT, [V6]:PORT or NAME:PORT.
proxy=${INTUTIC_SANDBOX_PROXY:-}
test -n "$proxy" ||
	die "INTUTIC_SANDBOX_PROXY is not set (ADDR:PORT of the intutic proxy): refusing to run without it"
case $proxy in
\[*\]:*)
	proxy_host=${proxy%]:*}
	proxy_host=${proxy_host#\[}
	proxy_port=${proxy##*]:} ;;
*:*:*)
	die "INTUTIC_SANDBOX_PROXY '$proxy': an IPv6 address goes in brackets, [ADDR]:PORT" ;;
*:*)
	proxy_host=${proxy%:*}
	proxy_port=${proxy##*:} ;;
*)
	die "INTUTIC_SANDBOX_PROXY '$proxy': expected ADDR:PORT" ;;
esac
is_port "$proxy_port" ||
	die "INTUTIC_SANDBOX_PROXY '$proxy': bad port '$proxy_port'"
if is_ipv4 "$proxy_host" || is_ipv6 "$proxy_host"; then
	proxy_addr=$proxy_host
else
	case $proxy_host in
	''|-*|*[!A-Za-z0-9.-]*)
		die "INTUTIC_SANDBOX_PROXY '$proxy': '$proxy_host' is neither an address nor a host name" ;;
	esac
	test "${#proxy_host}" -le 253 ||
		die "INTUTIC_SANDBOX_PROXY '$proxy': host name too long"
	# Resolved once, now, before the firewall: the table holds the address.
	proxy_addr=$(getent ahostsv4 "$proxy_host" 2>/dev/null | awk 'NR == 1 { print $1 }')
	test -n "$proxy_addr" ||
		proxy_addr=$(getent hosts "$proxy_host" 2>/dev/null | awk 'NR == 1 { print $1 }')
	test -n "$proxy_addr" ||
		die "cannot resolve the proxy's host '$proxy_host' (INTUTIC_SANDBOX_PROXY)"
	is_ipv4 "$proxy_addr" || is_ipv6 "$proxy_addr" ||
		die "the proxy's host '$proxy_host' resolved to '$proxy_addr', not an address"
fi

dns=${INTUTIC_SANDBOX_DNS:-}
if test -n "$dns"; then
	is_ipv4 "$dns" || is_ipv6 "$dns" ||
		die "INTUTIC_SANDBOX_DNS '$dns': expected an IPv4 or IPv6 address"
fi

# family ADDR: ip or ip6, the nft keyword.
family () {
	if is_ipv4 "$1"; then echo ip; else echo ip6; fi
}

# The rules, one a line, in the order they go into the chain; and, for the
# check, the lines `nft list` must show for them (an IPv4 address or CIDR
# is shown as written, once validated; an IPv6 one in nft's own spelling,
# matched by its shape).
if ! rules=$(mktemp) || ! expect=$(mktemp); then
	die "cannot make a temporary file"
fi
trap 'rm -f "$rules" "$expect"' EXIT
n_rules=0

# rule TEXT PATTERN: TEXT goes into the chain; the listing must have
# exactly one line matching the ERE PATTERN for it.
rule () {
	printf '\t\t%s\n' "$1" >>"$rules"
	printf '%s\n' "$2" >>"$expect"
	n_rules=$((n_rules + 1))
}

# addr_pattern ADDR: an ERE for ADDR as nft lists it.
addr_pattern () {
	if is_ipv4 "$1"; then
		printf '%s\n' "$1" | sed 's/\./\\./g'
	else
		echo '[0-9a-f:.]+'
	fi
}

rule 'oifname "lo" accept' '^oifname "lo" accept$'
rule 'ct state established,related accept' '^ct state established,related accept$'
has_v6=
fam=$(family "$proxy_addr")
test "$fam" = ip || has_v6=1
pat=$(addr_pattern "$proxy_addr")
rule "$fam daddr $proxy_addr tcp dport $proxy_port accept" \
    "^$fam daddr $pat tcp dport $proxy_port accept\$"
if test -n "$dns"; then
	fam=$(family "$dns")
	test "$fam" = ip || has_v6=1
	pat=$(addr_pattern "$dns")
	rule "$fam daddr $dns udp dport 53 accept" "^$fam daddr $pat udp dport 53 accept\$"
	rule "$fam daddr $dns tcp dport 53 accept" "^$fam daddr $pat tcp dport 53 accept\$"
fi

allow=${INTUTIC_SANDBOX_ALLOW:-}
n_allow=0
if test -n "$allow"; then
	case $allow in
	,*|*,|*,,*)	die "INTUTIC_SANDBOX_ALLOW '$allow': an empty item" ;;
	esac
	rest=$allow
	while test -n "$rest"; do
		cidr=${rest%%,*}
		case $rest in
		*,*)	rest=${rest#*,} ;;
		*)	rest= ;;
		esac
		n_allow=$((n_allow + 1))
		test "$n_allow" -le "$ALLOW_MAX" ||
			die "INTUTIC_SANDBOX_ALLOW: more than $ALLOW_MAX items"
		case $cidr in
		*/)	die "INTUTIC_SANDBOX_ALLOW: bad prefix length in '$cidr'" ;;
		*/*)	net=${cidr%/*}; len=${cidr#*/} ;;
		*)	net=$cidr; len= ;;
		esac
		case $len in
		*[!0-9]*|0?*)
			die "INTUTIC_SANDBOX_ALLOW: bad prefix length in '$cidr'" ;;
		esac
		if is_ipv4 "$net"; then
			test "${len:-32}" -le 32 ||
				die "INTUTIC_SANDBOX_ALLOW: bad prefix length in '$cidr'"
			if test "${len:-32}" -lt 32; then
				i=$(ipv4_int "$net")
				mask=$(( (0xffffffff << (32 - len)) & 0xffffffff ))
				test $((i & mask)) = "$i" ||
					die "INTUTIC_SANDBOX_ALLOW: '$cidr' has host bits set"
				shown=$net/$len
			else
				shown=$net
			fi
			rule "ip daddr $cidr accept" \
			    "^ip daddr $(printf '%s\n' "$shown" | sed 's/\./\\./g') accept\$"
		elif is_ipv6 "$net"; then
			test "${len:-128}" -le 128 ||
				die "INTUTIC_SANDBOX_ALLOW: bad prefix length in '$cidr'"
			rule "ip6 daddr $cidr accept" '^ip6 daddr [0-9a-f:.]+(/[0-9]+)? accept$'
			has_v6=1
		else
			die "INTUTIC_SANDBOX_ALLOW: '$cidr' is not an IPv4 or IPv6 CIDR"
		fi
	done
fi

# An IPv6 destination needs neighbour discovery to reach its next hop
# (IPv4's ARP does not go through this table); ND packets stay on the link.
if test -n "$has_v6"; then
	rule 'icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept' \
	    '^icmpv6 type \{ nd-neighbor-solicit, nd-neighbor-advert \} accept$'
fi

# --- the table ----------------------------------------------------------------------

command -v nft >/dev/null 2>&1 || die "nft (nftables) is not in the image"
command -v capsh >/dev/null 2>&1 || die "capsh (libcap) is not in the image"

# One transaction: the table comes in whole or not at all (an older table
# of that name, from an earlier start of the same container, goes).
{
	printf '%s\n' "table $TABLE" "delete table $TABLE" "table $TABLE {" \
	    '	chain output {' \
	    '		type filter hook output priority 0; policy drop;'
	cat "$rules"
	printf '%s\n' '	}' '}'
} | nft -f - 2>"$rules.err" || {
	err=$(head -n 3 "$rules.err" | tr '\n' ' ')
	rm -f "$rules.err"
	die "cannot install the egress firewall (needs CAP_NET_ADMIN): $err"
}
rm -f "$rules.err"

# The check: the table is there with one chain, the output hook, policy
# drop, and exactly the rules asked for, no other.
# shellcheck disable=SC2086 # "inet intutic" is two words
listing=$(nft list table $TABLE 2>/dev/null) ||
	die "the egress firewall is not in place after installing it"
body=$(printf '%s\n' "$listing" | sed 's/^[[:space:]]*//; s/[[:space:]]*$//' |
    grep -v -e '^table inet intutic {$' -e '^chain output {$' -e '^}$' -e '^$')
test "$(printf '%s\n' "$listing" | grep -c '^[[:space:]]*chain ')" = 1 ||
	die "egress firewall check: table $TABLE does not have exactly one chain"
printf '%s\n' "$body" | grep -qx 'type filter hook output priority filter; policy drop;' ||
	printf '%s\n' "$body" | grep -qx 'type filter hook output priority 0; policy drop;' ||
	die "egress firewall check: the output chain does not drop by default"
got=$(printf '%s\n' "$body" | grep -vc '^type filter hook ')
test "$got" = "$n_rules" ||
	die "egress firewall check: $got rules listed, $n_rules installed"
while IFS= read -r want; do
	test "$(printf '%s\n' "$body" | grep -Ec -e "$want")" -ge 1 ||
		die "egress firewall check: no rule matching '$want'"
done <"$expect"
printf '%s\n' "$body" | grep -v '^type filter hook ' | grep -qv ' accept$' &&
	die "egress firewall check: a rule that does not end in accept"
rm -f "$rules" "$expect"
trap - EXIT

# --- the agent ------------------------------------------------------------------------

id "$SANDBOX_USER" >/dev/null 2>&1 || die "no user '$SANDBOX_USER' in the image"
# The home is a tmpfs the runtime mounted: docker can mount it owned by
# the user (uid=1000,gid=1000), podman (4.x) cannot, and then this needs
# CAP_CHOWN once, dropped below with the rest.
home_owner=$(ls -nd "$SANDBOX_HOME" 2>/dev/null | awk '{ print $3 ":" $4 }')
if test "$home_owner" != "$SANDBOX_UID:$SANDBOX_GID"; then
	chown "$SANDBOX_UID:$SANDBOX_GID" "$SANDBOX_HOME" 2>/dev/null ||
		die "the sandbox home '$SANDBOX_HOME' is owned by '${home_owner:-nobody}', not $SANDBOX_UID:$SANDBOX_GID: mount it with uid=$SANDBOX_UID,gid=$SANDBOX_GID (docker) or add CAP_CHOWN (podman)"
fi
workdir=${INTUTIC_SANDBOX_WORKDIR:-$SANDBOX_HOME}
case $workdir in
/*)	;;
*)	die "INTUTIC_SANDBOX_WORKDIR '$workdir': not an absolute path" ;;
esac
HOME=$SANDBOX_HOME
USER=$SANDBOX_USER
LOGNAME=$SANDBOX_USER
export HOME USER LOGNAME

# Drop every capability from the bounding set (needs SETPCAP, so first),
# clear the inheritable and ambient sets, no supplementary groups, then
# the gid and the uid: setuid() to a non-root uid empties the permitted
# and effective sets.  capsh then runs sh, which enters the work directory
# as the user (root without DAC_OVERRIDE cannot enter the user's 0700
# home) and execs the command.
# shellcheck disable=SC2016 # expanded by that sh
exec capsh --drop=all --inh= --noamb --groups= \
    --gid="$SANDBOX_GID" --uid="$SANDBOX_UID" \
    --shell=/bin/sh -- -c '
	cd "$1" 2>/dev/null || {
		printf "%s: cannot enter the work directory '"'%s'"'\n" "$0" "$1" >&2
		exit 125
	}
	shift
	exec "$@"' "$me" "$workdir" "$@"
