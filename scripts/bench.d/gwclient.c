/*
 * gwclient.c — the client of `scripts/bench gateway`: streamed Anthropic
 * Messages calls to the provider double (t/helpers/provider.py), either
 * straight to it over TLS or in plain HTTP to intutic-proxy's provider
 * gateway, on one keep-alive connection, timed as they arrive.
 *
 *   gwclient ttfb WAY ADDR:PORT HOST PATH CALLS
 *       one call not counted (the connection, its TLS handshake and, through
 *       the gateway, the proxy's connection to the provider), then CALLS
 *       calls of the normal answer (model claude-bench, 14 events), one
 *       after the other on the same connection; a line a call:
 *       "call I TTFB_US FIRST_EVENT_US TOTAL_US", microseconds from the
 *       request written to the first byte of the answer read, to the end of
 *       its first event, and to its last byte.
 *   gwclient events WAY ADDR:PORT HOST PATH EVENTS ID
 *       one call not counted, then one of model test-long with x-test-events:
 *       EVENTS and x-bench-id: ID (the double's log keeps the headers: the
 *       record of this call is found by it); a line an event received:
 *       "event I T", T the wall clock (CLOCK_REALTIME, as the double's
 *       time.time()) when the read that completed it returned.
 *   gwclient bulk WAY ADDR:PORT HOST PATH EVENTS
 *       one call not counted, then one of test-long with EVENTS events, as
 *       fast as they come; "done events=E bytes=B secs=S cpu_ms=C": the
 *       events' bytes (the body as the double framed it, the chunked
 *       framing not counted), the seconds from the request written to the
 *       answer's last byte, and this process's CPU time over them.
 *
 * WAY says how the client speaks:
 *   tls         TLS to ADDR:PORT (OpenSSL, TLS 1.2 or later), the
 *               certificate checked against GWCLIENT_CA (a file) and HOST
 *               without its port, which is also the SNI;
 *   plain       plain HTTP to ADDR:PORT (the gateway);
 *   plain-cost  plain HTTP, and every read's bytes are then encrypted with
 *               AES-256-GCM in 16 KiB records (a key and IV made up, a tag
 *               each), which is about what a TLS client spends to decrypt
 *               them: the gateway's figures with the client's cost of the
 *               direct way added back, so that only the proxy differs.
 * The request: POST PATH, Host: HOST, x-api-key, anthropic-version,
 * content-type and content-length, a body with stream true.  The answer
 * must be a 200 with a chunked body (a Content-Length one is read too);
 * its events are counted at each blank line of the decoded body ("\n\n",
 * as the double ends an event).
 *
 * Every wait is bounded (IO_TIMEOUT a read or write); any error is fatal.
 * Errors go to stderr.
 */
#define _GNU_SOURCE
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#define TOOL_NAME	"gwclient"
#define TOOL_EXIT	1
#include "../toolutil.h"

#define IO_TIMEOUT	30		/* seconds, one read or write */
#define READ_MAX	(64 * 1024)	/* one read */
#define HEAD_MAX	8192		/* the answer's head */
#define REQ_MAX		2048		/* the request */
#define CALLS_MAX	1000000
#define EVENTS_MAX	1000000		/* the double's LONG_EVENTS_MAX */
#define EVENTS_SLACK	16		/* the events around the deltas */
#define RECORD_MAX	16384		/* a TLS record's plaintext */
#define CHUNK_SIZE_MAX	((uint64_t)1 << 40)

enum way {
	WAY_TLS,
	WAY_PLAIN,
	WAY_PLAIN_COST
};

struct client {
	enum way	 way;
	int		 fd;
	SSL_CTX		*ctx;
	SSL		*ssl;
	EVP_CIPHER_CTX	*aead;		/* WAY_PLAIN_COST */
	EVP_CIPHER	*cipher;
	unsigned char	 key[32], iv[12];
	unsigned char	 scratch[RECORD_MAX + 64];
	const char	*host;		/* the Host header */
	const char	*path;
};

/* The decoding of one answer, as its bytes come. */
enum body_state {
	BODY_HEAD,		/* the head, to its blank line */
	BODY_LENGTH,		/* a Content-Length body */
	BODY_SIZE,		/* a chunk-size line */
	BODY_EXT,		/* the rest of that line */
	BODY_DATA,		/* a chunk's bytes */
	BODY_DATA_END,		/* the CRLF after them */
	BODY_TRAILER,		/* the start of a trailer line (or the end) */
	BODY_TRAILER_LINE,	/* the rest of one */
	BODY_DONE
};

