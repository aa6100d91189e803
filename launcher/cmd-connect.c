/*
 * cmd-connect.c — `intutic connect HOST PORT`: a CONNECT tunnel through the
 * running proxy, relayed between standard input and output and the tunnel,
 * as ssh's ProxyCommand wants it (`ProxyCommand intutic connect %h %p`).
 *
 * The proxy is found as `intutic exec` finds it (--proxy,
 * INTUTIC_PROXY_URL, the state file, the default address).  Under `intutic
 * exec` (INTUTIC_RUN set) the tunnel is the run's: the credentials of the
 * proxy URL exec put in the proxy variables go with the CONNECT, so the
 * run's policy decides it and its audit records carry the run.  Without
 * them such a tunnel would be decided by the operator's rules alone, which
 * a run may have narrowed: it is refused instead.
 *
 * One process, one connection, poll(2): the set-up (connect, request,
 * answer head) has one deadline; the relay then has none (the proxy's idle
 * timeout ends a silent tunnel).  Each direction has a buffer of its own;
 * a full one stops reading its source (backpressure), and the end of
 * standard input becomes shutdown(SHUT_WR) on the tunnel once the buffer
 * is written (half-close), the end of the tunnel the close of standard
 * output.  It ends when both directions have.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/types.h>

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "intutic.h"
#include "locate.h"
#include "log.h"

#define CONNECT_TIMEOUT_S	30	/* the set-up: connect, ask, the answer */
#define CONNECT_TIMEOUT_S_MAX	3600
#define CONNECT_HOST_MAX	255	/* bytes of HOST */
#define CONNECT_CRED_MAX	256	/* bytes of RUN:TOKEN */
#define CONNECT_HEAD_MAX	(16 * 1024)	/* bytes of the answer's head */
#define CONNECT_BODY_MAX	1024	/* bytes of a refusal's body read */
#define CONNECT_REASON_MAX	300	/* bytes of the reason shown */
#define CONNECT_BUF		(64 * 1024)	/* each direction's buffer */
/*
 * One write to standard output: at most PIPE_BUF, which a pipe that
 * polled writable takes whole, so a blocking descriptor never blocks.
 */
#define CONNECT_WRITE_MAX	4096

/* Exit statuses besides 0, EXIT_USAGE and EXIT_CANNOT_RUN (intutic-connect(1)). */
#define CONNECT_EXIT_BROKEN	1	/* the tunnel failed once made */
#define CONNECT_EXIT_REFUSED	3	/* the proxy refused it (4xx) */
#define CONNECT_EXIT_UNREACHED	4	/* the proxy could not reach it (5xx) */

static int	cmd_connect_exec(int, char **);

const struct cmd_entry cmd_connect_entry = {
	.name = "connect",
	.summary = "open a tunnel through the proxy on stdin and stdout (ssh)",
	.help =
	    "usage: intutic connect [--proxy URL] [--state-dir DIR]\n"
	    "                       [--timeout SECONDS] HOST PORT\n"
	    "\n"
	    "Opens a CONNECT tunnel to HOST:PORT through the running intutic\n"
	    "proxy and relays standard input into it and what comes out of it\n"
	    "to standard output, until both have ended: ssh's ProxyCommand\n"
	    "(ssh -o ProxyCommand='intutic connect %h %p' HOST).  Under\n"
	    "intutic exec the tunnel is the run's (the credentials exec put\n"
	    "in HTTPS_PROXY), decided by the run's policy and audited with its\n"
	    "id.  A refusal is one line with the proxy's reason.\n"
	    "\n"
	    "--proxy URL         The proxy, http://HOST:PORT (default:\n"
	    "                    INTUTIC_PROXY_URL, the state file, 127.0.0.1:8877).\n"
	    "--state-dir DIR     Where intutic start wrote its state file.\n"
	    "--timeout SECONDS   How long the proxy may take to connect and\n"
	    "                    answer (default 30).\n"
	    "\n"
	    "Exit 0: the tunnel was made and both directions ended.  1: it\n"
	    "broke once made.  2: usage error.  3: the proxy refused it (403:\n"
	    "policy; 407: credentials).  4: the proxy could not reach HOST:PORT\n"
	    "(502, 504).  125: no proxy answered, or not as a proxy, or the\n"
	    "run's credentials are missing.\n",
	.exec = cmd_connect_exec,
};

