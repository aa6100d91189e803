#!/bin/sh
# intutic-entrypoint — the entrypoint of the intutic sandbox image.
#
# Run as root by `intutic exec --sandbox` with only NET_ADMIN, SETUID,
# SETGID, SETPCAP and CHOWN (for the home tmpfs).  It installs the egress
# table the launcher made (nftables, inet: IPv4 and IPv6; it drops whatever
# its rules do not accept), checks that what the kernel holds is exactly
# that table by asking nft for the ruleset in JSON, drops every capability
# (the bounding set included), becomes the unprivileged user sandbox and
# exec()s the command.  Whatever goes wrong before the exec, nothing runs:
# exit 125 with one line on stderr (2: no command).
#
# Environment (set by the launcher, values passed by name):
#   INTUTIC_SANDBOX_RULESET  the table inet intutic in nft syntax, as
#                            `intutic enforce container` prints it.
#                            Required.
#   INTUTIC_SANDBOX_WORKDIR  the directory to run in (a --sandbox-mount);
#                            default the sandbox home.
#   INTUTIC_SANDBOX_UID, INTUTIC_SANDBOX_GID
#                            the uid and gid the agent runs as (numbers;
#                            default 1000, the image's user sandbox): the
#                            launcher sets them to its own user's when a
#                            --sandbox-mount is writable, so that the
#                            workspace is writable and what the agent makes
#                            there is that user's on the host.
#   INTUTIC_SANDBOX_LOGIN    the agent's login files (--sandbox-login),
#                            relative to the home, space-separated: copied
#                            from /run/intutic-login (the launcher's copy)
#                            into the home, mode 0600, before the command,
#                            and back after it exits, for the launcher to
#                            put back in the user's home if they changed.
#   HTTP_PROXY, HTTPS_PROXY... are passed on untouched.
#
# POSIX sh: it runs on Alpine (busybox) and Debian (dash) bases alike.

PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH

SANDBOX_USER=sandbox
SANDBOX_UID=${INTUTIC_SANDBOX_UID:-1000}
SANDBOX_GID=${INTUTIC_SANDBOX_GID:-1000}
SANDBOX_HOME=/sandbox/home
EXIT_SETUP=125			# the sandbox could not be set up: nothing ran
EXIT_USAGE=2
RULESET_MAX=65536		# bytes of INTUTIC_SANDBOX_RULESET
TABLE='inet intutic'
TAB=$(printf '\t')

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

case $SANDBOX_UID:$SANDBOX_GID in
*[!0-9:]*|:*|*:)
	die "INTUTIC_SANDBOX_UID and INTUTIC_SANDBOX_GID: '$SANDBOX_UID:$SANDBOX_GID' is not UID:GID in numbers; unset them or set numbers" ;;
esac

# --- the table ------------------------------------------------------------------------

ruleset=${INTUTIC_SANDBOX_RULESET:-}
test -n "$ruleset" ||
	die "INTUTIC_SANDBOX_RULESET is not set (the egress table, as 'intutic enforce container --proxy ADDR:PORT' prints it): refusing to run without it"
test "${#ruleset}" -le "$RULESET_MAX" ||
	die "INTUTIC_SANDBOX_RULESET: more than $RULESET_MAX bytes"
command -v nft >/dev/null 2>&1 || die "nft (nftables) is not in the image"
command -v jq >/dev/null 2>&1 || die "jq is not in the image (it checks the table nft lists)"
command -v capsh >/dev/null 2>&1 || die "capsh (libcap) is not in the image"

# The rules asked for: the lines of the table's chains, as nft lists them
# (two tabs in, the chains' type lines aside), chain after chain.
want=$(printf '%s\n' "$ruleset" | sed -n "s/^$TAB$TAB//p" | grep -v '^type ')
test -n "$want" || die "INTUTIC_SANDBOX_RULESET: no rules (not a table as 'intutic enforce container' prints it)"

# One transaction: the table comes in whole or not at all (an older table
# of that name, from an earlier start of the same container, goes).
err=$(printf '%s\n' "table $TABLE" "delete table $TABLE" "$ruleset" |
    nft -f - 2>&1 >/dev/null) || {
	err=$(printf '%s\n' "$err" | head -n 3 | tr '\n' ' ')
	die "cannot install the egress firewall (needs CAP_NET_ADMIN): $err"
}

# The check, on the whole ruleset as nft gives it in JSON: one table, inet
# intutic, with the chain output (filter, the output hook, priority 0,
# policy drop) and perhaps the chain transparent (nat, the output hook,
# priority -100, policy accept: what goes to the proxy's transparent
# listener and DNS filter), whose rules, written back in nft's syntax, are
# those asked for, in that order, each ending in accept, or in the
# transparent chain in a dnat.
# shellcheck disable=SC2016 # a jq program
jq_check='
def fail(m): error("egress firewall check: " + m);
def value:
  if type == "object" and has("prefix") then "\(.prefix.addr)/\(.prefix.len)"
  elif type == "array" then map(tostring) | join(",")
  else tostring end;
