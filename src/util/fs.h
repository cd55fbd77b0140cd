/* File-system helpers that work on directory fds and never follow symlinks they did not
 * mean to. */
#ifndef SBX_UTIL_FS_H
#define SBX_UTIL_FS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Writes name in dirfd atomically: a temporary file in the same directory, fsync, rename.
 * mode 0 keeps an existing file's mode or uses 0644. flags: SBX_WRITE_EXCL. */
int sbx_fs_write_atomic(int dirfd, const char *name, const void *data, size_t len,
                        mode_t mode, uint32_t flags);

/* As root, something the library made in a directory owned by another (non-root) user gets
 * that user and group: a sandbox whose commands run as that user (the docker backend's nobody,
 * say) must be able to change what the API made for it, as if it had made it itself. Does
 * nothing for other callers. sbx_fs_write_atomic does the same for new files. */
void sbx_fs_adopt_owner(int dirfd, const char *name);

/* Reads all of fd (a regular file) up to max bytes (-SBX_EFBIG beyond). *data is
 * NUL-terminated; caller frees. */
int sbx_fs_read_fd(int fd, size_t max, char **data, size_t *len);

/* Removes name in dirfd: a file, a symlink (not followed) or a directory with everything in
 * it. Never crosses into another mount. */
int sbx_fs_remove_tree(int dirfd, const char *name);

/* Removes everything inside the directory dirfd, keeping the directory. */
int sbx_fs_empty_dir(int dirfd);

/* Copies the contents of directory src_dirfd, but for its entry named except (NULL: none),
 * into the (empty) directory dst_dirfd:
 * directories, regular files with their modes and their holes, and symlinks as symlinks
 * (never followed). Other file kinds, other mounts and entries that vanish or change kind
 * meanwhile are left out; only regular files are ever opened for reading, never blocking
 * (copytree.c). Both fds must be real directory fds. */
int sbx_fs_copy_tree(int src_dirfd, int dst_dirfd, const char *except);

/* Creates a private (0700) temporary directory named prefix-XXXXXX under $TMPDIR or /tmp.
 * Caller frees *path. */
int sbx_fs_make_temp_dir(const char *prefix, char **path);

/* write(2)/read(2) retried on EINTR and short counts; -SBX_EIO etc. on failure. */
int sbx_write_all(int fd, const void *data, size_t len);

#endif
