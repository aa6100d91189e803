/*
 * conn-dial.c — what every way in does before its origin is connected:
 * the run a request carries (Proxy-Authorization), the decision by name,
 * the look-up (evdns, resolve.c), the address picked by the rules, the
 * dial; and the states RESOLVE and DIAL.  When the origin is connected the
 * request's way goes on (its dialled()).  With --upstream-proxy, what was
 * allowed is dialled through the parent instead (state PARENT).
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>

#include "conn-core.h"
#include "crypto.h"
#include "gateway.h"
#include "http.h"
#include "proxy.h"
#include "resolve.h"
#include "rules.h"
#include "runs.h"
#include "upstream.h"

static void	conn_dial(struct conn *);
static void	conn_dial_event(struct conn *, short);
static void	conn_parent_connect(struct conn *);

/*
 * A piece of a live run's brokered key (gateway_leak()) in text: refused
 * (credential-leak), in every mode, and -1; else 0.
 */
int
conn_leak(struct conn *c, const char *text, size_t len)
{
	char run[RUN_ID_MAX], provider[64], detail[RUN_ID_MAX + 384];

	if (!gateway_leak(c->p->gateway, c->p->runs, text, len, run,
	    provider))
		return 0;
	snprintf(detail, sizeof(detail), "the request carries the key the "
	    "provider gateway gave run %s for %s; that key is good only in "
	    "%s's calls through the gateway, and sending it anywhere else is "
	    "refused", run, provider, provider);
	conn_deny(c, 403, CONN_REASON_CREDENTIAL_LEAK, detail);
	return -1;
}

int
conn_leak_head(struct conn *c, const struct http_head *h)
{
	size_t i;

	if (conn_leak(c, h->target, h->target_len) != 0)
		return -1;
	for (i = 0; i < h->nheaders; i++)
		if (conn_leak(c, h->headers[i].value,
		    h->headers[i].value_len) != 0)
			return -1;
	return 0;
}

/* Decides (host, port) by name; 0 to go on, -1 when answered already. */
int
conn_decide(struct conn *c)
{
	if (conn_leak(c, c->req.host.text, c->req.host.len) != 0)
		return -1;
	rules_decide_within(c->rules, c->policy, &c->req.host, c->req.port,
	    &c->req.d);
	if (c->req.d.verdict == RULES_ALLOW)
		return 0;
	if (rules_mode(c->rules) == RULES_MODE_REPORT) {
		/* Decide and log, let it through. */
		c->req.report_only = 1;
		return 0;
	}
	conn_fail(c, 403, conn_reason_of(c->req.d.reason),
	    c->req.d.reason == RULES_REASON_PORT_NOT_ALLOWED ?
	    "this port is not allowed for this host" :
	    c->req.d.reason == RULES_REASON_DENIED ? "denied by a deny rule" :
	    "this host is not on the allowlist");
	return -1;
}

static void
conn_pin_addr(struct conn *c, const struct sockaddr *sa, socklen_t len)
{
	memcpy(&c->req.addr, sa, len);
	c->req.addrlen = len;
	conn_sockaddr_text(sa, c->req.addr_text, sizeof(c->req.addr_text), 0);
}

/*
 * The refused addresses of a name, for its audit records: as the
 * addresses are text ("10.1.2.3,::ffff:127.0.0.1"), in the order they
 * were considered, cut at an address that does not fit.
 */
static void
conn_refused_addrs(struct conn *c, const struct rules_pick *pick,
    const struct rules_addr *addrs)
{
	char text[RULES_ADDR_TEXT_MAX];
	size_t i, used = 0, len;

	c->req.addr_text[0] = '\0';
	for (i = 0; i < pick->nrefused; i++) {
		rules_addr_text(&addrs[pick->refused[i]], text, sizeof(text));
		len = strlen(text);
		if (used + (used > 0) + len + 1 > sizeof(c->req.addr_text))
			break;
		if (used > 0)
			c->req.addr_text[used++] = ',';
		memcpy(c->req.addr_text + used, text, len + 1);
		used += len;
	}
}

