/* agentsbx: the command-line face of the library. Each subcommand is a row in one table;
 * the workspace options every subcommand shares are parsed in one place. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/signalfd.h>

#include <agentsbx/agentsbx.h>
#include "cli/bg.h"
#include "cli/progress.h"
#include "cli/users.h"
#include "config.h"
#include "init/seccomp_table.h"
#include "internal.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/fs.h"
#include "util/json.h"
#include "backends/sandbox/keeper.h"

#define EXIT_LIBRARY_ERROR 125
#define EXIT_TIMED_OUT 124
#define STDIN_MAX ((size_t)64 << 20)
#define CONFIG_FILE_MAX ((size_t)1 << 20)

/* Options shared by every subcommand that opens a workspace. */
struct ws_options {
	const char *config;     /* JSON text or @FILE */
	const char *backend;
	const char *workdir;
	const char *timeout;
	const char *session;    /* tool: the tool session */
	int read_stdin;
};

enum { OPT_CONFIG = 'c', OPT_BACKEND = 'b', OPT_WORKDIR = 'w', OPT_TIMEOUT = 't',
       OPT_STDIN = 'i', OPT_SESSION = 's', OPT_HELP = 'h' };

static const struct option ws_long_options[] = {
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "backend", required_argument, NULL, OPT_BACKEND },
	{ "workdir", required_argument, NULL, OPT_WORKDIR },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "stdin", no_argument, NULL, OPT_STDIN },
	{ "session", required_argument, NULL, OPT_SESSION },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

__attribute__((format(printf, 1, 2)))
static int fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "agentsbx: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_LIBRARY_ERROR;
}

static int library_error(const char *what, int code)
{
	const char *msg = sbx_last_error();

	fprintf(stderr, "agentsbx: %s: %s\n", what, *msg ? msg : sbx_strerror(code));
	return EXIT_LIBRARY_ERROR;
}

static int read_whole_file(const char *path, size_t max, char **data)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len;

	if (fd < 0)
		return -errno;
	return sbx_fs_read_fd(fd, max, data, &len);
}

/* Loads --config (inline JSON or @FILE) and applies --backend/--workdir/--timeout over it,
 * so a flag always wins over the file. */
static int build_config(const struct ws_options *o, char **out)
{
	_cleanup_free_ char *text = NULL;
	char err[256];
	sbx_json *cfg = NULL;
	sbx_buf b = { 0 };
	bool first = true;

	if (o->config && o->config[0] == '@') {
		if (read_whole_file(o->config + 1, CONFIG_FILE_MAX, &text) < 0)
			return fail("--config: cannot read %s", o->config + 1);
	} else if (!(text = strdup(o->config ? o->config : "{}"))) {
		return fail("%s", "out of memory");
	}
	if (sbx_json_parse(text, strlen(text), &cfg, err, sizeof err) < 0 ||
	    cfg->type != SBX_JSON_OBJECT) {
		sbx_json_free(cfg);
		return fail("--config: %s", cfg ? "expected a JSON object" : err);
	}
	sbx_buf_puts(&b, "{");
	for (size_t i = 0; i < cfg->n; i++) {
		const char *k = cfg->keys[i];
		if ((o->backend && !strcmp(k, "backend")) || (o->workdir && !strcmp(k, "workdir")) ||
		    (o->timeout && !strcmp(k, "timeout_ms")))
			continue;
		sbx_buf_puts(&b, first ? "" : ",");
		first = false;
		sbx_buf_json_string(&b, k, cfg->key_lens[i]);
		sbx_buf_puts(&b, ":");
		sbx_json_write(&b, cfg->items[i]);
	}
	sbx_json_free(cfg);
	if (o->backend) {
		sbx_buf_puts(&b, first ? "\"backend\":" : ",\"backend\":");
		sbx_buf_json_string(&b, o->backend, strlen(o->backend));
		first = false;
	}
	if (o->workdir) {
		sbx_buf_puts(&b, first ? "\"workdir\":" : ",\"workdir\":");
		sbx_buf_json_string(&b, o->workdir, strlen(o->workdir));
		first = false;
	}
	if (o->timeout) {
		char *end;
		errno = 0;
		long long ms = strtoll(o->timeout, &end, 10);
		if (errno || end == o->timeout || *end || ms < 0) {
			sbx_buf_free(&b);
			return fail("--timeout: '%s' is not a number of milliseconds", o->timeout);
		}
		sbx_buf_printf(&b, "%s\"timeout_ms\":%lld", first ? "" : ",", ms);
	}
	sbx_buf_puts(&b, "}");
	if (b.oom) {
		sbx_buf_free(&b);
		return fail("%s", "out of memory");
	}
	*out = sbx_buf_steal(&b, NULL);
	return 0;
}

