/*
 * hostfw.c — the table of `intutic enforce` (see hostfw.h), over a
 * netfilter netlink socket with libnftnl.
 *
 * One list of rules, made by fw_rules() from the configuration, is read by
 * both the printer (nft's own listing format, for --dry-run) and the
 * netlink builder; each rule carries a comment that says in words what it
 * does, which `status` reads back from the kernel.  A rule's chain names
 * its family (inet, or netdev for a device's ingress), and a table takes
 * the chains of its family: a microVM's rules fill two tables of one name.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <arpa/inet.h>
#include <errno.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>
#include <libnftnl/udata.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_tuple_common.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include "hostfw.h"

#define FW_RULES_MAX		512	/* rules the list can hold */
#define FW_BATCH_MAX		(1024 * 1024)	/* bytes of one batch */
#define FW_RECV_MAX		(64 * 1024)	/* bytes of one answer */
#define FW_ANSWER_SECONDS	10	/* for the kernel to answer */
#define FW_COMMENT_MAX		128	/* nft's NFTNL_UDATA_COMMENT_MAXLEN */
#define FW_SHOW_MAX		1024	/* rules or counters status reads */

#define FW_ICMP_ADMIN		13	/* ICMP_PKT_FILTERED */
#define FW_ICMPV6_ADMIN		1	/* ICMPV6_ADM_PROHIBITED */

enum fw_chain {
	FW_OUTPUT,
	FW_FORWARD,
	FW_DNS,
	FW_VM_INGRESS,		/* a microVM's: what its tap receives, first */
	FW_VM_INPUT,		/* from its tap to the host */
	FW_VM_FORWARD,		/* and through the host */
	FW_SANDBOX_OUTPUT,	/* what a sandbox container sends */
	FW_REDIRECT,		/* this host's (a container's) TCP, redirected */
	FW_VM_REDIRECT,		/* a microVM's TCP and DNS, redirected */
	FW_CHAIN_COUNT
};

/*
 * The base chains, in the order they are made (and listed).  A netdev
 * chain hooks the device of its table (struct fw_table's dev).  Each
 * accepts what no rule decides, but a sandbox container's, which drops it.
 */
static const struct {
	const char	*name;
	const char	*type;
	int		 family;	/* NFPROTO_INET or NFPROTO_NETDEV */
	unsigned int	 hook;
	const char	*hook_text;
	int		 prio;
	const char	*prio_text;	/* as nft lists it */
	const char	*words;
	int		 drop;		/* policy drop */
} fw_chains[FW_CHAIN_COUNT] = {
	[FW_OUTPUT] = { "output", "filter", NFPROTO_INET, NF_INET_LOCAL_OUT,
	    "output", 0, "filter", "new connections from this host" },
	[FW_FORWARD] = { "forward", "filter", NFPROTO_INET, NF_INET_FORWARD,
	    "forward", 0, "filter", "forwarded traffic (containers, VMs)" },
	[FW_DNS] = { "dns", "nat", NFPROTO_INET, NF_INET_LOCAL_OUT, "output",
	    -100, "-100", "DNS redirected" },
	[FW_VM_INGRESS] = { "ingress", "filter", NFPROTO_NETDEV,
	    NF_NETDEV_INGRESS, "ingress", 0, "filter",
	    "what the microVM sends, before conntrack and routing" },
	[FW_VM_INPUT] = { "input", "filter", NFPROTO_INET, NF_INET_LOCAL_IN,
	    "input", 0, "filter", "from the microVM to this host" },
	[FW_VM_FORWARD] = { "forward", "filter", NFPROTO_INET,
	    NF_INET_FORWARD, "forward", 0, "filter",
	    "from or to the microVM through this host" },
	[FW_SANDBOX_OUTPUT] = { "output", "filter", NFPROTO_INET,
	    NF_INET_LOCAL_OUT, "output", 0, "filter",
	    "what the sandbox sends", 1 },
	[FW_REDIRECT] = { "transparent", "nat", NFPROTO_INET, NF_INET_LOCAL_OUT,
	    "output", -100, "-100", "sent to the proxy's listeners" },
	[FW_VM_REDIRECT] = { "transparent", "nat", NFPROTO_INET,
	    NF_INET_PRE_ROUTING, "prerouting", -100, "-100",
	    "from the microVM, sent to the proxy's listeners" },
};

/* The TCP ports always sent to the transparent listener: the web's. */
static const unsigned int fw_web_ports[] = { 80, 443 };
#define FW_WEB_PORTS	(sizeof(fw_web_ports) / sizeof(fw_web_ports[0]))

size_t
hostfw_redirect_ports(const uint16_t *ports, size_t n,
    unsigned int out[HOSTFW_REDIRECT_MAX])
{
	size_t i, j, k = 0;

	for (i = 0; i < FW_WEB_PORTS + n && k < HOSTFW_REDIRECT_MAX; i++) {
		unsigned int p = i < FW_WEB_PORTS ? fw_web_ports[i] :
		    ports[i - FW_WEB_PORTS];

		for (j = 0; j < k && out[j] != p; j++)
			;
		if (j == k && p != 0)
			out[k++] = p;
	}
	return k;
}

/* The named counters, in the order they are made (and listed). */
static const char *const fw_counters[] = {
	"dns_rejected",
	"reject_ipv4_tcp",
	"reject_ipv4_udp",
	"reject_ipv4_other",
	"reject_ipv6_tcp",
	"reject_ipv6_udp",
	"reject_ipv6_other",
	"forward_ipv4_dropped",
	"forward_ipv6_dropped",
};
#define FW_COUNTER_COUNT (sizeof(fw_counters) / sizeof(fw_counters[0]))

/* Those of a microVM's tables: inet, netdev. */
static const char *const fw_vm_counters[] = {
	"vm_input_dropped",
	"vm_forward_dropped",
};
static const char *const fw_vm_dev_counters[] = {
	"vm_spoofed_dropped",
	"vm_other_dropped",
};

/* A table: its family, its name, its named counters, its device. */
struct fw_table {
	int			 family;	/* NFPROTO_INET, NFPROTO_NETDEV */
	const char		*name;
	const char *const	*counters;
	size_t			 ncounters;
	const char		*dev;	/* netdev: the device its chains hook */
};

#define FW_TABLES_MAX		2	/* tables made from one list */

static const struct fw_table fw_enforce_table = {
	NFPROTO_INET, HOSTFW_TABLE, fw_counters, FW_COUNTER_COUNT, NULL
};

static const struct fw_table fw_sandbox_table = {
	NFPROTO_INET, HOSTFW_TABLE, NULL, 0, NULL
};

enum fw_verdict {
	FW_ACCEPT,
	FW_DROP,
	FW_REJECT_TCP,		/* TCP reset */
	FW_REJECT_ICMP,		/* ICMP admin-prohibited */
	FW_REJECT_ICMPV6,	/* ICMPv6 admin-prohibited */
	FW_REJECT_ICMPX,	/* the one of the packet's family */
	FW_DNAT
};

/* One rule: each match that is set, in this order, then the verdict. */
struct fw_rule {
	enum fw_chain		 chain;
	const char		*iifname;	/* the packet came in there */
	const char		*oifname;	/* it goes out there */
	int			 oif_lo;
	int			 ethertype;	/* 0, ETHERTYPE_IP, ETHERTYPE_ARP */
	const unsigned char	*ether_saddr;	/* the frame's source MAC */
	int			 ct_estrel;	/* established,related */
	int			 ct_reply;	/* in the reply direction */
	int			 skuid_op;	/* 0; 1: the uid's; 2: not */
	int			 nfproto;	/* 0, NFPROTO_IPV4, NFPROTO_IPV6 */
	const struct hostfw_net	*saddr;		/* an address, IPv4 */
	const struct hostfw_net	*daddr;
	const unsigned char	*arp_sha;	/* ARP (Ethernet, IPv4) whose */
	const struct hostfw_net	*arp_spa;	/* sender is this MAC, address */
	int			 l4proto;	/* 0, IPPROTO_TCP, IPPROTO_UDP */
	unsigned int		 dport;
	int			 icmp6type;	/* with nfproto ipv6, l4proto 58 */
	const char		*icmp6name;
	const char		*counter;
	enum fw_verdict		 verdict;
	const struct hostfw_net	*to;		/* FW_DNAT */
	char			 comment[FW_COMMENT_MAX];
};

struct fw_list {
	struct fw_rule	 r[FW_RULES_MAX];
	size_t		 n;
	int		 full;
};

/* The address of n as text (no prefix, no port). */
static const char *
fw_addr_text(const struct hostfw_net *n, char *buf, size_t len)
{
	if (inet_ntop(n->family, n->addr, buf, (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
	return buf;
}

/* n as CIDR[:PORT] in words: "10.0.0.0/8", "[fd00::1]:53". */
static const char *
fw_net_text(const struct hostfw_net *n, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN], pfx[8] = "";
	unsigned int full = n->family == AF_INET ? 32 : 128;

	fw_addr_text(n, a, sizeof(a));
	if (n->prefix != full)
		snprintf(pfx, sizeof(pfx), "/%u", n->prefix);
	if (n->port == 0)
		snprintf(buf, len, "%s%s", a, pfx);
	else if (n->family == AF_INET6)
		snprintf(buf, len, "[%s%s]:%u", a, pfx, n->port);
	else
		snprintf(buf, len, "%s%s:%u", a, pfx, n->port);
	return buf;
}

/* A MAC as text: "02:49:0a:1b:2c:3d". */
static const char *
fw_mac_text(const unsigned char *mac, char *buf, size_t len)
{
	snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1],
	    mac[2], mac[3], mac[4], mac[5]);
	return buf;
}

