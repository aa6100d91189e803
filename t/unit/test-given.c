/*
 * test-given.c — proxy/given.c: what the DNS filter gave a run for a name
 * is found again for that run and name only, for its TTL only; a full set
 * lets the entry that runs out first go; from several threads at once.
 */
#include "config.h"

#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "given.h"
#include "tap.h"

#define THREADS		4
#define PER_THREAD	20000

static struct rules_addr
addr_of(const char *text)
{
	struct rules_addr a;

	memset(&a, 0, sizeof(a));
	if (inet_pton(AF_INET, text, &a.v4) == 1)
		a.family = AF_INET;
	else if (inet_pton(AF_INET6, text, &a.v6) == 1)
		a.family = AF_INET6;
	return a;
}

static void
basics(void)
{
	struct given *g = given_new();
	struct rules_addr two[2], a;

	tap_ok(g != NULL, "a table");
	two[0] = addr_of("198.51.100.10");
	two[1] = addr_of("2001:db8::10");
	given_put(g, "run-a", "web.test", two, 2, 60);
	a = addr_of("198.51.100.10");
	tap_is_int(given_has(g, "run-a", "web.test", &a), 1,
	    "the run's address of the name is found");
	a = addr_of("2001:db8::10");
	tap_is_int(given_has(g, "run-a", "web.test", &a), 1,
	    "and its IPv6 one");
	a = addr_of("198.51.100.11");
	tap_is_int(given_has(g, "run-a", "web.test", &a), 0,
	    "another address of that name is not");
	a = addr_of("198.51.100.10");
	tap_is_int(given_has(g, "run-b", "web.test", &a), 0,
	    "another run's is not");
	tap_is_int(given_has(g, "", "web.test", &a), 0,
	    "no run's is not");
	tap_is_int(given_has(g, "run-a", "other.test", &a), 0,
	    "another name's is not");
	tap_is_int(given_has(g, "run-aweb.test", "", &a), 0,
	    "the run and the name are not run together");
	a = addr_of("::ffff:198.51.100.10");
	tap_is_int(given_has(g, "run-a", "web.test", &a), 0,
	    "an IPv4-mapped IPv6 address is another family");
	given_put(g, "run-a", "short.test", two, 1, 0);
	a = addr_of("198.51.100.10");
	tap_is_int(given_has(g, "run-a", "short.test", &a), 1,
	    "a TTL of 0 lasts the second it was given in");
	sleep(2);
	tap_is_int(given_has(g, "run-a", "short.test", &a), 0,
	    "then it has run out");
	tap_is_int(given_has(g, "run-a", "web.test", &a), 1,
	    "one with a TTL left is still there");
	tap_is_int(given_has(NULL, "run-a", "web.test", &a), 0,
	    "no table: nothing given");
	given_put(NULL, "run-a", "web.test", two, 2, 60);
	given_free(g);
	given_free(NULL);
}

/*
 * More entries than slots: what was put last is there, what is kept is
 * bounded; nothing is found that was not put.
 */
static void
bounded(void)
{
	struct given *g = given_new();
	struct rules_addr a;
	char name[64];
	int i, last = 0, first = 0, stray = 0;

	for (i = 0; i < 4 * GIVEN_SLOTS; i++) {
		snprintf(name, sizeof(name), "n%d.test", i);
		a = addr_of("198.51.100.1");
		a.v4.s_addr = htonl(0xc6336400u + (unsigned)(i % 200));
		given_put(g, "run-a", name, &a, 1, 60);
	}
	for (i = 0; i < 4 * GIVEN_SLOTS; i++) {
		snprintf(name, sizeof(name), "n%d.test", i);
		a = addr_of("198.51.100.1");
		a.v4.s_addr = htonl(0xc6336400u + (unsigned)(i % 200));
		if (given_has(g, "run-a", name, &a)) {
			if (i >= 3 * GIVEN_SLOTS)
				last++;
			else
				first++;
		}
		a = addr_of("203.0.113.7");	/* never put */
		stray += given_has(g, "run-a", name, &a);
	}
	tap_ok(first + last <= GIVEN_SLOTS, "at most %d kept (%d)",
	    GIVEN_SLOTS, first + last);
	tap_ok(last > GIVEN_SLOTS / 2, "the last %d put: %d still there",
	    GIVEN_SLOTS, last);
	tap_is_int(stray, 0, "nothing found that was not put");
	given_free(g);
}

static struct given *shared;

static void *
worker(void *arg)
{
	long id = (long)arg;
	struct rules_addr a;
	char run[32];
	int i, *misses = calloc(1, sizeof(int));

	snprintf(run, sizeof(run), "run-%ld", id);
	for (i = 0; i < PER_THREAD && misses != NULL; i++) {
		a = addr_of("198.51.100.1");
		a.v4.s_addr = htonl(0xc6336400u + (unsigned)(i % 64));
		given_put(shared, run, "web.test", &a, 1, 60);
		if (!given_has(shared, run, "web.test", &a))
			(*misses)++;
	}
	return misses;
}

static void
threads(void)
{
	pthread_t t[THREADS];
	void *r;
	long i;
	int misses = 0;

	shared = given_new();
	for (i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
			tap_ok(0, "pthread_create");
	for (i = 0; i < THREADS; i++) {
		pthread_join(t[i], &r);
		misses += r != NULL ? *(int *)r : PER_THREAD;
		free(r);
	}
	tap_is_int(misses, 0, "%d threads, each putting and finding %d: "
	    "each found what it put", THREADS, PER_THREAD);
	given_free(shared);
}

int
main(void)
{
	basics();
	bounded();
	threads();
	return tap_done();
}
