/* libFuzzer target for MCP's framing and the client's response handling.
 *
 * The first byte picks the mode:
 *  - even: the bytes go through sbx_linebuf in chunks of varying size with a small line limit;
 *    every line that comes out must hold no newline and fit the limit, and the lines that fit
 *    must be exactly the input's lines (a reference split), in order, and each is read as a
 *    frame of the stream transport ("<channel> <line>") the way its digits say;
 *  - odd: the bytes are what a gateway sends back on a connection, and the client lists tools
 *    (initialize first when the second byte is odd): whatever arrives, it must end in success
 *    or a failure with a message — never a crash, a hang or a leak. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "mcp/client.h"
#include "mcp/frames.h"
#include "util/linebuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s\n", #cond); \
	abort(); } } while (0)
#define LIMIT 64

/* The next line of the reference split that the line buffer keeps (at most LIMIT bytes
 * before its newline), without a final "\r". */
static const char *next_kept(const char **ref, const char *end, size_t *len)
{
	for (;;) {
		const char *line = *ref, *nl = memchr(line, '\n', (size_t)(end - line));
		size_t raw;

		CHECK(nl != NULL);
		raw = (size_t)(nl - line);
		*ref = nl + 1;
		if (raw <= LIMIT) {
			*len = raw && line[raw - 1] == '\r' ? raw - 1 : raw;
			return line;
		}
	}
}

/* Every line is also read as a stream-transport frame: a frame's number is its leading
 * digits, and its line is exactly what follows them and one space. */
static void check_frame(const char *frame, size_t len)
{
	const char *line = NULL;
	size_t line_len = 0, digits = 0;
	uint32_t ch;
	int kind = sbx_mcp_frame_split(frame, len, &ch, &line, &line_len);

	while (digits < len && frame[digits] >= '0' && frame[digits] <= '9')
		digits++;
	if (kind < 0) {
		CHECK(digits == 0 || digits > 10 || (digits < len && frame[digits] != ' ') ||
		      strtoull(frame, NULL, 10) > UINT32_MAX);
		return;
	}
	CHECK(digits >= 1 && digits <= 10 && strtoull(frame, NULL, 10) == ch);
	CHECK(kind == (digits < len));
	if (kind == 1)
		CHECK(line == frame + digits + 1 && line_len == len - digits - 1);
}

static void framing(const uint8_t *data, size_t size)
{
	sbx_linebuf lb = { .max = LIMIT };
	const char *in = (const char *)data, *ref = in, *end = in + size;
	size_t off = 0, step = 1;

	while (off < size) {
		size_t n = step < size - off ? step : size - off;
		char *line;
		size_t len;
		int r;

		CHECK(sbx_linebuf_feed(&lb, in + off, n) == 0);
		off += n;
		step = step * 3 % 17 + 1;
		while ((r = sbx_linebuf_next(&lb, &line, &len)) != SBX_LINE_NONE) {
			const char *want;
			size_t want_len;

			if (r == SBX_LINE_DROPPED)
				continue;
			CHECK(len <= LIMIT && !memchr(line, '\n', len));
			want = next_kept(&ref, end, &want_len);
			CHECK(want_len == len && memcmp(want, line, len) == 0);
			check_frame(line, len);
		}
	}
	sbx_linebuf_free(&lb);
}

static void client(const uint8_t *data, size_t size)
{
	sbx_mcp_client c;
	char *tools = NULL;
	int sv[2];

	if (size > 60000 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return;
	CHECK(write(sv[1], data, size) == (ssize_t)size);
	shutdown(sv[1], SHUT_WR);
	sbx_mcp_client_init(&c, sv[0], "fuzz", 1000);
	if (size && (data[0] & 1) && sbx_mcp_client_initialize(&c) < 0) {
		CHECK(sbx_last_error()[0] != '\0');
	} else if (sbx_mcp_client_list_tools(&c, &tools) == 0) {
		CHECK(tools && tools[0] == '[');
	} else {
		CHECK(sbx_last_error()[0] != '\0');
	}
	free(tools);
	sbx_mcp_client_close(&c);
	close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1)
		client(data + 1, size - 1);
	else
		framing(data + 1, size - 1);
	return 0;
}