static struct fw_rule *
fw_add(struct fw_list *l, enum fw_chain chain, enum fw_verdict v,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static struct fw_rule *
fw_add(struct fw_list *l, enum fw_chain chain, enum fw_verdict v,
    const char *fmt, ...)
{
	static struct fw_rule spare;
	struct fw_rule *r;
	va_list ap;

	if (l->n == FW_RULES_MAX) {
		l->full = 1;
		r = &spare;	/* written, never used */
	} else
		r = &l->r[l->n++];
	memset(r, 0, sizeof(*r));
	r->chain = chain;
	r->verdict = v;
	va_start(ap, fmt);
	vsnprintf(r->comment, sizeof(r->comment), fmt, ap);
	va_end(ap);
	return r;
}

static int
fw_nfproto(const struct hostfw_net *n)
{
	return n->family == AF_INET ? NFPROTO_IPV4 : NFPROTO_IPV6;
}

/* Accept TCP and UDP (or all, with no port) to n in chain. */
static void
fw_accept_net(struct fw_list *l, enum fw_chain chain,
    const struct hostfw_net *n, const char *what)
{
	static const int protos[] = { IPPROTO_TCP, IPPROTO_UDP };
	struct fw_rule *r;
	char t[INET6_ADDRSTRLEN + 16];
	size_t i;

	fw_net_text(n, t, sizeof(t));
	if (n->port == 0) {
		r = fw_add(l, chain, FW_ACCEPT, "%s %s", what, t);
		r->nfproto = fw_nfproto(n);
		r->daddr = n;
		return;
	}
	for (i = 0; i < sizeof(protos) / sizeof(protos[0]); i++) {
		r = fw_add(l, chain, FW_ACCEPT, "%s %s %s", what, t,
		    protos[i] == IPPROTO_TCP ? "tcp" : "udp");
		r->nfproto = fw_nfproto(n);
		r->daddr = n;
		r->l4proto = protos[i];
		r->dport = n->port;
	}
}

/* IPv6 neighbour discovery, what the host's own stack sends of it. */
static const struct {
	int		 type;
	const char	*name;
	int		 neighbour;	/* what reaching a next hop needs */
} fw_nd[] = {
	{ 133, "nd-router-solicit", 0 },
	{ 135, "nd-neighbor-solicit", 1 },
	{ 136, "nd-neighbor-advert", 1 },
	{ 143, "mld2-listener-report", 0 },
};

/* Accept neighbour discovery in chain, a rule a type: all, or neighbour's. */
static void
fw_accept_nd(struct fw_list *l, enum fw_chain chain, int all)
{
	struct fw_rule *r;
	size_t i;

	for (i = 0; i < sizeof(fw_nd) / sizeof(fw_nd[0]); i++) {
		if (!all && !fw_nd[i].neighbour)
			continue;
		r = fw_add(l, chain, FW_ACCEPT, "IPv6 neighbour discovery: %s",
		    fw_nd[i].name);
		r->nfproto = NFPROTO_IPV6;
		r->l4proto = IPPROTO_ICMPV6;
		r->icmp6type = fw_nd[i].type;
		r->icmp6name = fw_nd[i].name;
	}
}

/*
 * DNAT rules in chain: TCP to the ports[0..n) (none: 80 and 443) to the
 * transparent listener t, and (dns not NULL) DNS over UDP and TCP to the
 * filter; each for packets of their family, and first matching iifname
 * (not NULL) and skuid_op (as fw_rule's).
 */
static void
fw_redirect(struct fw_list *l, enum fw_chain chain, const char *iifname,
    int skuid_op, const struct hostfw_net *t, const struct hostfw_net *dns,
    const unsigned int *ports, size_t n)
{
	static const int dnsprotos[] = { IPPROTO_UDP, IPPROTO_TCP };
	struct fw_rule *r;
	char to[INET6_ADDRSTRLEN + 16];
	size_t i;

	for (i = 0; dns != NULL && i < sizeof(dnsprotos) / sizeof(dnsprotos[0]);
	    i++) {
		r = fw_add(l, chain, FW_DNAT, "DNS over %s: to the DNS filter "
		    "at %s", dnsprotos[i] == IPPROTO_UDP ? "udp" : "tcp",
		    fw_net_text(dns, to, sizeof(to)));
		r->iifname = iifname;
		r->skuid_op = skuid_op;
		r->nfproto = fw_nfproto(dns);
		r->l4proto = dnsprotos[i];
		r->dport = 53;
		r->to = dns;
	}
	if (n == 0) {
		ports = fw_web_ports;
		n = FW_WEB_PORTS;
	}
	for (i = 0; i < n; i++) {
		r = fw_add(l, chain, FW_DNAT, "TCP to port %u: to the "
		    "transparent listener at %s", ports[i],
		    fw_net_text(t, to, sizeof(to)));
		r->iifname = iifname;
		r->skuid_op = skuid_op;
		r->nfproto = fw_nfproto(t);
		r->l4proto = IPPROTO_TCP;
		r->dport = ports[i];
		r->to = t;
	}
}

/* Accept TCP to a listener of the proxy (n: its address and port). */
static struct fw_rule *
fw_accept_listener(struct fw_list *l, enum fw_chain chain,
    const struct hostfw_net *n, const char *what)
{
	struct fw_rule *r;
	char t[INET6_ADDRSTRLEN + 16];

	r = fw_add(l, chain, FW_ACCEPT, "%s at %s", what,
	    fw_net_text(n, t, sizeof(t)));
	r->nfproto = fw_nfproto(n);
	r->daddr = n;
	r->l4proto = IPPROTO_TCP;
	r->dport = n->port;
	return r;
}

/* The rules cfg makes, in order.  Returns -1 when they do not fit. */
static int
fw_rules(const struct hostfw_config *cfg, struct fw_list *l)
{
	static const struct {
		int		 nfproto;
		int		 l4proto;
		const char	*counter;
		enum fw_verdict	 v;
		const char	*words;
	} rejects[] = {
		{ NFPROTO_IPV4, IPPROTO_TCP, "reject_ipv4_tcp", FW_REJECT_TCP,
		    "everything else, IPv4 TCP: reset" },
		{ NFPROTO_IPV4, IPPROTO_UDP, "reject_ipv4_udp", FW_REJECT_ICMP,
		    "everything else, IPv4 UDP: ICMP admin-prohibited" },
		{ NFPROTO_IPV4, 0, "reject_ipv4_other", FW_REJECT_ICMP,
		    "everything else, IPv4: ICMP admin-prohibited" },
		{ NFPROTO_IPV6, IPPROTO_TCP, "reject_ipv6_tcp", FW_REJECT_TCP,
		    "everything else, IPv6 TCP: reset" },
		{ NFPROTO_IPV6, IPPROTO_UDP, "reject_ipv6_udp",
		    FW_REJECT_ICMPV6,
		    "everything else, IPv6 UDP: ICMPv6 admin-prohibited" },
		{ NFPROTO_IPV6, 0, "reject_ipv6_other", FW_REJECT_ICMPV6,
		    "everything else, IPv6: ICMPv6 admin-prohibited" },
	};
	static const int dnsprotos[] = { IPPROTO_UDP, IPPROTO_TCP };
	struct fw_rule *r;
	char t[INET6_ADDRSTRLEN + 16];
	size_t i;

	memset(l, 0, sizeof(*l));

	/* output */
	r = fw_add(l, FW_OUTPUT, FW_ACCEPT, "loopback");
	r->oif_lo = 1;
	/*
	 * Only replies: what this host answers on connections made to it.  A
	 * packet that goes on a connection made from here is judged by who
	 * sends it, as a new one is, so that a flow opened before the table
	 * (or one that took over the proxy's port and its tracked flow) ends
	 * at its next packet.
	 */
	r = fw_add(l, FW_OUTPUT, FW_ACCEPT, "replies of connections made to "
	    "this host, and their related traffic");
	r->ct_estrel = 1;
	r->ct_reply = 1;
	r = fw_add(l, FW_OUTPUT, FW_ACCEPT, "the proxy's user (uid %lu)",
	    (unsigned long)cfg->uid);
	r->skuid_op = 1;
	/* The kernel's own neighbour discovery has no socket, no owner. */
	fw_accept_nd(l, FW_OUTPUT, 1);
	if (cfg->dns_to_set)
		fw_accept_net(l, FW_OUTPUT, &cfg->dns_to,
		    "the DNS filter at");
	for (i = 0; i < sizeof(dnsprotos) / sizeof(dnsprotos[0]); i++) {
		r = fw_add(l, FW_OUTPUT, dnsprotos[i] == IPPROTO_UDP ?
		    FW_REJECT_ICMPX : FW_REJECT_TCP, "DNS over %s from anyone "
		    "else: rejected", dnsprotos[i] == IPPROTO_UDP ?
		    "udp" : "tcp");
		r->l4proto = dnsprotos[i];
		r->dport = 53;
		r->counter = "dns_rejected";
	}
	for (i = 0; i < cfg->nproxy; i++)
		fw_accept_listener(l, FW_OUTPUT, &cfg->proxy[i], "the proxy");
	if (cfg->transparent_set)
		fw_accept_listener(l, FW_OUTPUT, &cfg->transparent,
		    "the transparent listener");
	for (i = 0; i < cfg->nallow; i++)
		fw_accept_net(l, FW_OUTPUT, &cfg->allow[i], "allowed:");
	for (i = 0; i < sizeof(rejects) / sizeof(rejects[0]); i++) {
		r = fw_add(l, FW_OUTPUT, rejects[i].v, "%s", rejects[i].words);
		r->nfproto = rejects[i].nfproto;
		r->l4proto = rejects[i].l4proto;
		r->counter = rejects[i].counter;
	}

	/* forward: the same, for what containers send */
	r = fw_add(l, FW_FORWARD, FW_ACCEPT,
	    "replies and related traffic of accepted connections");
	r->ct_estrel = 1;
	r->ct_reply = 1;
	for (i = 0; i < cfg->nproxy; i++)
		fw_accept_listener(l, FW_FORWARD, &cfg->proxy[i], "the proxy");
	r = fw_add(l, FW_FORWARD, FW_DROP, "everything else, IPv4: dropped");
	r->nfproto = NFPROTO_IPV4;
	r->counter = "forward_ipv4_dropped";
	r = fw_add(l, FW_FORWARD, FW_DROP, "everything else, IPv6: dropped");
	r->nfproto = NFPROTO_IPV6;
	r->counter = "forward_ipv6_dropped";

	/* dns: the queries of everyone but the proxy, to the DNS filter */
	if (cfg->dns_to_set) {
		for (i = 0; i < sizeof(dnsprotos) / sizeof(dnsprotos[0]);
		    i++) {
			r = fw_add(l, FW_DNS, FW_DNAT, "DNS over %s from "
			    "anyone else: to %s", dnsprotos[i] ==
			    IPPROTO_UDP ? "udp" : "tcp",
			    fw_net_text(&cfg->dns_to, t, sizeof(t)));
			r->skuid_op = 2;
			r->nfproto = fw_nfproto(&cfg->dns_to);
			r->l4proto = dnsprotos[i];
			r->dport = 53;
			r->to = &cfg->dns_to;
		}
	}

	/*
	 * redirect: the web's TCP of everyone but the proxy, to the
	 * transparent listener (loopback's stays where it goes)
	 */
	if (cfg->transparent_set) {
		r = fw_add(l, FW_REDIRECT, FW_ACCEPT, "loopback: not "
		    "redirected");
		r->oif_lo = 1;
		fw_redirect(l, FW_REDIRECT, NULL, 2, &cfg->transparent, NULL,
		    cfg->redirect, cfg->nredirect);
	}
	return l->full ? -1 : 0;
}

/*
 * The rules of a microVM's tables: from its tap, only what the guest sends
 * as itself, and of that only what goes to the proxy.
 */
static int
fw_vm_rules(const struct hostfw_vm *vm, struct fw_list *l)
{
	struct fw_rule *r;
	char g[INET6_ADDRSTRLEN + 16], m[18];

	memset(l, 0, sizeof(*l));
	fw_net_text(&vm->guest, g, sizeof(g));
	fw_mac_text(vm->mac, m, sizeof(m));
	/*
	 * ingress: a forged source is dropped here, before conntrack and
	 * routing, so that the host never answers it (a reset or a SYN-ACK
	 * to another host, an ICMP error quoting the guest's bytes): each
	 * would carry what the guest chose out of the sandbox.
	 */
	r = fw_add(l, FW_VM_INGRESS, FW_ACCEPT, "IPv4 from the guest (%s, "
	    "MAC %s): on to the input and forward chains", g, m);
	r->ethertype = ETHERTYPE_IP;
	r->ether_saddr = vm->mac;
	r->saddr = &vm->guest;
	r = fw_add(l, FW_VM_INGRESS, FW_ACCEPT, "ARP from the guest, for its "
	    "own address and MAC");
	r->ethertype = ETHERTYPE_ARP;
	r->ether_saddr = vm->mac;
	r->arp_sha = vm->mac;
	r->arp_spa = &vm->guest;
	r = fw_add(l, FW_VM_INGRESS, FW_DROP, "IPv4 from another address or "
	    "MAC (a forged source): dropped before routing, never answered");
	r->ethertype = ETHERTYPE_IP;
	r->counter = "vm_spoofed_dropped";
	r = fw_add(l, FW_VM_INGRESS, FW_DROP, "ARP claiming another address "
	    "or MAC: dropped");
	r->ethertype = ETHERTYPE_ARP;
	r->counter = "vm_spoofed_dropped";
	r = fw_add(l, FW_VM_INGRESS, FW_DROP, "everything else (IPv6, other "
	    "protocols): dropped");
	r->counter = "vm_other_dropped";

	r = fw_add(l, FW_VM_INPUT, FW_ACCEPT, "replies and related traffic "
	    "of accepted connections (the launcher's ssh, the proxy's answers)");
	r->iifname = vm->tap;
	r->ct_estrel = 1;
	r = fw_accept_listener(l, FW_VM_INPUT, &vm->proxy, "the proxy");
	r->iifname = vm->tap;
	if (vm->transparent_set) {
		r = fw_accept_listener(l, FW_VM_INPUT, &vm->transparent,
		    "the transparent listener");
		r->iifname = vm->tap;
		fw_redirect(l, FW_VM_REDIRECT, vm->tap, 0, &vm->transparent,
		    vm->dns_set ? &vm->dns : NULL, vm->redirect, vm->nredirect);
	}
	if (vm->dns_set) {
		size_t before = l->n, i;

		fw_accept_net(l, FW_VM_INPUT, &vm->dns, "the DNS filter at");
		for (i = before; i < l->n; i++)
			l->r[i].iifname = vm->tap;
	}
	r = fw_add(l, FW_VM_INPUT, FW_DROP, "everything else from the "
	    "microVM: dropped");
	r->iifname = vm->tap;
	r->counter = "vm_input_dropped";
	r = fw_add(l, FW_VM_FORWARD, FW_DROP, "from the microVM to anywhere "
	    "else: dropped");
	r->iifname = vm->tap;
	r->counter = "vm_forward_dropped";
	r = fw_add(l, FW_VM_FORWARD, FW_DROP, "from anywhere else to the "
	    "microVM: dropped");
	r->oifname = vm->tap;
	r->counter = "vm_forward_dropped";
	return l->full ? -1 : 0;
}

/*
 * The rules of a sandbox container's table: loopback, the replies of what
 * it opened, the proxy, the one resolver and the allowed networks; the
 * chain drops the rest.
 */
static int
fw_sandbox_rules(const struct hostfw_sandbox *sb, struct fw_list *l)
{
	struct fw_rule *r;
	char t[INET6_ADDRSTRLEN + 16];
	size_t i;
	int v6;

	memset(l, 0, sizeof(*l));
	r = fw_add(l, FW_SANDBOX_OUTPUT, FW_ACCEPT, "loopback");
	r->oif_lo = 1;
	r = fw_add(l, FW_SANDBOX_OUTPUT, FW_ACCEPT,
	    "replies and related traffic of accepted connections");
	r->ct_estrel = 1;
	fw_accept_listener(l, FW_SANDBOX_OUTPUT, &sb->proxy, "the proxy");
	v6 = sb->proxy.family == AF_INET6;
	if (sb->transparent_set) {
		fw_accept_listener(l, FW_SANDBOX_OUTPUT, &sb->transparent,
		    "the transparent listener");
		v6 |= sb->transparent.family == AF_INET6;
	}
	if (sb->dns_set) {
		fw_accept_net(l, FW_SANDBOX_OUTPUT, &sb->dns, "the resolver");
		v6 |= sb->dns.family == AF_INET6;
	}
	for (i = 0; i < sb->nallow; i++) {
		fw_accept_net(l, FW_SANDBOX_OUTPUT, &sb->allow[i], "allowed:");
		v6 |= sb->allow[i].family == AF_INET6;
	}
	/* an IPv6 next hop needs neighbour discovery (IPv4's ARP is not IP) */
	if (v6)
		fw_accept_nd(l, FW_SANDBOX_OUTPUT, 0);
	/*
	 * redirect, before the output chain sees it: the web's TCP to the
	 * transparent listener and every DNS query to the filter, but what
	 * stays inside and what goes to the proxy already
	 */
	if (sb->transparent_set) {
		r = fw_add(l, FW_REDIRECT, FW_ACCEPT, "loopback: not "
		    "redirected");
		r->oif_lo = 1;
		r = fw_accept_listener(l, FW_REDIRECT, &sb->proxy, "the proxy");
		snprintf(r->comment, sizeof(r->comment), "the proxy at %s: "
		    "not redirected", fw_net_text(&sb->proxy, t, sizeof(t)));
		fw_redirect(l, FW_REDIRECT, NULL, 0, &sb->transparent,
		    sb->dns_set ? &sb->dns : NULL, NULL, 0);
	}
	return l->full ? -1 : 0;
}

static int
fw_chain_used(const struct fw_list *l, enum fw_chain c)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (l->r[i].chain == c)
			return 1;
	return 0;
}

