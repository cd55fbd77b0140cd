/* The keeper's parser of a take (keeper.h): what a peer of the keeper's uid sends it. Apart
 * from the keeper so that it can be fuzzed alone (tests/fuzz/fuzz_keeper_take.c). */
#include <stdlib.h>
#include <string.h>

#include "backends/sandbox/keeper.h"

char *sbx_keeper_parse_take(const char *msg, size_t n, const char *context)
{
	struct sbx_keeper_request req;
	const char *ctx = msg + sizeof req;

	if (n < sizeof req)
		return NULL;
	memcpy(&req, msg, sizeof req);
	/* Counted in size_t: two 32-bit lengths and the NUL cannot wrap it. */
	if (req.magic != SBX_KEEPER_MAGIC || req.kind != SBX_KEEPER_TAKE ||
	    (size_t)req.context_len + 1 + req.shape_len != n - sizeof req ||
	    ctx[req.context_len] != '\0' || strcmp(ctx, context) != 0)
		return NULL;
	return strndup(ctx + req.context_len + 1, req.shape_len);
}
