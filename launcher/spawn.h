/*
 * spawn.h — running other programs (container runtimes) without a shell:
 * find one in PATH, run one to completion within a time limit (its output
 * captured or discarded), or run one in the foreground with the signals
 * intutic receives passed on to it.
 */
#ifndef INTUTIC_SPAWN_H
#define INTUTIC_SPAWN_H

#include <stddef.h>

#define SPAWN_OUT_MAX	(64 * 1024)	/* bytes of output kept */

/* NAME in $PATH: 0 with its path, else -1. */
int	 spawn_which(const char *name, char *path, size_t len);

/*
 * Runs argv (argv[0] a path) with envp (NULL: intutic's own), stdin
 * /dev/null, stdout into `out` (NUL-terminated, at most outlen - 1 bytes;
 * NULL: discarded), stderr discarded unless `show_err`; kills it after
 * timeout_ms.  0 with its exit status in *status (-1 when a signal ended
 * it); -1 and why ("did not finish within N s", "cannot be run: ...")
 * when it could not be run or timed out.
 */
int	 spawn_run(char *const argv[], char *const envp[], int show_err,
	    int timeout_ms, char *out, size_t outlen, int *status, char *why,
	    size_t whylen);

/*
 * Runs argv in the foreground (stdin, stdout, stderr shared; its stdout
 * onto stderr with `out_to_err`) with envp,
 * passing SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGWINCH
 * on to it, and waits.  Its exit status, 128+N when signal N ended it, or
 * -1 and why when it could not be started.
 */
int	 spawn_foreground(char *const argv[], char *const envp[],
	    int out_to_err, char *why, size_t whylen);

#endif /* INTUTIC_SPAWN_H */
