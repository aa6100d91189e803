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

/*
 * http://HOST:PORT with an optional "/" and nothing else, as libcurl (which
 * then talks to it) parses it; 0 or -1.
 */
static int
locate_parse_url(const char *url, struct proxy_loc *loc, char *err,
    size_t errlen)
{
	struct fetch_url u;
	char why[FETCH_ERROR_MAX];

	if (fetch_url_parse(url, &u, why, sizeof(why)) != 0)
		goto bad;
	if (u.has_userinfo) {
		snprintf(err, errlen, "the proxy URL must not carry credentials");
		return -1;
	}
	if (strcmp(u.scheme, "http") != 0 || u.port == 0 || u.has_path ||
	    u.has_query || u.has_fragment ||
	    strlen(u.host) >= sizeof(loc->host))
		goto bad;
	snprintf(loc->host, sizeof(loc->host), "%s", u.host);
	loc->port = u.port;
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
	struct proxy_state st;

	memset(loc, 0, sizeof(*loc));
	if (config_state_dir_find(state_dir, dir, sizeof(dir)) != 0) {
		snprintf(err, errlen, "no state directory");
		return -1;
	}
	if (url != NULL) {
		if (locate_parse_url(url, loc, err, errlen) != 0)
			return -1;
		snprintf(loc->source, sizeof(loc->source), "--proxy");
	} else if (env != NULL && *env != '\0') {
		if (locate_parse_url(env, loc, err, errlen) != 0)
			return -1;
		snprintf(loc->source, sizeof(loc->source), "INTUTIC_PROXY_URL");
	} else {
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
	if (loc->have_state)
		snprintf(loc->control, sizeof(loc->control), "%s",
		    loc->st.control);
	else if ((url != NULL || (env != NULL && *env != '\0')) &&
	    state_read(dir, &st, serr, sizeof(serr)) == STATE_OK &&
	    st.port == loc->port)
		snprintf(loc->control, sizeof(loc->control), "%s", st.control);
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
