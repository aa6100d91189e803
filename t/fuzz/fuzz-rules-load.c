/*
 * fuzz-rules-load.c — rules_load() (rules/rules.h) on a rule file with the
 * input as its text, written to top.yaml in the harness's private
 * directory (fuzz_tmpdir(), made once).  Two more files sit beside it for
 * includes to find: inc.yaml, which includes leaf.yaml, which defines a
 * provider with a gateway (`gateway: {leaf: broker}` in the input finds
 * it).  A loaded set then decides a few destinations, classifies a
 * few addresses and is compared with itself by rules_tightens().
 *
 * Includes must not reach outside that directory: an input is not loaded
 * when it could name a path there (".."), an absolute one (a '/' that does
 * not follow a hex digit or "::", as in a CIDR entry), or spell one by
 * another route (YAML escapes '\', tag URIs '%').  Everything else fails
 * cleanly or loads.
 *
 * Checked: 0 with a set, or -1 with no set and a message; the decisions
 * name a verdict that fits their reason; the set's dump (rules_dump())
 * loads back with rules_load_text() to a set that dumps the same text and
 * decides the same destinations and addresses, naming the same entries.
 */
#include "config.h"

#include <arpa/inet.h>

#include <stdlib.h>
#include <string.h>

#include "rules.h"
#include "fuzz.h"

#define FUZZ_PATH_MAX	4096

static const char inc_yaml[] =
    "version: 1\n"
    "include: leaf.yaml\n"
    "allow:\n"
    "  - \"*.inc.example.com\"\n"
    "  - 192.0.2.0/24\n"
    "deny:\n"
    "  - bad.inc.example.com\n";

static const char leaf_yaml[] =
    "version: 1\n"
    "allow: [leaf.example.com]\n"
    "providers:\n"
    "  leaf:\n"
    "    hosts: [api.leaf.example]\n"
    "    env: [LEAF_API_KEY]\n"
    "    api: api.leaf.example\n"
    "    base-url: [LEAF_BASE_URL]\n"
    "    key-headers: [authorization]\n"
    "    broker: {env: LEAF_API_KEY, header: authorization, "
    "scheme: Bearer, prefix: leaf-, length: 40}\n";

static const char *const hostports[] = {
	"api.example.com:443", "a.inc.example.com", "bad.inc.example.com:80",
	"leaf.example.com:22", "192.0.2.9:443", "10.1.2.3:5432",
	"[2001:db8::7]:443", "[::1]:80", "x.y.z.example.org:8443",
};

static const char *const addrs[] = {
	"127.0.0.1", "10.0.0.1", "192.0.2.9", "8.8.8.8", "::1",
	"::ffff:10.0.0.1", "2001:db8::7", "fe80::1",
};

/* Whether the input could make an include name a file outside the dir. */
static int
could_escape(const uint8_t *d, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (d[i] == '\\' || d[i] == '%' || d[i] == '\0')
			return 1;
		if (d[i] == '.' && i + 1 < n && d[i + 1] == '.')
			return 1;
		if (d[i] != '/')
			continue;
		if (i >= 1 && ((d[i - 1] >= '0' && d[i - 1] <= '9') ||
		    (d[i - 1] >= 'a' && d[i - 1] <= 'f') ||
		    (d[i - 1] >= 'A' && d[i - 1] <= 'F')))
			continue;
		if (i >= 2 && d[i - 1] == ':' && d[i - 2] == ':')
			continue;
		return 1;
	}
	return 0;
}

static void
check_decision(const struct rules_decision *d)
{
	FUZZ_ASSERT(d->verdict == RULES_ALLOW || d->verdict == RULES_DENY);
	FUZZ_ASSERT((d->verdict == RULES_ALLOW) ==
	    (d->reason == RULES_REASON_ALLOWED));
	FUZZ_ASSERT(rules_reason_str(d->reason) != NULL);
	if (d->reason == RULES_REASON_ALLOWED ||
	    d->reason == RULES_REASON_DENIED)
		FUZZ_ASSERT(d->entry != NULL);
}

/* Two decisions alike: verdict, reason and the entry's text. */
static void
check_same(const struct rules_decision *a, const struct rules_decision *b)
{
	FUZZ_ASSERT(a->verdict == b->verdict && a->reason == b->reason);
	FUZZ_ASSERT((a->entry == NULL) == (b->entry == NULL));
	FUZZ_ASSERT(strcmp(rules_entry_text(a->entry),
	    rules_entry_text(b->entry)) == 0);
}

