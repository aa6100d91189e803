/*
 * cmd-doctor.c — `intutic doctor`: what this host can deliver and what is
 * missing, one line per check, each with a verdict and, when not ok, the
 * fix.
 *
 * Every check is bounded: the proxy's /healthz and the workspace API
 * through fetch.c's timeouts, `podman info` and `docker info` by
 * DOCTOR_RUNTIME_MS (then SIGKILL).  Nothing runs through a shell.
 * nftables is asked through hostfw.c, the launcher's one libnftnl file.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#include <linux/magic.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conntrack.h"
#include "enforce-record.h"
#include "backend.h"
#include "fetch.h"
#include "hostfw.h"
#include "intutic.h"
#include "jsonw.h"
#include "locate.h"
#include "log.h"
#include "rules.h"
#include "settings.h"
#include "spawn.h"
#include "state.h"

extern char **environ;

#define DOCTOR_RUNTIME_MS	5000	/* `podman info`, `docker info` */
#define DOCTOR_STATUS_LINES_MAX	128	/* lines of /proc/self/status read */
#define DOCTOR_CAP_NET_ADMIN	12	/* its bit in CapEff */
#define DOCTOR_TEXT_MAX		1024	/* bytes of what the result lists */
#define DOCTOR_CONF_LINES_MAX	4096	/* lines of a containers.conf read */

static int	cmd_doctor_exec(int, char **);

const struct cmd_entry cmd_doctor_entry = {
	.name = "doctor",
	.summary = "say what this host can deliver and what is missing",
	.help =
	    "usage: intutic doctor [--state-dir DIR] [--proxy URL] [--json]\n"
	    "\n"
	    "Says what this host can deliver and what is missing, one line\n"
	    "per check, each with a verdict (ok, warn, missing, fail) and,\n"
	    "when it is not ok, the fix: the proxy running (its address, rule\n"
	    "file and uptime), its rules valid, the enforcement level and\n"
	    "where it came from, podman and docker present and running,\n"
	    "what a sandbox run needs of the one `exec --sandbox` would use\n"
	    "(the cgroup layout and podman's default_ulimits, rootless\n"
	    "networking, its bridge's address, the default image),\n"
	    "/dev/kvm usable, firecracker and qemu present, what microVM\n"
	    "runs whose launcher died left behind, nftables usable,\n"
	    "`intutic enforce` active, and the tracked flows `intutic enforce\n"
	    "on` would cut.  The last line says whether this host has what\n"
	    "the level needs.\n"
	    "\n"
	    "--state-dir DIR   The proxy's state directory (default\n"
	    "                  $XDG_STATE_HOME/intutic, else\n"
	    "                  ~/.local/state/intutic, else /run/intutic; when\n"
	    "                  no proxy runs there, /run/intutic: the service's).\n"
	    "--proxy URL       The proxy to check, http://HOST:PORT\n"
	    "                  (default $INTUTIC_PROXY_URL, else the one\n"
	    "                  the state file names, else\n"
	    "                  http://127.0.0.1:8877).\n"
	    "--json            The checks and the result as one JSON object\n"
	    "                  (intutic-doctor(1), DOCTOR AS JSON), printed\n"
	    "                  when the last check is done.\n"
	    "-h, --help        Show this help.\n"
	    "\n"
	    "Exit 0: this host has what the level needs: off and recommend\n"
	    "need the proxy running and its rules valid; require also needs a\n"
	    "sandbox backend, podman or docker running, or /dev/kvm and\n"
	    "firecracker or qemu.  1: something the level needs is missing,\n"
	    "or the settings cannot be read.  2: usage error.\n",
	.exec = cmd_doctor_exec,
};

/* A check's verdict.  The zero value fails. */
enum doctor_verdict {
	DOCTOR_FAIL = 0,	/* broken: it must be fixed */
	DOCTOR_OK,
	DOCTOR_WARN,		/* works, or cannot be told, with a caveat */
	DOCTOR_MISSING,		/* not there, not running */
};

static const char *
doctor_verdict_str(enum doctor_verdict v)
{
	switch (v) {
	case DOCTOR_OK:
		return "ok";
	case DOCTOR_WARN:
		return "warn";
	case DOCTOR_MISSING:
		return "missing";
	case DOCTOR_FAIL:
		break;
	}
	return "fail";
}

