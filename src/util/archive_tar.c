/* tar and tar.gz: ustar, GNU long names ('L', 'K') and pax headers ('x': path, linkpath,
 * size). A tar.gz is inflated as a stream, never as a whole: only the block being looked at
 * and the file being handed out are in memory, and the expanded stream has a cap. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <agentsbx/agentsbx.h>
#include "archive_int.h"
#include "cleanup.h"
#include "error.h"

#define BLOCK 512
/* Long names and pax headers: far beyond any real name, small enough to hold in memory. */
#define META_MAX ((uint64_t)1 << 20)
#define SKIP_CHUNK ((size_t)64 << 10)

/* ---------------------------------------------------------------------------------------
 * The byte source: the archive itself, or what inflates from it
 * ------------------------------------------------------------------------------------- */

struct src {
	sbx_arc *a;
	const unsigned char *in;
	size_t in_len, in_pos;
	bool gzip;
	z_stream zs;
	bool zs_live;
	bool z_done;            /* the last gzip member ended */
	unsigned char *buf;     /* gzip: what take() returns */
	size_t buf_cap;
	uint64_t out_total, out_cap;
};

static int gz_fail(const struct src *s, const char *what)
{
	return sbx_arc_fail(s->a, NULL, 0, "archive: the gzip data %s", what);
}

/* After a gzip member: another member, zero padding, or an error. */
static int gz_member_end(struct src *s)
{
	const unsigned char *rest = s->in + s->in_pos;
	size_t n = s->in_len - s->in_pos;

	if (n >= 2 && rest[0] == 0x1f && rest[1] == 0x8b) {
		if (inflateReset(&s->zs) != Z_OK)
			return gz_fail(s, "cannot be read");
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (rest[i])
			return gz_fail(s, "has trailing garbage");
	s->z_done = true;
	return 0;
}

/* Inflates up to n bytes into s->buf; *got < n only at the end of the stream. */
static int gz_fill(struct src *s, size_t n, size_t *got)
{
	s->zs.next_out = s->buf;
	s->zs.avail_out = (uInt)n;
	while (s->zs.avail_out && !s->z_done) {
		size_t avail = s->in_len - s->in_pos;
		s->zs.next_in = (unsigned char *)(uintptr_t)(s->in + s->in_pos);
		s->zs.avail_in = avail > UINT_MAX ? UINT_MAX : (uInt)avail;
		int zr = inflate(&s->zs, Z_NO_FLUSH);
		s->in_pos = (size_t)(s->zs.next_in - s->in);
		if (zr == Z_STREAM_END) {
			int r = gz_member_end(s);
			if (r < 0)
				return r;
		} else if (zr == Z_BUF_ERROR && s->zs.avail_in == 0) {
			return gz_fail(s, "is truncated");
		} else if (zr != Z_OK) {
			return gz_fail(s, zr == Z_MEM_ERROR ? "needs more memory than there is" :
			               "is corrupt");
		}
	}
	*got = n - s->zs.avail_out;
	return 0;
}

/* Points *p at the next n bytes (n <= the single-file limit + a block). Fewer only at the
 * end of the data: *got says how many. Valid until the next take. */
static int src_take(struct src *s, size_t n, const unsigned char **p, size_t *got)
{
	if (!s->gzip) {
		*got = n < s->in_len - s->in_pos ? n : s->in_len - s->in_pos;
		*p = s->in + s->in_pos;
		s->in_pos += *got;
		return 0;
	}
	if (n > UINT_MAX)
		return gz_fail(s, "holds an entry too large to inflate");
	if (n > s->buf_cap) {
		unsigned char *nb = realloc(s->buf, n);
		if (!nb)
			return sbx_fail(-SBX_ENOMEM, "archive: out of memory (%zu bytes)", n);
		s->buf = nb;
		s->buf_cap = n;
	}
	int r = gz_fill(s, n, got);
	if (r < 0)
		return r;
	s->out_total += *got;
	if (s->out_total > s->out_cap)
		return sbx_arc_fail(s->a, NULL, 0, "archive: the tar.gz expands beyond the limit "
		                    "of %llu bytes", (unsigned long long)s->out_cap);
	*p = s->buf;
	return 0;
}

static int truncated(const struct src *s)
{
	return sbx_arc_fail(s->a, NULL, 0, "archive: the tar data is truncated");
}

/* Takes exactly n bytes or fails: the archive is truncated. */
static int src_need(struct src *s, size_t n, const unsigned char **p)
{
	size_t got;
	int r = src_take(s, n, p, &got);

	if (r < 0)
		return r;
	return got == n ? 0 : truncated(s);
}

static int src_skip(struct src *s, uint64_t n)
{
	const unsigned char *p;

	while (n) {
		size_t step = n < SKIP_CHUNK ? (size_t)n : SKIP_CHUNK;
		int r = src_need(s, step, &p);
		if (r < 0)
			return r;
		n -= step;
	}
	return 0;
}

/* Inflates what is left, so the gzip trailer (the CRC of everything) is checked too. */
static int gz_drain(struct src *s)
{
	const unsigned char *p;
	size_t got;
	int r;

	do {
		if ((r = src_take(s, SKIP_CHUNK, &p, &got)) < 0)
			return r;
	} while (got == SKIP_CHUNK);
	return 0;
}

static uint64_t padding(uint64_t size)
{
	return (BLOCK - size % BLOCK) % BLOCK;
}

/* ---------------------------------------------------------------------------------------
 * Headers
 * ------------------------------------------------------------------------------------- */

bool sbx_arc_tar_header_ok(const unsigned char *h)
{
	unsigned long sum = 0, stored = 0;
	size_t i = 148;

	for (size_t k = 0; k < BLOCK; k++)
		sum += k >= 148 && k < 156 ? ' ' : h[k];
	while (i < 156 && h[i] == ' ')
		i++;
	if (i == 156 || h[i] < '0' || h[i] > '7')
		return false;
	for (; i < 156 && h[i] >= '0' && h[i] <= '7'; i++)
		stored = stored * 8 + (unsigned long)(h[i] - '0');
	return stored == sum;
}

/* A numeric field: octal digits (space or NUL terminated), or GNU base-256 for big values. */
static bool parse_number(const unsigned char *f, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (f[0] & 0x80) {
		if (f[0] != 0x80)
			return false;   /* negative, or wider than we take */
		for (i = 1; i < n; i++) {
			if (v >> 56)
				return false;
			v = v << 8 | f[i];
		}
		*out = v;
		return true;
	}
	while (i < n && f[i] == ' ')
		i++;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return false;
		v = v * 8 + (uint64_t)(f[i] - '0');
	}
	for (; i < n; i++)
		if (f[i] != ' ' && f[i] != '\0')
			return false;
	*out = v;
	return true;
}

