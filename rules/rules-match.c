/*
 * rules-match.c — entries, the compiled rule set and decisions.
 *
 * Names are looked up in one hash table keyed by canonical name: exact
 * entries under the name itself, "*.x" and "**.x" entries under x.  A
 * decision hashes the destination once, from its last byte backwards, so the
 * hash of every suffix at a label boundary falls out of one pass; each
 * suffix costs one probe.  CIDR entries live in a second table keyed by
 * (family, prefix length, masked address), probed once per prefix length in
 * use.  Neither cost grows with the number of entries.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "rules.h"
#include "rules-int.h"

/* ---------------------------------------------------------------- arena */

struct rules_arena_block {
	struct rules_arena_block	*next;
	size_t				 used;
	size_t				 size;
	max_align_t			 data[];
};

/*
 * A set's first block is small, each next one twice the last, up to the
 * largest: a run's policy of a few entries takes a few hundred bytes near
 * its other allocations, not a block of its own pages (with a thousand
 * runs, a page each would miss the TLB on every request), and an
 * operator's file of thousands of entries still takes a few blocks.
 */
#define ARENA_BLOCK_MIN		(1024 - sizeof(struct rules_arena_block))
#define ARENA_BLOCK_MAX		(256 * 1024)

void *
rules_arena_alloc(struct rules_arena *a, size_t len)
{
	struct rules_arena_block *b = a->head;
	size_t align = sizeof(max_align_t), size;
	void *p;

	len = (len + align - 1) & ~(align - 1);
	if (b == NULL || b->size - b->used < len) {
		size = b == NULL ? ARENA_BLOCK_MIN : b->size < ARENA_BLOCK_MAX / 2 ?
		    b->size * 2 : ARENA_BLOCK_MAX;
		if (size < len)
			size = len;
		if ((b = malloc(sizeof(*b) + size)) == NULL)
			return NULL;
		b->used = 0;
		b->size = size;
		b->next = a->head;
		a->head = b;
	}
	p = (char *)b->data + b->used;
	b->used += len;
	return p;
}

