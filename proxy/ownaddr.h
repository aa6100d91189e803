/*
 * ownaddr.h — what belongs to this proxy: the addresses at which the kernel
 * would hand a connection to one of its listening sockets (dialling one of
 * them on the proxy's port would loop), and its port (no other process may
 * listen on the same address and port).
 *
 * Own addresses, on the proxy's port (the caller compares the port):
 *   - the unspecified addresses 0.0.0.0 and :: (a connect(2) to them
 *     reaches this host: Linux dials 127.0.0.1 and ::1), always;
 *   - each bound address;
 *   - the whole loopback block, 127.0.0.0/8 and ::1, when a loopback or a
 *     wildcard address is bound (of either family: it fails closed);
 *   - every address of the host's interfaces, when a wildcard address is
 *     bound (of either family).
 * An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address: the
 * kernel dials it as such.  Scope ids are ignored.
 *
 * The host's addresses are listed (getifaddrs(3)) when the set is made and
 * again when the kernel says an address came or went (a netlink socket,
 * read without blocking when the list is next needed), or, where that
 * socket cannot be had, when the list is older than OWNADDR_REFRESH_MS.
 * They are needed only for a wildcard bind, and only when a destination on
 * the proxy's port is not own already by the cheaper rules.
 */
#ifndef INTUTIC_OWNADDR_H
#define INTUTIC_OWNADDR_H

#include <sys/types.h>
#include <sys/socket.h>

#include <stdint.h>

/* Without a netlink socket: the longest a list of the host's addresses is used. */
#define OWNADDR_REFRESH_MS	2000
/* Bytes read from the netlink socket at once (the messages are dropped). */
#define OWNADDR_NL_BUF		8192
/* Bytes of a process name (/proc/PID/comm is at most 16 with its NUL). */
#define OWNADDR_COMM_MAX	32
/* Bytes of the --state-dir an intutic-proxy holder was started with. */
#define OWNADDR_ARG_MAX		1024

struct ownaddr;

/*
 * A set for a proxy listening on the n addresses binds (ports ignored;
 * AF_INET and AF_INET6, others skipped).  Lists the host's addresses now
 * when a wildcard is among them.  NULL when out of memory, errno set.
 * A failed listing is no error: the set then fails closed (every address
 * is own) until a listing succeeds.
 */
struct ownaddr	*ownaddr_new(const struct sockaddr *const *binds, size_t n);

/* Frees the set and its netlink socket; NULL does nothing. */
void		 ownaddr_free(struct ownaddr *o);

/*
 * 1 when sa (AF_INET or AF_INET6; its port is not looked at) is an own
 * address of o, else 0 (also for other families).  Safe to call from
 * several threads at once: the rules that need no list take no lock.
 */
int		 ownaddr_match(struct ownaddr *o, const struct sockaddr *sa);

/*
 * 1 when sa is an address of this host (loopback, or listed on one of its
 * interfaces), as o (made with a wildcard bind) knows them; else 0, also
 * while no listing succeeded (it fails towards "not this host's": never
 * taken for the host's own, a peer is taken for a sandbox's).
 */
int		 ownaddr_local(struct ownaddr *o, const struct sockaddr *sa);

/* How many times the host's addresses were listed (for tests). */
unsigned	 ownaddr_listings(struct ownaddr *o);

/* A listening socket of another process on an address and port. */
struct ownaddr_holder {
	unsigned long	 inode;		/* its socket's inode */
	pid_t		 pid;		/* -1: no process this user can see */
	char		 comm[OWNADDR_COMM_MAX];	/* "" with no pid */
	char		 addr[64];	/* as bound: "0.0.0.0", "::1" */
	/* An intutic-proxy's --state-dir, from its command line; else "". */
	char		 state_dir[OWNADDR_ARG_MAX];
};

/*
 * Looks in /proc/net/tcp and /proc/net/tcp6 (this network namespace) for a
 * TCP socket listening on port whose address overlaps bind (the same
 * address, or either a wildcard of bind's family; an IPv4-mapped entry is
 * its IPv4 address) and whose inode is none of ours[0..nours-1]; then, by
 * /proc/PID/fd, for the process that holds it (and, for an intutic-proxy,
 * its --state-dir from /proc/PID/cmdline).  Returns 1 and fills *h for
 * the first such socket, 0 when there is none, -1 when /proc/net/tcp
 * cannot be read (errno set).
 */
int		 ownaddr_port_holder(const struct sockaddr *bind, uint16_t port,
		    const unsigned long *ours, size_t nours,
		    struct ownaddr_holder *h);

#endif /* INTUTIC_OWNADDR_H */
