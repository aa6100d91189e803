/*
 * fetch.c — one HTTP GET with libcurl (see fetch.h).  The launcher's only
 * file that includes <curl/curl.h>.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <curl/curl.h>

#include "fetch.h"

struct fetch_buf {
	char	*data;
	size_t	 len;
	int	 too_big;
	size_t	 max;
};

static size_t
fetch_write_cb(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct fetch_buf *b = arg;
	size_t n = size * nmemb;
	char *p;

	if (n > b->max - b->len) {
		b->too_big = 1;
		return 0;	/* curl stops with CURLE_WRITE_ERROR */
	}
	if ((p = realloc(b->data, b->len + n + 1)) == NULL)
		return 0;
	memcpy(p + b->len, ptr, n);
	b->data = p;
	b->len += n;
	b->data[b->len] = '\0';
	return n;
}

/* Sets what a request needs; 0, or -1 when libcurl refused an option. */
static int
fetch_setup(CURL *c, const struct fetch_req *req, struct curl_slist **hdrs,
    struct fetch_buf *b, char *cerr)
{
	char line[FETCH_AUTH_MAX];
	size_t max = req->body_max != 0 ? req->body_max : FETCH_BODY_MAX;
	long timeout = req->timeout_ms != 0 ? req->timeout_ms :
	    FETCH_TIMEOUT_MS;
	struct curl_slist *l;
	int n;

	b->max = max;
	if (req->bearer != NULL) {
		n = snprintf(line, sizeof(line), "Authorization: Bearer %s",
		    req->bearer);
		l = n > 0 && (size_t)n < sizeof(line) ?
		    curl_slist_append(*hdrs, line) : NULL;
		explicit_bzero(line, sizeof(line));
		if (l == NULL)
			return -1;
		*hdrs = l;
	}
	if (req->content_type != NULL) {
		snprintf(line, sizeof(line), "Content-Type: %s",
		    req->content_type);
		if ((l = curl_slist_append(*hdrs, line)) == NULL)
			return -1;
		*hdrs = l;
	}
	if (req->if_none_match != NULL) {
		n = snprintf(line, sizeof(line), "If-None-Match: %s",
		    req->if_none_match);
		l = n > 0 && (size_t)n < sizeof(line) ?
		    curl_slist_append(*hdrs, line) : NULL;
		if (l == NULL)
			return -1;
		*hdrs = l;
	}
	/* A body goes with the head: no "Expect: 100-continue" and its wait. */
	if (req->body != NULL) {
		if ((l = curl_slist_append(*hdrs, "Expect:")) == NULL)
			return -1;
		*hdrs = l;
	}
	if (curl_easy_setopt(c, CURLOPT_URL, req->url) != CURLE_OK ||
#if LIBCURL_VERSION_NUM >= 0x075500
	    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR,
	    req->https ? "http,https" : "http") != CURLE_OK ||
#else
	    curl_easy_setopt(c, CURLOPT_PROTOCOLS, req->https ?
	    (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS) : (long)CURLPROTO_HTTP) !=
	    CURLE_OK ||
#endif
	    curl_easy_setopt(c, CURLOPT_NOPROXY, "*") != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_PROXY, "") != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK ||
	    (req->ca_file != NULL &&
	    curl_easy_setopt(c, CURLOPT_CAINFO, req->ca_file) != CURLE_OK) ||
	    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE,
	    (curl_off_t)max) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fetch_write_cb) !=
	    CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_WRITEDATA, b) != CURLE_OK ||
	    (*hdrs != NULL &&
	    curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdrs) != CURLE_OK))
		return -1;
	if (req->unix_socket != NULL && curl_easy_setopt(c,
	    CURLOPT_UNIX_SOCKET_PATH, req->unix_socket) != CURLE_OK)
		return -1;
	if (req->method != NULL && (strcmp(req->method, "DELETE") == 0 ||
	    strcmp(req->method, "PUT") == 0) &&
	    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method) != CURLE_OK)
		return -1;
	if (req->method != NULL && (strcmp(req->method, "POST") == 0 ||
	    strcmp(req->method, "PUT") == 0) &&
	    (curl_easy_setopt(c, CURLOPT_POST, 1L) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
	    (curl_off_t)req->bodylen) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_POSTFIELDS,
	    req->body != NULL ? req->body : "") != CURLE_OK))
		return -1;
	return 0;
}

/*
 * A unix socket's path as libcurl can connect to it: path itself, or when
 * it is longer than a sockaddr_un holds, /proc/self/fd/N/NAME through its
 * directory, opened as *dfd (the caller closes it).  NULL: it cannot be.
 */
