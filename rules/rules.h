/*
 * rules.h — the rule language: loading rule files, canonical names,
 * deciding destinations, classifying addresses, picking the address a name
 * is dialled at.
 *
 * The library never logs and never exits: every function reports failure
 * through its return value and, where a person must read it, a message the
 * caller prints.  It depends on libyaml and libc only.
 *
 * A struct rules is immutable once loaded and reference counted, so a
 * program can keep deciding with the set it has while a new one loads, and
 * connections can keep the set they started with (rules_ref/rules_free).
 * The functions that only read a struct rules are safe to call from several
 * threads at once.
 */
#ifndef INTUTIC_RULES_H
#define INTUTIC_RULES_H

#include <sys/types.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

/* Limits: every one is named here and enforced by the loader. */
#define RULES_NAME_MAX		253	/* bytes in a canonical name */
#define RULES_LABEL_MAX		63	/* bytes in one label */
#define RULES_HOST_TEXT_MAX	(RULES_NAME_MAX + 1)	/* incl. NUL; fits "[v6]" */
#define RULES_FILE_MAX		(32 * 1024 * 1024)	/* bytes in one rule file */
#define RULES_ENTRIES_MAX	1000000	/* allow + deny entries, all files */
#define RULES_INCLUDE_DEPTH_MAX	8	/* nested includes below the top file */
#define RULES_FILES_MAX		64	/* files loaded in all, top file included */
#define RULES_NESTING_MAX	5	/* YAML collections inside each other */
#define RULES_PORTS_MAX		64	/* ports in one entry or in `ports:` */
#define RULES_ERROR_MAX		512	/* bytes in an error message */
#define RULES_PATH_MAX		4096	/* bytes in a rule file's path */
#define RULES_WHERE_MAX		(RULES_PATH_MAX + 24)	/* "file:line" */

/*
 * A verdict's zero value denies, so zeroed memory fails closed.
 */
enum rules_verdict {
	RULES_DENY = 0,
	RULES_ALLOW = 1,
};

/*
 * Why a decision was made.  rules_reason_str() gives the stable text used in
 * the X-Intutic-Error header and the audit log.
 */
enum rules_reason {
	RULES_REASON_NOT_ALLOWLISTED = 0,	/* no entry matched */
	RULES_REASON_ALLOWED,			/* an allow entry matched */
	RULES_REASON_DENIED,			/* a deny entry matched */
	RULES_REASON_PORT_NOT_ALLOWED,		/* name allowed, port not */
	RULES_REASON_INTERNAL_ADDRESS,		/* address in an internal range */
	RULES_REASON_INVALID_HOST,		/* not a canonical name or IP */
};

enum rules_mode {
	RULES_MODE_ENFORCE = 0,
	RULES_MODE_REPORT,	/* decide and log, let denied traffic through */
};

/* Errors returned by the parsing functions below. */
enum rules_err {
	RULES_OK = 0,
	RULES_ERR_EMPTY = -1,		/* empty host */
	RULES_ERR_TOO_LONG = -2,	/* name over 253 bytes */
	RULES_ERR_LABEL_EMPTY = -3,	/* "a..b", leading dot, two trailing dots */
	RULES_ERR_LABEL_LONG = -4,	/* a label over 63 bytes */
	RULES_ERR_LABEL_CHAR = -5,	/* a byte outside letters, digits, '-' */
	RULES_ERR_LABEL_HYPHEN = -6,	/* a label starting or ending with '-' */
	RULES_ERR_NON_ASCII = -7,	/* a byte >= 0x80: write the xn-- form */
	RULES_ERR_IPV4_FORM = -8,	/* numeric last label, not a dotted quad */
	RULES_ERR_IPV6_FORM = -9,	/* bad address inside brackets */
	RULES_ERR_IPV6_BRACKETS = -10,	/* IPv6 without brackets */
	RULES_ERR_ZONE_ID = -11,	/* "%eth0" in an IPv6 literal */
	RULES_ERR_PORT = -12,		/* port not a decimal 1..65535 */
	RULES_ERR_WILDCARD = -13,	/* '*' anywhere but a leading "*." / "**." */
	RULES_ERR_WILDCARD_SHORT = -14,	/* "*.com": one label after it */
	RULES_ERR_CIDR = -15,		/* bad prefix length or address */
	RULES_ERR_CIDR_HOST_BITS = -16,	/* "10.0.0.1/8" */
	RULES_ERR_TOO_MANY_PORTS = -17,	/* more than RULES_PORTS_MAX */
	RULES_ERR_DUPLICATE_PORT = -18,	/* "host:443,443" */
	RULES_ERR_TOO_MANY_ENTRIES = -19, /* over RULES_ENTRIES_MAX */
	RULES_ERR_NOMEM = -20,		/* out of memory */
	RULES_ERR_WILDCARD_ALONE = -21,	/* "*" or "**": every name */
	RULES_ERR_CIDR_PREFIX = -22,	/* /33 for IPv4, /129 for IPv6 */
	RULES_ERR_MAPPED = -23,		/* an entry in ::ffff:0:0/96 */
};

