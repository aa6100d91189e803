/*
 * way-gateway.c — the provider gateway (intutic-proxy(8), PROVIDER
 * GATEWAY): an origin-form request for /providers/NAME/PATH goes to that
 * provider's HTTPS API as PATH, the answer comes back as it arrives, and
 * each call gets an audit record of its own (event "call", proto
 * "gateway") with what the answer says it cost.
 *
 * Only the providers the rules' `gateway:` switches on are served.  The
 * upstream is the provider's `api` host, decided like any destination by
 * the run's policy: the gateway is no way around the allowlist.  The run
 * is the sandbox's (by its address) or the one the path names,
 * /r/RUN:TOKEN/providers/NAME/PATH, which is how `intutic exec` writes the
 * base URL it gives an agent on this host.  The request goes out with the
 * provider's Host, Accept-Encoding: identity (so that the answer's usage
 * can be read; providers stream uncompressed anyway) and everything else
 * the client sent but hop-by-hop and Proxy-* headers; the key headers the
 * provider lists pass untouched, and the record carries a fingerprint of
 * the key (gateway.h), never the key.  A brokered provider's call
 * (intutic-proxy(8), KEY BROKER) must carry the run's sentinel in those
 * headers (gw_broker_check()); they are dropped and the real key goes in
 * the broker's header instead, and the record has the real key's print.
 * Every call's target and other headers are looked at for a live
 * sentinel (gw_leak()).
 *
 * The exchange itself is way-forward.c's (CONN_HTTP: framing, keep-alive,
 * backpressure), over a TLS origin (tls.h) and with the hooks below: the
 * bodies are read on their way by usage.h, the first byte is timed, the
 * record is written when the answer is done, or at the close when it was
 * cut short.  A 101 (WebSocket, as the Responses API speaks it) makes the
 * pair a relay of bufferevents (CONN_GW_RELAY), since one side is TLS.
 */
#include "config.h"

#include <sys/queue.h>
#include <sys/time.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "audit.h"
#include "conn-core.h"
#include "crypto.h"
#include "evio.h"
#include "gateway.h"
#include "http.h"
#include "log.h"
#include "proxy.h"
#include "rules.h"
#include "runs.h"
#include "tls.h"
#include "usage.h"

#define GW_PREFIX	"/providers/"
#define GW_RUN_PREFIX	"/r/"
#define GW_PATH_MAX	256		/* bytes of the path a record keeps */

static int	gw_unpark(struct conn *);

/* A call under way on a connection (c->gw), one at a time. */
struct conn_gw {
	int			 open;		/* a call whose record is due */
	char			 provider[64];
	char			 method[HTTP_METHOD_MAX];
	char			 path[GW_PATH_MAX];
	char			 key[GATEWAY_FINGERPRINT_MAX];
	char			 request_id[128];
	const char		*key_mode;
	struct timeval		 started;	/* the request head read */
	struct timeval		 first;		/* the answer's first byte */
	int			 have_first;
	int			 status;
	int			 sse;		/* text/event-stream */
	int			 upgraded;	/* 101: a relay, no usage */
	enum usage_api		 api;
	struct usage_req	 req;
	struct usage		 resp;
};

static int64_t
gw_us_since(const struct timeval *from, const struct timeval *to)
{
	return ((int64_t)to->tv_sec - from->tv_sec) * 1000000 +
	    (to->tv_usec - from->tv_usec);
}

/* Whether the target is the gateway's: /providers/... or /r/.../providers/. */
static int
gw_claims(const struct http_head *h)
{
	return (h->target_len >= sizeof(GW_PREFIX) - 1 &&
	    memcmp(h->target, GW_PREFIX, sizeof(GW_PREFIX) - 1) == 0) ||
	    (h->target_len >= sizeof(GW_RUN_PREFIX) - 1 &&
	    memcmp(h->target, GW_RUN_PREFIX, sizeof(GW_RUN_PREFIX) - 1) == 0);
}

/* The target split: the run's credentials, the provider, the rest. */
struct gw_target {
	const char	*id, *token;	/* NULL: none */
	size_t		 idlen, tokenlen;
	const char	*name;
	size_t		 namelen;
	const char	*rest;		/* "/v1/messages?x" ("" when none) */
	size_t		 restlen;
	size_t		 pathlen;	/* of rest, without its query */
};

