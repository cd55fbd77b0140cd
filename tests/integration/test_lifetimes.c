/* Nothing a workspace starts outlives its TTL or its host (docs/security.md, "Lifetimes"),
 * on the backend SBX_TEST_BACKEND names, with the real clock, real signals and the real CLI:
 *
 *  - a detached sandbox whose opener was SIGKILLed, and that nobody replaced, stops itself
 *    after its idle TTL (not before), leaving no process, no mount of its workdir in any
 *    process's mount table, no cgroup (as root) and no placeholder; the next host finds it
 *    stopped and gets a fresh one. One that a host holds does not stop however long it idles.
 *    (ns and bwrap through the workspace manager; docker's detached container too.)
 *  - `agentsbx exec` killed mid-command by INT, TERM or HUP closes the workspace and ends by
 *    the signal: no process, no placeholder, no journal note, no cgroup, at once. By KILL:
 *    the sandbox's tidier removes them all; and when the tidier is killed too, the next open
 *    does.
 *  - a write killed between naming its temporary file and the rename leaves that file (the
 *    shim in tests/lifetimes makes the process SIGKILL itself there), and the next open
 *    sweeps it; on a file system without O_TMPFILE (the shim again) the same.
 *  - processes that kept trying to create the protected files through the close created
 *    none: the placeholders go only once every process of the sandbox has been reaped.
 * Runs as root and as an ordinary user; the cgroup checks are root's (only root gets one). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "backend_support.h"
#include "support.h"

#define TTL_S 2
#define LONG_WAIT_MS 60000      /* a bound for what must happen, never a measurement */
#define CGROUP2_MAGIC 0x63677270

static const char *const placeholders[] = { ".bashrc", ".bash_profile", ".profile", ".zshrc",
                                            ".mcp.json", NULL };

static bool is_ns(void)
{
	return !strcmp(bt_backend(), "ns");
}

static bool is_docker(void)
{
	return !strcmp(bt_backend(), "docker");
}

/* Only root gets a cgroup (v1 here), and only direct mode makes one. */
static bool with_cgroup(void)
{
	return geteuid() == 0 && is_ns();
}

static const char *limits_member(void)
{
	return with_cgroup() ? "\"limits\":{\"memory_bytes\":268435456,\"pids\":512}" : NULL;
}

/* ---- what is left on the host ------------------------------------------------------------ */

/* The cgroup directories a workspace id would have below this process's own cgroups. */
static int cgroup_dirs_left(const char *id)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	struct statfs sf;
	char line[1024];
	int left = 0;
	bool v2 = statfs("/sys/fs/cgroup", &sf) == 0 && (unsigned long)sf.f_type == CGROUP2_MAGIC;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof line, f)) {
		char *ctrls = strchr(line, ':'), *path = ctrls ? strchr(ctrls + 1, ':') : NULL;
		if (!path)
			continue;
		*path++ = '\0';
		ctrls++;
		path[strcspn(path, "\n")] = '\0';
		if (!strcmp(path, "/"))
			path[0] = '\0';
		const char *dir = NULL;
		if (v2 && !*ctrls)
			dir = bt_tmp("/sys/fs/cgroup%s/agentsbx/%s", path, id);
		else if (!v2 && (!strcmp(ctrls, "memory") || !strcmp(ctrls, "pids")))
			dir = bt_tmp("/sys/fs/cgroup/%s%s/agentsbx/%s", ctrls, path, id);
		if (dir && test_exists(dir))
			left++;
	}
	fclose(f);
	return left;
}

static int placeholders_left(const char *dir)
{
	int left = 0;

	for (const char *const *p = placeholders; *p; p++)
		left += test_exists(test_path_at(dir, *p));
	return left;
}

