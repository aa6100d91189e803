/*
 * way-api.c — the proxy's own API, in origin-form on the data port:
 * GET /healthz and GET /metrics.  Answered by the proxy itself, then the
 * connection closes.  Runs are registered on the control socket
 * (way-control.c), which an agent cannot reach: here /v1/ and what is
 * under it is refused with a pointer there.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "audit.h"
#include "conn-core.h"
#include "http.h"
#include "log.h"
#include "proxy.h"
#include "wire.h"

/* /v1 or under it (/v1/runs, /v1/rules): the control API's. */
static int
is_control_request(const struct http_head *h)
{
	return h->target_len >= 3 && memcmp(h->target, "/v1", 3) == 0 &&
	    (h->target_len == 3 || h->target[3] == '/');
}

/* Origin-form requests to the proxy itself: /healthz and /metrics. */
static void
conn_serve_local(struct conn *c, const struct http_head *h)
{
	struct evbuffer *out = bufferevent_get_output(c->client), *body;
	char msg[sizeof(c->p->control_path) + 160];

	if (is_control_request(h)) {
		snprintf(msg, sizeof(msg), "runs are registered and changed, "
		    "and the rules read, on the proxy's control socket, %s, "
		    "not on its data port (intutic-proxy(8), CONTROL API)", c->p->control_path[0] ?
		    c->p->control_path : "DIR/" WIRE_CONTROL_SOCKET);
		conn_fail(c, 404, CONN_REASON_BAD_REQUEST, msg);
		return;
	}
	if (strcmp(h->method, "GET") != 0 && strcmp(h->method, "HEAD") != 0) {
		conn_fail(c, 400, CONN_REASON_BAD_REQUEST,
		    "only GET /healthz and GET /metrics are served in "
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
		    "only GET /healthz and GET /metrics are served in "
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

/* Origin-form ("/..."): a request to the proxy itself. */
static int
api_claims(const struct http_head *h)
{
	return h->target_len > 0 && h->target[0] == '/';
}

/* A request of its own: decided and recorded as such. */
static void
api_request(struct conn *c, const struct http_head *h, size_t avail)
{
	(void)avail;
	conn_req_begin(c, &conn_way_api, "http");
	conn_serve_local(c, h);
}

const struct conn_way conn_way_api = {
	.name = "api",
	.listeners = CONN_LISTEN_DATA,
	.claims = api_claims,
	.request = api_request,
	.dialled = NULL,	/* it never dials */
};
