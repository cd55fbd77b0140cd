/* The local backend through the public API: exec semantics (exit codes, signals, cwd,
 * environment, stdin, output, caps, timeouts), the process API, and the promise that nothing
 * a command starts outlives it — not a background child, not a double-forked setsid daemon,
 * not even when the host itself is killed. A last group drives agentsbx-run directly over its
 * protocol. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <agentsbx/agentsbx.h>
#include "run_proto.h"
#include "support.h"

extern char **environ;

static char *workdir;
static sbx_workspace *ws;

/* ---- helpers ----------------------------------------------------------------------------- */

static sbx_workspace *open_local(const char *extra_json)
{
	sbx_workspace *w = NULL;
	char *cfg = NULL;

	ck_assert_int_ge(asprintf(&cfg, "{\"backend\":\"local\",\"workdir\":\"%s\"%s%s}", workdir,
	                          extra_json ? "," : "", extra_json ? extra_json : ""), 0);
	ck_assert_msg(sbx_workspace_open(cfg, &w) == 0, "open %s: %s", cfg, sbx_last_error());
	free(cfg);
	return w;
}

static void setup(void)
{
	workdir = test_mkdtemp();
	ws = open_local(NULL);
}

static void teardown(void)
{
	sbx_workspace_close(ws);
	ws = NULL;
	test_rm_rf(workdir);
	free(workdir);
}

/* A `sleep` argument that no other process on the host has: GNU sleep takes fractions, so
 * "1000.<pid><n>" sleeps 1000 s and doubles as a marker for test_process_exists. Fixed
 * widths, so that no marker is a prefix of another test process's. */
static const char *marker(void)
{
	static char buf[8][64];
	static unsigned n;
	char *m = buf[n % 8];

	snprintf(m, sizeof buf[0], "1000.%07d%04u", (int)getpid(), ++n);
	return m;
}

/* Waits up to 5 s for a process with the marker to appear (present) or to vanish. */
static bool wait_for_process(const char *mark, bool present)
{
	for (int i = 0; i < 500; i++) {
		if (test_process_exists(mark) == present)
			return true;
		usleep(10000);
	}
	return false;
}

static sbx_result *run_shell(const char *cmd, const sbx_exec_opts *opts)
{
	sbx_result *res = NULL;

	ck_assert_msg(sbx_exec_shell(ws, cmd, opts, &res) == 0, "exec %s: %s", cmd,
	              sbx_last_error());
	return res;
}

static sbx_result *run_argv(const char *const *argv, const sbx_exec_opts *opts)
{
	sbx_result *res = NULL;

	ck_assert_msg(sbx_exec(ws, argv, opts, &res) == 0, "exec %s: %s", argv[0],
	              sbx_last_error());
	return res;
}

static char *fmt(const char *format, ...) __attribute__((format(printf, 1, 2)));

static char *fmt(const char *format, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, format);
	ck_assert_int_ge(vasprintf(&s, format, ap), 0);
	va_end(ap);
	return s;
}

static void write_host_file(const char *name, const char *content, mode_t mode)
{
	char *path = fmt("%s/%s", workdir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
	chmod(path, mode);
	free(path);
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- exit codes and signals ------------------------------------------------------------- */

START_TEST(test_exit_codes)
{
	const char *t[] = { "true", NULL }, *f[] = { "false", NULL };
	sbx_result *res;

	res = run_argv(t, NULL);
	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	ck_assert_int_eq(sbx_result_signal(res), 0);
	sbx_result_free(res);
	res = run_argv(f, NULL);
	ck_assert_int_eq(sbx_result_exit_code(res), 1);
	sbx_result_free(res);
	res = run_shell("exit 42", NULL);
	ck_assert_int_eq(sbx_result_exit_code(res), 42);
	ck_assert_int_eq(sbx_result_timed_out(res), 0);
	sbx_result_free(res);
}
END_TEST

START_TEST(test_signal_death)
{
	sbx_result *res = run_shell("kill -TERM $$", NULL);

	ck_assert_int_eq(sbx_result_exit_code(res), -1);
	ck_assert_int_eq(sbx_result_signal(res), SIGTERM);
	sbx_result_free(res);
	res = run_shell("kill -SEGV $$", NULL);
	ck_assert_int_eq(sbx_result_signal(res), SIGSEGV);
	sbx_result_free(res);
}
END_TEST

START_TEST(test_missing_command_is_127)
{
	const char *argv[] = { "no-such-command-for-agentsbx", "x", NULL };
	sbx_result *res = run_argv(argv, NULL);

	ck_assert_int_eq(sbx_result_exit_code(res), 127);
	ck_assert_str_eq(sbx_result_stderr(res, NULL),
	                 "agentsbx: cannot run 'no-such-command-for-agentsbx': "
	                 "No such file or directory\n");
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "");
	sbx_result_free(res);
}
END_TEST

START_TEST(test_not_executable_is_126)
{
	const char *file[] = { "./plain.txt", NULL }, *dir[] = { "./sub", NULL };
	sbx_result *res;

	write_host_file("plain.txt", "echo never\n", 0644);
	res = run_argv(file, NULL);
	ck_assert_int_eq(sbx_result_exit_code(res), 126);
	ck_assert_ptr_nonnull(strstr(sbx_result_stderr(res, NULL), "cannot run './plain.txt'"));
	ck_assert_ptr_nonnull(strstr(sbx_result_stderr(res, NULL), "Permission denied"));
	sbx_result_free(res);

	char *sub = fmt("%s/sub", workdir);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	free(sub);
	res = run_argv(dir, NULL);
	ck_assert_int_eq(sbx_result_exit_code(res), 126);
	sbx_result_free(res);
}
END_TEST

START_TEST(test_script_in_workspace_runs)
{
	const char *argv[] = { "./hello.sh", "arg with spaces", NULL };
	sbx_result *res;

	write_host_file("hello.sh", "#!/bin/sh\necho \"hello $1\"\n", 0755);
	res = run_argv(argv, NULL);
	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "hello arg with spaces\n");
	sbx_result_free(res);
}
END_TEST

