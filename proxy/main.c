/*
 * main.c — intutic-proxy: options, start-up, signals, reload, the state
 * file and the metrics page.
 *
 * Signals are taken by the main thread's event loop only (the workers block
 * them): SIGHUP reloads the rules, SIGUSR1 reopens the audit log, SIGTERM
 * and SIGINT stop accepting and let connections drain for the grace period.
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/thread.h>

#include "rules.h"
#include "proxy.h"
#include "proxy-opts.h"
#include "jsonw.h"
#include "wire.h"
#include "audit.h"
#include "conn.h"
#include "conn-core.h"
#include "gateway.h"
#include "given.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "resolve.h"
#include "runs.h"
#include "service.h"
#include "tls.h"
#include "upstream.h"
#include "paths.h"

static struct proxy	 proxy;
static char		 state_path[PATH_MAX];

struct rules *
proxy_rules_get(struct proxy *p)
{
	struct rules *r;

	pthread_mutex_lock(&p->rules_lock);
	r = rules_ref(p->rules);
	pthread_mutex_unlock(&p->rules_lock);
	return r;
}

uint64_t
proxy_recheck(struct proxy *p)
{
	uint64_t rev = __atomic_add_fetch(&p->recheck_rev, 1, __ATOMIC_ACQ_REL);
	int i;

	for (i = 0; i < p->nworkers; i++)
		worker_recheck(&p->workers[i]);
	return rev;
}

int
proxy_rechecked(struct proxy *p, uint64_t rev)
{
	int i;

	for (i = 0; i < p->nworkers; i++)
		if (__atomic_load_n(&p->workers[i].recheck_done,
		    __ATOMIC_ACQUIRE) < rev)
			return 0;
	return 1;
}

/*
 * The set as the control API serves it (GET /v1/rules), made once per set:
 * the members "rules" (its JSON text, as a string) and "where" (the file
 * and line of each of its entries, in the text's order).  NULL when out of
 * memory (the set is taken all the same; the API then says so).
 */
static char *
proxy_rules_text(const struct rules *r)
{
	struct evbuffer *b;
	char *text = NULL, *where = NULL, *out = NULL;
	size_t len, wlen, n;

	if (rules_dump(r, &text, &len) != 0 ||
	    rules_dump_where(r, &where, &wlen) != 0 ||
	    (b = evbuffer_new()) == NULL) {
		free(text);
		free(where);
		return NULL;
	}
	if (evbuffer_add_printf(b, "\"" WIRE_RULES_TEXT "\":") >= 0 &&
	    runs_json_str(b, text) == 0 &&
	    evbuffer_add_printf(b, ",\"" WIRE_RULES_WHERE "\":%s", where) >= 0 &&
	    (out = malloc((n = evbuffer_get_length(b)) + 1)) != NULL) {
		evbuffer_remove(b, out, n);
		out[n] = '\0';
	}
	evbuffer_free(b);
	free(text);
	free(where);
	return out;
}

/* ------------------------------------------------------------- metrics */

static void
metric(struct evbuffer *out, const char *name, const char *type,
    const char *help, uint64_t v)
{
	metrics_head(out, name, type, help);
	evbuffer_add_printf(out, "%s %llu\n", name, (unsigned long long)v);
}

/*
 * intutic_build_info: the version, and the libraries' as configure found
 * them (config.h), as labels of a gauge that is always 1 (the
 * conventional *_build_info).
 */
static void
metric_build_info(struct evbuffer *out)
{
	metrics_head(out, "intutic_build_info", "gauge", "The proxy's version "
	    "and the versions of the libraries it was built with; always 1.");
	evbuffer_add_printf(out, "intutic_build_info{version=");
	metrics_label(out, PACKAGE_VERSION);
	evbuffer_add_printf(out, ",libevent=");
	metrics_label(out, LIBEVENT_VERSION);
	evbuffer_add_printf(out, ",openssl=");
	metrics_label(out, OPENSSL_VERSION);
	evbuffer_add_printf(out, ",llhttp=");
	metrics_label(out, LLHTTP_VERSION);
	evbuffer_add_printf(out, "} 1\n");
}

