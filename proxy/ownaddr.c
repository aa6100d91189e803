/*
 * ownaddr.c — the proxy's own addresses (no loops) and its port (no second
 * listener); see ownaddr.h.
 *
 * Addresses are kept as IPv6 addresses, an IPv4 one in IPv4-mapped form
 * (::ffff:a.b.c.d), so that one comparison serves both families and a mapped
 * destination is its IPv4 address for free.  The rules that need no list
 * (unspecified, bound, loopback) are read-only after ownaddr_new() and take
 * no lock; the host's addresses, needed only under a wildcard bind and only
 * for a destination on the proxy's port, are behind a mutex.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ownaddr.h"

/* Reads of the netlink socket before a listing is made all the same. */
#define OWNADDR_NL_READS_MAX	64

struct ownaddr {
	struct in6_addr	*bound;		/* the bind addresses, read-only */
	size_t		 nbound;
	int		 loopback;	/* a loopback address is bound */
	int		 wildcard;	/* a wildcard address is bound */
	int		 nl;		/* netlink, address changes; -1: none */
	pthread_mutex_t	 lock;		/* what follows */
	struct in6_addr	*local;		/* the host's addresses, sorted */
	size_t		 nlocal;
	int		 listed;	/* local holds a listing */
	long long	 listed_ms;	/* when, CLOCK_MONOTONIC */
	unsigned	 listings;
};

static const struct in6_addr ownaddr_any6 = IN6ADDR_ANY_INIT;
static const struct in6_addr ownaddr_lo6 = IN6ADDR_LOOPBACK_INIT;

