/*
 * jsonobj.c — one flat JSON object from a small file, strictly (see
 * jsonobj.h).
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yaml.h>

#include "jsonobj.h"

int
jsonobj_error(struct jsonobj_ctx *ctx, const yaml_node_t *n,
    const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n != NULL)
		snprintf(ctx->err, ctx->errlen, "%s '%s' is malformed: line %zu "
		    "column %zu: %s", ctx->what, ctx->path,
		    n->start_mark.line + 1, n->start_mark.column + 1, msg);
	else
		snprintf(ctx->err, ctx->errlen, "%s '%s' is malformed: %s",
		    ctx->what, ctx->path, msg);
	return -1;
}

int
jsonobj_number(struct jsonobj_ctx *ctx, const char *key, const yaml_node_t *n,
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
	return jsonobj_error(ctx, n, "'%s' is not a number from %lld to %lld",
	    key, min, max);
}

int
jsonobj_string(struct jsonobj_ctx *ctx, const char *key, const yaml_node_t *n,
    char *buf, size_t len)
{
	if (n->type != YAML_SCALAR_NODE ||
	    n->data.scalar.style != YAML_DOUBLE_QUOTED_SCALAR_STYLE)
		return jsonobj_error(ctx, n, "'%s' is not a string", key);
	if (n->data.scalar.length == 0 || n->data.scalar.length >= len ||
	    memchr(n->data.scalar.value, '\0', n->data.scalar.length) != NULL)
		return jsonobj_error(ctx, n, "'%s' is empty, too long or holds "
		    "a NUL", key);
	memcpy(buf, n->data.scalar.value, n->data.scalar.length);
	buf[n->data.scalar.length] = '\0';
	return 0;
}

int
jsonobj_is_null(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE &&
	    n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	    n->data.scalar.length == 4 &&
	    memcmp(n->data.scalar.value, "null", 4) == 0;
}

int
jsonobj_strings(struct jsonobj_ctx *ctx, yaml_document_t *doc,
    const char *key, const yaml_node_t *n, char *strs, size_t width,
    size_t max, size_t *count)
{
	yaml_node_item_t *item;
	yaml_node_t *v;

	*count = 0;
	if (n->type != YAML_SEQUENCE_NODE ||
	    n->data.sequence.style != YAML_FLOW_SEQUENCE_STYLE)
		return jsonobj_error(ctx, n, "'%s' is not an array", key);
	for (item = n->data.sequence.items.start;
	    item < n->data.sequence.items.top; item++) {
		if (*count == max)
			return jsonobj_error(ctx, n, "'%s' has more than %zu "
			    "entries", key, max);
		if ((v = yaml_document_get_node(doc, *item)) == NULL ||
		    jsonobj_string(ctx, key, v, strs + *count * width,
		    width) != 0)
			return -1;
		(*count)++;
	}
	return 0;
}

static int
jsonobj_document(const struct jsonobj_schema *s, struct jsonobj_ctx *ctx,
    yaml_document_t *doc, void *out)
{
	yaml_node_t *root, *k, *v;
	yaml_node_pair_t *pair;
	unsigned int seen = 0;
	int i;

	if ((root = yaml_document_get_root_node(doc)) == NULL)
		return jsonobj_error(ctx, NULL, "the file is empty");
	if (root->type != YAML_MAPPING_NODE ||
	    root->data.mapping.style != YAML_FLOW_MAPPING_STYLE)
		return jsonobj_error(ctx, root, "not a JSON object");
	for (pair = root->data.mapping.pairs.start;
	    pair < root->data.mapping.pairs.top; pair++) {
		k = yaml_document_get_node(doc, pair->key);
		v = yaml_document_get_node(doc, pair->value);
		if (k == NULL || v == NULL)
			return jsonobj_error(ctx, root, "a key without a "
			    "value");
		if (k->type != YAML_SCALAR_NODE ||
		    k->data.scalar.style != YAML_DOUBLE_QUOTED_SCALAR_STYLE)
			return jsonobj_error(ctx, k, "a key is not a string");
		for (i = 0; i < s->nkeys; i++)
			if (strlen(s->keys[i]) == k->data.scalar.length &&
			    memcmp(s->keys[i], k->data.scalar.value,
			    k->data.scalar.length) == 0)
				break;
		if (i == s->nkeys)
			continue;	/* from a newer version */
		if (seen & (1U << i))
			return jsonobj_error(ctx, k, "'%s' appears twice",
			    s->keys[i]);
		seen |= 1U << i;
		if (s->value(ctx, doc, i, v, out) != 0)
			return -1;
	}
	for (i = 0; i < s->nkeys; i++)
		if ((s->required & (1U << i)) && !(seen & (1U << i)))
			return jsonobj_error(ctx, root, "'%s' is missing",
			    s->keys[i]);
	return 0;
}