/* ---- working directory and environment ---------------------------------------------------- */

START_TEST(test_cwd_default_and_relative)
{
	sbx_exec_opts o = { .size = sizeof o };
	char *sub = fmt("%s/a/b", workdir), *expect;
	sbx_result *res;

	ck_assert_str_eq(sbx_workspace_root(ws), workdir);
	res = run_shell("pwd", NULL);
	expect = fmt("%s\n", workdir);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), expect);
	free(expect);
	sbx_result_free(res);

	ck_assert_int_eq(mkdir(expect = fmt("%s/a", workdir), 0755), 0);
	free(expect);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	o.cwd = "a/b";
	res = run_shell("pwd", &o);
	expect = fmt("%s\n", sub);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), expect);
	sbx_result_free(res);

	o.cwd = sub; /* absolute, under the root */
	res = run_shell("pwd", &o);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), expect);
	sbx_result_free(res);
	free(expect);
	free(sub);

	o.cwd = "../..";
	ck_assert_int_eq(sbx_exec_shell(ws, "pwd", &o, &res), -SBX_EESCAPE);
	ck_assert_ptr_null(res);
}
END_TEST

static int compare_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs `env` itself (no shell, which would add variables of its own) and returns its output
 * with the lines sorted. */
static char *env_of(sbx_workspace *w, const char *const *env, uint32_t flags)
{
	const char *argv[] = { "env", NULL };
	sbx_exec_opts o = { .size = sizeof o, .env = env, .flags = flags };
	sbx_result *res = NULL;
	char *lines[64], *text, *save, *sorted;
	size_t n = 0;

	ck_assert_int_eq(sbx_exec(w, argv, &o, &res), 0);
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

START_TEST(test_env_exactly_as_composed)
{
	const char *over[] = { "B=override", "C=new value", "A", NULL };
	sbx_workspace *w = open_local("\"env\":{\"A\":\"1\",\"B\":\"2\",\"Z\":\"z=z\"}");
	char *got = env_of(w, over, 0);
	char *want = fmt("B=override\nC=new value\nHOME=%s\nPATH=%s\nZ=z=z\n", workdir,
	                 "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");

	ck_assert_str_eq(got, want);
	free(got);
	free(want);
	sbx_workspace_close(w);
}
END_TEST

START_TEST(test_env_cleared)
{
	const char *only[] = { "X=1", "Y=two words", NULL };
	char *got = env_of(ws, only, SBX_EXEC_CLEAR_ENV);

	ck_assert_str_eq(got, "X=1\nY=two words\n");
	free(got);
}
END_TEST

START_TEST(test_host_signal_state_does_not_leak)
{
	const char *argv[] = { "grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status", NULL };
	sigset_t usr1;
	sbx_result *res;

	signal(SIGPIPE, SIG_IGN); /* as Python does */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	res = run_argv(argv, NULL);
	ck_assert_str_eq(sbx_result_stdout(res, NULL),
	                 "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
	sbx_result_free(res);
}
END_TEST

START_TEST(test_no_fds_leak_into_command)
{
	int leaked = open("/dev/null", O_RDONLY); /* no O_CLOEXEC: a careless host */
	sbx_result *res = run_shell("ls /proc/$$/fd", NULL);

	ck_assert_str_eq(sbx_result_stdout(res, NULL), "0\n1\n2\n");
	sbx_result_free(res);
	close(leaked);
}
END_TEST

/* With the host's fds 0-2 closed, the pipes the command gets are fds 0-3 themselves: the
 * backend must not overwrite one with another while moving them into place. */
START_TEST(test_host_with_closed_stdio)
{
	int saved_out = fcntl(1, F_DUPFD_CLOEXEC, 10), saved_err = fcntl(2, F_DUPFD_CLOEXEC, 10);
	sbx_exec_opts o = { .size = sizeof o, .stdin_data = "in", .stdin_len = 2 };
	sbx_result *res;
	int code;
	char out[64], err[64];

	close(0);
	close(1);
	close(2);
	res = run_shell("cat; echo out; echo err >&2", &o);
	code = sbx_result_exit_code(res);
	snprintf(out, sizeof out, "%s", sbx_result_stdout(res, NULL));
	snprintf(err, sizeof err, "%s", sbx_result_stderr(res, NULL));
	sbx_result_free(res);
	dup2(saved_out, 1);
	dup2(saved_err, 2);
	ck_assert_int_eq(code, 0);
	ck_assert_str_eq(out, "inout\n");
	ck_assert_str_eq(err, "err\n");
}
END_TEST

START_TEST(test_rlimits_from_config)
{
	sbx_workspace *w = open_local("\"limits\":{\"open_files\":37,\"file_size_bytes\":1048576,"
	                              "\"cpu_seconds\":9}");
	sbx_result *res = NULL;

	ck_assert_int_eq(sbx_exec_shell(w, "ulimit -n; ulimit -f; ulimit -t", NULL, &res), 0);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "37\n2048\n9\n");
	sbx_result_free(res);
	sbx_workspace_close(w);
}
END_TEST

START_TEST(test_cpu_limit_stops_a_spinning_command)
{
	sbx_workspace *w = open_local("\"limits\":{\"cpu_seconds\":1}");
	sbx_result *res = NULL;

	ck_assert_int_eq(sbx_exec_shell(w, "while :; do :; done", NULL, &res), 0);
	ck_assert_int_eq(sbx_result_exit_code(res), -1);
	ck_assert_int_eq(sbx_result_signal(res), SIGXCPU);
	sbx_result_free(res);
	sbx_workspace_close(w);
}
END_TEST

/* ---- stdin and output ------------------------------------------------------------------- */

START_TEST(test_large_stdin_and_stdout_together)
{
	const size_t len = 10u << 20;
	const char *argv[] = { "cat", NULL };
	char *data = malloc(len);
	sbx_exec_opts o = { .size = sizeof o, .stdin_len = len, .max_output = 32u << 20 };
	sbx_result *res;
	size_t out_len;

	for (size_t i = 0; i < len; i++)
		data[i] = (char)('a' + i % 23);
	o.stdin_data = data;
	res = run_argv(argv, &o);
	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	ck_assert_int_eq(sbx_result_truncated(res), 0);
	ck_assert(memcmp(sbx_result_stdout(res, &out_len), data, len) == 0);
	ck_assert_uint_eq(out_len, len);
	sbx_result_free(res);
	free(data);
}
END_TEST

START_TEST(test_stdin_ignored_by_command)
{
	const size_t len = 10u << 20;
	char *data = calloc(1, len);
	sbx_exec_opts o = { .size = sizeof o, .stdin_data = data, .stdin_len = len };
	sbx_result *res = run_shell("echo done", &o);

	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "done\n");
	sbx_result_free(res);
	free(data);
}
END_TEST

