/*
 * cmd-exec.c — intutic exec: run a command (an agent) under the proxy.
 *
 * The checks come first and any of them refuses the run before anything
 * is started: the proxy answers, and says what the operator's rules are
 * (GET /v1/rules); the project's .intutic.yaml and the --allow entries
 * only tighten them; the workspace's enforcement level and the profile
 * allow this kind of run; the proxy registered the run, with its policy
 * (policy.h: the project's entries and --allow, --deny ones), which it
 * applies to this run only.  Then a backend runs the
 * command: the host (exec() in place), an OCI container
 * (sandbox/oci.c) or a microVM under qemu or firecracker
 * (sandbox/microvm.c).  A backend that was asked for and is not there
 * refuses the run: never a host run instead.
 */
#include "config.h"

#include <sys/random.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backend.h"
#include "enforce-record.h"
#include "control.h"
#include "fetch.h"
#include "jsonw.h"
#include "hostfw.h"
#include "intutic.h"
#include "locate.h"
#include "log.h"
#include "login.h"
#include "policy.h"
#include "project.h"
#include "rules.h"
#include "settings.h"
#include "wire.h"
#include "yread.h"

#define EXEC_NOT_FOUND		127
#define EXEC_NOT_EXECUTABLE	126
#define EXEC_NO_PROXY		"localhost,127.0.0.1,::1"
/* What a path may hold to go into a command unquoted (GIT_SSH_COMMAND). */
#define EXEC_PATH_SAFE		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" \
	"0123456789/._+,:=@-"
/* Bytes of a registration besides its strings: keys, punctuation, pid. */
#define EXEC_REG_FRAME		256

static int	cmd_exec_exec(int, char **);

const struct cmd_entry cmd_exec_entry = {
	.name = "exec",
	.summary = "run a command (an agent) through the proxy, as a run",
	.help =
	    "usage: intutic exec [--sandbox[=oci|firecracker|qemu]] [-e|--env NAME]...\n"
	    "                    [--allow-env NAME]... [--profile dev|prod]\n"
	    "                    [--allow ENTRY]... [--deny ENTRY]...\n"
	    "                    [--proxy URL] [--state-dir DIR]\n"
	    "                    [--sandbox-runtime docker|podman] [--sandbox-image IMAGE]\n"
	    "                    [--sandbox-allow CIDR[:PORT]]...\n"
	    "                    [--sandbox-mount DIR[:ro]]... [--sandbox-login AGENT]...\n"
	    "                    [--sandbox-memory SIZE] [--sandbox-cpus N]\n"
	    "                    [--sandbox-pids N] [--sandbox-dry-run]\n"
	    "                    -- COMMAND [ARG...]\n"
	    "\n"
	    "Runs COMMAND with the intutic proxy as its way out.  Refuses\n"
	    "to run it (exit 125) when the proxy does not answer.  Checks the\n"
	    "project's .intutic.yaml and the --allow entries (they may only\n"
	    "tighten the operator's rules, which the proxy says it holds), the\n"
	    "workspace's enforcement level, and registers the run with the\n"
	    "proxy, with its policy: the project file's entries and those of\n"
	    "--allow and --deny, which the proxy applies to this run only.  Its\n"
	    "audit records then carry the run id.  On the host,\n"
	    "COMMAND replaces intutic (same pid) with HTTP_PROXY, HTTPS_PROXY,\n"
	    "ALL_PROXY (both cases), NO_PROXY, NODE_USE_ENV_PROXY, INTUTIC_RUN,\n"
	    "INTUTIC_PROXY_URL, GIT_SSH_COMMAND (git over ssh through intutic\n"
	    "connect) and the provider gateway's base-URL variables set, and\n"
	    "nothing else of this environment but a base set, the provider\n"
	    "keys the rules name, and -e NAMEs.\n"
	    "\n"
	    "--sandbox[=oci|firecracker|qemu]  Run in a container (oci, the\n"
	    "                    default) or a microVM (firecracker, or qemu's\n"
	    "                    microvm machine) whose only way out is the proxy.\n"
	    "                    A microVM needs root, /dev/kvm (qemu: or\n"
	    "                    INTUTIC_QEMU_ACCEL=tcg), INTUTIC_VM_KERNEL,\n"
	    "                    INTUTIC_VM_ROOTFS (or INTUTIC_FC_*) and\n"
	    "                    INTUTIC_FC_GUEST_KEY (scripts/mkguest builds them),\n"
	    "                    and the proxy on INTUTIC_PROXY_BIND=0.0.0.0.\n"
	    "--sandbox-runtime docker|podman  Default: the first one installed and\n"
	    "                    answering.\n"
	    "--sandbox-image IMAGE  Default intutic/sandbox:VERSION, built from the\n"
	    "                    shipped Dockerfile on first use.\n"
	    "--sandbox-allow CIDR[:PORT]  Also let the container reach CIDR\n"
	    "                    directly (a port: TCP and UDP to it only).\n"
	    "--sandbox-mount DIR[:ro]  Mount DIR (read-only with :ro) at the same\n"
	    "                    path; the first one is the working directory.\n"
	    "                    With a writable one the agent runs as this\n"
	    "                    user (uid, gid): what it makes is this user's.\n"
	    "--sandbox-login AGENT  Copy AGENT's login files (claude, codex) from\n"
	    "                    HOME into the sandbox's home, and back when\n"
	    "                    the agent changed them (unless the workspace's\n"
	    "                    settings say logins: deny).\n"
	    "--sandbox-memory SIZE, --sandbox-cpus N, --sandbox-pids N  Limits\n"
	    "                    (default 4g, 2, 512; a microVM: 1g, 2).\n"
	    "--sandbox-dry-run   A microVM: print the hypervisor's configuration\n"
	    "                    and the host's two tables for it (who the guest\n"
	    "                    may send as, and where to); make nothing.\n"
	    "-e, --env NAME      Pass the variable NAME (by name; never a value).\n"
	    "--allow-env NAME    Pass NAME although it instructs a loader, shell\n"
	    "                    or interpreter (LD_*, BASH_ENV, NODE_OPTIONS...).\n"
	    "--profile dev|prod  dev (default, or INTUTIC_PROFILE): warn when a\n"
	    "                    control cannot be delivered; prod: refuse.\n"
	    "--allow ENTRY       An allow entry of the run's own (the rule\n"
	    "                    language): with one, the run reaches only what\n"
	    "                    its allow entries allow, within the operator's\n"
	    "                    rules, which it may not widen.\n"
	    "--deny ENTRY        A deny entry of the run's own.  Each of --allow\n"
	    "                    and --deny at most 64 times.\n"
	    "--proxy URL         The proxy, http://HOST:PORT (default:\n"
	    "                    INTUTIC_PROXY_URL, the state file, 127.0.0.1:8877).\n"
	    "--state-dir DIR     Where intutic start wrote its state file.\n"
	    "\n"
	    "Exit status: COMMAND's own (128+N when signal N ended it); 2 usage\n"
	    "or configuration error (a project file or --allow that would widen\n"
	    "the operator's rules, an ENTRY that is not one); 125 the command\n"
	    "could not be run (proxy down, its rules or control socket not\n"
	    "known, refused by the enforcement level, the profile or the proxy,\n"
	    "no such sandbox); 126 COMMAND is not executable; 127 COMMAND not\n"
	    "found.\n",
	.exec = cmd_exec_exec,
};

