/*
 * worker.c — listeners and worker threads.
 *
 * Every worker has one SO_REUSEPORT socket per bind address, so the kernel
 * spreads new connections over the workers and no lock is taken on accept.
 * The sockets are made in the main thread before the workers start, so
 * that port 0 is resolved once (the first socket's port is reused by the
 * others) and a bind error stops the proxy before it serves anything.
 *
 * One proxy a port: SO_REUSEPORT would also let a second proxy (other
 * rules) bind the same address and port, and the kernel would then split
 * connections between the two at random.  So before its listeners, the
 * proxy binds each address once without SO_REUSEPORT (that fails while
 * anything listens there), and after them it looks in /proc/net/tcp{,6}
 * for a listener on its port that is not one of its own sockets (two that
 * started at the same time: the later one to look sees the other).  It
 * refuses to start, naming the holder's pid where /proc shows it.
 *
 * On EMFILE the worker frees its reserve descriptors, accepts and closes
 * the connection that could not be taken (so the client is told at once
 * instead of hanging), pauses its listeners and retries after a short
 * delay or when one of its connections closes: it never spins.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>

#include "proxy.h"
#include "conn.h"
#include "log.h"
#include "ownaddr.h"
#include "tunnel.h"

#define ACCEPT_RESUME_MS	100
#define LISTEN_BACKLOG		4096
/*
 * TCP_DEFER_ACCEPT: the kernel hands over a connection once its first
 * bytes are in (every client of this proxy speaks first), so a request
 * costs one wake-up, not one for the handshake and one for the bytes, and
 * is read as it is accepted.  A client still silent after this long is
 * accepted all the same, and the head timeout deals with it.
 */
#define LISTEN_DEFER_SECS	1

int
worker_parse_bind(const char *text, struct sockaddr_storage *ss,
    socklen_t *len)
{
	char buf[INET6_ADDRSTRLEN + 2];
	size_t n = strlen(text);
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (n >= 2 && text[0] == '[' && text[n - 1] == ']') {
		text++;
		n -= 2;
	}
	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, text, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET, buf, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		*len = sizeof(*s4);
		return 0;
	}
	if (inet_pton(AF_INET6, buf, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		*len = sizeof(*s6);
		return 0;
	}
	return -1;
}

int
worker_parse_addrport(const char *text, int default_port,
    struct sockaddr_storage *ss, socklen_t *len)
{
	char addr[INET6_ADDRSTRLEN + 2], *end;
	const char *port = NULL, *close_br;
	unsigned long n = 0;
	size_t alen;

	if (text[0] == '[') {
		if ((close_br = strchr(text, ']')) == NULL)
			return -1;
		alen = (size_t)(close_br - text) + 1;
		if (close_br[1] == ':')
			port = close_br + 2;
		else if (close_br[1] != '\0')
			return -1;
	} else if ((port = strchr(text, ':')) != NULL &&
	    strchr(port + 1, ':') == NULL) {
		alen = (size_t)(port - text);
		port++;
	} else {
		alen = strlen(text);	/* an IPv6 address without a port */
		port = NULL;
	}
	if (alen == 0 || alen >= sizeof(addr))
		return -1;
	memcpy(addr, text, alen);
	addr[alen] = '\0';
	if (port != NULL) {
		errno = 0;
		n = strtoul(port, &end, 10);
		if (*port < '0' || *port > '9' || *end != '\0' || errno != 0 ||
		    n > 65535)
			return -1;
	} else if (default_port == -1)
		return -1;
	else
		n = (unsigned long)default_port;
	if (worker_parse_bind(addr, ss, len) != 0)
		return -1;
	worker_set_port(ss, (uint16_t)n);
	return 0;
}

void
worker_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

/* Options every socket on a bind address gets, the probe as the listeners. */
static int
listen_socket(const struct proxy_listen *l, int reuseport)
{
	int fd, one = 1;

	fd = socket(l->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1)
		return -1;
	/* SO_REUSEADDR: a restart is not held up by TIME_WAIT. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one,
	    sizeof(one)) == -1))
		goto fail;
	/* A bridge address may not exist yet (podman makes it on demand). */
	(void)setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
	if (l->ss.ss_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) == -1)
		goto fail;
	return fd;
 fail:
	close(fd);
	return -1;
}

