/*
 * test-rules-pick.c — rules_pick_addr(): which address of a name is
 * dialled (the first one allowed, IPv4 before IPv6, each in the order
 * given), what is said of the ones refused, report mode, the skip mask and
 * the limit; rules_pick_refused_text() and rules_addr_text().
 *
 * The cases are data: one line each in `cases` below.  A case's result is
 * written as one line (see summary()) and compared as a string, so a
 * failure shows the whole outcome.
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rules.h"
#include "tap.h"

#define LINE_MAX_	2048	/* one summary line */

static char	tmpdir[] = "/tmp/intutic-test-pick.XXXXXX";

/*
 * enforce.yaml: the lines are named by the cases (rule@LINE); keep them.
 */
static const char enforce_yaml[] =
    "version: 1\n"				/* 1 */
    "ports: [443]\n"				/* 2 */
    "allow:\n"					/* 3 */
    "  - api.example.com\n"			/* 4 */
    "  - \"10.20.0.0/16:8443\"\n"		/* 5 */
    "  - \"[fd00:20::]/32:8443\"\n"		/* 6 */
    "deny:\n"					/* 7 */
    "  - 9.9.9.0/24\n"				/* 8 */
    "  - \"1.0.0.1:25\"\n"			/* 9 */
    "  - \"[2001:4860:dead::]/48\"\n";		/* 10 */

static const char report_yaml[] =
    "version: 1\n"
    "mode: report\n"
    "allow:\n"
    "  - api.example.com\n"
    "deny:\n"
    "  - 9.9.9.0/24\n";

struct pick_case {
	const char	*name;
	int		 report;	/* 1: report.yaml, else enforce.yaml */
	uint16_t	 port;
	const char	*addrs;		/* space-separated; "!" first: skip */
	const char	*want;		/* summary(), see there */
	const char	*refused;	/* rules_pick_refused_text() */
};

/*
 * summary: "pick=I dial=I d=VERDICT/REASON/ENTRY | A1 A2 ... | order=..."
 * with, for each address in the order given, P (picked), U (unchecked),
 * S (skipped) or R:REASON:CLASS-OR-ENTRY (refused); ENTRY is the entry's
 * text and line, "-" for none; I is an index or "none".
 */