int sbx_cli_build_config(const char *config, const char *backend, const char *workdir,
                         char **out)
{
	struct ws_options o = { .config = config, .backend = backend, .workdir = workdir };

	return build_config(&o, out);
}

/* Parses the shared options; returns the index of the first operand, or -1 after printing an
 * error (or help, with *exit_code 0). */
static int parse_ws_options(int argc, char **argv, const char *usage, struct ws_options *o,
                            int *exit_code)
{
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+c:b:w:t:is:h", ws_long_options, NULL)) != -1) {
		switch (c) {
		case OPT_CONFIG: o->config = optarg; break;
		case OPT_BACKEND: o->backend = optarg; break;
		case OPT_WORKDIR: o->workdir = optarg; break;
		case OPT_TIMEOUT: o->timeout = optarg; break;
		case OPT_STDIN: o->read_stdin = 1; break;
		case OPT_SESSION: o->session = optarg; break;
		case OPT_HELP:
			printf("usage: %s\n", usage);
			*exit_code = 0;
			return -1;
		default:
			fprintf(stderr, "agentsbx: unknown or incomplete option '%s'\nusage: %s\n",
			        argv[optind - 1], usage);
			*exit_code = 2;
			return -1;
		}
	}
	return optind;
}

static int exit_signals = -1;

/* Writes to stdout or stderr while a workspace is open. INT, TERM and HUP are blocked then
 * (see below), so a plain write(2) to a reader that stopped reading (a pipe nobody drains, a
 * pager left open) would keep the process there with the signal pending: TERM would not end
 * it until the reader went away. So the wait is a poll beside the signalfd, the writes are
 * pieces no larger than PIPE_BUF (what a pipe that polls writable takes without blocking),
 * and once such a signal waits the rest is dropped: the caller's exec sees the signal and
 * the workspace is closed. */
static void write_out(int fd, const char *data, size_t len)
{
	while (len > 0) {
		struct pollfd p[2] = { { .fd = fd, .events = POLLOUT },
		                       { .fd = exit_signals, .events = POLLIN } };
		int n = poll(p, exit_signals >= 0 ? 2 : 1, -1);
		ssize_t w;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (exit_signals >= 0 && p[1].revents) || (p[0].revents & POLLNVAL))
			return;
		/* Writable, or an error to meet as before (a reader gone: EPIPE and SIGPIPE). */
		w = write(fd, data, len < PIPE_BUF ? len : PIPE_BUF);
		if (w < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (w <= 0)
			return;
		data += w;
		len -= (size_t)w;
	}
}

/* A result line on stdout (after anything printf left in stdio's buffer). */
static void print_result(const char *text)
{
	fflush(stdout);
	write_out(STDOUT_FILENO, text, strlen(text));
	write_out(STDOUT_FILENO, "\n", 1);
}

static void write_through(int stream, const char *data, size_t len, void *userdata)
{
	(void)userdata;
	write_out(stream == SBX_STDERR ? STDERR_FILENO : STDOUT_FILENO, data, len);
}

static int exit_code_of(const sbx_result *res)
{
	if (sbx_result_timed_out(res))
		return EXIT_TIMED_OUT;
	if (sbx_result_signal(res))
		return 128 + sbx_result_signal(res);
	return sbx_result_exit_code(res);
}

