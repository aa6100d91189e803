/*
 * way-transparent.c — connections nftables redirected to a
 * --transparent-bind address (intutic-proxy(8), TRANSPARENT LISTENER):
 * clients that ignore the proxy settings, in a sandbox or under
 * `intutic enforce on --transparent`.
 *
 * The original destination is the kernel's (SO_ORIGINAL_DST); the name is
 * the client's, from its first bytes (conn_sniff(), as the peek after a
 * CONNECT has them): the SNI of a ClientHello, or the Host of a request
 * head.  That name, at the original port, is decided with the run's policy
 * as a CONNECT target is, resolved by the proxy and dialled: the original
 * address only when it is among the name's answers (else the mismatch is
 * recorded and the proxy's own answer is used).  Without a name (no SNI,
 * no Host, another protocol) the original address is decided as an address
 * literal, which only an allow CIDR lets through.  Then the bytes sniffed
 * go to the origin first, and the pair is a tunnel like a CONNECT's.
 *
 * Where the redirect was made in another network namespace (a
 * container's own table sends to the proxy on its bridge), this one's
 * connection tracking has no original destination: the port is then the
 * protocol's (443 for TLS, 80 or the Host's for HTTP) and there is no
 * original address to prefer.
 */
#include "config.h"

#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/netfilter_ipv4.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "conn-core.h"
#include "given.h"
#include "http.h"
#include "log.h"
#include "proxy.h"
#include "resolve.h"
#include "rules.h"

#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST	80	/* linux/netfilter_ipv6/ip6_tables.h */
#endif

#define TRANSPARENT_PORT_TLS	443
#define TRANSPARENT_PORT_HTTP	80

/* Whether a and b are the same address (ports aside). */
static int
same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return 0;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		    ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		    &((const struct sockaddr_in6 *)b)->sin6_addr,
		    sizeof(struct in6_addr)) == 0;
	return 0;
}

/*
 * The original destination, as this namespace's connection tracking has
 * it.  The listener's own address and port mean that nothing here
 * redirected the connection: not known.
 */
static void
transparent_accepted(struct conn *c, int fd, const struct sockaddr *here)
{
	struct sockaddr_storage orig;
	socklen_t olen = sizeof(orig);
	int r = -1;

	conn_req_begin(c, &conn_way_transparent, "transparent");
	conn_set_state(c, CONN_SNIFF);
	memset(&orig, 0, sizeof(orig));
	if (here->sa_family == AF_INET)
		r = getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &orig, &olen);
	else if (here->sa_family == AF_INET6)
		r = getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &orig,
		    &olen);
	if (r != 0 || orig.ss_family != here->sa_family ||
	    (same_addr((struct sockaddr *)&orig, here) &&
	    proxy_sockaddr_port((struct sockaddr *)&orig) ==
	    proxy_sockaddr_port(here)))
		return;
	c->orig = orig;
	c->orig_port = proxy_sockaddr_port((struct sockaddr *)&orig);
	conn_sockaddr_text((struct sockaddr *)&orig, c->orig_text,
	    sizeof(c->orig_text), 1);
}

/* The original address as a host literal: 0, or -1 when not known. */
static int
transparent_orig_host(struct conn *c)
{
	char text[CONN_ADDR_TEXT_MAX];

	if (c->orig_port == 0)
		return -1;
	conn_sockaddr_text((struct sockaddr *)&c->orig, text, sizeof(text), 0);
	return rules_host_parse(text, strlen(text), &c->req.host) ==
	    RULES_OK ? 0 : -1;
}

/*
 * A TLS client's name is its SNI.  0 with c->req.host set; -1 when
 * refused (answered).
 */
