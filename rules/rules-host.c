/*
 * rules-host.c — canonical hosts and ports (intutic-rules(5), CANONICAL
 * NAMES): one form of each, used for the decision, the dial and the log.
 *
 * One parser decides what a host is.  It is strict on purpose: the same text
 * must mean the same destination to the rules, the resolver and the log, so
 * every spelling that some resolver would read differently (inet_aton's
 * 127.1, 0x7f.0.0.1, 2130706433 and octal 017.0.0.1; IPv6 zone ids; non-ASCII
 * names) is refused rather than reinterpreted.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <string.h>

#include "rules.h"
#include "rules-int.h"

static const char *const rules_errors[] = {
	[0] = "ok",
	[-RULES_ERR_EMPTY] = "empty host",
	[-RULES_ERR_TOO_LONG] = "name longer than 253 bytes",
	[-RULES_ERR_LABEL_EMPTY] = "empty label (two dots in a row, or a leading dot)",
	[-RULES_ERR_LABEL_LONG] = "label longer than 63 bytes",
	[-RULES_ERR_LABEL_CHAR] = "character not allowed in a name (letters, digits, '-' and '.' only)",
	[-RULES_ERR_LABEL_HYPHEN] = "label starts or ends with '-'",
	[-RULES_ERR_NON_ASCII] = "non-ASCII name: write its A-label form (xn--...)",
	[-RULES_ERR_IPV4_FORM] = "not an IPv4 address in dotted-quad form: write four decimal numbers 0-255 without leading zeros",
	[-RULES_ERR_IPV6_FORM] = "not a valid IPv6 address",
	[-RULES_ERR_IPV6_BRACKETS] = "an IPv6 address must be written in brackets: [2001:db8::1]",
	[-RULES_ERR_ZONE_ID] = "IPv6 zone ids ('%...') are not allowed",
	[-RULES_ERR_PORT] = "port must be a decimal number from 1 to 65535",
	[-RULES_ERR_WILDCARD] = "a wildcard may only be a whole first label: '*.example.com' or '**.example.com'",
	[-RULES_ERR_WILDCARD_SHORT] = "a wildcard needs at least two labels after it ('*.example.com', not '*.com')",
	[-RULES_ERR_CIDR] = "not a CIDR block (address/prefix length)",
	[-RULES_ERR_CIDR_HOST_BITS] = "CIDR block has bits set beyond its prefix length",
	[-RULES_ERR_TOO_MANY_PORTS] = "too many ports (at most 64)",
	[-RULES_ERR_DUPLICATE_PORT] = "port listed twice",
	[-RULES_ERR_TOO_MANY_ENTRIES] = "too many entries (at most 1000000 in all files)",
	[-RULES_ERR_NOMEM] = "out of memory",
	[-RULES_ERR_WILDCARD_ALONE] = "a wildcard alone would allow every name: name a domain ('*.example.com')",
	[-RULES_ERR_CIDR_PREFIX] = "prefix length over 32 for IPv4 or over 128 for IPv6",
	[-RULES_ERR_MAPPED] = "an IPv4-mapped IPv6 address: write the IPv4 address itself",
};

const char *
rules_strerror(int err)
{
	if (err > 0 || (size_t)-err >= sizeof(rules_errors) / sizeof(rules_errors[0]) ||
	    rules_errors[-err] == NULL)
		return "unknown error";
	return rules_errors[-err];
}

static int
is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static int
is_hex_digit(unsigned char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/*
 * A label that some resolver would read as a number: all decimal digits, or
 * 0x followed by hex digits (inet_aton, WHATWG URL's IPv4 parser).
 */
static int
label_is_numeric(const char *s, size_t len)
{
	size_t i = 0;

	if (len == 0)
		return 0;
	if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		for (i = 2; i < len; i++)
			if (!is_hex_digit((unsigned char)s[i]))
				return 0;
		return 1;
	}
	for (i = 0; i < len; i++)
		if (!is_digit((unsigned char)s[i]))
			return 0;
	return 1;
}