START_TEST(test_no_stdin_reads_eof)
{
	const char *argv[] = { "cat", NULL };
	sbx_result *res = run_argv(argv, NULL);

	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "");
	sbx_result_free(res);
}
END_TEST

START_TEST(test_stderr_separate_and_merged)
{
	const char *cmd = "echo out; echo err >&2; echo out2";
	sbx_exec_opts o = { .size = sizeof o, .flags = SBX_EXEC_MERGE_STDERR };
	sbx_result *res = run_shell(cmd, NULL);

	ck_assert_str_eq(sbx_result_stdout(res, NULL), "out\nout2\n");
	ck_assert_str_eq(sbx_result_stderr(res, NULL), "err\n");
	sbx_result_free(res);
	res = run_shell(cmd, &o);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "out\nerr\nout2\n");
	ck_assert_str_eq(sbx_result_stderr(res, NULL), "");
	sbx_result_free(res);
}
END_TEST

static void record_output(int stream, const char *data, size_t len, void *userdata)
{
	char *log = userdata;
	size_t at = strlen(log);

	snprintf(log + at, 256 - at, "%d:%.*s", stream, (int)len, data);
}

START_TEST(test_streaming_callback_order)
{
	char log[256] = "";
	sbx_exec_opts o = { .size = sizeof o, .on_output = record_output, .userdata = log };
	sbx_result *res = run_shell("echo a; sleep 0.1; echo b >&2; sleep 0.1; echo c", &o);

	ck_assert_str_eq(log, "1:a\n2:b\n1:c\n");
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "a\nc\n");
	sbx_result_free(res);
}
END_TEST

