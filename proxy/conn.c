/*
 * conn.c — the core of a client connection, from its first byte to its
 * close, knowing no protocol (see conn-core.h for the ways in):
 *
 *   HEAD ──a way claims the head──> RESOLVE ──> DIAL ──> the way's states
 *     │                                │          │          │
 *     └── errors, the API ──> FINISH <─┴──────────┴──────────┘──> closed
 *
 * Every state change goes through conn_set_state(), which installs that
 * state's row of conn_states[] and arms its timeout.  conn_close() is the
 * one teardown: it cancels DNS, frees both sides, writes the close record,
 * fixes the counters and drops the rules reference.  A connection writes
 * exactly one decision record per request (when its fate is known) and one
 * close record.
 *
 * A DNS look-up (resolve.c) never calls back after resolve_cancel(), which
 * conn_close() calls; its own memory outlives the connection until evdns
 * has called back for the cancelled queries (resolve.h).
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/util.h>

#include "audit.h"
#include "conn-core.h"
#include "evio.h"
#include "http.h"
#include "log.h"
#include "ownaddr.h"
#include "proxy.h"
#include "resolve.h"
#include "rules.h"
#include "tls-hello.h"
#include "tunnel.h"

/* The read made as a connection is accepted: most request heads fit. */
#define CONN_FIRST_READ		4096

/* The timer lives just past the struct, in the same pool object. */
#define CONN_TIMER_OFF	POOL_PAST(struct conn)

size_t
conn_size(void)
{
	return CONN_TIMER_OFF + event_get_struct_event_size();
}

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
	[CONN_REASON_RUN_ENDED] = "run-ended",
	[CONN_REASON_UNKNOWN_PROVIDER] = "unknown-provider",
	[CONN_REASON_TLS_FAILED] = "tls-failed",
	[CONN_REASON_CREDENTIAL_LEAK] = "credential-leak",
	[CONN_REASON_KEY_MISMATCH] = "key-mismatch",
};

const char *
conn_reason_str(enum conn_reason r)
{
	if ((size_t)r >= sizeof(conn_reason_names) / sizeof(conn_reason_names[0]) ||
	    conn_reason_names[r] == NULL)
		return "unknown";
	return conn_reason_names[r];
}

enum conn_reason
conn_reason_of(enum rules_reason r)
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

void
conn_sockaddr_text(const struct sockaddr *sa, char *buf, size_t len, int with_port)
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

static void	conn_run_count(struct conn *);
static void	conn_decided_drop(struct conn *);

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
	if (c->listener == CONN_LISTEN_TRANSPARENT) {
		r.original = c->orig_text[0] != '\0' ? c->orig_text : NULL;
		r.mismatch = c->req.mismatch;
		r.transparent = 1;
	}
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
void
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
	if (c->run != NULL)
		conn_run_count(c);
}

/* The run's counters: a request, and what denied it. */
static void
conn_run_count(struct conn *c)
{
	char where[RULES_WHERE_MAX];
	int denied = c->req.d.verdict != RULES_ALLOW;

	run_count(c->run, denied ? c->req.host.text : NULL, c->req.port,
	    conn_reason_str(c->req.reason), denied && c->req.d.entry != NULL ?
	    rules_entry_where(c->req.d.entry, where, sizeof(where)) : NULL);
}

/*
 * The connection's decision does not stand under what is in force now
 * (d; reason CONN_REASON_RUN_ENDED when its run ended): a "revoke"
 * record naming what now denies it, then the close.
 */
void
conn_revoke(struct conn *c, const struct rules_decision *d,
    enum conn_reason reason)
{
	c->req.d = *d;
	c->req.d.verdict = RULES_DENY;
	c->req.reason = reason;
	METRIC_ADD(c->p, revocations, 1);
	conn_audit(c, "revoke");
	conn_close(c);
}

/*
 * A new request on the connection, of `way` (NULL: none claimed it), in
 * `proto`: nothing of the one before stays (its decision record is
 * written, or it had no fate to record).
 */
