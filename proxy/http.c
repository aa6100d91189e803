/*
 * http.c — HTTP/1.1 heads and framing with llhttp (see http.h).  The only
 * file that uses llhttp, and always a strict one: configure takes a system
 * libllhttp only when a test program sees it refuse a chunk not followed by
 * CRLF, and builds llhttp's sources with LLHTTP_STRICT_MODE=1 (and tests
 * them the same way); http_parser_strict() asks the library linked in.  No
 * lenient flag is ever set.  So CL+TE, duplicate Content-Length, a
 * Transfer-Encoding that does not end in chunked, bad chunk sizes and
 * extensions, and anything but CRLF after a chunk's data are llhttp's
 * errors; what strict llhttp still takes -- obs-fold, bare LF and bare CR in
 * a head or a trailer section, Transfer-Encoding in an HTTP/1.0 request --
 * is refused here.  Chunked bodies are re-framed by http_framing_move(), so
 * what is forwarded is what was parsed.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include <llhttp.h>

#include "http.h"
#include "rules.h"

/* ------------------------------------------------------------- heads */

struct head_ctx {
	struct http_head	*h;
	size_t			 headers_max;
	size_t			 uri_max;
	int			 status;	/* of our error answer */
	const char		*why;
	int			 in_value;
};

static int
on_url(llhttp_t *p, const char *at, size_t len)
{
	struct head_ctx *x = p->data;

	if (len > x->uri_max) {
		x->status = 414;
		x->why = "request-target too long";
		return -1;
	}
	x->h->target = at;
	x->h->target_len = len;
	return 0;
}

static int
on_status(llhttp_t *p, const char *at, size_t len)
{
	struct head_ctx *x = p->data;

	x->h->reason = at;
	x->h->reason_len = len;
	return 0;
}

static int
on_header_field(llhttp_t *p, const char *at, size_t len)
{
	struct head_ctx *x = p->data;
	struct http_head *h = x->h;

	if (h->nheaders >= x->headers_max || h->nheaders >= HTTP_HEADERS_LIMIT) {
		x->status = 431;
		x->why = "too many header fields";
		return -1;
	}
	h->headers[h->nheaders].name = at;
	h->headers[h->nheaders].name_len = len;
	h->headers[h->nheaders].value = at + len;
	h->headers[h->nheaders].value_len = 0;
	h->nheaders++;
	return 0;
}

static int
on_header_value(llhttp_t *p, const char *at, size_t len)
{
	struct head_ctx *x = p->data;
	struct http_head *h = x->h;

	if (h->nheaders == 0)
		return -1;
	h->headers[h->nheaders - 1].value = at;
	h->headers[h->nheaders - 1].value_len = len;
	return 0;
}

static int
on_headers_complete(llhttp_t *p)
{
	struct head_ctx *x = p->data;
	struct http_head *h = x->h;

	h->http_major = p->http_major;
	h->http_minor = p->http_minor;
	h->keep_alive = llhttp_should_keep_alive(p);
	h->upgrade = p->upgrade;
	h->chunked = (p->flags & F_CHUNKED) != 0;
	h->content_length = (p->flags & F_CONTENT_LENGTH) ?
	    (int64_t)p->content_length : -1;
	h->status = p->status_code;
	h->te_not_chunked = (p->flags & F_TRANSFER_ENCODING) != 0 &&
	    (p->flags & F_CHUNKED) == 0;
	/* Stop here: the body, if any, is the caller's to frame. */
	return HPE_PAUSED;
}

static void
settings_init(llhttp_settings_t *s)
{
	llhttp_settings_init(s);
	s->on_url = on_url;
	s->on_status = on_status;
	s->on_header_field = on_header_field;
	s->on_header_value = on_header_value;
	s->on_headers_complete = on_headers_complete;
}

size_t
http_head_end(const char *buf, size_t len)
{
	size_t i;

	for (i = 3; i < len; i++)
		if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' &&
		    buf[i - 3] == '\r')
			return i + 1;
	return 0;
}

