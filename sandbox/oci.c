/*
 * sandbox/oci.c — intutic exec --sandbox=oci: the command in a container
 * (docker or podman) whose only way out is the proxy.
 *
 * The envelope: every capability dropped but the five the image's
 * entrypoint needs to install its nftables table, hand the home over to
 * the sandbox user and then drop them all (NET_ADMIN, SETUID, SETGID,
 * SETPCAP, CHOWN), no new privileges, intutic's seccomp profile
 * (sandbox/seccomp.json: no namespaces, no socket families beyond unix,
 * inet, inet6 and netlink), a read-only root with tmpfs /tmp, /run and the
 * sandbox home, limits on pids, memory and CPUs, an init, no DNS (and a
 * resolv.conf of intutic's that says so, over the image's), nothing of
 * the host mounted unless --sandbox-mount says so, and the environment
 * by name only: `-e NAME` on the runtime's command line, the value in its
 * environment.  The proxy is reached on the bridge's gateway address, as
 * host.docker.internal.  Under podman the container gets an address of
 * the bridge's picked here (--ip), told to the proxy first: every
 * connection from there is the run's (docker's default bridge takes no
 * --ip: there the run's credentials alone say whose requests are whose).
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/random.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argv.h"
#include "backend.h"
#include "hostfw.h"
#include "intutic.h"
#include "log.h"
#include "login.h"
#include "oci-cache.h"
#include "oci-fail.h"
#include "spawn.h"

#define OCI_INFO_MS		10000	/* `RUNTIME info` */
#define OCI_QUERY_MS		30000	/* inspect, image exists */
#define OCI_IMAGE_NAME		"intutic/sandbox"
#define OCI_DEFAULT_MEMORY	"4g"
#define OCI_DEFAULT_CPUS	"2"
#define OCI_DEFAULT_PIDS	"512"
#define OCI_HOST_NAME		"host.docker.internal"
#define OCI_UNSHARE		"/usr/bin/unshare"	/* util-linux */
#define OCI_SANDBOX_HOME	"/sandbox/home"
#define OCI_ENTRYPOINT		"/usr/local/bin/intutic-entrypoint"
#define OCI_SECCOMP		"seccomp.json"	/* in the sandbox directory */
#define OCI_RESOLV_CONF		"resolv.conf"	/* ditto */
#define OCI_CONNECT_FILE	"connect.sh"	/* ditto: at SANDBOX_CONNECT */
#define OCI_ADDR_TRIES		8	/* addresses tried for a container */
#define OCI_BUILD_OUT_MAX	(256 * 1024)	/* a build's output kept */
#define OCI_STEP_SHOWN		72	/* bytes of a step on its line */
#define OCI_LEFT_MAX		64	/* containers a killed build left */
#define OCI_LIST_MAX		(16 * 1024)	/* `podman ps --external` */
#define OCI_RUN_TAIL		8192	/* bytes of `RUNTIME run`'s stderr read */
#define OCI_CONTAINERS_CONF	"containers.conf"	/* in the sandbox dir */
#define OCI_MKBASE		"mkbase"	/* in the sandbox dir */
#define OCI_BASE_NAME		"localhost/intutic-base:bookworm"
/* slirp4netns: the host's 127.0.0.1 as a rootless container reaches it */
#define OCI_ROOTLESS_GATEWAY	"10.0.2.2"
#define OCI_ROOTLESS_NETWORK	"--network=slirp4netns:allow_host_loopback=true"

extern char **environ;

struct oci {
	char	 rt[PATH_MAX];		/* the runtime's path */
	char	 name[16];		/* docker | podman */
	char	 gateway[64];		/* the bridge's address */
	struct in_addr net;		/* and its IPv4 subnet */
	unsigned int prefix;		/* 0: not known */
	char	 addr[INET_ADDRSTRLEN];	/* the container's; "": none */
	/* podman: the proxy's transparent listener and DNS filter, A:P */
	char	 transparent[96];
	char	 dns[96];
	char	 image[256];
	/*
	 * Rootless podman (not root): the container's network is
	 * slirp4netns's, which reaches the host's loopback on
	 * OCI_ROOTLESS_GATEWAY; no bridge, no address of the run's.
	 */
	int	 rootless;
	/* what an earlier run learnt (oci-cache.h); dirty: to be saved */
	struct oci_cache cache;
	int	 dirty;
	int	 image_cached;	/* the image's check skipped for the cache */
};

/* Runs RUNTIME ARGS... quietly; its exit status, or -1. */
static int
oci_query(const struct oci *c, char *out, size_t outlen, int timeout_ms,
    const char *a1, const char *a2, const char *a3, const char *a4,
    const char *a5)
{
	char *argv[8], why[256];
	int st;

	argv[0] = (char *)c->rt;
	argv[1] = (char *)a1;
	argv[2] = (char *)a2;
	argv[3] = (char *)a3;
	argv[4] = (char *)a4;
	argv[5] = (char *)a5;
	argv[6] = NULL;
	if (spawn_run(argv, NULL, 0, timeout_ms, out, outlen, &st, why,
	    sizeof(why)) != 0)
		return -1;
	return st;
}

/* docker or podman, installed and answering; 0, or -1 (said why). */
static int
oci_runtime(const struct exec_opts *o, struct oci *c)
{
	static const char *const order[] = { "docker", "podman" };
	size_t i;

	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (o->runtime != NULL && strcmp(o->runtime, order[i]) != 0)
			continue;
		if (spawn_which(order[i], c->rt, sizeof(c->rt)) != 0)
			continue;
		snprintf(c->name, sizeof(c->name), "%s", order[i]);
		/*
		 * Podman has no daemon to be running: `podman info` would only
		 * cost its 0.8 s; a podman that does not work fails the next
		 * question, which says so.
		 */
		if (strcmp(c->name, "podman") == 0 ||
		    oci_query(c, NULL, 0, OCI_INFO_MS, "info", NULL, NULL, NULL,
		    NULL) == 0) {
			c->rootless = strcmp(c->name, "podman") == 0 &&
			    geteuid() != 0;
			(void)oci_cache_load(c->name, c->rt, &c->cache);
			return 0;
		}
	}
	if (o->runtime != NULL)
		error("%s isn't running (or is not "
		    "installed): start it, then re-run; nothing was run",
		    o->runtime);
	else
		error("Docker isn't running: start it "
		    "(or install podman), then re-run; nothing was run");
	return -1;
}

