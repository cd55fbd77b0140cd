/* sbx-probe: run by the tests inside a sandbox, it tries what the sandbox should refuse and
 * prints what happened, one line per probe:
 *
 *   sbx-probe [caps] [nnp] [securebits] [ids] [subreaper] [connect PATH]
 *             [landlock-OP PATH...] [setuid-status PATH] [baseline] [setid DIR]
 *             [syscall NAME...]
 *
 *   caps                 "CapInh <hex>", "CapPrm ...", "CapEff", "CapBnd", "CapAmb"
 *   nnp                  "nnp <PR_GET_NO_NEW_PRIVS>"
 *   securebits           "securebits 0x<PR_GET_SECUREBITS>"
 *   ids                  "ids <real uid> <effective uid>" (a setuid copy shows what it got)
 *   subreaper            "subreaper <OK|errno name>": PR_SET_CHILD_SUBREAPER for this process
 *                        (gVisor before release-20230717 grants it to PID 1 only)
 *   connect PATH         "connect PATH <errno name|OK closed|OK answered|OK silent>":
 *                        connect(2) to the Unix socket PATH (SOCK_SEQPACKET, or SOCK_STREAM
 *                        where the socket is of that type), then what the listener does
 *                        within 3 s: closes the connection, sends something, or nothing
 *
 *   sbx-probe pgroup-exec PROG [ARG...]
 *                        not a probe: execs PROG in a process group of its own, as a
 *                        job-control shell starts a background job (exit 127 if it cannot)
 *   landlock-OP PATH     "landlock-OP PATH <OK|errno name>", OP one of write (create a new
 *                        file), append, truncate, read, mkdir, mkfifo, symlink, unlink;
 *                        landlock-rename FROM TO
 *   setuid-status PATH   runs PATH (a setuid-root program) stopped at its first write to
 *                        the terminal, and prints "setuid-state", "setuid-Uid" and
 *                        "setuid-CapEff" of that process from /proc
 *   baseline             the walk of the seccomp baseline's table, one line per call
 *                        (baseline.c)
 *   setid DIR            "setid-<way> <OK|errno name>" for each way to give a new file in DIR
 *                        a set-user-ID or set-group-ID bit (setid.c)
 *   syscall NAME...      "NAME <OK|errno name|absent|unsupported|signal-NAME>" for every
 *                        remaining argument: the probes below, and baseline.c's argument
 *                        probes (personality-*, family-N, netlink-P, mknod-*, ...)
 *
 * The system calls are made raw with deliberately bad arguments (bubblewrap's try-syscall
 * trick): when the sandbox lets a call through, the kernel rejects the arguments (EFAULT,
 * EINVAL, EBADF, ESRCH...) and nothing happens; when the sandbox refuses it, the errno is the
 * sandbox's. Calls that could do something if the kernel did not reject them (clone, the
 * 32-bit entry points) run in a child process. "absent": this architecture has no such call;
 * "unsupported": the kernel cannot run it (no 32-bit emulation).
 *
 * Exits 0, or 2 on a usage error (an unknown probe name among them). */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "probe.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

#define SOCK_TYPE_INVALID 11     /* SOCK_MAX: rejected before any module is loaded */
#define HIGH_BITS 0x100000000UL  /* the CVE-2019-10063 bypass: the kernel drops them */
#define ALL_FLAGS (~0UL)

static int usage_errors;

/* 0 when the raw call returned >= 0, else its errno. */
static int result_of(long ret)
{
	return ret >= 0 ? PR_OK : errno;
}

int probe_result_of(long ret)
{
	return result_of(ret);
}

const char *probe_outcome_name(int outcome)
{
	static char buf[64];
	const char *n;

	if (outcome == PR_OK)
		return "OK";
	if (outcome == PR_ABSENT)
		return "absent";
	if (outcome == PR_UNSUPPORTED)
		return "unsupported";
	if (outcome <= PR_SIGNAL_BASE) {
		n = sigabbrev_np(PR_SIGNAL_BASE - outcome);
		snprintf(buf, sizeof buf, "signal-SIG%s", n ? n : "?");
		return buf;
	}
	if ((n = strerrorname_np(outcome)))
		return n;
	snprintf(buf, sizeof buf, "E%d", outcome);
	return buf;
}

