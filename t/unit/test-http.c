/*
 * test-http.c — framing of request and response bodies (proxy/http.h):
 * what http_framing_move() forwards for good bodies, byte for byte, and
 * which malformed bodies and heads it (or http_head_parse()) refuses, with
 * the reason it gives; every case is also fed split at every byte, in two
 * pieces of separate evbuffer chains, and one byte per call, and must give
 * the same answer each way.  First of all: the llhttp linked in is strict.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "http.h"
#include "tap.h"

#define CASE_MAX	(64 * 1024)	/* bytes of a built case */
#define BULK_LEN	100000		/* bytes of the large chunked body */
#define BULK_CHUNK	16384		/* its chunk size, as t/helpers' origin */

#define REQ_CHUNKED	"POST /up HTTP/1.1\r\nHost: a.example\r\n" \
			"Transfer-Encoding: chunked\r\n\r\n"
#define REQ_LENGTH7	"POST /up HTTP/1.1\r\nHost: a.example\r\n" \
			"Content-Length: 7\r\n\r\n"
#define RESP_CHUNKED	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
#define RESP_EOF	"HTTP/1.1 200 OK\r\n\r\n"
#define NEXT_REQ	"GET http://b.example/ HTTP/1.1\r\nHost: b.example\r\n\r\n"

/* A body after a head, what must be forwarded and what must stay. */
struct good {
	const char	*name;
	int		 response;
	const char	*head;
	const char	*body;
	const char	*out;		/* forwarded */
	size_t		 rest;		/* bytes left in `in` after the message */
	int		 done;		/* message ends */
};

static const struct good goods[] = {
	{ "one chunk", 0, REQ_CHUNKED, "3\r\nabc\r\n0\r\n\r\n",
	    "3\r\nabc\r\n0\r\n\r\n", 0, 1 },
	{ "no chunk", 0, REQ_CHUNKED, "0\r\n\r\n", "0\r\n\r\n", 0, 1 },
	{ "leading zeros and capitals", 0, REQ_CHUNKED,
	    "00A\r\n0123456789\r\n0000\r\n\r\n",
	    "a\r\n0123456789\r\n0\r\n\r\n", 0, 1 },
	{ "chunks kept apart", 0, REQ_CHUNKED,
	    "1\r\na\r\n2\r\nbc\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n",
	    "1\r\na\r\n2\r\nbc\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n", 0, 1 },
	{ "extensions dropped", 0, REQ_CHUNKED,
	    "3;a=\"d e\";f\r\nabc\r\n0;x=y\r\n\r\n",
	    "3\r\nabc\r\n0\r\n\r\n", 0, 1 },
	{ "trailers dropped", 0, REQ_CHUNKED,
	    "3\r\nabc\r\n0\r\nX-T: 1\r\nContent-Length: 9\r\n\r\n",
	    "3\r\nabc\r\n0\r\n\r\n", 0, 1 },
	{ "data holding CRLF and a request", 0, REQ_CHUNKED,
	    "29\r\n\r\n0\r\n\r\nGET http://b.example/ HTTP/1.1\r\n\r\n\r\n"
	    "0\r\n\r\n",
	    "29\r\n\r\n0\r\n\r\nGET http://b.example/ HTTP/1.1\r\n\r\n\r\n"
	    "0\r\n\r\n", 0, 1 },
	{ "a pipelined request stays", 0, REQ_CHUNKED,
	    "3\r\nabc\r\n0\r\n\r\n" NEXT_REQ,
	    "3\r\nabc\r\n0\r\n\r\n", sizeof(NEXT_REQ) - 1, 1 },
	{ "not finished", 0, REQ_CHUNKED, "3\r\nabc\r\n5\r\nde",
	    "3\r\nabc\r\n5\r\nde", 0, 0 },
	{ "Content-Length as received", 0, REQ_LENGTH7, "a\r\nb\nc\n" NEXT_REQ,
	    "a\r\nb\nc\n", sizeof(NEXT_REQ) - 1, 1 },
	{ "Content-Length, short", 0, REQ_LENGTH7, "abc", "abc", 0, 0 },
	{ "chunked answer", 1, RESP_CHUNKED, "5\r\nhello\r\n0\r\n\r\n",
	    "5\r\nhello\r\n0\r\n\r\n", 0, 1 },
	{ "answer to the close", 1, RESP_EOF, "3\r\nabc\n0\r\n\r\n",
	    "3\r\nabc\n0\r\n\r\n", 0, 0 },
};
#define NGOODS	(sizeof(goods) / sizeof(goods[0]))