void
proxy_metrics_render(struct proxy *p, struct evbuffer *out)
{
	struct rules *r = proxy_rules_get(p);
	int i;

	metric_build_info(out);
	metric(out, WIRE_METRIC_CONNS_TOTAL, "counter",
	    "Client connections accepted.", METRIC_GET(p, conns_total));
	metric(out, WIRE_METRIC_CONNS_ACTIVE, "gauge",
	    "Client connections open now.", METRIC_GET(p, conns_active));
	metric(out, WIRE_METRIC_TUNNELS_ACTIVE, "gauge",
	    "Tunnels relaying now (CONNECT and Upgrade).",
	    METRIC_GET(p, tunnels_active));
	metrics_head(out, WIRE_METRIC_DECISIONS, "counter",
	    "Decisions by verdict.");
	evbuffer_add_printf(out,
	    WIRE_METRIC_DECISIONS "{decision=\"allow\"} %llu\n"
	    WIRE_METRIC_DECISIONS "{decision=\"deny\"} %llu\n",
	    (unsigned long long)METRIC_GET(p, decisions[1]),
	    (unsigned long long)METRIC_GET(p, decisions[0]));
	metrics_head(out, "intutic_decision_reasons_total", "counter",
	    "Decisions by reason.");
	for (i = 0; i < CONN_REASON_COUNT; i++) {
		evbuffer_add_printf(out, "intutic_decision_reasons_total"
		    "{reason=");
		metrics_label(out, conn_reason_str((enum conn_reason)i));
		evbuffer_add_printf(out, "} %llu\n",
		    (unsigned long long)METRIC_GET(p, reasons[i]));
	}
	metrics_head(out, "intutic_bytes_total", "counter",
	    "Bytes relayed by closed connections.");
	evbuffer_add_printf(out,
	    "intutic_bytes_total{direction=\"up\"} %llu\n"
	    "intutic_bytes_total{direction=\"down\"} %llu\n",
	    (unsigned long long)METRIC_GET(p, bytes_up),
	    (unsigned long long)METRIC_GET(p, bytes_down));
	metric(out, "intutic_dns_lookups_total", "counter",
	    "Names looked up.", METRIC_GET(p, dns_lookups));
	metric(out, "intutic_dns_failures_total", "counter",
	    "Look-ups that failed.", METRIC_GET(p, dns_failures));
	metric(out, WIRE_METRIC_RELOADS, "counter",
	    "Rule reloads that took effect.", METRIC_GET(p, reloads));
	metric(out, WIRE_METRIC_RELOAD_ERRORS, "counter",
	    "Rule reloads refused (the old rules stayed).",
	    METRIC_GET(p, reload_errors));
	metric(out, "intutic_revocations_total", "counter",
	    "Open connections closed because the rules or their run's policy "
	    "changed, or their run ended.", METRIC_GET(p, revocations));
	metric(out, "intutic_timeouts_total", "counter",
	    "Connections ended by a timeout.", METRIC_GET(p, timeouts));
	metric(out, "intutic_bad_requests_total", "counter",
	    "Malformed requests refused.", METRIC_GET(p, bad_requests));
	metric(out, "intutic_accept_paused_total", "counter",
	    "Times accepting paused for lack of descriptors.",
	    METRIC_GET(p, accept_paused));
	metrics_head(out, "intutic_dns_queries_total", "counter",
	    "Queries the DNS filter decided, by verdict.");
	evbuffer_add_printf(out,
	    "intutic_dns_queries_total{decision=\"allow\"} %llu\n"
	    "intutic_dns_queries_total{decision=\"deny\"} %llu\n",
	    (unsigned long long)METRIC_GET(p, dns_queries[1]),
	    (unsigned long long)METRIC_GET(p, dns_queries[0]));
	metric(out, "intutic_dns_malformed_total", "counter",
	    "DNS messages the filter could not take (dropped, or FORMERR).",
	    METRIC_GET(p, dns_malformed));
	metric(out, "intutic_dns_upstream_failures_total", "counter",
	    "DNS queries answered SERVFAIL: the name server failed or was "
	    "silent.", METRIC_GET(p, dns_upstream_failures));
	metric(out, "intutic_dns_cache_hits_total", "counter",
	    "DNS queries answered from what a name server said before.",
	    METRIC_GET(p, dns_cache_hits));
	metric(out, "intutic_transparent_mismatches_total", "counter",
	    "Transparent connections whose original address was not among "
	    "their name's addresses (the proxy's own answer was dialled).",
	    METRIC_GET(p, transparent_mismatches));
	if (p->gateway != NULL)
		gateway_metrics(p->gateway, out);
	metric(out, "intutic_rules_entries", "gauge",
	    "Entries in the current rule set.", r != NULL ? rules_count(r) : 0);
	metric(out, "intutic_start_time_seconds", "gauge",
	    "When the proxy started, in seconds since the Unix epoch.",
	    (uint64_t)p->started);
	metric(out, WIRE_METRIC_UPTIME, "gauge",
	    "Seconds since the proxy started.",
	    (uint64_t)(time(NULL) - p->started));
	rules_free(r);
}

