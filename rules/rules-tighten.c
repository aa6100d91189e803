/*
 * rules-tighten.c — does a project's rule set only narrow the operator's?
 *
 * The operator's rules are a ceiling: a project file
 * may narrow them, never widen them.  Each allow entry of the project
 * stands for a set of destinations — one name, every name below a name
 * (with or without the name itself), or an address block — on each port
 * it allows, and the question is whether the operator's allow entries let
 * all of that set through too.  Sets are compared, not sampled:
 *
 *   - one name: the operator's decision on (name, port), rules_decide();
 *   - the names below x, an infinite set: only one wildcard can hold it,
 *     one whose name is x or a parent of x;
 *   - x itself (for "**.x"): any allow entry that matches x;
 *   - an address block: the operator's allow blocks of the same family on
 *     that port, together, must hold every address of it.
 *
 * An allow entry that one deny entry of the operator's wholly denies on a
 * port is refused as well, naming that deny entry.  A deny entry inside
 * the project's set (the operator denies bad.example.com, the project
 * allows *.example.com) is not a widening: the operator's deny entries
 * keep applying, and deny wins.
 *
 * This runs once per run, not per decision: a wildcard or address entry of
 * the project costs a walk over the operator's entries per port.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"
#include "rules-int.h"

/* What of a name wildcard's set an entry must hold. */
#define COVER_APEX	0x1	/* x itself */
#define COVER_BELOW	0x2	/* every name below x */

/* The message being written into the caller's buffer; cut, never overrun. */
struct why {
	char	*buf;
	size_t	 len;
	size_t	 off;
};

/* An address block as its first and last address, big-endian. */
struct span {
	uint8_t	 lo[16];
	uint8_t	 hi[16];
};

struct tighten {
	const struct rules	*ceiling;
	const struct rules	*project;
	struct why		 why;
	struct span		*spans;	/* scratch for address blocks */
	size_t			 spans_cap;
};

