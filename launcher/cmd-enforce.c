/*
 * cmd-enforce.c — `intutic enforce on|off|status`: the host firewall that
 * leaves the proxy the only way out (the nftables table inet intutic; the
 * netlink side is hostfw.c).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conntrack.h"
#include "enforce-record.h"
#include "hostfw.h"
#include "intutic.h"
#include "log.h"
#include "policy.h"
#include "rules.h"
#include "state.h"

static int	cmd_enforce_exec(int, char **);

const struct cmd_entry cmd_enforce_entry = {
	.name = "enforce",
	.summary = "install the host firewall that leaves the proxy the only "
	    "way out",
	.help =
	    "usage: intutic enforce on [--proxy-user USER] [--allow CIDR[:PORT]]...\n"
	    "                          [--dns-to ADDR:PORT] [--transparent]\n"
	    "                          [--dry-run] [--state-dir DIR]\n"
	    "       intutic enforce off\n"
	    "       intutic enforce status\n"
	    "       intutic enforce container --proxy ADDR:PORT\n"
	    "                          [--allow CIDR[:PORT]]... [--dns ADDR:PORT]\n"
	    "                          [--transparent ADDR:PORT]\n"
	    "\n"
	    "on installs the nftables table inet intutic (and touches no other\n"
	    "table), in one netlink batch that replaces the table if it is there:\n"
	    "new connections from this host are let out only from sockets of the\n"
	    "proxy's user, to loopback, to the proxy's own addresses and port, and\n"
	    "to the --allow networks; DNS from anyone else is redirected to\n"
	    "--dns-to, else to the proxy's DNS filter, else rejected; with\n"
	    "--transparent their TCP to ports 80, 443 and those the rules allow\n"
	    "goes to the proxy's transparent listener; everything else is\n"
	    "rejected at once (TCP reset, ICMP admin-prohibited) and counted,\n"
	    "also on connections opened before (only replies to connections\n"
	    "made to this host pass as such).  Forwarded traffic (containers) is dropped unless it goes\n"
	    "to the proxy.  Then the flows connection tracking holds that the\n"
	    "table would not let out (other users', and those with no socket\n"
	    "left) are deleted, and a record of the table is left in\n"
	    "/run/intutic-enforce for users who cannot ask nftables.  off\n"
	    "removes the table and the record.  status says whether it is on,\n"
	    "its rules in words, and its counters.  container prints, in nft\n"
	    "syntax, the table a sandbox container's entrypoint installs (what\n"
	    "intutic exec --sandbox hands it): only loopback, replies, the proxy,\n"
	    "the --allow networks and the --dns resolver; the rest is dropped;\n"
	    "with --transparent, TCP to ports 80 and 443 goes to that listener\n"
	    "and every DNS query to the --dns resolver.\n"
	    "\n"
	    "--proxy-user USER    The user whose sockets may connect anywhere\n"
	    "                     (default: the owner of the running proxy, from\n"
	    "                     DIR/proxy.json).  Never root.\n"
	    "--allow CIDR[:PORT]  Also let everyone reach this network (a port:\n"
	    "                     TCP and UDP to that port only; an IPv6 network\n"
	    "                     with a port in brackets, [fd00::/8]:443).\n"
	    "--dns-to ADDR:PORT   Redirect the DNS queries of everyone but the\n"
	    "                     proxy's user there (default: the running\n"
	    "                     proxy's DNS filter, when it serves one).\n"
	    "--transparent        Redirect the TCP of everyone but the proxy's\n"
	    "                     user to ports 80, 443 and those the proxy's\n"
	    "                     rules allow (not over loopback) to its\n"
	    "                     transparent listener.\n"
	    "--dry-run            Print the table in nft syntax; install nothing.\n"
	    "--proxy ADDR:PORT    container: the proxy as the container reaches it.\n"
	    "--dns ADDR:PORT      container: the one resolver it may ask.\n"
	    "--transparent ADDR:PORT  container: the proxy's transparent\n"
	    "                     listener as the container reaches it.\n"
	    "--state-dir DIR      The proxy's state directory (default\n"
	    "                     $XDG_STATE_HOME/intutic, else\n"
	    "                     ~/.local/state/intutic, else /run/intutic; when\n"
	    "                     no proxy runs there, /run/intutic: the service's).\n"
	    "\n"
	    "Exit 0: done (status: on).  3: status: off.  2: usage error.\n"
	    "125: cannot (no proxy user, the proxy user is root, no nftables,\n"
	    "no CAP_NET_ADMIN); nothing was changed.\n",
	.exec = cmd_enforce_exec,
};

/* hostfw_net_parse(), its errors as usage errors naming opt: 0 or -1. */
static int
enforce_net(const char *opt, const char *s, int need_port,
    struct hostfw_net *n)
{
	switch (hostfw_net_parse(s, need_port, n)) {
	case 0:
		return 0;
	case -2:
		cmd_usage_error(&cmd_enforce_entry, "enforce: --%s: '%s' would "
		    "let everything out", opt, s);
		return -1;
	default:
		cmd_usage_error(&cmd_enforce_entry, "enforce: --%s: '%s' is not "
		    "%s", opt, s, need_port ? "an ADDR:PORT" : "a CIDR[:PORT]");
		return -1;
	}
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
		error("enforce: --proxy-user: no user "
		    "'%s'", s);
		return -1;
	}
	*uid = (uid_t)v;
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
 * Ends the tracked flows the table would not let out (it judges a packet on
 * them by who sends it already: this leaves nothing to ride).  A failure is
 * a warning: the table is in place.
 */
