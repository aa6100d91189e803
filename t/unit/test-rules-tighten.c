/*
 * test-rules-tighten.c — rules_tightens(): a project file (.intutic.yaml)
 * may narrow the operator's rules, never widen them.  Each case is a pair of files in t/data/rules/tighten: the operator's
 * rules and a project's, with the exact line expected in `why` ("" when the
 * project only tightens).
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rules.h"
#include "tap.h"

#define WHY_MAX		1024
#define CEIL		"the operator's rules (ceiling.yaml)"
#define CR		"the operator's rules (ceiling-report.yaml)"

struct tcase {
	const char	*ceiling;
	const char	*project;
	const char	*why;		/* NULL: it only tightens */
};

static const struct tcase cases[] = {
	/* Tightening: accepted. */
	{ "ceiling.yaml", "ok-names.yaml", NULL },
	{ "ceiling.yaml", "ok-ports.yaml", NULL },
	{ "ceiling.yaml", "ok-ports-unused.yaml", NULL },
	{ "ceiling.yaml", "ok-deny.yaml", NULL },
	{ "ceiling.yaml", "ok-wild.yaml", NULL },
	{ "ceiling.yaml", "ok-cidr.yaml", NULL },
	{ "ceiling.yaml", "ok-include.yaml", NULL },
	{ "ceiling.yaml", "ok-empty.yaml", NULL },
	{ "ceiling-blocks.yaml", "ok-blocks.yaml", NULL },
	{ "ceiling-report.yaml", "ok-enforce.yaml", NULL },
	{ "ceiling-report.yaml", "ok-report.yaml", NULL },

	/* Widening: refused, naming the entry and what it goes past. */
	{ "ceiling.yaml", "wide-name.yaml",
	  "wide-name.yaml:4: allow 'other.example': " CEIL
	  " do not allow other.example:443" },
	{ "ceiling.yaml", "wide-port.yaml",
	  "wide-port.yaml:3: allow 'git.example.com:22,8443': " CEIL
	  " do not allow git.example.com:8443 (ceiling.yaml:6: allow "
	  "'git.example.com:22,443' is for other ports)" },
	{ "ceiling.yaml", "wide-default-port.yaml",
	  "wide-default-port.yaml:4: allow 'api.example.com': " CEIL
	  " do not allow api.example.com:8443 (ceiling.yaml:5: allow "
	  "'api.example.com' is for other ports)" },
	{ "ceiling-report.yaml", "wide-default-80.yaml",
	  "wide-default-80.yaml:4: allow 'www.example.com': " CR
	  " do not allow www.example.com:80 (ceiling-report.yaml:6: allow "
	  "'**.example.com' is for other ports)" },
	{ "ceiling.yaml", "wide-wild.yaml",
	  "wide-wild.yaml:4: allow '*.example.net': " CEIL
	  " do not allow every name below example.net on port 443" },
	{ "ceiling.yaml", "wide-suffix.yaml",
	  "wide-suffix.yaml:4: allow '*.notexample.com': " CEIL
	  " do not allow every name below notexample.com on port 443" },
	{ "ceiling.yaml", "wide-subtree.yaml",
	  "wide-subtree.yaml:3: allow '**.cdn.example.net': " CEIL
	  " do not allow cdn.example.net:443" },
	{ "ceiling.yaml", "wide-wild-port.yaml",
	  "wide-wild-port.yaml:3: allow '**.example.com:443,8080': " CEIL
	  " do not allow every name below example.com on port 8080" },
	{ "ceiling.yaml", "wide-cidr.yaml",
	  "wide-cidr.yaml:4: allow '10.0.0.0/8': " CEIL
	  " do not allow every address in 10.0.0.0/8 on port 443" },
	{ "ceiling.yaml", "wide-cidr-gap.yaml",
	  "wide-cidr-gap.yaml:4: allow '198.51.100.0/22': " CEIL
	  " do not allow every address in 198.51.100.0/22 on port 443" },
	{ "ceiling.yaml", "wide-cidr-tail.yaml",
	  "wide-cidr-tail.yaml:3: allow '198.51.100.0/23': " CEIL
	  " do not allow every address in 198.51.100.0/23 on port 443" },
	{ "ceiling-blocks.yaml", "wide-blocks.yaml",
	  "wide-blocks.yaml:5: allow '198.18.0.0/24': the operator's rules "
	  "(ceiling-blocks.yaml) do not allow every address in 198.18.0.0/24 "
	  "on port 443" },
	{ "ceiling.yaml", "wide-cidr-port.yaml",
	  "wide-cidr-port.yaml:3: allow '10.30.0.0/24': " CEIL
	  " do not allow every address in 10.30.0.0/24 on port 443" },
	{ "ceiling.yaml", "wide-address.yaml",
	  "wide-address.yaml:4: allow '10.21.0.1': " CEIL
	  " do not allow 10.21.0.1:443" },
	{ "ceiling.yaml", "wide-family.yaml",
	  "wide-family.yaml:4: allow 'a14::/16': " CEIL
	  " do not allow every address in a14::/16 on port 443" },
	{ "ceiling.yaml", "wide-family-6to4.yaml",
	  "wide-family-6to4.yaml:4: allow '[2002:a14::]/32': " CEIL
	  " do not allow every address in 2002:a14::/32 on port 443" },
	{ "ceiling.yaml", "wide-deny-name.yaml",
	  "wide-deny-name.yaml:3: allow 'bad.example.com': " CEIL
	  " deny bad.example.com:443 (ceiling.yaml:20: deny "
	  "'bad.example.com')" },
	{ "ceiling.yaml", "wide-deny-unlisted.yaml",
	  "wide-deny-unlisted.yaml:3: allow 'www.evil.example': " CEIL
	  " deny www.evil.example:443 (ceiling.yaml:22: deny "
	  "'**.evil.example')" },
	{ "ceiling.yaml", "wide-deny-below.yaml",
	  "wide-deny-below.yaml:3: allow '*.evil.example.com:8443': " CEIL
	  " deny every name below evil.example.com on port 8443 "
	  "(ceiling.yaml:21: deny '**.evil.example.com')" },
	{ "ceiling.yaml", "wide-deny-subtree.yaml",
	  "wide-deny-subtree.yaml:3: allow '**.x.evil.example': " CEIL
	  " deny x.evil.example and every name below it on port 443 "
	  "(ceiling.yaml:22: deny '**.evil.example')" },
	{ "ceiling.yaml", "wide-deny-port.yaml",
	  "wide-deny-port.yaml:3: allow '*.example.com:443,8080': " CEIL
	  " deny every name below example.com on port 8080 "
	  "(ceiling.yaml:25: deny '*.example.com:8080')" },
	{ "ceiling.yaml", "wide-deny-cidr.yaml",
	  "wide-deny-cidr.yaml:3: allow '10.20.99.128/25:8443': " CEIL
	  " deny all of 10.20.99.128/25 on port 8443 (ceiling.yaml:23: deny "
	  "'10.20.99.0/24')" },
	{ "ceiling.yaml", "wide-deny-nat64.yaml",
	  "wide-deny-nat64.yaml:4: allow '[64:ff9b::a9fe:a9fe]': " CEIL
	  " deny [64:ff9b::a9fe:a9fe]:443 (ceiling.yaml:24: deny "
	  "'169.254.169.254/32')" },
	{ "ceiling.yaml", "wide-mode.yaml",
	  "wide-mode.yaml:2: mode 'report': " CEIL
	  " are in enforce mode; a project file may not switch to report" },
	{ "ceiling.yaml", "wide-providers.yaml",
	  "wide-providers.yaml:4: provider 'acme': a project file may not "
	  "define providers (they add allow entries and forward key "
	  "variables: only the operator's rules may)" },
	{ "ceiling.yaml", "wide-providers-inc.yaml",
	  "inc/providers.yaml:4: provider 'other': a project file may not "
	  "define providers (they add allow entries and forward key "
	  "variables: only the operator's rules may)" },
	{ "ceiling.yaml", "wide-include.yaml",
	  "inc/wide-inc.yaml:5: allow 'other.example:443': " CEIL
	  " do not allow other.example:443" },
	/* The operator's own providers cannot come in through a project. */
	{ "ceiling.yaml", "ceiling.yaml",
	  "ceiling.yaml:27: provider 'acme': a project file may not "
	  "define providers (they add allow entries and forward key "
	  "variables: only the operator's rules may)" },
};