/*
 * Picks the address to dial with rules_pick_addr(), as `intutic rules
 * test` does: the first the rules allow, IPv4 answers before IPv6 ones;
 * the proxy's own addresses are skipped (never a loop, not even in report
 * mode); the others are never dialled.  In report mode, when none is
 * allowed, the first refused one is dialled all the same and the decision
 * records its denial.  A refusal names the refused addresses: in the
 * records' addr, and with why each was refused in the answer's body.
 */
static int
conn_pin(struct conn *c, struct resolve_answers *ans)
{
	struct rules_addr addrs[RULES_PICK_MAX];
	unsigned char skip[RULES_PICK_MAX];
	struct rules_pick pick;
	struct sockaddr *sa;
	char refused[512], detail[640];
	size_t i, n = ans->n < RULES_PICK_MAX ? ans->n : RULES_PICK_MAX;
	int own = 0;

	memset(addrs, 0, sizeof(addrs));
	memset(skip, 0, sizeof(skip));
	for (i = 0; i < n; i++) {
		sa = (struct sockaddr *)&ans->addrs[i];
		if (sa->sa_family == AF_INET) {
			addrs[i].family = AF_INET;
			addrs[i].v4 = ((struct sockaddr_in *)sa)->sin_addr;
			((struct sockaddr_in *)sa)->sin_port = htons(c->req.port);
		} else if (sa->sa_family == AF_INET6) {
			addrs[i].family = AF_INET6;
			addrs[i].v6 = ((struct sockaddr_in6 *)sa)->sin6_addr;
			((struct sockaddr_in6 *)sa)->sin6_port = htons(c->req.port);
		} else
			continue;	/* another family: skipped */
		if (proxy_is_own_addr(c->p, sa))
			own = skip[i] = 1;
	}
	rules_pick_addr_within(c->rules, c->policy, addrs, skip, n,
	    c->req.port, &pick);
	if (pick.picked != pick.n) {
		conn_pin_addr(c, (struct sockaddr *)&ans->addrs[pick.picked],
		    ans->lens[pick.picked]);
		return 0;
	}
	if (pick.nrefused > 0) {
		/*
		 * A name denied already (report mode) keeps that reason;
		 * else the first refused address decides, with its deny
		 * entry, or none for an internal one (not the entry that
		 * allowed the name).
		 */
		if (!c->req.report_only)
			c->req.d = pick.d;
		if (pick.dial != pick.n) {
			c->req.report_only = 1;
			conn_pin_addr(c, (struct sockaddr *)&ans->addrs[pick.dial],
			    ans->lens[pick.dial]);
			return 0;
		}
		conn_refused_addrs(c, &pick, addrs);
		rules_pick_refused_text(&pick, addrs, refused, sizeof(refused));
		snprintf(detail, sizeof(detail), "the name resolves only to "
		    "refused addresses: %s", refused);
		conn_fail(c, 403, conn_reason_of(pick.d.reason), detail);
	} else if (own) {
		conn_deny(c, 403, CONN_REASON_OWN_ADDRESS,
		    "the destination is the proxy itself");
	} else
		conn_fail(c, 502, CONN_REASON_DNS_FAILED,
		    "the name has no IPv4 or IPv6 address");
	return -1;
}

/*
 * Nothing more from the client while the origin is looked up or dialled.
 * (Reading on would let its EOF come before the 200, and a client that
 * half-closed after its early bytes could not be told from one that left.)
 * Called only when the answer is not there at once: disabling and enabling
 * again in the same callback would cost an epoll_ctl(2).
 */
static void
conn_wait_origin(struct conn *c)
{
	bufferevent_disable(c->client, EV_READ);
}

static void
conn_resolved_cb(enum resolve_status status,
    const struct resolve_answers *answers, void *arg)
{
	struct conn *c = conn_enter(arg);
	struct resolve_answers ans;
	char detail[512];

	c->res = NULL;
	if (status != RESOLVE_OK) {
		METRIC_ADD(c->p, dns_failures, 1);
		snprintf(detail, sizeof(detail), "cannot resolve '%s': %s",
		    c->req.host.text, resolve_strerror(status));
		if (status == RESOLVE_TIMEOUT)
			conn_fail(c, 504, CONN_REASON_DNS_TIMEOUT, detail);
		else
			conn_fail(c, 502, CONN_REASON_DNS_FAILED, detail);
	} else {
		ans = *answers;
		if (c->req.way->answers != NULL)
			c->req.way->answers(c, &ans);
		if (conn_pin(c, &ans) == 0)
			conn_dial(c);
	}
	conn_leave(c);
}