struct answer {
	enum body_state	 state;
	char		 head[HEAD_MAX];
	size_t		 headlen;
	uint64_t	 left;		/* of the chunk or the body */
	int		 chunk_digits;
	char		 last;		/* the body's last byte so far */
	uint64_t	 body_bytes;
	long		 events;
	/* when each event was complete: the first times_max of them */
	double		*times;
	long		 times_max;
	double		 t_first_event;
};

static struct timeval io_timeout = { IO_TIMEOUT, 0 };

static double
wallclock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double
cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) == -1)
		die("getrusage: %s", strerror(errno));
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	    (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static const char *
ssl_error(void)
{
	static char buf[256];
	unsigned long e = ERR_get_error();

	if (e == 0)
		return errno != 0 ? strerror(errno) : "unknown error";
	ERR_error_string_n(e, buf, sizeof(buf));
	return buf;
}

static void
client_connect(struct client *c, const char *addr)
{
	char host[256], name[256];
	const char *colon = strrchr(addr, ':'), *hc;
	struct sockaddr_in sin;
	const char *ca;
	size_t n;
	int one = 1;

	if (colon == NULL || (n = (size_t)(colon - addr)) == 0 ||
	    n >= sizeof(host))
		die("'%s' is not ADDR:PORT", addr);
	memcpy(host, addr, n);
	host[n] = '\0';
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)num(colon + 1, 1, 65535));
	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1)
		die("'%s' is not an IPv4 address", host);
	if ((c->fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		die("socket: %s", strerror(errno));
	if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &io_timeout,
	    sizeof(io_timeout)) == -1 ||
	    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &io_timeout,
	    sizeof(io_timeout)) == -1 ||
	    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one,
	    sizeof(one)) == -1)
		die("setsockopt: %s", strerror(errno));
	if (connect(c->fd, (struct sockaddr *)&sin, sizeof(sin)) == -1)
		die("cannot connect to %s: %s", addr, strerror(errno));
	if (c->way == WAY_PLAIN_COST) {
		/* the key set once, as a TLS session's is */
		memset(c->key, 0x5a, sizeof(c->key));
		memset(c->iv, 0xa5, sizeof(c->iv));
		if ((c->aead = EVP_CIPHER_CTX_new()) == NULL ||
		    (c->cipher = EVP_CIPHER_fetch(NULL, "AES-256-GCM",
		    NULL)) == NULL ||
		    EVP_EncryptInit_ex(c->aead, c->cipher, NULL, c->key,
		    c->iv) != 1)
			die("AES-256-GCM: cannot set up: %s", ssl_error());
	}
	if (c->way != WAY_TLS)
		return;

	if ((ca = getenv("GWCLIENT_CA")) == NULL)
		die("tls: GWCLIENT_CA (the CA file) is not set");
	/* the name to check: HOST without its port */
	if ((hc = strrchr(c->host, ':')) == NULL)
		hc = c->host + strlen(c->host);
	n = (size_t)(hc - c->host);
	if (n == 0 || n >= sizeof(name))
		die("'%s' is no host name", c->host);
	memcpy(name, c->host, n);
	name[n] = '\0';
	if ((c->ctx = SSL_CTX_new(TLS_client_method())) == NULL ||
	    SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_load_verify_locations(c->ctx, ca, NULL) != 1)
		die("tls: cannot set up (CA '%s'): %s", ca, ssl_error());
	SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
	if ((c->ssl = SSL_new(c->ctx)) == NULL ||
	    SSL_set_tlsext_host_name(c->ssl, name) != 1 ||
	    SSL_set1_host(c->ssl, name) != 1 ||
	    SSL_set_fd(c->ssl, c->fd) != 1)
		die("tls: cannot set up: %s", ssl_error());
	if (SSL_connect(c->ssl) != 1)
		die("tls: handshake with %s (%s) failed: %s", addr, name,
		    ssl_error());
	fprintf(stderr, "gwclient: %s %s with %s\n", SSL_get_version(c->ssl),
	    SSL_get_cipher_name(c->ssl), name);
}

