/*
 * way-connect.c — CONNECT host:port: decided by name, dialled, answered
 * 200; then the client's first bytes are peeked at (TLS must name the
 * CONNECT host in its SNI, HTTP in its request-target and Host; anything
 * else passes only where the allow entry names the port), and the sockets
 * are handed to a tunnel (tunnel.c).  Also the tunnel a 101 Switching
 * Protocols makes of an absolute-form exchange (way-forward.c).
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "conn-core.h"
#include "evio.h"
#include "http.h"
#include "log.h"
#include "proxy.h"
#include "rules.h"
#include "tls-hello.h"
#include "tunnel.h"

static void	conn_peek(struct conn *);

/* The CONNECT target is "host:port", the port required. */
static void
conn_connect_request(struct conn *c, const struct http_head *h,
    size_t avail)
{
	char target[RULES_HOST_TEXT_MAX + 16];
	const char *colon;
	int err;

	(void)avail;
	conn_req_begin(c, &conn_way_connect, "connect");
	conn_identify_early(c, h);
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

		/* A brokered key as a host no rule could take. */
		if (conn_leak_head(c, h) != 0)
			return;
		snprintf(detail, sizeof(detail), "invalid host in '%s': %s",
		    target, rules_strerror(err));
		conn_deny(c, 403, CONN_REASON_INVALID_HOST, detail);
		return;
	}
	/* A brokered key in the target or a header: the run's, refused. */
	if (conn_identify(c, h) != 0 || conn_leak_head(c, h) != 0 ||
	    conn_decide(c) != 0)
		return;
	evbuffer_drain(bufferevent_get_input(c->client), h->len);
	conn_reach(c);
}

/*
 * The origin is connected: the client is told (200), and its first bytes
 * are peeked at.
 */
static void
connect_dialled(struct conn *c)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

	c->req.status = 200;
	/*
	 * Straight to the socket when nothing is queued before it: one loop
	 * pass and two epoll_ctl(2) less on the way to a tunnel.
	 */
	if (evio_write_now(c->client, ok, sizeof(ok) - 1, NULL) != 0) {
		conn_close(c);
		return;
	}
	/*
	 * A protocol the entry names the port for may have the server speak
	 * first: the state lets the origin's bytes through then.
	 */
	conn_set_state(c, CONN_PEEK);
	/* Bytes the client sent early are peeked at now. */
	if (evbuffer_get_length(bufferevent_get_input(c->client)) > 0)
		conn_peek(c);
}

static int
connect_claims(const struct http_head *h)
{
	return h->is_connect;
}

const struct conn_way conn_way_connect = {
	.name = "connect",
	.listeners = CONN_LISTEN_DATA,
	.claims = connect_claims,
	.request = conn_connect_request,
	.dialled = connect_dialled,
};

/* ------------------------------------------------------------ the peek */

/* Closes a tunnel the client opened with TLS: a fatal access_denied alert. */
static void
conn_tls_deny(struct conn *c, enum conn_reason reason)
{
	conn_decided(c, RULES_DENY, reason);
	conn_tls_alert(c, TLS_ALERT_ACCESS_DENIED);
	conn_finish(c);
}

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
int
conn_target_ok(const struct conn *c, const struct http_head *h)
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

enum conn_sniff
conn_sniff(struct conn *c, struct conn_sniffed *s)
{
	struct evbuffer *in = bufferevent_get_input(c->client);
	size_t avail = evbuffer_get_length(in), want, end;
	uint8_t *buf;

	s->h = NULL;
	s->status = 0;
	s->why = NULL;
	if (avail == 0)
		return CONN_SNIFF_MORE;
	want = avail < TLS_HELLO_MAX ? avail : TLS_HELLO_MAX;
	if ((buf = evbuffer_pullup(in, (ssize_t)want)) == NULL)
		return CONN_SNIFF_ERROR;
	switch (tls_hello_parse(buf, want, &s->hello, &s->why)) {
	case TLS_HELLO_MORE:
		if (want < TLS_HELLO_MAX)
			return CONN_SNIFF_MORE;
		s->why = "the ClientHello is too large";
		return CONN_SNIFF_BAD_TLS;
	case TLS_HELLO_MALFORMED:
		debug_f("%llu: bad ClientHello: %s", (unsigned long long)c->id,
		    s->why);
		return CONN_SNIFF_BAD_TLS;
	case TLS_HELLO_OK:
		return CONN_SNIFF_TLS;
	case TLS_HELLO_NOT_TLS:
		break;
	}
	if (!http_looks_like_request((const char *)buf, want))
		return CONN_SNIFF_OTHER;
	if ((end = http_head_end((const char *)buf, want)) == 0) {
		if (want < c->p->cfg.head_max)
			return CONN_SNIFF_MORE;
		s->status = 431;
		s->why = "the request head is too large";
		return CONN_SNIFF_BAD_HTTP;
	}
	if ((s->h = malloc(sizeof(*s->h))) == NULL)
		return CONN_SNIFF_ERROR;
	if (http_head_parse((const char *)buf, end, c->p->cfg.headers_max,
	    c->p->cfg.uri_max, s->h, &s->status, &s->why) != HTTP_OK) {
		free(s->h);
		s->h = NULL;
		return CONN_SNIFF_BAD_HTTP;
	}
	return CONN_SNIFF_HTTP;
}

