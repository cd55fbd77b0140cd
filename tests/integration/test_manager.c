/* The workspace manager with sandboxes ("ns", detached), through the public API: a real short
 * TTL leaves no process behind, two processes racing for one workspace get one sandbox, a
 * sandbox outlives a SIGKILLed host and is reattached by id, users stay apart, and the CLI's
 * ls, attach and gc. Exits 77 (skip) where the ns backend cannot work. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <agentsbx/agentsbx.h>
#include "support.h"

#define DETACHED_INIT "agentsbx-init --detached"

static char *base;

static void setup(void)
{
	base = test_mkdtemp();
}

static void teardown(void)
{
	test_rm_rf(base);
	free(base);
}

static sbx_manager *open_manager(const char *extra)
{
	char cfg[1024];
	sbx_manager *m = NULL;

	snprintf(cfg, sizeof cfg, "{\"workspace\":{\"backend\":\"ns\"},\"base_dir\":\"%s\"%s%s}",
	         base, extra ? "," : "", extra ? extra : "");
	ck_assert_msg(sbx_manager_open(cfg, &m) == 0, "%s", sbx_last_error());
	return m;
}

/* stdout of sh -c script (static buffer), or "" on failure. */
static const char *run(sbx_workspace *ws, const char *script)
{
	static char out[4096];
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	sbx_result *res = NULL;

	out[0] = '\0';
	if (sbx_exec(ws, argv, NULL, &res) == 0)
		snprintf(out, sizeof out, "%s", sbx_result_stdout(res, NULL));
	sbx_result_free(res);
	return out;
}

/* Waits up to ms for no detached init to be left. */
static bool no_detached_init_within(int ms)
{
	for (int waited = 0; waited <= ms; waited += 20) {
		if (!test_process_exists(DETACHED_INIT))
			return true;
		usleep(20000);
	}
	return false;
}

START_TEST(test_real_short_ttl_leaves_no_process)
{
	sbx_manager *m = open_manager("\"ttl_s\":0.5,\"sweep_interval_s\":0.1");
	sbx_workspace *ws = NULL;
	sbx_process *p = NULL;
	const char *argv[] = { "sleep", "31337", NULL };

	ck_assert_int_eq(sbx_manager_get(m, "alice", "coder", NULL, NULL, &ws), 0);
	ck_assert_int_eq(sbx_process_spawn(ws, argv, NULL, &p), 0);
	for (int i = 0; i < 200 && !test_process_exists("sleep 31337"); i++)
		usleep(10000);
	ck_assert(test_process_exists("sleep 31337"));
	ck_assert(test_process_exists(DETACHED_INIT));
	ck_assert_int_eq(sbx_manager_release(m, ws), 0);
	/* Held it stays; released, one TTL and a sweep later everything is gone. */
	ck_assert(no_detached_init_within(3000));
	ck_assert(!test_process_exists("sleep 31337"));
	char *list = NULL;
	ck_assert_int_eq(sbx_manager_list(m, &list), 0);
	ck_assert_ptr_nonnull(strstr(list, "\"running\":false"));
	ck_assert_ptr_nonnull(strstr(list, "\"refs\":0"));
	sbx_free(list);
	sbx_process_free(p);
	sbx_manager_free(m);
}
END_TEST

START_TEST(test_users_get_separate_sandboxes)
{
	sbx_manager *m = open_manager("\"policy\":\"per_user\"");
	sbx_workspace *a = NULL, *b = NULL;

	ck_assert_int_eq(sbx_manager_get(m, "alice", "x", NULL, NULL, &a), 0);
	ck_assert_int_eq(sbx_manager_get(m, "bob", "x", NULL, NULL, &b), 0);
	run(a, "echo secret > /tmp/alice; echo secret > alice.txt");
	ck_assert_str_eq(run(b, "ls /tmp; ls"), "");
	ck_assert_str_eq(run(a, "cat /tmp/alice"), "secret\n");
	/* Each keeps its state folder, with its private HOME, below the manager's base_dir,
	 * beside its workdir and outside it. */
	ck_assert_str_eq(run(a, "echo alice > ~/mine && cat ~/mine"), "alice\n");
	ck_assert_str_eq(run(b, "cat ~/mine 2>/dev/null || echo none"), "none\n");
	ck_assert_msg(!strncmp(sbx_audit_path(a), base, strlen(base)) &&
	              strstr(sbx_audit_path(a), "/.state/") &&
	              strcmp(sbx_audit_path(a), sbx_audit_path(b)) != 0, "%s", sbx_audit_path(a));
	sbx_manager_release(m, a);
	sbx_manager_release(m, b);
	ck_assert_int_eq(sbx_manager_close(m, sbx_workspace_id(a)), 0);
	ck_assert_int_eq(sbx_manager_close(m, sbx_workspace_id(b)), 0);
	sbx_manager_free(m);
	ck_assert(no_detached_init_within(2000));
}
END_TEST

