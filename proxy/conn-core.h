/*
 * conn-core.h — a client connection as its core (conn.c) and the ways in
 * see it.  The core knows no protocol: it accepts, reads a request head,
 * runs the state table, keeps the timers, writes the records and closes.
 * A way in (way-*.c) is one kind of request: it says which heads are its
 * own and handles them, and its states are rows of the table.
 *
 *	way-connect.c	CONNECT: the 200, the peek, the hand-over to a tunnel
 *	way-forward.c	absolute-form HTTP, forwarded in origin-form
 *	way-api.c	the proxy's own API in origin-form (/healthz, ...)
 *	way-control.c	the control API, on the control socket only
 *	way-transparent.c  connections nftables redirected: the name from
 *			the first bytes, then as CONNECT after its 200
 *	way-gateway.c	the provider gateway: /providers/NAME/... to the
 *			provider's HTTPS API, each call audited
 *	conn-dial.c	for all of them: the run a request carries, the
 *			decision by name, the look-up, the address, the dial
 *
 * A new way in is a file with its `struct conn_way`, an entry in
 * conn_ways[] (conn.c), and its states in enum conn_state and conn_states[].
 */
#ifndef INTUTIC_CONN_CORE_H
#define INTUTIC_CONN_CORE_H

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <stdint.h>

#include <event2/bufferevent.h>

#include "conn.h"
#include "http.h"
#include "proxy.h"
#include "rules.h"
#include "runs.h"
#include "tls-hello.h"

/*
 * An address as text, or the refused addresses of a name, as the audit
 * record's `addr` and a 403 name them.
 */
#define CONN_ADDR_TEXT_MAX	256

enum conn_state {
	CONN_HEAD = 0,		/* reading the client's request head */
	CONN_RESOLVE,		/* waiting for evdns */
	CONN_DIAL,		/* connecting to the pinned address */
	CONN_PEEK,		/* CONNECT answered; waiting for the client's bytes */
	CONN_TUNNEL,		/* relaying both ways */
	CONN_HTTP,		/* forwarding one absolute-form exchange */
	CONN_FINISH,		/* writing a last answer, then closing */
	CONN_WAIT,		/* a control answer waits for a recheck */
	CONN_SNIFF,		/* transparent: waiting for the first bytes */
	CONN_GW_TLS,		/* gateway: the TLS handshake with a provider */
	CONN_GW_RELAY,		/* gateway: after a 101, bytes both ways */
	CONN_PARENT,		/* --upstream-proxy: its answer to our CONNECT */
	CONN_STATE_COUNT
};

struct conn_way;
struct conn_gw;
struct resolve_answers;

/* How a refusal is told to the client (conn_fail()). */
enum conn_answer {
	CONN_ANSWER_HTTP = 0,	/* an HTTP answer naming the reason */
	CONN_ANSWER_TLS,	/* a TLS client: a fatal alert */
	CONN_ANSWER_CLOSE,	/* another protocol: the close alone */
};

/*
 * Everything that belongs to one request on a connection: a connection may
 * carry several (keep-alive absolute-form requests, then perhaps a CONNECT),
 * and each is decided once and recorded once.  conn_req_begin() is the one
 * place it is reset.
 */
struct conn_req {
	const struct conn_way	*way;		/* whose request it is */
	char			 run[RUN_ID_MAX];	/* "" for none */
	const char		*proto;		/* "connect" | "http" */
	struct rules_host	 host;
	uint16_t		 port;
	struct rules_decision	 d;
	enum conn_reason	 reason;
	int			 decided;	/* decision record written */
	int			 report_only;	/* denied, let through (report) */
	int			 status;	/* HTTP status answered */
	enum conn_answer	 answer;	/* how a refusal is told */
	int			 mismatch;	/* not the original address */
	int			 via_parent;	/* through --upstream-proxy */
	struct sockaddr_storage	 addr;		/* pinned */
	socklen_t		 addrlen;
	char			 addr_text[CONN_ADDR_TEXT_MAX];
	char			 sni[256];
	int			 has_sni;
	uint64_t		 down_mark;	/* c->bytes_down at its start */

	/* An absolute-form exchange. */
	struct http_framing	*body;		/* its body in flight */
	int			 body_done;	/* all of it read */
	int			 is_head;	/* HEAD: no response body */
	int			 upgrade;	/* asks for an Upgrade */
	int			 keep_alive;	/* the client keeps the connection */
};

