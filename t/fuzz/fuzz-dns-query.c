/*
 * fuzz-dns-query.c — dnsmsg_parse() and dnsmsg_answer() (proxy/dnsmsg.h)
 * as the DNS filter calls them: the input is one message, a datagram or a
 * TCP message without its length.  Checked, from dnsmsg.h:
 *
 *  - only a message shorter than the header, or a response, is dropped
 *    (-1, *q cleared); everything else is answered, FORMERR or NOTIMP when
 *    not 0, and *why is set exactly when the return is not 0;
 *  - what is returned of the question agrees with the bytes: the name
 *    written back as labels is the question's name byte for byte, and is
 *    "" unless name_ok; the question fits in the message;
 *  - a query that parses (0) is refused FORMERR when cut at any byte from
 *    the header on, dropped when cut inside it, and refused FORMERR with
 *    one byte more;
 *  - the answers to all that is not dropped, with 0, 1, DNSMSG_ANSWERS_MAX and 0..DNSMSG_ANSWERS_MAX
 *    (the input picks) records made from the input's bytes, for several
 *    limits (512, 4096, the EDNS size, 65535) and buffer sizes (from too
 *    short for the question to the edge where the records just fit and
 *    more): within the limit and the buffer (nothing written past
 *    either, nothing at all when 0), 0 exactly when the header and
 *    question do not fit, the TC bit exactly when the records do not; the
 *    id, RD and the question echoed, QR and RA set, no other flag, the
 *    counts, each record as given behind a pointer to offset 12, no OPT;
 *    and an answer parses as a response, dropped.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "dnsmsg.h"
#include "fuzz.h"

#define FUZZ_DNS_OUT_CAP	DNSMSG_ANSWER_MAX
#define FUZZ_DNS_FILL		0xa5	/* what a byte not written holds */

static uint8_t	 fill[FUZZ_DNS_OUT_CAP];	/* FUZZ_DNS_FILL throughout */

static uint16_t
get_u16(const uint8_t *p)
{
	return (uint16_t)(((unsigned int)p[0] << 8) | p[1]);
}

/* q's name, written back as the labels it was read from, is msg's. */
static void
check_name(const uint8_t *msg, const struct dnsmsg_query *q)
{
	const uint8_t	*w = msg + DNSMSG_HEADER;
	const char	*s = q->name, *dot;
	size_t		 wlen = q->question_len - 4, off = 0, l;

	while (*s != '\0') {
		dot = strchr(s, '.');
		l = dot != NULL ? (size_t)(dot - s) : strlen(s);
		FUZZ_ASSERT(l >= 1 && l <= DNSMSG_LABEL_MAX);
		FUZZ_ASSERT(off + 1 + l < wlen);
		FUZZ_ASSERT(w[off] == l && memcmp(w + off + 1, s, l) == 0);
		off += 1 + l;
		s += l;
		if (*s == '.') {
			s++;
			FUZZ_ASSERT(*s != '\0');	/* no trailing dot */
		}
	}
	FUZZ_ASSERT(off + 1 == wlen && w[off] == 0);
}

static void
check_parse(const uint8_t *msg, size_t len, int r,
    const struct dnsmsg_query *q, const char *why)
{
	static const struct dnsmsg_query zero;
	char		 buf[DNSMSG_TYPE_STR_MAX];
	const char	*s;
	size_t		 i;

	FUZZ_ASSERT(r == -1 || r == 0 || r == 1);
	FUZZ_ASSERT((why == NULL) == (r == 0));
	FUZZ_ASSERT((r == -1) == (len < DNSMSG_HEADER ||
	    (get_u16(msg + 2) & DNSMSG_FLAG_QR) != 0));
	if (r == -1) {
		FUZZ_ASSERT(memcmp(q, &zero, sizeof(*q)) == 0);
		return;
	}
	FUZZ_ASSERT(q->id == get_u16(msg) && q->flags == get_u16(msg + 2));
	if (r == 0)
		FUZZ_ASSERT(q->rcode == DNSMSG_NOERROR &&
		    q->question_len >= 5 && q->qclass == DNSMSG_CLASS_IN &&
		    DNSMSG_OPCODE(q->flags) == 0);
	else
		FUZZ_ASSERT(q->rcode == DNSMSG_FORMERR ||
		    q->rcode == DNSMSG_NOTIMP);
	FUZZ_ASSERT(dnsmsg_rcode_str(q->rcode) != NULL);
	s = dnsmsg_type_str(q->qtype, buf, sizeof(buf));
	FUZZ_ASSERT(s != NULL && strlen(s) < DNSMSG_TYPE_STR_MAX);
	FUZZ_ASSERT(q->edns ? q->edns_size >= DNSMSG_UDP_MAX :
	    q->edns_size == 0);

	FUZZ_ASSERT(memchr(q->name, '\0', sizeof(q->name)) != NULL);
	FUZZ_ASSERT(q->name_ok || q->name[0] == '\0');
	for (i = 0; q->name[i] != '\0'; i++)
		FUZZ_ASSERT(q->name[i] >= 0x21 && q->name[i] <= 0x7e);
	if (q->question_len == 0) {
		FUZZ_ASSERT(!q->name_ok && q->qtype == 0 && q->qclass == 0);
		return;
	}
	FUZZ_ASSERT(q->question_len >= 5 &&
	    q->question_len <= DNSMSG_QUESTION_MAX &&
	    q->question_len <= len - DNSMSG_HEADER);
	FUZZ_ASSERT(get_u16(msg + DNSMSG_HEADER + q->question_len - 4) ==
	    q->qtype);
	FUZZ_ASSERT(get_u16(msg + DNSMSG_HEADER + q->question_len - 2) ==
	    q->qclass);
	if (q->name_ok)
		check_name(msg, q);
}