static void
conn_resolve(struct conn *c)
{
	struct resolve *r;

	conn_set_state(c, CONN_RESOLVE);
	METRIC_ADD(c->p, dns_lookups, 1);
	/* A name in the hosts file is answered before this returns. */
	r = resolve_start(c->w->dns, c->p->hosts, c->req.host.text,
	    conn_resolved_cb, c);
	if (r == NULL)
		return;		/* answered: c may be gone already */
	c->res = r;
	conn_wait_origin(c);
	if (evdns_base_count_nameservers(c->w->dns) == 0) {
		/* Not in the hosts file and nobody to ask: fail now. */
		resolve_cancel(r);
		c->res = NULL;
		METRIC_ADD(c->p, dns_failures, 1);
		conn_fail(c, 502, CONN_REASON_DNS_FAILED,
		    "the name is not in the hosts file and no nameserver is "
		    "configured");
	}
}

/* A literal address as the answer to its own look-up. */
static void
conn_literal_answer(const struct conn *c, struct resolve_answers *out)
{
	memset(out, 0, sizeof(*out));
	out->n = 1;
	if (c->req.host.kind == RULES_HOST_IPV4) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&out->addrs[0];

		s4->sin_family = AF_INET;
		s4->sin_addr = c->req.host.v4;
		out->lens[0] = sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&out->addrs[0];

		s6->sin6_family = AF_INET6;
		s6->sin6_addr = c->req.host.v6;
		out->lens[0] = sizeof(*s6);
	}
}

/* A literal address is its own answer, checked like a resolved one. */
static void
conn_use_literal(struct conn *c)
{
	struct resolve_answers ans;

	conn_literal_answer(c, &ans);
	if (conn_pin(c, &ans) == 0)
		conn_dial(c);
}

/*
 * Through the parent (--upstream-proxy), which looks the name up: a name is
 * not resolved here, so the rules' address entries judge literal
 * destinations only; a literal is checked as always (the rules, the
 * proxy's own addresses).  The parent itself, by its name or one of its
 * addresses, is never a destination: through it, an agent would have the
 * parent's whole reach.
 */
static void
conn_reach_parent(struct conn *c)
{
	const struct upstream *u = c->p->upstream;
	struct resolve_answers ans;

	if (upstream_is_parent(u, &c->req.host)) {
		conn_deny(c, 403, CONN_REASON_OWN_ADDRESS, "the destination is "
		    "the upstream proxy itself (--upstream-proxy)");
		return;
	}
	if (c->req.host.kind != RULES_HOST_NAME) {
		conn_literal_answer(c, &ans);
		if (conn_pin(c, &ans) != 0)
			return;
	}
	c->req.via_parent = 1;
	snprintf(c->req.addr_text, sizeof(c->req.addr_text), "%s",
	    u->addr_text);
	conn_dial(c);
}

void
conn_reach(struct conn *c)
{
	if (c->p->upstream != NULL)
		conn_reach_parent(c);
	else if (c->req.host.kind == RULES_HOST_NAME)
		conn_resolve(c);
	else
		conn_use_literal(c);
}

/*
 * True when a non-blocking connect(2) that said EINPROGRESS is done all the
 * same: to a loopback or other local address the handshake completes in
 * the call itself.  (To a remote origin it is one getsockopt(2) that finds
 * SYN_SENT, next to a network round trip.)
 */
static int
connected_now(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
	    ti.tcpi_state == TCP_ESTABLISHED;
}

/*
 * Dials the pinned address.  A connection that is up when connect(2)
 * returns goes on at once (one loop pass, an epoll_ctl(2) and a
 * getsockopt(2) less than waiting to be told it is writable); any other
 * is left to the bufferevent to finish.
 */