static void
enforce_cut(const struct hostfw_config *cfg)
{
	struct conntrack_result res;
	char why[HOSTFW_WHY_MAX], t[128];
	size_t i;

	if (conntrack_cut(cfg, 0, &res, why, sizeof(why)) != 0) {
		if (errno != EPROTONOSUPPORT && errno != ENOENT)
			error("enforce: warning: %s: flows "
			    "opened before may stay tracked (the table drops "
			    "what they send)", why);
		return;
	}
	printf("intutic: enforce on: %zu of %zu tracked flows cut (the table "
	    "would not let them out)%s\n", res.cut - res.gone, res.seen,
	    res.nshown > 0 ? ":" : "");
	for (i = 0; i < res.nshown; i++)
		printf("  %s\n", conntrack_flow_text(&res.shown[i], t,
		    sizeof(t)));
	if (res.cut > res.nshown)
		printf("  and %zu more\n", res.cut - res.nshown);
}

/*
 * The ports sent to the transparent listener: 80, 443 and those the
 * running proxy's rules name (GET /v1/rules on its control socket); those
 * two alone, with a warning, when they cannot be had.
 */
static void
enforce_redirect_ports(const char *dir, struct hostfw_config *cfg)
{
	struct proxy_state st;
	struct rules *r = NULL;
	uint16_t ports[HOSTFW_REDIRECT_MAX];
	char err[STATE_ERROR_MAX];
	size_t n = 0;
	long status;

	if (state_read(dir, &st, err, sizeof(err)) != STATE_OK ||
	    st.control[0] == '\0' ||
	    policy_ceiling(st.control, &r, &status, err, sizeof(err)) != 0)
		error("enforce: warning: cannot read the proxy's rules (%s): "
		    "only TCP to ports 80 and 443 goes to its transparent "
		    "listener", st.control[0] == '\0' ? "no control socket" :
		    err);
	else
		n = rules_allow_ports(r, ports, HOSTFW_REDIRECT_MAX);
	rules_free(r);
	cfg->nredirect = hostfw_redirect_ports(ports, n, cfg->redirect);
}

