/* Workspace ids for the manager. The reference implementation keyed some workspaces by the
 * agent alone (two users, one directory) and accepted an empty id (every scheduled session of
 * every user in one workspace); here every id is scoped by a hash of the user id, derived ids
 * hash length-prefixed parts (so ("ab","c") and ("a","bc") differ), and empty or unsafe input
 * is refused rather than defaulted. */
#include <stdio.h>
#include <string.h>

#include "manager_ids.h"
#include "util/digest.h"
#include "util/error.h"

#define ID_PART_MAX 4096        /* bytes of one user, agent or session id */
#define DERIVED_HEX 24          /* 96 bits: collisions are not a practical concern */

static const char *const policy_names[] = { "per_agent", "per_session", "per_user" };

bool sbx_isolation_parse(const char *name, enum sbx_isolation *out)
{
	for (size_t i = 0; i < sizeof policy_names / sizeof *policy_names; i++)
		if (!strcmp(name, policy_names[i])) {
			*out = (enum sbx_isolation)i;
			return true;
		}
	return false;
}

const char *sbx_isolation_name(enum sbx_isolation p)
{
	return policy_names[p];
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

bool sbx_managed_name_valid(const char *name)
{
	size_t n = name ? strnlen(name, SBX_NAME_MAX + 1) : 0;

	if (n == 0 || n > SBX_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!name_char(name[i]))
			return false;
	return true;
}

static bool hex_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

bool sbx_managed_id_valid(const char *id)
{
	if (!id || strnlen(id, SBX_MANAGED_ID_MAX + 1) > SBX_MANAGED_ID_MAX ||
	    strlen(id) <= SBX_USER_KEY_LEN + 1 || id[SBX_USER_KEY_LEN] != '-')
		return false;
	for (size_t i = 0; i < SBX_USER_KEY_LEN; i++)
		if (!hex_char(id[i]))
			return false;
	return sbx_managed_name_valid(id + SBX_USER_KEY_LEN + 1);
}

/* Hex of SHA-256(tag, then each part as 8-byte length + bytes), truncated to hexlen. */
static int hash_parts(const char *tag, const char *const *parts, size_t n, char *out,
                      size_t hexlen)
{
	unsigned char md[SBX_SHA256_LEN];
	sbx_sha256 ctx;

	if (hexlen > 2 * sizeof md)
		return sbx_fail(-SBX_EINVAL, "workspace manager: an id of %zu digits", hexlen);
	sbx_sha256_init(&ctx);
	sbx_sha256_update(&ctx, tag, strlen(tag) + 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char len[8];
		size_t l = strlen(parts[i]);
		for (int b = 0; b < 8; b++)
			len[b] = (unsigned char)(l >> (8 * b));
		sbx_sha256_update(&ctx, len, sizeof len);
		sbx_sha256_update(&ctx, parts[i], l);
	}
	sbx_sha256_final(&ctx, md);
	sbx_hex_of(md, hexlen / 2, out);
	out[hexlen] = '\0';
	return 0;
}

/* A caller's id part: present, not empty, not absurdly long. Any bytes: it is only hashed. */
static int check_part(const char *value, const char *what)
{
	if (!value || !value[0])
		return sbx_fail(-SBX_EINVAL, "workspace manager: %s is empty: every workspace "
		                "belongs to a named %s", what, what);
	if (strnlen(value, ID_PART_MAX + 1) > ID_PART_MAX)
		return sbx_fail(-SBX_EINVAL, "workspace manager: %s is longer than %d bytes", what,
		                ID_PART_MAX);
	return 0;
}

static int derive_name(enum sbx_isolation policy, const char *user_id, const char *agent_id,
                       const char *session_id, char *name)
{
	const char *parts[3] = { user_id, agent_id, session_id };
	int r;

	if (policy != SBX_PER_USER && (r = check_part(agent_id, "agent_id")) < 0)
		return r;
	if (policy == SBX_PER_SESSION && (r = check_part(session_id, "session_id")) < 0)
		return r;
	name[0] = policy == SBX_PER_USER ? 'u' : policy == SBX_PER_AGENT ? 'a' : 's';
	name[1] = '-';
	return hash_parts(sbx_isolation_name(policy), parts,
	                  policy == SBX_PER_USER ? 1 : policy == SBX_PER_AGENT ? 2 : 3, name + 2,
	                  DERIVED_HEX);
}

int sbx_managed_id_resolve(enum sbx_isolation policy, const char *user_id, const char *agent_id,
                           const char *session_id, const char *workspace_id,
                           struct sbx_managed_id *out)
{
	const char *parts[1] = { user_id };
	int r;

	memset(out, 0, sizeof *out);
	if ((r = check_part(user_id, "user_id")) < 0 ||
	    (r = hash_parts("user", parts, 1, out->user_key, SBX_USER_KEY_LEN)) < 0)
		return r;
	if (workspace_id) {
		/* The full id this user was handed before (sbx_workspace_id) names the same. */
		if (!strncmp(workspace_id, out->user_key, SBX_USER_KEY_LEN) &&
		    workspace_id[SBX_USER_KEY_LEN] == '-')
			workspace_id += SBX_USER_KEY_LEN + 1;
		if (!sbx_managed_name_valid(workspace_id))
			return sbx_fail(-SBX_EINVAL, "workspace manager: invalid workspace id '%.80s' "
			                "(expected 1..%d characters of [A-Za-z0-9_-])", workspace_id,
			                SBX_NAME_MAX);
		strcpy(out->name, workspace_id);
	} else if ((r = derive_name(policy, user_id, agent_id, session_id, out->name)) < 0) {
		return r;
	}
	snprintf(out->id, sizeof out->id, "%s-%s", out->user_key, out->name);
	return 0;
}
