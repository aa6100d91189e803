/*
 * benchtool.c — the servers and load generators of `scripts/bench proxy`
 * and `scripts/bench transparent`.
 *
 * One file, no dependencies: scripts/bench.d/proxy.sh and transparent.sh
 * build it with `cc -O2` and run it inside the benchmark's network
 * namespaces only.
 *
 *   benchtool serve [ADDR:]PORT
 *       sink, source and echo server on ADDR:PORT (IPv4; 127.0.0.1 when
 *       only PORT is given).  The client's first line chooses: "push N\n" =
 *       sink (read N bytes, answer "ok N\n"), "pull N\n" = source (send N
 *       bytes, then EOF), anything else = echo (every byte, the first line
 *       too, comes back).  Lower-case commands so that a proxy's peek never
 *       takes them for an HTTP request.  The same two as a request head,
 *       for a client whose first bytes must name a host (a transparent
 *       proxy's): "GET /push/N HTTP/1.1" or "GET /pull/N HTTP/1.1", then
 *       headers to the blank line (HEAD_MAX bytes at most), which are
 *       neither counted nor answered; any other request head is echoed.
 *   benchtool probe ADDR:PORT SECONDS
 *       waits until ADDR:PORT accepts a connection (exit 0) or gives up.
 *   benchtool bulk VIA TARGET CONNS BYTES up|down SECONDS
 *       opens CONNS tunnels (CONNECT TARGET through VIA, or straight to
 *       TARGET when VIA is "direct", as the clients of a transparent proxy
 *       connect, which a firewall sends to it), then all at once pushes
 *       BYTES in total (up) or pulls them (down); prints MiB/s.  Up counts
 *       until the sink has acknowledged every byte.  No half-close: squid
 *       and tinyproxy close the whole tunnel on the first FIN.
 *   benchtool setup VIA TARGET COUNT PARALLEL SECONDS
 *       COUNT times at most (and for SECONDS at most), PARALLEL at a time:
 *       connect, CONNECT, 200, one echo round-trip, close; prints the rate
 *       and the p50/p99 latency of the whole exchange.
 *   benchtool relay PORT UPSTREAM
 *       the least a CONNECT proxy can do, a yardstick for the others:
 *       on 127.0.0.1:PORT, one tunnel at a time and blocking, reads a
 *       request head, connects to UPSTREAM (host:port, resolved once at
 *       start, whatever the head asked for), answers 200 and copies both
 *       ways until both sides have ended (half-close passed on).  No
 *       names, no rules, no log, no event loop; the listener defers
 *       accept until the first bytes, as intutic-proxy's does.  A side
 *       silent for 10 s ends the tunnel.
 *   benchtool hold VIA TARGET COUNT SECONDS
 *       opens COUNT tunnels (64 at a time, one echo round-trip each so the
 *       proxy is past its peek), prints "held=N failed=M", keeps them until
 *       SIGUSR1 or SECONDS, then does one more round-trip on each and prints
 *       "alive=K".
 *   benchtool revoke VIA TARGET COUNT SECONDS
 *       opens COUNT tunnels as hold does, prints "held=N failed=M", then
 *       waits (SECONDS from the start at most) for the proxy to close them
 *       (EOF or reset, nothing read before) and prints "closed=K
 *       first=T last=T", the times on the monotonic clock (CLOCK_MONOTONIC,
 *       as Python's time.monotonic()) when the first and the last of them
 *       saw their end: what the revocation of open tunnels takes, counted
 *       from an action of another process.
 *
 * With BENCHTOOL_AUTH=FILE in the environment, every CONNECT carries
 * Proxy-Authorization: Basic with one of FILE's lines (RUN:TOKEN, at most
 * AUTH_MAX of them): setup takes them in turn, one a connection; hold,
 * revoke and bulk give tunnel i line i (modulo their number).
 *
 * With BENCHTOOL_HTTP=1, the first bytes of every connection (once open:
 * after the CONNECT's 200, or at once when direct) are an HTTP request
 * head whose Host is TARGET, so that a transparent proxy can name the
 * destination from them: the first echo round-trip of setup, hold and
 * revoke sends "GET / HTTP/1.1\r\nHost: TARGET\r\n\r\n" (and reads it
 * back), bulk sends its command as "GET /push/N" or "GET /pull/N" with that
 * Host.  Through a proxy, the same bytes pass its peek of the tunnel.
 *
 * Every wait is bounded: nothing here runs longer than its SECONDS plus a
 * few seconds.  Errors go to stderr, the first of each kind with detail.
 */
#define _GNU_SOURCE
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TOOL_NAME	"benchtool"
#define TOOL_EXIT	1
#include "../toolutil.h"

#define BIG		(1024 * 1024)
#define HEAD_MAX	4096
#define OP_TIMEOUT	10.0	/* seconds for one tunnel's set-up */
#define AUTH_MAX	4096	/* lines of BENCHTOOL_AUTH */
#define AUTH_LINE_MAX	256	/* bytes of one, RUN:TOKEN */
#define REQ_MAX		(600 + AUTH_LINE_MAX * 4 / 3 + 64)	/* a CONNECT */
#define FIRST_MAX	512	/* a connection's first bytes, a command */
#define PING		"ping\n"
#define PING_LEN	5

static char bigbuf[BIG];
static volatile sig_atomic_t got_usr1;

static void
nofile_max(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void
nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl == -1 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1)
		die("fcntl: %s", strerror(errno));
}

/* "host:port" -> an IPv4 socket address (names from /etc/hosts). */
static void
resolve(const char *hp, struct sockaddr_in *sin)
{
	char host[256];
	const char *colon = strrchr(hp, ':');
	struct addrinfo hints, *res;
	size_t n;
	int rc;

	if (colon == NULL || (n = (size_t)(colon - hp)) == 0 ||
	    n >= sizeof(host))
		die("'%s' is not HOST:PORT", hp);
	memcpy(host, hp, n);
	host[n] = '\0';
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(host, colon + 1, &hints, &res)) != 0)
		die("cannot resolve '%s': %s", hp, gai_strerror(rc));
	memcpy(sin, res->ai_addr, sizeof(*sin));
	freeaddrinfo(res);
}

