/*
 * log.c — diagnostics to stderr.  One write per line, so lines from several
 * threads do not interleave.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#define LOG_LINE_MAX	2048

static const char	*log_progname = "intutic";
static enum log_level	 log_level = LOG_LEVEL_INFO;

void
log_init(const char *progname, enum log_level level)
{
	const char *slash;

	if (progname != NULL) {
		slash = strrchr(progname, '/');
		log_progname = slash != NULL ? slash + 1 : progname;
	}
	log_level = level;
}

static void
log_vmsg(enum log_level level, const char *func, const char *fmt, va_list ap)
{
	static const char *const prefix[] = {
		[LOG_LEVEL_FATAL] = "",
		[LOG_LEVEL_ERROR] = "",
		[LOG_LEVEL_WARN] = "warning: ",
		[LOG_LEVEL_INFO] = "",
		[LOG_LEVEL_DEBUG] = "debug: ",
	};
	char line[LOG_LINE_MAX];
	size_t off;
	int n;

	if (level > log_level)
		return;
	n = snprintf(line, sizeof(line), "%s: %s%s%s", log_progname,
	    prefix[level], func != NULL ? func : "", func != NULL ? ": " : "");
	off = n < 0 ? 0 : (size_t)n;
	if (off < sizeof(line)) {
		n = vsnprintf(line + off, sizeof(line) - off, fmt, ap);
		if (n > 0)
			off += (size_t)n;
	}
	if (off > sizeof(line) - 2)
		off = sizeof(line) - 2;
	line[off++] = '\n';
	(void)!write(STDERR_FILENO, line, off);
}

void
log_msg(enum log_level level, const char *func, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, func, fmt, ap);
	va_end(ap);
}

void
log_fatal(const char *func, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LOG_LEVEL_FATAL, func, fmt, ap);
	va_end(ap);
	exit(1);
}
