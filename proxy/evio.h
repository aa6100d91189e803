/*
 * evio.h — the proxy's fast paths past a socket bufferevent, and the
 * libevent behaviour they rely on, in one place (evio.c).
 *
 * The contract, as libevent 2.1 keeps it (checked by t/unit/test-evio
 * against the installed library; configure takes 2.1 only):
 *
 *  - A socket bufferevent freezes the end of its input (only it adds
 *    there) and the front of its output (only it drains there).  Code that
 *    adds to the input or takes from the output itself thaws that side for
 *    the moment and freezes it again.
 *  - Adding to a bufferevent's output arms its write event (an epoll_ctl(2)
 *    when the socket was not watched for writing) and the write happens on
 *    the loop's next pass; the event is disarmed once the output is empty.
 *    Writing to the socket first, and adding only what it did not take,
 *    avoids both and the pass.
 *  - A read callback run by hand after adding to the input sees the bytes
 *    as it would have after a read by libevent.
 */
#ifndef INTUTIC_EVIO_H
#define INTUTIC_EVIO_H

#include <stddef.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

/*
 * Reads at most `want` bytes from bev's socket straight into its input,
 * without waiting for the loop.  Returns the bytes read (the caller runs
 * the read callback), or 0 when there was nothing, the end, an error or
 * no memory: all left to the read event, which sees them as it would have.
 */
size_t	 evio_read_now(struct bufferevent *bev, size_t want);

/*
 * Sends `len` bytes at `text` (or, text NULL, what `stage` holds, which is
 * emptied) to bev's socket now when nothing waits in its output, and gives
 * what the socket does not take (or everything, when something waits) to
 * bev's output.  A socket error is left to the bufferevent, which reports
 * it.  Returns -1 when out of memory, else 0.
 */
int	 evio_write_now(struct bufferevent *bev, const void *text, size_t len,
	    struct evbuffer *stage);

/*
 * Moves what bev's output still holds (unsent) to the end of `to`: the
 * sockets change hands (a tunnel takes them).  Returns -1 when out of
 * memory.
 */
int	 evio_take_output(struct bufferevent *bev, struct evbuffer *to);

#endif /* INTUTIC_EVIO_H */
