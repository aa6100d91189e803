/*
 * test-oci-fail.c — a container runtime's failures read from what it
 * said (sandbox/oci-fail.c): the messages podman 4, runc, crun, netavark,
 * CNI and docker print for each cause the launcher knows a fix for, as
 * recorded from them, one cause each; what it does not know stays unknown.
 * An image build's pull failures and its STEP lines.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "oci-fail.h"
#include "tap.h"

static const struct {
	const char	*text;
	enum oci_fail	 want;
} runs[] = {
	{ "Error: OCI runtime error: runc: runc create failed: unable to start "
	    "container process: error during container init: error setting "
	    "rlimit type 7: operation not permitted\n", OCI_FAIL_RLIMIT },
	{ "Error: OCI runtime error: crun: setrlimit `RLIMIT_NOFILE`: "
	    "Operation not permitted\n", OCI_FAIL_RLIMIT },
	{ "Error: could not find slirp4netns, the network namespace can't be "
	    "configured: exec: \"slirp4netns\": executable file not found in "
	    "$PATH\n", OCI_FAIL_ROOTLESS_NET },
	{ "Error: setting up Pasta: could not find pasta, the network "
	    "namespace can't be configured: exec: \"pasta\": executable file "
	    "not found in $PATH\n", OCI_FAIL_ROOTLESS_NET },
	{ "Error: /usr/bin/slirp4netns failed: \"open(\\\"/dev/net/tun\\\"): "
	    "Permission denied\\nWARNING: Support for seccomp is experimental"
	    "\\nchild failed(1)\\n\"\n", OCI_FAIL_TUN },
	{ "Error: localhost/intutic/sandbox:0.1.0: image not known\n",
	    OCI_FAIL_NO_IMAGE },
	{ "Unable to find image 'intutic/sandbox:0.1.0' locally\n"
	    "docker: Error response from daemon: No such image: "
	    "intutic/sandbox:0.1.0.\n", OCI_FAIL_NO_IMAGE },
	{ "Error: netavark: IPAM error: failed to find free IP in range: "
	    "10.88.0.1 - 10.88.255.254\n", OCI_FAIL_NO_ADDR },
	{ "Error: plugin type=\"bridge\" failed (add): failed to allocate for "
	    "range 0: no IP addresses available in range set: "
	    "10.88.0.1-10.88.255.254\n", OCI_FAIL_NO_ADDR },
	{ "docker: Error response from daemon: no available IPv4 addresses on "
	    "this network's address pools: bridge.\n", OCI_FAIL_NO_ADDR },
	{ "Error: crun: executable file `nosuch` not found in $PATH: No such "
	    "file or directory: OCI runtime attempted to invoke a command that "
	    "was not found\n", OCI_FAIL_UNKNOWN },
	{ "Error: short-name \"foo\" did not resolve to an alias\n",
	    OCI_FAIL_UNKNOWN },
	{ "", OCI_FAIL_UNKNOWN },
	/* the agent's own output before a cause: the cause still found */
	{ "npm WARN something\nError: OCI runtime error: runc: error setting "
	    "rlimit type 7: operation not permitted\n", OCI_FAIL_RLIMIT },
};

static const struct {
	const char	*text;
	int		 want;
} pulls[] = {
	{ "Error: creating build container: initializing source "
	    "docker://alpine:3.20: pinging container registry "
	    "registry-1.docker.io: Get \"https://registry-1.docker.io/v2/\": "
	    "dial tcp: lookup registry-1.docker.io: no such host\n", 1 },
	{ "Error: creating build container: initializing source "
	    "docker://localhost/none:1: pinging container registry localhost: "
	    "Get \"https://localhost/v2/\": dial tcp 127.0.0.1:443: connect: "
	    "connection refused\n", 1 },
	{ "ERROR: failed to solve: alpine:3.20: failed to resolve source "
	    "metadata for docker.io/library/alpine:3.20\n", 1 },
	{ "Error: building at STEP \"RUN false\": while running runtime: exit "
	    "status 1\n", 0 },
};

static const struct {
	const char	*line;
	int		 ok;
	unsigned int	 n, m;
	const char	*text;
} steps[] = {
	{ "STEP 2/5: RUN echo one", 1, 2, 5, "RUN echo one" },
	{ "STEP 1/1: FROM localhost/base:1", 1, 1, 1, "FROM localhost/base:1" },
	{ "Step 3/7 : COPY entrypoint.sh /x", 1, 3, 7, "COPY entrypoint.sh /x" },
	{ "STEP 0/1: RUN x", 0, 0, 0, NULL },
	{ "STEP 3/2: RUN x", 0, 0, 0, NULL },
	{ "STEP 2/5 RUN x", 0, 0, 0, NULL },
	{ "Step 2/5: RUN x", 0, 0, 0, NULL },
	{ "STEPS 2/5: RUN x", 0, 0, 0, NULL },
	{ "#5 [2/3] RUN x", 0, 0, 0, NULL },
	{ "STEP /5: RUN x", 0, 0, 0, NULL },
	{ "STEP 2/: RUN x", 0, 0, 0, NULL },
	{ "STEP 99999/99999: RUN x", 0, 0, 0, NULL },
	{ "", 0, 0, 0, NULL },
};

int
main(void)
{
	const char *text;
	unsigned int n, m;
	size_t i;
	int ok;

	for (i = 0; i < sizeof(runs) / sizeof(runs[0]); i++)
		tap_is_str(oci_fail_name(oci_fail_classify(runs[i].text)),
		    oci_fail_name(runs[i].want), "run failure %zu is %s", i,
		    oci_fail_name(runs[i].want));
	for (i = 0; i < sizeof(pulls) / sizeof(pulls[0]); i++)
		tap_is_int(oci_fail_pull(pulls[i].text), pulls[i].want,
		    "build output %zu %s a pull failure", i,
		    pulls[i].want ? "is" : "is not");
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		n = m = 77;
		text = NULL;
		ok = oci_fail_step(steps[i].line, &n, &m, &text);
		if (steps[i].ok)
			tap_ok(ok == 1 && n == steps[i].n && m == steps[i].m &&
			    text != NULL && strcmp(text, steps[i].text) == 0,
			    "'%s': step %u/%u, '%s'", steps[i].line, steps[i].n,
			    steps[i].m, steps[i].text);
		else
			tap_ok(ok == 0 && n == 77 && m == 77 && text == NULL,
			    "'%s' is no step line (out-parameters untouched)",
			    steps[i].line);
	}
	return tap_done();
}
