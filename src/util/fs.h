/* File-system helpers that work on directory fds and never follow symlinks they did not
 * mean to. */
#ifndef SBX_UTIL_FS_H
#define SBX_UTIL_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Writes name in dirfd atomically: a temporary file in the same directory, fsync, rename.
 * mode 0 keeps an existing file's mode or uses 0644. flags: SBX_WRITE_EXCL.
 * The data goes into an unnamed file (O_TMPFILE) where the file system has them: a writer
 * killed while it writes leaves nothing, and the kernel frees the space. Only the moment
 * between linking it under a temporary name and the rename over name leaves a name behind
 * (with SBX_WRITE_EXCL not even that: the file is linked as name itself). Elsewhere the
 * temporary file ".<name>.sbx-XXXXXX" has its name from the start. */
int sbx_fs_write_atomic(int dirfd, const char *name, const void *data, size_t len,
                        mode_t mode, uint32_t flags);

/* Who is told about the temporary names, so that a later open can sweep the ones a killed
 * writer left (util/journal.h). note() is called before the temporary name tmp exists in
 * dirfd, with an fd of the file that will have it (to learn its inode), or fd -1 when the
 * file is not made yet (it is then called again with it); it returns a handle for forget(),
 * or NULL when it could not note it (the write goes on). forget() after the name is gone. */
struct sbx_fs_temp_notes {
	void *(*note)(void *ctx, int dirfd, const char *tmp, int fd);
	void (*forget)(void *ctx, void *handle);
	void *ctx;
};

/* sbx_fs_write_atomic with its temporary names noted (notes may be NULL). */
int sbx_fs_write_atomic_noted(const struct sbx_fs_temp_notes *notes, int dirfd,
                              const char *name, const void *data, size_t len, mode_t mode,
                              uint32_t flags);

/* Links an unnamed file (O_TMPFILE) fd as name in dirfd: through /proc/self/fd (any user),
 * else with AT_EMPTY_PATH (which needs CAP_DAC_READ_SEARCH). 0 or -errno (-EEXIST when name
 * exists: nothing is replaced). */
int sbx_fs_link_unnamed(int fd, int dirfd, const char *name);

/* Testing hook: true makes atomic writes use a named temporary file, as on a file system
 * without O_TMPFILE. */
void sbx_fs_force_named_temp(bool on);

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
