/* The archive readers: tar (ustar, GNU long names, pax), tar.gz/xz/zst, zip and host directories,
 * on archives made by the real tools and on hostile ones built byte by byte here: names that
 * climb out or are absolute, links out, a file written through a symlink, devices, bombs,
 * lies about sizes, truncation. */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <agentsbx/agentsbx.h>
#include "support.h"
#include "util/archive.h"
#include "util/buf.h"

static const sbx_archive_limits big = { 1000, 8 << 20, 64 << 20 };

/* ---------------------------------------------------------------------------------------
 * Collecting what the iteration delivers, one line per entry
 * ------------------------------------------------------------------------------------- */

struct seen {
	sbx_buf out;
	int stop_at;        /* return -SBX_EIO at this entry (1-based); 0 = never */
	int count;
};

static int collect(const sbx_archive_entry *e, void *ud)
{
	struct seen *s = ud;

	if (++s->count == s->stop_at)
		return -SBX_EIO;
	switch (e->type) {
	case SBX_ENTRY_FILE:
		sbx_buf_printf(&s->out, "F %s %zu %o %.*s\n", e->path, e->size, e->mode,
		               e->size > 16 ? 16 : (int)e->size, (const char *)e->data);
		break;
	case SBX_ENTRY_DIR:
		sbx_buf_printf(&s->out, "D %s\n", e->path);
		break;
	case SBX_ENTRY_SYMLINK:
		sbx_buf_printf(&s->out, "L %s -> %s\n", e->path, e->link);
		break;
	case SBX_ENTRY_HARDLINK:
		sbx_buf_printf(&s->out, "H %s => %s %zu\n", e->path, e->link, e->size);
		break;
	default:
		ck_abort_msg("unknown entry type %d", e->type);
	}
	return 0;
}

/* Counts entries of every kind, special files included (the as-stored mode). */
static int count_kinds(const sbx_archive_entry *e, void *ud)
{
	struct seen *s = ud;

	ck_assert(e->type == SBX_ENTRY_SYMLINK || e->type == SBX_ENTRY_SPECIAL);
	s->count++;
	return 0;
}

static const char *fmt_static(const char *format, ...)
{
	static char buf[1024];
	va_list ap;

	va_start(ap, format);
	vsnprintf(buf, sizeof buf, format, ap);
	va_end(ap);
	return buf;
}

/* Iterates and returns the listing (static), failing the test on an error. */
static const char *list_ok(const void *data, size_t len, int format,
                           const sbx_archive_limits *lim)
{
	static char copy[8192];
	struct seen s = { 0 };
	int r = sbx_archive_iterate(data, len, format, lim ? lim : &big, collect, &s);

	ck_assert_msg(r == 0, "iterate failed (%d): %s", r, sbx_last_error());
	snprintf(copy, sizeof copy, "%s", s.out.data ? s.out.data : "");
	sbx_buf_free(&s.out);
	return copy;
}

/* Iterates expecting -SBX_EINVAL (or code) with fragment in the message. */
static void list_fails(const void *data, size_t len, int format, const sbx_archive_limits *lim,
                       const char *fragment)
{
	struct seen s = { 0 };
	int r = sbx_archive_iterate(data, len, format, lim ? lim : &big, collect, &s);

	ck_assert_msg(r == -SBX_EINVAL, "expected -SBX_EINVAL, got %d (%s); delivered:\n%s", r,
	              sbx_last_error(), s.out.data ? s.out.data : "");
	ck_assert_msg(strstr(sbx_last_error(), fragment), "message '%s' lacks '%s'",
	              sbx_last_error(), fragment);
	sbx_buf_free(&s.out);
}

/* ---------------------------------------------------------------------------------------
 * A tar writer, byte by byte
 * ------------------------------------------------------------------------------------- */

typedef struct sbx_buf tarb;

static void octal(unsigned char *f, size_t n, uint64_t v)
{
	char tmp[32];

	snprintf(tmp, sizeof tmp, "%0*llo", (int)(n - 1), (unsigned long long)v);
	memcpy(f, tmp, n - 1);
	f[n - 1] = '\0';
}

static void tb_pad(tarb *t)
{
	static const char zeros[512];

	if (t->len % 512)
		sbx_buf_append(t, zeros, 512 - t->len % 512);
}

/* A header; name up to 100 bytes (memcpy'd, so NULs and any bytes are possible). */
static void tb_header_n(tarb *t, const char *name, size_t nlen, char type, uint64_t size,
                        const char *link, unsigned mode)
{
	unsigned char h[512] = { 0 };
	unsigned sum = 0;

	memcpy(h, name, nlen > 100 ? 100 : nlen);
	octal(h + 100, 8, mode);
	octal(h + 108, 8, 0);
	octal(h + 116, 8, 0);
	octal(h + 124, 12, size);
	octal(h + 136, 12, 0);
	h[156] = (unsigned char)type;
	if (link)
		memcpy(h + 157, link, strlen(link) > 100 ? 100 : strlen(link));
	memcpy(h + 257, "ustar\0" "00", 8);
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	octal(h + 148, 7, sum);
	h[155] = ' ';
	sbx_buf_append(t, h, 512);
}

static void tb_header(tarb *t, const char *name, char type, uint64_t size, const char *link,
                      unsigned mode)
{
	tb_header_n(t, name, strlen(name), type, size, link, mode);
}

static void tb_file(tarb *t, const char *name, const char *content)
{
	tb_header(t, name, '0', strlen(content), NULL, 0644);
	sbx_buf_append(t, content, strlen(content));
	tb_pad(t);
}

static void tb_meta(tarb *t, char type, const void *data, size_t n)
{
	tb_header(t, type == 'x' ? "PaxHeaders/x" : "././@LongLink", type, n, NULL, 0644);
	sbx_buf_append(t, data, n);
	tb_pad(t);
}

/* One pax record "<len> key=value\n" with the length computed. */
static void tb_pax(tarb *t, const char *key, const char *value, size_t vlen)
{
	char rec[8192];
	size_t body = strlen(key) + 1 + vlen + 1, len = body + 1;

	while (snprintf(NULL, 0, "%zu", len) + 1 + body != len)
		len++;
	int o = snprintf(rec, sizeof rec, "%zu %s=", len, key);
	memcpy(rec + o, value, vlen);
	rec[o + vlen] = '\n';
	tb_meta(t, 'x', rec, len);
}

static void tb_end(tarb *t)
{
	static const char zeros[1024];

	sbx_buf_append(t, zeros, sizeof zeros);
}

static void gzip_bytes(const void *in, size_t len, sbx_buf *out)
{
	z_stream zs = { 0 };
	unsigned char chunk[65536];
	int zr;

	ck_assert_int_eq(deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY),
	                 Z_OK);
	zs.next_in = (unsigned char *)(uintptr_t)in;
	zs.avail_in = (uInt)len;
	do {
		zs.next_out = chunk;
		zs.avail_out = sizeof chunk;
		zr = deflate(&zs, Z_FINISH);
		sbx_buf_append(out, chunk, sizeof chunk - zs.avail_out);
	} while (zr == Z_OK);
	ck_assert_int_eq(zr, Z_STREAM_END);
	deflateEnd(&zs);
}

/* ---------------------------------------------------------------------------------------
 * A zip writer, byte by byte
 * ------------------------------------------------------------------------------------- */

