/*
 * upstream.c — the parent proxy of --upstream-proxy (upstream.h): its URL
 * parsed by libcurl's URL API, its name looked up once, its credentials
 * read from a file of the operator's, and the CONNECT requests sent to it.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <event2/buffer.h>

#include "conn-core.h"
#include "crypto.h"
#include "upstream.h"

static int	upstream_err(char *, size_t, const char *, ...)
		    __attribute__((format(printf, 3, 4)));

/* Sets err and returns -1. */
static int
upstream_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* url's parts into u->host, u->port and u->url: 0, or -1 with err. */
static int
upstream_parse(struct upstream *u, const char *url, char *err, size_t errlen)
{
	CURLU *h;
	char *scheme = NULL, *host = NULL, *port = NULL, *user = NULL;
	char *path = NULL, *query = NULL, *frag = NULL;
	unsigned long n;
	char *end;
	int rc = -1;

	if ((h = curl_url()) == NULL)
		return upstream_err(err, errlen, "out of memory");
	if (curl_url_set(h, CURLUPART_URL, url, 0) != CURLUE_OK) {
		upstream_err(err, errlen, "--upstream-proxy %s: not a URL "
		    "(write http://HOST:PORT)", url);
		goto out;
	}
	(void)curl_url_get(h, CURLUPART_SCHEME, &scheme, 0);
	(void)curl_url_get(h, CURLUPART_HOST, &host, 0);
	(void)curl_url_get(h, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
	(void)curl_url_get(h, CURLUPART_USER, &user, 0);
	(void)curl_url_get(h, CURLUPART_PATH, &path, 0);
	(void)curl_url_get(h, CURLUPART_QUERY, &query, 0);
	(void)curl_url_get(h, CURLUPART_FRAGMENT, &frag, 0);
	if (scheme == NULL || strcmp(scheme, "http") != 0) {
		upstream_err(err, errlen, "--upstream-proxy %s: only http:// "
		    "parents are supported (the proxy speaks plain HTTP to "
		    "its parent; what it carries for an agent stays as the "
		    "agent sent it)", url);
		goto out;
	}
	if (user != NULL) {
		upstream_err(err, errlen, "--upstream-proxy %s: no credentials "
		    "in the URL (every user on the host sees a command line): "
		    "put USER:PASSWORD in a file of mode 600 and give "
		    "--upstream-proxy-auth FILE", url);
		goto out;
	}
	if ((path != NULL && strcmp(path, "/") != 0) || query != NULL ||
	    frag != NULL) {
		upstream_err(err, errlen, "--upstream-proxy %s: a parent proxy "
		    "is HOST and PORT only (write http://HOST:PORT)", url);
		goto out;
	}
	if (host == NULL || rules_host_parse(host, strlen(host),
	    &u->host) != RULES_OK) {
		upstream_err(err, errlen, "--upstream-proxy %s: the host is not "
		    "a valid name or address", url);
		goto out;
	}
	errno = 0;
	n = port != NULL ? strtoul(port, &end, 10) : 0;
	if (port == NULL || errno != 0 || *end != '\0' || n == 0 || n > 65535) {
		upstream_err(err, errlen, "--upstream-proxy %s: the port must be "
		    "1 to 65535", url);
		goto out;
	}
	u->port = (uint16_t)n;
	snprintf(u->url, sizeof(u->url), "http://%s:%u", u->host.text, u->port);
	rc = 0;
 out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(user);
	curl_free(path);
	curl_free(query);
	curl_free(frag);
	curl_url_cleanup(h);
	return rc;
}

/* The parent's addresses: a literal is its own; a name is looked up. */
static int
upstream_lookup(struct upstream *u, const char *url, char *err, size_t errlen)
{
	struct addrinfo hints, *res = NULL, *ai;
	char name[RULES_HOST_TEXT_MAX], text[64];
	size_t len = u->host.len;
	int e;

	/* getaddrinfo() takes an IPv6 literal bare */
	if (u->host.kind == RULES_HOST_IPV6 && len >= 2) {
		memcpy(name, u->host.text + 1, len - 2);
		name[len - 2] = '\0';
	} else
		snprintf(name, sizeof(name), "%s", u->host.text);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = u->host.kind == RULES_HOST_NAME ? 0 : AI_NUMERICHOST;
	if ((e = getaddrinfo(name, NULL, &hints, &res)) != 0)
		return upstream_err(err, errlen, "--upstream-proxy %s: cannot "
		    "look its name up: %s (give its address instead)", url,
		    gai_strerror(e));
	for (ai = res; ai != NULL && u->naddrs < UPSTREAM_ADDRS_MAX;
	    ai = ai->ai_next) {
		if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
		    ai->ai_addrlen > sizeof(u->addrs[0]))
			continue;
		memcpy(&u->addrs[u->naddrs], ai->ai_addr, ai->ai_addrlen);
		u->lens[u->naddrs] = ai->ai_addrlen;
		if (ai->ai_family == AF_INET)
			((struct sockaddr_in *)&u->addrs[u->naddrs])->sin_port =
			    htons(u->port);
		else
			((struct sockaddr_in6 *)&u->addrs[u->naddrs])->sin6_port =
			    htons(u->port);
		u->naddrs++;
	}
	freeaddrinfo(res);
	if (u->naddrs == 0)
		return upstream_err(err, errlen, "--upstream-proxy %s: its name "
		    "has no IPv4 or IPv6 address", url);
	conn_sockaddr_text((struct sockaddr *)&u->addrs[0], text, sizeof(text),
	    1);
	snprintf(u->addr_text, sizeof(u->addr_text), "%s", text);
	return 0;
}

