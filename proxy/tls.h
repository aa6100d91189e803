/*
 * tls.h — the provider gateway's TLS client: OpenSSL through libevent's
 * bufferevent_openssl, behind one file (tls.c), the only one of the proxy
 * besides crypto.c that includes OpenSSL (scripts/checksrc holds it to
 * that).
 *
 * One context for the whole proxy: the system's CA store and, with
 * --gateway-ca, one more file of CA certificates; TLS 1.2 or later; the
 * peer's certificate verified, its name checked against the host dialled
 * (SNI sent for a name, an IP literal checked against the certificate's
 * IP addresses).
 */
#ifndef INTUTIC_TLS_H
#define INTUTIC_TLS_H

#include <stddef.h>

struct bufferevent;
struct event_base;
struct tls_client;

/*
 * The context, trusting the system's CA store and ca_file (NULL: none).
 * NULL with a message in err when it cannot be made (ca_file unreadable
 * or holding no certificate).
 */
struct tls_client	*tls_client_new(const char *ca_file, char *err,
			    size_t errlen);
void			 tls_client_free(struct tls_client *t);

/*
 * A TLS bufferevent over sock, the bufferevent of a connected TCP socket
 * (a filter: see tls.c), that shakes hands with host (canonical text: a
 * name, or an IPv4 / IPv6 literal) and reports BEV_EVENT_CONNECTED once
 * the peer is verified.  It owns sock and its SSL from then on (freed
 * with it); sock's callbacks, timeouts and watermarks are its own.  NULL
 * when out of memory: sock is still the caller's.
 */
struct bufferevent	*tls_client_bev(struct tls_client *t,
			    struct event_base *base, struct bufferevent *sock,
			    const char *host);

/*
 * Why the TLS of bev failed (after a BEV_EVENT_ERROR): the certificate's
 * verification result when that failed ("certificate verify failed:
 * unable to get local issuer certificate"), else OpenSSL's first error,
 * else the socket's.  Always a NUL-terminated text in buf.
 */
void			 tls_client_failure(struct bufferevent *bev,
			    char *buf, size_t len);

#endif /* INTUTIC_TLS_H */
