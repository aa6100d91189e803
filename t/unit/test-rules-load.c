/*
 * test-rules-load.c — the loader as a library: nothing half-loaded, the
 * error's file, line and column (in an included file too), the limits
 * (size, entries, include depth, file count), includes, providers,
 * reference counts, and a 100,000-entry file deciding like a small one.
 * Then a document given as text (rules_load_text()): YAML and JSON, what
 * it refuses and where, the entries in order, the default ports, and
 * rules_dump() read back to a set that dumps the same text and decides the
 * same, for the shipped rules and for a small set with every kind of
 * entry.  Then the provider gateway: every key of a provider's gateway
 * and of `gateway:` read, each bad form refused with its message and
 * place, `gateway:` refused in an included file and in a policy, and
 * before or after the include that defines its provider, and the dump of
 * it all loaded back to the same.  The messages themselves are checked
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
#include "yread.h"

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

/* ------------------------------------------------------ text and dump */

#define RUN_NAME	"run 7 policy"

/* rules_load_text() on a C string, its NUL left out. */
static int
load_text(const char *text, unsigned int flags, struct rules **r,
    struct rules_error *err)
{
	return rules_load_text(RUN_NAME, text, strlen(text), flags, r, err);
}

/* The column of the first `what` in a one-line text, 1-based. */
static unsigned long
col_of(const char *text, const char *what)
{
	const char *p = strstr(text, what);

	return p == NULL ? 0 : (unsigned long)(p - text) + 1;
}

/* "VERDICT REASON ENTRY" of a destination, ENTRY "-" for none. */
static const char *
decision_text(const struct rules *r, const char *hostport, char *buf,
    size_t len)
{
	struct rules_host h;
	struct rules_decision d;
	uint16_t port;

	if (rules_hostport_parse(hostport, &h, &port, 443) != RULES_OK) {
		snprintf(buf, len, "unparsed");
		return buf;
	}
	rules_decide(r, &h, port, &d);
	snprintf(buf, len, "%s %s %s", d.verdict == RULES_ALLOW ? "allow" :
	    "deny", rules_reason_str(d.reason), rules_entry_text(d.entry));
	return buf;
}

/* The same for an address a name resolved to (rules_check_addr()). */
static const char *
addr_text(const struct rules *r, const char *addr, uint16_t port, char *buf,
    size_t len)
{
	struct rules_addr a;
	struct rules_decision d;

	if (rules_addr_parse(addr, &a) != RULES_OK) {
		snprintf(buf, len, "unparsed");
		return buf;
	}
	rules_check_addr(r, &a, port, &d);
	snprintf(buf, len, "%s %s %s %s", d.verdict == RULES_ALLOW ? "allow" :
	    "deny", rules_reason_str(d.reason), rules_entry_text(d.entry),
	    d.addr_class != NULL ? d.addr_class : "-");
	return buf;
}

static void
test_text_good(void)
{
	/* "no NUL needed": the bytes past len are not part of the text. */
	static const char tail[] =
	    "version: 1\nallow: [a.example]\nthis is not YAML: [";
	struct rules *r;
	struct rules_error err;
	const struct rules_provider *p;
	const char *yaml =
	    "version: 1\n"
	    "mode: report\n"
	    "ports: [8080]\n"
	    "allow: [a.example.com, \"*.b.example.com:443\"]\n"
	    "deny: [c.example.com]\n"
	    "providers:\n"
	    "  acme:\n"
	    "    hosts: [api.acme.example]\n"
	    "    env: [ACME_KEY]\n";
	const char *json =
	    "{\"version\":1,\"ports\":[443,8443],\"allow\":[\"a.example.com\","
	    "\"**.b.example.com\",\"10.0.0.0/8:5432\",\"\\u002a.w.example\","
	    "\"[2001:db8::1]\"],\"deny\":[\"x.b.example.com\"]}";
	char buf[256];

	if (!tap_ok(load_text(yaml, 0, &r, &err) == 0 && r != NULL,
	    "text: YAML loads")) {
		tap_diag("%s", rules_error_str(&err, buf, sizeof(buf)));
		return;
	}
	tap_is_str(rules_path(r), RUN_NAME, "text: rules_path() is the name");
	tap_is_int((long long)rules_count(r), 4, "text: four entries");
	tap_is_int(rules_mode(r), RULES_MODE_REPORT, "text: mode read");
	tap_is_str(rules_entry_file(rules_entry_at(r, 1)), RUN_NAME,
	    "text: an entry's file is the name");
	tap_is_int((long long)rules_entry_line(rules_entry_at(r, 1)), 4,
	    "text: an entry's line is its line in the text");
	tap_is_str(decision_text(r, "b.b.example.com", buf, sizeof(buf)),
	    "allow allowed *.b.example.com:443", "text: an entry's own port");
	tap_is_str(decision_text(r, "a.example.com:8080", buf, sizeof(buf)),
	    "allow allowed a.example.com", "text: its ports: list");
	p = rules_provider_get(r, 0);
	tap_ok(rules_provider_count(r) == 1 && p != NULL &&
	    strcmp(p->name, "acme") == 0 && p->env_count == 1 &&
	    strcmp(p->env[0], "ACME_KEY") == 0, "text: a provider");
	rules_free(r);

	if (!tap_ok(load_text(json, RULES_LOAD_POLICY, &r, &err) == 0,
	    "text: JSON without spaces loads as a policy")) {
		tap_diag("%s", rules_error_str(&err, buf, sizeof(buf)));
		return;
	}
	tap_is_int(rules_mode(r), RULES_MODE_ENFORCE,
	    "text: a policy enforces");
	tap_is_str(decision_text(r, "a.example.com:8443", buf, sizeof(buf)),
	    "allow allowed a.example.com", "JSON: exact entry");
	tap_is_str(decision_text(r, "b.example.com", buf, sizeof(buf)),
	    "allow allowed **.b.example.com", "JSON: subtree apex");
	tap_is_str(decision_text(r, "x.b.example.com", buf, sizeof(buf)),
	    "deny denied x.b.example.com", "JSON: deny wins");
	tap_is_str(decision_text(r, "10.2.3.4:5432", buf, sizeof(buf)),
	    "allow allowed 10.0.0.0/8:5432", "JSON: CIDR with its port");
	tap_is_str(decision_text(r, "v.w.example", buf, sizeof(buf)),
	    "allow allowed *.w.example", "JSON: a \\u escape");
	tap_is_str(decision_text(r, "[2001:db8::1]", buf, sizeof(buf)),
	    "allow allowed [2001:db8::1]", "JSON: IPv6 in brackets");
	rules_free(r);

	tap_is_int(rules_load_text(RUN_NAME, tail, 30, 0, &r, &err), 0,
	    "text: only len bytes are read");
	tap_ok(r != NULL && rules_count(r) == 1, "text: cut at len");
	rules_free(r);
}

/* A refused text: -1, no set, the message and the key's position. */
static void
refused(const char *text, unsigned int flags, unsigned long line,
    unsigned long col, const char *msg, const char *what)
{
	struct rules *r = (struct rules *)&r;
	struct rules_error err;
	char buf[RULES_ERROR_MAX + 128], want[RULES_ERROR_MAX + 128];

	tap_ok(load_text(text, flags, &r, &err) == -1 && r == NULL,
	    "%s: refused, no set", what);
	snprintf(want, sizeof(want), "%s:%lu:%lu: %s", RUN_NAME, line, col,
	    msg);
	tap_is_str(rules_error_str(&err, buf, sizeof(buf)), want,
	    "%s: name:line:col: message", what);
}

