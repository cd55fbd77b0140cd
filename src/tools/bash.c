/* Bash: a shell command in the workspace, the way Claude Code's tool behaves (the numbers and
 * texts of agentscope-workspace.md §3.1), with the working directory kept per session.
 *
 * The directory a command ends in is learned from the command itself: an EXIT trap prints
 * `pwd` behind a random marker on stderr, which is cut from the output again. A command that
 * replaces the shell (exec) or is killed leaves the directory as it was. A directory outside
 * the workspace is not kept: the next command starts at the root again. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gitguard.h"
#include "tools/bgshell.h"
#include "tools/session.h"
#include "tools/tool.h"
#include "tools/text.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/path.h"

#define DEFAULT_TIMEOUT_MS 120000
#define MAX_TIMEOUT_MS 600000
#define OUTPUT_MAX_CHARS 30000
/* Kept per stream before the tool's own cut, so the marker at the very end of stderr survives
 * a chatty command. */
#define CAPTURE_MAX ((size_t)4 << 20)

static const char schema[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"command\":{\"type\":\"string\",\"description\":\"The command to execute\"},"
	"\"timeout\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Optional timeout in "
	"milliseconds (up to 600000; default 120000)\"},"
	"\"description\":{\"type\":\"string\",\"description\":\"Clear, concise description of "
	"what this command does in 5-10 words\"},"
	"\"run_in_background\":{\"type\":\"boolean\",\"description\":\"Set to true to run this "
	"command in the background. Use BashOutput to read the output later.\"}},"
	"\"required\":[\"command\"],\"additionalProperties\":false}";

static const char description[] =
	"Executes a shell command with /bin/sh in the workspace and returns its output.\n\n"
	"- The working directory persists between commands of the same session; the first command "
	"starts at the workspace root.\n"
	"- The command runs in a sandbox: files outside the workspace, the host's processes and "
	"(unless the workspace allows it) the network are out of reach.\n"
	"- The timeout is in milliseconds (default 120000, at most 600000). When it expires the "
	"command and every process it started are killed.\n"
	"- Output longer than 30000 characters is truncated: the result then says how much was "
	"cut and names a file holding the full output, to read with the Read tool.\n"
	"- Processes a command leaves behind (`cmd &`, nohup, a daemon) are killed when the "
	"command ends. To keep something running (a dev server, a watcher, a long build), use the "
	"run_in_background parameter instead: the call returns at once with a shell ID, "
	"BashOutput reads the new output and the status, KillShell stops it. You do not need '&' "
	"at the end of a command run this way, and never use run_in_background for 'sleep'. "
	"Background shells are killed when the workspace closes.\n"
	"- Quote paths that contain spaces. Prefer the Read, Write, Edit, Glob and Grep tools over "
	"cat, sed, find and grep for working with files.\n"
	"- Chain dependent commands with && and independent ones with ;.";

struct bash_run {
	const char *command;
	int64_t timeout_ms;
	char marker[40];
	sbx_result *res;
	uint64_t quarantined_since;   /* the git guard's count before the command */
};

static int make_marker(char *out, size_t len)
{
	unsigned char raw[12];
	_cleanup_close_ int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, raw, sizeof raw) != (ssize_t)sizeof raw)
		return sbx_fail(-SBX_EIO, "Bash: no random bytes for the cwd marker");
	snprintf(out, len, "__SBX_CWD_%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x__", raw[0],
	         raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10],
	         raw[11]);
	return 0;
}

/* The trap goes first on the same line, so the command's own line numbers stay as written. */
static char *wrapped_command(const struct bash_run *b)
{
	char *s;

	if (asprintf(&s, "trap 'printf \"\\n%s%%s\\n\" \"$(pwd)\" >&2' EXIT; %s", b->marker,
	             b->command) < 0)
		return NULL;
	return s;
}

/* Finds the marker line at the end of stderr, cuts it off and returns the directory it names
 * (malloc'ed), or NULL when the shell did not get to print it. */
static char *take_cwd(struct bash_run *b, char *err, size_t *len)
{
	size_t mlen = strlen(b->marker);
	char *at = NULL, *p = err;

	while ((p = memmem(p, *len - (size_t)(p - err), b->marker, mlen)))
		at = p++;
	if (!at || at == err || at[-1] != '\n')
		return NULL;
	char *dir = at + mlen, *end = memchr(dir, '\n', *len - (size_t)(dir - err));
	char *copy = strndup(dir, end ? (size_t)(end - dir) : *len - (size_t)(dir - err));

	*len = (size_t)(at - 1 - err);
	err[*len] = '\0';
	return copy;
}

