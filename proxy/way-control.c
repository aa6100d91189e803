/*
 * way-control.c — the proxy's control API, on the unix socket
 * DIR/control.sock (DIR the state directory; mode 0660, the group of
 * --control-group), never on the data port: JSON over HTTP/1.1, one
 * request a connection.  Who asks is who the kernel says the peer is
 * (SO_PEERCRED): root and the proxy's own user may do anything; any other
 * local user that can reach the socket registers runs, and sees and ends
 * only its own.
 *
 *	POST   /v1/runs		register a run (intutic exec): 201
 *	GET    /v1/runs		the runs the peer may see: 200, {"runs":[...]}
 *	GET    /v1/runs/RUN	one of them: 200, an object
 *	PUT    /v1/runs/RUN/policy  change its policy: 200
 *	PUT    /v1/runs/RUN/addr    its sandbox's address, once: 200
 *	DELETE /v1/runs/RUN	end it: 200
 *	GET    /v1/rules	the operator's rules and their generation: 200
 *
 * A change (a policy, an end) is answered only once it is in force
 * everywhere: every worker has decided its open connections again
 * (proxy_recheck()), and closed those it no longer allows.
 *
 * An error is {"error": "..."} with its status.  Nothing else is served
 * there: a request the control API does not know is refused, never
 * proxied.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <sys/time.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "audit.h"
#include "conn-core.h"
#include "gateway.h"
#include "http.h"
#include "jsonw.h"
#include "log.h"
#include "paths.h"
#include "proxy.h"
#include "rules.h"
#include "runs.h"
#include "wire.h"

#define CONTROL_BACKLOG		64
#define CONTROL_MODE		0660	/* the socket: owner and group */
#define CONTROL_WAIT_MS		5000	/* for a change to be in force */

/* ------------------------------------------------------------- the socket */

/* The group of --control-group, a name or a number: 0, or -1 (said). */
static int
control_group(const char *name, gid_t *gid)
{
	struct group *gr;
	unsigned long v;
	char *end;

	if ((gr = getgrnam(name)) != NULL) {
		*gid = gr->gr_gid;
		return 0;
	}
	errno = 0;
	v = strtoul(name, &end, 10);
	if (*name < '0' || *name > '9' || *end != '\0' || errno != 0 ||
	    v >= (unsigned long)(gid_t)-1) {
		error("--control-group: no group '%s'", name);
		return -1;
	}
	*gid = (gid_t)v;
	return 0;
}

/*
 * The socket's address, reached through the directory's descriptor dfd:
 * /proc/self/fd/N/control.sock is short whatever the directory's path
 * (sun_path holds 107 bytes).
 */
static void
control_addr(int dfd, struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	snprintf(sun->sun_path, sizeof(sun->sun_path), "/proc/self/fd/%d/%s",
	    dfd, WIRE_CONTROL_SOCKET);
}

/*
 * A socket file left in the directory dfd: a proxy that still answers
 * there is another one serving this state directory (refused); a dead
 * one's file goes.  0, or -1 (said).
 */
