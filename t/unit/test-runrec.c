/*
 * test-runrec.c — common/runrec.c, the one reader of runs as JSON: a run
 * as GET /v1/runs/RUN answers it (its policy, generation, counters and
 * last denials, none or more than are kept), a list, the answer to a
 * change of policy, and what is refused.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "runrec.h"
#include "tap.h"

/* text parsed as one run (list 0) or a list; 0 or -1, why in why. */
static int
parse(const char *text, int list, struct runrec **runs, size_t *n,
    char *why, size_t whylen)
{
	return runrec_parse("the answer", text, strlen(text), list, runs, n,
	    why, whylen);
}

int
main(void)
{
	struct runrec *runs;
	char why[256], text[4096];
	size_t n, used, i;
	int r;

	r = parse("{\"run\":\"run-a\",\"uid\":0,\"pid\":12,\"registered\":5,"
	    "\"command\":\"sh\",\"project\":null,\"policy\":\"{\\\"deny\\\":"
	    "[\\\"x.test\\\"]}\",\"generation\":3,\"requests\":7,"
	    "\"denials\":2,\"bytes_up\":10,\"bytes_down\":20,"
	    "\"last_denials\":[{\"time\":100,\"host\":\"x.test\",\"port\":80,"
	    "\"reason\":\"denied\",\"rule\":\"run run-a's policy:1\"},"
	    "{\"time\":101,\"host\":\"y.test\",\"port\":443,"
	    "\"reason\":\"not-allowlisted\",\"rule\":null}]}", 0, &runs, &n,
	    why, sizeof(why));
	tap_ok(r == 0 && n == 1, "a run with two last denials: %s",
	    r == 0 ? "read" : why);
	if (r == 0) {
		tap_is_str(runs[0].policy, "{\"deny\":[\"x.test\"]}",
		    "its policy's text");
		tap_is_int(runs[0].generation, 3, "its generation");
		tap_ok(runs[0].requests == 7 && runs[0].denials == 2 &&
		    runs[0].bytes_up == 10 && runs[0].bytes_down == 20,
		    "its counters");
		tap_is_int((long long)runs[0].ndenied, 2, "two denials");
		tap_ok(strcmp(runs[0].denied[0].host, "x.test") == 0 &&
		    runs[0].denied[0].port == 80 &&
		    strcmp(runs[0].denied[0].rule, "run run-a's policy:1") == 0,
		    "the first, with its rule");
		tap_ok(strcmp(runs[0].denied[1].reason, "not-allowlisted") ==
		    0 && runs[0].denied[1].rule[0] == '\0',
		    "the second, with no rule (null)");
		runrec_free(runs, n);
	} else
		tap_skip(6, "not read");

	r = parse("{\"run\":\"run-b\",\"policy\":null,\"last_denials\":[]}", 0,
	    &runs, &n, why, sizeof(why));
	tap_ok(r == 0 && n == 1 && runs[0].policy == NULL &&
	    runs[0].ndenied == 0, "no policy and no denials: %s",
	    r == 0 ? "read" : why);
	if (r == 0)
		runrec_free(runs, n);

	/* more denials than are kept: the first RUNREC_DENIALS_MAX */
	used = (size_t)snprintf(text, sizeof(text),
	    "{\"run\":\"run-c\",\"last_denials\":[");
	for (i = 0; i < RUNREC_DENIALS_MAX + 3; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used,
		    "%s{\"time\":%zu,\"host\":\"h%zu.test\",\"port\":1,"
		    "\"reason\":\"denied\",\"rule\":null}", i > 0 ? "," : "",
		    i, i);
	snprintf(text + used, sizeof(text) - used, "]}");
	r = parse(text, 0, &runs, &n, why, sizeof(why));
	tap_ok(r == 0 && runs[0].ndenied == RUNREC_DENIALS_MAX &&
	    strcmp(runs[0].denied[RUNREC_DENIALS_MAX - 1].host, "h7.test") ==
	    0, "%d denials: the first %d kept", RUNREC_DENIALS_MAX + 3,
	    RUNREC_DENIALS_MAX);
	if (r == 0)
		runrec_free(runs, n);

	r = parse("{\"runs\":[{\"run\":\"run-d\",\"generation\":1},"
	    "{\"run\":\"run-e\",\"generation\":2}]}", 1, &runs, &n, why,
	    sizeof(why));
	tap_ok(r == 0 && n == 2 && runs[1].generation == 2 &&
	    runs[0].ndenied == 0, "a list of two");
	if (r == 0)
		runrec_free(runs, n);

	r = parse("{\"run\":\"run-f\",\"generation\":4}", 0, &runs, &n, why,
	    sizeof(why));
	tap_ok(r == 0 && runs[0].generation == 4,
	    "the answer to a change of policy: its new generation");
	if (r == 0)
		runrec_free(runs, n);

	r = parse("{\"run\":\"run-g\",\"last_denials\":{}}", 0, &runs, &n, why,
	    sizeof(why));
	tap_ok(r == -1 && strstr(why, "expected an array of denials") != NULL,
	    "last_denials not an array: refused (%s)", why);
	r = parse("{\"run\":\"run-h\",\"last_denials\":[1]}", 0, &runs, &n,
	    why, sizeof(why));
	tap_ok(r == -1 && strstr(why, "expected a denial") != NULL,
	    "a denial not an object: refused (%s)", why);
	r = parse("{\"generation\":1}", 0, &runs, &n, why, sizeof(why));
	tap_ok(r == -1 && runs == NULL && n == 0,
	    "a run without its id: refused (%s)", why);
	return tap_done();
}