int
http_header_is(const struct http_header *hd, const char *name)
{
	return hd->name_len == strlen(name) &&
	    strncasecmp(hd->name, name, hd->name_len) == 0;
}

const struct http_header *
http_header_find(const struct http_head *h, const char *name)
{
	size_t i;

	for (i = 0; i < h->nheaders; i++)
		if (http_header_is(&h->headers[i], name))
			return &h->headers[i];
	return NULL;
}

int
http_host_matches(const struct http_head *h, const struct rules_host *want,
    uint16_t port)
{
	const struct http_header *hd = NULL;
	struct rules_host host;
	char value[RULES_HOST_TEXT_MAX + 8];
	uint16_t got;
	size_t i;

	for (i = 0; i < h->nheaders; i++) {
		if (!http_header_is(&h->headers[i], "host"))
			continue;
		if (hd != NULL)
			return 0;	/* two Host headers */
		hd = &h->headers[i];
	}
	if (hd == NULL || hd->value_len == 0 || hd->value_len >= sizeof(value))
		return 0;
	memcpy(value, hd->value, hd->value_len);
	value[hd->value_len] = '\0';
	if (rules_hostport_parse(value, &host, &got, port) != RULES_OK)
		return 0;
	return got == port && strcmp(host.text, want->text) == 0;
}

static enum http_result
head_parse(int response, const char *buf, size_t len, size_t headers_max,
    size_t uri_max, struct http_head *h, int *status, const char **why)
{
	llhttp_settings_t settings;
	llhttp_t parser;
	struct head_ctx x;
	const char *m;
	enum llhttp_errno err;
	size_t i;

	memset(h, 0, sizeof(*h));
	memset(&x, 0, sizeof(x));
	h->content_length = -1;
	h->response = response;
	/*
	 * obs-fold (a line that starts with white space continues the one
	 * before), a bare LF (a line end without its CR: "\r\n\n" ends a head
	 * for llhttp) and a bare CR: llhttp accepts some of them even when
	 * strict, so refuse them all here.
	 */
	for (i = 0; i < len; i++) {
		if (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r')) {
			*status = 400;
			*why = "bare LF in the head (lines end in CRLF)";
			return HTTP_ERROR;
		}
		if (buf[i] == '\r' && (i + 1 == len || buf[i + 1] != '\n')) {
			*status = 400;
			*why = "bare CR in the head";
			return HTTP_ERROR;
		}
		if (buf[i] == '\n' && i + 1 < len &&
		    (buf[i + 1] == ' ' || buf[i + 1] == '\t')) {
			*status = 400;
			*why = "obs-fold (a header line continued on the next)";
			return HTTP_ERROR;
		}
	}
	x.h = h;
	x.headers_max = headers_max;
	x.uri_max = uri_max;
	x.status = 400;
	settings_init(&settings);
	llhttp_init(&parser, response ? HTTP_RESPONSE : HTTP_REQUEST, &settings);
	parser.data = &x;

	err = llhttp_execute(&parser, buf, len);
	if (err != HPE_PAUSED && err != HPE_PAUSED_UPGRADE) {
		*status = x.status;
		*why = x.why != NULL ? x.why : llhttp_get_error_reason(&parser);
		if (*why == NULL || err == HPE_OK)
			*why = "incomplete request head";
		return HTTP_ERROR;
	}
	/* The whole head must have been consumed by the time headers end. */
	if ((size_t)(llhttp_get_error_pos(&parser) - buf) != len) {
		*status = 400;
		*why = "bytes after the end of the head";
		return HTTP_ERROR;
	}
	h->len = len;
	/* HTTP/1.0 and 1.1 only: no version-less (0.9) request line. */
	if (h->http_major != 1) {
		*status = 400;
		*why = h->http_major == 0 ? "no HTTP version in the request line" :
		    "only HTTP/1.0 and HTTP/1.1 are spoken";
		return HTTP_ERROR;
	}
	if (response)
		return HTTP_OK;
	/*
	 * RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty
	 * framing; an HTTP/1.0 origin may not know chunked at all and read
	 * the body as the next request.
	 */
	if (h->http_minor == 0 && http_header_find(h, "transfer-encoding") !=
	    NULL) {
		*status = 400;
		*why = "Transfer-Encoding in an HTTP/1.0 request";
		return HTTP_ERROR;
	}
	/*
	 * A Transfer-Encoding that llhttp did not count as one (an empty
	 * value) frames nothing for it, but an origin may take it for one:
	 * refused like any that does not end in chunked.
	 */
	if (!h->chunked && http_header_find(h, "transfer-encoding") != NULL)
		h->te_not_chunked = 1;
	/* RFC 9112 §6.3: llhttp says so only after the head. */
	if (h->te_not_chunked) {
		*status = 400;
		*why = "Transfer-Encoding of a request does not end in chunked";
		return HTTP_ERROR;
	}
	m = llhttp_method_name((llhttp_method_t)parser.method);
	snprintf(h->method, sizeof(h->method), "%s", m);
	h->is_connect = parser.method == HTTP_CONNECT;
	h->is_head = parser.method == HTTP_HEAD;
	if (h->target == NULL) {
		*status = 400;
		*why = "no request-target";
		return HTTP_ERROR;
	}
	return HTTP_OK;
}

