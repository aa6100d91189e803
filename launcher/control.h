/*
 * control.h — the launcher's side of the proxy's control API (the unix
 * socket DIR/control.sock; intutic-proxy(8), CONTROL API): one request, and
 * `intutic exec` registers and ends its run with it, `intutic runs` shows
 * and ends runs (common/runrec.h reads what it lists).
 */
#ifndef INTUTIC_CONTROL_H
#define INTUTIC_CONTROL_H

#include <stddef.h>

#define CONTROL_RUN_ID_MAX	64

/*
 * METHOD PATH on the control socket `sock` (a path of any length), with
 * body (JSON) or NULL: 0 with the status and the answer (the caller's to
 * free; NULL for none wanted), or -1 and why.  For a status of 400 and
 * more, why also holds the proxy's error.
 */
int	 control_request(const char *sock, const char *method,
	    const char *path, const char *body, long *status, char **answer,
	    char *why, size_t whylen);

#endif /* INTUTIC_CONTROL_H */
