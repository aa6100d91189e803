/*
 * runrec.h — a run as a JSON object, read: what the control API lists
 * (GET /v1/runs, read by `intutic runs`) and what the proxy keeps in its
 * state directory (DIR/runs.json, read again when it starts), one reader
 * for both.  Keys it does not know are skipped; a run without "run" is
 * refused.
 */
#ifndef INTUTIC_RUNREC_H
#define INTUTIC_RUNREC_H

#include <stddef.h>

#define RUNREC_ID_MAX		64
#define RUNREC_TEXT_MAX		1024
#define RUNREC_MAC_HEX		64	/* hex digits of a token's MAC */

struct runrec {
	char		 id[RUNREC_ID_MAX];
	long long	 uid;
	long long	 pid;		/* -1: null */
	long long	 pid_start;	/* its start time; -1: not given */
	long long	 registered;	/* seconds since the epoch */
	char		 command[RUNREC_TEXT_MAX];
	char		 project[RUNREC_TEXT_MAX];	/* "": null */
	char		 mac[RUNREC_MAC_HEX + 1];	/* "": not given */
};

/*
 * The runs of buf[0..len), named name in messages: {"runs":[...]} (list
 * 1) or one run {...} (list 0).  *runs the caller's to free, *n of them.
 * 0, or -1 and why.
 */
int	 runrec_parse(const char *name, const char *buf, size_t len, int list,
	    struct runrec **runs, size_t *n, char *why, size_t whylen);

#endif /* INTUTIC_RUNREC_H */
