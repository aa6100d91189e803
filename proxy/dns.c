/*
 * dns.c — the DNS filter (intutic-proxy(8), DNS FILTER).
 *
 * UDP and TCP on each --dns-bind address, a socket of each per worker
 * (SO_REUSEPORT), served by the worker's own loop like the data port.  A
 * query's name is decided as a destination without a port
 * (rules_decide_name_within()) under the querying run's policy: a sandbox
 * is known by its address (runs_by_addr()); a process of this host asks
 * under the operator's rules alone.  Only A and AAAA of an allowed name go
 * upstream, with the proxy's own resolver (the hosts file, then evdns), and
 * each address given back is checked as a dial to it would be
 * (rules_check_addr_within()): a set holding one refused address is
 * refused whole.  A refused name is never sent upstream.  Other types of
 * an allowed name get no records (NOERROR, "no data"), so that a client
 * falls back to A and AAAA: HTTPS and SVCB records, which carry ECH keys
 * that would hide the SNI from the proxy, never pass; zone transfers are
 * refused.  Every query parsed is an audit record (proto "dns"); what
 * cannot be parsed is counted and dropped, or answered FORMERR.
 *
 * A readable UDP socket is read DNS_BATCH_MAX datagrams at a time with
 * one recvmmsg(2), each straight into a query the worker keeps from one
 * batch to the next, and what is answered while they are decided (a kept
 * answer, a refusal) goes with one sendmmsg(2) once all are: most of a
 * kept answer's cost is the kernel's, part of it per system call, not per
 * datagram (proxy/README.md, "The DNS filter's UDP path").
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "audit.h"
#include "conn.h"
#include "conn-core.h"
#include "dns.h"
#include "dnsmsg.h"
#include "gateway.h"
#include "given.h"
#include "log.h"
#include "proxy.h"
#include "resolve.h"
#include "rules.h"
#include "runs.h"

#define DNS_TYPE_IXFR		251	/* an incremental zone transfer */
#define DNS_CACHE_SLOTS		1024	/* answers kept, per worker: 2^n */
#define DNS_CACHE_WAYS		4	/* slots a name may take: 2^n */
#define DNS_CACHE_ADDRS		8	/* addresses kept of one answer */
#define DNS_BATCH_MAX		32	/* datagrams read, and answers sent,
					   with one system call */
#define DNS_UDP_TAKE		64	/* datagrams a readable event takes
					   before the worker's other events */
#define DNS_CLIENT_TEXT_MAX	64	/* "[V6]:PORT" of a client */

/*
 * An answer of a name server, kept for its TTL (DNS_TTL_MIN to
 * DNS_TTL_MAX): what it said of a name and type, before any decision (a
 * query is decided, and its addresses checked, for each run that asks).
 * A name and type may take any of the DNS_CACHE_WAYS slots of its set; a
 * new answer takes an empty or run-out one there, else the one that runs
 * out first.
 */
struct dns_cached {
	uint64_t		 hash;		/* of name and type; 0: empty */
	int64_t			 expires;	/* monotonic seconds */
	uint32_t		 ttl;
	uint16_t		 qtype;
	uint8_t			 nodata;	/* no name (0), no records (1) */
	uint8_t			 n;		/* addresses; 0: NXDOMAIN or NODATA */
	char			 name[DNSMSG_NAME_MAX];
	struct rules_addr	 addrs[DNS_CACHE_ADDRS];
};

struct dnsq;
struct dns_tcp;

/* A UDP socket of a worker, and the address it is bound to. */
struct dns_udp {
	struct dns_worker	*dw;
	struct sockaddr_storage	 here;
};

/*
 * The datagrams of one recvmmsg(2) on a UDP socket, and the answers to
 * them given while they are decided, sent with one sendmmsg(2) after.
 * slot[] holds the queries read into: a worker's, kept from one batch to
 * the next (one at a time is read, so its UDP sockets share them).  A
 * query looked up upstream leaves its slot and is answered on its own
 * later (sendto(2)); the next batch allocates another in its place.
 */
struct dns_batch {
	struct dnsq		*slot[DNS_BATCH_MAX];	/* NULL: none yet */
	struct mmsghdr		 in[DNS_BATCH_MAX];
	struct iovec		 iniov[DNS_BATCH_MAX];
	size_t			 nout;		/* answers in out[] */
	struct mmsghdr		 out[DNS_BATCH_MAX];
	struct iovec		 outiov[DNS_BATCH_MAX];
	struct sockaddr_storage	 to[DNS_BATCH_MAX];
	uint8_t			 answer[DNS_BATCH_MAX][DNS_MSG_MAX];
};

/* A worker's share of the filter. */
struct dns_worker {
	struct worker		*w;
	struct dns_udp		 udp[DNS_BINDS_MAX];
	struct event		*ev[DNS_BINDS_MAX * 2];	/* UDP, TCP accept */
	size_t			 nev;
	TAILQ_HEAD(, dnsq)	 pending;	/* looked up upstream now */
	size_t			 npending;
	TAILQ_HEAD(, dns_tcp)	 tcps;
	size_t			 ntcp;
	struct dns_cached	*cache;		/* DNS_CACHE_SLOTS */
	struct dns_batch	*batch;		/* UDP */
};

