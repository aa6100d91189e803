/*
 * paths.c — where the run-time files are (see paths.h).
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "paths.h"

static int
fits(char *buf, size_t len, int n)
{
	if (n < 0 || (size_t)n >= len) {
		if (len > 0)
			buf[0] = '\0';
		return -1;
	}
	return 0;
}

int
paths_state_dir(char *buf, size_t len)
{
	const char *v;
	int n;

	if ((v = getenv("XDG_STATE_HOME")) != NULL && *v == '/')
		n = snprintf(buf, len, "%s/intutic", v);
	else if ((v = getenv("HOME")) != NULL && *v == '/')
		n = snprintf(buf, len, "%s/.local/state/intutic", v);
	else
		n = snprintf(buf, len, "%s", PATHS_SYSTEM_STATE_DIR);
	return fits(buf, len, n);
}

int
paths_cache_dir(char *buf, size_t len)
{
	const char *v;
	int n;

	if ((v = getenv("XDG_CACHE_HOME")) != NULL && *v == '/')
		n = snprintf(buf, len, "%s/intutic", v);
	else if ((v = getenv("HOME")) != NULL && *v == '/')
		n = snprintf(buf, len, "%s/.cache/intutic", v);
	else
		return fits(buf, len, -1);
	return fits(buf, len, n);
}

int
paths_state_file(const char *dir, char *buf, size_t len)
{
	return fits(buf, len, snprintf(buf, len, "%s/%s", dir,
	    PATHS_STATE_FILE));
}

int
paths_mkdirs(const char *path)
{
	char buf[PATH_MAX], *s;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (s = buf + 1; *s != '\0'; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(buf, 0700) == -1 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	if (mkdir(buf, 0700) == -1 && errno != EEXIST)
		return -1;
	return 0;
}