/* Where to connect and what to say first. */
struct dest {
	struct sockaddr_in	 addr;
	int			 via_proxy;
	char			(*req)[REQ_MAX];	/* a CONNECT for each */
	size_t			*reqlen;		/* credential, or one */
	size_t			 nreq;
	const char		*host;	/* BENCHTOOL_HTTP: the Host; else NULL */
	char			 first[FIRST_MAX];	/* once open: PING, */
	size_t			 firstlen;		/* or a request head */
};

/*
 * An HTTP request head for path, naming host, into buf: its length (a
 * fatal error when it does not fit).
 */
static size_t
http_head(char *buf, size_t size, const char *path, const char *host)
{
	int len;

	len = snprintf(buf, size, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n",
	    path, host);
	if (len < 0 || (size_t)len >= size)
		die("a request head for '%s' does not fit %zu bytes", host,
		    size);
	return (size_t)len;
}

/* The base64 of in (RFC 4648, padded) into out, NUL-terminated. */
static void
base64(const unsigned char *in, size_t len, char *out, size_t outlen)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i, o = 0;
	unsigned v;

	if ((len + 2) / 3 * 4 + 1 > outlen)
		die("base64: %zu bytes do not fit", len);
	for (i = 0; i < len; i += 3) {
		v = (unsigned)in[i] << 16;
		if (i + 1 < len)
			v |= (unsigned)in[i + 1] << 8;
		if (i + 2 < len)
			v |= in[i + 2];
		out[o++] = b64[(v >> 18) & 63];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = i + 1 < len ? b64[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < len ? b64[v & 63] : '=';
	}
	out[o] = '\0';
}

/* The CONNECT to target in d's request n, with credential cred or none. */
static void
dest_req(struct dest *d, size_t n, const char *target, const char *cred)
{
	char auth[AUTH_LINE_MAX * 4 / 3 + 64], b[AUTH_LINE_MAX * 4 / 3 + 8];
	int len;

	auth[0] = '\0';
	if (cred != NULL) {
		base64((const unsigned char *)cred, strlen(cred), b, sizeof(b));
		snprintf(auth, sizeof(auth), "Proxy-Authorization: Basic %s\r\n",
		    b);
	}
	len = snprintf(d->req[n], REQ_MAX,
	    "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", target, target, auth);
	if (len < 0 || len >= REQ_MAX)
		die("target too long");
	d->reqlen[n] = (size_t)len;
}

/*
 * Fills d: the address to connect to, through a proxy the CONNECT of each
 * credential of BENCHTOOL_AUTH's file (one without, when unset), and the
 * first bytes once open (BENCHTOOL_HTTP).
 */
static void
dest_init(struct dest *d, const char *via, const char *target)
{
	char line[AUTH_LINE_MAX + 2];
	const char *path = getenv("BENCHTOOL_AUTH");
	const char *http = getenv("BENCHTOOL_HTTP");
	size_t len;
	FILE *fp;

	memset(d, 0, sizeof(*d));
	memcpy(d->first, PING, PING_LEN);
	d->firstlen = PING_LEN;
	if (http != NULL && strcmp(http, "1") == 0) {
		d->host = target;
		d->firstlen = http_head(d->first, sizeof(d->first), "/",
		    target);
	}
	if (strcmp(via, "direct") == 0) {
		resolve(target, &d->addr);
		return;
	}
	resolve(via, &d->addr);
	d->via_proxy = 1;
	if ((d->req = calloc(AUTH_MAX, sizeof(*d->req))) == NULL ||
	    (d->reqlen = calloc(AUTH_MAX, sizeof(*d->reqlen))) == NULL)
		die("out of memory");
	if (path == NULL || *path == '\0') {
		dest_req(d, 0, target, NULL);
		d->nreq = 1;
		return;
	}
	if ((fp = fopen(path, "re")) == NULL)
		die("BENCHTOOL_AUTH: cannot open '%s': %s", path,
		    strerror(errno));
	while (fgets(line, sizeof(line), fp) != NULL) {
		len = strcspn(line, "\r\n");
		if (line[len] == '\0' && !feof(fp))
			die("'%s': a line over %d bytes", path, AUTH_LINE_MAX);
		line[len] = '\0';
		if (len == 0)
			continue;
		if (d->nreq == AUTH_MAX)
			die("'%s': more than %d credentials", path, AUTH_MAX);
		if (strchr(line, ':') == NULL)
			die("'%s': '%s' is not RUN:TOKEN", path, line);
		dest_req(d, d->nreq++, target, line);
	}
	fclose(fp);
	if (d->nreq == 0)
		die("'%s' holds no credential", path);
}

