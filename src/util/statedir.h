/* The library's state folder in a workspace (.agentsbx: the audit log, tool sessions, MCP
 * declarations and sockets, the detached sandbox's socket) and the folders inside it.
 *
 * The workspace's content belongs to the agent: a command can put a symbolic link, a FIFO or
 * anything else where the library expects its own folder. So the folder is never reached by
 * path: it is opened from the workspace's root fd one component at a time with O_NOFOLLOW,
 * and a link anywhere on the way is refused with an error naming it, before anything is made.
 * Folders are made with mkdirat on the fd of the verified parent, so nothing is ever created
 * outside the workspace. Files in it are opened the same way, without blocking, and only
 * regular files are accepted.
 *
 * These are the building blocks; the core reaches its workspace's state folder (which may
 * also be a private temporary folder, see src/state.c) through sbx_state_dir() in
 * internal.h. Backends and helpers that have only the workspace's root fd use these. */
#ifndef SBX_UTIL_STATEDIR_H
#define SBX_UTIL_STATEDIR_H

#include <stddef.h>
#include <sys/types.h>

#define SBX_STATE_DIR_NAME ".agentsbx"

/* Opens the state folder of the workspace whose root directory is root_fd (sub NULL or ""),
 * or the folder sub inside it ("mcp", "tools", "run": relative, no "." or ".." components),
 * as an O_RDONLY|O_DIRECTORY fd in *out (close-on-exec).
 * mode 0: nothing is made, a missing folder is -SBX_ENOENT (with a message).
 * mode != 0: missing folders are made, the state folder itself with 0755, those below it
 * with mode.
 * A symbolic link on the way is -SBX_ELOOP, anything else that is not a directory
 * -SBX_ENOTDIR; both messages name the entry (".agentsbx/mcp is a symbolic link to ..."). */
int sbx_statedir_open(int root_fd, const char *sub, mode_t mode, int *out);

/* The same below an already open folder (dir_fd: the state folder or one inside it);
 * shown is how messages name dir_fd (".agentsbx"). */
int sbx_statedir_open_below(int dir_fd, const char *shown, const char *sub, mode_t mode,
                            int *out);

/* Opens the file name in the folder dir_fd with flags (O_RDONLY, or O_WRONLY|O_APPEND|O_CREAT
 * and the like; O_NOFOLLOW, O_NONBLOCK, O_NOCTTY and O_CLOEXEC are added) and returns the fd,
 * or -SBX_ENOENT (no message: absent is a normal answer), or another negative code when it is
 * a link or not a regular file (a FIFO never blocks the caller: it is refused). */
int sbx_statedir_open_file(int dir_fd, const char *name, int flags, mode_t mode);

/* Reads the regular file name in dir_fd, at most max bytes (-SBX_EFBIG beyond), into *data
 * (NUL-terminated, caller frees). -SBX_ENOENT without a message when it is absent. */
int sbx_statedir_read(int dir_fd, const char *name, size_t max, char **data, size_t *len);

#endif
