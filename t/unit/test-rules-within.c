/*
 * test-rules-within.c — rules_decide_within(), rules_check_addr_within(),
 * rules_pick_addr_within() and rules_decide_name_within(): a run's policy
 * narrows the operator's rules and never widens them.
 *
 * The cases are data: a host and port, and the decision, reason and
 * deciding entry (FILE:LINE, "-" for none) under the ceiling alone and
 * under each policy.
 */
#include "config.h"

#include <sys/socket.h>

#include <stdio.h>
#include <string.h>

#include "rules.h"
#include "tap.h"

static const char ceiling_yaml[] =
    "version: 1\n"				/* 1 */
    "ports: [443]\n"				/* 2 */
    "allow:\n"					/* 3 */
    "  - a.example\n"				/* 4 */
    "  - b.example\n"				/* 5 */
    "  - \"**.c.example\"\n"			/* 6 */
    "  - \"10.0.0.0/8\"\n"			/* 7 */
    "deny:\n"					/* 8 */
    "  - x.c.example\n";			/* 9 */

/* Only deny entries: what the ceiling allows stands but for them. */
static const char deny_yaml[] =
    "{\"version\": 1,\n"			/* 1 */
    " \"deny\": [\"b.example\", \"10.1.0.0/16\"]}\n";	/* 2 */

/* An allowlist of its own: only what it names, on its ports. */
static const char list_yaml[] =
    "version: 1\n"				/* 1 */
    "ports: [443]\n"				/* 2 */
    "allow:\n"					/* 3 */
    "  - a.example\n"				/* 4 */
    "  - \"*.c.example\"\n";			/* 5 */

/* Names the ceiling denies: it still cannot allow them. */
static const char wide_yaml[] =
    "version: 1\n"				/* 1 */
    "ports: [443, 80]\n"			/* 2 */
    "allow:\n"					/* 3 */
    "  - x.c.example\n"				/* 4 */
    "  - z.example\n";				/* 5 */

struct within_case {
	const char	*host;
	uint16_t	 port;
	const char	*ceiling;	/* "verdict reason where" */
	const char	*deny;		/* under deny_yaml */
	const char	*list;		/* under list_yaml */
	const char	*wide;		/* under wide_yaml */
};

static const struct within_case cases[] = {
	{ "a.example", 443, "allow allowed ceiling:4",
	    "allow allowed ceiling:4", "allow allowed ceiling:4",
	    "deny not-allowlisted -" },
	{ "b.example", 443, "allow allowed ceiling:5",
	    "deny denied deny:2", "deny not-allowlisted -",
	    "deny not-allowlisted -" },
	{ "y.c.example", 443, "allow allowed ceiling:6",
	    "allow allowed ceiling:6", "allow allowed ceiling:6",
	    "deny not-allowlisted -" },
	{ "c.example", 443, "allow allowed ceiling:6",
	    "allow allowed ceiling:6", "deny not-allowlisted -",
	    "deny not-allowlisted -" },
	{ "x.c.example", 443, "deny denied ceiling:9",
	    "deny denied ceiling:9", "deny denied ceiling:9",
	    "deny denied ceiling:9" },
	{ "z.example", 80, "deny not-allowlisted -",
	    "deny not-allowlisted -", "deny not-allowlisted -",
	    "deny not-allowlisted -" },
	{ "a.example", 80, "deny port-not-allowed ceiling:4",
	    "deny port-not-allowed ceiling:4",
	    "deny port-not-allowed ceiling:4",
	    "deny port-not-allowed ceiling:4" },
	{ "10.1.2.3", 443, "allow allowed ceiling:7",
	    "deny denied deny:2", "deny not-allowlisted -",
	    "deny not-allowlisted -" },
	{ "10.2.0.1", 443, "allow allowed ceiling:7",
	    "allow allowed ceiling:7", "deny not-allowlisted -",
	    "deny not-allowlisted -" },
};

/*
 * Names without a port (rules_decide_name_within(), the DNS filter's
 * question): reachable on some port an allow entry gives them.  Refused,
 * the decision at the first of those ports names why (d.c.example under
 * plist: the ceiling's deny entry for 443 rather than plist's silence on
 * 8443); allowed, the ceiling's entry, as rules_decide_within() names it.
 */
static const char names_yaml[] =
    "version: 1\n"				/* 1 */
    "ports: [443]\n"				/* 2 */
    "allow:\n"					/* 3 */
    "  - a.example\n"				/* 4 */
    "  - \"ssh.example:22\"\n"			/* 5 */
    "  - \"**.c.example:443,8443\"\n"		/* 6 */
    "deny:\n"					/* 7 */
    "  - b.example\n"				/* 8 */
    "  - \"d.c.example:443\"\n"			/* 9 */
    "  - e.c.example\n";			/* 10 */