static bool all_zero(const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* What pax and GNU headers say about the next entry. */
struct pending {
	char *path;
	size_t path_len;
	char *link;
	size_t link_len;
	bool has_size;
	uint64_t size;
	bool sparse;
};

static void pending_clear(struct pending *p)
{
	free(p->path);
	free(p->link);
	*p = (struct pending){ 0 };
}

static int set_bytes(char **dst, size_t *dst_len, const void *src, size_t n)
{
	char *c = malloc(n + 1);

	if (!c)
		return sbx_fail(-SBX_ENOMEM, "archive: out of memory");
	memcpy(c, src, n);
	c[n] = '\0';
	free(*dst);
	*dst = c;
	*dst_len = n;
	return 0;
}

static bool parse_decimal(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return true;
}

static int pax_record(struct src *s, struct pending *pd, const char *key, size_t klen,
                      const char *val, size_t vlen)
{
	if (klen == 4 && memcmp(key, "path", 4) == 0)
		return set_bytes(&pd->path, &pd->path_len, val, vlen);
	if (klen == 8 && memcmp(key, "linkpath", 8) == 0)
		return set_bytes(&pd->link, &pd->link_len, val, vlen);
	if (klen == 4 && memcmp(key, "size", 4) == 0) {
		if (!parse_decimal(val, vlen, &pd->size))
			return sbx_arc_fail(s->a, NULL, 0, "archive: a pax header has a bad size");
		pd->has_size = true;
	}
	if (klen > 11 && memcmp(key, "GNU.sparse.", 11) == 0)
		pd->sparse = true;
	return 0;
}

/* Records "<length> <key>=<value>\n", the length counting the whole record. */
static int parse_pax(struct src *s, struct pending *pd, const char *d, size_t n)
{
	size_t pos = 0;
	int r;

	while (pos < n) {
		const char *rec = d + pos;
		size_t room = n - pos, digits = 0;
		uint64_t len;
		while (digits < room && digits < 20 && rec[digits] >= '0' && rec[digits] <= '9')
			digits++;
		if (!parse_decimal(rec, digits, &len) || len > room || len < digits + 4 ||
		    rec[digits] != ' ' || rec[len - 1] != '\n')
			return sbx_arc_fail(s->a, NULL, 0, "archive: a pax header is malformed");
		const char *key = rec + digits + 1, *end = rec + len - 1;
		const char *eq = memchr(key, '=', (size_t)(end - key));
		if (!eq || eq == key)
			return sbx_arc_fail(s->a, NULL, 0, "archive: a pax header is malformed");
		r = pax_record(s, pd, key, (size_t)(eq - key), eq + 1, (size_t)(end - eq - 1));
		if (r < 0)
			return r;
		pos += (size_t)len;
	}
	return 0;
}

/* Reads the content of a metadata header ('L', 'K', 'x', 'g') with its padding. */
static int read_meta(struct src *s, uint64_t size, char **out, size_t *len)
{
	const unsigned char *p;
	int r;

	if (size > META_MAX)
		return sbx_arc_fail(s->a, NULL, 0, "archive: a tar metadata header of %llu bytes "
		                    "is larger than %llu", (unsigned long long)size,
		                    (unsigned long long)META_MAX);
	if ((r = src_need(s, (size_t)size, &p)) < 0)
		return r;
	*out = malloc((size_t)size + 1);
	if (!*out)
		return sbx_fail(-SBX_ENOMEM, "archive: out of memory");
	memcpy(*out, p, (size_t)size);
	(*out)[size] = '\0';
	*len = (size_t)size;
	if ((r = src_skip(s, padding(size))) < 0)
		free(SBX_TAKE_PTR(*out));
	return r;
}

/* A GNU long name or link: the data up to its terminating NUL (inner NULs stay, so the
 * name checks see them). */
static int long_name(struct src *s, uint64_t size, char **dst, size_t *dst_len)
{
	char *data = NULL;
	size_t len;
	int r = read_meta(s, size, &data, &len);

	if (r < 0)
		return r;
	while (len && data[len - 1] == '\0')
		len--;
	free(*dst);
	*dst = data;
	*dst_len = len;
	return 0;
}

static int metadata_header(struct src *s, char type, uint64_t size, struct pending *pd)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r;

	switch (type) {
	case 'L':
		return long_name(s, size, &pd->path, &pd->path_len);
	case 'K':
		return long_name(s, size, &pd->link, &pd->link_len);
	case 'x':
		if ((r = read_meta(s, size, &data, &len)) < 0)
			return r;
		return parse_pax(s, pd, data, len);
	default:        /* 'g': global pax records (mtime defaults and such): not needed */
		if ((r = read_meta(s, size, &data, &len)) < 0)
			return r;
		return 0;
	}
}

