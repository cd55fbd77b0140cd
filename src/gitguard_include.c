/* Configs that a repository's config includes (gitguard.h). include.path and
 * includeIf.<condition>.path are never on the allow-list, so a command cannot add one; but
 * one the user had at open stays, and the file it names may be a file of the work tree
 * (include.path = ../.gitconfig is the usual way to share a project's aliases), which any
 * command can write. Such a file is a config of that repository like its own: checked at
 * every check (a stat when it did not change), sanitised against the allow-list and what the
 * file held at open, quarantined otherwise; one the strict reader refuses becomes empty.
 *
 * The path is resolved as the host's git resolves it: relative to the directory of the config
 * that names it, links followed, but never out of the workspace (what lies outside is the
 * host's own, not the sandbox's to write); "~" is the host user's home, outside too. Every
 * includeIf counts, whatever its condition: the condition may hold on the host. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gitguard_int.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/path.h"

/* git follows includes 10 deep: so does the check. */
#define INCLUDE_DEPTH 10

bool gg_is_include(const sbx_gitconfig_entry *e)
{
	return !strcmp(e->name, "path") &&
	       (!strcmp(e->section, "include") || (!strcmp(e->section, "includeif") && e->subsection));
}

void gg_note_include(struct sbx_gitguard *g, const char *config_rel, const char *grel,
                     const char *value)
{
	size_t hl = strlen(g->host_root);
	const char *slash = strrchr(config_rel, '/');
	_cleanup_free_ char *dir = strndup(config_rel, slash ? (size_t)(slash - config_rel) : 0);
	_cleanup_free_ char *path = NULL;
	sbx_buf key = { 0 };

	if (!dir || !value || !*value || value[0] == '~')
		return;
	if (value[0] == '/') {
		if (strncmp(value, g->host_root, hl) != 0 || value[hl] != '/')
			return;
		path = strdup(value + hl + 1);
	} else {
		path = gg_join(dir, value);
	}
	if (!path)
		return;
	sbx_buf_append(&key, path, strlen(path) + 1);
	sbx_buf_append(&key, grel, strlen(grel));
	if (key.oom || sbx_strset_add(&g->includes_found, key.data, key.len) < 0)
		g->full_next = true;       /* lost: the next check walks everything again */
	sbx_buf_free(&key);
}

/* Checks one included file: key is "<path, root-relative as written>\0<git dir>". */
static int check_one(const char *key, size_t len, void *ud)
{
	struct sbx_gitguard *g = ud;
	const char *grel = key + strlen(key) + 1;
	_cleanup_free_ char *path = strndup(key, strlen(key));
	_cleanup_free_ char *dir_rel = NULL;
	_cleanup_close_ int dirfd = -1;
	char *slash, saved[512];
	const char *name;

	(void)len;
	if (!path)
		return -SBX_ENOMEM;
	slash = strrchr(path, '/');
	name = slash ? slash + 1 : path;
	if (slash)
		*slash = '\0';
	if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	snprintf(saved, sizeof saved, "%s", sbx_last_error());
	dirfd = sbx_path_open(g->root_fd, slash ? path : "", O_RDONLY | O_DIRECTORY, 0);
	sbx_error_set(-SBX_EIO, "%s", saved);
	if (dirfd < 0)
		return 0;                 /* missing, or outside the workspace */
	if (!(dir_rel = gg_rel_of_fd(g, dirfd)))
		return 0;
	return gg_check_config_file(g, dirfd, dir_rel, name, grel, true);
}

static int admit(const char *key, size_t len, void *ud)
{
	struct { struct sbx_gitguard *g; sbx_strset *todo; } *a = ud;
	int r = sbx_strset_add(&a->g->includes, key, len);

	if (r == 1 && a->todo)
		r = sbx_strset_add(a->todo, key, len);
	return r < 0 ? r : 0;
}

static int copy_key(const char *key, size_t len, void *ud)
{
	return sbx_strset_add(ud, key, len) < 0 ? -SBX_ENOMEM : 0;
}

int gg_check_includes(struct sbx_gitguard *g)
{
	sbx_strset todo = { 0 };
	struct { struct sbx_gitguard *g; sbx_strset *todo; } a = { g, NULL };
	int r = sbx_strset_each(&g->includes_found, admit, &a);

	sbx_strset_clear(&g->includes_found);
	if (r == 0)
		r = sbx_strset_each(&g->includes, copy_key, &todo);
	a.todo = &todo;
	for (int depth = 0; r == 0 && todo.n && depth < INCLUDE_DEPTH; depth++) {
		sbx_strset next = { 0 };

		r = sbx_strset_each(&todo, check_one, g);
		sbx_strset_clear(&todo);
		a.todo = &next;
		if (r == 0)
			r = sbx_strset_each(&g->includes_found, admit, &a);
		sbx_strset_clear(&g->includes_found);
		todo = next;
		a.todo = &todo;
	}
	sbx_strset_clear(&todo);
	return r;
}
