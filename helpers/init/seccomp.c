/* The seccomp deny-list (DESIGN.md §4): everything is allowed except the system calls that
 * reach kernel attack surface an agent's commands never need, or that would let them leave
 * or reshape the sandbox. A refused call fails with EPERM — programs see a permission error
 * and carry on — never with a silent kill.
 *
 * Shapes of rule, and why:
 *  - outright denials (ptrace, keyctl, bpf, the mount API old and new, ...);
 *  - clone and unshare refused only when a namespace flag is set, tested one flag at a time
 *    with a masked compare, so fork, threads and unshare(CLONE_FILES) keep working;
 *  - clone3 answered ENOSYS: its flags live behind a pointer seccomp cannot read, and ENOSYS
 *    makes libc fall back to clone, whose flags we can check;
 *  - ioctl TIOCSTI/TIOCLINUX and socket(AF_VSOCK) compared on the low 32 bits only: the
 *    kernel truncates those arguments to int, so a compare of all 64 bits is bypassed by
 *    setting high bits (CVE-2019-10063).
 *
 * The filter covers the native architecture and the compat ones the kernel can run beside it
 * (i386 and x32 on x86_64, arm on arm64, s390 on s390x): otherwise an `int $0x80` would reach
 * the same kernel code through the 32-bit table unfiltered. Any other architecture kills. */
#include <errno.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/seccomp.h>
#include <linux/filter.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "init/sandbox.h"
#include "init/errmsg.h"

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

/* clone's flags are its first argument everywhere but s390, which swaps flags and stack. */
#if defined(__s390__) || defined(__s390x__)
#define CLONE_FLAGS_ARG 1
#else
#define CLONE_FLAGS_ARG 0
#endif

#define LOW32 0xFFFFFFFFull

struct deny_rule {
	const char *name;       /* what tests and the audit log call it */
	const char *syscall;    /* as libseccomp names it */
	int answer;             /* errno it fails with; 0 means the filter's deny errno */
	bool masked;            /* only when (argument arg & mask) == value */
	unsigned arg;
	uint64_t mask, value;
};

#define DENY(sc) { sc, sc, 0, false, 0, 0, 0 }
#define DENY_BIT(nm, sc, argn, bit) { nm, sc, 0, true, argn, bit, bit }
#define DENY_LOW32(nm, sc, argn, v) { nm, sc, 0, true, argn, LOW32, v }