/* Where exec puts the run's proxy URL, http://RUN:TOKEN@HOST:PORT. */
static const char *const connect_proxy_vars[] = {
	"HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "HTTP_PROXY",
	"http_proxy",
};
#define CONNECT_NVARS	(sizeof(connect_proxy_vars) / \
	sizeof(connect_proxy_vars[0]))

/* One direction of the relay: bytes read, not yet written. */
struct connect_buf {
	char	 b[CONNECT_BUF];
	size_t	 off, len;
};

/* The tunnel's set-up: where to, through what, until when. */
struct connect_ctx {
	const char		*host;		/* HOST as given */
	const char		*port;		/* PORT as given */
	char			 authority[CONNECT_HOST_MAX + 16];
	struct proxy_loc	 loc;
	char			 cred[CONNECT_CRED_MAX];	/* "" for none */
	struct timespec		 deadline;
	int			 fd;
};

/* ------------------------------------------------------------ arguments */

/* Text from elsewhere made safe to print: printable ASCII, else '?'. */
static void
connect_printable(char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			*s = '?';
}

static int
connect_timeout_arg(const char *s, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0' || errno != 0 || v < 1 ||
	    v > CONNECT_TIMEOUT_S_MAX)
		return cmd_usage_error(&cmd_connect_entry, "connect: --timeout: "
		    "'%s' is not a number of seconds from 1 to %d", s,
		    CONNECT_TIMEOUT_S_MAX);
	*out = (int)v;
	return 0;
}

/*
 * HOST and PORT into c->authority ("host:port", an IPv6 address in
 * brackets).  HOST is the proxy's to judge (it canonicalises and decides);
 * here only what could not be one request line: empty, too long, a space,
 * a control byte, or a byte that would end the authority.  0 or a usage
 * error.
 */
static int
connect_target(struct connect_ctx *c)
{
	const char *h = c->host, *p = c->port;
	char shown[CONNECT_HOST_MAX + 1], *end;
	size_t i, n = strlen(h);
	long port;

	if (n == 0)
		return cmd_usage_error(&cmd_connect_entry, "connect: the HOST "
		    "is empty");
	if (n > CONNECT_HOST_MAX)
		return cmd_usage_error(&cmd_connect_entry, "connect: the HOST "
		    "is longer than %d bytes", CONNECT_HOST_MAX);
	for (i = 0; i < n; i++)
		if ((unsigned char)h[i] <= 0x20 || (unsigned char)h[i] >= 0x7f ||
		    strchr("/?#@\\\"", h[i]) != NULL) {
			/* said with '?' for what a terminal would act on */
			snprintf(shown, sizeof(shown), "%s", h);
			connect_printable(shown);
			return cmd_usage_error(&cmd_connect_entry, "connect: "
			    "'%s' is not a host name or address (a name in "
			    "ASCII, xn-- for others; an IPv6 address in "
			    "brackets or not)", shown);
		}
	errno = 0;
	port = strtol(p, &end, 10);
	if (*p < '0' || *p > '9' || *end != '\0' || errno != 0 || port < 1 ||
	    port > 65535) {
		snprintf(shown, sizeof(shown), "%s", p);
		connect_printable(shown);
		return cmd_usage_error(&cmd_connect_entry, "connect: the PORT "
		    "'%s' is not a number from 1 to 65535", shown);
	}
	if (h[0] != '[' && strchr(h, ':') != NULL)
		snprintf(c->authority, sizeof(c->authority), "[%s]:%ld", h,
		    port);
	else
		snprintf(c->authority, sizeof(c->authority), "%s:%ld", h, port);
	return 0;
}

/*
 * The run's credentials, when this runs under `intutic exec`: the RUN:TOKEN
 * of the first proxy variable that holds http://RUN:TOKEN@HOST:PORT with
 * RUN the run's (INTUTIC_RUN) and HOST:PORT the proxy's, into c->cred.  No
 * run: no credentials, 0.  A run without its credentials for this proxy:
 * -1 (said).
 */