/*
 * --json: the checks' objects go to a memory stream as they are made, and
 * the whole object is printed at the end (doctor_json_print()).
 */
static struct {
	FILE	*checks;	/* NULL: text, each line as it is made */
	char	*text;		/* what checks holds, once closed */
	size_t	 len;
	int	 n;		/* checks written */
} doctor_out;

/*
 * One check: a line "CHECK  VERDICT  DETAIL[; fix: FIX]", and "note NOTE"
 * under it when there is one; or, with --json, its object.
 */
static void
doctor_emit(const char *check, enum doctor_verdict v, const char *fix,
    const char *detail, const char *note)
{
	FILE *f = doctor_out.checks;

	if (v == DOCTOR_OK)
		fix = NULL;
	if (f == NULL) {
		printf("%-12s %-8s %s", check, doctor_verdict_str(v), detail);
		if (fix != NULL)
			printf("; fix: %s", fix);
		putchar('\n');
		if (note != NULL)
			printf("%-12s %-8s %s\n", "", "note", note);
		return;
	}
	fprintf(f, "%s{\"check\":", doctor_out.n++ > 0 ? "," : "");
	jsonw_fstr(f, check);
	fprintf(f, ",\"verdict\":");
	jsonw_fstr(f, doctor_verdict_str(v));
	fprintf(f, ",\"detail\":");
	jsonw_fstr(f, detail);
	fprintf(f, ",\"fix\":");
	jsonw_fstr(f, fix);
	fprintf(f, ",\"note\":");
	jsonw_fstr(f, note);
	fputc('}', f);
}

static void	doctor_line(const char *, enum doctor_verdict, const char *,
		    const char *, ...) __attribute__((format(printf, 4, 5)));

/* One check without a note, its detail a printf format. */
static void
doctor_line(const char *check, enum doctor_verdict v, const char *fix,
    const char *fmt, ...)
{
	va_list ap;
	char *detail;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&detail, fmt, ap);
	va_end(ap);
	if (r < 0)
		fatal("out of memory");
	doctor_emit(check, v, fix, detail, NULL);
	free(detail);
}

static void __attribute__((format(printf, 3, 4)))
doctor_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------- programs */

/*
 * Runs `PATH info` (argv[0] name) with no shell, its input and output
 * /dev/null, for at most DOCTOR_RUNTIME_MS (then SIGKILL to it).  0 when
 * it exits 0; else -1 with why.
 */
static int
doctor_info(const char *path, const char *name, char *why, size_t whylen)
{
	char *argv[3], err[192];
	int st;

	argv[0] = (char *)path;
	argv[1] = (char *)"info";
	argv[2] = NULL;
	if (spawn_run(argv, NULL, 0, DOCTOR_RUNTIME_MS, NULL, 0, &st, err,
	    sizeof(err)) != 0) {
		snprintf(why, whylen, "'%s info' %s", name, err);
		return -1;
	}
	if (st == 0)
		return 0;
	if (st > 0)
		snprintf(why, whylen, "'%s info' exits %d", name, st);
	else
		snprintf(why, whylen, "'%s info' was killed by a signal", name);
	return -1;
}

/* A container runtime: present (in PATH), running (`NAME info` exits 0). */
static int
doctor_runtime(const char *name, const char *install, const char *start)
{
	char path[PATH_MAX], why[256];

	if (spawn_which(name, path, sizeof(path)) != 0) {
		doctor_line(name, DOCTOR_MISSING, install, "not found in PATH");
		return 0;
	}
	if (doctor_info(path, name, why, sizeof(why)) != 0) {
		doctor_line(name, DOCTOR_MISSING, start, "%s is there but not "
		    "running: %s", path, why);
		return 0;
	}
	doctor_line(name, DOCTOR_OK, NULL, "%s, running", path);
	return 1;
}

/* ------------------------------------------------------------- sandbox */

/*
 * Whether a containers.conf that podman reads sets default_ulimits: 1 with
 * its path in `where`, else 0.  CONTAINERS_CONF, when set, is the only one
 * read, as podman does; else the system's and, not as root, the user's
 * (the drop-in directories are not read).
 */