static int	host_run(const struct exec_run *);

static const struct exec_backend exec_backends[] = {
	{ "host", NULL, host_run },
	{ "oci", NULL, oci_run },
	{ "firecracker", vm_check, vm_run },
	{ "qemu", vm_check, vm_run },
};

/* ------------------------------------------------------- environment */

/* Kept from intutic's environment when set (and LC_*). */
static const char *const env_base[] = {
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM",
	"LANG", "LANGUAGE", "TZ", "TMPDIR", "XDG_CONFIG_HOME",
	"XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
	"XDG_RUNTIME_DIR", "SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE",
	"REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO",
};

/* Set by intutic: never taken from the environment or -e. */
static const char *const env_ours[] = {
	"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy",
	"ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy",
	"NODE_USE_ENV_PROXY", "INTUTIC_RUN", "INTUTIC_PROXY_URL",
};

/* Instructions to a loader, shell or interpreter: only by --allow-env. */
static const char *const env_refused[] = {
	"BASH_ENV", "ENV", "PROMPT_COMMAND", "PYTHONSTARTUP", "PERL5OPT",
	"PERL5LIB", "RUBYOPT", "NODE_OPTIONS", "GLIBC_TUNABLES", "GCONV_PATH",
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static int
in_list(const char *name, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(name, list[i]) == 0)
			return 1;
	return 0;
}

static int
env_is_refused(const char *name)
{
	return strncmp(name, "LD_", 3) == 0 ||
	    in_list(name, env_refused, NELEM(env_refused));
}

