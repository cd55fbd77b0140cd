/* Process hardening of the sandbox init (caps, no_new_privs, Landlock, seccomp), tested the
 * way an attacker meets it: a child applies the hardening and execs sbx-probe, which tries
 * every refused system call with harmless bad arguments and reports the errnos; the test
 * reads that report.
 *
 * The loop tests run in three setups (the loop index): the owner of a fresh user namespace
 * mapped to its own uid, the same namespace with uid 0 inside (exec as root must still gain
 * nothing), and — when the tests run as real root — directly in the initial namespace. A
 * setup the host cannot give (no user namespaces, not root) is skipped with the reason.
 *
 * Two kinds of evidence per refused call: with the real filter the call fails with EPERM
 * (clone3 and calls newer than the table: ENOSYS); with the filter built for distinctive
 * errnos (EHWPOISON for refused calls, ENOTRECOVERABLE for newer ones, which no system call
 * check returns) the call fails with that errno — proving the filter answered and not a
 * kernel permission check or a missing call — while the same call without a filter reaches
 * the kernel and is answered some other way. The calls are the named probes of sbx-probe and
 * its walk of the whole table (tests/seccomp_walk.c checks the walk). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "init/sandbox.h"
#include "seccomp_walk.h"
#include "support.h"

enum setup { USERNS_OWN_UID, USERNS_ROOT_INSIDE, INITIAL_NS, N_SETUPS };

static const char *const setup_names[] = { "userns, own uid", "userns, uid 0 inside",
                                           "initial namespace (real root)" };

enum apply { APPLY_NOTHING, APPLY_FILTER_MARKED, APPLY_HARDEN };

/* Set by a test before run_probe: the child first raises CAP_NET_BIND_SERVICE into its
 * inheritable and ambient sets, the caps an exec would otherwise carry over. */
static bool raise_ambient_first;

#define MARK_ERRNO EHWPOISON
#define MARK_NAME "EHWPOISON"
#define NEWER_MARK_ERRNO ENOTRECOVERABLE
#define NEWER_MARK_NAME "ENOTRECOVERABLE"

/* sbx-probe's named probes of calls the filter refuses (all with EPERM but clone3): the
 * calls of DESIGN.md §4, the ones issue 15 found reachable, and the argument rules. */
static const char *const refused_probes[] = {
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "keyctl", "add_key",
	"request_key", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
	"io_uring_enter", "io_uring_register", "open_by_handle_at", "kexec_load",
	"kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon",
	"swapoff", "acct", "syslog", "mount", "umount", "umount2", "pivot_root", "chroot",
	"fsopen", "fsconfig", "fsmount", "move_mount", "open_tree", "fspick", "mount_setattr",
	"setns", "clone-newuser", "clone-newns", "clone-newpid", "clone-newnet", "clone-newipc",
	"clone-newuts", "clone-newcgroup", "unshare-newuser", "unshare-newns", "unshare-newpid",
	"unshare-newnet", "unshare-newipc", "unshare-newuts", "unshare-newcgroup",
	"unshare-newtime", "unshare-files", "clone3", "tiocsti", "tioclinux", "vsock",
	"personality-addr-no-randomize", "personality-read-implies-exec", "personality-high",
	"family-0", "family-17", "family-38", "family-40", "family-41", "family-44", "family-46",
	"netlink-4", "netlink-9", "netlink-12", "netlink-15", "netlink-16", "netlink-31",
	"mknod-chr", "mknod-blk", "mknodat-chr", "mknodat-blk", "mknodat-whiteout",
	"mknodat-chr-high", NULL,
};
/* Shapes of refused calls with high bits set on an argument the kernel truncates. */
static const char *const bypass_variants[] = {
	"tiocsti-high", "tioclinux-high", "vsock-high", "family-vsock-high", "family-alg-high",
	"family-packet-high", "netlink-netfilter-high", NULL,
};
/* The 32-bit tables, refused whole: ia32-getpid is refused too. */
static const char *const ia32_variants[] = {
	"ia32-getpid", "ia32-ptrace", "ia32-mount", "ia32-umount", "ia32-unshare-newuser",
	"ia32-clone-newuser", "ia32-tiocsti", "ia32-vsock", "ia32-socketcall-vsock", NULL,
};
/* What the filter must not break. */
static const char *const must_work[] = {
	"fork", "clone", "getpid", "socket-inet", "socket-unix", "ioctl-tiocgwinsz",
	"ioctl-fionread", "personality-query", "personality-linux32", "netlink-raw-0", NULL,
};
/* Calls the argument rules let through to the kernel, which refuses their bad arguments:
 * the same answer with and without the filter. */
