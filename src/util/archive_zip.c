/* zip: read through the central directory (the authoritative list), each entry checked
 * against its local header. Stored and deflated entries; zip64, encryption and multi-disk
 * archives are refused. Sizes come from the central directory and bound the inflation: an
 * entry that inflates to more than it declares is refused, as is one whose CRC is wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include <agentsbx/agentsbx.h>
#include "archive_int.h"
#include "cleanup.h"
#include "error.h"

#define EOCD_SIG      0x06054b50u
#define EOCD64_LOC_SIG 0x07064b50u
#define CENTRAL_SIG   0x02014b50u
#define LOCAL_SIG     0x04034b50u
#define EOCD_SIZE     22
#define CENTRAL_SIZE  46
#define LOCAL_SIZE    30
#define COMMENT_MAX   0xffff

#define FLAG_ENCRYPTED        0x0001u
#define FLAG_STRONG_ENCRYPTED 0x0040u
#define METHOD_STORED  0
#define METHOD_DEFLATE 8
#define HOST_UNIX 3
#define HOST_OSX  19
#define DOS_DIRECTORY 0x10u

static uint16_t le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

struct zip {
	sbx_arc *a;
	const unsigned char *p;
	size_t len;
	size_t eocd;            /* offset of the end record */
	size_t cd_off, cd_end;
	size_t count;
};

/* One central directory record, decoded. */
struct zentry {
	const char *name;
	size_t name_len;
	uint16_t made_by, flags, method;
	uint32_t crc, csize, usize, ext_attr, local_off;
	size_t record_len;
};

static int zip_fail(const struct zip *z, const char *msg)
{
	return sbx_arc_fail(z->a, NULL, 0, "archive: %s", msg);
}

static int entry_fail(const struct zip *z, const struct zentry *e, const char *msg)
{
	return sbx_arc_fail(z->a, e->name, e->name_len, "%s", msg);
}

/* ---------------------------------------------------------------------------------------
 * The end record and the central directory
 * ------------------------------------------------------------------------------------- */

/* The end record is the last thing in the archive, followed only by its comment. */
static int find_end(struct zip *z)
{
	size_t lowest = z->len > EOCD_SIZE + COMMENT_MAX ? z->len - EOCD_SIZE - COMMENT_MAX : 0;

	if (z->len < EOCD_SIZE)
		return zip_fail(z, "too short for a zip archive (truncated?)");
	for (size_t i = z->len - EOCD_SIZE + 1; i-- > lowest;)
		if (le32(z->p + i) == EOCD_SIG && i + EOCD_SIZE + le16(z->p + i + 20) == z->len) {
			z->eocd = i;
			return 0;
		}
	return zip_fail(z, "no zip end-of-central-directory record (not a zip archive, or "
	                "truncated)");
}

static int read_end(struct zip *z)
{
	const unsigned char *e;
	int r = find_end(z);

	if (r < 0)
		return r;
	e = z->p + z->eocd;
	uint16_t disk = le16(e + 4), cd_disk = le16(e + 6), n_disk = le16(e + 8);
	uint16_t n_total = le16(e + 10);
	uint32_t cd_size = le32(e + 12), cd_off = le32(e + 16);
	if ((z->eocd >= 20 && le32(z->p + z->eocd - 20) == EOCD64_LOC_SIG) || n_total == 0xffff ||
	    cd_size == 0xffffffffu || cd_off == 0xffffffffu)
		return zip_fail(z, "zip64 archives are not supported");
	if (disk || cd_disk || n_disk != n_total)
		return zip_fail(z, "multi-disk zip archives are not supported");
	if (cd_off > z->eocd || cd_size > z->eocd - cd_off)
		return zip_fail(z, "the zip central directory lies outside the archive");
	if (n_total > sbx_arc_limits(z->a)->max_entries)
		return sbx_arc_fail(z->a, NULL, 0, "the archive has more than %zu entries",
		                    sbx_arc_limits(z->a)->max_entries);
	z->cd_off = cd_off;
	z->cd_end = (size_t)cd_off + cd_size;
	z->count = n_total;
	return 0;
}