struct conn {
	uint64_t		 id;
	struct worker		*w;
	struct proxy		*p;
	enum conn_state		 state;
	struct bufferevent	*client;
	struct bufferevent	*up;		/* the origin */
	struct rules		*rules;		/* this connection's set */
	/* The run of its request (a reference), and that run's policy. */
	struct run		*run;
	struct rules		*policy;	/* NULL: the rules alone */
	unsigned long long	 policy_gen;
	/*
	 * What its request was decided with, when a recheck has moved it on
	 * since (c->req.d's entry is in one of them): kept to its end.
	 */
	struct rules		*decided_rules;
	struct rules		*decided_policy;
	uint64_t		 run_bytes_up;	/* the bytes when it came */
	uint64_t		 run_bytes_down;
	struct event		*timer;
	struct resolve		*res;		/* look-up in flight */
	struct timeval		 started;
	struct timeval		 last_io;	/* for the idle timeout */
	char			 client_text[64];
	int			 depth;		/* callbacks of c running */
	int			 closing;	/* closed; freed at depth 0 */
	int			 decisions;	/* decision records written */
	enum conn_listener	 listener;
	uid_t			 peer_uid;	/* the control socket's peer */
	pid_t			 peer_pid;
	struct rules_addr	 peer;		/* a data port's peer; family 0 */
	int			 sandboxed;	/* peer not loopback: a sandbox's */
	/*
	 * A transparent connection's original destination (SO_ORIGINAL_DST),
	 * its port in orig_port; family 0 when not known (redirected in
	 * another network namespace, or not redirected at all).
	 */
	struct sockaddr_storage	 orig;
	uint16_t		 orig_port;	/* 0: not known */
	char			 orig_text[CONN_ADDR_TEXT_MAX];	/* "" */

	struct conn_req		 req;		/* the request being handled */

	/* Absolute-form HTTP: one exchange at a time on a keep-alive pair. */
	struct evbuffer		*fwd;		/* to the origin, not yet sent */
	struct evbuffer		*back;		/* to the client, not yet sent */
	struct http_framing	*resp_framing;	/* response body in flight */
	int			 up_keep_alive;
	int			 resp_until_eof;
	int			 up_ready;	/* c->up connected to up_host */
	int			 up_tls;	/* c->up is TLS (the gateway's) */
	struct conn_gw		*gw;		/* the gateway's call; NULL */
	char			 up_host[RULES_HOST_TEXT_MAX];
	char			 up_addr[CONN_ADDR_TEXT_MAX];	/* its address */
	uint16_t		 up_port;

	/* The control API: an answer held until a change is in force. */
	struct evbuffer		*held;
	int			 held_status;
	uint64_t		 held_rev;	/* the recheck it waits for */
	struct timeval		 held_since;
	/* Tunnel: from the peek on, the sockets are the tunnel's. */
	struct tunnel		*tun;
	uint64_t		 bytes_up;	/* before the tunnel, then all */
	uint64_t		 bytes_down;
	int			 tunnel_counted;

	TAILQ_ENTRY(conn)	 entry;
};

/* --- the state table ------------------------------------------------------ */

/*
 * What each state does with the sockets.  conn_set_state() installs it:
 * the bufferevents' callbacks are always the core's, which run the state's
 * handler for the side the event is on (none: the event changes nothing;
 * no client_event or up_event: the connection closes); then the reading
 * each side does, the client's read watermark, and the state's timer, whose
 * end runs on_timeout.  Within a state, backpressure may stop and start
 * reading again.
 */
typedef void	(*conn_io_fn)(struct conn *);
typedef void	(*conn_ev_fn)(struct conn *, short);

enum conn_io {
	CONN_IO_KEEP = 0,	/* as it is (no epoll_ctl(2) on the way) */
	CONN_IO_READ,		/* reading */
	CONN_IO_STOP,		/* not reading */
	CONN_IO_PORT,		/* reading if the allow entry names the port */
	CONN_IO_WRITE,		/* not reading; writing what is left */
};

enum conn_wm {
	CONN_WM_KEEP = 0,
	CONN_WM_HEAD,		/* reads up to a request head too many */
	CONN_WM_PEEK,		/* up to a ClientHello or a request head */
	CONN_WM_FLOW,		/* no read limit; write backpressure */
};

#define CONN_TIMEOUT_FINISH	((size_t)-1)	/* PROXY_FINISH_MS */

struct conn_state_def {
	const char	*name;
	size_t		 timeout;	/* offset of its proxy_config field */
	conn_io_fn	 client_read, client_write;
	conn_io_fn	 up_read, up_write;
	conn_ev_fn	 client_event, up_event;
	conn_io_fn	 on_timeout;
	enum conn_io	 client_io, up_io;
	enum conn_wm	 wm;
	int		 bulk;		/* large reads and writes */
};

