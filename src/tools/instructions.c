/* The workspace block of a system prompt (agentscope-workspace.md §2.3), followed by the
 * skills block (§7). It tells the model where it is and what holds there, in the words the
 * reference uses, with what is true of this workspace: read-only, network, protected paths. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gitguard.h"
#include "skills.h"
#include "tools/tool.h"
#include "util/error.h"

/* How the prompt names the kind of workspace: the backend's own words (description, since
 * 1.6; the registry pads older tables, so it reads NULL there), else its name. */
static const char *backend_words(const sbx_backend_ops *ops)
{
	return ops->description ? ops->description : ops->name;
}

static void put_protected(sbx_buf *b, sbx_workspace *ws)
{
	const char *const *list = sbx_tool_protected_list(ws);

	if (!list || !list[0])
		return;
	sbx_buf_puts(b, "- These paths are protected and cannot be changed:");
	for (size_t i = 0; list[i]; i++)
		sbx_buf_printf(b, "%s %s", i ? "," : "", list[i]);
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
	const char *net = ws->cfg->network_mode ? ws->cfg->network_mode : "none";

	sbx_buf_printf(b, "<workspace>\nYou have access to a %s workspace at %s.\n\n",
	               backend_words(ws->ops), root);
	sbx_buf_printf(b, "%s/\n"
	               "├── data/       system-managed: offloaded files (images, documents)\n"
	               "├── skills/     skills: instructions, scripts and resources\n"
	               "└── sessions/   system-managed: offloaded context and tool results\n\n",
	               root);
	sbx_buf_puts(b, "Rules:\n");
	if (ws->cfg->read_only)
		sbx_buf_puts(b, "- The workspace is read-only: files can be read but not changed.\n");
	if (ws->caps & SBX_BACKEND_CAP_ISOLATED)
		sbx_buf_printf(b, "- Commands run in a sandbox: only %s and /tmp are writable, and "
		               "nothing of the host outside the workspace is visible.\n", root);
	if (strcmp(net, "none") == 0)
		sbx_buf_puts(b, "- There is no network access.\n");
	put_protected(b, ws);
	put_git_rule(b, ws);
	sbx_buf_puts(b,
		"- Keep each task in its own dated project folder with a README.md; put scratch files "
		"in scratch/.\n"
		"- Use git to track changes, with a .gitignore; use git worktree for parallel work.\n"
		"- Never hard-code secrets in files.\n"
		"</workspace>\n");
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
