/*
 * yread.c — the one YAML/JSON event reader (see yread.h).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "yread.h"

/* vsnprintf, for messages cut to fit their buffer. */
static void __attribute__((format(printf, 3, 4)))
yread_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (len == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

void
yread_init(struct yread *p, const char *name, enum yread_form form, int json,
    const char *buf, size_t len, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->form = form;
	p->json = json;
	p->buf = buf;
	p->len = len;
	p->err = err;
	p->errlen = errlen;
}

int
yread_is_null(const struct yread *p)
{
	const yaml_event_t *ev = &p->ev;

	if (ev->type != YAML_SCALAR_EVENT ||
	    ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	if (yread_scalar_is(ev, "null"))
		return 1;
	/* YAML's other spellings of null; JSON has only the one. */
	return !p->json && (ev->data.scalar.length == 0 ||
	    yread_scalar_is(ev, "~") || yread_scalar_is(ev, "Null") ||
	    yread_scalar_is(ev, "NULL"));
}

/* The position and "NAME...: " (none when bare), then MSG; -1. */
int
yread_fail(struct yread *p, const yaml_mark_t *m, const char *fmt, ...)
{
	unsigned long line = m != NULL ? m->line + 1 : 0;
	unsigned long col = m != NULL ? m->column + 1 : 0;
	size_t off;
	va_list ap;

	p->failed = 1;
	p->err_line = line;
	p->err_col = col;
	if (p->errlen == 0)
		return -1;
	if (p->form == YREAD_BARE)
		p->err[0] = '\0';
	else if (m == NULL)
		yread_fmt(p->err, p->errlen, "%s: ", p->name);
	else if (p->form == YREAD_FILE)
		yread_fmt(p->err, p->errlen, "%s:%lu:%lu: ", p->name, line,
		    col);
	else
		yread_fmt(p->err, p->errlen, "%s: line %lu column %lu: ",
		    p->name, line, col);
	off = strlen(p->err);
	va_start(ap, fmt);
	vsnprintf(p->err + off, p->errlen - off, fmt, ap);
	va_end(ap);
	return -1;
}

char *
yread_escape(char *buf, size_t buflen, const char *s, size_t len, size_t max)
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

const char *
yread_quote(const char *s, size_t len, char *buf, size_t buflen)
{
	size_t o;

	buf[0] = '\'';
	yread_escape(buf + 1, buflen - 2, s, len, YREAD_QUOTE_MAX);
	o = strlen(buf);
	buf[o++] = '\'';
	buf[o] = '\0';
	return buf;
}

int
yread_scalar_is(const yaml_event_t *ev, const char *word)
{
	size_t len = strlen(word);

	return ev->type == YAML_SCALAR_EVENT &&
	    ev->data.scalar.length == len &&
	    memcmp(ev->data.scalar.value, word, len) == 0;
}

/* What the current event is, for "found ...". */
const char *
yread_describe(const struct yread *p, char *buf, size_t len)
{
	const yaml_event_t *ev = &p->ev;

	switch (ev->type) {
	case YAML_MAPPING_START_EVENT:
		return p->json ? "an object" : "a mapping";
	case YAML_SEQUENCE_START_EVENT:
		return p->json ? "an array" : "a list";
	case YAML_SCALAR_EVENT:
		if (yread_is_null(p))
			return p->json ? "null" : "nothing (null)";
		return yread_quote((const char *)ev->data.scalar.value,
		    ev->data.scalar.length, buf, len);
	case YAML_MAPPING_END_EVENT:
	case YAML_SEQUENCE_END_EVENT:
		return "the end of a collection";
	case YAML_STREAM_END_EVENT:
	case YAML_DOCUMENT_END_EVENT:
		return "the end";
	default:
		return "something else";
	}
}

/* A plain scalar JSON allows: true, false, null, or a number. */
static int
yread_json_literal(const char *s, size_t len)
{
	size_t i = 0, start;

	if ((len == 4 && memcmp(s, "true", 4) == 0) ||
	    (len == 5 && memcmp(s, "false", 5) == 0) ||
	    (len == 4 && memcmp(s, "null", 4) == 0))
		return 1;
	if (i < len && s[i] == '-')
		i++;
	if (i == len)
		return 0;
	if (s[i] == '0')
		i++;
	else if (s[i] >= '1' && s[i] <= '9')
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++;
	else
		return 0;
	if (i < len && s[i] == '.') {
		start = ++i;
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == start)
			return 0;
	}
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < len && (s[i] == '+' || s[i] == '-'))
			i++;
		start = i;
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == start)
			return 0;
	}
	return i == len;
}