static const struct pick_case cases[] = {
	{ "no address at all: nothing picked, nothing refused, d is zero", 0, 443,
	  "", "pick=none dial=none d=deny/not-allowlisted/- |  | order=", "" },
	{ "one public address: picked", 0, 443,
	  "93.184.216.34",
	  "pick=0 dial=0 d=allow/allowed/- | P | order=0", "" },
	{ "public, then loopback: the public one, loopback never checked", 0, 443,
	  "93.184.216.34 127.0.0.1",
	  "pick=0 dial=0 d=allow/allowed/- | P U | order=0 1", "" },
	{ "loopback, then public: the public one, loopback refused", 0, 443,
	  "127.0.0.1 93.184.216.34",
	  "pick=1 dial=1 d=allow/allowed/- | R:internal-address:loopback P | order=0 1",
	  "127.0.0.1 (loopback)" },
	{ "all internal: denied with the first one's class", 0, 443,
	  "10.0.0.1 192.168.1.1 169.254.169.254",
	  "pick=none dial=none d=deny/internal-address/private | "
	  "R:internal-address:private R:internal-address:private "
	  "R:internal-address:link-local | order=0 1 2",
	  "10.0.0.1 (private), 192.168.1.1 (private), 169.254.169.254 (link-local)" },
	{ "a deny block on the first: refused, the next public one picked", 0, 443,
	  "9.9.9.9 93.184.216.34",
	  "pick=1 dial=1 d=allow/allowed/- | R:denied:9.9.9.0/24@8 P | order=0 1",
	  "9.9.9.9 (deny 9.9.9.0/24 at enforce.yaml:8)" },
	{ "deny block and internal: denied, the first refused (deny) decides", 0, 443,
	  "9.9.9.10 127.0.0.1",
	  "pick=none dial=none d=deny/denied/9.9.9.0/24@8 | "
	  "R:denied:9.9.9.0/24@8 R:internal-address:loopback | order=0 1",
	  "9.9.9.10 (deny 9.9.9.0/24 at enforce.yaml:8), 127.0.0.1 (loopback)" },
	{ "internal, then a deny block: the first refused (internal) decides", 0, 443,
	  "127.0.0.1 9.9.9.10",
	  "pick=none dial=none d=deny/internal-address/loopback | "
	  "R:internal-address:loopback R:denied:9.9.9.0/24@8 | order=0 1",
	  "127.0.0.1 (loopback), 9.9.9.10 (deny 9.9.9.0/24 at enforce.yaml:8)" },
	{ "IPv6 before IPv4 in the list: IPv4 is considered first", 0, 443,
	  "2606:4700::1 10.0.0.1 93.184.216.34",
	  "pick=2 dial=2 d=allow/allowed/- | U R:internal-address:private P | order=1 2 0",
	  "10.0.0.1 (private)" },
	{ "IPv4 all refused: the IPv6 one is picked", 0, 443,
	  "2606:4700::1 10.0.0.1 127.0.0.1",
	  "pick=0 dial=0 d=allow/allowed/- | P R:internal-address:private "
	  "R:internal-address:loopback | order=1 2 0",
	  "10.0.0.1 (private), 127.0.0.1 (loopback)" },
	{ "IPv6 internal and deny block, each refused with its own why", 0, 443,
	  "fe80::1 2001:4860:dead::1 ::1",
	  "pick=none dial=none d=deny/internal-address/link-local | "
	  "R:internal-address:link-local R:denied:[2001:4860:dead::]/48@10 "
	  "R:internal-address:loopback | order=0 1 2",
	  "fe80::1 (link-local), 2001:4860:dead::1 (deny [2001:4860:dead::]/48 at "
	  "enforce.yaml:10), ::1 (loopback)" },
	{ "IPv4-mapped loopback and NAT64 private: internal as their IPv4", 0, 443,
	  "::ffff:127.0.0.1 64:ff9b::a00:1 2606:4700::1",
	  "pick=2 dial=2 d=allow/allowed/- | R:internal-address:loopback "
	  "R:internal-address:private P | order=0 1 2",
	  "::ffff:127.0.0.1 (loopback via ipv4-mapped), 64:ff9b::a00:1 (private via nat64)" },
	{ "IPv4-mapped form of a denied address meets the IPv4 deny block", 0, 443,
	  "::ffff:9.9.9.9",
	  "pick=none dial=none d=deny/denied/9.9.9.0/24@8 | R:denied:9.9.9.0/24@8 | order=0",
	  "::ffff:9.9.9.9 (deny 9.9.9.0/24 at enforce.yaml:8)" },
	{ "6to4 around a private address: internal", 0, 443,
	  "2002:a00:1::1",
	  "pick=none dial=none d=deny/internal-address/private | "
	  "R:internal-address:private | order=0",
	  "2002:a00:1::1 (private via 6to4)" },
	{ "an allow block over an internal address, on its port: picked with the block", 0, 8443,
	  "10.20.1.5",
	  "pick=0 dial=0 d=allow/allowed/10.20.0.0/16:8443@5 | P | order=0", "" },
	{ "the same address on another port: internal-address", 0, 443,
	  "10.20.1.5 10.30.0.1",
	  "pick=none dial=none d=deny/internal-address/private | "
	  "R:internal-address:private R:internal-address:private | order=0 1",
	  "10.20.1.5 (private), 10.30.0.1 (private)" },
	{ "an allow block covers the second address only: that one", 0, 8443,
	  "10.30.0.1 10.20.1.5",
	  "pick=1 dial=1 d=allow/allowed/10.20.0.0/16:8443@5 | "
	  "R:internal-address:private P | order=0 1",
	  "10.30.0.1 (private)" },
	{ "an IPv6 allow block over a unique-local address, on its port", 0, 8443,
	  "fd00:21::1 fd00:20::1",
	  "pick=1 dial=1 d=allow/allowed/[fd00:20::]/32:8443@6 | "
	  "R:internal-address:unique-local P | order=0 1",
	  "fd00:21::1 (unique-local)" },
	{ "a deny entry with a port: refused on that port", 0, 25,
	  "1.0.0.1 1.0.0.2",
	  "pick=1 dial=1 d=allow/allowed/- | R:denied:1.0.0.1:25@9 P | order=0 1",
	  "1.0.0.1 (deny 1.0.0.1:25 at enforce.yaml:9)" },
	{ "a deny entry with a port: on another port, picked", 0, 443,
	  "1.0.0.1 1.0.0.2",
	  "pick=0 dial=0 d=allow/allowed/- | P U | order=0 1", "" },
	{ "a skipped address (the proxy's own) is neither checked nor dialled", 0, 443,
	  "!93.184.216.34 127.0.0.1 1.0.0.2",
	  "pick=2 dial=2 d=allow/allowed/- | S R:internal-address:loopback P | order=0 1 2",
	  "127.0.0.1 (loopback)" },
	{ "every address skipped: nothing picked, nothing refused", 0, 443,
	  "!127.0.0.1 !::1",
	  "pick=none dial=none d=deny/not-allowlisted/- | S S | order=0 1", "" },
	{ "report mode, one allowed: that one, as in enforce mode", 1, 443,
	  "2606:4700::1 10.0.0.1 9.9.9.9",
	  "pick=0 dial=0 d=allow/allowed/- | P R:internal-address:private "
	  "R:denied:9.9.9.0/24@6 | order=1 2 0",
	  "10.0.0.1 (private), 9.9.9.9 (deny 9.9.9.0/24 at report.yaml:6)" },
	{ "report mode, all refused: dial the first refused, d says why", 1, 443,
	  "::1 9.9.9.9 10.0.0.1",
	  "pick=none dial=1 d=deny/denied/9.9.9.0/24@6 | R:internal-address:loopback "
	  "R:denied:9.9.9.0/24@6 R:internal-address:private | order=1 2 0",
	  "9.9.9.9 (deny 9.9.9.0/24 at report.yaml:6), 10.0.0.1 (private), ::1 (loopback)" },
	{ "report mode, all refused, the first one IPv4 after IPv6 in the list", 1, 443,
	  "fe80::1 127.0.0.1",
	  "pick=none dial=1 d=deny/internal-address/loopback | "
	  "R:internal-address:link-local R:internal-address:loopback | order=1 0",
	  "127.0.0.1 (loopback), fe80::1 (link-local)" },
};

