/*
 * given.c — the addresses the DNS filter gave (see given.h): a table of
 * GIVEN_SLOTS slots in sets of GIVEN_WAYS, a slot holding the hash of its
 * (run, name), the address itself (compared whole: a collision of the
 * hash could only mix up two names the same run was given), when it runs
 * out and when it was put.  A new entry takes, in its set, the slot of the
 * same key and address, else one that ran out, else the one that runs out
 * first, of those the one put first.
 */
#include "config.h"

#include <sys/socket.h>
#include <netinet/in.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "given.h"
#include "hash.h"

#define GIVEN_SETS	(GIVEN_SLOTS / GIVEN_WAYS)

struct given_slot {
	uint64_t	 key;		/* hash of (run, name); 0: empty */
	unsigned char	 addr[16];	/* an IPv4 one in its first 4 */
	int		 family;
	time_t		 until;		/* monotonic seconds */
	uint64_t	 seq;		/* when it was put: g->seq then */
};

struct given {
	uint64_t		 seed;
	uint64_t		 seq;		/* puts (atomic) */
	pthread_mutex_t		 lock[GIVEN_LOCKS];
	struct given_slot	 slot[GIVEN_SLOTS];
};

struct given *
given_new(void)
{
	struct given *g;
	size_t i;

	if ((g = calloc(1, sizeof(*g))) == NULL)
		return NULL;
	if (crypto_random(&g->seed, sizeof(g->seed)) != 0) {
		free(g);
		return NULL;
	}
	for (i = 0; i < GIVEN_LOCKS; i++)
		pthread_mutex_init(&g->lock[i], NULL);
	return g;
}

void
given_free(struct given *g)
{
	size_t i;

	if (g == NULL)
		return;
	for (i = 0; i < GIVEN_LOCKS; i++)
		pthread_mutex_destroy(&g->lock[i]);
	free(g);
}

static time_t
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec;
}

/* The key of (run, name): never 0, which marks an empty slot. */
static uint64_t
given_key(const struct given *g, const char *run, const char *name)
{
	uint64_t h = hash_seed(g->seed);

	h = hash_on(h, run, strlen(run) + 1);
	h = hash_on(h, name, strlen(name));
	return h != 0 ? h : 1;
}

/* An address's bytes and their length. */
static const void *
addr_bytes(const struct rules_addr *a, size_t *n)
{
	if (a->family == AF_INET) {
		*n = sizeof(a->v4);
		return &a->v4;
	}
	*n = sizeof(a->v6);
	return &a->v6;
}

/* The set of (key, address). */
static size_t
given_set(const struct given *g, uint64_t key, const struct rules_addr *a)
{
	const void *b;
	size_t n;

	b = addr_bytes(a, &n);
	return hash_slot(hash_on(hash_seed(g->seed ^ key), b, n), GIVEN_SETS);
}

static int
slot_is(const struct given_slot *s, uint64_t key, const struct rules_addr *a)
{
	const void *b;
	size_t n;

	b = addr_bytes(a, &n);
	return s->key == key && s->family == a->family &&
	    memcmp(s->addr, b, n) == 0;
}

void
given_put(struct given *g, const char *run, const char *name,
    const struct rules_addr *addrs, size_t n, unsigned int ttl)
{
	struct given_slot *set, *use;
	uint64_t key;
	time_t now = now_s();
	const void *b;
	size_t i, w, k, len;

	if (g == NULL)
		return;
	key = given_key(g, run, name);
	for (i = 0; i < n; i++) {
		if (addrs[i].family != AF_INET && addrs[i].family != AF_INET6)
			continue;
		k = given_set(g, key, &addrs[i]);
		set = &g->slot[k * GIVEN_WAYS];
		pthread_mutex_lock(&g->lock[k % GIVEN_LOCKS]);
		use = &set[0];
		for (w = 0; w < GIVEN_WAYS; w++) {
			if (slot_is(&set[w], key, &addrs[i])) {
				use = &set[w];
				break;
			}
			/* ran out, or runs out first; of those, put first */
			if (set[w].until < now || set[w].until < use->until ||
			    (set[w].until == use->until &&
			    set[w].seq < use->seq))
				use = &set[w];
		}
		b = addr_bytes(&addrs[i], &len);
		use->key = key;
		use->family = addrs[i].family;
		memset(use->addr, 0, sizeof(use->addr));
		memcpy(use->addr, b, len);
		use->until = now + (time_t)ttl;
		use->seq = __atomic_add_fetch(&g->seq, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&g->lock[k % GIVEN_LOCKS]);
	}
}

int
given_has(struct given *g, const char *run, const char *name,
    const struct rules_addr *addr)
{
	struct given_slot *set;
	uint64_t key;
	time_t now = now_s();
	size_t k, w;
	int has = 0;

	if (g == NULL || (addr->family != AF_INET && addr->family != AF_INET6))
		return 0;
	key = given_key(g, run, name);
	k = given_set(g, key, addr);
	set = &g->slot[k * GIVEN_WAYS];
	pthread_mutex_lock(&g->lock[k % GIVEN_LOCKS]);
	for (w = 0; w < GIVEN_WAYS && !has; w++)
		has = slot_is(&set[w], key, addr) && set[w].until >= now;
	pthread_mutex_unlock(&g->lock[k % GIVEN_LOCKS]);
	return has;
}
