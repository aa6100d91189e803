/*
 * fuzz-usage.c — the provider gateway's usage reader (proxy/usage.h) as
 * the gateway feeds it: a response body in pieces as they arrive, and the
 * same bytes as a request body.  The input's first byte picks the API
 * (bits 0-1), JSON or an event stream (bit 2), whether the body ended
 * where its framing said (bit 3) and how it is split (bits 4-7); the rest
 * is the body.  Checked, from usage.h:
 *
 *  - the result does not depend on the split: whole, a byte at a time and
 *    in pieces (sizes drawn from the first byte) read alike, each piece
 *    with the bytes after it poisoned for ASan;
 *  - every string of the result is NUL-terminated within its array, and
 *    valid UTF-8 whenever the body is; counts are -1 or more; the state
 *    is NONE exactly when no count was read; no API, nothing taken; no
 *    event outside an event stream, and never more events than line ends;
 *  - read as cut (complete 0), so that only a byte makes it malformed:
 *    once malformed, more bytes change nothing, and a prefix is
 *    malformed only when the body is, with no more events;
 *  - the request reader reads the same whole and a byte at a time, its
 *    model NUL-terminated, its stream -1, 0 or 1.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "usage.h"
#include "fuzz.h"

#define FUZZ_USAGE_PIECE_MAX	256	/* bytes of a piece, at most */

enum { WHOLE, BYTES, PIECES };

