/*
 * cmd-runs.c — `intutic runs [list|show RUN|end RUN]`: the runs the proxy
 * knows, asked on its control socket (control.c).  Whoever runs it sees
 * and ends what the proxy lets that user: its own runs, or every run for
 * root and the proxy's user.
 */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "control.h"
#include "runrec.h"
#include "intutic.h"
#include "locate.h"
#include "log.h"
#include "wire.h"

static int	cmd_runs_exec(int, char **);

const struct cmd_entry cmd_runs_entry = {
	.name = "runs",
	.summary = "list, show or end the runs the proxy knows",
	.help =
	    "usage: intutic runs [list] [--json] [--state-dir DIR]\n"
	    "       intutic runs show RUN [--json] [--state-dir DIR]\n"
	    "       intutic runs end RUN [--state-dir DIR]\n"
	    "\n"
	    "Asks the proxy on its control socket (DIR/control.sock, named by\n"
	    "its state file).  list: one line a run, the newest last: its id,\n"
	    "the uid that registered it, the launcher's pid, its age, the\n"
	    "command and the project file.  show: one run, a field a line.\n"
	    "end: the proxy forgets the run; its credentials are refused (407)\n"
	    "from then on.  A user sees and ends its own runs; root and the\n"
	    "proxy's user, every run.\n"
	    "\n"
	    "--json            What the proxy answered, as it answered it.\n"
	    "--state-dir DIR   The proxy's state directory (default\n"
	    "                  $XDG_STATE_HOME/intutic, else\n"
	    "                  ~/.local/state/intutic, else /run/intutic).\n"
	    "\n"
	    "Exit 0: done.  1: no such run, or it is another user's.  2: usage\n"
	    "error.  3: the proxy is not running.  125: the proxy cannot be\n"
	    "asked (no control socket, or a malformed answer).\n",
	.exec = cmd_runs_exec,
};

static void
runs_print_list(const struct runrec *runs, size_t n)
{
	char age[32], pid[24];
	size_t i;

	printf("%-24s %6s %8s %11s  %-16s %s\n", "RUN", "UID", "PID", "AGE",
	    "COMMAND", "PROJECT");
	for (i = 0; i < n; i++) {
		const struct runrec *r = &runs[i];

		snprintf(pid, sizeof(pid), r->pid >= 0 ? "%lld" : "-", r->pid);
		printf("%-24s %6lld %8s %11s  %-16s %s\n", r->id, r->uid, pid,
		    cmd_duration_text((long long)time(NULL) - r->registered,
		    age, sizeof(age)), r->command,
		    r->project[0] != '\0' ? r->project : "-");
	}
}

static void
runs_print_one(const struct runrec *r)
{
	char age[32];

	printf("run:         %s\n", r->id);
	printf("uid:         %lld\n", r->uid);
	if (r->pid >= 0)
		printf("pid:         %lld\n", r->pid);
	else
		printf("pid:         -\n");
	printf("registered:  %lld (%s ago)\n", r->registered,
	    cmd_duration_text((long long)time(NULL) - r->registered, age,
	    sizeof(age)));
	printf("command:     %s\n", r->command);
	printf("project:     %s\n", r->project[0] != '\0' ? r->project : "-");
}

/* One request and what to do with its answer; the exit status. */
static int
runs_ask(const char *sock, const char *what, const char *id, int json)
{
	struct runrec *runs = NULL;
	char path[RUNREC_ID_MAX + 32], why[1024], *answer = NULL;
	size_t n = 0;
	long status;
	int r = EXIT_CANNOT_RUN;

	snprintf(path, sizeof(path), WIRE_RUNS_PATH "%s%s", id != NULL ? "/" :
	    "", id != NULL ? id : "");
	if (control_request(sock, strcmp(what, "end") == 0 ? "DELETE" : "GET",
	    path, NULL, &status, &answer, why, sizeof(why)) != 0) {
		error("runs: cannot ask the proxy: %s", why);
		return EXIT_CANNOT_RUN;
	}
	if (status == 403 || status == 404) {
		error("runs %s: %s", what, why);
		r = EXIT_FAILURE;
		goto out;
	}
	if (status != 200) {
		error("runs %s: the proxy answered %s", what, why);
		goto out;
	}
	if (strcmp(what, "end") == 0) {
		printf("run %s ended\n", id);
		r = EXIT_SUCCESS;
	} else if (json) {
		fputs(answer, stdout);
		r = EXIT_SUCCESS;
	} else if (runrec_parse("the proxy's answer", answer, strlen(answer), id == NULL,
	    &runs, &n, why, sizeof(why)) != 0)
		error("runs %s: %s", what, why);
	else {
		if (id == NULL)
			runs_print_list(runs, n);
		else
			runs_print_one(&runs[0]);
		r = EXIT_SUCCESS;
	}
	if (r == EXIT_SUCCESS && fflush(stdout) != 0)
		r = EXIT_FAILURE;
 out:
	runrec_free(runs, n);
	free(answer);
	return r;
}

static int
cmd_runs_exec(int argc, char **argv)
{
	struct proxy_loc loc;
	const char *opt_dir = NULL, *what = "list", *id = NULL;
	char err[PATH_MAX + 256];
	int i = 1, r, json = 0;

	if (i < argc && argv[i][0] != '-') {
		what = argv[i++];
		if (strcmp(what, "show") == 0 || strcmp(what, "end") == 0) {
			if (i == argc || argv[i][0] == '-')
				return cmd_usage_error(&cmd_runs_entry, "runs "
				    "%s: which RUN?", what);
			id = argv[i++];
			if (strlen(id) >= RUNREC_ID_MAX)
				return cmd_usage_error(&cmd_runs_entry, "runs "
				    "%s: '%.64s...' is no run id", what, id);
		} else if (strcmp(what, "list") != 0)
			return cmd_usage_error(&cmd_runs_entry, "runs: unknown "
			    "argument '%s' (list, show RUN or end RUN)", what);
	}
	for (; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0 && strcmp(what, "end") != 0) {
			json = 1;
			continue;
		}
		if ((r = cmd_option(&cmd_runs_entry, argc, argv, &i,
		    "state-dir", "DIR", &opt_dir)) == 1)
			continue;
		if (r == -1)
			return EXIT_USAGE;
		return cmd_usage_error(&cmd_runs_entry, "runs %s: unknown "
		    "argument '%s'", what, argv[i]);
	}
	if (proxy_locate(NULL, opt_dir, &loc, err, sizeof(err)) != 0) {
		error("runs: %s", err);
		return EXIT_CANNOT_RUN;
	}
	if (!loc.have_state) {
		error("runs: not running (no state file in the state "
		    "directory; start the proxy with `intutic start`, or give "
		    "--state-dir)");
		return EXIT_NOT_RUNNING;
	}
	if (loc.control[0] == '\0') {
		error("runs: the state file %s names no control socket (a "
		    "proxy older than this intutic: restart it)", loc.st.path);
		return EXIT_CANNOT_RUN;
	}
	return runs_ask(loc.control, what, id, json);
}