/* The credentials of file as a Proxy-Authorization line: 0, or -1 with err. */
static int
upstream_auth(struct upstream *u, const char *file, char *err, size_t errlen)
{
	char buf[UPSTREAM_AUTH_MAX + 2], b64[(UPSTREAM_AUTH_MAX + 2) / 3 * 4 + 1];
	char *line, mode[8];
	struct stat st;
	ssize_t n;
	size_t len, i, need;
	int fd, rc = -1;

	if ((fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return upstream_err(err, errlen, "--upstream-proxy-auth %s: %s",
		    file, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		upstream_err(err, errlen, "--upstream-proxy-auth %s: %s", file,
		    "not a regular file");
		goto out;
	}
	if ((st.st_mode & 077) != 0) {
		snprintf(mode, sizeof(mode), "%o", (unsigned int)(st.st_mode & 0777));
		snprintf(err, errlen, "--upstream-proxy-auth %s: others may "
		    "read it (mode %s): chmod 600 %s", file, mode, file);
		goto out;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0) {
		upstream_err(err, errlen, "--upstream-proxy-auth %s: %s", file,
		    strerror(errno));
		goto out;
	}
	buf[n] = '\0';
	len = strcspn(buf, "\r\n");
	if (len == (size_t)n && (size_t)n > UPSTREAM_AUTH_MAX) {
		upstream_err(err, errlen, "--upstream-proxy-auth %s: the "
		    "credentials are longer than %d bytes", file, UPSTREAM_AUTH_MAX);
		goto out;
	}
	buf[len] = '\0';
	line = buf;
	for (i = 0; i < len; i++)
		if (iscntrl((unsigned char)line[i]))
			break;
	if (len == 0 || i < len || strchr(line, ':') == NULL ||
	    line[0] == ':') {
		upstream_err(err, errlen, "--upstream-proxy-auth %s: its first "
		    "line must be USER:PASSWORD", file);
		goto out;
	}
	crypto_base64_encode(line, len, b64, sizeof(b64));
	need = sizeof("Proxy-Authorization: Basic \r\n") + strlen(b64);
	if ((u->auth = malloc(need)) == NULL) {
		upstream_err(err, errlen, "out of memory");
		goto out;
	}
	snprintf(u->auth, need, "Proxy-Authorization: Basic %s\r\n", b64);
	rc = 0;
 out:
	explicit_bzero(buf, sizeof(buf));
	explicit_bzero(b64, sizeof(b64));
	close(fd);
	return rc;
}

struct upstream *
upstream_new(const char *url, const char *auth_file, char *err, size_t errlen)
{
	struct upstream *u;

	if ((u = calloc(1, sizeof(*u))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (upstream_parse(u, url, err, errlen) != 0 ||
	    upstream_lookup(u, url, err, errlen) != 0 ||
	    (auth_file != NULL && upstream_auth(u, auth_file, err,
	    errlen) != 0)) {
		upstream_free(u);
		return NULL;
	}
	return u;
}

void
upstream_free(struct upstream *u)
{
	if (u == NULL)
		return;
	if (u->auth != NULL) {
		explicit_bzero(u->auth, strlen(u->auth));
		free(u->auth);
	}
	free(u);
}

int
upstream_is_parent(const struct upstream *u, const struct rules_host *host)
{
	const struct sockaddr *sa;
	size_t i;

	if (host->kind == RULES_HOST_NAME)
		return u->host.kind == RULES_HOST_NAME &&
		    strcmp(host->text, u->host.text) == 0;
	for (i = 0; i < u->naddrs; i++) {
		sa = (const struct sockaddr *)&u->addrs[i];
		if (host->kind == RULES_HOST_IPV4 && sa->sa_family == AF_INET &&
		    memcmp(&((const struct sockaddr_in *)sa)->sin_addr,
		    &host->v4, sizeof(host->v4)) == 0)
			return 1;
		if (host->kind == RULES_HOST_IPV6 && sa->sa_family == AF_INET6 &&
		    memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr,
		    &host->v6, sizeof(host->v6)) == 0)
			return 1;
	}
	return 0;
}

void
upstream_authority(const struct rules_host *host, uint16_t port, char *buf,
    size_t len)
{
	/* The canonical text of an IPv6 literal has its brackets already. */
	snprintf(buf, len, "%s:%u", host->text, port);
}

int
upstream_connect_head(const struct upstream *u, const struct rules_host *host,
    uint16_t port, struct evbuffer *out)
{
	char authority[RULES_HOST_TEXT_MAX + 8];

	upstream_authority(host, port, authority, sizeof(authority));
	return evbuffer_add_printf(out, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n"
	    "%s\r\n", authority, authority, u->auth != NULL ? u->auth : "") < 0 ?
	    -1 : 0;
}
