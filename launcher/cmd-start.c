/*
 * cmd-start.c — `intutic start`: checks the rule file it will use, then runs
 * the governing proxy, intutic-proxy: in the foreground, in place of
 * intutic, or detached, waiting until it listens.
 */
#include "config.h"

#include <sys/types.h>
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

#include "log.h"
#include "rules.h"
#include "intutic.h"
#include "paths.h"
#include "proc.h"
#include "proxy-opts.h"
#include "state.h"
#include "xmalloc.h"

#define START_READY_MS		10000	/* a detached proxy, to listen */
#define START_STOP_MS		5000	/* one that did not, to exit */
#define START_POLL_MS		50	/* between looks at proxy.json */

static int	cmd_start_exec(int, char **);

const struct cmd_entry cmd_start_entry = {
	.name = "start",
	.summary = "run the governing proxy with a rule file",
	.help =
	    "usage: intutic start [--rules FILE]\n"
	    "                     [--detach [--pidfile FILE] [--log FILE]]\n"
	    "                     [PROXY-OPTION ...]\n"
	    "\n"
	    "Checks the rule file (FILE, else $INTUTIC_RULES, else\n"
	    "$XDG_CONFIG_HOME/intutic/rules.yaml (or ~/.config/intutic/rules.yaml),\n"
	    "else /etc/intutic/rules.yaml, else the shipped default.yaml) and\n"
	    "runs the proxy, intutic-proxy, with it: in the foreground, in place\n"
	    "of intutic, or with --detach in the background.  A rule file that\n"
	    "does not load is never half-applied: start refuses with exit 2.\n"
	    "\n"
	    "--rules FILE    The rule file.\n"
	    "--detach        Run the proxy in a session of its own, its standard\n"
	    "                input and output /dev/null; wait until it listens\n"
	    "                (at most 10 s), say where, and exit 0.\n"
	    "--pidfile FILE  With --detach: write the proxy's pid to FILE.\n"
	    "--log FILE      With --detach: append the proxy's standard error,\n"
	    "                its log, to FILE.\n"
	    "\n"
	    "Each PROXY-OPTION goes to intutic-proxy as given, which checks its\n"
	    "value: --bind ADDR,...  --port N  --audit FILE|-|syslog|journal\n"
	    "--workers N  --state-dir DIR  --control-group GROUP  --user NAME\n"
	    "--dns-bind ADDR[:PORT],...  --transparent-bind ADDR:PORT,...\n"
	    "--gateway-bind ADDR:PORT,...  --gateway-ca FILE  --gateway-keys DIR\n"
	    "--upstream-proxy URL  --upstream-proxy-auth FILE  --resolv-conf FILE\n"
	    "--hosts FILE  --require-run  --no-revoke  --debug\n"
	    "--dns-timeout MS  --connect-timeout MS  --head-timeout MS\n"
	    "--peek-timeout MS  --idle-timeout MS  --grace MS  --max-conns N\n"
	    "--head-max BYTES  --headers-max N  --uri-max BYTES\n"
	    "--transit-max BYTES.  An option may also be written --OPTION=VALUE.\n"
	    "\n"
	    "--user NAME: started as root, the proxy binds its addresses, then\n"
	    "runs as NAME and its groups; its state directory is then\n"
	    "/run/intutic unless --state-dir says otherwise (made for NAME when\n"
	    "missing), and the audit log is opened as NAME.  Started as root\n"
	    "without it, the proxy runs as root, which intutic enforce refuses:\n"
	    "start says so.\n"
	    "\n"
	    "Exit 0: the detached proxy listens.  2: usage error, or the rule\n"
	    "file does not load.  125: intutic-proxy cannot be run, a proxy\n"
	    "already runs with this state directory, or the detached one did not\n"
	    "listen within 10 s.  Else the proxy's own exit status.\n",
	.exec = cmd_start_exec,
};

/*
 * The options start knows: its own, and intutic-proxy's
 * (common/proxy-opts.h), which go to the proxy as they were written.
 * Knowing which take a value is what lets start find its own among them;
 * an option it does not know is refused before anything runs.  The first
 * entry of a name wins: start's --rules and --state-dir before the proxy's.
 */
enum start_opt_kind {
	START_OPT_PROXY = 0,	/* passed through */
	START_OPT_RULES,
	START_OPT_DETACH,
	START_OPT_PIDFILE,
	START_OPT_LOG,
	START_OPT_STATE_DIR,	/* passed through, and read */
	START_OPT_USER,		/* passed through, and read */
};

