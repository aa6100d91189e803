/*
 * conntrack.c — the tracked flows enforce cuts (see conntrack.h).
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/types.h>

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <libnetfilter_conntrack/libnetfilter_conntrack.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>

#include "conntrack.h"
#include "hostfw.h"

#define CT_ADDRS_MAX	1024		/* this host's addresses */
#define CT_SOCKS_MAX	(1024 * 1024)	/* sockets looked at */
#define CT_FLOWS_MAX	(4 * 1024 * 1024) /* flows cut in one go */
#define CT_TCP_TIME_WAIT 6		/* TCP_TIME_WAIT: no owner left */

/* A socket of this host: its ends and its user. */
struct ct_sock {
	int		 family;
	uint8_t		 proto;
	unsigned char	 local[16], remote[16];
	uint16_t	 lport, rport;
	uid_t		 uid;
};

struct ct_host {
	struct { int family; unsigned char a[16]; } addr[CT_ADDRS_MAX];
	size_t		 naddr;
	struct ct_sock	*sock;
	size_t		 nsock, sockcap;
};

/* The walk over the tracked flows. */
struct ct_walk {
	const struct hostfw_config	*cfg;
	const struct ct_host		*host;
	struct conntrack_result		*res;
	struct nf_conntrack		**cut;	/* clones, to delete */
	size_t				 ncut, cutcap;
	int				 dry, nomem;
};

static size_t
ct_alen(int family)
{
	return family == AF_INET ? 4 : 16;
}

static int
ct_is_any(int family, const unsigned char *a)
{
	static const unsigned char zero[16];

	return memcmp(a, zero, ct_alen(family)) == 0;
}

static int
ct_is_loopback(int family, const unsigned char *a)
{
	static const unsigned char lo6[16] = { [15] = 1 };

	return family == AF_INET ? a[0] == 127 : memcmp(a, lo6, 16) == 0;
}

static const unsigned char ct_mapped[12] = { [10] = 0xff, [11] = 0xff };

/* An IPv4-mapped IPv6 address (of a dual-stack socket). */
static int
ct_is_mapped(const unsigned char *a)
{
	return memcmp(a, ct_mapped, 12) == 0;
}

/* A dual-stack socket on IPv4 addresses: as the IPv4 socket it acts as. */
static void
ct_unmap(struct ct_sock *s)
{
	if (s->family != AF_INET6 ||
	    (!ct_is_mapped(s->local) && !ct_is_mapped(s->remote)))
		return;
	memmove(s->local, s->local + 12, 4);
	memset(s->local + 4, 0, 12);
	memmove(s->remote, s->remote + 12, 4);
	memset(s->remote + 4, 0, 12);
	s->family = AF_INET;
}

static int
ct_host_has(const struct ct_host *h, int family, const unsigned char *a)
{
	size_t i;

	for (i = 0; i < h->naddr; i++)
		if (h->addr[i].family == family &&
		    memcmp(h->addr[i].a, a, ct_alen(family)) == 0)
			return 1;
	return 0;
}

static int
ct_host_addrs(struct ct_host *h, char *why, size_t whylen)
{
	struct ifaddrs *ifa, *i;
	const unsigned char *a;

	if (getifaddrs(&ifa) == -1) {
		snprintf(why, whylen, "cannot list this host's addresses: %s",
		    strerror(errno));
		return -1;
	}
	for (i = ifa; i != NULL && h->naddr < CT_ADDRS_MAX; i = i->ifa_next) {
		if (i->ifa_addr == NULL)
			continue;
		if (i->ifa_addr->sa_family == AF_INET)
			a = (const unsigned char *)&((struct sockaddr_in *)
			    (void *)i->ifa_addr)->sin_addr;
		else if (i->ifa_addr->sa_family == AF_INET6)
			a = (const unsigned char *)&((struct sockaddr_in6 *)
			    (void *)i->ifa_addr)->sin6_addr;
		else
			continue;
		h->addr[h->naddr].family = i->ifa_addr->sa_family;
		memcpy(h->addr[h->naddr].a, a, ct_alen(i->ifa_addr->sa_family));
		h->naddr++;
	}
	freeifaddrs(ifa);
	return 0;
}

/* --- the sockets, from sock_diag ------------------------------------------ */

struct ct_diag {
	struct ct_host	*h;
	uint8_t		 proto;
	int		 nomem;
};

