/* The file primitives of a backend whose files are not host-visible (no
 * SBX_BACKEND_CAP_HOST_FILES): a normalised root-relative path ("" = the root, no "." or
 * ".." component) handed to the backend's file ops, which do the work (files_int.h). */
#include <stdlib.h>

#include "files_int.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/path.h"

static int unsupported(const sbx_workspace *ws, const char *what)
{
	return sbx_fail(-SBX_ENOSYS, "backend '%s' does not support %s", ws->ops->name, what);
}

static int backend_ready(const sbx_workspace *ws, const char *fn)
{
	(void)ws;
	(void)fn;
	return 0;
}

/* A path with no ".", ".." or leading "/". */
static int backend_to_rel(const sbx_workspace *ws, const char *path, char **norm)
{
	_cleanup_free_ char *rel = NULL;
	int r = sbx_files_relative_path(ws, path, &rel);

	if (r < 0)
		return r;
	return sbx_path_normalize(rel, "path", norm);
}

/* The _rel functions' callers pass normalised paths, but a lexical step costs nothing. */
static int backend_from_rel(const sbx_workspace *ws, const char *rel, char **norm)
{
	(void)ws;
	return sbx_path_normalize(rel, "path", norm);
}

static int backend_read(sbx_workspace *ws, const char *rel, const char *path, size_t max,
                        char **data, size_t *len, sbx_stat *st)
{
	int r;

	if (!ws->ops->file_read)
		return unsupported(ws, "reading files");
	if (st && ws->ops->file_stat && (r = ws->ops->file_stat(ws->state, rel, st)) < 0)
		return r;
	if ((r = ws->ops->file_read(ws->state, rel, data, len)) < 0)
		return r;
	if (*len > max) {
		free(SBX_TAKE_PTR(*data));
		*len = 0;
		return sbx_fail(-SBX_EFBIG, "read '%s': file too large (more than %zu bytes)", path,
		                max);
	}
	return 0;
}

static int backend_write(sbx_workspace *ws, const char *rel, const char *path, const void *data,
                         size_t len, unsigned mode, uint32_t flags)
{
	if (!ws->ops->file_write)
		return unsupported(ws, "writing files");
	if (rel[0] == '\0')
		return sbx_fail(-SBX_EISDIR, "write '%s': is a directory (the workspace root)", path);
	return ws->ops->file_write(ws->state, rel, data, len, mode, flags);
}

static int backend_stat(sbx_workspace *ws, const char *rel, const char *path, sbx_stat *full)
{
	(void)path;
	if (!ws->ops->file_stat)
		return unsupported(ws, "stat");
	return ws->ops->file_stat(ws->state, rel, full);
}

static int backend_list(sbx_workspace *ws, const char *rel, const char *path, char **json_out)
{
	(void)path;
	if (!ws->ops->file_list)
		return unsupported(ws, "listing directories");
	return ws->ops->file_list(ws->state, rel, json_out);
}

static int backend_mkdir(sbx_workspace *ws, const char *rel, const char *path, unsigned mode)
{
	(void)path;
	if (!ws->ops->file_mkdir)
		return unsupported(ws, "creating directories");
	if (rel[0] == '\0')
		return 0;
	return ws->ops->file_mkdir(ws->state, rel, mode);
}

static int backend_remove(sbx_workspace *ws, const char *rel, const char *path, uint32_t flags)
{
	if (!ws->ops->file_remove)
		return unsupported(ws, "removing files");
	if (rel[0] == '\0')
		return sbx_fail(-SBX_EPERM, "remove '%s': the workspace root cannot be removed", path);
	return ws->ops->file_remove(ws->state, rel, flags);
}

const struct sbx_files_ops sbx_files_backend = {
	.ready = backend_ready,
	.to_rel = backend_to_rel,
	.from_rel = backend_from_rel,
	.read = backend_read,
	.write = backend_write,
	.stat = backend_stat,
	.list = backend_list,
	.mkdir = backend_mkdir,
	.remove = backend_remove,
};
