/*
 * cmd-runs.c — `intutic runs [list|show RUN|end RUN|allow RUN ENTRY...|deny
 * RUN ENTRY...]`: the runs the proxy knows, asked and changed on its
 * control socket (control.c).  Whoever runs it sees and changes what the
 * proxy lets that user: its own runs, or every run for root and the
 * proxy's user.  allow and deny change a run's policy (policy.h): read it,
 * make the new document, and put it with the generation read, so that a
 * change made meanwhile is never undone (the proxy answers 409; read again
 * and tried once more).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "control.h"
#include "intutic.h"
#include "jsonw.h"
#include "locate.h"
#include "log.h"
#include "policy.h"
#include "rules.h"
#include "runrec.h"
#include "wire.h"

#define RUNS_ENTRIES_MAX	64	/* ENTRY operands of allow and deny */
#define RUNS_AGAIN		(-1)	/* the run changed meanwhile: again */
#define RUNS_PUT_FRAME		64	/* bytes of a change besides its policy */

static int	cmd_runs_exec(int, char **);

const struct cmd_entry cmd_runs_entry = {
	.name = "runs",
	.summary = "list, show, change or end the runs the proxy knows",
	.help =
	    "usage: intutic runs [list] [--json] [--state-dir DIR]\n"
	    "       intutic runs show RUN [--json] [--state-dir DIR]\n"
	    "       intutic runs end RUN [--state-dir DIR]\n"
	    "       intutic runs allow RUN ENTRY... [--state-dir DIR]\n"
	    "       intutic runs deny RUN ENTRY... [--state-dir DIR]\n"
	    "\n"
	    "Asks the proxy on its control socket (DIR/control.sock, named by\n"
	    "its state file).  list: one line a run, the newest last: its id,\n"
	    "the uid that registered it, the launcher's pid, its age, the\n"
	    "generation of its policy, its requests and denials, the command\n"
	    "and the project file.  show: one run, a field a line: its policy's\n"
	    "entries, its counters and its last denials too.  end: the proxy\n"
	    "forgets the run; its credentials are refused (407) from then on.\n"
	    "deny: adds each ENTRY (an entry of the rule language) to the run's\n"
	    "deny entries; its open connections that they deny are closed.\n"
	    "allow: removes the run's deny entry that is ENTRY, written the\n"
	    "same; else adds ENTRY to the run's own allowlist, which it must\n"
	    "have, and never past the operator's rules.  A user sees and\n"
	    "changes its own runs; root and the proxy's user, every run.\n"
	    "\n"
	    "--json            What the proxy answered, as it answered it.\n"
	    "--state-dir DIR   The proxy's state directory (default\n"
	    "                  $XDG_STATE_HOME/intutic, else\n"
	    "                  ~/.local/state/intutic, else /run/intutic; when\n"
	    "                  no proxy runs there, /run/intutic: the service's).\n"
	    "\n"
	    "Exit 0: done.  1: no such run, or it is another user's, or the\n"
	    "change is refused (nothing changed).  2: usage error, or an ENTRY\n"
	    "that is not one.  3: the proxy is not running.  125: the proxy\n"
	    "cannot be asked (no control socket, or a malformed answer).\n",
	.exec = cmd_runs_exec,
};

/* A count the proxy gave, or "-". */
static const char *
runs_count(long long v, char *buf, size_t len)
{
	snprintf(buf, len, v >= 0 ? "%lld" : "-", v);
	return buf;
}

static void
runs_print_list(const struct runrec *runs, size_t n)
{
	char age[32], pid[24], gen[24], req[24], den[24], bytes[24];
	size_t i;

	printf("%-24s %6s %8s %11s %4s %8s %7s %12s  %-16s %s\n", "RUN",
	    "UID", "PID", "AGE", "GEN", "REQUESTS", "DENIALS", "BYTES",
	    "COMMAND", "PROJECT");
	for (i = 0; i < n; i++) {
		const struct runrec *r = &runs[i];

		printf("%-24s %6lld %8s %11s %4s %8s %7s %12s  %-16s %s\n",
		    r->id, r->uid, runs_count(r->pid, pid, sizeof(pid)),
		    cmd_duration_text((long long)time(NULL) - r->registered,
		    age, sizeof(age)), runs_count(r->generation, gen,
		    sizeof(gen)), runs_count(r->requests, req, sizeof(req)),
		    runs_count(r->denials, den, sizeof(den)),
		    runs_count(r->bytes_up < 0 || r->bytes_down < 0 ? -1 :
		    r->bytes_up + r->bytes_down, bytes, sizeof(bytes)),
		    r->command, r->project[0] != '\0' ? r->project : "-");
	}
}

