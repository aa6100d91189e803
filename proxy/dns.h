/*
 * dns.h — the DNS filter (intutic-proxy(8), DNS FILTER): a DNS server on
 * UDP and TCP (--dns-bind) that answers A and AAAA only for names the
 * querying run may reach, and never asks upstream for any other.
 */
#ifndef INTUTIC_DNS_H
#define INTUTIC_DNS_H

#include <sys/types.h>
#include <sys/socket.h>

#include <stddef.h>
#include <stdint.h>

/*
 * Workers, at most.  Here rather than in proxy.h, which includes this
 * file: struct dns_bind below has a socket of each.
 */
#define PROXY_WORKERS_MAX	64

#define DNS_BINDS_MAX		4	/* --dns-bind addresses */
#define DNS_PORT_DEFAULT	53
#define DNS_MSG_MAX		4096	/* bytes of a query taken (UDP or TCP) */
#define DNS_PENDING_MAX		1024	/* queries upstream, per worker */
#define DNS_TCP_MAX		64	/* TCP clients, per worker */
#define DNS_TCP_IDLE_MS		10000	/* a TCP client with no query */
#define DNS_TTL_MIN		5	/* seconds an answer is given for, at least */
#define DNS_TTL_MAX		300	/* and at most */
#define DNS_TTL_HOSTS		60	/* a name of the hosts file */

struct proxy;
struct worker;
struct dns_worker;

/* An address the filter serves on: a UDP and a TCP socket per worker. */
struct dns_bind {
	struct sockaddr_storage	 ss;	/* its port set */
	socklen_t		 len;
	char			 text[64];	/* "127.0.0.1:53", "[::1]:53" */
	int			 udp[PROXY_WORKERS_MAX];	/* one a worker */
	int			 tcp[PROXY_WORKERS_MAX];
};

/*
 * Opens the sockets of --dns-bind (none: nothing to do) for every worker.
 * 0; -2 after saying why (a bad address), -1 (another error).
 */
int	 dns_listen_all(struct proxy *p);

/* A worker's filter: its sockets' events.  0, or -1 (out of memory). */
int	 dns_worker_start(struct worker *w);

/* Stops taking queries (SIGTERM): the sockets close, pending ones end. */
void	 dns_worker_stop(struct worker *w);

/* After the worker's loop ended: what it still holds. */
void	 dns_worker_free(struct worker *w);

/* Closes what dns_listen_all() opened and no worker took. */
void	 dns_close_all(struct proxy *p);

#endif /* INTUTIC_DNS_H */
