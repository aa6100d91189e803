/*
 * runrec.c — runs as JSON objects, read with the one YAML/JSON reader in
 * JSON mode (see runrec.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "runrec.h"
#include "wire.h"
#include "yread.h"

enum run_key { RK_RUN, RK_UID, RK_PID, RK_PID_START, RK_REGISTERED,
    RK_COMMAND, RK_PROJECT, RK_MAC, RK_POLICY, RK_GENERATION, RK_REQUESTS,
    RK_DENIALS, RK_BYTES_UP, RK_BYTES_DOWN, RK_LAST_DENIALS, RK_ADDR,
    RK_COUNT };

static const char *const run_keys[RK_COUNT] = {
	[RK_RUN] = WIRE_RUN_ID,
	[RK_UID] = WIRE_RUN_UID,
	[RK_PID] = WIRE_RUN_PID,
	[RK_PID_START] = WIRE_RUN_PID_START,
	[RK_REGISTERED] = WIRE_RUN_REGISTERED,
	[RK_COMMAND] = WIRE_RUN_COMMAND,
	[RK_PROJECT] = WIRE_RUN_PROJECT,
	[RK_MAC] = WIRE_RUN_MAC,
	[RK_POLICY] = WIRE_RUN_POLICY,
	[RK_GENERATION] = WIRE_RUN_GENERATION,
	[RK_REQUESTS] = WIRE_RUN_REQUESTS,
	[RK_DENIALS] = WIRE_RUN_DENIALS,
	[RK_BYTES_UP] = WIRE_RUN_BYTES_UP,
	[RK_BYTES_DOWN] = WIRE_RUN_BYTES_DOWN,
	[RK_LAST_DENIALS] = WIRE_RUN_LAST_DENIALS,
	[RK_ADDR] = WIRE_RUN_ADDR,
};

/* The current event as a number (null: -1 when null_ok). */
static int
run_number(struct yread *p, const char *key, int null_ok, long long *v)
{
	const yaml_event_t *ev = &p->ev;
	const char *s = (const char *)ev->data.scalar.value;
	char q[YREAD_QUOTE_BUF], *end;

	if (null_ok && yread_is_null(p)) {
		*v = -1;
		return 0;
	}
	if (ev->type == YAML_SCALAR_EVENT &&
	    ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	    ev->data.scalar.length > 0) {
		errno = 0;
		*v = strtoll(s, &end, 10);
		if (errno == 0 && end == s + ev->data.scalar.length && *v >= 0)
			return 0;
	}
	return yread_fail(p, &ev->start_mark, "'%s' is %s: expected a "
	    "number", key, yread_describe(p, q, sizeof(q)));
}

/* The current event as a string into buf (null: "" when null_ok). */
static int
run_text(struct yread *p, const char *key, int null_ok, char *buf,
    size_t len)
{
	const yaml_event_t *ev = &p->ev;

	if (null_ok && yread_is_null(p)) {
		buf[0] = '\0';
		return 0;
	}
	if (yread_string(p, key, "a string") != 0)
		return -1;
	if (ev->data.scalar.length >= len)
		return yread_fail(p, &ev->start_mark, "'%s' is longer than %zu "
		    "bytes", key, len - 1);
	memcpy(buf, ev->data.scalar.value, ev->data.scalar.length);
	buf[ev->data.scalar.length] = '\0';
	return 0;
}

/* The current event as a policy's text, malloc'd (null: NULL). */
static int
run_policy_text(struct yread *p, char **out)
{
	const yaml_event_t *ev = &p->ev;
	size_t len;

	if (yread_is_null(p))
		return 0;
	if (yread_string(p, WIRE_RUN_POLICY, "a string") != 0)
		return -1;
	len = ev->data.scalar.length;
	if (len > RUNREC_POLICY_MAX ||
	    memchr(ev->data.scalar.value, '\0', len) != NULL)
		return yread_fail(p, &ev->start_mark, "'" WIRE_RUN_POLICY "' is "
		    "longer than %d bytes, or holds a NUL", RUNREC_POLICY_MAX);
	if ((*out = strndup((const char *)ev->data.scalar.value, len)) ==
	    NULL)
		return yread_fail(p, NULL, "out of memory");
	return 0;
}

/* The current event is of `type`: 0, else "found ...: expected WHAT". */
static int
run_is(struct yread *p, yaml_event_type_t type, const char *what)
{
	char q[YREAD_QUOTE_BUF];

	if (p->ev.type == type)
		return 0;
	return yread_fail(p, &p->ev.start_mark, "found %s: expected %s",
	    yread_describe(p, q, sizeof(q)), what);
}

