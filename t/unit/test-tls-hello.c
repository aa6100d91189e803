/*
 * test-tls-hello.c — the ClientHello reader: hellos captured from real
 * clients (t/data/tls/, how in its README.md), the same hellos cut at every
 * byte, re-framed and re-ordered; synthetic hellos with each fault the
 * reader must name; a few thousand mutations that must never crash it or
 * break its contract.
 *
 * Every parse runs on a copy of exactly the bytes given, so a read past
 * the end is caught by ASan (the build's sanitizers) or valgrind.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tls-hello.h"
#include "bld.h"
#include "tap.h"

#define FIXTURE_MAX	4096	/* bytes of a captured hello */
#define FIXTURE_SNI	"api.example.com"
#define EXTS_MAX	128	/* extensions reverse_exts() takes */
#define RANDOM_FRAMINGS	20	/* random framings per real hello */
#define MUTATIONS	1000	/* mutated inputs per real hello */
#define STREAMS		200	/* random streams of TLS_HELLO_MAX */
#define RESULT_MAX	160	/* bytes of "status: why" */

#define EXT_SUPPORTED_GROUPS	10
#define EXT_PADDING		21
#define EXT_SUPPORTED_VERSIONS	43
#define EXT_ECH			0xfe0d

/* The fields of a synthetic ClientHello body. */
struct body_spec {
	uint16_t	 version;
	size_t		 sid_len;
	size_t		 cs_len;	/* bytes of cipher_suites */
	size_t		 comp_len;	/* compression methods */
	int		 has_exts;	/* write an extensions block */
};

static const struct body_spec body_default = { 0x0303, 32, 4, 1, 1 };

/* A hello captured from a real client and what it must parse to. */
struct fixture {
	const char	*file;
	const char	*sni;		/* NULL: sent without one */
	int		 tls13;
	uint8_t		 data[FIXTURE_MAX];
	size_t		 len;
};

static struct fixture fixtures[] = {
	{ "openssl-sni.bin", FIXTURE_SNI, 1, { 0 }, 0 },
	{ "openssl-nosni.bin", NULL, 1, { 0 }, 0 },
	{ "openssl-tls12.bin", FIXTURE_SNI, 0, { 0 }, 0 },
	{ "curl.bin", FIXTURE_SNI, 1, { 0 }, 0 },
	{ "curl-tls12.bin", FIXTURE_SNI, 0, { 0 }, 0 },
	{ "python.bin", FIXTURE_SNI, 1, { 0 }, 0 },
};
#define NFIXTURES	(sizeof(fixtures) / sizeof(fixtures[0]))

/*
 * The length fields of the reference hello (build_reference()), in the
 * order it writes them, with what the reader must say when each is one too
 * long and one too short.  A shorter or longer field inside the hello is
 * often only seen at the next field, which is what the reason then names.
 * NULL: TLS_HELLO_MORE, the message may go on in a next record.
 */
struct lenfield {
	const char	*name;
	int		 width;
	int		 split;		/* in split records too */
	const char	*why_long;
	const char	*why_short;
};

static const struct lenfield lenfields[] = {
	{ "handshake length", 3, 0, NULL,
	    "data after the ClientHello in its record" },
	{ "session_id length", 1, 1, "session_id longer than 32 bytes",
	    "cipher_suites longer than the ClientHello" },
	{ "cipher_suites length", 2, 1, "odd cipher_suites length",
	    "odd cipher_suites length" },
	{ "compression_methods length", 1, 1,
	    "extensions longer than the ClientHello",
	    "no compression methods" },
	{ "extensions length", 2, 1, "extensions longer than the ClientHello",
	    "bytes after the extensions" },
	{ "server_name extension length", 2, 1,
	    "bytes after the server_name list",
	    "server_name list longer than the extension" },
	{ "server_name list length", 2, 1,
	    "server_name list longer than the extension",
	    "bytes after the server_name list" },
	{ "host_name length", 2, 1, "server_name entry longer than the list",
	    "server_name entry truncated" },
	{ "supported_versions extension length", 2, 1,
	    "extension longer than the extensions block",
	    "supported_versions list longer than the extension" },
	{ "supported_versions list length", 1, 1,
	    "supported_versions list longer than the extension",
	    "bytes after the supported_versions list" },
};
#define NLENFIELDS	(sizeof(lenfields) / sizeof(lenfields[0]))

static struct bld	 t_msg, t_rec, t_tmp, t_ext;	/* scratch */
static uint64_t		 rng_state = 0x5eed5eed12345678ULL;

static uint32_t		 rng(void);
static size_t		 rng_below(size_t);
static void		 ext_raw(struct bld *, unsigned int, const void *,
			    size_t);
static void		 ext_sni(struct bld *, const char *, size_t);
static void		 ext_versions(struct bld *, const uint16_t *,
			    size_t);
static void		 build_hello(struct bld *, const struct body_spec *,
			    const struct bld *);
static void		 build_default_exts(struct bld *);
static void		 build_reference(struct bld *, size_t *);
static void		 frame_record(struct bld *, unsigned int,
			    const uint8_t *, size_t);
static void		 frame(struct bld *, const uint8_t *, size_t,
			    size_t);
static void		 frame_random(struct bld *, const uint8_t *, size_t,
			    size_t);
static int		 unframe(const uint8_t *, size_t, struct bld *);
static int		 reverse_exts(const uint8_t *, size_t, struct bld *);
static enum tls_hello_status parse(const uint8_t *, size_t,
			    struct tls_hello *, const char **);
static void		 result(char *, size_t, enum tls_hello_status,
			    const char *);
static void		 expect(const uint8_t *, size_t,
			    enum tls_hello_status, const char *, const char *,
			    ...) __attribute__((__format__(__printf__, 5, 6)));
static void		 expect_hello(const char *, const struct body_spec *,
			    const struct bld *, enum tls_hello_status,
			    const char *);
static void		 expect_sni(const char *, const struct bld *,
			    const char *);
static int		 load_fixtures(void);
static void		 test_fixture(const struct fixture *);
static int		 all_prefixes_more(const uint8_t *, size_t, size_t *);
static void		 test_not_tls(void);
static void		 test_records(void);
static void		 test_body(void);
static void		 test_sni(void);
static void		 test_extensions(void);
static void		 test_lenfields(void);
static void		 build_padded(struct bld *, size_t);
static void		 test_limits(void);
static void		 test_contract(void);
static int		 check_contract(const uint8_t *, size_t, char *,
			    size_t);
static size_t		 mutate(uint8_t *, size_t, size_t);
static void		 test_fuzz(void);

/* ------------------------------------------------------------- helpers */

/* A 64-bit LCG (Knuth's MMIX constants): deterministic runs. */
static uint32_t
rng(void)
{
	rng_state = rng_state * 6364136223846793005ULL +
	    1442695040888963407ULL;
	return (uint32_t)(rng_state >> 33);
}

static size_t
rng_below(size_t n)
{
	return n == 0 ? 0 : rng() % n;
}

static void
ext_raw(struct bld *b, unsigned int type, const void *data, size_t n)
{
	bld_u16(b, type);
	bld_u16(b, (unsigned int)n);
	bld_mem(b, data, n);
}

/* server_name holding one host_name entry, name[0..n). */
static void
ext_sni(struct bld *b, const char *name, size_t n)
{
	size_t	 e, l;

	bld_u16(b, 0);
	e = bld_open(b, 2);
	l = bld_open(b, 2);
	bld_u8(b, 0);
	bld_u16(b, (unsigned int)n);
	bld_mem(b, name, n);
	bld_close(b, l, 2);
	bld_close(b, e, 2);
}

static void
ext_versions(struct bld *b, const uint16_t *v, size_t n)
{
	size_t	 e, l, i;

	bld_u16(b, EXT_SUPPORTED_VERSIONS);
	e = bld_open(b, 2);
	l = bld_open(b, 1);
	for (i = 0; i < n; i++)
		bld_u16(b, v[i]);
	bld_close(b, l, 1);
	bld_close(b, e, 2);
}

/*
 * Appends a ClientHello message, handshake header included, with the body
 * fields of s and, when s->has_exts, exts as its extensions block.
 */
