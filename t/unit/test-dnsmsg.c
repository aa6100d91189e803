/*
 * test-dnsmsg.c — the DNS query reader and answer writer: queries built
 * here field by field, good ones and each defect the reader must name, cut
 * at every byte; answers read back field by field.
 *
 * Every parse runs on a copy of exactly the bytes given, so a read past
 * the end is caught by ASan (the build's sanitizers) or valgrind.
 */
#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dnsmsg.h"
#include "bld.h"
#include "tap.h"

#define RESULT_MAX	160	/* bytes of "verdict: why" */
#define NAME_253 \
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa." \
	"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb." \
	"ccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc." \
	"ddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
#define LABEL_63 \
	"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk"

#define ID		0x1234
#define RD		DNSMSG_FLAG_RD
#define CLASS_CH	3
#define OPT_COOKIE	10	/* EDNS option code (RFC 7873) */

/* A record an answer must hold, as the test reads it back. */
struct rr_view {
	uint16_t	 ptr;
	uint16_t	 type;
	uint16_t	 class;
	uint32_t	 ttl;
	uint16_t	 rdlen;
	const uint8_t	*rdata;
};

static struct bld	 t_msg;		/* scratch */

static void	 build_header(struct bld *, unsigned int, unsigned int,
		    unsigned int, unsigned int, unsigned int, unsigned int);
static void	 build_name(struct bld *, const char *);
static void	 build_opt(struct bld *, unsigned int, size_t);
static void	 build_query(struct bld *, unsigned int, const char *,
		    unsigned int, unsigned int);
static void	 build_counted(struct bld *, unsigned int, unsigned int,
		    unsigned int);
static uint16_t	 get_u16(const uint8_t *);
static int	 parse(const uint8_t *, size_t, struct dnsmsg_query *,
		    const char **);
static void	 result(char *, size_t, int, const struct dnsmsg_query *,
		    const char *);
static void	 expect(const struct bld *, const char *, const char *, ...)
		    __attribute__((__format__(__printf__, 3, 4)));
static void	 expect_name(const char *, const char *, int);
static int	 all_prefixes(const uint8_t *, size_t, size_t *);
static void	 test_plain(void);
static void	 test_names(void);
static void	 test_name_bytes(void);
static void	 test_header(void);
static void	 test_sections(void);
static void	 test_edns(void);
static void	 test_truncated(void);
static size_t	 answer_of(const struct bld *, struct dnsmsg_query *,
		    enum dnsmsg_rcode, const struct dnsmsg_rr *, size_t,
		    size_t, uint8_t *, size_t);
static void	 read_rr(const uint8_t *, struct rr_view *);
static void	 test_answer_empty(void);
static void	 test_answer_records(void);
static void	 test_answer_tc(void);
static void	 test_answer_limits(void);
static void	 test_strings(void);

/* ------------------------------------------------------------- helpers */

/* Starts b with a header: id, flags and the four counts. */
static void
build_header(struct bld *b, unsigned int id, unsigned int flags,
    unsigned int qd, unsigned int an, unsigned int ns, unsigned int ar)
{
	bld_reset(b);
	bld_u16(b, id);
	bld_u16(b, flags);
	bld_u16(b, qd);
	bld_u16(b, an);
	bld_u16(b, ns);
	bld_u16(b, ar);
}

/* The dotted name as labels and the root label; "" is the root. */
static void
build_name(struct bld *b, const char *name)
{
	const char	*dot;
	size_t		 l;

	while (*name != '\0') {
		dot = strchr(name, '.');
		l = dot != NULL ? (size_t)(dot - name) : strlen(name);
		bld_u8(b, (unsigned int)l);
		bld_mem(b, name, l);
		name += l;
		if (*name == '.')
			name++;
	}
	bld_u8(b, 0);
}

/* An OPT record of UDP payload size `size` and rdlen bytes of options. */
static void
build_opt(struct bld *b, unsigned int size, size_t rdlen)
{
	size_t	 i;

	bld_u8(b, 0);
	bld_u16(b, DNSMSG_TYPE_OPT);
	bld_u16(b, size);
	bld_u16(b, 0);		/* extended RCODE, version */
	bld_u16(b, 0x8000);	/* DO */
	bld_u16(b, (unsigned int)rdlen);
	if (rdlen >= 4) {
		bld_u16(b, OPT_COOKIE);
		bld_u16(b, (unsigned int)rdlen - 4);
		for (i = 4; i < rdlen; i++)
			bld_u8(b, 0xc0 + (unsigned int)i);
	} else
		for (i = 0; i < rdlen; i++)
			bld_u8(b, 0);
}

/* A query for name and type, class IN; with an OPT record when edns > 0. */
static void
build_query(struct bld *b, unsigned int flags, const char *name,
    unsigned int type, unsigned int edns)
{
	build_header(b, ID, flags, 1, 0, 0, edns > 0 ? 1 : 0);
	build_name(b, name);
	bld_u16(b, type);
	bld_u16(b, DNSMSG_CLASS_IN);
	if (edns > 0)
		build_opt(b, edns, 12);
}