def lhs:
  if has("payload") then "\(.payload.protocol) \(.payload.field)"
  elif has("meta") then
    (if .meta.key == "oif" or .meta.key == "oifname" then .meta.key
     else "meta \(.meta.key)" end)
  elif has("ct") then "ct \(.ct.key)"
  else fail("a rule matches on \(keys[0])") end;
def expr:
  if has("match") then
    .match | (.left | lhs) as $l |
    if .op != "==" and .op != "in" then fail("a rule compares with \(.op)")
    elif $l == "oif" or $l == "oifname" then "\($l) \"\(.right)\""
    else "\($l) \(.right | value)" end
  elif has("accept") then "accept"
  elif has("dnat") then
    .dnat | if .family == "ip" then "dnat ip to \(.addr):\(.port)"
    elif .family == "ip6" then "dnat ip6 to [\(.addr)]:\(.port)"
    else fail("a dnat of family \(.family)") end
  else fail("a rule has a \(keys[0]) statement") end;
[.nftables[] | keys[0]] as $kinds |
($kinds - ["metainfo", "table", "chain", "rule"]) as $other |
if ($other | length) > 0 then fail("the ruleset holds a \($other[0])") else . end |
[.nftables[] | .table // empty] as $t |
if ($t | length) != 1 or $t[0].family != "inet" or $t[0].name != "intutic" then
  fail("the ruleset is not the one table inet intutic")
else . end |
[.nftables[] | .chain // empty] as $c |
if ($c | length) < 1 or ($c | length) > 2 then
  fail("table inet intutic does not have one chain, or two")
elif $c[0].name != "output" or $c[0].type != "filter" or $c[0].hook != "output" or $c[0].prio != 0 then
  fail("its first chain is not output, a filter on the output hook at priority 0")
elif $c[0].policy != "drop" then fail("the output chain does not drop by default")
elif ($c | length) == 2 and ($c[1].name != "transparent" or $c[1].type != "nat" or
    $c[1].hook != "output" or $c[1].prio != -100 or $c[1].policy != "accept") then
  fail("its second chain is not transparent, a nat on the output hook at priority -100")
else . end |
.nftables[] | .rule // empty |
if (.expr[-1] | has("accept")) or (.chain == "transparent" and (.expr[-1] | has("dnat")))
then . else fail("a rule does not end in accept") end |
([.expr[] | expr] | join(" ")) +
  (if .comment then " comment \"\(.comment)\"" else "" end)
'
got=$(nft -j list ruleset 2>&1 | jq -r "$jq_check" 2>&1) || {
	got=$(printf '%s\n' "$got" | sed 's/^jq: error ([^)]*): //' | head -n 1)
	die "${got:-egress firewall check: nft cannot list the ruleset in JSON}"
}
if test "$got" != "$want"; then
	first=$(printf '%s\n' "$got" | awk -v want="$want" '
	    BEGIN { n = split(want, w, "\n") }
	    $0 != w[NR] { print "rule " NR ": listed \"" $0 "\", asked for \"" w[NR] "\""; f = 1; exit }
	    END { if (!f && NR != n) print NR " rules listed, " n " asked for" }')
	die "egress firewall check: the table is not the one asked for: $first"
fi

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
login=${INTUTIC_SANDBOX_LOGIN:-}
case $login in
*[!A-Za-z0-9._/\ -]*|*..*|/*|*\ /*)
	die "INTUTIC_SANDBOX_LOGIN '$login': not home-relative paths" ;;
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
# home) and execs the command; with login files, copies them in first and
# out after the command (which then is its child, not exec()ed).
# shellcheck disable=SC2016 # expanded by that sh
exec capsh --drop=all --inh= --noamb --groups= \
    --gid="$SANDBOX_GID" --uid="$SANDBOX_UID" \
    --shell=/bin/sh -- -c '
	login=$2 from=/run/intutic-login
	umask 077
	for f in $login; do
		test -f "$from/$f" || continue
		case $f in */*) mkdir -p "$HOME/${f%/*}" ;; esac
		cp "$from/$f" "$HOME/$f" && chmod 600 "$HOME/$f" || {
			printf "%s: cannot copy the login file %s in\n" "$0" "$f" >&2
			exit 125
		}
	done
	cd "$1" 2>/dev/null || {
		printf "%s: cannot enter the work directory '"'%s'"'\n" "$0" "$1" >&2
		exit 125
	}
	shift 2
	test -z "$login" && exec "$@"
	"$@"
	rc=$?
	for f in $login; do
		test -f "$HOME/$f" && test ! -L "$HOME/$f" &&
			! cmp -s "$HOME/$f" "$from/$f" &&
			cp "$HOME/$f" "$from/$f.new" && mv -f "$from/$f.new" "$from/$f"
	done
	exit "$rc"' "$me" "$workdir" "$login" "$@"
