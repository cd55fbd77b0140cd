/* Landlock: a second wall behind the read-only mounts. Writes (creating, changing, removing,
 * renaming, truncating) are refused everywhere except beneath the writable paths and on the
 * handful of /dev character devices every program writes to. Reads stay unrestricted: the
 * mounts already decide what is visible.
 *
 * Landlock is best effort by design: the kernel tells us its ABI version and we handle every
 * write-ish right that version knows. A kernel without Landlock (ENOSYS, or EOPNOTSUPP when
 * built in but disabled at boot) is not an error — the caller learns it through *applied.
 *
 * The syscalls are called raw: glibc has no wrappers, and Debian 12's uapi header stops at
 * ABI 2, so the later constants are defined here. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#if __has_include(<linux/landlock.h>)
#include <linux/landlock.h>
#else
struct landlock_ruleset_attr {
	uint64_t handled_access_fs;
};
struct landlock_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));
#define LANDLOCK_RULE_PATH_BENEATH 1
#endif

#include "init/sandbox.h"
#include "util/cleanup.h"
#include "util/error.h"

#ifndef __NR_landlock_create_ruleset   /* the same numbers on every architecture but alpha */
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif

#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#define SBX_LL_WRITE_FILE   (1ULL << 1)
#define SBX_LL_REMOVE_DIR   (1ULL << 4)
#define SBX_LL_REMOVE_FILE  (1ULL << 5)
#define SBX_LL_MAKE_CHAR    (1ULL << 6)
#define SBX_LL_MAKE_DIR     (1ULL << 7)
#define SBX_LL_MAKE_REG     (1ULL << 8)
#define SBX_LL_MAKE_SOCK    (1ULL << 9)
#define SBX_LL_MAKE_FIFO    (1ULL << 10)
#define SBX_LL_MAKE_BLOCK   (1ULL << 11)
#define SBX_LL_MAKE_SYM     (1ULL << 12)
#define SBX_LL_REFER        (1ULL << 13)   /* ABI 2 */
#define SBX_LL_TRUNCATE     (1ULL << 14)   /* ABI 3 */

/* Rights that only make sense on a directory; the kernel refuses them in a rule on a file. */
#define SBX_LL_DIR_ONLY (SBX_LL_REMOVE_DIR | SBX_LL_REMOVE_FILE | SBX_LL_MAKE_CHAR | \
                         SBX_LL_MAKE_DIR | SBX_LL_MAKE_REG | SBX_LL_MAKE_SOCK | \
                         SBX_LL_MAKE_FIFO | SBX_LL_MAKE_BLOCK | SBX_LL_MAKE_SYM | SBX_LL_REFER)
/* What writing to an existing device node takes. */
#define SBX_LL_DEVICE_WRITE (SBX_LL_WRITE_FILE | SBX_LL_TRUNCATE)

/* Device nodes that stay writable, and where ptys live. ptmx must be opened read-write to
 * get a pty; pts/ holds the ptys themselves. Missing ones are simply not granted. */
static const char *const writable_devices[] = {
	"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts", NULL,
};

static long ll_create_ruleset(const struct landlock_ruleset_attr *attr, size_t size,
                              uint32_t flags)
{
	return syscall(__NR_landlock_create_ruleset, attr, size, flags);
}

static long ll_add_rule(int ruleset_fd, const struct landlock_path_beneath_attr *rule)
{
	return syscall(__NR_landlock_add_rule, ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, rule, 0);
}

static long ll_restrict_self(int ruleset_fd)
{
	return syscall(__NR_landlock_restrict_self, ruleset_fd, 0);
}

/* The kernel's Landlock ABI version, or 0 when it has none. */
static int landlock_abi_version(char *err, size_t errlen)
{
	long v = ll_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	if (v >= 0)
		return (int)v;
	if (errno == ENOSYS || errno == EOPNOTSUPP)
		return 0;
	return sbx_fail_buf(err, errlen, -errno, "landlock ABI probe: %s", strerror(errno));
}