static int read_stdin_all(char **data, size_t *len)
{
	sbx_buf b = { 0 };
	char chunk[65536];
	ssize_t n;

	while ((n = read(STDIN_FILENO, chunk, sizeof chunk)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || b.len + (size_t)n > STDIN_MAX) {
			sbx_buf_free(&b);
			return -1;
		}
		sbx_buf_append(&b, chunk, (size_t)n);
	}
	sbx_buf_append(&b, "", 0);
	if (b.oom) {
		sbx_buf_free(&b);
		return -1;
	}
	*data = sbx_buf_steal(&b, len);
	return 0;
}

/* ---- INT, TERM and HUP ------------------------------------------------------------------ */

/* While a workspace is open, INT, TERM and HUP do not end the process where it stands (the
 * sandbox's processes and placeholders would be left to its tidier, or the next open): they
 * are blocked in every thread and wait in a signalfd, which makes a running command end at
 * once (sbx_exec_set_interrupt_fd). The workspace is then closed as after any command, and
 * the process ends by the signal itself, so its parent sees 128+N as for any killed process.
 * A signal during the open takes effect when the open returns. (exit_signals is above.) */

static void sigset_of_exit_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
}

static void catch_exit_signals(void)
{
	sigset_t set;

	sigset_of_exit_signals(&set);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return;
	exit_signals = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	sbx_exec_set_interrupt_fd(exit_signals);
}

/* After the close: the signal that came meanwhile ends the process; else code. */
static int end_by_signal_or(int code)
{
	struct signalfd_siginfo si;
	sigset_t set;

	if (exit_signals < 0 || read(exit_signals, &si, sizeof si) != (ssize_t)sizeof si)
		return code;
	sbx_exec_set_interrupt_fd(-1);
	fprintf(stderr, "agentsbx: %s: the workspace was closed\n", strsignal((int)si.ssi_signo));
	fflush(stderr);
	signal((int)si.ssi_signo, SIG_DFL);
	sigset_of_exit_signals(&set);
	sigprocmask(SIG_UNBLOCK, &set, NULL);   /* delivers the other pending ones too */
	raise((int)si.ssi_signo);
	return 128 + (int)si.ssi_signo;
}

/* Opens the workspace the shared options describe. Returns 0, or the exit code to end with. */
static int open_from_options(const struct ws_options *o, sbx_workspace **ws)
{
	_cleanup_free_ char *config = NULL;
	int code, r;

	struct cli_progress *progress;
	sbx_open_opts opts = { .size = sizeof opts, .progress = cli_progress_event };

	if ((code = build_config(o, &config)) != 0)
		return code;
	catch_exit_signals();
	/* A missing image may take minutes to pull: say so on stderr as it goes. */
	progress = cli_progress_new(stderr, isatty(STDERR_FILENO));
	opts.progress_userdata = progress;
	r = sbx_workspace_open_with(config, progress ? &opts : NULL, ws);
	cli_progress_end(progress);
	if (r < 0)
		return end_by_signal_or(library_error("open workspace", r));
	return 0;
}

static const char *json_str(const sbx_json *obj, const char *key)
{
	const sbx_json *v = sbx_json_get(obj, key);

	return v && v->type == SBX_JSON_STRING ? v->str : "";
}

/* The git guard moved something a command planted for the host's git: the user must hear of
 * it, since it is their repository (and their agent that tried). */
static void warn_git_quarantine(sbx_workspace *ws)
{
	_cleanup_free_ char *json = NULL;
	sbx_json *v = NULL;
	const sbx_json *items;
	char err[64];

	if (sbx_workspace_git_quarantine(ws, &json) < 0 ||
	    sbx_json_parse(json, strlen(json), &v, err, sizeof err) < 0)
		return;
	items = sbx_json_get(v, "items");
	if (items && items->type == SBX_JSON_ARRAY && items->n) {
		fprintf(stderr, "agentsbx: warning: %zu item(s) left in git repositories of the "
		        "workspace could have run code through git on this host; quarantined:\n",
		        items->n);
		for (size_t i = 0; i < items->n; i++)
			fprintf(stderr, "agentsbx:   %s (%s: %s) -> %s\n",
			        json_str(items->items[i], "path"), json_str(items->items[i], "what"),
			        json_str(items->items[i], "reason"),
			        json_str(items->items[i], "moved_to"));
	}
	sbx_json_free(v);
}