static int
gw_target_split(const char *t, size_t len, struct gw_target *g)
{
	const char *end = t + len, *seg, *colon, *q;

	memset(g, 0, sizeof(*g));
	if (len >= sizeof(GW_RUN_PREFIX) - 1 &&
	    memcmp(t, GW_RUN_PREFIX, sizeof(GW_RUN_PREFIX) - 1) == 0) {
		seg = t + sizeof(GW_RUN_PREFIX) - 1;
		if ((t = memchr(seg, '/', (size_t)(end - seg))) == NULL ||
		    (colon = memchr(seg, ':', (size_t)(t - seg))) == NULL)
			return -1;
		g->id = seg;
		g->idlen = (size_t)(colon - seg);
		g->token = colon + 1;
		g->tokenlen = (size_t)(t - colon - 1);
		if (g->idlen == 0 || g->tokenlen == 0)
			return -1;
	}
	if ((size_t)(end - t) < sizeof(GW_PREFIX) - 1 ||
	    memcmp(t, GW_PREFIX, sizeof(GW_PREFIX) - 1) != 0)
		return -1;
	g->name = t + sizeof(GW_PREFIX) - 1;
	for (q = g->name; q < end && *q != '/' && *q != '?'; q++)
		;
	g->namelen = (size_t)(q - g->name);
	if (g->namelen == 0)
		return -1;
	g->rest = q;
	g->restlen = (size_t)(end - q);
	for (g->pathlen = 0; g->pathlen < g->restlen &&
	    g->rest[g->pathlen] != '?'; g->pathlen++)
		;
	return 0;
}

/* "anthropic, openai": the providers the gateway serves, or "none". */
static void
gw_served(const struct rules *r, char *buf, size_t len)
{
	const struct rules_provider *pv;
	size_t i, at = 0;
	int n;

	buf[0] = '\0';
	for (i = 0; i < rules_provider_count(r); i++) {
		pv = rules_provider_get(r, i);
		if (pv->gateway == RULES_GATEWAY_OFF || pv->api == NULL)
			continue;
		n = snprintf(buf + at, len - at, "%s%s", at > 0 ? ", " : "",
		    pv->name);
		if (n < 0 || (size_t)n >= len - at)
			break;
		at += (size_t)n;
	}
	if (at == 0)
		snprintf(buf, len, "none (the rules' `gateway:` switches "
		    "providers on)");
}

/* Headers that carry a key to some provider: a brokered call has none. */
static const char *const gw_auth_headers[] = {
	"authorization", "x-api-key", "api-key", "x-goog-api-key",
};

/* Whether hd is one of pv's key headers. */
static int
gw_is_key_header(const struct rules_provider *pv, const struct http_header *hd)
{
	size_t i;

	for (i = 0; i < pv->key_header_count; i++)
		if (http_header_is(hd, pv->key_headers[i]))
			return 1;
	return 0;
}

struct gw_skip {
	const struct rules_provider *pv;
	int		 broker;	/* the key headers go, the real one comes */
};

/*
 * The headers the gateway writes itself, or must not pass: the Host is
 * the provider's, Accept-Encoding its own; a brokered call's keys.
 */
static int
gw_skip_header(void *arg, const struct http_header *hd)
{
	const struct gw_skip *sk = arg;
	size_t i;

	if (http_header_is(hd, "host") || http_header_is(hd, "accept-encoding"))
		return 1;
	if (!sk->broker)
		return 0;
	for (i = 0; i < sizeof(gw_auth_headers) / sizeof(gw_auth_headers[0]);
	    i++)
		if (http_header_is(hd, gw_auth_headers[i]))
			return 1;
	return gw_is_key_header(sk->pv, hd);
}

/* A key header's key: past "Bearer " when it starts so. */
static void
gw_key_value(const struct http_header *hd, const char **v, size_t *len)
{
	*v = hd->value;
	*len = hd->value_len;
	if (*len > 7 && strncasecmp(*v, "bearer ", 7) == 0) {
		*v += 7;
		*len -= 7;
	}
}

/*
 * A brokered call: every key header of pv that the request has must hold
 * the run's sentinel for pv, and one must; then the real key goes in pv's
 * broker header (gw_broker_head()).  0, or -1 when refused and answered.
 */
