/* libFuzzer target for what the docker backend reads of the Engine's GET /info
 * (backends/docker/runtime.c): the registered runtimes, the default, and of each runtime its
 * program and gVisor's flags among its arguments (--host-uds, --network). A parse fails with
 * -SBX_EPROTO (or out of memory) and leaves nothing, or gives names a config could write
 * ([A-Za-z0-9][A-Za-z0-9_.-]*, at most 128), no more of them than the input had keys, a
 * default that is such a name or none, and flags only on gVisor runtimes; the description
 * doctor prints of it is one line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "backends/docker/docker.h"
#include "util/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s\n", #cond); \
	abort(); } } while (0)

static void check_name(const char *s)
{
	size_t len = strlen(s);

	CHECK(len > 0 && len <= 128);
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');

		CHECK(alnum || (i > 0 && (c == '_' || c == '.' || c == '-')));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct docker_runtimes rt;
	sbx_buf text = { 0 };
	int r;

	if (size > 65536)
		return 0;
	r = docker_runtimes_parse((const char *)data, size, &rt);
	if (r < 0) {
		CHECK(r == -SBX_EPROTO || r == -SBX_ENOMEM);
		CHECK(rt.n == 0 && !rt.list && !rt.default_name);
		return 0;
	}
	CHECK(rt.n <= size);
	for (size_t i = 0; i < rt.n; i++) {
		check_name(rt.list[i].name);
		CHECK(rt.list[i].gvisor || (!rt.list[i].sockets_closed && !rt.list[i].no_network));
		CHECK(docker_runtimes_find(&rt, rt.list[i].name) != NULL);
	}
	if (rt.default_name)
		check_name(rt.default_name);
	docker_runtimes_describe(&rt, &text);
	CHECK(text.oom || (text.data && strlen(text.data) == text.len && !strchr(text.data, '\n')));
	sbx_buf_free(&text);
	docker_runtimes_free(&rt);
	return 0;
}