/* A name as environ has them: a letter or '_', then letters, digits, '_'. */
static int
env_name_valid(const char *s)
{
	size_t i;

	if (s[0] == '\0' || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (i = 0; s[i] != '\0'; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	return 1;
}

/* Checks one -e or --allow-env NAME; 0 or a usage error. */
static int
env_check_name(const char *opt, const char *name, int allowed)
{
	if (strchr(name, '=') != NULL)
		return cmd_usage_error(&cmd_exec_entry, "exec: %s takes a "
		    "variable's name, not a value: export it and pass its name",
		    opt);
	if (!env_name_valid(name))
		return cmd_usage_error(&cmd_exec_entry, "exec: %s: '%s' is not "
		    "a variable name", opt, name);
	if (in_list(name, env_ours, NELEM(env_ours)) ||
	    strncmp(name, "INTUTIC_", 8) == 0)
		return cmd_usage_error(&cmd_exec_entry, "exec: %s %s: intutic "
		    "sets %s itself", opt, name, name);
	if (env_is_refused(name) && !allowed)
		return cmd_usage_error(&cmd_exec_entry, "exec: %s %s: %s "
		    "instructs a loader, shell or interpreter and is not passed; "
		    "--allow-env %s passes it", opt, name, name, name);
	return 0;
}

/* Adds NAME=VALUE (copied); -1 when memory runs out. */
int
envv_set(struct envv *e, const char *name, const char *value)
{
	size_t i, nlen = strlen(name), len = nlen + 1 + strlen(value) + 1;
	char *s, **v;

	for (i = 0; i < e->n; i++)
		if (strncmp(e->v[i], name, nlen) == 0 && e->v[i][nlen] == '=')
			return 0;	/* the first one set wins */
	if (e->n + 2 > e->cap) {
		size_t cap = e->cap == 0 ? 64 : 2 * e->cap;

		if ((v = reallocarray(e->v, cap, sizeof(*v))) == NULL)
			return -1;
		e->v = v;
		e->cap = cap;
	}
	if ((s = malloc(len)) == NULL)
		return -1;
	snprintf(s, len, "%s=%s", name, value);
	e->v[e->n++] = s;
	e->v[e->n] = NULL;
	return 0;
}

/* Passes NAME on when it is set. */
static int
envv_pass(struct envv *e, const char *name)
{
	const char *v = getenv(name);

	return v != NULL ? envv_set(e, name, v) : 0;
}

void
envv_free(struct envv *e)
{
	size_t i;

	for (i = 0; i < e->n; i++) {
		explicit_bzero(e->v[i], strlen(e->v[i]));
		free(e->v[i]);
	}
	free(e->v);
}

/*
 * The provider gateway's base URLs: for each provider the rules' `gateway:`
 * switches on, its base-URL variables point at the proxy's
 * /r/RUN:TOKEN/providers/NAME (and the variable's own path), so the agent's
 * calls are audited per call.  They are set before the provider variables
 * are passed, so they win over the user's own, which is said once.
 */
static int
exec_gateway_env(const struct exec_run *run, struct envv *e, const char *host,
    unsigned int port)
{
	const struct rules_provider *pv;
	const struct rules_base_url *b;
	char url[LOCATE_URL_MAX + sizeof(run->id) + sizeof(run->token) + 256];
	const char *v;
	size_t i, j;

	for (i = 0; i < rules_provider_count(run->rules); i++) {
		pv = rules_provider_get(run->rules, i);
		if (pv->gateway == RULES_GATEWAY_OFF || pv->api == NULL)
			continue;
		/* A brokered key: the run's sentinel, never the real one. */
		if (pv->gateway == RULES_GATEWAY_BROKER && pv->broker != NULL) {
			for (j = 0; j < run->nsentinels; j++)
				if (strcmp(run->sentinels[j].provider,
				    pv->name) == 0)
					break;
			if (j == run->nsentinels)
				error("the proxy gave no key for %s, whose key "
				    "the rules broker: %s is not set", pv->name,
				    pv->broker->env);
			else if (envv_set(e, pv->broker->env,
			    run->sentinels[j].key) != 0)
				return -1;
		}
		for (j = 0; j < pv->base_url_count; j++) {
			b = &pv->base_url[j];
			snprintf(url, sizeof(url), "http://%s:%u/r/%s:%s/providers/"
			    "%s%s", host, port, run->id, run->token, pv->name,
			    b->path);
			v = getenv(b->var);
			if (v != NULL && *v != '\0' && strcmp(v, url) != 0)
				error("%s is set; the command gets the provider "
				    "gateway's instead (the rules' `gateway: "
				    "{%s: ...}`)", b->var, pv->name);
			if (envv_set(e, b->var, url) != 0) {
				explicit_bzero(url, sizeof(url));
				return -1;
			}
		}
	}
	explicit_bzero(url, sizeof(url));
	return 0;
}

/* NO_PROXY: loopback, and the proxy's host itself when it is not that. */
static int
exec_no_proxy(struct envv *e, const char *host)
{
	char list[sizeof(EXEC_NO_PROXY) + LOCATE_URL_MAX + 2];

	if (strcmp(host, "127.0.0.1") == 0 || strcmp(host, "localhost") == 0 ||
	    strcmp(host, "::1") == 0 || strcmp(host, "[::1]") == 0)
		snprintf(list, sizeof(list), "%s", EXEC_NO_PROXY);
	else
		snprintf(list, sizeof(list), "%s,%s", EXEC_NO_PROXY, host);
	return envv_set(e, "NO_PROXY", list) != 0 ||
	    envv_set(e, "no_proxy", list) != 0 ? -1 : 0;
}

/* See sandbox/backend.h. */
int
exec_env(const struct exec_run *run, struct envv *e, const char *host,
    unsigned int port, int host_base)
{
	extern char **environ;
	const struct exec_opts *o = run->o;
	char url[LOCATE_URL_MAX + sizeof(run->id) + sizeof(run->token) + 8];
	char cwd[PATH_MAX], name[256], plain[LOCATE_URL_MAX];
	size_t i, j;
	int r = -1;

	/* Proxy variables that pointed elsewhere: replaced, said so. */
	for (i = 0; i < NELEM(env_ours); i++) {
		const char *v = getenv(env_ours[i]);

		if (v != NULL && *v != '\0' && strstr(env_ours[i], "PROXY") !=
		    NULL && strcasecmp(env_ours[i], "no_proxy") != 0 &&
		    strstr(v, run->loc->url + 7) == NULL)
			error("%s pointed to another "
			    "proxy; the command gets intutic's instead",
			    env_ours[i]);
	}
	snprintf(url, sizeof(url), "http://%s:%s@%s:%u", run->id, run->token,
	    host, port);
	snprintf(plain, sizeof(plain), "http://%s:%u", host, port);
	for (i = 0; i < 6; i++)
		if (envv_set(e, env_ours[i], url) != 0)
			goto out;
	if (exec_no_proxy(e, host) != 0 ||
	    exec_gateway_env(run, e, host, port) != 0 ||
	    envv_set(e, "NODE_USE_ENV_PROXY", "1") != 0 ||
	    envv_set(e, "INTUTIC_RUN", run->id) != 0 ||
	    envv_set(e, "INTUTIC_PROXY_URL", plain) != 0)
		goto out;
	for (i = 0; host_base && i < NELEM(env_base); i++)
		if (envv_pass(e, env_base[i]) != 0)
			goto out;
	if (host_base && getcwd(cwd, sizeof(cwd)) != NULL &&
	    envv_set(e, "PWD", cwd) != 0)
		goto out;
	for (i = 0; host_base && environ[i] != NULL; i++) {
		const char *eq = strchr(environ[i], '=');

		if (strncmp(environ[i], "LC_", 3) != 0 || eq == NULL ||
		    (size_t)(eq - environ[i]) >= sizeof(name))
			continue;
		memcpy(name, environ[i], (size_t)(eq - environ[i]));
		name[eq - environ[i]] = '\0';
		if (env_name_valid(name) && envv_set(e, name, eq + 1) != 0)
			goto out;
	}
	for (i = 0; i < rules_provider_count(run->rules); i++) {
		const struct rules_provider *pv =
		    rules_provider_get(run->rules, i);

		/* A brokered provider's variables carry no real key in. */
		if (pv->gateway == RULES_GATEWAY_BROKER)
			continue;
		for (j = 0; j < pv->env_count; j++)
			if (!env_is_refused(pv->env[j]) &&
			    !in_list(pv->env[j], env_ours, NELEM(env_ours)) &&
			    envv_pass(e, pv->env[j]) != 0)
				goto out;
	}
	for (i = 0; i < o->nenv; i++) {
		if (getenv(o->env[i]) == NULL)
			error("-e %s: not set, not "
			    "passed", o->env[i]);
		else if (envv_pass(e, o->env[i]) != 0)
			goto out;
	}
	for (i = 0; i < o->nallow; i++)
		if (envv_pass(e, o->allow[i]) != 0)
			goto out;
	r = 0;
 out:
	explicit_bzero(url, sizeof(url));
	return r;
}

/* A provider variable of `rules` (any provider's `env:`)? */
static int
exec_rules_forward(const struct rules *rules, const char *name)
{
	const struct rules_provider *pv;
	size_t i;

	for (i = 0; i < rules_provider_count(rules); i++) {
		pv = rules_provider_get(rules, i);
		if (in_list(name, pv->env, pv->env_count))
			return 1;
	}
	return 0;
}

/*
 * The variables the shipped providers.yaml forwards (what a run gets by
 * default) that are set here but that the proxy's rules, a rule file of
 * the operator's own, do not forward, and no -e or --allow-env passes:
 * said once, by name, so that a user knows why a key is not there.  A
 * providers.yaml that is not installed (or does not load) says nothing.
 */
static void
exec_forward_notice(const struct exec_run *run)
{
	const struct exec_opts *o = run->o;
	const struct rules_provider *pv;
	struct rules *shipped = NULL;
	struct rules_error rerr;
	char path[PATH_MAX], *list = NULL;
	size_t i, j, len = 0, n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/rules/providers.yaml",
	    INTUTIC_DATADIR);
	if (access(path, R_OK) != 0)
		snprintf(path, sizeof(path), "%s/rules/providers.yaml",
		    INTUTIC_SRCDIR);
	if (rules_load(path, &shipped, &rerr) != 0)
		return;
	if ((f = open_memstream(&list, &len)) == NULL)
		goto out;
	for (i = 0; i < rules_provider_count(shipped); i++) {
		pv = rules_provider_get(shipped, i);
		for (j = 0; j < pv->env_count; j++) {
			const char *name = pv->env[j], *v = getenv(name);

			if (v == NULL || *v == '\0' ||
			    exec_rules_forward(run->rules, name) ||
			    in_list(name, o->env, o->nenv) ||
			    in_list(name, o->allow, o->nallow))
				continue;
			fprintf(f, "%s%s", n++ == 0 ? "" : ", ", name);
		}
	}
	if (fclose(f) == 0 && n > 0)
		error("not passed to the agent (not in the forward list of %s): "
		    "%s; -e NAME passes one, or include providers.yaml in the "
		    "rules", rules_path(run->rules), list);
 out:
	free(list);
	rules_free(shipped);
}

/* ----------------------------------------------------------- backends */

/*
 * GIT_SSH_COMMAND for a host run: ssh with `intutic connect` (this very
 * program) as its ProxyCommand, so git over ssh is a tunnel of the run.
 * One passed with -e wins (envv_set() keeps the first).  A path that a
 * shell or ssh's % would read otherwise is not written into a command:
 * said, and none is set.
 */
static int
exec_git_ssh(struct envv *e)
{
	char self[PATH_MAX], cmd[PATH_MAX + 64];
	ssize_t n;

	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) <= 0) {
		warn_msg("GIT_SSH_COMMAND is not set: where intutic is cannot "
		    "be told (/proc/self/exe: %s)", strerror(errno));
		return 0;
	}
	self[n] = '\0';
	if (access(self, X_OK) != 0) {
		warn_msg("GIT_SSH_COMMAND is not set: this intutic, '%s', "
		    "cannot be run again: %s", self, strerror(errno));
		return 0;
	}
	if (strspn(self, EXEC_PATH_SAFE) != (size_t)n) {
		warn_msg("GIT_SSH_COMMAND is not set: the path of intutic, "
		    "'%s', is not one to put in a command as it is; pass your "
		    "own with -e GIT_SSH_COMMAND (ssh -o ProxyCommand='intutic "
		    "connect %%h %%p')", self);
		return 0;
	}
	snprintf(cmd, sizeof(cmd), "ssh -o 'ProxyCommand=%s connect %%h %%p'",
	    self);
	return envv_set(e, "GIT_SSH_COMMAND", cmd);
}

