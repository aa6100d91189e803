/*
 * pool.h — objects of one size for one event loop, in chunks of their own.
 *
 * A connection's long-lived parts (its struct and timer, its tunnel and
 * the tunnel's events) come from a pool rather than from malloc.  malloc
 * would put them between the small blocks libevent keeps, for as long as
 * the loop lives, for every descriptor number the loop ever watched: once
 * a burst of connections had closed, those blocks would hold on to every
 * page of heap the burst grew (10,000 tunnels: some 25 MiB, for good).  A
 * pool's chunk goes back to the system as soon as all its objects are
 * free; one empty chunk is kept, so that connections coming one at a time
 * do not map and unmap a chunk each.
 *
 * A pool belongs to one thread.  Under AddressSanitizer a free object is
 * poisoned, so a use after pool_put() is reported as a malloc'd one would
 * be; LeakSanitizer does not see pools, so pool_clear() says what was not
 * returned.
 */
#ifndef INTUTIC_POOL_H
#define INTUTIC_POOL_H

#include <sys/queue.h>

#include <stddef.h>

struct pool_chunk;
LIST_HEAD(pool_chunks, pool_chunk);

struct pool {
	size_t			 size;		/* an object, as asked */
	size_t			 slot;		/* with its header, aligned */
	size_t			 per_chunk;
	size_t			 chunk_bytes;
	struct pool_chunks	 all;		/* every chunk mapped */
	struct pool_chunks	 partial;	/* chunks with room */
	struct pool_chunk	*spare;		/* one empty chunk, kept */
	size_t			 nchunks;	/* mapped, the spare too */
	size_t			 nused;		/* objects handed out */
};

/* Objects are aligned to this; so is POOL_PAST(type). */
#define POOL_ALIGN	16

/*
 * Where, in a pool object that starts with a `type`, room for more may
 * begin (a connection's timer, a tunnel's events): aligned for anything.
 */
#define POOL_PAST(type)	((sizeof(type) + POOL_ALIGN - 1) & \
			    ~(size_t)(POOL_ALIGN - 1))

void	 pool_init(struct pool *, size_t size);

/* A zeroed object; NULL when no memory could be mapped. */
void	*pool_get(struct pool *);

/* Gives an object back (NULL: nothing). */
void	 pool_put(struct pool *, void *);

/*
 * Unmaps every chunk; the number of objects that were still out (0 when
 * all came back), which are then gone.
 */
size_t	 pool_clear(struct pool *);

#endif
