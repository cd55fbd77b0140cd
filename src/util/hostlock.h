/* Locks between the host processes that share a workspace, kept where no sandbox reaches.
 *
 * flock(2) needs only a read-only fd, and a workspace's commands can read most of what the
 * library keeps there (the state folder is bound read-only into the sandbox; the workspace
 * itself is theirs): a lock on one of those files is a lock a command can take and hold,
 * and every host call that waits for it waits for the command. So the library locks only
 * lock files of its own, one per object (named after the object's device and inode, and a
 * tag saying what for), in a folder of this user's alone: $XDG_RUNTIME_DIR/agentsbx/locks
 * where that is the user's, for root /run/agentsbx/locks (a name in /tmp any user could make
 * first), else /tmp/agentsbx-<uid>/locks (a sandbox has a /tmp of its own, and sees none of
 * them). Nothing waits for them without a deadline.
 *
 * A forked child shares the open file a lock is held on (flock locks belong to the open file,
 * not to the process), so closing the holder's fd would not release a lock that a child
 * forked meanwhile still has a copy of: the child would hold it for its life, and every later
 * taker would wait out its deadline. The holder releases with sbx_hostlock_release, which
 * unlocks before it closes; the child's copy then holds nothing.
 *
 * A lock file nobody holds is removed by the first take of each process (sbx_hostlock_sweep),
 * under its own lock; a taker that opened it meanwhile finds it unlinked once it has it, and
 * takes a fresh one - so the folder does not keep a file for every object ever locked. */
#ifndef SBX_UTIL_HOSTLOCK_H
#define SBX_UTIL_HOSTLOCK_H

#include <stddef.h>

/* Takes the exclusive lock of the object object_fd refers to (any fd: O_PATH will do) for
 * the purpose tag ([a-z], a few letters), waiting at most timeout_ms for another holder.
 * 0 with the lock's fd in *lock_fd (release it with sbx_hostlock_release); -SBX_ETIMEDOUT when another
 * process held it all that time; another negative code when the lock folder is unusable
 * (its message says why). */
int sbx_hostlock_take(int object_fd, const char *tag, int timeout_ms, int *lock_fd);

/* Releases the lock taken as fd (if fd >= 0) and closes fd: unlocked first, so that no copy
 * of fd a forked child may have keeps holding it. */
void sbx_hostlock_release(int fd);

static inline void sbx_cleanup_hostlock_(int *fd)
{
	sbx_hostlock_release(*fd);
}
/* A scoped lock fd: released (sbx_hostlock_release) when it goes out of scope. */
#define _cleanup_hostlock_ __attribute__((cleanup(sbx_cleanup_hostlock_)))

/* The folder the lock files are in (for messages and tests), or NULL when it cannot be made;
 * valid until the next call. */
const char *sbx_hostlock_dir(void);

/* The private folder of this user's host-side state, the lock folder's parent (the choice of
 * $XDG_RUNTIME_DIR/agentsbx, /run/agentsbx, /tmp/agentsbx-<uid> described above): made 0700
 * when missing, accepted only as a directory of the euid's that nobody else may enter. 0 with
 * its fd in *out and its path in path; or a negative code, with the message. */
int sbx_runtime_dir(int *out, char *path, size_t len);

/* Removes the lock files nobody holds now (done once per process by itself; for tests). */
void sbx_hostlock_sweep(void);

#endif
