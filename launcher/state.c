/*
 * state.c — reading the proxy's state file (see state.h).
 */
#include "config.h"

#include <sys/socket.h>

#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "jsonobj.h"
#include "paths.h"
#include "hostfw.h"
#include "state.h"
#include "wire.h"

enum state_key {
	STATE_KEY_PID,
	STATE_KEY_PORT,
	STATE_KEY_BIND,
	STATE_KEY_RULES,
	STATE_KEY_AUDIT,
	STATE_KEY_STARTED,
	STATE_KEY_WORKERS,
	STATE_KEY_VERSION,
	STATE_KEY_CONTROL,
	STATE_KEY_DNS,
	STATE_KEY_TRANSPARENT,
	STATE_KEY_COUNT
};

static const char *const state_key_names[STATE_KEY_COUNT] = {
	[STATE_KEY_PID] = WIRE_STATE_PID,
	[STATE_KEY_PORT] = WIRE_STATE_PORT,
	[STATE_KEY_BIND] = WIRE_STATE_BIND,
	[STATE_KEY_RULES] = WIRE_STATE_RULES,
	[STATE_KEY_AUDIT] = WIRE_STATE_AUDIT,
	[STATE_KEY_STARTED] = WIRE_STATE_STARTED,
	[STATE_KEY_WORKERS] = WIRE_STATE_WORKERS,
	[STATE_KEY_VERSION] = WIRE_STATE_VERSION,
	[STATE_KEY_CONTROL] = WIRE_STATE_CONTROL,
	[STATE_KEY_DNS] = WIRE_STATE_DNS,
	[STATE_KEY_TRANSPARENT] = WIRE_STATE_TRANSPARENT,
};

/* What every proxy writes; the others are read when present. */
#define STATE_KEYS_REQUIRED \
	((1U << STATE_KEY_PID) | (1U << STATE_KEY_PORT) | \
	(1U << STATE_KEY_BIND) | (1U << STATE_KEY_RULES) | \
	(1U << STATE_KEY_STARTED))

static int
state_bind(struct jsonobj_ctx *ctx, struct proxy_state *st)
{
	unsigned char a[16];
	size_t i;

	if (jsonobj_strings(ctx, "bind", &st->bind[0][0],
	    sizeof(st->bind[0]), STATE_BINDS_MAX, &st->nbind) != 0)
		return -1;
	if (st->nbind == 0)
		return jsonobj_error(ctx, "'bind' is empty");
	/* status connects to it: an address, never a name. */
	for (i = 0; i < st->nbind; i++)
		if (inet_pton(AF_INET, st->bind[i], a) != 1 &&
		    inet_pton(AF_INET6, st->bind[i], a) != 1)
			return jsonobj_error(ctx, "'bind' holds '%s', not "
			    "an IP address", st->bind[i]);
	return 0;
}

/* A list of "ADDR:PORT" listeners (the filter's, the transparent ones). */
static int
state_listens(struct jsonobj_ctx *ctx, const char *name,
    char (*list)[STATE_ADDR_MAX], size_t *n)
{
	struct hostfw_net net;
	size_t i;

	if (jsonobj_strings(ctx, name, &list[0][0], sizeof(list[0]),
	    STATE_LISTENS_MAX, n) != 0)
		return -1;
	for (i = 0; i < *n; i++)
		if (hostfw_net_parse(list[i], 1, &net) != 0)
			return jsonobj_error(ctx, "'%s' holds '%s', not an "
			    "ADDR:PORT", name, list[i]);
	return 0;
}

