/*
 * argv.c — the builder of argument vectors (see argv.h).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argv.h"

void
argvb_init(struct argvb *b)
{
	memset(b, 0, sizeof(*b));
}

/* Room for one more pointer in *v (of *cap, *n used, and a NULL). */
static int
argvb_grow(char ***v, size_t *n, size_t *cap)
{
	char **nv;
	size_t ncap;

	if (*n + 2 <= *cap)
		return 0;
	ncap = *cap == 0 ? 32 : *cap * 2;
	if ((nv = reallocarray(*v, ncap, sizeof(*nv))) == NULL)
		return -1;
	*v = nv;
	*cap = ncap;
	return 0;
}

void
argvb_add(struct argvb *b, const char *s)
{
	if (b->failed)
		return;
	if (s == NULL || argvb_grow(&b->v, &b->n, &b->cap) != 0) {
		b->failed = 1;
		return;
	}
	b->v[b->n++] = (char *)s;
	b->v[b->n] = NULL;
}

void
argvb_addf(struct argvb *b, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	if (b->failed)
		return;
	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0 || argvb_grow(&b->made, &b->nmade, &b->madecap) != 0) {
		if (r >= 0)
			free(s);
		b->failed = 1;
		return;
	}
	b->made[b->nmade++] = s;
	argvb_add(b, s);
}

char **
argvb_done(struct argvb *b)
{
	if (b->failed || b->v == NULL)
		return NULL;
	return b->v;
}

size_t
argvb_count(const struct argvb *b)
{
	return b->n;
}

void
argvb_free(struct argvb *b)
{
	size_t i;

	for (i = 0; i < b->nmade; i++)
		free(b->made[i]);
	free(b->made);
	free(b->v);
	memset(b, 0, sizeof(*b));
}
