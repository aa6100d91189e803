/*
 * conn.c — one client connection, from its first byte to its close.
 *
 *   HEAD ──CONNECT──> RESOLVE ──> DIAL ──> PEEK ──> TUNNEL
 *     │                 │          │        │          │
 *     └─origin-form─> FINISH <─────┴────────┴──────────┘──> closed
 *     (healthz, metrics, errors)
 *
 * Every state change goes through conn_set_state(), which arms that state's
 * timeout.  conn_close() is the one teardown: it cancels DNS, frees both
 * sides, writes the close record, fixes the counters and drops the rules
 * reference.  A connection writes exactly one decision record (when its
 * fate is known) and one close record.
 *
 * A DNS look-up (resolve.c) never calls back after resolve_cancel(), which
 * conn_close() calls; its own memory outlives the connection until evdns
 * has called back for the cancelled queries (STYLE.md).
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>

#include "rules.h"
#include "proxy.h"
#include "audit.h"
#include "http.h"
#include "log.h"
#include "tls-hello.h"
#include "resolve.h"
#include "runs.h"
#include "tunnel.h"
#include "conn.h"

/* The read made as a connection is accepted: most request heads fit. */
#define CONN_FIRST_READ		4096
/*
 * An address as text, or the refused addresses of a name, as the audit
 * record's `addr` and a 403 name them.
 */
#define CONN_ADDR_TEXT_MAX	256

enum conn_state {
	CONN_HEAD = 0,		/* reading the client's request head */
	CONN_RESOLVE,		/* waiting for evdns */
	CONN_DIAL,		/* connecting to the pinned address */
	CONN_PEEK,		/* CONNECT answered; waiting for the client's bytes */
	CONN_TUNNEL,		/* relaying both ways */
	CONN_HTTP,		/* forwarding one absolute-form exchange */
	CONN_FINISH,		/* writing a last answer, then closing */
};

/*
 * Everything that belongs to one request on a connection: a connection may
 * carry several (keep-alive absolute-form requests, then perhaps a CONNECT),
 * and each is decided once and recorded once.  conn_req_begin() is the one
 * place it is reset.
 */
struct conn_req {
	char			 run[RUN_ID_MAX];	/* "" for none */
	const char		*proto;		/* "connect" | "http" */
	struct rules_host	 host;
	uint16_t		 port;
	struct rules_decision	 d;
	enum conn_reason	 reason;
	int			 decided;	/* decision record written */
	int			 report_only;	/* denied, let through (report) */
	int			 status;	/* HTTP status answered */
	struct sockaddr_storage	 addr;		/* pinned */
	socklen_t		 addrlen;
	char			 addr_text[CONN_ADDR_TEXT_MAX];
	char			 sni[256];
	int			 has_sni;
	uint64_t		 down_mark;	/* c->bytes_down at its start */

	/* An absolute-form exchange. */
	struct http_framing	*body;		/* its body in flight */
	int			 body_done;	/* all of it read */
	int			 is_head;	/* HEAD: no response body */
	int			 upgrade;	/* asks for an Upgrade */
	int			 keep_alive;	/* the client keeps the connection */
};

struct conn {
	uint64_t		 id;
	struct worker		*w;
	struct proxy		*p;
	enum conn_state		 state;
	struct bufferevent	*client;
	struct bufferevent	*up;		/* the origin */
	struct rules		*rules;		/* this connection's set */
	struct event		*timer;
	struct resolve		*res;		/* look-up in flight */
	struct timeval		 started;
	struct timeval		 last_io;	/* for the idle timeout */
	char			 client_text[64];
	int			 depth;		/* callbacks of c running */
	int			 closing;	/* closed; freed at depth 0 */
	int			 decisions;	/* decision records written */

	struct conn_req		 req;		/* the request being handled */

	/* Absolute-form HTTP: one exchange at a time on a keep-alive pair. */
	struct evbuffer		*fwd;		/* to the origin, not yet sent */
	struct evbuffer		*back;		/* to the client, not yet sent */
	struct http_framing	*resp_framing;	/* response body in flight */
	int			 up_keep_alive;
	int			 resp_until_eof;
	int			 up_ready;	/* c->up connected to up_host */
	char			 up_host[RULES_HOST_TEXT_MAX];
	char			 up_addr[CONN_ADDR_TEXT_MAX];	/* its address */
	uint16_t		 up_port;

	/* Tunnel: from the peek on, the sockets are the tunnel's. */
	struct tunnel		*tun;
	uint64_t		 bytes_up;	/* before the tunnel, then all */
	uint64_t		 bytes_down;
	int			 tunnel_counted;

	TAILQ_ENTRY(conn)	 entry;
};

/* The timer lives just past the struct, in the same pool object. */
#define CONN_TIMER_OFF	POOL_PAST(struct conn)

size_t
conn_size(void)
{
	return CONN_TIMER_OFF + event_get_struct_event_size();
}

static void	conn_close(struct conn *);
static void	conn_read_cb(struct bufferevent *, void *);
static void	conn_write_cb(struct bufferevent *, void *);
static void	conn_event_cb(struct bufferevent *, short, void *);
static void	conn_timer_cb(evutil_socket_t, short, void *);
static void	conn_dial(struct conn *);
static void	conn_tunnel_start(struct conn *);
static void	conn_tunnel_enter(struct conn *);
static void	conn_tls_deny(struct conn *, enum conn_reason);

/* What a state does with the events of a side (see conn_states[]). */
static void	conn_client_event(struct conn *, short);
static void	conn_idle_up_read(struct conn *);
static void	conn_idle_up_event(struct conn *, short);
static void	conn_dial_event(struct conn *, short);
static void	conn_peek(struct conn *);
static void	conn_peek_up_read(struct conn *);
static void	conn_peek_up_event(struct conn *, short);
static void	conn_http_client_read(struct conn *);
static void	conn_http_up_read(struct conn *);
static void	conn_http_client_drained(struct conn *);
static void	conn_http_up_drained(struct conn *);
static void	conn_http_up_event(struct conn *, short);
static void	conn_finish_write(struct conn *);
static void	conn_http_send(struct conn *);
static void	conn_up_drop(struct conn *);
static void	conn_finish(struct conn *);
static void	relay(struct conn *, struct bufferevent *, struct bufferevent *,
		    uint64_t *);
static void	conn_read_head(struct conn *);

static const char *const conn_reason_names[] = {
	[CONN_REASON_ALLOWED] = "allowed",
	[CONN_REASON_DENIED] = "denied",
	[CONN_REASON_NOT_ALLOWLISTED] = "not-allowlisted",
	[CONN_REASON_PORT_NOT_ALLOWED] = "port-not-allowed",
	[CONN_REASON_INTERNAL_ADDRESS] = "internal-address",
	[CONN_REASON_INVALID_HOST] = "invalid-host",
	[CONN_REASON_SNI_MISSING] = "sni-missing",
	[CONN_REASON_SNI_MISMATCH] = "sni-mismatch",
	[CONN_REASON_HOST_MISMATCH] = "host-mismatch",
	[CONN_REASON_PROTOCOL_NOT_ALLOWED] = "protocol-not-allowed",
	[CONN_REASON_BAD_TLS] = "bad-tls",
	[CONN_REASON_OWN_ADDRESS] = "own-address",
	[CONN_REASON_DNS_FAILED] = "dns-failed",
	[CONN_REASON_CONNECT_FAILED] = "connect-failed",
	[CONN_REASON_CONNECT_TIMEOUT] = "connect-timeout",
	[CONN_REASON_BAD_REQUEST] = "bad-request",
	[CONN_REASON_HEAD_TIMEOUT] = "head-timeout",
	[CONN_REASON_PEEK_TIMEOUT] = "peek-timeout",
	[CONN_REASON_OVERLOADED] = "overloaded",
	[CONN_REASON_CLIENT_GONE] = "client-gone",
	[CONN_REASON_DNS_TIMEOUT] = "dns-timeout",
	[CONN_REASON_PROXY_AUTH] = "proxy-auth",
	[CONN_REASON_UPSTREAM_TIMEOUT] = "upstream-timeout",
};

const char *
conn_reason_str(enum conn_reason r)
{
	if ((size_t)r >= sizeof(conn_reason_names) / sizeof(conn_reason_names[0]) ||
	    conn_reason_names[r] == NULL)
		return "unknown";
	return conn_reason_names[r];
}

static enum conn_reason
reason_from_rules(enum rules_reason r)
{
	switch (r) {
	case RULES_REASON_ALLOWED:
		return CONN_REASON_ALLOWED;
	case RULES_REASON_DENIED:
		return CONN_REASON_DENIED;
	case RULES_REASON_PORT_NOT_ALLOWED:
		return CONN_REASON_PORT_NOT_ALLOWED;
	case RULES_REASON_INTERNAL_ADDRESS:
		return CONN_REASON_INTERNAL_ADDRESS;
	case RULES_REASON_INVALID_HOST:
		return CONN_REASON_INVALID_HOST;
	case RULES_REASON_NOT_ALLOWLISTED:
	default:
		return CONN_REASON_NOT_ALLOWLISTED;
	}
}

static int64_t
elapsed_ms(const struct timeval *since)
{
	struct timeval now, d;

	gettimeofday(&now, NULL);
	timersub(&now, since, &d);
	return (int64_t)d.tv_sec * 1000 + d.tv_usec / 1000;
}

static void
sockaddr_text(const struct sockaddr *sa, char *buf, size_t len, int with_port)
{
	char ip[INET6_ADDRSTRLEN];
	uint16_t port;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		port = ntohs(s4->sin_port);
		if (with_port)
			snprintf(buf, len, "%s:%u", ip, port);
		else
			snprintf(buf, len, "%s", ip);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		port = ntohs(s6->sin6_port);
		if (with_port)
			snprintf(buf, len, "[%s]:%u", ip, port);
		else
			snprintf(buf, len, "%s", ip);
	} else
		snprintf(buf, len, "unknown");
}

/* ------------------------------------------------------------ records */

