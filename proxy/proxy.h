/*
 * proxy.h — intutic-proxy: what the files of proxy/ share.
 *
 * One process, one event loop per worker thread.  Each worker has its own
 * event base, its own evdns base and its own SO_REUSEPORT listeners; a
 * connection lives and dies on the worker that accepted it.  The rule set is
 * shared read-only: each connection takes a reference when it starts and
 * decides with that set; after a reload, or a change of its run's policy,
 * its worker decides it again with what is in force (proxy_recheck(),
 * conn_recheck()), and it holds the new set from then on, or is closed.
 */
#ifndef INTUTIC_PROXY_H
#define INTUTIC_PROXY_H

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <limits.h>
#include <pthread.h>
#include <stdint.h>

#include "dns.h"
#include "pool.h"
#include "rules.h"
#include "tunnel.h"

struct event_base;
struct evdns_base;
struct event;

/* Limits and timeouts: each a named default, each overridable by an option. */
#define PROXY_PORT_DEFAULT	8877
#define PROXY_BINDS_MAX		16		/* --bind addresses */
#define PROXY_TRANSPARENT_MAX	4		/* --transparent-bind addresses */
#define PROXY_GATEWAY_MAX	4		/* --gateway-bind addresses */
/* PROXY_WORKERS_MAX: dns.h (included above), which sizes by it. */
#define PROXY_HEAD_MAX		(64 * 1024)	/* bytes of a request head */
#define PROXY_HEADERS_MAX	100		/* header lines in a request */
#define PROXY_URI_MAX		(8 * 1024)	/* bytes of a request-target */
#define PROXY_DNS_MS		5000		/* looking a name up */
#define PROXY_CONNECT_MS	10000		/* dialing the origin */
#define PROXY_HEAD_MS		15000		/* reading a request head */
#define PROXY_PEEK_MS		10000		/* first client bytes in a tunnel */
#define PROXY_IDLE_MS		300000		/* a tunnel with no traffic */
#define PROXY_GRACE_MS		10000		/* draining after SIGTERM */
#define PROXY_FINISH_MS		5000		/* writing a last answer */
#define PROXY_SWEEP_MS		2000		/* runs of gone launchers end */
#define PROXY_CONNS_MAX		20000		/* concurrent connections */
#define PROXY_HIGH_WATER	(256 * 1024)	/* bytes queued towards a slow side */
#define PROXY_FD_RESERVE	4		/* descriptors kept for EMFILE */
/*
 * One read or write in a tunnel, and the most it keeps for a slow side.
 * Large reads hand the receiver large pieces: on the 2-CPU test machine one
 * tunnel moved 30% more than with splice(2), 128 KiB reads about half as much
 * (proxy/README.md).
 */
#define PROXY_IO_CHUNK		(1024 * 1024)
/*
 * Bytes a worker holds in transit for all its tunnels together (what a slow
 * side did not take yet).  Past it, a tunnel keeps nothing: it writes what
 * it peeked at and leaves the rest in the kernel.
 */
#define PROXY_TRANSIT_MAX	(32 * 1024 * 1024)

/* Its options: common/proxy-opts.h describes each field set from one. */
struct proxy_config {
	const char	*rules_path;
	const char	*bind_text;		/* --bind, split into binds */
	const char	*binds[PROXY_BINDS_MAX];
	size_t		 nbinds;
	uint16_t	 port;
	const char	*audit_path;		/* NULL: no audit log; "-": stderr */
	int		 workers;
	const char	*state_dir;
	const char	*resolv_conf;
	const char	*hosts_file;
	const char	*control_group;		/* NULL: the proxy's */
	const char	*user;			/* --user; NULL: stay */
	const char	*dns_bind_text;		/* --dns-bind; NULL: no filter */
	const char	*transparent_text;	/* --transparent-bind; NULL: none */
	const char	*gateway_ca;		/* --gateway-ca; NULL: none */
	const char	*gateway_keys;		/* --gateway-keys; NULL: none */
	const char	*gateway_text;		/* --gateway-bind; NULL: none */
	const char	*upstream_text;		/* --upstream-proxy; NULL: none */
	const char	*upstream_auth;		/* --upstream-proxy-auth; NULL */
	size_t		 head_max;
	size_t		 headers_max;
	size_t		 uri_max;
	int		 dns_ms;
	int		 connect_ms;
	int		 head_ms;
	int		 peek_ms;
	int		 idle_ms;
	int		 grace_ms;
	size_t		 conns_max;
	size_t		 transit_max;		/* bytes, per worker */
	int		 require_run;		/* no credentials: 407 */
	int		 no_revoke;		/* decisions stand once made */
	int		 debug;
};

