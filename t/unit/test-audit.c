/*
 * test-audit.c — the audit log's JSON Lines writer: each field in its
 * place and form (strings escaped, unknown numbers null, the run fields
 * only on run records), the largest numbers whole, and a record too long
 * for AUDIT_RECORD_MAX replaced by a short one that says so, never cut.
 * The records are read back from a real file; only the time stamp is
 * compared by shape.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "tap.h"

#define LINES_MAX	8
#define TS_LEN		(sizeof("{\"ts\":\"2026-12-01T23:11:27.175Z\"") - 1)

static char	path[] = "/tmp/test-audit.XXXXXX";
static char	lines[LINES_MAX][AUDIT_RECORD_MAX + 2];
static int	nlines;

/* Writes r to a fresh log and reads its lines back into lines[]. */
static int
write_one(const struct audit_record *r)
{
	char err[256];
	struct audit *a;
	FILE *f;
	int ok;

	if (truncate(path, 0) != 0 || (a = audit_open(path, err, sizeof(err))) == NULL)
		return -1;
	ok = audit_write(a, r) == 0;
	audit_free(a);
	if (!ok || (f = fopen(path, "r")) == NULL)
		return -1;
	for (nlines = 0; nlines < LINES_MAX &&
	    fgets(lines[nlines], sizeof(lines[nlines]), f) != NULL; nlines++)
		;
	fclose(f);
	return 0;
}

/* The line after its time stamp, or the whole line when it has none. */
static const char *
after_ts(const char *line)
{
	static const char shape[] = "{\"ts\":\"0000-00-00T00:00:00.000Z\"";
	size_t i;

	if (strlen(line) < TS_LEN)
		return line;
	for (i = 0; i < TS_LEN; i++)
		if (shape[i] == '0' ? line[i] < '0' || line[i] > '9' :
		    line[i] != shape[i])
			return line;
	return line + TS_LEN;
}

static struct audit_record
close_record(void)
{
	struct audit_record r;

	memset(&r, 0, sizeof(r));
	r.event = "close";
	r.id = 42;
	r.client = "127.0.0.1:48536";
	r.proto = "http";
	r.host = "origin.test";
	r.port = 9080;
	r.addr = "127.0.0.1";
	r.decision = "allow";
	r.reason = "allowed";
	r.rule = "rules.yaml:3";
	r.bytes_up = 105;
	r.bytes_down = 112;
	r.duration_ms = 0;
	r.status = 200;
	return r;
}

int
main(void)
{
	struct audit_record r;
	char longrule[AUDIT_RECORD_MAX];
	int fd;

	tap_plan(12);
	if ((fd = mkstemp(path)) == -1)
		tap_skip_all("cannot make a file in /tmp");
	close(fd);

	r = close_record();
	tap_ok(write_one(&r) == 0 && nlines == 1, "a close record: one line");
	tap_ok(after_ts(lines[0]) != lines[0],
	    "it starts with the time stamp, UTC to the millisecond");
	tap_is_str(after_ts(lines[0]),
	    ",\"event\":\"close\",\"id\":42,\"run\":null,"
	    "\"client\":\"127.0.0.1:48536\",\"proto\":\"http\","
	    "\"host\":\"origin.test\",\"port\":9080,\"sni\":null,"
	    "\"addr\":\"127.0.0.1\",\"decision\":\"allow\","
	    "\"reason\":\"allowed\",\"rule\":\"rules.yaml:3\","
	    "\"bytes_up\":105,\"bytes_down\":112,\"duration_ms\":0,"
	    "\"status\":200}\n",
	    "every field in its place; 0 is 0, NULL strings are null");

	r = close_record();
	r.event = "decision";
	r.bytes_up = r.bytes_down = r.duration_ms = -1;
	r.status = -1;
	r.port = -1;
	tap_ok(write_one(&r) == 0 && nlines == 1, "a decision record: one line");
	tap_ok(strstr(lines[0], ",\"port\":null,") != NULL &&
	    strstr(lines[0], ",\"bytes_up\":null,\"bytes_down\":null,"
	    "\"duration_ms\":null,\"status\":null}\n") != NULL,
	    "numbers not known yet (negative) are null");

	r = close_record();
	r.id = UINT64_MAX;
	r.bytes_up = INT64_MAX;
	tap_ok(write_one(&r) == 0 &&
	    strstr(lines[0], ",\"id\":18446744073709551615,") != NULL &&
	    strstr(lines[0], ",\"bytes_up\":9223372036854775807,") != NULL,
	    "the largest id and byte count, whole");

	r = close_record();
	r.host = "a\"b\\c\nd\x01" "e\x7f";
	tap_ok(write_one(&r) == 0 && strstr(lines[0],
	    ",\"host\":\"a\\\"b\\\\c\\u000ad\\u0001e\\u007f\",") != NULL,
	    "quote, backslash and control characters escaped");

	r = close_record();
	tap_ok(write_one(&r) == 0 && strstr(lines[0], "\"command\"") == NULL,
	    "no run fields on a connection's record");
	r.event = "run";
	r.command = "claude";
	r.project = NULL;
	r.pid = 4242;
	tap_ok(write_one(&r) == 0 && strstr(lines[0],
	    ",\"status\":200,\"command\":\"claude\",\"project\":null,"
	    "\"pid\":4242}\n") != NULL,
	    "a run record: command, project, pid last");

	r = close_record();
	memset(longrule, 'r', sizeof(longrule) - 1);
	longrule[sizeof(longrule) - 1] = '\0';
	r.rule = longrule;
	tap_ok(write_one(&r) == 0 && nlines == 1,
	    "a record longer than AUDIT_RECORD_MAX: still one line");
	tap_is_str(lines[0], "{\"event\":\"close\",\"id\":42,\"truncated\":true}\n",
	    "which says it was cut, with its event and id, not a cut line");

	/* One byte short of where the record no longer fits, and at it. */
	r = close_record();
	r.rule = "";
	if (write_one(&r) == 0) {
		size_t base = strlen(lines[0]);

		longrule[AUDIT_RECORD_MAX - base - 1] = '\0';
		r.rule = longrule;
		tap_ok(write_one(&r) == 0 &&
		    strlen(lines[0]) == AUDIT_RECORD_MAX - 1 &&
		    strstr(lines[0], "\"truncated\"") == NULL,
		    "a record of AUDIT_RECORD_MAX - 1 bytes is written whole");
	} else
		tap_ok(0, "a record of AUDIT_RECORD_MAX - 1 bytes is written whole");
	unlink(path);
	return tap_done();
}
