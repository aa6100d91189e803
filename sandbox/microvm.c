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
#include "proc.h"
#include "spawn.h"

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
#define VM_NAMES_MAX		(EXEC_ENV_MAX + 32)	/* variables sent by name */
/* ssh's own options, then "-o SendEnv=NAME" for each of those */
#define VM_ARGV_MAX		(64 + 2 * VM_NAMES_MAX)
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
static volatile sig_atomic_t vm_signal;
static volatile sig_atomic_t vm_child;

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
static const char *
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
static char *
vm_path(const char *dir, const char *name, char *buf)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);

	if (n < 0 || n >= PATH_MAX)
		buf[0] = '\0';		/* cannot happen: names are short */
	return buf;
}

/* ------------------------------------------------------------ gates */

/* /dev/kvm opens and answers KVM_GET_API_VERSION; else why. */
static int
vm_kvm_usable(char *why, size_t len)
{
	int fd, v;

	if ((fd = open("/dev/kvm", O_RDWR | O_CLOEXEC)) == -1) {
		snprintf(why, len, "/dev/kvm: %s", strerror(errno));
		return -1;
	}
	v = ioctl(fd, KVM_GET_API_VERSION, 0);
	close(fd);
	if (v != KVM_API_VERSION) {
		snprintf(why, len, "/dev/kvm answers API version %d, not %d", v,
		    KVM_API_VERSION);
		return -1;
	}
	return 0;
}

/* A file the variable names, readable; 0, or -1 (said). */
static int
vm_file(const char *what, const char *v1, const char *v2, int needed,
    char *out, size_t len)
{
	const char *v = vm_getenv(v1, v2);

	out[0] = '\0';
	if (v == NULL) {
		if (!needed)
			return 0;
		fprintf(stderr, "intutic exec: --sandbox: set %s%s%s to the "
		    "guest's %s (scripts/mkguest builds one); nothing was run\n",
		    v1, v2 != NULL ? " or " : "", v2 != NULL ? v2 : "", what);
		return -1;
	}
	if (access(v, R_OK) != 0) {
		fprintf(stderr, "intutic exec: --sandbox: the guest's %s %s "
		    "cannot be read: %s; nothing was run\n", what, v,
		    strerror(errno));
		return -1;
	}
	snprintf(out, len, "%s", v);
	return 0;
}

/* "512m", "2g", "1024" (MiB) -> MiB; 0 when not understood. */
static unsigned int
vm_mib(const char *s)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno != 0 || end == s)
		return 0;
	if (*end == 'g' || *end == 'G')
		n *= 1024, end++;
	else if (*end == 'm' || *end == 'M')
		end++;
	if (*end != '\0' || n < 128 || n > 1024 * 1024)
		return 0;
	return (unsigned int)n;
}