static int
listen_one(struct proxy_listen *l, uint16_t *port)
{
	int fd, one = 1, defer = LISTEN_DEFER_SECS;
	struct sockaddr_storage got;
	socklen_t gotlen = sizeof(got);

	worker_set_port(&l->ss, *port);
	if ((fd = listen_socket(l, 1)) == -1)
		return -1;
	/* Accepted sockets inherit it: no setsockopt(2) per connection. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer,
	    sizeof(defer));
	if (bind(fd, (struct sockaddr *)&l->ss, l->len) == -1 ||
	    listen(fd, LISTEN_BACKLOG) == -1)
		goto fail;
	if (*port == 0) {
		if (getsockname(fd, (struct sockaddr *)&got, &gotlen) == -1)
			goto fail;
		*port = proxy_sockaddr_port((struct sockaddr *)&got);
		worker_set_port(&l->ss, *port);
	}
	return fd;
 fail:
	close(fd);
	return -1;
}

/* "127.0.0.1:3128", "[::1]:3128": an address and port as a URL has them. */
static void
hostport_text(int family, const char *addr, uint16_t port, char *buf,
    size_t len)
{
	if (family == AF_INET6 && addr[0] != '[')
		snprintf(buf, len, "[%s]:%u", addr, port);
	else
		snprintf(buf, len, "%s:%u", addr, port);
}

/*
 * Something else holds l's address and port: says who (ownaddr.h), and
 * what to do about it.  The start fails (exit 125).
 */
static void
listen_in_use(const struct proxy_listen *l, uint16_t port,
    const unsigned long *ours, size_t nours)
{
	struct ownaddr_holder h;
	char where[96], theirs[96];

	hostport_text(l->ss.ss_family, l->text, port, where, sizeof(where));
	if (ownaddr_port_holder((const struct sockaddr *)&l->ss, port, ours,
	    nours, &h) != 1) {
		error("%s is already in use (by a socket that does not "
		    "listen: another program's connection may hold the "
		    "port); choose another --port", where);
		return;
	}
	hostport_text(strchr(h.addr, ':') != NULL ? AF_INET6 : AF_INET,
	    h.addr, port, theirs, sizeof(theirs));
	if (h.pid == -1)
		error("%s is already in use by a process this user cannot see "
		    "(listening on %s, socket inode %lu; as root, `ss -ltnp` "
		    "names it); stop it or choose another --port", where,
		    theirs, h.inode);
	else if (strcmp(h.comm, "intutic-proxy") == 0)
		error("%s is already in use by pid %ld (intutic-proxy, "
		    "listening on %s); stop it (`intutic stop%s%s`) or choose "
		    "another --port", where, (long)h.pid, theirs,
		    h.state_dir[0] != '\0' ? " --state-dir " : "", h.state_dir);
	else
		error("%s is already in use by pid %ld (%s, listening on %s); "
		    "stop it or choose another --port", where, (long)h.pid,
		    h.comm[0] != '\0' ? h.comm : "?", theirs);
}

/*
 * Before the SO_REUSEPORT listeners: a bind without it fails while any
 * other socket listens on the address and port (or on an overlapping
 * wildcard).  Every address first, while none of the proxy's own sockets
 * is there (its own binds may overlap each other).  Port 0 cannot be
 * probed: the kernel picks a port nobody has, and the check after the
 * listeners covers it.
 */
static int
listen_probe(const struct proxy_listen *l, uint16_t port)
{
	struct sockaddr_storage ss = l->ss;
	int fd, r = 0;

	if (port == 0)
		return 0;
	worker_set_port(&ss, port);
	if ((fd = listen_socket(l, 0)) == -1)
		return 0;	/* the listener says what is wrong */
	if (bind(fd, (struct sockaddr *)&ss, l->len) == -1 &&
	    errno == EADDRINUSE)
		r = -1;
	close(fd);
	return r;
}

/* The inodes of the proxy's listening sockets, into ours; how many. */
static size_t
listen_inodes(const struct proxy *p, unsigned long *ours, size_t max)
{
	struct stat st;
	size_t i, n = 0;
	int k;

	for (i = 0; i < p->nlistens; i++)
		for (k = 0; k < p->nworkers && n < max; k++)
			if (p->listens[i].fds[k] != -1 &&
			    fstat(p->listens[i].fds[k], &st) == 0)
				ours[n++] = (unsigned long)st.st_ino;
	return n;
}

uint16_t
proxy_sockaddr_port(const struct sockaddr *sa)
{
	return ntohs(sa->sa_family == AF_INET ?
	    ((const struct sockaddr_in *)sa)->sin_port :
	    ((const struct sockaddr_in6 *)sa)->sin6_port);
}

static int	listen_extra(struct proxy *, const char *, const char *,
		    struct proxy_listen *, size_t *, size_t);

/*
 * The listeners besides the data port's: the transparent ones
 * (--transparent-bind) and the gateway's (--gateway-bind), and the host's
 * own addresses the first need.  0; -2 after saying why (a bad list), -1
 * (another error, said).
 */
static int
listen_others(struct proxy *p)
{
	static const struct sockaddr_in any4 = { .sin_family = AF_INET };
	static const struct sockaddr_in6 any6 = { .sin6_family = AF_INET6 };
	const struct sockaddr *any[2] = { (const struct sockaddr *)&any4,
	    (const struct sockaddr *)&any6 };
	int k;

	/*
	 * The host's addresses, which its own processes that nftables
	 * redirects to the transparent listener or the DNS filter come from.
	 */
	if ((p->cfg.dns_bind_text != NULL || (p->cfg.transparent_text != NULL &&
	    p->cfg.transparent_text[0] != '\0')) &&
	    (p->local = ownaddr_new(any, 2)) == NULL) {
		error("cannot list this host's addresses: %s", strerror(errno));
		return -1;
	}
	if ((k = listen_extra(p, p->cfg.transparent_text, "--transparent-bind",
	    p->transparent, &p->ntransparent, PROXY_TRANSPARENT_MAX)) != 0)
		return k;
	return listen_extra(p, p->cfg.gateway_text, "--gateway-bind",
	    p->gatewayl, &p->ngateway, PROXY_GATEWAY_MAX);
}

/*
 * The listeners of a list of ADDR:PORT (--transparent-bind,
 * --gateway-bind) into l[], *n of them, at most max: each address with its
 * own port, one SO_REUSEPORT socket per worker, and the set of addresses
 * that dialling would reach it on (never dialled: a loop).  0; -2 after
 * saying why (a bad list), -1 (another error, said).
 */
static int
listen_extra(struct proxy *p, const char *text, const char *opt,
    struct proxy_listen *ls, size_t *n, size_t max)
{
	char list[1024], *s, *tok, *save = NULL, addr[INET6_ADDRSTRLEN];
	struct proxy_listen *l;
	const struct sockaddr *self[1];
	uint16_t port;
	int k;

	if (text == NULL || text[0] == '\0')
		return 0;
	if (strlen(text) >= sizeof(list)) {
		error("%s: the list is too long", opt);
		return -2;
	}
	snprintf(list, sizeof(list), "%s", text);
	for (s = list; (tok = strtok_r(s, ",", &save)) != NULL; s = NULL) {
		if (*n == max) {
			error("%s: at most %zu addresses", opt, max);
			return -2;
		}
		l = &ls[*n];
		for (k = 0; k < PROXY_WORKERS_MAX; k++)
			l->fds[k] = -1;
		if (worker_parse_addrport(tok, -1, &l->ss, &l->len) != 0) {
			error("%s: invalid address '%s': "
			    "expected ADDR:PORT or [IPV6]:PORT", opt, tok);
			return -2;
		}
		(*n)++;
		port = proxy_sockaddr_port((struct sockaddr *)&l->ss);
		for (k = 0; k < p->nworkers; k++)
			if ((l->fds[k] = listen_one(l, &port)) == -1) {
				error("cannot listen on %s (%s): "
				    "%s", tok, opt, strerror(errno));
				return -1;
			}
		inet_ntop(l->ss.ss_family, l->ss.ss_family == AF_INET ?
		    (const void *)&((struct sockaddr_in *)&l->ss)->sin_addr :
		    (const void *)&((struct sockaddr_in6 *)&l->ss)->sin6_addr,
		    addr, sizeof(addr));
		hostport_text(l->ss.ss_family, addr, port, l->text,
		    sizeof(l->text));
		self[0] = (const struct sockaddr *)&l->ss;
		if ((l->own = ownaddr_new(self, 1)) == NULL) {
			error("cannot make the set of own addresses: %s",
			    strerror(errno));
			return -1;
		}
	}
	return 0;
}

int
worker_listen_all(struct proxy *p)
{
	static unsigned long ours[PROXY_BINDS_MAX * PROXY_WORKERS_MAX];
	const struct sockaddr *binds[PROXY_BINDS_MAX];
	struct proxy_listen *l;
	struct ownaddr_holder h;
	uint16_t port = p->cfg.port;
	size_t i, nours;
	int k, r;

	for (i = 0; i < p->cfg.nbinds; i++) {
		l = &p->listens[i];
		for (k = 0; k < PROXY_WORKERS_MAX; k++)
			l->fds[k] = -1;
		if (worker_parse_bind(p->cfg.binds[i], &l->ss, &l->len) != 0) {
			error("invalid bind address '%s': expected an IPv4 or "
			    "IPv6 address", p->cfg.binds[i]);
			return -2;
		}
		snprintf(l->text, sizeof(l->text), "%s", p->cfg.binds[i]);
	}
	for (i = 0; i < p->cfg.nbinds; i++) {
		if (listen_probe(&p->listens[i], port) != 0) {
			listen_in_use(&p->listens[i], port, NULL, 0);
			return -1;
		}
	}
	for (i = 0; i < p->cfg.nbinds; i++) {
		l = &p->listens[i];
		p->nlistens++;
		for (k = 0; k < p->nworkers; k++) {
			if ((l->fds[k] = listen_one(l, &port)) != -1)
				continue;
			if (errno == EADDRINUSE) {
				nours = listen_inodes(p, ours, sizeof(ours) / sizeof(ours[0]));
				listen_in_use(l, port, ours, nours);
			} else
				error("cannot listen on %s port %u: %s",
				    p->cfg.binds[i], port, strerror(errno));
			return -1;
		}
	}
	p->port = port;

	/* Another proxy that bound with SO_REUSEPORT in the meantime. */
	nours = listen_inodes(p, ours, sizeof(ours) / sizeof(ours[0]));
	for (i = 0; i < p->nlistens; i++) {
		l = &p->listens[i];
		r = ownaddr_port_holder((const struct sockaddr *)&l->ss, port,
		    ours, nours, &h);
		if (r == 1) {
			listen_in_use(l, port, ours, nours);
			return -1;
		}
		if (r == -1) {
			warn_msg("cannot read /proc/net/tcp (%s): not checked "
			    "that no other process listens on port %u",
			    strerror(errno), port);
			break;
		}
	}

	for (i = 0; i < p->nlistens; i++)
		binds[i] = (const struct sockaddr *)&p->listens[i].ss;
	if ((p->own = ownaddr_new(binds, p->nlistens)) == NULL) {
		error("cannot make the set of own addresses: %s",
		    strerror(errno));
		return -1;
	}
	return listen_others(p);
}

void
worker_unlisten_all(struct proxy *p)
{
	size_t i;
	int k;

	for (i = 0; i < p->ntransparent + p->ngateway; i++) {
		struct proxy_listen *l = i < p->ntransparent ?
		    &p->transparent[i] : &p->gatewayl[i - p->ntransparent];

		for (k = 0; k < PROXY_WORKERS_MAX; k++)
			if (l->fds[k] != -1) {
				close(l->fds[k]);
				l->fds[k] = -1;
			}
		ownaddr_free(l->own);
		l->own = NULL;
	}
	ownaddr_free(p->own);
	p->own = NULL;
	ownaddr_free(p->local);
	p->local = NULL;
}

/*
 * Whether dialling `sa` (with its port) would reach this proxy: on its
 * port, an address that ownaddr.c counts as its own.  The port is compared
 * first, so that a dial to any other port costs nothing more.
 */
int
proxy_is_own_addr(const struct proxy *p, const struct sockaddr *sa)
{
	uint16_t port;
	size_t i;

	if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
		return 0;
	port = proxy_sockaddr_port(sa);
	for (i = 0; i < p->ntransparent + p->ngateway; i++) {
		const struct proxy_listen *l = i < p->ntransparent ?
		    &p->transparent[i] : &p->gatewayl[i - p->ntransparent];

		if (port == proxy_sockaddr_port((const struct sockaddr *)&l->ss) &&
		    (l->own == NULL || ownaddr_match(l->own, sa)))
			return 1;
	}
	if (port != p->port)
		return 0;
	if (p->own == NULL)
		return 1;	/* cannot tell: refuse (fail closed) */
	return ownaddr_match(p->own, sa);
}

/* ----------------------------------------------------------- the worker */

static void
reserve_fill(struct worker *w)
{
	int i;

	for (i = 0; i < PROXY_FD_RESERVE; i++)
		if (w->reserve[i] == -1)
			w->reserve[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void
reserve_release(struct worker *w)
{
	int i;

	for (i = 0; i < PROXY_FD_RESERVE; i++)
		if (w->reserve[i] != -1) {
			close(w->reserve[i]);
			w->reserve[i] = -1;
		}
}

static void
worker_pause(struct worker *w)
{
	struct timeval tv = { 0, ACCEPT_RESUME_MS * 1000 };
	size_t i;

	if (w->paused)
		return;
	w->paused = 1;
	METRIC_ADD(w->p, accept_paused, 1);
	for (i = 0; i < w->nlisteners; i++)
		event_del(w->listeners[i]);
	evtimer_add(w->resume_ev, &tv);
}

static void
worker_resume(struct worker *w)
{
	size_t i;

	if (!w->paused || w->p->stopping)
		return;
	reserve_fill(w);
	if (w->reserve[PROXY_FD_RESERVE - 1] == -1) {
		/* Still no descriptors: try again later. */
		struct timeval tv = { 0, ACCEPT_RESUME_MS * 1000 };

		evtimer_add(w->resume_ev, &tv);
		return;
	}
	w->paused = 0;
	for (i = 0; i < w->nlisteners; i++)
		event_add(w->listeners[i], NULL);
}

static void
worker_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	worker_resume(arg);
}

/*
 * Out of descriptors: the waiting connection is taken with a reserve
 * descriptor and closed (else it would wake the loop at once again), and
 * accepting pauses until connections end.
 */
static void
worker_out_of_fds(struct worker *w, int lfd, int e)
{
	int fd;

	warn_msg("worker %d: out of descriptors (%s): pausing accept",
	    w->id, strerror(e));
	reserve_release(w);
	if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) != -1)
		close(fd);
	worker_pause(w);
}