static const char *const reach_the_kernel[] = {
	"family-1", "family-2", "family-10", "family-16", "family-inet-high", "netlink-0",
	"netlink-route-high", "mknod-fifo", "mknodat-fifo", "mknodat-reg", "mknodat-sock", NULL,
};

/* ---- running the probe in a hardened child ---------------------------------------------- */

static const char *probe_path(void)
{
	const char *p = getenv("SBX_TEST_PROBE");

	ck_assert_msg(p && *p, "SBX_TEST_PROBE is not set (run through meson test)");
	return p;
}

/* Can this process make a user namespace? Asked once, in a child. */
static bool userns_works(void)
{
	static int works = -1;
	int status;
	pid_t pid;

	if (works >= 0)
		return works;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	works = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	return works;
}

/* Ends the case as skipped when its setup cannot be entered here: the initial namespace
 * needs real root (those passes sit in the tcase tagged 'root'), the others a user namespace. */
#define SETUP_NEED()                                                                       \
	do {                                                                               \
		TEST_NEED(TEST_CAP_ROOT, _i != INITIAL_NS || geteuid() == 0,               \
		          "the initial-namespace setup needs real root");                  \
		TEST_NEED(TEST_CAP_USERNS, _i == INITIAL_NS || userns_works(),             \
		          "unshare(CLONE_NEWUSER) fails on this host");                    \
	} while (0)

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int enter_userns(bool root_inside, char *err, size_t errlen)
{
	char map[64];
	unsigned uid = (unsigned)getuid(), gid = (unsigned)getgid();

	if (unshare(CLONE_NEWUSER) != 0) {
		snprintf(err, errlen, "unshare(CLONE_NEWUSER): %s", strerror(errno));
		return -1;
	}
	if (write_file("/proc/self/setgroups", "deny") != 0 && errno != ENOENT) {
		snprintf(err, errlen, "setgroups deny: %s", strerror(errno));
		return -1;
	}
	snprintf(map, sizeof map, "%u %u 1", root_inside ? 0u : uid, uid);
	if (write_file("/proc/self/uid_map", map) != 0) {
		snprintf(err, errlen, "uid_map: %s", strerror(errno));
		return -1;
	}
	snprintf(map, sizeof map, "%u %u 1", root_inside ? 0u : gid, gid);
	if (write_file("/proc/self/gid_map", map) != 0) {
		snprintf(err, errlen, "gid_map: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int enter_setup(int setup, char *err, size_t errlen)
{
	switch (setup) {
	case USERNS_OWN_UID:
		return enter_userns(false, err, errlen);
	case USERNS_ROOT_INSIDE:
		return enter_userns(true, err, errlen);
	case INITIAL_NS:
		return 0;
	default:
		snprintf(err, errlen, "bad setup %d", setup);
		return -1;
	}
}

static int raise_ambient_cap(char *err, size_t errlen)
{
	cap_t c = cap_get_proc();
	cap_value_t v = CAP_NET_BIND_SERVICE;
	int rc = -1;

	if (c && cap_set_flag(c, CAP_INHERITABLE, 1, &v, CAP_SET) == 0 && cap_set_proc(c) == 0 &&
	    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, (unsigned long)v, 0L, 0L) == 0)
		rc = 0;
	else
		snprintf(err, errlen, "raising an ambient cap: %s", strerror(errno));
	cap_free(c);
	return rc;
}

static int apply_hardening(enum apply what, const struct sbx_harden_spec *spec, char *err,
                           size_t errlen)
{
	if (raise_ambient_first && raise_ambient_cap(err, errlen) != 0)
		return -1;
	switch (what) {
	case APPLY_NOTHING:
		return 0;
	case APPLY_FILTER_MARKED:
		if (prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) != 0) {
			snprintf(err, errlen, "no_new_privs: %s", strerror(errno));
			return -1;
		}
		return sbx_seccomp_apply_errno(MARK_ERRNO, NEWER_MARK_ERRNO, err, errlen);
	case APPLY_HARDEN:
		return sbx_harden_apply(spec, err, errlen);
	default:
		snprintf(err, errlen, "bad step %d", (int)what);
		return -1;
	}
}

/* LeakSanitizer inspects a process by ptrace-attaching to it, which the sandbox refuses by
 * design: in a sanitizer build the probe would abort at exit. Leaks of the test itself are
 * still checked. */
static void no_leak_check_in_sandbox(void)
{
	const char *cur = getenv("ASAN_OPTIONS");
	char opts[1024];

	snprintf(opts, sizeof opts, "%s%sdetect_leaks=0", cur ? cur : "", cur && *cur ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
}

/* In the child: enter the setup, harden, exec the probe with stdout on the pipe. Failures are
 * reported on the pipe as "setup-error ..." for the test to show. */
static void __attribute__((noreturn))
child_run(int out_fd, int setup, enum apply what, const struct sbx_harden_spec *spec,
          char **argv)
{
	char err[512] = "";

	if (dup2(out_fd, STDOUT_FILENO) < 0)
		_exit(4);
	no_leak_check_in_sandbox();
	if (enter_setup(setup, err, sizeof err) != 0 ||
	    apply_hardening(what, spec, err, sizeof err) != 0) {
		printf("setup-error %s\n", err);
		fflush(stdout);
		_exit(3);
	}
	execv(argv[0], argv);
	printf("setup-error exec %s: %s\n", argv[0], strerror(errno));
	fflush(stdout);
	_exit(3);
}

static char *read_all(int fd)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t n;

	ck_assert_ptr_nonnull(buf);
	for (;;) {
		if (cap - len < 1024) {
			cap *= 2;
			buf = realloc(buf, cap);
			ck_assert_ptr_nonnull(buf);
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return buf;
}

/* Runs `sbx-probe args...` hardened as asked; returns its output (caller frees). */
static char *run_probe(int setup, enum apply what, const struct sbx_harden_spec *spec,
                       const char *const *args)
{
	char *argv[256];
	size_t n = 0;
	int fds[2], status;
	pid_t pid;
	char *out;

	argv[n++] = (char *)probe_path();
	for (size_t i = 0; args[i]; i++) {
		ck_assert_uint_lt(n, sizeof argv / sizeof argv[0] - 1);
		argv[n++] = (char *)args[i];
	}
	argv[n] = NULL;
	ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		child_run(fds[1], setup, what, spec, argv);
	close(fds[1]);
	out = read_all(fds[0]);
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(!strstr(out, "setup-error"), "[%s] %s", setup_names[setup], out);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	              "[%s] probe ended with status 0x%x:\n%s", setup_names[setup], status, out);
	return out;
}

/* The value the probe reported for key ("NAME value" lines), or NULL. Caller frees. */
static char *probe_value(const char *out, const char *key)
{
	size_t klen = strlen(key);
	const char *line = out;

	while (line && *line) {
		const char *next = strchr(line, '\n');

		if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
			const char *v = line + klen + 1;

			return strndup(v, strcspn(v, "\n"));
		}
		line = next ? next + 1 : NULL;
	}
	return NULL;
}

static void assert_probe(const char *out, int setup, const char *key, const char *want)
{
	char *got = probe_value(out, key);

	ck_assert_msg(got, "[%s] no report for %s in:\n%s", setup_names[setup], key, out);
	ck_assert_msg(strcmp(got, want) == 0, "[%s] %s: got %s, want %s", setup_names[setup], key,
	              got, want);
	free(got);
}

/* ---- the argument lists ----------------------------------------------------------------- */

struct namelist {
	const char *v[200];
	size_t n;
};

static void add_name(struct namelist *l, const char *name)
{
	ck_assert_uint_lt(l->n, sizeof l->v / sizeof l->v[0] - 1);
	l->v[l->n++] = name;
	l->v[l->n] = NULL;
}

static void add_names(struct namelist *l, const char *const *names)
{
	for (size_t i = 0; names[i]; i++)
		add_name(l, names[i]);
}

/* "syscall", every named probe, the bypass shapes, the 32-bit ones, what must work and what
 * reaches the kernel. */
static void all_syscall_probes(struct namelist *l)
{
	add_name(l, "syscall");
	add_names(l, refused_probes);
	add_names(l, bypass_variants);
	add_names(l, ia32_variants);
	add_names(l, must_work);
	add_names(l, reach_the_kernel);
	add_name(l, "x32-ptrace");
}

static bool is_absent(const char *out, const char *name)
{
	char *v = probe_value(out, name);
	bool absent = v && strcmp(v, "absent") == 0;

	if (absent)
		fprintf(stderr, "note: %s does not exist on this architecture\n", name);
	free(v);
	return absent;
}

/* ia32 emulation may be compiled out or switched off at boot. */
static bool ia32_available(const char *out)
{
	char *v = probe_value(out, "ia32-getpid");
	bool ok = v && strcmp(v, "OK") == 0;

	if (!ok)
		fprintf(stderr, "SKIP: 32-bit system calls: ia32-getpid gave %s\n", v ? v : "nothing");
	free(v);
	return ok;
}

/* Whether this kernel runs 32-bit system calls at all, asked without any filter. */
static bool ia32_kernel_support(int setup)
{
	static const char *const args[] = { "syscall", "ia32-getpid", NULL };
	struct sbx_harden_spec spec = {0};
	char *out = run_probe(setup, APPLY_NOTHING, &spec, args);
	bool ok = ia32_available(out);

	free(out);
	return ok;
}

/* ---- seccomp ------------------------------------------------------------------------------ */

START_TEST(filter_rejects_a_bad_errno)
{
	char err[256] = "";

	ck_assert_int_eq(sbx_seccomp_apply_errno(0, ENOSYS, err, sizeof err), -EINVAL);
	ck_assert_int_eq(sbx_seccomp_apply_errno(5000, ENOSYS, err, sizeof err), -EINVAL);
	ck_assert_int_eq(sbx_seccomp_apply_errno(EPERM, 0, err, sizeof err), -EINVAL);
	ck_assert_int_eq(prctl(PR_GET_SECCOMP, 0L, 0L, 0L, 0L), 0);
}
END_TEST

/* The exported program is what sbx_seccomp_apply loads, starts with the check of numbers
 * newer than the table, and fits the kernel's limit. */
START_TEST(exported_program_has_the_newer_call_check)
{
	FILE *f = tmpfile();
	char err[256] = "";
	struct stat st;
	uint32_t first[2];

	ck_assert_ptr_nonnull(f);
	ck_assert_msg(sbx_seccomp_export(fileno(f), err, sizeof err) == 0, "%s", err);
	ck_assert_int_eq(fstat(fileno(f), &st), 0);
	ck_assert_int_eq(st.st_size % 8, 0);
	ck_assert_int_gt(st.st_size / 8, 100);
	ck_assert_int_le(st.st_size / 8, 4096);
	ck_assert_int_eq(pread(fileno(f), first, sizeof first, 0), (ssize_t)sizeof first);
	/* BPF_LD|BPF_W|BPF_ABS of seccomp_data.arch (offset 4) */
	ck_assert_uint_eq(first[0] & 0xffff, 0x20);
	ck_assert_uint_eq(first[1], 4);
	fclose(f);
}
END_TEST

static void assert_each(const char *out, int setup, const char *const *names, const char *want)
{
	for (size_t i = 0; names[i]; i++)
		if (!is_absent(out, names[i]))
			assert_probe(out, setup, names[i], want);
}

/* Every named probe of a refused call is answered by the filter itself, and without the
 * filter the same call reaches the kernel and is answered otherwise (so the probe really
 * makes the call). */
START_TEST(filter_answers_every_named_probe_itself)
{
	struct namelist l = {0};
	struct sbx_harden_spec spec = {0};
	char *marked, *bare;
	bool ia32;

	SETUP_NEED();
	all_syscall_probes(&l);
	bare = run_probe(_i, APPLY_NOTHING, &spec, l.v);
	marked = run_probe(_i, APPLY_FILTER_MARKED, &spec, l.v);
	for (size_t i = 0; refused_probes[i]; i++) {
		const char *name = refused_probes[i];
		const char *want = strcmp(name, "clone3") ? MARK_NAME : "ENOSYS";
		char *before = probe_value(bare, name);

		if (is_absent(marked, name)) {
			free(before);
			continue;
		}
		assert_probe(marked, _i, name, want);
		ck_assert_msg(before && strcmp(before, want) != 0,
		              "[%s] %s without the filter gave %s: the probe proves nothing",
		              setup_names[_i], name, before ? before : "nothing");
		free(before);
	}
	assert_each(marked, _i, bypass_variants, MARK_NAME);
	ia32 = ia32_available(bare);
	if (ia32)
		assert_each(marked, _i, ia32_variants, MARK_NAME);
#if defined(__x86_64__)
	assert_probe(marked, _i, "x32-ptrace", MARK_NAME);
#endif
	assert_each(bare, _i, must_work, "OK");
	assert_each(marked, _i, must_work, "OK");
	for (size_t i = 0; reach_the_kernel[i]; i++) {
		char *before = probe_value(bare, reach_the_kernel[i]);

		ck_assert_msg(before && strcmp(before, "OK") && strcmp(before, MARK_NAME),
		              "[%s] %s without the filter gave %s", setup_names[_i],
		              reach_the_kernel[i], before ? before : "nothing");
		assert_probe(marked, _i, reach_the_kernel[i], before);
		free(before);
	}
	free(bare);
	free(marked);
}
END_TEST

/* The walk of the whole table: every refused row, every number without a row and every
 * control, answered by the filter (markers) or, for controls, by the kernel; without the
 * filter every refused call is answered by the kernel. */
START_TEST(filter_answers_the_whole_table_itself)
{
	static const char *const args[] = { "baseline", NULL };
	struct sbx_harden_spec spec = {0};
	char *marked, *bare, *report;

	SETUP_NEED();
	bare = run_probe(_i, APPLY_NOTHING, &spec, args);
	marked = run_probe(_i, APPLY_FILTER_MARKED, &spec, args);
	report = seccomp_walk_check(marked, MARK_NAME, NEWER_MARK_NAME, bare);
	ck_assert_msg(!report, "[%s] the walk of the table:\n%s", setup_names[_i], report);
	ck_assert_int_ge(seccomp_walk_controls(marked), 40);
	free(bare);
	free(marked);
}
END_TEST

/* ---- the whole sequence ------------------------------------------------------------------ */

START_TEST(harden_refuses_every_probe_with_eperm)
{
	static const char *const tmp_writable[] = { "/tmp", NULL };
	static const char *const walk_args[] = { "baseline", NULL };
	struct sbx_harden_spec spec = { .writable_paths = tmp_writable, .landlock = true };
	struct namelist l = {0};
	char *out, *x32, *report;
	bool ia32;

	SETUP_NEED();
	all_syscall_probes(&l);
	ia32 = ia32_kernel_support(_i);
	out = run_probe(_i, APPLY_HARDEN, &spec, l.v);
	for (size_t i = 0; refused_probes[i]; i++)
		if (!is_absent(out, refused_probes[i]))
			assert_probe(out, _i, refused_probes[i],
			             strcmp(refused_probes[i], "clone3") ? "EPERM" : "ENOSYS");
	assert_each(out, _i, bypass_variants, "EPERM");
	if (ia32)
		assert_each(out, _i, ia32_variants, "EPERM");
	/* x32 shares x86_64's AUDIT_ARCH: only the filter stops it (the kernel here may not
	 * even run x32, which would answer ENOSYS — the filter must answer first). */
	x32 = probe_value(out, "x32-ptrace");
#if defined(__x86_64__)
	ck_assert_msg(x32 && strcmp(x32, "EPERM") == 0, "x32-ptrace gave %s", x32 ? x32 : "nothing");
#else
	ck_assert_msg(x32 && strcmp(x32, "absent") == 0, "x32-ptrace gave %s", x32 ? x32 : "nothing");
#endif
	free(x32);
	assert_each(out, _i, must_work, "OK");
	free(out);
	out = run_probe(_i, APPLY_HARDEN, &spec, walk_args);
	report = seccomp_walk_check(out, "EPERM", "ENOSYS", NULL);
	ck_assert_msg(!report, "[%s] the walk of the table:\n%s", setup_names[_i], report);
	free(out);
}
END_TEST

START_TEST(harden_leaves_no_capabilities_and_sets_no_new_privs)
{
	static const char *const args[] = { "caps", "nnp", "securebits", NULL };
	static const char *const sets[] = { "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
	                                    NULL };
	struct sbx_harden_spec spec = { .writable_paths = NULL, .landlock = false };
	char *out;

	SETUP_NEED();
	/* Before: the setup really had capabilities to lose, ambient ones among them. */
	raise_ambient_first = true;
	out = run_probe(_i, APPLY_NOTHING, &spec, args);
	assert_probe(out, _i, "nnp", "0");
	ck_assert_msg(!strstr(out, "CapBnd 0000000000000000"), "bounding set empty already");
	assert_probe(out, _i, "CapAmb", "0000000000000400");
	free(out);

	out = run_probe(_i, APPLY_HARDEN, &spec, args);
	for (size_t i = 0; sets[i]; i++)
		assert_probe(out, _i, sets[i], "0000000000000000");
	assert_probe(out, _i, "nnp", "1");
	/* NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE and their locks, KEEP_CAPS locked off:
	 * kept across the exec into the probe. */
	assert_probe(out, _i, "securebits", "0xef");
	free(out);
}
END_TEST

/* ---- capabilities alone ------------------------------------------------------------------- */

static void drop_effective_setpcap(void)
{
	cap_t c = cap_get_proc();
	cap_value_t setpcap = CAP_SETPCAP;

	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(cap_set_flag(c, CAP_EFFECTIVE, 1, &setpcap, CAP_CLEAR), 0);
	ck_assert_int_eq(cap_set_flag(c, CAP_PERMITTED, 1, &setpcap, CAP_CLEAR), 0);
	ck_assert_int_eq(cap_set_proc(c), 0);
	cap_free(c);
}

/* A capability left in the bounding set could come back through a file capability: when it
 * cannot be dropped, the drop fails instead of pretending. */
START_TEST(caps_drop_fails_when_the_bounding_set_cannot_be_emptied)
{
	char err[256] = "";
	int rc;

	/* An ordinary user in the initial namespace has no CAP_SETPCAP to begin with: that
	 * pass runs as anyone. */
	TEST_NEED(TEST_CAP_USERNS, _i == INITIAL_NS || userns_works(),
	          "unshare(CLONE_NEWUSER) fails on this host");
	if (_i != INITIAL_NS)
		ck_assert_msg(enter_setup(_i, err, sizeof err) == 0, "%s", err);
	TEST_NEED("bounding-set", cap_get_bound(CAP_SYS_ADMIN) == 1,
	          "the bounding set is already empty here");
	drop_effective_setpcap();
	rc = sbx_caps_drop_all(err, sizeof err);
	ck_assert_int_eq(rc, -EPERM);
	ck_assert_msg(strstr(err, "bounding"), "%s", err);
}
END_TEST

/* bubblewrap's case: the bounding set is already empty and CAP_SETPCAP gone; nothing is left
 * to do that needs it, and the drop succeeds. */
START_TEST(caps_drop_succeeds_without_setpcap_when_bounding_set_is_empty)
{
	char err[256] = "";
	cap_t now, none;

	SETUP_NEED();
	if (_i != INITIAL_NS)
		ck_assert_msg(enter_setup(_i, err, sizeof err) == 0, "%s", err);
	for (int cap = 0; cap_get_bound(cap) >= 0; cap++)
		ck_assert_int_eq(cap_drop_bound(cap), 0);
	drop_effective_setpcap();
	ck_assert_msg(sbx_caps_drop_all(err, sizeof err) == 0, "%s", err);
	now = cap_get_proc();
	none = cap_init();
	ck_assert_int_eq(cap_compare(now, none), 0);
	cap_free(now);
	cap_free(none);
}
END_TEST

START_TEST(harden_refuses_a_null_spec)
{
	char err[256] = "";
	int nnp_before = prctl(PR_GET_NO_NEW_PRIVS, 0L, 0L, 0L, 0L);

	ck_assert_int_eq(sbx_harden_apply(NULL, err, sizeof err), -EINVAL);
	ck_assert_int_eq(prctl(PR_GET_NO_NEW_PRIVS, 0L, 0L, 0L, 0L), nnp_before);
}
END_TEST

/* ---- Landlock ------------------------------------------------------------------------------ */

struct lltree {
	char *root, *rw, *ro;
	char path[16][512];
	size_t n;
};

static const char *at(struct lltree *t, const char *dir, const char *name)
{
	ck_assert_uint_lt(t->n, 16);
	snprintf(t->path[t->n], sizeof t->path[0], "%s/%s", dir, name);
	return t->path[t->n++];
}

static void put_file(const char *dir, const char *name, const char *text)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "we");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void make_tree(struct lltree *t)
{
	memset(t, 0, sizeof *t);
	t->root = test_mkdtemp();
	ck_assert_int_ne(asprintf(&t->rw, "%s/rw", t->root), -1);
	ck_assert_int_ne(asprintf(&t->ro, "%s/ro", t->root), -1);
	ck_assert_int_eq(mkdir(t->rw, 0700), 0);
	ck_assert_int_eq(mkdir(t->ro, 0700), 0);
	put_file(t->rw, "existing", "data");
	put_file(t->ro, "existing", "data");
}

