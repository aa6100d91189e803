/*
 * evio.c — the fast paths past a socket bufferevent (see evio.h for the
 * libevent behaviour they rely on).
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

#include <stddef.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "evio.h"

size_t
evio_read_now(struct bufferevent *bev, size_t want)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_iovec v;
	ssize_t n;
	int r;

	/* The bufferevent keeps its input's end frozen: only it adds there. */
	evbuffer_unfreeze(in, 0);
	if (evbuffer_reserve_space(in, (ev_ssize_t)want, &v, 1) != 1) {
		evbuffer_freeze(in, 0);
		return 0;
	}
	if (v.iov_len > want)
		v.iov_len = want;
	n = recv(bufferevent_getfd(bev), v.iov_base, v.iov_len, 0);
	if (n > 0)
		v.iov_len = (size_t)n;
	r = n > 0 ? evbuffer_commit_space(in, &v, 1) : -1;
	evbuffer_freeze(in, 0);
	return r == 0 ? (size_t)n : 0;
}

int
evio_write_now(struct bufferevent *bev, const void *text, size_t len,
    struct evbuffer *stage)
{
	struct evbuffer *out = bufferevent_get_output(bev);
	ssize_t n = 0;

	if (text != NULL) {
		if (evbuffer_get_length(out) == 0 &&
		    (n = send(bufferevent_getfd(bev), text, len,
		    MSG_NOSIGNAL)) < 0)
			n = 0;
		if ((size_t)n == len)
			return 0;
		return evbuffer_add(out, (const char *)text + n,
		    len - (size_t)n);
	}
	if (evbuffer_get_length(stage) > 0 && evbuffer_get_length(out) == 0)
		(void)evbuffer_write(stage, bufferevent_getfd(bev));
	if (evbuffer_get_length(stage) == 0)
		return 0;
	return evbuffer_add_buffer(out, stage);
}

int
evio_take_output(struct bufferevent *bev, struct evbuffer *to)
{
	/* Its front is frozen (only the bufferevent drains it): thawed for good. */
	evbuffer_unfreeze(bufferevent_get_output(bev), 1);
	return evbuffer_add_buffer(to, bufferevent_get_output(bev));
}
