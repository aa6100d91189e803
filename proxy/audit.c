/*
 * audit.c — the JSON Lines audit log (see audit.h): to a file, standard
 * error, syslog(3), or the journal by its native protocol.
 *
 * The journal is spoken to directly (systemd.io/JOURNAL_NATIVE_PROTOCOL,
 * stable since systemd 38) rather than through libsystemd's
 * sd_journal_send(): one sendmsg(2) of "NAME=value\n" pieces to a unix
 * datagram socket is all it takes, and the proxy stays free of a library
 * it would link for that alone; a host without systemd builds the same
 * binary.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "jsonw.h"

enum audit_kind {
	AUDIT_TO_FILE,
	AUDIT_TO_STDERR,
	AUDIT_TO_SYSLOG,
	AUDIT_TO_JOURNAL,
};

/* Pieces of one journal datagram: MESSAGE and the INTUTIC_* fields. */
#define AUDIT_JOURNAL_IOV	96

struct audit {
	pthread_mutex_t	 lock;		/* fd, across reopen */
	enum audit_kind	 kind;
	int		 fd;		/* the file's, stderr, the journal's */
	char		*path;
};

/*
 * Whether something takes datagrams at path: a connect(2) of a datagram
 * socket there.  Returns 0, or -1 with errno set.
 */
static int
audit_dgram_probe(const char *path)
{
	struct sockaddr_un sun;
	int fd, save;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path));
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		save = errno;
		close(fd);
		errno = save;
		return -1;
	}
	close(fd);
	return 0;
}

static int
audit_open_fd(const char *path, char *err, size_t errlen)
{
	int fd;

	if (strcmp(path, AUDIT_STDERR) == 0)
		return STDERR_FILENO;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY,
	    0640);
	if (fd == -1)
		snprintf(err, errlen, "cannot open audit log '%s': %s", path,
		    strerror(errno));
	return fd;
}

int
audit_is_file(const char *path)
{
	return strcmp(path, AUDIT_STDERR) != 0 &&
	    strcmp(path, AUDIT_SYSLOG) != 0 && strcmp(path, AUDIT_JOURNAL) != 0;
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
	if (strcmp(path, AUDIT_SYSLOG) == 0) {
		a->kind = AUDIT_TO_SYSLOG;
		a->fd = -1;
		if (audit_dgram_probe(AUDIT_SYSLOG_SOCKET) != 0) {
			snprintf(err, errlen, "cannot audit to syslog: nothing "
			    "takes messages at '%s' (%s); start the syslog "
			    "daemon or journald, or give --audit FILE",
			    AUDIT_SYSLOG_SOCKET, strerror(errno));
			goto fail;
		}
		/* LOG_NDELAY: connected now, before a sandbox could hide it. */
		openlog(AUDIT_IDENT, LOG_PID | LOG_NDELAY, LOG_DAEMON);
	} else if (strcmp(path, AUDIT_JOURNAL) == 0) {
		a->kind = AUDIT_TO_JOURNAL;
		if (audit_dgram_probe(AUDIT_JOURNAL_SOCKET) != 0) {
			snprintf(err, errlen, "cannot audit to the journal: "
			    "nothing takes messages at '%s' (%s); start "
			    "systemd-journald, or give --audit syslog or FILE",
			    AUDIT_JOURNAL_SOCKET, strerror(errno));
			goto fail;
		}
		/* Unconnected: each datagram finds a restarted journald. */
		if ((a->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) ==
		    -1) {
			snprintf(err, errlen, "cannot audit to the journal: "
			    "socket: %s", strerror(errno));
			goto fail;
		}
	} else {
		a->kind = strcmp(path, AUDIT_STDERR) == 0 ? AUDIT_TO_STDERR :
		    AUDIT_TO_FILE;
		if ((a->fd = audit_open_fd(path, err, errlen)) == -1)
			goto fail;
	}
	pthread_mutex_init(&a->lock, NULL);
	return a;
 fail:
	free(a->path);
	free(a);
	return NULL;
}

