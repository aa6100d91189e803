/*
 * settings.c — the workspace's enforcement level (see settings.h).
 *
 * The API's answer, the cache and the local file are read with the one
 * YAML/JSON event reader (common/yread.c) against a fixed schema: each
 * event is checked as it arrives, anchors, aliases and tags are refused,
 * nesting is bounded (YREAD_NESTING_MAX) and the input is at most
 * SETTINGS_BODY_MAX or SETTINGS_FILE_MAX bytes, so nothing a server sends
 * can make the parser do unbounded work.  The answer and the cache
 * must be JSON (a JSON object is a YAML flow mapping: keys and strings
 * double-quoted, the other scalars JSON literals); the local file is YAML.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <yaml.h>

#include "fetch.h"
#include "paths.h"
#include "settings.h"
#include "yread.h"

#define SETTINGS_WHY_MAX	512	/* why the API did not answer */
#define SETTINGS_REDACTED	"[INTUTIC_TOKEN]"

/*
 * vsnprintf: for messages, which may be cut to fit their buffer (the
 * compiler does not second-guess a va_list's lengths).
 */
static void __attribute__((format(printf, 3, 4)))
settings_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (len == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/* ---------------------------------------------------------------- parsing */

static int	settings_parse_doc(enum settings_doc, const char *,
		    const char *, size_t, void *, char *, size_t);

static int
sp_level(const yaml_event_t *ev, enum settings_level *level)
{
	if (yread_scalar_is(ev, "off"))
		*level = SETTINGS_OFF;
	else if (yread_scalar_is(ev, "recommend"))
		*level = SETTINGS_RECOMMEND;
	else if (yread_scalar_is(ev, "require"))
		*level = SETTINGS_REQUIRE;
	else
		return -1;
	return 0;
}

/* ------------------------------------------------- the settings document */

static const char *const sp_top_keys[] = { "sandbox" };
static const char *const sp_sandbox_keys[] = { "enforcement", "logins" };
#define SP_SANDBOX_KEYS	2

/* sandbox.logins: allow (0) or deny (1); -1 for anything else. */
static int
sp_logins(const yaml_event_t *ev)
{
	if (yread_scalar_is(ev, "allow"))
		return 0;
	if (yread_scalar_is(ev, "deny"))
		return 1;
	return -1;
}

/*
 * {"sandbox": {"enforcement": LEVEL[, "logins": allow|deny]}}.  JSON (the
 * API's answer) may hold other keys, which are skipped; a local file may
 * not: a misspelt key there would otherwise leave the level at off.
 */
static int
sp_settings_map(struct yread *p, void *arg)
{
	struct settings_vals *v = arg;
	yaml_mark_t root = p->ev.start_mark, sandbox;
	char other[YREAD_QUOTE_BUF], q[YREAD_QUOTE_BUF];
	unsigned int seen;
	int k, have_sandbox = 0;

	v->level = SETTINGS_OFF;
	v->logins_deny = 0;
	for (;;) {
		if (yread_next(p) != 0)
			return -1;
		if (p->ev.type == YAML_MAPPING_END_EVENT)
			break;
		if ((k = yread_key(p, sp_top_keys, 1, other, sizeof(other))) < 0)
			return -1;
		if (k == 1) {
			if (!p->json)
				return yread_fail(p, &p->ev.start_mark,
				    "unknown key %s: expected sandbox", other);
			if (yread_next(p) != 0 || yread_skip(p) != 0)
				return -1;
			continue;
		}
		if (have_sandbox)
			return yread_fail(p, &p->ev.start_mark, "'sandbox' "
			    "appears twice");
		have_sandbox = 1;
		if (yread_next(p) != 0)
			return -1;
		sandbox = p->ev.start_mark;
		if (p->ev.type != YAML_MAPPING_START_EVENT)
			return yread_fail(p, &p->ev.start_mark, "'sandbox' is %s: "
			    "expected %s", yread_describe(p, q, sizeof(q)),
			    p->json ? "an object" : "a mapping");
		seen = 0;
		for (;;) {
			if (yread_next(p) != 0)
				return -1;
			if (p->ev.type == YAML_MAPPING_END_EVENT)
				break;
			if ((k = yread_key(p, sp_sandbox_keys, SP_SANDBOX_KEYS,
			    other, sizeof(other))) < 0)
				return -1;
			if (k == SP_SANDBOX_KEYS) {
				if (!p->json)
					return yread_fail(p, &p->ev.start_mark,
					    "unknown key %s in 'sandbox': "
					    "expected enforcement or logins",
					    other);
				if (yread_next(p) != 0 || yread_skip(p) != 0)
					return -1;
				continue;
			}
			if (seen & (1U << k))
				return yread_fail(p, &p->ev.start_mark,
				    "'%s' appears twice", sp_sandbox_keys[k]);
			seen |= 1U << k;
			if (yread_next(p) != 0)
				return -1;
			if (k == 1) {
				if (yread_string(p, "logins", "allow or "
				    "deny") != 0)
					return -1;
				if ((v->logins_deny = sp_logins(&p->ev)) < 0)
					return yread_fail(p, &p->ev.start_mark,
					    "'logins' is %s: expected allow or "
					    "deny", yread_describe(p, q,
					    sizeof(q)));
				continue;
			}
			if (yread_string(p, "enforcement", "off, recommend or "
			    "require") != 0)
				return -1;
			if (sp_level(&p->ev, &v->level) != 0)
				return yread_fail(p, &p->ev.start_mark,
				    "'enforcement' is %s: expected off, "
				    "recommend or require",
				    yread_describe(p, q, sizeof(q)));
		}
		if (!(seen & 1U))
			return yread_fail(p, &sandbox, "'sandbox' has no "
			    "'enforcement' (off, recommend or require)");
	}
	if (!have_sandbox)
		return yread_fail(p, &root, "no 'sandbox' (expected %s)", p->json ?
		    "{\"sandbox\": {\"enforcement\": LEVEL}}" :
		    "sandbox: {enforcement: LEVEL}");
	return 0;
}

/* ---------------------------------------------------------------- files */

/*
 * Reads a whole file of at most SETTINGS_FILE_MAX bytes.  0 with *buf (the
 * caller frees it) and *len; 1 when it does not exist; -1 with why.
 * `own` (the cache): no symbolic link, owned by this user, not writable by
 * others, or it is not trusted.
 */
static int
settings_slurp(const char *path, int own, char **buf, size_t *len,
    char *why, size_t whylen)
{
	struct stat sb;
	char *b = NULL;
	size_t off = 0;
	ssize_t n;
	int fd, save;

	*buf = NULL;
	*len = 0;
	/* O_NONBLOCK: a FIFO in its place must not hang the launcher. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
	    (own ? O_NOFOLLOW : 0))) == -1) {
		if (errno == ENOENT)
			return 1;
		settings_fmt(why, whylen, "cannot read '%s': %s", path,
		    strerror(errno));
		return -1;
	}
	if (fstat(fd, &sb) == -1) {
		save = errno;
		close(fd);
		settings_fmt(why, whylen, "cannot read '%s': %s", path,
		    strerror(save));
		return -1;
	}
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		settings_fmt(why, whylen, "'%s' is not a regular file", path);
		return -1;
	}
	if (own && (sb.st_uid != geteuid() || (sb.st_mode & 022) != 0)) {
		close(fd);
		settings_fmt(why, whylen, "'%s' is not this user's alone "
		    "(owner uid %lu, mode %04o)", path,
		    (unsigned long)sb.st_uid,
		    (unsigned int)(sb.st_mode & 07777));
		return -1;
	}
	if ((b = malloc(SETTINGS_FILE_MAX + 1)) == NULL) {
		close(fd);
		settings_fmt(why, whylen, "cannot read '%s': out of memory",
		    path);
		return -1;
	}
	/* One byte more than the limit is read to see it is exceeded. */
	while (off <= SETTINGS_FILE_MAX) {
		n = read(fd, b + off, SETTINGS_FILE_MAX + 1 - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			save = errno;
			close(fd);
			free(b);
			settings_fmt(why, whylen, "cannot read '%s': %s", path,
			    strerror(save));
			return -1;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	if (off > SETTINGS_FILE_MAX) {
		free(b);
		settings_fmt(why, whylen, "'%s' is larger than %d bytes", path,
		    SETTINGS_FILE_MAX);
		return -1;
	}
	b[off] = '\0';
	*buf = b;
	*len = off;
	return 0;
}

/* The local file: 0 with *level, 1 when there is none, -1 with err. */
static int
settings_local_read(const char *path, struct settings_vals *vals, char *err,
    size_t errlen)
{
	char *buf;
	size_t len;
	int r;

	if ((r = settings_slurp(path, 0, &buf, &len, err, errlen)) != 0)
		return r;
	r = settings_parse_doc(SETTINGS_DOC_LOCAL, path, buf, len, vals, err,
	    errlen);
	free(buf);
	return r;
}

/* ---------------------------------------------------------------- cache */

struct settings_cache {
	struct settings_vals	 vals;
	char			 url[SETTINGS_URL_MAX];
	long long		 fetched;	/* seconds since the epoch */
	char			 etag[SETTINGS_ETAG_MAX];	/* "": none */
};

/*
 * The first three are required; "etag" (the answer's ETag) and "logins"
 * (absent from a cache an older intutic wrote: allow) are not.
 */
static const char *const sp_cache_keys[] = { "level", "url", "fetched",
    "etag", "logins" };
#define SP_CACHE_REQUIRED	3
#define SP_CACHE_KEYS		5

/*
 * The cache's string member `key` (the current event) into buf: printable
 * ASCII without spaces, not empty, shorter than len.  0, or -1 with the
 * message ("'KEY' holds a byte no WHAT may hold").
 */
static int
sp_cache_text(struct yread *p, const char *key, const char *a_what,
    const char *what, char *buf, size_t len)
{
	const yaml_event_t *ev = &p->ev;
	size_t i, n;

	if (yread_string(p, key, a_what) != 0)
		return -1;
	n = ev->data.scalar.length;
	if (n == 0 || n >= len)
		return yread_fail(p, &ev->start_mark, "'%s' is empty or too "
		    "long", key);
	for (i = 0; i < n; i++)
		if (ev->data.scalar.value[i] <= 0x20 ||
		    ev->data.scalar.value[i] >= 0x7f)
			return yread_fail(p, &ev->start_mark, "'%s' holds a "
			    "byte no %s may hold", key, what);
	memcpy(buf, ev->data.scalar.value, n);
	buf[n] = '\0';
	return 0;
}

/*
 * {"level": LEVEL, "url": URL, "fetched": N[, "etag": TAG][, "logins":
 * allow|deny]}: our own format.
 */
static int
sp_cache_map(struct yread *p, void *arg)
{
	struct settings_cache *c = arg;
	yaml_mark_t root = p->ev.start_mark;
	const yaml_event_t *ev = &p->ev;
	char other[YREAD_QUOTE_BUF], q[YREAD_QUOTE_BUF];
	unsigned int seen = 0;
	long long v;
	size_t i;
	int k;

	for (;;) {
		if (yread_next(p) != 0)
			return -1;
		if (ev->type == YAML_MAPPING_END_EVENT)
			break;
		if ((k = yread_key(p, sp_cache_keys, SP_CACHE_KEYS, other,
		    sizeof(other))) < 0)
			return -1;
		if (k == SP_CACHE_KEYS) {
			if (yread_next(p) != 0 || yread_skip(p) != 0)
				return -1;
			continue;
		}
		if (seen & (1U << k))
			return yread_fail(p, &ev->start_mark, "'%s' appears twice",
			    sp_cache_keys[k]);
		seen |= 1U << k;
		if (yread_next(p) != 0)
			return -1;
		switch (k) {
		case 0:
			if (yread_string(p, "level", "a level") != 0)
				return -1;
			if (sp_level(ev, &c->vals.level) != 0)
				return yread_fail(p, &ev->start_mark, "'level' is "
				    "%s: expected off, recommend or require",
				    yread_describe(p, q, sizeof(q)));
			break;
		case 4:
			if (yread_string(p, "logins", "allow or deny") != 0)
				return -1;
			if ((c->vals.logins_deny = sp_logins(ev)) < 0)
				return yread_fail(p, &ev->start_mark, "'logins' "
				    "is %s: expected allow or deny",
				    yread_describe(p, q, sizeof(q)));
			break;
		case 1:
			if (sp_cache_text(p, "url", "a URL", "URL", c->url,
			    sizeof(c->url)) != 0)
				return -1;
			break;
		case 3:
			if (sp_cache_text(p, "etag", "an entity tag",
			    "entity tag", c->etag, sizeof(c->etag)) != 0)
				return -1;
			break;
		default:
			v = 0;
			if (ev->type != YAML_SCALAR_EVENT ||
			    ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
			    ev->data.scalar.length == 0 ||
			    ev->data.scalar.length > 15)
				goto bad_time;
			for (i = 0; i < ev->data.scalar.length; i++) {
				if (ev->data.scalar.value[i] < '0' ||
				    ev->data.scalar.value[i] > '9')
					goto bad_time;
				v = v * 10 + (ev->data.scalar.value[i] - '0');
			}
			c->fetched = v;
			break;
		}
	}
	for (k = 0; k < SP_CACHE_REQUIRED; k++)
		if (!(seen & (1U << k)))
			return yread_fail(p, &root, "'%s' is missing",
			    sp_cache_keys[k]);
	return 0;
 bad_time:
	return yread_fail(p, &ev->start_mark, "'fetched' is %s: expected "
	    "seconds since the epoch", yread_describe(p, q, sizeof(q)));
}

/*
 * Reads one document: `arg` is a struct settings_vals for the API's
 * answer and the local file, a struct settings_cache for the cache.
 */
static int
settings_parse_doc(enum settings_doc doc, const char *name, const char *buf,
    size_t len, void *arg, char *err, size_t errlen)
{
	struct yread p;

	yread_init(&p, name, doc == SETTINGS_DOC_LOCAL ? YREAD_FILE :
	    YREAD_TEXT, doc != SETTINGS_DOC_LOCAL, buf, len, err, errlen);
	p.expect = "sandbox: {enforcement: LEVEL}";
	return yread_run(&p, doc == SETTINGS_DOC_CACHE ? sp_cache_map :
	    sp_settings_map, arg);
}

int
settings_parse(enum settings_doc doc, const char *name, const char *buf,
    size_t len, struct settings_vals *vals, char *err, size_t errlen)
{
	struct settings_cache c;
	int r;

	if (doc != SETTINGS_DOC_CACHE)
		return settings_parse_doc(doc, name, buf, len, vals, err,
		    errlen);
	memset(&c, 0, sizeof(c));
	if ((r = settings_parse_doc(doc, name, buf, len, &c, err,
	    errlen)) == 0)
		*vals = c.vals;
	return r;
}

/*
 * The cache's directory and file: $XDG_CACHE_HOME/intutic when it is an
 * absolute path, else $HOME/.cache/intutic.  -1 when neither is set.
 */
static int
settings_cache_path(char *dir, size_t dirlen, char *path, size_t pathlen)
{
	int n;

	if (paths_cache_dir(dir, dirlen) != 0)
		return -1;
	n = snprintf(path, pathlen, "%s/%s", dir, SETTINGS_CACHE_FILE);
	if (n < 0 || (size_t)n >= pathlen)
		return -1;
	return 0;
}

/* 0 with c; 1 when there is no cache; -1 with why. */
static int
settings_cache_read(const char *path, struct settings_cache *c, char *why,
    size_t whylen)
{
	char name[PATH_MAX + 32];
	char *buf;
	size_t len;
	int r;

	memset(c, 0, sizeof(*c));
	if ((r = settings_slurp(path, 1, &buf, &len, why, whylen)) != 0)
		return r;
	settings_fmt(name, sizeof(name), "the cache '%s' is malformed", path);
	r = settings_parse_doc(SETTINGS_DOC_CACHE, name, buf, len, c, why,
	    whylen);
	free(buf);
	if (r != 0)
		memset(c, 0, sizeof(*c));
	return r;
}

/* mkdir DIR, mode 0700, unless it is there. */
static int
settings_mkdir(const char *dir)
{
	if (mkdir(dir, 0700) == 0 || errno == EEXIST)
		return 0;
	return -1;
}

int
settings_write_all(int fd, const char *s, size_t len)
{
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, s, len)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		s += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Writes the cache: a new file in its directory (mode 0600, O_EXCL),
 * fsync, rename over the old one, fsync the directory.  A reader sees the
 * old file or the new one, never a part.  0, or -1 with why.
 */
static int
settings_cache_write(const char *dir, const char *path,
    const struct settings_vals *v, const char *url, time_t now,
    const char *etag, char *why, size_t whylen)
{
	char tmp[PATH_MAX], parent[PATH_MAX];
	char text[SETTINGS_URL_MAX + SETTINGS_ETAG_MAX * 2 + 192];
	char tag[SETTINGS_ETAG_MAX * 2 + 16];
	char *slash;
	size_t i, o = 0;
	int fd = -1, dfd, n, save;

	settings_fmt(parent, sizeof(parent), "%s", dir);
	if ((slash = strrchr(parent, '/')) != NULL && slash != parent)
		*slash = '\0';
	if (settings_mkdir(parent) != 0 || settings_mkdir(dir) != 0) {
		settings_fmt(why, whylen, "cannot make '%s': %s", dir,
		    strerror(errno));
		return -1;
	}
	/* An entity tag is quoted ("x" or W/"x"): its quotes escaped. */
	tag[0] = '\0';
	if (etag != NULL && etag[0] != '\0' &&
	    strlen(etag) < SETTINGS_ETAG_MAX) {
		o = (size_t)snprintf(tag, sizeof(tag), ", \"etag\": \"");
		for (i = 0; etag[i] != '\0'; i++) {
			if (etag[i] == '"' || etag[i] == '\\')
				tag[o++] = '\\';
			tag[o++] = etag[i];
		}
		tag[o++] = '"';
		tag[o] = '\0';
	}
	n = snprintf(text, sizeof(text), "{\"level\": \"%s\", \"url\": \"%s\", "
	    "\"fetched\": %lld%s, \"logins\": \"%s\"}\n",
	    settings_level_str(v->level), url, (long long)now, tag,
	    v->logins_deny ? "deny" : "allow");
	if (n < 0 || (size_t)n >= sizeof(text) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir,
	    SETTINGS_CACHE_FILE) >= (int)sizeof(tmp)) {
		settings_fmt(why, whylen, "cannot write '%s': too long", path);
		return -1;
	}
	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1) {
		settings_fmt(why, whylen, "cannot write in '%s': %s", dir,
		    strerror(errno));
		return -1;
	}
	if (fchmod(fd, 0600) == -1 ||
	    settings_write_all(fd, text, (size_t)n) == -1 ||
	    fsync(fd) == -1)
		goto fail;
	if (close(fd) == -1) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) == -1)
		goto fail;
	/* The rename itself survives a crash once the directory is synced. */
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1) {
		(void)fsync(dfd);
		close(dfd);
	}
	return 0;
 fail:
	save = errno;
	if (fd != -1)
		close(fd);
	unlink(tmp);
	settings_fmt(why, whylen, "cannot write '%s': %s", path,
	    strerror(save));
	return -1;
}

