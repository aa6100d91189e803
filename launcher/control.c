/*
 * control.c — requests to the proxy's control socket (see control.h).
 */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "fetch.h"
#include "intutic.h"
#include "locate.h"
#include "wire.h"
#include "yread.h"

#define CONTROL_ANSWER_MAX	(4 * 1024 * 1024)	/* bytes of an answer */
#define CONTROL_ERROR_MAX	1024	/* bytes of an error message kept */
/* A change is answered once it is in force, which the proxy waits for up
 * to 5 s (its CONTROL_WAIT_MS): longer than fetch's default. */
#define CONTROL_TIMEOUT_MS	10000

int
control_find(const char *state_dir, struct proxy_loc *loc, char *why,
    size_t whylen)
{
	char err[PATH_MAX + 256];

	if (proxy_locate(NULL, state_dir, loc, err, sizeof(err)) != 0) {
		snprintf(why, whylen, "%s", err);
		return EXIT_CANNOT_RUN;
	}
	if (loc->control[0] != '\0')
		return 0;
	if (!loc->have_state && strcmp(loc->source, "INTUTIC_PROXY_URL") == 0) {
		snprintf(why, whylen, "not running (no state file of a proxy on "
		    "port %u, the port of INTUTIC_PROXY_URL, in the state "
		    "directory; give --state-dir, the directory the proxy was "
		    "started with)", loc->port);
		return EXIT_NOT_RUNNING;
	}
	if (!loc->have_state) {
		snprintf(why, whylen, "not running (no state file in the state "
		    "directory; start the proxy with `intutic start`, or give "
		    "--state-dir)");
		return EXIT_NOT_RUNNING;
	}
	snprintf(why, whylen, "the state file %s names no control socket (a "
	    "proxy older than this intutic: restart it)", loc->st.path);
	return EXIT_CANNOT_RUN;
}

/* {"error": MESSAGE}: MESSAGE, escaped, into arg (CONTROL_ERROR_MAX). */
static int
control_error_map(struct yread *p, void *arg)
{
	static const char *const keys[] = { WIRE_CONTROL_ERROR };
	char other[YREAD_QUOTE_BUF], *msg = arg;
	const yaml_event_t *ev = &p->ev;
	int k;

	while ((k = yread_pair(p, keys, 1, other, sizeof(other))) >= 0) {
		if (k == 1) {
			if (yread_skip(p) != 0)
				return -1;
			continue;
		}
		if (yread_string(p, keys[0], "a string") != 0)
			return -1;
		yread_escape(msg, CONTROL_ERROR_MAX,
		    (const char *)ev->data.scalar.value, ev->data.scalar.length,
		    SIZE_MAX);
	}
	return k == YREAD_END && msg[0] != '\0' ? 0 : -1;
}

/*
 * What an answer of status 400 or more says: the message of {"error":
 * MESSAGE} and the status; else its first line.
 */
static void
control_error_text(long status, const char *a, size_t alen, char *why,
    size_t whylen)
{
	char msg[CONTROL_ERROR_MAX], perr[256];
	struct yread p;

	msg[0] = '\0';
	yread_init(&p, "the answer", YREAD_TEXT, 1, a, alen, perr,
	    sizeof(perr));
	if (alen > 0 && yread_run(&p, control_error_map, msg) == 0)
		snprintf(why, whylen, "%s (HTTP %ld)", msg, status);
	else if (alen > 0)
		snprintf(why, whylen, "HTTP %ld: %.*s", status,
		    (int)strcspn(a, "\n"), a);
	else
		snprintf(why, whylen, "HTTP %ld", status);
}

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
	req.timeout_ms = CONTROL_TIMEOUT_MS;
	if (fetch(&req, status, &a, &alen, ferr, sizeof(ferr)) != 0) {
		snprintf(why, whylen, "%s (the control socket %.512s)", ferr,
		    sock);
		return -1;
	}
	if (*status >= 400)
		control_error_text(*status, a, alen, why, whylen);
	else
		snprintf(why, whylen, "HTTP %ld", *status);
	if (answer != NULL)
		*answer = a;
	else
		free(a);
	return 0;
}