/* The host: exec() in place; returns only on failure. */
static int
host_run(const struct exec_run *run)
{
	struct envv e = { NULL, 0, 0 };
	const char *cmd = run->o->argv[0];
	int saved;

	if (exec_env(run, &e, run->loc->host, run->loc->port, 1) != 0 ||
	    exec_git_ssh(&e) != 0) {
		envv_free(&e);
		error("out of memory");
		return EXIT_CANNOT_RUN;
	}
	fflush(NULL);
	execvpe(cmd, run->o->argv, e.v);
	saved = errno;
	envv_free(&e);
	error("%s: %s", cmd, strerror(saved));
	return saved == ENOENT || saved == ENOTDIR ? EXEC_NOT_FOUND :
	    EXEC_NOT_EXECUTABLE;
}

/* --------------------------------------------------------------- run */

static int
hex_random(char *out, size_t nbytes)
{
	unsigned char b[32];
	size_t i;

	if (nbytes > sizeof(b) ||
	    getrandom(b, nbytes, 0) != (ssize_t)nbytes)
		return -1;
	for (i = 0; i < nbytes; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	explicit_bzero(b, sizeof(b));
	return 0;
}

/*
 * The proxy's control socket (DIR/control.sock, from its state file; for
 * --proxy or INTUTIC_PROXY_URL, that of the state file of a proxy on the
 * same port): its path, or NULL and why.
 */
static const char *
exec_socket(const struct exec_run *run, char *err, size_t errlen)
{
	if (run->loc->control[0] != '\0')
		return run->loc->control;
	snprintf(err, errlen, "its control socket is not known: no state file "
	    "of a proxy on port %u (give --state-dir, the directory the proxy "
	    "was started with)", run->loc->port);
	return NULL;
}

/* A request to the proxy's control socket: 0 with the status, or -1 and why. */
static int
exec_control(const struct exec_run *run, const char *method, const char *path,
    const char *body, long *status, char *err, size_t errlen)
{
	const char *sock;

	if ((sock = exec_socket(run, err, errlen)) == NULL)
		return -1;
	return control_request(sock, method, path, body, status, NULL, err,
	    errlen);
}

int
exec_bind_addr(const struct exec_run *run, const char *addr, char *err,
    size_t errlen)
{
	char path[sizeof(run->id) + 32], body[128];
	size_t used = 0;
	long status;

	snprintf(path, sizeof(path), WIRE_RUNS_PATH "/%s" WIRE_RUN_ADDR_PATH,
	    run->id);
	body[0] = '\0';
	if (jsonw_raw(body, sizeof(body), &used, "{\"" WIRE_RUN_ADDR "\":") !=
	    0 || jsonw_str(body, sizeof(body), &used, addr) != 0 ||
	    jsonw_raw(body, sizeof(body), &used, "}") != 0) {
		snprintf(err, errlen, "the address '%s' is too long", addr);
		return -1;
	}
	if (exec_control(run, "PUT", path, body, &status, err, errlen) != 0)
		return -1;
	return status == 200 ? 0 : status == 409 ? 1 : -1;
}

/* The run ends: the proxy forgets it (a failure is only said). */
static void
exec_unregister(const struct exec_run *run)
{
	char path[sizeof(run->id) + 16], err[512];
	long status;

	snprintf(path, sizeof(path), WIRE_RUNS_PATH "/%s", run->id);
	if (exec_control(run, "DELETE", path, NULL, &status, err,
	    sizeof(err)) != 0 || status != 200)
		warn_msg("the proxy did not end run %s: %s", run->id, err);
}

/*
 * POST /v1/runs: the proxy learns the run, with its policy (a rule
 * document's text; NULL: none); 0, or -1 and why (the proxy's refusal
 * with its status).
 */
/* The answer's "sentinels": {"NAME": "KEY", ...} into run. */
static int
exec_sentinels_map(struct yread *p, struct exec_run *run)
{
	const yaml_event_t *ev = &p->ev;
	struct exec_sentinel *s;
	size_t len;

	if (ev->type != YAML_MAPPING_START_EVENT)
		return yread_fail(p, &ev->start_mark, "'" WIRE_RUN_SENTINELS
		    "' is not an object");
	for (;;) {
		if (yread_next(p) != 0)
			return -1;
		if (ev->type == YAML_MAPPING_END_EVENT)
			return 0;
		if (ev->type != YAML_SCALAR_EVENT ||
		    run->nsentinels == EXEC_SENTINELS_MAX ||
		    (len = ev->data.scalar.length) == 0 ||
		    len >= sizeof(s->provider))
			return yread_fail(p, &ev->start_mark, "a bad provider "
			    "in '" WIRE_RUN_SENTINELS "'");
		s = &run->sentinels[run->nsentinels];
		memcpy(s->provider, ev->data.scalar.value, len);
		s->provider[len] = '\0';
		if (yread_next(p) != 0 ||
		    yread_string(p, s->provider, "a string") != 0)
			return -1;
		if ((len = ev->data.scalar.length) == 0 || len >= sizeof(s->key))
			return yread_fail(p, &ev->start_mark, "a bad key in '"
			    WIRE_RUN_SENTINELS "'");
		memcpy(s->key, ev->data.scalar.value, len);
		s->key[len] = '\0';
		run->nsentinels++;
	}
}

/* The registration's answer: {"run": ID, "sentinels": {...}}. */
static int
exec_answer_map(struct yread *p, void *arg)
{
	static const char *const keys[] = { WIRE_RUN_SENTINELS };
	char other[YREAD_QUOTE_BUF];
	int k;

	while ((k = yread_pair(p, keys, 1, other, sizeof(other))) >= 0) {
		if (k == 0) {
			if (exec_sentinels_map(p, arg) != 0)
				return -1;
		} else if (yread_skip(p) != 0)
			return -1;
	}
	return k == YREAD_END ? 0 : -1;
}

static int
exec_register(struct exec_run *run, const char *policy, char *err,
    size_t errlen)
{
	const char *slash = strrchr(run->o->argv[0], '/');
	const char *cmd = slash != NULL ? slash + 1 : run->o->argv[0];
	char pid[24], *body, *answer = NULL;
	const char *sock;
	struct yread p;
	size_t len, used = 0;
	long status;
	int r = -1;

	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	/* each string escaped at most JSONW_ESC_MAX times as long */
	len = EXEC_REG_FRAME + JSONW_ESC_MAX * (strlen(run->id) +
	    strlen(run->token) + strlen(cmd) + strlen(run->project) +
	    (policy != NULL ? strlen(policy) : 0));
	if ((body = malloc(len)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	body[0] = '\0';
	if (jsonw_raw(body, len, &used, "{\"" WIRE_RUN_ID "\":") != 0 ||
	    jsonw_str(body, len, &used, run->id) != 0 ||
	    jsonw_raw(body, len, &used, ",\"" WIRE_RUN_TOKEN "\":") != 0 ||
	    jsonw_str(body, len, &used, run->token) != 0 ||
	    jsonw_raw(body, len, &used, ",\"" WIRE_RUN_COMMAND "\":") != 0 ||
	    jsonw_str(body, len, &used, cmd) != 0 ||
	    jsonw_raw(body, len, &used, ",\"" WIRE_RUN_PROJECT "\":") != 0 ||
	    jsonw_str(body, len, &used, run->project[0] != '\0' ?
	    run->project : NULL) != 0 ||
	    jsonw_raw(body, len, &used, ",\"" WIRE_RUN_PID "\":") != 0 ||
	    jsonw_raw(body, len, &used, pid) != 0 ||
	    jsonw_raw(body, len, &used, ",\"" WIRE_RUN_POLICY "\":") != 0 ||
	    jsonw_str(body, len, &used, policy) != 0 ||
	    jsonw_raw(body, len, &used, "}") != 0)
		snprintf(err, errlen, "the run's registration does not fit "
		    "(cannot be)");
	else if ((sock = exec_socket(run, err, errlen)) != NULL &&
	    control_request(sock, "POST", WIRE_RUNS_PATH, body, &status,
	    &answer, err, errlen) == 0 && status == 201) {
		yread_init(&p, "the proxy's answer to the registration",
		    YREAD_TEXT, 1, answer, strlen(answer), err, errlen);
		if (yread_run(&p, exec_answer_map, run) == 0)
			r = 0;
	}
	explicit_bzero(body, len);
	free(body);
	if (answer != NULL) {
		explicit_bzero(answer, strlen(answer));
		free(answer);
	}
	return r;
}

/* A --sandbox-* option at argv[*i]: 1 taken, 0 not one, -1 usage error. */
static int
exec_parse_sandbox(int argc, char **argv, int *i, struct exec_opts *o)
{
	static const char *const lists[] = { "sandbox-allow", "sandbox-mount",
	    "sandbox-login" };
	static const char *const metas[] = { "CIDR", "DIR", "AGENT" };
	const char *v;
	size_t j;
	int k;

	if ((k = cmd_option(&cmd_exec_entry, argc, argv, i, "sandbox-runtime",
	    "RUNTIME", &v)) != 0) {
		if (k > 0 && strcmp(v, "docker") != 0 &&
		    strcmp(v, "podman") != 0) {
			cmd_usage_error(&cmd_exec_entry, "exec: "
			    "--sandbox-runtime: '%s' is not docker or podman", v);
			return -1;
		}
		o->runtime = v;
		return k;
	}
	if ((k = cmd_option(&cmd_exec_entry, argc, argv, i, "sandbox-image",
	    "IMAGE", &o->image)) != 0)
		return k;
	if ((k = cmd_option(&cmd_exec_entry, argc, argv, i, "sandbox-memory",
	    "SIZE", &o->memory)) != 0)
		return k;
	if ((k = cmd_option(&cmd_exec_entry, argc, argv, i, "sandbox-cpus",
	    "N", &o->cpus)) != 0)
		return k;
	if ((k = cmd_option(&cmd_exec_entry, argc, argv, i, "sandbox-pids",
	    "N", &o->pids)) != 0)
		return k;
	for (j = 0; j < 3; j++) {
		const char **list = j == 0 ? o->allow_cidr : j == 1 ?
		    o->mount : o->login;
		size_t *n = j == 0 ? &o->nallow_cidr : j == 1 ? &o->nmount :
		    &o->nlogin;

		if ((k = cmd_option(&cmd_exec_entry, argc, argv, i, lists[j],
		    metas[j], &v)) == 0)
			continue;
		if (k < 0)
			return -1;
		if (*n >= EXEC_LIST_MAX) {
			cmd_usage_error(&cmd_exec_entry, "exec: more than %d "
			    "--%s", EXEC_LIST_MAX, lists[j]);
			return -1;
		}
		list[(*n)++] = v;
		return 1;
	}
	return 0;
}

/* The values of the --sandbox-* options, checked; 0 or a usage error. */
static int
exec_check_sandbox(const struct exec_opts *o)
{
	struct hostfw_net net;
	const char *sizes = "0123456789", *s;
	char names[128];
	size_t i;

	if (o->sandbox == NULL && (o->runtime != NULL || o->image != NULL ||
	    o->memory != NULL || o->cpus != NULL || o->pids != NULL ||
	    o->nallow_cidr > 0 || o->nmount > 0 || o->nlogin > 0))
		return cmd_usage_error(&cmd_exec_entry, "exec: the --sandbox-* "
		    "options need --sandbox");
	if (o->dry_run && (o->sandbox == NULL || (strcmp(o->sandbox,
	    "firecracker") != 0 && strcmp(o->sandbox, "qemu") != 0)))
		return cmd_usage_error(&cmd_exec_entry, "exec: "
		    "--sandbox-dry-run needs --sandbox=firecracker or qemu");
	if (o->nlogin > 0 && strcmp(o->sandbox, "oci") != 0)
		return cmd_usage_error(&cmd_exec_entry, "exec: "
		    "--sandbox-login needs --sandbox=oci");
	for (i = 0; i < o->nlogin; i++)
		if (!login_agent_known(o->login[i], names, sizeof(names)))
			return cmd_usage_error(&cmd_exec_entry, "exec: "
			    "--sandbox-login: '%s' is not an agent intutic "
			    "knows (%s)", o->login[i], names);
	for (i = 0; i < o->nallow_cidr; i++)
		if (hostfw_net_parse(o->allow_cidr[i], 0, &net) != 0)
			return cmd_usage_error(&cmd_exec_entry, "exec: "
			    "--sandbox-allow: '%s' is not a CIDR[:PORT] (not "
			    "/0; an IPv6 one with a port in brackets)",
			    o->allow_cidr[i]);
	if (o->pids != NULL && (strspn(o->pids, sizes) != strlen(o->pids) ||
	    o->pids[0] == '\0' || o->pids[0] == '0'))
		return cmd_usage_error(&cmd_exec_entry, "exec: --sandbox-pids: "
		    "'%s' is not a positive number", o->pids);
	if ((s = o->cpus) != NULL && (s[0] == '\0' ||
	    strspn(s, "0123456789.") != strlen(s) || strtod(s, NULL) <= 0))
		return cmd_usage_error(&cmd_exec_entry, "exec: --sandbox-cpus: "
		    "'%s' is not a positive number", s);
	if ((s = o->memory) != NULL && (s[0] < '1' || s[0] > '9' ||
	    !(s[strspn(s, sizes)] == '\0' ||
	    (strchr("bkmgBKMG", s[strspn(s, sizes)]) != NULL &&
	    s[strspn(s, sizes) + 1] == '\0'))))
		return cmd_usage_error(&cmd_exec_entry, "exec: --sandbox-memory: "
		    "'%s' is not a size such as 512m or 4g", s);
	return 0;
}

/*
 * --allow ENTRY or --deny ENTRY at argv[*i]: 1 taken, 0 not one, -1 a
 * usage error.  An ENTRY must be an entry of the rule language; whether an
 * --allow one stays within the operator's rules is known once they are
 * read (exec_narrow()).
 */
static int
exec_parse_policy(int argc, char **argv, int *i, struct exec_opts *o)
{
	static const char *const names[2] = {
		[POLICY_ALLOW] = "allow",
		[POLICY_DENY] = "deny",
	};
	char why[POLICY_WHY_MAX];
	const char *v;
	int k, taken;

	for (k = 0; k < 2; k++) {
		if ((taken = cmd_option(&cmd_exec_entry, argc, argv, i,
		    names[k], "ENTRY", &v)) <= 0) {
			if (taken < 0)
				return -1;
			continue;
		}
		if (o->npolicy[k] >= EXEC_POLICY_MAX) {
			cmd_usage_error(&cmd_exec_entry, "exec: more than %d "
			    "--%s entries", EXEC_POLICY_MAX, names[k]);
			return -1;
		}
		if (policy_entry_check(NULL, NULL, k, v, why, sizeof(why)) !=
		    0) {
			error("--%s '%s': %s", names[k], v, why);
			return -1;
		}
		o->policy[k][o->npolicy[k]++] = v;
		return 1;
	}
	return 0;
}

static int
exec_parse(int argc, char **argv, struct exec_opts *o)
{
	const char *v, *prof = getenv("INTUTIC_PROFILE");
	int i, k;

	memset(o, 0, sizeof(*o));
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[0] != '-')
			break;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			cmd_help(&cmd_exec_entry, 0);
			return 1;
		}
		if (strcmp(a, "--sandbox") == 0) {
			o->sandbox = "oci";
			continue;
		}
		if (strncmp(a, "--sandbox=", 10) == 0) {
			o->sandbox = a + 10;
			if (strcmp(o->sandbox, "oci") != 0 &&
			    strcmp(o->sandbox, "firecracker") != 0 &&
			    strcmp(o->sandbox, "qemu") != 0)
				return cmd_usage_error(&cmd_exec_entry, "exec: "
				    "--sandbox: '%s' is not oci, firecracker or "
				    "qemu", o->sandbox);
			continue;
		}
		if (strcmp(a, "--sandbox-dry-run") == 0) {
			o->dry_run = 1;
			continue;
		}
		if (strcmp(a, "-e") == 0) {
			if (i + 1 >= argc)
				return cmd_usage_error(&cmd_exec_entry,
				    "exec: -e needs a NAME");
			v = argv[++i];
			k = 1;
		} else if ((k = cmd_option(&cmd_exec_entry, argc, argv, &i,
		    "env", "NAME", &v)) < 0)
			return EXIT_USAGE;
		if (k == 1) {
			if (o->nenv >= EXEC_ENV_MAX)
				return cmd_usage_error(&cmd_exec_entry, "exec: "
				    "more than %d -e names", EXEC_ENV_MAX);
			o->env[o->nenv++] = v;
			continue;
		}
		if ((k = cmd_option(&cmd_exec_entry, argc, argv, &i,
		    "allow-env", "NAME", &v)) < 0)
			return EXIT_USAGE;
		if (k == 1) {
			if (o->nallow >= EXEC_ENV_MAX)
				return cmd_usage_error(&cmd_exec_entry, "exec: "
				    "more than %d --allow-env names",
				    EXEC_ENV_MAX);
			o->allow[o->nallow++] = v;
			continue;
		}
		if ((k = exec_parse_sandbox(argc, argv, &i, o)) < 0)
			return EXIT_USAGE;
		if (k == 1)
			continue;
		if ((k = exec_parse_policy(argc, argv, &i, o)) < 0)
			return EXIT_USAGE;
		if (k == 1)
			continue;
		if ((k = cmd_option(&cmd_exec_entry, argc, argv, &i, "profile",
		    "PROFILE", &v)) < 0)
			return EXIT_USAGE;
		if (k == 1) {
			prof = v;
			continue;
		}
		if ((k = cmd_option(&cmd_exec_entry, argc, argv, &i, "proxy",
		    "URL", &o->proxy)) < 0)
			return EXIT_USAGE;
		if (k == 1)
			continue;
		if ((k = cmd_option(&cmd_exec_entry, argc, argv, &i,
		    "state-dir", "DIR", &o->state_dir)) < 0)
			return EXIT_USAGE;
		if (k == 1)
			continue;
		return cmd_usage_error(&cmd_exec_entry, "exec: unknown option "
		    "'%s'", a);
	}
	if (i >= argc || argv[i][0] == '\0')
		return cmd_usage_error(&cmd_exec_entry, "exec: no COMMAND to "
		    "run (intutic exec [OPTION...] -- COMMAND [ARG...])");
	o->argv = argv + i;
	if (prof == NULL || *prof == '\0' || strcmp(prof, "dev") == 0)
		o->profile = PROFILE_DEV;
	else if (strcmp(prof, "prod") == 0)
		o->profile = PROFILE_PROD;
	else
		return cmd_usage_error(&cmd_exec_entry, "exec: the profile "
		    "'%s' is not dev or prod", prof);
	if (exec_check_sandbox(o) != 0)
		return EXIT_USAGE;
	for (k = 0; (size_t)k < o->nallow; k++)
		if (env_check_name("--allow-env", o->allow[k], 1) != 0)
			return EXIT_USAGE;
	for (k = 0; (size_t)k < o->nenv; k++)
		if (env_check_name("-e", o->env[k], in_list(o->env[k],
		    o->allow, o->nallow)) != 0)
			return EXIT_USAGE;
	return 0;
}

