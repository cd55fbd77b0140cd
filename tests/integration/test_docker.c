/* What only the docker backend promises, against a real engine (tests/run-all.sh starts
 * dockerd and builds the test image with tests/docker/build-image.sh). Its security claims,
 * tried from inside, are test_docker_security.c's.
 *
 *  - the "stream" stdio path (the Engine's hijacked exec stream) for output, stdin and kills;
 *  - a detached workspace's container survives a SIGKILL of the host process and a new
 *    process reattaches to it by label; an ephemeral one ends with its host process;
 *  - an engine that goes away mid-exec (a fake one, tests/docker/fake-engine.py) gives a clear
 *    error, and an unreachable engine or registry a clear error at open;
 *  - bad "docker" options are refused with the key named, a runtime the engine lacks (or
 *    gVisor that cannot reach the host's sockets) at open, with the ones it has.
 * The conformance and tools suites run on docker too (tests/meson.build). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "backend_support.h"
#include "support.h"

static char *docker_opts(const char *more)
{
	return bt_fmt("\"docker\":{\"image\":\"%s\"%s%s}", bt_docker_image(), more ? "," : "",
	              more ? more : "");
}

static sbx_workspace *open_with(const char *workdir, const char *more, const char *extra)
{
	char *opts = docker_opts(more);
	char *all = extra ? bt_fmt("%s,%s", opts, extra) : bt_fmt("%s", opts);
	sbx_workspace *w = bt_open_ok(workdir, all);

	free(opts);
	free(all);
	return w;
}

/* ---- the stream path --------------------------------------------------------------------- */

START_TEST(test_stream_stdio)
{
	sbx_workspace *w = open_with(bt_mkdtemp(), "\"stdio\":\"stream\"", NULL);
	sbx_exec_opts o = { .size = sizeof o, .stdin_data = "from stdin\n", .stdin_len = 11 };
	sbx_result *res = bt_shell(w, "cat; echo to-err >&2; exit 7", &o);

	ck_assert_str_eq(sbx_result_stdout(res, NULL), "from stdin\n");
	ck_assert_str_eq(sbx_result_stderr(res, NULL), "to-err\n");
	ck_assert_int_eq(sbx_result_exit_code(res), 7);
	sbx_result_free(res);
	res = bt_shell(w, "no-such-command-here", NULL);
	ck_assert_int_eq(sbx_result_exit_code(res), 127);
	sbx_result_free(res);
	sbx_workspace_close(w);
}
END_TEST

/* The exec stream carries bytes, not a terminal's master: a pty is refused there, by name. */
START_TEST(test_stream_stdio_refuses_a_pty)
{
	sbx_workspace *w = open_with(bt_mkdtemp(), "\"stdio\":\"stream\"", NULL);
	const char *argv[] = { "tty", NULL };
	sbx_spawn_opts o = { .size = sizeof o, .pty = 1 };
	sbx_process *p = NULL;

	ck_assert_int_eq(sbx_process_spawn(w, argv, &o, &p), -SBX_ENOSYS);
	ck_assert_ptr_null(p);
	ck_assert_msg(strstr(sbx_last_error(), "pty") && strstr(sbx_last_error(), "stream"),
	              "%s", sbx_last_error());
	sbx_workspace_close(w);
}
END_TEST

START_TEST(test_stream_timeout_kills_tree)
{
	sbx_workspace *w = open_with(bt_mkdtemp(), "\"stdio\":\"stream\"", NULL);
	const char *daemon = bt_marker(), *main_sleep = bt_marker();
	sbx_exec_opts o = { .size = sizeof o, .timeout_ms = 500,
	                    .env = bt_marker_env(daemon, main_sleep, NULL, NULL) };
	sbx_result *res = bt_shell(w, "setsid sh -c 'sleep $M1 & :' & sleep $M2", &o);

	ck_assert_int_eq(sbx_result_timed_out(res), 1);
	ck_assert(!test_process_exists(daemon));
	ck_assert(!test_process_exists(main_sleep));
	sbx_result_free(res);
	sbx_workspace_close(w);
}
END_TEST

/* ---- lifecycle across host processes ----------------------------------------------------- */

/* Runs in a child: opens the workspace, leaves a mark in the container's own /tmp (not in
 * the bound workdir: only the same container has it), tells the parent and waits to be
 * killed. */
static void child_open_and_wait(const char *dir, const char *id, bool detached, int ready)
{
	char *extra = bt_fmt("\"id\":\"%s\"", id);
	sbx_workspace *w = open_with(dir, detached ? "\"detached\":true" : NULL, extra);
	char *out = bt_shell_out(w, "echo alive > /tmp/mark && echo ok");

	if (write(ready, out, strlen(out)) < 0)
		_exit(3);
	for (;;)
		pause();
}

static pid_t start_child(const char *dir, const char *id, bool detached)
{
	int p[2];
	char buf[8] = "";
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(p[0]);
		child_open_and_wait(dir, id, detached, p[1]);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], buf, sizeof buf - 1), 3);
	ck_assert_str_eq(buf, "ok\n");
	close(p[0]);
	return pid;
}

