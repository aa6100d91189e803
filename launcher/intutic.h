/*
 * intutic.h — what the launcher's files share: the subcommand table entry
 * and the configuration look-ups.
 */
#ifndef INTUTIC_INTUTIC_H
#define INTUTIC_INTUTIC_H

#include <stddef.h>

/* Exit statuses (DESIGN.md "The launcher"). */
#define EXIT_USAGE	2	/* usage or configuration error */
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

extern const struct cmd_entry cmd_rules_entry;
extern const struct cmd_entry cmd_start_entry;

/* Prints a command's help to stdout (to_stderr 0) or stderr. */
void	 cmd_help(const struct cmd_entry *cmd, int to_stderr);

/* Prints "intutic: MSG" and the command's usage to stderr; returns 2. */
int	 cmd_usage_error(const struct cmd_entry *cmd, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

/*
 * The rule file to use: `opt` when not NULL, else $INTUTIC_RULES, else
 * $XDG_CONFIG_HOME/intutic/rules.yaml (or ~/.config/...), else
 * /etc/intutic/rules.yaml, else the shipped default.yaml — the first that
 * exists (an explicit choice is returned even when it does not exist, so
 * that its error names it).  Writes the path into buf; returns buf.
 */
const char	*config_rules_path(const char *opt, char *buf, size_t len);

#endif /* INTUTIC_INTUTIC_H */
