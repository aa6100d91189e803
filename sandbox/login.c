/*
 * sandbox/login.c — --sandbox-login AGENT: see login.h.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "login.h"

#define LOGIN_PATH_DEPTH	4	/* directories in a file's path */
#define LOGIN_NFTW_FDS		16

/* The agents and their login files, relative to the home. */
static const struct login_agent {
	const char	*name;
	const char	*files[3];	/* NULL-terminated */
} login_agents[] = {
	{ "claude", { ".claude/.credentials.json", ".claude.json", NULL } },
	{ "codex", { ".codex/auth.json", NULL } },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

struct login {
	char		 dir[PATH_MAX];		/* made here, 0700 */
	char		 home[PATH_MAX + 8];	/* dir/home, the agent's */
	char		 list[LOGIN_FILES_MAX * 64];
	struct login_file {
		const char	*rel;		/* from login_agents[] */
		char		*data;		/* as copied in */
		size_t		 len;
		struct stat	 sb;		/* the host's file then */
	}		 f[LOGIN_FILES_MAX];
	size_t		 n;
};

int
login_agent_known(const char *agent, char *names, size_t len)
{
	size_t i, used = 0;
	int known = 0;

	if (len > 0)
		names[0] = '\0';
	for (i = 0; i < NELEM(login_agents); i++) {
		if (strcmp(agent, login_agents[i].name) == 0)
			known = 1;
		if (used < len)
			used += (size_t)snprintf(names + used, len - used,
			    "%s%s", i == 0 ? "" : ", ", login_agents[i].name);
	}
	return known;
}

/*
 * The directory that holds `rel`'s file, below the directory `base`, every
 * component opened without following a link (made, mode 0700 and
 * uid:gid's, with `create`); *leaf points at the file's name in rel.  A
 * descriptor, or -1 and errno.
 */
static int
login_parent(int base, const char *rel, int create, uid_t uid, gid_t gid,
    const char **leaf)
{
	char part[NAME_MAX + 1];
	const char *p = rel, *slash;
	struct stat sb;
	int fd, next, depth = 0, saved;

	if ((fd = dup(base)) == -1)
		return -1;
	while ((slash = strchr(p, '/')) != NULL) {
		if ((size_t)(slash - p) >= sizeof(part) ||
		    ++depth > LOGIN_PATH_DEPTH) {
			close(fd);
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(part, p, (size_t)(slash - p));
		part[slash - p] = '\0';
		if (create && mkdirat(fd, part, 0700) == 0 &&
		    fchownat(fd, part, uid, gid, AT_SYMLINK_NOFOLLOW) != 0) {
			close(fd);
			return -1;
		}
		next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		/* O_DIRECTORY's ENOTDIR for a link: say it is one */
		if (next == -1 && errno == ENOTDIR &&
		    fstatat(fd, part, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(sb.st_mode))
			errno = ELOOP;
		saved = errno;
		close(fd);
		errno = saved;
		if ((fd = next) == -1)
			return -1;
		p = slash + 1;
	}
	*leaf = p;
	return fd;
}

/*
 * Reads `rel` below `base` without following a link: a regular file of at
 * most LOGIN_FILE_MAX bytes.  0 (*data the caller's), 1 when it is not
 * there, -1 and errno (ELOOP: a link; EFTYPE-like: EINVAL, not a regular
 * file; EFBIG: too large).
 */
static int
login_read(int base, const char *rel, char **data, size_t *len,
    struct stat *sb)
{
	const char *leaf;
	char *buf = NULL;
	size_t got = 0;
	ssize_t k;
	int dfd, fd, r = -1, saved;

	*data = NULL;
	*len = 0;
	if ((dfd = login_parent(base, rel, 0, 0, 0, &leaf)) == -1)
		return errno == ENOENT ? 1 : -1;
	fd = openat(dfd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	saved = errno;
	close(dfd);
	if (fd == -1) {
		errno = saved;
		return errno == ENOENT ? 1 : -1;
	}
	if (fstat(fd, sb) != 0)
		goto out;
	if (!S_ISREG(sb->st_mode)) {
		errno = EINVAL;
		goto out;
	}
	if (sb->st_size > LOGIN_FILE_MAX) {
		errno = EFBIG;
		goto out;
	}
	if ((buf = malloc((size_t)sb->st_size + 1)) == NULL)
		goto out;
	while (got <= (size_t)sb->st_size &&
	    (k = read(fd, buf + got, (size_t)sb->st_size + 1 - got)) > 0)
		got += (size_t)k;
	if (got > (size_t)sb->st_size) {
		errno = EFBIG;		/* it grew while read */
		goto out;
	}
	*data = buf;
	*len = got;
	buf = NULL;
	r = 0;
 out:
	saved = errno;
	close(fd);
	free(buf);
	errno = saved;
	return r;
}

/*
 * Writes `len` bytes as `rel` below `base`: a new file beside it (O_EXCL,
 * O_NOFOLLOW, 0600, uid:gid's with `chown`), renamed over it, so that a
 * link there is replaced, never followed.  0, or -1 and errno.
 */
static int
login_write(int base, const char *rel, const char *data, size_t len,
    int create, int chown, uid_t uid, gid_t gid)
{
	static unsigned int seq;
	const char *leaf;
	char tmp[NAME_MAX + 1];
	size_t done = 0;
	ssize_t k;
	int dfd, fd = -1, r = -1, saved;

	if ((dfd = login_parent(base, rel, create, uid, gid, &leaf)) == -1)
		return -1;
	if ((size_t)snprintf(tmp, sizeof(tmp), ".%s.intutic-%ld-%u", leaf,
	    (long)getpid(), seq++) >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		goto out;
	}
	if ((fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) == -1)
		goto out;
	while (done < len && (k = write(fd, data + done, len - done)) > 0)
		done += (size_t)k;
	if (done < len || fsync(fd) != 0 ||
	    (chown && fchown(fd, uid, gid) != 0) || close(fd) != 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (renameat(dfd, tmp, dfd, leaf) != 0)
		goto fail;
	r = 0;
	goto out;
 fail:
	saved = errno;
	if (fd != -1)
		close(fd);
	fd = -1;
	unlinkat(dfd, tmp, 0);
	errno = saved;
 out:
	saved = errno;
	if (fd != -1)
		close(fd);
	close(dfd);
	errno = saved;
	return r;
}

/* Why login_read() failed, for people. */
static const char *
login_why(int e)
{
	if (e == ELOOP)
		return "a symbolic link (not followed)";
	if (e == EINVAL)
		return "not a regular file";
	if (e == EFBIG)
		return "larger than 1 MiB";
	return strerror(e);
}

static int
login_rm_cb(const char *path, const struct stat *sb, int flag,
    struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

static void
login_free(struct login *l)
{
	size_t i;

	if (l == NULL)
		return;
	if (l->dir[0] != '\0')
		nftw(l->dir, login_rm_cb, LOGIN_NFTW_FDS, FTW_DEPTH | FTW_PHYS);
	for (i = 0; i < l->n; i++) {
		if (l->f[i].data != NULL)
			explicit_bzero(l->f[i].data, l->f[i].len);
		free(l->f[i].data);
	}
	free(l);
}

int
login_stage(const char *const *agents, size_t n, uid_t uid, gid_t gid,
    struct login **out)
{
	const char *home = getenv("HOME"), *tmpdir = getenv("TMPDIR");
	struct login *l;
	struct login_file *f;
	size_t i, j, k, used = 0;
	int hfd = -1, sfd = -1, r = -1, x;

	*out = NULL;
	if (home == NULL || home[0] != '/') {
		error("--sandbox-login: HOME is not set to an absolute path; "
		    "set it to the home that holds the agent's login");
		return -1;
	}
	if ((l = calloc(1, sizeof(*l))) == NULL) {
		error("out of memory");
		return -1;
	}
	if (tmpdir == NULL || tmpdir[0] != '/')
		tmpdir = "/tmp";
	snprintf(l->dir, sizeof(l->dir), "%s/intutic-login-XXXXXX", tmpdir);
	if (mkdtemp(l->dir) == NULL) {
		error("--sandbox-login: cannot make a directory in '%s': %s; "
		    "set TMPDIR to a writable one", tmpdir, strerror(errno));
		l->dir[0] = '\0';
		goto out;
	}
	snprintf(l->home, sizeof(l->home), "%s/home", l->dir);
	if (mkdir(l->home, 0700) != 0 || chown(l->home, uid, gid) != 0) {
		error("--sandbox-login: cannot hand '%s' to uid %u: %s; run "
		    "with a writable --sandbox-mount (the agent is then you)",
		    l->home, (unsigned int)uid, strerror(errno));
		goto out;
	}
	if ((hfd = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    (sfd = open(l->home, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		error("--sandbox-login: cannot open '%s': %s", hfd == -1 ?
		    home : l->home, strerror(errno));
		goto out;
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < NELEM(login_agents); j++)
			if (strcmp(agents[i], login_agents[j].name) == 0)
				break;
		if (j == NELEM(login_agents))
			continue;	/* checked by the caller */
		for (k = 0; login_agents[j].files[k] != NULL; k++) {
			if (l->n == LOGIN_FILES_MAX)
				break;
			f = &l->f[l->n];
			f->rel = login_agents[j].files[k];
			for (x = 0; (size_t)x < l->n; x++)
				if (strcmp(l->f[x].rel, f->rel) == 0)
					break;
			if ((size_t)x < l->n)
				continue;	/* named twice */
			x = login_read(hfd, f->rel, &f->data, &f->len, &f->sb);
			if (x == 1) {
				warn_msg("--sandbox-login %s: no %s/%s; not "
				    "copied (log in on the host first)",
				    agents[i], home, f->rel);
				continue;
			}
			if (x != 0) {
				error("--sandbox-login %s: %s/%s is %s; make "
				    "it a regular file, or leave out "
				    "--sandbox-login %s", agents[i], home,
				    f->rel, login_why(errno), agents[i]);
				goto out;
			}
			l->n++;
			if (login_write(sfd, f->rel, f->data, f->len, 1, 1,
			    uid, gid) != 0) {
				error("--sandbox-login: cannot copy %s/%s to "
				    "'%s': %s", home, f->rel, l->home,
				    strerror(errno));
				goto out;
			}
			used += (size_t)snprintf(l->list + used,
			    sizeof(l->list) - used, "%s%s", used == 0 ? "" :
			    " ", f->rel);
		}
	}
	r = 0;
	if (l->n > 0) {
		*out = l;
		l = NULL;
	}
 out:
	if (hfd != -1)
		close(hfd);
	if (sfd != -1)
		close(sfd);
	login_free(l);
	return r;
}

const char *
login_dir(const struct login *l)
{
	return l->home;
}

const char *
login_list(const struct login *l)
{
	return l->list;
}

void
login_finish(struct login *l)
{
	const char *home = getenv("HOME"), *leaf;
	struct login_file *f;
	struct stat now, sb;
	char *data;
	size_t i, len;
	int hfd, sfd, dfd, x;

	if (l == NULL)
		return;
	hfd = home != NULL ? open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC) :
	    -1;
	sfd = open(l->home, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	for (i = 0; hfd != -1 && sfd != -1 && i < l->n; i++) {
		f = &l->f[i];
		if ((x = login_read(sfd, f->rel, &data, &len, &sb)) != 0) {
			if (x == -1)
				error("--sandbox-login: the sandbox's %s is "
				    "%s: not copied back; %s/%s is as it was",
				    f->rel, login_why(errno), home, f->rel);
			continue;
		}
		if (len == f->len && memcmp(data, f->data, len) == 0) {
			free(data);
			continue;
		}
		/* Changed in the sandbox: and on the host meanwhile? */
		x = -1;
		if ((dfd = login_parent(hfd, f->rel, 0, 0, 0, &leaf)) != -1) {
			x = fstatat(dfd, leaf, &now, AT_SYMLINK_NOFOLLOW);
			close(dfd);
		}
		if (x != 0 || !S_ISREG(now.st_mode) ||
		    now.st_ino != f->sb.st_ino || now.st_dev != f->sb.st_dev ||
		    now.st_size != f->sb.st_size ||
		    now.st_mtim.tv_sec != f->sb.st_mtim.tv_sec ||
		    now.st_mtim.tv_nsec != f->sb.st_mtim.tv_nsec)
			error("--sandbox-login: %s/%s changed on the host "
			    "during the run: the sandbox's newer copy is not "
			    "written over it (log in again if it no longer "
			    "works)", home, f->rel);
		else if (login_write(hfd, f->rel, data, len, 0, 0, 0, 0) != 0)
			error("--sandbox-login: cannot write %s/%s: %s; the "
			    "sandbox's newer copy is lost (log in again if the "
			    "old one no longer works)", home, f->rel,
			    strerror(errno));
		explicit_bzero(data, len);
		free(data);
	}
	if (hfd != -1)
		close(hfd);
	if (sfd != -1)
		close(sfd);
	login_free(l);
}
