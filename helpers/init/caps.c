/* Capabilities: the sandbox's processes run with none, and cannot get any back by exec.
 *
 * The order matters. Securebits and the bounding set can only be changed while we still hold
 * CAP_SETPCAP, so they go first; clearing the effective/permitted/inheritable sets removes
 * CAP_SETPCAP itself and goes last. Every step is verified afterwards, because a cap set that
 * silently stayed non-empty is the failure this file exists to prevent (crun's
 * CVE-2022-27650 left inheritable caps behind).
 *
 * Works in both situations the init meets: real root, or the owner of a fresh user namespace
 * (full caps there) — and also under bubblewrap, which hands us an already empty bounding set
 * and no CAP_SETPCAP: then there is nothing to drop and nothing is attempted. */
#include <errno.h>
#include <fcntl.h>
#include <linux/securebits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "init/sandbox.h"
#include "util/cleanup.h"
#include "util/error.h"

/* Locks the capability rules for uid 0 off for good: exec as root grants nothing, uid changes
 * do not touch cap sets, ambient caps cannot be raised, and keep-caps stays off. */
#define SBX_SECUREBITS (SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | \
                        SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED | \
                        SECBIT_KEEP_CAPS_LOCKED | \
                        SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED)

static void cap_free_(cap_t *c)
{
	if (*c)
		cap_free(*c);
}
#define _cleanup_cap_ __attribute__((cleanup(cap_free_)))

/* The kernel's highest capability number. The kernel may know capabilities newer than the
 * libcap we were built with; those must be dropped too, so ask the kernel, and fall back to
 * libcap's idea only when /proc is not there to ask. */
static int last_cap_of_kernel(void)
{
	char buf[32] = {0};
	int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	ssize_t n = -1;
	char *end;
	long v;

	if (fd >= 0) {
		n = read(fd, buf, sizeof buf - 1);
		close(fd);
	}
	if (n <= 0)
		return (int)cap_max_bits() - 1;
	v = strtol(buf, &end, 10);
	if (end == buf || v < 0 || v > 255)
		return (int)cap_max_bits() - 1;
	return (int)v;
}

static int have_effective_cap(cap_value_t cap, bool *has, char *err, size_t errlen)
{
	_cleanup_cap_ cap_t cur = cap_get_proc();
	cap_flag_value_t v = CAP_CLEAR;

	if (!cur)
		return sbx_fail_buf(err, errlen, -errno, "cap_get_proc: %s", strerror(errno));
	if (cap_get_flag(cur, cap, CAP_EFFECTIVE, &v) != 0)
		return sbx_fail_buf(err, errlen, -errno, "cap_get_flag: %s", strerror(errno));
	*has = v == CAP_SET;
	return 0;
}

static int lock_securebits(char *err, size_t errlen)
{
	unsigned want = cap_get_secbits() | SBX_SECUREBITS;

	want &= ~(unsigned)SECBIT_KEEP_CAPS;
	if (cap_set_secbits(want) != 0)
		return sbx_fail_buf(err, errlen, -errno, "setting securebits 0x%x: %s", want,
		                strerror(errno));
	if ((cap_get_secbits() & SBX_SECUREBITS) != SBX_SECUREBITS)
		return sbx_fail_buf(err, errlen, -EPERM, "securebits 0x%x did not stick",
		                cap_get_secbits());
	return 0;
}

/* Drops each capability still in the bounding set. One already gone needs no CAP_SETPCAP;
 * one present that we cannot drop is an error, never skipped: a process could regain it by
 * exec'ing a file with file capabilities. */
static int drop_bounding_set(int last_cap, char *err, size_t errlen)
{
	for (int cap = 0; cap <= last_cap; cap++) {
		int in_bound = cap_get_bound((cap_value_t)cap);

		if (in_bound < 0)
			return sbx_fail_buf(err, errlen, -errno, "reading bounding cap %d: %s", cap,
			                strerror(errno));
		if (in_bound == 0)
			continue;
		if (cap_drop_bound((cap_value_t)cap) != 0)
			return sbx_fail_buf(err, errlen, -errno, "dropping bounding cap %d: %s", cap,
			                strerror(errno));
	}
	return 0;
}

/* Kernels before 4.3 have no ambient set (EINVAL): nothing there to clear. */
static int clear_ambient_set(char *err, size_t errlen)
{
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0L, 0L, 0L) != 0 && errno != EINVAL)
		return sbx_fail_buf(err, errlen, -errno, "clearing ambient caps: %s", strerror(errno));
	return 0;
}

static int clear_process_sets(char *err, size_t errlen)
{
	_cleanup_cap_ cap_t none = cap_init();

	if (!none || cap_clear(none) != 0)
		return sbx_fail_buf(err, errlen, -ENOMEM, "cap_init: %s", strerror(errno));
	if (cap_set_proc(none) != 0)
		return sbx_fail_buf(err, errlen, -errno, "cap_set_proc(empty): %s", strerror(errno));
	return 0;
}

static int verify_all_empty(int last_cap, char *err, size_t errlen)
{
	_cleanup_cap_ cap_t cur = cap_get_proc();
	_cleanup_cap_ cap_t none = cap_init();

	if (!cur || !none)
		return sbx_fail_buf(err, errlen, -ENOMEM, "cap_get_proc: %s", strerror(errno));
	if (cap_compare(cur, none) != 0)
		return sbx_fail_buf(err, errlen, -EPERM, "capabilities left after clearing");
	for (int cap = 0; cap <= last_cap; cap++) {
		if (cap_get_bound((cap_value_t)cap) != 0)
			return sbx_fail_buf(err, errlen, -EPERM, "cap %d left in the bounding set", cap);
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, (unsigned long)cap, 0L, 0L) > 0)
			return sbx_fail_buf(err, errlen, -EPERM, "cap %d left in the ambient set", cap);
	}
	return 0;
}

int sbx_caps_drop_all(char *err, size_t errlen)
{
	int last_cap = last_cap_of_kernel();
	bool can_setpcap = false;
	int rc;

	if ((rc = have_effective_cap(CAP_SETPCAP, &can_setpcap, err, errlen)) < 0)
		return rc;
	/* Without CAP_SETPCAP securebits cannot be set; that is bubblewrap's case, where the
	 * bounding set is already empty, so exec as uid 0 has nothing to grant anyway. */
	if (can_setpcap && (rc = lock_securebits(err, errlen)) < 0)
		return rc;
	if ((rc = drop_bounding_set(last_cap, err, errlen)) < 0)
		return rc;
	if (prctl(PR_SET_KEEPCAPS, 0L, 0L, 0L, 0L) != 0 && errno != EPERM)
		return sbx_fail_buf(err, errlen, -errno, "PR_SET_KEEPCAPS: %s", strerror(errno));
	if ((rc = clear_ambient_set(err, errlen)) < 0)
		return rc;
	if ((rc = clear_process_sets(err, errlen)) < 0)
		return rc;
	return verify_all_empty(last_cap, err, errlen);
}
