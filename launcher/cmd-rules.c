/*
 * cmd-rules.c — `intutic rules check`, `intutic rules test` and `intutic
 * rules fetch` (the workspace API's rules into a file, settings.h).  test
 * decides with the functions the proxy decides with: a rule file's rules,
 * or (--run) the operator's rules the proxy holds and a run's policy, read
 * on its control socket (policy.h).
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control.h"
#include "intutic.h"
#include "jsonw.h"
#include "locate.h"
#include "log.h"
#include "policy.h"
#include "rules.h"
#include "runrec.h"
#include "settings.h"

static int	cmd_rules_exec(int, char **);

const struct cmd_entry cmd_rules_entry = {
	.name = "rules",
	.summary = "check rule files, or test what they decide for a host",
	.help =
	    "usage: intutic rules check [FILE...]\n"
	    "       intutic rules test [--json] FILE HOST[:PORT] [ADDRESS...]\n"
	    "       intutic rules test [--json] --run RUN [--state-dir DIR]\n"
	    "                          HOST[:PORT] [ADDRESS...]\n"
	    "       intutic rules fetch --out FILE\n"
	    "\n"
	    "check  Loads each FILE with everything it includes and reports the\n"
	    "       first error in each as FILE:LINE:COL: MESSAGE (FILE: MESSAGE\n"
	    "       for a file that cannot be read).  Without FILE, checks the\n"
	    "       rule file intutic start would use.  Exit 0 when all are valid,\n"
	    "       1 when one is not.\n"
	    "test   Decides HOST (a name, a dotted-quad IPv4 address, or an IPv6\n"
	    "       address in brackets) at PORT (default 443) with the rules of\n"
	    "       FILE, and prints the decision, its reason and the deciding entry\n"
	    "       as FILE:LINE.  Each ADDRESS (IPv4, or IPv6 with or without\n"
	    "       brackets; at most 32) is taken as an address the name HOST\n"
	    "       resolved to, and the addresses are picked from as the proxy\n"
	    "       does: IPv4 ones first, then IPv6 ones, each in the order given,\n"
	    "       the first one allowed is dialled (dial: ADDRESS) and the ones\n"
	    "       after it are not checked; the name is denied only when none is\n"
	    "       allowed, and each refused address says why.  Exit 0 when the\n"
	    "       proxy would allow the connection, 1 when it would deny it.\n"
	    "       With --run RUN, decides as the proxy decides for the run RUN:\n"
	    "       by the operator's rules the proxy holds, then RUN's policy\n"
	    "       (whose entries are named \"run RUN's policy:LINE\"), both read\n"
	    "       on the proxy's control socket (in DIR, its state directory).\n"
	    "       With --json, the same as one JSON object (intutic(1),\n"
	    "       RULES TEST AS JSON).\n"
	    "fetch  Writes the workspace API's rules (INTUTIC_API_URL, as for the\n"
	    "       level) to FILE once they load, FILE:LINE:COL of the API's\n"
	    "       text otherwise, FILE untouched; asks with the ETag it kept\n"
	    "       in FILE, and a 304 leaves FILE as it is.  Exit 0 when FILE\n"
	    "       holds the API's rules, 1 when the API gave no usable answer.\n"
	    "\n"
	    "Exit 2: usage error, or (test) FILE does not load, or no run RUN\n"
	    "that this user may see, or (fetch) the API's rules do not load or\n"
	    "no API is configured.  3: (--run) the proxy is not running.\n"
	    "125: (--run) the proxy cannot be asked.\n",
	.exec = cmd_rules_exec,
};

static int
load(const char *path, struct rules **out)
{
	struct rules_error err;
	char buf[RULES_PATH_MAX + RULES_ERROR_MAX + 64];

	if (rules_load(path, out, &err) == 0)
		return 0;
	fprintf(stderr, "%s\n", rules_error_str(&err, buf, sizeof(buf)));
	return -1;
}

static int
rules_check(int argc, char **argv)
{
	struct rules *r;
	char path[RULES_PATH_MAX], *one[1];
	int i, bad = 0;

	if (argc == 0) {
		one[0] = path;
		config_rules_path(NULL, path, sizeof(path));
		argv = one;
		argc = 1;
	}
	for (i = 0; i < argc; i++) {
		if (load(argv[i], &r) != 0) {
			bad = 1;
			continue;
		}
		printf("%s: ok (%zu %s, %zu %s, mode %s)\n", argv[i],
		    rules_count(r), rules_count(r) == 1 ? "entry" : "entries",
		    rules_provider_count(r),
		    rules_provider_count(r) == 1 ? "provider" : "providers",
		    rules_mode(r) == RULES_MODE_REPORT ? "report" : "enforce");
		rules_free(r);
	}
	return bad;
}

static void
print_entry(const char *label, const struct rules_entry *e)
{
	char where[RULES_WHERE_MAX];

	if (e == NULL) {
		printf("%s-\n", label);
		return;
	}
	printf("%s%s (%s %s)\n", label, rules_entry_where(e, where,
	    sizeof(where)), rules_entry_is_deny(e) ? "deny" : "allow",
	    rules_entry_text(e));
}

/* An ADDRESS operand: IPv4, or IPv6 with or without brackets. */
static int
parse_address(const char *s, struct rules_addr *a)
{
	char buf[64];
	size_t len = strlen(s);

	if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
		if (len - 2 >= sizeof(buf))
			return RULES_ERR_IPV6_FORM;
		memcpy(buf, s + 1, len - 2);
		buf[len - 2] = '\0';
		return rules_addr_parse(buf, a);
	}
	return rules_addr_parse(s, a);
}

