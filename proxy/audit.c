/*
 * audit.c — the JSON Lines audit log (see audit.h).
 */
#include "config.h"

#include <sys/time.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "jsonw.h"

struct audit {
	pthread_mutex_t	 lock;		/* fd, across reopen */
	int		 fd;
	int		 owned;		/* not stderr */
	char		*path;
};

static int
audit_open_fd(const char *path, char *err, size_t errlen)
{
	int fd;

	if (strcmp(path, "-") == 0)
		return STDERR_FILENO;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY,
	    0640);
	if (fd == -1)
		snprintf(err, errlen, "cannot open audit log '%s': %s", path,
		    strerror(errno));
	return fd;
}

struct audit *
audit_open(const char *path, char *err, size_t errlen)
{
	struct audit *a;

	if ((a = calloc(1, sizeof(*a))) == NULL ||
	    (a->path = strdup(path)) == NULL) {
		snprintf(err, errlen, "out of memory");
		free(a);
		return NULL;
	}
	if ((a->fd = audit_open_fd(path, err, errlen)) == -1) {
		free(a->path);
		free(a);
		return NULL;
	}
	a->owned = a->fd != STDERR_FILENO;
	pthread_mutex_init(&a->lock, NULL);
	return a;
}

int
audit_reopen(struct audit *a, char *err, size_t errlen)
{
	int fd, old;

	if (!a->owned)
		return 0;
	if ((fd = audit_open_fd(a->path, err, errlen)) == -1)
		return -1;
	pthread_mutex_lock(&a->lock);
	old = a->fd;
	a->fd = fd;
	pthread_mutex_unlock(&a->lock);
	close(old);
	return 0;
}

void
audit_free(struct audit *a)
{
	if (a == NULL)
		return;
	if (a->owned)
		close(a->fd);
	pthread_mutex_destroy(&a->lock);
	free(a->path);
	free(a);
}

/* A growing line; on overflow the record is cut and marked invalid. */
struct line {
	char	 buf[AUDIT_RECORD_MAX];
	size_t	 len;
	int	 full;
};

static void __attribute__((format(printf, 2, 3)))
put(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (l->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->buf + l->len, sizeof(l->buf) - l->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(l->buf) - l->len)
		l->full = 1;
	else
		l->len += (size_t)n;
}

/*
 * The rest appends without printf (a record has some thirty fields, and
 * formatting them was a tenth of the proxy's time on plain HTTP).  Like
 * put(), a piece that does not fit marks the line full.
 */
static void
put_raw(struct line *l, const char *s, size_t len)
{
	if (l->full || len >= sizeof(l->buf) - l->len) {
		l->full = 1;
		return;
	}
	memcpy(l->buf + l->len, s, len);
	l->len += len;
}

#define PUT_LIT(l, lit)	put_raw((l), (lit), sizeof(lit) - 1)

/* ,"key": */
static void
put_key(struct line *l, const char *key)
{
	PUT_LIT(l, ",\"");
	put_raw(l, key, strlen(key));
	PUT_LIT(l, "\":");
}

