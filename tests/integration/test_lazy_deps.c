/* Pay only for what you open: the libraries only some features need (libcurl, libarchive,
 * libyaml; libcrypto, which the library no longer uses at all) are not mapped by a process
 * that opens a workspace, runs commands, uses the file tools and the audit log and closes;
 * a skill archive then loads libarchive and libyaml and a remote MCP server libcurl, and
 * they work (libcrypto comes with libcurl, its TLS). As root, with libcurl and libarchive made unloadable in a private mount
 * namespace, those features fail with an error naming the library, and the process goes on
 * without aborting or leaking a descriptor.
 *
 * Each scenario runs in a child of its own, so that it starts with what the library maps
 * at load and nothing an earlier case loaded (whether or not Check forks). A child reports
 * the first expectation that failed through a pipe. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "integration/backend_support.h"
#include "support.h"

/* What each scenario may or must not find mapped, by the start of the file name. */
static const char *const optional_libs[] = { "libcurl.so", "libarchive.so", "libyaml-0.so",
                                             "libcrypto.so" };

static char failure[1024];

__attribute__((format(printf, 1, 2))) static bool flunk(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(failure, sizeof failure, fmt, ap);
	va_end(ap);
	return false;
}

#define EXPECT(cond, ...)                                                                  \
	do {                                                                               \
		if (!(cond))                                                               \
			return flunk(__VA_ARGS__);                                          \
	} while (0)

/* Whether a file whose name starts with lib is mapped into this process. */
static bool mapped(const char *lib)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096];
	bool found = false;

	ck_assert_ptr_nonnull(f);
	while (!found && fgets(line, sizeof line, f)) {
		char *slash = strrchr(line, '/');
		found = slash && strncmp(slash + 1, lib, strlen(lib)) == 0;
	}
	fclose(f);
	return found;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Runs scenario in a child and fails the case with its message if it failed or died. */
static void run_in_child(bool (*scenario)(void))
{
	int p[2];
	char msg[sizeof failure] = "";
	ssize_t n;
	int status;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(p[0]);
		bool ok = scenario();
		if (!ok && write(p[1], failure, strlen(failure)) < 0)
			_exit(3);
		_exit(ok ? 0 : 1);
	}
	close(p[1]);
	n = read(p[0], msg, sizeof msg - 1);
	close(p[0]);
	msg[n > 0 ? n : 0] = '\0';
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "the scenario died of signal %d", WTERMSIG(status));
	ck_assert_msg(WEXITSTATUS(status) == 0, "%s", msg[0] ? msg : "the scenario failed");
}

/* ---- the fixtures: a skill archive, an HTTP server --------------------------------------- */

