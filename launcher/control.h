/*
 * control.h — the launcher's side of the proxy's control API (the unix
 * socket DIR/control.sock; intutic-proxy(8), CONTROL API): where the
 * socket is, and one request; `intutic exec` registers and ends its run
 * with it, `intutic runs` shows, changes and ends runs (common/runrec.h
 * reads what it lists), policy.c reads the operator's rules and a run's
 * policy.
 */
#ifndef INTUTIC_CONTROL_H
#define INTUTIC_CONTROL_H

#include <stddef.h>

#define CONTROL_RUN_ID_MAX	64

struct proxy_loc;

/*
 * The proxy whose state file is in state_dir (NULL: the default state
 * directory), and its control socket, loc->control (proxy_locate(): when
 * INTUTIC_PROXY_URL names the proxy, the socket of that state file if it
 * is of a proxy on that port): 0, or the exit status of intutic(1) with
 * why: EXIT_NOT_RUNNING when there is no such state file, EXIT_CANNOT_RUN
 * when it cannot be read or names no socket.
 */
int	 control_find(const char *state_dir, struct proxy_loc *loc, char *why,
	    size_t whylen);

/*
 * METHOD PATH on the control socket `sock` (a path of any length), with
 * body (JSON) or NULL: 0 with the status and the answer (the caller's to
 * free; NULL for none wanted), or -1 and why.  why also says what the
 * status was: "HTTP 200"; for 400 and more, the proxy's error message
 * first, "no run 'x' (HTTP 404)" (control bytes shown as \xHH), or the
 * answer's first line when it is not {"error": MESSAGE}.
 */
int	 control_request(const char *sock, const char *method,
	    const char *path, const char *body, long *status, char **answer,
	    char *why, size_t whylen);

#endif /* INTUTIC_CONTROL_H */
