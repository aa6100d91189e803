/*
 * enforce-record.h — what `intutic enforce on` installed, left where any
 * user can read it: exec and doctor cannot ask nftables without
 * CAP_NET_ADMIN, and doctor judges tracked flows by it.
 *
 * One file per network namespace (the firewall is the namespace's),
 * ENFORCE_RECORD_DIR/net-COOKIE.json, COOKIE the namespace's cookie
 * (SO_NETNS_COOKIE, never reused while the system runs):
 *
 *	{"netns": N, "since": EPOCH, "uid": N, "proxy": ["127.0.0.1:8080"],
 *	 "allow": ["10.0.0.0/8:443"], "dns_to": "127.0.0.1:5353"|null,
 *	 "version": "V"}
 *
 * written atomically by enforce on, removed by enforce off.  It is trusted
 * only when it and its directory belong to root and are writable by root
 * only, and when its "netns" is the reader's.
 */
#ifndef INTUTIC_ENFORCE_RECORD_H
#define INTUTIC_ENFORCE_RECORD_H

#include <limits.h>
#include <stddef.h>

#include "hostfw.h"

#define ENFORCE_RECORD_DIR	"/run/intutic-enforce"
#define ENFORCE_RECORD_MAX	(64 * 1024)	/* bytes */

/* What enforce_record_read() returns (as jsonobj_read()). */
#define ENFORCE_RECORD_OK	0
#define ENFORCE_RECORD_MISSING	1
#define ENFORCE_RECORD_INVALID	2

struct enforce_record {
	char			 path[PATH_MAX];
	unsigned long long	 netns;
	long long		 since;		/* seconds since the epoch */
	struct hostfw_config	 cfg;		/* what the table lets out */
	char			 version[32];
};

/*
 * The running proxy, if there is one: its addresses into cfg, and with
 * want_uid its user (the filesystem uid of its process: its sockets').
 * Its first DNS filter and transparent listener, when it serves them, go
 * to *dns and *transparent (not NULL), a wildcard address as loopback's;
 * else their family is 0.  Returns 1 when it runs, 0 when it does not,
 * -1 with err (its state file is broken).
 */
int	 enforce_proxy_config(const char *dir, struct hostfw_config *cfg,
	    int want_uid, struct hostfw_net *dns,
	    struct hostfw_net *transparent, char *err, size_t errlen);

/* Writes the record of cfg for this namespace.  0, or -1 (why). */
int	 enforce_record_write(const struct hostfw_config *cfg, char *why,
	    size_t whylen);

/* Removes this namespace's record.  0 (also when none), or -1 (why). */
int	 enforce_record_remove(char *why, size_t whylen);

/* Reads this namespace's record into rec (cleared first). */
int	 enforce_record_read(struct enforce_record *rec, char *err,
	    size_t errlen);

#endif /* INTUTIC_ENFORCE_RECORD_H */
