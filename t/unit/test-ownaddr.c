/*
 * test-ownaddr.c — proxy/ownaddr.c: which destinations are the proxy's own
 * for each kind of bind, that the host's addresses are listed once and not
 * per call, what a call costs, and that the holder of a listening port is
 * found (this process, by its socket's inode).  No packet is sent: the
 * addresses are only compared, and the sockets listen on loopback.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <ifaddrs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ownaddr.h"
#include "tap.h"

#define CALLS	200000		/* calls timed for each path */

static void	bail(const char *fmt, ...)
		    __attribute__((__format__(__printf__, 1, 2)))
		    __attribute__((__noreturn__));

/* The test itself cannot go on: "Bail out!" stops the harness. */
static void
bail(const char *fmt, ...)
{
	va_list ap;

	fputs("Bail out! ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputs("\n", stdout);
	exit(1);
}

/* text as a sockaddr (port 1, which ownaddr does not look at). */
static const struct sockaddr *
sa_of(const char *text, struct sockaddr_storage *ss)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, text, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(1);
	} else if (inet_pton(AF_INET6, text, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(1);
	} else
		bail("bad address in the test: %s", text);
	return (const struct sockaddr *)ss;
}

/* text with port 0, to bind: the kernel picks one (port 1 needs root). */
static const struct sockaddr *
sa_any_port(const char *text, struct sockaddr_storage *ss)
{
	sa_of(text, ss);
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = 0;
	else
		((struct sockaddr_in6 *)ss)->sin6_port = 0;
	return (const struct sockaddr *)ss;
}

static struct ownaddr *
set_of(const char *const *texts, size_t n)
{
	static struct sockaddr_storage ss[8];
	const struct sockaddr *binds[8];
	struct ownaddr *o;
	size_t i;

	for (i = 0; i < n; i++)
		binds[i] = sa_of(texts[i], &ss[i]);
	if ((o = ownaddr_new(binds, n)) == NULL)
		bail("ownaddr_new: out of memory");
	return o;
}

struct own_case {
	const char	*binds[3];	/* NULL-terminated */
	const char	*dest;
	int		 own;
};

/*
 * Which destinations are own, by bind.  Wildcard binds are in
 * wildcard_host(): what is own there depends on this host's interfaces.
 */
static const struct own_case cases[] = {
	{ { "127.0.0.1" }, "127.0.0.1", 1 },
	{ { "127.0.0.1" }, "0.0.0.0", 1 },
	{ { "127.0.0.1" }, "::", 1 },
	{ { "127.0.0.1" }, "::ffff:0.0.0.0", 1 },
	{ { "127.0.0.1" }, "127.0.0.2", 1 },
	{ { "127.0.0.1" }, "127.1.2.3", 1 },
	{ { "127.0.0.1" }, "127.255.255.255", 1 },
	{ { "127.0.0.1" }, "::ffff:127.0.0.1", 1 },
	{ { "127.0.0.1" }, "::ffff:127.9.9.9", 1 },
	{ { "127.0.0.1" }, "::1", 1 },
	{ { "127.0.0.1" }, "128.0.0.1", 0 },
	{ { "127.0.0.1" }, "126.255.255.255", 0 },
	{ { "127.0.0.1" }, "10.99.0.1", 0 },
	{ { "127.0.0.1" }, "::ffff:10.99.0.1", 0 },
	{ { "127.0.0.1" }, "::2", 0 },
	{ { "127.0.0.1" }, "::127.0.0.1", 0 },	/* IPv4-compatible: not v4 */
	{ { "127.0.0.1" }, "64:ff9b::7f00:1", 0 },	/* NAT64: elsewhere */
	{ { "::1" }, "::1", 1 },
	{ { "::1" }, "127.0.0.1", 1 },
	{ { "::1" }, "::", 1 },
	{ { "::1" }, "fe80::1", 0 },
	{ { "10.99.0.1" }, "10.99.0.1", 1 },
	{ { "10.99.0.1" }, "::ffff:10.99.0.1", 1 },
	{ { "10.99.0.1" }, "0.0.0.0", 1 },
	{ { "10.99.0.1" }, "::", 1 },
	{ { "10.99.0.1" }, "10.99.0.2", 0 },
	{ { "10.99.0.1" }, "127.0.0.1", 0 },
	{ { "10.99.0.1" }, "::1", 0 },
	{ { "10.99.0.1", "::1" }, "127.3.0.1", 1 },
	{ { "10.99.0.1", "::1" }, "10.99.0.1", 1 },
	{ { "fd00::5" }, "fd00::5", 1 },
	{ { "fd00::5" }, "fd00::6", 0 },
	{ { "fd00::5" }, "127.0.0.1", 0 },
};

