/* libFuzzer target for the Server-Sent Events reader (src/mcp/sse.c).
 *
 * The first byte picks the size of the pieces the rest is fed in (1 to 32 bytes, or all at
 * once for 0); the reader must give exactly the events it gives for the whole input fed at
 * once, or fail the same way, with a small limit so over-long lines and events are reached;
 * no crash, no leak, every event's type a short string. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "mcp/sse.h"
#include "util/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s\n", #cond); \
	abort(); } } while (0)
#define LIMIT 256

static int record(void *arg, const char *event, const char *data, size_t len)
{
	sbx_buf *out = arg;

	CHECK(strlen(event) < 64);
	CHECK(len <= LIMIT);
	sbx_buf_printf(out, "%zu:%s:%zu:", strlen(event), event, len);
	sbx_buf_append(out, data, len);
	return 0;
}

static int run(const char *in, size_t len, size_t piece, sbx_buf *out)
{
	sbx_sse s;
	int r = 0;

	sbx_sse_init(&s, LIMIT, record, out);
	for (size_t i = 0; r == 0 && i < len; i += piece)
		r = sbx_sse_feed(&s, in + i, len - i < piece ? len - i : piece);
	if (r == 0)
		r = sbx_sse_finish(&s);
	sbx_sse_free(&s);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sbx_buf whole = { 0 }, pieces = { 0 };
	const char *in = (const char *)data + 1;
	size_t len = size ? size - 1 : 0, piece;
	int r1, r2;

	if (size == 0)
		return 0;
	piece = data[0] % 33 ? data[0] % 33 : (len ? len : 1);
	r1 = run(in, len, len ? len : 1, &whole);
	r2 = run(in, len, piece, &pieces);
	CHECK(r1 == r2);
	CHECK(r1 == 0 || r1 == -SBX_EPROTO);
	/* A failure may come after fewer events in one run than in the other: only what both
	 * gave must agree then. */
	if (r1 == 0)
		CHECK(whole.len == pieces.len);
	CHECK(memcmp(whole.data ? whole.data : "", pieces.data ? pieces.data : "",
	             whole.len < pieces.len ? whole.len : pieces.len) == 0);
	sbx_buf_free(&whole);
	sbx_buf_free(&pieces);
	return 0;
}
