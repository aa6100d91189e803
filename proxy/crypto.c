/*
 * crypto.c — libcrypto behind crypto.h.
 */
#include "config.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdlib.h>
#include <string.h>

#include "crypto.h"

#define CRYPTO_BLOCK	64	/* SHA-256's block: HMAC's key pad */

struct crypto_key {
	EVP_MD		*md;		/* SHA-256, fetched once */
	EVP_MD_CTX	*inner;		/* after key ^ ipad */
	EVP_MD_CTX	*outer;		/* after key ^ opad */
};

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

void
crypto_base64_encode(const char *in, size_t len, char *out, size_t outlen)
{
	if (outlen == 0)
		return;
	out[0] = '\0';
	if (len > 0x3ffffff0 || outlen < (len + 2) / 3 * 4 + 1)
		return;
	(void)EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)in,
	    (int)len);
}

void
crypto_key_free(struct crypto_key *k)
{
	if (k == NULL)
		return;
	EVP_MD_CTX_free(k->inner);
	EVP_MD_CTX_free(k->outer);
	EVP_MD_free(k->md);
	free(k);
}

struct crypto_key *
crypto_key_new(const void *key, size_t keylen)
{
	unsigned char pad[CRYPTO_BLOCK], hashed[CRYPTO_MAC_BYTES];
	const unsigned char *kb = key;
	struct crypto_key *k;
	unsigned int n;
	size_t i;

	if ((k = calloc(1, sizeof(*k))) == NULL ||
	    (k->md = EVP_MD_fetch(NULL, "SHA256", NULL)) == NULL ||
	    (k->inner = EVP_MD_CTX_new()) == NULL ||
	    (k->outer = EVP_MD_CTX_new()) == NULL)
		goto fail;
	if (keylen > CRYPTO_BLOCK) {	/* RFC 2104: a long key is hashed */
		if (EVP_Digest(key, keylen, hashed, &n, k->md, NULL) != 1)
			goto fail;
		kb = hashed;
		keylen = n;
	}
	for (i = 0; i < CRYPTO_BLOCK; i++)
		pad[i] = (i < keylen ? kb[i] : 0) ^ 0x36;
	if (EVP_DigestInit_ex(k->inner, k->md, NULL) != 1 ||
	    EVP_DigestUpdate(k->inner, pad, sizeof(pad)) != 1)
		goto fail;
	for (i = 0; i < CRYPTO_BLOCK; i++)
		pad[i] = (i < keylen ? kb[i] : 0) ^ 0x5c;
	if (EVP_DigestInit_ex(k->outer, k->md, NULL) != 1 ||
	    EVP_DigestUpdate(k->outer, pad, sizeof(pad)) != 1)
		goto fail;
	OPENSSL_cleanse(pad, sizeof(pad));
	OPENSSL_cleanse(hashed, sizeof(hashed));
	return k;
 fail:
	OPENSSL_cleanse(pad, sizeof(pad));
	OPENSSL_cleanse(hashed, sizeof(hashed));
	crypto_key_free(k);
	return NULL;
}

int
crypto_mac_key(const struct crypto_key *k, const void *data, size_t len,
    unsigned char mac[CRYPTO_MAC_BYTES])
{
	unsigned char in[CRYPTO_MAC_BYTES];
	unsigned int n = 0, m = 0;
	EVP_MD_CTX *c;
	int ok;

	if ((c = EVP_MD_CTX_new()) == NULL)
		return -1;
	ok = EVP_MD_CTX_copy_ex(c, k->inner) == 1 &&
	    EVP_DigestUpdate(c, data, len) == 1 &&
	    EVP_DigestFinal_ex(c, in, &n) == 1 && n == sizeof(in) &&
	    EVP_MD_CTX_copy_ex(c, k->outer) == 1 &&
	    EVP_DigestUpdate(c, in, sizeof(in)) == 1 &&
	    EVP_DigestFinal_ex(c, mac, &m) == 1 && m == CRYPTO_MAC_BYTES;
	EVP_MD_CTX_free(c);
	OPENSSL_cleanse(in, sizeof(in));
	return ok ? 0 : -1;
}
