/*
 * test-runs.c — the runs table (proxy/runs.c) full: RUNS_MAX runs of 16
 * users, each with a sandbox address, ended in a random order in rounds;
 * after each round every live run is found by its id and token and by its
 * address, and no ended one is (the indexes' deletions keep every probe
 * whole).  Then the caps: a 257th run of one user and a 4097th run are
 * refused, an address or an id twice is refused, and a policy change with
 * a stale generation.  First, the tokens' MAC with a prepared key
 * (crypto_mac_key()) is libcrypto's HMAC-SHA256 (crypto_mac()).
 */
#include "config.h"

#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "rules.h"
#include "runs.h"
#include "tap.h"

#define USERS	16
#define ROUNDS	8

static struct run_reg	 regs[RUNS_MAX];
static int		 live[RUNS_MAX];

/* Run i: its id, token, owner and address (10.I/16-ish, unique). */
static void
make(size_t i, struct run_reg *reg)
{
	char a[INET_ADDRSTRLEN];

	memset(reg, 0, sizeof(*reg));
	snprintf(reg->id, sizeof(reg->id), "run-%05zu", i);
	snprintf(reg->token, sizeof(reg->token),
	    "%08zx0123456789abcdef0123456789abcdef", i);
	snprintf(reg->command, sizeof(reg->command), "agent");
	reg->pid = -1;
	reg->generation = -1;
	reg->uid = (uid_t)(1000 + i % USERS);
	snprintf(a, sizeof(a), "10.%zu.%zu.%zu", 1 + i / 65536,
	    (i / 256) % 256, i % 256);
	if (rules_addr_parse(a, &reg->addr) != RULES_OK)
		abort();
}

/* Every run is found (live) or not (ended), by credentials and address. */
static int
all_found(struct runs *runs)
{
	struct run *by_cred, *by_addr;
	size_t i, bad = 0;

	for (i = 0; i < RUNS_MAX; i++) {
		by_cred = runs_check(runs, regs[i].id, strlen(regs[i].id),
		    regs[i].token, strlen(regs[i].token));
		by_addr = runs_by_addr(runs, &regs[i].addr);
		if (live[i] ? by_cred == NULL || by_cred != by_addr ||
		    strcmp(run_id(by_cred), regs[i].id) != 0 :
		    by_cred != NULL || by_addr != NULL) {
			if (bad++ < 5)
				tap_diag("run %s: live %d, found %s/%s",
				    regs[i].id, live[i],
				    by_cred != NULL ? run_id(by_cred) : "-",
				    by_addr != NULL ? run_id(by_addr) : "-");
		}
		run_release(by_cred);
		run_release(by_addr);
	}
	return bad == 0;
}

/* crypto_mac_key() against HMAC(), keys and data of several lengths. */
static int
mac_agrees(void)
{
	static const size_t keylens[] = { 0, 1, 32, 63, 64, 65, 200 };
	static const size_t lens[] = { 0, 1, 32, 55, 56, 64, 128, 1000 };
	unsigned char key[200], data[1000], a[CRYPTO_MAC_BYTES];
	unsigned char b[CRYPTO_MAC_BYTES];
	struct crypto_key *k;
	size_t i, j;
	int bad = 0;

	for (i = 0; i < sizeof(key); i++)
		key[i] = (unsigned char)(i * 7 + 3);
	for (i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 13 + 5);
	for (i = 0; i < sizeof(keylens) / sizeof(keylens[0]); i++) {
		if ((k = crypto_key_new(key, keylens[i])) == NULL)
			return 0;
		for (j = 0; j < sizeof(lens) / sizeof(lens[0]); j++)
			if (crypto_mac(key, keylens[i], data, lens[j], a) != 0 ||
			    crypto_mac_key(k, data, lens[j], b) != 0 ||
			    memcmp(a, b, sizeof(a)) != 0) {
				tap_diag("key %zu bytes, data %zu: differs",
				    keylens[i], lens[j]);
				bad++;
			}
		crypto_key_free(k);
	}
	return bad == 0;
}

int
main(void)
{
	const struct runs_peer admin = { 0, 1 };
	struct run_reg extra;
	struct runs *runs;
	unsigned long long gen;
	char why[256];
	size_t i, n, added = 0, round, ended;

	tap_ok(mac_agrees(), "a prepared key's MAC is HMAC-SHA256's, for keys "
	    "and data of 0 to 1000 bytes");
	if ((runs = runs_new(NULL, NULL, NULL, why, sizeof(why))) == NULL) {
		tap_ok(0, "a table: %s", why);
		return tap_done();
	}
	srandom(22);
	for (i = 0; i < RUNS_MAX; i++) {
		make(i, &regs[i]);
		if (runs_add(runs, &regs[i], NULL) == RUNS_ADDED)
			added++;
		live[i] = 1;
	}
	tap_is_int((long long)added, RUNS_MAX, "%d runs of %d users added",
	    RUNS_MAX, USERS);
	/* 16 users of 256 runs each: every cap is reached at once */
	make(RUNS_MAX, &extra);
	snprintf(extra.id, sizeof(extra.id), "run-extra");
	tap_is_int(runs_add(runs, &extra, NULL), RUNS_FULL,
	    "one more: refused, the table is full");
	tap_ok(all_found(runs), "every run found by its credentials and by its "
	    "address");
	for (round = 0; round < ROUNDS; round++) {
		ended = 0;
		n = RUNS_MAX / ROUNDS;
		while (n > 0) {
			i = (size_t)random() % RUNS_MAX;
			if (!live[i])
				continue;
			if (runs_end(runs, regs[i].id, &admin) != 0)
				break;
			live[i] = 0;
			ended++;
			n--;
		}
		tap_ok(n == 0 && all_found(runs), "round %zu: %zu runs ended at "
		    "random; the others found, these not", round + 1, ended);
	}
	/* empty again: a user's cap, then ids and addresses once */
	for (i = 0; i < RUNS_PER_USER_MAX; i++) {
		regs[i].uid = 1000;
		if (runs_add(runs, &regs[i], NULL) != RUNS_ADDED)
			break;
		live[i] = 1;
	}
	tap_is_int((long long)i, RUNS_PER_USER_MAX, "one user: %d runs",
	    RUNS_PER_USER_MAX);
	regs[RUNS_PER_USER_MAX].uid = 1000;
	tap_is_int(runs_add(runs, &regs[RUNS_PER_USER_MAX], NULL),
	    RUNS_USER_FULL, "its next is refused: the user's cap");
	regs[RUNS_PER_USER_MAX].uid = 1001;
	memcpy(extra.id, regs[0].id, sizeof(extra.id));
	extra.uid = 1001;
	tap_is_int(runs_add(runs, &extra, NULL), RUNS_EXISTS,
	    "an id registered already: refused");
	snprintf(extra.id, sizeof(extra.id), "run-extra");
	extra.addr = regs[1].addr;
	tap_is_int(runs_add(runs, &extra, NULL), RUNS_ADDR_TAKEN,
	    "another run's address: refused");
	tap_ok(all_found(runs), "the runs of one user found, the others not");
	tap_is_int(runs_set_policy(runs, regs[0].id, &admin, 2, NULL, NULL,
	    &gen), -4, "a policy change with a stale generation: refused");
	tap_is_int((long long)gen, 1, "... naming the generation, 1");
	tap_is_int(runs_set_policy(runs, regs[0].id, &admin, 1, NULL, NULL,
	    &gen), 0, "with the right one: made");
	tap_is_int((long long)gen, 2, "... generation 2");
	runs_free(runs);
	return tap_done();
}
