/*
 * oci-fail.c — a container runtime's failures read from its output (see
 * oci-fail.h).  The patterns are the messages podman 4, runc, crun and
 * docker print for each cause; a cause is matched on any of its.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "oci-fail.h"

static const struct {
	enum oci_fail	 cause;
	const char	*name;
	const char	*pat[6];	/* NULL-terminated */
} oci_fail_table[] = {
	{ OCI_FAIL_RLIMIT, "rlimit", {
		"error setting rlimit type",	/* runc */
		"setrlimit `RLIMIT_",		/* crun */
		NULL } },
	{ OCI_FAIL_ROOTLESS_NET, "rootless-network", {
		"\"slirp4netns\": executable file not found",
		"\"pasta\": executable file not found",
		"could not find slirp4netns",
		"could not find pasta",
		NULL } },
	{ OCI_FAIL_TUN, "tun", {
		/* slirp4netns's, as podman quotes it, and as it says it */
		"open(\\\"/dev/net/tun\\\"): Permission denied",
		"open(\"/dev/net/tun\"): Permission denied",
		NULL } },
	{ OCI_FAIL_NO_IMAGE, "no-image", {
		": image not known",		/* podman --pull=never */
		"Unable to find image",		/* docker */
		"No such image",
		NULL } },
	{ OCI_FAIL_NO_ADDR, "no-address", {
		"IPAM error",			/* netavark, CNI */
		"failed to allocate for range",
		"is not in any subnet",
		"no available IPv4 addresses",	/* docker */
		"no configured subnet or ip range contain",
		NULL } },
};

enum oci_fail
oci_fail_classify(const char *text)
{
	size_t i, j;

	for (i = 0; i < sizeof(oci_fail_table) / sizeof(oci_fail_table[0]);
	    i++)
		for (j = 0; oci_fail_table[i].pat[j] != NULL; j++)
			if (strstr(text, oci_fail_table[i].pat[j]) != NULL)
				return oci_fail_table[i].cause;
	return OCI_FAIL_UNKNOWN;
}

const char *
oci_fail_name(enum oci_fail f)
{
	size_t i;

	for (i = 0; i < sizeof(oci_fail_table) / sizeof(oci_fail_table[0]);
	    i++)
		if (oci_fail_table[i].cause == f)
			return oci_fail_table[i].name;
	return "unknown";
}

int
oci_fail_pull(const char *text)
{
	static const char *const pat[] = {
		"initializing source",		/* podman: any registry error */
		"pinging container registry",
		"requested access to the resource is denied",
		"manifest unknown",
		"short-name resolution enforced",
		"short-name \"",
		"pull access denied",		/* docker */
		"failed to resolve source metadata",
		"error pulling image",
		"Error response from daemon: Get \"https://",
	};
	size_t i;

	for (i = 0; i < sizeof(pat) / sizeof(pat[0]); i++)
		if (strstr(text, pat[i]) != NULL)
			return 1;
	return 0;
}

/* "N/M" at *p: 0 with both and p past them, or -1. */
static int
oci_fail_fraction(const char **p, unsigned int *n, unsigned int *m)
{
	unsigned long a, b;
	char *end;

	if (!isdigit((unsigned char)**p))
		return -1;
	errno = 0;
	a = strtoul(*p, &end, 10);
	if (errno != 0 || *end != '/' || a == 0 || a > 9999 ||
	    !isdigit((unsigned char)end[1]))
		return -1;
	b = strtoul(end + 1, &end, 10);
	if (errno != 0 || b < a || b > 9999)
		return -1;
	*n = (unsigned int)a;
	*m = (unsigned int)b;
	*p = end;
	return 0;
}

int
oci_fail_step(const char *line, unsigned int *n, unsigned int *m,
    const char **text)
{
	const char *p;
	unsigned int a, b;

	if (strncmp(line, "STEP ", 5) == 0) {
		p = line + 5;
		if (oci_fail_fraction(&p, &a, &b) != 0 || strncmp(p, ": ", 2) != 0)
			return 0;
		p += 2;
	} else if (strncmp(line, "Step ", 5) == 0) {
		p = line + 5;
		if (oci_fail_fraction(&p, &a, &b) != 0 ||
		    strncmp(p, " : ", 3) != 0)
			return 0;
		p += 3;
	} else
		return 0;
	*n = a;
	*m = b;
	*text = p;
	return 1;
}
