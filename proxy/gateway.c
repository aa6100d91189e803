/*
 * gateway.c — the provider gateway's secret and counters (gateway.h).
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "crypto.h"
#include "gateway.h"

#define SECRET_BYTES	32

struct gateway_counters {
	char		 name[64];	/* "": free */
	uint64_t	 calls;
	uint64_t	 errors;
	uint64_t	 malformed;
	uint64_t	 tokens[5];
};

struct gateway {
	struct crypto_key	*key;
	pthread_mutex_t		 lock;		/* a provider's first call */
	/* The last one is "other", for providers past the limit. */
	struct gateway_counters	 by[GATEWAY_PROVIDERS_MAX + 1];
};

static const char *const token_names[5] = {
	"input", "output", "cache_read", "cache_write", "reasoning",
};

/* Reads DIR/gateway.secret, or makes it: 0, or -1 with err. */
static int
secret_load(const char *dir, unsigned char *secret, char *err, size_t errlen)
{
	static const char hex[] = "0123456789abcdef";
	char path[4096], text[SECRET_BYTES * 2 + 2];
	ssize_t n;
	size_t i;
	int fd, made = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir,
	    GATEWAY_SECRET_FILE) >= sizeof(path)) {
		snprintf(err, errlen, "the state directory's path is too long");
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd == -1 && errno == ENOENT) {
		if (crypto_random(secret, SECRET_BYTES) != 0) {
			snprintf(err, errlen, "no random bytes for %s", path);
			return -1;
		}
		for (i = 0; i < SECRET_BYTES; i++) {
			text[2 * i] = hex[secret[i] >> 4];
			text[2 * i + 1] = hex[secret[i] & 15];
		}
		text[2 * SECRET_BYTES] = '\n';
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
		    O_NOFOLLOW, 0600);
		if (fd != -1) {
			made = 1;
			n = write(fd, text, SECRET_BYTES * 2 + 1);
			if (n != SECRET_BYTES * 2 + 1 || fsync(fd) != 0) {
				snprintf(err, errlen, "cannot write %s: %s",
				    path, strerror(n == -1 ? errno : EIO));
				close(fd);
				(void)unlink(path);
				return -1;
			}
			close(fd);
			explicit_bzero(text, sizeof(text));
			return 0;
		}
	}
	if (fd == -1) {
		snprintf(err, errlen, "cannot %s %s: %s", made ? "make" : "read",
		    path, strerror(errno));
		return -1;
	}
	n = read(fd, text, sizeof(text));
	close(fd);
	if (n >= SECRET_BYTES * 2 && (n == SECRET_BYTES * 2 ||
	    (n == SECRET_BYTES * 2 + 1 && text[SECRET_BYTES * 2] == '\n'))) {
		text[SECRET_BYTES * 2] = '\0';
		if (crypto_unhex(text, secret, SECRET_BYTES) == 0) {
			explicit_bzero(text, sizeof(text));
			return 0;
		}
	}
	explicit_bzero(text, sizeof(text));
	snprintf(err, errlen, "%s is not %d hex digits (the key fingerprints' "
	    "secret); remove it and a new one is made", path, SECRET_BYTES * 2);
	return -1;
}