/* Parses CIDR "A.B.C.D/N" with 8 <= N <= 30, host bits clear. */
static int
vm_parse_subnet(const char *s, struct in_addr *net, unsigned int *prefix)
{
	char a[INET_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	char *end;
	unsigned long n;
	uint32_t mask;

	if (slash == NULL || (size_t)(slash - s) >= sizeof(a))
		return -1;
	memcpy(a, s, (size_t)(slash - s));
	a[slash - s] = '\0';
	if (inet_pton(AF_INET, a, net) != 1)
		return -1;
	errno = 0;
	n = strtoul(slash + 1, &end, 10);
	if (errno != 0 || end == slash + 1 || *end != '\0' || n < 8 || n > 30)
		return -1;
	mask = htonl(~0U << (32 - n));
	if ((net->s_addr & ~mask) != 0)
		return -1;
	*prefix = (unsigned int)n;
	return 0;
}

static int
vm_overlaps(uint32_t a, unsigned int pa, uint32_t b, unsigned int pb)
{
	unsigned int p = pa < pb ? pa : pb;
	uint32_t m = p == 0 ? 0 : ~0U << (32 - p);

	return (a & m) == (b & m);
}

static uint32_t
vm_mask_bits(uint32_t mask_host_order)
{
	uint32_t n = 0;

	while (mask_host_order & 0x80000000U) {
		n++;
		mask_host_order <<= 1;
	}
	return n;
}

/*
 * The subnet may hold no address and no route of this host but those of
 * intutic's own taps (a default route does not count).  0, or -1 (said).
 */
static int
vm_subnet_free(const struct vm *vm, const char *subnet)
{
	struct ifaddrs *ifa, *i;
	uint32_t net = ntohl(vm->net.s_addr);
	char line[512], a[INET_ADDRSTRLEN];
	FILE *f;
	int bad = 0;

	if (getifaddrs(&ifa) == 0) {
		for (i = ifa; i != NULL && !bad; i = i->ifa_next) {
			struct sockaddr_in *sa = (struct sockaddr_in *)i->ifa_addr;
			struct sockaddr_in *nm =
			    (struct sockaddr_in *)i->ifa_netmask;

			if (sa == NULL || sa->sin_family != AF_INET ||
			    nm == NULL ||
			    strncmp(i->ifa_name, VM_TAP_PREFIX,
			    sizeof(VM_TAP_PREFIX) - 1) == 0)
				continue;
			if (vm_overlaps(net, vm->prefix,
			    ntohl(sa->sin_addr.s_addr),
			    vm_mask_bits(ntohl(nm->sin_addr.s_addr)))) {
				inet_ntop(AF_INET, &sa->sin_addr, a, sizeof(a));
				fprintf(stderr, "intutic exec: --sandbox: the "
				    "microVM subnet %s overlaps %s's address %s; "
				    "set INTUTIC_VM_SUBNET to a private range this "
				    "host does not use; nothing was run\n", subnet,
				    i->ifa_name, a);
				bad = 1;
			}
		}
		freeifaddrs(ifa);
	}
	if (bad || (f = fopen("/proc/net/route", "r")) == NULL)
		return bad ? -1 : 0;
	while (!bad && fgets(line, sizeof(line), f) != NULL) {
		char ifn[IFNAMSIZ + 1];
		unsigned int dst, gw, flags, refc, use, metric, mask;

		if (sscanf(line, "%16s %x %x %x %u %u %u %x", ifn, &dst, &gw,
		    &flags, &refc, &use, &metric, &mask) != 8 || mask == 0 ||
		    strncmp(ifn, VM_TAP_PREFIX, sizeof(VM_TAP_PREFIX) - 1) == 0)
			continue;
		/* /proc/net/route writes addresses in network order, as hex */
		if (vm_overlaps(net, vm->prefix, ntohl(dst),
		    vm_mask_bits(ntohl(mask)))) {
			struct in_addr d = { dst };

			inet_ntop(AF_INET, &d, a, sizeof(a));
			fprintf(stderr, "intutic exec: --sandbox: the microVM "
			    "subnet %s overlaps the route to %s/%u via %s; set "
			    "INTUTIC_VM_SUBNET to a private range this host does "
			    "not use; nothing was run\n", subnet, a,
			    vm_mask_bits(ntohl(mask)), ifn);
			bad = 1;
		}
	}
	fclose(f);
	return bad ? -1 : 0;
}

/* The proxy listens on every address (the guest reaches it on the tap). */
static int
vm_proxy_reachable(const struct exec_run *run)
{
	const struct proxy_loc *loc = run->loc;
	size_t i;

	if (loc->have_state)
		for (i = 0; i < loc->st.nbind; i++)
			if (strcmp(loc->st.bind[i], "0.0.0.0") == 0)
				return 0;
	fprintf(stderr, "intutic exec: the proxy listens on %s only, and a "
	    "microVM reaches it on the host's end of its tap: restart it "
	    "with INTUTIC_PROXY_BIND=0.0.0.0 (e.g. `INTUTIC_PROXY_BIND=0.0.0.0 "
	    "intutic start`); nothing was run\n", loc->have_state &&
	    loc->st.nbind > 0 ? loc->st.bind[0] : loc->host);
	return -1;
}

/* Runs a tool to completion, its output into out; 0 or -1 (said). */
static int
vm_tool(char *const argv[], char *out, size_t outlen, const char *what)
{
	char why[256];
	int st;

	if (spawn_run(argv, NULL, 0, VM_TOOL_MS, out, outlen, &st, why,
	    sizeof(why)) != 0) {
		fprintf(stderr, "intutic exec: %s: %s\n", what, why);
		return -1;
	}
	if (st != 0) {
		fprintf(stderr, "intutic exec: %s: %s exited %d\n", what,
		    argv[0], st);
		return -1;
	}
	return 0;
}

/* ssh-keygen, ssh, mkfs.ext4: in PATH; 0 or -1 (said). */
static int
vm_tools(char paths[3][PATH_MAX])
{
	static const char *const tools[3] = { "ssh", "ssh-keygen",
	    "mkfs.ext4" };
	size_t i;

	for (i = 0; i < 3; i++)
		if (spawn_which(tools[i], paths[i], PATH_MAX) != 0) {
			fprintf(stderr, "intutic exec: --sandbox: %s is not "
			    "installed (openssh-client, e2fsprogs); nothing was "
			    "run\n", tools[i]);
			return -1;
		}
	return 0;
}

static char vm_ssh[PATH_MAX], vm_keygen[PATH_MAX], vm_mkfs[PATH_MAX];

/*
 * The hypervisor: the file the variable names, else NAME in PATH.  0, or
 * -1 (said, with the package to install).
 */
static int
vm_hypervisor(struct vm *vm, const char *var, const char *name,
    const char *package)
{
	const char *b = vm_getenv(var, NULL);

	if (b != NULL && access(b, X_OK) == 0) {
		snprintf(vm->bin, sizeof(vm->bin), "%s", b);
		return 0;
	}
	if (b == NULL && spawn_which(name, vm->bin, sizeof(vm->bin)) == 0)
		return 0;
	if (b != NULL)
		fprintf(stderr, "intutic exec: --sandbox=%s: %s is not "
		    "executable; install %s in PATH or set %s; nothing was run\n",
		    vm->name, b, package, var);
	else
		fprintf(stderr, "intutic exec: --sandbox=%s: no %s in PATH; "
		    "install %s in PATH or set %s; nothing was run\n", vm->name,
		    name, package, var);
	return -1;
}

/*
 * Everything a run needs, checked before anything is made.  0, or the
 * exit status of the refusal (said on stderr).
 */
static int
vm_gates(const struct exec_run *run, struct vm *vm)
{
	const struct exec_opts *o = run->o;
	const char *accel = getenv("INTUTIC_QEMU_ACCEL");
	const char *subnet = vm_getenv("INTUTIC_VM_SUBNET", NULL);
	char why[256], tools[3][PATH_MAX], *argv[8];
	size_t n;
	int st;

	memset(vm, 0, sizeof(*vm));
	vm->pid = -1;
	vm->fc = strcmp(o->sandbox, "firecracker") == 0;
	vm->name = vm->fc ? "firecracker" : "qemu";
	vm->dry = o->dry_run;

	/* no silent fallback to emulation */
	if (!vm->fc && accel != NULL && *accel != '\0' &&
	    strcmp(accel, "tcg") != 0 && strcmp(accel, "kvm") != 0) {
		fprintf(stderr, "intutic exec: INTUTIC_QEMU_ACCEL='%s': "
		    "expected kvm or tcg\n", accel);
		return EXIT_USAGE;
	}
	vm->tcg = !vm->fc && accel != NULL && strcmp(accel, "tcg") == 0;
	if (!vm->dry) {
		/* the hypervisor */
		if (vm_hypervisor(vm, vm->fc ? "INTUTIC_FC_BIN" :
		    "INTUTIC_QEMU_BIN", vm->fc ? "firecracker" :
		    "qemu-system-x86_64", vm->fc ? "firecracker" :
		    "qemu-system-x86") != 0)
			return EXIT_CANNOT_RUN;
	}
	/* the guest: firecracker's variables first for it, the VM ones else */
	if (vm_file("kernel", vm->fc ? "INTUTIC_FC_KERNEL" : "INTUTIC_VM_KERNEL",
	    vm->fc ? "INTUTIC_VM_KERNEL" : "INTUTIC_FC_KERNEL", 1, vm->kernel,
	    sizeof(vm->kernel)) != 0 ||
	    vm_file("root file system image", vm->fc ? "INTUTIC_FC_ROOTFS" :
	    "INTUTIC_VM_ROOTFS", vm->fc ? "INTUTIC_VM_ROOTFS" :
	    "INTUTIC_FC_ROOTFS", 1, vm->rootfs, sizeof(vm->rootfs)) != 0 ||
	    vm_file("initramfs", vm->fc ? "INTUTIC_FC_INITRD" :
	    "INTUTIC_VM_INITRD", vm->fc ? "INTUTIC_VM_INITRD" :
	    "INTUTIC_FC_INITRD", 0, vm->initrd, sizeof(vm->initrd)) != 0)
		return EXIT_CANNOT_RUN;
	/* the guest key: a configuration error, before anything else */
	if (vm_getenv("INTUTIC_FC_GUEST_KEY", NULL) == NULL) {
		fprintf(stderr, "intutic exec: --sandbox=%s: INTUTIC_FC_GUEST_KEY "
		    "is not set: it names the private key that logs in to the "
		    "guest (scripts/mkguest makes one); nothing was set up\n",
		    vm->name);
		return EXIT_USAGE;
	}
	if (vm_file("ssh key", "INTUTIC_FC_GUEST_KEY", NULL, 1, vm->key,
	    sizeof(vm->key)) != 0)
		return EXIT_USAGE;
	if (vm_tools(tools) != 0)
		return EXIT_CANNOT_RUN;
	snprintf(vm_ssh, sizeof(vm_ssh), "%s", tools[0]);
	snprintf(vm_keygen, sizeof(vm_keygen), "%s", tools[1]);
	snprintf(vm_mkfs, sizeof(vm_mkfs), "%s", tools[2]);
	n = 0;
	argv[n++] = vm_keygen;
	argv[n++] = (char *)"-y";
	argv[n++] = (char *)"-P";
	argv[n++] = (char *)"";
	argv[n++] = (char *)"-f";
	argv[n++] = vm->key;
	argv[n] = NULL;
	if (spawn_run(argv, NULL, 0, VM_TOOL_MS, vm->pubkey,
	    sizeof(vm->pubkey), &st, why, sizeof(why)) != 0 || st != 0 ||
	    strncmp(vm->pubkey, "ssh-", 4) != 0) {
		fprintf(stderr, "intutic exec: INTUTIC_FC_GUEST_KEY=%s is not an "
		    "ssh private key without a passphrase; nothing was set up\n",
		    vm->key);
		return EXIT_USAGE;
	}
	vm->pubkey[strcspn(vm->pubkey, "\n")] = '\0';

	/* the host: root (a tap, a table), then KVM */
	if (!vm->dry) {
		if (geteuid() != 0) {
			fprintf(stderr, "intutic exec: --sandbox=%s makes a tap "
			    "device and a firewall table: run it as root; "
			    "nothing was run\n", vm->name);
			return EXIT_CANNOT_RUN;
		}
		if (!vm->tcg && vm_kvm_usable(why, sizeof(why)) != 0) {
			fprintf(stderr, "intutic exec: --sandbox=%s needs KVM, "
			    "and %s%s; nothing was run\n", vm->name, why,
			    vm->fc ? "" : " (INTUTIC_QEMU_ACCEL=tcg runs qemu "
			    "emulated, much slower, and says so)");
			return EXIT_CANNOT_RUN;
		}
	}

	vm->mem_mib = VM_MEMORY_MIB;
	if (o->memory != NULL && (vm->mem_mib = vm_mib(o->memory)) == 0) {
		fprintf(stderr, "intutic exec: --sandbox-memory '%s': expected "
		    "a size such as 512m or 2g (at least 128m)\n", o->memory);
		return EXIT_USAGE;
	}
	vm->cpus = VM_CPUS;
	if (o->cpus != NULL) {
		char *end;
		unsigned long c;

		errno = 0;
		c = strtoul(o->cpus, &end, 10);
		if (errno != 0 || *end != '\0' || c < 1 || c > 32 ||
		    (vm->fc && c > 1 && c % 2 != 0)) {
			fprintf(stderr, "intutic exec: --sandbox-cpus '%s': a "
			    "microVM takes a whole number of CPUs, 1 to 32%s\n",
			    o->cpus, vm->fc ? " (firecracker: 1 or an even "
			    "number)" : "");
			return EXIT_USAGE;
		}
		vm->cpus = (unsigned int)c;
	}
	if (vm_proxy_reachable(run) != 0)
		return EXIT_CANNOT_RUN;
	if (subnet == NULL)
		subnet = VM_SUBNET_DEFAULT;
	if (vm_parse_subnet(subnet, &vm->net, &vm->prefix) != 0) {
		fprintf(stderr, "intutic exec: INTUTIC_VM_SUBNET='%s': expected an "
		    "IPv4 network A.B.C.D/N (N 8 to 30, host bits zero)\n",
		    subnet);
		return EXIT_USAGE;
	}
	if (vm_subnet_free(vm, subnet) != 0)
		return EXIT_CANNOT_RUN;
	return 0;
}

/* ------------------------------------------------------- run directory */

static int
vm_write_file(const char *path, const char *text, mode_t mode)
{
	int fd;
	size_t len = strlen(text), off = 0;
	ssize_t n;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
	    O_NOFOLLOW, mode)) == -1)
		return -1;
	while (off < len) {
		if ((n = write(fd, text + off, len - off)) < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			return -1;
		}
		off += (size_t)n;
	}
	return close(fd);
}