static int journal_notes(const char *dir)
{
	DIR *d = opendir(test_path_at(dir, ".agentsbx/journal"));
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* Processes that hold a file descriptor into dir (a tidier holds the workdir). */
static int fd_holders(const char *dir)
{
	DIR *procs = opendir("/proc");
	struct dirent *p;
	size_t len = strlen(dir);
	int n = 0;

	while (procs && (p = readdir(procs))) {
		if (p->d_name[0] < '1' || p->d_name[0] > '9' || atoi(p->d_name) == getpid())
			continue;
		DIR *fds = opendir(bt_tmp("/proc/%s/fd", p->d_name));
		struct dirent *f;
		bool holds = false;
		while (fds && !holds && (f = readdir(fds))) {
			char target[4096];
			ssize_t k = readlink(bt_tmp("/proc/%s/fd/%s", p->d_name, f->d_name), target,
			                     sizeof target - 1);
			if (k <= 0)
				continue;
			target[k] = '\0';
			holds = !strncmp(target, dir, len) && (target[len] == '/' || !target[len]);
		}
		if (fds)
			closedir(fds);
		n += holds;
	}
	if (procs)
		closedir(procs);
	return n;
}

/* Nothing of a sandbox of dir: no process with dir in its mounts, none holding it open, no
 * placeholder, no journal note, no cgroup (id may be NULL). */
static bool nothing_left(const char *dir, const char *id)
{
	return bt_count_sandbox_processes(dir) == 0 && fd_holders(dir) == 0 &&
	       placeholders_left(dir) == 0 && journal_notes(dir) == 0 &&
	       (!id || cgroup_dirs_left(id) == 0);
}

static bool nothing_left_within(const char *dir, const char *id, int ms)
{
	for (int64_t until = bt_now_ms() + ms; bt_now_ms() < until; usleep(20000))
		if (nothing_left(dir, id))
			return true;
	return nothing_left(dir, id);
}

static const char *what_is_left(const char *dir, const char *id)
{
	return bt_tmp("mounting %d, holding %d, placeholders %d, notes %d, cgroups %d",
	              bt_count_sandbox_processes(dir), fd_holders(dir), placeholders_left(dir),
	              journal_notes(dir), id ? cgroup_dirs_left(id) : 0);
}

/* ---- detached sandboxes stop themselves ----------------------------------------------------- */

static char *manager_config(const char *base, int ttl_s)
{
	const char *limits = limits_member();

	return bt_fmt("{\"workspace\":{\"backend\":\"%s\"%s%s},\"base_dir\":\"%s\","
	              "\"ttl_s\":%d,\"sweep_interval_s\":0}", bt_backend(), limits ? "," : "",
	              limits ? limits : "", base, ttl_s);
}

/* The workdir the manager gave the workspace (from its list). */
static void workdir_of(sbx_manager *m, char *out, size_t len)
{
	char *list = NULL;
	const char *at;

	ck_assert_int_eq(sbx_manager_list(m, &list), 0);
	at = strstr(list, "\"workdir\":\"");
	ck_assert_ptr_nonnull(at);
	at += strlen("\"workdir\":\"");
	snprintf(out, len, "%.*s", (int)strcspn(at, "\""), at);
	sbx_free(list);
}

/* Child: gets the workspace, leaves a mark in the sandbox's own /tmp, starts a background
 * command, reports "id workdir" and waits to be killed. */
static _Noreturn void open_and_wait(const char *cfg, int ready)
{
	sbx_manager *m = NULL;
	sbx_workspace *ws = NULL;
	sbx_process *p = NULL;
	const char *argv[] = { "sleep", bt_marker(), NULL };
	char dir[4096], line[8192];

	if (sbx_manager_open(cfg, &m) < 0 || sbx_manager_get(m, "alice", "coder", NULL, NULL,
	                                                     &ws) < 0)
		_exit(2);
	free(bt_shell_out(ws, "echo alive > /tmp/mark"));
	if (sbx_process_spawn(ws, argv, NULL, &p) < 0)
		_exit(3);
	workdir_of(m, dir, sizeof dir);
	snprintf(line, sizeof line, "%s %s", sbx_workspace_id(ws), dir);
	if (write(ready, line, strlen(line)) < 0)
		_exit(4);
	for (;;)
		pause();
}

START_TEST(test_detached_stops_itself_after_its_ttl)
{
	char *base = bt_mkdtemp(), *cfg = manager_config(base, TTL_S);
	char line[8192] = "", id[128], dir[4096];
	int ready[2], status;
	pid_t kid;

	ck_assert_int_eq(pipe(ready), 0);
	if ((kid = fork()) == 0) {
		close(ready[0]);
		open_and_wait(cfg, ready[1]);
	}
	close(ready[1]);
	ck_assert_int_gt(read(ready[0], line, sizeof line - 1), 0);
	close(ready[0]);
	ck_assert_int_eq(sscanf(line, "%127s %4095s", id, dir), 2);
	ck_assert_int_gt(bt_count_sandbox_processes(dir), 0);
	if (with_cgroup())
		ck_assert_int_eq(cgroup_dirs_left(id), 2);

	int64_t t0 = bt_now_ms();
	ck_assert_int_eq(kill(kid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(kid, &status, 0), kid);
	/* Nobody holds it now and nobody sweeps: it runs on until its TTL is up... */
	if (bt_now_ms() - t0 < TTL_S * 1000 - 500)
		ck_assert_msg(bt_count_sandbox_processes(dir) > 0, "stopped before its TTL");
	/* ...and then stops by itself, and its tidier takes everything along. */
	ck_assert_msg(nothing_left_within(dir, id, LONG_WAIT_MS), "left: %s", what_is_left(dir, id));
	ck_assert_int_ge(bt_now_ms() - t0, TTL_S * 1000 - 50);

	/* The next host finds it stopped (its socket refuses) and gets a fresh sandbox. */
	sbx_manager *m = NULL;
	sbx_workspace *ws = NULL;
	char *list = NULL, *out;
	ck_assert_int_eq(sbx_manager_open(cfg, &m), 0);
	ck_assert_int_eq(sbx_manager_list(m, &list), 0);
	ck_assert_ptr_nonnull(strstr(list, "\"running\":false"));
	sbx_free(list);
	ck_assert_int_eq(sbx_manager_get(m, "alice", "coder", NULL, NULL, &ws), 0);
	out = bt_shell_out(ws, "cat /tmp/mark 2>/dev/null || echo fresh");
	ck_assert_str_eq(out, "fresh\n");
	free(out);
	ck_assert_int_eq(sbx_manager_release(m, ws), 0);
	ck_assert_int_eq(sbx_manager_close(m, id), 0);
	sbx_manager_free(m);
	ck_assert_msg(nothing_left_within(dir, id, LONG_WAIT_MS), "left: %s", what_is_left(dir, id));
	free(cfg);
}
END_TEST

START_TEST(test_held_detached_does_not_stop)
{
	char *base = bt_mkdtemp(), *cfg = manager_config(base, 1);
	sbx_manager *m = NULL;
	sbx_workspace *ws = NULL;
	char dir[4096], id[128], *out;

	ck_assert_int_eq(sbx_manager_open(cfg, &m), 0);
	ck_assert_int_eq(sbx_manager_get(m, "alice", "coder", NULL, NULL, &ws), 0);
	snprintf(id, sizeof id, "%s", sbx_workspace_id(ws));
	workdir_of(m, dir, sizeof dir);
	free(bt_shell_out(ws, "echo alive > /tmp/mark"));
	/* Held and doing nothing for thrice its TTL: a holder, not idle. */
	sleep(3);
	ck_assert_int_gt(bt_count_sandbox_processes(dir), 0);
	out = bt_shell_out(ws, "cat /tmp/mark");
	ck_assert_str_eq(out, "alive\n");
	free(out);
	/* Let go (the manager detaches): now it stops after its TTL. */
	ck_assert_int_eq(sbx_manager_release(m, ws), 0);
	int64_t t0 = bt_now_ms();
	sbx_manager_free(m);
	ck_assert_msg(nothing_left_within(dir, id, LONG_WAIT_MS), "left: %s", what_is_left(dir, id));
	ck_assert_int_ge(bt_now_ms() - t0, 1000 - 50);
	free(cfg);
}
END_TEST

/* ---- docker's detached containers ---------------------------------------------------------- */

static int containers_of(const char *id)
{
	FILE *f = popen(bt_tmp("docker ps -aq --filter label=io.agentsbx.workspace=%s", id), "r");
	char line[256];
	int n = 0;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof line, f))
		n++;
	pclose(f);
	return n;
}