/* The position of a byte offset (libyaml gives reader errors so). */
static yaml_mark_t
yread_offset_mark(const struct yread *p, size_t offset)
{
	yaml_mark_t m;
	size_t i;

	memset(&m, 0, sizeof(m));
	for (i = 0; i < offset && i < p->len; i++) {
		if (p->buf[i] == '\n') {
			m.line++;
			m.column = 0;
		} else if (((unsigned char)p->buf[i] & 0xc0) != 0x80)
			m.column++;	/* characters, not bytes */
	}
	m.index = offset;
	return m;
}

/* libyaml's error with a position, its context's and a hint. */
static int
yread_parse_error(struct yread *p)
{
	yaml_parser_t *y = &p->parser;
	yaml_mark_t m = y->problem_mark;
	const char *problem = y->problem != NULL ? y->problem : "parse error";
	const char *hint = "";
	char ctx[128] = "";

	if (y->error == YAML_MEMORY_ERROR)
		return yread_fail(p, NULL, "out of memory");
	if (y->error == YAML_READER_ERROR) {
		m = yread_offset_mark(p, y->problem_offset);
		if (y->problem_value != -1)
			return yread_fail(p, &m, "invalid character (byte "
			    "0x%02x): %s%s%s%s",
			    (unsigned int)y->problem_value & 0xff, problem,
			    p->kind != NULL ? "; " : "",
			    p->kind != NULL ? p->kind : "",
			    p->kind != NULL ? " are UTF-8 text" : "");
		return yread_fail(p, &m, "invalid text: %s", problem);
	}
	if (y->context != NULL)
		yread_fmt(ctx, sizeof(ctx), " %s (started at %lu:%lu)",
		    y->context, (unsigned long)y->context_mark.line + 1,
		    (unsigned long)y->context_mark.column + 1);
	if (m.index < p->len && p->buf[m.index] == '\t')
		hint = "; tabs cannot indent YAML: use spaces";
	else if (p->star_hint != NULL && y->context != NULL &&
	    strstr(y->context, "alias") != NULL)
		hint = p->star_hint;
	return yread_fail(p, &m, "invalid %s: %s%s%s",
	    p->json ? "JSON" : "YAML", problem, ctx, hint);
}

/* "... found: ... not allowed here" (or "in KIND"); -1. */
static int
yread_refuse(struct yread *p, const char *what, const char *shown,
    const char *which)
{
	char q[YREAD_QUOTE_BUF] = "";

	if (shown != NULL) {
		q[0] = ' ';
		yread_quote(shown, strlen(shown), q + 1, sizeof(q) - 1);
	}
	return yread_fail(p, &p->ev.start_mark, "YAML %s%s found: %s are not "
	    "allowed %s%s", what, q, which, p->kind != NULL ? "in " : "here",
	    p->kind != NULL ? p->kind : "");
}