/* --- the text, as `nft list table` writes it --------------------------------- */

/* "ip saddr 10.0.0.2 ", "ip6 daddr fd00::/8 " */
static void
fw_print_addr(const char *which, const struct hostfw_net *n, FILE *out)
{
	char a[INET6_ADDRSTRLEN];
	unsigned int full = n->family == AF_INET ? 32 : 128;

	fprintf(out, "%s %s %s", n->family == AF_INET ? "ip" : "ip6", which,
	    fw_addr_text(n, a, sizeof(a)));
	if (n->prefix != full)
		fprintf(out, "/%u", n->prefix);
	fputc(' ', out);
}

static void
fw_print_rule(const struct fw_rule *r, uid_t uid, FILE *out)
{
	const char *proto;
	char a[INET6_ADDRSTRLEN], m[18];

	fputs("\t\t", out);
	if (r->iifname != NULL)
		fprintf(out, "iifname \"%s\" ", r->iifname);
	if (r->oifname != NULL)
		fprintf(out, "oifname \"%s\" ", r->oifname);
	if (r->oif_lo)
		fputs("oif \"lo\" ", out);
	if (r->ethertype != 0)
		fprintf(out, "meta protocol %s ", r->ethertype == ETHERTYPE_IP ?
		    "ip" : "arp");
	if (r->ether_saddr != NULL)
		fprintf(out, "ether saddr %s ", fw_mac_text(r->ether_saddr, m,
		    sizeof(m)));
	if (r->ct_estrel)
		fputs("ct state established,related ", out);
	if (r->ct_reply)
		fputs("ct direction reply ", out);
	if (r->skuid_op != 0)
		fprintf(out, "meta skuid %s%lu ", r->skuid_op == 2 ? "!= " : "",
		    (unsigned long)uid);
	if (r->icmp6type != 0)
		fprintf(out, "icmpv6 type %s ", r->icmp6name);
	else if (r->nfproto != 0 && r->daddr == NULL && r->saddr == NULL)
		fprintf(out, "meta nfproto %s ", r->nfproto == NFPROTO_IPV4 ?
		    "ipv4" : "ipv6");
	if (r->saddr != NULL)
		fw_print_addr("saddr", r->saddr, out);
	if (r->daddr != NULL)
		fw_print_addr("daddr", r->daddr, out);
	if (r->arp_sha != NULL)
		fprintf(out, "arp htype 1 arp ptype ip arp hlen 6 arp plen 4 "
		    "arp saddr ether %s arp saddr ip %s ", fw_mac_text(
		    r->arp_sha, m, sizeof(m)), fw_addr_text(r->arp_spa, a,
		    sizeof(a)));
	proto = r->l4proto == IPPROTO_TCP ? "tcp" : "udp";
	if (r->icmp6type != 0)
		;
	else if (r->l4proto != 0 && r->dport != 0)
		fprintf(out, "%s dport %u ", proto, r->dport);
	else if (r->l4proto != 0)
		fprintf(out, "meta l4proto %s ", proto);
	if (r->counter != NULL)
		fprintf(out, "counter name \"%s\" ", r->counter);
	switch (r->verdict) {
	case FW_ACCEPT:
		fputs("accept", out);
		break;
	case FW_DROP:
		fputs("drop", out);
		break;
	case FW_REJECT_TCP:
		fputs("reject with tcp reset", out);
		break;
	case FW_REJECT_ICMP:
		fputs("reject with icmp admin-prohibited", out);
		break;
	case FW_REJECT_ICMPV6:
		fputs("reject with icmpv6 admin-prohibited", out);
		break;
	case FW_REJECT_ICMPX:
		fputs("reject with icmpx admin-prohibited", out);
		break;
	case FW_DNAT:
		fw_addr_text(r->to, a, sizeof(a));
		if (r->to->family == AF_INET)
			fprintf(out, "dnat ip to %s:%u", a, r->to->port);
		else
			fprintf(out, "dnat ip6 to [%s]:%u", a, r->to->port);
		break;
	}
	fprintf(out, " comment \"%s\"\n", r->comment);
}