/* Reads the whole file, at most max bytes, into buf (of max + 1). */
static int
jsonobj_slurp(const struct jsonobj_schema *s, struct jsonobj_ctx *ctx,
    char *buf, size_t *len)
{
	struct stat sb;
	ssize_t n;
	size_t off = 0;
	int fd, save, oflags = O_RDONLY | O_CLOEXEC;

	if (s->flags & JSONOBJ_ROOT_OWNED)
		oflags |= O_NOFOLLOW;
	if ((fd = open(ctx->path, oflags)) == -1) {
		if (errno == ENOENT)
			return JSONOBJ_MISSING;
		goto fail;
	}
	if (fstat(fd, &sb) == -1)
		goto fail;
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		jsonobj_error(ctx, NULL, "not a regular file");
		return JSONOBJ_INVALID;
	}
	if ((s->flags & JSONOBJ_ROOT_OWNED) &&
	    (sb.st_uid != 0 || (sb.st_mode & (S_IWGRP | S_IWOTH)))) {
		close(fd);
		snprintf(ctx->err, ctx->errlen, "%s '%s' is not to be trusted: "
		    "it must belong to root and be writable by root only "
		    "(owner uid %lu, mode %04o)", ctx->what, ctx->path,
		    (unsigned long)sb.st_uid, (unsigned int)sb.st_mode & 07777);
		return JSONOBJ_INVALID;
	}
	/* One byte more than the limit is read to see it is exceeded. */
	while (off <= s->max_bytes) {
		n = read(fd, buf + off, s->max_bytes + 1 - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			goto fail;
		if (n == 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	if (off > s->max_bytes) {
		jsonobj_error(ctx, NULL, "larger than %zu bytes", s->max_bytes);
		return JSONOBJ_INVALID;
	}
	*len = off;
	return JSONOBJ_OK;
 fail:
	save = errno;
	if (fd != -1)
		close(fd);
	snprintf(ctx->err, ctx->errlen, "cannot read %s '%s': %s", ctx->what,
	    ctx->path, strerror(save));
	return JSONOBJ_INVALID;
}

/* The parser's own complaint, at its mark. */
static void
jsonobj_parse_error(struct jsonobj_ctx *ctx, const yaml_parser_t *p)
{
	snprintf(ctx->err, ctx->errlen, "%s '%s' is malformed: line %zu "
	    "column %zu: %s", ctx->what, ctx->path, p->problem_mark.line + 1,
	    p->problem_mark.column + 1, p->problem != NULL ? p->problem :
	    "cannot parse");
}

int
jsonobj_read(const struct jsonobj_schema *s, const char *path, void *out,
    char *err, size_t errlen)
{
	struct jsonobj_ctx ctx = { s->what, path, err, errlen };
	yaml_parser_t parser;
	yaml_document_t doc, more;
	yaml_node_t *extra;
	char *buf;
	size_t len = 0;
	int r;

	if (errlen > 0)
		err[0] = '\0';
	if ((buf = malloc(s->max_bytes + 1)) == NULL) {
		snprintf(err, errlen, "cannot read %s '%s': %s", s->what, path,
		    strerror(errno));
		return JSONOBJ_INVALID;
	}
	if ((r = jsonobj_slurp(s, &ctx, buf, &len)) != JSONOBJ_OK) {
		free(buf);
		return r;
	}
	if (yaml_parser_initialize(&parser) == 0) {
		free(buf);
		snprintf(err, errlen, "cannot read %s '%s': out of memory",
		    s->what, path);
		return JSONOBJ_INVALID;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	r = JSONOBJ_INVALID;
	if (yaml_parser_load(&parser, &doc) == 0) {
		jsonobj_parse_error(&ctx, &parser);
		goto out;
	}
	if (jsonobj_document(s, &ctx, &doc, out) == 0) {
		/* Nothing may follow the object. */
		if (yaml_parser_load(&parser, &more) == 0)
			jsonobj_parse_error(&ctx, &parser);
		else {
			extra = yaml_document_get_root_node(&more);
			if (extra != NULL)
				jsonobj_error(&ctx, extra, "more than one "
				    "JSON value");
			else
				r = JSONOBJ_OK;
			yaml_document_delete(&more);
		}
	}
	yaml_document_delete(&doc);
 out:
	yaml_parser_delete(&parser);
	free(buf);
	return r;
}