static int close_workspace(sbx_workspace *ws, int code)
{
	int r = sbx_workspace_close(ws);

	if (r < 0 && code != EXIT_LIBRARY_ERROR)
		code = library_error("close workspace", r);
	return end_by_signal_or(code);
}

static const char exec_usage[] =
	"agentsbx exec [--config JSON|@FILE] [--backend NAME] [--workdir DIR] [--timeout MS] "
	"[--stdin] -- CMD [ARG...]";

static int cmd_exec(int argc, char **argv)
{
	struct ws_options o = { 0 };
	sbx_workspace *ws = NULL;
	sbx_result *res = NULL;
	int code = 0, first, r;

	if ((first = parse_ws_options(argc, argv, exec_usage, &o, &code)) < 0)
		return code;
	if (first >= argc)
		return fail("exec: no command given\nusage: %s", exec_usage);
	if ((code = open_from_options(&o, &ws)) != 0)
		return code;
	sbx_exec_opts opts = {
		.size = sizeof opts,
		.flags = SBX_EXEC_NO_CAPTURE,
		.on_output = write_through,
	};
	/* --stdin streams: the command starts at once and reads our stdin as it arrives. */
	if (o.read_stdin)
		r = sbx_exec_from_fd(ws, (const char *const *)argv + first, &opts, STDIN_FILENO,
		                     &res);
	else
		r = sbx_exec(ws, (const char *const *)argv + first, &opts, &res);
	code = r < 0 ? library_error("exec", r) : exit_code_of(res);
	sbx_result_free(res);
	warn_git_quarantine(ws);
	return close_workspace(ws, code);
}

static const char tools_usage[] =
	"agentsbx tools [--config JSON|@FILE] [--backend NAME] [--workdir DIR]";

/* Prints the tool definitions a model is given, as JSON. */
static int cmd_tools(int argc, char **argv)
{
	struct ws_options o = { 0 };
	_cleanup_free_ char *json = NULL;
	sbx_workspace *ws = NULL;
	int code = 0, first, r;

	if ((first = parse_ws_options(argc, argv, tools_usage, &o, &code)) < 0)
		return code;
	if (first < argc)
		return fail("tools takes no operands\nusage: %s", tools_usage);
	if ((code = open_from_options(&o, &ws)) != 0)
		return code;
	if ((r = sbx_tools_json(ws, &json)) < 0)
		code = library_error("tools", r);
	else
		print_result(json);
	return close_workspace(ws, code);
}

static const char tool_usage[] =
	"agentsbx tool [--config JSON|@FILE] [--backend NAME] [--workdir DIR] [--session ID] "
	"NAME ARGS_JSON|-";

/* Runs one tool call and prints the result JSON. Exit 0 when the tool succeeded, 1 when it
 * reported an error to the model, 125 when the library failed. Give --workdir to carry the
 * session (cwd, files read) over to the next run. */
static int cmd_tool(int argc, char **argv)
{
	struct ws_options o = { 0 };
	_cleanup_free_ char *result = NULL, *input = NULL;
	sbx_workspace *ws = NULL;
	const char *args;
	size_t input_len;
	int code = 0, first, r;

	if ((first = parse_ws_options(argc, argv, tool_usage, &o, &code)) < 0)
		return code;
	if (argc - first != 2)
		return fail("tool: expected a tool name and its arguments as JSON\nusage: %s",
		            tool_usage);
	args = argv[first + 1];
	if (strcmp(args, "-") == 0) {
		if (read_stdin_all(&input, &input_len) < 0)
			return fail("%s", "tool: cannot read the arguments from standard input");
		args = input;
	}
	if ((code = open_from_options(&o, &ws)) != 0)
		return code;
	r = sbx_tool_call_session(ws, o.session, argv[first], args, &result);
	if (r < 0) {
		code = library_error("tool", r);
	} else {
		print_result(result);
		code = strncmp(result, "{\"ok\":true", 10) == 0 ? 0 : 1;
		/* The run ends, and its workspace handle with it: so does any background shell. */
		if (strstr(result, "\"background\":true"))
			fprintf(stderr, "agentsbx: the background shell ends with this run; use "
			        "'agentsbx bg start' for a command that outlives it\n");
	}
	warn_git_quarantine(ws);
	return close_workspace(ws, code);
}

