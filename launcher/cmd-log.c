/*
 * cmd-log.c — `intutic log`: the running proxy's audit records, one line a
 * record for people, or the records themselves (--json), from its audit
 * file or from the journal.
 *
 * Each line is read as one JSON object with the one YAML/JSON reader
 * (common/yread.h, JSON mode).  A line that is not one (cut short, not
 * JSON, too long) is named FILE:LINE with why on stderr and skipped: a log
 * that a crash or an editor damaged is still read to its end.  --follow
 * reads on at the end, and finds the file again when logrotate moves it
 * away (the proxy reopens its path on SIGUSR1) or truncates it.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "intutic.h"
#include "log.h"
#include "spawn.h"
#include "state.h"
#include "yread.h"

#define LOG_LINE_MAX		(64 * 1024)	/* bytes of one record */
#define LOG_FIELD_MAX		256	/* bytes of a field shown; cut past */
#define LOG_POLL_MS		200	/* --follow: looking for more */
#define LOG_SINCE_MAX_S		(100LL * 366 * 86400)	/* --since 100 years */
#define LOG_JOURNAL_IDENT	"intutic-audit"	/* proxy/audit.h's AUDIT_IDENT */

static int	cmd_log_exec(int, char **);

const struct cmd_entry cmd_log_entry = {
	.name = "log",
	.summary = "show the proxy's audit records",
	.help =
	    "usage: intutic log [--follow] [--denied] [--run RUN] [--since TIME]\n"
	    "                   [--json] [--file FILE] [--state-dir DIR]\n"
	    "\n"
	    "Shows the running proxy's audit records, one line a record: the\n"
	    "time, the decision, the event, the protocol, the destination, the\n"
	    "reason, then the run and what else the record says.  The proxy\n"
	    "and its audit log are found by its state file, DIR/proxy.json; a\n"
	    "proxy that audits to the journal or to syslog is read with\n"
	    "journalctl.  A line that is not a record is named FILE:LINE on\n"
	    "stderr and skipped.  Colour only on a terminal, and never with\n"
	    "NO_COLOR set.\n"
	    "\n"
	    "--follow        Go on showing records as the proxy writes them\n"
	    "                (from the end of the log, or from --since), across\n"
	    "                log rotation, until interrupted.\n"
	    "--denied        Only denials: records whose decision is deny.\n"
	    "--run RUN       Only the records of the run RUN.\n"
	    "--since TIME    Only records written at TIME or later: RFC 3339\n"
	    "                (2026-12-06T17:00:00Z, 2026-12-06 18:00:00+01:00),\n"
	    "                a date (2026-12-06, UTC), or a time ago: N followed\n"
	    "                by s, m, h or d (30s, 10m, 2h, 1d).\n"
	    "--json          The records as they are, one JSON object a line.\n"
	    "--file FILE     Read FILE, an audit log (a rotated one, say),\n"
	    "                instead of the running proxy's.\n"
	    "--state-dir DIR The proxy's state directory (default\n"
	    "                $XDG_STATE_HOME/intutic, else\n"
	    "                ~/.local/state/intutic, else /run/intutic; when\n"
	    "                no proxy runs there, /run/intutic: the service's).\n"
	    "\n"
	    "Exit 0: the log was read (lines skipped are only warned of).\n"
	    "1: the audit log cannot be read, or the proxy writes none that\n"
	    "log can read.  2: usage error.  3: no proxy runs (no state file)\n"
	    "and no --file.\n",
	.exec = cmd_log_exec,
};

/* The fields a record's line shows; others are read past. */
enum log_key {
	LK_TS,
	LK_EVENT,
	LK_RUN,
	LK_CLIENT,
	LK_PROTO,
	LK_HOST,
	LK_PORT,
	LK_DECISION,
	LK_REASON,
	LK_RULE,
	LK_STATUS,
	LK_BYTES_UP,
	LK_BYTES_DOWN,
	LK_DURATION,
	LK_QTYPE,
	LK_RCODE,
	LK_PROVIDER,
	LK_MODEL,
	LK_COMMAND,
	LK_TRUNCATED,
	LK_COUNT
};