/* "3 s ago", "5 min ago", "3 h ago", "4 days ago". */
static const char *
settings_age(long long fetched, time_t now, char *buf, size_t len)
{
	long long s = (long long)now - fetched;

	if (s < 0)
		settings_fmt(buf, len, "at a time still to come (the clock was "
		    "set back)");
	else if (s < 60)
		settings_fmt(buf, len, "%lld s ago", s);
	else if (s < 3600)
		settings_fmt(buf, len, "%lld min ago", s / 60);
	else if (s < 48 * 3600)
		settings_fmt(buf, len, "%lld h ago", s / 3600);
	else
		settings_fmt(buf, len, "%lld days ago", s / 86400);
	return buf;
}

/* ------------------------------------------------------------ the API */

/* 127.0.0.0/8, ::1 or localhost: where plain http:// may go. */
static int
settings_loopback(const char *host, size_t len)
{
	char h[INET6_ADDRSTRLEN + 8];
	struct in6_addr a6;
	struct in_addr a4;

	if ((len == 9 && strncasecmp(host, "localhost", 9) == 0) ||
	    (len == 10 && strncasecmp(host, "localhost.", 10) == 0))
		return 1;
	if (len >= sizeof(h))
		return 0;
	if (host[0] == '[' && host[len - 1] == ']') {
		memcpy(h, host + 1, len - 2);
		h[len - 2] = '\0';
		return inet_pton(AF_INET6, h, &a6) == 1 &&
		    IN6_IS_ADDR_LOOPBACK(&a6);
	}
	memcpy(h, host, len);
	h[len] = '\0';
	return inet_pton(AF_INET, h, &a4) == 1 &&
	    (ntohl(a4.s_addr) >> 24) == 127;
}