static int
ct_diag_cb(const struct nlmsghdr *nlh, void *data)
{
	struct ct_diag *d = data;
	const struct inet_diag_msg *m = mnl_nlmsg_get_payload(nlh);
	struct ct_sock *s, *n;
	size_t cap;

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*m)))
		return MNL_CB_ERROR;
	if (m->idiag_state == CT_TCP_TIME_WAIT && d->proto == IPPROTO_TCP)
		return MNL_CB_OK;	/* its owner is gone: uid 0 here */
	if (d->h->nsock == d->h->sockcap) {
		if (d->h->sockcap == CT_SOCKS_MAX) {
			d->nomem = 1;
			return MNL_CB_ERROR;
		}
		cap = d->h->sockcap == 0 ? 256 : d->h->sockcap * 2;
		if ((n = reallocarray(d->h->sock, cap, sizeof(*n))) == NULL) {
			d->nomem = 1;
			return MNL_CB_ERROR;
		}
		d->h->sock = n;
		d->h->sockcap = cap;
	}
	s = &d->h->sock[d->h->nsock++];
	memset(s, 0, sizeof(*s));
	s->family = m->idiag_family;
	s->proto = d->proto;
	memcpy(s->local, m->id.idiag_src, ct_alen(s->family));
	memcpy(s->remote, m->id.idiag_dst, ct_alen(s->family));
	s->lport = ntohs(m->id.idiag_sport);
	s->rport = ntohs(m->id.idiag_dport);
	s->uid = m->idiag_uid;
	ct_unmap(s);
	return MNL_CB_OK;
}

/* Every socket of one family and protocol into h.  0, or -1 (why). */
static int
ct_diag_dump(struct mnl_socket *nl, struct ct_host *h, int family,
    uint8_t proto, char *why, size_t whylen)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	struct inet_diag_req_v2 *req;
	struct ct_diag d = { h, proto, 0 };
	unsigned int seq = (unsigned int)family << 8 | proto, portid;
	ssize_t n;
	int r;

	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = seq;
	req = mnl_nlmsg_put_extra_header(nlh, sizeof(*req));
	req->sdiag_family = (uint8_t)family;
	req->sdiag_protocol = proto;
	req->idiag_states = ~0U;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		goto fail;
	portid = mnl_socket_get_portid(nl);
	while ((n = mnl_socket_recvfrom(nl, buf, sizeof(buf))) > 0) {
		r = mnl_cb_run(buf, (size_t)n, seq, portid, ct_diag_cb, &d);
		if (r == MNL_CB_STOP)
			return 0;
		if (r == MNL_CB_ERROR) {
			if (d.nomem)
				errno = ENOMEM;
			goto fail;
		}
	}
 fail:
	snprintf(why, whylen, "cannot list this host's sockets (sock_diag): "
	    "%s", strerror(errno));
	return -1;
}

static int
ct_host_socks(struct ct_host *h, char *why, size_t whylen)
{
	static const int fams[] = { AF_INET, AF_INET6 };
	static const uint8_t protos[] = { IPPROTO_TCP, IPPROTO_UDP };
	struct mnl_socket *nl;
	size_t i, j;
	int r = 0;

	if ((nl = mnl_socket_open(NETLINK_SOCK_DIAG)) == NULL ||
	    mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		snprintf(why, whylen, "cannot list this host's sockets "
		    "(sock_diag): %s", strerror(errno));
		if (nl != NULL)
			mnl_socket_close(nl);
		return -1;
	}
	for (i = 0; i < 2 && r == 0; i++)
		for (j = 0; j < 2 && r == 0; j++)
			r = ct_diag_dump(nl, h, fams[i], protos[j], why,
			    whylen);
	mnl_socket_close(nl);
	return r;
}

/*
 * The socket a flow this host sent came from: the connected one with its
 * four ends, else one bound to its source port with no peer (UDP).
 */
static const struct ct_sock *
ct_owner(const struct ct_host *h, const struct conntrack_flow *f)
{
	const struct ct_sock *s, *loose = NULL;
	size_t i, alen = ct_alen(f->family);

	for (i = 0; i < h->nsock; i++) {
		s = &h->sock[i];
		if (s->proto != f->proto || s->lport != f->sport)
			continue;
		if (s->family == f->family &&
		    memcmp(s->local, f->src, alen) == 0 &&
		    memcmp(s->remote, f->dst, alen) == 0 &&
		    s->rport == f->dport)
			return s;
		if (s->rport == 0 && ct_is_any(s->family, s->remote) &&
		    (ct_is_any(s->family, s->local) || (s->family == f->family
		    && memcmp(s->local, f->src, alen) == 0)))
			loose = s;
	}
	return loose;
}