static int
connect_credentials(struct connect_ctx *c)
{
	const char *run = getenv("INTUTIC_RUN"), *v, *at, *colon;
	char where[LOCATE_URL_MAX];
	size_t i, rlen;

	c->cred[0] = '\0';
	if (run == NULL || *run == '\0')
		return 0;
	rlen = strlen(run);
	snprintf(where, sizeof(where), "%s:%u", c->loc.host, c->loc.port);
	for (i = 0; i < CONNECT_NVARS; i++) {
		if ((v = getenv(connect_proxy_vars[i])) == NULL ||
		    strncasecmp(v, "http://", 7) != 0)
			continue;
		v += 7;
		if ((at = strchr(v, '@')) == NULL ||
		    (colon = memchr(v, ':', (size_t)(at - v))) == NULL ||
		    (size_t)(colon - v) != rlen || strncmp(v, run, rlen) != 0 ||
		    (size_t)(at - v) >= sizeof(c->cred))
			continue;
		if (strcmp(at + 1, where) != 0 && !(strncmp(at + 1, where,
		    strlen(where)) == 0 && strcmp(at + 1 + strlen(where),
		    "/") == 0))
			continue;
		memcpy(c->cred, v, (size_t)(at - v));
		c->cred[at - v] = '\0';
		return 0;
	}
	error("INTUTIC_RUN is '%s', but no proxy variable (HTTPS_PROXY, "
	    "ALL_PROXY, HTTP_PROXY) holds its credentials for the proxy at %s "
	    "(%s), and a tunnel without them would not be the run's: run "
	    "the command under `intutic exec` as it is, or unset INTUTIC_RUN "
	    "outside a run", run, c->loc.url, c->loc.source);
	return -1;
}

/* RFC 4648 base64 of src (no line breaks) into dst; -1 when it does not fit. */
static int
connect_base64(const char *src, char *dst, size_t dstlen)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *s = (const unsigned char *)src;
	size_t n = strlen(src), i, o = 0;
	unsigned long w;

	if ((n + 2) / 3 * 4 + 1 > dstlen)
		return -1;
	for (i = 0; i < n; i += 3) {
		w = (unsigned long)s[i] << 16;
		if (i + 1 < n)
			w |= (unsigned long)s[i + 1] << 8;
		if (i + 2 < n)
			w |= s[i + 2];
		dst[o++] = tab[(w >> 18) & 63];
		dst[o++] = tab[(w >> 12) & 63];
		dst[o++] = i + 1 < n ? tab[(w >> 6) & 63] : '=';
		dst[o++] = i + 2 < n ? tab[w & 63] : '=';
	}
	dst[o] = '\0';
	return 0;
}

/* ------------------------------------------------------------ the set-up */

/* Milliseconds left until c->deadline (0 when past it). */
static int
connect_left_ms(const struct connect_ctx *c)
{
	struct timespec now;
	long long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (long long)(c->deadline.tv_sec - now.tv_sec) * 1000 +
	    (c->deadline.tv_nsec - now.tv_nsec) / 1000000;
	return ms <= 0 ? 0 : (int)ms;
}

/*
 * Waits until c->fd has `events` (POLLIN, POLLOUT), within the deadline:
 * 0; -1 with errno ETIMEDOUT when the time is over.
 */
