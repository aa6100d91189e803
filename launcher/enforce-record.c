/*
 * enforce-record.c — the record of what `intutic enforce on` installed (see
 * enforce-record.h).
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "enforce-record.h"
#include "hostfw.h"
#include "jsonobj.h"
#include "proc.h"
#include "state.h"

#define REC_STATUS_LINE_MAX	256	/* bytes of a /proc/PID/status line */

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE		71	/* Linux 5.14 */
#endif

enum rec_key {
	REC_KEY_NETNS,
	REC_KEY_SINCE,
	REC_KEY_UID,
	REC_KEY_PROXY,
	REC_KEY_ALLOW,
	REC_KEY_DNS_TO,
	REC_KEY_VERSION,
	REC_KEY_COUNT
};

static const char *const rec_key_names[REC_KEY_COUNT] = {
	[REC_KEY_NETNS] = "netns",
	[REC_KEY_SINCE] = "since",
	[REC_KEY_UID] = "uid",
	[REC_KEY_PROXY] = "proxy",
	[REC_KEY_ALLOW] = "allow",
	[REC_KEY_DNS_TO] = "dns_to",
	[REC_KEY_VERSION] = "version",
};

#define REC_KEYS_REQUIRED \
	((1U << REC_KEY_NETNS) | (1U << REC_KEY_SINCE) | \
	(1U << REC_KEY_UID) | (1U << REC_KEY_PROXY) | \
	(1U << REC_KEY_ALLOW) | (1U << REC_KEY_DNS_TO))

/* This network namespace's cookie.  0, or -1 (why). */
static int
rec_netns(unsigned long long *cookie, char *why, size_t whylen)
{
	uint64_t c = 0;
	socklen_t len = sizeof(c);
	int fd, r;

	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(why, whylen, "cannot make a socket: %s",
		    strerror(errno));
		return -1;
	}
	r = getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &c, &len);
	close(fd);
	if (r == -1) {
		snprintf(why, whylen, "cannot tell this network namespace "
		    "(SO_NETNS_COOKIE, Linux 5.14 or later): %s",
		    strerror(errno));
		return -1;
	}
	*cookie = c;
	return 0;
}

/* This namespace's record, into buf, and its cookie.  0, or -1 (why). */
static int
rec_path(char *buf, size_t len, unsigned long long *cookie, char *why,
    size_t whylen)
{
	if (rec_netns(cookie, why, whylen) != 0)
		return -1;
	snprintf(buf, len, "%s/net-%llu.json", ENFORCE_RECORD_DIR, *cookie);
	return 0;
}