/* The status of a proxy's answer head, or -1 (and what it was in `why`). */
static int
head_status(const char *buf, size_t len, char *why, size_t whylen)
{
	const char *eol = memchr(buf, '\r', len);
	size_t l = eol != NULL ? (size_t)(eol - buf) : len;
	char line[128];

	if (l >= sizeof(line))
		l = sizeof(line) - 1;
	memcpy(line, buf, l);
	line[l] = '\0';
	snprintf(why, whylen, "proxy answered '%s'", line);
	if (len < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ')
		return -1;
	return (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
}

/*
 * Connects and, through a proxy, opens the tunnel with request k of d;
 * blocking, bounded.
 */
static int
tunnel_open(const struct dest *d, size_t k, char *why, size_t whylen)
{
	struct timeval tv = { 10, 0 };
	char buf[HEAD_MAX];
	size_t have = 0;
	ssize_t n;
	int fd, one = 1;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(why, whylen, "socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (const struct sockaddr *)&d->addr,
	    sizeof(d->addr)) == -1) {
		snprintf(why, whylen, "connect: %s", strerror(errno));
		close(fd);
		return -1;
	}
	if (!d->via_proxy)
		return fd;
	k %= d->nreq;
	if (send(fd, d->req[k], d->reqlen[k], MSG_NOSIGNAL) !=
	    (ssize_t)d->reqlen[k]) {
		snprintf(why, whylen, "sending CONNECT: %s", strerror(errno));
		close(fd);
		return -1;
	}
	/* Byte by byte: nothing of the tunnel may be read here. */
	while (have < sizeof(buf)) {
		n = recv(fd, buf + have, 1, 0);
		if (n <= 0) {
			snprintf(why, whylen, "reading the CONNECT answer: %s "
			    "(after %zu bytes)", n == 0 ? "EOF" :
			    strerror(errno), have);
			close(fd);
			return -1;
		}
		have++;
		if (have >= 4 && memcmp(buf + have - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	if (head_status(buf, have, why, whylen) != 200) {
		close(fd);
		return -1;
	}
	return fd;
}

/* --------------------------------------------------------------- serve */

/* S_HEAD: the rest of a request head whose first line was a command. */
enum smode { S_LINE, S_HEAD, S_SINK, S_SOURCE, S_ECHO, S_DRAIN };

struct sconn {
	int		 fd;
	enum smode	 mode;
	enum smode	 next;		/* head: the command's, once it ends */
	uint64_t	 arg;		/* head: the command's N */
	int		 crlf;		/* head: bytes of "\r\n\r\n" in a row */
	size_t		 headlen;	/* head: bytes so far */
	char		 line[64];
	size_t		 linelen;
	uint64_t	 count;		/* sink: bytes read */
	uint64_t	 want;		/* sink: bytes to read before the ack */
	uint64_t	 remain;	/* source: bytes still to send */
	char		*out;		/* echo: bytes not yet written */
	size_t		 outlen, outoff;
};

static void
sconn_close(int ep, struct sconn *c)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->out);
	free(c);
}

static void
sconn_want(int ep, struct sconn *c, uint32_t ev)
{
	struct epoll_event e = { .events = ev, .data.ptr = c };

	epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &e);
}

/* Echo: write what is pending; returns -1 when the connection is gone. */
static int
echo_flush(int ep, struct sconn *c)
{
	ssize_t n;

	while (c->outoff < c->outlen) {
		n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff,
		    MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				sconn_want(ep, c, EPOLLOUT);
				return 0;
			}
			return -1;
		}
		c->outoff += (size_t)n;
	}
	c->outoff = c->outlen = 0;
	sconn_want(ep, c, EPOLLIN);
	return 0;
}

static int
echo_add(int ep, struct sconn *c, const char *p, size_t len)
{
	char *o;

	if ((o = realloc(c->out, c->outlen + len)) == NULL)
		return -1;
	c->out = o;
	memcpy(c->out + c->outlen, p, len);
	c->outlen += len;
	return echo_flush(ep, c);
}

/* The sink's answer once it has read what it was told: tiny, and the
 * client sends nothing more, so one send() into an empty buffer does. */
static void
sink_ack(struct sconn *c)
{
	char msg[64];
	int m;

	m = snprintf(msg, sizeof(msg), "ok %llu\n", (unsigned long long)c->count);
	(void)!send(c->fd, msg, (size_t)m, MSG_NOSIGNAL);
	c->want = UINT64_MAX;	/* once */
}

/*
 * Whether a first line not complete yet may still be a command: "push ",
 * "pull ", or a request line "GET /push/" or "GET /pull/".
 */
static int
line_may_command(const char *line, size_t len)
{
	static const char get[] = "GET /pu";
	size_t n = len < sizeof(get) - 1 ? len : sizeof(get) - 1;

	return len < 5 || strncmp(line, "pu", 2) == 0 ||
	    strncmp(line, get, n) == 0;
}

/*
 * A request line "GET /push/N HTTP/1.x" or "GET /pull/N HTTP/1.x": 1 with
 * the command's mode (S_SINK, S_SOURCE) and N; else 0.
 */
static int
line_http_command(const char *line, enum smode *mode, uint64_t *n)
{
	char *end;

	if (strncmp(line, "GET /push/", 10) == 0)
		*mode = S_SINK;
	else if (strncmp(line, "GET /pull/", 10) == 0)
		*mode = S_SOURCE;
	else
		return 0;
	*n = strtoull(line + 10, &end, 10);
	return end != line + 10 && strncmp(end, " HTTP/1.", 8) == 0;
}

/* A command begins, with rest bytes read past its line or head. */
static void
serve_command(int ep, struct sconn *c, enum smode mode, uint64_t n,
    size_t rest)
{
	c->mode = mode;
	if (mode == S_SINK) {
		c->want = n;
		c->count = rest;
		if (c->count >= c->want)
			sink_ack(c);
	} else {
		c->remain = n;		/* pull takes no more input */
		sconn_want(ep, c, EPOLLOUT);
	}
}

/*
 * How many of the len bytes at p belong to the head c is in: up to its
 * blank line, all of them while it goes on.  c->crlf is 4 at its end.
 */
static size_t
head_skip(struct sconn *c, const char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len && c->crlf < 4; i++) {
		if (p[i] == '\r')
			c->crlf = c->crlf == 2 ? 3 : 1;
		else if (p[i] == '\n' && (c->crlf == 1 || c->crlf == 3))
			c->crlf++;
		else
			c->crlf = 0;
	}
	c->headlen += i;
	return i;
}