static int
gw_broker_check(struct conn *c, const struct rules_provider *pv,
    const struct http_head *h)
{
	char s[GATEWAY_SENTINEL_MAX], detail[512];
	const struct http_header *hd;
	const char *v;
	size_t i, len, slen;
	int seen = 0, bad = 0;

	if (c->run == NULL) {
		snprintf(detail, sizeof(detail), "%s's key is brokered: its "
		    "calls must be a run's, whose key intutic exec gives the "
		    "agent in $%s; start the agent with `intutic exec`",
		    pv->name, pv->broker->env);
		conn_deny(c, 403, CONN_REASON_KEY_MISMATCH, detail);
		return -1;
	}
	if (gateway_sentinel(c->p->gateway, pv, c->run, s) != 0) {
		conn_fail(c, 500, CONN_REASON_KEY_MISMATCH, "the run's "
		    "brokered key could not be made");
		return -1;
	}
	slen = strlen(s);
	for (i = 0; i < h->nheaders; i++) {
		hd = &h->headers[i];
		if (!gw_is_key_header(pv, hd))
			continue;
		seen = 1;
		gw_key_value(hd, &v, &len);
		if (len != slen || !crypto_equal(v, s, slen))
			bad = 1;
	}
	explicit_bzero(s, sizeof(s));
	if (!seen || bad) {
		snprintf(detail, sizeof(detail), "%s's key is brokered: the "
		    "call must carry the key intutic exec gave this run (in "
		    "$%s), %s; the real key never leaves the proxy", pv->name,
		    pv->broker->env, seen ? "not another" : "and it has none");
		conn_deny(c, 403, CONN_REASON_KEY_MISMATCH, detail);
		return -1;
	}
	return 0;
}

/*
 * A leak of some run's brokered key in the call: its target, or any
 * header but a brokered call's own key headers (gw_broker_check() found
 * the run's key there).  0, or -1 when refused.
 */
static int
gw_leak(struct conn *c, const struct rules_provider *pv,
    const struct http_head *h, int broker)
{
	size_t i;

	if (conn_leak(c, h->target, h->target_len) != 0)
		return -1;
	for (i = 0; i < h->nheaders; i++)
		if (!(broker && gw_is_key_header(pv, &h->headers[i])) &&
		    conn_leak(c, h->headers[i].value,
		    h->headers[i].value_len) != 0)
			return -1;
	return 0;
}

/* The key the request carries in its provider's key headers: its print. */
static void
gw_key_print(struct conn *c, const struct rules_provider *pv,
    const struct http_head *h)
{
	const struct http_header *hd;
	const char *v;
	size_t i, len;

	c->gw->key[0] = '\0';
	for (i = 0; i < pv->key_header_count; i++) {
		if ((hd = http_header_find(h, pv->key_headers[i])) == NULL)
			continue;
		gw_key_value(hd, &v, &len);
		gateway_fingerprint(c->p->gateway, pv->name, v, len,
		    c->gw->key);
		return;
	}
}

static void
gw_req_tap(void *arg, const char *data, size_t len)
{
	struct conn *c = arg;

	usage_req_feed(&c->gw->req, data, len);
}

static void
gw_resp_tap(void *arg, const char *data, size_t len)
{
	struct conn *c = arg;

	usage_feed(&c->gw->resp, data, len);
}

/*
 * The call's record: once, when the answer is done (complete) or the
 * connection closes before (cut short).
 */
