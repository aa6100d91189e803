#!/bin/bash
# sandbox/connect.sh — `intutic connect` for the inside of a sandbox, where
# the launcher's binary is not: ssh's ProxyCommand.  `intutic exec
# --sandbox` mounts it read-only at /usr/local/libexec/intutic-connect in
# every container (whatever its image: it needs only bash and cat) and
# sets GIT_SSH_COMMAND to
#
#	ssh -o 'ProxyCommand=/usr/local/libexec/intutic-connect %h %p'
#
# (unless -e GIT_SSH_COMMAND passed one); scripts/mkguest installs it in a
# microVM's guest at the same path.
#
#	intutic-connect HOST PORT
#
# Opens a CONNECT tunnel to HOST:PORT through the proxy that
# INTUTIC_PROXY_URL names (http://HOST:PORT, as the launcher sets it), with
# the run's credentials from HTTPS_PROXY, ALL_PROXY or HTTP_PROXY (the
# user and password of http://RUN:TOKEN@HOST:PORT, when INTUTIC_RUN names
# that run), and relays standard input and output over it until the
# other end closes.  The proxy decides and audits it as any CONNECT of the
# run.  Exit status: 0 when the tunnel ended, 1 when the proxy refused it
# (its status and reason on stderr, as `intutic connect` says them), 2 a
# usage error, 3 when the proxy could not be reached or did not answer
# within 30 seconds (INTUTIC_CONNECT_TIMEOUT).
#
# bash, for /dev/tcp; `read` takes the proxy's answer a byte at a time
# from the socket, so no byte of the tunnel is read with the head.
set -u

me=intutic-connect
say() { printf '%s: %s\n' "$me" "$*" >&2; }

[ $# -eq 2 ] || { say "usage: $me HOST PORT (ssh: ProxyCommand=$me %h %p)"; exit 2; }
host=$1 port=$2
case $host in
''|-*|*[!A-Za-z0-9.:_\[\]-]*) say "'$host' is not a host name or address"; exit 2 ;;
esac
case $port in
''|*[!0-9]*) say "'$port' is not a port"; exit 2 ;;
esac
if [ "${#port}" -gt 5 ] || [ "$port" -lt 1 ] || [ "$port" -gt 65535 ]; then
	say "'$port' is not a port (1 to 65535)"
	exit 2
fi
case $host in
*:*) case $host in \[*\]) ;; *) host="[$host]" ;; esac ;;
esac

proxy=${INTUTIC_PROXY_URL:-}
[ -n "$proxy" ] || { say "INTUTIC_PROXY_URL is not set: run the command under intutic exec"; exit 2; }
rest=${proxy#http://}
[ "$rest" != "$proxy" ] || { say "INTUTIC_PROXY_URL '$proxy' is not http://HOST:PORT"; exit 2; }
rest=${rest%%/*}
phost=${rest%:*} pport=${rest##*:}
phost=${phost#\[} phost=${phost%\]}
case $pport in ''|*[!0-9]*) say "INTUTIC_PROXY_URL '$proxy' has no port"; exit 2 ;; esac

# The run's credentials, from the first proxy variable that holds them for
# this proxy.
auth=
if [ -n "${INTUTIC_RUN:-}" ]; then
	for v in "${HTTPS_PROXY:-}" "${ALL_PROXY:-}" "${HTTP_PROXY:-}"; do
		v=${v#http://}
		case $v in
		"$INTUTIC_RUN":*@"$rest"|"$INTUTIC_RUN":*@"$rest"/) ;;
		*) continue ;;
		esac
		auth=$(printf '%s' "${v%@*}" | base64 -w 0 2>/dev/null ||
		    printf '%s' "${v%@*}" | base64 | tr -d '\n')
		break
	done
	[ -n "$auth" ] || {
		say "INTUTIC_RUN is '$INTUTIC_RUN', but no proxy variable (HTTPS_PROXY, ALL_PROXY, HTTP_PROXY) holds its credentials for $rest"
		exit 2
	}
fi

timeout=${INTUTIC_CONNECT_TIMEOUT:-30}
case $timeout in ''|*[!0-9]*|0) timeout=30 ;; esac
if ! exec 3<>"/dev/tcp/$phost/$pport"; then
	say "cannot reach the proxy at $proxy"
	exit 3
fi
{
	printf 'CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n' "$host" "$port" "$host" "$port"
	[ -z "$auth" ] || printf 'Proxy-Authorization: Basic %s\r\n' "$auth"
	printf '\r\n'
} >&3

if ! IFS= read -r -t "$timeout" line <&3; then
	say "the proxy at $proxy did not answer the CONNECT to $host:$port within ${timeout}s"
	exit 3
fi
line=${line%$'\r'}
status=${line#HTTP/1.[01] }
status=${status%% *}
xerr='' clen=0 n=0
while IFS= read -r -t "$timeout" h <&3; do
	h=${h%$'\r'}
	[ -n "$h" ] || break
	n=$((n + 1))
	[ "$n" -le 100 ] || { say "the proxy's answer has more than 100 header lines"; exit 3; }
	case ${h,,} in
	x-intutic-error:*) xerr=${h#*:}; xerr=${xerr# } ;;
	content-length:*) clen=${h#*:}; clen=${clen# } ;;
	esac
done
if [ "$status" != 200 ]; then
	body=
	case $clen in ''|*[!0-9]*) clen=0 ;; esac
	[ "$clen" -le 512 ] || clen=512
	[ "$clen" -eq 0 ] || IFS= read -r -t 5 -N "$clen" body <&3 || true
	body=${body%%$'\n'*}
	body=${body%$'\r'}
	body=${body#intutic: }
	body=$(printf '%s' "$body" | tr -cd '[:print:]')
	xerr=$(printf '%s' "${xerr:-no reason given}" | tr -cd '[:print:]')
	say "the proxy at $proxy refused $host:$port (${status:-no status}, $xerr)${body:+: $body}"
	case $status in 5*) exit 3 ;; *) exit 1 ;; esac
fi

# The tunnel: the proxy's side to standard output in the background, then
# standard input to the proxy; the proxy's side decides when it ends.
cat <&3 &
down=$!
cat >&3
wait "$down"
