/*
 * microvm-gates.c — what must hold before a microVM run starts (see
 * microvm.h): KVM or emulation asked for, the hypervisor, kernel, root
 * image and guest key, ssh and its tools, root, the proxy on every address,
 * a free subnet.
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
		error("--sandbox: set %s%s%s to the "
		    "guest's %s (scripts/mkguest builds one); nothing was run",
		    v1, v2 != NULL ? " or " : "", v2 != NULL ? v2 : "", what);
		return -1;
	}
	if (access(v, R_OK) != 0) {
		error("--sandbox: the guest's %s %s "
		    "cannot be read: %s; nothing was run", what, v,
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
				error("--sandbox: the "
				    "microVM subnet %s overlaps %s's address %s; "
				    "set INTUTIC_VM_SUBNET to a private range this "
				    "host does not use; nothing was run", subnet,
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
			error("--sandbox: the microVM "
			    "subnet %s overlaps the route to %s/%u via %s; set "
			    "INTUTIC_VM_SUBNET to a private range this host does "
			    "not use; nothing was run", subnet, a,
			    vm_mask_bits(ntohl(mask)), ifn);
			bad = 1;
		}
	}
	fclose(f);
	return bad ? -1 : 0;
}

unsigned int
vm_wildcard_port(const char (*list)[STATE_ADDR_MAX], size_t n)
{
	unsigned long port;
	char *end;
	size_t i;

	for (i = 0; i < n; i++) {
		if (strncmp(list[i], "0.0.0.0:", 8) != 0)
			continue;
		errno = 0;
		port = strtoul(list[i] + 8, &end, 10);
		if (errno == 0 && *end == '\0' && port > 0 && port <= 65535)
			return (unsigned int)port;
	}
	return 0;
}

/*
 * The proxy listens on every address (the guest reaches it on the tap),
 * and serves its transparent listener and its DNS filter there too: the
 * tap's table sends what the guest's clients that ignore the proxy
 * settings send (TCP to ports 80 and 443, DNS) to them.
 */
static int
vm_proxy_reachable(const struct exec_run *run)
{
	const struct proxy_loc *loc = run->loc;
	char add[128];
	size_t i;
	int t, d;

	for (i = 0; loc->have_state && i < loc->st.nbind; i++)
		if (strcmp(loc->st.bind[i], "0.0.0.0") == 0)
			break;
	if (!loc->have_state || i == loc->st.nbind) {
		error("the proxy listens on %s only, and a "
		    "microVM reaches it on the host's end of its tap: restart "
		    "it with INTUTIC_PROXY_BIND=0.0.0.0 (e.g. `INTUTIC_PROXY_"
		    "BIND=0.0.0.0 intutic start --transparent-bind "
		    "0.0.0.0:3129 --dns-bind 0.0.0.0:5300`); nothing was run",
		    loc->have_state && loc->st.nbind > 0 ? loc->st.bind[0] :
		    loc->host);
		return -1;
	}
	t = vm_wildcard_port(loc->st.transparent, loc->st.ntransparent) != 0;
	d = vm_wildcard_port(loc->st.dns, loc->st.ndns) != 0;
	if (t && d)
		return 0;
	snprintf(add, sizeof(add), "%s%s%s", !t ? "--transparent-bind "
	    "0.0.0.0:3129" : "", !t && !d ? " " : "", !d ? "--dns-bind "
	    "0.0.0.0:5300" : "");
	error("the proxy serves no %s on every address, and a microVM's "
	    "clients that ignore the proxy settings are sent there on the "
	    "host's end of its tap: restart it with %s (e.g. `INTUTIC_PROXY_"
	    "BIND=0.0.0.0 intutic start --transparent-bind 0.0.0.0:3129 "
	    "--dns-bind 0.0.0.0:5300`); nothing was run", !t && !d ?
	    "transparent listener and no DNS filter" : !t ?
	    "transparent listener" : "DNS filter", add);
	return -1;
}