/* Returns a short English description of a rules_err (never NULL). */
const char	*rules_strerror(int err);

/* ------------------------------------------------------------------ hosts */

enum rules_host_kind {
	RULES_HOST_NAME = 0,
	RULES_HOST_IPV4,
	RULES_HOST_IPV6,
};

/*
 * A destination host in its one canonical form: the
 * text used for the decision, the dial and the log.  For a name, `text` is
 * lowercase without the trailing dot; for IPv4 the dotted quad; for IPv6 the
 * compressed form in brackets.
 */
struct rules_host {
	enum rules_host_kind	 kind;
	char			 text[RULES_HOST_TEXT_MAX];
	size_t			 len;		/* strlen(text) */
	struct in_addr		 v4;		/* RULES_HOST_IPV4 */
	struct in6_addr		 v6;		/* RULES_HOST_IPV6 */
};

/*
 * Parses `len` bytes of `s` (no NUL needed; an embedded NUL is an error) as
 * a host: a DNS name, a dotted-quad IPv4 address, or an IPv6 address in
 * brackets.  A name is lowercased and one trailing dot removed.  A host
 * whose last label is numeric must be a strict dotted quad (so 127.1,
 * 0x7f.0.0.1, 2130706433 and 017.0.0.1 are refused, never reinterpreted).
 * Returns RULES_OK and fills `out`, or a rules_err with `out` cleared.
 */
int	 rules_host_parse(const char *s, size_t len, struct rules_host *out);

/*
 * Parses "HOST", "HOST:PORT", "[V6]" or "[V6]:PORT".  `*port` is set to the
 * port, or to `default_port` when none is given.  Returns RULES_OK or a
 * rules_err; on error both outputs are cleared.
 */
int	 rules_hostport_parse(const char *s, struct rules_host *out,
	    uint16_t *port, uint16_t default_port);

/* -------------------------------------------------------------- addresses */

/*
 * An address to classify: an IPv4 address is held as itself (family
 * AF_INET), an IPv6 one as itself (AF_INET6).
 */
struct rules_addr {
	int			 family;	/* AF_INET or AF_INET6 */
	union {
		struct in_addr	 v4;
		struct in6_addr	 v6;
	};
};

/*
 * The class of an address: "public", or the name of the internal range it
 * falls in ("loopback", "private", "link-local", ...).  IPv4 embedded in
 * IPv6 (::ffff:0:0/96, 64:ff9b::/96, 2002::/16, 2001::/32) is classified as
 * the IPv4 address it carries; `*embedded` (may be NULL) is then set to the
 * embedding's name ("ipv4-mapped", "nat64", "6to4", "teredo"), else NULL.
 * Returns a static string, never NULL.
 */
const char	*rules_addr_class(const struct rules_addr *a,
		    const char **embedded);

/* Returns 1 when rules_addr_class() would not say "public". */
int		 rules_addr_is_internal(const struct rules_addr *a);

