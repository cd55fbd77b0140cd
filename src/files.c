/* The public file API: the caller's arguments checked here, the work done by the table the
 * workspace chose at open (files_int.h): on the host directory (files_host.c) for backends
 * with SBX_BACKEND_CAP_HOST_FILES, through the backend's own file ops (files_backend.c) for
 * the others. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "files_int.h"
#include "internal.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/path.h"

#define STATE_DIR ".agentsbx"
#define WRITE_FLAGS_KNOWN  (SBX_WRITE_MKDIRS | SBX_WRITE_EXCL)
#define REMOVE_FLAGS_KNOWN (SBX_REMOVE_RECURSIVE)

#define STAT_COVERS(st, field) \
	((st)->size >= offsetof(sbx_stat, field) + sizeof(((sbx_stat *)0)->field))

const struct sbx_files_ops *sbx_files_ops_for(uint32_t caps)
{
	return caps & SBX_BACKEND_CAP_HOST_FILES ? &sbx_files_host : &sbx_files_backend;
}

/* The table sbx_workspace_open chose. A workspace put together by hand (the unit tests'
 * stand-ins for a backend) has none: it gets the one its capabilities name. */
static const struct sbx_files_ops *files_of(const sbx_workspace *ws)
{
	return ws->files ? ws->files : sbx_files_ops_for(ws->caps);
}

static int check_args(const char *fn, const sbx_workspace *ws, const char *path)
{
	if (!ws)
		return sbx_fail(-SBX_EINVAL, "%s: ws must not be NULL", fn);
	if (!path)
		return sbx_fail(-SBX_EINVAL, "%s: path must not be NULL", fn);
	return files_of(ws)->ready(ws, fn);
}

/* In a read-only workspace only the library's own state folder may change. */
static int refuse_if_read_only(const sbx_workspace *ws, const char *op, const char *path)
{
	_cleanup_free_ char *rel = NULL, *norm = NULL;

	if (!ws->cfg || !ws->cfg->read_only)
		return 0;
	if (sbx_workspace_relative(ws, path, "path", &rel) == 0 &&
	    sbx_path_normalize(rel, "path", &norm) == 0 &&
	    strncmp(norm, STATE_DIR "/", sizeof STATE_DIR) == 0)
		return 0;
	return sbx_fail(-SBX_EPERM, "%s '%s': the workspace is read-only", op, path);
}

const char *sbx_workspace_host_view(const sbx_workspace *ws)
{
	return (ws->caps & SBX_BACKEND_CAP_HOST_FILES) && ws->ops->host_dir
	       ? ws->ops->host_dir(ws->state) : NULL;
}

/* A path the host names (what a harness, or a model that read the host's paths, passes) is
 * the same file as the one under the sandbox's root. */
int sbx_workspace_relative(const sbx_workspace *ws, const char *path, const char *what,
                           char **rel)
{
	const char *root = ws->ops->root ? ws->ops->root(ws->state) : NULL;

	return sbx_path_relative_in(root, sbx_workspace_host_view(ws), path, what, rel);
}

int sbx_files_relative_path(const sbx_workspace *ws, const char *path, char **rel)
{
	return sbx_workspace_relative(ws, path, "path", rel);
}

static int write_checks(const char *path, const void *data, size_t len, unsigned mode,
                        uint32_t flags)
{
	if (!data && len > 0)
		return sbx_fail(-SBX_EINVAL, "sbx_file_write: data must not be NULL (len is %zu)", len);
	if (flags & ~WRITE_FLAGS_KNOWN)
		return sbx_fail(-SBX_EINVAL, "sbx_file_write: flags: unknown bits 0x%" PRIx32,
		                flags & ~(uint32_t)WRITE_FLAGS_KNOWN);
	if (mode & (S_ISUID | S_ISGID))
		return sbx_fail(-SBX_EINVAL, "sbx_file_write: mode 0%o: setuid and setgid bits are "
		                "not allowed", mode);
	if (mode & ~0777u)
		return sbx_fail(-SBX_EINVAL, "sbx_file_write: mode 0%o: only permission bits (0777) "
		                "are allowed", mode);
	return 0;
}

/* Copies the fields the caller's struct has room for (its size says which it knows). */
static void stat_copy_known(const sbx_stat *full, sbx_stat *out)
{
	if (STAT_COVERS(out, type))
		out->type = full->type;
	if (STAT_COVERS(out, mode))
		out->mode = full->mode;
	if (STAT_COVERS(out, file_size))
		out->file_size = full->file_size;
	if (STAT_COVERS(out, mtime_sec))
		out->mtime_sec = full->mtime_sec;
	if (STAT_COVERS(out, mtime_nsec))
		out->mtime_nsec = full->mtime_nsec;
}