START_TEST(test_reattach_after_sigkill)
{
	char *dir = bt_mkdtemp();
	const char *id = bt_tmp("reattach-%d", (int)getpid());
	char *extra = bt_fmt("\"id\":\"%s\"", id);
	pid_t pid = start_child(dir, id, true);
	sbx_workspace *w;
	char *out;

	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	w = open_with(dir, "\"detached\":true", extra);
	out = bt_shell_out(w, "cat /tmp/mark");
	ck_assert_str_eq(out, "alive\n");
	free(out);
	sbx_workspace_close(w);
	/* Detached: still there after close too. Opening it ephemeral replaces it (other
	 * settings, another container), and that one goes at close. */
	ck_assert_int_gt(bt_count_sandbox_processes(dir), 0);
	w = open_with(dir, NULL, extra);
	out = bt_shell_out(w, "cat /tmp/mark 2>/dev/null || echo fresh");
	ck_assert_str_eq(out, "fresh\n");
	free(out);
	sbx_workspace_close(w);
	ck_assert_int_eq(bt_wait_for_sandbox_gone(dir), 0);
	free(extra);
}
END_TEST

START_TEST(test_ephemeral_container_ends_with_its_host_process)
{
	char *dir = bt_mkdtemp();
	pid_t pid = start_child(dir, bt_tmp("ephemeral-%d", (int)getpid()), false);

	ck_assert_int_gt(bt_count_sandbox_processes(dir), 0);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	ck_assert_int_eq(bt_wait_for_sandbox_gone(dir), 0);
}
END_TEST

START_TEST(test_close_leaves_no_container)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w = open_with(dir, NULL, NULL);
	char *out = bt_shell_out(w, "echo hi");

	ck_assert_int_gt(bt_count_sandbox_processes(dir), 0);
	sbx_workspace_close(w);
	ck_assert_int_eq(bt_wait_for_sandbox_gone(dir), 0);
	free(out);
}
END_TEST

/* ---- engines that fail ------------------------------------------------------------------- */

START_TEST(test_unreachable_engine)
{
	sbx_workspace *w = NULL;
	char *opts = docker_opts("\"host\":\"unix:///nonexistent/docker.sock\"");
	int r = bt_open(bt_mkdtemp(), opts, &w);

	ck_assert_int_eq(r, -SBX_EBACKEND);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "/nonexistent/docker.sock"));
	free(opts);
}
END_TEST

START_TEST(test_unreachable_registry)
{
	sbx_workspace *w = NULL;
	/* Nothing listens on port 1: the pull fails at once, without leaving this machine. */
	int r = bt_open(bt_mkdtemp(), "\"docker\":{\"image\":\"localhost:1/agentsbx-missing\"}",
	                &w);

	ck_assert_int_lt(r, 0);
	ck_assert_msg(strstr(sbx_last_error(), "pull image 'localhost:1/agentsbx-missing'") &&
	              strstr(sbx_last_error(), "localhost:1"), "%s", sbx_last_error());
	r = bt_open(bt_mkdtemp(), "\"docker\":{\"image\":\"localhost:1/agentsbx-missing\","
	            "\"pull\":false}", &w);
	ck_assert_int_lt(r, 0);
	ck_assert_msg(strstr(sbx_last_error(), "No such image"), "%s", sbx_last_error());
}
END_TEST

static pid_t start_fake_engine(const char *sock)
{
	const char *src = getenv("SBX_TEST_SOURCE_ROOT");
	char *script = bt_fmt("%s/tests/docker/fake-engine.py", src ? src : ".");
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execl("/usr/bin/python3", "python3", script, sock, (char *)NULL);
		_exit(127);
	}
	free(script);
	for (int i = 0; i < 500 && !test_exists(sock); i++)
		usleep(10000);
	ck_assert_msg(test_exists(sock), "the fake engine did not start");
	return pid;
}

START_TEST(test_engine_gone_mid_exec)
{
	char *dir = bt_mkdtemp(), *sock = bt_fmt("%s/engine.sock", bt_mkdtemp());
	pid_t engine = start_fake_engine(sock);
	char *more = bt_fmt("\"stdio\":\"stream\",\"host\":\"unix://%s\"", sock);
	sbx_workspace *w = open_with(dir, more, NULL);
	sbx_result *res = NULL;
	int r = sbx_exec_shell(w, "echo partial; sleep 100", NULL, &res);

	ck_assert_int_lt(r, 0);
	ck_assert_msg(strstr(sbx_last_error(), "engine closed the exec stream"), "%s",
	              sbx_last_error());
	sbx_workspace_close(w);
	kill(engine, SIGKILL);
	waitpid(engine, NULL, 0);
	free(more);
	free(sock);
}
END_TEST

/* ---- bad options ------------------------------------------------------------------------- */

