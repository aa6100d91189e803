/*
 * way-forward.c — absolute-form HTTP (GET http://host/path): each request
 * decided on its own, its Host checked against the URI, sent on in
 * origin-form without hop-by-hop and Proxy-* headers, bodies re-framed
 * both ways (http.c), the origin kept for the next request to the same
 * host when both ends say keep-alive.  A 101 Switching Protocols makes the
 * pair a tunnel (way-connect.c).
 */
#include "config.h"

#include <sys/time.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "conn-core.h"
#include "evio.h"
#include "http.h"
#include "log.h"
#include "proxy.h"
#include "rules.h"
#include "upstream.h"

static void	conn_http_client_read(struct conn *);

/*
 * The head for the parent (--upstream-proxy): the request stays in absolute
 * form, "http://NAME:PORT/path" with the decided name and port, and carries
 * the parent's credentials instead of the client's Proxy-* headers (a
 * Host is added as for an origin, when the request had none).  0, or -1
 * when out of memory.
 */
static int
conn_http_head_parent(struct conn *c, const struct http_head *h,
    const char *path, size_t pathlen, const char *add_host)
{
	const struct upstream *u = c->p->upstream;
	char authority[RULES_HOST_TEXT_MAX + 8], *abs;
	char extra[RULES_HOST_TEXT_MAX + UPSTREAM_AUTH_MAX * 2];
	size_t len;

	upstream_authority(&c->req.host, c->req.port, authority,
	    sizeof(authority));
	len = strlen("http://") + strlen(authority) + 1 + pathlen + 1;
	if ((abs = malloc(len)) == NULL)
		return -1;
	snprintf(abs, len, "http://%s%s%.*s", authority,
	    pathlen == 0 || path[0] == '?' ? "/" : "", (int)pathlen, path);
	snprintf(extra, sizeof(extra), "%s%s%s%s",
	    http_header_find(h, "host") == NULL ? "Host: " : "",
	    http_header_find(h, "host") == NULL ? add_host : "",
	    http_header_find(h, "host") == NULL ? "\r\n" : "",
	    u->auth != NULL ? u->auth : "");
	http_forward_head_ex(h, abs, strlen(abs), h->upgrade, !h->keep_alive,
	    NULL, NULL, extra[0] != '\0' ? extra : NULL, c->fwd);
	free(abs);
	return 0;
}

/*
 * One absolute-form request: decided on its own (keep-alive connections
 * decide every request), its Host must agree with the URI, and it goes
 * out in origin-form with hop-by-hop and Proxy-* headers removed.
 */
static void
conn_http_request(struct conn *c, const struct http_head *h,
    size_t avail)
{
	const char *auth, *path, *why;
	size_t authlen, pathlen;
	char target[RULES_HOST_TEXT_MAX + 16], detail[512];
	int err;

	(void)avail;
	conn_req_begin(c, &conn_way_forward, "http");
	conn_identify_early(c, h);
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
		/* A brokered key as a host no rule could take. */
		if (conn_leak_head(c, h) != 0)
			return;
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
	/* A brokered key in the target or a header: the run's, refused. */
	if (conn_identify(c, h) != 0 || conn_leak_head(c, h) != 0 ||
	    conn_decide(c) != 0)
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
	if (c->p->upstream != NULL) {
		if (conn_http_head_parent(c, h, path, pathlen, target) != 0) {
			conn_close(c);
			return;
		}
	} else
		http_forward_head(h, path, pathlen, h->upgrade, !h->keep_alive,
		    http_header_find(h, "host") == NULL ? target : NULL,
		    c->fwd);
	evbuffer_drain(bufferevent_get_input(c->client), h->len);

	if (c->up != NULL && c->up_ready && !c->up_tls &&
	    c->up_port == c->req.port &&
	    strcmp(c->up_host, c->req.host.text) == 0) {
		/* The same origin: reuse the connection, as decided above. */
		snprintf(c->req.addr_text, sizeof(c->req.addr_text), "%s", c->up_addr);
		conn_decided(c, c->req.d.verdict, c->req.report_only ?
		    conn_reason_of(c->req.d.reason) : CONN_REASON_ALLOWED);
		conn_http_send(c);
		return;
	}
	conn_up_drop(c);
	conn_reach(c);
}