void probe_print(const char *name, int outcome)
{
	printf("%s %s\n", name, probe_outcome_name(outcome));
	fflush(stdout);
}

/* A call the kernel unexpectedly honours (a clone that succeeds, an `int $0x80` the kernel
 * cannot take) only affects the child. */
int probe_in_child(int (*fn)(void))
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return errno;
	if (pid == 0) {
		int r = fn();

		_exit(r >= 0 && r < 200 ? r : r == PR_UNSUPPORTED ? 201 : 200);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return errno;
	if (WIFSIGNALED(status))
		return PR_SIGNAL_BASE - WTERMSIG(status);
	if (WEXITSTATUS(status) == 201)
		return PR_UNSUPPORTED;
	return WEXITSTATUS(status);
}

/* A pty that is our controlling terminal: TIOCSTI on any other tty fails with the kernel's
 * own EPERM for an unprivileged caller, which would hide whether the filter answered. */
static int ctty_fd = -2;

static int controlling_pty(void)
{
	int master, slave;

	if (ctty_fd != -2)
		return ctty_fd;
	ctty_fd = -1;
	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0 || !ptsname(master))
		return -1;
	if (getsid(0) != getpid())
		(void)setsid();
	slave = open(ptsname(master), O_RDWR | O_CLOEXEC);
	if (slave >= 0)
		(void)ioctl(slave, TIOCSCTTY, 0);
	ctty_fd = slave;
	return slave;
}

/* ---- probes that must be refused ------------------------------------------------------- */

static int p_ptrace(void)
{
	return result_of(syscall(SYS_ptrace, PTRACE_PEEKDATA, -1, NULL, NULL));
}
static int p_process_vm_readv(void)
{
	return result_of(syscall(SYS_process_vm_readv, getpid(), NULL, 0, NULL, 0, ALL_FLAGS));
}
static int p_process_vm_writev(void)
{
	return result_of(syscall(SYS_process_vm_writev, getpid(), NULL, 0, NULL, 0, ALL_FLAGS));
}
static int p_pidfd_getfd(void) { return result_of(syscall(SYS_pidfd_getfd, -1, -1, ~0U)); }
static int p_keyctl(void) { return result_of(syscall(SYS_keyctl, -1L, 0L, 0L, 0L, 0L)); }
static int p_add_key(void) { return result_of(syscall(SYS_add_key, NULL, NULL, NULL, 0, 0)); }
static int p_request_key(void) { return result_of(syscall(SYS_request_key, NULL, NULL, NULL, 0)); }
static int p_bpf(void) { return result_of(syscall(SYS_bpf, -1, NULL, 0)); }
static int p_perf_event_open(void)
{
	return result_of(syscall(SYS_perf_event_open, NULL, 0, -1, -1, ALL_FLAGS));
}
/* UFFD_USER_MODE_ONLY passes the privilege gate; the 0x2 bit is then invalid. */
static int p_userfaultfd(void) { return result_of(syscall(SYS_userfaultfd, 0x1 | 0x2)); }
static int p_io_uring_setup(void) { return result_of(syscall(SYS_io_uring_setup, 0, NULL)); }
static int p_io_uring_enter(void)
{
	return result_of(syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0));
}
static int p_io_uring_register(void)
{
	return result_of(syscall(SYS_io_uring_register, -1, 0, NULL, 0));
}
static int p_open_by_handle_at(void)
{
	return result_of(syscall(SYS_open_by_handle_at, -1, NULL, 0));
}
static int p_kexec_load(void) { return result_of(syscall(SYS_kexec_load, 0, 0, NULL, ALL_FLAGS)); }
static int p_kexec_file_load(void)
{
	return result_of(syscall(SYS_kexec_file_load, -1, -1, 0, NULL, ALL_FLAGS));
}
static int p_init_module(void) { return result_of(syscall(SYS_init_module, NULL, 0, NULL)); }
static int p_finit_module(void) { return result_of(syscall(SYS_finit_module, -1, NULL, ~0U)); }
static int p_delete_module(void) { return result_of(syscall(SYS_delete_module, NULL, 0)); }
static int p_reboot(void) { return result_of(syscall(SYS_reboot, 0, 0, 0, NULL)); } /* bad magic */
static int p_swapon(void) { return result_of(syscall(SYS_swapon, NULL, ~0U)); }
static int p_swapoff(void) { return result_of(syscall(SYS_swapoff, NULL)); }
/* Not NULL: acct(NULL) would switch host process accounting off. */
static int p_acct(void) { return result_of(syscall(SYS_acct, (const char *)1)); }
static int p_syslog(void) { return result_of(syscall(SYS_syslog, -1, NULL, 0)); }
static int p_mount(void) { return result_of(syscall(SYS_mount, NULL, NULL, NULL, 0UL, NULL)); }
static int p_umount(void)
{
#ifdef SYS_umount
	return result_of(syscall(SYS_umount, NULL));
#else
	return PR_ABSENT;
#endif
}
static int p_umount2(void) { return result_of(syscall(SYS_umount2, NULL, ~0U)); }
static int p_pivot_root(void) { return result_of(syscall(SYS_pivot_root, NULL, NULL)); }
static int p_chroot(void) { return result_of(syscall(SYS_chroot, NULL)); }
static int p_fsopen(void) { return result_of(syscall(SYS_fsopen, NULL, ~0U)); }
static int p_fsconfig(void) { return result_of(syscall(SYS_fsconfig, -1, ~0U, NULL, NULL, 0)); }
static int p_fsmount(void) { return result_of(syscall(SYS_fsmount, -1, ~0U, 0)); }
static int p_move_mount(void)
{
	return result_of(syscall(SYS_move_mount, -1, NULL, -1, NULL, ~0U));
}
static int p_open_tree(void) { return result_of(syscall(SYS_open_tree, -1, NULL, ~0U)); }
static int p_fspick(void) { return result_of(syscall(SYS_fspick, -1, NULL, ~0U)); }
static int p_mount_setattr(void)
{
	return result_of(syscall(SYS_mount_setattr, -1, NULL, ~0U, NULL, 0));
}
static int p_setns(void) { return result_of(syscall(SYS_setns, -1, 0)); }

