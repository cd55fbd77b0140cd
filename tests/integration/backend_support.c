/* Helpers for the test programs that run one suite on the backend SBX_TEST_BACKEND names. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend_support.h"
#include "support.h"

#define PROCESS_WAIT_MS 5000

const char *bt_backend(void)
{
	const char *b = getenv("SBX_TEST_BACKEND");

	return b && *b ? b : "local";
}

static char *run_dir;

void bt_begin_run(void)
{
	run_dir = test_mkdtemp();
}

/* SBX_TEST_REQUIRE: a comma-separated list of backends CI expects to work; for them a
 * backend that cannot work is a failure, not a skip. */
bool bt_backend_required(void)
{
	const char *req = getenv("SBX_TEST_REQUIRE");
	size_t n = strlen(bt_backend());

	for (const char *p = req; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] ? 1 : 0))
		if (strcspn(p, ",") == n && !strncmp(p, bt_backend(), n))
			return true;
	return false;
}

int bt_main(Suite *(*make_suite)(void))
{
	int r;

	test_private_state_home();   /* the probe opens a workspace already */
	if (!bt_backend_usable())
		return bt_backend_required() ? 1 : BT_EXIT_SKIP;
	bt_begin_run();
	r = test_run_suite(make_suite());
	bt_end_run();
	return r;
}

void bt_end_run(void)
{
	if (run_dir)
		test_rm_rf(run_dir);
	free(run_dir);
	run_dir = NULL;
}

char *bt_mkdtemp(void)
{
	/* Static storage: a forked test that ends by a failed check never frees anything, and
	 * the sanitizer build counts what a passing one leaves. */
	static char dirs[16][PATH_MAX];
	static size_t n;
	char *dir = dirs[n];

	ck_assert_msg(run_dir, "bt_begin_run was not called");
	ck_assert_uint_lt(n, sizeof dirs / sizeof dirs[0]);
	ck_assert_int_lt(snprintf(dir, PATH_MAX, "%s/ws-XXXXXX", run_dir), PATH_MAX);
	ck_assert_msg(mkdtemp(dir), "mkdtemp %s: %s", dir, strerror(errno));
	/* A docker workspace's commands run as its workdir's owner, or nobody when that is root
	 * (docker.c): give the directory to nobody so that commands can write it. */
	if (!strcmp(bt_backend(), "docker") && geteuid() == 0)
		ck_assert_msg(chown(dir, BT_DOCKER_UID, BT_DOCKER_UID) == 0, "chown %s: %s", dir,
		              strerror(errno));
	n++;
	return dir;
}

char *bt_fmt(const char *format, ...)
{
	va_list ap;
	char *s = NULL;
	int n;

	va_start(ap, format);
	n = vasprintf(&s, format, ap);
	va_end(ap);
	ck_assert_int_ge(n, 0);
	return s;
}

const char *bt_tmp(const char *format, ...)
{
	static char bufs[8][8192];
	static int next;
	char *b = bufs[next++ % 8];
	va_list ap;

	va_start(ap, format);
	vsnprintf(b, sizeof bufs[0], format, ap);
	va_end(ap);
	return b;
}

const char *bt_docker_image(void)
{
	const char *image = getenv("SBX_TEST_DOCKER_IMAGE");

	return image && *image ? image : "agentsbx-test:busybox";
}

/* The options a backend cannot open without (docker: the test image), unless the test gives
 * its own object for the backend. */
static const char *bt_backend_options(const char *extra)
{
	static _Thread_local char docker[1024];   /* bt_open runs on several threads */

	if (strcmp(bt_backend(), "docker") != 0 || (extra && strstr(extra, "\"docker\"")))
		return "";
	/* SBX_TEST_DOCKER_OPTIONS: more members, to run a suite on another of the backend's
	 * paths ("exec":"api", say). */
	const char *more = getenv("SBX_TEST_DOCKER_OPTIONS");

	snprintf(docker, sizeof docker, ",\"docker\":{\"image\":\"%s\"%s%s}", bt_docker_image(),
	         more && *more ? "," : "", more && *more ? more : "");
	return docker;
}

/* Whether a docker workspace opened with extra keeps its files in a volume. */
static bool volume_workspace(const char *extra)
{
	const char *more = getenv("SBX_TEST_DOCKER_OPTIONS");

	if (strcmp(bt_backend(), "docker") != 0)
		return false;
	if (extra && strstr(extra, "\"docker\""))
		return strstr(extra, "\"volume\"") != NULL;
	return more && strstr(more, "\"volume\"");
}

