/*
 * proc.c — handles on processes named by a pid (see proc.h).
 */
#include "config.h"

#include <sys/syscall.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"

#define PROC_CMDLINE_MAX	4096	/* bytes of /proc/PID/cmdline */
#define PROC_STAT_MAX		1024	/* bytes of /proc/PID/stat */

#define PROC_DELETED		" (deleted)"

static ssize_t	proc_read(const char *path, char *buf, size_t len);

/* Reads up to len - 1 bytes of a file under /proc/PID; returns the count. */
static ssize_t
proc_file(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%ld/%s", (long)pid, name);
	return proc_read(path, buf, len);
}

/* Reads up to len - 1 bytes of path; returns the count, or -1. */
static ssize_t
proc_read(const char *path, char *buf, size_t len)
{
	ssize_t n;
	size_t off = 0;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	while (off < len - 1) {
		n = read(fd, buf + off, len - 1 - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	buf[off] = '\0';
	return (ssize_t)off;
}

/* Exited: no /proc entry, or a zombie ('Z') or dead ('X') one. */
static int
proc_exited(pid_t pid)
{
	char buf[PROC_STAT_MAX], *paren;

	if (proc_file(pid, "stat", buf, sizeof(buf)) == -1)
		return errno == ENOENT || errno == ESRCH;
	/* "PID (COMM) S ...": COMM may hold spaces and parentheses. */
	if ((paren = strrchr(buf, ')')) == NULL || paren[1] != ' ')
		return 0;
	return paren[2] == 'Z' || paren[2] == 'X';
}

static ssize_t
proc_exe(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%ld/exe", (long)pid);
	if ((n = readlink(path, buf, len - 1)) == -1)
		return -1;
	buf[n] = '\0';
	return n;
}

static int
proc_named_proxy(const char *path)
{
	const char *slash = strrchr(path, '/');

	return strcmp(slash != NULL ? slash + 1 : path, PROC_PROXY_NAME) == 0;
}

int
proc_open(struct proc *p, pid_t pid)
{
	p->pid = pid;
	p->fd = -1;
	if (pid <= 0) {
		errno = ESRCH;
		return -1;
	}
#ifdef SYS_pidfd_open
	p->fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (p->fd != -1) {
		/* The kernel's pidfds are close-on-exec already. */
		return 0;
	}
	if (errno == ESRCH)
		return -1;
	p->fd = -1;
#endif
	if (kill(pid, 0) == -1 && errno == ESRCH)
		return -1;
	return 0;
}

int
proc_signal(const struct proc *p, int sig)
{
#ifdef SYS_pidfd_send_signal
	if (p->fd != -1)
		return (int)syscall(SYS_pidfd_send_signal, p->fd, sig, NULL, 0);
#endif
	return kill(p->pid, sig);
}

enum proc_kind
proc_kind(const struct proc *p, char *what, size_t len)
{
	char exe[PATH_MAX], cmd[PROC_CMDLINE_MAX];
	size_t dl = sizeof(PROC_DELETED) - 1;
	enum proc_kind kind;
	ssize_t n;

	if (what != NULL && len > 0)
		what[0] = '\0';
	if (proc_exited(p->pid))
		return PROC_GONE;
	if ((n = proc_exe(p->pid, exe, sizeof(exe))) > 0) {
		/* A binary replaced since (a rebuild) reads "(deleted)". */
		if ((size_t)n > dl && strcmp(exe + n - dl, PROC_DELETED) == 0)
			exe[n - dl] = '\0';
		kind = proc_named_proxy(exe) ? PROC_PROXY : PROC_OTHER;
		if (what != NULL)
			snprintf(what, len, "%s", exe);
	} else {
		/* Another user's process: its argv[0] is what is left. */
		if (proc_file(p->pid, "cmdline", cmd, sizeof(cmd)) == -1)
			return proc_exited(p->pid) ? PROC_GONE : PROC_OTHER;
		kind = cmd[0] != '\0' && proc_named_proxy(cmd) ? PROC_PROXY :
		    PROC_OTHER;
		if (what != NULL)
			snprintf(what, len, "%s", cmd[0] != '\0' ? cmd :
			    "a process without a command line");
	}
	/* The pid may have been reused while /proc was read. */
	if (proc_exited(p->pid) || (p->fd != -1 && proc_signal(p, 0) == -1 &&
	    errno == ESRCH))
		return PROC_GONE;
	return kind;
}

/* The process's start in seconds since the epoch; -1 when not known. */
static long long
proc_started(pid_t pid)
{
	char stat[PROC_STAT_MAX], *s, *save = NULL, *tok, *end, *line = NULL;
	unsigned long long ticks = 0, btime = 0;
	long hz = sysconf(_SC_CLK_TCK);
	size_t cap = 0;
	FILE *fp;
	int field, found = 0;

	if (hz <= 0 || proc_file(pid, "stat", stat, sizeof(stat)) <= 0 ||
	    (s = strrchr(stat, ')')) == NULL)
		return -1;
	/* After "(comm)": state is field 3, starttime field 22. */
	for (field = 3, tok = strtok_r(s + 1, " ", &save); tok != NULL;
	    tok = strtok_r(NULL, " ", &save), field++)
		if (field == 22) {
			errno = 0;
			ticks = strtoull(tok, &end, 10);
			if (errno != 0 || *end != '\0')
				return -1;
			break;
		}
	/* The boot time: /proc/stat's "btime" line (after long ones). */
	if (tok == NULL || (fp = fopen("/proc/stat", "re")) == NULL)
		return -1;
	while (!found && getline(&line, &cap, fp) > 0)
		if (strncmp(line, "btime ", 6) == 0) {
			errno = 0;
			btime = strtoull(line + 6, &end, 10);
			found = errno == 0 && end != line + 6;
		}
	free(line);
	fclose(fp);
	if (!found)
		return -1;
	return (long long)(btime + ticks / (unsigned long long)hz);
}

enum proc_kind
proc_kind_started(const struct proc *p, long long started, char *what,
    size_t len)
{
	enum proc_kind kind = proc_kind(p, what, len);
	long long at;

	if (kind != PROC_PROXY || started <= 0 ||
	    (at = proc_started(p->pid)) < 0 ||
	    (at - started <= PROC_START_SLACK && started - at <= PROC_START_SLACK))
		return kind;
	if (what != NULL)
		snprintf(what, len, "an intutic-proxy started at %lld, not the "
		    "one the state file names (started at %lld)", at, started);
	return PROC_OTHER;
}

long long
proc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
proc_wait_exit(const struct proc *p, int timeout_ms)
{
	struct pollfd pfd;
	long long end = proc_now_ms() + timeout_ms, left;
	int r;

	for (;;) {
		if (proc_exited(p->pid))
			return 0;
		if ((left = end - proc_now_ms()) <= 0)
			return -1;
		if (p->fd != -1) {
			/* A pidfd turns readable when its process exits. */
			pfd.fd = p->fd;
			pfd.events = POLLIN;
			pfd.revents = 0;
			if ((r = poll(&pfd, 1, (int)left)) == 1)
				return 0;
			if (r != -1 || errno == EINTR)
				continue;
		}
		usleep((useconds_t)(left < PROC_POLL_MS ? left :
		    PROC_POLL_MS) * 1000);
	}
}

void
proc_close(struct proc *p)
{
	if (p->fd != -1)
		close(p->fd);
	p->fd = -1;
}