static void
test_text_refused(void)
{
	static const char nul[] = "version: 1\nallow: [a\0b.example]\n";
	const char *json_inc = "{\"version\": 1, \"include\": \"x.yaml\"}";
	const char *json_mode =
	    "{\"version\": 1, \"allow\": [\"a.example\"], "
	    "\"mode\": \"report\"}";
	const char *prov =
	    "version: 1\n"
	    "allow: [a.example]\n"
	    "providers:\n"
	    "  p:\n"
	    "    hosts: [h.example]\n";
	struct rules *r = (struct rules *)&r;
	struct rules_error err;
	char *big, name[RULES_PATH_MAX + 1], buf[RULES_ERROR_MAX + 128];

	refused("version: 1\nallow: [a.example]\ninclude: x.yaml\n", 0, 3, 1,
	    "include: a rule document given as text cannot include files",
	    "include in YAML");
	refused(json_inc, RULES_LOAD_POLICY, 1, col_of(json_inc, "\"include"),
	    "include: a rule document given as text cannot include files",
	    "include in a JSON policy");
	refused("version: 1\nmode: enforce\n", RULES_LOAD_POLICY, 2, 1,
	    "mode: a run's policy cannot set the mode (the operator's rules "
	    "do)", "mode in a policy");
	refused(json_mode, RULES_LOAD_POLICY, 1, col_of(json_mode, "\"mode"),
	    "mode: a run's policy cannot set the mode (the operator's rules "
	    "do)", "mode in a JSON policy");
	refused(prov, RULES_LOAD_POLICY, 3, 1,
	    "providers: a run's policy cannot define providers (the "
	    "operator's rules do)", "providers in a policy");
	refused("version: 1\nallow: [a.example, \"*.com\"]\n", 0, 2, 20,
	    "allow entry '*.com': a wildcard needs at least two labels after "
	    "it ('*.example.com', not '*.com')", "a bad entry");

	tap_is_int(load_text(json_mode, 0, &r, &err), 0,
	    "mode accepted without RULES_LOAD_POLICY");
	tap_ok(r != NULL && rules_mode(r) == RULES_MODE_REPORT,
	    "and read");
	rules_free(r);
	tap_is_int(load_text(prov, 0, &r, &err), 0,
	    "providers accepted without RULES_LOAD_POLICY");
	tap_ok(r != NULL && rules_provider_count(r) == 1 &&
	    rules_count(r) == 2, "and read");
	rules_free(r);

	r = (struct rules *)&r;
	tap_ok(rules_load_text(RUN_NAME, nul, sizeof(nul) - 1, 0, &r,
	    &err) == -1 && r == NULL, "a NUL byte in the text: refused");
	tap_ok(strncmp(err.msg, "invalid character (byte 0x00)", 29) == 0 &&
	    strcmp(err.file, RUN_NAME) == 0 && err.line == 2 &&
	    err.col == 10, "a NUL byte: where and what: %s",
	    rules_error_str(&err, buf, sizeof(buf)));
	r = (struct rules *)&r;
	tap_ok(load_text("{\"version\": 1, \"allow\": [\"a\\u0000b.example\"]}",
	    0, &r, &err) == -1 && r == NULL &&
	    strncmp(err.msg, "allow entry 'a\\x00b.example': ", 30) == 0,
	    "a NUL escaped in JSON: refused: %s", err.msg);

	r = (struct rules *)&r;
	tap_ok(rules_load_text(RUN_NAME, "", 0, 0, &r, &err) == -1 &&
	    r == NULL && strncmp(err.msg, "empty", 5) == 0,
	    "empty text refused: %s", err.msg);
	r = (struct rules *)&r;
	tap_ok(rules_load_text(RUN_NAME, NULL, 0, 0, &r, &err) == -1 &&
	    r == NULL && strncmp(err.msg, "empty", 5) == 0,
	    "no text (NULL, 0) refused like an empty one");
	r = (struct rules *)&r;
	tap_ok(load_text(" \n# nothing\n", 0, &r, &err) == -1 && r == NULL,
	    "a text of blanks and comments refused: %s", err.msg);

	if ((big = calloc(1, (size_t)RULES_FILE_MAX + 1)) == NULL)
		tap_skip(1, "cannot allocate 32 MiB");
	else {
		r = (struct rules *)&r;
		tap_ok(rules_load_text(RUN_NAME, big, (size_t)RULES_FILE_MAX +
		    1, 0, &r, &err) == -1 && r == NULL && err.line == 0 &&
		    strstr(err.msg, "too large") != NULL,
		    "a text over 32 MiB refused: %s", err.msg);
		free(big);
	}
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	r = (struct rules *)&r;
	tap_ok(rules_load_text(name, "version: 1\n", 11, 0, &r, &err) == -1 &&
	    r == NULL && strcmp(err.msg, "name too long") == 0,
	    "a name too long refused");
}

static void
test_entry_at(void)
{
	struct rules *r;
	struct rules_error err;
	const struct rules_entry *e;
	uint16_t ports[RULES_PORTS_MAX];
	const char *want[] = { "d.example", "a.example:22", "b.example",
	    "h.example" };
	const unsigned long line[] = { 2, 3, 3, 4 };
	size_t i;
	int ok = 1;

	if (!tap_is_int(load_text("version: 1\n"
	    "deny: [d.example]\n"
	    "allow: [a.example:22, b.example]\n"
	    "providers: {p: {hosts: [h.example]}}\n", 0, &r, &err), 0,
	    "entries: loads"))
		return;
	for (i = 0; i < 4; i++) {
		e = rules_entry_at(r, i);
		if (e == NULL || strcmp(rules_entry_text(e), want[i]) != 0 ||
		    rules_entry_is_deny(e) != (i == 0) ||
		    rules_entry_line(e) != line[i]) {
			tap_diag("entry %zu: %s", i, e == NULL ? "none" :
			    rules_entry_text(e));
			ok = 0;
		}
	}
	tap_ok(ok, "entries: rules_entry_at() in the order loaded");
	tap_ok(rules_entry_at(r, 4) == NULL, "entries: NULL past the end");
	tap_is_int((long long)rules_default_ports(r, ports), 2,
	    "ports: two by default");
	tap_ok(ports[0] == 443 && ports[1] == 80, "ports: 443 and 80");
	rules_free(r);

	if (!tap_is_int(load_text("version: 1\nports: [8443, 22, 80]\n", 0,
	    &r, &err), 0, "ports: a list loads"))
		return;
	tap_is_int((long long)rules_default_ports(r, ports), 3,
	    "ports: the list's length");
	tap_ok(ports[0] == 8443 && ports[1] == 22 && ports[2] == 80,
	    "ports: in the order written");
	rules_free(r);
}

/* Reads a whole text as strict JSON with the JSON reader. */
static int
json_map(struct yread *p, void *arg)
{
	char other[YREAD_QUOTE_BUF];

	(void)arg;
	for (;;) {
		if (yread_next(p) != 0)
			return -1;
		if (p->ev.type == YAML_MAPPING_END_EVENT)
			return 0;
		if (yread_key(p, NULL, 0, other, sizeof(other)) < 0 ||
		    yread_next(p) != 0 || yread_skip(p) != 0)
			return -1;
	}
}