/* A detached container with its idle TTL, or (ttl_s < 0) an ephemeral one. */
static char *docker_config(const char *id, int ttl_s)
{
	if (ttl_s < 0)
		return bt_fmt("\"id\":\"%s\",\"docker\":{\"image\":\"%s\"}", id, bt_docker_image());
	return bt_fmt("\"id\":\"%s\",\"docker\":{\"image\":\"%s\",\"detached\":true,"
	              "\"idle_ttl_s\":%d}", id, bt_docker_image(), ttl_s);
}

static _Noreturn void docker_open_and_wait(const char *dir, const char *id, int ready)
{
	char *extra = docker_config(id, TTL_S);
	sbx_workspace *w = bt_open_ok(dir, extra);

	free(bt_shell_out(w, "echo alive > /tmp/mark"));
	if (write(ready, "ok", 2) != 2)
		_exit(4);
	for (;;)
		pause();
}

static bool container_gone_within(const char *dir, const char *id, int ms)
{
	for (int64_t until = bt_now_ms() + ms; bt_now_ms() < until; usleep(100000))
		if (containers_of(id) == 0 && bt_count_sandbox_processes(dir) == 0)
			return true;
	return false;
}

START_TEST(test_docker_detached_container_stops_itself)
{
	char *dir = bt_mkdtemp(), buf[4] = "";
	const char *id = bt_tmp("lifetime-%d", (int)getpid());
	char *idc = bt_fmt("%s", id);
	int ready[2], status;
	pid_t kid;

	ck_assert_int_eq(pipe(ready), 0);
	if ((kid = fork()) == 0) {
		close(ready[0]);
		docker_open_and_wait(dir, idc, ready[1]);
	}
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], buf, 2), 2);
	close(ready[0]);
	ck_assert_int_eq(containers_of(idc), 1);
	int64_t t0 = bt_now_ms();
	ck_assert_int_eq(kill(kid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(kid, &status, 0), kid);
	if (bt_now_ms() - t0 < TTL_S * 1000 - 500)
		ck_assert_msg(containers_of(idc) == 1, "stopped before its TTL");
	/* Its exec server stops at the TTL, the container ends and the engine removes it. */
	ck_assert_msg(container_gone_within(dir, idc, LONG_WAIT_MS), "containers: %d, processes: %d",
	              containers_of(idc), bt_count_sandbox_processes(dir));
	ck_assert_int_ge(bt_now_ms() - t0, TTL_S * 1000 - 50);
	/* The next open gets a fresh one. */
	char *extra = docker_config(idc, -1);
	sbx_workspace *w = bt_open_ok(dir, extra);
	char *out = bt_shell_out(w, "cat /tmp/mark 2>/dev/null || echo fresh");
	ck_assert_str_eq(out, "fresh\n");
	free(out);
	sbx_workspace_close(w);
	ck_assert(container_gone_within(dir, idc, LONG_WAIT_MS));
	free(extra);
	free(idc);
}
END_TEST

