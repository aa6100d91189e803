/*
 * state.c — reading the proxy's state file (see state.h).
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yaml.h>

#include "paths.h"
#include "state.h"

enum state_key {
	STATE_KEY_PID,
	STATE_KEY_PORT,
	STATE_KEY_BIND,
	STATE_KEY_RULES,
	STATE_KEY_AUDIT,
	STATE_KEY_STARTED,
	STATE_KEY_WORKERS,
	STATE_KEY_VERSION,
	STATE_KEY_COUNT
};

static const char *const state_key_names[STATE_KEY_COUNT] = {
	[STATE_KEY_PID] = "pid",
	[STATE_KEY_PORT] = "port",
	[STATE_KEY_BIND] = "bind",
	[STATE_KEY_RULES] = "rules",
	[STATE_KEY_AUDIT] = "audit",
	[STATE_KEY_STARTED] = "started",
	[STATE_KEY_WORKERS] = "workers",
	[STATE_KEY_VERSION] = "version",
};

/* What every proxy writes; the others are read when present. */
#define STATE_KEYS_REQUIRED \
	((1U << STATE_KEY_PID) | (1U << STATE_KEY_PORT) | \
	(1U << STATE_KEY_BIND) | (1U << STATE_KEY_RULES) | \
	(1U << STATE_KEY_STARTED))

/* Reading one file: where errors go. */
struct state_ctx {
	const char	*path;
	char		*err;
	size_t		 errlen;
};

static int
state_error(struct state_ctx *ctx, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* "state file 'P' is malformed: line L column C: MESSAGE"; returns -1. */
static int
state_error(struct state_ctx *ctx, const yaml_node_t *n, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n != NULL)
		snprintf(ctx->err, ctx->errlen, "state file '%s' is malformed: "
		    "line %zu column %zu: %s", ctx->path,
		    n->start_mark.line + 1, n->start_mark.column + 1, msg);
	else
		snprintf(ctx->err, ctx->errlen, "state file '%s' is malformed: "
		    "%s", ctx->path, msg);
	return -1;
}

/* A JSON number: a plain scalar of digits, no leading zero, min to max. */
static int
state_number(struct state_ctx *ctx, const char *key, const yaml_node_t *n,
    long long min, long long max, long long *out)
{
	const char *s = (const char *)n->data.scalar.value;
	size_t i, len = n->data.scalar.length;
	long long v = 0;

	if (n->type != YAML_SCALAR_NODE ||
	    n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || len == 0 ||
	    len > 18 || (len > 1 && s[0] == '0'))
		goto bad;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			goto bad;
		v = v * 10 + (s[i] - '0');
	}
	if (v < min || v > max)
		goto bad;
	*out = v;
	return 0;
 bad:
	return state_error(ctx, n, "'%s' is not a number from %lld to %lld",
	    key, min, max);
}

/* A JSON string: a double-quoted scalar without NUL that fits in buf. */
static int
state_string(struct state_ctx *ctx, const char *key, const yaml_node_t *n,
    char *buf, size_t len)
{
	if (n->type != YAML_SCALAR_NODE ||
	    n->data.scalar.style != YAML_DOUBLE_QUOTED_SCALAR_STYLE)
		return state_error(ctx, n, "'%s' is not a string", key);
	if (n->data.scalar.length == 0 || n->data.scalar.length >= len ||
	    memchr(n->data.scalar.value, '\0', n->data.scalar.length) != NULL)
		return state_error(ctx, n, "'%s' is empty, too long or holds "
		    "a NUL", key);
	memcpy(buf, n->data.scalar.value, n->data.scalar.length);
	buf[n->data.scalar.length] = '\0';
	return 0;
}

static int
state_bind(struct state_ctx *ctx, yaml_document_t *doc, const yaml_node_t *n,
    struct proxy_state *st)
{
	yaml_node_item_t *item;
	yaml_node_t *v;
	unsigned char a[16];

	if (n->type != YAML_SEQUENCE_NODE ||
	    n->data.sequence.style != YAML_FLOW_SEQUENCE_STYLE)
		return state_error(ctx, n, "'bind' is not an array");
	for (item = n->data.sequence.items.start;
	    item < n->data.sequence.items.top; item++) {
		if (st->nbind == STATE_BINDS_MAX)
			return state_error(ctx, n, "'bind' has more than %d "
			    "addresses", STATE_BINDS_MAX);
		if ((v = yaml_document_get_node(doc, *item)) == NULL ||
		    state_string(ctx, "bind", v, st->bind[st->nbind],
		    sizeof(st->bind[st->nbind])) != 0)
			return -1;
		/* status connects to it: an address, never a name. */
		if (inet_pton(AF_INET, st->bind[st->nbind], a) != 1 &&
		    inet_pton(AF_INET6, st->bind[st->nbind], a) != 1)
			return state_error(ctx, v, "'bind' holds '%s', not an "
			    "IP address", st->bind[st->nbind]);
		st->nbind++;
	}
	if (st->nbind == 0)
		return state_error(ctx, n, "'bind' is empty");
	return 0;
}