static const char *const log_keys[LK_COUNT] = {
	[LK_TS] = "ts",
	[LK_EVENT] = "event",
	[LK_RUN] = "run",
	[LK_CLIENT] = "client",
	[LK_PROTO] = "proto",
	[LK_HOST] = "host",
	[LK_PORT] = "port",
	[LK_DECISION] = "decision",
	[LK_REASON] = "reason",
	[LK_RULE] = "rule",
	[LK_STATUS] = "status",
	[LK_BYTES_UP] = "bytes_up",
	[LK_BYTES_DOWN] = "bytes_down",
	[LK_DURATION] = "duration_ms",
	[LK_QTYPE] = "qtype",
	[LK_RCODE] = "rcode",
	[LK_PROVIDER] = "provider",
	[LK_MODEL] = "model",
	[LK_COMMAND] = "command",
	[LK_TRUNCATED] = "truncated",
};

/* One record: each field's text, NUL-terminated, "" when null or absent. */
struct log_rec {
	char	 v[LK_COUNT][LOG_FIELD_MAX];
	int	 set[LK_COUNT];
};

struct log_opts {
	int		 follow;
	int		 denied;
	int		 json;
	int		 colour;
	const char	*run;
	long long	 since_ms;	/* -1: none */
};

/* A source of lines: a file, or journalctl's output. */
struct log_src {
	const char	*name;		/* in warnings */
	const char	*path;		/* the file; NULL for a pipe */
	int		 fd;
	dev_t		 dev;		/* of the file open */
	ino_t		 ino;
	off_t		 off;		/* read so far */
	unsigned long	 lineno;
	char		*buf;		/* LOG_LINE_MAX + 1 */
	size_t		 len;
	int		 skipping;	/* in a line longer than the limit */
	unsigned long	 skipped;	/* lines warned of */
};

static volatile sig_atomic_t log_stop;

static void
log_stop_handler(int sig)
{
	(void)sig;
	log_stop = 1;
}

/* ------------------------------------------------------------ parsing */

static int
log_map(struct yread *p, void *arg)
{
	struct log_rec *r = arg;
	char other[YREAD_QUOTE_BUF], cut[LOG_FIELD_MAX];
	const yaml_event_t *ev = &p->ev;
	size_t n;
	int k;

	while ((k = yread_pair(p, log_keys, LK_COUNT, other,
	    sizeof(other))) >= 0) {
		if (k == LK_COUNT) {
			if (yread_skip(p) != 0)
				return -1;
			continue;
		}
		if (ev->type != YAML_SCALAR_EVENT)
			return yread_fail(p, &ev->start_mark, "'%s' is not a "
			    "string, a number or null", log_keys[k]);
		if (r->set[k])
			return yread_fail(p, &ev->start_mark, "'%s' appears "
			    "twice", log_keys[k]);
		if (yread_is_null(p))
			continue;
		r->set[k] = 1;
		n = ev->data.scalar.length;
		if (n >= sizeof(r->v[k])) {
			/* Shown cut, "..." at its end. */
			memcpy(cut, ev->data.scalar.value, sizeof(cut) - 4);
			memcpy(cut + sizeof(cut) - 4, "...", 4);
			memcpy(r->v[k], cut, sizeof(cut));
		} else {
			memcpy(r->v[k], ev->data.scalar.value, n);
			r->v[k][n] = '\0';
		}
	}
	if (k != YREAD_END)
		return -1;
	if (!r->set[LK_EVENT])
		return yread_fail(p, &ev->start_mark, "no 'event': not an "
		    "audit record");
	return 0;
}

