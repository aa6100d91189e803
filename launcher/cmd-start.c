/*
 * cmd-start.c — `intutic start`: checks the rule file it will use, then runs
 * the governing proxy, intutic-proxy, in the foreground.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rules.h"
#include "intutic.h"

static int	cmd_start_exec(int, char **);

const struct cmd_entry cmd_start_entry = {
	.name = "start",
	.summary = "run the governing proxy with a rule file",
	.help =
	    "usage: intutic start [--rules FILE]\n"
	    "\n"
	    "Checks the rule file (FILE, else $INTUTIC_RULES, else\n"
	    "$XDG_CONFIG_HOME/intutic/rules.yaml (or ~/.config/intutic/rules.yaml),\n"
	    "else /etc/intutic/rules.yaml, else the shipped default.yaml) and\n"
	    "runs the proxy, intutic-proxy, in the foreground.  A rule file\n"
	    "that does not load is never half-applied: start refuses with\n"
	    "exit 2.  When intutic-proxy is not installed, start says so and\n"
	    "exits 125.\n",
	.exec = cmd_start_exec,
};

/* Writes DIR/NAME into buf; 0 when it fits and is executable. */
static int
executable(char *buf, size_t len, const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= len)
		return -1;
	return access(buf, X_OK);
}

/* intutic-proxy under libexecdir, else beside this program. */
static int
find_proxy(char *buf, size_t len)
{
	char self[PATH_MAX], *slash;
	ssize_t n;

	if (executable(buf, len, INTUTIC_LIBEXECDIR, "intutic-proxy") == 0)
		return 0;
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) <= 0)
		return -1;
	self[n] = '\0';
	if ((slash = strrchr(self, '/')) == NULL)
		return -1;
	*slash = '\0';
	if (executable(buf, len, self, "intutic-proxy") == 0)
		return 0;
	/* In a build tree: launcher/intutic beside proxy/intutic-proxy. */
	return executable(buf, len, self, "../proxy/intutic-proxy");
}

static int
cmd_start_exec(int argc, char **argv)
{
	struct rules *r;
	struct rules_error err;
	const char *opt = NULL;
	char path[RULES_PATH_MAX], proxy[PATH_MAX];
	char msg[RULES_PATH_MAX + RULES_ERROR_MAX + 64];
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--rules") == 0 && i + 1 < argc)
			opt = argv[++i];
		else if (strncmp(argv[i], "--rules=", 8) == 0)
			opt = argv[i] + 8;
		else if (strcmp(argv[i], "--rules") == 0)
			return cmd_usage_error(&cmd_start_entry,
			    "start: --rules needs a FILE");
		else
			return cmd_usage_error(&cmd_start_entry,
			    "start: unknown argument '%s'", argv[i]);
	}
	config_rules_path(opt, path, sizeof(path));
	if (rules_load(path, &r, &err) != 0) {
		fprintf(stderr, "%s\nintutic: not starting: the rule file "
		    "does not load\n", rules_error_str(&err, msg, sizeof(msg)));
		return EXIT_USAGE;
	}
	printf("intutic: rules '%s' loaded: %zu entries, mode %s\n", path,
	    rules_count(r), rules_mode(r) == RULES_MODE_REPORT ? "report" :
	    "enforce");
	rules_free(r);
	fflush(stdout);

	if (find_proxy(proxy, sizeof(proxy)) != 0) {
		fprintf(stderr, "intutic: the proxy is not built yet: no "
		    "intutic-proxy in %s, beside intutic, or in ../proxy of a "
		    "build tree\n", INTUTIC_LIBEXECDIR);
		return EXIT_CANNOT_RUN;
	}
	execl(proxy, "intutic-proxy", "--rules", path, (char *)NULL);
	fprintf(stderr, "intutic: cannot run '%s': %s\n", proxy,
	    strerror(errno));
	return EXIT_CANNOT_RUN;
}