/* The entries of one kind of a run's policy, a line each. */
static void
runs_print_entries(const struct rules *set, int kind, const char *none)
{
	const char *label = kind == POLICY_DENY ? "deny:" : "allow:";
	const struct rules_entry *e;
	size_t i, n = 0;

	for (i = 0; i < rules_count(set); i++) {
		if ((e = rules_entry_at(set, i)) == NULL ||
		    (rules_entry_is_deny(e) != 0) != (kind == POLICY_DENY))
			continue;
		printf("%-13s%s (line %lu)\n", label, rules_entry_text(e),
		    rules_entry_line(e));
		n++;
	}
	if (n == 0)
		printf("%-13s%s\n", label, none);
}

/* A run's policy: its generation, then its ports and entries. */
static void
runs_print_policy(const struct runrec *r)
{
	struct rules *set;
	uint16_t ports[RULES_PORTS_MAX];
	char why[POLICY_WHY_MAX], gen[24];
	size_t i, n;

	printf("generation:  %s\n", runs_count(r->generation, gen,
	    sizeof(gen)));
	if (r->policy == NULL) {
		printf("policy:      none (the operator's rules as they are)\n");
		return;
	}
	if (policy_load(r->id, r->policy, &set, why, sizeof(why)) != 0) {
		printf("policy:      (does not load here: %s)\n", why);
		return;
	}
	printf("policy:      its own (`runs show --json` has its text)\n");
	n = rules_default_ports(set, ports);
	printf("ports:       ");
	for (i = 0; i < n; i++)
		printf("%s%u", i > 0 ? ", " : "", (unsigned int)ports[i]);
	printf("\n");
	runs_print_entries(set, POLICY_ALLOW, "- (no allowlist of its own: "
	    "what the operator's rules allow)");
	runs_print_entries(set, POLICY_DENY, "-");
	rules_free(set);
}

static void
runs_print_one(const struct runrec *r)
{
	char age[32], num[24];
	size_t i;

	printf("run:         %s\n", r->id);
	printf("uid:         %lld\n", r->uid);
	printf("pid:         %s\n", runs_count(r->pid, num, sizeof(num)));
	printf("registered:  %lld (%s ago)\n", r->registered,
	    cmd_duration_text((long long)time(NULL) - r->registered, age,
	    sizeof(age)));
	printf("command:     %s\n", r->command);
	printf("project:     %s\n", r->project[0] != '\0' ? r->project : "-");
	runs_print_policy(r);
	printf("requests:    %s\n", runs_count(r->requests, num, sizeof(num)));
	printf("denials:     %s\n", runs_count(r->denials, num, sizeof(num)));
	printf("bytes up:    %s\n", runs_count(r->bytes_up, num, sizeof(num)));
	printf("bytes down:  %s\n", runs_count(r->bytes_down, num,
	    sizeof(num)));
	for (i = 0; i < r->ndenied; i++) {
		const struct runrec_denial *d = &r->denied[i];

		printf("denied:      %s:%lld: %s%s%s%s, %s ago\n", d->host,
		    d->port, d->reason, d->rule[0] != '\0' ? " (" : "",
		    d->rule, d->rule[0] != '\0' ? ")" : "",
		    cmd_duration_text((long long)time(NULL) - d->time, age,
		    sizeof(age)));
	}
}

/*
 * What the status of an answer means for `runs WHAT`: 0 for 200; else it
 * is said, and the exit status: 1 when the proxy refused (no such run, or
 * another user's; for a change, also a bad or stale one: then nothing
 * changed), 125 otherwise.
 */
static int
runs_answered(const char *what, long status, const char *why, int change)
{
	if (status == 200)
		return 0;
	if (status == 403 || status == 404 ||
	    (change && (status == 400 || status == 409))) {
		error("runs %s: %s%s", what, why, change ? " (nothing changed)" :
		    "");
		return EXIT_FAILURE;
	}
	error("runs %s: the proxy answered %s", what, why);
	return EXIT_CANNOT_RUN;
}