/* A malformed body after REQ_CHUNKED and the reason it is refused for. */
struct bad {
	const char	*name;
	const char	*body;
	size_t		 len;		/* 0: strlen(body) */
	const char	*why;
};

static const struct bad bads[] = {
	{ "bare LF after the data", "3\r\nabc\n0\r\n\r\n", 0,
	    "Expected CRLF after chunk" },
	{ "bare LF after the data, then a request",
	    "3\r\nabc\n0\r\n\r\n" NEXT_REQ, 0, "Expected CRLF after chunk" },
	{ "bare CR after the data", "3\r\nabc\r0\r\n\r\n", 0,
	    "Expected CRLF after chunk" },
	{ "X LF after the data", "3\r\nabcX\n0\r\n\r\n", 0,
	    "Expected CRLF after chunk" },
	{ "junk instead of CRLF", "3\r\nabcXY0\r\n\r\n", 0,
	    "Expected CRLF after chunk" },
	{ "too much data", "3\r\nabcd\r\n0\r\n\r\n", 0,
	    "Expected CRLF after chunk" },
	{ "bare LF after the size", "3\nabc\r\n0\r\n\r\n", 0,
	    "Invalid character in chunk size" },
	{ "bare LF after the last size", "3\r\nabc\r\n0\n\r\n", 0,
	    "Invalid character in chunk size" },
	{ "size overflows 64 bits", "10000000000000000\r\nabc\r\n", 0,
	    "Chunk size overflow" },
	{ "size 0x", "0x3\r\nabc\r\n0\r\n\r\n", 0,
	    "Invalid character in chunk size" },
	{ "space before the size", " 3\r\nabc\r\n0\r\n\r\n", 0,
	    "Invalid character in chunk size" },
	{ "space after the size", "3 \r\nabc\r\n0\r\n\r\n", 0,
	    "Invalid character in chunk size" },
	{ "tab after the size", "3\t\r\nabc\r\n0\r\n\r\n", 0,
	    "Invalid character in chunk size" },
	{ "negative size", "-3\r\nabc\r\n0\r\n\r\n", 0,
	    "Invalid character in chunk size" },
	{ "empty size", "\r\nabc\r\n0\r\n\r\n", 0,
	    "Invalid character in chunk size" },
	{ "control byte in an extension", "3;a\001=b\r\nabc\r\n0\r\n\r\n", 0,
	    "Invalid character in chunk extensions name" },
	{ "NUL in an extension", "3;a\0b\r\nabc\r\n0\r\n\r\n", 16,
	    "Invalid character in chunk extensions name" },
	{ "bare LF in an extension", "3;a=b\nabc\r\n0\r\n\r\n", 0,
	    "Invalid character in chunk extensions value" },
	{ "bare CR in an extension", "3;a\rb\r\nabc\r\n0\r\n\r\n", 0,
	    "Expected LF after chunk size" },
	{ "escaped quote in an extension", "3;a=\"\\\"\"\r\nabc\r\n0\r\n\r\n",
	    0, "Invalid character in chunk extensions quoted value" },
	{ "bare LF ends the trailers", "3\r\nabc\r\n0\r\n\n" NEXT_REQ, 0,
	    "bare LF in the trailer section" },
	{ "bare LF after a trailer", "0\r\nX-T: 1\r\n\n", 0,
	    "bare LF in the trailer section" },
	{ "bare LF inside a trailer", "0\r\nX-T: 1\n\r\n", 0,
	    "Invalid header value char" },
	{ "bare CR inside a trailer", "0\r\nX-T: a\rb\r\n\r\n", 0,
	    "Missing expected LF after header value" },
	{ "obs-fold in the trailers", "0\r\nX-T: 1\r\n 2\r\n\r\n", 0,
	    "obs-fold in the trailer section" },
	{ "trailer without a colon", "0\r\nXT\r\n\r\n", 0,
	    "Invalid header token" },
};
#define NBADS	(sizeof(bads) / sizeof(bads[0]))