/* A TCP client: length-prefixed queries, answered one at a time. */
struct dns_tcp {
	TAILQ_ENTRY(dns_tcp)	 entry;
	struct dns_worker	*dw;
	struct bufferevent	*bev;
	struct sockaddr_storage	 peer;
	socklen_t		 peerlen;
	struct sockaddr_storage	 here;
	struct dnsq		*busy;		/* the query being answered */
	int			 in_next;	/* dns_tcp_next() runs */
	int			 dead;		/* to be freed when it is done */
};

/*
 * One query, from its datagram or TCP message to its answer.  One of a
 * batch (slot set) is the batch's: dnsq_end() leaves it there for the
 * next datagram, and its answer goes with the batch's.
 */
struct dnsq {
	TAILQ_ENTRY(dnsq)	 entry;		/* pending only */
	struct dns_worker	*dw;
	struct dnsq		**slot;		/* its batch's hold; NULL: none */
	int			 fd;		/* UDP: the socket; -1 */
	struct dns_tcp		*tcp;		/* TCP: the client; NULL */
	socklen_t		 peerlen;
	struct sockaddr_storage	 here;		/* the address it came to */
	uint64_t		 id;
	size_t			 len;
	struct dnsmsg_query	 q;
	struct rules_host	 host;
	struct run		*run;
	struct rules		*ceiling;
	struct rules		*policy;
	struct rules_decision	 d;
	uint16_t		 port;		/* the name's allowed port */
	enum conn_reason	 reason;
	int			 report;	/* report mode: refusals pass */
	struct resolve		*res;
	int			 starting;	/* in resolve_start_for() */
	int			 done;		/* answered while starting */
	/* Last, not zeroed (dnsq_reset()): written as the query is read. */
	struct sockaddr_storage	 peer;
	uint8_t			 msg[DNS_MSG_MAX];
};

static void	dns_tcp_next(struct dns_tcp *t);
static void	dns_tcp_free(struct dns_tcp *t);

/* ------------------------------------------------------------ sockets */

/* A socket of type on b's address, SO_REUSEPORT; -1 with errno. */
static int
dns_socket(const struct dns_bind *b, int type)
{
	int fd, one = 1, e;

	if ((fd = socket(b->ss.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) == -1 ||
	    (b->ss.ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6,
	    IPV6_V6ONLY, &one, sizeof(one)) == -1))
		goto fail;
	/* A bridge address may not exist yet (podman makes it on demand). */
	(void)setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&b->ss, b->len) == -1 ||
	    (type == SOCK_STREAM && listen(fd, 128) == -1))
		goto fail;
	return fd;
 fail:
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

/* The port the kernel gave a socket bound to port 0, into b. */
static int
dns_port_of(struct dns_bind *b, int fd)
{
	struct sockaddr_storage got;
	socklen_t len = sizeof(got);

	if (getsockname(fd, (struct sockaddr *)&got, &len) == -1)
		return -1;
	worker_set_port(&b->ss, proxy_sockaddr_port((struct sockaddr *)&got));
	return 0;
}

int
dns_listen_all(struct proxy *p)
{
	char list[1024], *s, *tok, *save = NULL, addr[INET6_ADDRSTRLEN];
	struct dns_bind *b;
	uint16_t port;
	int k, type;

	if (p->cfg.dns_bind_text == NULL || p->cfg.dns_bind_text[0] == '\0')
		return 0;
	if (strlen(p->cfg.dns_bind_text) >= sizeof(list)) {
		error("--dns-bind: the list is too long");
		return -1;
	}
	snprintf(list, sizeof(list), "%s", p->cfg.dns_bind_text);
	for (s = list; (tok = strtok_r(s, ",", &save)) != NULL; s = NULL) {
		if (p->ndns == DNS_BINDS_MAX) {
			error("--dns-bind: at most %d addresses",
			    DNS_BINDS_MAX);
			return -1;
		}
		b = &p->dns[p->ndns];
		for (k = 0; k < PROXY_WORKERS_MAX; k++)
			b->udp[k] = b->tcp[k] = -1;
		if (worker_parse_addrport(tok, DNS_PORT_DEFAULT, &b->ss,
		    &b->len) != 0) {
			error("--dns-bind: invalid address '%s': expected ADDR, "
			    "ADDR:PORT or [IPV6]:PORT", tok);
			return -2;
		}
		p->ndns++;
		/* UDP first: its port (when 0) is the TCP sockets' too. */
		for (type = 0; type < 2; type++)
			for (k = 0; k < p->nworkers; k++) {
				int fd = dns_socket(b, type == 0 ? SOCK_DGRAM :
				    SOCK_STREAM);

				if (fd == -1) {
					error("cannot serve DNS on %s (%s): %s",
					    tok, type == 0 ? "UDP" : "TCP",
					    strerror(errno));
					return -1;
				}
				if (type == 0)
					b->udp[k] = fd;
				else
					b->tcp[k] = fd;
				if (k == 0 && type == 0 &&
				    dns_port_of(b, fd) != 0) {
					error("cannot serve DNS on %s: %s",
					    tok, strerror(errno));
					return -1;
				}
			}
		port = proxy_sockaddr_port((struct sockaddr *)&b->ss);
		inet_ntop(b->ss.ss_family, b->ss.ss_family == AF_INET ?
		    (const void *)&((struct sockaddr_in *)&b->ss)->sin_addr :
		    (const void *)&((struct sockaddr_in6 *)&b->ss)->sin6_addr,
		    addr, sizeof(addr));
		snprintf(b->text, sizeof(b->text), b->ss.ss_family == AF_INET ?
		    "%s:%u" : "[%s]:%u", addr, (unsigned int)port);
	}
	return 0;
}

