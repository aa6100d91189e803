/*
 * runs.h — the runs `intutic exec` registered with the proxy, over its
 * control socket (way-control.c).
 *
 * A run is an identity: an id (INTUTIC_RUN in the agent's environment)
 * and a token the agent's proxy URL carries (http://RUN:TOKEN@host:port,
 * sent as Proxy-Authorization: Basic).  The proxy attributes a request
 * carrying good credentials to its run (the audit records' "run"),
 * answers 407 to unknown ones, and never writes a token anywhere.  Each
 * run belongs to the local user who registered it (the control socket's
 * peer), who alone may change or end it, besides root and the proxy's own
 * user.  A run holds its policy (struct run_policy); each connection of a
 * run holds a reference to it, so that it sees the policy change and the
 * run end.
 * The table is shared by the workers (one lock) and holds at most
 * RUNS_MAX runs, RUNS_PER_USER_MAX of one user: past either, a
 * registration is refused (after ending the runs whose launcher is gone),
 * never does it push another run out.
 */
#ifndef INTUTIC_RUNS_H
#define INTUTIC_RUNS_H

#include <sys/types.h>
#include <netinet/in.h>

#include <stddef.h>
#include <stdint.h>

#include "rules.h"

struct evbuffer;

#define RUNS_MAX		4096
#define RUNS_PER_USER_MAX	256
#define RUN_ID_MAX		64	/* bytes of an id, with its NUL */
#define RUN_TOKEN_MIN		32	/* hex digits of a token */
#define RUN_TOKEN_MAX		128
#define RUN_COMMAND_MAX		256
#define RUN_PROJECT_MAX		1024
#define RUN_POLICY_MAX		(16 * 1024)	/* bytes of a policy's text */
#define RUN_DENIALS_MAX		8	/* the last denials a run keeps */
#define RUNS_BODY_MAX		(56 * 1024)	/* bytes of a request body */

struct runs;
struct run;
struct rules;

/*
 * A run's policy: the rule set that narrows the operator's rules for it
 * (rules_decide_within()), compiled from its text, with the generation
 * that counts its changes (1 at registration).  Immutable: a change makes
 * a new one.  set NULL: the operator's rules alone.
 */
struct run_policy {
	struct rules	*set;
	char		*text;		/* as received; NULL with set NULL */
	unsigned long long generation;
};

/* What POST /v1/runs carries. */
struct run_reg {
	char		 id[RUN_ID_MAX];
	char		 token[RUN_TOKEN_MAX + 1];
	char		 command[RUN_COMMAND_MAX];
	char		 project[RUN_PROJECT_MAX];	/* "" for none */
	long long	 pid;				/* -1 for none */
	uid_t		 uid;		/* its owner: not parsed, the peer's */
	char		*policy;	/* its text, malloc'd; NULL: none */
	long long	 generation;	/* PUT .../policy: the one changed; -1 */
	struct rules_addr addr;		/* its sandbox's; family 0: none */
};

/* What runs_add() says. */
enum runs_added {
	RUNS_ADDED = 0,
	RUNS_EXISTS,		/* a run with that id is registered */
	RUNS_USER_FULL,		/* its owner has RUNS_PER_USER_MAX */
	RUNS_FULL,		/* the proxy has RUNS_MAX */
	RUNS_NO_PID,		/* its pid names no running process */
	RUNS_ADDR_TAKEN,	/* another run has its address */
	RUNS_NOT_KEPT		/* it could not be written down: not added */
};

/* Who asks: a user sees and changes its own runs; an admin, every run. */
struct runs_peer {
	uid_t		 uid;
	int		 admin;
};

/*
 * The table, kept in dir (DIR/runs.json, its tokens' MACs under the key
 * DIR/runs.key, made when missing): the runs kept there whose launcher
 * still lives come back, with their policies compiled again (`compile`
 * makes a policy's set from its text: 0, or -1 and why).  dir NULL: kept
 * nowhere.  NULL and why.
 */
typedef int	(*runs_compile_fn)(const char *id, const char *text,
		    struct rules **set, char *why, size_t whylen, void *arg);
struct runs	*runs_new(const char *dir, runs_compile_fn compile, void *arg,
		    char *why, size_t whylen);
void		 runs_free(struct runs *);

/* What runs_parse() reads. */
enum runs_body {
	RUNS_BODY_REG = 0,	/* POST /v1/runs: a registration */
	RUNS_BODY_POLICY,	/* PUT /v1/runs/RUN/policy: a change of policy */
	RUNS_BODY_ADDR,		/* PUT /v1/runs/RUN/addr: its sandbox's address */
};

/*
 * Parses a JSON object: a registration ("run", "token", "command", and
 * optionally "project", "pid", "policy", "addr"), a change of policy
 * ("generation" and "policy" only) or an address ("addr" only, not null);
 * 0, or -1 and why.  The token is checked for form only and never appears
 * in `why`.  reg->policy is the caller's to free (run_reg_clear()).
 */
int		 runs_parse(const char *body, size_t len, enum runs_body what,
		    struct run_reg *reg, char *why, size_t whylen);