static int
vm_read_file(const char *path, char *buf, size_t len)
{
	int fd;
	ssize_t n;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* rm -r of a run directory (plain files and one level of directories). */
static void
vm_rmtree(const char *dir)
{
	DIR *d;
	struct dirent *de;
	char p[PATH_MAX];
	struct stat sb;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, de->d_name) >=
		    sizeof(p))
			continue;
		if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
			vm_rmtree(p);
		else
			unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

/* The start time of pid (field 22 of /proc/PID/stat), or 0. */
static unsigned long long
vm_start_time(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long t = 0;
	int i;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if (vm_read_file(path, buf, sizeof(buf)) != 0 ||
	    (p = strrchr(buf, ')')) == NULL)
		return 0;
	/* after ") ": state is field 3; the start time field 22 */
	for (i = 3; i < 22 && p != NULL; i++)
		p = strchr(p + 1, ' ');
	if (p != NULL)
		t = strtoull(p + 1, NULL, 10);
	return t;
}

/* "PID STARTTIME" of a process, for a pid file another run can check. */
static void
vm_pid_text(pid_t pid, char *buf, size_t len)
{
	snprintf(buf, len, "%ld %llu\n", (long)pid, vm_start_time(pid));
}

/* Whether the pid file names a process that still runs (the same one). */
static pid_t
vm_pid_alive(const char *path)
{
	char buf[128];
	long pid;
	unsigned long long t;

	if (vm_read_file(path, buf, sizeof(buf)) != 0 ||
	    sscanf(buf, "%ld %llu", &pid, &t) != 2 || pid <= 1)
		return 0;
	if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
		return 0;
	return vm_start_time((pid_t)pid) == t ? (pid_t)pid : 0;
}

/* ------------------------------------------------------------- the tap */

/*
 * The tap's own settings, before it is up: the host does not route what
 * comes in on it (IPv4 forwarding is decided by the incoming interface: a
 * packet from the tap to another host is dropped at routing, with no ICMP
 * error such as a time-exceeded), its reverse-path filter is strict (the
 * kernel uses the larger of conf/all and conf/<tap>: 2, loose, when all
 * says so), and it has no IPv6 (the guest uses none: no link-local address,
 * nothing of IPv6 is received on it).  The netdev table is what holds the
 * guest to its own address and MAC; these are the host's own line behind
 * it.  0 or -1 (why).
 */
static int
vm_tap_sysctls(const char *name, char *why, size_t len)
{
	static const struct {
		const char	*proto;
		const char	*key;
		const char	*value;
	} set[] = {
		{ "ipv6", "disable_ipv6", "1\n" },
		{ "ipv4", "forwarding", "0\n" },
		{ "ipv4", "rp_filter", "1\n" },
	};
	char p[128];
	size_t i;

	for (i = 0; i < sizeof(set) / sizeof(set[0]); i++) {
		snprintf(p, sizeof(p), "/proc/sys/net/%s/conf/%s/%s",
		    set[i].proto, name, set[i].key);
		if (vm_write_file(p, set[i].value, 0644) == 0)
			continue;
		/* a kernel without IPv6 has nothing to turn off */
		if (errno == ENOENT && strcmp(set[i].proto, "ipv6") == 0 &&
		    access("/proc/sys/net/ipv6", F_OK) != 0)
			continue;
		snprintf(why, len, "cannot set %s on the tap: %s (is /proc/sys "
		    "writable here?)", p, strerror(errno));
		return -1;
	}
	return 0;
}

