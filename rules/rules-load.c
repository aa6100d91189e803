/*
 * rules-load.c — reading rule files with libyaml.
 *
 * The loader walks libyaml's event stream against a fixed schema instead of
 * building a document tree: every event is checked as it arrives, so a file
 * that is wrong stops at the first wrong token, with its line and column,
 * and nothing about the file's shape (depth, aliases, size) can make the
 * loader do unbounded work.  Entries go into a set that is not visible to
 * anybody until the whole load succeeded; on any error the set is freed.
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
#include <unistd.h>

#include <yaml.h>

#include "rules.h"
#include "rules-int.h"

#define QUOTE_MAX	100	/* bytes of offending text quoted in a message */
#define QUOTE_BUF	(QUOTE_MAX * 4 + 8)	/* its quoted, escaped form */
#define ENV_NAME_MAX	128	/* bytes in an environment variable name */
#define PROVIDER_ENV_MAX 32	/* variables one provider may name */

struct loaded_file {
	dev_t		 dev;
	ino_t		 ino;
	const char	*path;
};

struct loader {
	struct rules		*r;
	struct rules_error	*err;
	struct loaded_file	 stack[RULES_INCLUDE_DEPTH_MAX + 1];
	size_t			 depth;		/* files on the stack */
	struct loaded_file	 files[RULES_FILES_MAX];
	size_t			 nfiles;
	size_t			 providers_cap;
};

/* One file being parsed. */
struct yfile {
	struct loader	*ld;
	const char	*path;		/* arena copy: entries point at it */
	int		 top;		/* the file rules_load() was given */
	yaml_parser_t	 parser;
	yaml_event_t	 ev;		/* the current event */
	int		 have_ev;
	int		 nesting;
	const char	*buf;		/* the file's bytes, for reader errors */
	size_t		 len;
};

static int	load_file(struct loader *, const char *, const yaml_mark_t *,
		    const char *);
static char	*escape(char *, size_t, const char *, size_t, size_t);

static void __attribute__((format(printf, 4, 5)))
set_error(struct rules_error *err, const char *file, const yaml_mark_t *m,
    const char *fmt, ...)
{
	va_list ap;

	escape(err->file, sizeof(err->file), file, strlen(file), SIZE_MAX);
	err->line = m != NULL ? m->line + 1 : 0;
	err->col = m != NULL ? m->column + 1 : 0;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
}

#define fail(f, m, ...) \
	(set_error((f)->ld->err, (f)->path, (m), __VA_ARGS__), -1)

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

/*
 * Copies at most `max` bytes of s into buf with control bytes (which YAML
 * escapes and file names can hold) written as \xHH, so that a rule file
 * can never put a line break or a terminal escape into a message; other
 * bytes stay as written.  "..." marks a cut.  Returns buf.
 */
static char *
escape(char *buf, size_t buflen, const char *s, size_t len, size_t max)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0;

	for (i = 0; i < len && i < max && o + 8 < buflen; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f) {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[c >> 4];
			buf[o++] = hex[c & 15];
		} else
			buf[o++] = (char)c;
	}
	if (i < len && o + 4 <= buflen) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

/* Quotes at most QUOTE_MAX bytes of s, escaped, for a message. */
static const char *
quote(const char *s, size_t len, char *buf, size_t buflen)
{
	size_t o;

	buf[0] = '\'';
	escape(buf + 1, buflen - 2, s, len, QUOTE_MAX);
	o = strlen(buf);
	buf[o++] = '\'';
	buf[o] = '\0';
	return buf;
}

/* The current scalar is exactly `word` (no embedded NUL tricks). */
static int
scalar_is(const yaml_event_t *ev, const char *word)
{
	size_t len = strlen(word);

	return ev->type == YAML_SCALAR_EVENT &&
	    ev->data.scalar.length == len &&
	    memcmp(ev->data.scalar.value, word, len) == 0;
}

static int
is_null(const yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;

	if (ev->type != YAML_SCALAR_EVENT || !ev->data.scalar.plain_implicit)
		return 0;
	return ev->data.scalar.length == 0 || strcmp(v, "~") == 0 ||
	    strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
	    strcmp(v, "NULL") == 0;
}