void		 run_reg_clear(struct run_reg *reg);

/*
 * Registers reg (its owner reg->uid) with the policy compiled from
 * reg->policy (set; taken over: its reference and reg->policy become the
 * run's).  A full table first ends the runs whose launcher (reg's pid,
 * with the start time it had) is gone.
 */
enum runs_added	 runs_add(struct runs *, struct run_reg *reg,
		    struct rules *set);

/*
 * Ends run `id`: 0; -1 no such run; -2 it is not the peer's; -3 it could
 * not be written down (the run stays).
 */
int		 runs_end(struct runs *, const char *id,
		    const struct runs_peer *who);

/*
 * Replaces the policy of run `id` with `text` compiled to `set` (taken
 * over on success), when its generation is `generation`: 0 and the new
 * generation in *gen; -1 no such run; -2 not the peer's; -3 not written
 * down (nothing changed); -4 its generation is another (in *gen).
 */
int		 runs_set_policy(struct runs *, const char *id,
		    const struct runs_peer *who, unsigned long long generation,
		    char *text, struct rules *set, unsigned long long *gen);

/*
 * Gives run `id` the address of its sandbox (once: the launcher, having
 * picked it, before the sandbox starts): from then on a connection from
 * there is that run's (runs_by_addr()).  0; -1 no such run; -2 not the
 * peer's; -3 not written down (nothing changed); -4 it has one already;
 * -5 another run has that address.
 */
int		 runs_set_addr(struct runs *, const char *id,
		    const struct runs_peer *who, const struct rules_addr *addr);

/*
 * Appends to out, as JSON, the runs the peer may see (id NULL: {"runs":
 * [...]}, every one of them) or run `id` (an object, with its policy and
 * its last denials).  0; -1 no such run; -2 not the peer's; -3 out of
 * memory.
 */
int		 runs_json(struct runs *, const char *id,
		    const struct runs_peer *who, struct evbuffer *out);

/*
 * Asks for the index slot of run id[0..len) to come in: a request calls it
 * as soon as it has its credentials, and runs_check() later, with other
 * work done meanwhile, finds the slot there.  Reads nothing of the table
 * but its fixed parts.
 */
void		 runs_prefetch_id(struct runs *, const char *id, size_t len);
/*
 * The run `id` is when registered with `token` (compared in constant
 * time): a new reference, or NULL.
 */
struct run	*runs_check(struct runs *, const char *id, size_t idlen,
		    const char *token, size_t tokenlen);

/*
 * The run whose sandbox has address `a` (its registration's "addr"): the
 * kernel's word for who a connection from there is.  A new reference, or
 * NULL.
 */
struct run	*runs_by_addr(struct runs *, const struct rules_addr *a);

/*
 * Ends the runs whose launcher is gone (its pid runs nothing, or another
 * process): how many.  The proxy calls it now and then, besides when a cap
 * is reached and when runs are listed.  fn, when set with runs_on_gone(),
 * is told of each, under the table's lock (it must not call runs_*()).
 */
typedef void	(*runs_gone_fn)(const char *id, long long pid, void *arg);
void		 runs_on_gone(struct runs *, runs_gone_fn fn, void *arg);
size_t		 runs_sweep_gone(struct runs *);

/* Drops a reference (NULL is nothing); the last one frees the run. */
void		 run_release(struct run *);
/*
 * Asks for the lines of a run a request touches (through its policy's
 * reference) to come in at once, not one after the other as the request
 * reads them: with many runs, each is likely cold.  Reads nothing.
 */
void		 run_prefetch(const struct run *);
const char	*run_id(const struct run *);

/*
 * The run's policy now: 0 and *pol filled (its set a new reference, to be
 * given back with rules_free(); its text not filled); -1 when the run has
 * ended (*pol zeroed).
 */
int		 run_policy(struct run *, struct run_policy *pol);

/* Counts a request of the run, and a denial (host NULL: none). */
void		 run_count(struct run *, const char *host, int port,
		    const char *reason, const char *rule);
void		 run_bytes(struct run *, uint64_t up, uint64_t down);

/*
 * s as a JSON string (NULL: null; jsonw.h quotes it) appended to out, for
 * the control API's answers: 0, or -1 when out of memory.
 */
int		 runs_json_str(struct evbuffer *out, const char *s);

/* Whether `s` is a well-formed run id. */
int		 runs_id_valid(const char *s, size_t len);

/*
 * What the provider gateway derives a run's brokered keys from: the MAC of
 * its token (never the token), *len bytes, as long as run lives.
 */
const unsigned char *run_secret(const struct run *run, size_t *len);
/* Run id, a new reference (run_release()); NULL when not registered. */
struct run	*runs_ref(struct runs *r, const char *id);
/* A count that changes whenever a run is added or dropped. */
uint64_t	 runs_changes(const struct runs *r);
/* fn(run, arg) for each registered run, under the table's lock. */
void		 runs_each(struct runs *r,
		    void (*fn)(const struct run *, void *), void *arg);

#endif /* INTUTIC_RUNS_H */
