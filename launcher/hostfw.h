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
#include <stdint.h>
#include <stdio.h>

#define HOSTFW_FAMILY_NAME	"inet"
#define HOSTFW_TABLE		"intutic"

#define HOSTFW_PROXY_MAX	16	/* the proxy's addresses */
#define HOSTFW_ALLOW_MAX	64	/* --allow entries */
#define HOSTFW_WHY_MAX		512	/* bytes of an error text */
#define HOSTFW_REDIRECT_MAX	32	/* TCP ports sent to the transparent listener */

/* An address or a network, with a port or none. */
struct hostfw_net {
	int		 family;	/* AF_INET or AF_INET6 */
	unsigned char	 addr[16];	/* network order, host bits cleared */
	unsigned int	 prefix;	/* 1..32 or 1..128 */
	unsigned int	 port;		/* 0: every port */
};

#define HOSTFW_NET_TEXT_MAX	128	/* bytes of a CIDR[:PORT] as text */

/*
 * CIDR[:PORT] (IPv6 with a port: [CIDR]:PORT) into n; with need_port, an
 * ADDR:PORT (a port, no prefix).  Returns 0; -1 when s is not that; -2 for
 * a /0 (which would let everything out).
 */
int	 hostfw_net_parse(const char *s, int need_port, struct hostfw_net *n);

/* n as hostfw_net_parse() reads it: "10.0.0.0/8", "[fd00::1]:53". */
const char	*hostfw_net_text(const struct hostfw_net *n, char *buf,
		    size_t len);

/* What the table lets out. */
struct hostfw_config {
	uid_t			 uid;	/* the proxy's user: its sockets pass */
	struct hostfw_net	 proxy[HOSTFW_PROXY_MAX]; /* address and port */
	size_t			 nproxy;
	struct hostfw_net	 allow[HOSTFW_ALLOW_MAX];
	size_t			 nallow;
	int			 dns_to_set;
	struct hostfw_net	 dns_to; /* an address and a port */
	/*
	 * Set: the new TCP connections of everyone but the proxy's user to
	 * ports 80 and 443 and redirect[] (not over loopback) go to the
	 * proxy's transparent
	 * listener there (chain transparent), which the output chain lets
	 * them reach.
	 */
	int			 transparent_set;
	struct hostfw_net	 transparent;	/* an address and a port */
	/* and the ports an allow entry names (hostfw_redirect_ports()) */
	unsigned int		 redirect[HOSTFW_REDIRECT_MAX];
	size_t			 nredirect;
};

/*
 * The egress table of a sandbox container, inet intutic in the container's
 * own network namespace (the entrypoint of the sandbox image installs it):
 * its output chain drops what no rule accepts, and accepts loopback, the
 * replies of what it opened, the proxy (TCP to its address and port), the
 * resolver when one is set (TCP and UDP to its port) and the allowed
 * networks; with an IPv6 destination, neighbour discovery too.  With a
 * transparent listener, a second chain (transparent: nat, output, -100) sends
 * TCP to ports 80 and 443 there and every DNS query to the resolver (the
 * proxy's DNS filter), but over loopback or to the proxy; the output chain
 * accepts the listener.  UDP to port 443 (QUIC) stays dropped: clients
 * fall back to TCP.
 */
struct hostfw_sandbox {
	struct hostfw_net	 proxy;		/* address and port */
	int			 dns_set;
	struct hostfw_net	 dns;		/* address and port */
	int			 transparent_set;
	struct hostfw_net	 transparent;	/* address and port */
	struct hostfw_net	 allow[HOSTFW_ALLOW_MAX];
	size_t			 nallow;
};

/*
 * The TCP ports sent to a transparent listener whose original destination
 * the proxy learns (the host's, a microVM's): 80 and 443, then those of
 * ports[0..n) (the ports the rules' allow entries name), each once, at
 * most HOSTFW_REDIRECT_MAX, into out.  How many.  (A container's table
 * sends 80 and 443 only: the proxy does not learn the port there.)
 */
size_t	 hostfw_redirect_ports(const uint16_t *ports, size_t n,
	    unsigned int out[HOSTFW_REDIRECT_MAX]);

/*
 * Writes the table that sb makes to out as `nft list table` lists it, which
 * is what `nft -f` reads.  Returns 0, or -1 (why).
 */
int	 hostfw_sandbox_print(const struct hostfw_sandbox *sb, FILE *out,
	    char *why, size_t whylen);

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

/*
 * A microVM's table, inet intutic_vm_<id> (the microVM backend of `intutic
 * exec`): what comes in from its tap may reach only the proxy's address and
 * port on this host (and the replies of what was accepted: the launcher's
 * ssh into the guest); everything else from it, and everything forwarded
 * to or from it, is dropped and counted (vm_input_dropped,
 * vm_forward_dropped).  Before any of that, a second table of the same
 * name in the netdev family, on the tap's ingress hook, lets through only
 * what the guest may send as itself: IPv4 from its address and MAC, ARP
 * whose sender is that address and MAC; a forged source is dropped before
 * routing (so the host never answers it: no reset, no ICMP error to
 * another host) and counted (vm_spoofed_dropped), IPv6 and every other
 * protocol too (vm_other_dropped).  Both tables are installed in one
 * batch and removed together.
 */
#define HOSTFW_VM_PREFIX	"intutic_vm_"

struct hostfw_vm {
	char			 table[64];	/* HOSTFW_VM_PREFIX + id */
	char			 tap[16];	/* IFNAMSIZ */
	struct hostfw_net	 proxy;		/* address on the tap, port */
	/*
	 * Set: TCP to ports 80 and 443 (and redirect[]) from the tap goes to
	 * the transparent listener (the tap's address, its port), DNS to the
	 * filter (chain
	 * redirect: nat, prerouting, -100), and the input chain lets both in.
	 */
	int			 transparent_set;
	struct hostfw_net	 transparent;
	unsigned int		 redirect[HOSTFW_REDIRECT_MAX];	/* as enforce's */
	size_t			 nredirect;
	int			 dns_set;
	struct hostfw_net	 dns;
	struct hostfw_net	 guest;		/* the guest's address, /32 */
	unsigned char		 mac[6];	/* the guest's MAC */
};

int	 hostfw_vm_print(const struct hostfw_vm *vm, FILE *out, char *why,
	    size_t whylen);
/* Fails (nothing changed) when a table is there already. */
int	 hostfw_vm_install(const struct hostfw_vm *vm, char *why,
	    size_t whylen);
/* Both tables: 1: deleted; 0: neither was there; -1 (why). */
int	 hostfw_vm_remove(const char *table, char *why, size_t whylen);
/* 1: one of its tables is there; 0: not; -1: cannot tell (why). */
int	 hostfw_vm_exists(const char *table, char *why, size_t whylen);

#endif /* INTUTIC_HOSTFW_H */
