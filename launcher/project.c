/*
 * project.c — a project's .intutic.yaml (see project.h).
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "project.h"
#include "rules.h"

/* Whether DIR/NAME exists; `kind` is S_IFREG, S_IFDIR or 0 for either. */
static int
has(const char *dir, const char *name, mode_t kind)
{
	char p[PATH_MAX];
	struct stat sb;
	int n;

	n = snprintf(p, sizeof(p), "%s%s%s", dir,
	    strcmp(dir, "/") == 0 ? "" : "/", name);
	if (n < 0 || (size_t)n >= sizeof(p) || stat(p, &sb) != 0)
		return 0;
	return kind == 0 || (sb.st_mode & S_IFMT) == kind;
}

int
project_find(char *path, size_t len, char *err, size_t errlen)
{
	char dir[PATH_MAX], *slash;
	int n;

	if (getcwd(dir, sizeof(dir)) == NULL) {
		snprintf(err, errlen, "cannot tell the current directory: %s",
		    strerror(errno));
		return -1;
	}
	for (;;) {
		if (has(dir, PROJECT_FILE, S_IFREG)) {
			n = snprintf(path, len, "%s%s%s", dir,
			    strcmp(dir, "/") == 0 ? "" : "/", PROJECT_FILE);
			if (n < 0 || (size_t)n >= len) {
				snprintf(err, errlen, "the path of %s in '%s' "
				    "is too long", PROJECT_FILE, dir);
				return -1;
			}
			return 1;
		}
		/* The repository root is as far as a project goes. */
		if (has(dir, ".git", 0) || strcmp(dir, "/") == 0)
			return 0;
		if ((slash = strrchr(dir, '/')) == NULL)
			return 0;
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
}

int
project_check(const char *path, const struct rules *ceiling,
    struct rules **out, char *err, size_t errlen)
{
	struct rules_error rerr;
	struct rules *project;
	char msg[RULES_ERROR_MAX + RULES_PATH_MAX + 64], why[1024];

	if (out != NULL)
		*out = NULL;
	if (rules_load(path, &project, &rerr) != 0) {
		snprintf(err, errlen, "%s",
		    rules_error_str(&rerr, msg, sizeof(msg)));
		return -1;
	}
	if (rules_tightens(ceiling, project, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "%s", why);
		rules_free(project);
		return -1;
	}
	if (out != NULL)
		*out = project;
	else
		rules_free(project);
	return 0;
}
