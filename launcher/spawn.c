/*
 * spawn.c — running other programs (see spawn.h).
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"
#include "spawn.h"

extern char **environ;

int
spawn_which(const char *name, char *path, size_t len)
{
	const char *p = getenv("PATH"), *end;
	struct stat sb;
	size_t dlen;
	int n;

	if (strchr(name, '/') != NULL) {
		n = snprintf(path, len, "%s", name);
		return n > 0 && (size_t)n < len && stat(path, &sb) == 0 &&
		    S_ISREG(sb.st_mode) && access(path, X_OK) == 0 ? 0 : -1;
	}
	if (p == NULL || *p == '\0')
		p = "/usr/local/bin:/usr/bin:/bin";
	for (;; p = end + 1) {
		if ((end = strchr(p, ':')) == NULL)
			end = p + strlen(p);
		dlen = (size_t)(end - p);
		if (dlen > 0 && dlen < INT_MAX) {
			n = snprintf(path, len, "%.*s/%s", (int)dlen, p, name);
			if (n > 0 && (size_t)n < len && stat(path, &sb) == 0 &&
			    S_ISREG(sb.st_mode) && access(path, X_OK) == 0)
				return 0;
		}
		if (*end == '\0')
			break;
	}
	path[0] = '\0';
	return -1;
}

int
spawn_run(char *const argv[], char *const envp[], int show_err,
    int timeout_ms, char *out, size_t outlen, int *status, char *why,
    size_t whylen)
{
	posix_spawn_file_actions_t fa;
	long long deadline = proc_now_ms() + timeout_ms;
	size_t have = 0;
	pid_t pid, w;
	int pfd[2] = { -1, -1 }, rc, st, open_out = 1;
	char sink[4096];

	*status = -1;
	if (out != NULL && outlen > 0)
		out[0] = '\0';
	if (out != NULL && pipe2(pfd, O_CLOEXEC) != 0) {
		snprintf(why, whylen, "cannot be run: %s", strerror(errno));
		return -1;
	}
	if ((rc = posix_spawn_file_actions_init(&fa)) != 0) {
		if (out != NULL) {
			close(pfd[0]);
			close(pfd[1]);
		}
		snprintf(why, whylen, "cannot be run: %s", strerror(rc));
		return -1;
	}
	if ((rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null",
	    O_RDONLY, 0)) != 0 ||
	    (rc = out != NULL ? posix_spawn_file_actions_adddup2(&fa, pfd[1],
	    1) : posix_spawn_file_actions_addopen(&fa, 1, "/dev/null",
	    O_WRONLY, 0)) != 0 ||
	    (!show_err && (rc = posix_spawn_file_actions_addopen(&fa, 2,
	    "/dev/null", O_WRONLY, 0)) != 0) ||
	    (rc = posix_spawn(&pid, argv[0], &fa, NULL, argv,
	    envp != NULL ? envp : environ)) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		if (out != NULL) {
			close(pfd[0]);
			close(pfd[1]);
		}
		snprintf(why, whylen, "cannot be run: %s", strerror(rc));
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	if (out != NULL)
		close(pfd[1]);
	else
		open_out = 0;
	while (open_out) {
		struct pollfd p = { pfd[0], POLLIN, 0 };
		long long left = deadline - proc_now_ms();
		ssize_t n;

		if (left <= 0)
			break;
		if (poll(&p, 1, (int)(left > 1000 ? 1000 : left)) <= 0)
			continue;
		if (have + 1 < outlen)
			n = read(pfd[0], out + have, outlen - 1 - have);
		else
			n = read(pfd[0], sink, sizeof(sink));
		if (n > 0 && have + 1 < outlen &&
		    (size_t)n <= outlen - 1 - have) {
			have += (size_t)n;
			out[have] = '\0';
		}
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			open_out = 0;
	}
	if (out != NULL)
		close(pfd[0]);
	for (;;) {
		struct timespec nap = { 0, 20 * 1000000L };

		w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			break;
		if (w == -1 && errno != EINTR) {
			snprintf(why, whylen, "cannot be waited for: %s",
			    strerror(errno));
			return -1;
		}
		if (proc_now_ms() < deadline) {
			nanosleep(&nap, NULL);
			continue;
		}
		{
			kill(pid, SIGKILL);
			while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
				;
			snprintf(why, whylen, "did not finish within %d s",
			    timeout_ms / 1000);
			return -1;
		}
	}
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return 0;
}

static volatile sig_atomic_t fg_child;

static void
fg_forward(int sig)
{
	if (fg_child > 0)
		kill((pid_t)fg_child, sig);
}

/* Appends buf to the tail (the last taillen - 1 bytes kept). */
static void
fg_tail_add(char *tail, size_t taillen, size_t *have, const char *buf,
    size_t n)
{
	size_t cap = taillen - 1, drop;

	if (n >= cap) {
		memcpy(tail, buf + (n - cap), cap);
		*have = cap;
	} else {
		if (*have + n > cap) {
			drop = *have + n - cap;
			memmove(tail, tail + drop, *have - drop);
			*have -= drop;
		}
		memcpy(tail + *have, buf, n);
		*have += n;
	}
	tail[*have] = '\0';
}