static int
is_json(const char *text, size_t len, char *err, size_t errlen)
{
	struct yread y;

	yread_init(&y, "dump", YREAD_TEXT, 1, text, len, err, errlen);
	return yread_run(&y, json_map, NULL) == 0;
}

/*
 * rules_dump_where() of r names its entries in the dump's order, and
 * rules_set_where() gives back (r's dump, loaded) those places; bad lists
 * are refused with nothing changed.
 */
static void
where_check(const struct rules *r, struct rules *back, const char *what)
{
	char **w, *text = NULL, *want = NULL, a[RULES_WHERE_MAX];
	char b[RULES_WHERE_MAX];
	const char **v;
	size_t n = rules_count(r), i, k = 0, len, wlen = 2;
	int same = 1;

	if ((w = calloc(n + 1, sizeof(*w))) == NULL)
		return;
	for (int deny = 0; deny <= 1; deny++)
		for (i = 0; i < n; i++)
			if (rules_entry_is_deny(rules_entry_at(r, i)) == deny &&
			    (w[k++] = strdup(rules_entry_where(rules_entry_at(r,
			    i), a, sizeof(a)))) != NULL)
				wlen += strlen(w[k - 1]) + 3;
	if ((want = malloc(wlen)) != NULL) {
		snprintf(want, wlen, "[");
		for (i = 0; i < k; i++)
			snprintf(want + strlen(want), wlen - strlen(want),
			    "%s\"%s\"", i > 0 ? "," : "", w[i]);
		snprintf(want + strlen(want), wlen - strlen(want), "]");
	}
	if (tap_is_int(rules_dump_where(r, &text, &len), 0,
	    "%s: where its entries are from, dumped", what))
		tap_is_str(text, want, "%s: file:line of each, in the dump's "
		    "order", what);
	if (n > 0 && (v = calloc(n, sizeof(*v))) != NULL) {
		tap_is_int(rules_set_where(back, (const char *const *)w,
		    n - 1), -1, "%s: a list one short is refused", what);
		memcpy(v, w, n * sizeof(*v));
		v[n - 1] = "nowhere";
		tap_is_int(rules_set_where(back, v, n), -1,
		    "%s: a place with no line is refused", what);
		v[n - 1] = "file:12x";
		tap_is_int(rules_set_where(back, v, n), -1,
		    "%s: a line not a number is refused", what);
		tap_ok(strncmp(rules_entry_where(rules_entry_at(back, 0), b,
		    sizeof(b)), "dump:", 5) == 0, "%s: and nothing changed: "
		    "%s", what, b);
		free(v);
	}
	tap_is_int(rules_set_where(back, (const char *const *)w, n), 0,
	    "%s: the places set", what);
	for (i = 0; i < n; i++)
		if (strcmp(rules_entry_where(rules_entry_at(back, i), b,
		    sizeof(b)), w[i]) != 0)
			same = 0;
	tap_ok(same, "%s: the loaded dump names its entries as the set does",
	    what);
	for (i = 0; i < n; i++)
		free(w[i]);
	free(w);
	free(want);
	free(text);
}