static void
conn_dial(struct conn *c)
{
	char detail[CONN_ADDR_TEXT_MAX + 128];
	int fd, one = 1, now = 0;

	const struct sockaddr *sa = (const struct sockaddr *)&c->req.addr;
	socklen_t salen = c->req.addrlen;

	if (c->req.via_parent) {
		sa = (const struct sockaddr *)&c->p->upstream->addrs[0];
		salen = c->p->upstream->lens[0];
	}
	conn_up_drop(c);
	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1)
		goto fail;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, sa, salen) == 0)
		now = 1;
	else if (errno == EINPROGRESS)
		now = connected_now(fd);
	else {
		int e = errno;

		close(fd);
		errno = e;
		goto fail;
	}
	/* A bufferevent that could not be made does not own the fd. */
	if ((c->up = bufferevent_socket_new(c->w->base, fd,
	    BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		close(fd);
		conn_close(c);
		return;
	}
	conn_bev_init(c, c->up);
	conn_set_state(c, CONN_DIAL);
	if (now) {
		conn_dial_event(c, BEV_EVENT_CONNECTED);
		return;
	}
	/* No address: the connect is under way already. */
	if (bufferevent_socket_connect(c->up, NULL, 0) != 0) {
		conn_close(c);
		return;
	}
	conn_wait_origin(c);
	return;
fail:
	snprintf(detail, sizeof(detail), "cannot connect to %s%s: %s",
	    c->req.via_parent ? "the upstream proxy " : "", c->req.addr_text,
	    strerror(errno));
	conn_fail(c, 502, CONN_REASON_CONNECT_FAILED, detail);
}

/* The origin is connected, or could not be: the request's way goes on. */
static void
conn_dial_event(struct conn *c, short what)
{
	char detail[CONN_ADDR_TEXT_MAX + 128];
	int e = EVUTIL_SOCKET_ERROR();

	if (!(what & BEV_EVENT_CONNECTED)) {
		snprintf(detail, sizeof(detail), "cannot connect to %s%s: %s",
		    c->req.via_parent ? "the upstream proxy " : "",
		    c->req.addr_text, evutil_socket_error_to_string(e));
		conn_fail(c, 502, CONN_REASON_CONNECT_FAILED, detail);
		return;
	}
	if (c->req.via_parent && !c->req.way->to_parent_as_is) {
		conn_parent_connect(c);
		return;
	}
	c->req.way->dialled(c);
}

/* --- through the parent: CONNECT NAME:PORT ---------------------------------- */

/* Asks the parent for a tunnel to the decided name and port. */
static void
conn_parent_connect(struct conn *c)
{
	if (upstream_connect_head(c->p->upstream, &c->req.host, c->req.port,
	    bufferevent_get_output(c->up)) != 0) {
		conn_close(c);
		return;
	}
	conn_set_state(c, CONN_PARENT);
}

/* The parent's answer: a 2xx, and the way goes on; else a 502 with it. */
static void
conn_parent_read(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->up);
	size_t avail = evbuffer_get_length(in), end;
	char target[RULES_HOST_TEXT_MAX + 8], detail[1024];
	struct http_head *h;
	const char *why, *buf;
	int status;

	if (avail > c->p->cfg.head_max)
		avail = c->p->cfg.head_max;
	if ((buf = (const char *)evbuffer_pullup(in, (ssize_t)avail)) == NULL) {
		conn_close(c);
		return;
	}
	upstream_authority(&c->req.host, c->req.port, target, sizeof(target));
	if ((end = http_head_end(buf, avail)) == 0) {
		if (avail < c->p->cfg.head_max)
			return;		/* more to come */
		snprintf(detail, sizeof(detail), "the upstream proxy %s "
		    "answered CONNECT %s with a head longer than %zu bytes",
		    c->req.addr_text, target, c->p->cfg.head_max);
		conn_fail(c, 502, CONN_REASON_CONNECT_FAILED, detail);
		return;
	}
	if ((h = malloc(sizeof(*h))) == NULL) {
		conn_close(c);
		return;
	}
	if (http_response_head_parse(buf, end, HTTP_HEADERS_LIMIT, h,
	    &why) != HTTP_OK) {
		free(h);
		snprintf(detail, sizeof(detail), "the upstream proxy %s "
		    "answered CONNECT %s with what is not HTTP: %s",
		    c->req.addr_text, target, why);
		conn_fail(c, 502, CONN_REASON_CONNECT_FAILED, detail);
		return;
	}
	status = h->status;
	if (status < 200 || status > 299) {
		snprintf(detail, sizeof(detail), "the upstream proxy %s "
		    "answered CONNECT %s with %d %.*s", c->req.addr_text,
		    target, status, (int)(h->reason_len > 200 ? 200 :
		    h->reason_len), h->reason);
		free(h);
		conn_fail(c, 502, CONN_REASON_CONNECT_FAILED, detail);
		return;
	}
	free(h);
	evbuffer_drain(in, end);
	/* The origin cannot have spoken: nothing was sent to it yet. */
	if (evbuffer_get_length(in) > 0) {
		snprintf(detail, sizeof(detail), "the upstream proxy %s sent "
		    "bytes past its answer to CONNECT %s", c->req.addr_text,
		    target);
		conn_fail(c, 502, CONN_REASON_CONNECT_FAILED, detail);
		return;
	}
	c->req.way->dialled(c);
}