int
audit_reopen(struct audit *a, char *err, size_t errlen)
{
	int fd, old;

	if (a->kind != AUDIT_TO_FILE)
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
	if (a->kind == AUDIT_TO_FILE || a->kind == AUDIT_TO_JOURNAL)
		close(a->fd);
	if (a->kind == AUDIT_TO_SYSLOG)
		closelog();
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

/* A denial (or a revocation) is a notice; everything else information. */
static int
audit_priority(const struct audit_record *r)
{
	if ((r->decision != NULL && strcmp(r->decision, "deny") == 0) ||
	    (r->event != NULL && strcmp(r->event, "revoke") == 0))
		return LOG_NOTICE;
	return LOG_INFO;
}

/* A journal datagram being put together: iovecs into what they point at. */
struct jmsg {
	struct iovec	 iov[AUDIT_JOURNAL_IOV];
	int		 n;
	char		 nums[8][24];	/* the numbers' text */
	int		 nnums;
	unsigned char	 lens[4][8];	/* little-endian lengths */
	int		 nlens;
};

static void
jmsg_piece(struct jmsg *m, const void *p, size_t len)
{
	if (m->n < AUDIT_JOURNAL_IOV) {
		m->iov[m->n].iov_base = (void *)(uintptr_t)p;
		m->iov[m->n].iov_len = len;
		m->n++;
	}
}

/*
 * NAME=VALUE\n, or for a value with a newline in it the protocol's
 * binary form: NAME\n, its length as 64-bit little-endian, VALUE, \n.
 * A NULL value (null in the record) is left out.
 */
static void
jmsg_field(struct jmsg *m, const char *name, const char *v, size_t len)
{
	uint64_t n = len;
	unsigned char *le;
	int i;

	if (v == NULL)
		return;
	jmsg_piece(m, name, strlen(name));
	if (memchr(v, '\n', len) == NULL) {
		jmsg_piece(m, "=", 1);
	} else {
		if (m->nlens == (int)(sizeof(m->lens) / sizeof(m->lens[0])))
			return;
		le = m->lens[m->nlens++];
		for (i = 0; i < 8; i++)
			le[i] = (unsigned char)(n >> (8 * i));
		jmsg_piece(m, "\n", 1);
		jmsg_piece(m, le, 8);
	}
	jmsg_piece(m, v, len);
	jmsg_piece(m, "\n", 1);
}

static void
jmsg_str(struct jmsg *m, const char *name, const char *v)
{
	if (v != NULL)
		jmsg_field(m, name, v, strlen(v));
}

/* A number; negative (not known) is left out. */
static void
jmsg_num(struct jmsg *m, const char *name, int64_t v)
{
	char *t;

	if (v < 0 || m->nnums == (int)(sizeof(m->nums) / sizeof(m->nums[0])))
		return;
	t = m->nums[m->nnums++];
	snprintf(t, sizeof(m->nums[0]), "%" PRId64, v);
	jmsg_str(m, name, t);
}

/*
 * One datagram to journald: the record as MESSAGE, its priority, who it
 * is from, and the fields a journal query or a collector selects on
 * (intutic-proxy(8), AUDIT IN SYSLOG AND THE JOURNAL).
 */
static int
audit_journal_send(struct audit *a, const struct audit_record *r,
    const char *json, size_t len, int prio)
{
	static const char *const prios = "01234567";
	struct sockaddr_un sun;
	struct msghdr mh;
	struct jmsg m;
	ssize_t n;

	memset(&m, 0, sizeof(m));
	jmsg_field(&m, "MESSAGE", json, len);
	jmsg_field(&m, "PRIORITY", prios + prio, 1);
	jmsg_str(&m, "SYSLOG_IDENTIFIER", AUDIT_IDENT);
	jmsg_str(&m, "SYSLOG_FACILITY", "3");
	jmsg_str(&m, "INTUTIC_EVENT", r->event);
	jmsg_num(&m, "INTUTIC_ID", (int64_t)r->id);
	jmsg_str(&m, "INTUTIC_RUN", r->run);
	jmsg_str(&m, "INTUTIC_CLIENT", r->client);
	jmsg_str(&m, "INTUTIC_PROTO", r->proto);
	jmsg_str(&m, "INTUTIC_HOST", r->host);
	jmsg_num(&m, "INTUTIC_PORT", r->port);
	jmsg_str(&m, "INTUTIC_DECISION", r->decision);
	jmsg_str(&m, "INTUTIC_REASON", r->reason);
	jmsg_str(&m, "INTUTIC_RULE", r->rule);
	jmsg_num(&m, "INTUTIC_STATUS", r->status);
	if (r->call != NULL) {
		jmsg_str(&m, "INTUTIC_PROVIDER", r->call->provider);
		jmsg_str(&m, "INTUTIC_MODEL", r->call->model);
	}

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, AUDIT_JOURNAL_SOCKET,
	    sizeof(AUDIT_JOURNAL_SOCKET));
	memset(&mh, 0, sizeof(mh));
	mh.msg_name = &sun;
	mh.msg_namelen = sizeof(sun);
	mh.msg_iov = m.iov;
	mh.msg_iovlen = (size_t)m.n;
	do
		n = sendmsg(a->fd, &mh, MSG_NOSIGNAL);
	while (n == -1 && errno == EINTR);
	return n == -1 ? -1 : 0;
}

int
audit_write(struct audit *a, const struct audit_record *r)
{
	struct line l;
	struct timeval tv;
	struct tm tm;
	ssize_t n;
	size_t off = 0;
	int prio, ret = 0;

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
	prio = audit_priority(r);
	if (a->kind == AUDIT_TO_SYSLOG) {
		/* The same JSON, without its newline, as the message. */
		syslog(LOG_DAEMON | prio, "%.*s", (int)(l.len - 1), l.buf);
		return 0;
	}
	if (a->kind == AUDIT_TO_JOURNAL)
		return audit_journal_send(a, r, l.buf, l.len - 1, prio);
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