/* What an event is, for "found ..." in messages. */
static const char *
describe(const yaml_event_t *ev, char *buf, size_t len)
{
	switch (ev->type) {
	case YAML_MAPPING_START_EVENT:
		return "a mapping";
	case YAML_SEQUENCE_START_EVENT:
		return "a list";
	case YAML_SCALAR_EVENT:
		if (is_null(ev))
			return "nothing (null)";
		return quote((const char *)ev->data.scalar.value,
		    ev->data.scalar.length, buf, len);
	case YAML_MAPPING_END_EVENT:
	case YAML_SEQUENCE_END_EVENT:
		return "the end of a collection";
	default:
		return "something else";
	}
}

/*
 * The position of a byte offset: libyaml gives reader errors (control
 * characters, invalid UTF-8) as an offset, not as a mark.
 */
static yaml_mark_t
offset_mark(const struct yfile *f, size_t offset)
{
	yaml_mark_t m;
	size_t i;

	memset(&m, 0, sizeof(m));
	for (i = 0; i < offset && i < f->len; i++) {
		if (f->buf[i] == '\n') {
			m.line++;
			m.column = 0;
		} else if (((unsigned char)f->buf[i] & 0xc0) != 0x80)
			m.column++;	/* count characters, not bytes */
	}
	m.index = offset;
	return m;
}

/* Turns libyaml's error into a message with a position and a hint. */
static int
parse_error(struct yfile *f)
{
	yaml_parser_t *p = &f->parser;
	yaml_mark_t m = p->problem_mark;
	const char *problem = p->problem != NULL ? p->problem : "parse error";
	const char *hint = "";
	char ctx[128] = "";
	unsigned char c;

	if (p->error == YAML_MEMORY_ERROR)
		return fail(f, NULL, "out of memory");
	if (p->error == YAML_READER_ERROR) {
		m = offset_mark(f, p->problem_offset);
		if (p->problem_value != -1)
			return fail(f, &m, "invalid character (byte 0x%02x): "
			    "%s; rule files are UTF-8 text",
			    (unsigned int)p->problem_value & 0xff, problem);
		return fail(f, &m, "invalid text: %s", problem);
	}
	if (p->context != NULL)
		snprintf(ctx, sizeof(ctx), " %s (started at %lu:%lu)",
		    p->context, (unsigned long)p->context_mark.line + 1,
		    (unsigned long)p->context_mark.column + 1);
	c = m.index < f->len ? (unsigned char)f->buf[m.index] : 0;
	if (c == '\t')
		hint = "; tabs cannot indent YAML: use spaces";
	else if (p->context != NULL && strstr(p->context, "alias") != NULL)
		hint = "; a wildcard entry must be quoted: \"*.example.com\"";
	return fail(f, &m, "invalid YAML: %s%s%s", problem, ctx, hint);
}

/* Advances to the next event, refusing what the rule language never uses. */
static int
next(struct yfile *f)
{
	yaml_parser_t *p = &f->parser;
	yaml_event_t *ev = &f->ev;
	const yaml_char_t *anchor = NULL, *tag = NULL;
	char q[QUOTE_BUF];

	if (f->have_ev)
		yaml_event_delete(ev);
	f->have_ev = 0;
	if (!yaml_parser_parse(p, ev))
		return parse_error(f);
	f->have_ev = 1;
	switch (ev->type) {
	case YAML_ALIAS_EVENT:
		return fail(f, &ev->start_mark,
		    "YAML alias found: aliases and anchors are not allowed in rule files");
	case YAML_SCALAR_EVENT:
		anchor = ev->data.scalar.anchor;
		tag = ev->data.scalar.tag;
		break;
	case YAML_SEQUENCE_START_EVENT:
		anchor = ev->data.sequence_start.anchor;
		tag = ev->data.sequence_start.tag;
		f->nesting++;
		break;
	case YAML_MAPPING_START_EVENT:
		anchor = ev->data.mapping_start.anchor;
		tag = ev->data.mapping_start.tag;
		f->nesting++;
		break;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		f->nesting--;
		break;
	default:
		break;
	}
	if (anchor != NULL) {
		char shown[QUOTE_MAX + 2];

		snprintf(shown, sizeof(shown), "&%s", (const char *)anchor);
		return fail(f, &ev->start_mark, "YAML anchor %s found: "
		    "aliases and anchors are not allowed in rule files",
		    quote(shown, strlen(shown), q, sizeof(q)));
	}
	if (tag != NULL) {
		/* Show "!!str" as written, not its expansion. */
		const char *t = (const char *)tag;
		char shown[QUOTE_MAX + 3];

		if (strncmp(t, "tag:yaml.org,2002:", 18) == 0)
			snprintf(shown, sizeof(shown), "!!%s", t + 18);
		else
			snprintf(shown, sizeof(shown), "%s", t);
		return fail(f, &ev->start_mark, "YAML tag %s found: tags are "
		    "not allowed in rule files",
		    quote(shown, strlen(shown), q, sizeof(q)));
	}
	if (f->nesting > RULES_NESTING_MAX)
		return fail(f, &ev->start_mark,
		    "collections nested deeper than %d levels", RULES_NESTING_MAX);
	return 0;
}

