/*
 * oci-cache.c — what the container runtime answered on an earlier run
 * (oci-cache.h).
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oci-cache.h"
#include "paths.h"

#define OCI_CACHE_FILE_MAX	(16 * 1024)	/* bytes of the file read */

/* What the default network and the runtime's answers depend on. */
static const char *const oci_cache_deps[] = {
	"/etc/containers/containers.conf",
	"/etc/containers/containers.conf.d",
	"/usr/share/containers/containers.conf",
	"/etc/cni/net.d",
	"/etc/containers/networks",
	"/etc/docker/daemon.json",
};

/* Appends " TAG=SIZE:SECONDS.NANOSECONDS" (or "TAG=-") of path to key. */
static void
oci_cache_stamp(char *key, size_t len, const char *tag, const char *path)
{
	struct stat sb;
	size_t have = strlen(key);

	if (have >= len)
		return;
	if (path == NULL || stat(path, &sb) != 0)
		snprintf(key + have, len - have, " %s=-", tag);
	else
		snprintf(key + have, len - have, " %s=%lld:%lld.%09ld", tag,
		    (long long)sb.st_size, (long long)sb.st_mtim.tv_sec,
		    sb.st_mtim.tv_nsec);
}

static void
oci_cache_key(const char *rt, char *key, size_t len)
{
	char user[PATH_MAX];
	const char *v, *home = getenv("HOME");
	size_t i;

	snprintf(key, len, "uid=%u rt=%s", (unsigned int)getuid(), rt);
	oci_cache_stamp(key, len, "rtstat", rt);
	if ((v = getenv("CONTAINERS_CONF")) != NULL && *v != '\0') {
		snprintf(key + strlen(key), len - strlen(key), " conf=%s", v);
		oci_cache_stamp(key, len, "confstat", v);
	}
	if ((v = getenv("DOCKER_HOST")) != NULL && *v != '\0')
		snprintf(key + strlen(key), len - strlen(key), " docker=%s", v);
	for (i = 0; i < sizeof(oci_cache_deps) / sizeof(oci_cache_deps[0]);
	    i++)
		oci_cache_stamp(key, len, oci_cache_deps[i],
		    oci_cache_deps[i]);
	if (home != NULL && *home == '/' && snprintf(user, sizeof(user),
	    "%s/.config/containers/containers.conf", home) <
	    (int)sizeof(user))
		oci_cache_stamp(key, len, "userconf", user);
	/* Spaces and controls out of the environment's values: one line. */
	for (i = 0; key[i] != '\0'; i++)
		if ((unsigned char)key[i] < 0x20 || key[i] == 0x7f)
			key[i] = '?';
}

static int
oci_cache_path(const char *name, char *dir, size_t dirlen, char *path,
    size_t pathlen)
{
	if (paths_cache_dir(dir, dirlen) != 0 ||
	    snprintf(path, pathlen, "%s/oci-%s", dir, name) >= (int)pathlen)
		return -1;
	return 0;
}

/* The file's text, when it is this user's alone; NULL otherwise. */
static char *
oci_cache_read(const char *path)
{
	struct stat sb;
	char *buf;
	ssize_t n;
	size_t have = 0;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY |
	    O_NONBLOCK)) == -1)
		return NULL;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
	    sb.st_uid != getuid() || (sb.st_mode & 022) != 0 ||
	    (buf = malloc(OCI_CACHE_FILE_MAX + 1)) == NULL) {
		close(fd);
		return NULL;
	}
	while (have < OCI_CACHE_FILE_MAX && (n = read(fd, buf + have,
	    OCI_CACHE_FILE_MAX - have)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		have += (size_t)n;
	}
	close(fd);
	buf[have] = '\0';
	return buf;
}

int
oci_cache_load(const char *name, const char *rt, struct oci_cache *k)
{
	char dir[PATH_MAX], path[PATH_MAX], *buf, *line, *next;
	int keyed = 0;

	memset(k, 0, sizeof(*k));
	oci_cache_key(rt, k->key, sizeof(k->key));
	if (oci_cache_path(name, dir, sizeof(dir), path, sizeof(path)) != 0 ||
	    (buf = oci_cache_read(path)) == NULL)
		return -1;
	for (line = buf; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if (strlen(line) >= OCI_CACHE_LINE_MAX)
			continue;
		if (strncmp(line, "key ", 4) == 0)
			keyed = strcmp(line + 4, k->key) == 0;
		else if (!keyed)
			continue;
		else if (strncmp(line, "bridge ", 7) == 0)
			snprintf(k->bridge, sizeof(k->bridge), "%s", line + 7);
		else if (strncmp(line, "image ", 6) == 0 && line[6] != '\0')
			oci_cache_add_image(k, line + 6);
	}
	free(buf);
	if (!keyed) {
		k->bridge[0] = '\0';
		k->nimage = 0;
		return -1;
	}
	return 0;
}

int
oci_cache_save(const char *name, const struct oci_cache *k)
{
	char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX + 16];
	FILE *f;
	size_t i;
	int fd, bad;

	if (oci_cache_path(name, dir, sizeof(dir), path, sizeof(path)) != 0 ||
	    paths_mkdirs(dir) != 0 ||
	    snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp) ||
	    (fd = mkostemp(tmp, O_CLOEXEC)) == -1)
		return -1;
	if (fchmod(fd, 0600) != 0 || (f = fdopen(fd, "w")) == NULL) {
		close(fd);
		unlink(tmp);
		return -1;
	}
	fprintf(f, "key %s\n", k->key);
	if (k->bridge[0] != '\0')
		fprintf(f, "bridge %s\n", k->bridge);
	for (i = 0; i < k->nimage; i++)
		fprintf(f, "image %s\n", k->image[i]);
	bad = ferror(f);
	if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

int
oci_cache_has_image(const struct oci_cache *k, const char *image)
{
	size_t i;

	for (i = 0; i < k->nimage; i++)
		if (strcmp(k->image[i], image) == 0)
			return 1;
	return 0;
}

void
oci_cache_add_image(struct oci_cache *k, const char *image)
{
	if (oci_cache_has_image(k, image) ||
	    strlen(image) >= sizeof(k->image[0]) ||
	    strpbrk(image, " \n") != NULL)
		return;
	if (k->nimage == OCI_CACHE_IMAGES) {
		memmove(k->image[0], k->image[1], sizeof(k->image[0]) *
		    (OCI_CACHE_IMAGES - 1));
		k->nimage--;
	}
	snprintf(k->image[k->nimage++], sizeof(k->image[0]), "%s", image);
}

void
oci_cache_drop_image(struct oci_cache *k, const char *image)
{
	size_t i;

	for (i = 0; i < k->nimage; i++)
		if (strcmp(k->image[i], image) == 0) {
			memmove(k->image[i], k->image[i + 1],
			    sizeof(k->image[0]) * (k->nimage - i - 1));
			k->nimage--;
			return;
		}
}