static const struct deny_rule deny_rules[] = {
	/* Reading or changing other processes. pidfd_getfd is ptrace for file descriptors. */
	DENY("ptrace"), DENY("process_vm_readv"), DENY("process_vm_writev"), DENY("pidfd_getfd"),
	/* Kernel keyrings are not namespaced; their bugs are reachable from anywhere. */
	DENY("keyctl"), DENY("add_key"), DENY("request_key"),
	/* Large kernel attack surfaces: eBPF, perf, userfaultfd (race widening), io_uring (a
	 * second syscall path that seccomp cannot see into). */
	DENY("bpf"), DENY("perf_event_open"), DENY("userfaultfd"),
	DENY("io_uring_setup"), DENY("io_uring_enter"), DENY("io_uring_register"),
	/* The "shocker" escape: open a host file by handle, past every mount. */
	DENY("open_by_handle_at"),
	/* The kernel itself and the machine. syslog: the host's kernel log is not ours. */
	DENY("kexec_load"), DENY("kexec_file_load"),
	DENY("init_module"), DENY("finit_module"), DENY("delete_module"),
	DENY("reboot"), DENY("swapon"), DENY("swapoff"), DENY("acct"), DENY("syslog"),
	/* Reshaping the filesystem view, old API and new (CVE-2021-41133 was the new one). */
	DENY("mount"), DENY("umount"), DENY("umount2"), DENY("pivot_root"), DENY("chroot"),
	DENY("fsopen"), DENY("fsconfig"), DENY("fsmount"), DENY("move_mount"),
	DENY("open_tree"), DENY("fspick"), DENY("mount_setattr"),
	/* New namespaces: entering any, creating any. A nested user namespace hands out the
	 * capabilities that reach most namespaced kernel bugs (CVE-2022-0185, -0492, ...). */
	DENY("setns"),
	DENY_BIT("clone-newuser", "clone", CLONE_FLAGS_ARG, CLONE_NEWUSER),
	DENY_BIT("clone-newns", "clone", CLONE_FLAGS_ARG, CLONE_NEWNS),
	DENY_BIT("clone-newpid", "clone", CLONE_FLAGS_ARG, CLONE_NEWPID),
	DENY_BIT("clone-newnet", "clone", CLONE_FLAGS_ARG, CLONE_NEWNET),
	DENY_BIT("clone-newipc", "clone", CLONE_FLAGS_ARG, CLONE_NEWIPC),
	DENY_BIT("clone-newuts", "clone", CLONE_FLAGS_ARG, CLONE_NEWUTS),
	DENY_BIT("clone-newcgroup", "clone", CLONE_FLAGS_ARG, CLONE_NEWCGROUP),
	/* (clone has no CLONE_NEWTIME: that bit is part of its exit signal.) */
	DENY_BIT("unshare-newuser", "unshare", 0, CLONE_NEWUSER),
	DENY_BIT("unshare-newns", "unshare", 0, CLONE_NEWNS),
	DENY_BIT("unshare-newpid", "unshare", 0, CLONE_NEWPID),
	DENY_BIT("unshare-newnet", "unshare", 0, CLONE_NEWNET),
	DENY_BIT("unshare-newipc", "unshare", 0, CLONE_NEWIPC),
	DENY_BIT("unshare-newuts", "unshare", 0, CLONE_NEWUTS),
	DENY_BIT("unshare-newcgroup", "unshare", 0, CLONE_NEWCGROUP),
	DENY_BIT("unshare-newtime", "unshare", 0, CLONE_NEWTIME),
	{ "clone3", "clone3", ENOSYS, false, 0, 0, 0 },
	/* Typing into the terminal (CVE-2017-5226) and the console's paste buffer. */
	DENY_LOW32("tiocsti", "ioctl", 1, TIOCSTI),
	DENY_LOW32("tioclinux", "ioctl", 1, TIOCLINUX),
	/* vsock reaches the hypervisor host (the WSL2 interop escape), whatever the network
	 * mode. On i386 libseccomp can only refuse socketcall(SYS_SOCKET) as a whole. */
	DENY_LOW32("vsock", "socket", 0, AF_VSOCK),
};

#define N_RULES (sizeof deny_rules / sizeof deny_rules[0])

struct compat_arches {
	uint32_t native;
	uint32_t compat[2];     /* 0 = none */
};

static const struct compat_arches compat_table[] = {
	{ SCMP_ARCH_X86_64, { SCMP_ARCH_X86, SCMP_ARCH_X32 } },
	{ SCMP_ARCH_X32, { SCMP_ARCH_X86_64, SCMP_ARCH_X86 } },
	{ SCMP_ARCH_AARCH64, { SCMP_ARCH_ARM, 0 } },
	{ SCMP_ARCH_S390X, { SCMP_ARCH_S390, 0 } },
};

const char *sbx_seccomp_rule_name(size_t i, int *errno_value)
{
	if (i >= N_RULES)
		return NULL;
	if (errno_value)
		*errno_value = deny_rules[i].answer ? deny_rules[i].answer : EPERM;
	return deny_rules[i].name;
}

/* A compat architecture libseccomp cannot add is left out of the filter; its system calls
 * then meet the bad-architecture action (kill), which is safe, so that is not an error. */
static void add_compat_arches(scmp_filter_ctx ctx)
{
	uint32_t native = seccomp_arch_native();

	for (size_t i = 0; i < sizeof compat_table / sizeof compat_table[0]; i++) {
		if (compat_table[i].native != native)
			continue;
		for (size_t j = 0; j < 2 && compat_table[i].compat[j]; j++)
			(void)seccomp_arch_add(ctx, compat_table[i].compat[j]);
	}
}