/* Two strings equal, either or both NULL. */
static int
str_same(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Everything two providers hold is the same. */
static int
provider_same(const struct rules_provider *p, const struct rules_provider *q)
{
	const struct rules_broker *a = p->broker, *b = q->broker;
	size_t j;

	if (!str_same(p->name, q->name) || p->env_count != q->env_count ||
	    !str_same(p->api, q->api) || p->api_port != q->api_port ||
	    p->base_url_count != q->base_url_count ||
	    p->key_header_count != q->key_header_count ||
	    (a == NULL) != (b == NULL) || p->gateway != q->gateway)
		return 0;
	for (j = 0; j < p->env_count; j++)
		if (strcmp(p->env[j], q->env[j]) != 0)
			return 0;
	for (j = 0; j < p->base_url_count; j++)
		if (strcmp(p->base_url[j].var, q->base_url[j].var) != 0 ||
		    strcmp(p->base_url[j].path, q->base_url[j].path) != 0)
			return 0;
	for (j = 0; j < p->key_header_count; j++)
		if (strcmp(p->key_headers[j], q->key_headers[j]) != 0)
			return 0;
	return a == NULL || (strcmp(a->env, b->env) == 0 &&
	    strcmp(a->header, b->header) == 0 &&
	    strcmp(a->scheme, b->scheme) == 0 &&
	    strcmp(a->prefix, b->prefix) == 0 && a->length == b->length);
}

/*
 * Dumps `r`, loads the dump and dumps that again: the two texts must be
 * the same, and so must what the two sets hold.  Returns the loaded dump
 * (NULL on failure) and its text in *text.
 */
static struct rules *
round_trip(const struct rules *r, const char *what, char **text)
{
	struct rules *back = NULL;
	struct rules_error err;
	const struct rules_provider *p, *q;
	uint16_t pa[RULES_PORTS_MAX], pb[RULES_PORTS_MAX];
	size_t len, len2, i, j, na, nb;
	char *again = NULL, buf[RULES_ERROR_MAX + 128];
	int same;

	*text = NULL;
	if (!tap_is_int(rules_dump(r, text, &len), 0, "%s: dumps", what))
		return NULL;
	tap_ok(strlen(*text) == len, "%s: the length given", what);
	if (!tap_ok(is_json(*text, len, buf, sizeof(buf)),
	    "%s: the dump is JSON", what))
		tap_diag("%s", buf);
	if (!tap_is_int(rules_load_text("dump", *text, len, 0, &back, &err),
	    0, "%s: the dump loads", what)) {
		tap_diag("%s", rules_error_str(&err, buf, sizeof(buf)));
		return NULL;
	}
	if (tap_is_int(rules_dump(back, &again, &len2), 0, "%s: dumps again",
	    what))
		tap_is_str(again, *text, "%s: the same text again", what);
	free(again);
	tap_is_int((long long)rules_count(back), (long long)rules_count(r),
	    "%s: the same number of entries", what);
	tap_is_int(rules_mode(back), rules_mode(r), "%s: the same mode", what);
	na = rules_default_ports(r, pa);
	nb = rules_default_ports(back, pb);
	tap_ok(na == nb && memcmp(pa, pb, na * sizeof(pa[0])) == 0,
	    "%s: the same ports: list", what);

	/* The dump's entries: the allow ones, then the deny ones. */
	same = 1;
	j = 0;
	for (int deny = 0; deny <= 1; deny++) {
		for (i = 0; i < rules_count(r); i++) {
			const struct rules_entry *e = rules_entry_at(r, i);
			const struct rules_entry *f = rules_entry_at(back, j);

			if (rules_entry_is_deny(e) != deny)
				continue;
			j++;
			if (f == NULL || rules_entry_is_deny(f) != deny ||
			    strcmp(rules_entry_text(e),
			    rules_entry_text(f)) != 0)
				same = 0;
		}
	}
	tap_ok(same, "%s: the same entries, allow then deny", what);
	where_check(r, back, what);

	same = rules_provider_count(back) == rules_provider_count(r);
	for (i = 0; same && i < rules_provider_count(r); i++) {
		p = rules_provider_get(r, i);
		q = rules_provider_get(back, i);
		same = provider_same(p, q);
	}
	tap_ok(same, "%s: the same providers, env, gateway keys and gateway",
	    what);
	return back;
}

static const struct {
	const char	*dest;
	const char	*want;
} default_cases[] = {
	{ "github.com", "allow allowed github.com" },
	{ "GitHub.com.:443", "allow allowed github.com" },
	{ "github.com:22", "allow allowed github.com:22" },
	{ "github.com:80", "deny port-not-allowed github.com" },
	{ "gist.github.com", "deny denied gist.github.com" },
	{ "gist.github.com:22", "deny denied gist.github.com" },
	{ "api.anthropic.com", "allow allowed api.anthropic.com" },
	{ "api.anthropic.com:80", "deny port-not-allowed api.anthropic.com" },
	{ "sts.amazonaws.com", "allow allowed sts.amazonaws.com" },
	{ "s3.amazonaws.com", "deny not-allowlisted -" },
	{ "example.com", "deny not-allowlisted -" },
	{ "169.254.169.254", "deny denied 169.254.169.254/32" },
	{ "169.254.169.254:80", "deny denied 169.254.169.254/32" },
	{ "[::ffff:169.254.169.254]", "deny denied 169.254.169.254/32" },
	{ "[fd00:ec2::254]", "deny denied [fd00:ec2::254]" },
	{ "8.8.8.8", "deny not-allowlisted -" },
};

static const char *const default_addrs[] = {
	"169.254.169.254", "fd00:ec2::254", "::ffff:169.254.169.254",
	"10.0.0.1", "127.0.0.1", "8.8.8.8", "2001:4860::8888",
};

static void
test_dump_default(void)
{
	const char *top = getenv("top_srcdir");
	struct rules *r, *back;
	struct rules_error err;
	char path[4096], *text, a[256], b[256];
	size_t i;

	snprintf(path, sizeof(path), "%s/rules/default.yaml",
	    top != NULL ? top : ".");
	if (!tap_is_int(rules_load(path, &r, &err), 0,
	    "default.yaml loads")) {
		tap_diag("%s", rules_error_str(&err, a, sizeof(a)));
		return;
	}
	tap_ok(rules_provider_count(r) > 0, "default.yaml: with providers");
	if ((back = round_trip(r, "default.yaml", &text)) == NULL) {
		free(text);
		rules_free(r);
		return;
	}
	tap_ok(strstr(text, "  \"providers\": {\n    \"anthropic\": "
	    "{\"env\": [\"ANTHROPIC_API_KEY\", ") != NULL &&
	    strstr(text, "\"api\": \"api.anthropic.com\", \"base-url\": "
	    "[\"ANTHROPIC_BASE_URL\"], \"key-headers\": [\"x-api-key\", "
	    "\"authorization\"], \"broker\": {\"env\": "
	    "\"ANTHROPIC_API_KEY\", \"header\": \"x-api-key\", "
	    "\"prefix\": \"sk-ant-api03-\", \"length\": 108}}") != NULL,
	    "default.yaml: providers with their env and gateway keys");
	tap_ok(strstr(text, "\"gateway\"") == NULL,
	    "default.yaml: no gateway switched on, none dumped");
	for (i = 0; i < sizeof(default_cases) / sizeof(default_cases[0]);
	    i++) {
		tap_is_str(decision_text(r, default_cases[i].dest, a,
		    sizeof(a)), default_cases[i].want, "default.yaml: %s",
		    default_cases[i].dest);
		tap_is_str(decision_text(back, default_cases[i].dest, b,
		    sizeof(b)), default_cases[i].want, "its dump: %s",
		    default_cases[i].dest);
	}
	for (i = 0; i < sizeof(default_addrs) / sizeof(default_addrs[0]);
	    i++)
		tap_is_str(addr_text(back, default_addrs[i], 443, b, sizeof(b)),
		    addr_text(r, default_addrs[i], 443, a, sizeof(a)),
		    "its dump checks %s alike", default_addrs[i]);
	free(text);
	rules_free(back);
	rules_free(r);
}

static const char small_yaml[] =
    "version: 1\n"
    "mode: report\n"
    "ports: [443, 8443]\n"
    "allow:\n"
    "  - \"**.example.com\"\n"
    "  - \"*.wild.example.org\"\n"
    "  - api.example.net:22,443\n"
    "  - Upper.Example.ORG.\n"
    "  - 10.1.0.0/16\n"
    "  - \"[2001:db8::1]\"\n"
    "  - \"[2001:db8:1::]/48:443\"\n"
    "  - 192.0.2.7:8080\n"
    "deny:\n"
    "  - bad.example.com\n"
    "  - \"y.wild.example.org:8443\"\n"
    "  - 10.1.2.0/24:5432\n";

static const char small_json[] =
    "{\n"
    "  \"version\": 1,\n"
    "  \"mode\": \"report\",\n"
    "  \"ports\": [443, 8443],\n"
    "  \"allow\": [\n"
    "    \"**.example.com\",\n"
    "    \"*.wild.example.org\",\n"
    "    \"api.example.net:22,443\",\n"
    "    \"Upper.Example.ORG.\",\n"
    "    \"10.1.0.0/16\",\n"
    "    \"[2001:db8::1]\",\n"
    "    \"[2001:db8:1::]/48:443\",\n"
    "    \"192.0.2.7:8080\"\n"
    "  ],\n"
    "  \"deny\": [\n"
    "    \"bad.example.com\",\n"
    "    \"y.wild.example.org:8443\",\n"
    "    \"10.1.2.0/24:5432\"\n"
    "  ]\n"
    "}\n";

static const struct {
	const char	*dest;
	const char	*want;
} small_cases[] = {
	{ "example.com", "allow allowed **.example.com" },
	{ "a.b.example.com:8443", "allow allowed **.example.com" },
	{ "example.com:80", "deny port-not-allowed **.example.com" },
	{ "bad.example.com", "deny denied bad.example.com" },
	{ "wild.example.org", "deny not-allowlisted -" },
	{ "x.wild.example.org", "allow allowed *.wild.example.org" },
	{ "x.wild.example.org:8443", "allow allowed *.wild.example.org" },
	{ "y.wild.example.org:8443", "deny denied y.wild.example.org:8443" },
	{ "y.wild.example.org", "allow allowed *.wild.example.org" },
	{ "api.example.net:22", "allow allowed api.example.net:22,443" },
	{ "api.example.net:8443",
	    "deny port-not-allowed api.example.net:22,443" },
	{ "upper.example.org", "allow allowed Upper.Example.ORG." },
	{ "10.1.3.4", "allow allowed 10.1.0.0/16" },
	{ "10.1.2.3:5432", "deny denied 10.1.2.0/24:5432" },
	{ "10.1.2.3", "allow allowed 10.1.0.0/16" },
	{ "[::ffff:10.1.3.4]", "allow allowed 10.1.0.0/16" },
	{ "[2001:db8::1]:8443", "allow allowed [2001:db8::1]" },
	{ "[2001:db8::2]", "deny not-allowlisted -" },
	{ "[2001:db8:1::5]", "allow allowed [2001:db8:1::]/48:443" },
	{ "[2001:db8:1::5]:8443",
	    "deny port-not-allowed [2001:db8:1::]/48:443" },
	{ "192.0.2.7:8080", "allow allowed 192.0.2.7:8080" },
	{ "192.0.2.7", "deny port-not-allowed 192.0.2.7:8080" },
};

static void
test_dump_small(void)
{
	struct rules *r, *back, *empty;
	struct rules_error err;
	const struct rules_provider *p;
	char *text, a[256], b[256];
	size_t i, len;

	if (!tap_is_int(load_text(small_yaml, 0, &r, &err), 0,
	    "small set loads")) {
		tap_diag("%s", rules_error_str(&err, a, sizeof(a)));
		return;
	}
	if ((back = round_trip(r, "small set", &text)) == NULL) {
		free(text);
		rules_free(r);
		return;
	}
	tap_is_str(text, small_json, "small set: the dump, one entry a line");
	tap_ok(!is_json(small_yaml, sizeof(small_yaml) - 1, a, sizeof(a)),
	    "the JSON check refuses YAML: %s", a);
	tap_is_int(rules_mode(back), RULES_MODE_REPORT,
	    "small set: report mode kept");
	for (i = 0; i < sizeof(small_cases) / sizeof(small_cases[0]); i++) {
		tap_is_str(decision_text(r, small_cases[i].dest, a, sizeof(a)),
		    small_cases[i].want, "small set: %s", small_cases[i].dest);
		tap_is_str(decision_text(back, small_cases[i].dest, b,
		    sizeof(b)), small_cases[i].want, "its dump: %s",
		    small_cases[i].dest);
	}
	tap_is_str(addr_text(back, "10.1.2.3", 5432, b, sizeof(b)),
	    addr_text(r, "10.1.2.3", 5432, a, sizeof(a)),
	    "its dump checks a denied address alike");
	tap_is_str(addr_text(back, "10.2.0.1", 443, b, sizeof(b)),
	    addr_text(r, "10.2.0.1", 443, a, sizeof(a)),
	    "its dump checks an internal address alike");
	tap_is_int(rules_tightens(r, back, a, sizeof(a)), 0,
	    "its dump only narrows the set: %s", a);
	tap_is_int(rules_tightens(back, r, a, sizeof(a)), 0,
	    "the set only narrows its dump: %s", a);
	free(text);
	rules_free(back);
	rules_free(r);

	/* Nothing but a provider with neither hosts nor env. */
	if (!tap_is_int(load_text("version: 1\nproviders: {bare: {}}\n", 0,
	    &empty, &err), 0, "a provider without hosts loads"))
		return;
	if (tap_is_int(rules_dump(empty, &text, &len), 0, "and dumps"))
		tap_is_str(text, "{\n  \"version\": 1,\n"
		    "  \"mode\": \"enforce\",\n"
		    "  \"ports\": [443, 80],\n  \"allow\": [],\n"
		    "  \"deny\": [],\n  \"providers\": {\n"
		    "    \"bare\": {\"env\": []}\n  }\n}\n",
		    "no entries: empty lists, the default ports written");
	rules_free(empty);
	if (text != NULL && tap_is_int(rules_load_text("dump", text,
	    strlen(text), 0, &back, &err), 0, "which loads back")) {
		p = rules_provider_get(back, 0);
		tap_ok(rules_count(back) == 0 && p != NULL &&
		    strcmp(p->name, "bare") == 0 && p->env_count == 0,
		    "as the same provider");
		rules_free(back);
	}
	free(text);
}

/* ---------------------------------------------------- the gateway keys */

static const char gw_yaml[] =
    "version: 1\n"
    "gateway:\n"
    "  acme: broker\n"
    "  six: on\n"
    "  plain: off\n"
    "providers:\n"
    "  acme:\n"
    "    hosts: [api.acme.example]\n"
    "    env: [ACME_KEY]\n"
    "    api: API.Acme.Example.:8443\n"
    "    base-url: [ACME_URL=/v1, ACME_BASE,\n"
    "      \"ACME_X=/a/%7e:@!$&'()*+,;=-._~\"]\n"
    "    key-headers: [X-Api-Key, authorization]\n"
    "    broker:\n"
    "      env: ACME_KEY\n"
    "      header: Authorization\n"
    "      scheme: Bearer\n"
    "      prefix: ak-\n"
    "      length: 40\n"
    "  six:\n"
    "    api: \"[2001:DB8::1]\"\n"
    "    key-headers: [x-key]\n"
    "    broker: {env: SIX, header: x-key, scheme: \"\", prefix: \"s!x\", "
    "length: 20}\n"
    "  plain: {env: [PLAIN_KEY]}\n";

static const char gw_json[] =
    "{\n"
    "  \"version\": 1,\n"
    "  \"mode\": \"enforce\",\n"
    "  \"ports\": [443, 80],\n"
    "  \"allow\": [\n"
    "    \"api.acme.example\"\n"
    "  ],\n"
    "  \"deny\": [],\n"
    "  \"providers\": {\n"
    "    \"acme\": {\"env\": [\"ACME_KEY\"], \"api\": "
    "\"api.acme.example:8443\", \"base-url\": [\"ACME_URL=/v1\", "
    "\"ACME_BASE\", \"ACME_X=/a/%7e:@!$&'()*+,;=-._~\"], \"key-headers\": "
    "[\"x-api-key\", \"authorization\"], \"broker\": {\"env\": "
    "\"ACME_KEY\", \"header\": \"authorization\", \"scheme\": \"Bearer\", "
    "\"prefix\": \"ak-\", \"length\": 40}},\n"
    "    \"six\": {\"env\": [], \"api\": \"[2001:db8::1]\", "
    "\"key-headers\": [\"x-key\"], \"broker\": {\"env\": \"SIX\", "
    "\"header\": \"x-key\", \"prefix\": \"s!x\", \"length\": 20}},\n"
    "    \"plain\": {\"env\": [\"PLAIN_KEY\"]}\n"
    "  },\n"
    "  \"gateway\": {\n"
    "    \"acme\": \"broker\",\n"
    "    \"six\": \"on\"\n"
    "  }\n"
    "}\n";

static void
test_gateway_keys(void)
{
	struct rules *r, *back;
	struct rules_error err;
	const struct rules_provider *p;
	char *text, buf[RULES_ERROR_MAX + 128];

	if (!tap_is_int(load_text(gw_yaml, 0, &r, &err), 0,
	    "gateway: every key loads")) {
		tap_diag("%s", rules_error_str(&err, buf, sizeof(buf)));
		return;
	}
	p = rules_provider_find(r, "acme", 4);
	tap_ok(p != NULL && p == rules_provider_get(r, 0),
	    "rules_provider_find() finds a provider");
	tap_ok(rules_provider_find(r, "acmeX", 4) == p,
	    "rules_provider_find() reads len bytes only");
	tap_ok(rules_provider_find(r, "acm", 3) == NULL &&
	    rules_provider_find(r, "nope", 4) == NULL &&
	    rules_provider_find(r, "", 0) == NULL,
	    "rules_provider_find(): NULL for another name");
	if (p == NULL)
		goto out;
	tap_is_str(p->api, "api.acme.example", "api: the canonical host");
	tap_is_int(p->api_port, 8443, "api: its port");
	tap_ok(p->base_url_count == 3 &&
	    strcmp(p->base_url[0].var, "ACME_URL") == 0 &&
	    strcmp(p->base_url[0].path, "/v1") == 0 &&
	    strcmp(p->base_url[1].var, "ACME_BASE") == 0 &&
	    strcmp(p->base_url[1].path, "") == 0 &&
	    strcmp(p->base_url[2].path, "/a/%7e:@!$&'()*+,;=-._~") == 0,
	    "base-url: variables, paths, \"\" for none");
	tap_ok(p->key_header_count == 2 &&
	    strcmp(p->key_headers[0], "x-api-key") == 0 &&
	    strcmp(p->key_headers[1], "authorization") == 0,
	    "key-headers: lowercase, in order");
	tap_ok(p->broker != NULL && strcmp(p->broker->env, "ACME_KEY") == 0 &&
	    strcmp(p->broker->header, "authorization") == 0 &&
	    strcmp(p->broker->scheme, "Bearer") == 0 &&
	    strcmp(p->broker->prefix, "ak-") == 0 && p->broker->length == 40,
	    "broker: env, header (lowercase), scheme, prefix, length");
	tap_is_int(p->gateway, RULES_GATEWAY_BROKER, "gateway: broker");
	tap_ok(decides(r, "api.acme.example", RULES_ALLOW) &&
	    decides(r, "api.acme.example:8443", RULES_DENY),
	    "api is no allow entry: hosts are");

	p = rules_provider_find(r, "six", 3);
	tap_ok(p != NULL && strcmp(p->api, "[2001:db8::1]") == 0 &&
	    p->api_port == 443 && p->base_url_count == 0 &&
	    p->broker != NULL && strcmp(p->broker->scheme, "") == 0 &&
	    p->broker->length == 20 && p->gateway == RULES_GATEWAY_ON,
	    "an IPv6 api, port 443 by default, an empty scheme, gateway on");
	p = rules_provider_find(r, "plain", 5);
	tap_ok(p != NULL && p->api == NULL && p->api_port == 0 &&
	    p->base_url == NULL && p->base_url_count == 0 &&
	    p->key_headers == NULL && p->key_header_count == 0 &&
	    p->broker == NULL && p->gateway == RULES_GATEWAY_OFF,
	    "a provider without a gateway: its fields empty, off");

	if ((back = round_trip(r, "gateway set", &text)) != NULL) {
		tap_is_str(text, gw_json, "gateway set: the dump");
		rules_free(back);
	}
	free(text);
 out:
	rules_free(r);
}

/*
 * Each bad form: the text, where the error is (its line, and the first
 * text on that line the error points at), and its message.
 */
static const struct {
	const char	*text;
	unsigned long	 line;
	const char	*at;
	const char	*msg;
} gw_bad[] = {
	/* gateway: */
	{ "version: 1\ngateway: {acme: on}\nproviders: {b: {}, a: {}}\n",
	  2, "acme",
	  "gateway: provider 'acme' is not defined (defined: b, a)" },
	{ "version: 1\ngateway:\n  acme: off\n",
	  3, "acme",
	  "gateway: provider 'acme' is not defined (no provider is defined)" },
	{ "version: 1\nproviders: {acme: {hosts: [a.example]}}\n"
	  "gateway: {acme: on}\n",
	  3, "acme",
	  "gateway: provider 'acme' has no 'api': the gateway cannot reach it" },
	{ "version: 1\nproviders: {acme: {hosts: [a.example]}}\n"
	  "gateway: {acme: broker}\n",
	  3, "acme",
	  "gateway: provider 'acme' has no 'api': the gateway cannot reach it" },
	{ "version: 1\nproviders: {acme: {api: a.example}}\n"
	  "gateway: {acme: broker}\n",
	  3, "acme",
	  "gateway: provider 'acme' has no 'broker': its key cannot be "
	  "brokered" },
	{ "version: 1\nproviders: {acme: {api: a.example}}\n"
	  "gateway: {acme: yes}\n",
	  3, "yes",
	  "found gateway 'yes' for provider 'acme': expected on, off or broker" },
	{ "version: 1\nproviders: {acme: {api: a.example}}\n"
	  "gateway: {acme: [on]}\n",
	  3, "[on]",
	  "found a list: expected on, off or broker" },
	{ "version: 1\nproviders: {acme: {api: a.example}}\n"
	  "gateway: {acme: on, acme: off}\n",
	  3, "acme: off",
	  "gateway: provider 'acme' listed twice (first at line 3)" },
	{ "version: 1\ngateway: {Acme: on}\n",
	  2, "Acme",
	  "found provider name 'Acme': expected lowercase letters, digits and "
	  "'-'" },
	{ "version: 1\ngateway: [acme]\n",
	  2, "[acme]",
	  "found a list: expected a mapping of provider names to on, off or "
	  "broker" },
	/* api */
	{ "version: 1\nproviders: {acme: {api: \"*.a.example\"}}\n",
	  2, "\"*.",
	  "api '*.a.example': expected one host, not a wildcard" },
	{ "version: 1\nproviders: {acme: {api: \"**.a.example\"}}\n",
	  2, "\"**",
	  "api '**.a.example': expected one host, not a wildcard" },
	{ "version: 1\nproviders: {acme: {api: 10.0.0.0/8}}\n",
	  2, "10.0",
	  "api '10.0.0.0/8': expected one host, not a CIDR block" },
	{ "version: 1\nproviders: {acme: {api: \"a.example:443,80\"}}\n",
	  2, "\"a.example:443",
	  "api 'a.example:443,80': port must be a decimal number from 1 to "
	  "65535" },
	{ "version: 1\nproviders: {acme: {api: a_b.example}}\n",
	  2, "a_b",
	  "api 'a_b.example': character not allowed in a name (letters, "
	  "digits, '-' and '.' only)" },
	{ "version: 1\nproviders: {acme: {api: [a.example]}}\n",
	  2, "[a.example]",
	  "found a list: expected a host (HOST or HOST:PORT)" },
	/* base-url */
	{ "version: 1\nproviders: {acme: {api: a.b, base-url: [X-Y]}}\n",
	  2, "X-Y",
	  "found base-url 'X-Y': expected an environment variable name, or "
	  "NAME=/PATH" },
	{ "version: 1\nproviders: {acme: {api: a.b, base-url: [=/v1]}}\n",
	  2, "=/v1",
	  "found base-url '=/v1': expected an environment variable name, or "
	  "NAME=/PATH" },
	{ "version: 1\nproviders: {acme: {api: a.b, base-url: [X=v1]}}\n",
	  2, "X=v1",
	  "base-url 'X=v1': the path must start with '/'" },
	{ "version: 1\nproviders: {acme: {api: a.b, base-url: [X=]}}\n",
	  2, "X=]",
	  "base-url 'X=': the path must start with '/'" },
	{ "version: 1\nproviders: {acme: {api: a.b, base-url: [\"X=/v1?a=b\"]}}"
	  "\n",
	  2, "\"X=",
	  "base-url 'X=/v1?a=b': '?' in the path: expected URL path "
	  "characters (no '?', '#', spaces or control bytes; '%' with two hex "
	  "digits)" },
	{ "version: 1\nproviders: {acme: {api: a.b, base-url: [\"X=/v1#a\"]}}\n",
	  2, "\"X=",
	  "base-url 'X=/v1#a': '#' in the path: expected URL path characters "
	  "(no '?', '#', spaces or control bytes; '%' with two hex digits)" },
	{ "version: 1\nproviders: {acme: {api: a.b, base-url: [\"X=/a b\"]}}\n",
	  2, "\"X=",
	  "base-url 'X=/a b': ' ' in the path: expected URL path characters "
	  "(no '?', '#', spaces or control bytes; '%' with two hex digits)" },
	{ "version: 1\nproviders: {acme: {api: a.b, base-url: [\"X=/a\\tb\"]}}"
	  "\n",
	  2, "\"X=",
	  "base-url 'X=/a\\x09b': '\\x09' in the path: expected URL path "
	  "characters (no '?', '#', spaces or control bytes; '%' with two hex "
	  "digits)" },
	{ "version: 1\nproviders: {acme: {api: a.b, base-url: [\"X=/a%zz\"]}}\n",
	  2, "\"X=",
	  "base-url 'X=/a%zz': '%' in the path: expected URL path characters "
	  "(no '?', '#', spaces or control bytes; '%' with two hex digits)" },
	{ "version: 1\nproviders: {acme: {api: a.b, base-url: [\"X=/a\\0\"]}}"
	  "\n",
	  2, "\"X=",
	  "base-url 'X=/a\\x00': '\\x00' in the path: expected URL path "
	  "characters (no '?', '#', spaces or control bytes; '%' with two hex "
	  "digits)" },
	{ "version: 1\nproviders: {acme: {api: a.b, base-url: "
	  "[\"X=/\\u00e9\"]}}\n",
	  2, "\"X=",
	  "base-url 'X=/\xc3\xa9': a non-ASCII character in the path: "
	  "expected URL path characters (no '?', '#', spaces or control "
	  "bytes; '%' with two hex digits)" },
	{ "version: 1\nproviders: {acme: {api: a.b, base-url: [X, X=/v1]}}\n",
	  2, "X=/v1",
	  "base-url: variable 'X' listed twice" },
	{ "version: 1\nproviders: {acme: {api: a.b, base-url: "
	  "[A, B, C, D, E, F, G, H, I]}}\n",
	  2, "I]",
	  "more than 8 base-url variables" },
	{ "version: 1\nproviders: {acme: {api: a.b, base-url: X}}\n",
	  2, "X}",
	  "found 'X': expected a list of variable names" },
	/* key-headers */
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [\"x y\"]}}\n",
	  2, "\"x y",
	  "found key header 'x y': expected an HTTP header name (letters, "
	  "digits and !#$%&'*+-.^_`|~, at most 64 bytes)" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [\"x:y\"]}}\n",
	  2, "\"x:y",
	  "found key header 'x:y': expected an HTTP header name (letters, "
	  "digits and !#$%&'*+-.^_`|~, at most 64 bytes)" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [X-Key, "
	  "x-KEY]}}\n",
	  2, "x-KEY",
	  "key header 'x-KEY' listed twice" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: "
	  "[a, b, c, d, e, f, g, h, i]}}\n",
	  2, "i]",
	  "more than 8 key headers" },
	/* the gateway's keys need api */
	{ "version: 1\nproviders: {acme: {hosts: [a.b], key-headers: [x]}}\n",
	  2, "key-headers",
	  "key 'key-headers' in provider 'acme' without 'api': the gateway "
	  "needs the host it forwards to" },
	{ "version: 1\nproviders: {acme: {base-url: [X]}}\n",
	  2, "base-url",
	  "key 'base-url' in provider 'acme' without 'api': the gateway needs "
	  "the host it forwards to" },
	/* broker */
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{env: K, header: b, prefix: p, length: 40}}}\n",
	  2, "b, prefix",
	  "broker header 'b' of provider 'acme' is not one of its key-headers "
	  "(a)" },
	{ "version: 1\nproviders: {acme: {api: a.b, broker: "
	  "{env: K, header: b, prefix: p, length: 40}}}\n",
	  2, "b, prefix",
	  "broker header 'b' of provider 'acme' is not one of its key-headers "
	  "(none)" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{env: K, header: a, prefix: p}}}\n",
	  2, "{env",
	  "the broker of provider 'acme' has no 'length' (expected env, "
	  "header, prefix and length)" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{header: a, prefix: p, length: 40}}}\n",
	  2, "{header",
	  "the broker of provider 'acme' has no 'env' (expected env, header, "
	  "prefix and length)" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{env: K, header: a, length: 40}}}\n",
	  2, "{env",
	  "the broker of provider 'acme' has no 'prefix' (expected env, "
	  "header, prefix and length)" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{env: K, prefix: p, length: 40}}}\n",
	  2, "{env",
	  "the broker of provider 'acme' has no 'header' (expected env, "
	  "header, prefix and length)" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{env: K-1, header: a, prefix: p, length: 40}}}\n",
	  2, "K-1",
	  "found broker env 'K-1': expected an environment variable name "
	  "(letters, digits, '_')" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{env: K, header: \"a b\", prefix: p, length: 40}}}\n",
	  2, "\"a b",
	  "found broker header 'a b': expected an HTTP header name" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{env: K, header: a, scheme: \"Bearer x\", prefix: p, length: 40}}}\n",
	  2, "\"Bearer x",
	  "found broker scheme 'Bearer x': expected one word, such as Bearer, "
	  "or \"\"" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{env: K, header: a, prefix: \"a b\", length: 40}}}\n",
	  2, "\"a b",
	  "found broker prefix 'a b': expected 1 to 64 printable ASCII "
	  "characters without spaces" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{env: K, header: a, prefix: \"\", length: 40}}}\n",
	  2, "\"\"",
	  "found broker prefix '': expected 1 to 64 printable ASCII "
	  "characters without spaces" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{env: K, header: a, prefix: \"\\u00e9\", length: 40}}}\n",
	  2, "\"\\u00e9",
	  "found broker prefix '\xc3\xa9': expected 1 to 64 printable ASCII "
	  "characters without spaces" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{env: K, header: a, prefix: "
	  "\"0123456789012345678901234567890123456789012345678901234567890123"
	  "4\", length: 100}}}\n",
	  2, "\"0123",
	  "found broker prefix "
	  "'01234567890123456789012345678901234567890123456789012345678901234': "
	  "expected 1 to 64 printable ASCII characters without spaces" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{env: K, header: a, prefix: p, length: \"40\"}}}\n",
	  2, "\"40",
	  "found the string '40': expected a number (write it without quotes)" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{env: K, header: a, prefix: p, length: 19}}}\n",
	  2, "19",
	  "found broker length '19': expected a number from 20 to 512" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{env: K, header: a, prefix: p, length: 513}}}\n",
	  2, "513",
	  "found broker length '513': expected a number from 20 to 512" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{env: K, header: a, prefix: p, length: 040}}}\n",
	  2, "040",
	  "found broker length '040': expected a number from 20 to 512" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{env: K, header: a, prefix: p, length: -40}}}\n",
	  2, "-40",
	  "found broker length '-40': expected a number from 20 to 512" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{env: K, header: a, prefix: abcdef, length: 22}}}\n",
	  2, "22",
	  "broker length 22: expected more than the prefix's 6 bytes plus 16" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{env: K, header: a, prefix: p, length: 40, size: 1}}}\n",
	  2, "size",
	  "unknown key 'size' in the broker of provider 'acme' (expected env, "
	  "header, scheme, prefix or length)" },
	{ "version: 1\nproviders: {acme: {api: a.b, key-headers: [a], broker: "
	  "{env: K, env: L}}}\n",
	  2, "env: L",
	  "duplicate key 'env' in the broker of provider 'acme'" },
	{ "version: 1\nproviders: {acme: {api: a.b, broker: on}}\n",
	  2, "on}",
	  "found 'on': expected a mapping with env, header, prefix and length "
	  "(and scheme)" },
	/* the provider's keys */
	{ "version: 1\nproviders: {acme: {api: a.b, api: c.d}}\n",
	  2, "api: c.d",
	  "duplicate key 'api' in provider 'acme'" },
	{ "version: 1\nproviders: {acme: {api: a.b, apis: c.d}}\n",
	  2, "apis",
	  "unknown key 'apis' in provider 'acme' (expected hosts, env, api, "
	  "base-url, key-headers or broker)" },
};