/*
 * Checks INTUTIC_API_URL: https://HOST[:PORT][/PATH], or http:// to a
 * loopback host; no credentials, query or fragment (they would be secrets
 * in messages and in the cache).  Nothing is connected to.  0 or -1.
 */
static int
settings_check_url(const char *url, char *err, size_t errlen)
{
	struct fetch_url u;
	char why[FETCH_ERROR_MAX];
	size_t len = strlen(url), i;
	int https;

	if (len >= SETTINGS_URL_MAX) {
		settings_fmt(err, errlen, "INTUTIC_API_URL is longer than %d "
		    "bytes", SETTINGS_URL_MAX - 1);
		return -1;
	}
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)url[i];

		if (c <= 0x20 || c >= 0x7f ||
		    strchr("\"\\<>^`{|}", c) != NULL) {
			settings_fmt(err, errlen, "INTUTIC_API_URL holds a "
			    "byte no URL may hold (0x%02x)", c);
			return -1;
		}
	}
	if (fetch_url_parse(url, &u, why, sizeof(why)) != 0) {
		if (strncasecmp(url, "https://", 8) != 0 &&
		    strncasecmp(url, "http://", 7) != 0) {
			settings_fmt(err, errlen, "INTUTIC_API_URL must start "
			    "with https:// (or http:// for a loopback host)");
			return -1;
		}
		goto bad;
	}
	https = strcmp(u.scheme, "https") == 0;
	if (u.has_userinfo) {
		settings_fmt(err, errlen, "INTUTIC_API_URL must not carry "
		    "credentials: the token goes in INTUTIC_TOKEN");
		return -1;
	}
	if (u.has_query || u.has_fragment) {
		settings_fmt(err, errlen, "INTUTIC_API_URL must not carry a "
		    "query or a fragment: it is the workspace site's address");
		return -1;
	}
	if (!https && !settings_loopback(u.host, strlen(u.host))) {
		settings_fmt(err, errlen, "INTUTIC_API_URL '%s' is http:// to "
		    "a host that is not loopback: use https:// (http:// is "
		    "only for 127.0.0.0/8, [::1] and localhost)", url);
		return -1;
	}
	return 0;
 bad:
	settings_fmt(err, errlen, "INTUTIC_API_URL '%s' is not a URL of the "
	    "form https://HOST[:PORT][/PATH]: %s", url, why);
	return -1;
}