/* Parses a bare IPv4 dotted quad or IPv6 address (no brackets, no zone). */
int		 rules_addr_parse(const char *s, struct rules_addr *out);

/* ------------------------------------------------------------ rule sets */

struct rules;
struct rules_entry;

/*
 * A loader error: where it is and what was wrong.  `file` is the path as the
 * loader opened it (the top file as given, an include joined to the
 * directory of the file that named it).  line and col are 1-based; 0 when
 * the error is about the file as a whole (unreadable, too large).
 */
struct rules_error {
	char		 file[RULES_PATH_MAX];
	unsigned long	 line;
	unsigned long	 col;
	char		 msg[RULES_ERROR_MAX];
};

/*
 * Loads the rule file `path` and every file it includes, and compiles them.
 * Returns 0 and sets `*out` to a new set (reference count 1), or -1 with
 * `*out` NULL and `err` filled; nothing is half-loaded.
 */
int	 rules_load(const char *path, struct rules **out,
	    struct rules_error *err);

/* Flags of rules_load_text(). */
#define RULES_LOAD_POLICY	0x1	/* a run's policy: no mode, no providers,
					   no gateway */

/*
 * Loads one rule document held in memory (YAML, or JSON, which is YAML),
 * `len` bytes of `text` (no NUL needed), named `name` in errors and as
 * its entries' file ("name:line:col: msg").  `include` is refused (text
 * has no directory to include from).  With RULES_LOAD_POLICY, `mode`,
 * `providers` and `gateway` are refused as well, each with a message
 * saying why (a run's policy only narrows the operator's rules; mode,
 * providers and the gateway are the operator's).  Same limits, same
 * messages and same all-or-nothing as rules_load().  0 and *out (refs
 * 1), or -1 with *out NULL and err filled.  `text` may be NULL when
 * `len` is 0.
 */
int	 rules_load_text(const char *name, const char *text, size_t len,
	    unsigned int flags, struct rules **out, struct rules_error *err);

/*
 * Formats an error as "file:line:col: msg" (or "file: msg") into buf.
 * Returns buf.
 */
const char	*rules_error_str(const struct rules_error *err, char *buf,
		    size_t len);

/* Takes another reference; returns r. */
struct rules	*rules_ref(struct rules *r);

/*
 * Asks the processor to bring in what deciding under r reads first (its
 * header, tables and entries), so that a set used rarely (one run's
 * policy among many) costs one wait for memory, not one per step.  Reads
 * nothing it has to wait for but r itself.  rules_prefetch_blind() asks
 * for the header alone and reads nothing: r may be a stale pointer.
 */
void		 rules_prefetch(const struct rules *r);
void		 rules_prefetch_blind(const struct rules *r);

/* Drops a reference; frees the set with the last one.  NULL is ignored. */
void		 rules_free(struct rules *r);

enum rules_mode	 rules_mode(const struct rules *r);

/*
 * The path of the top file, as given to rules_load(); the name given to
 * rules_load_text().
 */
const char	*rules_path(const struct rules *r);

/* Number of allow and deny entries loaded, all files together. */
size_t		 rules_count(const struct rules *r);

/* Entry i of the set in the order loaded (i < rules_count(r)); else NULL. */
const struct rules_entry	*rules_entry_at(const struct rules *r,
				    size_t i);

/*
 * The set's `ports:` list (the ports of an allow entry that names none),
 * copied into ports (room for RULES_PORTS_MAX); returns how many.
 */
size_t	 rules_default_ports(const struct rules *r, uint16_t *ports);

/*
 * The provider gateway: http://PROXY/providers/NAME/PATH forwards to the
 * provider's HTTPS API.  A provider has one when its `api` key names the
 * upstream; the operator's top-level `gateway:` mapping switches it on,
 * with the agent's own key passed through or with the key brokered (the
 * agent gets a sentinel, the proxy puts the real key in).
 */
