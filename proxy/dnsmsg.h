/*
 * dnsmsg.h — reads a DNS query and writes its answer (RFC 1035 §4.1), for
 * the DNS filter the proxy serves a sandbox on UDP and TCP.
 *
 * Pure: no sockets, no libevent, no allocation, no state between calls.
 * The caller hands dnsmsg_parse() one message (over TCP, without its 2-byte
 * length), decides from the name and type what to answer, and has
 * dnsmsg_answer() write the answer into its own buffer.  Every multi-byte
 * value is read byte by byte, so neither function cares how a buffer is
 * aligned, and neither reads or writes past the lengths it is given.
 *
 * Queries come from a sandbox that may be hostile, so the reader is
 * strict: a message is a standard query with one question and nothing but
 * an OPT record (RFC 6891 §6.1) after it, or it is refused.  The choices:
 *
 *  - Dropped, never answered: a message shorter than the header (there is
 *    no id to answer to), and any response, QR set (answering answers
 *    would let a forged source address set two servers answering each
 *    other without end).
 *  - NOTIMP: an opcode other than QUERY (0), before anything else is read
 *    (other opcodes, UPDATE's for one, give the sections other meanings);
 *    and a question whose class is not IN (1), CH and ANY included: the
 *    filter knows of Internet addresses only.  The class is judged last,
 *    so a malformed message of another class is FORMERR.
 *  - FORMERR, every other defect: QDCOUNT other than 1, an answer or
 *    authority record, more than one additional record; in the question's
 *    name a compression pointer (there is nothing before it to point to),
 *    a label of type 01 or 10 (RFC 6891 §5 retired the extended labels), a
 *    name over 255 bytes on the wire (labels of 1..63 bytes need no check:
 *    a length byte of type 00 is at most 63); an additional record that is
 *    not an OPT record with the root name; any length that runs past the
 *    message, and any byte after the last section.
 *  - Not looked at: the header's other flags (TC, RD, Z, AD, CD, RCODE),
 *    the question's type (the caller answers or refuses it), and in the OPT
 *    record its TTL (extended RCODE, version, DO) and its options: the
 *    answer never carries an OPT record, so to the client this is a server
 *    without EDNS (RFC 6891 §7), and an OPT record only lets an answer over
 *    UDP be longer than 512 bytes.
 *  - The name is returned as sent: no lowercasing (a client's 0x20 case
 *    randomisation is echoed back by the answer, which copies the
 *    question's bytes), and text only when it can be text: a name any of
 *    whose labels holds a byte outside 0x21..0x7e, or a '.', is returned
 *    as "" with name_ok 0, for the caller to refuse.
 */
#ifndef INTUTIC_DNSMSG_H
#define INTUTIC_DNSMSG_H

#include <stddef.h>
#include <stdint.h>

/* Limits, each enforced by dnsmsg_parse() or dnsmsg_answer(). */
#define DNSMSG_HEADER		12	/* id, flags, four counts */
#define DNSMSG_UDP_MAX		512	/* an answer over UDP without EDNS */
#define DNSMSG_TCP_MAX		65535	/* a message over TCP: its length */
#define DNSMSG_LABEL_MAX	63	/* bytes of a label */
#define DNSMSG_WIRE_NAME_MAX	255	/* bytes of a name on the wire */
#define DNSMSG_NAME_MAX		254	/* text of a name, with its NUL;
					   no trailing dot */
#define DNSMSG_QUESTION_MAX	(DNSMSG_WIRE_NAME_MAX + 4)	/* + type,
								   class */
#define DNSMSG_ANSWERS_MAX	32	/* records in one answer */
#define DNSMSG_RR_A		16	/* bytes of an A record in an answer */
#define DNSMSG_RR_AAAA		28	/* and of an AAAA record */
/* The longest answer dnsmsg_answer() writes: a buffer of it always fits. */
#define DNSMSG_ANSWER_MAX \
	(DNSMSG_HEADER + DNSMSG_QUESTION_MAX + \
	DNSMSG_ANSWERS_MAX * DNSMSG_RR_AAAA)
#define DNSMSG_TYPE_STR_MAX	10	/* "TYPE65535" and its NUL */

/* The header's flags (RFC 1035 §4.1.1). */
#define DNSMSG_FLAG_QR		0x8000	/* a response */
#define DNSMSG_FLAG_AA		0x0400
#define DNSMSG_FLAG_TC		0x0200	/* truncated: ask again over TCP */
#define DNSMSG_FLAG_RD		0x0100	/* recursion desired */
#define DNSMSG_FLAG_RA		0x0080	/* recursion available */
#define DNSMSG_OPCODE(flags)	(((flags) >> 11) & 0xf)
#define DNSMSG_RCODE(flags)	((flags) & 0xf)

#define DNSMSG_CLASS_IN		1