/* The set's dump reads back to a set that dumps and decides the same. */
static void
round_trip(struct rules *r)
{
	struct rules_decision d, e;
	struct rules_error err;
	struct rules_host h;
	struct rules_addr a;
	struct rules *back = NULL;
	char *text, *again;
	size_t len, len2, i;
	uint16_t port;

	/* Out of memory, or longer than a text may be: nothing to load. */
	if (rules_dump(r, &text, &len) != 0) {
		FUZZ_ASSERT(text == NULL && len == 0);
		return;
	}
	FUZZ_ASSERT(strlen(text) == len);
	FUZZ_ASSERT(rules_load_text("dump", text, len, 0, &back, &err) == 0);
	FUZZ_ASSERT(rules_count(back) == rules_count(r));
	FUZZ_ASSERT(rules_mode(back) == rules_mode(r));
	FUZZ_ASSERT(rules_provider_count(back) == rules_provider_count(r));
	FUZZ_ASSERT(rules_dump(back, &again, &len2) == 0);
	FUZZ_ASSERT(len2 == len && memcmp(again, text, len) == 0);
	for (i = 0; i < sizeof(hostports) / sizeof(hostports[0]); i++) {
		FUZZ_ASSERT(rules_hostport_parse(hostports[i], &h, &port,
		    443) == RULES_OK);
		rules_decide(r, &h, port, &d);
		rules_decide(back, &h, port, &e);
		check_same(&d, &e);
	}
	for (i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		FUZZ_ASSERT(rules_addr_parse(addrs[i], &a) == RULES_OK);
		rules_check_addr(r, &a, 443, &d);
		rules_check_addr(back, &a, 443, &e);
		check_same(&d, &e);
	}
	free(again);
	free(text);
	rules_free(back);
}

static void
use(struct rules *r)
{
	struct rules_decision d;
	struct rules_host h;
	struct rules_addr a;
	char where[RULES_WHERE_MAX], why[256];
	uint16_t port;
	size_t i;

	FUZZ_ASSERT(rules_path(r) != NULL);
	(void)rules_mode(r);
	(void)rules_count(r);
	for (i = 0; i < rules_provider_count(r); i++)
		FUZZ_ASSERT(rules_provider_get(r, i) != NULL &&
		    rules_provider_get(r, i)->name != NULL);
	for (i = 0; i < sizeof(hostports) / sizeof(hostports[0]); i++) {
		FUZZ_ASSERT(rules_hostport_parse(hostports[i], &h, &port,
		    443) == RULES_OK);
		rules_decide(r, &h, port, &d);
		check_decision(&d);
		if (d.entry != NULL) {
			FUZZ_ASSERT(rules_entry_text(d.entry) != NULL);
			FUZZ_ASSERT(rules_entry_file(d.entry) != NULL);
			(void)rules_entry_where(d.entry, where, sizeof(where));
			(void)rules_entry_names_port(d.entry, port);
			FUZZ_ASSERT(rules_entry_is_deny(d.entry) ==
			    (d.reason == RULES_REASON_DENIED));
		}
	}
	for (i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		FUZZ_ASSERT(rules_addr_parse(addrs[i], &a) == RULES_OK);
		rules_check_addr(r, &a, 443, &d);
		FUZZ_ASSERT(d.verdict == RULES_ALLOW ||
		    d.verdict == RULES_DENY);
	}
	(void)rules_tightens(r, r, why, sizeof(why));
	round_trip(r);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[FUZZ_PATH_MAX];
	struct rules_error err;
	struct rules *r = NULL;
	char scratch[FUZZ_PATH_MAX];

	if (path[0] == '\0') {
		fuzz_write_file("inc.yaml", inc_yaml, sizeof(inc_yaml) - 1,
		    scratch, sizeof(scratch));
		fuzz_write_file("leaf.yaml", leaf_yaml, sizeof(leaf_yaml) - 1,
		    scratch, sizeof(scratch));
	}
	if (could_escape(data, size))
		return 0;
	fuzz_write_file("top.yaml", data, size, path, sizeof(path));
	memset(&err, 0, sizeof(err));
	if (rules_load(path, &r, &err) != 0) {
		FUZZ_ASSERT(r == NULL);
		FUZZ_ASSERT(memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
		FUZZ_ASSERT(err.msg[0] != '\0');
		FUZZ_ASSERT(rules_error_str(&err, scratch,
		    sizeof(scratch)) != NULL);
		return 0;
	}
	FUZZ_ASSERT(r != NULL);
	use(r);
	/* A second reference outlives the first. */
	rules_free(rules_ref(r));
	rules_free(r);
	return 0;
}
