/*
 * hostfw.c — is the table of `intutic enforce` there (see hostfw.h)?
 * One NFT_MSG_GETTABLE request for inet intutic over a netfilter netlink
 * socket: the answer is the table, or ENOENT.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include "hostfw.h"

int
hostfw_active(char *why, size_t whylen)
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
	if ((nl = mnl_socket_open(NETLINK_NETFILTER)) == NULL ||
	    mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		snprintf(why, whylen, "cannot open a netfilter netlink "
		    "socket: %s", strerror(errno));
		goto out;
	}
	portid = mnl_socket_get_portid(nl);
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, HOSTFW_TABLE);
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETTABLE, NFPROTO_INET,
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