/*
 * One connection a wake-up: the listener is level-triggered, so another
 * waiting connection wakes the loop again, and no accept4(2) is spent
 * learning that none waits (EAGAIN), as a loop until EAGAIN would.
 */
static void
worker_accept(struct worker *w, int lfd, int listener)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int fd, e;

	fd = accept4(lfd, (struct sockaddr *)&ss, &len,
	    SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd != -1) {
		conn_accept(w, fd, (struct sockaddr *)&ss, len, listener);
		return;
	}
	switch ((e = errno)) {
	case EAGAIN:
#if EWOULDBLOCK != EAGAIN
	case EWOULDBLOCK:
#endif
	case EINTR:
	case ECONNABORTED:
		return;
	case EMFILE:
	case ENFILE:
	case ENOBUFS:
	case ENOMEM:
		worker_out_of_fds(w, lfd, e);
		return;
	default:
		debug_f("worker %d: accept: %s", w->id, strerror(e));
		return;
	}
}

static void
worker_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	(void)what;
	worker_accept(arg, lfd, CONN_LISTEN_DATA);
}

static void
worker_transparent_cb(evutil_socket_t lfd, short what, void *arg)
{
	(void)what;
	worker_accept(arg, lfd, CONN_LISTEN_TRANSPARENT);
}