static void
build_hello(struct bld *msg, const struct body_spec *s, const struct bld *exts)
{
	size_t	 hs, e, i;

	bld_u8(msg, 1);
	hs = bld_open(msg, 3);
	bld_u16(msg, s->version);
	for (i = 0; i < 32; i++)
		bld_u8(msg, 0xa0 + (unsigned int)i);
	bld_u8(msg, (unsigned int)s->sid_len);
	bld_fill(msg, 0xee, s->sid_len);
	bld_u16(msg, (unsigned int)s->cs_len);
	for (i = 0; i < s->cs_len; i++)
		bld_u8(msg, i % 2 == 0 ? 0x13 : 1 + (unsigned int)i / 2);
	bld_u8(msg, (unsigned int)s->comp_len);
	bld_fill(msg, 0, s->comp_len);
	if (s->has_exts) {
		e = bld_open(msg, 2);
		bld_mem(msg, exts->b, exts->len);
		bld_close(msg, e, 2);
	}
	bld_close(msg, hs, 3);
}

/* server_name FIXTURE_SNI, then supported_versions 1.3, 1.2. */
static void
build_default_exts(struct bld *b)
{
	static const uint16_t	 v[] = { 0x0304, 0x0303 };

	bld_reset(b);
	ext_sni(b, FIXTURE_SNI, strlen(FIXTURE_SNI));
	ext_versions(b, v, 2);
}

/*
 * The reference hello message of the length-field test: the default body
 * and extensions, written field by field so that off[] receives the offset
 * of each length field, in the order of lenfields[].
 */
static void
build_reference(struct bld *m, size_t *off)
{
	size_t	 hs, sid, cs, comp, exts, sni, list, name, sv, svl, i;

	bld_reset(m);
	bld_u8(m, 1);
	hs = bld_open(m, 3);
	bld_u16(m, 0x0303);
	for (i = 0; i < 32; i++)
		bld_u8(m, 0xa0 + (unsigned int)i);
	sid = bld_open(m, 1);
	bld_fill(m, 0xee, 32);
	bld_close(m, sid, 1);
	cs = bld_open(m, 2);
	bld_u16(m, 0x1301);
	bld_u16(m, 0x1302);
	bld_close(m, cs, 2);
	comp = bld_open(m, 1);
	bld_u8(m, 0);
	bld_close(m, comp, 1);
	exts = bld_open(m, 2);
	bld_u16(m, 0);
	sni = bld_open(m, 2);
	list = bld_open(m, 2);
	bld_u8(m, 0);
	name = bld_open(m, 2);
	bld_mem(m, FIXTURE_SNI, strlen(FIXTURE_SNI));
	bld_close(m, name, 2);
	bld_close(m, list, 2);
	bld_close(m, sni, 2);
	bld_u16(m, EXT_SUPPORTED_VERSIONS);
	sv = bld_open(m, 2);
	svl = bld_open(m, 1);
	bld_u16(m, 0x0304);
	bld_u16(m, 0x0303);
	bld_close(m, svl, 1);
	bld_close(m, sv, 2);
	bld_close(m, exts, 2);
	bld_close(m, hs, 3);

	off[0] = hs;
	off[1] = sid;
	off[2] = cs;
	off[3] = comp;
	off[4] = exts;
	off[5] = sni;
	off[6] = list;
	off[7] = name;
	off[8] = sv;
	off[9] = svl;
}

static void
frame_record(struct bld *out, unsigned int type, const uint8_t *p, size_t n)
{
	bld_u8(out, type);
	bld_u16(out, 0x0301);
	bld_u16(out, (unsigned int)n);
	bld_mem(out, p, n);
}

/* Appends msg[0..n) as handshake records of size bytes (0: one record). */
static void
frame(struct bld *out, const uint8_t *msg, size_t n, size_t size)
{
	size_t	 step;

	if (size == 0)
		size = n;
	while (n > 0) {
		step = n < size ? n : size;
		frame_record(out, 22, msg, step);
		msg += step;
		n -= step;
	}
}

/* The same with records of random sizes, 1..max bytes. */
static void
frame_random(struct bld *out, const uint8_t *msg, size_t n, size_t max)
{
	size_t	 step;

	while (n > 0) {
		step = 1 + rng_below(max);
		if (step > n)
			step = n;
		frame_record(out, 22, msg, step);
		msg += step;
		n -= step;
	}
}

/*
 * The test's own, trusting, record reader: the handshake bytes of the
 * records in p[0..n) into msg.  Returns 0, or -1 when p is not a run of
 * handshake records.
 */
static int
unframe(const uint8_t *p, size_t n, struct bld *msg)
{
	size_t	 rlen;

	bld_reset(msg);
	while (n > 0) {
		if (n < 5 || p[0] != 22)
			return -1;
		rlen = ((size_t)p[3] << 8) | p[4];
		if (rlen > n - 5)
			return -1;
		bld_mem(msg, p + 5, rlen);
		p += 5 + rlen;
		n -= 5 + rlen;
	}
	return 0;
}

/*
 * Copies the ClientHello message m[0..n) into out with its extensions in
 * reverse order.  Returns 0, or -1 when m does not split as expected.
 */
static int
reverse_exts(const uint8_t *m, size_t n, struct bld *out)
{
	size_t	 start[EXTS_MAX], elen[EXTS_MAX], next, p, i, k = 0;

	p = 4 + 2 + 32;
	if (p + 1 > n)
		return -1;
	p += 1 + m[p];
	if (p + 2 > n)
		return -1;
	p += 2 + (((size_t)m[p] << 8) | m[p + 1]);
	if (p + 1 > n)
		return -1;
	p += 1 + m[p];
	if (p + 2 > n)
		return -1;
	p += 2;
	for (next = p; next < n; next += elen[k++]) {
		if (k == EXTS_MAX || n - next < 4)
			return -1;
		start[k] = next;
		elen[k] = 4 + (((size_t)m[next + 2] << 8) | m[next + 3]);
		if (elen[k] > n - next)
			return -1;
	}
	bld_reset(out);
	bld_mem(out, m, p);
	for (i = k; i > 0; i--)
		bld_mem(out, m + start[i - 1], elen[i - 1]);
	return out->len == n ? 0 : -1;
}

/*
 * Parses a copy of p[0..n) held in exactly n bytes of heap, so a read past
 * the end is an error the sanitizers and valgrind report.
 */
static enum tls_hello_status
parse(const uint8_t *p, size_t n, struct tls_hello *h, const char **why)
{
	enum tls_hello_status	 st;
	uint8_t			*copy = NULL;

	if (n > 0) {
		if ((copy = malloc(n)) == NULL) {
			tap_diag("out of memory");
			exit(1);
		}
		memcpy(copy, p, n);
	}
	st = tls_hello_parse(copy, n, h, why);
	free(copy);
	return st;
}

/* "malformed: why", "ok", ...: one string a test point compares. */
static void
result(char *buf, size_t size, enum tls_hello_status st, const char *why)
{
	if (why != NULL)
		snprintf(buf, size, "%s: %s", tls_hello_status_str(st), why);
	else
		snprintf(buf, size, "%s", tls_hello_status_str(st));
}

/* One test point: p[0..n) parses to want (and want_why). */
static void
expect(const uint8_t *p, size_t n, enum tls_hello_status want,
    const char *want_why, const char *fmt, ...)
{
	struct tls_hello	 h;
	enum tls_hello_status	 st;
	const char		*why;
	char			 got[RESULT_MAX], exp[RESULT_MAX];
	char			 desc[RESULT_MAX];
	va_list			 ap;

	va_start(ap, fmt);
	vsnprintf(desc, sizeof(desc), fmt, ap);
	va_end(ap);
	st = parse(p, n, &h, &why);
	result(got, sizeof(got), st, why);
	result(exp, sizeof(exp), want, want_why);
	tap_is_str(got, exp, "%s", desc);
}

/* A synthetic hello in one record, then in one-byte records. */
static void
expect_hello(const char *desc, const struct body_spec *s,
    const struct bld *exts, enum tls_hello_status want, const char *want_why)
{
	bld_reset(&t_msg);
	build_hello(&t_msg, s, exts);
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 0);
	expect(t_rec.b, t_rec.len, want, want_why, "%s", desc);
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 1);
	expect(t_rec.b, t_rec.len, want, want_why, "%s, 1-byte records",
	    desc);
}