static void
conn_audit(struct conn *c, const char *event)
{
	struct audit_record r;
	char where[RULES_WHERE_MAX];
	int have_host = c->req.host.len > 0;

	memset(&r, 0, sizeof(r));
	r.event = event;
	r.id = c->id;
	r.run = c->req.run[0] != '\0' ? c->req.run : NULL;
	r.client = c->client_text;
	r.proto = c->req.proto;
	r.host = have_host ? c->req.host.text : NULL;
	r.port = have_host ? c->req.port : -1;
	r.sni = c->req.has_sni ? c->req.sni : NULL;
	r.addr = c->req.addr_text[0] != '\0' ? c->req.addr_text : NULL;
	r.decision = c->req.d.verdict == RULES_ALLOW ? "allow" : "deny";
	r.reason = conn_reason_str(c->req.reason);
	r.rule = c->req.d.entry != NULL ? rules_entry_where(c->req.d.entry, where,
	    sizeof(where)) : NULL;
	r.status = c->req.status > 0 ? c->req.status : -1;
	if (strcmp(event, "close") == 0) {
		r.bytes_up = (int64_t)c->bytes_up;
		r.bytes_down = (int64_t)c->bytes_down;
		r.duration_ms = elapsed_ms(&c->started);
	} else {
		r.bytes_up = r.bytes_down = r.duration_ms = -1;
	}
	if (audit_write(c->p->audit, &r) != 0)
		error("%llu: cannot write the audit log",
		    (unsigned long long)c->id);
}

/*
 * The request's fate: writes its decision record (once; a second call for
 * the same request changes nothing) and counts it.  The verdict is what the
 * record says: RULES_DENY for a refusal, also one let through in report
 * mode.
 */
static void
conn_decided(struct conn *c, enum rules_verdict verdict,
    enum conn_reason reason)
{
	if (c->req.decided)
		return;
	c->req.decided = 1;
	c->req.d.verdict = verdict;
	c->req.reason = reason;
	c->decisions++;
	METRIC_ADD(c->p, decisions[c->req.d.verdict == RULES_ALLOW], 1);
	METRIC_ADD(c->p, reasons[reason], 1);
	conn_audit(c, "decision");
}

/*
 * A new request on the connection, in `proto`: nothing of the one before
 * stays (its decision record is written, or it had no fate to record).
 */
static void
conn_req_begin(struct conn *c, const char *proto)
{
	http_framing_free(c->req.body);
	memset(&c->req, 0, sizeof(c->req));
	c->req.proto = proto;
	c->req.status = -1;
	c->req.down_mark = c->bytes_down;
}

/* ---------------------------------------------------------- lifecycle */

/*
 * What each state does with the sockets.  conn_set_state() installs it:
 * the bufferevents' callbacks are always conn_read_cb(), conn_write_cb()
 * and conn_event_cb(), which run the state's handler for the side the
 * event is on (none: the event changes nothing); then the reading each
 * side does, the client's read watermark, and the state's timer.  Within
 * a state, backpressure may stop and start reading again.
 */
typedef void	(*conn_io_fn)(struct conn *);
typedef void	(*conn_ev_fn)(struct conn *, short);

enum conn_io {
	CONN_IO_KEEP = 0,	/* as it is (no epoll_ctl(2) on the way) */
	CONN_IO_READ,		/* reading */
	CONN_IO_STOP,		/* not reading */
	CONN_IO_PORT,		/* reading if the allow entry names the port */
	CONN_IO_WRITE,		/* not reading; writing what is left */
};

enum conn_wm {
	CONN_WM_KEEP = 0,
	CONN_WM_HEAD,		/* reads up to a request head too many */
	CONN_WM_PEEK,		/* up to a ClientHello or a request head */
	CONN_WM_FLOW,		/* no read limit; write backpressure */
};

#define CONN_TIMEOUT_FINISH	((size_t)-1)	/* PROXY_FINISH_MS */

static const struct conn_state_def {
	const char	*name;
	size_t		 timeout;	/* offset of its proxy_config field */
	conn_io_fn	 client_read, client_write;
	conn_io_fn	 up_read, up_write;
	conn_ev_fn	 up_event;	/* the client's: conn_client_event */
	enum conn_io	 client_io, up_io;
	enum conn_wm	 wm;
	int		 bulk;		/* large reads and writes */
} conn_states[] = {
	[CONN_HEAD] = { "head", offsetof(struct proxy_config, head_ms),
	    conn_read_head, NULL, conn_idle_up_read, NULL, conn_idle_up_event,
	    CONN_IO_READ, CONN_IO_READ, CONN_WM_HEAD, 0 },
	[CONN_RESOLVE] = { "resolve", offsetof(struct proxy_config, dns_ms),
	    NULL, NULL, NULL, NULL, NULL,
	    CONN_IO_KEEP, CONN_IO_KEEP, CONN_WM_KEEP, 0 },
	[CONN_DIAL] = { "dial", offsetof(struct proxy_config, connect_ms),
	    NULL, NULL, NULL, NULL, conn_dial_event,
	    CONN_IO_KEEP, CONN_IO_KEEP, CONN_WM_KEEP, 0 },
	[CONN_PEEK] = { "peek", offsetof(struct proxy_config, peek_ms),
	    conn_peek, NULL, conn_peek_up_read, NULL, conn_peek_up_event,
	    CONN_IO_READ, CONN_IO_PORT, CONN_WM_PEEK, 0 },
	/* The sockets go to the tunnel as they are registered (see there). */
	[CONN_TUNNEL] = { "tunnel", offsetof(struct proxy_config, idle_ms),
	    NULL, NULL, NULL, NULL, NULL,
	    CONN_IO_KEEP, CONN_IO_KEEP, CONN_WM_KEEP, 0 },
	[CONN_HTTP] = { "http", offsetof(struct proxy_config, idle_ms),
	    conn_http_client_read, conn_http_client_drained,
	    conn_http_up_read, conn_http_up_drained, conn_http_up_event,
	    CONN_IO_READ, CONN_IO_READ, CONN_WM_FLOW, 1 },
	[CONN_FINISH] = { "finish", CONN_TIMEOUT_FINISH,
	    NULL, conn_finish_write, NULL, NULL, NULL,
	    CONN_IO_WRITE, CONN_IO_STOP, CONN_WM_KEEP, 0 },
};

static void
conn_side_io(struct conn *c, struct bufferevent *bev, enum conn_io io)
{
	switch (io) {
	case CONN_IO_KEEP:
		break;
	case CONN_IO_PORT:
		if (c->req.d.entry == NULL ||
		    !rules_entry_names_port(c->req.d.entry, c->req.port)) {
			bufferevent_disable(bev, EV_READ);
			break;
		}
		/* FALLTHROUGH */
	case CONN_IO_READ:
		/*
		 * Reading only: a bufferevent writes whenever its output has
		 * bytes (EV_WRITE is on from its making), and enabling EV_WRITE
		 * on an empty output would only ask epoll for a writable socket,
		 * to be told so once and stop asking.
		 */
		bufferevent_enable(bev, EV_READ);
		break;
	case CONN_IO_STOP:
		bufferevent_disable(bev, EV_READ);
		break;
	case CONN_IO_WRITE:
		bufferevent_disable(bev, EV_READ);
		bufferevent_enable(bev, EV_WRITE);
		break;
	}
}

static void
conn_watermarks(struct conn *c, enum conn_wm wm)
{
	size_t head = c->p->cfg.head_max;

	switch (wm) {
	case CONN_WM_KEEP:
		break;
	case CONN_WM_HEAD:
		bufferevent_setwatermark(c->client, EV_READ, 0, head + 1);
		break;
	case CONN_WM_PEEK:
		bufferevent_setwatermark(c->client, EV_READ, 0,
		    TLS_HELLO_MAX > head ? TLS_HELLO_MAX : head);
		break;
	case CONN_WM_FLOW:
		bufferevent_setwatermark(c->client, EV_READ, 0, 0);
		bufferevent_setwatermark(c->client, EV_WRITE,
		    PROXY_HIGH_WATER / 2, 0);
		if (c->up != NULL)
			bufferevent_setwatermark(c->up, EV_WRITE,
			    PROXY_HIGH_WATER / 2, 0);
		break;
	}
}

/* Larger single reads and writes once bytes flow: fewer system calls. */
static void
conn_bulk_io(struct conn *c)
{
	bufferevent_set_max_single_read(c->client, PROXY_IO_CHUNK);
	bufferevent_set_max_single_write(c->client, PROXY_IO_CHUNK);
	bufferevent_set_max_single_read(c->up, PROXY_IO_CHUNK);
	bufferevent_set_max_single_write(c->up, PROXY_IO_CHUNK);
}

/*
 * The one way to change state: the state's handlers (by c->state), its
 * reading, watermarks and I/O sizes, and its timer.
 */
static void
conn_set_state(struct conn *c, enum conn_state s)
{
	const struct conn_state_def *def = &conn_states[s];
	struct timeval tv;
	int ms;

	debug_f("%llu: %s -> %s", (unsigned long long)c->id,
	    conn_states[c->state].name, def->name);
	c->state = s;
	if (c->client != NULL) {
		conn_watermarks(c, def->wm);
		conn_side_io(c, c->client, def->client_io);
	}
	if (c->up != NULL)
		conn_side_io(c, c->up, def->up_io);
	if (def->bulk && c->client != NULL && c->up != NULL)
		conn_bulk_io(c);
	ms = def->timeout == CONN_TIMEOUT_FINISH ? PROXY_FINISH_MS :
	    *(const int *)(const void *)((const char *)&c->p->cfg +
	    def->timeout);
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(c->timer, &tv);
	if (s == CONN_TUNNEL && !c->tunnel_counted) {
		c->tunnel_counted = 1;
		METRIC_ADD(c->p, tunnels_active, 1);
	}
}

/*
 * Every callback into a connection runs between conn_enter() and
 * conn_leave().  A conn_close() in between does the whole teardown at once
 * (records, sockets, DNS, counters) but the memory stays until the
 * outermost callback returns: nothing up the chain reads freed memory, and
 * a second close is nothing.
 */
static struct conn *
conn_enter(void *arg)
{
	struct conn *c = arg;

	c->depth++;
	return c;
}

static void
conn_leave(struct conn *c)
{
	if (--c->depth == 0 && c->closing)
		pool_put(&c->w->conn_pool, c);
}