/* Creates the tap, persistent, up, with addr/30.  0 or -1 (why). */
static int
vm_tap_create(const char *name, struct in_addr addr, char *why, size_t len)
{
	struct ifreq ifr;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
	int fd, s = -1;

	if ((fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC)) == -1) {
		snprintf(why, len, "/dev/net/tun: %s", strerror(errno));
		return -1;
	}
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(fd, TUNSETIFF, &ifr) == -1 ||
	    ioctl(fd, TUNSETPERSIST, 1) == -1) {
		snprintf(why, len, "cannot create the tap %s: %s", name,
		    strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	if (vm_tap_sysctls(name, why, len) != 0)
		return -1;
	if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		goto fail;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	sin->sin_family = AF_INET;
	sin->sin_addr = addr;
	if (ioctl(s, SIOCSIFADDR, &ifr) == -1)
		goto fail;
	sin->sin_addr.s_addr = htonl(0xfffffffcU);
	if (ioctl(s, SIOCSIFNETMASK, &ifr) == -1 ||
	    ioctl(s, SIOCGIFFLAGS, &ifr) == -1)
		goto fail;
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) == -1)
		goto fail;
	close(s);
	return 0;
 fail:
	snprintf(why, len, "cannot set up the tap %s: %s", name,
	    strerror(errno));
	if (s != -1)
		close(s);
	return -1;
}

/* Deletes a link by name (RTM_DELLINK): 1, 0 when not there, -1 (why). */
static int
vm_link_delete(const char *name, char *why, size_t len)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifm;
	uint32_t seq = (uint32_t)time(NULL), portid;
	ssize_t n;
	int r = -1;

	if (if_nametoindex(name) == 0)
		return 0;
	if ((nl = mnl_socket_open(NETLINK_ROUTE)) == NULL ||
	    mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		snprintf(why, len, "netlink: %s", strerror(errno));
		if (nl != NULL)
			mnl_socket_close(nl);
		return -1;
	}
	portid = mnl_socket_get_portid(nl);
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_DELLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = seq;
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0 ||
	    (n = mnl_socket_recvfrom(nl, buf, sizeof(buf))) <= 0 ||
	    mnl_cb_run(buf, (size_t)n, seq, portid, NULL, NULL) < 0)
		snprintf(why, len, "cannot delete %s: %s", name,
		    strerror(errno));
	else
		r = 1;
	mnl_socket_close(nl);
	return r;
}

/* Whether any interface has an address in the /30 at `base`. */
static int
vm_slot_used(uint32_t base)
{
	struct ifaddrs *ifa, *i;
	int used = 0;

	if (getifaddrs(&ifa) != 0)
		return 1;
	for (i = ifa; i != NULL; i = i->ifa_next) {
		struct sockaddr_in *sa = (struct sockaddr_in *)i->ifa_addr;

		if (sa != NULL && sa->sin_family == AF_INET &&
		    (ntohl(sa->sin_addr.s_addr) & ~3U) == base)
			used = 1;
	}
	freeifaddrs(ifa);
	return used;
}

/* FNV-1a of the id: where the search for a free /30 starts. */
static uint32_t
vm_hash(const char *s)
{
	uint32_t h = 2166136261U;

	while (*s != '\0')
		h = (h ^ (unsigned char)*s++) * 16777619U;
	return h;
}

/* Picks a free /30: vm->host and vm->guest.  0, or -1 (said). */
static int
vm_pick_slot(struct vm *vm)
{
	uint32_t net = ntohl(vm->net.s_addr);
	uint32_t slots = 1U << (30 - vm->prefix), i, s, base;

	for (i = 0; i < slots && i < 65536; i++) {
		s = (vm_hash(vm->id) + i) % slots;
		base = net + 4 * s;
		if (vm_slot_used(base))
			continue;
		vm->host.s_addr = htonl(base + 1);
		vm->guest.s_addr = htonl(base + 2);
		return 0;
	}
	fprintf(stderr, "intutic exec: every /30 of the microVM subnet is in "
	    "use; nothing was run\n");
	return -1;
}

/* ----------------------------------------------------------- teardown */

/* Stops the hypervisor: SIGTERM, then SIGKILL; reaped. */
static void
vm_stop(struct vm *vm)
{
	long long deadline;
	int st;

	if (vm->pid <= 0)
		return;
	kill(vm->pid, SIGTERM);
	deadline = proc_now_ms() + VM_STOP_MS;
	while (waitpid(vm->pid, &st, WNOHANG) == 0) {
		struct timespec nap = { 0, 20 * 1000000L };

		if (proc_now_ms() >= deadline) {
			kill(vm->pid, SIGKILL);
			while (waitpid(vm->pid, &st, 0) == -1 && errno == EINTR)
				;
			break;
		}
		nanosleep(&nap, NULL);
	}
	vm->pid = -1;
}

/*
 * Removes what a run made, in reverse: the VM, the table, the tap, the run
 * directory.  Says what could not be removed.  Returns 0 when all is gone.
 */
static int
vm_teardown(struct vm *vm)
{
	char why[256];
	int bad = 0;

	vm_stop(vm);
	if (vm->made_fw && hostfw_vm_remove(vm->fw.table, why,
	    sizeof(why)) < 0) {
		fprintf(stderr, "intutic exec: teardown: table %s: %s\n",
		    vm->fw.table, why);
		bad = 1;
	}
	vm->made_fw = 0;
	if (vm->made_tap && vm_link_delete(vm->fw.tap, why, sizeof(why)) < 0) {
		fprintf(stderr, "intutic exec: teardown: tap %s: %s\n",
		    vm->fw.tap, why);
		bad = 1;
	}
	vm->made_tap = 0;
	if (vm->made_dir)
		vm_rmtree(vm->dir);
	vm->made_dir = 0;
	return bad ? -1 : 0;
}

/*
 * What an earlier run left behind, when the launcher that made it is gone:
 * its VM (the pid file's process, when it is the same one), its table, its
 * tap, its run directory.  With `report` only says what is there.  Returns
 * how many were found.
 */
int
vm_leftovers(FILE *report, int remove)
{
	const char *b = vm_getenv("INTUTIC_VM_RUNDIR", NULL);
	char base[PATH_MAX], dir[PATH_MAX], p[PATH_MAX], buf[128], why[256];
	DIR *d;
	struct dirent *de;
	int found = 0;

	snprintf(base, sizeof(base), "%s", b != NULL ? b : VM_RUNDIR_DEFAULT);
	if ((d = opendir(base)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		pid_t pid;

		if (strncmp(de->d_name, "run-", 4) != 0 ||
		    (size_t)snprintf(dir, sizeof(dir), "%s/%s", base,
		    de->d_name) >= sizeof(dir))
			continue;
		vm_path(dir, "launcher.pid", p);
		if (vm_pid_alive(p) != 0)
			continue;	/* its launcher runs: not ours */
		found++;
		if (report != NULL)
			fprintf(report, "%s%s", found > 1 ? ", " : "",
			    de->d_name);
		if (!remove)
			continue;
		vm_path(dir, "vm.pid", p);
		if ((pid = vm_pid_alive(p)) != 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, WNOHANG);
		}
		vm_path(dir, "table", p);
		if (vm_read_file(p, buf, sizeof(buf)) == 0 && buf[0] != '\0')
			(void)hostfw_vm_remove(buf, why, sizeof(why));
		vm_path(dir, "tap", p);
		if (vm_read_file(p, buf, sizeof(buf)) == 0 &&
		    strncmp(buf, VM_TAP_PREFIX, sizeof(VM_TAP_PREFIX) - 1) == 0)
			(void)vm_link_delete(buf, why, sizeof(why));
		vm_rmtree(dir);
	}
	closedir(d);
	return found;
}