/* CLONE_THREAD without CLONE_SIGHAND is rejected before anything is created. */
static int clone_with(unsigned long ns_flag)
{
	return result_of(syscall(SYS_clone, ns_flag | CLONE_THREAD, NULL, NULL, NULL, NULL));
}
static int c_clone_newuser(void) { return clone_with(CLONE_NEWUSER); }
static int c_clone_newns(void) { return clone_with(CLONE_NEWNS); }
static int c_clone_newpid(void) { return clone_with(CLONE_NEWPID); }
static int c_clone_newnet(void) { return clone_with(CLONE_NEWNET); }
static int c_clone_newipc(void) { return clone_with(CLONE_NEWIPC); }
static int c_clone_newuts(void) { return clone_with(CLONE_NEWUTS); }
static int c_clone_newcgroup(void) { return clone_with(CLONE_NEWCGROUP); }
static int p_clone_newuser(void) { return probe_in_child(c_clone_newuser); }
static int p_clone_newns(void) { return probe_in_child(c_clone_newns); }
static int p_clone_newpid(void) { return probe_in_child(c_clone_newpid); }
static int p_clone_newnet(void) { return probe_in_child(c_clone_newnet); }
static int p_clone_newipc(void) { return probe_in_child(c_clone_newipc); }
static int p_clone_newuts(void) { return probe_in_child(c_clone_newuts); }
static int p_clone_newcgroup(void) { return probe_in_child(c_clone_newcgroup); }

