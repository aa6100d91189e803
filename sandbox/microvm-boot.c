/*
 * microvm-boot.c — a microVM run from its disks to its agent (see
 * microvm.h): the configuration disk, the root image, the kernel command
 * line, the hypervisor's arguments, the boot, and the command over ssh.
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

#include "argv.h"
#include "backend.h"
#include "jsonw.h"
#include "hostfw.h"
#include "intutic.h"
#include "log.h"
#include "proc.h"
#include "rules.h"
#include "spawn.h"
#include "microvm.h"

extern char **environ;

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
int
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
		error("INTUTIC_VM_RUNDIR is too long");
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
		error("cannot make the run directory "
		    "%s: %s; nothing was run", vm->dir, strerror(errno));
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
	error("cannot write %s: %s", p,
	    strerror(errno));
	return -1;
}

/* The /30, the tap and its table, under the lock of the run directory. */
int
vm_network(struct vm *vm, const struct exec_run *run)
{
	const struct proxy_loc *loc = run->loc;
	uint16_t ports[HOSTFW_REDIRECT_MAX];
	unsigned int tport, dport;
	char lock[PATH_MAX], why[HOSTFW_WHY_MAX];
	int fd = -1, r = -1;

	if (!vm->dry) {
		vm_path(vm->base, ".lock", lock);
		if ((fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) == -1 ||
		    flock(fd, LOCK_EX) != 0) {
			error("cannot lock %s: %s",
			    lock, strerror(errno));
			goto out;
		}
	}
	if (vm_pick_slot(vm) != 0)
		goto out;
	vm->fw.proxy.family = AF_INET;
	memcpy(vm->fw.proxy.addr, &vm->host, 4);
	vm->fw.proxy.prefix = 32;
	vm->fw.proxy.port = loc->port;
	/* the gates made sure the proxy serves both on every address */
	tport = vm_wildcard_port(loc->st.transparent, loc->st.ntransparent);
	dport = vm_wildcard_port(loc->st.dns, loc->st.ndns);
	if (tport != 0 && dport != 0) {
		vm->fw.transparent = vm->fw.proxy;
		vm->fw.transparent.port = tport;
		vm->fw.transparent_set = 1;
		/* 80, 443 and the ports an allow entry names */
		vm->fw.nredirect = hostfw_redirect_ports(ports,
		    run->rules != NULL ? rules_allow_ports(run->rules, ports,
		    HOSTFW_REDIRECT_MAX) : 0, vm->fw.redirect);
		vm->fw.dns = vm->fw.proxy;
		vm->fw.dns.port = dport;
		vm->fw.dns_set = 1;
	}
	vm->fw.guest.family = AF_INET;
	memcpy(vm->fw.guest.addr, &vm->guest, 4);
	vm->fw.guest.prefix = 32;
	if (vm->dry) {
		r = 0;
		goto out;
	}
	if (vm_tap_create(vm->fw.tap, vm->host, why, sizeof(why)) != 0) {
		error("%s; nothing was run", why);
		/* it may exist half-made */
		vm->made_tap = 1;
		goto out;
	}
	vm->made_tap = 1;
	if (hostfw_vm_install(&vm->fw, why, sizeof(why)) != 0) {
		error("the microVM's firewall table "
		    "%s: %s; nothing was run", vm->fw.table, why);
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
int
vm_config_disk(struct vm *vm)
{
	char cfg[PATH_MAX], p[PATH_MAX], img[PATH_MAX + 8], pub[1024];
	char line[1200];
	int r;

	vm_path(vm->dir, "config", cfg);
	if (mkdir(cfg, 0700) != 0) {
		error("%s: %s", cfg, strerror(errno));
		return -1;
	}
	vm_path(cfg, "ssh_host_ed25519_key", p);
	{
		char *const kg[] = { vm_keygen, (char *)"-q", (char *)"-t",
		    (char *)"ed25519", (char *)"-N", (char *)"", (char *)"-C",
		    (char *)"intutic-run", (char *)"-f", p, NULL };

		if (vm_tool(kg, NULL, 0, "the run's ssh host key") != 0)
			return -1;
	}
	snprintf(img, sizeof(img), "%s.pub", p);
	if (vm_read_file(img, pub, sizeof(pub)) != 0) {
		error("%s: %s", img, strerror(errno));
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
	{
		char *const mk[] = { vm_mkfs, (char *)"-q", (char *)"-F",
		    (char *)"-L", (char *)"intutic-run", (char *)"-d", cfg, img,
		    (char *)VM_CONFIG_DISK, NULL };

		r = vm_tool(mk, NULL, 0, "the run's configuration disk");
	}
	/* the host key's only copy is on the disk now */
	vm_rmtree(cfg);
	return r;
 werr:
	error("cannot write %s: %s", p,
	    strerror(errno));
	return -1;
}

/* The throwaway copy of the root image firecracker boots. */
int
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
	error("cannot copy the root image %s: %s; "
	    "nothing was run", vm->rootfs, strerror(errno));
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

void
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
void
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

/* The hypervisor's command line, into ab. */
void
vm_argv(const struct vm *vm, struct argvb *ab)
{
	argvb_add(ab, vm->bin);
	if (vm->fc) {
		argvb_add(ab, "--no-api");
		argvb_add(ab, "--config-file");
		argvb_addf(ab, "%s/vm.json", vm->dir);
		argvb_add(ab, "--id");
		argvb_addf(ab, "intutic-%.40s", vm->id);
		return;
	}
	argvb_add(ab, "-M");
	argvb_add(ab, "microvm");
	argvb_add(ab, "-accel");
	if (vm->tcg)
		argvb_addf(ab, "tcg,tb-size=%u", VM_TCG_TB_MIB);
	else
		argvb_add(ab, "kvm");
	argvb_add(ab, "-cpu");
	argvb_add(ab, vm->tcg ? "max" : "host");
	argvb_add(ab, "-m");
	argvb_addf(ab, "%u", vm->mem_mib);
	argvb_add(ab, "-smp");
	argvb_addf(ab, "%u", vm->cpus);
	argvb_add(ab, "-nodefaults");
	argvb_add(ab, "-no-user-config");
	argvb_add(ab, "-no-reboot");
	argvb_add(ab, "-display");
	argvb_add(ab, "none");
	argvb_add(ab, "-serial");
	argvb_addf(ab, "file:%s/console.log", vm->dir);
	argvb_add(ab, "-kernel");
	argvb_add(ab, vm->kernel);
	if (vm->initrd[0] != '\0') {
		argvb_add(ab, "-initrd");
		argvb_add(ab, vm->initrd);
	}
	argvb_add(ab, "-append");
	argvb_add(ab, vm->cmdline);
	/* the root first: it is the guest's /dev/vda */
	argvb_add(ab, "-drive");
	argvb_addf(ab, "id=root,file=%s,format=raw,if=none,snapshot=on",
	    vm->rootfs);
	argvb_add(ab, "-device");
	argvb_add(ab, "virtio-blk-device,drive=root");
	argvb_add(ab, "-drive");
	argvb_addf(ab, "id=config,file=%s/config.ext4,"
	    "format=raw,if=none,readonly=on", vm->dir);
	argvb_add(ab, "-device");
	argvb_add(ab, "virtio-blk-device,drive=config");
	argvb_add(ab, "-netdev");
	argvb_addf(ab, "tap,id=net0,ifname=%s,script=no,downscript=no",
	    vm->fw.tap);
	argvb_add(ab, "-device");
	argvb_addf(ab, "virtio-net-device,netdev=net0,mac=%s", vm->mac);
}

/* Starts the hypervisor, its output into the run directory. */
int
vm_boot(struct vm *vm)
{
	char log[PATH_MAX], p[PATH_MAX], text[64];
	char tmpdir[PATH_MAX + 8], **argv, *envp[3];
	struct argvb ab;
	posix_spawn_file_actions_t fa;
	FILE *f;
	pid_t pid;
	int rc;

	if (vm->fc) {
		vm_path(vm->dir, "vm.json", p);
		vm_path(vm->dir, "config.ext4", log);
		if ((f = fopen(p, "w")) == NULL) {
			error("%s: %s", p,
			    strerror(errno));
			return -1;
		}
		vm_fc_config(vm, log, f);
		if (fclose(f) != 0) {
			error("%s: %s", p,
			    strerror(errno));
			return -1;
		}
	}
	argvb_init(&ab);
	vm_argv(vm, &ab);
	if ((argv = argvb_done(&ab)) == NULL) {
		argvb_free(&ab);
		error("out of memory");
		return -1;
	}
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
		error("%s", strerror(rc));
		argvb_free(&ab);
		return -1;
	}
	rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		error("cannot run %s: %s; nothing was "
		    "run", argv[0], strerror(rc));
		argvb_free(&ab);
		return -1;
	}
	argvb_free(&ab);
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
		error("the guest's console ended with:\n%s", buf);
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
int
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
			error("the microVM stopped while "
			    "it booted (%s %d)", WIFEXITED(st) ? "exit" :
			    "signal", WIFEXITED(st) ? WEXITSTATUS(st) :
			    WTERMSIG(st));
			vm_console_tail(vm);
			return -1;
		}
		if (vm_ssh_answers(vm))
			return 0;
		nanosleep(&nap, NULL);
	}
	error("the guest's sshd did not answer within "
	    "%d s of the boot", VM_BOOT_MS / 1000);
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
int
vm_agent(const struct exec_run *run, struct vm *vm)
{
	const struct exec_opts *o = run->o;
	struct envv e = { NULL, 0, 0 };
	struct argvb ab;
	char **argv, **envp = NULL;
	char kh[PATH_MAX + 32], dest[64], host[INET_ADDRSTRLEN], *cmd = NULL;
	size_t n, i, off = 0;
	pid_t pid;
	int rc, st, r = -1;

	argvb_init(&ab);
	inet_ntop(AF_INET, &vm->host, host, sizeof(host));
	/* GIT_SSH_COMMAND: after exec_env(), so that -e's wins. */
	if (exec_env(run, &e, host, run->loc->port, 0) != 0 ||
	    envv_set(&e, "GIT_SSH_COMMAND", SANDBOX_GIT_SSH) != 0 ||
	    (cmd = malloc(VM_CMD_MAX)) == NULL) {
		error("out of memory");
		goto out;
	}
	memcpy(cmd, "exec", 4);
	off = 4;
	for (i = 0; o->argv[i] != NULL; i++) {
		cmd[off++] = ' ';
		if (vm_quote(cmd, VM_CMD_MAX, &off, o->argv[i]) != 0) {
			error("the command is too long "
			    "for the guest");
			goto out;
		}
	}
	snprintf(kh, sizeof(kh), "UserKnownHostsFile=%s/known_hosts", vm->dir);
	snprintf(dest, sizeof(dest), "%s@%s", VM_USER, inet_ntoa(vm->guest));
	argvb_add(&ab, vm_ssh);
	argvb_add(&ab, "-F");
	argvb_add(&ab, "/dev/null");
	argvb_add(&ab, "-i");
	argvb_add(&ab, vm->key);
	argvb_add(&ab, "-o");
	argvb_add(&ab, "IdentitiesOnly=yes");
	argvb_add(&ab, "-o");
	argvb_add(&ab, kh);
	argvb_add(&ab, "-o");
	argvb_add(&ab, "GlobalKnownHostsFile=/dev/null");
	argvb_add(&ab, "-o");
	argvb_add(&ab, "StrictHostKeyChecking=yes");
	argvb_add(&ab, "-o");
	argvb_add(&ab, "BatchMode=yes");
	argvb_add(&ab, "-o");
	argvb_add(&ab, "ConnectTimeout=15");
	argvb_add(&ab, "-o");
	argvb_add(&ab, "ServerAliveInterval=15");
	argvb_add(&ab, "-o");
	argvb_add(&ab, "LogLevel=ERROR");
	/* By name: the values travel in ssh's own environment. */
	for (i = 0; i < e.n; i++) {
		argvb_add(&ab, "-o");
		argvb_addf(&ab, "SendEnv=%.*s", (int)strcspn(e.v[i], "="),
		    e.v[i]);
	}
	argvb_add(&ab, isatty(0) ? "-t" : "-T");
	argvb_add(&ab, dest);
	argvb_add(&ab, "--");
	argvb_add(&ab, cmd);
	if ((argv = argvb_done(&ab)) == NULL ||
	    (envp = calloc(e.n + 8, sizeof(*envp))) == NULL) {
		error("out of memory");
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
		error("cannot run %s: %s", argv[0],
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
			error("the microVM stopped under "
			    "the command (%s %d): its status is not known",
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
	argvb_free(&ab);
	free(envp);
	free(cmd);
	envv_free(&e);
	return r;
}

