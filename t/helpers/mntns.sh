#!/bin/sh
# mntns.sh [--dev-log DIR] [--journal DIR] -- COMMAND [ARG...]
#
# Runs COMMAND (exec'd: it keeps this script's pid) in a mount namespace of
# its own (unshare -m, private propagation), so that what the test binds is
# where the system's logging sockets would be, and the machine's /dev and
# /run stay untouched:
#   --dev-log DIR   /dev becomes DIR, holding /dev's null, zero, full,
#                   random and urandom bound in: DIR/log is then /dev/log
#                   (a socket the test binds there, before or after).
#   --journal DIR   /run/systemd gets a tmpfs of its own and DIR is bound at
#                   /run/systemd/journal: DIR/socket is journald's socket.
# Exits 125 when the namespace or a mount cannot be made.
dev= journal=
while test $# -gt 0; do
	case $1 in
	--dev-log)	dev=$2; shift 2 ;;
	--journal)	journal=$2; shift 2 ;;
	--)		shift; break ;;
	*)		echo "mntns.sh: unknown argument '$1'" >&2; exit 125 ;;
	esac
done
test $# -ge 1 || { echo "mntns.sh: no COMMAND" >&2; exit 125; }
# shellcheck disable=SC2016 # the inner sh expands them
exec unshare -m --propagation private -- sh -c '
	dev=$1 journal=$2
	shift 2
	if test -n "$dev"; then
		for n in null zero full random urandom; do
			: >"$dev/$n" && mount --bind "/dev/$n" "$dev/$n" || exit 125
		done
		mount --rbind "$dev" /dev || exit 125
	fi
	if test -n "$journal"; then
		mkdir -p /run/systemd 2>/dev/null
		mount -t tmpfs -o mode=0755,size=64k tmpfs /run/systemd &&
		mkdir /run/systemd/journal &&
		mount --bind "$journal" /run/systemd/journal || exit 125
	fi
	exec "$@"' sh "$dev" "$journal" "$@"