static void
table(void)
{
	struct sockaddr_storage ss;
	struct ownaddr *o;
	size_t i, n;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (n = 0; n < 3 && cases[i].binds[n] != NULL; n++)
			;
		o = set_of(cases[i].binds, n);
		tap_is_int(ownaddr_match(o, sa_of(cases[i].dest, &ss)),
		    cases[i].own, "bind %s%s%s: %s is %s", cases[i].binds[0],
		    n > 1 ? "," : "", n > 1 ? cases[i].binds[1] : "",
		    cases[i].dest, cases[i].own ? "own" : "not own");
		tap_is_int(ownaddr_listings(o), 0,
		    "bind %s: no listing of the host's addresses",
		    cases[i].binds[0]);
		ownaddr_free(o);
	}
}

static double
ns_per_call(struct ownaddr *o, const struct sockaddr *sa, int *own)
{
	struct timespec a, b;
	int i, n = 0;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < CALLS; i++)
		n += ownaddr_match(o, sa);
	clock_gettime(CLOCK_MONOTONIC, &b);
	*own = n;
	return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / CALLS;
}

/* Is text one of this host's addresses (then it cannot be the miss case)? */
static int
host_has(const char *text)
{
	struct sockaddr_storage ss;
	const struct sockaddr *sa = sa_of(text, &ss);
	struct ifaddrs *ifs, *ifa;
	int has = 0;

	if (getifaddrs(&ifs) == -1)
		return 1;
	for (ifa = ifs; ifa != NULL; ifa = ifa->ifa_next) {
		if (ifa->ifa_addr == NULL || ifa->ifa_addr->sa_family !=
		    sa->sa_family)
			continue;
		if (sa->sa_family == AF_INET ?
		    memcmp(&((struct sockaddr_in *)ifa->ifa_addr)->sin_addr,
		    &((const struct sockaddr_in *)sa)->sin_addr, 4) == 0 :
		    memcmp(&((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr,
		    &((const struct sockaddr_in6 *)sa)->sin6_addr, 16) == 0)
			has = 1;
	}
	freeifaddrs(ifs);
	return has;
}

static void
wildcard_host(const char *wild)
{
	const char *binds[1] = { wild };
	struct sockaddr_storage ss;
	struct ifaddrs *ifs, *ifa;
	struct ownaddr *o;
	int nif = 0, nown = 0, own;
	unsigned before;
	double ns;

	o = set_of(binds, 1);
	tap_is_int(ownaddr_listings(o), 1,
	    "bind %s: the host's addresses listed once, at the start", wild);
	if (getifaddrs(&ifs) == -1)
		bail("getifaddrs failed");
	for (ifa = ifs; ifa != NULL; ifa = ifa->ifa_next) {
		if (ifa->ifa_addr == NULL ||
		    (ifa->ifa_addr->sa_family != AF_INET &&
		    ifa->ifa_addr->sa_family != AF_INET6))
			continue;
		nif++;
		nown += ownaddr_match(o, ifa->ifa_addr);
	}
	freeifaddrs(ifs);
	tap_ok(nif > 0 && nown == nif, "bind %s: each of the host's %d "
	    "addresses is own (%d are)", wild, nif, nown);
	tap_is_int(ownaddr_match(o, sa_of("127.200.0.1", &ss)), 1,
	    "bind %s: 127.200.0.1 (loopback, on no interface) is own", wild);
	tap_is_int(ownaddr_match(o, sa_of("::ffff:127.0.0.1", &ss)), 1,
	    "bind %s: ::ffff:127.0.0.1 is own", wild);
	tap_is_int(ownaddr_match(o, sa_of("::1", &ss)), 1,
	    "bind %s: ::1 is own", wild);

	/* A miss: the path that reads the list. */
	if (host_has("192.0.2.77") || host_has("2001:db8::77"))
		tap_skip(2, "this host has a documentation address");
	else {
		before = ownaddr_listings(o);
		ns = ns_per_call(o, sa_of("192.0.2.77", &ss), &own);
		tap_is_int(own, 0, "bind %s: 192.0.2.77 is not own, %d "
		    "times (%.0f ns a call)", wild, CALLS, ns);
		tap_diag("bind %s, a destination not own (lock, netlink "
		    "poll, search): %.0f ns a call", wild, ns);
		tap_ok(ownaddr_listings(o) - before < 3, "bind %s: %d calls "
		    "listed the host's addresses %u times (not per call)",
		    wild, CALLS, ownaddr_listings(o) - before);
	}
	ns = ns_per_call(o, sa_of("127.0.0.5", &ss), &own);
	tap_is_int(own, CALLS, "bind %s: 127.0.0.5 is own (%.0f ns a call)",
	    wild, ns);
	tap_diag("bind %s, a loopback destination (no lock): %.0f ns a call",
	    wild, ns);
	ownaddr_free(o);
}

static unsigned long
inode_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

static void
holder(void)
{
	struct sockaddr_storage ss, got;
	socklen_t len = sizeof(got);
	struct ownaddr_holder h;
	unsigned long ino;
	uint16_t port;
	int fd, fd6, one = 1, r;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1 || bind(fd, sa_any_port("127.0.0.1", &ss),
	    sizeof(struct sockaddr_in)) == -1 || listen(fd, 1) == -1 ||
	    getsockname(fd, (struct sockaddr *)&got, &len) == -1)
		bail("cannot listen on 127.0.0.1");
	port = ntohs(((struct sockaddr_in *)&got)->sin_port);
	ino = inode_of(fd);

	r = ownaddr_port_holder(sa_of("127.0.0.1", &ss), port, NULL, 0, &h);
	tap_is_int(r, 1, "a listener on 127.0.0.1:%u is found", port);
	tap_ok(h.inode == ino, "by its inode %lu (found %lu)", ino, h.inode);
	tap_is_str(h.addr, "127.0.0.1", "its address");
	tap_is_int(h.pid, getpid(), "its pid is this process's");
	tap_is_str(h.comm, "test-ownaddr", "its name");
	tap_is_str(h.state_dir, "", "no --state-dir: not an intutic-proxy");
	tap_is_int(ownaddr_port_holder(sa_of("0.0.0.0", &ss), port, NULL, 0,
	    &h), 1, "a wildcard bind overlaps it");
	tap_is_int(ownaddr_port_holder(sa_of("127.0.0.2", &ss), port, NULL, 0,
	    &h), 0, "127.0.0.2 does not");
	tap_is_int(ownaddr_port_holder(sa_of("::1", &ss), port, NULL, 0, &h),
	    0, "::1 does not");
	tap_is_int(ownaddr_port_holder(sa_of("127.0.0.1", &ss), port, &ino, 1,
	    &h), 0, "our own socket is not another's");
	tap_is_int(ownaddr_port_holder(sa_of("127.0.0.1", &ss),
	    (uint16_t)(port + 1), NULL, 0, &h), 0, "nor is it on port %u",
	    port + 1);
	close(fd);
	tap_is_int(ownaddr_port_holder(sa_of("127.0.0.1", &ss), port, NULL, 0,
	    &h), 0, "closed: no holder");

	fd6 = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd6 == -1 ||
	    setsockopt(fd6, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) ||
	    bind(fd6, sa_any_port("::", &ss),
	    sizeof(struct sockaddr_in6)) == -1 ||
	    listen(fd6, 1) == -1) {
		tap_skip(2, "no IPv6 here");
		if (fd6 != -1)
			close(fd6);
		return;
	}
	len = sizeof(got);
	getsockname(fd6, (struct sockaddr *)&got, &len);
	port = ntohs(((struct sockaddr_in6 *)&got)->sin6_port);
	tap_is_int(ownaddr_port_holder(sa_of("::1", &ss), port, NULL, 0, &h),
	    1, "a listener on [::]:%u overlaps ::1", port);
	tap_is_int(ownaddr_port_holder(sa_of("127.0.0.1", &ss), port, NULL, 0,
	    &h), 0, "but not 127.0.0.1 (another family)");
	close(fd6);
}