/* A request head refused by http_head_parse() or http_framing_new(). */
struct bad_head {
	const char	*name;
	const char	*head;
	const char	*why;
};

#define H	"POST /up HTTP/1.1\r\nHost: a\r\n"
static const struct bad_head bad_heads[] = {
	{ "CL and TE", H "Content-Length: 3\r\nTransfer-Encoding: chunked"
	    "\r\n\r\n", "Content-Length can't be present with Transfer-Encoding" },
	{ "TE and CL", H "Transfer-Encoding: chunked\r\nContent-Length: 3"
	    "\r\n\r\n", "Content-Length can't be present with Transfer-Encoding" },
	{ "TE not ending in chunked", H "Transfer-Encoding: chunked, gzip"
	    "\r\n\r\n", "Invalid `Transfer-Encoding` header value" },
	{ "TE without chunked", H "Transfer-Encoding: gzip\r\n\r\n",
	    "Transfer-Encoding of a request does not end in chunked" },
	{ "TE twice", H "Transfer-Encoding: chunked\r\nTransfer-Encoding: "
	    "chunked\r\n\r\n", "Invalid `Transfer-Encoding` header value" },
	{ "TE in HTTP/1.0", "POST /up HTTP/1.0\r\nHost: a\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n",
	    "Transfer-Encoding in an HTTP/1.0 request" },
	{ "two CL, other values", H "Content-Length: 3\r\nContent-Length: 4"
	    "\r\n\r\n", "Duplicate Content-Length" },
	{ "two CL, one value", H "Content-Length: 3\r\nContent-Length: 3"
	    "\r\n\r\n", "Duplicate Content-Length" },
	{ "CL list", H "Content-Length: 3, 3\r\n\r\n",
	    "Invalid character in Content-Length" },
	{ "CL +3", H "Content-Length: +3\r\n\r\n",
	    "Invalid character in Content-Length" },
	{ "obs-fold", H "X-A: 1\r\n 2\r\nContent-Length: 0\r\n\r\n",
	    "obs-fold (a header line continued on the next)" },
	{ "obs-fold of CL", H "Content-Length:\r\n\t3\r\n\r\n",
	    "obs-fold (a header line continued on the next)" },
	{ "bare LF in the request line", "POST /up HTTP/1.1\nHost: a\r\n\r\n",
	    "bare LF in the head (lines end in CRLF)" },
	{ "bare LF ends the head", H "X: 1\r\n\n\r\n\r\n",
	    "bare LF in the head (lines end in CRLF)" },
	{ "bare CR in a value", H "X: a\rb\r\n\r\n", "bare CR in the head" },
	{ "space before the colon", H "Content-Length : 3\r\n\r\n",
	    "Invalid header field char" },
};
#define NBAD_HEADS	(sizeof(bad_heads) / sizeof(bad_heads[0]))

/* How one way of feeding went. */
struct result {
	int		 r;		/* 0, or -1 */
	const char	*why;
	int		 done;
	uint64_t	 used;		/* bytes taken from `in`, all calls */
	size_t		 rest;		/* bytes left in `in` */
	char		*out;		/* what was forwarded, NUL-ended */
	size_t		 out_len;
};

/*
 * Frames `body` after `head`: with `split` 0 the body in one call; with
 * split k (0 < k < len) the first k bytes, a call, then the rest (its own
 * evbuffer chain), a call; with `split` (size_t)-1 one byte per call.
 */
/* What a framing's tap saw (run() sets it on when tapped is not NULL). */
static char	 tapped[256];
static size_t	 tapped_len;
static int	 tapping;