static int
state_value(struct jsonobj_ctx *ctx, int k, void *out)
{
	struct proxy_state *st = out;
	const char *name = state_key_names[k];
	long long n;

	switch ((enum state_key)k) {
	case STATE_KEY_PID:
		if (jsonobj_number(ctx, name, 1, INT_MAX, &n) != 0)
			return -1;
		st->pid = (pid_t)n;
		return 0;
	case STATE_KEY_PORT:
		if (jsonobj_number(ctx, name, 1, 65535, &n) != 0)
			return -1;
		st->port = (unsigned int)n;
		return 0;
	case STATE_KEY_BIND:
		return state_bind(ctx, st);
	case STATE_KEY_RULES:
		return jsonobj_string(ctx, name, st->rules,
		    sizeof(st->rules));
	case STATE_KEY_AUDIT:
		if (jsonobj_is_null(ctx)) {
			st->audit[0] = '\0';
			return 0;
		}
		return jsonobj_string(ctx, name, st->audit,
		    sizeof(st->audit));
	case STATE_KEY_STARTED:
		if (jsonobj_number(ctx, name, 0, 999999999999LL, &n) != 0)
			return -1;
		st->started = n;
		return 0;
	case STATE_KEY_WORKERS:
		if (jsonobj_number(ctx, name, 1, INT_MAX, &n) != 0)
			return -1;
		st->workers = (int)n;
		return 0;
	case STATE_KEY_VERSION:
		return jsonobj_string(ctx, name, st->version,
		    sizeof(st->version));
	case STATE_KEY_CONTROL:
		return jsonobj_string(ctx, name, st->control,
		    sizeof(st->control));
	case STATE_KEY_DNS:
		return state_listens(ctx, name, st->dns, &st->ndns);
	case STATE_KEY_TRANSPARENT:
		return state_listens(ctx, name, st->transparent,
		    &st->ntransparent);
	case STATE_KEY_COUNT:
		break;
	}
	return jsonobj_error(ctx, "unexpected key");
}

static const struct jsonobj_schema state_schema = {
	.what = "state file",
	.keys = state_key_names,
	.nkeys = STATE_KEY_COUNT,
	.required = STATE_KEYS_REQUIRED,
	.max_bytes = STATE_FILE_MAX,
	.value = state_value,
};

static int
state_read_file(const char *path, struct proxy_state *st, char *err,
    size_t errlen)
{
	int r;

	memset(st, 0, sizeof(*st));
	if (snprintf(st->path, sizeof(st->path), "%s", path) >=
	    (int)sizeof(st->path)) {
		snprintf(err, errlen, "state file path too long: '%s'", path);
		return STATE_INVALID;
	}
	r = jsonobj_read(&state_schema, path, st, err, errlen);
	if (r != JSONOBJ_OK) {
		/* Out-parameters are written only on success. */
		memset(st, 0, sizeof(*st));
		snprintf(st->path, sizeof(st->path), "%s", path);
	}
	return r == JSONOBJ_OK ? STATE_OK : r == JSONOBJ_MISSING ?
	    STATE_MISSING : STATE_INVALID;
}

int
state_read(const char *dir, struct proxy_state *st, char *err, size_t errlen)
{
	char path[PATH_MAX];

	if (paths_state_file(dir, path, sizeof(path)) != 0) {
		memset(st, 0, sizeof(*st));
		snprintf(err, errlen, "state directory path too long: '%s'",
		    dir);
		return STATE_INVALID;
	}
	return state_read_file(path, st, err, errlen);
}

int
state_remove_stale(const struct proxy_state *st)
{
	struct proxy_state now;
	char err[STATE_ERROR_MAX];

	switch (state_read_file(st->path, &now, err, sizeof(err))) {
	case STATE_MISSING:
		return 0;
	case STATE_OK:
		if (now.pid != st->pid || now.started != st->started)
			return 0;	/* a proxy started since */
		break;
	default:
		return 0;	/* rewritten since: not ours to remove */
	}
	if (unlink(st->path) == -1 && errno != ENOENT)
		return -1;
	return 0;
}

const char *
state_listen_text(const struct proxy_state *st, char *buf, size_t len)
{
	size_t i, off = 0;
	int n;

	if (len > 0)
		buf[0] = '\0';
	for (i = 0; i < st->nbind && off < len; i++) {
		n = snprintf(buf + off, len - off,
		    strchr(st->bind[i], ':') != NULL ? "%s[%s]:%u" : "%s%s:%u",
		    i > 0 ? ", " : "", st->bind[i], st->port);
		if (n < 0)
			break;
		off += (size_t)n;
	}
	return buf;
}