/* Peak resident memory since the last reset (VmHWM), or VmRSS where peaks cannot be reset. */
static long memory_kb(bool reset_peak)
{
	static bool peak_resettable;
	char line[256];
	long kb = -1;
	FILE *f;

	if (reset_peak) {
		f = fopen("/proc/self/clear_refs", "w");
		peak_resettable = f && fputs("5", f) >= 0 && fclose(f) == 0;
		if (!peak_resettable && f)
			fclose(f);
	}
	f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, peak_resettable ? "VmHWM:" : "VmRSS:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

START_TEST(test_output_cap_keeps_memory_bounded)
{
	const size_t cap = 1u << 20;
	sbx_exec_opts o = { .size = sizeof o, .max_output = cap };
	long before = memory_kb(true), after;
	size_t len;
	sbx_result *res = run_shell("head -c 200000000 /dev/zero; echo tail >&2", &o);

	after = memory_kb(false);
	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	ck_assert_int_eq(sbx_result_truncated(res), 1);
	sbx_result_stdout(res, &len);
	ck_assert_uint_eq(len, cap);
	ck_assert_str_eq(sbx_result_stderr(res, NULL), "tail\n");
	ck_assert_msg(after - before < 64 * 1024, "memory grew by %ld KiB", after - before);
	sbx_result_free(res);
}
END_TEST

/* ---- nothing outlives a command ---------------------------------------------------------- */

START_TEST(test_timeout_kills_double_forked_daemon)
{
	const char *daemon = marker(), *main_sleep = marker();
	char *cmd = fmt("setsid sh -c 'sleep %s & :' & sleep %s", daemon, main_sleep);
	sbx_exec_opts o = { .size = sizeof o, .timeout_ms = 500 };
	int64_t start = mono_ms();
	sbx_result *res = run_shell(cmd, &o);

	ck_assert_int_eq(sbx_result_timed_out(res), 1);
	ck_assert_int_eq(sbx_result_exit_code(res), -1);
	ck_assert_int_eq(sbx_result_signal(res), SIGKILL);
	ck_assert_int_lt(mono_ms() - start, 5000);
	ck_assert(!test_process_exists(daemon));
	ck_assert(!test_process_exists(main_sleep));
	sbx_result_free(res);
	free(cmd);
}
END_TEST

START_TEST(test_background_child_is_killed_when_command_ends)
{
	const char *bg = marker(), *detached = marker();
	char *cmd = fmt("sleep %s & setsid sleep %s & echo started", bg, detached);
	int64_t start = mono_ms();
	sbx_result *res = run_shell(cmd, NULL);

	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "started\n");
	ck_assert_int_lt(mono_ms() - start, 2000); /* it did not wait for the sleeps */
	ck_assert(!test_process_exists(bg));
	ck_assert(!test_process_exists(detached));
	sbx_result_free(res);
	free(cmd);
}
END_TEST

START_TEST(test_fork_loop_is_killed)
{
	const char *mark = marker();
	char *cmd = fmt("while :; do setsid sh -c 'sleep %s &' & done & sleep 0.5; exit 5", mark);
	sbx_result *res = run_shell(cmd, NULL);

	ck_assert_int_eq(sbx_result_exit_code(res), 5);
	ck_assert(!test_process_exists(mark));
	sbx_result_free(res);
	free(cmd);
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
		sbx_result_free(res);
	}
	return (void *)(long)ok;
}

START_TEST(test_concurrent_exec_on_one_workspace)
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

/* ---- the process API --------------------------------------------------------------------- */

static sbx_process *spawn(const char *const *argv)
{
	sbx_process *p = NULL;

	ck_assert_msg(sbx_process_spawn(ws, argv, NULL, &p) == 0, "spawn: %s", sbx_last_error());
	return p;
}