/* Counters, updated with relaxed atomics from every worker. */
struct proxy_metrics {
	uint64_t	 conns_total;
	uint64_t	 conns_active;
	uint64_t	 tunnels_active;
	uint64_t	 requests_http;
	uint64_t	 decisions[2];		/* by verdict: deny, allow */
	uint64_t	 reasons[32];		/* by enum conn_reason */
	uint64_t	 bytes_up;
	uint64_t	 bytes_down;
	uint64_t	 dns_lookups;
	uint64_t	 dns_failures;
	uint64_t	 reloads;
	uint64_t	 revocations;		/* connections revoked */
	uint64_t	 reload_errors;
	uint64_t	 accept_paused;
	uint64_t	 timeouts;
	uint64_t	 bad_requests;
	uint64_t	 dns_queries[2];	/* the filter's, by verdict */
	uint64_t	 dns_malformed;		/* dropped, or FORMERR */
	uint64_t	 dns_upstream_failures;	/* answered SERVFAIL */
	uint64_t	 dns_cache_hits;	/* answered from what was kept */
	/* the transparent listener's: not the original address dialled */
	uint64_t	 transparent_mismatches;
};

#define METRIC_ADD(p, field, n) \
	__atomic_add_fetch(&(p)->metrics.field, (n), __ATOMIC_RELAXED)
#define METRIC_SUB(p, field, n) \
	__atomic_sub_fetch(&(p)->metrics.field, (n), __ATOMIC_RELAXED)
#define METRIC_GET(p, field) \
	__atomic_load_n(&(p)->metrics.field, __ATOMIC_RELAXED)

/* A listening address the proxy really bound (the port filled in). */
struct proxy_listen {
	struct sockaddr_storage	 ss;
	socklen_t		 len;
	char			 text[64];	/* "127.0.0.1" or "::1" */
	int			 fds[PROXY_WORKERS_MAX];	/* one per worker */
	/* A transparent listener's own addresses (ownaddr.h); else NULL. */
	struct ownaddr		*own;
};

struct worker;
struct given;
struct gateway;
struct tls_client;
struct upstream;

struct proxy {
	struct proxy_config	 cfg;
	struct proxy_metrics	 metrics;
	pthread_mutex_t		 rules_lock;
	struct rules		*rules;		/* current set; rules_lock */
	unsigned long long	 rules_gen;	/* its generation; rules_lock */
	char			*rules_text;	/* it as JSON members; rules_lock */
	uint64_t		 recheck_rev;	/* rechecks asked (atomic) */
	struct audit		*audit;
	struct hosts		*hosts;		/* --hosts, read once */
	struct runs		*runs;		/* registered by intutic exec */
	int			 control_fd;	/* the control socket; -1 */
	char			 control_path[PATH_MAX];	/* "": none */
	gid_t			 control_gid;	/* --control-group; -1 */
	struct proxy_listen	 listens[PROXY_BINDS_MAX];
	size_t			 nlistens;
	/* --transparent-bind: "ADDR:PORT" in text, each its own port */
	struct proxy_listen	 transparent[PROXY_TRANSPARENT_MAX];
	size_t			 ntransparent;
	/* --gateway-bind: the provider gateway alone, each its own port */
	struct proxy_listen	 gatewayl[PROXY_GATEWAY_MAX];
	size_t			 ngateway;
	struct dns_bind		 dns[DNS_BINDS_MAX];	/* the DNS filter's */
	size_t			 ndns;
	uint16_t		 port;		/* the real port */
	struct ownaddr		*own;		/* own addresses (ownaddr.h) */
	struct ownaddr		*local;		/* the host's (transparent) */
	struct given		*given;		/* what the filter gave (given.h) */
	struct tls_client	*tls;		/* the gateway's TLS (tls.h) */
	struct gateway		*gateway;	/* its secret, counters (gateway.h) */
	struct upstream		*upstream;	/* --upstream-proxy; NULL: none */
	struct worker		*workers;
	int			 nworkers;
	struct event_base	*base;		/* the main thread's: signals */
	int			 stopping;	/* SIGTERM seen (atomic) */
	uint64_t		 next_id;	/* connection ids (atomic) */
	time_t			 started;
};