static const char doctor_usage[] =
	"agentsbx doctor [--config JSON|@FILE] [--backend NAME]";

static const char host_exposure[] =
	"shares this host's network with the workspace's commands: every address and port the "
	"host reaches, its loopback services and cloud metadata endpoint included";

/* "none, allowlist, host" from a probe entry's "network" list. */
static void print_modes(const sbx_json *modes)
{
	for (size_t i = 0; modes && i < modes->n; i++)
		printf("%s%s", i ? ", " : "", modes->items[i]->str);
	printf("%s\n", modes && modes->n ? "" : "?");
}

static bool lists_mode(const sbx_json *modes, const char *mode)
{
	for (size_t i = 0; modes && i < modes->n; i++)
		if (modes->items[i]->type == SBX_JSON_STRING && !strcmp(modes->items[i]->str, mode))
			return true;
	return false;
}

/* Which network modes each backend can enforce, where the proxy of "allowlist" is, and which
 * choices share the host's network. */
static void print_network(const sbx_json *list)
{
	_cleanup_free_ char *proxy = NULL;

	printf("\nnetwork modes each backend can enforce:\n");
	for (size_t i = 0; i < list->n; i++) {
		const sbx_json *name = sbx_json_get(list->items[i], "backend");
		const sbx_json *modes = sbx_json_get(list->items[i], "network");

		printf("  %-12s ", name ? name->str : "?");
		print_modes(modes);
	}
	printf("mode \"host\" %s. No sandbox backend uses it unless the config says "
	       "{\"network\":{\"mode\":\"host\"}}; a backend that lists only \"host\" always "
	       "does.\n", host_exposure);
	if (sbx_helper_path("agentsbx-proxy", &proxy) == 0)
		printf("allowlist proxy: %s\n", proxy);
	else
		printf("allowlist proxy: not found (%s)\n", sbx_last_error());
}

/* "all 74" or "only 70 of the 74": a count that should be complete. */
static void print_held(int here, int of)
{
	if (here == of)
		printf("all %d", of);
	else
		printf("only %d of the %d — the baseline is broken", here, of);
}

/* The seccomp baseline of ns and bwrap (and of the docker backend's exec server), counted
 * from the table the filter is built from (helpers/init/seccomp_table.c). */
static void print_seccomp(void)
{
	const char *compat = sbx_seccomp_compat_tables();
	struct sbx_seccomp_counts c;
	bool first = true;

	sbx_seccomp_count(&c);
	printf("\nseccomp baseline (ns, bwrap, docker's exec server): %d system calls and %d "
	       "argument rules refused\n", c.refused, c.arg_rules);
	printf("  Docker's default profile refuses %d of the %d system calls known for %s: ",
	       c.docker_refused, c.known, sbx_docker_native_arch());
	print_held(c.docker_refused_here, c.docker_refused);
	printf(" refused here\n  Docker's argument rules: ");
	print_held(c.docker_arg_rules_here, c.docker_arg_rules);
	printf(" held here\n  ours besides Docker's: %d system calls, %d argument rules\n",
	       c.ours_only, c.ours_arg_rules);
	printf("  calls newer than the table (numbers above %d): ENOSYS\n", c.max_nr);
	if (compat)
		printf("  the 32-bit tables (%s): refused whole\n", compat);
	for (size_t i = 0; i < sbx_syscall_table_len; i++) {
		const struct sbx_syscall_row *row = &sbx_syscall_table[i];

		if (row->ours != SBX_OURS_EXEMPT || sbx_syscall_row_nr(row) < 0)
			continue;
		printf("%s%s", first ? "  exempt from every filter by the kernel: " : ", ", row->name);
		first = false;
	}
	if (!first)
		printf(" (they act only from a uprobe's trampoline)\n");
	printf("  Docker's facts from %s\n", sbx_docker_profile_source);
}

