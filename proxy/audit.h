/*
 * audit.h — the audit log: JSON Lines, one record per decision and one per
 * close (intutic-proxy(8), AUDIT LOG).  Each record is written with one write(2)
 * on a descriptor opened with O_APPEND, so a record is on disk (in the page
 * cache) as soon as audit_write() returns: nothing is buffered that a
 * SIGTERM or a crash could lose.  Safe to call from every worker.
 * Never put a header value, a token or a secret in a record.
 *
 * The same record can go to syslog instead (syslog(3), the JSON as the
 * message) or to the journal (journald's native protocol, one datagram:
 * the JSON as MESSAGE, PRIORITY, SYSLOG_IDENTIFIER and INTUTIC_* fields
 * beside it: intutic-proxy(8), AUDIT IN SYSLOG AND THE JOURNAL),
 * so that a host's logging pipeline carries it like any service's logs.
 */
#ifndef INTUTIC_AUDIT_H
#define INTUTIC_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#define AUDIT_RECORD_MAX	4096	/* bytes of one JSON line */

/* --audit's words that are no file (a file of that name: ./syslog). */
#define AUDIT_STDERR		"-"
#define AUDIT_SYSLOG		"syslog"
#define AUDIT_JOURNAL		"journal"

/* Who the records are from, in syslog and the journal. */
#define AUDIT_IDENT		"intutic-audit"
/* Where journald takes native messages; syslog(3) writes to /dev/log. */
#define AUDIT_JOURNAL_SOCKET	"/run/systemd/journal/socket"
#define AUDIT_SYSLOG_SOCKET	"/dev/log"

struct audit;

/*
 * A provider gateway call's own fields (proto "gateway", event "call"):
 * written when a record's call is set.  Token counts and times are -1
 * when not known; usage is "final", "partial" or "none".  Never a body,
 * a prompt, a query string or a request header value: key is a fingerprint (a
 * keyed hash), not any piece of the key.
 */
struct audit_call {
	const char	*provider;
	const char	*method;
	const char	*path;		/* without its query */
	const char	*model;		/* the request's */
	const char	*model_response;	/* the one the answer names */
	const char	*request_id;	/* the provider's */
	int64_t		 ttfb_us;	/* request head read to first byte back */
	int64_t		 latency_us;	/* request read to answer done */
	int		 stream;	/* 1, 0, or -1: not known */
	int64_t		 input_tokens;
	int64_t		 output_tokens;
	int64_t		 cache_read_tokens;
	int64_t		 cache_write_tokens;
	int64_t		 reasoning_tokens;
	const char	*usage;
	const char	*stop;		/* stop reason, finish reason, status */
	const char	*error;		/* the error type an answer names */
	const char	*key;		/* the key's fingerprint, or NULL */
	const char	*broker;	/* "passthrough" | "broker" */
	int		 malformed;	/* the answer was not what its API says */
};

/* One record; NULL strings and negative numbers are written as null. */
struct audit_record {
	const char	*event;		/* "decision" | "close" | "run" */
	uint64_t	 id;
	const char	*run;
	const char	*client;	/* "127.0.0.1:40000" */
	const char	*proto;		/* "connect" | "http" | "dns" */
	const char	*host;
	int		 port;
	const char	*sni;
	const char	*addr;		/* the address dialled */
	const char	*decision;	/* "allow" | "deny" */
	const char	*reason;
	const char	*rule;		/* "file:line" */
	int64_t		 bytes_up;	/* client to origin */
	int64_t		 bytes_down;
	int64_t		 duration_ms;
	int		 status;	/* HTTP status answered, or -1 */
	/* DNS filter records only (proto "dns"): written when qtype is set. */
	const char	*qtype;		/* "A", "AAAA", "HTTPS", "TYPE99" */
	const char	*rcode;		/* what was answered: "NOERROR", ... */
	const char	*answers;	/* the addresses given, "a,b", or NULL */
	/*
	 * Transparent records only (proto "transparent"): written when
	 * transparent is set.  original: the destination nftables redirected
	 * from, "ADDR:PORT" (NULL: not known); mismatch: the address dialled
	 * is not that one (not among the name's answers).
	 */
	int		 transparent;
	const char	*original;
	int		 mismatch;
	/* "run" records only (a run registered): written when command is set. */
	const char	*command;	/* the command's name */
	const char	*project;	/* its .intutic.yaml, or NULL */
	int64_t		 pid;
	/* Gateway call records only. */
	const struct audit_call *call;
};

/*
 * Opens the log at `path`: a file, AUDIT_STDERR, AUDIT_SYSLOG (facility
 * daemon, ident AUDIT_IDENT; refused when nothing takes datagrams at
 * AUDIT_SYSLOG_SOCKET) or AUDIT_JOURNAL (refused when nothing takes them
 * at AUDIT_JOURNAL_SOCKET).  Returns NULL with a message in err, saying
 * what to do, on failure.
 */
struct audit	*audit_open(const char *path, char *err, size_t errlen);

/* Whether --audit's value names a file (not -, syslog or journal). */
int		 audit_is_file(const char *path);

/*
 * Reopens the file (logrotate, SIGUSR1); nothing to do for the others.
 * Returns 0, or -1 keeping the old.
 */
int		 audit_reopen(struct audit *a, char *err, size_t errlen);

/*
 * Writes one record.  Returns 0, or -1 when the write failed (syslog(3)
 * does not say: a record it lost is not seen here).
 */
int		 audit_write(struct audit *a, const struct audit_record *r);

void		 audit_free(struct audit *a);

#endif /* INTUTIC_AUDIT_H */
