/* No set-user-ID or set-group-ID files from a root-run sandbox (sandbox.h,
 * sbx_seccomp_refuse_setid).
 *
 * When the host is root the workspace is an idmapped mount in which the sandbox's uid 0 writes
 * as the host's uid 0 (src/util/idmap.h), or, with the host-root fallback, the sandbox is uid
 * 0 outright: what a command creates there is root's on the host. The owner of a file may
 * set its set-user-ID bit without any capability, so a command could leave a root-owned
 * setuid program in the host's workdir — harmless inside (nosuid, no_new_privs), a root
 * shell for any host user who runs it. This filter, stacked on the baseline, refuses every
 * call that can give a file S_ISUID or S_ISGID: the chmod family and the calls that create a
 * file with a mode, whenever the mode has either bit (EPERM); openat2, whose mode sits behind
 * a pointer a filter cannot read, answers ENOSYS (libc never uses it for open; its callers
 * fall back to openat). The mode is compared on exactly those two bits, which are bits the
 * kernel reads. Everything else is allowed here and left to the baseline, other
 * architectures' tables included. */
#include <errno.h>
#include <seccomp.h>
#include <string.h>
#include <sys/stat.h>

#include "util/error.h"
#include "init/sandbox.h"
#include "init/seccomp_internal.h"
#include "init/seccomp_table.h"

/* Every call that sets a file's mode from an argument, and which argument holds it. */
static const struct {
	const char *name;
	unsigned mode_arg;
} mode_calls[] = {
	{ "chmod", 1 }, { "fchmod", 1 }, { "fchmodat", 2 }, { "fchmodat2", 2 },
	{ "creat", 1 }, { "open", 2 }, { "openat", 3 }, { "mknod", 1 }, { "mknodat", 2 },
};

static int refuse_bit(scmp_filter_ctx ctx, const char *name, int nr, unsigned arg,
                      uint64_t bit, char *err, size_t errlen)
{
	const struct scmp_arg_cmp cmp = { arg, SCMP_CMP_MASKED_EQ, bit, bit };
	int rc = seccomp_rule_add_exact_array(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &cmp);

	if (rc < 0)
		return sbx_fail_buf(err, errlen, rc, "seccomp: set-id rule for %s: %s", name,
		                    strerror(-rc));
	return 0;
}

/* The number of a call on this architecture (the table knows the ones libseccomp may not),
 * or -1 where it has none. */
static int native_nr(const char *name)
{
	const struct sbx_syscall_row *row = sbx_syscall_row_find(name);

	return row ? sbx_syscall_row_nr(row) : -1;
}

int sbx_seccomp_build_setid(scmp_filter_ctx *out, char *err, size_t errlen)
{
	int nr, rc;

	if (!(*out = seccomp_init(SCMP_ACT_ALLOW)))
		return sbx_fail_buf(err, errlen, -ENOMEM, "seccomp_init failed");
	/* Another architecture's calls are the baseline's to judge (it refuses them). */
	if ((rc = seccomp_attr_set(*out, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ALLOW)) < 0)
		return sbx_fail_buf(err, errlen, rc, "seccomp: bad-arch action: %s", strerror(-rc));
	for (size_t i = 0; i < sizeof mode_calls / sizeof mode_calls[0]; i++) {
		if ((nr = native_nr(mode_calls[i].name)) < 0)
			continue;
		if ((rc = refuse_bit(*out, mode_calls[i].name, nr, mode_calls[i].mode_arg, S_ISUID,
		                     err, errlen)) < 0 ||
		    (rc = refuse_bit(*out, mode_calls[i].name, nr, mode_calls[i].mode_arg, S_ISGID,
		                     err, errlen)) < 0)
			return rc;
	}
	if ((nr = native_nr("openat2")) >= 0 &&
	    (rc = seccomp_rule_add_exact(*out, SCMP_ACT_ERRNO(ENOSYS), nr, 0)) < 0)
		return sbx_fail_buf(err, errlen, rc, "seccomp: openat2 rule: %s", strerror(-rc));
	return 0;
}
