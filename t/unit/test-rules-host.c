/*
 * test-rules-host.c — canonical hosts, ports and address parsing: each form
 * a host may take, and each spelling that must be refused, with the error
 * that says why.
 */
#include "config.h"

#include <sys/socket.h>

#include <string.h>

#include "rules.h"
#include "tap.h"

struct host_case {
	const char	*in;
	int		 err;		/* RULES_OK or the expected error */
	int		 kind;
	const char	*canon;
};

static const struct host_case host_cases[] = {
	/* names */
	{ "example.com", RULES_OK, RULES_HOST_NAME, "example.com" },
	{ "Example.COM", RULES_OK, RULES_HOST_NAME, "example.com" },
	{ "example.com.", RULES_OK, RULES_HOST_NAME, "example.com" },
	{ "localhost", RULES_OK, RULES_HOST_NAME, "localhost" },
	{ "a-b.c-d.example", RULES_OK, RULES_HOST_NAME, "a-b.c-d.example" },
	{ "xn--bcher-kva.example", RULES_OK, RULES_HOST_NAME,
	    "xn--bcher-kva.example" },
	{ "1.2.3.4.example.com", RULES_OK, RULES_HOST_NAME,
	    "1.2.3.4.example.com" },
	{ "123.example", RULES_OK, RULES_HOST_NAME, "123.example" },
	{ "0x7f.example", RULES_OK, RULES_HOST_NAME, "0x7f.example" },
	{ "", RULES_ERR_EMPTY, 0, "" },
	{ ".", RULES_ERR_LABEL_EMPTY, 0, "" },
	{ "example.com..", RULES_ERR_LABEL_EMPTY, 0, "" },
	{ ".example.com", RULES_ERR_LABEL_EMPTY, 0, "" },
	{ "a..example.com", RULES_ERR_LABEL_EMPTY, 0, "" },
	{ "-a.example.com", RULES_ERR_LABEL_HYPHEN, 0, "" },
	{ "a-.example.com", RULES_ERR_LABEL_HYPHEN, 0, "" },
	{ "a_b.example.com", RULES_ERR_LABEL_CHAR, 0, "" },
	{ "a b.example.com", RULES_ERR_LABEL_CHAR, 0, "" },
	{ "*.example.com", RULES_ERR_LABEL_CHAR, 0, "" },
	{ "b\xc3\xbc" "cher.example", RULES_ERR_NON_ASCII, 0, "" },
	{ "example.com:443", RULES_ERR_IPV6_BRACKETS, 0, "" },
	/* IPv4: dotted quad only */
	{ "127.0.0.1", RULES_OK, RULES_HOST_IPV4, "127.0.0.1" },
	{ "0.0.0.0", RULES_OK, RULES_HOST_IPV4, "0.0.0.0" },
	{ "255.255.255.255", RULES_OK, RULES_HOST_IPV4, "255.255.255.255" },
	{ "192.0.2.1.", RULES_OK, RULES_HOST_IPV4, "192.0.2.1" },
	{ "127.1", RULES_ERR_IPV4_FORM, 0, "" },
	{ "127.0.1", RULES_ERR_IPV4_FORM, 0, "" },
	{ "0x7f.0.0.1", RULES_ERR_IPV4_FORM, 0, "" },
	{ "0x7f000001", RULES_ERR_IPV4_FORM, 0, "" },
	{ "2130706433", RULES_ERR_IPV4_FORM, 0, "" },
	{ "017.0.0.1", RULES_ERR_IPV4_FORM, 0, "" },
	{ "127.0.0.01", RULES_ERR_IPV4_FORM, 0, "" },
	{ "256.0.0.1", RULES_ERR_IPV4_FORM, 0, "" },
	{ "1.2.3.4.5", RULES_ERR_IPV4_FORM, 0, "" },
	{ "1.2.3.0x4", RULES_ERR_IPV4_FORM, 0, "" },
	{ "example.123", RULES_ERR_IPV4_FORM, 0, "" },
	{ "+1.2.3.4", RULES_ERR_IPV4_FORM, 0, "" },
	/* IPv6: brackets, no zone */
	{ "[::1]", RULES_OK, RULES_HOST_IPV6, "[::1]" },
	{ "[2001:DB8:0:0::1]", RULES_OK, RULES_HOST_IPV6, "[2001:db8::1]" },
	{ "[::ffff:127.0.0.1]", RULES_OK, RULES_HOST_IPV6,
	    "[::ffff:127.0.0.1]" },
	{ "::1", RULES_ERR_IPV6_BRACKETS, 0, "" },
	{ "2001:db8::1", RULES_ERR_IPV6_BRACKETS, 0, "" },
	{ "[fe80::1%eth0]", RULES_ERR_ZONE_ID, 0, "" },
	{ "[fe80::1%25eth0]", RULES_ERR_ZONE_ID, 0, "" },
	{ "fe80::1%eth0", RULES_ERR_ZONE_ID, 0, "" },
	{ "[::1", RULES_ERR_IPV6_FORM, 0, "" },
	{ "[]", RULES_ERR_IPV6_FORM, 0, "" },
	{ "[1.2.3.4]", RULES_ERR_IPV6_FORM, 0, "" },
	{ "[example.com]", RULES_ERR_IPV6_FORM, 0, "" },
	{ "[::1::2]", RULES_ERR_IPV6_FORM, 0, "" },
};