/* -------------------------------------------------------------- set up */

/*
 * The guest's MAC, fixed for the run: locally administered, 02:49 then
 * the first four bytes of the run id.  The hypervisor gives it to the
 * guest's NIC, and the tap's table accepts no other.
 */
static void
vm_mac(struct vm *vm)
{
	char pair[3];
	size_t i;

	vm->fw.mac[0] = 0x02;
	vm->fw.mac[1] = 0x49;
	for (i = 0; i < 4; i++) {
		memcpy(pair, vm->id + 2 * i, 2);
		pair[2] = '\0';
		vm->fw.mac[2 + i] = (unsigned char)strtoul(pair, NULL, 16);
	}
	snprintf(vm->mac, sizeof(vm->mac), "%02x:%02x:%02x:%02x:%02x:%02x",
	    vm->fw.mac[0], vm->fw.mac[1], vm->fw.mac[2], vm->fw.mac[3],
	    vm->fw.mac[4], vm->fw.mac[5]);
}

/* The run directory, the names, the pid file.  0, or -1 (said). */
static int
vm_prepare(const struct exec_run *run, struct vm *vm)
{
	const char *b = vm_getenv("INTUTIC_VM_RUNDIR", NULL);
	char p[PATH_MAX], text[128];
	const char *hex = run->id + 4;	/* "run-" */

	snprintf(vm->id, sizeof(vm->id), "%s", hex);
	snprintf(vm->base, sizeof(vm->base), "%s",
	    b != NULL ? b : VM_RUNDIR_DEFAULT);
	snprintf(vm->fw.table, sizeof(vm->fw.table), "%s%s", HOSTFW_VM_PREFIX,
	    vm->id);
	snprintf(vm->fw.tap, sizeof(vm->fw.tap), "%s%.8s", VM_TAP_PREFIX,
	    vm->id);
	vm_mac(vm);
	if ((size_t)snprintf(vm->dir, sizeof(vm->dir), "%s/%s", vm->base,
	    run->id) >= sizeof(vm->dir) - 64) {
		fprintf(stderr, "intutic exec: INTUTIC_VM_RUNDIR is too long\n");
		return -1;
	}
	if (vm->dry)
		return 0;
	snprintf(p, sizeof(p), "%s", vm->base);
	for (char *s = p + 1; *s != '\0'; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		(void)mkdir(p, 0755);
		*s = '/';
	}
	if ((mkdir(p, 0700) != 0 && errno != EEXIST) ||
	    mkdir(vm->dir, 0700) != 0) {
		fprintf(stderr, "intutic exec: cannot make the run directory "
		    "%s: %s; nothing was run\n", vm->dir, strerror(errno));
		return -1;
	}
	vm->made_dir = 1;
	vm_pid_text(getpid(), text, sizeof(text));
	vm_path(vm->dir, "launcher.pid", p);
	if (vm_write_file(p, text, 0600) != 0)
		goto fail;
	vm_path(vm->dir, "table", p);
	snprintf(text, sizeof(text), "%s\n", vm->fw.table);
	if (vm_write_file(p, text, 0600) != 0)
		goto fail;
	vm_path(vm->dir, "tap", p);
	snprintf(text, sizeof(text), "%s\n", vm->fw.tap);
	if (vm_write_file(p, text, 0600) != 0)
		goto fail;
	return 0;
 fail:
	fprintf(stderr, "intutic exec: cannot write %s: %s\n", p,
	    strerror(errno));
	return -1;
}

/* The /30, the tap and its table, under the lock of the run directory. */
static int
vm_network(struct vm *vm, unsigned int port)
{
	char lock[PATH_MAX], why[HOSTFW_WHY_MAX];
	int fd = -1, r = -1;

	if (!vm->dry) {
		vm_path(vm->base, ".lock", lock);
		if ((fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) == -1 ||
		    flock(fd, LOCK_EX) != 0) {
			fprintf(stderr, "intutic exec: cannot lock %s: %s\n",
			    lock, strerror(errno));
			goto out;
		}
	}
	if (vm_pick_slot(vm) != 0)
		goto out;
	vm->fw.proxy.family = AF_INET;
	memcpy(vm->fw.proxy.addr, &vm->host, 4);
	vm->fw.proxy.prefix = 32;
	vm->fw.proxy.port = port;
	vm->fw.guest.family = AF_INET;
	memcpy(vm->fw.guest.addr, &vm->guest, 4);
	vm->fw.guest.prefix = 32;
	if (vm->dry) {
		r = 0;
		goto out;
	}
	if (vm_tap_create(vm->fw.tap, vm->host, why, sizeof(why)) != 0) {
		fprintf(stderr, "intutic exec: %s; nothing was run\n", why);
		/* it may exist half-made */
		vm->made_tap = 1;
		goto out;
	}
	vm->made_tap = 1;
	if (hostfw_vm_install(&vm->fw, why, sizeof(why)) != 0) {
		fprintf(stderr, "intutic exec: the microVM's firewall table "
		    "%s: %s; nothing was run\n", vm->fw.table, why);
		goto out;
	}
	vm->made_fw = 1;
	r = 0;
 out:
	if (fd != -1)
		close(fd);
	return r;
}

/* The configuration disk and the pinned host key.  0, or -1 (said). */
static int
vm_config_disk(struct vm *vm)
{
	char cfg[PATH_MAX], p[PATH_MAX], img[PATH_MAX + 8], pub[1024];
	char line[1200], *argv[12];
	size_t n = 0;
	int r;

	vm_path(vm->dir, "config", cfg);
	if (mkdir(cfg, 0700) != 0) {
		fprintf(stderr, "intutic exec: %s: %s\n", cfg, strerror(errno));
		return -1;
	}
	vm_path(cfg, "ssh_host_ed25519_key", p);
	argv[n++] = vm_keygen;
	argv[n++] = (char *)"-q";
	argv[n++] = (char *)"-t";
	argv[n++] = (char *)"ed25519";
	argv[n++] = (char *)"-N";
	argv[n++] = (char *)"";
	argv[n++] = (char *)"-C";
	argv[n++] = (char *)"intutic-run";
	argv[n++] = (char *)"-f";
	argv[n++] = p;
	argv[n] = NULL;
	if (vm_tool(argv, NULL, 0, "the run's ssh host key") != 0)
		return -1;
	snprintf(img, sizeof(img), "%s.pub", p);
	if (vm_read_file(img, pub, sizeof(pub)) != 0) {
		fprintf(stderr, "intutic exec: %s: %s\n", img, strerror(errno));
		return -1;
	}
	unlink(img);
	/* pinned: this run's known_hosts holds this key only */
	snprintf(line, sizeof(line), "%s %s\n", inet_ntoa(vm->guest), pub);
	vm_path(vm->dir, "known_hosts", p);
	if (vm_write_file(p, line, 0600) != 0)
		goto werr;
	snprintf(line, sizeof(line), "%s\n", vm->pubkey);
	vm_path(cfg, "authorized_keys", p);
	if (vm_write_file(p, line, 0644) != 0)
		goto werr;
	vm_path(vm->dir, "config.ext4", img);
	n = 0;
	argv[n++] = vm_mkfs;
	argv[n++] = (char *)"-q";
	argv[n++] = (char *)"-F";
	argv[n++] = (char *)"-L";
	argv[n++] = (char *)"intutic-run";
	argv[n++] = (char *)"-d";
	argv[n++] = cfg;
	argv[n++] = img;
	argv[n++] = (char *)VM_CONFIG_DISK;
	argv[n] = NULL;
	r = vm_tool(argv, NULL, 0, "the run's configuration disk");
	/* the host key's only copy is on the disk now */
	vm_rmtree(cfg);
	return r;
 werr:
	fprintf(stderr, "intutic exec: cannot write %s: %s\n", p,
	    strerror(errno));
	return -1;
}

