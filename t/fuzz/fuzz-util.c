/*
 * fuzz-util.c — the helpers of fuzz.h, linked into every harness.
 */
#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

#define FUZZ_PATH_MAX	4096

static char	 fuzz_dir[FUZZ_PATH_MAX];

void
fuzz_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n", file, line,
	    what);
	abort();
}

/* Removes the files of the private directory, then the directory. */
static void
fuzz_tmpdir_remove(void)
{
	char path[FUZZ_PATH_MAX];
	struct dirent *de;
	DIR *d;
	int n;

	if (fuzz_dir[0] == '\0' || (d = opendir(fuzz_dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		n = snprintf(path, sizeof(path), "%s/%s", fuzz_dir, de->d_name);
		if (n > 0 && (size_t)n < sizeof(path))
			unlink(path);
	}
	closedir(d);
	rmdir(fuzz_dir);
}

const char *
fuzz_tmpdir(void)
{
	const char *base;
	int n;

	if (fuzz_dir[0] != '\0')
		return fuzz_dir;
	if ((base = getenv("TMPDIR")) == NULL || base[0] != '/')
		base = "/tmp";
	n = snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/intutic-fuzz.XXXXXX",
	    base);
	if (n < 0 || (size_t)n >= sizeof(fuzz_dir) || mkdtemp(fuzz_dir) == NULL) {
		fprintf(stderr, "fuzz: cannot make a directory under '%s': %s\n",
		    base, strerror(errno));
		abort();
	}
	atexit(fuzz_tmpdir_remove);
	return fuzz_dir;
}

void
fuzz_write_file(const char *name, const void *buf, size_t len, char *path,
    size_t pathlen)
{
	const char *p = buf;
	ssize_t w;
	int fd, n;

	n = snprintf(path, pathlen, "%s/%s", fuzz_tmpdir(), name);
	if (n < 0 || (size_t)n >= pathlen)
		fuzz_fail(__FILE__, __LINE__, "path fits");
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600)) == -1) {
		fprintf(stderr, "fuzz: cannot write '%s': %s\n", path,
		    strerror(errno));
		abort();
	}
	while (len > 0) {
		if ((w = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "fuzz: cannot write '%s': %s\n", path,
			    strerror(errno));
			abort();
		}
		p += w;
		len -= (size_t)w;
	}
	if (close(fd) == -1)
		fuzz_fail(__FILE__, __LINE__, "close succeeds");
}
