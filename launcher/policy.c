/*
 * policy.c — a run's policy on the launcher's side (see policy.h).
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "jsonw.h"
#include "policy.h"
#include "rules.h"
#include "runrec.h"
#include "wire.h"
#include "yread.h"

/* The keys of a rule document (intutic-rules(5)) a policy has. */
#define POLICY_KEY_VERSION	"version"
#define POLICY_KEY_PORTS	"ports"
#define POLICY_KEY_ALLOW	"allow"
#define POLICY_KEY_DENY		"deny"
#define POLICY_VERSION		"1"

/* What the proxy's rules are named, PATH its rule file. */
#define POLICY_CEILING_NAME	"the proxy's rules (%s)"
/* What a document of one entry is named while it is checked. */
#define POLICY_ENTRY_NAME	"the entry"
/* Bytes of a document besides its ports and entries: keys, brackets. */
#define POLICY_DOC_FRAME	128

static const char *const policy_kind_key[2] = {
	[POLICY_ALLOW] = POLICY_KEY_ALLOW,
	[POLICY_DENY] = POLICY_KEY_DENY,
};

struct policy_doc {
	uint16_t	 ports[RULES_PORTS_MAX];
	size_t		 nports;
	char		**entries[2];	/* [POLICY_ALLOW], [POLICY_DENY] */
	size_t		 n[2];
	size_t		 cap[2];
};

struct policy_doc *
policy_doc_new(const struct rules *ports_from)
{
	struct policy_doc *d;

	if ((d = calloc(1, sizeof(*d))) == NULL)
		return NULL;
	if (ports_from != NULL)
		d->nports = rules_default_ports(ports_from, d->ports);
	return d;
}

void
policy_doc_free(struct policy_doc *d)
{
	size_t i, k;

	if (d == NULL)
		return;
	for (k = 0; k < 2; k++) {
		for (i = 0; i < d->n[k]; i++)
			free(d->entries[k][i]);
		free(d->entries[k]);
	}
	free(d);
}

/* The index of the entry of kind k with that text, or d->n[k]. */
static size_t
policy_doc_find(const struct policy_doc *d, int k, const char *text)
{
	size_t i;

	for (i = 0; i < d->n[k]; i++)
		if (strcmp(d->entries[k][i], text) == 0)
			break;
	return i;
}

int
policy_doc_add(struct policy_doc *d, int kind, const char *text)
{
	int k = kind == POLICY_DENY;
	size_t cap;
	char **grown, *copy;

	if (policy_doc_find(d, k, text) < d->n[k])
		return 0;
	if (d->n[k] >= POLICY_ENTRIES_MAX) {
		errno = E2BIG;
		return -1;
	}
	if (d->n[k] == d->cap[k]) {
		cap = d->cap[k] == 0 ? 16 : 2 * d->cap[k];
		if ((grown = reallocarray(d->entries[k], cap,
		    sizeof(*grown))) == NULL)
			return -1;
		d->entries[k] = grown;
		d->cap[k] = cap;
	}
	if ((copy = strdup(text)) == NULL)
		return -1;
	d->entries[k][d->n[k]++] = copy;
	return 1;
}

int
policy_doc_add_set(struct policy_doc *d, const struct rules *set)
{
	const struct rules_entry *e;
	size_t i;

	for (i = 0; i < rules_count(set); i++) {
		if ((e = rules_entry_at(set, i)) == NULL)
			break;
		if (policy_doc_add(d, rules_entry_is_deny(e) ? POLICY_DENY :
		    POLICY_ALLOW, rules_entry_text(e)) < 0)
			return -1;
	}
	return 0;
}

int
policy_doc_remove(struct policy_doc *d, int kind, const char *text)
{
	int k = kind == POLICY_DENY;
	size_t i = policy_doc_find(d, k, text);

	if (i == d->n[k])
		return 0;
	free(d->entries[k][i]);
	memmove(&d->entries[k][i], &d->entries[k][i + 1],
	    (d->n[k] - i - 1) * sizeof(*d->entries[k]));
	d->n[k]--;
	return 1;
}