/* What the configuration given with --config does to the network. */
static int print_config_exposure(const struct ws_options *o, const sbx_json *list)
{
	_cleanup_free_ char *text = NULL;
	const sbx_json *modes = NULL;
	sbx_config *cfg = NULL;
	const char *mode;
	int r;

	if ((r = build_config(o, &text)) != 0)
		return r;
	if (sbx_config_parse(text, &cfg) < 0)
		return library_error("doctor", -SBX_ECONFIG);
	for (size_t i = 0; i < list->n; i++) {
		const sbx_json *name = sbx_json_get(list->items[i], "backend");
		if (name && !strcmp(name->str, cfg->backend))
			modes = sbx_json_get(list->items[i], "network");
	}
	mode = cfg->network_mode ? cfg->network_mode : lists_mode(modes, "none") ? "none" : "host";
	printf("\nthis configuration: backend %s, network mode \"%s\"", cfg->backend, mode);
	if (modes && !lists_mode(modes, mode))
		printf(" — refused: the backend cannot enforce it\n");
	else if (!strcmp(mode, "host"))
		printf(" — EXPOSED: it %s\n", host_exposure);
	else if (!strcmp(mode, "allowlist"))
		printf(" — only what network.allow lists, through the proxy\n");
	else
		printf(" — no network beyond the sandbox's own loopback\n");
	sbx_config_free(cfg);
	return 0;
}

/* The keeper that serves this user's one-shot ns execs (backends/ns/README.md). */
static void print_keeper(void)
{
	char what[PATH_MAX + 160];

	sbx_keeper_describe(what, sizeof what);
	printf("%-12s %s\n", "ns keeper", what);
}

/* Who the sandbox's processes are on the host (cli/users.c). */
static int print_users(const struct ws_options *o)
{
	_cleanup_free_ char *text = NULL;
	int r = build_config(o, &text);

	return r != 0 ? r : cli_print_users(text);
}

/* Prints one line per backend: name, whether it works here, and why (not); then the network
 * modes, and with --config what that configuration exposes. */
static int cmd_doctor(int argc, char **argv)
{
	struct ws_options o = { 0 };
	_cleanup_free_ char *json = NULL;
	sbx_json *list = NULL;
	char err[256];
	int code = 0, first, r;

	if ((first = parse_ws_options(argc, argv, doctor_usage, &o, &code)) < 0)
		return code;
	if (first != argc || o.workdir || o.timeout || o.read_stdin || o.session)
		return fail("doctor takes only --config and --backend\nusage: %s", doctor_usage);
	if ((r = sbx_backends_probe(&json)) < 0)
		return library_error("doctor", r);
	if (sbx_json_parse(json, strlen(json), &list, err, sizeof err) < 0)
		return fail("doctor: %s", err);
	printf("libagentsbx %s (ABI %d)\n", sbx_version(), sbx_abi_version());
	for (size_t i = 0; i < list->n; i++) {
		const sbx_json *e = list->items[i];
		const sbx_json *name = sbx_json_get(e, "backend");
		const sbx_json *ok = sbx_json_get(e, "available");
		const sbx_json *detail = sbx_json_get(e, "detail");
		printf("%-12s %-13s %s\n", name ? name->str : "?",
		       ok && ok->b ? "available" : "unavailable", detail ? detail->str : "");
	}
	print_keeper();
	print_seccomp();
	print_network(list);
	if (o.config || o.backend)
		code = print_config_exposure(&o, list);
	if (code == 0)
		code = print_users(&o);
	sbx_json_free(list);
	return code;
}

static int cmd_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("agentsbx %s (ABI %d)\n", sbx_version(), sbx_abi_version());
	return 0;
}


/* ---- the workspace manager's directory: ls, attach, gc ---------------------------------- */

struct mgr_options {
	const char *base_dir;   /* NULL: the library's default */
	const char *ttl;        /* gc: seconds */
	int json;               /* ls: the raw list */
};

enum { OPT_BASE_DIR = 'd', OPT_TTL = 'T', OPT_JSON = 'j' };