static uint32_t
rnd_next(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* Valid UTF-8 (RFC 3629: no overlong form, no surrogate, to U+10FFFF). */
static int
utf8_valid(const uint8_t *p, size_t n)
{
	size_t		 i = 0, k, need;
	uint32_t	 cp, min;

	while (i < n) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		if (p[i] >= 0xc2 && p[i] <= 0xdf) {
			need = 1;
			cp = p[i] & 0x1f;
			min = 0x80;
		} else if (p[i] >= 0xe0 && p[i] <= 0xef) {
			need = 2;
			cp = p[i] & 0x0f;
			min = 0x800;
		} else if (p[i] >= 0xf0 && p[i] <= 0xf4) {
			need = 3;
			cp = p[i] & 0x07;
			min = 0x10000;
		} else
			return 0;
		if (n - i - 1 < need)
			return 0;
		for (k = 1; k <= need; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += need + 1;
	}
	return 1;
}

/* A string field: NUL within its size; valid UTF-8 when the body was. */
static void
check_str(const char *s, size_t size, int utf8)
{
	const char	*nul = memchr(s, '\0', size);

	FUZZ_ASSERT(nul != NULL);
	if (utf8)
		FUZZ_ASSERT(utf8_valid((const uint8_t *)s, (size_t)(nul - s)));
}

static int
result_eq(const struct usage_result *a, const struct usage_result *b)
{
	return strcmp(a->model, b->model) == 0 && strcmp(a->id, b->id) == 0 &&
	    strcmp(a->stop, b->stop) == 0 &&
	    strcmp(a->error, b->error) == 0 && a->input == b->input &&
	    a->output == b->output && a->cache_read == b->cache_read &&
	    a->cache_write == b->cache_write && a->reasoning == b->reasoning &&
	    a->state == b->state && a->malformed == b->malformed &&
	    a->events == b->events;
}

/*
 * Reads buf[0..len) in pieces as `how` says, each piece fed with the
 * bytes after it in buf (of size cap) poisoned.
 */
static void
read_body(enum usage_api api, int sse, uint8_t *buf, size_t len, size_t cap,
    int complete, int how, uint32_t seed, struct usage_result *out)
{
	struct usage	 u;
	size_t		 off = 0, n;

	usage_begin(&u, api, sse);
	while (off < len) {
		if (how == WHOLE)
			n = len - off;
		else if (how == BYTES)
			n = 1;
		else {
			n = 1 + rnd_next(&seed) % FUZZ_USAGE_PIECE_MAX;
			if (n > len - off)
				n = len - off;
		}
		FUZZ_POISON(buf + off + n, cap - off - n);
		usage_feed(&u, buf + off, n);
		FUZZ_UNPOISON(buf + off + n, cap - off - n);
		off += n;
	}
	usage_end(&u, complete, out);
}

static void
check_result(const struct usage_result *r, enum usage_api api, int sse,
    const uint8_t *body, size_t len)
{
	size_t	 i, eols = 0;
	int	 utf8 = utf8_valid(body, len), counted;

	check_str(r->model, sizeof(r->model), utf8);
	check_str(r->id, sizeof(r->id), utf8);
	check_str(r->stop, sizeof(r->stop), utf8);
	check_str(r->error, sizeof(r->error), utf8);
	FUZZ_ASSERT(r->input >= -1 && r->output >= -1 &&
	    r->cache_read >= -1 && r->cache_write >= -1 &&
	    r->reasoning >= -1);
	counted = r->input >= 0 || r->output >= 0 || r->cache_read >= 0 ||
	    r->cache_write >= 0 || r->reasoning >= 0;
	FUZZ_ASSERT(r->state == USAGE_NONE || r->state == USAGE_PARTIAL ||
	    r->state == USAGE_FINAL);
	FUZZ_ASSERT((r->state == USAGE_NONE) == !counted);
	FUZZ_ASSERT(r->malformed == 0 || r->malformed == 1);
	if (api == USAGE_API_NONE)
		FUZZ_ASSERT(!counted && r->model[0] == '\0' &&
		    r->id[0] == '\0' && r->stop[0] == '\0' &&
		    r->error[0] == '\0');
	if (api != USAGE_API_ANTHROPIC)
		FUZZ_ASSERT(r->cache_write == -1);
	if (api == USAGE_API_ANTHROPIC)
		FUZZ_ASSERT(r->reasoning == -1);
	for (i = 0; i < len; i++)
		eols += body[i] == '\r' || body[i] == '\n';
	FUZZ_ASSERT(sse ? r->events <= eols : r->events == 0);
}

static void
check_request(uint8_t *buf, size_t len)
{
	struct usage_req	 whole, bytes;
	size_t			 i;

	usage_req_begin(&whole);
	usage_req_feed(&whole, buf, len);
	usage_req_begin(&bytes);
	for (i = 0; i < len; i++)
		usage_req_feed(&bytes, buf + i, 1);
	FUZZ_ASSERT(memchr(usage_req_model(&whole), '\0',
	    USAGE_MODEL_MAX) != NULL);
	FUZZ_ASSERT(strcmp(usage_req_model(&whole),
	    usage_req_model(&bytes)) == 0);
	FUZZ_ASSERT(usage_req_stream(&whole) >= -1 &&
	    usage_req_stream(&whole) <= 1);
	FUZZ_ASSERT(usage_req_stream(&whole) == usage_req_stream(&bytes));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct usage_result	 whole, other;
	struct usage		 u;
	enum usage_api		 api;
	uint8_t			*buf;
	size_t			 len, cut;
	uint32_t		 seed;
	int			 sse, complete;

	if (size == 0)
		return 0;
	api = (enum usage_api)(data[0] & 3);
	sse = (data[0] >> 2) & 1;
	complete = (data[0] >> 3) & 1;
	seed = 0x9e3779b9u ^ (uint32_t)data[0] << 8 ^ (uint32_t)size;
	len = size - 1;
	/* The body, and a copy after it for "more bytes" below. */
	if ((buf = malloc(2 * len + 1)) == NULL)
		abort();
	memcpy(buf, data + 1, len);
	memcpy(buf + len, data + 1, len);

	read_body(api, sse, buf, len, len, complete, WHOLE, 0, &whole);
	check_result(&whole, api, sse, buf, len);
	read_body(api, sse, buf, len, len, complete, BYTES, 0, &other);
	FUZZ_ASSERT(result_eq(&whole, &other));
	read_body(api, sse, buf, len, len, complete, PIECES, seed, &other);
	FUZZ_ASSERT(result_eq(&whole, &other));

	/*
	 * Cut: malformed only by a byte.  Then more bytes change nothing,
	 * and a prefix is malformed only when the whole is.
	 */
	read_body(api, sse, buf, len, len, 0, WHOLE, 0, &whole);
	if (whole.malformed) {
		usage_begin(&u, api, sse);
		usage_feed(&u, buf, 2 * len);
		usage_end(&u, 0, &other);
		FUZZ_ASSERT(result_eq(&whole, &other));
	}
	if (len > 0) {
		cut = rnd_next(&seed) % len;
		read_body(api, sse, buf, cut, len, 0, WHOLE, 0, &other);
		check_result(&other, api, sse, buf, cut);
		FUZZ_ASSERT(!other.malformed || whole.malformed);
		FUZZ_ASSERT(other.events <= whole.events);
	}

	FUZZ_POISON(buf + len, len + 1);
	check_request(buf, len);
	FUZZ_UNPOISON(buf + len, len + 1);
	free(buf);
	return 0;
}
