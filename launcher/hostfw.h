/*
 * hostfw.h — the host firewall of `intutic enforce`: the nftables table
 * inet intutic, asked for, installed and removed over netlink with libnftnl
 * (the launcher's only user of libnftnl and libmnl).
 *
 * The ruleset is made from one list of rules (hostfw.c, fw_rules()) that
 * both hostfw_print() and hostfw_install() read, so that what --dry-run
 * shows is what is installed.  Every change is one netlink batch, applied
 * whole or not at all.
 */
#ifndef INTUTIC_HOSTFW_H
#define INTUTIC_HOSTFW_H

#include <sys/types.h>

#include <stddef.h>
#include <stdio.h>

#define HOSTFW_FAMILY_NAME	"inet"
#define HOSTFW_TABLE		"intutic"

#define HOSTFW_PROXY_MAX	16	/* the proxy's addresses */
#define HOSTFW_ALLOW_MAX	64	/* --allow entries */
#define HOSTFW_WHY_MAX		512	/* bytes of an error text */

/* An address or a network, with a port or none. */
struct hostfw_net {
	int		 family;	/* AF_INET or AF_INET6 */
	unsigned char	 addr[16];	/* network order, host bits cleared */
	unsigned int	 prefix;	/* 1..32 or 1..128 */
	unsigned int	 port;		/* 0: every port */
};

/* What the table lets out. */
struct hostfw_config {
	uid_t			 uid;	/* the proxy's user: its sockets pass */
	struct hostfw_net	 proxy[HOSTFW_PROXY_MAX]; /* address and port */
	size_t			 nproxy;
	struct hostfw_net	 allow[HOSTFW_ALLOW_MAX];
	size_t			 nallow;
	int			 dns_to_set;
	struct hostfw_net	 dns_to; /* an address and a port */
};

/* 1: the table is there; 0: it is not; -1: cannot tell (why). */
int	 hostfw_active(char *why, size_t whylen);

/*
 * Writes the table that cfg makes to out in the form `nft list table inet
 * intutic` lists it (counters at zero).  Returns 0, or -1 when cfg makes
 * more rules than fit (why).
 */
int	 hostfw_print(const struct hostfw_config *cfg, FILE *out, char *why,
	    size_t whylen);

/*
 * Installs the table that cfg makes, in one batch that adds the table,
 * deletes it (and so whatever it held) and adds it again with its counters,
 * chains and rules: either all of it is in place afterwards, or nothing
 * changed.  No other table is touched.  Returns 0, or -1 (why).
 */
int	 hostfw_install(const struct hostfw_config *cfg, char *why,
	    size_t whylen);

/* Deletes the table.  1: it was deleted; 0: it was not there; -1 (why). */
int	 hostfw_remove(char *why, size_t whylen);

/*
 * Prints the installed rules, chain by chain, in words (their comments),
 * then the counters, to out.  Returns 0, or -1 (why).
 */
int	 hostfw_show(FILE *out, char *why, size_t whylen);

#endif /* INTUTIC_HOSTFW_H */