static void
tap_cb(void *arg, const char *data, size_t len)
{
	(void)arg;
	if (tapped_len + len > sizeof(tapped)) {
		tapped_len = sizeof(tapped) + 1;
		return;
	}
	memcpy(tapped + tapped_len, data, len);
	tapped_len += len;
}

static void
run(int response, const char *head, const char *body, size_t len,
    size_t split, struct result *res)
{
	struct http_framing *f;
	struct evbuffer *in, *out;
	const char *why = NULL;
	uint64_t used;
	size_t off = 0, n;
	int done = 0;

	memset(res, 0, sizeof(*res));
	if ((in = evbuffer_new()) == NULL || (out = evbuffer_new()) == NULL)
		abort();
	f = http_framing_new(response, head, strlen(head), 0, &why);
	if (f == NULL) {
		res->r = -1;
		res->why = why;
		goto out;
	}
	tapped_len = 0;
	if (tapping)
		http_framing_tap(f, tap_cb, NULL);
	while (off < len || (off == 0 && len == 0)) {
		if (split == (size_t)-1)
			n = 1;
		else if (split > 0 && off == 0 && split < len)
			n = split;
		else
			n = len - off;
		/* By reference: a piece of its own, as a separate read. */
		if (n > 0 && evbuffer_add_reference(in, body + off, n, NULL,
		    NULL) != 0)
			abort();
		off += n;
		why = NULL;
		res->r = http_framing_move(f, in, out, &used, &done, &why);
		res->used += used;
		if (res->r != 0) {
			res->why = why;
			break;
		}
		if (len == 0)
			break;
	}
	res->done = done;
	res->rest = evbuffer_get_length(in);
	if (res->done != http_framing_done(f))
		res->r = -2;
	http_framing_free(f);
 out:
	res->out_len = evbuffer_get_length(out);
	if ((res->out = malloc(res->out_len + 1)) == NULL)
		abort();
	evbuffer_remove(out, res->out, res->out_len);
	res->out[res->out_len] = '\0';
	evbuffer_free(in);
	evbuffer_free(out);
}

/* Every way of feeding a case: whole, each split, byte by byte. */
static int
ways(size_t len)
{
	return len > 1 ? (int)len + 1 : 2;
}

static size_t
way_split(int i, size_t len)
{
	if (i == 0)
		return 0;
	if ((size_t)i <= len - 1 && len > 1)
		return (size_t)i;
	return (size_t)-1;
}

static void
test_good(const struct good *g)
{
	struct result res;
	size_t len = strlen(g->body), exp_len = strlen(g->out);
	int i, bad = 0;

	for (i = 0; i < ways(len); i++) {
		run(g->response, g->head, g->body, len, way_split(i, len), &res);
		if (res.r != 0 || res.done != g->done ||
		    res.out_len != exp_len ||
		    memcmp(res.out, g->out, exp_len) != 0 ||
		    res.rest != g->rest || res.used != len - g->rest) {
			if (bad++ == 0)
				tap_diag("%s, split %zd: r %d (%s), done %d, "
				    "rest %zu, used %llu, out '%s'", g->name,
				    (ssize_t)way_split(i, len), res.r,
				    res.why != NULL ? res.why : "-", res.done,
				    res.rest, (unsigned long long)res.used,
				    res.out);
		}
		free(res.out);
	}
	tap_ok(bad == 0, "%s: forwarded exactly as expected, %d ways", g->name,
	    ways(len));
}

static void
test_bad(const struct bad *b)
{
	struct result res;
	size_t len = b->len > 0 ? b->len : strlen(b->body);
	int i, bad = 0;

	for (i = 0; i < ways(len); i++) {
		run(0, REQ_CHUNKED, b->body, len, way_split(i, len), &res);
		if (res.r != -1 || res.why == NULL ||
		    strcmp(res.why, b->why) != 0 || res.done) {
			if (bad++ == 0)
				tap_diag("%s, split %zd: r %d, why '%s'",
				    b->name, (ssize_t)way_split(i, len), res.r,
				    res.why != NULL ? res.why : "(none)");
		}
		/* Nothing after the error forwarded: no second message. */
		if (strstr(res.out, "GET ") != NULL && bad++ == 0)
			tap_diag("%s: forwarded '%s'", b->name, res.out);
		free(res.out);
	}
	tap_ok(bad == 0, "%s: refused, '%s', %d ways", b->name, b->why,
	    ways(len));
}