/* "private", or "private via ipv4-mapped" for embedded IPv4. */
static const char *
class_text(const struct rules_addr *a, char *buf, size_t len)
{
	const char *embedded, *class = rules_addr_class(a, &embedded);

	if (embedded == NULL)
		return class;
	snprintf(buf, len, "%s via %s", class, embedded);
	return buf;
}

/*
 * One "address:" line: ADDRESS as given, its class, and what the pick did
 * with it: its check (with the entry that decided it, a deny block or the
 * allow block that lets an internal address through), or why it was not
 * checked.
 */
static void
print_address(const char *given, const struct rules_addr *a,
    const struct rules_pick *p, size_t i, const char *dialled)
{
	const struct rules_decision *d = &p->check[i];
	char cbuf[64], where[RULES_WHERE_MAX];

	printf("address:  %s %s", given, class_text(a, cbuf, sizeof(cbuf)));
	switch (p->state[i]) {
	case RULES_PICK_PICKED:
	case RULES_PICK_REFUSED:
		printf(": %s %s", d->verdict == RULES_ALLOW ? "allow" : "deny",
		    rules_reason_str(d->reason));
		if (d->entry != NULL)
			printf(" by %s (%s %s)", rules_entry_where(d->entry,
			    where, sizeof(where)), rules_entry_is_deny(d->entry) ?
			    "deny" : "allow", rules_entry_text(d->entry));
		printf("\n");
		break;
	case RULES_PICK_UNCHECKED:
		printf(" (not checked: the proxy dials %s)\n", dialled);
		break;
	case RULES_PICK_SKIPPED:
		printf(" (not checked: skipped)\n");
		break;
	}
}

/* ",\"KEY\":" and s quoted, or null. */
static void
json_member(const char *key, const char *s)
{
	printf(",\"%s\":", key);
	jsonw_fstr(stdout, s);
}

/* An entry as JSON: {"where", "kind", "entry"}, or null. */
static void
json_entry(const char *key, const struct rules_entry *e)
{
	char where[RULES_WHERE_MAX];

	printf(",\"%s\":", key);
	if (e == NULL) {
		printf("null");
		return;
	}
	printf("{\"where\":");
	jsonw_fstr(stdout, rules_entry_where(e, where, sizeof(where)));
	json_member("kind", rules_entry_is_deny(e) ? "deny" : "allow");
	json_member("entry", rules_entry_text(e));
	putchar('}');
}