typedef struct zipb {
	sbx_buf d, cd;
	unsigned n;
} zipb;

static void put16(sbx_buf *b, unsigned v)
{
	unsigned char x[2] = { (unsigned char)v, (unsigned char)(v >> 8) };
	sbx_buf_append(b, x, 2);
}

static void put32(sbx_buf *b, uint32_t v)
{
	unsigned char x[4] = { (unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
	                       (unsigned char)(v >> 24) };
	sbx_buf_append(b, x, 4);
}

static void raw_deflate(const void *in, size_t len, sbx_buf *out)
{
	z_stream zs = { 0 };
	size_t cap = compressBound((uLong)len) + 64;
	unsigned char *o = malloc(cap);

	ck_assert_int_eq(deflateInit2(&zs, 9, Z_DEFLATED, -MAX_WBITS, 9, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = (unsigned char *)(uintptr_t)in;
	zs.avail_in = (uInt)len;
	zs.next_out = o;
	zs.avail_out = (uInt)cap;
	ck_assert_int_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
	sbx_buf_append(out, o, zs.total_out);
	deflateEnd(&zs);
	free(o);
}

struct zopt {
	unsigned method;        /* 0 stored, 8 deflate, other: written as stored */
	uint32_t unix_mode;     /* full st_mode; 0 = a DOS-made entry */
	unsigned flags;
	long declared;          /* >= 0: the uncompressed size to claim instead of the real one */
	const char *local_name; /* a different name in the local header */
};

static void zb_add_n(zipb *z, const char *name, size_t nlen, const void *data, size_t len,
                     const struct zopt *o)
{
	sbx_buf comp = { 0 };
	uint32_t crc = (uint32_t)crc32(0, data, (uInt)len);
	uint32_t off = (uint32_t)z->d.len;
	uint32_t usize = o->declared >= 0 ? (uint32_t)o->declared : (uint32_t)len;
	const char *lname = o->local_name ? o->local_name : name;
	size_t lnlen = o->local_name ? strlen(lname) : nlen;

	if (o->method == 8)
		raw_deflate(data, len, &comp);
	else
		sbx_buf_append(&comp, data, len);
	/* local header */
	put32(&z->d, 0x04034b50);
	put16(&z->d, 20);
	put16(&z->d, o->flags);
	put16(&z->d, o->method);
	put32(&z->d, 0);
	put32(&z->d, crc);
	put32(&z->d, (uint32_t)comp.len);
	put32(&z->d, usize);
	put16(&z->d, (unsigned)lnlen);
	put16(&z->d, 0);
	sbx_buf_append(&z->d, lname, lnlen);
	sbx_buf_append(&z->d, comp.data ? comp.data : "", comp.len);
	/* central record */
	put32(&z->cd, 0x02014b50);
	put16(&z->cd, o->unix_mode ? (3 << 8 | 20) : 20);
	put16(&z->cd, 20);
	put16(&z->cd, o->flags);
	put16(&z->cd, o->method);
	put32(&z->cd, 0);
	put32(&z->cd, crc);
	put32(&z->cd, (uint32_t)comp.len);
	put32(&z->cd, usize);
	put16(&z->cd, (unsigned)nlen);
	put16(&z->cd, 0);
	put16(&z->cd, 0);
	put16(&z->cd, 0);
	put16(&z->cd, 0);
	put32(&z->cd, o->unix_mode << 16);
	put32(&z->cd, off);
	sbx_buf_append(&z->cd, name, nlen);
	z->n++;
	sbx_buf_free(&comp);
}

static void zb_add(zipb *z, const char *name, const char *content, const struct zopt *o)
{
	static const struct zopt plain = { 8, 0100644, 0, -1, NULL };

	zb_add_n(z, name, strlen(name), content, strlen(content), o ? o : &plain);
}

/* Appends the central directory and end record; the zip is in z->d. */
static void zb_finish(zipb *z)
{
	uint32_t cd_off = (uint32_t)z->d.len;

	sbx_buf_append(&z->d, z->cd.data ? z->cd.data : "", z->cd.len);
	put32(&z->d, 0x06054b50);
	put16(&z->d, 0);
	put16(&z->d, 0);
	put16(&z->d, z->n);
	put16(&z->d, z->n);
	put32(&z->d, (uint32_t)z->cd.len);
	put32(&z->d, cd_off);
	put16(&z->d, 0);
	sbx_buf_free(&z->cd);
}

/* ---------------------------------------------------------------------------------------
 * Real tools
 * ------------------------------------------------------------------------------------- */

static char *tmp;

static void setup(void)
{
	tmp = test_mkdtemp();
}

static void teardown(void)
{
	test_rm_rf(tmp);
	free(tmp);
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	va_list ap;
	char *cmd = NULL;

	va_start(ap, fmt);
	ck_assert_int_ge(vasprintf(&cmd, fmt, ap), 0);
	va_end(ap);
	ck_assert_msg(system(cmd) == 0, "command failed: %s", cmd);
	free(cmd);
}

static char *slurp_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	sbx_buf b = { 0 };
	char chunk[65536];
	size_t n;

	ck_assert_ptr_nonnull(f);
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		sbx_buf_append(&b, chunk, n);
	fclose(f);
	return sbx_buf_steal(&b, len);
}

#define LONG_DIR "a-directory-name-that-is-rather-long-so-that-the-path-exceeds-one-hundred-bytes"
#define LONG_FILE "and-a-file-name-that-is-also-long-enough.txt"

/* A tree with a long path, a symlink with a long target, an executable, an empty dir. */
static void make_tree(void)
{
	sh("cd '%s' && mkdir -p src/" LONG_DIR " src/empty && printf hello > src/" LONG_DIR "/"
	   LONG_FILE " && printf '#!/bin/sh\\n' > src/run.sh && chmod 755 src/run.sh && "
	   "ln -s " LONG_DIR "/" LONG_FILE " src/link", tmp);
}

static const char *const tree_listing =
	"D " LONG_DIR "\nF " LONG_DIR "/" LONG_FILE " 5 644 hello\nD empty\n"
	"L link -> " LONG_DIR "/" LONG_FILE "\nF run.sh 10 755 #!/bin/sh\n\n";

/* Sorts the lines of a listing, so tool order does not matter. */
static char *sorted_lines(const char *text)
{
	char *copy = strdup(text), *lines[64], *save = NULL;
	size_t n = 0;
	sbx_buf b = { 0 };

	for (char *l = strtok_r(copy, "\n", &save); l && n < 64; l = strtok_r(NULL, "\n", &save))
		lines[n++] = l;
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (strcmp(lines[j], lines[i]) < 0) {
				char *x = lines[i];
				lines[i] = lines[j];
				lines[j] = x;
			}
	for (size_t i = 0; i < n; i++)
		sbx_buf_printf(&b, "%s\n", lines[i]);
	free(copy);
	return sbx_buf_steal(&b, NULL);
}

static void check_tool_archive(const char *file, int format)
{
	size_t len;
	char *data = slurp_all(test_path_at(tmp, file), &len);
	int detected = 0;

	ck_assert_int_eq(sbx_archive_detect(data, len, &detected), 0);
	ck_assert_int_eq(detected, format);
	/* run.sh's "#!/bin/sh\n" prints with its newline: compare sorted, blank lines dropped. */
	char *got = sorted_lines(list_ok(data, len, format, NULL));
	char *want = sorted_lines(tree_listing);
	ck_assert_str_eq(got, want);
	free(got);
	free(want);
	free(data);
}

START_TEST(gnu_tar_long_names)
{
	make_tree();
	sh("cd '%s/src' && tar --format=gnu -cf ../a.tar .", tmp);
	check_tool_archive("a.tar", SBX_ARCHIVE_TAR);
}
END_TEST

START_TEST(pax_tar_gz)
{
	make_tree();
	sh("cd '%s/src' && tar --format=pax -czf ../a.tgz *", tmp);
	check_tool_archive("a.tgz", SBX_ARCHIVE_TAR_GZ);
}
END_TEST

START_TEST(pax_tar_xz)
{
	make_tree();
	sh("cd '%s/src' && tar --format=pax -cJf ../a.txz *", tmp);
	check_tool_archive("a.txz", SBX_ARCHIVE_TAR_XZ);
}
END_TEST

START_TEST(gnu_tar_zst)
{
	make_tree();
	sh("cd '%s/src' && tar --format=gnu -cf - . | zstd -q -o ../a.tzst", tmp);
	check_tool_archive("a.tzst", SBX_ARCHIVE_TAR_ZST);
}
END_TEST

/* The format named is the one read: a tar.xz handed in as "tar.gz" or "tar" is refused. */
START_TEST(format_must_match)
{
	size_t len;

	make_tree();
	sh("cd '%s/src' && tar -cJf ../a.txz * && tar -cf ../a.tar *", tmp);
	char *xz = slurp_all(test_path_at(tmp, "a.txz"), &len);
	list_fails(xz, len, SBX_ARCHIVE_TAR_GZ, NULL, "the tar.gz data is corrupt or truncated");
	list_fails(xz, len, SBX_ARCHIVE_TAR_ZST, NULL, "the tar.zst data is corrupt or truncated");
	list_fails(xz, len, SBX_ARCHIVE_ZIP, NULL, "the zip data is corrupt or truncated");
	free(xz);
	char *plain = slurp_all(test_path_at(tmp, "a.tar"), &len);
	list_fails(plain, len, SBX_ARCHIVE_TAR_XZ, NULL, "archive: the data is not a tar.xz "
	           "archive (it is wrapped in none)");
	free(plain);
}
END_TEST

/* Real sparse files (GNU tar's --sparse) are refused, whatever they would expand to. */
START_TEST(gnu_sparse_refused)
{
	size_t len;

	sh("cd '%s' && mkdir sp && truncate -s 1M sp/holes && printf x >> sp/holes && "
	   "tar --sparse --format=pax -cf sp.tar -C sp holes", tmp);
	char *data = slurp_all(test_path_at(tmp, "sp.tar"), &len);
	list_fails(data, len, SBX_ARCHIVE_TAR, NULL, "archive entry 'holes': is a sparse file");
	free(data);
}
END_TEST

/* A bomb in xz is bounded like one in gzip: by the single-file limit before any content. */
START_TEST(xz_bomb)
{
	size_t len;
	const sbx_archive_limits lim = { 100, 1 << 20, 1 << 20, 0 };

	sh("cd '%s' && head -c 64M /dev/zero > zeros && tar -cJf bomb.txz zeros && rm zeros",
	   tmp);
	char *data = slurp_all(test_path_at(tmp, "bomb.txz"), &len);
	ck_assert_uint_lt(len, 1 << 20);
	list_fails(data, len, SBX_ARCHIVE_TAR_XZ, &lim, "archive entry 'zeros': 67108864 bytes, "
	           "more than the limit of 1048576 for one file");
	free(data);
}
END_TEST

/* What the writer makes, GNU tar reads with owners, modes and times as given. */
START_TEST(tar_writer_for_other_readers)
{
	sbx_buf t = { 0 };

	ck_assert_int_eq(sbx_tar_append(&t, &(sbx_tar_member){ .path = "d/" LONG_DIR "/" LONG_FILE,
	                                                      .type = SBX_ENTRY_FILE, .mode = 0640,
	                                                      .uid = 65534, .gid = 4000000,
	                                                      .mtime = 1700000000, .data = "hello",
	                                                      .size = 5 }), 0);
	ck_assert_int_eq(sbx_tar_append(&t, &(sbx_tar_member){ .path = "caf\xc3\xa9",
	                                                      .type = SBX_ENTRY_DIR, .mode = 0755 }),
	                 0);
	sbx_tar_finish(&t);
	test_put_file(tmp, "w.tar", "", 0644);
	FILE *f = fopen(test_path_at(tmp, "w.tar"), "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(t.data, 1, t.len, f), t.len);
	fclose(f);
	sh("cd '%s' && TZ=UTC tar --numeric-owner -tvf w.tar > list && grep -q "
	   "'^-rw-r----- 65534/4000000 *5 2023-11-14 22:13 d/" LONG_DIR "/" LONG_FILE "$' list && "
	   "tar -xOf w.tar | grep -qx hello && tar -tf w.tar | grep -qx 'caf\303\251/'", tmp);
	sbx_buf_free(&t);
}
END_TEST

/* Non-ASCII names come through as the UTF-8 they are, whatever the locale: from pax
 * headers, from GNU tar, from a zip with the UTF-8 flag (Python sets it). */
START_TEST(utf8_names)
{
	size_t len;
	char *data;

	sh("cd '%s' && mkdir n && printf x > n/caf\303\251.txt && "
	   "tar --format=pax -cf p.tar -C n . && tar --format=gnu -cf g.tar -C n . && "
	   "python3 -c \"import zipfile; zipfile.ZipFile('u.zip', 'w').writestr("
	   "'caf\\u00e9.txt', 'x')\"", tmp);
	static const char *const files[] = { "p.tar", "g.tar", "u.zip" };
	for (size_t i = 0; i < 3; i++) {
		data = slurp_all(test_path_at(tmp, files[i]), &len);
		const char *got = list_ok(data, len, i < 2 ? SBX_ARCHIVE_TAR : SBX_ARCHIVE_ZIP, NULL);
		ck_assert_msg(strstr(got, "F caf\xc3\xa9.txt 1 "), "%s: %s", files[i], got);
		free(data);
	}
}
END_TEST

START_TEST(ustar_prefix_field)
{
	size_t len;

	/* ustar splits a long path into prefix and name; it cannot hold long link targets. */
	sh("cd '%s' && mkdir -p u/" LONG_DIR " && printf hello > u/" LONG_DIR "/" LONG_FILE
	   " && cd u && tar --format=ustar -cf ../u.tar " LONG_DIR, tmp);
	char *data = slurp_all(test_path_at(tmp, "u.tar"), &len);
	ck_assert_str_eq(list_ok(data, len, SBX_ARCHIVE_TAR, NULL),
	                 "D " LONG_DIR "\nF " LONG_DIR "/" LONG_FILE " 5 644 hello\n");
	free(data);
}
END_TEST

START_TEST(python_zip)
{
	make_tree();
	sh("cd '%s/src' && python3 - <<'EOF'\n"
	   "import os, zipfile, stat\n"
	   "with zipfile.ZipFile('../a.zip', 'w', zipfile.ZIP_DEFLATED) as z:\n"
	   "    for root, dirs, files in os.walk('.'):\n"
	   "        for d in dirs:\n"
	   "            p = os.path.join(root, d)[2:]\n"
	   "            if os.path.islink(p):\n"
	   "                continue\n"
	   "            z.write(p, p)\n"
	   "        for f in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:\n"
	   "            p = os.path.join(root, f)[2:]\n"
	   "            if os.path.islink(p):\n"
	   "                i = zipfile.ZipInfo(p)\n"
	   "                i.create_system = 3\n"
	   "                i.external_attr = (stat.S_IFLNK | 0o777) << 16\n"
	   "                z.writestr(i, os.readlink(p))\n"
	   "            else:\n"
	   "                z.write(p, p)\n"
	   "EOF", tmp);
	check_tool_archive("a.zip", SBX_ARCHIVE_ZIP);
}
END_TEST

START_TEST(host_directory)
{
	struct seen s = { 0 };

	make_tree();
	int fd = open(test_path_at(tmp, "src"), O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(sbx_archive_iterate_dir(fd, &big, collect, &s), 0);
	/* Sorted by name, directories before their contents. */
	ck_assert_str_eq(s.out.data, tree_listing);
	sbx_buf_free(&s.out);

	/* A FIFO, and a symlink out of the tree. */
	sh("mkfifo '%s/src/fifo'", tmp);
	s = (struct seen){ 0 };
	ck_assert_int_eq(sbx_archive_iterate_dir(fd, &big, collect, &s), -SBX_EINVAL);
	ck_assert_str_eq(sbx_last_error(), "file 'fifo': is a FIFO; only files, directories and "
	                 "links are allowed");
	sbx_buf_free(&s.out);
	sh("rm '%s/src/fifo' && ln -s ../../etc '%s/src/" LONG_DIR "/out'", tmp, tmp);
	s = (struct seen){ 0 };
	ck_assert_int_eq(sbx_archive_iterate_dir(fd, &big, collect, &s), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "points outside"));
	sbx_buf_free(&s.out);

	/* Limits hold for directories too. */
	sh("rm '%s/src/" LONG_DIR "/out'", tmp);
	sbx_archive_limits small = { 1000, 4, 1000 };
	s = (struct seen){ 0 };
	ck_assert_int_eq(sbx_archive_iterate_dir(fd, &small, collect, &s), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "more than the limit of 4 for one file"));
	sbx_buf_free(&s.out);
	close(fd);
}
END_TEST

/* ---------------------------------------------------------------------------------------
 * Hand-made archives
 * ------------------------------------------------------------------------------------- */

START_TEST(tar_kinds_and_normalised_names)
{
	tarb t = { 0 };

	tb_header(&t, "./", '5', 0, NULL, 0755);
	tb_header(&t, "./dir/", '5', 0, NULL, 0700);
	tb_file(&t, "./dir//./a.txt", "alpha");
	tb_header(&t, "dir", '5', 0, NULL, 0755);              /* again: not repeated */
	tb_header(&t, "dir/hard", '1', 0, "./dir/a.txt", 0644);
	tb_header(&t, "dir/up", '2', 0, "../dir/a.txt", 0777);
	tb_header(&t, "v7dir/", '0', 0, NULL, 0755);           /* old tar: slash means directory */
	tb_file(&t, "implicit/parent/b", "");
	tb_end(&t);
	ck_assert_str_eq(list_ok(t.data, t.len, SBX_ARCHIVE_TAR, NULL),
	                 "D dir\nF dir/a.txt 5 644 alpha\nH dir/hard => dir/a.txt 5\n"
	                 "L dir/up -> ../dir/a.txt\nD v7dir\nF implicit/parent/b 0 644 \n");
	/* Without the end blocks the data just stops: still fine. */
	ck_assert_str_eq(list_ok(t.data, t.len - 1024, SBX_ARCHIVE_TAR, NULL),
	                 "D dir\nF dir/a.txt 5 644 alpha\nH dir/hard => dir/a.txt 5\n"
	                 "L dir/up -> ../dir/a.txt\nD v7dir\nF implicit/parent/b 0 644 \n");
	sbx_buf_free(&t);
}
END_TEST

START_TEST(tar_pax_and_gnu_headers)
{
	tarb t = { 0 };
	char longname[300];

	memset(longname, 'n', sizeof longname - 1);
	longname[150] = '/';
	longname[sizeof longname - 1] = '\0';
	tb_pax(&t, "path", "pax/name.txt", 12);
	tb_file(&t, "ignored", "p");
	tb_meta(&t, 'L', longname, strlen(longname) + 1);
	tb_file(&t, "ignored", "g");
	tb_meta(&t, 'g', "20 comment=ignored\n", 19);
	tb_pax(&t, "size", "3", 1);
	tb_header(&t, "sized", '0', 0, NULL, 0600);
	sbx_buf_append(&t, "xyz", 3);
	tb_pad(&t);
	tb_end(&t);
	char want[1024];
	snprintf(want, sizeof want, "F pax/name.txt 1 644 p\nF %s 1 644 g\nF sized 3 600 xyz\n",
	         longname);
	ck_assert_str_eq(list_ok(t.data, t.len, SBX_ARCHIVE_TAR, NULL), want);

	sbx_buf gz = { 0 };
	gzip_bytes(t.data, t.len, &gz);
	ck_assert_str_eq(list_ok(gz.data, gz.len, SBX_ARCHIVE_TAR_GZ, NULL), want);
	/* Two gzip members are one stream, as gzip -d sees them. */
	sbx_buf two = { 0 };
	sbx_buf first = { 0 };
	gzip_bytes(t.data, 1536, &first);
	sbx_buf_append(&two, first.data, first.len);
	gzip_bytes(t.data + 1536, t.len - 1536, &two);
	ck_assert_str_eq(list_ok(two.data, two.len, SBX_ARCHIVE_TAR_GZ, NULL), want);
	sbx_buf_free(&t);
	sbx_buf_free(&gz);
	sbx_buf_free(&two);
	sbx_buf_free(&first);
}
END_TEST

/* Builds a one-entry tar whose header name is `name` (nlen bytes) and checks it fails. */
static void bad_tar_name(const char *name, size_t nlen, const char *fragment)
{
	tarb t = { 0 };

	tb_header_n(&t, name, nlen, '0', 1, NULL, 0644);
	sbx_buf_append(&t, "x", 1);
	tb_pad(&t);
	tb_end(&t);
	list_fails(t.data, t.len, SBX_ARCHIVE_TAR, NULL, fragment);
	sbx_buf_free(&t);
}

START_TEST(hostile_names)
{
	bad_tar_name("../x", 4, "archive entry '../x': '..' is not allowed in names");
	bad_tar_name("a/../../x", 9, "'..' is not allowed");
	bad_tar_name("a/..", 4, "'..' is not allowed");
	bad_tar_name("/etc/passwd", 11, "archive entry '/etc/passwd': absolute names are not "
	             "allowed");
	bad_tar_name("bad\xff\xfe", 5, "archive entry 'bad\\xff\\xfe': the name is not valid "
	             "UTF-8");
	bad_tar_name("ctl\x01name", 8, "the name contains a control character");
	bad_tar_name(".", 1, "names the archive's root");

	/* A NUL inside a pax path, and inside a GNU long name: libarchive hands names out as C
	 * strings, so the name ends at the NUL, and what is left is checked like any name. */
	tarb t = { 0 };
	tb_pax(&t, "path", "a\0b", 3);
	tb_file(&t, "x", "1");
	tb_end(&t);
	ck_assert_str_eq(list_ok(t.data, t.len, SBX_ARCHIVE_TAR, NULL), "F a 1 644 1\n");
	t.len = 0;
	tb_meta(&t, 'L', "evil\0/../../x\0", 14);
	tb_file(&t, "x", "1");
	tb_end(&t);
	ck_assert_str_eq(list_ok(t.data, t.len, SBX_ARCHIVE_TAR, NULL), "F evil 1 644 1\n");
	t.len = 0;
	tb_pax(&t, "path", "", 0);
	tb_file(&t, "x", "1");
	tb_end(&t);
	ck_assert_str_eq(list_ok(t.data, t.len, SBX_ARCHIVE_TAR, NULL), "F x 1 644 1\n");

	/* 65 levels deep, and a 256-byte component. */
	char deep[200] = "";
	for (int i = 0; i < 65; i++)
		strcat(deep, "d/");
	strcat(deep, "f");
	t.len = 0;
	tb_pax(&t, "path", deep, strlen(deep));
	tb_file(&t, "x", "1");
	tb_end(&t);
	list_fails(t.data, t.len, SBX_ARCHIVE_TAR, NULL, "more than 64 levels deep");
	char comp[300];
	memset(comp, 'c', 256);
	comp[256] = '\0';
	t.len = 0;
	tb_pax(&t, "path", comp, strlen(comp));
	tb_file(&t, "x", "1");
	tb_end(&t);
	list_fails(t.data, t.len, SBX_ARCHIVE_TAR, NULL, "component is longer than 255 bytes");
	sbx_buf_free(&t);

	/* The same names in a zip. */
	zipb z = { 0 };
	zb_add(&z, "../evil", "x", NULL);
	zb_finish(&z);
	list_fails(z.d.data, z.d.len, SBX_ARCHIVE_ZIP, NULL, "'..' is not allowed");
	sbx_buf_free(&z.d);
	z = (zipb){ 0 };
	static const struct zopt stored = { 0, 0100644, 0, -1, NULL };
	zb_add_n(&z, "nul\0name", 8, "x", 1, &stored);
	zb_finish(&z);
	ck_assert_str_eq(list_ok(z.d.data, z.d.len, SBX_ARCHIVE_ZIP, NULL), "F nul 1 644 x\n");
	sbx_buf_free(&z.d);
}
END_TEST

START_TEST(hostile_links)
{
	static const struct {
		const char *name, *target, *fragment;
	} cases[] = {
		{ "l", "/", "the symlink to '/' points outside the archive" },
		{ "l", "/etc/passwd", "points outside" },
		{ "l", "..", "points outside" },
		{ "d/l", "../..", "points outside" },
		{ "d/l", "x/../../y", "points outside" },
		{ "d/l", "x/..", "points outside" },  /* ".." after a name: x may be a link */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tarb t = { 0 };
		tb_header(&t, cases[i].name, '2', 0, cases[i].target, 0777);
		tb_end(&t);
		list_fails(t.data, t.len, SBX_ARCHIVE_TAR, NULL, cases[i].fragment);
		sbx_buf_free(&t);
	}

	/* A symlink, then a file written through it. */
	tarb t = { 0 };
	tb_header(&t, "sub", '5', 0, NULL, 0755);
	tb_header(&t, "l", '2', 0, "sub", 0777);
	tb_file(&t, "l/x", "through the link");
	tb_end(&t);
	list_fails(t.data, t.len, SBX_ARCHIVE_TAR, NULL, "archive entry 'l/x': lies below 'l', "
	           "which is a symlink in the archive");
	/* A file, then something below it; a path twice. */
	t.len = 0;
	tb_file(&t, "f", "1");
	tb_file(&t, "f/x", "2");
	tb_end(&t);
	list_fails(t.data, t.len, SBX_ARCHIVE_TAR, NULL, "lies below 'f', which is a file");
	t.len = 0;
	tb_file(&t, "f", "1");
	tb_header(&t, "f", '2', 0, "g", 0777);
	tb_end(&t);
	list_fails(t.data, t.len, SBX_ARCHIVE_TAR, NULL, "the path appears twice");
	t.len = 0;
	tb_file(&t, "d/x", "1");
	tb_file(&t, "d", "replaces the directory");
	tb_end(&t);
	list_fails(t.data, t.len, SBX_ARCHIVE_TAR, NULL, "appears twice");
	/* Hard links: out of the archive, to a later entry, to a directory. */
	t.len = 0;
	tb_header(&t, "h", '1', 0, "../../etc/shadow", 0644);
	tb_end(&t);
	list_fails(t.data, t.len, SBX_ARCHIVE_TAR, NULL, "hard link target is not a valid name");
	t.len = 0;
	tb_header(&t, "h", '1', 0, "later", 0644);
	tb_file(&t, "later", "x");
	tb_end(&t);
	list_fails(t.data, t.len, SBX_ARCHIVE_TAR, NULL, "not an earlier file");
	t.len = 0;
	tb_header(&t, "d", '5', 0, NULL, 0755);
	tb_header(&t, "h", '1', 0, "d", 0644);
	tb_end(&t);
	list_fails(t.data, t.len, SBX_ARCHIVE_TAR, NULL, "not an earlier file");
	sbx_buf_free(&t);

	/* Zip symlinks out. */
	zipb z = { 0 };
	static const struct zopt link = { 0, 0120777, 0, -1, NULL };
	zb_add(&z, "l", "/etc", &link);
	zb_finish(&z);
	list_fails(z.d.data, z.d.len, SBX_ARCHIVE_ZIP, NULL, "points outside");
	sbx_buf_free(&z.d);
}
END_TEST

START_TEST(special_files_refused)
{
	static const struct {
		char type;
		const char *what;
	} kinds[] = {
		{ '3', "is a character device" }, { '4', "is a block device" },
		{ '6', "is a FIFO" },
	};
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		tarb t = { 0 };
		tb_header(&t, "dev", kinds[i].type, 0, NULL, 0644);
		tb_end(&t);
		list_fails(t.data, t.len, SBX_ARCHIVE_TAR, NULL, kinds[i].what);
		sbx_buf_free(&t);
	}
	tarb t = { 0 };
	tb_pax(&t, "GNU.sparse.map", "0,1", 3);
	tb_file(&t, "sparse", "1");
	tb_end(&t);
	/* A sparse map alone does not make a sparse file to libarchive: the entry is the plain
	 * file it stores. */
	ck_assert_str_eq(list_ok(t.data, t.len, SBX_ARCHIVE_TAR, NULL), "F sparse 1 644 1\n");
	sbx_buf_free(&t);

	zipb z = { 0 };
	static const struct zopt chr = { 0, 0020644, 0, -1, NULL };
	zb_add(&z, "tty", "", &chr);
	zb_finish(&z);
	list_fails(z.d.data, z.d.len, SBX_ARCHIVE_ZIP, NULL, "'tty': is a character device");
	sbx_buf_free(&z.d);
}
END_TEST

START_TEST(limits)
{
	sbx_archive_limits lim = { 3, 10, 15 };
	tarb t = { 0 };

	tb_file(&t, "a", "0123456789");
	tb_file(&t, "b", "01234");
	tb_end(&t);
	list_ok(t.data, t.len, SBX_ARCHIVE_TAR, &lim);
	t.len -= 1024;
	tb_file(&t, "c", "x");
	tb_end(&t);
	list_fails(t.data, t.len, SBX_ARCHIVE_TAR, &lim, "archive entry 'c': the archive expands "
	           "beyond the limit of 15 bytes");
	t.len = 0;
	tb_file(&t, "big", "0123456789a");
	tb_end(&t);
	list_fails(t.data, t.len, SBX_ARCHIVE_TAR, &lim, "'big': 11 bytes, more than the limit of "
	           "10 for one file");
	t.len = 0;
	for (int i = 0; i < 4; i++)
		tb_header(&t, i % 2 ? "d1" : "d2", '5', 0, NULL, 0755);
	tb_end(&t);
	list_fails(t.data, t.len, SBX_ARCHIVE_TAR, &lim, "the archive has more than 3 entries");
	/* Hard links count again. */
	t.len = 0;
	tb_file(&t, "a", "0123456789");
	tb_header(&t, "h", '1', 0, "a", 0644);
	tb_end(&t);
	list_fails(t.data, t.len, SBX_ARCHIVE_TAR, &lim, "'h': the archive expands beyond");

	/* A declared size of 8 GiB (base-256) with no data: refused before reading anything. */
	t.len = 0;
	tb_header(&t, "huge", '0', 0, NULL, 0644);
	unsigned char *h = (unsigned char *)t.data;
	memset(h + 124, 0, 12);
	h[124] = 0x80;
	h[131] = 0x02;          /* 2 << 32 */
	unsigned sum = 0;
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	octal(h + 148, 7, sum);
	h[155] = ' ';
	list_fails(t.data, t.len, SBX_ARCHIVE_TAR, &big, "'huge': 8589934592 bytes, more than the "
	           "limit");
	sbx_buf_free(&t);
}
END_TEST

START_TEST(bombs)
{
	/* A zip entry declaring its real 32 MiB: refused by the declared size, uninflated. */
	size_t n = 32 << 20;
	char *zeros = calloc(1, n);
	sbx_archive_limits lim = { 10, 1 << 20, 1 << 20 };
	zipb z = { 0 };
	zb_add_n(&z, "bomb", 4, zeros, n, &(struct zopt){ 8, 0100644, 0, -1, NULL });
	zb_finish(&z);
	ck_assert_uint_lt(z.d.len, 100000);
	list_fails(z.d.data, z.d.len, SBX_ARCHIVE_ZIP, &lim, "'bomb': 33554432 bytes, more than");
	sbx_buf_free(&z.d);
	/* One that lies: declares 1000 bytes. */
	z = (zipb){ 0 };
	zb_add_n(&z, "liar", 4, zeros, n, &(struct zopt){ 8, 0100644, 0, 1000, NULL });
	zb_finish(&z);
	list_fails(z.d.data, z.d.len, SBX_ARCHIVE_ZIP, &lim, "'liar': inflates to more than its "
	           "declared size");
	sbx_buf_free(&z.d);
	/* Many entries sharing one compressed body (overlapping): the total limit holds. */
	z = (zipb){ 0 };
	zb_add_n(&z, "part0", 5, zeros, 600000, &(struct zopt){ 8, 0100644, 0, -1, NULL });
	zb_add_n(&z, "part1", 5, zeros, 600000, &(struct zopt){ 8, 0100644, 0, -1, NULL });
	zb_finish(&z);
	list_fails(z.d.data, z.d.len, SBX_ARCHIVE_ZIP, &lim, "'part1': the archive expands "
	           "beyond");
	sbx_buf_free(&z.d);

	/* tar.gz: a 32 MiB file is refused by its header before it is inflated... */
	tarb t = { 0 };
	tb_header(&t, "bomb", '0', n, NULL, 0644);
	sbx_buf_append(&t, zeros, n);
	tb_end(&t);
	sbx_buf gz = { 0 };
	gzip_bytes(t.data, t.len, &gz);
	list_fails(gz.data, gz.len, SBX_ARCHIVE_TAR_GZ, &lim, "'bomb': 33554432 bytes");
	sbx_buf_free(&gz);
	/* ...and a stream of nothing but metadata runs into the expansion cap. */
	t.len = 0;
	for (int i = 0; i < 4; i++)
		tb_meta(&t, 'g', zeros, 900000);
	tb_file(&t, "late", "x");
	tb_end(&t);
	gzip_bytes(t.data, t.len, &gz);
	list_fails(gz.data, gz.len, SBX_ARCHIVE_TAR_GZ, &lim, "the tar.gz expands beyond the "
	           "limit");
	sbx_buf_free(&gz);
	sbx_buf_free(&t);
	free(zeros);
}
END_TEST

START_TEST(truncated_and_corrupt)
{
	tarb t = { 0 };
	tb_file(&t, "a", "0123456789");
	tb_file(&t, "b", "hello");
	tb_end(&t);
	/* In b's data, in b's header. */
	list_fails(t.data, 1024 + 512 + 3, SBX_ARCHIVE_TAR, NULL, "archive entry 'b': its content "
	           "cannot be read (the tar data is corrupt or truncated): Truncated tar archive");
	list_fails(t.data, 1024 + 100, SBX_ARCHIVE_TAR, NULL, "truncated");
	/* A GNU long name cut off in its padding (its name must not leak). */
	tarb g = { 0 };
	tb_meta(&g, 'L', "long/name", 10);
	list_fails(g.data, 512 + 10, SBX_ARCHIVE_TAR, NULL, "truncated");
	sbx_buf_free(&g);
	/* A pax header with no entry after it. */
	tarb p = { 0 };
	tb_pax(&p, "path", "x", 1);
	list_fails(p.data, p.len, SBX_ARCHIVE_TAR, NULL, "truncated");
	sbx_buf_free(&p);
	/* A broken checksum. */
	((char *)t.data)[1024 + 1] = 'X';
	list_fails(t.data, t.len, SBX_ARCHIVE_TAR, NULL, "the tar data is corrupt or truncated "
	           "(reading an entry's header: Damaged tar archive)");
	((char *)t.data)[1024 + 1] = '\0';

	sbx_buf gz = { 0 };
	gzip_bytes(t.data, t.len, &gz);
	list_fails(gz.data, gz.len / 2, SBX_ARCHIVE_TAR_GZ, NULL, "the tar.gz data is corrupt or "
	           "truncated (opening it: truncated gzip input)");
	/* libarchive does not check the gzip trailer (CRC, length) nor what follows the last
	 * member: the deflate data itself must be sound. A gzip header with an unknown method
	 * is not gzip at all. */
	((unsigned char *)gz.data)[2] = 7;
	list_fails(gz.data, gz.len, SBX_ARCHIVE_TAR_GZ, NULL, "the tar.gz data is corrupt or "
	           "truncated (opening it: Unrecognized archive format)");
	sbx_buf_free(&gz);
	gzip_bytes(t.data, t.len, &gz);
	((unsigned char *)gz.data)[20] ^= 0xff;
	list_fails(gz.data, gz.len, SBX_ARCHIVE_TAR_GZ, NULL, "the tar.gz data is corrupt or "
	           "truncated");
	sbx_buf_free(&gz);
	sbx_buf_free(&t);

	zipb z = { 0 };
	zb_add(&z, "a.txt", "some text that deflates", NULL);
	zb_finish(&z);
	list_ok(z.d.data, z.d.len, SBX_ARCHIVE_ZIP, NULL);
	list_fails(z.d.data, z.d.len - 1, SBX_ARCHIVE_ZIP, NULL, "the zip data is corrupt or "
	           "truncated (opening it: Unrecognized archive format)");
	list_fails(z.d.data, 10, SBX_ARCHIVE_ZIP, NULL, "the zip data is corrupt or truncated");
	/* Flip a byte of the data: CRC (or deflate) notices. */
	((unsigned char *)z.d.data)[30 + 5 + 2] ^= 0x01;
	list_fails(z.d.data, z.d.len, SBX_ARCHIVE_ZIP, NULL, "'a.txt': ");
	sbx_buf_free(&z.d);

	/* A central directory offset past the end; a local header naming another file. */
	z = (zipb){ 0 };
	zb_add(&z, "a", "x", NULL);
	zb_finish(&z);
	unsigned char *eocd = (unsigned char *)z.d.data + z.d.len - 22;
	eocd[16] = 0xff;
	list_fails(z.d.data, z.d.len, SBX_ARCHIVE_ZIP, NULL, "the zip data is corrupt or truncated");
	sbx_buf_free(&z.d);
	z = (zipb){ 0 };
	zb_add(&z, "nice.txt", "x", &(struct zopt){ 0, 0100644, 0, -1, "../evil" });
	zb_finish(&z);
	/* libarchive takes the local header's name: that is the one checked. */
	list_fails(z.d.data, z.d.len, SBX_ARCHIVE_ZIP, NULL, "archive entry '../evil': '..' is not "
	           "allowed");
	sbx_buf_free(&z.d);
}
END_TEST

START_TEST(zip_features_refused)
{
	zipb z = { 0 };
	zb_add(&z, "secret", "x", &(struct zopt){ 0, 0100644, 1, -1, NULL });
	zb_finish(&z);
	list_fails(z.d.data, z.d.len, SBX_ARCHIVE_ZIP, NULL, "'secret': encrypted entries");
	sbx_buf_free(&z.d);
	z = (zipb){ 0 };
	zb_add(&z, "odd", "x", &(struct zopt){ 21, 0100644, 0, -1, NULL });
	zb_finish(&z);
	list_fails(z.d.data, z.d.len, SBX_ARCHIVE_ZIP, NULL, "'odd': its content cannot be read "
	           "(the zip data is corrupt or truncated): Unsupported ZIP compression method (21");
	sbx_buf_free(&z.d);
	z = (zipb){ 0 };
	zb_add(&z, "big", "x", &(struct zopt){ 0, 0100644, 0, 0xffffffff, NULL });
	zb_finish(&z);
	/* Sizes of 0xffffffff without a zip64 record: taken as they stand, and over the limit. */
	list_fails(z.d.data, z.d.len, SBX_ARCHIVE_ZIP, NULL, "'big': 4294967295 bytes, more than "
	           "the limit");
	sbx_buf_free(&z.d);
	z = (zipb){ 0 };
	zb_add(&z, "a", "x", NULL);
	zb_finish(&z);
	unsigned char *eocd = (unsigned char *)z.d.data + z.d.len - 22;
	eocd[10] = eocd[11] = 0xff;
	list_fails(z.d.data, z.d.len, SBX_ARCHIVE_ZIP, NULL, "the zip data is corrupt or truncated "
	           "(opening it: Unrecognized archive format)");
	sbx_buf_free(&z.d);

	/* DOS-made entries: directory by attribute or slash; empty zip. */
	z = (zipb){ 0 };
	zb_add(&z, "dir/", "", &(struct zopt){ 0, 0, 0, -1, NULL });
	zb_add(&z, "dir/f", "stored", &(struct zopt){ 0, 0, 0, -1, NULL });
	zb_finish(&z);
	ck_assert_str_eq(list_ok(z.d.data, z.d.len, SBX_ARCHIVE_ZIP, NULL),
	                 "D dir\nF dir/f 6 664 stored\n");
	sbx_buf_free(&z.d);
	z = (zipb){ 0 };
	zb_finish(&z);
	ck_assert_str_eq(list_ok(z.d.data, z.d.len, SBX_ARCHIVE_ZIP, NULL), "");
	sbx_buf_free(&z.d);
}
END_TEST

START_TEST(detect_and_format_names)
{
	int f = 0;
	char block[512] = { 0 };

	ck_assert_int_eq(sbx_archive_detect("PK\x03\x04rest", 8, &f), 0);
	ck_assert_int_eq(f, SBX_ARCHIVE_ZIP);
	ck_assert_int_eq(sbx_archive_detect("\x1f\x8b\x08", 3, &f), 0);
	ck_assert_int_eq(f, SBX_ARCHIVE_TAR_GZ);
	ck_assert_int_eq(sbx_archive_detect("\xfd" "7zXZ\0\0", 8, &f), 0);
	ck_assert_int_eq(f, SBX_ARCHIVE_TAR_XZ);
	ck_assert_int_eq(sbx_archive_detect("\x28\xb5\x2f\xfd\x00", 5, &f), 0);
	ck_assert_int_eq(f, SBX_ARCHIVE_TAR_ZST);
	ck_assert_int_eq(sbx_archive_detect("7z\xbc\xaf\x27\x1c\0\4", 8, &f), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "format: 7z archives are not supported"));
	ck_assert_int_eq(sbx_archive_detect(block, sizeof block, &f), -SBX_EINVAL);
	ck_assert_int_eq(sbx_archive_detect("hello", 5, &f), -SBX_EINVAL);
	ck_assert_int_eq(sbx_archive_detect("", 0, &f), -SBX_EINVAL);
	tarb t = { 0 };
	tb_file(&t, "a", "b");
	ck_assert_int_eq(sbx_archive_detect(t.data, t.len, &f), 0);
	ck_assert_int_eq(f, SBX_ARCHIVE_TAR);
	sbx_buf_free(&t);

	ck_assert_int_eq(sbx_archive_format_from_name("tar.gz", "format", &f), 0);
	ck_assert_int_eq(f, SBX_ARCHIVE_TAR_GZ);
	ck_assert_int_eq(sbx_archive_format_from_name("tar.xz", "format", &f), 0);
	ck_assert_int_eq(f, SBX_ARCHIVE_TAR_XZ);
	ck_assert_int_eq(sbx_archive_format_from_name("tar.zst", "format", &f), 0);
	ck_assert_int_eq(f, SBX_ARCHIVE_TAR_ZST);
	ck_assert_int_eq(sbx_archive_format_from_name("7z", "format", &f), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "format: 7z archives are not supported"));
	ck_assert_int_eq(sbx_archive_format_from_name("rar", "format", &f), -SBX_EINVAL);
	ck_assert_str_eq(sbx_last_error(), "format: 'rar' is not an archive format (use \"tar\", "
	                 "\"tar.gz\", \"tar.xz\", \"tar.zst\" or \"zip\")");
	ck_assert_int_eq(sbx_archive_format_from_name(NULL, "format", &f), -SBX_EINVAL);
	ck_assert_int_eq(sbx_archive_iterate("x", 1, 99, &big, collect, NULL), -SBX_EINVAL);
}
END_TEST