static void free_tree(struct lltree *t)
{
	test_rm_rf(t->root);
	free(t->root);
	free(t->rw);
	free(t->ro);
}

/* Ends the case as skipped on a kernel without Landlock, or under a tool such as valgrind
 * that does not pass its system calls (the ABI probe gives 0 or less). */
#define LANDLOCK_NEED()                                                                   \
	TEST_NEED(TEST_CAP_LANDLOCK, sbx_landlock_abi() > 0,                              \
	          "the Landlock ABI probe fails (a kernel without it, or valgrind)")

static bool file_exists(const char *dir, const char *name)
{
	char path[600];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

static char *file_text(const char *dir, const char *name)
{
	char path[600], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "re");
	ck_assert_ptr_nonnull(f);
	if (!fgets(buf, sizeof buf, f))
		buf[0] = '\0';
	fclose(f);
	return strdup(buf);
}

static void assert_one_of(const char *out, int setup, const char *key, const char *a,
                          const char *b)
{
	char *got = probe_value(out, key);

	ck_assert_msg(got && (strcmp(got, a) == 0 || strcmp(got, b) == 0),
	              "[%s] %s: got %s, want %s or %s", setup_names[setup], key,
	              got ? got : "nothing", a, b);
	free(got);
}

/* The one-path probes of landlock_allows_writes_only_beneath_writable_paths, in the order
 * they run, and what each must get: inside the writable path everything works; outside it
 * every kind of write is refused, reading is not. Landlock refuses truncation from ABI 3 on
 * (before that the probe must succeed). */