/*
 * A query for a.example, type A, with QDCOUNT 1 and the other counts
 * given: the records they count are the caller's to append.
 */
static void
build_counted(struct bld *b, unsigned int an, unsigned int ns,
    unsigned int ar)
{
	build_header(b, ID, RD, 1, an, ns, ar);
	build_name(b, "a.example");
	bld_u16(b, DNSMSG_TYPE_A);
	bld_u16(b, DNSMSG_CLASS_IN);
}

static uint16_t
get_u16(const uint8_t *p)
{
	return (uint16_t)(((unsigned int)p[0] << 8) | p[1]);
}

/*
 * Parses a copy of p[0..n) held in exactly n bytes of heap, so a read past
 * the end is an error the sanitizers and valgrind report.
 */
static int
parse(const uint8_t *p, size_t n, struct dnsmsg_query *q, const char **why)
{
	uint8_t	*copy;
	int	 r;

	if ((copy = malloc(n > 0 ? n : 1)) == NULL) {
		tap_diag("out of memory");
		exit(1);
	}
	if (n > 0)
		memcpy(copy, p, n);
	r = dnsmsg_parse(copy, n, q, why);
	free(copy);
	return r;
}

/* "answer", "FORMERR: why", "drop: why": one string a point compares. */
static void
result(char *buf, size_t size, int r, const struct dnsmsg_query *q,
    const char *why)
{
	if (r == 0 && why == NULL)
		snprintf(buf, size, "answer");
	else if (r == 1)
		snprintf(buf, size, "%s: %s", dnsmsg_rcode_str(q->rcode),
		    why != NULL ? why : "(no why)");
	else if (r == -1)
		snprintf(buf, size, "drop: %s", why != NULL ? why : "(no why)");
	else
		snprintf(buf, size, "return %d, why %s", r,
		    why != NULL ? why : "unset");
}

/* One test point: the message in b parses to want. */
static void
expect(const struct bld *b, const char *want, const char *fmt, ...)
{
	struct dnsmsg_query	 q;
	const char		*why;
	char			 got[RESULT_MAX], desc[RESULT_MAX];
	va_list			 ap;
	int			 r;

	va_start(ap, fmt);
	vsnprintf(desc, sizeof(desc), fmt, ap);
	va_end(ap);
	r = parse(b->b, b->len, &q, &why);
	result(got, sizeof(got), r, &q, why);
	tap_is_str(got, want, "%s", desc);
}

/* A query for `sent` is answered, with name `want` and name_ok `ok`. */
static void
expect_name(const char *sent, const char *want, int ok)
{
	struct dnsmsg_query	 q;
	const char		*why;

	build_query(&t_msg, RD, sent, DNSMSG_TYPE_A, 0);
	tap_is_int(parse(t_msg.b, t_msg.len, &q, &why), 0,
	    "a %zu-byte name parses", strlen(sent));
	tap_is_str(q.name, want, "its name is %.20s%s", want,
	    strlen(want) > 20 ? "..." : "");
	tap_is_int(q.name_ok, ok, "name_ok %d", ok);
}

/*
 * Each strict prefix of p[0..n) is dropped under the header's 12 bytes and
 * FORMERR from there on.  Returns 1, or 0 with *bad the first that was not.
 */
static int
all_prefixes(const uint8_t *p, size_t n, size_t *bad)
{
	struct dnsmsg_query	 q;
	size_t			 k;
	int			 r;

	for (k = 0; k < n; k++) {
		r = parse(p, k, &q, NULL);
		if (k < DNSMSG_HEADER ? r != -1 :
		    r != 1 || q.rcode != DNSMSG_FORMERR) {
			*bad = k;
			return 0;
		}
	}
	return 1;
}

/* ------------------------------------------------------------ queries */

