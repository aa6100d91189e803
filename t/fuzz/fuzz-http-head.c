/*
 * fuzz-http-head.c — a client's bytes through the proxy's request path,
 * the calls proxy/conn.c makes, in its order (conn_read_head() and what it
 * hands the head to):
 *
 *   http_head_end, http_head_parse with the default limits, then
 *   - CONNECT: the target as "host:port" through rules_hostport_parse(),
 *     and the bytes after the head as the tunnel's first bytes (the
 *     peek: tls_hello_parse, http_looks_like_request, a second head and
 *     its Host against the CONNECT host);
 *   - origin-form (the proxy's own API): framing of its body;
 *   - absolute-form: http_target_split, rules_hostport_parse of the
 *     authority, the Host header against it, http_framing_new on the head,
 *     http_forward_head, and http_framing_move over the rest of the input;
 *     what is left after the body is the next request (keep-alive), up to
 *     FUZZ_REQUESTS_MAX of them.
 *
 * Checked: results and pointers stay within the input; a forwarded head
 * is one the proxy's own parser accepts, for the same method and with the
 * same framing (Content-Length, chunked) and a Host; framing never uses
 * more bytes than it was given.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "http.h"
#include "proxy.h"
#include "rules.h"
#include "tls-hello.h"
#include "fuzz.h"

#define FUZZ_REQUESTS_MAX	8	/* requests on one connection */

/* Whether p[0..n) lies within buf[0..len). */
static int
within(const char *buf, size_t len, const char *p, size_t n)
{
	return p >= buf && n <= len && (size_t)(p - buf) <= len - n;
}

static void
check_head(const char *buf, size_t len, const struct http_head *h)
{
	size_t i;

	FUZZ_ASSERT(h->len == len);
	FUZZ_ASSERT(h->nheaders <= PROXY_HEADERS_MAX);
	FUZZ_ASSERT(h->http_major == 1);
	FUZZ_ASSERT(memchr(h->method, '\0', sizeof(h->method)) != NULL);
	FUZZ_ASSERT(h->method[0] != '\0');
	FUZZ_ASSERT(h->target != NULL &&
	    within(buf, len, h->target, h->target_len));
	FUZZ_ASSERT(h->target_len <= PROXY_URI_MAX);
	for (i = 0; i < h->nheaders; i++) {
		FUZZ_ASSERT(within(buf, len, h->headers[i].name,
		    h->headers[i].name_len));
		FUZZ_ASSERT(within(buf, len, h->headers[i].value,
		    h->headers[i].value_len));
	}
	FUZZ_ASSERT(!(h->chunked && h->content_length >= 0));
}

/* Parses a head at the start of buf; returns its length, or 0. */
static size_t
parse_head(const char *buf, size_t len, struct http_head *h)
{
	const char *why;
	size_t end;
	int status;

	if (len > PROXY_HEAD_MAX)
		len = PROXY_HEAD_MAX;
	if ((end = http_head_end(buf, len)) == 0)
		return 0;
	FUZZ_ASSERT(end >= 4 && end <= len);
	FUZZ_ASSERT(memcmp(buf + end - 4, "\r\n\r\n", 4) == 0);
	why = NULL;
	status = 0;
	if (http_head_parse(buf, end, PROXY_HEADERS_MAX, PROXY_URI_MAX, h,
	    &status, &why) != HTTP_OK) {
		FUZZ_ASSERT(why != NULL);
		FUZZ_ASSERT(status == 400 || status == 414 || status == 431);
		return 0;
	}
	check_head(buf, end, h);
	return end;
}

/* The bytes a client sends into a tunnel, as conn_peek() reads them. */
static void
peek(const char *buf, size_t len, const struct rules_host *host,
    uint16_t port, struct http_head *h)
{
	struct tls_hello hello;
	struct rules_host sni;
	size_t want = len < TLS_HELLO_MAX ? len : TLS_HELLO_MAX;

	if (want == 0)
		return;
	switch (tls_hello_parse((const uint8_t *)buf, want, &hello, NULL)) {
	case TLS_HELLO_OK:
		if (hello.has_sni && rules_host_parse(hello.sni,
		    hello.sni_len, &sni) == RULES_OK)
			(void)strcmp(sni.text, host->text);
		return;
	case TLS_HELLO_NOT_TLS:
		break;
	default:
		return;
	}
	if (http_looks_like_request(buf, want) && parse_head(buf, want, h) > 0)
		(void)http_host_matches(h, host, port);
}

/*
 * The forwarded head must be one this parser takes, saying the same of
 * the request.
 */
static void
check_forwarded(struct evbuffer *out, const struct http_head *h)
{
	struct http_head *f;
	const char *fwd, *why;
	size_t len;
	int status;

	len = evbuffer_get_length(out);
	FUZZ_ASSERT((fwd = (const char *)evbuffer_pullup(out, -1)) != NULL);
	FUZZ_ASSERT(http_head_end(fwd, len) == len);
	if ((f = malloc(sizeof(*f))) == NULL)
		abort();
	if (http_head_parse(fwd, len, HTTP_HEADERS_LIMIT, PROXY_URI_MAX, f,
	    &status, &why) != HTTP_OK) {
		fprintf(stderr, "forwarded head refused: %s\n%.*s\n", why,
		    (int)len, fwd);
		FUZZ_ASSERT(!"the forwarded head parses");
	}
	FUZZ_ASSERT(strcmp(f->method, h->method) == 0);
	FUZZ_ASSERT(f->chunked == h->chunked);
	FUZZ_ASSERT(f->content_length == h->content_length);
	FUZZ_ASSERT(http_header_find(f, "host") != NULL);
	free(f);
}

