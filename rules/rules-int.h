/*
 * rules-int.h — what the files of rules/ share and nothing outside uses.
 */
#ifndef INTUTIC_RULES_INT_H
#define INTUTIC_RULES_INT_H

#include <stddef.h>
#include <stdint.h>

#include "rules.h"

/* How an entry's pattern matches. */
enum rules_match {
	RULES_MATCH_EXACT = 0,	/* "example.com" */
	RULES_MATCH_BELOW,	/* "*.example.com": names below, not the name */
	RULES_MATCH_SUBTREE,	/* "**.example.com": the name and names below */
	RULES_MATCH_CIDR,	/* "10.0.0.0/8", "[2001:db8::1]" */
};

/* A CIDR key: family, prefix length, address masked to the prefix. */
#define RULES_CIDR_KEY_LEN	18

struct rules_entry {
	uint32_t	 next;		/* next entry with the same key */
	uint8_t		 deny;
	uint8_t		 match;		/* enum rules_match */
	uint16_t	 nports;	/* 0: the default ports (allow), all (deny) */
	uint32_t	 line;
	uint32_t	 keylen;
	uint16_t	*ports;		/* nports ports, in the arena */
	const char	*key;		/* canonical name, or CIDR key; arena */
	const char	*text;		/* as written; arena */
	const char	*file;		/* path of its file; arena */
};

#define RULES_NO_ENTRY	UINT32_MAX

/* An open-addressing hash table from keys to chains of entries. */
struct rules_slot {
	uint64_t	 hash;
	uint32_t	 head;		/* RULES_NO_ENTRY: empty slot */
};

struct rules_table {
	struct rules_slot	*slots;
	size_t			 mask;	/* capacity - 1; capacity a power of 2 */
};

/* A bump allocator: everything a rule set holds lives in a few blocks. */
struct rules_arena_block;
struct rules_arena {
	struct rules_arena_block	*head;
};

struct rules {
	/* What a decision reads first, in the first lines (rules_prefetch()). */
	int			 refs;
	enum rules_mode		 mode;
	struct rules_entry	*entries;
	size_t			 nentries;
	size_t			 nallow;	/* of them allow entries */
	struct rules_table	 names;		/* exact and wildcard entries */
	struct rules_table	 cidrs;		/* CIDR and IP entries */
	size_t			 ndefault_ports;
	size_t			 nplens_v4;
	size_t			 nplens_v6;
	uint16_t		 default_ports[RULES_PORTS_MAX];
	uint8_t			 plens_v4[33];	/* prefix lengths in use */
	uint8_t			 plens_v6[129];

	char			*path;
	size_t			 entries_cap;
	struct rules_provider	*providers;
	size_t			 nproviders;

	/* Where the loader met these, for rules_tightens()'s messages. */
	unsigned long		 mode_line;	/* `mode:` in the top file; 0: none */
	const char		*provider_file;	/* the first provider's name; arena */
	unsigned long		 provider_line;

	struct rules_arena	 arena;
};

/* rules-host.c */
int	 rules_name_check(const char *s, size_t len);
int	 rules_port_parse(const char *s, size_t len, uint16_t *port);
int	 rules_split_port(const char *s, size_t len, size_t *hostlen,
	    const char **ports, size_t *portslen);
int	 rules_prefix_match(const uint8_t *a, const uint8_t *net,
	    unsigned int plen);
/* The internal class of an address, or NULL when it is public. */
const char	*rules_class_v4(const uint8_t *a);
const char	*rules_class_v6(const uint8_t *a);	/* without embeddings */
int	 rules_addr_embedded_v4(const struct in6_addr *a6, uint8_t v4[2][4],
	    const char **how);

/* rules-match.c */
void	*rules_arena_alloc(struct rules_arena *a, size_t len);
char	*rules_arena_strndup(struct rules_arena *a, const char *s, size_t len);
struct rules	*rules_new(void);
int	 rules_add_entry(struct rules *r, const char *text, size_t len,
	    int deny, const char *file, unsigned long line);
int	 rules_compile(struct rules *r);
int	 rules_ports_parse(const char *s, size_t len, uint16_t *ports,
	    size_t *nports);

#endif /* INTUTIC_RULES_INT_H */