static struct rules *
load(const char *file)
{
	struct rules *r;
	struct rules_error err;
	char msg[RULES_PATH_MAX + RULES_ERROR_MAX + 64];

	if (rules_load(file, &r, &err) != 0) {
		tap_diag("%s", rules_error_str(&err, msg, sizeof(msg)));
		return NULL;
	}
	return r;
}

static void
run_case(const struct tcase *tc)
{
	struct rules *c, *p;
	char why[WHY_MAX];
	int rc;

	c = load(tc->ceiling);
	p = load(tc->project);
	if (c == NULL || p == NULL) {
		tap_ok(0, "%s under %s: both load", tc->project, tc->ceiling);
		tap_ok(0, "%s under %s: why", tc->project, tc->ceiling);
		goto out;
	}
	memset(why, 'x', sizeof(why));
	rc = rules_tightens(c, p, why, sizeof(why));
	tap_is_int(rc, tc->why == NULL ? 0 : -1, "%s under %s: %s",
	    tc->project, tc->ceiling, tc->why == NULL ? "tightens" : "widens");
	tap_is_str(why, tc->why == NULL ? "" : tc->why, "%s under %s: why",
	    tc->project, tc->ceiling);
 out:
	rules_free(c);
	rules_free(p);
}

/* Every accepted project, taken as a ceiling, holds itself. */
static void
test_self(void)
{
	struct rules *r;
	char why[WHY_MAX];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].why != NULL)
			continue;
		if ((r = load(cases[i].project)) == NULL) {
			tap_ok(0, "%s loads", cases[i].project);
			continue;
		}
		tap_is_int(rules_tightens(r, r, why, sizeof(why)), 0,
		    "%s tightens itself", cases[i].project);
		rules_free(r);
	}
}

