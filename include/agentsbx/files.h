/*
 * libagentsbx — files, confined to the workspace root.
 *
 * Part of the public API; <agentsbx/agentsbx.h> includes every part. The conventions in
 * <agentsbx/common.h> (return codes, sbx_last_error, sbx_free, option structs) hold here.
 */
#ifndef AGENTSBX_FILES_H
#define AGENTSBX_FILES_H

#include <agentsbx/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------
 * Files, confined to the workspace root
 * ------------------------------------------------------------------------------------- */

/* Largest file sbx_file_read returns (bigger files: -SBX_EFBIG). */
#define SBX_FILE_READ_MAX ((size_t)1 << 30)

/* Reads a whole regular file. *data is NUL-terminated (not counted in *len) and released with
 * sbx_free(). */
SBX_API int sbx_file_read(sbx_workspace *ws, const char *path, char **data, size_t *len);

/* sbx_file_write flags */
#define SBX_WRITE_MKDIRS  (1u << 0) /* create missing parent directories */
#define SBX_WRITE_EXCL    (1u << 1) /* fail with -SBX_EEXIST if the file exists */

/* Replaces (or creates) a regular file atomically: readers see the old or the new content,
 * never a mix, and a crash leaves no partial file. mode 0 = keep the existing file's mode, or
 * 0644 for a new file. A symlink at the path is replaced, never followed. */
SBX_API int sbx_file_write(sbx_workspace *ws, const char *path, const void *data, size_t len,
                           unsigned mode, uint32_t flags);

enum sbx_file_type {
	SBX_FILE_OTHER = 0,
	SBX_FILE_REGULAR = 1,
	SBX_FILE_DIRECTORY = 2,
	SBX_FILE_SYMLINK = 3
};

typedef struct sbx_stat {
	size_t size;                /* sizeof(sbx_stat), set by the caller */
	int type;                   /* enum sbx_file_type */
	uint32_t mode;              /* permission bits */
	uint64_t file_size;         /* bytes */
	int64_t mtime_sec;          /* modification time */
	int64_t mtime_nsec;
} sbx_stat;

/* An sbx_stat with size set, ready for sbx_file_stat (since 1.6). */
#define SBX_STAT_INIT SBX_OPTS_INIT_(sbx_stat)

/* Stats a path without following a final symlink. */
SBX_API int sbx_file_stat(sbx_workspace *ws, const char *path, sbx_stat *st);

/* Lists a directory as a JSON array sorted by name:
 *   [{"name":"a.txt","type":"file","size":12,"mtime":1700000000}, ...]
 * with type one of "file", "dir", "symlink", "other". *json_out is released with sbx_free(). */
SBX_API int sbx_file_list(sbx_workspace *ws, const char *path, char **json_out);

/* Creates a directory and its missing parents (mkdir -p). mode 0 = 0755. */
SBX_API int sbx_file_mkdir(sbx_workspace *ws, const char *path, unsigned mode);

/* sbx_file_remove flags */
#define SBX_REMOVE_RECURSIVE (1u << 0) /* remove a directory with its contents (rm -r) */

/* Removes a file, symlink or empty directory (with SBX_REMOVE_RECURSIVE, any directory).
 * Symlinks are removed, never followed. The root itself cannot be removed. */
SBX_API int sbx_file_remove(sbx_workspace *ws, const char *path, uint32_t flags);

#ifdef __cplusplus
}
#endif

#endif /* AGENTSBX_FILES_H */
