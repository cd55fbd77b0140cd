/* The seccomp baseline (DESIGN.md §4, §10): an allow-list built from seccomp_table.c, at least
 * as strict as Docker's default profile for a container with Docker's default capabilities.
 * A refused call fails with EPERM — programs see a permission error and carry on — never
 * with a silent kill. Shapes of rule, and why:
 *  - a row we allow is allowed outright; every other number the table knows answers EPERM
 *    (the default action), so a name missing from the table is refused, not allowed;
 *  - numbers above the highest one the table knows are newer than it and answer ENOSYS, as
 *    runc answers them for Docker: libc then falls back to an older call it knows
 *    (seccomp_bpf.c puts that check in front of libseccomp's program);
 *  - clone3 answers ENOSYS: its flags live behind a pointer seccomp cannot read, and ENOSYS
 *    makes libc fall back to clone, whose flags we check;
 *  - the argument rules (seccomp_args.c) allow a call only with argument values that are
 *    safe, compared on the bits the kernel reads: socket only for unix, inet, inet6 and
 *    netlink route; personality only with Docker's five personas; clone only without
 *    namespace flags; mknod(at) only for files, FIFOs and sockets; ioctl but TIOCSTI and
 *    TIOCLINUX.
 *
 * The 32-bit tables are refused whole (i386 and x32 beside x86-64, arm beside arm64, s390
 * beside s390x): they are in the filter with no rule, so each of their calls answers EPERM.
 * Agent workspaces run the host's 64-bit programs; a 32-bit table is a second way into the
 * same kernel code, and on i386 socket() is multiplexed through socketcall, whose arguments
 * sit behind a pointer a filter cannot read (Docker's profile lets socket families it refuses
 * through that way). Any other architecture kills the process. */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"
#include "init/sandbox.h"
#include "init/seccomp_internal.h"
#include "init/seccomp_table.h"

struct compat_arches {
	uint32_t native;
	uint32_t compat[2];     /* 0 = none */
	const char *names;
};

static const struct compat_arches compat_table[] = {
	{ SCMP_ARCH_X86_64, { SCMP_ARCH_X86, SCMP_ARCH_X32 }, "i386 and x32" },
	{ SCMP_ARCH_AARCH64, { SCMP_ARCH_ARM, 0 }, "arm" },
	{ SCMP_ARCH_S390X, { SCMP_ARCH_S390, 0 }, "s390" },
};

const char *sbx_seccomp_compat_tables(void)
{
	for (size_t i = 0; i < sizeof compat_table / sizeof compat_table[0]; i++)
		if (compat_table[i].native == seccomp_arch_native())
			return compat_table[i].names;
	return NULL;
}

static int set_attributes(scmp_filter_ctx ctx, char *err, size_t errlen)
{
	/* KILL_PROCESS needs API level 3 (kernel 4.14); before that only the thread can die. */
	uint32_t badarch = seccomp_api_get() >= 3 ? SCMP_ACT_KILL_PROCESS : SCMP_ACT_KILL;
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, badarch);

	if (rc < 0)
		return sbx_fail_buf(err, errlen, rc, "seccomp: bad-arch action: %s", strerror(-rc));
	/* A binary tree of system call numbers: a call the kernel cannot cache as always
	 * allowed walks a few compares, not all three hundred. */
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	return 0;
}

/* A context without rules for the compat architectures of this one: their calls all meet
 * the default action. None (an architecture without compat tables): *out stays NULL. */
static int compat_filter(uint32_t deny_action, scmp_filter_ctx *out, char *err, size_t errlen)
{
	uint32_t native = seccomp_arch_native();
	int added = 0, rc;

	for (size_t i = 0; i < sizeof compat_table / sizeof compat_table[0]; i++) {
		if (compat_table[i].native != native)
			continue;
		if (!(*out = seccomp_init(deny_action)))
			return sbx_fail_buf(err, errlen, -ENOMEM, "seccomp_init failed");
		if ((rc = set_attributes(*out, err, errlen)) < 0)
			return rc;
		/* A compat architecture libseccomp cannot add is left out: its calls then meet the
		 * bad-architecture action (kill), which is safe. */
		for (size_t j = 0; j < 2 && compat_table[i].compat[j]; j++)
			added += seccomp_arch_add(*out, compat_table[i].compat[j]) == 0;
		if ((rc = seccomp_arch_remove(*out, SCMP_ARCH_NATIVE)) < 0)
			return sbx_fail_buf(err, errlen, rc, "seccomp: compat filter: %s", strerror(-rc));
	}
	if (*out && !added) {
		seccomp_release(*out);
		*out = NULL;
	}
	return 0;
}

static int add_row(scmp_filter_ctx ctx, const struct sbx_syscall_row *row, int nr, char *err,
                   size_t errlen)
{
	int rc = 0;

	switch (row->ours) {
	case SBX_OURS_ALLOW:
	case SBX_OURS_EXEMPT:   /* so that a kernel without the exception agrees */
		rc = seccomp_rule_add_exact(ctx, SCMP_ACT_ALLOW, nr, 0);
		break;
	case SBX_OURS_ENOSYS:
		rc = seccomp_rule_add_exact(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
		break;
	case SBX_OURS_ARGS:
		return sbx_seccomp_add_arg_rules(ctx, row->name, nr, err, errlen);
	case SBX_OURS_REFUSE:
	default:
		return 0;       /* the default action */
	}
	if (rc < 0)
		return sbx_fail_buf(err, errlen, rc, "seccomp rule %s: %s", row->name, strerror(-rc));
	return 0;
}

static void release_filter(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}

int sbx_seccomp_build(int deny_errno, scmp_filter_ctx *out, char *err, size_t errlen)
{
	__attribute__((cleanup(release_filter))) scmp_filter_ctx compat = NULL;
	uint32_t deny_action;
	int rc;

	if (deny_errno <= 0 || deny_errno > 4095)
		return sbx_fail_buf(err, errlen, -EINVAL, "seccomp: bad deny errno %d", deny_errno);
	deny_action = SCMP_ACT_ERRNO((uint16_t)deny_errno);
	if (!(*out = seccomp_init(deny_action)))
		return sbx_fail_buf(err, errlen, -ENOMEM, "seccomp_init failed");
	if ((rc = set_attributes(*out, err, errlen)) < 0)
		return rc;
	for (size_t i = 0; i < sbx_syscall_table_len; i++) {
		int nr = sbx_syscall_row_nr(&sbx_syscall_table[i]);

		if (nr >= 0 && (rc = add_row(*out, &sbx_syscall_table[i], nr, err, errlen)) < 0)
			return rc;
	}
	if ((rc = compat_filter(deny_action, &compat, err, errlen)) < 0)
		return rc;
	if (compat) {
		if ((rc = seccomp_merge(*out, compat)) < 0)
			return sbx_fail_buf(err, errlen, rc, "seccomp: add the 32-bit tables: %s",
			                    strerror(-rc));
		compat = NULL;     /* merged: the destination owns it now */
	}
	return 0;
}
