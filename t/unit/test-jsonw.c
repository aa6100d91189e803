/*
 * test-jsonw.c — common/jsonw.c, the one JSON string writer: what is
 * escaped and how, null, UTF-8 passed as it is, an append that does not
 * fit changing nothing, the stream form writing the same text, and text
 * appended as it is (jsonw_raw()).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"
#include "tap.h"

/* s as jsonw_str() appends it to an empty buffer of len bytes. */
static const char *
quoted(const char *s, size_t len, int *r)
{
	static char buf[256];
	size_t used = 0;

	buf[0] = '\0';
	*r = jsonw_str(buf, len, &used, s);
	return buf;
}

int
main(void)
{
	static const struct {
		const char	*in;
		const char	*out;
	} cases[] = {
		{ "plain", "\"plain\"" },
		{ "", "\"\"" },
		{ "a\"b\\c", "\"a\\\"b\\\\c\"" },
		{ "tab\there\nnl", "\"tab\\u0009here\\u000anl\"" },
		{ "del\x7f" "esc\x1b", "\"del\\u007fesc\\u001b\"" },
		{ "caf\xc3\xa9 \xe2\x9c\x93", "\"caf\xc3\xa9 \xe2\x9c\x93\"" },
	};
	char buf[64], *text;
	size_t i, used, tlen;
	FILE *fp;
	int r;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tap_is_str(quoted(cases[i].in, 256, &r), cases[i].out,
		    "jsonw_str: %s", cases[i].out);
		fp = open_memstream(&text, &tlen);
		jsonw_fstr(fp, cases[i].in);
		fclose(fp);
		tap_is_str(text, cases[i].out, "jsonw_fstr writes the same");
		free(text);
	}
	tap_is_str(quoted(NULL, 256, &r), "null", "NULL is null");
	memcpy(buf, "{\"k\":", 6);
	used = 5;
	tap_ok(jsonw_str(buf, sizeof(buf), &used, "v") == 0 && used == 8 &&
	    strcmp(buf, "{\"k\":\"v\"") == 0, "appends after what is there");
	used = 5;
	memcpy(buf, "{\"k\":", 6);
	tap_ok(jsonw_str(buf, 9, &used, "vv") == -1 && used == 5 &&
	    strcmp(buf, "{\"k\":") == 0,
	    "one that does not fit changes nothing");
	used = 5;
	tap_ok(jsonw_str(buf, 9, &used, "v") == 0 && used == 8,
	    "one that just fits, with its NUL");
	used = 5;
	tap_ok(jsonw_str(buf, 10, &used, NULL) == 0 && used == 9 &&
	    strcmp(buf, "{\"k\":null") == 0, "null appended");
	used = 5;
	tap_ok(jsonw_str(buf, 8, &used, "\n") == -1 && used == 5,
	    "an escape that does not fit is not cut in half");
	used = 5;
	tap_ok(jsonw_raw(buf, 8, &used, "12") == 0 && used == 7 &&
	    strcmp(buf, "{\"k\":12") == 0, "jsonw_raw appends as it is");
	tap_ok(jsonw_raw(buf, 8, &used, "}") == -1 && used == 7 &&
	    strcmp(buf, "{\"k\":12") == 0,
	    "jsonw_raw: one that does not fit with its NUL changes nothing");
	return tap_done();
}