static void
serve_event(int ep, struct sconn *c, uint32_t ev)
{
	ssize_t n;
	size_t i;

	if (c->mode == S_SOURCE && (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
		while (c->remain > 0) {
			size_t want = c->remain < BIG ? (size_t)c->remain : BIG;

			n = send(c->fd, bigbuf, want, MSG_NOSIGNAL);
			if (n < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					return;
				sconn_close(ep, c);
				return;
			}
			c->remain -= (uint64_t)n;
		}
		shutdown(c->fd, SHUT_WR);
		c->mode = S_DRAIN;
		sconn_want(ep, c, EPOLLIN);
		return;
	}
	if (c->mode == S_ECHO && c->outlen > 0) {
		if (echo_flush(ep, c) != 0)
			sconn_close(ep, c);
		return;
	}
	n = recv(c->fd, bigbuf, BIG, 0);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		sconn_close(ep, c);
		return;
	}
	if (n == 0) {
		sconn_close(ep, c);
		return;
	}
	switch (c->mode) {
	case S_SINK:
		c->count += (uint64_t)n;
		if (c->count >= c->want)
			sink_ack(c);
		return;
	case S_DRAIN:
		return;
	case S_ECHO:
		if (echo_add(ep, c, bigbuf, (size_t)n) != 0)
			sconn_close(ep, c);
		return;
	case S_SOURCE:
		return;		/* pull takes no more input */
	case S_HEAD:
		i = head_skip(c, bigbuf, (size_t)n);
		if (c->crlf == 4)
			serve_command(ep, c, c->next, c->arg, (size_t)n - i);
		else if (c->headlen > HEAD_MAX)
			sconn_close(ep, c);
		return;
	case S_LINE:
		break;
	}
	for (i = 0; i < (size_t)n; i++) {
		if (c->linelen < sizeof(c->line) - 1)
			c->line[c->linelen++] = bigbuf[i];
		if (bigbuf[i] == '\n' || c->linelen == sizeof(c->line) - 1)
			break;
	}
	c->line[c->linelen] = '\0';
	if (i == (size_t)n) {
		if (line_may_command(c->line, c->linelen))
			return;
		/* Long enough to know: not a command. */
		c->mode = S_ECHO;
		if (echo_add(ep, c, c->line, c->linelen) != 0)
			sconn_close(ep, c);
		return;
	}
	i++;	/* past the newline */
	if (strncmp(c->line, "push ", 5) == 0)
		serve_command(ep, c, S_SINK, strtoull(c->line + 5, NULL, 10),
		    (size_t)n - i);
	else if (strncmp(c->line, "pull ", 5) == 0)
		serve_command(ep, c, S_SOURCE, strtoull(c->line + 5, NULL, 10),
		    0);
	else if (line_http_command(c->line, &c->next, &c->arg)) {
		/* The rest of the head is no part of the command. */
		c->mode = S_HEAD;
		c->headlen = c->linelen;
		c->crlf = c->linelen >= 2 &&
		    c->line[c->linelen - 2] == '\r' ? 2 : 0;
		i += head_skip(c, bigbuf + i, (size_t)n - i);
		if (c->crlf == 4)
			serve_command(ep, c, c->next, c->arg, (size_t)n - i);
	} else {
		c->mode = S_ECHO;
		if (echo_add(ep, c, c->line, c->linelen) != 0 ||
		    (i < (size_t)n &&
		    echo_add(ep, c, bigbuf + i, (size_t)n - i) != 0))
			sconn_close(ep, c);
	}
}

/*
 * A listening socket on ADDR:PORT (IPv4), or 127.0.0.1:PORT when where is
 * a bare PORT (type flags: SOCK_NONBLOCK...).
 */
static int
listen_on(const char *where, int flags)
{
	struct sockaddr_in sin;
	char addr[INET_ADDRSTRLEN];
	const char *colon = strrchr(where, ':'), *port = where;
	size_t n;
	int lfd, one = 1;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (colon != NULL) {
		if ((n = (size_t)(colon - where)) >= sizeof(addr))
			die("'%s' is not ADDR:PORT", where);
		memcpy(addr, where, n);
		addr[n] = '\0';
		if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
			die("'%s' is not an IPv4 address", addr);
		port = colon + 1;
	}
	sin.sin_port = htons((uint16_t)num(port, 1, 65535));
	if ((lfd = socket(AF_INET, SOCK_STREAM | flags, 0)) == -1)
		die("socket: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(lfd, 8192) == -1)
		die("listen on %s: %s", where, strerror(errno));
	return lfd;
}

static int
cmd_serve(int argc, char **argv)
{
	struct epoll_event ev, evs[256];
	int lfd, ep, one = 1, i, n;

	if (argc != 1)
		die("usage: serve [ADDR:]PORT");
	memset(bigbuf, 'x', sizeof(bigbuf));
	lfd = listen_on(argv[0], SOCK_NONBLOCK);
	if ((ep = epoll_create1(0)) == -1)
		die("epoll: %s", strerror(errno));
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	for (;;) {
		n = epoll_wait(ep, evs, 256, -1);
		for (i = 0; i < n; i++) {
			struct sconn *c = evs[i].data.ptr;
			int fd;

			if (c != NULL) {
				serve_event(ep, c, evs[i].events);
				continue;
			}
			while ((fd = accept4(lfd, NULL, NULL,
			    SOCK_NONBLOCK | SOCK_CLOEXEC)) != -1) {
				if ((c = calloc(1, sizeof(*c))) == NULL) {
					close(fd);
					continue;
				}
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
				    sizeof(one));
				c->fd = fd;
				ev.events = EPOLLIN;
				ev.data.ptr = c;
				if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
					close(fd);
					free(c);
				}
			}
		}
	}
	return 0;
}

/* --------------------------------------------------------------- probe */

static int
cmd_probe(int argc, char **argv)
{
	struct sockaddr_in sin;
	double end;
	int fd;

	if (argc != 2)
		die("usage: probe ADDR:PORT SECONDS");
	resolve(argv[0], &sin);
	end = now() + (double)num(argv[1], 1, 600);
	while (now() < end) {
		if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
			die("socket: %s", strerror(errno));
		if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0) {
			close(fd);
			return 0;
		}
		close(fd);
		usleep(50000);
	}
	fprintf(stderr, "benchtool: nothing listens on %s\n", argv[0]);
	return 1;
}

/* ---------------------------------------------------------------- bulk */

struct bconn {
	int		 fd;
	uint64_t	 left;		/* up: to send; down: expected */
	uint64_t	 got;
	char		 ack[64];
	size_t		 acklen;
	int		 sending, done;
};

