/*
 * cmd-enforce.c — `intutic enforce on|off|status`: the host firewall that
 * leaves the proxy the only way out (the nftables table inet intutic; the
 * netlink side is hostfw.c).
 */
#include "config.h"

#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostfw.h"
#include "intutic.h"
#include "proc.h"
#include "state.h"

#define ENFORCE_ARG_MAX		128	/* bytes of a CIDR[:PORT] argument */
#define ENFORCE_STATUS_LINE_MAX	256	/* bytes of a /proc/PID/status line */

static int	cmd_enforce_exec(int, char **);

const struct cmd_entry cmd_enforce_entry = {
	.name = "enforce",
	.summary = "install the host firewall that leaves the proxy the only "
	    "way out",
	.help =
	    "usage: intutic enforce on [--proxy-user USER] [--allow CIDR[:PORT]]...\n"
	    "                          [--dns-to ADDR:PORT] [--dry-run]\n"
	    "                          [--state-dir DIR]\n"
	    "       intutic enforce off\n"
	    "       intutic enforce status\n"
	    "\n"
	    "on installs the nftables table inet intutic (and touches no other\n"
	    "table), in one netlink batch that replaces the table if it is there:\n"
	    "new connections from this host are let out only from sockets of the\n"
	    "proxy's user, to loopback, to the proxy's own addresses and port, and\n"
	    "to the --allow networks; DNS from anyone else is rejected, or\n"
	    "redirected to --dns-to; everything else is rejected at once (TCP\n"
	    "reset, ICMP admin-prohibited) and counted, also on connections\n"
	    "opened before (only replies to connections made to this host pass\n"
	    "as such).  Forwarded traffic (containers) is dropped unless it goes\n"
	    "to the proxy.  off removes the table.  status says whether it is\n"
	    "on, its rules in words, and its counters.\n"
	    "\n"
	    "--proxy-user USER    The user whose sockets may connect anywhere\n"
	    "                     (default: the owner of the running proxy, from\n"
	    "                     DIR/proxy.json).  Never root.\n"
	    "--allow CIDR[:PORT]  Also let everyone reach this network (a port:\n"
	    "                     TCP and UDP to that port only; an IPv6 network\n"
	    "                     with a port in brackets, [fd00::/8]:443).\n"
	    "--dns-to ADDR:PORT   Redirect the DNS queries of everyone but the\n"
	    "                     proxy's user there (the proxy's DNS filter).\n"
	    "--dry-run            Print the table in nft syntax; install nothing.\n"
	    "--state-dir DIR      The proxy's state directory (default\n"
	    "                     $XDG_STATE_HOME/intutic, else\n"
	    "                     ~/.local/state/intutic, else /run/intutic).\n"
	    "\n"
	    "Exit 0: done (status: on).  3: status: off.  2: usage error.\n"
	    "125: cannot (no proxy user, the proxy user is root, no nftables,\n"
	    "no CAP_NET_ADMIN); nothing was changed.\n",
	.exec = cmd_enforce_exec,
};

/*
 * CIDR[:PORT] (IPv6 with a port: [CIDR]:PORT) into n.  need_port 1: a
 * port must be there and no prefix (an ADDR:PORT).  Returns 0, or -1 after
 * printing a usage error naming opt.
 */
static int
enforce_net(const char *opt, const char *s, int need_port,
    struct hostfw_net *n)
{
	char buf[ENFORCE_ARG_MAX], *a, *p, *pfx, *end;
	unsigned int full, i;
	unsigned long v;

