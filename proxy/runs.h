/*
 * runs.h — the runs `intutic exec` registered with the proxy.
 *
 * A run is an identity: an id (INTUTIC_RUN in the agent's environment)
 * and a token the agent's proxy URL carries (http://RUN:TOKEN@host:port,
 * sent as Proxy-Authorization: Basic).  The proxy attributes a request
 * carrying good credentials to its run (the audit records' "run"),
 * answers 407 to unknown ones, and never writes a token anywhere.
 * The table is shared by the workers (one lock) and holds RUNS_MAX runs;
 * registering one more forgets the oldest.
 */
#ifndef INTUTIC_RUNS_H
#define INTUTIC_RUNS_H

#include <stddef.h>

#define RUNS_MAX		4096
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
};

struct runs	*runs_new(void);
void		 runs_free(struct runs *);

/*
 * Parses a registration (a JSON object: "run", "token", "command", and
 * optionally "project", "pid"); 0, or -1 and why.  The token is checked
 * for form only and never appears in `why`.
 */
int		 runs_parse(const char *body, size_t len, struct run_reg *reg,
		    char *why, size_t whylen);

/* 0; -1 when the id is registered already. */
int		 runs_add(struct runs *, const struct run_reg *reg);

/* 1 when `id` is registered with `token` (compared in constant time). */
int		 runs_check(struct runs *, const char *id, size_t idlen,
		    const char *token, size_t tokenlen);

/* Whether `s` is a well-formed run id. */
int		 runs_id_valid(const char *s, size_t len);

#endif /* INTUTIC_RUNS_H */