/* The throwaway copy of the root image firecracker boots. */
static int
vm_copy_rootfs(struct vm *vm)
{
	int in, out;
	ssize_t n;

	snprintf(vm->rootimg, sizeof(vm->rootimg), "%s/rootfs.img", vm->dir);
	if ((in = open(vm->rootfs, O_RDONLY | O_CLOEXEC)) == -1)
		goto fail;
	if ((out = open(vm->rootimg, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0600)) == -1) {
		close(in);
		goto fail;
	}
	/* FICLONE would be instant on a reflink file system; a copy works
	 * everywhere */
	do {
		n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
	} while (n > 0 || (n < 0 && errno == EINTR));
	close(in);
	if (n < 0 || close(out) != 0)
		goto fail;
	return 0;
 fail:
	fprintf(stderr, "intutic exec: cannot copy the root image %s: %s; "
	    "nothing was run\n", vm->rootfs, strerror(errno));
	return -1;
}

/* The host's TSC in kHz (cpu MHz of /proc/cpuinfo), or 0. */
static unsigned long
vm_tsc_khz(void)
{
	FILE *f;
	char line[256];
	double mhz = 0;

	if ((f = fopen("/proc/cpuinfo", "r")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "cpu MHz", 7) == 0 &&
		    sscanf(line, "cpu MHz : %lf", &mhz) == 1)
			break;
	fclose(f);
	return mhz > 0 ? (unsigned long)(mhz * 1000) : 0;
}

static void
vm_cmdline(struct vm *vm)
{
	char g[INET_ADDRSTRLEN], h[INET_ADDRSTRLEN], tsc[48] = "";
	unsigned long khz;

	inet_ntop(AF_INET, &vm->guest, g, sizeof(g));
	inet_ntop(AF_INET, &vm->host, h, sizeof(h));
	/* an emulated TSC must not be calibrated against a loaded host */
	if (vm->tcg && (khz = vm_tsc_khz()) != 0)
		snprintf(tsc, sizeof(tsc), " tsc_early_khz=%lu", khz);
	snprintf(vm->cmdline, sizeof(vm->cmdline), "console=ttyS0 reboot=k "
	    "panic=-1 pci=off root=/dev/vda rw init=%s "
	    "ip=%s::%s:255.255.255.252::eth0:off%s", VM_GUEST_INIT, g, h, tsc);
}

/*
 * firecracker's configuration (--config-file, the API's PUT bodies in one
 * object): boot-source, drives, network-interfaces, machine-config.
 */
static void
vm_fc_config(const struct vm *vm, const char *config_disk, FILE *out)
{
	fputs("{\n  \"boot-source\": {\n    \"kernel_image_path\": ", out);
	jsonw_fstr(out, vm->kernel);
	if (vm->initrd[0] != '\0') {
		fputs(",\n    \"initrd_path\": ", out);
		jsonw_fstr(out, vm->initrd);
	}
	fputs(",\n    \"boot_args\": ", out);
	jsonw_fstr(out, vm->cmdline);
	fputs("\n  },\n  \"drives\": [\n    {\n      \"drive_id\": \"rootfs\",\n"
	    "      \"path_on_host\": ", out);
	jsonw_fstr(out, vm->rootimg);
	fputs(",\n      \"is_root_device\": true,\n      \"is_read_only\": false\n"
	    "    },\n    {\n      \"drive_id\": \"config\",\n"
	    "      \"path_on_host\": ", out);
	jsonw_fstr(out, config_disk);
	fputs(",\n      \"is_root_device\": false,\n      \"is_read_only\": true\n"
	    "    }\n  ],\n  \"network-interfaces\": [\n    {\n"
	    "      \"iface_id\": \"eth0\",\n      \"guest_mac\": ", out);
	jsonw_fstr(out, vm->mac);
	fputs(",\n      \"host_dev_name\": ", out);
	jsonw_fstr(out, vm->fw.tap);
	fprintf(out, "\n    }\n  ],\n  \"machine-config\": {\n"
	    "    \"vcpu_count\": %u,\n    \"mem_size_mib\": %u,\n"
	    "    \"smt\": false\n  }\n}\n", vm->cpus, vm->mem_mib);
}

/* The hypervisor's argv into argv (strings in bufs).  Returns argc. */
static size_t
vm_argv(const struct vm *vm, char **argv, char bufs[8][PATH_MAX + 128])
{
	size_t n = 0;

	argv[n++] = (char *)vm->bin;
	if (vm->fc) {
		snprintf(bufs[0], sizeof(bufs[0]), "%s/vm.json", vm->dir);
		snprintf(bufs[1], sizeof(bufs[1]), "intutic-%.40s", vm->id);
		argv[n++] = (char *)"--no-api";
		argv[n++] = (char *)"--config-file";
		argv[n++] = bufs[0];
		argv[n++] = (char *)"--id";
		argv[n++] = bufs[1];
		argv[n] = NULL;
		return n;
	}
	snprintf(bufs[0], sizeof(bufs[0]), "%u", vm->mem_mib);
	snprintf(bufs[1], sizeof(bufs[1]), "%u", vm->cpus);
	snprintf(bufs[2], sizeof(bufs[2]), "id=root,file=%s,format=raw,"
	    "if=none,snapshot=on", vm->rootfs);
	snprintf(bufs[3], sizeof(bufs[3]), "id=config,file=%s/config.ext4,"
	    "format=raw,if=none,readonly=on", vm->dir);
	snprintf(bufs[4], sizeof(bufs[4]), "tap,id=net0,ifname=%s,script=no,"
	    "downscript=no", vm->fw.tap);
	snprintf(bufs[5], sizeof(bufs[5]), "virtio-net-device,netdev=net0,"
	    "mac=%s", vm->mac);
	snprintf(bufs[6], sizeof(bufs[6]), "file:%s/console.log", vm->dir);
	snprintf(bufs[7], sizeof(bufs[7]), "tcg,tb-size=%u", VM_TCG_TB_MIB);
	argv[n++] = (char *)"-M";
	argv[n++] = (char *)"microvm";
	argv[n++] = (char *)"-accel";
	argv[n++] = vm->tcg ? bufs[7] : (char *)"kvm";
	argv[n++] = (char *)"-cpu";
	argv[n++] = (char *)(vm->tcg ? "max" : "host");
	argv[n++] = (char *)"-m";
	argv[n++] = bufs[0];
	argv[n++] = (char *)"-smp";
	argv[n++] = bufs[1];
	argv[n++] = (char *)"-nodefaults";
	argv[n++] = (char *)"-no-user-config";
	argv[n++] = (char *)"-no-reboot";
	argv[n++] = (char *)"-display";
	argv[n++] = (char *)"none";
	argv[n++] = (char *)"-serial";
	argv[n++] = bufs[6];
	argv[n++] = (char *)"-kernel";
	argv[n++] = (char *)vm->kernel;
	if (vm->initrd[0] != '\0') {
		argv[n++] = (char *)"-initrd";
		argv[n++] = (char *)vm->initrd;
	}
	argv[n++] = (char *)"-append";
	argv[n++] = (char *)vm->cmdline;
	/* the root first: it is the guest's /dev/vda */
	argv[n++] = (char *)"-drive";
	argv[n++] = bufs[2];
	argv[n++] = (char *)"-device";
	argv[n++] = (char *)"virtio-blk-device,drive=root";
	argv[n++] = (char *)"-drive";
	argv[n++] = bufs[3];
	argv[n++] = (char *)"-device";
	argv[n++] = (char *)"virtio-blk-device,drive=config";
	argv[n++] = (char *)"-netdev";
	argv[n++] = bufs[4];
	argv[n++] = (char *)"-device";
	argv[n++] = bufs[5];
	argv[n] = NULL;
	return n;
}

