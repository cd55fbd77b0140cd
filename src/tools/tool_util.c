/* What every tool uses: results, metadata, arguments, and paths as the model writes them. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tools/session.h"
#include "tools/text.h"
#include "tools/tool.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/path.h"

/* The state folder at the workspace root (helpers/init/sandbox.h has the same name for the
 * sandbox's side). */
#define STATE_DIR ".agentsbx"

int sbx_tool_error(sbx_tool_out *out, const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	out->text.len = 0;
	if (out->text.data)
		out->text.data[0] = '\0';
	if (n >= 0)
		sbx_buf_append(&out->text, msg, (size_t)n);
	else
		out->text.oom = true;
	free(msg);
	out->ok = false;
	return 0;
}

static void meta_key(sbx_tool_out *out, const char *key)
{
	if (out->meta.len)
		sbx_buf_puts(&out->meta, ",");
	sbx_buf_json_string(&out->meta, key, strlen(key));
	sbx_buf_puts(&out->meta, ":");
}

void sbx_tool_meta_str(sbx_tool_out *out, const char *key, const char *value, size_t len)
{
	meta_key(out, key);
	sbx_buf_json_string(&out->meta, value, len);
}

void sbx_tool_meta_int(sbx_tool_out *out, const char *key, int64_t value)
{
	meta_key(out, key);
	sbx_buf_printf(&out->meta, "%lld", (long long)value);
}

void sbx_tool_meta_bool(sbx_tool_out *out, const char *key, bool value)
{
	meta_key(out, key);
	sbx_buf_puts(&out->meta, value ? "true" : "false");
}

const char *sbx_tool_arg_str(const sbx_json *args, const char *key, const char *dflt)
{
	const sbx_json *v = sbx_json_get(args, key);

	return v && v->type == SBX_JSON_STRING ? v->str : dflt;
}

int64_t sbx_tool_arg_int(const sbx_json *args, const char *key, int64_t dflt)
{
	const sbx_json *v = sbx_json_get(args, key);

	return v && v->type == SBX_JSON_INT ? v->i : dflt;
}

bool sbx_tool_arg_bool(const sbx_json *args, const char *key, bool dflt)
{
	const sbx_json *v = sbx_json_get(args, key);

	return v && v->type == SBX_JSON_BOOL ? v->b : dflt;
}

/* The path as written, relative to the root and normalised: 0, 1 when it is not a usable
 * path (why says so), or -SBX_ENOMEM. */
static int literal_rel(sbx_tool_ctx *ctx, const char *field, const char *path, char **rel,
                       char *why, size_t why_len)
{
	_cleanup_free_ char *raw = NULL;
	int r;

	*rel = NULL;
	r = sbx_path_relative_in(ctx->root_view, ctx->host_view, path, field, &raw);
	if (r == 0)
		r = sbx_path_normalize(raw, field, rel);
	if (r == -SBX_ENOMEM)
		return r;
	if (r < 0)
		return snprintf(why, why_len, "%s", sbx_tool_last_error()), 1;
	return 0;
}

/* The path read as the tools print names (sbx_tool_display_path): the escapes undone.
 * Returns 1 with *rel when path is such a form (under the root as printed, if absolute), 0
 * when it is not, or -SBX_ENOMEM. */
static int escaped_rel(sbx_tool_ctx *ctx, const char *path, char **rel)
{
	_cleanup_free_ char *root = sbx_tool_display_path(ctx, ""), *raw = NULL;
	const char *rest = path;
	size_t rl;
	int r;

	*rel = NULL;
	if (!root)
		return -SBX_ENOMEM;
	rl = strlen(root);
	if (path[0] == '/') {
		if (rl == 1)
			rl = 0;   /* the root view "/" */
		if (strncmp(path, root, rl) != 0 || (path[rl] != '/' && path[rl] != '\0'))
			return 0;
		rest = path + rl;
		while (*rest == '/')
			rest++;
	}
	if ((r = sbx_tool_unescape_name(rest, strlen(rest), &raw)) <= 0)
		return r < 0 ? -SBX_ENOMEM : 0;
	r = sbx_path_normalize(raw, "path", rel);
	if (r == -SBX_ENOMEM)
		return r;
	return r == 0;
}

/* Does rel exist (a directory, when dir)? On the root fd where the files are on this host,
 * else through the backend. */
static bool exists(sbx_tool_ctx *ctx, const char *rel, bool dir)
{
	sbx_stat st = { .size = sizeof st };
	struct stat hst;

	if (!*rel)
		return true;
	if (ctx->root_fd >= 0) {
		_cleanup_close_ int fd = sbx_path_open(ctx->root_fd, rel, O_PATH | O_NOFOLLOW, 0);
		return fd >= 0 && fstat(fd, &hst) == 0 && (!dir || S_ISDIR(hst.st_mode));
	}
	return sbx_file_stat_rel(ctx->ws, rel, &st) == 0 && (!dir || st.type == SBX_FILE_DIRECTORY);
}

