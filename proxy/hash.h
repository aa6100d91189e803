/*
 * hash.h — the keyed FNV-1a the proxy's tables hash their keys with: the
 * key (a secret of the table's, random) seeds it, so that keys chosen to
 * collide do not make a table's look-ups long.
 */
#ifndef INTUTIC_HASH_H
#define INTUTIC_HASH_H

#include <stddef.h>
#include <stdint.h>

/* h, the hash so far (start with hash_seed()), on with p[0..n). */
static inline uint64_t
hash_on(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= b[i];
		h *= UINT64_C(1099511628211);
	}
	return h;
}

static inline uint64_t
hash_seed(uint64_t key)
{
	return UINT64_C(14695981039346656037) ^ key;
}

/* The hash's bits mixed down, for a table of (a power of two) slots. */
static inline size_t
hash_slot(uint64_t h, size_t slots)
{
	return (size_t)(h ^ (h >> 31)) & (slots - 1);
}

#endif /* INTUTIC_HASH_H */
