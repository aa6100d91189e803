/*
 * cmd-reload.c — `intutic reload`: checks the running proxy's rule file,
 * then has the proxy load it (SIGHUP) and says whether it took it.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "intutic.h"
#include "log.h"
#include "proc.h"
#include "rules.h"
#include "state.h"
#include "wire.h"

#define RELOAD_TIMEOUT_S	10	/* for the proxy to say */
#define RELOAD_TIMEOUT_S_MAX	3600
#define RELOAD_POLL_MS		50

static int	cmd_reload_exec(int, char **);

const struct cmd_entry cmd_reload_entry = {
	.name = "reload",
	.summary = "check the rules, then have the running proxy load them",
	.help =
	    "usage: intutic reload [--state-dir DIR] [--timeout SECONDS]\n"
	    "\n"
	    "Reads the proxy's state file, DIR/proxy.json, checks that the\n"
	    "process it names is an intutic-proxy, and loads the rule file it\n"
	    "runs with, as the proxy would.  A file that does not load is\n"
	    "named with its FILE:LINE:COL and the proxy is not signalled: it\n"
	    "keeps its rules.  Else the proxy gets SIGHUP, and reload waits\n"
	    "until its /metrics page counts the reload, or the reload it\n"
	    "refused (then its log says why; it keeps the rules it had).\n"
	    "\n"
	    "--state-dir DIR     The proxy's state directory (default\n"
	    "                    $XDG_STATE_HOME/intutic, else\n"
	    "                    ~/.local/state/intutic, else /run/intutic; when\n"
	    "                    no proxy runs there, /run/intutic: the service's).\n"
	    "--timeout SECONDS   How long to wait for the proxy to say (default\n"
	    "                    10).\n"
	    "\n"
	    "Exit 0: reloaded.  1: the proxy refused the new rules, did not say\n"
	    "in time, or does not answer.  2: usage error, or the rule file\n"
	    "does not load.  3: not running.\n",
	.exec = cmd_reload_exec,
};

static const char *const reload_samples[] = {
	WIRE_METRIC_RELOADS, WIRE_METRIC_RELOAD_ERRORS,
};

static int
reload_timeout(const char *s, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0' || errno != 0 || v < 1 ||
	    v > RELOAD_TIMEOUT_S_MAX)
		return cmd_usage_error(&cmd_reload_entry, "reload: --timeout: "
		    "'%s' is not a number of seconds from 1 to %d", s,
		    RELOAD_TIMEOUT_S_MAX);
	*out = (int)v;
	return 0;
}

static int
cmd_reload_exec(int argc, char **argv)
{
	struct proxy_state st;
	struct rules_error rerr;
	struct rules *rules;
	struct proc p;
	struct timespec tick = { 0, RELOAD_POLL_MS * 1000000L };
	const char *opt_dir = NULL, *v;
	char err[STATE_ERROR_MAX + 256], what[PATH_MAX];
	char msg[RULES_PATH_MAX + RULES_ERROR_MAX + 64];
	unsigned long long before[2], now[2];
	enum proc_kind kind;
	size_t entries;
	long waited;
	int i, r, timeout = RELOAD_TIMEOUT_S;

	for (i = 1; i < argc; i++) {
		if ((r = cmd_option(&cmd_reload_entry, argc, argv, &i,
		    "state-dir", "DIR", &opt_dir)) == 1)
			continue;
		if (r == 0 && (r = cmd_option(&cmd_reload_entry, argc, argv, &i,
		    "timeout", "SECONDS", &v)) == 1) {
			if (reload_timeout(v, &timeout) != 0)
				return EXIT_USAGE;
			continue;
		}
		if (r == -1)
			return EXIT_USAGE;
		return cmd_usage_error(&cmd_reload_entry,
		    "reload: unknown argument '%s'", argv[i]);
	}
	if ((r = config_state_find(opt_dir, &st, ": nothing to reload; start "
	    "it with `intutic start`", 0)) != 0)
		return r;
	kind = PROC_GONE;
	if (proc_open(&p, st.pid) == 0) {
		kind = proc_kind_started(&p, st.started, what, sizeof(what));
		if (kind != PROC_PROXY)
			proc_close(&p);
	}
	if (kind != PROC_PROXY) {
		if (kind == PROC_GONE)
			error("not running (stale state file '%s': pid %ld is "
			    "gone)", st.path, (long)st.pid);
		else
			error("not running (stale state file '%s': pid %ld is "
			    "'%s'; not signalled)", st.path, (long)st.pid, what);
		return EXIT_NOT_RUNNING;
	}

	/* The file first: a proxy is never sent rules that do not load. */
	if (rules_load(st.rules, &rules, &rerr) != 0) {
		proc_close(&p);
		error("%s", rules_error_str(&rerr, msg, sizeof(msg)));
		error("not reloaded: the proxy (pid %ld) keeps its rules",
		    (long)st.pid);
		return EXIT_USAGE;
	}
	entries = rules_count(rules);
	rules_free(rules);

	if (proxy_counters(&st, reload_samples, 2, before, err,
	    sizeof(err)) != 0) {
		proc_close(&p);
		error("%s", err);
		return EXIT_FAILURE;
	}
	if (proc_signal(&p, SIGHUP) != 0) {
		r = errno;
		proc_close(&p);
		error("cannot signal the proxy (pid %ld): %s", (long)st.pid,
		    strerror(r));
		return r == ESRCH ? EXIT_NOT_RUNNING : EXIT_FAILURE;
	}
	proc_close(&p);
	for (waited = 0; waited < (long)timeout * 1000;
	    waited += RELOAD_POLL_MS) {
		(void)nanosleep(&tick, NULL);
		if (proxy_counters(&st, reload_samples, 2, now, err,
		    sizeof(err)) != 0)
			continue;
		if (now[1] != ULLONG_MAX && now[1] > before[1]) {
			error("the proxy (pid %ld) refused the new rules and "
			    "keeps its own: its log says why", (long)st.pid);
			return EXIT_FAILURE;
		}
		if (now[0] != ULLONG_MAX && now[0] > before[0]) {
			printf("intutic: the proxy (pid %ld) reloaded '%s': "
			    "%zu %s\n", (long)st.pid, st.rules, entries,
			    entries == 1 ? "entry" : "entries");
			return 0;
		}
	}
	error("the proxy (pid %ld) did not count the reload within %d s; "
	    "its log may say why", (long)st.pid, timeout);
	return EXIT_FAILURE;
}
