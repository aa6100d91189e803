/*
 * locate.c — where the proxy is, and whether it answers (see locate.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch.h"
#include "intutic.h"
#include "locate.h"

/* http://HOST:PORT with an optional "/" and nothing else; 0 or -1. */
static int
locate_parse_url(const char *url, struct proxy_loc *loc, char *err,
    size_t errlen)
{
	const char *p = url, *hend, *colon;
	char *end;
	unsigned long port;
	size_t hlen;

	if (strncmp(p, "http://", 7) != 0)
		goto bad;
	p += 7;
	if (strchr(p, '@') != NULL) {
		snprintf(err, errlen, "the proxy URL must not carry credentials");
		return -1;
	}
	if (*p == '[') {
		if ((hend = strchr(p, ']')) == NULL)
			goto bad;
		hend++;
	} else
		hend = p + strcspn(p, ":/");
	hlen = (size_t)(hend - p);
	if (hlen == 0 || hlen >= sizeof(loc->host) || *hend != ':')
		goto bad;
	colon = hend;
	port = strtoul(colon + 1, &end, 10);
	if (end == colon + 1 || port == 0 || port > 65535 ||
	    (*end != '\0' && strcmp(end, "/") != 0))
		goto bad;
	memcpy(loc->host, p, hlen);
	loc->host[hlen] = '\0';
	loc->port = (unsigned int)port;
	return 0;
 bad:
	snprintf(err, errlen, "'%s' is not a proxy URL of the form "
	    "http://HOST:PORT", url);
	return -1;
}

int
proxy_locate(const char *url, const char *state_dir, struct proxy_loc *loc,
    char *err, size_t errlen)
{
	char dir[PATH_MAX], serr[STATE_ERROR_MAX];
	const char *env = getenv("INTUTIC_PROXY_URL");

	memset(loc, 0, sizeof(*loc));
	if (url != NULL) {
		if (locate_parse_url(url, loc, err, errlen) != 0)
			return -1;
		snprintf(loc->source, sizeof(loc->source), "--proxy");
	} else if (env != NULL && *env != '\0') {
		if (locate_parse_url(env, loc, err, errlen) != 0)
			return -1;
		snprintf(loc->source, sizeof(loc->source), "INTUTIC_PROXY_URL");
	} else {
		if (config_state_dir(state_dir, dir, sizeof(dir)) != 0) {
			snprintf(err, errlen, "no state directory");
			return -1;
		}
		switch (state_read(dir, &loc->st, serr, sizeof(serr))) {
		case STATE_OK:
			loc->have_state = 1;
			snprintf(loc->host, sizeof(loc->host),
			    strchr(loc->st.bind[0], ':') != NULL ? "[%s]" : "%s",
			    strcmp(loc->st.bind[0], "0.0.0.0") == 0 ?
			    "127.0.0.1" : strcmp(loc->st.bind[0], "::") == 0 ?
			    "::1" : loc->st.bind[0]);
			loc->port = loc->st.port;
			snprintf(loc->source, sizeof(loc->source),
			    "the state file %s", loc->st.path);
			break;
		case STATE_MISSING:
			snprintf(loc->host, sizeof(loc->host), "%s",
			    LOCATE_DEFAULT_HOST);
			loc->port = LOCATE_DEFAULT_PORT;
			snprintf(loc->source, sizeof(loc->source),
			    "the default address");
			break;
		default:
			snprintf(err, errlen, "%s", serr);
			return -1;
		}
	}
	snprintf(loc->url, sizeof(loc->url), "http://%s:%u", loc->host,
	    loc->port);
	return 0;
}

int
proxy_healthy(const struct proxy_loc *loc, char *err, size_t errlen)
{
	char url[LOCATE_URL_MAX + 16], ferr[FETCH_ERROR_MAX];
	char *body;
	size_t len;

	snprintf(url, sizeof(url), "%s/healthz", loc->url);
	if (fetch_get(url, &body, &len, ferr, sizeof(ferr)) != 0) {
		snprintf(err, errlen, "%s", ferr);
		return -1;
	}
	free(body);
	return 0;
}