	memset(n, 0, sizeof(*n));
	if (strlen(s) >= sizeof(buf))
		goto bad;
	snprintf(buf, sizeof(buf), "%s", s);
	a = buf;
	p = NULL;
	if (*a == '[') {
		if ((end = strchr(a, ']')) == NULL || end[1] != ':')
			goto bad;
		*end = '\0';
		a++;
		p = end + 2;
	} else if ((end = strrchr(a, ':')) != NULL && strchr(a, ':') == end) {
		*end = '\0';		/* IPv4 with a port */
		p = end + 1;
	}
	if ((pfx = strchr(a, '/')) != NULL)
		*pfx++ = '\0';
	if (inet_pton(AF_INET, a, n->addr) == 1)
		n->family = AF_INET;
	else if (inet_pton(AF_INET6, a, n->addr) == 1)
		n->family = AF_INET6;
	else
		goto bad;
	full = n->family == AF_INET ? 32 : 128;
	n->prefix = full;
	if (pfx != NULL) {
		errno = 0;
		v = strtoul(pfx, &end, 10);
		if (need_port || *pfx < '0' || *pfx > '9' || *end != '\0' ||
		    errno != 0 || v > full)
			goto bad;
		if (v == 0) {
			cmd_usage_error(&cmd_enforce_entry, "enforce: --%s: "
			    "'%s' would let everything out", opt, s);
			return -1;
		}
		n->prefix = (unsigned int)v;
	}
	for (i = n->prefix; i < full; i++)
		n->addr[i / 8] &= (unsigned char)~(0x80 >> (i % 8));
	if (p != NULL) {
		errno = 0;
		v = strtoul(p, &end, 10);
		if (*p < '0' || *p > '9' || *end != '\0' || errno != 0 ||
		    v < 1 || v > 65535)
			goto bad;
		n->port = (unsigned int)v;
	} else if (need_port)
		goto bad;
	return 0;
 bad:
	cmd_usage_error(&cmd_enforce_entry, "enforce: --%s: '%s' is not %s",
	    opt, s, need_port ? "an ADDR:PORT" : "a CIDR[:PORT]");
	return -1;
}

/* USER, a name or a number, into *uid.  Returns 0, or -1 (printed). */
static int
enforce_user(const char *s, uid_t *uid)
{
	struct passwd *pw;
	unsigned long v;
	char *end;

	if ((pw = getpwnam(s)) != NULL) {
		*uid = pw->pw_uid;
		return 0;
	}
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0' || errno != 0 ||
	    v >= (unsigned long)UINT32_MAX) {
		fprintf(stderr, "intutic: enforce: --proxy-user: no user "
		    "'%s'\n", s);
		return -1;
	}
	*uid = (uid_t)v;
	return 0;
}

/*
 * The user the proxy's sockets belong to: the filesystem uid of pid (the
 * kernel gives a socket the fsuid of its creator), read from
 * /proc/PID/status.  Returns 0, or -1.
 */
static int
enforce_proc_uid(pid_t pid, uid_t *uid)
{
	char path[64], line[ENFORCE_STATUS_LINE_MAX];
	unsigned long r, e, s, f;
	FILE *fp;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if ((fp = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), fp) != NULL)
		if (sscanf(line, "Uid: %lu %lu %lu %lu", &r, &e, &s, &f) ==
		    4) {
			found = 1;
			break;
		}
	fclose(fp);
	if (!found)
		return -1;
	*uid = (uid_t)f;
	return 0;
}

static const char *
enforce_user_name(uid_t uid, char *buf, size_t len)
{
	struct passwd *pw;

	if ((pw = getpwuid(uid)) != NULL)
		snprintf(buf, len, "%s (uid %lu)", pw->pw_name,
		    (unsigned long)uid);
	else
		snprintf(buf, len, "uid %lu", (unsigned long)uid);
	return buf;
}

/*
 * The running proxy, if there is one: its user and its addresses into cfg.
 * Returns 1 when it runs, 0 when it does not, -1 after an error.
 */