static int
cmd_bulk(int argc, char **argv)
{
	struct dest d;
	struct bconn *cs;
	struct epoll_event ev, evs[64];
	uint64_t total, share, sum = 0;
	double t0, t1, deadline;
	char why[256], line[FIRST_MAX], path[64];
	int nconn, up, i, n, left;
	size_t m;
	ssize_t r;

	if (argc != 6)
		die("usage: bulk VIA TARGET CONNS BYTES up|down SECONDS");
	dest_init(&d, argv[0], argv[1]);
	nconn = (int)num(argv[2], 1, 1024);
	total = (uint64_t)num(argv[3], 1, (long long)1 << 40);
	up = strcmp(argv[4], "up") == 0;
	if (!up && strcmp(argv[4], "down") != 0)
		die("direction: up or down");
	deadline = (double)num(argv[5], 1, 3600);
	share = total / (uint64_t)nconn;
	memset(bigbuf, 'b', sizeof(bigbuf));
	if ((cs = calloc((size_t)nconn, sizeof(*cs))) == NULL)
		die("out of memory");
	for (i = 0; i < nconn; i++) {
		if ((cs[i].fd = tunnel_open(&d, (size_t)i, why,
		    sizeof(why))) == -1)
			die("tunnel %d: %s", i, why);
		cs[i].left = share;
	}
	if ((n = epoll_create1(0)) == -1)
		die("epoll: %s", strerror(errno));
	t0 = now();
	deadline += t0;
	/* The command: "push N" or "pull N", or that as a request head. */
	if (d.host != NULL) {
		snprintf(path, sizeof(path), "/%s/%llu", up ? "push" : "pull",
		    (unsigned long long)share);
		m = http_head(line, sizeof(line), path, d.host);
	} else
		m = (size_t)snprintf(line, sizeof(line), "%s %llu\n",
		    up ? "push" : "pull", (unsigned long long)share);
	for (i = 0; i < nconn; i++) {
		cs[i].sending = up;
		if (send(cs[i].fd, line, m, MSG_NOSIGNAL) != (ssize_t)m)
			die("tunnel %d: sending the command: %s", i,
			    strerror(errno));
		nonblock(cs[i].fd);
		ev.events = up ? EPOLLOUT : EPOLLIN;
		ev.data.u32 = (uint32_t)i;
		epoll_ctl(n, EPOLL_CTL_ADD, cs[i].fd, &ev);
	}
	left = nconn;
	while (left > 0) {
		int k, ne;

		if (now() > deadline)
			die("timed out: %d of %d tunnels not done (%llu bytes "
			    "moved)", left, nconn, (unsigned long long)sum);
		ne = epoll_wait(n, evs, 64, 1000);
		for (k = 0; k < ne; k++) {
			struct bconn *c = &cs[evs[k].data.u32];

			if (c->done)
				continue;
			if (c->sending) {
				while (c->left > 0) {
					size_t w = c->left < BIG ?
					    (size_t)c->left : BIG;

					r = send(c->fd, bigbuf, w, MSG_NOSIGNAL);
					if (r < 0) {
						if (errno == EAGAIN)
							break;
						die("tunnel %d: send: %s",
						    (int)evs[k].data.u32,
						    strerror(errno));
					}
					c->left -= (uint64_t)r;
					sum += (uint64_t)r;
				}
				if (c->left > 0)
					continue;
				c->sending = 0;
				ev.events = EPOLLIN;
				ev.data.u32 = evs[k].data.u32;
				epoll_ctl(n, EPOLL_CTL_MOD, c->fd, &ev);
				continue;
			}
			r = recv(c->fd, up ? c->ack + c->acklen : bigbuf,
			    up ? sizeof(c->ack) - 1 - c->acklen : BIG, 0);
			if (r < 0) {
				if (errno == EAGAIN)
					continue;
				die("tunnel %d: recv: %s", (int)evs[k].data.u32,
				    strerror(errno));
			}
			if (r > 0) {
				if (up)
					c->acklen += (size_t)r;
				else {
					c->got += (uint64_t)r;
					sum += (uint64_t)r;
				}
				if (!up || (c->acklen < sizeof(c->ack) - 1 &&
				    memchr(c->ack, '\n', c->acklen) == NULL))
					continue;
			}
			/* The ack (up), EOF (down): this tunnel is done. */
			if (up) {
				char want[64];

				c->ack[c->acklen] = '\0';
				snprintf(want, sizeof(want), "ok %llu\n",
				    (unsigned long long)share);
				if (strcmp(c->ack, want) != 0)
					die("tunnel %d: the sink answered '%s', "
					    "expected '%s' (data lost?)",
					    (int)evs[k].data.u32, c->ack, want);
			} else if (c->got != share)
				die("tunnel %d: EOF after %llu of %llu bytes",
				    (int)evs[k].data.u32,
				    (unsigned long long)c->got,
				    (unsigned long long)share);
			c->done = 1;
			left--;
			epoll_ctl(n, EPOLL_CTL_DEL, c->fd, NULL);
			close(c->fd);
		}
	}
	t1 = now();
	printf("bytes=%llu seconds=%.6f mibps=%.1f\n",
	    (unsigned long long)(share * (uint64_t)nconn), t1 - t0,
	    (double)(share * (uint64_t)nconn) / (1024.0 * 1024.0) / (t1 - t0));
	return 0;
}

/* --------------------------------------------------- setup and hold */

enum cstate { C_FREE, C_CONNECTING, C_HEAD, C_ECHO, C_HELD, C_PING };

struct cconn {
	int		 fd;
	enum cstate	 state;
	size_t		 cred;		/* its request in the dest */
	double		 start;
	char		 buf[HEAD_MAX];
	size_t		 have;
};

struct errs {
	int		 n;
	char		 first[300];
};

static void
err_note(struct errs *e, int id, const char *fmt, ...)
{
	va_list ap;
	char msg[256];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (e->n++ == 0)
		snprintf(e->first, sizeof(e->first), "connection %d: %s", id,
		    msg);
}

/*
 * Starts a non-blocking connect in slot c, which will send request k of d;
 * -1 with the error noted.
 */
static int
cconn_start(int ep, const struct dest *d, struct cconn *c, int id, long k,
    struct errs *e)
{
	struct epoll_event ev;
	int one = 1;

	c->cred = d->nreq > 0 ? (size_t)k % d->nreq : 0;
	c->start = now();
	c->have = 0;
	if ((c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1) {
		err_note(e, id, "socket: %s", strerror(errno));
		c->state = C_FREE;
		return -1;
	}
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (const struct sockaddr *)&d->addr,
	    sizeof(d->addr)) == -1 && errno != EINPROGRESS) {
		err_note(e, id, "connect: %s", strerror(errno));
		close(c->fd);
		c->state = C_FREE;
		return -1;
	}
	c->state = C_CONNECTING;
	ev.events = EPOLLOUT;
	ev.data.u32 = (uint32_t)id;
	epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
	return 0;
}

