/*
 * config.c — where the launcher finds its files.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "intutic.h"
#include "log.h"
#include "paths.h"
#include "state.h"

int
config_state_dir(const char *dir, char *buf, size_t len)
{
	int n;

	if (dir == NULL) {
		if (paths_state_dir(buf, len) == 0)
			return 0;
		error("the default state directory is too "
		    "long: set XDG_STATE_HOME or use --state-dir");
		return -1;
	}
	if (*dir == '\0') {
		error("--state-dir: empty directory name");
		return -1;
	}
	n = snprintf(buf, len, "%s", dir);
	if (n < 0 || (size_t)n >= len) {
		error("--state-dir: '%s' is too long",
		    dir);
		return -1;
	}
	return 0;
}

int
config_state_dir_find(const char *dir, char *buf, size_t len)
{
	char file[PATH_MAX];
	struct stat st;

	if (config_state_dir(dir, buf, len) != 0)
		return -1;
	/* No proxy of the user's own: the service's, when it runs. */
	if (dir == NULL && strcmp(buf, PATHS_SYSTEM_STATE_DIR) != 0 &&
	    paths_state_file(buf, file, sizeof(file)) == 0 &&
	    stat(file, &st) != 0 && errno == ENOENT &&
	    stat(PATHS_SYSTEM_STATE_DIR "/" PATHS_STATE_FILE, &st) == 0 &&
	    strlen(PATHS_SYSTEM_STATE_DIR) < len)
		snprintf(buf, len, "%s", PATHS_SYSTEM_STATE_DIR);
	return 0;
}

const char *
config_rules_path(const char *opt, char *buf, size_t len)
{
	const char *v;

	if (opt != NULL) {
		snprintf(buf, len, "%s", opt);
		return buf;
	}
	if ((v = getenv("INTUTIC_RULES")) != NULL && *v != '\0') {
		snprintf(buf, len, "%s", v);
		return buf;
	}
	if ((v = getenv("XDG_CONFIG_HOME")) != NULL && *v == '/')
		snprintf(buf, len, "%s/intutic/rules.yaml", v);
	else if ((v = getenv("HOME")) != NULL && *v == '/')
		snprintf(buf, len, "%s/.config/intutic/rules.yaml", v);
	else
		buf[0] = '\0';
	if (buf[0] != '\0' && access(buf, F_OK) == 0)
		return buf;
	snprintf(buf, len, "/etc/intutic/rules.yaml");
	if (access(buf, F_OK) == 0)
		return buf;
	snprintf(buf, len, "%s/rules/default.yaml", INTUTIC_DATADIR);
	return buf;
}

int
config_state_find(const char *opt_dir, struct proxy_state *st,
    const char *hint, int quiet)
{
	char dir[PATH_MAX], err[STATE_ERROR_MAX];

	if (config_state_dir_find(opt_dir, dir, sizeof(dir)) != 0)
		return EXIT_USAGE;
	switch (state_read(dir, st, err, sizeof(err))) {
	case STATE_OK:
		return 0;
	case STATE_MISSING:
		if (!quiet)
			error("not running (no state file '%s')%s", st->path,
			    hint != NULL ? hint : "");
		return EXIT_NOT_RUNNING;
	default:
		error("%s", err);
		return EXIT_FAILURE;
	}
}
