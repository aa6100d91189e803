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
 * peer), who alone may end it, besides root and the proxy's own user.
 * The table is shared by the workers (one lock) and holds at most
 * RUNS_MAX runs, RUNS_PER_USER_MAX of one user: past either, a
 * registration is refused (after ending the runs whose launcher is gone),
 * never does it push another run out.
 */
#ifndef INTUTIC_RUNS_H
#define INTUTIC_RUNS_H

#include <sys/types.h>

#include <stddef.h>

struct evbuffer;

#define RUNS_MAX		4096
#define RUNS_PER_USER_MAX	256
#define RUN_ID_MAX		64	/* bytes of an id, with its NUL */
#define RUN_TOKEN_MIN		32	/* hex digits of a token */
#define RUN_TOKEN_MAX		128
#define RUN_COMMAND_MAX		256
#define RUN_PROJECT_MAX		1024
#define RUNS_BODY_MAX		4096	/* bytes of a registration */

struct runs;

/* What POST /v1/runs carries. */
struct run_reg {
	char		 id[RUN_ID_MAX];
	char		 token[RUN_TOKEN_MAX + 1];
	char		 command[RUN_COMMAND_MAX];
	char		 project[RUN_PROJECT_MAX];	/* "" for none */
	long long	 pid;				/* -1 for none */
	uid_t		 uid;		/* its owner: not parsed, the peer's */
};

/* What runs_add() says. */
enum runs_added {
	RUNS_ADDED = 0,
	RUNS_EXISTS,		/* a run with that id is registered */
	RUNS_USER_FULL,		/* its owner has RUNS_PER_USER_MAX */
	RUNS_FULL,		/* the proxy has RUNS_MAX */
	RUNS_NO_PID,		/* its pid names no running process */
	RUNS_NOT_KEPT		/* it could not be written down: not added */
};

/* Who asks: a user sees and ends its own runs; an admin, every run. */
struct runs_peer {
	uid_t		 uid;
	int		 admin;
};

/*
 * The table, kept in dir (DIR/runs.json, its tokens' MACs under the key
 * DIR/runs.key, made when missing): the runs kept there whose launcher
 * still lives come back.  dir NULL: kept nowhere.  NULL and why.
 */
struct runs	*runs_new(const char *dir, char *why, size_t whylen);
void		 runs_free(struct runs *);

/*
 * Parses a registration (a JSON object: "run", "token", "command", and
 * optionally "project", "pid"); 0, or -1 and why.  The token is checked
 * for form only and never appears in `why`.
 */
int		 runs_parse(const char *body, size_t len, struct run_reg *reg,
		    char *why, size_t whylen);

/*
 * Registers reg (its owner reg->uid).  A full table first ends the runs
 * whose launcher (reg's pid, with the start time it had) is gone.
 */
enum runs_added	 runs_add(struct runs *, const struct run_reg *reg);

/*
 * Ends run `id`: 0; -1 no such run; -2 it is not the peer's; -3 it could
 * not be written down (the run stays).
 */
int		 runs_end(struct runs *, const char *id,
		    const struct runs_peer *who);

/*
 * Appends to out, as JSON, the runs the peer may see (id NULL: {"runs":
 * [...]}, every one of them) or run `id` (an object).  0; -1 no such run; -2 not the
 * peer's; -3 out of memory.
 */
int		 runs_json(struct runs *, const char *id,
		    const struct runs_peer *who, struct evbuffer *out);

/* 1 when `id` is registered with `token` (compared in constant time). */
int		 runs_check(struct runs *, const char *id, size_t idlen,
		    const char *token, size_t tokenlen);

/* Whether `s` is a well-formed run id. */
int		 runs_id_valid(const char *s, size_t len);

#endif /* INTUTIC_RUNS_H */