static void
cconn_want(int ep, struct cconn *c, int id, uint32_t what)
{
	struct epoll_event ev = { .events = what, .data.u32 = (uint32_t)id };

	epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static void
cconn_fail(int ep, struct cconn *c)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	c->state = C_FREE;
}

static int
send_ping(struct cconn *c)
{
	c->have = 0;
	return send(c->fd, PING, PING_LEN, MSG_NOSIGNAL) == PING_LEN ? 0 : -1;
}

/* The first round-trip of an open connection: d's first bytes. */
static int
send_first(const struct dest *d, struct cconn *c)
{
	c->have = 0;
	return send(c->fd, d->first, d->firstlen, MSG_NOSIGNAL) ==
	    (ssize_t)d->firstlen ? 0 : -1;
}

/*
 * Moves slot c on after an event: 1 when its echo round-trip completed,
 * 0 to wait more, -1 failed (noted, slot closed).
 */
static int
cconn_step(int ep, const struct dest *d, struct cconn *c, int id,
    struct errs *e)
{
	char why[256];
	const char *want;
	size_t wantlen;
	ssize_t r;
	char *end;
	int err = 0;
	socklen_t el = sizeof(err);

	switch (c->state) {
	case C_CONNECTING:
		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
		if (err != 0) {
			err_note(e, id, "connect: %s", strerror(err));
			cconn_fail(ep, c);
			return -1;
		}
		if (d->via_proxy) {
			if (send(c->fd, d->req[c->cred], d->reqlen[c->cred],
			    MSG_NOSIGNAL) != (ssize_t)d->reqlen[c->cred]) {
				err_note(e, id, "sending CONNECT: %s",
				    strerror(errno));
				cconn_fail(ep, c);
				return -1;
			}
			c->state = C_HEAD;
		} else {
			if (send_first(d, c) != 0) {
				err_note(e, id, "send: %s", strerror(errno));
				cconn_fail(ep, c);
				return -1;
			}
			c->state = C_ECHO;
		}
		cconn_want(ep, c, id, EPOLLIN);
		return 0;
	case C_HEAD:
		r = recv(c->fd, c->buf + c->have, sizeof(c->buf) - 1 - c->have,
		    0);
		if (r < 0 && errno == EAGAIN)
			return 0;
		if (r <= 0) {
			err_note(e, id, "reading the CONNECT answer: %s (after "
			    "%zu bytes)", r == 0 ? "EOF" : strerror(errno),
			    c->have);
			cconn_fail(ep, c);
			return -1;
		}
		c->have += (size_t)r;
		c->buf[c->have] = '\0';
		if ((end = strstr(c->buf, "\r\n\r\n")) == NULL) {
			if (c->have == sizeof(c->buf) - 1) {
				err_note(e, id, "CONNECT answer too long");
				cconn_fail(ep, c);
				return -1;
			}
			return 0;
		}
		if (head_status(c->buf, c->have, why, sizeof(why)) != 200) {
			err_note(e, id, "%s", why);
			cconn_fail(ep, c);
			return -1;
		}
		if (end + 4 != c->buf + c->have) {
			err_note(e, id, "bytes after the CONNECT answer before "
			    "the client spoke");
			cconn_fail(ep, c);
			return -1;
		}
		if (send_first(d, c) != 0) {
			err_note(e, id, "send: %s", strerror(errno));
			cconn_fail(ep, c);
			return -1;
		}
		c->state = C_ECHO;
		return 0;
	case C_ECHO:
	case C_PING:
	case C_HELD:
		r = recv(c->fd, c->buf + c->have, sizeof(c->buf) - 1 - c->have,
		    0);
		if (r < 0 && errno == EAGAIN)
			return 0;
		if (r <= 0) {
			err_note(e, id, "%s the echo: %s (after %zu bytes)",
			    c->state == C_HELD ? "held tunnel, before" :
			    "reading", r == 0 ? "EOF" : strerror(errno),
			    c->have);
			cconn_fail(ep, c);
			return -1;
		}
		c->have += (size_t)r;
		/* The first round-trip's are d's first bytes, later ones PING. */
		want = c->state == C_ECHO ? d->first : PING;
		wantlen = c->state == C_ECHO ? d->firstlen : PING_LEN;
		if (c->state == C_HELD || c->have > wantlen ||
		    memcmp(c->buf, want, c->have) != 0) {
			err_note(e, id, "unexpected bytes from the echo server");
			cconn_fail(ep, c);
			return -1;
		}
		return c->have == wantlen ? 1 : 0;
	case C_FREE:
		break;
	}
	return 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
pct(double *v, int n, double p)
{
	int i;

	if (n == 0)
		return 0;
	i = (int)(p / 100.0 * (double)n);
	if (i >= n)
		i = n - 1;
	return v[i];
}

static int
cmd_setup(int argc, char **argv)
{
	struct dest d;
	struct cconn *cs;
	struct errs e = { 0, "" };
	struct epoll_event evs[256];
	double t0, end, *lat, t;
	long count, started = 0, done = 0;
	int par, ep, i, n, active = 0;

	if (argc != 5)
		die("usage: setup VIA TARGET COUNT PARALLEL SECONDS");
	dest_init(&d, argv[0], argv[1]);
	count = (long)num(argv[2], 1, 10000000);
	par = (int)num(argv[3], 1, 256);
	if ((cs = calloc((size_t)par, sizeof(*cs))) == NULL ||
	    (lat = calloc((size_t)count, sizeof(*lat))) == NULL ||
	    (ep = epoll_create1(0)) == -1)
		die("out of memory");
	t0 = now();
	end = t0 + (double)num(argv[4], 1, 600);
	for (i = 0; i < par && started < count; i++, started++)
		if (cconn_start(ep, &d, &cs[i], i, started, &e) == 0)
			active++;
	while (active > 0) {
		t = now();
		n = epoll_wait(ep, evs, 256, 200);
		for (i = 0; i < n; i++) {
			int id = (int)evs[i].data.u32, rc;
			struct cconn *c = &cs[id];

			if (c->state == C_FREE)
				continue;
			rc = cconn_step(ep, &d, c, id, &e);
			if (rc == 0)
				continue;
			if (rc == 1) {
				t = now();
				lat[done++] = t - c->start;
				cconn_fail(ep, c);	/* closes the slot */
			}
			active--;
			if (started < count && t < end && e.n < 100) {
				if (cconn_start(ep, &d, c, id, started, &e) ==
				    0)
					active++;
				started++;
			}
		}
		/* A slot stuck too long is a failure (bounded run). */
		t = now();
		for (i = 0; i < par; i++)
			if (cs[i].state != C_FREE &&
			    t - cs[i].start > OP_TIMEOUT) {
				err_note(&e, i, "no progress for %.0f s in "
				    "state %d", OP_TIMEOUT, (int)cs[i].state);
				cconn_fail(ep, &cs[i]);
				active--;
			}
	}
	t = now() - t0;
	qsort(lat, (size_t)done, sizeof(*lat), cmp_double);
	printf("done=%ld errors=%d seconds=%.3f rate=%.1f p50_ms=%.3f "
	    "p99_ms=%.3f\n", done, e.n, t, (double)done / t,
	    pct(lat, (int)done, 50) * 1e3, pct(lat, (int)done, 99) * 1e3);
	if (e.n > 0)
		fprintf(stderr, "benchtool: %d errors; first: %s\n", e.n,
		    e.first);
	return e.n == 0 && done > 0 ? 0 : 1;
}

static void
on_usr1(int sig)
{
	(void)sig;
	got_usr1 = 1;
}

/*
 * Opens count tunnels in cs (slot i with request i of d): 64 in flight at
 * a time, one echo round-trip each (the proxy is past its peek); until
 * phase_end at most, and no more than 5 s without one opening (a proxy at
 * its limit).  What did not open is closed and noted in e.  Prints
 * "held=N failed=M seconds=S"; returns N.
 */
static int
tunnels_open(int ep, const struct dest *d, struct cconn *cs, int count,
    double t0, double phase_end, struct errs *e)
{
	struct epoll_event evs[256];
	double last = t0;
	int i, n, next = 0, active = 0, held = 0;
	const int par = 64;

	while ((next < count || active > 0) && now() < phase_end &&
	    now() - last < 5.0) {
		while (active < par && next < count) {
			if (cconn_start(ep, d, &cs[next], next, next, e) == 0)
				active++;
			next++;
		}
		n = epoll_wait(ep, evs, 256, 200);
		for (i = 0; i < n; i++) {
			int id = (int)evs[i].data.u32, rc;
			struct cconn *c = &cs[id];

			if (c->state == C_FREE || c->state == C_HELD)
				continue;
			rc = cconn_step(ep, d, c, id, e);
			if (rc == 0)
				continue;
			active--;
			last = now();
			if (rc == 1) {
				c->state = C_HELD;
				held++;
			}
		}
	}
	/* What is still opening at the deadline has failed. */
	for (i = 0; i < count; i++)
		if (cs[i].state != C_FREE && cs[i].state != C_HELD) {
			err_note(e, i, "not open after %.1f s (%.1f s "
			    "without progress)", now() - t0, now() - last);
			cconn_fail(ep, &cs[i]);
		}
	printf("held=%d failed=%d seconds=%.3f\n", held, count - held,
	    now() - t0);
	fflush(stdout);
	if (e->n > 0)
		fprintf(stderr, "benchtool: %d errors opening; first: %s\n",
		    e->n, e->first);
	return held;
}

static int
cmd_hold(int argc, char **argv)
{
	struct dest d;
	struct cconn *cs;
	struct errs e = { 0, "" }, e2 = { 0, "" };
	struct epoll_event evs[256];
	struct sigaction sa;
	double t0, end, phase_end;
	int count, ep, i, n, held, alive = 0, pending;

	if (argc != 4)
		die("usage: hold VIA TARGET COUNT SECONDS");
	nofile_max();
	dest_init(&d, argv[0], argv[1]);
	count = (int)num(argv[2], 1, 100000);
	if ((cs = calloc((size_t)count, sizeof(*cs))) == NULL ||
	    (ep = epoll_create1(0)) == -1)
		die("out of memory");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	t0 = now();
	end = t0 + (double)num(argv[3], 1, 3600);
	/* Opening: at most half the time. */
	held = tunnels_open(ep, &d, cs, count, t0, t0 + (end - t0) / 2, &e);
	/* Holding: a held tunnel that closes or speaks is a failure. */
	while (!got_usr1 && now() < end) {
		n = epoll_wait(ep, evs, 256, 200);
		for (i = 0; i < n; i++) {
			int id = (int)evs[i].data.u32;

			if (cs[id].state == C_HELD &&
			    cconn_step(ep, &d, &cs[id], id, &e2) == -1)
				held--;
		}
	}
	/* One more round-trip on every held tunnel. */
	pending = 0;
	for (i = 0; i < count; i++) {
		if (cs[i].state != C_HELD)
			continue;
		if (send_ping(&cs[i]) != 0) {
			err_note(&e2, i, "send on a held tunnel: %s",
			    strerror(errno));
			cconn_fail(ep, &cs[i]);
			continue;
		}
		cs[i].state = C_PING;
		pending++;
	}
	phase_end = now() + 30;
	while (pending > 0 && now() < phase_end) {
		n = epoll_wait(ep, evs, 256, 200);
		for (i = 0; i < n; i++) {
			int id = (int)evs[i].data.u32, rc;

			if (cs[id].state != C_PING)
				continue;
			rc = cconn_step(ep, &d, &cs[id], id, &e2);
			if (rc == 0)
				continue;
			pending--;
			if (rc == 1) {
				alive++;
				cs[id].state = C_HELD;
			}
		}
	}
	printf("alive=%d\n", alive);
	fflush(stdout);
	if (e2.n > 0)
		fprintf(stderr, "benchtool: %d errors while held; first: %s\n",
		    e2.n, e2.first);
	return 0;
}

/*
 * Holds count tunnels until the proxy closes them: the end each one sees
 * (EOF or an error: a reset) is timed on the monotonic clock, which other
 * processes read too, so that the caller measures from its own action.
 */
static int
cmd_revoke(int argc, char **argv)
{
	struct dest d;
	struct cconn *cs;
	struct errs e = { 0, "" }, e2 = { 0, "" };
	struct epoll_event evs[256];
	double t0, end, t, first = 0, last = 0;
	int count, ep, i, n, held, closed = 0;
	ssize_t r;

	if (argc != 4)
		die("usage: revoke VIA TARGET COUNT SECONDS");
	nofile_max();
	dest_init(&d, argv[0], argv[1]);
	count = (int)num(argv[2], 1, 100000);
	if ((cs = calloc((size_t)count, sizeof(*cs))) == NULL ||
	    (ep = epoll_create1(0)) == -1)
		die("out of memory");
	t0 = now();
	end = t0 + (double)num(argv[3], 1, 3600);
	held = tunnels_open(ep, &d, cs, count, t0, t0 + (end - t0) / 2, &e);
	/* Waiting: each held tunnel's end, and nothing before it. */
	while (closed < held && now() < end) {
		n = epoll_wait(ep, evs, 256, 200);
		t = now();
		for (i = 0; i < n; i++) {
			int id = (int)evs[i].data.u32;
			struct cconn *c = &cs[id];

			if (c->state != C_HELD)
				continue;
			r = recv(c->fd, c->buf, sizeof(c->buf), 0);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r > 0)
				err_note(&e2, id, "%zd bytes on a held tunnel "
				    "before its end", r);
			if (closed++ == 0)
				first = t;
			last = t;
			cconn_fail(ep, c);
		}
	}
	printf("closed=%d held=%d first=%.6f last=%.6f\n", closed, held,
	    first, last);
	fflush(stdout);
	if (e2.n > 0)
		fprintf(stderr, "benchtool: %d errors while held; first: %s\n",
		    e2.n, e2.first);
	return closed == held && held == count && e2.n == 0 ? 0 : 1;
}

