/*
 * way-api.c — the proxy's own API, in origin-form on the data port:
 * GET /healthz, GET /metrics, and POST /v1/runs (intutic exec registers a
 * run).  Answered by the proxy itself, then the connection closes.
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
#include "runs.h"

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
	conn_req_begin(c, &conn_way_api, "http");
	if (conn_local_body_ready(c, h, avail))
		conn_serve_local(c, h);
}

const struct conn_way conn_way_api = {
	.name = "api",
	.claims = api_claims,
	.request = api_request,
	.dialled = NULL,	/* it never dials */
};