static int read_central(const struct zip *z, size_t at, struct zentry *e)
{
	const unsigned char *c = z->p + at;

	if (at > z->cd_end || z->cd_end - at < CENTRAL_SIZE || le32(c) != CENTRAL_SIG)
		return zip_fail(z, "the zip central directory is corrupt");
	*e = (struct zentry){
		.name = (const char *)c + CENTRAL_SIZE,
		.name_len = le16(c + 28),
		.made_by = le16(c + 4),
		.flags = le16(c + 8),
		.method = le16(c + 10),
		.crc = le32(c + 16),
		.csize = le32(c + 20),
		.usize = le32(c + 24),
		.ext_attr = le32(c + 38),
		.local_off = le32(c + 42),
	};
	e->record_len = CENTRAL_SIZE + e->name_len + le16(c + 30) + le16(c + 32);
	if (z->cd_end - at < e->record_len)
		return zip_fail(z, "the zip central directory is corrupt");
	if (e->csize == 0xffffffffu || e->usize == 0xffffffffu || e->local_off == 0xffffffffu)
		return entry_fail(z, e, "zip64 entries are not supported");
	if (e->flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTED))
		return entry_fail(z, e, "encrypted entries are not supported");
	return 0;
}

/* Where the entry's data starts, after its local header, which must agree on the name. */
static int locate_data(const struct zip *z, const struct zentry *e, const unsigned char **data)
{
	const unsigned char *l = z->p + e->local_off;

	if (e->local_off > z->cd_off || z->cd_off - e->local_off < LOCAL_SIZE ||
	    le32(l) != LOCAL_SIG)
		return entry_fail(z, e, "its local header is missing or corrupt");
	size_t off = (size_t)e->local_off + LOCAL_SIZE + le16(l + 26) + le16(l + 28);
	if (le16(l + 26) != e->name_len || memcmp(l + LOCAL_SIZE, e->name, e->name_len) != 0)
		return entry_fail(z, e, "its local header names another file");
	if (le16(l + 6) & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTED))
		return entry_fail(z, e, "encrypted entries are not supported");
	if (off > z->cd_off || z->cd_off - off < e->csize)
		return entry_fail(z, e, "its data lies outside the archive (truncated?)");
	*data = z->p + off;
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Entry kinds and contents
 * ------------------------------------------------------------------------------------- */

static void classify(const struct zentry *e, sbx_arc_raw *raw)
{
	unsigned host = e->made_by >> 8;
	unsigned mode = (host == HOST_UNIX || host == HOST_OSX) ? e->ext_attr >> 16 : 0;
	bool slash = e->name_len && e->name[e->name_len - 1] == '/';

	raw->mode = mode & 0777;
	raw->type = SBX_ENTRY_FILE;
	switch (mode & S_IFMT) {
	case S_IFLNK: raw->type = SBX_ENTRY_SYMLINK; return;
	case S_IFDIR: raw->type = SBX_ENTRY_DIR; return;
	case S_IFREG: raw->type = slash ? SBX_ENTRY_DIR : SBX_ENTRY_FILE; return;
	case S_IFIFO: raw->type = SBX_ENTRY_OTHER; raw->other = "a FIFO"; return;
	case S_IFCHR: raw->type = SBX_ENTRY_OTHER; raw->other = "a character device"; return;
	case S_IFBLK: raw->type = SBX_ENTRY_OTHER; raw->other = "a block device"; return;
	case S_IFSOCK: raw->type = SBX_ENTRY_OTHER; raw->other = "a socket"; return;
	default:
		if (slash || (e->ext_attr & DOS_DIRECTORY))
			raw->type = SBX_ENTRY_DIR;
		return;
	}
}

