/* Detached sandboxes, host side: a sandbox that outlives the process that started it, reached
 * by later host processes through a Unix socket in the workspace's state folder
 * (<workdir>/.agentsbx/run/sock). The init's half is helpers/init/listen.c; sandbox.c decides
 * between attaching and launching with these. */
#ifndef SBX_UTIL_SANDBOX_ATTACH_H
#define SBX_UTIL_SANDBOX_ATTACH_H

#include <stdbool.h>
#include <sys/types.h>

#include "proto/init_proto.h"
#include "util/hostlock.h"

/* Opens <workdir>/.agentsbx/run (root_fd: an fd of the workdir), creating it when create.
 * Refused unless it is a real directory (no symlink), ours, and closed to others (0700).
 * -SBX_ENOENT when absent and !create. */
int sbx_attach_open_run_dir(int root_fd, bool create, int *run_fd);

/* The run directory's lock (a host lock, util/hostlock.h: no command inside can hold it),
 * held while one process decides between attaching and launching, or stops the sandbox:
 * two processes never start two sandboxes. Waits 30 s at most for another holder. Release
 * it with sbx_hostlock_release (or hold it in a _cleanup_hostlock_ variable). */
int sbx_attach_lock(int run_fd, int *lock_fd);

/* Connects to the running sandbox (as root: whatever unprivileged uid it runs as, see
 * attach.c). 0: *fd is a channel spoken to as the one the init was
 * started with, *ready its READY message, *init_pid the init's pid (host view). -SBX_ENOENT
 * when none runs (no socket, or nobody listens). */
int sbx_attach_connect(int run_fd, const char *who, struct sbx_init_ready *ready,
                       pid_t *init_pid, int *fd);

/* The same for a server that runs as server_uid (a docker container's user). */
int sbx_attach_connect_as(int run_fd, const char *who, uid_t server_uid,
                          struct sbx_init_ready *ready, pid_t *init_pid, int *fd);

/* After READY from an init started with --detached: binds a new socket in the run directory
 * (0600), hands it to the init over ctl and waits until the init listens. */
int sbx_attach_hand_listener(int run_fd, int ctl, const char *who);

/* Asks the sandbox behind an attached channel to stop and waits until its processes are
 * gone (killing it after a grace period). Closes fd. */
int sbx_attach_shutdown(int fd, pid_t init_pid, const struct sbx_init_ready *ready,
                        const char *who);

/* Stops the detached sandbox of a workspace directory, if one runs: under the lock, connect,
 * shutdown, remove the socket, and the cgroup named after id (when it had one). 0 also when
 * none ran; *stopped says whether one did (may be NULL). */
int sbx_sandbox_destroy_detached(const char *workdir, const char *id, bool *stopped);

/* Does a detached sandbox run for this workspace directory? (A connect, no lock.) */
bool sbx_sandbox_detached_running(const char *workdir);

#endif