struct hostport_case {
	const char	*in;
	int		 err;
	const char	*canon;
	unsigned int	 port;
};

static const struct hostport_case hostport_cases[] = {
	{ "example.com", RULES_OK, "example.com", 443 },
	{ "example.com:80", RULES_OK, "example.com", 80 },
	{ "EXAMPLE.com.:8080", RULES_OK, "example.com", 8080 },
	{ "[::1]:22", RULES_OK, "[::1]", 22 },
	{ "[::1]", RULES_OK, "[::1]", 443 },
	{ "1.2.3.4:65535", RULES_OK, "1.2.3.4", 65535 },
	{ "example.com:", RULES_ERR_PORT, "", 0 },
	{ "example.com:0", RULES_ERR_PORT, "", 0 },
	{ "example.com:65536", RULES_ERR_PORT, "", 0 },
	{ "example.com:080", RULES_ERR_PORT, "", 0 },
	{ "example.com:+80", RULES_ERR_PORT, "", 0 },
	{ "example.com:80,443", RULES_ERR_PORT, "", 0 },
	{ "example.com:http", RULES_ERR_PORT, "", 0 },
	{ "[::1]x", RULES_ERR_IPV6_FORM, "", 0 },
	{ "::1:443", RULES_ERR_IPV6_BRACKETS, "", 0 },
	{ "127.1:443", RULES_ERR_IPV4_FORM, "", 0 },
};

static void
test_hosts(void)
{
	const struct host_case *c;
	struct rules_host h;
	size_t i;
	int r;

	for (i = 0; i < sizeof(host_cases) / sizeof(host_cases[0]); i++) {
		c = &host_cases[i];
		r = rules_host_parse(c->in, strlen(c->in), &h);
		if (c->err != RULES_OK) {
			tap_ok(r == c->err && h.len == 0 && h.text[0] == '\0',
			    "host '%s' refused: %s (got: %s)", c->in,
			    rules_strerror(c->err), rules_strerror(r));
			continue;
		}
		tap_ok(r == RULES_OK && (int)h.kind == c->kind &&
		    strcmp(h.text, c->canon) == 0 && h.len == strlen(c->canon),
		    "host '%s' is '%s' (got %d '%s')", c->in, c->canon, r,
		    h.text);
	}
}

static void
test_lengths(void)
{
	struct rules_host h;
	char name[300];
	size_t i;

	/* A 63-byte label is fine, 64 is not. */
	memset(name, 'a', 63);
	memcpy(name + 63, ".example", 9);
	tap_is_int(rules_host_parse(name, strlen(name), &h), RULES_OK,
	    "63-byte label accepted");
	memset(name, 'a', 64);
	memcpy(name + 64, ".example", 9);
	tap_is_int(rules_host_parse(name, strlen(name), &h),
	    RULES_ERR_LABEL_LONG, "64-byte label refused");

	/* 253 bytes in all is fine (254 with the root dot), 254 is not. */
	for (i = 0; i < 253; i++)
		name[i] = (i % 2) ? '.' : 'a';
	name[252] = 'a';
	name[253] = '\0';
	tap_is_int(rules_host_parse(name, 253, &h), RULES_OK,
	    "253-byte name accepted");
	tap_is_int((long long)h.len, 253, "253-byte name kept whole");
	name[253] = '.';
	tap_is_int(rules_host_parse(name, 254, &h), RULES_OK,
	    "253-byte name with the root dot accepted");
	name[253] = 'a';
	name[252] = '.';
	tap_is_int(rules_host_parse(name, 254, &h), RULES_ERR_TOO_LONG,
	    "254-byte name refused");

	/* An embedded NUL is never a shorter name. */
	tap_ok(rules_host_parse("a.com\0.evil", 11, &h) != RULES_OK,
	    "embedded NUL refused");
}