static void
gw_call_end(struct conn *c, int complete)
{
	struct conn_gw *g = c->gw;
	struct audit_record r;
	struct audit_call call;
	struct usage_result u;
	struct gateway_count n;
	struct timeval now;
	const char *model;
	char where[RULES_WHERE_MAX];

	if (g == NULL || !g->open)
		return;
	g->open = 0;
	gettimeofday(&now, NULL);
	memset(&u, 0, sizeof(u));
	usage_end(&g->resp, complete, &u);
	if (g->upgraded) {
		/* A 101 has no body: what follows is the relay's, not read. */
		memset(&u, 0, sizeof(u));
		u.input = u.output = u.cache_read = u.cache_write =
		    u.reasoning = -1;
	}
	model = usage_req_model(&g->req);

	memset(&call, 0, sizeof(call));
	call.provider = g->provider;
	call.method = g->method;
	call.path = g->path;
	call.model = model != NULL && model[0] != '\0' ? model : NULL;
	call.model_response = u.model[0] != '\0' ? u.model : NULL;
	call.request_id = g->request_id[0] != '\0' ? g->request_id : NULL;
	call.ttfb_us = g->have_first ? gw_us_since(&g->started, &g->first) : -1;
	call.latency_us = gw_us_since(&g->started, &now);
	call.stream = g->status > 0 ? g->sse : usage_req_stream(&g->req);
	call.input_tokens = u.input;
	call.output_tokens = u.output;
	call.cache_read_tokens = u.cache_read;
	call.cache_write_tokens = u.cache_write;
	call.reasoning_tokens = u.reasoning;
	call.usage = u.state == USAGE_FINAL ? "final" :
	    u.state == USAGE_PARTIAL ? "partial" : "none";
	call.stop = u.stop[0] != '\0' ? u.stop : NULL;
	call.error = u.error[0] != '\0' ? u.error : NULL;
	call.key = g->key[0] != '\0' ? g->key : NULL;
	call.broker = g->key_mode;
	call.malformed = g->api != USAGE_API_NONE && u.malformed;

	memset(&r, 0, sizeof(r));
	r.event = "call";
	r.id = c->id;
	r.run = c->req.run[0] != '\0' ? c->req.run : NULL;
	r.client = c->client_text;
	r.proto = "gateway";
	r.host = c->req.host.len > 0 ? c->req.host.text : NULL;
	r.port = c->req.host.len > 0 ? c->req.port : -1;
	r.addr = c->req.addr_text[0] != '\0' ? c->req.addr_text : NULL;
	r.decision = c->req.d.verdict == RULES_ALLOW ? "allow" : "deny";
	/*
	 * Cut short: by the proxy's own refusal or failure (tls-failed,
	 * connect-failed, ...), which answered the client, or by either side
	 * going away mid-way.
	 */
	r.reason = complete ? "allowed" : c->req.reason != CONN_REASON_ALLOWED ?
	    conn_reason_str(c->req.reason) : "cut-short";
	r.status = g->status > 0 ? g->status : c->req.status > 0 ?
	    c->req.status : -1;
	r.rule = c->req.d.entry != NULL ? rules_entry_where(c->req.d.entry,
	    where, sizeof(where)) : NULL;
	r.bytes_up = r.bytes_down = r.duration_ms = -1;
	r.call = &call;
	if (audit_write(c->p->audit, &r) != 0)
		error("%llu: cannot write the audit log",
		    (unsigned long long)c->id);

	memset(&n, 0, sizeof(n));
	n.error = !complete || g->status >= 400 || g->status <= 0;
	n.malformed = call.malformed;
	n.tokens[GATEWAY_TOKEN_INPUT] = u.input;
	n.tokens[GATEWAY_TOKEN_OUTPUT] = u.output;
	n.tokens[GATEWAY_TOKEN_CACHE_READ] = u.cache_read;
	n.tokens[GATEWAY_TOKEN_CACHE_WRITE] = u.cache_write;
	n.tokens[GATEWAY_TOKEN_REASONING] = u.reasoning;
	gateway_count(c->p->gateway, g->provider, &n);
}

/* --- hooks of way-forward.c's exchange -------------------------------------- */

void
conn_gw_first_byte(struct conn *c)
{
	if (c->gw != NULL && c->gw->open && !c->gw->have_first) {
		gettimeofday(&c->gw->first, NULL);
		c->gw->have_first = 1;
	}
}

/* Copies a header's value (at most len - 1 bytes, no control bytes). */
static void
gw_header_copy(const struct http_head *h, const char *name, char *buf,
    size_t len)
{
	const struct http_header *hd = http_header_find(h, name);
	size_t i, n = 0;

	if (hd != NULL)
		for (i = 0; i < hd->value_len && n + 1 < len; i++)
			if ((unsigned char)hd->value[i] >= 0x20 &&
			    hd->value[i] != 0x7f)
				buf[n++] = hd->value[i];
	buf[n] = '\0';
}

void
conn_gw_response(struct conn *c, const struct http_head *h)
{
	struct conn_gw *g = c->gw;
	const struct http_header *ct;

	if (g == NULL || !g->open)
		return;
	g->status = h->status;
	gw_header_copy(h, "request-id", g->request_id, sizeof(g->request_id));
	if (g->request_id[0] == '\0')
		gw_header_copy(h, "x-request-id", g->request_id,
		    sizeof(g->request_id));
	ct = http_header_find(h, "content-type");
	g->sse = ct != NULL && ct->value_len >= 17 &&
	    strncasecmp(ct->value, "text/event-stream", 17) == 0;
	usage_begin(&g->resp, g->api, g->sse);
	if (c->resp_framing != NULL)
		http_framing_tap(c->resp_framing, gw_resp_tap, c);
}