void
dns_close_all(struct proxy *p)
{
	size_t i;
	int k;

	for (i = 0; i < p->ndns; i++)
		for (k = 0; k < PROXY_WORKERS_MAX; k++) {
			if (p->dns[i].udp[k] != -1)
				close(p->dns[i].udp[k]);
			if (p->dns[i].tcp[k] != -1)
				close(p->dns[i].tcp[k]);
			p->dns[i].udp[k] = p->dns[i].tcp[k] = -1;
		}
}

/* ------------------------------------------------------------ queries */

/* q made ready for a query of dw: zeroed but for its peer and message. */
static void
dnsq_reset(struct dnsq *q, struct dns_worker *dw)
{
	memset(q, 0, offsetof(struct dnsq, peer));
	q->dw = dw;
}

/* A new query of dw, its own (no batch's), dnsq_reset(); or NULL. */
static struct dnsq *
dnsq_new(struct dns_worker *dw)
{
	struct dnsq *q;

	if ((q = malloc(sizeof(*q))) == NULL)
		return NULL;
	dnsq_reset(q, dw);
	return q;
}

/*
 * The query is done with: what it holds is released, its look-up
 * cancelled, and it is freed, unless a batch holds it (it is then kept
 * for the batch's next datagram).
 */
static void
dnsq_end(struct dnsq *q)
{
	if (q->res != NULL)
		resolve_cancel(q->res);
	q->res = NULL;
	run_release(q->run);
	rules_free(q->policy);
	rules_free(q->ceiling);
	q->run = NULL;
	q->policy = q->ceiling = NULL;
	if (q->slot == NULL)
		free(q);
}

/*
 * The audit record of q's answer: rcode, and the n addresses given.  Its
 * text is made only when there is an audit log to write it to (most of a
 * kept answer's own work, else); the query is counted either way.
 */
static void
dnsq_audit(struct dnsq *q, enum dnsmsg_rcode rcode,
    const struct rules_addr *addrs, size_t n)
{
	struct audit_record r;
	char where[RULES_WHERE_MAX], type[DNSMSG_TYPE_STR_MAX];
	char client[DNS_CLIENT_TEXT_MAX];
	char answers[DNSMSG_ANSWERS_MAX * RULES_ADDR_TEXT_MAX];	/* "a,b" */
	struct proxy *p = q->dw->w->p;
	size_t i, off = 0;

	METRIC_ADD(p, dns_queries[q->d.verdict == RULES_ALLOW], 1);
	if (p->audit == NULL)
		return;
	conn_sockaddr_text((struct sockaddr *)&q->peer, client, sizeof(client),
	    1);
	answers[0] = '\0';
	/* Each fits: RULES_ADDR_TEXT_MAX holds an address and its NUL. */
	for (i = 0; i < n && i < DNSMSG_ANSWERS_MAX; i++) {
		if (i > 0)
			answers[off++] = ',';
		rules_addr_text(&addrs[i], answers + off, sizeof(answers) - off);
		off += strlen(answers + off);
	}
	memset(&r, 0, sizeof(r));
	r.event = "decision";
	r.id = q->id;
	r.run = q->run != NULL ? run_id(q->run) : NULL;
	r.client = client;
	r.proto = "dns";
	r.host = q->q.name_ok ? q->q.name : NULL;
	r.port = -1;
	r.decision = q->d.verdict == RULES_ALLOW ? "allow" : "deny";
	r.reason = conn_reason_str(q->reason);
	r.rule = q->d.entry != NULL ? rules_entry_where(q->d.entry, where,
	    sizeof(where)) : NULL;
	r.bytes_up = r.bytes_down = r.duration_ms = -1;
	r.status = -1;
	r.qtype = dnsmsg_type_str(q->q.qtype, type, sizeof(type));
	r.rcode = dnsmsg_rcode_str(rcode);
	r.answers = n > 0 ? answers : NULL;
	if (audit_write(p->audit, &r) != 0)
		error("%llu: cannot write the audit log",
		    (unsigned long long)q->id);
}

/*
 * Sends q's answer, or, for a query of a batch, adds it to those the
 * batch sends once all its queries are decided (dns_batch_send()).  The
 * query is done with (dnsq_end()), unless starting.
 */