enum rules_gateway {
	RULES_GATEWAY_OFF = 0,		/* not named, or `off` */
	RULES_GATEWAY_ON,		/* `on`: the agent's own key */
	RULES_GATEWAY_BROKER,		/* `broker`: the key broker */
};

/* Limits of a provider's gateway keys, enforced by the loader. */
#define RULES_BASE_URL_MAX	8	/* variables in `base-url` */
#define RULES_BASE_URL_PATH_MAX	256	/* bytes in a base-url's path */
#define RULES_KEY_HEADERS_MAX	8	/* names in `key-headers` */
#define RULES_HEADER_NAME_MAX	64	/* bytes in a header name or scheme */
#define RULES_SENTINEL_PREFIX_MAX 64	/* bytes in `broker.prefix` */
#define RULES_SENTINEL_MIN	20	/* `broker.length`, prefix included */
#define RULES_SENTINEL_MAX	512
#define RULES_SENTINEL_RANDOM_MIN 17	/* bytes after the prefix, at least */

/*
 * One item of `base-url`: the variable `intutic exec` sets to the
 * gateway's URL for the provider, with `path` appended ("VAR=/v1").
 */
struct rules_base_url {
	const char	*var;
	const char	*path;		/* "" when none; else starts with '/' */
};

/*
 * What a brokered key looks like and where it goes: the agent's sentinel
 * goes into `env` (the proxy reads the real key from there); it starts
 * with `prefix` and is `length` bytes long in all.  The proxy puts the
 * real key in the one header `header` (one of the provider's key_headers,
 * lowercase), as "SCHEME KEY" when `scheme` is not "".
 */
struct rules_broker {
	const char	*env;
	const char	*header;
	const char	*scheme;	/* "" when none, e.g. "Bearer" */
	const char	*prefix;	/* 1..RULES_SENTINEL_PREFIX_MAX bytes */
	size_t		 length;	/* RULES_SENTINEL_MIN..RULES_SENTINEL_MAX,
					   > strlen(prefix) + 16 */
};

/*
 * A provider named in a `providers:` mapping: its hosts became allow
 * entries; its environment variable names are for the launcher; the rest
 * describes its gateway.  The loader guarantees: base_url, key_headers
 * and broker only with api; broker->header is one of key_headers;
 * gateway is ON only with api, BROKER only with api and broker.
 * Everything lives as long as the set.
 */
struct rules_provider {
	const char	 *name;
	const char	**env;		/* env_count names */
	size_t		  env_count;
	/* The gateway (api NULL: the provider has none). */
	const char	 *api;		/* canonical host text ("[v6]" too) */
	uint16_t	  api_port;	/* 443 when not named; 0 without api */
	const struct rules_base_url *base_url;	/* base_url_count of them */
	size_t		  base_url_count;
	const char	**key_headers;	/* key_header_count, lowercase */
	size_t		  key_header_count;
	const struct rules_broker *broker;	/* NULL: none */
	enum rules_gateway gateway;	/* the operator's `gateway:` for it */
};

/* Providers in the order defined (included files where included). */
size_t				 rules_provider_count(const struct rules *r);
const struct rules_provider	*rules_provider_get(const struct rules *r,
				    size_t i);

/*
 * The provider called name (len bytes, no NUL needed), or NULL.  Walks
 * the providers: their number is small.
 */
const struct rules_provider	*rules_provider_find(const struct rules *r,
				    const char *name, size_t len);

/*
 * The set as one JSON rule document that rules_load_text() reads back to
 * a set deciding exactly the same: {"version":1,"mode":"enforce",
 * "ports":[443],"allow":[...],"deny":[...],"providers":{"NAME":{"env":
 * [...],"api":"HOST[:PORT]","base-url":[...],"key-headers":[...],
 * "broker":{...}}},"gateway":{"NAME":"on"|"broker"}}: each entry as
 * written, in the order loaded, allow and deny apart; "providers" only
 * when there are some, each with its env names (its hosts are in "allow"
 * already) and its gateway keys when it has `api`; "gateway" only when a
 * provider's gateway is not off.  Keys and strings escaped as JSON
 * requires.  A malloc'd, NUL-terminated text in *out and its length
 * in *len; 0, or -1 with errno ENOMEM when out of memory, or EFBIG when
 * the text would be longer than RULES_FILE_MAX (rules_load_text() would
 * refuse it); then *out is NULL and *len 0.
 *
 * One entry a line, so that the entries of a loaded dump keep lines of
 * their own; where they came from (file:line) is not kept: loaded, their
 * file is the name given to rules_load_text().  "mode" is always there,
 * so a dump loads back without RULES_LOAD_POLICY.  Only reads `r`.
 */