static const char pdeny_json[] =
    "{\"version\": 1,\n"			/* 1 */
    " \"deny\": [\"ssh.example:22\",\n"	/* 2 */
    " \"a.example\"]}\n";			/* 3 */

static const char plist_json[] =
    "{\"version\": 1,\n"			/* 1 */
    " \"allow\": [\"x.c.example:8443\"]}\n";	/* 2 */

static const struct {
	const char	*name;
	const char	*ports;		/* rules_name_ports() of the ceiling */
	const char	*ceiling;
	const char	*deny;		/* under pdeny_json */
	const char	*list;		/* under plist_json */
} name_cases[] = {
	{ "a.example", "443", "allow allowed names:4", "deny denied pdeny:3",
	    "deny not-allowlisted -" },
	{ "ssh.example", "22", "allow allowed names:5",
	    "deny denied pdeny:2", "deny not-allowlisted -" },
	{ "d.c.example", "443 8443", "allow allowed names:6",
	    "allow allowed names:6", "deny denied names:9" },
	{ "x.c.example", "443 8443", "allow allowed names:6",
	    "allow allowed names:6", "allow allowed names:6" },
	{ "c.example", "443 8443", "allow allowed names:6",
	    "allow allowed names:6", "deny not-allowlisted -" },
	{ "e.c.example", "443 8443", "deny denied names:10",
	    "deny denied names:10", "deny denied names:10" },
	{ "b.example", "", "deny denied names:8", "deny denied names:8",
	    "deny denied names:8" },
	{ "nowhere.example", "", "deny not-allowlisted -",
	    "deny not-allowlisted -", "deny not-allowlisted -" },
	{ "10.0.0.1", "", "deny not-allowlisted -", "deny not-allowlisted -",
	    "deny not-allowlisted -" },
};

static struct rules *
load(const char *name, const char *text)
{
	struct rules_error err;
	struct rules *r;
	char msg[RULES_PATH_MAX + RULES_ERROR_MAX + 64];

	if (rules_load_text(name, text, strlen(text), 0, &r, &err) == 0)
		return r;
	tap_diag("%s", rules_error_str(&err, msg, sizeof(msg)));
	return NULL;
}

/* A decision as "verdict reason where". */
static const char *
said(const struct rules_decision *d, char *buf, size_t len)
{
	char where[RULES_WHERE_MAX];

	snprintf(buf, len, "%s %s %s", d->verdict == RULES_ALLOW ? "allow" :
	    "deny", rules_reason_str(d->reason),
	    rules_entry_where(d->entry, where, sizeof(where)));
	return buf;
}

static void
test_names(void)
{
	struct rules *names, *pdeny, *plist;
	struct rules_decision d, d2;
	struct rules_host h;
	uint16_t ports[RULES_NAME_PORTS_MAX], port;
	char got[512];
	size_t i, j, n;

	names = load("names", names_yaml);
	pdeny = load("pdeny", pdeny_json);
	plist = load("plist", plist_json);
	if (names == NULL || pdeny == NULL || plist == NULL) {
		tap_ok(0, "the name sets load");
		goto out;
	}
	for (i = 0; i < sizeof(name_cases) / sizeof(name_cases[0]); i++) {
		const char *name = name_cases[i].name;

		if (rules_host_parse(name, strlen(name), &h) != RULES_OK) {
			tap_ok(0, "%s parses", name);
			continue;
		}
		n = rules_name_ports(names, &h, ports, RULES_NAME_PORTS_MAX);
		got[0] = '\0';
		for (j = 0; j < n; j++)
			snprintf(got + strlen(got), sizeof(got) - strlen(got),
			    "%s%u", j > 0 ? " " : "", (unsigned int)ports[j]);
		tap_is_str(got, name_cases[i].ports, "%s: the ports its allow "
		    "entries give it", name);
		rules_decide_name_within(names, NULL, &h, &d, &port);
		tap_is_str(said(&d, got, sizeof(got)), name_cases[i].ceiling,
		    "%s, any port: the ceiling alone", name);
		rules_decide_within(names, NULL, &h, port, &d2);
		tap_ok(d2.verdict == d.verdict && (d.verdict == RULES_ALLOW ||
		    port == (n == 0 ? 443 : ports[0])),
		    "%s: the port it was decided at, %u", name,
		    (unsigned int)port);
		rules_decide_name_within(names, pdeny, &h, &d, NULL);
		tap_is_str(said(&d, got, sizeof(got)), name_cases[i].deny,
		    "%s, any port: with deny entries", name);
		rules_decide_name_within(names, plist, &h, &d, NULL);
		tap_is_str(said(&d, got, sizeof(got)), name_cases[i].list,
		    "%s, any port: with an allowlist", name);
	}
	n = rules_name_ports(names, &h, ports, 0);
	tap_is_int((long long)n, 0, "rules_name_ports: no room, no ports");
	n = rules_allow_ports(names, ports, RULES_NAME_PORTS_MAX);
	got[0] = '\0';
	for (j = 0; j < n; j++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%u",
		    j > 0 ? " " : "", (unsigned int)ports[j]);
	tap_is_str(got, "443 22 8443", "rules_allow_ports: every allow "
	    "entry's, each once, no deny entry's");
	tap_is_int((long long)rules_allow_ports(names, ports, 2), 2,
	    "rules_allow_ports: at most max");
 out:
	rules_free(names);
	rules_free(pdeny);
	rules_free(plist);
}

