/*
 * fuzz-tls-hello.c — tls_hello_parse() (proxy/tls-hello.h) as the proxy
 * calls it after a CONNECT: on everything received so far, again each time
 * more arrives.  The input is fed whole and as every prefix of it (a split
 * at every offset), each prefix with the bytes after it poisoned, and
 * once more padded to TLS_HELLO_MAX.  Checked, from tls-hello.h:
 *
 *  - a status other than TLS_HELLO_MORE is final: it stays when bytes are
 *    appended, and so does what an OK hello says;
 *  - TLS_HELLO_MORE is never returned once len >= TLS_HELLO_MAX;
 *  - *why is set exactly when the status is TLS_HELLO_MALFORMED;
 *  - `out` is cleared unless the status is TLS_HELLO_OK, and when it is,
 *    consumed <= len and the SNI is 1..255 bytes of printable ASCII.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tls-hello.h"
#include "fuzz.h"

/* Every prefix is parsed: bound the quadratic cost. */
#define FUZZ_TLS_PREFIX_MAX	(4 * 1024)

static void
check_one(const uint8_t *buf, size_t len, enum tls_hello_status s,
    const struct tls_hello *h, const char *why)
{
	static const struct tls_hello zero;
	size_t i;

	FUZZ_ASSERT(s == TLS_HELLO_MORE || s == TLS_HELLO_OK ||
	    s == TLS_HELLO_NOT_TLS || s == TLS_HELLO_MALFORMED);
	FUZZ_ASSERT(tls_hello_status_str(s) != NULL);
	FUZZ_ASSERT((why != NULL) == (s == TLS_HELLO_MALFORMED));
	FUZZ_ASSERT(s != TLS_HELLO_MORE || len < TLS_HELLO_MAX);
	if (s != TLS_HELLO_OK) {
		FUZZ_ASSERT(memcmp(h, &zero, sizeof(*h)) == 0);
		return;
	}
	FUZZ_ASSERT(h->consumed > 0 && h->consumed <= len);
	FUZZ_ASSERT(buf[0] == 22);
	FUZZ_ASSERT(h->sni_len == strlen(h->sni));
	if (!h->has_sni) {
		FUZZ_ASSERT(h->sni_len == 0);
		return;
	}
	FUZZ_ASSERT(h->sni_len >= 1 && h->sni_len <= TLS_HELLO_SNI_MAX);
	for (i = 0; i < h->sni_len; i++)
		FUZZ_ASSERT(h->sni[i] > 0x20 && h->sni[i] < 0x7f);
}

/* Whether two OK answers say the same. */
static int
same_hello(const struct tls_hello *a, const struct tls_hello *b)
{
	return a->has_sni == b->has_sni && a->sni_len == b->sni_len &&
	    strcmp(a->sni, b->sni) == 0 && a->has_ech == b->has_ech &&
	    a->legacy_version == b->legacy_version && a->tls13 == b->tls13 &&
	    a->consumed == b->consumed;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tls_hello h, final_h;
	enum tls_hello_status s, final = TLS_HELLO_MORE;
	const char *why;
	uint8_t *buf;
	size_t n, len, padded;

	len = size < FUZZ_TLS_PREFIX_MAX ? size : FUZZ_TLS_PREFIX_MAX;
	padded = len > TLS_HELLO_MAX ? len : TLS_HELLO_MAX;
	if ((buf = malloc(padded)) == NULL)
		abort();
	memcpy(buf, data, len);
	memset(&final_h, 0, sizeof(final_h));

	/* Every prefix: what the proxy sees as the bytes trickle in. */
	for (n = 0; n <= len; n++) {
		FUZZ_POISON(buf + n, padded - n);
		s = tls_hello_parse(n == 0 ? NULL : buf, n, &h, &why);
		FUZZ_UNPOISON(buf + n, padded - n);
		check_one(buf, n, s, &h, why);
		if (final == TLS_HELLO_MORE) {
			final = s;
			final_h = h;
			continue;
		}
		FUZZ_ASSERT(s == final);
		if (s == TLS_HELLO_OK)
			FUZZ_ASSERT(same_hello(&h, &final_h));
	}

	/* The input again, then more bytes up to the proxy's limit. */
	if (len < padded)
		memset(buf + len, len > 0 ? buf[len - 1] : 0, padded - len);
	s = tls_hello_parse(buf, TLS_HELLO_MAX, &h, &why);
	check_one(buf, TLS_HELLO_MAX, s, &h, why);
	FUZZ_ASSERT(s != TLS_HELLO_MORE);
	if (final != TLS_HELLO_MORE && len <= TLS_HELLO_MAX) {
		FUZZ_ASSERT(s == final);
		if (s == TLS_HELLO_OK)
			FUZZ_ASSERT(same_hello(&h, &final_h));
	}
	free(buf);
	return 0;
}