void
conn_gw_done(struct conn *c)
{
	gw_call_end(c, 1);
}

void
conn_gw_free(struct conn *c)
{
	if (c->gw == NULL)
		return;
	gw_call_end(c, 0);
	free(c->gw);
	c->gw = NULL;
}

/* --- the request ----------------------------------------------------------- */

static void
gw_request(struct conn *c, const struct http_head *h, size_t avail)
{
	const struct rules_provider *pv;
	struct gw_target t;
	struct gw_skip sk;
	struct run *named = NULL;
	char detail[512], served[256], key[GATEWAY_KEY_MAX + 1];
	char extra[RULES_HOST_TEXT_MAX + GATEWAY_KEY_MAX + 256];
	const char *why;
	size_t used;
	long keylen = -1;
	int err;

	(void)avail;
	conn_req_begin(c, &conn_way_gateway, "gateway");
	METRIC_ADD(c->p, requests_http, 1);
	if (gw_target_split(h->target, h->target_len, &t) != 0) {
		conn_fail(c, 404, CONN_REASON_UNKNOWN_PROVIDER, "the gateway's "
		    "paths are /providers/NAME/... (or /r/RUN:TOKEN/providers/"
		    "NAME/... as `intutic exec` writes them)");
		return;
	}
	pv = rules_provider_find(c->rules, t.name, t.namelen);
	if (pv == NULL || pv->gateway == RULES_GATEWAY_OFF || pv->api == NULL) {
		gw_served(c->rules, served, sizeof(served));
		snprintf(detail, sizeof(detail), "no provider '%.*s' at this "
		    "gateway; it serves: %s", (int)(t.namelen < 64 ? t.namelen :
		    64), t.name, served);
		conn_fail(c, 404, CONN_REASON_UNKNOWN_PROVIDER, detail);
		return;
	}
	if (t.id != NULL && (named = runs_check(c->p->runs, t.id, t.idlen,
	    t.token, t.tokenlen)) == NULL) {
		conn_deny(c, 407, CONN_REASON_PROXY_AUTH, "the gateway URL's "
		    "run credentials name no run this proxy knows: start the "
		    "command with `intutic exec`, which registers its run and "
		    "writes the URL");
		return;
	}
	if (conn_identify_run(c, t.id != NULL, named) != 0)
		return;
	if ((err = rules_hostport_parse(pv->api, &c->req.host, &c->req.port,
	    pv->api_port)) != 0) {
		conn_fail(c, 502, CONN_REASON_INVALID_HOST, "the provider's "
		    "api host is not valid");
		return;
	}
	c->req.port = pv->api_port;
	if (conn_decide(c) != 0)
		return;
	sk.pv = pv;
	sk.broker = pv->gateway == RULES_GATEWAY_BROKER && pv->broker != NULL;
	if ((sk.broker && gw_broker_check(c, pv, h) != 0) ||
	    gw_leak(c, pv, h, sk.broker) != 0)
		return;

	if (c->gw == NULL && (c->gw = calloc(1, sizeof(*c->gw))) == NULL) {
		conn_close(c);
		return;
	}
	memset(c->gw, 0, sizeof(*c->gw));
	c->gw->open = 1;
	gettimeofday(&c->gw->started, NULL);
	snprintf(c->gw->provider, sizeof(c->gw->provider), "%s", pv->name);
	snprintf(c->gw->method, sizeof(c->gw->method), "%s", h->method);
	snprintf(c->gw->path, sizeof(c->gw->path), "%.*s",
	    (int)(t.pathlen > 0 ? t.pathlen : 1), t.pathlen > 0 ? t.rest : "/");
	c->gw->key_mode = sk.broker ? "broker" : "passthrough";
	c->gw->api = usage_api_of_path(t.rest, t.pathlen);
	usage_req_begin(&c->gw->req);
	usage_begin(&c->gw->resp, c->gw->api, 0);
	if (!sk.broker)
		gw_key_print(c, pv, h);

	c->req.body = http_framing_new(0,
	    (const char *)evbuffer_pullup(bufferevent_get_input(c->client),
	    (ssize_t)h->len), h->len, 0, &why);
	if (c->req.body == NULL) {
		conn_fail(c, 400, CONN_REASON_BAD_REQUEST, why);
		return;
	}
	http_framing_tap(c->req.body, gw_req_tap, c);
	c->req.body_done = http_framing_done(c->req.body);
	c->req.is_head = h->is_head;
	c->req.upgrade = h->upgrade;
	c->req.keep_alive = h->keep_alive;
	if ((c->fwd == NULL && (c->fwd = evbuffer_new()) == NULL) ||
	    (c->back == NULL && (c->back = evbuffer_new()) == NULL)) {
		conn_close(c);
		return;
	}
	if (sk.broker && (keylen = gateway_key(c->p->gateway, pv->name,
	    key)) < 0) {
		snprintf(detail, sizeof(detail), "the proxy holds no key for "
		    "%s, whose key the rules broker (--gateway-keys, "
		    "intutic-proxy(8) KEY BROKER)", pv->name);
		conn_fail(c, 503, CONN_REASON_KEY_MISMATCH, detail);
		return;
	}
	if (sk.broker)
		gateway_fingerprint(c->p->gateway, pv->name, key,
		    (size_t)keylen, c->gw->key);
	if (c->req.port == 443)
		used = (size_t)snprintf(extra, sizeof(extra), "Host: %s\r\n"
		    "Accept-Encoding: identity\r\n", c->req.host.text);
	else
		used = (size_t)snprintf(extra, sizeof(extra), "Host: %s:%u\r\n"
		    "Accept-Encoding: identity\r\n", c->req.host.text,
		    c->req.port);
	/* A brokered call: the real key, in the provider's header only. */
	if (sk.broker && used < sizeof(extra))
		(void)snprintf(extra + used, sizeof(extra) - used,
		    "%s: %s%s%s\r\n", pv->broker->header, pv->broker->scheme,
		    pv->broker->scheme[0] != '\0' ? " " : "", key);
	explicit_bzero(key, sizeof(key));
	http_forward_head_ex(h, t.restlen > 0 ? t.rest : "/",
	    t.restlen > 0 ? t.restlen : 1, h->upgrade, !h->keep_alive,
	    gw_skip_header, &sk, extra, c->fwd);
	explicit_bzero(extra, sizeof(extra));
	evbuffer_drain(bufferevent_get_input(c->client), h->len);

	if (c->up != NULL && c->up_ready && c->up_tls &&
	    c->up_port == c->req.port &&
	    strcmp(c->up_host, c->req.host.text) == 0) {
		/* The provider's connection of the last call: as decided. */
		snprintf(c->req.addr_text, sizeof(c->req.addr_text), "%s",
		    c->up_addr);
		conn_http_send(c);
		return;
	}
	/* A provider connection another client connection left. */
	if (gw_unpark(c)) {
		conn_http_send(c);
		return;
	}
	conn_up_drop(c);
	conn_reach(c);
}

