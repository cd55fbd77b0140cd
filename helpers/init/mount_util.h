/* fd-based mount primitives the sandbox root is built from (rootfs.c, rootfs_devproc.c,
 * protect.c).
 *
 * Every object is held by an O_PATH descriptor, and a mount names its source and target by
 * those descriptors (open_tree(2) and move_mount(2), or mount(2) with /proc/self/fd/N where
 * the kernel lacks them), so no path string is resolved twice: a symlink swapped in after a
 * check cannot redirect a bind (CVE-2024-42472, CVE-2021-30465). Paths inside a directory we do not
 * control (the workspace) are walked one component at a time with O_NOFOLLOW, refusing "..",
 * so a planted symlink can neither lead the walk out nor be followed at the end.
 *
 * All functions return 0 or a negative errno; only sbx_bind_at formats a message. */
#ifndef SBX_INIT_MOUNT_UTIL_H
#define SBX_INIT_MOUNT_UTIL_H

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>

/* open_tree(2) and move_mount(2) (5.2) flags, for C libraries whose headers lack them;
 * mount_util.c and quota.c both make detached trees. */
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOVE_MOUNT_T_EMPTY_PATH
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif

/* Tests set this to take the paths for kernels without open_tree (5.2), openat2 (5.6) and
 * mount_setattr (5.12) on a kernel that has them. */
extern bool sbx_mount_force_fallback;

/* Room for "/proc/self/fd/" and any int. */
struct sbx_fd_path {
	char s[32];
};

/* "/proc/self/fd/<fd>", in p. */
const char *sbx_fd_path(struct sbx_fd_path *p, int fd);

/* Is rel a relative path made only of ordinary names (no "", ".", ".." components; a trailing
 * slash is allowed)? */
bool sbx_rel_path_ok(const char *rel);

/* Opens rel beneath dirfd with O_PATH, following no symlink (openat2 with RESOLVE_BENEATH and
 * RESOLVE_NO_SYMLINKS, or one component at a time with O_NOFOLLOW where openat2 is missing):
 * -ELOOP when a symlink is met, at the end too; -ENOTDIR when a non-directory is on the way;
 * -EINVAL for "." or "..". An empty rel opens dirfd itself. */
int sbx_open_beneath(int dirfd, const char *rel, int *out);

/* Like sbx_open_beneath, creating missing directories (0755) on the way; the result is the
 * directory rel, which must be one. */
int sbx_mkdirs_beneath(int dirfd, const char *rel, int *out);

/* A mount point named name (one component) in dirfd: an existing directory or non-directory of
 * the wanted kind is reused, a missing one created (a directory, or an empty file). *out may
 * be an O_PATH fd or, for a file just created, a write-only one: either names the target. */
int sbx_mountpoint_at(int dirfd, const char *name, bool directory, int *out);

/* The id /proc/self/mountinfo gives the mount fd is on. */
int sbx_mount_id_of(int fd, int *id);

/* Recursively binds what src_fd is open on onto what dst_fd is open on: a detached copy of the
 * source's tree (open_tree, 5.2+) moved onto the target, else mount(2) through /proc. */
int sbx_bind_fds(int src_fd, int dst_fd);

/* Remounts the mount whose root top_fd is open on, and every mount below it, adding flags
 * (MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC) to the ones each already has: in a user
 * namespace the kernel refuses to clear flags it locked when the mount came from the host.
 * One recursive mount_setattr where the kernel has it; else a remount of each mount found in
 * /proc/self/mountinfo, repeating the flags statvfs reports. */
int sbx_remount_tree(int top_fd, unsigned long flags);

/* sbx_remount_tree for the mount on top of name (one component) in parent_fd. */
int sbx_remount_tree_at(int parent_fd, const char *name, unsigned long flags);

/* Remounts only the mount whose root fd is open on, with flags added to its locked ones. */
int sbx_remount_top(int fd, unsigned long flags);

/* Mounts a new filesystem (tmpfs, proc, devpts) on the directory rel beneath basefd, creating
 * it (and its parents) first. err names the step and "/rel". */
int sbx_mount_new_at(int basefd, const char *rel, const char *fstype, unsigned long flags,
                     const char *data, char *err, size_t errlen);

/* Binds src_fd at rel beneath basefd (the new root, before pivot_root), creating the missing
 * directories and a mount point of src's kind, and remounts the result with flags. err names
 * the step and "/rel". */
int sbx_bind_at(int basefd, int src_fd, const char *rel, unsigned long flags, char *err,
                size_t errlen);

/* sbx_bind_at for a detached mount tree (open_tree's OPEN_TREE_CLONE, made by the host:
 * an idmapped workspace, say): attached at rel with move_mount(2), then remounted with
 * flags. The tree fd then names the attached mount. */
int sbx_attach_at(int basefd, int tree_fd, const char *rel, unsigned long flags, char *err,
                  size_t errlen);

#endif