static void
dnsq_answer(struct dnsq *q, enum dnsmsg_rcode rcode,
    const struct dnsmsg_rr *rrs, size_t n)
{
	struct dns_batch *b = q->dw->batch;
	uint8_t buf[DNS_MSG_MAX + 2], *out = buf + 2;
	size_t max, len;
	int batched;

	max = q->tcp != NULL ? DNS_MSG_MAX : q->q.edns ? q->q.edns_size :
	    DNSMSG_UDP_MAX;
	if (max > DNS_MSG_MAX)
		max = DNS_MSG_MAX;
	/* A batch has room for an answer to each of its queries. */
	if ((batched = q->slot != NULL && b->nout < DNS_BATCH_MAX))
		out = b->answer[b->nout];
	len = dnsmsg_answer(&q->q, q->msg, rcode, rrs, n, max, out,
	    DNS_MSG_MAX);
	if (len > 0 && batched) {
		b->outiov[b->nout].iov_base = out;
		b->outiov[b->nout].iov_len = len;
		memcpy(&b->to[b->nout], &q->peer, q->peerlen);
		memset(&b->out[b->nout], 0, sizeof(b->out[b->nout]));
		b->out[b->nout].msg_hdr.msg_name = &b->to[b->nout];
		b->out[b->nout].msg_hdr.msg_namelen = q->peerlen;
		b->out[b->nout].msg_hdr.msg_iov = &b->outiov[b->nout];
		b->out[b->nout].msg_hdr.msg_iovlen = 1;
		b->nout++;
	} else if (len > 0 && q->fd != -1)
		(void)sendto(q->fd, out, len, MSG_DONTWAIT,
		    (struct sockaddr *)&q->peer, q->peerlen);
	else if (len > 0 && q->tcp != NULL) {
		buf[0] = (uint8_t)(len >> 8);
		buf[1] = (uint8_t)len;
		if (bufferevent_write(q->tcp->bev, buf, len + 2) != 0)
			len = 0;
	}
	if (q->tcp != NULL) {
		q->tcp->busy = NULL;
		dns_tcp_next(q->tcp);
	}
	if (q->starting) {
		q->done = 1;
		return;
	}
	dnsq_end(q);
}

/* A refusal: REFUSED, audited as a denial with q->d's entry and reason. */
static void
dnsq_refuse(struct dnsq *q, enum conn_reason reason)
{
	q->d.verdict = RULES_DENY;
	q->reason = reason;
	dnsq_audit(q, DNSMSG_REFUSED, NULL, 0);
	dnsq_answer(q, DNSMSG_REFUSED, NULL, 0);
}

/* --------------------------------------------------------------- cache */

static int64_t
dns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec;
}

/* FNV-1a of the canonical name and the type; never 0. */
static uint64_t
dns_cache_hash(const char *name, uint16_t qtype)
{
	uint64_t h = UINT64_C(14695981039346656037);
	size_t i;

	for (i = 0; name[i] != '\0'; i++) {
		h ^= (unsigned char)name[i];
		h *= UINT64_C(1099511628211);
	}
	h ^= qtype;
	h *= UINT64_C(1099511628211);
	return h != 0 ? h : 1;
}

/* The first slot of the set of hash h. */
static struct dns_cached *
dns_cache_set(struct dns_worker *dw, uint64_t h)
{
	return &dw->cache[h & (DNS_CACHE_SLOTS - 1) & ~(size_t)(DNS_CACHE_WAYS -
	    1)];
}

/*
 * The slot of q's name and type, when it holds an answer live at now
 * (dns_now()); or NULL.
 */
static struct dns_cached *
dns_cache_find(struct dns_worker *dw, const struct dnsq *q, int64_t now)
{
	uint64_t h = dns_cache_hash(q->host.text, q->q.qtype);
	struct dns_cached *c = dns_cache_set(dw, h);
	size_t i;

	for (i = 0; i < DNS_CACHE_WAYS; i++, c++)
		if (c->hash == h && c->qtype == q->q.qtype &&
		    strcmp(c->name, q->host.text) == 0)
			return c->expires > now ? c : NULL;
	return NULL;
}

/*
 * The addresses of a resolver's answer, at most max, in its order: those
 * neither IPv4 nor IPv6 left out.  Returns how many.
 */
static size_t
dns_addrs_of(const struct resolve_answers *a, struct rules_addr *out,
    size_t max)
{
	size_t i, n = 0;

	for (i = 0; i < a->n && n < max; i++) {
		const struct sockaddr *sa = (const struct sockaddr *)&a->addrs[i];

		memset(&out[n], 0, sizeof(out[n]));
		if (sa->sa_family == AF_INET)
			out[n].v4 = ((const struct sockaddr_in *)sa)->sin_addr;
		else if (sa->sa_family == AF_INET6)
			out[n].v6 = ((const struct sockaddr_in6 *)sa)->sin6_addr;
		else
			continue;
		out[n++].family = sa->sa_family;
	}
	return n;
}