/* A child process: waits for the go byte, gets alice's workspace, counts itself in the
 * sandbox's private /tmp, reports the count it saw, holds on until told to end. */
static void racer(int go_fd, int report_fd)
{
	sbx_manager *m = open_manager(NULL);
	sbx_workspace *ws = NULL;
	char c;

	if (read(go_fd, &c, 1) != 1 || sbx_manager_get(m, "alice", "coder", NULL, NULL, &ws) < 0)
		_exit(1);
	const char *n = run(ws, "echo $$ >> /tmp/racers; wc -l < /tmp/racers");
	if (write(report_fd, n, strlen(n)) < 0 || read(go_fd, &c, 1) != 1)
		_exit(1);
	sbx_manager_release(m, ws);
	sbx_manager_free(m);
	_exit(0);
}

START_TEST(test_two_processes_one_sandbox)
{
	int go[2], report[2], status;
	pid_t kids[2];
	char seen[64] = "";

	ck_assert_int_eq(pipe(go), 0);
	ck_assert_int_eq(pipe(report), 0);
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		ck_assert_int_ge(kids[i], 0);
		if (kids[i] == 0) {
			close(go[1]);
			close(report[0]);
			racer(go[0], report[1]);
		}
	}
	close(go[0]);
	close(report[1]);
	ck_assert_int_eq(write(go[1], "gg", 2), 2);    /* both at once */
	size_t got = 0;
	while (got < 4) {
		ssize_t n = read(report[0], seen + got, sizeof seen - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	seen[got] = '\0';
	/* Two sandboxes would have two private /tmp: each racer would count only itself. */
	ck_assert_msg(strcmp(seen, "1\n1\n") && got == 4, "racers saw '%s'", seen);
	ck_assert_int_eq(write(go[1], "ee", 2), 2);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(waitpid(kids[i], &status, 0), kids[i]);
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	/* Both gone, the sandbox runs on; a third process attaches to the same one. */
	sbx_manager *m = open_manager(NULL);
	sbx_workspace *ws = NULL;
	ck_assert_int_eq(sbx_manager_get(m, "alice", "coder", NULL, NULL, &ws), 0);
	ck_assert_str_eq(run(ws, "wc -l < /tmp/racers"), "2\n");
	sbx_manager_release(m, ws);
	ck_assert_int_eq(sbx_manager_close(m, sbx_workspace_id(ws)), 0);
	sbx_manager_free(m);
	ck_assert(no_detached_init_within(2000));
	close(go[1]);
	close(report[0]);
}
END_TEST

START_TEST(test_reattach_after_sigkill)
{
	int ready[2], status;
	char id[128] = "";
	pid_t kid;

	ck_assert_int_eq(pipe(ready), 0);
	kid = fork();
	ck_assert_int_ge(kid, 0);
	if (kid == 0) {
		sbx_manager *m = open_manager(NULL);
		sbx_workspace *ws = NULL;
		if (sbx_manager_get(m, "alice", "coder", NULL, NULL, &ws) < 0)
			_exit(1);
		run(ws, "echo alive > /tmp/mark");
		const char *wid = sbx_workspace_id(ws);
		if (write(ready[1], wid, strlen(wid)) < 0)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	ck_assert_int_gt(read(ready[0], id, sizeof id - 1), 0);
	close(ready[0]);
	kill(kid, SIGKILL);
	ck_assert_int_eq(waitpid(kid, &status, 0), kid);
	ck_assert(test_process_exists(DETACHED_INIT));

	/* The CLI sees it and runs a command in it by id. */
	char cmd[1024], out[256] = "";
	snprintf(cmd, sizeof cmd, "%s/agentsbx attach --base-dir %s %s -- cat /tmp/mark",
	         getenv("SBX_TEST_BUILD_ROOT"), base, id);
	FILE *f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(out, sizeof out, f));
	ck_assert_int_eq(pclose(f), 0);
	ck_assert_str_eq(out, "alive\n");
	snprintf(cmd, sizeof cmd, "%s/agentsbx ls --base-dir %s | grep -q '%s .*running'",
	         getenv("SBX_TEST_BUILD_ROOT"), base, id);
	ck_assert_int_eq(system(cmd), 0);

	/* A new host process reattaches through the manager: the same sandbox. */
	sbx_manager *m = open_manager(NULL);
	sbx_workspace *ws = NULL;
	ck_assert_int_eq(sbx_manager_get(m, "alice", "coder", NULL, NULL, &ws), 0);
	ck_assert_str_eq(sbx_workspace_id(ws), id);
	ck_assert_str_eq(run(ws, "cat /tmp/mark"), "alive\n");
	sbx_manager_release(m, ws);
	sbx_manager_free(m);   /* detaches: it still runs */
	ck_assert(test_process_exists(DETACHED_INIT));

	/* gc stops what nobody holds (idle for more than the millisecond --ttl 0 means). */
	usleep(20000);
	snprintf(cmd, sizeof cmd, "%s/agentsbx gc --base-dir %s --ttl 0 >/dev/null",
	         getenv("SBX_TEST_BUILD_ROOT"), base);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert(no_detached_init_within(2000));
}
END_TEST

/* The CLI's bg on a managed workspace by id: the job runs in the same sandbox as the host
 * process's handle, its output is read by a later CLI run, and bg kill stops it there. */
START_TEST(test_cli_bg_in_a_managed_workspace)
{
	sbx_manager *m = open_manager(NULL);
	sbx_workspace *ws = NULL;
	char cmd[2048], job[64] = "", out[4096] = "";
	const char *cli = getenv("SBX_TEST_BUILD_ROOT");
	bool ended = false;
	FILE *f;

	ck_assert_int_eq(sbx_manager_get(m, "alice", "coder", NULL, NULL, &ws), 0);
	snprintf(cmd, sizeof cmd, "%s/agentsbx bg start --base-dir %s --id %s -- sh -c "
	         "'echo from-bg > /tmp/bg-mark; echo started; exec sleep 1000.31415'", cli, base,
	         sbx_workspace_id(ws));
	ck_assert_ptr_nonnull(f = popen(cmd, "r"));
	ck_assert_ptr_nonnull(fgets(job, sizeof job, f));
	ck_assert_int_eq(pclose(f), 0);
	job[strcspn(job, "\n")] = '\0';
	ck_assert_msg(strncmp(job, "bg-", 3) == 0, "job id '%s'", job);
	/* The same sandbox: what the job wrote to the private /tmp is seen here. */
	for (int i = 0; i < 200 && strcmp(run(ws, "cat /tmp/bg-mark 2>/dev/null"), "from-bg\n"); i++)
		usleep(50000);
	ck_assert_str_eq(run(ws, "cat /tmp/bg-mark"), "from-bg\n");
	snprintf(cmd, sizeof cmd, "%s/agentsbx bg output --base-dir %s %s 2>&1", cli, base, job);
	for (int i = 0; i < 200 && !strstr(out, "started"); i++) {
		ck_assert_ptr_nonnull(f = popen(cmd, "r"));
		size_t n = fread(out, 1, sizeof out - 1, f);
		out[n] = '\0';
		pclose(f);
		usleep(50000);
	}
	ck_assert_msg(strstr(out, "started\n") && strstr(out, " running\n"), "%s", out);
	snprintf(cmd, sizeof cmd, "%s/agentsbx bg kill --base-dir %s %s >/dev/null", cli, base, job);
	ck_assert_int_eq(system(cmd), 0);
	for (int i = 0; i < 100 && !(ended = !test_process_exists("sleep 1000.31415")); i++)
		usleep(50000);
	ck_assert_msg(ended, "the job's sleep outlived bg kill");
	sbx_manager_release(m, ws);
	ck_assert_int_eq(sbx_manager_close(m, sbx_workspace_id(ws)), 0);
	sbx_manager_free(m);
	ck_assert(no_detached_init_within(2000));
}
END_TEST

START_TEST(test_not_detached_is_one_process_at_a_time)
{
	sbx_manager *m = NULL, *m2 = NULL;
	sbx_workspace *ws = NULL, *ws2 = NULL;
	char cfg[1024];

	snprintf(cfg, sizeof cfg, "{\"workspace\":{\"backend\":\"ns\",\"ns\":{\"detached\":false}},"
	         "\"base_dir\":\"%s\"}", base);
	ck_assert_int_eq(sbx_manager_open(cfg, &m), 0);
	ck_assert_int_eq(sbx_manager_open(cfg, &m2), 0);   /* a second manager: as a process */
	ck_assert_int_eq(sbx_manager_get(m, "alice", "coder", NULL, NULL, &ws), 0);
	ck_assert_int_eq(sbx_manager_get(m2, "alice", "coder", NULL, NULL, &ws2), -SBX_EBUSY);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "another process"));
	ck_assert(!test_process_exists(DETACHED_INIT));
	sbx_manager_release(m, ws);
	sbx_manager_free(m);
	sbx_manager_free(m2);
}
END_TEST

