/*
 * fetch.h — one HTTP GET from the launcher (the proxy's /metrics page).
 * fetch.c is the launcher's one file that uses libcurl.
 */
#ifndef INTUTIC_FETCH_H
#define INTUTIC_FETCH_H

#include <stddef.h>

#define FETCH_TIMEOUT_MS	3000		/* the whole request */
#define FETCH_BODY_MAX		(1024 * 1024)	/* bytes of a body */
#define FETCH_ERROR_MAX		256

/*
 * GETs url (http only), never through a proxy (CURLOPT_NOPROXY "*", so no
 * *_proxy variable applies), following no redirect, within
 * FETCH_TIMEOUT_MS.  On a 200 answer of at most FETCH_BODY_MAX bytes, *body
 * gets the body, NUL-terminated, for the caller to free, and *len its length;
 * returns 0.  Else returns -1 with one line in err ("HTTP 404", "Couldn't
 * connect to server: ...") and *body NULL.
 */
int	 fetch_get(const char *url, char **body, size_t *len, char *err,
	    size_t errlen);

#endif /* INTUTIC_FETCH_H */