START_TEST(link_inside_rules)
{
	ck_assert(sbx_archive_link_inside("l", "a/b"));
	ck_assert(sbx_archive_link_inside("l", "."));
	ck_assert(sbx_archive_link_inside("d/l", ".."));
	ck_assert(sbx_archive_link_inside("d/e/l", "../../x/./y/"));
	ck_assert(sbx_archive_link_inside("d/l", "./../x"));
	ck_assert(!sbx_archive_link_inside("d/l", "../.."));
	ck_assert(!sbx_archive_link_inside("l", ""));
	ck_assert(!sbx_archive_link_inside("l", "/x"));
	ck_assert(!sbx_archive_link_inside("d/l", "x/../y"));
	ck_assert(!sbx_archive_link_inside(NULL, "x"));
}
END_TEST

START_TEST(callback_error_stops)
{
	tarb t = { 0 };
	struct seen s = { .stop_at = 2 };

	tb_file(&t, "a", "1");
	tb_file(&t, "b", "2");
	tb_file(&t, "c", "3");
	tb_end(&t);
	ck_assert_int_eq(sbx_archive_iterate(t.data, t.len, SBX_ARCHIVE_TAR, &big, collect, &s),
	                 -SBX_EIO);
	ck_assert_int_eq(s.count, 2);
	sbx_buf_free(&s.out);
	sbx_buf_free(&t);
}
END_TEST

