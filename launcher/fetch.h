/*
 * fetch.h — the launcher's HTTP requests and the URLs they go to, parsed
 * by libcurl's URL API (CURLU), the parser of what fetches them.  fetch.c
 * is the launcher's one file that uses libcurl.
 */
#ifndef INTUTIC_FETCH_H
#define INTUTIC_FETCH_H

#include <stddef.h>

#define FETCH_TIMEOUT_MS	3000		/* the whole request */
#define FETCH_BODY_MAX		(1024 * 1024)	/* bytes of a body */
#define FETCH_ERROR_MAX		256
#define FETCH_AUTH_MAX		4096		/* bytes of an Authorization line */

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

/* One request, as fetch() makes it.  Zeroed fields take the defaults. */
struct fetch_req {
	const char	*url;
	const char	*method;	/* NULL: GET; "POST", "PUT" or "DELETE" */
	const char	*unix_socket;	/* NULL, or connect there (http://),
					   a path of any length */
	const char	*body;		/* POST, PUT: what to send */
	size_t		 bodylen;
	const char	*content_type;	/* its type, e.g. "application/json" */
	const char	*bearer;	/* Authorization: Bearer; never shown */
	const char	*ca_file;	/* https: trust this CA file, not the system's */
	int		 https;		/* allow https:// (else http:// only) */
	long		 timeout_ms;	/* 0: FETCH_TIMEOUT_MS, the whole request */
	size_t		 body_max;	/* 0: FETCH_BODY_MAX bytes of an answer */
	const char	*if_none_match;	/* NULL, or If-None-Match: this (an
					   entity tag the caller kept) */
	char		*etag;		/* NULL, or the answer's ETag here: ""
					   when it has none, or one longer
					   than etaglen - 1 bytes or not
					   printable ASCII */
	size_t		 etaglen;
};

/*
 * Makes the request (no proxy from the environment; redirects never
 * followed; TLS peers and names verified) and gives the answer's status
 * and body (NUL-terminated, the caller frees it).  0 when an answer came,
 * whatever its status; -1 when none did (refused, timed out, TLS failed,
 * too large, ...), with why in err: never the bearer token.
 */
int	 fetch(const struct fetch_req *req, long *status, char **body,
	    size_t *len, char *err, size_t errlen);

#define FETCH_URL_HOST_MAX	256	/* bytes of a host ([::1] bracketed) */

/* A URL's parts, as libcurl sees them. */
struct fetch_url {
	char		 scheme[8];		/* lowercase: "http", "https" */
	char		 host[FETCH_URL_HOST_MAX];	/* IPv6 in brackets */
	unsigned int	 port;			/* 0: none given */
	int		 has_userinfo;		/* user or password */
	int		 has_query;
	int		 has_fragment;
	int		 has_path;		/* a path other than "/" */
};

/*
 * Parses url (http:// or https:// only) into u.  0, or -1 with err naming
 * what libcurl found wrong.
 */
int	 fetch_url_parse(const char *url, struct fetch_url *u, char *err,
	    size_t errlen);

#endif /* INTUTIC_FETCH_H */
