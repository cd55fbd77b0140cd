/* The process-hardening sequence the init runs once its mounts are in place (minijail's
 * order). Each step needs the one before it:
 *  1. capabilities go first, while CAP_SETPCAP still allows locking securebits and emptying
 *     the bounding set;
 *  2. no_new_privs, so that nothing exec'd later can gain privileges back (setuid bits and
 *     file capabilities stop working) — and because Landlock and seccomp demand it from a
 *     process without CAP_SYS_ADMIN;
 *  3. Landlock, before seccomp, so that the filter need not allow its system calls;
 *  4. seccomp last, so the filter does not have to allow anything the setup itself uses
 *     (the baseline, and for a root host the set-id filter stacked on it).
 * The process stays dumpable: commands need /proc/self, and the setup holds no secrets. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "init/sandbox.h"

static int set_no_new_privs(char *err, size_t errlen)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) != 0) {
		int e = errno;

		snprintf(err, errlen, "PR_SET_NO_NEW_PRIVS: %s", strerror(e));
		return -e;
	}
	if (prctl(PR_GET_NO_NEW_PRIVS, 0L, 0L, 0L, 0L) != 1) {
		snprintf(err, errlen, "no_new_privs did not stick");
		return -EPERM;
	}
	return 0;
}

int sbx_harden_apply(const struct sbx_harden_spec *spec, char *err, size_t errlen)
{
	bool landlocked = false;
	int rc;

	if (!spec) {
		snprintf(err, errlen, "harden: no spec");
		return -EINVAL;
	}
	if ((rc = sbx_caps_drop_all(err, errlen)) < 0)
		return rc;
	if ((rc = set_no_new_privs(err, errlen)) < 0)
		return rc;
	if ((rc = sbx_landlock_apply(spec, &landlocked, err, errlen)) < 0)
		return rc;
	rc = spec->seccomp_program_fd > 2
	     ? sbx_seccomp_load_program(spec->seccomp_program_fd, err, errlen)
	     : sbx_seccomp_apply(err, errlen);
	if (rc == 0 && spec->refuse_setid)
		rc = sbx_seccomp_refuse_setid(err, errlen);
	return rc;
}
