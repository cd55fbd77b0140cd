/* What is particular to the local backend and its runner: the host's signal state and closed
 * stdio, rlimits, a fork loop, the host's own death (also with a forked heir holding the fds),
 * and agentsbx-run driven directly over its protocol. The exec, process and file semantics
 * every backend shares are in test_conformance.c, which runs on local too. */
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
#include "proto/run_proto.h"
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

/* ---- exit codes and signals ------------------------------------------------------------- */

/* ---- working directory and environment ---------------------------------------------------- */

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

/* Large stdin and stdout together: test_large_stdin_round_trip in the conformance suite, which
 * runs on this backend too. */

/* ---- nothing outlives a command ---------------------------------------------------------- */

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

/* ---- the process API --------------------------------------------------------------------- */

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
	/* Nor a sandbox to cap the disk in: commands write the host's disk directly. */
	cfg = fmt("{\"backend\":\"local\",\"limits\":{\"disk_bytes\":1048576}}");
	ck_assert_int_eq(sbx_workspace_open(cfg, &w), -SBX_ECONFIG);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "limits.disk_bytes"));
	ck_assert_ptr_null(w);
	free(cfg);
	cfg = fmt("{\"backend\":\"local\",\"workdir\":\"%s\",\"limits\":{\"tmp_bytes\":1048576}}",
	          workdir);
	ck_assert_int_eq(sbx_workspace_open(cfg, &w), -SBX_ECONFIG);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "limits.tmp_bytes"));
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
	TCase *runner = tcase_create("runner");

	tcase_add_checked_fixture(exec, setup, teardown);
	tcase_add_test(exec, test_probe_and_caps);
	suite_add_tcase(s, exec);

	tcase_add_checked_fixture(env, setup, teardown);
	tcase_add_test(env, test_host_signal_state_does_not_leak);
	tcase_add_test(env, test_host_with_closed_stdio);
	tcase_add_test(env, test_rlimits_from_config);
	tcase_add_test(env, test_cpu_limit_stops_a_spinning_command);
	suite_add_tcase(s, env);

	tcase_add_checked_fixture(io, setup, teardown);
	suite_add_tcase(s, io);

	tcase_add_checked_fixture(tree, setup, teardown);
	tcase_add_test(tree, test_fork_loop_is_killed);
	tcase_add_test(tree, test_host_death_kills_commands);
	tcase_add_test(tree, test_host_death_with_forked_child_holding_fds);
	suite_add_tcase(s, tree);

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
