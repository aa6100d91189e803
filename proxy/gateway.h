/*
 * gateway.h — what the provider gateway keeps beyond a connection
 * (gateway.c): the per-installation secret its key fingerprints are made
 * with, and its counters by provider for /metrics.  The calls themselves
 * are way-gateway.c's.
 */
#ifndef INTUTIC_GATEWAY_H
#define INTUTIC_GATEWAY_H

#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct gateway;

#define GATEWAY_SECRET_FILE	"gateway.secret"	/* in the state dir */
#define GATEWAY_PROVIDERS_MAX	32	/* counted apart; more go to "other" */
#define GATEWAY_FINGERPRINT_MAX	24	/* "hmac:" and 16 hex digits, NUL */

/*
 * The gateway's state: the secret read from DIR/gateway.secret, made
 * (32 random bytes as 64 hex digits, mode 0600) when there is none.
 * NULL with a message in err when the file cannot be read or made, or
 * is not 64 hex digits.
 */
struct gateway	*gateway_new(const char *state_dir, char *err, size_t errlen);
void		 gateway_free(struct gateway *g);

/*
 * The fingerprint of a key sent to provider: "hmac:" and the first 16 hex
 * digits of HMAC-SHA256(secret, provider NUL key), in out (room for
 * GATEWAY_FINGERPRINT_MAX).  Operators match it with `openssl dgst`
 * (intutic-proxy(8), PROVIDER GATEWAY).
 */
void		 gateway_fingerprint(const struct gateway *g,
		    const char *provider, const char *key, size_t keylen,
		    char *out);

/* A call's counts, added to its provider's (safe from every worker). */
struct gateway_count {
	int		 error;		/* answered 4xx/5xx or cut short */
	int		 malformed;	/* an answer its API does not allow */
	int64_t		 tokens[5];	/* enum gateway_token; -1: none */
};

enum gateway_token {
	GATEWAY_TOKEN_INPUT, GATEWAY_TOKEN_OUTPUT, GATEWAY_TOKEN_CACHE_READ,
	GATEWAY_TOKEN_CACHE_WRITE, GATEWAY_TOKEN_REASONING
};

void		 gateway_count(struct gateway *g, const char *provider,
		    const struct gateway_count *n);

/* The counters in Prometheus text (intutic_gateway_*). */
void		 gateway_metrics(struct gateway *g, struct evbuffer *out);

#endif /* INTUTIC_GATEWAY_H */