/* The name as the header holds it: ustar's prefix + "/" + name, or just the name. */
static size_t header_name(const unsigned char *h, char out[256 + 1])
{
	size_t n = strnlen((const char *)h, 100), o = 0;

	if (memcmp(h + 257, "ustar\0" "00", 8) == 0 && h[345]) {
		size_t pn = strnlen((const char *)h + 345, 155);
		memcpy(out, h + 345, pn);
		out[pn] = '/';
		o = pn + 1;
	}
	memcpy(out + o, h, n);
	o += n;
	out[o] = '\0';
	return o;
}

static void classify(char type, bool dir_name, sbx_arc_raw *raw)
{
	raw->type = SBX_ENTRY_OTHER;
	switch (type) {
	case '0': case '\0': case '7':
		/* Old (v7) archives mark directories only by the trailing slash. */
		raw->type = dir_name ? SBX_ENTRY_DIR : SBX_ENTRY_FILE;
		break;
	case '1': raw->type = SBX_ENTRY_HARDLINK; break;
	case '2': raw->type = SBX_ENTRY_SYMLINK; break;
	case '5': raw->type = SBX_ENTRY_DIR; break;
	case '3': raw->other = "a character device"; break;
	case '4': raw->other = "a block device"; break;
	case '6': raw->other = "a FIFO"; break;
	case 'S': raw->other = "a sparse file"; break;
	case 'D': raw->other = "a GNU dump directory"; break;
	case 'M': raw->other = "a multi-volume continuation"; break;
	default: raw->other = "of an unknown tar entry type"; break;
	}
}

