/* libFuzzer target for what the docker backend reads of the Engine's archive API and writes
 * for it (backends/docker/pathstat.c, util/archive_tar_write.c):
 *  - the X-Docker-Container-Path-Stat header (base64 of JSON): the input as the header's
 *    value, and again base64-encoded, so that the JSON behind it is fuzzed too. A parse
 *    either fails with -SBX_EPROTO (or out of memory) and leaves nothing, or gives a name
 *    without NUL, a known file type, permission bits only within 07777, a nanosecond part
 *    below 1e9, and a link target that is absolute when present;
 *  - the tar writer: the input split into a name and content, written as a file (and its
 *    directory) and read back by the archive reader in its as-stored mode, which must find
 *    exactly that name and content; a name the writer refuses is one the reader refuses. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "backends/docker/pathstat.h"
#include "util/archive.h"
#include "util/base64.h"
#include "util/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s\n", #cond); \
	abort(); } } while (0)

static void check_stat(const char *b64, size_t len)
{
	struct docker_path_stat st;
	int r = docker_path_stat_parse(b64, len, &st);

	if (r < 0) {
		CHECK(r == -SBX_EPROTO || r == -SBX_ENOMEM);
		CHECK(!st.name && !st.link);
		return;
	}
	CHECK(st.name && strlen(st.name) < len + 1);
	CHECK(st.type == SBX_FILE_REGULAR || st.type == SBX_FILE_DIRECTORY ||
	      st.type == SBX_FILE_SYMLINK || st.type == SBX_FILE_OTHER);
	CHECK((st.mode & ~07777u) == 0);
	CHECK(st.mtime_nsec >= 0 && st.mtime_nsec < 1000000000);
	docker_path_stat_free(&st);
}

struct found {
	const char *name;
	const void *data;
	size_t size;
	int files;
};

static int on_entry(const sbx_archive_entry *e, void *arg)
{
	struct found *f = arg;

	if (e->type != SBX_ENTRY_FILE)
		return 0;
	CHECK(strcmp(e->path, f->name) == 0);
	CHECK(e->size == f->size && memcmp(e->data, f->data, f->size) == 0);
	f->files++;
	return 0;
}

static void check_tar(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t nlen = nl ? (size_t)(nl - data) : size;
	char *name = malloc(nlen + 3);
	const sbx_archive_limits lim = { 16, 1 << 20, 4 << 20, SBX_ARCHIVE_AS_STORED };
	struct found f = { .data = nl ? nl + 1 : data + size, .size = nl ? size - nlen - 1 : 0 };
	sbx_buf tar = { 0 };
	int r;

	CHECK(name);
	memcpy(name, "d/", 2);
	memcpy(name + 2, data, nlen);
	name[nlen + 2] = '\0';
	f.name = name;
	r = sbx_tar_append(&tar, &(sbx_tar_member){ .path = "d", .type = SBX_ENTRY_DIR,
	                                           .mode = 0755 });
	CHECK(r == 0);
	r = sbx_tar_append(&tar, &(sbx_tar_member){ .path = name, .type = SBX_ENTRY_FILE,
	                                           .mode = 0644, .uid = 65534, .gid = 65534,
	                                           .mtime = 1, .data = f.data, .size = f.size });
	sbx_tar_finish(&tar);
	CHECK(!tar.oom);
	if (r == 0) {
		CHECK(sbx_archive_iterate(tar.data, tar.len, SBX_ARCHIVE_TAR, &lim, on_entry, &f) == 0);
		CHECK(f.files == 1);
	} else {
		CHECK(r == -SBX_EINVAL);
	}
	sbx_buf_free(&tar);
	free(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *b64;

	if (size > 8192)
		return 0;
	check_stat((const char *)data, size);
	b64 = malloc(4 * ((size + 2) / 3) + 1);
	CHECK(b64);
	sbx_base64_encode(data, size, b64);
	check_stat(b64, strlen(b64));
	free(b64);
	check_tar(data, size);
	return 0;
}