static void
worker_gateway_cb(evutil_socket_t lfd, short what, void *arg)
{
	(void)what;
	worker_accept(arg, lfd, CONN_LISTEN_GATEWAY);
}

/* The control socket: worker 0's alone. */
static void
worker_control_cb(evutil_socket_t lfd, short what, void *arg)
{
	(void)what;
	worker_accept(arg, lfd, CONN_LISTEN_CONTROL);
}

/* A listener on fd, run by cb: 0, or -1. */
static int
worker_add_listener(struct worker *w, int fd, event_callback_fn cb)
{
	struct event *ev;

	if ((ev = event_new(w->base, fd, EV_READ | EV_PERSIST, cb, w)) == NULL)
		return -1;
	if (event_add(ev, NULL) != 0) {
		event_free(ev);
		return -1;
	}
	w->listeners[w->nlisteners++] = ev;
	return 0;
}

void
worker_conn_closed(struct worker *w)
{
	if (w->p->stopping && w->nconns == 0) {
		event_base_loopexit(w->base, NULL);
		return;
	}
	if (w->paused)
		worker_resume(w);
}

void
worker_stop_accepting(struct worker *w)
{
	size_t i;

	dns_worker_stop(w);
	for (i = 0; i < w->nlisteners; i++) {
		int fd = event_get_fd(w->listeners[i]);

		event_free(w->listeners[i]);
		close(fd);
		w->listeners[i] = NULL;
	}
	w->nlisteners = 0;
}