static int
enforce_proxy(const char *dir, struct hostfw_config *cfg, int want_uid)
{
	struct proxy_state st;
	struct proc p;
	char err[STATE_ERROR_MAX];
	struct hostfw_net *n;
	size_t i;
	uid_t uid;
	int r;

	switch (state_read(dir, &st, err, sizeof(err))) {
	case STATE_OK:
		break;
	case STATE_MISSING:
		return 0;
	default:
		fprintf(stderr, "intutic: enforce: %s\n", err);
		return -1;
	}
	if (proc_open(&p, st.pid) != 0)
		return 0;
	r = proc_kind(&p, NULL, 0) == PROC_PROXY &&
	    enforce_proc_uid(st.pid, &uid) == 0 &&
	    proc_kind(&p, NULL, 0) == PROC_PROXY;
	proc_close(&p);
	if (!r)
		return 0;
	if (want_uid)
		cfg->uid = uid;
	for (i = 0; i < st.nbind && cfg->nproxy < HOSTFW_PROXY_MAX; i++) {
		/* A wildcard address is this host's: reached over loopback. */
		if (strcmp(st.bind[i], "0.0.0.0") == 0 ||
		    strcmp(st.bind[i], "::") == 0)
			continue;
		n = &cfg->proxy[cfg->nproxy];
		memset(n, 0, sizeof(*n));
		if (inet_pton(AF_INET, st.bind[i], n->addr) == 1) {
			n->family = AF_INET;
			n->prefix = 32;
		} else if (inet_pton(AF_INET6, st.bind[i], n->addr) == 1) {
			n->family = AF_INET6;
			n->prefix = 128;
		} else
			continue;
		n->port = st.port;
		cfg->nproxy++;
	}
	return 1;
}

static int
enforce_on(struct hostfw_config *cfg, const char *user, const char *dir,
    int dry_run)
{
	char why[HOSTFW_WHY_MAX], who[128];
	int r;

	if (user != NULL && enforce_user(user, &cfg->uid) != 0)
		return EXIT_CANNOT_RUN;
	if ((r = enforce_proxy(dir, cfg, user == NULL)) == -1)
		return EXIT_CANNOT_RUN;
	if (r == 0 && user == NULL) {
		fprintf(stderr, "intutic: enforce: the proxy does not run "
		    "(no live proxy in '%s') and no --proxy-user was given: "
		    "nothing installed (it would shut everyone out)\n", dir);
		return EXIT_CANNOT_RUN;
	}
	if (cfg->uid == 0) {
		fprintf(stderr, "intutic: enforce: the proxy's user is root: "
		    "refused, since every socket root owns would pass; run "
		    "the proxy as a user of its own (--proxy-user)\n");
		return EXIT_CANNOT_RUN;
	}
	if (dry_run) {
		if (hostfw_print(cfg, stdout, why, sizeof(why)) != 0) {
			fprintf(stderr, "intutic: enforce: %s\n", why);
			return EXIT_CANNOT_RUN;
		}
		return fflush(stdout) == 0 ? 0 : EXIT_FAILURE;
	}
	if (hostfw_install(cfg, why, sizeof(why)) != 0) {
		fprintf(stderr, "intutic: enforce: %s\n", why);
		return EXIT_CANNOT_RUN;
	}
	printf("intutic: enforce on: table %s %s installed; only %s may "
	    "open connections beyond it\n", HOSTFW_FAMILY_NAME, HOSTFW_TABLE,
	    enforce_user_name(cfg->uid, who, sizeof(who)));
	return 0;
}

static int
enforce_off(void)
{
	char why[HOSTFW_WHY_MAX];

	switch (hostfw_remove(why, sizeof(why))) {
	case 1:
		printf("intutic: enforce off: table %s %s removed\n",
		    HOSTFW_FAMILY_NAME, HOSTFW_TABLE);
		return 0;
	case 0:
		printf("intutic: enforce off: table %s %s was not there\n",
		    HOSTFW_FAMILY_NAME, HOSTFW_TABLE);
		return 0;
	default:
		fprintf(stderr, "intutic: enforce: %s\n", why);
		return EXIT_CANNOT_RUN;
	}
}