/* Keeps what a name server said of q's name (a hosts file's: not kept). */
static void
dns_cache_put(struct dns_worker *dw, const struct dnsq *q,
    enum resolve_status st, const struct resolve_answers *a)
{
	uint64_t h = dns_cache_hash(q->host.text, q->q.qtype);
	struct dns_cached *set = dns_cache_set(dw, h), *c = set;
	uint32_t ttl = a->ttl;
	size_t i;

	if ((st != RESOLVE_OK && st != RESOLVE_NONAME) ||
	    (st == RESOLVE_OK && ttl == 0))
		return;
	/* Its own slot, else an empty one, else the one running out first. */
	for (i = 0; i < DNS_CACHE_WAYS; i++) {
		if (set[i].hash == h && set[i].qtype == q->q.qtype &&
		    strcmp(set[i].name, q->host.text) == 0) {
			c = &set[i];
			break;
		}
		if (set[i].hash == 0 || set[i].expires < c->expires)
			c = &set[i];
	}
	if (ttl < DNS_TTL_MIN)
		ttl = DNS_TTL_MIN;
	if (ttl > DNS_TTL_MAX)
		ttl = DNS_TTL_MAX;
	memset(c, 0, sizeof(*c));
	c->hash = h;
	c->qtype = q->q.qtype;
	c->ttl = ttl;
	c->expires = dns_now() + ttl;
	c->nodata = st == RESOLVE_NONAME && a->nodata;
	snprintf(c->name, sizeof(c->name), "%s", q->host.text);
	if (st == RESOLVE_OK)
		c->n = (uint8_t)dns_addrs_of(a, c->addrs, DNS_CACHE_ADDRS);
}

/*
 * The n addresses q's name has, each checked as a dial to it would be,
 * audited and answered, ttl their name server's (0: the hosts file's).
 */
static void
dnsq_give(struct dnsq *q, uint32_t ttl, const struct rules_addr *addrs,
    size_t n)
{
	struct dnsmsg_rr rrs[DNSMSG_ANSWERS_MAX];
	struct rules_decision ad;
	size_t i;

	if (n > DNSMSG_ANSWERS_MAX)
		n = DNSMSG_ANSWERS_MAX;
	if (ttl == 0)
		ttl = DNS_TTL_HOSTS;
	if (ttl < DNS_TTL_MIN)
		ttl = DNS_TTL_MIN;
	if (ttl > DNS_TTL_MAX)
		ttl = DNS_TTL_MAX;
	for (i = 0; i < n; i++) {
		memset(&rrs[i], 0, sizeof(rrs[i]));
		if (addrs[i].family == AF_INET) {
			rrs[i].type = DNSMSG_TYPE_A;
			memcpy(rrs[i].addr, &addrs[i].v4, 4);
		} else {
			rrs[i].type = DNSMSG_TYPE_AAAA;
			memcpy(rrs[i].addr, &addrs[i].v6, 16);
		}
		rrs[i].ttl = ttl;
		/* Each as a dial to it would be: one refused, all refused. */
		rules_check_addr_within(q->ceiling, q->policy, &addrs[i],
		    q->port, &ad);
		if (ad.verdict != RULES_ALLOW && !q->report) {
			q->d = ad;
			dnsq_refuse(q, ad.reason == RULES_REASON_DENIED ?
			    CONN_REASON_DENIED : CONN_REASON_INTERNAL_ADDRESS);
			return;
		}
	}
	/* what the run was given, for its transparent connections */
	given_put(q->dw->w->p->given, q->run != NULL ? run_id(q->run) : "",
	    q->host.text, addrs, n, ttl);
	dnsq_audit(q, DNSMSG_NOERROR, addrs, n);
	dnsq_answer(q, DNSMSG_NOERROR, rrs, n);
}

/* No records of q's name: NXDOMAIN, or NOERROR when the name is. */
static void
dnsq_none(struct dnsq *q, int nodata)
{
	enum dnsmsg_rcode rcode = nodata ? DNSMSG_NOERROR : DNSMSG_NXDOMAIN;

	dnsq_audit(q, rcode, NULL, 0);
	dnsq_answer(q, rcode, NULL, 0);
}

/* The addresses the name resolved to, kept, checked and answered. */
static void
dnsq_resolved(enum resolve_status st, const struct resolve_answers *a,
    void *arg)
{
	struct dnsq *q = arg;
	struct proxy *p = q->dw->w->p;
	struct rules_addr addrs[DNSMSG_ANSWERS_MAX];

	q->res = NULL;
	if (!q->starting) {
		TAILQ_REMOVE(&q->dw->pending, q, entry);
		q->dw->npending--;
	}
	dns_cache_put(q->dw, q, st, a);
	if (st == RESOLVE_TIMEOUT || st == RESOLVE_FAIL) {
		METRIC_ADD(p, dns_upstream_failures, 1);
		q->reason = st == RESOLVE_TIMEOUT ? CONN_REASON_DNS_TIMEOUT :
		    CONN_REASON_DNS_FAILED;
		dnsq_audit(q, DNSMSG_SERVFAIL, NULL, 0);
		dnsq_answer(q, DNSMSG_SERVFAIL, NULL, 0);
		return;
	}
	if (st == RESOLVE_NONAME) {
		dnsq_none(q, a->nodata);
		return;
	}
	dnsq_give(q, a->ttl, addrs, dns_addrs_of(a, addrs,
	    DNSMSG_ANSWERS_MAX));
}