/* Strict dotted quad: four decimal parts 0..255, no leading zeros. */
static int
parse_ipv4_strict(const char *s, size_t len, struct in_addr *out)
{
	uint32_t addr = 0;
	size_t i = 0, parts = 0;

	while (parts < 4) {
		unsigned int v = 0;
		size_t start = i;

		while (i < len && is_digit((unsigned char)s[i])) {
			v = v * 10 + (unsigned int)(s[i] - '0');
			if (v > 255)
				return RULES_ERR_IPV4_FORM;
			i++;
		}
		if (i == start || (i - start > 1 && s[start] == '0'))
			return RULES_ERR_IPV4_FORM;
		addr = (addr << 8) | v;
		parts++;
		if (parts < 4) {
			if (i >= len || s[i] != '.')
				return RULES_ERR_IPV4_FORM;
			i++;
		}
	}
	if (i != len)
		return RULES_ERR_IPV4_FORM;
	out->s_addr = htonl(addr);
	return RULES_OK;
}

static int
parse_ipv6(const char *s, size_t len, struct in6_addr *out)
{
	char buf[INET6_ADDRSTRLEN + 1];

	if (memchr(s, '%', len) != NULL)
		return RULES_ERR_ZONE_ID;
	if (len == 0 || len >= sizeof(buf))
		return RULES_ERR_IPV6_FORM;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET6, buf, out) != 1)
		return RULES_ERR_IPV6_FORM;
	return RULES_OK;
}