/* --- idle provider connections, kept per worker ------------------------------ */

/*
 * A provider connection whose last call is done, kept for the next call
 * of the same run to the same provider, on any client connection of the
 * worker: the TLS handshake is not made again.  Only under the rules and
 * the run's policy it was decided and its address pinned with: a reload
 * or a change of the policy leaves it unused, to go when it times out.
 */
#define GW_IDLE_MAX	32	/* a worker's idle provider connections */
#define GW_IDLE_SECONDS	60	/* kept at most (providers close sooner) */

struct gw_idle {
	TAILQ_ENTRY(gw_idle)	 entry;
	struct worker		*w;
	struct bufferevent	*bev;
	char			 host[RULES_HOST_TEXT_MAX];
	uint16_t		 port;
	char			 addr_text[CONN_ADDR_TEXT_MAX];
	char			 run[RUN_ID_MAX];
	unsigned long long	 rules_gen;
	unsigned long long	 policy_gen;
	time_t			 since;
};

static void
gw_idle_free(struct gw_idle *e)
{
	TAILQ_REMOVE(&e->w->gw_idle, e, entry);
	e->w->ngw_idle--;
	if (e->bev != NULL)
		bufferevent_free(e->bev);
	free(e);
}

/* Bytes nobody asked for, the provider's close, an error: it goes. */
static void
gw_idle_read_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	gw_idle_free(arg);
}

static void
gw_idle_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	gw_idle_free(arg);
}

