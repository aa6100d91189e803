/*
 * proc.h — a process named by a pid read from a file (the state file),
 * checked before anything is done to it.
 *
 * A pid can be reused once its process has exited, so the launcher never
 * signals a pid because a file says so: it opens a handle on the process
 * (a pidfd, Linux 5.3 and later), checks that it is an intutic-proxy, and
 * signals it through the handle, which then reaches that process or none.
 * Without pidfds, kill(2) is used right after the check.
 */
#ifndef INTUTIC_PROC_H
#define INTUTIC_PROC_H

#include <sys/types.h>

#include <stddef.h>

#define PROC_PROXY_NAME	"intutic-proxy"
#define PROC_POLL_MS	50	/* between checks, without a pidfd */

enum proc_kind {
	PROC_GONE = 0,	/* exited (a zombie counts as exited) */
	PROC_OTHER,	/* runs, but is not an intutic-proxy */
	PROC_PROXY,	/* an intutic-proxy */
};

struct proc {
	pid_t	 pid;
	int	 fd;	/* the pidfd, or -1 */
};

/*
 * Opens a handle on pid.  Returns 0; or -1 with errno ESRCH when there is
 * no such process.  Without pidfd support it still returns 0 (fd -1).
 */
int		 proc_open(struct proc *p, pid_t pid);

/*
 * What the process is.  It is an intutic-proxy when the file it executes
 * (/proc/PID/exe), or, when that cannot be read (another user's process),
 * its argv[0], is named intutic-proxy.  For PROC_OTHER, what (when not
 * NULL) gets the executable's path, or argv[0], for messages.
 */
enum proc_kind	 proc_kind(const struct proc *p, char *what, size_t len);

/*
 * proc_kind() for the proxy a state file names, which it says started at
 * `started` (seconds since the epoch; 0: not said): an intutic-proxy that
 * started more than PROC_START_SLACK seconds away from that is another
 * one (its pid reused), PROC_OTHER, what saying so.
 */
#define PROC_START_SLACK	5
enum proc_kind	 proc_kind_started(const struct proc *p, long long started,
		    char *what, size_t len);

/* Sends sig.  Returns 0, or -1 with errno set (ESRCH: it has exited). */
int		 proc_signal(const struct proc *p, int sig);

/*
 * Waits at most timeout_ms for the process to exit.  Returns 0 when it has,
 * -1 when it still runs.
 */
int		 proc_wait_exit(const struct proc *p, int timeout_ms);

/* Closes the handle; the process is not touched. */
void		 proc_close(struct proc *p);

/* Milliseconds on the monotonic clock, for deadlines. */
long long	 proc_now_ms(void);

#endif /* INTUTIC_PROC_H */