static int
doctor_ulimits_set(char *where, size_t len)
{
	const char *env = getenv("CONTAINERS_CONF");
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char cand[3][PATH_MAX], line[512], *p;
	size_t n = 0, i, k;
	FILE *f;

	if (env != NULL && *env != '\0')
		snprintf(cand[n++], sizeof(cand[0]), "%s", env);
	else {
		snprintf(cand[n++], sizeof(cand[0]),
		    "/usr/share/containers/containers.conf");
		snprintf(cand[n++], sizeof(cand[0]),
		    "/etc/containers/containers.conf");
		if (getuid() != 0 && xdg != NULL && *xdg == '/')
			snprintf(cand[n++], sizeof(cand[0]),
			    "%s/containers/containers.conf", xdg);
		else if (getuid() != 0 && home != NULL && *home == '/')
			snprintf(cand[n++], sizeof(cand[0]),
			    "%s/.config/containers/containers.conf", home);
	}
	for (i = 0; i < n; i++) {
		if ((f = fopen(cand[i], "r")) == NULL)
			continue;
		for (k = 0; k < DOCTOR_CONF_LINES_MAX &&
		    fgets(line, sizeof(line), f) != NULL; k++) {
			p = line + strspn(line, " \t");
			if (strncmp(p, "default_ulimits", 15) == 0 &&
			    strchr(" \t=", p[15]) != NULL && p[15] != '\0') {
				fclose(f);
				snprintf(where, len, "%.*s", PATH_MAX - 1, cand[i]);
				return 1;
			}
		}
		fclose(f);
	}
	return 0;
}

/*
 * The cgroup layout: cgroup2 is fine; on a hybrid or v1 one runc cannot
 * set the ulimits podman passes on unless its containers.conf sets
 * default_ulimits (`podman run` fails with "error setting rlimit type 7").
 */
static void
doctor_cgroups(const char *name)
{
	char where[PATH_MAX], conf[PATH_MAX], fix[2 * PATH_MAX + 128];
	const char *layout;
	struct statfs sf;
	struct stat sb;

	if (statfs("/sys/fs/cgroup", &sf) != 0) {
		doctor_line("cgroups", DOCTOR_WARN, "mount the cgroup "
		    "filesystem on /sys/fs/cgroup (containers need it)",
		    "cannot read /sys/fs/cgroup: %s", strerror(errno));
		return;
	}
	if (sf.f_type == CGROUP2_SUPER_MAGIC) {
		doctor_line("cgroups", DOCTOR_OK, NULL, "cgroup2 (unified) "
		    "on /sys/fs/cgroup");
		return;
	}
	layout = stat("/sys/fs/cgroup/unified", &sb) == 0 &&
	    S_ISDIR(sb.st_mode) ? "hybrid" : "v1";
	if (strcmp(name, "podman") != 0) {
		doctor_line("cgroups", DOCTOR_WARN, "when runs fail with "
		    "'error setting rlimit', set \"default-ulimits\" in "
		    "/etc/docker/daemon.json", "%s layout on /sys/fs/cgroup "
		    "(docker's ulimits not checked)", layout);
		return;
	}
	if (doctor_ulimits_set(where, sizeof(where))) {
		doctor_line("cgroups", DOCTOR_OK, NULL, "%s layout on "
		    "/sys/fs/cgroup; default_ulimits set in %s", layout, where);
		return;
	}
	if (oci_conf_path(conf, sizeof(conf)) != 0)
		snprintf(conf, sizeof(conf), "contrib/containers.conf");
	doctor_fmt(fix, sizeof(fix), "give podman explicit default_ulimits: "
	    "CONTAINERS_CONF=%s, or copy that file to %s", conf,
	    getuid() == 0 ? "/etc/containers/containers.conf" :
	    "~/.config/containers/containers.conf");
	doctor_line("cgroups", DOCTOR_WARN, fix, "%s layout on /sys/fs/cgroup "
	    "and no containers.conf of podman's sets default_ulimits: sandbox "
	    "runs fail with runc's 'error setting rlimit type 7'", layout);
}