char *
rules_arena_strndup(struct rules_arena *a, const char *s, size_t len)
{
	char *p;

	if ((p = rules_arena_alloc(a, len + 1)) == NULL)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

static void
arena_release(struct rules_arena *a)
{
	struct rules_arena_block *b, *next;

	for (b = a->head; b != NULL; b = next) {
		next = b->next;
		free(b);
	}
	a->head = NULL;
}

/* ----------------------------------------------------------- rule sets */

struct rules *
rules_new(void)
{
	struct rules *r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->refs = 1;
	r->mode = RULES_MODE_ENFORCE;
	r->default_ports[0] = 443;
	r->default_ports[1] = 80;
	r->ndefault_ports = 2;
	return r;
}

struct rules *
rules_ref(struct rules *r)
{
	__atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
	return r;
}

/* Asks for lines [p, p + len) to be brought in, at most max of them. */
static void
prefetch_lines(const void *p, size_t len, size_t max)
{
	const char *c = p;
	size_t off;

	for (off = 0; off < len && off < max * 64; off += 64)
		__builtin_prefetch(c + off);
}

void
rules_prefetch_blind(const struct rules *r)
{
	/*
	 * A small set's other parts were allocated right after it, by one
	 * thread, one after the other: most likely they follow it.
	 */
	prefetch_lines(r, 2048, 32);
}

void
rules_prefetch(const struct rules *r)
{
	prefetch_lines(r, offsetof(struct rules, path), 8);
	prefetch_lines(r->names.slots, (r->names.mask + 1) *
	    sizeof(*r->names.slots), 4);
	prefetch_lines(r->entries, r->nentries * sizeof(*r->entries), 4);
	if (r->cidrs.slots != NULL)
		prefetch_lines(r->cidrs.slots, (r->cidrs.mask + 1) *
		    sizeof(*r->cidrs.slots), 2);
	if (r->arena.head != NULL)	/* the newest block: keys, ports */
		prefetch_lines(r->arena.head, 256, 4);
}

void
rules_free(struct rules *r)
{
	if (r == NULL || __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	free(r->names.slots);
	free(r->cidrs.slots);
	free(r->entries);
	free(r->providers);
	free(r->path);
	arena_release(&r->arena);
	free(r);
}

enum rules_mode
rules_mode(const struct rules *r)
{
	return r->mode;
}

const char *
rules_path(const struct rules *r)
{
	return r->path;
}

size_t
rules_count(const struct rules *r)
{
	return r->nentries;
}

const struct rules_entry *
rules_entry_at(const struct rules *r, size_t i)
{
	return i < r->nentries ? &r->entries[i] : NULL;
}

size_t
rules_default_ports(const struct rules *r, uint16_t *ports)
{
	memcpy(ports, r->default_ports,
	    r->ndefault_ports * sizeof(*ports));
	return r->ndefault_ports;
}

size_t
rules_provider_count(const struct rules *r)
{
	return r->nproviders;
}

const struct rules_provider *
rules_provider_get(const struct rules *r, size_t i)
{
	return i < r->nproviders ? &r->providers[i] : NULL;
}

const struct rules_provider *
rules_provider_find(const struct rules *r, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < r->nproviders; i++)
		if (strlen(r->providers[i].name) == len &&
		    memcmp(r->providers[i].name, name, len) == 0)
			return &r->providers[i];
	return NULL;
}

/* -------------------------------------------------------------- entries */

int
rules_ports_parse(const char *s, size_t len, uint16_t *ports, size_t *nports)
{
	size_t i, j, start = 0;
	int r;

	*nports = 0;
	for (i = 0; i <= len; i++) {
		if (i < len && s[i] != ',')
			continue;
		if (*nports == RULES_PORTS_MAX)
			return RULES_ERR_TOO_MANY_PORTS;
		if ((r = rules_port_parse(s + start, i - start,
		    &ports[*nports])) != RULES_OK)
			return r;
		for (j = 0; j < *nports; j++)
			if (ports[j] == ports[*nports])
				return RULES_ERR_DUPLICATE_PORT;
		(*nports)++;
		start = i + 1;
	}
	return RULES_OK;
}

static size_t
count_labels(const char *s, size_t len)
{
	size_t i, n = 1;

	for (i = 0; i < len; i++)
		if (s[i] == '.')
			n++;
	return n;
}

static void
cidr_key(uint8_t key[RULES_CIDR_KEY_LEN], int family, unsigned int plen,
    const uint8_t *addr)
{
	unsigned int full = plen / 8, rest = plen % 8;

	memset(key, 0, RULES_CIDR_KEY_LEN);
	key[0] = family == AF_INET ? 4 : 6;
	key[1] = (uint8_t)plen;
	memcpy(key + 2, addr, full);
	if (rest != 0)
		key[2 + full] = addr[full] & (uint8_t)(0xff << (8 - rest));
}

/*
 * Parses a CIDR entry "ADDR/LEN[:PORTS]" or "[V6]/LEN[:PORTS]" into its
 * family, prefix length and address; sets *ports to the port text or NULL.
 */
static int
parse_cidr(const char *s, size_t len, int *family, unsigned int *plen,
    uint8_t addr[16], const char **ports, size_t *portslen)
{
	struct rules_addr a;
	char buf[INET6_ADDRSTRLEN + 1];
	const char *slash = memchr(s, '/', len), *p, *end = s + len;
	size_t alen;
	unsigned int v = 0, max;
	int r;

	*ports = NULL;
	*portslen = 0;
	if (slash == NULL)
		return RULES_ERR_CIDR;
	p = s;
	alen = (size_t)(slash - s);
	if (alen > 0 && s[0] == '[') {
		if (s[alen - 1] != ']')
			return RULES_ERR_CIDR;
		p = s + 1;
		alen -= 2;
	}
	if (alen == 0 || alen >= sizeof(buf))
		return RULES_ERR_CIDR;
	if (memchr(p, '%', alen) != NULL)
		return RULES_ERR_ZONE_ID;
	memcpy(buf, p, alen);
	buf[alen] = '\0';
	if ((r = rules_addr_parse(buf, &a)) != RULES_OK)
		return r == RULES_ERR_IPV4_FORM ? r : RULES_ERR_CIDR;
	if (a.family == AF_INET && s[0] == '[')
		return RULES_ERR_IPV6_FORM;	/* brackets are for IPv6 */

	max = a.family == AF_INET ? 32 : 128;
	for (p = slash + 1; p < end && *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (unsigned int)(*p - '0');
		if (v > max)
			return RULES_ERR_CIDR_PREFIX;
	}
	if (p == slash + 1 || (p - slash > 2 && slash[1] == '0'))
		return RULES_ERR_CIDR;
	if (p < end) {
		if (*p != ':')
			return RULES_ERR_CIDR;
		*ports = p + 1;
		*portslen = (size_t)(end - p - 1);
	}
	*family = a.family;
	*plen = v;
	memset(addr, 0, 16);
	memcpy(addr, a.family == AF_INET ? (const void *)&a.v4 :
	    (const void *)&a.v6, a.family == AF_INET ? 4 : 16);
	{
		uint8_t key[RULES_CIDR_KEY_LEN];

		cidr_key(key, a.family, v, addr);
		if (memcmp(key + 2, addr, max / 8) != 0)
			return RULES_ERR_CIDR_HOST_BITS;
	}
	return RULES_OK;
}

/*
 * An IPv4-mapped address is the IPv4 address: as an entry it is refused, so
 * that nobody writes a deny entry in a form that misses the plain IPv4 one.
 */
static int
is_mapped(const uint8_t *a)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return memcmp(a, prefix, sizeof(prefix)) == 0;
}