static int
transparent_tls(struct conn *c, const struct tls_hello *hello)
{
	c->req.port = c->orig_port != 0 ? c->orig_port : TRANSPARENT_PORT_TLS;
	if (hello->has_sni) {
		c->req.has_sni = 1;
		snprintf(c->req.sni, sizeof(c->req.sni), "%s", hello->sni);
		if (rules_host_parse(hello->sni, hello->sni_len,
		    &c->req.host) != RULES_OK ||
		    c->req.host.kind != RULES_HOST_NAME) {
			memset(&c->req.host, 0, sizeof(c->req.host));
			conn_deny(c, 403, CONN_REASON_INVALID_HOST,
			    "the SNI is not a host name");
			return -1;
		}
		return 0;
	}
	if (transparent_orig_host(c) != 0) {
		conn_deny(c, 403, CONN_REASON_SNI_MISSING, "a TLS client "
		    "redirected to the proxy must name its server (SNI)");
		return -1;
	}
	return 0;
}

/*
 * An HTTP client's name is its Host, which must be one, at the original
 * port, and agree with an absolute-form target.  0 with c->req.host set;
 * -1 when refused (answered).
 */
static int
transparent_http(struct conn *c, const struct http_head *h)
{
	const struct http_header *hd = http_header_find(h, "host");
	char value[RULES_HOST_TEXT_MAX + 8];
	uint16_t deflt = c->orig_port != 0 ? c->orig_port :
	    TRANSPARENT_PORT_HTTP;

	c->req.port = deflt;
	if (hd == NULL || hd->value_len == 0) {
		if (transparent_orig_host(c) != 0) {
			conn_deny(c, 403, CONN_REASON_HOST_MISMATCH, "an HTTP "
			    "request redirected to the proxy must name its "
			    "server (Host)");
			return -1;
		}
		return 0;
	}
	if (hd->value_len < sizeof(value)) {
		memcpy(value, hd->value, hd->value_len);
		value[hd->value_len] = '\0';
	} else
		value[0] = '\0';
	if (value[0] == '\0' || rules_hostport_parse(value, &c->req.host,
	    &c->req.port, deflt) != RULES_OK) {
		memset(&c->req.host, 0, sizeof(c->req.host));
		conn_deny(c, 403, CONN_REASON_INVALID_HOST,
		    "the Host header is not a valid host");
		return -1;
	}
	if (c->orig_port != 0 && c->req.port != c->orig_port) {
		conn_deny(c, 403, CONN_REASON_HOST_MISMATCH, "the Host header "
		    "names another port than the connection was made to");
		return -1;
	}
	if (!http_host_matches(h, &c->req.host, c->req.port) ||
	    !conn_target_ok(c, h)) {
		conn_deny(c, 403, CONN_REASON_HOST_MISMATCH, "the request "
		    "names more than one host (Host headers, or a target "
		    "that is not the Host)");
		return -1;
	}
	return 0;
}

/* The client's first bytes: its run, its name, the decision, the dial. */
static void
transparent_sniff(struct conn *c)
{
	enum conn_sniff kind;
	struct conn_sniffed s;
	int r;

	switch ((kind = conn_sniff(c, &s))) {
	case CONN_SNIFF_MORE:
		return;
	case CONN_SNIFF_ERROR:
		conn_close(c);
		return;
	case CONN_SNIFF_TLS:
	case CONN_SNIFF_BAD_TLS:
		c->req.answer = CONN_ANSWER_TLS;
		break;
	case CONN_SNIFF_HTTP:
	case CONN_SNIFF_BAD_HTTP:
		c->req.answer = CONN_ANSWER_HTTP;
		break;
	case CONN_SNIFF_OTHER:
		c->req.answer = CONN_ANSWER_CLOSE;
		break;
	}
	/* whose it is first: every record of it names its run */
	if (conn_identify(c, NULL) != 0) {
		free(s.h);
		return;
	}
	switch (kind) {
	case CONN_SNIFF_BAD_TLS:
		conn_deny(c, 403, CONN_REASON_BAD_TLS, s.why);
		return;
	case CONN_SNIFF_BAD_HTTP:
		conn_deny(c, s.status, CONN_REASON_BAD_REQUEST, s.why);
		return;
	case CONN_SNIFF_TLS:
		r = transparent_tls(c, &s.hello);
		break;
	case CONN_SNIFF_HTTP:
		r = transparent_http(c, s.h);
		free(s.h);
		break;
	default:
		/* No name: an address an allow CIDR covers, or nothing. */
		c->req.port = c->orig_port;
		if ((r = transparent_orig_host(c)) != 0)
			conn_deny(c, 403, CONN_REASON_PROTOCOL_NOT_ALLOWED,
			    "neither TLS nor HTTP, to an unknown destination");
		break;
	}
	/*
	 * What came stays in the client's input, the origin's first bytes
	 * once it is connected (conn_tunnel_enter()).
	 */
	if (r != 0 || conn_decide(c) != 0)
		return;
	conn_reach(c);
}

