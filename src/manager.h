/* Internals of the workspace manager shared with its unit tests (manager.c). */
#ifndef SBX_MANAGER_H
#define SBX_MANAGER_H

#include <stdint.h>
#include <agentsbx/agentsbx.h>

/* Replaces the manager's clock (milliseconds, monotonic) for tests of the idle TTL; NULL
 * restores the real one. Not exported. */
typedef int64_t (*sbx_manager_clock_fn)(void *userdata);
void sbx_manager_set_clock_for_testing(sbx_manager *mgr, sbx_manager_clock_fn fn, void *userdata);

/* The default base directory: $XDG_STATE_HOME/agentsbx or ~/.local/state/agentsbx (caller
 * frees). */
int sbx_manager_default_base_dir(char **out);

#endif