/* 0x1 is no unshare flag: the kernel refuses the whole call. */
static int unshare_with(unsigned long ns_flag)
{
	return result_of(syscall(SYS_unshare, ns_flag | 0x1));
}
static int p_unshare_newuser(void) { return unshare_with(CLONE_NEWUSER); }
static int p_unshare_newns(void) { return unshare_with(CLONE_NEWNS); }
static int p_unshare_newpid(void) { return unshare_with(CLONE_NEWPID); }
static int p_unshare_newnet(void) { return unshare_with(CLONE_NEWNET); }
static int p_unshare_newipc(void) { return unshare_with(CLONE_NEWIPC); }
static int p_unshare_newuts(void) { return unshare_with(CLONE_NEWUTS); }
static int p_unshare_newcgroup(void) { return unshare_with(CLONE_NEWCGROUP); }
static int p_unshare_newtime(void) { return unshare_with(CLONE_NEWTIME); }

static int c_clone3(void) { return result_of(syscall(SYS_clone3, NULL, 0)); }
static int p_clone3(void) { return probe_in_child(c_clone3); }

static int tty_ioctl(unsigned long request)
{
	int fd = controlling_pty();

	if (fd < 0)
		return PR_UNSUPPORTED;
	return result_of(syscall(SYS_ioctl, fd, request, NULL));
}
static int p_tiocsti(void) { return tty_ioctl(TIOCSTI); }
static int p_tiocsti_high(void) { return tty_ioctl(TIOCSTI | HIGH_BITS); }
static int p_tioclinux(void) { return tty_ioctl(TIOCLINUX); }
static int p_tioclinux_high(void) { return tty_ioctl(TIOCLINUX | HIGH_BITS); }

static int p_vsock(void) { return result_of(syscall(SYS_socket, AF_VSOCK, SOCK_TYPE_INVALID, 0)); }
static int p_vsock_high(void)
{
	return result_of(syscall(SYS_socket, AF_VSOCK | HIGH_BITS, SOCK_TYPE_INVALID, 0));
}

/* ---- the same through the other system call tables ------------------------------------ */

#if defined(__x86_64__)
/* i386 system call numbers (arch/x86/entry/syscalls/syscall_32.tbl). */
#define IA32_GETPID 20
#define IA32_MOUNT 21
#define IA32_UMOUNT 22
#define IA32_PTRACE 26
#define IA32_IOCTL 54
#define IA32_SOCKETCALL 102
#define IA32_CLONE 120
#define IA32_UNSHARE 310
#define IA32_SOCKET 359
#define IA32_SYS_SOCKET 1        /* socketcall's call number for socket() */
#define X32_BIT 0x40000000L
#define X32_GETPID 39
#define X32_PTRACE 521

/* `int $0x80` from 64-bit code enters the kernel's i386 table, with the i386 AUDIT_ARCH. */
static long ia32_call(long nr, long a, long b, long c, long d, long e)
{
	long ret;

	__asm__ volatile("int $0x80"
	                 : "=a"(ret)
	                 : "a"(nr), "b"(a), "c"(b), "d"(c), "S"(d), "D"(e)
	                 : "memory", "cc", "r8", "r9", "r10", "r11");
	return (int)ret;
}

/* Without ia32 emulation the kernel answers `int $0x80` with SIGSEGV. */
static int ia32_outcome(long ret)
{
	return ret >= 0 ? PR_OK : (int)-ret;
}

