/*
 * tunnel.c — an established tunnel (see tunnel.h).
 *
 * Each direction is a source socket, a destination socket, a read event
 * on the source (persistent while the direction may read) and a write
 * event on the destination (armed only while something is pending).
 *
 *   read source ──> write destination ──all taken──> read on
 *                         │
 *                         └─ short write: keep the rest, stop reading,
 *                            wait for the destination, write, read on
 *
 * Pending bytes are a heap copy of what a write did not take (at most one
 * chunk), counted in the loop's budget.  When the budget could not take
 * one more chunk, a read only peeks (MSG_PEEK) and what the write took is
 * then dropped from the socket (MSG_TRUNC): the rest stays in the kernel,
 * and nothing is pending.
 *
 *   peek source ──> write destination ──> take what went from the source
 *                         │
 *                         └─ short write: stop reading, wait, read on
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "pool.h"
#include "tunnel.h"

#define TUNNEL_FAIR_SHARE	4		/* chunks per wake-up */

struct tunnel_dir {
	struct tunnel	*t;
	int		 src, dst;
	struct event	*rd;		/* the source is readable */
	struct event	*wr;		/* the destination is writable */
	uint8_t		*pend;		/* what the destination did not take */
	size_t		 pend_len, pend_off;
	uint64_t	 moved;		/* read from the source */
	int		 eof;		/* the source said FIN */
	int		 shut;		/* the FIN was passed on */
};

struct tunnel {
	struct tunnel_dir	 d[2];		/* TUNNEL_UP, TUNNEL_DOWN */
	struct pool		*pool;		/* where t is from */
	struct event_base	*base;
	uint8_t			*scratch;
	size_t			 chunk;
	struct tunnel_budget	*budget;
	struct timeval		*last_io;
	tunnel_cb		 cb;
	void			*arg;
};

/* Its four events live just past the struct, in the same pool object. */
#define TUNNEL_EV_OFF	POOL_PAST(struct tunnel)
#define TUNNEL_EV(t, k)	((struct event *)((uint8_t *)(t) + TUNNEL_EV_OFF + \
			    (k) * event_get_struct_event_size()))

static void	tunnel_read_cb(evutil_socket_t, short, void *);
static void	dir_drop(struct tunnel_dir *);
static void	tunnel_write_cb(evutil_socket_t, short, void *);

size_t
tunnel_size(void)
{
	return TUNNEL_EV_OFF + 4 * event_get_struct_event_size();
}

struct tunnel *
tunnel_new(struct pool *pool, struct event_base *base, int client, int up,
    uint8_t *scratch, size_t chunk, struct tunnel_budget *budget,
    struct timeval *last_io, tunnel_cb cb, void *arg)
{
	struct tunnel *t;
	int i;

	if ((t = pool_get(pool)) == NULL)
		return NULL;
	t->pool = pool;
	t->base = base;
	t->scratch = scratch;
	t->chunk = chunk;
	t->budget = budget;
	t->last_io = last_io;
	t->cb = cb;
	t->arg = arg;
	t->d[TUNNEL_UP].src = client;
	t->d[TUNNEL_UP].dst = up;
	t->d[TUNNEL_DOWN].src = up;
	t->d[TUNNEL_DOWN].dst = client;
	for (i = 0; i < 2; i++) {
		struct tunnel_dir *d = &t->d[i];

		d->t = t;
		d->rd = TUNNEL_EV(t, 2 * i);
		d->wr = TUNNEL_EV(t, 2 * i + 1);
		if (event_assign(d->rd, base, d->src, EV_READ | EV_PERSIST,
		    tunnel_read_cb, d) != 0)
			d->rd = NULL;
		if (event_assign(d->wr, base, d->dst, EV_WRITE,
		    tunnel_write_cb, d) != 0)
			d->wr = NULL;
		if (d->rd == NULL || d->wr == NULL) {
			/* The sockets are still the caller's. */
			t->d[0].src = t->d[0].dst = -1;
			t->d[1].src = t->d[1].dst = -1;
			tunnel_free(t);
			return NULL;
		}
	}
	return t;
}

void
tunnel_free(struct tunnel *t)
{
	int i;

	if (t == NULL)
		return;
	for (i = 0; i < 2; i++) {
		struct tunnel_dir *d = &t->d[i];

		/* In t's own memory: nothing to free. */
		if (d->rd != NULL)
			event_del(d->rd);
		if (d->wr != NULL)
			event_del(d->wr);
		dir_drop(d);
	}
	/* Each socket is the source of one direction. */
	if (t->d[TUNNEL_UP].src != -1)
		close(t->d[TUNNEL_UP].src);
	if (t->d[TUNNEL_DOWN].src != -1)
		close(t->d[TUNNEL_DOWN].src);
	pool_put(t->pool, t);
}

uint64_t
tunnel_moved(const struct tunnel *t, int dir)
{
	return t->d[dir].moved;
}

static void
tunnel_touch(struct tunnel *t)
{
	event_base_gettimeofday_cached(t->base, t->last_io);
}

/* Ends the tunnel: the callback frees it, so nothing may touch it after. */
static void
tunnel_end(struct tunnel *t, int error)
{
	t->cb(t, error, t->arg);
}

/* Frees what is pending, and gives it back to the budget. */
static void
dir_drop(struct tunnel_dir *d)
{
	if (d->pend == NULL)
		return;
	d->t->budget->held -= d->pend_len;
	free(d->pend);
	d->pend = NULL;
	d->pend_len = d->pend_off = 0;
}

/*
 * Writes what is pending towards the destination: 0 when all of it went,
 * 1 when some is left (the destination is full), -1 on an error (errno).
 */
