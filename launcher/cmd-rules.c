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
	    "       brackets) is taken as an address HOST resolved to: its class is\n"
	    "       printed and, when HOST is allowed, it is checked as the proxy\n"
	    "       checks the addresses it dials.  Exit 0 when HOST and every\n"
	    "       ADDRESS are allowed, 1 when anything is denied.\n"
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

static int
rules_test(int argc, char **argv)
{
	struct rules *r;
	struct rules_host host;
	struct rules_addr addr;
	struct rules_decision d, ad;
	char cbuf[64];
	uint16_t port;
	int i, err, name_ok;

	if (argc < 2)
		return cmd_usage_error(&cmd_rules_entry,
		    "rules test: expected FILE and HOST[:PORT]");
	/* Every argument is checked before anything is decided. */
	for (i = 2; i < argc; i++)
		if ((err = parse_address(argv[i], &addr)) != RULES_OK)
			return cmd_usage_error(&cmd_rules_entry,
			    "rules test: address '%s': %s", argv[i],
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
	name_ok = d.verdict == RULES_ALLOW;
	if (host.kind != RULES_HOST_NAME) {
		/* An IP literal is also the address the proxy would dial. */
		memset(&addr, 0, sizeof(addr));
		addr.family = host.kind == RULES_HOST_IPV4 ? AF_INET : AF_INET6;
		if (host.kind == RULES_HOST_IPV4)
			addr.v4 = host.v4;
		else
			addr.v6 = host.v6;
		if (d.verdict == RULES_ALLOW) {
			rules_check_addr(r, &addr, port, &ad);
			if (ad.verdict != RULES_ALLOW)
				d = ad;
		}
	}
	/* A name is allowed only when every address it resolved to is. */
	for (i = 2; i < argc && d.verdict == RULES_ALLOW; i++) {
		parse_address(argv[i], &addr);
		rules_check_addr(r, &addr, port, &ad);
		if (ad.verdict != RULES_ALLOW)
			d = ad;
	}
	printf("as:       %s:%u\n", host.text, port);
	printf("decision: %s\n", d.verdict == RULES_ALLOW ? "allow" : "deny");
	printf("reason:   %s\n", rules_reason_str(d.reason));
	print_entry("rule:     ", d.entry);
	if (host.kind != RULES_HOST_NAME)
		printf("class:    %s\n", class_text(&addr, cbuf, sizeof(cbuf)));
	if (d.verdict != RULES_ALLOW && rules_mode(r) == RULES_MODE_REPORT)
		printf("mode:     report (the proxy would log this denial "
		    "and let the connection through)\n");

	for (i = 2; i < argc; i++) {
		parse_address(argv[i], &addr);
		printf("address:  %s %s", argv[i],
		    class_text(&addr, cbuf, sizeof(cbuf)));
		if (!name_ok) {
			/* The proxy never resolves a name it denied. */
			printf(" (not checked: the host is denied)\n");
			continue;
		}
		rules_check_addr(r, &addr, port, &ad);
		printf(": %s %s\n", ad.verdict == RULES_ALLOW ? "allow" : "deny",
		    rules_reason_str(ad.reason));
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