static int
entry_grow(struct rules *r)
{
	struct rules_entry *n;
	size_t cap;

	if (r->nentries < r->entries_cap)
		return 0;
	if (r->nentries >= RULES_ENTRIES_MAX)
		return RULES_ERR_TOO_MANY_ENTRIES;
	cap = r->entries_cap == 0 ? 256 : r->entries_cap * 2;
	if (cap > RULES_ENTRIES_MAX)
		cap = RULES_ENTRIES_MAX;
	if ((n = reallocarray(r->entries, cap, sizeof(*n))) == NULL)
		return RULES_ERR_NOMEM;
	r->entries = n;
	r->entries_cap = cap;
	return 0;
}

/*
 * Parses the pattern `text` and appends it as an entry.  `file` must live as
 * long as the set (an arena string).  Returns RULES_OK or a rules_err; on
 * error the set is unchanged (but for arena space).
 */
int
rules_add_entry(struct rules *r, const char *text, size_t len, int deny,
    const char *file, unsigned long line)
{
	struct rules_entry e;
	struct rules_host h;
	uint16_t ports[RULES_PORTS_MAX];
	uint8_t key[RULES_CIDR_KEY_LEN], addr[16];
	const char *host = text, *ptext = NULL;
	size_t hostlen, ptlen = 0, nports = 0;
	unsigned int plen;
	int family, ret;

	memset(&e, 0, sizeof(e));
	e.deny = deny != 0;
	e.next = RULES_NO_ENTRY;
	if (len == 0)
		return RULES_ERR_EMPTY;
	if (memchr(text, '\0', len) != NULL)
		return RULES_ERR_LABEL_CHAR;

	if (text[0] == '*') {
		/* "*" or "**", with or without ports. */
		hostlen = (len > 1 && text[1] == '*') ? 2 : 1;
		if (hostlen == len || text[hostlen] == ':')
			return RULES_ERR_WILDCARD_ALONE;
		if (len > 3 && memcmp(text, "**.", 3) == 0) {
			e.match = RULES_MATCH_SUBTREE;
			host += 3;
		} else if (len > 2 && memcmp(text, "*.", 2) == 0) {
			e.match = RULES_MATCH_BELOW;
			host += 2;
		} else
			return RULES_ERR_WILDCARD;
		len -= (size_t)(host - text);
		if (memchr(host, '*', len) != NULL)
			return RULES_ERR_WILDCARD;
		if ((ret = rules_split_port(host, len, &hostlen, &ptext,
		    &ptlen)) != RULES_OK)
			return ret;
		if ((ret = rules_host_parse(host, hostlen, &h)) != RULES_OK)
			return ret;
		if (h.kind != RULES_HOST_NAME)
			return RULES_ERR_WILDCARD;
		if (count_labels(h.text, h.len) < 2)
			return RULES_ERR_WILDCARD_SHORT;
	} else if (memchr(text, '*', len) != NULL) {
		return RULES_ERR_WILDCARD;
	} else if (memchr(text, '/', len) != NULL) {
		if ((ret = parse_cidr(text, len, &family, &plen, addr, &ptext,
		    &ptlen)) != RULES_OK)
			return ret;
		if (family == AF_INET6 && plen >= 96 && is_mapped(addr))
			return RULES_ERR_MAPPED;
		e.match = RULES_MATCH_CIDR;
		cidr_key(key, family, plen, addr);
	} else {
		if ((ret = rules_split_port(text, len, &hostlen, &ptext,
		    &ptlen)) != RULES_OK)
			return ret;
		if ((ret = rules_host_parse(text, hostlen, &h)) != RULES_OK)
			return ret;
		if (h.kind == RULES_HOST_NAME)
			e.match = RULES_MATCH_EXACT;
		else {
			e.match = RULES_MATCH_CIDR;
			if (h.kind == RULES_HOST_IPV4)
				cidr_key(key, AF_INET, 32,
				    (const uint8_t *)&h.v4.s_addr);
			else if (is_mapped(h.v6.s6_addr))
				return RULES_ERR_MAPPED;
			else
				cidr_key(key, AF_INET6, 128, h.v6.s6_addr);
		}
	}
	if (ptext != NULL && (ret = rules_ports_parse(ptext, ptlen, ports,
	    &nports)) != RULES_OK)
		return ret;
	if ((ret = entry_grow(r)) != 0)
		return ret;

	if (e.match == RULES_MATCH_CIDR) {
		e.key = rules_arena_strndup(&r->arena, (const char *)key,
		    sizeof(key));
		e.keylen = sizeof(key);
	} else {
		e.key = rules_arena_strndup(&r->arena, h.text, h.len);
		e.keylen = (uint32_t)h.len;
	}
	e.text = rules_arena_strndup(&r->arena, text, (size_t)(host - text) + len);
	if (nports > 0) {
		e.ports = rules_arena_alloc(&r->arena, nports * sizeof(*ports));
		if (e.ports != NULL)
			memcpy(e.ports, ports, nports * sizeof(*ports));
	}
	if (e.key == NULL || e.text == NULL || (nports > 0 && e.ports == NULL))
		return RULES_ERR_NOMEM;
	e.nports = (uint16_t)nports;
	e.file = file;
	e.line = line > UINT32_MAX ? UINT32_MAX : (uint32_t)line;
	r->entries[r->nentries++] = e;
	return RULES_OK;
}