/* A bufferevent's event, given to the state's handler for its side. */
static void
conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = conn_enter(arg);
	const struct conn_state_def *def = &conn_states[c->state];
	conn_io_fn fn = bev == c->client ? def->client_read : def->up_read;

	if (!c->closing && fn != NULL)
		fn(c);
	conn_leave(c);
}

static void
conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = conn_enter(arg);
	const struct conn_state_def *def = &conn_states[c->state];
	conn_io_fn fn = bev == c->client ? def->client_write : def->up_write;

	if (!c->closing && fn != NULL)
		fn(c);
	conn_leave(c);
}

static void
conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = conn_enter(arg);

	if (!c->closing) {
		if (bev == c->client)
			conn_client_event(c, what);
		else if (conn_states[c->state].up_event != NULL)
			conn_states[c->state].up_event(c, what);
		else
			conn_close(c);
	}
	conn_leave(c);
}

/* Gives a new bufferevent of c the dispatching callbacks. */
static void
conn_bev_init(struct conn *c, struct bufferevent *bev)
{
	bufferevent_setcb(bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
}

/*
 * The one teardown: DNS cancelled, records written, both sides and the
 * tunnel freed, counters fixed, the rules reference dropped.  Entered from
 * a callback of c, the memory itself goes when that returns (conn_leave).
 */
static void
conn_close(struct conn *c)
{
	struct worker *w = c->w;

	if (c->closing)
		return;
	c->closing = 1;
	if (c->res != NULL) {
		resolve_cancel(c->res);
		c->res = NULL;
	}
	if (!c->req.decided && c->req.host.len > 0) {
		/* Decided by name, but the client left before the end. */
		conn_decided(c, c->req.d.verdict, c->req.d.verdict ==
		    RULES_ALLOW && !c->req.report_only ?
		    CONN_REASON_CLIENT_GONE : reason_from_rules(c->req.d.reason));
	}
	if (c->tun != NULL) {
		c->bytes_up += tunnel_moved(c->tun, TUNNEL_UP);
		c->bytes_down += tunnel_moved(c->tun, TUNNEL_DOWN);
		tunnel_free(c->tun);
		c->tun = NULL;
	}
	if (c->req.host.len > 0 || c->decisions > 0)
		conn_audit(c, "close");
	if (c->client != NULL)
		bufferevent_free(c->client);
	if (c->up != NULL)
		bufferevent_free(c->up);
	c->client = c->up = NULL;
	if (c->timer != NULL)
		event_del(c->timer);	/* in c's own memory: nothing to free */
	if (c->fwd != NULL)
		evbuffer_free(c->fwd);
	if (c->back != NULL)
		evbuffer_free(c->back);
	c->fwd = c->back = NULL;
	http_framing_free(c->req.body);
	c->req.body = NULL;
	http_framing_free(c->resp_framing);
	c->resp_framing = NULL;
	METRIC_ADD(c->p, bytes_up, c->bytes_up);
	METRIC_ADD(c->p, bytes_down, c->bytes_down);
	if (c->tunnel_counted)
		METRIC_SUB(c->p, tunnels_active, 1);
	METRIC_SUB(c->p, conns_active, 1);
	rules_free(c->rules);
	c->rules = NULL;
	TAILQ_REMOVE(&w->conns, c, entry);
	w->nconns--;
	if (c->depth == 0)
		pool_put(&w->conn_pool, c);
	worker_conn_closed(w);
}

void
conn_close_all(struct worker *w)
{
	struct conn *c;

	while ((c = TAILQ_FIRST(&w->conns)) != NULL)
		conn_close(c);
}

/* Idle connections end now; tunnels and answers in flight may finish. */
void
conn_stop_idle(struct worker *w)
{
	struct conn *c, *next;

	for (c = TAILQ_FIRST(&w->conns); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (c->state == CONN_HEAD &&
		    evbuffer_get_length(bufferevent_get_input(c->client)) == 0)
			conn_close(c);
	}
}

/*
 * Answers the client and closes once the answer is written.  The body names
 * the reason and the rule so that a person and an agent both understand it.
 */
static void
conn_fail(struct conn *c, int status, enum conn_reason reason,
    const char *detail)
{
	char body[2048], where[RULES_WHERE_MAX], target[RULES_HOST_TEXT_MAX + 8];
	char ruletext[RULES_WHERE_MAX + 16] = "";
	const char *rule = c->req.d.entry != NULL ? rules_entry_where(c->req.d.entry,
	    where, sizeof(where)) : NULL;

	c->req.status = status;
	if (c->req.host.len > 0)
		snprintf(target, sizeof(target), "%s:%u", c->req.host.text, c->req.port);
	else
		snprintf(target, sizeof(target), "the request");
	if (rule != NULL)
		snprintf(ruletext, sizeof(ruletext), " (rule %s)", rule);
	if (status == 403)
		snprintf(body, sizeof(body),
		    "intutic: blocked %s: %s (%s).\n"
		    "This is a policy decision of this workspace%s.\n"
		    "Retrying without the proxy will not work: it is the only "
		    "way out.\n", target, detail, conn_reason_str(reason),
		    ruletext);
	else
		snprintf(body, sizeof(body), "intutic: %s: %s (%s).\n", target,
		    detail, conn_reason_str(reason));
	conn_decided(c, c->req.d.verdict, reason);
	http_answer(bufferevent_get_output(c->client), status,
	    conn_reason_str(reason), body);
	conn_finish(c);
}

/* A refusal: decided RULES_DENY, answered, closed. */
static void
conn_deny(struct conn *c, int status, enum conn_reason reason,
    const char *detail)
{
	c->req.status = status;		/* the decision record says it */
	conn_decided(c, RULES_DENY, reason);
	conn_fail(c, status, reason, detail);
}

/*
 * The last words to the client are in its output: drop the origin, stop
 * reading, and close once they are written (or the finish timeout ends it).
 */
static void
conn_finish(struct conn *c)
{
	conn_up_drop(c);
	conn_set_state(c, CONN_FINISH);
}

/* Closes a tunnel the client opened with TLS: a fatal access_denied alert. */
static void
conn_tls_deny(struct conn *c, enum conn_reason reason)
{
	static const uint8_t alert[] = { 0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 49 };

	conn_decided(c, RULES_DENY, reason);
	evbuffer_drain(bufferevent_get_input(c->client),
	    evbuffer_get_length(bufferevent_get_input(c->client)));
	bufferevent_write(c->client, alert, sizeof(alert));
	conn_finish(c);
}

static void
conn_finish_write(struct conn *c)
{
	if (evbuffer_get_length(bufferevent_get_output(c->client)) == 0)
		conn_close(c);
}

static void
conn_timeout(struct conn *c)
{
	char detail[128];
	int64_t idle;
	struct timeval tv;

	switch (c->state) {
	case CONN_HEAD:
		METRIC_ADD(c->p, timeouts, 1);
		if (evbuffer_get_length(bufferevent_get_input(c->client)) > 0) {
			conn_req_begin(c, "http");
			conn_fail(c, 408, CONN_REASON_HEAD_TIMEOUT,
			    "the request head did not arrive in time");
		} else
			conn_close(c);
		return;
	case CONN_RESOLVE:
		/* No answer may come after this: the request has its fate. */
		if (c->res != NULL) {
			resolve_cancel(c->res);
			c->res = NULL;
		}
		METRIC_ADD(c->p, timeouts, 1);
		METRIC_ADD(c->p, dns_failures, 1);
		snprintf(detail, sizeof(detail), "the name did not resolve "
		    "within %d ms (--dns-timeout)", c->p->cfg.dns_ms);
		conn_fail(c, 504, CONN_REASON_DNS_TIMEOUT, detail);
		return;
	case CONN_DIAL:
		METRIC_ADD(c->p, timeouts, 1);
		snprintf(detail, sizeof(detail), "the origin did not accept "
		    "the connection within %d ms (--connect-timeout)",
		    c->p->cfg.connect_ms);
		conn_fail(c, 504, CONN_REASON_CONNECT_TIMEOUT, detail);
		return;
	case CONN_PEEK:
		METRIC_ADD(c->p, timeouts, 1);
		conn_decided(c, RULES_DENY, CONN_REASON_PEEK_TIMEOUT);
		conn_close(c);
		return;
	case CONN_TUNNEL:
	case CONN_HTTP:
		idle = elapsed_ms(&c->last_io);
		if (idle < c->p->cfg.idle_ms) {
			int64_t left = c->p->cfg.idle_ms - idle;

			tv.tv_sec = left / 1000;
			tv.tv_usec = (left % 1000) * 1000;
			evtimer_add(c->timer, &tv);
			return;
		}
		METRIC_ADD(c->p, timeouts, 1);
		/* Nothing of the answer has gone out: the client can be told. */
		if (c->state == CONN_HTTP && c->req.status <= 0 &&
		    c->bytes_down == c->req.down_mark) {
			snprintf(detail, sizeof(detail), "the origin did not "
			    "answer within %d ms", c->p->cfg.idle_ms);
			conn_fail(c, 504, CONN_REASON_UPSTREAM_TIMEOUT, detail);
			return;
		}
		conn_close(c);
		return;
	case CONN_FINISH:
		conn_close(c);
		return;
	}
}

static void
conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = conn_enter(arg);

	(void)fd;
	(void)what;
	if (!c->closing)
		conn_timeout(c);
	conn_leave(c);
}

/*
 * The first read, straight after accept(2): the listener defers accepting
 * until the client's first bytes are in (TCP_DEFER_ACCEPT), so its request
 * is normally waiting and needs no pass through the loop, nor libevent's
 * ioctl(FIONREAD) before the read.  Anything else (nothing there yet, the
 * end, an error) is left to the read event, which sees it as it would
 * have.
 */
static void
conn_read_now(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->client);
	struct evbuffer_iovec v;
	size_t want = c->p->cfg.head_max + 1;
	ssize_t n;
	int r;

	if (want > CONN_FIRST_READ)
		want = CONN_FIRST_READ;
	/* The bufferevent keeps its input's end frozen: only it adds there. */
	evbuffer_unfreeze(in, 0);
	if (evbuffer_reserve_space(in, (ev_ssize_t)want, &v, 1) != 1) {
		evbuffer_freeze(in, 0);
		return;
	}
	if (v.iov_len > want)
		v.iov_len = want;
	n = recv(bufferevent_getfd(c->client), v.iov_base, v.iov_len, 0);
	if (n > 0)
		v.iov_len = (size_t)n;
	r = n > 0 ? evbuffer_commit_space(in, &v, 1) : -1;
	evbuffer_freeze(in, 0);
	if (r == 0)
		conn_read_cb(c->client, c);
}

