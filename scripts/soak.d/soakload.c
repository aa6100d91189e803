/*
 * soakload.c — the HTTP load of `scripts/soak`: absolute-form GETs through
 * the proxy, keep-alive, counted exactly.
 *
 *   soakload http PROXY_ADDR:PORT HOST:PORT PATH COUNT THREADS PER_CONN SECONDS
 *       THREADS threads, each with one connection to the proxy at a time:
 *       PER_CONN requests "GET http://HOST:PORT/PATH" on it, then a new
 *       connection; COUNT requests in all (or SECONDS, or 100 errors).  A
 *       request is answered when its status is 200 and its Content-Length
 *       body arrived whole.  Prints
 *         requests=N answered=N errors=E connections=C seconds=S rate=R
 *       where requests counts those sent.
 *
 * One file, no dependencies: scripts/soak builds it with `cc -O2 -pthread`
 * and runs it inside the soak's network namespace only.  The proxy's
 * address must be a numeric IPv4 address; HOST:PORT goes to the proxy as
 * text.  Every socket wait is bounded (IO_TIMEOUT).
 */
#define _GNU_SOURCE
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TOOL_NAME	"soakload"
#define TOOL_EXIT	2
#include "../toolutil.h"

#define IO_TIMEOUT	10	/* seconds, every read and write */
#define HEAD_MAX	8192
#define BODY_MAX	(1 << 20)
#define THREADS_MAX	64
#define ERRORS_MAX	100

static struct sockaddr_in proxy_sin;
static char request[1024];
static size_t request_len;
static long count, per_conn;
static double deadline;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long sent, answered, errors, connections;
static char first_error[256];

static void
note_error(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&lock);
	if (errors++ == 0) {
		va_start(ap, fmt);
		vsnprintf(first_error, sizeof(first_error), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&lock);
}

/* Takes one request off the total; 0 when there is none left. */
static int
take(void)
{
	int ok;

	pthread_mutex_lock(&lock);
	ok = sent < count && errors < ERRORS_MAX && now() < deadline;
	if (ok)
		sent++;
	pthread_mutex_unlock(&lock);
	return ok;
}

static int
open_conn(void)
{
	struct timeval tv = { IO_TIMEOUT, 0 };
	int fd, one = 1;

	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&proxy_sin, sizeof(proxy_sin)) == -1) {
		close(fd);
		return -1;
	}
	pthread_mutex_lock(&lock);
	connections++;
	pthread_mutex_unlock(&lock);
	return fd;
}

/*
 * One request and its answer on fd.  `buf` keeps what followed the answer
 * (*have bytes).  Returns 1 answered (keep-alive), 0 answered and the
 * proxy closes, -1 failed.
 */
static int
exchange(int fd, char *buf, size_t *have)
{
	char *end, *p;
	size_t off = 0, headlen, need;
	long clen = -1;
	ssize_t n;
	int keep = 1;

	while (off < request_len) {
		if ((n = write(fd, request + off, request_len - off)) <= 0) {
			note_error("write: %s", n == 0 ? "closed" : strerror(errno));
			return -1;
		}
		off += (size_t)n;
	}
	for (;;) {
		buf[*have] = '\0';
		if ((end = strstr(buf, "\r\n\r\n")) != NULL)
			break;
		if (*have >= HEAD_MAX) {
			note_error("answer head longer than %d bytes", HEAD_MAX);
			return -1;
		}
		if ((n = read(fd, buf + *have, HEAD_MAX - *have)) <= 0) {
			note_error("reading the head: %s", n == 0 ? "closed" :
			    strerror(errno));
			return -1;
		}
		*have += (size_t)n;
	}
	headlen = (size_t)(end - buf) + 4;
	if (strncmp(buf, "HTTP/1.1 200 ", 13) != 0) {
		note_error("answer: %.60s", buf);
		return -1;
	}
	for (p = buf; p < end; p++) {
		if (*p != '\n')
			continue;
		if (strncasecmp(p + 1, "content-length:", 15) == 0)
			clen = strtol(p + 16, NULL, 10);
		else if (strncasecmp(p + 1, "connection: close", 17) == 0)
			keep = 0;
	}
	if (clen < 0 || clen > BODY_MAX) {
		note_error("answer without a usable Content-Length");
		return -1;
	}
	need = headlen + (size_t)clen;
	if (*have >= need) {
		memmove(buf, buf + need, *have - need);
		*have -= need;
	} else {
		size_t left = need - *have;
		char sink[16384];

		/* the rest of the body is not kept: only counted */
		*have = 0;
		while (left > 0) {
			if ((n = read(fd, sink, left < sizeof(sink) ? left :
			    sizeof(sink))) <= 0) {
				note_error("body cut: %s", n == 0 ? "closed" :
				    strerror(errno));
				return -1;
			}
			left -= (size_t)n;
		}
	}
	pthread_mutex_lock(&lock);
	answered++;
	pthread_mutex_unlock(&lock);
	return keep;
}

