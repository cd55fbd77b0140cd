/* The two ways to a workspace's files behind the public file API (files.c): the host
 * directory, served here beneath the workspace's root fd (files_host.c), or the backend's
 * own file ops for a backend without SBX_BACKEND_CAP_HOST_FILES (files_backend.c). The
 * workspace picks its table once, at open (sbx_files_ops_for); files.c checks the caller's
 * arguments and goes through it, so no file function asks again which kind it serves.
 *
 * In every entry, path is the caller's (for messages) and rel the root-relative path the
 * table's own to_rel or from_rel made of it. */
#ifndef SBX_FILES_INT_H
#define SBX_FILES_INT_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

struct sbx_files_ops {
	/* Can the workspace serve files now? fn names the public function for the message. */
	int (*ready)(const sbx_workspace *ws, const char *fn);
	/* rel of a caller's path (absolute under the root, or relative to it). */
	int (*to_rel)(const sbx_workspace *ws, const char *path, char **rel);
	/* rel of a root-relative path the library's own callers pass (the _rel functions). */
	int (*from_rel)(const sbx_workspace *ws, const char *rel, char **out);
	/* At most max bytes; st (when not NULL) describes the file read. */
	int (*read)(sbx_workspace *ws, const char *rel, const char *path, size_t max,
	            char **data, size_t *len, sbx_stat *st);
	int (*write)(sbx_workspace *ws, const char *rel, const char *path, const void *data,
	             size_t len, unsigned mode, uint32_t flags);
	/* Fills every field of full (full->size is sizeof(sbx_stat)). */
	int (*stat)(sbx_workspace *ws, const char *rel, const char *path, sbx_stat *full);
	int (*list)(sbx_workspace *ws, const char *rel, const char *path, char **json_out);
	int (*mkdir)(sbx_workspace *ws, const char *rel, const char *path, unsigned mode);
	int (*remove)(sbx_workspace *ws, const char *rel, const char *path, uint32_t flags);
};

extern const struct sbx_files_ops sbx_files_host;
extern const struct sbx_files_ops sbx_files_backend;

/* The table for a workspace with these capabilities (chosen at open, kept in ws->files). */
const struct sbx_files_ops *sbx_files_ops_for(uint32_t caps);

/* The caller's path relative to the root the backend names (lexical, not normalised). */
int sbx_files_relative_path(const sbx_workspace *ws, const char *path, char **rel);

#endif
