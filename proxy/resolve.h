/*
 * resolve.h — looking a name up: the hosts file first, then A and AAAA
 * queries with evdns, both at once, never with a search list.
 *
 * evdns_getaddrinfo() reports a resolver that never answered and one that
 * answered SERVFAIL with the same error, so the proxy asks for A and AAAA
 * itself: a timeout is then a timeout (504), a missing name is a missing
 * name (502).
 */
#ifndef INTUTIC_RESOLVE_H
#define INTUTIC_RESOLVE_H

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <stddef.h>
#include <stdint.h>

struct evdns_base;

#define RESOLVE_ANSWERS_MAX	32	/* addresses kept per name */
#define HOSTS_FILE_MAX		(16 * 1024 * 1024)

enum resolve_status {
	RESOLVE_OK = 0,
	RESOLVE_NONAME,		/* NXDOMAIN, or no address of either family */
	RESOLVE_TIMEOUT,	/* no nameserver answered */
	RESOLVE_FAIL,		/* SERVFAIL, refused, truncated, ... */
};

/* Answers: IPv4 first, then IPv6, each in the order the resolver gave. */
struct resolve_answers {
	struct sockaddr_storage	 addrs[RESOLVE_ANSWERS_MAX];
	socklen_t		 lens[RESOLVE_ANSWERS_MAX];
	size_t			 n;
	uint32_t		 ttl;	/* the least of the records'; 0 from hosts */
	int			 nodata;	/* RESOLVE_NONAME: the name is, its
					   records of the families asked not */
};

/* What resolve_start_for() asks for. */
#define RESOLVE_WANT_A		0x1
#define RESOLVE_WANT_AAAA	0x2

/* The hosts file, loaded once, read by every worker. */
struct hosts;

/*
 * Loads an /etc/hosts-style file ("ADDR NAME..." lines, # comments).
 * Names that are not canonical are skipped.  Returns NULL with a message in
 * err on failure; a missing file is an error.
 */
struct hosts	*hosts_load(const char *path, char *err, size_t errlen);
void		 hosts_free(struct hosts *h);

typedef void (*resolve_cb)(enum resolve_status status,
    const struct resolve_answers *answers, void *arg);

struct resolve;

/*
 * Looks the canonical `name` up.  A name in the hosts file is answered at
 * once, before resolve_start() returns (which then returns NULL); else the
 * queries go out and the callback comes later, exactly once, unless
 * resolve_cancel() is called first.  Returns NULL also when the look-up
 * could not start (the callback has then been called with RESOLVE_FAIL).
 */
struct resolve	*resolve_start(struct evdns_base *dns, const struct hosts *h,
		    const char *name, resolve_cb cb, void *arg);

/*
 * resolve_start() for one family or both (RESOLVE_WANT_*): the DNS filter
 * asks a name server only what it was asked.
 */
struct resolve	*resolve_start_for(struct evdns_base *dns, const struct hosts *h,
		    const char *name, int want, resolve_cb cb, void *arg);

/* Abandons a look-up: its callback is never called. */
void		 resolve_cancel(struct resolve *r);

const char	*resolve_strerror(enum resolve_status s);

#endif /* INTUTIC_RESOLVE_H */