static int c_ia32_getpid(void) { return ia32_outcome(ia32_call(IA32_GETPID, 0, 0, 0, 0, 0)); }
static int c_ia32_ptrace(void)
{
	return ia32_outcome(ia32_call(IA32_PTRACE, PTRACE_PEEKDATA, -1, 0, 0, 0));
}
static int c_ia32_mount(void) { return ia32_outcome(ia32_call(IA32_MOUNT, 0, 0, 0, 0, 0)); }
static int c_ia32_umount(void) { return ia32_outcome(ia32_call(IA32_UMOUNT, 0, 0, 0, 0, 0)); }
static int c_ia32_unshare_newuser(void)
{
	return ia32_outcome(ia32_call(IA32_UNSHARE, CLONE_NEWUSER | 0x1, 0, 0, 0, 0));
}
static int c_ia32_clone_newuser(void)
{
	return ia32_outcome(ia32_call(IA32_CLONE, CLONE_NEWUSER | CLONE_THREAD, 0, 0, 0, 0));
}
static int c_ia32_tiocsti(void)
{
	int fd = controlling_pty();

	if (fd < 0)
		return PR_UNSUPPORTED;
	return ia32_outcome(ia32_call(IA32_IOCTL, fd, TIOCSTI, 0, 0, 0));
}
static int c_ia32_vsock(void)
{
	return ia32_outcome(ia32_call(IA32_SOCKET, AF_VSOCK, SOCK_TYPE_INVALID, 0, 0, 0));
}
/* socketcall takes its arguments through a pointer, which must fit in 32 bits. */
static int c_ia32_socketcall_vsock(void)
{
	uint32_t *args = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
	                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);

	if (args == MAP_FAILED)
		return PR_UNSUPPORTED;
	args[0] = AF_VSOCK;
	args[1] = SOCK_TYPE_INVALID;
	args[2] = 0;
	return ia32_outcome(ia32_call(IA32_SOCKETCALL, IA32_SYS_SOCKET, (long)(uintptr_t)args,
	                              0, 0, 0));
}
static int c_x32_getpid(void) { return result_of(syscall(X32_BIT | X32_GETPID)); }
static int c_x32_ptrace(void)
{
	return result_of(syscall(X32_BIT | X32_PTRACE, PTRACE_PEEKDATA, -1, 0, 0));
}
#define IA32_PROBE(fn) static int p_##fn(void) { return probe_in_child(c_##fn); }
#else
#define IA32_PROBE(fn) static int p_##fn(void) { return PR_ABSENT; }
#endif
IA32_PROBE(ia32_getpid)
IA32_PROBE(ia32_ptrace)
IA32_PROBE(ia32_mount)
IA32_PROBE(ia32_umount)
IA32_PROBE(ia32_unshare_newuser)
IA32_PROBE(ia32_clone_newuser)
IA32_PROBE(ia32_tiocsti)
IA32_PROBE(ia32_vsock)
IA32_PROBE(ia32_socketcall_vsock)
IA32_PROBE(x32_getpid)
IA32_PROBE(x32_ptrace)

/* ---- probes that must keep working ------------------------------------------------------ */

static int c_exit_zero(void) { return PR_OK; }
static int p_fork(void) { return probe_in_child(c_exit_zero); }

/* A plain clone, as fork and posix_spawn make it. */
static int p_clone(void)
{
	int status;
	long pid = syscall(SYS_clone, (unsigned long)SIGCHLD, NULL, NULL, NULL, NULL);

	if (pid < 0)
		return errno;
	if (pid == 0)
		_exit(0);
	if (waitpid((pid_t)pid, &status, 0) < 0)
		return errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? PR_OK : ECHILD;
}
static int p_unshare_files(void) { return result_of(syscall(SYS_unshare, CLONE_FILES)); }
static int p_getpid(void) { return result_of(syscall(SYS_getpid)); }

static int socket_of(int family)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return errno;
	close(fd);
	return PR_OK;
}
static int p_socket_inet(void) { return socket_of(AF_INET); }
static int p_socket_unix(void) { return socket_of(AF_UNIX); }

static int p_ioctl_tiocgwinsz(void)
{
	struct winsize ws;
	int fd = controlling_pty();

	if (fd < 0)
		return PR_UNSUPPORTED;
	return result_of(ioctl(fd, TIOCGWINSZ, &ws));
}

/* FIONREAD is TIOCINQ, 0x541B: next to TIOCLINUX, as TIOCGWINSZ is next to TIOCSTI. */
static int p_ioctl_fionread(void)
{
	int n, fd = controlling_pty();

	if (fd < 0)
		return PR_UNSUPPORTED;
	return result_of(ioctl(fd, FIONREAD, &n));
}

struct syscall_probe {
	const char *name;
	int (*fn)(void);
};

