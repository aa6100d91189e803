/*
 * rules-load.c — reading rule files, or a rule document given as text, with
 * the YAML reader (common/yread.h), and writing a set back as one JSON rule
 * document (rules_dump()).
 *
 * The loader walks the reader's event stream against a fixed schema instead
 * of building a document tree: every event is checked as it arrives, so a
 * file that is wrong stops at the first wrong token, with its line and
 * column, and nothing about the file's shape (depth, aliases, size) can make
 * the loader do unbounded work.  Entries go into a set that is not visible
 * to anybody until the whole load succeeded; on any error the set is freed.
 * A file and a text go through the same parse (load_buffer()); the schema's
 * names (key_names[], mode_names[], provider_key_names[],
 * broker_key_names[], gateway_names[]) serve the parse and the dump alike.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <yaml.h>

#include "rules.h"
#include "rules-int.h"
#include "yread.h"

#define ENV_NAME_MAX	128	/* bytes in an environment variable name */
#define PROVIDER_ENV_MAX 32	/* variables one provider may name */
#define DOC_VERSION	"1"	/* the one version of the language */
#define DUMP_BUF_MIN	4096	/* first allocation of a dump's text */
#define GATEWAY_ITEMS_MAX 256	/* providers named in `gateway:` */

struct loaded_file {
	dev_t		 dev;
	ino_t		 ino;
	const char	*path;
};

/* A name of `gateway:`, checked once the whole set is loaded. */
struct gateway_item {
	const char		*name;		/* arena */
	enum rules_gateway	 mode;
	const char		*file;		/* the top file; arena */
	unsigned long		 line;
	unsigned long		 col;
};

struct loader {
	struct rules		*r;
	struct rules_error	*err;
	unsigned int		 flags;		/* RULES_LOAD_* */
	int			 text;		/* from rules_load_text() */
	struct loaded_file	 stack[RULES_INCLUDE_DEPTH_MAX + 1];
	size_t			 depth;		/* files on the stack */
	struct loaded_file	 files[RULES_FILES_MAX];
	size_t			 nfiles;
	size_t			 providers_cap;
	struct gateway_item	*gateway;	/* `gateway:` of the top file */
	size_t			 ngateway;
	size_t			 gateway_cap;
};

/* One file being parsed. */
struct yfile {
	struct loader	*ld;
	struct yread	 y;		/* its reader: messages into err->msg */
	const char	*path;		/* arena copy: entries point at it */
	int		 top;		/* rules_load()'s file, or the text */
};

static int	load_file(struct loader *, const char *, const yaml_mark_t *,
		    const char *);

/* Names the file and position of the error whose message is in err. */
static void
error_where(struct rules_error *err, const char *file, unsigned long line,
    unsigned long col)
{
	yread_escape(err->file, sizeof(err->file), file, strlen(file),
	    SIZE_MAX);
	err->line = line;
	err->col = col;
}

/* An error outside a file's reader: reading, including, compiling. */
static void __attribute__((format(printf, 4, 5)))
set_error(struct rules_error *err, const char *file, const yaml_mark_t *m,
    const char *fmt, ...)
{
	va_list ap;

	error_where(err, file, m != NULL ? m->line + 1 : 0,
	    m != NULL ? m->column + 1 : 0);
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
}

#define fail(f, m, ...)	yread_fail(&(f)->y, (m), __VA_ARGS__)

const char *
rules_error_str(const struct rules_error *err, char *buf, size_t len)
{
	if (err->line == 0)
		snprintf(buf, len, "%s: %s", err->file, err->msg);
	else
		snprintf(buf, len, "%s:%lu:%lu: %s", err->file, err->line,
		    err->col, err->msg);
	return buf;
}

/* The current event as a string scalar (not null), else an error. */
static int
scalar(struct yfile *f, const char *what, const char **s, size_t *len)
{
	const yaml_event_t *ev = &f->y.ev;
	char buf[YREAD_QUOTE_BUF];

	*s = NULL;
	*len = 0;
	if (ev->type != YAML_SCALAR_EVENT || yread_is_null(&f->y))
		return fail(f, &ev->start_mark, "found %s: expected %s",
		    yread_describe(&f->y, buf, sizeof(buf)), what);
	*s = (const char *)ev->data.scalar.value;
	*len = ev->data.scalar.length;
	return 0;
}

/*
 * Walks a list of scalars, calling `item` for each.  `one` and `many` name
 * an item and the list for messages ("a host entry", "host entries").  A
 * single scalar in place of the list is accepted only when `single_ok`.
 */
static int
each_scalar(struct yfile *f, const char *one, const char *many,
    int single_ok, int (*item)(struct yfile *, const char *, size_t, void *),
    void *arg)
{
	char buf[YREAD_QUOTE_BUF];
	const char *s;
	size_t len;

	if (yread_next(&f->y) != 0)
		return -1;
	if (single_ok && f->y.ev.type == YAML_SCALAR_EVENT &&
	    !yread_is_null(&f->y)) {
		if (scalar(f, one, &s, &len) != 0)
			return -1;
		return item(f, s, len, arg);
	}
	if (f->y.ev.type != YAML_SEQUENCE_START_EVENT)
		return fail(f, &f->y.ev.start_mark, "found %s: expected a list "
		    "of %s", yread_describe(&f->y, buf, sizeof(buf)), many);
	for (;;) {
		if (yread_next(&f->y) != 0)
			return -1;
		if (f->y.ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		if (scalar(f, one, &s, &len) != 0 || item(f, s, len, arg) != 0)
			return -1;
	}
}

/* ------------------------------------------------------------ the keys */

static int
entry_item(struct yfile *f, const char *s, size_t len, void *arg)
{
	int deny = *(const int *)arg, r;
	char q[YREAD_QUOTE_BUF];
	const char *hint = "";

	r = rules_add_entry(f->ld->r, s, len, deny, f->path,
	    f->y.ev.start_mark.line + 1);
	if (r == RULES_OK)
		return 0;
	/* "a.com b.com": two entries run together by a missing ',' or ']'. */
	if (memchr(s, ' ', len) != NULL || memchr(s, '\n', len) != NULL)
		hint = " (an entry is one word: is a ',' or a ']' missing?)";
	return fail(f, &f->y.ev.start_mark, "%s entry %s: %s%s",
	    deny ? "deny" : "allow", yread_quote(s, len, q, sizeof(q)),
	    rules_strerror(r), hint);
}

static int
key_version(struct yfile *f)
{
	char buf[YREAD_QUOTE_BUF];

	if (yread_next(&f->y) != 0)
		return -1;
	if (!yread_scalar_is(&f->y.ev, "1") ||
	    !f->y.ev.data.scalar.plain_implicit)
		return fail(f, &f->y.ev.start_mark, "found %s%s: expected "
		    "version 1, a number (the only version)",
		    f->y.ev.type == YAML_SCALAR_EVENT &&
		    !f->y.ev.data.scalar.plain_implicit ? "the string " : "",
		    yread_describe(&f->y, buf, sizeof(buf)));
	return 0;
}

static int
top_only(struct yfile *f, const yaml_mark_t *m, const char *key)
{
	if (f->top)
		return 0;
	return fail(f, m, "key '%s' in an included file: only the top-level "
	    "rule file may set it", key);
}

/* The values of `mode`, indexed by enum rules_mode. */
static const char *const mode_names[] = {
	[RULES_MODE_ENFORCE] = "enforce",
	[RULES_MODE_REPORT] = "report",
};
#define MODE_COUNT	(sizeof(mode_names) / sizeof(mode_names[0]))

static int
key_mode(struct yfile *f, const yaml_mark_t *keymark)
{
	const char *s;
	size_t len, i;
	char q[YREAD_QUOTE_BUF];

	if (top_only(f, keymark, "mode") != 0 || yread_next(&f->y) != 0 ||
	    scalar(f, "enforce or report", &s, &len) != 0)
		return -1;
	f->ld->r->mode_line = keymark->line + 1;
	for (i = 0; i < MODE_COUNT; i++) {
		if (yread_scalar_is(&f->y.ev, mode_names[i])) {
			f->ld->r->mode = (enum rules_mode)i;
			return 0;
		}
	}
	return fail(f, &f->y.ev.start_mark,
	    "found mode %s: expected enforce or report",
	    yread_quote(s, len, q, sizeof(q)));
}

static int
port_item(struct yfile *f, const char *s, size_t len, void *arg)
{
	struct rules *r = f->ld->r;
	uint16_t port;
	size_t i;
	char q[YREAD_QUOTE_BUF];

	(void)arg;
	if (!f->y.ev.data.scalar.plain_implicit)
		return fail(f, &f->y.ev.start_mark, "found the string %s: "
		    "expected a port number (write it without quotes)",
		    yread_quote(s, len, q, sizeof(q)));
	if (rules_port_parse(s, len, &port) != RULES_OK)
		return fail(f, &f->y.ev.start_mark, "found port %s: expected "
		    "a number from 1 to 65535",
		    yread_quote(s, len, q, sizeof(q)));
	for (i = 0; i < r->ndefault_ports; i++)
		if (r->default_ports[i] == port)
			return fail(f, &f->y.ev.start_mark,
			    "port %u listed twice", port);
	if (r->ndefault_ports == RULES_PORTS_MAX)
		return fail(f, &f->y.ev.start_mark, "more than %d ports",
		    RULES_PORTS_MAX);
	r->default_ports[r->ndefault_ports++] = port;
	return 0;
}

static int
key_ports(struct yfile *f, const yaml_mark_t *keymark)
{
	yaml_mark_t m;

	if (top_only(f, keymark, "ports") != 0)
		return -1;
	f->ld->r->ndefault_ports = 0;
	if (each_scalar(f, "a port", "ports", 0, port_item, NULL) != 0)
		return -1;
	m = f->y.ev.start_mark;
	if (f->ld->r->ndefault_ports == 0)
		return fail(f, &m, "empty list of ports: expected at least one "
		    "port (leave 'ports' out for the default [443, 80])");
	return 0;
}

static int
include_item(struct yfile *f, const char *s, size_t len, void *arg)
{
	char path[RULES_PATH_MAX], q[YREAD_QUOTE_BUF];
	const char *slash;
	int n;

	(void)arg;
	if (len == 0 || memchr(s, '\0', len) != NULL)
		return fail(f, &f->y.ev.start_mark,
		    "found include %s: expected a file name",
		    yread_quote(s, len, q, sizeof(q)));
	slash = strrchr(f->path, '/');
	if (s[0] == '/' || slash == NULL)
		n = snprintf(path, sizeof(path), "%.*s", (int)len, s);
	else
		n = snprintf(path, sizeof(path), "%.*s/%.*s",
		    (int)(slash - f->path), f->path, (int)len, s);
	if (n < 0 || (size_t)n >= sizeof(path))
		return fail(f, &f->y.ev.start_mark, "include path too long");
	return load_file(f->ld, path, &f->y.ev.start_mark, f->path);
}

static int
valid_env_name(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > ENV_NAME_MAX || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '_'))
			return 0;
	}
	return 1;
}