/*
 * Frames the body after a head as conn_http_move() does; returns the
 * bytes of buf it took, or len + 1 when the connection ends there.
 */
static size_t
frame_body(const char *head, size_t headlen, const char *buf, size_t len)
{
	struct http_framing *f;
	struct evbuffer *in, *out;
	const char *why = NULL;
	uint64_t used = 0;
	int done = 0, r;

	if ((f = http_framing_new(0, head, headlen, 0, &why)) == NULL) {
		FUZZ_ASSERT(why != NULL);
		return len + 1;
	}
	if (http_framing_done(f)) {
		http_framing_free(f);
		return 0;
	}
	in = evbuffer_new();
	out = evbuffer_new();
	FUZZ_ASSERT(in != NULL && out != NULL);
	FUZZ_ASSERT(evbuffer_add(in, buf, len) == 0);
	r = http_framing_move(f, in, out, &used, &done, &why);
	evbuffer_free(in);
	evbuffer_free(out);
	if (r != 0) {
		FUZZ_ASSERT(why != NULL);
		http_framing_free(f);
		return len + 1;
	}
	FUZZ_ASSERT(used <= len);
	FUZZ_ASSERT(done == http_framing_done(f));
	if (!done) {
		/* The rest of the body, or of a chunk line, is still to come. */
		(void)http_framing_until_eof(f);
		used = len + 1;
	}
	http_framing_free(f);
	return (size_t)used;
}

/* One absolute-form request, as conn_http_request() takes it. */
static int
absolute_form(const struct http_head *h, struct evbuffer *out)
{
	const char *auth, *path, *why;
	size_t authlen, pathlen;
	char target[RULES_HOST_TEXT_MAX + 16];
	struct rules_host host;
	uint16_t port;
	int has_host;

	if (http_target_split(h->target, h->target_len, &auth, &authlen, &path,
	    &pathlen, &why) != 0) {
		FUZZ_ASSERT(why != NULL);
		return -1;
	}
	FUZZ_ASSERT(within(h->target, h->target_len, auth, authlen));
	FUZZ_ASSERT(authlen > 0 && pathlen > 0);
	FUZZ_ASSERT(path[0] == '/' || path[0] == '?');
	if (authlen >= sizeof(target))
		return -1;
	memcpy(target, auth, authlen);
	target[authlen] = '\0';
	if (rules_hostport_parse(target, &host, &port, 80) != RULES_OK)
		return -1;
	has_host = http_header_find(h, "host") != NULL;
	if (has_host ? !http_host_matches(h, &host, port) :
	    h->http_minor >= 1)
		return -1;
	if (!has_host)
		snprintf(target, sizeof(target), "%s:%u", host.text, port);
	evbuffer_drain(out, evbuffer_get_length(out));
	http_forward_head(h, path, pathlen, h->upgrade, !h->keep_alive,
	    has_host ? NULL : target, out);
	check_forwarded(out, h);
	return 0;
}

/* A CONNECT, as conn_connect_request() takes it. */
static int
connect_form(const struct http_head *h, struct rules_host *host,
    uint16_t *port)
{
	char target[RULES_HOST_TEXT_MAX + 16];
	const char *colon;

	if (h->target_len >= sizeof(target))
		return -1;
	memcpy(target, h->target, h->target_len);
	target[h->target_len] = '\0';
	colon = strrchr(target, ':');
	if (colon == NULL || (target[0] == '[' && colon < strchr(target, ']')))
		return -1;
	if (rules_hostport_parse(target, host, port, 0) != RULES_OK)
		return -1;
	FUZZ_ASSERT(*port != 0);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct http_head *h, *peeked;
	struct evbuffer *out;
	struct rules_host host;
	uint16_t port;
	size_t off = 0, end, used;
	int i;

	(void)http_looks_like_request(buf, size);
	if ((h = malloc(sizeof(*h))) == NULL ||
	    (peeked = malloc(sizeof(*peeked))) == NULL ||
	    (out = evbuffer_new()) == NULL)
		abort();
	for (i = 0; i < FUZZ_REQUESTS_MAX && off < size; i++) {
		if ((end = parse_head(buf + off, size - off, h)) == 0)
			break;
		if (h->is_connect) {
			if (connect_form(h, &host, &port) == 0)
				peek(buf + off + end, size - off - end, &host,
				    port, peeked);
			break;
		}
		if (!(h->target_len > 0 && h->target[0] == '/') &&
		    absolute_form(h, out) != 0)
			break;
		used = frame_body(buf + off, end, buf + off + end,
		    size - off - end);
		/* Only a kept-alive, not upgraded connection reads on. */
		if (used > size - off - end || !h->keep_alive || h->upgrade)
			break;
		off += end + used;
	}
	evbuffer_free(out);
	free(peeked);
	free(h);
	return 0;
}