/* ---------------------------------------------------------- state file */

/* A path as an absolute one (for the state file), or as given. */
static const char *
absolute(const char *path, char *buf, size_t len)
{
	char cwd[PATH_MAX];
	int n;

	if (path[0] == '/' || getcwd(cwd, sizeof(cwd)) == NULL)
		return path;
	n = snprintf(buf, len, "%s/%s", cwd, path);
	return n > 0 && (size_t)n < len ? buf : path;
}

/* Written once listening: temp file + rename, so readers see all or none. */
static int
state_write(struct proxy *p)
{
	char tmp[PATH_MAX + 8], rules_abs[PATH_MAX], audit_abs[PATH_MAX];
	const char *dir = p->cfg.state_dir;
	FILE *fp;
	size_t i;
	int fd;

	if (paths_mkdirs(dir) != 0) {
		error("cannot create state directory '%s': %s", dir,
		    strerror(errno));
		return -1;
	}
	if (paths_state_file(dir, state_path, sizeof(state_path)) != 0 ||
	    snprintf(tmp, sizeof(tmp), "%s.tmp", state_path) >=
	    (int)sizeof(tmp)) {
		error("state directory path too long");
		return -1;
	}
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) ==
	    -1 || (fp = fdopen(fd, "w")) == NULL) {
		error("cannot write '%s': %s", tmp, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	fprintf(fp, "{\"" WIRE_STATE_PID "\": %ld, \"" WIRE_STATE_PORT "\": %u, "
	    "\"" WIRE_STATE_BIND "\": [", (long)getpid(), p->port);
	for (i = 0; i < p->nlistens; i++) {
		if (i > 0)
			fputs(", ", fp);
		jsonw_fstr(fp, p->listens[i].text);
	}
	fputs("], \"" WIRE_STATE_RULES "\": ", fp);
	jsonw_fstr(fp, absolute(p->cfg.rules_path, rules_abs,
	    sizeof(rules_abs)));
	fputs(", \"" WIRE_STATE_AUDIT "\": ", fp);
	if (p->cfg.audit_path != NULL)
		jsonw_fstr(fp, audit_is_file(p->cfg.audit_path) ?
		    absolute(p->cfg.audit_path, audit_abs, sizeof(audit_abs)) :
		    p->cfg.audit_path);
	else
		fputs("null", fp);
	fputs(", \"" WIRE_STATE_CONTROL "\": ", fp);
	jsonw_fstr(fp, p->control_path);
	fputs(", \"" WIRE_STATE_DNS "\": [", fp);
	for (i = 0; i < p->ndns; i++) {
		if (i > 0)
			fputs(", ", fp);
		jsonw_fstr(fp, p->dns[i].text);
	}
	fputs("], \"" WIRE_STATE_TRANSPARENT "\": [", fp);
	for (i = 0; i < p->ntransparent; i++) {
		if (i > 0)
			fputs(", ", fp);
		jsonw_fstr(fp, p->transparent[i].text);
	}
	fputs("], \"" WIRE_STATE_GATEWAY "\": [", fp);
	for (i = 0; i < p->ngateway; i++) {
		if (i > 0)
			fputs(", ", fp);
		jsonw_fstr(fp, p->gatewayl[i].text);
	}
	fputs("]", fp);
	fprintf(fp, ", \"" WIRE_STATE_STARTED "\": %lld, \"" WIRE_STATE_WORKERS
	    "\": %d, \"" WIRE_STATE_VERSION "\": ", (long long)p->started,
	    p->nworkers);
	jsonw_fstr(fp, PACKAGE_VERSION);
	fputs("}\n", fp);
	if (fflush(fp) != 0 || fsync(fileno(fp)) != 0 || fclose(fp) != 0 ||
	    rename(tmp, state_path) != 0) {
		error("cannot write '%s': %s", state_path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------- signals */

static void
reload(struct proxy *p)
{
	struct rules *r, *old;
	struct rules_error err;
	char msg[RULES_PATH_MAX + RULES_ERROR_MAX + 64], *text, *oldtext;

	if (rules_load(p->cfg.rules_path, &r, &err) != 0) {
		METRIC_ADD(p, reload_errors, 1);
		error("reload refused, the old rules stay: %s",
		    rules_error_str(&err, msg, sizeof(msg)));
		return;
	}
	/* The brokered keys the new rules name, or the old rules stay. */
	if (gateway_keys_load(p->gateway, r, p->cfg.gateway_keys, msg,
	    sizeof(msg)) != 0) {
		METRIC_ADD(p, reload_errors, 1);
		error("reload refused, the old rules stay: the provider "
		    "gateway: %s", msg);
		rules_free(r);
		return;
	}
	text = proxy_rules_text(r);
	pthread_mutex_lock(&p->rules_lock);
	old = p->rules;
	oldtext = p->rules_text;
	p->rules = r;
	p->rules_text = text;
	p->rules_gen++;
	pthread_mutex_unlock(&p->rules_lock);
	rules_free(old);	/* connections hold it until rechecked */
	free(oldtext);
	METRIC_ADD(p, reloads, 1);
	info("rules reloaded from '%s': %zu entries", p->cfg.rules_path,
	    rules_count(r));
	/* Open connections are decided again, unless told to keep theirs. */
	if (!p->cfg.no_revoke)
		proxy_recheck(p);
}

static void
workers_poke(struct proxy *p)
{
	int i;

	for (i = 0; i < p->nworkers; i++)
		if (p->workers[i].stop_ev != NULL)
			event_active(p->workers[i].stop_ev, EV_READ, 0);
}

static void
grace_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy *p = arg;

	(void)fd;
	(void)what;
	warn_msg("grace period over: closing the connections still open");
	__atomic_store_n(&p->stopping, 2, __ATOMIC_RELAXED);
	workers_poke(p);
}

static struct event *grace_ev;
static struct event *sweep_ev;

/*
 * The parent proxy (--upstream-proxy), once the listeners are up: never one
 * of this proxy's own addresses and ports (every request would come back).
 * 0, or the exit status.
 */
static int
upstream_start(struct proxy *p)
{
	char msg[1024], text[64];
	size_t i;

	if (p->cfg.upstream_text == NULL) {
		if (p->cfg.upstream_auth == NULL)
			return 0;
		error("not starting: --upstream-proxy-auth needs "
		    "--upstream-proxy URL, the parent proxy it logs in to");
		return 2;
	}
	if ((p->upstream = upstream_new(p->cfg.upstream_text,
	    p->cfg.upstream_auth, msg, sizeof(msg))) == NULL) {
		error("not starting: %s", msg);
		return 2;
	}
	for (i = 0; i < p->upstream->naddrs; i++) {
		const struct sockaddr *sa =
		    (const struct sockaddr *)&p->upstream->addrs[i];

		if (!proxy_is_own_addr(p, sa))
			continue;
		conn_sockaddr_text(sa, text, sizeof(text), 1);
		error("not starting: --upstream-proxy %s is this proxy itself "
		    "(%s): every request would come back; name the parent "
		    "proxy the operator's network provides", p->upstream->url,
		    text);
		return 2;
	}
	info("allowed destinations are reached through the upstream "
	    "proxy %s (%s)%s", p->upstream->url, p->upstream->addr_text,
	    p->upstream->auth != NULL ? ", with credentials" : "");
	return 0;
}

/* A run whose launcher is gone: its end in the audit log and the log. */
static void
sweep_gone(const char *id, long long pid, void *arg)
{
	struct proxy *p = arg;
	struct audit_record r;

	memset(&r, 0, sizeof(r));
	r.event = "run-end";
	r.run = id;
	r.client = "proxy:launcher-gone";
	r.port = -1;
	r.bytes_up = r.bytes_down = r.duration_ms = -1;
	r.status = -1;
	r.pid = -1;
	if (audit_write(p->audit, &r) != 0)
		error("cannot write the audit log");
	info("run %s ended: its launcher (pid %lld) is gone", id, pid);
}

/*
 * Every PROXY_SWEEP_MS: the runs whose launcher is gone end, and their
 * open connections are closed (unless --no-revoke).
 */
static void
sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy *p = arg;
	struct timeval tv = { PROXY_SWEEP_MS / 1000,
	    (PROXY_SWEEP_MS % 1000) * 1000 };

	(void)fd;
	(void)what;
	if (__atomic_load_n(&p->stopping, __ATOMIC_RELAXED) != 0)
		return;		/* draining: the workers end anyway */
	if (runs_sweep_gone(p->runs) > 0 && !p->cfg.no_revoke)
		proxy_recheck(p);
	evtimer_add(sweep_ev, &tv);
}

static void
signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct proxy *p = arg;
	char err[512];
	struct timeval tv;

	(void)what;
	switch (sig) {
	case SIGHUP:
		reload(p);
		break;
	case SIGUSR1:
		if (audit_reopen(p->audit, err, sizeof(err)) != 0)
			error("%s", err);
		break;
	case SIGTERM:
	case SIGINT:
		if (__atomic_load_n(&p->stopping, __ATOMIC_RELAXED) != 0)
			break;
		info("stopping: no new connections; draining for up to %d ms",
		    p->cfg.grace_ms);
		__atomic_store_n(&p->stopping, 1, __ATOMIC_RELAXED);
		workers_poke(p);
		(void)service_notify("STOPPING=1");
		tv.tv_sec = p->cfg.grace_ms / 1000;
		tv.tv_usec = (p->cfg.grace_ms % 1000) * 1000;
		evtimer_add(grace_ev, &tv);
		/* The main loop ends once every worker has ended. */
		event_base_loopexit(p->base, NULL);
		break;
	}
}

/* ------------------------------------------------------------- options */

/*
 * The default number of workers: the processors this process may run on
 * (taskset, a cpuset), not all that are online: two workers sharing one
 * processor only take turns, and each turn is a wake-up.  1 to
 * PROXY_WORKERS_MAX.
 */
static int
cpus_usable(void)
{
	cpu_set_t set;
	long n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = CPU_COUNT(&set);
	else
		n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	return n > PROXY_WORKERS_MAX ? PROXY_WORKERS_MAX : (int)n;
}

static long
number(const char *opt, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno != 0 || v < min || v > max) {
		fprintf(stderr, "intutic-proxy: %s: '%s' is not a number from "
		    "%ld to %ld\n", opt, s, min, max);
		exit(2);
	}
	return v;
}

