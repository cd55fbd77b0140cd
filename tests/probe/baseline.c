/* sbx-probe's walk of the seccomp baseline (helpers/init/seccomp_table.c) and its argument
 * probes. "baseline" prints one line per call it makes, each made in a child:
 *
 *   row NAME OUTCOME             a row the filter must refuse (EPERM, or ENOSYS for
 *                                SBX_OURS_ENOSYS), called with every argument all ones
 *   control NAME OUTCOME WANT    a row the filter allows, called with a bad pointer (or
 *                                another argument the kernel rejects): WANT is what the
 *                                kernel then answers, EFAULT mostly
 *   number NR OUTCOME            a number no row has: up to the table's highest it must be
 *                                refused (EPERM), above it it is newer than the table (ENOSYS)
 *   x32 NR OUTCOME               an x32 number on x86-64 (refused with the 32-bit tables)
 *
 * The arguments are chosen so that a call which got through by mistake does nothing: all
 * ones is an invalid pointer, fd, flag set, signal, clock and length for every refused call
 * of the table (reboot's magic fails, kill's signal is invalid, acct gets no NULL); each
 * child is a session leader without a terminal first, so that vhangup has none to hang up;
 * init_module gets a length of 0. The test decides what each line must say; this program
 * only reports.
 *
 * The argument probes (probe_arg_probe) are named like sbx-probe's others: personality-*,
 * family-N and netlink-P (socket with an invalid type, so that a socket the filter let
 * through would be refused before any kernel module is loaded for its family), netlink-raw-P
 * (a real netlink socket), mknod-* and mknodat-* (device nodes at a bad path). */
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "init/seccomp_table.h"
#include "probe.h"

#define ALL_ONES (~0UL)
#define BAD 1UL                  /* an address nothing is mapped at */
#define BAD_ALIGNED 4096UL       /* the same, aligned for futex */
#define SOCK_TYPE_INVALID 11     /* SOCK_MAX: refused before any module is loaded */
#define HIGH_BITS 0x100000000UL  /* dropped by the kernel where it reads an int */
#define SAFETY_ALARM_S 30        /* a call that hangs ends the child, not the walk */
#define NUMBERS_ABOVE 8          /* numbers just above the table's highest to try */
#define FAR_NUMBER 1000          /* one far above: no architecture will reach it soon */
/* DEV_NULL and DEV_LOOP0: /dev/null and /dev/loop0 (small numbers encode so). */
#define DEV_NULL 0x103UL
#define DEV_LOOP0 0x700UL

struct call {
	long nr;
	unsigned long a[6];
};

static struct call current;

static int c_current(void)
{
	(void)setsid();
	alarm(SAFETY_ALARM_S);
	return probe_result_of(syscall(current.nr, current.a[0], current.a[1], current.a[2],
	                               current.a[3], current.a[4], current.a[5]));
}

static int call_in_child(long nr, const unsigned long a[6])
{
	current.nr = nr;
	memcpy(current.a, a, sizeof current.a);
	fflush(stdout);
	return probe_in_child(c_current);
}

/* ---- the rows we allow: controls -------------------------------------------------------- */

struct control {
	const char *name;
	unsigned long a[6];
	int want;
};

#define AT_CWD ((unsigned long)(long)AT_FDCWD)