enum step_where { IN_WRITABLE, IN_READ_ONLY, AT_ROOT };
struct landlock_step {
	const char *op;
	enum step_where where;
	const char *name;
	const char *want;
	int from_abi;
};
static const struct landlock_step landlock_steps[] = {
	{ "landlock-write", IN_WRITABLE, "new", "OK", 0 },
	{ "landlock-mkdir", IN_WRITABLE, "dir", "OK", 0 },
	{ "landlock-append", IN_WRITABLE, "existing", "OK", 0 },
	{ "landlock-write", IN_READ_ONLY, "new", "EACCES", 0 },
	{ "landlock-write", AT_ROOT, "new", "EACCES", 0 },
	{ "landlock-mkdir", IN_READ_ONLY, "dir", "EACCES", 0 },
	{ "landlock-mkfifo", IN_READ_ONLY, "fifo", "EACCES", 0 },
	{ "landlock-symlink", IN_READ_ONLY, "link", "EACCES", 0 },
	{ "landlock-append", IN_READ_ONLY, "existing", "EACCES", 0 },
	{ "landlock-truncate", IN_READ_ONLY, "existing", "EACCES", 3 },
	{ "landlock-unlink", IN_READ_ONLY, "existing", "EACCES", 0 },
	{ "landlock-read", IN_READ_ONLY, "existing", "OK", 0 },
};
#define LANDLOCK_STEPS (sizeof landlock_steps / sizeof landlock_steps[0])

