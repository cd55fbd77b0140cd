/* The conformance suite: what every backend promises through the public API, run on the
 * backend SBX_TEST_BACKEND names (tests/meson.build registers it for local, ns and bwrap).
 *
 *  - exec semantics: exit codes, signals, 127/126, cwd (relative, absolute under
 *    sbx_workspace_root, and the ways out refused), the environment exactly as composed,
 *    stdin, merged stderr, streaming, the output cap, timeouts, and nothing a command started
 *    outliving it (a double-forked setsid daemon included);
 *  - many threads on one workspace;
 *  - the process API: spawn, write, read, close_stdin, wait, signal, kill, free; and with a
 *    terminal (opts.pty): a tty of the given size as the controlling terminal, resize and
 *    SIGWINCH, end-of-file typed, and no terminal of the host reachable from it;
 *  - the file primitives, and that what they do is what commands inside see, both ways;
 *  - reset and close: every process of the workspace ends, nothing is left behind.
 *
 * Where a backend's processes are not host processes (gVisor, the docker runtime "runsc",
 * runs them in a kernel of its own), the checks that they end look inside the workspace and
 * at the sandbox's host processes instead (backend_procs.c).
 *
 * Paths a command sees are built from sbx_workspace_root() ("/workspace" in a sandbox, the
 * host directory for local); paths given to the file API are relative to the root. The
 * workspace of each test has a host workdir of its own, so nothing depends on what another
 * test left. A backend that cannot work on this host makes the program exit 77 (meson: SKIP)
 * with the reason. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <pwd.h>
#include <sys/stat.h>
#include <termios.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "backend_support.h"
#include "support.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/* A bound for commands that would otherwise hang the test when what they wait for never
 * comes; never reached when the backend behaves. */
#define SAFETY_TIMEOUT_MS 30000

static char *workdir;
static sbx_workspace *ws;

static void setup(void)
{
	bt_open_case_workspace(&workdir, &ws);
}

#define MAX_SANDBOX_PIDFDS 16

static void teardown(void)
{
	int fds[MAX_SANDBOX_PIDFDS];
	int n = ws && bt_processes_hidden() ? bt_sandbox_pidfds(workdir, fds, MAX_SANDBOX_PIDFDS) : 0;

	sbx_workspace_close(ws);
	ws = NULL;
	/* gVisor: whatever ran in it (what assert_ended_with_command left) ends with it. */
	ck_assert_msg(bt_wait_pidfds_ended(fds, n) == 0, "the gVisor sandbox outlived close");
}

/* ---- exit codes and signals ------------------------------------------------------------- */

START_TEST(test_exit_codes)
{
	const char *t[] = { "true", NULL }, *f[] = { "false", NULL };
	sbx_result *res;

	res = bt_argv(ws, t, NULL);
	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	ck_assert_int_eq(sbx_result_signal(res), 0);
	ck_assert_int_eq(sbx_result_timed_out(res), 0);
	ck_assert_int_eq(sbx_result_truncated(res), 0);
	sbx_result_free(res);
	res = bt_argv(ws, f, NULL);
	ck_assert_int_eq(sbx_result_exit_code(res), 1);
	sbx_result_free(res);
	res = bt_shell(ws, "exit 42", NULL);
	ck_assert_int_eq(sbx_result_exit_code(res), 42);
	sbx_result_free(res);
	res = bt_shell(ws, "exit 255", NULL);
	ck_assert_int_eq(sbx_result_exit_code(res), 255);
	sbx_result_free(res);
}
END_TEST

START_TEST(test_signal_death)
{
	sbx_result *res = bt_shell(ws, "kill -TERM $$", NULL);

	ck_assert_int_eq(sbx_result_exit_code(res), -1);
	ck_assert_int_eq(sbx_result_signal(res), SIGTERM);
	ck_assert_int_eq(sbx_result_timed_out(res), 0);
	sbx_result_free(res);
	res = bt_shell(ws, "kill -SEGV $$", NULL);
	ck_assert_int_eq(sbx_result_exit_code(res), -1);
	ck_assert_int_eq(sbx_result_signal(res), SIGSEGV);
	sbx_result_free(res);
}
END_TEST

START_TEST(test_missing_command_is_127)
{
	const char *argv[] = { "no-such-command-for-agentsbx", "x", NULL };
	char *abs = bt_inside(ws, "no-such-file");
	const char *abs_argv[] = { abs, NULL };
	char *want = bt_fmt("agentsbx: cannot run '%s': No such file or directory\n", abs);
	sbx_result *res = bt_argv(ws, argv, NULL);

	ck_assert_int_eq(sbx_result_exit_code(res), 127);
	ck_assert_str_eq(sbx_result_stderr(res, NULL),
	                 "agentsbx: cannot run 'no-such-command-for-agentsbx': "
	                 "No such file or directory\n");
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "");
	sbx_result_free(res);
	res = bt_argv(ws, abs_argv, NULL);
	ck_assert_int_eq(sbx_result_exit_code(res), 127);
	ck_assert_str_eq(sbx_result_stderr(res, NULL), want);
	sbx_result_free(res);
	free(want);
	free(abs);
}
END_TEST

START_TEST(test_not_executable_is_126)
{
	const char *file[] = { "./plain.txt", NULL }, *dir[] = { "./sub", NULL };
	sbx_result *res;

	bt_put(ws, "plain.txt", "echo never\n", 0644);
	ck_assert_int_eq(sbx_file_mkdir(ws, "sub", 0), 0);
	res = bt_argv(ws, file, NULL);
	ck_assert_int_eq(sbx_result_exit_code(res), 126);
	ck_assert_str_eq(sbx_result_stderr(res, NULL),
	                 "agentsbx: cannot run './plain.txt': Permission denied\n");
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "");
	sbx_result_free(res);
	res = bt_argv(ws, dir, NULL);
	ck_assert_int_eq(sbx_result_exit_code(res), 126);
	sbx_result_free(res);
}
END_TEST

/* A script written through the file API with mode 0755 runs inside, arguments intact. */
START_TEST(test_script_written_by_api_runs)
{
	const char *argv[] = { "./hello.sh", "arg with spaces", "", "*", NULL };
	sbx_result *res;

	bt_put(ws, "hello.sh", "#!/bin/sh\nprintf '[%s]' \"$@\"; echo\n", 0755);
	res = bt_argv(ws, argv, NULL);
	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "[arg with spaces][][*]\n");
	sbx_result_free(res);
}
END_TEST

/* ---- working directory ------------------------------------------------------------------- */

static void assert_pwd(const char *cwd, const char *want)
{
	sbx_exec_opts o = { .size = sizeof o, .cwd = cwd };
	sbx_result *res = bt_shell(ws, "pwd", &o);
	char *line = bt_fmt("%s\n", want);

	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), line);
	sbx_result_free(res);
	free(line);
}

START_TEST(test_cwd_default_relative_absolute)
{
	char *sub = bt_inside(ws, "a/b");

	ck_assert_int_eq(sbx_file_mkdir(ws, "a/b", 0), 0);
	assert_pwd(NULL, sbx_workspace_root(ws));
	assert_pwd("a/b", sub);
	assert_pwd(sub, sub);
	assert_pwd(sbx_workspace_root(ws), sbx_workspace_root(ws));
	free(sub);
	sub = bt_inside(ws, "a");
	assert_pwd("a/b/..", sub);
	free(sub);
}
END_TEST

static void assert_cwd_refused(const char *cwd, int want)
{
	sbx_exec_opts o = { .size = sizeof o, .cwd = cwd };
	sbx_result *res = NULL;
	int r = sbx_exec_shell(ws, "pwd", &o, &res);

	ck_assert_msg(r == want, "cwd %s: got %d (%s), want %d", cwd, r, sbx_last_error(), want);
	ck_assert_ptr_null(res);
}

/* The cwd is resolved like any path of the API: it stays under the root, also through a
 * symlink a command made inside. */
START_TEST(test_cwd_outside_is_refused)
{
	sbx_result *res = bt_shell(ws, "ln -s / up && ln -s .. parent && : > file", NULL);

	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	sbx_result_free(res);
	assert_cwd_refused("../..", -SBX_EESCAPE);
	assert_cwd_refused("/etc", -SBX_EESCAPE);
	assert_cwd_refused("up", -SBX_EESCAPE);
	assert_cwd_refused("parent", -SBX_EESCAPE);
	assert_cwd_refused("missing", -SBX_ENOENT);
	assert_cwd_refused("file", -SBX_ENOTDIR);
}
END_TEST

/* ---- environment ------------------------------------------------------------------------- */

static int compare_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs `env` itself (no shell, which adds variables of its own) and returns its output with
 * the lines sorted. */
static char *env_of(sbx_workspace *w, const char *const *env, uint32_t flags)
{
	const char *argv[] = { "env", NULL };
	sbx_exec_opts o = { .size = sizeof o, .env = env, .flags = flags };
	sbx_result *res = bt_argv(w, argv, &o);
	char *lines[64], *text, *save, *sorted;
	size_t n = 0;

	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	text = strdup(sbx_result_stdout(res, NULL));
	sorted = calloc(1, strlen(text) + 1);
	for (char *l = strtok_r(text, "\n", &save); l && n < 64; l = strtok_r(NULL, "\n", &save))
		lines[n++] = l;
	qsort(lines, n, sizeof lines[0], compare_lines);
	for (size_t i = 0; i < n; i++)
		strcat(strcat(sorted, lines[i]), "\n");
	free(text);
	sbx_result_free(res);
	return sorted;
}

/* The HOME a command gets: the workspace's private one (in its state folder), at
 * /home/<user> in a sandbox, at its host path on local; a container keeps its user's own
 * (none is set), which is never the workspace. Takes the line out of env (sorted lines). */