static int
state_value(struct state_ctx *ctx, yaml_document_t *doc, enum state_key k,
    const yaml_node_t *v, struct proxy_state *st)
{
	const char *name = state_key_names[k];
	long long n;

	switch (k) {
	case STATE_KEY_PID:
		if (state_number(ctx, name, v, 1, INT_MAX, &n) != 0)
			return -1;
		st->pid = (pid_t)n;
		return 0;
	case STATE_KEY_PORT:
		if (state_number(ctx, name, v, 1, 65535, &n) != 0)
			return -1;
		st->port = (unsigned int)n;
		return 0;
	case STATE_KEY_BIND:
		return state_bind(ctx, doc, v, st);
	case STATE_KEY_RULES:
		return state_string(ctx, name, v, st->rules, sizeof(st->rules));
	case STATE_KEY_AUDIT:
		if (v->type == YAML_SCALAR_NODE &&
		    v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		    v->data.scalar.length == 4 &&
		    memcmp(v->data.scalar.value, "null", 4) == 0) {
			st->audit[0] = '\0';
			return 0;
		}
		return state_string(ctx, name, v, st->audit, sizeof(st->audit));
	case STATE_KEY_STARTED:
		if (state_number(ctx, name, v, 0, 999999999999LL, &n) != 0)
			return -1;
		st->started = n;
		return 0;
	case STATE_KEY_WORKERS:
		if (state_number(ctx, name, v, 1, INT_MAX, &n) != 0)
			return -1;
		st->workers = (int)n;
		return 0;
	case STATE_KEY_VERSION:
		return state_string(ctx, name, v, st->version,
		    sizeof(st->version));
	case STATE_KEY_COUNT:
		break;
	}
	return state_error(ctx, v, "unexpected key");
}

static int
state_document(struct state_ctx *ctx, yaml_document_t *doc,
    struct proxy_state *st)
{
	yaml_node_t *root, *k, *v;
	yaml_node_pair_t *pair;
	unsigned int seen = 0;
	int i;

	if ((root = yaml_document_get_root_node(doc)) == NULL)
		return state_error(ctx, NULL, "the file is empty");
	if (root->type != YAML_MAPPING_NODE ||
	    root->data.mapping.style != YAML_FLOW_MAPPING_STYLE)
		return state_error(ctx, root, "not a JSON object");
	for (pair = root->data.mapping.pairs.start;
	    pair < root->data.mapping.pairs.top; pair++) {
		k = yaml_document_get_node(doc, pair->key);
		v = yaml_document_get_node(doc, pair->value);
		if (k == NULL || v == NULL)
			return state_error(ctx, root, "a key without a value");
		if (k->type != YAML_SCALAR_NODE ||
		    k->data.scalar.style != YAML_DOUBLE_QUOTED_SCALAR_STYLE)
			return state_error(ctx, k, "a key is not a string");
		for (i = 0; i < STATE_KEY_COUNT; i++)
			if (strlen(state_key_names[i]) ==
			    k->data.scalar.length &&
			    memcmp(state_key_names[i], k->data.scalar.value,
			    k->data.scalar.length) == 0)
				break;
		if (i == STATE_KEY_COUNT)
			continue;	/* from a newer proxy */
		if (seen & (1U << i))
			return state_error(ctx, k, "'%s' appears twice",
			    state_key_names[i]);
		seen |= 1U << i;
		if (state_value(ctx, doc, (enum state_key)i, v, st) != 0)
			return -1;
	}
	for (i = 0; i < STATE_KEY_COUNT; i++)
		if ((STATE_KEYS_REQUIRED & (1U << i)) && !(seen & (1U << i)))
			return state_error(ctx, root, "'%s' is missing",
			    state_key_names[i]);
	return 0;
}