/*
 * The rules or a run's policy changed (proxy_recheck()): each open
 * connection is decided again, and the revision asked is done.
 */
static void
worker_recheck_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	uint64_t rev = __atomic_load_n(&w->p->recheck_rev, __ATOMIC_ACQUIRE);

	(void)fd;
	(void)what;
	conn_recheck_all(w);
	__atomic_store_n(&w->recheck_done, rev, __ATOMIC_RELEASE);
}

void
worker_recheck(struct worker *w)
{
	if (w->recheck_ev != NULL)
		event_active(w->recheck_ev, EV_READ, 0);
}

static void
worker_stop_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;

	(void)fd;
	(void)what;
	if (__atomic_load_n(&w->p->stopping, __ATOMIC_RELAXED) > 1) {
		/* The grace period is over. */
		conn_close_all(w);
		event_base_loopexit(w->base, NULL);
		return;
	}
	worker_stop_accepting(w);
	conn_stop_idle(w);
	gw_idle_drop_all(w);
	if (w->nconns == 0)
		event_base_loopexit(w->base, NULL);
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	event_base_dispatch(w->base);
	worker_stop_accepting(w);
	conn_close_all(w);
	/*
	 * The base and its events stay until worker_free(): the main thread
	 * may still poke stop_ev (end of the grace period) after this loop
	 * ended, and that must not touch freed memory.
	 */
	return NULL;
}