void
gw_idle_drop_all(struct worker *w)
{
	struct gw_idle *e;

	while ((e = TAILQ_FIRST(&w->gw_idle)) != NULL)
		gw_idle_free(e);
}

/* Those kept too long go. */
static void
gw_idle_expire(struct worker *w, time_t now)
{
	struct gw_idle *e;

	while ((e = TAILQ_FIRST(&w->gw_idle)) != NULL &&
	    (now - e->since >= GW_IDLE_SECONDS || now < e->since))
		gw_idle_free(e);
}

/* The generation of c's rules when they are the proxy's now; else 0. */
static unsigned long long
gw_rules_gen(struct conn *c)
{
	unsigned long long gen = 0;

	pthread_mutex_lock(&c->p->rules_lock);
	if (c->p->rules == c->rules)
		gen = c->p->rules_gen;
	pthread_mutex_unlock(&c->p->rules_lock);
	return gen;
}

void
conn_gw_park(struct conn *c)
{
	struct worker *w = c->w;
	struct gw_idle *e;
	unsigned long long gen;
	time_t now = time(NULL);

	if (c->up == NULL || !c->up_tls || !c->up_ready || !c->up_keep_alive ||
	    evbuffer_get_length(bufferevent_get_input(c->up)) > 0 ||
	    evbuffer_get_length(bufferevent_get_output(c->up)) > 0 ||
	    __atomic_load_n(&c->p->stopping, __ATOMIC_RELAXED) != 0 ||
	    (gen = gw_rules_gen(c)) == 0 ||
	    (e = calloc(1, sizeof(*e))) == NULL)
		return;
	gw_idle_expire(w, now);
	if (w->ngw_idle >= GW_IDLE_MAX)
		gw_idle_free(TAILQ_FIRST(&w->gw_idle));
	e->w = w;
	e->bev = c->up;
	snprintf(e->host, sizeof(e->host), "%s", c->up_host);
	e->port = c->up_port;
	snprintf(e->addr_text, sizeof(e->addr_text), "%s", c->up_addr);
	snprintf(e->run, sizeof(e->run), "%s", c->req.run);
	e->rules_gen = gen;
	e->policy_gen = c->policy_gen;
	e->since = now;
	TAILQ_INSERT_TAIL(&w->gw_idle, e, entry);
	w->ngw_idle++;
	bufferevent_setcb(e->bev, gw_idle_read_cb, NULL, gw_idle_event_cb, e);
	bufferevent_enable(e->bev, EV_READ);
	c->up = NULL;
	conn_up_drop(c);
}

/*
 * A kept connection to c's provider (c->req.host, port) for c's run under
 * what c was decided with: taken as c->up (1), or none (0).
 */
static int
gw_unpark(struct conn *c)
{
	struct worker *w = c->w;
	struct gw_idle *e;
	unsigned long long gen;

	gw_idle_expire(w, time(NULL));
	if (TAILQ_EMPTY(&w->gw_idle) || (gen = gw_rules_gen(c)) == 0)
		return 0;
	TAILQ_FOREACH_REVERSE(e, &w->gw_idle, gw_idle_list, entry)
		if (e->port == c->req.port && e->rules_gen == gen &&
		    e->policy_gen == c->policy_gen &&
		    strcmp(e->host, c->req.host.text) == 0 &&
		    strcmp(e->run, c->req.run) == 0)
			break;
	if (e == NULL)
		return 0;
	conn_up_drop(c);
	c->up = e->bev;
	e->bev = NULL;
	snprintf(c->req.addr_text, sizeof(c->req.addr_text), "%s",
	    e->addr_text);
	gw_idle_free(e);
	conn_bev_init(c, c->up);
	c->up_tls = 1;
	c->up_ready = 1;
	return 1;
}

/* --- TLS to the provider --------------------------------------------------- */

/* TCP is up: the handshake, then the exchange. */
static void
gw_dialled(struct conn *c)
{
	struct bufferevent *tls;

	/* The TLS bufferevent takes the socket's over. */
	tls = tls_client_bev(c->p->tls, c->w->base, c->up, c->req.host.text);
	if (tls == NULL) {
		conn_close(c);
		return;
	}
	c->up = tls;
	conn_bev_init(c, c->up);
	c->up_tls = 1;
	conn_set_state(c, CONN_GW_TLS);
}

