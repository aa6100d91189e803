/*
 * oci-fail.h — what a container runtime's failure was, read from what it
 * said: the causes intutic knows a fix for, and the lines of an image
 * build's output.  Pure functions of their text: nothing is run, logged
 * or allocated.
 */
#ifndef INTUTIC_OCI_FAIL_H
#define INTUTIC_OCI_FAIL_H

#include <stddef.h>

/* A known cause of `RUNTIME run` failing.  The zero value: none known. */
enum oci_fail {
	OCI_FAIL_UNKNOWN = 0,
	OCI_FAIL_RLIMIT,	/* runc cannot set a ulimit (hybrid/v1 cgroups) */
	OCI_FAIL_ROOTLESS_NET,	/* slirp4netns or pasta missing */
	OCI_FAIL_TUN,		/* rootless networking cannot open the tun */
	OCI_FAIL_NO_IMAGE,	/* the image is not in local storage */
	OCI_FAIL_NO_ADDR,	/* the bridge gave the container no address */
};

/*
 * The cause named in `text` (the runtime's stderr, NUL-terminated), the
 * first of the list above that matches; OCI_FAIL_UNKNOWN when none does.
 */
enum oci_fail	 oci_fail_classify(const char *text);

/*
 * Its name ("rlimit", "rootless-network", "no-image", "no-address",
 * "unknown"), a static string.
 */
const char	*oci_fail_name(enum oci_fail);

/*
 * Whether an image build's output says its base could not be pulled (the
 * registry unreachable, the name unknown to it): 1 or 0.
 */
int		 oci_fail_pull(const char *text);

/*
 * A build's output line "STEP N/M: TEXT" (podman, buildah) or
 * "Step N/M : TEXT" (docker's classic builder): 1 with N, M and a pointer
 * to TEXT in line; 0 (the out-parameters untouched) for any other line.
 */
int		 oci_fail_step(const char *line, unsigned int *n, unsigned int *m,
		    const char **text);

#endif /* INTUTIC_OCI_FAIL_H */
