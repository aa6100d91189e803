/*
 * bld.c — the message builder of the C unit tests (contract in bld.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "bld.h"
#include "tap.h"

void
bld_need(const struct bld *b, size_t n)
{
	if (BLD_MAX - b->len < n) {
		tap_diag("bug in test: builder full (%zu + %zu)", b->len, n);
		exit(1);
	}
}

void
bld_reset(struct bld *b)
{
	b->len = 0;
}

void
bld_u8(struct bld *b, unsigned int v)
{
	bld_need(b, 1);
	b->b[b->len++] = v & 0xff;
}

void
bld_u16(struct bld *b, unsigned int v)
{
	bld_u8(b, v >> 8);
	bld_u8(b, v);
}

void
bld_u24(struct bld *b, unsigned int v)
{
	bld_u8(b, v >> 16);
	bld_u16(b, v);
}

void
bld_mem(struct bld *b, const void *p, size_t n)
{
	bld_need(b, n);
	if (n > 0)
		memcpy(b->b + b->len, p, n);
	b->len += n;
}

void
bld_fill(struct bld *b, uint8_t v, size_t n)
{
	bld_need(b, n);
	memset(b->b + b->len, v, n);
	b->len += n;
}

void
bld_put_be(uint8_t *p, size_t v, int width)
{
	int	 i;

	for (i = width - 1; i >= 0; i--) {
		p[i] = v & 0xff;
		v >>= 8;
	}
}

size_t
bld_open(struct bld *b, int width)
{
	size_t	 off = b->len;

	bld_fill(b, 0, (size_t)width);
	return off;
}

void
bld_close(struct bld *b, size_t off, int width)
{
	bld_put_be(b->b + off, b->len - off - (size_t)width, width);
}