static const char *step_dir(const struct lltree *t, enum step_where where)
{
	return where == IN_WRITABLE ? t->rw : where == IN_READ_ONLY ? t->ro : t->root;
}

START_TEST(landlock_allows_writes_only_beneath_writable_paths)
{
	struct lltree t;
	char key[1300], *out, *text;
	const char *writable[2];
	struct sbx_harden_spec spec = { .writable_paths = writable, .landlock = true };
	int abi;

	SETUP_NEED();
	LANDLOCK_NEED();
	abi = sbx_landlock_abi();
	fprintf(stderr, "note: Landlock ABI %d\n", abi);
	make_tree(&t);
	writable[0] = t.rw;
	writable[1] = NULL;
	{
		const char *args[2 * LANDLOCK_STEPS + 2 * 3 + 2 + 1];
		size_t n = 0;

		for (size_t k = 0; k < LANDLOCK_STEPS; k++) {
			const struct landlock_step *st = &landlock_steps[k];

			args[n++] = st->op;
			args[n++] = at(&t, step_dir(&t, st->where), st->name);
		}
		args[n++] = "landlock-rename";
		args[n++] = at(&t, t.ro, "existing");
		args[n++] = at(&t, t.rw, "moved-in");
		args[n++] = "landlock-rename";
		args[n++] = at(&t, t.rw, "existing");
		args[n++] = at(&t, t.ro, "moved-out");
		args[n++] = "landlock-append";
		args[n++] = "/dev/null";
		args[n] = NULL;

		out = run_probe(_i, APPLY_HARDEN, &spec, args);
		for (size_t k = 0; k < LANDLOCK_STEPS; k++) {
			const struct landlock_step *st = &landlock_steps[k];

			snprintf(key, sizeof key, "%s %s/%s", st->op, step_dir(&t, st->where), st->name);
			assert_probe(out, _i, key, abi >= st->from_abi ? st->want : "OK");
		}
		/* Moving a file out of, or into, the read-only area is a write there. EXDEV is
		 * Landlock's answer for a refused reparenting (callers then copy). */
		snprintf(key, sizeof key, "landlock-rename %s/existing %s/moved-in", t.ro, t.rw);
		assert_one_of(out, _i, key, "EACCES", "EXDEV");
		snprintf(key, sizeof key, "landlock-rename %s/existing %s/moved-out", t.rw, t.ro);
		assert_one_of(out, _i, key, "EACCES", "EXDEV");
		/* The device nodes every program writes to. */
		assert_probe(out, _i, "landlock-append /dev/null", "OK");
		free(out);
	}
	/* And the host agrees. */
	ck_assert(file_exists(t.rw, "new"));
	ck_assert(file_exists(t.rw, "dir"));
	ck_assert(!file_exists(t.ro, "new"));
	ck_assert(!file_exists(t.root, "new"));
	ck_assert(!file_exists(t.ro, "dir"));
	ck_assert(!file_exists(t.ro, "link"));
	ck_assert(!file_exists(t.rw, "moved-in"));
	ck_assert(!file_exists(t.ro, "moved-out"));
	text = file_text(t.ro, "existing");
	ck_assert_str_eq(text, "data");
	free(text);
	free_tree(&t);
}
END_TEST

