/*
 * locate.h — where the proxy is (INTUTIC_PROXY_URL, else the state file
 * `intutic start` writes, else the default address) and whether it
 * answers GET /healthz.
 */
#ifndef INTUTIC_LOCATE_H
#define INTUTIC_LOCATE_H

#include <limits.h>

#include "state.h"

#define LOCATE_DEFAULT_HOST	"127.0.0.1"
#define LOCATE_DEFAULT_PORT	8877
#define LOCATE_HOST_MAX		256
#define LOCATE_URL_MAX		(LOCATE_HOST_MAX + 32)

struct proxy_loc {
	char		 host[LOCATE_HOST_MAX];	/* as in a URL ([::1] bracketed) */
	unsigned int	 port;
	char		 url[LOCATE_URL_MAX];	/* http://HOST:PORT, no path */
	char		 source[PATH_MAX + 32];	/* where it came from, for people */
	int		 have_state;		/* st is the state file read */
	struct proxy_state st;
	char		 control[PATH_MAX];	/* its control socket; "" */
};

/*
 * Finds the proxy: `url` (an option; NULL for none), else
 * INTUTIC_PROXY_URL, else the state file in `state_dir` (NULL: the
 * default state directory), else LOCATE_DEFAULT_HOST:PORT.  Its control
 * socket is the state file's; for a URL, that of the state file in
 * `state_dir` when that proxy listens on the URL's port.  -1 with a
 * message when a URL given is not http://HOST:PORT[/] or the state file is
 * unreadable.
 */
int	 proxy_locate(const char *url, const char *state_dir,
	    struct proxy_loc *loc, char *err, size_t errlen);

/* 0 when GET /healthz answers 200; else -1 and why. */
int	 proxy_healthy(const struct proxy_loc *loc, char *err, size_t errlen);

#endif /* INTUTIC_LOCATE_H */