/* A default, as --help shows it ("" for none). */
static void
usage_default_TEXT(char *buf, size_t len, const char *def)
{
	snprintf(buf, len, "%s", def != NULL ? def : "");
}

static void
usage_default_number(char *buf, size_t len, long def)
{
	snprintf(buf, len, "%ld", def);
}

#define usage_default_PORT	usage_default_number
#define usage_default_INT	usage_default_number
#define usage_default_SIZE	usage_default_number
#define usage_default_FLAG(buf, len, def) ((void)(def), (buf)[0] = '\0')

static void
split_binds(struct proxy_config *cfg, char *list)
{
	char *save = NULL, *tok;

	cfg->nbinds = 0;
	for (tok = strtok_r(list, ",", &save); tok != NULL;
	    tok = strtok_r(NULL, ",", &save)) {
		if (*tok == '\0')
			continue;
		if (cfg->nbinds == PROXY_BINDS_MAX) {
			fprintf(stderr, "intutic-proxy: more than %d bind "
			    "addresses\n", PROXY_BINDS_MAX);
			exit(2);
		}
		cfg->binds[cfg->nbinds++] = tok;
	}
	if (cfg->nbinds == 0) {
		fprintf(stderr, "intutic-proxy: no bind address given\n");
		exit(2);
	}
}

