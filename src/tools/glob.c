/* The Glob tool: files whose path below a base directory matches a pattern, newest first.
 *
 * Unlike the reference (AgentScope's helper) it understands braces and classes and caps the list
 * at 100 like Claude Code. Without a path it searches the current working directory, as both
 * do: the reference's is the workdir its Bash always runs in, Claude Code's (and ours) the
 * session's, where the Bash tool's commands run now (sbx_tool_default_dir). .gitignore files are not applied (Claude Code's Glob does not either):
 * a pattern naming build output should find it. The version-control folders and the
 * library's state folder are skipped, symlinks are never followed or listed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "tools/search.h"
#include "tools/tool.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/glob.h"
#include "util/path.h"

#define GLOB_MAX_RESULTS 100
#define GLOB_TIMEOUT_MS 30000

typedef struct found {
	char *rel;
	int64_t mtime_ns;
} found;

typedef struct glob_run {
	const sbx_glob *glob;
	found *v;
	size_t n, cap;
} glob_run;

static bool glob_want_dir(void *ud, const sbx_walk_entry *e)
{
	const glob_run *g = ud;

	return sbx_glob_may_match_below(g->glob, e->sub, e->sub_len);
}

static int glob_on_file(void *ud, const sbx_walk_entry *e)
{
	glob_run *g = ud;
	struct stat st;

	if (!sbx_glob_match(g->glob, e->sub, e->sub_len))
		return 0;
	if (fstatat(e->dirfd, e->name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
		return 0;
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 64;
		found *v = reallocarray(g->v, cap, sizeof *v);
		if (!v)
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		g->v = v;
		g->cap = cap;
	}
	g->v[g->n].rel = strndup(e->rel, e->rel_len);
	if (!g->v[g->n].rel)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	g->v[g->n++].mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	return 0;
}

static int newest_first(const void *a, const void *b)
{
	const found *x = a, *y = b;

	if (x->mtime_ns != y->mtime_ns)
		return x->mtime_ns > y->mtime_ns ? -1 : 1;
	return strcmp(x->rel, y->rel);
}

static void glob_run_free(glob_run *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->v[i].rel);
	free(g->v);
}

static bool has_dotdot(const char *p)
{
	for (const char *c = p; (c = strstr(c, "..")); c += 2)
		if ((c == p || c[-1] == '/') && (c[2] == '\0' || c[2] == '/'))
			return true;
	return false;
}

/* The pattern relative to base. An absolute pattern must lie under the root view, and under
 * base when the model named one. Returns 1 after writing a tool error. */
static int relative_pattern(sbx_tool_ctx *ctx, const char *pattern, const char *base,
                            bool base_given, char **out, sbx_tool_out *res)
{
	_cleanup_free_ char *rel = NULL;
	size_t bl = strlen(base);
	int r;

	*out = NULL;
	if (has_dotdot(pattern))
		return sbx_tool_error(res, "Error: pattern must not contain '..' components: %s",
		                      pattern), 1;
	if (pattern[0] != '/') {
		*out = strdup(pattern);
		return *out ? 0 : -SBX_ENOMEM;
	}
	r = sbx_path_relative_in(ctx->root_view, ctx->host_view, pattern, "pattern", &rel);
	if (r == -SBX_ENOMEM)
		return r;
	if (r < 0)
		return sbx_tool_error(res, "Error: %s", sbx_last_error()), 1;
	if (!bl) {
		*out = SBX_TAKE_PTR(rel);
		return 0;
	}
	if (strncmp(rel, base, bl) != 0 || (rel[bl] != '/' && rel[bl] != '\0'))
		return sbx_tool_error(res, "Error: pattern %s is not under path %s", pattern,
		                      base_given ? base : "(the workspace root)"), 1;
	*out = strdup(rel + bl + (rel[bl] == '/'));
	return *out ? 0 : -SBX_ENOMEM;
}

/* Directories the walk could not read or did not enter: the list may lack files there. */
static void print_gaps(const sbx_walk *w, sbx_tool_out *out)
{
	if (w->dirs_unreadable)
		sbx_buf_printf(&out->text, "\n\n(%zu directory(ies) could not be read; files in them "
		               "are missing.)", w->dirs_unreadable);
	if (w->dirs_too_deep)
		sbx_buf_printf(&out->text, "\n\n(%zu directory(ies) nested deeper than %d levels, or "
		               "with paths over 4095 bytes, were not searched.)", w->dirs_too_deep, SBX_WALK_MAX_DEPTH);
}

static int print_results(sbx_tool_ctx *ctx, glob_run *g, const char *pattern,
                         const sbx_walk *w, sbx_tool_out *out)
{
	size_t shown = g->n < GLOB_MAX_RESULTS ? g->n : GLOB_MAX_RESULTS;
	bool timed_out = w->timed_out;

	if (!g->n && !timed_out) {
		sbx_buf_printf(&out->text, "No files found matching pattern: %s", pattern);
	} else {
		qsort(g->v, g->n, sizeof *g->v, newest_first);
		for (size_t i = 0; i < shown; i++) {
			_cleanup_free_ char *shown_path = sbx_tool_display_path(ctx, g->v[i].rel);
			if (!shown_path)
				return sbx_fail(-SBX_ENOMEM, "out of memory");
			sbx_buf_printf(&out->text, "%s%s", i ? "\n" : "", shown_path);
		}
		if (g->n > GLOB_MAX_RESULTS)
			sbx_buf_printf(&out->text, "\n(Results are truncated: showing the first %d of %zu "
			               "matches. Use a more specific path or pattern.)",
			               GLOB_MAX_RESULTS, g->n);
		if (timed_out)
			sbx_buf_printf(&out->text, "%s(The search stopped after %d seconds; the list is "
			               "incomplete. Use a more specific path or pattern.)",
			               g->n ? "\n" : "", GLOB_TIMEOUT_MS / 1000);
	}
	print_gaps(w, out);
	sbx_tool_meta_int(out, "count", (int64_t)shown);
	sbx_tool_meta_int(out, "total", (int64_t)g->n);
	sbx_tool_meta_bool(out, "truncated", g->n > GLOB_MAX_RESULTS || timed_out);
	sbx_tool_meta_bool(out, "complete", !timed_out && !w->dirs_unreadable &&
	                                    !w->dirs_too_deep);
	sbx_tool_meta_int(out, "unreadable_dirs", (int64_t)w->dirs_unreadable);
	sbx_tool_meta_int(out, "too_deep_dirs", (int64_t)w->dirs_too_deep);
	return 0;
}

