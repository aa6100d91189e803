/*
 * policy.h — a run's policy on the launcher's side.
 *
 * A policy is a rule document of intutic-rules(5) (version, ports, allow,
 * deny; never include, mode or providers) that narrows the operator's
 * rules for one run: the proxy decides each request of the run with
 * rules_decide_within(), the operator's rules (the ceiling) first.
 * `intutic exec` makes one from the project file and its --allow and
 * --deny entries and registers the run with it, `intutic runs allow|deny`
 * change one, `intutic rules test --run` decides with one.  What they need
 * of the proxy is read on its control socket: the operator's rules (GET
 * /v1/rules) and a run with its policy (GET /v1/runs/RUN).
 *
 * A document is written as JSON, one entry a line, so that the deciding
 * entry the proxy names ("run RUN's policy:LINE") is a line of its own.
 */
#ifndef INTUTIC_POLICY_H
#define INTUTIC_POLICY_H

#include <stddef.h>

#include "runrec.h"

#define POLICY_TEXT_MAX		RUNREC_POLICY_MAX  /* bytes the proxy takes */
/* Entries of one kind in a document: each takes 8 bytes of text at least. */
#define POLICY_ENTRIES_MAX	(POLICY_TEXT_MAX / 8)
#define POLICY_WHY_MAX		1024	/* bytes of a message */

/* The two kinds of entry, as rules_entry_is_deny() tells them. */
#define POLICY_ALLOW		0
#define POLICY_DENY		1

struct rules;
struct policy_doc;

/*
 * A new document with the `ports:` list of `ports_from` (NULL: none, which
 * leaves `ports` out and the language's default [443, 80] to apply; only
 * for checking an entry's form) and no entries.  NULL when out of memory.
 */
struct policy_doc	*policy_doc_new(const struct rules *ports_from);

/* Frees d; NULL does nothing. */
void	 policy_doc_free(struct policy_doc *d);

/*
 * Appends every allow and deny entry of `set`, as written, in the order
 * loaded: 0, or -1 with errno ENOMEM, or E2BIG past POLICY_ENTRIES_MAX of
 * a kind.
 */
int	 policy_doc_add_set(struct policy_doc *d, const struct rules *set);

/*
 * Appends `text` (copied) to the entries of `kind` (POLICY_ALLOW or
 * POLICY_DENY): 1; 0 when an entry of that kind has that text already; -1
 * with errno ENOMEM or E2BIG.
 */
int	 policy_doc_add(struct policy_doc *d, int kind, const char *text);

/* Removes the entry of `kind` whose text is `text`: 1, or 0 when none. */
int	 policy_doc_remove(struct policy_doc *d, int kind, const char *text);

/* Whether there is an entry of `kind` with that text: 1 or 0. */
int	 policy_doc_has(const struct policy_doc *d, int kind, const char *text);

/* How many entries of `kind` there are. */
size_t	 policy_doc_count(const struct policy_doc *d, int kind);

/*
 * The document as JSON text: {"version": 1, "ports": [...], "allow":
 * [...], "deny": [...]}, strings escaped by jsonw, an entry a line.  0
 * with *out (malloc'd, NUL-terminated; the caller's) and *len; or -1 with
 * *out NULL and errno ENOMEM, or EFBIG when it is longer than
 * POLICY_TEXT_MAX (the proxy would refuse it).
 */
int	 policy_doc_text(const struct policy_doc *d, char **out, size_t *len);

/*
 * Whether `entry` is an entry of the rule language of `kind`, and, when
 * `ceiling` is not NULL and it is an allow entry, whether it only narrows
 * `ceiling` on the ports of `d` (an entry that names none takes them; d
 * NULL: the language's default).  Decided by loading the document of d's
 * ports and that entry alone, as the proxy loads a policy, and by
 * rules_tightens().  0; else -1 with why: the loader's or
 * rules_tightens()'s message, without the document's name and line, and
 * without the entry again when it would start with it ("empty label (...)",
 * "the operator's rules (...) do not allow evil.test:443").
 */
int	 policy_entry_check(const struct rules *ceiling,
	    const struct policy_doc *d, int kind, const char *entry, char *why,
	    size_t whylen);

/*
 * Loads run `id`'s policy from its text (NULL: none, *out NULL) as the
 * proxy loads it: RULES_LOAD_POLICY, named "run ID's policy"
 * (WIRE_RUN_POLICY_NAME), so that its entries are named as the proxy names
 * them.  0 and *out (the caller's, rules_free()), or -1 with why
 * ("NAME:LINE:COL: MESSAGE").
 */
int	 policy_load(const char *id, const char *text, struct rules **out,
	    char *why, size_t whylen);

/*
 * The operator's rules the proxy decides with, from its control socket
 * `sock` (GET /v1/rules), loaded with rules_load_text() and named "the
 * proxy's rules (PATH)", PATH its rule file: what the proxy holds, whatever
 * the file holds now.  0 and *out (the caller's), or -1 with why and
 * *status the answer's (0 when none came).
 */
int	 policy_ceiling(const char *sock, struct rules **out, long *status,
	    char *why, size_t whylen);

/*
 * Run `id` as the proxy answers GET /v1/runs/ID on `sock`: *rec (one
 * record, runrec_free(*rec, 1)) and its policy loaded with policy_load()
 * (*set; NULL when it has none).  0, or -1 with why and *status the
 * answer's (404: no such run; 403: another user's; 0: none came).
 */
int	 policy_run(const char *sock, const char *id, struct runrec **rec,
	    struct rules **set, long *status, char *why, size_t whylen);

#endif /* INTUTIC_POLICY_H */
