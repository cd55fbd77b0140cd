/* tar (with gzip, xz or zstd around it) and zip, read through libarchive. libarchive decodes
 * the formats; what passes is still decided by the checks in archive.c, and the bounds are
 * ours: a file's content is read only after its declared size was admitted, never past it,
 * and the decompressed stream as a whole has a cap, so a bomb stops at the limits rather
 * than at the end of memory.
 *
 * Only the format and the filter the caller named are accepted: libarchive would otherwise
 * read a plain tar handed in as "tar.gz", or any of the dozen formats it knows. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <archive.h>
#include <archive_entry.h>

#include <agentsbx/agentsbx.h>
#include "archive_int.h"
#include "cleanup.h"
#include "error.h"
#include "lazylib.h"

#define TAR_BLOCK 512
/* libarchive's own bound on a GNU long name or pax header; counted into the stream cap. */
#define META_MAX ((uint64_t)1 << 20)
/* Files of unknown size (zip entries with a data descriptor) are read in steps of this. */
#define READ_STEP ((size_t)64 << 10)

/* libarchive is loaded on the first archive to read or write (lazylib.h); the table is
 * shared with archive_tar_write.c (archive_int.h). */
SBX_LAZY_TABLE(, libarchive_api, SBX_LIBARCHIVE_FUNCS);
static struct sbx_lazylib libarchive_lib = SBX_LAZYLIB("libarchive.so.13",
	"skill archives and the docker backend's file transfers", libarchive_api);
static const struct libarchive_api *const la = &libarchive_api_slots;

int sbx_need_libarchive(void)
{
	return sbx_lazylib_load(&libarchive_lib) ? 0 : SBX_LAZYLIB_ERR;
}

struct format_spec {
	int format;
	const char *name;               /* for messages: "tar.gz" */
	int filter;                     /* ARCHIVE_FILTER_* the data must be wrapped in */
	/* The slots of libarchive's functions (filled once it is loaded). */
	int (*const *support_filter)(struct archive *);
	int (*const *support_format)(struct archive *);
};

#define LA_SLOT(f) (&libarchive_api_slots.f)
static const struct format_spec specs[] = {
	{ SBX_ARCHIVE_TAR, "tar", ARCHIVE_FILTER_NONE, NULL,
	  LA_SLOT(archive_read_support_format_tar) },
	{ SBX_ARCHIVE_TAR_GZ, "tar.gz", ARCHIVE_FILTER_GZIP,
	  LA_SLOT(archive_read_support_filter_gzip), LA_SLOT(archive_read_support_format_tar) },
	{ SBX_ARCHIVE_TAR_XZ, "tar.xz", ARCHIVE_FILTER_XZ,
	  LA_SLOT(archive_read_support_filter_xz), LA_SLOT(archive_read_support_format_tar) },
	{ SBX_ARCHIVE_TAR_ZST, "tar.zst", ARCHIVE_FILTER_ZSTD,
	  LA_SLOT(archive_read_support_filter_zstd), LA_SLOT(archive_read_support_format_tar) },
	/* The seekable reader goes by the central directory, the archive's authoritative list,
	 * as unzip does; the streaming one would trust local headers. */
	{ SBX_ARCHIVE_ZIP, "zip", ARCHIVE_FILTER_NONE, NULL,
	  LA_SLOT(archive_read_support_format_zip_seekable) },
};

static const struct format_spec *spec_of(int format)
{
	for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
		if (specs[i].format == format)
			return &specs[i];
	return NULL;
}

static void archive_freep(struct archive **ar)
{
	if (*ar)
		la->archive_read_free(*ar);
}
#define _cleanup_archive_ __attribute__((cleanup(archive_freep)))

struct reader {
	sbx_arc *a;
	struct archive *ar;
	const struct format_spec *spec;
	unsigned char *buf;     /* the current file's content */
	size_t buf_cap;
	uint64_t stream_cap;    /* bytes the decompressed stream may hold */
};