static void
put_u64(struct line *l, uint64_t v)
{
	char d[20];
	size_t n = sizeof(d);

	do {
		d[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	put_raw(l, d + n, sizeof(d) - n);
}

/* "key":"escaped" or "key":null */
static void
put_str(struct line *l, const char *key, const char *s)
{
	put_key(l, key);
	if (!l->full && jsonw_str(l->buf, sizeof(l->buf), &l->len, s) != 0)
		l->full = 1;
}

/* "key":N, or "key":null for a negative N (not known) */
static void
put_num(struct line *l, const char *key, int64_t v)
{
	put_key(l, key);
	if (v < 0)
		PUT_LIT(l, "null");
	else
		put_u64(l, (uint64_t)v);
}

/* "key":MS with three decimals from microseconds, or "key":null */
static void
put_ms(struct line *l, const char *key, int64_t us)
{
	char frac[4];

	if (us < 0) {
		put_key(l, key);
		PUT_LIT(l, "null");
		return;
	}
	put_num(l, key, us / 1000);
	frac[0] = '.';
	frac[1] = (char)('0' + us / 100 % 10);
	frac[2] = (char)('0' + us / 10 % 10);
	frac[3] = (char)('0' + us % 10);
	put_raw(l, frac, sizeof(frac));
}

static void
put_bool(struct line *l, const char *key, int v)
{
	put_key(l, key);
	if (v < 0)
		PUT_LIT(l, "null");
	else if (v)
		PUT_LIT(l, "true");
	else
		PUT_LIT(l, "false");
}

static void
put_call(struct line *l, const struct audit_call *c)
{
	put_str(l, "provider", c->provider);
	put_str(l, "method", c->method);
	put_str(l, "path", c->path);
	put_str(l, "model", c->model);
	put_str(l, "model_response", c->model_response);
	put_str(l, "request_id", c->request_id);
	put_ms(l, "ttfb_ms", c->ttfb_us);
	put_ms(l, "latency_ms", c->latency_us);
	put_bool(l, "stream", c->stream);
	put_num(l, "input_tokens", c->input_tokens);
	put_num(l, "output_tokens", c->output_tokens);
	put_num(l, "cache_read_tokens", c->cache_read_tokens);
	put_num(l, "cache_write_tokens", c->cache_write_tokens);
	put_num(l, "reasoning_tokens", c->reasoning_tokens);
	put_str(l, "usage", c->usage);
	put_str(l, "stop", c->stop);
	put_str(l, "error", c->error);
	put_str(l, "key", c->key);
	put_str(l, "key_mode", c->broker);
	put_bool(l, "malformed", c->malformed);
}

int
audit_write(struct audit *a, const struct audit_record *r)
{
	struct line l;
	struct timeval tv;
	struct tm tm;
	ssize_t n;
	size_t off = 0;
	int ret = 0;

	if (a == NULL)
		return 0;
	l.len = 0;
	l.full = 0;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	put(&l, "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\"",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec, (long)(tv.tv_usec / 1000));
	put_str(&l, "event", r->event);
	put_key(&l, "id");
	put_u64(&l, r->id);
	put_str(&l, "run", r->run);
	put_str(&l, "client", r->client);
	put_str(&l, "proto", r->proto);
	put_str(&l, "host", r->host);
	put_num(&l, "port", r->port);
	put_str(&l, "sni", r->sni);
	put_str(&l, "addr", r->addr);
	put_str(&l, "decision", r->decision);
	put_str(&l, "reason", r->reason);
	put_str(&l, "rule", r->rule);
	put_num(&l, "bytes_up", r->bytes_up);
	put_num(&l, "bytes_down", r->bytes_down);
	put_num(&l, "duration_ms", r->duration_ms);
	put_num(&l, "status", r->status);
	if (r->qtype != NULL) {
		put_str(&l, "qtype", r->qtype);
		put_str(&l, "rcode", r->rcode);
		put_str(&l, "answers", r->answers);
	}
	if (r->transparent) {
		put_str(&l, "original", r->original);
		put_key(&l, "mismatch");
		if (r->mismatch)
			PUT_LIT(&l, "true");
		else
			PUT_LIT(&l, "false");
	}
	if (r->command != NULL) {
		put_str(&l, "command", r->command);
		put_str(&l, "project", r->project);
		put_num(&l, "pid", r->pid);
	}
	if (r->call != NULL)
		put_call(&l, r->call);
	PUT_LIT(&l, "}\n");
	if (l.full) {
		/* Never a cut line: a short record that says so instead. */
		l.len = 0;
		l.full = 0;
		put(&l, "{\"event\":\"%s\",\"id\":%" PRIu64 ",\"truncated\":true}\n",
		    r->event != NULL && (strcmp(r->event, "close") == 0 ||
		    strcmp(r->event, "call") == 0) ? r->event : "decision",
		    r->id);
	}
	pthread_mutex_lock(&a->lock);
	while (off < l.len) {
		n = write(a->fd, l.buf + off, l.len - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = -1;
			break;
		}
		off += (size_t)n;
	}
	pthread_mutex_unlock(&a->lock);
	return ret;
}