/* The walk ran out of file descriptors (Glob holds none of its own to give back): an error,
 * not a list that looks whole. */
static int fds_exhausted_error(const sbx_walk *w, size_t listed, sbx_tool_out *out)
{
	struct rlimit rl = { 0 };

	getrlimit(RLIMIT_NOFILE, &rl);
	return sbx_tool_error(out, "Error: Glob ran out of file descriptors (%s) after finding %zu "
	                      "files, so it cannot list the rest. The host process may open %llu "
	                      "files at once; close some or raise that limit, then try again.",
	                      strerror(w->fd_exhausted), listed, (unsigned long long)rl.rlim_cur);
}

static int glob_run_tool(sbx_tool_ctx *ctx, const sbx_json *args, sbx_tool_out *out)
{
	const char *pattern = sbx_tool_arg_str(args, "pattern", "");
	const char *path = sbx_tool_arg_str(args, "path", NULL);
	_cleanup_free_ char *base = NULL, *rel_pattern = NULL;
	sbx_glob *compiled = NULL;
	glob_run g = { 0 };
	sbx_walk w = { 0 };
	int r;

	if (ctx->root_fd < 0)
		return sbx_tool_error(out, "Error: Glob needs the workspace's files on this host, and "
		                      "this backend keeps them elsewhere. Use Bash (find) instead.");
	if (!*pattern)
		return sbx_tool_error(out, "Error: pattern must not be empty.");
	/* An absolute pattern names its own place: with no path it is taken from the root. */
	if (!(path && *path) && pattern[0] == '/')
		r = (base = strdup("")) ? 0 : sbx_fail(-SBX_ENOMEM, "out of memory");
	else
		r = sbx_tool_resolve_search_path(ctx, path, &base, out);
	if (r != 0)
		return r < 0 ? r : 0;
	r = relative_pattern(ctx, pattern, base, path && *path, &rel_pattern, out);
	if (r != 0)
		return r < 0 ? r : 0;
	r = sbx_glob_compile(rel_pattern, 0, &compiled);
	if (r == -SBX_ENOMEM)
		return r;
	if (r < 0)
		return sbx_tool_error(out, "Error: %s", sbx_last_error());

	g.glob = compiled;
	w = (sbx_walk){ .root_fd = ctx->root_fd, .base = base, .gitignore = false,
	                .deadline_ms = sbx_now_ms() + GLOB_TIMEOUT_MS, .want_dir = glob_want_dir,
	                .on_file = glob_on_file, .ud = &g };
	r = sbx_walk_run(&w);
	if (r == -SBX_ENOMEM) {
		/* nothing to add: the message is set */
	} else if (r < 0) {
		r = sbx_tool_error(out, "Directory not found: %s", path && *path ? path : ".");
	} else if (w.fd_exhausted) {
		r = fds_exhausted_error(&w, g.n, out);
	} else {
		r = print_results(ctx, &g, pattern, &w, out);
	}
	glob_run_free(&g);
	sbx_glob_free(compiled);
	return r;
}

const sbx_tool_def sbx_tool_glob = {
	.name = "Glob",
	.description =
		"Finds files by name pattern, anywhere in the workspace.\n"
		"- Searches the current working directory (where the Bash tool's commands run now) "
		"unless path names another directory\n"
		"- Supports glob patterns like \"**/*.js\", \"src/**/*.{ts,tsx}\" or \"test_[a-m]*.py\": "
		"'*' and '?' stay within one directory, '**' spans any number of directories, "
		"[...] matches one character of a set, {a,b} matches either alternative\n"
		"- The pattern is matched against the whole path below the search directory, so "
		"\"*.py\" finds only the files directly in it; use \"**/*.py\" to search every level\n"
		"- Returns absolute paths of regular files, most recently modified first, at most 100 "
		"(a note says when there were more: narrow the path or the pattern then)\n"
		"- Does not apply .gitignore; skips .git and other version-control folders and never "
		"follows symbolic links\n"
		"- Use this tool to find files by name. To search file contents use Grep. For an "
		"open-ended search that may take several rounds of globbing and grepping, batch the "
		"calls you need in one response",
	.input_schema =
		"{\"type\":\"object\","
		"\"properties\":{"
		"\"pattern\":{\"type\":\"string\",\"description\":\"The glob pattern to match files "
		"against, relative to path (e.g. \\\"**/*.c\\\"); an absolute pattern under the "
		"workspace root also works\"},"
		"\"path\":{\"type\":\"string\",\"description\":\"The directory to search in. If not "
		"specified, the current working directory will be used (where the Bash tool's "
		"commands run now; the workspace root at first). Do not pass \\\"undefined\\\" or "
		"\\\"null\\\": omit it. An absolute path under the workspace root, or a path relative "
		"to the root\"}"
		"},"
		"\"required\":[\"pattern\"],"
		"\"additionalProperties\":false}",
	.cls = "read",
	.run = glob_run_tool,
};