bool bt_host_files(void)
{
	return !volume_workspace(NULL);
}

/* A volume workspace takes no workdir: the test's directory becomes its id instead
 * ("bt-<run dir>-<dir>", the last two components), so that reopening the same directory
 * means the same workspace. */
static const char *workdir_member(const char *workdir, const char *extra)
{
	static _Thread_local char member[PATH_MAX + 32];   /* likewise */
	const char *base, *prev;
	char *c;

	if (!workdir)
		return "";
	if (!volume_workspace(extra)) {
		snprintf(member, sizeof member, ",\"workdir\":\"%s\"", workdir);
		return member;
	}
	if (extra && strstr(extra, "\"id\""))
		return "";
	base = strrchr(workdir, '/');
	for (prev = base; prev && prev > workdir && prev[-1] != '/'; prev--)
		;
	snprintf(member, sizeof member, ",\"id\":\"bt-%.*s-%s\"",
	         base && prev ? (int)(base - prev) : 0, prev ? prev : "", base ? base + 1 : workdir);
	for (c = member + strlen(",\"id\":\""); *c && *c != '"'; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
		      *c == '-' || *c == '_' || *c == '.'))
			*c = '-';
	return member;
}

int bt_open(const char *workdir, const char *extra, sbx_workspace **out)
{
	char *cfg = NULL;
	int r;

	*out = NULL;
	if (asprintf(&cfg, "{\"backend\":\"%s\"%s%s%s%s}", bt_backend(),
	             workdir_member(workdir, extra), extra ? "," : "", extra ? extra : "",
	             bt_backend_options(extra)) < 0)
		return -SBX_ENOMEM;
	r = sbx_workspace_open(cfg, out);
	free(cfg);
	return r;
}

sbx_workspace *bt_open_ok(const char *workdir, const char *extra)
{
	sbx_workspace *w = NULL;
	int r = bt_open(workdir, extra, &w);

	ck_assert_msg(r == 0, "open a %s workspace (%s): %d %s", bt_backend(),
	              extra ? extra : "no options", r, sbx_last_error());
	return w;
}

bool bt_backend_usable(void)
{
	sbx_workspace *w = NULL;
	int r = bt_open(NULL, NULL, &w);

	if (r == -SBX_EBACKEND) {
		fprintf(stderr, "%s: backend %s cannot work on this host: %s\n",
		        bt_backend_required() ? "FAIL (SBX_TEST_REQUIRE names it)" : "SKIP",
		        bt_backend(), sbx_last_error());
		return false;
	}
	if (r < 0) {
		/* Not a skip: let the tests fail and show it. */
		fprintf(stderr, "warning: backend %s: open failed: %d %s\n", bt_backend(), r,
		        sbx_last_error());
		return true;
	}
	sbx_workspace_close(w);
	return true;
}

char *bt_inside(sbx_workspace *ws, const char *rel)
{
	return bt_fmt("%s/%s", sbx_workspace_root(ws), rel);
}

const char *bt_marker(void)
{
	static char buf[8][64];
	static unsigned n;
	char *m = buf[n % 8];

	snprintf(m, sizeof buf[0], "1000.%07d%04u", (int)getpid(), ++n);
	return m;
}

const char *const *bt_marker_env(const char *m1, const char *m2, const char *m3, const char *m4)
{
	static char text[4][64];
	static const char *env[5];
	const char *marks[4] = { m1, m2, m3, m4 };
	size_t n = 0;

	for (; n < 4 && marks[n]; n++) {
		snprintf(text[n], sizeof text[n], "M%zu=%s", n + 1, marks[n]);
		env[n] = text[n];
	}
	env[n] = NULL;
	return env;
}

int64_t bt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool bt_wait_for_process(const char *mark, bool present)
{
	int64_t deadline = bt_now_ms() + PROCESS_WAIT_MS;

	for (;;) {
		if (test_process_exists(mark) == present)
			return true;
		if (bt_now_ms() > deadline)
			return false;
		usleep(10000);
	}
}

/* The parent pid in /proc/<pid>/stat: "pid (comm) state ppid ...", comm may hold anything,
 * so the fields are counted from the last ')'. */