void
conn_req_begin(struct conn *c, const struct conn_way *way,
    const char *proto)
{
	http_framing_free(c->req.body);
	conn_decided_drop(c);
	memset(&c->req, 0, sizeof(c->req));
	c->req.way = way;
	c->req.proto = proto;
	c->req.status = -1;
	c->req.down_mark = c->bytes_down;
}

/* ---------------------------------------------------------- lifecycle */

static void	conn_idle_up_read(struct conn *);
static void	conn_idle_up_event(struct conn *, short);
static void	conn_head_timeout(struct conn *);
static void	conn_finish_write(struct conn *);
static void	conn_finish_timeout(struct conn *);

static const struct conn_state_def conn_state_head = {
	.name = "head", .timeout = offsetof(struct proxy_config, head_ms),
	.client_read = conn_read_head,
	.up_read = conn_idle_up_read,
	.up_event = conn_idle_up_event,
	.on_timeout = conn_head_timeout,
	.client_io = CONN_IO_READ, .up_io = CONN_IO_READ, .wm = CONN_WM_HEAD,
};

static const struct conn_state_def conn_state_finish = {
	.name = "finish", .timeout = CONN_TIMEOUT_FINISH,
	.client_write = conn_finish_write,
	.on_timeout = conn_finish_timeout,
	.client_io = CONN_IO_WRITE, .up_io = CONN_IO_STOP, .wm = CONN_WM_KEEP,
};

/* Every state's row, by state: the core's, conn-dial.c's and the ways'. */
static const struct conn_state_def *const conn_states[CONN_STATE_COUNT] = {
	[CONN_HEAD] = &conn_state_head,
	[CONN_RESOLVE] = &conn_state_resolve,
	[CONN_DIAL] = &conn_state_dial,
	[CONN_PEEK] = &conn_state_peek,
	[CONN_TUNNEL] = &conn_state_tunnel,
	[CONN_HTTP] = &conn_state_http,
	[CONN_FINISH] = &conn_state_finish,
	[CONN_WAIT] = &conn_state_wait,
	[CONN_SNIFF] = &conn_state_sniff,
	[CONN_GW_TLS] = &conn_state_gw_tls,
	[CONN_PARENT] = &conn_state_parent,
	[CONN_GW_RELAY] = &conn_state_gw_relay,
};

/* The ways in, asked in this order whether a request head is theirs. */
static const struct conn_way *const conn_ways[] = {
	&conn_way_control,	/* the control socket's, all of it */
	&conn_way_connect,
	&conn_way_gateway,	/* origin-form /providers/..., before the API */
	&conn_way_api,
	&conn_way_forward,	/* the rest */
	&conn_way_transparent,	/* a --transparent-bind listener's, all */
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
void
conn_set_state(struct conn *c, enum conn_state s)
{
	const struct conn_state_def *def = conn_states[s];
	struct timeval tv;
	int ms;

	debug_f("%llu: %s -> %s", (unsigned long long)c->id,
	    conn_states[c->state]->name, def->name);
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
}

/*
 * Every callback into a connection runs between conn_enter() and
 * conn_leave().  A conn_close() in between does the whole teardown at once
 * (records, sockets, DNS, counters) but the memory stays until the
 * outermost callback returns: nothing up the chain reads freed memory, and
 * a second close is nothing.
 */
struct conn *
conn_enter(void *arg)
{
	struct conn *c = arg;

	c->depth++;
	return c;
}

void
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
	const struct conn_state_def *def = conn_states[c->state];
	conn_io_fn fn = bev == c->client ? def->client_read : def->up_read;

	if (!c->closing && fn != NULL)
		fn(c);
	conn_leave(c);
}

static void
conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = conn_enter(arg);
	const struct conn_state_def *def = conn_states[c->state];
	conn_io_fn fn = bev == c->client ? def->client_write : def->up_write;

	if (!c->closing && fn != NULL)
		fn(c);
	conn_leave(c);
}

