/* What every tool uses: results, metadata, arguments, and paths as the model writes them. */
#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int sbx_tool_resolve_path(sbx_tool_ctx *ctx, const char *field, const char *path, char **rel,
                          sbx_tool_out *out)
{
	_cleanup_free_ char *raw = NULL;
	int r;

	*rel = NULL;
	r = sbx_path_relative(ctx->root_view, path, field, &raw);
	if (r == 0)
		r = sbx_path_normalize(raw, field, rel);
	if (r == -SBX_ENOMEM)
		return r;
	if (r < 0)
		return sbx_tool_error(out, "Error: %s", sbx_last_error()), 1;
	return 0;
}

char *sbx_tool_display_path(const sbx_tool_ctx *ctx, const char *rel)
{
	const char *root = ctx->root_view ? ctx->root_view : "";
	size_t rl = strlen(root);
	char *s;

	while (rl > 1 && root[rl - 1] == '/')
		rl--;
	if (!*rel)
		return strndup(root, rl);
	if (asprintf(&s, "%.*s/%s", (int)(rl == 1 ? 0 : rl), root, rel) < 0)
		return NULL;
	return s;
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

	if (ops->size < offsetof(sbx_backend_ops, protected_paths) + sizeof ops->protected_paths ||
	    !ops->protected_paths)
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