void
conn_accept(struct worker *w, int fd, const struct sockaddr *sa, socklen_t len)
{
	struct proxy *p = w->p;
	struct conn *c;

	(void)len;
	if ((c = pool_get(&w->conn_pool)) == NULL) {
		close(fd);
		return;
	}
	(void)conn_enter(c);
	c->id = __atomic_add_fetch(&p->next_id, 1, __ATOMIC_RELAXED);
	c->w = w;
	c->p = p;
	conn_req_begin(c, "http");
	gettimeofday(&c->started, NULL);
	c->last_io = c->started;
	sockaddr_text(sa, c->client_text, sizeof(c->client_text), 1);
	/*
	 * Non-blocking (accept4 SOCK_NONBLOCK) and TCP_NODELAY (from the
	 * listener) already: no system call for either here.
	 */
	/* A bufferevent that could not be made does not own the fd: below. */
	c->client = bufferevent_socket_new(w->base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->timer = (struct event *)((uint8_t *)c + CONN_TIMER_OFF);
	if (evtimer_assign(c->timer, w->base, conn_timer_cb, c) != 0)
		c->timer = NULL;
	c->rules = proxy_rules_get(p);
	TAILQ_INSERT_TAIL(&w->conns, c, entry);
	w->nconns++;
	METRIC_ADD(p, conns_total, 1);
	METRIC_ADD(p, conns_active, 1);
	if (c->client == NULL || c->timer == NULL || c->rules == NULL) {
		if (c->client == NULL)
			close(fd);
		conn_close(c);
		goto out;
	}
	conn_bev_init(c, c->client);
	conn_set_state(c, CONN_HEAD);
	if (__atomic_load_n(&p->metrics.conns_active, __ATOMIC_RELAXED) >
	    p->cfg.conns_max) {
		conn_fail(c, 503, CONN_REASON_OVERLOADED,
		    "the proxy is at its connection limit; try again later");
		goto out;
	}
	conn_read_now(c);
 out:
	conn_leave(c);
}

/* ------------------------------------------------------- the request */

#define RUNS_PATH	"/v1/runs"

static int
is_runs_request(const struct http_head *h)
{
	return strcmp(h->method, "POST") == 0 &&
	    h->target_len == sizeof(RUNS_PATH) - 1 &&
	    memcmp(h->target, RUNS_PATH, sizeof(RUNS_PATH) - 1) == 0;
}

/*
 * Whether the body of an origin-form request (only POST /v1/runs has one)
 * is all there; 0 to wait for more, or when it was refused.
 */
static int
conn_local_body_ready(struct conn *c, const struct http_head *h,
    size_t avail)
{
	if (!is_runs_request(h))
		return 1;
	if (h->chunked || h->content_length < 0) {
		conn_fail(c, 411, CONN_REASON_BAD_REQUEST,
		    "a run registration needs a Content-Length");
		return 0;
	}
	if (h->content_length > RUNS_BODY_MAX ||
	    h->len + (size_t)h->content_length > c->p->cfg.head_max) {
		conn_fail(c, 413, CONN_REASON_BAD_REQUEST,
		    "the run registration is too large");
		return 0;
	}
	return avail >= h->len + (size_t)h->content_length;
}

/*
 * POST /v1/runs: intutic exec registers a run (id, token, command); the
 * audit log gets a "run" record (never the token).  201, 400 or 409.
 */
static void
conn_register_run(struct conn *c, const struct http_head *h)
{
	struct evbuffer *in = bufferevent_get_input(c->client);
	struct evbuffer *out = bufferevent_get_output(c->client);
	size_t total = h->len + (size_t)h->content_length;
	struct audit_record r;
	struct run_reg reg;
	char why[256], body[RUN_ID_MAX + 16];
	const char *buf;

	if ((buf = (const char *)evbuffer_pullup(in, (ssize_t)total)) == NULL) {
		conn_close(c);
		return;
	}
	if (runs_parse(buf + h->len, (size_t)h->content_length, &reg, why,
	    sizeof(why)) != 0) {
		conn_fail(c, 400, CONN_REASON_BAD_REQUEST, why);
		return;
	}
	if (runs_add(c->p->runs, &reg) != 0) {
		explicit_bzero(reg.token, sizeof(reg.token));
		conn_fail(c, 409, CONN_REASON_BAD_REQUEST,
		    "a run with this id is registered already");
		return;
	}
	explicit_bzero(reg.token, sizeof(reg.token));
	memset(&r, 0, sizeof(r));
	r.event = "run";
	r.id = c->id;
	r.run = reg.id;
	r.client = c->client_text;
	r.port = -1;
	r.bytes_up = r.bytes_down = r.duration_ms = -1;
	r.status = 201;
	r.command = reg.command;
	r.project = reg.project[0] != '\0' ? reg.project : NULL;
	r.pid = reg.pid;
	if (audit_write(c->p->audit, &r) != 0)
		error("%llu: cannot write the audit log",
		    (unsigned long long)c->id);
	info("run %s registered: %s", reg.id, reg.command);
	evbuffer_drain(in, total);
	c->req.status = 201;
	snprintf(body, sizeof(body), "{\"run\":\"%s\"}\n", reg.id);
	evbuffer_add_printf(out, "HTTP/1.1 201 Created\r\nContent-Type: "
	    "application/json\r\nContent-Length: %zu\r\nConnection: close"
	    "\r\n\r\n%s", strlen(body), body);
	conn_finish(c);
}

/* Origin-form requests to the proxy itself: /healthz and /metrics. */
static void
conn_serve_local(struct conn *c, const struct http_head *h)
{
	struct evbuffer *out = bufferevent_get_output(c->client), *body;

	if (is_runs_request(h)) {
		conn_register_run(c, h);
		return;
	}
	if (strcmp(h->method, "GET") != 0 && strcmp(h->method, "HEAD") != 0) {
		conn_fail(c, 400, CONN_REASON_BAD_REQUEST,
		    "only GET /healthz, GET /metrics and POST /v1/runs are served in "
		    "origin-form; proxy requests use an absolute URI or CONNECT");
		return;
	}
	if ((body = evbuffer_new()) == NULL) {
		conn_close(c);
		return;
	}
	if (h->target_len == 8 && memcmp(h->target, "/healthz", 8) == 0)
		evbuffer_add_printf(body, "ok\n");
	else if (h->target_len == 8 && memcmp(h->target, "/metrics", 8) == 0)
		proxy_metrics_render(c->p, body);
	else {
		evbuffer_free(body);
		conn_fail(c, 400, CONN_REASON_BAD_REQUEST,
		    "only GET /healthz, GET /metrics and POST /v1/runs are served in "
		    "origin-form; proxy requests use an absolute URI or CONNECT");
		return;
	}
	c->req.status = 200;
	evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n",
	    h->target[1] == 'm' ? "text/plain; version=0.0.4" : "text/plain",
	    evbuffer_get_length(body));
	if (!h->is_head)
		evbuffer_add_buffer(out, body);
	evbuffer_free(body);
	conn_set_state(c, CONN_FINISH);
}

/* Decides (host, port) by name; 0 to go on, -1 when answered already. */
static int
conn_decide(struct conn *c)
{
	rules_decide(c->rules, &c->req.host, c->req.port, &c->req.d);
	if (c->req.d.verdict == RULES_ALLOW)
		return 0;
	if (rules_mode(c->rules) == RULES_MODE_REPORT) {
		/* Decide and log, let it through. */
		c->req.report_only = 1;
		return 0;
	}
	conn_fail(c, 403, reason_from_rules(c->req.d.reason),
	    c->req.d.reason == RULES_REASON_PORT_NOT_ALLOWED ?
	    "this port is not allowed for this host" :
	    c->req.d.reason == RULES_REASON_DENIED ? "denied by a deny rule" :
	    "this host is not on the allowlist");
	return -1;
}

static void
conn_pin_addr(struct conn *c, const struct sockaddr *sa, socklen_t len)
{
	memcpy(&c->req.addr, sa, len);
	c->req.addrlen = len;
	sockaddr_text(sa, c->req.addr_text, sizeof(c->req.addr_text), 0);
}

/*
 * The refused addresses of a name, for its audit records: as the
 * addresses are text ("10.1.2.3,::ffff:127.0.0.1"), in the order they
 * were considered, cut at an address that does not fit.
 */
static void
conn_refused_addrs(struct conn *c, const struct rules_pick *pick,
    const struct rules_addr *addrs)
{
	char text[RULES_ADDR_TEXT_MAX];
	size_t i, used = 0, len;

	c->req.addr_text[0] = '\0';
	for (i = 0; i < pick->nrefused; i++) {
		rules_addr_text(&addrs[pick->refused[i]], text, sizeof(text));
		len = strlen(text);
		if (used + (used > 0) + len + 1 > sizeof(c->req.addr_text))
			break;
		if (used > 0)
			c->req.addr_text[used++] = ',';
		memcpy(c->req.addr_text + used, text, len + 1);
		used += len;
	}
}

/*
 * Picks the address to dial with rules_pick_addr(), as `intutic rules
 * test` does: the first the rules allow, IPv4 answers before IPv6 ones;
 * the proxy's own addresses are skipped (never a loop, not even in report
 * mode); the others are never dialled.  In report mode, when none is
 * allowed, the first refused one is dialled all the same and the decision
 * records its denial.  A refusal names the refused addresses: in the
 * records' addr, and with why each was refused in the answer's body.
 */