static void *
worker(void *arg)
{
	char *buf;
	size_t have;
	long i;
	int fd, r;

	(void)arg;
	if ((buf = malloc(HEAD_MAX + 1)) == NULL)
		die("out of memory");
	while (take()) {
		if ((fd = open_conn()) == -1) {
			note_error("connect: %s", strerror(errno));
			continue;
		}
		have = 0;
		r = exchange(fd, buf, &have);
		for (i = 1; r == 1 && i < per_conn && take(); i++)
			r = exchange(fd, buf, &have);
		close(fd);
	}
	free(buf);
	return NULL;
}

int
main(int argc, char **argv)
{
	pthread_t th[THREADS_MAX];
	char host[256];
	const char *colon;
	double t0, t;
	int threads, i;
	size_t n;

	if (argc != 9 || strcmp(argv[1], "http") != 0)
		die("usage: soakload http PROXY_ADDR:PORT HOST:PORT PATH COUNT "
		    "THREADS PER_CONN SECONDS");
	if ((colon = strrchr(argv[2], ':')) == NULL ||
	    (n = (size_t)(colon - argv[2])) == 0 || n >= sizeof(host))
		die("'%s' is not ADDR:PORT", argv[2]);
	memcpy(host, argv[2], n);
	host[n] = '\0';
	memset(&proxy_sin, 0, sizeof(proxy_sin));
	proxy_sin.sin_family = AF_INET;
	proxy_sin.sin_port = htons((uint16_t)num(colon + 1, 1, 65535));
	if (inet_pton(AF_INET, host, &proxy_sin.sin_addr) != 1)
		die("'%s' is not an IPv4 address", host);
	if (argv[4][0] != '/')
		die("PATH must start with /");
	request_len = (size_t)snprintf(request, sizeof(request),
	    "GET http://%s%s HTTP/1.1\r\nHost: %s\r\n\r\n", argv[3], argv[4],
	    argv[3]);
	if (request_len >= sizeof(request))
		die("HOST:PORT and PATH are too long");
	count = num(argv[5], 1, 100000000);
	threads = (int)num(argv[6], 1, THREADS_MAX);
	per_conn = num(argv[7], 1, 1000000);
	t0 = now();
	deadline = t0 + (double)num(argv[8], 1, 3600);
	for (i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, worker, NULL) != 0)
			die("cannot start a thread");
	for (i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	t = now() - t0;
	printf("requests=%ld answered=%ld errors=%ld connections=%ld "
	    "seconds=%.3f rate=%.1f\n", sent, answered, errors, connections, t,
	    (double)answered / t);
	if (errors > 0)
		fprintf(stderr, "soakload: %ld errors; first: %s\n", errors,
		    first_error);
	return errors == 0 && answered == count ? 0 : 1;
}