enum {
	DNSMSG_TYPE_A = 1,
	DNSMSG_TYPE_NS = 2,
	DNSMSG_TYPE_CNAME = 5,
	DNSMSG_TYPE_SOA = 6,
	DNSMSG_TYPE_PTR = 12,
	DNSMSG_TYPE_MX = 15,
	DNSMSG_TYPE_TXT = 16,
	DNSMSG_TYPE_AAAA = 28,
	DNSMSG_TYPE_SRV = 33,
	DNSMSG_TYPE_OPT = 41,
	DNSMSG_TYPE_SVCB = 64,
	DNSMSG_TYPE_HTTPS = 65,
	DNSMSG_TYPE_AXFR = 252,
	DNSMSG_TYPE_ANY = 255
};

enum dnsmsg_rcode {
	DNSMSG_NOERROR = 0,
	DNSMSG_FORMERR = 1,
	DNSMSG_SERVFAIL = 2,
	DNSMSG_NXDOMAIN = 3,
	DNSMSG_NOTIMP = 4,
	DNSMSG_REFUSED = 5
};

/* What dnsmsg_parse() read of a query. */
struct dnsmsg_query {
	uint16_t	 id;
	uint16_t	 flags;		/* the header's flags as received */
	uint16_t	 qtype;
	uint16_t	 qclass;
	char		 name[DNSMSG_NAME_MAX];	/* labels joined by '.', as
					   sent (case kept), "" for the root */
	int		 name_ok;	/* 0: a label holds a byte outside
					   0x21..0x7e, or a '.': name[] is
					   then "" */
	int		 edns;		/* an OPT record was in the additional
					   section */
	uint16_t	 edns_size;	/* its UDP payload size (at least 512
					   when edns, else 0) */
	size_t		 question_len;	/* bytes of the question section
					   (name + type + class); 0 until it
					   was read whole and well formed */
	enum dnsmsg_rcode rcode;	/* dnsmsg_parse() returned 1: the error
					   to answer with */
};

/*
 * Reads the query msg[0..len).  Returns:
 *
 *   0	a well-formed query to answer: *q is filled, q->rcode is
 *	DNSMSG_NOERROR, q->question_len at least 5.
 *   1	answer it with q->rcode, DNSMSG_FORMERR or DNSMSG_NOTIMP (the
 *	choices above).  q->id and q->flags are set; q->question_len, and
 *	the name, type and class with it, are set when the question was
 *	read whole and well formed before the defect was found (then the
 *	answer echoes it), else 0; edns when the OPT record was read.
 *  -1	no answer at all: shorter than DNSMSG_HEADER, or a response.
 *	*q is cleared.
 *
 * q is cleared on entry.  why may be NULL; when not, *why is NULL on 0,
 * and on 1 or -1 a static phrase naming the defect, for a counter or a
 * log line: "shorter than a DNS header", "a response, not a query", "the
 * question's name is compressed", "bytes after the last section", ...
 */
int		 dnsmsg_parse(const uint8_t *msg, size_t len,
		    struct dnsmsg_query *q, const char **why);

/* One address record of an answer. */
struct dnsmsg_rr {
	uint16_t	 type;		/* DNSMSG_TYPE_A or _AAAA */
	uint32_t	 ttl;
	uint8_t		 addr[16];	/* 4 bytes used for A */
};

/*
 * Writes the answer to q, parsed by dnsmsg_parse() from msg (which must
 * still hold that query), into out[0..outlen):
 *
 *  - the header: q's id; QR and RA set; RD and the opcode copied from
 *    the query; AA, TC (but see below), Z, AD and CD clear; rcode; QDCOUNT 1 when
 *    q->question_len is not 0, else 0; ANCOUNT n; NSCOUNT and ARCOUNT 0;
 *  - the question, msg[DNSMSG_HEADER..DNSMSG_HEADER + q->question_len)
 *    byte for byte;
 *  - the n records rrs[0..n), in that order, each named by a compression
 *    pointer to the question's name (offset 12), class IN.
 *
 * The records must fit in max bytes: DNSMSG_UDP_MAX over UDP, the
 * client's q->edns_size when q->edns, DNSMSG_TCP_MAX over TCP (outlen
 * bounds it too).  When they do not, the answer has none of them, ANCOUNT
 * 0 and the TC bit, so the client asks again over TCP.  Never an OPT
 * record: no EDNS option of the query is passed through.
 *
 * Returns the answer's length, at most max and at most outlen; 0 when even
 * the header and the question do not fit in that, and when called wrongly:
 * n over DNSMSG_ANSWERS_MAX, a record neither A nor AAAA, records with no
 * question to point to.  out is then left as it was.
 */
size_t		 dnsmsg_answer(const struct dnsmsg_query *q,
		    const uint8_t *msg, enum dnsmsg_rcode rcode,
		    const struct dnsmsg_rr *rrs, size_t n, size_t max,
		    uint8_t *out, size_t outlen);

/*
 * The name of a type for logs: "A", "AAAA", "HTTPS", ... for the types
 * above (a static string), else "TYPE123" (RFC 3597 §5) written into
 * buf[0..len), DNSMSG_TYPE_STR_MAX bytes always enough.  Never NULL.
 */
const char	*dnsmsg_type_str(uint16_t type, char *buf, size_t len);

/* The name of an rcode: "NOERROR", "FORMERR", ..., "REFUSED". */
const char	*dnsmsg_rcode_str(enum dnsmsg_rcode rcode);

#endif /* INTUTIC_DNSMSG_H */