const char *
rules_entry_where(const struct rules_entry *e, char *buf, size_t len)
{
	if (e == NULL)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%s:%lu", e->file, (unsigned long)e->line);
	return buf;
}

const char *
rules_entry_file(const struct rules_entry *e)
{
	return e->file;
}

unsigned long
rules_entry_line(const struct rules_entry *e)
{
	return e->line;
}

const char *
rules_entry_text(const struct rules_entry *e)
{
	return e == NULL ? "-" : e->text;
}

int
rules_entry_is_deny(const struct rules_entry *e)
{
	return e->deny;
}

int
rules_entry_names_port(const struct rules_entry *e, uint16_t port)
{
	size_t i;

	for (i = 0; i < e->nports; i++)
		if (e->ports[i] == port)
			return 1;
	return 0;
}

/* --------------------------------------------------------------- tables */

#define FNV_OFFSET	0xcbf29ce484222325ULL
#define FNV_PRIME	0x100000001b3ULL

static inline uint64_t
hash_step(uint64_t h, unsigned char c)
{
	return (h ^ c) * FNV_PRIME;
}

/* The hash of a key, its bytes taken last to first (see the top). */
static uint64_t
hash_backward(const char *s, size_t len)
{
	uint64_t h = FNV_OFFSET;

	while (len > 0)
		h = hash_step(h, (unsigned char)s[--len]);
	return h;
}