/* sa as an IPv6 address (IPv4 mapped); -1 for another family. */
static int
canon(const struct sockaddr *sa, struct in6_addr *a)
{
	if (sa->sa_family == AF_INET) {
		memset(a, 0, sizeof(*a));
		a->s6_addr[10] = a->s6_addr[11] = 0xff;
		memcpy(&a->s6_addr[12],
		    &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		*a = ((const struct sockaddr_in6 *)sa)->sin6_addr;
		return 0;
	}
	return -1;
}

static int
is_v4(const struct in6_addr *a)
{
	return IN6_IS_ADDR_V4MAPPED(a);
}

/* 0.0.0.0 or :: (the wildcard of a bind, the unspecified destination). */
static int
is_unspec(const struct in6_addr *a)
{
	static const uint8_t zero[4];

	if (is_v4(a))
		return memcmp(&a->s6_addr[12], zero, 4) == 0;
	return memcmp(a, &ownaddr_any6, sizeof(*a)) == 0;
}

static int
is_loopback(const struct in6_addr *a)
{
	if (is_v4(a))
		return a->s6_addr[12] == 127;
	return memcmp(a, &ownaddr_lo6, sizeof(*a)) == 0;
}

static int
addr_cmp(const void *x, const void *y)
{
	return memcmp(x, y, sizeof(struct in6_addr));
}

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Address changes of every interface, read without blocking; -1: none. */
static int
netlink_open(void)
{
	struct sockaddr_nl snl;
	int fd;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    NETLINK_ROUTE);
	if (fd == -1)
		return -1;
	memset(&snl, 0, sizeof(snl));
	snl.nl_family = AF_NETLINK;
	snl.nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
	if (bind(fd, (struct sockaddr *)&snl, sizeof(snl)) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Whether the list must be made again: an address came or went (a
 * message waits, or some were lost), or, without netlink, it is old.
 * Called with the lock held.
 */
static int
stale(struct ownaddr *o)
{
	char buf[OWNADDR_NL_BUF];
	ssize_t n;
	int i, changed = 0;

	if (!o->listed)
		return 1;
	if (o->nl == -1)
		return now_ms() - o->listed_ms >= OWNADDR_REFRESH_MS;
	for (i = 0; i < OWNADDR_NL_READS_MAX; i++) {
		n = recv(o->nl, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0) {
			changed = 1;
			continue;
		}
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return changed;
		if (n == -1 && (errno == EINTR || errno == ENOBUFS)) {
			changed = 1;	/* ENOBUFS: messages were lost */
			continue;
		}
		/* Broken: fall back on the age of the list. */
		close(o->nl);
		o->nl = -1;
		return 1;
	}
	return 1;
}

/* Lists the host's addresses into o->local.  Called with the lock held. */
static void
list_local(struct ownaddr *o)
{
	struct ifaddrs *ifs, *ifa;
	struct in6_addr *v;
	size_t n = 0;

	o->listings++;
	if (getifaddrs(&ifs) == -1) {
		o->listed = 0;		/* fail closed until one works */
		return;
	}
	for (ifa = ifs; ifa != NULL; ifa = ifa->ifa_next)
		if (ifa->ifa_addr != NULL &&
		    (ifa->ifa_addr->sa_family == AF_INET ||
		    ifa->ifa_addr->sa_family == AF_INET6))
			n++;
	if ((v = calloc(n > 0 ? n : 1, sizeof(*v))) == NULL) {
		freeifaddrs(ifs);
		o->listed = 0;
		return;
	}
	n = 0;
	for (ifa = ifs; ifa != NULL; ifa = ifa->ifa_next)
		if (ifa->ifa_addr != NULL && canon(ifa->ifa_addr, &v[n]) == 0)
			n++;
	freeifaddrs(ifs);
	qsort(v, n, sizeof(*v), addr_cmp);
	free(o->local);
	o->local = v;
	o->nlocal = n;
	o->listed = 1;
	o->listed_ms = now_ms();
}

struct ownaddr *
ownaddr_new(const struct sockaddr *const *binds, size_t n)
{
	struct ownaddr *o;
	size_t i;

	if ((o = calloc(1, sizeof(*o))) == NULL)
		return NULL;
	o->nl = -1;
	if ((o->bound = calloc(n > 0 ? n : 1, sizeof(*o->bound))) == NULL) {
		free(o);
		return NULL;
	}
	pthread_mutex_init(&o->lock, NULL);
	for (i = 0; i < n; i++) {
		if (canon(binds[i], &o->bound[o->nbound]) != 0)
			continue;
		if (is_unspec(&o->bound[o->nbound]))
			o->wildcard = 1;
		else if (is_loopback(&o->bound[o->nbound]))
			o->loopback = 1;
		o->nbound++;
	}
	if (o->wildcard) {
		/* First the changes, then the list: none is missed. */
		o->nl = netlink_open();
		list_local(o);
	}
	return o;
}

void
ownaddr_free(struct ownaddr *o)
{
	if (o == NULL)
		return;
	if (o->nl != -1)
		close(o->nl);
	pthread_mutex_destroy(&o->lock);
	free(o->local);
	free(o->bound);
	free(o);
}

/*
 * Whether a is listed among the host's addresses (listing them first when
 * the list is stale); unlisted, what `unlisted` says.
 */
static int
in_listing(struct ownaddr *o, const struct in6_addr *a, int unlisted)
{
	int r;

	pthread_mutex_lock(&o->lock);
	if (stale(o))
		list_local(o);
	r = o->listed ? bsearch(a, o->local, o->nlocal, sizeof(*a),
	    addr_cmp) != NULL : unlisted;
	pthread_mutex_unlock(&o->lock);
	return r;
}

int
ownaddr_match(struct ownaddr *o, const struct sockaddr *sa)
{
	struct in6_addr a;
	size_t i;

	if (canon(sa, &a) != 0)
		return 0;
	if (is_unspec(&a))
		return 1;
	for (i = 0; i < o->nbound; i++)
		if (memcmp(&o->bound[i], &a, sizeof(a)) == 0)
			return 1;
	if (is_loopback(&a) && (o->loopback || o->wildcard))
		return 1;
	if (!o->wildcard)
		return 0;
	return in_listing(o, &a, 1);	/* not listed: fails closed */
}

int
ownaddr_local(struct ownaddr *o, const struct sockaddr *sa)
{
	struct in6_addr a;

	if (o == NULL || canon(sa, &a) != 0)
		return 0;
	if (is_loopback(&a))
		return 1;
	if (!o->wildcard)
		return 0;
	return in_listing(o, &a, 0);	/* not listed: a sandbox's */
}

unsigned
ownaddr_listings(struct ownaddr *o)
{
	unsigned n;

	pthread_mutex_lock(&o->lock);
	n = o->listings;
	pthread_mutex_unlock(&o->lock);
	return n;
}

/* ------------------------------------------------------- the port holder */

/*
 * One line of /proc/net/tcp or tcp6: the local address (as /proc prints
 * it, 32-bit words in host order), port, state and inode.  0 when it is a
 * socket listening on port.
 */
static int
parse_listener(const char *line, int v6, uint16_t port, struct in6_addr *a,
    unsigned long *inode)
{
	char hex[33], word[9];
	unsigned int lport, st;
	uint32_t w;
	size_t i, len;

	if (sscanf(line, " %*u: %32[0-9A-Fa-f]:%x %*s %x %*s %*s %*s %*s %*s "
	    "%lu", hex, &lport, &st, inode) != 4)
		return -1;
	if (st != 0x0A || lport != port)	/* TCP_LISTEN */
		return -1;
	len = strlen(hex);
	if (len != (v6 ? 32u : 8u))
		return -1;
	memset(a, 0, sizeof(*a));
	if (!v6)
		a->s6_addr[10] = a->s6_addr[11] = 0xff;
	for (i = 0; i < len / 8; i++) {
		memcpy(word, hex + 8 * i, 8);
		word[8] = '\0';
		w = (uint32_t)strtoul(word, NULL, 16);
		memcpy(&a->s6_addr[v6 ? 4 * i : 12], &w, 4);
	}
	return 0;
}

/*
 * Whether a listener on e takes connections meant for bind b: the same
 * address, or a wildcard of the family on either side.  (An IPv6 wildcard
 * without IPV6_V6ONLY, which /proc does not show, could take IPv4 too;
 * but the kernel lets it share the port with an IPv4 bind only under
 * SO_REUSEPORT, and then hands IPv4 connections to the IPv4 socket.)
 */
static int
overlaps(const struct in6_addr *b, const struct in6_addr *e)
{
	if (is_v4(b) != is_v4(e))
		return 0;
	return is_unspec(b) || is_unspec(e) ||
	    memcmp(b, e, sizeof(*b)) == 0;
}

/* The value of --state-dir on an intutic-proxy's command line, into h. */
static void
find_state_dir(struct ownaddr_holder *h)
{
	char path[64], buf[8192], cwd[OWNADDR_ARG_MAX];
	const char *arg, *end;
	size_t n, len;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)h->pid);
	if ((fp = fopen(path, "re")) == NULL)
		return;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	end = buf + n;
	for (arg = buf; arg < end; arg += strlen(arg) + 1) {
		const char *v = NULL;

		if (strcmp(arg, "--state-dir") == 0 && arg + strlen(arg) + 1 < end)
			v = arg + strlen(arg) + 1;
		else if (strncmp(arg, "--state-dir=", 12) == 0)
			v = arg + 12;
		if (v == NULL)
			continue;
		len = strlen(v);
		if (len == 0 || len >= sizeof(h->state_dir))
			return;
		if (v[0] == '/') {
			memcpy(h->state_dir, v, len + 1);
			return;
		}
		/* Relative to where that proxy was started. */
		snprintf(path, sizeof(path), "/proc/%ld/cwd", (long)h->pid);
		n = (size_t)readlink(path, cwd, sizeof(cwd) - 1);
		if (n == (size_t)-1 || n == 0)
			return;
		cwd[n] = '\0';
		if (n + 1 + len >= sizeof(h->state_dir))
			return;
		memcpy(h->state_dir, cwd, n);
		h->state_dir[n] = '/';
		memcpy(h->state_dir + n + 1, v, len + 1);
		return;
	}
}

