/* libFuzzer target for the archive readers. The first byte picks the format (tar, tar.gz,
 * zip, detection, tar.xz, tar.zst); the rest is the archive. Beyond "no crash, no leak, no hang", every
 * entry that reaches the callback must keep the promises of util/archive.h:
 *  - a normalised name: relative, no empty, "." or ".." component, UTF-8, no control
 *    characters, within the length and depth limits;
 *  - a known kind; a symlink's target stays inside; a file within the size limits, and all
 *    files within the total;
 *  - a failure is -SBX_EINVAL (or out of memory) with a message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "util/archive.h"
#include "util/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s\n", #cond); \
	abort(); } } while (0)

/* Small limits keep each run fast; the checks do not depend on them. */
static const sbx_archive_limits limits = { 64, 1 << 20, 4 << 20 };

struct totals {
	uint64_t bytes;
	size_t entries;
	unsigned sum;       /* of every file byte, so none of the reads can be dropped */
};

static void check_path(const char *path)
{
	size_t len = strlen(path), depth = 0;

	CHECK(len > 0 && len <= SBX_ARCHIVE_PATH_MAX);
	CHECK(sbx_utf8_valid(path, len));
	for (const char *p = path;; ) {
		size_t n = strcspn(p, "/");
		CHECK(n > 0 && n <= 255);
		CHECK(!(n == 1 && p[0] == '.') && !(n == 2 && p[0] == '.' && p[1] == '.'));
		depth++;
		if (!p[n])
			break;
		p += n + 1;
	}
	CHECK(depth <= SBX_ARCHIVE_DEPTH_MAX);
	for (size_t i = 0; i < len; i++)
		CHECK((unsigned char)path[i] >= 0x20 && path[i] != 0x7f);
}

static int on_entry(const sbx_archive_entry *e, void *userdata)
{
	struct totals *t = userdata;

	check_path(e->path);
	CHECK(++t->entries <= limits.max_entries);
	CHECK((e->mode & ~0777u) == 0);
	switch (e->type) {
	case SBX_ENTRY_FILE:
		CHECK(e->data != NULL && e->size <= limits.max_file);
		/* Touch every byte: the data must really be there. */
		for (size_t i = 0; i < e->size; i++)
			t->sum += ((const unsigned char *)e->data)[i];
		t->bytes += e->size;
		break;
	case SBX_ENTRY_HARDLINK:
		check_path(e->link);
		t->bytes += e->size;
		break;
	case SBX_ENTRY_SYMLINK:
		CHECK(e->link && sbx_archive_link_inside(e->path, e->link));
		break;
	case SBX_ENTRY_DIR:
		break;
	default:
		CHECK(!"unknown entry type");
	}
	CHECK(t->bytes <= limits.max_total);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* 0: told from the bytes. The order keeps the seeds' first bytes meaning what they did. */
	static const int formats[] = { SBX_ARCHIVE_TAR, SBX_ARCHIVE_TAR_GZ, SBX_ARCHIVE_ZIP, 0,
	                               SBX_ARCHIVE_TAR_XZ, SBX_ARCHIVE_TAR_ZST };
	struct totals t = { 0 };
	int format, r;

	if (size < 1)
		return 0;
	/* A copy of exactly the archive's bytes, so reading past the end is caught. */
	size_t len = size - 1;
	unsigned char *archive = malloc(len ? len : 1);
	if (!archive)
		return 0;
	memcpy(archive, data + 1, len);
	format = formats[data[0] % (sizeof formats / sizeof formats[0])];
	if (!format && sbx_archive_detect(archive, len, &format) < 0)
		goto out;
	r = sbx_archive_iterate(archive, len, format, &limits, on_entry, &t);
	CHECK(r == 0 || r == -SBX_EINVAL || r == -SBX_ENOMEM);
	CHECK(r == 0 || sbx_last_error()[0] != '\0');
out:
	free(archive);
	return 0;
}