/* The column of the first `at` on line `line` of text, 1-based. */
static unsigned long
col_at(const char *text, unsigned long line, const char *at)
{
	const char *p = text, *q;

	while (--line > 0 && (p = strchr(p, '\n')) != NULL)
		p++;
	if (p == NULL || (q = strstr(p, at)) == NULL)
		return 0;
	return (unsigned long)(q - p) + 1;
}

/* Each bad form refused at its place, with no set. */
static void
test_gateway_refused(void)
{
	size_t i;
	char what[64];

	for (i = 0; i < sizeof(gw_bad) / sizeof(gw_bad[0]); i++) {
		snprintf(what, sizeof(what), "gateway error %zu", i);
		refused(gw_bad[i].text, 0, gw_bad[i].line,
		    col_at(gw_bad[i].text, gw_bad[i].line, gw_bad[i].at),
		    gw_bad[i].msg, what);
	}
	refused("version: 1\ngateway: {}\n", RULES_LOAD_POLICY, 2, 1,
	    "gateway: a run's policy cannot switch the provider gateway (the "
	    "operator's rules do)", "gateway in a policy");
	refused("{\"version\": 1, \"gateway\": {\"anthropic\": \"on\"}}",
	    RULES_LOAD_POLICY, 1, 16, "gateway: a run's policy cannot switch "
	    "the provider gateway (the operator's rules do)",
	    "gateway in a JSON policy");
}

