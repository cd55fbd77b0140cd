/* Where a workspace's processes are, for the checks that they end. On most backends they are
 * host processes, which the host's /proc shows (backend_support.c). gVisor (the docker
 * runtime "runsc") runs them as tasks of its own kernel, the Sentry, inside one host process
 * (runsc-sandbox, helped by runsc-gofer for the files): the host sees neither their command
 * lines nor their number, so a check that looks only at the host could never fail there.
 * These look inside the workspace too, and find the sandbox's host processes by the cgroup
 * the engine put them in. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend_support.h"
#include "support.h"

#define PROCESS_WAIT_MS 5000
/* A removed container's processes end once the engine has killed them: under load, slowly. */
#define SANDBOX_END_MS 60000

const char *bt_docker_runtime(void)
{
	static char runtime[64];
	const char *more = getenv("SBX_TEST_DOCKER_OPTIONS");
	const char *p = more && strcmp(bt_backend(), "docker") == 0 ? strstr(more, "\"runtime\":\"")
	                                                            : NULL;
	size_t n;

	if (!p)
		return NULL;
	p += strlen("\"runtime\":\"");
	n = strcspn(p, "\"");
	snprintf(runtime, sizeof runtime, "%.*s", (int)(n < sizeof runtime ? n : 0), p);
	return runtime[0] ? runtime : NULL;
}

bool bt_processes_hidden(void)
{
	const char *runtime = bt_docker_runtime();

	return runtime && strcmp(runtime, "runsc") == 0;
}

/* Looks through the workspace's own /proc for a command line holding the marker. The marker
 * travels in the environment, and the shell compares in a builtin, so that no process of
 * the search carries it in its own command line. */
static bool exists_inside(sbx_workspace *ws, const char *mark)
{
	const char *env[] = { bt_tmp("SBX_MARK=%s", mark), NULL };
	sbx_exec_opts o = { .size = sizeof o, .env = env, .timeout_ms = 60000 };
	sbx_result *res = bt_shell(ws, "for f in /proc/[0-9]*/cmdline; do "
	                               "case \"$(tr '\\0' ' ' < \"$f\" 2>/dev/null)\" in "
	                               "*\"$SBX_MARK\"*) echo found; break;; esac; done; echo looked",
	                           &o);
	const char *out = sbx_result_stdout(res, NULL);
	bool found;

	ck_assert_msg(strstr(out, "looked\n"), "the search for %s inside did not finish: %s", mark,
	              sbx_result_stderr(res, NULL));
	found = strstr(out, "found\n") != NULL;
	sbx_result_free(res);
	return found;
}

bool bt_ws_process_exists(sbx_workspace *ws, const char *mark)
{
	if (test_process_exists(mark))
		return true;
	return bt_processes_hidden() && exists_inside(ws, mark);
}

bool bt_ws_wait_for_process(sbx_workspace *ws, const char *mark, bool present)
{
	int64_t deadline = bt_now_ms() + PROCESS_WAIT_MS;

	for (;;) {
		if (bt_ws_process_exists(ws, mark) == present)
			return true;
		if (bt_now_ms() > deadline)
			return false;
		usleep(bt_processes_hidden() ? 50000 : 10000);
	}
}

bool bt_ws_orphans_escape(sbx_workspace *ws)
{
	sbx_result *res;
	bool escape;

	if (!bt_processes_hidden())
		return false;   /* a Linux kernel grants PR_SET_CHILD_SUBREAPER to anyone */
	bt_install_program(ws, "SBX_TEST_PROBE", ".sbx-probe-subreaper");
	res = bt_shell(ws, "./.sbx-probe-subreaper subreaper; rm -f .sbx-probe-subreaper", NULL);
	ck_assert_msg(strstr(sbx_result_stdout(res, NULL), "subreaper "), "sbx-probe: %s",
	              sbx_result_stderr(res, NULL));
	escape = strstr(sbx_result_stdout(res, NULL), "subreaper EINVAL\n") != NULL;
	sbx_result_free(res);
	return escape;
}

/* ---- the sandbox's host processes ---------------------------------------------------------- */

static char *read_small(const char *pid, const char *name)
{
	char path[300], buf[16384];
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%s/%s", pid, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return strdup(buf);
}

