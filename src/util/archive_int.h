/* What the archive readers (tar, zip, directory) share with the checks in archive.c: they
 * find raw entries, the checker decides what passes. */
#ifndef SBX_UTIL_ARCHIVE_INT_H
#define SBX_UTIL_ARCHIVE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <locale.h>
#include <stdint.h>

#include "archive.h"

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
