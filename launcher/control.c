/*
 * control.c — requests to the proxy's control socket (see control.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "fetch.h"

#define CONTROL_ANSWER_MAX	(4 * 1024 * 1024)	/* bytes of an answer */

int
control_request(const char *sock, const char *method, const char *path,
    const char *body, long *status, char **answer, char *why, size_t whylen)
{
	char url[256], ferr[FETCH_ERROR_MAX], *a = NULL;
	struct fetch_req req;
	size_t alen;

	if (answer != NULL)
		*answer = NULL;
	if (snprintf(url, sizeof(url), "http://localhost%s", path) >=
	    (int)sizeof(url)) {
		snprintf(why, whylen, "the path '%.64s...' is too long", path);
		return -1;
	}
	memset(&req, 0, sizeof(req));
	req.url = url;
	req.unix_socket = sock;
	req.method = method;
	req.body = body;
	req.bodylen = body != NULL ? strlen(body) : 0;
	req.content_type = body != NULL ? "application/json" : NULL;
	req.body_max = CONTROL_ANSWER_MAX;
	if (fetch(&req, status, &a, &alen, ferr, sizeof(ferr)) != 0) {
		snprintf(why, whylen, "%s (the control socket %.512s)", ferr,
		    sock);
		return -1;
	}
	if (*status >= 400 && alen > 0)
		snprintf(why, whylen, "HTTP %ld: %.*s", *status,
		    (int)strcspn(a, "\n"), a);
	else
		snprintf(why, whylen, "HTTP %ld", *status);
	if (answer != NULL)
		*answer = a;
	else
		free(a);
	return 0;
}