static const struct start_opt {
	const char		*name;
	const char		*arg;	/* NULL: takes no value */
	enum start_opt_kind	 kind;
} start_opts[] = {
	{ "rules", "FILE", START_OPT_RULES },
	{ "detach", NULL, START_OPT_DETACH },
	{ "pidfile", "FILE", START_OPT_PIDFILE },
	{ "log", "FILE", START_OPT_LOG },
	{ "state-dir", "DIR", START_OPT_STATE_DIR },
	{ "user", "NAME", START_OPT_USER },
#define X(name, kind, field, metavar, def, min, max, env, help) \
	{ name, metavar, START_OPT_PROXY },
	PROXY_OPTIONS(X)
#undef X
};
#define START_OPT_COUNT	(sizeof(start_opts) / sizeof(start_opts[0]))

struct start_args {
	const char	 *rules;
	const char	 *pidfile;
	const char	 *log;
	const char	 *state_dir;
	const char	 *user;
	int		  detach;
	char		**proxy_argv;	/* intutic-proxy --rules PATH ... */
	int		  proxy_argc;
};

/* Writes DIR/NAME into buf; 0 when it fits and is executable. */
static int
executable(char *buf, size_t len, const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= len)
		return -1;
	return access(buf, X_OK);
}

/* intutic-proxy under libexecdir, else beside this program. */
static int
find_proxy(char *buf, size_t len)
{
	char self[PATH_MAX], *slash;
	ssize_t n;

	if (executable(buf, len, INTUTIC_LIBEXECDIR, "intutic-proxy") == 0)
		return 0;
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) <= 0)
		return -1;
	self[n] = '\0';
	if ((slash = strrchr(self, '/')) == NULL)
		return -1;
	*slash = '\0';
	if (executable(buf, len, self, "intutic-proxy") == 0)
		return 0;
	/* In a build tree: launcher/intutic beside proxy/intutic-proxy. */
	return executable(buf, len, self, "../proxy/intutic-proxy");
}

static const struct start_opt *
start_opt_find(const char *word, const char **value)
{
	const char *name = word + 2, *eq;
	size_t i, len;

	*value = NULL;
	if (strncmp(word, "--", 2) != 0 || *name == '\0')
		return NULL;
	eq = strchr(name, '=');
	len = eq != NULL ? (size_t)(eq - name) : strlen(name);
	for (i = 0; i < START_OPT_COUNT; i++) {
		if (strlen(start_opts[i].name) == len &&
		    strncmp(start_opts[i].name, name, len) == 0) {
			if (eq != NULL)
				*value = eq + 1;
			return &start_opts[i];
		}
	}
	return NULL;
}

/*
 * Sorts argv (argv[0] is "start") into args; the proxy's argv gets slots
 * 0-2 ("intutic-proxy --rules PATH") filled in later.  Returns 0, or the
 * exit status of a usage error, which has been printed.
 */
static int
start_parse(int argc, char **argv, struct start_args *args)
{
	const struct start_opt *o;
	const char *value;
	int i, first;

	memset(args, 0, sizeof(*args));
	/* 3 slots first, 2 for a --state-dir of --user's, then NULL */
	args->proxy_argv = xcalloc((size_t)argc + 6, sizeof(char *));
	args->proxy_argc = 3;
	for (i = 1; i < argc; i++) {
		if ((o = start_opt_find(argv[i], &value)) == NULL)
			return cmd_usage_error(&cmd_start_entry,
			    "start: unknown argument '%s'", argv[i]);
		first = i;
		if (o->arg == NULL && value != NULL)
			return cmd_usage_error(&cmd_start_entry,
			    "start: --%s takes no value", o->name);
		if (o->arg != NULL && value == NULL) {
			if (i + 1 >= argc)
				return cmd_usage_error(&cmd_start_entry,
				    "start: --%s needs %s %s", o->name,
				    cmd_article(o->arg), o->arg);
			value = argv[++i];
		}
		switch (o->kind) {
		case START_OPT_RULES:
			args->rules = value;
			continue;
		case START_OPT_DETACH:
			args->detach = 1;
			continue;
		case START_OPT_PIDFILE:
			args->pidfile = value;
			continue;
		case START_OPT_LOG:
			args->log = value;
			continue;
		case START_OPT_STATE_DIR:
			args->state_dir = value;
			break;
		case START_OPT_USER:
			args->user = value;
			break;
		case START_OPT_PROXY:
			break;
		}
		/* As written: "--port 0" stays two words, "--port=0" one. */
		for (; first <= i; first++)
			args->proxy_argv[args->proxy_argc++] = argv[first];
	}
	if (args->pidfile != NULL && !args->detach)
		return cmd_usage_error(&cmd_start_entry,
		    "start: --pidfile needs --detach");
	if (args->log != NULL && !args->detach)
		return cmd_usage_error(&cmd_start_entry,
		    "start: --log needs --detach");
	if (args->pidfile != NULL && *args->pidfile == '\0')
		return cmd_usage_error(&cmd_start_entry,
		    "start: --pidfile: empty file name");
	if (args->log != NULL && *args->log == '\0')
		return cmd_usage_error(&cmd_start_entry,
		    "start: --log: empty file name");
	if (args->user != NULL && *args->user == '\0')
		return cmd_usage_error(&cmd_start_entry,
		    "start: --user: empty user name");
	/* The proxy of a user of its own is the service's, where all look. */
	if (args->user != NULL && args->state_dir == NULL) {
		args->state_dir = PATHS_SYSTEM_STATE_DIR;
		args->proxy_argv[args->proxy_argc++] = "--state-dir";
		args->proxy_argv[args->proxy_argc++] = PATHS_SYSTEM_STATE_DIR;
	}
	return 0;
}