static const struct control controls[] = {
	{ "uname", { BAD }, EFAULT },
	{ "getcwd", { BAD, 4096 }, EFAULT },
	{ "sysinfo", { BAD }, EFAULT },
	{ "times", { BAD }, EFAULT },
	{ "getrusage", { RUSAGE_SELF, BAD }, EFAULT },
	{ "getrlimit", { RLIMIT_NOFILE, BAD }, EFAULT },
	{ "prlimit64", { 0, RLIMIT_NOFILE, 0, BAD }, EFAULT },
	{ "clock_gettime", { CLOCK_MONOTONIC, BAD }, EFAULT },
	{ "clock_getres", { CLOCK_MONOTONIC, BAD }, EFAULT },
	{ "gettimeofday", { BAD, 0 }, EFAULT },
	{ "nanosleep", { BAD, 0 }, EFAULT },
	{ "clock_nanosleep", { CLOCK_MONOTONIC, 0, BAD, 0 }, EFAULT },
	{ "getresuid", { BAD, BAD, BAD }, EFAULT },
	{ "getresgid", { BAD, BAD, BAD }, EFAULT },
	{ "pipe", { BAD }, EFAULT },
	{ "pipe2", { BAD, 0 }, EFAULT },
	{ "socketpair", { AF_UNIX, SOCK_STREAM, 0, BAD }, EFAULT },
	{ "stat", { BAD, BAD }, EFAULT },
	{ "lstat", { BAD, BAD }, EFAULT },
	{ "newfstatat", { AT_CWD, BAD, BAD, 0 }, EFAULT },
	{ "statx", { AT_CWD, BAD, 0, 0x7ff, BAD }, EFAULT },
	{ "statfs", { BAD, BAD }, EFAULT },
	{ "access", { BAD, F_OK }, EFAULT },
	{ "faccessat", { AT_CWD, BAD, F_OK }, EFAULT },
	{ "faccessat2", { AT_CWD, BAD, F_OK, 0 }, EFAULT },
	{ "open", { BAD, O_RDONLY }, EFAULT },
	{ "openat", { AT_CWD, BAD, O_RDONLY }, EFAULT },
	{ "readlink", { BAD, BAD, 16 }, EFAULT },
	{ "getxattr", { BAD, BAD, 0, 0 }, EFAULT },
	{ "name_to_handle_at", { AT_CWD, BAD, BAD, BAD, 0 }, EFAULT },
	{ "chdir", { BAD }, EFAULT },
	{ "mkdir", { BAD, 0700 }, EFAULT },
	{ "rmdir", { BAD }, EFAULT },
	{ "unlink", { BAD }, EFAULT },
	{ "rename", { BAD, BAD }, EFAULT },
	{ "fchmodat2", { AT_CWD, BAD, 0600, 0 }, EFAULT },
	{ "getrandom", { BAD, 16, 0 }, EFAULT },
	{ "capget", { BAD, BAD }, EFAULT },
	{ "sched_getaffinity", { 0, 128, BAD }, EFAULT },
	{ "sched_getparam", { 0, BAD }, EFAULT },
	{ "rt_sigprocmask", { SIG_BLOCK, BAD, 0, 8 }, EFAULT },
	{ "rt_sigaction", { SIGUSR1, BAD, 0, 8 }, EFAULT },
	{ "sigaltstack", { BAD, 0 }, EFAULT },
	{ "getitimer", { ITIMER_REAL, BAD }, EFAULT },
	{ "futex", { BAD_ALIGNED, 0 /* FUTEX_WAIT */, 0, 0 }, EFAULT },
	{ "poll", { BAD, 1, 0 }, EFAULT },
	/* Newer than libseccomp 2.5: allowed by the table's own numbers. */
	{ "statmount", { BAD, BAD, 0, 0 }, EFAULT },
	{ "listmount", { BAD, BAD, 0, 0 }, EFAULT },
	{ "getxattrat", { AT_CWD, BAD, 0, BAD, BAD, 32 }, EFAULT },
	{ "setxattrat", { AT_CWD, BAD, 0, BAD, BAD, 32 }, EFAULT },
	{ "listxattrat", { AT_CWD, BAD, 0, BAD, 16 }, EFAULT },
	{ "removexattrat", { AT_CWD, BAD, 0, BAD }, EFAULT },
	{ "mseal", { 0, 0, 0 }, PR_OK },            /* nothing to seal */
};

/* ---- the walk ---------------------------------------------------------------------------- */

static void refused_args(const struct sbx_syscall_row *row, unsigned long a[6])
{
	for (int i = 0; i < 6; i++)
		a[i] = ALL_ONES;
	if (!strcmp(row->name, "init_module"))
		a[0] = BAD, a[1] = 0, a[2] = BAD;     /* a length of all ones would be allocated */
}

