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
 *	DELETE /v1/runs/RUN	end it: 200
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

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "audit.h"
#include "conn-core.h"
#include "http.h"
#include "jsonw.h"
#include "log.h"
#include "paths.h"
#include "proxy.h"
#include "runs.h"
#include "wire.h"

#define CONTROL_BACKLOG		64
#define CONTROL_MODE		0660	/* the socket: owner and group */

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

/* The answer, status with a JSON body, and the end of the connection. */
static void
control_answer(struct conn *c, int status, struct evbuffer *body)
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
control_error(struct conn *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* {"error": MESSAGE} with status. */
static void
control_error(struct conn *c, int status, const char *fmt, ...)
{
	struct evbuffer *body;
	char msg[512], quoted[sizeof(msg) * JSONW_ESC_MAX + 3];
	size_t used = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	quoted[0] = '\0';
	if ((body = evbuffer_new()) == NULL ||
	    jsonw_str(quoted, sizeof(quoted), &used, msg) != 0 ||
	    evbuffer_add_printf(body, "{\"error\":%s}", quoted) < 0) {
		if (body != NULL)
			evbuffer_free(body);
		conn_close(c);
		return;
	}
	control_answer(c, status, body);
	evbuffer_free(body);
}

/* ------------------------------------------------------------ the requests */

/* Root and the proxy's own user may see and end every run. */
static void
control_peer(const struct conn *c, struct runs_peer *who)
{
	who->uid = c->peer_uid;
	who->admin = c->peer_uid == 0 || c->peer_uid == geteuid();
}

/* The audit record of a run registered or ended by the peer. */
static void
control_audit(struct conn *c, const char *event, const struct run_reg *reg,
    const char *id, int status)
{
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
	if (reg != NULL) {
		r.command = reg->command;
		r.project = reg->project[0] != '\0' ? reg->project : NULL;
		r.pid = reg->pid;
	}
	if (audit_write(c->p->audit, &r) != 0)
		error("%llu: cannot write the audit log",
		    (unsigned long long)c->id);
}

/* POST /v1/runs: the body is all there (control_body_ready()). */
static void
control_register(struct conn *c, const struct http_head *h)
{
	struct evbuffer *in = bufferevent_get_input(c->client), *body;
	size_t total = h->len + (size_t)h->content_length;
	struct run_reg reg;
	enum runs_added added;
	char why[256];
	const char *buf;

	if ((buf = (const char *)evbuffer_pullup(in, (ssize_t)total)) == NULL) {
		conn_close(c);
		return;
	}
	if (runs_parse(buf + h->len, (size_t)h->content_length, &reg, why,
	    sizeof(why)) != 0) {
		control_error(c, 400, "%s", why);
		return;
	}
	reg.uid = c->peer_uid;
	added = runs_add(c->p->runs, &reg);
	explicit_bzero(reg.token, sizeof(reg.token));
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
	info("run %s registered by uid %lu: %s", reg.id,
	    (unsigned long)reg.uid, reg.command);
	evbuffer_drain(in, total);
	if ((body = evbuffer_new()) == NULL) {
		conn_close(c);
		return;
	}
	evbuffer_add_printf(body, "{\"" WIRE_RUN_ID "\":\"%s\"}", reg.id);
	control_answer(c, 201, body);
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
		if ((r = runs_end(c->p->runs, id, &who)) == 0) {
			control_audit(c, "run-end", NULL, id, 200);
			info("run %s ended by uid %lu", id,
			    (unsigned long)who.uid);
		} else if (r == -3) {
			error("run %s not ended: cannot write the state "
			    "directory's runs.json", id);
			control_error(c, 500, "run '%s' could not be written "
			    "down as ended: it stays (the proxy's log says "
			    "more)", id);
			return;
		}
	} else if ((body = evbuffer_new()) != NULL) {
		if ((r = runs_json(c->p->runs, id, &who, body)) == 0)
			control_answer(c, 200, body);
		evbuffer_free(body);
		if (r == 0)
			return;
	} else
		r = -3;
	switch (r) {
	case 0:
		if ((body = evbuffer_new()) == NULL) {
			conn_close(c);
			return;
		}
		evbuffer_add_printf(body, "{\"" WIRE_RUN_ID "\":\"%s\","
		    "\"ended\":true}", id);
		control_answer(c, 200, body);
		evbuffer_free(body);
		return;
	case -1:
		control_error(c, 404, "no run '%s'", id);
		return;
	case -2:
		control_error(c, 403, "run '%s' is another user's: only its "
		    "owner, root and the proxy's user may see or end it", id);
		return;
	default:
		conn_close(c);
		return;
	}
}

/*
 * Whether the body is all there; 0 to wait for more, or when it was
 * refused.  Only POST /v1/runs has one.
 */
static int
control_body_ready(struct conn *c, const struct http_head *h, size_t avail)
{
	if (strcmp(h->method, "POST") != 0)
		return 1;
	if (h->chunked || h->content_length < 0) {
		control_error(c, 411, "a run registration needs a "
		    "Content-Length");
		return 0;
	}
	if (h->content_length > RUNS_BODY_MAX ||
	    h->len + (size_t)h->content_length > c->p->cfg.head_max) {
		control_error(c, 413, "the run registration is larger than %d "
		    "bytes", RUNS_BODY_MAX);
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
	static const char runs[] = WIRE_RUNS_PATH;
	const size_t rlen = sizeof(runs) - 1;
	char id[RUN_ID_MAX];
	const char *m = h->method;

	conn_req_begin(c, &conn_way_control, "control");
	if (c->peer_uid == (uid_t)-1) {
		control_error(c, 403, "the kernel did not say who is asking "
		    "(SO_PEERCRED)");
		return;
	}
	if (!control_body_ready(c, h, avail))
		return;
	if (h->target_len == rlen && memcmp(h->target, runs, rlen) == 0) {
		if (strcmp(m, "POST") == 0)
			control_register(c, h);
		else if (strcmp(m, "GET") == 0)
			control_run(c, m, NULL);
		else
			control_error(c, 405, "%s " WIRE_RUNS_PATH ": only GET "
			    "and POST", m);
		return;
	}
	if (h->target_len > rlen + 1 && memcmp(h->target, runs, rlen) == 0 &&
	    h->target[rlen] == '/') {
		if (!runs_id_valid(h->target + rlen + 1,
		    h->target_len - rlen - 1)) {
			control_error(c, 404, "not a run id: 1 to %d letters, "
			    "digits, '-', '_' or '.'", RUN_ID_MAX - 1);
			return;
		}
		memcpy(id, h->target + rlen + 1, h->target_len - rlen - 1);
		id[h->target_len - rlen - 1] = '\0';
		if (strcmp(m, "GET") == 0 || strcmp(m, "DELETE") == 0)
			control_run(c, m, id);
		else
			control_error(c, 405, "%s " WIRE_RUNS_PATH "/%s: only GET "
			    "and DELETE", m, id);
		return;
	}
	control_error(c, 404, "the control API serves " WIRE_RUNS_PATH " and "
	    WIRE_RUNS_PATH "/RUN (intutic-proxy(8))");
}

const struct conn_way conn_way_control = {
	.name = "control",
	.listeners = CONN_LISTEN_CONTROL,
	.claims = control_claims,
	.request = control_request,
	.dialled = NULL,	/* it never dials */
};