static const char *
fw_family_text(int family)
{
	return family == NFPROTO_NETDEV ? "netdev" : HOSTFW_FAMILY_NAME;
}

/* Writes table t holding its rules of l as `nft list table` lists it. */
static void
fw_print_table(const struct fw_table *t, const struct fw_list *l, uid_t uid,
    FILE *out)
{
	char dev[IFNAMSIZ + 16] = "";
	size_t i, c;
	int first = 1;

	if (t->dev != NULL)
		snprintf(dev, sizeof(dev), " device \"%s\"", t->dev);
	fprintf(out, "table %s %s {\n", fw_family_text(t->family), t->name);
	for (i = 0; i < t->ncounters; i++) {
		fprintf(out, "%s\tcounter %s {\n\t\tpackets 0 bytes 0\n\t}\n",
		    first ? "" : "\n", t->counters[i]);
		first = 0;
	}
	for (c = 0; c < FW_CHAIN_COUNT; c++) {
		if (fw_chains[c].family != t->family ||
		    !fw_chain_used(l, (enum fw_chain)c))
			continue;
		fprintf(out, "%s\tchain %s {\n\t\ttype %s hook %s%s priority "
		    "%s; policy %s;\n", first ? "" : "\n",
		    fw_chains[c].name, fw_chains[c].type,
		    fw_chains[c].hook_text, dev, fw_chains[c].prio_text,
		    fw_chains[c].drop ? "drop" : "accept");
		first = 0;
		for (i = 0; i < l->n; i++) {
			if (l->r[i].chain != c)
				continue;
			fw_print_rule(&l->r[i], uid, out);
		}
		fputs("\t}\n", out);
	}
	fputs("}\n", out);
}

/* A list for rules, the caller's to free; NULL (why). */
static struct fw_list *
fw_list_new(char *why, size_t whylen)
{
	struct fw_list *l;

	if ((l = malloc(sizeof(*l))) == NULL)
		snprintf(why, whylen, "out of memory");
	return l;
}

/* The rules of cfg, the caller's to free; NULL (why). */
static struct fw_list *
fw_make(const struct hostfw_config *cfg, char *why, size_t whylen)
{
	struct fw_list *l;

	if ((l = fw_list_new(why, whylen)) == NULL)
		return NULL;
	if (fw_rules(cfg, l) != 0) {
		snprintf(why, whylen, "more than %d rules", FW_RULES_MAX);
		free(l);
		return NULL;
	}
	return l;
}

int
hostfw_print(const struct hostfw_config *cfg, FILE *out, char *why,
    size_t whylen)
{
	struct fw_list *l;

	if ((l = fw_make(cfg, why, whylen)) == NULL)
		return -1;
	fw_print_table(&fw_enforce_table, l, cfg->uid, out);
	free(l);
	return 0;
}

int
hostfw_sandbox_print(const struct hostfw_sandbox *sb, FILE *out, char *why,
    size_t whylen)
{
	struct fw_list *l;

	if ((l = fw_list_new(why, whylen)) == NULL)
		return -1;
	if (fw_sandbox_rules(sb, l) != 0) {
		snprintf(why, whylen, "more than %d rules", FW_RULES_MAX);
		free(l);
		return -1;
	}
	fw_print_table(&fw_sandbox_table, l, 0, out);
	free(l);
	return 0;
}

/* --- the netlink side ---------------------------------------------------------- */

/* A netfilter netlink socket with a bounded wait for answers. */
static struct mnl_socket *
fw_open(char *why, size_t whylen)
{
	struct mnl_socket *nl;
	struct timeval tv = { FW_ANSWER_SECONDS, 0 };

	if ((nl = mnl_socket_open(NETLINK_NETFILTER)) == NULL ||
	    mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0 ||
	    setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &tv,
	    sizeof(tv)) != 0) {
		snprintf(why, whylen, "cannot open a netfilter netlink "
		    "socket: %s", strerror(errno));
		if (nl != NULL)
			mnl_socket_close(nl);
		return NULL;
	}
	return nl;
}

static void
fw_errno_text(int e, const char *what, char *why, size_t whylen)
{
	const char *hint = "";

	if (e == EPERM)
		hint = " (this needs CAP_NET_ADMIN)";
	else if (e == EOPNOTSUPP || e == EPROTONOSUPPORT || e == ENOENT ||
	    e == EAFNOSUPPORT)
		hint = " (no nftables support in this kernel?)";
	snprintf(why, whylen, "%s: %s%s", what, strerror(e), hint);
}

static int
fw_expr(struct nftnl_rule *r, struct nftnl_expr *e)
{
	if (e == NULL)
		return -1;
	nftnl_rule_add_expr(r, e);
	return 0;
}

static int
fw_meta(struct nftnl_rule *r, uint32_t key)
{
	struct nftnl_expr *e;

	if ((e = nftnl_expr_alloc("meta")) == NULL)
		return -1;
	nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
	nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, NFT_REG_1);
	return fw_expr(r, e);
}

static int
fw_cmp(struct nftnl_rule *r, uint32_t op, const void *data, uint32_t len)
{
	struct nftnl_expr *e;

	if ((e = nftnl_expr_alloc("cmp")) == NULL)
		return -1;
	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, op);
	nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
	return fw_expr(r, e);
}

static int
fw_payload(struct nftnl_rule *r, uint32_t base, uint32_t off, uint32_t len)
{
	struct nftnl_expr *e;

	if ((e = nftnl_expr_alloc("payload")) == NULL)
		return -1;
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, off);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
	return fw_expr(r, e);
}

