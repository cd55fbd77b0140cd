/*
 * libagentsbx — the workspace manager of a multi-user agent service.
 *
 * Part of the public API; <agentsbx/agentsbx.h> includes every part. The conventions in
 * <agentsbx/common.h> (return codes, sbx_last_error, sbx_free, option structs) hold here.
 */
#ifndef AGENTSBX_MANAGER_H
#define AGENTSBX_MANAGER_H

#include <agentsbx/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------
 * Workspace manager
 *
 * Maps the conversations of a multi-user agent service to workspaces: each (user, agent,
 * session) gets the workspace its isolation policy says, opened once, shared by reference,
 * closed after an idle TTL. Several processes may share one base_dir: they coordinate with
 * file locks, and for sandbox backends the second process attaches to the sandbox the first
 * started instead of building another. All functions are thread-safe.
 * ------------------------------------------------------------------------------------- */

typedef struct sbx_manager sbx_manager;

/* Opens a manager described by a JSON object (NULL or "" means "{}"):
 *   workspace         object  the configuration of every workspace (as sbx_workspace_open
 *                             takes it) without "id" and "workdir", which the manager sets.
 *                             Sandbox backends ("ns", "bwrap") are made detached unless the
 *                             backend's object says "detached": false: the sandbox then
 *                             outlives a host process (a restart reattaches by id) and other
 *                             processes attach to it. Not detached, a workspace is held by one
 *                             process at a time (others get -SBX_EBUSY).
 *   base_dir          string  where the manager keeps its locks and records and where host-file
 *                             backends keep workspace directories:
 *                             <base_dir>/<user key>/<name>, the user key a hash of the user id,
 *                             so two users never share a directory. Created (0700) if missing.
 *                             Default $XDG_STATE_HOME/agentsbx, else ~/.local/state/agentsbx
 *   policy            string  "per_agent" (default): one workspace per (user, agent);
 *                             "per_session": per (user, agent, session); "per_user": per user
 *   ttl_s             number  idle seconds before an unheld workspace is closed (default 3600;
 *                             0 = never). Idle counts from the last get, release, exec, process
 *                             spawn or tool call on it. Since 1.6 a detached sandbox also gets it
 *                             as its own "idle_ttl_s" (unless the backend's object sets one): it
 *                             stops by itself when no process holds it, even if no manager
 *                             sweeps this base_dir again.
 *   sweep_interval_s  number  how often the sweeper looks (default 300; 0 = no sweeper thread,
 *                             only sbx_manager_gc closes)
 *   max_workspaces    integer most workspaces open in this manager at once (default 0 = no
 *                             limit); a get beyond it fails with -SBX_EBUSY
 * Release with sbx_manager_free(). */
SBX_API int sbx_manager_open(const char *config_json, sbx_manager **out);

/* Returns in *out the open workspace for a conversation, opening (or attaching to) it on
 * first use; every successful get must be paired with sbx_manager_release. user_id is always
 * required; agent_id unless the policy is per_user; session_id for per_session. Ids may hold
 * any characters (they are hashed, never used as paths); empty ones are refused
 * (-SBX_EINVAL). An explicit workspace_id (1..47 of [A-Za-z0-9_-], or the full id of one of
 * this user's workspaces) wins over the policy, within the user's own space: two users never
 * reach each other's workspace. The derived names are stable across processes and restarts.
 * sbx_workspace_id() of the result is its full id ("<user key>-<name>"), the id that
 * sbx_manager_close, the list and `agentsbx attach` take. Concurrent gets of one workspace open
 * it once; cold opens of different workspaces run in parallel. Do not close the handle with
 * sbx_workspace_close. */
SBX_API int sbx_manager_get(sbx_manager *mgr, const char *user_id, const char *agent_id,
                            const char *session_id, const char *workspace_id,
                            sbx_workspace **out);

/* Opens (or attaches to) a workspace of base_dir by its full id, with the configuration it was
 * first opened with: an operator's way in (`agentsbx attach`), bypassing the user scoping of
 * sbx_manager_get. Released with sbx_manager_release. -SBX_ENOENT for an unknown id. */
SBX_API int sbx_manager_get_by_id(sbx_manager *mgr, const char *id, sbx_workspace **out);

/* Gives back a workspace a get returned; its idle time starts now. */
SBX_API int sbx_manager_release(sbx_manager *mgr, sbx_workspace *ws);

/* Closes a workspace by full id now, and stops its detached sandbox unless another process
 * holds it. -SBX_EBUSY while a caller of this manager still holds it (release first) or
 * another process does; -SBX_ENOENT for an id base_dir does not know. The files stay. */
SBX_API int sbx_manager_close(sbx_manager *mgr, const char *id);

/* Writes a JSON array describing every workspace base_dir knows:
 *   [{"id", "user_key", "name", "backend", "workdir" (or null), "detached", "refs" (holders
 *     in this manager), "held" (open in some process), "running" (its sandbox is up),
 *     "idle_s" (seconds since last use)}, ...]
 * Released with sbx_free(). */
SBX_API int sbx_manager_list(sbx_manager *mgr, char **json_out);

/* Sweeps now: closes this manager's unheld workspaces idle beyond ttl_s, and stops the
 * detached sandboxes no process holds whose last use is older than ttl_s (left behind by a
 * process that died). *closed (may be NULL) counts both. */
SBX_API int sbx_manager_gc(sbx_manager *mgr, int *closed);

/* Stops the sweeper and closes every workspace this manager opened (detached sandboxes keep
 * running for the next process, and are stopped by a later sweep when idle). Handles still
 * held become invalid. NULL is ignored. */
SBX_API void sbx_manager_free(sbx_manager *mgr);

#ifdef __cplusplus
}
#endif

#endif /* AGENTSBX_MANAGER_H */
