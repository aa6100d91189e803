/*
 * tls.c — the provider gateway's TLS client (tls.h): OpenSSL's libssl
 * through bufferevent_openssl.
 */
#include "config.h"

#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/util.h>

#include "tls.h"

/* What the socket's output holds at most; the rest waits in the filter's. */
#define TLS_SOCK_OUT_MAX	(64 * 1024)

struct tls_client {
	SSL_CTX		*ctx;
};

/* OpenSSL's first queued error as text, the queue emptied; "" for none. */
static void
tls_error_text(char *buf, size_t len)
{
	unsigned long e = ERR_get_error();

	buf[0] = '\0';
	if (e != 0)
		ERR_error_string_n(e, buf, len);
	ERR_clear_error();
}

struct tls_client *
tls_client_new(const char *ca_file, char *err, size_t errlen)
{
	struct tls_client *t;
	char why[256];

	if ((t = calloc(1, sizeof(*t))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if ((t->ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		tls_error_text(why, sizeof(why));
		snprintf(err, errlen, "cannot make a TLS context: %s", why);
		free(t);
		return NULL;
	}
	(void)SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
	/* Idle upstream connections give their buffers back. */
	SSL_CTX_set_mode(t->ctx, SSL_MODE_RELEASE_BUFFERS);
	/* The system's store: a missing one is no error, a bad CA file is. */
	(void)SSL_CTX_set_default_verify_paths(t->ctx);
	ERR_clear_error();
	if (ca_file != NULL &&
	    SSL_CTX_load_verify_locations(t->ctx, ca_file, NULL) != 1) {
		tls_error_text(why, sizeof(why));
		snprintf(err, errlen, "--gateway-ca %s: no CA certificate could "
		    "be read from it (%s); give a file of PEM certificates",
		    ca_file, why[0] != '\0' ? why : strerror(errno));
		tls_client_free(t);
		return NULL;
	}
	return t;
}

void
tls_client_free(struct tls_client *t)
{
	if (t == NULL)
		return;
	SSL_CTX_free(t->ctx);
	free(t);
}

struct bufferevent *
tls_client_bev(struct tls_client *t, struct event_base *base,
    struct bufferevent *sock, const char *host)
{
	struct bufferevent *bev;
	unsigned char bin[sizeof(struct in6_addr)];
	char lit[64];
	size_t len = strlen(host);
	SSL *ssl;
	int ok;

	if ((ssl = SSL_new(t->ctx)) == NULL) {
		ERR_clear_error();
		return NULL;
	}
	/* An IPv6 literal may come bracketed: the certificate names it bare. */
	if (len >= 2 && host[0] == '[' && host[len - 1] == ']' &&
	    len - 2 < sizeof(lit)) {
		memcpy(lit, host + 1, len - 2);
		lit[len - 2] = '\0';
	} else
		(void)snprintf(lit, sizeof(lit), "%s", host);
	if (inet_pton(AF_INET, lit, bin) == 1 ||
	    inet_pton(AF_INET6, lit, bin) == 1)
		/* An address: no SNI (RFC 6066 §3), its IP SAN checked. */
		ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), lit);
	else {
		SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
		ok = SSL_set_tlsext_host_name(ssl, host) == 1 &&
		    SSL_set1_host(ssl, host) == 1;
	}
	if (ok != 1) {
		ERR_clear_error();
		SSL_free(ssl);
		return NULL;
	}
	/*
	 * A filter over the socket's bufferevent rather than a TLS bufferevent
	 * on the socket: the socket is read in large reads and every TLS
	 * record they bring is decrypted before the owner's read callback
	 * runs once, so a stream of small events is relayed in batches (on
	 * the socket itself, libevent decrypts at most two records a wake-up,
	 * with two reads each).  The socket's output is bounded so that a
	 * large body waits in the filter's output, where the owner's flow
	 * control sees it.  Made or not, the SSL is the bufferevent's
	 * (libevent frees it).
	 */
	bufferevent_setcb(sock, NULL, NULL, NULL, NULL);
	bufferevent_set_timeouts(sock, NULL, NULL);
	bufferevent_setwatermark(sock, EV_READ, 0, 0);
	bufferevent_setwatermark(sock, EV_WRITE, 0, TLS_SOCK_OUT_MAX);
	bev = bufferevent_openssl_filter_new(base, sock, ssl,
	    BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL) {
		ERR_clear_error();
		return NULL;
	}
	/*
	 * A peer that closes without close_notify ends the stream (EOF), as
	 * most HTTPS servers do between requests; a message's own framing
	 * says whether it was whole.
	 */
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return bev;
}

void
tls_client_failure(struct bufferevent *bev, char *buf, size_t len)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	unsigned long e;
	long v;
	int sock = EVUTIL_SOCKET_ERROR();

	if (ssl != NULL && (v = SSL_get_verify_result(ssl)) != X509_V_OK) {
		snprintf(buf, len, "certificate verify failed: %s",
		    X509_verify_cert_error_string(v));
		return;
	}
	if ((e = bufferevent_get_openssl_error(bev)) != 0) {
		ERR_error_string_n(e, buf, len);
		return;
	}
	if (sock != 0)
		snprintf(buf, len, "%s", evutil_socket_error_to_string(sock));
	else
		snprintf(buf, len, "the connection closed during the TLS "
		    "handshake");
}
