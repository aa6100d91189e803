/*
 * tls-hello.c — a strict, hand-written ClientHello reader (contract and
 * choices in tls-hello.h).
 *
 * Two passes over the buffer.  tls_hello_walk() goes over the record
 * headers until the records hold the whole ClientHello message, judging
 * each header and the handshake header as soon as their bytes are there.
 * Then a reader (struct hs_reader) goes over the handshake bytes of those
 * records, stepping over the record headers in between, so a hello split
 * over many records is read like one in a single record, without copying.
 *
 * Every multi-byte value is assembled from single bytes (no casts to wider
 * types, so no unaligned loads), every length is compared with what is
 * left before it is used, and every sum of offsets is written as a
 * difference against a length already known to be larger.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tls-hello.h"

#define TLS_CT_HANDSHAKE		22	/* record content type */
#define TLS_HS_CLIENT_HELLO		1	/* handshake message type */
#define TLS_HS_HDR			4	/* type, 24-bit length */
#define TLS_RANDOM_LEN			32
#define TLS_SESSION_ID_MAX		32
#define TLS_EXT_SERVER_NAME		0
#define TLS_EXT_SUPPORTED_VERSIONS	43
#define TLS_EXT_ECH			0xfe0d	/* encrypted_client_hello */
#define TLS_SNI_HOST_NAME		0	/* server_name NameType */
#define TLS_VERSION_13			0x0304
#define SSL2_MT_CLIENT_HELLO		1

/*
 * Reads the handshake bytes carried by records already checked by
 * tls_hello_walk().  `left` bounds the reader to one field: a reader for a
 * field inside another is a copy with a smaller `left`.
 */
struct hs_reader {
	const uint8_t	*buf;
	size_t		 end;		/* where the hello's records end */
	size_t		 pos;		/* offset in buf of the next byte */
	size_t		 rec_left;	/* fragment bytes left at pos */
	size_t		 left;		/* bytes this reader may still read */
};

static uint16_t	load_u16(const uint8_t *);
static int	hs_next_record(struct hs_reader *);
static int	hs_get_u8(struct hs_reader *, uint8_t *);
static int	hs_get_u16(struct hs_reader *, uint16_t *);
static int	hs_skip(struct hs_reader *, size_t);
static int	hs_sub(struct hs_reader *, size_t, struct hs_reader *);
static enum tls_hello_status tls_hello_walk(const uint8_t *, size_t,
		    size_t *, size_t *, const char **);
static int	tls_hello_sni(struct hs_reader *, struct tls_hello *,
		    const char **);
static int	tls_hello_versions(struct hs_reader *, struct tls_hello *,
		    const char **);
static int	tls_hello_extensions(struct hs_reader *, struct tls_hello *,
		    const char **);
static int	tls_hello_body(struct hs_reader *, struct tls_hello *,
		    const char **);

static uint16_t
load_u16(const uint8_t *p)
{
	return (uint16_t)(((unsigned int)p[0] << 8) | p[1]);
}

/*
 * Steps over the header of the record that follows pos.  The walk checked
 * every record up to `end`; the test keeps a reader from ever stepping past
 * them should that promise break.
 */
static int
hs_next_record(struct hs_reader *r)
{
	size_t	 rlen;

	if (r->end - r->pos <= TLS_HELLO_RECORD_HDR)
		return -1;
	rlen = load_u16(r->buf + r->pos + 3);
	if (rlen == 0 || rlen > r->end - r->pos - TLS_HELLO_RECORD_HDR)
		return -1;
	r->pos += TLS_HELLO_RECORD_HDR;
	r->rec_left = rlen;
	return 0;
}

static int
hs_get_u8(struct hs_reader *r, uint8_t *v)
{
	if (r->left < 1)
		return -1;
	if (r->rec_left == 0 && hs_next_record(r) == -1)
		return -1;
	*v = r->buf[r->pos];
	r->pos++;
	r->rec_left--;
	r->left--;
	return 0;
}

static int
hs_get_u16(struct hs_reader *r, uint16_t *v)
{
	uint8_t	 hi, lo;

	if (r->left < 2)
		return -1;
	if (hs_get_u8(r, &hi) == -1 || hs_get_u8(r, &lo) == -1)
		return -1;
	*v = (uint16_t)(((unsigned int)hi << 8) | lo);
	return 0;
}

static int
hs_skip(struct hs_reader *r, size_t n)
{
	size_t	 step;

	if (r->left < n)
		return -1;
	while (n > 0) {
		if (r->rec_left == 0 && hs_next_record(r) == -1)
			return -1;
		step = n < r->rec_left ? n : r->rec_left;
		r->pos += step;
		r->rec_left -= step;
		r->left -= step;
		n -= step;
	}
	return 0;
}