int
main(void)
{
	struct rules *ceiling, *deny, *list, *wide;
	struct rules_decision d;
	struct rules_host h;
	struct rules_addr addrs[3];
	struct rules_pick pick;
	char got[512];
	size_t i;

	ceiling = load("ceiling", ceiling_yaml);
	deny = load("deny", deny_yaml);
	list = load("list", list_yaml);
	wide = load("wide", wide_yaml);
	if (ceiling == NULL || deny == NULL || list == NULL || wide == NULL) {
		tap_ok(0, "the sets load");
		return tap_done();
	}
	tap_ok(!rules_has_allow(deny) && rules_has_allow(list),
	    "rules_has_allow: a deny-only set has none, a list has some");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct within_case *k = &cases[i];

		if (rules_host_parse(k->host, strlen(k->host), &h) != RULES_OK) {
			tap_ok(0, "%s parses", k->host);
			continue;
		}
		rules_decide_within(ceiling, NULL, &h, k->port, &d);
		tap_is_str(said(&d, got, sizeof(got)), k->ceiling,
		    "%s:%u, the ceiling alone", k->host, k->port);
		rules_decide_within(ceiling, deny, &h, k->port, &d);
		tap_is_str(said(&d, got, sizeof(got)), k->deny,
		    "%s:%u, with deny entries", k->host, k->port);
		rules_decide_within(ceiling, list, &h, k->port, &d);
		tap_is_str(said(&d, got, sizeof(got)), k->list,
		    "%s:%u, with an allowlist", k->host, k->port);
		rules_decide_within(ceiling, wide, &h, k->port, &d);
		tap_is_str(said(&d, got, sizeof(got)), k->wide,
		    "%s:%u, with an allowlist wider than the ceiling",
		    k->host, k->port);
	}

	/* An address a name resolved to: the policy's deny blocks refuse. */
	rules_addr_parse("10.1.0.9", &addrs[0]);
	rules_addr_parse("10.3.0.9", &addrs[1]);
	rules_addr_parse("127.0.0.1", &addrs[2]);
	rules_check_addr_within(ceiling, deny, &addrs[0], 443, &d);
	tap_is_str(said(&d, got, sizeof(got)), "deny denied deny:2",
	    "an address in a deny block of the policy is denied");
	rules_check_addr_within(ceiling, deny, &addrs[1], 443, &d);
	tap_is_str(said(&d, got, sizeof(got)), "allow allowed ceiling:7",
	    "one outside it stands as the ceiling has it");
	rules_check_addr_within(ceiling, list, &addrs[2], 443, &d);
	tap_is_str(said(&d, got, sizeof(got)), "deny internal-address -",
	    "an internal address the ceiling refuses stays refused");
	rules_pick_addr_within(ceiling, deny, addrs, NULL, 3, 443, &pick);
	tap_ok(pick.picked == 1 && pick.nrefused == 1 &&
	    pick.refused[0] == 0, "the pick skips past the policy's deny "
	    "block to the next address, and dials it");
	rules_pick_addr_within(ceiling, NULL, addrs, NULL, 3, 443, &pick);
	tap_ok(pick.picked == 0, "without a policy, the first address is "
	    "dialled");

	test_names();
	rules_free(ceiling);
	rules_free(deny);
	rules_free(list);
	rules_free(wide);
	return tap_done();
}
