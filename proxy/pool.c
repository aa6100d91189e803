/*
 * pool.c — objects of one size for one event loop (see pool.h).
 *
 * A chunk is one anonymous mapping: its header, then slots.  A slot is a
 * header (the chunk it is in, and the next free slot while it is free) and
 * the object.  Slots are carved from a chunk's untouched end only when no
 * freed one is there to reuse, so a chunk costs memory for the slots it
 * has used, not for its size.  Chunks with room (some objects out, not
 * all) are on a list; a full or an empty one is on none.  Every chunk is
 * also on the list of all, which pool_clear() unmaps.
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/queue.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n)	ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n)	ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n)	((void)(p), (void)(n))
#define UNPOISON(p, n)	((void)(p), (void)(n))
#endif

#define POOL_CHUNK_BYTES	(64 * 1024)
#define POOL_CHUNK_MIN_SLOTS	8
#define ROUND(n, a)		(((n) + (a) - 1) / (a) * (a))

struct pool_slot {
	struct pool_chunk	*chunk;
	struct pool_slot	*next;		/* while free */
};

struct pool_chunk {
	LIST_ENTRY(pool_chunk)	 partial;	/* while 0 < used < per_chunk */
	LIST_ENTRY(pool_chunk)	 all;
	struct pool_slot	*free;		/* given back, reused first */
	size_t			 used;		/* objects out */
	size_t			 carved;	/* slots ever taken */
};

#define SLOT_HEAD	ROUND(sizeof(struct pool_slot), POOL_ALIGN)
#define CHUNK_HEAD	ROUND(sizeof(struct pool_chunk), POOL_ALIGN)

void
pool_init(struct pool *p, size_t size)
{
	memset(p, 0, sizeof(*p));
	LIST_INIT(&p->all);
	LIST_INIT(&p->partial);
	p->size = size;
	p->slot = SLOT_HEAD + ROUND(size, POOL_ALIGN);
	p->chunk_bytes = POOL_CHUNK_BYTES;
	if (p->chunk_bytes < CHUNK_HEAD + POOL_CHUNK_MIN_SLOTS * p->slot)
		p->chunk_bytes = ROUND(CHUNK_HEAD +
		    POOL_CHUNK_MIN_SLOTS * p->slot, 4096);
	p->per_chunk = (p->chunk_bytes - CHUNK_HEAD) / p->slot;
}

static void
chunk_unmap(struct pool *p, struct pool_chunk *c)
{
	LIST_REMOVE(c, all);
	/* The shadow must not say "poisoned" for whoever maps here next. */
	UNPOISON(c, p->chunk_bytes);
	munmap(c, p->chunk_bytes);
	p->nchunks--;
}

static struct pool_chunk *
chunk_new(struct pool *p)
{
	struct pool_chunk *c;

	c = mmap(NULL, p->chunk_bytes, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED)
		return NULL;
	/* Anonymous memory is zeroed: the rest of the header is right. */
	LIST_INSERT_HEAD(&p->all, c, all);
	POISON((uint8_t *)c + CHUNK_HEAD, p->chunk_bytes - CHUNK_HEAD);
	p->nchunks++;
	return c;
}

void *
pool_get(struct pool *p)
{
	struct pool_chunk *c;
	struct pool_slot *s;

	if ((c = LIST_FIRST(&p->partial)) == NULL) {
		if ((c = p->spare) != NULL)
			p->spare = NULL;
		else if ((c = chunk_new(p)) == NULL)
			return NULL;
		LIST_INSERT_HEAD(&p->partial, c, partial);
	}
	if ((s = c->free) != NULL) {
		UNPOISON(s, SLOT_HEAD);
		c->free = s->next;
	} else {
		s = (struct pool_slot *)((uint8_t *)c + CHUNK_HEAD +
		    c->carved++ * p->slot);
		UNPOISON(s, SLOT_HEAD);
		s->chunk = c;
	}
	s->next = NULL;
	if (++c->used == p->per_chunk)
		LIST_REMOVE(c, partial);
	p->nused++;
	UNPOISON((uint8_t *)s + SLOT_HEAD, p->size);
	memset((uint8_t *)s + SLOT_HEAD, 0, p->size);
	return (uint8_t *)s + SLOT_HEAD;
}

void
pool_put(struct pool *p, void *obj)
{
	struct pool_slot *s;
	struct pool_chunk *c;

	if (obj == NULL)
		return;
	s = (struct pool_slot *)((uint8_t *)obj - SLOT_HEAD);
	c = s->chunk;
#if defined(__SANITIZE_ADDRESS__)
	if (__asan_address_is_poisoned(obj)) {
		/* A free object is poisoned: this one came back before. */
		fprintf(stderr, "pool: object %p of %zu bytes given back "
		    "twice\n", obj, p->size);
		abort();
	}
#endif
	POISON(obj, p->slot - SLOT_HEAD);
	s->next = c->free;
	c->free = s;
	p->nused--;
	if (--c->used > 0) {
		if (c->used == p->per_chunk - 1)	/* it was full */
			LIST_INSERT_HEAD(&p->partial, c, partial);
		return;
	}
	/* Empty: it had room before (per_chunk >= POOL_CHUNK_MIN_SLOTS). */
	LIST_REMOVE(c, partial);
	if (p->spare == NULL) {
		p->spare = c;
		return;
	}
	chunk_unmap(p, c);
}

size_t
pool_clear(struct pool *p)
{
	size_t out = p->nused;

	while (!LIST_EMPTY(&p->all))
		chunk_unmap(p, LIST_FIRST(&p->all));
	LIST_INIT(&p->partial);
	p->spare = NULL;
	p->nused = 0;
	return out;
}
