/*
 * test-evio.c — proxy/evio.c against the installed libevent: the contract
 * evio.h writes down (a socket bufferevent's input end and output front
 * frozen; bytes added by hand seen as libevent's own), the first read
 * straight into the input, a write now (all taken, a short write, behind
 * queued bytes, from a stage), and the output taken over with its unsent
 * bytes.  Over a socketpair; the loop is run only where a test says.
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "evio.h"
#include "tap.h"

#define BIG	(1024 * 1024)	/* more than a socket takes at once */

static struct event_base *base;
static int reads;		/* read callbacks the loop ran */

static void
read_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	(void)arg;
	reads++;
}

/* A bufferevent on one end of a new socketpair; the other end in *peer. */
static struct bufferevent *
pair(int *peer)
{
	struct bufferevent *bev;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
		return NULL;
	*peer = sv[1];
	bev = bufferevent_socket_new(base, sv[0], BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL)
		return NULL;
	bufferevent_setcb(bev, read_cb, NULL, NULL, NULL);
	bufferevent_enable(bev, EV_READ);
	return bev;
}

/* What the peer can read now, at most len bytes, into buf; its count. */
static size_t
peer_read(int peer, char *buf, size_t len)
{
	ssize_t n;
	size_t got = 0;

	while (got < len && (n = recv(peer, buf + got, len - got,
	    MSG_DONTWAIT)) > 0)
		got += (size_t)n;
	return got;
}

static void
test_contract(void)
{
	struct bufferevent *bev;
	int peer;

	if ((bev = pair(&peer)) == NULL) {
		tap_ok(0, "a socket bufferevent (%s)", strerror(errno));
		return;
	}
	tap_ok(evbuffer_add(bufferevent_get_input(bev), "x", 1) == -1,
	    "contract: the input's end is frozen (only the bufferevent adds)");
	bufferevent_write(bev, "abc", 3);
	tap_ok(evbuffer_drain(bufferevent_get_output(bev), 1) == -1,
	    "contract: the output's front is frozen (only it drains)");
	tap_is_int((long long)evbuffer_get_length(bufferevent_get_output(bev)),
	    3, "contract: a write waits for the loop");
	bufferevent_free(bev);
	close(peer);
}

static void
test_read_now(void)
{
	struct bufferevent *bev;
	struct evbuffer *in;
	char buf[16];
	int peer;

	if ((bev = pair(&peer)) == NULL) {
		tap_ok(0, "a socket bufferevent");
		return;
	}
	in = bufferevent_get_input(bev);
	tap_is_int((long long)evio_read_now(bev, 64), 0,
	    "read now: nothing there, nothing read");
	(void)send(peer, "hello, proxy", 12, 0);
	tap_is_int((long long)evio_read_now(bev, 5), 5,
	    "read now: at most what was asked");
	tap_is_int((long long)evio_read_now(bev, 64), 7,
	    "read now: the rest");
	tap_is_int((long long)evbuffer_copyout(in, buf, sizeof(buf)), 12,
	    "read now: all of it in the input");
	tap_ok(memcmp(buf, "hello, proxy", 12) == 0, "read now: in order");
	tap_ok(evbuffer_add(in, "x", 1) == -1,
	    "read now: the input's end is frozen again");
	reads = 0;
	(void)send(peer, "!", 1, 0);
	event_base_loop(base, EVLOOP_NONBLOCK);
	tap_ok(reads == 1 && evbuffer_get_length(in) == 13,
	    "read now: the bufferevent reads on as before");
	bufferevent_free(bev);
	close(peer);
}

static void
test_write_now(void)
{
	struct bufferevent *bev;
	struct evbuffer *stage, *out;
	char buf[64], *big, *back;
	size_t got, queued, i;
	int peer, n, sz = 4096;

	if ((bev = pair(&peer)) == NULL ||
	    (stage = evbuffer_new()) == NULL) {
		tap_ok(0, "a socket bufferevent and a stage");
		return;
	}
	out = bufferevent_get_output(bev);
	tap_ok(evio_write_now(bev, "200 ok", 6, NULL) == 0 &&
	    evbuffer_get_length(out) == 0,
	    "write now: all taken at once, nothing queued");
	tap_ok(peer_read(peer, buf, sizeof(buf)) == 6 &&
	    memcmp(buf, "200 ok", 6) == 0,
	    "write now: the peer has it before any loop pass");

	evbuffer_add(stage, "staged", 6);
	tap_ok(evio_write_now(bev, NULL, 0, stage) == 0 &&
	    evbuffer_get_length(stage) == 0 && evbuffer_get_length(out) == 0,
	    "write now from a stage: the stage emptied, nothing queued");
	tap_ok(peer_read(peer, buf, sizeof(buf)) == 6 &&
	    memcmp(buf, "staged", 6) == 0, "write now from a stage: sent");

	bufferevent_write(bev, "A", 1);
	tap_ok(evio_write_now(bev, "B", 1, NULL) == 0 &&
	    evbuffer_get_length(out) == 2 && peer_read(peer, buf, 1) == 0,
	    "write now behind queued bytes: queued after them, not sent");
	for (i = 0; i < 10 && evbuffer_get_length(out) > 0; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
	tap_ok(peer_read(peer, buf, sizeof(buf)) == 2 &&
	    memcmp(buf, "AB", 2) == 0, "write now behind queued bytes: "
	    "the loop sends them in order");

	/* A short write: the rest waits in the output, in order. */
	(void)setsockopt(bufferevent_getfd(bev), SOL_SOCKET, SO_SNDBUF, &sz,
	    sizeof(sz));
	big = malloc(BIG);
	back = malloc(BIG);
	if (big == NULL || back == NULL) {
		tap_ok(0, "memory for the short write");
		free(big);
		free(back);
		return;
	}
	for (i = 0; i < BIG; i++)
		big[i] = (char)(i * 7 + i / 251);
	n = evio_write_now(bev, big, BIG, NULL);
	queued = evbuffer_get_length(out);
	tap_ok(n == 0 && queued > 0 && queued < BIG,
	    "write now, short: what the socket did not take is queued (%zu)",
	    queued);
	got = peer_read(peer, back, BIG);
	for (i = 0; i < 1000 && got < BIG; i++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		got += peer_read(peer, back + got, BIG - got);
	}
	tap_ok(got == BIG && memcmp(big, back, BIG) == 0,
	    "write now, short: the peer gets all of it, in order");

	/* The output taken over, unsent bytes and all. */
	bufferevent_write(bev, "unsent", 6);
	evbuffer_drain(stage, evbuffer_get_length(stage));
	tap_ok(evio_take_output(bev, stage) == 0 &&
	    evbuffer_get_length(out) == 0 && evbuffer_get_length(stage) == 6,
	    "take output: its unsent bytes move, the output is empty");
	tap_ok(evbuffer_copyout(stage, buf, 6) == 6 &&
	    memcmp(buf, "unsent", 6) == 0, "take output: the same bytes");
	free(big);
	free(back);
	evbuffer_free(stage);
	bufferevent_free(bev);
	close(peer);
}

int
main(void)
{
	if ((base = event_base_new()) == NULL)
		tap_skip_all("no event base: %s", strerror(errno));
	test_contract();
	test_read_now();
	test_write_now();
	event_base_free(base);
	libevent_global_shutdown();
	return tap_done();
}