/*
 * The bridge's "SUBNET,GATEWAY" as the runtime gives it (the subnet may be
 * missing: docker's "<no value>") into c.  0, or -1 with why.
 */
static int
oci_gateway_parse(struct oci *c, const char *text, char *why, size_t whylen)
{
	char out[256], *nl, *comma, *slash;
	unsigned long prefix;

	snprintf(out, sizeof(out), "%s", text);
	if ((nl = strpbrk(out, " \n")) != NULL)
		*nl = '\0';
	c->prefix = 0;
	if ((comma = strchr(out, ',')) != NULL) {
		*comma = '\0';
		if ((slash = strchr(out, '/')) != NULL) {
			*slash = '\0';
			errno = 0;
			prefix = strtoul(slash + 1, &nl, 10);
			if (*nl == '\0' && errno == 0 && prefix >= 8 &&
			    prefix <= 30 && inet_pton(AF_INET, out, &c->net) == 1)
				c->prefix = (unsigned int)prefix;
		}
		memmove(out, comma + 1, strlen(comma + 1) + 1);
	}
	if (out[0] == '\0' || strlen(out) >= sizeof(c->gateway) ||
	    strchr(out, ':') != NULL) {
		snprintf(why, whylen, "%s's bridge network has no IPv4 "
		    "gateway", c->name);
		return -1;
	}
	snprintf(c->gateway, sizeof(c->gateway), "%s", out);
	return 0;
}

/*
 * The address containers reach the host on: the default bridge's gateway;
 * and its IPv4 subnet (an address for the container is picked there).
 */
static int
oci_gateway_read(struct oci *c, char *why, size_t whylen)
{
	char out[256], *nl;
	int st;

	if (strcmp(c->name, "podman") == 0)
		st = oci_query(c, out, sizeof(out), OCI_QUERY_MS, "network",
		    "inspect", "podman", "--format",
		    "{{range .Subnets}}{{.Subnet}},{{.Gateway}} {{end}}");
	else
		st = oci_query(c, out, sizeof(out), OCI_QUERY_MS, "network",
		    "inspect", "bridge", "--format",
		    "{{range .IPAM.Config}}{{.Subnet}},{{.Gateway}} {{end}}");
	if (st != 0) {
		snprintf(why, whylen, "cannot tell the address of %s's bridge "
		    "network (`%s network inspect %s` failed: run it, and `%s "
		    "info`, to see why)", c->name, c->name,
		    strcmp(c->name, "podman") == 0 ? "podman" : "bridge",
		    c->name);
		return -1;
	}
	if ((nl = strpbrk(out, " \n")) != NULL)
		*nl = '\0';
	if (oci_gateway_parse(c, out, why, whylen) != 0)
		return -1;
	snprintf(c->cache.bridge, sizeof(c->cache.bridge), "%s", out);
	c->dirty = 1;
	return 0;
}

/* The bridge: as an earlier run learnt it, else asked. */
static int
oci_gateway(struct oci *c)
{
	char why[256];

	if (c->rootless) {
		snprintf(c->gateway, sizeof(c->gateway), "%s",
		    OCI_ROOTLESS_GATEWAY);
		return 0;
	}
	if (c->cache.bridge[0] != '\0' &&
	    oci_gateway_parse(c, c->cache.bridge, why, sizeof(why)) == 0)
		return 0;
	if (oci_gateway_read(c, why, sizeof(why)) != 0) {
		error("%s; nothing was run", why);
		return -1;
	}
	return 0;
}

int
oci_doctor_bridge(const char *rt, const char *name, char *gateway,
    size_t len, char *why, size_t whylen)
{
	struct oci c;

	memset(&c, 0, sizeof(c));
	snprintf(c.rt, sizeof(c.rt), "%s", rt);
	snprintf(c.name, sizeof(c.name), "%s", name);
	if (oci_gateway_read(&c, why, whylen) != 0)
		return -1;
	snprintf(gateway, len, "%s", c.gateway);
	return 0;
}

/*
 * Podman: an address of the bridge's subnet for the container (neither
 * the subnet's first or last, nor the gateway), taken for the run at the
 * proxy before the container starts; another run's is passed over.  0
 * with c->addr; or -1 (said).  Docker: none (its default bridge takes no
 * --ip), 0.
 */
static int
oci_pick_addr(const struct exec_run *run, struct oci *c)
{
	struct in_addr gw, a;
	uint32_t host, size, pick;
	char why[512];
	int i, r;

	c->addr[0] = '\0';
	if (strcmp(c->name, "podman") != 0 || c->rootless)
		return 0;
	if (c->prefix == 0 || inet_pton(AF_INET, c->gateway, &gw) != 1) {
		error("podman's bridge network has no IPv4 subnet to give the "
		    "container an address in; nothing was run");
		return -1;
	}
	size = UINT32_C(1) << (32 - c->prefix);
	for (i = 0; i < OCI_ADDR_TRIES; i++) {
		if (getrandom(&pick, sizeof(pick), 0) != sizeof(pick)) {
			error("no random bytes: %s", strerror(errno));
			return -1;
		}
		host = 2 + pick % (size - 3);	/* not .0, .1 or the last */
		a.s_addr = htonl(ntohl(c->net.s_addr) + host);
		if (a.s_addr == gw.s_addr)
			continue;
		inet_ntop(AF_INET, &a, c->addr, sizeof(c->addr));
		if ((r = exec_bind_addr(run, c->addr, why, sizeof(why))) == 0)
			return 0;
		if (r < 0) {
			error("the proxy did not take the container's address "
			    "%s for run %s: %s; nothing was run", c->addr,
			    run->id, why);
			c->addr[0] = '\0';
			return -1;
		}
	}
	error("%d addresses of podman's bridge were other runs'; nothing was "
	    "run", OCI_ADDR_TRIES);
	c->addr[0] = '\0';
	return -1;
}

/*
 * The proxy must listen where containers reach it: on the gateway address
 * (or every address).  Never rebound behind the operator's back: the fix
 * is said, the run refused.
 */