static int
expect(struct yfile *f, yaml_event_type_t type, const char *what)
{
	char buf[QUOTE_BUF];

	if (next(f) != 0)
		return -1;
	if (f->ev.type != type)
		return fail(f, &f->ev.start_mark, "found %s: expected %s",
		    describe(&f->ev, buf, sizeof(buf)), what);
	return 0;
}

/* The current event as a string scalar (not null), else an error. */
static int
scalar(struct yfile *f, const char *what, const char **s, size_t *len)
{
	char buf[QUOTE_BUF];

	if (f->ev.type != YAML_SCALAR_EVENT || is_null(&f->ev))
		return fail(f, &f->ev.start_mark, "found %s: expected %s",
		    describe(&f->ev, buf, sizeof(buf)), what);
	*s = (const char *)f->ev.data.scalar.value;
	*len = f->ev.data.scalar.length;
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
	char buf[QUOTE_BUF];
	const char *s;
	size_t len;

	if (next(f) != 0)
		return -1;
	if (single_ok && f->ev.type == YAML_SCALAR_EVENT && !is_null(&f->ev)) {
		if (scalar(f, one, &s, &len) != 0)
			return -1;
		return item(f, s, len, arg);
	}
	if (f->ev.type != YAML_SEQUENCE_START_EVENT)
		return fail(f, &f->ev.start_mark, "found %s: expected a list "
		    "of %s", describe(&f->ev, buf, sizeof(buf)), many);
	for (;;) {
		if (next(f) != 0)
			return -1;
		if (f->ev.type == YAML_SEQUENCE_END_EVENT)
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
	char q[QUOTE_BUF];
	const char *hint = "";

	r = rules_add_entry(f->ld->r, s, len, deny, f->path,
	    f->ev.start_mark.line + 1);
	if (r == RULES_OK)
		return 0;
	/* "a.com b.com": two entries run together by a missing ',' or ']'. */
	if (memchr(s, ' ', len) != NULL || memchr(s, '\n', len) != NULL)
		hint = " (an entry is one word: is a ',' or a ']' missing?)";
	return fail(f, &f->ev.start_mark, "%s entry %s: %s%s",
	    deny ? "deny" : "allow", quote(s, len, q, sizeof(q)),
	    rules_strerror(r), hint);
}

static int
key_version(struct yfile *f)
{
	char buf[QUOTE_BUF];

	if (next(f) != 0)
		return -1;
	if (!scalar_is(&f->ev, "1") || !f->ev.data.scalar.plain_implicit)
		return fail(f, &f->ev.start_mark, "found %s%s: expected version "
		    "1, a number (the only version)",
		    f->ev.type == YAML_SCALAR_EVENT &&
		    !f->ev.data.scalar.plain_implicit ? "the string " : "",
		    describe(&f->ev, buf, sizeof(buf)));
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

static int
key_mode(struct yfile *f, const yaml_mark_t *keymark)
{
	const char *s;
	size_t len;
	char q[QUOTE_BUF];

	if (top_only(f, keymark, "mode") != 0 || next(f) != 0 ||
	    scalar(f, "enforce or report", &s, &len) != 0)
		return -1;
	f->ld->r->mode_line = keymark->line + 1;
	if (scalar_is(&f->ev, "enforce"))
		f->ld->r->mode = RULES_MODE_ENFORCE;
	else if (scalar_is(&f->ev, "report"))
		f->ld->r->mode = RULES_MODE_REPORT;
	else
		return fail(f, &f->ev.start_mark,
		    "found mode %s: expected enforce or report",
		    quote(s, len, q, sizeof(q)));
	return 0;
}

static int
port_item(struct yfile *f, const char *s, size_t len, void *arg)
{
	struct rules *r = f->ld->r;
	uint16_t port;
	size_t i;
	char q[QUOTE_BUF];

	(void)arg;
	if (!f->ev.data.scalar.plain_implicit)
		return fail(f, &f->ev.start_mark, "found the string %s: expected "
		    "a port number (write it without quotes)",
		    quote(s, len, q, sizeof(q)));
	if (rules_port_parse(s, len, &port) != RULES_OK)
		return fail(f, &f->ev.start_mark, "found port %s: expected a "
		    "number from 1 to 65535", quote(s, len, q, sizeof(q)));
	for (i = 0; i < r->ndefault_ports; i++)
		if (r->default_ports[i] == port)
			return fail(f, &f->ev.start_mark,
			    "port %u listed twice", port);
	if (r->ndefault_ports == RULES_PORTS_MAX)
		return fail(f, &f->ev.start_mark, "more than %d ports",
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
	m = f->ev.start_mark;
	if (f->ld->r->ndefault_ports == 0)
		return fail(f, &m, "empty list of ports: expected at least one "
		    "port (leave 'ports' out for the default [443, 80])");
	return 0;
}

static int
include_item(struct yfile *f, const char *s, size_t len, void *arg)
{
	char path[RULES_PATH_MAX], q[QUOTE_BUF];
	const char *slash;
	int n;

	(void)arg;
	if (len == 0 || memchr(s, '\0', len) != NULL)
		return fail(f, &f->ev.start_mark,
		    "found include %s: expected a file name",
		    quote(s, len, q, sizeof(q)));
	slash = strrchr(f->path, '/');
	if (s[0] == '/' || slash == NULL)
		n = snprintf(path, sizeof(path), "%.*s", (int)len, s);
	else
		n = snprintf(path, sizeof(path), "%.*s/%.*s",
		    (int)(slash - f->path), f->path, (int)len, s);
	if (n < 0 || (size_t)n >= sizeof(path))
		return fail(f, &f->ev.start_mark, "include path too long");
	return load_file(f->ld, path, &f->ev.start_mark, f->path);
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
	char q[QUOTE_BUF];
	size_t i;

	if (!valid_env_name(s, len))
		return fail(f, &f->ev.start_mark, "found %s: expected an "
		    "environment variable name (letters, digits, '_')",
		    quote(s, len, q, sizeof(q)));
	for (i = 0; i < l->n; i++)
		if (scalar_is(&f->ev, l->names[i]))
			return fail(f, &f->ev.start_mark,
			    "variable %s listed twice", quote(s, len, q,
			    sizeof(q)));
	if (l->n == PROVIDER_ENV_MAX)
		return fail(f, &f->ev.start_mark, "more than %d variables",
		    PROVIDER_ENV_MAX);
	if ((l->names[l->n] = rules_arena_strndup(&f->ld->r->arena, s,
	    len)) == NULL)
		return fail(f, NULL, "out of memory");
	l->n++;
	return 0;
}

static int
provider_add(struct yfile *f, const char *name, struct env_list *env)
{
	struct rules *r = f->ld->r;
	struct rules_provider *p;
	size_t cap;

	if (r->nproviders == f->ld->providers_cap) {
		cap = f->ld->providers_cap == 0 ? 16 : f->ld->providers_cap * 2;
		if ((p = reallocarray(r->providers, cap, sizeof(*p))) == NULL)
			return fail(f, NULL, "out of memory");
		r->providers = p;
		f->ld->providers_cap = cap;
	}
	p = &r->providers[r->nproviders];
	p->name = name;
	p->env_count = env->n;
	p->env = NULL;
	if (env->n > 0) {
		p->env = rules_arena_alloc(&r->arena,
		    env->n * sizeof(*p->env));
		if (p->env == NULL)
			return fail(f, NULL, "out of memory");
		memcpy(p->env, env->names, env->n * sizeof(*p->env));
	}
	r->nproviders++;
	return 0;
}

/* One provider: a mapping with `hosts` and `env`. */
static int
provider(struct yfile *f, const char *name)
{
	struct env_list env = { .n = 0 };
	const char *s;
	size_t len;
	int seen_hosts = 0, seen_env = 0, allow = 0;
	char q[QUOTE_BUF];

	if (expect(f, YAML_MAPPING_START_EVENT,
	    "a mapping with 'hosts' and 'env'") != 0)
		return -1;
	for (;;) {
		if (next(f) != 0)
			return -1;
		if (f->ev.type == YAML_MAPPING_END_EVENT)
			break;
		if (scalar(f, "'hosts' or 'env'", &s, &len) != 0)
			return -1;
		if (scalar_is(&f->ev, "hosts") && !seen_hosts) {
			seen_hosts = 1;
			if (each_scalar(f, "a host entry", "host entries", 0,
			    entry_item,
			    &allow) != 0)
				return -1;
		} else if (scalar_is(&f->ev, "env") && !seen_env) {
			seen_env = 1;
			if (each_scalar(f, "an environment variable name",
			    "environment variable names", 0,
			    env_item, &env) != 0)
				return -1;
		} else if (scalar_is(&f->ev, "hosts") ||
		    scalar_is(&f->ev, "env"))
			return fail(f, &f->ev.start_mark,
			    "duplicate key %s in provider '%s'",
			    quote(s, len, q, sizeof(q)), name);
		else
			return fail(f, &f->ev.start_mark,
			    "unknown key %s in provider '%s' "
			    "(expected hosts or env)",
			    quote(s, len, q, sizeof(q)), name);
	}
	return provider_add(f, name, &env);
}

static int
key_providers(struct yfile *f)
{
	struct rules *r = f->ld->r;
	const char *s, *name;
	size_t len, i;
	char q[QUOTE_BUF];

	if (expect(f, YAML_MAPPING_START_EVENT,
	    "a mapping of provider names") != 0)
		return -1;
	for (;;) {
		if (next(f) != 0)
			return -1;
		if (f->ev.type == YAML_MAPPING_END_EVENT)
			return 0;
		if (scalar(f, "a provider name", &s, &len) != 0)
			return -1;
		if (!valid_provider_name(s, len))
			return fail(f, &f->ev.start_mark, "found provider name "
			    "%s: expected lowercase letters, digits and '-'",
			    quote(s, len, q, sizeof(q)));
		for (i = 0; i < r->nproviders; i++)
			if (scalar_is(&f->ev, r->providers[i].name))
				return fail(f, &f->ev.start_mark,
				    "provider %s defined twice",
				    quote(s, len, q, sizeof(q)));
		if ((name = rules_arena_strndup(&r->arena, s, len)) == NULL)
			return fail(f, NULL, "out of memory");
		if (r->provider_file == NULL) {
			r->provider_file = f->path;
			r->provider_line = f->ev.start_mark.line + 1;
		}
		if (provider(f, name) != 0)
			return -1;
	}
}

/* The keys of a rule file, in the order messages list them. */
enum key {
	KEY_VERSION, KEY_MODE, KEY_PORTS, KEY_ALLOW, KEY_DENY, KEY_INCLUDE,
	KEY_PROVIDERS, KEY_COUNT
};
static const char *const key_names[KEY_COUNT] = {
	"version", "mode", "ports", "allow", "deny", "include", "providers",
};
#define KEYS_EXPECTED \
	"version, mode, ports, allow, deny, include or providers"

static int
parse_document(struct yfile *f)
{
	unsigned long seen_line[KEY_COUNT] = { 0 };
	yaml_mark_t start, keymark;
	const char *s;
	size_t len;
	int k, deny;
	char q[QUOTE_BUF];

	if (expect(f, YAML_STREAM_START_EVENT, "a YAML stream") != 0 ||
	    next(f) != 0)
		return -1;
	if (f->ev.type == YAML_STREAM_END_EVENT)
		return fail(f, &f->ev.start_mark, "empty file: expected a "
		    "mapping that starts with 'version: 1'");
	if (f->ev.type != YAML_DOCUMENT_START_EVENT)
		return fail(f, &f->ev.start_mark, "expected a YAML document");
	if (next(f) != 0)
		return -1;
	if (is_null(&f->ev))
		return fail(f, &f->ev.start_mark, "empty document: expected "
		    "a mapping that starts with 'version: 1'");
	if (f->ev.type != YAML_MAPPING_START_EVENT)
		return fail(f, &f->ev.start_mark, "found %s: expected a "
		    "mapping of keys (" KEYS_EXPECTED ")",
		    describe(&f->ev, q, sizeof(q)));
	start = f->ev.start_mark;

	for (;;) {
		if (next(f) != 0)
			return -1;
		if (f->ev.type == YAML_MAPPING_END_EVENT)
			break;
		if (scalar(f, "a key (" KEYS_EXPECTED ")", &s, &len) != 0)
			return -1;
		keymark = f->ev.start_mark;
		for (k = 0; k < KEY_COUNT; k++)
			if (scalar_is(&f->ev, key_names[k]))
				break;
		if (k == KEY_COUNT)
			return fail(f, &keymark, "unknown key %s (expected "
			    KEYS_EXPECTED ")", quote(s, len, q, sizeof(q)));
		if (seen_line[k] != 0)
			return fail(f, &keymark, "duplicate key '%s' (first "
			    "at line %lu)", key_names[k], seen_line[k]);
		seen_line[k] = keymark.line + 1;

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
			    entry_item,
			    &deny) != 0)
				return -1;
			break;
		case KEY_INCLUDE:
			if (each_scalar(f, "a file name", "file names", 1,
			    include_item,
			    NULL) != 0)
				return -1;
			break;
		case KEY_PROVIDERS:
			if (key_providers(f) != 0)
				return -1;
			break;
		}
	}
	if (seen_line[KEY_VERSION] == 0)
		return fail(f, &start, "no 'version' key: expected "
		    "'version: 1' in every rule file");

	if (expect(f, YAML_DOCUMENT_END_EVENT, "the end of the document") != 0 ||
	    next(f) != 0)
		return -1;
	if (f->ev.type != YAML_STREAM_END_EVENT)
		return fail(f, &f->ev.start_mark, "a second YAML document: "
		    "a rule file holds exactly one");
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
 * Loads `path`.  For an include, `from` names the including file and `m`
 * the include's position there, where errors about opening are reported.
 */
static int
load_file(struct loader *ld, const char *path, const yaml_mark_t *m,
    const char *from)
{
	struct yfile f;
	struct stat st;
	char *buf = NULL, chain[1024], q[QUOTE_BUF];
	size_t len, i, off;
	int e, ret = -1;

	memset(&f, 0, sizeof(f));
	f.ld = ld;
	f.top = from == NULL;
	if ((e = read_file(path, &buf, &len, &st)) != 0) {
		if (from == NULL)
			set_error(ld->err, path, NULL, "cannot read: %s",
			    read_error(e));
		else
			set_error(ld->err, from, m, "cannot include %s: %s",
			    quote(path, strlen(path), q, sizeof(q)),
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
			escape(chain + off, sizeof(chain) - off, p, strlen(p),
			    QUOTE_MAX);
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
		set_error(ld->err, from != NULL ? from : path, m, "includes nested deeper than %d "
		    "files", RULES_INCLUDE_DEPTH_MAX);
		goto out;
	}
	if (ld->nfiles == RULES_FILES_MAX) {
		set_error(ld->err, from != NULL ? from : path, m, "more than %d rule files in all",
		    RULES_FILES_MAX);
		goto out;
	}
	if ((f.path = rules_arena_strndup(&ld->r->arena, path,
	    strlen(path))) == NULL) {
		set_error(ld->err, path, NULL, "out of memory");
		goto out;
	}
	ld->files[ld->nfiles].dev = st.st_dev;
	ld->files[ld->nfiles].ino = st.st_ino;
	ld->files[ld->nfiles++].path = f.path;
	ld->stack[ld->depth].dev = st.st_dev;
	ld->stack[ld->depth].ino = st.st_ino;
	ld->stack[ld->depth++].path = f.path;

	if (!yaml_parser_initialize(&f.parser)) {
		set_error(ld->err, path, NULL, "out of memory");
		ld->depth--;
		goto out;
	}
	f.buf = buf;
	f.len = len;
	yaml_parser_set_input_string(&f.parser, (const unsigned char *)buf,
	    len);
	ret = parse_document(&f);
	if (f.have_ev)
		yaml_event_delete(&f.ev);
	yaml_parser_delete(&f.parser);
	ld->depth--;
 out:
	free(buf);
	return ret;
}

int
rules_load(const char *path, struct rules **out, struct rules_error *err)
{
	struct loader ld;
	struct rules *r;
	int e;

	*out = NULL;
	memset(err, 0, sizeof(*err));
	memset(&ld, 0, sizeof(ld));
	if (strlen(path) >= RULES_PATH_MAX) {
		set_error(err, "(rules)", NULL, "path too long");
		return -1;
	}
	if ((r = rules_new()) == NULL || (r->path = strdup(path)) == NULL) {
		rules_free(r);
		set_error(err, path, NULL, "out of memory");
		return -1;
	}
	ld.r = r;
	ld.err = err;
	if (load_file(&ld, path, NULL, NULL) != 0) {
		rules_free(r);
		return -1;
	}
	if ((e = rules_compile(r)) != RULES_OK) {
		set_error(err, path, NULL, "%s", rules_strerror(e));
		rules_free(r);
		return -1;
	}
	*out = r;
	return 0;
}