/* The directory, root's and written by root only (made if missing). */
static int
rec_dir(int make, char *why, size_t whylen)
{
	struct stat sb;

	if (make && mkdir(ENFORCE_RECORD_DIR, 0755) == -1 && errno != EEXIST) {
		snprintf(why, whylen, "cannot make %s: %s", ENFORCE_RECORD_DIR,
		    strerror(errno));
		return -1;
	}
	if (lstat(ENFORCE_RECORD_DIR, &sb) == -1) {
		snprintf(why, whylen, "%s: %s", ENFORCE_RECORD_DIR,
		    strerror(errno));
		return -1;
	}
	if (!S_ISDIR(sb.st_mode) || sb.st_uid != 0 ||
	    (sb.st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(why, whylen, "%s is not to be trusted: it must be a "
		    "directory that belongs to root and that only root can "
		    "write (remove it, and run intutic enforce on again)",
		    ENFORCE_RECORD_DIR);
		errno = EPERM;
		return -1;
	}
	return 0;
}

static void
rec_net_list(FILE *fp, const struct hostfw_net *n, size_t count)
{
	char t[HOSTFW_NET_TEXT_MAX];
	size_t i;

	fputc('[', fp);
	for (i = 0; i < count; i++)
		fprintf(fp, "%s\"%s\"", i > 0 ? ", " : "",
		    hostfw_net_text(&n[i], t, sizeof(t)));
	fputc(']', fp);
}

int
enforce_record_write(const struct hostfw_config *cfg, char *why,
    size_t whylen)
{
	char path[PATH_MAX], tmp[PATH_MAX], t[HOSTFW_NET_TEXT_MAX];
	unsigned long long c;
	FILE *fp;
	int fd, e;

	if (rec_path(path, sizeof(path), &c, why, whylen) != 0 ||
	    rec_dir(1, why, whylen) != 0)
		return -1;
	snprintf(tmp, sizeof(tmp), "%s/.net-%llu.XXXXXX", ENFORCE_RECORD_DIR,
	    c);
	if ((fd = mkstemp(tmp)) == -1) {
		snprintf(why, whylen, "cannot write in %s: %s",
		    ENFORCE_RECORD_DIR, strerror(errno));
		return -1;
	}
	if (fchmod(fd, 0644) == -1 || (fp = fdopen(fd, "w")) == NULL) {
		e = errno;
		close(fd);
		goto fail;
	}
	fprintf(fp, "{\"netns\": %llu, \"since\": %lld, \"uid\": %lu, "
	    "\"proxy\": ", c, (long long)time(NULL), (unsigned long)cfg->uid);
	rec_net_list(fp, cfg->proxy, cfg->nproxy);
	fprintf(fp, ", \"allow\": ");
	rec_net_list(fp, cfg->allow, cfg->nallow);
	if (cfg->dns_to_set)
		fprintf(fp, ", \"dns_to\": \"%s\"",
		    hostfw_net_text(&cfg->dns_to, t, sizeof(t)));
	else
		fprintf(fp, ", \"dns_to\": null");
	fprintf(fp, ", \"version\": \"%s\"}\n", PACKAGE_VERSION);
	if (fflush(fp) != 0 || fsync(fileno(fp)) != 0) {
		e = errno;
		fclose(fp);
		goto fail;
	}
	if (fclose(fp) != 0) {
		e = errno;
		goto fail;
	}
	if (rename(tmp, path) == -1) {
		e = errno;
		goto fail;
	}
	return 0;
 fail:
	unlink(tmp);
	snprintf(why, whylen, "cannot write %s: %s", path, strerror(e));
	return -1;
}

int
enforce_record_remove(char *why, size_t whylen)
{
	char path[PATH_MAX];
	unsigned long long c;

	if (rec_path(path, sizeof(path), &c, why, whylen) != 0)
		return -1;
	if (unlink(path) == -1 && errno != ENOENT) {
		snprintf(why, whylen, "cannot remove %s: %s", path,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/* A list of networks into n (at most max): each as hostfw_net_parse(). */
static int
rec_nets(struct jsonobj_ctx *ctx, const char *key, int need_port,
    struct hostfw_net *n, size_t max, size_t *count)
{
	char (*t)[HOSTFW_NET_TEXT_MAX];
	size_t i;
	int r = 0;

	if ((t = calloc(max, sizeof(*t))) == NULL)
		return jsonobj_error(ctx, "out of memory");
	if (jsonobj_strings(ctx, key, &t[0][0], sizeof(t[0]), max,
	    count) != 0)
		r = -1;
	for (i = 0; r == 0 && i < *count; i++)
		if (hostfw_net_parse(t[i], need_port, &n[i]) != 0)
			r = jsonobj_error(ctx, "'%s' holds '%s', not a "
			    "CIDR[:PORT]", key, t[i]);
	free(t);
	return r;
}

static int
rec_value(struct jsonobj_ctx *ctx, int k, void *out)
{
	struct enforce_record *rec = out;
	const char *name = rec_key_names[k];
	char t[HOSTFW_NET_TEXT_MAX];
	long long n;

	switch ((enum rec_key)k) {
	case REC_KEY_NETNS:
		if (jsonobj_number(ctx, name, 0, 999999999999999999LL,
		    &n) != 0)
			return -1;
		rec->netns = (unsigned long long)n;
		return 0;
	case REC_KEY_SINCE:
		if (jsonobj_number(ctx, name, 0, 999999999999LL, &n) != 0)
			return -1;
		rec->since = n;
		return 0;
	case REC_KEY_UID:
		if (jsonobj_number(ctx, name, 1, UINT32_MAX - 1, &n) != 0)
			return -1;
		rec->cfg.uid = (uid_t)n;
		return 0;
	case REC_KEY_PROXY:
		return rec_nets(ctx, name, 1, rec->cfg.proxy,
		    HOSTFW_PROXY_MAX, &rec->cfg.nproxy);
	case REC_KEY_ALLOW:
		return rec_nets(ctx, name, 0, rec->cfg.allow,
		    HOSTFW_ALLOW_MAX, &rec->cfg.nallow);
	case REC_KEY_DNS_TO:
		if (jsonobj_is_null(ctx))
			return 0;
		if (jsonobj_string(ctx, name, t, sizeof(t)) != 0)
			return -1;
		if (hostfw_net_parse(t, 1, &rec->cfg.dns_to) != 0)
			return jsonobj_error(ctx, "'%s' holds '%s', not an "
			    "ADDR:PORT", name, t);
		rec->cfg.dns_to_set = 1;
		return 0;
	case REC_KEY_VERSION:
		return jsonobj_string(ctx, name, rec->version,
		    sizeof(rec->version));
	case REC_KEY_COUNT:
		break;
	}
	return jsonobj_error(ctx, "unexpected key");
}

static const struct jsonobj_schema rec_schema = {
	.what = "enforce record",
	.keys = rec_key_names,
	.nkeys = REC_KEY_COUNT,
	.required = REC_KEYS_REQUIRED,
	.max_bytes = ENFORCE_RECORD_MAX,
	.flags = JSONOBJ_ROOT_OWNED,
	.value = rec_value,
};

int
enforce_record_read(struct enforce_record *rec, char *err, size_t errlen)
{
	unsigned long long c;
	int r;

	memset(rec, 0, sizeof(*rec));
	if (rec_path(rec->path, sizeof(rec->path), &c, err, errlen) != 0)
		return ENFORCE_RECORD_INVALID;
	if (access(ENFORCE_RECORD_DIR, F_OK) == -1 && errno == ENOENT)
		return ENFORCE_RECORD_MISSING;
	if (rec_dir(0, err, errlen) != 0)
		return ENFORCE_RECORD_INVALID;
	r = jsonobj_read(&rec_schema, rec->path, rec, err, errlen);
	if (r == JSONOBJ_OK && c != rec->netns) {
		snprintf(err, errlen, "enforce record '%s' names another "
		    "network namespace (%llu)", rec->path, rec->netns);
		r = JSONOBJ_INVALID;
	}
	return r == JSONOBJ_OK ? ENFORCE_RECORD_OK : r == JSONOBJ_MISSING ?
	    ENFORCE_RECORD_MISSING : ENFORCE_RECORD_INVALID;
}

/* --- what enforce installs for the running proxy ------------------------------ */

/*
 * The user the proxy's sockets belong to: the filesystem uid of pid (the
 * kernel gives a socket the fsuid of its creator), read from
 * /proc/PID/status.  Returns 0, or -1.
 */
static int
rec_proc_uid(pid_t pid, uid_t *uid)
{
	char path[64], line[REC_STATUS_LINE_MAX];
	unsigned long r, e, s, f;
	FILE *fp;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if ((fp = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), fp) != NULL)
		if (sscanf(line, "Uid: %lu %lu %lu %lu", &r, &e, &s, &f) ==
		    4) {
			found = 1;
			break;
		}
	fclose(fp);
	if (!found)
		return -1;
	*uid = (uid_t)f;
	return 0;
}

/*
 * A listener of the state file ("ADDR:PORT") as the host reaches it: a
 * wildcard address is loopback's.  0, or -1 (not an ADDR:PORT).
 */
static int
rec_listener(const char *text, struct hostfw_net *n)
{
	static const unsigned char any[16];

	if (hostfw_net_parse(text, 1, n) != 0)
		return -1;
	if (memcmp(n->addr, any, n->family == AF_INET ? 4 : 16) == 0) {
		if (n->family == AF_INET) {
			n->addr[0] = 127;
			n->addr[3] = 1;
		} else
			n->addr[15] = 1;
	}
	return 0;
}

/*
 * The running proxy, if there is one: its user and its addresses into cfg.
 * Returns 1 when it runs, 0 when it does not, -1 after an error.
 */
int
enforce_proxy_config(const char *dir, struct hostfw_config *cfg, int want_uid,
    struct hostfw_net *dns, struct hostfw_net *transparent, char *err,
    size_t errlen)
{
	struct proxy_state st;
	struct proc p;
	struct hostfw_net *n;
	size_t i;
	uid_t uid;
	int r;

	if (dns != NULL)
		dns->family = 0;
	if (transparent != NULL)
		transparent->family = 0;
	switch (state_read(dir, &st, err, errlen)) {
	case STATE_OK:
		break;
	case STATE_MISSING:
		return 0;
	default:
		return -1;
	}
	if (proc_open(&p, st.pid) != 0)
		return 0;
	r = proc_kind(&p, NULL, 0) == PROC_PROXY &&
	    rec_proc_uid(st.pid, &uid) == 0 &&
	    proc_kind(&p, NULL, 0) == PROC_PROXY;
	proc_close(&p);
	if (!r)
		return 0;
	if (want_uid)
		cfg->uid = uid;
	for (i = 0; i < st.nbind && cfg->nproxy < HOSTFW_PROXY_MAX; i++) {
		/* A wildcard address is this host's: reached over loopback. */
		if (strcmp(st.bind[i], "0.0.0.0") == 0 ||
		    strcmp(st.bind[i], "::") == 0)
			continue;
		n = &cfg->proxy[cfg->nproxy];
		memset(n, 0, sizeof(*n));
		if (inet_pton(AF_INET, st.bind[i], n->addr) == 1) {
			n->family = AF_INET;
			n->prefix = 32;
		} else if (inet_pton(AF_INET6, st.bind[i], n->addr) == 1) {
			n->family = AF_INET6;
			n->prefix = 128;
		} else
			continue;
		n->port = st.port;
		cfg->nproxy++;
	}
	if (dns != NULL && (st.ndns == 0 || rec_listener(st.dns[0], dns) != 0))
		dns->family = 0;
	if (transparent != NULL && (st.ntransparent == 0 ||
	    rec_listener(st.transparent[0], transparent) != 0))
		transparent->family = 0;
	return 1;
}