static void
gw_tls_event(struct conn *c, short what)
{
	char why[256], detail[RULES_HOST_TEXT_MAX + CONN_ADDR_TEXT_MAX + 384];

	if (what & BEV_EVENT_CONNECTED) {
		conn_http_send(c);
		return;
	}
	tls_client_failure(c->up, why, sizeof(why));
	snprintf(detail, sizeof(detail), "TLS with %s (%s) failed: %s; "
	    "nothing was sent", c->req.host.text, c->req.addr_text, why);
	conn_fail(c, 502, CONN_REASON_TLS_FAILED, detail);
}

static void
gw_tls_timeout(struct conn *c)
{
	char detail[CONN_ADDR_TEXT_MAX + 128];

	snprintf(detail, sizeof(detail), "the TLS handshake with %s did not "
	    "end within %d ms", c->req.addr_text, c->p->cfg.connect_ms);
	conn_fail(c, 504, CONN_REASON_CONNECT_TIMEOUT, detail);
}

const struct conn_state_def conn_state_gw_tls = {
	.name = "tls", .timeout = offsetof(struct proxy_config, connect_ms),
	.up_event = gw_tls_event,
	.on_timeout = gw_tls_timeout,
	.client_io = CONN_IO_STOP, .up_io = CONN_IO_READ, .wm = CONN_WM_KEEP,
};

/* --- after a 101: bytes both ways -------------------------------------------- */

/* Moves what `from` read to `to`; past the high-water mark, from stops. */
static void
gw_relay_move(struct conn *c, struct bufferevent *from, struct bufferevent *to,
    uint64_t *count)
{
	struct evbuffer *in = bufferevent_get_input(from);
	size_t n = evbuffer_get_length(in);

	*count += n;
	gettimeofday(&c->last_io, NULL);
	if (to == c->client) {
		if (evio_write_now(to, NULL, 0, in) != 0) {
			conn_close(c);
			return;
		}
	} else if (evbuffer_add_buffer(bufferevent_get_output(to), in) != 0) {
		conn_close(c);
		return;
	}
	if (evbuffer_get_length(bufferevent_get_output(to)) >= PROXY_HIGH_WATER)
		bufferevent_disable(from, EV_READ);
}

static void
gw_relay_client_read(struct conn *c)
{
	gw_relay_move(c, c->client, c->up, &c->bytes_up);
}

static void
gw_relay_up_read(struct conn *c)
{
	gw_relay_move(c, c->up, c->client, &c->bytes_down);
}

static void
gw_relay_client_drained(struct conn *c)
{
	bufferevent_enable(c->up, EV_READ);
}

static void
gw_relay_up_drained(struct conn *c)
{
	bufferevent_enable(c->client, EV_READ);
}

static void
gw_relay_event(struct conn *c, short what)
{
	(void)what;
	conn_close(c);
}

static void
gw_relay_timeout(struct conn *c)
{
	if (conn_idle_expired(c))
		conn_close(c);
}

const struct conn_state_def conn_state_gw_relay = {
	.name = "relay", .timeout = offsetof(struct proxy_config, idle_ms),
	.client_read = gw_relay_client_read,
	.client_write = gw_relay_client_drained,
	.up_read = gw_relay_up_read,
	.up_write = gw_relay_up_drained,
	.client_event = gw_relay_event,
	.up_event = gw_relay_event,
	.on_timeout = gw_relay_timeout,
	.client_io = CONN_IO_READ, .up_io = CONN_IO_READ, .wm = CONN_WM_FLOW,
	.bulk = 1,
};

/* A 101 from the provider: its record now, then bytes both ways. */
void
conn_gw_upgraded(struct conn *c)
{
	http_framing_free(c->req.body);
	c->req.body = NULL;
	if (c->gw != NULL) {
		c->gw->upgraded = 1;
		gw_call_end(c, 1);
	}
	conn_set_state(c, CONN_GW_RELAY);
	/* What came with the 101, and what the client sent past its head. */
	if (evbuffer_get_length(bufferevent_get_input(c->up)) > 0)
		gw_relay_up_read(c);
	if (!c->closing && evbuffer_get_length(
	    bufferevent_get_input(c->client)) > 0)
		gw_relay_client_read(c);
}

const struct conn_way conn_way_gateway = {
	.name = "gateway",
	.listeners = CONN_LISTEN_DATA | CONN_LISTEN_GATEWAY,
	.claims = gw_claims,
	.request = gw_request,
	.dialled = gw_dialled,
};
