/*
 * cmd-status.c — `intutic status`: whether the proxy runs, and what its
 * /metrics page says.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fetch.h"
#include "intutic.h"
#include "jsonw.h"
#include "log.h"
#include "proc.h"
#include "state.h"
#include "wire.h"

static int	cmd_status_exec(int, char **);

const struct cmd_entry cmd_status_entry = {
	.name = "status",
	.summary = "show whether the proxy runs, and its counters",
	.help =
	    "usage: intutic status [--state-dir DIR] [--json]\n"
	    "\n"
	    "Reads the proxy's state file, DIR/proxy.json, checks that the\n"
	    "process it names is an intutic-proxy, fetches the proxy's /metrics\n"
	    "page from its first address, and prints its pid, the addresses\n"
	    "and port it listens on, its rule file, its uptime, and its\n"
	    "connections, tunnels, decisions and reloads.\n"
	    "\n"
	    "--json            The same as one JSON object (intutic-start(1),\n"
	    "                  STATUS AS JSON), also when it does not run.\n"
	    "--state-dir DIR   The proxy's state directory (default\n"
	    "                  $XDG_STATE_HOME/intutic, else\n"
	    "                  ~/.local/state/intutic, else /run/intutic; when\n"
	    "                  no proxy runs there, /run/intutic: the service's).\n"
	    "\n"
	    "Exit 0: running.  3: not running (no state file, or a stale one).\n"
	    "1: running but not answering, or the state file is malformed.\n"
	    "2: usage error.\n",
	.exec = cmd_status_exec,
};

/* The samples status shows, as the proxy writes them. */
enum status_metric {
	STATUS_CONNS_TOTAL,
	STATUS_CONNS_ACTIVE,
	STATUS_TUNNELS_ACTIVE,
	STATUS_ALLOW,
	STATUS_DENY,
	STATUS_RELOADS,
	STATUS_RELOAD_ERRORS,
	STATUS_UPTIME,
	STATUS_METRIC_COUNT
};

static const char *const status_samples[STATUS_METRIC_COUNT] = {
	[STATUS_CONNS_TOTAL] = WIRE_METRIC_CONNS_TOTAL,
	[STATUS_CONNS_ACTIVE] = WIRE_METRIC_CONNS_ACTIVE,
	[STATUS_TUNNELS_ACTIVE] = WIRE_METRIC_TUNNELS_ACTIVE,
	[STATUS_ALLOW] = WIRE_METRIC_DECISIONS "{decision=\"allow\"}",
	[STATUS_DENY] = WIRE_METRIC_DECISIONS "{decision=\"deny\"}",
	[STATUS_RELOADS] = WIRE_METRIC_RELOADS,
	[STATUS_RELOAD_ERRORS] = WIRE_METRIC_RELOAD_ERRORS,
	[STATUS_UPTIME] = WIRE_METRIC_UPTIME,
};

#define STATUS_VALUE_MAX	24	/* a counter as text, or "-" */

struct status_metrics {
	char	 v[STATUS_METRIC_COUNT][STATUS_VALUE_MAX];
};

/*
 * Finds each of the n samples in a Prometheus text page: a line "SAMPLE
 * VALUE" (the proxy writes integers) into vals[i]; ULLONG_MAX when not
 * found.
 */
static void
counters_parse(const char *page, const char *const *samples, size_t n,
    unsigned long long *vals)
{
	const char *line, *eol, *val;
	unsigned long long v;
	size_t i, len;
	char *end;

	for (i = 0; i < n; i++)
		vals[i] = ULLONG_MAX;
	for (line = page; *line != '\0'; line = *eol != '\0' ? eol + 1 : eol) {
		if ((eol = strchr(line, '\n')) == NULL)
			eol = line + strlen(line);
		if (*line == '#')
			continue;
		for (i = 0; i < n; i++) {
			len = strlen(samples[i]);
			if ((size_t)(eol - line) <= len ||
			    strncmp(line, samples[i], len) != 0 ||
			    line[len] != ' ')
				continue;
			val = line + len + 1;
			if (*val < '0' || *val > '9')
				break;
			errno = 0;
			v = strtoull(val, &end, 10);
			if (errno == 0 && (end == eol || *end == ' ' ||
			    *end == '\r'))
				vals[i] = v;
			break;
		}
	}
}

