/*
 * conntrack.h — the flows connection tracking holds that `enforce on` would
 * not let out, found (for doctor) and deleted (by enforce on), over netlink
 * with libnetfilter_conntrack; a flow's owner is the socket's, from the
 * kernel's socket table (sock_diag, with libmnl).
 *
 * A flow's first packet decides its fate as the table hostfw.c installs
 * decides a new one: kept are flows over loopback or to this host's own
 * addresses, flows made to this host from elsewhere (their replies pass),
 * flows whose socket belongs to the proxy's user, and flows to the proxy,
 * to an --allow network or to the --dns-to filter; every other flow this
 * host sent (or forwarded) is one enforce cuts.  A flow whose socket is gone
 * has no owner: it is cut, since whoever binds its port next would ride it.
 */
#ifndef INTUTIC_CONNTRACK_H
#define INTUTIC_CONNTRACK_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "hostfw.h"

#define CONNTRACK_SHOW_MAX	16	/* flows a result names */

/* One tracked flow, in its original direction. */
struct conntrack_flow {
	int		 family;	/* AF_INET or AF_INET6 */
	uint8_t		 proto;		/* IPPROTO_TCP, _UDP, ... */
	unsigned char	 src[16], dst[16];
	uint16_t	 sport, dport;	/* host order; 0 without ports */
	int		 owned;		/* 1: owner is its socket's user */
	uid_t		 owner;
};

struct conntrack_result {
	size_t			 seen;		/* flows tracked */
	size_t			 cut;		/* to cut (dry) or cut */
	size_t			 gone;		/* ended on their own meanwhile */
	struct conntrack_flow	 shown[CONNTRACK_SHOW_MAX]; /* the first cut */
	size_t			 nshown;
};

/*
 * Finds the flows cfg's table would not let out; unless dry, deletes them.
 * Returns 0 with res filled, or -1 with why and errno set (EPERM: not
 * allowed, which needs CAP_NET_ADMIN; EPROTONOSUPPORT: no connection
 * tracking in this kernel, so nothing to cut).
 */
int	 conntrack_cut(const struct hostfw_config *cfg, int dry,
	    struct conntrack_result *res, char *why, size_t whylen);

/* "uid 1000 tcp 10.0.0.1:40000 > 10.99.0.2:80" (or "no socket ..."). */
const char	*conntrack_flow_text(const struct conntrack_flow *f, char *buf,
		    size_t len);

#endif /* INTUTIC_CONNTRACK_H */