/* One worker thread. */
struct conn;
TAILQ_HEAD(conn_list, conn);
struct gw_idle;
TAILQ_HEAD(gw_idle_list, gw_idle);

struct worker {
	struct proxy		*p;
	int			 id;
	pthread_t		 thread;
	struct event_base	*base;
	struct evdns_base	*dns;
	/* the data port's, the transparent ones and the control socket */
	struct event		*listeners[PROXY_BINDS_MAX +
				    PROXY_TRANSPARENT_MAX + PROXY_GATEWAY_MAX + 1];
	size_t			 nlisteners;
	struct event		*stop_ev;	/* woken by proxy_stop() */
	struct event		*resume_ev;	/* re-enables accept after EMFILE */
	struct event		*recheck_ev;	/* proxy_recheck() wakes it */
	uint64_t		 recheck_done;	/* the revision done (atomic) */
	int			 reserve[PROXY_FD_RESERVE];
	int			 paused;
	struct conn_list	 conns;
	size_t			 nconns;
	uint8_t			*scratch;	/* PROXY_IO_CHUNK, for tunnels */
	struct pool		 conn_pool;	/* struct conn and its timer */
	struct pool		 tunnel_pool;	/* struct tunnel and its events */
	struct tunnel_budget	 transit;	/* what its tunnels hold */
	struct dns_worker	*dns_filter;	/* dns.c; NULL: none */
	/* The gateway's idle provider connections (way-gateway.c). */
	struct gw_idle_list	 gw_idle;
	size_t			 ngw_idle;
};

struct evbuffer;

/* main.c */
struct rules	*proxy_rules_get(struct proxy *p);	/* a new reference */
/*
 * Every worker decides its open connections again under what is in force
 * now (conn_recheck()); returns the revision to wait for with
 * proxy_rechecked(), which says 1 once every worker has done it.
 */
uint64_t	 proxy_recheck(struct proxy *p);
int		 proxy_rechecked(struct proxy *p, uint64_t rev);
void		 proxy_metrics_render(struct proxy *p, struct evbuffer *out);

/* worker.c */
int	 worker_listen_all(struct proxy *p);	/* -2: bad address */
/* Closes what worker_listen_all() made and no worker took. */
void	 worker_unlisten_all(struct proxy *p);
/* An IPv4 or IPv6 address ("[v6]" too), no port: 0, or -1. */
int	 worker_parse_bind(const char *text, struct sockaddr_storage *ss,
	    socklen_t *len);
/*
 * "ADDR:PORT", "[V6]:PORT", or (default_port not -1) an address alone,
 * which gets default_port: 0, or -1.
 */
int	 worker_parse_addrport(const char *text, int default_port,
	    struct sockaddr_storage *ss, socklen_t *len);
void	 worker_set_port(struct sockaddr_storage *ss, uint16_t port);
/* An AF_INET or AF_INET6 address's port. */
uint16_t proxy_sockaddr_port(const struct sockaddr *sa);
int	 worker_start(struct proxy *p, struct worker *w);
void	 worker_free(struct worker *w);	/* after the thread was joined */
void	 worker_stop_accepting(struct worker *w);
void	 worker_conn_closed(struct worker *w);
void	 worker_recheck(struct worker *w);	/* any thread */
/* 1: dialling sa (its port set) would reach this proxy (ownaddr.h). */
int	 proxy_is_own_addr(const struct proxy *p, const struct sockaddr *sa);

/* conn.c */
/* What a connection came in on; a way in serves some of them. */
enum conn_listener {
	CONN_LISTEN_DATA = 1,		/* a --bind address: the proxy */
	CONN_LISTEN_CONTROL = 2,	/* the control socket */
	CONN_LISTEN_TRANSPARENT = 4,	/* a --transparent-bind address */
	CONN_LISTEN_GATEWAY = 8		/* a --gateway-bind address */
};

void	 conn_accept(struct worker *w, int fd, const struct sockaddr *sa,
	    socklen_t len, int listener);

/* way-control.c: the control socket, DIR/control.sock. */
int	 control_listen(struct proxy *p);	/* 0, or -1 (said) */
void	 control_unlink(struct proxy *p);
/* A run's policy compiled from its text (a runs_compile_fn). */
int	 control_policy_compile(const char *id, const char *text,
	    struct rules **set, char *why, size_t whylen, void *arg);

#endif /* INTUTIC_PROXY_H */