static int
fw_bitwise(struct nftnl_rule *r, const void *mask, uint32_t len)
{
	static const unsigned char zero[16];
	struct nftnl_expr *e;

	if ((e = nftnl_expr_alloc("bitwise")) == NULL)
		return -1;
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, len);
	nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, mask, len);
	nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, zero, len);
	return fw_expr(r, e);
}

static int
fw_ct_estrel(struct nftnl_rule *r)
{
	struct nftnl_expr *e;
	uint32_t mask = NF_CT_STATE_BIT(IP_CT_ESTABLISHED) |
	    NF_CT_STATE_BIT(IP_CT_RELATED), zero = 0;

	if ((e = nftnl_expr_alloc("ct")) == NULL)
		return -1;
	nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, NFT_CT_STATE);
	nftnl_expr_set_u32(e, NFTNL_EXPR_CT_DREG, NFT_REG_1);
	if (fw_expr(r, e) != 0 || fw_bitwise(r, &mask, sizeof(mask)) != 0)
		return -1;
	return fw_cmp(r, NFT_CMP_NEQ, &zero, sizeof(zero));
}

/* ct direction reply: the packet goes the other way than the first one. */
static int
fw_ct_reply(struct nftnl_rule *r)
{
	struct nftnl_expr *e;
	uint8_t dir = IP_CT_DIR_REPLY;

	if ((e = nftnl_expr_alloc("ct")) == NULL)
		return -1;
	nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, NFT_CT_DIRECTION);
	nftnl_expr_set_u32(e, NFTNL_EXPR_CT_DREG, NFT_REG_1);
	if (fw_expr(r, e) != 0)
		return -1;
	return fw_cmp(r, NFT_CMP_EQ, &dir, sizeof(dir));
}

/* An interface's name, as nft compares it: IFNAMSIZ bytes, NUL-padded. */
static int
fw_ifname(struct nftnl_rule *r, uint32_t key, const char *name)
{
	char padded[IFNAMSIZ];

	memset(padded, 0, sizeof(padded));
	if (strlen(name) >= sizeof(padded))
		return -1;
	memcpy(padded, name, strlen(name));
	if (fw_meta(r, key) != 0)
		return -1;
	return fw_cmp(r, NFT_CMP_EQ, padded, sizeof(padded));
}

/* The source or destination address, or the network: the address masked. */
static int
fw_addr(struct nftnl_rule *r, const struct hostfw_net *n, int src)
{
	unsigned char mask[16];
	uint32_t len = n->family == AF_INET ? 4 : 16;
	uint32_t off;	/* in the header */
	unsigned int i;

	if (n->family == AF_INET)
		off = src ? 12 : 16;
	else
		off = src ? 8 : 24;

	if (fw_payload(r, NFT_PAYLOAD_NETWORK_HEADER, off, len) != 0)
		return -1;
	if (n->prefix != len * 8) {
		memset(mask, 0, sizeof(mask));
		for (i = 0; i < n->prefix; i++)
			mask[i / 8] |= (unsigned char)(0x80 >> (i % 8));
		if (fw_bitwise(r, mask, len) != 0)
			return -1;
	}
	return fw_cmp(r, NFT_CMP_EQ, n->addr, len);
}

/*
 * An ARP packet for Ethernet and IPv4 whose sender (hardware and protocol
 * address, bytes 8 to 17 of the header) is mac and n.
 */
static int
fw_arp_sender(struct nftnl_rule *r, const unsigned char *mac,
    const struct hostfw_net *n)
{
	/* htype 1 (Ethernet), ptype 0x0800 (IPv4), hlen 6, plen 4 */
	static const unsigned char eth_ipv4[6] = { 0, 1, 8, 0, 6, 4 };
	unsigned char sender[10];

	memcpy(sender, mac, 6);
	memcpy(sender + 6, n->addr, 4);
	if (fw_payload(r, NFT_PAYLOAD_NETWORK_HEADER, 0, sizeof(eth_ipv4)) !=
	    0 || fw_cmp(r, NFT_CMP_EQ, eth_ipv4, sizeof(eth_ipv4)) != 0)
		return -1;
	if (fw_payload(r, NFT_PAYLOAD_NETWORK_HEADER, 8, sizeof(sender)) != 0)
		return -1;
	return fw_cmp(r, NFT_CMP_EQ, sender, sizeof(sender));
}

static int
fw_verdict(struct nftnl_rule *r, int verdict)
{
	struct nftnl_expr *e;

	if ((e = nftnl_expr_alloc("immediate")) == NULL)
		return -1;
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, (uint32_t)verdict);
	return fw_expr(r, e);
}

static int
fw_reject(struct nftnl_rule *r, uint32_t type, uint8_t code)
{
	struct nftnl_expr *e;

	if ((e = nftnl_expr_alloc("reject")) == NULL)
		return -1;
	nftnl_expr_set_u32(e, NFTNL_EXPR_REJECT_TYPE, type);
	nftnl_expr_set_u8(e, NFTNL_EXPR_REJECT_CODE, code);
	return fw_expr(r, e);
}

static int
fw_dnat(struct nftnl_rule *r, const struct hostfw_net *to)
{
	struct nftnl_expr *e;
	uint16_t port = htons((uint16_t)to->port);

	if ((e = nftnl_expr_alloc("immediate")) == NULL)
		return -1;
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_1);
	nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, to->addr,
	    to->family == AF_INET ? 4 : 16);
	if (fw_expr(r, e) != 0 || (e = nftnl_expr_alloc("immediate")) == NULL)
		return -1;
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_2);
	nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, &port, sizeof(port));
	if (fw_expr(r, e) != 0 || (e = nftnl_expr_alloc("nat")) == NULL)
		return -1;
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_TYPE, NFT_NAT_DNAT);
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_FAMILY, (uint32_t)fw_nfproto(to));
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_ADDR_MIN, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_PROTO_MIN, NFT_REG_2);
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_FLAGS,
	    NF_NAT_RANGE_PROTO_SPECIFIED);
	return fw_expr(r, e);
}

/* The expressions of one rule, in the order fw_print_rule() writes them. */
static int
fw_build_exprs(struct nftnl_rule *nr, const struct fw_rule *r, uid_t uid,
    uint32_t lo)
{
	struct nftnl_expr *e;
	uint32_t u = (uint32_t)uid;
	uint16_t port = htons((uint16_t)r->dport);
	uint16_t ethertype = htons((uint16_t)r->ethertype);
	uint8_t b;

	if (r->iifname != NULL && fw_ifname(nr, NFT_META_IIFNAME,
	    r->iifname) != 0)
		return -1;
	if (r->oifname != NULL && fw_ifname(nr, NFT_META_OIFNAME,
	    r->oifname) != 0)
		return -1;
	if (r->oif_lo && (fw_meta(nr, NFT_META_OIF) != 0 ||
	    fw_cmp(nr, NFT_CMP_EQ, &lo, sizeof(lo)) != 0))
		return -1;
	if (r->ethertype != 0 && (fw_meta(nr, NFT_META_PROTOCOL) != 0 ||
	    fw_cmp(nr, NFT_CMP_EQ, &ethertype, sizeof(ethertype)) != 0))
		return -1;
	/* the source MAC: bytes 6-11 of the Ethernet header */
	if (r->ether_saddr != NULL && (fw_payload(nr, NFT_PAYLOAD_LL_HEADER,
	    6, 6) != 0 || fw_cmp(nr, NFT_CMP_EQ, r->ether_saddr, 6) != 0))
		return -1;
	if (r->ct_estrel && fw_ct_estrel(nr) != 0)
		return -1;
	if (r->ct_reply && fw_ct_reply(nr) != 0)
		return -1;
	if (r->skuid_op != 0 && (fw_meta(nr, NFT_META_SKUID) != 0 ||
	    fw_cmp(nr, r->skuid_op == 2 ? NFT_CMP_NEQ : NFT_CMP_EQ, &u,
	    sizeof(u)) != 0))
		return -1;
	if (r->nfproto != 0) {
		b = (uint8_t)r->nfproto;
		if (fw_meta(nr, NFT_META_NFPROTO) != 0 ||
		    fw_cmp(nr, NFT_CMP_EQ, &b, sizeof(b)) != 0)
			return -1;
	}
	if (r->saddr != NULL && fw_addr(nr, r->saddr, 1) != 0)
		return -1;
	if (r->daddr != NULL && fw_addr(nr, r->daddr, 0) != 0)
		return -1;
	if (r->arp_sha != NULL && fw_arp_sender(nr, r->arp_sha, r->arp_spa) !=
	    0)
		return -1;
	if (r->l4proto != 0) {
		b = (uint8_t)r->l4proto;
		if (fw_meta(nr, NFT_META_L4PROTO) != 0 ||
		    fw_cmp(nr, NFT_CMP_EQ, &b, sizeof(b)) != 0)
			return -1;
		b = (uint8_t)r->icmp6type;
		if (r->icmp6type != 0 && (fw_payload(nr,
		    NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1) != 0 ||
		    fw_cmp(nr, NFT_CMP_EQ, &b, sizeof(b)) != 0))
			return -1;
		/* the destination port: bytes 2-3 of TCP and UDP alike */
		if (r->dport != 0 && (fw_payload(nr,
		    NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2) != 0 ||
		    fw_cmp(nr, NFT_CMP_EQ, &port, sizeof(port)) != 0))
			return -1;
	}
	if (r->counter != NULL) {
		if ((e = nftnl_expr_alloc("objref")) == NULL)
			return -1;
		nftnl_expr_set_u32(e, NFTNL_EXPR_OBJREF_IMM_TYPE,
		    NFT_OBJECT_COUNTER);
		nftnl_expr_set_str(e, NFTNL_EXPR_OBJREF_IMM_NAME, r->counter);
		if (fw_expr(nr, e) != 0)
			return -1;
	}
	switch (r->verdict) {
	case FW_ACCEPT:
		return fw_verdict(nr, NF_ACCEPT);
	case FW_DROP:
		return fw_verdict(nr, NF_DROP);
	case FW_REJECT_TCP:
		return fw_reject(nr, NFT_REJECT_TCP_RST, 0);
	case FW_REJECT_ICMP:
		return fw_reject(nr, NFT_REJECT_ICMP_UNREACH, FW_ICMP_ADMIN);
	case FW_REJECT_ICMPV6:
		return fw_reject(nr, NFT_REJECT_ICMP_UNREACH, FW_ICMPV6_ADMIN);
	case FW_REJECT_ICMPX:
		return fw_reject(nr, NFT_REJECT_ICMPX_UNREACH,
		    NFT_REJECT_ICMPX_ADMIN_PROHIBITED);
	case FW_DNAT:
		return fw_dnat(nr, r->to);
	}
	return -1;
}