START_TEST(test_docker_held_container_does_not_stop)
{
	char *dir = bt_mkdtemp();
	char *id = bt_fmt("lifetime-held-%d", (int)getpid());
	char *extra = docker_config(id, 1);
	sbx_workspace *w = bt_open_ok(dir, extra);
	char *out;

	free(bt_shell_out(w, "echo alive > /tmp/mark"));
	sleep(3);
	ck_assert_int_eq(containers_of(id), 1);
	out = bt_shell_out(w, "cat /tmp/mark");
	ck_assert_str_eq(out, "alive\n");
	free(out);
	int64_t t0 = bt_now_ms();
	sbx_workspace_close(w);           /* detaches: it runs on, then stops after its TTL */
	ck_assert(container_gone_within(dir, id, LONG_WAIT_MS));
	ck_assert_int_ge(bt_now_ms() - t0, 1000 - 50);
	free(extra);
	free(id);
}
END_TEST

/* ---- the CLI killed mid-command ------------------------------------------------------------ */

static const char *cli(void)
{
	const char *root = getenv("SBX_TEST_BUILD_ROOT");

	ck_assert_ptr_nonnull(root);
	return bt_tmp("%s/agentsbx", root);
}

/* Starts `agentsbx exec` on dir with id (and the backend's limits) running `sh -c script`,
 * its stdout into a pipe whose reading end goes to *out. */
