/* Starting and stopping the helper programs the library runs beside a workspace (the sandbox
 * init, bubblewrap, the network proxy): posix_spawn with chosen fds, a memfd to hand them
 * data, and a stop that waits and then kills. Never fork: the library lives in
 * multi-threaded hosts. */
#ifndef SBX_UTIL_LAUNCH_H
#define SBX_UTIL_LAUNCH_H

#include <stddef.h>
#include <sys/types.h>

/* posix_spawn of path with fds[i] as fd 3 + i (an entry of -1 leaves that number closed),
 * stdin and stdout on /dev/null, stderr on err_fd (or /dev/null), a clean signal state, its
 * own session and a minimal PATH. Returns 0 or an errno value. */
int sbx_spawn_with_fds(const char *path, const char *const *argv, const int *fds, size_t nfds,
                       int err_fd, pid_t *pid);

/* A close-on-exec memfd named name holding data, positioned at 0; or a negative SBX_E code
 * (with the message recorded). */
int sbx_memfd_with(const char *name, const void *data, size_t len);

/* Waits up to timeout_ms for pid to exit on its own (a pidfd says when), then SIGKILLs it,
 * and reaps it. */
void sbx_reap_or_kill(pid_t pid, int timeout_ms);
/* The same, keeping the wait status. */
void sbx_reap_or_kill_status(pid_t pid, int timeout_ms, int *status);

/* The same for a process known by a pidfd, which need not be our child (a pre-started
 * sandbox's): waits up to timeout_ms, SIGKILLs it if it still runs, reaps it if it is our
 * child after all (a subreaper inherits orphans), and closes pidfd. */
void sbx_pidfd_wait_or_kill(int pidfd, int timeout_ms);

#endif