/* A failure libarchive reported, for the archive as a whole. */
static int libarchive_fail(const struct reader *rd, const char *doing)
{
	const char *why = la->archive_error_string(rd->ar);

	if (la->archive_errno(rd->ar) == ENOMEM)
		return sbx_fail(-SBX_ENOMEM, "archive: out of memory %s", doing);
	return sbx_arc_fail(rd->a, NULL, 0, "archive: the %s data is corrupt or truncated (%s: "
	                    "%s)", rd->spec->name, doing, why ? why : "no reason given");
}

/* The same, for one entry: its name leads the message. */
static int entry_fail(const struct reader *rd, const char *name, const char *doing)
{
	const char *why = la->archive_error_string(rd->ar);

	if (la->archive_errno(rd->ar) == ENOMEM)
		return sbx_fail(-SBX_ENOMEM, "archive: out of memory %s", doing);
	return sbx_arc_fail(rd->a, name, strlen(name), "%s (the %s data is corrupt or truncated): "
	                    "%s", doing, rd->spec->name, why ? why : "no reason given");
}

/* The decompressed stream so far, against its cap: checked after every step that may have
 * inflated data, so a bomb of headers or of skipped content stops too. */
static int check_stream(const struct reader *rd, uint64_t about_to_skip)
{
	int64_t at = la->archive_filter_bytes(rd->ar, 0);
	uint64_t pos = at > 0 ? (uint64_t)at : 0;

	if (pos > rd->stream_cap || about_to_skip > rd->stream_cap - pos)
		return sbx_arc_fail(rd->a, NULL, 0, "archive: the %s expands beyond the limit of "
		                    "%llu bytes", rd->spec->name,
		                    (unsigned long long)rd->stream_cap);
	return 0;
}

static int check_filter(const struct reader *rd)
{
	int code = la->archive_filter_code(rd->ar, 0);

	if (la->archive_filter_count(rd->ar) > 2 || code != rd->spec->filter)
		return sbx_arc_fail(rd->a, NULL, 0, "archive: the data is not a %s archive "
		                    "(it is wrapped in %s)", rd->spec->name,
		                    la->archive_filter_name(rd->ar, 0));
	return 0;
}

static int reserve(struct reader *rd, size_t n)
{
	if (n <= rd->buf_cap)
		return 0;
	unsigned char *nb = realloc(rd->buf, n);
	if (!nb)
		return sbx_fail(-SBX_ENOMEM, "archive: out of memory (%zu bytes)", n);
	rd->buf = nb;
	rd->buf_cap = n;
	return 0;
}

/* Reads a file's content of declared size into rd->buf; one byte more than declared is
 * asked for, so content longer than its header says is caught. */
static int read_declared(struct reader *rd, const char *name, uint64_t size)
{
	size_t got = 0;
	int r;

	if ((r = sbx_arc_admit(rd->a, name, strlen(name), size)) < 0)
		return r;
	if ((r = reserve(rd, (size_t)size + 1)) < 0)
		return r;
	for (;;) {
		la_ssize_t n = la->archive_read_data(rd->ar, rd->buf + got, (size_t)size + 1 - got);
		if (n < 0)
			return entry_fail(rd, name, "its content cannot be read");
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > size)
			return sbx_arc_fail(rd->a, name, strlen(name), "inflates to more than its "
			                    "declared size");
	}
	if (got < size)
		return sbx_arc_fail(rd->a, name, strlen(name), "its content is truncated (%zu of "
		                    "%llu bytes)", got, (unsigned long long)size);
	return 0;
}

/* Reads content whose size the header does not tell, up to the single-file limit, then
 * admits what it found. */
static int read_undeclared(struct reader *rd, const char *name, uint64_t *size)
{
	size_t max = sbx_arc_limits(rd->a)->max_file, got = 0;
	int r;

	for (;;) {
		size_t want = got + READ_STEP;
		if ((r = reserve(rd, want)) < 0)
			return r;
		la_ssize_t n = la->archive_read_data(rd->ar, rd->buf + got, READ_STEP);
		if (n < 0)
			return entry_fail(rd, name, "its content cannot be read");
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > max)
			return sbx_arc_admit(rd->a, name, strlen(name), got);
	}
	*size = got;
	return sbx_arc_admit(rd->a, name, strlen(name), got);
}