/* The socket is visible inside (read-only state folder); the init refuses its own commands. */
START_TEST(test_commands_cannot_use_the_socket)
{
	sbx_manager *m;
	sbx_workspace *ws = NULL;

	TEST_NEED(TEST_CAP_TOOLS, access("/usr/bin/python3", X_OK) == 0,
	          "the socket client inside is a python3 script");
	m = open_manager(NULL);
	ck_assert_int_eq(sbx_manager_get(m, "alice", "coder", NULL, NULL, &ws), 0);
	const char *out = run(ws, "python3 -c 'import socket\n"
	                      "s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)\n"
	                      "s.connect(\".agentsbx/run/sock\")\n"
	                      "print(len(s.recv(512)))'");
	ck_assert_str_eq(out, "0\n");    /* closed without a greeting */
	ck_assert_str_eq(run(ws, "rm -f .agentsbx/run/sock 2>/dev/null || echo protected"),
	                 "protected\n");
	sbx_manager_release(m, ws);
	ck_assert_int_eq(sbx_manager_close(m, sbx_workspace_id(ws)), 0);
	sbx_manager_free(m);
	ck_assert(no_detached_init_within(2000));
}
END_TEST

/* The same through bubblewrap, where it works: two managers (as two processes), one sandbox. */
START_TEST(test_bwrap_detached)
{
	char cfg[1024];
	sbx_manager *m = NULL, *m2 = NULL;
	sbx_workspace *ws = NULL, *ws2 = NULL;

	TEST_NEED(TEST_CAP_TOOLS, access("/usr/bin/bwrap", X_OK) == 0,
	          "the bwrap backend needs /usr/bin/bwrap");
	snprintf(cfg, sizeof cfg, "{\"workspace\":{\"backend\":\"bwrap\"},\"base_dir\":\"%s\"}",
	         base);
	ck_assert_int_eq(sbx_manager_open(cfg, &m), 0);
	ck_assert_int_eq(sbx_manager_open(cfg, &m2), 0);
	int got = sbx_manager_get(m, "alice", "coder", NULL, NULL, &ws);

	/* Only a backend that cannot work on this host is a skip; any other error fails. */
	ck_assert_msg(got == 0 || got == -SBX_EBACKEND, "bwrap detached: %s", sbx_last_error());
	if (got < 0) {
		sbx_manager_free(m);
		sbx_manager_free(m2);
	}
	TEST_NEED("bwrap", got == 0, "bubblewrap cannot make a sandbox on this host");
	ck_assert_int_eq(sbx_manager_get(m2, "alice", "coder", NULL, NULL, &ws2), 0);
	run(ws, "echo one > /tmp/mark");
	ck_assert_str_eq(run(ws2, "cat /tmp/mark"), "one\n");
	sbx_manager_release(m, ws);
	sbx_manager_release(m2, ws2);
	sbx_manager_free(m2);
	ck_assert_int_eq(sbx_manager_close(m, sbx_workspace_id(ws)), 0);
	sbx_manager_free(m);
	ck_assert(no_detached_init_within(2000));
}
END_TEST