/* Decides a parsed query and answers it, now or once looked up. */
static void
dnsq_decide(struct dnsq *q)
{
	struct worker *w = q->dw->w;
	struct proxy *p = w->p;
	struct run_policy pol;
	struct rules_addr peer;
	struct dns_cached *c;
	struct resolve *r;
	char leak_run[RUN_ID_MAX], leak_provider[64];
	int64_t now;
	int want;

	q->ceiling = proxy_rules_get(p);
	q->report = rules_mode(q->ceiling) == RULES_MODE_REPORT;
	/*
	 * A sandbox's query is its run's; one from this host (also one that
	 * enforce redirected here), no run's.
	 */
	if (conn_peer_of((struct sockaddr *)&q->peer,
	    (struct sockaddr *)&q->here, p->local, &peer) &&
	    (q->run = runs_by_addr(p->runs, &peer)) == NULL) {
		dnsq_refuse(q, CONN_REASON_PROXY_AUTH);
		return;
	}
	if (q->run != NULL) {
		if (run_policy(q->run, &pol) != 0) {
			dnsq_refuse(q, CONN_REASON_RUN_ENDED);
			return;
		}
		q->policy = pol.set;
	}
	/* A run's brokered key in a name: refused, before anything. */
	if (q->q.name_ok && gateway_leak(p->gateway, p->runs, q->q.name,
	    strlen(q->q.name), leak_run, leak_provider)) {
		dnsq_refuse(q, CONN_REASON_CREDENTIAL_LEAK);
		return;
	}
	if (!q->q.name_ok || rules_host_parse(q->q.name, strlen(q->q.name),
	    &q->host) != RULES_OK || q->host.kind != RULES_HOST_NAME) {
		dnsq_refuse(q, CONN_REASON_INVALID_HOST);
		return;
	}
	rules_decide_name_within(q->ceiling, q->policy, &q->host, &q->d,
	    &q->port);
	q->reason = conn_reason_of(q->d.reason);
	if (q->d.verdict != RULES_ALLOW && !q->report) {
		dnsq_refuse(q, q->reason);
		return;
	}
	switch (q->q.qtype) {
	case DNSMSG_TYPE_A:
		want = RESOLVE_WANT_A;
		break;
	case DNSMSG_TYPE_AAAA:
		want = RESOLVE_WANT_AAAA;
		break;
	case DNSMSG_TYPE_AXFR:
	case DNS_TYPE_IXFR:
		memset(&q->d, 0, sizeof(q->d));	/* no entry's doing */
		dnsq_refuse(q, CONN_REASON_PROTOCOL_NOT_ALLOWED);
		return;
	default:
		/* No data: HTTPS, SVCB, TXT, ANY, ... never go upstream. */
		dnsq_audit(q, DNSMSG_NOERROR, NULL, 0);
		dnsq_answer(q, DNSMSG_NOERROR, NULL, 0);
		return;
	}
	now = dns_now();
	if ((c = dns_cache_find(q->dw, q, now)) != NULL) {
		METRIC_ADD(p, dns_cache_hits, 1);
		if (c->n == 0)
			dnsq_none(q, c->nodata);
		else			/* its TTL what is left of it */
			dnsq_give(q, (uint32_t)(c->expires - now), c->addrs,
			    c->n);
		return;
	}
	/* Kept answers still come when too many are asked upstream. */
	if (q->dw->npending >= DNS_PENDING_MAX) {
		METRIC_ADD(p, dns_upstream_failures, 1);
		q->reason = CONN_REASON_OVERLOADED;
		dnsq_audit(q, DNSMSG_SERVFAIL, NULL, 0);
		dnsq_answer(q, DNSMSG_SERVFAIL, NULL, 0);
		return;
	}
	METRIC_ADD(p, dns_lookups, 1);
	q->starting = 1;
	r = resolve_start_for(w->dns, p->hosts, q->host.text, want,
	    dnsq_resolved, q);
	q->starting = 0;
	if (q->done) {			/* answered at once: hosts file */
		dnsq_end(q);
		return;
	}
	q->res = r;
	/* It outlives its batch: no longer the batch's to keep. */
	if (q->slot != NULL) {
		*q->slot = NULL;
		q->slot = NULL;
	}
	TAILQ_INSERT_TAIL(&q->dw->pending, q, entry);
	q->dw->npending++;
}

/* A query of len bytes in q->msg: parsed, then decided. */
static void
dnsq_start(struct dnsq *q)
{
	struct proxy *p = q->dw->w->p;
	char client[DNS_CLIENT_TEXT_MAX];
	const char *why;
	int r;

	q->id = __atomic_add_fetch(&p->next_id, 1, __ATOMIC_RELAXED);
	r = dnsmsg_parse(q->msg, q->len, &q->q, &why);
	if (r != 0) {
		METRIC_ADD(p, dns_malformed, 1);
		conn_sockaddr_text((struct sockaddr *)&q->peer, client,
		    sizeof(client), 1);
		debug_f("dns %s: %s", client, why);
		if (r == 1) {	/* answerable: FORMERR or NOTIMP */
			dnsq_answer(q, q->q.rcode, NULL, 0);
			return;
		}
		if (q->tcp != NULL) {	/* a stream out of step: it ends */
			q->tcp->busy = NULL;
			dns_tcp_free(q->tcp);
		}
		dnsq_end(q);
		return;
	}
	dnsq_decide(q);
}