static void check_and_drop_home(char *env, const char *dir, const sbx_workspace *w)
{
	char *line = strstr(env, "HOME="), *end;
	struct passwd *pw = getpwuid(geteuid());
	const char *b = bt_backend();

	/* docker: none set, so the container's user has its own (passwd) home. */
	if (!line && !strcmp(b, "docker"))
		return;
	ck_assert_msg(line && (line == env || line[-1] == '\n'), "no HOME in %s", env);
	end = strchr(line, '\n');
	*end = '\0';
	if (!strcmp(b, "ns") || !strcmp(b, "bwrap"))
		ck_assert_str_eq(line + 5, bt_tmp("/home/%s", pw ? pw->pw_name : "user"));
	else if (!strcmp(b, "local"))
		ck_assert_str_eq(line + 5, bt_tmp("%s/home", test_state_dir(dir)));
	else
		ck_assert_str_ne(line + 5, sbx_workspace_root(w));
	memmove(line, end + 1, strlen(end + 1) + 1);
}

START_TEST(test_env_exactly_as_composed)
{
	const char *over[] = { "B=override", "C=new value", "A", "NOT_THERE", NULL };
	char *other = bt_mkdtemp();
	sbx_workspace *w = bt_open_ok(other, "\"env\":{\"A\":\"1\",\"B\":\"2\",\"Z\":\"z=z\"}");
	char *got = env_of(w, over, 0);
	char *want = bt_fmt("B=override\nC=new value\nPATH=%s\nZ=z=z\n", DEFAULT_PATH);

	check_and_drop_home(got, other, w);
	ck_assert_str_eq(got, want);
	free(got);
	free(want);
	/* The host's own environment never reaches the command. */
	setenv("SBX_HOST_SECRET", "leak", 1);
	got = env_of(w, NULL, 0);
	want = bt_fmt("A=1\nB=2\nPATH=%s\nZ=z=z\n", DEFAULT_PATH);
	check_and_drop_home(got, other, w);
	ck_assert_str_eq(got, want);
	free(got);
	free(want);
	sbx_workspace_close(w);
}
END_TEST

START_TEST(test_env_cleared)
{
	const char *only[] = { "X=1", "Y=two words", "PATH=/usr/bin:/bin", NULL };
	const char *none[] = { NULL };
	char *got = env_of(ws, only, SBX_EXEC_CLEAR_ENV);

	ck_assert_str_eq(got, "PATH=/usr/bin:/bin\nX=1\nY=two words\n");
	free(got);
	got = env_of(ws, none, SBX_EXEC_CLEAR_ENV);
	ck_assert_str_eq(got, "");
	free(got);
}
END_TEST

START_TEST(test_no_host_fds_leak_into_command)
{
	int leaked = open("/dev/null", O_RDONLY); /* no O_CLOEXEC: a careless host */
	sbx_result *res = bt_shell(ws, "ls /proc/$$/fd", NULL);

	ck_assert_int_ge(leaked, 0);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "0\n1\n2\n");
	sbx_result_free(res);
	close(leaked);
}
END_TEST

/* Arguments of every size arrive whole: the sandbox backends send a small command inside the
 * request and a large one through a memfd (the limit between them is 64 KiB). */
START_TEST(test_argument_sizes_arrive_whole)
{
	/* One argument may not exceed 128 KiB (the kernel's MAX_ARG_STRLEN); the last size makes
	 * a command of 600 KiB out of six. */
	static const size_t sizes[] = { 1, 65000, 70000, 100000 };

	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		char *arg = malloc(sizes[i] + 1);
		const bool six = i == sizeof sizes / sizeof sizes[0] - 1;
		const char *argv[] = { "sh", "-c", "printf %s \"$@\" | wc -c", "sh", arg,
		                       six ? arg : NULL, arg, arg, arg, arg, NULL };
		sbx_result *res;
		char want[32];

		ck_assert_ptr_nonnull(arg);
		memset(arg, 'x', sizes[i]);
		arg[sizes[i]] = '\0';
		res = bt_argv(ws, argv, NULL);
		snprintf(want, sizeof want, "%zu\n", sizes[i] * (six ? 6 : 1));
		ck_assert_int_eq(sbx_result_exit_code(res), 0);
		ck_assert_str_eq(sbx_result_stdout(res, NULL), want);
		sbx_result_free(res);
		free(arg);
	}
}
END_TEST

/* ---- stdin and output ------------------------------------------------------------------- */

START_TEST(test_large_stdin_round_trip)
{
	const size_t len = 10u << 20;
	const char *argv[] = { "cat", NULL };
	char *data = malloc(len);
	sbx_exec_opts o = { .size = sizeof o, .stdin_len = len, .max_output = 32u << 20 };
	sbx_result *res;
	size_t out_len;

	ck_assert_ptr_nonnull(data);
	for (size_t i = 0; i < len; i++)
		data[i] = (char)(i * 7 % 251); /* NUL bytes included */
	o.stdin_data = data;
	res = bt_argv(ws, argv, &o);
	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	ck_assert_int_eq(sbx_result_truncated(res), 0);
	sbx_result_stdout(res, &out_len);
	ck_assert_uint_eq(out_len, len);
	ck_assert(memcmp(sbx_result_stdout(res, NULL), data, len) == 0);
	sbx_result_free(res);
	free(data);
}
END_TEST

START_TEST(test_stdin_ignored_or_absent)
{
	const size_t len = 10u << 20;
	const char *cat[] = { "cat", NULL };
	char *data = calloc(1, len);
	sbx_exec_opts o = { .size = sizeof o, .stdin_data = data, .stdin_len = len };
	sbx_result *res = bt_shell(ws, "echo done", &o);

	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "done\n");
	sbx_result_free(res);
	free(data);
	res = bt_argv(ws, cat, NULL); /* no stdin: end-of-file at once */
	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "");
	sbx_result_free(res);
}
END_TEST

START_TEST(test_stderr_separate_and_merged)
{
	const char *cmd = "echo out; echo err >&2; echo out2";
	sbx_exec_opts o = { .size = sizeof o, .flags = SBX_EXEC_MERGE_STDERR };
	sbx_result *res = bt_shell(ws, cmd, NULL);

	ck_assert_str_eq(sbx_result_stdout(res, NULL), "out\nout2\n");
	ck_assert_str_eq(sbx_result_stderr(res, NULL), "err\n");
	sbx_result_free(res);
	res = bt_shell(ws, cmd, &o);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "out\nerr\nout2\n");
	ck_assert_str_eq(sbx_result_stderr(res, NULL), "");
	sbx_result_free(res);
}
END_TEST

/* The callback answers each line by creating the file the command waits for next, through
 * the file API. A backend that delivered output only at the end would leave the command
 * waiting: so the order seen is the order written, without any timing in the test. */
struct stream_log {
	char text[256];
	int creates;
};

static void answer_output(int stream, const char *data, size_t len, void *userdata)
{
	struct stream_log *log = userdata;
	size_t at = strlen(log->text);
	char name[16];

	snprintf(log->text + at, sizeof log->text - at, "%d:%.*s", stream, (int)len, data);
	for (size_t i = 0; i < len; i++) {
		if (data[i] != '\n')
			continue;
		snprintf(name, sizeof name, "go%d", ++log->creates);
		if (sbx_file_write(ws, name, "", 0, 0, 0) != 0)
			log->creates = -1000; /* seen by the assertions */
	}
}

START_TEST(test_streaming_callback_delivers_as_it_arrives)
{
	struct stream_log log = { "", 0 };
	sbx_exec_opts o = { .size = sizeof o, .on_output = answer_output, .userdata = &log,
	                    .timeout_ms = SAFETY_TIMEOUT_MS };
	const char *cmd = "w() { while [ ! -e $1 ]; do sleep 0.01; done; }; "
	                  "echo a; w go1; echo b >&2; w go2; echo c";
	sbx_result *res = bt_shell(ws, cmd, &o);

	ck_assert_int_eq(sbx_result_timed_out(res), 0);
	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	ck_assert_str_eq(log.text, "1:a\n2:b\n1:c\n");
	ck_assert_int_eq(log.creates, 3);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "a\nc\n");
	ck_assert_str_eq(sbx_result_stderr(res, NULL), "b\n");
	sbx_result_free(res);
}
END_TEST

static void count_bytes(int stream, const char *data, size_t len, void *userdata)
{
	size_t *seen = userdata;

	(void)data;
	seen[stream] += len;
}

START_TEST(test_output_cap_truncates_and_bounds_memory)
{
	const size_t cap = 1u << 20;
	sbx_exec_opts o = { .size = sizeof o, .max_output = cap };
	long before = bt_memory_kb(true), after;
	size_t len;
	sbx_result *res = bt_shell(ws, "head -c 200000000 /dev/zero; echo tail >&2", &o);

	after = bt_memory_kb(false);
	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	ck_assert_int_eq(sbx_result_truncated(res), 1);
	sbx_result_stdout(res, &len);
	ck_assert_uint_eq(len, cap);
	ck_assert_str_eq(sbx_result_stderr(res, NULL), "tail\n");
	ck_assert_msg(after - before < 64 * 1024, "memory grew by %ld KiB", after - before);
	sbx_result_free(res);
}
END_TEST

