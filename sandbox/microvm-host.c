/*
 * microvm-host.c — what a microVM run makes on the host and takes down
 * (see microvm.h): its run directory, its tap, its tables; what a launcher
 * that died left is found and removed.
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

/* ------------------------------------------------------- run directory */

int
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

int
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
void
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
void
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
int
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
int
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
	error("every /30 of the microVM subnet is in "
	    "use; nothing was run");
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
int
vm_teardown(struct vm *vm)
{
	char why[256];
	int bad = 0;

	vm_stop(vm);
	if (vm->made_fw && hostfw_vm_remove(vm->fw.table, why,
	    sizeof(why)) < 0) {
		error("teardown: table %s: %s",
		    vm->fw.table, why);
		bad = 1;
	}
	vm->made_fw = 0;
	if (vm->made_tap && vm_link_delete(vm->fw.tap, why, sizeof(why)) < 0) {
		error("teardown: tap %s: %s",
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