/* Mixes the final FNV state so that the low bits index the table well. */
static inline uint64_t
hash_final(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

static int
table_init(struct rules_table *t, size_t n)
{
	size_t cap = 16, i;

	while (cap < n * 2)
		cap *= 2;
	if ((t->slots = calloc(cap, sizeof(*t->slots))) == NULL)
		return RULES_ERR_NOMEM;
	for (i = 0; i < cap; i++)
		t->slots[i].head = RULES_NO_ENTRY;
	t->mask = cap - 1;
	return RULES_OK;
}

/* Returns the head of the chain for the key, or RULES_NO_ENTRY. */
static inline uint32_t
table_find(const struct rules *r, const struct rules_table *t, uint64_t h,
    const char *key, size_t len)
{
	const struct rules_slot *s;
	const struct rules_entry *e;
	size_t i;

	h = hash_final(h);
	for (i = h & t->mask;; i = (i + 1) & t->mask) {
		s = &t->slots[i];
		if (s->head == RULES_NO_ENTRY)
			return RULES_NO_ENTRY;
		if (s->hash != h)
			continue;
		e = &r->entries[s->head];
		if (e->keylen == len && memcmp(e->key, key, len) == 0)
			return s->head;
	}
}

/* Adds entry `idx` to the front of its key's chain. */
static void
table_insert(struct rules *r, struct rules_table *t, uint32_t idx)
{
	struct rules_entry *e = &r->entries[idx], *head;
	struct rules_slot *s;
	uint64_t h = hash_final(hash_backward(e->key, e->keylen));
	size_t i;

	for (i = h & t->mask;; i = (i + 1) & t->mask) {
		s = &t->slots[i];
		if (s->head == RULES_NO_ENTRY)
			break;
		head = &r->entries[s->head];
		if (s->hash == h && head->keylen == e->keylen &&
		    memcmp(head->key, e->key, e->keylen) == 0)
			break;
	}
	e->next = s->head;
	s->head = idx;
	s->hash = h;
}

static void
plen_mark(uint8_t *list, size_t *n, uint8_t plen)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (list[i] == plen)
			return;
	/* Longest first: the most specific block is looked up first. */
	for (i = *n; i > 0 && list[i - 1] < plen; i--)
		list[i] = list[i - 1];
	list[i] = plen;
	(*n)++;
}

int
rules_compile(struct rules *r)
{
	size_t i, nnames = 0, ncidrs = 0;
	struct rules_entry *e;

	r->nallow = 0;
	for (i = 0; i < r->nentries; i++) {
		if (!r->entries[i].deny)
			r->nallow++;
		if (r->entries[i].match == RULES_MATCH_CIDR)
			ncidrs++;
		else
			nnames++;
	}
	if (table_init(&r->names, nnames) != RULES_OK ||
	    table_init(&r->cidrs, ncidrs) != RULES_OK)
		return RULES_ERR_NOMEM;
	/* Backwards, so that each chain runs in load order. */
	for (i = r->nentries; i > 0; i--) {
		e = &r->entries[i - 1];
		if (e->match != RULES_MATCH_CIDR) {
			table_insert(r, &r->names, (uint32_t)(i - 1));
			continue;
		}
		table_insert(r, &r->cidrs, (uint32_t)(i - 1));
		if (e->key[0] == 4)
			plen_mark(r->plens_v4, &r->nplens_v4, (uint8_t)e->key[1]);
		else
			plen_mark(r->plens_v6, &r->nplens_v6, (uint8_t)e->key[1]);
	}
	return RULES_OK;
}

/* ------------------------------------------------------------ decisions */

/* The best matches seen so far; lower index = loaded first = named. */
struct verdicts {
	uint32_t	 deny;
	uint32_t	 allow;
	uint32_t	 port_miss;	/* allow entry matched the host only */
};

static int
entry_port_ok(const struct rules *r, const struct rules_entry *e,
    uint16_t port)
{
	const uint16_t *p = e->ports;
	size_t i, n = e->nports;

	if (n == 0) {
		if (e->deny)
			return 1;
		p = r->default_ports;
		n = r->ndefault_ports;
	}
	for (i = 0; i < n; i++)
		if (p[i] == port)
			return 1;
	return 0;
}

static inline void
keep_min(uint32_t *slot, uint32_t idx)
{
	if (idx < *slot)
		*slot = idx;
}

static void
note(const struct rules *r, struct verdicts *v, uint32_t idx, uint16_t port)
{
	const struct rules_entry *e = &r->entries[idx];

	if (entry_port_ok(r, e, port))
		keep_min(e->deny ? &v->deny : &v->allow, idx);
	else if (!e->deny)
		keep_min(&v->port_miss, idx);
}

/*
 * Calls fn for each entry of r whose pattern matches the name s[0..len):
 * the exact entries of the name, the subtree entries of it and of each
 * name above it, the "below" entries of each name above it.
 */