static void
test_plain(void)
{
	struct dnsmsg_query	 q;
	const char		*why = "unset";
	static const struct {
		unsigned int	 type;
		unsigned int	 flags;
	} cases[] = {
		{ DNSMSG_TYPE_A, RD },
		{ DNSMSG_TYPE_AAAA, RD | 0x0010 },	/* and CD */
		{ DNSMSG_TYPE_HTTPS, 0 },
	};
	size_t			 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		build_query(&t_msg, cases[i].flags, "Api.Example.COM",
		    cases[i].type, 0);
		tap_is_int(parse(t_msg.b, t_msg.len, &q, &why), 0,
		    "type %u: a query to answer", cases[i].type);
		tap_is_str(why, NULL, "type %u: no why", cases[i].type);
		tap_is_int(q.id, ID, "type %u: id", cases[i].type);
		tap_is_int(q.flags, cases[i].flags, "type %u: flags as sent",
		    cases[i].type);
		tap_is_str(q.name, "Api.Example.COM",
		    "type %u: name, case kept", cases[i].type);
		tap_ok(q.name_ok, "type %u: name_ok", cases[i].type);
		tap_is_int(q.qtype, cases[i].type, "type %u: qtype",
		    cases[i].type);
		tap_is_int(q.qclass, DNSMSG_CLASS_IN, "type %u: qclass IN",
		    cases[i].type);
		tap_is_int((long long)q.question_len, 17 + 4,
		    "type %u: question_len", cases[i].type);
		tap_ok(!q.edns && q.edns_size == 0, "type %u: no EDNS",
		    cases[i].type);
		tap_is_int(q.rcode, DNSMSG_NOERROR, "type %u: rcode NOERROR",
		    cases[i].type);
	}

	/* The root: the NS query of a priming resolver. */
	build_query(&t_msg, 0, "", DNSMSG_TYPE_NS, 0);
	tap_is_int(parse(t_msg.b, t_msg.len, &q, &why), 0, "the root parses");
	tap_ok(q.name[0] == '\0' && q.name_ok, "the root is \"\", name_ok");
	tap_is_int((long long)q.question_len, 5, "the root: question_len 5");
}

static void
test_names(void)
{
	static const char	 ptr[] = "\x03www\xc0\x0c";
	static const char	 big[] = NAME_253 "x";

	expect_name(LABEL_63 ".example", LABEL_63 ".example", 1);
	expect_name(NAME_253, NAME_253, 1);

	build_query(&t_msg, RD, "x" LABEL_63 ".example", DNSMSG_TYPE_A, 0);
	expect(&t_msg, "FORMERR: the question's name has a label of type 01 "
	    "or 10", "a 64-byte label is refused (its length is type 01)");
	build_query(&t_msg, RD, big, DNSMSG_TYPE_A, 0);
	expect(&t_msg, "FORMERR: the question's name is longer than 255 "
	    "bytes", "a 254-character name (256 bytes) is refused");

	/* Compression, other label types. */
	build_header(&t_msg, ID, RD, 1, 0, 0, 0);
	bld_mem(&t_msg, "\xc0\x0c\x00\x01\x00\x01", 6);
	expect(&t_msg, "FORMERR: the question's name is compressed",
	    "a pointer as the question's name");
	build_header(&t_msg, ID, RD, 1, 0, 0, 0);
	bld_mem(&t_msg, ptr, sizeof(ptr) - 1);
	bld_mem(&t_msg, "\x00\x01\x00\x01", 4);
	expect(&t_msg, "FORMERR: the question's name is compressed",
	    "a pointer after a label");
	build_header(&t_msg, ID, RD, 1, 0, 0, 0);
	bld_mem(&t_msg, "\x41\x01\x00\x00\x01\x00\x01", 7);
	expect(&t_msg, "FORMERR: the question's name has a label of type 01 "
	    "or 10", "an extended label (type 01)");
	build_header(&t_msg, ID, RD, 1, 0, 0, 0);
	bld_mem(&t_msg, "\x81x\x00\x00\x01\x00\x01", 7);
	expect(&t_msg, "FORMERR: the question's name has a label of type 01 "
	    "or 10", "a label of type 10");
}

/* Bytes a label may not hold as text; the query is answered all the same. */
static void
test_name_bytes(void)
{
	static const uint8_t	 bad[] = { 0x00, 0x20, 0x2e, 0x7f, 0x80, 0xff };
	struct dnsmsg_query	 q;
	size_t			 i;

	for (i = 0; i < sizeof(bad); i++) {
		build_header(&t_msg, ID, RD, 1, 0, 0, 0);
		bld_mem(&t_msg, "\x03" "a", 2);
		bld_u8(&t_msg, bad[i]);
		bld_mem(&t_msg, "b\x07" "example\x00\x00\x01\x00\x01", 14);
		tap_is_int(parse(t_msg.b, t_msg.len, &q, NULL), 0,
		    "a label holding 0x%02x is answered", bad[i]);
		tap_ok(!q.name_ok && q.name[0] == '\0',
		    "0x%02x: name_ok 0, name \"\"", bad[i]);
		tap_is_int((long long)q.question_len, 17,
		    "0x%02x: the question is read", bad[i]);
	}
	expect_name("!~.example", "!~.example", 1);
}