/* Reads the whole file, at most STATE_FILE_MAX bytes, into buf. */
static int
state_slurp(struct state_ctx *ctx, char *buf, size_t *len)
{
	struct stat sb;
	ssize_t n;
	size_t off = 0;
	int fd, save;

	if ((fd = open(ctx->path, O_RDONLY | O_CLOEXEC)) == -1) {
		if (errno == ENOENT)
			return STATE_MISSING;
		goto fail;
	}
	if (fstat(fd, &sb) == -1)
		goto fail;
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		state_error(ctx, NULL, "not a regular file");
		return STATE_INVALID;
	}
	/* One byte more than the limit is read to see it is exceeded. */
	while (off <= STATE_FILE_MAX) {
		n = read(fd, buf + off, STATE_FILE_MAX + 1 - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			goto fail;
		if (n == 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	if (off > STATE_FILE_MAX) {
		state_error(ctx, NULL, "larger than %d bytes", STATE_FILE_MAX);
		return STATE_INVALID;
	}
	*len = off;
	return STATE_OK;
 fail:
	save = errno;
	if (fd != -1)
		close(fd);
	snprintf(ctx->err, ctx->errlen, "cannot read state file '%s': %s",
	    ctx->path, strerror(save));
	return STATE_INVALID;
}

static int
state_read_file(const char *path, struct proxy_state *st, char *err,
    size_t errlen)
{
	struct state_ctx ctx = { path, err, errlen };
	yaml_parser_t parser;
	yaml_document_t doc, more;
	yaml_node_t *extra;
	char *buf;
	size_t len = 0;
	int r;

	memset(st, 0, sizeof(*st));
	if (errlen > 0)
		err[0] = '\0';
	if (snprintf(st->path, sizeof(st->path), "%s", path) >=
	    (int)sizeof(st->path)) {
		snprintf(err, errlen, "state file path too long: '%s'", path);
		return STATE_INVALID;
	}
	if ((buf = malloc(STATE_FILE_MAX + 1)) == NULL) {
		snprintf(err, errlen, "cannot read state file '%s': %s", path,
		    strerror(errno));
		return STATE_INVALID;
	}
	if ((r = state_slurp(&ctx, buf, &len)) != STATE_OK) {
		free(buf);
		return r;
	}
	if (yaml_parser_initialize(&parser) == 0) {
		free(buf);
		snprintf(err, errlen, "cannot read state file '%s': out of "
		    "memory", path);
		return STATE_INVALID;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	r = STATE_INVALID;
	if (yaml_parser_load(&parser, &doc) == 0) {
		snprintf(err, errlen, "state file '%s' is malformed: line %zu "
		    "column %zu: %s", path, parser.problem_mark.line + 1,
		    parser.problem_mark.column + 1, parser.problem != NULL ?
		    parser.problem : "cannot parse");
		goto out;
	}
	if (state_document(&ctx, &doc, st) == 0) {
		/* Nothing may follow the object. */
		if (yaml_parser_load(&parser, &more) == 0)
			snprintf(err, errlen, "state file '%s' is malformed: "
			    "line %zu column %zu: %s", path,
			    parser.problem_mark.line + 1,
			    parser.problem_mark.column + 1,
			    parser.problem != NULL ? parser.problem :
			    "cannot parse");
		else {
			extra = yaml_document_get_root_node(&more);
			if (extra != NULL)
				state_error(&ctx, extra, "more than one "
				    "JSON value");
			else
				r = STATE_OK;
			yaml_document_delete(&more);
		}
	}
	yaml_document_delete(&doc);
 out:
	yaml_parser_delete(&parser);
	free(buf);
	if (r != STATE_OK) {
		/* Out-parameters are written only on success. */
		memset(st, 0, sizeof(*st));
		snprintf(st->path, sizeof(st->path), "%s", path);
	}
	return r;
}

int
state_read(const char *dir, struct proxy_state *st, char *err, size_t errlen)
{
	char path[PATH_MAX];

	if (paths_state_file(dir, path, sizeof(path)) != 0) {
		memset(st, 0, sizeof(*st));
		snprintf(err, errlen, "state directory path too long: '%s'",
		    dir);
		return STATE_INVALID;
	}
	return state_read_file(path, st, err, errlen);
}

int
state_remove_stale(const struct proxy_state *st)
{
	struct proxy_state now;
	char err[STATE_ERROR_MAX];

	switch (state_read_file(st->path, &now, err, sizeof(err))) {
	case STATE_MISSING:
		return 0;
	case STATE_OK:
		if (now.pid != st->pid || now.started != st->started)
			return 0;	/* a proxy started since */
		break;
	default:
		return 0;	/* rewritten since: not ours to remove */
	}
	if (unlink(st->path) == -1 && errno != ENOENT)
		return -1;
	return 0;
}

const char *
state_listen_text(const struct proxy_state *st, char *buf, size_t len)
{
	size_t i, off = 0;
	int n;

	if (len > 0)
		buf[0] = '\0';
	for (i = 0; i < st->nbind && off < len; i++) {
		n = snprintf(buf + off, len - off,
		    strchr(st->bind[i], ':') != NULL ? "%s[%s]:%u" : "%s%s:%u",
		    i > 0 ? ", " : "", st->bind[i], st->port);
		if (n < 0)
			break;
		off += (size_t)n;
	}
	return buf;
}
