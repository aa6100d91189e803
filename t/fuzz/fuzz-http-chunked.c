/*
 * fuzz-http-chunked.c — http_framing (proxy/http.h) over a message body
 * that arrives in pieces, as conn_http_move() feeds it: whatever each read
 * returned.  The first input byte picks a head from heads[] (chunked
 * requests and responses mostly, a few other framings), the rest is the
 * body.  The body is fed three ways: whole, one byte at a time, and in
 * pieces whose sizes come from the input; the framing must not depend on
 * where the reads split it: each way must agree on whether the body is
 * malformed, and if not, on where the message ends.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "fuzz.h"

struct fuzz_head {
	int		 response;
	int		 request_was_head;
	const char	*text;
};

static const struct fuzz_head heads[] = {
	{ 0, 0, "POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n" },
	{ 0, 0, "PUT /v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked"
	    "\r\nTrailer: X-T\r\n\r\n" },
	{ 1, 0, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" },
	{ 1, 0, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" },
	{ 0, 0, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 7\r\n\r\n" },
	{ 1, 0, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n" },
	{ 1, 0, "HTTP/1.0 200 OK\r\n\r\n" },
	{ 1, 1, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" },
	{ 1, 0, "HTTP/1.1 204 No Content\r\n\r\n" },
	{ 0, 0, "GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n" },
};
#define NHEADS	(sizeof(heads) / sizeof(heads[0]))

/* How one way of feeding went. */
struct outcome {
	int	 error;
	int	 done;
	size_t	 used;		/* bytes of the body taken */
};

/*
 * Feeds body[0..len) in pieces: `step` 0 whole, 1 a byte at a time, else
 * sizes from sizes[] (1..256 bytes each, cycling).
 */
static void
feed(const struct fuzz_head *fh, const uint8_t *sizes, size_t nsizes,
    const char *body, size_t len, int step, struct outcome *o)
{
	struct http_framing *f;
	const char *why = NULL;
	size_t off = 0, n, used, k = 0;
	int done = 0;

	memset(o, 0, sizeof(*o));
	f = http_framing_new(fh->response, fh->text, strlen(fh->text),
	    fh->request_was_head, &why);
	FUZZ_ASSERT(f != NULL);
	if (http_framing_done(f)) {
		o->done = 1;
		http_framing_free(f);
		return;
	}
	while (off < len && !done) {
		if (step == 0)
			n = len - off;
		else if (step == 1 || nsizes == 0)
			n = 1;
		else
			n = (size_t)sizes[k++ % nsizes] + 1;
		if (n > len - off)
			n = len - off;
		why = NULL;
		if (http_framing_feed(f, body + off, n, &used, &done,
		    &why) != 0) {
			FUZZ_ASSERT(why != NULL);
			o->error = 1;
			break;
		}
		FUZZ_ASSERT(used <= n);
		FUZZ_ASSERT(done || used == n);
		off += used;
	}
	o->done = done;
	o->used = off;
	if (!o->error && !done)
		(void)http_framing_until_eof(f);
	http_framing_free(f);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct fuzz_head *fh;
	struct outcome whole, bytes, pieces;
	const char *body;
	size_t len;

	if (size == 0)
		return 0;
	fh = &heads[data[0] % NHEADS];
	body = (const char *)data + 1;
	len = size - 1;
	feed(fh, NULL, 0, body, len, 0, &whole);
	feed(fh, NULL, 0, body, len, 1, &bytes);
	feed(fh, data, size < 16 ? size : 16, body, len, 2, &pieces);
	FUZZ_ASSERT(whole.error == bytes.error && whole.error == pieces.error);
	if (!whole.error) {
		FUZZ_ASSERT(whole.done == bytes.done &&
		    whole.done == pieces.done);
		FUZZ_ASSERT(whole.used == bytes.used &&
		    whole.used == pieces.used);
	}
	return 0;
}