/* How far rel leads into what exists: 2 it exists, 1 its directory does, 0 neither. */
static int reach(sbx_tool_ctx *ctx, const char *rel)
{
	_cleanup_free_ char *dir = NULL;
	char *slash;

	if (exists(ctx, rel, false))
		return 2;
	if (!(dir = strdup(rel)) || !(slash = strrchr(dir, '/')))
		return dir ? 1 : 0;   /* a name in the root, whose directory exists */
	*slash = '\0';
	return exists(ctx, dir, true);
}

int sbx_tool_resolve_path(sbx_tool_ctx *ctx, const char *field, const char *path, char **rel,
                          sbx_tool_out *out)
{
	_cleanup_free_ char *lit = NULL, *esc = NULL;
	char why[1024];
	int r = literal_rel(ctx, field, path, &lit, why, sizeof why), e = 0, esc_reach;

	*rel = NULL;
	if (r >= 0 && strchr(path, '\\') && (e = escaped_rel(ctx, path, &esc)) < 0)
		return e;
	/* Names are printed escaped, so a path copied from the tools' output means the escaped
	 * reading: it wins where it names an existing file, or leads further into existing
	 * directories than the path as written. A new name is taken as written. */
	if (e == 1 && (r == 1 || (esc_reach = reach(ctx, esc)) == 2 || esc_reach > reach(ctx, lit))) {
		*rel = SBX_TAKE_PTR(esc);
		return 0;
	}
	if (r == 1)
		return sbx_tool_error(out, "Error: %s", why), 1;
	*rel = SBX_TAKE_PTR(lit);
	return r;
}

char *sbx_tool_display_path(const sbx_tool_ctx *ctx, const char *rel)
{
	const char *root = ctx->root_view ? ctx->root_view : "";
	size_t rl = strlen(root);
	sbx_buf b = { 0 };

	while (rl > 1 && root[rl - 1] == '/')
		rl--;
	if (!*rel || rl != 1)
		sbx_tool_escape_append(&b, root, rl);
	if (*rel) {
		sbx_buf_puts(&b, "/");
		sbx_tool_escape_append(&b, rel, strlen(rel));
	}
	return sbx_buf_steal(&b, NULL);
}

const char *sbx_tool_last_error(void)
{
	static __thread char buf[2048];
	const char *msg = sbx_last_error();
	sbx_buf b = { 0 };

	if (!sbx_tool_name_needs_escape(msg, strlen(msg)))
		return msg;
	sbx_tool_escape_append(&b, msg, strlen(msg));
	snprintf(buf, sizeof buf, "%s", b.oom || !b.data ? "(out of memory)" : b.data);
	sbx_buf_free(&b);
	return buf;
}

/* Does rel fall under the protected entry p ("dir/" covers the directory and below it; a
 * plain name covers that path exactly, and below it if it is a directory)? */
static bool covered_by(const char *rel, const char *p)
{
	size_t n = strlen(p);

	if (n && p[n - 1] == '/')
		n--;
	if (strncmp(rel, p, n) != 0)
		return false;
	return rel[n] == '\0' || rel[n] == '/';
}

const char *const *sbx_tool_protected_list(sbx_workspace *ws)
{
	const sbx_backend_ops *ops = ws->ops;

	if (!ops->protected_paths)
		return NULL;
	return ops->protected_paths(ws->state);
}

bool sbx_tool_path_protected(const sbx_tool_ctx *ctx, const char *rel)
{
	const char *const *list;

	if (covered_by(rel, STATE_DIR))
		return true;
	list = sbx_tool_protected_list(ctx->ws);
	for (size_t i = 0; list && list[i]; i++)
		if (covered_by(rel, list[i]))
			return true;
	return false;
}

const char *sbx_tool_default_dir(const sbx_tool_ctx *ctx)
{
	const char *cwd = ctx->session ? ctx->session->cwd : NULL;
	sbx_stat st = { .size = sizeof st };

	if (!cwd || !*cwd)
		return "";
	if (sbx_file_stat_rel(ctx->ws, cwd, &st) == 0 && st.type == SBX_FILE_DIRECTORY)
		return cwd;
	return "";   /* removed since: the Bash tool starts at the root again too */
}

int sbx_tool_resolve_search_path(sbx_tool_ctx *ctx, const char *path, char **rel,
                                 sbx_tool_out *out)
{
	if (path && *path)
		return sbx_tool_resolve_path(ctx, "path", path, rel, out);
	*rel = strdup(sbx_tool_default_dir(ctx));
	return *rel ? 0 : sbx_fail(-SBX_ENOMEM, "out of memory");
}
