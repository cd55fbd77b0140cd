/* What a repository's config names elsewhere in the workspace (gitguard.h): included configs
 * and a hooks path. include.path, includeIf.<condition>.path and core.hooksPath are never on
 * the allow-list, so a command cannot add one; but the user's own stay, and the file or
 * folder one names may be part of the work tree (include.path = ../.gitconfig is the usual
 * way to share a project's aliases, core.hooksPath = .githooks to share its hooks), which any
 * command can write. So:
 *  - an included file is a config of that repository like its own: checked at every check (a
 *    stat when it did not change), sanitised against the allow-list and what the file held at
 *    open, quarantined otherwise; one the strict reader refuses becomes empty;
 *  - a hooks path is a hooks folder like hooks/: at every check each entry named as one of
 *    git's hooks that the baseline did not have as it is goes to quarantine (the folder is
 *    the work tree's, and may hold other files of the user's).
 *
 * Paths are resolved as the host's git resolves them — an include relative to the directory
 * of the config that names it, a hooks path relative to the work tree (the folder holding a
 * .git) or, for any other git dir, to the git dir itself; links followed — but never out of
 * the workspace: what lies outside is the host's own, not the sandbox's to write; "~" is the
 * host user's home, outside too. Every includeIf counts, whatever its condition: the
 * condition may hold on the host. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "gitguard_int.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/path.h"

/* git follows includes 10 deep: so does the check. */
#define INCLUDE_DEPTH 10

#define KIND_INCLUDE 'I'
#define KIND_HOOKS 'H'

bool gg_is_include(const sbx_gitconfig_entry *e)
{
	return !strcmp(e->name, "path") &&
	       (!strcmp(e->section, "include") || (!strcmp(e->section, "includeif") && e->subsection));
}

/* Notes "<kind><value resolved against base>\0<grel>" for the next check. */
static void note(struct sbx_gitguard *g, char kind, const char *base, const char *grel,
                 const char *value)
{
	size_t hl = strlen(g->host_root);
	_cleanup_free_ char *path = NULL;
	sbx_buf key = { 0 };

	if (!value || !*value || value[0] == '~')
		return;
	if (value[0] == '/') {
		if (strncmp(value, g->host_root, hl) != 0 || (value[hl] != '/' && value[hl]))
			return;
		path = strdup(value[hl] ? value + hl + 1 : "");
	} else {
		path = gg_join(base, value);
	}
	if (!path)
		return;
	sbx_buf_append(&key, &kind, 1);
	sbx_buf_append(&key, path, strlen(path) + 1);
	sbx_buf_append(&key, grel, strlen(grel));
	if (key.oom || sbx_strset_add(&g->includes_found, key.data, key.len) < 0)
		g->full_next = true;       /* lost: the next check walks everything again */
	sbx_buf_free(&key);
}

void gg_note_include(struct sbx_gitguard *g, const char *config_rel, const char *grel,
                     const char *value)
{
	const char *slash = strrchr(config_rel, '/');
	_cleanup_free_ char *dir = strndup(config_rel, slash ? (size_t)(slash - config_rel) : 0);

	if (dir)
		note(g, KIND_INCLUDE, dir, grel, value);
}

void gg_note_hooks_path(struct sbx_gitguard *g, const char *grel, const char *value)
{
	const char *slash = strrchr(grel, '/');
	const char *base = slash ? slash + 1 : grel;
	_cleanup_free_ char *top = strndup(grel, slash ? (size_t)(slash - grel) : 0);

	if (!top)
		return;
	/* Hooks run at the top of the work tree, or in the git dir of a bare repository. */
	note(g, KIND_HOOKS, strcasecmp(base, ".git") == 0 ? top : grel, grel, value);
}

/* Opens path (root-relative; its links are followed, beneath the root) as a directory and
 * says where it really is. -1: missing, or outside the workspace. */
static int open_inside(struct sbx_gitguard *g, const char *path, char **rel)
{
	char saved[512];
	int fd;

	snprintf(saved, sizeof saved, "%s", sbx_last_error());
	fd = sbx_path_open(g->root_fd, path, O_RDONLY | O_DIRECTORY, 0);
	sbx_error_set(-SBX_EIO, "%s", saved);
	if (fd >= 0 && !(*rel = gg_rel_of_fd(g, fd))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static int check_included(struct sbx_gitguard *g, char *path, const char *grel)
{
	char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	_cleanup_free_ char *dir_rel = NULL;
	_cleanup_close_ int dirfd = -1;

	if (slash)
		*slash = '\0';
	if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if ((dirfd = open_inside(g, slash ? path : "", &dir_rel)) < 0)
		return 0;
	return gg_check_config_file(g, dirfd, dir_rel, name, grel, true);
}

static int check_hooks_path(struct sbx_gitguard *g, const char *path)
{
	_cleanup_free_ char *rel = NULL;
	_cleanup_close_ int dirfd = open_inside(g, path, &rel);

	return dirfd < 0 ? 0 : gg_judge_hooks_in(g, dirfd, rel, true);
}

/* One key: "<kind><path>\0<git dir>". */
static int check_one(const char *key, size_t len, void *ud)
{
	struct sbx_gitguard *g = ud;
	_cleanup_free_ char *path = strdup(key + 1);

	(void)len;
	if (!path)
		return -SBX_ENOMEM;
	return key[0] == KIND_HOOKS ? check_hooks_path(g, path)
	                            : check_included(g, path, key + strlen(key) + 1);
}

struct admit_ctx {
	struct sbx_gitguard *g;
	sbx_strset *next_round;   /* also gets the keys new to includes, or NULL */
};

static int admit(const char *key, size_t len, void *ud)
{
	struct admit_ctx *a = ud;
	int r = sbx_strset_add(&a->g->includes, key, len);

	if (r == 1 && a->next_round)
		r = sbx_strset_add(a->next_round, key, len);
	return r < 0 ? r : 0;
}

static int copy_key(const char *key, size_t len, void *ud)
{
	return sbx_strset_add(ud, key, len) < 0 ? -SBX_ENOMEM : 0;
}

int gg_check_includes(struct sbx_gitguard *g)
{
	sbx_strset this_round = { 0 };
	struct admit_ctx a = { g, NULL };
	int r = sbx_strset_each(&g->includes_found, admit, &a);

	sbx_strset_clear(&g->includes_found);
	if (r == 0)
		r = sbx_strset_each(&g->includes, copy_key, &this_round);
	/* What the checked files include in turn is checked in the next round. */
	for (int depth = 0; r == 0 && this_round.n && depth < INCLUDE_DEPTH; depth++) {
		sbx_strset next = { 0 };  /* what this round's files include anew */

		r = sbx_strset_each(&this_round, check_one, g);
		sbx_strset_clear(&this_round);
		a.next_round = &next;
		if (r == 0)
			r = sbx_strset_each(&g->includes_found, admit, &a);
		sbx_strset_clear(&g->includes_found);
		this_round = next;
	}
	sbx_strset_clear(&this_round);
	return r;
}
