/*
 * test-rules-load.c — the loader as a library: nothing half-loaded, the
 * error's file, line and column (in an included file too), the limits
 * (size, entries, include depth, file count), includes, providers,
 * reference counts, and a 100,000-entry file deciding like a small one.  The messages themselves are checked
 * through the CLI by t/t1001-rules-check.sh.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rules.h"
#include "tap.h"

static char	tmpdir[] = "/tmp/intutic-test-load.XXXXXX";

static const char *
path_of(const char *name)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf), "%s/%s", tmpdir, name);
	return buf;
}

static void
write_file(const char *name, const char *text)
{
	FILE *fp;

	if ((fp = fopen(path_of(name), "w")) == NULL ||
	    fputs(text, fp) == EOF || fclose(fp) != 0) {
		tap_diag("cannot write %s: %s", name, strerror(errno));
		exit(1);
	}
}

static int
load(const char *name, struct rules **r, struct rules_error *err)
{
	return rules_load(path_of(name), r, err);
}

static int
decides(const struct rules *r, const char *hostport, enum rules_verdict v)
{
	struct rules_host h;
	struct rules_decision d;
	uint16_t port;

	if (rules_hostport_parse(hostport, &h, &port, 443) != RULES_OK)
		return 0;
	rules_decide(r, &h, port, &d);
	return d.verdict == v;
}

static void
test_valid(void)
{
	struct rules *r;
	struct rules_error err;
	const struct rules_provider *p;

	write_file("valid.yaml",
	    "version: 1\n"
	    "mode: report\n"
	    "ports: [8080]\n"
	    "allow: [a.example.com, \"b.example.com:443\"]\n"
	    "deny: [c.example.com]\n"
	    "providers:\n"
	    "  acme:\n"
	    "    hosts: [api.acme.example]\n"
	    "    env: [ACME_KEY, ACME_URL]\n"
	    "  empty: {}\n");
	if (!tap_ok(load("valid.yaml", &r, &err) == 0 && r != NULL,
	    "valid file loads")) {
		tap_diag("%s:%lu:%lu: %s", err.file, err.line, err.col, err.msg);
		return;
	}
	tap_is_int((long long)rules_count(r), 4, "four entries");
	tap_is_int(rules_mode(r), RULES_MODE_REPORT, "report mode");
	tap_is_str(rules_path(r), path_of("valid.yaml"), "path kept");
	tap_ok(decides(r, "a.example.com:8080", RULES_ALLOW),
	    "ports: replaces the default ports");
	tap_ok(decides(r, "a.example.com:443", RULES_DENY),
	    "default 443 no longer allowed");
	tap_ok(decides(r, "api.acme.example:8080", RULES_ALLOW),
	    "provider host is an allow entry");
	tap_is_int((long long)rules_provider_count(r), 2, "two providers");
	p = rules_provider_get(r, 0);
	tap_ok(p != NULL && strcmp(p->name, "acme") == 0 &&
	    p->env_count == 2 && strcmp(p->env[0], "ACME_KEY") == 0 &&
	    strcmp(p->env[1], "ACME_URL") == 0, "provider name and env");
	p = rules_provider_get(r, 1);
	tap_ok(p != NULL && p->env_count == 0, "provider without env");
	tap_ok(rules_provider_get(r, 2) == NULL, "provider index past end");

	tap_ok(rules_ref(r) == r, "ref returns the set");
	rules_free(r);
	tap_ok(decides(r, "a.example.com:8080", RULES_ALLOW),
	    "set usable after dropping one of two references");
	rules_free(r);
	rules_free(NULL);
	tap_ok(1, "rules_free(NULL) is harmless");
}

static void
test_no_half_load(void)
{
	struct rules *r = (struct rules *)&r;
	struct rules_error err;

	write_file("half.yaml",
	    "version: 1\n"
	    "allow:\n"
	    "  - good.example.com\n"
	    "  - another.example.com\n"
	    "  - \"*.com\"\n");
	tap_is_int(load("half.yaml", &r, &err), -1, "error after good entries");
	tap_ok(r == NULL, "no set returned on error");
	tap_is_str(err.file, path_of("half.yaml"), "error names the file");
	tap_is_int((long long)err.line, 5, "error line");
	tap_is_int((long long)err.col, 5, "error column");
	tap_ok(strstr(err.msg, "'*.com'") != NULL, "error quotes the entry");

	write_file("crlf.yaml", "version: 1\r\nallow:\r\n  - x.example\r\n");
	tap_is_int(load("crlf.yaml", &r, &err), 0, "CRLF line ends load");
	rules_free(r);
}

/*
 * Errors of the reader (common/yread.c) name the file they are in: an
 * included one, or the including one after an include that loaded.
 */
