/*
 * worker.c — listeners and worker threads.
 *
 * Every worker has one SO_REUSEPORT socket per bind address, so the kernel
 * spreads new connections over the workers and no lock is taken on accept.
 * The sockets are made in the main thread before the workers start, so
 * that port 0 is resolved once (the first socket's port is reused by the
 * others) and a bind error stops the proxy before it serves anything.
 *
 * On EMFILE the worker frees its reserve descriptors, accepts and closes
 * the connection that could not be taken (so the client is told at once
 * instead of hanging), pauses its listeners and retries after a short
 * delay or when one of its connections closes: it never spins.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
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

static int
parse_bind(const char *text, struct sockaddr_storage *ss, socklen_t *len)
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

static void
set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static int
listen_one(struct proxy_listen *l, uint16_t *port)
{
	int fd, one = 1, defer = LISTEN_DEFER_SECS;
	struct sockaddr_storage got;
	socklen_t gotlen = sizeof(got);

	set_port(&l->ss, *port);
	fd = socket(l->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) == -1)
		goto fail;
	/* A bridge address may not exist yet (podman makes it on demand). */
	(void)setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
	/* Accepted sockets inherit it: no setsockopt(2) per connection. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer,
	    sizeof(defer));
	if (l->ss.ss_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) == -1)
		goto fail;
	if (bind(fd, (struct sockaddr *)&l->ss, l->len) == -1 ||
	    listen(fd, LISTEN_BACKLOG) == -1)
		goto fail;
	if (*port == 0) {
		if (getsockname(fd, (struct sockaddr *)&got, &gotlen) == -1)
			goto fail;
		*port = ntohs(got.ss_family == AF_INET ?
		    ((struct sockaddr_in *)&got)->sin_port :
		    ((struct sockaddr_in6 *)&got)->sin6_port);
		set_port(&l->ss, *port);
	}
	return fd;
 fail:
	close(fd);
	return -1;
}

int
worker_listen_all(struct proxy *p)
{
	struct proxy_listen *l;
	uint16_t port = p->cfg.port;
	size_t i;
	int k;

	for (i = 0; i < p->cfg.nbinds; i++) {
		l = &p->listens[i];
		if (parse_bind(p->cfg.binds[i], &l->ss, &l->len) != 0) {
			error("invalid bind address '%s': expected an IPv4 or "
			    "IPv6 address", p->cfg.binds[i]);
			return -2;
		}
		snprintf(l->text, sizeof(l->text), "%s", p->cfg.binds[i]);
		for (k = 0; k < p->nworkers; k++) {
			if ((l->fds[k] = listen_one(l, &port)) == -1) {
				error("cannot listen on %s port %u: %s",
				    p->cfg.binds[i], port, strerror(errno));
				return -1;
			}
		}
		p->nlistens++;
	}
	p->port = port;
	return 0;
}

/* An IPv4-mapped IPv6 address (::ffff:a.b.c.d) as the IPv4 address. */
static const struct sockaddr *
unmap(const struct sockaddr *sa, struct sockaddr_in *buf)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

	if (sa->sa_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
		return sa;
	memset(buf, 0, sizeof(*buf));
	buf->sin_family = AF_INET;
	buf->sin_port = s6->sin6_port;
	memcpy(&buf->sin_addr, &s6->sin6_addr.s6_addr[12], 4);
	return (const struct sockaddr *)buf;
}

static int
same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	struct sockaddr_in ua = { .sin_family = AF_UNSPEC }, ub = ua;

	a = unmap(a, &ua);
	b = unmap(b, &ub);
	if (a->sa_family != b->sa_family)
		return 0;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		    ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
	    &((const struct sockaddr_in6 *)b)->sin6_addr,
	    sizeof(struct in6_addr)) == 0;
}

static int
is_wildcard(const struct sockaddr *sa)
{
	static const struct in6_addr any6 = IN6ADDR_ANY_INIT;

	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
		    htonl(INADDR_ANY);
	return memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, &any6,
	    sizeof(any6)) == 0;
}

/*
 * Whether `sa` (with its port) is one of the proxy's own listening
 * addresses: dialling it would loop.  A wildcard bind covers every address
 * of this host, read from the interfaces now.
 */
int
proxy_is_own_addr(const struct proxy *p, const struct sockaddr *sa)
{
	struct ifaddrs *ifs, *ifa;
	struct sockaddr_in unmapped = { .sin_family = AF_UNSPEC };
	uint16_t port;
	size_t i;
	int own = 0, wildcard = 0;

	sa = unmap(sa, &unmapped);

	if (sa->sa_family == AF_INET)
		port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
	else if (sa->sa_family == AF_INET6)
		port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	else
		return 0;
	if (port != p->port)
		return 0;
	for (i = 0; i < p->nlistens; i++) {
		const struct sockaddr *l = (const struct sockaddr *)&p->listens[i].ss;

		if (same_ip(l, sa))
			return 1;
		if (l->sa_family == sa->sa_family && is_wildcard(l))
			wildcard = 1;
	}
	if (!wildcard || getifaddrs(&ifs) == -1)
		return wildcard;	/* cannot tell: refuse (fail closed) */
	for (ifa = ifs; ifa != NULL && !own; ifa = ifa->ifa_next)
		if (ifa->ifa_addr != NULL && same_ip(ifa->ifa_addr, sa))
			own = 1;
	freeifaddrs(ifs);
	return own;
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
worker_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct worker *w = arg;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int fd, e;

	(void)what;
	fd = accept4(lfd, (struct sockaddr *)&ss, &len,
	    SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd != -1) {
		conn_accept(w, fd, (struct sockaddr *)&ss, len);
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

	for (i = 0; i < w->nlisteners; i++) {
		int fd = event_get_fd(w->listeners[i]);

		event_free(w->listeners[i]);
		close(fd);
		w->listeners[i] = NULL;
	}
	w->nlisteners = 0;
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
	if (w->dns != NULL)
		evdns_base_free(w->dns, 1);
	if (w->stop_ev != NULL)
		event_free(w->stop_ev);
	if (w->resume_ev != NULL)
		event_free(w->resume_ev);
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
	pool_init(&w->conn_pool, conn_size());
	pool_init(&w->tunnel_pool, tunnel_size());
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
	if (w->stop_ev == NULL || w->resume_ev == NULL)
		return -1;
	for (i = 0; i < p->nlistens; i++) {
		w->listeners[i] = event_new(w->base, p->listens[i].fds[w->id],
		    EV_READ | EV_PERSIST, worker_accept_cb, w);
		if (w->listeners[i] == NULL ||
		    event_add(w->listeners[i], NULL) != 0) {
			if (w->listeners[i] != NULL)
				event_free(w->listeners[i]);
			w->listeners[i] = NULL;
			return -1;
		}
		p->listens[i].fds[w->id] = -1;	/* the worker owns it */
		w->nlisteners++;
	}
	reserve_fill(w);
	if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
		return -1;
	return 0;
}
