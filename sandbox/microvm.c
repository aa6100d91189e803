/*
 * sandbox/microvm.c — intutic exec --sandbox=firecracker|qemu: the command in a
 * microVM whose only way out is the proxy.
 *
 * A run, in order (each step undone by vm_teardown(), whatever happens):
 *
 *   gates      /dev/kvm usable (qemu: or INTUTIC_QEMU_ACCEL=tcg), the
 *              hypervisor, the kernel and root image readable, the guest
 *              key (exit 2 without it), ssh, ssh-keygen, mkfs.ext4, root,
 *              the proxy listening on every address, the subnet
 *   sweep      what a launcher that died left (its run directory names
 *              its VM, tap and table) is removed
 *   network    a /30 of INTUTIC_VM_SUBNET not used by another run, a tap
 *              "intvm<id>" with the host's address (no IPv6, no
 *              forwarding, strict reverse-path filter), the tables inet
 *              and netdev intutic_vm_<id> (hostfw.c): from the tap only
 *              the guest's own address and MAC, and from those only the
 *              proxy
 *   disks      the operator's root image is never written: qemu boots it
 *              with snapshot=on (a copy-on-write overlay in the run
 *              directory), firecracker a throwaway copy; a small ext4
 *              configuration disk carries the run's ssh host key (made
 *              here, pinned in a known_hosts of the run's own) and the
 *              guest key's public half
 *   boot       the hypervisor, its console in the run directory; the guest
 *              gets its address on the kernel command line (ip=)
 *   agent      ssh into the guest as "agent" with the guest key, the
 *              environment by name (SendEnv), a terminal when stdin is one;
 *              the command's exit status is the run's
 *
 * The guest contract (what a guest image must do) is in intutic-exec(1);
 * scripts/mkguest builds one.
 */
#include "config.h"

#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <linux/if_tun.h>
#include <linux/kvm.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include "backend.h"
#include "jsonw.h"
#include "hostfw.h"
#include "intutic.h"
#include "log.h"
#include "proc.h"
#include "spawn.h"
#include "microvm.h"

extern char **environ;


/* A signal that ends the run: set by the handlers, checked by the loops. */
volatile sig_atomic_t vm_signal;
volatile sig_atomic_t vm_child;

static void
vm_on_signal(int sig)
{
	if (vm_signal == 0)
		vm_signal = sig;
	if (vm_child > 0)
		kill((pid_t)vm_child, sig);
}

static const int vm_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
#define VM_NSIGS (sizeof(vm_sigs) / sizeof(vm_sigs[0]))

static void
vm_signals(struct sigaction *old)
{
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = vm_on_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < VM_NSIGS; i++)
		sigaction(vm_sigs[i], &sa, &old[i]);
}

static void
vm_signals_restore(const struct sigaction *old)
{
	size_t i;

	for (i = 0; i < VM_NSIGS; i++)
		sigaction(vm_sigs[i], &old[i], NULL);
}

/* The first of the variables that is set and not empty, or NULL. */
const char *
vm_getenv(const char *a, const char *b)
{
	const char *v;

	if ((v = getenv(a)) != NULL && *v != '\0')
		return v;
	if (b != NULL && (v = getenv(b)) != NULL && *v != '\0')
		return v;
	return NULL;
}

/* DIR/NAME into buf, PATH_MAX bytes (dir is at most VM_DIR_MAX). */
char *
vm_path(const char *dir, const char *name, char *buf)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);

	if (n < 0 || n >= PATH_MAX)
		buf[0] = '\0';		/* cannot happen: names are short */
	return buf;
}

/* ----------------------------------------------------------------- run */

int
vm_check(const struct exec_run *run)
{
	struct vm vm;

	return vm_gates(run, &vm);
}

/*
 * The guest's address is the run's at the proxy before the guest boots:
 * every connection from there is the run's (the tap's table lets the
 * guest send from that address only).  0, or -1 (said).
 */