static int run_command(sbx_tool_ctx *ctx, struct bash_run *b, const char *cwd_rel)
{
	_cleanup_free_ char *script = wrapped_command(b);
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	sbx_exec_opts o = {
		.size = sizeof o,
		.cwd = *cwd_rel ? cwd_rel : NULL,
		.timeout_ms = b->timeout_ms,
		.max_output = CAPTURE_MAX,
	};

	if (!script)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	return sbx_exec_unhooked(ctx->ws, argv, &o, &b->res);
}

/* The session's directory if it still exists as a directory, else the root. */
static const char *start_dir(sbx_tool_ctx *ctx, bool *reset)
{
	sbx_stat st = { .size = sizeof st };
	const char *cwd = ctx->session->cwd;

	*reset = false;
	if (!*cwd)
		return cwd;
	if (sbx_file_stat(ctx->ws, cwd, &st) == 0 && st.type == SBX_FILE_DIRECTORY)
		return cwd;
	*reset = true;
	return "";
}

static int remember_cwd(sbx_tool_ctx *ctx, const char *dir, sbx_tool_out *out)
{
	_cleanup_free_ char *rel = NULL, *norm = NULL;
	int r;

	if (!dir)
		return 0;
	if (sbx_path_relative_in(ctx->root_view, ctx->host_view, dir, "cwd", &rel) < 0 ||
	    sbx_path_normalize(rel, "cwd", &norm) < 0) {
		/* Outside the workspace: the next command starts at the root. */
		sbx_tool_meta_bool(out, "cwd_reset", true);
		return sbx_tool_session_set_cwd(ctx->session, "");
	}
	if (strcmp(norm, ctx->session->cwd) == 0)
		return 0;
	r = sbx_tool_session_set_cwd(ctx->session, norm);
	return r;
}

static void append_stream(sbx_buf *text, const char *label, const char *data, size_t len)
{
	if (!len)
		return;
	sbx_buf_printf(text, "\n%s:\n", label);
	sbx_tool_text_append(text, data, len);
}

/* What the git guard took away after this command: the model must know, or it will wonder
 * where its hook went (and the harness may want to stop it). */
static void report_quarantine(sbx_tool_ctx *ctx, const struct bash_run *b, sbx_tool_out *out)
{
	uint64_t n = sbx_gitguard_count(ctx->ws) - b->quarantined_since;
	sbx_buf list = { 0 };

	if (!n)
		return;
	sbx_tool_meta_int(out, "git_quarantined", (int64_t)n);
	sbx_buf_printf(&out->text, "\n\n[workspace] %llu item(s) this command left in git "
	               "repositories could run code when git is used outside the sandbox, and were "
	               "moved to quarantine (configs keep their safe keys):\n",
	               (unsigned long long)n);
	sbx_gitguard_describe_since(ctx->ws, b->quarantined_since, &list);
	sbx_tool_text_append(&out->text, list.data ? list.data : "", list.len);
	sbx_buf_free(&list);
}

/* Output beyond what the host keeps of a command (CAPTURE_MAX per stream) is gone for good:
 * the model is told how much, so it does not take the output for complete. */
static void note_capture_drops(const sbx_result *res, sbx_buf *text, sbx_tool_out *out)
{
	uint64_t o = sbx_result_dropped(res, SBX_STDOUT), e = sbx_result_dropped(res, SBX_STDERR);

	if (!o && !e)
		return;
	sbx_tool_meta_int(out, "dropped_stdout_bytes", (int64_t)o);
	sbx_tool_meta_int(out, "dropped_stderr_bytes", (int64_t)e);
	sbx_buf_printf(text, "\n[workspace] Only the first %zu MiB of each stream were kept: "
	               "%llu more bytes of stdout and %llu of stderr were not. Redirect the output "
	               "to a file to keep all of it.", CAPTURE_MAX >> 20, (unsigned long long)o,
	               (unsigned long long)e);
}