int
policy_doc_has(const struct policy_doc *d, int kind, const char *text)
{
	int k = kind == POLICY_DENY;

	return policy_doc_find(d, k, text) < d->n[k];
}

size_t
policy_doc_count(const struct policy_doc *d, int kind)
{
	return d->n[kind == POLICY_DENY];
}

int
policy_doc_text(const struct policy_doc *d, char **out, size_t *len)
{
	char *buf, num[16];
	size_t cap = POLICY_DOC_FRAME + d->nports * sizeof(num), used = 0;
	size_t i, k;
	int r = 0;

	*out = NULL;
	*len = 0;
	for (k = 0; k < 2; k++)
		for (i = 0; i < d->n[k]; i++)
			cap += strlen(d->entries[k][i]) * JSONW_ESC_MAX + 16;
	if ((buf = malloc(cap)) == NULL)
		return -1;
	buf[0] = '\0';
	r |= jsonw_raw(buf, cap, &used,
	    "{\n  \"" POLICY_KEY_VERSION "\": " POLICY_VERSION ",\n");
	if (d->nports > 0) {
		r |= jsonw_raw(buf, cap, &used, "  \"" POLICY_KEY_PORTS "\": [");
		for (i = 0; i < d->nports; i++) {
			snprintf(num, sizeof(num), "%s%u", i > 0 ? ", " : "",
			    (unsigned int)d->ports[i]);
			r |= jsonw_raw(buf, cap, &used, num);
		}
		r |= jsonw_raw(buf, cap, &used, "],\n");
	}
	for (k = 0; k < 2; k++) {
		r |= jsonw_raw(buf, cap, &used, "  \"");
		r |= jsonw_raw(buf, cap, &used, policy_kind_key[k]);
		r |= jsonw_raw(buf, cap, &used, "\": [");
		for (i = 0; i < d->n[k]; i++) {
			r |= jsonw_raw(buf, cap, &used, i == 0 ? "\n    " :
			    ",\n    ");
			r |= jsonw_str(buf, cap, &used, d->entries[k][i]);
		}
		r |= jsonw_raw(buf, cap, &used, d->n[k] > 0 ? "\n  ]" : "]");
		r |= jsonw_raw(buf, cap, &used, k == 0 ? ",\n" : "\n}\n");
	}
	if (r != 0 || used > POLICY_TEXT_MAX) {
		/* r: cannot be, cap holds the most each part takes */
		free(buf);
		errno = r != 0 ? ENOMEM : EFBIG;
		return -1;
	}
	*out = buf;
	*len = used;
	return 0;
}

/* msg past `prefix` when it begins with it, else msg. */
static const char *
policy_skip(const char *msg, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(msg, prefix, n) == 0 ? msg + n : msg;
}

/* msg past "NAME:LINE: " when it begins so, else msg. */
static const char *
policy_skip_where(const char *msg, const char *name)
{
	const char *p = policy_skip(msg, name);

	if (p == msg || *p != ':' || p[1] < '0' || p[1] > '9')
		return msg;
	p += strspn(p + 1, "0123456789") + 1;
	return strncmp(p, ": ", 2) == 0 ? p + 2 : msg;
}

