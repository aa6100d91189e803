/*
 * tls-hello.h — reads a TLS ClientHello off the wire, without OpenSSL, to
 * learn the name the client asks for (SNI) before any byte goes upstream.
 *
 * After answering a CONNECT with 200 the proxy buffers what the client
 * sends and hands tls_hello_parse() everything received so far, again each
 * time more arrives, until the answer is something other than
 * TLS_HELLO_MORE.  The parser keeps no state between calls, never
 * allocates, never reads past the length it is given and does not care how
 * the buffer is aligned.
 *
 * It follows the record layer of RFC 5246 §6.2 and RFC 8446 §5.1, the
 * ClientHello of RFC 8446 §4.1.2, server_name of RFC 6066 §3,
 * supported_versions of RFC 8446 §4.2.1, and only notes the presence of
 * encrypted_client_hello (draft-ietf-tls-esni): with ECH the name in the
 * clear is the outer one, and that is the name the proxy holds the client
 * to.  It is strict: any length that does not add up, any field out of its
 * range, is TLS_HELLO_MALFORMED with a reason naming the field.
 *
 * Choices where the RFCs leave room (the proxy is a security product):
 *  - The first byte decides whether this is TLS at all: 22 (handshake) is
 *    TLS; a byte with the high bit set whose third byte is 1 is an SSLv2
 *    CLIENT-HELLO (RFC 5246 §E.2) and is malformed, "SSLv2 hello not
 *    supported"; anything else, ChangeCipherSpec (20), alert (21) and
 *    application data (23) included, is TLS_HELLO_NOT_TLS, so the proxy
 *    applies its rule for other protocols.  Once the first byte is 22,
 *    every later fault is TLS_HELLO_MALFORMED.
 *  - Every record up to the end of the ClientHello must be a handshake
 *    record of version 3.x (any minor) with a length of 1..16384.  The
 *    ClientHello may be split over several records; a record is used only
 *    once it is complete.
 *  - The ClientHello must end where its last record ends: RFC 8446 §5.1
 *    requires it of a message that may precede a key change, and no client
 *    sends another handshake message before the server's answer.  Bytes
 *    after that record (a ChangeCipherSpec, early data) are not looked at.
 *  - Each extension type at most once (RFC 8446 §4.2), at most
 *    TLS_HELLO_EXTENSIONS_MAX of them.  The order is not checked (not even
 *    pre_shared_key last: the server enforces that).
 *  - server_name: exactly the RFC 6066 layout; exactly one host_name entry
 *    (other name types are skipped); the name 1..255 bytes of printable
 *    ASCII without space.  The name is returned as sent: no lowercasing, no
 *    trailing dot removed, IP literals not refused — the caller puts it
 *    through its own canonicaliser before comparing it with the CONNECT host.
 *  - The body's fields are checked against RFC 8446 §4.1.2: legacy_version
 *    3.x, session_id of at most 32 bytes, cipher_suites of even length and
 *    not empty, at least one compression method.  A ClientHello without
 *    extensions (ending right after its compression methods) is well
 *    formed and has no SNI; with them, their length must match exactly.
 */
#ifndef INTUTIC_TLS_HELLO_H
#define INTUTIC_TLS_HELLO_H

#include <stddef.h>
#include <stdint.h>

/* Limits, each enforced by tls_hello_parse(). */
#define TLS_HELLO_RECORD_HDR	5	/* type, version, length */
#define TLS_HELLO_RECORD_MAX	16384	/* bytes in a record's fragment, 2^14 */
#define TLS_HELLO_SNI_MAX	255	/* bytes in a host_name */
#define TLS_HELLO_EXTENSIONS_MAX 64	/* extensions in one ClientHello */

/*
 * The most bytes the proxy buffers while waiting for a ClientHello.  The
 * records that carry the hello, headers included, must end within the
 * first TLS_HELLO_MAX bytes, or the hello is "ClientHello too large": one
 * full-size record and four more headers, so a hello of up to 16 KiB fits
 * when sent in a few records, and a hello of ordinary size (a few hundred
 * bytes to 2 KiB) fits even when sent one byte per record.  A buffer of
 * TLS_HELLO_MAX bytes therefore never gets TLS_HELLO_MORE.
 */
#define TLS_HELLO_MAX \
	(TLS_HELLO_RECORD_MAX + 4 * TLS_HELLO_RECORD_HDR)

/* The longest handshake message (4-byte header included) that could fit. */
#define TLS_HELLO_MSG_MAX	(TLS_HELLO_MAX - TLS_HELLO_RECORD_HDR)

enum tls_hello_status {
	TLS_HELLO_MORE = 0,	/* no answer yet: call again with more bytes */
	TLS_HELLO_OK,		/* a complete, well-formed ClientHello */
	TLS_HELLO_NOT_TLS,	/* the first byte is not a handshake record */
	TLS_HELLO_MALFORMED,	/* TLS, but broken: refuse the connection */
};

/* What the proxy needs to know of a ClientHello. */
struct tls_hello {
	int		 has_sni;	/* a host_name entry was sent */
	char		 sni[TLS_HELLO_SNI_MAX + 1];	/* as sent, NUL-ended */
	size_t		 sni_len;	/* strlen(sni) */
	int		 has_ech;	/* encrypted_client_hello present */
	uint16_t	 legacy_version;	/* ClientHello.legacy_version */
	int		 tls13;		/* supported_versions lists 0x0304 */
	size_t		 consumed;	/* bytes of the records of the hello */
};

/*
 * Parses buf[0..len), every byte the client has sent so far; buf may be
 * NULL when len is 0.  Returns:
 *
 *  TLS_HELLO_MORE	the bytes so far are a valid beginning (len 0
 *			included): call again when more have arrived.  Never
 *			returned once len >= TLS_HELLO_MAX.
 *  TLS_HELLO_OK	a complete ClientHello: *out is filled; its records
 *			are buf[0..out->consumed), the bytes after them are
 *			not looked at.
 *  TLS_HELLO_NOT_TLS	not TLS (see the choices above).
 *  TLS_HELLO_MALFORMED	*why is set to a static string naming the fault,
 *			such as "record length over 16384", "duplicate
 *			server_name extension" or "SNI is not ASCII".
 *
 * `out` is cleared on entry and filled only on TLS_HELLO_OK.  `why` may be
 * NULL; when not, *why is set to NULL unless the status is
 * TLS_HELLO_MALFORMED.  A status other than TLS_HELLO_MORE is final: adding
 * bytes to the end of buf never changes it (the reason may then name
 * another fault of the same hello).
 */
enum tls_hello_status tls_hello_parse(const uint8_t *buf, size_t len,
		    struct tls_hello *out, const char **why);

/* The name of a status for logs: "more", "ok", "not-tls", "malformed". */
const char	*tls_hello_status_str(enum tls_hello_status status);

#endif /* INTUTIC_TLS_HELLO_H */