static int
conn_pin(struct conn *c, struct resolve_answers *ans)
{
	struct rules_addr addrs[RULES_PICK_MAX];
	unsigned char skip[RULES_PICK_MAX];
	struct rules_pick pick;
	struct sockaddr *sa;
	char refused[512], detail[640];
	size_t i, n = ans->n < RULES_PICK_MAX ? ans->n : RULES_PICK_MAX;
	int own = 0;

	memset(addrs, 0, sizeof(addrs));
	memset(skip, 0, sizeof(skip));
	for (i = 0; i < n; i++) {
		sa = (struct sockaddr *)&ans->addrs[i];
		if (sa->sa_family == AF_INET) {
			addrs[i].family = AF_INET;
			addrs[i].v4 = ((struct sockaddr_in *)sa)->sin_addr;
			((struct sockaddr_in *)sa)->sin_port = htons(c->req.port);
		} else if (sa->sa_family == AF_INET6) {
			addrs[i].family = AF_INET6;
			addrs[i].v6 = ((struct sockaddr_in6 *)sa)->sin6_addr;
			((struct sockaddr_in6 *)sa)->sin6_port = htons(c->req.port);
		} else
			continue;	/* another family: skipped */
		if (proxy_is_own_addr(c->p, sa))
			own = skip[i] = 1;
	}
	rules_pick_addr(c->rules, addrs, skip, n, c->req.port, &pick);
	if (pick.picked != pick.n) {
		conn_pin_addr(c, (struct sockaddr *)&ans->addrs[pick.picked],
		    ans->lens[pick.picked]);
		return 0;
	}
	if (pick.nrefused > 0) {
		/*
		 * A name denied already (report mode) keeps that reason;
		 * else the first refused address decides, with its deny
		 * entry, or none for an internal one (not the entry that
		 * allowed the name).
		 */
		if (!c->req.report_only)
			c->req.d = pick.d;
		if (pick.dial != pick.n) {
			c->req.report_only = 1;
			conn_pin_addr(c, (struct sockaddr *)&ans->addrs[pick.dial],
			    ans->lens[pick.dial]);
			return 0;
		}
		conn_refused_addrs(c, &pick, addrs);
		rules_pick_refused_text(&pick, addrs, refused, sizeof(refused));
		snprintf(detail, sizeof(detail), "the name resolves only to "
		    "refused addresses: %s", refused);
		conn_fail(c, 403, reason_from_rules(pick.d.reason), detail);
	} else if (own) {
		conn_deny(c, 403, CONN_REASON_OWN_ADDRESS,
		    "the destination is the proxy itself");
	} else
		conn_fail(c, 502, CONN_REASON_DNS_FAILED,
		    "the name has no IPv4 or IPv6 address");
	return -1;
}

/*
 * Nothing more from the client while the origin is looked up or dialled.
 * (Reading on would let its EOF come before the 200, and a client that
 * half-closed after its early bytes could not be told from one that left.)
 * Called only when the answer is not there at once: disabling and enabling
 * again in the same callback would cost an epoll_ctl(2).
 */
static void
conn_wait_origin(struct conn *c)
{
	bufferevent_disable(c->client, EV_READ);
}

static void
conn_resolved_cb(enum resolve_status status,
    const struct resolve_answers *answers, void *arg)
{
	struct conn *c = conn_enter(arg);
	struct resolve_answers ans;
	char detail[512];

	c->res = NULL;
	if (status != RESOLVE_OK) {
		METRIC_ADD(c->p, dns_failures, 1);
		snprintf(detail, sizeof(detail), "cannot resolve '%s': %s",
		    c->req.host.text, resolve_strerror(status));
		if (status == RESOLVE_TIMEOUT)
			conn_fail(c, 504, CONN_REASON_DNS_TIMEOUT, detail);
		else
			conn_fail(c, 502, CONN_REASON_DNS_FAILED, detail);
	} else {
		ans = *answers;
		if (conn_pin(c, &ans) == 0)
			conn_dial(c);
	}
	conn_leave(c);
}

static void
conn_resolve(struct conn *c)
{
	struct resolve *r;

	conn_set_state(c, CONN_RESOLVE);
	METRIC_ADD(c->p, dns_lookups, 1);
	/* A name in the hosts file is answered before this returns. */
	r = resolve_start(c->w->dns, c->p->hosts, c->req.host.text,
	    conn_resolved_cb, c);
	if (r == NULL)
		return;		/* answered: c may be gone already */
	c->res = r;
	conn_wait_origin(c);
	if (evdns_base_count_nameservers(c->w->dns) == 0) {
		/* Not in the hosts file and nobody to ask: fail now. */
		resolve_cancel(r);
		c->res = NULL;
		METRIC_ADD(c->p, dns_failures, 1);
		conn_fail(c, 502, CONN_REASON_DNS_FAILED,
		    "the name is not in the hosts file and no nameserver is "
		    "configured");
	}
}

/* A literal address is its own answer, checked like a resolved one. */
static void
conn_use_literal(struct conn *c)
{
	struct resolve_answers ans;

	memset(&ans, 0, sizeof(ans));
	ans.n = 1;
	if (c->req.host.kind == RULES_HOST_IPV4) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ans.addrs[0];

		s4->sin_family = AF_INET;
		s4->sin_addr = c->req.host.v4;
		ans.lens[0] = sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ans.addrs[0];

		s6->sin6_family = AF_INET6;
		s6->sin6_addr = c->req.host.v6;
		ans.lens[0] = sizeof(*s6);
	}
	if (conn_pin(c, &ans) == 0)
		conn_dial(c);
}

/*
 * True when a non-blocking connect(2) that said EINPROGRESS is done all the
 * same: to a loopback or other local address the handshake completes in
 * the call itself.  (To a remote origin it is one getsockopt(2) that finds
 * SYN_SENT, next to a network round trip.)
 */
static int
connected_now(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
	    ti.tcpi_state == TCP_ESTABLISHED;
}

/*
 * Dials the pinned address.  A connection that is up when connect(2)
 * returns goes on at once (one loop pass, an epoll_ctl(2) and a
 * getsockopt(2) less than waiting to be told it is writable); any other
 * is left to the bufferevent to finish.
 */
static void
conn_dial(struct conn *c)
{
	char detail[CONN_ADDR_TEXT_MAX + 128];
	int fd, one = 1, now = 0;

	conn_up_drop(c);
	fd = socket(c->req.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (fd == -1)
		goto fail;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&c->req.addr, c->req.addrlen) == 0)
		now = 1;
	else if (errno == EINPROGRESS)
		now = connected_now(fd);
	else {
		int e = errno;

		close(fd);
		errno = e;
		goto fail;
	}
	/* A bufferevent that could not be made does not own the fd. */
	if ((c->up = bufferevent_socket_new(c->w->base, fd,
	    BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		close(fd);
		conn_close(c);
		return;
	}
	conn_bev_init(c, c->up);
	conn_set_state(c, CONN_DIAL);
	if (now) {
		conn_dial_event(c, BEV_EVENT_CONNECTED);
		return;
	}
	/* No address: the connect is under way already. */
	if (bufferevent_socket_connect(c->up, NULL, 0) != 0) {
		conn_close(c);
		return;
	}
	conn_wait_origin(c);
	return;
fail:
	snprintf(detail, sizeof(detail), "cannot connect to %s: %s",
	    c->req.addr_text, strerror(errno));
	conn_fail(c, 502, CONN_REASON_CONNECT_FAILED, detail);
}

/* Decodes base64 (RFC 4648, padded); the length, or -1. */
static ssize_t
base64_decode(const char *in, size_t len, char *out, size_t outlen)
{
	static const char set[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned int acc = 0, bits = 0;
	size_t i, n = 0, pad = 0;
	const char *p;

	if (len % 4 != 0)
		return -1;
	for (i = 0; i < len; i++) {
		if (in[i] == '=') {
			if (++pad > 2 || i < len - 2)
				return -1;
			continue;
		}
		if (pad > 0 || in[i] == '\0' || (p = strchr(set, in[i])) == NULL)
			return -1;
		acc = (acc << 6) | (unsigned int)(p - set);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n >= outlen)
				return -1;
			out[n++] = (char)((acc >> bits) & 0xff);
		}
	}
	return (ssize_t)n;
}

/*
 * The run a request belongs to, from Proxy-Authorization (Basic RUN:TOKEN,
 * as a proxy URL http://RUN:TOKEN@host:port makes clients send it).  No
 * credentials: no run.  Credentials of no registered run: 407, denied
 * (proxy-auth), returns -1.  The token is never kept or written.
 */
static int
conn_identify(struct conn *c, const struct http_head *h)
{
	const struct http_header *a = http_header_find(h, "proxy-authorization");
	char cred[RUN_ID_MAX + RUN_TOKEN_MAX + 2];
	const char *v, *colon;
	ssize_t n = -1;
	size_t len;

	c->req.run[0] = '\0';
	if (a == NULL)
		return 0;
	v = a->value;
	len = a->value_len;
	if (len > 6 && strncasecmp(v, "Basic ", 6) == 0) {
		v += 6;
		len -= 6;
		while (len > 0 && *v == ' ') {
			v++;
			len--;
		}
		n = base64_decode(v, len, cred, sizeof(cred));
	}
	if (n > 0 && (colon = memchr(cred, ':', (size_t)n)) != NULL &&
	    runs_check(c->p->runs, cred, (size_t)(colon - cred), colon + 1,
	    (size_t)n - (size_t)(colon - cred) - 1)) {
		memcpy(c->req.run, cred, (size_t)(colon - cred));
		c->req.run[colon - cred] = '\0';
		explicit_bzero(cred, sizeof(cred));
		return 0;
	}
	explicit_bzero(cred, sizeof(cred));
	conn_deny(c, 407, CONN_REASON_PROXY_AUTH,
	    "the proxy credentials name no run this proxy knows: start the "
	    "command with `intutic exec`, which registers its run");
	return -1;
}

