/*
 * service.c — readiness for systemd and --user (see service.h).
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "paths.h"
#include "service.h"

int
service_notify(const char *state)
{
	struct sockaddr_un sa;
	const char *path = getenv("NOTIFY_SOCKET");
	size_t plen, len = strlen(state);
	socklen_t salen;
	ssize_t n;
	int fd, saved;

	if (path == NULL || *path == '\0')
		return 0;
	plen = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || plen >= sizeof(sa.sun_path) ||
	    len > SERVICE_NOTIFY_MAX) {
		errno = EINVAL;
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, plen);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';	/* an abstract name */
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen +
	    (path[0] == '/' ? 1 : 0));
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	n = sendto(fd, state, len, MSG_NOSIGNAL, (struct sockaddr *)&sa, salen);
	saved = errno;
	close(fd);
	if (n != (ssize_t)len) {
		errno = n == -1 ? saved : EMSGSIZE;
		return -1;
	}
	return 1;
}

/* The state directory, for uid: made (owned by it) when missing. */
static int
service_state_dir(const char *dir, uid_t uid, gid_t gid, char *err,
    size_t errlen)
{
	char parent[PATH_MAX], *slash;
	struct stat st;

	if (stat(dir, &st) == 0)
		return 0;
	if (errno != ENOENT)
		goto fail;
	if (snprintf(parent, sizeof(parent), "%s", dir) >= (int)sizeof(parent)) {
		errno = ENAMETOOLONG;
		goto fail;
	}
	if ((slash = strrchr(parent, '/')) != NULL && slash != parent) {
		*slash = '\0';
		if (paths_mkdirs(parent) != 0)
			goto fail;
	}
	if (mkdir(dir, 0755) == -1 || chown(dir, uid, gid) == -1)
		goto fail;
	return 0;
 fail:
	snprintf(err, errlen, "cannot make the state directory '%s': %s (make "
	    "it, owned by the --user, or choose another with --state-dir)",
	    dir, strerror(errno));
	return -1;
}

int
service_drop_user(const char *name, const char *state_dir, char *err,
    size_t errlen)
{
	struct passwd *pw;
	uid_t uid;
	gid_t gid;

	errno = 0;
	if ((pw = getpwnam(name)) == NULL) {
		snprintf(err, errlen, "--user: no user '%s'%s%s (create one "
		    "for the proxy: adduser --system --group %s)", name,
		    errno != 0 ? ": " : "", errno != 0 ? strerror(errno) : "",
		    name);
		return -1;
	}
	uid = pw->pw_uid;
	gid = pw->pw_gid;
	if (uid == 0) {
		snprintf(err, errlen, "--user: '%s' is root: give a user of the "
		    "proxy's own (adduser --system --group intutic)", name);
		return -1;
	}
	if (geteuid() == uid && getuid() == uid) {
		/* already NAME: nothing to leave */
	} else if (geteuid() != 0) {
		snprintf(err, errlen, "--user %s: only root can change to "
		    "another user: start the proxy as root, or without --user",
		    name);
		return -1;
	} else {
		if (service_state_dir(state_dir, uid, gid, err, errlen) != 0)
			return -1;
		if (initgroups(name, gid) == -1 || setgid(gid) == -1 ||
		    setuid(uid) == -1) {
			snprintf(err, errlen, "--user %s: cannot change to it: "
			    "%s", name, strerror(errno));
			return -1;
		}
		if (setuid(0) != -1 || setgid(0) != -1) {
			snprintf(err, errlen, "--user %s: root could be taken "
			    "back after the change: not running like that",
			    name);
			return -1;
		}
		/* As under systemd's User=: /proc/PID readable by its user. */
		(void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	}
	/* A missing one is made by the proxy, as NAME, when it writes it. */
	if (access(state_dir, W_OK | X_OK) == -1 && errno != ENOENT) {
		snprintf(err, errlen, "--user %s: it cannot write the state "
		    "directory '%s': %s (chown it to %s, or choose another with "
		    "--state-dir)", name, state_dir, strerror(errno), name);
		return -1;
	}
	return 0;
}