static pid_t spawn_cli_exec(const char *dir, const char *id, const char *script, int *out)
{
	const char *limits = limits_member();
	char *config = bt_fmt("{\"id\":\"%s\"%s%s}", id, limits ? "," : "", limits ? limits : "");
	const char *argv[] = { cli(), "exec", "--backend", bt_backend(), "--workdir", dir,
	                       "--config", config, "--", "/bin/sh", "-c", script, NULL };
	int p[2];
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	if ((pid = fork()) == 0) {
		dup2(p[1], STDOUT_FILENO);
		close(p[0]);
		close(p[1]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	ck_assert_int_gt(pid, 0);
	close(p[1]);
	free(config);
	*out = p[0];
	return pid;
}

/* Starts `agentsbx exec` on dir with id, running a command that says "started" and sleeps
 * with a marker; returns once it has said so. */
static pid_t start_cli_exec(const char *dir, const char *id, const char *marker)
{
	char *script = bt_fmt("echo started; exec sleep %s", marker);
	char buf[64] = "";
	int out;
	pid_t pid = spawn_cli_exec(dir, id, script, &out);

	struct pollfd p = { .fd = out, .events = POLLIN };
	ck_assert_int_eq(poll(&p, 1, LONG_WAIT_MS), 1);
	ck_assert_int_gt(read(out, buf, sizeof buf - 1), 0);
	ck_assert_str_eq(buf, "started\n");
	ck_assert(bt_wait_for_process(marker, true));
	close(out);
	free(script);
	return pid;
}

static void assert_ended_by(pid_t pid, int sig)
{
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == sig, "status 0x%x", status);
}

/* A handled signal: the CLI closes the workspace before it ends by the signal, so nothing is
 * left the moment it has ended. */
static void killed_by_handled_signal(int sig)
{
	char *dir = bt_mkdtemp();
	const char *id = bt_tmp("cli-%d-%d", sig, (int)getpid());
	char *idc = bt_fmt("%s", id);
	const char *marker = bt_marker();
	pid_t pid = start_cli_exec(dir, idc, marker);

	ck_assert_int_eq(placeholders_left(dir), 5);
	if (with_cgroup())
		ck_assert_int_eq(cgroup_dirs_left(idc), 2);
	ck_assert_int_eq(kill(pid, sig), 0);
	assert_ended_by(pid, sig);
	ck_assert_msg(nothing_left(dir, with_cgroup() ? idc : NULL), "left: %s",
	              what_is_left(dir, idc));
	ck_assert_int_eq(bt_count_processes(marker), 0);
	free(idc);
}

START_TEST(test_cli_sigint_leaves_nothing)
{
	killed_by_handled_signal(SIGINT);
}
END_TEST

START_TEST(test_cli_sigterm_leaves_nothing)
{
	killed_by_handled_signal(SIGTERM);
}
END_TEST

START_TEST(test_cli_sighup_leaves_nothing)
{
	killed_by_handled_signal(SIGHUP);
}
END_TEST

/* Waits at most ms for pid to end; false when it has not (then it is killed and reaped). */
static bool ends_within(pid_t pid, int ms, int *status)
{
	int64_t deadline = bt_now_ms() + ms;
	struct timespec pause = { 0, 10 * 1000 * 1000 };

	while (bt_now_ms() < deadline) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return true;
		ck_assert_int_eq(r, 0);
		nanosleep(&pause, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, status, 0);
	return false;
}

/* The CLI's output goes to a reader that stopped reading (a pager left open, a pipe into a
 * stuck program): its writes wait for room. TERM must still close the workspace and end it,
 * as on any other wait; before, it sat in write(2) with the signal blocked until the reader
 * went away. */
START_TEST(test_cli_sigterm_with_a_stalled_reader_leaves_nothing)
{
	char *dir = bt_mkdtemp();
	const char *marker = bt_marker();
	char *id = bt_fmt("cli-stalled-%d", (int)getpid());
	char *script = bt_fmt("sleep %s & exec yes flood", marker);
	int out, queued = 0, status;
	pid_t pid = spawn_cli_exec(dir, id, script, &out);

	ck_assert(bt_wait_for_process(marker, true));
	/* The pipe is full (64 KiB less one write at most): the CLI waits for room. */
	for (int64_t deadline = bt_now_ms() + LONG_WAIT_MS;
	     queued < 60 * 1024 && bt_now_ms() < deadline; ) {
		struct timespec pause = { 0, 10 * 1000 * 1000 };
		ck_assert_int_eq(ioctl(out, FIONREAD, &queued), 0);
		nanosleep(&pause, NULL);
	}
	ck_assert_int_ge(queued, 60 * 1024);
	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	ck_assert_msg(ends_within(pid, LONG_WAIT_MS, &status), "TERM did not end the CLI while "
	              "its reader was stalled");
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "status 0x%x", status);
	ck_assert_msg(nothing_left(dir, with_cgroup() ? id : NULL), "left: %s", what_is_left(dir, id));
	ck_assert_int_eq(bt_count_processes(marker), 0);
	close(out);
	free(id);
	free(script);
}
END_TEST

