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
#include "metrics.h"
#include "rules.h"
#include "runs.h"

#define SECRET_BYTES	32
#define LEAK_CHUNK	16	/* letters and digits a piece of the index */

/* A brokered provider: how its sentinels look, and its real key. */
struct gw_broker {
	char		 name[64];
	char		 prefix[RULES_SENTINEL_PREFIX_MAX + 1];
	size_t		 length;
	char		*key;
	size_t		 keylen;
};

/* A piece of a live sentinel, by the hash of its lowercase text. */
struct leak_chunk {
	uint64_t	 h;
	char		 text[LEAK_CHUNK];
	char		 run[RUN_ID_MAX];
	char		 provider[64];
};

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

	pthread_mutex_t		 keys_lock;
	struct gw_broker	*brokers;	/* keys_lock */
	size_t			 nbrokers;
	uint64_t		 brokers_gen;	/* atomic: a load changed them */
	int			 brokered;	/* atomic: nbrokers > 0 */

	/* The live sentinels' pieces, sorted by h; rebuilt when stale. */
	pthread_rwlock_t	 leak_lock;
	struct leak_chunk	*chunks;
	size_t			 nchunks;
	int			 leak_built;
	uint64_t		 leak_runs;	/* runs_changes() when built */
	uint64_t		 leak_brokers;	/* brokers_gen when built */
	uint64_t		 base;		/* the rolling hash's, odd */
	uint64_t		 base_top;	/* base ** LEAK_CHUNK */
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
	size_t i;

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
	pthread_mutex_init(&g->keys_lock, NULL);
	pthread_rwlock_init(&g->leak_lock, NULL);
	if (crypto_random(&g->base, sizeof(g->base)) != 0)
		g->base = 0x100000001b3ULL;
	g->base |= 1;
	g->base_top = 1;
	for (i = 0; i < LEAK_CHUNK; i++)
		g->base_top *= g->base;
	snprintf(g->by[GATEWAY_PROVIDERS_MAX].name,
	    sizeof(g->by[GATEWAY_PROVIDERS_MAX].name), "other");
	return g;
}

static void
brokers_free(struct gw_broker *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (b[i].key != NULL)
			explicit_bzero(b[i].key, b[i].keylen);
		free(b[i].key);
	}
	free(b);
}

void
gateway_free(struct gateway *g)
{
	if (g == NULL)
		return;
	crypto_key_free(g->key);
	pthread_mutex_destroy(&g->lock);
	brokers_free(g->brokers, g->nbrokers);
	pthread_mutex_destroy(&g->keys_lock);
	if (g->chunks != NULL)
		explicit_bzero(g->chunks, g->nchunks * sizeof(*g->chunks));
	free(g->chunks);
	pthread_rwlock_destroy(&g->leak_lock);
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
		metrics_head(out, each[k].name, "counter", each[k].help);
		for (i = 0; i <= GATEWAY_PROVIDERS_MAX; i++) {
			c = &g->by[i];
			if (__atomic_load_n(&c->name[0], __ATOMIC_ACQUIRE) ==
			    '\0' || (i == GATEWAY_PROVIDERS_MAX && c->calls == 0))
				continue;
			evbuffer_add_printf(out, "%s{provider=", each[k].name);
			metrics_label(out, c->name);
			evbuffer_add_printf(out, "} %llu\n", (unsigned long long)
			    __atomic_load_n((const uint64_t *)(const void *)
			    ((const char *)c + each[k].off), __ATOMIC_RELAXED));
		}
	}
	metrics_head(out, "intutic_gateway_tokens_total", "counter", "Tokens "
	    "the providers' answers counted, by kind.");
	for (i = 0; i <= GATEWAY_PROVIDERS_MAX; i++) {
		c = &g->by[i];
		if (__atomic_load_n(&c->name[0], __ATOMIC_ACQUIRE) == '\0' ||
		    (i == GATEWAY_PROVIDERS_MAX && c->calls == 0))
			continue;
		for (j = 0; j < 5; j++) {
			evbuffer_add_printf(out, "intutic_gateway_tokens_total"
			    "{provider=");
			metrics_label(out, c->name);
			evbuffer_add_printf(out, ",kind=\"%s\"} %llu\n",
			    token_names[j], (unsigned long long)
			    __atomic_load_n(&c->tokens[j], __ATOMIC_RELAXED));
		}
	}
}

