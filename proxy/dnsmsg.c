/*
 * dnsmsg.c — a strict DNS query reader and the writer of its answer
 * (contract and choices in dnsmsg.h).
 *
 * One pass over the message, section by section, each length compared
 * with what is left of the message before it is used.  The question is
 * read into locals and copied into the caller's structure only once it is
 * whole, so a query refused half-way says nothing of its name.  The answer
 * is measured before a byte of it is written.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dnsmsg.h"

#define DNSMSG_OPCODE_QUERY	0
#define DNSMSG_LABEL_TYPE	0xc0	/* the top two bits of a length byte */
#define DNSMSG_LABEL_POINTER	0xc0	/* type 11: compression */
#define DNSMSG_POINTER_QNAME	(0xc000 | DNSMSG_HEADER) /* to offset 12 */
#define DNSMSG_FIXED_QUESTION	4	/* type, class */
#define DNSMSG_FIXED_RR		10	/* type, class, TTL, RDLENGTH */
#define DNSMSG_RR_HEAD		(2 + DNSMSG_FIXED_RR)	/* and a pointer */

static const struct {
	uint16_t	 type;
	const char	*name;
} dnsmsg_types[] = {
	{ DNSMSG_TYPE_A, "A" },
	{ DNSMSG_TYPE_NS, "NS" },
	{ DNSMSG_TYPE_CNAME, "CNAME" },
	{ DNSMSG_TYPE_SOA, "SOA" },
	{ DNSMSG_TYPE_PTR, "PTR" },
	{ DNSMSG_TYPE_MX, "MX" },
	{ DNSMSG_TYPE_TXT, "TXT" },
	{ DNSMSG_TYPE_AAAA, "AAAA" },
	{ DNSMSG_TYPE_SRV, "SRV" },
	{ DNSMSG_TYPE_OPT, "OPT" },
	{ DNSMSG_TYPE_SVCB, "SVCB" },
	{ DNSMSG_TYPE_HTTPS, "HTTPS" },
	{ DNSMSG_TYPE_AXFR, "AXFR" },
	{ DNSMSG_TYPE_ANY, "ANY" },
};
#define DNSMSG_NTYPES	(sizeof(dnsmsg_types) / sizeof(dnsmsg_types[0]))

static uint16_t	load_u16(const uint8_t *);
static void	store_u16(uint8_t *, unsigned int);
static void	store_u32(uint8_t *, uint32_t);
static int	dnsmsg_question(const uint8_t *, size_t, size_t *,
		    struct dnsmsg_query *, const char **);
static int	dnsmsg_opt(const uint8_t *, size_t, size_t *,
		    struct dnsmsg_query *, const char **);
static size_t	dnsmsg_rdlen(uint16_t);

static uint16_t
load_u16(const uint8_t *p)
{
	return (uint16_t)(((unsigned int)p[0] << 8) | p[1]);
}

static void
store_u16(uint8_t *p, unsigned int v)
{
	p[0] = (v >> 8) & 0xff;
	p[1] = v & 0xff;
}

static void
store_u32(uint8_t *p, uint32_t v)
{
	store_u16(p, v >> 16);
	store_u16(p + 2, v & 0xffff);
}

/*
 * The question at *pos: its name, label by label, then its type and class.
 * Fills q's question fields and moves *pos past it only when it is whole.
 */
static int
dnsmsg_question(const uint8_t *msg, size_t len, size_t *pos,
    struct dnsmsg_query *q, const char **why)
{
	char	 name[DNSMSG_NAME_MAX];
	size_t	 p = *pos, text = 0, i;
	size_t	 wire = 1;	/* the root label's byte, always there */
	uint8_t	 l, c;
	int	 ok = 1;

