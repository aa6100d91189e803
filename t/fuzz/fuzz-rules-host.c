/*
 * fuzz-rules-host.c — host canonicalisation and the matcher (rules/rules.h):
 * the input, less its first byte, as a CONNECT target or URI authority
 * (rules_hostport_parse, NUL-ended as the proxy hands it over), as a bare
 * host (rules_host_parse, embedded NULs included), and as an address
 * (rules_addr_parse); a parsed host is decided against a fixed rule set
 * loaded once (rules_yaml, every pattern form), on the port the first byte
 * gives when the input names none.
 *
 * Checked, from rules.h: a parse either succeeds or clears its outputs;
 * the canonical text parses again to itself (idempotence), also with a
 * port appended; case does not matter; an IP literal's text and its
 * address agree with rules_addr_parse(); equal canonical hosts get equal
 * decisions, and a decision's verdict fits its reason.
 */
#include "config.h"

#include <arpa/inet.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"
#include "fuzz.h"

#define FUZZ_PATH_MAX	4096
#define FUZZ_HOST_IN_MAX 1024	/* bytes of input looked at */

static const char rules_yaml[] =
    "version: 1\n"
    "ports: [443, 80]\n"
    "allow:\n"
    "  - api.example.com\n"
    "  - \"*.cdn.example.com\"\n"
    "  - \"**.registry.example.org\"\n"
    "  - \"git.example.com:22\"\n"
    "  - \"multi.example.com:8080,8443\"\n"
    "  - 198.51.100.0/24\n"
    "  - \"203.0.113.7\"\n"
    "  - \"[2001:db8::7]\"\n"
    "  - \"2001:db8:1::/48\"\n"
    "  - \"10.9.0.0/16:5432\"\n"
    "  - \"UPPER.Example.NET.\"\n"
    "  - \"[2001:db8:2::]/48:443\"\n"
    "  - xn--bcher-kva.example\n"
    "deny:\n"
    "  - secret.cdn.example.com\n"
    "  - \"**.bad.registry.example.org\"\n"
    "  - 198.51.100.128/25\n"
    "  - \"[2001:db8:1:2::]/64\"\n"
    "  - \"api.example.com:8443\"\n";

static struct rules	*fixed;

static void
load_fixed(void)
{
	char path[FUZZ_PATH_MAX];
	struct rules_error err;

	fuzz_write_file("rules.yaml", rules_yaml, sizeof(rules_yaml) - 1, path,
	    sizeof(path));
	FUZZ_ASSERT(rules_load(path, &fixed, &err) == 0);
}

static int
cleared(const struct rules_host *h)
{
	static const struct rules_host zero;

	return memcmp(h, &zero, sizeof(*h)) == 0;
}

static void
check_decision(const struct rules_decision *d)
{
	FUZZ_ASSERT(d->verdict == RULES_ALLOW || d->verdict == RULES_DENY);
	FUZZ_ASSERT((d->verdict == RULES_ALLOW) ==
	    (d->reason == RULES_REASON_ALLOWED));
	if (d->reason == RULES_REASON_ALLOWED ||
	    d->reason == RULES_REASON_DENIED ||
	    d->reason == RULES_REASON_PORT_NOT_ALLOWED)
		FUZZ_ASSERT(d->entry != NULL);
}

