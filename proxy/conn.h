/*
 * conn.h — the connection state machine's outside (see conn.c).
 */
#ifndef INTUTIC_CONN_H
#define INTUTIC_CONN_H

#include <stddef.h>

struct worker;
struct conn;

/* The size of a connection's pool object (struct conn and its timer). */
size_t		 conn_size(void);

/*
 * Why a request ended the way it did: the rules' reasons and the proxy's
 * own.  The text (conn_reason_str) is the X-Intutic-Error header, the audit
 * record's reason and the metrics label.
 */
enum conn_reason {
	CONN_REASON_ALLOWED = 0,
	CONN_REASON_DENIED,
	CONN_REASON_NOT_ALLOWLISTED,
	CONN_REASON_PORT_NOT_ALLOWED,
	CONN_REASON_INTERNAL_ADDRESS,
	CONN_REASON_INVALID_HOST,
	CONN_REASON_SNI_MISSING,
	CONN_REASON_SNI_MISMATCH,
	CONN_REASON_HOST_MISMATCH,
	CONN_REASON_PROTOCOL_NOT_ALLOWED,
	CONN_REASON_BAD_TLS,
	CONN_REASON_OWN_ADDRESS,
	CONN_REASON_DNS_FAILED,
	CONN_REASON_CONNECT_FAILED,
	CONN_REASON_CONNECT_TIMEOUT,
	CONN_REASON_BAD_REQUEST,
	CONN_REASON_HEAD_TIMEOUT,
	CONN_REASON_PEEK_TIMEOUT,
	CONN_REASON_OVERLOADED,
	CONN_REASON_CLIENT_GONE,	/* the client left before the outcome */
	CONN_REASON_DNS_TIMEOUT,	/* no nameserver answered in time */
	CONN_REASON_PROXY_AUTH,		/* credentials of no registered run */
	CONN_REASON_UPSTREAM_TIMEOUT,	/* the origin did not answer in time */
	CONN_REASON_RUN_ENDED,		/* its run ended (revoked) */
	CONN_REASON_UNKNOWN_PROVIDER,	/* the gateway serves no such one */
	CONN_REASON_TLS_FAILED,		/* the provider's TLS did not verify */
	CONN_REASON_CREDENTIAL_LEAK,	/* a brokered key sent elsewhere */
	CONN_REASON_KEY_MISMATCH,	/* a brokered call without its key */
	CONN_REASON_COUNT
};

const char	*conn_reason_str(enum conn_reason r);

/* Closes every connection of the worker at once (end of the grace period). */
void		 conn_close_all(struct worker *w);

/* Frees the gateway's idle provider connections (way-gateway.c). */
void		 gw_idle_drop_all(struct worker *w);

/* Closes the connections that are idle between requests (SIGTERM). */
void		 conn_stop_idle(struct worker *w);

/*
 * Decides the connection's request again under the rules and its run's
 * policy in force now, when either changed since it was decided (or its
 * run ended): one that now stands holds them from then on; one that no
 * longer does is closed, with a "revoke" record (conn_revoke()).  Not in
 * report mode, nor for the control socket's connections.
 */
void		 conn_recheck(struct conn *c);

/* conn_recheck() for each connection of the worker. */
void		 conn_recheck_all(struct worker *w);

#endif /* INTUTIC_CONN_H */
