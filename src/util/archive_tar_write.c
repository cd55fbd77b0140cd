/* Writing tar: ustar headers, and a pax 'x' header before a member whose name does not fit
 * ustar's 100 bytes (the readers of archive_tar.c and Go's archive/tar, which the Docker
 * Engine extracts with, both take it). Only what the library sends is written: files and
 * directories with numeric owners. */
#include <stdio.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "archive.h"
#include "buf.h"
#include "error.h"

#define BLOCK 512
#define NAME_FIELD 100
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

/* An octal field of width w (w-1 digits and a NUL); values that do not fit are clamped,
 * which only a file beyond 8 GiB could need (refused before this). */
static void octal(unsigned char *field, size_t w, unsigned long long v)
{
	unsigned long long max = (1ull << (3 * (w - 1))) - 1;

	snprintf((char *)field, w, "%0*llo", (int)(w - 1), v > max ? max : v);
}

static void checksum(unsigned char *h)
{
	unsigned long sum = 0;

	memset(h + 148, ' ', 8);
	for (size_t i = 0; i < BLOCK; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06lo", sum);
	h[155] = ' ';
}

static void header(unsigned char *h, const char *name, char type, unsigned mode, unsigned uid,
                   unsigned gid, unsigned long long size, long long mtime)
{
	memset(h, 0, BLOCK);
	memcpy(h, name, strnlen(name, NAME_FIELD));
	octal(h + 100, 8, mode & 07777);
	octal(h + 108, 8, uid);
	octal(h + 116, 8, gid);
	octal(h + 124, 12, size);
	octal(h + 136, 12, mtime > 0 ? (unsigned long long)mtime : 0);
	h[156] = (unsigned char)type;
	memcpy(h + 257, "ustar\0" "00", 8);
	checksum(h);
}

static void pad(sbx_buf *out, size_t len)
{
	static const char zeros[BLOCK];

	if (len % BLOCK)
		sbx_buf_append(out, zeros, BLOCK - len % BLOCK);
}

/* "<len> path=<path>\n", where len counts the whole record, its own digits included. */
static void pax_path(sbx_buf *out, const char *path, unsigned mode, unsigned uid, unsigned gid)
{
	unsigned char h[BLOCK];
	size_t body = strlen(" path=\n") + strlen(path), len = body + 1;
	char digits[24];

	while ((size_t)snprintf(digits, sizeof digits, "%zu", len) + body != len)
		len = (size_t)snprintf(digits, sizeof digits, "%zu", len) + body;
	header(h, "././@PaxHeader", 'x', mode, uid, gid, len, 0);
	sbx_buf_append(out, h, BLOCK);
	sbx_buf_printf(out, "%s path=%s\n", digits, path);
	pad(out, len);
}

int sbx_tar_append(sbx_buf *out, const sbx_tar_member *m)
{
	unsigned char h[BLOCK];
	size_t start = out->len, size = m->type == SBX_ENTRY_FILE ? m->size : 0;

	if (!path_ok(m->path))
		return sbx_fail(-SBX_EINVAL, "tar: '%.200s' is not a name an archive may hold",
		                m->path ? m->path : "(null)");
	if (m->type != SBX_ENTRY_FILE && m->type != SBX_ENTRY_DIR)
		return sbx_fail(-SBX_EINVAL, "tar: '%.200s': only files and directories are written",
		                m->path);
	if (size && !m->data)
		return sbx_fail(-SBX_EINVAL, "tar: '%.200s': no data", m->path);
	if (strlen(m->path) >= NAME_FIELD)
		pax_path(out, m->path, m->mode, m->uid, m->gid);
	header(h, m->path, m->type == SBX_ENTRY_DIR ? '5' : '0', m->mode, m->uid, m->gid, size,
	       m->mtime);
	sbx_buf_append(out, h, BLOCK);
	if (size) {
		sbx_buf_append(out, m->data, size);
		pad(out, size);
	}
	if (out->oom) {
		out->len = start;
		return sbx_fail(-SBX_ENOMEM, "tar: out of memory");
	}
	return 0;
}

void sbx_tar_finish(sbx_buf *out)
{
	static const char zeros[2 * BLOCK];

	sbx_buf_append(out, zeros, sizeof zeros);
}