static void
test_bad_head(const struct bad_head *b)
{
	struct http_head *h;
	struct http_framing *f;
	const char *why = NULL;
	int status = 0;

	if ((h = malloc(sizeof(*h))) == NULL)
		abort();
	if (http_head_parse(b->head, strlen(b->head), HTTP_HEADERS_LIMIT,
	    8192, h, &status, &why) == HTTP_OK) {
		/* Some of llhttp's checks come after the head: the framing. */
		why = NULL;
		status = 400;
		if ((f = http_framing_new(0, b->head, strlen(b->head), 0,
		    &why)) != NULL) {
			http_framing_free(f);
			why = NULL;
		}
	}
	tap_ok(why != NULL && status == 400 && strcmp(why, b->why) == 0,
	    "head %s: refused, '%s'", b->name, b->why);
	if (why == NULL || strcmp(why, b->why) != 0)
		tap_diag("got '%s'", why != NULL ? why : "(accepted)");
	free(h);
}

/* A long line or trailer section is refused however it arrives. */
static void
test_limit(const char *name, const char *pre, size_t n, const char *post,
    const char *want)
{
	struct result res;
	char *body;
	size_t len, splits[] = { 0, 1, 2, 100, 4095, 4096, 4097, 8191, 8192,
	    (size_t)-1 };
	size_t i;
	int bad = 0;

	len = strlen(pre) + n + strlen(post);
	if ((body = malloc(len)) == NULL)
		abort();
	memcpy(body, pre, strlen(pre));
	memset(body + strlen(pre), 'a', n);
	memcpy(body + strlen(pre) + n, post, strlen(post));
	for (i = 0; i < sizeof(splits) / sizeof(splits[0]); i++) {
		run(0, REQ_CHUNKED, body, len, splits[i], &res);
		if (want == NULL ? res.r != 0 || !res.done :
		    res.r != -1 || strcmp(res.why, want) != 0) {
			if (bad++ == 0)
				tap_diag("%s, split %zd: r %d, why '%s'", name,
				    (ssize_t)splits[i], res.r,
				    res.why != NULL ? res.why : "(none)");
		}
		free(res.out);
	}
	free(body);
	tap_ok(bad == 0, "%s: %s", name, want != NULL ? want : "taken");
}

/* 100000 bytes in chunks of 16384: the same bytes and chunks out. */
static void
test_bulk(void)
{
	static char body[CASE_MAX * 2 + BULK_LEN], want[CASE_MAX * 2 + BULK_LEN];
	struct result res;
	size_t blen = 0, wlen = 0, off, k, i;
	int n;

	for (off = 0; off < BULK_LEN; off += k) {
		k = BULK_LEN - off < BULK_CHUNK ? BULK_LEN - off : BULK_CHUNK;
		/* The client writes upper case with a leading zero. */
		n = snprintf(body + blen, sizeof(body) - blen, "0%zX;e=1\r\n", k);
		blen += (size_t)n;
		n = snprintf(want + wlen, sizeof(want) - wlen, "%zx\r\n", k);
		wlen += (size_t)n;
		for (i = 0; i < k; i++)
			body[blen + i] = want[wlen + i] = (char)('a' +
			    (off + i) % 26);
		blen += k;
		wlen += k;
		memcpy(body + blen, "\r\n", 2);
		memcpy(want + wlen, "\r\n", 2);
		blen += 2;
		wlen += 2;
	}
	memcpy(body + blen, "0\r\n\r\n", 5);
	memcpy(want + wlen, "0\r\n\r\n", 5);
	blen += 5;
	wlen += 5;
	run(0, REQ_CHUNKED, body, blen, 0, &res);
	tap_ok(res.r == 0 && res.done && res.out_len == wlen &&
	    memcmp(res.out, want, wlen) == 0 && res.used == blen,
	    "100000 bytes in chunks of 16384: re-framed exactly");
	free(res.out);
	run(0, REQ_CHUNKED, body, blen, 7777, &res);
	tap_ok(res.r == 0 && res.done && res.out_len == wlen &&
	    memcmp(res.out, want, wlen) == 0 && res.used == blen,
	    "the same split in two reads");
	free(res.out);
}