/* Makes *sub a reader for the next n bytes of r, and moves r past them. */
static int
hs_sub(struct hs_reader *r, size_t n, struct hs_reader *sub)
{
	if (r->left < n)
		return -1;
	*sub = *r;
	sub->left = n;
	return hs_skip(r, n);
}

/*
 * Goes over the records at the start of buf (whose first byte is 22) until
 * they hold a whole ClientHello message.  Returns TLS_HELLO_OK with the
 * length of the message's body and of its records, TLS_HELLO_MORE, or
 * TLS_HELLO_MALFORMED with *why.  Each check runs as soon as its bytes are
 * there, and in the same order whatever the length, so that a verdict
 * other than TLS_HELLO_MORE stays when bytes are added.
 */
static enum tls_hello_status
tls_hello_walk(const uint8_t *buf, size_t len, size_t *body_len,
    size_t *consumed, const char **why)
{
	uint8_t	 hs[TLS_HS_HDR];
	size_t	 nhs = 0;	/* bytes of the handshake header seen */
	size_t	 need = 0;	/* bytes of the message, once nhs is 4 */
	size_t	 have = 0;	/* message bytes in the records before p */
	size_t	 p = 0;		/* start of the record being looked at */
	size_t	 rlen, avail, i;

	for (;;) {
		/* The record header at p, as much of it as is there. */
		if (len - p >= 1 && buf[p] != TLS_CT_HANDSHAKE) {
			*why = "non-handshake record inside the ClientHello";
			return TLS_HELLO_MALFORMED;
		}
		if (len - p >= 2 && buf[p + 1] != 3) {
			*why = "record version is not 3.x";
			return TLS_HELLO_MALFORMED;
		}
		if (TLS_HELLO_MAX - p < TLS_HELLO_RECORD_HDR) {
			*why = "ClientHello too large";
			return TLS_HELLO_MALFORMED;
		}
		if (len - p < TLS_HELLO_RECORD_HDR)
			return TLS_HELLO_MORE;
		rlen = load_u16(buf + p + 3);
		if (rlen == 0) {
			*why = "record length is 0";
			return TLS_HELLO_MALFORMED;
		}
		if (rlen > TLS_HELLO_RECORD_MAX) {
			*why = "record length over 16384";
			return TLS_HELLO_MALFORMED;
		}

		/* The handshake header, from what of the fragment is here. */
		avail = len - p - TLS_HELLO_RECORD_HDR;
		if (avail > rlen)
			avail = rlen;
		for (i = 0; nhs < TLS_HS_HDR && i < avail; i++) {
			hs[nhs++] = buf[p + TLS_HELLO_RECORD_HDR + i];
			if (nhs == 1 && hs[0] != TLS_HS_CLIENT_HELLO) {
				*why = "handshake is not a ClientHello";
				return TLS_HELLO_MALFORMED;
			}
			if (nhs < TLS_HS_HDR)
				continue;
			need = TLS_HS_HDR + (((size_t)hs[1] << 16) |
			    ((size_t)hs[2] << 8) | hs[3]);
			if (need > TLS_HELLO_MSG_MAX) {
				*why = "ClientHello too large";
				return TLS_HELLO_MALFORMED;
			}
		}
		if (nhs == TLS_HS_HDR && rlen > need - have) {
			*why = "data after the ClientHello in its record";
			return TLS_HELLO_MALFORMED;
		}
		if (rlen > TLS_HELLO_MAX - p - TLS_HELLO_RECORD_HDR) {
			*why = "ClientHello too large";
			return TLS_HELLO_MALFORMED;
		}
		if (rlen > len - p - TLS_HELLO_RECORD_HDR)
			return TLS_HELLO_MORE;

		have += rlen;
		p += TLS_HELLO_RECORD_HDR + rlen;
		if (nhs == TLS_HS_HDR && have == need) {
			*body_len = need - TLS_HS_HDR;
			*consumed = p;
			return TLS_HELLO_OK;
		}
	}
}