static const struct option mgr_long_options[] = {
	{ "base-dir", required_argument, NULL, OPT_BASE_DIR },
	{ "ttl", required_argument, NULL, OPT_TTL },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

/* Returns the index of the first operand, or -1 with *code set. */
static int parse_mgr_options(int argc, char **argv, const char *usage, struct mgr_options *o,
                             int *code)
{
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+d:T:jh", mgr_long_options, NULL)) != -1) {
		switch (c) {
		case OPT_BASE_DIR: o->base_dir = optarg; break;
		case OPT_TTL: o->ttl = optarg; break;
		case OPT_JSON: o->json = 1; break;
		case OPT_HELP:
			printf("usage: %s\n", usage);
			*code = 0;
			return -1;
		default:
			fprintf(stderr, "agentsbx: unknown or incomplete option '%s'\nusage: %s\n",
			        argv[optind - 1], usage);
			*code = 2;
			return -1;
		}
	}
	return optind;
}

/* A manager over the directory, for looking and tidying: no sweeper thread, and it sets up
 * no workspace of its own ("local" needs nothing to check). */
static int open_manager(const struct mgr_options *o, double ttl_s, sbx_manager **mgr)
{
	sbx_buf b = { 0 };
	int r;

	sbx_buf_printf(&b, "{\"workspace\":{\"backend\":\"local\"},\"sweep_interval_s\":0,"
	               "\"ttl_s\":%.3f", ttl_s);
	if (o->base_dir) {
		sbx_buf_puts(&b, ",\"base_dir\":");
		sbx_buf_json_string(&b, o->base_dir, strlen(o->base_dir));
	}
	sbx_buf_puts(&b, "}");
	r = b.oom ? -SBX_ENOMEM : sbx_manager_open(b.data, mgr);
	sbx_buf_free(&b);
	return r < 0 ? library_error("open the workspace manager", r) : 0;
}

static const char ls_usage[] = "agentsbx ls [--base-dir DIR] [--json]";

static void print_workspace_row(const sbx_json *w)
{
	const sbx_json *id = sbx_json_get(w, "id"), *backend = sbx_json_get(w, "backend"),
	               *running = sbx_json_get(w, "running"), *held = sbx_json_get(w, "held"),
	               *idle = sbx_json_get(w, "idle_s"), *dir = sbx_json_get(w, "workdir");

	printf("%-44s %-8s %-8s %-5s %8lld  %s\n", id && id->str ? id->str : "?",
	       backend && backend->str ? backend->str : "?",
	       running && running->b ? "running" : "-", held && held->b ? "held" : "-",
	       idle ? (long long)idle->i : -1LL, dir && dir->str ? dir->str : "-");
}

static int cmd_ls(int argc, char **argv)
{
	struct mgr_options o = { 0 };
	_cleanup_free_ char *json = NULL;
	sbx_manager *mgr = NULL;
	sbx_json *list = NULL;
	char err[256];
	int code = 0, first, r;

	if ((first = parse_mgr_options(argc, argv, ls_usage, &o, &code)) < 0)
		return code;
	if (first != argc)
		return fail("ls takes no operands\nusage: %s", ls_usage);
	if ((code = open_manager(&o, 3600, &mgr)) != 0)
		return code;
	r = sbx_manager_list(mgr, &json);
	sbx_manager_free(mgr);
	if (r < 0)
		return library_error("ls", r);
	if (o.json) {
		printf("%s\n", json);
		return 0;
	}
	if (sbx_json_parse(json, strlen(json), &list, err, sizeof err) < 0)
		return fail("ls: %s", err);
	printf("%-44s %-8s %-8s %-5s %8s  %s\n", "ID", "BACKEND", "SANDBOX", "HELD", "IDLE_S",
	       "WORKDIR");
	for (size_t i = 0; i < list->n; i++)
		print_workspace_row(list->items[i]);
	sbx_json_free(list);
	return 0;
}

static const char attach_usage[] = "agentsbx attach [--base-dir DIR] ID -- CMD [ARG...]";