/*
 * What `exec --sandbox` needs of the runtime it would use (NAME at PATH):
 * the cgroup layout and its ulimits, rootless networking (not as root),
 * the bridge's address, the default image.
 */
static void
doctor_sandbox(const char *name)
{
	char path[PATH_MAX], tool[PATH_MAX], gw[64], why[256], image[256];
	char fix[512];

	if (spawn_which(name, path, sizeof(path)) != 0)
		return;
	doctor_cgroups(name);
	if (strcmp(name, "podman") == 0 && getuid() != 0) {
		if (spawn_which("pasta", tool, sizeof(tool)) == 0 ||
		    spawn_which("slirp4netns", tool, sizeof(tool)) == 0)
			doctor_line("rootless-net", DOCTOR_OK, NULL, "%s", tool);
		else
			doctor_line("rootless-net", DOCTOR_MISSING, "install "
			    "one (apt-get install passt, or slirp4netns)",
			    "rootless podman needs pasta or slirp4netns; "
			    "neither is in PATH");
	}
	if (oci_doctor_bridge(path, name, gw, sizeof(gw), why,
	    sizeof(why)) == 0)
		doctor_line("bridge", DOCTOR_OK, NULL, "%s (%s's default "
		    "network)", gw, name);
	else {
		doctor_fmt(fix, sizeof(fix), "look at `%s network inspect %s`: "
		    "the default network needs an IPv4 subnet and gateway",
		    name, strcmp(name, "podman") == 0 ? "podman" : "bridge");
		doctor_line("bridge", DOCTOR_FAIL, fix, "%s", why);
	}
	oci_default_image(image, sizeof(image));
	if (oci_doctor_image(path, image))
		doctor_line("image", DOCTOR_OK, NULL, "%s, in %s's storage",
		    image, name);
	else
		doctor_line("image", DOCTOR_WARN, "the first `intutic exec "
		    "--sandbox` builds it (set INTUTIC_SANDBOX_BASE to a local "
		    "base when there is no registry access)", "%s not in %s's "
		    "storage", image, name);
}

/* ------------------------------------------------------------- nftables */

/*
 * Whether this process has CAP_NET_ADMIN (effective), which nftables
 * wants even to be read: /proc/self/status's CapEff.  0 when it cannot be
 * told.
 */
static int
doctor_net_admin(void)
{
	char line[256];
	unsigned long long caps;
	char *end;
	FILE *fp;
	int i, r = 0;

	if ((fp = fopen("/proc/self/status", "re")) == NULL)
		return 0;
	for (i = 0; i < DOCTOR_STATUS_LINES_MAX &&
	    fgets(line, sizeof(line), fp) != NULL; i++) {
		if (strncmp(line, "CapEff:", 7) != 0)
			continue;
		errno = 0;
		caps = strtoull(line + 7, &end, 16);
		r = errno == 0 && end != line + 7 &&
		    (caps & (1ULL << DOCTOR_CAP_NET_ADMIN)) != 0;
		break;
	}
	fclose(fp);
	return r;
}

/* ------------------------------------------------------------- checks */

/* The proxy: where it is and whether /healthz answers.  1 when it does. */
static int
doctor_proxy(const struct proxy_loc *loc)
{
	char err[FETCH_ERROR_MAX];
	char where[STATE_BINDS_MAX * (STATE_ADDR_MAX + 16)], up[64];

	if (proxy_healthy(loc, err, sizeof(err)) != 0) {
		doctor_line("proxy", DOCTOR_MISSING, "start it with `intutic "
		    "start`", "not running at %s (%s): %s", loc->url,
		    loc->source, err);
		return 0;
	}
	if (loc->have_state)
		doctor_line("proxy", DOCTOR_OK, NULL, "running at %s (pid %ld, "
		    "listening on %s), rules %s, up %s", loc->url,
		    (long)loc->st.pid, state_listen_text(&loc->st, where,
		    sizeof(where)), loc->st.rules, cmd_duration_text(
		    (long long)time(NULL) - loc->st.started, up, sizeof(up)));
	else
		doctor_line("proxy", DOCTOR_OK, NULL, "running at %s (%s)",
		    loc->url, loc->source);
	return 1;
}