static int
control_stale(int dfd, const char *path, const struct sockaddr_un *sun)
{
	struct stat st;
	int fd, r;

	if (fstatat(dfd, WIRE_CONTROL_SOCKET, &st, AT_SYMLINK_NOFOLLOW) == -1) {
		if (errno == ENOENT)
			return 0;
		error("cannot look at '%s': %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISSOCK(st.st_mode)) {
		error("'%s' is there and is not a socket: remove it, or give "
		    "another --state-dir", path);
		return -1;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		error("socket: %s", strerror(errno));
		return -1;
	}
	r = connect(fd, (const struct sockaddr *)sun, sizeof(*sun));
	close(fd);
	if (r == 0) {
		error("another proxy answers on the control socket '%s': its "
		    "state directory is in use (stop that proxy with `intutic "
		    "stop --state-dir DIR`, or give another --state-dir)", path);
		return -1;
	}
	if (unlinkat(dfd, WIRE_CONTROL_SOCKET, 0) == -1 && errno != ENOENT) {
		error("cannot remove the old control socket '%s': %s", path,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/* The socket in the directory dfd, bound and listening: its fd, or -1. */
static int
control_bind(struct proxy *p, int dfd, const char *path)
{
	struct sockaddr_un sun;
	mode_t old;
	int fd, r;

	control_addr(dfd, &sun);
	if (control_stale(dfd, path, &sun) != 0)
		return -1;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1) {
		error("socket: %s", strerror(errno));
		return -1;
	}
	/* Made the owner's only, then opened to the group: never wider. */
	old = umask(0177);
	r = bind(fd, (const struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (r == -1 ||
	    (p->control_gid != (gid_t)-1 && fchownat(dfd, WIRE_CONTROL_SOCKET,
	    (uid_t)-1, p->control_gid, AT_SYMLINK_NOFOLLOW) == -1) ||
	    fchmodat(dfd, WIRE_CONTROL_SOCKET, CONTROL_MODE, 0) == -1 ||
	    listen(fd, CONTROL_BACKLOG) == -1) {
		error("cannot listen on the control socket '%s': %s", path,
		    strerror(errno));
		close(fd);
		if (r == 0)
			unlinkat(dfd, WIRE_CONTROL_SOCKET, 0);
		return -1;
	}
	return fd;
}

int
control_listen(struct proxy *p)
{
	const char *dir = p->cfg.state_dir;
	char path[sizeof(p->control_path)];
	int dfd, fd, n;

	p->control_fd = -1;
	p->control_gid = (gid_t)-1;
	if (p->cfg.control_group != NULL &&
	    control_group(p->cfg.control_group, &p->control_gid) != 0)
		return -1;
	n = snprintf(path, sizeof(path), "%s/%s", dir, WIRE_CONTROL_SOCKET);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		error("the state directory '%s' is too long", dir);
		return -1;
	}
	if (paths_mkdirs(dir) != 0) {
		error("cannot create state directory '%s': %s", dir,
		    strerror(errno));
		return -1;
	}
	if ((dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1) {
		error("cannot open the state directory '%s': %s", dir,
		    strerror(errno));
		return -1;
	}
	/* The group's members reach the socket through the directory. */
	if (p->control_gid != (gid_t)-1 && (fchownat(dfd, "", (uid_t)-1,
	    p->control_gid, AT_EMPTY_PATH) == -1 || chmod(dir, 0710) == -1)) {
		error("cannot hand the state directory '%s' to group %s: %s",
		    dir, p->cfg.control_group, strerror(errno));
		close(dfd);
		return -1;
	}
	fd = control_bind(p, dfd, path);
	close(dfd);
	if (fd == -1)
		return -1;
	snprintf(p->control_path, sizeof(p->control_path), "%s", path);
	p->control_fd = fd;
	return 0;
}

void
control_unlink(struct proxy *p)
{
	if (p->control_path[0] != '\0')
		unlink(p->control_path);
	p->control_path[0] = '\0';
}

/* ------------------------------------------------------------ the answers */

static void	control_send(struct conn *, int, struct evbuffer *);
static void	control_wait_arm(struct conn *);

/* Polls again in a millisecond. */
static void
control_wait_arm(struct conn *c)
{
	struct timeval tv = { 0, 1000 };

	evtimer_add(c->timer, &tv);
}

/*
 * CONN_WAIT's timer: the held answer goes once every worker has rechecked
 * (a few milliseconds); past CONTROL_WAIT_MS it goes all the same, the
 * change being made, and the log says so.
 */
static void
control_wait(struct conn *c)
{
	struct evbuffer *body = c->held;
	struct timeval now, d;

	gettimeofday(&now, NULL);
	timersub(&now, &c->held_since, &d);
	if (!proxy_rechecked(c->p, c->held_rev)) {
		if (d.tv_sec * 1000 + d.tv_usec / 1000 < CONTROL_WAIT_MS) {
			control_wait_arm(c);
			return;
		}
		error("%llu: a change was not in force in every worker within "
		    "%d ms", (unsigned long long)c->id, CONTROL_WAIT_MS);
	}
	c->held = NULL;
	control_send(c, c->held_status, body);
	evbuffer_free(body);
}

const struct conn_state_def conn_state_wait = {
	.name = "wait", .timeout = CONN_TIMEOUT_FINISH,
	.on_timeout = control_wait,
	.client_io = CONN_IO_STOP, .up_io = CONN_IO_STOP, .wm = CONN_WM_KEEP,
};

/* The answer, status with a JSON body, and the end of the connection. */
static void
control_answer(struct conn *c, int status, struct evbuffer *body)
{
	if (c->held_rev != 0 && !proxy_rechecked(c->p, c->held_rev)) {
		/* a change: answered once it is in force (control_wait()) */
		if ((c->held = evbuffer_new()) == NULL ||
		    evbuffer_add_buffer(c->held, body) != 0) {
			conn_close(c);
			return;
		}
		c->held_status = status;
		gettimeofday(&c->held_since, NULL);
		conn_set_state(c, CONN_WAIT);
		control_wait_arm(c);
		return;
	}
	control_send(c, status, body);
}

/* The answer on its way, then the close. */
static void
control_send(struct conn *c, int status, struct evbuffer *body)
{
	struct evbuffer *out = bufferevent_get_output(c->client);

	c->req.status = status;
	if (evbuffer_add(body, "\n", 1) != 0 ||
	    evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nContent-Type: "
	    "application/json\r\nContent-Length: %zu\r\nConnection: close"
	    "\r\n\r\n", status, http_status_text(status),
	    evbuffer_get_length(body)) < 0 ||
	    evbuffer_add_buffer(out, body) != 0) {
		conn_close(c);
		return;
	}
	conn_set_state(c, CONN_FINISH);
}

static void
control_json(struct conn *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A small answer, its JSON body made with fmt, with status. */
static void
control_json(struct conn *c, int status, const char *fmt, ...)
{
	struct evbuffer *body;
	va_list ap;
	int r;

	if ((body = evbuffer_new()) == NULL) {
		conn_close(c);
		return;
	}
	va_start(ap, fmt);
	r = evbuffer_add_vprintf(body, fmt, ap);
	va_end(ap);
	if (r < 0)
		conn_close(c);
	else
		control_answer(c, status, body);
	evbuffer_free(body);
}

static void
control_error(struct conn *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* {"error": MESSAGE} with status. */
static void
control_error(struct conn *c, int status, const char *fmt, ...)
{
	char msg[512], quoted[sizeof(msg) * JSONW_ESC_MAX + 3];
	size_t used = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	quoted[0] = '\0';
	if (jsonw_str(quoted, sizeof(quoted), &used, msg) != 0) {
		conn_close(c);
		return;
	}
	control_json(c, status, "{\"" WIRE_CONTROL_ERROR "\":%s}", quoted);
}

/* ------------------------------------------------------------ the requests */

/* Root and the proxy's own user may see and end every run. */
static void
control_peer(const struct conn *c, struct runs_peer *who)
{
	who->uid = c->peer_uid;
	who->admin = c->peer_uid == 0 || c->peer_uid == geteuid();
}

/*
 * The audit record of a run registered, changed or ended by the peer:
 * reg, when given, says its command, project, pid and sandbox's address.
 */
static void
control_audit(struct conn *c, const char *event, const struct run_reg *reg,
    const char *id, int status)
{
	char addr[RULES_ADDR_TEXT_MAX];
	struct audit_record r;

	memset(&r, 0, sizeof(r));
	r.event = event;
	r.id = c->id;
	r.run = id;
	r.client = c->client_text;
	r.port = -1;
	r.bytes_up = r.bytes_down = r.duration_ms = -1;
	r.status = status;
	r.pid = -1;
	if (reg != NULL && reg->command[0] != '\0') {
		r.command = reg->command;
		r.project = reg->project[0] != '\0' ? reg->project : NULL;
		r.pid = reg->pid;
	}
	if (reg != NULL && reg->addr.family != 0)
		r.addr = rules_addr_text(&reg->addr, addr, sizeof(addr));
	if (audit_write(c->p->audit, &r) != 0)
		error("%llu: cannot write the audit log",
		    (unsigned long long)c->id);
}

int
control_policy_compile(const char *id, const char *text, struct rules **set,
    char *why, size_t whylen, void *arg)
{
	char name[RUN_ID_MAX + sizeof(WIRE_RUN_POLICY_NAME)];
	char msg[RULES_WHERE_MAX + RULES_ERROR_MAX + 8];
	struct rules_error err;

	(void)arg;
	snprintf(name, sizeof(name), WIRE_RUN_POLICY_NAME, id);
	if (rules_load_text(name, text, strlen(text), RULES_LOAD_POLICY, set,
	    &err) != 0) {
		snprintf(why, whylen, "%s", rules_error_str(&err, msg,
		    sizeof(msg)));
		return -1;
	}
	return 0;
}

/*
 * A policy's text compiled, and held to the operator's rules in force:
 * it may only narrow them.  0 and *set (NULL for no text), or -1 answered.
 */
static int
control_policy(struct conn *c, const char *id, const char *text,
    struct rules **set)
{
	char why[1024];
	struct rules *ceiling;
	int r;

	*set = NULL;
	if (text == NULL)
		return 0;
	if (control_policy_compile(id, text, set, why, sizeof(why), NULL) !=
	    0) {
		control_error(c, 400, "%s", why);
		return -1;
	}
	ceiling = proxy_rules_get(c->p);
	r = rules_tightens(ceiling, *set, why, sizeof(why));
	rules_free(ceiling);
	if (r != 0) {
		rules_free(*set);
		*set = NULL;
		control_error(c, 400, "run %s's policy would widen the "
		    "operator's rules (it may only narrow them): %s", id, why);
		return -1;
	}
	return 0;
}

/* The request's body, all there (control_body_ready()); NULL: closed. */
static const char *
control_body(struct conn *c, const struct http_head *h)
{
	struct evbuffer *in = bufferevent_get_input(c->client);
	size_t total = h->len + (size_t)h->content_length;
	const char *buf;

	if ((buf = (const char *)evbuffer_pullup(in, (ssize_t)total)) == NULL) {
		conn_close(c);
		return NULL;
	}
	return buf + h->len;
}

/* A small answer: {"run":ID, KEY: VALUE} (value JSON already). */
static void
control_done(struct conn *c, int status, const char *id, const char *key,
    const char *value)
{
	if (key == NULL)
		control_json(c, status, "{\"" WIRE_RUN_ID "\":\"%s\"}", id);
	else
		control_json(c, status, "{\"" WIRE_RUN_ID "\":\"%s\",\"%s\":%s}",
		    id, key, value);
}

/*
 * The answer to what the runs' functions say of run id besides 0: -1 no
 * such run, -2 another user's, -3 `what` (its policy, address, end) not
 * written down, so not made.
 */
static void
control_run_failed(struct conn *c, int r, const char *id, const char *what)
{
	switch (r) {
	case -1:
		control_error(c, 404, "no run '%s'", id);
		return;
	case -2:
		control_error(c, 403, "run '%s' is another user's: only its "
		    "owner, root and the proxy's user may see or change it",
		    id);
		return;
	default:
		error("run %s: %s not made: cannot write the state directory's "
		    "runs.json", id, what);
		control_error(c, 500, "run '%s': %s could not be written down, "
		    "so it was not made (the proxy's log says more)", id, what);
		return;
	}
}

/*
 * The answer to a registration: {"run":ID}, and "sentinels": {"NAME":
 * "..."} with the run's key of each provider the rules broker (see
 * gateway_sentinel()), which the launcher gives the agent instead of the
 * real one.  The registering peer may have it: it is the run's owner.
 */
static void
control_registered(struct conn *c, const char *id)
{
	const struct rules_provider *pv;
	struct evbuffer *body;
	struct rules *r;
	struct run *run;
	char s[GATEWAY_SENTINEL_MAX];
	size_t i, n = 0;
	int bad = 0;

	if ((body = evbuffer_new()) == NULL) {
		conn_close(c);
		return;
	}
	r = proxy_rules_get(c->p);
	run = runs_ref(c->p->runs, id);
	bad |= evbuffer_add_printf(body, "{\"" WIRE_RUN_ID "\":") < 0 ||
	    runs_json_str(body, id) != 0;
	for (i = 0; run != NULL && r != NULL && i < rules_provider_count(r);
	    i++) {
		pv = rules_provider_get(r, i);
		if (pv->gateway != RULES_GATEWAY_BROKER ||
		    gateway_sentinel(c->p->gateway, pv, run, s) != 0)
			continue;
		bad |= evbuffer_add_printf(body, "%s", n++ == 0 ?
		    ",\"" WIRE_RUN_SENTINELS "\":{" : ",") < 0 ||
		    runs_json_str(body, pv->name) != 0 ||
		    evbuffer_add(body, ":", 1) != 0 || runs_json_str(body, s) != 0;
	}
	explicit_bzero(s, sizeof(s));
	bad |= evbuffer_add_printf(body, "%s}", n > 0 ? "}" : "") < 0;
	run_release(run);
	rules_free(r);
	if (bad)
		conn_close(c);
	else
		control_answer(c, 201, body);
	evbuffer_free(body);
}

/* POST /v1/runs: the body is all there (control_body_ready()). */
static void
control_register(struct conn *c, const struct http_head *h)
{
	struct run_reg reg;
	struct rules *set;
	enum runs_added added;
	char why[256];
	const char *body;

	if ((body = control_body(c, h)) == NULL)
		return;
	if (runs_parse(body, (size_t)h->content_length, RUNS_BODY_REG, &reg, why,
	    sizeof(why)) != 0) {
		control_error(c, 400, "%s", why);
		return;
	}
	reg.uid = c->peer_uid;
	if (control_policy(c, reg.id, reg.policy, &set) != 0) {
		run_reg_clear(&reg);
		return;
	}
	added = runs_add(c->p->runs, &reg, set);
	run_reg_clear(&reg);
	if (added != RUNS_ADDED)
		rules_free(set);
	switch (added) {
	case RUNS_ADDED:
		break;
	case RUNS_EXISTS:
		control_error(c, 409, "a run with the id '%s' is registered "
		    "already", reg.id);
		return;
	case RUNS_USER_FULL:
		control_error(c, 429, "uid %lu has %d runs registered, the "
		    "most one user may have: end some (intutic exec ends its "
		    "own when it exits)", (unsigned long)reg.uid,
		    RUNS_PER_USER_MAX);
		return;
	case RUNS_FULL:
		control_error(c, 429, "the proxy has %d runs registered, the "
		    "most it keeps", RUNS_MAX);
		return;
	case RUNS_ADDR_TAKEN:
		control_error(c, 409, "another run has the sandbox address of "
		    "run '%s' already", reg.id);
		return;
	case RUNS_NO_PID:
		control_error(c, 400, "pid %lld is not a running process: a "
		    "run is registered by its live launcher", reg.pid);
		return;
	case RUNS_NOT_KEPT:
		control_error(c, 500, "the run could not be written to the "
		    "state directory: not registered (the proxy's log says "
		    "more)");
		error("run %s not registered: cannot write the state "
		    "directory's runs.json", reg.id);
		return;
	}
	control_audit(c, "run", &reg, reg.id, 201);
	info("run %s registered by uid %lu: %s%s", reg.id,
	    (unsigned long)reg.uid, reg.command, set != NULL ?
	    " (with a policy of its own)" : "");
	control_registered(c, reg.id);
}

/* PUT /v1/runs/ID/policy: the body is all there. */
static void
control_set_policy(struct conn *c, const struct http_head *h, const char *id)
{
	struct runs_peer who;
	struct run_reg chg;
	struct rules *set;
	unsigned long long gen = 0;
	char why[256], num[24];
	const char *body;
	int r;

	if ((body = control_body(c, h)) == NULL)
		return;
	if (runs_parse(body, (size_t)h->content_length, RUNS_BODY_POLICY, &chg,
	    why,
	    sizeof(why)) != 0) {
		control_error(c, 400, "%s", why);
		return;
	}
	if (control_policy(c, id, chg.policy, &set) != 0) {
		run_reg_clear(&chg);
		return;
	}
	control_peer(c, &who);
	r = runs_set_policy(c->p->runs, id, &who,
	    (unsigned long long)chg.generation, chg.policy, set, &gen);
	if (r == 0)
		chg.policy = NULL;	/* the run's now */
	else
		rules_free(set);
	run_reg_clear(&chg);
	switch (r) {
	case 0:
		control_audit(c, "run-policy", NULL, id, 200);
		info("run %s: policy generation %llu, set by uid %lu", id, gen,
		    (unsigned long)who.uid);
		c->held_rev = proxy_recheck(c->p);
		snprintf(num, sizeof(num), "%llu", gen);
		control_done(c, 200, id, WIRE_RUN_GENERATION, num);
		return;
	case -4:
		control_error(c, 409, "run '%s' has policy generation %llu, "
		    "not %lld: it changed meanwhile; read it again and change "
		    "that", id, gen, chg.generation);
		return;
	default:
		control_run_failed(c, r, id, "the change of its policy");
		return;
	}
}

/* PUT /v1/runs/ID/addr: the body is all there. */
static void
control_set_addr(struct conn *c, const struct http_head *h, const char *id)
{
	char why[256], text[RULES_ADDR_TEXT_MAX], quoted[RULES_ADDR_TEXT_MAX + 2];
	struct runs_peer who;
	struct run_reg body;
	const char *b;
	int r;

	if ((b = control_body(c, h)) == NULL)
		return;
	if (runs_parse(b, (size_t)h->content_length, RUNS_BODY_ADDR, &body,
	    why, sizeof(why)) != 0) {
		control_error(c, 400, "%s", why);
		return;
	}
	control_peer(c, &who);
	rules_addr_text(&body.addr, text, sizeof(text));
	switch ((r = runs_set_addr(c->p->runs, id, &who, &body.addr))) {
	case 0:
		control_audit(c, "run-addr", &body, id, 200);
		info("run %s: its sandbox is %s", id, text);
		snprintf(quoted, sizeof(quoted), "\"%s\"", text);
		control_done(c, 200, id, WIRE_RUN_ADDR, quoted);
		return;
	case -4:
		control_error(c, 409, "run '%s' has its sandbox's address "
		    "already", id);
		return;
	case -5:
		control_error(c, 409, "%s is another run's sandbox's address: "
		    "pick another", text);
		return;
	default:
		control_run_failed(c, r, id, "its sandbox's address");
		return;
	}
}

/* GET /v1/rules: the operator's rules in force, as JSON, and their
 * generation. */
static void
control_rules(struct conn *c)
{
	struct evbuffer *body;
	unsigned long long gen;
	char *text;
	int r;

	pthread_mutex_lock(&c->p->rules_lock);
	gen = c->p->rules_gen;
	text = c->p->rules_text != NULL ? strdup(c->p->rules_text) : NULL;
	pthread_mutex_unlock(&c->p->rules_lock);
	if (text == NULL || (body = evbuffer_new()) == NULL) {
		free(text);
		control_error(c, 500, "out of memory");
		return;
	}
	r = evbuffer_add_printf(body, "{\"" WIRE_RULES_GENERATION "\":%llu,\""
	    WIRE_RULES_FILE "\":", gen) >= 0 &&
	    runs_json_str(body, c->p->cfg.rules_path) == 0 &&
	    evbuffer_add_printf(body, ",%s}", text) >= 0;
	free(text);
	if (r)
		control_answer(c, 200, body);
	else
		conn_close(c);
	evbuffer_free(body);
}

/* GET or DELETE /v1/runs/ID (id NULL: GET /v1/runs). */
static void
control_run(struct conn *c, const char *method, const char *id)
{
	struct runs_peer who;
	struct evbuffer *body;
	int r;

	control_peer(c, &who);
	if (strcmp(method, "DELETE") == 0) {
		if ((r = runs_end(c->p->runs, id, &who)) != 0) {
			control_run_failed(c, r, id, "its end");
			return;
		}
		control_audit(c, "run-end", NULL, id, 200);
		info("run %s ended by uid %lu", id, (unsigned long)who.uid);
		/* its open connections close before the answer */
		c->held_rev = proxy_recheck(c->p);
		control_done(c, 200, id, "ended", "true");
		return;
	}
	if ((body = evbuffer_new()) == NULL) {
		conn_close(c);
		return;
	}
	if ((r = runs_json(c->p->runs, id, &who, body)) == 0)
		control_answer(c, 200, body);
	else if (r == -3)
		conn_close(c);		/* out of memory */
	else
		control_run_failed(c, r, id, "");
	evbuffer_free(body);
}

/* What is under /v1/runs/RUN: the run itself, or one of these. */
static const char *const control_parts[] = {
	"", WIRE_RUN_POLICY_PATH, WIRE_RUN_ADDR_PATH,
};
enum control_part { PART_RUN, PART_POLICY, PART_ADDR };

/*
 * The target's /v1/runs/RUN[PART]: 0 with the id and its part, or -1 when
 * it is not one of them.
 */
static int
control_target(const char *t, size_t tlen, char *id, enum control_part *part)
{
	const size_t rlen = sizeof(WIRE_RUNS_PATH) - 1;
	size_t i, plen, idlen;

	if (tlen <= rlen + 1 || memcmp(t, WIRE_RUNS_PATH, rlen) != 0 ||
	    t[rlen] != '/')
		return -1;
	t += rlen + 1;
	tlen -= rlen + 1;
	for (i = sizeof(control_parts) / sizeof(control_parts[0]); i-- > 0;) {
		plen = strlen(control_parts[i]);
		if (tlen > plen &&
		    memcmp(t + tlen - plen, control_parts[i], plen) == 0)
			break;
	}
	idlen = tlen - strlen(control_parts[i]);
	if (!runs_id_valid(t, idlen))
		return -1;
	memcpy(id, t, idlen);
	id[idlen] = '\0';
	*part = (enum control_part)i;
	return 0;
}

/*
 * Whether the body is all there; 0 to wait for more, or when it was
 * refused.  Only POST /v1/runs and PUT /v1/runs/RUN/PART have one.
 */
static int
control_body_ready(struct conn *c, const struct http_head *h, size_t avail)
{
	enum control_part part;
	char id[RUN_ID_MAX];

	if (!(strcmp(h->method, "POST") == 0 && h->target_len ==
	    sizeof(WIRE_RUNS_PATH) - 1 && memcmp(h->target, WIRE_RUNS_PATH,
	    h->target_len) == 0) && !(strcmp(h->method, "PUT") == 0 &&
	    control_target(h->target, h->target_len, id, &part) == 0 &&
	    part != PART_RUN))
		return 1;	/* no body: refused or answered by its route */
	if (h->chunked || h->content_length < 0) {
		control_error(c, 411, "a %s needs a Content-Length", h->method);
		return 0;
	}
	if (h->content_length > RUNS_BODY_MAX ||
	    h->len + (size_t)h->content_length > c->p->cfg.head_max) {
		control_error(c, 413, "the body is larger than %zu bytes",
		    c->p->cfg.head_max - h->len < RUNS_BODY_MAX ?
		    c->p->cfg.head_max - h->len : (size_t)RUNS_BODY_MAX);
		return 0;
	}
	return avail >= h->len + (size_t)h->content_length;
}

/* Everything on the control socket is the control API's. */
static int
control_claims(const struct http_head *h)
{
	(void)h;
	return 1;
}

static void
control_request(struct conn *c, const struct http_head *h, size_t avail)
{
	const char *m = h->method, *t = h->target;
	size_t tlen = h->target_len;
	enum control_part part;
	char id[RUN_ID_MAX];

	conn_req_begin(c, &conn_way_control, "control");
	if (c->peer_uid == (uid_t)-1) {
		control_error(c, 403, "the kernel did not say who is asking "
		    "(SO_PEERCRED)");
		return;
	}
	if (!control_body_ready(c, h, avail))
		return;
	if (tlen == sizeof(WIRE_RULES_PATH) - 1 &&
	    memcmp(t, WIRE_RULES_PATH, tlen) == 0) {
		if (strcmp(m, "GET") == 0)
			control_rules(c);
		else
			control_error(c, 405, "%s " WIRE_RULES_PATH ": only GET",
			    m);
		return;
	}
	if (tlen == sizeof(WIRE_RUNS_PATH) - 1 &&
	    memcmp(t, WIRE_RUNS_PATH, tlen) == 0) {
		if (strcmp(m, "POST") == 0)
			control_register(c, h);
		else if (strcmp(m, "GET") == 0)
			control_run(c, m, NULL);
		else
			control_error(c, 405, "%s " WIRE_RUNS_PATH ": only GET "
			    "and POST", m);
		return;
	}
	if (control_target(t, tlen, id, &part) != 0) {
		control_error(c, 404, "the control API serves " WIRE_RUNS_PATH
		    ", " WIRE_RUNS_PATH "/RUN (RUN: 1 to %d letters, digits, "
		    "'-', '_' or '.'), " WIRE_RUNS_PATH "/RUN"
		    WIRE_RUN_POLICY_PATH ", " WIRE_RUNS_PATH "/RUN"
		    WIRE_RUN_ADDR_PATH " and " WIRE_RULES_PATH
		    " (intutic-proxy(8))", RUN_ID_MAX - 1);
		return;
	}
	if (part == PART_RUN && (strcmp(m, "GET") == 0 ||
	    strcmp(m, "DELETE") == 0))
		control_run(c, m, id);
	else if (part == PART_RUN)
		control_error(c, 405, "%s " WIRE_RUNS_PATH "/%s: only GET and "
		    "DELETE", m, id);
	else if (strcmp(m, "PUT") != 0)
		control_error(c, 405, "%s " WIRE_RUNS_PATH "/%s%s: only PUT", m,
		    id, control_parts[part]);
	else if (part == PART_POLICY)
		control_set_policy(c, h, id);
	else
		control_set_addr(c, h, id);
}

const struct conn_way conn_way_control = {
	.name = "control",
	.listeners = CONN_LISTEN_CONTROL,
	.claims = control_claims,
	.request = control_request,
	.dialled = NULL,	/* it never dials */
};
