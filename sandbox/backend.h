/*
 * backend.h — what intutic exec hands a backend: the options, the run (its id,
 * token and the proxy), and the command's environment.  The backends: the
 * host (cmd-exec.c), OCI containers (sandbox/oci.c), and microVMs under
 * qemu or firecracker (sandbox/microvm.c).
 */
#ifndef INTUTIC_SANDBOX_BACKEND_H
#define INTUTIC_SANDBOX_BACKEND_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

#include "locate.h"

#define EXEC_ENV_MAX		256	/* -e and --allow-env names */
#define EXEC_RUN_BYTES		8	/* random bytes of a run id */
#define EXEC_TOKEN_BYTES	16	/* random bytes of a token */
#define EXEC_LIST_MAX		64	/* --sandbox-allow, --sandbox-mount */
#define EXEC_POLICY_MAX		64	/* --allow, and --deny, entries */

struct rules;

enum exec_profile { PROFILE_DEV, PROFILE_PROD };

struct exec_opts {
	const char		*sandbox;	/* NULL: host */
	int			 dry_run;	/* --sandbox-dry-run */
	enum exec_profile	 profile;
	const char		*proxy;
	const char		*state_dir;
	const char		*env[EXEC_ENV_MAX];	/* -e NAME */
	size_t			 nenv;
	const char		*allow[EXEC_ENV_MAX];	/* --allow-env NAME */
	size_t			 nallow;
	/* --allow ENTRY ([POLICY_ALLOW]) and --deny ENTRY ([POLICY_DENY]) */
	const char		*policy[2][EXEC_POLICY_MAX];
	size_t			 npolicy[2];
	char			**argv;		/* COMMAND [ARG...] */

	/* --sandbox=oci */
	const char		*runtime;	/* docker | podman; NULL: detect */
	const char		*image;		/* NULL: intutic/sandbox:VERSION */
	const char		*memory;	/* --memory */
	const char		*cpus;		/* --cpus */
	const char		*pids;		/* --pids-limit */
	const char		*allow_cidr[EXEC_LIST_MAX];
	size_t			 nallow_cidr;
	const char		*mount[EXEC_LIST_MAX];	/* DIR[:ro] */
	size_t			 nmount;
	const char		*login[EXEC_LIST_MAX];	/* --sandbox-login */
	size_t			 nlogin;
};

#define EXEC_SENTINELS_MAX	8	/* brokered providers a run has keys of */
#define EXEC_SENTINEL_MAX	520	/* bytes of one, with its NUL */

/* What a backend needs to run the command. */
struct exec_run {
	const struct exec_opts	*o;
	const struct proxy_loc	*loc;
	const struct rules	*rules;		/* the operator's */
	char			 id[2 * EXEC_RUN_BYTES + 8];
	char			 token[2 * EXEC_TOKEN_BYTES + 1];
	char			 project[PATH_MAX];	/* "" for none */
	/*
	 * The provider gateway's brokered keys for this run, by provider,
	 * from the proxy's answer to the registration: what the agent gets
	 * instead of the real keys.
	 */
	struct exec_sentinel {
		char	 provider[64];
		char	 key[EXEC_SENTINEL_MAX];
	}			 sentinels[EXEC_SENTINELS_MAX];
	size_t			 nsentinels;
};

/*
 * A way to run the command: check() (may be NULL) checks what the backend
 * needs before the run is registered or anything made, returning 0 or the
 * exit status of a refusal; run() runs the command and returns its exit
 * status (the host backend returns only on failure).  No run(): not in
 * this version.
 */
struct exec_backend {
	const char	*name;
	int		(*check)(const struct exec_run *);
	int		(*run)(const struct exec_run *);
};

/* An environment being built: NAME=VALUE strings, NULL-terminated. */
struct envv {
	char	**v;
	size_t	  n, cap;
};

int	 envv_set(struct envv *e, const char *name, const char *value);
void	 envv_free(struct envv *e);

/*
 * The command's environment: the proxy variables (the proxy as HOST:PORT,
 * with the run's credentials), the provider keys, -e and --allow-env
 * names; with `host_base`, also the base set of a host run (PATH, HOME,
 * ...).  0, or -1 when memory runs out.
 */
int	 exec_env(const struct exec_run *run, struct envv *e,
	    const char *host, unsigned int port, int host_base);

/*
 * In a sandbox, where intutic is not: sandbox/connect.sh (`intutic
 * connect` in bash) at this path, mounted into every container and
 * installed in the microVM's guest by scripts/mkguest, and GIT_SSH_COMMAND
 * with it as ssh's ProxyCommand.
 */
#define SANDBOX_CONNECT		"/usr/local/libexec/intutic-connect"
#define SANDBOX_GIT_SSH		"ssh -o 'ProxyCommand=" SANDBOX_CONNECT " %h %p'"

/*
 * Tells the proxy the address the run's sandbox will send from (a
 * container's on its bridge, a microVM guest's), before the sandbox
 * starts: from then on every connection from there is the run's, whatever
 * it sends (PUT /v1/runs/RUN/addr).  0; 1 when another run has that
 * address (pick another); -1 and why.
 */
int	 exec_bind_addr(const struct exec_run *run, const char *addr,
	    char *err, size_t errlen);

/* sandbox/oci.c: runs the command in a container; its exit status. */
int	 oci_run(const struct exec_run *run);

/*
 * sandbox/oci.c, what `intutic doctor` asks of a runtime (RT its path,
 * NAME docker or podman).  oci_default_image(): the default image's name
 * (INTUTIC_SANDBOX_IMAGE, else intutic/sandbox:VERSION).
 * oci_doctor_image(): 1 when RT has IMAGE locally, else 0.
 * oci_doctor_bridge(): 0 with the gateway of RT's default bridge, or -1
 * and why.  oci_conf_path(): 0 with the path of the containers.conf
 * intutic ships (the sandbox directory's, else the source tree's
 * contrib/), or -1.
 */
void	 oci_default_image(char *image, size_t len);
int	 oci_doctor_image(const char *rt, const char *image);
int	 oci_doctor_bridge(const char *rt, const char *name, char *gateway,
	    size_t len, char *why, size_t whylen);
int	 oci_conf_path(char *path, size_t len);

/*
 * sandbox/microvm.c: --sandbox=firecracker|qemu.  vm_check(): the health gates;
 * vm_run(): the command in a microVM, torn down whatever happens.
 */
int	 vm_check(const struct exec_run *run);
int	 vm_run(const struct exec_run *run);

/*
 * What earlier microVM runs left whose launcher is gone: counted, named on
 * `report` (may be NULL), removed with `remove`.  The number found.
 */
int	 vm_leftovers(FILE *report, int remove);

#endif /* INTUTIC_SANDBOX_BACKEND_H */
