/*
 * crypto.h — what the proxy asks of OpenSSL's libcrypto, behind one file
 * (crypto.c), the only one of the proxy that includes OpenSSL
 * (scripts/checksrc holds it to that): random bytes, HMAC-SHA256, a
 * comparison in constant time, and the decoders of hex and base64.
 */
#ifndef INTUTIC_CRYPTO_H
#define INTUTIC_CRYPTO_H

#include <stddef.h>

#define CRYPTO_MAC_BYTES	32	/* HMAC-SHA256 */

/* n random bytes into buf: 0, or -1. */
int	 crypto_random(void *buf, size_t n);

/* HMAC-SHA256 of data under key into mac: 0, or -1. */
int	 crypto_mac(const void *key, size_t keylen, const void *data,
	    size_t len, unsigned char mac[CRYPTO_MAC_BYTES]);

/*
 * A key made ready for HMAC-SHA256 (its padded halves hashed once), for a
 * MAC a request: crypto_mac_key() copies the prepared states instead of
 * starting over, and takes no lock.  Safe to use from several threads at
 * once; NULL when out of memory or unknown to libcrypto.
 */
struct crypto_key;
struct crypto_key *crypto_key_new(const void *key, size_t keylen);
void	 crypto_key_free(struct crypto_key *k);
int	 crypto_mac_key(const struct crypto_key *k, const void *data,
	    size_t len, unsigned char mac[CRYPTO_MAC_BYTES]);

/* 1 when a and b are equal, in time that depends on n only. */
int	 crypto_equal(const void *a, const void *b, size_t n);

/* Exactly len * 2 hex digits (either case) into len bytes: 0, or -1. */
int	 crypto_unhex(const char *hex, unsigned char *out, size_t len);

/*
 * Base64 (RFC 4648, padded; nothing else, no line breaks) into out: the
 * bytes decoded, or -1 when `in` is not that or does not fit in outlen.
 */
long	 crypto_base64(const char *in, size_t len, unsigned char *out,
	    size_t outlen);

/*
 * len bytes of in as padded base64 (RFC 4648) into out, NUL-terminated;
 * outlen must be at least (len + 2) / 3 * 4 + 1, else out is "".
 */
void	 crypto_base64_encode(const char *in, size_t len, char *out,
	    size_t outlen);

#endif /* INTUTIC_CRYPTO_H */