static void
conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = conn_enter(arg);
	const struct conn_state_def *def = conn_states[c->state];
	conn_ev_fn fn = bev == c->client ? def->client_event : def->up_event;

	/* By default, a side that went away (or errored) ends it all. */
	if (!c->closing) {
		if (fn != NULL)
			fn(c, what);
		else
			conn_close(c);
	}
	conn_leave(c);
}

/* Gives a new bufferevent of c the dispatching callbacks. */
void
conn_bev_init(struct conn *c, struct bufferevent *bev)
{
	bufferevent_setcb(bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
}

/* The sets a request was decided with, kept past a recheck, go. */
static void
conn_decided_drop(struct conn *c)
{
	rules_free(c->decided_rules);
	rules_free(c->decided_policy);
	c->decided_rules = c->decided_policy = NULL;
}

/* The connection has no run any more: its bytes are counted to it. */
void
conn_run_drop(struct conn *c)
{
	if (c->run != NULL)
		run_bytes(c->run, c->bytes_up - c->run_bytes_up,
		    c->bytes_down - c->run_bytes_down);
	run_release(c->run);
	rules_free(c->policy);
	c->run = NULL;
	c->policy = NULL;
	c->policy_gen = 0;
}

/*
 * The one teardown: DNS cancelled, records written, both sides and the
 * tunnel freed, counters fixed, the rules reference dropped.  Entered from
 * a callback of c, the memory itself goes when that returns (conn_leave).
 */
void
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
		    CONN_REASON_CLIENT_GONE : conn_reason_of(c->req.d.reason));
	}
	if (c->tun != NULL) {
		c->bytes_up += tunnel_moved(c->tun, TUNNEL_UP);
		c->bytes_down += tunnel_moved(c->tun, TUNNEL_DOWN);
		tunnel_free(c->tun);
		c->tun = NULL;
	}
	conn_gw_free(c);
	/* Between calls: its provider connection may serve another. */
	if (c->up != NULL && c->up_tls && c->state == CONN_HEAD)
		conn_gw_park(c);
	if (c->req.host.len > 0 || c->decisions > 0)
		conn_audit(c, "close");
	if (c->client != NULL)
		bufferevent_free(c->client);
	if (c->up != NULL)
		bufferevent_free(c->up);
	c->client = c->up = NULL;
	if (c->timer != NULL)
		event_del(c->timer);	/* in c's own memory: nothing to free */
	if (c->held != NULL)
		evbuffer_free(c->held);
	c->held = NULL;
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
	conn_run_drop(c);
	conn_decided_drop(c);
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