static int parent_of(const char *pid)
{
	char path[300], buf[1024], *close_paren;
	int fd, ppid = -1;
	ssize_t n;

	snprintf(path, sizeof path, "/proc/%s/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	close_paren = strrchr(buf, ')');
	if (!close_paren || sscanf(close_paren + 1, " %*c %d", &ppid) != 1)
		return -1;
	return ppid;
}

int bt_count_children(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && parent_of(e->d_name) == getpid())
			n++;
	closedir(d);
	return n;
}

int bt_wait_for_children(int n)
{
	int64_t deadline = bt_now_ms() + 5000;
	int have;

	while ((have = bt_count_children()) != n && bt_now_ms() < deadline)
		usleep(10000);
	return have;
}

/* Calls fn(pid, arg) for every process on the host but this one; returns how many it
 * counted true. */
static int count_host_processes(bool (*fn)(const char *pid, const void *arg), const void *arg)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	char self[32];
	int n = 0;

	ck_assert_ptr_nonnull(d);
	snprintf(self, sizeof self, "%d", (int)getpid());
	while ((e = readdir(d)))
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && strcmp(e->d_name, self) != 0 &&
		    fn(e->d_name, arg))
			n++;
	closedir(d);
	return n;
}

/* Reads a /proc/<pid>/<name> file whole (NULs kept, NUL-terminated); NULL if unreadable or
 * empty. Caller frees. */
static char *read_proc_file(const char *pid, const char *name, size_t *len)
{
	char path[300];
	size_t cap = 8192, got = 0;
	char *buf = NULL;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%s/%s", pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = malloc(cap + 1);
	while (buf && (n = read(fd, buf + got, cap - got)) > 0) {
		got += (size_t)n;
		if (got == cap) {
			char *bigger = realloc(buf, 2 * cap + 1);

			if (!bigger) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = bigger;
			cap *= 2;
		}
	}
	close(fd);
	if (buf && got == 0) {
		free(buf);
		buf = NULL;
	}
	if (buf) {
		buf[got] = '\0';
		*len = got;
	}
	return buf;
}

static bool cmdline_has(const char *pid, const void *fragment)
{
	size_t len = 0;
	char *cmd = read_proc_file(pid, "cmdline", &len);
	bool found;

	if (!cmd)
		return false;
	for (size_t i = 0; i < len; i++)
		if (cmd[i] == '\0')
			cmd[i] = ' ';
	found = strstr(cmd, fragment) != NULL;
	free(cmd);
	return found;
}

bool bt_pid_cmdline_has(const char *pid, const char *fragment)
{
	return cmdline_has(pid, fragment);
}

int bt_count_processes(const char *cmdline_fragment)
{
	return count_host_processes(cmdline_has, cmdline_fragment);
}

int bt_wait_for_process_count(const char *cmdline_fragment, int n)
{
	int64_t deadline = bt_now_ms() + PROCESS_WAIT_MS;
	int have;

	while ((have = bt_count_processes(cmdline_fragment)) != n && bt_now_ms() < deadline)
		usleep(10000);
	return have;
}

static bool mounts_mention(const char *pid, const void *dir)
{
	size_t len = 0;
	char *mounts = read_proc_file(pid, "mountinfo", &len);
	bool found = mounts && strstr(mounts, dir) != NULL;

	free(mounts);
	return found;
}

int bt_count_sandbox_processes(const char *host_dir)
{
	const char *name = strrchr(host_dir, '/');

	/* By its last component: mountinfo shows the path within its file system, which lacks
	 * the mount point's prefix when /tmp is a file system of its own. */
	return count_host_processes(mounts_mention, name ? name + 1 : host_dir);
}

static bool kill_if_mounts_mention(const char *pid, const void *dir)
{
	return mounts_mention(pid, dir) && kill(atoi(pid), SIGKILL) == 0;
}

int bt_kill_sandbox_processes(const char *host_dir)
{
	const char *name = strrchr(host_dir, '/');

	return count_host_processes(kill_if_mounts_mention, name ? name + 1 : host_dir);
}

int bt_wait_for_sandbox_gone(const char *host_dir)
{
	int64_t deadline = bt_now_ms() + PROCESS_WAIT_MS;
	int left;

	while ((left = bt_count_sandbox_processes(host_dir)) > 0 && bt_now_ms() < deadline)
		usleep(10000);
	return left;
}

sbx_result *bt_shell(sbx_workspace *ws, const char *cmd, const sbx_exec_opts *opts)
{
	sbx_result *res = NULL;
	int r = sbx_exec_shell(ws, cmd, opts, &res);

	ck_assert_msg(r == 0, "exec %s: %d %s", cmd, r, sbx_last_error());
	return res;
}