/* --- options (common/proxy-opts.h describes them) ---------------------------- */

enum proxy_opt_id {
#define X(name, kind, field, metavar, def, min, max, env, help) \
	PROXY_OPT_##field,
	PROXY_OPTIONS(X)
#undef X
	PROXY_OPT_COUNT,
	PROXY_OPT_HELP,
	PROXY_OPT_VERSION
};

#define PROXY_ARG_FLAG	no_argument
#define PROXY_ARG_TEXT	required_argument
#define PROXY_ARG_PORT	required_argument
#define PROXY_ARG_INT	required_argument
#define PROXY_ARG_SIZE	required_argument

static const struct option proxy_longopts[] = {
#define X(name, kind, field, metavar, def, min, max, env, help) \
	{ name, PROXY_ARG_##kind, NULL, PROXY_OPT_##field },
	PROXY_OPTIONS(X)
#undef X
	{ "help", no_argument, NULL, PROXY_OPT_HELP },
	{ "version", no_argument, NULL, PROXY_OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* Sets FIELD from the value v of `what` (an option or a variable). */
#define PROXY_SET_FLAG(f, what, v, lo, hi)	((f) = 1)
#define PROXY_SET_TEXT(f, what, v, lo, hi)	((f) = (v))
#define PROXY_SET_PORT(f, what, v, lo, hi) \
	((f) = (uint16_t)number((what), (v), (lo), (hi)))
#define PROXY_SET_INT(f, what, v, lo, hi) \
	((f) = (int)number((what), (v), (lo), (hi)))
#define PROXY_SET_SIZE(f, what, v, lo, hi) \
	((f) = (size_t)number((what), (v), (lo), (hi)))

static void
option_set(struct proxy_config *cfg, enum proxy_opt_id id, const char *what,
    const char *v)
{
	switch (id) {
#define X(name, kind, field, metavar, def, min, max, env, help) \
	case PROXY_OPT_##field: \
		PROXY_SET_##kind(cfg->field, what, v, min, max); \
		break;
	PROXY_OPTIONS(X)
#undef X
	default:
		break;
	}
}

/*
 * One option of the usage: "--NAME METAVAR  HELP", and under it its
 * default, its range and its variable, those it has.
 */
static void
usage_option(FILE *fp, const char *word, const char *help,
    const char *deftext, const char *range, const char *env)
{
	const char *sep = "";

	fprintf(fp, "  %-20s %s\n", word, help);
	if (deftext[0] == '\0' && range[0] == '\0' && env == NULL)
		return;
	fprintf(fp, "  %-20s", "");
	if (deftext[0] != '\0') {
		fprintf(fp, " default %s", deftext);
		sep = ";";
	}
	if (range[0] != '\0') {
		fprintf(fp, "%s %s", sep, range);
		sep = ";";
	}
	if (env != NULL)
		fprintf(fp, "%s $%s", sep, env);
	fputc('\n', fp);
}

/* The usage: the synopsis, then each option with what it takes. */
static void
usage(FILE *fp)
{
	static const char lead[] = "usage: intutic-proxy";
	char word[64], deftext[96], range[64];
	size_t col = sizeof(lead) - 1;

	fputs(lead, fp);
#define X(name, kind, field, metavar, def, min, max, env, help) \
	snprintf(word, sizeof(word), strcmp(name, PROXY_OPTION_REQUIRED) == 0 ? \
	    " --%s%s%s" : " [--%s%s%s]", name, metavar != NULL ? " " : "", \
	    metavar != NULL ? metavar : ""); \
	if (col + strlen(word) > 76) { \
		fprintf(fp, "\n%*s", (int)sizeof(lead) - 1, ""); \
		col = sizeof(lead) - 1; \
	} \
	fputs(word, fp); \
	col += strlen(word);
	PROXY_OPTIONS(X)
#undef X
	fputs("\n       intutic-proxy --help | --version\n\n"
	    "The governing proxy; `intutic start` runs it.  See "
	    "intutic-proxy(8).\n\n", fp);
#define X(name, kind, field, metavar, def, min, max, env, help) \
	snprintf(word, sizeof(word), "--%s%s%s", name, metavar != NULL ? \
	    " " : "", metavar != NULL ? metavar : ""); \
	usage_default_##kind(deftext, sizeof(deftext), def); \
	range[0] = '\0'; \
	if (PROXY_ARG_##kind == required_argument && (min) != (max)) \
		snprintf(range, sizeof(range), "%ld to %ld", (long)(min), \
		    (long)(max)); \
	usage_option(fp, word, help, deftext, range, env);
	PROXY_OPTIONS(X)
#undef X
}

/* The variable's value; NULL when name is NULL, or it is unset or empty. */
static const char *
env_value(const char *name)
{
	const char *v;

	if (name == NULL || (v = getenv(name)) == NULL || *v == '\0')
		return NULL;
	return v;
}

static void
parse_options(struct proxy_config *cfg, int argc, char **argv)
{
	static char bindbuf[1024], statebuf[PATH_MAX];
	char what[64];
	const char *v;
	int c, li = 0;

	memset(cfg, 0, sizeof(*cfg));
	/* The defaults, then the environment, then the options. */
#define X(name, kind, field, metavar, def, min, max, env, help) \
	cfg->field = (def);
	PROXY_OPTIONS(X)
#undef X
#define X(name, kind, field, metavar, def, min, max, env, help) \
	if ((v = env_value(env)) != NULL) \
		option_set(cfg, PROXY_OPT_##field, env, v);
	PROXY_OPTIONS(X)
#undef X
	while ((c = getopt_long(argc, argv, "", proxy_longopts, &li)) != -1) {
		if (c >= 0 && c < PROXY_OPT_COUNT) {
			snprintf(what, sizeof(what), "--%s",
			    proxy_longopts[li].name);
			option_set(cfg, (enum proxy_opt_id)c, what, optarg);
			continue;
		}
		switch (c) {
		case PROXY_OPT_HELP:
			usage(stdout);
			exit(0);
		case PROXY_OPT_VERSION:
			printf("intutic-proxy %s\n", PACKAGE_VERSION);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "intutic-proxy: unexpected argument '%s'\n",
		    argv[optind]);
		usage(stderr);
		exit(2);
	}
	if (cfg->rules_path == NULL) {
		fprintf(stderr, "intutic-proxy: --rules FILE is required\n");
		usage(stderr);
		exit(2);
	}
	snprintf(bindbuf, sizeof(bindbuf), "%s", cfg->bind_text);
	split_binds(cfg, bindbuf);
	if (cfg->state_dir == NULL) {
		if (paths_state_dir(statebuf, sizeof(statebuf)) != 0) {
			fprintf(stderr, "intutic-proxy: the default state "
			    "directory is too long: use --state-dir\n");
			exit(2);
		}
		cfg->state_dir = statebuf;
	}
}

/*
 * Two descriptors a tunnel: take the hard limit, and cap the connections
 * so that accept pauses (EMFILE) rather than failing half-way.
 */
static void
raise_fd_limit(struct proxy *p)
{
	struct rlimit rl;
	size_t usable;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur == RLIM_INFINITY)
		return;
	usable = rl.rlim_cur > 64 ? (size_t)(rl.rlim_cur - 64) / 2 : 1;
	if (p->cfg.conns_max > usable) {
		info("descriptor limit %llu: at most %zu connections",
		    (unsigned long long)rl.rlim_cur, usable);
		p->cfg.conns_max = usable;
	}
}

int
main(int argc, char **argv)
{
	struct proxy *p = &proxy;
	struct rules_error rerr;
	struct event *sigs[4];
	static const int signums[4] = { SIGHUP, SIGTERM, SIGINT, SIGUSR1 };
	char msg[RULES_PATH_MAX + RULES_ERROR_MAX + 64];
	sigset_t block, old;
	size_t i;
	int k, debug = 0, status = 0;

	parse_options(&p->cfg, argc, argv);
	debug = p->cfg.debug;
	log_init("intutic-proxy", debug ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
	signal(SIGPIPE, SIG_IGN);
	raise_fd_limit(p);
	p->started = time(NULL);
	pthread_mutex_init(&p->rules_lock, NULL);

	/* A lenient llhttp (a system library swapped since configure) smuggles. */
	if (!http_parser_strict()) {
		error("not starting: the llhttp library linked in is lenient (it "
		    "lets a chunk's data end without CRLF); rebuild intutic "
		    "against a strict one (configure says which it uses)");
		return 125;
	}

	/* Fail closed: no rules, no proxy. */
	if (rules_load(p->cfg.rules_path, &p->rules, &rerr) != 0) {
		error("%s", rules_error_str(&rerr, msg, sizeof(msg)));
		error("not starting: the rule file does not load");
		return 2;
	}
	p->rules_gen = 1;
	if ((p->rules_text = proxy_rules_text(p->rules)) == NULL)
		fatal("out of memory");
	if ((p->hosts = hosts_load(p->cfg.hosts_file, msg, sizeof(msg))) ==
	    NULL) {
		error("%s", msg);
		return 2;
	}
	if (evthread_use_pthreads() != 0) {
		error("libevent has no thread support");
		return 125;
	}
	p->nworkers = p->cfg.workers;
	if ((p->workers = calloc((size_t)p->nworkers, sizeof(*p->workers))) ==
	    NULL)
		fatal("out of memory");
	for (k = 0; k < p->nworkers; k++)
		p->workers[k].id = k;
	if ((k = worker_listen_all(p)) != 0)
		return k == -2 ? 2 : 125;
	if ((k = dns_listen_all(p)) != 0)
		return k == -2 ? 2 : 125;
	/* Bound: root is not needed any more (--user), not even to reopen. */
	if (p->cfg.user != NULL && service_drop_user(p->cfg.user,
	    p->cfg.state_dir, msg, sizeof(msg)) != 0) {
		error("not starting: %s", msg);
		return 125;
	}
	if (p->cfg.audit_path != NULL &&
	    (p->audit = audit_open(p->cfg.audit_path, msg, sizeof(msg))) ==
	    NULL) {
		error("%s", msg);
		return 125;
	}
	/* the filter's answers, for the transparent listener */
	if (p->ndns > 0 && p->ntransparent > 0 &&
	    (p->given = given_new()) == NULL) {
		error("out of memory");
		return 125;
	}
	for (i = 0; i < p->nlistens; i++) {
		const char *t = p->listens[i].text;

		if (strncmp(t, "127.", 4) != 0 && strcmp(t, "::1") != 0 &&
		    strcmp(t, "[::1]") != 0)
			warn_msg("listening on %s: reachable from outside this "
			    "host's loopback", t);
	}

	if ((p->runs = runs_new(p->cfg.state_dir, control_policy_compile, p,
	    msg, sizeof(msg))) == NULL) {
		error("not starting: the runs: %s", msg);
		return 125;
	}
	if (control_listen(p) != 0)
		return 125;
	if ((p->tls = tls_client_new(p->cfg.gateway_ca, msg,
	    sizeof(msg))) == NULL) {
		error("not starting: the provider gateway: %s", msg);
		return 2;
	}
	if ((p->gateway = gateway_new(p->cfg.state_dir, msg,
	    sizeof(msg))) == NULL) {
		error("not starting: the provider gateway: %s", msg);
		return 125;
	}
	if (gateway_keys_load(p->gateway, p->rules, p->cfg.gateway_keys, msg,
	    sizeof(msg)) != 0) {
		error("not starting: the provider gateway: %s", msg);
		return 2;
	}
	if ((k = upstream_start(p)) != 0)
		return k;

	/* Workers never see signals; the main loop takes them. */
	sigemptyset(&block);
	for (k = 0; k < 4; k++)
		sigaddset(&block, signums[k]);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	for (k = 0; k < p->nworkers; k++) {
		if (worker_start(p, &p->workers[k]) != 0) {
			error("cannot start worker %d", k);
			return 125;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	if ((p->base = event_base_new()) == NULL)
		fatal("cannot create the event loop");
	for (k = 0; k < 4; k++) {
		sigs[k] = evsignal_new(p->base, signums[k], signal_cb, p);
		if (sigs[k] == NULL || evsignal_add(sigs[k], NULL) != 0)
			fatal("cannot catch signal %d", signums[k]);
	}
	grace_ev = evtimer_new(p->base, grace_cb, p);
	if ((sweep_ev = evtimer_new(p->base, sweep_cb, p)) == NULL)
		fatal("cannot make the runs' sweep timer");
	runs_on_gone(p->runs, sweep_gone, p);
	sweep_cb(-1, 0, p);
	if (state_write(p) != 0) {
		status = 125;
		__atomic_store_n(&p->stopping, 2, __ATOMIC_RELAXED);
		workers_poke(p);
	} else {
		info("listening on port %u (%d worker%s), rules '%s' "
		    "(%zu entries, mode %s)", p->port, p->nworkers,
		    p->nworkers == 1 ? "" : "s",
		    p->cfg.rules_path, rules_count(p->rules),
		    rules_mode(p->rules) == RULES_MODE_REPORT ? "report" :
		    "enforce");
		/* Type=notify: ready once it listens and proxy.json says so. */
		snprintf(msg, sizeof(msg), "READY=1\nSTATUS=listening on "
		    "port %u", p->port);
		if (service_notify(msg) == -1)
			error("cannot tell systemd the proxy is ready "
			    "($NOTIFY_SOCKET): %s", strerror(errno));
		event_base_dispatch(p->base);
	}

	/* Stopping: the grace timer still runs while the workers drain. */
	for (k = 0; k < p->nworkers; k++) {
		struct timeval tick = { 0, 50000 };

		while (pthread_tryjoin_np(p->workers[k].thread, NULL) == EBUSY) {
			event_base_loopexit(p->base, &tick);
			event_base_dispatch(p->base);
		}
	}
	/* Every worker has ended: nothing pokes their events any more. */
	for (k = 0; k < p->nworkers; k++)
		worker_free(&p->workers[k]);
	dns_close_all(p);
	worker_unlisten_all(p);
	given_free(p->given);
	tls_client_free(p->tls);
	upstream_free(p->upstream);
	gateway_free(p->gateway);
	if (state_path[0] != '\0')
		unlink(state_path);
	control_unlink(p);
	for (k = 0; k < 4; k++)
		event_free(sigs[k]);
	event_free(grace_ev);
	event_free(sweep_ev);
	event_base_free(p->base);
	rules_free(p->rules);
	free(p->rules_text);
	audit_free(p->audit);
	hosts_free(p->hosts);
	runs_free(p->runs);
	free(p->workers);
	libevent_global_shutdown();
	info("stopped");
	return status;
}