enum http_result
http_head_parse(const char *buf, size_t len, size_t headers_max,
    size_t uri_max, struct http_head *h, int *status, const char **why)
{
	return head_parse(0, buf, len, headers_max, uri_max, h, status, why);
}

enum http_result
http_response_head_parse(const char *buf, size_t len, size_t headers_max,
    struct http_head *h, const char **why)
{
	int status;

	return head_parse(1, buf, len, headers_max, 0, h, &status, why);
}

/* ----------------------------------------------------------- framing */

/* What stopped the parser in one llhttp_execute() of http_framing_move(). */
enum framing_event {
	FRAMING_NONE = 0,
	FRAMING_CHUNK_HEADER,	/* a chunk-size line ended */
	FRAMING_CHUNK_DONE,	/* a chunk's data and its CRLF ended */
	FRAMING_MESSAGE_DONE,	/* the message ended */
};

struct http_framing {
	llhttp_t		 parser;
	llhttp_settings_t	 settings;
	int			 skip_body;
	int			 done;
	int			 chunked;	/* the body is chunked */
	int			 moving;	/* inside http_framing_move() */
	int			 failed;	/* http_framing_move() refused */
	/* What the last llhttp_execute() saw (http_framing_move() only). */
	enum framing_event	 event;
	uint64_t		 chunk_size;	/* of the chunk-size line */
	const char		*data;		/* the one span of body data */
	size_t			 data_len;
	const char		*why;		/* a callback's error */
	/* Across pieces. */
	int			 trailers;	/* past the last chunk */
	size_t			 framing_len;	/* framing bytes since an event */
	char			 prev;		/* trailer section: last byte */
	/* Sees the body's data as it is moved (http_framing_tap()). */
	void			(*tap)(void *, const char *, size_t);
	void			*tap_arg;
};

static int
framing_headers_complete(llhttp_t *p)
{
	struct http_framing *f = p->data;

	/* 1: the message has no body (HEAD answer, 1xx, 204, 304). */
	return f->skip_body ? 1 : 0;
}

static int
framing_body(llhttp_t *p, const char *at, size_t len)
{
	struct http_framing *f = p->data;

	if (!f->moving)
		return 0;
	/*
	 * Every event that can end a span of data pauses the parser, so one
	 * llhttp_execute() sees at most one span.
	 */
	if (f->data != NULL && f->data + f->data_len != at) {
		f->why = "two spans of body data in one piece (internal error)";
		return -1;
	}
	if (f->data == NULL)
		f->data = at;
	f->data_len += len;
	return 0;
}

static int
framing_chunk_header(llhttp_t *p)
{
	struct http_framing *f = p->data;

	if (!f->moving)
		return 0;
	f->chunk_size = p->content_length;
	f->event = FRAMING_CHUNK_HEADER;
	return HPE_PAUSED;
}