/* All of buf onto fd (a short write retried, an error given up on). */
static void
fg_write_all(int fd, const char *buf, size_t n)
{
	ssize_t w;

	while (n > 0) {
		if ((w = write(fd, buf, n)) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		buf += w;
		n -= (size_t)w;
	}
}

/*
 * Passes what the child writes on pfd onto stderr, the tail kept, until
 * it closes or the child has exited and nothing more is there; 1 when the
 * child was reaped here (status in *st), else 0.
 */
static int
fg_relay(pid_t pid, int pfd, char *tail, size_t taillen, int *st)
{
	char buf[4096];
	size_t have = 0, after = 0;
	ssize_t n;
	int exited = 0;

	tail[0] = '\0';
	for (;;) {
		struct pollfd p = { pfd, POLLIN, 0 };

		if (!exited && poll(&p, 1, 200) <= 0) {
			if (waitpid(pid, st, WNOHANG) == pid)
				exited = 1;	/* drain what is there, then stop */
			continue;
		}
		n = read(pfd, buf, sizeof(buf));
		if (n > 0) {
			fg_write_all(2, buf, (size_t)n);
			fg_tail_add(tail, taillen, &have, buf, (size_t)n);
			/* what is left behind writes on: not waited for */
			if (exited && (after += (size_t)n) > SPAWN_OUT_MAX)
				break;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && !exited)
			continue;
		break;
	}
	return exited;
}

static int
fg_run(char *const argv[], char *const envp[], int out_to_err, char *tail,
    size_t taillen, char *why, size_t whylen)
{
	posix_spawn_file_actions_t fa, *fap = NULL;
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT,
	    SIGUSR1, SIGUSR2, SIGWINCH };
	struct sigaction sa, old[sizeof(sigs) / sizeof(sigs[0])];
	size_t i;
	pid_t pid;
	int rc, st, pfd[2] = { -1, -1 };

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fg_forward;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	fg_child = 0;
	if (tail != NULL && taillen > 0 &&
	    pipe2(pfd, O_CLOEXEC | O_NONBLOCK) != 0) {
		snprintf(why, whylen, "cannot run %s: %s", argv[0],
		    strerror(errno));
		return -1;
	}
	if (out_to_err || pfd[1] != -1) {
		if ((rc = posix_spawn_file_actions_init(&fa)) != 0) {
			snprintf(why, whylen, "cannot run %s: %s", argv[0],
			    strerror(rc));
			goto fail;
		}
		fap = &fa;
		if ((pfd[1] != -1 &&
		    (rc = posix_spawn_file_actions_adddup2(&fa, pfd[1], 2)) != 0) ||
		    (out_to_err &&
		    (rc = posix_spawn_file_actions_adddup2(&fa, 2, 1)) != 0)) {
			posix_spawn_file_actions_destroy(&fa);
			snprintf(why, whylen, "cannot run %s: %s", argv[0],
			    strerror(rc));
			goto fail;
		}
	}
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, &old[i]);
	rc = posix_spawn(&pid, argv[0], fap, NULL, argv,
	    envp != NULL ? envp : environ);
	if (fap != NULL)
		posix_spawn_file_actions_destroy(fap);
	if (rc != 0) {
		for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
			sigaction(sigs[i], &old[i], NULL);
		snprintf(why, whylen, "cannot run %s: %s", argv[0],
		    strerror(rc));
		goto fail;
	}
	fg_child = pid;
	if (pfd[0] != -1) {
		close(pfd[1]);
		pfd[1] = -1;
		rc = fg_relay(pid, pfd[0], tail, taillen, &st);
		close(pfd[0]);
		pfd[0] = -1;
	} else
		rc = 0;
	while (!rc && waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	fg_child = 0;
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &old[i], NULL);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
 fail:
	if (pfd[0] != -1) {
		close(pfd[0]);
		close(pfd[1]);
	}
	return -1;
}

int
spawn_foreground(char *const argv[], char *const envp[], int out_to_err,
    char *why, size_t whylen)
{
	return fg_run(argv, envp, out_to_err, NULL, 0, why, whylen);
}

int
spawn_foreground_tail(char *const argv[], char *const envp[],
    int out_to_err, char *tail, size_t taillen, char *why, size_t whylen)
{
	return fg_run(argv, envp, out_to_err, tail, taillen, why, whylen);
}

/* spawn_lines(): the group to end and the signal that said so. */
static volatile sig_atomic_t lines_group, lines_sig;