/*
 * Files: `gateway:` before or after the include that defines its
 * provider, refused in an included file, and an error found once the
 * whole set is loaded leaving nothing behind.
 */
static void
test_gateway_files(void)
{
	struct rules *r = (struct rules *)&r;
	struct rules_error err;
	const struct rules_provider *p;
	char buf[RULES_ERROR_MAX + RULES_PATH_MAX];

	write_file("gw-prov.yaml",
	    "version: 1\n"
	    "providers:\n"
	    "  acme:\n"
	    "    hosts: [api.acme.example]\n"
	    "    api: api.acme.example\n"
	    "    key-headers: [authorization]\n"
	    "    broker: {env: ACME_KEY, header: authorization, "
	    "scheme: Bearer, prefix: ak-, length: 40}\n");
	write_file("gw-before.yaml",
	    "version: 1\ngateway: {acme: broker}\ninclude: gw-prov.yaml\n");
	write_file("gw-after.yaml",
	    "version: 1\ninclude: gw-prov.yaml\ngateway: {acme: on}\n");
	if (tap_is_int(load("gw-before.yaml", &r, &err), 0,
	    "gateway: before the include that defines its provider")) {
		p = rules_provider_find(r, "acme", 4);
		tap_ok(p != NULL && p->gateway == RULES_GATEWAY_BROKER,
		    "and switched on");
		rules_free(r);
	} else
		tap_diag("%s", rules_error_str(&err, buf, sizeof(buf)));
	if (tap_is_int(load("gw-after.yaml", &r, &err), 0,
	    "gateway: after it")) {
		p = rules_provider_find(r, "acme", 4);
		tap_ok(p != NULL && p->gateway == RULES_GATEWAY_ON,
		    "and switched on");
		rules_free(r);
	} else
		tap_diag("%s", rules_error_str(&err, buf, sizeof(buf)));

	write_file("gw-inc.yaml", "version: 1\nallow: [a.example]\n\n"
	    "gateway: {acme: on}\n");
	write_file("gw-top.yaml", "version: 1\ninclude: [gw-prov.yaml, "
	    "gw-inc.yaml]\n");
	r = (struct rules *)&r;
	tap_ok(load("gw-top.yaml", &r, &err) == -1 && r == NULL,
	    "gateway in an included file: refused, no set");
	tap_is_str(err.file, path_of("gw-inc.yaml"), "named by its file");
	tap_ok(err.line == 4 && err.col == 1, "at the key: %lu:%lu", err.line,
	    err.col);
	tap_is_str(err.msg, "key 'gateway' in an included file: only the "
	    "top-level rule file may set it", "with the reason");

	/* Found after every file loaded: the top file's place, no set. */
	write_file("gw-late.yaml", "version: 1\nallow: [x.example]\n"
	    "gateway:\n  acme: on\n  other: on\ninclude: gw-prov.yaml\n");
	r = (struct rules *)&r;
	tap_ok(load("gw-late.yaml", &r, &err) == -1 && r == NULL,
	    "an undefined provider, known once all is loaded: no set");
	tap_is_str(rules_error_str(&err, buf, sizeof(buf)) +
	    strlen(tmpdir) + 1, "gw-late.yaml:5:3: gateway: provider 'other' "
	    "is not defined (defined: acme)", "named at its place");
}