struct gateway *
gateway_new(const char *state_dir, char *err, size_t errlen)
{
	struct gateway *g;
	unsigned char secret[SECRET_BYTES];

	if ((g = calloc(1, sizeof(*g))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (secret_load(state_dir, secret, err, errlen) != 0) {
		free(g);
		return NULL;
	}
	g->key = crypto_key_new(secret, sizeof(secret));
	explicit_bzero(secret, sizeof(secret));
	if (g->key == NULL) {
		snprintf(err, errlen, "out of memory");
		free(g);
		return NULL;
	}
	pthread_mutex_init(&g->lock, NULL);
	snprintf(g->by[GATEWAY_PROVIDERS_MAX].name,
	    sizeof(g->by[GATEWAY_PROVIDERS_MAX].name), "other");
	return g;
}

void
gateway_free(struct gateway *g)
{
	if (g == NULL)
		return;
	crypto_key_free(g->key);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

void
gateway_fingerprint(const struct gateway *g, const char *provider,
    const char *key, size_t keylen, char *out)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char mac[CRYPTO_MAC_BYTES], buf[64 + 1024];
	size_t plen = strlen(provider), i;

	out[0] = '\0';
	/* A provider's name is short; a key longer than 1 KiB is cut. */
	if (plen >= 64)
		return;
	if (keylen > sizeof(buf) - plen - 1)
		keylen = sizeof(buf) - plen - 1;
	memcpy(buf, provider, plen);
	buf[plen] = '\0';
	memcpy(buf + plen + 1, key, keylen);
	if (crypto_mac_key(g->key, buf, plen + 1 + keylen, mac) == 0) {
		memcpy(out, "hmac:", 5);
		for (i = 0; i < 8; i++) {
			out[5 + 2 * i] = hex[mac[i] >> 4];
			out[5 + 2 * i + 1] = hex[mac[i] & 15];
		}
		out[21] = '\0';
	}
	explicit_bzero(buf, sizeof(buf));
}

/* The counters of provider, made on its first call; "other" when full. */
static struct gateway_counters *
counters(struct gateway *g, const char *provider)
{
	struct gateway_counters *c;
	size_t i;

	for (i = 0; i < GATEWAY_PROVIDERS_MAX; i++) {
		c = &g->by[i];
		if (__atomic_load_n(&c->name[0], __ATOMIC_ACQUIRE) == '\0')
			break;
		if (strcmp(c->name, provider) == 0)
			return c;
	}
	pthread_mutex_lock(&g->lock);
	for (i = 0; i < GATEWAY_PROVIDERS_MAX; i++) {
		c = &g->by[i];
		if (c->name[0] == '\0') {
			/* The rest of the name first, its first byte last. */
			snprintf(c->name + 1, sizeof(c->name) - 1, "%s",
			    provider[0] != '\0' ? provider + 1 : "");
			__atomic_store_n(&c->name[0], provider[0],
			    __ATOMIC_RELEASE);
			break;
		}
		if (strcmp(c->name, provider) == 0)
			break;
	}
	pthread_mutex_unlock(&g->lock);
	return i < GATEWAY_PROVIDERS_MAX ? &g->by[i] :
	    &g->by[GATEWAY_PROVIDERS_MAX];
}

void
gateway_count(struct gateway *g, const char *provider,
    const struct gateway_count *n)
{
	struct gateway_counters *c;
	size_t i;

	if (provider[0] == '\0' || strlen(provider) >= sizeof(c->name))
		provider = "other";
	c = counters(g, provider);
	__atomic_add_fetch(&c->calls, 1, __ATOMIC_RELAXED);
	if (n->error)
		__atomic_add_fetch(&c->errors, 1, __ATOMIC_RELAXED);
	if (n->malformed)
		__atomic_add_fetch(&c->malformed, 1, __ATOMIC_RELAXED);
	for (i = 0; i < 5; i++)
		if (n->tokens[i] > 0)
			__atomic_add_fetch(&c->tokens[i],
			    (uint64_t)n->tokens[i], __ATOMIC_RELAXED);
}

void
gateway_metrics(struct gateway *g, struct evbuffer *out)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} each[] = {
		{ "intutic_gateway_calls_total", "Provider gateway calls.",
		  offsetof(struct gateway_counters, calls) },
		{ "intutic_gateway_errors_total", "Provider gateway calls "
		  "answered 4xx or 5xx, or cut short.",
		  offsetof(struct gateway_counters, errors) },
		{ "intutic_gateway_malformed_total", "Provider gateway "
		  "answers that were not what their API sends.",
		  offsetof(struct gateway_counters, malformed) },
	};
	const struct gateway_counters *c;
	size_t i, j, k;

	for (k = 0; k < sizeof(each) / sizeof(each[0]); k++) {
		evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s counter\n",
		    each[k].name, each[k].help, each[k].name);
		for (i = 0; i <= GATEWAY_PROVIDERS_MAX; i++) {
			c = &g->by[i];
			if (__atomic_load_n(&c->name[0], __ATOMIC_ACQUIRE) ==
			    '\0' || (i == GATEWAY_PROVIDERS_MAX && c->calls == 0))
				continue;
			evbuffer_add_printf(out, "%s{provider=\"%s\"} %llu\n",
			    each[k].name, c->name, (unsigned long long)
			    __atomic_load_n((const uint64_t *)(const void *)
			    ((const char *)c + each[k].off), __ATOMIC_RELAXED));
		}
	}
	evbuffer_add_printf(out, "# HELP intutic_gateway_tokens_total Tokens "
	    "the providers' answers counted, by kind.\n"
	    "# TYPE intutic_gateway_tokens_total counter\n");
	for (i = 0; i <= GATEWAY_PROVIDERS_MAX; i++) {
		c = &g->by[i];
		if (__atomic_load_n(&c->name[0], __ATOMIC_ACQUIRE) == '\0' ||
		    (i == GATEWAY_PROVIDERS_MAX && c->calls == 0))
			continue;
		for (j = 0; j < 5; j++)
			evbuffer_add_printf(out, "intutic_gateway_tokens_total"
			    "{provider=\"%s\",kind=\"%s\"} %llu\n", c->name,
			    token_names[j], (unsigned long long)
			    __atomic_load_n(&c->tokens[j], __ATOMIC_RELAXED));
	}
}