/*
 * The operator's rules, as the running proxy holds them (GET /v1/rules on
 * its control socket), whatever its rule file holds now: the ceiling of
 * the run's policy, and the providers whose keys the command gets.  NULL
 * and why.
 */
static struct rules *
exec_rules(const struct exec_run *run, char *err, size_t errlen)
{
	struct rules *r;
	const char *sock;
	long status;

	if ((sock = exec_socket(run, err, errlen)) == NULL ||
	    policy_ceiling(sock, &r, &status, err, errlen) != 0)
		return NULL;
	return r;
}

/*
 * The run's policy, as the text its registration carries (*policy; NULL
 * for none, without a project file and --allow or --deny): its ports are
 * the project file's (else those of the operator's rules), its entries
 * the project file's, which must load and only tighten the operator's
 * rules, then those of --allow and --deny, an --allow one within the
 * operator's rules.  Sets run->project.  0, or the exit status of a
 * refusal (said).
 */
static int
exec_narrow(struct exec_run *run, char **policy)
{
	const struct exec_opts *o = run->o;
	struct rules *project = NULL;
	struct policy_doc *d = NULL;
	char err[2048];
	size_t i, len;
	int k, r;

	*policy = NULL;
	if ((r = project_find(run->project, sizeof(run->project), err,
	    sizeof(err))) < 0) {
		error("%s", err);
		return EXIT_USAGE;
	}
	if (r == 1 && project_check(run->project, run->rules, &project, err,
	    sizeof(err)) != 0) {
		error("%s: refused (a project file may "
		    "only tighten the operator's rules): %s", run->project,
		    err);
		return EXIT_USAGE;
	}
	if (project == NULL && o->npolicy[POLICY_ALLOW] == 0 &&
	    o->npolicy[POLICY_DENY] == 0)
		return 0;
	r = EXIT_USAGE;
	if ((d = policy_doc_new(project != NULL ? project : run->rules)) ==
	    NULL || (project != NULL && policy_doc_add_set(d, project) != 0))
		goto fail;
	for (k = 0; k < 2; k++)
		for (i = 0; i < o->npolicy[k]; i++) {
			if (policy_entry_check(run->rules, d, k,
			    o->policy[k][i], err, sizeof(err)) != 0) {
				error("--%s '%s': %s", k == POLICY_DENY ?
				    "deny" : "allow", o->policy[k][i], err);
				goto out;
			}
			if (policy_doc_add(d, k, o->policy[k][i]) < 0)
				goto fail;
		}
	if (policy_doc_text(d, policy, &len) == 0) {
		r = 0;
		goto out;
	}
 fail:
	if (errno == E2BIG || errno == EFBIG)
		error("the run's policy would be larger than the proxy takes "
		    "(%d entries of a kind, %d bytes): give fewer entries in %s "
		    "and --allow, --deny", POLICY_ENTRIES_MAX, POLICY_TEXT_MAX,
		    project != NULL ? run->project : "the project file");
	else {
		error("out of memory");
		r = EXIT_CANNOT_RUN;
	}
 out:
	policy_doc_free(d);
	rules_free(project);
	return r;
}