static inline void
name_matches(const struct rules *r, const char *s, size_t len,
    void (*fn)(const struct rules *, uint32_t, void *), void *arg)
{
	const struct rules_entry *e;
	uint64_t h = FNV_OFFSET;
	uint32_t idx;
	size_t i;
	int self;

	for (i = len; i > 0; i--) {
		h = hash_step(h, (unsigned char)s[i - 1]);
		if (i - 1 != 0 && s[i - 2] != '.')
			continue;
		self = i - 1 == 0;
		idx = table_find(r, &r->names, h, s + i - 1, len - i + 1);
		for (; idx != RULES_NO_ENTRY; idx = e->next) {
			e = &r->entries[idx];
			if ((e->match == RULES_MATCH_EXACT && !self) ||
			    (e->match == RULES_MATCH_BELOW && self))
				continue;
			fn(r, idx, arg);
		}
	}
}

struct noting {
	struct verdicts	*v;
	uint16_t	 port;
};

static void
note_match(const struct rules *r, uint32_t idx, void *arg)
{
	struct noting *n = arg;

	note(r, n->v, idx, n->port);
}

static void
decide_name(const struct rules *r, const char *s, size_t len, uint16_t port,
    struct verdicts *v)
{
	struct noting n = { v, port };

	name_matches(r, s, len, note_match, &n);
}

/* The ports of allow entries, each once (rules_name_ports()). */
struct porting {
	uint16_t	*ports;
	size_t		 n;
	size_t		 max;
};

static void
ports_match(const struct rules *r, uint32_t idx, void *arg)
{
	const struct rules_entry *e = &r->entries[idx];
	struct porting *pp = arg;
	const uint16_t *p = e->nports > 0 ? e->ports : r->default_ports;
	size_t np = e->nports > 0 ? e->nports : r->ndefault_ports, i, j;

	for (i = 0; i < np && !e->deny && pp->n < pp->max; i++) {
		for (j = 0; j < pp->n && pp->ports[j] != p[i]; j++)
			;
		if (j == pp->n)
			pp->ports[pp->n++] = p[i];
	}
}

size_t
rules_name_ports(const struct rules *r, const struct rules_host *host,
    uint16_t *ports, size_t max)
{
	struct porting pp = { ports, 0, max };

	if (host->kind == RULES_HOST_NAME)
		name_matches(r, host->text, host->len, ports_match, &pp);
	return pp.n;
}

size_t
rules_allow_ports(const struct rules *r, uint16_t *ports, size_t max)
{
	struct porting pp = { ports, 0, max };
	uint32_t idx;

	for (idx = 0; idx < r->nentries; idx++)
		ports_match(r, idx, &pp);
	return pp.n;
}

static void
decide_cidr(const struct rules *r, int family, const uint8_t *addr,
    uint16_t port, struct verdicts *v)
{
	const uint8_t *plens = family == AF_INET ? r->plens_v4 : r->plens_v6;
	size_t n = family == AF_INET ? r->nplens_v4 : r->nplens_v6, i;
	uint8_t key[RULES_CIDR_KEY_LEN];
	uint32_t idx;

	for (i = 0; i < n; i++) {
		cidr_key(key, family, plens[i], addr);
		idx = table_find(r, &r->cidrs,
		    hash_backward((const char *)key, sizeof(key)),
		    (const char *)key, sizeof(key));
		for (; idx != RULES_NO_ENTRY; idx = r->entries[idx].next)
			note(r, v, idx, port);
	}
}

/* Looks an address up as itself and, when it embeds IPv4, as that. */
static void
decide_addr(const struct rules *r, const struct rules_addr *a, uint16_t port,
    struct verdicts *v)
{
	uint8_t v4[2][4];
	const char *how;
	int n, k;

	if (a->family == AF_INET) {
		decide_cidr(r, AF_INET, (const uint8_t *)&a->v4.s_addr, port, v);
		return;
	}
	decide_cidr(r, AF_INET6, a->v6.s6_addr, port, v);
	n = rules_addr_embedded_v4(&a->v6, v4, &how);
	for (k = 0; k < n; k++)
		decide_cidr(r, AF_INET, v4[k], port, v);
}

static void
verdicts_apply(const struct rules *r, const struct verdicts *v,
    struct rules_decision *d)
{
	if (v->deny != RULES_NO_ENTRY) {
		d->reason = RULES_REASON_DENIED;
		d->entry = &r->entries[v->deny];
	} else if (v->allow != RULES_NO_ENTRY) {
		d->verdict = RULES_ALLOW;
		d->reason = RULES_REASON_ALLOWED;
		d->entry = &r->entries[v->allow];
	} else if (v->port_miss != RULES_NO_ENTRY) {
		d->reason = RULES_REASON_PORT_NOT_ALLOWED;
		d->entry = &r->entries[v->port_miss];
	}
}