/* Starts the hypervisor, its output into the run directory. */
static int
vm_boot(struct vm *vm)
{
	char bufs[8][PATH_MAX + 128], log[PATH_MAX], p[PATH_MAX], text[64];
	char tmpdir[PATH_MAX + 8], *argv[64], *envp[3];
	posix_spawn_file_actions_t fa;
	FILE *f;
	pid_t pid;
	int rc;

	if (vm->fc) {
		vm_path(vm->dir, "vm.json", p);
		vm_path(vm->dir, "config.ext4", log);
		if ((f = fopen(p, "w")) == NULL) {
			fprintf(stderr, "intutic exec: %s: %s\n", p,
			    strerror(errno));
			return -1;
		}
		vm_fc_config(vm, log, f);
		if (fclose(f) != 0) {
			fprintf(stderr, "intutic exec: %s: %s\n", p,
			    strerror(errno));
			return -1;
		}
	}
	vm_argv(vm, argv, bufs);
	/* qemu's snapshot overlay goes into the run directory */
	snprintf(tmpdir, sizeof(tmpdir), "TMPDIR=%s", vm->dir);
	envp[0] = tmpdir;
	envp[1] = (char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin";
	envp[2] = NULL;
	snprintf(log, sizeof(log), "%s/%s.log", vm->dir, vm->name);
	if ((rc = posix_spawn_file_actions_init(&fa)) != 0 ||
	    (rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null",
	    O_RDONLY, 0)) != 0 ||
	    (rc = posix_spawn_file_actions_addopen(&fa, 1, log,
	    O_WRONLY | O_CREAT | O_TRUNC, 0600)) != 0 ||
	    (rc = posix_spawn_file_actions_adddup2(&fa, 1, 2)) != 0) {
		fprintf(stderr, "intutic exec: %s\n", strerror(rc));
		return -1;
	}
	rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		fprintf(stderr, "intutic exec: cannot run %s: %s; nothing was "
		    "run\n", argv[0], strerror(rc));
		return -1;
	}
	vm->pid = pid;
	vm_pid_text(pid, text, sizeof(text));
	vm_path(vm->dir, "vm.pid", p);
	(void)vm_write_file(p, text, 0600);
	return 0;
}

/* The last lines of the console, for a boot that failed. */
static void
vm_console_tail(const struct vm *vm)
{
	char p[PATH_MAX], buf[2048];
	int fd;
	off_t end;
	ssize_t n;

	vm_path(vm->dir, "console.log", p);
	if ((fd = open(p, O_RDONLY | O_CLOEXEC)) == -1)
		return;
	end = lseek(fd, 0, SEEK_END);
	(void)lseek(fd, end > (off_t)sizeof(buf) - 1 ?
	    end - (off_t)sizeof(buf) + 1 : 0, SEEK_SET);
	if ((n = read(fd, buf, sizeof(buf) - 1)) > 0) {
		buf[n] = '\0';
		fprintf(stderr, "intutic exec: the guest's console ended "
		    "with:\n%s\n", buf);
	}
	close(fd);
}

/* Whether the guest's sshd answers with its banner. */
static int
vm_ssh_answers(const struct vm *vm)
{
	struct sockaddr_in sa;
	struct pollfd p;
	char banner[8];
	int fd, ok = 0;
	ssize_t n;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(22);
	sa.sin_addr = vm->guest;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 &&
	    errno != EINPROGRESS)
		goto out;
	p.fd = fd;
	p.events = POLLIN;
	if (poll(&p, 1, 1000) == 1 && (p.revents & POLLIN) &&
	    (n = recv(fd, banner, sizeof(banner), 0)) >= 4 &&
	    memcmp(banner, "SSH-", 4) == 0)
		ok = 1;
 out:
	close(fd);
	return ok;
}

/* Waits for the guest's sshd: 0, or -1 (said; vm_signal set on a signal). */
static int
vm_wait_ready(struct vm *vm)
{
	long long deadline = proc_now_ms() + VM_BOOT_MS;
	int st;

	while (proc_now_ms() < deadline) {
		struct timespec nap = { 0, 200 * 1000000L };

		if (vm_signal != 0)
			return -1;
		if (waitpid(vm->pid, &st, WNOHANG) == vm->pid) {
			vm->pid = -1;
			fprintf(stderr, "intutic exec: the microVM stopped while "
			    "it booted (%s %d)\n", WIFEXITED(st) ? "exit" :
			    "signal", WIFEXITED(st) ? WEXITSTATUS(st) :
			    WTERMSIG(st));
			vm_console_tail(vm);
			return -1;
		}
		if (vm_ssh_answers(vm))
			return 0;
		nanosleep(&nap, NULL);
	}
	fprintf(stderr, "intutic exec: the guest's sshd did not answer within "
	    "%d s of the boot\n", VM_BOOT_MS / 1000);
	vm_console_tail(vm);
	return -1;
}

/* Appends s single-quoted for a POSIX shell; -1 when it does not fit. */
static int
vm_quote(char *buf, size_t len, size_t *off, const char *s)
{
	if (*off + 3 >= len)
		return -1;
	buf[(*off)++] = '\'';
	for (; *s != '\0'; s++) {
		if (*s == '\'') {
			if (*off + 5 >= len)
				return -1;
			memcpy(buf + *off, "'\\''", 4);
			*off += 4;
		} else {
			if (*off + 2 >= len)
				return -1;
			buf[(*off)++] = *s;
		}
	}
	buf[(*off)++] = '\'';
	buf[*off] = '\0';
	return 0;
}

/*
 * ssh into the guest and runs the command; its exit status (128+N when
 * the launcher got signal N), or -1 (said).
 */