START_TEST(test_output_cap_also_limits_the_callback)
{
	size_t seen[3] = { 0, 0, 0 };
	sbx_exec_opts o = { .size = sizeof o, .max_output = 4096, .on_output = count_bytes,
	                    .userdata = seen };
	sbx_result *res = bt_shell(ws, "head -c 100000 /dev/zero", &o);

	ck_assert_int_eq(sbx_result_truncated(res), 1);
	ck_assert_uint_eq(seen[SBX_STDOUT], 4096);
	sbx_result_free(res);

	/* NO_CAPTURE: everything goes to the callback, nothing is kept. */
	memset(seen, 0, sizeof seen);
	o.flags = SBX_EXEC_NO_CAPTURE;
	res = bt_shell(ws, "head -c 100000 /dev/zero", &o);
	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	ck_assert_uint_eq(seen[SBX_STDOUT], 100000);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "");
	sbx_result_free(res);
}
END_TEST

/* ---- nothing outlives a command ---------------------------------------------------------- */

/* A process that left its command's session with setsid() and was orphaned has ended with
 * the command. Where the kernel grants PR_SET_CHILD_SUBREAPER to PID 1 only (gVisor before
 * release-20230717: helpers/runner.c cannot find such an orphan), it may run on until the
 * workspace closes, which teardown checks. */
static void assert_ended_with_command(sbx_workspace *w, const char *mark, const char *what)
{
	if (!bt_ws_process_exists(w, mark))
		return;
	ck_assert_msg(bt_ws_orphans_escape(w), "%s outlived its command", what);
}

START_TEST(test_timeout_kills_double_forked_daemon)
{
	const char *daemon = bt_marker(), *main_sleep = bt_marker();
	const char *cmd = "setsid sh -c 'sleep $M1 & :' & sleep $M2";
	sbx_exec_opts o = { .size = sizeof o, .timeout_ms = 500,
	                    .env = bt_marker_env(daemon, main_sleep, NULL, NULL) };
	sbx_result *res = bt_shell(ws, cmd, &o);

	ck_assert_int_eq(sbx_result_timed_out(res), 1);
	ck_assert_int_eq(sbx_result_exit_code(res), -1);
	ck_assert_int_eq(sbx_result_signal(res), SIGKILL);
	/* No polling: when sbx_exec returns, the tree is gone. */
	assert_ended_with_command(ws, daemon, "the setsid daemon");
	ck_assert_msg(!bt_ws_process_exists(ws, main_sleep), "the command outlived its timeout");
	sbx_result_free(res);
}
END_TEST

START_TEST(test_workspace_default_timeout)
{
	char *other = bt_mkdtemp();
	sbx_workspace *w = bt_open_ok(other, "\"timeout_ms\":300");
	const char *mark = bt_marker();
	char *cmd = bt_fmt("sleep %s", mark);
	sbx_exec_opts no_timeout = { .size = sizeof no_timeout, .timeout_ms = -1 };
	sbx_result *res = NULL;

	ck_assert_int_eq(sbx_exec_shell(w, cmd, NULL, &res), 0);
	ck_assert_int_eq(sbx_result_timed_out(res), 1);
	ck_assert_int_eq(sbx_result_signal(res), SIGKILL);
	ck_assert(!bt_ws_process_exists(w, mark));
	sbx_result_free(res);
	ck_assert_int_eq(sbx_exec_shell(w, "sleep 0.5; echo slept", &no_timeout, &res), 0);
	ck_assert_int_eq(sbx_result_timed_out(res), 0);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "slept\n");
	sbx_result_free(res);
	sbx_workspace_close(w);
	free(cmd);
}
END_TEST

START_TEST(test_background_children_die_with_command)
{
	const char *bg = bt_marker(), *detached = bt_marker();
	sbx_exec_opts o = { .size = sizeof o, .env = bt_marker_env(bg, detached, NULL, NULL) };
	sbx_result *res = bt_shell(ws, "sleep $M1 & setsid sleep $M2 & echo started", &o);

	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	ck_assert_int_eq(sbx_result_timed_out(res), 0);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "started\n");
	ck_assert(!bt_ws_process_exists(ws, bg));
	assert_ended_with_command(ws, detached, "a setsid child");
	sbx_result_free(res);
}
END_TEST

/* A process in a process group of its own (a job-control shell's background job) but still
 * in the command's session: found and killed when the command ends, also where it is
 * orphaned to a PID 1 that is not the runner's (gVisor before release-20230717, where
 * helpers/runner.c finds it by its session). The command waits until the job has left its
 * group, so that the group kill cannot be what ends it. */
START_TEST(test_job_in_own_group_dies_with_command)
{
	const char *job = bt_marker();
	sbx_exec_opts o = { .size = sizeof o, .env = bt_marker_env(job, NULL, NULL, NULL),
	                    .timeout_ms = SAFETY_TIMEOUT_MS };
	sbx_result *res;

	bt_install_program(ws, "SBX_TEST_PROBE", "sbx-probe");
	res = bt_shell(ws, "./sbx-probe pgroup-exec sleep $M1 & "
	                   "group() { cut -d' ' -f5 /proc/$1/stat; }; "
	                   "while [ \"$(group $!)\" = \"$(group $$)\" ]; do sleep 0.01; done; "
	                   "echo started", &o);
	ck_assert_int_eq(sbx_result_timed_out(res), 0);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "started\n");
	ck_assert_msg(!bt_ws_process_exists(ws, job), "a job in a group of its own outlived its "
	              "command");
	sbx_result_free(res);
}
END_TEST

#define THREADS 8
#define RUNS_PER_THREAD 20

static void *exec_many(void *arg)
{
	long id = (long)arg;
	bool ok = true;

	for (int i = 0; i < RUNS_PER_THREAD && ok; i++) {
		char tag[32], want[40];
		const char *argv[] = { "sh", "-c", "echo $1; echo $1 >&2; exit 3", "sh", tag,
		                       NULL };
		sbx_result *res = NULL;

		snprintf(tag, sizeof tag, "t%ld-%d", id, i);
		snprintf(want, sizeof want, "%s\n", tag);
		ok = sbx_exec(ws, argv, NULL, &res) == 0 && sbx_result_exit_code(res) == 3 &&
		     strcmp(sbx_result_stdout(res, NULL), want) == 0 &&
		     strcmp(sbx_result_stderr(res, NULL), want) == 0;
		if (!ok)
			fprintf(stderr, "thread %ld run %d: %s\n", id, i,
			        res ? sbx_result_stderr(res, NULL) : sbx_last_error());
		sbx_result_free(res);
	}
	return (void *)(long)ok;
}

START_TEST(test_concurrent_exec_from_threads)
{
	pthread_t t[THREADS];
	void *ok;

	for (long i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, exec_many, (void *)i), 0);
	for (int i = 0; i < THREADS; i++) {
		ck_assert_int_eq(pthread_join(t[i], &ok), 0);
		ck_assert_msg(ok, "thread %d saw a wrong result", i);
	}
}
END_TEST

/* One command waiting in a workspace holds up no other: the first waits for a file the test
 * makes only once the second exec has returned, so execs that took turns (a lock held across
 * the command, on the host or in the sandbox) would leave the first to its timeout. */
static void *exec_waiting_for_go(void *arg)
{
	sbx_exec_opts o = { .size = sizeof o, .timeout_ms = SAFETY_TIMEOUT_MS };
	sbx_result *res = bt_shell(ws, "while [ ! -e go ]; do sleep 0.01; done; echo first", &o);

	(void)arg;
	return res;
}

START_TEST(test_second_exec_ends_while_the_first_waits)
{
	const char *argv[] = { "sh", "-c", "echo second", NULL };
	sbx_result *second = NULL, *first;
	pthread_t t;
	void *out;

	ck_assert_int_eq(pthread_create(&t, NULL, exec_waiting_for_go, NULL), 0);
	ck_assert_int_eq(sbx_exec(ws, argv, NULL, &second), 0);
	ck_assert_str_eq(sbx_result_stdout(second, NULL), "second\n");
	sbx_result_free(second);
	ck_assert_int_eq(sbx_file_write(ws, "go", "", 0, 0, 0), 0);
	ck_assert_int_eq(pthread_join(t, &out), 0);
	first = out;
	ck_assert_int_eq(sbx_result_timed_out(first), 0);
	ck_assert_str_eq(sbx_result_stdout(first, NULL), "first\n");
	sbx_result_free(first);
}
END_TEST

/* The sandbox init keeps a runner for the next command once one has ended (instead of a fork
 * per command), which shows as the same parent pid. A runner says it is idle before its
 * report, so the next request, sent after the report, finds it idle: one command at a time
 * has one runner, never a second one forked because the first still looked busy. */
START_TEST(test_sandbox_runners_serve_again)
{
	char first[32];

	if (strcmp(bt_backend(), "ns") != 0 && strcmp(bt_backend(), "bwrap") != 0)
		return;   /* agentsbx-run (local), docker exec: a runner per command */
	for (int i = 0; i < 60; i++) {
		char *out = bt_shell_out(ws, "echo $PPID");

		if (i == 0)
			snprintf(first, sizeof first, "%s", out);
		ck_assert_msg(strcmp(out, first) == 0, "command %d had runner %s, the first had %s",
		              i, out, first);
		free(out);
	}
}
END_TEST

#define RUNNER_THREADS 32
#define RUNNER_ROUNDS 6

struct runner_pids {
	pthread_mutex_t lock;
	char seen[RUNNER_THREADS * RUNNER_ROUNDS][16];
	int n, distinct;
};

static void *note_runners(void *arg)
{
	struct runner_pids *p = arg;

	for (int i = 0; i < RUNNER_ROUNDS; i++) {
		char *out = bt_shell_out(ws, "echo $PPID");
		bool known = false;

		pthread_mutex_lock(&p->lock);
		for (int j = 0; j < p->n; j++)
			known |= strcmp(p->seen[j], out) == 0;
		if (!known)
			p->distinct++;
		snprintf(p->seen[p->n++], sizeof p->seen[0], "%s", out);
		pthread_mutex_unlock(&p->lock);
		free(out);
	}
	return NULL;
}

