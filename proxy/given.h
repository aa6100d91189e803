/*
 * given.h — the addresses the DNS filter gave, remembered for the
 * transparent listener (intutic-proxy(8), TRANSPARENT LISTENER).
 *
 * A name's answers differ from one look-up to the next (round robin, a
 * CDN's view): the address a client connects to may not be among the
 * proxy's own answers when its connection comes, and yet be one the
 * filter gave that client's run for that name.  Such an address is
 * dialled as the client chose it; any other is not (the proxy's own
 * answer is).  What is kept is bounded (GIVEN_SLOTS), each for the TTL it
 * was given with; a forgotten one only costs the client its own choice.
 * Safe to call from every worker.
 */
#ifndef INTUTIC_GIVEN_H
#define INTUTIC_GIVEN_H

#include <stddef.h>

#include "rules.h"

#define GIVEN_SLOTS	8192	/* (run, name, address)s kept */
#define GIVEN_WAYS	4	/* set-associative: slots a key may take */
#define GIVEN_LOCKS	16	/* the slots' locks, striped by set */

struct given;

/* NULL when out of memory. */
struct given	*given_new(void);
void		 given_free(struct given *g);

/*
 * The filter gave run ("" for none) these n addresses for name (canonical),
 * for ttl seconds.
 */
void		 given_put(struct given *g, const char *run, const char *name,
		    const struct rules_addr *addrs, size_t n, unsigned int ttl);

/* 1 when run was given addr for name, and its TTL has not run out. */
int		 given_has(struct given *g, const char *run, const char *name,
		    const struct rules_addr *addr);

#endif /* INTUTIC_GIVEN_H */