/* What the docker backend sends the engine: the writer's tar reads back as written, a long
 * name through a pax header included; names the readers would refuse are refused. */
START_TEST(tar_writer_round_trip)
{
	char long_name[300];
	sbx_buf t = { 0 };
	const char *got;

	memset(long_name, 'n', sizeof long_name);
	memcpy(long_name, "dir/", 4);
	long_name[250] = '\0';
	ck_assert_int_eq(sbx_tar_append(&t, &(sbx_tar_member){ .path = "dir", .type = SBX_ENTRY_DIR,
	                                                      .mode = 0750 }), 0);
	ck_assert_int_eq(sbx_tar_append(&t, &(sbx_tar_member){ .path = "dir/a.txt",
	                                                      .type = SBX_ENTRY_FILE, .mode = 0640,
	                                                      .uid = 65534, .gid = 65534,
	                                                      .mtime = 1700000000, .data = "hello",
	                                                      .size = 5 }), 0);
	ck_assert_int_eq(sbx_tar_append(&t, &(sbx_tar_member){ .path = long_name,
	                                                      .type = SBX_ENTRY_FILE, .mode = 0600,
	                                                      .data = "", .size = 0 }), 0);
	ck_assert_int_eq(sbx_tar_append(&t, &(sbx_tar_member){ .path = "../x",
	                                                      .type = SBX_ENTRY_FILE }), -SBX_EINVAL);
	ck_assert_int_eq(sbx_tar_append(&t, &(sbx_tar_member){ .path = "/abs",
	                                                      .type = SBX_ENTRY_DIR }), -SBX_EINVAL);
	ck_assert_int_eq(sbx_tar_append(&t, &(sbx_tar_member){ .path = "a//b",
	                                                      .type = SBX_ENTRY_DIR }), -SBX_EINVAL);
	ck_assert_int_eq(sbx_tar_append(&t, &(sbx_tar_member){ .path = "a\nb",
	                                                      .type = SBX_ENTRY_DIR }), -SBX_EINVAL);
	ck_assert_int_eq(sbx_tar_append(&t, &(sbx_tar_member){ .path = "l",
	                                                      .type = SBX_ENTRY_SYMLINK }),
	                 -SBX_EINVAL);
	sbx_tar_finish(&t);
	ck_assert_uint_eq(t.len % 512, 0);
	got = list_ok(t.data, t.len, SBX_ARCHIVE_TAR, NULL);
	ck_assert_str_eq(got, fmt_static("D dir\nF dir/a.txt 5 640 hello\nF %s 0 600 \n",
	                                    long_name));
	sbx_buf_free(&t);
}
END_TEST