/* The rule file: the running proxy's, else the one `start` would use. */
static int
doctor_rules(const struct proxy_loc *loc)
{
	struct rules *r;
	struct rules_error rerr;
	char path[PATH_MAX], msg[RULES_PATH_MAX + RULES_ERROR_MAX + 64];
	char fix[PATH_MAX + 64];

	if (loc->have_state)
		snprintf(path, sizeof(path), "%s", loc->st.rules);
	else
		config_rules_path(NULL, path, sizeof(path));
	if (rules_load(path, &r, &rerr) != 0) {
		doctor_fmt(fix, sizeof(fix), "correct it (intutic rules check "
		    "%s)", path);
		doctor_line("rules", DOCTOR_FAIL, fix, "%s",
		    rules_error_str(&rerr, msg, sizeof(msg)));
		return 0;
	}
	doctor_line("rules", DOCTOR_OK, NULL, "%s: %zu entries, mode %s%s",
	    path, rules_count(r), rules_mode(r) == RULES_MODE_REPORT ?
	    "report" : "enforce", loc->have_state ? " (the running proxy's)" :
	    "");
	rules_free(r);
	return 1;
}

/*
 * The enforcement level: 0 with *level and where it came from in source,
 * -1 when it cannot be read.  A line for logins when they are denied.
 */
static int
doctor_level(enum settings_level *level, char *source, size_t sourcelen)
{
	struct settings s;
	char err[SETTINGS_TEXT_MAX], detail[2 * SETTINGS_TEXT_MAX];

	if (settings_resolve(&s, err, sizeof(err)) != 0) {
		*level = SETTINGS_REQUIRE;
		doctor_line("level", DOCTOR_FAIL, "correct the setting; until "
		    "then `intutic exec` refuses to run", "%s", err);
		return -1;
	}
	*level = s.level;
	doctor_fmt(detail, sizeof(detail), "%s, from %s",
	    settings_level_str(s.level), s.source);
	doctor_emit("level", s.note[0] != '\0' ? DOCTOR_WARN : DOCTOR_OK, NULL,
	    detail, s.note[0] != '\0' ? s.note : NULL);
	if (s.logins_deny)
		doctor_line("logins", DOCTOR_OK, NULL, "denied, from %s: "
		    "`intutic exec --sandbox-login` is refused",
		    s.logins_source);
	if (source != NULL)
		snprintf(source, sourcelen, "%s", s.source);
	return 0;
}

static int
doctor_kvm(void)
{
	int fd, e;

	if ((fd = open("/dev/kvm", O_RDWR | O_CLOEXEC)) != -1) {
		close(fd);
		doctor_line("/dev/kvm", DOCTOR_OK, NULL, "usable");
		return 1;
	}
	e = errno;
	doctor_line("/dev/kvm", DOCTOR_MISSING, e == ENOENT ? "a machine with "
	    "KVM (virtualisation on in the firmware, the kvm module loaded)" :
	    e == EACCES ? "add this user to the kvm group" : "see dmesg for "
	    "the kvm module", "cannot open /dev/kvm: %s", strerror(e));
	return 0;
}

static int
doctor_firecracker(void)
{
	char path[PATH_MAX];

	if (spawn_which("firecracker", path, sizeof(path)) != 0) {
		doctor_line("firecracker", DOCTOR_MISSING, "install the "
		    "firecracker binary in PATH", "not found in PATH");
		return 0;
	}
	doctor_line("firecracker", DOCTOR_OK, NULL, "%s", path);
	return 1;
}

static int
doctor_qemu(void)
{
	char path[PATH_MAX];

	if (spawn_which("qemu-system-x86_64", path, sizeof(path)) != 0) {
		doctor_line("qemu", DOCTOR_MISSING, "apt-get install "
		    "qemu-system-x86", "qemu-system-x86_64 not found in PATH");
		return 0;
	}
	doctor_line("qemu", DOCTOR_OK, NULL, "%s", path);
	return 1;
}