/* ------------------------------------------------------------- relay */

#define RELAY_IDLE_MS	10000

/* Reads a request head (to its blank line) from fd; -1 if none came. */
static ssize_t
relay_head(int fd, char *buf, size_t size)
{
	size_t have = 0;
	ssize_t n;

	while (have < size - 1) {
		if ((n = recv(fd, buf + have, size - 1 - have, 0)) <= 0)
			return -1;
		have += (size_t)n;
		buf[have] = '\0';
		if (strstr(buf, "\r\n\r\n") != NULL)
			return (ssize_t)have;
	}
	return -1;
}

/* Copies between a and b until both have ended, or one is idle. */
static void
relay_copy(int a, int b)
{
	struct pollfd p[2];
	int done[2] = { 0, 0 }, i;
	ssize_t n;

	while (!done[0] || !done[1]) {
		p[0].fd = done[0] ? -1 : a;
		p[1].fd = done[1] ? -1 : b;
		p[0].events = p[1].events = POLLIN;
		if (poll(p, 2, RELAY_IDLE_MS) <= 0)
			return;
		for (i = 0; i < 2; i++) {
			if (p[i].revents == 0)
				continue;
			n = recv(p[i].fd, bigbuf, sizeof(bigbuf), 0);
			if (n <= 0) {
				done[i] = 1;
				shutdown(i == 0 ? b : a, SHUT_WR);
				continue;
			}
			if (send(i == 0 ? b : a, bigbuf, (size_t)n,
			    MSG_NOSIGNAL) != n)
				return;
		}
	}
}