static void
test_reader_errors(void)
{
	struct rules *r;
	struct rules_error err;

	write_file("inc-tag.yaml", "version: 1\n\nallow: [!!str a.example]\n");
	write_file("top-tag.yaml", "version: 1\ninclude: inc-tag.yaml\n");
	tap_is_int(load("top-tag.yaml", &r, &err), -1, "a tag in an include");
	tap_is_str(err.file, path_of("inc-tag.yaml"), "named by its file");
	tap_ok(err.line == 3 && err.col == 9, "at its position: %lu:%lu",
	    err.line, err.col);
	tap_ok(strncmp(err.msg, "YAML tag '!!str' found", 22) == 0,
	    "the reader's message: %s", err.msg);

	write_file("inc-ok.yaml", "version: 1\nallow: [b.example]\n");
	write_file("top-after.yaml",
	    "version: 1\ninclude: inc-ok.yaml\nallow: [a.example\n");
	tap_is_int(load("top-after.yaml", &r, &err), -1,
	    "a parse error after an include that loaded");
	tap_is_str(err.file, path_of("top-after.yaml"),
	    "named by the including file");
	tap_is_int((long long)err.line, 4, "at its end");
	tap_ok(strncmp(err.msg, "invalid YAML: ", 14) == 0, "%s", err.msg);
}

static void
test_include_depth(void)
{
	struct rules *r;
	struct rules_error err;
	char name[64], text[256];
	int i;

	/* d0 includes d1 ... includes d9: nine includes below the top. */
	for (i = 0; i <= 9; i++) {
		snprintf(name, sizeof(name), "d%d.yaml", i);
		if (i < 9)
			snprintf(text, sizeof(text), "version: 1\n"
			    "include: [d%d.yaml]\nallow: [d%d.example]\n",
			    i + 1, i);
		else
			snprintf(text, sizeof(text), "version: 1\n"
			    "allow: [d%d.example]\n", i);
		write_file(name, text);
	}
	tap_is_int(load("d1.yaml", &r, &err), 0,
	    "eight nested includes load");
	tap_ok(r != NULL && decides(r, "d9.example", RULES_ALLOW),
	    "deepest file's entries are in");
	rules_free(r);
	tap_is_int(load("d0.yaml", &r, &err), -1, "nine nested includes refused");
	tap_ok(strstr(err.msg, "nested deeper than 8") != NULL,
	    "depth error says the limit: %s", err.msg);
	tap_ok(strstr(err.file, "d8.yaml") != NULL && err.line == 2,
	    "depth error at the include that goes too deep");
}

static void
test_file_count(void)
{
	struct rules *r;
	struct rules_error err;
	char name[64], text[64];
	FILE *fp;
	int i;

	if ((fp = fopen(path_of("many.yaml"), "w")) == NULL)
		exit(1);
	fprintf(fp, "version: 1\ninclude:\n");
	for (i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "m%d.yaml", i);
		snprintf(text, sizeof(text), "version: 1\nallow: [m%d.example]\n",
		    i);
		write_file(name, text);
		fprintf(fp, "  - m%d.yaml\n", i);
	}
	fclose(fp);
	tap_is_int(load("many.yaml", &r, &err), -1, "65 files refused");
	tap_ok(strstr(err.msg, "more than 64 rule files") != NULL,
	    "file count error: %s", err.msg);
	tap_is_int((long long)err.line, 66, "at the 64th include");
}