static int set_attributes(scmp_filter_ctx ctx, char *err, size_t errlen)
{
	/* KILL_PROCESS needs API level 3 (kernel 4.14); before that only the thread can die. */
	uint32_t badarch = seccomp_api_get() >= 3 ? SCMP_ACT_KILL_PROCESS : SCMP_ACT_KILL;
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, badarch);

	if (rc < 0)
		return sbx_init_fail(err, errlen, rc, "seccomp: bad-arch action: %s", strerror(-rc));
	return 0;
}

/* System calls this libseccomp does not know are skipped: a name it cannot resolve for any
 * architecture is one the build's kernel headers predate, so there is no number to filter. */
static int add_rule(scmp_filter_ctx ctx, const struct deny_rule *r, int deny_errno, char *err,
                    size_t errlen)
{
	int nr = seccomp_syscall_resolve_name(r->syscall);
	uint32_t action = SCMP_ACT_ERRNO((uint16_t)(r->answer ? r->answer : deny_errno));
	struct scmp_arg_cmp cmp = {
		.arg = r->arg, .op = SCMP_CMP_MASKED_EQ, .datum_a = r->mask, .datum_b = r->value,
	};
	int rc;

	if (nr == __NR_SCMP_ERROR)
		return 0;
	rc = seccomp_rule_add_array(ctx, action, nr, r->masked ? 1 : 0, r->masked ? &cmp : NULL);
	if (rc < 0)
		return sbx_init_fail(err, errlen, rc, "seccomp rule %s: %s", r->name, strerror(-rc));
	return 0;
}

static void release_filter(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}

/* The whole deny-list in a libseccomp context, denied calls answering deny_errno. */
static int build_filter(int deny_errno, scmp_filter_ctx *out, char *err, size_t errlen)
{
	int rc;

	if (deny_errno <= 0 || deny_errno > 4095)
		return sbx_init_fail(err, errlen, -EINVAL, "seccomp: bad deny errno %d", deny_errno);
	*out = seccomp_init(SCMP_ACT_ALLOW);
	if (!*out)
		return sbx_init_fail(err, errlen, -ENOMEM, "seccomp_init failed");
	if ((rc = set_attributes(*out, err, errlen)) < 0)
		return rc;
	add_compat_arches(*out);
	for (size_t i = 0; i < N_RULES; i++)
		if ((rc = add_rule(*out, &deny_rules[i], deny_errno, err, errlen)) < 0)
			return rc;
	return 0;
}

int sbx_seccomp_apply_errno(int deny_errno, char *err, size_t errlen)
{
	__attribute__((cleanup(release_filter))) scmp_filter_ctx ctx = NULL;
	int rc = build_filter(deny_errno, &ctx, err, errlen);

	if (rc < 0)
		return rc;
	rc = seccomp_load(ctx);
	if (rc < 0)
		return sbx_init_fail(err, errlen, rc, "seccomp_load: %s", strerror(-rc));
	return 0;
}

int sbx_seccomp_export(int fd, char *err, size_t errlen)
{
	__attribute__((cleanup(release_filter))) scmp_filter_ctx ctx = NULL;
	int rc = build_filter(EPERM, &ctx, err, errlen);

	if (rc < 0)
		return rc;
	rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0)
		return sbx_init_fail(err, errlen, rc, "seccomp_export_bpf: %s", strerror(-rc));
	return 0;
}

int sbx_seccomp_load_program(int fd, char *err, size_t errlen)
{
	struct sock_filter insns[BPF_MAXINSNS];
	struct sock_fprog prog = { .filter = insns };
	ssize_t n = pread(fd, insns, sizeof insns, 0);

	if (n <= 0 || n % (ssize_t)sizeof insns[0] != 0)
		return sbx_init_fail(err, errlen, n < 0 ? -errno : -EINVAL,
		                     "seccomp: unreadable program on fd %d", fd);
	prog.len = (unsigned short)(n / (ssize_t)sizeof insns[0]);
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return sbx_init_fail(err, errlen, -errno, "seccomp: load the program: %s",
		                     strerror(errno));
	return 0;
}

int sbx_seccomp_apply(char *err, size_t errlen)
{
	return sbx_seccomp_apply_errno(EPERM, err, errlen);
}