/* --sandbox-dry-run: the policy the registration would carry. */
static void
exec_print_policy(const char *policy)
{
	if (policy == NULL)
		printf("# the run's policy: none (the operator's rules as they "
		    "are); the registration would carry null\n");
	else
		printf("# the run's policy, which the registration would "
		    "carry:\n%s", policy);
}

/*
 * Whether `intutic enforce` is on: nftables says, or (for a user who cannot
 * ask it) the record enforce on left.  1, 0, or -1 when it cannot be told
 * (said on stderr).
 */
static int
exec_firewall(void)
{
	struct enforce_record rec;
	char why[STATE_ERROR_MAX];
	int fw;

	if ((fw = hostfw_active(why, sizeof(why))) != -1)
		return fw;
	switch (enforce_record_read(&rec, why, sizeof(why))) {
	case ENFORCE_RECORD_OK:
		return 1;
	case ENFORCE_RECORD_MISSING:
		return 0;
	default:
		error("%s", why);
		return -1;
	}
}

/*
 * The enforcement level and the profile: 0 to go on, else the exit status
 * of a refusal (said on stderr).
 */
static int
exec_enforcement(const struct exec_opts *o)
{
	struct settings s;
	char err[1024];
	int fw;

	if (settings_resolve(&s, err, sizeof(err)) != 0) {
		error("%s", err);
		return EXIT_USAGE;
	}
	if (s.note[0] != '\0')
		error("%s", s.note);
	if (o->nlogin > 0 && s.logins_deny) {
		error("--sandbox-login is forbidden by "
		    "this workspace's settings (sandbox.logins: deny, from %s): "
		    "run without it and log in inside the sandbox, or ask the "
		    "operator; nothing was run", s.logins_source);
		return EXIT_CANNOT_RUN;
	}
	if (o->sandbox == NULL && s.level == SETTINGS_REQUIRE) {
		error("this workspace requires a "
		    "sandbox (enforcement level require, from %s); run it "
		    "again as: intutic exec --sandbox -- %s ...", s.source,
		    o->argv[0]);
		return EXIT_CANNOT_RUN;
	}
	if (o->sandbox == NULL && s.level == SETTINGS_RECOMMEND)
		warn_msg("this workspace "
		    "recommends a sandbox (from %s): intutic exec --sandbox "
		    "keeps the command from going around the proxy",
		    s.source);
	if (o->sandbox != NULL)
		return 0;
	if ((fw = exec_firewall()) == 1)
		return 0;
	if (o->profile == PROFILE_PROD) {
		error("profile prod: on the host only "
		    "the proxy variables lead the command to the proxy, and the "
		    "host firewall of `intutic enforce` is %s; run `intutic "
		    "enforce on`, or use --sandbox", fw == 0 ? "not active" :
		    "not known to be active");
		return EXIT_CANNOT_RUN;
	}
	warn_msg("the host firewall (intutic "
	    "enforce) is %s: nothing but the proxy variables keeps the "
	    "command from going around the proxy", fw == 0 ? "not active" :
	    "not known to be active");
	return 0;
}

