/* Size caps on the sandbox's own file systems (quota.c): /tmp, /dev/shm and, with
 * limits.disk_bytes, the workspace itself. */
#ifndef SBX_INIT_QUOTA_H
#define SBX_INIT_QUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "init/sandbox.h"

/* A capped tmpfs also caps its inodes, one per this many bytes and at least the minimum:
 * each inode costs kernel memory that size= does not count, so a flood of empty files would
 * otherwise be unbounded. */
#define SBX_QUOTA_BYTES_PER_INODE 4096
#define SBX_QUOTA_MIN_INODES 1024

uint64_t sbx_quota_inodes(uint64_t bytes);

/* Mounts a tmpfs at rel beneath basefd with mode and, when bytes is not 0, size=bytes and
 * nr_inodes=sbx_quota_inodes(bytes). */
int sbx_quota_mount_tmpfs(int basefd, const char *rel, const char *mode, unsigned long flags,
                          uint64_t bytes, char *err, size_t errlen);

/* The capped workspace at "workspace" beneath basefd (the root being built): a tmpfs of bytes,
 * with host_ws_fd's state folder bound in (or, state_fd > 2, that detached mount attached), and *files_root a clone of that mount tree for the
 * host (see quota.c). Protected paths and later binds come after, and the clone has none. */
int sbx_quota_make_workspace(int basefd, int host_ws_fd, int state_fd, uint64_t bytes,
                             int *files_root, char *err, size_t errlen);

/* Inside mode: what bubblewrap could not do. */
struct sbx_quota_inside {
	uint64_t workspace_bytes;        /* 0: the workspace stays as bubblewrap bound it */
	uint64_t tmp_bytes;              /* 0: /tmp and /dev/shm stay uncapped */
	bool tmp_required;               /* the config asked for tmp_bytes: no falling back to
	                                    bubblewrap's uncapped /tmp */
	const struct sbx_bind *binds;    /* the spec's binds: those below /tmp and /workspace are
	                                    carried over onto the new file systems */
	size_t n_binds;
	const char *const *protected_paths;
	int workspace_tree;              /* > 2: the idmapped workspace the host made (the spec's
	                                    "users"), attached here with the binds that are the
	                                    init's to make (from it, or with a tree_fd); 0: none */
	bool workspace_readonly;
	int state_fd;                    /* > 2: as in sbx_quota_make_workspace; 0: none */
	const char *workspace_view;      /* not NULL: the workspace there too, and the cwd
	                                    (workdir_mount "host"); needs this namespace */
};

/* With workspace_bytes, tmp_bytes or workspace_tree: enters a new user and mount namespace (ours mapped to
 * ourselves) and mounts the capped /tmp, /dev/shm and workspace there, protecting the
 * workspace's paths again and making it the cwd. *files_root: as sbx_quota_make_workspace,
 * or -1. Neither set: does nothing. */
int sbx_quota_enter_inside(const struct sbx_quota_inside *q, int *files_root, char *err,
                           size_t errlen);

#endif
