/*
 * state.h — the proxy's state file, DIR/proxy.json, as the launcher reads it.
 *
 * intutic-proxy writes the file once it listens (a temporary file renamed
 * into place, so that a reader sees all of it or nothing) and removes it when
 * it exits:
 *
 *	{"pid": N, "port": N, "bind": ["127.0.0.1"], "rules": "/abs/path",
 *	 "audit": "path"|null, "control": "path", "dns": ["ADDR:PORT"],
 *	 "transparent": ["ADDR:PORT"], "started": EPOCH, "workers": N,
 *	 "version": "V"}
 *
 * It is JSON, read here with libyaml (a JSON object is a YAML flow mapping)
 * and strictly: one mapping, no key twice, each value of its JSON type, the
 * "bind" addresses IP addresses.  Keys it does not know are ignored.
 */
#ifndef INTUTIC_STATE_H
#define INTUTIC_STATE_H

#include <sys/types.h>

#include <limits.h>
#include <stddef.h>

#define STATE_FILE_MAX		(64 * 1024)	/* bytes */
#define STATE_BINDS_MAX		16	/* addresses in "bind" */
#define STATE_LISTENS_MAX	4	/* in "dns", in "transparent" */
#define STATE_ADDR_MAX		64	/* bytes of one address */
#define STATE_VERSION_MAX	32
#define STATE_ERROR_MAX		(PATH_MAX + 256)

/* What state_read() returns. */
#define STATE_OK		0
#define STATE_MISSING		1	/* there is no state file */
#define STATE_INVALID		2	/* unreadable, or malformed */

struct proxy_state {
	char		 path[PATH_MAX];	/* the file read */
	pid_t		 pid;
	unsigned int	 port;
	char		 bind[STATE_BINDS_MAX][STATE_ADDR_MAX];
	size_t		 nbind;			/* at least 1 */
	char		 rules[PATH_MAX];
	char		 audit[PATH_MAX];	/* "" for null */
	long long	 started;		/* seconds since the epoch */
	int		 workers;		/* 0 when not given */
	char		 version[STATE_VERSION_MAX]; /* "" when not given */
	char		 control[PATH_MAX];	/* the control socket; "" */
	/* "ADDR:PORT", "[ADDR]:PORT": the DNS filter's, the transparent ones */
	char		 dns[STATE_LISTENS_MAX][STATE_ADDR_MAX];
	size_t		 ndns;
	char		 transparent[STATE_LISTENS_MAX][STATE_ADDR_MAX];
	size_t		 ntransparent;
};

/*
 * Reads DIR/proxy.json into st.  Returns STATE_OK; STATE_MISSING when the
 * file does not exist (st->path is set); STATE_INVALID when it cannot be
 * read or is not a valid state file, with one line in err naming the file
 * ("state file 'P' is malformed: line 1 column 9: ...").  st is cleared at
 * entry.
 */
int	 state_read(const char *dir, struct proxy_state *st, char *err,
	    size_t errlen);

/*
 * Removes st->path if it still names the same process (same pid and start
 * time): a proxy that started in the meantime keeps its file.  Returns 0
 * when the file is gone afterwards, -1 with errno set when it could not be
 * removed.
 */
int	 state_remove_stale(const struct proxy_state *st);

/*
 * "ADDR:PORT" for each bind address, IPv6 ones in brackets, joined with
 * ", " into buf (truncated to fit).  Returns buf.
 */
const char	*state_listen_text(const struct proxy_state *st, char *buf,
		    size_t len);

#endif /* INTUTIC_STATE_H */
