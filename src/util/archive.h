/* Read-only iteration over tar (plain, gzip, xz or zstd) and zip archives in memory, and over a host directory
 * tree, as one stream of checked entries.
 *
 * Every source hands its entries to the same checks before the caller's callback sees them,
 * so the callback can trust what it gets:
 *  - names are normalised: relative, "/"-separated, no "", "." or ".." components, no trailing
 *    "/", at most SBX_ARCHIVE_PATH_MAX bytes and SBX_ARCHIVE_DEPTH_MAX components;
 *    absolute names, ".." anywhere, NUL bytes, control characters and non-UTF-8 are refused;
 *  - only regular files, directories, symbolic links and hard links to an earlier file of the
 *    same archive pass; devices, FIFOs, sockets, sparse files and the like are refused;
 *  - a symlink's target is relative and stays inside the archive (sbx_archive_link_inside);
 *  - no entry lies below an earlier symlink or file ("link" then "link/x"), and no path
 *    appears twice (directories excepted);
 *  - the limits hold: entry count, bytes of one file, bytes of all files, and for compressed
 *    tars the expanded stream, checked before anything is inflated beyond them.
 * The formats are decoded by libarchive (archive_read.c); the checks are this library's.
 * A refused entry stops the iteration with -SBX_EINVAL and a message naming it:
 * "archive entry '../x': ...". Entries arrive in archive order; an entry's parent directories
 * need not have come first. */
#ifndef SBX_UTIL_ARCHIVE_H
#define SBX_UTIL_ARCHIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sbx_archive_format {
	SBX_ARCHIVE_TAR = 1,
	SBX_ARCHIVE_TAR_GZ,
	SBX_ARCHIVE_ZIP,
	SBX_ARCHIVE_TAR_XZ,
	SBX_ARCHIVE_TAR_ZST
};

enum sbx_archive_entry_type {
	SBX_ENTRY_FILE = 1,
	SBX_ENTRY_DIR,
	SBX_ENTRY_SYMLINK,
	SBX_ENTRY_HARDLINK,
	SBX_ENTRY_SPECIAL       /* SBX_ARCHIVE_AS_STORED only: a device, FIFO, socket, sparse
	                           file; no content */
};

/* sbx_archive_limits.flags */
/* For archives that describe a tree rather than make one (a container's files, read
 * through the Docker Engine's archive API): symlinks pass whatever they point to (link is
 * the target as stored, to be judged by the caller, who never creates them from here), and
 * special files pass as SBX_ENTRY_SPECIAL instead of failing the archive. Names are checked
 * as always. */
#define SBX_ARCHIVE_AS_STORED (1u << 0)

#define SBX_ARCHIVE_PATH_MAX  4095
#define SBX_ARCHIVE_DEPTH_MAX 64
#define SBX_ARCHIVE_LINK_MAX  4095

typedef struct sbx_archive_entry {
	const char *path;       /* normalised, see above */
	int type;               /* enum sbx_archive_entry_type */
	unsigned mode;          /* permission bits as stored (0777 mask; 0 when unknown) */
	const void *data;       /* FILE: the content, valid during the callback only */
	size_t size;            /* FILE: bytes; HARDLINK: the size of the file linked to */
	const char *link;       /* SYMLINK: the target as stored; HARDLINK: the normalised path of
	                           the earlier FILE entry */
	int64_t mtime;          /* seconds since the epoch as stored (tar); 0 when unknown */
} sbx_archive_entry;

typedef struct sbx_archive_limits {
	size_t max_entries;     /* entries of any kind */
	size_t max_file;        /* bytes of one file */
	uint64_t max_total;     /* bytes of all files together (hard links count again) */
	unsigned flags;         /* SBX_ARCHIVE_* */
} sbx_archive_limits;

/* Returns 0 to go on, or a negative code that stops the iteration and is returned. */
typedef int (*sbx_archive_cb)(const sbx_archive_entry *entry, void *userdata);

/* "tar", "tar.gz", "tar.xz", "tar.zst", "zip" -> *format. Anything else (7z included, see
 * archive.c for why): -SBX_EINVAL naming `what`. */
int sbx_archive_format_from_name(const char *name, const char *what, int *format);

/* Tells the format from the first bytes: zip, gzip, xz and zstd by their magic numbers, tar
 * by a header checksum that adds up. -SBX_EINVAL when none fits (or for 7z, refused). */
int sbx_archive_detect(const void *data, size_t len, int *format);

/* Iterates the archive data[0..len) of the given format. */
int sbx_archive_iterate(const void *data, size_t len, int format,
                        const sbx_archive_limits *limits, sbx_archive_cb cb, void *userdata);

/* Iterates the tree below the directory dirfd (which is not itself an entry) as an archive:
 * the same checks, entries named relative to it, directories before their contents. Symlinks
 * are reported, never followed; other mounts are entered (the caller trusts the tree). */
int sbx_archive_iterate_dir(int dirfd, const sbx_archive_limits *limits, sbx_archive_cb cb,
                            void *userdata);

/* Does the symlink at `path` (normalised) with `target` stay inside the tree `path` is
 * relative to? The target must be relative and may climb with ".." only at its start (a
 * ".." after a name could climb out through another symlink), and not above the root. */
bool sbx_archive_link_inside(const char *path, const char *target);

/* ---- Writing: a tar in memory, for the Docker Engine's archive API --------------------- */

/* One member to append: ustar, with a pax header for a name longer than ustar holds. */
typedef struct sbx_tar_member {
	const char *path;       /* relative, "/"-separated, no "." or ".." components, no NUL */
	int type;               /* SBX_ENTRY_FILE or SBX_ENTRY_DIR */
	unsigned mode;          /* permission bits (07777 mask) */
	unsigned uid, gid;
	int64_t mtime;          /* seconds since the epoch (negative: 0) */
	const void *data;       /* FILE: size bytes */
	size_t size;
} sbx_tar_member;

struct sbx_buf;

/* Appends the member's header(s), content and padding to out. -SBX_EINVAL for a path the
 * archive readers would refuse (absolute, "..", empty or "." components, control characters,
 * longer than SBX_ARCHIVE_PATH_MAX) or another type; -SBX_ENOMEM when out ran out of memory.
 * Nothing is appended on failure. */
int sbx_tar_append(struct sbx_buf *out, const sbx_tar_member *m);
/* Ends the archive: the two zero blocks. */
void sbx_tar_finish(struct sbx_buf *out);

#endif
