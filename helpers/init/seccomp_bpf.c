/* The baseline as the BPF program the kernel loads: libseccomp's program with a few
 * instructions in front that answer every native number above the table's highest with
 * ENOSYS (libseccomp 2.5 cannot say "above"; runc puts the same check in front of Docker's
 * filters). Those calls are newer than the table: an old kernel would answer ENOSYS too, and
 * libc then falls back to the call it used before. 32-bit tables and x32 numbers go straight
 * to libseccomp's program, which refuses them.
 *
 * Programs are built in the process that starts sandboxes (backends/sandbox/spec.c exports one
 * into a sealed memfd) or, failing that, by the init itself; either way the init loads one
 * after no_new_privs. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/error.h"
#include "init/sandbox.h"
#include "init/seccomp_internal.h"
#include "init/seccomp_table.h"

#define X32_SYSCALL_BIT 0x40000000u
#define PROLOGUE_MAX 6

struct program {
	struct sock_filter insns[BPF_MAXINSNS];
	size_t len;
};

static void release_filter(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

/* The newer-than-the-table check: on the native architecture, a number above max_nr (and,
 * on x86-64, below the x32 range) returns newer_errno; everything else falls through to
 * libseccomp's program, which loads what it needs itself. */
static size_t prologue(struct sock_filter *p, uint32_t arch, int max_nr, int newer_errno)
{
	bool x86_64 = arch == SCMP_ARCH_X86_64;
	size_t n = 0;
	uint8_t to_end = x86_64 ? 4 : 3;

	p[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	                                      offsetof(struct seccomp_data, arch));
	p[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 0, to_end);
	p[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	                                      offsetof(struct seccomp_data, nr));
	if (x86_64)
		p[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 2, 0);
	p[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, (uint32_t)max_nr, 0, 1);
	p[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
	                                      SECCOMP_RET_ERRNO | ((uint32_t)newer_errno &
	                                                           SECCOMP_RET_DATA));
	return n;
}

/* libseccomp's program for ctx, read back from a memfd after the prologue's place. */
static int export_after_prologue(scmp_filter_ctx ctx, struct program *prog, size_t at,
                                 char *err, size_t errlen)
{
	__attribute__((cleanup(close_fd))) int fd = memfd_create("sbx-seccomp", MFD_CLOEXEC);
	size_t room = (BPF_MAXINSNS - at) * sizeof prog->insns[0];
	ssize_t n;
	int rc;

	if (fd < 0)
		return sbx_fail_buf(err, errlen, -errno, "seccomp: memfd: %s", strerror(errno));
	if ((rc = seccomp_export_bpf(ctx, fd)) < 0)
		return sbx_fail_buf(err, errlen, rc, "seccomp_export_bpf: %s", strerror(-rc));
	n = pread(fd, prog->insns + at, room, 0);
	if (n <= 0 || n % (ssize_t)sizeof prog->insns[0] != 0)
		return sbx_fail_buf(err, errlen, n < 0 ? -errno : -EIO,
		                    "seccomp: read back the program");
	if ((size_t)n == room && lseek(fd, 0, SEEK_END) > n)
		return sbx_fail_buf(err, errlen, -E2BIG, "seccomp: the program exceeds %d "
		                    "instructions", BPF_MAXINSNS);
	prog->len = at + (size_t)n / sizeof prog->insns[0];
	return 0;
}

/* The whole program: refused calls answer deny_errno, newer ones newer_errno. */
static int build_program(int deny_errno, int newer_errno, struct program *prog, char *err,
                         size_t errlen)
{
	__attribute__((cleanup(release_filter))) scmp_filter_ctx ctx = NULL;
	struct sock_filter head[PROLOGUE_MAX];
	int max_nr = sbx_syscall_table_max_nr(), rc;
	size_t n;

	if (newer_errno <= 0 || newer_errno > 4095)
		return sbx_fail_buf(err, errlen, -EINVAL, "seccomp: bad errno %d", newer_errno);
	if (max_nr < 0)
		return sbx_fail_buf(err, errlen, -ENOSYS, "seccomp: no system call of the table "
		                    "exists on this architecture");
	if ((rc = sbx_seccomp_build(deny_errno, &ctx, err, errlen)) < 0)
		return rc;
	n = prologue(head, seccomp_arch_native(), max_nr, newer_errno);
	memcpy(prog->insns, head, n * sizeof head[0]);
	return export_after_prologue(ctx, prog, n, err, errlen);
}

/* seccomp(2), or prctl where there is none: kernels before 3.17, and valgrind, which runs
 * the unit tests and knows only the prctl. */
static int load(const struct sock_filter *insns, size_t len, char *err, size_t errlen)
{
	struct sock_fprog fprog = { .len = (unsigned short)len, .filter = (struct sock_filter *)insns };

	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) == 0)
		return 0;
	if (errno == ENOSYS && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0L, 0L) == 0)
		return 0;
	return sbx_fail_buf(err, errlen, -errno, "seccomp: load the program: %s", strerror(errno));
}

int sbx_seccomp_apply_errno(int deny_errno, int newer_errno, char *err, size_t errlen)
{
	struct program *prog = malloc(sizeof *prog);     /* 32 KiB */
	int rc;

	if (!prog)
		return sbx_fail_buf(err, errlen, -ENOMEM, "seccomp: out of memory");
	rc = build_program(deny_errno, newer_errno, prog, err, errlen);
	if (rc == 0)
		rc = load(prog->insns, prog->len, err, errlen);
	free(prog);
	return rc;
}

int sbx_seccomp_apply(char *err, size_t errlen)
{
	return sbx_seccomp_apply_errno(EPERM, ENOSYS, err, errlen);
}

int sbx_seccomp_export(int fd, char *err, size_t errlen)
{
	struct program *prog = malloc(sizeof *prog);
	size_t size;
	ssize_t n;
	int rc;

	if (!prog)
		return sbx_fail_buf(err, errlen, -ENOMEM, "seccomp: out of memory");
	rc = build_program(EPERM, ENOSYS, prog, err, errlen);
	size = prog->len * sizeof prog->insns[0];
	if (rc == 0 && (n = pwrite(fd, prog->insns, size, 0)) != (ssize_t)size)
		rc = sbx_fail_buf(err, errlen, n < 0 ? -errno : -EIO, "seccomp: write the program");
	free(prog);
	return rc;
}

int sbx_seccomp_load_program(int fd, char *err, size_t errlen)
{
	struct sock_filter insns[BPF_MAXINSNS];
	ssize_t n = pread(fd, insns, sizeof insns, 0);

	if (n <= 0 || n % (ssize_t)sizeof insns[0] != 0)
		return sbx_fail_buf(err, errlen, n < 0 ? -errno : -EINVAL,
		                    "seccomp: unreadable program on fd %d", fd);
	return load(insns, (size_t)n / sizeof insns[0], err, errlen);
}

int sbx_seccomp_refuse_setid(char *err, size_t errlen)
{
	__attribute__((cleanup(release_filter))) scmp_filter_ctx ctx = NULL;
	struct program *prog = malloc(sizeof *prog);
	int rc;

	if (!prog)
		return sbx_fail_buf(err, errlen, -ENOMEM, "seccomp: out of memory");
	rc = sbx_seccomp_build_setid(&ctx, err, errlen);
	if (rc == 0)
		rc = export_after_prologue(ctx, prog, 0, err, errlen);
	if (rc == 0)
		rc = load(prog->insns, prog->len, err, errlen);
	free(prog);
	return rc;
}