/* Reads stdout until `want` has been seen (or EOF / 5 s). */
static bool read_until(sbx_process *p, const char *want)
{
	char buf[4096] = "";
	size_t got = 0, n;

	while (!strstr(buf, want) && got < sizeof buf - 1) {
		int r = sbx_process_read(p, SBX_STDOUT, buf + got, sizeof buf - 1 - got, 5000, &n);

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
	sbx_process *p = spawn(argv);
	char buf[64];
	size_t n;
	int code = -2, sig = -2;

	ck_assert_int_eq(sbx_process_write(p, "hello\n", 6), 0);
	ck_assert_int_eq(sbx_process_read(p, SBX_STDOUT, buf, sizeof buf, 5000, &n), 0);
	ck_assert_uint_eq(n, 6);
	ck_assert(memcmp(buf, "hello\n", 6) == 0);
	ck_assert_int_eq(sbx_process_wait(p, 0, &code, &sig), -SBX_ETIMEDOUT);
	ck_assert_int_eq(sbx_process_close_stdin(p), 0);
	ck_assert_int_eq(sbx_process_read(p, SBX_STDOUT, buf, sizeof buf, 5000, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(sbx_process_wait(p, 5000, &code, &sig), 0);
	ck_assert_int_eq(code, 0);
	ck_assert_int_eq(sig, 0);
	ck_assert_int_eq(sbx_process_wait(p, 0, &code, &sig), 0); /* repeatable */
	sbx_process_free(p);
}
END_TEST

START_TEST(test_process_signal_reaches_group)
{
	const char *argv[] = { "sh", "-c",
	                       "trap 'echo got; exit 3' USR1; echo ready; "
	                       "while :; do sleep 0.02; done",
	                       NULL };
	sbx_process *p = spawn(argv);
	int code, sig;

	ck_assert(read_until(p, "ready"));
	ck_assert_int_eq(sbx_process_signal(p, SIGUSR1), 0);
	ck_assert(read_until(p, "got"));
	ck_assert_int_eq(sbx_process_wait(p, 5000, &code, &sig), 0);
	ck_assert_int_eq(code, 3);
	sbx_process_free(p);
}
END_TEST

START_TEST(test_process_kill_tree)
{
	const char *daemon = marker(), *child = marker();
	char *cmd = fmt("setsid sh -c 'sleep %s &'; sleep %s & echo ready; wait", daemon, child);
	const char *argv[] = { "sh", "-c", cmd, NULL };
	sbx_process *p = spawn(argv);
	int code, sig;

	ck_assert(read_until(p, "ready"));
	ck_assert(wait_for_process(daemon, true));
	ck_assert(wait_for_process(child, true));
	ck_assert_int_eq(sbx_process_kill(p), 0);
	ck_assert_int_eq(sbx_process_wait(p, 10000, &code, &sig), 0);
	ck_assert_int_eq(code, -1);
	ck_assert_int_eq(sig, SIGKILL);
	ck_assert(!test_process_exists(daemon));
	ck_assert(!test_process_exists(child));
	ck_assert_int_eq(sbx_process_kill(p), 0); /* again: harmless */
	sbx_process_free(p);
	free(cmd);
}
END_TEST

START_TEST(test_process_free_of_running_tree)
{
	const char *daemon = marker(), *main_sleep = marker();
	char *cmd = fmt("setsid sh -c 'sleep %s &'; exec sleep %s", daemon, main_sleep);
	const char *argv[] = { "sh", "-c", cmd, NULL };
	sbx_process *p = spawn(argv);

	ck_assert(wait_for_process(daemon, true));
	ck_assert(wait_for_process(main_sleep, true));
	sbx_process_free(p);
	ck_assert(!test_process_exists(daemon));
	ck_assert(!test_process_exists(main_sleep));
	free(cmd);
}
END_TEST

START_TEST(test_process_write_after_stdin_closed_is_eio)
{
	const char *mark = marker();
	char *cmd = fmt("exec 0<&- 1>&-; sleep %s", mark);
	const char *argv[] = { "sh", "-c", cmd, NULL };
	sbx_process *p = spawn(argv);
	char chunk[4096] = { 0 }, buf[16];
	size_t n;
	int r = 0;

	/* The runner keeps no copy of the command's stdio: EOF and EPIPE come at once. */
	ck_assert_int_eq(sbx_process_read(p, SBX_STDOUT, buf, sizeof buf, 5000, &n), 0);
	ck_assert_uint_eq(n, 0);
	for (int i = 0; i < 1000 && r == 0; i++)
		r = sbx_process_write(p, chunk, sizeof chunk);
	ck_assert_int_eq(r, -SBX_EIO);
	ck_assert(test_process_exists(mark));
	sbx_process_free(p);
	ck_assert(!test_process_exists(mark));
	free(cmd);
}
END_TEST

START_TEST(test_reset_and_close_kill_live_processes)
{
	const char *first = marker(), *second = marker();
	const char *argv1[] = { "sleep", first, NULL }, *argv2[] = { "sleep", second, NULL };
	sbx_process *p = spawn(argv1), *q;
	int code, sig;

	ck_assert(wait_for_process(first, true));
	ck_assert_int_eq(sbx_workspace_reset(ws), 0);
	ck_assert(!test_process_exists(first));
	ck_assert_int_eq(sbx_process_wait(p, 0, &code, &sig), 0);
	ck_assert_int_eq(sig, SIGKILL);
	sbx_process_free(p);

	q = spawn(argv2);
	ck_assert(wait_for_process(second, true));
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
	ws = NULL;
	ck_assert(!test_process_exists(second));
	sbx_process_free(q); /* after close: still safe */
}
END_TEST

/* The host process dies (SIGKILL, no cleanup at all): its runners see the control socket
 * close and take their commands with them. */
START_TEST(test_host_death_kills_commands)
{
	const char *mark = marker();
	int ready[2];
	char c;
	pid_t host;

	ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	host = fork();
	ck_assert_int_ge(host, 0);
	if (host == 0) {
		sbx_workspace *w = open_local(NULL);
		char *cmd = fmt("setsid sleep %s & exec sleep %s", mark, mark);
		const char *argv[] = { "sh", "-c", cmd, NULL };
		sbx_process *p = NULL;

		if (sbx_process_spawn(w, argv, NULL, &p) != 0)
			_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	ck_assert(wait_for_process(mark, true));
	kill(host, SIGKILL);
	waitpid(host, NULL, 0);
	ck_assert_msg(wait_for_process(mark, false), "a command outlived its host");
}
END_TEST

/* As above, but the host forked a child before dying that keeps a copy of every fd,
 * the control socket included: the runner must notice its parent's death regardless. */
START_TEST(test_host_death_with_forked_child_holding_fds)
{
	const char *mark = marker();
	int ready[2];
	pid_t host, heir = -1;

	ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	host = fork();
	ck_assert_int_ge(host, 0);
	if (host == 0) {
		sbx_workspace *w = open_local(NULL);
		const char *argv[] = { "sleep", mark, NULL };
		sbx_process *p = NULL;

		if (sbx_process_spawn(w, argv, NULL, &p) != 0)
			_exit(1);
		heir = fork();
		if (heir == 0) {
			pause(); /* holds the fds until killed */
			_exit(0);
		}
		if (write(ready[1], &heir, sizeof heir) != sizeof heir)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], &heir, sizeof heir), (ssize_t)sizeof heir);
	close(ready[0]);
	ck_assert(wait_for_process(mark, true));
	kill(host, SIGKILL);
	waitpid(host, NULL, 0);
	bool gone = wait_for_process(mark, false);
	kill(heir, SIGKILL);
	ck_assert_msg(gone, "a command outlived its host");
}
END_TEST

/* ---- configuration and probing ----------------------------------------------------------- */

START_TEST(test_probe_and_caps)
{
	char *json = NULL, *cfg = fmt("{\"backend\":\"local\",\"workdir\":\"%s\","
	                              "\"network\":{\"mode\":\"none\"}}", workdir);
	sbx_workspace *w = NULL;

	ck_assert_int_eq(sbx_backends_probe(&json), 0);
	ck_assert_ptr_nonnull(strstr(json, "\"backend\":\"local\",\"available\":true"));
	sbx_free(json);
	/* No isolation: asking for no network must fail, not silently give the host's. */
	ck_assert_int_eq(sbx_workspace_open(cfg, &w), -SBX_ECONFIG);
	ck_assert_ptr_null(w);
	free(cfg);
	/* Nor is there a cgroup for a pids limit. */
	cfg = fmt("{\"backend\":\"local\",\"workdir\":\"%s\",\"limits\":{\"pids\":10}}",
	          workdir);
	ck_assert_int_eq(sbx_workspace_open(cfg, &w), -SBX_ECONFIG);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "limits.pids"));
	free(cfg);
}
END_TEST

