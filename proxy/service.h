/*
 * service.h — what the proxy does for the service manager that runs it:
 * tell systemd it is ready (the notify protocol of sd_notify(3), without
 * libsystemd), and leave root for a user of its own once its listeners are
 * bound (--user).
 */
#ifndef INTUTIC_SERVICE_H
#define INTUTIC_SERVICE_H

#include <stddef.h>

#define SERVICE_NOTIFY_MAX	256	/* one notify datagram */

/*
 * Sends state (e.g. "READY=1\nSTATUS=...") to the socket $NOTIFY_SOCKET
 * names: a path, or an abstract name written with a leading '@'.  Returns
 * 1 when sent, 0 when there is no such variable (not run by systemd, or
 * not as Type=notify), -1 when it could not be sent (errno set; the caller
 * says so: systemd then gives up on the service by its own timeout).
 * Never blocks for long: a datagram to a local socket.
 */
int	service_notify(const char *state);

/*
 * --user NAME: makes state_dir ready for NAME (created owned by it when it
 * is missing; parents created as they are), then sets the groups of NAME,
 * its group and its user, for good: a later setuid(0) must fail, else
 * this fails too.  The process stays dumpable, as one that systemd starts
 * as NAME is, so that NAME's and root's `intutic status` can read /proc.
 * Called once the listeners are bound, before any thread starts (the
 * change then holds for every thread without glibc's broadcast).  When
 * the process already runs as NAME, only checks state_dir.  Returns 0, or
 * -1 with err set to a message that says what to do.
 */
int	service_drop_user(const char *name, const char *state_dir, char *err,
	    size_t errlen);

#endif /* INTUTIC_SERVICE_H */