/* list, show or end: one request and what to do with its answer. */
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
	if ((r = runs_answered(what, status, why, 0)) != 0)
		goto out;
	r = EXIT_CANNOT_RUN;
	if (strcmp(what, "end") == 0) {
		printf("run %s ended\n", id);
		r = EXIT_SUCCESS;
	} else if (json) {
		fputs(answer, stdout);
		r = EXIT_SUCCESS;
	} else if (runrec_parse("the proxy's answer", answer, strlen(answer),
	    id == NULL, &runs, &n, why, sizeof(why)) != 0)
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

/* What a change did to one ENTRY. */
enum runs_done {
	RUNS_ALREADY = 0,	/* nothing: denied, or allowed, already */
	RUNS_ADDED,		/* a deny entry, or one of the allowlist */
	RUNS_LIFTED,		/* allow: its deny entry removed */
};

/*
 * The entries of a change applied to the run's policy d: what became of
 * each in done[]; 0, or the exit status of a refusal (said).
 */
static int
runs_apply(struct policy_doc *d, const struct rules *ceiling, int kind,
    const char *id, char *const *entries, size_t n, enum runs_done *done)
{
	const char *what = kind == POLICY_DENY ? "deny" : "allow";
	char why[POLICY_WHY_MAX];
	size_t i;
	int k;

	for (i = 0; i < n; i++) {
		done[i] = RUNS_ALREADY;
		if (kind == POLICY_DENY) {
			if ((k = policy_doc_add(d, POLICY_DENY, entries[i])) < 0)
				goto fail;
			done[i] = k == 1 ? RUNS_ADDED : RUNS_ALREADY;
		} else if (policy_doc_remove(d, POLICY_DENY, entries[i]))
			done[i] = RUNS_LIFTED;
		else if (policy_doc_has(d, POLICY_ALLOW, entries[i]))
			done[i] = RUNS_ALREADY;
		else if (policy_doc_count(d, POLICY_ALLOW) == 0) {
			error("runs allow: run %s has no allowlist of its own: "
			    "it may reach whatever the operator's rules allow "
			    "but its deny entries, and '%s' is not one of them, "
			    "so there is nothing to allow (nothing changed)", id,
			    entries[i]);
			return EXIT_FAILURE;
		} else if (policy_entry_check(ceiling, d, POLICY_ALLOW,
		    entries[i], why, sizeof(why)) != 0) {
			error("runs allow: '%s': %s (nothing changed)",
			    entries[i], why);
			return EXIT_FAILURE;
		} else if (policy_doc_add(d, POLICY_ALLOW, entries[i]) < 0)
			goto fail;
		else
			done[i] = RUNS_ADDED;
	}
	return 0;
 fail:
	if (errno == E2BIG) {
		error("runs %s: run %s's policy would hold more than %d entries "
		    "of a kind (nothing changed)", what, id, POLICY_ENTRIES_MAX);
		return EXIT_FAILURE;
	}
	error("out of memory");
	return EXIT_CANNOT_RUN;
}

/* What was done, an ENTRY a line, at policy generation gen. */
static void
runs_print_change(int kind, const char *id, long long gen,
    char *const *entries, size_t n, const enum runs_done *done)
{
	size_t i;

	for (i = 0; i < n; i++) {
		printf("run %s: policy generation %lld: ", id, gen);
		if (done[i] == RUNS_ALREADY)
			printf("%s %s already\n", entries[i], kind ==
			    POLICY_DENY ? "denied" : "allowed");
		else if (kind == POLICY_DENY)
			printf("denied %s\n", entries[i]);
		else
			printf("allowed %s (%s)\n", entries[i], done[i] ==
			    RUNS_LIFTED ? "its deny entry removed" :
			    "on its allowlist");
	}
}

/*
 * PUT /v1/runs/ID/policy: the policy `text` (NULL: none) replaces that of
 * generation gen.  0 with the new generation in *newgen; RUNS_AGAIN on a
 * 409 when `again`; else the exit status of a failure (said).
 */