static void
test_hostports(void)
{
	const struct hostport_case *c;
	struct rules_host h;
	uint16_t port;
	size_t i;
	int r;

	for (i = 0; i < sizeof(hostport_cases) / sizeof(hostport_cases[0]);
	    i++) {
		c = &hostport_cases[i];
		r = rules_hostport_parse(c->in, &h, &port, 443);
		if (c->err != RULES_OK)
			tap_ok(r == c->err && port == 0 && h.len == 0,
			    "'%s' refused: %s (got: %s)", c->in,
			    rules_strerror(c->err), rules_strerror(r));
		else
			tap_ok(r == RULES_OK && strcmp(h.text, c->canon) == 0 &&
			    port == c->port, "'%s' is %s port %u (got %s %u)",
			    c->in, c->canon, c->port, h.text, port);
	}
}

static void
test_addrs(void)
{
	struct rules_addr a;
	const char *how;

	tap_is_int(rules_addr_parse("10.0.0.1", &a), RULES_OK, "addr v4");
	tap_is_int(a.family, AF_INET, "addr v4 family");
	tap_is_int(rules_addr_parse("fe80::1", &a), RULES_OK, "addr v6");
	tap_is_int(a.family, AF_INET6, "addr v6 family");
	tap_is_int(rules_addr_parse("fe80::1%eth0", &a), RULES_ERR_ZONE_ID,
	    "addr zone id refused");
	tap_is_int(rules_addr_parse("10.1", &a), RULES_ERR_IPV4_FORM,
	    "addr short v4 refused");
	tap_is_int(rules_addr_parse("", &a), RULES_ERR_IPV4_FORM,
	    "addr empty refused");

	rules_addr_parse("::ffff:10.0.0.1", &a);
	tap_is_str(rules_addr_class(&a, &how), "private", "mapped class");
	tap_is_str(how, "ipv4-mapped", "mapped embedding named");
	rules_addr_parse("64:ff9b::7f00:1", &a);
	tap_is_str(rules_addr_class(&a, &how), "loopback", "nat64 class");
	tap_is_str(how, "nat64", "nat64 embedding named");
	rules_addr_parse("2002:c0a8:101::", &a);
	tap_is_str(rules_addr_class(&a, &how), "private", "6to4 class");
	tap_is_str(how, "6to4", "6to4 embedding named");
	rules_addr_parse("2001:0:4136:e378:8000:63bf:3fff:fdd2", &a);
	tap_is_str(rules_addr_class(&a, &how), "documentation",
	    "teredo client address classified");
	tap_is_str(how, "teredo", "teredo embedding named");
	rules_addr_parse("2606:4700::1", &a);
	tap_is_str(rules_addr_class(&a, &how), "public", "public v6");
	tap_ok(how == NULL, "no embedding for plain v6");
	tap_ok(!rules_addr_is_internal(&a), "public v6 is not internal");
	rules_addr_parse("127.0.0.1", &a);
	tap_ok(rules_addr_is_internal(&a), "loopback is internal");
}

static void
test_strings(void)
{
	tap_ok(strstr(rules_strerror(RULES_ERR_NON_ASCII), "xn--") != NULL,
	    "non-ASCII error says to write xn--");
	tap_is_str(rules_strerror(1), "unknown error", "strerror of junk");
	tap_is_str(rules_strerror(-1000), "unknown error",
	    "strerror out of range");
	tap_is_str(rules_reason_str(RULES_REASON_NOT_ALLOWLISTED),
	    "not-allowlisted", "reason text");
	tap_is_str(rules_reason_str(RULES_REASON_INTERNAL_ADDRESS),
	    "internal-address", "reason text internal");
	tap_is_int(RULES_DENY, 0, "the zero verdict denies");
}

int
main(void)
{
	test_hosts();
	test_lengths();
	test_hostports();
	test_addrs();
	test_strings();
	return tap_done();
}