static const char *
path_of(const char *name)
{
	static char buf[256];

	snprintf(buf, sizeof(buf), "%s/%s", tmpdir, name);
	return buf;
}

static int
write_file(const char *name, const char *text)
{
	FILE *fp;

	if ((fp = fopen(path_of(name), "w")) == NULL ||
	    fputs(text, fp) == EOF) {
		tap_diag("cannot write %s: %s", name, strerror(errno));
		if (fp != NULL)
			fclose(fp);
		return -1;
	}
	return fclose(fp) == 0 ? 0 : -1;
}

static struct rules *
load(const char *name, const char *text)
{
	struct rules_error err;
	struct rules *r;
	char msg[RULES_PATH_MAX + RULES_ERROR_MAX + 64];

	if (write_file(name, text) != 0)
		return NULL;
	/* Relative (we are in tmpdir), so entries are named "FILE:LINE". */
	if (rules_load(name, &r, &err) != 0) {
		tap_diag("%s", rules_error_str(&err, msg, sizeof(msg)));
		return NULL;
	}
	return r;
}

/* Appends printf output to buf, which holds *used bytes. */
static void
add(char *buf, size_t len, size_t *used, const char *fmt, ...)
    __attribute__((__format__(__printf__, 4, 5)));

static void
add(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*used >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *used, len - *used, fmt, ap);
	va_end(ap);
	if (n > 0)
		*used += (size_t)n < len - *used ? (size_t)n : len - *used - 1;
}

static void
add_index(char *buf, size_t len, size_t *used, const char *label, size_t i,
    size_t n)
{
	if (i == n)
		add(buf, len, used, "%snone", label);
	else
		add(buf, len, used, "%s%zu", label, i);
}

/* "TEXT@LINE" of an entry, "-" for none. */
static void
add_entry(char *buf, size_t len, size_t *used, const struct rules_entry *e)
{
	if (e == NULL)
		add(buf, len, used, "-");
	else
		add(buf, len, used, "%s@%lu", rules_entry_text(e),
		    rules_entry_line(e));
}