/* ------------------------------------------------------------- UDP */

/*
 * The batch's slots made ready for a read, each with a query (allocated
 * where a query before left for upstream), from the first.  Returns how
 * many are: fewer than DNS_BATCH_MAX only out of memory.
 */
static size_t
dns_batch_ready(struct dns_batch *b, struct dns_worker *dw)
{
	struct msghdr *h;
	size_t i;

	for (i = 0; i < DNS_BATCH_MAX; i++) {
		if (b->slot[i] == NULL && (b->slot[i] = dnsq_new(dw)) == NULL)
			break;
		b->iniov[i].iov_base = b->slot[i]->msg;
		b->iniov[i].iov_len = sizeof(b->slot[i]->msg);
		h = &b->in[i].msg_hdr;
		memset(h, 0, sizeof(*h));
		h->msg_name = &b->slot[i]->peer;
		h->msg_namelen = sizeof(b->slot[i]->peer);
		h->msg_iov = &b->iniov[i];
		h->msg_iovlen = 1;
	}
	return i;
}

/* The answers the batch's queries were given, on fd; none left after. */
static void
dns_batch_send(struct dns_batch *b, int fd)
{
	size_t i = 0;
	int n;

	while (i < b->nout) {
		n = sendmmsg(fd, &b->out[i], (unsigned int)(b->nout - i),
		    MSG_DONTWAIT);
		/* The first not sent is dropped, as sendto(2)'s failure is. */
		i += n > 0 ? (size_t)n : 1;
	}
	b->nout = 0;
}

/* Datagrams on a UDP socket: a batch at a time (struct dns_batch). */
static void
dns_udp_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dns_udp *u = arg;
	struct dns_worker *dw = u->dw;
	struct dns_batch *b = dw->batch;
	struct dnsq *q;
	size_t taken = 0, ready, i;
	int n;

	(void)what;
	do {
		if ((ready = dns_batch_ready(b, dw)) == 0) {
			/* Out of memory: the datagram is dropped, counted. */
			if (recv(fd, NULL, 0, MSG_DONTWAIT) < 0)
				return;
			METRIC_ADD(dw->w->p, dns_malformed, 1);
			taken++;
			continue;
		}
		n = recvmmsg(fd, b->in, (unsigned int)ready, MSG_DONTWAIT, NULL);
		if (n <= 0)
			return;		/* EAGAIN, or an ICMP error: next time */
		for (i = 0; i < (size_t)n; i++) {
			q = b->slot[i];
			dnsq_reset(q, dw);
			q->slot = &b->slot[i];
			q->fd = fd;
			q->here = u->here;
			q->peerlen = b->in[i].msg_hdr.msg_namelen;
			q->len = b->in[i].msg_len;
			dnsq_start(q);
		}
		dns_batch_send(b, fd);
		taken += (size_t)n;
		/* Fewer than asked for: none left when it read. */
		if ((size_t)n < ready)
			return;
	} while (taken < DNS_UDP_TAKE);
}

/* ------------------------------------------------------------- TCP */

static void
dns_tcp_free(struct dns_tcp *t)
{
	if (t->in_next) {		/* dns_tcp_next() frees it after */
		t->dead = 1;
		return;
	}
	if (t->busy != NULL)
		t->busy->tcp = NULL;	/* its answer goes nowhere */
	TAILQ_REMOVE(&t->dw->tcps, t, entry);
	t->dw->ntcp--;
	bufferevent_free(t->bev);
	free(t);
}

/*
 * The whole messages of t's input, one at a time: the next once the one
 * before is answered.  An answer given at once (a refusal, the hosts
 * file) comes back here through dnsq_answer(), and the loop, not a
 * deeper call, takes the next; t is freed, when asked meanwhile, on the
 * way out.
 */
static void
dns_tcp_next(struct dns_tcp *t)
{
	struct evbuffer *in = bufferevent_get_input(t->bev);
	uint8_t hdr[2];
	struct dnsq *q;
	size_t len;

	if (t->in_next)
		return;
	t->in_next = 1;
	while (!t->dead && t->busy == NULL &&
	    evbuffer_copyout(in, hdr, 2) == 2) {
		len = (size_t)hdr[0] << 8 | hdr[1];
		if (len == 0 || len > DNS_MSG_MAX) {
			METRIC_ADD(t->dw->w->p, dns_malformed, 1);
			t->dead = 1;
			break;
		}
		if (evbuffer_get_length(in) < len + 2)
			break;
		if ((q = dnsq_new(t->dw)) == NULL) {
			t->dead = 1;
			break;
		}
		evbuffer_drain(in, 2);
		evbuffer_remove(in, q->msg, len);
		q->fd = -1;
		q->tcp = t;
		q->here = t->here;
		q->peer = t->peer;
		q->peerlen = t->peerlen;
		q->len = len;
		t->busy = q;
		dnsq_start(q);
	}
	t->in_next = 0;
	if (t->dead)
		dns_tcp_free(t);
}