static void
test_header(void)
{
	struct dnsmsg_query	 q;
	const char		*why;

	build_query(&t_msg, DNSMSG_FLAG_QR | RD, "example.com", DNSMSG_TYPE_A,
	    0);
	expect(&t_msg, "drop: a response, not a query", "QR=1 is dropped");
	build_header(&t_msg, ID, DNSMSG_FLAG_QR | 0x7800, 9, 9, 9, 9);
	expect(&t_msg, "drop: a response, not a query",
	    "QR=1 is dropped before anything else is looked at");
	t_msg.len = 11;
	expect(&t_msg, "drop: shorter than a DNS header", "11 bytes");

	build_query(&t_msg, 2 << 11 | RD, "example.com", DNSMSG_TYPE_A, 0);
	expect(&t_msg, "NOTIMP: an opcode other than QUERY",
	    "opcode 2 (STATUS)");
	parse(t_msg.b, t_msg.len, &q, &why);
	tap_ok(q.id == ID && q.question_len == 0 && q.name[0] == '\0',
	    "opcode 2: id kept, the question not read");
	build_header(&t_msg, ID, 5 << 11, 0, 0, 0, 0);
	expect(&t_msg, "NOTIMP: an opcode other than QUERY",
	    "opcode 5 (UPDATE) with nothing after the header");

	/* Flags the reader does not judge. */
	build_query(&t_msg, RD | DNSMSG_FLAG_TC | 0x0040 | 0x0020 | 0x000f,
	    "example.com", DNSMSG_TYPE_A, 0);
	expect(&t_msg, "answer", "TC, Z, AD and an RCODE in a query are "
	    "ignored");

	/* The class is judged last. */
	build_header(&t_msg, ID, RD, 1, 0, 0, 0);
	build_name(&t_msg, "version.bind");
	bld_u16(&t_msg, DNSMSG_TYPE_TXT);
	bld_u16(&t_msg, CLASS_CH);
	expect(&t_msg, "NOTIMP: a class other than IN", "class CH");
	parse(t_msg.b, t_msg.len, &q, &why);
	tap_ok(q.question_len == 18 && strcmp(q.name, "version.bind") == 0 &&
	    q.qclass == CLASS_CH, "class CH: the question is read");
	bld_u8(&t_msg, 0);
	expect(&t_msg, "FORMERR: bytes after the last section",
	    "class CH and a byte after: FORMERR first");
}

static void
test_sections(void)
{
	struct dnsmsg_query	 q;
	const char		*why;

	build_header(&t_msg, ID, RD, 0, 0, 0, 0);
	expect(&t_msg, "FORMERR: QDCOUNT is not 1", "QDCOUNT 0");
	build_header(&t_msg, ID, RD, 2, 0, 0, 0);
	build_name(&t_msg, "a.example");
	bld_mem(&t_msg, "\x00\x01\x00\x01", 4);
	build_name(&t_msg, "b.example");
	bld_mem(&t_msg, "\x00\x01\x00\x01", 4);
	expect(&t_msg, "FORMERR: QDCOUNT is not 1", "QDCOUNT 2");

	build_counted(&t_msg, 1, 0, 0);
	bld_mem(&t_msg, "\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04"
	    "\x0a\x00\x00\x01", 16);
	expect(&t_msg, "FORMERR: answer records in a query", "ANCOUNT 1");
	parse(t_msg.b, t_msg.len, &q, &why);
	tap_ok(q.question_len == 15 && strcmp(q.name, "a.example") == 0,
	    "ANCOUNT 1: the question is read, for the answer to echo");
	t_msg.b[7] = 0;
	t_msg.b[9] = 1;
	expect(&t_msg, "FORMERR: authority records in a query", "NSCOUNT 1");

	build_counted(&t_msg, 0, 0, 2);
	build_opt(&t_msg, 1232, 0);
	build_opt(&t_msg, 1232, 0);
	expect(&t_msg, "FORMERR: more than one additional record",
	    "ARCOUNT 2");

	/* The one additional record must be an OPT. */
	build_counted(&t_msg, 0, 0, 1);
	bld_mem(&t_msg, "\x00\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04"
	    "\x0a\x00\x00\x01", 15);
	expect(&t_msg, "FORMERR: the additional record is not an OPT record",
	    "an A record as the additional record");
	build_counted(&t_msg, 0, 0, 1);
	bld_mem(&t_msg, "\x01x\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00",
	    13);
	expect(&t_msg, "FORMERR: the additional record's name is not the root",
	    "an OPT record with a name");
	build_counted(&t_msg, 0, 0, 1);
	expect(&t_msg, "FORMERR: the additional record is missing",
	    "ARCOUNT 1 and no record");

	/* Bytes after the last section. */
	build_query(&t_msg, RD, "a.example", DNSMSG_TYPE_A, 0);
	bld_u8(&t_msg, 0);
	expect(&t_msg, "FORMERR: bytes after the last section",
	    "a byte after the question");
	build_query(&t_msg, RD, "a.example", DNSMSG_TYPE_A, 1232);
	bld_mem(&t_msg, "\x00\x00", 2);
	expect(&t_msg, "FORMERR: bytes after the last section",
	    "two bytes after the OPT record");
}

