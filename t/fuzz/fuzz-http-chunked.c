/*
 * fuzz-http-chunked.c — http_framing_move() (proxy/http.h) over a message
 * body that arrives in pieces, as conn_http_move() hands it over: whatever
 * each read returned.  The first input byte picks a head from heads[]
 * (chunked requests and responses mostly, a few other framings), the rest
 * is the body.
 *
 * The body is fed three ways: whole, one byte a call, and in pieces whose
 * sizes come from the input, each its own evbuffer chain.  Checked:
 *
 * - the split does not matter: each way agrees on whether the body is
 *   refused and, if not, on where the message ends and on every byte
 *   forwarded;
 * - differentially, what is forwarded is what was parsed: a fresh llhttp
 *   parser reads the head and the input body (the reference), another the
 *   head and the forwarded body; they must see the same body bytes, and
 *   the forwarded bytes one message (or its beginning) that ends exactly
 *   at their end (nothing past the first message is ever forwarded) and
 *   where the reference's ended in the input;
 * - a forwarded chunked body is in the proxy's canonical form (chunk size
 *   in lowercase hex, CRLF, data, CRLF, "0\r\n\r\n"), read by a decoder
 *   of that form alone, so even a lenient peer reads what the proxy did;
 * - a refused body forwarded only a prefix of that form, never its end;
 * - the llhttp linked in is strict (http_parser_strict()).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include <llhttp.h>

#include "http.h"
#include "fuzz.h"

struct fuzz_head {
	int		 response;
	int		 request_was_head;
	int		 chunked;	/* its body is chunked */
	const char	*text;
};