static int
vm_agent(const struct exec_run *run, struct vm *vm)
{
	const struct exec_opts *o = run->o;
	struct envv e = { NULL, 0, 0 };
	char *argv[VM_ARGV_MAX], *names[VM_NAMES_MAX], **envp = NULL;
	char kh[PATH_MAX + 32], dest[64], host[INET_ADDRSTRLEN], *cmd = NULL;
	size_t n = 0, i, off = 0, nnames = 0;
	pid_t pid;
	int rc, st, r = -1;

	inet_ntop(AF_INET, &vm->host, host, sizeof(host));
	if (exec_env(run, &e, host, run->loc->port, 0) != 0 ||
	    (cmd = malloc(VM_CMD_MAX)) == NULL) {
		fprintf(stderr, "intutic exec: out of memory\n");
		goto out;
	}
	memcpy(cmd, "exec", 4);
	off = 4;
	for (i = 0; o->argv[i] != NULL; i++) {
		cmd[off++] = ' ';
		if (vm_quote(cmd, VM_CMD_MAX, &off, o->argv[i]) != 0) {
			fprintf(stderr, "intutic exec: the command is too long "
			    "for the guest\n");
			goto out;
		}
	}
	snprintf(kh, sizeof(kh), "UserKnownHostsFile=%s/known_hosts", vm->dir);
	snprintf(dest, sizeof(dest), "%s@%s", VM_USER, inet_ntoa(vm->guest));
	argv[n++] = vm_ssh;
	argv[n++] = (char *)"-F";
	argv[n++] = (char *)"/dev/null";
	argv[n++] = (char *)"-i";
	argv[n++] = vm->key;
	argv[n++] = (char *)"-o";
	argv[n++] = (char *)"IdentitiesOnly=yes";
	argv[n++] = (char *)"-o";
	argv[n++] = kh;
	argv[n++] = (char *)"-o";
	argv[n++] = (char *)"GlobalKnownHostsFile=/dev/null";
	argv[n++] = (char *)"-o";
	argv[n++] = (char *)"StrictHostKeyChecking=yes";
	argv[n++] = (char *)"-o";
	argv[n++] = (char *)"BatchMode=yes";
	argv[n++] = (char *)"-o";
	argv[n++] = (char *)"ConnectTimeout=15";
	argv[n++] = (char *)"-o";
	argv[n++] = (char *)"ServerAliveInterval=15";
	argv[n++] = (char *)"-o";
	argv[n++] = (char *)"LogLevel=ERROR";
	/* By name: the values travel in ssh's own environment. */
	if (e.n > VM_NAMES_MAX) {
		fprintf(stderr, "intutic exec: too many variables for the "
		    "microVM (%zu)\n", e.n);
		goto out;
	}
	for (i = 0; i < e.n; i++) {
		size_t len = strcspn(e.v[i], "=");
		char *opt;

		if ((opt = malloc(len + 9)) == NULL) {
			fprintf(stderr, "intutic exec: out of memory\n");
			goto out;
		}
		memcpy(opt, "SendEnv=", 8);
		memcpy(opt + 8, e.v[i], len);
		opt[8 + len] = '\0';
		names[nnames++] = opt;
		argv[n++] = (char *)"-o";
		argv[n++] = opt;
	}
	argv[n++] = (char *)(isatty(0) ? "-t" : "-T");
	argv[n++] = dest;
	argv[n++] = (char *)"--";
	argv[n++] = cmd;
	argv[n] = NULL;
	if ((envp = calloc(e.n + 8, sizeof(*envp))) == NULL) {
		fprintf(stderr, "intutic exec: out of memory\n");
		goto out;
	}
	/* ssh's environment: a base, and the command's (sent by name) */
	n = 0;
	for (i = 0; environ[i] != NULL && n < 3; i++)
		if (strncmp(environ[i], "PATH=", 5) == 0 ||
		    strncmp(environ[i], "TERM=", 5) == 0 ||
		    strncmp(environ[i], "HOME=", 5) == 0)
			envp[n++] = environ[i];
	for (i = 0; i < e.n; i++)
		envp[n++] = e.v[i];
	envp[n] = NULL;
	fflush(NULL);
	if ((rc = posix_spawn(&pid, argv[0], NULL, NULL, argv, envp)) != 0) {
		fprintf(stderr, "intutic exec: cannot run %s: %s\n", argv[0],
		    strerror(rc));
		goto out;
	}
	vm_child = pid;
	if (vm_signal != 0)
		kill(pid, vm_signal);
	/* ssh ends, or the VM does under it (ssh would not see that soon) */
	for (;;) {
		struct timespec nap = { 0, 100 * 1000000L };
		int vst;
		pid_t w;

		if ((w = waitpid(pid, &st, WNOHANG)) == pid ||
		    (w == -1 && errno != EINTR))
			break;
		if (vm->pid > 0 && waitpid(vm->pid, &vst, WNOHANG) == vm->pid) {
			vm->pid = -1;
			kill(pid, SIGTERM);
			while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
				;
			fprintf(stderr, "intutic exec: the microVM stopped under "
			    "the command (%s %d): its status is not known\n",
			    WIFEXITED(vst) ? "exit" : "signal", WIFEXITED(vst) ?
			    WEXITSTATUS(vst) : WTERMSIG(vst));
			vm_console_tail(vm);
			vm_child = 0;
			r = EXIT_CANNOT_RUN;
			goto out;
		}
		nanosleep(&nap, NULL);
	}
	vm_child = 0;
	r = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
 out:
	for (i = 0; i < nnames; i++)
		free(names[i]);
	free(envp);
	free(cmd);
	envv_free(&e);
	return r;
}

/* ----------------------------------------------------------------- run */

int
vm_check(const struct exec_run *run)
{
	struct vm vm;

	return vm_gates(run, &vm);
}

/* --sandbox-dry-run: what would be made and booted, nothing made. */
static int
vm_plan(const struct exec_run *run, struct vm *vm)
{
	char bufs[8][PATH_MAX + 128], *argv[64], why[HOSTFW_WHY_MAX];
	char img[PATH_MAX + 16], h[INET_ADDRSTRLEN], g[INET_ADDRSTRLEN];
	size_t i, n;

	if (vm_prepare(run, vm) != 0 || vm_network(vm, run->loc->port) != 0)
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
		n = vm_argv(vm, argv, bufs);
		printf("# the hypervisor:\n");
		for (i = 0; i < n; i++)
			printf("%s%s", i > 0 ? " " : "", argv[i]);
		printf("\n");
	}
	printf("# the host's table:\n");
	fflush(stdout);
	if (hostfw_vm_print(&vm->fw, stdout, why, sizeof(why)) != 0) {
		fprintf(stderr, "intutic exec: %s\n", why);
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
		fprintf(stderr, "intutic exec: INTUTIC_QEMU_ACCEL=tcg: the "
		    "microVM is emulated, without KVM (slow)\n");
	vm_signal = 0;
	vm_signals(old);
	r = EXIT_CANNOT_RUN;
	/* each step checks that no signal asked the run to end */
	if (vm_prepare(run, &vm) != 0 || vm_signal != 0 ||
	    vm_network(&vm, run->loc->port) != 0 || vm_signal != 0 ||
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