static void
conn_parent_event(struct conn *c, short what)
{
	char target[RULES_HOST_TEXT_MAX + 8], detail[1024];

	upstream_authority(&c->req.host, c->req.port, target, sizeof(target));
	snprintf(detail, sizeof(detail), "the upstream proxy %s %s before "
	    "answering CONNECT %s", c->req.addr_text, (what & BEV_EVENT_EOF) ?
	    "closed the connection" : "failed", target);
	conn_fail(c, 502, CONN_REASON_CONNECT_FAILED, detail);
}

static void
conn_parent_timeout(struct conn *c)
{
	char detail[CONN_ADDR_TEXT_MAX + 128];

	METRIC_ADD(c->p, timeouts, 1);
	snprintf(detail, sizeof(detail), "the upstream proxy %s did not "
	    "answer CONNECT within %d ms (--connect-timeout)", c->req.addr_text,
	    c->p->cfg.connect_ms);
	conn_fail(c, 504, CONN_REASON_CONNECT_TIMEOUT, detail);
}

const struct conn_state_def conn_state_parent = {
	.name = "parent", .timeout = offsetof(struct proxy_config, connect_ms),
	.up_read = conn_parent_read,
	.up_event = conn_parent_event,
	.on_timeout = conn_parent_timeout,
	.client_io = CONN_IO_KEEP, .up_io = CONN_IO_READ, .wm = CONN_WM_KEEP,
};

/*
 * The base64 of a Proxy-Authorization value's Basic credentials: *v and
 * *len past "Basic " and its spaces; 0, or -1 when it is no such value.
 */
static int
basic_credentials(const struct http_header *a, const char **v, size_t *len)
{
	if (a->value_len <= 6 || strncasecmp(a->value, "Basic ", 6) != 0)
		return -1;
	*v = a->value + 6;
	*len = a->value_len - 6;
	while (*len > 0 && **v == ' ') {
		(*v)++;
		(*len)--;
	}
	return 0;
}

/*
 * The run a credential names (Proxy-Authorization: Basic RUN:TOKEN, as a
 * proxy URL http://RUN:TOKEN@host:port makes clients send it): a new
 * reference, or NULL when it names none with that token.  The token is
 * never kept or written.
 */
static struct run *
conn_credentials(struct conn *c, const struct http_header *a)
{
	char cred[RUN_ID_MAX + RUN_TOKEN_MAX + 8];	/* and the padding's */
	struct run *run = NULL;
	const char *v, *colon;
	size_t len;
	long n = -1;

	if (basic_credentials(a, &v, &len) == 0)
		n = crypto_base64(v, len, (unsigned char *)cred, sizeof(cred));
	if (n > 0 && (colon = memchr(cred, ':', (size_t)n)) != NULL)
		run = runs_check(c->p->runs, cred, (size_t)(colon - cred),
		    colon + 1, (size_t)n - (size_t)(colon - cred) - 1);
	explicit_bzero(cred, sizeof(cred));
	return run;
}

