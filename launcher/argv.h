/*
 * argv.h — the one builder of argument vectors for the programs the
 * launcher runs (podman or docker, qemu or firecracker, ssh): it grows as
 * words are added, copies what it formats, and says once, at the end,
 * whether it could hold them all.  No vector is counted by hand.
 *
 *	struct argvb b;
 *
 *	argvb_init(&b);
 *	argvb_add(&b, "podman");
 *	argvb_addf(&b, "--memory=%s", memory);
 *	if ((argv = argvb_done(&b)) == NULL)
 *		... out of memory ...
 *	... run argv ...
 *	argvb_free(&b);
 */
#ifndef INTUTIC_ARGV_H
#define INTUTIC_ARGV_H

#include <stddef.h>

struct argvb {
	char	**v;		/* the words, NULL after the last */
	size_t	  n, cap;
	char	**made;		/* the copies argvb_addf() made */
	size_t	  nmade, madecap;
	int	  failed;	/* an add ran out of memory */
};

void	 argvb_init(struct argvb *b);

/* Adds s as it is: it must outlive the vector. */
void	 argvb_add(struct argvb *b, const char *s);

/* Adds the formatted word, a copy the builder frees. */
void	 argvb_addf(struct argvb *b, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

/* The vector, NULL-terminated; NULL when an add failed. */
char	**argvb_done(struct argvb *b);

/* The words added so far. */
size_t	 argvb_count(const struct argvb *b);

/* Frees the vector and the copies (not the words added as they were). */
void	 argvb_free(struct argvb *b);

#endif /* INTUTIC_ARGV_H */