static int
enforce_status(void)
{
	char why[HOSTFW_WHY_MAX];

	switch (hostfw_active(why, sizeof(why))) {
	case 0:
		printf("enforce: off (no table %s %s)\n", HOSTFW_FAMILY_NAME,
		    HOSTFW_TABLE);
		return EXIT_NOT_RUNNING;
	case 1:
		break;
	default:
		fprintf(stderr, "intutic: enforce: %s\n", why);
		return EXIT_CANNOT_RUN;
	}
	printf("enforce: on (table %s %s)\n", HOSTFW_FAMILY_NAME,
	    HOSTFW_TABLE);
	if (hostfw_show(stdout, why, sizeof(why)) != 0) {
		fprintf(stderr, "intutic: enforce: %s\n", why);
		return EXIT_CANNOT_RUN;
	}
	return fflush(stdout) == 0 ? 0 : EXIT_FAILURE;
}

static int
cmd_enforce_exec(int argc, char **argv)
{
	struct hostfw_config *cfg;
	const char *opt_dir = NULL, *user = NULL, *v, *what;
	char dir[PATH_MAX];
	int i, r, dry_run = 0, on = 0;

	if (argc < 2)
		return cmd_usage_error(&cmd_enforce_entry,
		    "enforce: on, off or status?");
	what = argv[1];
	if (strcmp(what, "on") == 0)
		on = 1;
	else if (strcmp(what, "off") != 0 && strcmp(what, "status") != 0)
		return cmd_usage_error(&cmd_enforce_entry, "enforce: unknown "
		    "argument '%s' (on, off or status)", what);
	if ((cfg = calloc(1, sizeof(*cfg))) == NULL) {
		fprintf(stderr, "intutic: enforce: out of memory\n");
		return EXIT_CANNOT_RUN;
	}
	r = 0;
	for (i = 2; i < argc && r == 0; i++) {
		if (on && strcmp(argv[i], "--dry-run") == 0) {
			dry_run = 1;
			continue;
		}
		if (on && (r = cmd_option(&cmd_enforce_entry, argc, argv, &i,
		    "proxy-user", "USER", &user)) != 0)
			r = r == 1 ? 0 : EXIT_USAGE;
		else if (on && (r = cmd_option(&cmd_enforce_entry, argc, argv,
		    &i, "allow", "CIDR", &v)) != 0) {
			if (r == 1 && cfg->nallow == HOSTFW_ALLOW_MAX)
				r = cmd_usage_error(&cmd_enforce_entry,
				    "enforce: more than %d --allow",
				    HOSTFW_ALLOW_MAX);
			else if (r == 1)
				r = enforce_net("allow", v, 0,
				    &cfg->allow[cfg->nallow++]) == 0 ? 0 :
				    EXIT_USAGE;
			else
				r = EXIT_USAGE;
		} else if (on && (r = cmd_option(&cmd_enforce_entry, argc,
		    argv, &i, "dns-to", "ADDR:PORT", &v)) != 0) {
			if (r == 1) {
				r = enforce_net("dns-to", v, 1,
				    &cfg->dns_to) == 0 ? 0 : EXIT_USAGE;
				cfg->dns_to_set = 1;
			} else
				r = EXIT_USAGE;
		} else if (on && (r = cmd_option(&cmd_enforce_entry, argc,
		    argv, &i, "state-dir", "DIR", &opt_dir)) != 0)
			r = r == 1 ? 0 : EXIT_USAGE;
		else
			r = cmd_usage_error(&cmd_enforce_entry,
			    "enforce %s: unknown argument '%s'", what,
			    argv[i]);
	}
	if (r == 0 && on) {
		if (config_state_dir(opt_dir, dir, sizeof(dir)) != 0)
			r = EXIT_USAGE;
		else
			r = enforce_on(cfg, user, dir, dry_run);
	} else if (r == 0)
		r = what[1] == 'f' ? enforce_off() : enforce_status();
	free(cfg);
	return r;
}