/* The CONNECT target is "host:port", the port required. */
static void
conn_connect_request(struct conn *c, const struct http_head *h)
{
	char target[RULES_HOST_TEXT_MAX + 16];
	const char *colon;
	int err;

	conn_req_begin(c, "connect");
	if (h->target_len >= sizeof(target)) {
		conn_fail(c, 400, CONN_REASON_INVALID_HOST,
		    "the CONNECT target is too long");
		return;
	}
	memcpy(target, h->target, h->target_len);
	target[h->target_len] = '\0';
	colon = strrchr(target, ':');
	if (colon == NULL || (target[0] == '[' && colon < strchr(target, ']'))) {
		conn_fail(c, 400, CONN_REASON_INVALID_HOST,
		    "a CONNECT target is host:port");
		return;
	}
	if ((err = rules_hostport_parse(target, &c->req.host, &c->req.port, 0)) != 0) {
		char detail[512];

		snprintf(detail, sizeof(detail), "invalid host in '%s': %s",
		    target, rules_strerror(err));
		conn_deny(c, 403, CONN_REASON_INVALID_HOST, detail);
		return;
	}
	if (conn_identify(c, h) != 0 || conn_decide(c) != 0)
		return;
	evbuffer_drain(bufferevent_get_input(c->client), h->len);
	if (c->req.host.kind == RULES_HOST_NAME)
		conn_resolve(c);
	else
		conn_use_literal(c);
}

/* -------------------------------------------------- absolute-form HTTP */

/* Closes the origin side, e.g. before dialling another host. */
static void
conn_up_drop(struct conn *c)
{
	if (c->up != NULL)
		bufferevent_free(c->up);
	c->up = NULL;
	c->up_ready = 0;
	c->up_host[0] = '\0';
}

/*
 * One absolute-form request: decided on its own (keep-alive connections
 * decide every request), its Host must agree with the URI, and it goes
 * out in origin-form with hop-by-hop and Proxy-* headers removed.
 */
static void
conn_http_request(struct conn *c, const struct http_head *h)
{
	const char *auth, *path, *why;
	size_t authlen, pathlen;
	char target[RULES_HOST_TEXT_MAX + 16], detail[512];
	int err;

	conn_req_begin(c, "http");
	METRIC_ADD(c->p, requests_http, 1);

	if (http_target_split(h->target, h->target_len, &auth, &authlen, &path,
	    &pathlen, &why) != 0) {
		METRIC_ADD(c->p, bad_requests, 1);
		conn_fail(c, 400, CONN_REASON_BAD_REQUEST, why);
		return;
	}
	if (authlen >= sizeof(target)) {
		conn_fail(c, 400, CONN_REASON_INVALID_HOST,
		    "the URI's host is too long");
		return;
	}
	memcpy(target, auth, authlen);
	target[authlen] = '\0';
	if ((err = rules_hostport_parse(target, &c->req.host, &c->req.port, 80)) != 0) {
		snprintf(detail, sizeof(detail), "invalid host in the URI: %s",
		    rules_strerror(err));
		conn_deny(c, 403, CONN_REASON_INVALID_HOST, detail);
		return;
	}
	if (http_header_find(h, "host") != NULL ?
	    !http_host_matches(h, &c->req.host, c->req.port) : h->http_minor >= 1) {
		METRIC_ADD(c->p, bad_requests, 1);
		conn_fail(c, 400, CONN_REASON_HOST_MISMATCH,
		    "the Host header must name the URI's host");
		return;
	}
	if (conn_identify(c, h) != 0 || conn_decide(c) != 0)
		return;

	c->req.body = http_framing_new(0,
	    (const char *)evbuffer_pullup(bufferevent_get_input(c->client),
	    (ssize_t)h->len), h->len, 0, &why);
	if (c->req.body == NULL) {
		conn_fail(c, 400, CONN_REASON_BAD_REQUEST, why);
		return;
	}
	c->req.body_done = http_framing_done(c->req.body);
	c->req.is_head = h->is_head;
	c->req.upgrade = h->upgrade;
	c->req.keep_alive = h->keep_alive;
	if ((c->fwd == NULL && (c->fwd = evbuffer_new()) == NULL) ||
	    (c->back == NULL && (c->back = evbuffer_new()) == NULL)) {
		conn_close(c);
		return;
	}
	if (http_header_find(h, "host") == NULL)
		snprintf(target, sizeof(target), "%s:%u", c->req.host.text, c->req.port);
	http_forward_head(h, path, pathlen, h->upgrade, !h->keep_alive,
	    http_header_find(h, "host") == NULL ? target : NULL, c->fwd);
	evbuffer_drain(bufferevent_get_input(c->client), h->len);

	if (c->up != NULL && c->up_ready && c->up_port == c->req.port &&
	    strcmp(c->up_host, c->req.host.text) == 0) {
		/* The same origin: reuse the connection, as decided above. */
		snprintf(c->req.addr_text, sizeof(c->req.addr_text), "%s", c->up_addr);
		conn_decided(c, c->req.d.verdict, c->req.report_only ?
		    reason_from_rules(c->req.d.reason) : CONN_REASON_ALLOWED);
		conn_http_send(c);
		return;
	}
	conn_up_drop(c);
	if (c->req.host.kind == RULES_HOST_NAME)
		conn_resolve(c);
	else
		conn_use_literal(c);
}

static int	conn_http_push(struct conn *, struct bufferevent *,
		    struct evbuffer *, struct bufferevent *);

/* The origin is connected: send the head, then stream the body. */
static void
conn_http_send(struct conn *c)
{
	conn_decided(c, c->req.d.verdict, c->req.report_only ?
	    reason_from_rules(c->req.d.reason) : CONN_REASON_ALLOWED);
	c->up_ready = 1;
	c->up_port = c->req.port;
	snprintf(c->up_host, sizeof(c->up_host), "%s", c->req.host.text);
	snprintf(c->up_addr, sizeof(c->up_addr), "%s", c->req.addr_text);
	c->bytes_up += evbuffer_get_length(c->fwd);
	http_framing_free(c->resp_framing);
	c->resp_framing = NULL;
	c->resp_until_eof = 0;
	gettimeofday(&c->last_io, NULL);
	conn_set_state(c, CONN_HTTP);
	/* The head goes with whatever of the body came with it. */
	if (evbuffer_get_length(bufferevent_get_input(c->client)) > 0)
		conn_http_client_read(c);
	else
		(void)conn_http_push(c, c->up, c->fwd, c->client);
}

/*
 * Sends what `stage` holds to `bev`'s socket: at once when nothing waits
 * before it, and what the socket does not take (or everything, when
 * something waits) through the bufferevent.  Left to the bufferevent, a
 * write waits to be told the socket is writable: an epoll_ctl(2) to ask, a
 * pass through the loop and one more epoll_ctl(2) to stop asking.  A socket
 * error is left to the bufferevent too, which reports it.  Returns -1 when
 * out of memory.
 */
static int
conn_push(struct bufferevent *bev, struct evbuffer *stage)
{
	struct evbuffer *out = bufferevent_get_output(bev);

	if (evbuffer_get_length(stage) > 0 && evbuffer_get_length(out) == 0)
		(void)evbuffer_write(stage, bufferevent_getfd(bev));
	if (evbuffer_get_length(stage) == 0)
		return 0;
	return evbuffer_add_buffer(out, stage);
}

/*
 * Moves the bytes of the current message from `from` to `to` as framing
 * says; what follows the message stays in `from`.  Returns -1 on a framing
 * error, else whether the message is complete.
 */
static int
conn_http_move(struct conn *c, struct http_framing *f, struct bufferevent *from,
    struct evbuffer *out, uint64_t *count)
{
	struct evbuffer *in = bufferevent_get_input(from);
	const char *why;
	uint64_t used = 0;
	int done = 0, r;

	/* A chunked body is re-framed: what goes on is what was parsed. */
	r = http_framing_move(f, in, out, &used, &done, &why);
	*count += used;
	if (r != 0) {
		debug_f("%llu: bad body: %s", (unsigned long long)c->id, why);
		return -1;
	}
	gettimeofday(&c->last_io, NULL);
	return done;
}

/*
 * Sends what is staged for `to`; past the high-water mark of what `to`
 * still owes its socket, `from` stops reading until the write callback.
 * Returns -1 (the connection closed) when out of memory.
 */
static int
conn_http_push(struct conn *c, struct bufferevent *to, struct evbuffer *stage,
    struct bufferevent *from)
{
	if (conn_push(to, stage) != 0) {
		conn_close(c);
		return -1;
	}
	if (evbuffer_get_length(bufferevent_get_output(to)) >= PROXY_HIGH_WATER)
		bufferevent_disable(from, EV_READ);
	return 0;
}

static void
conn_http_client_read(struct conn *c)
{
	int r;

	if (c->req.body_done) {
		/* A pipelined next request waits for this response. */
		bufferevent_disable(c->client, EV_READ);
		(void)conn_http_push(c, c->up, c->fwd, c->client);
		return;
	}
	r = conn_http_move(c, c->req.body, c->client, c->fwd, &c->bytes_up);
	if (r < 0) {
		METRIC_ADD(c->p, bad_requests, 1);
		/* Nothing answered yet: the client can still be told. */
		if (c->req.status <= 0)
			conn_fail(c, 400, CONN_REASON_BAD_REQUEST,
			    "the request body is malformed (chunk framing)");
		else
			conn_close(c);
		return;
	}
	if (r == 1) {
		c->req.body_done = 1;
		bufferevent_disable(c->client, EV_READ);
	}
	(void)conn_http_push(c, c->up, c->fwd, c->client);
}

/* The exchange is over: next request, or close. */
static void
conn_http_done(struct conn *c)
{
	http_framing_free(c->resp_framing);
	c->resp_framing = NULL;
	/* Stopping: the answer was the last one. */
	if (__atomic_load_n(&c->p->stopping, __ATOMIC_RELAXED) != 0)
		c->req.keep_alive = 0;
	if (!c->req.keep_alive || !c->req.body_done) {
		conn_up_drop(c);
		conn_set_state(c, CONN_FINISH);
		if (evbuffer_get_length(bufferevent_get_output(c->client)) == 0)
			conn_close(c);
		return;
	}
	/*
	 * An origin is kept only when it said keep-alive and sent nothing
	 * past its answer: a byte no request asked for would be taken for the
	 * next answer, so such an origin is dropped (and one that sends while
	 * idle is dropped too: conn_idle_up_read).
	 */
	if (!c->up_keep_alive ||
	    evbuffer_get_length(bufferevent_get_input(c->up)) > 0)
		conn_up_drop(c);
	conn_set_state(c, CONN_HEAD);
	if (evbuffer_get_length(bufferevent_get_input(c->client)) > 0)
		conn_read_head(c);
}

