/* Writing tar through libarchive: ustar headers, and a pax header where ustar cannot hold a
 * name or a number (libarchive's "pax restricted" format, which our reader and Go's
 * archive/tar, which the Docker Engine extracts with, both take). Only what the library
 * sends is written: files and directories with numeric owners, names checked here first by
 * the readers' rules. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/types.h>

#include <archive.h>
#include <archive_entry.h>

#include <agentsbx/agentsbx.h>
#include "archive.h"
#include "archive_int.h"
#include "buf.h"
#include "error.h"

static const struct libarchive_api *const la = &libarchive_api_slots;

#define BLOCK 512
#define COMPONENT_MAX 255

/* As the readers take them: not empty, ".", ".." or longer than a file name may be. */
static bool component_ok(const char *p, size_t n)
{
	return n && n <= COMPONENT_MAX && !(n == 1 && p[0] == '.') &&
	       !(n == 2 && p[0] == '.' && p[1] == '.');
}

/* The readers' rule for names, so that what we write is what they would accept. */
static bool path_ok(const char *path)
{
	size_t len = path ? strlen(path) : 0;

	if (!len || len > SBX_ARCHIVE_PATH_MAX || path[0] == '/' || !sbx_utf8_valid(path, len))
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)path[i] < 0x20 || path[i] == 0x7f)
			return false;
	size_t depth = 0;

	for (const char *p = path;;) {
		size_t n = strcspn(p, "/");
		if (!component_ok(p, n) || ++depth > SBX_ARCHIVE_DEPTH_MAX)
			return false;
		if (!p[n])
			return true;
		p += n + 1;
	}
}

static void write_freep(struct archive **ar)
{
	if (*ar)
		la->archive_write_free(*ar);
}

static void entry_freep(struct archive_entry **e)
{
	if (*e)
		la->archive_entry_free(*e);
}

/* libarchive's output goes straight into the caller's buffer. */
static la_ssize_t to_buf(struct archive *ar, void *userdata, const void *data, size_t n)
{
	sbx_buf *out = userdata;

	sbx_buf_append(out, data, n);
	if (out->oom) {
		la->archive_set_error(ar, ENOMEM, "out of memory");
		return -1;
	}
	return (la_ssize_t)n;
}

static struct archive_entry *member_entry(const sbx_tar_member *m, size_t size)
{
	struct archive_entry *e = la->archive_entry_new();

	if (!e)
		return NULL;
	la->archive_entry_copy_pathname(e, m->path);
	la->archive_entry_set_filetype(e, m->type == SBX_ENTRY_DIR ? AE_IFDIR : AE_IFREG);
	la->archive_entry_set_perm(e, (mode_t)(m->mode & 07777));
	la->archive_entry_set_uid(e, m->uid);
	la->archive_entry_set_gid(e, m->gid);
	la->archive_entry_set_mtime(e, m->mtime > 0 ? (time_t)m->mtime : 0, 0);
	la->archive_entry_set_size(e, (la_int64_t)size);
	return e;
}

/* One member through a libarchive writer of its own; what the writer's close adds (the
 * end-of-archive blocks) is cut again: sbx_tar_finish writes them once, at the end. */
static bool is_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s >= 0x80)
			return false;
	return true;
}

static int write_member(sbx_buf *out, const sbx_tar_member *m, size_t size)
{
	__attribute__((cleanup(write_freep))) struct archive *ar = la->archive_write_new();
	__attribute__((cleanup(entry_freep))) struct archive_entry *e = member_entry(m, size);
	size_t end;

	if (!ar || !e)
		return -SBX_ENOMEM;
	/* No blocking: the members are laid end to end, as tar needs and nothing more. A
	 * non-ASCII name goes into its pax record as the bytes given (hdrcharset=BINARY): as
	 * "UTF-8" it would be composed to NFC when read back, so a decomposed name would not
	 * survive the trip. An ASCII name needs no pax record, and setting the option on it
	 * would add one to every member. */
	if (la->archive_write_set_format_pax_restricted(ar) != ARCHIVE_OK ||
	    (!is_ascii(m->path) &&
	     la->archive_write_set_format_option(ar, "pax", "hdrcharset", "BINARY") != ARCHIVE_OK) ||
	    la->archive_write_set_bytes_per_block(ar, 0) != ARCHIVE_OK ||
	    la->archive_write_open(ar, out, NULL, to_buf, NULL) != ARCHIVE_OK ||
	    la->archive_write_header(ar, e) != ARCHIVE_OK ||
	    (size && la->archive_write_data(ar, m->data, size) != (la_ssize_t)size) ||
	    la->archive_write_finish_entry(ar) != ARCHIVE_OK)
		return out->oom ? -SBX_ENOMEM : sbx_fail(-SBX_EINVAL, "tar: '%.200s': %s", m->path,
		                                         la->archive_error_string(ar) ?
		                                         la->archive_error_string(ar) : "cannot write");
	end = out->len;
	la->archive_write_close(ar);
	out->len = end;
	return out->oom ? -SBX_ENOMEM : 0;
}

int sbx_tar_append(sbx_buf *out, const sbx_tar_member *m)
{
	size_t start = out->len, size = m->type == SBX_ENTRY_FILE ? m->size : 0;
	int r;

	if (!path_ok(m->path))
		return sbx_fail(-SBX_EINVAL, "tar: '%.200s' is not a name an archive may hold",
		                m->path ? m->path : "(null)");
	if (m->type != SBX_ENTRY_FILE && m->type != SBX_ENTRY_DIR)
		return sbx_fail(-SBX_EINVAL, "tar: '%.200s': only files and directories are written",
		                m->path);
	if (size && !m->data)
		return sbx_fail(-SBX_EINVAL, "tar: '%.200s': no data", m->path);
	if ((r = sbx_need_libarchive()) < 0)
		return r;
	struct sbx_arc_locale l;
	sbx_arc_locale_utf8(&l);
	r = write_member(out, m, size);
	sbx_arc_locale_restore(&l);
	if (r < 0) {
		out->len = start;
		return r == -SBX_ENOMEM ? sbx_fail(-SBX_ENOMEM, "tar: out of memory") : r;
	}
	return 0;
}

void sbx_tar_finish(sbx_buf *out)
{
	static const char zeros[2 * BLOCK];

	sbx_buf_append(out, zeros, sizeof zeros);
}
