/*
 * runs.c — the registered runs (see runs.h).
 *
 * A ring of RUNS_MAX entries under one lock: a registration takes the next
 * slot (forgetting the oldest run when the ring is full); a check scans
 * the used slots.  Runs are few, and a check happens once per request that
 * carries credentials.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "yread.h"
#include "wire.h"

#include "runs.h"

struct run {
	char	 id[RUN_ID_MAX];
	char	 token[RUN_TOKEN_MAX + 1];
	size_t	 tokenlen;
};

struct runs {
	pthread_mutex_t	 lock;
	struct run	*ring;		/* RUNS_MAX */
	size_t		 next;		/* the slot the next run takes */
	size_t		 used;
};

struct runs *
runs_new(void)
{
	struct runs *r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	if ((r->ring = calloc(RUNS_MAX, sizeof(*r->ring))) == NULL) {
		free(r);
		return NULL;
	}
	pthread_mutex_init(&r->lock, NULL);
	return r;
}

void
runs_free(struct runs *r)
{
	if (r == NULL)
		return;
	explicit_bzero(r->ring, RUNS_MAX * sizeof(*r->ring));
	free(r->ring);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

int
runs_id_valid(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len >= RUN_ID_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
		    ch == '.'))
			return 0;
	}
	return 1;
}

