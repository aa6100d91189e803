/*
 * tunnel.h — an established tunnel: bytes both ways between two sockets.
 *
 * Once a CONNECT (or an HTTP upgrade) is past its checks, the connection's
 * bufferevents hand their sockets and whatever they still buffer to a
 * tunnel.  It reads each socket into a scratch buffer the worker owns and
 * writes straight on to the other: no per-tunnel buffer while bytes flow,
 * no epoll_ctl(2) per chunk, one read and one write per chunk.  What a
 * destination does not take stays pending (at most one chunk) and its
 * source is not read until it is written: that is the backpressure.
 * The pending bytes of all the tunnels of a loop have a budget: past it, a
 * tunnel peeks at its source, writes, and takes from the kernel only what
 * went, so it holds nothing.
 * A FIN is passed on once everything before it was; the tunnel ends when
 * both sides are done, or at the first socket error.
 */
#ifndef INTUTIC_TUNNEL_H
#define INTUTIC_TUNNEL_H

#include <sys/time.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct evbuffer;
struct pool;
struct tunnel;

#define TUNNEL_UP	0	/* client to origin */
#define TUNNEL_DOWN	1	/* origin to client */

/*
 * Told when the tunnel is done: error 0 after both FINs, else an errno.
 * The callee frees the tunnel (and must: nothing of it runs again).
 */
typedef void (*tunnel_cb)(struct tunnel *, int error, void *arg);

/*
 * The bytes the tunnels of one event loop hold for their slow sides, and
 * the most they may (one per worker, shared by its tunnels; the owed bytes
 * a tunnel starts with count too, and may go past it).
 */
struct tunnel_budget {
	size_t		 held;
	size_t		 max;
};

/* The size of a tunnel's pool object (struct tunnel and its events). */
size_t		 tunnel_size(void);

/*
 * A tunnel between two connected, non-blocking sockets, in an object of
 * `pool` (made for tunnel_size()).  `scratch` (of `chunk` bytes) is shared
 * by the tunnels of one event loop, and so is `budget`; `last_io` is
 * updated whenever bytes move.  NULL when memory runs out (the sockets are
 * then still the caller's).
 */
struct tunnel	*tunnel_new(struct pool *pool, struct event_base *base,
		    int client, int up, uint8_t *scratch, size_t chunk,
		    struct tunnel_budget *budget, struct timeval *last_io,
		    tunnel_cb cb, void *arg);

/*
 * Sends what each side was owed before the tunnel (taken from the buffers,
 * which may be NULL) and starts relaying.  From here the tunnel owns both
 * sockets.  -1 with errno when a socket fails at once; the callback is not
 * called then and the caller frees the tunnel.
 */
int		 tunnel_start(struct tunnel *, struct evbuffer *to_up,
		    struct evbuffer *to_client);

/* Bytes read from the source of a direction (TUNNEL_UP or TUNNEL_DOWN). */
uint64_t	 tunnel_moved(const struct tunnel *, int dir);

/* Closes both sockets. */
void		 tunnel_free(struct tunnel *);

#endif