/* As stored (a container's tree described, not made): links out and special files pass,
 * names are still checked. */
START_TEST(as_stored_mode)
{
	const sbx_archive_limits stored = { 1000, 8 << 20, 64 << 20, SBX_ARCHIVE_AS_STORED };
	tarb t = { 0 };
	struct seen s = { 0 };

	tb_header(&t, "etc", '2', 0, "/etc", 0777);
	tb_header(&t, "up", '2', 0, "../../..", 0777);
	tb_header(&t, "fifo", '6', 0, NULL, 0644);
	tb_end(&t);
	list_fails(t.data, t.len, SBX_ARCHIVE_TAR, NULL, "points outside");
	ck_assert_int_eq(sbx_archive_iterate(t.data, t.len, SBX_ARCHIVE_TAR, &stored, count_kinds,
	                                     &s), 0);
	ck_assert_int_eq(s.count, 3);
	t.len = 0;
	tb_header(&t, "../x", '0', 0, NULL, 0644);
	tb_end(&t);
	list_fails(t.data, t.len, SBX_ARCHIVE_TAR, &stored, "'..' is not allowed");
	sbx_buf_free(&t);
}
END_TEST

static Suite *archive_suite(void)
{
	Suite *s = suite_create("archive");
	TCase *tools = tcase_create("tools");
	TCase *made = tcase_create("hand-made");

	tcase_add_checked_fixture(tools, setup, teardown);
	tcase_add_test(tools, gnu_tar_long_names);
	tcase_add_test(tools, pax_tar_gz);
	tcase_add_test(tools, ustar_prefix_field);
	tcase_add_test(tools, pax_tar_xz);
	tcase_add_test(tools, utf8_names);
	tcase_add_test(tools, tar_writer_for_other_readers);
	tcase_add_test(tools, gnu_tar_zst);
	tcase_add_test(tools, format_must_match);
	tcase_add_test(tools, gnu_sparse_refused);
	tcase_add_test(tools, xz_bomb);
	tcase_add_test(tools, python_zip);
	tcase_add_test(tools, host_directory);
	suite_add_tcase(s, tools);

	tcase_add_test(made, tar_kinds_and_normalised_names);
	tcase_add_test(made, tar_pax_and_gnu_headers);
	tcase_add_test(made, hostile_names);
	tcase_add_test(made, hostile_links);
	tcase_add_test(made, special_files_refused);
	tcase_add_test(made, limits);
	tcase_add_test(made, bombs);
	tcase_add_test(made, truncated_and_corrupt);
	tcase_add_test(made, zip_features_refused);
	tcase_add_test(made, detect_and_format_names);
	tcase_add_test(made, link_inside_rules);
	tcase_add_test(made, callback_error_stops);
	tcase_add_test(made, tar_writer_round_trip);
	tcase_add_test(made, as_stored_mode);
	suite_add_tcase(s, made);
	return s;
}

int main(void)
{
	return test_run_suite(archive_suite());
}