void
worker_free(struct worker *w)
{
	size_t out;

	free(w->scratch);
	w->scratch = NULL;
	/* Without a base no connection was made: the pools hold nothing. */
	if (w->base == NULL)
		return;
	dns_worker_free(w);	/* its look-ups go before their evdns base */
	gw_idle_drop_all(w);	/* bufferevents go before their base */
	if (w->dns != NULL)
		evdns_base_free(w->dns, 1);
	if (w->stop_ev != NULL)
		event_free(w->stop_ev);
	if (w->resume_ev != NULL)
		event_free(w->resume_ev);
	if (w->recheck_ev != NULL)
		event_free(w->recheck_ev);
	w->recheck_ev = NULL;
	reserve_release(w);
	event_base_free(w->base);
	w->base = NULL;
	w->stop_ev = w->resume_ev = NULL;
	/* After the base: a connection's events are in its pool's memory. */
	out = pool_clear(&w->conn_pool) + pool_clear(&w->tunnel_pool);
	if (out > 0) {
		error("internal error: worker %d: %zu connection objects were "
		    "never freed", w->id, out);
#if defined(__SANITIZE_ADDRESS__)
		abort();	/* what LeakSanitizer would have said */
#endif
	}
}

/* evdns's own messages, as debug lines (nameserver up/down, ...). */
static void
worker_dns_log_cb(int severity, const char *msg)
{
	(void)severity;
	debug_f("evdns: %s", msg);
}