int	 rules_dump(const struct rules *r, char **out, size_t *len);

/*
 * Where each entry of rules_dump()'s text came from, as a JSON array of
 * "file:line" strings in the order the dump writes the entries; so that
 * a dump loaded elsewhere can name them as the rules they came from do
 * (rules_set_where()).  Out and errors as rules_dump()'s.
 */
int	 rules_dump_where(const struct rules *r, char **out, size_t *len);

/*
 * Gives the entries of r, a set loaded from a dump, the places of
 * rules_dump_where(): n of them, "file:line" each, in the dump's order.
 * 0; or -1 when n is not r's count of entries or one is not file:line
 * (then nothing changed).  rules_entry_where() and every message then
 * name them so.
 */
int	 rules_set_where(struct rules *r, const char *const *where, size_t n);

/* -------------------------------------------------------------- decisions */

struct rules_decision {
	enum rules_verdict		 verdict;
	enum rules_reason		 reason;
	const struct rules_entry	*entry;	/* deciding entry, or NULL */
	const char			*addr_class;	/* for internal-address */
};

/*
 * Decides a destination (host, port).  For a name: deny entries first (deny
 * wins), then allow entries, else not-allowlisted; an allowed name whose
 * port no entry allows is port-not-allowed.  For an IP literal: the CIDR
 * entries decide the same way (an exact IP entry is a /32 or /128).  When
 * several entries match, the one loaded first is named.  The decision does
 * not depend on the mode: callers apply report mode themselves.
 * The cost does not grow with the number of entries.
 */
void	 rules_decide(const struct rules *r, const struct rules_host *host,
	    uint16_t port, struct rules_decision *d);

/*
 * Checks an address a name resolved to (after the name was allowed): a deny
 * CIDR covering it → denied; an internal address no allow CIDR covers (for
 * this port) → internal-address; else allowed.  An address embedding IPv4
 * is checked both as itself and as its IPv4 address.
 */
void	 rules_check_addr(const struct rules *r, const struct rules_addr *a,
	    uint16_t port, struct rules_decision *d);

/*
 * Decides (host, port) for a run: under the operator's rules `ceiling`
 * narrowed by the run's own set `policy` (NULL: the ceiling alone).  What
 * the ceiling does not allow is its decision.  Else a deny entry of
 * `policy` denies, naming that entry; else, when `policy` has allow
 * entries, one of them must allow the name and port (not-allowlisted or
 * port-not-allowed otherwise, from `policy`); else the ceiling's
 * allowance stands.  A policy can thus only narrow: nothing the ceiling
 * refuses is ever allowed.
 */
void	 rules_decide_within(const struct rules *ceiling,
	    const struct rules *policy, const struct rules_host *host,
	    uint16_t port, struct rules_decision *d);

/*
 * rules_check_addr() for a run: the ceiling's check, then a deny block of
 * `policy` (NULL: none) covering the address denies.
 */
void	 rules_check_addr_within(const struct rules *ceiling,
	    const struct rules *policy, const struct rules_addr *a,
	    uint16_t port, struct rules_decision *d);

/*
 * The ports the allow entries of r that match the name `host` allow
 * (their own, or the default ports), each once, at most max; 0 for an
 * address or a name no allow entry matches.
 */
#define RULES_NAME_PORTS_MAX	256
size_t	 rules_name_ports(const struct rules *r, const struct rules_host *host,
	    uint16_t *ports, size_t max);