static int
oci_proxy_reachable(const struct exec_run *run, const struct oci *c)
{
	const struct proxy_loc *loc = run->loc;
	/* where on the host: rootless, the gateway is the host's loopback */
	const char *at = c->rootless ? "127.0.0.1" : c->gateway;
	size_t i;

	if (loc->have_state) {
		for (i = 0; i < loc->st.nbind; i++)
			if (strcmp(loc->st.bind[i], at) == 0 ||
			    strcmp(loc->st.bind[i], "0.0.0.0") == 0)
				return 0;
	} else if (strcmp(loc->host, at) == 0)
		return 0;
	if (c->rootless) {
		error("the proxy listens on %s only, and a rootless podman "
		    "container reaches the host on its loopback, 127.0.0.1: "
		    "restart it with INTUTIC_PROXY_BIND=127.0.0.1 (the "
		    "default); nothing was run", loc->have_state ?
		    loc->st.bind[0] : loc->host);
		return -1;
	}
	error("the proxy listens on %s only, and a "
	    "container reaches it on %s's bridge address %s: restart it with "
	    "INTUTIC_PROXY_BIND=127.0.0.1,%s (e.g. `INTUTIC_PROXY_BIND="
	    "127.0.0.1,%s intutic start`); nothing was run",
	    loc->have_state ? loc->st.bind[0] : loc->host, c->name, c->gateway,
	    c->gateway, c->gateway);
	return -1;
}

/*
 * The listener of list (the state file's "ADDR:PORT"s) that a container
 * reaches on the gateway, as "GATEWAY:PORT" into out: 0, or -1 (none).
 */
static int
oci_listener_on(const char (*list)[STATE_ADDR_MAX], size_t n,
    const char *gateway, char *out, size_t len)
{
	const char *colon;
	size_t i, alen;

	for (i = 0; i < n; i++) {
		if ((colon = strrchr(list[i], ':')) == NULL)
			continue;
		alen = (size_t)(colon - list[i]);
		if ((alen == strlen(gateway) &&
		    strncmp(list[i], gateway, alen) == 0) ||
		    (alen == 7 && strncmp(list[i], "0.0.0.0", 7) == 0)) {
			snprintf(out, len, "%s%s", gateway, colon);
			return 0;
		}
	}
	return -1;
}

/*
 * Podman: the proxy must serve its transparent listener and its DNS filter
 * where the container reaches them, on the gateway (or every address):
 * the container's table sends there what its clients that ignore the
 * proxy settings send (TCP to ports 80 and 443, DNS).  Never started
 * behind the operator's back: the options to add are said, the run
 * refused.  Docker: nothing (its containers have no address of their
 * run's, so the proxy could not tell whose such a connection is).
 */
static int
oci_proxy_serves(const struct exec_run *run, struct oci *c)
{
	const struct proxy_loc *loc = run->loc;
	char add[256];
	int t, d;

	if (strcmp(c->name, "podman") != 0 || c->rootless)
		return 0;
	t = loc->have_state ? oci_listener_on(loc->st.transparent,
	    loc->st.ntransparent, c->gateway, c->transparent,
	    sizeof(c->transparent)) : -1;
	d = loc->have_state ? oci_listener_on(loc->st.dns, loc->st.ndns,
	    c->gateway, c->dns, sizeof(c->dns)) : -1;
	if (t == 0 && d == 0)
		return 0;
	snprintf(add, sizeof(add), "%s%s%s%s%s%s%s", t != 0 ?
	    "--transparent-bind " : "", t != 0 ? c->gateway : "",
	    t != 0 ? ":3129" : "", t != 0 && d != 0 ? " " : "",
	    d != 0 ? "--dns-bind " : "", d != 0 ? c->gateway : "",
	    d != 0 ? ":5300" : "");
	error("the proxy serves no %s on %s's bridge address %s, where a "
	    "container's clients that ignore the proxy settings are sent: "
	    "restart it with %s (e.g. `intutic start --bind 127.0.0.1,%s "
	    "--transparent-bind %s:3129 --dns-bind %s:5300`); nothing was run",
	    t != 0 && d != 0 ? "transparent listener and no DNS filter" :
	    t != 0 ? "transparent listener" : "DNS filter", c->name,
	    c->gateway, add, c->gateway, c->gateway, c->gateway);
	return -1;
}

/*
 * Where the sandbox's FILE is (a Dockerfile, the seccomp profile...): in
 * INTUTIC_SANDBOX_DIR when set (and then only there), else the installed
 * directory, else the source tree's; the first readable one's path in
 * `path`.  0, or -1 (said where it looked, and the fix).
 */
static int
oci_sandbox_file(const char *file, char *path, size_t len)
{
	const char *env = getenv("INTUTIC_SANDBOX_DIR");
	const char *cand[3];
	size_t i;

	cand[0] = env != NULL && *env != '\0' ? env : NULL;
	cand[1] = INTUTIC_DATADIR "/sandbox";
	cand[2] = INTUTIC_SRCDIR "/sandbox";
	for (i = 0; i < 3; i++) {
		if (cand[i] == NULL)
			continue;
		if ((size_t)snprintf(path, len, "%s/%s", cand[i], file) < len &&
		    access(path, R_OK) == 0)
			return 0;
		if (i == 0)
			break;	/* asked for: no other */
	}
	if (cand[0] != NULL)
		error("no %s in INTUTIC_SANDBOX_DIR "
		    "'%s': point it at a directory that holds the sandbox's "
		    "files (as %s does), or unset it; nothing was run", file, cand[0],
		    cand[1]);
	else
		error("no sandbox/%s (looked in %s and "
		    "%s): reinstall intutic (`make install` puts it in the "
		    "first) or set INTUTIC_SANDBOX_DIR to a directory that holds "
		    "it; nothing was run", file, cand[1], cand[2]);
	return -1;
}

/* The signal that stopped an image build (0: none): the run's status. */
static int oci_signalled;

/*
 * A build's output: its last OCI_BUILD_OUT_MAX bytes, and its last step
 * ("STEP N/M: TEXT"), for the progress lines and for the failure.
 */
struct oci_build_out {
	const char	*image;
	char		*buf;		/* OCI_BUILD_OUT_MAX bytes and a NUL */
	size_t		 len;
	int		 cut;		/* its start was dropped */
	unsigned int	 n, m;		/* the last step, N of M */
	char		 step[SPAWN_LINE_MAX];
};