static int dir_mode_checks(unsigned mode)
{
	if (mode & (S_ISUID | S_ISGID))
		return sbx_fail(-SBX_EINVAL, "sbx_file_mkdir: mode 0%o: setuid and setgid bits are "
		                "not allowed", mode);
	if (mode & ~(0777u | S_ISVTX))
		return sbx_fail(-SBX_EINVAL, "sbx_file_mkdir: mode 0%o: only permission bits and the "
		                "sticky bit (01777) are allowed", mode);
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Read
 * ------------------------------------------------------------------------------------- */

int sbx_file_read(sbx_workspace *ws, const char *path, char **data, size_t *len)
{
	_cleanup_free_ char *rel = NULL;
	int r;

	if (data)
		*data = NULL;
	if (len)
		*len = 0;
	r = check_args("sbx_file_read", ws, path);
	if (r < 0)
		return r;
	if (!data)
		return sbx_fail(-SBX_EINVAL, "sbx_file_read: data must not be NULL");
	if (!len)
		return sbx_fail(-SBX_EINVAL, "sbx_file_read: len must not be NULL");
	if ((r = files_of(ws)->to_rel(ws, path, &rel)) < 0)
		return r;
	return files_of(ws)->read(ws, rel, path, SBX_FILE_READ_MAX, data, len, NULL);
}

int sbx_file_read_rel(sbx_workspace *ws, const char *rel, size_t max, char **data, size_t *len,
                      sbx_stat *st)
{
	_cleanup_free_ char *norm = NULL;
	int r;

	*data = NULL;
	*len = 0;
	if ((r = files_of(ws)->from_rel(ws, rel, &norm)) < 0)
		return r;
	return files_of(ws)->read(ws, norm, rel, max < SBX_FILE_READ_MAX ? max : SBX_FILE_READ_MAX,
	                       data, len, st);
}

/* ---------------------------------------------------------------------------------------
 * Write
 * ------------------------------------------------------------------------------------- */

int sbx_file_write(sbx_workspace *ws, const char *path, const void *data, size_t len,
                   unsigned mode, uint32_t flags)
{
	_cleanup_free_ char *rel = NULL;
	int r;

	r = check_args("sbx_file_write", ws, path);
	if (r == 0)
		r = refuse_if_read_only(ws, "write", path);
	if (r == 0)
		r = write_checks(path, data, len, mode, flags);
	if (r == 0)
		r = files_of(ws)->to_rel(ws, path, &rel);
	if (r < 0)
		return r;
	return files_of(ws)->write(ws, rel, path, data, len, mode, flags);
}

/* ---------------------------------------------------------------------------------------
 * Stat and list
 * ------------------------------------------------------------------------------------- */

int sbx_file_stat(sbx_workspace *ws, const char *path, sbx_stat *st)
{
	_cleanup_free_ char *rel = NULL;
	sbx_stat full = { .size = sizeof full };
	int r;

	r = check_args("sbx_file_stat", ws, path);
	if (r < 0)
		return r;
	if (!st)
		return sbx_fail(-SBX_EINVAL, "sbx_file_stat: st must not be NULL");
	if (!STAT_COVERS(st, type))
		return sbx_fail(-SBX_EINVAL, "sbx_file_stat: st->size %zu is too small (set it to "
		                "sizeof(sbx_stat))", st->size);
	r = files_of(ws)->to_rel(ws, path, &rel);
	if (r == 0)
		r = files_of(ws)->stat(ws, rel, path, &full);
	if (r < 0)
		return r;
	stat_copy_known(&full, st);
	return 0;
}

int sbx_file_stat_rel(sbx_workspace *ws, const char *rel, sbx_stat *st)
{
	_cleanup_free_ char *norm = NULL;
	int r;

	if ((r = files_of(ws)->from_rel(ws, rel, &norm)) < 0)
		return r;
	return files_of(ws)->stat(ws, norm, rel, st);
}

int sbx_file_list(sbx_workspace *ws, const char *path, char **json_out)
{
	_cleanup_free_ char *rel = NULL;
	int r;

	if (json_out)
		*json_out = NULL;
	r = check_args("sbx_file_list", ws, path);
	if (r < 0)
		return r;
	if (!json_out)
		return sbx_fail(-SBX_EINVAL, "sbx_file_list: json_out must not be NULL");
	if ((r = files_of(ws)->to_rel(ws, path, &rel)) < 0)
		return r;
	return files_of(ws)->list(ws, rel, path, json_out);
}

/* ---------------------------------------------------------------------------------------
 * Mkdir and remove
 * ------------------------------------------------------------------------------------- */

int sbx_file_mkdir(sbx_workspace *ws, const char *path, unsigned mode)
{
	_cleanup_free_ char *rel = NULL;
	int r;

	r = check_args("sbx_file_mkdir", ws, path);
	if (r == 0)
		r = refuse_if_read_only(ws, "mkdir", path);
	if (r == 0)
		r = dir_mode_checks(mode);
	if (r == 0)
		r = files_of(ws)->to_rel(ws, path, &rel);
	if (r < 0)
		return r;
	return files_of(ws)->mkdir(ws, rel, path, mode ? mode : 0755);
}

int sbx_file_remove(sbx_workspace *ws, const char *path, uint32_t flags)
{
	_cleanup_free_ char *rel = NULL;
	int r;

	r = check_args("sbx_file_remove", ws, path);
	if (r == 0)
		r = refuse_if_read_only(ws, "remove", path);
	if (r < 0)
		return r;
	if (flags & ~REMOVE_FLAGS_KNOWN)
		return sbx_fail(-SBX_EINVAL, "sbx_file_remove: flags: unknown bits 0x%" PRIx32,
		                flags & ~(uint32_t)REMOVE_FLAGS_KNOWN);
	if ((r = files_of(ws)->to_rel(ws, path, &rel)) < 0)
		return r;
	return files_of(ws)->remove(ws, rel, path, flags);
}
