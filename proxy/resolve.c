/*
 * resolve.c — the hosts file and A/AAAA look-ups (see resolve.h).
 *
 * A look-up owns two evdns requests.  Its memory lives until both have
 * called back (a cancelled request still calls back, with DNS_ERR_CANCEL,
 * or DNS_ERR_SHUTDOWN when the evdns base is freed), so a callback never
 * touches freed memory; `cb` is cleared by resolve_cancel() so that the
 * caller is never called after it let go.
 */
#include "config.h"

#include <sys/stat.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/dns.h>

#include "rules.h"
#include "resolve.h"

struct hosts_entry {
	char			*name;	/* canonical */
	size_t			 seq;	/* line order, for a stable sort */
	struct sockaddr_storage	 ss;
	socklen_t		 len;
};

struct hosts {
	struct hosts_entry	*entries;	/* sorted by name */
	size_t			 n;
	char			*names;		/* the names' storage */
};

static int
entry_cmp(const void *a, const void *b)
{
	const struct hosts_entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	/* Keep the file's order among the addresses of one name. */
	if (c != 0)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int
parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		*len = sizeof(*s4);
		return 0;
	}
	if (strchr(s, '%') == NULL && inet_pton(AF_INET6, s, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		*len = sizeof(*s6);
		return 0;
	}
	return -1;
}

struct hosts *
hosts_load(const char *path, char *err, size_t errlen)
{
	struct hosts *h;
	struct hosts_entry *e;
	struct rules_host canon;
	struct sockaddr_storage ss;
	socklen_t sslen;
	FILE *fp;
	char line[4096], *save, *tok, *addr;
	size_t cap = 0, namelen = 0, names_cap = 0, i;
	struct stat st;

	if ((fp = fopen(path, "re")) == NULL) {
		snprintf(err, errlen, "cannot read hosts file '%s': %s", path,
		    strerror(errno));
		return NULL;
	}
	if (fstat(fileno(fp), &st) == 0 && st.st_size > HOSTS_FILE_MAX) {
		snprintf(err, errlen, "hosts file '%s' is larger than %d bytes",
		    path, HOSTS_FILE_MAX);
		fclose(fp);
		return NULL;
	}
	if ((h = calloc(1, sizeof(*h))) == NULL)
		goto nomem;
	/* Names are stored as offsets first, pointers once the storage is set. */
	while (fgets(line, sizeof(line), fp) != NULL) {
		if ((tok = strchr(line, '#')) != NULL)
			*tok = '\0';
		save = NULL;
		if ((addr = strtok_r(line, " \t\r\n", &save)) == NULL ||
		    parse_addr(addr, &ss, &sslen) != 0)
			continue;
		while ((tok = strtok_r(NULL, " \t\r\n", &save)) != NULL) {
			if (rules_host_parse(tok, strlen(tok), &canon) !=
			    RULES_OK || canon.kind != RULES_HOST_NAME)
				continue;
			if (h->n == cap) {
				cap = cap == 0 ? 64 : cap * 2;
				e = reallocarray(h->entries, cap, sizeof(*e));
				if (e == NULL)
					goto nomem;
				h->entries = e;
			}
			if (namelen + canon.len + 1 > names_cap) {
				char *n;

				names_cap = (names_cap + canon.len + 1) * 2;
				if ((n = realloc(h->names, names_cap)) == NULL)
					goto nomem;
				h->names = n;
			}
			e = &h->entries[h->n];
			e->seq = h->n++;
			e->name = (char *)(uintptr_t)namelen;
			e->ss = ss;
			e->len = sslen;
			memcpy(h->names + namelen, canon.text, canon.len + 1);
			namelen += canon.len + 1;
		}
	}
	fclose(fp);
	for (i = 0; i < h->n; i++)
		h->entries[i].name = h->names + (uintptr_t)h->entries[i].name;
	if (h->n > 0)
		qsort(h->entries, h->n, sizeof(*h->entries), entry_cmp);
	return h;
 nomem:
	snprintf(err, errlen, "out of memory reading '%s'", path);
	fclose(fp);
	hosts_free(h);
	return NULL;
}

void
hosts_free(struct hosts *h)
{
	if (h == NULL)
		return;
	free(h->entries);
	free(h->names);
	free(h);
}