/* What microVM runs whose launcher is gone left behind. */
static void
doctor_vm_leftovers(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int n;

	if ((f = open_memstream(&text, &len)) == NULL)
		return;
	n = vm_leftovers(f, 0);
	fclose(f);
	if (n == 0)
		doctor_line("microvm", DOCTOR_OK, NULL, "nothing left by earlier "
		    "runs");
	else
		doctor_line("microvm", DOCTOR_WARN, "the next `intutic exec "
		    "--sandbox=qemu|firecracker` removes them", "%d run%s left "
		    "by a launcher that is gone (VM, tap, table): %s", n,
		    n > 1 ? "s" : "", text != NULL ? text : "");
	free(text);
}

/*
 * `intutic enforce` as the record it left says, for a user who cannot ask
 * nftables.  Fills rec; 1 when it is on, 0 when not, -1 when the record
 * cannot be trusted (said).
 */
static int
doctor_enforce_record(struct enforce_record *rec)
{
	char err[STATE_ERROR_MAX], when[64];
	struct tm tm;
	time_t t;

	switch (enforce_record_read(rec, err, sizeof(err))) {
	case ENFORCE_RECORD_OK:
		t = (time_t)rec->since;
		if (localtime_r(&t, &tm) == NULL ||
		    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm) == 0)
			snprintf(when, sizeof(when), "%lld", rec->since);
		doctor_line("enforce", DOCTOR_OK, NULL, "active, as `intutic "
		    "enforce on` recorded at %s in %s (nftables not asked: "
		    "that needs root)", when, rec->path);
		return 1;
	case ENFORCE_RECORD_MISSING:
		doctor_line("enforce", DOCTOR_MISSING, "`intutic enforce on`",
		    "not active (no record of `intutic enforce on` in %s)",
		    ENFORCE_RECORD_DIR);
		return 0;
	default:
		doctor_line("enforce", DOCTOR_WARN, "run intutic doctor as "
		    "root", "cannot tell whether `intutic enforce` is active: "
		    "%s", err);
		return -1;
	}
}

/*
 * nftables, and `intutic enforce`'s table in it (hostfw.c asks; without
 * CAP_NET_ADMIN, enforce's record says).  1: enforce is on; 0: off; -1:
 * cannot tell.
 */
static int
doctor_nft(struct enforce_record *rec)
{
	char why[256];
	int r, e;

	errno = 0;
	r = hostfw_active(why, sizeof(why));
	e = errno;
	if (r == -1 && (e == EPERM || e == EACCES || !doctor_net_admin())) {
		doctor_line("nftables", DOCTOR_WARN, "run intutic doctor as "
		    "root", "cannot tell: asking nftables needs root "
		    "(CAP_NET_ADMIN)");
		return doctor_enforce_record(rec);
	}
	if (r == -1) {
		doctor_line("nftables", DOCTOR_MISSING, "a kernel with "
		    "nf_tables (modprobe nf_tables)", "%s", why);
		doctor_line("enforce", DOCTOR_MISSING, "nftables first, then "
		    "`intutic enforce on`", "not active (nftables is not "
		    "usable)");
		return 0;
	}
	doctor_line("nftables", DOCTOR_OK, NULL, "usable");
	if (r == 1)
		doctor_line("enforce", DOCTOR_OK, NULL, "active (table %s %s)",
		    HOSTFW_FAMILY_NAME, HOSTFW_TABLE);
	else
		doctor_line("enforce", DOCTOR_MISSING, "`intutic enforce on`",
		    "not active (no table %s %s)", HOSTFW_FAMILY_NAME,
		    HOSTFW_TABLE);
	if (r == 1 && enforce_record_read(rec, why, sizeof(why)) !=
	    ENFORCE_RECORD_OK)
		memset(rec, 0, sizeof(*rec));
	return r;
}

/*
 * The flows connection tracking holds that `enforce on` cuts (or, with it
 * on, would cut if run again): judged by what enforce installed (its
 * record), else by what it would install for the running proxy.
 */