/* server_name (RFC 6066 §3): a list holding exactly one host_name. */
static int
tls_hello_sni(struct hs_reader *r, struct tls_hello *h, const char **why)
{
	struct hs_reader	 name;
	uint16_t		 n;
	uint8_t			 type, c;
	size_t			 i;

	if (r->left == 0) {
		*why = "empty server_name extension";
		return -1;
	}
	if (hs_get_u16(r, &n) == -1) {
		*why = "server_name extension too short for its list length";
		return -1;
	}
	if (n > r->left) {
		*why = "server_name list longer than the extension";
		return -1;
	}
	if (n < r->left) {
		*why = "bytes after the server_name list";
		return -1;
	}
	if (n == 0) {
		*why = "empty server_name list";
		return -1;
	}
	while (r->left > 0) {
		if (hs_get_u8(r, &type) == -1 || hs_get_u16(r, &n) == -1) {
			*why = "server_name entry truncated";
			return -1;
		}
		if (hs_sub(r, n, &name) == -1) {
			*why = "server_name entry longer than the list";
			return -1;
		}
		/* RFC 6066: other name types begin with a 16-bit length too. */
		if (type != TLS_SNI_HOST_NAME)
			continue;
		if (h->has_sni) {
			*why = "two host_name entries";
			return -1;
		}
		if (n == 0) {
			*why = "SNI is an empty name";
			return -1;
		}
		if (n > TLS_HELLO_SNI_MAX) {
			*why = "SNI longer than 255 bytes";
			return -1;
		}
		for (i = 0; i < n; i++) {
			if (hs_get_u8(&name, &c) == -1) {
				*why = "server_name entry longer than the list";
				return -1;
			}
			if (c == '\0') {
				*why = "SNI contains a NUL byte";
				return -1;
			}
			if (c >= 0x80) {
				*why = "SNI is not ASCII";
				return -1;
			}
			if (c <= ' ' || c == 0x7f) {
				*why = "SNI contains a space or control "
				    "character";
				return -1;
			}
			h->sni[i] = (char)c;
		}
		h->sni[n] = '\0';
		h->sni_len = n;
		h->has_sni = 1;
	}
	return 0;
}

/* supported_versions, ClientHello form (RFC 8446 §4.2.1): a list of u16. */
static int
tls_hello_versions(struct hs_reader *r, struct tls_hello *h, const char **why)
{
	uint16_t	 v;
	uint8_t		 n;

	if (hs_get_u8(r, &n) == -1) {
		*why = "empty supported_versions extension";
		return -1;
	}
	if (n > r->left) {
		*why = "supported_versions list longer than the extension";
		return -1;
	}
	if (n < r->left) {
		*why = "bytes after the supported_versions list";
		return -1;
	}
	if (n == 0) {
		*why = "empty supported_versions list";
		return -1;
	}
	if (n % 2 != 0) {
		*why = "odd supported_versions length";
		return -1;
	}
	while (r->left > 0) {
		if (hs_get_u16(r, &v) == -1) {
			*why = "supported_versions list longer than the "
			    "extension";
			return -1;
		}
		if (v == TLS_VERSION_13)
			h->tls13 = 1;
	}
	return 0;
}

static int
tls_hello_extensions(struct hs_reader *r, struct tls_hello *h,
    const char **why)
{
	uint16_t		 seen[TLS_HELLO_EXTENSIONS_MAX];
	size_t			 nseen = 0, i;
	struct hs_reader	 ext;
	uint16_t		 type, n;

	while (r->left > 0) {
		if (hs_get_u16(r, &type) == -1 || hs_get_u16(r, &n) == -1) {
			*why = "extension header truncated";
			return -1;
		}
		if (hs_sub(r, n, &ext) == -1) {
			*why = "extension longer than the extensions block";
			return -1;
		}
		for (i = 0; i < nseen; i++) {
			if (seen[i] != type)
				continue;
			if (type == TLS_EXT_SERVER_NAME)
				*why = "duplicate server_name extension";
			else
				*why = "duplicate extension";
			return -1;
		}
		if (nseen == TLS_HELLO_EXTENSIONS_MAX) {
			*why = "more than 64 extensions";
			return -1;
		}
		seen[nseen++] = type;

		switch (type) {
		case TLS_EXT_SERVER_NAME:
			if (tls_hello_sni(&ext, h, why) == -1)
				return -1;
			break;
		case TLS_EXT_SUPPORTED_VERSIONS:
			if (tls_hello_versions(&ext, h, why) == -1)
				return -1;
			break;
		case TLS_EXT_ECH:
			/* The name in the clear is the outer one: note it. */
			h->has_ech = 1;
			break;
		default:
			break;
		}
	}
	return 0;
}

