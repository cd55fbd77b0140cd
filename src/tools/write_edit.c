/* Write and Edit: change a file the model has read, atomically, and show the change as a
 * unified diff. Texts of agentscope-workspace.md §3.3-3.4, with its defects fixed:
 *  - the read state is the workspace's own stat of the file (never the host's view of a path
 *    that may exist only in a container), and it is refreshed after our own write, so Edit
 *    after Edit works without a re-Read;
 *  - a CRLF file stays CRLF after an Edit.
 *
 * These tools write on the host side, outside the sandbox's mount rules, so they keep those
 * rules themselves: the library's state folder and the backend's protected paths are refused,
 * judged by where a path really leads (a link "hooks -> .git/hooks" does not get around it). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gitguard.h"
#include "tools/session.h"
#include "tools/tool.h"
#include "util/cleanup.h"
#include "util/diff.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/path.h"

#define EDIT_MAX ((uint64_t)128 << 20)

static const char write_schema[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"file_path\":{\"type\":\"string\",\"description\":\"The path of the file to write: "
	"absolute, or relative to the workspace root\"},"
	"\"content\":{\"type\":\"string\",\"description\":\"The content to write to the file\"}},"
	"\"required\":[\"file_path\",\"content\"],\"additionalProperties\":false}";

static const char write_description[] =
	"Writes a file in the workspace, replacing it if it exists.\n\n"
	"- An existing file must have been read with the Read tool first, in its current state; "
	"otherwise the write is refused.\n"
	"- Missing parent directories are created. The write is atomic: readers see the old or "
	"the new content, never a mix.\n"
	"- Prefer Edit for changing part of an existing file; use Write for new files and "
	"complete rewrites.\n"
	"- The result's metadata holds the unified diff of the change.";

static const char edit_schema[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"file_path\":{\"type\":\"string\",\"description\":\"The path of the file to modify: "
	"absolute, or relative to the workspace root\"},"
	"\"old_string\":{\"type\":\"string\",\"description\":\"The text to replace\"},"
	"\"new_string\":{\"type\":\"string\",\"description\":\"The text to replace it with (must "
	"be different from old_string)\"},"
	"\"replace_all\":{\"type\":\"boolean\",\"description\":\"Replace all occurrences of "
	"old_string (default false)\"}},"
	"\"required\":[\"file_path\",\"old_string\",\"new_string\"],"
	"\"additionalProperties\":false}";

static const char edit_description[] =
	"Performs an exact string replacement in a file.\n\n"
	"- Read the file first: Edit refuses a file not read in its current state.\n"
	"- old_string must match the file exactly, whitespace and indentation included (without "
	"the line-number prefix Read adds).\n"
	"- The edit fails if old_string is not unique in the file: give more surrounding context "
	"to make it unique, or set replace_all to change every occurrence.\n"
	"- The result's metadata holds the unified diff of the change.";

/* ---- where a path really leads ---- */

static int fd_host_path(int fd, char *out, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = readlink(link, out, len - 1);
	if (n < 0)
		return -errno;
	out[n] = '\0';
	return 0;
}

/* where (a path the kernel gave for an fd) relative to root, "" for root itself; NULL when
 * outside it. A capped workspace's root is a mount of its own, which the kernel calls "/". */
static const char *path_below_root(const char *root, const char *where)
{
	size_t rl = strlen(root);

	if (rl == 1 && root[0] == '/')
		return where[0] == '/' ? where + 1 : NULL;
	if (strncmp(where, root, rl) != 0 || (where[rl] != '/' && where[rl] != '\0'))
		return NULL;
	return where[rl] ? where + rl + 1 : "";
}

/* rel with every existing directory on the way resolved (links included), as a path relative
 * to the root; the components that do not exist yet are kept as written. */
