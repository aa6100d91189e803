/*
 * replay.c — runs a fuzz harness's LLVMFuzzerTestOneInput() over saved
 * inputs, without libFuzzer: the regression half of t/fuzz/ (README.md).
 *
 *	replay-TARGET			TAP: one point for the seed corpus
 *					$top_srcdir/t/fuzz/corpus/TARGET, one
 *					for the regression inputs
 *					$top_srcdir/t/fuzz/regress/TARGET
 *	replay-TARGET PATH...		each file, each file of each directory
 *
 * Every file (not those whose name starts with '.') is read into a buffer
 * of exactly its size, as libFuzzer hands an input over, so the build's
 * sanitizers see a read past its end.  An input that breaks the harness
 * kills the program (abort, or the sanitizer's report); the name of the
 * input is written to stderr first, so the test's log says which.
 */
#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "tap.h"

#ifndef FUZZ_TARGET
#error "FUZZ_TARGET names the harness"
#endif

#define REPLAY_PATH_MAX		4096
#define REPLAY_FILES_MAX	100000	/* files in one directory */
#define REPLAY_INPUT_MAX	(1024 * 1024)	/* bytes of one input */

static char	 current[REPLAY_PATH_MAX];	/* the input being run */

/* Says which input was running; only async-signal-safe calls. */
static void
replay_say_current(void)
{
	static const char pre[] = "replay: crashed on input '";
	static const char post[] = "'\n";

	if (current[0] == '\0')
		return;
	(void)!write(STDERR_FILENO, pre, sizeof(pre) - 1);
	(void)!write(STDERR_FILENO, current, strlen(current));
	(void)!write(STDERR_FILENO, post, sizeof(post) - 1);
}

static void
replay_signal_cb(int sig)
{
	replay_say_current();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Runs the harness on one file; 0, or -1 when it cannot be read. */
static int
replay_file(const char *path)
{
	struct stat st;
	uint8_t *buf = NULL;
	size_t len = 0;
	ssize_t n;
	int fd, r = -1;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		tap_diag("cannot open '%s': %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > REPLAY_INPUT_MAX) {
		tap_diag("'%s' is not a regular file of at most %d bytes", path,
		    REPLAY_INPUT_MAX);
		goto out;
	}
	/* One byte more than needed: an empty input still gets a buffer. */
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		tap_diag("out of memory for '%s'", path);
		goto out;
	}
	while (len < (size_t)st.st_size) {
		n = read(fd, buf + len, (size_t)st.st_size - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			tap_diag("cannot read '%s': %s", path,
			    n == 0 ? "short read" : strerror(errno));
			goto out;
		}
		len += (size_t)n;
	}
	/* Exactly len bytes readable, as libFuzzer gives them. */
	FUZZ_POISON(buf + len, 1);
	snprintf(current, sizeof(current), "%s", path);
	LLVMFuzzerTestOneInput(buf, len);
	current[0] = '\0';
	FUZZ_UNPOISON(buf + len, 1);
	r = 0;
 out:
	free(buf);
	close(fd);
	return r;
}

static int
replay_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Runs every file of a directory, in name order.  Returns the number of
 * files, or -1 when one could not be read; *missing says the directory
 * does not exist.
 */
static long
replay_dir(const char *dir, int *missing)
{
	char path[REPLAY_PATH_MAX], **names = NULL;
	struct dirent *de;
	size_t n = 0, i;
	long r = -1;
	DIR *d;

	*missing = 0;
	if ((d = opendir(dir)) == NULL) {
		*missing = errno == ENOENT;
		if (!*missing)
			tap_diag("cannot open '%s': %s", dir, strerror(errno));
		return -1;
	}
	if ((names = calloc(REPLAY_FILES_MAX, sizeof(*names))) == NULL)
		goto out;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (n == REPLAY_FILES_MAX) {
			tap_diag("more than %d files in '%s'",
			    REPLAY_FILES_MAX, dir);
			goto out;
		}
		if ((names[n] = strdup(de->d_name)) == NULL)
			goto out;
		n++;
	}
	qsort(names, n, sizeof(*names), replay_cmp);
	for (i = 0; i < n; i++) {
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir,
		    names[i]) >= sizeof(path) || replay_file(path) != 0)
			goto out;
	}
	r = (long)n;
 out:
	for (i = 0; names != NULL && i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return r;
}

/* One TAP point: every input under t/fuzz/KIND/TARGET. */
static void
replay_kind(const char *srcdir, const char *kind, int required)
{
	char dir[REPLAY_PATH_MAX];
	long n;
	int missing;

	snprintf(dir, sizeof(dir), "%s/t/fuzz/%s/%s", srcdir, kind,
	    FUZZ_TARGET);
	n = replay_dir(dir, &missing);
	if (missing && !required) {
		tap_ok(1, "%s: no %s inputs (no t/fuzz/%s/%s)", FUZZ_TARGET,
		    kind, kind, FUZZ_TARGET);
		return;
	}
	if (!tap_ok(n > 0 || (n == 0 && !required), "%s: %ld %s inputs",
	    FUZZ_TARGET, n < 0 ? 0 : n, kind) && missing)
		tap_diag("no directory '%s'", dir);
}

int
main(int argc, char **argv)
{
	const char *srcdir;
	struct stat st;
	int i, missing, status = 0;

	signal(SIGABRT, replay_signal_cb);
	signal(SIGSEGV, replay_signal_cb);
	signal(SIGBUS, replay_signal_cb);
	signal(SIGFPE, replay_signal_cb);
#ifdef FUZZ_HAVE_ASAN
	/* ASan reports and exits without a signal. */
	__sanitizer_set_death_callback(replay_say_current);
#endif
	if (argc > 1) {
		for (i = 1; i < argc; i++) {
			if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
				if (replay_dir(argv[i], &missing) < 0)
					status = 1;
			} else if (replay_file(argv[i]) != 0)
				status = 1;
		}
		return status;
	}
	if ((srcdir = getenv("top_srcdir")) == NULL || srcdir[0] == '\0')
		srcdir = ".";
	tap_plan(2);
	replay_kind(srcdir, "corpus", 1);
	replay_kind(srcdir, "regress", 0);
	return tap_done();
}