static int
framing_chunk_complete(llhttp_t *p)
{
	struct http_framing *f = p->data;

	/* The last chunk's "complete" comes with the end of the message. */
	if (!f->moving || f->trailers)
		return 0;
	f->event = FRAMING_CHUNK_DONE;
	return HPE_PAUSED;
}

static int
framing_message_complete(llhttp_t *p)
{
	struct http_framing *f = p->data;

	f->done = 1;
	f->event = FRAMING_MESSAGE_DONE;
	return HPE_PAUSED;
}

struct http_framing *
http_framing_new(int response, const char *head, size_t headlen,
    int request_was_head, const char **why)
{
	struct http_framing *f;
	enum llhttp_errno err;

	if ((f = calloc(1, sizeof(*f))) == NULL) {
		*why = "out of memory";
		return NULL;
	}
	llhttp_settings_init(&f->settings);
	f->settings.on_headers_complete = framing_headers_complete;
	f->settings.on_body = framing_body;
	f->settings.on_chunk_header = framing_chunk_header;
	f->settings.on_chunk_complete = framing_chunk_complete;
	f->settings.on_message_complete = framing_message_complete;
	llhttp_init(&f->parser, response ? HTTP_RESPONSE : HTTP_REQUEST,
	    &f->settings);
	f->parser.data = f;
	f->skip_body = response && request_was_head;
	err = llhttp_execute(&f->parser, head, headlen);
	if (err == HPE_PAUSED_UPGRADE) {
		/* CONNECT or Upgrade with no body: the message ends here. */
		f->done = 1;
		return f;
	}
	if (err != HPE_OK && err != HPE_PAUSED) {
		*why = llhttp_get_error_reason(&f->parser);
		if (*why == NULL)
			*why = "malformed head";
		free(f);
		return NULL;
	}
	if (err == HPE_PAUSED && !f->done)
		llhttp_resume(&f->parser);
	f->chunked = !f->done && (f->parser.flags & F_CHUNKED) != 0;
	return f;
}

void
http_framing_free(struct http_framing *f)
{
	free(f);
}

/*
 * The trailer section's bytes (after the last chunk's "0\r\n"), which
 * llhttp, even strict, takes with bare LFs and obs-fold: every line ends in
 * CRLF, no CR stands alone, no line starts with white space.
 */
static int
framing_trailer_check(struct http_framing *f, const char *buf, size_t len,
    const char **why)
{
	size_t i;
	char c;

	for (i = 0; i < len; i++) {
		c = buf[i];
		if (f->prev == '\r' && c != '\n') {
			*why = "bare CR in the trailer section";
			return -1;
		}
		if (c == '\n' && f->prev != '\r') {
			*why = "bare LF in the trailer section";
			return -1;
		}
		if (f->prev == '\n' && (c == ' ' || c == '\t')) {
			*why = "obs-fold in the trailer section";
			return -1;
		}
		f->prev = c;
	}
	return 0;
}

int
http_framing_move(struct http_framing *f, struct evbuffer *in,
    struct evbuffer *out, uint64_t *in_used, int *done, const char **why)
{
	struct evbuffer_iovec v;
	enum llhttp_errno err;
	const char *base;
	size_t pos, skip;
	int r = -1;

