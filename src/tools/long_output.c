/* Output too long for the model's context: the start is kept, and the whole text goes to a
 * tool-result file (sbx_offload_tool_result, as the reference offloads the rest of a long
 * result), so the model learns how much was cut and where the rest is, and reads it there
 * with Read or Grep. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <agentsbx/tools.h>

#include "tools/text.h"
#include "tools/tool.h"
#include "util/cleanup.h"
#include "util/error.h"

static size_t count_chars(const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xC0) != 0x80;
	return n;
}

static size_t count_lines(const char *s, size_t len)
{
	size_t n = 0;

	for (const char *p = s, *end = s + len; p < end && (p = memchr(p, '\n', (size_t)(end - p)));
	     p++)
		n++;
	return n + (len && s[len - 1] != '\n');
}

/* A tool-call id for the file's name: the tool calls of this API carry none. */
static int make_call_id(const char *tool, char *out, size_t len)
{
	unsigned char raw[8];
	_cleanup_close_ int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, raw, sizeof raw) != (ssize_t)sizeof raw)
		return sbx_fail(-SBX_EIO, "%s: no random bytes for the output file's name", tool);
	snprintf(out, len, "%s-%02x%02x%02x%02x%02x%02x%02x%02x", tool, raw[0], raw[1], raw[2],
	         raw[3], raw[4], raw[5], raw[6], raw[7]);
	for (char *c = out; *c; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c - 'A' + 'a');
	return 0;
}

/* Stores the full text; NULL with the reason in why when it cannot (a read-only workspace). */
static char *store_full(sbx_tool_ctx *ctx, const sbx_buf *text, char *why, size_t why_len)
{
	char call_id[64];
	_cleanup_free_ char *rel = NULL;

	if (make_call_id(ctx->tool_name ? ctx->tool_name : "tool", call_id, sizeof call_id) < 0 ||
	    sbx_offload_tool_result(ctx->ws, ctx->session_id, call_id, text->data, text->len,
	                            &rel) < 0) {
		snprintf(why, why_len, "%s", sbx_tool_last_error());
		return NULL;
	}
	return sbx_tool_display_path(ctx, rel);
}

int sbx_tool_cut_long_output(sbx_tool_ctx *ctx, sbx_buf *text, size_t max_chars,
                             sbx_tool_out *out)
{
	size_t keep, chars, lines, kept_lines;
	_cleanup_free_ char *path = NULL;
	char why[512] = "";

	if (!text->data || (keep = sbx_tool_text_prefix(text->data, text->len, max_chars)) >=
	                   text->len)
		return 0;
	if (text->oom)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	chars = count_chars(text->data, text->len);
	lines = count_lines(text->data, text->len);
	kept_lines = count_lines(text->data, keep);
	path = store_full(ctx, text, why, sizeof why);
	sbx_tool_meta_bool(out, "truncated", true);
	sbx_tool_meta_int(out, "truncated_chars", (int64_t)(chars - max_chars));
	sbx_tool_meta_int(out, "truncated_bytes", (int64_t)(text->len - keep));
	sbx_tool_meta_int(out, "truncated_lines", (int64_t)(lines - kept_lines));
	if (path)
		sbx_tool_meta_str(out, "full_output_path", path, strlen(path));
	size_t cut_bytes = text->len - keep;
	text->len = keep;
	text->data[keep] = '\0';
	sbx_buf_printf(text, "\n... (output truncated: %zu of %zu characters were cut (%zu bytes), "
	               "%zu of %zu lines shown)", chars - max_chars, chars, cut_bytes, kept_lines,
	               lines);
	if (path)
		sbx_buf_printf(text, "\n<system-reminder>The full output (%zu characters, %zu lines) "
		               "is in '%s'. Read it there with the Read tool (offset and limit) or "
		               "search it with Grep if you need the rest.</system-reminder>", chars,
		               lines, path);
	else
		sbx_buf_printf(text, "\n<system-reminder>The full output could not be kept in a file "
		               "(%s): rerun the command with its output redirected to a file, or "
		               "filtered, to see the rest.</system-reminder>", why);
	return 0;
}