	for (;;) {
		if (p >= len) {
			*why = "the question's name is truncated";
			return -1;
		}
		l = msg[p++];
		if ((l & DNSMSG_LABEL_TYPE) == DNSMSG_LABEL_POINTER) {
			*why = "the question's name is compressed";
			return -1;
		}
		if ((l & DNSMSG_LABEL_TYPE) != 0) {
			*why = "the question's name has a label of type 01 "
			    "or 10";
			return -1;
		}
		if (l == 0)
			break;
		/*
		 * With the root byte counted from the start, a name within
		 * 255 bytes is at most 253 characters: name[] holds it.
		 */
		wire += 1 + (size_t)l;
		if (wire > DNSMSG_WIRE_NAME_MAX) {
			*why = "the question's name is longer than 255 bytes";
			return -1;
		}
		if (l > len - p) {
			*why = "the question's name is truncated";
			return -1;
		}
		if (text > 0)
			name[text++] = '.';
		for (i = 0; i < l; i++) {
			c = msg[p + i];
			if (c < 0x21 || c > 0x7e || c == '.')
				ok = 0;
			name[text++] = (char)c;
		}
		p += l;
	}
	name[text] = '\0';

	if (len - p < DNSMSG_FIXED_QUESTION) {
		*why = "the question ends before its type and class";
		return -1;
	}
	q->qtype = load_u16(msg + p);
	q->qclass = load_u16(msg + p + 2);
	p += DNSMSG_FIXED_QUESTION;
	q->name_ok = ok;
	if (ok)
		memcpy(q->name, name, text + 1);
	q->question_len = p - *pos;
	*pos = p;
	return 0;
}

/* The additional record at *pos, which must be an OPT (RFC 6891 §6.1.2). */
static int
dnsmsg_opt(const uint8_t *msg, size_t len, size_t *pos,
    struct dnsmsg_query *q, const char **why)
{
	size_t		 p = *pos, rdlen;
	uint16_t	 size;

	if (p >= len) {
		*why = "the additional record is missing";
		return -1;
	}
	if (msg[p] != 0) {
		*why = "the additional record's name is not the root";
		return -1;
	}
	p++;
	if (len - p < DNSMSG_FIXED_RR) {
		*why = "the additional record is truncated";
		return -1;
	}
	if (load_u16(msg + p) != DNSMSG_TYPE_OPT) {
		*why = "the additional record is not an OPT record";
		return -1;
	}
	/* The class is the payload size; the TTL is not looked at. */
	size = load_u16(msg + p + 2);
	rdlen = load_u16(msg + p + 8);
	p += DNSMSG_FIXED_RR;
	if (rdlen > len - p) {
		*why = "the OPT record's data runs past the message";
		return -1;
	}
	p += rdlen;
	q->edns = 1;
	q->edns_size = size < DNSMSG_UDP_MAX ? DNSMSG_UDP_MAX : size;
	*pos = p;
	return 0;
}

int
dnsmsg_parse(const uint8_t *msg, size_t len, struct dnsmsg_query *q,
    const char **why)
{
	enum dnsmsg_rcode	 rcode = DNSMSG_FORMERR;
	const char		*reason = NULL;
	size_t			 pos = DNSMSG_HEADER;
	uint16_t		 flags, arcount;
	int			 r = 1;

	memset(q, 0, sizeof(*q));
	if (why != NULL)
		*why = NULL;

	if (len < DNSMSG_HEADER) {
		reason = "shorter than a DNS header";
		r = -1;
		goto out;
	}
	flags = load_u16(msg + 2);
	if ((flags & DNSMSG_FLAG_QR) != 0) {
		reason = "a response, not a query";
		r = -1;
		goto out;
	}
	q->id = load_u16(msg);
	q->flags = flags;
	if (DNSMSG_OPCODE(flags) != DNSMSG_OPCODE_QUERY) {
		reason = "an opcode other than QUERY";
		rcode = DNSMSG_NOTIMP;
		goto out;
	}
	if (load_u16(msg + 4) != 1) {
		reason = "QDCOUNT is not 1";
		goto out;
	}
	/* The question first, so that a FORMERR about the rest echoes it. */
	if (dnsmsg_question(msg, len, &pos, q, &reason) == -1)
		goto out;
	if (load_u16(msg + 6) != 0) {
		reason = "answer records in a query";
		goto out;
	}
	if (load_u16(msg + 8) != 0) {
		reason = "authority records in a query";
		goto out;
	}
	arcount = load_u16(msg + 10);
	if (arcount > 1) {
		reason = "more than one additional record";
		goto out;
	}
	if (arcount == 1 && dnsmsg_opt(msg, len, &pos, q, &reason) == -1)
		goto out;
	if (pos != len) {
		reason = "bytes after the last section";
		goto out;
	}
	if (q->qclass != DNSMSG_CLASS_IN) {
		reason = "a class other than IN";
		rcode = DNSMSG_NOTIMP;
		goto out;
	}
	r = 0;
 out:
	if (r == 1)
		q->rcode = rcode;
	if (why != NULL)
		*why = reason;
	return r;
}