/* The next open, on the same workdir: the CLI once more, with another workspace id. */
static void open_next(const char *dir)
{
	const char *limits = limits_member();
	char *config = bt_fmt("{\"id\":\"next-%d\"%s%s}", (int)getpid(), limits ? "," : "",
	                      limits ? limits : "");
	char *cmd = bt_fmt("'%s' exec --backend %s --workdir '%s' --config '%s' -- true", cli(),
	                   bt_backend(), dir, config);

	ck_assert_int_eq(system(cmd), 0);
	free(config);
	free(cmd);
}

/* KILL cannot be handled: the sandbox's tidier, outside it, takes everything away. */
START_TEST(test_cli_sigkill_leaves_nothing)
{
	char *dir = bt_mkdtemp();
	char *id = bt_fmt("cli-kill-%d", (int)getpid());
	const char *marker = bt_marker();
	pid_t pid = start_cli_exec(dir, id, marker);

	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	assert_ended_by(pid, SIGKILL);
	ck_assert_msg(nothing_left_within(dir, with_cgroup() ? id : NULL, LONG_WAIT_MS), "left: %s",
	              what_is_left(dir, id));
	ck_assert_int_eq(bt_count_processes(marker), 0);
	open_next(dir);
	ck_assert_msg(nothing_left(dir, with_cgroup() ? id : NULL), "left: %s", what_is_left(dir, id));
	free(id);
}
END_TEST

/* The pids below pid (children first found, then theirs). */
static size_t descendants(pid_t pid, pid_t *out, size_t max)
{
	size_t n = 0;

	for (size_t scan = 0; scan <= n && n < max; scan++) {
		pid_t parent = scan == 0 ? pid : out[scan - 1];
		DIR *d = opendir("/proc");
		struct dirent *e;

		while (d && (e = readdir(d)) && n < max) {
			char *stat;
			const char *close_paren;
			int ppid = 0;

			if (e->d_name[0] < '1' || e->d_name[0] > '9')
				continue;
			if (!(stat = test_slurp(bt_tmp("/proc/%s/stat", e->d_name))) ||
			    !(close_paren = strrchr(stat, ')')) ||
			    sscanf(close_paren + 2, "%*c %d", &ppid) != 1 || ppid != parent)
				continue;
			out[n++] = atoi(e->d_name);
		}
		if (d)
			closedir(d);
	}
	return n;
}

