/*
 * main.c — intutic: the command table, help and version.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <yaml.h>

#include "intutic.h"
#include "log.h"

static int	cmd_help_exec(int, char **);
static int	cmd_version_exec(int, char **);

static const struct cmd_entry cmd_help_entry = {
	.name = "help",
	.summary = "show the help of intutic or of one command",
	.help =
	    "usage: intutic help [COMMAND]\n"
	    "\n"
	    "Shows the commands of intutic, or the help of COMMAND.\n",
	.exec = cmd_help_exec,
};

static const struct cmd_entry cmd_version_entry = {
	.name = "version",
	.summary = "show the version and the libraries intutic was built with",
	.help =
	    "usage: intutic version\n"
	    "\n"
	    "Shows the version of intutic, where its llhttp came from (the\n"
	    "system library or the sources of Debian's node-llhttp), and the\n"
	    "versions of the libraries it was built with.\n",
	.exec = cmd_version_exec,
};

static const struct cmd_entry *const cmd_table[] = {
	&cmd_start_entry,
	&cmd_stop_entry,
	&cmd_reload_entry,
	&cmd_status_entry,
	&cmd_log_entry,
	&cmd_exec_entry,
	&cmd_connect_entry,
	&cmd_runs_entry,
	&cmd_enforce_entry,
	&cmd_rules_entry,
	&cmd_doctor_entry,
	&cmd_version_entry,
	&cmd_help_entry,
};
#define CMD_COUNT (sizeof(cmd_table) / sizeof(cmd_table[0]))

static void
usage(FILE *fp)
{
	size_t i;

	fprintf(fp,
	    "usage: intutic COMMAND [ARG...]\n"
	    "       intutic --help | --version\n"
	    "\n"
	    "intutic governs what AI coding agents may reach on the network.\n"
	    "\n"
	    "Commands:\n");
	for (i = 0; i < CMD_COUNT; i++)
		fprintf(fp, "  %-9s %s\n", cmd_table[i]->name,
		    cmd_table[i]->summary);
	fprintf(fp,
	    "\n"
	    "Run 'intutic help COMMAND' for a command's options; the manual\n"
	    "pages are intutic(1), intutic-start(1), intutic-exec(1),\n"
	    "intutic-connect(1), intutic-enforce(1), intutic-doctor(1),\n"
	    "intutic-log(1), intutic-rules(5) and intutic-proxy(8).\n");
}

static const struct cmd_entry *
cmd_find(const char *name)
{
	size_t i;

	for (i = 0; i < CMD_COUNT; i++)
		if (strcmp(cmd_table[i]->name, name) == 0)
			return cmd_table[i];
	return NULL;
}

void
cmd_help(const struct cmd_entry *cmd, int to_stderr)
{
	fputs(cmd->help, to_stderr ? stderr : stdout);
}

int
cmd_usage_error(const struct cmd_entry *cmd, const char *fmt, ...)
{
	va_list ap;

	/* The mistake on a line, then where the options are: not all of them. */
	fputs("intutic: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nintutic: see intutic %s --help\n", cmd->name);
	return EXIT_USAGE;
}

const char *
cmd_article(const char *word)
{
	/* ADDR, and N or MS read as letters: "an N", "an MS"; "a URL". */
	if (strncmp(word, "URL", 3) == 0 || strncmp(word, "USER", 4) == 0)
		return "a";
	if (word[0] != '\0' && (strchr("AEIOU", word[0]) != NULL ||
	    (strlen(word) <= 2 && strchr("FHLMNRSX", word[0]) != NULL)))
		return "an";
	return "a";
}

/* A duration for people: "1h 2m 3s", "2m 3s", "3s". */
const char *
cmd_duration_text(long long s, char *buf, size_t len)
{
	if (s < 0)
		s = 0;
	if (s >= 3600)
		snprintf(buf, len, "%lldh %lldm %llds", s / 3600,
		    s % 3600 / 60, s % 60);
	else if (s >= 60)
		snprintf(buf, len, "%lldm %llds", s / 60, s % 60);
	else
		snprintf(buf, len, "%llds", s);
	return buf;
}

int
cmd_option(const struct cmd_entry *cmd, int argc, char **argv, int *i,
    const char *name, const char *arg, const char **value)
{
	const char *w = argv[*i];
	size_t n = strlen(name);

	if (strncmp(w, "--", 2) != 0 || strncmp(w + 2, name, n) != 0)
		return 0;
	if (w[2 + n] == '=') {
		*value = w + 3 + n;
		return 1;
	}
	if (w[2 + n] != '\0')
		return 0;
	if (*i + 1 >= argc) {
		cmd_usage_error(cmd, "%s: --%s needs %s %s", cmd->name, name,
		    cmd_article(arg), arg);
		return -1;
	}
	*value = argv[++*i];
	return 1;
}

static int
cmd_help_exec(int argc, char **argv)
{
	const struct cmd_entry *cmd;

	if (argc == 1) {
		usage(stdout);
		return 0;
	}
	if (argc > 2)
		return cmd_usage_error(&cmd_help_entry, "too many arguments");
	if ((cmd = cmd_find(argv[1])) == NULL)
		return cmd_usage_error(&cmd_help_entry,
		    "unknown command '%s'", argv[1]);
	cmd_help(cmd, 0);
	return 0;
}

static int
cmd_version_exec(int argc, char **argv)
{
	(void)argv;
	if (argc > 1)
		return cmd_usage_error(&cmd_version_entry, "too many arguments");
	printf("intutic %s\n", PACKAGE_VERSION);
	printf("llhttp %s (%s)\n", LLHTTP_VERSION,
	    strcmp(LLHTTP_ORIGIN, "system") == 0 ? "system libllhttp" :
	    "built from the sources of Debian's node-llhttp");
	printf("libyaml %s (built with %s)\n", yaml_get_version_string(),
	    YAML_VERSION);
	printf("built with: libevent %s, OpenSSL %s, libcurl %s, "
	    "libnftnl %s, libmnl %s\n", LIBEVENT_VERSION, OPENSSL_VERSION,
	    LIBCURL_VERSION, LIBNFTNL_VERSION, LIBMNL_VERSION);
	return 0;
}

int
main(int argc, char **argv)
{
	const struct cmd_entry *cmd;
	int i;

	log_init("intutic", LOG_LEVEL_INFO);
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0)
		return cmd_version_exec(1, argv + 1);
	if (argv[1][0] == '-') {
		error("unknown option '%s'", argv[1]);
		error("see intutic --help");
		return EXIT_USAGE;
	}
	if ((cmd = cmd_find(argv[1])) == NULL) {
		error("unknown command '%s'", argv[1]);
		error("see intutic --help");
		return EXIT_USAGE;
	}
	/* "--help" anywhere before "--" asks for the command's help. */
	for (i = 2; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0) {
			cmd_help(cmd, 0);
			return 0;
		}
	}
	/* exec's messages name it: "intutic exec: ..." */
	if (cmd == &cmd_exec_entry)
		log_init("intutic exec", LOG_LEVEL_INFO);
	return cmd->exec(argc - 1, argv + 1);
}