/* An address's class as JSON: ,"class":CLASS,"via":FORM|null. */
static void
json_class(const struct rules_addr *a)
{
	const char *embedded, *class = rules_addr_class(a, &embedded);

	json_member("class", class);
	json_member("via", embedded);
}

/*
 * One member of "addresses": ADDRESS as given, its class, and what the
 * pick did with it, as print_address() says it; "not_checked" says why
 * an address was not (why, a constant, when pick is NULL).
 */
static void
json_address(const char *given, const struct rules_addr *a,
    const struct rules_pick *p, size_t i, const char *dialled,
    const char *why)
{
	const struct rules_decision *d = p != NULL ? &p->check[i] : NULL;
	char dials[RULES_ADDR_TEXT_MAX + 32];
	int checked = p != NULL && (p->state[i] == RULES_PICK_PICKED ||
	    p->state[i] == RULES_PICK_REFUSED);

	printf("{\"address\":");
	jsonw_fstr(stdout, given);
	json_class(a);
	printf(",\"checked\":%s", checked ? "true" : "false");
	json_member("decision", !checked ? NULL :
	    d->verdict == RULES_ALLOW ? "allow" : "deny");
	json_member("reason", checked ? rules_reason_str(d->reason) : NULL);
	json_entry("rule", checked ? d->entry : NULL);
	if (p != NULL && p->state[i] == RULES_PICK_UNCHECKED) {
		snprintf(dials, sizeof(dials), "the proxy dials %s", dialled);
		why = dials;
	} else if (p != NULL && p->state[i] == RULES_PICK_SKIPPED)
		why = "skipped";
	json_member("not_checked", checked ? NULL : why);
	putchar('}');
}

/*
 * The rules to decide with for `rules test --run RUN`: the operator's as
 * the proxy holds them (*r) and RUN's policy (*policy, NULL: none).  0, or
 * the exit status of a failure (said).
 */
static int
test_run_rules(const char *id, const char *dir, struct rules **r,
    struct rules **policy)
{
	struct proxy_loc loc;
	struct runrec *rec = NULL;
	char why[PATH_MAX + 256];
	long status;
	int ret;

	*r = *policy = NULL;
	if ((ret = control_find(dir, &loc, why, sizeof(why))) != 0) {
		error("rules test: %s", why);
		return ret;
	}
	if (policy_ceiling(loc.control, r, &status, why, sizeof(why)) != 0) {
		error("rules test: cannot read the operator's rules from the "
		    "proxy: %s", why);
		return EXIT_CANNOT_RUN;
	}
	if (policy_run(loc.control, id, &rec, policy, &status, why,
	    sizeof(why)) != 0) {
		error("rules test: %s", why);
		rules_free(*r);
		*r = NULL;
		return status == 403 || status == 404 ? EXIT_USAGE :
		    EXIT_CANNOT_RUN;
	}
	runrec_free(rec, 1);
	return 0;
}

/*
 * rules test --json: {"host", "run", "as", "decision", "reason", "error",
 * "rule", "class", "via", "dial", "mode", "addresses": [...]}, what the
 * lines say (intutic(1), RULES TEST AS JSON).  argv[2..] are the naddrs
 * ADDRESS operands, parsed in addrs; pick is NULL when they were not
 * picked from.
 */