static int
valid_provider_name(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > 63 || s[0] == '-' || s[len - 1] == '-')
		return 0;
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-'))
			return 0;
	}
	return 1;
}

struct env_list {
	const char	*names[PROVIDER_ENV_MAX];
	size_t		 n;
};

static int
env_item(struct yfile *f, const char *s, size_t len, void *arg)
{
	struct env_list *l = arg;
	char q[YREAD_QUOTE_BUF];
	size_t i;

	if (!valid_env_name(s, len))
		return fail(f, &f->y.ev.start_mark, "found %s: expected an "
		    "environment variable name (letters, digits, '_')",
		    yread_quote(s, len, q, sizeof(q)));
	for (i = 0; i < l->n; i++)
		if (yread_scalar_is(&f->y.ev, l->names[i]))
			return fail(f, &f->y.ev.start_mark,
			    "variable %s listed twice", yread_quote(s, len, q,
			    sizeof(q)));
	if (l->n == PROVIDER_ENV_MAX)
		return fail(f, &f->y.ev.start_mark, "more than %d variables",
		    PROVIDER_ENV_MAX);
	if ((l->names[l->n] = rules_arena_strndup(&f->ld->r->arena, s,
	    len)) == NULL)
		return fail(f, NULL, "out of memory");
	l->n++;
	return 0;
}

/* ------------------------------------------------ a provider's gateway */

/* A byte of an HTTP token (RFC 9110 section 5.6.2): a header name. */
static int
is_tchar(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || (c != '\0' &&
	    strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static int
valid_token(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > RULES_HEADER_NAME_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if (!is_tchar(s[i]))
			return 0;
	return 1;
}

static int
is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	    (c >= 'A' && c <= 'F');
}

/*
 * The first byte of a base URL's path that is not a URL path character
 * (RFC 3986 section 3.3: unreserved, sub-delims, ':', '@', '/' and a '%'
 * with two hex digits), or NULL.
 */
static const char *
url_path_bad(const char *s, size_t len)
{
	size_t i;
	char c;

	for (i = 0; i < len; i++) {
		c = s[i];
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || (c != '\0' &&
		    strchr("-._~!$&'()*+,;=:@/", c) != NULL))
			continue;
		if (c == '%' && i + 2 < len && is_hex(s[i + 1]) &&
		    is_hex(s[i + 2])) {
			i += 2;
			continue;
		}
		return s + i;
	}
	return NULL;
}

/* A provider as its mapping is read: what provider_add() keeps. */
struct provider_draft {
	const char		*name;
	struct env_list		 env;
	const char		*api;
	uint16_t		 api_port;
	struct rules_base_url	 base_url[RULES_BASE_URL_MAX];
	size_t			 nbase_url;
	const char		*key_headers[RULES_KEY_HEADERS_MAX];
	size_t			 nkey_headers;
	struct rules_broker	 broker;
	int			 has_broker;
	yaml_mark_t		 broker_header;	/* where broker.header is */
};

static int
key_api(struct yfile *f, struct provider_draft *d)
{
	struct rules_host h;
	char text[RULES_HOST_TEXT_MAX + 8], q[YREAD_QUOTE_BUF];
	const char *s;
	size_t len;
	uint16_t port;
	int e;

	if (yread_next(&f->y) != 0 ||
	    scalar(f, "a host (HOST or HOST:PORT)", &s, &len) != 0)
		return -1;
	yread_quote(s, len, q, sizeof(q));
	if (memchr(s, '*', len) != NULL)
		return fail(f, &f->y.ev.start_mark, "api %s: expected one "
		    "host, not a wildcard", q);
	if (memchr(s, '/', len) != NULL)
		return fail(f, &f->y.ev.start_mark, "api %s: expected one "
		    "host, not a CIDR block", q);
	if (memchr(s, '\0', len) != NULL)
		e = RULES_ERR_LABEL_CHAR;
	else if (len >= sizeof(text))
		e = RULES_ERR_TOO_LONG;
	else {
		memcpy(text, s, len);
		text[len] = '\0';
		e = rules_hostport_parse(text, &h, &port, 443);
	}
	if (e != RULES_OK)
		return fail(f, &f->y.ev.start_mark, "api %s: %s", q,
		    rules_strerror(e));
	if ((d->api = rules_arena_strndup(&f->ld->r->arena, h.text,
	    h.len)) == NULL)
		return fail(f, NULL, "out of memory");
	d->api_port = port;
	return 0;
}

