#!/usr/bin/perl
# t/data/sandbox/probe.pl — run inside a sandbox container as the agent by
# t/t7002-sandbox-kernel-surface.sh: tries each call intutic's seccomp
# profile (sandbox/seccomp.json) decides and prints one line for it,
# `NAME ok` or `NAME errno=N`.  perl-base only (every Debian image has
# it): sockets with the builtins, the rest with syscall() by number.
use strict;
use warnings;
use POSIX ();

my %nr = (
	x86_64  => { clone => 56, clone3 => 435, setns => 308, keyctl => 250,
		     io_uring_setup => 425, exit_group => 231 },
	aarch64 => { clone => 220, clone3 => 435, setns => 268, keyctl => 219,
		     io_uring_setup => 425, exit_group => 94 },
);
my $arch = (POSIX::uname())[4];
my $sys = $nr{$arch} or die "probe.pl: no syscall numbers for $arch\n";

my $SIGCHLD = 17;
my $CLONE_NEWUSER = 0x10000000;
my $CLONE_NEWNET = 0x40000000;
my $KEYCTL_GET_KEYRING_ID = 0;
my $KEY_SPEC_SESSION_KEYRING = -3;

sub report {
	my ($name, $ok) = @_;
	print $ok ? "$name ok\n" : "$name errno=" . ($! + 0) . "\n";
}

# family, type: AF_VSOCK stream, AF_PACKET datagram, AF_KEY raw (PF_KEY v2)
for my $s (["vsock", 40, 1, 0], ["packet", 17, 2, 0], ["key", 15, 3, 2],
    ["unix", 1, 1, 0], ["inet", 2, 1, 0], ["inet6", 10, 1, 0],
    ["netlink", 16, 3, 0]) {
	my ($name, $family, $type, $proto) = @$s;
	my $ok = socket(my $fh, $family, $type, $proto);
	report("socket-$name", $ok);
	close($fh) if $ok;
}
for my $s (["unix", 1], ["inet", 2]) {
	my ($name, $family) = @$s;
	my $ok = socketpair(my $a, my $b, $family, 1, 0);
	report("socketpair-$name", $ok);
}

# clone(flags, stack 0: the child runs on a copy, as after fork), the
# child leaving at once with exit_group()
sub try_clone {
	my ($name, $flags) = @_;
	my $pid = syscall($sys->{clone}, $flags | $SIGCHLD, 0, 0, 0, 0);
	syscall($sys->{exit_group}, 0) if $pid == 0;
	waitpid($pid, 0) if $pid > 0;
	report($name, $pid > 0);
}
try_clone("clone-plain", 0);
try_clone("clone-newuser", $CLONE_NEWUSER);
try_clone("clone-newuser-newnet", $CLONE_NEWUSER | $CLONE_NEWNET);

# clone3(NULL, 0): EINVAL from a kernel that reads it, ENOSYS as answered
report("clone3", syscall($sys->{clone3}, 0, 0) >= 0);
# setns(-1, 0): EBADF from a kernel that reads it
report("setns", syscall($sys->{setns}, -1, 0) >= 0);
report("keyctl", syscall($sys->{keyctl}, $KEYCTL_GET_KEYRING_ID,
    $KEY_SPEC_SESSION_KEYRING, 0) >= 0);
# io_uring_setup(1, NULL): EFAULT from a kernel that reads it
report("io_uring_setup", syscall($sys->{io_uring_setup}, 1, 0) >= 0);