/* As many runners stay as there are commands at once, up to 32: 32 threads running commands
 * back to back are served by at most 32 runners in all, not a fork for most commands. */
START_TEST(test_concurrent_commands_keep_their_runners)
{
	static struct runner_pids pids = { .lock = PTHREAD_MUTEX_INITIALIZER };
	pthread_t t[RUNNER_THREADS];

	if (strcmp(bt_backend(), "ns") != 0 && strcmp(bt_backend(), "bwrap") != 0)
		return;
	for (int i = 0; i < RUNNER_THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, note_runners, &pids), 0);
	for (int i = 0; i < RUNNER_THREADS; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	ck_assert_int_eq(pids.n, RUNNER_THREADS * RUNNER_ROUNDS);
	ck_assert_msg(pids.distinct <= RUNNER_THREADS, "%d commands, at most %d at once, had %d "
	              "runners", pids.n, RUNNER_THREADS, pids.distinct);
}
END_TEST

/* The init's voluntary context switches so far, read inside the sandbox: the init is the
 * parent of the command's runner. */
static long init_wakeups(void)
{
	char *out = bt_shell_out(ws, "init=$(cut -d' ' -f4 /proc/$PPID/stat); "
	                             "sed -n 's/^voluntary_ctxt_switches:[[:space:]]*//p' "
	                             "/proc/$init/status");
	long n = strtol(out, NULL, 10);

	ck_assert_msg(n > 0, "no count of the init's wake-ups: '%s'", out);
	free(out);
	return n;
}

/* A warm command goes straight to its idle runner, on a channel the runner offered with its
 * last report (run_proto.h): the sandbox's init is not woken for it. Through the init, each
 * command cost it a wake-up at least (it reads the request and hands it on). */
START_TEST(test_warm_commands_leave_the_init_asleep)
{
	long before, after;

	if (strcmp(bt_backend(), "ns") != 0 && strcmp(bt_backend(), "bwrap") != 0)
		return;   /* no sandbox init: local runs agentsbx-run, docker its exec server */
	before = init_wakeups();
	for (int i = 0; i < 40; i++)
		free(bt_shell_out(ws, "true"));
	after = init_wakeups();
	ck_assert_msg(after - before < 10, "40 warm commands woke the init %ld times",
	              after - before);
}
END_TEST

static void *exec_until_go_in(void *arg)
{
	sbx_exec_opts o = { .size = sizeof o, .timeout_ms = SAFETY_TIMEOUT_MS };

	return bt_shell(arg, "while [ ! -e go ]; do sleep 0.01; done", &o);
}

/* A runner that is the host's (idle, its channel in the host's pool) can be killed by any
 * command of the workspace (same user): the host's next requests find its channel dead and go
 * to another runner or to the init, and every command still runs. (A workspace of its own:
 * the command kills every child of the init but its own runner.) */
START_TEST(test_killed_idle_runners_are_replaced)
{
	const char *kill_others =
		"init=$(cut -d' ' -f4 /proc/$PPID/stat); n=0; "
		"for d in /proc/[0-9]*; do p=${d#/proc/}; "
		"[ \"$(cut -d' ' -f4 $d/stat 2>/dev/null)\" = \"$init\" ] || continue; "
		"[ \"$p\" = \"$PPID\" ] && continue; kill -9 $p && n=$((n+1)); done; echo $n";
	char *dir, *killed;
	sbx_workspace *w;
	pthread_t t;
	void *first;

	if (strcmp(bt_backend(), "ns") != 0 && strcmp(bt_backend(), "bwrap") != 0)
		return;
	dir = bt_mkdtemp();
	w = bt_open_ok(dir, NULL);
	/* Two runners at once, so that one is idle and the host's while the other kills it. */
	ck_assert_int_eq(pthread_create(&t, NULL, exec_until_go_in, w), 0);
	free(bt_shell_out(w, "true"));
	ck_assert_int_eq(sbx_file_write(w, "go", "", 0, 0, 0), 0);
	ck_assert_int_eq(pthread_join(t, &first), 0);
	ck_assert_int_eq(sbx_result_exit_code(first), 0);
	sbx_result_free(first);
	killed = bt_shell_out(w, kill_others);
	ck_assert_msg(atoi(killed) >= 1, "no other runner to kill: %s", killed);
	free(killed);
	for (int i = 0; i < 20; i++) {
		char *out = bt_shell_out(w, "echo ok");

		ck_assert_str_eq(out, "ok\n");
		free(out);
	}
	sbx_workspace_close(w);
}
END_TEST

/* A command that stops its runner (or any process of the workspace that stops one, idle or
 * busy: they are of the same user) does not stall the workspace: the sandbox's init
 * continues it, and the command is reported as usual, well within its timeout. */
START_TEST(test_a_stopped_runner_is_woken)
{
	sbx_exec_opts opts = { .size = sizeof opts, .timeout_ms = 20000 };

	if (strcmp(bt_backend(), "ns") != 0 && strcmp(bt_backend(), "bwrap") != 0)
		return;   /* the sandbox init's promise: local's runner is the caller's own child */

	for (int i = 0; i < 3; i++) {
		sbx_result *res = bt_shell(ws, "kill -STOP $PPID; echo done", &opts);

		ck_assert_int_eq(sbx_result_timed_out(res), 0);
		ck_assert_int_eq(sbx_result_exit_code(res), 0);
		ck_assert_str_eq(sbx_result_stdout(res, NULL), "done\n");
		sbx_result_free(res);
	}
}
END_TEST

/* With limits.processes (RLIMIT_NPROC, which counts idle runners too) each command has a
 * runner of its own that leaves with it, so the command may start as many processes as ever. */
START_TEST(test_runners_not_kept_under_a_process_limit)
{
	char *dir = bt_mkdtemp(), seen[20][32];
	sbx_workspace *w;

	if (strcmp(bt_backend(), "ns") != 0 && strcmp(bt_backend(), "bwrap") != 0)
		return;
	w = bt_open_ok(dir, "\"limits\":{\"processes\":4096}");
	for (int i = 0; i < 20; i++) {
		char *out = bt_shell_out(w, "echo $PPID");

		snprintf(seen[i], sizeof seen[i], "%s", out);
		free(out);
		for (int j = 0; j < i; j++)
			ck_assert_msg(strcmp(seen[i], seen[j]) != 0, "commands %d and %d had one runner "
			              "(%s) under limits.processes", j, i, seen[i]);
	}
	sbx_workspace_close(w);
}
END_TEST

static bool pty_refused_here(void);
static sbx_process *spawn_pty(const char *cmd, unsigned short rows, unsigned short cols);
static char *read_terminal_to_end(sbx_process *p);

/* A runner that serves again (above) carries nothing of the last command into the next: not
 * its terminal, its working directory or its environment. */
START_TEST(test_a_command_inherits_nothing_of_the_last)
{
	const char *env[] = { "LAST_ONE=here", NULL };
	sbx_exec_opts with = { .size = sizeof with, .cwd = "sub", .env = env };
	char *out;

	free(bt_shell_out(ws, "mkdir sub && touch sub/mark"));
	for (int i = 0; i < 4; i++) {
		sbx_result *res = bt_shell(ws, "ls mark", &with);

		ck_assert_int_eq(sbx_result_exit_code(res), 0);
		sbx_result_free(res);
		if (!pty_refused_here()) {
			sbx_process *p = spawn_pty("tty", 24, 80);
			free(read_terminal_to_end(p));
			sbx_process_free(p);
		}
		out = bt_shell_out(ws, "tty -s && echo TTY; ls mark 2>/dev/null && echo CWD; "
		                   "echo \"${LAST_ONE-unset}\"");
		ck_assert_str_eq(out, "unset\n");
		free(out);
	}
}
END_TEST

/* Harnesses open workspaces from worker threads (Python's to_thread, Node's workers), and
 * those threads end. The workspace belongs to the process, not to the thread. (bubblewrap's
 * --die-with-parent is a PR_SET_PDEATHSIG, which fires when the spawning *thread* exits: the
 * sandbox backends start bwrap from a single-threaded outer process for that reason.) */
static void *open_in_thread(void *dir)
{
	sbx_workspace *w = NULL;

	return bt_open(dir, NULL, &w) == 0 ? w : NULL;
}

START_TEST(test_workspace_outlives_the_thread_that_opened_it)
{
	char *other = bt_mkdtemp();
	sbx_workspace *w = NULL;
	pthread_t t;
	sbx_result *res = NULL;
	int r;

	ck_assert_int_eq(pthread_create(&t, NULL, open_in_thread, other), 0);
	ck_assert_int_eq(pthread_join(t, (void **)&w), 0);
	ck_assert_msg(w, "open in a thread: %s", sbx_last_error());
	r = sbx_exec_shell(w, "echo alive", NULL, &res);
	ck_assert_msg(r == 0, "exec after the opening thread ended: %d %s", r, sbx_last_error());
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "alive\n");
	sbx_result_free(res);
	sbx_workspace_close(w);
}
END_TEST

/* ---- the process API --------------------------------------------------------------------- */

static sbx_process *spawn(const char *const *argv, const sbx_spawn_opts *opts)
{
	sbx_process *p = NULL;
	int r = sbx_process_spawn(ws, argv, opts, &p);

	ck_assert_msg(r == 0, "spawn %s: %d %s", argv[0], r, sbx_last_error());
	return p;
}