/* Record i of n, made of the input's bytes. */
static void
make_rr(const uint8_t *data, size_t size, size_t i, struct dnsmsg_rr *rr)
{
	size_t	 k;

	memset(rr, 0, sizeof(*rr));
	if (size == 0)
		return;
	rr->type = data[i % size] & 1 ? DNSMSG_TYPE_AAAA : DNSMSG_TYPE_A;
	rr->ttl = (uint32_t)data[(i + 1) % size] << 24 |
	    (uint32_t)data[(i + 2) % size] << 8 | (uint32_t)i;
	for (k = 0; k < sizeof(rr->addr); k++)
		rr->addr[k] = data[(i * 7 + k) % size];
}

/* Bytes of rrs[0..n) in an answer. */
static size_t
rrs_len(const struct dnsmsg_rr *rrs, size_t n)
{
	size_t	 len = 0, i;

	for (i = 0; i < n; i++)
		len += rrs[i].type == DNSMSG_TYPE_A ? DNSMSG_RR_A :
		    DNSMSG_RR_AAAA;
	return len;
}

/* The answer out[0..alen) (a buffer of FUZZ_DNS_OUT_CAP) says what it must. */
static void
check_answer(const struct dnsmsg_query *q, const uint8_t *msg,
    enum dnsmsg_rcode rcode, const struct dnsmsg_rr *rrs, size_t n,
    size_t max, size_t outlen, const uint8_t *out, size_t alen)
{
	struct dnsmsg_query	 back;
	const char		*why;
	const uint8_t		*p;
	size_t			 lim, base, rrlen, rdlen, i;
	unsigned int		 flags, want;
	int			 tc;

	lim = max < outlen ? max : outlen;
	base = DNSMSG_HEADER + q->question_len;
	rrlen = rrs_len(rrs, n);
	/* One memcmp, not a loop: the harness is instrumented too. */
	FUZZ_ASSERT(alen <= FUZZ_DNS_OUT_CAP && memcmp(out + alen, fill,
	    FUZZ_DNS_OUT_CAP - alen) == 0);
	if (base > lim) {
		FUZZ_ASSERT(alen == 0);
		return;
	}
	tc = rrlen > lim - base;
	FUZZ_ASSERT(alen == base + (tc ? 0 : rrlen) && alen <= lim);

	flags = get_u16(out + 2);
	want = DNSMSG_FLAG_QR | DNSMSG_FLAG_RA | (q->flags & 0x7800) |
	    (q->flags & DNSMSG_FLAG_RD) | (tc ? DNSMSG_FLAG_TC : 0) | rcode;
	FUZZ_ASSERT(get_u16(out) == q->id && flags == want);
	FUZZ_ASSERT(get_u16(out + 4) == (q->question_len > 0 ? 1 : 0));
	FUZZ_ASSERT(get_u16(out + 6) == (tc ? 0 : n));
	FUZZ_ASSERT(get_u16(out + 8) == 0 && get_u16(out + 10) == 0);
	FUZZ_ASSERT(memcmp(out + DNSMSG_HEADER, msg + DNSMSG_HEADER,
	    q->question_len) == 0);
	p = out + base;
	for (i = 0; !tc && i < n; i++) {
		rdlen = rrs[i].type == DNSMSG_TYPE_A ? 4 : 16;
		FUZZ_ASSERT(get_u16(p) == 0xc00c &&
		    get_u16(p + 2) == rrs[i].type &&
		    get_u16(p + 4) == DNSMSG_CLASS_IN &&
		    get_u16(p + 6) == rrs[i].ttl >> 16 &&
		    get_u16(p + 8) == (rrs[i].ttl & 0xffff) &&
		    get_u16(p + 10) == rdlen &&
		    memcmp(p + 12, rrs[i].addr, rdlen) == 0);
		p += 12 + rdlen;
	}
	FUZZ_ASSERT(p == out + alen);

	FUZZ_ASSERT(dnsmsg_parse(out, alen, &back, &why) == -1);
}