static bool ns_works(void)
{
	char *dir = test_mkdtemp(), cfg[512];
	sbx_workspace *ws = NULL;
	bool ok;

	snprintf(cfg, sizeof cfg, "{\"backend\":\"ns\",\"workdir\":\"%s\"}", dir);
	ok = sbx_workspace_open(cfg, &ws) == 0;
	sbx_workspace_close(ws);
	test_rm_rf(dir);
	free(dir);
	return ok;
}

int main(void)
{
	test_private_state_home();   /* the probe opens a workspace already */
	if (!ns_works()) {
		fprintf(stderr, "the ns backend does not work here: %s\n", sbx_last_error());
		return 77;
	}
	Suite *s = suite_create("manager");
	TCase *tc = tcase_create("sandboxes");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_real_short_ttl_leaves_no_process);
	tcase_add_test(tc, test_users_get_separate_sandboxes);
	tcase_add_test(tc, test_two_processes_one_sandbox);
	tcase_add_test(tc, test_reattach_after_sigkill);
	tcase_add_test(tc, test_cli_bg_in_a_managed_workspace);
	tcase_add_test(tc, test_not_detached_is_one_process_at_a_time);
	tcase_add_test(tc, test_commands_cannot_use_the_socket);
	tcase_add_test(tc, test_bwrap_detached);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