void
conn_recheck_all(struct worker *w)
{
	struct conn *c, *next;

	for (c = TAILQ_FIRST(&w->conns); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		(void)conn_enter(c);
		conn_recheck(c);
		conn_leave(c);
	}
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

void
conn_tls_alert(struct conn *c, int description)
{
	uint8_t alert[] = { 0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0 };

	alert[6] = (uint8_t)description;
	evbuffer_drain(bufferevent_get_input(c->client),
	    evbuffer_get_length(bufferevent_get_input(c->client)));
	bufferevent_write(c->client, alert, sizeof(alert));
}

/*
 * Answers the client and closes once the answer is written.  The body names
 * the reason and the rule so that a person and an agent both understand it.
 * A client that spoke TLS to the transparent listener gets an alert instead
 * (access_denied for a refusal, internal_error when the proxy could not go
 * on), and one that spoke neither TLS nor HTTP the close alone.
 */
void
conn_fail(struct conn *c, int status, enum conn_reason reason,
    const char *detail)
{
	char body[2048], where[RULES_WHERE_MAX], target[RULES_HOST_TEXT_MAX + 8];
	char ruletext[RULES_WHERE_MAX + 16] = "";
	const char *rule = c->req.d.entry != NULL ? rules_entry_where(c->req.d.entry,
	    where, sizeof(where)) : NULL;

	c->req.status = status;
	conn_decided(c, c->req.d.verdict, reason);
	switch (c->req.answer) {
	case CONN_ANSWER_TLS:
		conn_tls_alert(c, status < 500 ? TLS_ALERT_ACCESS_DENIED :
		    TLS_ALERT_INTERNAL_ERROR);
		conn_finish(c);
		return;
	case CONN_ANSWER_CLOSE:
		conn_close(c);
		return;
	case CONN_ANSWER_HTTP:
		break;
	}
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
	http_answer(bufferevent_get_output(c->client), status,
	    conn_reason_str(reason), body);
	conn_finish(c);
}

/* A refusal: decided RULES_DENY, answered, closed. */
void
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
void
conn_finish(struct conn *c)
{
	conn_up_drop(c);
	conn_set_state(c, CONN_FINISH);
}

static void
conn_finish_write(struct conn *c)
{
	if (evbuffer_get_length(bufferevent_get_output(c->client)) == 0)
		conn_close(c);
}

/* Closes the origin side, e.g. before dialling another host. */
void
conn_up_drop(struct conn *c)
{
	if (c->up != NULL)
		bufferevent_free(c->up);
	c->up = NULL;
	c->up_ready = 0;
	c->up_tls = 0;
	c->up_host[0] = '\0';
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

/* ----------------------------------------------------------- timeouts */

static void
conn_head_timeout(struct conn *c)
{
	METRIC_ADD(c->p, timeouts, 1);
	if (evbuffer_get_length(bufferevent_get_input(c->client)) > 0) {
		conn_req_begin(c, NULL, "http");
		conn_fail(c, 408, CONN_REASON_HEAD_TIMEOUT,
		    "the request head did not arrive in time");
	} else
		conn_close(c);
}

static void
conn_finish_timeout(struct conn *c)
{
	conn_close(c);
}

int
conn_idle_expired(struct conn *c)
{
	int64_t idle = elapsed_ms(&c->last_io), left;
	struct timeval tv;

	if (idle < c->p->cfg.idle_ms) {
		left = c->p->cfg.idle_ms - idle;
		tv.tv_sec = left / 1000;
		tv.tv_usec = (left % 1000) * 1000;
		evtimer_add(c->timer, &tv);
		return 0;
	}
	METRIC_ADD(c->p, timeouts, 1);
	return 1;
}

static void
conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = conn_enter(arg);

	(void)fd;
	(void)what;
	if (!c->closing)
		conn_states[c->state]->on_timeout(c);
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
	size_t want = c->p->cfg.head_max + 1;

	if (want > CONN_FIRST_READ)
		want = CONN_FIRST_READ;
	if (evio_read_now(c->client, want) > 0)
		conn_read_cb(c->client, c);
}

int
conn_peer_of(const struct sockaddr *sa, const struct sockaddr *here,
    struct ownaddr *local, struct rules_addr *peer)
{
	int sandboxed;

	memset(peer, 0, sizeof(*peer));
	if (sa->sa_family == AF_INET) {
		peer->family = AF_INET;
		peer->v4 = ((const struct sockaddr_in *)sa)->sin_addr;
	} else if (sa->sa_family == AF_INET6) {
		peer->family = AF_INET6;
		peer->v6 = ((const struct sockaddr_in6 *)sa)->sin6_addr;
	} else
		return 0;
	if (strcmp(rules_addr_class(peer, NULL), "loopback") == 0)
		return 0;
	/* Not known to be local: a sandbox's, unless it came to itself. */
	sandboxed = 1;
	if (here != NULL && here->sa_family == sa->sa_family)
		sandboxed = sa->sa_family == AF_INET ?
		    ((const struct sockaddr_in *)here)->sin_addr.s_addr !=
		    peer->v4.s_addr :
		    memcmp(&((const struct sockaddr_in6 *)here)->sin6_addr,
		    &peer->v6, sizeof(peer->v6)) != 0;
	if (sandboxed && local != NULL && ownaddr_local(local, sa))
		sandboxed = 0;
	/* An IPv4 peer of an IPv6 socket is its IPv4 address, as runs say. */
	if (peer->family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&peer->v6)) {
		struct in_addr v4;	/* v4 and v6 share their memory */

		memcpy(&v4, &peer->v6.s6_addr[12], 4);
		peer->v4 = v4;
		peer->family = AF_INET;
	}
	return sandboxed;
}

