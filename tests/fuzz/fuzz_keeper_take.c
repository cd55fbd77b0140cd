/* libFuzzer target for the keeper's parser of a take (backends/sandbox/keeper.h): what a peer
 * sends the keeper. Beyond "no crash, no leak": a take is accepted only with the keeper's own
 * context, whole, and the shape it yields is exactly the bytes after the context's NUL. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/sandbox/keeper.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s\n", #cond); \
	abort(); } } while (0)

static const char context[] = "agentsbx 1.7.0\nns.mnt=mnt:[4026531841]\n";

/* The input as sent, or (first byte odd) a well-formed header over the rest, so that the
 * lengths' checks and the context's comparison are reached as often as the magic's. */
static size_t build(const uint8_t *data, size_t size, char **out)
{
	struct sbx_keeper_request req = { .magic = SBX_KEEPER_MAGIC, .kind = SBX_KEEPER_TAKE };
	char *msg;

	if (size == 0 || !(data[0] & 1)) {
		*out = malloc(size ? size : 1);
		if (*out && size)
			memcpy(*out, data, size);
		return size;
	}
	req.context_len = (uint32_t)strlen(context);
	req.shape_len = (uint32_t)(size - 1);
	if (data[0] & 2)
		req.shape_len ^= data[0] >> 2;   /* a length that lies, now and then */
	msg = malloc(sizeof req + sizeof context + size);
	if (!msg) {
		*out = NULL;
		return 0;
	}
	memcpy(msg, &req, sizeof req);
	memcpy(msg + sizeof req, context, sizeof context);
	memcpy(msg + sizeof req + sizeof context, data + 1, size - 1);
	*out = msg;
	return sizeof req + sizeof context + size - 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx_keeper_request req;
	char *msg = NULL, *shape;
	size_t n = build(data, size, &msg);

	if (!msg)
		return 0;
	shape = sbx_keeper_parse_take(msg, n, context);
	if (shape) {
		CHECK(n >= sizeof req);
		memcpy(&req, msg, sizeof req);
		CHECK(req.magic == SBX_KEEPER_MAGIC && req.kind == SBX_KEEPER_TAKE);
		CHECK(req.context_len == strlen(context));
		CHECK(memcmp(msg + sizeof req, context, sizeof context) == 0);
		CHECK(sizeof req + req.context_len + 1 + req.shape_len == n);
		CHECK(strlen(shape) <= req.shape_len);
		CHECK(memcmp(shape, msg + sizeof req + sizeof context, strlen(shape)) == 0);
		free(shape);
	}
	free(msg);
	return 0;
}