void
conn_identify_early(struct conn *c, const struct http_head *h)
{
	const struct http_header *a = http_header_find(h, "proxy-authorization");
	unsigned char id[RUN_ID_MAX + 8];
	const char *v, *colon = NULL;
	size_t len, want, k;
	long n = 0;

	if (a == NULL || basic_credentials(a, &v, &len) != 0)
		return;
	/*
	 * The id's part alone, not the token's: the base64 of an id of up to
	 * 20 bytes and its colon first (exec's are 20: "run-" and 16 hex
	 * digits), of the longest then; whole groups of four each.
	 */
	for (k = 0; k < 2 && colon == NULL; k++) {
		want = k == 0 ? 28 : (sizeof(id) - 2) / 3 * 4;
		if ((n = crypto_base64(v, (len < want ? len : want) &
		    ~(size_t)3, id, sizeof(id))) <= 0)
			break;
		colon = memchr(id, ':', (size_t)n);
		if (len <= want)
			break;
	}
	if (colon != NULL)
		runs_prefetch_id(c->p->runs, (const char *)id,
		    (size_t)(colon - (const char *)id));
	explicit_bzero(id, sizeof(id));
}

/*
 * The run a request belongs to.  First the kernel's word: a connection
 * from a sandbox's address (conn_peer(): not from this host itself) is
 * that sandbox's run's,
 * whatever it sends.  Then its credentials (conn_credentials()), which
 * must name that same run when there is one.  No run: a request from
 * this host goes on as no run's, unless --require-run; one from anywhere
 * else is refused (407, the challenge, after which clients that wait for
 * one, git among them, send what their proxy URL holds).  Credentials of
 * no registered run, or of another run than the sandbox's: 407, denied
 * (proxy-auth), returns -1.
 */
int
conn_identify(struct conn *c, const struct http_head *h)
{
	const struct http_header *a = h != NULL ?
	    http_header_find(h, "proxy-authorization") : NULL;

	return conn_identify_run(c, a != NULL, a != NULL ?
	    conn_credentials(c, a) : NULL);
}

int
conn_identify_run(struct conn *c, int has_cred, struct run *named)
{
	struct run *run = NULL;
	struct run_policy pol;
	char peer[RULES_ADDR_TEXT_MAX], detail[256];

	c->req.run[0] = '\0';
	/*
	 * The last request's run and policy are let go only once this one's
	 * are found: with many runs their lines are likely cold, and come in
	 * meanwhile.
	 */
	if (c->run != NULL)
		run_prefetch(c->run);
	if (c->policy != NULL)
		rules_prefetch_blind(c->policy);
	if (c->sandboxed)
		run = runs_by_addr(c->p->runs, &c->peer);
	conn_run_drop(c);
	if (!has_cred && run == NULL && c->sandboxed) {
		snprintf(detail, sizeof(detail), "a connection from %s (not "
		    "from this host itself: a sandbox's) must be a run's: start "
		    "the command with `intutic exec`, which registers its run",
		    rules_addr_text(&c->peer, peer, sizeof(peer)));
		conn_deny(c, 407, CONN_REASON_PROXY_AUTH, detail);
		return -1;
	}
	if (!has_cred && run == NULL && c->p->cfg.require_run) {
		conn_deny(c, 407, CONN_REASON_PROXY_AUTH, "this proxy takes "
		    "only requests of a run (--require-run), with its "
		    "credentials: start the command with `intutic exec`, whose "
		    "proxy URL carries them");
		return -1;
	}
	if (has_cred) {
		if (named == NULL || (run != NULL && named != run)) {
			snprintf(detail, sizeof(detail), "%s", named == NULL ?
			    "the proxy credentials name no run this proxy "
			    "knows: start the command with `intutic exec`, "
			    "which registers its run" : "the proxy credentials "
			    "are another run's than that of the sandbox this "
			    "connection comes from");
			run_release(named);
			run_release(run);
			conn_deny(c, 407, CONN_REASON_PROXY_AUTH, detail);
			return -1;
		}
		if (run == NULL)
			run = named;
		else
			run_release(named);
	}
	if (run == NULL)
		return 0;		/* no run's, from loopback */
	c->run = run;
	if (run_policy(run, &pol) != 0) {
		conn_run_drop(c);	/* it ended meanwhile */
		conn_deny(c, 407, CONN_REASON_PROXY_AUTH, "the run has ended");
		return -1;
	}
	snprintf(c->req.run, sizeof(c->req.run), "%s", run_id(run));
	c->policy = pol.set;
	c->policy_gen = pol.generation;
	c->run_bytes_up = c->bytes_up;
	c->run_bytes_down = c->bytes_down;
	return 0;
}