/* What an entry is, as archive.c knows kinds. */
static void classify(struct archive_entry *e, sbx_arc_raw *raw)
{
	raw->type = SBX_ENTRY_OTHER;
	if (la->archive_entry_hardlink(e)) {
		raw->type = SBX_ENTRY_HARDLINK;
		return;
	}
	switch (la->archive_entry_filetype(e)) {
	case AE_IFREG: raw->type = SBX_ENTRY_FILE; break;
	case AE_IFDIR: raw->type = SBX_ENTRY_DIR; break;
	case AE_IFLNK: raw->type = SBX_ENTRY_SYMLINK; break;
	case AE_IFCHR: raw->other = "a character device"; break;
	case AE_IFBLK: raw->other = "a block device"; break;
	case AE_IFIFO: raw->other = "a FIFO"; break;
	case AE_IFSOCK: raw->other = "a socket"; break;
	default: raw->other = "of an unknown entry type"; break;
	}
	if (raw->type == SBX_ENTRY_FILE && la->archive_entry_sparse_count(e) > 0) {
		raw->type = SBX_ENTRY_OTHER;
		raw->other = "a sparse file";
	}
}

/* A name as UTF-8, whatever the locale: libarchive keeps names it decoded (pax, zip with
 * the UTF-8 flag) in a form the C locale cannot show, and names it did not (GNU, ustar) as
 * the bytes stored. NULL when neither form exists. */
static const char *utf8_or_raw(const char *utf8, const char *raw)
{
	return utf8 ? utf8 : raw;
}

/* Reads one entry's content (files only), checks it and hands it on. */
static int one_entry(struct reader *rd, struct archive_entry *e)
{
	const char *name = utf8_or_raw(la->archive_entry_pathname_utf8(e), la->archive_entry_pathname(e));
	const char *link = NULL;
	sbx_arc_raw raw = { 0 };
	int r;

	if (!name)
		return sbx_arc_fail(rd->a, NULL, 0, "archive: an entry's name cannot be decoded");
	raw.name = name;
	raw.name_len = strlen(name);
	classify(e, &raw);
	if (raw.type == SBX_ENTRY_HARDLINK)
		link = utf8_or_raw(la->archive_entry_hardlink_utf8(e), la->archive_entry_hardlink(e));
	else if (raw.type == SBX_ENTRY_SYMLINK)
		link = utf8_or_raw(la->archive_entry_symlink_utf8(e), la->archive_entry_symlink(e));
	raw.link = link;
	raw.link_len = link ? strlen(link) : 0;
	raw.mode = (unsigned)la->archive_entry_perm(e) & 0777;
	raw.mtime = la->archive_entry_mtime_is_set(e) ? (int64_t)la->archive_entry_mtime(e) : 0;
	if (raw.type == SBX_ENTRY_FILE && la->archive_entry_is_encrypted(e))
		return sbx_arc_fail(rd->a, name, raw.name_len, "encrypted entries are not "
		                    "supported");
	if (raw.type == SBX_ENTRY_FILE) {
		uint64_t size = 0;
		if (la->archive_entry_size_is_set(e) && la->archive_entry_size(e) >= 0) {
			size = (uint64_t)la->archive_entry_size(e);
			r = read_declared(rd, name, size);
		} else {
			r = read_undeclared(rd, name, &size);
		}
		if (r < 0)
			return r;
		raw.data = rd->buf;
		raw.size = size;
	}
	return sbx_arc_emit(rd->a, &raw);
}

/* Just an end-of-central-directory record, saying there are no entries. */
static bool empty_zip(const unsigned char *p, size_t len)
{
	return len >= 22 && memcmp(p, "PK\x05\x06", 4) == 0 && !p[8] && !p[9] && !p[10] &&
	       !p[11] && (size_t)(22 + (p[20] | p[21] << 8)) == len;
}

/* The bytes the decompressed stream may hold: the files, a header and padding per entry,
 * and room for long names and pax headers. */