static int
cmd_relay(int argc, char **argv)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	struct sockaddr_in up;
	struct timeval tv = { RELAY_IDLE_MS / 1000, 0 };
	char head[HEAD_MAX];
	const char *rest;
	ssize_t have;
	int lfd, c, u, one = 1;

	if (argc != 2)
		die("usage: relay PORT UPSTREAM");
	resolve(argv[1], &up);
	lfd = listen_on(argv[0], SOCK_CLOEXEC);
	setsockopt(lfd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &one, sizeof(one));
	for (;;) {
		if ((c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) == -1)
			continue;
		/* A client that never sends its head does not hold it long. */
		setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		u = -1;
		if ((have = relay_head(c, head, sizeof(head))) >= 0 &&
		    (u = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) != -1) {
			setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one,
			    sizeof(one));
			/* What the client sent past its head goes on first. */
			rest = strstr(head, "\r\n\r\n") + 4;
			have -= rest - head;
			if (connect(u, (struct sockaddr *)&up, sizeof(up)) == 0 &&
			    send(c, ok, sizeof(ok) - 1, MSG_NOSIGNAL) ==
			    (ssize_t)sizeof(ok) - 1 && (have == 0 ||
			    send(u, rest, (size_t)have, MSG_NOSIGNAL) == have))
				relay_copy(c, u);
		}
		if (u != -1)
			close(u);
		close(c);
	}
	return 0;
}

int
main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2)
		die("usage: benchtool serve|probe|bulk|setup|relay|hold|revoke "
		    "...");
	nofile_max();
	if (strcmp(argv[1], "serve") == 0)
		return cmd_serve(argc - 2, argv + 2);
	if (strcmp(argv[1], "probe") == 0)
		return cmd_probe(argc - 2, argv + 2);
	if (strcmp(argv[1], "bulk") == 0)
		return cmd_bulk(argc - 2, argv + 2);
	if (strcmp(argv[1], "setup") == 0)
		return cmd_setup(argc - 2, argv + 2);
	if (strcmp(argv[1], "relay") == 0)
		return cmd_relay(argc - 2, argv + 2);
	if (strcmp(argv[1], "hold") == 0)
		return cmd_hold(argc - 2, argv + 2);
	if (strcmp(argv[1], "revoke") == 0)
		return cmd_revoke(argc - 2, argv + 2);
	die("unknown command '%s'", argv[1]);
	return 2;
}