/* 101 Switching Protocols: from here on, a tunnel. */
static void
conn_http_upgraded(struct conn *c)
{
	http_framing_free(c->req.body);
	c->req.body = NULL;
	conn_tunnel_enter(c);
}

/*
 * Relays what the origin sent of its answer.  Returns 1 while the exchange
 * goes on, 0 when the connection has moved on (the answer is done, a 101
 * made it a tunnel) or was closed: `c` may be gone then.
 */
static int
conn_http_down(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->up);
	struct http_head *h;
	const char *why;
	size_t avail, end;
	char *buf;
	int r;

	while (evbuffer_get_length(in) > 0) {
		if (c->resp_framing != NULL) {
			r = conn_http_move(c, c->resp_framing, c->up, c->back,
			    &c->bytes_down);
			if (r < 0) {
				conn_close(c);
				return 0;
			}
			if (conn_http_push(c, c->client, c->back, c->up) != 0)
				return 0;
			if (r == 0)
				return 1;
			conn_http_done(c);
			return 0;
		}
		/* A response head (or a 1xx before the final one). */
		avail = evbuffer_get_length(in);
		if (avail > c->p->cfg.head_max)
			avail = c->p->cfg.head_max;
		if ((buf = (char *)evbuffer_pullup(in, (ssize_t)avail)) == NULL) {
			conn_close(c);
			return 0;
		}
		if ((end = http_head_end(buf, avail)) == 0) {
			if (avail >= c->p->cfg.head_max)
				goto bad;
			break;
		}
		if ((h = malloc(sizeof(*h))) == NULL) {
			conn_close(c);
			return 0;
		}
		if (http_response_head_parse(buf, end, HTTP_HEADERS_LIMIT, h,
		    &why) != HTTP_OK) {
			free(h);
			goto bad;
		}
		c->req.status = h->status;
		if (h->status == 101 && c->req.upgrade) {
			http_forward_head(h, NULL, 0, 1, 0, NULL, c->back);
			c->bytes_down += end;
			evbuffer_drain(in, end);
			free(h);
			/* The tunnel takes the bufferevent's output. */
			if (conn_push(c->client, c->back) != 0) {
				conn_close(c);
				return 0;
			}
			conn_http_upgraded(c);
			return 0;
		}
		if (h->status >= 100 && h->status < 200) {
			/* Interim (100 Continue): the final answer follows. */
			http_forward_head(h, NULL, 0, 0, 0, NULL, c->back);
			c->bytes_down += end;
			evbuffer_drain(in, end);
			free(h);
			continue;
		}
		c->up_keep_alive = h->keep_alive;
		c->resp_framing = http_framing_new(1, buf, end, c->req.is_head,
		    &why);
		if (c->resp_framing == NULL) {
			free(h);
			goto bad;
		}
		c->resp_until_eof = http_framing_until_eof(c->resp_framing);
		/* A body that runs to the origin's close ends the client's too. */
		if (c->resp_until_eof)
			c->req.keep_alive = 0;
		http_forward_head(h, NULL, 0, 0, !c->req.keep_alive, NULL,
		    c->back);
		free(h);
		c->bytes_down += end;
		evbuffer_drain(in, end);
		/* A message without a body ends with its head. */
		if (http_framing_done(c->resp_framing)) {
			if (conn_http_push(c, c->client, c->back, c->up) == 0)
				conn_http_done(c);
			return 0;
		}
	}
	return conn_http_push(c, c->client, c->back, c->up) == 0;
 bad:
	if (c->bytes_down == 0)
		conn_fail(c, 502, CONN_REASON_CONNECT_FAILED,
		    "the origin's answer is not valid HTTP");
	else
		conn_close(c);
	return 0;
}

static void
conn_http_up_read(struct conn *c)
{
	(void)conn_http_down(c);
}

/* Drained below the low-water mark: the other side may read again. */
static void
conn_http_up_drained(struct conn *c)
{
	if (!c->req.body_done)
		bufferevent_enable(c->client, EV_READ);
}

static void
conn_http_client_drained(struct conn *c)
{
	if (c->up != NULL)
		bufferevent_enable(c->up, EV_READ);
}

static void
conn_http_up_event(struct conn *c, short what)
{
	if ((what & BEV_EVENT_EOF) && c->resp_framing != NULL &&
	    c->resp_until_eof) {
		/* A close-delimited body ends here. */
		if (conn_http_down(c)) {
			c->req.keep_alive = 0;
			conn_http_done(c);
		}
		return;
	}
	if (c->req.status <= 0 && c->bytes_down == c->req.down_mark)
		conn_fail(c, 502, CONN_REASON_CONNECT_FAILED,
		    "the origin closed the connection without an answer");
	else
		conn_close(c);
}

/*
 * The kept origin of a keep-alive pair, while the client is between
 * requests: it went away, or it sent bytes no request asked for (which
 * would be taken for the next answer, and which nothing would drain).
 * Either way it is dropped; the next request dials again.
 */
static void
conn_idle_up_read(struct conn *c)
{
	debug_f("%llu: the idle origin sent unasked-for bytes: dropped",
	    (unsigned long long)c->id);
	conn_up_drop(c);
}

static void
conn_idle_up_event(struct conn *c, short what)
{
	(void)what;
	conn_up_drop(c);
}

static void
conn_read_head(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->client);
	struct http_head *h;
	const char *why;
	size_t avail = evbuffer_get_length(in), end;
	char *buf;
	int status;

	if (avail == 0)
		return;
	if (avail > c->p->cfg.head_max)
		avail = c->p->cfg.head_max;
	if ((buf = (char *)evbuffer_pullup(in, (ssize_t)avail)) == NULL) {
		conn_close(c);
		return;
	}
	if ((end = http_head_end(buf, avail)) == 0) {
		if (avail >= c->p->cfg.head_max) {
			METRIC_ADD(c->p, bad_requests, 1);
			conn_req_begin(c, "http");
			conn_fail(c, 431, CONN_REASON_BAD_REQUEST,
			    "the request head is too large");
		}
		return;
	}
	if ((h = malloc(sizeof(*h))) == NULL) {
		conn_close(c);
		return;
	}
	if (http_head_parse(buf, end, c->p->cfg.headers_max, c->p->cfg.uri_max,
	    h, &status, &why) != HTTP_OK) {
		METRIC_ADD(c->p, bad_requests, 1);
		free(h);
		conn_req_begin(c, "http");
		conn_fail(c, status, CONN_REASON_BAD_REQUEST, why);
		return;
	}
	if (h->is_connect)
		conn_connect_request(c, h);
	else if (h->target_len > 0 && h->target[0] == '/') {
		/* A request of its own: decided and recorded as such. */
		conn_req_begin(c, "http");
		if (conn_local_body_ready(c, h, avail))
			conn_serve_local(c, h);
	}
	else
		conn_http_request(c, h);
	free(h);
}

/* ------------------------------------------------------------ the peek */

enum peek_refusal { PEEK_TLS_ALERT, PEEK_HTTP_403, PEEK_CLOSE };

/*
 * Refuses a tunnel after the peek; in report mode the refusal is recorded
 * and the tunnel goes on all the same.
 */
static void
conn_peek_refuse(struct conn *c, enum conn_reason reason,
    enum peek_refusal how, const char *detail)
{
	if (rules_mode(c->rules) == RULES_MODE_REPORT) {
		c->req.report_only = 1;
		conn_decided(c, RULES_DENY, reason);
		conn_tunnel_start(c);
		return;
	}
	switch (how) {
	case PEEK_TLS_ALERT:
		conn_tls_deny(c, reason);
		return;
	case PEEK_HTTP_403:
		conn_deny(c, 403, reason, detail);
		return;
	case PEEK_CLOSE:
		conn_decided(c, RULES_DENY, reason);
		conn_close(c);
		return;
	}
}

/*
 * Whether the target of a request inside a tunnel names nothing but the
 * CONNECT host: origin-form ("/..."), "*" (OPTIONS), or an absolute-form
 * http:// URI whose authority is the CONNECT host and port (the tunnel's
 * port when it names none).  An origin follows an absolute-form target
 * rather than the Host header (RFC 9112, 3.2.2), so both are checked.
 * A CONNECT inside the tunnel (authority-form) is never for it.
 */
static int
conn_peek_target_ok(const struct conn *c, const struct http_head *h)
{
	char target[RULES_HOST_TEXT_MAX + 16];
	const char *auth, *path, *why;
	size_t authlen, pathlen;
	struct rules_host host;
	uint16_t port;

	if (h->is_connect)
		return 0;
	if (h->target_len > 0 && h->target[0] == '/')
		return 1;
	if (h->target_len == 1 && h->target[0] == '*')
		return strcmp(h->method, "OPTIONS") == 0;
	if (http_target_split(h->target, h->target_len, &auth, &authlen,
	    &path, &pathlen, &why) != 0 || authlen >= sizeof(target))
		return 0;
	memcpy(target, auth, authlen);
	target[authlen] = '\0';
	if (rules_hostport_parse(target, &host, &port, c->req.port) != RULES_OK)
		return 0;
	return port == c->req.port && host.kind == c->req.host.kind &&
	    strcmp(host.text, c->req.host.text) == 0;
}

/*
 * The client's first bytes in a tunnel decide whether it may go on: TLS
 * must name the CONNECT host in its SNI, HTTP in its Host; anything else
 * only where the allow entry names the port.
 */