/* After the end, nothing more is taken, whatever is offered. */
static void
test_after_done(void)
{
	struct http_framing *f;
	struct evbuffer *in, *out;
	const char *why = NULL;
	uint64_t used;
	int done = 0, r1, r2;

	if ((in = evbuffer_new()) == NULL || (out = evbuffer_new()) == NULL)
		abort();
	f = http_framing_new(0, REQ_CHUNKED, strlen(REQ_CHUNKED), 0, &why);
	evbuffer_add_printf(in, "0\r\n\r\n");
	r1 = http_framing_move(f, in, out, &used, &done, &why);
	evbuffer_add_printf(in, "3\r\nabc\r\n");
	r2 = http_framing_move(f, in, out, &used, &done, &why);
	tap_ok(r1 == 0 && r2 == 0 && done && used == 0 &&
	    evbuffer_get_length(in) == 8 && evbuffer_get_length(out) == 5,
	    "a finished message takes nothing more");
	http_framing_free(f);
	http_framing_free(NULL);
	evbuffer_free(in);
	evbuffer_free(out);
}

/* The tap sees the body's data, de-chunked, however it came in. */
static void
test_tap(const char *name, const char *head, const char *body,
    const char *data)
{
	struct result res;
	size_t len = strlen(body);
	int i, bad = 0;

	tapping = 1;
	for (i = 0; i < ways(len); i++) {
		run(0, head, body, len, way_split(i, len), &res);
		if (res.r != 0 || tapped_len != strlen(data) ||
		    memcmp(tapped, data, tapped_len) != 0) {
			if (bad++ == 0)
				tap_diag("%s, split %zd: r %d, tapped %zu "
				    "bytes", name, (ssize_t)way_split(i, len),
				    res.r, tapped_len);
		}
		free(res.out);
	}
	tapping = 0;
	tap_ok(bad == 0, "tap, %s: saw the data alone, %d ways", name,
	    ways(len));
}

int
main(void)
{
	size_t i;

	tap_ok(http_parser_strict(), "the llhttp linked in is strict");
	for (i = 0; i < NGOODS; i++)
		test_good(&goods[i]);
	for (i = 0; i < NBADS; i++)
		test_bad(&bads[i]);
	for (i = 0; i < NBAD_HEADS; i++)
		test_bad_head(&bad_heads[i]);
	test_limit("chunk-size line of 4096 bytes", "3;", 4092, "\r\nabc"
	    "\r\n0\r\n\r\n", NULL);
	test_limit("chunk-size line of 4097 bytes", "3;", 4093, "\r\nabc"
	    "\r\n0\r\n\r\n", "chunk-size line too long (chunk extensions)");
	test_limit("endless extension", "3;", 20000, "",
	    "chunk-size line too long (chunk extensions)");
	test_limit("trailer section of 8192 bytes", "0\r\nX: ", 8192 - 7,
	    "\r\n\r\n", NULL);
	test_limit("trailer section of 8193 bytes", "0\r\nX: ", 8193 - 7,
	    "\r\n\r\n", "trailer section too long");
	test_bulk();
	test_after_done();
	test_tap("chunked", REQ_CHUNKED, "5;x=y\r\nhello\r\n6\r\n world"
	    "\r\n0\r\nT: v\r\n\r\n", "hello world");
	test_tap("content-length", "POST / HTTP/1.1\r\nHost: h\r\n"
	    "Content-Length: 11\r\n\r\n", "hello worldGET / HTTP/1.1\r\n",
	    "hello world");
	return tap_done();
}