/* The default hello with extensions exts parses OK with SNI sni (or none). */
static void
expect_sni(const char *desc, const struct bld *exts, const char *sni)
{
	struct tls_hello	 h;
	const char		*why;
	enum tls_hello_status	 st;

	bld_reset(&t_msg);
	build_hello(&t_msg, &body_default, exts);
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 0);
	st = parse(t_rec.b, t_rec.len, &h, &why);
	if (!tap_is_str(tls_hello_status_str(st), "ok", "%s: ok", desc) &&
	    why != NULL)
		tap_diag("why: %s", why);
	if (sni == NULL)
		tap_ok(!h.has_sni && h.sni_len == 0 && h.sni[0] == '\0',
		    "%s: no SNI", desc);
	else {
		tap_ok(h.has_sni && h.sni_len == strlen(sni), "%s: has SNI",
		    desc);
		tap_is_str(h.sni, sni, "%s: SNI as sent", desc);
	}
}

/* ------------------------------------------------------- real hellos */

static int
load_fixtures(void)
{
	const char	*data = getenv("TEST_DATA");
	char		 path[4096];
	struct fixture	*f;
	FILE		*fp;
	size_t		 i;
	int		 ok = 1;

	if (data == NULL)
		data = "t/data";
	for (i = 0; i < NFIXTURES; i++) {
		f = &fixtures[i];
		snprintf(path, sizeof(path), "%s/tls/%s", data, f->file);
		if ((fp = fopen(path, "rb")) == NULL) {
			tap_diag("cannot open '%s': %s", path, strerror(errno));
			ok = 0;
			continue;
		}
		f->len = fread(f->data, 1, sizeof(f->data), fp);
		if (ferror(fp) || !feof(fp) || f->len == 0) {
			tap_diag("cannot read '%s' (or over %d bytes)", path,
			    FIXTURE_MAX);
			f->len = 0;
			ok = 0;
		}
		fclose(fp);
	}
	return ok;
}

/*
 * Every strict prefix of p[0..n) is TLS_HELLO_MORE.  Returns 1, or 0 with
 * *bad the first length that was not.
 */
static int
all_prefixes_more(const uint8_t *p, size_t n, size_t *bad)
{
	struct tls_hello	 h;
	size_t			 k;

	for (k = 0; k < n; k++) {
		if (parse(p, k, &h, NULL) != TLS_HELLO_MORE) {
			*bad = k;
			return 0;
		}
	}
	return 1;
}

static void
test_fixture(const struct fixture *f)
{
	struct tls_hello	 h;
	const char		*why, *name = f->file;
	enum tls_hello_status	 st;
	size_t			 bad = 0, i;
	int			 ok;

	if (f->len == 0) {
		tap_ok(0, "%s: fixture loaded", name);
		return;
	}

	/* As captured. */
	st = parse(f->data, f->len, &h, &why);
	tap_is_str(tls_hello_status_str(st), "ok", "%s: parses", name);
	if (why != NULL)
		tap_diag("why: %s", why);
	tap_is_int(h.has_sni, f->sni != NULL, "%s: has_sni", name);
	tap_is_str(h.has_sni ? h.sni : NULL, f->sni, "%s: SNI", name);
	tap_is_int((long long)h.sni_len, f->sni != NULL ?
	    (long long)strlen(f->sni) : 0, "%s: sni_len", name);
	tap_is_int(h.tls13, f->tls13, "%s: tls13", name);
	tap_is_int(h.legacy_version, 0x0303, "%s: legacy_version", name);
	tap_is_int(h.has_ech, 0, "%s: no ECH", name);
	tap_is_int((long long)h.consumed, (long long)f->len,
	    "%s: consumed is the whole capture", name);

	/* Cut at every byte: more until the last one. */
	ok = all_prefixes_more(f->data, f->len, &bad);
	tap_ok(ok, "%s: each of the %zu prefixes is 'more'", name, f->len);
	if (!ok)
		tap_diag("prefix of %zu bytes was not 'more'", bad);

	/* Followed by the next records: a ChangeCipherSpec, early data. */
	bld_reset(&t_rec);
	bld_mem(&t_rec, f->data, f->len);
	bld_mem(&t_rec, "\x14\x03\x03\x00\x01\x01", 6);
	bld_mem(&t_rec, "\x17\x03\x03\x00\x03xyz", 8);
	st = parse(t_rec.b, t_rec.len, &h, NULL);
	tap_ok(st == TLS_HELLO_OK && h.consumed == f->len,
	    "%s: records after the hello are not looked at", name);

	if (unframe(f->data, f->len, &t_msg) == -1) {
		tap_ok(0, "%s: the test's own reader splits the records",
		    name);
		return;
	}

	/* One record per byte of the handshake message. */
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 1);
	st = parse(t_rec.b, t_rec.len, &h, &why);
	tap_ok(st == TLS_HELLO_OK && h.consumed == t_rec.len &&
	    h.has_sni == (f->sni != NULL) && h.tls13 == f->tls13,
	    "%s: in %zu one-byte records", name, t_msg.len);
	if (why != NULL)
		tap_diag("why: %s", why);
	if (h.has_sni)
		tap_is_str(h.sni, f->sni, "%s: one-byte records: SNI", name);
	ok = all_prefixes_more(t_rec.b, t_rec.len, &bad);
	tap_ok(ok, "%s: one-byte records: each of the %zu prefixes is 'more'",
	    name, t_rec.len);
	if (!ok)
		tap_diag("prefix of %zu bytes was not 'more'", bad);

	/* Records of a few fixed sizes. */
	for (i = 2; i <= 256; i *= 4) {
		bld_reset(&t_rec);
		frame(&t_rec, t_msg.b, t_msg.len, i - 1);
		st = parse(t_rec.b, t_rec.len, &h, NULL);
		tap_ok(st == TLS_HELLO_OK && h.consumed == t_rec.len &&
		    h.has_sni == (f->sni != NULL) &&
		    (f->sni == NULL || strcmp(h.sni, f->sni) == 0),
		    "%s: in records of %zu bytes", name, i - 1);
	}

	/* Records of random sizes. */
	ok = 1;
	for (i = 0; i < RANDOM_FRAMINGS && ok; i++) {
		bld_reset(&t_rec);
		frame_random(&t_rec, t_msg.b, t_msg.len, 1 + rng_below(200));
		st = parse(t_rec.b, t_rec.len, &h, &why);
		ok = st == TLS_HELLO_OK && h.consumed == t_rec.len &&
		    h.has_sni == (f->sni != NULL) &&
		    (f->sni == NULL || strcmp(h.sni, f->sni) == 0);
		if (!ok)
			tap_diag("framing %zu: %s %s", i,
			    tls_hello_status_str(st), why != NULL ? why : "");
	}
	tap_ok(ok, "%s: in records of random sizes, %d framings", name,
	    RANDOM_FRAMINGS);
	ok = all_prefixes_more(t_rec.b, t_rec.len, &bad);
	tap_ok(ok, "%s: random records: each prefix is 'more'", name);

	/* Extensions in reverse order. */
	if (reverse_exts(t_msg.b, t_msg.len, &t_tmp) == -1) {
		tap_ok(0, "%s: the test's own reader splits the extensions",
		    name);
		return;
	}
	tap_ok(memcmp(t_tmp.b, t_msg.b, t_msg.len) != 0,
	    "%s: reversing the extensions changes the bytes", name);
	bld_reset(&t_rec);
	frame(&t_rec, t_tmp.b, t_tmp.len, 0);
	st = parse(t_rec.b, t_rec.len, &h, &why);
	tap_ok(st == TLS_HELLO_OK && h.has_sni == (f->sni != NULL) &&
	    (f->sni == NULL || strcmp(h.sni, f->sni) == 0) &&
	    h.tls13 == f->tls13 && h.consumed == t_rec.len,
	    "%s: extensions in reverse order", name);
	bld_reset(&t_rec);
	frame_random(&t_rec, t_tmp.b, t_tmp.len, 64);
	st = parse(t_rec.b, t_rec.len, &h, &why);
	tap_ok(st == TLS_HELLO_OK && h.has_sni == (f->sni != NULL) &&
	    h.tls13 == f->tls13, "%s: reversed, random records", name);

	/* The ClientHello must end with its record. */
	bld_reset(&t_tmp);
	bld_mem(&t_tmp, t_msg.b, t_msg.len);
	bld_mem(&t_tmp, "\x0b\x00\x00\x00", 4);
	bld_reset(&t_rec);
	frame(&t_rec, t_tmp.b, t_tmp.len, 0);
	expect(t_rec.b, t_rec.len, TLS_HELLO_MALFORMED,
	    "data after the ClientHello in its record",
	    "another handshake message in the hello's record");
}