static const char *
fetch_unix_path(const char *path, char *buf, size_t len, int *dfd)
{
	struct sockaddr_un sun;
	char dir[PATH_MAX];
	const char *slash;

	*dfd = -1;
	if (strlen(path) < sizeof(sun.sun_path))
		return path;
	errno = ENAMETOOLONG;
	if ((slash = strrchr(path, '/')) == NULL ||
	    (size_t)(slash - path) >= sizeof(dir))
		return NULL;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	if ((*dfd = open(dir[0] != '\0' ? dir : "/", O_PATH | O_DIRECTORY |
	    O_CLOEXEC)) == -1)
		return NULL;
	if (snprintf(buf, len, "/proc/self/fd/%d/%s", *dfd, slash + 1) >=
	    (int)len || strlen(buf) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	return buf;
}

/* The answer's ETag into buf (len bytes): "" when none or unusable. */
static void
fetch_etag(CURL *c, char *buf, size_t len)
{
	struct curl_header *h = NULL;
	const unsigned char *v;
	size_t n;

	buf[0] = '\0';
	if (curl_easy_header(c, "ETag", 0, CURLH_HEADER, -1, &h) != CURLHE_OK ||
	    h == NULL || h->value == NULL)
		return;
	n = strlen(h->value);
	if (n == 0 || n >= len)
		return;
	for (v = (const unsigned char *)h->value; *v != '\0'; v++)
		if (*v < 0x21 || *v > 0x7e)
			return;
	memcpy(buf, h->value, n + 1);
}

int
fetch(const struct fetch_req *req, long *status, char **body, size_t *len,
    char *err, size_t errlen)
{
	struct fetch_buf b = { NULL, 0, 0, 0 };
	struct curl_slist *hdrs = NULL;
	struct fetch_req rq = *req;
	char cerr[CURL_ERROR_SIZE], sock[64];
	CURL *c = NULL;
	CURLcode rc;
	int r = -1, dfd = -1;

	*status = 0;
	*body = NULL;
	*len = 0;
	cerr[0] = '\0';
	if (req->unix_socket != NULL && (rq.unix_socket = fetch_unix_path(
	    req->unix_socket, sock, sizeof(sock), &dfd)) == NULL) {
		snprintf(err, errlen, "cannot reach the unix socket: %s",
		    strerror(errno));
		if (dfd != -1)
			close(dfd);
		return -1;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "cannot initialise libcurl");
		return -1;
	}
	if ((c = curl_easy_init()) == NULL) {
		snprintf(err, errlen, "cannot initialise libcurl");
		goto out;
	}
	if (fetch_setup(c, &rq, &hdrs, &b, cerr) != 0) {
		snprintf(err, errlen, "cannot set up the request");
		goto out;
	}
	if ((rc = curl_easy_perform(c)) != CURLE_OK) {
		if (b.too_big || rc == CURLE_FILESIZE_EXCEEDED)
			snprintf(err, errlen, "the answer is larger than %zu "
			    "bytes", b.max);
		else
			snprintf(err, errlen, "%s%s%s", curl_easy_strerror(rc),
			    cerr[0] != '\0' ? ": " : "", cerr);
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	if (req->etag != NULL && req->etaglen > 0)
		fetch_etag(c, req->etag, req->etaglen);
	if (b.data == NULL && (b.data = calloc(1, 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	/* Take, then NULL. */
	*body = b.data;
	*len = b.len;
	b.data = NULL;
	r = 0;
 out:
	free(b.data);
	curl_slist_free_all(hdrs);
	if (c != NULL)
		curl_easy_cleanup(c);
	curl_global_cleanup();
	if (dfd != -1)
		close(dfd);
	return r;
}

int
fetch_get(const char *url, char **body, size_t *len, char *err, size_t errlen)
{
	struct fetch_req req = { .url = url };
	long status;

	if (fetch(&req, &status, body, len, err, errlen) != 0)
		return -1;
	if (status != 200) {
		snprintf(err, errlen, "HTTP %ld", status);
		free(*body);
		*body = NULL;
		*len = 0;
		return -1;
	}
	return 0;
}

/* --- URLs ------------------------------------------------------------------- */

/* Part `what` of h into buf: 1 when there, 0 when not, -1 (err) else. */
static int
fetch_url_part(CURLU *h, CURLUPart what, char *buf, size_t len)
{
	char *v = NULL;
	CURLUcode c;
	int r;

	c = curl_url_get(h, what, &v, 0);
	if (c != CURLUE_OK) {
		buf[0] = '\0';
		return c == CURLUE_OUT_OF_MEMORY ? -1 : 0;
	}
	r = snprintf(buf, len, "%s", v) < (int)len ? 1 : -1;
	curl_free(v);
	return r;
}

int
fetch_url_parse(const char *url, struct fetch_url *u, char *err, size_t errlen)
{
	char port[16], tmp[8], path[8];
	CURLUcode c;
	CURLU *h;
	unsigned long v;
	char *end;
	int r = -1;

	memset(u, 0, sizeof(*u));
	if ((h = curl_url()) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if ((c = curl_url_set(h, CURLUPART_URL, url, 0)) != CURLUE_OK) {
		snprintf(err, errlen, "%s", curl_url_strerror(c));
		goto out;
	}
	if (fetch_url_part(h, CURLUPART_SCHEME, u->scheme,
	    sizeof(u->scheme)) != 1 || (strcmp(u->scheme, "http") != 0 &&
	    strcmp(u->scheme, "https") != 0)) {
		snprintf(err, errlen, "not an http:// or https:// URL");
		goto out;
	}
	if (fetch_url_part(h, CURLUPART_HOST, u->host, sizeof(u->host)) != 1) {
		snprintf(err, errlen, "no host, or one too long");
		goto out;
	}
	if (fetch_url_part(h, CURLUPART_PORT, port, sizeof(port)) == 1) {
		v = strtoul(port, &end, 10);
		if (*end != '\0' || v == 0 || v > 65535) {
			snprintf(err, errlen, "port %s is not from 1 to 65535",
			    port);
			goto out;
		}
		u->port = (unsigned int)v;
	}
	u->has_userinfo = fetch_url_part(h, CURLUPART_USER, tmp,
	    sizeof(tmp)) != 0 || fetch_url_part(h, CURLUPART_PASSWORD, tmp,
	    sizeof(tmp)) != 0;
	u->has_query = fetch_url_part(h, CURLUPART_QUERY, tmp, sizeof(tmp)) != 0;
	u->has_fragment = fetch_url_part(h, CURLUPART_FRAGMENT, tmp,
	    sizeof(tmp)) != 0;
	u->has_path = fetch_url_part(h, CURLUPART_PATH, path,
	    sizeof(path)) != 0 && strcmp(path, "/") != 0 && path[0] != '\0';
	r = 0;
 out:
	curl_url_cleanup(h);
	return r;
}