static int
runs_put(const char *sock, const char *what, const char *id, long long gen,
    const char *text, int again, long long *newgen)
{
	struct runrec *ans = NULL;
	char path[RUNREC_ID_MAX + 64], why[2048], num[24], *body, *answer = NULL;
	size_t len, used = 0, n = 0;
	long status;
	int r = EXIT_CANNOT_RUN;

	len = RUNS_PUT_FRAME + (text != NULL ? strlen(text) : 0) *
	    JSONW_ESC_MAX;
	if ((body = malloc(len)) == NULL) {
		error("out of memory");
		return EXIT_CANNOT_RUN;
	}
	body[0] = '\0';
	snprintf(num, sizeof(num), "%lld", gen);
	snprintf(path, sizeof(path), WIRE_RUNS_PATH "/%s" WIRE_RUN_POLICY_PATH,
	    id);
	if (jsonw_raw(body, len, &used, "{\"" WIRE_RUN_GENERATION "\":") != 0 ||
	    jsonw_raw(body, len, &used, num) != 0 ||
	    jsonw_raw(body, len, &used, ",\"" WIRE_RUN_POLICY "\":") != 0 ||
	    jsonw_str(body, len, &used, text) != 0 ||
	    jsonw_raw(body, len, &used, "}") != 0) {
		error("runs %s: the change does not fit (cannot be)", what);
		goto out;
	}
	if (control_request(sock, "PUT", path, body, &status, &answer, why,
	    sizeof(why)) != 0) {
		error("runs %s: cannot ask the proxy: %s", what, why);
		goto out;
	}
	if (status == 409 && again) {
		r = RUNS_AGAIN;
		goto out;
	}
	if ((r = runs_answered(what, status, why, 1)) != 0)
		goto out;
	r = EXIT_CANNOT_RUN;
	if (runrec_parse("the proxy's answer", answer, strlen(answer), 0, &ans,
	    &n, why, sizeof(why)) != 0 || ans[0].generation < 0) {
		error("runs %s: the change is made, but %s", what, n > 0 ?
		    "the answer holds no generation" : why);
		goto out;
	}
	*newgen = ans[0].generation;
	r = 0;
 out:
	runrec_free(ans, n);
	free(answer);
	free(body);
	return r;
}

/*
 * One try of allow or deny: read the run, apply the entries, put the new
 * policy.  The exit status, or RUNS_AGAIN when the run changed meanwhile
 * and `again`.
 */
static int
runs_change_once(const char *sock, const struct rules *ceiling, int kind,
    const char *id, char *const *entries, size_t n, int again)
{
	const char *what = kind == POLICY_DENY ? "deny" : "allow";
	enum runs_done done[RUNS_ENTRIES_MAX];
	struct runrec *rec = NULL;
	struct rules *set = NULL;
	struct policy_doc *d = NULL;
	char why[1024], *text = NULL;
	long long gen = -1;
	size_t i, len, changed = 0;
	long status;
	int r;

	if (policy_run(sock, id, &rec, &set, &status, why, sizeof(why)) != 0) {
		error("runs %s: %s", what, why);
		return status == 403 || status == 404 ? EXIT_FAILURE :
		    EXIT_CANNOT_RUN;
	}
	if (rec->generation < 0) {
		error("runs %s: the proxy does not say run %s's policy "
		    "generation (a proxy older than this intutic: restart it)",
		    what, id);
		r = EXIT_CANNOT_RUN;
		goto out;
	}
	/* a run without a policy has the ports of the operator's rules */
	if ((d = policy_doc_new(set != NULL ? set : ceiling)) == NULL ||
	    (set != NULL && policy_doc_add_set(d, set) != 0)) {
		error("out of memory");
		r = EXIT_CANNOT_RUN;
		goto out;
	}
	if ((r = runs_apply(d, ceiling, kind, id, entries, n, done)) != 0)
		goto out;
	for (i = 0; i < n; i++)
		changed += done[i] != RUNS_ALREADY;
	if (changed == 0) {
		runs_print_change(kind, id, rec->generation, entries, n, done);
		goto out;
	}
	/* no entry left: no policy, the operator's rules as they are */
	if ((policy_doc_count(d, POLICY_ALLOW) > 0 ||
	    policy_doc_count(d, POLICY_DENY) > 0) &&
	    policy_doc_text(d, &text, &len) != 0) {
		if (errno == EFBIG)
			error("runs %s: run %s's policy would be longer than "
			    "%d bytes, the most the proxy takes (nothing "
			    "changed)", what, id, POLICY_TEXT_MAX);
		else
			error("out of memory");
		r = errno == EFBIG ? EXIT_FAILURE : EXIT_CANNOT_RUN;
		goto out;
	}
	if ((r = runs_put(sock, what, id, rec->generation, text, again,
	    &gen)) == 0)
		runs_print_change(kind, id, gen, entries, n, done);
 out:
	free(text);
	policy_doc_free(d);
	rules_free(set);
	runrec_free(rec, 1);
	return r;
}

