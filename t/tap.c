/*
 * tap.c — a small TAP emitter for the C unit tests (contract in tap.h).
 *
 * State is one counter set per process: the unit tests are single-threaded
 * programs that report in order.  Every line is flushed as soon as it is
 * written, so the lines before a crash reach the driver.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

static int	tap_planned = -1;	/* the plan printed first, or -1 */
static int	tap_count;		/* test points printed */
static int	tap_failed;		/* of those, "not ok" ones */
static int	tap_bug;		/* the test misused this API */

static void	tap_vformat(char *, size_t, const char *, va_list)
		    __attribute__((__format__(__printf__, 3, 0)));
static void	tap_vdiag(const char *, va_list)
		    __attribute__((__format__(__printf__, 1, 0)));
static int	tap_vok(int, const char *, va_list)
		    __attribute__((__format__(__printf__, 2, 0)));

/*
 * Format into buf, which is always terminated; a message cut at the buffer
 * size ends in "..." so the reader knows there was more.
 */
static void
tap_vformat(char *buf, size_t size, const char *fmt, va_list ap)
{
	int	 r;

	r = vsnprintf(buf, size, fmt, ap);
	if (r < 0)
		snprintf(buf, size, "%s", "(unprintable message)");
	else if ((size_t)r >= size && size > 4) {
		buf[size - 4] = '.';
		buf[size - 3] = '.';
		buf[size - 2] = '.';
		buf[size - 1] = '\0';
	}
}

/*
 * Print text that must stay on the current TAP line: line breaks become
 * spaces.  In a description (escape set) '#' is written "\#", because
 * "# SKIP" or "# TODO" there would be read as a directive.
 */
static void
tap_put_text(const char *s, int escape)
{
	for (; *s != '\0'; s++) {
		if (*s == '\n' || *s == '\r')
			putchar(' ');
		else if (*s == '#' && escape)
			fputs("\\#", stdout);
		else
			putchar(*s);
	}
}

/* Print each line of msg as "# line"; an empty line is a lone "#". */
static void
tap_put_diag(const char *msg)
{
	const char	*p;

	p = msg;
	do {
		if (*p == '\n' || *p == '\0')
			putchar('#');
		else
			fputs("# ", stdout);
		for (; *p != '\n' && *p != '\0'; p++)
			putchar(*p);
		putchar('\n');
		if (*p == '\n')
			p++;
	} while (*p != '\0');
	fflush(stdout);
}

static void
tap_vdiag(const char *fmt, va_list ap)
{
	char	 msg[TAP_TEXT_MAX];

	tap_vformat(msg, sizeof(msg), fmt, ap);
	tap_put_diag(msg);
}

static int
tap_vok(int cond, const char *fmt, va_list ap)
{
	char	 desc[TAP_TEXT_MAX];

	tap_vformat(desc, sizeof(desc), fmt, ap);
	tap_count++;
	if (!cond)
		tap_failed++;
	printf("%sok %d", cond ? "" : "not ", tap_count);
	if (desc[0] != '\0') {
		fputs(" - ", stdout);
		tap_put_text(desc, 1);
	}
	putchar('\n');
	fflush(stdout);
	return cond ? 1 : 0;
}

void
tap_plan(int n)
{
	if (tap_planned >= 0 || tap_count > 0 || n <= 0) {
		/* A plan in the middle of the stream is not TAP: refuse it. */
		tap_bug = 1;
		tap_put_diag("bug in test: tap_plan() needs n > 0, once, "
		    "before any test point");
		return;
	}
	tap_planned = n;
	printf("1..%d\n", n);
	fflush(stdout);
}

void
tap_skip_all(const char *fmt, ...)
{
	char	 reason[TAP_TEXT_MAX];
	va_list	 ap;

	if (tap_planned >= 0 || tap_count > 0) {
		tap_put_diag("bug in test: tap_skip_all() after the plan "
		    "or a test point");
		exit(1);
	}
	va_start(ap, fmt);
	tap_vformat(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	fputs("1..0 # SKIP", stdout);
	if (reason[0] != '\0') {
		putchar(' ');
		tap_put_text(reason, 0);
	}
	putchar('\n');
	fflush(stdout);
	exit(0);
}

int
tap_ok(int cond, const char *fmt, ...)
{
	va_list	 ap;
	int	 r;

	va_start(ap, fmt);
	r = tap_vok(cond, fmt, ap);
	va_end(ap);
	return r;
}

int
tap_is_int(long long got, long long want, const char *fmt, ...)
{
	va_list	 ap;
	int	 r;

	va_start(ap, fmt);
	r = tap_vok(got == want, fmt, ap);
	va_end(ap);
	if (!r) {
		tap_diag("got: %lld", got);
		tap_diag("want: %lld", want);
	}
	return r;
}

int
tap_is_str(const char *got, const char *want, const char *fmt, ...)
{
	va_list	 ap;
	int	 equal, r;

	if (got == NULL || want == NULL)
		equal = got == want;
	else
		equal = strcmp(got, want) == 0;

	va_start(ap, fmt);
	r = tap_vok(equal, fmt, ap);
	va_end(ap);
	if (!r) {
		/* Quoted, so "" and NULL and trailing blanks can be told apart. */
		if (got == NULL)
			tap_diag("got: NULL");
		else
			tap_diag("got: \"%s\"", got);
		if (want == NULL)
			tap_diag("want: NULL");
		else
			tap_diag("want: \"%s\"", want);
	}
	return r;
}

void
tap_skip(int n, const char *fmt, ...)
{
	char	 reason[TAP_TEXT_MAX];
	va_list	 ap;
	int	 i;

	va_start(ap, fmt);
	tap_vformat(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	for (i = 0; i < n; i++) {
		tap_count++;
		printf("ok %d # SKIP", tap_count);
		if (reason[0] != '\0') {
			putchar(' ');
			tap_put_text(reason, 0);
		}
		putchar('\n');
	}
	fflush(stdout);
}

void
tap_diag(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	tap_vdiag(fmt, ap);
	va_end(ap);
}

int
tap_done(void)
{
	if (tap_planned < 0) {
		printf("1..%d\n", tap_count);
		fflush(stdout);
		if (tap_count == 0) {
			tap_put_diag("no test point was run");
			return 1;
		}
	} else if (tap_count != tap_planned) {
		tap_diag("planned %d test points but ran %d", tap_planned,
		    tap_count);
		return 1;
	}
	if (tap_failed > 0) {
		tap_diag("failed %d of %d test points", tap_failed, tap_count);
		return 1;
	}
	return tap_bug ? 1 : 0;
}