/*
 * The peer, as conn_peer_of() has it; the address it came to into *here
 * (family AF_UNSPEC when not known).  Nothing redirects to the data port:
 * a process of this host comes from loopback or the address it connected
 * to; to the transparent listener, from any of the host's addresses.
 */
static void
conn_peer(struct conn *c, int fd, const struct sockaddr *sa,
    struct sockaddr_storage *here)
{
	socklen_t len = sizeof(*here);

	if (getsockname(fd, (struct sockaddr *)here, &len) != 0)
		here->ss_family = AF_UNSPEC;
	c->sandboxed = conn_peer_of(sa, (struct sockaddr *)here,
	    c->listener == CONN_LISTEN_TRANSPARENT ? c->p->local : NULL,
	    &c->peer);
}

void
conn_accept(struct worker *w, int fd, const struct sockaddr *sa, socklen_t len,
    int listener)
{
	struct proxy *p = w->p;
	struct sockaddr_storage here;
	struct ucred cred;
	socklen_t credlen = sizeof(cred);
	struct conn *c;
	size_t i;

	(void)len;
	here.ss_family = AF_UNSPEC;
	if ((c = pool_get(&w->conn_pool)) == NULL) {
		close(fd);
		return;
	}
	(void)conn_enter(c);
	c->id = __atomic_add_fetch(&p->next_id, 1, __ATOMIC_RELAXED);
	c->w = w;
	c->p = p;
	conn_req_begin(c, NULL, "http");
	gettimeofday(&c->started, NULL);
	c->last_io = c->started;
	c->listener = (enum conn_listener)listener;
	c->peer_uid = (uid_t)-1;
	c->peer_pid = 0;
	if (listener == CONN_LISTEN_CONTROL) {
		/* who asks, as the kernel says: the control API's only proof */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &credlen) == 0) {
			c->peer_uid = cred.uid;
			c->peer_pid = cred.pid;
		}
		snprintf(c->client_text, sizeof(c->client_text),
		    "control:uid=%ld,pid=%ld", c->peer_uid == (uid_t)-1 ? -1L :
		    (long)c->peer_uid, (long)c->peer_pid);
	} else {
		conn_sockaddr_text(sa, c->client_text, sizeof(c->client_text), 1);
		conn_peer(c, fd, sa, &here);
	}
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
	for (i = 0; i < sizeof(conn_ways) / sizeof(conn_ways[0]); i++)
		if ((conn_ways[i]->listeners & c->listener) &&
		    conn_ways[i]->accepted != NULL) {
			conn_ways[i]->accepted(c, fd,
			    (const struct sockaddr *)&here);
			break;
		}
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

void
conn_read_head(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->client);
	struct http_head *h;
	const char *why;
	size_t avail = evbuffer_get_length(in), end;
	char *buf;
	size_t i;
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
			conn_req_begin(c, NULL, "http");
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
		conn_req_begin(c, NULL, "http");
		conn_fail(c, status, CONN_REASON_BAD_REQUEST, why);
		return;
	}
	for (i = 0; i < sizeof(conn_ways) / sizeof(conn_ways[0]); i++)
		if ((conn_ways[i]->listeners & c->listener) &&
		    conn_ways[i]->claims(h)) {
			conn_ways[i]->request(c, h, avail);
			break;
		}
	if (i == sizeof(conn_ways) / sizeof(conn_ways[0])) {
		/* Only a --gateway-bind listener leaves requests unclaimed. */
		conn_req_begin(c, NULL, "http");
		conn_fail(c, 404, CONN_REASON_UNKNOWN_PROVIDER, "this address "
		    "serves the provider gateway alone: /providers/NAME/...; "
		    "proxy requests go to the proxy's data port");
	}
	free(h);
}
