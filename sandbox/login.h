/*
 * sandbox/login.h — --sandbox-login AGENT: an agent's login files (and
 * only those) copied from the user's home into the sandbox's at the start
 * of a run, and back out at its end when the agent changed them
 * (refreshed tokens).
 *
 * The agents and their files, relative to the home (login_agents[] in
 * login.c, the one description of them):
 *	claude	.claude/.credentials.json .claude.json
 *	codex	.codex/auth.json
 *
 * At the start the files are copied into a directory of their own (made
 * 0700 under TMPDIR, its `home` the agent's uid's), which the container
 * gets at LOGIN_MOUNT; the entrypoint copies them into the sandbox home,
 * mode 0600, and back after the command exits.  At the end a file whose
 * content changed is written to the user's home without following links:
 * its directory opened O_NOFOLLOW, a new file beside it (O_EXCL,
 * O_NOFOLLOW, 0600) renamed over it.  A file that changed on the host
 * during the run too, or is no longer a regular file there, is left alone
 * and that is said.  The sandbox's copy is read O_NOFOLLOW, a regular
 * file of at most LOGIN_FILE_MAX bytes, or not at all.
 */
#ifndef INTUTIC_SANDBOX_LOGIN_H
#define INTUTIC_SANDBOX_LOGIN_H

#include <sys/types.h>
#include <stddef.h>

#define LOGIN_MOUNT	"/run/intutic-login"	/* in the container */
#define LOGIN_FILE_MAX	(1024 * 1024)	/* bytes of one login file */
#define LOGIN_FILES_MAX	8		/* files of one run */

struct login;

/* 1 when AGENT is in the table, else 0; `names` gets "claude, codex". */
int	 login_agent_known(const char *agent, char *names, size_t len);

/*
 * Copies the files of `agents` (n of them, each known) from $HOME into a
 * new directory whose `home` belongs to uid:gid.  A file that is missing
 * is said and skipped; one that is not a regular file (a link, too) or
 * is larger than LOGIN_FILE_MAX refuses the run.  0 and *out (NULL when
 * no file was there to copy), or -1 (said).
 */
int	 login_stage(const char *const *agents, size_t n, uid_t uid,
	    gid_t gid, struct login **out);

/* The directory to mount at LOGIN_MOUNT. */
const char *login_dir(const struct login *l);

/* The files, relative to the home, space-separated (for the entrypoint). */
const char *login_list(const struct login *l);

/*
 * Copies back what changed, as the header says; removes the directory and
 * frees `l`.  NULL does nothing.
 */
void	 login_finish(struct login *l);

#endif /* INTUTIC_SANDBOX_LOGIN_H */