static int
dir_flush(struct tunnel_dir *d)
{
	ssize_t n;

	while (d->pend_off < d->pend_len) {
		n = send(d->dst, d->pend + d->pend_off,
		    d->pend_len - d->pend_off, MSG_NOSIGNAL);
		if (n > 0) {
			d->pend_off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 1;
		if (n == 0)
			errno = EPIPE;
		return -1;
	}
	dir_drop(d);
	return 0;
}

/* Keeps what a write did not take; -1 when there is no memory for it. */
static int
dir_keep(struct tunnel_dir *d, const uint8_t *buf, size_t len)
{
	if ((d->pend = malloc(len)) == NULL)
		return -1;
	memcpy(d->pend, buf, len);
	d->pend_len = len;
	d->pend_off = 0;
	d->t->budget->held += len;
	return 0;
}

/*
 * The destination is full: stop reading the source until it took what is
 * pending.  -1 when the write event cannot be armed.
 */
static int
dir_wait(struct tunnel_dir *d)
{
	event_del(d->rd);
	return event_add(d->wr, NULL);
}

/*
 * Passes a FIN on once nothing is pending; 1 when both sides are done.
 * The last FIN is left to close(2), which follows at once and sends it
 * all the same (both sockets have been read to their end, so close sends
 * no reset): one shutdown(2) a tunnel less.
 */
static int
dir_shut(struct tunnel_dir *d)
{
	struct tunnel *t = d->t;
	struct tunnel_dir *other = &t->d[d == &t->d[0] ? 1 : 0];

	if (!d->shut && d->pend == NULL) {
		/* ENOTCONN after a reset: the read side will report it. */
		if (!other->shut)
			(void)shutdown(d->dst, SHUT_WR);
		d->shut = 1;
	}
	return t->d[0].shut && t->d[1].shut;
}

static void
tunnel_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct tunnel_dir *d = arg;
	struct tunnel *t = d->t;
	ssize_t n, w, k;
	int i;

	(void)fd;
	(void)what;
	for (i = 0; i < TUNNEL_FAIR_SHARE; i++) {
		/* No room to keep a chunk: hold nothing (see above). */
		int peek = t->budget->held + t->chunk > t->budget->max;

		n = recv(d->src, t->scratch, t->chunk, peek ? MSG_PEEK : 0);
		if (n == 0) {
			d->eof = 1;
			event_del(d->rd);
			if (dir_shut(d))
				tunnel_end(t, 0);
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			tunnel_end(t, errno);
			return;
		}
		tunnel_touch(t);
		w = send(d->dst, t->scratch, (size_t)n, MSG_NOSIGNAL);
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			w = 0;
		if (w < 0) {
			tunnel_end(t, errno);
			return;
		}
		if (peek) {
			/* What went leaves the socket; the rest waits there. */
			if (w > 0 && (k = recv(d->src, NULL, (size_t)w,
			    MSG_TRUNC)) != w) {
				tunnel_end(t, k < 0 ? errno : EIO);
				return;
			}
			d->moved += (uint64_t)w;
			if (w < n) {
				if (dir_wait(d) != 0)
					tunnel_end(t, ENOMEM);
				return;
			}
			if ((size_t)n < t->chunk)
				break;
			continue;
		}
		d->moved += (uint64_t)n;
		if (w < n) {
			if (dir_keep(d, t->scratch + w, (size_t)(n - w)) != 0 ||
			    dir_wait(d) != 0)
				tunnel_end(t, ENOMEM);
			return;
		}
		if ((size_t)n < t->chunk)
			break;		/* the source is empty for now */
	}
}

static void
tunnel_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct tunnel_dir *d = arg;
	struct tunnel *t = d->t;
	int r;

	(void)fd;
	(void)what;
	if ((r = dir_flush(d)) < 0) {
		tunnel_end(t, errno);
		return;
	}
	if (r > 0) {
		if (event_add(d->wr, NULL) != 0)
			tunnel_end(t, ENOMEM);
		return;
	}
	tunnel_touch(t);
	if (d->eof) {
		if (dir_shut(d))
			tunnel_end(t, 0);
		return;
	}
	if (event_add(d->rd, NULL) != 0)
		tunnel_end(t, ENOMEM);
}

/* Takes what `from` holds as this direction's pending bytes. */
static int
dir_take(struct tunnel_dir *d, struct evbuffer *from)
{
	size_t len = from != NULL ? evbuffer_get_length(from) : 0;

	if (len == 0)
		return 0;
	if ((d->pend = malloc(len)) == NULL)
		return -1;
	if (evbuffer_remove(from, d->pend, len) != (int)len) {
		free(d->pend);
		d->pend = NULL;
		return -1;
	}
	d->pend_len = len;
	d->pend_off = 0;
	d->t->budget->held += len;
	return 0;
}

int
tunnel_start(struct tunnel *t, struct evbuffer *to_up,
    struct evbuffer *to_client)
{
	struct evbuffer *owed[2] = { to_up, to_client };
	int i, r;

	for (i = 0; i < 2; i++) {
		struct tunnel_dir *d = &t->d[i];

		if (dir_take(d, owed[i]) != 0) {
			errno = ENOMEM;
			return -1;
		}
		/* Owed bytes go at once: the peer is likely waiting. */
		if ((r = dir_flush(d)) < 0)
			return -1;
		if (r > 0) {
			if (event_add(d->wr, NULL) != 0) {
				errno = ENOMEM;
				return -1;
			}
		} else if (event_add(d->rd, NULL) != 0) {
			errno = ENOMEM;
			return -1;
		}
	}
	tunnel_touch(t);
	return 0;
}