/* spawn_lines()'s callback: a progress line per step, every line kept. */
static void
oci_build_line_cb(const char *line, void *arg)
{
	struct oci_build_out *b = arg;
	const char *text;
	size_t len = strlen(line), drop;

	if (oci_fail_step(line, &b->n, &b->m, &text)) {
		snprintf(b->step, sizeof(b->step), "%s", text);
		error("building %s: step %u/%u: %.*s%s", b->image, b->n, b->m,
		    OCI_STEP_SHOWN, text, strlen(text) > OCI_STEP_SHOWN ?
		    "..." : "");
	}
	if (len + 1 > OCI_BUILD_OUT_MAX)
		len = OCI_BUILD_OUT_MAX - 1;
	if (b->len + len + 1 > OCI_BUILD_OUT_MAX) {
		drop = b->len + len + 1 - OCI_BUILD_OUT_MAX;
		memmove(b->buf, b->buf + drop, b->len - drop);
		b->len -= drop;
		b->cut = 1;
	}
	memcpy(b->buf + b->len, line, len);
	b->buf[b->len + len] = '\n';
	b->len += len + 1;
}

/*
 * A failed build's output on stderr, once: its script is in the STEP line,
 * so the runtime's closing "Error: building at STEP \"SCRIPT\": WHY" is
 * shortened to the step's number.
 */
static void
oci_build_dump(const struct oci_build_out *b)
{
	char prefix[SPAWN_LINE_MAX + 32];
	const char *p = b->buf, *end = b->buf + b->len, *nl;
	size_t plen;

	plen = (size_t)snprintf(prefix, sizeof(prefix),
	    "Error: building at STEP \"%s\": ", b->step);
	if (b->cut && (nl = memchr(p, '\n', b->len)) != NULL) {
		fprintf(stderr, "[... the start of the output left out]\n");
		p = nl + 1;
	}
	/* every line kept ends in a newline (oci_build_line_cb()) */
	for (; p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL;
	    p = nl + 1) {
		if (b->step[0] != '\0' && plen < sizeof(prefix) &&
		    (size_t)(nl - p) >= plen && memcmp(p, prefix, plen) == 0)
			fprintf(stderr, "Error: building at step %u/%u: %.*s\n",
			    b->n, b->m, (int)(nl - p - (ptrdiff_t)plen), p + plen);
		else
			fprintf(stderr, "%.*s\n", (int)(nl - p), p);
	}
}

/*
 * Podman: the storage (buildah) containers there are, "ID Storage" lines
 * into out; 0, or -1.  A build stopped by a signal leaves its working
 * containers behind there (docker's daemon ends its own build).
 */
static int
oci_build_containers(const struct oci *c, char *out, size_t len)
{
	out[0] = '\0';
	if (strcmp(c->name, "podman") != 0)
		return -1;
	return oci_query(c, out, len, OCI_QUERY_MS, "ps", "-a", "--external",
	    "--format", "{{.ID}} {{.Status}}") == 0 ? 0 : -1;
}

/*
 * The storage containers of `after` that `before` did not list: the
 * stopped build's, removed.  How many were, or -1 when one could not be.
 */
static int
oci_build_clean(const struct oci *c, const char *before, char *after)
{
	char *line, *save = NULL, *sp, id[80];
	int n = 0, bad = 0, i;

	for (line = strtok_r(after, "\n", &save), i = 0;
	    line != NULL && i < OCI_LEFT_MAX;
	    line = strtok_r(NULL, "\n", &save), i++) {
		if ((sp = strchr(line, ' ')) == NULL ||
		    strcmp(sp + 1, "Storage") != 0 ||
		    (size_t)(sp - line) >= sizeof(id) - 1)
			continue;
		snprintf(id, sizeof(id), "%.*s ", (int)(sp - line), line);
		if (strstr(before, id) != NULL)
			continue;
		id[sp - line] = '\0';
		if (oci_query(c, NULL, 0, OCI_QUERY_MS, "rm", "-f", id, NULL,
		    NULL) == 0)
			n++;
		else
			bad = 1;
	}
	return bad ? -1 : n;
}

/*
 * Builds IMAGE from the sandbox directory's FILE on BASE (NULL: the
 * Dockerfile's), a line on stderr per step and the runtime's output only
 * when it fails; 0 or -1 (said; oci_signalled set when a signal stopped
 * it, its process group ended and the containers it made removed).
 */