/* ---- agentsbx-run on its own ------------------------------------------------------------- */

struct runner {
	pid_t pid;
	int ctrl;                     /* our end of the control socket */
	int out;                      /* the command's stdout and stderr */
};

static char *runner_path(void)
{
	const char *dir = getenv("SBX_HELPER_DIR");

	ck_assert_msg(dir != NULL, "SBX_HELPER_DIR is not set");
	return fmt("%s/agentsbx-run", dir);
}

/* Starts agentsbx-run with args; control_is_socket false puts a pipe on fd 3 instead. */
static struct runner start_runner(const char *const *args, bool control_is_socket)
{
	char *path = runner_path();
	const char *argv[32] = { path };
	int sv[2], out[2];
	posix_spawn_file_actions_t fa;
	struct runner r;
	size_t n = 1;

	for (; *args; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	if (control_is_socket)
		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	else
		ck_assert_int_eq(pipe2(sv, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, out[1], 2);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
	ck_assert_int_eq(posix_spawn(&r.pid, path, &fa, NULL, (char *const *)argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	close(sv[1]);
	close(out[1]);
	r.ctrl = sv[0];
	r.out = out[0];
	free(path);
	return r;
}

/* Reads the command's output to EOF (returned, caller frees), the report, and the runner's
 * exit status. Returns whether a report came. */
static bool finish_runner(struct runner *r, struct sbx_run_report *rep, int *status, char **out)
{
	char buf[4096];
	size_t len = 0;
	ssize_t n;
	bool reported;

	*out = calloc(1, sizeof buf + 1);
	while ((n = read(r->out, buf, sizeof buf)) > 0 && len + (size_t)n < sizeof buf) {
		memcpy(*out + len, buf, (size_t)n);
		len += (size_t)n;
	}
	reported = recv(r->ctrl, rep, sizeof *rep, 0) == (ssize_t)sizeof *rep;
	ck_assert_int_eq(waitpid(r->pid, status, 0), r->pid);
	close(r->ctrl);
	close(r->out);
	return reported;
}

START_TEST(test_runner_reports_exit)
{
	const char *args[] = { "--proto", "1", "--rlimit", "nofile=41", "--", "sh", "-c",
	                       "ulimit -n; exit 7", NULL };
	struct runner r = start_runner(args, true);
	struct sbx_run_report rep;
	int status;
	char *out;

	ck_assert(finish_runner(&r, &rep, &status, &out));
	ck_assert_str_eq(out, "41\n");
	ck_assert_uint_eq(rep.kind, SBX_RUN_EXITED);
	ck_assert_int_eq(rep.exit_code, 7);
	ck_assert_int_eq(rep.term_signal, 0);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	free(out);
}
END_TEST

START_TEST(test_runner_signal_and_kill_requests)
{
	const char *mark = marker();
	char *script = fmt("trap 'echo usr1' USR1; setsid sleep %s & echo ready; "
	                   "while :; do sleep 0.02; done", mark);
	const char *args[] = { "--proto", "1", "--", "sh", "-c", script, NULL };
	struct runner r = start_runner(args, true);
	struct sbx_run_request sig = { SBX_RUN_SIGNAL, SIGUSR1 }, kill_req = { SBX_RUN_KILL, 0 };
	struct sbx_run_report rep;
	char buf[64] = "";
	int status;
	char *out;

	ck_assert_int_gt(read(r.out, buf, sizeof buf - 1), 0); /* "ready" */
	ck_assert(wait_for_process(mark, true));
	ck_assert_int_eq(send(r.ctrl, &sig, sizeof sig, MSG_NOSIGNAL), (ssize_t)sizeof sig);
	usleep(200000);
	ck_assert_int_eq(send(r.ctrl, &kill_req, sizeof kill_req, MSG_NOSIGNAL),
	                 (ssize_t)sizeof kill_req);
	ck_assert(finish_runner(&r, &rep, &status, &out));
	ck_assert_ptr_nonnull(strstr(out, "usr1"));
	ck_assert_int_eq(rep.exit_code, -1);
	ck_assert_int_eq(rep.term_signal, SIGKILL);
	ck_assert(!test_process_exists(mark));
	free(out);
	free(script);
}
END_TEST

START_TEST(test_runner_comm_with_parens_and_spaces)
{
	/* /proc/PID/stat is "pid (comm) state ppid": a comm of ") x (" must not fool the parser
	 * that finds the tree to kill. */
	const char *mark = marker();
	char *link = fmt("%s/a) b (c", workdir);
	char *script = fmt("setsid '%s' %s & echo ok", link, mark);
	const char *args[] = { "--proto", "1", "--", "sh", "-c", script, NULL };
	struct runner r;
	struct sbx_run_report rep;
	int status;
	char *out;

	ck_assert_int_eq(symlink("/bin/sleep", link), 0);
	r = start_runner(args, true);
	ck_assert(finish_runner(&r, &rep, &status, &out));
	ck_assert_str_eq(out, "ok\n");
	ck_assert_int_eq(rep.exit_code, 0);
	ck_assert(!test_process_exists(mark));
	free(out);
	free(script);
	free(link);
}
END_TEST

START_TEST(test_runner_refuses_bad_usage)
{
	const char *unknown[] = { "--proto", "1", "--rlimit", "stack=1", "--", "true", NULL };
	const char *negative[] = { "--proto", "1", "--rlimit", "cpu=-1", "--", "true", NULL };
	const char *no_proto[] = { "--", "true", NULL };
	const char *bad_proto[] = { "--proto", "2", "--", "true", NULL };
	const char *no_cmd[] = { "--proto", "1", "--", NULL };
	const char *good[] = { "--proto", "1", "--", "true", NULL };
	const char *const *cases[] = { unknown, negative, no_proto, bad_proto, no_cmd };
	struct sbx_run_report rep;
	struct runner r;
	int status;
	char *out;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		r = start_runner(cases[i], true);
		ck_assert(!finish_runner(&r, &rep, &status, &out));
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 2, "case %zu", i);
		ck_assert_ptr_nonnull(strstr(out, "agentsbx-run: "));
		free(out);
	}
	r = start_runner(good, false); /* fd 3 is a pipe, not the control socket */
	ck_assert(!finish_runner(&r, &rep, &status, &out));
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 2);
	free(out);
}
END_TEST

static Suite *local_suite(void)
{
	Suite *s = suite_create("local");
	TCase *exec = tcase_create("exec"), *env = tcase_create("environment");
	TCase *io = tcase_create("io"), *tree = tcase_create("tree");
	TCase *proc = tcase_create("process"), *runner = tcase_create("runner");

	tcase_add_checked_fixture(exec, setup, teardown);
	tcase_add_test(exec, test_exit_codes);
	tcase_add_test(exec, test_signal_death);
	tcase_add_test(exec, test_missing_command_is_127);
	tcase_add_test(exec, test_not_executable_is_126);
	tcase_add_test(exec, test_script_in_workspace_runs);
	tcase_add_test(exec, test_probe_and_caps);
	suite_add_tcase(s, exec);

	tcase_add_checked_fixture(env, setup, teardown);
	tcase_add_test(env, test_cwd_default_and_relative);
	tcase_add_test(env, test_env_exactly_as_composed);
	tcase_add_test(env, test_env_cleared);
	tcase_add_test(env, test_host_signal_state_does_not_leak);
	tcase_add_test(env, test_no_fds_leak_into_command);
	tcase_add_test(env, test_host_with_closed_stdio);
	tcase_add_test(env, test_rlimits_from_config);
	tcase_add_test(env, test_cpu_limit_stops_a_spinning_command);
	suite_add_tcase(s, env);

	tcase_add_checked_fixture(io, setup, teardown);
	tcase_add_test(io, test_large_stdin_and_stdout_together);
	tcase_add_test(io, test_stdin_ignored_by_command);
	tcase_add_test(io, test_no_stdin_reads_eof);
	tcase_add_test(io, test_stderr_separate_and_merged);
	tcase_add_test(io, test_streaming_callback_order);
	tcase_add_test(io, test_output_cap_keeps_memory_bounded);
	suite_add_tcase(s, io);

	tcase_add_checked_fixture(tree, setup, teardown);
	tcase_add_test(tree, test_timeout_kills_double_forked_daemon);
	tcase_add_test(tree, test_background_child_is_killed_when_command_ends);
	tcase_add_test(tree, test_fork_loop_is_killed);
	tcase_add_test(tree, test_concurrent_exec_on_one_workspace);
	tcase_add_test(tree, test_host_death_kills_commands);
	tcase_add_test(tree, test_host_death_with_forked_child_holding_fds);
	suite_add_tcase(s, tree);

	tcase_add_checked_fixture(proc, setup, teardown);
	tcase_add_test(proc, test_process_cat_round_trip);
	tcase_add_test(proc, test_process_signal_reaches_group);
	tcase_add_test(proc, test_process_kill_tree);
	tcase_add_test(proc, test_process_free_of_running_tree);
	tcase_add_test(proc, test_process_write_after_stdin_closed_is_eio);
	tcase_add_test(proc, test_reset_and_close_kill_live_processes);
	suite_add_tcase(s, proc);

	tcase_add_checked_fixture(runner, setup, teardown);
	tcase_add_test(runner, test_runner_reports_exit);
	tcase_add_test(runner, test_runner_signal_and_kill_requests);
	tcase_add_test(runner, test_runner_comm_with_parens_and_spaces);
	tcase_add_test(runner, test_runner_refuses_bad_usage);
	suite_add_tcase(s, runner);
	return s;
}

int main(void)
{
	return test_run_suite(local_suite());
}
