/* BashOutput and KillShell: the background shells Bash starts with run_in_background
 * (bgshell.c), with the names, parameters and texts of Claude Code's tools of that name. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bgshell.h"
#include "tools/text.h"
#include "tools/tool.h"
#include "util/error.h"

#define OUTPUT_MAX_CHARS 30000
/* A filter runs over every line the model did not see yet: a pattern that backtracks
 * badly stops at this (per line) rather than hold the call. */
#define FILTER_MATCH_LIMIT 1000000

static const char output_schema[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"bash_id\":{\"type\":\"string\",\"description\":\"The ID of the background shell to "
	"retrieve output from\"},"
	"\"filter\":{\"type\":\"string\",\"description\":\"Optional regular expression to filter "
	"the output lines. Only lines matching this regex will be included in the result. Any "
	"lines that do not match will no longer be available to read.\"}},"
	"\"required\":[\"bash_id\"],\"additionalProperties\":false}";

static const char output_description[] =
	"- Retrieves output from a running or completed background bash shell\n"
	"- Takes a bash_id parameter identifying the shell\n"
	"- Always returns only new output since the last check\n"
	"- Returns stdout and stderr output along with shell status\n"
	"- Supports optional regex filtering to show only lines matching a pattern\n"
	"- Use this tool when you need to monitor or check the output of a long-running shell\n"
	"- Shell IDs are returned by the Bash tool when it runs a command with "
	"run_in_background\n"
	"- If the output exceeds 30000 characters, it is truncated and the full output is saved "
	"to a file the result names";

static const char kill_schema[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"shell_id\":{\"type\":\"string\",\"description\":\"The ID of the background shell to "
	"kill\"}},"
	"\"required\":[\"shell_id\"],\"additionalProperties\":false}";

static const char kill_description[] =
	"- Kills a running background bash shell by its ID\n"
	"- Takes a shell_id parameter identifying the shell to kill\n"
	"- Returns a success or failure status\n"
	"- Use this tool when you need to terminate a long-running shell\n"
	"- Shell IDs are returned by the Bash tool when it runs a command with "
	"run_in_background";

struct line_filter {
	pcre2_code *code;
	pcre2_match_data *md;
	pcre2_match_context *mctx;
};

static void filter_free(struct line_filter *f)
{
	pcre2_match_data_free(f->md);
	pcre2_match_context_free(f->mctx);
	pcre2_code_free(f->code);
}

/* 0, or 1 with a tool error naming the field for a pattern that does not compile. */
static int filter_compile(const char *pattern, struct line_filter *f, sbx_tool_out *out)
{
	int errcode;
	PCRE2_SIZE erroff;
	PCRE2_UCHAR msg[256];

	*f = (struct line_filter){ 0 };
	f->code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
	                        PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &errcode, &erroff, NULL);
	if (!f->code) {
		pcre2_get_error_message(errcode, msg, sizeof msg);
		sbx_tool_error(out, "Error: filter: invalid regular expression at offset %zu: %s",
		               (size_t)erroff, (const char *)msg);
		return 1;
	}
	f->md = pcre2_match_data_create_from_pattern(f->code, NULL);
	f->mctx = pcre2_match_context_create(NULL);
	if (!f->md || !f->mctx) {
		filter_free(f);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	pcre2_set_match_limit(f->mctx, FILTER_MATCH_LIMIT);
	return 0;
}

static bool line_matches(struct line_filter *f, const char *line, size_t len)
{
	return pcre2_match(f->code, (PCRE2_SPTR)line, len, 0, 0, f->md, f->mctx) >= 0;
}

/* The stream as text for the model, only its matching lines when there is a filter. */
static void stream_text(const sbx_buf *raw, struct line_filter *f, sbx_buf *text)
{
	sbx_buf all = { 0 };

	sbx_tool_text_append(&all, raw->data ? raw->data : "", raw->len);
	if (!f) {
		sbx_buf_append(text, all.data ? all.data : "", all.len);
		sbx_buf_free(&all);
		return;
	}
	for (const char *p = all.data, *end = all.data + all.len; p && p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (line_matches(f, p, len)) {
			sbx_buf_append(text, p, len);
			sbx_buf_puts(text, "\n");
		}
		p += len + 1;
	}
	sbx_buf_free(&all);
}

static void append_stream(sbx_buf *text, const char *tag, const sbx_buf *raw, uint64_t dropped,
                          struct line_filter *f)
{
	sbx_buf s = { 0 };

	stream_text(raw, f, &s);
	if (dropped)
		sbx_buf_printf(text, "\n\n[%llu bytes of %s were dropped before this read: a "
		               "background shell keeps the newest %zu MiB of each stream not read "
		               "yet]", (unsigned long long)dropped, tag, SBX_BG_KEEP_BYTES >> 20);
	if (s.len) {
		sbx_buf_printf(text, "\n\n<%s>\n", tag);
		sbx_buf_append(text, s.data, s.len);
		if (s.data[s.len - 1] != '\n')
			sbx_buf_puts(text, "\n");
		sbx_buf_printf(text, "</%s>", tag);
	}
	text->oom |= s.oom;
	sbx_buf_free(&s);
}

static void report_meta(const sbx_bg_report *rep, const char *id, sbx_tool_out *out)
{
	const char *status = sbx_bg_status_name(rep->status);

	sbx_tool_meta_str(out, "shell_id", id, strlen(id));
	sbx_tool_meta_str(out, "status", status, strlen(status));
	if (rep->status != SBX_BG_RUNNING) {
		sbx_tool_meta_int(out, "exit_code", rep->exit_code);
		if (rep->term_signal)
			sbx_tool_meta_int(out, "signal", rep->term_signal);
	}
	if (rep->out_dropped || rep->err_dropped) {
		sbx_tool_meta_int(out, "dropped_stdout_bytes", (int64_t)rep->out_dropped);
		sbx_tool_meta_int(out, "dropped_stderr_bytes", (int64_t)rep->err_dropped);
	}
}

static int write_report(sbx_tool_ctx *ctx, const char *id, const sbx_bg_report *rep,
                        struct line_filter *f, sbx_tool_out *out)
{
	sbx_buf text = { 0 };
	int r;

	sbx_buf_printf(&text, "<status>%s</status>", sbx_bg_status_name(rep->status));
	if (rep->status != SBX_BG_RUNNING)
		sbx_buf_printf(&text, "\n\n<exit_code>%d</exit_code>", rep->exit_code);
	append_stream(&text, "stdout", &rep->out, rep->out_dropped, f);
	append_stream(&text, "stderr", &rep->err, rep->err_dropped, f);
	if (text.oom) {
		sbx_buf_free(&text);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	r = sbx_tool_cut_long_output(ctx, &text, OUTPUT_MAX_CHARS, out);
	if (r == 0) {
		sbx_buf_append(&out->text, text.data, text.len);
		report_meta(rep, id, out);
	}
	sbx_buf_free(&text);
	return r;
}

static int bash_output_run(sbx_tool_ctx *ctx, const sbx_json *args, sbx_tool_out *out)
{
	const char *id = sbx_tool_arg_str(args, "bash_id", "");
	const char *pattern = sbx_tool_arg_str(args, "filter", NULL);
	struct line_filter f;
	sbx_bg_report rep;
	char why[1024];
	int r;

	if (pattern && (r = filter_compile(pattern, &f, out)) != 0)
		return r > 0 ? 0 : r;
	r = sbx_bg_take(ctx->ws, id, &rep, why, sizeof why);
	if (r > 0)
		sbx_tool_error(out, "%s", why);
	else if (r == 0)
		r = write_report(ctx, id, &rep, pattern ? &f : NULL, out);
	if (pattern)
		filter_free(&f);
	sbx_bg_report_free(&rep);
	return r > 0 ? 0 : r;
}

static int kill_shell_run(sbx_tool_ctx *ctx, const sbx_json *args, sbx_tool_out *out)
{
	const char *id = sbx_tool_arg_str(args, "shell_id", "");
	sbx_bg_report rep;
	char why[1024];
	int r = sbx_bg_kill(ctx->ws, id, &rep, why, sizeof why);

	(void)ctx;
	if (r == 1) {
		sbx_tool_error(out, "%s", why);
	} else if (r == 2) {
		sbx_tool_error(out, "Shell %s is not running, so cannot be killed (status: %s)", id,
		               sbx_bg_status_name(rep.status));
		report_meta(&rep, id, out);
	} else if (r == 3) {
		sbx_tool_error(out, "Shell %s was told to end but still runs (status: %s): it did "
		               "not end within the wait; check again with BashOutput", id,
		               sbx_bg_status_name(rep.status));
		report_meta(&rep, id, out);
	} else if (r == 0) {
		sbx_buf_printf(&out->text, "Successfully killed shell: %s (%s)", id, rep.command);
		report_meta(&rep, id, out);
	}
	sbx_bg_report_free(&rep);
	return r > 0 ? 0 : r;
}

const sbx_tool_def sbx_tool_bash_output = {
	.name = "BashOutput",
	.description = output_description,
	.input_schema = output_schema,
	.cls = "read",
	.run = bash_output_run,
};

const sbx_tool_def sbx_tool_kill_shell = {
	.name = "KillShell",
	.description = kill_description,
	.input_schema = kill_schema,
	.cls = "exec",
	.run = kill_shell_run,
};