static int
oci_build(const struct oci *c, const char *image, const char *file,
    const char *base)
{
	char dir[PATH_MAX], df[PATH_MAX], barg[512], varg[64], why[256];
	char *before = NULL, *after = NULL;
	struct oci_build_out b;
	struct argvb ab;
	char **argv;
	int st, sig, left, r = -1;
	/* building the default image for its -node variant */
	int node = strcmp(c->image, image) != 0;

	if (oci_sandbox_file(file, df, sizeof(df)) != 0)
		return -1;
	memset(&b, 0, sizeof(b));
	b.image = image;
	if ((b.buf = malloc(OCI_BUILD_OUT_MAX + 1)) == NULL ||
	    (before = calloc(1, OCI_LIST_MAX)) == NULL ||
	    (after = calloc(1, OCI_LIST_MAX)) == NULL) {
		free(b.buf);
		free(before);
		error("out of memory");
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s", df);
	*strrchr(dir, '/') = '\0';
	snprintf(varg, sizeof(varg), "VERSION=%s", PACKAGE_VERSION);
	error("building the sandbox image %s from %s "
	    "(once; it is reused afterwards)", image, df);
	(void)oci_build_containers(c, before, OCI_LIST_MAX);
	argvb_init(&ab);
	/*
	 * Rootful podman builds in a PID namespace of its own: a RUN step's
	 * processes (runc's, in a session beyond the build's process group)
	 * end with the build when a signal stops it, since a namespace's
	 * processes die with its first one.
	 */
	if (geteuid() == 0 && strcmp(c->name, "podman") == 0 &&
	    access(OCI_UNSHARE, X_OK) == 0) {
		argvb_add(&ab, OCI_UNSHARE);
		argvb_add(&ab, "--pid");
		argvb_add(&ab, "--fork");
		argvb_add(&ab, "--kill-child");
		argvb_add(&ab, "--mount-proc");
		argvb_add(&ab, "--");
	}
	argvb_add(&ab, c->rt);
	argvb_add(&ab, "build");
	/* Intermediate containers removed when a step fails too. */
	argvb_add(&ab, "--force-rm");
	argvb_add(&ab, "-t");
	argvb_add(&ab, image);
	argvb_add(&ab, "-f");
	argvb_add(&ab, df);
	argvb_add(&ab, "--build-arg");
	argvb_add(&ab, varg);
	if (base != NULL) {
		snprintf(barg, sizeof(barg), "BASE=%s", base);
		argvb_add(&ab, "--build-arg");
		argvb_add(&ab, barg);
	}
	argvb_add(&ab, dir);
	if ((argv = argvb_done(&ab)) == NULL) {
		error("out of memory");
		goto out;
	}
	fflush(NULL);
	st = spawn_lines(argv, oci_build_line_cb, &b, &sig, why, sizeof(why));
	b.buf[b.len] = '\0';
	if (sig != 0) {
		oci_signalled = sig;
		left = oci_build_containers(c, after, OCI_LIST_MAX) == 0 ?
		    oci_build_clean(c, before, after) : 0;
		if (left < 0)
			error("building %s was stopped by signal %d; a container "
			    "it made could not be removed: see `%s ps -a "
			    "--external`; nothing was run", image, sig, c->name);
		else
			error("building %s was stopped by signal %d (%d "
			    "container%s it made removed); nothing was run",
			    image, sig, left, left == 1 ? "" : "s");
		goto out;
	}
	if (st < 0) {
		error("%s; nothing was run", why);
		goto out;
	}
	if (st != 0) {
		oci_build_dump(&b);
		if (oci_fail_pull(b.buf)) {
			/* mkbase: beside the Dockerfile */
			error("building %s failed: its base image %s cannot be "
			    "pulled; build a base from Debian's packages with "
			    "`sudo %s/" OCI_MKBASE " --runtime %s --import "
			    OCI_BASE_NAME "%s`, then re-run with "
			    "INTUTIC_SANDBOX_BASE=" OCI_BASE_NAME "%s "
			    "(intutic-exec(1), Building the images offline); "
			    "nothing was run", image, base != NULL ? base :
			    "(the Dockerfile's)", dir, c->name,
			    node ? "-node --node" : "", node ? "-node" : "");
		} else
			error("building %s failed (exit %d; %s build's output "
			    "is above): fix what it says and re-run; nothing "
			    "was run", image, st, c->name);
		goto out;
	}
	r = 0;
 out:
	argvb_free(&ab);
	free(b.buf);
	free(before);
	free(after);
	return r;
}

/* Pulls IMAGE, output on stderr; 0 or -1. */
static int
oci_pull(const struct oci *c, const char *image)
{
	char *argv[4], why[256];
	int st;

	argv[0] = (char *)c->rt;
	argv[1] = (char *)"pull";
	argv[2] = (char *)image;
	argv[3] = NULL;
	if ((st = spawn_foreground(argv, NULL, 1, why, sizeof(why))) != 0) {
		if (st < 0)
			error("%s", why);
		error("cannot pull %s (%s pull's message is above): check "
		    "the name, or pull, build or load it as the user who runs "
		    "intutic (`%s images` lists what is there); nothing was run",
		    image, c->name, c->name);
		return -1;
	}
	return 0;
}

static int
oci_image_exists(const struct oci *c, const char *image)
{
	return oci_query(c, NULL, 0, OCI_QUERY_MS, "image", "inspect", image,
	    NULL, NULL) == 0;
}

void
oci_default_image(char *image, size_t len)
{
	const char *name = getenv("INTUTIC_SANDBOX_IMAGE");

	if (name != NULL && *name != '\0')
		snprintf(image, len, "%s", name);
	else
		snprintf(image, len, "%s:%s", OCI_IMAGE_NAME, PACKAGE_VERSION);
}

int
oci_doctor_image(const char *rt, const char *image)
{
	struct oci c;

	memset(&c, 0, sizeof(c));
	snprintf(c.rt, sizeof(c.rt), "%s", rt);
	return oci_image_exists(&c, image);
}

/*
 * The image: --sandbox-image as given (the runtime pulls it as usual), or
 * the default one, intutic/sandbox:VERSION (INTUTIC_SANDBOX_IMAGE names
 * another), and its -node variant, built on first use from the shipped
 * Dockerfiles (on INTUTIC_SANDBOX_BASE when set).
 */
static int
oci_image(const struct exec_opts *o, struct oci *c)
{
	char def[128], node[160];
	const char *base = getenv("INTUTIC_SANDBOX_BASE");

	oci_default_image(def, sizeof(def));
	snprintf(node, sizeof(node), "%s-node", def);
	snprintf(c->image, sizeof(c->image), "%s",
	    o->image != NULL ? o->image : def);
	if (c->image[0] == '-') {
		error("--sandbox-image '%s' is not an "
		    "image name", c->image);
		return -1;
	}
	if (strcmp(c->image, def) != 0 && strcmp(c->image, node) != 0) {
		/*
		 * Pulled here, in intutic's own environment: the runtime that
		 * runs the command has the command's proxy variables, which
		 * name a host only containers know.
		 */
		if (oci_image_exists(c, c->image))
			return 0;
		return oci_pull(c, c->image);
	}
	/* An image of ours that an earlier run found: not asked again. */
	if (oci_cache_has_image(&c->cache, c->image)) {
		c->image_cached = 1;
		return 0;
	}
	if (!oci_image_exists(c, def) &&
	    oci_build(c, def, "Dockerfile", base != NULL && *base != '\0' ?
	    base : NULL) != 0)
		return -1;
	if (strcmp(c->image, node) == 0 && !oci_image_exists(c, node) &&
	    oci_build(c, node, "Dockerfile.node", def) != 0)
		return -1;
	oci_cache_add_image(&c->cache, c->image);
	c->dirty = 1;
	return 0;
}

/*
 * The runtime's own environment: intutic's, with the values the command
 * gets by name (they override).
 */
static char **
oci_environ(const struct envv *e)
{
	size_t n = 0, i, j, k = 0;
	char **v;

	while (environ[n] != NULL)
		n++;
	if ((v = calloc(n + e->n + 1, sizeof(*v))) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		size_t len = strcspn(environ[i], "=");
		int shadowed = 0;

		for (j = 0; j < e->n && !shadowed; j++)
			shadowed = strncmp(e->v[j], environ[i], len) == 0 &&
			    e->v[j][len] == '=';
		if (!shadowed)
			v[k++] = environ[i];
	}
	for (j = 0; j < e->n; j++)
		v[k++] = e->v[j];
	v[k] = NULL;
	return v;
}

/*
 * A --sandbox-mount DIR[:ro]: an existing absolute directory, mounted at
 * the same path; `dirout` gets DIR.
 */
static int
oci_mount_arg(const char *spec, char *out, size_t len, char *dirout,
    size_t dirlen)
{
	char dir[PATH_MAX];
	const char *colon = strrchr(spec, ':');
	int ro = colon != NULL && strcmp(colon, ":ro") == 0;
	size_t dlen = ro ? (size_t)(colon - spec) : strlen(spec);
	struct stat sb;

	if (dlen == 0 || dlen >= sizeof(dir) || spec[0] != '/' ||
	    (colon != NULL && !ro)) {
		error("--sandbox-mount '%s': expected an "
		    "absolute DIR or DIR:ro", spec);
		return -1;
	}
	memcpy(dir, spec, dlen);
	dir[dlen] = '\0';
	if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
		error("--sandbox-mount: '%s' is not a "
		    "directory", dir);
		return -1;
	}
	snprintf(out, len, "%s:%s%s", dir, dir, ro ? ":ro" : "");
	snprintf(dirout, dirlen, "%s", dir);
	return 0;
}

