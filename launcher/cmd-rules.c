/*
 * cmd-rules.c — `intutic rules check` and `intutic rules test`.
 */
#include "config.h"

#include <sys/socket.h>

#include <stdio.h>
#include <string.h>

#include "rules.h"
#include "intutic.h"

static int	cmd_rules_exec(int, char **);

const struct cmd_entry cmd_rules_entry = {
	.name = "rules",
	.summary = "check rule files, or test what they decide for a host",
	.help =
	    "usage: intutic rules check [FILE...]\n"
	    "       intutic rules test FILE HOST[:PORT] [ADDRESS...]\n"
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
	    "\n"
	    "Exit 2: usage error, or (test) FILE does not load.\n",
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

static int
rules_test(int argc, char **argv)
{
	struct rules *r;
	struct rules_host host;
	struct rules_addr addrs[RULES_PICK_MAX], lit;
	struct rules_decision d;
	struct rules_pick pick;
	char cbuf[64], dialled[RULES_ADDR_TEXT_MAX] = "";
	uint16_t port;
	size_t naddrs, i, k;
	int err, picked = 0;

	if (argc < 2)
		return cmd_usage_error(&cmd_rules_entry,
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
	if (load(argv[0], &r) != 0)
		return EXIT_USAGE;

	printf("host:     %s\n", argv[1]);
	if ((err = rules_hostport_parse(argv[1], &host, &port, 443)) != 0) {
		printf("decision: deny\n");
		printf("reason:   %s (%s)\n",
		    rules_reason_str(RULES_REASON_INVALID_HOST),
		    rules_strerror(err));
		rules_free(r);
		return 1;
	}
	rules_decide(r, &host, port, &d);
	if (host.kind != RULES_HOST_NAME) {
		/* An IP literal is the one address the proxy would dial. */
		memset(&lit, 0, sizeof(lit));
		lit.family = host.kind == RULES_HOST_IPV4 ? AF_INET : AF_INET6;
		if (host.kind == RULES_HOST_IPV4)
			lit.v4 = host.v4;
		else
			lit.v6 = host.v6;
		rules_pick_addr(r, &lit, NULL, 1, port, &pick);
		if (d.verdict == RULES_ALLOW && pick.picked == pick.n)
			d = pick.d;
	} else if (naddrs > 0 && (d.verdict == RULES_ALLOW ||
	    rules_mode(r) == RULES_MODE_REPORT)) {
		/*
		 * The proxy resolves an allowed name, and in report mode a
		 * denied one too; a name it denied keeps that reason.
		 */
		rules_pick_addr(r, addrs, NULL, naddrs, port, &pick);
		picked = 1;
		if (d.verdict == RULES_ALLOW && pick.picked == pick.n)
			d = pick.d;
		if (pick.dial != pick.n)
			rules_addr_text(&addrs[pick.dial], dialled,
			    sizeof(dialled));
	}
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
	rules_free(r);
	return d.verdict == RULES_ALLOW ? 0 : 1;
}

/*
 * Refuses options (these subcommands take none but --help, which main()
 * handles) and removes the first "--", after which every word is an
 * operand.  Returns the new argc, or -1 after a usage error.
 */
static int
operands(int argc, char **argv)
{
	int i;

	for (i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			memmove(&argv[i], &argv[i + 1],
			    (size_t)(argc - i) * sizeof(*argv));
			return argc - 1;
		}
		if (argv[i][0] == '-' && argv[i][1] != '\0') {
			cmd_usage_error(&cmd_rules_entry,
			    "rules: unknown option '%s'", argv[i]);
			return -1;
		}
	}
	return argc;
}

static int
cmd_rules_exec(int argc, char **argv)
{
	int n = 0;

	if (argc >= 2 && (n = operands(argc - 2, argv + 2)) < 0)
		return EXIT_USAGE;
	argc = argc >= 2 ? n + 2 : argc;
	if (argc < 2)
		return cmd_usage_error(&cmd_rules_entry,
		    "rules: expected 'check' or 'test'");
	if (strcmp(argv[1], "check") == 0)
		return rules_check(argc - 2, argv + 2);
	if (strcmp(argv[1], "test") == 0)
		return rules_test(argc - 2, argv + 2);
	return cmd_usage_error(&cmd_rules_entry, "rules: unknown subcommand "
	    "'%s' (expected 'check' or 'test')", argv[1]);
}