static int
connect_wait(const struct connect_ctx *c, short events)
{
	struct pollfd p = { c->fd, events, 0 };
	int n;

	for (;;) {
		if ((n = poll(&p, 1, connect_left_ms(c))) > 0)
			return 0;
		if (n == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (errno != EINTR)
			return -1;
	}
}

/*
 * Connects to the proxy (each of its addresses in turn, non-blocking,
 * within the deadline) into c->fd: 0, or -1 with why in err.
 */
static int
connect_proxy(struct connect_ctx *c, char *err, size_t errlen)
{
	struct addrinfo hints, *res = NULL, *ai;
	char host[LOCATE_HOST_MAX], port[8];
	socklen_t len;
	size_t n;
	int r, soerr = 0, saved = EHOSTUNREACH;

	/* the URL's form of an IPv6 address has brackets; getaddrinfo's not */
	n = strlen(c->loc.host);
	if (c->loc.host[0] == '[' && n > 2 && c->loc.host[n - 1] == ']')
		snprintf(host, sizeof(host), "%.*s", (int)(n - 2),
		    c->loc.host + 1);
	else
		snprintf(host, sizeof(host), "%s", c->loc.host);
	snprintf(port, sizeof(port), "%u", c->loc.port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	if ((r = getaddrinfo(host, port, &hints, &res)) != 0) {
		snprintf(err, errlen, "cannot resolve '%s': %s", host,
		    gai_strerror(r));
		return -1;
	}
	for (ai = res; ai != NULL && saved != ETIMEDOUT; ai = ai->ai_next) {
		c->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, ai->ai_protocol);
		if (c->fd == -1) {
			saved = errno;
			continue;
		}
		if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			freeaddrinfo(res);
			return 0;
		}
		saved = errno;
		if (saved == EINPROGRESS) {
			saved = connect_wait(c, POLLOUT) != 0 ? errno : 0;
			len = sizeof(soerr);
			if (saved == 0 && getsockopt(c->fd, SOL_SOCKET,
			    SO_ERROR, &soerr, &len) != 0)
				saved = errno;
			else if (saved == 0 && soerr != 0)
				saved = soerr;
			if (saved == 0) {
				freeaddrinfo(res);
				return 0;
			}
		}
		close(c->fd);
		c->fd = -1;
	}
	freeaddrinfo(res);
	snprintf(err, errlen, "%s", saved == ETIMEDOUT ? "no connection "
	    "within the timeout" : strerror(saved));
	return -1;
}

/* Writes all of buf to c->fd within the deadline: 0, or -1 and errno. */
static int
connect_send(const struct connect_ctx *c, const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = send(c->fd, buf, len, MSG_NOSIGNAL);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		} else if (n == -1 && errno == EAGAIN) {
			if (connect_wait(c, POLLOUT) != 0)
				return -1;
		} else if (n == -1 && errno != EINTR)
			return -1;
	}
	return 0;
}

/*
 * Reads from c->fd into buf (len bytes free) within the deadline: the
 * bytes read, 0 at the end, -1 and errno.
 */
static ssize_t
connect_recv(const struct connect_ctx *c, char *buf, size_t len)
{
	ssize_t n;

	for (;;) {
		if ((n = recv(c->fd, buf, len, 0)) >= 0)
			return n;
		if (errno == EAGAIN) {
			if (connect_wait(c, POLLIN) != 0)
				return -1;
		} else if (errno != EINTR)
			return -1;
	}
}

/*
 * The value of the header `name` in the head (the lines after the status
 * line, each ending in CRLF), its blanks trimmed, into out: 0, or -1 when
 * it has none.
 */
static int
connect_header(const char *head, const char *name, char *out, size_t outlen)
{
	const char *l = strstr(head, "\r\n"), *e, *v;
	size_t n = strlen(name);

	while (l != NULL && l[2] != '\r') {
		l += 2;
		if ((e = strstr(l, "\r\n")) == NULL)
			break;
		if ((size_t)(e - l) > n && strncasecmp(l, name, n) == 0 &&
		    l[n] == ':') {
			for (v = l + n + 1; v < e && (*v == ' ' || *v == '\t');
			    v++)
				;
			while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
				e--;
			snprintf(out, outlen, "%.*s", (int)(e - v), v);
			return 0;
		}
		l = e;
	}
	return -1;
}

/*
 * A refusal: the body's first line (the proxy's own words, its "intutic: "
 * dropped), read within the deadline and CONNECT_BODY_MAX, else the
 * X-Intutic-Error, said in one line.  Returns the exit status.
 */