static int physical_rel(sbx_tool_ctx *ctx, const char *rel, char **out)
{
	_cleanup_free_ char *dir = strdup(rel), *tail = strdup("");
	char root[PATH_MAX], where[PATH_MAX];
	int r;

	if (!dir || !tail)
		return -SBX_ENOMEM;
	if (ctx->root_fd < 0)
		return (*out = strdup(rel)) ? 0 : -SBX_ENOMEM;
	if ((r = fd_host_path(ctx->root_fd, root, sizeof root)) < 0)
		return r;
	for (;;) {
		char *slash = strrchr(dir, '/'), *name;
		_cleanup_close_ int dfd = -1;

		if (!slash) {
			dfd = fcntl(ctx->root_fd, F_DUPFD_CLOEXEC, 3);
			name = dir;
		} else {
			*slash = '\0';
			name = slash + 1;
			dfd = sbx_path_open(ctx->root_fd, dir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
		}
		if (dfd >= 0) {
			if ((r = fd_host_path(dfd, where, sizeof where)) < 0)
				return r;
			const char *prefix = path_below_root(root, where);
			if (!prefix)
				return -SBX_EESCAPE;
			return asprintf(out, "%s%s%s%s", prefix, *prefix ? "/" : "", name, tail) < 0
			       ? -SBX_ENOMEM : 0;
		}
		if (dfd != -SBX_ENOENT && dfd != -SBX_ENOTDIR)
			return dfd;
		/* This directory does not exist yet: it will be made as written. */
		char *nt;
		if (asprintf(&nt, "/%s%s", name, tail) < 0)
			return -SBX_ENOMEM;
		free(tail);
		tail = nt;
		if (!slash)
			return -SBX_ENOENT;
	}
}

/* The git rule (gitguard.h): a tool error (returns 1) for anything inside a git dir. */
static int refuse_git(sbx_tool_ctx *ctx, const char *rel, const char *real, const char *shown,
                      sbx_tool_out *out)
{
	if (!sbx_gitguard_path_in_git_dir(ctx->root_fd, rel) &&
	    !(real && sbx_gitguard_path_in_git_dir(ctx->root_fd, real)))
		return 0;
	return sbx_tool_error(out, "Error: %s is protected: it is inside a git directory (a .git "
	                      "folder at any depth, or a folder shaped like one), and the workspace "
	                      "does not let tools change what git reads and runs (hooks, config); "
	                      "use git commands in Bash instead", shown), 1;
}

/* A tool error (returns 1) if rel may not be written by a tool; 0 if it may. */
static int refuse_unwritable(sbx_tool_ctx *ctx, const char *rel, const char *shown,
                             sbx_tool_out *out)
{
	_cleanup_free_ char *real = NULL;
	int r;

	if (ctx->ws->cfg->read_only)
		return sbx_tool_error(out, "Error: the workspace is read-only: %s cannot be written",
		                      shown), 1;
	r = physical_rel(ctx, rel, &real);
	if (r == -SBX_ENOMEM)
		return r;
	if (r == -SBX_EESCAPE)
		return sbx_tool_error(out, "Error: %s leads outside the workspace", shown), 1;
	if (r < 0 && r != -SBX_ENOENT)
		return sbx_tool_error(out, "Error: cannot resolve %s: %s", shown, strerror(-r)), 1;
	if ((r = refuse_git(ctx, rel, real, shown, out)) != 0)
		return r;
	if (sbx_tool_path_protected(ctx, rel) || (real && sbx_tool_path_protected(ctx, real)))
		return sbx_tool_error(out, "Error: %s is protected: the workspace does not allow "
		                      "changing it", shown), 1;
	return 0;
}

/* Writes the file through the directory fd the protection check was made on, so a link
 * swapped in after the check (by a command running meanwhile) cannot redirect the write. */
static int write_checked(sbx_tool_ctx *ctx, const char *rel, const char *shown, const void *data,
                         size_t len, bool mkdirs, sbx_tool_out *out)
{
	_cleanup_free_ char *name = NULL, *real = NULL;
	_cleanup_close_ int dirfd = -1;
	char root[PATH_MAX], where[PATH_MAX];
	const char *prefix;
	int r;

	if (ctx->root_fd < 0)
		return sbx_file_write(ctx->ws, rel, data, len, 0, mkdirs ? SBX_WRITE_MKDIRS : 0);
	if ((r = sbx_path_open_parent(ctx->root_fd, rel, mkdirs, &dirfd, &name)) < 0)
		return r;
	if ((r = fd_host_path(ctx->root_fd, root, sizeof root)) < 0 ||
	    (r = fd_host_path(dirfd, where, sizeof where)) < 0)
		return sbx_fail(sbx_errno_code(r), "write %s: %s", shown, strerror(-r));
	if (!(prefix = path_below_root(root, where)))
		return sbx_fail(-SBX_EESCAPE, "write %s: leads outside the workspace", shown);
	if (asprintf(&real, "%s%s%s", prefix, *prefix ? "/" : "", name) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if (sbx_tool_path_protected(ctx, real))
		return sbx_tool_error(out, "Error: %s is protected: the workspace does not allow "
		                      "changing it", shown), 1;
	/* The directory the write lands in, as it is now (a command may have made it a git dir
	 * since the first check). */
	if ((r = refuse_git(ctx, real, NULL, shown, out)) != 0)
		return r;
	if (sbx_gitguard_dir_is_git(dirfd))
		return sbx_tool_error(out, "Error: %s is protected: it is inside a git directory (a "
		                      "folder shaped like one), and the workspace does not let tools "
		                      "change what git reads and runs", shown), 1;
	return sbx_workspace_write_atomic(ctx->ws, dirfd, name, data, len, 0, 0);
}

/* ---- the read-before-write rule ---- */

static bool same_state(const struct sbx_tool_read *seen, const sbx_stat *now)
{
	return seen->size == now->file_size && seen->mtime_sec == now->mtime_sec &&
	       seen->mtime_nsec == now->mtime_nsec;
}

static int refresh_read_state(sbx_tool_ctx *ctx, const char *rel)
{
	sbx_stat st = { .size = sizeof st };
	int r = sbx_file_stat(ctx->ws, rel, &st);

	return r < 0 ? r : sbx_tool_session_note_read(ctx->session, rel, &st);
}

static void add_diff(sbx_tool_out *out, const char *rel, bool created, const char *old,
                     size_t old_len, const char *new, size_t new_len)
{
	_cleanup_free_ char *from = NULL, *to = NULL;
	sbx_buf d = { 0 };

	if (asprintf(&from, created ? "/dev/null" : "a/%s", rel) < 0 || asprintf(&to, "b/%s", rel) < 0) {
		out->meta.oom = true;
		return;
	}
	sbx_diff_unified(&d, from, old, old_len, to, new, new_len);
	sbx_tool_meta_str(out, "diff", d.data ? d.data : "", d.len);
	out->meta.oom |= d.oom;
	sbx_buf_free(&d);
}

/* ---- Write ---- */

static size_t count_lines(const char *s)
{
	size_t n = 1;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static int write_run(sbx_tool_ctx *ctx, const sbx_json *args, sbx_tool_out *out)
{
	const char *path = sbx_tool_arg_str(args, "file_path", "");
	const sbx_json *content = sbx_json_get(args, "content");
	_cleanup_free_ char *rel = NULL, *shown = NULL, *old = NULL;
	sbx_stat st = { .size = sizeof st };
	size_t old_len = 0;
	bool exists;
	int r;

	if ((r = sbx_tool_resolve_path(ctx, "file_path", path, &rel, out)) != 0)
		return r < 0 ? r : 0;
	if (!(shown = sbx_tool_display_path(ctx, rel)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if (!*rel)
		return sbx_tool_error(out, "Error: Path is a directory, not a file: %s", shown);
	if ((r = refuse_unwritable(ctx, rel, shown, out)) != 0)
		return r < 0 ? r : 0;
	r = sbx_file_stat(ctx->ws, rel, &st);
	exists = r == 0;
	if (r < 0 && r != -SBX_ENOENT)
		return r == -SBX_ENOMEM ? r : sbx_tool_error(out, "Error writing file: %s",
		                                              sbx_last_error());
	if (exists && st.type == SBX_FILE_DIRECTORY)
		return sbx_tool_error(out, "Error: Path is a directory, not a file: %s", shown);
	if (exists) {
		const struct sbx_tool_read *seen = sbx_tool_session_read_of(ctx->session, rel);

		if (!seen)
			return sbx_tool_error(out, "Error: File %s exists but has not been read yet. You "
			                      "must read the file first before writing to it.", shown);
		if (!same_state(seen, &st))
			return sbx_tool_error(out, "Error: File %s has been modified since it was last "
			                      "read. Read it again before writing to it.", shown);
		if (st.type == SBX_FILE_REGULAR && sbx_file_read(ctx->ws, rel, &old, &old_len) < 0)
			old_len = 0;
	}
	r = write_checked(ctx, rel, shown, content->str, content->len, true, out);
	if (r != 0)
		return r == -SBX_ENOMEM ? r : r > 0 ? 0 : sbx_tool_error(out, "Error writing file: %s",
		                                                          sbx_last_error());
	if ((r = refresh_read_state(ctx, rel)) < 0)
		return r;
	sbx_buf_printf(&out->text, "The file %s has been written successfully (%zu lines).", shown,
	               count_lines(content->str));
	add_diff(out, rel, !exists, old ? old : "", old_len, content->str, content->len);
	sbx_tool_meta_str(out, "file_path", shown, strlen(shown));
	sbx_tool_meta_bool(out, "created", !exists);
	return 0;
}

const sbx_tool_def sbx_tool_write = {
	.name = "Write",
	.description = write_description,
	.input_schema = write_schema,
	.cls = "write",
	.run = write_run,
};

/* ---- Edit ---- */

static size_t count_occurrences(const char *hay, size_t hay_len, const char *needle, size_t n)
{
	size_t count = 0;

	for (const char *p = hay; (p = memmem(p, hay_len - (size_t)(p - hay), needle, n)); p += n)
		count++;
	return count;
}

/* A file whose every newline is CRLF: edited as LF text and written back as CRLF. */
static bool is_crlf_text(const char *s, size_t len)
{
	bool any = false;

	for (size_t i = 0; i < len; i++)
		if (s[i] == '\n') {
			if (i == 0 || s[i - 1] != '\r')
				return false;
			any = true;
		}
	return any;
}

/* CRLF <-> LF conversion of line ends. */
static char *convert_line_ends(const char *s, size_t len, bool to_crlf, size_t *out_len)
{
	char *o = malloc(len * 2 + 1);
	size_t j = 0;

	if (!o)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		if (!to_crlf && s[i] == '\r' && i + 1 < len && s[i + 1] == '\n')
			continue;
		if (to_crlf && s[i] == '\n')
			o[j++] = '\r';
		o[j++] = s[i];
	}
	o[j] = '\0';
	*out_len = j;
	return o;
}

static char *replace(const char *s, size_t len, const char *from, size_t flen, const char *to,
                     size_t tlen, bool all, size_t *out_len)
{
	sbx_buf b = { 0 };
	const char *p = s, *hit;

	while ((hit = memmem(p, len - (size_t)(p - s), from, flen))) {
		sbx_buf_append(&b, p, (size_t)(hit - p));
		sbx_buf_append(&b, to, tlen);
		p = hit + flen;
		if (!all)
			break;
	}
	sbx_buf_append(&b, p, len - (size_t)(p - s));
	return sbx_buf_steal(&b, out_len);
}

struct edit_req {
	const char *shown;
	const sbx_json *old_s, *new_s;
	bool all;
};

/* The checks of the reference, in its order, before anything is read. */
static int edit_preconditions(sbx_tool_ctx *ctx, const char *rel, const struct edit_req *e,
                              sbx_stat *st, sbx_tool_out *out)
{
	const struct sbx_tool_read *seen;
	int r = sbx_file_stat(ctx->ws, rel, st);

	if (r == -SBX_ENOENT || r == -SBX_ENOTDIR)
		return sbx_tool_error(out, "Error: File not found: %s", e->shown), 1;
	if (r < 0)
		return r == -SBX_ENOMEM ? r : (sbx_tool_error(out, "Error: %s", sbx_last_error()), 1);
	if (st->type == SBX_FILE_DIRECTORY)
		return sbx_tool_error(out, "Error: Path is a directory, not a file: %s", e->shown), 1;
	if (e->old_s->len == e->new_s->len && !memcmp(e->old_s->str, e->new_s->str, e->old_s->len))
		return sbx_tool_error(out, "Error: old_string and new_string are identical. No "
		                      "changes to make."), 1;
	if (e->old_s->len == 0)
		return sbx_tool_error(out, "Error: old_string must not be empty; use Write to create "
		                      "or rewrite a file"), 1;
	if (!(seen = sbx_tool_session_read_of(ctx->session, rel)))
		return sbx_tool_error(out, "Error: To edit a file, you must first read it using the "
		                      "Read tool."), 1;
	if (!same_state(seen, st))
		return sbx_tool_error(out, "Error: File %s has been modified since it was last read. "
		                      "Read it again before editing it.", e->shown), 1;
	if (st->file_size > EDIT_MAX)
		return sbx_tool_error(out, "Error: %s is too large to edit (%llu bytes)", e->shown,
		                      (unsigned long long)st->file_size), 1;
	return 0;
}

static int apply_edit(const struct edit_req *e, const char *text, size_t len, char **result,
                      size_t *result_len, size_t *count, sbx_tool_out *out)
{
	bool crlf = is_crlf_text(text, len);
	_cleanup_free_ char *lf = NULL, *edited = NULL;
	const char *work = text;
	size_t work_len = len, edited_len;

	if (crlf && !memchr(e->old_s->str, '\r', e->old_s->len)) {
		if (!(lf = convert_line_ends(text, len, false, &work_len)))
			return -SBX_ENOMEM;
		work = lf;
	} else {
		crlf = false;
	}
	*count = count_occurrences(work, work_len, e->old_s->str, e->old_s->len);
	if (*count == 0)
		return sbx_tool_error(out, "Error: old_string not found in %s", e->shown), 1;
	if (*count > 1 && !e->all)
		return sbx_tool_error(out, "Error: old_string appears %zu times in %s. Set "
		                      "replace_all=true to replace all occurrences, or make old_string "
		                      "more specific.", *count, e->shown), 1;
	edited = replace(work, work_len, e->old_s->str, e->old_s->len, e->new_s->str,
	                 e->new_s->len, e->all, &edited_len);
	if (!edited)
		return -SBX_ENOMEM;
	if (crlf) {
		*result = convert_line_ends(edited, edited_len, true, result_len);
		return *result ? 0 : -SBX_ENOMEM;
	}
	*result = SBX_TAKE_PTR(edited);
	*result_len = edited_len;
	return 0;
}

static int edit_run(sbx_tool_ctx *ctx, const sbx_json *args, sbx_tool_out *out)
{
	const char *path = sbx_tool_arg_str(args, "file_path", "");
	struct edit_req e = {
		.old_s = sbx_json_get(args, "old_string"), .new_s = sbx_json_get(args, "new_string"),
		.all = sbx_tool_arg_bool(args, "replace_all", false),
	};
	_cleanup_free_ char *rel = NULL, *shown = NULL, *text = NULL, *result = NULL;
	sbx_stat st = { .size = sizeof st };
	size_t len, result_len, count;
	int r;

	if ((r = sbx_tool_resolve_path(ctx, "file_path", path, &rel, out)) != 0)
		return r < 0 ? r : 0;
	if (!(shown = sbx_tool_display_path(ctx, rel)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	e.shown = shown;
	if (!*rel)
		return sbx_tool_error(out, "Error: Path is a directory, not a file: %s", shown);
	if ((r = edit_preconditions(ctx, rel, &e, &st, out)) != 0 ||
	    (r = refuse_unwritable(ctx, rel, shown, out)) != 0)
		return r < 0 ? r : 0;
	if ((r = sbx_file_read(ctx->ws, rel, &text, &len)) < 0)
		return r == -SBX_ENOMEM ? r : sbx_tool_error(out, "Error reading file: %s",
		                                              sbx_last_error());
	r = apply_edit(&e, text, len, &result, &result_len, &count, out);
	if (r != 0)
		return r < 0 ? sbx_fail(r, "out of memory") : 0;
	if ((r = write_checked(ctx, rel, shown, result, result_len, false, out)) != 0)
		return r == -SBX_ENOMEM ? r : r > 0 ? 0 : sbx_tool_error(out, "Error writing file: %s",
		                                                          sbx_last_error());
	if ((r = refresh_read_state(ctx, rel)) < 0)
		return r;
	if (count == 1)
		sbx_buf_printf(&out->text, "Successfully replaced 1 occurrence in %s", shown);
	else
		sbx_buf_printf(&out->text, "Successfully replaced all %zu occurrences in %s", count,
		               shown);
	add_diff(out, rel, false, text, len, result, result_len);
	sbx_tool_meta_str(out, "file_path", shown, strlen(shown));
	sbx_tool_meta_int(out, "occurrences", (int64_t)count);
	return 0;
}

const sbx_tool_def sbx_tool_edit = {
	.name = "Edit",
	.description = edit_description,
	.input_schema = edit_schema,
	.cls = "write",
	.run = edit_run,
};