static void walk_refused_rows(void)
{
	for (size_t i = 0; i < sbx_syscall_table_len; i++) {
		const struct sbx_syscall_row *row = &sbx_syscall_table[i];
		int nr = sbx_syscall_row_nr(row);
		unsigned long a[6];

		if (nr < 0 || (row->ours != SBX_OURS_REFUSE && row->ours != SBX_OURS_ENOSYS))
			continue;
		refused_args(row, a);
		printf("row %s %s\n", row->name, probe_outcome_name(call_in_child(nr, a)));
	}
}

static void walk_controls(void)
{
	for (size_t i = 0; i < sizeof controls / sizeof controls[0]; i++) {
		const struct sbx_syscall_row *row = sbx_syscall_row_find(controls[i].name);
		int nr = row ? sbx_syscall_row_nr(row) : -1;
		int got;

		if (nr < 0)
			continue;
		got = call_in_child(nr, controls[i].a);
		printf("control %s %s", controls[i].name, probe_outcome_name(got));
		printf(" %s\n", probe_outcome_name(controls[i].want));
	}
}

static bool some_row_has(int nr)
{
	for (size_t i = 0; i < sbx_syscall_table_len; i++)
		if (sbx_syscall_row_nr(&sbx_syscall_table[i]) == nr)
			return true;
	return false;
}

static void walk_numbers(void)
{
	static const unsigned long all_ones[6] = { ALL_ONES, ALL_ONES, ALL_ONES, ALL_ONES,
	                                           ALL_ONES, ALL_ONES };
	int max = sbx_syscall_table_max_nr();

	for (int nr = 0; nr <= max + NUMBERS_ABOVE; nr++)
		if (!some_row_has(nr))
			printf("number %d %s\n", nr, probe_outcome_name(call_in_child(nr, all_ones)));
	printf("number %d %s\n", FAR_NUMBER,
	       probe_outcome_name(call_in_child(FAR_NUMBER, all_ones)));
#if defined(__x86_64__) && !defined(__ILP32__)
	/* x32's getpid and ptrace. */
	printf("x32 %d %s\n", 39, probe_outcome_name(call_in_child(0x40000000L | 39, all_ones)));
	printf("x32 %d %s\n", 521, probe_outcome_name(call_in_child(0x40000000L | 521, all_ones)));
#endif
}

int probe_baseline(void)
{
	walk_refused_rows();
	walk_controls();
	walk_numbers();
	fflush(stdout);
	return 0;
}

/* ---- argument probes --------------------------------------------------------------------- */

static struct call arg_call;

static int c_arg_call(void)
{
	alarm(SAFETY_ALARM_S);
	return probe_result_of(syscall(arg_call.nr, arg_call.a[0], arg_call.a[1], arg_call.a[2],
	                               arg_call.a[3], arg_call.a[4], arg_call.a[5]));
}

/* A real socket, closed at once (netlink-raw-P: the attack as a program would make it). */
static int c_real_socket(void)
{
	long fd = syscall(SYS_socket, arg_call.a[0], arg_call.a[1], arg_call.a[2]);

	if (fd >= 0)
		close((int)fd);
	return probe_result_of(fd);
}

static int run_arg_call(void)
{
	fflush(stdout);
	return probe_in_child(c_arg_call);
}

static int run_real_socket(void)
{
	fflush(stdout);
	return probe_in_child(c_real_socket);
}

struct named_call {
	const char *name;
	long nr;
	unsigned long a[3];
};

