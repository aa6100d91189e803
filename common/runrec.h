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
#define RUNREC_POLICY_MAX	(16 * 1024)	/* bytes of a policy's text */
#define RUNREC_DENIALS_MAX	8	/* last denials read */

/* One of a run's last denials (GET /v1/runs/RUN). */
struct runrec_denial {
	long long	 time;
	char		 host[256];
	long long	 port;
	char		 reason[64];
	char		 rule[RUNREC_TEXT_MAX];	/* "": none */
};

struct runrec {
	char		 id[RUNREC_ID_MAX];
	long long	 uid;
	long long	 pid;		/* -1: null */
	long long	 pid_start;	/* its start time; -1: not given */
	long long	 registered;	/* seconds since the epoch */
	char		 command[RUNREC_TEXT_MAX];
	char		 project[RUNREC_TEXT_MAX];	/* "": null */
	char		 addr[64];	/* its sandbox's address; "": null */
	char		 mac[RUNREC_MAC_HEX + 1];	/* "": not given */
	char		*policy;	/* its text, malloc'd; NULL: null */
	long long	 generation;	/* -1: not given */
	long long	 requests;	/* -1: not given, and the rest */
	long long	 denials;
	long long	 bytes_up;
	long long	 bytes_down;
	struct runrec_denial *denied;	/* malloc'd; NULL: none given */
	size_t		 ndenied;
};

/*
 * The runs of buf[0..len), named name in messages: {"runs":[...]} (list
 * 1) or one run {...} (list 0).  *runs the caller's to free with
 * runrec_free(), *n of them.  0, or -1 and why.
 */
int	 runrec_parse(const char *name, const char *buf, size_t len, int list,
	    struct runrec **runs, size_t *n, char *why, size_t whylen);
void	 runrec_free(struct runrec *runs, size_t n);

#endif /* INTUTIC_RUNREC_H */