/*
 * The ports any allow entry of r allows (its own, or the default ports),
 * each once, in the order of the entries, at most max.
 */
size_t	 rules_allow_ports(const struct rules *r, uint16_t *ports,
	    size_t max);

/*
 * Decides a name without a port, as the DNS filter asks: allowed when the
 * run (rules_decide_within()) may reach it on some port that an allow
 * entry of the ceiling matching it allows (the first RULES_NAME_PORTS_MAX
 * of them); else the decision at the first such port (or, when there is
 * none, at the ceiling's first default port), which names what refuses
 * it.  That port in *port (may be NULL): the one to check the addresses
 * the name resolves to at (rules_check_addr_within()).  A deny entry without ports thus refuses the name; one with ports
 * refuses it only when it covers every port it could be reached on.
 */
void	 rules_decide_name_within(const struct rules *ceiling,
	    const struct rules *policy, const struct rules_host *host,
	    struct rules_decision *d, uint16_t *port);

/* 1 when the set has an allow entry. */
int	 rules_has_allow(const struct rules *r);

/* The stable text of a reason: "not-allowlisted", "denied", ... */
const char	*rules_reason_str(enum rules_reason reason);

/*
 * "file:line" of an entry, written into buf (NULL entry → "-").  Returns buf.
 */
const char	*rules_entry_where(const struct rules_entry *e, char *buf,
		    size_t len);

/* The file an entry was loaded from, and its 1-based line there. */
const char	*rules_entry_file(const struct rules_entry *e);
unsigned long	 rules_entry_line(const struct rules_entry *e);

/* The entry as written in its file, e.g. "*.githubusercontent.com". */
const char	*rules_entry_text(const struct rules_entry *e);

/* Returns 1 when the entry is a deny entry. */
int		 rules_entry_is_deny(const struct rules_entry *e);

/*
 * Returns 1 when the entry names `port` itself ("github.com:22"), 0 when it
 * allows the port only through the default `ports:` list.
 */
int		 rules_entry_names_port(const struct rules_entry *e,
		    uint16_t port);

/*
 * Whether `project` (a project's .intutic.yaml) only narrows `ceiling` (the
 * operator's rules), which it may do, never widen them.  It does when, for each of its
 * allow entries and each port that entry allows (its own ports, else the
 * project's `ports:` list): every destination the entry could match is
 * allowed by allow entries of `ceiling`, and no single deny entry of
 * `ceiling` denies all of them; when it is not in report mode under an
 * enforcing `ceiling`; and when it defines no providers.  Its deny entries
 * always narrow; a deny entry of `ceiling` inside one of its allow entries
 * is accepted, on the understanding that the deny entries of `ceiling`
 * keep applying.  Details: rules/README.md, intutic-rules(5).
 *
 * Returns 0 when it only tightens, with `why` "".  Else -1, with `why` one
 * line naming the first thing that widens ("FILE:LINE: allow 'TEXT': ...",
 * an included file's entry with its own file and line) and what in
 * `ceiling` it goes past; -1 also when out of memory.  `why` is cut to
 * `whylen` bytes and always terminated; it may be NULL.  Both sets are
 * only read.
 */
int	 rules_tightens(const struct rules *ceiling, const struct rules *project,
	    char *why, size_t whylen);

/* ------------------------------------------------------- picking an address */

#define RULES_PICK_MAX		32	/* addresses rules_pick_addr() looks at */
#define RULES_ADDR_TEXT_MAX	46	/* INET6_ADDRSTRLEN: "ffff:...:255.255.255.255" */

/* What became of one address in rules_pick_addr(). */
enum rules_pick_state {
	RULES_PICK_UNCHECKED = 0,	/* after the picked one: never checked */
	RULES_PICK_SKIPPED,		/* skip[i] set, or not AF_INET/AF_INET6 */
	RULES_PICK_REFUSED,		/* checked and refused: check[i] says why */
	RULES_PICK_PICKED,		/* checked and allowed: the one to dial */
};