static const struct fuzz_head heads[] = {
	{ 0, 0, 1, "POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n" },
	{ 0, 0, 1, "PUT /v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: "
	    "chunked\r\nTrailer: X-T\r\n\r\n" },
	{ 1, 0, 1, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" },
	{ 1, 0, 1, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked"
	    "\r\n\r\n" },
	{ 0, 0, 0, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 7\r\n\r\n" },
	{ 1, 0, 0, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n" },
	{ 1, 0, 0, "HTTP/1.0 200 OK\r\n\r\n" },
	{ 1, 1, 0, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" },
	{ 1, 0, 0, "HTTP/1.1 204 No Content\r\n\r\n" },
	{ 0, 0, 0, "GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n" },
};
#define NHEADS	(sizeof(heads) / sizeof(heads[0]))

/* How one way of feeding went. */
struct outcome {
	int		 error;
	int		 done;
	uint64_t	 used;		/* bytes of the body taken */
	struct evbuffer	*out;		/* what was forwarded */
};

/*
 * Feeds body[0..len) in pieces: `step` 0 whole, 1 a byte at a time, else
 * sizes from sizes[] (1..256 bytes each, cycling), each piece added by
 * reference, a chain of its own.
 */
static void
feed(const struct fuzz_head *fh, const uint8_t *sizes, size_t nsizes,
    const char *body, size_t len, int step, struct outcome *o)
{
	struct http_framing *f;
	struct evbuffer *in;
	const char *why = NULL;
	size_t off = 0, n, k = 0;
	uint64_t used;
	int done = 0, r;

	memset(o, 0, sizeof(*o));
	if ((o->out = evbuffer_new()) == NULL || (in = evbuffer_new()) == NULL)
		abort();
	f = http_framing_new(fh->response, fh->text, strlen(fh->text),
	    fh->request_was_head, &why);
	FUZZ_ASSERT(f != NULL);
	done = http_framing_done(f);
	while (off < len && !done) {
		if (step == 0)
			n = len - off;
		else if (step == 1 || nsizes == 0)
			n = 1;
		else
			n = (size_t)sizes[k++ % nsizes] + 1;
		if (n > len - off)
			n = len - off;
		if ((step == 2 ? evbuffer_add_reference(in, body + off, n,
		    NULL, NULL) : evbuffer_add(in, body + off, n)) != 0)
			abort();
		off += n;
		why = NULL;
		r = http_framing_move(f, in, o->out, &used, &done, &why);
		FUZZ_ASSERT(used <= off - o->used);
		o->used += used;
		if (r != 0) {
			FUZZ_ASSERT(r == -1 && why != NULL);
			FUZZ_ASSERT(!done && !http_framing_done(f));
			o->error = 1;
			break;
		}
		FUZZ_ASSERT(done == http_framing_done(f));
		/* Until the end, everything offered is taken. */
		FUZZ_ASSERT(done || evbuffer_get_length(in) == 0);
		/* What follows the end stays. */
		FUZZ_ASSERT(o->used + evbuffer_get_length(in) == off);
	}
	o->done = done;
	if (!o->error && !done)
		(void)http_framing_until_eof(f);
	http_framing_free(f);
	evbuffer_free(in);
}

/* What an llhttp parser of its own read. */
struct reading {
	int		 error;
	int		 messages;	/* messages complete */
	size_t		 end;		/* bytes after the head at the first end */
	struct evbuffer	*body;		/* body bytes of the first message */
	int		 skip_body;
};

static int
reading_headers_complete(llhttp_t *p)
{
	struct reading *rd = p->data;

	return rd->skip_body ? 1 : 0;
}

static int
reading_body(llhttp_t *p, const char *at, size_t len)
{
	struct reading *rd = p->data;

	if (rd->messages == 0 && evbuffer_add(rd->body, at, len) != 0)
		abort();
	return 0;
}

static int
reading_message_complete(llhttp_t *p)
{
	struct reading *rd = p->data;

	rd->messages++;
	/* Stop at the first end, to know where it was. */
	return HPE_PAUSED;
}

/*
 * Reads head + body[0..len) with a fresh parser.  When `all` is set, goes
 * on past the first message (resuming) to count every message.
 */
static void
reparse(const struct fuzz_head *fh, const char *body, size_t len, int all,
    struct reading *rd)
{
	llhttp_settings_t s;
	llhttp_t p;
	enum llhttp_errno err;
	size_t off = 0, pos;

	memset(rd, 0, sizeof(*rd));
	if ((rd->body = evbuffer_new()) == NULL)
		abort();
	rd->skip_body = fh->response && fh->request_was_head;
	llhttp_settings_init(&s);
	s.on_headers_complete = reading_headers_complete;
	s.on_body = reading_body;
	s.on_message_complete = reading_message_complete;
	llhttp_init(&p, fh->response ? HTTP_RESPONSE : HTTP_REQUEST, &s);
	p.data = rd;
	err = llhttp_execute(&p, fh->text, strlen(fh->text));
	if (err == HPE_PAUSED || err == HPE_PAUSED_UPGRADE) {
		/* A bodiless message ends with its head. */
		FUZZ_ASSERT(rd->messages == 1);
		rd->end = 0;
		if (!all)
			return;
		llhttp_resume(&p);
	} else
		FUZZ_ASSERT(err == HPE_OK);
	while (off < len) {
		err = llhttp_execute(&p, body + off, len - off);
		if (err == HPE_OK)
			return;
		if (err != HPE_PAUSED) {
			rd->error = 1;
			return;
		}
		pos = (size_t)(llhttp_get_error_pos(&p) - (body + off));
		if (rd->messages == 1)
			rd->end = off + pos;
		off += pos;
		if (!all)
			return;
		llhttp_resume(&p);
	}
}

/*
 * Decodes the proxy's canonical chunked form alone.  Returns 1 when buf
 * is a complete body (and nothing after it), 0 when it is a proper prefix
 * of one; dies otherwise.  Appends the data to `body`.
 */
static int
canonical_decode(const char *buf, size_t len, struct evbuffer *body)
{
	size_t off = 0, i, start;
	uint64_t size;

	for (;;) {
		if (off == len)
			return 0;
		/* The size: lowercase hex, no leading zero but for "0". */
		start = off;
		size = 0;
		for (i = off; i < len && ((buf[i] >= '0' && buf[i] <= '9') ||
		    (buf[i] >= 'a' && buf[i] <= 'f')); i++) {
			FUZZ_ASSERT(i - start < 16);
			size = size * 16 + (uint64_t)(buf[i] <= '9' ?
			    buf[i] - '0' : buf[i] - 'a' + 10);
		}
		if (i == len)
			return 0;	/* the size may go on */
		FUZZ_ASSERT(i > start);
		FUZZ_ASSERT(buf[start] != '0' || i == start + 1);
		FUZZ_ASSERT(buf[i] == '\r');
		if (i + 1 == len)
			return 0;
		FUZZ_ASSERT(buf[i + 1] == '\n');
		off = i + 2;
		if (size == 0) {
			/* No trailers forwarded: the empty line, and the end. */
			FUZZ_ASSERT(len - off <= 2);
			FUZZ_ASSERT(memcmp(buf + off, "\r\n", len - off) == 0);
			return len - off == 2;
		}
		if (len - off <= size) {
			if (evbuffer_add(body, buf + off, len - off) != 0)
				abort();
			return 0;
		}
		if (evbuffer_add(body, buf + off, (size_t)size) != 0)
			abort();
		off += (size_t)size;
		FUZZ_ASSERT(buf[off] == '\r');
		if (off + 1 == len)
			return 0;
		FUZZ_ASSERT(buf[off + 1] == '\n');
		off += 2;
	}
}

/* Whether two evbuffers hold the same bytes (b may be longer: prefix). */
static int
same_bytes(struct evbuffer *a, struct evbuffer *b, int prefix)
{
	size_t la = evbuffer_get_length(a), lb = evbuffer_get_length(b);
	const unsigned char *pa, *pb;

	if (prefix ? la > lb : la != lb)
		return 0;
	if (la == 0)
		return 1;
	pa = evbuffer_pullup(a, -1);
	pb = evbuffer_pullup(b, (ssize_t)la);
	return memcmp(pa, pb, la) == 0;
}

static void
check_forwarded(const struct fuzz_head *fh, const char *body, size_t len,
    const struct outcome *o)
{
	struct reading ref, fwd;
	struct evbuffer *decoded;
	const char *out;
	size_t olen = evbuffer_get_length(o->out);
	int complete;

	if ((out = (const char *)evbuffer_pullup(o->out, -1)) == NULL)
		out = "";
	reparse(fh, body, len, 0, &ref);
	if ((decoded = evbuffer_new()) == NULL)
		abort();
	if (o->error) {
		/* Only a prefix of a message: never its end. */
		if (fh->chunked)
			FUZZ_ASSERT(canonical_decode(out, olen, decoded) == 0);
		else
			evbuffer_add(decoded, out, olen);
		FUZZ_ASSERT(same_bytes(decoded, ref.body, 1));
		goto out;
	}
	/*
	 * The proxy's framing is llhttp's, plus refusals of its own: what it
	 * took, a parser of its own took too, and ended where it did.
	 */
	FUZZ_ASSERT(!ref.error);
	FUZZ_ASSERT(o->done == (ref.messages == 1));
	if (o->done)
		FUZZ_ASSERT(ref.end == o->used);
	/* The forwarded bytes read the same, to the byte, and end there. */
	reparse(fh, out, olen, 1, &fwd);
	FUZZ_ASSERT(!fwd.error);
	FUZZ_ASSERT(fwd.messages == (o->done ? 1 : 0));
	if (o->done)
		FUZZ_ASSERT(fwd.end == olen);
	FUZZ_ASSERT(same_bytes(fwd.body, ref.body, 0));
	if (fh->chunked) {
		complete = canonical_decode(out, olen, decoded);
		FUZZ_ASSERT(complete == o->done);
		FUZZ_ASSERT(same_bytes(decoded, fwd.body, 0));
	} else {
		/* Content-Length and close-delimited: as received. */
		FUZZ_ASSERT(olen == o->used && (olen == 0 ||
		    memcmp(out, body, olen) == 0));
	}
	evbuffer_free(fwd.body);
 out:
	evbuffer_free(decoded);
	evbuffer_free(ref.body);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int strict_checked;
	const struct fuzz_head *fh;
	struct outcome whole, bytes, pieces;
	const char *body;
	size_t len;

	if (!strict_checked) {
		/* A lenient llhttp would make every check below moot. */
		FUZZ_ASSERT(http_parser_strict());
		strict_checked = 1;
	}
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
		FUZZ_ASSERT(same_bytes(whole.out, bytes.out, 0));
		FUZZ_ASSERT(same_bytes(whole.out, pieces.out, 0));
	}
	check_forwarded(fh, body, len, &whole);
	check_forwarded(fh, body, len, &bytes);
	check_forwarded(fh, body, len, &pieces);
	evbuffer_free(whole.out);
	evbuffer_free(bytes.out);
	evbuffer_free(pieces.out);
	return 0;
}