static int	conn_http_push(struct conn *, struct bufferevent *,
		    struct evbuffer *, struct bufferevent *);

/*
 * The origin is connected: send the head, then stream the body.  Also the
 * gateway's, once TLS is up (way-gateway.c).
 */
void
conn_http_send(struct conn *c)
{
	conn_decided(c, c->req.d.verdict, c->req.report_only ?
	    conn_reason_of(c->req.d.reason) : CONN_REASON_ALLOWED);
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
	/* A TLS origin (the gateway's) is written through its bufferevent. */
	if (to == c->up && c->up_tls ?
	    evbuffer_add_buffer(bufferevent_get_output(to), stage) != 0 :
	    evio_write_now(to, NULL, 0, stage) != 0) {
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
	conn_gw_done(c);
	http_framing_free(c->resp_framing);
	c->resp_framing = NULL;
	/* Stopping: the answer was the last one. */
	if (__atomic_load_n(&c->p->stopping, __ATOMIC_RELAXED) != 0)
		c->req.keep_alive = 0;
	if (!c->req.keep_alive || !c->req.body_done) {
		if (c->up_tls && c->req.body_done)
			conn_gw_park(c);
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

	if (c->gw != NULL && evbuffer_get_length(in) > 0)
		conn_gw_first_byte(c);
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
			if (evio_write_now(c->client, NULL, 0, c->back) != 0) {
				conn_close(c);
				return 0;
			}
			if (c->up_tls)
				conn_gw_upgraded(c);
			else
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
		if (c->gw != NULL)
			conn_gw_response(c, h);
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

/* The client closed or errored while an exchange was under way. */
static void
conn_http_client_event(struct conn *c, short what)
{
	if ((what & BEV_EVENT_EOF) && c->req.body_done) {
		/* The client is done sending; the answer still goes to it. */
		c->req.keep_alive = 0;
		bufferevent_disable(c->client, EV_READ);
		return;
	}
	conn_close(c);
}

static void
conn_http_timeout(struct conn *c)
{
	char detail[128];

	if (!conn_idle_expired(c))
		return;
	/* Nothing of the answer has gone out: the client can be told. */
	if (c->req.status <= 0 && c->bytes_down == c->req.down_mark) {
		snprintf(detail, sizeof(detail), "the origin did not answer "
		    "within %d ms", c->p->cfg.idle_ms);
		conn_fail(c, 504, CONN_REASON_UPSTREAM_TIMEOUT, detail);
		return;
	}
	conn_close(c);
}

const struct conn_state_def conn_state_http = {
	.name = "http", .timeout = offsetof(struct proxy_config, idle_ms),
	.client_read = conn_http_client_read,
	.client_write = conn_http_client_drained,
	.up_read = conn_http_up_read,
	.up_write = conn_http_up_drained,
	.client_event = conn_http_client_event,
	.up_event = conn_http_up_event,
	.on_timeout = conn_http_timeout,
	.client_io = CONN_IO_READ, .up_io = CONN_IO_READ, .wm = CONN_WM_FLOW,
	.bulk = 1,
};

/* Anything the other ways do not claim: absolute-form, or a bad target. */
static int
forward_claims(const struct http_head *h)
{
	(void)h;
	return 1;
}

const struct conn_way conn_way_forward = {
	.name = "forward",
	.listeners = CONN_LISTEN_DATA,
	.claims = forward_claims,
	.request = conn_http_request,
	.dialled = conn_http_send,
	.to_parent_as_is = 1,
};
