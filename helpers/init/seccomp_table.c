/* The seccomp baseline's table; seccomp_table.h says what each column means.
 *
 * Docker's columns come from moby's default seccomp profile, github.com/moby/profiles
 * seccomp/default.json at commit 3c28324314729dbade8287e868eef6338c42807a (tag seccomp/v0.2.3),
 * the profile moby/moby vendors at b985e2313a8676e18072b442911fc8f64f17d440 (until July 2025
 * the file was moby/moby's profiles/seccomp/default.json), and from Docker's default
 * capability set, moby's daemon/pkg/oci/caps/defaults.go at that commit. To follow a newer
 * profile: `helpers/init/seccomp-table.py default.json --commit SHA --write`, decide the rows it
 * marks "decide", and run test-unit-harden (it checks that every name libseccomp knows for
 * this architecture has a row and that we refuse whatever Docker refuses).
 *
 * Our column departs from Docker's where the row's comment starts with "ours". The rows
 * cover the names of every architecture the filter may be built for; a name this one does
 * not have natively is skipped (its number is -1). */
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "init/seccomp_table.h"

const char sbx_docker_profile_source[] =
	"github.com/moby/profiles seccomp/default.json at 3c28324314729dbade8287e868eef6338c42807a";

#define R(name, nr, docker, detail, ours) \
	{ name, nr, SBX_DOCKER_##docker, detail, SBX_OURS_##ours }

/* uretprobe and uprobe are x86-64's own, newer than libseccomp 2.5. */
#if defined(__x86_64__) && !defined(__ILP32__)
#define X86_64_NR_335 335
#define X86_64_NR_336 336
#else
#define X86_64_NR_335 0
#define X86_64_NR_336 0
#endif

const struct sbx_syscall_row sbx_syscall_table[] = {
/* ROWS BEGIN: one row per name, sorted; seccomp-table.py rewrites Docker's columns */
	R("_llseek", 0, ALLOW, NULL, ALLOW),
	R("_newselect", 0, ALLOW, NULL, ALLOW),
	R("_sysctl", 0, UNLISTED, NULL, REFUSE),
	R("accept", 0, ALLOW, NULL, ALLOW),
	R("accept4", 0, ALLOW, NULL, ALLOW),
	R("access", 0, ALLOW, NULL, ALLOW),
	R("acct", 0, CAPS, "CAP_SYS_PACCT", REFUSE),
	R("add_key", 0, UNLISTED, NULL, REFUSE),
	R("adjtimex", 0, ALLOW, NULL, REFUSE),	/* ours: the clock is the host's */
	R("afs_syscall", 0, UNLISTED, NULL, REFUSE),
	R("alarm", 0, ALLOW, NULL, ALLOW),
	R("arch_prctl", 0, ARCH, "amd64 x32", ALLOW),
	R("arm_fadvise64_64", 0, ARCH, "arm arm64", ALLOW),
	R("arm_sync_file_range", 0, ARCH, "arm arm64", ALLOW),
	R("bdflush", 0, UNLISTED, NULL, REFUSE),
	R("bind", 0, ALLOW, NULL, ALLOW),
	R("bpf", 0, CAPS, "CAP_BPF CAP_SYS_ADMIN", REFUSE),
	R("break", 0, UNLISTED, NULL, REFUSE),
	R("breakpoint", 0, ARCH, "arm arm64", ALLOW),
	R("brk", 0, ALLOW, NULL, ALLOW),
	R("cacheflush", 0, ARCH, "arm arm64", ALLOW),
	R("cachestat", 0, ALLOW, NULL, ALLOW),
	R("capget", 0, ALLOW, NULL, ALLOW),
	R("capset", 0, ALLOW, NULL, ALLOW),
	R("chdir", 0, ALLOW, NULL, ALLOW),
	R("chmod", 0, ALLOW, NULL, ALLOW),
	R("chown", 0, ALLOW, NULL, ALLOW),
	R("chown32", 0, ALLOW, NULL, ALLOW),
	R("chroot", 0, CAPS, "CAP_SYS_CHROOT", REFUSE),	/* ours: no root of its own inside */
	R("clock_adjtime", 0, ALLOW, NULL, REFUSE),	/* ours: the clock is the host's */
	R("clock_adjtime64", 0, ALLOW, NULL, REFUSE),	/* ours: the clock is the host's */
	R("clock_getres", 0, ALLOW, NULL, ALLOW),
	R("clock_getres_time64", 0, ALLOW, NULL, ALLOW),
	R("clock_gettime", 0, ALLOW, NULL, ALLOW),
	R("clock_gettime64", 0, ALLOW, NULL, ALLOW),
	R("clock_nanosleep", 0, ALLOW, NULL, ALLOW),
	R("clock_nanosleep_time64", 0, ALLOW, NULL, ALLOW),
	R("clock_settime", 0, CAPS, "CAP_SYS_TIME", REFUSE),
	R("clock_settime64", 0, CAPS, "CAP_SYS_TIME", REFUSE),
	R("clone", 0, ARGS, "CAP_SYS_ADMIN", ARGS),
	R("clone3", 0, ENOSYS, "CAP_SYS_ADMIN", ENOSYS),
	R("close", 0, ALLOW, NULL, ALLOW),
	R("close_range", 0, ALLOW, NULL, ALLOW),
	R("connect", 0, ALLOW, NULL, ALLOW),
	R("copy_file_range", 0, ALLOW, NULL, ALLOW),
	R("creat", 0, ALLOW, NULL, ALLOW),
	R("create_module", 0, UNLISTED, NULL, REFUSE),
	R("delete_module", 0, CAPS, "CAP_SYS_MODULE", REFUSE),
	R("dup", 0, ALLOW, NULL, ALLOW),
	R("dup2", 0, ALLOW, NULL, ALLOW),
	R("dup3", 0, ALLOW, NULL, ALLOW),
	R("epoll_create", 0, ALLOW, NULL, ALLOW),
	R("epoll_create1", 0, ALLOW, NULL, ALLOW),
	R("epoll_ctl", 0, ALLOW, NULL, ALLOW),
	R("epoll_ctl_old", 0, ALLOW, NULL, ALLOW),
	R("epoll_pwait", 0, ALLOW, NULL, ALLOW),
	R("epoll_pwait2", 0, ALLOW, NULL, ALLOW),
	R("epoll_wait", 0, ALLOW, NULL, ALLOW),
	R("epoll_wait_old", 0, ALLOW, NULL, ALLOW),
	R("eventfd", 0, ALLOW, NULL, ALLOW),
	R("eventfd2", 0, ALLOW, NULL, ALLOW),
	R("execve", 0, ALLOW, NULL, ALLOW),
	R("execveat", 0, ALLOW, NULL, ALLOW),
	R("exit", 0, ALLOW, NULL, ALLOW),
	R("exit_group", 0, ALLOW, NULL, ALLOW),
	R("faccessat", 0, ALLOW, NULL, ALLOW),
	R("faccessat2", 0, ALLOW, NULL, ALLOW),
	R("fadvise64", 0, ALLOW, NULL, ALLOW),
	R("fadvise64_64", 0, ALLOW, NULL, ALLOW),
	R("fallocate", 0, ALLOW, NULL, ALLOW),
	R("fanotify_init", 0, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("fanotify_mark", 0, ALLOW, NULL, ALLOW),
	R("fchdir", 0, ALLOW, NULL, ALLOW),
	R("fchmod", 0, ALLOW, NULL, ALLOW),
	R("fchmodat", 0, ALLOW, NULL, ALLOW),
	R("fchmodat2", 0, ALLOW, NULL, ALLOW),
	R("fchown", 0, ALLOW, NULL, ALLOW),
	R("fchown32", 0, ALLOW, NULL, ALLOW),
	R("fchownat", 0, ALLOW, NULL, ALLOW),
	R("fcntl", 0, ALLOW, NULL, ALLOW),
	R("fcntl64", 0, ALLOW, NULL, ALLOW),
	R("fdatasync", 0, ALLOW, NULL, ALLOW),
	R("fgetxattr", 0, ALLOW, NULL, ALLOW),
	R("file_getattr", 468, UNLISTED, NULL, REFUSE),
	R("file_setattr", 469, UNLISTED, NULL, REFUSE),
	R("finit_module", 0, CAPS, "CAP_SYS_MODULE", REFUSE),
	R("flistxattr", 0, ALLOW, NULL, ALLOW),
	R("flock", 0, ALLOW, NULL, ALLOW),
	R("fork", 0, ALLOW, NULL, ALLOW),
	R("fremovexattr", 0, ALLOW, NULL, ALLOW),
	R("fsconfig", 0, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("fsetxattr", 0, ALLOW, NULL, ALLOW),
	R("fsmount", 0, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("fsopen", 0, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("fspick", 0, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("fstat", 0, ALLOW, NULL, ALLOW),
	R("fstat64", 0, ALLOW, NULL, ALLOW),
	R("fstatat64", 0, ALLOW, NULL, ALLOW),
	R("fstatfs", 0, ALLOW, NULL, ALLOW),
	R("fstatfs64", 0, ALLOW, NULL, ALLOW),
	R("fsync", 0, ALLOW, NULL, ALLOW),
	R("ftime", 0, UNLISTED, NULL, REFUSE),
	R("ftruncate", 0, ALLOW, NULL, ALLOW),
	R("ftruncate64", 0, ALLOW, NULL, ALLOW),
	R("futex", 0, ALLOW, NULL, ALLOW),
	R("futex_requeue", 0, ALLOW, NULL, ALLOW),
	R("futex_time64", 0, ALLOW, NULL, ALLOW),
	R("futex_wait", 0, ALLOW, NULL, ALLOW),
	R("futex_waitv", 0, ALLOW, NULL, ALLOW),
	R("futex_wake", 0, ALLOW, NULL, ALLOW),
	R("futimesat", 0, ALLOW, NULL, ALLOW),
	R("get_kernel_syms", 0, UNLISTED, NULL, REFUSE),
	R("get_mempolicy", 0, CAPS, "CAP_SYS_NICE", REFUSE),
	R("get_robust_list", 0, ALLOW, NULL, ALLOW),
	R("get_thread_area", 0, ALLOW, NULL, ALLOW),
	R("getcpu", 0, ALLOW, NULL, ALLOW),
	R("getcwd", 0, ALLOW, NULL, ALLOW),
	R("getdents", 0, ALLOW, NULL, ALLOW),
	R("getdents64", 0, ALLOW, NULL, ALLOW),
	R("getegid", 0, ALLOW, NULL, ALLOW),
	R("getegid32", 0, ALLOW, NULL, ALLOW),
	R("geteuid", 0, ALLOW, NULL, ALLOW),
	R("geteuid32", 0, ALLOW, NULL, ALLOW),
	R("getgid", 0, ALLOW, NULL, ALLOW),
	R("getgid32", 0, ALLOW, NULL, ALLOW),
	R("getgroups", 0, ALLOW, NULL, ALLOW),
	R("getgroups32", 0, ALLOW, NULL, ALLOW),
	R("getitimer", 0, ALLOW, NULL, ALLOW),
	R("getpeername", 0, ALLOW, NULL, ALLOW),
	R("getpgid", 0, ALLOW, NULL, ALLOW),
	R("getpgrp", 0, ALLOW, NULL, ALLOW),
	R("getpid", 0, ALLOW, NULL, ALLOW),
	R("getpmsg", 0, UNLISTED, NULL, REFUSE),
	R("getppid", 0, ALLOW, NULL, ALLOW),
	R("getpriority", 0, ALLOW, NULL, ALLOW),
	R("getrandom", 0, ALLOW, NULL, ALLOW),
	R("getresgid", 0, ALLOW, NULL, ALLOW),
	R("getresgid32", 0, ALLOW, NULL, ALLOW),
	R("getresuid", 0, ALLOW, NULL, ALLOW),
	R("getresuid32", 0, ALLOW, NULL, ALLOW),
	R("getrlimit", 0, ALLOW, NULL, ALLOW),
	R("getrusage", 0, ALLOW, NULL, ALLOW),
	R("getsid", 0, ALLOW, NULL, ALLOW),
	R("getsockname", 0, ALLOW, NULL, ALLOW),
	R("getsockopt", 0, ALLOW, NULL, ALLOW),
	R("gettid", 0, ALLOW, NULL, ALLOW),
	R("gettimeofday", 0, ALLOW, NULL, ALLOW),
	R("getuid", 0, ALLOW, NULL, ALLOW),
	R("getuid32", 0, ALLOW, NULL, ALLOW),
	R("getxattr", 0, ALLOW, NULL, ALLOW),
	R("getxattrat", 464, ALLOW, NULL, ALLOW),
	R("gtty", 0, UNLISTED, NULL, REFUSE),
	R("idle", 0, UNLISTED, NULL, REFUSE),
	R("init_module", 0, CAPS, "CAP_SYS_MODULE", REFUSE),
	R("inotify_add_watch", 0, ALLOW, NULL, ALLOW),
	R("inotify_init", 0, ALLOW, NULL, ALLOW),
	R("inotify_init1", 0, ALLOW, NULL, ALLOW),
	R("inotify_rm_watch", 0, ALLOW, NULL, ALLOW),
	R("io_cancel", 0, ALLOW, NULL, ALLOW),
	R("io_destroy", 0, ALLOW, NULL, ALLOW),
	R("io_getevents", 0, ALLOW, NULL, ALLOW),
	R("io_pgetevents", 0, ALLOW, NULL, ALLOW),
	R("io_pgetevents_time64", 0, ALLOW, NULL, ALLOW),
	R("io_setup", 0, ALLOW, NULL, ALLOW),
	R("io_submit", 0, ALLOW, NULL, ALLOW),
	R("io_uring_enter", 0, UNLISTED, NULL, REFUSE),
	R("io_uring_register", 0, UNLISTED, NULL, REFUSE),
	R("io_uring_setup", 0, UNLISTED, NULL, REFUSE),
	R("ioctl", 0, ALLOW, NULL, ARGS),	/* ours: not TIOCSTI, not TIOCLINUX */
	R("ioperm", 0, CAPS, "CAP_SYS_RAWIO", REFUSE),
	R("iopl", 0, CAPS, "CAP_SYS_RAWIO", REFUSE),
	R("ioprio_get", 0, ALLOW, NULL, ALLOW),
	R("ioprio_set", 0, ALLOW, NULL, ALLOW),
	R("ipc", 0, ALLOW, NULL, ALLOW),
	R("kcmp", 0, CAPS, "CAP_SYS_PTRACE", REFUSE),
	R("kexec_file_load", 0, UNLISTED, NULL, REFUSE),
	R("kexec_load", 0, UNLISTED, NULL, REFUSE),
	R("keyctl", 0, UNLISTED, NULL, REFUSE),
	R("kill", 0, ALLOW, NULL, ALLOW),
	R("landlock_add_rule", 0, ALLOW, NULL, ALLOW),
	R("landlock_create_ruleset", 0, ALLOW, NULL, ALLOW),
	R("landlock_restrict_self", 0, ALLOW, NULL, ALLOW),
	R("lchown", 0, ALLOW, NULL, ALLOW),
	R("lchown32", 0, ALLOW, NULL, ALLOW),
	R("lgetxattr", 0, ALLOW, NULL, ALLOW),
	R("link", 0, ALLOW, NULL, ALLOW),
	R("linkat", 0, ALLOW, NULL, ALLOW),
	R("listen", 0, ALLOW, NULL, ALLOW),
	R("listmount", 458, ALLOW, NULL, ALLOW),
	R("listns", 470, UNLISTED, NULL, REFUSE),
	R("listxattr", 0, ALLOW, NULL, ALLOW),
	R("listxattrat", 465, ALLOW, NULL, ALLOW),
	R("llistxattr", 0, ALLOW, NULL, ALLOW),
	R("lock", 0, UNLISTED, NULL, REFUSE),
	R("lookup_dcookie", 0, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("lremovexattr", 0, ALLOW, NULL, ALLOW),
	R("lseek", 0, ALLOW, NULL, ALLOW),
	R("lsetxattr", 0, ALLOW, NULL, ALLOW),
	R("lsm_get_self_attr", 459, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("lsm_list_modules", 461, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("lsm_set_self_attr", 460, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("lstat", 0, ALLOW, NULL, ALLOW),
	R("lstat64", 0, ALLOW, NULL, ALLOW),
	R("madvise", 0, ALLOW, NULL, ALLOW),
	R("map_shadow_stack", 0, ALLOW, NULL, ALLOW),
	R("mbind", 0, CAPS, "CAP_SYS_NICE", REFUSE),
	R("membarrier", 0, ALLOW, NULL, ALLOW),
	R("memfd_create", 0, ALLOW, NULL, ALLOW),
	R("memfd_secret", 0, ALLOW, NULL, ALLOW),
	R("migrate_pages", 0, UNLISTED, NULL, REFUSE),
	R("mincore", 0, ALLOW, NULL, ALLOW),
	R("mkdir", 0, ALLOW, NULL, ALLOW),
	R("mkdirat", 0, ALLOW, NULL, ALLOW),
	R("mknod", 0, ALLOW, NULL, ARGS),	/* ours: no character or block devices */
	R("mknodat", 0, ALLOW, NULL, ARGS),	/* ours: no character or block devices */
	R("mlock", 0, ALLOW, NULL, ALLOW),
	R("mlock2", 0, ALLOW, NULL, ALLOW),
	R("mlockall", 0, ALLOW, NULL, ALLOW),
	R("mmap", 0, ALLOW, NULL, ALLOW),
	R("mmap2", 0, ALLOW, NULL, ALLOW),
	R("modify_ldt", 0, ARCH, "amd64 x32 x86", REFUSE),	/* ours: 16-bit segments, old bugs */
	R("mount", 0, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("mount_setattr", 0, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("move_mount", 0, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("move_pages", 0, UNLISTED, NULL, REFUSE),
	R("mprotect", 0, ALLOW, NULL, ALLOW),
	R("mpx", 0, UNLISTED, NULL, REFUSE),
	R("mq_getsetattr", 0, ALLOW, NULL, ALLOW),
	R("mq_notify", 0, ALLOW, NULL, ALLOW),
	R("mq_open", 0, ALLOW, NULL, ALLOW),
	R("mq_timedreceive", 0, ALLOW, NULL, ALLOW),
	R("mq_timedreceive_time64", 0, ALLOW, NULL, ALLOW),
	R("mq_timedsend", 0, ALLOW, NULL, ALLOW),
	R("mq_timedsend_time64", 0, ALLOW, NULL, ALLOW),
	R("mq_unlink", 0, ALLOW, NULL, ALLOW),
	R("mremap", 0, ALLOW, NULL, ALLOW),
	R("mseal", 462, ALLOW, NULL, ALLOW),
	R("msgctl", 0, ALLOW, NULL, ALLOW),
	R("msgget", 0, ALLOW, NULL, ALLOW),
	R("msgrcv", 0, ALLOW, NULL, ALLOW),
	R("msgsnd", 0, ALLOW, NULL, ALLOW),
	R("msync", 0, ALLOW, NULL, ALLOW),
	R("munlock", 0, ALLOW, NULL, ALLOW),
	R("munlockall", 0, ALLOW, NULL, ALLOW),
	R("munmap", 0, ALLOW, NULL, ALLOW),
	R("name_to_handle_at", 0, ALLOW, NULL, ALLOW),
	R("nanosleep", 0, ALLOW, NULL, ALLOW),
	R("newfstatat", 0, ALLOW, NULL, ALLOW),
	R("nfsservctl", 0, UNLISTED, NULL, REFUSE),
	R("nice", 0, UNLISTED, NULL, REFUSE),
	R("oldfstat", 0, UNLISTED, NULL, REFUSE),
	R("oldlstat", 0, UNLISTED, NULL, REFUSE),
	R("oldolduname", 0, UNLISTED, NULL, REFUSE),
	R("oldstat", 0, UNLISTED, NULL, REFUSE),
	R("olduname", 0, UNLISTED, NULL, REFUSE),
	R("open", 0, ALLOW, NULL, ALLOW),
	R("open_by_handle_at", 0, CAPS, "CAP_DAC_READ_SEARCH", REFUSE),
	R("open_tree", 0, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("open_tree_attr", 467, UNLISTED, NULL, REFUSE),
	R("openat", 0, ALLOW, NULL, ALLOW),
	R("openat2", 0, ALLOW, NULL, ALLOW),
	R("pause", 0, ALLOW, NULL, ALLOW),
	R("pciconfig_iobase", 0, UNLISTED, NULL, REFUSE),
	R("pciconfig_read", 0, UNLISTED, NULL, REFUSE),
	R("pciconfig_write", 0, UNLISTED, NULL, REFUSE),
	R("perf_event_open", 0, CAPS, "CAP_PERFMON CAP_SYS_ADMIN", REFUSE),
	R("personality", 0, ARGS, NULL, ARGS),
	R("pidfd_getfd", 0, CAPS, "CAP_SYS_PTRACE", REFUSE),
	R("pidfd_open", 0, ALLOW, NULL, ALLOW),
	R("pidfd_send_signal", 0, ALLOW, NULL, ALLOW),
	R("pipe", 0, ALLOW, NULL, ALLOW),
	R("pipe2", 0, ALLOW, NULL, ALLOW),
	R("pivot_root", 0, UNLISTED, NULL, REFUSE),
	R("pkey_alloc", 0, ALLOW, NULL, ALLOW),
	R("pkey_free", 0, ALLOW, NULL, ALLOW),
	R("pkey_mprotect", 0, ALLOW, NULL, ALLOW),
	R("poll", 0, ALLOW, NULL, ALLOW),
	R("ppoll", 0, ALLOW, NULL, ALLOW),
	R("ppoll_time64", 0, ALLOW, NULL, ALLOW),
	R("prctl", 0, ALLOW, NULL, ALLOW),
	R("pread64", 0, ALLOW, NULL, ALLOW),
	R("preadv", 0, ALLOW, NULL, ALLOW),
	R("preadv2", 0, ALLOW, NULL, ALLOW),
	R("prlimit64", 0, ALLOW, NULL, ALLOW),
	R("process_madvise", 0, CAPS, "CAP_SYS_PTRACE", REFUSE),
	R("process_mrelease", 0, ALLOW, NULL, ALLOW),
	R("process_vm_readv", 0, KERNEL, "4.8", REFUSE),	/* ours: other processes' memory */
	R("process_vm_writev", 0, KERNEL, "4.8", REFUSE),	/* ours: other processes' memory */
	R("prof", 0, UNLISTED, NULL, REFUSE),
	R("profil", 0, UNLISTED, NULL, REFUSE),
	R("pselect6", 0, ALLOW, NULL, ALLOW),
	R("pselect6_time64", 0, ALLOW, NULL, ALLOW),
	R("ptrace", 0, KERNEL, "4.8", REFUSE),	/* ours: other processes' memory and registers */
	R("putpmsg", 0, UNLISTED, NULL, REFUSE),
	R("pwrite64", 0, ALLOW, NULL, ALLOW),
	R("pwritev", 0, ALLOW, NULL, ALLOW),
	R("pwritev2", 0, ALLOW, NULL, ALLOW),
	R("query_module", 0, UNLISTED, NULL, REFUSE),
	R("quotactl", 0, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("quotactl_fd", 0, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("read", 0, ALLOW, NULL, ALLOW),
	R("readahead", 0, ALLOW, NULL, ALLOW),
	R("readdir", 0, UNLISTED, NULL, REFUSE),
	R("readlink", 0, ALLOW, NULL, ALLOW),
	R("readlinkat", 0, ALLOW, NULL, ALLOW),
	R("readv", 0, ALLOW, NULL, ALLOW),
	R("reboot", 0, CAPS, "CAP_SYS_BOOT", REFUSE),
	R("recv", 0, ALLOW, NULL, ALLOW),
	R("recvfrom", 0, ALLOW, NULL, ALLOW),
	R("recvmmsg", 0, ALLOW, NULL, ALLOW),
	R("recvmmsg_time64", 0, ALLOW, NULL, ALLOW),
	R("recvmsg", 0, ALLOW, NULL, ALLOW),
	R("remap_file_pages", 0, ALLOW, NULL, ALLOW),
	R("removexattr", 0, ALLOW, NULL, ALLOW),
	R("removexattrat", 466, ALLOW, NULL, ALLOW),
	R("rename", 0, ALLOW, NULL, ALLOW),
	R("renameat", 0, ALLOW, NULL, ALLOW),
	R("renameat2", 0, ALLOW, NULL, ALLOW),
	R("request_key", 0, UNLISTED, NULL, REFUSE),
	R("restart_syscall", 0, ALLOW, NULL, ALLOW),
	R("riscv_flush_icache", 0, ARCH, "riscv64", ALLOW),
	R("riscv_hwprobe", 0, ALLOW, NULL, ALLOW),
	R("rmdir", 0, ALLOW, NULL, ALLOW),
	R("rseq", 0, ALLOW, NULL, ALLOW),
	R("rt_sigaction", 0, ALLOW, NULL, ALLOW),
	R("rt_sigpending", 0, ALLOW, NULL, ALLOW),
	R("rt_sigprocmask", 0, ALLOW, NULL, ALLOW),
	R("rt_sigqueueinfo", 0, ALLOW, NULL, ALLOW),
	R("rt_sigreturn", 0, ALLOW, NULL, ALLOW),
	R("rt_sigsuspend", 0, ALLOW, NULL, ALLOW),
	R("rt_sigtimedwait", 0, ALLOW, NULL, ALLOW),
	R("rt_sigtimedwait_time64", 0, ALLOW, NULL, ALLOW),
	R("rt_tgsigqueueinfo", 0, ALLOW, NULL, ALLOW),
	R("s390_guarded_storage", 0, UNLISTED, NULL, REFUSE),
	R("s390_pci_mmio_read", 0, ARCH, "s390 s390x", ALLOW),
	R("s390_pci_mmio_write", 0, ARCH, "s390 s390x", ALLOW),
	R("s390_runtime_instr", 0, ARCH, "s390 s390x", ALLOW),
	R("s390_sthyi", 0, UNLISTED, NULL, REFUSE),
	R("sched_get_priority_max", 0, ALLOW, NULL, ALLOW),
	R("sched_get_priority_min", 0, ALLOW, NULL, ALLOW),
	R("sched_getaffinity", 0, ALLOW, NULL, ALLOW),
	R("sched_getattr", 0, ALLOW, NULL, ALLOW),
	R("sched_getparam", 0, ALLOW, NULL, ALLOW),
	R("sched_getscheduler", 0, ALLOW, NULL, ALLOW),
	R("sched_rr_get_interval", 0, ALLOW, NULL, ALLOW),
	R("sched_rr_get_interval_time64", 0, ALLOW, NULL, ALLOW),
	R("sched_setaffinity", 0, ALLOW, NULL, ALLOW),
	R("sched_setattr", 0, ALLOW, NULL, ALLOW),
	R("sched_setparam", 0, ALLOW, NULL, ALLOW),
	R("sched_setscheduler", 0, ALLOW, NULL, ALLOW),
	R("sched_yield", 0, ALLOW, NULL, ALLOW),
	R("seccomp", 0, ALLOW, NULL, ALLOW),
	R("security", 0, UNLISTED, NULL, REFUSE),
	R("select", 0, ALLOW, NULL, ALLOW),
	R("semctl", 0, ALLOW, NULL, ALLOW),
	R("semget", 0, ALLOW, NULL, ALLOW),
	R("semop", 0, ALLOW, NULL, ALLOW),
	R("semtimedop", 0, ALLOW, NULL, ALLOW),
	R("semtimedop_time64", 0, ALLOW, NULL, ALLOW),
	R("send", 0, ALLOW, NULL, ALLOW),
	R("sendfile", 0, ALLOW, NULL, ALLOW),
	R("sendfile64", 0, ALLOW, NULL, ALLOW),
	R("sendmmsg", 0, ALLOW, NULL, ALLOW),
	R("sendmsg", 0, ALLOW, NULL, ALLOW),
	R("sendto", 0, ALLOW, NULL, ALLOW),
	R("set_mempolicy", 0, CAPS, "CAP_SYS_NICE", REFUSE),
	R("set_mempolicy_home_node", 0, CAPS, "CAP_SYS_NICE", REFUSE),
	R("set_robust_list", 0, ALLOW, NULL, ALLOW),
	R("set_thread_area", 0, ALLOW, NULL, ALLOW),
	R("set_tid_address", 0, ALLOW, NULL, ALLOW),
	R("set_tls", 0, ARCH, "arm arm64", ALLOW),
	R("setdomainname", 0, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("setfsgid", 0, ALLOW, NULL, ALLOW),
	R("setfsgid32", 0, ALLOW, NULL, ALLOW),
	R("setfsuid", 0, ALLOW, NULL, ALLOW),
	R("setfsuid32", 0, ALLOW, NULL, ALLOW),
	R("setgid", 0, ALLOW, NULL, ALLOW),
	R("setgid32", 0, ALLOW, NULL, ALLOW),
	R("setgroups", 0, ALLOW, NULL, ALLOW),
	R("setgroups32", 0, ALLOW, NULL, ALLOW),
	R("sethostname", 0, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("setitimer", 0, ALLOW, NULL, ALLOW),
	R("setns", 0, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("setpgid", 0, ALLOW, NULL, ALLOW),
	R("setpriority", 0, ALLOW, NULL, ALLOW),
	R("setregid", 0, ALLOW, NULL, ALLOW),
	R("setregid32", 0, ALLOW, NULL, ALLOW),
	R("setresgid", 0, ALLOW, NULL, ALLOW),
	R("setresgid32", 0, ALLOW, NULL, ALLOW),
	R("setresuid", 0, ALLOW, NULL, ALLOW),
	R("setresuid32", 0, ALLOW, NULL, ALLOW),
	R("setreuid", 0, ALLOW, NULL, ALLOW),
	R("setreuid32", 0, ALLOW, NULL, ALLOW),
	R("setrlimit", 0, ALLOW, NULL, ALLOW),
	R("setsid", 0, ALLOW, NULL, ALLOW),
	R("setsockopt", 0, ALLOW, NULL, ALLOW),
	R("settimeofday", 0, CAPS, "CAP_SYS_TIME", REFUSE),
	R("setuid", 0, ALLOW, NULL, ALLOW),
	R("setuid32", 0, ALLOW, NULL, ALLOW),
	R("setxattr", 0, ALLOW, NULL, ALLOW),
	R("setxattrat", 463, ALLOW, NULL, ALLOW),
	R("sgetmask", 0, UNLISTED, NULL, REFUSE),
	R("shmat", 0, ALLOW, NULL, ALLOW),
	R("shmctl", 0, ALLOW, NULL, ALLOW),
	R("shmdt", 0, ALLOW, NULL, ALLOW),
	R("shmget", 0, ALLOW, NULL, ALLOW),
	R("shutdown", 0, ALLOW, NULL, ALLOW),
	R("sigaction", 0, UNLISTED, NULL, REFUSE),
	R("sigaltstack", 0, ALLOW, NULL, ALLOW),
	R("signal", 0, UNLISTED, NULL, REFUSE),
	R("signalfd", 0, ALLOW, NULL, ALLOW),
	R("signalfd4", 0, ALLOW, NULL, ALLOW),
	R("sigpending", 0, UNLISTED, NULL, REFUSE),
	R("sigprocmask", 0, ALLOW, NULL, ALLOW),
	R("sigreturn", 0, ALLOW, NULL, ALLOW),
	R("sigsuspend", 0, UNLISTED, NULL, REFUSE),
	R("socket", 0, ARGS, NULL, ARGS),	/* ours: unix, inet, inet6 and netlink route only */
	R("socketcall", 0, ALLOW, NULL, REFUSE),	/* ours: its arguments are behind a pointer */
	R("socketpair", 0, ALLOW, NULL, ALLOW),
	R("splice", 0, ALLOW, NULL, ALLOW),
	R("ssetmask", 0, UNLISTED, NULL, REFUSE),
	R("stat", 0, ALLOW, NULL, ALLOW),
	R("stat64", 0, ALLOW, NULL, ALLOW),
	R("statfs", 0, ALLOW, NULL, ALLOW),
	R("statfs64", 0, ALLOW, NULL, ALLOW),
	R("statmount", 457, ALLOW, NULL, ALLOW),
	R("statx", 0, ALLOW, NULL, ALLOW),
	R("stime", 0, CAPS, "CAP_SYS_TIME", REFUSE),
	R("stty", 0, UNLISTED, NULL, REFUSE),
	R("swapcontext", 0, ARCH, "ppc64le", ALLOW),
	R("swapoff", 0, UNLISTED, NULL, REFUSE),
	R("swapon", 0, UNLISTED, NULL, REFUSE),
	R("symlink", 0, ALLOW, NULL, ALLOW),
	R("symlinkat", 0, ALLOW, NULL, ALLOW),
	R("sync", 0, ALLOW, NULL, ALLOW),
	R("sync_file_range", 0, ALLOW, NULL, ALLOW),
	R("sync_file_range2", 0, ARCH, "arm arm64 ppc64le", ALLOW),
	R("syncfs", 0, ALLOW, NULL, ALLOW),
	R("sysfs", 0, UNLISTED, NULL, REFUSE),
	R("sysinfo", 0, ALLOW, NULL, ALLOW),
	R("syslog", 0, CAPS, "CAP_SYSLOG CAP_SYS_ADMIN", REFUSE),
	R("tee", 0, ALLOW, NULL, ALLOW),
	R("tgkill", 0, ALLOW, NULL, ALLOW),
	R("time", 0, ALLOW, NULL, ALLOW),
	R("timer_create", 0, ALLOW, NULL, ALLOW),
	R("timer_delete", 0, ALLOW, NULL, ALLOW),
	R("timer_getoverrun", 0, ALLOW, NULL, ALLOW),
	R("timer_gettime", 0, ALLOW, NULL, ALLOW),
	R("timer_gettime64", 0, ALLOW, NULL, ALLOW),
	R("timer_settime", 0, ALLOW, NULL, ALLOW),
	R("timer_settime64", 0, ALLOW, NULL, ALLOW),
	R("timerfd", 0, UNLISTED, NULL, REFUSE),
	R("timerfd_create", 0, ALLOW, NULL, ALLOW),
	R("timerfd_gettime", 0, ALLOW, NULL, ALLOW),
	R("timerfd_gettime64", 0, ALLOW, NULL, ALLOW),
	R("timerfd_settime", 0, ALLOW, NULL, ALLOW),
	R("timerfd_settime64", 0, ALLOW, NULL, ALLOW),
	R("times", 0, ALLOW, NULL, ALLOW),
	R("tkill", 0, ALLOW, NULL, ALLOW),
	R("truncate", 0, ALLOW, NULL, ALLOW),
	R("truncate64", 0, ALLOW, NULL, ALLOW),
	R("tuxcall", 0, UNLISTED, NULL, REFUSE),
	R("ugetrlimit", 0, ALLOW, NULL, ALLOW),
	R("ulimit", 0, UNLISTED, NULL, REFUSE),
	R("umask", 0, ALLOW, NULL, ALLOW),
	R("umount", 0, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("umount2", 0, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("uname", 0, ALLOW, NULL, ALLOW),
	R("unlink", 0, ALLOW, NULL, ALLOW),
	R("unlinkat", 0, ALLOW, NULL, ALLOW),
	R("unshare", 0, CAPS, "CAP_SYS_ADMIN", REFUSE),
	R("uprobe", X86_64_NR_336, UNLISTED, NULL, EXEMPT),	/* acts only from a uprobe trampoline */
	R("uretprobe", X86_64_NR_335, ALLOW, NULL, EXEMPT),	/* acts only from a uprobe trampoline */
	R("uselib", 0, UNLISTED, NULL, REFUSE),
	R("userfaultfd", 0, UNLISTED, NULL, REFUSE),
	R("ustat", 0, UNLISTED, NULL, REFUSE),
	R("utime", 0, ALLOW, NULL, ALLOW),
	R("utimensat", 0, ALLOW, NULL, ALLOW),
	R("utimensat_time64", 0, ALLOW, NULL, ALLOW),
	R("utimes", 0, ALLOW, NULL, ALLOW),
	R("vfork", 0, ALLOW, NULL, ALLOW),
	R("vhangup", 0, CAPS, "CAP_SYS_TTY_CONFIG", REFUSE),
	R("vm86", 0, UNLISTED, NULL, REFUSE),
	R("vm86old", 0, UNLISTED, NULL, REFUSE),
	R("vmsplice", 0, ALLOW, NULL, ALLOW),
	R("vserver", 0, UNLISTED, NULL, REFUSE),
	R("wait4", 0, ALLOW, NULL, ALLOW),
	R("waitid", 0, ALLOW, NULL, ALLOW),
	R("waitpid", 0, ALLOW, NULL, ALLOW),
	R("write", 0, ALLOW, NULL, ALLOW),
	R("writev", 0, ALLOW, NULL, ALLOW),
/* ROWS END */
};

const size_t sbx_syscall_table_len = sizeof sbx_syscall_table / sizeof sbx_syscall_table[0];

/* The comparisons are in seccomp.c; these say what each refuses. */
const struct sbx_arg_rule_info sbx_arg_rules[] = {
	{ "socket-family", "socket", true,
	  "families other than unix, inet, inet6 and netlink (Docker's: AF_ALG and AF_VSOCK)" },
	{ "netlink-not-route", "socket", false, "netlink protocols other than NETLINK_ROUTE" },
	{ "personality", "personality", true,
	  "personas other than Docker's five (so no ADDR_NO_RANDOMIZE, no READ_IMPLIES_EXEC)" },
	{ "clone-namespaces", "clone", true, "namespace flags" },
	{ "mknod-device", "mknod", false, "character and block devices" },
	{ "mknodat-device", "mknodat", false, "character and block devices" },
	{ "ioctl-tiocsti", "ioctl", false, "TIOCSTI, typing into the terminal" },
	{ "ioctl-tioclinux", "ioctl", false, "TIOCLINUX, the console's selection and more" },
};

const size_t sbx_arg_rules_len = sizeof sbx_arg_rules / sizeof sbx_arg_rules[0];

/* moby's daemon/pkg/oci/caps/defaults.go */
static const char *const docker_default_caps[] = {
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
	"CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
};

static int compare_row(const void *key, const void *row)
{
	return strcmp(key, ((const struct sbx_syscall_row *)row)->name);
}

const struct sbx_syscall_row *sbx_syscall_row_find(const char *name)
{
	return bsearch(name, sbx_syscall_table, sbx_syscall_table_len, sizeof sbx_syscall_table[0],
	               compare_row);
}

/* From 424 on every architecture numbers new system calls alike, but for these three. */
#if defined(__mips__) || defined(__alpha__) || defined(__ia64__)
#define GENERIC_NUMBERS 0
#else
#define GENERIC_NUMBERS 1
#endif

int sbx_syscall_row_nr(const struct sbx_syscall_row *row)
{
	int nr = seccomp_syscall_resolve_name(row->name);

	/* libseccomp's negative numbers name calls this architecture multiplexes (socketcall's
	 * on x86-64, say) or does not have. */
	if (nr >= 0)
		return nr;
	return GENERIC_NUMBERS && row->nr > 0 ? row->nr : -1;
}

int sbx_syscall_table_max_nr(void)
{
	int max = -1;

	for (size_t i = 0; i < sbx_syscall_table_len; i++) {
		int nr = sbx_syscall_row_nr(&sbx_syscall_table[i]);

		if (nr > max)
			max = nr;
	}
	return max;
}

const char *sbx_docker_native_arch(void)
{
#if defined(__x86_64__) && defined(__ILP32__)
	return "x32";
#elif defined(__x86_64__)
	return "amd64";
#elif defined(__i386__)
	return "x86";
#elif defined(__aarch64__)
	return "arm64";
#elif defined(__arm__)
	return "arm";
#elif defined(__s390x__)
	return "s390x";
#elif defined(__s390__)
	return "s390";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return "ppc64le";
#elif defined(__riscv) && __riscv_xlen == 64
	return "riscv64";
#else
	return "unknown";
#endif
}

bool sbx_docker_default_cap(const char *cap, size_t len)
{
	for (size_t i = 0; i < sizeof docker_default_caps / sizeof docker_default_caps[0]; i++)
		if (strlen(docker_default_caps[i]) == len && !strncmp(docker_default_caps[i], cap, len))
			return true;
	return false;
}

/* Whether the space-separated list holds word (or, with caps, one of Docker's defaults). */
static bool list_has(const char *list, const char *word, bool caps)
{
	for (const char *p = list; p && *p;) {
		size_t n = strcspn(p, " ");

		if (caps ? sbx_docker_default_cap(p, n) : strlen(word) == n && !strncmp(p, word, n))
			return true;
		p += n + (p[n] == ' ');
	}
	return false;
}

/* The running kernel is version "major.minor" or newer. */
static bool kernel_at_least(const char *version)
{
	struct utsname u;
	unsigned want_major = 0, want_minor = 0, major = 0, minor = 0;

	if (!version || sscanf(version, "%u.%u", &want_major, &want_minor) < 1 || uname(&u) < 0 ||
	    sscanf(u.release, "%u.%u", &major, &minor) < 1)
		return false;
	return major > want_major || (major == want_major && minor >= want_minor);
}

enum sbx_docker_verdict sbx_docker_verdict(const struct sbx_syscall_row *row)
{
	switch (row->docker) {
	case SBX_DOCKER_ALLOW:
		return SBX_VERDICT_ALLOWS;
	case SBX_DOCKER_ARGS:
		return SBX_VERDICT_ARGS;
	case SBX_DOCKER_KERNEL:
		return kernel_at_least(row->docker_detail) ? SBX_VERDICT_ALLOWS : SBX_VERDICT_REFUSES;
	case SBX_DOCKER_ARCH:
		return list_has(row->docker_detail, sbx_docker_native_arch(), false) ?
		       SBX_VERDICT_ALLOWS : SBX_VERDICT_REFUSES;
	case SBX_DOCKER_CAPS:
		return list_has(row->docker_detail, NULL, true) ? SBX_VERDICT_ALLOWS :
		       SBX_VERDICT_REFUSES;
	case SBX_DOCKER_ENOSYS:
		return SBX_VERDICT_ENOSYS;
	case SBX_DOCKER_UNLISTED:
	default:
		return SBX_VERDICT_REFUSES;
	}
}

static bool we_refuse(const struct sbx_syscall_row *row)
{
	return row->ours == SBX_OURS_REFUSE || row->ours == SBX_OURS_ENOSYS;
}

/* One of our argument rules on row's call is also Docker's. */
static bool holds_docker_arg_rule(const struct sbx_syscall_row *row)
{
	for (size_t i = 0; i < sbx_arg_rules_len; i++)
		if (sbx_arg_rules[i].docker && !strcmp(sbx_arg_rules[i].syscall, row->name))
			return row->ours == SBX_OURS_ARGS;
	return false;
}

static void count_row(const struct sbx_syscall_row *row, struct sbx_seccomp_counts *c)
{
	enum sbx_docker_verdict v = sbx_docker_verdict(row);

	if (row->ours == SBX_OURS_EXEMPT) {
		c->exempt++;
		return;
	}
	c->known++;
	c->refused += we_refuse(row);
	if (v == SBX_VERDICT_REFUSES || v == SBX_VERDICT_ENOSYS) {
		c->docker_refused++;
		c->docker_refused_here += we_refuse(row);
	} else if (v == SBX_VERDICT_ALLOWS) {
		c->ours_only += we_refuse(row);
	} else {
		c->docker_arg_rules++;
		c->docker_arg_rules_here += we_refuse(row) || holds_docker_arg_rule(row);
	}
}

void sbx_seccomp_count(struct sbx_seccomp_counts *c)
{
	memset(c, 0, sizeof *c);
	c->max_nr = -1;
	for (size_t i = 0; i < sbx_syscall_table_len; i++) {
		int nr = sbx_syscall_row_nr(&sbx_syscall_table[i]);

		if (nr < 0)
			continue;
		count_row(&sbx_syscall_table[i], c);
		if (nr > c->max_nr)
			c->max_nr = nr;
	}
	for (size_t i = 0; i < sbx_arg_rules_len; i++) {
		const struct sbx_syscall_row *row = sbx_syscall_row_find(sbx_arg_rules[i].syscall);

		if (row && row->ours == SBX_OURS_ARGS && sbx_syscall_row_nr(row) >= 0) {
			c->arg_rules++;
			c->ours_arg_rules += !sbx_arg_rules[i].docker;
		}
	}
}