static int
base_url_item(struct yfile *f, const char *s, size_t len, void *arg)
{
	struct provider_draft *d = arg;
	struct rules_base_url *b;
	struct rules_arena *a = &f->ld->r->arena;
	const char *eq, *path = "", *bad;
	size_t namelen, pathlen = 0, i;
	char q[YREAD_QUOTE_BUF], qb[YREAD_QUOTE_BUF];

	yread_quote(s, len, q, sizeof(q));
	eq = memchr(s, '=', len);
	namelen = eq != NULL ? (size_t)(eq - s) : len;
	if (!valid_env_name(s, namelen))
		return fail(f, &f->y.ev.start_mark, "found base-url %s: "
		    "expected an environment variable name, or NAME=/PATH", q);
	if (eq != NULL) {
		path = eq + 1;
		pathlen = len - namelen - 1;
		if (pathlen == 0 || path[0] != '/')
			return fail(f, &f->y.ev.start_mark, "base-url %s: the "
			    "path must start with '/'", q);
		if (pathlen > RULES_BASE_URL_PATH_MAX)
			return fail(f, &f->y.ev.start_mark, "base-url %s: a "
			    "path longer than %d bytes", q,
			    RULES_BASE_URL_PATH_MAX);
		/* A byte of a UTF-8 sequence alone is no text to quote. */
		if ((bad = url_path_bad(path, pathlen)) != NULL)
			return fail(f, &f->y.ev.start_mark, "base-url %s: %s "
			    "in the path: expected URL path characters (no "
			    "'?', '#', spaces or control bytes; '%%' with two "
			    "hex digits)", q, (unsigned char)*bad >= 0x80 ?
			    "a non-ASCII character" : yread_quote(bad, 1, qb,
			    sizeof(qb)));
	}
	for (i = 0; i < d->nbase_url; i++)
		if (strlen(d->base_url[i].var) == namelen &&
		    memcmp(d->base_url[i].var, s, namelen) == 0)
			return fail(f, &f->y.ev.start_mark, "base-url: "
			    "variable %s listed twice", yread_quote(s,
			    namelen, q, sizeof(q)));
	if (d->nbase_url == RULES_BASE_URL_MAX)
		return fail(f, &f->y.ev.start_mark, "more than %d base-url "
		    "variables", RULES_BASE_URL_MAX);
	b = &d->base_url[d->nbase_url];
	if ((b->var = rules_arena_strndup(a, s, namelen)) == NULL ||
	    (b->path = rules_arena_strndup(a, path, pathlen)) == NULL)
		return fail(f, NULL, "out of memory");
	d->nbase_url++;
	return 0;
}

/* A header name, lowercased, into the arena; NULL when out of memory. */
static char *
header_dup(struct rules_arena *a, const char *s, size_t len)
{
	char *h;
	size_t i;

	if ((h = rules_arena_strndup(a, s, len)) == NULL)
		return NULL;
	for (i = 0; i < len; i++)
		if (h[i] >= 'A' && h[i] <= 'Z')
			h[i] = (char)(h[i] - 'A' + 'a');
	return h;
}

static int
key_header_item(struct yfile *f, const char *s, size_t len, void *arg)
{
	struct provider_draft *d = arg;
	char q[YREAD_QUOTE_BUF];
	size_t i;

	if (!valid_token(s, len))
		return fail(f, &f->y.ev.start_mark, "found key header %s: "
		    "expected an HTTP header name (letters, digits and "
		    "!#$%%&'*+-.^_`|~, at most %d bytes)",
		    yread_quote(s, len, q, sizeof(q)), RULES_HEADER_NAME_MAX);
	for (i = 0; i < d->nkey_headers; i++)
		if (strlen(d->key_headers[i]) == len &&
		    strncasecmp(d->key_headers[i], s, len) == 0)
			return fail(f, &f->y.ev.start_mark, "key header %s "
			    "listed twice", yread_quote(s, len, q, sizeof(q)));
	if (d->nkey_headers == RULES_KEY_HEADERS_MAX)
		return fail(f, &f->y.ev.start_mark, "more than %d key headers",
		    RULES_KEY_HEADERS_MAX);
	if ((d->key_headers[d->nkey_headers] = header_dup(&f->ld->r->arena, s,
	    len)) == NULL)
		return fail(f, NULL, "out of memory");
	d->nkey_headers++;
	return 0;
}

/* The keys of a provider's broker. */
enum broker_key {
	BROKER_ENV, BROKER_HEADER, BROKER_SCHEME, BROKER_PREFIX,
	BROKER_LENGTH, BROKER_KEY_COUNT
};
static const char *const broker_key_names[BROKER_KEY_COUNT] = {
	"env", "header", "scheme", "prefix", "length",
};
#define BROKER_KEYS_EXPECTED	"env, header, scheme, prefix or length"

/* broker.length: a plain decimal number, RULES_SENTINEL_MIN..MAX. */
static int
broker_length(struct yfile *f, const char *s, size_t len, size_t *out)
{
	char q[YREAD_QUOTE_BUF];
	size_t i, n = 0;

	if (!f->y.ev.data.scalar.plain_implicit)
		return fail(f, &f->y.ev.start_mark, "found the string %s: "
		    "expected a number (write it without quotes)",
		    yread_quote(s, len, q, sizeof(q)));
	for (i = 0; i < len && len <= 3 && s[0] != '0'; i++) {
		if (s[i] < '0' || s[i] > '9')
			break;
		n = n * 10 + (size_t)(s[i] - '0');
	}
	if (len == 0 || i < len || n < RULES_SENTINEL_MIN ||
	    n > RULES_SENTINEL_MAX)
		return fail(f, &f->y.ev.start_mark, "found broker length %s: "
		    "expected a number from %d to %d",
		    yread_quote(s, len, q, sizeof(q)), RULES_SENTINEL_MIN,
		    RULES_SENTINEL_MAX);
	*out = n;
	return 0;
}

/* One value of the broker's mapping, key k; the value's event current. */
static int
broker_value(struct yfile *f, struct provider_draft *d, int k)
{
	struct rules_broker *b = &d->broker;
	struct rules_arena *a = &f->ld->r->arena;
	const char *s, *v = NULL;
	size_t len, i;
	char q[YREAD_QUOTE_BUF];

	if (scalar(f, k == BROKER_LENGTH ? "a number" : "a string", &s,
	    &len) != 0)
		return -1;
	yread_quote(s, len, q, sizeof(q));
	switch (k) {
	case BROKER_ENV:
		if (!valid_env_name(s, len))
			return fail(f, &f->y.ev.start_mark, "found broker env "
			    "%s: expected an environment variable name "
			    "(letters, digits, '_')", q);
		v = b->env = rules_arena_strndup(a, s, len);
		break;
	case BROKER_HEADER:
		if (!valid_token(s, len))
			return fail(f, &f->y.ev.start_mark, "found broker "
			    "header %s: expected an HTTP header name", q);
		d->broker_header = f->y.ev.start_mark;
		v = b->header = header_dup(a, s, len);
		break;
	case BROKER_SCHEME:
		if (len > 0 && !valid_token(s, len))
			return fail(f, &f->y.ev.start_mark, "found broker "
			    "scheme %s: expected one word, such as Bearer, or "
			    "\"\"", q);
		v = b->scheme = rules_arena_strndup(a, s, len);
		break;
	case BROKER_PREFIX:
		for (i = 0; i < len; i++)
			if (s[i] <= ' ' || s[i] > '~')
				break;
		if (len == 0 || len > RULES_SENTINEL_PREFIX_MAX || i < len)
			return fail(f, &f->y.ev.start_mark, "found broker "
			    "prefix %s: expected 1 to %d printable ASCII "
			    "characters without spaces", q,
			    RULES_SENTINEL_PREFIX_MAX);
		v = b->prefix = rules_arena_strndup(a, s, len);
		break;
	case BROKER_LENGTH:
		return broker_length(f, s, len, &b->length);
	}
	if (v == NULL)
		return fail(f, NULL, "out of memory");
	return 0;
}

/*
 * A provider's `broker`: a mapping with env, header, prefix and length,
 * and scheme optionally.  Whether header is one of the key headers is
 * checked with the whole provider read (provider()).
 */