/*
 * A proxy that runs with this state directory: two would overwrite each
 * other's state file, and `intutic stop` could reach only one.
 */
static int
start_already_running(const char *dir)
{
	struct proxy_state st;
	struct proc p;
	char err[STATE_ERROR_MAX], where[STATE_BINDS_MAX *
	    (STATE_ADDR_MAX + 16)];
	enum proc_kind kind;

	if (state_read(dir, &st, err, sizeof(err)) != STATE_OK)
		return 0;	/* none, or one the new proxy replaces */
	if (proc_open(&p, st.pid) != 0)
		return 0;
	kind = proc_kind(&p, NULL, 0);
	proc_close(&p);
	if (kind != PROC_PROXY)
		return 0;
	error("a proxy already runs on %s (pid %ld, state "
	    "file '%s'): stop it first with 'intutic stop'",
	    state_listen_text(&st, where, sizeof(where)), (long)st.pid,
	    st.path);
	return 1;
}

static void
start_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static long long
start_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Stops a child that did not get ready: SIGTERM, then SIGKILL; reaps it. */
static void
start_stop_child(pid_t pid)
{
	long long end = start_now_ms() + START_STOP_MS;
	int status;

	kill(pid, SIGTERM);
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (start_now_ms() >= end) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
				;
			return;
		}
		start_sleep_ms(START_POLL_MS);
	}
}

/*
 * The exit status of start for a proxy that exited before it listened: the
 * proxy's own.  Its error is on stderr already, unless it went to the log.
 */
static int
start_child_status(int status, const char *log)
{
	if (WIFSIGNALED(status)) {
		error("the proxy was killed by signal %d "
		    "before it listened%s%s%s", WTERMSIG(status),
		    log != NULL ? " (its log: '" : "", log != NULL ? log : "",
		    log != NULL ? "')" : "");
		return 128 + WTERMSIG(status);
	}
	if (WEXITSTATUS(status) == 0) {
		error("the proxy exited before it "
		    "listened");
		return EXIT_CANNOT_RUN;
	}
	if (log != NULL)
		error("the proxy exited with status %d "
		    "before it listened (its log: '%s')",
		    WEXITSTATUS(status), log);
	return WEXITSTATUS(status);
}

/* The child: a session of its own, then the proxy.  Never returns. */
static void
start_child(const char *proxy, char **argv, int devnull, int logfd)
{
	if (setsid() == -1 ||
	    dup2(devnull, STDIN_FILENO) == -1 ||
	    dup2(devnull, STDOUT_FILENO) == -1 ||
	    (logfd != -1 && dup2(logfd, STDERR_FILENO) == -1)) {
		error("cannot detach the proxy: %s",
		    strerror(errno));
		_exit(EXIT_CANNOT_RUN);
	}
	execv(proxy, argv);
	error("cannot run '%s': %s", proxy,
	    strerror(errno));
	_exit(EXIT_CANNOT_RUN);
}

static int
start_write_pidfile(int fd, const char *path, pid_t pid)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%ld\n", (long)pid);

	errno = 0;
	if (write(fd, buf, (size_t)n) != n || fsync(fd) == -1) {
		error("cannot write pid file '%s': %s",
		    path, errno != 0 ? strerror(errno) : "short write");
		return -1;
	}
	return 0;
}

/*
 * --detach: the files are opened first, so that their errors come before
 * anything runs; then the proxy is forked and start waits, at most
 * START_READY_MS, until the state file names it (it listens) or it exits.
 */
