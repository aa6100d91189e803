/*
 * rules-pick.c — which address of a name is dialled: rules_pick_addr(),
 * the one place where that is decided, for the proxy (proxy/conn.c) and
 * for `intutic rules test` (launcher/cmd-rules.c) alike.  See rules.h.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <stdio.h>
#include <string.h>

#include "rules.h"

/* The two passes of the resolver order: IPv4 answers, then the rest. */
static int
in_pass(int family, int pass)
{
	return pass == 0 ? family == AF_INET : family != AF_INET;
}

void
rules_pick_addr(const struct rules *r, const struct rules_addr *addrs,
    const unsigned char *skip, size_t n, uint16_t port,
    struct rules_pick *out)
{
	rules_pick_addr_within(r, NULL, addrs, skip, n, port, out);
}

void
rules_pick_addr_within(const struct rules *r, const struct rules *policy,
    const struct rules_addr *addrs, const unsigned char *skip, size_t n,
    uint16_t port, struct rules_pick *out)
{
	struct rules_decision *d;
	size_t i, k = 0;
	int pass, family;

	memset(out, 0, sizeof(*out));
	if (n > RULES_PICK_MAX)
		n = RULES_PICK_MAX;
	out->n = n;
	out->picked = out->dial = n;
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < n; i++) {
			family = addrs[i].family;
			if (!in_pass(family, pass))
				continue;
			out->order[k++] = i;
			if ((family != AF_INET && family != AF_INET6) ||
			    (skip != NULL && skip[i] != 0)) {
				out->state[i] = RULES_PICK_SKIPPED;
				out->nskipped++;
				continue;
			}
			if (out->picked != n)
				continue;	/* UNCHECKED: never dialled */
			d = &out->check[i];
			rules_check_addr_within(r, policy, &addrs[i], port, d);
			if (d->verdict == RULES_ALLOW) {
				out->state[i] = RULES_PICK_PICKED;
				out->picked = i;
			} else {
				out->state[i] = RULES_PICK_REFUSED;
				out->refused[out->nrefused++] = i;
			}
		}
	}
	if (out->picked != n) {
		out->d = out->check[out->picked];
		out->dial = out->picked;
	} else if (out->nrefused > 0) {
		out->d = out->check[out->refused[0]];
		if (rules_mode(r) == RULES_MODE_REPORT)
			out->dial = out->refused[0];
	}
	/* else: nothing checked, out->d stays zero (deny, not-allowlisted). */
}

const char *
rules_addr_text(const struct rules_addr *a, char *buf, size_t len)
{
	const char *s = NULL;

	if (len == 0)
		return buf;
	if (a->family == AF_INET)
		s = inet_ntop(AF_INET, &a->v4, buf, (socklen_t)len);
	else if (a->family == AF_INET6)
		s = inet_ntop(AF_INET6, &a->v6, buf, (socklen_t)len);
	if (s == NULL)
		snprintf(buf, len, "invalid");
	return buf;
}

/*
 * Appends s to buf (holding *used bytes); returns -1, leaving buf as it
 * was, when s and a final "..." would not both fit.
 */
static int
append(char *buf, size_t len, size_t *used, const char *s)
{
	size_t n = strlen(s);

	if (*used + n + sizeof("...") > len)
		return -1;
	memcpy(buf + *used, s, n + 1);
	*used += n;
	return 0;
}

const char *
rules_pick_refused_text(const struct rules_pick *p,
    const struct rules_addr *addrs, char *buf, size_t len)
{
	char item[RULES_ADDR_TEXT_MAX + RULES_WHERE_MAX + RULES_HOST_TEXT_MAX + 64];
	char text[RULES_ADDR_TEXT_MAX], where[RULES_WHERE_MAX];
	const struct rules_decision *d;
	const struct rules_addr *a;
	const char *class, *embedded;
	size_t i, used = 0;

	if (len == 0)
		return buf;
	buf[0] = '\0';
	for (i = 0; i < p->nrefused; i++) {
		a = &addrs[p->refused[i]];
		d = &p->check[p->refused[i]];
		rules_addr_text(a, text, sizeof(text));
		if (d->reason == RULES_REASON_DENIED && d->entry != NULL)
			snprintf(item, sizeof(item), "%s%s (deny %s at %s)",
			    i > 0 ? ", " : "", text, rules_entry_text(d->entry),
			    rules_entry_where(d->entry, where, sizeof(where)));
		else {
			class = d->addr_class != NULL ? d->addr_class :
			    rules_addr_class(a, NULL);
			(void)rules_addr_class(a, &embedded);
			snprintf(item, sizeof(item), "%s%s (%s%s%s)",
			    i > 0 ? ", " : "", text, class,
			    embedded != NULL ? " via " : "",
			    embedded != NULL ? embedded : "");
		}
		if (append(buf, len, &used, item) != 0) {
			/* "..." always fits: append() kept room for it. */
			if (used + sizeof("...") <= len)
				memcpy(buf + used, "...", sizeof("..."));
			break;
		}
	}
	return buf;
}