/* The process with a descriptor for socket inode; fills h->pid, h->comm. */
static void
find_pid(unsigned long inode, struct ownaddr_holder *h)
{
	/* Room for two d_names: "/proc/PID/fd/FD". */
	char want[64], path[2 * sizeof(((struct dirent *)0)->d_name) + 16];
	char link[64], comm[OWNADDR_COMM_MAX];
	struct dirent *pe, *fe;
	DIR *procd, *fdd;
	ssize_t n;
	FILE *fp;

	h->pid = -1;
	h->comm[0] = '\0';
	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	if ((procd = opendir("/proc")) == NULL)
		return;
	while (h->pid == -1 && (pe = readdir(procd)) != NULL) {
		if (!isdigit((unsigned char)pe->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fd", pe->d_name);
		if ((fdd = opendir(path)) == NULL)
			continue;	/* another user's, or gone */
		while ((fe = readdir(fdd)) != NULL) {
			if (fe->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%s/fd/%s",
			    pe->d_name, fe->d_name);
			n = readlink(path, link, sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = '\0';
			if (strcmp(link, want) == 0) {
				h->pid = (pid_t)strtol(pe->d_name, NULL, 10);
				break;
			}
		}
		closedir(fdd);
	}
	closedir(procd);
	if (h->pid == -1)
		return;
	snprintf(path, sizeof(path), "/proc/%ld/comm", (long)h->pid);
	if ((fp = fopen(path, "re")) == NULL)
		return;
	if (fgets(comm, sizeof(comm), fp) != NULL) {
		comm[strcspn(comm, "\n")] = '\0';
		snprintf(h->comm, sizeof(h->comm), "%s", comm);
	}
	fclose(fp);
	if (strcmp(h->comm, "intutic-proxy") == 0)
		find_state_dir(h);
}

int
ownaddr_port_holder(const struct sockaddr *bind, uint16_t port,
    const unsigned long *ours, size_t nours, struct ownaddr_holder *h)
{
	static const char *const files[2] = {
		"/proc/net/tcp", "/proc/net/tcp6"
	};
	struct in6_addr b, e;
	unsigned long inode;
	char line[512];
	size_t i, k;
	FILE *fp;
	int found = 0, opened = 0;

	memset(h, 0, sizeof(*h));
	h->pid = -1;
	if (canon(bind, &b) != 0)
		return 0;
	for (i = 0; i < 2 && !found; i++) {
		if ((fp = fopen(files[i], "re")) == NULL)
			continue;	/* tcp6: no IPv6 in this kernel */
		opened++;
		while (!found && fgets(line, sizeof(line), fp) != NULL) {
			if (parse_listener(line, i == 1, port, &e, &inode) != 0 ||
			    !overlaps(&b, &e))
				continue;
			for (k = 0; k < nours && ours[k] != inode; k++)
				;
			if (k < nours)
				continue;
			found = 1;
			h->inode = inode;
			if (is_v4(&e))
				inet_ntop(AF_INET, &e.s6_addr[12], h->addr,
				    sizeof(h->addr));
			else
				inet_ntop(AF_INET6, &e, h->addr,
				    sizeof(h->addr));
		}
		fclose(fp);
	}
	if (!found)
		return opened > 0 ? 0 : -1;
	find_pid(h->inode, h);
	return 1;
}