/* The other files' states (conn_states[] in conn.c holds all). */
extern const struct conn_state_def conn_state_resolve;	/* conn-dial.c */
extern const struct conn_state_def conn_state_dial;	/* conn-dial.c */
extern const struct conn_state_def conn_state_peek;	/* way-connect.c */
extern const struct conn_state_def conn_state_tunnel;	/* way-connect.c */
extern const struct conn_state_def conn_state_http;	/* way-forward.c */
extern const struct conn_state_def conn_state_wait;	/* way-control.c */
extern const struct conn_state_def conn_state_sniff;	/* way-transparent.c */
extern const struct conn_state_def conn_state_gw_tls;	/* way-gateway.c */
extern const struct conn_state_def conn_state_gw_relay;	/* way-gateway.c */
extern const struct conn_state_def conn_state_parent;	/* conn-dial.c */

/* --- the ways in ---------------------------------------------------------- */

struct conn_way {
	const char	*name;
	unsigned int	 listeners;	/* enum conn_listener bits it serves */
	/* 1 when the request head h (on one of those) is this way's. */
	int		(*claims)(const struct http_head *h);
	/*
	 * Handles it: h has been parsed from the first h->len bytes of the
	 * client's input (avail of them there); they are still in it.
	 */
	void		(*request)(struct conn *c, const struct http_head *h,
			    size_t avail);
	/* The origin is connected (conn-dial.c dialled it). */
	void		(*dialled)(struct conn *c);
	/*
	 * With --upstream-proxy: 1 when the way's requests go to the parent
	 * as they are (absolute-form HTTP); else the parent is asked to
	 * CONNECT to the origin first, and dialled() comes after its 2xx.
	 */
	int		 to_parent_as_is;
	/*
	 * Optional.  accepted: the way takes every connection of its
	 * listeners from accept(2) on (fd, its socket; here, the address it
	 * came to, AF_UNSPEC when not known), instead of a request head.  answers: may reorder what the name resolved to before an
	 * address is picked.
	 */
	void		(*accepted)(struct conn *c, int fd,
			    const struct sockaddr *here);
	void		(*answers)(struct conn *c, struct resolve_answers *ans);
};

extern const struct conn_way conn_way_connect;	/* way-connect.c */
extern const struct conn_way conn_way_api;	/* way-api.c */
extern const struct conn_way conn_way_control;	/* way-control.c */
extern const struct conn_way conn_way_forward;	/* way-forward.c */
extern const struct conn_way conn_way_transparent; /* way-transparent.c */
extern const struct conn_way conn_way_gateway;	/* way-gateway.c */

/* --- the core (conn.c) ------------------------------------------------------ */

struct conn	*conn_enter(void *arg);
void		 conn_leave(struct conn *c);
void		 conn_set_state(struct conn *c, enum conn_state s);
void		 conn_bev_init(struct conn *c, struct bufferevent *bev);
void		 conn_close(struct conn *c);
/* A new request of way's on the connection, in proto. */
void		 conn_req_begin(struct conn *c, const struct conn_way *way,
		    const char *proto);
/* The request's fate: its decision record (once) and its counters. */
void		 conn_decided(struct conn *c, enum rules_verdict verdict,
		    enum conn_reason reason);
/* Its decision is revoked: a "revoke" record, then the close. */
void		 conn_revoke(struct conn *c, const struct rules_decision *d,
		    enum conn_reason reason);
/* Its run's reference and policy go (bytes counted to the run). */
void		 conn_run_drop(struct conn *c);
/* Answers status (naming reason and detail), then closes. */
void		 conn_fail(struct conn *c, int status, enum conn_reason reason,
		    const char *detail);
/* A refusal: decided RULES_DENY, answered, closed. */
void		 conn_deny(struct conn *c, int status, enum conn_reason reason,
		    const char *detail);
/* A fatal TLS alert of that description to the client (its input dropped). */
#define TLS_ALERT_ACCESS_DENIED		49
#define TLS_ALERT_INTERNAL_ERROR	80
void		 conn_tls_alert(struct conn *c, int description);
/* The last words are in the client's output: close once written. */
void		 conn_finish(struct conn *c);
/* Frees the origin side. */
void		 conn_up_drop(struct conn *c);
/* Reads the next request head from the client's input. */
void		 conn_read_head(struct conn *c);
/*
 * For a state that times out when idle: 1 when c has been idle for
 * --idle-timeout (counted), else 0 with the timer set for what is left.
 */
int		 conn_idle_expired(struct conn *c);
enum conn_reason conn_reason_of(enum rules_reason r);
void		 conn_sockaddr_text(const struct sockaddr *sa, char *buf,
		    size_t len, int with_port);