static int
connect_refused(struct connect_ctx *c, int status, const char *head,
    const char *rest, size_t restlen)
{
	char body[CONNECT_BODY_MAX + 1], xerr[64], clen[32], *nl, *line;
	size_t len = 0, want = CONNECT_BODY_MAX;
	ssize_t n;

	if (connect_header(head, "Content-Length", clen, sizeof(clen)) == 0 &&
	    strspn(clen, "0123456789") == strlen(clen) && strlen(clen) < 6 &&
	    clen[0] != '\0' && strtoul(clen, NULL, 10) < want)
		want = strtoul(clen, NULL, 10);
	len = restlen < want ? restlen : want;
	memcpy(body, rest, len);
	while (len < want && memchr(body, '\n', len) == NULL &&
	    (n = connect_recv(c, body + len, want - len)) > 0)
		len += (size_t)n;
	body[len] = '\0';
	if ((nl = strchr(body, '\n')) != NULL)
		*nl = '\0';
	if (nl != NULL && nl > body && nl[-1] == '\r')
		nl[-1] = '\0';
	line = strncmp(body, "intutic: ", 9) == 0 ? body + 9 : body;
	if (strlen(line) > CONNECT_REASON_MAX)
		line[CONNECT_REASON_MAX] = '\0';
	if (connect_header(head, "X-Intutic-Error", xerr, sizeof(xerr)) != 0)
		snprintf(xerr, sizeof(xerr), "%s", "no reason given");
	connect_printable(line);
	connect_printable(xerr);
	error("the proxy at %s refused %s (%d, %s)%s%s", c->loc.url,
	    c->authority, status, xerr, *line != '\0' ? ": " : "", line);
	return status >= 500 ? CONNECT_EXIT_UNREACHED : CONNECT_EXIT_REFUSED;
}

/*
 * CONNECT, and the answer's head.  0 when the tunnel is open, with the
 * bytes that came after the head in down; else the exit status, said.
 */
static int
connect_ask(struct connect_ctx *c, struct connect_buf *down)
{
	char req[CONNECT_HOST_MAX * 2 + CONNECT_CRED_MAX * 2 + 256];
	char auth[CONNECT_CRED_MAX * 2 + 64], b64[CONNECT_CRED_MAX * 2];
	char head[CONNECT_HEAD_MAX + 1], *end = NULL;
	size_t len = 0;
	ssize_t n;
	int status, r;

	auth[0] = '\0';
	if (c->cred[0] != '\0') {
		if (connect_base64(c->cred, b64, sizeof(b64)) != 0)
			return EXIT_CANNOT_RUN;		/* cannot be: bounded */
		snprintf(auth, sizeof(auth), "Proxy-Authorization: Basic %s\r\n",
		    b64);
		explicit_bzero(b64, sizeof(b64));
	}
	snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s"
	    "User-Agent: intutic-connect/%s\r\n\r\n", c->authority,
	    c->authority, auth, PACKAGE_VERSION);
	explicit_bzero(auth, sizeof(auth));
	r = connect_send(c, req, strlen(req));
	explicit_bzero(req, sizeof(req));
	if (r != 0) {
		error("cannot ask the proxy at %s for %s: %s", c->loc.url,
		    c->authority, errno == ETIMEDOUT ? "timed out" :
		    strerror(errno));
		return EXIT_CANNOT_RUN;
	}
	while (end == NULL) {
		if (len == CONNECT_HEAD_MAX) {
			error("the proxy at %s answered with a head longer than "
			    "%d bytes: is it an intutic proxy?", c->loc.url,
			    CONNECT_HEAD_MAX);
			return EXIT_CANNOT_RUN;
		}
		if ((n = connect_recv(c, head + len, CONNECT_HEAD_MAX - len)) <=
		    0) {
			error("the proxy at %s %s before it answered for %s%s",
			    c->loc.url, n == 0 ? "closed the connection" :
			    errno == ETIMEDOUT ? "took longer than the timeout" :
			    strerror(errno), c->authority, n < 0 &&
			    errno == ETIMEDOUT ? " (--timeout)" : "");
			return EXIT_CANNOT_RUN;
		}
		len += (size_t)n;
		head[len] = '\0';
		if (memchr(head, '\0', len) == NULL)
			end = strstr(head, "\r\n\r\n");
		else
			break;
	}
	if (end == NULL || (strncmp(head, "HTTP/1.1 ", 9) != 0 &&
	    strncmp(head, "HTTP/1.0 ", 9) != 0) ||
	    strspn(head + 9, "0123456789") != 3 ||
	    (head[12] != ' ' && head[12] != '\r')) {
		error("the answer of %s is not HTTP: is it an intutic proxy?",
		    c->loc.url);
		return EXIT_CANNOT_RUN;
	}
	status = (head[9] - '0') * 100 + (head[10] - '0') * 10 +
	    (head[11] - '0');
	end += 4;
	if (status / 100 != 2) {
		end[-2] = '\0';		/* the head's lines, each with its CRLF */
		return connect_refused(c, status, head, end,
		    len - (size_t)(end - head));
	}
	/* what followed the head is the tunnel's first bytes */
	down->off = 0;
	down->len = len - (size_t)(end - head);
	memcpy(down->b, end, down->len);
	return 0;
}