/*
 * The sandbox directory's FILE mounted read-only at DEST, as the runtime's
 * -v argument "PATH:DEST:ro".
 */
static int
oci_shipped_mount(const char *file, const char *dest, char *arg, size_t len)
{
	char path[PATH_MAX];

	if (oci_sandbox_file(file, path, sizeof(path)) != 0)
		return -1;
	if (strchr(path, ':') != NULL) {
		error("'%s' cannot be mounted: its path "
		    "has a ':' (the runtime's -v separator); set "
		    "INTUTIC_SANDBOX_DIR to a copy of its directory without "
		    "one; nothing was run", path);
		return -1;
	}
	snprintf(arg, len, "%s:%s:ro", path, dest);
	return 0;
}

/*
 * What every container gets from the sandbox directory, whatever its
 * image, as the runtime's arguments: the seccomp profile
 * ("seccomp=PATH"), the resolv.conf ("PATH:/etc/resolv.conf:ro") and ssh's
 * ProxyCommand (connect.sh, "PATH:" SANDBOX_CONNECT ":ro").  Without them
 * nothing runs.
 */
static int
oci_shipped_args(char *seccomp, size_t seclen, char *resolv, size_t reslen,
    char *connect, size_t conlen)
{
	char path[PATH_MAX];

	if (oci_sandbox_file(OCI_SECCOMP, path, sizeof(path)) != 0)
		return -1;
	snprintf(seccomp, seclen, "seccomp=%s", path);
	return oci_shipped_mount(OCI_RESOLV_CONF, "/etc/resolv.conf", resolv,
	    reslen) != 0 || oci_shipped_mount(OCI_CONNECT_FILE, SANDBOX_CONNECT,
	    connect, conlen) != 0 ? -1 : 0;
}

/*
 * The container's egress table in nft syntax (hostfw.c makes it, as it
 * makes the host's): the proxy at the bridge's gateway and the
 * --sandbox-allow networks.  *out is the caller's to free.  Returns 0, or
 * -1 (said).
 */
static int
oci_ruleset(const struct exec_run *run, const struct oci *c, char **out)
{
	const struct exec_opts *o = run->o;
	struct hostfw_sandbox *sb;
	char proxy[96], why[HOSTFW_WHY_MAX];
	size_t i, len;
	FILE *f;
	int r = -1;

	*out = NULL;
	if ((sb = calloc(1, sizeof(*sb))) == NULL) {
		error("out of memory");
		return -1;
	}
	snprintf(proxy, sizeof(proxy), "%s:%u", c->gateway, run->loc->port);
	if (hostfw_net_parse(proxy, 1, &sb->proxy) != 0) {
		error("the proxy's address in the container, '%s', is not an "
		    "ADDR:PORT; nothing was run", proxy);
		goto out;
	}
	if (c->transparent[0] != '\0') {
		if (hostfw_net_parse(c->transparent, 1, &sb->transparent) != 0 ||
		    hostfw_net_parse(c->dns, 1, &sb->dns) != 0) {
			error("the proxy's listeners in the container, '%s' and "
			    "'%s', are not ADDR:PORTs; nothing was run",
			    c->transparent, c->dns);
			goto out;
		}
		sb->transparent_set = sb->dns_set = 1;
	}
	for (i = 0; i < o->nallow_cidr && i < HOSTFW_ALLOW_MAX; i++)
		if (hostfw_net_parse(o->allow_cidr[i], 0,
		    &sb->allow[sb->nallow++]) != 0) {
			error("--sandbox-allow: '%s' is not a CIDR[:PORT]; "
			    "nothing was run", o->allow_cidr[i]);
			goto out;
		}
	if ((f = open_memstream(out, &len)) == NULL) {
		error("out of memory");
		goto out;
	}
	if (hostfw_sandbox_print(sb, f, why, sizeof(why)) != 0)
		error("the container's egress table: %s; nothing was run", why);
	else
		r = 0;
	if (fclose(f) != 0 && r == 0) {
		error("out of memory");
		r = -1;
	}
 out:
	if (r != 0) {
		free(*out);
		*out = NULL;
	}
	free(sb);
	return r;
}

int
oci_conf_path(char *path, size_t len)
{
	if ((size_t)snprintf(path, len, "%s/sandbox/%s", INTUTIC_DATADIR,
	    OCI_CONTAINERS_CONF) < len && access(path, R_OK) == 0)
		return 0;
	if ((size_t)snprintf(path, len, "%s/contrib/%s", INTUTIC_SRCDIR,
	    OCI_CONTAINERS_CONF) < len && access(path, R_OK) == 0)
		return 0;
	return -1;
}

/*
 * The one line for a known cause of `RUNTIME run` failing, with its fix.
 */