/* No answer may come after this: the request has its fate. */
static void
conn_resolve_timeout(struct conn *c)
{
	char detail[128];

	if (c->res != NULL) {
		resolve_cancel(c->res);
		c->res = NULL;
	}
	METRIC_ADD(c->p, timeouts, 1);
	METRIC_ADD(c->p, dns_failures, 1);
	snprintf(detail, sizeof(detail), "the name did not resolve within %d "
	    "ms (--dns-timeout)", c->p->cfg.dns_ms);
	conn_fail(c, 504, CONN_REASON_DNS_TIMEOUT, detail);
}

static void
conn_dial_timeout(struct conn *c)
{
	char detail[128];

	METRIC_ADD(c->p, timeouts, 1);
	snprintf(detail, sizeof(detail), "the origin did not accept the "
	    "connection within %d ms (--connect-timeout)", c->p->cfg.connect_ms);
	conn_fail(c, 504, CONN_REASON_CONNECT_TIMEOUT, detail);
}

const struct conn_state_def conn_state_resolve = {
	.name = "resolve", .timeout = offsetof(struct proxy_config, dns_ms),
	.on_timeout = conn_resolve_timeout,
	.client_io = CONN_IO_KEEP, .up_io = CONN_IO_KEEP, .wm = CONN_WM_KEEP,
};

const struct conn_state_def conn_state_dial = {
	.name = "dial", .timeout = offsetof(struct proxy_config, connect_ms),
	.up_event = conn_dial_event,
	.on_timeout = conn_dial_timeout,
	.client_io = CONN_IO_KEEP, .up_io = CONN_IO_KEEP, .wm = CONN_WM_KEEP,
};

/* The pinned address as the rules see it: 0, or -1 when there is none. */
static int
conn_pinned(const struct conn *c, struct rules_addr *a)
{
	const struct sockaddr *sa = (const struct sockaddr *)&c->req.addr;

	memset(a, 0, sizeof(*a));
	if (c->req.addrlen == 0)
		return -1;
	if (sa->sa_family == AF_INET) {
		a->family = AF_INET;
		a->v4 = ((const struct sockaddr_in *)sa)->sin_addr;
	} else if (sa->sa_family == AF_INET6) {
		a->family = AF_INET6;
		a->v6 = ((const struct sockaddr_in6 *)sa)->sin6_addr;
	} else
		return -1;
	return 0;
}

void
conn_recheck(struct conn *c)
{
	struct run_policy pol;
	struct rules_decision d;
	struct rules_addr a;
	struct rules *ceiling;
	int ended = 0;

	if (c->closing || c->listener == CONN_LISTEN_CONTROL)
		return;
	memset(&pol, 0, sizeof(pol));
	ceiling = proxy_rules_get(c->p);
	if (c->run != NULL && run_policy(c->run, &pol) != 0)
		ended = 1;
	if (!ended && ceiling == c->rules && (c->run == NULL ||
	    pol.generation == c->policy_gen))
		goto out;	/* what decided it is still in force */
	if (c->req.host.len == 0 || c->req.d.verdict != RULES_ALLOW)
		goto keep;	/* nothing allowed is open on it */
	memset(&d, 0, sizeof(d));
	if (ended) {
		conn_revoke(c, &d, CONN_REASON_RUN_ENDED);
		goto out;
	}
	rules_decide_within(ceiling, pol.set, &c->req.host, c->req.port, &d);
	if (d.verdict == RULES_ALLOW && conn_pinned(c, &a) == 0)
		rules_check_addr_within(ceiling, pol.set, &a, c->req.port, &d);
	if (d.verdict != RULES_ALLOW &&
	    rules_mode(ceiling) != RULES_MODE_REPORT) {
		conn_revoke(c, &d, conn_reason_of(d.reason));
		goto out;
	}
	/* It stands: from now on it holds what is in force. */
 keep:
	if (c->decided_rules == NULL) {
		/* its decision's entry is in these: kept to its end */
		c->decided_rules = c->rules;
		c->decided_policy = c->policy;
		c->policy = NULL;
	} else
		rules_free(c->rules);
	if (ended)
		conn_run_drop(c);	/* its next request is no run's */
	c->rules = ceiling;
	ceiling = NULL;
	rules_free(c->policy);
	c->policy = pol.set;
	c->policy_gen = pol.generation;
	pol.set = NULL;
 out:
	rules_free(ceiling);
	rules_free(pol.set);
}
