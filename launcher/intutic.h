/*
 * intutic.h — what the launcher's files share: the subcommand table entry
 * and the configuration look-ups.
 */
#ifndef INTUTIC_INTUTIC_H
#define INTUTIC_INTUTIC_H

#include <stddef.h>

/*
 * Exit statuses (intutic(1), EXIT STATUS); stop and status also use
 * EXIT_FAILURE (1): it failed, or the state cannot be told.
 */
#define EXIT_USAGE	2	/* usage or configuration error */
#define EXIT_NOT_RUNNING 3	/* stop, status: no proxy runs (as LSB's 3) */
#define EXIT_CANNOT_RUN	125	/* the launcher could not do what was asked */

/*
 * One subcommand (tmux's cmd_entry).  `exec` gets argv with argv[0] the
 * subcommand's name and returns the exit status.  `help` is what
 * `intutic help NAME` and `intutic NAME --help` print: the same text as the
 * SYNOPSIS and OPTIONS of the command's man page.
 */
struct cmd_entry {
	const char	*name;
	const char	*summary;	/* one line for `intutic --help` */
	const char	*help;
	int		(*exec)(int argc, char **argv);
};

extern const struct cmd_entry cmd_connect_entry;
extern const struct cmd_entry cmd_doctor_entry;
extern const struct cmd_entry cmd_enforce_entry;
extern const struct cmd_entry cmd_exec_entry;
extern const struct cmd_entry cmd_log_entry;
extern const struct cmd_entry cmd_rules_entry;
extern const struct cmd_entry cmd_runs_entry;
extern const struct cmd_entry cmd_start_entry;
extern const struct cmd_entry cmd_status_entry;
extern const struct cmd_entry cmd_stop_entry;
extern const struct cmd_entry cmd_reload_entry;

/* Prints a command's help to stdout (to_stderr 0) or stderr. */
void	 cmd_help(const struct cmd_entry *cmd, int to_stderr);

/* Prints "intutic: MSG" and the command's usage to stderr; returns 2. */
int	 cmd_usage_error(const struct cmd_entry *cmd, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

/* "a" or "an" before a metavariable: "a FILE", "an ADDR", "an N". */
const char	*cmd_article(const char *word);

const char	*cmd_duration_text(long long seconds, char *buf, size_t len);

/*
 * Whether argv[*i] is the option --NAME (name without the dashes), written
 * "--NAME ARG" or "--NAME=ARG".  Returns 1 with *value set, *i moved past a
 * separate ARG; 0 when argv[*i] is another word; -1 after a usage error of
 * cmd ("stop: --NAME needs a DIR", arg being "DIR"), which has been printed.
 */
int	 cmd_option(const struct cmd_entry *cmd, int argc, char **argv,
	    int *i, const char *name, const char *arg, const char **value);

/*
 * The state directory of `start`, `stop` and `status`: dir when not NULL,
 * else the default (paths_state_dir()).  Writes it into buf; returns 0, or
 * -1 after printing an error.
 */
int	 config_state_dir(const char *dir, char *buf, size_t len);
/*
 * config_state_dir() for the commands that look for a running proxy (all
 * but start): without dir, when the user's own state directory holds no
 * state file and the service's (PATHS_SYSTEM_STATE_DIR, /run/intutic)
 * does, that one.
 */
int	 config_state_dir_find(const char *dir, char *buf, size_t len);
/*
 * The running proxy's state file, for the commands that talk to it: the
 * state directory config_state_dir_find() finds, its state file read into
 * *st.  0 when it was read; else the exit status, after an error message:
 * EXIT_USAGE (no state directory), EXIT_NOT_RUNNING ("not running (no
 * state file 'PATH')" and hint after it, unless quiet: the caller says
 * it), EXIT_FAILURE (a state file that cannot be read).
 */
struct proxy_state;
int	 config_state_find(const char *dir, struct proxy_state *st,
	    const char *hint, int quiet);

/*
 * The running proxy's counters (cmd-status.c): each of the n samples of
 * its /metrics page ("intutic_reloads_total", or with its labels) into
 * vals[i], ULLONG_MAX when the page has none; 0, or -1 with why in err
 * when the proxy does not answer.
 */
struct proxy_state;
int	 proxy_counters(const struct proxy_state *st,
	    const char *const *samples, size_t n, unsigned long long *vals,
	    char *err, size_t errlen);

/*
 * The rule file to use: `opt` when not NULL, else $INTUTIC_RULES, else
 * $XDG_CONFIG_HOME/intutic/rules.yaml (or ~/.config/...), else
 * /etc/intutic/rules.yaml, else the shipped default.yaml — the first that
 * exists (an explicit choice is returned even when it does not exist, so
 * that its error names it).  Writes the path into buf; returns buf.
 */
const char	*config_rules_path(const char *opt, char *buf, size_t len);

#endif /* INTUTIC_INTUTIC_H */