/* The message buffer: cut, always terminated, may be absent. */
static void
test_why_buffer(void)
{
	struct rules *c, *wide, *ok;
	char why[16];

	c = load("ceiling.yaml");
	wide = load("wide-name.yaml");
	ok = load("ok-names.yaml");
	if (c == NULL || wide == NULL || ok == NULL) {
		tap_ok(0, "the files of the buffer tests load");
		goto out;
	}
	memset(why, 'x', sizeof(why));
	tap_is_int(rules_tightens(c, wide, why, sizeof(why)), -1,
	    "a short buffer: still refused");
	tap_is_str(why, "wide-name.yaml:", "a short buffer: cut and terminated");
	memset(why, 'x', sizeof(why));
	tap_is_int(rules_tightens(c, wide, why, 1), -1,
	    "a one-byte buffer: still refused");
	tap_ok(why[0] == '\0' && why[1] == 'x',
	    "a one-byte buffer: empty, nothing written past it");
	tap_is_int(rules_tightens(c, wide, NULL, 0), -1,
	    "no buffer: still refused");
	tap_is_int(rules_tightens(c, ok, NULL, 0), 0,
	    "no buffer: a tightening still accepted");
	tap_is_int(rules_tightens(c, wide, NULL, sizeof(why)), -1,
	    "no buffer but a length: still refused, nothing written");
 out:
	rules_free(c);
	rules_free(wide);
	rules_free(ok);
}

static int
write_file(const char *path, const char *text)
{
	FILE *fp;

	if ((fp = fopen(path, "w")) == NULL)
		return -1;
	if (fputs(text, fp) == EOF) {
		fclose(fp);
		return -1;
	}
	return fclose(fp) == 0 ? 0 : -1;
}

/* A path with control bytes in it comes out escaped: `why` is one line. */
static void
test_escape(void)
{
	char dir[] = "/tmp/intutic-test-tighten.XXXXXX";
	char sub[64], proj[96], ceil[96], why[WHY_MAX], want[WHY_MAX];
	struct rules *c = NULL, *p = NULL;

	if (mkdtemp(dir) == NULL) {
		tap_ok(0, "a scratch directory: %s", strerror(errno));
		return;
	}
	snprintf(sub, sizeof(sub), "%s/line\nbreak", dir);
	snprintf(proj, sizeof(proj), "%s/p.yaml", sub);
	snprintf(ceil, sizeof(ceil), "%s/c\033.yaml", sub);
	if (mkdir(sub, 0700) != 0 ||
	    write_file(proj, "version: 1\nallow: [other.example]\n") != 0 ||
	    write_file(ceil, "version: 1\nallow: [api.example.com]\n") != 0 ||
	    (c = load(ceil)) == NULL || (p = load(proj)) == NULL) {
		tap_ok(0, "files with control bytes in their path load");
		goto out;
	}
	snprintf(want, sizeof(want), "%s/line\\x0abreak/p.yaml:2: allow "
	    "'other.example': the operator's rules (%s/line\\x0abreak/"
	    "c\\x1b.yaml) do not allow other.example:443", dir, dir);
	tap_is_int(rules_tightens(c, p, why, sizeof(why)), -1,
	    "a path with control bytes: refused");
	tap_is_str(why, want, "a path with control bytes: written as \\xHH");
 out:
	rules_free(c);
	rules_free(p);
	unlink(proj);
	unlink(ceil);
	rmdir(sub);
	rmdir(dir);
}

int
main(void)
{
	const char *data = getenv("TEST_DATA");
	char dir[4096];
	size_t i;

	if (data == NULL)
		data = "t/data";
	snprintf(dir, sizeof(dir), "%s/rules/tighten", data);
	if (chdir(dir) != 0) {
		tap_diag("cannot enter %s: %s", dir, strerror(errno));
		tap_ok(0, "the tighten cases are readable");
		return tap_done();
	}
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i]);
	test_self();
	test_why_buffer();
	test_escape();
	return tap_done();
}