/*
 * GETs url from the API (the token, ca, SETTINGS_TIMEOUT_MS, answers of at
 * most body_max bytes), with If-None-Match: etag when it is not NULL.  0
 * with *body (the caller frees it), *len and etag_out (the answer's ETag,
 * "" when none); 1 when the API answered 304 Not Modified; -1 with why it
 * gave no usable answer (no answer, or a status other than 200).
 */
static int
settings_get(const char *url, const char *token, const char *ca,
    const char *etag, size_t body_max, char **body, size_t *len,
    char *etag_out, size_t etag_outlen, char *why, size_t whylen)
{
	struct fetch_req req;
	char ferr[FETCH_ERROR_MAX];
	long status;

	*body = NULL;
	*len = 0;
	memset(&req, 0, sizeof(req));
	req.url = url;
	req.bearer = token;
	req.ca_file = ca;
	req.https = 1;
	req.timeout_ms = SETTINGS_TIMEOUT_MS;
	req.body_max = body_max;
	req.if_none_match = etag;
	req.etag = etag_out;
	req.etaglen = etag_outlen;
	if (fetch(&req, &status, body, len, ferr, sizeof(ferr)) != 0) {
		settings_fmt(why, whylen, "%s", ferr);
		return -1;
	}
	if (status == 200)
		return 0;
	free(*body);
	*body = NULL;
	if (status == 304 && etag != NULL)
		return 1;
	settings_fmt(why, whylen, "HTTP %ld%s", status,
	    status >= 300 && status < 400 ? ", a redirect, which is "
	    "not followed" : (status == 401 || status == 403) &&
	    token == NULL ? " (INTUTIC_TOKEN is not set)" : "");
	return -1;
}

