/*
 * microvm.h — the microVM backend's parts (microvm.c, the run; microvm-
 * gates.c, what must hold first; microvm-host.c, the run directory, the tap
 * and the teardown; microvm-boot.c, the disks, the hypervisor and the
 * agent over ssh) and what they share.  The backend's interface to `intutic
 * exec` is backend.h.
 */
#ifndef INTUTIC_SANDBOX_MICROVM_H
#define INTUTIC_SANDBOX_MICROVM_H

#include <sys/types.h>

#include <netinet/in.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>

#include "argv.h"
#include "backend.h"
#include "hostfw.h"

#define VM_SUBNET_DEFAULT	"10.213.0.0/16"
#define VM_RUNDIR_DEFAULT	"/run/intutic/vm"
#define VM_TAP_PREFIX		"intvm"
#define VM_USER			"agent"
#define VM_MEMORY_MIB		1024	/* --sandbox-memory */
#define VM_CPUS			2	/* --sandbox-cpus */
/*
 * qemu emulated (TCG): its cache of translated code, in MiB.  qemu's own
 * default is 1 GiB, which a long run fills: the hypervisor then holds the
 * guest's memory and a gigabyte more.  64 MiB keeps a guest as fast here
 * (a full cache is flushed and filled again).
 */
#define VM_TCG_TB_MIB		64
#define VM_BOOT_MS		120000	/* kernel start to sshd answering */
#define VM_TOOL_MS		30000	/* ssh-keygen, mkfs.ext4 */
#define VM_STOP_MS		3000	/* SIGTERM, then SIGKILL */
#define VM_CONFIG_DISK		"8M"
#define VM_CMD_MAX		(128 * 1024)	/* the command for the guest */
#define VM_GUEST_INIT		"/usr/sbin/intutic-guest-init"
#define VM_DIR_MAX		(PATH_MAX - 64)	/* room for a name after it */

extern char **environ;

struct vm {
	int		 fc;		/* firecracker, else qemu */
	const char	*name;		/* for messages */
	int		 tcg;		/* qemu without KVM, asked for */
	int		 dry;		/* --sandbox-dry-run */
	char		 bin[PATH_MAX];
	char		 kernel[PATH_MAX];
	char		 initrd[PATH_MAX];	/* "" for none */
	char		 rootfs[PATH_MAX];
	char		 key[PATH_MAX];
	char		 pubkey[1024];	/* the guest key's public half */
	unsigned int	 mem_mib, cpus;

	char		 id[32];	/* the run id's hex */
	char		 base[VM_DIR_MAX];	/* INTUTIC_VM_RUNDIR */
	char		 dir[VM_DIR_MAX];	/* base/RUN-ID */
	struct in_addr	 net;		/* the subnet */
	unsigned int	 prefix;
	struct in_addr	 host, guest;	/* the /30's .1 and .2 */
	struct hostfw_vm fw;		/* with the guest's address and MAC */
	char		 mac[18];	/* fw.mac as text */
	char		 cmdline[1024];
	char		 rootimg[PATH_MAX];	/* what the VM boots */

	pid_t		 pid;		/* the hypervisor */
	int		 made_dir, made_tap, made_fw;
};

/* A signal that ends the run: set by the handlers, checked by the loops. */
extern volatile sig_atomic_t vm_signal;
extern volatile sig_atomic_t vm_child;	/* the process the signal goes to */

/* The tools the gates found: ssh, ssh-keygen, mkfs.ext4. */
extern char vm_ssh[PATH_MAX], vm_keygen[PATH_MAX], vm_mkfs[PATH_MAX];

/* microvm.c */
const char	*vm_getenv(const char *a, const char *b);
char		*vm_path(const char *dir, const char *name, char *buf);

/* microvm-gates.c */
int	 vm_gates(const struct exec_run *run, struct vm *vm);
/* The port of list's listener on every IPv4 address ("0.0.0.0:P"), or 0. */
unsigned int vm_wildcard_port(const char (*list)[STATE_ADDR_MAX], size_t n);
int	 vm_tool(char *const argv[], char *out, size_t outlen,
	    const char *what);

/* microvm-host.c */
int	 vm_write_file(const char *path, const char *text, mode_t mode);
int	 vm_read_file(const char *path, char *buf, size_t len);
void	 vm_rmtree(const char *dir);
void	 vm_pid_text(pid_t pid, char *buf, size_t len);
int	 vm_tap_create(const char *name, struct in_addr addr, char *why,
	    size_t len);
int	 vm_pick_slot(struct vm *vm);
int	 vm_teardown(struct vm *vm);

/* microvm-boot.c */
int	 vm_prepare(const struct exec_run *run, struct vm *vm);
int	 vm_network(struct vm *vm, const struct exec_run *run);
int	 vm_config_disk(struct vm *vm);
int	 vm_copy_rootfs(struct vm *vm);
void	 vm_cmdline(struct vm *vm);
void	 vm_fc_config(const struct vm *vm, const char *config_disk,
	    FILE *out);
void	 vm_argv(const struct vm *vm, struct argvb *ab);
int	 vm_boot(struct vm *vm);
int	 vm_wait_ready(struct vm *vm);
int	 vm_agent(const struct exec_run *run, struct vm *vm);

#endif /* INTUTIC_SANDBOX_MICROVM_H */