/* KILL of the CLI and of everything it started, its sandbox's tidier included, all at once
 * (stopped first, so none can act in between): what the journal noted and the cgroups stay
 * behind, and the next open removes them. */
START_TEST(test_killed_tree_is_swept_at_the_next_open)
{
	char *dir = bt_mkdtemp();
	char *id = bt_fmt("cli-tree-%d", (int)getpid());
	const char *marker = bt_marker();
	pid_t pid = start_cli_exec(dir, id, marker), tree[256];
	size_t n = descendants(pid, tree, 256);

	ck_assert_uint_gt(n, 0);
	kill(pid, SIGSTOP);
	for (size_t i = 0; i < n; i++)
		kill(tree[i], SIGSTOP);
	for (size_t i = 0; i < n; i++)
		kill(tree[i], SIGKILL);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	assert_ended_by(pid, SIGKILL);
	ck_assert_int_eq(bt_wait_for_sandbox_gone(dir), 0);
	/* Nobody was left to tidy. */
	ck_assert_int_eq(placeholders_left(dir), 5);
	ck_assert_int_eq(journal_notes(dir), 1);
	if (with_cgroup())
		ck_assert_int_eq(cgroup_dirs_left(id), 2);
	open_next(dir);
	ck_assert_msg(nothing_left(dir, with_cgroup() ? id : NULL), "left: %s", what_is_left(dir, id));
	ck_assert_int_eq(bt_count_processes(marker), 0);
	free(id);
}
END_TEST

/* ---- a killed write's temporary file ---------------------------------------------------------- */

static bool has_temp_file(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t len = strlen(name);
	bool found = false;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		found |= e->d_name[0] == '.' && !strncmp(e->d_name + 1, name, len) &&
		         !strncmp(e->d_name + 1 + len, ".sbx-", 5);
	closedir(d);
	return found;
}

/* `agentsbx tool Write` under the shim, which SIGKILLs it just before the rename. */
static void write_killed_before_rename(const char *dir, bool no_tmpfile)
{
	const char *shim = getenv("SBX_TEST_CRASH_SHIM");
	const char *argv[] = { cli(), "tool", "--backend", bt_backend(), "--workdir", dir, "Write",
	                       "{\"file_path\":\"f.txt\",\"content\":\"half a story\"}", NULL };
	pid_t pid;

	ck_assert_ptr_nonnull(shim);
	if ((pid = fork()) == 0) {
		setenv("LD_PRELOAD", shim, 1);
		setenv("SBX_TEST_CRASH_RENAME_TO", "f.txt", 1);
		if (no_tmpfile)
			setenv("SBX_TEST_NO_TMPFILE", "1", 1);
		/* A sanitizer build's runtime wants to be first; the shim only intercepts. */
		setenv("ASAN_OPTIONS", "detect_leaks=0:verify_asan_link_order=0", 1);
		int null = open("/dev/null", O_WRONLY);
		dup2(null, STDOUT_FILENO);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	assert_ended_by(pid, SIGKILL);
	/* The shim fired: the complete file under its temporary name, noted, never renamed. */
	ck_assert(has_temp_file(dir, "f.txt"));
	ck_assert(!test_exists(test_path_at(dir, "f.txt")));
	ck_assert_int_ge(journal_notes(dir), 1);
}

static void killed_write_is_swept(bool no_tmpfile)
{
	char *dir = bt_mkdtemp();

	test_put_file(dir, "keep.txt", "mine\n", 0644);
	write_killed_before_rename(dir, no_tmpfile);
	open_next(dir);
	ck_assert(!has_temp_file(dir, "f.txt"));
	ck_assert(!test_has_temp_files(dir));
	ck_assert_int_eq(journal_notes(dir), 0);
	ck_assert_str_eq(test_slurp(test_path_at(dir, "keep.txt")), "mine\n");
	ck_assert_msg(nothing_left(dir, NULL), "left: %s", what_is_left(dir, NULL));
}

START_TEST(test_killed_write_is_swept)
{
	killed_write_is_swept(false);
}
END_TEST

START_TEST(test_killed_write_without_tmpfile_is_swept)
{
	killed_write_is_swept(true);
}
END_TEST

/* Starts n background loops of a shell command in ws, each with its number as $1; returns
 * once each has written its `ready$1` in the workdir. */
static void spawn_loops(sbx_workspace *ws, const char *dir, const char *loop, int n,
                        sbx_process **out)
{
	int64_t until = bt_now_ms() + LONG_WAIT_MS;

	for (int i = 0; i < n; i++) {
		char *id = bt_fmt("%d", i);
		const char *argv[] = { "/bin/sh", "-c", loop, "loop", id, NULL };
		ck_assert_int_eq(sbx_process_spawn(ws, argv, NULL, &out[i]), 0);
		free(id);
	}
	for (int i = 0; i < n; i++) {
		char *ready = bt_fmt("ready%d", i);
		while (!test_exists(test_path_at(dir, ready)) && bt_now_ms() < until)
			usleep(2000);
		ck_assert_msg(test_exists(test_path_at(dir, ready)), "loop %d did not start", i);
		free(ready);
	}
}

#define LOOPS 4

/* Processes that try to create the protected files in a loop through the close: the
 * placeholders are removed only after every process of the sandbox has been reaped, so none
 * of them could create one on the host meanwhile. */
START_TEST(test_placeholders_outlast_every_process)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *ws = bt_open_ok(dir, NULL);
	sbx_process *p[LOOPS];

	spawn_loops(ws, dir, ": > ready$1; while :; do echo x > .bashrc; echo x > .mcp.json; "
	                     "ln -s /tmp .zshrc; mkdir .profile; rm -rf .bash_profile; "
	                     "done 2>/dev/null", LOOPS, p);
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
	usleep(100 * 1000);
	for (const char *const *name = placeholders; *name; name++) {
		struct stat st;
		ck_assert_msg(lstat(test_path_at(dir, *name), &st) < 0 && errno == ENOENT,
		              "%s is in the workdir after close (mode %o)", *name, st.st_mode);
	}
	for (int i = 0; i < LOOPS; i++)
		sbx_process_free(p[i]);
}
END_TEST