static int
start_detached(const char *proxy, const struct start_args *args,
    const char *dir)
{
	struct proxy_state st;
	char err[STATE_ERROR_MAX], where[STATE_BINDS_MAX *
	    (STATE_ADDR_MAX + 16)], file[PATH_MAX];
	long long end;
	pid_t pid;
	int devnull, logfd = -1, pidfd = -1, status, r = EXIT_CANNOT_RUN;

	if ((devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1) {
		error("cannot open '/dev/null': %s",
		    strerror(errno));
		return EXIT_CANNOT_RUN;
	}
	if (args->log != NULL && (logfd = open(args->log, O_WRONLY |
	    O_APPEND | O_CREAT | O_CLOEXEC, 0640)) == -1) {
		error("cannot open log file '%s': %s",
		    args->log, strerror(errno));
		goto out;
	}
	if (args->pidfile != NULL && (pidfd = open(args->pidfile, O_WRONLY |
	    O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) == -1) {
		error("cannot write pid file '%s': %s",
		    args->pidfile, strerror(errno));
		goto out;
	}
	fflush(stdout);
	fflush(stderr);
	if ((pid = fork()) == -1) {
		error("cannot fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		start_child(proxy, args->proxy_argv, devnull, logfd);

	end = start_now_ms() + START_READY_MS;
	for (;;) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			r = start_child_status(status, args->log);
			goto out;
		}
		/* An older file, of a proxy gone, names another pid. */
		if (state_read(dir, &st, err, sizeof(err)) == STATE_OK &&
		    st.pid == pid)
			break;
		if (start_now_ms() >= end) {
			paths_state_file(dir, file, sizeof(file));
			error("the proxy (pid %ld) did not "
			    "write '%s' within %d s: stopped it", (long)pid,
			    file, START_READY_MS / 1000);
			start_stop_child(pid);
			goto out;
		}
		start_sleep_ms(START_POLL_MS);
	}
	if (pidfd != -1 &&
	    start_write_pidfile(pidfd, args->pidfile, pid) != 0) {
		start_stop_child(pid);
		goto out;
	}
	printf("intutic: proxy running on %s (pid %ld)\n",
	    state_listen_text(&st, where, sizeof(where)), (long)pid);
	r = 0;
 out:
	if (pidfd != -1) {
		close(pidfd);
		if (r != 0)
			unlink(args->pidfile);
	}
	if (logfd != -1)
		close(logfd);
	close(devnull);
	return r;
}

static int
cmd_start_exec(int argc, char **argv)
{
	struct start_args args;
	struct rules *r;
	struct rules_error err;
	char path[RULES_PATH_MAX], proxy[PATH_MAX], dir[PATH_MAX];
	char msg[RULES_PATH_MAX + RULES_ERROR_MAX + 64];
	int ret;

	if ((ret = start_parse(argc, argv, &args)) != 0)
		goto out;
	if (config_state_dir(args.state_dir, dir, sizeof(dir)) != 0) {
		ret = EXIT_USAGE;
		goto out;
	}
	config_rules_path(args.rules, path, sizeof(path));
	if (rules_load(path, &r, &err) != 0) {
		fprintf(stderr, "%s\nintutic: not starting: the rule file "
		    "does not load\n", rules_error_str(&err, msg, sizeof(msg)));
		ret = EXIT_USAGE;
		goto out;
	}
	printf("intutic: rules '%s' loaded: %zu entries, mode %s\n", path,
	    rules_count(r), rules_mode(r) == RULES_MODE_REPORT ? "report" :
	    "enforce");
	rules_free(r);
	fflush(stdout);

	if (args.user == NULL && geteuid() == 0)
		warn_msg("the proxy will run as root, and "
		    "'intutic enforce on' refuses a root proxy (every socket "
		    "root owns would pass): give it a user of its own, e.g. "
		    "'intutic start --user intutic' (make one with 'adduser "
		    "--system --group intutic'), or run the packaged service "
		    "('systemctl start intutic-proxy')");

	ret = EXIT_CANNOT_RUN;
	if (start_already_running(dir))
		goto out;
	if (find_proxy(proxy, sizeof(proxy)) != 0) {
		error("the proxy is not built yet: no "
		    "intutic-proxy in %s, beside intutic, or in ../proxy of a "
		    "build tree", INTUTIC_LIBEXECDIR);
		goto out;
	}
	args.proxy_argv[0] = "intutic-proxy";
	args.proxy_argv[1] = "--rules";
	args.proxy_argv[2] = path;
	if (args.detach) {
		ret = start_detached(proxy, &args, dir);
		goto out;
	}
	execv(proxy, args.proxy_argv);
	error("cannot run '%s': %s", proxy,
	    strerror(errno));
 out:
	free(args.proxy_argv);
	return ret;
}