/* ------------------------------------------------------------ the relay */

/*
 * The room at the end of b; its bytes moved to its start first when that
 * leaves less than a quarter of it and the move gives at least as much.
 */
static size_t
connect_room(struct connect_buf *b)
{
	if (b->off >= CONNECT_BUF / 4 &&
	    CONNECT_BUF - b->off - b->len < CONNECT_BUF / 4) {
		memmove(b->b, b->b + b->off, b->len);
		b->off = 0;
	}
	return CONNECT_BUF - b->off - b->len;
}

/* Closes standard output, the reader's end (a socket: its write side). */
static void
connect_close_out(void)
{
	if (shutdown(STDOUT_FILENO, SHUT_WR) == -1)
		close(STDOUT_FILENO);
}

/*
 * Relays standard input to the tunnel and the tunnel to standard output
 * until both directions have ended.  Returns the exit status.
 */
static int
connect_relay(struct connect_ctx *c, struct connect_buf *up,
    struct connect_buf *down)
{
	struct pollfd p[3];
	struct pollfd *pin, *pout, *psock;
	unsigned long long got = down->len;
	int in_eof = 0, sock_eof = 0, shut_wr = 0, out_closed = 0;
	size_t np, up_room, down_room;
	ssize_t n;

	up->off = up->len = 0;
	for (;;) {
		if (in_eof && up->len == 0 && !shut_wr) {
			shutdown(c->fd, SHUT_WR);
			shut_wr = 1;
		}
		if (sock_eof && down->len == 0 && !out_closed) {
			connect_close_out();
			out_closed = 1;
			if (got == 0 && !in_eof)
				warn_msg("the tunnel to %s ended before any "
				    "byte came through it: the far end closed "
				    "it, or the proxy did (`intutic log "
				    "--denied` says why)", c->authority);
		}
		if (shut_wr && out_closed)
			return 0;

		np = 0;
		pin = pout = NULL;
		psock = &p[np++];
		psock->fd = c->fd;
		psock->events = 0;
		down_room = sock_eof ? 0 : connect_room(down);
		up_room = in_eof ? 0 : connect_room(up);
		if (down_room > 0)
			psock->events |= POLLIN;
		if (up->len > 0)
			psock->events |= POLLOUT;
		/* nothing wanted of it now: its POLLHUP or POLLERR would spin */
		if (psock->events == 0)
			psock->fd = -1;
		if (up_room > 0) {
			pin = &p[np++];
			pin->fd = STDIN_FILENO;
			pin->events = POLLIN;
		}
		if (down->len > 0) {
			pout = &p[np++];
			pout->fd = STDOUT_FILENO;
			pout->events = POLLOUT;
		}
		if (poll(p, (nfds_t)np, -1) == -1) {
			if (errno == EINTR)
				continue;
			error("poll: %s", strerror(errno));
			return CONNECT_EXIT_BROKEN;
		}

		if (pin != NULL && pin->revents != 0) {
			n = pin->revents & POLLNVAL ? 0 : read(STDIN_FILENO,
			    up->b + up->off + up->len, up_room);
			if (n > 0)
				up->len += (size_t)n;
			else if (n == 0)
				in_eof = 1;
			else if (errno != EINTR && errno != EAGAIN) {
				error("cannot read standard input: %s",
				    strerror(errno));
				return CONNECT_EXIT_BROKEN;
			}
		}
		/* a full buffer reads nothing: recv() of 0 bytes is no end */
		if (down_room > 0 && psock->revents & (POLLIN | POLLHUP |
		    POLLERR)) {
			n = recv(c->fd, down->b + down->off + down->len,
			    down_room, 0);
			if (n > 0) {
				down->len += (size_t)n;
				got += (unsigned long long)n;
			} else if (n == 0)
				sock_eof = 1;
			else if (errno != EINTR && errno != EAGAIN) {
				error("the tunnel to %s broke: %s",
				    c->authority, strerror(errno));
				return CONNECT_EXIT_BROKEN;
			}
		}
		if (up->len > 0 && psock->revents & (POLLOUT | POLLERR)) {
			n = send(c->fd, up->b + up->off, up->len,
			    MSG_NOSIGNAL);
			if (n > 0) {
				up->off += (size_t)n;
				up->len -= (size_t)n;
				if (up->len == 0)
					up->off = 0;
			} else if (n == -1 && errno != EINTR &&
			    errno != EAGAIN) {
				error("the tunnel to %s broke: %s",
				    c->authority, strerror(errno));
				return CONNECT_EXIT_BROKEN;
			}
		}
		if (pout != NULL && pout->revents != 0) {
			if (pout->revents & (POLLERR | POLLNVAL))
				return 0;	/* whoever read it is gone */
			n = write(STDOUT_FILENO, down->b + down->off,
			    down->len < CONNECT_WRITE_MAX ? down->len :
			    CONNECT_WRITE_MAX);
			if (n > 0) {
				down->off += (size_t)n;
				down->len -= (size_t)n;
				if (down->len == 0)
					down->off = 0;
			} else if (n == -1 && errno == EPIPE)
				return 0;
			else if (n == -1 && errno != EINTR && errno != EAGAIN) {
				error("cannot write standard output: %s",
				    strerror(errno));
				return CONNECT_EXIT_BROKEN;
			}
		}
	}
}

