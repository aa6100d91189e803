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

/* --- the key broker ------------------------------------------------------ */

struct rules;
struct rules_provider;
struct run;
struct runs;

#define GATEWAY_KEY_MAX		4096	/* bytes of a real key */
#define GATEWAY_SENTINEL_MAX	513	/* a sentinel and its NUL */

/*
 * The real keys of the providers rules brokers (`gateway: {NAME:
 * broker}`): each from keys_dir/NAME when keys_dir is not NULL and that
 * file is there (a regular file of the proxy's user, not a link, no
 * access for group or others, one line), else from the proxy's
 * environment variable the provider's `broker: env` names.  All or
 * nothing: 0 with the new keys in force, or -1 with a message naming the
 * fix in err and the old ones kept.  The main thread's (start, reload).
 */
int		 gateway_keys_load(struct gateway *g, const struct rules *rules,
		    const char *keys_dir, char *err, size_t errlen);

/*
 * Provider's real key, copied into buf (room for GATEWAY_KEY_MAX + 1):
 * its length, or -1 when it has none.  The caller wipes buf.
 */
long		 gateway_key(struct gateway *g, const char *provider,
		    char *buf);

/*
 * The sentinel of run for pv (brokered): pv's broker prefix, then
 * letters and digits to its length, derived from the gateway's secret,
 * the provider, the run's id and its token's MAC, so that the proxy finds
 * it again after a restart without keeping it.  Into out (room for
 * GATEWAY_SENTINEL_MAX); 0, or -1 when pv has no broker.
 */
int		 gateway_sentinel(const struct gateway *g,
		    const struct rules_provider *pv, const struct run *run,
		    char *out);

/*
 * Whether text holds a piece of a live run's sentinel: 31 letters and
 * digits of one in a row, in either case (a DNS name's labels each long
 * enough).  1 with that run's id and the provider in run and provider
 * (room for RUN_ID_MAX and 64), else 0.  Costs nothing while no provider
 * is brokered.  Safe from every worker.
 */
int		 gateway_leak(struct gateway *g, struct runs *runs,
		    const char *text, size_t len, char *run, char *provider);

#endif /* INTUTIC_GATEWAY_H */