/*
 * Asks the API for the settings, with If-None-Match: etag when it is not
 * NULL (the cache's entity tag).  0 with *vals (a 200; etag_out gets its
 * ETag, "" when none); 1 when the API answered 304 Not Modified (the cache
 * still holds); -1 with why it did not answer (no answer, an error answer,
 * an answer that is not valid settings).
 */
static int
settings_fetch(const char *url, const char *token, const char *ca,
    const char *etag, struct settings_vals *vals, char *etag_out,
    size_t etag_outlen, char *why, size_t whylen)
{
	char full[SETTINGS_URL_MAX + sizeof(SETTINGS_API_PATH)];
	char *body = NULL;
	size_t len, ulen = strlen(url);
	int r;

	while (ulen > 0 && url[ulen - 1] == '/')
		ulen--;
	settings_fmt(full, sizeof(full), "%.*s%s", (int)ulen, url,
	    SETTINGS_API_PATH);
	if ((r = settings_get(full, token, ca, etag, SETTINGS_BODY_MAX, &body,
	    &len, etag_out, etag_outlen, why, whylen)) != 0)
		return r;
	r = settings_parse_doc(SETTINGS_DOC_API,
	    "HTTP 200 but not valid settings", body, len, vals, why, whylen);
	free(body);
	return r;
}

