/*
 * upstream.h — the parent proxy of --upstream-proxy: after its own
 * decision, the proxy reaches what it allowed through a corporate proxy,
 * with CONNECT NAME:PORT for tunnels (CONNECT, transparent, the provider
 * gateway) and in absolute form for HTTP (way-forward.c).
 *
 * Made once at start (proxy/main.c) and read by every worker; nothing in
 * it changes afterwards.
 */
#ifndef INTUTIC_UPSTREAM_H
#define INTUTIC_UPSTREAM_H

#include <sys/types.h>
#include <sys/socket.h>

#include <stddef.h>
#include <stdint.h>

#include "rules.h"

struct evbuffer;

/* Addresses of the parent's name that are kept (and refused as destinations). */
#define UPSTREAM_ADDRS_MAX	16
/* The credentials file: USER:PASSWORD on its first line, at most this long. */
#define UPSTREAM_AUTH_MAX	1024

struct upstream {
	char			 url[RULES_HOST_TEXT_MAX + 16];	/* http://HOST:PORT */
	struct rules_host	 host;		/* as --upstream-proxy names it */
	uint16_t		 port;
	struct sockaddr_storage	 addrs[UPSTREAM_ADDRS_MAX];	/* [0] is dialled */
	socklen_t		 lens[UPSTREAM_ADDRS_MAX];
	size_t			 naddrs;
	char			 addr_text[64];	/* addrs[0] as text, port too */
	char			*auth;		/* "Proxy-Authorization: ...\r\n"; NULL */
};

/*
 * The parent named by url ("http://HOST[:PORT]", the port 80 when none is
 * given; no credentials, path, query or fragment in it), its name looked
 * up once now (the system's resolver: the parent is part of the
 * operator's network, not an agent's destination), and the credentials of
 * auth_file (NULL: none): USER:PASSWORD, a file only its owner may read.
 * NULL with a message in err naming the fix.
 */
struct upstream	*upstream_new(const char *url, const char *auth_file,
		    char *err, size_t errlen);
void		 upstream_free(struct upstream *u);

/*
 * 1 when host:port names the parent itself (its name, or a literal that is
 * one of its addresses; any port): reaching it through itself would hand
 * an agent the parent's whole reach.
 */
int		 upstream_is_parent(const struct upstream *u,
		    const struct rules_host *host);

/* The CONNECT request for host:port, with the credentials, into out: 0, or -1. */
int		 upstream_connect_head(const struct upstream *u,
		    const struct rules_host *host, uint16_t port,
		    struct evbuffer *out);

/* "HOST:PORT" as a request target's authority (an IPv6 literal bracketed). */
void		 upstream_authority(const struct rules_host *host,
		    uint16_t port, char *buf, size_t len);

#endif /* INTUTIC_UPSTREAM_H */
