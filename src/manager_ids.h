/* Workspace ids of the workspace manager (manager_ids.c): stable, safe names derived from
 * (user, agent, session) by policy, and the user key that separates users' directories. */
#ifndef SBX_MANAGER_IDS_H
#define SBX_MANAGER_IDS_H

#include <stdbool.h>

enum sbx_isolation {
	SBX_PER_AGENT,    /* one workspace per (user, agent): the default */
	SBX_PER_SESSION,  /* one per (user, agent, session) */
	SBX_PER_USER,     /* one per user, shared by their agents */
};

#define SBX_USER_KEY_LEN 16     /* hex characters */
#define SBX_NAME_MAX 47         /* a workspace name within a user's space */
/* "<user key>-<name>": at most 64 characters, a valid workspace id (config.c). */
#define SBX_MANAGED_ID_MAX (SBX_USER_KEY_LEN + 1 + SBX_NAME_MAX)

/* "per_agent" etc. → policy; false for an unknown name. */
bool sbx_isolation_parse(const char *name, enum sbx_isolation *out);
const char *sbx_isolation_name(enum sbx_isolation p);

/* Is name acceptable as a workspace name a caller chose: 1..47 of [A-Za-z0-9_-]? (No dots:
 * never ".", "..", or a hidden directory.) */
bool sbx_managed_name_valid(const char *name);

struct sbx_managed_id {
	char user_key[SBX_USER_KEY_LEN + 1];  /* hex of a hash of the user id */
	char name[SBX_NAME_MAX + 1];          /* the explicit id, or derived: "a-<hex>" etc. */
	char id[SBX_MANAGED_ID_MAX + 1];      /* user_key "-" name: the workspace's id */
};

/* Resolves what a get() names. The user id is required (non-empty) whatever the policy; an
 * explicit workspace id wins over the policy and lives in the user's own space (an id that
 * already starts with this user's key and '-' is taken as the full id). Else the name is
 * derived from the ids the policy needs (agent; agent and session), each non-empty. All ids
 * are hashed, length-prefixed, never put into paths as written. -SBX_EINVAL names what is
 * missing or unsafe. */
int sbx_managed_id_resolve(enum sbx_isolation policy, const char *user_id, const char *agent_id,
                           const char *session_id, const char *workspace_id,
                           struct sbx_managed_id *out);

/* Is id the shape of a managed id ("<16 hex>-<name>")? */
bool sbx_managed_id_valid(const char *id);

#endif