/* A batch being written: its buffer, and how many messages want an answer. */
struct fw_batch {
	struct mnl_nlmsg_batch	*b;
	char			*buf;
	uint32_t		 seq;
	size_t			 nmsg;
	int			 full;
};

static struct nlmsghdr *
fw_batch_msg(struct fw_batch *fb, int family, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *nlh;

	nlh = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(fb->b), type,
	    (uint16_t)family, flags | NLM_F_ACK, fb->seq++);
	fb->nmsg++;
	return nlh;
}

static void
fw_batch_next(struct fw_batch *fb)
{
	if (!mnl_nlmsg_batch_next(fb->b))
		fb->full = 1;
}

static int
fw_batch_start(struct fw_batch *fb)
{
	memset(fb, 0, sizeof(*fb));
	fb->seq = (uint32_t)time(NULL);
	if ((fb->buf = malloc(FW_BATCH_MAX)) == NULL)
		return -1;
	/* room for one more message than is filled: see mnl_nlmsg_batch */
	if ((fb->b = mnl_nlmsg_batch_start(fb->buf, FW_BATCH_MAX / 2)) ==
	    NULL) {
		free(fb->buf);
		fb->buf = NULL;
		return -1;
	}
	nftnl_batch_begin(mnl_nlmsg_batch_current(fb->b), fb->seq++);
	fw_batch_next(fb);
	return 0;
}

static void
fw_batch_release(struct fw_batch *fb)
{
	if (fb->b != NULL)
		mnl_nlmsg_batch_stop(fb->b);
	free(fb->buf);
	fb->b = NULL;
	fb->buf = NULL;
}

static void
fw_batch_table(struct fw_batch *fb, uint16_t type, uint16_t flags,
    struct nftnl_table *t)
{
	nftnl_table_nlmsg_build_payload(fw_batch_msg(fb,
	    (int)nftnl_table_get_u32(t, NFTNL_TABLE_FAMILY), type, flags), t);
	fw_batch_next(fb);
}

/*
 * Sends the batch and reads one answer for each of its messages.  Returns
 * 0 when every one was an acknowledgement, else the first error (errno
 * value): the kernel then applied none of it.
 */
static int
fw_batch_send(struct fw_batch *fb, struct mnl_socket *nl)
{
	struct nlmsghdr *nlh;
	struct nlmsgerr *err;
	char *rbuf;
	size_t acks = 0;
	ssize_t n;
	int r = 0, len;

	nftnl_batch_end(mnl_nlmsg_batch_current(fb->b), fb->seq++);
	fw_batch_next(fb);
	if (fb->full)
		return EMSGSIZE;
	if ((rbuf = malloc(FW_RECV_MAX)) == NULL)
		return ENOMEM;
	if (mnl_socket_sendto(nl, mnl_nlmsg_batch_head(fb->b),
	    mnl_nlmsg_batch_size(fb->b)) < 0) {
		r = errno;
		goto out;
	}
	while (acks < fb->nmsg && r == 0) {
		if ((n = mnl_socket_recvfrom(nl, rbuf, FW_RECV_MAX)) <= 0) {
			r = n == 0 ? EPIPE : errno;
			break;
		}
		len = (int)n;
		for (nlh = (struct nlmsghdr *)rbuf; mnl_nlmsg_ok(nlh, len);
		    nlh = mnl_nlmsg_next(nlh, &len)) {
			if (nlh->nlmsg_type != NLMSG_ERROR)
				continue;
			err = mnl_nlmsg_get_payload(nlh);
			if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*err))) {
				r = EBADMSG;
				break;
			}
			if (err->error != 0) {
				r = -err->error;
				break;
			}
			acks++;
		}
	}
 out:
	free(rbuf);
	return r;
}

static struct nftnl_table *
fw_table_new(int family, const char *name)
{
	struct nftnl_table *t;

	if ((t = nftnl_table_alloc()) == NULL)
		return NULL;
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, name);
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, (uint32_t)family);
	return t;
}

/* The counters, and the chains and rules of l in tbl's family, into the
 * batch. */
static int
fw_batch_ruleset(struct fw_batch *fb, const struct fw_table *tbl,
    const struct fw_list *l, uid_t uid)
{
	struct nftnl_obj *o;
	struct nftnl_chain *ch;
	struct nftnl_rule *nr;
	struct nftnl_udata_buf *ud;
	uint32_t lo;
	size_t i, c;

	if ((lo = if_nametoindex("lo")) == 0)
		lo = 1;
	for (i = 0; i < tbl->ncounters; i++) {
		if ((o = nftnl_obj_alloc()) == NULL)
			return -1;
		nftnl_obj_set_str(o, NFTNL_OBJ_TABLE, tbl->name);
		nftnl_obj_set_str(o, NFTNL_OBJ_NAME, tbl->counters[i]);
		nftnl_obj_set_u32(o, NFTNL_OBJ_FAMILY, (uint32_t)tbl->family);
		nftnl_obj_set_u32(o, NFTNL_OBJ_TYPE, NFT_OBJECT_COUNTER);
		nftnl_obj_nlmsg_build_payload(fw_batch_msg(fb, tbl->family,
		    NFT_MSG_NEWOBJ, NLM_F_CREATE | NLM_F_EXCL), o);
		nftnl_obj_free(o);
		fw_batch_next(fb);
	}
	for (c = 0; c < FW_CHAIN_COUNT; c++) {
		if (fw_chains[c].family != tbl->family ||
		    !fw_chain_used(l, (enum fw_chain)c))
			continue;
		if ((ch = nftnl_chain_alloc()) == NULL)
			return -1;
		nftnl_chain_set_str(ch, NFTNL_CHAIN_TABLE, tbl->name);
		nftnl_chain_set_str(ch, NFTNL_CHAIN_NAME, fw_chains[c].name);
		nftnl_chain_set_u32(ch, NFTNL_CHAIN_FAMILY,
		    (uint32_t)tbl->family);
		nftnl_chain_set_str(ch, NFTNL_CHAIN_TYPE, fw_chains[c].type);
		nftnl_chain_set_u32(ch, NFTNL_CHAIN_HOOKNUM, fw_chains[c].hook);
		nftnl_chain_set_s32(ch, NFTNL_CHAIN_PRIO, fw_chains[c].prio);
		nftnl_chain_set_u32(ch, NFTNL_CHAIN_POLICY,
		    fw_chains[c].drop ? NF_DROP : NF_ACCEPT);
		if (tbl->dev != NULL)
			nftnl_chain_set_str(ch, NFTNL_CHAIN_DEV, tbl->dev);
		nftnl_chain_nlmsg_build_payload(fw_batch_msg(fb, tbl->family,
		    NFT_MSG_NEWCHAIN, NLM_F_CREATE | NLM_F_EXCL), ch);
		nftnl_chain_free(ch);
		fw_batch_next(fb);
	}
	for (i = 0; i < l->n; i++) {
		if (fw_chains[l->r[i].chain].family != tbl->family)
			continue;
		if ((nr = nftnl_rule_alloc()) == NULL)
			return -1;
		nftnl_rule_set_str(nr, NFTNL_RULE_TABLE, tbl->name);
		nftnl_rule_set_str(nr, NFTNL_RULE_CHAIN,
		    fw_chains[l->r[i].chain].name);
		nftnl_rule_set_u32(nr, NFTNL_RULE_FAMILY, (uint32_t)tbl->family);
		if ((ud = nftnl_udata_buf_alloc(FW_COMMENT_MAX + 8)) == NULL) {
			nftnl_rule_free(nr);
			return -1;
		}
		if (!nftnl_udata_put_strz(ud, NFTNL_UDATA_RULE_COMMENT,
		    l->r[i].comment) ||
		    nftnl_rule_set_data(nr, NFTNL_RULE_USERDATA,
		    nftnl_udata_buf_data(ud), nftnl_udata_buf_len(ud)) != 0 ||
		    fw_build_exprs(nr, &l->r[i], uid, lo) != 0) {
			nftnl_udata_buf_free(ud);
			nftnl_rule_free(nr);
			return -1;
		}
		nftnl_udata_buf_free(ud);
		nftnl_rule_nlmsg_build_payload(fw_batch_msg(fb, tbl->family,
		    NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND), nr);
		nftnl_rule_free(nr);
		fw_batch_next(fb);
	}
	return 0;
}