/* The addresses the hosts file gives `name`; 0 when it is not there. */
static size_t
hosts_find(const struct hosts *h, const char *name,
    struct resolve_answers *out)
{
	size_t lo = 0, hi, mid, i;
	int c;

	if (h == NULL || h->n == 0)
		return 0;
	hi = h->n;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (strcmp(h->entries[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	out->n = 0;
	/* IPv4 first, then IPv6, each in the file's order. */
	for (c = 0; c < 2; c++) {
		for (i = lo; i < h->n && strcmp(h->entries[i].name, name) == 0;
		    i++) {
			if ((h->entries[i].ss.ss_family == AF_INET) != (c == 0))
				continue;
			if (out->n == RESOLVE_ANSWERS_MAX)
				break;
			out->addrs[out->n] = h->entries[i].ss;
			out->lens[out->n++] = h->entries[i].len;
		}
	}
	return out->n;
}

/* ------------------------------------------------------------ look-ups */

struct resolve {
	resolve_cb		 cb;		/* NULL once cancelled */
	void			*arg;
	struct evdns_base	*dns;
	struct evdns_request	*req[2];	/* A, AAAA */
	int			 err[2];	/* DNS_ERR_* of each */
	int			 pending;
	struct resolve_answers	 v4, v6;
	uint32_t		 ttl;		/* the least so far */
	int			 got_ttl;
};

/* An answer that says the look-up failed (not silence, not "no data"). */
static int
dns_failed(int err)
{
	return err != DNS_ERR_NONE && err != DNS_ERR_NODATA &&
	    err != DNS_ERR_NOTEXIST && err != DNS_ERR_TIMEOUT;
}

static void
resolve_finish(struct resolve *r)
{
	struct resolve_answers all;
	enum resolve_status st = RESOLVE_OK;
	size_t i;

	if (r->cb == NULL)
		return;
	all = r->v4;
	for (i = 0; i < r->v6.n && all.n < RESOLVE_ANSWERS_MAX; i++) {
		all.addrs[all.n] = r->v6.addrs[i];
		all.lens[all.n++] = r->v6.lens[i];
	}
	all.ttl = r->got_ttl ? r->ttl : 0;
	if (all.n == 0) {
		/*
		 * NXDOMAIN holds for every type; an answer that failed says
		 * more than silence; silence alone is a timeout.
		 */
		all.nodata = 0;
		if (r->err[0] == DNS_ERR_NOTEXIST || r->err[1] == DNS_ERR_NOTEXIST)
			st = RESOLVE_NONAME;
		else if (dns_failed(r->err[0]) || dns_failed(r->err[1]))
			st = RESOLVE_FAIL;
		else if (r->err[0] == DNS_ERR_TIMEOUT ||
		    r->err[1] == DNS_ERR_TIMEOUT)
			st = RESOLVE_TIMEOUT;
		else {
			st = RESOLVE_NONAME;	/* no address of either family */
			all.nodata = 1;
		}
	}
	r->cb(st, &all, r->arg);
}

static void
resolve_got(struct resolve *r, int which, int result, char type, int count,
    int ttl, void *addresses)
{
	struct resolve_answers *out = which == 0 ? &r->v4 : &r->v6;
	int i;

	r->req[which] = NULL;
	r->err[which] = result;
	if (result == DNS_ERR_NONE && addresses != NULL && count > 0) {
		if (ttl >= 0 && (!r->got_ttl || (uint32_t)ttl < r->ttl))
			r->ttl = (uint32_t)ttl;
		r->got_ttl = 1;
	}
	if (result == DNS_ERR_NONE && addresses != NULL) {
		for (i = 0; i < count && out->n < RESOLVE_ANSWERS_MAX; i++) {
			struct sockaddr_storage *ss = &out->addrs[out->n];

			memset(ss, 0, sizeof(*ss));
			if (type == DNS_IPv4_A) {
				struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

				s4->sin_family = AF_INET;
				memcpy(&s4->sin_addr, (char *)addresses + 4 * i, 4);
				out->lens[out->n++] = sizeof(*s4);
			} else if (type == DNS_IPv6_AAAA) {
				struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

				s6->sin6_family = AF_INET6;
				memcpy(&s6->sin6_addr, (char *)addresses + 16 * i,
				    16);
				out->lens[out->n++] = sizeof(*s6);
			}
		}
	}
	if (--r->pending > 0)
		return;
	resolve_finish(r);
	free(r);
}

static void
resolve_a_cb(int result, char type, int count, int ttl, void *addresses,
    void *arg)
{
	resolve_got(arg, 0, result, type, count, ttl, addresses);
}

static void
resolve_aaaa_cb(int result, char type, int count, int ttl, void *addresses,
    void *arg)
{
	resolve_got(arg, 1, result, type, count, ttl, addresses);
}

struct resolve *
resolve_start(struct evdns_base *dns, const struct hosts *h, const char *name,
    resolve_cb cb, void *arg)
{
	return resolve_start_for(dns, h, name, RESOLVE_WANT_A | RESOLVE_WANT_AAAA,
	    cb, arg);
}

/* Keeps the answers of the families wanted; how many are left. */
static size_t
answers_keep(struct resolve_answers *a, int want)
{
	size_t i, n = 0;

	for (i = 0; i < a->n; i++)
		if ((a->addrs[i].ss_family == AF_INET &&
		    (want & RESOLVE_WANT_A)) ||
		    (a->addrs[i].ss_family == AF_INET6 &&
		    (want & RESOLVE_WANT_AAAA))) {
			a->addrs[n] = a->addrs[i];
			a->lens[n++] = a->lens[i];
		}
	return a->n = n;
}

struct resolve *
resolve_start_for(struct evdns_base *dns, const struct hosts *h,
    const char *name, int want, resolve_cb cb, void *arg)
{
	struct resolve_answers found;
	struct resolve *r;

	/* A name in the hosts file is answered from there, or not at all. */
	if (hosts_find(h, name, &found) > 0) {
		found.ttl = 0;
		found.nodata = 1;	/* the name is there, as the file says */
		cb(answers_keep(&found, want) > 0 ? RESOLVE_OK : RESOLVE_NONAME,
		    &found, arg);
		return NULL;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		found.n = 0;
		cb(RESOLVE_FAIL, &found, arg);
		return NULL;
	}
	r->cb = cb;
	r->arg = arg;
	r->dns = dns;
	r->pending = 2;
	r->err[0] = r->err[1] = DNS_ERR_NODATA;	/* not asked: no data */
	if (want & RESOLVE_WANT_A)
		r->req[0] = evdns_base_resolve_ipv4(dns, name,
		    DNS_QUERY_NO_SEARCH, resolve_a_cb, r);
	if (r->req[0] == NULL) {
		if (want & RESOLVE_WANT_A)
			r->err[0] = DNS_ERR_UNKNOWN;
		r->pending--;
	}
	if (want & RESOLVE_WANT_AAAA)
		r->req[1] = evdns_base_resolve_ipv6(dns, name,
		    DNS_QUERY_NO_SEARCH, resolve_aaaa_cb, r);
	if (r->req[1] == NULL) {
		if (want & RESOLVE_WANT_AAAA)
			r->err[1] = DNS_ERR_UNKNOWN;
		r->pending--;
	}
	if (r->pending == 0) {
		resolve_finish(r);
		free(r);
		return NULL;
	}
	return r;
}

void
resolve_cancel(struct resolve *r)
{
	struct evdns_request *req[2];
	struct evdns_base *dns;
	int i;

	if (r == NULL)
		return;
	r->cb = NULL;
	/*
	 * Each cancelled request still calls back (DNS_ERR_CANCEL) and the
	 * last callback frees r: nothing of r is used after the first cancel.
	 */
	req[0] = r->req[0];
	req[1] = r->req[1];
	dns = r->dns;
	for (i = 0; i < 2; i++)
		if (req[i] != NULL)
			evdns_cancel_request(dns, req[i]);
}

const char *
resolve_strerror(enum resolve_status s)
{
	switch (s) {
	case RESOLVE_OK:
		return "ok";
	case RESOLVE_NONAME:
		return "no such name";
	case RESOLVE_TIMEOUT:
		return "no nameserver answered in time";
	case RESOLVE_FAIL:
		return "the nameserver failed";
	}
	return "the nameserver failed";
}
