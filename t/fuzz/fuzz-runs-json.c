/*
 * fuzz-runs-json.c — runs_parse() (proxy/runs.h), the body of
 * POST /v1/runs, and what the proxy does with a good one: runs_add() into
 * a table made once, runs_check() with its token and with another, and
 * runs_end() by its owner, after which the token opens nothing.
 *
 * Checked: 0 with a registration whose every field is NUL-ended, its id
 * valid and its token 32..128 hex digits; or -1 with a message and the
 * token wiped.  A run added is found with its token, not with a changed
 * one.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "runs.h"
#include "fuzz.h"

#define FUZZ_WHY_MAX	256

static int
ended(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct runs *runs;
	static const char zero[RUN_TOKEN_MAX + 1];
	const struct runs_peer owner = { 0, 0 };
	struct run_reg reg;
	char why[FUZZ_WHY_MAX], other[RUN_TOKEN_MAX + 1];
	size_t i, tlen, idlen;

	if (runs == NULL && (runs = runs_new(NULL, why, sizeof(why))) == NULL)
		abort();
	memset(why, 'x', sizeof(why));
	if (runs_parse((const char *)data, size, &reg, why, sizeof(why)) != 0) {
		FUZZ_ASSERT(ended(why, sizeof(why)) && why[0] != '\0');
		FUZZ_ASSERT(memcmp(reg.token, zero, sizeof(zero)) == 0);
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
	if (runs_add(runs, &reg) != RUNS_ADDED)
		return 0;
	FUZZ_ASSERT(runs_check(runs, reg.id, idlen, reg.token, tlen) == 1);
	memcpy(other, reg.token, tlen + 1);
	other[0] = other[0] == '0' ? '1' : '0';
	FUZZ_ASSERT(runs_check(runs, reg.id, idlen, other, tlen) == 0);
	FUZZ_ASSERT(runs_check(runs, reg.id, idlen, reg.token, tlen - 1) == 0);
	/* ended by its owner: its token opens nothing any more */
	FUZZ_ASSERT(runs_end(runs, reg.id, &owner) == 0);
	FUZZ_ASSERT(runs_check(runs, reg.id, idlen, reg.token, tlen) == 0);
	FUZZ_ASSERT(runs_end(runs, reg.id, &owner) == -1);
	return 0;
}
