/*
 * crypto.c — libcrypto behind crypto.h.
 */
#include "config.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <string.h>

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

int
crypto_unhex(const char *hex, unsigned char *out, size_t len)
{
	size_t got = 0;

	if (strlen(hex) != len * 2 || OPENSSL_hexstr2buf_ex(out, len, &got,
	    hex, '\0') != 1)
		return -1;
	return got == len ? 0 : -1;
}

long
crypto_base64(const char *in, size_t len, unsigned char *out, size_t outlen)
{
	size_t i, pad = 0;
	int n;

	/* EVP_DecodeBlock() skips blanks and keeps the padding's zeros */
	if (len == 0 || len % 4 != 0 || len > 0x7ffffff0 ||
	    len / 4 * 3 > outlen)
		return -1;
	while (pad < 2 && in[len - 1 - pad] == '=')
		pad++;
	for (i = 0; i < len - pad; i++)
		if (!((in[i] >= 'A' && in[i] <= 'Z') ||
		    (in[i] >= 'a' && in[i] <= 'z') ||
		    (in[i] >= '0' && in[i] <= '9') || in[i] == '+' ||
		    in[i] == '/'))
			return -1;
	if ((n = EVP_DecodeBlock(out, (const unsigned char *)in, (int)len)) <
	    0 || (size_t)n < pad)
		return -1;
	return (long)((size_t)n - pad);
}