/* The control: without Landlock the same writes succeed, so the refusals above are
 * Landlock's and not file permissions. */
START_TEST(landlock_off_leaves_writes_alone)
{
	struct lltree t;
	char key[700], *out;
	const char *writable[2];
	struct sbx_harden_spec spec = { .writable_paths = writable, .landlock = false };

	SETUP_NEED();
	make_tree(&t);
	writable[0] = t.rw;
	writable[1] = NULL;
	{
		const char *args[] = { "landlock-write", at(&t, t.ro, "new"),
		                       "landlock-mkdir", at(&t, t.ro, "dir"), NULL };

		out = run_probe(_i, APPLY_HARDEN, &spec, args);
		snprintf(key, sizeof key, "landlock-write %s/new", t.ro);
		assert_probe(out, _i, key, "OK");
		snprintf(key, sizeof key, "landlock-mkdir %s/dir", t.ro);
		assert_probe(out, _i, key, "OK");
		free(out);
	}
	free_tree(&t);
}
END_TEST

/* A writable path may name a single file: it gets the file rights (write, truncate) and
 * nothing around it. */
START_TEST(landlock_writable_file_allows_that_file_only)
{
	struct lltree t;
	char key[700], *out;
	const char *writable[2];
	struct sbx_harden_spec spec = { .writable_paths = writable, .landlock = true };

	SETUP_NEED();
	LANDLOCK_NEED();
	make_tree(&t);
	writable[0] = at(&t, t.ro, "existing");
	writable[1] = NULL;
	{
		const char *args[] = { "landlock-append", writable[0],
		                       "landlock-truncate", writable[0],
		                       "landlock-write", at(&t, t.ro, "beside"), NULL };

		out = run_probe(_i, APPLY_HARDEN, &spec, args);
		snprintf(key, sizeof key, "landlock-append %s", writable[0]);
		assert_probe(out, _i, key, "OK");
		snprintf(key, sizeof key, "landlock-truncate %s", writable[0]);
		assert_probe(out, _i, key, "OK");
		snprintf(key, sizeof key, "landlock-write %s/beside", t.ro);
		assert_probe(out, _i, key, "EACCES");
		free(out);
	}
	free_tree(&t);
}
END_TEST