static int
cmd_exec_exec(int argc, char **argv)
{
	struct exec_opts o;
	struct proxy_loc loc;
	struct exec_run run;
	const struct exec_backend *b = &exec_backends[0];
	char err[2048], *policy = NULL;
	struct rules *rules = NULL;
	size_t i;
	int r;

	if ((r = exec_parse(argc, argv, &o)) != 0)
		return r == 1 ? 0 : r;
	if (o.sandbox != NULL)
		for (i = 0; i < NELEM(exec_backends); i++)
			if (strcmp(exec_backends[i].name, o.sandbox) == 0)
				b = &exec_backends[i];
	if (b->run == NULL) {
		error("the %s sandbox is not available "
		    "in this version of intutic; nothing was run", b->name);
		return EXIT_CANNOT_RUN;
	}
	if (proxy_locate(o.proxy, o.state_dir, &loc, err, sizeof(err)) != 0) {
		error("%s", err);
		return EXIT_USAGE;
	}
	if (proxy_healthy(&loc, err, sizeof(err)) != 0) {
		error("the intutic proxy is not running "
		    "at %s (%s); start it with `intutic start`", loc.url,
		    err);
		return EXIT_CANNOT_RUN;
	}

	memset(&run, 0, sizeof(run));
	run.o = &o;
	run.loc = &loc;
	if ((rules = exec_rules(&run, err, sizeof(err))) == NULL) {
		error("cannot read the operator's rules from the proxy at %s: "
		    "%s", loc.url, err);
		return EXIT_CANNOT_RUN;
	}
	run.rules = rules;
	exec_forward_notice(&run);
	if (b->check != NULL && (r = b->check(&run)) != 0)
		goto out;
	memcpy(run.id, "run-", 4);
	if (hex_random(run.id + 4, EXEC_RUN_BYTES) != 0 ||
	    hex_random(run.token, EXEC_TOKEN_BYTES) != 0) {
		error("no random bytes: %s",
		    strerror(errno));
		r = EXIT_CANNOT_RUN;
		goto out;
	}
	if ((r = exec_narrow(&run, &policy)) != 0)
		goto out;
	if (o.dry_run) {
		/* what would be made, and nothing registered or made */
		exec_print_policy(policy);
		r = b->run(&run);
		goto out;
	}
	if ((r = exec_enforcement(&o)) != 0)
		goto out;

	if (exec_register(&run, policy, err, sizeof(err)) != 0) {
		error("the proxy at %s did not take "
		    "the run: %s", loc.url, err);
		r = EXIT_CANNOT_RUN;
		goto out;
	}
	/* host mode becomes the command: the proxy ends the run after it */
	r = b->run(&run);
	exec_unregister(&run);
 out:
	explicit_bzero(run.token, sizeof(run.token));
	free(policy);
	rules_free(rules);
	return r;
}
