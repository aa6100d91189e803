/*
 * test-pool.c — the workers' object pools: objects zeroed, aligned and
 * distinct; a freed one reused first; chunks carved as needed, and every
 * chunk but one back to the system (unmapped, by mincore(2)) once its
 * objects are free; objects larger than a usual chunk; pool_clear() saying
 * what was never given back.  Under ASan, a free object is poisoned.
 */
#include "config.h"

#include <sys/mman.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include "pool.h"
#include "tap.h"

#define MANY	1000

/* Whether the page holding p is mapped in this process. */
static int
mapped(const void *p)
{
	long pg = sysconf(_SC_PAGESIZE);
	unsigned char vec;
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(pg - 1);

	if (mincore((void *)a, (size_t)pg, &vec) == 0)
		return 1;
	return errno == ENOMEM ? 0 : -1;
}

static int
all_zero(const unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

static void
test_basics(void)
{
	struct pool p;
	unsigned char *a, *b, *c;

	pool_init(&p, 100);
	a = pool_get(&p);
	b = pool_get(&p);
	tap_ok(a != NULL && b != NULL && a != b, "two objects, distinct");
	tap_ok(((uintptr_t)a % 16) == 0 && ((uintptr_t)b % 16) == 0,
	    "aligned to 16 bytes");
	tap_ok(b >= a + 100 || a >= b + 100, "not overlapping");
	tap_ok(all_zero(a, 100), "zeroed");
	memset(a, 0xa5, 100);
	memset(b, 0x5a, 100);
	pool_put(&p, a);
#if defined(__SANITIZE_ADDRESS__)
	tap_ok(__asan_address_is_poisoned(a) &&
	    __asan_address_is_poisoned(a + 99), "ASan: a free object is poisoned");
#else
	tap_skip(1, "not an ASan build");
#endif
	c = pool_get(&p);
	tap_ok(c == a, "the freed object is the next one handed out");
	tap_ok(all_zero(c, 100), "and zeroed again");
	tap_ok(b[0] == 0x5a && b[99] == 0x5a, "its neighbour untouched");
	tap_is_int((long long)p.nused, 2, "two objects out");
	pool_put(&p, NULL);
	tap_is_int((long long)p.nused, 2, "pool_put(NULL) does nothing");
	pool_put(&p, b);
	pool_put(&p, c);
	tap_is_int((long long)p.nused, 0, "none out");
	tap_is_int((long long)p.nchunks, 1, "the one chunk kept as the spare");
	a = pool_get(&p);
	tap_is_int((long long)p.nchunks, 1, "and used again, not a new one");
	pool_put(&p, a);
	tap_is_int((long long)pool_clear(&p), 0, "pool_clear: nothing was out");
	tap_is_int((long long)p.nchunks, 0, "pool_clear: no chunk left");
}

static void
test_many(void)
{
	static unsigned char *o[MANY];
	struct pool p;
	size_t i, chunks;
	int ok = 1, zeros = 1;

	pool_init(&p, 1500);
	for (i = 0; i < MANY; i++) {
		if ((o[i] = pool_get(&p)) == NULL)
			ok = 0;
		else {
			zeros &= all_zero(o[i], 1500);
			memset(o[i], (int)(i & 0xff), 1500);
		}
	}
	tap_ok(ok, "%d objects of 1500 bytes", MANY);
	tap_ok(zeros, "each zeroed");
	chunks = p.nchunks;
	tap_ok(chunks == (MANY + p.per_chunk - 1) / p.per_chunk,
	    "in %zu chunks of %zu objects, none more than needed", chunks,
	    p.per_chunk);
	for (i = 0; i < MANY; i++)
		if (o[i][0] != (unsigned char)(i & 0xff) ||
		    o[i][1499] != (unsigned char)(i & 0xff))
			ok = 0;
	tap_ok(ok, "each kept what was written to it");
	tap_ok(mapped(o[0]) == 1 && mapped(o[MANY - 1]) == 1,
	    "the first and the last object are mapped");

	/* Every other one back: no chunk empties, none goes. */
	for (i = 0; i < MANY; i += 2)
		pool_put(&p, o[i]);
	tap_is_int((long long)p.nchunks, (long long)chunks,
	    "half given back, every other one: every chunk stays");
	for (i = 0; i < MANY; i += 2)
		o[i] = pool_get(&p);
	tap_is_int((long long)p.nchunks, (long long)chunks,
	    "and taken again: into the holes, no chunk more");

	for (i = 0; i < MANY; i++)
		pool_put(&p, o[i]);
	tap_is_int((long long)p.nused, 0, "all given back");
	tap_is_int((long long)p.nchunks, 1, "one chunk left, the spare");
	for (i = 0, ok = 0; i < MANY; i++)
		ok += mapped(o[i]) == 0;
	tap_ok(ok >= MANY - (int)p.per_chunk && ok < MANY,
	    "the others' memory is unmapped (%d of %d objects)", ok, MANY);

	o[0] = pool_get(&p);
	o[1] = pool_get(&p);
	tap_is_int((long long)pool_clear(&p), 2,
	    "pool_clear says two objects were still out");
	tap_ok(mapped(o[0]) == 0, "and unmaps their chunk too");
}

static void
test_large(void)
{
	struct pool p;
	unsigned char *a, *b;

	pool_init(&p, 100000);
	tap_ok(p.per_chunk >= 8, "objects of 100,000 bytes: %zu a chunk",
	    p.per_chunk);
	a = pool_get(&p);
	b = pool_get(&p);
	tap_ok(a != NULL && b != NULL && all_zero(a, 100000) &&
	    all_zero(b, 100000), "two of them, zeroed");
	memset(a, 1, 100000);
	memset(b, 2, 100000);
	tap_ok(a[99999] == 1 && b[0] == 2, "whole");
	pool_put(&p, a);
	pool_put(&p, b);
	tap_is_int((long long)pool_clear(&p), 0, "all given back");
}

int
main(void)
{
	test_basics();
	test_many();
	test_large();
	return tap_done();
}
