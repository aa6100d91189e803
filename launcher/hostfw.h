/*
 * hostfw.h — is the host firewall of `intutic enforce` in place (the
 * nftables table inet intutic, asked over netlink with libnftnl)?
 */
#ifndef INTUTIC_HOSTFW_H
#define INTUTIC_HOSTFW_H

#include <stddef.h>

#define HOSTFW_FAMILY_NAME	"inet"
#define HOSTFW_TABLE		"intutic"

/* 1: the table is there; 0: it is not; -1: cannot tell (why). */
int	 hostfw_active(char *why, size_t whylen);

#endif /* INTUTIC_HOSTFW_H */