static int
key_broker(struct yfile *f, struct provider_draft *d)
{
	struct rules_broker *b = &d->broker;
	unsigned long seen[BROKER_KEY_COUNT] = { 0 };
	yaml_mark_t start, length_mark, keymark;
	const char *s, *missing;
	size_t len, plen;
	char q[YREAD_QUOTE_BUF];
	int k;

	if (yread_expect(&f->y, YAML_MAPPING_START_EVENT, "a mapping with "
	    "env, header, prefix and length (and scheme)") != 0)
		return -1;
	start = length_mark = f->y.ev.start_mark;
	b->scheme = "";
	for (;;) {
		if (yread_next(&f->y) != 0)
			return -1;
		if (f->y.ev.type == YAML_MAPPING_END_EVENT)
			break;
		if (scalar(f, "a broker key (" BROKER_KEYS_EXPECTED ")", &s,
		    &len) != 0)
			return -1;
		keymark = f->y.ev.start_mark;
		if ((k = yread_key(&f->y, broker_key_names, BROKER_KEY_COUNT,
		    q, sizeof(q))) == BROKER_KEY_COUNT)
			return fail(f, &keymark, "unknown key %s in the broker "
			    "of provider '%s' (expected " BROKER_KEYS_EXPECTED
			    ")", q, d->name);
		if (seen[k] != 0)
			return fail(f, &keymark, "duplicate key '%s' in the "
			    "broker of provider '%s'", broker_key_names[k],
			    d->name);
		seen[k] = keymark.line + 1;
		if (yread_next(&f->y) != 0)
			return -1;
		if (k == BROKER_LENGTH)
			length_mark = f->y.ev.start_mark;
		if (broker_value(f, d, k) != 0)
			return -1;
	}
	missing = b->env == NULL ? "env" : b->header == NULL ? "header" :
	    b->prefix == NULL ? "prefix" : seen[BROKER_LENGTH] == 0 ?
	    "length" : NULL;
	if (missing != NULL)
		return fail(f, &start, "the broker of provider '%s' has no "
		    "'%s' (expected env, header, prefix and length)", d->name,
		    missing);
	plen = strlen(b->prefix);
	if (b->length < plen + RULES_SENTINEL_RANDOM_MIN)
		return fail(f, &length_mark, "broker length %zu: expected "
		    "more than the prefix's %zu bytes plus 16", b->length,
		    plen);
	d->has_broker = 1;
	return 0;
}

/* The keys of a provider, in the order messages list them. */
enum provider_key {
	PROVIDER_HOSTS, PROVIDER_ENV, PROVIDER_API, PROVIDER_BASE_URL,
	PROVIDER_KEY_HEADERS, PROVIDER_BROKER, PROVIDER_KEY_COUNT
};
static const char *const provider_key_names[PROVIDER_KEY_COUNT] = {
	[PROVIDER_HOSTS] = "hosts",
	[PROVIDER_ENV] = "env",
	[PROVIDER_API] = "api",
	[PROVIDER_BASE_URL] = "base-url",
	[PROVIDER_KEY_HEADERS] = "key-headers",
	[PROVIDER_BROKER] = "broker",
};
#define PROVIDER_KEYS_EXPECTED \
	"hosts, env, api, base-url, key-headers or broker"

/* Keeps a provider read whole: its arrays go into the arena. */
static int
provider_add(struct yfile *f, const struct provider_draft *d)
{
	struct rules *r = f->ld->r;
	struct rules_provider *p;
	struct rules_base_url *bu = NULL;
	struct rules_broker *b = NULL;
	const char **env = NULL, **kh = NULL;
	size_t cap;

	if ((d->env.n > 0 && (env = rules_arena_alloc(&r->arena,
	    d->env.n * sizeof(*env))) == NULL) ||
	    (d->nbase_url > 0 && (bu = rules_arena_alloc(&r->arena,
	    d->nbase_url * sizeof(*bu))) == NULL) ||
	    (d->nkey_headers > 0 && (kh = rules_arena_alloc(&r->arena,
	    d->nkey_headers * sizeof(*kh))) == NULL) ||
	    (d->has_broker && (b = rules_arena_alloc(&r->arena,
	    sizeof(*b))) == NULL))
		return fail(f, NULL, "out of memory");
	if (r->nproviders == f->ld->providers_cap) {
		cap = f->ld->providers_cap == 0 ? 16 : f->ld->providers_cap * 2;
		if ((p = reallocarray(r->providers, cap, sizeof(*p))) == NULL)
			return fail(f, NULL, "out of memory");
		r->providers = p;
		f->ld->providers_cap = cap;
	}
	if (env != NULL)
		memcpy(env, d->env.names, d->env.n * sizeof(*env));
	if (bu != NULL)
		memcpy(bu, d->base_url, d->nbase_url * sizeof(*bu));
	if (kh != NULL)
		memcpy(kh, d->key_headers, d->nkey_headers * sizeof(*kh));
	if (b != NULL)
		*b = d->broker;
	p = &r->providers[r->nproviders++];
	memset(p, 0, sizeof(*p));
	p->name = d->name;
	p->env = env;
	p->env_count = d->env.n;
	p->api = d->api;
	p->api_port = d->api_port;
	p->base_url = bu;
	p->base_url_count = d->nbase_url;
	p->key_headers = kh;
	p->key_header_count = d->nkey_headers;
	p->broker = b;
	p->gateway = RULES_GATEWAY_OFF;	/* the top file's `gateway:` later */
	return 0;
}

/*
 * The checks that need the whole provider: the gateway's keys need `api`,
 * and the broker's header must be one of the key headers.
 */
static int
provider_check(struct yfile *f, const struct provider_draft *d,
    const unsigned long *seen, const yaml_mark_t *marks)
{
	static const enum provider_key needs_api[] = {
		PROVIDER_BASE_URL, PROVIDER_KEY_HEADERS, PROVIDER_BROKER,
	};
	char list[RULES_KEY_HEADERS_MAX * (RULES_HEADER_NAME_MAX + 2) + 8];
	size_t i, off = 0;

	for (i = 0; d->api == NULL &&
	    i < sizeof(needs_api) / sizeof(needs_api[0]); i++)
		if (seen[needs_api[i]] != 0)
			return fail(f, &marks[needs_api[i]], "key '%s' in "
			    "provider '%s' without 'api': the gateway needs "
			    "the host it forwards to",
			    provider_key_names[needs_api[i]], d->name);
	if (!d->has_broker)
		return 0;
	for (i = 0; i < d->nkey_headers; i++)
		if (strcmp(d->key_headers[i], d->broker.header) == 0)
			return 0;
	list[0] = '\0';
	for (i = 0; i < d->nkey_headers; i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s",
		    i > 0 ? ", " : "", d->key_headers[i]);
	return fail(f, &d->broker_header, "broker header '%s' of provider "
	    "'%s' is not one of its key-headers (%s)", d->broker.header,
	    d->name, d->nkey_headers > 0 ? list : "none");
}

/*
 * One provider: a mapping with `hosts`, `env` and the gateway's keys
 * (`api`, `base-url`, `key-headers`, `broker`), each optional.
 */