static int
token_valid(const char *s, size_t len)
{
	size_t i;

	if (len < RUN_TOKEN_MIN || len > RUN_TOKEN_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* Printable text without control bytes, quotes or backslashes. */
static int
text_valid(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

enum reg_key { KEY_NONE, KEY_RUN, KEY_TOKEN, KEY_COMMAND, KEY_PROJECT,
    KEY_PID };

/* Stores the value of `key`; 0, or -1 and why. */
static int
reg_value(struct run_reg *reg, enum reg_key key, const char *v, size_t len,
    int is_null, char *why, size_t whylen)
{
	char *end;
	long long pid;

	switch (key) {
	case KEY_RUN:
		if (is_null || !runs_id_valid(v, len)) {
			snprintf(why, whylen, "\"run\" must be 1 to %d letters, "
			    "digits, '-', '_' or '.'", RUN_ID_MAX - 1);
			return -1;
		}
		memcpy(reg->id, v, len);
		reg->id[len] = '\0';
		return 0;
	case KEY_TOKEN:
		if (is_null || !token_valid(v, len)) {
			snprintf(why, whylen, "\"token\" must be %d to %d "
			    "lowercase hex digits", RUN_TOKEN_MIN, RUN_TOKEN_MAX);
			return -1;
		}
		memcpy(reg->token, v, len);
		reg->token[len] = '\0';
		return 0;
	case KEY_COMMAND:
		if (is_null || len == 0 || len >= sizeof(reg->command) ||
		    !text_valid(v, len)) {
			snprintf(why, whylen, "\"command\" must be a name of 1 "
			    "to %zu printable bytes", sizeof(reg->command) - 1);
			return -1;
		}
		memcpy(reg->command, v, len);
		reg->command[len] = '\0';
		return 0;
	case KEY_PROJECT:
		if (is_null) {
			reg->project[0] = '\0';
			return 0;
		}
		if (len == 0 || len >= sizeof(reg->project) ||
		    !text_valid(v, len)) {
			snprintf(why, whylen, "\"project\" must be null or a "
			    "path of 1 to %zu printable bytes",
			    sizeof(reg->project) - 1);
			return -1;
		}
		memcpy(reg->project, v, len);
		reg->project[len] = '\0';
		return 0;
	case KEY_PID:
		if (is_null) {
			reg->pid = -1;
			return 0;
		}
		errno = 0;
		pid = strtoll(v, &end, 10);
		if (len == 0 || end != v + len || errno != 0 || pid <= 0) {
			snprintf(why, whylen, "\"pid\" must be null or a "
			    "positive number");
			return -1;
		}
		reg->pid = pid;
		return 0;
	case KEY_NONE:
		break;
	}
	return 0;
}

/* The keys: reg_keys[i] is enum reg_key i + 1 (KEY_NONE has none). */
static const char *const reg_keys[] = {
	WIRE_RUN_ID,		/* KEY_RUN */
	WIRE_RUN_TOKEN,		/* KEY_TOKEN */
	WIRE_RUN_COMMAND,	/* KEY_COMMAND */
	WIRE_RUN_PROJECT,	/* KEY_PROJECT */
	WIRE_RUN_PID,		/* KEY_PID */
};
#define REG_KEYS	((int)(sizeof(reg_keys) / sizeof(reg_keys[0])))

/* The object's pairs: known keys once, each a scalar; others skipped. */
static int
reg_map(struct yread *p, void *arg)
{
	struct run_reg *reg = arg;
	const yaml_event_t *ev = &p->ev;
	char other[YREAD_QUOTE_BUF], why[256];
	enum reg_key key;
	unsigned int seen = 0;
	int k;

	for (;;) {
		if (yread_next(p) != 0)
			return -1;
		if (ev->type == YAML_MAPPING_END_EVENT)
			break;
		if ((k = yread_key(p, reg_keys, REG_KEYS, other,
		    sizeof(other))) < 0)
			return -1;
		if (k == REG_KEYS) {
			if (yread_next(p) != 0 || yread_skip(p) != 0)
				return -1;
			continue;
		}
		key = (enum reg_key)(k + 1);
		if (seen & (1u << key))
			return yread_fail(p, &ev->start_mark, "\"%s\" is given "
			    "twice", reg_keys[k]);
		seen |= 1u << key;
		if (yread_next(p) != 0)
			return -1;
		if (ev->type != YAML_SCALAR_EVENT)
			return yread_fail(p, &ev->start_mark, "\"%s\" is not "
			    "a string, a number or null", reg_keys[k]);
		if (reg_value(reg, key, (const char *)ev->data.scalar.value,
		    ev->data.scalar.length, yread_is_null(p), why,
		    sizeof(why)) != 0)
			return yread_fail(p, &ev->start_mark, "%s", why);
	}
	if (!(seen & (1u << KEY_RUN)) || !(seen & (1u << KEY_TOKEN)) ||
	    !(seen & (1u << KEY_COMMAND)))
		return yread_fail(p, NULL, "\"run\", \"token\" and \"command\" "
		    "are required");
	return 0;
}

/*
 * One JSON object, read with the one YAML/JSON event reader in JSON mode
 * (common/yread.h): anything nested where a scalar is expected, repeated
 * or missing is refused; keys it does not know are skipped.
 */
int
runs_parse(const char *body, size_t len, struct run_reg *reg, char *why,
    size_t whylen)
{
	struct yread p;
	int r;

	memset(reg, 0, sizeof(*reg));
	reg->pid = -1;
	if (len > RUNS_BODY_MAX) {
		snprintf(why, whylen, "the registration is larger than %d bytes",
		    RUNS_BODY_MAX);
		return -1;
	}
	yread_init(&p, "the registration", YREAD_TEXT, 1, body, len, why,
	    whylen);
	r = yread_run(&p, reg_map, reg);
	if (r != 0)
		explicit_bzero(reg->token, sizeof(reg->token));
	return r;
}

int
runs_add(struct runs *r, const struct run_reg *reg)
{
	struct run *slot;
	size_t i;

	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->used; i++)
		if (strcmp(r->ring[i].id, reg->id) == 0) {
			pthread_mutex_unlock(&r->lock);
			return -1;
		}
	slot = &r->ring[r->next];
	snprintf(slot->id, sizeof(slot->id), "%s", reg->id);
	snprintf(slot->token, sizeof(slot->token), "%s", reg->token);
	slot->tokenlen = strlen(slot->token);
	r->next = (r->next + 1) % RUNS_MAX;
	if (r->used < RUNS_MAX)
		r->used++;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

/* Equal, in time that depends on the lengths only. */
static int
same_secret(const char *a, size_t alen, const char *b, size_t blen)
{
	unsigned char diff = 0;
	size_t i;

	if (alen != blen)
		return 0;
	for (i = 0; i < alen; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return diff == 0;
}

int
runs_check(struct runs *r, const char *id, size_t idlen, const char *token,
    size_t tokenlen)
{
	size_t i;
	int ok = 0;

	if (!runs_id_valid(id, idlen))
		return 0;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->used; i++) {
		const struct run *run = &r->ring[i];

		if (strlen(run->id) == idlen &&
		    memcmp(run->id, id, idlen) == 0) {
			ok = same_secret(run->token, run->tokenlen, token,
			    tokenlen);
			break;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return ok;
}