/* `sh -c cmd`, with env added to its environment (NULL: none). */
static sbx_process *spawn_shell(const char *cmd, const char *const *env)
{
	const char *argv[] = { "sh", "-c", cmd, NULL };
	sbx_spawn_opts o = { .size = sizeof o, .env = env };

	return spawn(argv, &o);
}

/* Reads a stream until `want` has been seen, or end-of-file, or 10 s without data. */
static bool read_until(sbx_process *p, int stream, const char *want)
{
	char buf[4096] = "";
	size_t got = 0, n;

	while (!strstr(buf, want) && got < sizeof buf - 1) {
		int r = sbx_process_read(p, stream, buf + got, sizeof buf - 1 - got, 10000, &n);

		if (r < 0 || n == 0)
			return false;
		got += n;
		buf[got] = '\0';
	}
	return strstr(buf, want) != NULL;
}

START_TEST(test_process_cat_round_trip)
{
	const char *argv[] = { "cat", NULL };
	sbx_process *p = spawn(argv, NULL);
	char buf[64];
	size_t n;
	int code = -2, sig = -2;

	ck_assert_int_ge(sbx_process_fd(p, SBX_STDIN), 0);
	ck_assert_int_ge(sbx_process_fd(p, SBX_STDOUT), 0);
	ck_assert_int_ge(sbx_process_fd(p, SBX_STDERR), 0);
	ck_assert_int_eq(sbx_process_write(p, "hello\n", 6), 0);
	ck_assert_int_eq(sbx_process_read(p, SBX_STDOUT, buf, sizeof buf, 10000, &n), 0);
	ck_assert_uint_eq(n, 6);
	ck_assert(memcmp(buf, "hello\n", 6) == 0);
	ck_assert_int_eq(sbx_process_read(p, SBX_STDOUT, buf, sizeof buf, 0, &n), -SBX_ETIMEDOUT);
	ck_assert_int_eq(sbx_process_wait(p, 0, &code, &sig), -SBX_ETIMEDOUT);
	ck_assert_int_eq(sbx_process_close_stdin(p), 0);
	ck_assert_int_eq(sbx_process_fd(p, SBX_STDIN), -SBX_EBADF);
	ck_assert_int_eq(sbx_process_write(p, "x", 1), -SBX_EBADF);
	ck_assert_int_eq(sbx_process_read(p, SBX_STDOUT, buf, sizeof buf, 10000, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(sbx_process_wait(p, 10000, &code, &sig), 0);
	ck_assert_int_eq(code, 0);
	ck_assert_int_eq(sig, 0);
	ck_assert_int_eq(sbx_process_wait(p, 0, &code, &sig), 0); /* repeatable */
	ck_assert_int_eq(code, 0);
	sbx_process_free(p);
}
END_TEST

START_TEST(test_process_stderr_exit_code_and_options)
{
	const char *argv[] = { "sh", "-c", "echo \"$V in $(pwd)\" >&2; exit 9", NULL };
	const char *env[] = { "V=value", NULL };
	sbx_spawn_opts o = { .size = sizeof o, .cwd = "d", .env = env };
	char *want = bt_fmt("value in %s/d", sbx_workspace_root(ws));
	sbx_process *p;
	int code, sig;

	ck_assert_int_eq(sbx_file_mkdir(ws, "d", 0), 0);
	p = spawn(argv, &o);
	ck_assert(read_until(p, SBX_STDERR, want));
	ck_assert_int_eq(sbx_process_wait(p, 10000, &code, &sig), 0);
	ck_assert_int_eq(code, 9);
	ck_assert_int_eq(sig, 0);
	sbx_process_free(p);

	o.flags = SBX_SPAWN_MERGE_STDERR;
	p = spawn(argv, &o);
	ck_assert_int_eq(sbx_process_fd(p, SBX_STDERR), -SBX_EBADF);
	ck_assert(read_until(p, SBX_STDOUT, want));
	ck_assert_int_eq(sbx_process_wait(p, 10000, &code, &sig), 0);
	ck_assert_int_eq(code, 9);
	sbx_process_free(p);
	free(want);
}
END_TEST

START_TEST(test_process_missing_command_is_127)
{
	const char *argv[] = { "no-such-command-for-agentsbx", NULL };
	sbx_process *p = spawn(argv, NULL);
	int code, sig;

	ck_assert(read_until(p, SBX_STDERR, "cannot run 'no-such-command-for-agentsbx'"));
	ck_assert_int_eq(sbx_process_wait(p, 10000, &code, &sig), 0);
	ck_assert_int_eq(code, 127);
	sbx_process_free(p);
}
END_TEST

START_TEST(test_process_signal_reaches_group)
{
	sbx_process *p = spawn_shell("trap 'echo got; exit 3' USR1; echo ready; "
	                             "while :; do sleep 0.02; done", NULL);
	int code, sig;

	ck_assert(read_until(p, SBX_STDOUT, "ready"));
	ck_assert_int_eq(sbx_process_signal(p, SIGUSR1), 0);
	ck_assert(read_until(p, SBX_STDOUT, "got"));
	ck_assert_int_eq(sbx_process_wait(p, 10000, &code, &sig), 0);
	ck_assert_int_eq(code, 3);
	ck_assert_int_eq(sig, 0);
	sbx_process_free(p);
}
END_TEST

START_TEST(test_process_kill_tree)
{
	const char *daemon = bt_marker(), *child = bt_marker();
	sbx_process *p = spawn_shell("setsid sh -c 'sleep $M1 &'; sleep $M2 & echo ready; wait",
	                             bt_marker_env(daemon, child, NULL, NULL));
	int code, sig;

	ck_assert(read_until(p, SBX_STDOUT, "ready"));
	ck_assert(bt_ws_wait_for_process(ws, daemon, true));
	ck_assert(bt_ws_wait_for_process(ws, child, true));
	ck_assert_int_eq(sbx_process_kill(p), 0);
	ck_assert_int_eq(sbx_process_wait(p, 10000, &code, &sig), 0);
	ck_assert_int_eq(code, -1);
	ck_assert_int_eq(sig, SIGKILL);
	assert_ended_with_command(ws, daemon, "the setsid daemon");
	ck_assert(!bt_ws_process_exists(ws, child));
	ck_assert_int_eq(sbx_process_kill(p), 0); /* again: harmless */
	sbx_process_free(p);
}
END_TEST

START_TEST(test_process_free_kills_running_tree)
{
	const char *daemon = bt_marker(), *main_sleep = bt_marker();
	sbx_process *p = spawn_shell("setsid sh -c 'sleep $M1 &'; exec sleep $M2",
	                             bt_marker_env(daemon, main_sleep, NULL, NULL));

	ck_assert(bt_ws_wait_for_process(ws, daemon, true));
	ck_assert(bt_ws_wait_for_process(ws, main_sleep, true));
	sbx_process_free(p);
	assert_ended_with_command(ws, daemon, "the setsid daemon");
	ck_assert(!bt_ws_process_exists(ws, main_sleep));
}
END_TEST

START_TEST(test_process_write_after_stdin_closed_is_eio)
{
	const char *mark = bt_marker();
	sbx_process *p = spawn_shell("exec 0<&- 1>&-; exec sleep $M1",
	                             bt_marker_env(mark, NULL, NULL, NULL));
	char chunk[4096] = { 0 }, buf[16];
	size_t n;
	int r = 0;

	/* EOF and EPIPE come as soon as the command closes its ends: nobody else holds them. */
	ck_assert_int_eq(sbx_process_read(p, SBX_STDOUT, buf, sizeof buf, 10000, &n), 0);
	ck_assert_uint_eq(n, 0);
	for (int i = 0; i < 1000 && r == 0; i++)
		r = sbx_process_write(p, chunk, sizeof chunk);
	ck_assert_int_eq(r, -SBX_EIO);
	ck_assert(bt_ws_wait_for_process(ws, mark, true)); /* closed its stdio, yet runs on */
	sbx_process_free(p);
	ck_assert(!bt_ws_process_exists(ws, mark));
}
END_TEST

/* ---- a terminal (opts.pty, since 1.7) ---------------------------------------------------- */

/* gVisor keeps a terminal inside its own kernel, so none can reach the host: there a pty is
 * refused, with a message that says so; true when this run is such a case (then checked). */
static bool pty_refused_here(void)
{
	const char *argv[] = { "tty", NULL };
	sbx_spawn_opts o = { .size = sizeof o, .pty = 1 };
	sbx_process *p = NULL;

	if (!bt_processes_hidden())
		return false;
	ck_assert_int_eq(sbx_process_spawn(ws, argv, &o, &p), -SBX_ENOSYS);
	ck_assert_ptr_null(p);
	ck_assert_msg(strstr(sbx_last_error(), "pty") && strstr(sbx_last_error(), "gVisor"),
	              "%s", sbx_last_error());
	return true;
}

static sbx_process *spawn_pty(const char *cmd, unsigned short rows, unsigned short cols)
{
	const char *argv[] = { "sh", "-c", cmd, NULL };
	sbx_spawn_opts o = { .size = sizeof o, .pty = 1, .rows = rows, .cols = cols };

	return spawn(argv, &o);
}

/* Everything the terminal shows until end-of-file (at most cap - 1 bytes). */
static char *read_terminal_to_end(sbx_process *p)
{
	size_t cap = 65536, got = 0, n;
	char *buf = calloc(1, cap);

	ck_assert_ptr_nonnull(buf);
	for (;;) {
		int r = sbx_process_read(p, SBX_STDOUT, buf + got, cap - 1 - got, 20000, &n);

		ck_assert_msg(r == 0, "read the terminal: %d %s (so far: %s)", r, sbx_last_error(),
		              buf);
		if (n == 0 || got + n >= cap - 1)
			break;
		got += n;
	}
	return buf;
}

START_TEST(test_pty_is_the_controlling_terminal_of_the_given_size)
{
	const char *python = strcmp(bt_backend(), "docker") == 0 ? "" :
		"python3 -c 'import os,sys; assert os.isatty(0) and os.isatty(1) and "
		"os.isatty(2); print(\"PYTHON-SAW-A-TTY\")'; ";
	sbx_process *p;
	char *out;
	int code = -2, sig = -2;

	if (pty_refused_here())
		return;
	p = spawn_pty(bt_tmp("tty; test -t 0 && test -t 1 && test -t 2 && echo ALL-THREE-TTY; "
	                     "stty size; %sexec 3</dev/tty && echo DEV-TTY-OPENS", python), 33, 101);
	out = read_terminal_to_end(p);
	ck_assert_msg(strstr(out, "/dev/pts/"), "tty printed no /dev/pts path: %s", out);
	ck_assert_msg(strstr(out, "ALL-THREE-TTY"), "stdio are not all the terminal: %s", out);
	ck_assert_msg(strstr(out, "33 101"), "stty size is not 33 101: %s", out);
	ck_assert_msg(!*python || strstr(out, "PYTHON-SAW-A-TTY"), "python3: %s", out);
	ck_assert_msg(strstr(out, "DEV-TTY-OPENS"), "no controlling terminal: %s", out);
	ck_assert_int_eq(sbx_process_fd(p, SBX_STDERR), -SBX_EBADF); /* merged on it */
	ck_assert_int_eq(sbx_process_wait(p, 10000, &code, &sig), 0);
	ck_assert_int_eq(code, 0);
	free(out);
	sbx_process_free(p);
}
END_TEST

START_TEST(test_pty_resize_reaches_the_command)
{
	/* The trap prints the size the terminal has when SIGWINCH comes: only a resize does it. */
	sbx_process *p;
	char *out;

	if (pty_refused_here())
		return;
	p = spawn_pty("trap 'stty size; exit 0' WINCH; echo READY; while :; do sleep 0.1; done",
	              0, 0);
	ck_assert(read_until(p, SBX_STDOUT, "READY"));
	ck_assert_int_eq(sbx_process_resize(p, 50, 132), 0);
	out = read_terminal_to_end(p);
	ck_assert_msg(strstr(out, "50 132"), "no SIGWINCH with the new size: %s", out);
	free(out);
	sbx_process_free(p);
}
END_TEST

START_TEST(test_pty_default_size_typing_and_end_of_file)
{
	sbx_process *p;
	int code = -2, sig = -2;
	char *out;

	if (pty_refused_here())
		return;
	p = spawn_pty("stty size; exec cat", 0, 0);
	ck_assert(read_until(p, SBX_STDOUT, "24 80"));
	ck_assert_int_eq(sbx_process_write(p, "typed line\n", 11), 0);
	ck_assert(read_until(p, SBX_STDOUT, "typed line"));
	/* End-of-file is typed (^D): cat ends, and the terminal reads end-of-file. */
	ck_assert_int_eq(sbx_process_close_stdin(p), 0);
	ck_assert_int_eq(sbx_process_write(p, "x", 1), -SBX_EBADF);
	out = read_terminal_to_end(p);
	free(out);
	ck_assert_int_eq(sbx_process_wait(p, 10000, &code, &sig), 0);
	ck_assert_int_eq(code, 0);
	ck_assert_int_eq(sbx_process_resize(p, 10, 10), 0); /* still a terminal until freed */
	sbx_process_free(p);
}
END_TEST

/* A command the sandbox refuses before its terminal is made (a working directory that is
 * not there) is named as such, not as a helper older than the library. */
START_TEST(test_pty_refused_command_is_named)
{
	const char *argv[] = { "true", NULL };
	sbx_spawn_opts o = { .size = sizeof o, .pty = 1, .cwd = "locked/in" };
	sbx_process *p = NULL;
	int r;

	if (pty_refused_here())
		return;
	sbx_result_free(bt_shell(ws, "mkdir -p locked/in && chmod 0 locked", NULL));
	time_t t0 = time(NULL);
	r = sbx_process_spawn(ws, argv, &o, &p);
	/* Not a timing: the refusal is reported at once, where a channel the host kept open
	 * made the spawn wait out its whole 30 s for the terminal. */
	ck_assert_msg(time(NULL) - t0 < 10, "the refused spawn took %lld s",
	              (long long)(time(NULL) - t0));
	sbx_result_free(bt_shell(ws, "chmod 0755 locked", NULL));
	if (r == 0) {
		/* Where the command may enter it (local as root): nothing refused. The sandboxes'
		 * inits refuse it. */
		ck_assert_msg(strcmp(bt_backend(), "ns") && strcmp(bt_backend(), "bwrap"),
		              "%s started a command in a folder it cannot enter", bt_backend());
		ck_assert_int_eq(sbx_process_wait(p, 10000, NULL, NULL), 0);
		sbx_process_free(p);
		return;
	}
	/* Refused by the sandbox's init (as root, whose commands could enter it but for the
	 * init's refusal), or on the host before anything started (an ordinary user cannot
	 * enter it either): either way named, never "is the helper older". */
	ck_assert_msg(!strstr(sbx_last_error(), "older than the library") &&
	              (strstr(sbx_last_error(), "refused") || strstr(sbx_last_error(), "locked/in")),
	              "%d %s", r, sbx_last_error());
}
END_TEST

START_TEST(test_pty_bad_options_are_refused)
{
	const char *argv[] = { "true", NULL };
	sbx_spawn_opts o = { .size = sizeof o, .pty = 2 };
	sbx_process *p = NULL;

	ck_assert_int_eq(sbx_process_spawn(ws, argv, &o, &p), -SBX_EINVAL);
	ck_assert(strstr(sbx_last_error(), "opts.pty"));
	o = (sbx_spawn_opts){ .size = sizeof o, .rows = 10 };
	ck_assert_int_eq(sbx_process_spawn(ws, argv, &o, &p), -SBX_EINVAL);
	ck_assert(strstr(sbx_last_error(), "opts.rows"));
	p = spawn_shell("exit 0", NULL);
	ck_assert_int_eq(sbx_process_resize(p, 10, 10), -SBX_EINVAL);
	ck_assert(strstr(sbx_last_error(), "no terminal"));
	sbx_process_free(p);
	if (pty_refused_here())
		return;
	p = spawn_pty("exit 0", 0, 0);
	ck_assert_int_eq(sbx_process_resize(p, 0, 10), -SBX_EINVAL);
	sbx_process_free(p);
}
END_TEST

/* A terminal of the host: a new pty whose slave the test process holds. */
struct host_tty {
	int master, slave;
	char name[64];
};

static void open_host_tty(struct host_tty *t, bool as_controlling_terminal)
{
	t->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	ck_assert_int_ge(t->master, 0);
	ck_assert_int_eq(unlockpt(t->master), 0);
	ck_assert_int_eq(ptsname_r(t->master, t->name, sizeof t->name), 0);
	/* Without O_NOCTTY, a session leader's first terminal becomes its controlling one. */
	t->slave = open(t->name, O_RDWR | O_CLOEXEC | (as_controlling_terminal ? 0 : O_NOCTTY));
	ck_assert_int_ge(t->slave, 0);
}

/* What reached the host terminal, without waiting for more than a moment. */
static bool host_tty_saw(const struct host_tty *t, const char *mark)
{
	char buf[4096] = "";
	size_t got = 0;
	struct pollfd pfd = { .fd = t->master, .events = POLLIN };

	while (got < sizeof buf - 1 && poll(&pfd, 1, 200) > 0) {
		ssize_t n = read(t->master, buf + got, sizeof buf - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return strstr(buf, mark) != NULL;
}

/* In a child that is a session whose controlling terminal is a host pty, as a harness run
 * from a terminal is: a command on a pty of its own writes to its /dev/tty. Returns 0 when
 * that reached the command's terminal and not the harness's, else a code saying which. */
static int harness_with_a_terminal(void)
{
	struct host_tty host;
	sbx_workspace *w = NULL;
	const char *argv[] = { "sh", "-c", "echo HOST-MARK-1 >/dev/tty; echo DONE", NULL };
	sbx_spawn_opts o = { .size = sizeof o, .pty = 1 };
	sbx_process *p = NULL;
	char buf[4096] = "";
	size_t got = 0, n;
	int code = 0;

	if (setsid() < 0)
		return 10;
	open_host_tty(&host, true);
	if (tcgetsid(host.slave) != getpid())
		return 11;
	if (bt_open(NULL, NULL, &w) < 0)
		return 12;
	if (sbx_process_spawn(w, argv, &o, &p) < 0)
		code = 13;
	while (!code && got < sizeof buf - 1 &&
	       sbx_process_read(p, SBX_STDOUT, buf + got, sizeof buf - 1 - got, 20000, &n) == 0 &&
	       n > 0)
		got += n;
	if (!code && !strstr(buf, "HOST-MARK-1"))
		code = 14;                  /* the command's /dev/tty is not its terminal */
	if (!code && host_tty_saw(&host, "HOST-MARK"))
		code = 15;                  /* it wrote to the harness's terminal */
	sbx_process_free(p);
	sbx_workspace_close(w);
	return code;
}

START_TEST(test_pty_the_harness_terminal_is_not_reachable)
{
	int status = 0;
	pid_t pid;

	if (pty_refused_here())
		return;
	/* A child: check's case is a process group leader, which setsid() refuses. */
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(harness_with_a_terminal());
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	              "the harness with a terminal: status 0x%x (10-13 set-up, 14: /dev/tty "
	              "is not the command's terminal, 15: the harness's terminal got the mark)",
	              status);
}
END_TEST

START_TEST(test_pty_is_the_sandboxs_own)
{
	struct host_tty host;
	struct stat host_pts;
	sbx_process *p;
	char *out, *line;

	if (pty_refused_here())
		return;
	if (strcmp(bt_backend(), "local") == 0)
		return; /* local isolates nothing: its terminals are the host's by design */
	open_host_tty(&host, false);
	ck_assert_int_eq(stat(host.name, &host_pts), 0);
	/* Every pty the command can name gets the mark; the host's must not. The devpts it
	 * sees is another instance than the host's (another st_dev). */
	p = spawn_pty(bt_tmp("for f in /dev/pts/[0-9]* %s; do echo HOST-MARK-2 >\"$f\"; done "
	                     "2>/dev/null; echo PTS: $(ls /dev/pts | tr '\\n' ' ');"
	                     "echo DEV: $(stat -c %%d \"$(tty)\")", host.name), 0, 0);
	out = read_terminal_to_end(p);
	ck_assert_msg(!host_tty_saw(&host, "HOST-MARK-2"), "a host pty was reachable: %s", out);
	ck_assert_msg((line = strstr(out, "PTS: ")) != NULL, "%s", out);
	ck_assert_msg(strncmp(line, "PTS: 0 ptmx", 11) == 0, "other ptys inside: %s", line);
	ck_assert_msg((line = strstr(out, "DEV: ")) != NULL, "%s", out);
	ck_assert_msg(strtoull(line + 5, NULL, 10) != (unsigned long long)host_pts.st_dev,
	              "the command's pty is on the host's devpts (%s)", line);
	free(out);
	sbx_process_free(p);
	close(host.slave);
	close(host.master);
}
END_TEST

/* ---- files: the API and the commands inside see the same tree ----------------------------- */

START_TEST(test_file_written_by_api_is_read_inside)
{
	static const char data[] = "line one\nline two\0after a NUL";
	char *out;

	ck_assert_int_eq(sbx_file_write(ws, "dir/sub/f.bin", data, sizeof data - 1, 0,
	                                SBX_WRITE_MKDIRS), 0);
	out = bt_shell_out(ws, "printf 'line one\\nline two\\0after a NUL' | cmp - dir/sub/f.bin "
	                       "&& echo same");
	ck_assert_str_eq(out, "same\n");
	free(out);
	out = bt_shell_out(ws, "stat -c '%s %a' dir/sub/f.bin; test -d dir/sub && echo dir");
	ck_assert_str_eq(out, "29 644\ndir\n");
	free(out);
	ck_assert_int_eq(sbx_file_write(ws, "dir/sub/f.bin", "new", 3, 0600, 0), 0);
	out = bt_shell_out(ws, "cat dir/sub/f.bin; echo; stat -c %a dir/sub/f.bin");
	ck_assert_str_eq(out, "new\n600\n");
	free(out);
	ck_assert_int_eq(sbx_file_write(ws, "dir/sub/f.bin", "x", 1, 0, SBX_WRITE_EXCL),
	                 -SBX_EEXIST);
}
END_TEST

START_TEST(test_file_written_inside_is_read_by_api)
{
	char *data = NULL;
	size_t len = 0;

	free(bt_shell_out(ws, "mkdir -p made/in && printf 'from\\0inside' > made/in/f && "
	                      "chmod 640 made/in/f"));
	ck_assert_int_eq(sbx_file_read(ws, "made/in/f", &data, &len), 0);
	ck_assert_uint_eq(len, 11);
	ck_assert(memcmp(data, "from\0inside", 11) == 0);
	ck_assert_int_eq(data[len], '\0');
	sbx_free(data);
	data = NULL;
	/* An absolute path under the root means the same file. */
	char *abs = bt_inside(ws, "made/in/f");
	ck_assert_int_eq(sbx_file_read(ws, abs, &data, &len), 0);
	ck_assert_uint_eq(len, 11);
	sbx_free(data);
	free(abs);
	ck_assert_int_eq(sbx_file_read(ws, "made/in", &data, &len), -SBX_EISDIR);
	ck_assert_int_eq(sbx_file_read(ws, "made/none", &data, &len), -SBX_ENOENT);
}
END_TEST

START_TEST(test_file_stat_of_what_commands_made)
{
	sbx_stat st = { .size = sizeof st };

	free(bt_shell_out(ws, "printf abc > f && chmod 640 f && mkdir d && chmod 711 d && "
	                      "ln -s f link && touch -d @1700000000 f"));
	ck_assert_int_eq(sbx_file_stat(ws, "f", &st), 0);
	ck_assert_int_eq(st.type, SBX_FILE_REGULAR);
	ck_assert_uint_eq(st.file_size, 3);
	ck_assert_uint_eq(st.mode, 0640);
	ck_assert_int_eq(st.mtime_sec, 1700000000);
	ck_assert_int_eq(sbx_file_stat(ws, "d", &st), 0);
	ck_assert_int_eq(st.type, SBX_FILE_DIRECTORY);
	ck_assert_uint_eq(st.mode, 0711);
	ck_assert_int_eq(sbx_file_stat(ws, "link", &st), 0);
	ck_assert_int_eq(st.type, SBX_FILE_SYMLINK);
	ck_assert_int_eq(sbx_file_stat(ws, "none", &st), -SBX_ENOENT);
}
END_TEST

START_TEST(test_file_list_of_what_commands_made)
{
	char *json = NULL;
	const char *a, *b, *l, *s;

	free(bt_shell_out(ws, "mkdir -p top/sub && printf 12345 > top/b.txt && "
	                      "printf 123 > top/a.txt && ln -s a.txt top/link"));
	ck_assert_int_eq(sbx_file_list(ws, "top", &json), 0);
	a = strstr(json, "{\"name\":\"a.txt\",\"type\":\"file\",\"size\":3,");
	b = strstr(json, "{\"name\":\"b.txt\",\"type\":\"file\",\"size\":5,");
	l = strstr(json, "{\"name\":\"link\",\"type\":\"symlink\",");
	s = strstr(json, "{\"name\":\"sub\",\"type\":\"dir\",");
	ck_assert_msg(a && b && l && s && a < b && b < l && l < s, "list: %s", json);
	ck_assert_int_eq(json[0], '[');
	sbx_free(json);
	ck_assert_int_eq(sbx_file_list(ws, "top/sub", &json), 0);
	ck_assert_str_eq(json, "[]");
	sbx_free(json);
	ck_assert_int_eq(sbx_file_list(ws, "top/a.txt", &json), -SBX_ENOTDIR);
}
END_TEST

START_TEST(test_file_mkdir_and_remove_seen_inside)
{
	char *out;

	ck_assert_int_eq(sbx_file_mkdir(ws, "m/n/o", 0700), 0);
	ck_assert_int_eq(sbx_file_mkdir(ws, "m/n/o", 0), 0); /* mkdir -p: exists is fine */
	out = bt_shell_out(ws, "stat -c %a m/n/o; touch m/n/o/file m/top");
	ck_assert_str_eq(out, "700\n");
	free(out);
	ck_assert_int_eq(sbx_file_remove(ws, "m/top", 0), 0);
	ck_assert_int_eq(sbx_file_remove(ws, "m/n", 0), -SBX_ENOTEMPTY);
	ck_assert_int_eq(sbx_file_remove(ws, "m/n", SBX_REMOVE_RECURSIVE), 0);
	out = bt_shell_out(ws, "ls -A m; test -e m/top || echo gone");
	ck_assert_str_eq(out, "gone\n");
	free(out);
	ck_assert_int_eq(sbx_file_remove(ws, "m/none", 0), -SBX_ENOENT);
	ck_assert_int_ne(sbx_file_remove(ws, ".", SBX_REMOVE_RECURSIVE), 0);
	out = bt_shell_out(ws, "test -d m && echo still");
	ck_assert_str_eq(out, "still\n");
	free(out);
}
END_TEST

/* A command can plant symlinks; the file API must not follow them out of the root, and
 * removing one removes the link, never its target. */
START_TEST(test_file_api_does_not_follow_links_planted_inside)
{
	char *data = NULL, *out;
	size_t len;

	free(bt_shell_out(ws, "echo keep > kept && ln -s / root-link && ln -s ../../../../.. up && "
	                      "ln -s kept inner"));
	ck_assert_int_eq(sbx_file_read(ws, "root-link/etc/passwd", &data, &len), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_read(ws, "up/etc/passwd", &data, &len), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_write(ws, "up/tmp/agentsbx-escape", "x", 1, 0, 0),
	                 -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_read(ws, "inner", &data, &len), 0); /* inside: followed */
	ck_assert_str_eq(data, "keep\n");
	sbx_free(data);
	ck_assert_int_eq(sbx_file_remove(ws, "inner", 0), 0);
	ck_assert_int_eq(sbx_file_write(ws, "root-link", "replaced", 8, 0, 0), 0);
	out = bt_shell_out(ws, "cat kept; test -L root-link || cat root-link");
	ck_assert_str_eq(out, "keep\nreplaced");
	free(out);
}
END_TEST

/* ---- reset and close ---------------------------------------------------------------------- */

START_TEST(test_reset_kills_processes_and_keeps_host_files)
{
	const char *first = bt_marker(), *daemon = bt_marker();
	sbx_process *p = spawn_shell("setsid sleep $M2 & exec sleep $M1",
	                             bt_marker_env(first, daemon, NULL, NULL));
	char *out, *data = NULL;
	int fds[MAX_SANDBOX_PIDFDS], n = 0;
	size_t len;
	int code, sig;

	bt_put(ws, "kept.txt", "kept", 0);
	ck_assert(bt_ws_wait_for_process(ws, first, true));
	ck_assert(bt_ws_wait_for_process(ws, daemon, true));
	/* gVisor: the old sandbox, which ran them, is gone (the new one never knew them). */
	if (bt_processes_hidden())
		n = bt_sandbox_pidfds(workdir, fds, MAX_SANDBOX_PIDFDS);
	ck_assert_int_eq(sbx_workspace_reset(ws), 0);
	ck_assert_msg(bt_wait_pidfds_ended(fds, n) == 0, "the gVisor sandbox survived reset");
	ck_assert_msg(!test_process_exists(first), "a process survived reset");
	ck_assert_msg(!test_process_exists(daemon), "a setsid daemon survived reset");
	ck_assert_int_eq(sbx_process_wait(p, 0, &code, &sig), 0);
	ck_assert_int_eq(code, -1);
	ck_assert_int_eq(sig, SIGKILL);
	sbx_process_free(p);
	/* The workspace works again, and a host workdir keeps its files. */
	out = bt_shell_out(ws, "cat kept.txt");
	ck_assert_str_eq(out, "kept");
	free(out);
	ck_assert_int_eq(sbx_file_read(ws, "kept.txt", &data, &len), 0);
	sbx_free(data);
}
END_TEST

START_TEST(test_reset_empties_a_temporary_workspace)
{
	sbx_workspace *w = bt_open_ok(NULL, NULL);
	sbx_result *res = NULL;
	sbx_stat st = { .size = sizeof st };

	ck_assert_int_eq(sbx_exec_shell(w, "mkdir -p d && echo x > d/f && echo y > top", NULL,
	                                &res), 0);
	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	sbx_result_free(res);
	ck_assert_int_eq(sbx_workspace_reset(w), 0);
	ck_assert_int_eq(sbx_file_stat(w, "d", &st), -SBX_ENOENT);
	ck_assert_int_eq(sbx_file_stat(w, "top", &st), -SBX_ENOENT);
	ck_assert_int_eq(sbx_exec_shell(w, "test -e d || test -e top || echo empty", NULL, &res),
	                 0);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "empty\n");
	sbx_result_free(res);
	ck_assert_int_eq(sbx_workspace_close(w), 0);
}
END_TEST

/* Closing without freeing the processes first (no reattach): everything ends, the handles
 * stay safe to use and free, and the library leaves no child process of ours behind. */
START_TEST(test_close_leaves_nothing_running)
{
	const char *daemon = bt_marker(), *main_sleep = bt_marker(), *plain = bt_marker();
	const char *argv[] = { "sleep", plain, NULL };
	sbx_process *p, *q;
	int code, sig, fds[MAX_SANDBOX_PIDFDS], pidfds = 0;
	char buf[16];
	size_t n;

	/* Counted from no workspace at all: the fixture's is closed and opened again. */
	sbx_workspace_close(ws);
	ws = NULL;
	ck_assert_int_eq(bt_wait_for_children(0), 0);
	ws = bt_open_ok(workdir, NULL);
	p = spawn_shell("setsid sh -c 'sleep $M1 &'; exec sleep $M2",
	                bt_marker_env(daemon, main_sleep, NULL, NULL));
	q = spawn(argv, NULL);
	ck_assert(bt_ws_wait_for_process(ws, daemon, true));
	ck_assert(bt_ws_wait_for_process(ws, main_sleep, true));
	ck_assert(bt_ws_wait_for_process(ws, plain, true));
	if (bt_processes_hidden())
		pidfds = bt_sandbox_pidfds(workdir, fds, MAX_SANDBOX_PIDFDS);
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
	ws = NULL;
	ck_assert_msg(bt_wait_pidfds_ended(fds, pidfds) == 0, "the gVisor sandbox survived close");
	ck_assert_msg(!test_process_exists(daemon), "a setsid daemon survived close");
	ck_assert(!test_process_exists(main_sleep));
	ck_assert(!test_process_exists(plain));
	int children = bt_wait_for_children(0);
	ck_assert_msg(children == 0, "%d child process(es) of the host left after close",
	              children);
	/* Handles outlive their workspace harmlessly. */
	ck_assert_int_eq(sbx_process_wait(p, 0, &code, &sig), 0);
	ck_assert_int_eq(sig, SIGKILL);
	(void)sbx_process_read(q, SBX_STDOUT, buf, sizeof buf, 0, &n);
	sbx_process_free(p);
	sbx_process_free(q);
}
END_TEST

static Suite *conformance_suite(void)
{
	static char name[64];
	Suite *s;

	/* Not bt_fmt: its check fails only inside a test. */
	snprintf(name, sizeof name, "conformance-%s", bt_backend());
	s = suite_create(name);
	TCase *exec = tcase_create("exec"), *io = tcase_create("io");
	TCase *tree = tcase_create("tree"), *proc = tcase_create("process");
	TCase *files = tcase_create("files"), *life = tcase_create("lifecycle");
	TCase *pty = tcase_create("pty");

	tcase_add_checked_fixture(exec, setup, teardown);
	tcase_add_test(exec, test_exit_codes);
	tcase_add_test(exec, test_signal_death);
	tcase_add_test(exec, test_missing_command_is_127);
	tcase_add_test(exec, test_not_executable_is_126);
	tcase_add_test(exec, test_script_written_by_api_runs);
	tcase_add_test(exec, test_cwd_default_relative_absolute);
	tcase_add_test(exec, test_cwd_outside_is_refused);
	tcase_add_test(exec, test_env_exactly_as_composed);
	tcase_add_test(exec, test_env_cleared);
	tcase_add_test(exec, test_no_host_fds_leak_into_command);
	suite_add_tcase(s, exec);

	tcase_add_checked_fixture(io, setup, teardown);
	tcase_add_test(io, test_large_stdin_round_trip);
	tcase_add_test(io, test_argument_sizes_arrive_whole);
	tcase_add_test(io, test_stdin_ignored_or_absent);
	tcase_add_test(io, test_stderr_separate_and_merged);
	tcase_add_test(io, test_streaming_callback_delivers_as_it_arrives);
	tcase_add_test(io, test_output_cap_truncates_and_bounds_memory);
	tcase_add_test(io, test_output_cap_also_limits_the_callback);
	suite_add_tcase(s, io);

	tcase_add_checked_fixture(tree, setup, teardown);
	tcase_add_test(tree, test_timeout_kills_double_forked_daemon);
	tcase_add_test(tree, test_workspace_default_timeout);
	tcase_add_test(tree, test_background_children_die_with_command);
	tcase_add_test(tree, test_job_in_own_group_dies_with_command);
	tcase_add_test(tree, test_concurrent_exec_from_threads);
	tcase_add_test(tree, test_second_exec_ends_while_the_first_waits);
	tcase_add_test(tree, test_sandbox_runners_serve_again);
	tcase_add_test(tree, test_concurrent_commands_keep_their_runners);
	tcase_add_test(tree, test_warm_commands_leave_the_init_asleep);
	tcase_add_test(tree, test_killed_idle_runners_are_replaced);
	tcase_add_test(tree, test_runners_not_kept_under_a_process_limit);
	tcase_add_test(tree, test_a_stopped_runner_is_woken);
	tcase_add_test(tree, test_a_command_inherits_nothing_of_the_last);
	tcase_add_test(tree, test_workspace_outlives_the_thread_that_opened_it);
	suite_add_tcase(s, tree);

	tcase_add_checked_fixture(proc, setup, teardown);
	tcase_add_test(proc, test_process_cat_round_trip);
	tcase_add_test(proc, test_process_stderr_exit_code_and_options);
	tcase_add_test(proc, test_process_missing_command_is_127);
	tcase_add_test(proc, test_process_signal_reaches_group);
	tcase_add_test(proc, test_process_kill_tree);
	tcase_add_test(proc, test_process_free_kills_running_tree);
	tcase_add_test(proc, test_process_write_after_stdin_closed_is_eio);
	suite_add_tcase(s, proc);

	tcase_add_checked_fixture(pty, setup, teardown);
	tcase_add_test(pty, test_pty_is_the_controlling_terminal_of_the_given_size);
	tcase_add_test(pty, test_pty_resize_reaches_the_command);
	tcase_add_test(pty, test_pty_default_size_typing_and_end_of_file);
	tcase_add_test(pty, test_pty_bad_options_are_refused);
	tcase_add_test(pty, test_pty_refused_command_is_named);
	tcase_add_test(pty, test_pty_the_harness_terminal_is_not_reachable);
	tcase_add_test(pty, test_pty_is_the_sandboxs_own);
	suite_add_tcase(s, pty);

	tcase_add_checked_fixture(files, setup, teardown);
	tcase_add_test(files, test_file_written_by_api_is_read_inside);
	tcase_add_test(files, test_file_written_inside_is_read_by_api);
	tcase_add_test(files, test_file_stat_of_what_commands_made);
	tcase_add_test(files, test_file_list_of_what_commands_made);
	tcase_add_test(files, test_file_mkdir_and_remove_seen_inside);
	tcase_add_test(files, test_file_api_does_not_follow_links_planted_inside);
	suite_add_tcase(s, files);

	tcase_add_checked_fixture(life, setup, teardown);
	tcase_add_test(life, test_reset_kills_processes_and_keeps_host_files);
	tcase_add_test(life, test_reset_empties_a_temporary_workspace);
	tcase_add_test(life, test_close_leaves_nothing_running);
	suite_add_tcase(s, life);
	return s;
}

int main(void)
{
	return bt_main(conformance_suite);
}