static void
test_edns(void)
{
	static const struct {
		unsigned int	 size;
		unsigned int	 want;
	} sizes[] = {
		{ 1232, 1232 }, { 4096, 4096 }, { 65535, 65535 },
		{ 512, 512 }, { 511, 512 }, { 100, 512 }, { 0, 512 },
	};
	struct dnsmsg_query	 q;
	size_t			 i, rdlen;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		build_counted(&t_msg, 0, 0, 1);
		build_opt(&t_msg, sizes[i].size, 0);
		tap_is_int(parse(t_msg.b, t_msg.len, &q, NULL), 0,
		    "OPT of size %u parses", sizes[i].size);
		tap_ok(q.edns && q.edns_size == sizes[i].want,
		    "OPT of size %u: edns, edns_size %u (got %d, %u)",
		    sizes[i].size, sizes[i].want, q.edns, q.edns_size);
	}
	for (rdlen = 0; rdlen <= 40; rdlen += 8) {
		build_counted(&t_msg, 0, 0, 1);
		build_opt(&t_msg, 1232, rdlen);
		expect(&t_msg, "answer", "OPT with %zu bytes of options",
		    rdlen);
	}
	t_msg.len--;
	expect(&t_msg, "FORMERR: the OPT record's data runs past the message",
	    "OPT with one byte of its options missing");
	build_query(&t_msg, RD, "a.example", DNSMSG_TYPE_A, 1232);
	t_msg.len = DNSMSG_HEADER + 15 + 5;
	expect(&t_msg, "FORMERR: the additional record is truncated",
	    "OPT cut in its fixed part");
}

static void
test_truncated(void)
{
	static const struct {
		const char	*name;
		unsigned int	 type;
		unsigned int	 edns;
	} cases[] = {
		{ "api.example.com", DNSMSG_TYPE_A, 0 },
		{ "api.example.com", DNSMSG_TYPE_AAAA, 1232 },
		{ "", DNSMSG_TYPE_NS, 0 },
		{ NAME_253, DNSMSG_TYPE_HTTPS, 4096 },
	};
	size_t	 i, bad = 0;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		build_query(&t_msg, RD, cases[i].name, cases[i].type,
		    cases[i].edns);
		if (!tap_ok(all_prefixes(t_msg.b, t_msg.len, &bad),
		    "query %zu (%zu bytes): every prefix is dropped under 12 "
		    "bytes, FORMERR from 12", i, t_msg.len))
			tap_diag("prefix of %zu bytes", bad);
	}

	build_query(&t_msg, RD, "api.example.com", DNSMSG_TYPE_A, 1232);
	t_msg.len = DNSMSG_HEADER + 4;
	expect(&t_msg, "FORMERR: the question's name is truncated",
	    "cut in a label");
	t_msg.len = DNSMSG_HEADER + 16;
	expect(&t_msg, "FORMERR: the question's name is truncated",
	    "cut before the root label");
	t_msg.len = DNSMSG_HEADER + 17 + 3;
	expect(&t_msg, "FORMERR: the question ends before its type and class",
	    "cut in the class");
	t_msg.len = DNSMSG_HEADER + 17 + 4;
	expect(&t_msg, "FORMERR: the additional record is missing",
	    "cut after the question");
}

/* ------------------------------------------------------------ answers */

/* Parses b into *q (it must parse) and answers it into out. */
static size_t
answer_of(const struct bld *b, struct dnsmsg_query *q,
    enum dnsmsg_rcode rcode, const struct dnsmsg_rr *rrs, size_t n,
    size_t max, uint8_t *out, size_t outlen)
{
	if (parse(b->b, b->len, q, NULL) == -1) {
		tap_diag("bug in test: the query is dropped");
		exit(1);
	}
	return dnsmsg_answer(q, b->b, rcode, rrs, n, max, out, outlen);
}

/* The record at p, which must be in a buffer of at least 12 + rdlen. */
static void
read_rr(const uint8_t *p, struct rr_view *v)
{
	v->ptr = get_u16(p);
	v->type = get_u16(p + 2);
	v->class = get_u16(p + 4);
	v->ttl = (uint32_t)get_u16(p + 6) << 16 | get_u16(p + 8);
	v->rdlen = get_u16(p + 10);
	v->rdata = p + 12;
}