/* ------------------------------------------------------ not TLS at all */

static void
test_not_tls(void)
{
	static const uint8_t	 sslv2[] = {
		0x80, 0x2e, 0x01, 0x03, 0x01, 0x00, 0x15, 0x00, 0x00, 0x00,
		0x10, 0x01, 0x00, 0x80, 0x03, 0x00, 0x80, 0x07, 0x00, 0xc0,
		0x06, 0x00, 0x40, 0x02, 0x00, 0x80, 0x04, 0x00, 0x80, 0x00,
		0x00, 0x39, 0x00, 0x00, 0x38, 0xde, 0xad, 0xbe, 0xef, 0xde,
		0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef, 0xde,
	};
	struct tls_hello	 h;
	const char		*why = "not cleared";
	enum tls_hello_status	 st;

	st = tls_hello_parse(NULL, 0, &h, &why);
	tap_ok(st == TLS_HELLO_MORE && why == NULL,
	    "empty buffer (NULL) is 'more'");
	expect((const uint8_t *)"\x16", 1, TLS_HELLO_MORE, NULL,
	    "one handshake byte is 'more'");
	expect((const uint8_t *)"\x16\x03", 2, TLS_HELLO_MORE, NULL,
	    "two bytes of a record header are 'more'");
	expect((const uint8_t *)"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27,
	    TLS_HELLO_NOT_TLS, NULL, "plain HTTP is not TLS");
	expect((const uint8_t *)"G", 1, TLS_HELLO_NOT_TLS, NULL,
	    "one byte of HTTP is enough to say not TLS");
	expect((const uint8_t *)"SSH-2.0-OpenSSH_9.2\r\n", 21,
	    TLS_HELLO_NOT_TLS, NULL, "an SSH banner is not TLS");
	expect((const uint8_t *)"\x15\x03\x03\x00\x02\x02\x28", 7,
	    TLS_HELLO_NOT_TLS, NULL, "an alert record first is not TLS");
	expect((const uint8_t *)"\x14\x03\x03\x00\x01\x01", 6,
	    TLS_HELLO_NOT_TLS, NULL,
	    "a ChangeCipherSpec record first is not TLS");
	expect((const uint8_t *)"\x17\x03\x03\x00\x03xyz", 8,
	    TLS_HELLO_NOT_TLS, NULL, "application data first is not TLS");
	expect((const uint8_t *)"\x00\x00\x00", 3, TLS_HELLO_NOT_TLS, NULL,
	    "NUL bytes are not TLS");

	expect(sslv2, sizeof(sslv2), TLS_HELLO_MALFORMED,
	    "SSLv2 hello not supported", "SSLv2-compatible ClientHello");
	expect(sslv2, 3, TLS_HELLO_MALFORMED, "SSLv2 hello not supported",
	    "SSLv2 hello, first 3 bytes");
	expect(sslv2, 2, TLS_HELLO_MORE, NULL,
	    "high bit set, 2 bytes: 'more' (SSLv2 or not)");
	expect((const uint8_t *)"\x80\x2e\x04\x00", 4, TLS_HELLO_NOT_TLS,
	    NULL, "high bit set, not a CLIENT-HELLO: not TLS");
	expect((const uint8_t *)"\xff\xfe\xfd", 3, TLS_HELLO_NOT_TLS, NULL,
	    "high bytes: not TLS");
}

/* ------------------------------------------------------- record layer */

static void
test_records(void)
{
	size_t	 n;

	expect((const uint8_t *)"\x16\x03\x01\x00\x00", 5,
	    TLS_HELLO_MALFORMED, "record length is 0", "record length 0");
	expect((const uint8_t *)"\x16\x03\x01\x40\x01", 5,
	    TLS_HELLO_MALFORMED, "record length over 16384",
	    "record length 16385, seen from the header alone");
	expect((const uint8_t *)"\x16\x03\x01\xff\xff", 5,
	    TLS_HELLO_MALFORMED, "record length over 16384",
	    "record length 65535");
	expect((const uint8_t *)"\x16\x02\x00", 3, TLS_HELLO_MALFORMED,
	    "record version is not 3.x", "record version 2.0");
	expect((const uint8_t *)"\x16\x04\x03\x00\x04", 5,
	    TLS_HELLO_MALFORMED, "record version is not 3.x",
	    "record version 4.3");
	expect((const uint8_t *)"\x16\x03\x01\x00\x04\x02\x00\x00\x00", 9,
	    TLS_HELLO_MALFORMED, "handshake is not a ClientHello",
	    "a ServerHello");
	expect((const uint8_t *)"\x16\x03\x01\x01\x00\x02", 6,
	    TLS_HELLO_MALFORMED, "handshake is not a ClientHello",
	    "the handshake type is judged before its record is complete");
	expect((const uint8_t *)"\x16\x03\x01\x00\x01\x01", 6,
	    TLS_HELLO_MORE, NULL, "one byte of a handshake header is 'more'");
	expect((const uint8_t *)"\x16\x03\x01\x00\x01\x0b", 6,
	    TLS_HELLO_MALFORMED, "handshake is not a ClientHello",
	    "a Certificate message, judged from its first byte");

	/* A ClientHello split over records: each must be a handshake one. */
	bld_reset(&t_ext);
	build_default_exts(&t_ext);
	bld_reset(&t_msg);
	build_hello(&t_msg, &body_default, &t_ext);
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, 10, 0);
	frame_record(&t_rec, 21, (const uint8_t *)"\x02\x28", 2);
	frame(&t_rec, t_msg.b + 10, t_msg.len - 10, 0);
	expect(t_rec.b, t_rec.len, TLS_HELLO_MALFORMED,
	    "non-handshake record inside the ClientHello",
	    "an alert between two records of the hello");
	expect(t_rec.b, 16, TLS_HELLO_MALFORMED,
	    "non-handshake record inside the ClientHello",
	    "the same, judged from the alert's first byte");
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, 10, 0);
	bld_mem(&t_rec, "\x16\x03\x03\x00\x00", 5);
	expect(t_rec.b, t_rec.len, TLS_HELLO_MALFORMED,
	    "record length is 0", "an empty second record");
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, 10, 0);
	bld_mem(&t_rec, "\x16\x00\x03", 3);
	expect(t_rec.b, t_rec.len, TLS_HELLO_MALFORMED,
	    "record version is not 3.x", "a second record of version 0.3");

	/*
	 * The record length, one too long and one too short.  Too long is
	 * seen at once: the record would hold more than the message.
	 */
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 0);
	n = t_rec.len;
	t_rec.b[4]++;
	expect(t_rec.b, n, TLS_HELLO_MALFORMED,
	    "data after the ClientHello in its record",
	    "record length one too long, record not complete");
	bld_u8(&t_rec, 0x42);
	expect(t_rec.b, t_rec.len, TLS_HELLO_MALFORMED,
	    "data after the ClientHello in its record",
	    "record length one too long, one more byte sent");
	expect(t_rec.b, 9, TLS_HELLO_MALFORMED,
	    "data after the ClientHello in its record",
	    "record length one too long, seen at the handshake header");
	t_rec.b[4] -= 2;
	expect(t_rec.b, n, TLS_HELLO_MALFORMED,
	    "non-handshake record inside the ClientHello",
	    "record length one too short: the last byte starts a record");
	t_rec.b[n - 1] = 22;
	expect(t_rec.b, n, TLS_HELLO_MORE, NULL,
	    "record length one too short, last byte 22: 'more'");

	/*
	 * The handshake length in one-byte records (in one record:
	 * test_lenfields()).  Too long: the message may go on in a next
	 * record.  Too short: the message ends at a record's end, a byte
	 * early, and its body does not add up.
	 */
	bld_put_be(t_msg.b + 1, t_msg.len - 4 + 1, 3);
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 1);
	expect(t_rec.b, t_rec.len, TLS_HELLO_MORE, NULL,
	    "handshake length one too long, 1-byte records: 'more'");
	bld_put_be(t_msg.b + 1, t_msg.len - 4 - 1, 3);
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 1);
	expect(t_rec.b, t_rec.len, TLS_HELLO_MALFORMED,
	    "extensions longer than the ClientHello",
	    "handshake length one too short, 1-byte records");
}

/* ---------------------------------------------------- ClientHello body */