/* Answers q into out, a buffer of FUZZ_DNS_OUT_CAP, as if outlen bytes. */
static void
answer_one(const struct dnsmsg_query *q, const uint8_t *msg,
    enum dnsmsg_rcode rcode, const struct dnsmsg_rr *rrs, size_t n,
    size_t max, size_t outlen, uint8_t *out)
{
	size_t	 alen;

	if (outlen > FUZZ_DNS_OUT_CAP)
		outlen = FUZZ_DNS_OUT_CAP;
	memcpy(out, fill, FUZZ_DNS_OUT_CAP);
	FUZZ_POISON(out + outlen, FUZZ_DNS_OUT_CAP - outlen);
	alen = dnsmsg_answer(q, msg, rcode, rrs, n, max, out, outlen);
	FUZZ_UNPOISON(out + outlen, FUZZ_DNS_OUT_CAP - outlen);
	check_answer(q, msg, rcode, rrs, n, max, outlen, out, alen);
}

/*
 * Answers to q with none, one, all DNSMSG_ANSWERS_MAX and a number of
 * records the input picks; each under four limits and into buffers from
 * too short for the question to large enough for anything, the edge where
 * the records just fit among them.
 */
static void
answers(const struct dnsmsg_query *q, const uint8_t *msg,
    enum dnsmsg_rcode rcode, const uint8_t *data, size_t size, uint8_t *out)
{
	struct dnsmsg_rr	 rrs[DNSMSG_ANSWERS_MAX];
	size_t			 counts[4], maxes[4], outlens[6];
	size_t			 base = DNSMSG_HEADER + q->question_len;
	size_t			 ncounts, n, c, i, k, all;

	for (i = 0; i < DNSMSG_ANSWERS_MAX; i++)
		make_rr(data, size, i, &rrs[i]);
	counts[0] = 0;
	counts[1] = 1;
	counts[2] = size > 0 ? data[0] % (DNSMSG_ANSWERS_MAX + 1) : 0;
	counts[3] = DNSMSG_ANSWERS_MAX;
	maxes[0] = DNSMSG_UDP_MAX;
	maxes[1] = 4096;
	maxes[2] = q->edns ? q->edns_size : DNSMSG_UDP_MAX;
	maxes[3] = DNSMSG_TCP_MAX;

	/* Records need a question to point to. */
	ncounts = q->question_len > 0 ? 4 : 1;
	for (c = 0; c < ncounts; c++) {
		n = counts[c];
		all = base + rrs_len(rrs, n);
		outlens[0] = FUZZ_DNS_OUT_CAP;
		outlens[1] = DNSMSG_UDP_MAX;
		outlens[2] = all;
		outlens[3] = all - 1;
		outlens[4] = base + (size > 0 ? data[size - 1] : 0);
		outlens[5] = base - 1;
		for (i = 0; i < 4; i++)
			for (k = 0; k < 6; k++)
				answer_one(q, msg, rcode, rrs, n, maxes[i],
				    outlens[k], out);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum dnsmsg_rcode rcodes[] = { DNSMSG_NOERROR,
	    DNSMSG_NXDOMAIN, DNSMSG_REFUSED, DNSMSG_SERVFAIL };
	struct dnsmsg_query	 q, qp;
	const char		*why;
	enum dnsmsg_rcode	 rcode;
	uint8_t			*buf, *out;
	size_t			 k;
	int			 r, rp;

	if (fill[0] != FUZZ_DNS_FILL)
		memset(fill, FUZZ_DNS_FILL, sizeof(fill));
	/* The input and a byte more, for the check with a byte added. */
	if ((buf = malloc(size + 1)) == NULL ||
	    (out = malloc(FUZZ_DNS_OUT_CAP)) == NULL)
		abort();
	if (size > 0)
		memcpy(buf, data, size);
	buf[size] = size > 0 ? data[0] : 0;

	FUZZ_POISON(buf + size, 1);
	r = dnsmsg_parse(buf, size, &q, &why);
	FUZZ_UNPOISON(buf + size, 1);
	check_parse(buf, size, r, &q, why);

	if (r == 0) {
		/* Cut at every byte: a query no more. */
		for (k = 0; k < size; k++) {
			FUZZ_POISON(buf + k, size + 1 - k);
			rp = dnsmsg_parse(buf, k, &qp, &why);
			FUZZ_UNPOISON(buf + k, size + 1 - k);
			check_parse(buf, k, rp, &qp, why);
			FUZZ_ASSERT(k < DNSMSG_HEADER ? rp == -1 :
			    rp == 1 && qp.rcode == DNSMSG_FORMERR);
		}
		rp = dnsmsg_parse(buf, size + 1, &qp, &why);
		check_parse(buf, size + 1, rp, &qp, why);
		FUZZ_ASSERT(rp == 1 && qp.rcode == DNSMSG_FORMERR);
	}

	if (r != -1) {
		rcode = r == 1 ? q.rcode : rcodes[size % 4];
		answers(&q, buf, rcode, data, size, out);
	}
	free(out);
	free(buf);
	return 0;
}