/* Every write-ish right this ABI version can restrict. */
static uint64_t handled_write_rights(int abi)
{
	uint64_t rights = SBX_LL_WRITE_FILE | SBX_LL_REMOVE_DIR | SBX_LL_REMOVE_FILE |
	                  SBX_LL_MAKE_CHAR | SBX_LL_MAKE_DIR | SBX_LL_MAKE_REG |
	                  SBX_LL_MAKE_SOCK | SBX_LL_MAKE_FIFO | SBX_LL_MAKE_BLOCK |
	                  SBX_LL_MAKE_SYM;

	if (abi >= 2)
		rights |= SBX_LL_REFER;
	if (abi >= 3)
		rights |= SBX_LL_TRUNCATE;
	return rights;
}

/* Grants rights beneath path. A file (a device node, or a writable path naming a file) can
 * only carry file rights, so the directory-only ones are masked off for it. */
static int allow_beneath(int ruleset_fd, const char *path, uint64_t rights, bool missing_ok,
                         char *err, size_t errlen)
{
	_cleanup_close_ int fd = open(path, O_PATH | O_CLOEXEC);
	struct landlock_path_beneath_attr rule = {0};
	struct stat st;

	if (fd < 0 && missing_ok && (errno == ENOENT || errno == ENOTDIR))
		return 0;
	if (fd < 0)
		return sbx_fail_buf(err, errlen, -errno, "landlock: open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0)
		return sbx_fail_buf(err, errlen, -errno, "landlock: stat %s: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		rights &= ~SBX_LL_DIR_ONLY;
	rule.allowed_access = rights;
	rule.parent_fd = fd;
	if (ll_add_rule(ruleset_fd, &rule) != 0)
		return sbx_fail_buf(err, errlen, -errno, "landlock: rule for %s: %s", path,
		              strerror(errno));
	return 0;
}

static int add_rules(int ruleset_fd, const struct sbx_harden_spec *spec, uint64_t handled,
                     char *err, size_t errlen)
{
	int rc;

	for (size_t i = 0; spec->writable_paths && spec->writable_paths[i]; i++) {
		rc = allow_beneath(ruleset_fd, spec->writable_paths[i], handled, false, err, errlen);
		if (rc < 0)
			return rc;
	}
	for (size_t i = 0; writable_devices[i]; i++) {
		rc = allow_beneath(ruleset_fd, writable_devices[i], handled & SBX_LL_DEVICE_WRITE,
		                   true, err, errlen);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int sbx_landlock_apply(const struct sbx_harden_spec *spec, bool *applied, char *err,
                       size_t errlen)
{
	struct landlock_ruleset_attr attr = {0};
	_cleanup_close_ int ruleset_fd = -1;
	int abi, rc;

	*applied = false;
	if (!spec)
		return sbx_fail_buf(err, errlen, -EINVAL, "landlock: no spec");
	if (!spec->landlock)
		return 0;
	abi = landlock_abi_version(err, errlen);
	if (abi <= 0)
		return abi;
	attr.handled_access_fs = handled_write_rights(abi);
	ruleset_fd = (int)ll_create_ruleset(&attr, sizeof attr, 0);
	if (ruleset_fd < 0)
		return sbx_fail_buf(err, errlen, -errno, "landlock_create_ruleset: %s", strerror(errno));
	if ((rc = add_rules(ruleset_fd, spec, attr.handled_access_fs, err, errlen)) < 0)
		return rc;
	/* Needs no_new_privs (or CAP_SYS_ADMIN): the kernel refuses it otherwise, with EPERM. */
	if (ll_restrict_self(ruleset_fd) != 0)
		return sbx_fail_buf(err, errlen, -errno, "landlock_restrict_self: %s", strerror(errno));
	*applied = true;
	return 0;
}

/* The kernel's Landlock ABI version (0: none), for callers that report what they got. */
int sbx_landlock_abi(void)
{
	long v = ll_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	return v > 0 ? (int)v : 0;
}
