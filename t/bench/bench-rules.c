/*
 * bench-rules.c — load time and decision rate of the rule library on a
 * generated file (scripts/bench rules runs it).  Not a test: it prints
 * figures and the targets next to them, and times nothing in the suite.
 *
 * usage: bench-rules [-n ENTRIES] [-d DECISIONS] [-r LOAD_RUNS] [-k]
 */
#include "config.h"

#include <sys/stat.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rules.h"

#define TARGET_LOAD_MS		150.0
#define TARGET_DECISIONS	2000000.0

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long
number(const char *s, const char *what)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v <= 0) {
		fprintf(stderr, "bench-rules: bad %s '%s'\n", what, s);
		exit(2);
	}
	return v;
}

/* One entry in four of each form: exact, "*.", "**." with a port, CIDR. */
static void
generate(const char *path, long n)
{
	FILE *fp;
	long i;

	if ((fp = fopen(path, "w")) == NULL) {
		perror(path);
		exit(1);
	}
	fprintf(fp, "version: 1\nallow:\n");
	for (i = 0; i < n; i++) {
		switch (i % 4) {
		case 0:
			fprintf(fp, "  - api%ld.service%ld.example.com\n", i,
			    i % 97);
			break;
		case 1:
			fprintf(fp, "  - \"*.cdn%ld.example.net\"\n", i);
			break;
		case 2:
			fprintf(fp, "  - \"**.pkg%ld.example.org:8443\"\n", i);
			break;
		default:
			fprintf(fp, "  - 10.%ld.%ld.0/24\n", (i >> 8) & 255,
			    i & 255);
			break;
		}
	}
	fprintf(fp, "deny:\n  - api4.service4.example.com\n"
	    "  - 169.254.169.254/32\n");
	if (fclose(fp) != 0) {
		perror(path);
		exit(1);
	}
}

int
main(int argc, char **argv)
{
	struct rules *r = NULL;
	struct rules_error err;
	struct rules_host *hosts;
	struct rules_decision d;
	char path[] = "/tmp/intutic-bench-rules.XXXXXX", buf[300], msg[5000];
	long entries = 100000, decisions = 4000000, runs = 5, i, allowed = 0;
	long nhosts = 4096;
	double t0, best = 1e9, dt, rate;
	cpu_set_t cpu;
	struct stat st;
	int c, fd, keep = 0;

	while ((c = getopt(argc, argv, "n:d:r:k")) != -1) {
		switch (c) {
		case 'n':
			entries = number(optarg, "entry count");
			break;
		case 'd':
			decisions = number(optarg, "decision count");
			break;
		case 'r':
			runs = number(optarg, "run count");
			break;
		case 'k':
			keep = 1;
			break;
		default:
			fprintf(stderr, "usage: bench-rules [-n ENTRIES] "
			    "[-d DECISIONS] [-r LOAD_RUNS] [-k]\n");
			return 2;
		}
	}
	/* One core, as the target says. */
	CPU_ZERO(&cpu);
	CPU_SET(0, &cpu);
	(void)sched_setaffinity(0, sizeof(cpu), &cpu);

	if ((fd = mkstemp(path)) == -1) {
		perror("mkstemp");
		return 1;
	}
	close(fd);
	generate(path, entries);

	for (i = 0; i < runs; i++) {
		rules_free(r);
		t0 = now();
		if (rules_load(path, &r, &err) != 0) {
			fprintf(stderr, "%s\n", rules_error_str(&err, msg,
			    sizeof(msg)));
			return 1;
		}
		dt = now() - t0;
		if (dt < best)
			best = dt;
	}

	/* A mix of what a proxy sees: hits of each form, misses, denials. */
	if ((hosts = calloc((size_t)nhosts, sizeof(*hosts))) == NULL)
		return 1;
	for (i = 0; i < nhosts; i++) {
		long k = (i * 7919) % entries;

		switch (i % 6) {
		case 0:
			k -= k % 4;
			snprintf(buf, sizeof(buf),
			    "api%ld.service%ld.example.com", k, k % 97);
			break;
		case 1:
			k -= k % 4;
			k += 1;
			snprintf(buf, sizeof(buf), "a.b.cdn%ld.example.net", k);
			break;
		case 2:
			k -= k % 4;
			k += 2;
			snprintf(buf, sizeof(buf), "x.pkg%ld.example.org", k);
			break;
		case 3:
			snprintf(buf, sizeof(buf), "10.%ld.%ld.7",
			    (k >> 8) & 255, k & 255);
			break;
		case 4:
			snprintf(buf, sizeof(buf),
			    "telemetry%ld.tracker.example.io", k);
			break;
		default:
			snprintf(buf, sizeof(buf), "api4.service4.example.com");
			break;
		}
		if (rules_host_parse(buf, strlen(buf), &hosts[i]) != RULES_OK) {
			fprintf(stderr, "bench-rules: bad host %s\n", buf);
			return 1;
		}
	}
	t0 = now();
	for (i = 0; i < decisions; i++) {
		rules_decide(r, &hosts[i & (nhosts - 1)], (i & 1) ? 443 : 8443,
		    &d);
		allowed += d.verdict == RULES_ALLOW;
	}
	dt = now() - t0;
	rate = (double)decisions / dt;

	if (stat(path, &st) != 0)
		st.st_size = 0;
	printf("rules: %ld entries (%lld bytes of YAML)\n", entries + 2,
	    (long long)st.st_size);
	printf("  load:      %8.1f ms   (best of %ld; target < %.0f ms)  %s\n",
	    best * 1e3, runs, TARGET_LOAD_MS,
	    best * 1e3 < TARGET_LOAD_MS ? "ok" : "MISSED");
	printf("  decisions: %8.2f M/s  (%ld on one core, %ld allowed; "
	    "target >= %.0f M/s)  %s\n", rate / 1e6, decisions, allowed,
	    TARGET_DECISIONS / 1e6, rate >= TARGET_DECISIONS ? "ok" : "MISSED");
	printf("  per decision: %.0f ns\n", dt / (double)decisions * 1e9);
	if (keep)
		printf("  file kept: %s\n", path);
	else
		unlink(path);
	rules_free(r);
	free(hosts);
	return 0;
}