START_TEST(test_bad_options_name_the_key)
{
	static const struct { const char *docker, *key; } cases[] = {
		{ "{}", "docker.image" },
		{ "{\"image\":5}", "docker.image" },
		{ "{\"image\":\"a\\u0000b\"}", "docker.image" },
		{ "{\"image\":\"x\",\"cpus\":\"two\"}", "docker.cpus" },
		{ "{\"image\":\"x\",\"cpus\":1e300}", "docker.cpus" },
		{ "{\"image\":\"x\",\"user\":\"root;rm\"}", "docker.user" },
		{ "{\"image\":\"x\",\"tmp_size\":99999999999999999999}", "docker.tmp_size" },
		{ "{\"image\":\"x\",\"detached\":\"yes\"}", "docker.detached" },
		{ "{\"image\":\"x\",\"stdio\":\"pipes\"}", "docker.stdio" },
		{ "{\"image\":\"x\",\"network\":\"bridge\"}", "docker.network" },
		{ "{\"image\":\"x\",\"nope\":1}", "docker.nope" },
		{ "{\"image\":\"x\",\"runtime\":5}", "docker.runtime" },
		{ "{\"image\":\"x\",\"runtime\":\"run c\"}", "docker.runtime" },
		{ "{\"image\":\"x\",\"runtime\":\"-runc\"}", "docker.runtime" },
		{ "{\"image\":\"x\",\"runtime\":\"\"}", "docker.runtime" },
		{ "[]", "docker" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		sbx_workspace *w = NULL;
		char *extra = bt_fmt("\"docker\":%s", cases[i].docker);
		int r = bt_open(bt_mkdtemp(), extra, &w);

		ck_assert_msg(r < 0 && r != -SBX_EBACKEND, "%s: %d", cases[i].docker, r);
		ck_assert_msg(strstr(sbx_last_error(), cases[i].key), "%s: %s", cases[i].docker,
		              sbx_last_error());
		free(extra);
	}
}
END_TEST

START_TEST(test_unknown_runtime_is_refused_with_the_registered_ones)
{
	sbx_workspace *w = NULL;
	char *opts = docker_opts("\"runtime\":\"no-such-runtime\"");
	int r = bt_open(bt_mkdtemp(), opts, &w);

	/* What the engine lacks, as a missing engine: a skip for suites, a failure for CI. */
	ck_assert_int_eq(r, -SBX_EBACKEND);
	ck_assert_msg(strstr(sbx_last_error(), "docker.runtime") &&
	              strstr(sbx_last_error(), "'no-such-runtime'") &&
	              strstr(sbx_last_error(), " (default)"), "%s", sbx_last_error());
	free(opts);
}
END_TEST

/* gVisor registered without --host-uds=open could run nothing of ours: refused before a
 * container is made (the fake engine fails any create on that runtime), naming the fix. */
START_TEST(test_gvisor_without_host_sockets_is_refused)
{
	char *sock = bt_fmt("%s/engine.sock", bt_mkdtemp());
	pid_t engine = start_fake_engine(sock);
	char *opts = docker_opts(bt_tmp("\"runtime\":\"runsc-closed\",\"host\":\"unix://%s\"",
	                                sock));
	sbx_workspace *w = NULL;
	int r = bt_open(bt_mkdtemp(), opts, &w);

	ck_assert_int_eq(r, -SBX_EBACKEND);
	ck_assert_msg(strstr(sbx_last_error(), "docker.runtime") &&
	              strstr(sbx_last_error(), "--host-uds=open"), "%s", sbx_last_error());
	free(opts);
	opts = docker_opts(bt_tmp("\"runtime\":\"kata\",\"host\":\"unix://%s\"", sock));
	r = bt_open(bt_mkdtemp(), opts, &w);
	ck_assert_int_eq(r, -SBX_EBACKEND);
	ck_assert_msg(strstr(sbx_last_error(), "registered: runc (default), runsc-closed (gVisor "
	                     "without --host-uds=open"), "%s", sbx_last_error());
	kill(engine, SIGKILL);
	waitpid(engine, NULL, 0);
	free(opts);
	free(sock);
}
END_TEST

static Suite *docker_suite(void)
{
	Suite *s = suite_create("docker");
	TCase *tc = tcase_create("stream");
	tcase_add_test(tc, test_stream_stdio);
	tcase_add_test(tc, test_stream_stdio_refuses_a_pty);
	tcase_add_test(tc, test_stream_timeout_kills_tree);
	suite_add_tcase(s, tc);
	tc = tcase_create("lifecycle");
	tcase_add_test(tc, test_reattach_after_sigkill);
	tcase_add_test(tc, test_ephemeral_container_ends_with_its_host_process);
	tcase_add_test(tc, test_close_leaves_no_container);
	suite_add_tcase(s, tc);
	tc = tcase_create("failures");
	tcase_add_test(tc, test_unreachable_engine);
	tcase_add_test(tc, test_unreachable_registry);
	tcase_add_test(tc, test_engine_gone_mid_exec);
	tcase_add_test(tc, test_bad_options_name_the_key);
	tcase_add_test(tc, test_unknown_runtime_is_refused_with_the_registered_ones);
	tcase_add_test(tc, test_gvisor_without_host_sockets_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return bt_main(docker_suite);
}