static void
test_body(void)
{
	struct body_spec	 s;

	build_default_exts(&t_ext);
	expect_hello("the default synthetic hello", &body_default, &t_ext,
	    TLS_HELLO_OK, NULL);

	s = body_default;
	s.sid_len = 33;
	expect_hello("session_id of 33 bytes", &s, &t_ext,
	    TLS_HELLO_MALFORMED, "session_id longer than 32 bytes");
	s.sid_len = 0;
	expect_hello("empty session_id", &s, &t_ext, TLS_HELLO_OK, NULL);
	s = body_default;
	s.cs_len = 5;
	expect_hello("odd cipher_suites length", &s, &t_ext,
	    TLS_HELLO_MALFORMED, "odd cipher_suites length");
	s.cs_len = 0;
	expect_hello("no cipher suites", &s, &t_ext, TLS_HELLO_MALFORMED,
	    "no cipher suites");
	s.cs_len = 2;
	expect_hello("one cipher suite", &s, &t_ext, TLS_HELLO_OK, NULL);
	s = body_default;
	s.comp_len = 0;
	expect_hello("zero compression methods", &s, &t_ext,
	    TLS_HELLO_MALFORMED, "no compression methods");
	s.comp_len = 2;
	expect_hello("two compression methods", &s, &t_ext, TLS_HELLO_OK,
	    NULL);
	s = body_default;
	s.version = 0x0200;
	expect_hello("legacy_version 2.0", &s, &t_ext, TLS_HELLO_MALFORMED,
	    "legacy_version is not 3.x");
	s.version = 0x0301;
	expect_hello("legacy_version 3.1", &s, &t_ext, TLS_HELLO_OK, NULL);
	s = body_default;
	s.has_exts = 0;
	expect_hello("no extensions block at all", &s, &t_ext, TLS_HELLO_OK,
	    NULL);
	bld_reset(&t_tmp);
	expect_hello("an empty extensions block", &body_default, &t_tmp,
	    TLS_HELLO_OK, NULL);
	expect_sni("an empty extensions block", &t_tmp, NULL);

	/* Bodies cut short, the lengths around them kept consistent. */
	bld_reset(&t_msg);
	build_hello(&t_msg, &body_default, &t_ext);
	t_msg.len = 4 + 1;
	bld_put_be(t_msg.b + 1, 1, 3);
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 0);
	expect(t_rec.b, t_rec.len, TLS_HELLO_MALFORMED,
	    "ClientHello ends in legacy_version", "a body of one byte");
	bld_reset(&t_msg);
	build_hello(&t_msg, &body_default, &t_ext);
	t_msg.len = 4;
	bld_put_be(t_msg.b + 1, 0, 3);
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 0);
	expect(t_rec.b, t_rec.len, TLS_HELLO_MALFORMED,
	    "ClientHello ends in legacy_version", "an empty body");
	bld_reset(&t_msg);
	build_hello(&t_msg, &body_default, &t_ext);
	t_msg.len = 4 + 2 + 31;
	bld_put_be(t_msg.b + 1, t_msg.len - 4, 3);
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 0);
	expect(t_rec.b, t_rec.len, TLS_HELLO_MALFORMED,
	    "ClientHello ends in random", "a body ending in random");
	t_msg.len = 4 + 2 + 32;
	bld_put_be(t_msg.b + 1, t_msg.len - 4, 3);
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 0);
	expect(t_rec.b, t_rec.len, TLS_HELLO_MALFORMED,
	    "ClientHello ends before session_id",
	    "a body ending after random");
	t_msg.len = 4 + 2 + 32 + 1 + 32 + 1;
	bld_put_be(t_msg.b + 1, t_msg.len - 4, 3);
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 0);
	expect(t_rec.b, t_rec.len, TLS_HELLO_MALFORMED,
	    "ClientHello ends before cipher_suites",
	    "a body ending in the cipher_suites length");
	t_msg.len = 4 + 2 + 32 + 1 + 32 + 2 + 4;
	bld_put_be(t_msg.b + 1, t_msg.len - 4, 3);
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 0);
	expect(t_rec.b, t_rec.len, TLS_HELLO_MALFORMED,
	    "ClientHello ends before compression_methods",
	    "a body ending after cipher_suites");
	t_msg.len = 4 + 2 + 32 + 1 + 32 + 2 + 4 + 2 + 1;
	bld_put_be(t_msg.b + 1, t_msg.len - 4, 3);
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 0);
	expect(t_rec.b, t_rec.len, TLS_HELLO_MALFORMED,
	    "ClientHello ends in the extensions length",
	    "one byte of extensions length");
	s = body_default;
	s.sid_len = 20;
	bld_reset(&t_msg);
	build_hello(&t_msg, &s, &t_ext);
	t_msg.len = 4 + 2 + 32 + 1 + 10;
	bld_put_be(t_msg.b + 1, t_msg.len - 4, 3);
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 0);
	expect(t_rec.b, t_rec.len, TLS_HELLO_MALFORMED,
	    "session_id longer than the ClientHello",
	    "a body ending inside session_id");
	bld_reset(&t_msg);
	build_hello(&t_msg, &body_default, &t_ext);
	t_msg.len = 4 + 2 + 32 + 1 + 32 + 2 + 4 + 1;
	bld_put_be(t_msg.b + 1, t_msg.len - 4, 3);
	t_msg.b[t_msg.len - 1] = 2;
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 0);
	expect(t_rec.b, t_rec.len, TLS_HELLO_MALFORMED,
	    "compression_methods longer than the ClientHello",
	    "a body ending inside compression_methods");
}

/* ---------------------------------------------------------- server_name */

