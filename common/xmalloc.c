/*
 * xmalloc.c — allocation that exits on failure (see xmalloc.h).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "xmalloc.h"

void *
xmalloc(size_t len)
{
	void *p;

	if (len == 0)
		len = 1;
	if ((p = malloc(len)) == NULL)
		fatal_f("out of memory allocating %zu bytes", len);
	return p;
}

void *
xcalloc(size_t n, size_t len)
{
	void *p;

	if (n == 0 || len == 0)
		n = len = 1;
	if ((p = calloc(n, len)) == NULL)
		fatal_f("out of memory allocating %zu * %zu bytes", n, len);
	return p;
}

void *
xreallocarray(void *p, size_t n, size_t len)
{
	void *q;

	if (n == 0 || len == 0)
		n = len = 1;
	if ((q = reallocarray(p, n, len)) == NULL)
		fatal_f("out of memory allocating %zu * %zu bytes", n, len);
	return q;
}

char *
xstrdup(const char *s)
{
	char *p;

	if ((p = strdup(s)) == NULL)
		fatal_f("out of memory copying %zu bytes", strlen(s) + 1);
	return p;
}

int
xasprintf(char **out, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(out, fmt, ap);
	va_end(ap);
	if (n < 0)
		fatal_f("out of memory formatting a string");
	return n;
}
