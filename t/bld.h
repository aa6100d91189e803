/*
 * bld.h — a buffer the C unit tests build wire messages in (a TLS
 * ClientHello, a DNS query), field by field: bytes and big-endian integers
 * appended, and length fields opened before what they count and written
 * once it is there.  The buffer is part of the structure, so a test keeps
 * a few as static scratch and never frees anything.
 *
 * Writing past BLD_MAX is a bug in the test: it is reported as a TAP
 * diagnostic (tap.h) and the program exits 1.
 */
#ifndef INTUTIC_BLD_H
#define INTUTIC_BLD_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of one buffer: a DNS message over TCP, two of the longest hellos. */
#define BLD_MAX		(64 * 1024)

struct bld {
	uint8_t		 b[BLD_MAX];
	size_t		 len;		/* bytes written */
};

/* Empties b. */
void	 bld_reset(struct bld *b);

/* Returns when n more bytes fit in b; else reports the bug and exits 1. */
void	 bld_need(const struct bld *b, size_t n);

/* Appends v's low 8, 16 or 24 bits, big-endian. */
void	 bld_u8(struct bld *b, unsigned int v);
void	 bld_u16(struct bld *b, unsigned int v);
void	 bld_u24(struct bld *b, unsigned int v);

/* Appends p[0..n) (p may be NULL when n is 0), or n bytes of v. */
void	 bld_mem(struct bld *b, const void *p, size_t n);
void	 bld_fill(struct bld *b, uint8_t v, size_t n);

/*
 * Opens a length field of width bytes (1..4) at the end of b, zero for
 * now, and returns its offset; bld_close(b, offset, width) writes into it
 * the number of bytes appended after it since.
 */
size_t	 bld_open(struct bld *b, int width);
void	 bld_close(struct bld *b, size_t off, int width);

/* Writes v big-endian in width bytes at p (its low bytes when wider). */
void	 bld_put_be(uint8_t *p, size_t v, int width);

#endif /* INTUTIC_BLD_H */