static void
doctor_conntrack(const char *dir, int enforce, struct enforce_record *rec)
{
	struct conntrack_result res;
	struct hostfw_config *cfg = &rec->cfg;
	char err[STATE_ERROR_MAX], list[DOCTOR_TEXT_MAX], t[128];
	const char *fix;
	size_t i;

	if (!doctor_net_admin()) {
		doctor_line("conntrack", DOCTOR_WARN, "run intutic doctor as "
		    "root", "cannot tell which tracked flows `intutic enforce "
		    "on` would cut: reading connection tracking needs root "
		    "(CAP_NET_ADMIN)");
		return;
	}
	if (enforce != 1 || cfg->uid == 0) {
		memset(cfg, 0, sizeof(*cfg));
		if (enforce_proxy_config(dir, cfg, 1, NULL, NULL, err,
		    sizeof(err)) != 1 ||
		    cfg->uid == 0) {
			doctor_line("conntrack", DOCTOR_WARN, "start the proxy "
			    "as a user of its own", "cannot judge tracked "
			    "flows: `intutic enforce` is not on and no proxy "
			    "of a user other than root runs in %s", dir);
			return;
		}
	}
	if (conntrack_cut(cfg, 1, &res, err, sizeof(err)) != 0) {
		if (errno == EPROTONOSUPPORT || errno == ENOENT)
			doctor_line("conntrack", DOCTOR_OK, NULL, "no connection "
			    "tracking in this kernel: no flow outlives "
			    "`intutic enforce on`");
		else
			doctor_line("conntrack", DOCTOR_WARN, NULL, "%s", err);
		return;
	}
	if (res.cut == 0) {
		doctor_line("conntrack", DOCTOR_OK, NULL, "%zu tracked flows, "
		    "none that `intutic enforce on` %s", res.seen,
		    enforce == 1 ? "does not let out" : "would cut");
		return;
	}
	list[0] = '\0';
	for (i = 0; i < res.nshown && i < 4; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list),
		    "%s%s", i > 0 ? ", " : "", conntrack_flow_text(
		    &res.shown[i], t, sizeof(t)));
	if (res.cut > i)
		snprintf(list + strlen(list), sizeof(list) - strlen(list),
		    " and %zu more", res.cut - i);
	fix = enforce == 1 ? "`intutic enforce on` again cuts them" :
	    "`intutic enforce on` cuts them";
	doctor_line("conntrack", DOCTOR_WARN, fix, "%zu of %zu tracked flows "
	    "%s (sent by users other than the proxy's, uid %lu, or with no "
	    "socket left): %s", res.cut, res.seen, enforce == 1 ? "carry "
	    "nothing the table lets out" : "would outlive `intutic enforce "
	    "on` were they not cut", (unsigned long)cfg->uid, list);
}

/* What the level needs and this host lacks, one of DOCTOR_NEEDS_MAX. */
#define DOCTOR_NEEDS_MAX	4

/*
 * doctor --json: {"ready": BOOL, "level": LEVEL | null, "level_source":
 * TEXT | null, "missing": [TEXT...], "checks": [{"check", "verdict",
 * "detail", "fix", "note"}...]}, intutic-doctor(1) DOCTOR AS JSON.
 */
static void
doctor_json_print(int ready, const char *level, const char *source,
    const char *const *need, size_t nneed)
{
	size_t i;

	fclose(doctor_out.checks);
	doctor_out.checks = NULL;
	printf("{\"ready\":%s,\"level\":", ready ? "true" : "false");
	jsonw_fstr(stdout, level);
	printf(",\"level_source\":");
	jsonw_fstr(stdout, source);
	printf(",\"missing\":[");
	for (i = 0; i < nneed; i++) {
		if (i > 0)
			putchar(',');
		jsonw_fstr(stdout, need[i]);
	}
	printf("],\"checks\":[");
	if (doctor_out.text != NULL)
		fwrite(doctor_out.text, 1, doctor_out.len, stdout);
	printf("]}\n");
	free(doctor_out.text);
	doctor_out.text = NULL;
}