static int
provider(struct yfile *f, const char *name)
{
	struct provider_draft d;
	unsigned long seen[PROVIDER_KEY_COUNT] = { 0 };
	yaml_mark_t marks[PROVIDER_KEY_COUNT];
	const char *s;
	size_t len;
	int k, allow = 0, r = 0;
	char q[YREAD_QUOTE_BUF];

	memset(&d, 0, sizeof(d));
	memset(marks, 0, sizeof(marks));
	d.name = name;
	if (yread_expect(&f->y, YAML_MAPPING_START_EVENT,
	    "a mapping of provider keys (" PROVIDER_KEYS_EXPECTED ")") != 0)
		return -1;
	for (;;) {
		if (yread_next(&f->y) != 0)
			return -1;
		if (f->y.ev.type == YAML_MAPPING_END_EVENT)
			break;
		if (scalar(f, "a provider key (" PROVIDER_KEYS_EXPECTED ")", &s,
		    &len) != 0)
			return -1;
		if ((k = yread_key(&f->y, provider_key_names,
		    PROVIDER_KEY_COUNT, q, sizeof(q))) == PROVIDER_KEY_COUNT)
			return fail(f, &f->y.ev.start_mark, "unknown key %s in "
			    "provider '%s' (expected " PROVIDER_KEYS_EXPECTED
			    ")", q, name);
		if (seen[k] != 0)
			return fail(f, &f->y.ev.start_mark, "duplicate key %s "
			    "in provider '%s'", yread_quote(s, len, q,
			    sizeof(q)), name);
		seen[k] = f->y.ev.start_mark.line + 1;
		marks[k] = f->y.ev.start_mark;
		switch (k) {
		case PROVIDER_HOSTS:
			r = each_scalar(f, "a host entry", "host entries", 0,
			    entry_item, &allow);
			break;
		case PROVIDER_ENV:
			r = each_scalar(f, "an environment variable name",
			    "environment variable names", 0, env_item, &d.env);
			break;
		case PROVIDER_API:
			r = key_api(f, &d);
			break;
		case PROVIDER_BASE_URL:
			r = each_scalar(f, "a variable name, or NAME=/PATH",
			    "variable names", 0, base_url_item, &d);
			break;
		case PROVIDER_KEY_HEADERS:
			r = each_scalar(f, "a header name", "header names", 0,
			    key_header_item, &d);
			break;
		case PROVIDER_BROKER:
			r = key_broker(f, &d);
			break;
		}
		if (r != 0)
			return -1;
	}
	if (provider_check(f, &d, seen, marks) != 0)
		return -1;
	return provider_add(f, &d);
}

/* ---------------------------------------------------------- the gateway */

/* The values of `gateway:`, indexed by enum rules_gateway. */
static const char *const gateway_names[] = {
	[RULES_GATEWAY_OFF] = "off",
	[RULES_GATEWAY_ON] = "on",
	[RULES_GATEWAY_BROKER] = "broker",
};
#define GATEWAY_COUNT	(sizeof(gateway_names) / sizeof(gateway_names[0]))

/*
 * `gateway:` in the top file: a mapping from provider names to on, off or
 * broker.  The names are kept with their places and checked against the
 * providers once the whole set is loaded (gateway_resolve()), so that
 * `gateway:` may come before the `include:` that defines them.
 */
static int
key_gateway(struct yfile *f, const yaml_mark_t *keymark)
{
	struct loader *ld = f->ld;
	struct gateway_item *g;
	const char *s;
	size_t len, i;
	yaml_mark_t m;
	char q[YREAD_QUOTE_BUF];

	if (top_only(f, keymark, "gateway") != 0 ||
	    yread_expect(&f->y, YAML_MAPPING_START_EVENT, "a mapping of "
	    "provider names to on, off or broker") != 0)
		return -1;
	for (;;) {
		if (yread_next(&f->y) != 0)
			return -1;
		if (f->y.ev.type == YAML_MAPPING_END_EVENT)
			return 0;
		if (scalar(f, "a provider name", &s, &len) != 0)
			return -1;
		m = f->y.ev.start_mark;
		yread_quote(s, len, q, sizeof(q));
		if (!valid_provider_name(s, len))
			return fail(f, &m, "found provider name %s: expected "
			    "lowercase letters, digits and '-'", q);
		for (i = 0; i < ld->ngateway; i++)
			if (yread_scalar_is(&f->y.ev, ld->gateway[i].name))
				return fail(f, &m, "gateway: provider %s listed "
				    "twice (first at line %lu)", q,
				    ld->gateway[i].line);
		if (ld->ngateway == GATEWAY_ITEMS_MAX)
			return fail(f, &m, "gateway: more than %d providers",
			    GATEWAY_ITEMS_MAX);
		if (ld->ngateway == ld->gateway_cap) {
			size_t cap = ld->gateway_cap == 0 ? 8 :
			    ld->gateway_cap * 2;

			if ((g = reallocarray(ld->gateway, cap,
			    sizeof(*g))) == NULL)
				return fail(f, NULL, "out of memory");
			ld->gateway = g;
			ld->gateway_cap = cap;
		}
		g = &ld->gateway[ld->ngateway];
		if ((g->name = rules_arena_strndup(&ld->r->arena, s,
		    len)) == NULL)
			return fail(f, NULL, "out of memory");
		g->file = f->path;
		g->line = m.line + 1;
		g->col = m.column + 1;
		if (yread_next(&f->y) != 0 ||
		    scalar(f, "on, off or broker", &s, &len) != 0)
			return -1;
		for (i = 0; i < GATEWAY_COUNT; i++)
			if (yread_scalar_is(&f->y.ev, gateway_names[i]))
				break;
		if (i == GATEWAY_COUNT)
			return fail(f, &f->y.ev.start_mark, "found gateway %s "
			    "for provider '%s': expected on, off or broker",
			    yread_quote(s, len, q, sizeof(q)), g->name);
		g->mode = (enum rules_gateway)i;
		ld->ngateway++;
	}
}

/*
 * Each name of `gateway:` against the whole set: a provider defined in
 * some file, with `api` when switched on, and `broker` as well to have
 * its key brokered.  Sets each provider's gateway.  0, or -1 with the
 * error at the name in `gateway:`.
 */
static int
gateway_resolve(struct loader *ld)
{
	struct rules *r = ld->r;
	const struct gateway_item *g;
	struct rules_provider *p;
	char list[256], q[YREAD_QUOTE_BUF];
	size_t i, j, off;
	yaml_mark_t m;

	memset(&m, 0, sizeof(m));
	for (i = 0; i < ld->ngateway; i++) {
		g = &ld->gateway[i];
		m.line = g->line - 1;
		m.column = g->col - 1;
		yread_quote(g->name, strlen(g->name), q, sizeof(q));
		p = NULL;
		for (j = 0; j < r->nproviders && p == NULL; j++)
			if (strcmp(r->providers[j].name, g->name) == 0)
				p = &r->providers[j];
		if (p == NULL) {
			list[0] = '\0';
			for (j = 0, off = 0; j < r->nproviders; j++) {
				/* Room for ", " and "..." after this one. */
				if (off + strlen(r->providers[j].name) + 8 >=
				    sizeof(list)) {
					snprintf(list + off, sizeof(list) - off,
					    ", ...");
					break;
				}
				off += (size_t)snprintf(list + off,
				    sizeof(list) - off, "%s%s", j > 0 ? ", " :
				    "", r->providers[j].name);
			}
			set_error(ld->err, g->file, &m, "gateway: provider %s "
			    "is not defined (%s%s)", q, r->nproviders > 0 ?
			    "defined: " : "no provider is defined", list);
			return -1;
		}
		if (g->mode != RULES_GATEWAY_OFF && p->api == NULL) {
			set_error(ld->err, g->file, &m, "gateway: provider %s "
			    "has no 'api': the gateway cannot reach it", q);
			return -1;
		}
		if (g->mode == RULES_GATEWAY_BROKER && p->broker == NULL) {
			set_error(ld->err, g->file, &m, "gateway: provider %s "
			    "has no 'broker': its key cannot be brokered", q);
			return -1;
		}
		p->gateway = g->mode;
	}
	return 0;
}

static int
key_providers(struct yfile *f)
{
	struct rules *r = f->ld->r;
	const char *s, *name;
	size_t len, i;
	char q[YREAD_QUOTE_BUF];

	if (yread_expect(&f->y, YAML_MAPPING_START_EVENT,
	    "a mapping of provider names") != 0)
		return -1;
	for (;;) {
		if (yread_next(&f->y) != 0)
			return -1;
		if (f->y.ev.type == YAML_MAPPING_END_EVENT)
			return 0;
		if (scalar(f, "a provider name", &s, &len) != 0)
			return -1;
		if (!valid_provider_name(s, len))
			return fail(f, &f->y.ev.start_mark, "found provider "
			    "name %s: expected lowercase letters, digits and "
			    "'-'",
			    yread_quote(s, len, q, sizeof(q)));
		for (i = 0; i < r->nproviders; i++)
			if (yread_scalar_is(&f->y.ev, r->providers[i].name))
				return fail(f, &f->y.ev.start_mark,
				    "provider %s defined twice",
				    yread_quote(s, len, q, sizeof(q)));
		if ((name = rules_arena_strndup(&r->arena, s, len)) == NULL)
			return fail(f, NULL, "out of memory");
		if (r->provider_file == NULL) {
			r->provider_file = f->path;
			r->provider_line = f->y.ev.start_mark.line + 1;
		}
		if (provider(f, name) != 0)
			return -1;
	}
}