static void
conn_peek(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->client);
	struct tls_hello hello;
	struct rules_host sni;
	struct http_head *h;
	const char *why;
	size_t avail = evbuffer_get_length(in), want, end;
	uint8_t *buf;
	int status, explicit_port = c->req.d.entry != NULL &&
	    rules_entry_names_port(c->req.d.entry, c->req.port);

	if (avail == 0)
		return;
	want = avail < TLS_HELLO_MAX ? avail : TLS_HELLO_MAX;
	if ((buf = evbuffer_pullup(in, (ssize_t)want)) == NULL) {
		conn_close(c);
		return;
	}
	switch (tls_hello_parse(buf, want, &hello, &why)) {
	case TLS_HELLO_MORE:
		if (want >= TLS_HELLO_MAX)
			conn_peek_refuse(c, CONN_REASON_BAD_TLS, PEEK_TLS_ALERT, NULL);
		return;
	case TLS_HELLO_MALFORMED:
		debug_f("%llu: bad ClientHello: %s", (unsigned long long)c->id,
		    why);
		conn_peek_refuse(c, CONN_REASON_BAD_TLS, PEEK_TLS_ALERT, NULL);
		return;
	case TLS_HELLO_OK:
		if (hello.has_sni) {
			c->req.has_sni = 1;
			snprintf(c->req.sni, sizeof(c->req.sni), "%s", hello.sni);
		}
		if (!hello.has_sni) {
			/* No SNI is normal only towards an IP literal. */
			if (c->req.host.kind == RULES_HOST_NAME) {
				conn_peek_refuse(c, CONN_REASON_SNI_MISSING,
				    PEEK_TLS_ALERT, NULL);
				return;
			}
		} else if (rules_host_parse(hello.sni, hello.sni_len,
		    &sni) != RULES_OK || sni.kind != RULES_HOST_NAME ||
		    strcmp(sni.text, c->req.host.text) != 0) {
			conn_peek_refuse(c, CONN_REASON_SNI_MISMATCH,
			    PEEK_TLS_ALERT, NULL);
			return;
		}
		conn_tunnel_start(c);
		return;
	case TLS_HELLO_NOT_TLS:
		break;
	}

	if (http_looks_like_request((const char *)buf, want)) {
		if ((end = http_head_end((const char *)buf, want)) == 0) {
			if (want >= c->p->cfg.head_max)
				conn_fail(c, 431, CONN_REASON_BAD_REQUEST,
				    "the request head is too large");
			return;
		}
		if ((h = malloc(sizeof(*h))) == NULL) {
			conn_close(c);
			return;
		}
		if (http_head_parse((const char *)buf, end, c->p->cfg.headers_max,
		    c->p->cfg.uri_max, h, &status, &why) != HTTP_OK) {
			free(h);
			conn_deny(c, status, CONN_REASON_BAD_REQUEST, why);
			return;
		}
		if (!conn_peek_target_ok(c, h)) {
			free(h);
			conn_peek_refuse(c, CONN_REASON_HOST_MISMATCH,
			    PEEK_HTTP_403, "the request-target does not name "
			    "the CONNECT host (inside a tunnel, a request is in "
			    "origin-form or names the CONNECT host)");
			return;
		}
		if (!http_host_matches(h, &c->req.host, c->req.port)) {
			free(h);
			conn_peek_refuse(c, CONN_REASON_HOST_MISMATCH,
			    PEEK_HTTP_403,
			    "the Host header does not name the CONNECT host");
			return;
		}
		free(h);
		conn_tunnel_start(c);
		return;
	}
	if (explicit_port) {
		conn_tunnel_start(c);
		return;
	}
	conn_peek_refuse(c, CONN_REASON_PROTOCOL_NOT_ALLOWED, PEEK_CLOSE, NULL);
}

/* ----------------------------------------------------------- the tunnel */

static void
conn_tunnel_start(struct conn *c)
{
	conn_decided(c, c->req.d.verdict, c->req.report_only ? reason_from_rules(c->req.d.reason) :
	    CONN_REASON_ALLOWED);
	conn_tunnel_enter(c);
}

/* The tunnel's end, which frees it. */
static void
conn_tunnel_cb(struct tunnel *t, int error, void *arg)
{
	struct conn *c = conn_enter(arg);

	(void)t;
	if (error != 0)
		debug_f("%llu: tunnel: %s", (unsigned long long)c->id,
		    strerror(error));
	conn_close(c);
	conn_leave(c);
}

/*
 * The sockets go to a tunnel (tunnel.c), with what the bufferevents still
 * hold: for the origin, its unsent output and what the client sent past
 * the checks; for the client, its unsent output (the 200, the 101) and
 * what the origin sent already.  The bufferevents are freed: an idle
 * tunnel is two sockets and a few events.
 */
static void
conn_tunnel_enter(struct conn *c)
{
	struct evbuffer *to_up, *to_client;
	struct evbuffer *cin = bufferevent_get_input(c->client);
	struct evbuffer *uin = bufferevent_get_input(c->up);
	int r, e;

	to_up = evbuffer_new();
	to_client = evbuffer_new();
	c->tun = to_up != NULL && to_client != NULL ? tunnel_new(
	    &c->w->tunnel_pool, c->w->base,
	    bufferevent_getfd(c->client), bufferevent_getfd(c->up),
	    c->w->scratch, PROXY_IO_CHUNK, &c->w->transit, &c->last_io,
	    conn_tunnel_cb, c) :
	    NULL;
	if (c->tun == NULL) {
		if (to_up != NULL)
			evbuffer_free(to_up);
		if (to_client != NULL)
			evbuffer_free(to_client);
		conn_close(c);
		return;
	}
	c->bytes_up += evbuffer_get_length(cin);
	c->bytes_down += evbuffer_get_length(uin);
	/*
	 * A socket bufferevent keeps the front of its output frozen (only it
	 * drains it): thawed here, as the bytes leave it for good.
	 */
	evbuffer_unfreeze(bufferevent_get_output(c->up), 1);
	evbuffer_unfreeze(bufferevent_get_output(c->client), 1);
	if (evbuffer_add_buffer(to_up, bufferevent_get_output(c->up)) != 0 ||
	    evbuffer_add_buffer(to_up, cin) != 0 ||
	    evbuffer_add_buffer(to_client,
	    bufferevent_get_output(c->client)) != 0 ||
	    evbuffer_add_buffer(to_client, uin) != 0) {
		evbuffer_free(to_up);
		evbuffer_free(to_client);
		conn_close(c);
		return;
	}
	gettimeofday(&c->last_io, NULL);
	conn_set_state(c, CONN_TUNNEL);
	/*
	 * The tunnel's events go on before the bufferevents' come off, so the
	 * sockets stay registered for reading throughout and the hand-over
	 * costs no epoll_ctl(2) (libevent changes the kernel's set only when
	 * the events wanted of a descriptor do).  Nothing runs in between:
	 * tunnel_start() calls no callback.
	 */
	r = tunnel_start(c->tun, to_up, to_client);
	e = errno;
	evbuffer_free(to_up);
	evbuffer_free(to_client);
	/* The tunnel owns the sockets now. */
	bufferevent_setfd(c->client, -1);
	bufferevent_setfd(c->up, -1);
	bufferevent_free(c->client);
	bufferevent_free(c->up);
	c->client = c->up = NULL;
	if (r != 0) {
		debug_f("%llu: tunnel: %s", (unsigned long long)c->id,
		    strerror(e));
		conn_close(c);
	}
}

/* Moves what `from` read to `to`, pausing `from` while `to` is full. */
static void
relay(struct conn *c, struct bufferevent *from, struct bufferevent *to,
    uint64_t *count)
{
	struct evbuffer *src = bufferevent_get_input(from);
	size_t n = evbuffer_get_length(src);

	*count += n;
	evbuffer_add_buffer(bufferevent_get_output(to), src);
	if (evbuffer_get_length(bufferevent_get_output(to)) >= PROXY_HIGH_WATER)
		bufferevent_disable(from, EV_READ);
	gettimeofday(&c->last_io, NULL);
}

/* ----------------------------------------------------------- callbacks */

/*
 * Says something the client waits for: straight to its socket when nothing
 * is queued before it (one loop pass and two epoll_ctl(2) less on the way
 * to a tunnel), else, or for what the socket did not take, through the
 * bufferevent.  A socket error shows on the next read.
 */
static void
conn_say(struct conn *c, const char *text, size_t len)
{
	ssize_t n = 0;

	if (evbuffer_get_length(bufferevent_get_output(c->client)) == 0 &&
	    (n = send(bufferevent_getfd(c->client), text, len,
	    MSG_NOSIGNAL)) < 0)
		n = 0;
	if ((size_t)n < len)
		bufferevent_write(c->client, text + n, len - (size_t)n);
}

static void
conn_client_event(struct conn *c, short what)
{
	if (c->state == CONN_HTTP && (what & BEV_EVENT_EOF) &&
	    c->req.body_done) {
		/* The client is done sending; the answer still goes to it. */
		c->req.keep_alive = 0;
		bufferevent_disable(c->client, EV_READ);
		return;
	}
	if (c->state == CONN_PEEK && (what & BEV_EVENT_EOF))
		conn_decided(c, RULES_DENY, CONN_REASON_PROTOCOL_NOT_ALLOWED);
	/* The client went away (or errored): nothing more to say to it. */
	conn_close(c);
}

/*
 * The origin is connected: an absolute-form request goes out; a CONNECT is
 * answered 200 and its first bytes are peeked at.
 */
static void
conn_dial_event(struct conn *c, short what)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	char detail[CONN_ADDR_TEXT_MAX + 128];
	int e = EVUTIL_SOCKET_ERROR();

	if (!(what & BEV_EVENT_CONNECTED)) {
		snprintf(detail, sizeof(detail), "cannot connect to %s: %s",
		    c->req.addr_text, evutil_socket_error_to_string(e));
		conn_fail(c, 502, CONN_REASON_CONNECT_FAILED, detail);
		return;
	}
	if (strcmp(c->req.proto, "http") == 0) {
		conn_http_send(c);
		return;
	}
	c->req.status = 200;
	conn_say(c, ok, sizeof(ok) - 1);
	/*
	 * A protocol the entry names the port for may have the server speak
	 * first: the state lets the origin's bytes through then.
	 */
	conn_set_state(c, CONN_PEEK);
	/* Bytes the client sent early are peeked at now. */
	if (evbuffer_get_length(bufferevent_get_input(c->client)) > 0)
		conn_peek(c);
}

static void
conn_peek_up_read(struct conn *c)
{
	relay(c, c->up, c->client, &c->bytes_down);
}

static void
conn_peek_up_event(struct conn *c, short what)
{
	if (what == (BEV_EVENT_READING | BEV_EVENT_EOF)) {
		/*
		 * An origin that spoke first and is done: its bytes wait for
		 * the client, whose first bytes are still to be checked.  The
		 * tunnel reads the FIN again from the socket.
		 */
		relay(c, c->up, c->client, &c->bytes_down);
		bufferevent_disable(c->up, EV_READ);
		return;
	}
	conn_close(c);
}
