/* The workspace block of a system prompt (agentscope-workspace.md §2.3), followed by the
 * skills block (§7). It opens with the reference's sentence ("You have access to a ...
 * workspace at ...") and then states only what holds for this workspace, each line a fact
 * the backend or the configuration vouches for: what the root is, what commands may write,
 * the home directory, the network, the protected paths and the git rules. The reference's
 * tree of data/, skills/ and sessions/ and its house rules (a dated project folder per task,
 * scratch/, git worktrees) are left out: those folders exist only once something is offloaded
 * or a skill added (the skills block lists each skill with its folder; an offload call
 * returns its path), and the layout of a user's project is not ours to prescribe.
 * tests/integration/test_instructions.c checks every claim by running commands in the
 * workspace it describes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gitguard.h"
#include "skills.h"
#include "tools/tool.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/json.h"

/* How the prompt names the kind of workspace: the backend's own words (description, since
 * 1.6; the registry pads older tables, so it reads NULL there), else its name. */
static const char *backend_words(const sbx_backend_ops *ops)
{
	return ops->description ? ops->description : ops->name;
}

/* NAME's value in the environment every command starts with, or NULL. */
static const char *base_env_value(const sbx_workspace *ws, const char *name)
{
	size_t n = strlen(name);

	for (char **e = ws->base_env; e && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

static void put_root(sbx_buf *b, const sbx_workspace *ws, const char *root)
{
	if (ws->workdir_temporary)
		sbx_buf_printf(b, "- %s is a temporary folder made for this workspace, empty at the "
		               "start and deleted when the workspace closes.", root);
	else
		sbx_buf_printf(b, "- %s is the project you work on.", root);
	sbx_buf_puts(b, " Commands, and the Bash tool's first command, start there.\n");
	if (ws->cfg->read_only)
		sbx_buf_puts(b, "- The workspace is read-only: its files can be read but not "
		             "changed.\n");
}

/* Where commands may write, as the backend promises it (writable_paths, since 1.7). */
static void put_writable(sbx_buf *b, sbx_workspace *ws, const char *root)
{
	const char *const *places = ws->ops->writable_paths ? ws->ops->writable_paths(ws->state)
	                                                    : NULL;
	size_t shown = 0;

	if (!(ws->caps & SBX_BACKEND_CAP_ISOLATED)) {
		sbx_buf_printf(b, "- There is no sandbox: commands run directly on this machine as "
		               "its user, and can change whatever that user can, also outside %s.\n",
		               root);
		return;
	}
	if (!places)
		return;   /* the backend promises nothing: say nothing */
	if (ws->cfg->read_only && !places[0]) {
		sbx_buf_puts(b, "- Commands cannot write anywhere.\n");
		return;
	}
	sbx_buf_puts(b, "- Commands can write only in");
	if (!ws->cfg->read_only) {
		sbx_buf_printf(b, " %s", root);
		shown++;
	}
	for (size_t i = 0; places[i]; i++)
		sbx_buf_printf(b, "%s %s", shown++ ? "," : "", places[i]);
	sbx_buf_puts(b, ". Everything else is read-only, the system directories (/usr, /etc) "
	             "included: nothing can be installed into the system.\n");
}

static void put_home(sbx_buf *b, const sbx_workspace *ws)
{
	const char *home = base_env_value(ws, "HOME");

	if (home && *home)
		sbx_buf_printf(b, "- The home directory (HOME) is %s.\n", home);
}

/* The "allow" or "deny" list of the current policy, comma-separated. */
static void put_entries(sbx_buf *b, const sbx_json *net, const char *key, const char *lead)
{
	const sbx_json *list = sbx_json_get(net, key);
	size_t shown = 0;

	if (!list || list->type != SBX_JSON_ARRAY || !list->n)
		return;
	sbx_buf_puts(b, lead);
	for (size_t i = 0; i < list->n; i++)
		if (list->items[i]->type == SBX_JSON_STRING)
			sbx_buf_printf(b, "%s %s", shown++ ? "," : "", list->items[i]->str);
}

/* Mode "allowlist": the proxy commands must use and the lists it applies now (the policy
 * sbx_workspace_set_network may have replaced, read under its lock). */
static void put_allowlist(sbx_buf *b, sbx_workspace *ws)
{
	const char *proxy = base_env_value(ws, "HTTP_PROXY");
	sbx_json *net = NULL;
	char err[128];

	sbx_buf_printf(b, "- Network: only through the proxy at %s (HTTP_PROXY, HTTPS_PROXY and "
	               "ALL_PROXY point there), and only to the allowed hosts",
	               proxy ? proxy : "the HTTP_PROXY variable");
	pthread_mutex_lock(&ws->network_lock);
	if (ws->cfg->network_json)
		sbx_json_parse(ws->cfg->network_json, strlen(ws->cfg->network_json), &net, err,
		               sizeof err);
	pthread_mutex_unlock(&ws->network_lock);
	put_entries(b, net, "allow", ":");
	put_entries(b, net, "deny", "; never to:");
	sbx_json_free(net);
	sbx_buf_puts(b, ". Other connections fail.\n");
}

static void put_network(sbx_buf *b, sbx_workspace *ws)
{
	const char *mode = ws->network_mode[0] ? ws->network_mode : "none";

	if (strcmp(mode, "none") == 0)
		sbx_buf_puts(b, "- There is no network access: connections to other machines, and "
		             "to this machine's services, fail.\n");
	else if (strcmp(mode, "allowlist") == 0)
		put_allowlist(b, ws);
	else
		sbx_buf_puts(b, "- Network: the same access as this machine has.\n");
}

/* A protected path is named only when it is there: what the backends protect is what they
 * can mount over, an entry that exists (docker binds only those) or the placeholder the
 * sandbox made for a missing one (helpers/init/policy.c). A .git/hooks/ of a workspace
 * without a repository protects nothing, and a claim that it does would be false. */
static bool protection_holds(sbx_workspace *ws, const char *entry)
{
	_cleanup_free_ char *rel = strdup(entry);
	sbx_stat st = { .size = sizeof st };
	size_t n;

	if (!rel)
		return false;
	n = strlen(rel);
	while (n && rel[n - 1] == '/')
		rel[--n] = '\0';
	return sbx_file_stat_rel(ws, rel, &st) == 0;
}

/* The backend's protected paths (sbx_tool_protected_list) that hold, as commands see them. */
static void put_protected(sbx_buf *b, sbx_workspace *ws, const char *root)
{
	const char *const *list = sbx_tool_protected_list(ws);
	size_t shown = 0;

	for (size_t i = 0; list && list[i]; i++) {
		if (!protection_holds(ws, list[i]))
			continue;
		if (!shown++)
			sbx_buf_puts(b, "- These paths are protected: neither commands nor the file "
			             "tools can change, create or remove them:");
		sbx_buf_printf(b, "%s %s/%s", shown > 1 ? "," : "", root, list[i]);
	}
	if (shown)
		sbx_buf_puts(b, "\n");
}

/* Why `git config user.name X` fails in such a repository, and what works instead: the
 * global config lives in the workspace's private HOME (state.c), outside the project. */
static void put_git_identity(sbx_buf *b, sbx_workspace *ws)
{
	sbx_buf_printf(b, "- So `git config user.name`/`user.email` fail there too: set the commit "
	               "identity with %sthe GIT_AUTHOR_NAME, GIT_AUTHOR_EMAIL, GIT_COMMITTER_NAME "
	               "and GIT_COMMITTER_EMAIL environment variables.\n",
	               sbx_state_home(ws) ? "`git config --global` (kept in this workspace's "
	                                    "private HOME, not in the project) or " : "");
}

/* Exactly what the git guard does here (gitguard.h), so the model neither fights it nor
 * believes a hook it wrote will run. */
static void put_git_rule(sbx_buf *b, sbx_workspace *ws)
{
	sbx_buf_puts(b, "- Git directories (every .git folder at any depth, and folders shaped like "
	             "one: bare repositories, .git/modules/*, .git/worktrees/*) cannot be changed "
	             "with the Write and Edit tools; use git commands.\n");
	if (!ws->gitguard)
		return;
	sbx_buf_puts(b, "- Git hooks and git settings that run programs never take effect outside "
	             "the sandbox: after each command, anything a command left in a repository's "
	             "git directory that git could run (files in hooks/, config keys other than "
	             "core basics, user, remote, branch and submodule settings, such as "
	             "core.hooksPath, core.fsmonitor, core.pager, alias.*, filter.*, include.*, and "
	             "commondir or gitdir pointers leading out of the workspace) is moved to "
	             "quarantine, and the config keeps its safe keys. Ordinary git use (init, "
	             "clone, add, commit, branch, submodule, worktree) works.\n");
	if (sbx_gitguard_kernel_binds(ws)) {
		sbx_buf_puts(b, "- In repositories that existed before a command, config, "
		             "config.worktree, hooks/ and commondir are read-only and the git directory "
		             "cannot be renamed or removed (git config, new hooks and rm -rf of the "
		             "repository fail there with \"Read-only file system\" or \"Device or "
		             "resource busy\"); commits, branches, fetches and checkouts work.\n");
		put_git_identity(b, ws);
	}
}

static void put_workspace_block(sbx_buf *b, sbx_workspace *ws)
{
	const char *root = sbx_workspace_root(ws);

	sbx_buf_printf(b, "<workspace>\nYou have access to a %s workspace at %s.\n\n",
	               backend_words(ws->ops), root);
	put_root(b, ws, root);
	put_writable(b, ws, root);
	put_home(b, ws);
	put_network(b, ws);
	put_protected(b, ws, root);
	put_git_rule(b, ws);
	sbx_buf_puts(b, "</workspace>\n");
}

int sbx_workspace_instructions(sbx_workspace *ws, char **text_out)
{
	sbx_buf b = { 0 };
	int r;

	if (!text_out)
		return sbx_fail(-SBX_EINVAL, "sbx_workspace_instructions: text_out must not be NULL");
	*text_out = NULL;
	if (!ws)
		return sbx_fail(-SBX_EINVAL, "sbx_workspace_instructions: ws must not be NULL");
	put_workspace_block(&b, ws);
	if ((r = sbx_skills_render(ws, &b)) < 0) {
		sbx_buf_free(&b);
		return r;
	}
	if (b.oom) {
		sbx_buf_free(&b);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	*text_out = sbx_buf_steal(&b, NULL);
	return 0;
}
