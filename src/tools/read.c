/* Read: a text file as numbered lines (cat -n), a window of it at a time; an image as base64
 * data with its media type. Texts and limits of agentscope-workspace.md §3.2, plus Claude
 * Code's reminders for an empty file and an offset past the end, which the reference omits.
 *
 * The state the file was read in (size and mtime from the workspace's own stat, taken before
 * reading) is noted in the session: Write and Edit refuse a file the model has not seen as it
 * is now. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tools/session.h"
#include "tools/text.h"
#include "tools/tool.h"
#include "util/base64.h"
#include "util/cleanup.h"
#include "util/error.h"

#define DEFAULT_LIMIT 2000
#define MAX_LINE_CHARS 2000
#define TEXT_MAX ((uint64_t)128 << 20)
#define IMAGE_MAX ((uint64_t)20 << 20)

static const char schema[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"file_path\":{\"type\":\"string\",\"description\":\"The path of the file to read: "
	"absolute, or relative to the workspace root\"},"
	"\"offset\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"The line number to start "
	"reading from (1-based). Only provide if the file is too large to read at once\"},"
	"\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":2000,\"description\":\"The "
	"number of lines to read (at most 2000). Only provide if the file is too large to read at "
	"once\"}},"
	"\"required\":[\"file_path\"],\"additionalProperties\":false}";

static const char description[] =
	"Reads a file from the workspace.\n\n"
	"- file_path is absolute (under the workspace root) or relative to the workspace root.\n"
	"- By default up to 2000 lines are read from the start of the file; offset (1-based) and "
	"limit read a window of a longer file.\n"
	"- Lines are numbered like cat -n, starting at 1; lines longer than 2000 characters are "
	"cut.\n"
	"- Images (PNG, JPEG, GIF, WebP) are returned as base64 data with their media type.\n"
	"- Read a file before changing it with Write or Edit: they refuse files not read in their "
	"current state.\n"
	"- This tool reads files, not directories: list a directory with Bash (ls) or Glob.";

static const struct {
	const char *ext, *media_type;
} image_types[] = {
	{ ".png", "image/png" }, { ".jpg", "image/jpeg" }, { ".jpeg", "image/jpeg" },
	{ ".gif", "image/gif" }, { ".webp", "image/webp" },
};

static const char *image_media_type(const char *rel)
{
	const char *dot = strrchr(rel, '.');

	for (size_t i = 0; dot && i < sizeof image_types / sizeof *image_types; i++)
		if (strcasecmp(dot, image_types[i].ext) == 0)
			return image_types[i].media_type;
	return NULL;
}

/* The whole file, if it is within max bytes: 0, 1 after a tool error, or negative. The cap is
 * checked on the file opened and bounds the read itself: the stat taken before may be stale
 * (a command can swap in a sparse giant meanwhile). */
static int read_capped(sbx_tool_ctx *ctx, const char *rel, const char *shown, const sbx_stat *st,
                       uint64_t max, char **data, size_t *len, sbx_tool_out *out)
{
	int r;

	if (st->file_size > max)
		return sbx_tool_error(out, "Error: %s is too large to read (%llu bytes; the limit is "
		                      "%llu)", shown, (unsigned long long)st->file_size,
		                      (unsigned long long)max), 1;
	r = sbx_file_read_rel(ctx->ws, rel, (size_t)max, data, len, NULL);
	if (r == -SBX_EFBIG)
		return sbx_tool_error(out, "Error: %s is too large to read (more than %llu bytes, the "
		                      "limit)", shown, (unsigned long long)max), 1;
	if (r < 0)
		return r == -SBX_ENOMEM ? r : (sbx_tool_error(out, "Error reading file: %s",
		                                               sbx_tool_last_error()), 1);
	return 0;
}