static void
test_sni(void)
{
	static const uint16_t	 v13[] = { 0x0304 };
	char			 name[300];
	size_t			 e, l;

	bld_reset(&t_ext);
	ext_sni(&t_ext, "API.Example.COM.", 16);
	expect_sni("SNI with capitals and a trailing dot", &t_ext,
	    "API.Example.COM.");
	bld_reset(&t_ext);
	ext_sni(&t_ext, "192.0.2.1", 9);
	expect_sni("SNI that is an IP literal (the caller refuses it)",
	    &t_ext, "192.0.2.1");
	bld_reset(&t_ext);
	ext_sni(&t_ext, "a", 1);
	expect_sni("one-byte SNI", &t_ext, "a");

	memset(name, 'a', sizeof(name));
	bld_reset(&t_ext);
	ext_sni(&t_ext, name, 255);
	name[255] = '\0';
	expect_sni("SNI of 255 bytes", &t_ext, name);
	bld_reset(&t_ext);
	ext_sni(&t_ext, name, 256);
	expect_hello("SNI of 256 bytes", &body_default, &t_ext,
	    TLS_HELLO_MALFORMED, "SNI longer than 255 bytes");

	bld_reset(&t_ext);
	ext_sni(&t_ext, "", 0);
	expect_hello("empty SNI", &body_default, &t_ext,
	    TLS_HELLO_MALFORMED, "SNI is an empty name");
	bld_reset(&t_ext);
	ext_sni(&t_ext, "api.example.com\0.evil", 21);
	expect_hello("NUL inside the SNI", &body_default, &t_ext,
	    TLS_HELLO_MALFORMED, "SNI contains a NUL byte");
	bld_reset(&t_ext);
	ext_sni(&t_ext, "b\xc3\xbc" "cher.example", 14);
	expect_hello("UTF-8 in the SNI", &body_default, &t_ext,
	    TLS_HELLO_MALFORMED, "SNI is not ASCII");
	bld_reset(&t_ext);
	ext_sni(&t_ext, "\xff", 1);
	expect_hello("byte 0xff as SNI", &body_default, &t_ext,
	    TLS_HELLO_MALFORMED, "SNI is not ASCII");
	bld_reset(&t_ext);
	ext_sni(&t_ext, "api example.com", 15);
	expect_hello("space in the SNI", &body_default, &t_ext,
	    TLS_HELLO_MALFORMED, "SNI contains a space or control character");
	bld_reset(&t_ext);
	ext_sni(&t_ext, "api.example.com\r\n", 17);
	expect_hello("CR LF in the SNI", &body_default, &t_ext,
	    TLS_HELLO_MALFORMED, "SNI contains a space or control character");
	bld_reset(&t_ext);
	ext_sni(&t_ext, "api\x7f", 4);
	expect_hello("DEL in the SNI", &body_default, &t_ext,
	    TLS_HELLO_MALFORMED, "SNI contains a space or control character");

	/* Two server_name extensions, two host_name entries. */
	bld_reset(&t_ext);
	ext_sni(&t_ext, "api.example.com", 15);
	ext_versions(&t_ext, v13, 1);
	ext_sni(&t_ext, "evil.example", 12);
	expect_hello("two server_name extensions", &body_default, &t_ext,
	    TLS_HELLO_MALFORMED, "duplicate server_name extension");
	bld_reset(&t_ext);
	bld_u16(&t_ext, 0);
	e = bld_open(&t_ext, 2);
	l = bld_open(&t_ext, 2);
	bld_u8(&t_ext, 0);
	bld_u16(&t_ext, 15);
	bld_mem(&t_ext, "api.example.com", 15);
	bld_u8(&t_ext, 0);
	bld_u16(&t_ext, 12);
	bld_mem(&t_ext, "evil.example", 12);
	bld_close(&t_ext, l, 2);
	bld_close(&t_ext, e, 2);
	expect_hello("two host_name entries", &body_default, &t_ext,
	    TLS_HELLO_MALFORMED, "two host_name entries");

	/* Other name types are skipped. */
	bld_reset(&t_ext);
	bld_u16(&t_ext, 0);
	e = bld_open(&t_ext, 2);
	l = bld_open(&t_ext, 2);
	bld_u8(&t_ext, 7);
	bld_u16(&t_ext, 3);
	bld_mem(&t_ext, "\x00\xff\x01", 3);
	bld_u8(&t_ext, 0);
	bld_u16(&t_ext, 15);
	bld_mem(&t_ext, "api.example.com", 15);
	bld_u8(&t_ext, 1);
	bld_u16(&t_ext, 0);
	bld_close(&t_ext, l, 2);
	bld_close(&t_ext, e, 2);
	expect_sni("host_name between entries of other types", &t_ext,
	    "api.example.com");
	bld_reset(&t_ext);
	ext_raw(&t_ext, 0, "\x00\x04\x05\x00\x01z", 6);
	expect_sni("server_name with no host_name entry", &t_ext, NULL);

	/* The list's own lengths. */
	bld_reset(&t_ext);
	ext_raw(&t_ext, 0, NULL, 0);
	expect_hello("empty server_name extension", &body_default, &t_ext,
	    TLS_HELLO_MALFORMED, "empty server_name extension");
	bld_reset(&t_ext);
	ext_raw(&t_ext, 0, "\x00", 1);
	expect_hello("server_name extension of one byte", &body_default,
	    &t_ext, TLS_HELLO_MALFORMED,
	    "server_name extension too short for its list length");
	bld_reset(&t_ext);
	ext_raw(&t_ext, 0, "\x00\x00", 2);
	expect_hello("empty server_name list", &body_default, &t_ext,
	    TLS_HELLO_MALFORMED, "empty server_name list");
	bld_reset(&t_ext);
	ext_raw(&t_ext, 0, "\x00\x02\x00\x00", 4);
	expect_hello("server_name entry cut in its length", &body_default,
	    &t_ext, TLS_HELLO_MALFORMED, "server_name entry truncated");
	bld_reset(&t_ext);
	ext_raw(&t_ext, 0, "\x00\x06\x00\x00\x05" "abc", 8);
	expect_hello("host_name longer than the list", &body_default,
	    &t_ext, TLS_HELLO_MALFORMED,
	    "server_name entry longer than the list");
}

/* --------------------------------------------------------- extensions */

static void
test_extensions(void)
{
	static const uint16_t	 v12[] = { 0x0303 };
	static const uint16_t	 vg[] = { 0x3a3a, 0x0304, 0x0303 };
	struct tls_hello	 h;
	enum tls_hello_status	 st;
	size_t			 i;

	bld_reset(&t_ext);
	ext_sni(&t_ext, "api.example.com", 15);
	ext_raw(&t_ext, EXT_SUPPORTED_GROUPS, "\x00\x02\x00\x1d", 4);
	ext_raw(&t_ext, EXT_SUPPORTED_GROUPS, "\x00\x02\x00\x17", 4);
	expect_hello("the same extension twice", &body_default, &t_ext,
	    TLS_HELLO_MALFORMED, "duplicate extension");
	bld_reset(&t_ext);
	ext_sni(&t_ext, "api.example.com", 15);
	bld_mem(&t_ext, "\x00\x0a\x00", 3);
	expect_hello("an extension header cut short", &body_default, &t_ext,
	    TLS_HELLO_MALFORMED, "extension header truncated");
	bld_reset(&t_ext);
	ext_sni(&t_ext, "api.example.com", 15);
	bld_mem(&t_ext, "\x00\x0a\x00\x09\x00\x02", 6);
	expect_hello("an extension longer than the block", &body_default,
	    &t_ext, TLS_HELLO_MALFORMED,
	    "extension longer than the extensions block");

	/* ECH: noted, and the SNI is the outer one. */
	bld_reset(&t_ext);
	ext_sni(&t_ext, "public.example.net", 18);
	ext_raw(&t_ext, EXT_ECH, "\x00\x00\x01\x00\x01\x2a\x00\x04" "abcd"
	    "\x00\x05" "efghi", 18);
	ext_versions(&t_ext, vg, 3);
	bld_reset(&t_msg);
	build_hello(&t_msg, &body_default, &t_ext);
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 0);
	st = parse(t_rec.b, t_rec.len, &h, NULL);
	tap_ok(st == TLS_HELLO_OK && h.has_ech && h.has_sni &&
	    strcmp(h.sni, "public.example.net") == 0 && h.tls13,
	    "ECH: has_ech, outer SNI, GREASE among the versions");
	bld_reset(&t_ext);
	ext_raw(&t_ext, EXT_ECH, "\x01", 1);
	ext_raw(&t_ext, EXT_ECH, "\x01", 1);
	expect_hello("two ECH extensions", &body_default, &t_ext,
	    TLS_HELLO_MALFORMED, "duplicate extension");

	/* supported_versions. */
	bld_reset(&t_ext);
	ext_versions(&t_ext, v12, 1);
	bld_reset(&t_msg);
	build_hello(&t_msg, &body_default, &t_ext);
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 0);
	st = parse(t_rec.b, t_rec.len, &h, NULL);
	tap_ok(st == TLS_HELLO_OK && !h.tls13 && !h.has_sni,
	    "supported_versions with 1.2 only: not tls13");
	bld_reset(&t_ext);
	ext_raw(&t_ext, EXT_SUPPORTED_VERSIONS, NULL, 0);
	expect_hello("empty supported_versions extension", &body_default,
	    &t_ext, TLS_HELLO_MALFORMED, "empty supported_versions extension");
	bld_reset(&t_ext);
	ext_raw(&t_ext, EXT_SUPPORTED_VERSIONS, "\x00", 1);
	expect_hello("empty supported_versions list", &body_default, &t_ext,
	    TLS_HELLO_MALFORMED, "empty supported_versions list");
	bld_reset(&t_ext);
	ext_raw(&t_ext, EXT_SUPPORTED_VERSIONS, "\x03\x03\x04\x03", 4);
	expect_hello("odd supported_versions list", &body_default, &t_ext,
	    TLS_HELLO_MALFORMED, "odd supported_versions length");
	bld_reset(&t_ext);
	ext_raw(&t_ext, EXT_SUPPORTED_VERSIONS, "\x03\x04", 2);
	expect_hello("supported_versions in its ServerHello form",
	    &body_default, &t_ext, TLS_HELLO_MALFORMED,
	    "supported_versions list longer than the extension");

	/* At most TLS_HELLO_EXTENSIONS_MAX extensions. */
	bld_reset(&t_ext);
	ext_sni(&t_ext, "api.example.com", 15);
	for (i = 1; i < TLS_HELLO_EXTENSIONS_MAX; i++)
		ext_raw(&t_ext, 0x1000 + (unsigned int)i, NULL, 0);
	expect_sni("64 extensions", &t_ext, "api.example.com");
	ext_raw(&t_ext, 0x2000, NULL, 0);
	expect_hello("65 extensions", &body_default, &t_ext,
	    TLS_HELLO_MALFORMED, "more than 64 extensions");
}

/* ------------------------------------------------- every length field */