static int
worker_dns_init(struct worker *w)
{
	const struct proxy_config *cfg = &w->p->cfg;
	int r;

	evdns_set_log_fn(worker_dns_log_cb);
	w->dns = evdns_base_new(w->base, EVDNS_BASE_DISABLE_WHEN_INACTIVE);
	if (w->dns == NULL)
		return -1;
	/*
	 * Nameservers and options only: no search list (a name is always
	 * looked up as written) and no default 127.0.0.1 when the file
	 * lists no nameserver.
	 */
	r = evdns_base_resolv_conf_parse(w->dns, DNS_OPTION_NAMESERVERS |
	    DNS_OPTION_MISC | DNS_OPTION_NAMESERVERS_NO_DEFAULT,
	    cfg->resolv_conf);
	if (r != 0 && r != 6) {
		error("cannot read resolver configuration '%s' (evdns error %d)",
		    cfg->resolv_conf, r);
		return -1;
	}
	evdns_base_search_clear(w->dns);
	if (evdns_base_count_nameservers(w->dns) == 0 && w->id == 0)
		warn_msg("no nameserver in '%s': only names in '%s' resolve",
		    cfg->resolv_conf, cfg->hosts_file);
	/* The hosts file is read once by main.c (resolve.c), not by evdns. */
	return 0;
}

int
worker_start(struct proxy *p, struct worker *w)
{
	struct event_config *cfg;
	size_t i;
	int k;

	w->p = p;
	TAILQ_INIT(&w->conns);
	TAILQ_INIT(&w->gw_idle);
	pool_init(&w->conn_pool, conn_size());
	pool_init(&w->tunnel_pool, tunnel_size());
	w->transit.max = p->cfg.transit_max;
	for (k = 0; k < PROXY_FD_RESERVE; k++)
		w->reserve[k] = -1;
	if ((w->scratch = malloc(PROXY_IO_CHUNK)) == NULL)
		return -1;
	/*
	 * With the change list, the enable/disable pairs a connection makes
	 * in one callback cost one epoll_ctl(2) at most, not one each: a
	 * tunnel set-up made sixteen.  (The change list is unsafe only for
	 * dup(2)ed descriptors, which the proxy never registers.)
	 */
	if ((cfg = event_config_new()) == NULL)
		return -1;
	event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
	w->base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	if (w->base == NULL)
		return -1;
	if (worker_dns_init(w) != 0)
		return -1;
	w->stop_ev = event_new(w->base, -1, 0, worker_stop_cb, w);
	w->resume_ev = evtimer_new(w->base, worker_resume_cb, w);
	w->recheck_ev = event_new(w->base, -1, 0, worker_recheck_cb, w);
	if (w->stop_ev == NULL || w->resume_ev == NULL || w->recheck_ev == NULL)
		return -1;
	for (i = 0; i < p->nlistens; i++) {
		if (worker_add_listener(w, p->listens[i].fds[w->id],
		    worker_accept_cb) != 0)
			return -1;
		p->listens[i].fds[w->id] = -1;	/* the worker owns it */
	}
	for (i = 0; i < p->ntransparent; i++) {
		if (worker_add_listener(w, p->transparent[i].fds[w->id],
		    worker_transparent_cb) != 0)
			return -1;
		p->transparent[i].fds[w->id] = -1;
	}
	for (i = 0; i < p->ngateway; i++) {
		if (worker_add_listener(w, p->gatewayl[i].fds[w->id],
		    worker_gateway_cb) != 0)
			return -1;
		p->gatewayl[i].fds[w->id] = -1;
	}
	if (w->id == 0 && p->control_fd != -1) {
		if (worker_add_listener(w, p->control_fd,
		    worker_control_cb) != 0)
			return -1;
		p->control_fd = -1;		/* worker 0 owns it */
	}
	if (dns_worker_start(w) != 0)
		return -1;
	reserve_fill(w);
	if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
		return -1;
	return 0;
}