static int
cmd_doctor_exec(int argc, char **argv)
{
	struct proxy_loc loc;
	struct enforce_record rec;
	enum settings_level level = SETTINGS_REQUIRE;
	const char *opt_dir = NULL, *opt_proxy = NULL;
	const char *need[DOCTOR_NEEDS_MAX];
	char dir[PATH_MAX], err[STATE_ERROR_MAX + 64];
	char needs[DOCTOR_TEXT_MAX], source[SETTINGS_TEXT_MAX];
	int i, r, proxy_ok = 0, rules_ok, level_ok, podman, docker, kvm, fc, qemu;
	int backend, ready, enforce, located, json = 0;
	size_t nneed = 0, k;

	for (i = 1; i < argc; i++) {
		if ((r = cmd_option(&cmd_doctor_entry, argc, argv, &i,
		    "state-dir", "DIR", &opt_dir)) == 1)
			continue;
		if (r == -1)
			return EXIT_USAGE;
		if ((r = cmd_option(&cmd_doctor_entry, argc, argv, &i,
		    "proxy", "URL", &opt_proxy)) == 1)
			continue;
		if (r == -1)
			return EXIT_USAGE;
		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
			continue;
		}
		return cmd_usage_error(&cmd_doctor_entry,
		    "doctor: unknown argument '%s'", argv[i]);
	}
	if (config_state_dir_find(opt_dir, dir, sizeof(dir)) != 0)
		return EXIT_USAGE;
	located = proxy_locate(opt_proxy, dir, &loc, err, sizeof(err)) == 0;
	if (!located && opt_proxy != NULL)
		return cmd_usage_error(&cmd_doctor_entry, "doctor: --proxy: %s",
		    err);
	if (json && (doctor_out.checks = open_memstream(&doctor_out.text,
	    &doctor_out.len)) == NULL)
		fatal("out of memory");
	if (!located) {
		/* Keep going: the other checks still say something. */
		doctor_line("proxy", DOCTOR_FAIL, "correct it, or stop and "
		    "start the proxy again", "%s", err);
		memset(&loc, 0, sizeof(loc));
	} else
		proxy_ok = doctor_proxy(&loc);
	fflush(stdout);
	rules_ok = doctor_rules(&loc);
	source[0] = '\0';
	level_ok = doctor_level(&level, source, sizeof(source)) == 0;
	fflush(stdout);
	podman = doctor_runtime("podman", "install podman (apt-get install "
	    "podman), or Docker", "start podman's service, or check its "
	    "configuration");
	docker = doctor_runtime("docker", "install Docker (apt-get install "
	    "docker.io), or podman", "start the Docker daemon (systemctl "
	    "start docker)");
	/* what `exec --sandbox` would use: docker first, as it does */
	if (docker || podman)
		doctor_sandbox(docker ? "docker" : "podman");
	kvm = doctor_kvm();
	fc = doctor_firecracker();
	qemu = doctor_qemu();
	doctor_vm_leftovers();
	memset(&rec, 0, sizeof(rec));
	enforce = doctor_nft(&rec);
	doctor_conntrack(dir, enforce, &rec);

	backend = podman || docker || (kvm && (fc || qemu));
	ready = proxy_ok && rules_ok && level_ok &&
	    (level != SETTINGS_REQUIRE || backend);
	if (!proxy_ok)
		need[nneed++] = "the proxy running";
	if (!rules_ok)
		need[nneed++] = "valid rules";
	if (!level_ok)
		need[nneed++] = "readable settings";
	if (level == SETTINGS_REQUIRE && !backend)
		need[nneed++] = "a sandbox backend (podman or docker running, "
		    "or /dev/kvm and firecracker or qemu)";
	if (json) {
		doctor_json_print(ready, level_ok ? settings_level_str(level) :
		    NULL, level_ok ? source : NULL, need, nneed);
		return ready ? 0 : EXIT_FAILURE;
	}
	needs[0] = '\0';
	for (k = 0; k < nneed; k++)
		snprintf(needs + strlen(needs), sizeof(needs) - strlen(needs),
		    "%s%s", k > 0 ? ", " : "", need[k]);
	if (ready)
		doctor_line("result", DOCTOR_OK, NULL, "this host has what "
		    "level %s needs", settings_level_str(level));
	else if (level_ok)
		doctor_line("result", DOCTOR_MISSING, NULL, "level %s needs %s",
		    settings_level_str(level), needs);
	else
		doctor_line("result", DOCTOR_MISSING, NULL, "the level is not "
		    "known; missing: %s", needs);
	return ready ? 0 : EXIT_FAILURE;
}