/* One denial: its object, from its start event (current) to its end. */
static int
run_denial(struct yread *p, struct runrec_denial *d)
{
	static const char *const keys[] = { WIRE_DENIAL_TIME,
	    WIRE_DENIAL_HOST, WIRE_DENIAL_PORT, WIRE_DENIAL_REASON,
	    WIRE_DENIAL_RULE };
	char other[YREAD_QUOTE_BUF];
	int k, ret;

	if (run_is(p, YAML_MAPPING_START_EVENT, "a denial (an object)") != 0)
		return -1;
	for (;;) {
		if (yread_next(p) != 0)
			return -1;
		if (p->ev.type == YAML_MAPPING_END_EVENT)
			return 0;
		if ((k = yread_key(p, keys, 5, other, sizeof(other))) < 0 ||
		    yread_next(p) != 0)
			return -1;
		switch (k) {
		case 0:
			ret = run_number(p, keys[k], 0, &d->time);
			break;
		case 1:
			ret = run_text(p, keys[k], 0, d->host, sizeof(d->host));
			break;
		case 2:
			ret = run_number(p, keys[k], 0, &d->port);
			break;
		case 3:
			ret = run_text(p, keys[k], 0, d->reason,
			    sizeof(d->reason));
			break;
		case 4:
			ret = run_text(p, keys[k], 1, d->rule, sizeof(d->rule));
			break;
		default:
			ret = yread_skip(p);
			break;
		}
		if (ret != 0)
			return -1;
	}
}

/*
 * "last_denials": an array of them, from its start event (current) to its
 * end; the first RUNREC_DENIALS_MAX kept.
 */