static void __attribute__((format(printf, 2, 3)))
why_add(struct why *w, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (w->len == 0 || w->off >= w->len - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(w->buf + w->off, w->len - w->off, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	w->off += (size_t)n;
	if (w->off > w->len - 1)
		w->off = w->len - 1;
}

/*
 * Adds s with control bytes written as \xHH: paths come from the file
 * system and may hold anything, and `why` is one line.
 */
static void
why_text(struct why *w, const char *s)
{
	unsigned char c;

	for (; *s != '\0'; s++) {
		c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f) {
			why_add(w, "\\x%02x", c);
		} else if (w->len > 0 && w->off < w->len - 1) {
			w->buf[w->off++] = (char)c;
			w->buf[w->off] = '\0';
		}
	}
}

/* "FILE:LINE: allow 'TEXT'" */
static void
why_where(struct why *w, const struct rules_entry *e)
{
	why_text(w, e->file);
	why_add(w, ":%lu: %s '", (unsigned long)e->line,
	    e->deny ? "deny" : "allow");
	why_text(w, e->text);
	why_add(w, "'");
}

/* "FILE:LINE: allow 'TEXT': ", the project's entry that widens */
static void
why_entry(struct why *w, const struct rules_entry *e)
{
	why_where(w, e);
	why_add(w, ": ");
}

/* "the operator's rules (PATH)" */
static void
why_ceiling(struct tighten *t)
{
	why_add(&t->why, "the operator's rules (");
	why_text(&t->why, t->ceiling->path != NULL ? t->ceiling->path : "-");
	why_add(&t->why, ")");
}

/* " (FILE:LINE: deny 'TEXT'TAIL)", the ceiling's entry in question */
static void
why_ref(struct why *w, const struct rules_entry *e, const char *tail)
{
	why_add(w, " (");
	why_where(w, e);
	why_add(w, "%s)", tail);
}

/* The ports an entry allows: its own, or its file's `ports:` list. */
static const uint16_t *
entry_ports(const struct rules *r, const struct rules_entry *e, size_t *n)
{
	if (e->nports > 0) {
		*n = e->nports;
		return e->ports;
	}
	*n = r->ndefault_ports;
	return r->default_ports;
}

/* Whether entry e of r applies on port (a deny entry without ports: all). */
static int
port_ok(const struct rules *r, const struct rules_entry *e, uint16_t port)
{
	const uint16_t *p;
	size_t i, n;

	if (e->deny && e->nports == 0)
		return 1;
	p = entry_ports(r, e, &n);
	for (i = 0; i < n; i++)
		if (p[i] == port)
			return 1;
	return 0;
}

/* ---------------------------------------------------------------- names */

/* Whether name x lies strictly below name y ("a.b.c" below "b.c"). */
static int
name_below(const char *x, size_t xlen, const char *y, size_t ylen)
{
	return xlen > ylen + 1 && x[xlen - ylen - 1] == '.' &&
	    memcmp(x + xlen - ylen, y, ylen) == 0;
}

/* What of {x} and the names below x the name entry c matches. */
static int
name_cover(const struct rules_entry *c, const char *x, size_t xlen)
{
	int same = c->keylen == xlen && memcmp(c->key, x, xlen) == 0;

	switch (c->match) {
	case RULES_MATCH_EXACT:
		return same ? COVER_APEX : 0;
	case RULES_MATCH_BELOW:
		if (same)
			return COVER_BELOW;
		return name_below(x, xlen, c->key, c->keylen) ?
		    COVER_APEX | COVER_BELOW : 0;
	case RULES_MATCH_SUBTREE:
		if (same || name_below(x, xlen, c->key, c->keylen))
			return COVER_APEX | COVER_BELOW;
		return 0;
	default:
		return 0;
	}
}

/*
 * The first entry of r, deny or allow as asked, that applies on port and
 * matches all of what `need` names of x; NULL when none does.
 */
static const struct rules_entry *
name_find(const struct rules *r, int deny, int need, const char *x,
    size_t xlen, uint16_t port)
{
	const struct rules_entry *c;
	size_t i;

	for (i = 0; i < r->nentries; i++) {
		c = &r->entries[i];
		if (c->deny != deny || c->match == RULES_MATCH_CIDR ||
		    (name_cover(c, x, xlen) & need) != need ||
		    !port_ok(r, c, port))
			continue;
		return c;
	}
	return NULL;
}

/* An exact name: the operator's own decision on it, port by port. */
static int
check_exact(struct tighten *t, const struct rules_entry *e, uint16_t port)
{
	struct rules_host h;
	struct rules_decision d;
	struct why *w = &t->why;

	memset(&h, 0, sizeof(h));
	h.kind = RULES_HOST_NAME;
	memcpy(h.text, e->key, e->keylen);
	h.len = e->keylen;
	rules_decide(t->ceiling, &h, port, &d);
	if (d.verdict == RULES_ALLOW)
		return 0;
	why_entry(w, e);
	why_ceiling(t);
	if (d.reason == RULES_REASON_DENIED) {
		why_add(w, " deny %s:%u", h.text, port);
		why_ref(w, d.entry, "");
	} else {
		why_add(w, " do not allow %s:%u", h.text, port);
		if (d.reason == RULES_REASON_PORT_NOT_ALLOWED)
			why_ref(w, d.entry, " is for other ports");
	}
	return -1;
}

/* "*.x" (the names below x) or "**.x" (x too). */
static int
check_wild(struct tighten *t, const struct rules_entry *e, uint16_t port)
{
	const struct rules_entry *c;
	struct why *w = &t->why;
	int whole = COVER_BELOW;

	if (e->match == RULES_MATCH_SUBTREE)
		whole |= COVER_APEX;
	if ((c = name_find(t->ceiling, 1, whole, e->key, e->keylen,
	    port)) != NULL) {
		why_entry(w, e);
		why_ceiling(t);
		if (whole & COVER_APEX)
			why_add(w, " deny %s and every name below it on "
			    "port %u", e->key, port);
		else
			why_add(w, " deny every name below %s on port %u",
			    e->key, port);
		why_ref(w, c, "");
		return -1;
	}
	if (name_find(t->ceiling, 0, COVER_BELOW, e->key, e->keylen,
	    port) == NULL) {
		why_entry(w, e);
		why_ceiling(t);
		why_add(w, " do not allow every name below %s on port %u",
		    e->key, port);
		return -1;
	}
	/* x itself may come from another entry than the names below it. */
	if ((whole & COVER_APEX) && name_find(t->ceiling, 0, COVER_APEX,
	    e->key, e->keylen, port) == NULL) {
		why_entry(w, e);
		why_ceiling(t);
		why_add(w, " do not allow %s:%u", e->key, port);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ addresses */

static size_t
family_len(uint8_t fam)
{
	return fam == 4 ? 4 : 16;
}

static void
span_of(const uint8_t *key, struct span *s)
{
	size_t i, alen = family_len(key[0]);
	unsigned int plen = key[1], bits;
	uint8_t mask;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < alen; i++) {
		bits = plen > i * 8 ? plen - (unsigned int)i * 8 : 0;
		if (bits > 8)
			bits = 8;
		mask = bits == 0 ? 0 : (uint8_t)(0xff << (8 - bits));
		s->lo[i] = key[2 + i] & mask;
		s->hi[i] = key[2 + i] | (uint8_t)~mask;
	}
}

static int
span_cmp(const void *a, const void *b)
{
	return memcmp(((const struct span *)a)->lo,
	    ((const struct span *)b)->lo, sizeof(((const struct span *)a)->lo));
}

/* a + 1, big-endian over alen bytes (never called on all ones). */
static void
addr_next(uint8_t *a, size_t alen)
{
	size_t i;

	for (i = alen; i > 0; i--)
		if (++a[i - 1] != 0)
			break;
}

/* "10.0.0.0/8", "2001:db8::/32", "192.0.2.1:443", "[2001:db8::1]:443" */
static void
why_block(struct why *w, const uint8_t *key, uint16_t port, int whole)
{
	char a[INET6_ADDRSTRLEN];
	unsigned int plen = key[1];
	int fam = key[0] == 4 ? AF_INET : AF_INET6;

	if (inet_ntop(fam, key + 2, a, sizeof(a)) == NULL)
		snprintf(a, sizeof(a), "?");
	if (plen == (fam == AF_INET ? 32u : 128u))
		why_add(w, fam == AF_INET ? "%s:%u" : "[%s]:%u", a, port);
	else if (whole)
		why_add(w, "all of %s/%u on port %u", a, plen, port);
	else
		why_add(w, "every address in %s/%u on port %u", a, plen, port);
}

/*
 * Whether the allow blocks of the ceiling of the same family that apply on
 * port hold every address of the block `key`, together: one of them
 * holding it all, or the ones inside it leaving no gap.  0 or 1; -1 when
 * out of memory.
 */
static int
block_covered(struct tighten *t, const uint8_t *key, uint16_t port)
{
	const struct rules *r = t->ceiling;
	const struct rules_entry *c;
	const uint8_t *ck;
	struct span want, *s;
	uint8_t cur[16];
	size_t i, n = 0, alen = family_len(key[0]);

	for (i = 0; i < r->nentries; i++) {
		c = &r->entries[i];
		ck = (const uint8_t *)c->key;
		if (c->deny || c->match != RULES_MATCH_CIDR || ck[0] != key[0] ||
		    !port_ok(r, c, port))
			continue;
		if (ck[1] <= key[1] && rules_prefix_match(key + 2, ck + 2, ck[1]))
			return 1;
		if (ck[1] > key[1] && rules_prefix_match(ck + 2, key + 2, key[1])) {
			if (n == t->spans_cap) {
				size_t cap = n == 0 ? 64 : n * 2;

				if ((s = reallocarray(t->spans, cap,
				    sizeof(*s))) == NULL)
					return -1;
				t->spans = s;
				t->spans_cap = cap;
			}
			span_of(ck, &t->spans[n++]);
		}
	}
	if (n == 0)
		return 0;
	/* Blocks nest or are apart: sorted by start, they must join up. */
	qsort(t->spans, n, sizeof(*t->spans), span_cmp);
	span_of(key, &want);
	memcpy(cur, want.lo, sizeof(cur));
	for (i = 0; i < n; i++) {
		s = &t->spans[i];
		if (memcmp(s->lo, cur, alen) > 0)
			return 0;
		if (memcmp(s->hi, cur, alen) < 0)
			continue;
		if (memcmp(s->hi, want.hi, alen) >= 0)
			return 1;
		memcpy(cur, s->hi, sizeof(cur));
		addr_next(cur, alen);
	}
	return 0;
}

/* An address or block: allow blocks hold it all, no deny entry all of it. */
static int
check_block(struct tighten *t, const struct rules_entry *e, uint16_t port)
{
	const struct rules *r = t->ceiling;
	const struct rules_entry *c, *deny = NULL;
	const uint8_t *key = (const uint8_t *)e->key, *ck;
	struct rules_host h;
	struct rules_decision d;
	struct why *w = &t->why;
	size_t i;
	int ok;

	for (i = 0; i < r->nentries && deny == NULL; i++) {
		c = &r->entries[i];
		ck = (const uint8_t *)c->key;
		if (c->deny && c->match == RULES_MATCH_CIDR && ck[0] == key[0] &&
		    ck[1] <= key[1] && rules_prefix_match(key + 2, ck + 2, ck[1]) &&
		    port_ok(r, c, port))
			deny = c;
	}
	if (deny == NULL && key[1] == (key[0] == 4 ? 32 : 128)) {
		/* One address: the decision sees the IPv4 inside IPv6 too. */
		memset(&h, 0, sizeof(h));
		if (key[0] == 4) {
			h.kind = RULES_HOST_IPV4;
			memcpy(&h.v4, key + 2, 4);
		} else {
			h.kind = RULES_HOST_IPV6;
			memcpy(&h.v6, key + 2, 16);
		}
		rules_decide(r, &h, port, &d);
		if (d.reason == RULES_REASON_DENIED)
			deny = d.entry;
	}
	if (deny != NULL) {
		why_entry(w, e);
		why_ceiling(t);
		why_add(w, " deny ");
		why_block(w, key, port, 1);
		why_ref(w, deny, "");
		return -1;
	}
	if ((ok = block_covered(t, key, port)) == 1)
		return 0;
	why_entry(w, e);
	if (ok == -1) {
		why_add(w, "out of memory");
		return -1;
	}
	why_ceiling(t);
	why_add(w, " do not allow ");
	why_block(w, key, port, 0);
	return -1;
}

/* ------------------------------------------------------------- the sets */

static int
check_entry(struct tighten *t, const struct rules_entry *e)
{
	const uint16_t *ports;
	size_t i, n;
	int ret = 0;

	ports = entry_ports(t->project, e, &n);
	for (i = 0; i < n && ret == 0; i++) {
		switch (e->match) {
		case RULES_MATCH_EXACT:
			ret = check_exact(t, e, ports[i]);
			break;
		case RULES_MATCH_BELOW:
		case RULES_MATCH_SUBTREE:
			ret = check_wild(t, e, ports[i]);
			break;
		default:
			ret = check_block(t, e, ports[i]);
			break;
		}
	}
	return ret;
}

int
rules_tightens(const struct rules *ceiling, const struct rules *project,
    char *why, size_t whylen)
{
	struct tighten t;
	const struct rules *p = project;
	size_t i;
	int ret = -1;

	memset(&t, 0, sizeof(t));
	t.ceiling = ceiling;
	t.project = project;
	t.why.buf = why;
	t.why.len = why != NULL ? whylen : 0;
	if (t.why.len > 0)
		why[0] = '\0';

	if (p->mode == RULES_MODE_REPORT &&
	    ceiling->mode == RULES_MODE_ENFORCE) {
		why_text(&t.why, p->path != NULL ? p->path : "-");
		if (p->mode_line != 0)
			why_add(&t.why, ":%lu", p->mode_line);
		why_add(&t.why, ": mode 'report': ");
		why_ceiling(&t);
		why_add(&t.why, " are in enforce mode; a project file may "
		    "not switch to report");
		goto out;
	}
	if (p->nproviders > 0) {
		why_text(&t.why, p->provider_file != NULL ?
		    p->provider_file : "-");
		why_add(&t.why, ":%lu: provider '", p->provider_line);
		why_text(&t.why, p->providers[0].name);
		why_add(&t.why, "': a project file may not define providers "
		    "(they add allow entries and forward key variables: "
		    "only the operator's rules may)");
		goto out;
	}
	for (i = 0; i < p->nentries; i++) {
		if (p->entries[i].deny)
			continue;	/* a deny entry only narrows */
		if (check_entry(&t, &p->entries[i]) != 0)
			goto out;
	}
	ret = 0;
 out:
	free(t.spans);
	return ret;
}
