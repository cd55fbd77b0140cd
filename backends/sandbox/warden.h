/* The host's side of "agentsbx-init --warden" (helpers/init/warden.c): read-only binds in a
 * running sandbox, for the git guard (backend op protect_now). */
#ifndef SBX_UTIL_SANDBOX_WARDEN_H
#define SBX_UTIL_SANDBOX_WARDEN_H

#include <sys/types.h>

/* Runs the warden against the sandbox that the process of the pidfd `target` (taken over:
 * closed here, also on failure) has its mount namespace in, with paths as warden.c takes
 * them, beneath /workspace and (not NULL: workdir_mount "host") view. Waits at most 15 s.
 * Returns 0 or a negative code with the warden's words. */
int sbx_warden_bind(const char *who, int target, const char *const *paths, const char *view);

/* The first child of pid (from /proc/<pid>/task/<pid>/children), or -1. */
pid_t sbx_warden_first_child(pid_t pid);

#endif