/* --- the key broker ------------------------------------------------------ */

/*
 * The real key in keys_dir/name: 1 read (into *key, malloc'd), 0 no such
 * file, -1 refused (err says why).
 */
static int
key_file(const char *keys_dir, const char *name, char **key, size_t *len,
    char *err, size_t errlen)
{
	char path[4096], buf[GATEWAY_KEY_MAX + 2];
	struct stat st;
	ssize_t n;
	size_t i;
	int fd;

	*key = NULL;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", keys_dir, name) >=
	    sizeof(path)) {
		snprintf(err, errlen, "--gateway-keys: the path is too long");
		return -1;
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK)) == -1) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s%s", path, strerror(errno),
		    errno == ELOOP ? " (a symbolic link: give the file "
		    "itself)" : "");
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
		snprintf(err, errlen, "%s: a key file must be a regular file "
		    "of the proxy's user (uid %lu) that group and others cannot "
		    "read: chown it and chmod 600 it", path,
		    (unsigned long)geteuid());
		close(fd);
		return -1;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n <= 0 || (size_t)n > GATEWAY_KEY_MAX) {
		snprintf(err, errlen, "%s: expected one key of 1 to %d bytes on "
		    "a line", path, GATEWAY_KEY_MAX);
		explicit_bzero(buf, sizeof(buf));
		return -1;
	}
	for (i = 0; i < (size_t)n; i++)
		if (buf[i] <= ' ' || buf[i] == 0x7f) {
			snprintf(err, errlen, "%s: a key is printable ASCII "
			    "without spaces, on one line", path);
			explicit_bzero(buf, sizeof(buf));
			return -1;
		}
	if ((*key = malloc((size_t)n + 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		explicit_bzero(buf, sizeof(buf));
		return -1;
	}
	memcpy(*key, buf, (size_t)n);
	(*key)[n] = '\0';
	*len = (size_t)n;
	explicit_bzero(buf, sizeof(buf));
	return 1;
}

int
gateway_keys_load(struct gateway *g, const struct rules *rules,
    const char *keys_dir, char *err, size_t errlen)
{
	const struct rules_provider *pv;
	struct gw_broker *b = NULL, *old;
	const char *v;
	size_t i, n = 0, nold, cap = rules_provider_count(rules);
	int r;

	if (cap > 0 && (b = calloc(cap, sizeof(*b))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < cap; i++) {
		pv = rules_provider_get(rules, i);
		if (pv->gateway != RULES_GATEWAY_BROKER || pv->broker == NULL)
			continue;
		snprintf(b[n].name, sizeof(b[n].name), "%s", pv->name);
		snprintf(b[n].prefix, sizeof(b[n].prefix), "%s",
		    pv->broker->prefix);
		b[n].length = pv->broker->length;
		r = keys_dir != NULL ? key_file(keys_dir, pv->name, &b[n].key,
		    &b[n].keylen, err, errlen) : 0;
		if (r < 0)
			goto fail;
		if (r == 0 && (v = getenv(pv->broker->env)) != NULL &&
		    *v != '\0' && strlen(v) <= GATEWAY_KEY_MAX) {
			if ((b[n].key = strdup(v)) == NULL) {
				snprintf(err, errlen, "out of memory");
				goto fail;
			}
			b[n].keylen = strlen(v);
		}
		if (b[n].key == NULL) {
			snprintf(err, errlen, "the rules broker %s's key "
			    "(gateway: {%s: broker}) but the proxy has none: "
			    "put it in %s/%s (mode 600) and give --gateway-keys "
			    "%s, or set %s in the proxy's environment",
			    pv->name, pv->name, keys_dir != NULL ? keys_dir :
			    "DIR", pv->name, keys_dir != NULL ? keys_dir : "DIR",
			    pv->broker->env);
			goto fail;
		}
		n++;
	}
	pthread_mutex_lock(&g->keys_lock);
	old = g->brokers;
	nold = g->nbrokers;
	g->brokers = b;
	g->nbrokers = n;
	__atomic_store_n(&g->brokered, n > 0, __ATOMIC_RELEASE);
	__atomic_add_fetch(&g->brokers_gen, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&g->keys_lock);
	brokers_free(old, nold);
	return 0;
 fail:
	brokers_free(b, cap);
	return -1;
}

long
gateway_key(struct gateway *g, const char *provider, char *buf)
{
	long n = -1;
	size_t i;

	pthread_mutex_lock(&g->keys_lock);
	for (i = 0; i < g->nbrokers; i++)
		if (strcmp(g->brokers[i].name, provider) == 0) {
			memcpy(buf, g->brokers[i].key, g->brokers[i].keylen + 1);
			n = (long)g->brokers[i].keylen;
			break;
		}
	pthread_mutex_unlock(&g->keys_lock);
	return n;
}

/* The sentinel of (provider name, run id, run secret) in the broker's shape. */
static int
sentinel_make(const struct gateway *g, const char *name, const char *prefix,
    size_t length, const char *id, const unsigned char *secret,
    size_t secretlen, char *out)
{
	static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char msg[256 + 64], mac[CRYPTO_MAC_BYTES];
	size_t plen = strlen(prefix), nlen = strlen(name), idlen = strlen(id);
	size_t at, i, used, block = 0;

	if (length >= GATEWAY_SENTINEL_MAX || plen >= length || nlen >= 64 ||
	    idlen >= RUN_ID_MAX || secretlen > 64 ||
	    9 + nlen + 1 + idlen + 1 + secretlen + 4 > sizeof(msg))
		return -1;
	/* "sentinel" NUL name NUL id NUL secret, then a block counter */
	used = 0;
	memcpy(msg, "sentinel", 9);
	used += 9;
	memcpy(msg + used, name, nlen + 1);
	used += nlen + 1;
	memcpy(msg + used, id, idlen + 1);
	used += idlen + 1;
	memcpy(msg + used, secret, secretlen);
	used += secretlen;
	memcpy(out, prefix, plen);
	at = plen;
	while (at < length) {
		msg[used] = (unsigned char)(block >> 24);
		msg[used + 1] = (unsigned char)(block >> 16);
		msg[used + 2] = (unsigned char)(block >> 8);
		msg[used + 3] = (unsigned char)block;
		block++;
		if (crypto_mac_key(g->key, msg, used + 4, mac) != 0) {
			explicit_bzero(msg, sizeof(msg));
			return -1;
		}
		/* bytes of 248 and up are skipped: 62 divides 248 */
		for (i = 0; i < sizeof(mac) && at < length; i++)
			if (mac[i] < 248)
				out[at++] = alnum[mac[i] % 62];
	}
	out[length] = '\0';
	explicit_bzero(msg, sizeof(msg));
	explicit_bzero(mac, sizeof(mac));
	return 0;
}

int
gateway_sentinel(const struct gateway *g, const struct rules_provider *pv,
    const struct run *run, char *out)
{
	const unsigned char *secret;
	size_t len;

	if (pv->broker == NULL)
		return -1;
	secret = run_secret(run, &len);
	return sentinel_make(g, pv->name, pv->broker->prefix,
	    pv->broker->length, run_id(run), secret, len, out);
}

static int
lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

static uint64_t
chunk_hash(const struct gateway *g, const char *s)
{
	uint64_t h = 0;
	size_t i;

	for (i = 0; i < LEAK_CHUNK; i++)
		h = h * g->base + (unsigned char)lower((unsigned char)s[i]);
	return h;
}

static int
chunk_cmp(const void *a, const void *b)
{
	const struct leak_chunk *x = a, *y = b;

	return x->h < y->h ? -1 : x->h > y->h;
}

struct leak_build {
	struct gateway	*g;
	struct leak_chunk *v;
	size_t		 n, cap;
	int		 failed;
};

/* The pieces of each brokered provider's sentinel of run. */
static void
leak_add_run(const struct run *run, void *arg)
{
	struct leak_build *lb = arg;
	struct gateway *g = lb->g;
	const unsigned char *secret;
	struct leak_chunk *c;
	char s[GATEWAY_SENTINEL_MAX];
	size_t i, k, plen, len;

	secret = run_secret(run, &len);
	for (i = 0; i < g->nbrokers && !lb->failed; i++) {
		if (sentinel_make(g, g->brokers[i].name, g->brokers[i].prefix,
		    g->brokers[i].length, run_id(run), secret, len, s) != 0)
			continue;
		plen = strlen(g->brokers[i].prefix);
		for (k = plen; k + LEAK_CHUNK <= g->brokers[i].length;
		    k += LEAK_CHUNK) {
			if (lb->n == lb->cap) {
				size_t cap = lb->cap == 0 ? 64 : 2 * lb->cap;

				if ((c = reallocarray(lb->v, cap,
				    sizeof(*c))) == NULL) {
					lb->failed = 1;
					break;
				}
				lb->v = c;
				lb->cap = cap;
			}
			c = &lb->v[lb->n++];
			memcpy(c->text, s + k, LEAK_CHUNK);
			c->h = chunk_hash(g, c->text);
			snprintf(c->run, sizeof(c->run), "%s", run_id(run));
			snprintf(c->provider, sizeof(c->provider), "%s",
			    g->brokers[i].name);
		}
	}
	explicit_bzero(s, sizeof(s));
}

/* Rebuilds the index when runs or brokers changed (leak_lock written). */
static void
leak_rebuild(struct gateway *g, struct runs *runs, uint64_t rgen,
    uint64_t bgen)
{
	struct leak_build lb = { .g = g };

	pthread_mutex_lock(&g->keys_lock);
	if (g->nbrokers > 0)
		runs_each(runs, leak_add_run, &lb);
	pthread_mutex_unlock(&g->keys_lock);
	if (lb.failed) {
		/* Out of memory: what could be built is kept, tried again. */
		rgen--;
	}
	if (lb.n > 1)
		qsort(lb.v, lb.n, sizeof(*lb.v), chunk_cmp);
	if (g->chunks != NULL)
		explicit_bzero(g->chunks, g->nchunks * sizeof(*g->chunks));
	free(g->chunks);
	g->chunks = lb.v;
	g->nchunks = lb.n;
	g->leak_runs = rgen;
	g->leak_brokers = bgen;
	g->leak_built = 1;
}

/* The piece whose hash is h and text is at s (any case), or NULL. */
static const struct leak_chunk *
leak_lookup(const struct gateway *g, uint64_t h, const char *s)
{
	size_t lo = 0, hi = g->nchunks, mid, i;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (g->chunks[mid].h < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < g->nchunks && g->chunks[lo].h == h; lo++) {
		for (i = 0; i < LEAK_CHUNK; i++)
			if (lower((unsigned char)s[i]) !=
			    lower((unsigned char)g->chunks[lo].text[i]))
				break;
		if (i == LEAK_CHUNK)
			return &g->chunks[lo];
	}
	return NULL;
}

int
gateway_leak(struct gateway *g, struct runs *runs, const char *text,
    size_t len, char *run, char *provider)
{
	const struct leak_chunk *c = NULL;
	uint64_t rgen, bgen, h = 0;
	size_t i;

	if (g == NULL || len < LEAK_CHUNK ||
	    !__atomic_load_n(&g->brokered, __ATOMIC_ACQUIRE))
		return 0;
	bgen = __atomic_load_n(&g->brokers_gen, __ATOMIC_ACQUIRE);
	rgen = runs_changes(runs);
	pthread_rwlock_rdlock(&g->leak_lock);
	if (!g->leak_built || g->leak_runs != rgen ||
	    g->leak_brokers != bgen) {
		pthread_rwlock_unlock(&g->leak_lock);
		pthread_rwlock_wrlock(&g->leak_lock);
		if (!g->leak_built || g->leak_runs != rgen ||
		    g->leak_brokers != bgen)
			leak_rebuild(g, runs, rgen, bgen);
		pthread_rwlock_unlock(&g->leak_lock);
		pthread_rwlock_rdlock(&g->leak_lock);
	}
	if (g->nchunks == 0) {
		pthread_rwlock_unlock(&g->leak_lock);
		return 0;
	}
	for (i = 0; i < len && c == NULL; i++) {
		h = h * g->base + (unsigned char)lower((unsigned char)text[i]);
		if (i >= LEAK_CHUNK)
			h -= g->base_top *
			    (unsigned char)lower((unsigned char)text[i - LEAK_CHUNK]);
		if (i + 1 >= LEAK_CHUNK)
			c = leak_lookup(g, h, text + i + 1 - LEAK_CHUNK);
	}
	if (c != NULL) {
		snprintf(run, RUN_ID_MAX, "%s", c->run);
		snprintf(provider, 64, "%s", c->provider);
	}
	pthread_rwlock_unlock(&g->leak_lock);
	return c != NULL;
}