/* The next event, refusing what neither JSON nor a settings file has. */
int
yread_next(struct yread *p)
{
	yaml_event_t *ev = &p->ev;
	const yaml_char_t *anchor = NULL, *tag = NULL;
	int nesting_max = p->nesting_max > 0 &&
	    p->nesting_max < YREAD_NESTING_MAX ? p->nesting_max :
	    YREAD_NESTING_MAX;

	if (p->have_ev)
		yaml_event_delete(ev);
	p->have_ev = 0;
	if (!yaml_parser_parse(&p->parser, ev))
		return yread_parse_error(p);
	p->have_ev = 1;
	switch (ev->type) {
	case YAML_ALIAS_EVENT:
		return yread_refuse(p, "alias", NULL, "aliases and anchors");
	case YAML_DOCUMENT_START_EVENT:
		if (p->json && !ev->data.document_start.implicit)
			return yread_fail(p, &ev->start_mark,
			    "not JSON: a YAML document marker");
		break;
	case YAML_SCALAR_EVENT:
		anchor = ev->data.scalar.anchor;
		tag = ev->data.scalar.tag;
		if (p->json && ev->data.scalar.style !=
		    YAML_DOUBLE_QUOTED_SCALAR_STYLE &&
		    (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
		    !yread_json_literal((const char *)ev->data.scalar.value,
		    ev->data.scalar.length))) {
			char q[YREAD_QUOTE_BUF];

			return yread_fail(p, &ev->start_mark, "not JSON: %s is "
			    "neither a string in double quotes nor a number, "
			    "true, false or null",
			    yread_quote((const char *)ev->data.scalar.value,
			    ev->data.scalar.length, q, sizeof(q)));
		}
		break;
	case YAML_SEQUENCE_START_EVENT:
		anchor = ev->data.sequence_start.anchor;
		tag = ev->data.sequence_start.tag;
		if (p->json && ev->data.sequence_start.style !=
		    YAML_FLOW_SEQUENCE_STYLE)
			return yread_fail(p, &ev->start_mark,
			    "not JSON: a YAML block list");
		p->depth++;
		break;
	case YAML_MAPPING_START_EVENT:
		anchor = ev->data.mapping_start.anchor;
		tag = ev->data.mapping_start.tag;
		if (p->json && ev->data.mapping_start.style !=
		    YAML_FLOW_MAPPING_STYLE)
			return yread_fail(p, &ev->start_mark,
			    "not JSON: a YAML block mapping");
		p->depth++;
		break;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		p->depth--;
		break;
	default:
		break;
	}
	if (anchor != NULL) {
		char shown[YREAD_QUOTE_MAX + 2];

		yread_fmt(shown, sizeof(shown), "&%s", (const char *)anchor);
		return yread_refuse(p, "anchor", shown, "aliases and anchors");
	}
	if (tag != NULL) {
		/* "!!str" as written, not its expansion. */
		const char *t = (const char *)tag;
		char shown[YREAD_QUOTE_MAX + 3];

		if (strncmp(t, "tag:yaml.org,2002:", 18) == 0)
			yread_fmt(shown, sizeof(shown), "!!%s", t + 18);
		else
			yread_fmt(shown, sizeof(shown), "%s", t);
		return yread_refuse(p, "tag", shown, "tags");
	}
	if (p->depth > nesting_max)
		return yread_fail(p, &ev->start_mark, "collections nested "
		    "deeper than %d levels", nesting_max);
	return 0;
}

int
yread_expect(struct yread *p, yaml_event_type_t type, const char *what)
{
	char q[YREAD_QUOTE_BUF];

	if (yread_next(p) != 0)
		return -1;
	if (p->ev.type != type)
		return yread_fail(p, &p->ev.start_mark, "found %s: expected %s",
		    yread_describe(p, q, sizeof(q)), what);
	return 0;
}

/* Skips the value that starts with the current event. */
int
yread_skip(struct yread *p)
{
	int depth;

	if (p->ev.type == YAML_SCALAR_EVENT)
		return 0;
	if (p->ev.type != YAML_MAPPING_START_EVENT &&
	    p->ev.type != YAML_SEQUENCE_START_EVENT)
		return yread_fail(p, &p->ev.start_mark, "expected a value");
	depth = p->depth - 1;
	while (p->depth > depth) {
		if (yread_next(p) != 0)
			return -1;
		if (p->ev.type == YAML_DOCUMENT_END_EVENT ||
		    p->ev.type == YAML_STREAM_END_EVENT)
			return yread_fail(p, &p->ev.start_mark,
			    "unexpected end");
	}
	return 0;
}

/*
 * The current event as a key: which of names[0..n) it is, or n for
 * another one (its text, cut, in other).  -1 when it is not a string.
 */