/* The URL of /metrics on the first address; a wildcard one via loopback. */
static void
status_url(const struct proxy_state *st, char *buf, size_t len)
{
	const char *a = st->bind[0];

	if (strcmp(a, "0.0.0.0") == 0)
		a = "127.0.0.1";
	else if (strcmp(a, "::") == 0)
		a = "::1";
	snprintf(buf, len, strchr(a, ':') != NULL ? "http://[%s]:%u/metrics" :
	    "http://%s:%u/metrics", a, st->port);
}

int
proxy_counters(const struct proxy_state *st, const char *const *samples,
    size_t n, unsigned long long *vals, char *err, size_t errlen)
{
	char url[STATE_ADDR_MAX + 64], ferr[FETCH_ERROR_MAX], *page;
	size_t len;

	status_url(st, url, sizeof(url));
	if (fetch_get(url, &page, &len, ferr, sizeof(ferr)) != 0) {
		snprintf(err, errlen, "the proxy (pid %ld) does not answer at "
		    "%s: %s", (long)st->pid, url, ferr);
		return -1;
	}
	counters_parse(page, samples, n, vals);
	free(page);
	return 0;
}

static void
status_print(const struct proxy_state *st, const char *state,
    const struct status_metrics *m)
{
	char where[STATE_BINDS_MAX * (STATE_ADDR_MAX + 16)], up[64];
	const char *uptime;
	char *end;
	long long s;

	printf("state:       %s\n", state);
	printf("pid:         %ld\n", (long)st->pid);
	printf("listen:      %s\n", state_listen_text(st, where,
	    sizeof(where)));
	printf("rules:       %s\n", st->rules);
	printf("audit:       %s\n", st->audit[0] != '\0' ? st->audit : "-");
	if (st->version[0] != '\0')
		printf("version:     %s\n", st->version);
	if (st->workers > 0)
		printf("workers:     %d\n", st->workers);
	/* The proxy's own count, else the start time in the state file. */
	uptime = m != NULL ? m->v[STATUS_UPTIME] : "-";
	s = strtoll(uptime, &end, 10);
	if (strcmp(uptime, "-") == 0 || *end != '\0')
		s = (long long)time(NULL) - st->started;
	printf("uptime:      %s\n", cmd_duration_text(s, up, sizeof(up)));
	if (m == NULL)
		return;
	printf("connections: %s total, %s active\n", m->v[STATUS_CONNS_TOTAL],
	    m->v[STATUS_CONNS_ACTIVE]);
	printf("tunnels:     %s active\n", m->v[STATUS_TUNNELS_ACTIVE]);
	printf("decisions:   %s allow, %s deny\n", m->v[STATUS_ALLOW],
	    m->v[STATUS_DENY]);
	printf("reloads:     %s, %s errors\n", m->v[STATUS_RELOADS],
	    m->v[STATUS_RELOAD_ERRORS]);
}

/* A counter as JSON: its value, or null when the page had none. */
static void
json_count(const char *key, unsigned long long v, int last)
{
	if (v == ULLONG_MAX)
		printf("\"%s\":null%s", key, last ? "" : ",");
	else
		printf("\"%s\":%llu%s", key, v, last ? "" : ",");
}

/*
 * status --json: {"state": "running" | "not answering" | "not running",
 * "state_file", and what is known: "why" (not running), "pid",
 * "listen" [...], "rules", "audit", "version", "workers", "started",
 * "connections_total", "connections_active", "tunnels_active",
 * "decisions_allow", "decisions_deny", "reloads", "reload_errors"}.
 */