/* ------------------------------------------------------------ resolving */

/*
 * Replaces each copy of secret in buf (size bytes) by SETTINGS_REDACTED:
 * the last guard that the token never leaves in a message.
 */
static void
settings_scrub(char *buf, size_t size, const char *secret)
{
	char out[SETTINGS_TEXT_MAX * 2];
	size_t slen, o = 0, rlen = strlen(SETTINGS_REDACTED);
	const char *s = buf, *hit;

	if (secret == NULL || (slen = strlen(secret)) == 0 ||
	    strstr(buf, secret) == NULL)
		return;
	while ((hit = strstr(s, secret)) != NULL) {
		if (o + (size_t)(hit - s) + rlen >= sizeof(out))
			break;
		memcpy(out + o, s, (size_t)(hit - s));
		o += (size_t)(hit - s);
		memcpy(out + o, SETTINGS_REDACTED, rlen);
		o += rlen;
		s = hit + slen;
	}
	if (strstr(s, secret) != NULL)
		s = "";	/* no room left: drop the rest */
	settings_fmt(out + o, sizeof(out) - o, "%s", s);
	settings_fmt(buf, size, "%s", out);
}

/* The environment variable, or NULL when unset or empty. */
static const char *
settings_env(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? v : NULL;
}

/* The token: printable ASCII without spaces, of a bounded size. */
static int
settings_check_token(const char *token, char *err, size_t errlen)
{
	const unsigned char *t;

	if (token == NULL)
		return 0;
	if (strlen(token) > SETTINGS_TOKEN_MAX) {
		settings_fmt(err, errlen, "INTUTIC_TOKEN is longer than %d "
		    "bytes", SETTINGS_TOKEN_MAX);
		return -1;
	}
	for (t = (const unsigned char *)token; *t != '\0'; t++)
		if (*t <= 0x20 || *t >= 0x7f) {
			settings_fmt(err, errlen, "INTUTIC_TOKEN holds a "
			    "space, a control character or a byte that is not "
			    "ASCII");
			return -1;
		}
	return 0;
}