/* A canonical host: its text is canonical, and agrees with its address. */
static void
check_host(const struct rules_host *h, uint16_t port)
{
	struct rules_host again;
	struct rules_decision d1, d2;
	struct rules_addr a;
	char text[RULES_HOST_TEXT_MAX];
	size_t i;

	FUZZ_ASSERT(h->len > 0 && h->len == strlen(h->text));
	FUZZ_ASSERT(h->len < RULES_HOST_TEXT_MAX);
	FUZZ_ASSERT(rules_host_parse(h->text, h->len, &again) == RULES_OK);
	FUZZ_ASSERT(again.kind == h->kind);
	FUZZ_ASSERT(strcmp(again.text, h->text) == 0);
	switch (h->kind) {
	case RULES_HOST_NAME:
		FUZZ_ASSERT(h->len <= RULES_NAME_MAX);
		FUZZ_ASSERT(h->text[h->len - 1] != '.');
		for (i = 0; i < h->len; i++)
			FUZZ_ASSERT(!isupper((unsigned char)h->text[i]));
		break;
	case RULES_HOST_IPV4:
		FUZZ_ASSERT(rules_addr_parse(h->text, &a) == RULES_OK);
		FUZZ_ASSERT(a.family == AF_INET &&
		    memcmp(&a.v4, &h->v4, sizeof(a.v4)) == 0);
		FUZZ_ASSERT(memcmp(&again.v4, &h->v4, sizeof(h->v4)) == 0);
		break;
	case RULES_HOST_IPV6:
		FUZZ_ASSERT(h->text[0] == '[' && h->text[h->len - 1] == ']');
		memcpy(text, h->text + 1, h->len - 2);
		text[h->len - 2] = '\0';
		FUZZ_ASSERT(rules_addr_parse(text, &a) == RULES_OK);
		FUZZ_ASSERT(a.family == AF_INET6 &&
		    memcmp(&a.v6, &h->v6, sizeof(a.v6)) == 0);
		FUZZ_ASSERT(memcmp(&again.v6, &h->v6, sizeof(h->v6)) == 0);
		break;
	default:
		FUZZ_ASSERT(!"a known host kind");
	}
	rules_decide(fixed, h, port, &d1);
	check_decision(&d1);
	rules_decide(fixed, &again, port, &d2);
	FUZZ_ASSERT(d1.verdict == d2.verdict && d1.reason == d2.reason &&
	    d1.entry == d2.entry);
}

/* The same bytes in capitals name the same host. */
static void
check_case(const char *s, size_t len, const struct rules_host *h, int err)
{
	struct rules_host up;
	char buf[FUZZ_HOST_IN_MAX];
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (char)toupper((unsigned char)s[i]);
	FUZZ_ASSERT((rules_host_parse(buf, len, &up) == RULES_OK) ==
	    (err == RULES_OK));
	if (err == RULES_OK)
		FUZZ_ASSERT(strcmp(up.text, h->text) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rules_host h, again;
	struct rules_addr a;
	char s[FUZZ_HOST_IN_MAX + 1], hp[RULES_HOST_TEXT_MAX + 8];
	uint16_t port, port2, dport;
	size_t len;
	int err;

	if (fixed == NULL)
		load_fixed();
	if (size == 0)
		return 0;
	dport = (uint16_t)(data[0] % 4 == 0 ? 443 : data[0] % 4 == 1 ? 80 :
	    data[0] % 4 == 2 ? 22 : 8443);
	len = size - 1 < FUZZ_HOST_IN_MAX ? size - 1 : FUZZ_HOST_IN_MAX;
	memcpy(s, data + 1, len);
	s[len] = '\0';

	/* A bare host, every byte of it. */
	err = rules_host_parse(s, len, &h);
	FUZZ_ASSERT(rules_strerror(err) != NULL);
	if (err == RULES_OK)
		check_host(&h, dport);
	else
		FUZZ_ASSERT(cleared(&h));
	check_case(s, len, &h, err);

	/* host[:port], up to the first NUL, as the proxy passes it. */
	err = rules_hostport_parse(s, &h, &port, dport);
	if (err != RULES_OK) {
		FUZZ_ASSERT(cleared(&h) && port == 0);
	} else {
		check_host(&h, port);
		snprintf(hp, sizeof(hp), "%s:%u", h.text, port);
		FUZZ_ASSERT(rules_hostport_parse(hp, &again, &port2, 0) ==
		    RULES_OK);
		FUZZ_ASSERT(strcmp(again.text, h.text) == 0 && port2 == port);
	}

	/* A bare address, as rules_check_addr() takes it. */
	if (rules_addr_parse(s, &a) == RULES_OK) {
		struct rules_decision d;
		const char *emb;

		FUZZ_ASSERT(a.family == AF_INET || a.family == AF_INET6);
		FUZZ_ASSERT(rules_addr_class(&a, &emb) != NULL);
		rules_check_addr(fixed, &a, dport, &d);
		FUZZ_ASSERT(d.verdict == RULES_ALLOW ||
		    d.verdict == RULES_DENY);
	}
	return 0;
}