sbx_result *bt_argv(sbx_workspace *ws, const char *const *argv, const sbx_exec_opts *opts)
{
	sbx_result *res = NULL;
	int r = sbx_exec(ws, argv, opts, &res);

	ck_assert_msg(r == 0, "exec %s: %d %s", argv[0], r, sbx_last_error());
	return res;
}

char *bt_shell_out(sbx_workspace *ws, const char *cmd)
{
	sbx_result *res = bt_shell(ws, cmd, NULL);
	char *out;

	ck_assert_msg(sbx_result_exit_code(res) == 0, "`%s` exited %d (signal %d): %s", cmd,
	              sbx_result_exit_code(res), sbx_result_signal(res),
	              sbx_result_stderr(res, NULL));
	out = strdup(sbx_result_stdout(res, NULL));
	ck_assert_ptr_nonnull(out);
	sbx_result_free(res);
	return out;
}

void bt_put(sbx_workspace *ws, const char *rel, const char *text, unsigned mode)
{
	int r = sbx_file_write(ws, rel, text, strlen(text), mode, SBX_WRITE_MKDIRS);

	ck_assert_msg(r == 0, "write %s: %d %s", rel, r, sbx_last_error());
}

long bt_memory_kb(bool reset_peak)
{
	static bool peak_resettable;
	char line[256];
	long kb = -1;
	FILE *f;

	if (reset_peak) {
		f = fopen("/proc/self/clear_refs", "w");
		peak_resettable = false;
		if (f) {
			bool wrote = fputs("5", f) >= 0;

			peak_resettable = fclose(f) == 0 && wrote;
		}
	}
	f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, peak_resettable ? "VmHWM:" : "VmRSS:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

void bt_install_program(sbx_workspace *ws, const char *env_name, const char *rel)
{
	const char *path = getenv(env_name);
	char *data = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd;

	ck_assert_msg(path && *path, "%s is not set (run through meson test)", env_name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	do {
		if (len == cap) {
			cap = cap ? 2 * cap : 1 << 16;
			data = realloc(data, cap);
			ck_assert_ptr_nonnull(data);
		}
		n = read(fd, data + len, cap - len);
		if (n > 0)
			len += (size_t)n;
	} while (n > 0);
	close(fd);
	ck_assert_int_eq(sbx_file_write(ws, rel, data, len, 0755, 0), 0);
	free(data);
}

bool bt_tool_ok(const char *res)
{
	return strncmp(res, "{\"ok\":true,", 11) == 0;
}

char *bt_string_member(const char *res, const char *key)
{
	char pat[64];
	const char *p;
	size_t n = 0, cap;
	char *out;

	snprintf(pat, sizeof pat, "\"%s\":\"", key);
	p = strstr(res, pat);
	ck_assert_msg(p, "no string member %s in %.300s", key, res);
	p += strlen(pat);
	cap = strlen(p) + 1;
	out = malloc(cap);
	ck_assert_ptr_nonnull(out);
	for (; *p && *p != '"'; p++) {
		if (*p != '\\') {
			out[n++] = *p;
			continue;
		}
		switch (*++p) {
		case 'n': out[n++] = '\n'; break;
		case 't': out[n++] = '\t'; break;
		case 'r': out[n++] = '\r'; break;
		case 'b': out[n++] = '\b'; break;
		case 'f': out[n++] = '\f'; break;
		case 'u': {
			unsigned cp = (unsigned)strtoul((char[]){ p[1], p[2], p[3], p[4], 0 }, NULL, 16);
			if (cp < 0x80) {
				out[n++] = (char)cp;
			} else if (cp < 0x800) {
				out[n++] = (char)(0xC0 | (cp >> 6));
				out[n++] = (char)(0x80 | (cp & 0x3F));
			} else {
				out[n++] = (char)(0xE0 | (cp >> 12));
				out[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
				out[n++] = (char)(0x80 | (cp & 0x3F));
			}
			p += 4;
			break;
		}
		default: out[n++] = *p;
		}
	}
	out[n] = '\0';
	return out;
}

void bt_open_case_workspace(char **workdir, sbx_workspace **ws)
{
	*workdir = bt_mkdtemp();
	*ws = bt_open_ok(*workdir, NULL);
}

void bt_close_case_workspace(sbx_workspace **ws)
{
	sbx_workspace_close(*ws);
	*ws = NULL;
}