static void
rules_test_json(char **argv, size_t naddrs, const struct rules_addr *addrs,
    const char *run, const struct rules *r, const struct rules_host *host,
    uint16_t port, const struct rules_decision *d,
    const struct rules_addr *lit, const struct rules_pick *pick,
    const char *dialled)
{
	char as[RULES_HOST_TEXT_MAX + 16];
	size_t i, k;

	printf("{\"host\":");
	jsonw_fstr(stdout, argv[1]);
	json_member("run", run);
	snprintf(as, sizeof(as), "%s:%u", host->text, port);
	json_member("as", as);
	json_member("decision", d->verdict == RULES_ALLOW ? "allow" : "deny");
	json_member("reason", rules_reason_str(d->reason));
	json_member("error", NULL);
	json_entry("rule", d->entry);
	if (host->kind != RULES_HOST_NAME)
		json_class(lit);
	else {
		json_member("class", NULL);
		json_member("via", NULL);
	}
	json_member("dial", pick != NULL && pick->dial != pick->n ? dialled :
	    NULL);
	json_member("mode", rules_mode(r) == RULES_MODE_REPORT ? "report" :
	    "enforce");
	printf(",\"addresses\":[");
	for (k = 0; k < naddrs; k++) {
		if (k > 0)
			putchar(',');
		if (pick != NULL) {
			i = pick->order[k];
			json_address(argv[i + 2], &addrs[i], pick, i, dialled,
			    NULL);
		} else
			json_address(argv[k + 2], &addrs[k], NULL, k, dialled,
			    host->kind != RULES_HOST_NAME ?
			    "the host is an address" : "the host is denied");
	}
	printf("]}\n");
}

/*
 * test: argv is FILE HOST[:PORT] [ADDRESS...]; with `run` (--run RUN) there
 * is no FILE, and argv[0] is not looked at.
 */