static const struct syscall_probe syscall_probes[] = {
	{ "ptrace", p_ptrace }, { "process_vm_readv", p_process_vm_readv },
	{ "process_vm_writev", p_process_vm_writev }, { "pidfd_getfd", p_pidfd_getfd },
	{ "keyctl", p_keyctl }, { "add_key", p_add_key }, { "request_key", p_request_key },
	{ "bpf", p_bpf }, { "perf_event_open", p_perf_event_open },
	{ "userfaultfd", p_userfaultfd }, { "io_uring_setup", p_io_uring_setup },
	{ "io_uring_enter", p_io_uring_enter }, { "io_uring_register", p_io_uring_register },
	{ "open_by_handle_at", p_open_by_handle_at }, { "kexec_load", p_kexec_load },
	{ "kexec_file_load", p_kexec_file_load }, { "init_module", p_init_module },
	{ "finit_module", p_finit_module }, { "delete_module", p_delete_module },
	{ "reboot", p_reboot }, { "swapon", p_swapon }, { "swapoff", p_swapoff },
	{ "acct", p_acct }, { "syslog", p_syslog }, { "mount", p_mount }, { "umount", p_umount },
	{ "umount2", p_umount2 }, { "pivot_root", p_pivot_root }, { "chroot", p_chroot },
	{ "fsopen", p_fsopen }, { "fsconfig", p_fsconfig }, { "fsmount", p_fsmount },
	{ "move_mount", p_move_mount }, { "open_tree", p_open_tree }, { "fspick", p_fspick },
	{ "mount_setattr", p_mount_setattr }, { "setns", p_setns },
	{ "clone-newuser", p_clone_newuser }, { "clone-newns", p_clone_newns },
	{ "clone-newpid", p_clone_newpid }, { "clone-newnet", p_clone_newnet },
	{ "clone-newipc", p_clone_newipc }, { "clone-newuts", p_clone_newuts },
	{ "clone-newcgroup", p_clone_newcgroup },
	{ "unshare-newuser", p_unshare_newuser }, { "unshare-newns", p_unshare_newns },
	{ "unshare-newpid", p_unshare_newpid }, { "unshare-newnet", p_unshare_newnet },
	{ "unshare-newipc", p_unshare_newipc }, { "unshare-newuts", p_unshare_newuts },
	{ "unshare-newcgroup", p_unshare_newcgroup }, { "unshare-newtime", p_unshare_newtime },
	{ "clone3", p_clone3 },
	{ "tiocsti", p_tiocsti }, { "tiocsti-high", p_tiocsti_high },
	{ "tioclinux", p_tioclinux }, { "tioclinux-high", p_tioclinux_high },
	{ "vsock", p_vsock }, { "vsock-high", p_vsock_high },
	{ "ia32-getpid", p_ia32_getpid }, { "ia32-ptrace", p_ia32_ptrace },
	{ "ia32-mount", p_ia32_mount }, { "ia32-umount", p_ia32_umount },
	{ "ia32-unshare-newuser", p_ia32_unshare_newuser },
	{ "ia32-clone-newuser", p_ia32_clone_newuser }, { "ia32-tiocsti", p_ia32_tiocsti },
	{ "ia32-vsock", p_ia32_vsock }, { "ia32-socketcall-vsock", p_ia32_socketcall_vsock },
	{ "x32-getpid", p_x32_getpid }, { "x32-ptrace", p_x32_ptrace },
	{ "fork", p_fork }, { "clone", p_clone }, { "unshare-files", p_unshare_files },
	{ "getpid", p_getpid }, { "socket-inet", p_socket_inet }, { "socket-unix", p_socket_unix },
	{ "ioctl-tiocgwinsz", p_ioctl_tiocgwinsz }, { "ioctl-fionread", p_ioctl_fionread },
};

static void probe_syscall(const char *name)
{
	int (*arg_probe)(void);

	for (size_t i = 0; i < sizeof syscall_probes / sizeof syscall_probes[0]; i++) {
		if (strcmp(syscall_probes[i].name, name) == 0) {
			errno = 0;
			probe_print(name, syscall_probes[i].fn());
			return;
		}
	}
	if ((arg_probe = probe_arg_probe(name))) {
		probe_print(name, arg_probe());
		return;
	}
	printf("%s unknown\n", name);
	usage_errors++;
}

/* ---- process state ---------------------------------------------------------------------- */