int
yread_key(struct yread *p, const char *const *names, int n, char *other,
    size_t otherlen)
{
	const yaml_event_t *ev = &p->ev;
	char q[YREAD_QUOTE_BUF];
	int i;

	if (ev->type != YAML_SCALAR_EVENT || (p->json &&
	    ev->data.scalar.style != YAML_DOUBLE_QUOTED_SCALAR_STYLE))
		return yread_fail(p, &ev->start_mark, "found %s: expected a "
		    "key (a string)", yread_describe(p, q, sizeof(q)));
	for (i = 0; i < n; i++)
		if (yread_scalar_is(ev, names[i]))
			return i;
	yread_quote((const char *)ev->data.scalar.value, ev->data.scalar.length,
	    other, otherlen);
	return n;
}

int
yread_pair(struct yread *p, const char *const *names, int n, char *other,
    size_t otherlen)
{
	int k;

	if (yread_next(p) != 0)
		return -1;
	if (p->ev.type == YAML_MAPPING_END_EVENT)
		return YREAD_END;
	if ((k = yread_key(p, names, n, other, otherlen)) < 0 ||
	    yread_next(p) != 0)
		return -1;
	return k;
}

/* The current event as a string value: JSON wants it in double quotes. */
int
yread_string(struct yread *p, const char *key, const char *what)
{
	const yaml_event_t *ev = &p->ev;
	char q[YREAD_QUOTE_BUF];

	if (ev->type != YAML_SCALAR_EVENT || (p->json &&
	    ev->data.scalar.style != YAML_DOUBLE_QUOTED_SCALAR_STYLE) ||
	    memchr(ev->data.scalar.value, '\0', ev->data.scalar.length) !=
	    NULL)
		return yread_fail(p, &ev->start_mark, "'%s' is %s: expected %s",
		    key, yread_describe(p, q, sizeof(q)), what);
	return 0;
}

/*
 * Parses buf[0..len) as one document whose root is a mapping: `map` reads
 * the mapping's pairs, from its start event to its end event.
 */
int
yread_run(struct yread *p, int (*map)(struct yread *, void *), void *arg)
{
	char q[YREAD_QUOTE_BUF];
	int r = -1;

	const char *root = p->json ? "a JSON object" : p->root != NULL ?
	    p->root : "a mapping";
	const char *expect = p->json || p->expect == NULL ? root : p->expect;
	int file = p->form != YREAD_TEXT;

	if (yaml_parser_initialize(&p->parser) == 0)
		return yread_fail(p, NULL, "out of memory");
	yaml_parser_set_input_string(&p->parser,
	    (const unsigned char *)p->buf, p->len);
	if (yread_next(p) != 0 || yread_next(p) != 0)
		goto out;
	if (p->ev.type == YAML_STREAM_END_EVENT) {
		/* A file's end has a line; an answer's is the whole of it. */
		yread_fail(p, file ? &p->ev.start_mark : NULL,
		    "empty%s: expected %s", file ? " file" : "", expect);
		goto out;
	}
	if (yread_next(p) != 0)
		goto out;
	if (!p->json && yread_is_null(p)) {
		yread_fail(p, &p->ev.start_mark, "empty document: expected %s",
		    expect);
		goto out;
	}
	if (p->ev.type != YAML_MAPPING_START_EVENT) {
		yread_fail(p, &p->ev.start_mark, "found %s: expected %s",
		    yread_describe(p, q, sizeof(q)), root);
		goto out;
	}
	if (map(p, arg) != 0 || yread_next(p) != 0)
		goto out;
	if (p->ev.type != YAML_DOCUMENT_END_EVENT) {
		yread_fail(p, &p->ev.start_mark, "found %s after the %s",
		    yread_describe(p, q, sizeof(q)),
		    p->json ? "object" : "mapping");
		goto out;
	}
	if (yread_next(p) != 0)
		goto out;
	if (p->ev.type != YAML_STREAM_END_EVENT) {
		yread_fail(p, &p->ev.start_mark, "%s", p->json ?
		    "more than one JSON value" :
		    "a second YAML document: expected exactly one");
		goto out;
	}
	r = 0;
 out:
	if (p->have_ev)
		yaml_event_delete(&p->ev);
	p->have_ev = 0;
	yaml_parser_delete(&p->parser);
	return r;
}