/*
 * Installs the ntbl tables of tbls with the rules of l in one batch.  With
 * `replace` the batch adds each table, deletes it and adds it again (the
 * old one and the new one swap with no moment between them); else no
 * table may be there yet.
 */
static int
fw_install(const struct fw_table *tbls, size_t ntbl, const struct fw_list *l,
    uid_t uid, int replace, char *why, size_t whylen)
{
	struct fw_batch fb;
	struct mnl_socket *nl = NULL;
	struct nftnl_table *t = NULL;
	size_t i;
	int r = -1, e;

	memset(&fb, 0, sizeof(fb));
	if (fw_batch_start(&fb) != 0) {
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	for (i = 0; i < ntbl; i++) {
		if ((t = fw_table_new(tbls[i].family, tbls[i].name)) == NULL) {
			snprintf(why, whylen, "out of memory");
			goto out;
		}
		/*
		 * Add (a no-op when it is there), delete, add: the old table
		 * and the new one swap inside one transaction, with no moment
		 * between them when neither holds.
		 */
		if (replace) {
			fw_batch_table(&fb, NFT_MSG_NEWTABLE, NLM_F_CREATE, t);
			fw_batch_table(&fb, NFT_MSG_DELTABLE, 0, t);
		}
		fw_batch_table(&fb, NFT_MSG_NEWTABLE, NLM_F_CREATE |
		    NLM_F_EXCL, t);
		nftnl_table_free(t);
		t = NULL;
		if (fw_batch_ruleset(&fb, &tbls[i], l, uid) != 0) {
			snprintf(why, whylen, "out of memory");
			goto out;
		}
	}
	if ((nl = fw_open(why, whylen)) == NULL)
		goto out;
	if ((e = fw_batch_send(&fb, nl)) != 0) {
		fw_errno_text(e, "nftables refused the table (nothing was "
		    "changed)", why, whylen);
		goto out;
	}
	r = 0;
 out:
	if (nl != NULL)
		mnl_socket_close(nl);
	fw_batch_release(&fb);
	if (t != NULL)
		nftnl_table_free(t);
	return r;
}

int
hostfw_install(const struct hostfw_config *cfg, char *why, size_t whylen)
{
	struct fw_list *l;
	int r;

	if ((l = fw_make(cfg, why, whylen)) == NULL)
		return -1;
	r = fw_install(&fw_enforce_table, 1, l, cfg->uid, 1, why, whylen);
	free(l);
	return r;
}

/* Deletes table `name` of family: 1 deleted, 0 not there, -1 (why). */
static int
fw_remove(int family, const char *name, char *why, size_t whylen)
{
	struct fw_batch fb;
	struct mnl_socket *nl = NULL;
	struct nftnl_table *t = NULL;
	int r = -1, e;

	memset(&fb, 0, sizeof(fb));
	if ((t = fw_table_new(family, name)) == NULL ||
	    fw_batch_start(&fb) != 0) {
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	fw_batch_table(&fb, NFT_MSG_DELTABLE, 0, t);
	if ((nl = fw_open(why, whylen)) == NULL)
		goto out;
	if ((e = fw_batch_send(&fb, nl)) == ENOENT)
		r = 0;
	else if (e != 0)
		fw_errno_text(e, "cannot delete the table", why, whylen);
	else
		r = 1;
 out:
	if (nl != NULL)
		mnl_socket_close(nl);
	fw_batch_release(&fb);
	if (t != NULL)
		nftnl_table_free(t);
	return r;
}

int
hostfw_remove(char *why, size_t whylen)
{
	return fw_remove(NFPROTO_INET, HOSTFW_TABLE, why, whylen);
}

/* 1: table `name` of family is there; 0: it is not; -1: cannot tell (why). */
static int
fw_exists(int family, const char *name, char *why, size_t whylen)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct mnl_socket *nl;
	struct nftnl_table *t;
	struct nlmsghdr *nlh;
	uint32_t seq = (uint32_t)time(NULL), portid;
	ssize_t n;
	int r = -1, cb = MNL_CB_OK;

	if ((t = nftnl_table_alloc()) == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if ((nl = fw_open(why, whylen)) == NULL)
		goto out;
	portid = mnl_socket_get_portid(nl);
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, name);
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETTABLE, (uint16_t)family,
	    NLM_F_ACK, seq);
	nftnl_table_nlmsg_build_payload(nlh, t);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		snprintf(why, whylen, "cannot ask nftables: %s",
		    strerror(errno));
		goto out;
	}
	while (cb > MNL_CB_STOP) {
		if ((n = mnl_socket_recvfrom(nl, buf, sizeof(buf))) <= 0) {
			snprintf(why, whylen, "nftables did not answer: %s",
			    n == 0 ? "end of file" : strerror(errno));
			goto out;
		}
		cb = mnl_cb_run(buf, (size_t)n, seq, portid, NULL, NULL);
	}
	if (cb == MNL_CB_STOP) {
		r = 1;
	} else if (errno == ENOENT) {
		r = 0;
	} else {
		snprintf(why, whylen, "nftables did not answer: %s%s",
		    strerror(errno), errno == EPERM ?
		    " (asking needs CAP_NET_ADMIN)" : "");
	}
 out:
	if (nl != NULL)
		mnl_socket_close(nl);
	nftnl_table_free(t);
	return r;
}

int
hostfw_active(char *why, size_t whylen)
{
	return fw_exists(NFPROTO_INET, HOSTFW_TABLE, why, whylen);
}

/* What a dump of the table's rules or counters collects. */
struct fw_show {
	FILE		*out;
	size_t		 n;		/* seen, at most FW_SHOW_MAX */
	char		 chain[64];	/* the chain of the last rule shown */
};

static int
fw_comment_cb(const struct nftnl_udata *attr, void *data)
{
	const char **comment = data;
	const char *v = nftnl_udata_get(attr);
	uint8_t len = nftnl_udata_len(attr);

	if (nftnl_udata_type(attr) == NFTNL_UDATA_RULE_COMMENT && len > 0 &&
	    v[len - 1] == '\0')
		*comment = v;
	return MNL_CB_OK;
}

static int
fw_rule_cb(const struct nlmsghdr *nlh, void *data)
{
	struct fw_show *s = data;
	struct nftnl_rule *r;
	const char *chain, *table, *comment = NULL, *words;
	const void *ud;
	uint32_t udlen = 0;
	size_t c;

	if (s->n++ >= FW_SHOW_MAX)
		return MNL_CB_OK;
	if ((r = nftnl_rule_alloc()) == NULL)
		return MNL_CB_ERROR;
	if (nftnl_rule_nlmsg_parse(nlh, r) < 0) {
		nftnl_rule_free(r);
		return MNL_CB_ERROR;
	}
	table = nftnl_rule_get_str(r, NFTNL_RULE_TABLE);
	chain = nftnl_rule_get_str(r, NFTNL_RULE_CHAIN);
	if (table == NULL || strcmp(table, HOSTFW_TABLE) != 0 ||
	    chain == NULL) {
		nftnl_rule_free(r);
		return MNL_CB_OK;
	}
	if (strcmp(chain, s->chain) != 0) {
		words = "";
		for (c = 0; c < FW_CHAIN_COUNT; c++)
			if (strcmp(chain, fw_chains[c].name) == 0)
				words = fw_chains[c].words;
		fprintf(s->out, "chain %s%s%s:\n", chain, *words != '\0' ?
		    ", " : "", words);
		snprintf(s->chain, sizeof(s->chain), "%s", chain);
	}
	if ((ud = nftnl_rule_get_data(r, NFTNL_RULE_USERDATA, &udlen)) !=
	    NULL)
		nftnl_udata_parse(ud, udlen, fw_comment_cb, &comment);
	fprintf(s->out, "  %s\n", comment != NULL ? comment :
	    "(a rule without a comment: not made by intutic)");
	nftnl_rule_free(r);
	return MNL_CB_OK;
}

static int
fw_obj_cb(const struct nlmsghdr *nlh, void *data)
{
	struct fw_show *s = data;
	struct nftnl_obj *o;
	const char *name, *table;

	if (s->n++ >= FW_SHOW_MAX)
		return MNL_CB_OK;
	if ((o = nftnl_obj_alloc()) == NULL)
		return MNL_CB_ERROR;
	if (nftnl_obj_nlmsg_parse(nlh, o) < 0) {
		nftnl_obj_free(o);
		return MNL_CB_ERROR;
	}
	table = nftnl_obj_get_str(o, NFTNL_OBJ_TABLE);
	name = nftnl_obj_get_str(o, NFTNL_OBJ_NAME);
	if (table != NULL && strcmp(table, HOSTFW_TABLE) == 0 &&
	    name != NULL && nftnl_obj_get_u32(o, NFTNL_OBJ_TYPE) ==
	    NFT_OBJECT_COUNTER)
		fprintf(s->out, "  %-22s %llu packets, %llu bytes\n", name,
		    (unsigned long long)nftnl_obj_get_u64(o, NFTNL_OBJ_CTR_PKTS),
		    (unsigned long long)nftnl_obj_get_u64(o,
		    NFTNL_OBJ_CTR_BYTES));
	nftnl_obj_free(o);
	return MNL_CB_OK;
}