/* Bytes of a record's address; 0 for a type dnsmsg_answer() cannot write. */
static size_t
dnsmsg_rdlen(uint16_t type)
{
	switch (type) {
	case DNSMSG_TYPE_A:
		return DNSMSG_RR_A - DNSMSG_RR_HEAD;
	case DNSMSG_TYPE_AAAA:
		return DNSMSG_RR_AAAA - DNSMSG_RR_HEAD;
	}
	return 0;
}

size_t
dnsmsg_answer(const struct dnsmsg_query *q, const uint8_t *msg,
    enum dnsmsg_rcode rcode, const struct dnsmsg_rr *rrs, size_t n,
    size_t max, uint8_t *out, size_t outlen)
{
	size_t		 lim, len, rrlen = 0, rdlen, i;
	unsigned int	 flags;
	uint8_t		*p;

	if (n > DNSMSG_ANSWERS_MAX || q->question_len > DNSMSG_QUESTION_MAX ||
	    (n > 0 && q->question_len == 0))
		return 0;
	for (i = 0; i < n; i++) {
		if ((rdlen = dnsmsg_rdlen(rrs[i].type)) == 0)
			return 0;
		rrlen += DNSMSG_RR_HEAD + rdlen;
	}
	lim = max < outlen ? max : outlen;
	len = DNSMSG_HEADER + q->question_len;
	if (len > lim)
		return 0;

	/* The opcode copied as RFC 1035 (4.1.1) asks: a NOTIMP names it. */
	flags = DNSMSG_FLAG_QR | DNSMSG_FLAG_RA | (q->flags & 0x7800) |
	    (q->flags & DNSMSG_FLAG_RD) | ((unsigned int)rcode & 0xf);
	if (rrlen > lim - len) {
		flags |= DNSMSG_FLAG_TC;
		n = 0;
	}
	store_u16(out, q->id);
	store_u16(out + 2, flags);
	store_u16(out + 4, q->question_len > 0 ? 1 : 0);
	store_u16(out + 6, (unsigned int)n);
	store_u16(out + 8, 0);
	store_u16(out + 10, 0);
	if (q->question_len > 0)
		memcpy(out + DNSMSG_HEADER, msg + DNSMSG_HEADER,
		    q->question_len);

	for (i = 0; i < n; i++) {
		p = out + len;
		rdlen = dnsmsg_rdlen(rrs[i].type);
		store_u16(p, DNSMSG_POINTER_QNAME);
		store_u16(p + 2, rrs[i].type);
		store_u16(p + 4, DNSMSG_CLASS_IN);
		store_u32(p + 6, rrs[i].ttl);
		store_u16(p + 10, (unsigned int)rdlen);
		memcpy(p + DNSMSG_RR_HEAD, rrs[i].addr, rdlen);
		len += DNSMSG_RR_HEAD + rdlen;
	}
	return len;
}

const char *
dnsmsg_type_str(uint16_t type, char *buf, size_t len)
{
	size_t	 i;

	for (i = 0; i < DNSMSG_NTYPES; i++) {
		if (dnsmsg_types[i].type == type)
			return dnsmsg_types[i].name;
	}
	if (len == 0)
		return "";
	snprintf(buf, len, "TYPE%u", (unsigned int)type);
	return buf;
}

const char *
dnsmsg_rcode_str(enum dnsmsg_rcode rcode)
{
	switch (rcode) {
	case DNSMSG_NOERROR:
		return "NOERROR";
	case DNSMSG_FORMERR:
		return "FORMERR";
	case DNSMSG_SERVFAIL:
		return "SERVFAIL";
	case DNSMSG_NXDOMAIN:
		return "NXDOMAIN";
	case DNSMSG_NOTIMP:
		return "NOTIMP";
	case DNSMSG_REFUSED:
		return "REFUSED";
	}
	return "UNKNOWN";
}
