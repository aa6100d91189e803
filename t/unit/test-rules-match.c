/*
 * test-rules-match.c — runs the data-driven policy cases of
 * t/data/rules/cases (format at the top of that file) through the library:
 * every pattern form, deny wins, ports, CIDRs, includes, address classes.
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rules.h"
#include "tap.h"

#define CACHE_MAX	32
#define FIELDS_MAX	8

struct cached {
	char		 file[256];
	struct rules	*r;
};

static struct cached	cache[CACHE_MAX];
static size_t		ncache;

static struct rules *
rules_for(const char *file)
{
	struct rules_error err;
	char msg[RULES_PATH_MAX + RULES_ERROR_MAX + 64];
	size_t i;

	for (i = 0; i < ncache; i++)
		if (strcmp(cache[i].file, file) == 0)
			return cache[i].r;
	if (ncache == CACHE_MAX)
		return NULL;
	if (rules_load(file, &cache[ncache].r, &err) != 0) {
		tap_diag("%s", rules_error_str(&err, msg, sizeof(msg)));
		return NULL;
	}
	snprintf(cache[ncache].file, sizeof(cache[ncache].file), "%s", file);
	return cache[ncache++].r;
}

static int
split(char *line, char **f)
{
	int n = 0;
	char *save = NULL, *tok;

	for (tok = strtok_r(line, " \t\n", &save); tok != NULL && n < FIELDS_MAX;
	    tok = strtok_r(NULL, " \t\n", &save))
		f[n++] = tok;
	return n;
}

static void
case_decide(unsigned long lineno, char **f)
{
	struct rules *r;
	struct rules_host host;
	struct rules_decision d;
	char where[RULES_WHERE_MAX], got[RULES_WHERE_MAX + 64];
	char want[RULES_WHERE_MAX + 64];
	uint16_t port;

	snprintf(want, sizeof(want), "%s %s %s", f[3], f[4], f[5]);
	if ((r = rules_for(f[1])) == NULL) {
		tap_ok(0, "line %lu: %s %s: rules load", lineno, f[1], f[2]);
		return;
	}
	if (rules_hostport_parse(f[2], &host, &port, 443) != RULES_OK)
		snprintf(got, sizeof(got), "deny invalid-host -");
	else {
		rules_decide(r, &host, port, &d);
		snprintf(got, sizeof(got), "%s %s %s",
		    d.verdict == RULES_ALLOW ? "allow" : "deny",
		    rules_reason_str(d.reason),
		    rules_entry_where(d.entry, where, sizeof(where)));
	}
	tap_is_str(got, want, "line %lu: %s %s", lineno, f[1], f[2]);
}

static void
case_addr(unsigned long lineno, char **f)
{
	struct rules *r;
	struct rules_addr a;
	struct rules_decision d;
	char got[128], want[128];
	unsigned long port;
	char *end;

	snprintf(want, sizeof(want), "%s %s %s", f[4], f[5], f[6]);
	if ((r = rules_for(f[1])) == NULL) {
		tap_ok(0, "line %lu: %s %s: rules load", lineno, f[1], f[2]);
		return;
	}
	errno = 0;
	port = strtoul(f[3], &end, 10);
	if (rules_addr_parse(f[2], &a) != RULES_OK || *end != '\0' ||
	    port == 0 || port > 65535) {
		tap_ok(0, "line %lu: bad address or port in the case", lineno);
		return;
	}
	rules_check_addr(r, &a, (uint16_t)port, &d);
	snprintf(got, sizeof(got), "%s %s %s",
	    d.verdict == RULES_ALLOW ? "allow" : "deny",
	    rules_reason_str(d.reason), d.addr_class);
	tap_is_str(got, want, "line %lu: addr %s %s port %s", lineno, f[1],
	    f[2], f[3]);
}

int
main(void)
{
	const char *data = getenv("TEST_DATA");
	char line[1024], dir[4096], *f[FIELDS_MAX];
	unsigned long lineno = 0;
	FILE *fp;
	size_t i;
	int n;

	if (data == NULL)
		data = "t/data";
	snprintf(dir, sizeof(dir), "%s/rules", data);
	if (chdir(dir) != 0 || (fp = fopen("cases", "r")) == NULL) {
		tap_diag("cannot open %s/cases: %s", dir, strerror(errno));
		tap_ok(0, "cases file readable");
		return tap_done();
	}
	while (fgets(line, sizeof(line), fp) != NULL) {
		lineno++;
		if ((n = split(line, f)) == 0 || f[0][0] == '#')
			continue;
		if (strcmp(f[0], "decide") == 0 && n == 6)
			case_decide(lineno, f);
		else if (strcmp(f[0], "addr") == 0 && n == 7)
			case_addr(lineno, f);
		else
			tap_ok(0, "line %lu: malformed case", lineno);
	}
	fclose(fp);
	for (i = 0; i < ncache; i++)
		rules_free(cache[i].r);
	return tap_done();
}