/* One entry (not a metadata header): checks it, reads its content, hands it on. */
static int tar_entry(struct src *s, const unsigned char *h, uint64_t size, struct pending *pd)
{
	char hname[257], hlink[101];
	sbx_arc_raw raw = { 0 };
	const unsigned char *data = NULL;
	size_t hlen = header_name(h, hname), llen = strnlen((const char *)h + 157, 100);
	int r;

	memcpy(hlink, h + 157, llen);
	hlink[llen] = '\0';
	raw.name = pd->path ? pd->path : hname;
	raw.name_len = pd->path ? pd->path_len : hlen;
	raw.link = pd->link ? pd->link : hlink;
	raw.link_len = pd->link ? pd->link_len : llen;
	uint64_t mode = 0, mtime = 0;
	(void)parse_number(h + 100, 8, &mode);
	raw.mode = (unsigned)(mode & 0777);
	if (parse_number(h + 136, 12, &mtime) && mtime <= INT64_MAX)
		raw.mtime = (int64_t)mtime;
	classify((char)h[156], raw.name_len && raw.name[raw.name_len - 1] == '/', &raw);
	if (pd->sparse) {
		raw.type = SBX_ENTRY_OTHER;
		raw.other = "a sparse file";
	}
	if (raw.type == SBX_ENTRY_FILE) {
		if ((r = sbx_arc_admit(s->a, raw.name, raw.name_len, size)) < 0)
			return r;
		if ((r = src_need(s, (size_t)size, &data)) < 0)
			return r;
		raw.data = data;
		raw.size = size;
		size = 0;
	}
	if ((r = sbx_arc_emit(s->a, &raw)) < 0)
		return r;
	return src_skip(s, size + padding(raw.type == SBX_ENTRY_FILE ? raw.size : size));
}

static int read_entries(struct src *s)
{
	struct pending pd = { 0 };
	const unsigned char *h;
	size_t got;
	uint64_t at = 0;
	int r;

	for (;;) {
		if ((r = src_take(s, BLOCK, &h, &got)) < 0)
			break;
		/* The data may simply stop after the last entry, without the zero blocks. */
		if (got == 0 || (got == BLOCK && all_zero(h, BLOCK))) {
			if (pd.path || pd.link || pd.has_size)
				r = truncated(s);
			else if (s->gzip)
				r = gz_drain(s);
			break;
		}
		if (got < BLOCK) {
			r = truncated(s);
			break;
		}
		uint64_t size;
		char type = (char)h[156];
		if (!sbx_arc_tar_header_ok(h) || !parse_number(h + 124, 12, &size)) {
			r = sbx_arc_fail(s->a, NULL, 0, "archive: the tar header at byte %llu is "
			                 "corrupt (%s)", (unsigned long long)at,
			                 sbx_arc_tar_header_ok(h) ? "bad size" : "bad checksum");
			break;
		}
		if (type == 'L' || type == 'K' || type == 'x' || type == 'g') {
			r = metadata_header(s, type, size, &pd);
		} else {
			if (pd.has_size)
				size = pd.size;
			r = tar_entry(s, h, size, &pd);
			pending_clear(&pd);
		}
		if (r < 0)
			break;
		at = s->gzip ? s->out_total : s->in_pos;
	}
	pending_clear(&pd);
	return r;
}

int sbx_arc_read_tar(sbx_arc *a, const void *data, size_t len, bool gzip)
{
	const sbx_archive_limits *lim = sbx_arc_limits(a);
	struct src s = { .a = a, .in = data, .in_len = len, .gzip = gzip };
	int r;

	if (gzip) {
		/* Files, plus a header and padding per entry, plus slack for long names. */
		s.out_cap = lim->max_total + (uint64_t)lim->max_entries * 3 * BLOCK + META_MAX;
		if (inflateInit2(&s.zs, 16 + MAX_WBITS) != Z_OK)
			return sbx_fail(-SBX_ENOMEM, "archive: cannot start inflating");
		s.zs_live = true;
	}
	r = read_entries(&s);
	if (s.zs_live)
		inflateEnd(&s.zs);
	free(s.buf);
	return r;
}
