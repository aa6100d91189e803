/*
 * jsonobj.c — one flat JSON object from a small file, strictly (see
 * jsonobj.h), read with common/yread.c in JSON mode.
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

#include "jsonobj.h"
#include "yread.h"

#define JSONOBJ_NAME_MAX	(4096 + 64)	/* "WHAT 'PATH' is malformed" */

int
jsonobj_error(struct jsonobj_ctx *ctx, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return yread_fail(ctx->p, &ctx->p->ev.start_mark, "%s", msg);
}

int
jsonobj_number(struct jsonobj_ctx *ctx, const char *key, long long min,
    long long max, long long *out)
{
	const yaml_event_t *ev = &ctx->p->ev;
	const char *s = (const char *)ev->data.scalar.value;
	size_t i, len = ev->data.scalar.length;
	long long v = 0;

	if (ev->type != YAML_SCALAR_EVENT ||
	    ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || len == 0 ||
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
	return jsonobj_error(ctx, "'%s' is not a number from %lld to %lld",
	    key, min, max);
}

int
jsonobj_string(struct jsonobj_ctx *ctx, const char *key, char *buf,
    size_t len)
{
	const yaml_event_t *ev = &ctx->p->ev;

	if (ev->type != YAML_SCALAR_EVENT ||
	    ev->data.scalar.style != YAML_DOUBLE_QUOTED_SCALAR_STYLE)
		return jsonobj_error(ctx, "'%s' is not a string", key);
	if (ev->data.scalar.length == 0 || ev->data.scalar.length >= len ||
	    memchr(ev->data.scalar.value, '\0', ev->data.scalar.length) != NULL)
		return jsonobj_error(ctx, "'%s' is empty, too long or holds a "
		    "NUL", key);
	memcpy(buf, ev->data.scalar.value, ev->data.scalar.length);
	buf[ev->data.scalar.length] = '\0';
	return 0;
}

int
jsonobj_is_null(struct jsonobj_ctx *ctx)
{
	return yread_is_null(ctx->p);
}

int
jsonobj_strings(struct jsonobj_ctx *ctx, const char *key, char *strs,
    size_t width, size_t max, size_t *count)
{
	*count = 0;
	if (ctx->p->ev.type != YAML_SEQUENCE_START_EVENT)
		return jsonobj_error(ctx, "'%s' is not an array", key);
	for (;;) {
		if (yread_next(ctx->p) != 0)
			return -1;
		if (ctx->p->ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		if (*count == max)
			return jsonobj_error(ctx, "'%s' has more than %zu "
			    "entries", key, max);
		if (jsonobj_string(ctx, key, strs + *count * width, width) != 0)
			return -1;
		(*count)++;
	}
}

/* The object's pairs: each known key once, its value to the schema. */
struct jsonobj_run {
	const struct jsonobj_schema	*s;
	void				*out;
};

static int
jsonobj_map(struct yread *p, void *arg)
{
	struct jsonobj_run *run = arg;
	const struct jsonobj_schema *s = run->s;
	struct jsonobj_ctx ctx = { p };
	yaml_mark_t root = p->ev.start_mark;
	char other[YREAD_QUOTE_BUF];
	unsigned int seen = 0;
	int i;

	for (;;) {
		if (yread_next(p) != 0)
			return -1;
		if (p->ev.type == YAML_MAPPING_END_EVENT)
			break;
		if ((i = yread_key(p, s->keys, s->nkeys, other,
		    sizeof(other))) < 0)
			return -1;
		if (i == s->nkeys) {
			/* from a newer version */
			if (yread_next(p) != 0 || yread_skip(p) != 0)
				return -1;
			continue;
		}
		if (seen & (1U << i))
			return yread_fail(p, &p->ev.start_mark, "'%s' appears "
			    "twice", s->keys[i]);
		seen |= 1U << i;
		if (yread_next(p) != 0 || s->value(&ctx, i, run->out) != 0)
			return -1;
	}
	for (i = 0; i < s->nkeys; i++)
		if ((s->required & (1U << i)) && !(seen & (1U << i)))
			return yread_fail(p, &root, "'%s' is missing",
			    s->keys[i]);
	return 0;
}

/* Reads the whole file, at most max bytes, into buf (of max + 1). */
static int
jsonobj_slurp(const struct jsonobj_schema *s, const char *path, char *buf,
    size_t *len, char *err, size_t errlen)
{
	struct stat sb;
	ssize_t n;
	size_t off = 0;
	int fd, save, oflags = O_RDONLY | O_CLOEXEC;

	if (s->flags & JSONOBJ_ROOT_OWNED)
		oflags |= O_NOFOLLOW;
	if ((fd = open(path, oflags)) == -1) {
		if (errno == ENOENT)
			return JSONOBJ_MISSING;
		goto fail;
	}
	if (fstat(fd, &sb) == -1)
		goto fail;
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		snprintf(err, errlen, "%s '%s' is malformed: not a regular "
		    "file", s->what, path);
		return JSONOBJ_INVALID;
	}
	if ((s->flags & JSONOBJ_ROOT_OWNED) &&
	    (sb.st_uid != 0 || (sb.st_mode & (S_IWGRP | S_IWOTH)))) {
		close(fd);
		snprintf(err, errlen, "%s '%s' is not to be trusted: it must "
		    "belong to root and be writable by root only (owner uid "
		    "%lu, mode %04o)", s->what, path, (unsigned long)sb.st_uid,
		    (unsigned int)sb.st_mode & 07777);
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
		snprintf(err, errlen, "%s '%s' is malformed: larger than %zu "
		    "bytes", s->what, path, s->max_bytes);
		return JSONOBJ_INVALID;
	}
	*len = off;
	return JSONOBJ_OK;
 fail:
	save = errno;
	if (fd != -1)
		close(fd);
	snprintf(err, errlen, "cannot read %s '%s': %s", s->what, path,
	    strerror(save));
	return JSONOBJ_INVALID;
}

int
jsonobj_read(const struct jsonobj_schema *s, const char *path, void *out,
    char *err, size_t errlen)
{
	struct jsonobj_run run = { s, out };
	struct yread p;
	char *buf, name[JSONOBJ_NAME_MAX];
	size_t len = 0;
	int r;

	if (errlen > 0)
		err[0] = '\0';
	if ((buf = malloc(s->max_bytes + 1)) == NULL) {
		snprintf(err, errlen, "cannot read %s '%s': %s", s->what, path,
		    strerror(errno));
		return JSONOBJ_INVALID;
	}
	if ((r = jsonobj_slurp(s, path, buf, &len, err, errlen)) !=
	    JSONOBJ_OK) {
		free(buf);
		return r;
	}
	snprintf(name, sizeof(name), "%s '%s' is malformed", s->what, path);
	yread_init(&p, name, YREAD_TEXT, 1, buf, len, err, errlen);
	r = yread_run(&p, jsonobj_map, &run) == 0 ? JSONOBJ_OK :
	    JSONOBJ_INVALID;
	free(buf);
	return r;
}