/* Runs a tool to completion, its output into out; 0 or -1 (said). */
int
vm_tool(char *const argv[], char *out, size_t outlen, const char *what)
{
	char why[256];
	int st;

	if (spawn_run(argv, NULL, 0, VM_TOOL_MS, out, outlen, &st, why,
	    sizeof(why)) != 0) {
		error("%s: %s", what, why);
		return -1;
	}
	if (st != 0) {
		error("%s: %s exited %d", what,
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
			error("--sandbox: %s is not "
			    "installed (openssh-client, e2fsprogs); nothing was "
			    "run", tools[i]);
			return -1;
		}
	return 0;
}

char vm_ssh[PATH_MAX], vm_keygen[PATH_MAX], vm_mkfs[PATH_MAX];

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
		error("--sandbox=%s: %s is not "
		    "executable; install %s in PATH or set %s; nothing was run",
		    vm->name, b, package, var);
	else
		error("--sandbox=%s: no %s in PATH; "
		    "install %s in PATH or set %s; nothing was run", vm->name,
		    name, package, var);
	return -1;
}

/*
 * Everything a run needs, checked before anything is made.  0, or the
 * exit status of the refusal (said on stderr).
 */
int
vm_gates(const struct exec_run *run, struct vm *vm)
{
	const struct exec_opts *o = run->o;
	const char *accel = getenv("INTUTIC_QEMU_ACCEL");
	const char *subnet = vm_getenv("INTUTIC_VM_SUBNET", NULL);
	char why[256], tools[3][PATH_MAX], *argv[7];
	int st;

	memset(vm, 0, sizeof(*vm));
	vm->pid = -1;
	vm->fc = strcmp(o->sandbox, "firecracker") == 0;
	vm->name = vm->fc ? "firecracker" : "qemu";
	vm->dry = o->dry_run;

	/* no silent fallback to emulation */
	if (!vm->fc && accel != NULL && *accel != '\0' &&
	    strcmp(accel, "tcg") != 0 && strcmp(accel, "kvm") != 0) {
		error("INTUTIC_QEMU_ACCEL='%s': "
		    "expected kvm or tcg", accel);
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
		error("--sandbox=%s: INTUTIC_FC_GUEST_KEY "
		    "is not set: it names the private key that logs in to the "
		    "guest (scripts/mkguest makes one); nothing was set up",
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
	argv[0] = vm_keygen;
	argv[1] = (char *)"-y";
	argv[2] = (char *)"-P";
	argv[3] = (char *)"";
	argv[4] = (char *)"-f";
	argv[5] = vm->key;
	argv[6] = NULL;
	if (spawn_run(argv, NULL, 0, VM_TOOL_MS, vm->pubkey,
	    sizeof(vm->pubkey), &st, why, sizeof(why)) != 0 || st != 0 ||
	    strncmp(vm->pubkey, "ssh-", 4) != 0) {
		error("INTUTIC_FC_GUEST_KEY=%s is not an "
		    "ssh private key without a passphrase; nothing was set up",
		    vm->key);
		return EXIT_USAGE;
	}
	vm->pubkey[strcspn(vm->pubkey, "\n")] = '\0';

	/* the host: root (a tap, a table), then KVM */
	if (!vm->dry) {
		if (geteuid() != 0) {
			error("--sandbox=%s makes a tap "
			    "device and a firewall table: run it as root; "
			    "nothing was run", vm->name);
			return EXIT_CANNOT_RUN;
		}
		if (!vm->tcg && vm_kvm_usable(why, sizeof(why)) != 0) {
			error("--sandbox=%s needs KVM, "
			    "and %s%s; nothing was run", vm->name, why,
			    vm->fc ? "" : " (INTUTIC_QEMU_ACCEL=tcg runs qemu "
			    "emulated, much slower, and says so)");
			return EXIT_CANNOT_RUN;
		}
	}

	vm->mem_mib = VM_MEMORY_MIB;
	if (o->memory != NULL && (vm->mem_mib = vm_mib(o->memory)) == 0) {
		error("--sandbox-memory '%s': expected "
		    "a size such as 512m or 2g (at least 128m)", o->memory);
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
			error("--sandbox-cpus '%s': a "
			    "microVM takes a whole number of CPUs, 1 to 32%s",
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
		error("INTUTIC_VM_SUBNET='%s': expected an "
		    "IPv4 network A.B.C.D/N (N 8 to 30, host bits zero)",
		    subnet);
		return EXIT_USAGE;
	}
	if (vm_subnet_free(vm, subnet) != 0)
		return EXIT_CANNOT_RUN;
	return 0;
}