static void
summary(const struct rules_pick *p, char *buf, size_t len)
{
	const struct rules_decision *d;
	size_t used = 0, i;

	buf[0] = '\0';
	add_index(buf, len, &used, "pick=", p->picked, p->n);
	add_index(buf, len, &used, " dial=", p->dial, p->n);
	add(buf, len, &used, " d=%s/%s/", p->d.verdict == RULES_ALLOW ?
	    "allow" : "deny", rules_reason_str(p->d.reason));
	if (p->d.reason == RULES_REASON_INTERNAL_ADDRESS)
		add(buf, len, &used, "%s", p->d.addr_class);
	else
		add_entry(buf, len, &used, p->d.entry);
	add(buf, len, &used, " |");
	for (i = 0; i < p->n; i++) {
		d = &p->check[i];
		switch (p->state[i]) {
		case RULES_PICK_PICKED:
			add(buf, len, &used, " P");
			break;
		case RULES_PICK_UNCHECKED:
			add(buf, len, &used, " U");
			break;
		case RULES_PICK_SKIPPED:
			add(buf, len, &used, " S");
			break;
		case RULES_PICK_REFUSED:
			add(buf, len, &used, " R:%s:", rules_reason_str(d->reason));
			if (d->reason == RULES_REASON_INTERNAL_ADDRESS)
				add(buf, len, &used, "%s", d->addr_class);
			else
				add_entry(buf, len, &used, d->entry);
			break;
		}
	}
	add(buf, len, &used, " %s| order=", p->n == 0 ? " " : "");
	for (i = 0; i < p->n; i++)
		add(buf, len, &used, "%s%zu", i > 0 ? " " : "", p->order[i]);
}

/* Parses a case's addresses; -1 (reported) when one does not parse. */
static int
parse_addrs(const char *text, struct rules_addr *addrs, unsigned char *skip,
    size_t *n)
{
	char buf[LINE_MAX_], *save = NULL, *tok;

	*n = 0;
	snprintf(buf, sizeof(buf), "%s", text);
	for (tok = strtok_r(buf, " ", &save); tok != NULL;
	    tok = strtok_r(NULL, " ", &save)) {
		if (*n == RULES_PICK_MAX)
			return -1;
		skip[*n] = tok[0] == '!';
		if (rules_addr_parse(tok + skip[*n], &addrs[*n]) != RULES_OK) {
			tap_diag("address '%s' does not parse", tok);
			return -1;
		}
		(*n)++;
	}
	return 0;
}

static void
run_case(const struct pick_case *c, const struct rules *r)
{
	struct rules_addr addrs[RULES_PICK_MAX];
	unsigned char skip[RULES_PICK_MAX];
	struct rules_pick p;
	char got[LINE_MAX_], text[LINE_MAX_];
	size_t n;

	if (parse_addrs(c->addrs, addrs, skip, &n) != 0) {
		tap_ok(0, "%s: the addresses parse", c->name);
		return;
	}
	rules_pick_addr(r, addrs, skip, n, c->port, &p);
	summary(&p, got, sizeof(got));
	tap_is_str(got, c->want, "%s", c->name);
	tap_is_str(rules_pick_refused_text(&p, addrs, text, sizeof(text)),
	    c->refused, "%s: the refused addresses, named", c->name);
}

/* The skip mask may be NULL; an address of another family is skipped. */
static void
test_null_skip_and_family(const struct rules *r)
{
	struct rules_addr addrs[3];
	struct rules_pick p;

	memset(addrs, 0, sizeof(addrs));
	addrs[0].family = AF_UNSPEC;
	rules_addr_parse("127.0.0.1", &addrs[1]);
	rules_addr_parse("93.184.216.34", &addrs[2]);
	rules_pick_addr(r, addrs, NULL, 3, 443, &p);
	tap_ok(p.state[0] == RULES_PICK_SKIPPED && p.nskipped == 1,
	    "an address of another family is skipped, never checked");
	tap_ok(p.picked == 2 && p.dial == 2 && p.nrefused == 1 &&
	    p.refused[0] == 1, "NULL skip mask: nothing else is skipped");
	tap_is_int((long long)p.order[2], 0,
	    "the other family is considered with IPv6, after IPv4");
}