static Suite *lifetimes_suite(void)
{
	Suite *s = suite_create("lifetimes");
	TCase *ttl = tcase_create("ttl"), *cli_tc, *close_tc;

	tcase_set_timeout(ttl, 300);
	if (is_docker()) {
		tcase_add_test(ttl, test_docker_detached_container_stops_itself);
		tcase_add_test(ttl, test_docker_held_container_does_not_stop);
		suite_add_tcase(s, ttl);
		return s;
	}
	cli_tc = tcase_create("cli");
	tcase_set_timeout(cli_tc, 300);
	tcase_add_test(ttl, test_detached_stops_itself_after_its_ttl);
	tcase_add_test(ttl, test_held_detached_does_not_stop);
	tcase_add_test(cli_tc, test_cli_sigint_leaves_nothing);
	tcase_add_test(cli_tc, test_cli_sigterm_leaves_nothing);
	tcase_add_test(cli_tc, test_cli_sighup_leaves_nothing);
	tcase_add_test(cli_tc, test_cli_sigterm_with_a_stalled_reader_leaves_nothing);
	tcase_add_test(cli_tc, test_cli_sigkill_leaves_nothing);
	tcase_add_test(cli_tc, test_killed_tree_is_swept_at_the_next_open);
	tcase_add_test(cli_tc, test_killed_write_is_swept);
	tcase_add_test(cli_tc, test_killed_write_without_tmpfile_is_swept);
	close_tc = tcase_create("close");
	tcase_set_timeout(close_tc, 120);
	for (int i = 0; i < 3; i++) {   /* a race: a few rounds make a wrong order show */
		tcase_add_test(close_tc, test_placeholders_outlast_every_process);
	}
	suite_add_tcase(s, ttl);
	suite_add_tcase(s, cli_tc);
	suite_add_tcase(s, close_tc);
	return s;
}

int main(void)
{
	return bt_main(lifetimes_suite);
}