static void
oci_fail_say(const struct oci *c, enum oci_fail f)
{
	char conf[PATH_MAX], mode[64];
	struct stat sb;

	switch (f) {
	case OCI_FAIL_RLIMIT:
		if (oci_conf_path(conf, sizeof(conf)) != 0)
			snprintf(conf, sizeof(conf), "contrib/containers.conf");
		error("%s run failed: the OCI runtime cannot set the container's "
		    "ulimits on this host's cgroup layout (hybrid or v1): give "
		    "%s explicit default_ulimits, as %s does (`CONTAINERS_CONF=%s "
		    "intutic exec ...`, or copy it to %s); nothing was run",
		    c->name, c->name, conf, conf, getuid() == 0 ?
		    "/etc/containers/containers.conf" :
		    "~/.config/containers/containers.conf");
		break;
	case OCI_FAIL_ROOTLESS_NET:
		error("%s run failed: rootless networking needs slirp4netns or "
		    "pasta and %s found neither: install one (`apt-get install "
		    "slirp4netns` or `passt`), then re-run; nothing was run",
		    c->name, c->name);
		break;
	case OCI_FAIL_TUN:
		if (stat("/dev/net/tun", &sb) == 0)
			snprintf(mode, sizeof(mode), "its mode is %04o",
			    (unsigned int)(sb.st_mode & 07777));
		else
			snprintf(mode, sizeof(mode), "%s", strerror(errno));
		error("%s run failed: rootless networking (slirp4netns) cannot "
		    "open /dev/net/tun as this user (%s; Debian's is 0666): "
		    "`chmod 0666 /dev/net/tun` as root, or run intutic as "
		    "root; nothing was run", c->name, mode);
		break;
	case OCI_FAIL_NO_IMAGE:
		error("%s run failed: the image %s is not in the storage of the "
		    "user who runs intutic: pull or build it as that user (`%s "
		    "images` lists what is there), then re-run; nothing was run",
		    c->name, c->image, c->name);
		break;
	case OCI_FAIL_NO_ADDR:
		error("%s run failed: its bridge network gave the container no "
		    "address: free some (`%s ps -a`: containers holding one) or "
		    "check `%s network inspect`, then re-run; nothing was run",
		    c->name, c->name, c->name);
		break;
	case OCI_FAIL_UNKNOWN:
		break;
	}
}