/* The keys of a rule file, in the order messages list them. */
enum key {
	KEY_VERSION, KEY_MODE, KEY_PORTS, KEY_ALLOW, KEY_DENY, KEY_INCLUDE,
	KEY_PROVIDERS, KEY_GATEWAY, KEY_COUNT
};
static const char *const key_names[KEY_COUNT] = {
	"version", "mode", "ports", "allow", "deny", "include", "providers",
	"gateway",
};
#define KEYS_EXPECTED \
	"version, mode, ports, allow, deny, include, providers or gateway"

/*
 * Why key k may not be in this document, or NULL: a text has no directory
 * to include from, and a run's policy only narrows the operator's rules.
 */
static const char *
key_refused(const struct loader *ld, int k)
{
	switch (k) {
	case KEY_INCLUDE:
		if (ld->text)
			return "a rule document given as text cannot include "
			    "files";
		break;
	case KEY_MODE:
		if (ld->flags & RULES_LOAD_POLICY)
			return "a run's policy cannot set the mode (the "
			    "operator's rules do)";
		break;
	case KEY_PROVIDERS:
		if (ld->flags & RULES_LOAD_POLICY)
			return "a run's policy cannot define providers (the "
			    "operator's rules do)";
		break;
	case KEY_GATEWAY:
		if (ld->flags & RULES_LOAD_POLICY)
			return "a run's policy cannot switch the provider "
			    "gateway (the operator's rules do)";
		break;
	}
	return NULL;
}

/* The root mapping, from its start event to its end (yread_run()). */
static int
parse_document(struct yread *p, void *arg)
{
	struct yfile *f = arg;
	unsigned long seen_line[KEY_COUNT] = { 0 };
	yaml_mark_t start, keymark;
	const char *s, *why;
	size_t len;
	int k, deny;
	char q[YREAD_QUOTE_BUF];

	start = p->ev.start_mark;
	for (;;) {
		if (yread_next(p) != 0)
			return -1;
		if (p->ev.type == YAML_MAPPING_END_EVENT)
			break;
		if (scalar(f, "a key (" KEYS_EXPECTED ")", &s, &len) != 0)
			return -1;
		keymark = p->ev.start_mark;
		if ((k = yread_key(p, key_names, KEY_COUNT, q, sizeof(q))) ==
		    KEY_COUNT)
			return fail(f, &keymark, "unknown key %s (expected "
			    KEYS_EXPECTED ")", q);
		if (seen_line[k] != 0)
			return fail(f, &keymark, "duplicate key '%s' (first "
			    "at line %lu)", key_names[k], seen_line[k]);
		seen_line[k] = keymark.line + 1;
		if ((why = key_refused(f->ld, k)) != NULL)
			return fail(f, &keymark, "%s: %s", key_names[k], why);

		switch (k) {
		case KEY_VERSION:
			if (key_version(f) != 0)
				return -1;
			break;
		case KEY_MODE:
			if (key_mode(f, &keymark) != 0)
				return -1;
			break;
		case KEY_PORTS:
			if (key_ports(f, &keymark) != 0)
				return -1;
			break;
		case KEY_ALLOW:
		case KEY_DENY:
			deny = k == KEY_DENY;
			if (each_scalar(f, "a host entry", "host entries", 0,
			    entry_item, &deny) != 0)
				return -1;
			break;
		case KEY_INCLUDE:
			if (each_scalar(f, "a file name", "file names", 1,
			    include_item, NULL) != 0)
				return -1;
			break;
		case KEY_PROVIDERS:
			if (key_providers(f) != 0)
				return -1;
			break;
		case KEY_GATEWAY:
			if (key_gateway(f, &keymark) != 0)
				return -1;
			break;
		}
	}
	if (seen_line[KEY_VERSION] == 0)
		return fail(f, &start, "no 'version' key: expected "
		    "'version: 1' in every rule file");
	return 0;
}

/* ------------------------------------------------------------ the files */

/*
 * Reads a whole file into a new buffer.  Returns 0, or an errno value (with
 * EFBIG for a file over RULES_FILE_MAX, EINVAL for one that is not regular).
 */
static int
read_file(const char *path, char **out, size_t *outlen, struct stat *st)
{
	char *buf = NULL;
	size_t len = 0;
	ssize_t n;
	int fd, e = 0;

	*out = NULL;
	*outlen = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1)
		return errno;
	if (fstat(fd, st) == -1) {
		e = errno;
		goto out;
	}
	if (!S_ISREG(st->st_mode)) {
		e = EINVAL;
		goto out;
	}
	if (st->st_size > RULES_FILE_MAX) {
		e = EFBIG;
		goto out;
	}
	if ((buf = malloc((size_t)st->st_size + 1)) == NULL) {
		e = ENOMEM;
		goto out;
	}
	/* Read one byte past the size seen, to notice a file that grew. */
	while (len <= (size_t)st->st_size) {
		n = read(fd, buf + len, (size_t)st->st_size + 1 - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			e = errno;
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > (size_t)st->st_size) {
		e = EFBIG;
		goto out;
	}
	*out = buf;
	*outlen = len;
	buf = NULL;
 out:
	free(buf);
	close(fd);
	return e;
}

static const char *
read_error(int e)
{
	switch (e) {
	case EFBIG:
		return "file too large (at most 32 MiB)";
	case EINVAL:
		return "not a regular file";
	default:
		return strerror(e);
	}
}

/*
 * Parses one rule document, buf[0..len), the top one or an included file:
 * its entries, providers and keys go into ld->r.  `path` is an arena
 * string (entries point at it) and names the document in errors.
 */
static int
load_buffer(struct loader *ld, const char *path, int top, const char *buf,
    size_t len)
{
	struct yfile f;
	int ret;

	memset(&f, 0, sizeof(f));
	f.ld = ld;
	f.path = path;
	f.top = top;
	yread_init(&f.y, f.path, YREAD_BARE, 0, buf, len, ld->err->msg,
	    sizeof(ld->err->msg));
	f.y.expect = "a mapping that starts with 'version: 1'";
	f.y.root = "a mapping of keys (" KEYS_EXPECTED ")";
	f.y.kind = "rule files";
	f.y.star_hint = "; a wildcard entry must be quoted: \"*.example.com\"";
	f.y.nesting_max = RULES_NESTING_MAX;
	ret = yread_run(&f.y, parse_document, &f);
	/* Not failed: an included file's error, named already. */
	if (ret != 0 && f.y.failed)
		error_where(ld->err, f.path, f.y.err_line, f.y.err_col);
	return ret;
}

/*
 * Loads `path`.  For an include, `from` names the including file and `m`
 * the include's position there, where errors about opening are reported.
 */
