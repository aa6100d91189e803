/*
 * toolutil.h — what the standalone load tools of scripts/ (bench.d's
 * benchtool, soak.d's soakload) share: a fatal error, a monotonic clock, a
 * number from the command line.  Each tool is one C file built with `cc`
 * alone, so these are static functions in a header, and the tool defines
 * TOOL_NAME and TOOL_EXIT (its status on a fatal error) before including it.
 */
#ifndef INTUTIC_TOOLUTIL_H
#define INTUTIC_TOOLUTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void	die(const char *fmt, ...)
		    __attribute__((format(printf, 1, 2), noreturn));

/* "TOOL_NAME: MESSAGE" on stderr, then exit(TOOL_EXIT). */
static void
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs(TOOL_NAME ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(TOOL_EXIT);
}

/* Seconds on the monotonic clock. */
static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The decimal number s, from min to max; else a fatal error. */
static long long
num(const char *s, long long min, long long max)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno != 0 || v < min || v > max)
		die("'%s' is not a number from %lld to %lld", s, min, max);
	return v;
}

#endif /* INTUTIC_TOOLUTIL_H */