/* sandbox.logins: deny from `source`, unless a source said so already. */
static void
settings_logins_deny(struct settings *s, const char *source)
{
	if (s->logins_deny)
		return;
	s->logins_deny = 1;
	settings_fmt(s->logins_source, sizeof(s->logins_source), "%s", source);
}

/*
 * With an API configured: its settings, else the cached ones, else the
 * local file's, else require and logins denied.  Then the local file's
 * level when it is stricter, and its logins: deny.
 */
static void
settings_from_api(struct settings *s, const char *url, const char *token,
    const char *ca, const struct settings_vals *local, const char *local_path)
{
	struct settings_cache c;
	struct settings_vals api = { SETTINGS_REQUIRE, 1 };
	char dir[PATH_MAX], path[PATH_MAX], why[SETTINGS_WHY_MAX];
	char cwhy[SETTINGS_WHY_MAX], age[64], etag[SETTINGS_ETAG_MAX];
	int have_cache_path, have_tag, r;
	time_t now;

	have_cache_path = settings_cache_path(dir, sizeof(dir), path,
	    sizeof(path)) == 0;
	/* A cache of this API with an entity tag: asked whether it changed. */
	memset(&c, 0, sizeof(c));
	have_tag = have_cache_path && settings_cache_read(path, &c, cwhy,
	    sizeof(cwhy)) == 0 && strcmp(c.url, url) == 0 && c.etag[0] != '\0';
	r = settings_fetch(url, token, ca, have_tag ? c.etag : NULL, &api,
	    etag, sizeof(etag), why, sizeof(why));
	if (r == 1) {
		/* 304: the cached settings are the API's; the cache says when. */
		now = time(NULL);
		settings_age(c.fetched, now, age, sizeof(age));
		api = c.vals;
		settings_fmt(s->source, sizeof(s->source), "workspace API %s "
		    "(not modified since it was fetched %s: ETag %s)", url,
		    age, c.etag);
		if (settings_cache_write(dir, path, &api, url, now, c.etag,
		    cwhy, sizeof(cwhy)) != 0)
			settings_fmt(s->note, sizeof(s->note), "cannot cache "
			    "the level: %s", cwhy);
	} else if (r == 0) {
		now = time(NULL);
		settings_fmt(s->source, sizeof(s->source), "workspace API %s "
		    "(fetched now)", url);
		if (!have_cache_path)
			settings_fmt(s->note, sizeof(s->note), "cannot cache "
			    "the level: neither XDG_CACHE_HOME nor HOME is an "
			    "absolute path");
		else if (settings_cache_write(dir, path, &api, url, now, etag,
		    cwhy, sizeof(cwhy)) != 0)
			settings_fmt(s->note, sizeof(s->note), "cannot cache "
			    "the level: %s", cwhy);
	} else {
		r = have_cache_path ? settings_cache_read(path, &c, cwhy,
		    sizeof(cwhy)) : 1;
		if (r == 0 && strcmp(c.url, url) == 0) {
			now = time(NULL);
			settings_age(c.fetched, now, age, sizeof(age));
			api = c.vals;
			settings_fmt(s->source, sizeof(s->source), "cache of "
			    "%s (fetched %s; the API did not answer: %s)", url,
			    age, why);
			settings_fmt(s->note, sizeof(s->note), "the workspace "
			    "API %s did not answer (%s): using the level "
			    "cached %s (%s)", url, why, age,
			    settings_level_str(api.level));
		} else {
			if (r == 0)
				settings_fmt(cwhy, sizeof(cwhy), "the cache "
				    "holds the level of another API, %s",
				    c.url);
			else if (r == 1)
				settings_fmt(cwhy, sizeof(cwhy), "nothing is "
				    "cached");
			if (local != NULL) {
				s->level = local->level;
				settings_fmt(s->source, sizeof(s->source), "%s "
				    "(the workspace API %s did not answer: %s; "
				    "%s)", local_path, url, why, cwhy);
				settings_fmt(s->note, sizeof(s->note), "the "
				    "workspace API %s did not answer (%s) and "
				    "%s: using the level of %s (%s)", url, why,
				    cwhy, local_path,
				    settings_level_str(local->level));
				if (local->logins_deny)
					settings_logins_deny(s, local_path);
			} else {
				s->level = SETTINGS_REQUIRE;
				settings_fmt(s->source, sizeof(s->source),
				    "fail-closed default (the workspace API %s "
				    "did not answer: %s; %s)", url, why, cwhy);
				settings_fmt(s->note, sizeof(s->note), "the "
				    "workspace API %s did not answer (%s) and "
				    "%s: the level is require (fail closed)",
				    url, why, cwhy);
				settings_logins_deny(s, s->source);
			}
			return;
		}
	}
	s->level = api.level;
	if (api.logins_deny)
		settings_logins_deny(s, s->source);
	if (local != NULL && local->logins_deny)
		settings_logins_deny(s, local_path);
	/* An API answer (or its cache) never loosens a stricter local file. */
	if (local != NULL && local->level > api.level) {
		char was[SETTINGS_TEXT_MAX];

		settings_fmt(was, sizeof(was), "%s", s->source);
		s->level = local->level;
		settings_fmt(s->source, sizeof(s->source), "%s (stricter than "
		    "%s from the %s)", local_path, settings_level_str(api.level),
		    was);
		if (s->note[0] != '\0') {
			settings_fmt(was, sizeof(was), "%s", s->note);
			settings_fmt(s->note, sizeof(s->note), "%s; %s says "
			    "%s, which is stricter and holds", was, local_path,
			    settings_level_str(local->level));
		}
	}
}