static const struct named_call named_calls[] = {
	{ "personality-addr-no-randomize", SYS_personality, { 0x0040000 } },
	{ "personality-read-implies-exec", SYS_personality, { 0x0400000 } },
	{ "personality-high", SYS_personality, { HIGH_BITS } },
	{ "personality-query", SYS_personality, { 0xffffffff } },
	{ "personality-linux32", SYS_personality, { 0x0008 } },
	{ "family-vsock-high", SYS_socket, { HIGH_BITS | 40, SOCK_TYPE_INVALID, 0 } },
	{ "family-alg-high", SYS_socket, { HIGH_BITS | 38, SOCK_TYPE_INVALID, 0 } },
	{ "family-packet-high", SYS_socket, { HIGH_BITS | 17, SOCK_TYPE_INVALID, 0 } },
	{ "family-inet-high", SYS_socket, { HIGH_BITS | 2, SOCK_TYPE_INVALID, 0 } },
	{ "netlink-netfilter-high", SYS_socket,
	  { AF_NETLINK, SOCK_TYPE_INVALID, HIGH_BITS | NETLINK_NETFILTER } },
	{ "netlink-route-high", SYS_socket, { AF_NETLINK, SOCK_TYPE_INVALID, HIGH_BITS } },
#ifdef SYS_mknod
	{ "mknod-chr", SYS_mknod, { BAD, S_IFCHR | 0600, DEV_NULL } },
	{ "mknod-blk", SYS_mknod, { BAD, S_IFBLK | 0600, DEV_LOOP0 } },
	{ "mknod-fifo", SYS_mknod, { BAD, S_IFIFO | 0600, 0 } },
#endif
};

/* mknodat's four arguments do not fit named_calls' three. */
static const struct {
	const char *name;
	unsigned long mode, dev;
} mknodat_calls[] = {
	{ "mknodat-chr", S_IFCHR | 0600, DEV_NULL },
	{ "mknodat-blk", S_IFBLK | 0600, DEV_LOOP0 },
	{ "mknodat-whiteout", S_IFCHR, 0 },
	{ "mknodat-chr-high", 0x10000 | S_IFCHR | 0600, DEV_NULL },   /* umode_t: 16 bits */
	{ "mknodat-fifo", S_IFIFO | 0600, 0 },
	{ "mknodat-reg", S_IFREG | 0600, 0 },
	{ "mknodat-sock", S_IFSOCK | 0600, 0 },
};

static bool number_after(const char *name, const char *prefix, unsigned long *out)
{
	size_t n = strlen(prefix);
	char *end;

	if (strncmp(name, prefix, n) != 0 || !name[n])
		return false;
	*out = strtoul(name + n, &end, 10);
	return *end == '\0';
}

static void set_arg_call(long nr, unsigned long a0, unsigned long a1, unsigned long a2,
                         unsigned long a3)
{
	arg_call = (struct call){ .nr = nr, .a = { a0, a1, a2, a3 } };
}

int (*probe_arg_probe(const char *name))(void)
{
	unsigned long v;

	for (size_t i = 0; i < sizeof named_calls / sizeof named_calls[0]; i++) {
		if (strcmp(named_calls[i].name, name) == 0) {
			set_arg_call(named_calls[i].nr, named_calls[i].a[0], named_calls[i].a[1],
			             named_calls[i].a[2], 0);
			return run_arg_call;
		}
	}
	for (size_t i = 0; i < sizeof mknodat_calls / sizeof mknodat_calls[0]; i++) {
		if (strcmp(mknodat_calls[i].name, name) == 0) {
			set_arg_call(SYS_mknodat, AT_CWD, BAD, mknodat_calls[i].mode,
			             mknodat_calls[i].dev);
			return run_arg_call;
		}
	}
	if (number_after(name, "family-", &v)) {
		set_arg_call(SYS_socket, v, SOCK_TYPE_INVALID, 0, 0);
		return run_arg_call;
	}
	if (number_after(name, "netlink-raw-", &v)) {
		set_arg_call(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, v, 0);
		return run_real_socket;
	}
	if (number_after(name, "netlink-", &v)) {
		set_arg_call(SYS_socket, AF_NETLINK, SOCK_TYPE_INVALID, v, 0);
		return run_arg_call;
	}
	return NULL;
}