/*
 * The outcome of rules_pick_addr().  Indexes are into the caller's array;
 * an index equal to `n` means "none".
 */
struct rules_pick {
	size_t			 n;		/* addresses looked at */
	size_t			 picked;	/* first allowed, or n */
	size_t			 dial;		/* what to connect to, or n */
	size_t			 nrefused;
	size_t			 nskipped;
	size_t			 order[RULES_PICK_MAX];	  /* the order considered */
	size_t			 refused[RULES_PICK_MAX]; /* in that order */
	enum rules_pick_state	 state[RULES_PICK_MAX];
	struct rules_decision	 check[RULES_PICK_MAX];	/* REFUSED, PICKED */
	struct rules_decision	 d;		/* the outcome, see below */
};

/*
 * Picks which of the addresses a name resolved to is dialled, for the proxy
 * and for `intutic rules test` alike (one function, so that the command is
 * an exact preview of the proxy).  Call it after the name itself was
 * decided; it does not look at the name.
 *
 * The addresses are considered IPv4 first, then IPv6 (an IPv4-mapped
 * address is IPv6 here), each family in the order of `addrs`: the proxy's
 * resolver order (A answers, then AAAA).  An address whose `skip` byte is
 * non-zero (`skip` may be NULL; the proxy marks its own listening
 * addresses there) and one of another family is SKIPPED: neither checked
 * nor dialled.  The others are checked with rules_check_addr() in turn
 * until one is allowed: that one is `picked`, each one before it is
 * REFUSED and listed in `refused[]` with its check in `check[]` (reason
 * denied with the deny entry, or internal-address with the internal
 * class), and the ones after it stay UNCHECKED: the proxy never dials
 * them.  A name is thus refused only when none of its addresses is
 * allowed.  Only the first min(n, RULES_PICK_MAX) addresses are looked at
 * (`out->n`); the rest are never picked.
 *
 * `dial` is what the proxy connects to: `picked`; when none is allowed and
 * the set is in report mode, the first refused address (the denial is
 * logged, the connection let through); else n.
 *
 * `d` is check[picked] when one is picked (verdict allow; its entry is the
 * allow block that covers an internal address, else NULL), else the check
 * of the first refused address; when nothing was checked (n is 0 or every
 * address was skipped) it is zero: deny, not-allowlisted, no entry, and
 * the caller says why (no address; only its own addresses).
 *
 * Never fails; `out` is always filled.  Only reads `r`.
 */
void	 rules_pick_addr(const struct rules *r, const struct rules_addr *addrs,
	    const unsigned char *skip, size_t n, uint16_t port,
	    struct rules_pick *out);

/* rules_pick_addr() for a run: each address checked with
 * rules_check_addr_within(r, policy, ...). */
void	 rules_pick_addr_within(const struct rules *r,
	    const struct rules *policy, const struct rules_addr *addrs,
	    const unsigned char *skip, size_t n, uint16_t port,
	    struct rules_pick *out);

/*
 * The refused addresses of `p` in the order considered, as one line for a
 * person, e.g. "10.0.0.1 (private), ::ffff:127.0.0.1 (loopback via
 * ipv4-mapped), 192.0.2.66 (deny 192.0.2.66/32 at rules.yaml:14)": an
 * internal address with its class, a denied one with the deny entry's text
 * and place.  Written into buf, cut to len bytes with "..." when it does
 * not fit, always terminated; "" when nothing was refused.  `addrs` is the
 * array given to rules_pick_addr().  Returns buf.
 */
const char	*rules_pick_refused_text(const struct rules_pick *p,
		    const struct rules_addr *addrs, char *buf, size_t len);

/*
 * An address as text, without brackets: "10.0.0.1", "2001:db8::1",
 * "::ffff:10.0.0.1"; "invalid" for another family.  Returns buf.
 */
const char	*rules_addr_text(const struct rules_addr *a, char *buf,
		    size_t len);

#endif /* INTUTIC_RULES_H */