int
policy_entry_check(const struct rules *ceiling, const struct policy_doc *d,
    int kind, const char *entry, char *why, size_t whylen)
{
	char prefix[RULES_ERROR_MAX], msg[RULES_ERROR_MAX + 64], *text = NULL;
	struct policy_doc *one;
	struct rules_error err;
	struct rules *set = NULL;
	const char *kw = policy_kind_key[kind == POLICY_DENY];
	size_t len;
	int r = -1;

	if ((one = policy_doc_new(NULL)) == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if (d != NULL) {
		memcpy(one->ports, d->ports, sizeof(one->ports));
		one->nports = d->nports;
	}
	if (policy_doc_add(one, kind, entry) < 0 ||
	    policy_doc_text(one, &text, &len) != 0) {
		snprintf(why, whylen, "%s", errno == EFBIG ? "too long for a "
		    "run's policy" : "out of memory");
		goto out;
	}
	if (rules_load_text(POLICY_ENTRY_NAME, text, len, RULES_LOAD_POLICY,
	    &set, &err) != 0) {
		/* "allow entry 'a..b': empty label ...": the entry is named */
		snprintf(prefix, sizeof(prefix), "%s entry '%s': ", kw, entry);
		snprintf(why, whylen, "%s", policy_skip(err.msg, prefix));
		goto out;
	}
	if (kind == POLICY_ALLOW && ceiling != NULL &&
	    rules_tightens(ceiling, set, msg, sizeof(msg)) != 0) {
		/* "the entry:5: allow 'x': the operator's rules (...) ..." */
		snprintf(prefix, sizeof(prefix), "%s '%s': ", kw, entry);
		snprintf(why, whylen, "%s", policy_skip(policy_skip_where(msg,
		    POLICY_ENTRY_NAME), prefix));
		goto out;
	}
	r = 0;
 out:
	rules_free(set);
	free(text);
	policy_doc_free(one);
	return r;
}

int
policy_load(const char *id, const char *text, struct rules **out, char *why,
    size_t whylen)
{
	char name[RUNREC_ID_MAX + sizeof(WIRE_RUN_POLICY_NAME)];
	char msg[RULES_WHERE_MAX + RULES_ERROR_MAX + 8];
	struct rules_error err;

	*out = NULL;
	if (text == NULL)
		return 0;
	snprintf(name, sizeof(name), WIRE_RUN_POLICY_NAME, id);
	if (rules_load_text(name, text, strlen(text), RULES_LOAD_POLICY, out,
	    &err) != 0) {
		snprintf(why, whylen, "%s", rules_error_str(&err, msg,
		    sizeof(msg)));
		return -1;
	}
	return 0;
}

/*
 * What GET /v1/rules answers: the rule file's path, the rules, and where
 * each of their entries is in the operator's files.
 */
struct policy_answer {
	char	 path[RULES_PATH_MAX];
	char	*text;		/* malloc'd */
	size_t	 len;
	char	**where;	/* malloc'd, each too; NULL: not told */
	size_t	 nwhere;
};

/* "where": an array of "file:line" strings, into a. */
static int
policy_answer_where(struct yread *p, struct policy_answer *a)
{
	const yaml_event_t *ev = &p->ev;
	char q[YREAD_QUOTE_BUF], **grown;
	size_t cap = 0;

	if (a->where != NULL)
		return yread_skip(p);
	if (ev->type != YAML_SEQUENCE_START_EVENT)
		return yread_fail(p, &ev->start_mark, "found %s: expected '"
		    WIRE_RULES_WHERE "' an array of strings",
		    yread_describe(p, q, sizeof(q)));
	if ((a->where = calloc(1, sizeof(*a->where))) == NULL)
		return yread_fail(p, NULL, "out of memory");
	for (;;) {
		if (yread_next(p) != 0)
			return -1;
		if (ev->type == YAML_SEQUENCE_END_EVENT)
			return 0;
		if (yread_string(p, WIRE_RULES_WHERE, "a string") != 0)
			return -1;
		if (a->nwhere + 1 >= cap) {
			cap = cap ? cap * 2 : 64;
			if ((grown = reallocarray(a->where, cap,
			    sizeof(*grown))) == NULL)
				return yread_fail(p, NULL, "out of memory");
			a->where = grown;
		}
		if ((a->where[a->nwhere] = strndup((const char *)
		    ev->data.scalar.value, ev->data.scalar.length)) == NULL)
			return yread_fail(p, NULL, "out of memory");
		a->nwhere++;
	}
}

/* {"generation": N, "path": P, "rules": R}: P and R into arg. */
static int
policy_answer_map(struct yread *p, void *arg)
{
	static const char *const keys[] = { WIRE_RULES_FILE, WIRE_RULES_TEXT,
	    WIRE_RULES_WHERE };
	struct policy_answer *a = arg;
	const yaml_event_t *ev = &p->ev;
	char other[YREAD_QUOTE_BUF];
	size_t len;
	int k;

	while ((k = yread_pair(p, keys, 3, other, sizeof(other))) >= 0) {
		if (k == 3) {			/* the generation, and newer keys */
			if (yread_skip(p) != 0)
				return -1;
			continue;
		}
		if (k == 2) {
			if (policy_answer_where(p, a) != 0)
				return -1;
			continue;
		}
		if (yread_string(p, keys[k], "a string") != 0)
			return -1;
		len = ev->data.scalar.length;
		if (k == 0 && len >= sizeof(a->path))
			return yread_fail(p, &ev->start_mark, "'%s' is longer "
			    "than %zu bytes", keys[k], sizeof(a->path) - 1);
		if (k == 0) {
			memcpy(a->path, ev->data.scalar.value, len);
			a->path[len] = '\0';
		} else if (a->text == NULL) {
			if ((a->text = malloc(len + 1)) == NULL)
				return yread_fail(p, NULL, "out of memory");
			memcpy(a->text, ev->data.scalar.value, len);
			a->text[len] = '\0';
			a->len = len;
		}
	}
	if (k != YREAD_END)
		return -1;
	if (a->path[0] == '\0' || a->text == NULL)
		return yread_fail(p, &ev->start_mark, "'%s' or '%s' is missing",
		    keys[0], keys[1]);
	return 0;
}

int
policy_ceiling(const char *sock, struct rules **out, long *status,
    char *why, size_t whylen)
{
	struct policy_answer a;
	struct rules_error err;
	struct yread p;
	char name[RULES_PATH_MAX + sizeof(POLICY_CEILING_NAME)];
	char msg[RULES_WHERE_MAX + RULES_ERROR_MAX + 8], *answer = NULL;
	size_t i;
	int r = -1;

	*out = NULL;
	memset(&a, 0, sizeof(a));
	if (control_request(sock, "GET", WIRE_RULES_PATH, NULL, status, &answer,
	    why, whylen) != 0) {
		*status = 0;
		return -1;
	}
	if (*status != 200)
		goto out;
	yread_init(&p, "the proxy's answer to GET " WIRE_RULES_PATH,
	    YREAD_TEXT, 1, answer, strlen(answer), why, whylen);
	if (yread_run(&p, policy_answer_map, &a) != 0)
		goto out;
	snprintf(name, sizeof(name), POLICY_CEILING_NAME, a.path);
	if (rules_load_text(name, a.text, a.len, 0, out, &err) != 0) {
		/* a proxy of another version, whose rules this one cannot read */
		snprintf(why, whylen, "%s", rules_error_str(&err, msg,
		    sizeof(msg)));
		goto out;
	}
	/*
	 * Its entries named by their places in the operator's files, as the
	 * proxy names them; a proxy that does not tell leaves the dump's.
	 */
	if (a.where != NULL)
		(void)rules_set_where(*out, (const char *const *)a.where,
		    a.nwhere);
	r = 0;
 out:
	for (i = 0; i < a.nwhere; i++)
		free(a.where[i]);
	free(a.where);
	free(a.text);
	free(answer);
	return r;
}

int
policy_run(const char *sock, const char *id, struct runrec **rec,
    struct rules **set, long *status, char *why, size_t whylen)
{
	char path[RUNREC_ID_MAX + sizeof(WIRE_RUNS_PATH) + 1], *answer = NULL;
	size_t n = 0;
	int r = -1;

	*rec = NULL;
	*set = NULL;
	snprintf(path, sizeof(path), WIRE_RUNS_PATH "/%s", id);
	if (control_request(sock, "GET", path, NULL, status, &answer, why,
	    whylen) != 0) {
		*status = 0;
		return -1;
	}
	if (*status != 200)
		goto out;
	if (runrec_parse("the proxy's answer", answer, strlen(answer), 0, rec,
	    &n, why, whylen) != 0)
		goto out;
	if (policy_load(id, (*rec)->policy, set, why, whylen) != 0) {
		runrec_free(*rec, n);
		*rec = NULL;
		goto out;
	}
	r = 0;
 out:
	free(answer);
	return r;
}