static void
client_write(struct client *c, const char *p, size_t len)
{
	ssize_t n;
	int r;

	while (len > 0) {
		if (c->way == WAY_TLS) {
			if ((r = SSL_write(c->ssl, p, (int)len)) <= 0)
				die("tls: write: %s", ssl_error());
			n = r;
		} else if ((n = write(c->fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			die("write: %s", strerror(errno));
		}
		p += n;
		len -= (size_t)n;
	}
}

/*
 * What a TLS client spends on n bytes it reads, roughly: AES-256-GCM over
 * each record's worth with the session's key, a nonce and a tag each.
 */
static void
client_cost(struct client *c, const unsigned char *p, size_t n)
{
	size_t k;
	int outl;

	while (n > 0) {
		k = n < RECORD_MAX ? n : RECORD_MAX;
		c->iv[11]++;
		if (EVP_EncryptInit_ex(c->aead, NULL, NULL, NULL, c->iv) != 1 ||
		    EVP_EncryptUpdate(c->aead, c->scratch, &outl, p,
		    (int)k) != 1 ||
		    EVP_EncryptFinal_ex(c->aead, c->scratch + outl, &outl) != 1 ||
		    EVP_CIPHER_CTX_ctrl(c->aead, EVP_CTRL_GCM_GET_TAG, 16,
		    c->scratch) != 1)
			die("AES-256-GCM failed");
		p += k;
		n -= k;
	}
}

/* Reads what is there (at least a byte); EOF and errors are fatal. */
static size_t
client_read(struct client *c, char *buf, size_t size)
{
	ssize_t n;
	int r;

	if (c->way == WAY_TLS) {
		if ((r = SSL_read(c->ssl, buf, (int)size)) <= 0)
			die("tls: read: %s", r == 0 ? "end of stream" :
			    ssl_error());
		return (size_t)r;
	}
	for (;;) {
		if ((n = read(c->fd, buf, size)) > 0)
			break;
		if (n == -1 && errno == EINTR)
			continue;
		die("read: %s", n == 0 ? "end of stream" :
		    errno == EAGAIN ? "timed out" : strerror(errno));
	}
	if (c->way == WAY_PLAIN_COST)
		client_cost(c, (unsigned char *)buf, (size_t)n);
	return (size_t)n;
}

/*
 * The events in the body bytes p..p+n, complete at time t: each blank line
 * ("\n\n", counted once) ends one.
 */
static void
answer_body(struct answer *a, const char *p, size_t n, double t)
{
	const char *q = p, *nl, *end = p + n;
	char prev = a->last;

	a->body_bytes += n;
	while (q < end) {
		if ((nl = memchr(q, '\n', (size_t)(end - q))) == NULL) {
			prev = end[-1];
			break;
		}
		/* a '\n' before nl would have been found at q */
		if (nl == q && prev == '\n') {
			if (a->events == 0)
				a->t_first_event = t;
			if (a->events < a->times_max)
				a->times[a->events] = t;
			a->events++;
			prev = '\0';
		} else
			prev = '\n';
		q = nl + 1;
	}
	a->last = prev;
}

/* The head is complete in a->head: its status and framing. */
static void
answer_head(struct answer *a)
{
	char *h = a->head, *te, *cl, *eol;

	if (strncmp(h, "HTTP/1.1 200 ", 13) != 0) {
		eol = strchr(h, '\r');
		die("the answer is not a 200: %.*s", eol ? (int)(eol - h) : 80,
		    h);
	}
	for (te = h; (te = strcasestr(te, "\ntransfer-encoding:")) != NULL;
	    te++) {
		eol = strchr(te + 1, '\n');
		if (eol != NULL && memmem(te, (size_t)(eol - te), "chunked",
		    7) != NULL) {
			a->state = BODY_SIZE;
			a->left = 0;
			a->chunk_digits = 0;
			return;
		}
	}
	if ((cl = strcasestr(h, "\ncontent-length:")) != NULL) {
		a->left = strtoull(cl + 16, NULL, 10);
		a->state = a->left > 0 ? BODY_LENGTH : BODY_DONE;
		return;
	}
	die("the answer has neither chunks nor a length");
}

static int
hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch = tolower(ch);
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* Feeds n bytes that came at time t; 1 when the answer is complete. */
static int
answer_feed(struct answer *a, const char *p, size_t n, double t)
{
	const char *end = p + n, *hend;
	size_t k, had;
	int v;

	while (p < end && a->state != BODY_DONE) {
		switch (a->state) {
		case BODY_HEAD:
			k = (size_t)(end - p);
			if (k > sizeof(a->head) - 1 - a->headlen)
				k = sizeof(a->head) - 1 - a->headlen;
			had = a->headlen;
			memcpy(a->head + a->headlen, p, k);
			a->headlen += k;
			a->head[a->headlen] = '\0';
			if ((hend = strstr(a->head, "\r\n\r\n")) == NULL) {
				if (a->headlen == sizeof(a->head) - 1)
					die("the answer's head is over %d "
					    "bytes", HEAD_MAX);
				p += k;
				break;
			}
			p += (size_t)(hend + 4 - a->head) - had;
			a->headlen = (size_t)(hend + 4 - a->head);
			a->head[a->headlen] = '\0';
			answer_head(a);
			break;
		case BODY_LENGTH:
		case BODY_DATA:
			k = (size_t)(end - p);
			if (k > a->left)
				k = (size_t)a->left;
			answer_body(a, p, k, t);
			p += k;
			a->left -= k;
			if (a->left == 0)
				a->state = a->state == BODY_LENGTH ?
				    BODY_DONE : BODY_DATA_END;
			break;
		case BODY_DATA_END:
			if (*p++ == '\n') {
				a->state = BODY_SIZE;
				a->left = 0;
				a->chunk_digits = 0;
			}
			break;
		case BODY_SIZE:
			if ((v = hexval((unsigned char)*p)) >= 0) {
				a->left = a->left * 16 + (uint64_t)v;
				if (++a->chunk_digits > 10 ||
				    a->left > CHUNK_SIZE_MAX)
					die("a chunk size is too large");
				p++;
				break;
			}
			if (a->chunk_digits == 0)
				die("a chunk-size line without a size");
			a->state = BODY_EXT;
			/* FALLTHROUGH */
		case BODY_EXT:
			if (*p++ == '\n')
				a->state = a->left == 0 ? BODY_TRAILER :
				    BODY_DATA;
			break;
		case BODY_TRAILER:
			if (*p == '\n')
				a->state = BODY_DONE;
			else if (*p != '\r')
				a->state = BODY_TRAILER_LINE;
			p++;
			break;
		case BODY_TRAILER_LINE:
			if (*p++ == '\n')
				a->state = BODY_TRAILER;
			break;
		case BODY_DONE:
			break;
		}
	}
	if (p < end)
		die("%zu bytes after the end of the answer", (size_t)(end - p));
	return a->state == BODY_DONE;
}

static void
answer_init(struct answer *a, double *times, long times_max)
{
	memset(a, 0, sizeof(*a));
	a->state = BODY_HEAD;
	a->times = times;
	a->times_max = times_max;
}

/* Times of one call, on the monotonic clock unless times is given. */
struct call {
	double	 t_sent, t_first_byte, t_first_event, t_end;
	double	 cpu;
};

/*
 * One call of model with events (0: the default) and the bench id (NULL:
 * none); the answer read to its end.  times (times_max of them) get the
 * wall-clock time of each event.
 */
static void
call_one(struct client *c, const char *model, long events, const char *id,
    struct call *out, struct answer *a, double *times, long times_max)
{
	char req[REQ_MAX], body[256], extra[256];
	static char buf[READ_MAX];
	int blen, rlen, elen = 0;
	size_t n;
	double t, cpu0;
	int first = 1;

	blen = snprintf(body, sizeof(body), "{\"model\":\"%s\","
	    "\"max_tokens\":16,\"stream\":true,\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"hi\"}]}", model);
	if (events > 0)
		elen = snprintf(extra, sizeof(extra), "x-test-events: %ld\r\n",
		    events);
	if (id != NULL)
		elen += snprintf(extra + elen, sizeof(extra) - (size_t)elen,
		    "x-bench-id: %s\r\n", id);
	extra[elen] = '\0';
	rlen = snprintf(req, sizeof(req), "POST %s HTTP/1.1\r\n"
	    "Host: %s\r\n"
	    "x-api-key: sk-ant-bench-0123456789\r\n"
	    "anthropic-version: 2023-06-01\r\n"
	    "content-type: application/json\r\n"
	    "accept: text/event-stream\r\n"
	    "%s"
	    "content-length: %d\r\n\r\n%s", c->path, c->host, extra, blen,
	    body);
	if (blen < 0 || (size_t)blen >= sizeof(body) || rlen < 0 ||
	    (size_t)rlen >= sizeof(req))
		die("the request does not fit");
	answer_init(a, times, times_max);
	cpu0 = cpu_seconds();
	client_write(c, req, (size_t)rlen);
	out->t_sent = now();
	for (;;) {
		n = client_read(c, buf, sizeof(buf));
		out->t_end = now();
		if (first) {
			out->t_first_byte = out->t_end;
			first = 0;
		}
		t = times != NULL ? wallclock() : out->t_end;
		if (answer_feed(a, buf, n, t))
			break;
	}
	out->t_first_event = a->events > 0 && times == NULL ?
	    a->t_first_event : out->t_end;
	out->cpu = cpu_seconds() - cpu0;
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: gwclient ttfb WAY ADDR:PORT HOST PATH CALLS\n"
	    "       gwclient events WAY ADDR:PORT HOST PATH EVENTS ID\n"
	    "       gwclient bulk WAY ADDR:PORT HOST PATH EVENTS\n"
	    "WAY: tls, plain or plain-cost\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	struct client c;
	struct answer *a;
	struct call k;
	double *times;
	long i, count;

	if (argc < 7)
		usage();
	memset(&c, 0, sizeof(c));
	if (strcmp(argv[2], "tls") == 0)
		c.way = WAY_TLS;
	else if (strcmp(argv[2], "plain") == 0)
		c.way = WAY_PLAIN;
	else if (strcmp(argv[2], "plain-cost") == 0)
		c.way = WAY_PLAIN_COST;
	else
		usage();
	c.host = argv[4];
	c.path = argv[5];
	if ((a = malloc(sizeof(*a))) == NULL)
		die("out of memory");
	client_connect(&c, argv[3]);
	/* not counted: the first call on the connection */
	call_one(&c, "claude-bench", 0, NULL, &k, a, NULL, 0);

	if (strcmp(argv[1], "ttfb") == 0 && argc == 7) {
		count = (long)num(argv[6], 1, CALLS_MAX);
		for (i = 0; i < count; i++) {
			call_one(&c, "claude-bench", 0, NULL, &k, a, NULL, 0);
			if (a->events < 1)
				die("call %ld: no event", i);
			printf("call %ld %.1f %.1f %.1f\n", i,
			    (k.t_first_byte - k.t_sent) * 1e6,
			    (k.t_first_event - k.t_sent) * 1e6,
			    (k.t_end - k.t_sent) * 1e6);
		}
	} else if (strcmp(argv[1], "events") == 0 && argc == 8) {
		count = (long)num(argv[6], 1, EVENTS_MAX);
		if ((times = calloc((size_t)count + EVENTS_SLACK,
		    sizeof(*times))) == NULL)
			die("out of memory");
		call_one(&c, "test-long", count, argv[7], &k, a, times,
		    count + EVENTS_SLACK);
		for (i = 0; i < a->events && i < count + EVENTS_SLACK; i++)
			printf("event %ld %.6f\n", i, times[i]);
		printf("done events=%ld bytes=%llu secs=%.6f\n", a->events,
		    (unsigned long long)a->body_bytes, k.t_end - k.t_sent);
		free(times);
	} else if (strcmp(argv[1], "bulk") == 0 && argc == 7) {
		count = (long)num(argv[6], 1, EVENTS_MAX);
		call_one(&c, "test-long", count, NULL, &k, a, NULL, 0);
		printf("done events=%ld bytes=%llu secs=%.6f cpu_ms=%.1f\n",
		    a->events, (unsigned long long)a->body_bytes,
		    k.t_end - k.t_sent, k.cpu * 1e3);
	} else
		usage();

	if (c.ssl != NULL) {
		SSL_shutdown(c.ssl);
		SSL_free(c.ssl);
		SSL_CTX_free(c.ctx);
	}
	EVP_CIPHER_CTX_free(c.aead);
	EVP_CIPHER_free(c.cipher);
	close(c.fd);
	free(a);
	return fflush(stdout) == 0 ? 0 : 1;
}