/* Exactly n digits at *p into *v, *p moved past them; -1 if not there. */
static int
log_digits(const char **p, int n, int *v)
{
	int i;

	*v = 0;
	for (i = 0; i < n; i++) {
		if ((*p)[i] < '0' || (*p)[i] > '9')
			return -1;
		*v = *v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	return 0;
}

/* The character c at *p, *p moved past it; -1 if another one is there. */
static int
log_char(const char **p, char c)
{
	if (**p != c)
		return -1;
	(*p)++;
	return 0;
}

/*
 * RFC 3339's date-time (T, t or a space between date and time; seconds
 * and their fraction optional; Z or +HH:MM/-HH:MM) into ms since the
 * epoch; unless need_zone, also a date alone or a time without a zone,
 * both UTC.  Returns 0, or -1 when s is not one of those, whole.
 */
static int
log_parse_time(const char *s, int need_zone, long long *ms)
{
	struct tm tm;
	const char *p = s;
	long long frac = 0, scale = 100;
	int y, mo, d, h = 0, mi = 0, sec = 0, oh, om, off = 0, sign;
	time_t t;

	if (log_digits(&p, 4, &y) != 0 || log_char(&p, '-') != 0 ||
	    log_digits(&p, 2, &mo) != 0 || log_char(&p, '-') != 0 ||
	    log_digits(&p, 2, &d) != 0)
		return -1;
	if (*p == 'T' || *p == 't' || *p == ' ') {
		p++;
		if (log_digits(&p, 2, &h) != 0 || log_char(&p, ':') != 0 ||
		    log_digits(&p, 2, &mi) != 0)
			return -1;
		if (*p == ':') {
			p++;
			if (log_digits(&p, 2, &sec) != 0)
				return -1;
			if (*p == '.') {
				p++;
				if (*p < '0' || *p > '9')
					return -1;
				for (; *p >= '0' && *p <= '9'; p++) {
					frac += (*p - '0') * scale;
					scale /= 10;
				}
			}
		}
		if (*p == 'Z' || *p == 'z') {
			p++;
		} else if (*p == '+' || *p == '-') {
			sign = *p++ == '-' ? -1 : 1;
			if (log_digits(&p, 2, &oh) != 0 ||
			    log_char(&p, ':') != 0 ||
			    log_digits(&p, 2, &om) != 0 || oh > 23 || om > 59)
				return -1;
			off = sign * (oh * 3600 + om * 60);
		} else if (need_zone)
			return -1;
	} else if (need_zone)
		return -1;
	if (*p != '\0' || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 ||
	    h > 23 || mi > 59 || sec > 60)
		return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	if ((t = timegm(&tm)) == (time_t)-1)
		return -1;
	*ms = ((long long)t - off) * 1000 + frac;
	return 0;
}

/* --since: RFC 3339, a date, or N[smhd] ago. */
static int
log_since(const char *s, long long *ms)
{
	struct timespec now;
	long long v, unit;
	char *end;

	if (*s >= '0' && *s <= '9' && strchr(s, '-') == NULL) {
		errno = 0;
		v = strtoll(s, &end, 10);
		switch (*end) {
		case 's':	unit = 1; break;
		case 'm':	unit = 60; break;
		case 'h':	unit = 3600; break;
		case 'd':	unit = 86400; break;
		default:	unit = 0; break;
		}
		if (errno != 0 || unit == 0 || end[1] != '\0' ||
		    v > LOG_SINCE_MAX_S / unit)
			goto bad;
		clock_gettime(CLOCK_REALTIME, &now);
		*ms = ((long long)now.tv_sec - v * unit) * 1000 +
		    now.tv_nsec / 1000000;
		return 0;
	}
	if (log_parse_time(s, 0, ms) == 0)
		return 0;
 bad:
	return cmd_usage_error(&cmd_log_entry, "log: --since: '%s' is not a "
	    "time: give RFC 3339 (2026-12-06T17:00:00Z), a date (2026-12-06) "
	    "or a time ago (30s, 10m, 2h, 1d)", s);
}

/* ------------------------------------------------------------ showing */

#define C_RESET		"\033[0m"
#define C_DIM		"\033[2m"
#define C_RED		"\033[1;31m"
#define C_GREEN		"\033[32m"
#define C_YELLOW	"\033[33m"

/* A field as shown: control bytes as \xHH (no escape reaches the tty). */
static const char *
log_text(const struct log_rec *r, enum log_key k, char *buf, size_t len)
{
	if (!r->set[k])
		return "-";
	return yread_escape(buf, len, r->v[k], strlen(r->v[k]),
	    LOG_FIELD_MAX);
}

static void
log_extra(const struct log_rec *r, enum log_key k, const char *label)
{
	char buf[LOG_FIELD_MAX * 4 + 8];

	if (r->set[k])
		printf(" %s=%s", label, log_text(r, k, buf, sizeof(buf)));
}

static void
log_show(const struct log_rec *r, const struct log_opts *o)
{
	char b1[LOG_FIELD_MAX * 4 + 8], b2[LOG_FIELD_MAX * 4 + 8];
	const char *dec = r->set[LK_DECISION] ? r->v[LK_DECISION] : "-";
	const char *colour = NULL, *host;

	if (strcmp(dec, "deny") == 0)
		colour = C_RED;
	else if (strcmp(dec, "allow") == 0)
		colour = C_GREEN;
	if (strcmp(r->v[LK_EVENT], "revoke") == 0)
		colour = C_YELLOW;
	if (o->colour)
		printf(C_DIM "%s" C_RESET " ", log_text(r, LK_TS, b1,
		    sizeof(b1)));
	else
		printf("%s ", log_text(r, LK_TS, b1, sizeof(b1)));
	yread_escape(b1, sizeof(b1), dec, strlen(dec), LOG_FIELD_MAX);
	if (o->colour && colour != NULL)
		printf("%s%-5s" C_RESET, colour, b1);
	else
		printf("%-5s", b1);
	printf(" %-8s", log_text(r, LK_EVENT, b1, sizeof(b1)));
	printf(" %-11s", log_text(r, LK_PROTO, b1, sizeof(b1)));
	host = log_text(r, LK_HOST, b1, sizeof(b1));
	if (r->set[LK_PORT])
		printf(strchr(host, ':') != NULL ? " [%s]:%s" : " %s:%s", host,
		    log_text(r, LK_PORT, b2, sizeof(b2)));
	else
		printf(" %s", host);
	printf(" %s", log_text(r, LK_REASON, b1, sizeof(b1)));
	log_extra(r, LK_RUN, "run");
	log_extra(r, LK_STATUS, "status");
	log_extra(r, LK_QTYPE, "qtype");
	log_extra(r, LK_RCODE, "rcode");
	log_extra(r, LK_PROVIDER, "provider");
	log_extra(r, LK_MODEL, "model");
	log_extra(r, LK_COMMAND, "command");
	log_extra(r, LK_BYTES_UP, "up");
	log_extra(r, LK_BYTES_DOWN, "down");
	log_extra(r, LK_DURATION, "ms");
	log_extra(r, LK_RULE, "rule");
	log_extra(r, LK_CLIENT, "client");
	if (r->set[LK_TRUNCATED])
		printf(" (truncated)");
	putchar('\n');
}

/* One line of the log: parsed, filtered, shown. */
static void
log_line(struct log_src *s, const char *line, size_t len,
    const struct log_opts *o)
{
	struct log_rec r;
	struct yread p;
	char err[512];
	long long ts;

	memset(&r, 0, sizeof(r));
	yread_init(&p, s->name, YREAD_BARE, 1, line, len, err, sizeof(err));
	p.root = "an audit record (a JSON object)";
	if (len == 0 || yread_run(&p, log_map, &r) != 0) {
		if (len == 0)
			snprintf(err, sizeof(err), "an empty line");
		s->skipped++;
		if (p.err_col > 0)
			warn_msg("%s:%lu:%lu: skipped, not an audit record: %s",
			    s->name, s->lineno, p.err_col, err);
		else
			warn_msg("%s:%lu: skipped, not an audit record: %s",
			    s->name, s->lineno, err);
		return;
	}
	if (o->denied && (!r.set[LK_DECISION] ||
	    strcmp(r.v[LK_DECISION], "deny") != 0))
		return;
	if (o->run != NULL && (!r.set[LK_RUN] ||
	    strcmp(r.v[LK_RUN], o->run) != 0))
		return;
	if (o->since_ms >= 0 && (!r.set[LK_TS] ||
	    log_parse_time(r.v[LK_TS], 1, &ts) != 0 || ts < o->since_ms))
		return;
	if (o->json) {
		fwrite(line, 1, len, stdout);
		putchar('\n');
	} else
		log_show(&r, o);
}

/* ------------------------------------------------------------ reading */

/*
 * Reads what there is now, handing each whole line to log_line().
 * Returns 0 at the end of what there is, -1 on a read error (said).
 */
static int
log_drain(struct log_src *s, const struct log_opts *o)
{
	ssize_t n;
	char *nl, *start;
	size_t rest;

	for (;;) {
		if (log_stop)
			return 0;
		n = read(s->fd, s->buf + s->len, LOG_LINE_MAX - s->len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			error("cannot read '%s': %s", s->name, strerror(errno));
			return -1;
		}
		if (n == 0)
			return 0;
		s->off += n;
		s->len += (size_t)n;
		start = s->buf;
		rest = s->len;
		while ((nl = memchr(start, '\n', rest)) != NULL) {
			s->lineno++;
			if (s->skipping) {
				s->skipping = 0;
			} else
				log_line(s, start, (size_t)(nl - start), o);
			rest -= (size_t)(nl - start) + 1;
			start = nl + 1;
		}
		if (rest == LOG_LINE_MAX) {
			/* One line fills the buffer: said once, read past. */
			if (!s->skipping) {
				s->skipped++;
				warn_msg("%s:%lu: skipped, not an audit "
				    "record: longer than %d bytes", s->name,
				    s->lineno + 1, LOG_LINE_MAX);
			}
			s->skipping = 1;
			rest = 0;
		}
		memmove(s->buf, start, rest);
		s->len = rest;
		if (o->follow)
			fflush(stdout);
	}
}

/* What is left at the end of a file: a line without its newline. */
static void
log_leftover(struct log_src *s)
{
	if (s->len > 0 && !s->skipping) {
		s->skipped++;
		warn_msg("%s:%lu: skipped, not an audit record: the line is "
		    "cut short (no newline at its end)", s->name,
		    s->lineno + 1);
	}
	s->len = 0;
	s->skipping = 0;
}

static int
log_open(struct log_src *s)
{
	struct stat sb;

	if ((s->fd = open(s->path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	if (fstat(s->fd, &sb) == -1) {
		close(s->fd);
		s->fd = -1;
		return -1;
	}
	s->dev = sb.st_dev;
	s->ino = sb.st_ino;
	s->off = 0;
	s->lineno = 0;
	return 0;
}

static void
log_sleep(void)
{
	struct timespec ts = { 0, LOG_POLL_MS * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * --follow on a file: after each drain, a file moved away and a new one
 * at the path (logrotate's create, then SIGUSR1) is read from its start,
 * once the old one is read to its end; a file cut to a size below what
 * was read (copytruncate) is read again from its start.
 */
static int
log_follow_file(struct log_src *s, const struct log_opts *o)
{
	struct stat sb, now;

	while (!log_stop) {
		if (log_drain(s, o) != 0)
			return -1;
		log_sleep();
		if (fstat(s->fd, &sb) == 0 && sb.st_size < s->off) {
			lseek(s->fd, 0, SEEK_SET);
			s->off = 0;
			s->lineno = 0;
			s->len = 0;
			continue;
		}
		if (stat(s->path, &now) != 0 ||
		    (now.st_dev == s->dev && now.st_ino == s->ino))
			continue;
		/* Rotated: the rest of the old file first. */
		if (log_drain(s, o) != 0)
			return -1;
		log_leftover(s);
		close(s->fd);
		if (log_open(s) != 0) {
			error("cannot open '%s' again after it was rotated: %s",
			    s->path, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Reads past what the file holds now, counting its lines. */
static int
log_skip(struct log_src *s)
{
	ssize_t n, i;
	char last = '\n';

	for (;;) {
		n = read(s->fd, s->buf, LOG_LINE_MAX);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			error("cannot read '%s': %s", s->name, strerror(errno));
			return -1;
		}
		if (n == 0)
			break;
		for (i = 0; i < n; i++)
			if (s->buf[i] == '\n')
				s->lineno++;
		last = s->buf[n - 1];
		s->off += n;
	}
	/* A line under way (a damaged end): not shown half. */
	s->skipping = last != '\n';
	return 0;
}

static int
log_file(const char *path, const struct log_opts *o)
{
	struct log_src s;
	int r;

	memset(&s, 0, sizeof(s));
	s.name = s.path = path;
	if ((s.buf = malloc(LOG_LINE_MAX + 1)) == NULL)
		fatal("out of memory");
	if (log_open(&s) != 0) {
		error("cannot read the audit log '%s': %s%s", path,
		    strerror(errno), errno == EACCES ? " (it is the proxy's: "
		    "run intutic log as its user, or as root)" : "");
		free(s.buf);
		return EXIT_FAILURE;
	}
	/* --follow without --since: only what comes, lines counted. */
	if (o->follow && o->since_ms < 0 && log_skip(&s) != 0) {
		close(s.fd);
		free(s.buf);
		return EXIT_FAILURE;
	}
	r = o->follow ? log_follow_file(&s, o) : log_drain(&s, o);
	if (r == 0 && !log_stop)
		log_leftover(&s);
	close(s.fd);
	free(s.buf);
	return r == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/*
 * The journal: journalctl prints each record's MESSAGE, the JSON, a line
 * (-o cat), of the entries the proxy sent as intutic-audit, to the journal
 * or to syslog on a host where journald takes /dev/log.
 */
static int
log_journal(const struct log_opts *o)
{
	char jc[PATH_MAX], since[32];
	char *argv[12];
	struct log_src s;
	int fds[2], status, argc = 0, r;
	pid_t pid;

	if (spawn_which("journalctl", jc, sizeof(jc)) != 0) {
		error("the proxy sends its audit records to the journal or "
		    "syslog, and journalctl is not installed to read them: "
		    "install systemd's journalctl, or read where syslog "
		    "writes them");
		return EXIT_FAILURE;
	}
	argv[argc++] = jc;
	argv[argc++] = "--quiet";
	argv[argc++] = "--no-pager";
	argv[argc++] = "--output=cat";
	argv[argc++] = "--identifier=" LOG_JOURNAL_IDENT;
	if (o->since_ms >= 0) {
		snprintf(since, sizeof(since), "--since=@%lld",
		    o->since_ms / 1000);
		argv[argc++] = since;
	}
	if (o->follow) {
		argv[argc++] = "--follow";
		if (o->since_ms < 0)
			argv[argc++] = "--lines=0";
	}
	argv[argc] = NULL;
	if (pipe2(fds, O_CLOEXEC) == -1 || (pid = fork()) == -1)
		fatal("cannot run journalctl: %s", strerror(errno));
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		execv(jc, argv);
		dprintf(STDERR_FILENO, "intutic: cannot run '%s': %s\n", jc,
		    strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	memset(&s, 0, sizeof(s));
	s.name = "journal";
	s.fd = fds[0];
	if ((s.buf = malloc(LOG_LINE_MAX + 1)) == NULL)
		fatal("out of memory");
	r = log_drain(&s, o);
	if (log_stop)
		kill(pid, SIGTERM);
	else
		log_leftover(&s);
	close(s.fd);
	free(s.buf);
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	if (r != 0)
		return EXIT_FAILURE;
	if (!log_stop && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
		error("journalctl failed (%s %d): its message says why; a "
		    "user not in the systemd-journal or adm group sees "
		    "only their own entries", WIFEXITED(status) ? "exit" :
		    "signal", WIFEXITED(status) ? WEXITSTATUS(status) :
		    WTERMSIG(status));
		return EXIT_FAILURE;
	}
	return EXIT_SUCCESS;
}

/* The audit log of the proxy the state directory names. */
static int
log_find(const char *opt_dir, char *path, size_t len)
{
	struct proxy_state st;
	int r;

	if ((r = config_state_find(opt_dir, &st, ": no audit log to show; "
	    "start the proxy with `intutic start --audit FILE`, or give a log "
	    "with --file FILE", 0)) != 0)
		return r;
	if (st.audit[0] == '\0') {
		error("the proxy (pid %ld, state file '%s') writes no audit "
		    "log: start it with --audit FILE, syslog or journal",
		    (long)st.pid, st.path);
		return EXIT_FAILURE;
	}
	if (strcmp(st.audit, "-") == 0) {
		error("the proxy (pid %ld) writes its audit log to its standard "
		    "error, which intutic log cannot read: it is where that "
		    "goes (intutic start --log FILE, or the service's "
		    "journalctl -u intutic-proxy); give that file with --file "
		    "FILE", (long)st.pid);
		return EXIT_FAILURE;
	}
	snprintf(path, len, "%s", st.audit);
	return EXIT_SUCCESS;
}

static int
cmd_log_exec(int argc, char **argv)
{
	struct log_opts o;
	struct sigaction sa;
	const char *opt_dir = NULL, *file = NULL, *v, *nc;
	char path[PATH_MAX];
	int i, r;

	memset(&o, 0, sizeof(o));
	o.since_ms = -1;
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--follow") == 0) {
			o.follow = 1;
			continue;
		}
		if (strcmp(argv[i], "--denied") == 0) {
			o.denied = 1;
			continue;
		}
		if (strcmp(argv[i], "--json") == 0) {
			o.json = 1;
			continue;
		}
		if ((r = cmd_option(&cmd_log_entry, argc, argv, &i, "run",
		    "RUN", &o.run)) == 1) {
			if (*o.run == '\0')
				return cmd_usage_error(&cmd_log_entry,
				    "log: --run: the run's id is empty");
			continue;
		}
		if (r == 0 && (r = cmd_option(&cmd_log_entry, argc, argv, &i,
		    "since", "TIME", &v)) == 1) {
			if (log_since(v, &o.since_ms) != 0)
				return EXIT_USAGE;
			continue;
		}
		if (r == 0 && (r = cmd_option(&cmd_log_entry, argc, argv, &i,
		    "file", "FILE", &file)) == 1)
			continue;
		if (r == 0 && (r = cmd_option(&cmd_log_entry, argc, argv, &i,
		    "state-dir", "DIR", &opt_dir)) == 1)
			continue;
		if (r == -1)
			return EXIT_USAGE;
		return cmd_usage_error(&cmd_log_entry,
		    "log: unknown argument '%s'", argv[i]);
	}
	if (file != NULL && opt_dir != NULL)
		return cmd_usage_error(&cmd_log_entry, "log: --file and "
		    "--state-dir: give one (--file reads that log, not the "
		    "proxy's)");
	nc = getenv("NO_COLOR");
	o.colour = !o.json && isatty(STDOUT_FILENO) &&
	    (nc == NULL || *nc == '\0');

	/* --follow ends on SIGINT or SIGTERM with what was read shown. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = log_stop_handler;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	if (file == NULL) {
		if ((r = log_find(opt_dir, path, sizeof(path))) != 0)
			return r;
		file = path;
		if (strcmp(file, "journal") == 0 || strcmp(file, "syslog") == 0)
			return log_journal(&o);
	}
	r = log_file(file, &o);
	if (fflush(stdout) != 0 && r == EXIT_SUCCESS) {
		error("cannot write the records: %s", strerror(errno));
		r = EXIT_FAILURE;
	}
	return r;
}