/* Only RULES_PICK_MAX addresses are looked at; the rest is never dialled. */
static void
test_limit(const struct rules *r)
{
	struct rules_addr addrs[RULES_PICK_MAX + 1];
	struct rules_pick p;
	size_t i;

	for (i = 0; i < RULES_PICK_MAX; i++)
		rules_addr_parse("10.0.0.1", &addrs[i]);
	rules_addr_parse("93.184.216.34", &addrs[RULES_PICK_MAX]);
	rules_pick_addr(r, addrs, NULL, RULES_PICK_MAX + 1, 443, &p);
	tap_is_int((long long)p.n, RULES_PICK_MAX,
	    "%d addresses: %d looked at", RULES_PICK_MAX + 1, RULES_PICK_MAX);
	tap_ok(p.picked == p.n && p.dial == p.n &&
	    p.nrefused == RULES_PICK_MAX &&
	    p.d.reason == RULES_REASON_INTERNAL_ADDRESS,
	    "the public address past the limit is not picked: denied");
}

/* The refused text is cut with "..." and always terminated. */
static void
test_refused_text_cut(const struct rules *r)
{
	struct rules_addr addrs[3];
	struct rules_pick p;
	char buf[40], tiny[3];

	rules_addr_parse("10.0.0.1", &addrs[0]);
	rules_addr_parse("192.168.100.200", &addrs[1]);
	rules_addr_parse("9.9.9.9", &addrs[2]);
	rules_pick_addr(r, addrs, NULL, 3, 443, &p);
	tap_is_str(rules_pick_refused_text(&p, addrs, buf, sizeof(buf)),
	    "10.0.0.1 (private)...",
	    "a list that does not fit ends in \"...\" after the last whole item");
	memset(tiny, 'x', sizeof(tiny));
	tap_is_str(rules_pick_refused_text(&p, addrs, tiny, sizeof(tiny)), "",
	    "a buffer too small for \"...\": empty, terminated");
	tap_ok(rules_pick_refused_text(&p, addrs, tiny, 0) == tiny,
	    "a zero-length buffer is not written");
}

static void
test_addr_text(void)
{
	struct rules_addr a;
	char buf[RULES_ADDR_TEXT_MAX];

	rules_addr_parse("2001:DB8:0:0::1", &a);
	tap_is_str(rules_addr_text(&a, buf, sizeof(buf)), "2001:db8::1",
	    "rules_addr_text: IPv6 compressed, no brackets");
	rules_addr_parse("::ffff:10.0.0.1", &a);
	tap_is_str(rules_addr_text(&a, buf, sizeof(buf)), "::ffff:10.0.0.1",
	    "rules_addr_text: IPv4-mapped as such");
	rules_addr_parse("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", &a);
	tap_is_int((long long)strlen(rules_addr_text(&a, buf, sizeof(buf))), 39,
	    "rules_addr_text: the longest form fits RULES_ADDR_TEXT_MAX");
	memset(&a, 0, sizeof(a));
	tap_is_str(rules_addr_text(&a, buf, sizeof(buf)), "invalid",
	    "rules_addr_text: another family");
}

static void
cleanup(void)
{
	unlink(path_of("enforce.yaml"));
	unlink(path_of("report.yaml"));
	rmdir(tmpdir);
}

int
main(void)
{
	struct rules *enforce, *report;
	size_t i;

	if (mkdtemp(tmpdir) == NULL)
		tap_skip_all("cannot make a temporary directory: %s",
		    strerror(errno));
	if (chdir(tmpdir) != 0)
		tap_skip_all("cannot enter %s: %s", tmpdir, strerror(errno));
	enforce = load("enforce.yaml", enforce_yaml);
	report = load("report.yaml", report_yaml);
	if (!tap_ok(enforce != NULL && report != NULL, "the rule files load")) {
		rules_free(enforce);
		rules_free(report);
		cleanup();
		return tap_done();
	}
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i], cases[i].report ? report : enforce);
	test_null_skip_and_family(enforce);
	test_limit(enforce);
	test_refused_text_cut(enforce);
	test_addr_text();
	rules_free(enforce);
	rules_free(report);
	cleanup();
	return tap_done();
}