static void
status_json(const struct proxy_state *st, const char *state, const char *why,
    const unsigned long long *v)
{
	size_t i;

	printf("{\"state\":");
	jsonw_fstr(stdout, state);
	printf(",\"state_file\":");
	jsonw_fstr(stdout, st->path);
	if (why != NULL) {
		printf(",\"why\":");
		jsonw_fstr(stdout, why);
		printf("}\n");
		return;
	}
	printf(",\"pid\":%ld,\"listen\":[", (long)st->pid);
	for (i = 0; i < st->nbind; i++) {
		char a[STATE_ADDR_MAX + 16];

		snprintf(a, sizeof(a), strchr(st->bind[i], ':') != NULL ?
		    "[%s]:%u" : "%s:%u", st->bind[i], st->port);
		if (i > 0)
			putchar(',');
		jsonw_fstr(stdout, a);
	}
	printf("],\"rules\":");
	jsonw_fstr(stdout, st->rules);
	printf(",\"audit\":");
	jsonw_fstr(stdout, st->audit[0] != '\0' ? st->audit : NULL);
	printf(",\"version\":");
	jsonw_fstr(stdout, st->version[0] != '\0' ? st->version : NULL);
	printf(",\"workers\":%d,\"started\":%lld", st->workers, st->started);
	if (v == NULL) {
		printf("}\n");
		return;
	}
	putchar(',');
	json_count("connections_total", v[STATUS_CONNS_TOTAL], 0);
	json_count("connections_active", v[STATUS_CONNS_ACTIVE], 0);
	json_count("tunnels_active", v[STATUS_TUNNELS_ACTIVE], 0);
	json_count("decisions_allow", v[STATUS_ALLOW], 0);
	json_count("decisions_deny", v[STATUS_DENY], 0);
	json_count("reloads", v[STATUS_RELOADS], 0);
	json_count("reload_errors", v[STATUS_RELOAD_ERRORS], 0);
	json_count("uptime_seconds", v[STATUS_UPTIME], 1);
	printf("}\n");
}

static int
cmd_status_exec(int argc, char **argv)
{
	struct proxy_state st;
	struct status_metrics m;
	struct proc p;
	const char *opt_dir = NULL;
	char err[STATE_ERROR_MAX + 256], what[PATH_MAX];
	unsigned long long vals[STATUS_METRIC_COUNT];
	char why[PATH_MAX + 128];
	enum proc_kind kind;
	int i, r, json = 0;

	for (i = 1; i < argc; i++) {
		if ((r = cmd_option(&cmd_status_entry, argc, argv, &i,
		    "state-dir", "DIR", &opt_dir)) == 1)
			continue;
		if (r == 0 && strcmp(argv[i], "--json") == 0) {
			json = 1;
			continue;
		}
		if (r == -1)
			return EXIT_USAGE;
		return cmd_usage_error(&cmd_status_entry,
		    "status: unknown argument '%s'", argv[i]);
	}
	if ((r = config_state_find(opt_dir, &st, NULL, 1)) == EXIT_NOT_RUNNING) {
		if (json)
			status_json(&st, "not running", "no state file", NULL);
		else
			printf("intutic: not running (no state file '%s')\n",
			    st.path);
		return EXIT_NOT_RUNNING;
	}
	if (r != 0)
		return r;
	kind = PROC_GONE;
	if (proc_open(&p, st.pid) == 0) {
		kind = proc_kind_started(&p, st.started, what, sizeof(what));
		proc_close(&p);
	}
	if (kind != PROC_PROXY) {
		/* "stale state file 'PATH': pid N is ..." */
		if (kind == PROC_GONE)
			snprintf(why, sizeof(why), "pid %ld is gone",
			    (long)st.pid);
		else
			snprintf(why, sizeof(why), "pid %ld is '%s', not "
			    "intutic-proxy", (long)st.pid, what);
		if (json)
			status_json(&st, "not running", why, NULL);
		else
			printf("intutic: not running (stale state file '%s': "
			    "%s)\n", st.path, why);
		return EXIT_NOT_RUNNING;
	}

	if (proxy_counters(&st, status_samples, STATUS_METRIC_COUNT, vals,
	    err, sizeof(err)) != 0) {
		if (json)
			status_json(&st, "not answering", NULL, NULL);
		else
			status_print(&st, "running, not answering", NULL);
		fflush(stdout);
		error("%s", err);
		return EXIT_FAILURE;
	}
	if (json) {
		status_json(&st, "running", NULL, vals);
		return 0;
	}
	for (i = 0; i < STATUS_METRIC_COUNT; i++)
		if (vals[i] == ULLONG_MAX)
			snprintf(m.v[i], sizeof(m.v[i]), "-");
		else
			snprintf(m.v[i], sizeof(m.v[i]), "%llu", vals[i]);
	status_print(&st, "running", &m);
	return 0;
}