/* The original destination's address, as the rules see one. */
static void
orig_addr(const struct conn *c, struct rules_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->family = c->orig.ss_family;
	if (a->family == AF_INET)
		a->v4 = ((const struct sockaddr_in *)&c->orig)->sin_addr;
	else
		a->v6 = ((const struct sockaddr_in6 *)&c->orig)->sin6_addr;
}

/*
 * The name's answers: the original address alone when it is among them,
 * or when the DNS filter gave it to the run for that name (the client may
 * have been given another of a name's addresses than the proxy's own
 * look-up has now); else the mismatch is counted and recorded and the
 * proxy's own answers stand.
 */
static void
transparent_answers(struct conn *c, struct resolve_answers *ans)
{
	struct rules_addr a;
	size_t i;

	if (c->orig_port == 0)
		return;
	for (i = 0; i < ans->n; i++)
		if (same_addr((struct sockaddr *)&ans->addrs[i],
		    (struct sockaddr *)&c->orig))
			break;
	orig_addr(c, &a);
	if (i == ans->n && given_has(c->p->given, c->req.run,
	    c->req.host.text, &a)) {
		ans->addrs[0] = c->orig;
		ans->lens[0] = c->orig.ss_family == AF_INET ?
		    sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
		ans->n = 1;
		return;
	}
	if (i == ans->n) {
		c->req.mismatch = 1;
		METRIC_ADD(c->p, transparent_mismatches, 1);
		debug_f("%llu: %s is not among the addresses of %s",
		    (unsigned long long)c->id, c->orig_text, c->req.host.text);
		return;
	}
	if (i > 0) {
		ans->addrs[0] = ans->addrs[i];
		ans->lens[0] = ans->lens[i];
	}
	ans->n = 1;
}

/* Connected: the sniffed bytes go first, then it is a tunnel. */
static void
transparent_dialled(struct conn *c)
{
	conn_tunnel_start(c);
}

/* The client left, or errored, before its first bytes were judged. */
static void
transparent_client_event(struct conn *c, short what)
{
	(void)what;
	conn_decided(c, RULES_DENY, CONN_REASON_CLIENT_GONE);
	conn_close(c);
}

static int
transparent_claims(const struct http_head *h)
{
	(void)h;
	return 0;	/* it takes connections, not heads */
}

const struct conn_way conn_way_transparent = {
	.name = "transparent",
	.listeners = CONN_LISTEN_TRANSPARENT,
	.claims = transparent_claims,
	.dialled = transparent_dialled,
	.accepted = transparent_accepted,
	.answers = transparent_answers,
};

const struct conn_state_def conn_state_sniff = {
	.name = "sniff", .timeout = offsetof(struct proxy_config, peek_ms),
	.client_read = transparent_sniff,
	.client_event = transparent_client_event,
	.on_timeout = conn_peek_timeout,
	.client_io = CONN_IO_READ, .up_io = CONN_IO_KEEP, .wm = CONN_WM_PEEK,
};