static int
enforce_on(struct hostfw_config *cfg, const char *user, const char *dir,
    int transparent, int dry_run)
{
	struct hostfw_net dns, tp;
	char why[HOSTFW_WHY_MAX], who[128], err[STATE_ERROR_MAX];
	int r;

	if (user != NULL && enforce_user(user, &cfg->uid) != 0)
		return EXIT_CANNOT_RUN;
	if ((r = enforce_proxy_config(dir, cfg, user == NULL, &dns, &tp, err,
	    sizeof(err))) == -1) {
		error("enforce: %s", err);
		return EXIT_CANNOT_RUN;
	}
	if (!cfg->dns_to_set && dns.family != 0) {
		cfg->dns_to = dns;
		cfg->dns_to_set = 1;
	}
	if (transparent && tp.family == 0) {
		error("enforce: --transparent: %s: nothing installed (start "
		    "it with --transparent-bind, e.g. `intutic start "
		    "--transparent-bind 127.0.0.1:3129`)", r == 0 ?
		    "the proxy does not run, so its transparent listener is "
		    "not known" : "the proxy serves no transparent listener");
		return EXIT_CANNOT_RUN;
	}
	if (transparent) {
		cfg->transparent = tp;
		cfg->transparent_set = 1;
		enforce_redirect_ports(dir, cfg);
	}
	if (r == 0 && user == NULL) {
		error("enforce: the proxy does not run "
		    "(no live proxy in '%s') and no --proxy-user was given: "
		    "nothing installed (it would shut everyone out)", dir);
		return EXIT_CANNOT_RUN;
	}
	if (cfg->uid == 0) {
		error("enforce: the proxy's user is root: "
		    "refused, since every socket root owns would pass; run "
		    "the proxy as a user of its own (--proxy-user)");
		return EXIT_CANNOT_RUN;
	}
	if (dry_run) {
		if (hostfw_print(cfg, stdout, why, sizeof(why)) != 0) {
			error("enforce: %s", why);
			return EXIT_CANNOT_RUN;
		}
		return fflush(stdout) == 0 ? 0 : EXIT_FAILURE;
	}
	if (hostfw_install(cfg, why, sizeof(why)) != 0) {
		error("enforce: %s", why);
		return EXIT_CANNOT_RUN;
	}
	printf("intutic: enforce on: table %s %s installed; only %s may "
	    "open connections beyond it\n", HOSTFW_FAMILY_NAME, HOSTFW_TABLE,
	    enforce_user_name(cfg->uid, who, sizeof(who)));
	if (enforce_record_write(cfg, why, sizeof(why)) != 0)
		error("enforce: warning: %s: the table is "
		    "on, but users who cannot ask nftables (intutic exec, "
		    "doctor) will not know it", why);
	enforce_cut(cfg);
	return fflush(stdout) == 0 ? 0 : EXIT_FAILURE;
}

static int
enforce_off(void)
{
	char why[HOSTFW_WHY_MAX];
	int r;

	r = hostfw_remove(why, sizeof(why));
	if (r != -1 && enforce_record_remove(why, sizeof(why)) != 0)
		error("enforce: warning: %s", why);
	switch (r) {
	case 1:
		printf("intutic: enforce off: table %s %s removed\n",
		    HOSTFW_FAMILY_NAME, HOSTFW_TABLE);
		return 0;
	case 0:
		printf("intutic: enforce off: table %s %s was not there\n",
		    HOSTFW_FAMILY_NAME, HOSTFW_TABLE);
		return 0;
	default:
		error("enforce: %s", why);
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
		error("enforce: %s", why);
		return EXIT_CANNOT_RUN;
	}
	printf("enforce: on (table %s %s)\n", HOSTFW_FAMILY_NAME,
	    HOSTFW_TABLE);
	if (hostfw_show(stdout, why, sizeof(why)) != 0) {
		error("enforce: %s", why);
		return EXIT_CANNOT_RUN;
	}
	return fflush(stdout) == 0 ? 0 : EXIT_FAILURE;
}