static void
test_answer_empty(void)
{
	struct dnsmsg_query	 q;
	uint8_t			 out[DNSMSG_ANSWER_MAX];
	size_t			 n, base;

	build_query(&t_msg, RD, "Api.Example.COM", DNSMSG_TYPE_A, 1232);
	n = answer_of(&t_msg, &q, DNSMSG_REFUSED, NULL, 0, DNSMSG_UDP_MAX,
	    out, sizeof(out));
	base = DNSMSG_HEADER + q.question_len;
	tap_is_int((long long)n, (long long)base,
	    "REFUSED: 12 bytes and the question, no OPT");
	tap_is_int(get_u16(out), ID, "REFUSED: the id echoed");
	tap_is_int(get_u16(out + 2), DNSMSG_FLAG_QR | DNSMSG_FLAG_RD |
	    DNSMSG_FLAG_RA | DNSMSG_REFUSED, "REFUSED: QR, RD, RA, rcode 5");
	tap_ok(get_u16(out + 4) == 1 && get_u16(out + 6) == 0 &&
	    get_u16(out + 8) == 0 && get_u16(out + 10) == 0,
	    "REFUSED: counts 1, 0, 0, 0");
	tap_ok(memcmp(out + DNSMSG_HEADER, t_msg.b + DNSMSG_HEADER,
	    q.question_len) == 0, "REFUSED: the question byte for byte, "
	    "case kept");
	tap_is_int(dnsmsg_parse(out, n, &q, NULL), -1,
	    "the answer is a response: dropped if sent back");

	/* Without RD, RD stays clear; an NXDOMAIN. */
	build_query(&t_msg, 0, "a.example", DNSMSG_TYPE_AAAA, 0);
	n = answer_of(&t_msg, &q, DNSMSG_NXDOMAIN, NULL, 0, DNSMSG_UDP_MAX,
	    out, sizeof(out));
	tap_is_int(get_u16(out + 2), DNSMSG_FLAG_QR | DNSMSG_FLAG_RA |
	    DNSMSG_NXDOMAIN, "no RD: QR, RA, rcode 3");

	/* A FORMERR without a question; a NOTIMP with one. */
	build_header(&t_msg, 0xbeef, RD, 1, 0, 0, 0);
	bld_mem(&t_msg, "\xc0\x0c\x00\x01\x00\x01", 6);
	n = answer_of(&t_msg, &q, DNSMSG_FORMERR, NULL, 0, DNSMSG_UDP_MAX, out,
	    sizeof(out));
	tap_ok(q.rcode == DNSMSG_FORMERR && n == DNSMSG_HEADER,
	    "FORMERR: the header alone");
	tap_ok(get_u16(out) == 0xbeef && get_u16(out + 2) == (DNSMSG_FLAG_QR |
	    DNSMSG_FLAG_RD | DNSMSG_FLAG_RA | DNSMSG_FORMERR) &&
	    get_u16(out + 4) == 0, "FORMERR: id, flags, QDCOUNT 0");
	build_query(&t_msg, RD | 2 << 11, "a.example", DNSMSG_TYPE_A, 0);
	n = answer_of(&t_msg, &q, DNSMSG_NOTIMP, NULL, 0, DNSMSG_UDP_MAX, out,
	    sizeof(out));
	tap_ok(q.rcode == DNSMSG_NOTIMP && n == DNSMSG_HEADER &&
	    get_u16(out + 2) == (DNSMSG_FLAG_QR | 2 << 11 | DNSMSG_FLAG_RD |
	    DNSMSG_FLAG_RA | DNSMSG_NOTIMP),
	    "NOTIMP for opcode 2: the opcode copied, no question");
}

static void
test_answer_records(void)
{
	static const struct dnsmsg_rr rrs[] = {
		{ DNSMSG_TYPE_A, 60, { 192, 0, 2, 1 } },
		{ DNSMSG_TYPE_A, 0x01020304, { 198, 51, 100, 7 } },
		{ DNSMSG_TYPE_AAAA, 300, { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
		    0, 0, 0, 0, 0, 0, 0, 0x01 } },
	};
	struct dnsmsg_rr	 many[DNSMSG_ANSWERS_MAX];
	struct dnsmsg_query	 q;
	struct rr_view		 v;
	uint8_t			 out[DNSMSG_ANSWER_MAX];
	const uint8_t		*p;
	size_t			 n, i, rdlen;
	int			 ok = 1;

	build_query(&t_msg, RD, "Api.Example.COM", DNSMSG_TYPE_A, 1232);
	n = answer_of(&t_msg, &q, DNSMSG_NOERROR, rrs, 3, DNSMSG_UDP_MAX,
	    out, sizeof(out));
	tap_is_int((long long)n, (long long)(DNSMSG_HEADER + q.question_len +
	    2 * DNSMSG_RR_A + DNSMSG_RR_AAAA), "2 A and 1 AAAA: length");
	tap_ok(get_u16(out) == ID && get_u16(out + 2) == (DNSMSG_FLAG_QR |
	    DNSMSG_FLAG_RD | DNSMSG_FLAG_RA), "2 A and 1 AAAA: id, flags");
	tap_ok(get_u16(out + 4) == 1 && get_u16(out + 6) == 3 &&
	    get_u16(out + 8) == 0 && get_u16(out + 10) == 0,
	    "2 A and 1 AAAA: counts 1, 3, 0, 0 (no OPT)");
	p = out + DNSMSG_HEADER + q.question_len;
	for (i = 0; i < 3; i++) {
		read_rr(p, &v);
		rdlen = rrs[i].type == DNSMSG_TYPE_A ? 4 : 16;
		tap_is_int(v.ptr, 0xc00c, "record %zu: named by 0xc00c", i);
		tap_is_int(v.type, rrs[i].type, "record %zu: type", i);
		tap_is_int(v.class, DNSMSG_CLASS_IN, "record %zu: class IN", i);
		tap_is_int(v.ttl, rrs[i].ttl, "record %zu: TTL", i);
		tap_is_int(v.rdlen, (long long)rdlen, "record %zu: RDLENGTH",
		    i);
		tap_ok(memcmp(v.rdata, rrs[i].addr, rdlen) == 0,
		    "record %zu: the address", i);
		p += 12 + rdlen;
	}
	tap_ok(p == out + n, "the records end the answer");

	/* As many as allowed, over TCP. */
	build_query(&t_msg, RD, NAME_253, DNSMSG_TYPE_AAAA, 0);
	memset(many, 0, sizeof(many));
	for (i = 0; i < DNSMSG_ANSWERS_MAX; i++) {
		many[i].type = DNSMSG_TYPE_AAAA;
		many[i].ttl = (uint32_t)i;
		many[i].addr[15] = (uint8_t)i;
	}
	n = answer_of(&t_msg, &q, DNSMSG_NOERROR, many, DNSMSG_ANSWERS_MAX,
	    DNSMSG_TCP_MAX, out, sizeof(out));
	tap_is_int((long long)n, DNSMSG_ANSWER_MAX, "%d AAAA records for a "
	    "253-character name: DNSMSG_ANSWER_MAX bytes", DNSMSG_ANSWERS_MAX);
	p = out + DNSMSG_HEADER + q.question_len;
	for (i = 0; i < DNSMSG_ANSWERS_MAX; i++, p += DNSMSG_RR_AAAA) {
		read_rr(p, &v);
		if (v.ptr != 0xc00c || v.ttl != i || v.rdata[15] != i)
			ok = 0;
	}
	tap_ok(ok, "each in its place");
}

