/*
 * http-text.c — the HTTP the proxy reads and writes without a parser (see
 * http.h): a head forwarded in origin-form with hop-by-hop and Proxy-*
 * headers taken out, a request-target split into authority and path, the
 * first bytes that look like a request, and the proxy's own answers.
 * llhttp stays in http.c.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "http.h"
#include "rules.h"

/* Whether `name` is one of the comma-separated tokens of a header value. */
static int
token_listed(const struct http_header *list, const struct http_header *hd)
{
	const char *v = list->value, *end = list->value + list->value_len, *t;
	size_t n;

	while (v < end) {
		while (v < end && (*v == ' ' || *v == '\t' || *v == ','))
			v++;
		for (t = v; v < end && *v != ',' && *v != ' ' && *v != '\t'; v++)
			;
		n = (size_t)(v - t);
		if (n > 0 && n == hd->name_len &&
		    strncasecmp(t, hd->name, n) == 0)
			return 1;
	}
	return 0;
}

static int
hop_by_hop(const struct http_head *h, const struct http_header *hd,
    int upgrade)
{
	static const char *const hop[] = {
		"connection", "keep-alive", "te", "trailer", "upgrade",
	};
	/*
	 * What the framing and the routing of the forwarded message rest on
	 * stays, whatever Connection names: without it the body forwarded as
	 * received would end elsewhere for the next hop (request smuggling),
	 * or the request would lose the host it was decided for.
	 */
	static const char *const keep[] = {
		"content-length", "transfer-encoding", "host",
	};
	size_t i;

	for (i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (http_header_is(hd, hop[i]))
			return !(upgrade && i == 4);
	if (hd->name_len >= 6 && strncasecmp(hd->name, "proxy-", 6) == 0)
		return 1;
	for (i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (http_header_is(hd, keep[i]))
			return 0;
	for (i = 0; i < h->nheaders; i++)
		if (http_header_is(&h->headers[i], "connection") &&
		    token_listed(&h->headers[i], hd) &&
		    !(upgrade && http_header_is(hd, "upgrade")))
			return 1;
	return 0;
}

void
http_forward_head(const struct http_head *h, const char *path,
    size_t pathlen, int upgrade, int close, const char *add_host,
    struct evbuffer *out)
{
	char line[512];

	if (add_host != NULL)
		(void)snprintf(line, sizeof(line), "Host: %s\r\n", add_host);
	http_forward_head_ex(h, path, pathlen, upgrade, close, NULL, NULL,
	    add_host != NULL ? line : NULL, out);
}

void
http_forward_head_ex(const struct http_head *h, const char *path,
    size_t pathlen, int upgrade, int close,
    int (*skip)(void *, const struct http_header *), void *arg,
    const char *extra, struct evbuffer *out)
{
	const struct http_header *hd;
	size_t i;

	if (h->response)
		/* We speak HTTP/1.1 to the client, whatever the origin spoke. */
		evbuffer_add_printf(out, "HTTP/1.1 %d %.*s\r\n", h->status,
		    (int)h->reason_len, h->reason != NULL ? h->reason : "");
	else
		/*
		 * The client's version: a 1.0 client gets no chunked answer.
		 * "http://h?q" splits into the path "?q", which origin-form
		 * writes "/?q".
		 */
		evbuffer_add_printf(out, "%s %s%.*s HTTP/1.%d\r\n", h->method,
		    pathlen > 0 && path[0] == '?' ? "/" : "", (int)pathlen, path,
		    h->http_minor >= 1 ? 1 : 0);
	for (i = 0; i < h->nheaders; i++) {
		hd = &h->headers[i];
		if (hop_by_hop(h, hd, upgrade) ||
		    (skip != NULL && skip(arg, hd)))
			continue;
		evbuffer_add(out, hd->name, hd->name_len);
		evbuffer_add(out, ": ", 2);
		evbuffer_add(out, hd->value, hd->value_len);
		evbuffer_add(out, "\r\n", 2);
	}
	if (extra != NULL)
		evbuffer_add(out, extra, strlen(extra));
	evbuffer_add_printf(out, "Connection: %s\r\n\r\n",
	    upgrade ? "upgrade" : close ? "close" : "keep-alive");
}

int
http_looks_like_request(const char *buf, size_t len)
{
	size_t i;

	/* A method token of capitals, then a space: "GET ", "OPTIONS ". */
	for (i = 0; i < len && i < HTTP_METHOD_MAX; i++) {
		if (buf[i] == ' ')
			return i > 0;
		if (buf[i] < 'A' || buf[i] > 'Z')
			return 0;
	}
	return 0;
}

int
http_target_split(const char *t, size_t len, const char **auth,
    size_t *authlen, const char **path, size_t *pathlen, const char **why)
{
	const char *a, *end = t + len, *slash;

	/* ws:// is a WebSocket's name for http:// (RFC 6455 §3). */
	if (len >= 7 && strncasecmp(t, "http://", 7) == 0)
		a = t + 7;
	else if (len >= 5 && strncasecmp(t, "ws://", 5) == 0)
		a = t + 5;
	else {
		*why = (len >= 8 && strncasecmp(t, "https://", 8) == 0) ||
		    (len >= 6 && strncasecmp(t, "wss://", 6) == 0) ?
		    "https:// or wss:// in a request: use CONNECT for TLS" :
		    "not an absolute http:// URI";
		return -1;
	}
	for (slash = a; slash < end && *slash != '/' && *slash != '?'; slash++)
		if (*slash == '@') {
			*why = "credentials in the URI are not allowed";
			return -1;
		}
	if (slash == a) {
		*why = "empty host in the URI";
		return -1;
	}
	if (memchr(t, '#', len) != NULL) {
		*why = "fragment in the request-target";
		return -1;
	}
	*auth = a;
	*authlen = (size_t)(slash - a);
	if (slash == end) {
		*path = "/";
		*pathlen = 1;
	} else {
		/* "http://h?q" gives "?q": http_forward_head() adds the '/'. */
		*path = slash;
		*pathlen = (size_t)(end - slash);
	}
	return 0;
}

const char *
http_status_text(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 101: return "Switching Protocols";
	case 200: return "OK";
	case 201: return "Created";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 407: return "Proxy Authentication Required";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Error";
	}
}

void
http_answer(struct evbuffer *out, int status, const char *reason,
    const char *body)
{
	size_t blen = body != NULL ? strlen(body) : 0;

	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\n", status,
	    http_status_text(status));
	if (reason != NULL)
		evbuffer_add_printf(out, "X-Intutic-Error: %s\r\n", reason);
	if (status == 407)
		evbuffer_add_printf(out,
		    "Proxy-Authenticate: Basic realm=\"intutic\"\r\n");
	evbuffer_add_printf(out, "Content-Type: text/plain; charset=utf-8\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n", blen);
	if (blen > 0)
		evbuffer_add(out, body, blen);
}