/*
 * A peer (sa) as an address (*peer), and whether it is a sandbox's: 1 when
 * it is neither loopback nor the address it came to (here; NULL: not
 * known), which a process of this host connecting to one of the host's
 * addresses sends from, nor (local not NULL) another address of this
 * host, which a process of this host that nftables redirected to the
 * proxy sends from (ownaddr_local()); so it comes from outside the host's
 * own processes: a container on its bridge, a microVM on its tap, another
 * host.  It must belong to a run.
 */
struct ownaddr;
int		 conn_peer_of(const struct sockaddr *sa,
		    const struct sockaddr *here, struct ownaddr *local,
		    struct rules_addr *peer);

/* --- for every way (conn-dial.c) ------------------------------------------- */

/*
 * The run the request carries (Proxy-Authorization; h NULL: none); 0, or
 * -1 when it was refused (407) and answered.
 */
int		 conn_identify(struct conn *c, const struct http_head *h);
/*
 * The same with the credentials already looked up: has_cred when the
 * request carried some, named the run they name (a reference, taken
 * over; NULL: none with that token).
 */
int		 conn_identify_run(struct conn *c, int has_cred,
		    struct run *named);
/*
 * Asks for what conn_identify() will look the request's run up in, so
 * that it comes in while the request's target is parsed.
 */
void		 conn_identify_early(struct conn *c, const struct http_head *h);
/*
 * A piece of a live run's brokered key in text (len bytes), or in the
 * head's target or any header value: refused (403 credential-leak) and
 * -1; else 0.  conn_decide() looks at the host.
 */
int		 conn_leak(struct conn *c, const char *text, size_t len);
int		 conn_leak_head(struct conn *c, const struct http_head *h);
/* Decides (host, port) by name; 0 to go on, -1 when answered already. */
int		 conn_decide(struct conn *c);
/* Looks the host up (or takes its literal), picks an address, dials. */
void		 conn_reach(struct conn *c);

/* --- way-connect.c ---------------------------------------------------------- */

/* The pair becomes a tunnel (after a CONNECT's peek, or a 101). */
void		 conn_tunnel_enter(struct conn *c);
/* Its decision record (allowed, or denied and let through), then that. */
void		 conn_tunnel_start(struct conn *c);
/* No first bytes in time: denied (peek-timeout), closed. */
void		 conn_peek_timeout(struct conn *c);

/* What the client's first bytes are (conn_sniff()). */
enum conn_sniff {
	CONN_SNIFF_MORE,	/* not enough yet */
	CONN_SNIFF_TLS,		/* a ClientHello: hello */
	CONN_SNIFF_HTTP,	/* a request head: *h, to free() */
	CONN_SNIFF_OTHER,	/* neither */
	CONN_SNIFF_BAD_TLS,	/* a TLS record that is no ClientHello */
	CONN_SNIFF_BAD_HTTP,	/* a bad request head: status, why */
	CONN_SNIFF_ERROR,	/* out of memory: the caller closes */
};

struct conn_sniffed {
	struct tls_hello	 hello;
	struct http_head	*h;
	int			 status;
	const char		*why;
};

/*
 * Looks at the client's first bytes, leaving them in its input: the peek
 * after a CONNECT's 200, and the transparent listener's before anything.
 */
enum conn_sniff	 conn_sniff(struct conn *c, struct conn_sniffed *s);
/*
 * Whether a request's target names nothing but c->req.host and port
 * (origin-form, "*", or an absolute-form URI naming them).
 */
int		 conn_target_ok(const struct conn *c, const struct http_head *h);

/* --- way-forward.c: the exchange, which the gateway's calls share --------- */

/* The origin is connected (and decided): the head, then the body. */
void		 conn_http_send(struct conn *c);

/* --- way-gateway.c: its hooks in that exchange (c->gw NULL: none) ----------- */

/* The answer's first bytes came. */
void		 conn_gw_first_byte(struct conn *c);
/* Its head h (final, not 1xx) is parsed; c->resp_framing is set. */
void		 conn_gw_response(struct conn *c, const struct http_head *h);
/* The answer is done. */
void		 conn_gw_done(struct conn *c);
/* A 101: from here on a relay (the provider's side is TLS). */
void		 conn_gw_upgraded(struct conn *c);
/*
 * The provider connection of c, its call done, is kept for another client
 * connection of the worker (c->up NULL after), when it can be.
 */
void		 conn_gw_park(struct conn *c);
/* The connection closes: a call still open gets its record, cut short. */
void		 conn_gw_free(struct conn *c);

#endif /* INTUTIC_CONN_CORE_H */