/* The ClientHello body (RFC 8446 §4.1.2), field by field. */
static int
tls_hello_body(struct hs_reader *r, struct tls_hello *h, const char **why)
{
	uint16_t	 n16;
	uint8_t		 n8;

	if (hs_get_u16(r, &h->legacy_version) == -1) {
		*why = "ClientHello ends in legacy_version";
		return -1;
	}
	if ((h->legacy_version >> 8) != 3) {
		*why = "legacy_version is not 3.x";
		return -1;
	}
	if (hs_skip(r, TLS_RANDOM_LEN) == -1) {
		*why = "ClientHello ends in random";
		return -1;
	}
	if (hs_get_u8(r, &n8) == -1) {
		*why = "ClientHello ends before session_id";
		return -1;
	}
	if (n8 > TLS_SESSION_ID_MAX) {
		*why = "session_id longer than 32 bytes";
		return -1;
	}
	if (hs_skip(r, n8) == -1) {
		*why = "session_id longer than the ClientHello";
		return -1;
	}
	if (hs_get_u16(r, &n16) == -1) {
		*why = "ClientHello ends before cipher_suites";
		return -1;
	}
	if (n16 % 2 != 0) {
		*why = "odd cipher_suites length";
		return -1;
	}
	if (n16 == 0) {
		*why = "no cipher suites";
		return -1;
	}
	if (hs_skip(r, n16) == -1) {
		*why = "cipher_suites longer than the ClientHello";
		return -1;
	}
	if (hs_get_u8(r, &n8) == -1) {
		*why = "ClientHello ends before compression_methods";
		return -1;
	}
	if (n8 == 0) {
		*why = "no compression methods";
		return -1;
	}
	if (hs_skip(r, n8) == -1) {
		*why = "compression_methods longer than the ClientHello";
		return -1;
	}

	/* Extensions are optional, but only as a whole. */
	if (r->left == 0)
		return 0;
	if (hs_get_u16(r, &n16) == -1) {
		*why = "ClientHello ends in the extensions length";
		return -1;
	}
	if (n16 > r->left) {
		*why = "extensions longer than the ClientHello";
		return -1;
	}
	if (n16 < r->left) {
		*why = "bytes after the extensions";
		return -1;
	}
	return tls_hello_extensions(r, h, why);
}

enum tls_hello_status
tls_hello_parse(const uint8_t *buf, size_t len, struct tls_hello *out,
    const char **why)
{
	struct tls_hello	 h;
	struct hs_reader	 r;
	enum tls_hello_status	 status;
	const char		*reason = NULL;
	size_t			 body_len = 0, consumed = 0;

	memset(out, 0, sizeof(*out));
	memset(&h, 0, sizeof(h));
	if (why != NULL)
		*why = NULL;

	if (len == 0) {
		status = TLS_HELLO_MORE;
		goto out;
	}
	if (buf[0] != TLS_CT_HANDSHAKE) {
		/*
		 * An SSLv2 record header has the high bit set and two bytes
		 * of length; CLIENT-HELLO is message type 1.
		 */
		if ((buf[0] & 0x80) == 0)
			status = TLS_HELLO_NOT_TLS;
		else if (len < 3)
			status = TLS_HELLO_MORE;
		else if (buf[2] == SSL2_MT_CLIENT_HELLO) {
			reason = "SSLv2 hello not supported";
			status = TLS_HELLO_MALFORMED;
		} else
			status = TLS_HELLO_NOT_TLS;
		goto out;
	}

	status = tls_hello_walk(buf, len, &body_len, &consumed, &reason);
	if (status != TLS_HELLO_OK)
		goto out;

	r.buf = buf;
	r.end = consumed;
	r.pos = 0;
	r.rec_left = 0;
	r.left = TLS_HS_HDR + body_len;
	if (hs_skip(&r, TLS_HS_HDR) == -1) {
		/* Cannot happen: the walk saw these bytes. */
		reason = "ClientHello ends in its header";
		status = TLS_HELLO_MALFORMED;
		goto out;
	}
	if (tls_hello_body(&r, &h, &reason) == -1) {
		status = TLS_HELLO_MALFORMED;
		goto out;
	}
	h.consumed = consumed;
	memcpy(out, &h, sizeof(*out));
 out:
	if (status == TLS_HELLO_MALFORMED && reason == NULL)
		reason = "malformed ClientHello";
	if (why != NULL && status == TLS_HELLO_MALFORMED)
		*why = reason;
	return status;
}

const char *
tls_hello_status_str(enum tls_hello_status status)
{
	switch (status) {
	case TLS_HELLO_MORE:
		return "more";
	case TLS_HELLO_OK:
		return "ok";
	case TLS_HELLO_NOT_TLS:
		return "not-tls";
	case TLS_HELLO_MALFORMED:
		return "malformed";
	}
	return "unknown";
}
