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

#endif /* INTUTIC_CRYPTO_H */