/*
 * The client's first bytes in a tunnel decide whether it may go on: TLS
 * must name the CONNECT host in its SNI, HTTP in its Host; anything else
 * only where the allow entry names the port.
 */
static void
conn_peek(struct conn *c)
{
	struct conn_sniffed s;
	struct rules_host sni;
	int ok, explicit_port = c->req.d.entry != NULL &&
	    rules_entry_names_port(c->req.d.entry, c->req.port);

	switch (conn_sniff(c, &s)) {
	case CONN_SNIFF_MORE:
		return;
	case CONN_SNIFF_ERROR:
		conn_close(c);
		return;
	case CONN_SNIFF_BAD_TLS:
		conn_peek_refuse(c, CONN_REASON_BAD_TLS, PEEK_TLS_ALERT, NULL);
		return;
	case CONN_SNIFF_BAD_HTTP:
		if (s.status == 431)
			conn_fail(c, 431, CONN_REASON_BAD_REQUEST, s.why);
		else
			conn_deny(c, s.status, CONN_REASON_BAD_REQUEST, s.why);
		return;
	case CONN_SNIFF_TLS:
		if (s.hello.has_sni) {
			c->req.has_sni = 1;
			snprintf(c->req.sni, sizeof(c->req.sni), "%s",
			    s.hello.sni);
		}
		if (!s.hello.has_sni) {
			/* No SNI is normal only towards an IP literal. */
			if (c->req.host.kind == RULES_HOST_NAME) {
				conn_peek_refuse(c, CONN_REASON_SNI_MISSING,
				    PEEK_TLS_ALERT, NULL);
				return;
			}
		} else if (rules_host_parse(s.hello.sni, s.hello.sni_len,
		    &sni) != RULES_OK || sni.kind != RULES_HOST_NAME ||
		    strcmp(sni.text, c->req.host.text) != 0) {
			conn_peek_refuse(c, CONN_REASON_SNI_MISMATCH,
			    PEEK_TLS_ALERT, NULL);
			return;
		}
		conn_tunnel_start(c);
		return;
	case CONN_SNIFF_HTTP:
		if (!(ok = conn_target_ok(c, s.h)))
			conn_peek_refuse(c, CONN_REASON_HOST_MISMATCH,
			    PEEK_HTTP_403, "the request-target does not name "
			    "the CONNECT host (inside a tunnel, a request is in "
			    "origin-form or names the CONNECT host)");
		else if (!(ok = http_host_matches(s.h, &c->req.host,
		    c->req.port)))
			conn_peek_refuse(c, CONN_REASON_HOST_MISMATCH,
			    PEEK_HTTP_403,
			    "the Host header does not name the CONNECT host");
		free(s.h);
		if (ok)
			conn_tunnel_start(c);
		return;
	case CONN_SNIFF_OTHER:
		break;
	}
	if (explicit_port) {
		conn_tunnel_start(c);
		return;
	}
	conn_peek_refuse(c, CONN_REASON_PROTOCOL_NOT_ALLOWED, PEEK_CLOSE, NULL);
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

/* The client left, or errored, before its first bytes were judged. */
static void
conn_peek_client_event(struct conn *c, short what)
{
	if (what & BEV_EVENT_EOF)
		conn_decided(c, RULES_DENY, CONN_REASON_PROTOCOL_NOT_ALLOWED);
	conn_close(c);
}

void
conn_peek_timeout(struct conn *c)
{
	METRIC_ADD(c->p, timeouts, 1);
	conn_decided(c, RULES_DENY, CONN_REASON_PEEK_TIMEOUT);
	conn_close(c);
}

const struct conn_state_def conn_state_peek = {
	.name = "peek", .timeout = offsetof(struct proxy_config, peek_ms),
	.client_read = conn_peek,
	.up_read = conn_peek_up_read,
	.client_event = conn_peek_client_event,
	.up_event = conn_peek_up_event,
	.on_timeout = conn_peek_timeout,
	.client_io = CONN_IO_READ, .up_io = CONN_IO_PORT, .wm = CONN_WM_PEEK,
};

/* ----------------------------------------------------------- the tunnel */

void
conn_tunnel_start(struct conn *c)
{
	conn_decided(c, c->req.d.verdict, c->req.report_only ? conn_reason_of(c->req.d.reason) :
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
void
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
	if (evio_take_output(c->up, to_up) != 0 ||
	    evbuffer_add_buffer(to_up, cin) != 0 ||
	    evio_take_output(c->client, to_client) != 0 ||
	    evbuffer_add_buffer(to_client, uin) != 0) {
		evbuffer_free(to_up);
		evbuffer_free(to_client);
		conn_close(c);
		return;
	}
	gettimeofday(&c->last_io, NULL);
	conn_set_state(c, CONN_TUNNEL);
	if (!c->tunnel_counted) {
		c->tunnel_counted = 1;
		METRIC_ADD(c->p, tunnels_active, 1);
	}
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

/* The tunnel keeps last_io; its sockets are its own (tunnel.c). */
static void
conn_tunnel_timeout(struct conn *c)
{
	if (conn_idle_expired(c))
		conn_close(c);
}

/* The sockets go to the tunnel as they are registered (see there). */
const struct conn_state_def conn_state_tunnel = {
	.name = "tunnel", .timeout = offsetof(struct proxy_config, idle_ms),
	.on_timeout = conn_tunnel_timeout,
	.client_io = CONN_IO_KEEP, .up_io = CONN_IO_KEEP, .wm = CONN_WM_KEEP,
};