void
rules_decide(const struct rules *r, const struct rules_host *host,
    uint16_t port, struct rules_decision *d)
{
	struct verdicts v = { RULES_NO_ENTRY, RULES_NO_ENTRY, RULES_NO_ENTRY };
	struct rules_addr a;

	memset(d, 0, sizeof(*d));
	d->reason = RULES_REASON_NOT_ALLOWLISTED;
	switch (host->kind) {
	case RULES_HOST_NAME:
		if (host->len == 0) {
			d->reason = RULES_REASON_INVALID_HOST;
			return;
		}
		decide_name(r, host->text, host->len, port, &v);
		break;
	case RULES_HOST_IPV4:
		a.family = AF_INET;
		a.v4 = host->v4;
		decide_addr(r, &a, port, &v);
		break;
	case RULES_HOST_IPV6:
		a.family = AF_INET6;
		a.v6 = host->v6;
		decide_addr(r, &a, port, &v);
		break;
	default:
		d->reason = RULES_REASON_INVALID_HOST;
		return;
	}
	verdicts_apply(r, &v, d);
}

void
rules_check_addr(const struct rules *r, const struct rules_addr *a,
    uint16_t port, struct rules_decision *d)
{
	struct verdicts v = { RULES_NO_ENTRY, RULES_NO_ENTRY, RULES_NO_ENTRY };
	struct verdicts own;
	uint8_t v4[2][4];
	const char *how, *class, *internal = NULL;
	int n, k;

	memset(d, 0, sizeof(*d));
	if (a->family != AF_INET && a->family != AF_INET6) {
		d->reason = RULES_REASON_INVALID_HOST;
		return;
	}
	/* A deny entry on any form of the address denies it. */
	decide_addr(r, a, port, &v);
	d->addr_class = rules_addr_class(a, NULL);
	if (v.deny != RULES_NO_ENTRY) {
		d->reason = RULES_REASON_DENIED;
		d->entry = &r->entries[v.deny];
		return;
	}
	/*
	 * Each form that is internal must be covered by an allow entry of
	 * its own: an allowed Teredo client address does not let an internal
	 * Teredo server address through.
	 */
	if (a->family == AF_INET) {
		class = rules_class_v4((const uint8_t *)&a->v4.s_addr);
		if (class != NULL && v.allow == RULES_NO_ENTRY)
			internal = class;
	} else {
		if ((class = rules_class_v6(a->v6.s6_addr)) != NULL) {
			own = (struct verdicts){ RULES_NO_ENTRY, RULES_NO_ENTRY,
			    RULES_NO_ENTRY };
			decide_cidr(r, AF_INET6, a->v6.s6_addr, port, &own);
			if (own.allow == RULES_NO_ENTRY)
				internal = class;
		}
		n = rules_addr_embedded_v4(&a->v6, v4, &how);
		for (k = 0; k < n && internal == NULL; k++) {
			if ((class = rules_class_v4(v4[k])) == NULL)
				continue;
			own = (struct verdicts){ RULES_NO_ENTRY, RULES_NO_ENTRY,
			    RULES_NO_ENTRY };
			decide_cidr(r, AF_INET, v4[k], port, &own);
			if (own.allow == RULES_NO_ENTRY)
				internal = class;
		}
	}
	if (internal != NULL) {
		d->reason = RULES_REASON_INTERNAL_ADDRESS;
		d->addr_class = internal;
		return;
	}
	d->verdict = RULES_ALLOW;
	d->reason = RULES_REASON_ALLOWED;
	d->entry = v.allow != RULES_NO_ENTRY ? &r->entries[v.allow] : NULL;
}

const char *
rules_reason_str(enum rules_reason reason)
{
	switch (reason) {
	case RULES_REASON_NOT_ALLOWLISTED:
		return "not-allowlisted";
	case RULES_REASON_ALLOWED:
		return "allowed";
	case RULES_REASON_DENIED:
		return "denied";
	case RULES_REASON_PORT_NOT_ALLOWED:
		return "port-not-allowed";
	case RULES_REASON_INTERNAL_ADDRESS:
		return "internal-address";
	case RULES_REASON_INVALID_HOST:
		return "invalid-host";
	}
	return "invalid-host";
}