START_TEST(landlock_refuses_a_missing_writable_path)
{
	static const char *const writable[] = { "/nonexistent-sbx-path", NULL };
	struct sbx_harden_spec spec = { .writable_paths = writable, .landlock = true };
	bool applied = true;
	char err[256] = "";

	LANDLOCK_NEED();
	ck_assert_int_eq(sbx_landlock_apply(&spec, &applied, err, sizeof err), -ENOENT);
	ck_assert(!applied);
	ck_assert_msg(strstr(err, "/nonexistent-sbx-path"), "%s", err);
}
END_TEST

START_TEST(landlock_not_wanted_is_not_applied)
{
	struct sbx_harden_spec spec = { .writable_paths = NULL, .landlock = false };
	bool applied = true;
	char err[256] = "";

	ck_assert_int_eq(sbx_landlock_apply(&spec, &applied, err, sizeof err), 0);
	ck_assert(!applied);
}
END_TEST

/* The user-namespace setups of case t go to tc; the initial namespace's, which needs real
 * root, to as_root (tagged 'root', a meson test of its own). */
static void add_setups(TCase *tc, TCase *as_root, const TTest *t)
{
	tcase_add_loop_test(tc, t, 0, INITIAL_NS);
	tcase_add_loop_test(as_root, t, INITIAL_NS, N_SETUPS);
}