/* `enforce container`: the sandbox container's table, printed. */
static int
enforce_container(int argc, char **argv)
{
	struct hostfw_sandbox *sb;
	const char *v;
	char why[HOSTFW_WHY_MAX];
	int i, r = 0, have_proxy = 0;

	if ((sb = calloc(1, sizeof(*sb))) == NULL) {
		error("enforce: out of memory");
		return EXIT_CANNOT_RUN;
	}
	for (i = 2; i < argc && r == 0; i++) {
		if ((r = cmd_option(&cmd_enforce_entry, argc, argv, &i,
		    "proxy", "ADDR:PORT", &v)) != 0) {
			r = r == 1 && enforce_net("proxy", v, 1,
			    &sb->proxy) == 0 ? 0 : EXIT_USAGE;
			have_proxy = 1;
		} else if ((r = cmd_option(&cmd_enforce_entry, argc, argv, &i,
		    "dns", "ADDR:PORT", &v)) != 0) {
			r = r == 1 && enforce_net("dns", v, 1,
			    &sb->dns) == 0 ? 0 : EXIT_USAGE;
			sb->dns_set = 1;
		} else if ((r = cmd_option(&cmd_enforce_entry, argc, argv, &i,
		    "transparent", "ADDR:PORT", &v)) != 0) {
			r = r == 1 && enforce_net("transparent", v, 1,
			    &sb->transparent) == 0 ? 0 : EXIT_USAGE;
			sb->transparent_set = 1;
		} else if ((r = cmd_option(&cmd_enforce_entry, argc, argv, &i,
		    "allow", "CIDR", &v)) != 0) {
			if (r == 1 && sb->nallow == HOSTFW_ALLOW_MAX)
				r = cmd_usage_error(&cmd_enforce_entry,
				    "enforce: more than %d --allow",
				    HOSTFW_ALLOW_MAX);
			else
				r = r == 1 && enforce_net("allow", v, 0,
				    &sb->allow[sb->nallow++]) == 0 ? 0 :
				    EXIT_USAGE;
		} else
			r = cmd_usage_error(&cmd_enforce_entry,
			    "enforce container: unknown argument '%s'",
			    argv[i]);
	}
	if (r == 0 && !have_proxy)
		r = cmd_usage_error(&cmd_enforce_entry, "enforce container: "
		    "--proxy ADDR:PORT is required (the proxy as the "
		    "container reaches it)");
	if (r == 0 && hostfw_sandbox_print(sb, stdout, why, sizeof(why)) != 0) {
		error("enforce container: %s", why);
		r = EXIT_CANNOT_RUN;
	}
	if (r == 0 && fflush(stdout) != 0)
		r = EXIT_FAILURE;
	free(sb);
	return r;
}

static int
cmd_enforce_exec(int argc, char **argv)
{
	struct hostfw_config *cfg;
	const char *opt_dir = NULL, *user = NULL, *v, *what;
	char dir[PATH_MAX];
	int i, r, dry_run = 0, on = 0, transparent = 0;

	if (argc < 2)
		return cmd_usage_error(&cmd_enforce_entry,
		    "enforce: on, off, status or container?");
	what = argv[1];
	if (strcmp(what, "container") == 0)
		return enforce_container(argc, argv);
	if (strcmp(what, "on") == 0)
		on = 1;
	else if (strcmp(what, "off") != 0 && strcmp(what, "status") != 0)
		return cmd_usage_error(&cmd_enforce_entry, "enforce: unknown "
		    "argument '%s' (on, off, status or container)", what);
	if ((cfg = calloc(1, sizeof(*cfg))) == NULL) {
		error("enforce: out of memory");
		return EXIT_CANNOT_RUN;
	}
	r = 0;
	for (i = 2; i < argc && r == 0; i++) {
		if (on && strcmp(argv[i], "--dry-run") == 0) {
			dry_run = 1;
			continue;
		}
		if (on && strcmp(argv[i], "--transparent") == 0) {
			transparent = 1;
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
		if (config_state_dir_find(opt_dir, dir, sizeof(dir)) != 0)
			r = EXIT_USAGE;
		else
			r = enforce_on(cfg, user, dir, transparent, dry_run);
	} else if (r == 0)
		r = what[1] == 'f' ? enforce_off() : enforce_status();
	free(cfg);
	return r;
}