static void
dns_tcp_read_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	dns_tcp_next(arg);
}

static void
dns_tcp_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;			/* EOF, an error, the idle timeout */
	dns_tcp_free(arg);
}

/* A TCP client on a listening socket. */
static void
dns_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct dns_worker *dw = arg;
	struct timeval idle = { DNS_TCP_IDLE_MS / 1000,
	    (DNS_TCP_IDLE_MS % 1000) * 1000 };
	struct dns_tcp *t;
	socklen_t herelen;
	int fd;

	(void)what;
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return;
	t->peerlen = sizeof(t->peer);
	fd = accept4(lfd, (struct sockaddr *)&t->peer, &t->peerlen,
	    SOCK_NONBLOCK | SOCK_CLOEXEC);
	herelen = sizeof(t->here);
	if (fd == -1 || dw->ntcp >= DNS_TCP_MAX ||
	    getsockname(fd, (struct sockaddr *)&t->here, &herelen) == -1 ||
	    (t->bev = bufferevent_socket_new(dw->w->base, fd,
	    BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		if (fd != -1)
			close(fd);
		free(t);
		return;
	}
	t->dw = dw;
	TAILQ_INSERT_TAIL(&dw->tcps, t, entry);
	dw->ntcp++;
	bufferevent_setcb(t->bev, dns_tcp_read_cb, NULL, dns_tcp_event_cb, t);
	bufferevent_set_timeouts(t->bev, &idle, &idle);
	bufferevent_setwatermark(t->bev, EV_READ, 0, DNS_MSG_MAX + 2);
	if (bufferevent_enable(t->bev, EV_READ) != 0)
		dns_tcp_free(t);
}

/* ------------------------------------------------------------ workers */

int
dns_worker_start(struct worker *w)
{
	struct proxy *p = w->p;
	struct dns_worker *dw;
	struct event *ev;
	size_t i;
	int k, fd;

	if (p->ndns == 0)
		return 0;
	if ((dw = calloc(1, sizeof(*dw))) == NULL)
		return -1;
	dw->w = w;
	if ((dw->cache = calloc(DNS_CACHE_SLOTS, sizeof(*dw->cache))) == NULL ||
	    (dw->batch = calloc(1, sizeof(*dw->batch))) == NULL) {
		free(dw->cache);
		free(dw);
		return -1;
	}
	TAILQ_INIT(&dw->pending);
	TAILQ_INIT(&dw->tcps);
	w->dns_filter = dw;
	for (i = 0; i < p->ndns; i++) {
		/*
		 * A datagram came to the address bound (a wildcard one does
		 * not say which: bind the sandboxes' and loopback's).
		 */
		dw->udp[i].dw = dw;
		dw->udp[i].here = p->dns[i].ss;
		for (k = 0; k < 2; k++) {
			fd = k == 0 ? p->dns[i].udp[w->id] : p->dns[i].tcp[w->id];
			if ((ev = event_new(w->base, fd, EV_READ | EV_PERSIST,
			    k == 0 ? dns_udp_cb : dns_accept_cb,
			    k == 0 ? (void *)&dw->udp[i] : (void *)dw)) == NULL ||
			    event_add(ev, NULL) != 0) {
				if (ev != NULL)
					event_free(ev);
				return -1;
			}
			dw->ev[dw->nev++] = ev;
			/* the worker owns it now */
			if (k == 0)
				p->dns[i].udp[w->id] = -1;
			else
				p->dns[i].tcp[w->id] = -1;
		}
	}
	return 0;
}

void
dns_worker_stop(struct worker *w)
{
	struct dns_worker *dw = w->dns_filter;
	struct dnsq *q;
	size_t i;

	if (dw == NULL)
		return;
	for (i = 0; i < dw->nev; i++) {
		close(event_get_fd(dw->ev[i]));
		event_free(dw->ev[i]);
	}
	dw->nev = 0;
	while ((q = TAILQ_FIRST(&dw->pending)) != NULL) {
		TAILQ_REMOVE(&dw->pending, q, entry);
		dw->npending--;
		if (q->tcp != NULL)
			q->tcp->busy = NULL;
		dnsq_end(q);		/* cancels its look-up */
	}
	while (!TAILQ_EMPTY(&dw->tcps))
		dns_tcp_free(TAILQ_FIRST(&dw->tcps));
}

void
dns_worker_free(struct worker *w)
{
	struct dns_worker *dw = w->dns_filter;
	size_t i;

	dns_worker_stop(w);
	if (dw == NULL)
		return;
	for (i = 0; i < DNS_BATCH_MAX; i++)
		free(dw->batch->slot[i]);	/* each ended: holds nothing */
	free(dw->batch);
	free(dw->cache);
	free(dw);
	w->dns_filter = NULL;
}