/* --- the judgement ---------------------------------------------------------- */

/* The network n holds addr (and its port, for TCP and UDP, when it has one). */
static int
ct_net_has(const struct hostfw_net *n, const struct conntrack_flow *f)
{
	unsigned int i;

	if (n->family != f->family)
		return 0;
	for (i = 0; i < n->prefix; i++)
		if ((n->addr[i / 8] ^ f->dst[i / 8]) & (0x80 >> (i % 8)))
			return 0;
	if (n->port == 0)
		return 1;
	return (f->proto == IPPROTO_TCP || f->proto == IPPROTO_UDP) &&
	    f->dport == n->port;
}

/* 1: the table would let this flow's packets out (keep it); 0: cut it. */
static int
ct_keep(const struct hostfw_config *cfg, const struct ct_host *h,
    struct conntrack_flow *f)
{
	const struct ct_sock *s;
	size_t i;

	if (ct_is_loopback(f->family, f->src) ||
	    ct_is_loopback(f->family, f->dst) ||
	    ct_host_has(h, f->family, f->dst))
		return 1;	/* loopback, or made to this host */
	if (ct_host_has(h, f->family, f->src)) {
		if ((s = ct_owner(h, f)) != NULL) {
			f->owned = 1;
			f->owner = s->uid;
			if (s->uid == cfg->uid)
				return 1;
		}
		for (i = 0; i < cfg->nallow; i++)
			if (ct_net_has(&cfg->allow[i], f))
				return 1;
		if (cfg->dns_to_set && ct_net_has(&cfg->dns_to, f))
			return 1;
	}
	/* Sent or forwarded: to the proxy only. */
	for (i = 0; i < cfg->nproxy; i++)
		if (f->proto == IPPROTO_TCP && ct_net_has(&cfg->proxy[i], f))
			return 1;
	return 0;
}

static void
ct_flow_of(const struct nf_conntrack *ct, struct conntrack_flow *f)
{
	uint32_t a4;

	memset(f, 0, sizeof(*f));
	f->family = nfct_get_attr_u8(ct, ATTR_ORIG_L3PROTO);
	f->proto = nfct_get_attr_u8(ct, ATTR_ORIG_L4PROTO);
	if (f->family == AF_INET) {
		a4 = nfct_get_attr_u32(ct, ATTR_ORIG_IPV4_SRC);
		memcpy(f->src, &a4, 4);
		a4 = nfct_get_attr_u32(ct, ATTR_ORIG_IPV4_DST);
		memcpy(f->dst, &a4, 4);
	} else if (f->family == AF_INET6) {
		memcpy(f->src, nfct_get_attr(ct, ATTR_ORIG_IPV6_SRC), 16);
		memcpy(f->dst, nfct_get_attr(ct, ATTR_ORIG_IPV6_DST), 16);
	}
	if (nfct_attr_is_set(ct, ATTR_ORIG_PORT_SRC) > 0 &&
	    nfct_attr_is_set(ct, ATTR_ORIG_PORT_DST) > 0) {
		f->sport = ntohs(nfct_get_attr_u16(ct, ATTR_ORIG_PORT_SRC));
		f->dport = ntohs(nfct_get_attr_u16(ct, ATTR_ORIG_PORT_DST));
	}
}

/* Names f among the flows shown: those with a socket first. */
static void
ct_show(struct conntrack_result *res, const struct conntrack_flow *f)
{
	size_t i;

	if (res->nshown < CONNTRACK_SHOW_MAX) {
		res->shown[res->nshown++] = *f;
		i = res->nshown - 1;
	} else if (f->owned) {
		for (i = res->nshown; i > 0 && res->shown[i - 1].owned; i--)
			continue;
		if (i == 0)
			return;
		res->shown[--i] = *f;
	} else
		return;
	/* Owned flows before the others. */
	for (; f->owned && i > 0 && !res->shown[i - 1].owned; i--) {
		struct conntrack_flow tmp = res->shown[i - 1];

		res->shown[i - 1] = res->shown[i];
		res->shown[i] = tmp;
	}
}