static void
test_size_limit(void)
{
	struct rules *r;
	struct rules_error err;
	int fd;

	fd = open(path_of("huge.yaml"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd == -1 || ftruncate(fd, RULES_FILE_MAX + 1) != 0) {
		tap_skip(2, "cannot make a sparse file: %s", strerror(errno));
		return;
	}
	close(fd);
	tap_is_int(load("huge.yaml", &r, &err), -1, "file over 32 MiB refused");
	tap_ok(strstr(err.msg, "too large") != NULL && err.line == 0,
	    "size error: %s", err.msg);
	unlink(path_of("huge.yaml"));
}

/* Writes a file of n allow entries "hN.gen.example" plus a few others. */
static void
write_generated(const char *name, long n)
{
	FILE *fp;
	long i;

	if ((fp = fopen(path_of(name), "w")) == NULL)
		exit(1);
	fprintf(fp, "version: 1\ndeny: [\"h7.gen.example\"]\nallow:\n");
	for (i = 0; i < n; i++) {
		switch (i % 4) {
		case 0:
			fprintf(fp, "- h%ld.gen.example\n", i);
			break;
		case 1:
			fprintf(fp, "- \"*.w%ld.gen.example\"\n", i);
			break;
		case 2:
			fprintf(fp, "- \"**.s%ld.gen.example:8443\"\n", i);
			break;
		default:
			fprintf(fp, "- 10.%ld.%ld.0/24\n", (i >> 8) & 255,
			    i & 255);
			break;
		}
	}
	fclose(fp);
}

static void
test_large(void)
{
	struct rules *r;
	struct rules_error err;

	write_generated("large.yaml", 100000);
	if (!tap_is_int(load("large.yaml", &r, &err), 0,
	    "100,000-entry file loads"))
		return;
	tap_is_int((long long)rules_count(r), 100001, "every entry counted");
	tap_ok(decides(r, "h99996.gen.example", RULES_ALLOW), "last exact");
	tap_ok(decides(r, "a.b.w99997.gen.example", RULES_ALLOW),
	    "wildcard below");
	tap_ok(decides(r, "w99997.gen.example", RULES_DENY),
	    "wildcard not the apex");
	tap_ok(decides(r, "s99998.gen.example:8443", RULES_ALLOW),
	    "subtree apex on its port");
	tap_ok(decides(r, "s99998.gen.example", RULES_DENY),
	    "subtree on another port");
	tap_ok(decides(r, "10.134.159.9", RULES_ALLOW), "CIDR entry");
	tap_ok(decides(r, "h7.gen.example", RULES_DENY), "deny still wins");
	tap_ok(decides(r, "nothing.gen.example", RULES_DENY), "default deny");
	rules_free(r);
	unlink(path_of("large.yaml"));
}

static void
test_entry_limit(void)
{
	struct rules *r;
	struct rules_error err;

	write_generated("limit.yaml", RULES_ENTRIES_MAX);
	tap_is_int(load("limit.yaml", &r, &err), -1,
	    "more than 1,000,000 entries refused");
	tap_ok(strstr(err.msg, "too many entries") != NULL &&
	    err.line == RULES_ENTRIES_MAX + 3,
	    "at the entry past the limit: %lu: %s", err.line, err.msg);
	unlink(path_of("limit.yaml"));
}

static void
cleanup(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		tap_diag("cannot remove %s", tmpdir);
}

int
main(void)
{
	if (mkdtemp(tmpdir) == NULL)
		tap_skip_all("cannot make a temporary directory: %s",
		    strerror(errno));
	test_valid();
	test_no_half_load();
	test_reader_errors();
	test_include_depth();
	test_file_count();
	test_size_limit();
	test_large();
	test_entry_limit();
	cleanup();
	return tap_done();
}