static void
test_answer_tc(void)
{
	struct dnsmsg_rr	 rrs[DNSMSG_ANSWERS_MAX];
	struct dnsmsg_query	 q;
	uint8_t			 out[DNSMSG_ANSWER_MAX];
	size_t			 n, i, base, all;
	uint16_t		 edns;

	for (i = 0; i < DNSMSG_ANSWERS_MAX; i++) {
		memset(&rrs[i], 0, sizeof(rrs[i]));
		rrs[i].type = DNSMSG_TYPE_AAAA;
		rrs[i].ttl = 30;
	}
	build_query(&t_msg, RD, "a.example", DNSMSG_TYPE_AAAA, 600);
	n = answer_of(&t_msg, &q, DNSMSG_NOERROR, rrs, DNSMSG_ANSWERS_MAX,
	    DNSMSG_UDP_MAX, out, sizeof(out));
	base = DNSMSG_HEADER + q.question_len;
	all = base + DNSMSG_ANSWERS_MAX * DNSMSG_RR_AAAA;
	tap_is_int((long long)n, (long long)base,
	    "%zu bytes of records over 512: header and question only", all);
	tap_ok(get_u16(out + 2) == (DNSMSG_FLAG_QR | DNSMSG_FLAG_RD |
	    DNSMSG_FLAG_RA | DNSMSG_FLAG_TC) && get_u16(out + 6) == 0,
	    "over 512: TC set, ANCOUNT 0");
	edns = q.edns_size;
	tap_is_int(edns, 600, "the client's EDNS size");

	n = answer_of(&t_msg, &q, DNSMSG_NOERROR, rrs, DNSMSG_ANSWERS_MAX,
	    edns, out, sizeof(out));
	tap_ok(n == base && (get_u16(out + 2) & DNSMSG_FLAG_TC) != 0,
	    "over the client's EDNS size (600): TC");
	n = answer_of(&t_msg, &q, DNSMSG_NOERROR, rrs, 16, edns, out,
	    sizeof(out));
	tap_ok(n == base + 16 * DNSMSG_RR_AAAA &&
	    (get_u16(out + 2) & DNSMSG_FLAG_TC) == 0 && get_u16(out + 6) == 16,
	    "16 AAAA within the EDNS size of 600: all of them, no TC");

	/* The edge: exactly max fits, a byte less does not. */
	n = answer_of(&t_msg, &q, DNSMSG_NOERROR, rrs, DNSMSG_ANSWERS_MAX,
	    all, out, sizeof(out));
	tap_ok(n == all && (get_u16(out + 2) & DNSMSG_FLAG_TC) == 0,
	    "max of exactly the answer's length: no TC");
	n = answer_of(&t_msg, &q, DNSMSG_NOERROR, rrs, DNSMSG_ANSWERS_MAX,
	    all - 1, out, sizeof(out));
	tap_ok(n == base && (get_u16(out + 2) & DNSMSG_FLAG_TC) != 0,
	    "max a byte short: TC");
	n = answer_of(&t_msg, &q, DNSMSG_NOERROR, rrs, DNSMSG_ANSWERS_MAX,
	    DNSMSG_TCP_MAX, out, all - 1);
	tap_ok(n == base && (get_u16(out + 2) & DNSMSG_FLAG_TC) != 0,
	    "outlen a byte short: TC");
}