static int report(sbx_tool_ctx *ctx, struct bash_run *b, char *err, size_t err_len,
                  sbx_tool_out *out)
{
	size_t out_len;
	const char *stdout_data = sbx_result_stdout(b->res, &out_len);
	int code = sbx_result_exit_code(b->res), sig = sbx_result_signal(b->res);
	sbx_buf text = { 0 };
	_cleanup_free_ char *cwd_view = sbx_tool_display_path(ctx, ctx->session->cwd);

	if (sbx_result_timed_out(b->res)) {
		sbx_buf_printf(&text, "Command timed out after %lldms: %s\n", (long long)b->timeout_ms,
		               b->command);
		append_stream(&text, "Stdout", stdout_data, out_len);
		append_stream(&text, "Stderr", err, err_len);
	} else if (code != 0) {
		sbx_buf_printf(&text, "Command failed: %s\n", b->command);
		append_stream(&text, "Stdout", stdout_data, out_len);
		append_stream(&text, "Stderr", err, err_len);
	} else {
		sbx_tool_text_append(&text, stdout_data, out_len);
		if (out_len && err_len)
			sbx_buf_puts(&text, "\n");
		sbx_tool_text_append(&text, err, err_len);
	}
	note_capture_drops(b->res, &text, out);
	if (sbx_tool_cut_long_output(ctx, &text, OUTPUT_MAX_CHARS, out) < 0) {
		sbx_buf_free(&text);
		return -SBX_ENOMEM;
	}
	sbx_buf_append(&out->text, text.data ? text.data : "", text.len);
	out->text.oom |= text.oom;
	sbx_buf_free(&text);
	out->ok = code == 0 && !sbx_result_timed_out(b->res);
	sbx_tool_meta_int(out, "exit_code", code);
	if (sig)
		sbx_tool_meta_int(out, "signal", sig);
	sbx_tool_meta_bool(out, "timed_out", sbx_result_timed_out(b->res));
	sbx_tool_meta_int(out, "duration_ms", sbx_result_duration_ms(b->res));
	if (cwd_view)
		sbx_tool_meta_str(out, "cwd", cwd_view, strlen(cwd_view));
	report_quarantine(ctx, b, out);
	return 0;
}

/* run_in_background: starts the command as a background shell and returns its id at once. */
static int start_in_background(sbx_tool_ctx *ctx, const char *command, const char *cwd,
                               sbx_tool_out *out)
{
	char id[SBX_BG_ID_MAX], why[512];
	int r = sbx_bg_start(ctx->ws, command, cwd, id, why, sizeof why);

	if (r < 0)
		return sbx_tool_error(out, "Error: the command could not be started in the "
		                      "background: %s", sbx_tool_last_error());
	if (r > 0)
		return sbx_tool_error(out, "%s", why);
	sbx_buf_printf(&out->text, "Command running in background with ID: %s", id);
	sbx_tool_meta_str(out, "shell_id", id, strlen(id));
	sbx_tool_meta_bool(out, "background", true);
	return 0;
}

static int bash_run(sbx_tool_ctx *ctx, const sbx_json *args, sbx_tool_out *out)
{
	struct bash_run b = { .command = sbx_tool_arg_str(args, "command", "") };
	int64_t timeout = sbx_tool_arg_int(args, "timeout", 0);
	_cleanup_free_ char *err = NULL, *dir = NULL;
	const char *err_data;
	size_t err_len;
	bool reset;
	int r;

	if (!*b.command)
		return sbx_tool_error(out, "Error: command must not be empty");
	b.timeout_ms = timeout <= 0 ? DEFAULT_TIMEOUT_MS
	                            : timeout > MAX_TIMEOUT_MS ? MAX_TIMEOUT_MS : timeout;
	if ((r = make_marker(b.marker, sizeof b.marker)) < 0)
		return r;
	const char *cwd = start_dir(ctx, &reset);
	if (reset) {
		sbx_tool_meta_bool(out, "cwd_reset", true);
		if ((r = sbx_tool_session_set_cwd(ctx->session, "")) < 0)
			return r;
	}
	if (sbx_tool_arg_bool(args, "run_in_background", false))
		return start_in_background(ctx, b.command, cwd, out);
	uint64_t quarantined = sbx_gitguard_count(ctx->ws);
	if ((r = run_command(ctx, &b, cwd)) < 0)
		return r;
	b.quarantined_since = quarantined;
	err_data = sbx_result_stderr(b.res, &err_len);
	err = malloc(err_len + 1);
	if (!err) {
		sbx_result_free(b.res);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	memcpy(err, err_data, err_len + 1);
	dir = take_cwd(&b, err, &err_len);
	r = remember_cwd(ctx, dir, out);
	if (r == 0)
		r = report(ctx, &b, err, err_len, out);
	sbx_result_free(b.res);
	return r;
}

const sbx_tool_def sbx_tool_bash = {
	.name = "Bash",
	.description = description,
	.input_schema = schema,
	.cls = "exec",
	.run = bash_run,
};
