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

int
spawn_foreground(char *const argv[], char *const envp[], int out_to_err,
    char *why, size_t whylen)
{
	posix_spawn_file_actions_t fa, *fap = NULL;
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT,
	    SIGUSR1, SIGUSR2, SIGWINCH };
	struct sigaction sa, old[sizeof(sigs) / sizeof(sigs[0])];
	size_t i;
	pid_t pid;
	int rc, st;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fg_forward;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	fg_child = 0;
	if (out_to_err) {
		if ((rc = posix_spawn_file_actions_init(&fa)) != 0) {
			snprintf(why, whylen, "cannot run %s: %s", argv[0],
			    strerror(rc));
			return -1;
		}
		if ((rc = posix_spawn_file_actions_adddup2(&fa, 2, 1)) != 0) {
			posix_spawn_file_actions_destroy(&fa);
			snprintf(why, whylen, "cannot run %s: %s", argv[0],
			    strerror(rc));
			return -1;
		}
		fap = &fa;
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
		return -1;
	}
	fg_child = pid;
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	fg_child = 0;
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &old[i], NULL);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}