/* The process's cgroup of the pids controller (v1) or its unified one (v2), or NULL. */
static char *cgroup_of(const char *pid)
{
	char *text = read_small(pid, "cgroup"), *line, *save = NULL, *found = NULL;

	for (line = text ? strtok_r(text, "\n", &save) : NULL; line && !found;
	     line = strtok_r(NULL, "\n", &save)) {
		char *v1 = strstr(line, ":pids:");

		if (v1)
			found = strdup(v1 + strlen(":pids:"));
		else if (!strncmp(line, "0::", 3))
			found = strdup(line + 3);
	}
	free(text);
	return found;
}

static bool mounts_mention(const char *pid, const char *name)
{
	char *mounts = read_small(pid, "mountinfo");
	bool found = mounts && strstr(mounts, name);

	free(mounts);
	return found;
}

struct sandbox_scan {
	const char *name;             /* the workdir's last component */
	char *cgroups[8];             /* of the processes that mount it (hidden runtimes) */
	size_t n_cgroups;
};

static bool in_sandbox(const char *pid, struct sandbox_scan *scan, bool by_cgroup)
{
	char *cg;
	bool found = false;

	if (!by_cgroup)
		return mounts_mention(pid, scan->name);
	if (!(cg = cgroup_of(pid)))
		return false;
	for (size_t i = 0; i < scan->n_cgroups && !found; i++)
		found = !strcmp(cg, scan->cgroups[i]);
	free(cg);
	return found;
}

/* Calls fn for every host process but this one that belongs to the sandbox. */
static void for_each_sandbox_pid(struct sandbox_scan *scan, bool by_cgroup,
                                 void (*fn)(const char *pid, void *arg), void *arg)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && atoi(e->d_name) != getpid() &&
		    in_sandbox(e->d_name, scan, by_cgroup))
			fn(e->d_name, arg);
	closedir(d);
}

static void note_cgroup(const char *pid, void *arg)
{
	struct sandbox_scan *scan = arg;
	char *cg = cgroup_of(pid);

	/* The root cgroup is everyone's: it says nothing about a container. */
	if (!cg || !strcmp(cg, "/") || scan->n_cgroups == sizeof scan->cgroups / sizeof *scan->cgroups) {
		free(cg);
		return;
	}
	for (size_t i = 0; i < scan->n_cgroups; i++)
		if (!strcmp(scan->cgroups[i], cg)) {
			free(cg);
			return;
		}
	scan->cgroups[scan->n_cgroups++] = cg;
}

struct pid_list {
	int *pids;
	int n, max;
};

static void take_pid(const char *pid, void *arg)
{
	struct pid_list *l = arg;

	if (l->n < l->max)
		l->pids[l->n++] = atoi(pid);
}

int bt_sandbox_pids(const char *host_dir, int *pids, int max)
{
	const char *slash = strrchr(host_dir, '/');
	struct sandbox_scan scan = { .name = slash ? slash + 1 : host_dir };
	struct pid_list list = { .pids = pids, .max = max };
	bool hidden = bt_processes_hidden();

	/* gVisor's gofer mounts the workdir; the Sentry, which runs every task, does not, but
	 * shares the container's cgroup with it. */
	if (hidden)
		for_each_sandbox_pid(&scan, false, note_cgroup, &scan);
	for_each_sandbox_pid(&scan, hidden, take_pid, &list);
	for (size_t i = 0; i < scan.n_cgroups; i++)
		free(scan.cgroups[i]);
	/* The gofer and the Sentry at least: fewer means the search is blind here (not root?). */
	ck_assert_msg(!hidden || list.n >= 2, "found %d host process(es) of the gVisor sandbox of "
	              "%s; expected its runsc-gofer and runsc-sandbox", list.n, host_dir);
	return list.n;
}

int bt_sandbox_pidfds(const char *host_dir, int *fds, int max)
{
	int pids[64], n = bt_sandbox_pids(host_dir, pids, max < 64 ? max : 64), got = 0;

	/* One that ended between the two looks is simply not waited for. */
	for (int i = 0; i < n; i++)
		if ((fds[got] = (int)syscall(SYS_pidfd_open, pids[i], 0)) >= 0)
			got++;
	return got;
}

int bt_wait_pidfds_ended(int *fds, int n)
{
	int64_t deadline = bt_now_ms() + SANDBOX_END_MS;
	int running = n;

	while (running > 0) {
		struct pollfd p = { .events = POLLIN };

		running = 0;
		for (int i = 0; i < n; i++) {
			p.fd = fds[i];
			running += poll(&p, 1, 0) == 0;
		}
		if (running == 0 || bt_now_ms() > deadline)
			break;
		usleep(20000);
	}
	for (int i = 0; i < n; i++)
		close(fds[i]);
	return running;
}