static void probe_caps(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];

	if (!f) {
		printf("caps %s\n", strerrorname_np(errno));
		return;
	}
	while (fgets(line, sizeof line, f)) {
		char key[16], value[64];

		if (strncmp(line, "Cap", 3) == 0 && sscanf(line, "%15[^:]:%63s", key, value) == 2)
			printf("%s %s\n", key, value);
	}
	fclose(f);
}

/* The program is started in a background process group of our terminal with TOSTOP set:
 * its first write to the terminal stops it (SIGTTOU), however soon it would have exited, and
 * its credentials can be read while it is stopped. */
static void print_status_of(pid_t pid)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re"))) {
		printf("setuid-state %s\n", strerrorname_np(errno));
		return;
	}
	while (fgets(line, sizeof line, f)) {
		char key[16], value[200];

		if ((!strncmp(line, "State:", 6) || !strncmp(line, "Uid:", 4) ||
		     !strncmp(line, "CapEff:", 7)) &&
		    sscanf(line, "%15[^:]:%*[ \t]%199[^\n]", key, value) == 2) {
			for (char *t = value; *t; t++)
				if (*t == '\t')
					*t = ' ';
			printf("setuid-%s %s\n", strcmp(key, "State") ? key : "state", value);
		}
	}
	fclose(f);
}

static void probe_setuid_status(const char *program)
{
	int status, fd = controlling_pty();
	struct termios t;
	pid_t pid;

	if (fd < 0 || tcgetattr(fd, &t) < 0) {
		printf("setuid-state unsupported\n");
		return;
	}
	t.c_lflag |= TOSTOP;
	tcsetattr(fd, TCSANOW, &t);
	fflush(stdout);
	if ((pid = fork()) < 0) {
		printf("setuid-state %s\n", strerrorname_np(errno));
		return;
	}
	if (pid == 0) {
		setpgid(0, 0);
		signal(SIGTTOU, SIG_DFL);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		execl(program, program, (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid);
	if (waitpid(pid, &status, WUNTRACED) == pid && WIFSTOPPED(status))
		print_status_of(pid);
	else
		printf("setuid-state ended 0x%x\n", (unsigned)status);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void probe_nnp(void)
{
	printf("nnp %d\n", prctl(PR_GET_NO_NEW_PRIVS, 0L, 0L, 0L, 0L));
}

static void probe_securebits(void)
{
	printf("securebits 0x%x\n", (unsigned)prctl(PR_GET_SECUREBITS, 0L, 0L, 0L, 0L));
}

static void probe_ids(void)
{
	printf("ids %u %u\n", (unsigned)getuid(), (unsigned)geteuid());
}

static void probe_subreaper(void)
{
	probe_print("subreaper", result_of(prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L)));
}

/* 0 and the connected socket in *fd, or an errno value. */
static int connect_unix(const char *path, int type, int *fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof sa.sun_path)
		return ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if ((*fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0)) < 0)
		return errno;
	if (connect(*fd, (struct sockaddr *)&sa, sizeof sa) == 0)
		return 0;
	close(*fd);
	return errno;
}

#define LISTENER_WAIT_MS 3000

static void probe_connect(const char *path)
{
	struct pollfd p = { .events = POLLIN };
	char name[4200], buf[512];
	int r = connect_unix(path, SOCK_SEQPACKET, &p.fd);

	if (r == EPROTOTYPE)
		r = connect_unix(path, SOCK_STREAM, &p.fd);
	snprintf(name, sizeof name, "connect %s", path);
	if (r) {
		probe_print(name, r);
		return;
	}
	if (poll(&p, 1, LISTENER_WAIT_MS) <= 0)
		printf("%s OK silent\n", name);
	else
		printf("%s OK %s\n", name, recv(p.fd, buf, sizeof buf, 0) > 0 ? "answered" : "closed");
	close(p.fd);
}

/* ---- Landlock: file system writes ------------------------------------------------------- */

static int fs_write_new(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0)
		return errno;
	if (write(fd, "x", 1) != 1) {
		int e = errno;

		close(fd);
		return e;
	}
	close(fd);
	return PR_OK;
}

static int fs_append(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return errno;
	n = write(fd, "y", 1);
	close(fd);
	return n == 1 ? PR_OK : errno;
}