static char *skill_archive(size_t *len)
{
	char *src = bt_mkdtemp(), *file = bt_fmt("%s/skill.tar.gz", src);
	char *cmd = bt_fmt("tar -C '%s/s' -czf '%s' .", src, file);

	char *dir = bt_fmt("%s/s", src);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	free(dir);
	test_put_file(src, "s/SKILL.md", "---\nname: lazy\ndescription: Loaded lazily.\n---\n"
	              "# lazy\n", 0644);
	test_put_file(src, "s/run.sh", "#!/bin/sh\necho ran\n", 0755);
	ck_assert_int_eq(system(cmd), 0);
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	struct stat st;
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	char *data = malloc((size_t)st.st_size);
	ck_assert_ptr_nonnull(data);
	ck_assert_int_eq(read(fd, data, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	free(cmd);
	free(file);
	return data;
}

/* Answers one request with 418 and keeps its request line. */
struct teapot {
	int listen_fd;
	int port;
	char request_line[256];
};

static void *serve_one(void *arg)
{
	struct teapot *t = arg;
	char buf[8192];
	size_t have = 0;
	int fd = accept4(t->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	static const char reply[] = "HTTP/1.1 418 I'm a teapot\r\nContent-Length: 0\r\n"
	                            "Connection: close\r\n\r\n";

	if (fd < 0)
		return NULL;
	while (have < sizeof buf - 1) {
		ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	buf[have] = '\0';
	sscanf(buf, "%255[^\r\n]", t->request_line);
	if (write(fd, reply, sizeof reply - 1) < 0)
		t->request_line[0] = '\0';
	close(fd);
	return NULL;
}

static void teapot_start(struct teapot *t, pthread_t *th)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof sa;

	memset(t, 0, sizeof *t);
	t->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(t->listen_fd, 0);
	ck_assert_int_eq(bind(t->listen_fd, (struct sockaddr *)&sa, sizeof sa), 0);
	ck_assert_int_eq(listen(t->listen_fd, 4), 0);
	ck_assert_int_eq(getsockname(t->listen_fd, (struct sockaddr *)&sa, &len), 0);
	t->port = ntohs(sa.sin_port);
	ck_assert_int_eq(pthread_create(th, NULL, serve_one, t), 0);
}

static const char *teapot_config(const struct teapot *t)
{
	return bt_tmp("{\"type\":\"http\",\"url\":\"http://127.0.0.1:%d/mcp\"}", t->port);
}

/* A workspace that may reach the server: an allowlist naming it, or the host's network
 * where the backend has no allowlist. */
static int open_reaching(const struct teapot *t, sbx_workspace **ws)
{
	int r = bt_open(bt_mkdtemp(), bt_tmp("\"network\":{\"mode\":\"allowlist\",\"allow\":"
	                                     "[\"127.0.0.1:%d\"]}", t->port), ws);

	if (r == -SBX_ECONFIG)
		r = bt_open(bt_mkdtemp(), "\"network\":{\"mode\":\"host\"}", ws);
	return r;
}

/* ---- the ordinary work maps none of them ------------------------------------------------ */

static bool none_mapped(const char *when)
{
	for (size_t i = 0; i < sizeof optional_libs / sizeof optional_libs[0]; i++)
		EXPECT(!mapped(optional_libs[i]), "%s is mapped %s", optional_libs[i], when);
	return true;
}

static bool tool_ok(sbx_workspace *ws, const char *tool, const char *args, const char *want)
{
	char *res = NULL;
	int r = sbx_tool_call(ws, tool, args, &res);
	bool ok = r == 0 && bt_tool_ok(res) && (!want || strstr(res, want));

	if (!ok)
		flunk("%s %s: %d %s %s", tool, args, r, sbx_last_error(), res ? res : "");
	sbx_free(res);
	return ok;
}

static bool ordinary_work(void)
{
	const char *argv[] = { "sh", "-c", "echo hi > made.txt", NULL };
	sbx_workspace *ws = NULL;
	sbx_result *res = NULL;
	int r;

	if (!none_mapped("once the library is loaded"))
		return false;
	EXPECT((r = bt_open(bt_mkdtemp(), NULL, &ws)) == 0, "open: %d %s", r, sbx_last_error());
	EXPECT((r = sbx_exec(ws, argv, NULL, &res)) == 0 && sbx_result_exit_code(res) == 0,
	       "exec: %d %s", r, sbx_last_error());
	sbx_result_free(res);
	if (!tool_ok(ws, "Write", "{\"file_path\":\"w.txt\",\"content\":\"written\\n\"}", NULL) ||
	    !tool_ok(ws, "Read", "{\"file_path\":\"made.txt\"}", "hi") ||
	    !tool_ok(ws, "Read", "{\"file_path\":\"w.txt\"}", "written") ||
	    !tool_ok(ws, "Edit", "{\"file_path\":\"w.txt\",\"old_string\":\"written\","
	             "\"new_string\":\"edited\"}", NULL) ||
	    !tool_ok(ws, "Glob", "{\"pattern\":\"*.txt\"}", "w.txt") ||
	    !tool_ok(ws, "Grep", "{\"pattern\":\"edit\"}", "w.txt"))
		return false;
	const char *log = test_slurp(sbx_audit_path(ws)); /* static storage */
	EXPECT(log && strstr(log, "\"tool\":\"Grep\""), "the audit log lacks the Grep call");
	EXPECT(sbx_workspace_close(ws) == 0, "close: %s", sbx_last_error());
	return none_mapped("after open, exec, Write, Read, Edit, Glob, Grep, the audit log and "
	                   "close");
}

START_TEST(ordinary_work_maps_none_of_the_optional_libraries)
{
	run_in_child(ordinary_work);
}
END_TEST

/* ---- the features that need them load them, and they work ------------------------------- */

static bool features_load_their_libraries(void)
{
	sbx_workspace *ws = NULL;
	struct teapot t;
	pthread_t th;
	size_t len;
	char *data = skill_archive(&len), *name = NULL, *json = NULL;
	int r;

	EXPECT((r = bt_open(bt_mkdtemp(), NULL, &ws)) == 0, "open: %d %s", r, sbx_last_error());
	EXPECT((r = sbx_skill_add_archive(ws, data, len, "tar.gz", &name)) == 0,
	       "skill archive: %d %s", r, sbx_last_error());
	EXPECT(!strcmp(name, "lazy"), "the skill is called %s", name);
	EXPECT(mapped("libarchive.so") && mapped("libyaml-0.so"),
	       "a skill archive was read without libarchive and libyaml mapped");
	EXPECT(!mapped("libcurl.so") && !mapped("libcrypto.so"),
	       "libcurl or libcrypto is mapped before anything needed it");
	sbx_free(name);
	free(data);
	sbx_workspace_close(ws);

	teapot_start(&t, &th);
	EXPECT((r = open_reaching(&t, &ws)) == 0, "open: %d %s", r, sbx_last_error());
	EXPECT((r = sbx_mcp_add(ws, NULL, NULL, "teapot", teapot_config(&t))) == 0,
	       "mcp add: %d %s", r, sbx_last_error());
	EXPECT(mapped("libcurl.so"), "a remote MCP server's URL was read without libcurl");
	r = sbx_mcp_tools(ws, NULL, NULL, "teapot", &json);
	pthread_join(th, NULL);
	close(t.listen_fd);
	EXPECT(r < 0 && strstr(sbx_last_error(), "418"),
	       "the server's 418 did not come back through libcurl: %d %s", r, sbx_last_error());
	EXPECT(!strcmp(t.request_line, "POST /mcp HTTP/1.1"), "the server saw '%s'",
	       t.request_line);
	sbx_workspace_close(ws);
	return true;
}

START_TEST(features_that_need_them_load_them_and_work)
{
	run_in_child(features_load_their_libraries);
}
END_TEST

/* ---- a library that cannot be loaded ---------------------------------------------------- */

/* Binds an empty file over the library the loader would open for soname. */
static bool hide_library(const char *soname, const char *empty)
{
	char path[PATH_MAX];
	const char *const dirs[] = { "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
	                             "/lib64", "/usr/lib64", "/lib", "/usr/lib" };

	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		char *at = bt_fmt("%s/%s", dirs[i], soname);
		bool found = realpath(at, path) != NULL;
		free(at);
		if (found) {
			EXPECT(mount(empty, path, NULL, MS_BIND, NULL) == 0, "bind over %s: %s", path,
			       strerror(errno));
			return true;
		}
	}
	return flunk("%s is not in any of the usual folders", soname);
}

static bool missing_libraries_fail_cleanly(void)
{
	char *dir = bt_mkdtemp(), *empty = bt_fmt("%s/empty.so", dir);
	sbx_workspace *ws = NULL;
	struct teapot t;
	pthread_t th;
	size_t len;
	char *data = skill_archive(&len), *name = NULL;
	int r, fds;

	test_put_file(dir, "empty.so", "", 0644);
	EXPECT(unshare(CLONE_NEWNS) == 0, "unshare: %s", strerror(errno));
	EXPECT(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0, "private: %s",
	       strerror(errno));
	if (!hide_library("libarchive.so.13", empty) || !hide_library("libcurl.so.4", empty))
		return false;

	teapot_start(&t, &th);
	EXPECT((r = open_reaching(&t, &ws)) == 0, "open: %d %s", r, sbx_last_error());
	fds = count_fds();
	for (int i = 0; i < 2; i++) { /* the second time from the remembered failure */
		r = sbx_skill_add_archive(ws, data, len, "tar.gz", &name);
		EXPECT(r < 0 && strstr(sbx_last_error(), "libarchive.so.13 could not be loaded, "
		                       "which skill archives and the docker backend's file "
		                       "transfers need: "),
		       "skill archive without libarchive: %d %s", r, sbx_last_error());
		r = sbx_mcp_add(ws, NULL, NULL, "teapot", teapot_config(&t));
		EXPECT(r < 0 && strstr(sbx_last_error(), "libcurl.so.4 could not be loaded, which "
		                       "the docker backend and remote MCP servers need: "),
		       "remote MCP server without libcurl: %d %s", r, sbx_last_error());
	}
	EXPECT(count_fds() == fds, "%d descriptors before the failures, %d after", fds,
	       count_fds());
	EXPECT(!mapped("libcurl.so") && !mapped("libarchive.so"), "a hidden library is mapped");
	/* The workspace still works. */
	EXPECT(tool_ok(ws, "Write", "{\"file_path\":\"w.txt\",\"content\":\"still\\n\"}", NULL),
	       "%s", failure);
	EXPECT(sbx_workspace_close(ws) == 0, "close: %s", sbx_last_error());
	shutdown(t.listen_fd, SHUT_RDWR);
	pthread_join(th, NULL);
	close(t.listen_fd);
	EXPECT(!t.request_line[0], "a request reached the server: %s", t.request_line);
	free(data);
	return true;
}

START_TEST(a_library_that_cannot_be_loaded_is_a_clean_error)
{
	TEST_NEED(TEST_CAP_ROOT, geteuid() == 0, "binds over the host's libraries in a private "
	          "mount namespace");
	run_in_child(missing_libraries_fail_cleanly);
}
END_TEST

static Suite *lazy_suite(void)
{
	Suite *s = suite_create("lazy-deps");
	TCase *tc = tcase_create("lazy");
	TCase *root = tcase_create("missing");

	tcase_set_timeout(tc, 120);
	tcase_set_timeout(root, 120);
	tcase_set_tags(root, "root");
	tcase_add_test(tc, ordinary_work_maps_none_of_the_optional_libraries);
	tcase_add_test(tc, features_that_need_them_load_them_and_work);
	tcase_add_test(root, a_library_that_cannot_be_loaded_is_a_clean_error);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, root);
	return s;
}

int main(void)
{
	return bt_main(lazy_suite);
}