int
settings_resolve(struct settings *out, char *err, size_t errlen)
{
	struct settings s;
	struct settings_vals local = { SETTINGS_REQUIRE, 0 };
	const char *path, *url, *token, *ca;
	int have_local, r;

	memset(&s, 0, sizeof(s));
	if (errlen > 0)
		err[0] = '\0';
	token = settings_env("INTUTIC_TOKEN");
	if ((path = settings_env("INTUTIC_SETTINGS_FILE")) == NULL)
		path = SETTINGS_LOCAL_FILE;
	if ((r = settings_local_read(path, &local, err, errlen)) == -1)
		goto fail;
	have_local = r == 0;

	if ((url = settings_env("INTUTIC_API_URL")) == NULL) {
		if (have_local) {
			s.level = local.level;
			settings_fmt(s.source, sizeof(s.source), "%s", path);
			if (local.logins_deny)
				settings_logins_deny(&s, path);
		} else {
			s.level = SETTINGS_OFF;
			settings_fmt(s.source, sizeof(s.source), "default (no "
			    "workspace API, no %s)", path);
		}
		goto done;
	}
	if (settings_check_url(url, err, errlen) != 0 ||
	    settings_check_token(token, err, errlen) != 0)
		goto fail;
	/* The URL is shown and cached: it must not hold the secret. */
	if (token != NULL && strstr(url, token) != NULL) {
		settings_fmt(err, errlen, "INTUTIC_API_URL holds the value of "
		    "INTUTIC_TOKEN: the token goes only in INTUTIC_TOKEN");
		goto fail;
	}
	if ((ca = settings_env("INTUTIC_API_CA_FILE")) != NULL &&
	    access(ca, R_OK) != 0) {
		settings_fmt(err, errlen, "INTUTIC_API_CA_FILE '%s' cannot be "
		    "read: %s", ca, strerror(errno));
		goto fail;
	}
	settings_from_api(&s, url, token, ca, have_local ? &local : NULL,
	    path);
 done:
	settings_scrub(s.source, sizeof(s.source), token);
	settings_scrub(s.note, sizeof(s.note), token);
	settings_scrub(s.logins_source, sizeof(s.logins_source), token);
	*out = s;
	return 0;
 fail:
	settings_scrub(err, errlen, token);
	memset(out, 0, sizeof(*out));
	out->level = SETTINGS_REQUIRE;
	out->logins_deny = 1;
	return -1;
}

const char *
settings_level_str(enum settings_level level)
{
	switch (level) {
	case SETTINGS_OFF:
		return "off";
	case SETTINGS_RECOMMEND:
		return "recommend";
	case SETTINGS_REQUIRE:
		return "require";
	}
	return "unknown";
}

int
settings_rules_url(char *url, size_t urllen, char *err, size_t errlen)
{
	const char *base;
	size_t blen;

	url[0] = '\0';
	if ((base = settings_env("INTUTIC_API_URL")) == NULL) {
		settings_fmt(err, errlen, "INTUTIC_API_URL is not set: the "
		    "rules come from the workspace API at that URL");
		return -1;
	}
	if (settings_check_url(base, err, errlen) != 0 ||
	    settings_check_token(settings_env("INTUTIC_TOKEN"), err,
	    errlen) != 0)
		return -1;
	blen = strlen(base);
	while (blen > 0 && base[blen - 1] == '/')
		blen--;
	settings_fmt(url, urllen, "%.*s%s", (int)blen, base,
	    SETTINGS_RULES_PATH);
	return 0;
}

int
settings_rules_fetch(const char *url, const char *etag, char **body,
    size_t *len, char *etag_out, size_t etag_outlen, char *err,
    size_t errlen)
{
	const char *token = settings_env("INTUTIC_TOKEN");
	int r;

	r = settings_get(url, token, settings_env("INTUTIC_API_CA_FILE"), etag,
	    SETTINGS_RULES_MAX, body, len, etag_out, etag_outlen, err, errlen);
	if (r == -1)
		settings_scrub(err, errlen, token);
	return r;
}