static int
ct_walk_cb(enum nf_conntrack_msg_type type, struct nf_conntrack *ct,
    void *data)
{
	struct ct_walk *w = data;
	struct conntrack_flow f;
	struct nf_conntrack **n;
	size_t cap;

	(void)type;
	ct_flow_of(ct, &f);
	if (f.family != AF_INET && f.family != AF_INET6)
		return NFCT_CB_CONTINUE;
	w->res->seen++;
	if (ct_keep(w->cfg, w->host, &f))
		return NFCT_CB_CONTINUE;
	ct_show(w->res, &f);
	w->res->cut++;
	if (w->dry)
		return NFCT_CB_CONTINUE;
	if (w->ncut == w->cutcap) {
		cap = w->cutcap == 0 ? 64 : w->cutcap * 2;
		if (cap > CT_FLOWS_MAX ||
		    (n = reallocarray(w->cut, cap, sizeof(*n))) == NULL) {
			w->nomem = 1;
			return NFCT_CB_FAILURE;
		}
		w->cut = n;
		w->cutcap = cap;
	}
	if ((w->cut[w->ncut] = nfct_clone(ct)) == NULL) {
		w->nomem = 1;
		return NFCT_CB_FAILURE;
	}
	w->ncut++;
	return NFCT_CB_CONTINUE;
}

int
conntrack_cut(const struct hostfw_config *cfg, int dry,
    struct conntrack_result *res, char *why, size_t whylen)
{
	struct ct_host *host;
	struct ct_walk w;
	struct nfct_handle *h;
	uint32_t family = AF_UNSPEC;
	size_t i;
	int r = -1, e;

	memset(res, 0, sizeof(*res));
	memset(&w, 0, sizeof(w));
	if ((host = calloc(1, sizeof(*host))) == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if (ct_host_addrs(host, why, whylen) != 0 ||
	    ct_host_socks(host, why, whylen) != 0) {
		e = errno;
		goto out;
	}
	if ((h = nfct_open(CONNTRACK, 0)) == NULL) {
		e = errno;
		snprintf(why, whylen, "cannot open connection tracking's "
		    "netlink: %s", strerror(e));
		goto out;
	}
	w.cfg = cfg;
	w.host = host;
	w.res = res;
	w.dry = dry;
	nfct_callback_register(h, NFCT_T_ALL, ct_walk_cb, &w);
	if (nfct_query(h, NFCT_Q_DUMP, &family) == -1) {
		e = w.nomem ? ENOMEM : errno;
		snprintf(why, whylen, "cannot list connection tracking's "
		    "flows: %s", strerror(e));
		nfct_close(h);
		goto out;
	}
	e = 0;
	for (i = 0; i < w.ncut; i++)
		if (nfct_query(h, NFCT_Q_DESTROY, w.cut[i]) == -1) {
			if (errno == ENOENT) {
				res->gone++;
				continue;
			}
			e = errno;
			snprintf(why, whylen, "cannot delete a tracked flow: "
			    "%s", strerror(e));
			break;
		}
	nfct_close(h);
	r = e == 0 ? 0 : -1;
 out:
	for (i = 0; i < w.ncut; i++)
		nfct_destroy(w.cut[i]);
	free(w.cut);
	free(host->sock);
	free(host);
	if (r != 0)
		errno = e;
	return r;
}

const char *
conntrack_flow_text(const struct conntrack_flow *f, char *buf, size_t len)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN], who[32], proto[16];

	inet_ntop(f->family, f->src, s, sizeof(s));
	inet_ntop(f->family, f->dst, d, sizeof(d));
	if (f->owned)
		snprintf(who, sizeof(who), "uid %lu", (unsigned long)f->owner);
	else
		snprintf(who, sizeof(who), "no socket");
	if (f->proto == IPPROTO_TCP)
		snprintf(proto, sizeof(proto), "tcp");
	else if (f->proto == IPPROTO_UDP)
		snprintf(proto, sizeof(proto), "udp");
	else if (f->proto == IPPROTO_ICMP || f->proto == IPPROTO_ICMPV6)
		snprintf(proto, sizeof(proto), "icmp");
	else
		snprintf(proto, sizeof(proto), "proto %u", f->proto);
	if (f->sport == 0 && f->dport == 0)
		snprintf(buf, len, "%s %s %s > %s", who, proto, s, d);
	else if (f->family == AF_INET6)
		snprintf(buf, len, "%s %s [%s]:%u > [%s]:%u", who, proto, s,
		    f->sport, d, f->dport);
	else
		snprintf(buf, len, "%s %s %s:%u > %s:%u", who, proto, s,
		    f->sport, d, f->dport);
	return buf;
}
