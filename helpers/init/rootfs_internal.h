/* The parts sbx_rootfs_build (rootfs.c) delegates: /dev and /proc (rootfs_devproc.c) and the
 * protected paths inside the workspace (protect.c). All run before pivot_root, with basefd
 * open on the new root's tmpfs, and return 0 or a negative errno with err filled. */
#ifndef SBX_INIT_ROOTFS_INTERNAL_H
#define SBX_INIT_ROOTFS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* null, zero, full, random, urandom, tty. */
#define SBX_DEV_NODES 6

/* Opens the host's device nodes (O_PATH|O_NOFOLLOW) and checks each is the character device
 * it should be, so that a planted symlink or a look-alike node is never bound into the
 * sandbox (runc CVE-2025-31133, crun CVE-2026-88264). fds[0] is /dev/null. */
int sbx_dev_pin_nodes(int fds[SBX_DEV_NODES], char *err, size_t errlen);

/* A fresh /dev: tmpfs with the pinned nodes bound in, a new devpts instance, /dev/shm and the
 * fd/stdin/stdout/stderr links. rootfs.c seals it read-only at the end of the build. */
int sbx_dev_mount(int basefd, const int fds[SBX_DEV_NODES], char *err, size_t errlen);

/* A new proc for the sandbox's PID namespace, with the kernel's knobs (/proc/sys and friends)
 * read-only and the files that leak host state masked with dev_null_fd. */
int sbx_proc_mount(int basefd, int dev_null_fd, char *err, size_t errlen);

/* Makes each of paths (relative to the workspace; NULL-terminated) read-only where it exists
 * and impossible to create where it is missing; see protect.c. */
int sbx_protect_paths(int basefd, const char *const *paths, char *err, size_t errlen);

/* rootfs_layout.c: the standard places besides the system directories. make_dirs makes the
 * empty read-only ones (/home, /root, /srv, /mnt, /var, /var/lib) in the root being built;
 * mount_scratch puts /run, /var/tmp and /var/cache beneath rootfd, three directories of one
 * tmpfs of bytes (0: uncapped) mounted first at a temporary point in stagefd (writable) and
 * detached from it again. A place whose mount point is missing and cannot be made (a
 * caller's read-only rootfs) is left out. */
int sbx_layout_make_dirs(int basefd, char *err, size_t errlen);
int sbx_layout_mount_scratch(int stagefd, int rootfd, uint64_t bytes, char *err,
                             size_t errlen);
/* Binds the finished /workspace beneath rootfd (recursively) at view, an absolute path,
 * read-only when readonly: workdir_mount "host". */
int sbx_layout_workspace_view(int rootfd, const char *view, bool readonly, char *err,
                              size_t errlen);

#endif