static int
load_file(struct loader *ld, const char *path, const yaml_mark_t *m,
    const char *from)
{
	struct stat st;
	const char *apath;
	char *buf = NULL, chain[1024], q[YREAD_QUOTE_BUF];
	size_t len, i, off;
	int e, ret = -1;

	if ((e = read_file(path, &buf, &len, &st)) != 0) {
		if (from == NULL)
			set_error(ld->err, path, NULL, "cannot read: %s",
			    read_error(e));
		else
			set_error(ld->err, from, m, "cannot include %s: %s",
			    yread_quote(path, strlen(path), q, sizeof(q)),
			    read_error(e));
		return -1;
	}
	for (i = 0; i < ld->depth; i++) {
		if (ld->stack[i].dev != st.st_dev ||
		    ld->stack[i].ino != st.st_ino)
			continue;
		chain[0] = '\0';
		for (; i <= ld->depth; i++) {
			const char *p = i < ld->depth ? ld->stack[i].path : path;

			off = strlen(chain);
			yread_escape(chain + off, sizeof(chain) - off, p,
			    strlen(p), YREAD_QUOTE_MAX);
			off = strlen(chain);
			if (i < ld->depth)
				snprintf(chain + off, sizeof(chain) - off,
				    " -> ");
		}
		set_error(ld->err, from != NULL ? from : path, m,
		    "include cycle: %s", chain);
		goto out;
	}
	for (i = 0; i < ld->nfiles; i++) {
		/* Included twice, not in a cycle: its entries are in. */
		if (ld->files[i].dev == st.st_dev &&
		    ld->files[i].ino == st.st_ino) {
			ret = 0;
			goto out;
		}
	}
	if (ld->depth > RULES_INCLUDE_DEPTH_MAX) {
		set_error(ld->err, from != NULL ? from : path, m,
		    "includes nested deeper than %d files",
		    RULES_INCLUDE_DEPTH_MAX);
		goto out;
	}
	if (ld->nfiles == RULES_FILES_MAX) {
		set_error(ld->err, from != NULL ? from : path, m,
		    "more than %d rule files in all", RULES_FILES_MAX);
		goto out;
	}
	if ((apath = rules_arena_strndup(&ld->r->arena, path,
	    strlen(path))) == NULL) {
		set_error(ld->err, path, NULL, "out of memory");
		goto out;
	}
	ld->files[ld->nfiles].dev = st.st_dev;
	ld->files[ld->nfiles].ino = st.st_ino;
	ld->files[ld->nfiles++].path = apath;
	ld->stack[ld->depth].dev = st.st_dev;
	ld->stack[ld->depth].ino = st.st_ino;
	ld->stack[ld->depth++].path = apath;
	ret = load_buffer(ld, apath, from == NULL, buf, len);
	ld->depth--;
 out:
	free(buf);
	return ret;
}

/*
 * Starts a load: a new, empty set whose path is `name` (`what` names that
 * in the error when it is too long).  0, or -1 with err filled.
 */
static int
loader_init(struct loader *ld, const char *name, const char *what,
    struct rules_error *err)
{
	memset(err, 0, sizeof(*err));
	memset(ld, 0, sizeof(*ld));
	ld->err = err;
	if (strlen(name) >= RULES_PATH_MAX) {
		set_error(err, "(rules)", NULL, "%s too long", what);
		return -1;
	}
	if ((ld->r = rules_new()) == NULL ||
	    (ld->r->path = strdup(name)) == NULL) {
		rules_free(ld->r);
		ld->r = NULL;
		set_error(err, name, NULL, "out of memory");
		return -1;
	}
	return 0;
}

/*
 * Ends a load whose parse returned `ret`: on success the names of
 * `gateway:` are checked against the providers of the whole set and the
 * set is compiled and handed over in *out, else (or when either fails)
 * freed.
 */
static int
loader_finish(struct loader *ld, int ret, struct rules **out)
{
	int e;

	if (ret == 0)
		ret = gateway_resolve(ld);
	free(ld->gateway);
	ld->gateway = NULL;
	if (ret == 0 && (e = rules_compile(ld->r)) != RULES_OK) {
		set_error(ld->err, ld->r->path, NULL, "%s", rules_strerror(e));
		ret = -1;
	}
	if (ret != 0) {
		rules_free(ld->r);
		ld->r = NULL;
		return -1;
	}
	*out = ld->r;
	ld->r = NULL;
	return 0;
}

int
rules_load(const char *path, struct rules **out, struct rules_error *err)
{
	struct loader ld;

	*out = NULL;
	if (loader_init(&ld, path, "path", err) != 0)
		return -1;
	return loader_finish(&ld, load_file(&ld, path, NULL, NULL), out);
}

int
rules_load_text(const char *name, const char *text, size_t len,
    unsigned int flags, struct rules **out, struct rules_error *err)
{
	struct loader ld;
	const char *path;
	int ret = -1;

	*out = NULL;
	if (loader_init(&ld, name, "name", err) != 0)
		return -1;
	ld.flags = flags;
	ld.text = 1;
	if (len > RULES_FILE_MAX)
		set_error(err, name, NULL, "text too large (at most %d MiB)",
		    RULES_FILE_MAX / (1024 * 1024));
	else if ((path = rules_arena_strndup(&ld.r->arena, name,
	    strlen(name))) == NULL)
		set_error(err, name, NULL, "out of memory");
	else	/* libyaml wants a pointer even for no bytes */
		ret = load_buffer(&ld, path, 1, len > 0 ? text : "", len);
	return loader_finish(&ld, ret, out);
}

/* ------------------------------------------------------------ the dump */

/* A dump's text as it grows; the first error sticks (an errno value). */
struct dump {
	char	*buf;		/* NUL-terminated once written to */
	size_t	 len;
	size_t	 cap;
	int	 error;
};

static void
dump_add(struct dump *d, const char *s, size_t n)
{
	size_t cap;
	char *p;

	if (d->error != 0)
		return;
	/* What rules_load_text() would refuse is not written. */
	if (n > RULES_FILE_MAX - d->len) {
		d->error = EFBIG;
		return;
	}
	if (d->cap - d->len <= n) {
		cap = d->cap == 0 ? DUMP_BUF_MIN : d->cap;
		while (cap - d->len <= n)
			cap *= 2;
		if ((p = realloc(d->buf, cap)) == NULL) {
			d->error = ENOMEM;
			return;
		}
		d->buf = p;
		d->cap = cap;
	}
	memcpy(d->buf + d->len, s, n);
	d->len += n;
	d->buf[d->len] = '\0';
}

static void
dump_str(struct dump *d, const char *s)
{
	dump_add(d, s, strlen(s));
}

/*
 * s as a JSON string: '"' and '\' escaped, control bytes as \u00XX.  What
 * a set holds is ASCII without either, checked when it was loaded; the
 * escapes keep the text JSON whatever it holds.
 */
static void
dump_string(struct dump *d, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	char esc[8];
	size_t i, start = 0;
	unsigned char c;

	dump_add(d, "\"", 1);
	for (i = 0; s[i] != '\0'; i++) {
		c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		dump_add(d, s + start, i - start);
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			dump_add(d, esc, 2);
		} else {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			dump_add(d, esc, 6);
		}
		start = i + 1;
	}
	dump_add(d, s + start, i - start);
	dump_add(d, "\"", 1);
}

/* A key of the top mapping, on a line of its own. */
static void
dump_key(struct dump *d, enum key k)
{
	dump_str(d, "  ");
	dump_string(d, key_names[k]);
	dump_str(d, ": ");
}

/* The allow or the deny entries, in the order loaded, one a line. */
static void
dump_entries(struct dump *d, const struct rules *r, int deny)
{
	size_t i, n = 0;

	dump_key(d, deny ? KEY_DENY : KEY_ALLOW);
	dump_str(d, "[");
	for (i = 0; i < r->nentries; i++) {
		if ((r->entries[i].deny != 0) != deny)
			continue;
		dump_str(d, n++ == 0 ? "\n    " : ",\n    ");
		dump_string(d, r->entries[i].text);
	}
	dump_str(d, n > 0 ? "\n  ]" : "]");
}

/* A list of strings on one line: ["a", "b"]. */
static void
dump_strings(struct dump *d, const char *const *v, size_t n)
{
	size_t i;

	dump_str(d, "[");
	for (i = 0; i < n; i++) {
		if (i > 0)
			dump_str(d, ", ");
		dump_string(d, v[i]);
	}
	dump_str(d, "]");
}

/* ", "KEY": " inside a provider's object. */
static void
dump_provider_key(struct dump *d, enum provider_key k)
{
	dump_str(d, ", ");
	dump_string(d, provider_key_names[k]);
	dump_str(d, ": ");
}

