/*
 * oci-cache.h — what `intutic exec --sandbox` learnt from the container
 * runtime on an earlier run, kept so that a run does not ask again: each
 * question is a run of docker or podman, which costs 0.15 to 0.2 s of its
 * start-up (scripts/bench sandbox).
 *
 * The file: $XDG_CACHE_HOME/intutic/oci-RUNTIME (else
 * ~/.cache/intutic/oci-RUNTIME), this user's alone (read only when it is a
 * regular file, owned by this user and writable by no one else), mode
 * 0600, written whole (a temporary file renamed over it).  Lines:
 *
 *	key KEY
 *	bridge GATEWAY [SUBNET/PREFIX]
 *	image NAME
 *
 * KEY says what the answers depend on: the runtime's path, size and
 * modification time, CONTAINERS_CONF (and DOCKER_HOST) as set, and the
 * modification times of the configuration files and directories that
 * define the default network (containers.conf, /etc/cni/net.d,
 * /etc/containers/networks, docker's daemon.json).  Another KEY: nothing
 * is believed.  A belief that turns out wrong fails closed: an image the
 * runtime no longer has makes `run` fail ("image not known"), and the
 * launcher builds it and runs again; a bridge that moved gives the
 * container a table that reaches nothing.
 */
#ifndef INTUTIC_OCI_CACHE_H
#define INTUTIC_OCI_CACHE_H

#include <stddef.h>

#define OCI_CACHE_KEY_MAX	1024	/* bytes of KEY */
#define OCI_CACHE_IMAGES	8	/* image lines kept */
#define OCI_CACHE_LINE_MAX	512	/* bytes of a line */

struct oci_cache {
	char	 key[OCI_CACHE_KEY_MAX];
	char	 bridge[OCI_CACHE_LINE_MAX];	/* "GATEWAY [SUBNET/PREFIX]" */
	char	 image[OCI_CACHE_IMAGES][OCI_CACHE_LINE_MAX];
	size_t	 nimage;
};

/*
 * The cache of runtime `name` (at path rt) for this user, when its key is
 * this host's now: 0 with *k filled (k->key always set); -1 when there is
 * none to believe (k->key set, the rest empty).
 */
int	 oci_cache_load(const char *name, const char *rt, struct oci_cache *k);

/* Writes *k (its key as loaded); -1 when it cannot (nothing is said). */
int	 oci_cache_save(const char *name, const struct oci_cache *k);

/* Whether image is one the cache says the runtime has. */
int	 oci_cache_has_image(const struct oci_cache *k, const char *image);

/* Records image as one the runtime has (the oldest dropped when full). */
void	 oci_cache_add_image(struct oci_cache *k, const char *image);

/* Forgets image. */
void	 oci_cache_drop_image(struct oci_cache *k, const char *image);

#endif /* INTUTIC_OCI_CACHE_H */