static int
run_denials(struct yread *p, struct runrec *r)
{
	struct runrec_denial spare;

	if (run_is(p, YAML_SEQUENCE_START_EVENT, "an array of denials") != 0)
		return -1;
	if ((r->denied = calloc(RUNREC_DENIALS_MAX, sizeof(*r->denied))) ==
	    NULL)
		return yread_fail(p, NULL, "out of memory");
	for (;;) {
		if (yread_next(p) != 0)
			return -1;
		if (p->ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		memset(&spare, 0, sizeof(spare));
		if (run_denial(p, r->ndenied < RUNREC_DENIALS_MAX ?
		    &r->denied[r->ndenied] : &spare) != 0)
			return -1;
		if (r->ndenied < RUNREC_DENIALS_MAX)
			r->ndenied++;
	}
}

/* One run: its object, from its start event (current) to its end. */
static int
run_map(struct yread *p, void *arg)
{
	struct runrec *r = arg;
	char other[YREAD_QUOTE_BUF];
	unsigned int seen = 0;
	int k, ret;

	memset(r, 0, sizeof(*r));
	r->pid = -1;
	r->pid_start = -1;
	r->generation = r->requests = r->denials = -1;
	r->bytes_up = r->bytes_down = -1;
	for (;;) {
		if (yread_next(p) != 0)
			return -1;
		if (p->ev.type == YAML_MAPPING_END_EVENT)
			break;
		if ((k = yread_key(p, run_keys, RK_COUNT, other,
		    sizeof(other))) < 0 || yread_next(p) != 0)
			return -1;
		if (k == RK_COUNT) {		/* a newer version's: skipped */
			if (yread_skip(p) != 0)
				return -1;
			continue;
		}
		if (seen & (1u << k))
			return yread_fail(p, &p->ev.start_mark, "'%s' is given "
			    "twice", run_keys[k]);
		seen |= 1u << k;
		switch ((enum run_key)k) {
		case RK_RUN:
			ret = run_text(p, run_keys[k], 0, r->id, sizeof(r->id));
			break;
		case RK_UID:
			ret = run_number(p, run_keys[k], 0, &r->uid);
			break;
		case RK_PID:
			ret = run_number(p, run_keys[k], 1, &r->pid);
			break;
		case RK_PID_START:
			ret = run_number(p, run_keys[k], 0, &r->pid_start);
			break;
		case RK_MAC:
			ret = run_text(p, run_keys[k], 0, r->mac,
			    sizeof(r->mac));
			break;
		case RK_REGISTERED:
			ret = run_number(p, run_keys[k], 0, &r->registered);
			break;
		case RK_COMMAND:
			ret = run_text(p, run_keys[k], 0, r->command,
			    sizeof(r->command));
			break;
		case RK_PROJECT:
			ret = run_text(p, run_keys[k], 1, r->project,
			    sizeof(r->project));
			break;
		case RK_POLICY:
			ret = run_policy_text(p, &r->policy);
			break;
		case RK_GENERATION:
			ret = run_number(p, run_keys[k], 0, &r->generation);
			break;
		case RK_REQUESTS:
			ret = run_number(p, run_keys[k], 0, &r->requests);
			break;
		case RK_DENIALS:
			ret = run_number(p, run_keys[k], 0, &r->denials);
			break;
		case RK_BYTES_UP:
			ret = run_number(p, run_keys[k], 0, &r->bytes_up);
			break;
		case RK_BYTES_DOWN:
			ret = run_number(p, run_keys[k], 0, &r->bytes_down);
			break;
		case RK_LAST_DENIALS:
			ret = run_denials(p, r);
			break;
		case RK_ADDR:
			ret = run_text(p, run_keys[k], 1, r->addr,
			    sizeof(r->addr));
			break;
		default:
			ret = -1;
			break;
		}
		if (ret != 0)
			return -1;
	}
	if (!(seen & (1u << RK_RUN)))
		return yread_fail(p, &p->ev.start_mark, "a run without its "
		    "\"" WIRE_RUN_ID "\"");
	return 0;
}

struct run_list {
	struct runrec	*runs;
	size_t			 n;
	size_t			 cap;
};

/* {"runs":[...]}: each run of the array, other keys skipped. */
static int
list_map(struct yread *p, void *arg)
{
	struct run_list *l = arg;
	struct runrec *grown;
	char other[YREAD_QUOTE_BUF], q[YREAD_QUOTE_BUF];
	static const char *const keys[] = { WIRE_RUNS_LIST };
	int k;

	for (;;) {
		if (yread_next(p) != 0)
			return -1;
		if (p->ev.type == YAML_MAPPING_END_EVENT)
			return 0;
		if ((k = yread_key(p, keys, 1, other, sizeof(other))) < 0)
			return -1;
		if (k == 1) {
			if (yread_next(p) != 0 || yread_skip(p) != 0)
				return -1;
			continue;
		}
		if (yread_expect(p, YAML_SEQUENCE_START_EVENT, "an array of "
		    "runs") != 0)
			return -1;
		for (;;) {
			if (yread_next(p) != 0)
				return -1;
			if (p->ev.type == YAML_SEQUENCE_END_EVENT)
				break;
			if (p->ev.type != YAML_MAPPING_START_EVENT)
				return yread_fail(p, &p->ev.start_mark, "found "
				    "%s: expected a run (an object)",
				    yread_describe(p, q, sizeof(q)));
			if (l->n == l->cap) {
				l->cap = l->cap ? l->cap * 2 : 16;
				if ((grown = reallocarray(l->runs, l->cap,
				    sizeof(*l->runs))) == NULL)
					return yread_fail(p, NULL, "out of "
					    "memory");
				l->runs = grown;
				memset(l->runs + l->n, 0, (l->cap - l->n) *
				    sizeof(*l->runs));
			}
			if (run_map(p, &l->runs[l->n]) != 0)
				return -1;
			l->n++;
		}
	}
}

int
runrec_parse(const char *name, const char *answer, size_t len, int list,
    struct runrec **runs, size_t *n, char *why, size_t whylen)
{
	struct run_list l = { NULL, 0, 0 };
	struct yread p;
	int r;

	*runs = NULL;
	*n = 0;
	yread_init(&p, name, YREAD_TEXT, 1, answer, len, why, whylen);
	if (list)
		r = yread_run(&p, list_map, &l);
	else if ((l.runs = calloc(1, sizeof(*l.runs))) == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	} else if ((r = yread_run(&p, run_map, l.runs)) == 0)
		l.n = 1;
	if (r != 0) {
		/* the run being read when it failed may hold a policy */
		runrec_free(l.runs, l.n < l.cap || !list ? l.n + 1 : l.n);
		return -1;
	}
	*runs = l.runs;
	*n = l.n;
	return 0;
}

void
runrec_free(struct runrec *runs, size_t n)
{
	size_t i;

	if (runs == NULL)
		return;
	for (i = 0; i < n; i++) {
		free(runs[i].policy);
		free(runs[i].denied);
	}
	free(runs);
}