	*in_used = 0;
	*done = 0;
	if (f->failed) {
		*why = "the body was refused before";
		return -1;
	}
	f->moving = 1;
	while (!f->done && evbuffer_peek(in, -1, NULL, &v, 1) > 0) {
		base = v.iov_base;
		f->event = FRAMING_NONE;
		f->data = NULL;
		f->data_len = 0;
		f->why = NULL;
		err = llhttp_execute(&f->parser, base, v.iov_len);
		if (err == HPE_OK)
			pos = v.iov_len;
		else if (err == HPE_PAUSED || err == HPE_PAUSED_UPGRADE)
			pos = (size_t)(llhttp_get_error_pos(&f->parser) - base);
		else {
			*why = f->why != NULL ? f->why :
			    llhttp_get_error_reason(&f->parser);
			if (*why == NULL)
				*why = "malformed body";
			goto out;
		}
		if (pos > v.iov_len || f->data_len > pos ||
		    (f->data != NULL && (f->data < base ||
		    (size_t)(f->data - base) > pos - f->data_len))) {
			*why = "body data outside the piece parsed (internal error)";
			goto out;
		}
		/* Checked before anything is taken from `in`. */
		if (f->trailers &&
		    framing_trailer_check(f, base, pos, why) != 0)
			goto out;
		f->framing_len += pos - f->data_len;
		if (f->trailers && f->framing_len > HTTP_TRAILERS_MAX) {
			*why = "trailer section too long";
			goto out;
		}
		if (!f->trailers && f->framing_len > HTTP_CHUNK_LINE_MAX) {
			*why = "chunk-size line too long (chunk extensions)";
			goto out;
		}
		/* The data as received; the framing around it is ours. */
		skip = 0;
		if (f->data != NULL) {
			skip = (size_t)(f->data - base);
			if (f->tap != NULL && f->data_len > 0)
				f->tap(f->tap_arg, f->data, f->data_len);
			if (skip > 0)
				evbuffer_drain(in, skip);
			if (evbuffer_remove_buffer(in, out, f->data_len) !=
			    (int)f->data_len) {
				*why = "out of memory";
				goto out;
			}
		}
		if (pos - skip - f->data_len > 0)
			evbuffer_drain(in, pos - skip - f->data_len);
		*in_used += pos;
		switch (f->event) {
		case FRAMING_NONE:
			if (pos == 0) {
				*why = "the parser took nothing (internal error)";
				goto out;
			}
			continue;
		case FRAMING_CHUNK_HEADER:
			if (f->chunk_size == 0) {
				/* The trailers follow "0\r\n". */
				f->trailers = 1;
				f->prev = '\n';
			} else if (evbuffer_add_printf(out, "%" PRIx64 "\r\n",
			    f->chunk_size) < 0) {
				*why = "out of memory";
				goto out;
			}
			break;
		case FRAMING_CHUNK_DONE:
			if (evbuffer_add(out, "\r\n", 2) != 0) {
				*why = "out of memory";
				goto out;
			}
			break;
		case FRAMING_MESSAGE_DONE:
			/* Trailers are dropped: "Trailer" is not forwarded. */
			if (f->chunked && evbuffer_add(out, "0\r\n\r\n", 5) != 0) {
				*why = "out of memory";
				goto out;
			}
			break;
		}
		f->framing_len = 0;
		if (!f->done)
			llhttp_resume(&f->parser);
	}
	*done = f->done;
	r = 0;
 out:
	f->moving = 0;
	if (r != 0)
		f->failed = 1;
	return r;
}

void
http_framing_tap(struct http_framing *f,
    void (*fn)(void *, const char *, size_t), void *arg)
{
	f->tap = fn;
	f->tap_arg = arg;
}

int
http_framing_done(const struct http_framing *f)
{
	return f->done && !f->failed;
}

int
http_framing_until_eof(const struct http_framing *f)
{
	return !f->done && !f->failed &&
	    llhttp_message_needs_eof(&f->parser);
}

int
http_parser_strict(void)
{
	static const char head[] = "POST / HTTP/1.1\r\nHost: a\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n3\r\nabc";
	static const char *const ends[] = {
		"\r\n0\r\n\r\n",	/* the one good body */
		"X\n0\r\n\r\n", "XY0\r\n\r\n", "\n0\r\n\r\n", "\r0\r\n\r\n",
	};
	llhttp_settings_t s;
	llhttp_t p;
	enum llhttp_errno err;
	size_t i;

	llhttp_settings_init(&s);
	for (i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
		llhttp_init(&p, HTTP_REQUEST, &s);
		err = llhttp_execute(&p, head, sizeof(head) - 1);
		if (err == HPE_OK)
			err = llhttp_execute(&p, ends[i], strlen(ends[i]));
		if ((err == HPE_OK) != (i == 0))
			return 0;
	}
	return 1;
}
