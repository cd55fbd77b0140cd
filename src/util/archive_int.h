/* What the archive readers (tar, zip, directory) share with the checks in archive.c: they
 * find raw entries, the checker decides what passes. */
#ifndef SBX_UTIL_ARCHIVE_INT_H
#define SBX_UTIL_ARCHIVE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <locale.h>
#include <stdint.h>

#include "archive.h"
#include "lazylib.h"

/* The libarchive functions the tar and zip readers and the tar writer call, through the table
 * archive_read.c loads (lazylib.h). Included after <archive.h> and <archive_entry.h>. */
#define SBX_LIBARCHIVE_FUNCS(X) \
	X(archive_entry_copy_pathname) \
	X(archive_entry_filetype) \
	X(archive_entry_free) \
	X(archive_entry_hardlink) \
	X(archive_entry_hardlink_utf8) \
	X(archive_entry_is_encrypted) \
	X(archive_entry_mtime) \
	X(archive_entry_mtime_is_set) \
	X(archive_entry_new) \
	X(archive_entry_pathname) \
	X(archive_entry_pathname_utf8) \
	X(archive_entry_perm) \
	X(archive_entry_set_filetype) \
	X(archive_entry_set_gid) \
	X(archive_entry_set_mtime) \
	X(archive_entry_set_perm) \
	X(archive_entry_set_size) \
	X(archive_entry_set_uid) \
	X(archive_entry_size) \
	X(archive_entry_size_is_set) \
	X(archive_entry_sparse_count) \
	X(archive_entry_symlink) \
	X(archive_entry_symlink_utf8) \
	X(archive_errno) \
	X(archive_error_string) \
	X(archive_filter_bytes) \
	X(archive_filter_code) \
	X(archive_filter_count) \
	X(archive_filter_name) \
	X(archive_read_data) \
	X(archive_read_free) \
	X(archive_read_new) \
	X(archive_read_next_header) \
	X(archive_read_open_memory) \
	X(archive_read_support_filter_gzip) \
	X(archive_read_support_filter_xz) \
	X(archive_read_support_filter_zstd) \
	X(archive_read_support_format_tar) \
	X(archive_read_support_format_zip_seekable) \
	X(archive_set_error) \
	X(archive_write_close) \
	X(archive_write_data) \
	X(archive_write_finish_entry) \
	X(archive_write_free) \
	X(archive_write_header) \
	X(archive_write_new) \
	X(archive_write_open) \
	X(archive_write_set_bytes_per_block) \
	X(archive_write_set_format_option) \
	X(archive_write_set_format_pax_restricted)
#ifdef ARCHIVE_ENTRY_H_INCLUDED
SBX_LAZY_STRUCT(libarchive_api, SBX_LIBARCHIVE_FUNCS);
extern struct libarchive_api libarchive_api_slots;
#endif

/* Loads libarchive; 0, or SBX_LAZYLIB_ERR with the message naming it. Before any call
 * through libarchive_api_slots. */
int sbx_need_libarchive(void);

/* Kinds a reader may find besides enum sbx_archive_entry_type: refused with `other` named. */
#define SBX_ENTRY_OTHER 0

/* An entry as stored: name and link not yet checked, may hold anything. */
typedef struct sbx_arc_raw {
	const char *name;
	size_t name_len;
	int type;               /* enum sbx_archive_entry_type, or SBX_ENTRY_OTHER */
	const char *other;      /* SBX_ENTRY_OTHER: what it is ("a character device") */
	unsigned mode;
	const void *data;       /* FILE: the content */
	uint64_t size;          /* FILE: bytes */
	const char *link;       /* SYMLINK, HARDLINK: the target as stored */
	size_t link_len;
	int64_t mtime;          /* 0 when the format has none */
} sbx_arc_raw;

typedef struct sbx_arc sbx_arc;

/* Before a reader reads or inflates a file's content: refuses a size beyond the limits. */
int sbx_arc_admit(sbx_arc *a, const char *name, size_t name_len, uint64_t size);

/* Checks the entry and hands it to the callback. */
int sbx_arc_emit(sbx_arc *a, const sbx_arc_raw *raw);

/* -SBX_EINVAL with "<label> '<name>': <message>" (the name shown safely). name may be NULL
 * for problems of the whole archive. */
int sbx_arc_fail(const sbx_arc *a, const char *name, size_t name_len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The limits in force (for readers that bound their own work, like the gzip stream). */
const sbx_archive_limits *sbx_arc_limits(const sbx_arc *a);

/* libarchive converts names between UTF-8 and the current locale's charset, and a name the
 * C locale cannot hold comes out as no name at all. These switch the calling thread (only
 * it, for the duration) to a UTF-8 LC_CTYPE: names then pass as the UTF-8 they are. */
struct sbx_arc_locale {
	locale_t utf8, old;
};
void sbx_arc_locale_utf8(struct sbx_arc_locale *l);
void sbx_arc_locale_restore(struct sbx_arc_locale *l);

/* tar, tar.gz, tar.xz, tar.zst and zip (enum sbx_archive_format), through libarchive. */
int sbx_arc_read_libarchive(sbx_arc *a, const void *data, size_t len, int format);
int sbx_arc_walk_dir(sbx_arc *a, int dirfd);

#endif
