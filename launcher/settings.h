/*
 * settings.h — the workspace's enforcement level (off | recommend | require)
 * and where it came from: the workspace settings API (libcurl, through
 * fetch.c), its cache, the operator's local settings file.
 *
 * The sources:
 *
 *   - the workspace API, when INTUTIC_API_URL is set (and not empty):
 *     GET $INTUTIC_API_URL/api/v1/workspace/settings with "Authorization:
 *     Bearer $INTUTIC_TOKEN", TLS verified (INTUTIC_API_CA_FILE names a CA
 *     file to trust in place of the system's), no proxy, no redirect,
 *     SETTINGS_TIMEOUT_MS for all of it, at most SETTINGS_BODY_MAX bytes.
 *     http:// only to a loopback host (127.0.0.0/8, [::1], localhost).
 *     The answer is a JSON object: {"sandbox": {"enforcement": "require"}};
 *     other keys are ignored;
 *   - its cache, $XDG_CACHE_HOME/intutic/settings.json (else
 *     ~/.cache/intutic/settings.json): the level, the API URL it came from
 *     and when (seconds since the epoch), written after every good answer
 *     (a temporary file, mode 0600, fsync, rename) and read only when the
 *     API did not answer, only for the same URL, and only when this user
 *     owns it and no one else may write it;
 *   - the operator's file, /etc/intutic/settings.yaml (INTUTIC_SETTINGS_FILE
 *     names another one): "sandbox: {enforcement: require}".  It is the
 *     level when no API is configured, and when the API did not answer
 *     and nothing is cached for it; otherwise the API's level (or the
 *     cached one) counts unless the file's is stricter;
 *   - else, with an API configured, require; with none, off.
 *
 * Neither INTUTIC_TOKEN nor any part of it ever goes into the cache, the
 * source, the note or an error.
 */
#ifndef INTUTIC_SETTINGS_H
#define INTUTIC_SETTINGS_H

#include <stddef.h>

enum settings_level {
	SETTINGS_OFF = 0,
	SETTINGS_RECOMMEND,
	SETTINGS_REQUIRE,
};

#define SETTINGS_TEXT_MAX	1024	/* bytes of source and note */
#define SETTINGS_URL_MAX	512	/* bytes of INTUTIC_API_URL */
#define SETTINGS_ETAG_MAX	256	/* bytes of the API's ETag, kept */
#define SETTINGS_TOKEN_MAX	2048	/* bytes of INTUTIC_TOKEN */
#define SETTINGS_TIMEOUT_MS	3000	/* the whole API request */
#define SETTINGS_BODY_MAX	(64 * 1024)	/* bytes of the API's answer */
#define SETTINGS_FILE_MAX	(64 * 1024)	/* bytes of a settings file */
#define SETTINGS_API_PATH	"/api/v1/workspace/settings"
#define SETTINGS_LOCAL_FILE	"/etc/intutic/settings.yaml"
#define SETTINGS_CACHE_FILE	"settings.json"	/* in $XDG_CACHE_HOME/intutic */

/* What one settings document says. */
struct settings_vals {
	enum settings_level	 level;		/* sandbox.enforcement */
	int			 logins_deny;	/* sandbox.logins: deny */
};

struct settings {
	enum settings_level	 level;
	/* Where the level came from, for people: one line, no secret. */
	char			 source[SETTINGS_TEXT_MAX];
	/*
	 * Something the user must be told on stderr (the API did not answer
	 * and the cached level from 3 h ago is used, ...); "" when nothing.
	 * One line, lowercase, no program name: print "intutic: NOTE".
	 */
	char			 note[SETTINGS_TEXT_MAX];
	/*
	 * sandbox.logins: deny from any source (the API's answer or its
	 * cache, the local file; and the fail-closed default), which
	 * forbids `exec --sandbox-login`; where the deny came from.
	 */
	int			 logins_deny;
	char			 logins_source[SETTINGS_TEXT_MAX];
};

/*
 * The level in force now.  Never fails open: when no source can be read
 * (an API is configured, it does not answer and nothing is cached, and no
 * local file says otherwise) the level is SETTINGS_REQUIRE with a note.
 * -1 only for a configuration error the user must fix (a malformed local
 * settings file, an http:// API URL to a non-loopback host, ...), with
 * the message in err; out then says SETTINGS_REQUIRE, with no source.
 */
int		 settings_resolve(struct settings *out, char *err,
		    size_t errlen);

const char	*settings_level_str(enum settings_level level);

#define SETTINGS_RULES_PATH	"/api/v1/workspace/rules"
#define SETTINGS_RULES_MAX	(1024 * 1024)	/* bytes of the API's rules */

/*
 * The URL of the workspace API's rules, INTUTIC_API_URL with
 * /api/v1/workspace/rules, into url (urllen bytes): 0, or -1 with err when
 * no API is configured or its URL or INTUTIC_TOKEN is not usable.
 */
int		 settings_rules_url(char *url, size_t urllen, char *err,
		    size_t errlen);

/*
 * GETs the rules at url (settings_rules_url()) as the level is asked
 * (INTUTIC_TOKEN, INTUTIC_API_CA_FILE, within 3 s, no proxy, no redirect),
 * with If-None-Match: etag when it is not NULL.  0 with *body
 * (NUL-terminated, for the caller to free), *len and etag_out (the
 * answer's ETag, "" when none); 1 when the API answered 304 Not Modified;
 * -1 with why it gave no usable answer in err, which never holds the
 * token.
 */
/* Writes all len bytes of s to fd (EINTR retried): 0, or -1 with errno. */
int		 settings_write_all(int fd, const char *s, size_t len);

int		 settings_rules_fetch(const char *url, const char *etag,
		    char **body, size_t *len, char *etag_out,
		    size_t etag_outlen, char *err, size_t errlen);

/* The documents settings_resolve() reads, for settings_parse(). */
enum settings_doc {
	SETTINGS_DOC_API = 0,	/* the API's answer: JSON, other keys skipped */
	SETTINGS_DOC_CACHE,	/* the cache: JSON, {"level", "url", "fetched", ...} */
	SETTINGS_DOC_LOCAL,	/* the local file: YAML, no other key */
};

/*
 * Parses buf[0..len) (no NUL needed) the way settings_resolve() reads a
 * document of kind `doc`, messages starting with `name` (a file's path
 * for SETTINGS_DOC_LOCAL).  0 with *vals (for the cache, what it holds),
 * or -1 with the message in err.  The reader the three sources share;
 * exported for t/fuzz/fuzz-settings-json.c.
 */
int		 settings_parse(enum settings_doc doc, const char *name,
		    const char *buf, size_t len, struct settings_vals *vals,
		    char *err, size_t errlen);

#endif /* INTUTIC_SETTINGS_H */