int
rules_name_check(const char *s, size_t len)
{
	size_t i, label = 0;

	if (len == 0)
		return RULES_ERR_EMPTY;
	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] >= 0x80)
			return RULES_ERR_NON_ASCII;
	if (len > RULES_NAME_MAX)
		return RULES_ERR_TOO_LONG;
	for (i = 0; i <= len; i++) {
		unsigned char c = i < len ? (unsigned char)s[i] : '.';

		if (c == '.') {
			if (i == label)
				return RULES_ERR_LABEL_EMPTY;
			if (i - label > RULES_LABEL_MAX)
				return RULES_ERR_LABEL_LONG;
			if (s[label] == '-' || s[i - 1] == '-')
				return RULES_ERR_LABEL_HYPHEN;
			label = i + 1;
		} else if (!(is_digit(c) || c == '-' ||
		    (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
			return RULES_ERR_LABEL_CHAR;
	}
	return RULES_OK;
}

int
rules_host_parse(const char *s, size_t len, struct rules_host *out)
{
	const char *last;
	size_t i, lastlen;
	int r;

	memset(out, 0, sizeof(*out));
	if (len == 0)
		return RULES_ERR_EMPTY;
	if (memchr(s, '\0', len) != NULL)
		return RULES_ERR_LABEL_CHAR;

	if (s[0] == '[') {
		if (len < 2 || s[len - 1] != ']')
			return RULES_ERR_IPV6_FORM;
		if ((r = parse_ipv6(s + 1, len - 2, &out->v6)) != RULES_OK)
			return r;
		out->kind = RULES_HOST_IPV6;
		out->text[0] = '[';
		inet_ntop(AF_INET6, &out->v6, out->text + 1,
		    sizeof(out->text) - 2);
		out->len = strlen(out->text);
		out->text[out->len++] = ']';
		out->text[out->len] = '\0';
		return RULES_OK;
	}
	if (memchr(s, ':', len) != NULL) {
		/* Looks like IPv6 (or a port glued on): brackets are required. */
		if (memchr(s, '%', len) != NULL)
			return RULES_ERR_ZONE_ID;
		return RULES_ERR_IPV6_BRACKETS;
	}

	/* One trailing dot is the root; it names the same host. */
	if (len > 1 && s[len - 1] == '.')
		len--;

	/* A numeric last label makes the whole host an IPv4 address. */
	for (i = len; i > 0 && s[i - 1] != '.'; i--)
		;
	last = s + i;
	lastlen = len - i;
	if (label_is_numeric(last, lastlen)) {
		if ((r = parse_ipv4_strict(s, len, &out->v4)) != RULES_OK) {
			memset(out, 0, sizeof(*out));
			return r;
		}
		out->kind = RULES_HOST_IPV4;
		inet_ntop(AF_INET, &out->v4, out->text, sizeof(out->text));
		out->len = strlen(out->text);
		return RULES_OK;
	}

	if ((r = rules_name_check(s, len)) != RULES_OK)
		return r;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		out->text[i] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : (char)c;
	}
	out->text[len] = '\0';
	out->len = len;
	out->kind = RULES_HOST_NAME;
	return RULES_OK;
}

int
rules_port_parse(const char *s, size_t len, uint16_t *port)
{
	unsigned long v = 0;
	size_t i;

	*port = 0;
	if (len == 0 || len > 5 || s[0] == '0')
		return RULES_ERR_PORT;
	for (i = 0; i < len; i++) {
		if (!is_digit((unsigned char)s[i]))
			return RULES_ERR_PORT;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v < 1 || v > 65535)
		return RULES_ERR_PORT;
	*port = (uint16_t)v;
	return RULES_OK;
}

/*
 * Splits "HOST[:PORT…]" or "[V6][:PORT…]" at the port separator.  Sets
 * *hostlen to the length of the host part and *ports to the text after the
 * colon (NULL when there is no port part).
 */
int
rules_split_port(const char *s, size_t len, size_t *hostlen,
    const char **ports, size_t *portslen)
{
	const char *colon;

	*ports = NULL;
	*portslen = 0;
	*hostlen = len;
	if (len > 0 && s[0] == '[') {
		const char *close = memchr(s, ']', len);

		if (close == NULL)
			return RULES_ERR_IPV6_FORM;
		*hostlen = (size_t)(close - s) + 1;
		if (*hostlen == len)
			return RULES_OK;
		if (s[*hostlen] != ':')
			return RULES_ERR_IPV6_FORM;
	} else {
		if ((colon = memchr(s, ':', len)) == NULL)
			return RULES_OK;
		if (memchr(colon + 1, ':', len - (size_t)(colon + 1 - s)) != NULL) {
			/* Two colons: an unbracketed IPv6 address. */
			if (memchr(s, '%', len) != NULL)
				return RULES_ERR_ZONE_ID;
			return RULES_ERR_IPV6_BRACKETS;
		}
		*hostlen = (size_t)(colon - s);
	}
	*ports = s + *hostlen + 1;
	*portslen = len - *hostlen - 1;
	return RULES_OK;
}

int
rules_hostport_parse(const char *s, struct rules_host *out, uint16_t *port,
    uint16_t default_port)
{
	const char *ports;
	size_t len = strlen(s), hostlen, portslen;
	int r;

	memset(out, 0, sizeof(*out));
	*port = 0;
	if ((r = rules_split_port(s, len, &hostlen, &ports, &portslen)) != 0)
		return r;
	if ((r = rules_host_parse(s, hostlen, out)) != RULES_OK)
		return r;
	if (ports == NULL) {
		*port = default_port;
		return RULES_OK;
	}
	if ((r = rules_port_parse(ports, portslen, port)) != RULES_OK)
		memset(out, 0, sizeof(*out));
	return r;
}

int
rules_addr_parse(const char *s, struct rules_addr *out)
{
	size_t len = strlen(s);
	int r;

	memset(out, 0, sizeof(*out));
	if (memchr(s, ':', len) != NULL) {
		if ((r = parse_ipv6(s, len, &out->v6)) != RULES_OK)
			return r;
		out->family = AF_INET6;
		return RULES_OK;
	}
	if ((r = parse_ipv4_strict(s, len, &out->v4)) != RULES_OK)
		return r;
	out->family = AF_INET;
	return RULES_OK;
}

/* ------------------------------------------------------ address classes */

struct addr_range {
	uint8_t		 addr[16];	/* network byte order; IPv4 in [0..3] */
	uint8_t		 plen;
	const char	*class;
};

/* The internal ranges (intutic-rules(5), ADDRESSES). */
static const struct addr_range ranges_v4[] = {
	{ { 0, 0, 0, 0 }, 8, "this-network" },
	{ { 10, 0, 0, 0 }, 8, "private" },
	{ { 100, 64, 0, 0 }, 10, "shared" },
	{ { 127, 0, 0, 0 }, 8, "loopback" },
	{ { 169, 254, 0, 0 }, 16, "link-local" },
	{ { 172, 16, 0, 0 }, 12, "private" },
	{ { 192, 0, 0, 0 }, 24, "ietf-protocol" },
	{ { 192, 0, 2, 0 }, 24, "documentation" },
	{ { 192, 168, 0, 0 }, 16, "private" },
	{ { 198, 18, 0, 0 }, 15, "benchmarking" },
	{ { 198, 51, 100, 0 }, 24, "documentation" },
	{ { 203, 0, 113, 0 }, 24, "documentation" },
	{ { 224, 0, 0, 0 }, 4, "multicast" },
	{ { 240, 0, 0, 0 }, 4, "reserved" },
};

static const struct addr_range ranges_v6[] = {
	{ { 0 }, 128, "unspecified" },
	{ { [15] = 1 }, 128, "loopback" },
	/* Deprecated IPv4-compatible addresses (::a.b.c.d): refused, since
	 * some stacks still route them as IPv4. */
	{ { 0 }, 96, "ipv4-compatible" },
	{ { 0xfc }, 7, "unique-local" },
	{ { 0xfe, 0x80 }, 10, "link-local" },
	{ { 0xff }, 8, "multicast" },
	{ { 0x01, 0x00 }, 64, "discard" },
	{ { 0x20, 0x01, 0x0d, 0xb8 }, 32, "documentation" },
	/* Not among the well-known ones, refused all the same (fail closed):
	 * local-use NAT64 (RFC 8215), whose IPv4 position varies. */
	{ { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 }, 48, "nat64-local" },
};

int
rules_prefix_match(const uint8_t *a, const uint8_t *net, unsigned int plen)
{
	unsigned int full = plen / 8, rest = plen % 8;

	if (memcmp(a, net, full) != 0)
		return 0;
	if (rest == 0)
		return 1;
	return ((a[full] ^ net[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

const char *
rules_class_v4(const uint8_t *a)
{
	size_t i;

	for (i = 0; i < sizeof(ranges_v4) / sizeof(ranges_v4[0]); i++)
		if (rules_prefix_match(a, ranges_v4[i].addr, ranges_v4[i].plen))
			return ranges_v4[i].class;
	return NULL;
}

int
rules_addr_embedded_v4(const struct in6_addr *a6, uint8_t v4[2][4],
    const char **how)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
	const uint8_t *b = a6->s6_addr;
	int i;

	if (memcmp(b, mapped, 12) == 0) {
		*how = "ipv4-mapped";
		memcpy(v4[0], b + 12, 4);
		return 1;
	}
	if (memcmp(b, nat64, 12) == 0) {
		*how = "nat64";
		memcpy(v4[0], b + 12, 4);
		return 1;
	}
	if (b[0] == 0x20 && b[1] == 0x02) {
		*how = "6to4";
		memcpy(v4[0], b + 2, 4);
		return 1;
	}
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) {
		/* Teredo carries the server's address and the client's,
		 * inverted; both are checked. */
		*how = "teredo";
		memcpy(v4[0], b + 4, 4);
		for (i = 0; i < 4; i++)
			v4[1][i] = (uint8_t)~b[12 + i];
		return 2;
	}
	*how = NULL;
	return 0;
}

const char *
rules_class_v6(const uint8_t *a)
{
	size_t i;

	for (i = 0; i < sizeof(ranges_v6) / sizeof(ranges_v6[0]); i++)
		if (rules_prefix_match(a, ranges_v6[i].addr, ranges_v6[i].plen))
			return ranges_v6[i].class;
	return NULL;
}

const char *
rules_addr_class(const struct rules_addr *a, const char **embedded)
{
	uint8_t v4[2][4];
	const char *how, *c;
	int n, k;

	if (embedded != NULL)
		*embedded = NULL;
	if (a->family == AF_INET) {
		c = rules_class_v4((const uint8_t *)&a->v4.s_addr);
		return c != NULL ? c : "public";
	}
	if (a->family != AF_INET6)
		return "invalid";
	if ((n = rules_addr_embedded_v4(&a->v6, v4, &how)) > 0) {
		if (embedded != NULL)
			*embedded = how;
		for (k = 0; k < n; k++)
			if ((c = rules_class_v4(v4[k])) != NULL)
				return c;
		return "public";
	}
	c = rules_class_v6(a->v6.s6_addr);
	return c != NULL ? c : "public";
}

int
rules_addr_is_internal(const struct rules_addr *a)
{
	return strcmp(rules_addr_class(a, NULL), "public") != 0;
}