static Suite *harden_suite(void)
{
	Suite *s = suite_create("harden");
	TCase *seccomp = tcase_create("seccomp");
	TCase *whole = tcase_create("sequence");
	TCase *caps = tcase_create("caps");
	TCase *landlock = tcase_create("landlock");
	TCase *as_root = tcase_create("initial-namespace");

	tcase_set_tags(as_root, "root");
	tcase_add_test(seccomp, filter_rejects_a_bad_errno);
	tcase_add_test(seccomp, exported_program_has_the_newer_call_check);
	add_setups(seccomp, as_root, filter_answers_every_named_probe_itself);
	add_setups(seccomp, as_root, filter_answers_the_whole_table_itself);
	suite_add_tcase(s, seccomp);

	add_setups(whole, as_root, harden_refuses_every_probe_with_eperm);
	add_setups(whole, as_root, harden_leaves_no_capabilities_and_sets_no_new_privs);
	tcase_add_test(whole, harden_refuses_a_null_spec);
	suite_add_tcase(s, whole);

	tcase_add_loop_test(caps, caps_drop_fails_when_the_bounding_set_cannot_be_emptied, 0,
	                    N_SETUPS);
	add_setups(caps, as_root, caps_drop_succeeds_without_setpcap_when_bounding_set_is_empty);
	suite_add_tcase(s, caps);

	add_setups(landlock, as_root, landlock_allows_writes_only_beneath_writable_paths);
	add_setups(landlock, as_root, landlock_off_leaves_writes_alone);
	add_setups(landlock, as_root, landlock_writable_file_allows_that_file_only);
	tcase_add_test(landlock, landlock_refuses_a_missing_writable_path);
	tcase_add_test(landlock, landlock_not_wanted_is_not_applied);
	suite_add_tcase(s, landlock);
	suite_add_tcase(s, as_root);
	return s;
}

int main(void)
{
	return test_run_suite(harden_suite());
}