static void
test_gateway_default(void)
{
	const char *top = getenv("top_srcdir");
	struct rules *r, *back;
	struct rules_error err;
	const struct rules_provider *p;
	char text[RULES_PATH_MAX + 256], *dump, buf[RULES_ERROR_MAX + 128];
	size_t i;
	int ok = 1;

	/* The shipped providers, two of them switched on. */
	snprintf(text, sizeof(text), "version: 1\n"
	    "include: %s/rules/providers.yaml\n"
	    "gateway: {anthropic: on, openai: broker, google: broker, "
	    "groq: broker, openrouter: broker, mistral: on, bedrock: off}\n",
	    top != NULL && top[0] == '/' ? top : getenv("PWD"));
	write_file("gw-default.yaml", text);
	if (!tap_is_int(load("gw-default.yaml", &r, &err), 0,
	    "the shipped providers with their gateways on")) {
		tap_diag("%s", rules_error_str(&err, buf, sizeof(buf)));
		return;
	}
	for (i = 0; i < rules_provider_count(r); i++) {
		p = rules_provider_get(r, i);
		if ((strcmp(p->name, "bedrock") == 0 ||
		    strcmp(p->name, "vertex") == 0) !=
		    (p->api == NULL && p->gateway == RULES_GATEWAY_OFF)) {
			tap_diag("provider %s", p->name);
			ok = 0;
		}
	}
	tap_ok(ok, "every shipped provider but bedrock and vertex has a "
	    "gateway");
	p = rules_provider_find(r, "openai", 6);
	tap_ok(p != NULL && p->base_url_count == 1 &&
	    strcmp(p->base_url[0].var, "OPENAI_BASE_URL") == 0 &&
	    strcmp(p->base_url[0].path, "/v1") == 0 && p->broker != NULL &&
	    strcmp(p->broker->scheme, "Bearer") == 0 &&
	    p->gateway == RULES_GATEWAY_BROKER, "openai: /v1, Bearer, broker");
	if ((back = round_trip(r, "shipped gateways", &dump)) != NULL) {
		tap_ok(strstr(dump, "  \"gateway\": {\n    \"anthropic\": \"on\","
		    "\n    \"openai\": \"broker\",\n") != NULL,
		    "shipped gateways: in the dump, off left out");
		tap_ok(strstr(dump, "\"bedrock\": \"off\"") == NULL,
		    "shipped gateways: off is not dumped");
		rules_free(back);
	}
	free(dump);
	rules_free(r);
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
	test_text_good();
	test_text_refused();
	test_entry_at();
	test_dump_default();
	test_dump_small();
	test_gateway_keys();
	test_gateway_refused();
	test_gateway_files();
	test_gateway_default();
	cleanup();
	return tap_done();
}