static int cmd_attach(int argc, char **argv)
{
	struct mgr_options o = { 0 };
	sbx_manager *mgr = NULL;
	sbx_workspace *ws = NULL;
	sbx_result *res = NULL;
	int code = 0, first, r;

	if ((first = parse_mgr_options(argc, argv, attach_usage, &o, &code)) < 0)
		return code;
	int cmd = first + 1;
	if (cmd < argc && !strcmp(argv[cmd], "--"))
		cmd++;
	if (first >= argc || cmd >= argc)
		return fail("attach: expected a workspace id and a command\nusage: %s", attach_usage);
	catch_exit_signals();
	if ((code = open_manager(&o, 3600, &mgr)) != 0)
		return end_by_signal_or(code);
	if ((r = sbx_manager_get_by_id(mgr, argv[first], &ws)) < 0) {
		code = library_error("attach", r);
		sbx_manager_free(mgr);
		return end_by_signal_or(code);
	}
	sbx_exec_opts opts = { .size = sizeof opts, .flags = SBX_EXEC_NO_CAPTURE,
	                       .on_output = write_through };
	r = sbx_exec(ws, (const char *const *)argv + cmd, &opts, &res);
	code = r < 0 ? library_error("exec", r) : exit_code_of(res);
	sbx_result_free(res);
	warn_git_quarantine(ws);
	sbx_manager_release(mgr, ws);
	sbx_manager_free(mgr);   /* a detached sandbox runs on */
	return end_by_signal_or(code);
}

static const char gc_usage[] = "agentsbx gc [--base-dir DIR] [--ttl SECONDS]";

static int cmd_gc(int argc, char **argv)
{
	struct mgr_options o = { 0 };
	sbx_manager *mgr = NULL;
	char *end = NULL;
	double ttl = 3600;
	int code = 0, first, closed = 0, r;

	if ((first = parse_mgr_options(argc, argv, gc_usage, &o, &code)) < 0)
		return code;
	if (first != argc)
		return fail("gc takes no operands\nusage: %s", gc_usage);
	if (o.ttl && ((ttl = strtod(o.ttl, &end)) < 0 || end == o.ttl || *end))
		return fail("gc: --ttl expects a number of seconds\nusage: %s", gc_usage);
	/* --ttl 0: every sandbox nobody holds, however recently used. */
	if ((code = open_manager(&o, ttl > 0 ? ttl : 0.001, &mgr)) != 0)
		return code;
	r = sbx_manager_gc(mgr, &closed);
	sbx_manager_free(mgr);
	if (r < 0)
		return library_error("gc", r);
	printf("stopped %d idle sandbox%s\n", closed, closed == 1 ? "" : "es");
	return 0;
}

static int cmd_help(int argc, char **argv);

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *usage;
	const char *summary;
};

static const struct command commands[] = {
	{ "exec", cmd_exec, exec_usage, "run one command in a workspace opened for it" },
	{ "tools", cmd_tools, tools_usage, "print the agent tools' definitions (JSON)" },
	{ "tool", cmd_tool, tool_usage, "run one tool call and print its result (JSON)" },
	{ "doctor", cmd_doctor, doctor_usage,
	  "tell which backends work here and why, and what each network mode exposes" },
	{ "ls", cmd_ls, ls_usage, "list the workspaces of a manager directory" },
	{ "attach", cmd_attach, attach_usage, "run a command in a managed workspace, by id" },
	{ "gc", cmd_gc, gc_usage, "stop the sandboxes nobody holds that idled beyond the TTL" },
	{ "bg", sbx_cli_bg, sbx_cli_bg_usage,
	  "long-running commands: start one, read its new output later, kill it" },
	{ "version", cmd_version, "agentsbx version", "print the library version" },
	{ "help", cmd_help, "agentsbx help", "show this help" },
};

static int cmd_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("usage: agentsbx COMMAND [OPTIONS]\n\ncommands:\n");
	for (size_t i = 0; i < SBX_ARRAY_SIZE(commands); i++)
		printf("  %-8s %s\n           %s\n", commands[i].name, commands[i].summary,
		       commands[i].usage);
	printf("\nexit codes of exec: the command's own; 128+N when killed by signal N; "
	       "124 on timeout; 125 when the library failed.\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		cmd_help(0, NULL);
		return 2;
	}
	for (size_t i = 0; i < SBX_ARRAY_SIZE(commands); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return cmd_help(0, NULL);
	fprintf(stderr, "agentsbx: unknown command '%s' (try 'agentsbx help')\n", argv[1]);
	return 2;
}