int
oci_run(const struct exec_run *run)
{
	const struct exec_opts *o = run->o;
	struct envv e = { NULL, 0, 0 };
	struct oci c;
	struct argvb ab;
	char **argv, **envp = NULL;
	char label_run[128], label_ver[64], name[96], host[160], why[256];
	char home[128], mounts[EXEC_LIST_MAX][2 * PATH_MAX + 8];
	char *ruleset = NULL, memory[32], cpus[32];
	char pids[32], workdir[PATH_MAX], *names[EXEC_ENV_MAX + 32];
	char seccomp[PATH_MAX + 16], resolv[PATH_MAX + 32], dnsopt[80];
	char connect[PATH_MAX + sizeof(SANDBOX_CONNECT) + 8];
	char tail[OCI_RUN_TAIL];
	enum oci_fail fail;
	char uid[16], gid[16], login_mount[PATH_MAX + sizeof(LOGIN_MOUNT) + 2];
	struct login *login = NULL;
	size_t i, nnames = 0;
	int st, r = EXIT_CANNOT_RUN, writable = 0, rootless;

	memset(&c, 0, sizeof(c));
	argvb_init(&ab);
	if (oci_runtime(o, &c) != 0 || oci_gateway(&c) != 0 ||
	    oci_proxy_reachable(run, &c) != 0 ||
	    oci_proxy_serves(run, &c) != 0 || oci_pick_addr(run, &c) != 0)
		return EXIT_CANNOT_RUN;
	workdir[0] = '\0';
	for (i = 0; i < o->nmount; i++)
		if (oci_mount_arg(o->mount[i], mounts[i], sizeof(mounts[i]),
		    i == 0 ? workdir : why, i == 0 ? sizeof(workdir) :
		    sizeof(why)) != 0)
			return EXIT_USAGE;
	if (oci_shipped_args(seccomp, sizeof(seccomp), resolv,
	    sizeof(resolv), connect, sizeof(connect)) != 0)
		return EXIT_CANNOT_RUN;
	if (oci_image(o, &c) != 0)
		return oci_signalled != 0 ? 128 + oci_signalled :
		    EXIT_CANNOT_RUN;
	if (oci_ruleset(run, &c, &ruleset) != 0)
		return EXIT_CANNOT_RUN;

	for (i = 0; i < o->nmount; i++) {
		size_t mlen = strlen(mounts[i]);

		if (mlen < 3 || strcmp(mounts[i] + mlen - 3, ":ro") != 0)
			writable = 1;
	}
	/*
	 * A writable workspace: the agent as the user running intutic, so
	 * that it may write there and what it makes is that user's on the
	 * host.  Rootless podman maps that user to the image's 1000
	 * (keep-id); a rootful runtime maps nothing, so the entrypoint
	 * runs the agent as that uid and gid (root's: uid 0, with no
	 * capability).
	 */
	snprintf(uid, sizeof(uid), "%u", (unsigned int)getuid());
	snprintf(gid, sizeof(gid), "%u", (unsigned int)getgid());
	rootless = c.rootless;
	/* The login files: the agent's, which is uid 1000 or this user. */
	if (o->nlogin > 0 && login_stage(o->login, o->nlogin, writable ||
	    rootless ? getuid() : 1000, writable || rootless ? getgid() : 1000,
	    &login) != 0)
		goto out;
	if (login != NULL) {
		if (strchr(login_dir(login), ':') != NULL) {
			error("--sandbox-login: '%s' has a ':' (the runtime's "
			    "-v separator); set TMPDIR to a directory without "
			    "one", login_dir(login));
			goto out;
		}
		snprintf(login_mount, sizeof(login_mount), "%s:%s",
		    login_dir(login), LOGIN_MOUNT);
	}
	/* GIT_SSH_COMMAND: after exec_env(), so that -e's wins. */
	if (exec_env(run, &e, OCI_HOST_NAME, run->loc->port, 0) != 0 ||
	    envv_set(&e, "GIT_SSH_COMMAND", SANDBOX_GIT_SSH) != 0 ||
	    (writable && !rootless &&
	    (envv_set(&e, "INTUTIC_SANDBOX_UID", uid) != 0 ||
	    envv_set(&e, "INTUTIC_SANDBOX_GID", gid) != 0)) ||
	    (login != NULL && envv_set(&e, "INTUTIC_SANDBOX_LOGIN",
	    login_list(login)) != 0) ||
	    envv_set(&e, "INTUTIC_SANDBOX_RULESET", ruleset) != 0 ||
	    (workdir[0] != '\0' &&
	    envv_set(&e, "INTUTIC_SANDBOX_WORKDIR", workdir) != 0) ||
	    (envp = oci_environ(&e)) == NULL) {
		error("out of memory");
		goto out;
	}
	snprintf(label_run, sizeof(label_run), "intutic.run=%s", run->id);
	snprintf(label_ver, sizeof(label_ver), "intutic.version=%s",
	    PACKAGE_VERSION);
	snprintf(name, sizeof(name), "intutic-%s", run->id);
	snprintf(host, sizeof(host), "%s:%s", OCI_HOST_NAME, c.gateway);
	snprintf(dnsopt, sizeof(dnsopt), "--dns=%s", c.gateway);
	snprintf(home, sizeof(home), "%s:mode=0700", OCI_SANDBOX_HOME);
	snprintf(memory, sizeof(memory), "--memory=%s",
	    o->memory != NULL ? o->memory : OCI_DEFAULT_MEMORY);
	snprintf(cpus, sizeof(cpus), "--cpus=%s",
	    o->cpus != NULL ? o->cpus : OCI_DEFAULT_CPUS);
	snprintf(pids, sizeof(pids), "--pids-limit=%s",
	    o->pids != NULL ? o->pids : OCI_DEFAULT_PIDS);

	if (e.n > sizeof(names) / sizeof(names[0])) {
		error("too many variables for the "
		    "sandbox");
		r = EXIT_USAGE;
		goto out;
	}
	argvb_add(&ab, c.rt);
	argvb_add(&ab, "run");
	argvb_add(&ab, "--rm");
	argvb_add(&ab, "--init");
	argvb_add(&ab, "-i");
	if (isatty(0) && isatty(1))
		argvb_add(&ab, "-t");
	argvb_add(&ab, "--name");
	argvb_add(&ab, name);
	argvb_add(&ab, "--label");
	argvb_add(&ab, label_run);
	argvb_add(&ab, "--label");
	argvb_add(&ab, label_ver);
	argvb_add(&ab, "--cap-drop=ALL");
	argvb_add(&ab, "--cap-add=NET_ADMIN");
	argvb_add(&ab, "--cap-add=SETUID");
	argvb_add(&ab, "--cap-add=SETGID");
	argvb_add(&ab, "--cap-add=SETPCAP");
	/* The home tmpfs is made root's: the entrypoint hands it over. */
	argvb_add(&ab, "--cap-add=CHOWN");
	argvb_add(&ab, "--security-opt=no-new-privileges");
	argvb_add(&ab, "--security-opt");
	argvb_add(&ab, seccomp);
	argvb_add(&ab, "--read-only");
	argvb_add(&ab, "--tmpfs");
	argvb_add(&ab, "/tmp");
	argvb_add(&ab, "--tmpfs");
	argvb_add(&ab, "/run");
	argvb_add(&ab, "--tmpfs");
	argvb_add(&ab, home);
	argvb_add(&ab, pids);
	argvb_add(&ab, memory);
	argvb_add(&ab, cpus);
	if (c.dns[0] != '\0') {
		/*
		 * The resolver is the gateway, port 53: the container's table
		 * sends every query to the proxy's DNS filter.
		 */
		argvb_add(&ab, dnsopt);
	} else {
		/* No resolver: names go to the proxy (docker has no "none"). */
		argvb_add(&ab, strcmp(c.name, "podman") == 0 ? "--dns=none" :
		    "--dns=127.0.0.1");
		/* ... and not the image's resolv.conf (podman keeps it). */
		argvb_add(&ab, "-v");
		argvb_add(&ab, resolv);
	}
	argvb_add(&ab, "--pull=never");
	/* The image's own entrypoint or none: intutic's, or no run at all. */
	argvb_add(&ab, "--entrypoint=" OCI_ENTRYPOINT);
	argvb_add(&ab, "--add-host");
	argvb_add(&ab, host);
	if (c.addr[0] != '\0') {
		argvb_add(&ab, "--ip");
		argvb_add(&ab, c.addr);
	}
	if ((writable || login != NULL) && rootless)
		argvb_add(&ab, "--userns=keep-id:uid=1000,gid=1000");
	if (c.rootless)
		argvb_add(&ab, OCI_ROOTLESS_NETWORK);
	if (login != NULL) {
		argvb_add(&ab, "-v");
		argvb_add(&ab, login_mount);
	}
	argvb_add(&ab, "-v");
	argvb_add(&ab, connect);
	for (i = 0; i < o->nmount; i++) {
		argvb_add(&ab, "-v");
		argvb_add(&ab, mounts[i]);
	}
	/* By name: the values are in the runtime's environment only. */
	for (i = 0; i < e.n; i++) {
		size_t len = strcspn(e.v[i], "=");

		if ((names[nnames] = strndup(e.v[i], len)) == NULL) {
			error("out of memory");
			goto out;
		}
		argvb_add(&ab, "-e");
		argvb_add(&ab, names[nnames++]);
	}
	argvb_add(&ab, c.image);
	for (i = 0; o->argv[i] != NULL; i++)
		argvb_add(&ab, o->argv[i]);
	if ((argv = argvb_done(&ab)) == NULL) {
		error("out of memory");
		goto out;
	}

	if (c.dirty)
		(void)oci_cache_save(c.name, &c.cache);
	for (;;) {
		fflush(NULL);
		st = spawn_foreground_tail(argv, envp, 0, tail, sizeof(tail),
		    why, sizeof(why));
		fail = st >= 125 && st <= 127 ? oci_fail_classify(tail) :
		    OCI_FAIL_UNKNOWN;
		/*
		 * The cache said the image was there and it is not (removed
		 * since): forgotten, checked (built) as on a first run, and
		 * the same run again, once.
		 */
		if (fail != OCI_FAIL_NO_IMAGE || !c.image_cached)
			break;
		c.image_cached = 0;
		oci_cache_drop_image(&c.cache, c.image);
		error("%s is no longer in %s's storage (an earlier run found "
		    "it there): looking for it again", c.image, c.name);
		if (oci_image(o, &c) != 0) {
			(void)oci_cache_save(c.name, &c.cache);
			r = oci_signalled != 0 ? 128 + oci_signalled :
			    EXIT_CANNOT_RUN;
			goto out;
		}
		(void)oci_cache_save(c.name, &c.cache);
	}
	if (st < 0)
		error("%s", why);
	else if (fail != OCI_FAIL_UNKNOWN) {
		oci_fail_say(&c, fail);
		st = EXIT_CANNOT_RUN;
	} else if (st == 125)
		error("exit 125: %s run or the "
		    "sandbox's entrypoint failed (the message is above), or the "
		    "command itself exited 125", c.name);
	r = st < 0 ? EXIT_CANNOT_RUN : st;
 out:
	login_finish(login);
	free(ruleset);
	argvb_free(&ab);
	for (i = 0; i < nnames; i++)
		free(names[i]);
	free(envp);
	envv_free(&e);
	return r;
}
