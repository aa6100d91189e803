/*
 * crypto.c — libcrypto behind crypto.h.
 */
#include "config.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "crypto.h"

int
crypto_random(void *buf, size_t n)
{
	return n <= 0x7fffffff && RAND_bytes(buf, (int)n) == 1 ? 0 : -1;
}

int
crypto_mac(const void *key, size_t keylen, const void *data, size_t len,
    unsigned char mac[CRYPTO_MAC_BYTES])
{
	unsigned int maclen = CRYPTO_MAC_BYTES;

	if (keylen > 0x7fffffff || HMAC(EVP_sha256(), key, (int)keylen, data,
	    len, mac, &maclen) == NULL)
		return -1;
	return maclen == CRYPTO_MAC_BYTES ? 0 : -1;
}

int
crypto_equal(const void *a, const void *b, size_t n)
{
	return CRYPTO_memcmp(a, b, n) == 0;
}
