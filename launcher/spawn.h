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

/*
 * spawn_foreground(), its stderr passed on through a pipe as it comes and
 * the last taillen - 1 bytes of it kept in `tail` (NUL-terminated) for the
 * caller to read the failure in.
 */
int	 spawn_foreground_tail(char *const argv[], char *const envp[],
	    int out_to_err, char *tail, size_t taillen, char *why,
	    size_t whylen);

#define SPAWN_LINE_MAX	4096	/* bytes of a line handed on; more cut */
#define SPAWN_GRACE_MS	10000	/* from SIGTERM to SIGKILL of a group */

/*
 * Runs argv in a process group of its own, stdin /dev/null, its stdout and
 * stderr into one pipe whose lines (without the newline, a longer one cut
 * at SPAWN_LINE_MAX - 1 bytes) are handed to line_cb(line, arg) as they
 * come, and waits.  A SIGINT, SIGTERM, SIGHUP or SIGQUIT received meanwhile
 * ends the whole group (that signal; SIGKILL after SPAWN_GRACE_MS) and is
 * kept in *signo (0 when none came).  Its exit status, 128+N when signal N
 * ended it, or -1 and why when it could not be started.
 */
int	 spawn_lines(char *const argv[], void (*line_cb)(const char *, void *),
	    void *arg, int *signo, char *why, size_t whylen);

#endif /* INTUTIC_SPAWN_H */