static int fs_read(const char *path)
{
	char buf[16];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return errno;
	n = read(fd, buf, sizeof buf);
	close(fd);
	return n >= 0 ? PR_OK : errno;
}

static int fs_truncate(const char *path) { return result_of(truncate(path, 0)); }
static int fs_mkdir(const char *path) { return result_of(mkdir(path, 0700)); }
static int fs_mkfifo(const char *path) { return result_of(mkfifo(path, 0600)); }
static int fs_symlink(const char *path) { return result_of(symlink("target", path)); }
static int fs_unlink(const char *path) { return result_of(unlink(path)); }

struct fs_probe {
	const char *name;
	int (*fn)(const char *path);
};

static const struct fs_probe fs_probes[] = {
	{ "landlock-write", fs_write_new }, { "landlock-append", fs_append },
	{ "landlock-read", fs_read }, { "landlock-truncate", fs_truncate },
	{ "landlock-mkdir", fs_mkdir }, { "landlock-mkfifo", fs_mkfifo },
	{ "landlock-symlink", fs_symlink }, { "landlock-unlink", fs_unlink },
};

static void print_fs_outcome(const char *name, const char *path, int outcome)
{
	char label[4096];

	snprintf(label, sizeof label, "%s %s", name, path);
	probe_print(label, outcome);
}

/* Returns how many arguments it used, or 0 when argv[0] is not a Landlock probe. */
static int probe_fs(char **argv, int argc)
{
	if (strcmp(argv[0], "landlock-rename") == 0) {
		char label[8192];

		if (argc < 3)
			return -1;
		snprintf(label, sizeof label, "%s %s %s", argv[0], argv[1], argv[2]);
		probe_print(label, result_of(rename(argv[1], argv[2])));
		return 3;
	}
	for (size_t i = 0; i < sizeof fs_probes / sizeof fs_probes[0]; i++) {
		if (strcmp(fs_probes[i].name, argv[0]) != 0)
			continue;
		if (argc < 2)
			return -1;
		print_fs_outcome(argv[0], argv[1], fs_probes[i].fn(argv[1]));
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int i = 1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 2 && strcmp(argv[1], "pgroup-exec") == 0) {
		if (setpgid(0, 0) == 0)
			execvp(argv[2], argv + 2);
		perror("sbx-probe: pgroup-exec");
		return 127;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: %s [caps] [nnp] [securebits] [ids] [subreaper] [connect PATH] "
		        "[landlock-OP PATH...] [setuid-status PATH] [baseline] [setid DIR] [syscall NAME...]\n",
		        argv[0]);
		return 2;
	}
	while (i < argc) {
		int used;

		if (strcmp(argv[i], "syscall") == 0) {
			for (i++; i < argc; i++)
				probe_syscall(argv[i]);
			break;
		}
		if (strcmp(argv[i], "caps") == 0) {
			probe_caps();
		} else if (strcmp(argv[i], "nnp") == 0) {
			probe_nnp();
		} else if (strcmp(argv[i], "securebits") == 0) {
			probe_securebits();
		} else if (strcmp(argv[i], "baseline") == 0) {
			probe_baseline();
		} else if (strcmp(argv[i], "setid") == 0 && i + 1 < argc) {
			probe_setid(argv[++i]);
		} else if (strcmp(argv[i], "setuid-status") == 0 && i + 1 < argc) {
			probe_setuid_status(argv[++i]);
		} else if (strcmp(argv[i], "ids") == 0) {
			probe_ids();
		} else if (strcmp(argv[i], "subreaper") == 0) {
			probe_subreaper();
		} else if (strcmp(argv[i], "connect") == 0 && i + 1 < argc) {
			probe_connect(argv[++i]);
		} else if ((used = probe_fs(argv + i, argc - i)) != 0) {
			if (used < 0) {
				fprintf(stderr, "%s: %s needs its path(s)\n", argv[0], argv[i]);
				return 2;
			}
			i += used;
			continue;
		} else {
			fprintf(stderr, "%s: unknown probe %s\n", argv[0], argv[i]);
			return 2;
		}
		i++;
	}
	return usage_errors ? 2 : 0;
}
