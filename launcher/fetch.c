/*
 * fetch.c — one HTTP GET with libcurl (see fetch.h).  The launcher's only
 * file that includes <curl/curl.h>.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "fetch.h"

struct fetch_buf {
	char	*data;
	size_t	 len;
	int	 too_big;
};

static size_t
fetch_write_cb(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct fetch_buf *b = arg;
	size_t n = size * nmemb;
	char *p;

	if (n > FETCH_BODY_MAX - b->len) {
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

int
fetch_get(const char *url, char **body, size_t *len, char *err, size_t errlen)
{
	struct fetch_buf b = { NULL, 0, 0 };
	char cerr[CURL_ERROR_SIZE];
	CURL *c = NULL;
	CURLcode rc;
	long status = 0;
	int r = -1;

	*body = NULL;
	*len = 0;
	cerr[0] = '\0';
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "cannot initialise libcurl");
		return -1;
	}
	if ((c = curl_easy_init()) == NULL) {
		snprintf(err, errlen, "cannot initialise libcurl");
		goto out;
	}
	if (curl_easy_setopt(c, CURLOPT_URL, url) != CURLE_OK ||
#if LIBCURL_VERSION_NUM >= 0x075500
	    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http") != CURLE_OK ||
#else
	    curl_easy_setopt(c, CURLOPT_PROTOCOLS, (long)CURLPROTO_HTTP) !=
	    CURLE_OK ||
#endif
	    curl_easy_setopt(c, CURLOPT_NOPROXY, "*") != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
	    (long)FETCH_TIMEOUT_MS) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE,
	    (curl_off_t)FETCH_BODY_MAX) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fetch_write_cb) !=
	    CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b) != CURLE_OK) {
		snprintf(err, errlen, "cannot set up the request for '%s'",
		    url);
		goto out;
	}
	if ((rc = curl_easy_perform(c)) != CURLE_OK) {
		if (b.too_big || rc == CURLE_FILESIZE_EXCEEDED)
			snprintf(err, errlen, "the answer is larger than %d "
			    "bytes", FETCH_BODY_MAX);
		else
			snprintf(err, errlen, "%s%s%s", curl_easy_strerror(rc),
			    cerr[0] != '\0' ? ": " : "", cerr);
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		snprintf(err, errlen, "HTTP %ld", status);
		goto out;
	}
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
	if (c != NULL)
		curl_easy_cleanup(c);
	curl_global_cleanup();
	return r;
}
