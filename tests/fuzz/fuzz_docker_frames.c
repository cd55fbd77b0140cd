/* libFuzzer target for the reader of the Engine's multiplexed exec stream
 * (backends/docker/frames.c).
 *
 * The first byte picks the size of the pieces the rest is fed in (1 to 16 bytes); the reader
 * must hand out exactly what a reference reading of the whole input gives: each frame's
 * payload, in order, with its type, as far as the input goes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../backends/docker/frames.h"
#include "util/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s\n", #cond); \
	abort(); } } while (0)

/* Consecutive pieces of one type are one run: how the pieces fall must not show. */
struct runs {
	sbx_buf out;
	int last_type;
};

static void add(struct runs *r, int type, const uint8_t *data, size_t len)
{
	if (!len)
		return;
	if (type != r->last_type)
		sbx_buf_printf(&r->out, "|%d:", type);
	sbx_buf_append(&r->out, data, len);
	r->last_type = type;
}

static void on_piece(void *arg, int type, const char *data, size_t len)
{
	CHECK(type >= 0 && type <= 255 && len > 0);
	add(arg, type, (const uint8_t *)data, len);
}

/* The frames of the whole input, read the plain way. */
static void reference(const uint8_t *in, size_t len, struct runs *r)
{
	size_t i = 0;

	while (len - i >= DOCKER_FRAME_HEADER) {
		size_t size = (size_t)in[i + 4] << 24 | (size_t)in[i + 5] << 16 |
		              (size_t)in[i + 6] << 8 | in[i + 7];
		size_t have = len - i - DOCKER_FRAME_HEADER;

		add(r, in[i], in + i + DOCKER_FRAME_HEADER, size < have ? size : have);
		if (size >= have)
			return;
		i += DOCKER_FRAME_HEADER + size;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct runs got = { .last_type = -1 }, want = { .last_type = -1 };
	struct docker_frames f = { 0 };
	size_t piece;

	if (size == 0)
		return 0;
	piece = data[0] % 16 + 1;
	for (size_t i = 1; i < size; i += piece)
		docker_frames_feed(&f, (const char *)data + i, size - i < piece ? size - i : piece,
		                   on_piece, &got);
	reference(data + 1, size - 1, &want);
	CHECK(got.out.len == want.out.len);
	CHECK(!got.out.len || memcmp(got.out.data, want.out.data, got.out.len) == 0);
	sbx_buf_free(&got.out);
	sbx_buf_free(&want.out);
	return 0;
}