static int
rules_test(int argc, char **argv, const char *run, const char *dir, int json)
{
	struct rules *r, *policy = NULL;
	struct rules_host host;
	struct rules_addr addrs[RULES_PICK_MAX], lit;
	struct rules_decision d;
	struct rules_pick pick;
	char cbuf[64], dialled[RULES_ADDR_TEXT_MAX] = "";
	uint16_t port;
	size_t naddrs, i, k;
	int err, picked = 0;

	if (argc < 2)
		return cmd_usage_error(&cmd_rules_entry, run != NULL ?
		    "rules test: expected HOST[:PORT]" :
		    "rules test: expected FILE and HOST[:PORT]");
	/* Every argument is checked before anything is decided. */
	naddrs = (size_t)argc - 2;
	if (naddrs > RULES_PICK_MAX)
		return cmd_usage_error(&cmd_rules_entry,
		    "rules test: %zu addresses: give at most %d (the proxy "
		    "looks at that many addresses of a name)", naddrs,
		    RULES_PICK_MAX);
	for (i = 0; i < naddrs; i++)
		if ((err = parse_address(argv[i + 2], &addrs[i])) != RULES_OK)
			return cmd_usage_error(&cmd_rules_entry,
			    "rules test: address '%s': %s", argv[i + 2],
			    rules_strerror(err));
	if (run != NULL && (err = test_run_rules(run, dir, &r, &policy)) != 0)
		return err;
	if (run == NULL && load(argv[0], &r) != 0)
		return EXIT_USAGE;

	if ((err = rules_hostport_parse(argv[1], &host, &port, 443)) != 0) {
		if (json) {
			printf("{\"host\":");
			jsonw_fstr(stdout, argv[1]);
			json_member("run", run);
			json_member("as", NULL);
			json_member("decision", "deny");
			json_member("reason",
			    rules_reason_str(RULES_REASON_INVALID_HOST));
			json_member("error", rules_strerror(err));
			json_entry("rule", NULL);
			json_member("class", NULL);
			json_member("via", NULL);
			json_member("dial", NULL);
			json_member("mode", rules_mode(r) == RULES_MODE_REPORT ?
			    "report" : "enforce");
			printf(",\"addresses\":[]}\n");
		} else {
			printf("host:     %s\n", argv[1]);
			printf("decision: deny\n");
			printf("reason:   %s (%s)\n",
			    rules_reason_str(RULES_REASON_INVALID_HOST),
			    rules_strerror(err));
		}
		rules_free(policy);
		rules_free(r);
		return 1;
	}
	/* the functions the proxy calls; without a policy, the rules alone */
	rules_decide_within(r, policy, &host, port, &d);
	if (host.kind != RULES_HOST_NAME) {
		/* An IP literal is the one address the proxy would dial. */
		memset(&lit, 0, sizeof(lit));
		lit.family = host.kind == RULES_HOST_IPV4 ? AF_INET : AF_INET6;
		if (host.kind == RULES_HOST_IPV4)
			lit.v4 = host.v4;
		else
			lit.v6 = host.v6;
		rules_pick_addr_within(r, policy, &lit, NULL, 1, port, &pick);
		if (d.verdict == RULES_ALLOW && pick.picked == pick.n)
			d = pick.d;
	} else if (naddrs > 0 && (d.verdict == RULES_ALLOW ||
	    rules_mode(r) == RULES_MODE_REPORT)) {
		/*
		 * The proxy resolves an allowed name, and in report mode a
		 * denied one too; a name it denied keeps that reason.
		 */
		rules_pick_addr_within(r, policy, addrs, NULL, naddrs, port,
		    &pick);
		picked = 1;
		if (d.verdict == RULES_ALLOW && pick.picked == pick.n)
			d = pick.d;
		if (pick.dial != pick.n)
			rules_addr_text(&addrs[pick.dial], dialled,
			    sizeof(dialled));
	}
	if (json) {
		rules_test_json(argv, naddrs, addrs, run, r, &host, port, &d,
		    &lit, picked ? &pick : NULL, dialled);
		rules_free(policy);
		rules_free(r);
		return d.verdict == RULES_ALLOW ? 0 : 1;
	}
	printf("host:     %s\n", argv[1]);
	printf("as:       %s:%u\n", host.text, port);
	printf("decision: %s\n", d.verdict == RULES_ALLOW ? "allow" : "deny");
	printf("reason:   %s\n", rules_reason_str(d.reason));
	print_entry("rule:     ", d.entry);
	if (host.kind != RULES_HOST_NAME)
		printf("class:    %s\n", class_text(&lit, cbuf, sizeof(cbuf)));
	if (picked && pick.dial != pick.n)
		printf("dial:     %s\n", dialled);
	if (d.verdict != RULES_ALLOW && rules_mode(r) == RULES_MODE_REPORT)
		printf("mode:     report (the proxy would log this denial "
		    "and let the connection through)\n");

	for (k = 0; k < naddrs; k++) {
		if (picked) {
			i = pick.order[k];
			print_address(argv[i + 2], &addrs[i], &pick, i,
			    dialled);
			continue;
		}
		printf("address:  %s %s", argv[k + 2],
		    class_text(&addrs[k], cbuf, sizeof(cbuf)));
		if (host.kind != RULES_HOST_NAME)
			/* The proxy never resolves an IP literal. */
			printf(" (not checked: the host is an address)\n");
		else
			/* The proxy never resolves a name it denied. */
			printf(" (not checked: the host is denied)\n");
	}
	rules_free(policy);
	rules_free(r);
	return d.verdict == RULES_ALLOW ? 0 : 1;
}

/*
 * Takes the options out of argv, up to the first "--", which goes too and
 * after which every word is an operand: test's --run RUN, --state-dir DIR
 * and --json (into *run, *dir and *json, when they are not NULL); any
 * other is refused (--help main() handles).  Returns the new argc, or -1
 * after a usage error.
 */
static int
operands(int argc, char **argv, const char **run, const char **dir,
    int *json)
{
	int i, j = 0, k;

	for (i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			for (i++; i < argc; i++)
				argv[j++] = argv[i];
			break;
		}
		if (argv[i][0] != '-' || argv[i][1] == '\0') {
			argv[j++] = argv[i];
			continue;
		}
		if (strcmp(argv[i], "--json") == 0) {
			if (json == NULL) {
				cmd_usage_error(&cmd_rules_entry, "rules: "
				    "--json goes with 'rules test' only");
				return -1;
			}
			*json = 1;
			continue;
		}
		if (run != NULL && (k = cmd_option(&cmd_rules_entry, argc, argv,
		    &i, "run", "RUN", run)) != 0) {
			if (k < 0)
				return -1;
			continue;
		}
		if (dir != NULL && (k = cmd_option(&cmd_rules_entry, argc, argv,
		    &i, "state-dir", "DIR", dir)) != 0) {
			if (k < 0)
				return -1;
			continue;
		}
		cmd_usage_error(&cmd_rules_entry, "rules: unknown option '%s'",
		    argv[i]);
		return -1;
	}
	argv[j] = NULL;
	return j;
}

