/*
 * control.h — the launcher's side of the proxy's control API (the unix
 * socket DIR/control.sock; intutic-proxy(8), CONTROL API): one request, and
 * the runs it lists, read.  `intutic exec` registers and ends its run with
 * it, `intutic runs` shows and ends runs.
 */
#ifndef INTUTIC_CONTROL_H
#define INTUTIC_CONTROL_H

#include <stddef.h>

#define CONTROL_RUN_ID_MAX	64
#define CONTROL_TEXT_MAX	1024

/*
 * METHOD PATH on the control socket `sock` (a path of any length), with
 * body (JSON) or NULL: 0 with the status and the answer (the caller's to
 * free; NULL for none wanted), or -1 and why.  For a status of 400 and
 * more, why also holds the proxy's error.
 */
int	 control_request(const char *sock, const char *method,
	    const char *path, const char *body, long *status, char **answer,
	    char *why, size_t whylen);

/* A run as GET /v1/runs describes it. */
struct control_run {
	char		 id[CONTROL_RUN_ID_MAX];
	long long	 uid;
	long long	 pid;		/* -1: null */
	long long	 registered;	/* seconds since the epoch */
	char		 command[CONTROL_TEXT_MAX];
	char		 project[CONTROL_TEXT_MAX];	/* "": null */
};

/*
 * The runs of an answer {"runs":[...]} (list 1) or the one run of an
 * answer {...} (list 0): *runs the caller's to free, *n of them.  0, or -1
 * and why.
 */
int	 control_runs_parse(const char *answer, size_t len, int list,
	    struct control_run **runs, size_t *n, char *why, size_t whylen);

#endif /* INTUTIC_CONTROL_H */