/* A provider's gateway keys, when it has `api`. */
static void
dump_gateway_keys(struct dump *d, const struct rules_provider *p)
{
	const struct rules_broker *b = p->broker;
	char text[RULES_HOST_TEXT_MAX + 8], num[16];
	char item[ENV_NAME_MAX + RULES_BASE_URL_PATH_MAX + 2];
	size_t i;

	if (p->api == NULL)
		return;
	dump_provider_key(d, PROVIDER_API);
	if (p->api_port == 443)
		snprintf(text, sizeof(text), "%s", p->api);
	else
		snprintf(text, sizeof(text), "%s:%u", p->api,
		    (unsigned int)p->api_port);
	dump_string(d, text);
	if (p->base_url_count > 0) {
		dump_provider_key(d, PROVIDER_BASE_URL);
		dump_str(d, "[");
		for (i = 0; i < p->base_url_count; i++) {
			if (i > 0)
				dump_str(d, ", ");
			snprintf(item, sizeof(item), "%s%s%s",
			    p->base_url[i].var,
			    p->base_url[i].path[0] != '\0' ? "=" : "",
			    p->base_url[i].path);
			dump_string(d, item);
		}
		dump_str(d, "]");
	}
	if (p->key_header_count > 0) {
		dump_provider_key(d, PROVIDER_KEY_HEADERS);
		dump_strings(d, p->key_headers, p->key_header_count);
	}
	if (b == NULL)
		return;
	dump_provider_key(d, PROVIDER_BROKER);
	dump_str(d, "{");
	dump_string(d, broker_key_names[BROKER_ENV]);
	dump_str(d, ": ");
	dump_string(d, b->env);
	dump_str(d, ", ");
	dump_string(d, broker_key_names[BROKER_HEADER]);
	dump_str(d, ": ");
	dump_string(d, b->header);
	if (b->scheme[0] != '\0') {
		dump_str(d, ", ");
		dump_string(d, broker_key_names[BROKER_SCHEME]);
		dump_str(d, ": ");
		dump_string(d, b->scheme);
	}
	dump_str(d, ", ");
	dump_string(d, broker_key_names[BROKER_PREFIX]);
	dump_str(d, ": ");
	dump_string(d, b->prefix);
	dump_str(d, ", ");
	dump_string(d, broker_key_names[BROKER_LENGTH]);
	snprintf(num, sizeof(num), ": %zu}", b->length);
	dump_str(d, num);
}

/* Each provider on a line: its env, then its gateway's keys. */
static void
dump_providers(struct dump *d, const struct rules *r)
{
	const struct rules_provider *p;
	size_t i;

	dump_key(d, KEY_PROVIDERS);
	dump_str(d, "{");
	for (i = 0; i < r->nproviders; i++) {
		p = &r->providers[i];
		dump_str(d, i == 0 ? "\n    " : ",\n    ");
		dump_string(d, p->name);
		dump_str(d, ": {");
		dump_string(d, provider_key_names[PROVIDER_ENV]);
		dump_str(d, ": ");
		dump_strings(d, p->env, p->env_count);
		dump_gateway_keys(d, p);
		dump_str(d, "}");
	}
	dump_str(d, "\n  }");
}

/* Whether a provider's gateway is not off. */
static int
gateway_any(const struct rules *r)
{
	size_t i;

	for (i = 0; i < r->nproviders; i++)
		if (r->providers[i].gateway != RULES_GATEWAY_OFF)
			return 1;
	return 0;
}

/* `gateway:`: the providers whose gateway is not off, one a line. */
static void
dump_gateway(struct dump *d, const struct rules *r)
{
	size_t i, n = 0;

	dump_key(d, KEY_GATEWAY);
	dump_str(d, "{");
	for (i = 0; i < r->nproviders; i++) {
		if (r->providers[i].gateway == RULES_GATEWAY_OFF)
			continue;
		dump_str(d, n++ == 0 ? "\n    " : ",\n    ");
		dump_string(d, r->providers[i].name);
		dump_str(d, ": ");
		dump_string(d, gateway_names[r->providers[i].gateway]);
	}
	dump_str(d, "\n  }");
}

int
rules_dump(const struct rules *r, char **out, size_t *len)
{
	struct dump d;
	char num[16];
	size_t i;

	*out = NULL;
	*len = 0;
	memset(&d, 0, sizeof(d));
	dump_str(&d, "{\n");
	dump_key(&d, KEY_VERSION);
	dump_str(&d, DOC_VERSION ",\n");
	dump_key(&d, KEY_MODE);
	dump_string(&d, mode_names[r->mode]);
	dump_str(&d, ",\n");
	dump_key(&d, KEY_PORTS);
	dump_str(&d, "[");
	for (i = 0; i < r->ndefault_ports; i++) {
		snprintf(num, sizeof(num), "%s%u", i > 0 ? ", " : "",
		    (unsigned int)r->default_ports[i]);
		dump_str(&d, num);
	}
	dump_str(&d, "],\n");
	dump_entries(&d, r, 0);
	dump_str(&d, ",\n");
	dump_entries(&d, r, 1);
	if (r->nproviders > 0) {
		dump_str(&d, ",\n");
		dump_providers(&d, r);
	}
	if (gateway_any(r)) {
		dump_str(&d, ",\n");
		dump_gateway(&d, r);
	}
	dump_str(&d, "\n}\n");
	if (d.error != 0) {
		free(d.buf);
		errno = d.error;
		return -1;
	}
	*out = d.buf;
	*len = d.len;
	return 0;
}

/*
 * The entries in the order rules_dump() writes them: the allow entries,
 * then the deny entries, each in the order loaded.  The index in
 * r->entries of the one after entry i (SIZE_MAX: the first), or
 * r->nentries past the last.
 */
static size_t
dump_next(const struct rules *r, size_t i)
{
	int deny = i != SIZE_MAX && r->entries[i].deny != 0;
	size_t j = i == SIZE_MAX ? 0 : i + 1;

	for (;;) {
		for (; j < r->nentries; j++)
			if ((r->entries[j].deny != 0) == deny)
				return j;
		if (deny)
			return r->nentries;
		deny = 1;
		j = 0;
	}
}

int
rules_dump_where(const struct rules *r, char **out, size_t *len)
{
	char where[RULES_WHERE_MAX];
	struct dump d;
	size_t k;

	*out = NULL;
	*len = 0;
	memset(&d, 0, sizeof(d));
	dump_str(&d, "[");
	for (k = dump_next(r, SIZE_MAX); k < r->nentries; k = dump_next(r, k)) {
		if (d.len > 1)
			dump_str(&d, ",");
		dump_string(&d, rules_entry_where(&r->entries[k], where,
		    sizeof(where)));
	}
	dump_str(&d, "]");
	if (d.error != 0) {
		free(d.buf);
		errno = d.error;
		return -1;
	}
	*out = d.buf;
	*len = d.len;
	return 0;
}

int
rules_set_where(struct rules *r, const char *const *where, size_t n)
{
	struct rules_entry *e;
	const char **file;
	unsigned long *line;
	const char *colon;
	char *end;
	size_t i, k;
	int ret = -1;

	if (n != r->nentries)
		return -1;
	/* Each checked and copied first: a bad one changes nothing. */
	file = calloc(n + 1, sizeof(*file));
	line = calloc(n + 1, sizeof(*line));
	if (file == NULL || line == NULL)
		goto out;
	for (k = 0; k < n; k++) {
		if ((colon = strrchr(where[k], ':')) == NULL ||
		    colon == where[k] || colon[1] < '0' || colon[1] > '9')
			goto out;
		errno = 0;
		line[k] = strtoul(colon + 1, &end, 10);
		if (errno != 0 || *end != '\0' || line[k] > UINT32_MAX ||
		    (size_t)(colon - where[k]) >= RULES_PATH_MAX ||
		    (file[k] = rules_arena_strndup(&r->arena, where[k],
		    (size_t)(colon - where[k]))) == NULL)
			goto out;
	}
	for (k = 0, i = dump_next(r, SIZE_MAX); i < n; k++, i = dump_next(r, i)) {
		e = &r->entries[i];
		e->file = file[k];
		e->line = (uint32_t)line[k];
	}
	ret = 0;
 out:
	free(file);
	free(line);
	return ret;
}