/* ------------------------------------------------------------ fetch */

/* The last line of what fetch writes: the API's tag, and where from. */
#define FETCH_MARK	"# intutic rules fetch: "

/*
 * The entity tag FILE's last line keeps for url, into tag (len bytes);
 * "" when FILE is missing or says none for that URL.
 */
static void
fetch_kept_tag(const char *file, const char *url, char *tag, size_t len)
{
	char buf[4096], *nl, *line, *from;
	ssize_t n;
	off_t size;
	int fd;

	tag[0] = '\0';
	if ((fd = open(file, O_RDONLY | O_CLOEXEC)) == -1)
		return;
	size = lseek(fd, 0, SEEK_END);
	if (size > 0 && lseek(fd, size > (off_t)sizeof(buf) - 1 ?
	    size - (off_t)sizeof(buf) + 1 : 0, SEEK_SET) != -1 &&
	    (n = read(fd, buf, sizeof(buf) - 1)) > 0) {
		buf[n] = '\0';
		if (n > 0 && buf[n - 1] == '\n')
			buf[n - 1] = '\0';
		line = (nl = strrchr(buf, '\n')) != NULL ? nl + 1 : buf;
		/* FETCH_MARK TAG from URL */
		if (strncmp(line, FETCH_MARK, strlen(FETCH_MARK)) == 0 &&
		    (from = strstr(line, " from ")) != NULL &&
		    strcmp(from + 6, url) == 0) {
			line += strlen(FETCH_MARK);
			if ((size_t)(from - line) < len && from > line &&
			    line[0] == '"' && from[-1] == '"') {
				memcpy(tag, line, (size_t)(from - line));
				tag[from - line] = '\0';
			}
		}
	}
	close(fd);
}