/* ------------------------------------------------------------ the command */

static int
cmd_connect_exec(int argc, char **argv)
{
	struct connect_ctx c;
	struct connect_buf *up = NULL, *down = NULL;
	const char *opt_proxy = NULL, *opt_dir = NULL, *opt_timeout = NULL;
	char err[2048];
	int i, k, timeout = CONNECT_TIMEOUT_S, r;

	log_init("intutic connect", LOG_LEVEL_INFO);
	memset(&c, 0, sizeof(c));
	c.fd = -1;
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if (argv[i][0] != '-' || argv[i][1] == '\0')
			break;
		if ((k = cmd_option(&cmd_connect_entry, argc, argv, &i,
		    "proxy", "URL", &opt_proxy)) == 0 &&
		    (k = cmd_option(&cmd_connect_entry, argc, argv, &i,
		    "state-dir", "DIR", &opt_dir)) == 0 &&
		    (k = cmd_option(&cmd_connect_entry, argc, argv, &i,
		    "timeout", "SECONDS", &opt_timeout)) == 0)
			return cmd_usage_error(&cmd_connect_entry, "connect: "
			    "unknown option '%s'", argv[i]);
		if (k < 0)
			return EXIT_USAGE;
	}
	if (argc - i != 2)
		return cmd_usage_error(&cmd_connect_entry, "connect: %s (intutic "
		    "connect HOST PORT; for ssh: -o ProxyCommand='intutic "
		    "connect %%h %%p')", argc - i < 2 ? "needs HOST and PORT" :
		    "too many arguments");
	if (opt_timeout != NULL && connect_timeout_arg(opt_timeout,
	    &timeout) != 0)
		return EXIT_USAGE;
	c.host = argv[i];
	c.port = argv[i + 1];
	if (connect_target(&c) != 0)
		return EXIT_USAGE;
	if (proxy_locate(opt_proxy, opt_dir, &c.loc, err, sizeof(err)) != 0) {
		error("%s", err);
		return EXIT_USAGE;
	}
	if (connect_credentials(&c) != 0)
		return EXIT_CANNOT_RUN;

	signal(SIGPIPE, SIG_IGN);
	clock_gettime(CLOCK_MONOTONIC, &c.deadline);
	c.deadline.tv_sec += timeout;
	if (connect_proxy(&c, err, sizeof(err)) != 0) {
		error("the intutic proxy is not running at %s (%s): %s; "
		    "start it with `intutic start`", c.loc.url, c.loc.source,
		    err);
		r = EXIT_CANNOT_RUN;
		goto out;
	}
	if ((up = malloc(sizeof(*up))) == NULL ||
	    (down = malloc(sizeof(*down))) == NULL) {
		error("out of memory");
		r = EXIT_CANNOT_RUN;
		goto out;
	}
	if ((r = connect_ask(&c, down)) == 0)
		r = connect_relay(&c, up, down);
 out:
	explicit_bzero(c.cred, sizeof(c.cred));
	if (c.fd != -1)
		close(c.fd);
	free(up);
	free(down);
	return r;
}