static void
test_lenfields(void)
{
	struct tls_hello	 h;
	enum tls_hello_status	 st;
	const struct lenfield	*f;
	const char		*want;
	static const size_t	 framings[] = { 0, 1, 7 };
	static const char	*framing_names[] = { "any size", "1 byte",
				    "7 bytes" };
	size_t			 off[NLENFIELDS], i, v, j;
	int			 d, k;

	build_reference(&t_tmp, off);
	bld_reset(&t_rec);
	frame(&t_rec, t_tmp.b, t_tmp.len, 0);
	st = parse(t_rec.b, t_rec.len, &h, NULL);
	tap_ok(st == TLS_HELLO_OK && h.has_sni && h.tls13,
	    "the reference hello parses");

	for (i = 0; i < NLENFIELDS; i++) {
		f = &lenfields[i];
		for (d = -1; d <= 1; d += 2) {
			bld_reset(&t_msg);
			bld_mem(&t_msg, t_tmp.b, t_tmp.len);
			v = 0;
			for (j = 0; j < (size_t)f->width; j++)
				v = (v << 8) | t_msg.b[off[i] + j];
			bld_put_be(t_msg.b + off[i], d > 0 ? v + 1 : v - 1,
			    f->width);
			want = d > 0 ? f->why_long : f->why_short;
			/*
			 * In one record, in 1-byte records, in 7-byte ones
			 * (the handshake length in one record only: split,
			 * where the message ends decides what is seen).
			 */
			for (k = 0; k < (f->split ? 3 : 1); k++) {
				bld_reset(&t_rec);
				frame(&t_rec, t_msg.b, t_msg.len, framings[k]);
				expect(t_rec.b, t_rec.len, want == NULL ?
				    TLS_HELLO_MORE : TLS_HELLO_MALFORMED, want,
				    "%s one too %s, records of %s", f->name,
				    d > 0 ? "long" : "short", framing_names[k]);
			}
		}
	}
}

/* ---------------------------------------------------- TLS_HELLO_MAX */

/* A hello message of exactly total bytes, made to measure with padding. */
static void
build_padded(struct bld *msg, size_t total)
{
	size_t	 base;

	bld_reset(&t_ext);
	ext_sni(&t_ext, "api.example.com", 15);
	ext_raw(&t_ext, EXT_PADDING, NULL, 0);
	bld_reset(msg);
	build_hello(msg, &body_default, &t_ext);
	base = msg->len;
	if (total < base) {
		tap_diag("bug in test: padded hello under %zu bytes", base);
		exit(1);
	}
	bld_need(&t_ext, total - base);
	t_ext.len -= 4;
	bld_reset(&t_tmp);
	bld_fill(&t_tmp, 0, total - base);
	ext_raw(&t_ext, EXT_PADDING, t_tmp.b, t_tmp.len);
	bld_reset(msg);
	build_hello(msg, &body_default, &t_ext);
}

static void
test_limits(void)
{
	struct tls_hello	 h;
	enum tls_hello_status	 st;
	size_t			 bad = 0, n;
	uint8_t			 hdr[9];

	tap_is_int(TLS_HELLO_MAX, 16404, "TLS_HELLO_MAX is 16 KiB + 20");

	/* The largest hello that fits: 16384 + 10 bytes in two records. */
	build_padded(&t_msg, TLS_HELLO_MAX - 2 * 5);
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, TLS_HELLO_RECORD_MAX);
	tap_is_int((long long)t_rec.len, TLS_HELLO_MAX,
	    "the largest hello's records are TLS_HELLO_MAX bytes");
	st = parse(t_rec.b, t_rec.len, &h, NULL);
	tap_ok(st == TLS_HELLO_OK && h.consumed == TLS_HELLO_MAX &&
	    h.has_sni, "a hello whose records end at TLS_HELLO_MAX is ok");
	tap_ok(all_prefixes_more(t_rec.b, t_rec.len, &bad),
	    "each prefix of it is 'more'");

	/* One byte more does not fit: said without waiting for it. */
	build_padded(&t_msg, TLS_HELLO_MAX - 2 * 5 + 1);
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, TLS_HELLO_RECORD_MAX);
	expect(t_rec.b, t_rec.len, TLS_HELLO_MALFORMED,
	    "ClientHello too large", "records ending at TLS_HELLO_MAX + 1");
	expect(t_rec.b, TLS_HELLO_MAX, TLS_HELLO_MALFORMED,
	    "ClientHello too large", "the same, first TLS_HELLO_MAX bytes");
	expect(t_rec.b, TLS_HELLO_RECORD_MAX + 5 + 5, TLS_HELLO_MALFORMED,
	    "ClientHello too large", "the same, at the second record header");

	/* A hello of ordinary size in so many records that it cannot fit. */
	build_padded(&t_msg, 3000);
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 1);
	expect(t_rec.b, t_rec.len, TLS_HELLO_MALFORMED,
	    "ClientHello too large", "3000 bytes in one-byte records");
	expect(t_rec.b, TLS_HELLO_MAX, TLS_HELLO_MALFORMED,
	    "ClientHello too large",
	    "3000 bytes in one-byte records, first TLS_HELLO_MAX bytes");
	bld_reset(&t_rec);
	frame(&t_rec, t_msg.b, t_msg.len, 0);
	expect(t_rec.b, t_rec.len, TLS_HELLO_OK, NULL,
	    "the same 3000 bytes in one record");

	/* A handshake header announcing more than could ever fit. */
	n = TLS_HELLO_MSG_MAX - 4 + 1;
	memcpy(hdr, "\x16\x03\x01\x40\x00\x01", 6);
	bld_put_be(hdr + 6, n, 3);
	expect(hdr, sizeof(hdr), TLS_HELLO_MALFORMED, "ClientHello too large",
	    "handshake length TLS_HELLO_MSG_MAX - 3, from 9 bytes");
	bld_put_be(hdr + 6, n - 1, 3);
	expect(hdr, sizeof(hdr), TLS_HELLO_MORE, NULL,
	    "handshake length TLS_HELLO_MSG_MAX - 4, from 9 bytes: 'more'");
	bld_put_be(hdr + 6, 0xffffff, 3);
	expect(hdr, sizeof(hdr), TLS_HELLO_MALFORMED, "ClientHello too large",
	    "handshake length 2^24 - 1");
}

/* ---------------------------------------------------------- contract */

static void
test_contract(void)
{
	struct tls_hello	 h;
	enum tls_hello_status	 st;
	const char		*why;
	static const struct tls_hello zero;

	tap_is_str(tls_hello_status_str(TLS_HELLO_MORE), "more",
	    "status name: more");
	tap_is_str(tls_hello_status_str(TLS_HELLO_OK), "ok",
	    "status name: ok");
	tap_is_str(tls_hello_status_str(TLS_HELLO_NOT_TLS), "not-tls",
	    "status name: not-tls");
	tap_is_str(tls_hello_status_str(TLS_HELLO_MALFORMED), "malformed",
	    "status name: malformed");

	/* `out` is cleared whatever the outcome; `why` may be NULL. */
	memset(&h, 0x5a, sizeof(h));
	st = tls_hello_parse((const uint8_t *)"\x16\x03\x01\x00\x00", 5, &h,
	    NULL);
	tap_ok(st == TLS_HELLO_MALFORMED && memcmp(&h, &zero, sizeof(h)) == 0,
	    "malformed with why NULL: out cleared");
	memset(&h, 0x5a, sizeof(h));
	why = "stale";
	st = tls_hello_parse((const uint8_t *)"\x16\x03", 2, &h, &why);
	tap_ok(st == TLS_HELLO_MORE && why == NULL &&
	    memcmp(&h, &zero, sizeof(h)) == 0, "more: out and why cleared");
	memset(&h, 0x5a, sizeof(h));
	why = "stale";
	st = tls_hello_parse((const uint8_t *)"GET", 3, &h, &why);
	tap_ok(st == TLS_HELLO_NOT_TLS && why == NULL &&
	    memcmp(&h, &zero, sizeof(h)) == 0, "not TLS: out and why cleared");

	/* Unaligned input: the reader loads bytes, never wider words. */
	bld_reset(&t_ext);
	build_default_exts(&t_ext);
	bld_reset(&t_msg);
	build_hello(&t_msg, &body_default, &t_ext);
	bld_reset(&t_rec);
	bld_u8(&t_rec, 0);
	frame(&t_rec, t_msg.b, t_msg.len, 3);
	st = tls_hello_parse(t_rec.b + 1, t_rec.len - 1, &h, &why);
	tap_ok(st == TLS_HELLO_OK && strcmp(h.sni, FIXTURE_SNI) == 0,
	    "a buffer at an odd address");
}

/* -------------------------------------------------------------- fuzz */