static int
rules_fetch(int argc, char **argv)
{
	struct rules *r = NULL;
	struct rules_error rerr;
	char url[SETTINGS_URL_MAX + sizeof(SETTINGS_RULES_PATH)];
	char kept[SETTINGS_ETAG_MAX], tag[SETTINGS_ETAG_MAX];
	char err[512], tmp[PATH_MAX], mark[SETTINGS_ETAG_MAX +
	    sizeof(url) + 64];
	const char *out = NULL;
	char *body = NULL;
	size_t len;
	int i, k, fd = -1, rc;

	for (i = 0; i < argc; i++) {
		if ((k = cmd_option(&cmd_rules_entry, argc, argv, &i, "out",
		    "FILE", &out)) < 0)
			return EXIT_USAGE;
		if (k == 0)
			return cmd_usage_error(&cmd_rules_entry, "rules fetch: "
			    "unknown argument '%s'", argv[i]);
	}
	if (out == NULL)
		return cmd_usage_error(&cmd_rules_entry, "rules fetch: --out "
		    "FILE says where the rules go");
	if (settings_rules_url(url, sizeof(url), err, sizeof(err)) != 0) {
		error("rules fetch: %s", err);
		return EXIT_USAGE;
	}
	fetch_kept_tag(out, url, kept, sizeof(kept));
	rc = settings_rules_fetch(url, kept[0] != '\0' ? kept : NULL, &body,
	    &len, tag, sizeof(tag), err, sizeof(err));
	if (rc == -1) {
		error("rules fetch: %s gave no rules (%s): %s is unchanged",
		    url, err, out);
		return 1;
	}
	if (rc == 1) {
		printf("%s: not modified at %s (ETag %s)\n", out, url, kept);
		return 0;
	}
	if (memchr(body, '\0', len) != NULL) {
		error("rules fetch: %s answered a NUL byte: %s is unchanged",
		    url, out);
		free(body);
		return EXIT_USAGE;
	}
	if (snprintf(tmp, sizeof(tmp), "%s.fetch.XXXXXX", out) >=
	    (int)sizeof(tmp) || (fd = mkostemp(tmp, O_CLOEXEC)) == -1) {
		error("rules fetch: cannot write next to %s: %s", out,
		    strerror(errno));
		free(body);
		return 1;
	}
	snprintf(mark, sizeof(mark), "%s" FETCH_MARK "%s from %s\n",
	    len > 0 && body[len - 1] != '\n' ? "\n" : "",
	    tag[0] != '\0' ? tag : "-", url);
	if (fchmod(fd, 0644) == -1 || settings_write_all(fd, body, len) != 0 ||
	    settings_write_all(fd, mark, strlen(mark)) != 0 || fsync(fd) != 0) {
		error("rules fetch: cannot write %s: %s", tmp, strerror(errno));
		goto fail;
	}
	close(fd);
	fd = -1;
	/* what the proxy would load: the API's text, its includes beside FILE */
	if (rules_load(tmp, &r, &rerr) != 0) {
		if (strcmp(rerr.file, tmp) == 0)
			fprintf(stderr, "%s:%lu:%lu: %s\n", url, rerr.line,
			    rerr.col, rerr.msg);
		else {
			char buf[RULES_PATH_MAX + RULES_ERROR_MAX + 64];

			fprintf(stderr, "%s\n", rules_error_str(&rerr, buf,
			    sizeof(buf)));
		}
		error("rules fetch: the rules from %s do not load: %s is "
		    "unchanged", url, out);
		unlink(tmp);
		free(body);
		return EXIT_USAGE;
	}
	if (rename(tmp, out) != 0) {
		error("rules fetch: cannot replace %s: %s", out,
		    strerror(errno));
		goto fail;
	}
	printf("%s: %zu entries from %s (ETag %s)\n", out, rules_count(r),
	    url, tag[0] != '\0' ? tag : "none");
	rules_free(r);
	free(body);
	return 0;
 fail:
	if (fd != -1)
		close(fd);
	unlink(tmp);
	rules_free(r);
	free(body);
	return 1;
}

static int
cmd_rules_exec(int argc, char **argv)
{
	const char *run = NULL, *dir = NULL;
	int n = 0, json = 0, test = argc >= 2 && strcmp(argv[1], "test") == 0;

	if (argc >= 2 && strcmp(argv[1], "fetch") == 0)
		return rules_fetch(argc - 2, argv + 2);
	if (argc >= 2 && (n = operands(argc - 2, argv + 2, test ? &run : NULL,
	    test ? &dir : NULL, test ? &json : NULL)) < 0)
		return EXIT_USAGE;
	argc = argc >= 2 ? n + 2 : argc;
	if (argc < 2)
		return cmd_usage_error(&cmd_rules_entry,
		    "rules: expected 'check', 'test' or 'fetch'");
	if (strcmp(argv[1], "check") == 0)
		return rules_check(argc - 2, argv + 2);
	if (dir != NULL && run == NULL)
		return cmd_usage_error(&cmd_rules_entry,
		    "rules test: --state-dir goes with --run");
	if (run != NULL && strlen(run) >= RUNREC_ID_MAX)
		return cmd_usage_error(&cmd_rules_entry,
		    "rules test: --run '%.64s...' is no run id", run);
	/* with --run, there is no FILE: the operands start one earlier */
	if (test && run != NULL)
		return rules_test(argc - 1, argv + 1, run, dir, json);
	if (test)
		return rules_test(argc - 2, argv + 2, NULL, NULL, json);
	return cmd_usage_error(&cmd_rules_entry, "rules: unknown subcommand "
	    "'%s' (expected 'check', 'test' or 'fetch')", argv[1]);
}