static void
lines_signal(int sig)
{
	if (lines_sig == 0)
		lines_sig = sig;
	if (lines_group > 0)
		kill(-(pid_t)lines_group, sig);
}

/* Hands each whole line of buf[0..*have) on, keeping the rest. */
static void
lines_split(char *buf, size_t *have, int eof,
    void (*line_cb)(const char *, void *), void *arg)
{
	char *nl, *p = buf;
	size_t left = *have;

	while ((nl = memchr(p, '\n', left)) != NULL) {
		*nl = '\0';
		line_cb(p, arg);
		left -= (size_t)(nl + 1 - p);
		p = nl + 1;
	}
	if (left == SPAWN_LINE_MAX - 1 || (eof && left > 0)) {
		p[left] = '\0';	/* a line cut, or the last one */
		line_cb(p, arg);
		left = 0;
	}
	memmove(buf, p, left);
	*have = left;
}

int
spawn_lines(char *const argv[], void (*line_cb)(const char *, void *),
    void *arg, int *signo, char *why, size_t whylen)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct sigaction sa, old[sizeof(sigs) / sizeof(sigs[0])];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	char buf[SPAWN_LINE_MAX];
	long long kill_at = 0;
	size_t i, have = 0, drained = 0;
	siginfo_t si;
	ssize_t n;
	pid_t pid;
	int rc, st = 0, pfd[2], open_out = 1;

	*signo = 0;
	if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) != 0) {
		snprintf(why, whylen, "cannot run %s: %s", argv[0],
		    strerror(errno));
		return -1;
	}
	if ((rc = posix_spawn_file_actions_init(&fa)) != 0) {
		close(pfd[0]);
		close(pfd[1]);
		snprintf(why, whylen, "cannot run %s: %s", argv[0],
		    strerror(rc));
		return -1;
	}
	if ((rc = posix_spawnattr_init(&at)) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		close(pfd[0]);
		close(pfd[1]);
		snprintf(why, whylen, "cannot run %s: %s", argv[0],
		    strerror(rc));
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = lines_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	lines_group = 0;
	lines_sig = 0;
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, &old[i]);
	if ((rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null",
	    O_RDONLY, 0)) != 0 ||
	    (rc = posix_spawn_file_actions_adddup2(&fa, pfd[1], 1)) != 0 ||
	    (rc = posix_spawn_file_actions_adddup2(&fa, pfd[1], 2)) != 0 ||
	    (rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP)) != 0 ||
	    (rc = posix_spawnattr_setpgroup(&at, 0)) != 0 ||
	    (rc = posix_spawn(&pid, argv[0], &fa, &at, argv, environ)) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		posix_spawnattr_destroy(&at);
		for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
			sigaction(sigs[i], &old[i], NULL);
		close(pfd[0]);
		close(pfd[1]);
		snprintf(why, whylen, "cannot run %s: %s", argv[0],
		    strerror(rc));
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(pfd[1]);
	lines_group = pid;
	if (lines_sig != 0)	/* came before the group was known */
		kill(-pid, lines_sig);
	/*
	 * Until the child has exited (seen without reaping it, so that its
	 * group cannot be another's yet): its lines handed on; after a
	 * signal, the group killed when the grace is over.
	 */
	for (;;) {
		struct pollfd p = { pfd[0], POLLIN, 0 };

		if (lines_sig != 0 && kill_at == 0)
			kill_at = proc_now_ms() + SPAWN_GRACE_MS;
		if (kill_at != 0 && proc_now_ms() >= kill_at) {
			kill(-pid, SIGKILL);
			kill_at = -1;
		}
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG |
		    WNOWAIT) == 0 && si.si_pid == pid)
			break;
		if (!open_out || poll(&p, 1, 200) <= 0) {
			if (!open_out) {
				struct timespec nap = { 0, 50 * 1000000L };

				nanosleep(&nap, NULL);
			}
			continue;
		}
		n = read(pfd[0], buf + have, sizeof(buf) - 1 - have);
		if (n > 0) {
			have += (size_t)n;
			lines_split(buf, &have, 0, line_cb, arg);
		} else if (n == 0 || (errno != EINTR && errno != EAGAIN))
			open_out = 0;
	}
	/* What is left of its group goes with it after a signal. */
	if (lines_sig != 0)
		kill(-pid, SIGKILL);
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	lines_group = 0;
	while (open_out && drained < SPAWN_OUT_MAX && (n = read(pfd[0],
	    buf + have, sizeof(buf) - 1 - have)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		have += (size_t)n;
		drained += (size_t)n;
		lines_split(buf, &have, 0, line_cb, arg);
	}
	lines_split(buf, &have, 1, line_cb, arg);
	close(pfd[0]);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &old[i], NULL);
	*signo = (int)lines_sig;
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}