/*
 * The contract for one input: a known status; `why` exactly when
 * malformed; `out` cleared unless ok, and sane when ok; a final status
 * does not change with a prefix cut after the point it was decided; never
 * 'more' at TLS_HELLO_MAX bytes.  Returns 1, or 0 with what broke in err.
 */
static int
check_contract(const uint8_t *p, size_t n, char *err, size_t errsize)
{
	static const struct tls_hello zero;
	struct tls_hello	 h, hp;
	const char		*why, *whyp;
	enum tls_hello_status	 st, sp;
	size_t			 i, k;

	st = parse(p, n, &h, &why);
	if (st != TLS_HELLO_MORE && st != TLS_HELLO_OK &&
	    st != TLS_HELLO_NOT_TLS && st != TLS_HELLO_MALFORMED) {
		snprintf(err, errsize, "status %d", (int)st);
		return 0;
	}
	if ((st == TLS_HELLO_MALFORMED) != (why != NULL)) {
		snprintf(err, errsize, "why %s with %s",
		    why == NULL ? "unset" : "set", tls_hello_status_str(st));
		return 0;
	}
	if (st != TLS_HELLO_OK && memcmp(&h, &zero, sizeof(h)) != 0) {
		snprintf(err, errsize, "out not cleared with %s",
		    tls_hello_status_str(st));
		return 0;
	}
	if (st == TLS_HELLO_OK) {
		if (h.consumed > n || h.consumed < 5 + 4 + 41 ||
		    h.sni_len != strlen(h.sni) ||
		    h.sni_len > TLS_HELLO_SNI_MAX ||
		    (h.has_sni != 0) != (h.sni_len != 0)) {
			snprintf(err, errsize, "ok, consumed %zu sni_len %zu",
			    h.consumed, h.sni_len);
			return 0;
		}
		for (i = 0; i < h.sni_len; i++) {
			if (h.sni[i] <= ' ' || h.sni[i] >= 0x7f) {
				snprintf(err, errsize, "ok, SNI byte %zu", i);
				return 0;
			}
		}
	}
	if (n >= TLS_HELLO_MAX && st == TLS_HELLO_MORE) {
		snprintf(err, errsize, "'more' at %zu bytes", n);
		return 0;
	}

	/* A prefix is 'more' or says the same. */
	k = rng_below(n + 1);
	sp = parse(p, k, &hp, &whyp);
	if (sp != TLS_HELLO_MORE && sp != st) {
		snprintf(err, errsize, "%s at %zu bytes, %s at %zu",
		    tls_hello_status_str(sp), k, tls_hello_status_str(st), n);
		return 0;
	}
	if (st == TLS_HELLO_OK && k >= h.consumed &&
	    (sp != TLS_HELLO_OK || memcmp(&h, &hp, sizeof(h)) != 0)) {
		snprintf(err, errsize, "ok at %zu bytes, not the same at %zu",
		    n, k);
		return 0;
	}
	return 1;
}

/* Mutates buf[0..n) (room for cap bytes) a few times; returns the length. */
static size_t
mutate(uint8_t *buf, size_t n, size_t cap)
{
	size_t	 i, k, rounds;

	rounds = 1 + rng_below(4);
	while (rounds-- > 0) {
		i = rng_below(n);
		switch (rng_below(8)) {
		case 0:
			if (n > 0)
				buf[i] ^= (uint8_t)(1u << rng_below(8));
			break;
		case 1:
			if (n > 0)
				buf[i] = (uint8_t)rng();
			break;
		case 2:
			if (n > 0)
				buf[i] = (uint8_t)(buf[i] + 1);
			break;
		case 3:
			if (n > 0)
				buf[i] = (uint8_t)(buf[i] - 1);
			break;
		case 4:
			n = rng_below(n + 1);
			break;
		case 5:
			for (k = 1 + rng_below(64); k > 0 && n < cap; k--)
				buf[n++] = (uint8_t)rng();
			break;
		case 6:
			if (n < cap) {
				memmove(buf + i + 1, buf + i, n - i);
				buf[i] = (uint8_t)rng();
				n++;
			}
			break;
		default:
			if (n > 0) {
				memmove(buf + i, buf + i + 1, n - i - 1);
				n--;
			}
			break;
		}
	}
	return n;
}

static void
test_fuzz(void)
{
	static uint8_t		 buf[BLD_MAX];
	const struct fixture	*f;
	size_t			 i, j, n, count[4], bad, mode;
	char			 err[RESULT_MAX] = "";
	struct tls_hello	 h;
	enum tls_hello_status	 st;

	for (i = 0; i < NFIXTURES; i++) {
		f = &fixtures[i];
		if (f->len == 0 || unframe(f->data, f->len, &t_msg) == -1)
			continue;
		memset(count, 0, sizeof(count));
		bad = 0;
		for (j = 0; j < MUTATIONS; j++) {
			mode = rng_below(3);
			if (mode == 0) {
				/* The bytes as sent, record headers and all. */
				memcpy(buf, f->data, f->len);
				n = mutate(buf, f->len, sizeof(buf) / 2);
			} else {
				/*
				 * The message, then framed in records: faults
				 * deep in the body.  Mode 2 fixes the
				 * handshake length after the mutation.
				 */
				memcpy(buf, t_msg.b, t_msg.len);
				n = mutate(buf, t_msg.len, sizeof(buf) / 2);
				if (mode == 2 && n >= 4)
					bld_put_be(buf + 1, n - 4, 3);
				bld_reset(&t_rec);
				if (rng_below(2) == 0)
					frame(&t_rec, buf, n, 0);
				else
					frame_random(&t_rec, buf, n, 100);
				memcpy(buf, t_rec.b, t_rec.len);
				n = t_rec.len;
			}
			st = parse(buf, n, &h, NULL);
			if (st >= TLS_HELLO_MORE && st <= TLS_HELLO_MALFORMED)
				count[st]++;
			if (!check_contract(buf, n, err, sizeof(err)) &&
			    bad++ == 0)
				tap_diag("%s mutation %zu: %s", f->file, j,
				    err);
		}
		tap_ok(bad == 0, "%s: %d mutations keep the contract", f->file,
		    MUTATIONS);
		tap_diag("%s: more %zu, ok %zu, not-tls %zu, malformed %zu",
		    f->file, count[TLS_HELLO_MORE], count[TLS_HELLO_OK],
		    count[TLS_HELLO_NOT_TLS], count[TLS_HELLO_MALFORMED]);
	}

	/* Runs of plausible records filling TLS_HELLO_MAX: never 'more'. */
	bad = 0;
	memset(count, 0, sizeof(count));
	for (j = 0; j < STREAMS; j++) {
		bld_reset(&t_rec);
		while (t_rec.len < TLS_HELLO_MAX) {
			n = 1 + rng_below(rng_below(2) == 0 ? 16 : 4096);
			bld_reset(&t_tmp);
			if (t_rec.len == 0) {
				bld_u8(&t_tmp, 1);
				bld_u24(&t_tmp, (unsigned int)rng_below(
				    TLS_HELLO_MSG_MAX + 64));
			}
			while (t_tmp.len < n)
				bld_u8(&t_tmp, rng());
			frame_record(&t_rec, 22, t_tmp.b, t_tmp.len);
		}
		st = parse(t_rec.b, TLS_HELLO_MAX, &h, NULL);
		if (st >= TLS_HELLO_MORE && st <= TLS_HELLO_MALFORMED)
			count[st]++;
		if (!check_contract(t_rec.b, TLS_HELLO_MAX, err,
		    sizeof(err)) && bad++ == 0)
			tap_diag("stream %zu: %s", j, err);
	}
	tap_ok(bad == 0, "%d random record streams of TLS_HELLO_MAX bytes "
	    "keep the contract", STREAMS);
	tap_diag("streams: more %zu, ok %zu, not-tls %zu, malformed %zu",
	    count[TLS_HELLO_MORE], count[TLS_HELLO_OK],
	    count[TLS_HELLO_NOT_TLS], count[TLS_HELLO_MALFORMED]);
}

int
main(void)
{
	size_t	 i;

	tap_ok(load_fixtures(), "captured hellos load from $TEST_DATA/tls");
	for (i = 0; i < NFIXTURES; i++)
		test_fixture(&fixtures[i]);
	test_not_tls();
	test_records();
	test_body();
	test_sni();
	test_extensions();
	test_lenfields();
	test_limits();
	test_contract();
	test_fuzz();
	return tap_done();
}