static uint64_t stream_cap_of(const sbx_archive_limits *lim)
{
	uint64_t cap = lim->max_total + (uint64_t)lim->max_entries * 3 * TAR_BLOCK + META_MAX;

	return cap < lim->max_total ? UINT64_MAX : cap;
}

static int read_entries(struct reader *rd)
{
	struct archive_entry *e;
	bool first = true;
	int r;

	for (;;) {
		int lr = la->archive_read_next_header(rd->ar, &e);
		if (lr == ARCHIVE_EOF)
			break;
		/* ARCHIVE_RETRY (a damaged header libarchive would skip) is a failure too. */
		if (lr != ARCHIVE_OK && lr != ARCHIVE_WARN)
			return libarchive_fail(rd, "reading an entry's header");
		if (first && (r = check_filter(rd)) < 0)
			return r;
		first = false;
		if ((r = check_stream(rd, 0)) < 0 || (r = one_entry(rd, e)) < 0)
			return r;
		/* Content left unread (of a link or directory that claims some) is inflated
		 * by the next header's skip: counted before it happens. */
		if (la->archive_entry_filetype(e) != AE_IFREG || la->archive_entry_hardlink(e)) {
			uint64_t left = la->archive_entry_size_is_set(e) && la->archive_entry_size(e) > 0 ?
			                (uint64_t)la->archive_entry_size(e) : 0;
			if ((r = check_stream(rd, left)) < 0)
				return r;
		}
	}
	return check_stream(rd, 0);
}

void sbx_arc_locale_utf8(struct sbx_arc_locale *l)
{
	l->utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	l->old = l->utf8 ? uselocale(l->utf8) : (locale_t)0;
}

void sbx_arc_locale_restore(struct sbx_arc_locale *l)
{
	if (!l->utf8)
		return;
	uselocale(l->old);
	freelocale(l->utf8);
	l->utf8 = (locale_t)0;
}

static int read_archive(sbx_arc *a, const void *data, size_t len, int format);

/* libarchive runs, and the callback with it, under a UTF-8 LC_CTYPE (see archive_int.h). */
int sbx_arc_read_libarchive(sbx_arc *a, const void *data, size_t len, int format)
{
	struct sbx_arc_locale l;
	int r;

	sbx_arc_locale_utf8(&l);
	r = read_archive(a, data, len, format);
	sbx_arc_locale_restore(&l);
	return r;
}

static int read_archive(sbx_arc *a, const void *data, size_t len, int format)
{
	_cleanup_archive_ struct archive *ar = NULL;
	struct reader rd = { .a = a, .spec = spec_of(format) };
	int r;

	if (!rd.spec)
		return sbx_fail(-SBX_EINVAL, "format: unknown archive format %d", format);
	if (sbx_need_libarchive() < 0)
		return SBX_LAZYLIB_ERR;
	if (!(rd.ar = ar = la->archive_read_new()))
		return sbx_fail(-SBX_ENOMEM, "archive: out of memory");
	rd.stream_cap = stream_cap_of(sbx_arc_limits(a));
	if ((rd.spec->support_filter && (*rd.spec->support_filter)(ar) != ARCHIVE_OK) ||
	    (*rd.spec->support_format)(ar) != ARCHIVE_OK)
		return sbx_fail(-SBX_EINVAL, "archive: this libarchive cannot read %s archives (%s)",
		                rd.spec->name, la->archive_error_string(ar) ? la->archive_error_string(ar) :
		                "no support built in");
	if (la->archive_read_open_memory(ar, data, len) != ARCHIVE_OK) {
		/* An empty tar, and a zip that is only its end record, are archives without
		 * entries (libarchive sees no format in them). */
		if ((len == 0 && rd.spec->format == SBX_ARCHIVE_TAR) ||
		    (rd.spec->format == SBX_ARCHIVE_ZIP && empty_zip(data, len)))
			return 0;
		return libarchive_fail(&rd, "opening it");
	}
	r = read_entries(&rd);
	free(rd.buf);
	return r;
}