static int read_image(sbx_tool_ctx *ctx, const char *rel, const char *shown,
                      const char *media_type, const sbx_stat *st, sbx_tool_out *out)
{
	_cleanup_free_ char *data = NULL, *b64 = NULL;
	size_t len;
	int r;

	if ((r = read_capped(ctx, rel, shown, st, IMAGE_MAX, &data, &len, out)) != 0)
		return r < 0 ? r : 0;
	if (!(b64 = malloc(4 * ((len + 2) / 3) + 1)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	sbx_base64_encode(data, len, b64);
	sbx_buf_printf(&out->text, "Image %s (%s, %zu bytes), returned as base64 data in "
	               "metadata.data.", shown, media_type, len);
	sbx_tool_meta_str(out, "file_path", shown, strlen(shown));
	sbx_tool_meta_str(out, "media_type", media_type, strlen(media_type));
	sbx_tool_meta_str(out, "data", b64, strlen(b64));
	return sbx_tool_session_note_read(ctx->session, rel, st);
}

/* Appends line number n and the line (without its line end), cut if too long, with invalid
 * UTF-8 replaced. */
static void put_line(sbx_buf *text, size_t n, const char *line, size_t len, bool first)
{
	size_t keep = sbx_tool_text_prefix(line, len, MAX_LINE_CHARS);

	sbx_buf_printf(text, "%s%6zu\t", first ? "" : "\n", n);
	sbx_tool_text_append(text, line, keep);
	if (keep < len)
		sbx_buf_puts(text, "[truncated]");
}

/* Where the line starting at i ends (its LF, CR or CRLF excluded) and where the next one
 * starts: a lone CR ends a line too, as the text repair of tool output treats it. */
static size_t line_end(const char *d, size_t len, size_t i, size_t *next)
{
	const char *nl = memchr(d + i, '\n', len - i);
	size_t stop = nl ? (size_t)(nl - d) : len;
	const char *cr = memchr(d + i, '\r', stop - i);

	if (cr) {
		size_t at = (size_t)(cr - d);
		*next = at + 1 < len && d[at + 1] == '\n' ? at + 2 : at + 1;
		return at;
	}
	*next = nl ? stop + 1 : len;
	return stop;
}

static int read_text(sbx_tool_ctx *ctx, const char *rel, const char *shown, const sbx_stat *st,
                     const sbx_json *args, sbx_tool_out *out)
{
	int64_t offset = sbx_tool_arg_int(args, "offset", 1), limit = sbx_tool_arg_int(args, "limit",
	                                                                                DEFAULT_LIMIT);
	_cleanup_free_ char *raw = NULL;
	size_t len, lines = 0, shown_lines = 0, next;
	int r;

	if ((r = read_capped(ctx, rel, shown, st, TEXT_MAX, &raw, &len, out)) != 0)
		return r < 0 ? r : 0;
	/* Lines are cut out of the file as read: no repaired copy of a file of up to 128 MiB. */
	for (size_t i = 0; i < len; i = next) {
		size_t end = line_end(raw, len, i, &next);

		lines++;
		if ((int64_t)lines >= offset && (int64_t)shown_lines < limit) {
			put_line(&out->text, lines, raw + i, end - i, shown_lines == 0);
			shown_lines++;
		}
	}
	if (lines == 0)
		sbx_buf_puts(&out->text, "<system-reminder>Warning: the file exists but the contents "
		             "are empty.</system-reminder>");
	else if (offset > (int64_t)lines)
		sbx_buf_printf(&out->text, "<system-reminder>Warning: the file exists but is shorter "
		               "than the provided offset (%lld). The file has %zu lines."
		               "</system-reminder>", (long long)offset, lines);
	sbx_tool_meta_str(out, "file_path", shown, strlen(shown));
	sbx_tool_meta_int(out, "total_lines", (int64_t)lines);
	sbx_tool_meta_int(out, "start_line", offset);
	sbx_tool_meta_int(out, "num_lines", (int64_t)shown_lines);
	sbx_tool_meta_bool(out, "truncated", offset + (int64_t)shown_lines - 1 < (int64_t)lines);
	return sbx_tool_session_note_read(ctx->session, rel, st);
}

static int read_run(sbx_tool_ctx *ctx, const sbx_json *args, sbx_tool_out *out)
{
	const char *path = sbx_tool_arg_str(args, "file_path", "");
	_cleanup_free_ char *rel = NULL, *shown = NULL;
	sbx_stat st = { .size = sizeof st };
	const char *media_type;
	int r;

	if ((r = sbx_tool_resolve_path(ctx, "file_path", path, &rel, out)) != 0)
		return r < 0 ? r : 0;
	if (!(shown = sbx_tool_display_path(ctx, rel)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	r = *rel ? sbx_file_stat_rel(ctx->ws, rel, &st) : 0;
	if (r == -SBX_ENOENT || r == -SBX_ENOTDIR)
		return sbx_tool_error(out, "Error: File does not exist: %s", shown);
	if (r < 0)
		return r == -SBX_ENOMEM ? r : sbx_tool_error(out, "Error reading file: %s",
		                                              sbx_tool_last_error());
	if (!*rel || st.type == SBX_FILE_DIRECTORY)
		return sbx_tool_error(out, "Error: Path is a directory, not a file: %s", shown);
	if ((media_type = image_media_type(rel)))
		return read_image(ctx, rel, shown, media_type, &st, out);
	return read_text(ctx, rel, shown, &st, args, out);
}

const sbx_tool_def sbx_tool_read = {
	.name = "Read",
	.description = description,
	.input_schema = schema,
	.cls = "read",
	.run = read_run,
};