/*
 * ownaddr_local(): the host's addresses and loopback are the host's (what
 * a process redirected to the transparent listener comes from); any other
 * is not, nor anything but loopback for a set that lists nothing.
 */
static void
local_addrs(void)
{
	const char *wild[2] = { "0.0.0.0", "::" }, *lo[1] = { "127.0.0.1" };
	struct sockaddr_storage ss;
	struct ifaddrs *ifs, *ifa;
	struct ownaddr *o, *l;
	int nif = 0, nlocal = 0, nlo = 0;

	o = set_of(wild, 2);
	l = set_of(lo, 1);
	if (getifaddrs(&ifs) == -1)
		bail("getifaddrs failed");
	for (ifa = ifs; ifa != NULL; ifa = ifa->ifa_next) {
		if (ifa->ifa_addr == NULL ||
		    (ifa->ifa_addr->sa_family != AF_INET &&
		    ifa->ifa_addr->sa_family != AF_INET6))
			continue;
		nif++;
		nlocal += ownaddr_local(o, ifa->ifa_addr);
		if (!ownaddr_match(l, ifa->ifa_addr))
			nlo += ownaddr_local(l, ifa->ifa_addr);
	}
	freeifaddrs(ifs);
	tap_ok(nif > 0 && nlocal == nif, "local: each of the host's %d "
	    "addresses is the host's (%d are)", nif, nlocal);
	tap_is_int(nlo, 0, "local: a set that lists nothing takes none of "
	    "them but loopback for the host's");
	tap_is_int(ownaddr_local(o, sa_of("127.200.0.1", &ss)), 1,
	    "local: 127.200.0.1 (loopback) is the host's");
	tap_is_int(ownaddr_local(NULL, sa_of("::1", &ss)), 0,
	    "local: no set, nothing is the host's");
	if (host_has("192.0.2.77") || host_has("2001:db8::77"))
		tap_skip(2, "this host has a documentation address");
	else {
		tap_is_int(ownaddr_local(o, sa_of("192.0.2.77", &ss)), 0,
		    "local: 192.0.2.77 is not the host's");
		tap_is_int(ownaddr_local(o, sa_of("2001:db8::77", &ss)), 0,
		    "local: 2001:db8::77 is not the host's");
	}
	ownaddr_free(l);
	ownaddr_free(o);
}

int
main(void)
{
	table();
	wildcard_host("0.0.0.0");
	wildcard_host("::");
	local_addrs();
	holder();
	return tap_done();
}