/* allow or deny RUN ENTRY...: the exit status. */
static int
runs_change(const char *sock, int kind, const char *id, char *const *entries,
    size_t n)
{
	const char *what = kind == POLICY_DENY ? "deny" : "allow";
	struct rules *ceiling = NULL;
	char why[POLICY_WHY_MAX];
	long status;
	size_t i;
	int r;

	for (i = 0; i < n; i++)
		if (policy_entry_check(NULL, NULL, kind, entries[i], why,
		    sizeof(why)) != 0) {
			error("runs %s: '%s': %s", what, entries[i], why);
			return EXIT_USAGE;
		}
	if (policy_ceiling(sock, &ceiling, &status, why, sizeof(why)) != 0) {
		error("runs %s: cannot read the operator's rules from the "
		    "proxy: %s", what, why);
		return EXIT_CANNOT_RUN;
	}
	/* the run changed between our read and our change: once more */
	if ((r = runs_change_once(sock, ceiling, kind, id, entries, n, 1)) ==
	    RUNS_AGAIN)
		r = runs_change_once(sock, ceiling, kind, id, entries, n, 0);
	rules_free(ceiling);
	if (r == 0 && fflush(stdout) != 0)
		r = EXIT_FAILURE;
	return r;
}

static int
cmd_runs_exec(int argc, char **argv)
{
	struct proxy_loc loc;
	const char *opt_dir = NULL, *what = "list", *id = NULL;
	char err[PATH_MAX + 256], *entries[RUNS_ENTRIES_MAX];
	size_t nentries = 0;
	int i = 1, r, json = 0, change = 0;

	if (i < argc && argv[i][0] != '-') {
		what = argv[i++];
		change = strcmp(what, "allow") == 0 || strcmp(what, "deny") == 0;
		if (strcmp(what, "show") == 0 || strcmp(what, "end") == 0 ||
		    change) {
			if (i == argc || argv[i][0] == '-')
				return cmd_usage_error(&cmd_runs_entry, "runs "
				    "%s: which RUN?", what);
			id = argv[i++];
			if (strlen(id) >= RUNREC_ID_MAX)
				return cmd_usage_error(&cmd_runs_entry, "runs "
				    "%s: '%.64s...' is no run id", what, id);
		} else if (strcmp(what, "list") != 0)
			return cmd_usage_error(&cmd_runs_entry, "runs: unknown "
			    "argument '%s' (list, show RUN, end RUN, allow RUN "
			    "ENTRY... or deny RUN ENTRY...)", what);
	}
	for (; i < argc; i++) {
		if (change && argv[i][0] != '-') {
			if (nentries == RUNS_ENTRIES_MAX)
				return cmd_usage_error(&cmd_runs_entry, "runs "
				    "%s: more than %d ENTRY", what,
				    RUNS_ENTRIES_MAX);
			entries[nentries++] = argv[i];
			continue;
		}
		if (strcmp(argv[i], "--json") == 0 &&
		    strcmp(what, "end") != 0 && !change) {
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
	if (change && nentries == 0)
		return cmd_usage_error(&cmd_runs_entry, "runs %s: which ENTRY? "
		    "(an entry of the rule language, intutic-rules(5))", what);
	if ((r = control_find(opt_dir, &loc, err, sizeof(err))) != 0) {
		error("runs: %s", err);
		return r;
	}
	if (change)
		return runs_change(loc.control, strcmp(what, "deny") == 0 ?
		    POLICY_DENY : POLICY_ALLOW, id, entries, nentries);
	return runs_ask(loc.control, what, id, json);
}
