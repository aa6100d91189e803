/*
 * cmd-stop.c — `intutic stop`: stops the proxy that the state file names,
 * once it is sure the pid is an intutic-proxy.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intutic.h"
#include "log.h"
#include "proc.h"
#include "state.h"

#define STOP_TIMEOUT_S		30	/* for the proxy to exit */
#define STOP_TIMEOUT_S_MAX	3600

static int	cmd_stop_exec(int, char **);

const struct cmd_entry cmd_stop_entry = {
	.name = "stop",
	.summary = "stop the proxy that start runs",
	.help =
	    "usage: intutic stop [--state-dir DIR] [--timeout SECONDS]\n"
	    "\n"
	    "Reads the proxy's state file, DIR/proxy.json, checks that the\n"
	    "process it names is an intutic-proxy, sends it SIGTERM and waits\n"
	    "until it has drained its connections and exited.  A process that\n"
	    "is not an intutic-proxy is never signalled.\n"
	    "\n"
	    "--state-dir DIR     The proxy's state directory (default\n"
	    "                    $XDG_STATE_HOME/intutic, else\n"
	    "                    ~/.local/state/intutic, else /run/intutic; when\n"
	    "                    no proxy runs there, /run/intutic: the service's).\n"
	    "--timeout SECONDS   How long to wait for it to exit (default 30).\n"
	    "\n"
	    "Exit 0: stopped.  3: not running (no state file, or a stale one,\n"
	    "which is removed).  1: it did not stop, or the state file is\n"
	    "malformed.  2: usage error.\n",
	.exec = cmd_stop_exec,
};

static int
stop_timeout(const char *s, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0' || errno != 0 || v < 1 ||
	    v > STOP_TIMEOUT_S_MAX)
		return cmd_usage_error(&cmd_stop_entry, "stop: --timeout: "
		    "'%s' is not a number of seconds from 1 to %d", s,
		    STOP_TIMEOUT_S_MAX);
	*out = (int)v;
	return 0;
}

/* The state file names no proxy: remove it and say so. */
static int
stop_stale(const struct proxy_state *st, enum proc_kind kind,
    const char *what)
{
	char why[PATH_MAX + 64];

	if (kind == PROC_GONE)
		snprintf(why, sizeof(why), "pid %ld is gone", (long)st->pid);
	else
		snprintf(why, sizeof(why), "pid %ld is '%s', not "
		    "intutic-proxy: not signalled", (long)st->pid, what);
	if (state_remove_stale(st) != 0)
		error("not running, and cannot remove the "
		    "stale state file '%s' (%s): %s", st->path, why,
		    strerror(errno));
	else
		error("not running: removed the stale "
		    "state file '%s' (%s)", st->path, why);
	return EXIT_NOT_RUNNING;
}

static int
cmd_stop_exec(int argc, char **argv)
{
	struct proxy_state st;
	struct proc p;
	const char *opt_dir = NULL, *v;
	char what[PATH_MAX];
	enum proc_kind kind;
	int i, r, timeout = STOP_TIMEOUT_S;

	for (i = 1; i < argc; i++) {
		if ((r = cmd_option(&cmd_stop_entry, argc, argv, &i,
		    "state-dir", "DIR", &opt_dir)) == 1)
			continue;
		if (r == 0 && (r = cmd_option(&cmd_stop_entry, argc, argv, &i,
		    "timeout", "SECONDS", &v)) == 1) {
			if (stop_timeout(v, &timeout) != 0)
				return EXIT_USAGE;
			continue;
		}
		if (r == -1)
			return EXIT_USAGE;
		return cmd_usage_error(&cmd_stop_entry,
		    "stop: unknown argument '%s'", argv[i]);
	}
	if ((r = config_state_find(opt_dir, &st, NULL, 0)) != 0)
		return r;

	if (proc_open(&p, st.pid) != 0)
		return stop_stale(&st, PROC_GONE, NULL);
	if ((kind = proc_kind_started(&p, st.started, what, sizeof(what))) != PROC_PROXY) {
		proc_close(&p);
		return stop_stale(&st, kind, what);
	}
	if (proc_signal(&p, SIGTERM) != 0) {
		r = errno;
		proc_close(&p);
		if (r == ESRCH)
			return stop_stale(&st, PROC_GONE, NULL);
		error("cannot stop the proxy (pid %ld): "
		    "%s", (long)st.pid, strerror(r));
		return EXIT_FAILURE;
	}
	r = proc_wait_exit(&p, timeout * 1000);
	proc_close(&p);
	if (r != 0) {
		error("the proxy (pid %ld) still runs %d s "
		    "after SIGTERM", (long)st.pid, timeout);
		return EXIT_FAILURE;
	}
	/* It removes its state file on the way out, unless it was killed. */
	if (state_remove_stale(&st) != 0)
		warn_msg("cannot remove the state "
		    "file '%s': %s", st.path, strerror(errno));
	printf("intutic: proxy stopped (pid %ld, state file %s)\n",
	    (long)st.pid, st.path);
	return 0;
}