static void
test_answer_limits(void)
{
	static const struct dnsmsg_rr mx = { DNSMSG_TYPE_MX, 60, { 0 } };
	struct dnsmsg_rr	 rrs[DNSMSG_ANSWERS_MAX + 1];
	struct dnsmsg_query	 q;
	uint8_t			 out[DNSMSG_ANSWER_MAX];
	size_t			 n, i, base;
	int			 untouched = 1;

	memset(rrs, 0, sizeof(rrs));
	for (i = 0; i < DNSMSG_ANSWERS_MAX + 1; i++)
		rrs[i].type = DNSMSG_TYPE_A;
	build_query(&t_msg, RD, "a.example", DNSMSG_TYPE_A, 0);
	base = DNSMSG_HEADER + 15;
	memset(out, 0xa5, sizeof(out));
	n = answer_of(&t_msg, &q, DNSMSG_NOERROR, rrs, 1, DNSMSG_UDP_MAX,
	    out, base - 1);
	for (i = 0; i < sizeof(out); i++)
		if (out[i] != 0xa5)
			untouched = 0;
	tap_ok(n == 0 && untouched, "outlen short of the question: 0, "
	    "nothing written");
	n = answer_of(&t_msg, &q, DNSMSG_NOERROR, rrs, 1, DNSMSG_UDP_MAX,
	    out, base);
	tap_ok(n == base && (get_u16(out + 2) & DNSMSG_FLAG_TC) != 0,
	    "outlen of the question alone: the question and TC");
	n = answer_of(&t_msg, &q, DNSMSG_NOERROR, rrs, 1, base - 1, out,
	    sizeof(out));
	tap_is_int((long long)n, 0, "max short of the question: 0");

	n = answer_of(&t_msg, &q, DNSMSG_NOERROR, rrs, DNSMSG_ANSWERS_MAX + 1,
	    DNSMSG_TCP_MAX, out, sizeof(out));
	tap_is_int((long long)n, 0, "%d records: 0", DNSMSG_ANSWERS_MAX + 1);
	n = answer_of(&t_msg, &q, DNSMSG_NOERROR, &mx, 1, DNSMSG_UDP_MAX, out,
	    sizeof(out));
	tap_is_int((long long)n, 0, "an MX record: 0");
	build_header(&t_msg, ID, RD, 0, 0, 0, 0);
	n = answer_of(&t_msg, &q, DNSMSG_NOERROR, rrs, 1, DNSMSG_UDP_MAX, out,
	    sizeof(out));
	tap_is_int((long long)n, 0, "a record and no question: 0");
}

static void
test_strings(void)
{
	char	 buf[DNSMSG_TYPE_STR_MAX], small[4];

	tap_is_str(dnsmsg_type_str(DNSMSG_TYPE_A, buf, sizeof(buf)), "A",
	    "type 1 is A");
	tap_is_str(dnsmsg_type_str(DNSMSG_TYPE_AAAA, buf, sizeof(buf)),
	    "AAAA", "type 28 is AAAA");
	tap_is_str(dnsmsg_type_str(DNSMSG_TYPE_HTTPS, buf, sizeof(buf)),
	    "HTTPS", "type 65 is HTTPS");
	tap_is_str(dnsmsg_type_str(DNSMSG_TYPE_ANY, buf, sizeof(buf)), "ANY",
	    "type 255 is ANY");
	tap_is_str(dnsmsg_type_str(123, buf, sizeof(buf)), "TYPE123",
	    "type 123 is TYPE123");
	tap_is_str(dnsmsg_type_str(65535, buf, sizeof(buf)), "TYPE65535",
	    "type 65535 fits DNSMSG_TYPE_STR_MAX");
	tap_is_str(dnsmsg_type_str(123, small, sizeof(small)), "TYP",
	    "a short buffer cuts the name");
	tap_is_str(dnsmsg_type_str(123, NULL, 0), "", "no buffer: \"\"");

	tap_is_str(dnsmsg_rcode_str(DNSMSG_NOERROR), "NOERROR", "rcode 0");
	tap_is_str(dnsmsg_rcode_str(DNSMSG_FORMERR), "FORMERR", "rcode 1");
	tap_is_str(dnsmsg_rcode_str(DNSMSG_SERVFAIL), "SERVFAIL", "rcode 2");
	tap_is_str(dnsmsg_rcode_str(DNSMSG_NXDOMAIN), "NXDOMAIN", "rcode 3");
	tap_is_str(dnsmsg_rcode_str(DNSMSG_NOTIMP), "NOTIMP", "rcode 4");
	tap_is_str(dnsmsg_rcode_str(DNSMSG_REFUSED), "REFUSED", "rcode 5");
}

int
main(void)
{
	test_plain();
	test_names();
	test_name_bytes();
	test_header();
	test_sections();
	test_edns();
	test_truncated();
	test_answer_empty();
	test_answer_records();
	test_answer_tc();
	test_answer_limits();
	test_strings();
	return tap_done();
}