/* One dump request (rules or objects of the table), answered into cb. */
static int
fw_dump(struct mnl_socket *nl, uint16_t type, mnl_cb_t cb,
    struct fw_show *s)
{
	struct nftnl_rule *r = NULL;
	struct nftnl_obj *o = NULL;
	struct nlmsghdr *nlh;
	char *buf;
	uint32_t seq = (uint32_t)time(NULL), portid;
	ssize_t n;
	int ret = MNL_CB_OK, e = 0;

	if ((buf = malloc(FW_RECV_MAX)) == NULL)
		return ENOMEM;
	nlh = nftnl_nlmsg_build_hdr(buf, type, NFPROTO_INET, NLM_F_DUMP, seq);
	if (type == NFT_MSG_GETRULE) {
		if ((r = nftnl_rule_alloc()) == NULL) {
			e = ENOMEM;
			goto out;
		}
		nftnl_rule_set_str(r, NFTNL_RULE_TABLE, HOSTFW_TABLE);
		nftnl_rule_nlmsg_build_payload(nlh, r);
	} else {
		if ((o = nftnl_obj_alloc()) == NULL) {
			e = ENOMEM;
			goto out;
		}
		nftnl_obj_set_str(o, NFTNL_OBJ_TABLE, HOSTFW_TABLE);
		nftnl_obj_set_u32(o, NFTNL_OBJ_TYPE, NFT_OBJECT_COUNTER);
		nftnl_obj_nlmsg_build_payload(nlh, o);
	}
	portid = mnl_socket_get_portid(nl);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		e = errno;
		goto out;
	}
	while (ret > MNL_CB_STOP) {
		if ((n = mnl_socket_recvfrom(nl, buf, FW_RECV_MAX)) <= 0) {
			e = n == 0 ? EPIPE : errno;
			goto out;
		}
		ret = mnl_cb_run(buf, (size_t)n, seq, portid, cb, s);
	}
	if (ret == MNL_CB_ERROR)
		e = errno != 0 ? errno : EBADMSG;
 out:
	if (r != NULL)
		nftnl_rule_free(r);
	if (o != NULL)
		nftnl_obj_free(o);
	free(buf);
	return e;
}

int
hostfw_show(FILE *out, char *why, size_t whylen)
{
	struct fw_show s;
	struct mnl_socket *nl;
	int e;

	if ((nl = fw_open(why, whylen)) == NULL)
		return -1;
	memset(&s, 0, sizeof(s));
	s.out = out;
	if ((e = fw_dump(nl, NFT_MSG_GETRULE, fw_rule_cb, &s)) != 0) {
		fw_errno_text(e, "cannot read the rules", why, whylen);
		mnl_socket_close(nl);
		return -1;
	}
	fprintf(out, "counters:\n");
	memset(&s, 0, sizeof(s));
	s.out = out;
	if ((e = fw_dump(nl, NFT_MSG_GETOBJ, fw_obj_cb, &s)) != 0) {
		fw_errno_text(e, "cannot read the counters", why, whylen);
		mnl_socket_close(nl);
		return -1;
	}
	mnl_socket_close(nl);
	return 0;
}

/* --- a microVM's tables ----------------------------------------------------- */

/* The families of a microVM's two tables of one name, in their order. */
static const int fw_vm_families[FW_TABLES_MAX] = {
	NFPROTO_NETDEV, NFPROTO_INET
};

/*
 * The tables of vm into t: the netdev one on its tap (who the guest may
 * send as) first, then the inet one (where it may send to).  Returns how
 * many, or -1 (why).
 */
static int
fw_vm_tables(const struct hostfw_vm *vm, struct fw_table t[FW_TABLES_MAX],
    char *why, size_t whylen)
{
	if (strncmp(vm->table, HOSTFW_VM_PREFIX,
	    sizeof(HOSTFW_VM_PREFIX) - 1) != 0 || vm->tap[0] == '\0') {
		snprintf(why, whylen, "'%s' is not a microVM table name",
		    vm->table);
		return -1;
	}
	t[0].family = fw_vm_families[0];
	t[0].name = vm->table;
	t[0].counters = fw_vm_dev_counters;
	t[0].ncounters = sizeof(fw_vm_dev_counters) /
	    sizeof(fw_vm_dev_counters[0]);
	t[0].dev = vm->tap;
	t[1].family = fw_vm_families[1];
	t[1].name = vm->table;
	t[1].counters = fw_vm_counters;
	t[1].ncounters = sizeof(fw_vm_counters) / sizeof(fw_vm_counters[0]);
	t[1].dev = NULL;
	return 2;
}

/*
 * The tables and the rules of vm: *l is the caller's to free.  Returns how
 * many tables, or -1 (why).
 */
static int
fw_vm_make(const struct hostfw_vm *vm, struct fw_table t[FW_TABLES_MAX],
    struct fw_list **l, char *why, size_t whylen)
{
	int n;

	*l = NULL;
	if ((n = fw_vm_tables(vm, t, why, whylen)) < 0)
		return -1;
	if ((*l = malloc(sizeof(**l))) == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if (fw_vm_rules(vm, *l) != 0) {
		snprintf(why, whylen, "more than %d rules", FW_RULES_MAX);
		free(*l);
		*l = NULL;
		return -1;
	}
	return n;
}

int
hostfw_vm_print(const struct hostfw_vm *vm, FILE *out, char *why,
    size_t whylen)
{
	struct fw_table t[FW_TABLES_MAX];
	struct fw_list *l;
	int i, n;

	if ((n = fw_vm_make(vm, t, &l, why, whylen)) < 0)
		return -1;
	for (i = 0; i < n; i++)
		fw_print_table(&t[i], l, 0, out);
	free(l);
	return 0;
}

int
hostfw_vm_install(const struct hostfw_vm *vm, char *why, size_t whylen)
{
	struct fw_table t[FW_TABLES_MAX];
	struct fw_list *l;
	int n, r;

	if ((n = fw_vm_make(vm, t, &l, why, whylen)) < 0)
		return -1;
	r = fw_install(t, (size_t)n, l, 0, 0, why, whylen);
	free(l);
	return r;
}

int
hostfw_vm_remove(const char *table, char *why, size_t whylen)
{
	char w[HOSTFW_WHY_MAX];
	size_t i;
	int r, removed = 0, failed = 0;

	if (strncmp(table, HOSTFW_VM_PREFIX, sizeof(HOSTFW_VM_PREFIX) - 1) !=
	    0) {
		snprintf(why, whylen, "'%s' is not a microVM table name", table);
		return -1;
	}
	/* both, even when one cannot be: the first error is the one said */
	for (i = 0; i < FW_TABLES_MAX; i++) {
		if ((r = fw_remove(fw_vm_families[i], table, w,
		    sizeof(w))) < 0 && !failed) {
			snprintf(why, whylen, "%s %s: %s", fw_family_text(
			    fw_vm_families[i]), table, w);
			failed = 1;
		}
		removed |= r > 0;
	}
	return failed ? -1 : removed;
}

int
hostfw_vm_exists(const char *table, char *why, size_t whylen)
{
	size_t i;
	int r;

	for (i = 0; i < FW_TABLES_MAX; i++)
		if ((r = fw_exists(fw_vm_families[i], table, why, whylen)) != 0)
			return r;
	return 0;
}

/* --- networks as text ------------------------------------------------------ */

const char *
hostfw_net_text(const struct hostfw_net *n, char *buf, size_t len)
{
	return fw_net_text(n, buf, len);
}

int
hostfw_net_parse(const char *s, int need_port, struct hostfw_net *n)
{
	char buf[HOSTFW_NET_TEXT_MAX], *a, *p, *pfx, *end;
	unsigned int full, i;
	unsigned long v;

	memset(n, 0, sizeof(*n));
	if (strlen(s) >= sizeof(buf))
		return -1;
	snprintf(buf, sizeof(buf), "%s", s);
	a = buf;
	p = NULL;
	if (*a == '[') {
		if ((end = strchr(a, ']')) == NULL || end[1] != ':')
			return -1;
		*end = '\0';
		a++;
		p = end + 2;
	} else if ((end = strrchr(a, ':')) != NULL && strchr(a, ':') == end) {
		*end = '\0';		/* IPv4 with a port */
		p = end + 1;
	}
	if ((pfx = strchr(a, '/')) != NULL)
		*pfx++ = '\0';
	if (inet_pton(AF_INET, a, n->addr) == 1)
		n->family = AF_INET;
	else if (inet_pton(AF_INET6, a, n->addr) == 1)
		n->family = AF_INET6;
	else
		return -1;
	full = n->family == AF_INET ? 32 : 128;
	n->prefix = full;
	if (pfx != NULL) {
		errno = 0;
		v = strtoul(pfx, &end, 10);
		if (need_port || *pfx < '0' || *pfx > '9' || *end != '\0' ||
		    errno != 0 || v > full)
			return -1;
		if (v == 0)
			return -2;
		n->prefix = (unsigned int)v;
	}
	for (i = n->prefix; i < full; i++)
		n->addr[i / 8] &= (unsigned char)~(0x80 >> (i % 8));
	if (p != NULL) {
		errno = 0;
		v = strtoul(p, &end, 10);
		if (*p < '0' || *p > '9' || *end != '\0' || errno != 0 ||
		    v < 1 || v > 65535)
			return -1;
		n->port = (unsigned int)v;
	} else if (need_port)
		return -1;
	return 0;
}