static int
vm_bind_guest(const struct exec_run *run, const struct vm *vm)
{
	char g[INET_ADDRSTRLEN], why[512];
	int r;

	inet_ntop(AF_INET, &vm->guest, g, sizeof(g));
	if ((r = exec_bind_addr(run, g, why, sizeof(why))) == 0)
		return 0;
	error("the proxy did not take the guest's address %s for run %s: %s; "
	    "nothing was run", g, run->id, r > 0 ? "another run has it" : why);
	return -1;
}

/* --sandbox-dry-run: what would be made and booted, nothing made. */
static int
vm_plan(const struct exec_run *run, struct vm *vm)
{
	char why[HOSTFW_WHY_MAX], img[PATH_MAX + 16], h[INET_ADDRSTRLEN];
	char g[INET_ADDRSTRLEN], **argv;
	struct argvb ab;
	size_t i;

	if (vm_prepare(run, vm) != 0 || vm_network(vm, run) != 0)
		return EXIT_CANNOT_RUN;
	vm_cmdline(vm);
	snprintf(vm->rootimg, sizeof(vm->rootimg), "%s/rootfs.img", vm->dir);
	inet_ntop(AF_INET, &vm->host, h, sizeof(h));
	inet_ntop(AF_INET, &vm->guest, g, sizeof(g));
	printf("# intutic exec --sandbox=%s --sandbox-dry-run: nothing was made\n"
	    "# run directory %s, tap %s (%s/30), guest %s\n", vm->name,
	    vm->dir, vm->fw.tap, h, g);
	if (vm->fc) {
		vm_path(vm->dir, "config.ext4", img);
		printf("# firecracker --no-api --config-file %s/vm.json:\n",
		    vm->dir);
		vm_fc_config(vm, img, stdout);
	} else {
		if (vm->bin[0] == '\0')
			snprintf(vm->bin, sizeof(vm->bin), "qemu-system-x86_64");
		argvb_init(&ab);
		vm_argv(vm, &ab);
		if ((argv = argvb_done(&ab)) == NULL) {
			argvb_free(&ab);
			error("out of memory");
			return EXIT_CANNOT_RUN;
		}
		printf("# the hypervisor:\n");
		for (i = 0; argv[i] != NULL; i++)
			printf("%s%s", i > 0 ? " " : "", argv[i]);
		printf("\n");
		argvb_free(&ab);
	}
	printf("# the host's table:\n");
	fflush(stdout);
	if (hostfw_vm_print(&vm->fw, stdout, why, sizeof(why)) != 0) {
		error("%s", why);
		return EXIT_CANNOT_RUN;
	}
	return 0;
}

int
vm_run(const struct exec_run *run)
{
	struct sigaction old[VM_NSIGS];
	struct vm vm;
	int r, st;

	if ((r = vm_gates(run, &vm)) != 0)
		return r;
	if (vm.dry)
		return vm_plan(run, &vm);
	if ((r = vm_leftovers(NULL, 0)) > 0) {
		fprintf(stderr, "intutic exec: removing what %d earlier "
		    "microVM run%s left: ", r, r > 1 ? "s" : "");
		(void)vm_leftovers(stderr, 1);
		fputc('\n', stderr);
	}
	if (vm.tcg)
		error("INTUTIC_QEMU_ACCEL=tcg: the "
		    "microVM is emulated, without KVM (slow)");
	vm_signal = 0;
	vm_signals(old);
	r = EXIT_CANNOT_RUN;
	/* each step checks that no signal asked the run to end */
	if (vm_prepare(run, &vm) != 0 || vm_signal != 0 ||
	    vm_network(&vm, run) != 0 || vm_signal != 0 ||
	    vm_bind_guest(run, &vm) != 0 || vm_signal != 0 ||
	    vm_config_disk(&vm) != 0 || vm_signal != 0 ||
	    (vm.fc && vm_copy_rootfs(&vm) != 0) || vm_signal != 0)
		goto out;
	vm_cmdline(&vm);
	if (vm_boot(&vm) != 0 || vm_wait_ready(&vm) != 0)
		goto out;
	if ((st = vm_agent(run, &vm)) >= 0)
		r = st;
 out:
	if (vm_signal != 0)
		r = 128 + vm_signal;
	if (vm_teardown(&vm) != 0 && r == 0)
		r = EXIT_CANNOT_RUN;
	vm_signals_restore(old);
	return r;
}