/* Inflates raw deflate data to exactly the declared size. */
static int inflate_exact(const struct zip *z, const struct zentry *e, const unsigned char *in,
                         unsigned char *out)
{
	z_stream zs = { 0 };
	unsigned char extra;
	int zr;

	if (inflateInit2(&zs, -MAX_WBITS) != Z_OK)
		return sbx_fail(-SBX_ENOMEM, "archive: cannot start inflating");
	zs.next_in = (unsigned char *)(uintptr_t)in;
	zs.avail_in = e->csize;
	zs.next_out = e->usize ? out : &extra;
	zs.avail_out = e->usize ? e->usize : 0;
	zr = inflate(&zs, Z_FINISH);
	if (zr != Z_STREAM_END && zs.avail_out == 0) {
		/* Room is used up: one byte more tells a bomb from a stream that only ends. */
		zs.next_out = &extra;
		zs.avail_out = 1;
		zr = inflate(&zs, Z_FINISH);
		if (zs.avail_out == 0)
			zr = Z_NEED_DICT;   /* marks "more than declared" */
	}
	inflateEnd(&zs);
	if (zr == Z_STREAM_END && zs.total_out == e->usize)
		return 0;
	if (zr == Z_NEED_DICT)
		return entry_fail(z, e, "inflates to more than its declared size");
	return entry_fail(z, e, "its deflate data is corrupt or truncated");
}

/* The entry's bytes: in place when stored, else inflated into *owned. */
static int entry_bytes(const struct zip *z, const struct zentry *e, const unsigned char **out,
                       unsigned char **owned)
{
	const unsigned char *data = NULL;
	int r = locate_data(z, e, &data);

	*owned = NULL;
	if (r < 0)
		return r;
	if (e->method == METHOD_STORED) {
		if (e->csize != e->usize)
			return entry_fail(z, e, "a stored entry whose sizes disagree");
		*out = data;
	} else if (e->method == METHOD_DEFLATE) {
		if (!(*owned = malloc(e->usize ? e->usize : 1)))
			return sbx_fail(-SBX_ENOMEM, "archive: out of memory (%u bytes)", e->usize);
		if ((r = inflate_exact(z, e, data, *owned)) < 0) {
			free(SBX_TAKE_PTR(*owned));
			return r;
		}
		*out = *owned;
	} else {
		char msg[80];
		snprintf(msg, sizeof msg, "compression method %u is not supported (only stored and "
		         "deflate)", e->method);
		return entry_fail(z, e, msg);
	}
	if (crc32(0, *out, e->usize) != e->crc) {
		free(SBX_TAKE_PTR(*owned));
		return entry_fail(z, e, "its CRC does not match (the archive is corrupt)");
	}
	return 0;
}

static int zip_entry(struct zip *z, const struct zentry *e)
{
	_cleanup_free_ unsigned char *owned = NULL;
	const unsigned char *bytes = NULL;
	sbx_arc_raw raw = { .name = e->name, .name_len = e->name_len };
	int r;

	classify(e, &raw);
	if (raw.type == SBX_ENTRY_FILE) {
		if ((r = sbx_arc_admit(z->a, e->name, e->name_len, e->usize)) < 0)
			return r;
		if ((r = entry_bytes(z, e, &bytes, &owned)) < 0)
			return r;
		raw.data = bytes;
		raw.size = e->usize;
	} else if (raw.type == SBX_ENTRY_SYMLINK) {
		if (e->usize > SBX_ARCHIVE_LINK_MAX)
			return entry_fail(z, e, "the symlink target is too long");
		if ((r = entry_bytes(z, e, &bytes, &owned)) < 0)
			return r;
		raw.link = (const char *)bytes;
		raw.link_len = e->usize;
	}
	return sbx_arc_emit(z->a, &raw);
}

int sbx_arc_read_zip(sbx_arc *a, const void *data, size_t len)
{
	struct zip z = { .a = a, .p = data, .len = len };
	struct zentry e;
	size_t at;
	int r = read_end(&z);

	if (r < 0)
		return r;
	at = z.cd_off;
	for (size_t i = 0; i < z.count; i++) {
		if ((r = read_central(&z, at, &e)) < 0 || (r = zip_entry(&z, &e)) < 0)
			return r;
		at += e.record_len;
	}
	return 0;
}
