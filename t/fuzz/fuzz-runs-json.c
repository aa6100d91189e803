/*
 * fuzz-runs-json.c — runs_parse() (proxy/runs.h), the body of
 * POST /v1/runs and of PUT /v1/runs/RUN/policy, and what the proxy does
 * with a good one: its policy compiled (rules_load_text()), runs_add()
 * into a table made once, runs_check() with its token and with another,
 * the policy changed again with the wrong generation and the right one,
 * and runs_end() by its owner, after which the token opens nothing.
 *
 * Checked: 0 with a registration whose every field is NUL-ended, its id
 * valid and its token 32..128 hex digits; or -1 with a message and the
 * token wiped.  A run added is found with its token, not with a changed
 * one; its policy's generation is 1, then 2 after one change.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "rules.h"
#include "runs.h"
#include "fuzz.h"

#define FUZZ_WHY_MAX	256

static int
ended(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

/* A policy's text compiled, as the proxy does (a runs_compile_fn). */
static int
compile(const char *id, const char *text, struct rules **set, char *why,
    size_t whylen, void *arg)
{
	struct rules_error err;

	(void)arg;
	if (rules_load_text(id, text, strlen(text), RULES_LOAD_POLICY, set,
	    &err) == 0)
		return 0;
	rules_error_str(&err, why, whylen);
	return -1;
}

/* The other bodies' parse: what a registration's body says as one. */
static void
change(const uint8_t *data, size_t size, enum runs_body what)
{
	struct run_reg chg;
	char why[FUZZ_WHY_MAX];

	memset(why, 'x', sizeof(why));
	if (runs_parse((const char *)data, size, what, &chg, why,
	    sizeof(why)) != 0) {
		FUZZ_ASSERT(ended(why, sizeof(why)) && why[0] != '\0');
		FUZZ_ASSERT(chg.policy == NULL);
		return;
	}
	if (what == RUNS_BODY_ADDR)
		FUZZ_ASSERT(chg.addr.family != 0 && chg.policy == NULL);
	else
		FUZZ_ASSERT(chg.generation > 0);
	FUZZ_ASSERT(chg.policy == NULL ||
	    strlen(chg.policy) <= RUN_POLICY_MAX);
	run_reg_clear(&chg);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct runs *runs;
	static const char zero[RUN_TOKEN_MAX + 1];
	const struct runs_peer owner = { 0, 0 };
	struct run_reg reg;
	struct run_policy pol;
	struct rules *set;
	struct run *run;
	unsigned long long gen;
	char why[FUZZ_WHY_MAX], other[RUN_TOKEN_MAX + 1], *text = NULL;
	size_t i, tlen, idlen;

	if (runs == NULL && (runs = runs_new(NULL, compile, NULL, why,
	    sizeof(why))) == NULL)
		abort();
	change(data, size, RUNS_BODY_POLICY);
	change(data, size, RUNS_BODY_ADDR);
	memset(why, 'x', sizeof(why));
	if (runs_parse((const char *)data, size, RUNS_BODY_REG, &reg, why,
	    sizeof(why)) != 0) {
		FUZZ_ASSERT(ended(why, sizeof(why)) && why[0] != '\0');
		FUZZ_ASSERT(memcmp(reg.token, zero, sizeof(zero)) == 0);
		FUZZ_ASSERT(reg.policy == NULL);
		return 0;
	}
	FUZZ_ASSERT(ended(reg.id, sizeof(reg.id)));
	FUZZ_ASSERT(ended(reg.token, sizeof(reg.token)));
	FUZZ_ASSERT(ended(reg.command, sizeof(reg.command)));
	FUZZ_ASSERT(ended(reg.project, sizeof(reg.project)));
	idlen = strlen(reg.id);
	tlen = strlen(reg.token);
	FUZZ_ASSERT(runs_id_valid(reg.id, idlen));
	FUZZ_ASSERT(tlen >= RUN_TOKEN_MIN && tlen <= RUN_TOKEN_MAX);
	for (i = 0; i < tlen; i++)
		FUZZ_ASSERT((reg.token[i] >= '0' && reg.token[i] <= '9') ||
		    (reg.token[i] >= 'a' && reg.token[i] <= 'f') ||
		    (reg.token[i] >= 'A' && reg.token[i] <= 'F'));
	FUZZ_ASSERT(reg.pid >= -1);
	reg.uid = 0;
	set = NULL;
	if (reg.policy != NULL && compile(reg.id, reg.policy, &set, why,
	    sizeof(why), NULL) != 0) {
		run_reg_clear(&reg);
		return 0;
	}
	if (reg.policy != NULL && (text = strdup(reg.policy)) == NULL)
		abort();
	if (runs_add(runs, &reg, set) != RUNS_ADDED) {
		rules_free(set);
		free(text);
		run_reg_clear(&reg);
		return 0;
	}
	FUZZ_ASSERT((run = runs_check(runs, reg.id, idlen, reg.token,
	    tlen)) != NULL);
	FUZZ_ASSERT(run_policy(run, &pol) == 0 && pol.generation == 1);
	rules_free(pol.set);
	run_release(run);
	memcpy(other, reg.token, tlen + 1);
	other[0] = other[0] == '0' ? '1' : '0';
	FUZZ_ASSERT(runs_check(runs, reg.id, idlen, other, tlen) == NULL);
	FUZZ_ASSERT(runs_check(runs, reg.id, idlen, reg.token, tlen - 1) ==
	    NULL);
	/* the same policy again: the wrong generation changes nothing */
	FUZZ_ASSERT(runs_set_policy(runs, reg.id, &owner, 5, NULL, NULL,
	    &gen) == -4 && gen == 1);
	if (text != NULL && compile(reg.id, text, &set, why, sizeof(why),
	    NULL) != 0)
		abort();
	FUZZ_ASSERT(runs_set_policy(runs, reg.id, &owner, 1, text,
	    text != NULL ? set : NULL, &gen) == 0 && gen == 2);
	/* ended by its owner: its token opens nothing any more */
	FUZZ_ASSERT(runs_end(runs, reg.id, &owner) == 0);
	FUZZ_ASSERT(runs_check(runs, reg.id, idlen, reg.token, tlen) == NULL);
	FUZZ_ASSERT(runs_end(runs, reg.id, &owner) == -1);
	run_reg_clear(&reg);
	return 0;
}
