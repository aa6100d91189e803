/*
 * paths.h — where intutic's programs keep their run-time files, so that the
 * proxy and the launcher agree on them.
 */
#ifndef INTUTIC_PATHS_H
#define INTUTIC_PATHS_H

#include <stddef.h>

/* The proxy's state file, in the state directory. */
#define PATHS_STATE_FILE	"proxy.json"
/* The service's state directory (the package's unit, tmpfiles.d). */
#define PATHS_SYSTEM_STATE_DIR	"/run/intutic"

/*
 * The default state directory: $XDG_STATE_HOME/intutic when XDG_STATE_HOME
 * is an absolute path, else $HOME/.local/state/intutic when HOME is, else
 * /run/intutic.  Writes it into buf.  Returns 0, or -1 when it does not fit
 * in len bytes (buf then holds "").
 */
int	 paths_state_dir(char *buf, size_t len);

/*
 * DIR/proxy.json into buf.  Returns 0, or -1 when it does not fit (buf then
 * holds "").
 */
/*
 * intutic's cache directory: $XDG_CACHE_HOME/intutic when it is an absolute
 * path, else $HOME/.cache/intutic.  0, or -1 when neither is set (or the
 * name does not fit).
 */
int	 paths_cache_dir(char *buf, size_t len);

int	 paths_state_file(const char *dir, char *buf, size_t len);

/* Makes dir and its parents (mode 0700) where missing: 0, or -1 (errno). */
int	 paths_mkdirs(const char *dir);

#endif /* INTUTIC_PATHS_H */
