/* The sandbox backends' root layout and their options, with real programs (issue 17):
 *  - a normal root: writable private /var/tmp, /var/cache and /run within limits.tmp_bytes,
 *    empty /home, /root, /srv, /mnt and /var/lib, the host's /opt read-only, nothing of the
 *    host's /var;
 *  - every option of the backend's config object doing what docs/config.md says with
 *    Landlock on (the default): binds read-only and writable, rootfs, hostname,
 *    protected_paths, detached, prestart, mode.
 * Runs on ns and bwrap, as root and as an ordinary user (tests/run-all.sh). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "backend_support.h"
#include "support.h"

#define MIB (1024 * 1024)

/* The backend's config object with the members given: "\"ns\":{...}". */
static char *options(const char *members)
{
	return bt_fmt("\"%s\":{%s}", bt_backend(), members ? members : "");
}

static bool is_ns(void)
{
	return strcmp(bt_backend(), "ns") == 0;
}

/* The exit code of cmd; its stdout and stderr together in out (may be NULL). */
static int run(sbx_workspace *ws, const char *cmd, char *out, size_t len)
{
	sbx_result *res = bt_shell(ws, cmd, NULL);
	int code = sbx_result_exit_code(res);

	if (out)
		snprintf(out, len, "%s%s", sbx_result_stdout(res, NULL), sbx_result_stderr(res, NULL));
	sbx_result_free(res);
	return code;
}

static void assert_runs(sbx_workspace *ws, const char *cmd)
{
	char out[4096];
	int code = run(ws, cmd, out, sizeof out);

	ck_assert_msg(code == 0, "`%s` exited %d:\n%s", cmd, code, out);
}

static void assert_fails(sbx_workspace *ws, const char *cmd, const char *why)
{
	char out[4096];
	int code = run(ws, cmd, out, sizeof out);

	ck_assert_msg(code != 0, "`%s` succeeded (%s):\n%s", cmd, why, out);
}

/* Landlock is in force: writing a file of /proc, which every mount allows, is refused only
 * by a Landlock rule set (nothing below /proc is among its writable paths). */
static void assert_landlocked(sbx_workspace *ws)
{
	char out[4096];
	int code = run(ws, "echo x > /proc/self/comm", out, sizeof out);

	ck_assert_msg(code != 0 && strstr(out, "Permission denied"),
	              "Landlock is not in force (exit %d):\n%s", code, out);
}

/* ---- the layout -------------------------------------------------------------------------- */

/* What bubblewrap's own test suite and many others do first: a temporary file and directory
 * in /var/tmp. They are the sandbox's: nothing reaches the host's /var/tmp. */
START_TEST(test_var_tmp_takes_mktemp)
{
	sbx_workspace *ws = bt_open_ok(NULL, NULL);
	char *file = bt_shell_out(ws, "f=$(mktemp -p /var/tmp) && echo data > \"$f\" && "
	                              "cat \"$f\" >/dev/null && printf %s \"$f\"");
	char *dir = bt_shell_out(ws, "d=$(mktemp -d /var/tmp/x.XXXXXX) && touch \"$d/in\" && "
	                             "printf %s \"$d\"");

	ck_assert_msg(!strncmp(file, "/var/tmp/tmp.", 13), "mktemp -p /var/tmp gave %s", file);
	ck_assert_msg(!strncmp(dir, "/var/tmp/x.", 11), "mktemp -d gave %s", dir);
	ck_assert_msg(!test_exists(file), "%s reached the host", file);
	ck_assert_msg(!test_exists(dir), "%s reached the host", dir);
	assert_runs(ws, "[ \"$(stat -c %a /var/tmp)\" = 1777 ]");
	assert_runs(ws, "echo c > /var/cache/c && echo r > /run/r && cat /var/cache/c /run/r");
	assert_landlocked(ws);
	sbx_workspace_close(ws);
	free(file);
	free(dir);
}
END_TEST

/* Each start gets empty ones: a file left in /var/tmp or /run by one workspace is not seen by
 * the next, nor after a reset. */
START_TEST(test_writable_places_are_private)
{
	sbx_workspace *a = bt_open_ok(NULL, NULL), *b = bt_open_ok(NULL, NULL);

	assert_runs(a, "touch /var/tmp/mark-a /run/mark-a /var/cache/mark-a");
	assert_runs(b, "[ ! -e /var/tmp/mark-a ] && [ ! -e /run/mark-a ] && "
	               "[ ! -e /var/cache/mark-a ]");
	ck_assert_int_eq(sbx_workspace_reset(a), 0);
	assert_runs(a, "[ ! -e /var/tmp/mark-a ] && [ ! -e /run/mark-a ]");
	sbx_workspace_close(a);
	sbx_workspace_close(b);
}
END_TEST

/* The names in a host directory, sorted, one a line ("" when it is missing or unreadable). */
static char *host_listing(const char *path)
{
	struct dirent **names = NULL;
	int n = scandir(path, &names, NULL, alphasort);
	size_t len = 1;
	char *out;

	for (int i = 0; i < n; i++)
		len += strlen(names[i]->d_name) + 1;
	out = calloc(1, len);
	ck_assert_ptr_nonnull(out);
	for (int i = 0; i < n; i++) {
		if (strcmp(names[i]->d_name, ".") && strcmp(names[i]->d_name, ".."))
			strcat(strcat(out, names[i]->d_name), "\n");
		free(names[i]);
	}
	free(names);
	return out;
}

START_TEST(test_standard_directories_are_there)
{
	sbx_workspace *ws = bt_open_ok(NULL, NULL);
	char *home, *opt, *host_opt = host_listing("/opt");
	struct stat st;

	assert_runs(ws, "ls /home /opt /run /root /srv /mnt /var /var/lib >/dev/null");
	home = bt_shell_out(ws, "ls -A /root /srv /mnt /var/lib | grep -v '^/\\|^$' || true");
	ck_assert_msg(!*home, "/root, /srv, /mnt or /var/lib is not empty:\n%s", home);
	free(home);
	/* /home holds the workspace's private HOME only (state.c), nothing of the host's. */
	{
		char *user = bt_shell_out(ws, "printf %s \"${HOME#/home/}\"");

		home = bt_shell_out(ws, "ls -A /home");
		ck_assert_str_eq(home, bt_tmp("%s\n", user));
		free(user);
	}
	/* /var holds only the layout's own: none of the host's logs, spools or state. */
	free(home);
	home = bt_shell_out(ws, "ls -A /var | tr '\\n' ' '");
	ck_assert_str_eq(home, "cache lib tmp ");
	/* Read-only: no package manager or agent writes there. */
	assert_fails(ws, "touch /home/x", "/home is read-only");
	assert_fails(ws, "touch /var/lib/x", "/var/lib is read-only");
	assert_fails(ws, "mkdir /srv/x", "/srv is read-only");
	if (stat("/opt", &st) == 0) {
		opt = bt_shell_out(ws, "ls -A /opt | LC_ALL=C sort");
		ck_assert_msg(strcmp(opt, host_opt) == 0, "/opt inside:\n%s\nthe host's:\n%s", opt,
		              host_opt);
		assert_fails(ws, "touch /opt/x", "/opt is read-only");
		free(opt);
	}
	assert_landlocked(ws);
	sbx_workspace_close(ws);
	free(home);
	free(host_opt);
}
END_TEST

/* /run, /var/tmp and /var/cache share one tmpfs of limits.tmp_bytes: 5 MiB in /var/tmp and 5
 * more in /run do not fit in 8. */
START_TEST(test_writable_places_share_the_tmp_cap)
{
	sbx_workspace *ws = bt_open_ok(NULL, "\"limits\":{\"tmp_bytes\":8388608}");
	char out[4096];
	int code;

	assert_runs(ws, "dd if=/dev/zero of=/var/tmp/a bs=1M count=5 2>/dev/null");
	code = run(ws, "dd if=/dev/zero of=/run/b bs=1M count=5", out, sizeof out);
	ck_assert_msg(code != 0 && strstr(out, "No space left"), "exit %d:\n%s", code, out);
	code = run(ws, "dd if=/dev/zero of=/var/cache/c bs=1M count=5", out, sizeof out);
	ck_assert_msg(code != 0 && strstr(out, "No space left"), "exit %d:\n%s", code, out);
	/* The tmpfs's temporary mount point is gone (under bubblewrap it was in the new /tmp). */
	assert_runs(ws, "[ ! -e /.agentsbx-layout ] && [ ! -e /tmp/.agentsbx-layout ] && "
	                "! grep -q agentsbx-layout /proc/self/mountinfo");
	/* Freed space is there again. */
	assert_runs(ws, "rm /var/tmp/a /run/b /var/cache/c && "
	                "dd if=/dev/zero of=/run/d bs=1M count=5 2>/dev/null");
	sbx_workspace_close(ws);
}
END_TEST

/* ---- the options, with Landlock on ------------------------------------------------------- */

/* A writable bind takes writes (the issue: Landlock refused them while the mount allowed
 * them), on a directory and on a single file, and they land on the host; a read-only one
 * refuses them and the host file stays as it was. */
START_TEST(test_binds_with_landlock)
{
	char *rw = bt_mkdtemp(), *ro = bt_mkdtemp(), *files = bt_mkdtemp();
	char *extra;
	sbx_workspace *ws;

	test_put_file(ro, "kept", "host\n", 0644);
	test_put_file(files, "one", "host\n", 0644);
	extra = options(bt_tmp("\"binds\":[{\"source\":\"%s\",\"dest\":\"/data\",\"writable\":true},"
	                       "{\"source\":\"%s\",\"dest\":\"/ro\"},"
	                       "{\"source\":\"%s\",\"dest\":\"/opt/agentsbx-tool\"},"
	                       "{\"source\":\"%s/one\",\"dest\":\"/srv/one\",\"writable\":true},"
	                       "{\"source\":\"%s\",\"dest\":\"/workspace/sub\",\"writable\":true}]",
	                       rw, ro, ro, files, rw));
	ws = bt_open_ok(NULL, extra);
	assert_landlocked(ws);
	assert_runs(ws, "touch /data/made && mkdir /data/dir && echo in > /data/dir/f && "
	                "rm /data/made");
	ck_assert_str_eq(test_slurp(test_path_at(rw, "dir/f")), "in\n");
	assert_runs(ws, "echo inside > /srv/one");
	ck_assert_str_eq(test_slurp(test_path_at(files, "one")), "inside\n");
	assert_runs(ws, "echo sub > /workspace/sub/s");
	ck_assert_str_eq(test_slurp(test_path_at(rw, "s")), "sub\n");
	assert_fails(ws, "touch /ro/new", "a read-only bind");
	/* Below /opt too, whose host entries sit beside it. */
	assert_runs(ws, "cat /opt/agentsbx-tool/kept");
	assert_fails(ws, "touch /opt/agentsbx-tool/new", "a read-only bind");
	assert_fails(ws, "echo x > /ro/kept", "a read-only bind");
	ck_assert_str_eq(test_slurp(test_path_at(ro, "kept")), "host\n");
	ck_assert(!test_exists(test_path_at(ro, "new")));
	sbx_workspace_close(ws);
	free(extra);
}
END_TEST

/* A writable bind into a read-only workspace is still writable; the workspace is not. */
START_TEST(test_writable_bind_in_read_only_workspace)
{
	char *rw = bt_mkdtemp(), *dir = bt_mkdtemp();
	char *own = options(bt_tmp("\"binds\":[{\"source\":\"%s\",\"dest\":\"/out\","
	                           "\"writable\":true}]", rw));
	char *extra = bt_fmt("\"mode\":\"read-only\",%s", own);
	sbx_workspace *ws = bt_open_ok(dir, extra);

	free(own);

	assert_runs(ws, "echo out > /out/o");
	ck_assert_str_eq(test_slurp(test_path_at(rw, "o")), "out\n");
	assert_fails(ws, "touch /workspace/x", "the workspace is read-only");
	sbx_workspace_close(ws);
	free(extra);
}
END_TEST

/* A rootfs of its own: a static busybox is the whole system. The layout's writable places
 * exist where the rootfs has them; the workspace and /tmp are writable under Landlock. */
START_TEST(test_rootfs_with_landlock)
{
	char *root, *extra, *out;
	sbx_workspace *ws;

	TEST_NEED(TEST_CAP_TOOLS, access("/usr/bin/busybox", X_OK) == 0, "no /usr/bin/busybox");
	/* Outside the run's folder, which only this user may enter: as root the sandbox runs as
	 * another uid, which must be able to read the rootfs. */
	root = test_mkdtemp();
	ck_assert_int_eq(chmod(root, 0755), 0);
	ck_assert_int_eq(mkdir(test_path_at(root, "bin"), 0755), 0);
	ck_assert_int_eq(mkdir(test_path_at(root, "var"), 0755), 0);
	ck_assert_int_eq(mkdir(test_path_at(root, "var/tmp"), 01777), 0);
	/* The mount points bubblewrap cannot make in a read-only root (the init makes its own). */
	for (size_t i = 0; i < 6; i++)
		ck_assert_int_eq(mkdir(test_path_at(root, ((const char *[]){ "proc", "dev", "tmp",
		                                           "workspace", "run", "home" })[i]), 0755), 0);
	ck_assert_int_eq(system(bt_tmp("cp /usr/bin/busybox %s/bin/ && for t in sh cat ls touch "
	                               "echo hostname mkdir; do ln -s busybox %s/bin/$t; done",
	                               root, root)), 0);
	/* Under bubblewrap the init runs from the rootfs's namespace: a build whose init is not
	 * static (a sanitizer build's) needs its loader and libraries there. */
	ck_assert_int_eq(system(bt_tmp("for f in $(ldd \"$SBX_HELPER_DIR/agentsbx-init\" 2>/dev/null "
	                               "| grep -o '/[^ ]*'); do mkdir -p \"%s$(dirname $f)\" && "
	                               "cp -L \"$f\" \"%s$f\" || exit 1; done", root, root)), 0);
	test_put_file(root, "marker", "the rootfs\n", 0644);
	extra = options(bt_tmp("\"rootfs\":\"%s\"", root));
	ws = bt_open_ok(NULL, extra);
	out = bt_shell_out(ws, "cat /marker");
	ck_assert_str_eq(out, "the rootfs\n");
	free(out);
	assert_runs(ws, "[ ! -e /usr ] && [ ! -e /etc/passwd ]");
	assert_runs(ws, "touch /workspace/w /tmp/t /var/tmp/v");
	assert_fails(ws, "touch /marker2", "the rootfs is read-only");
	ck_assert(!test_exists(test_path_at(root, "var/tmp/v")));
	ck_assert(!test_exists(test_path_at(root, "marker2")));
	assert_landlocked(ws);
	/* What the model is told it may write: the rootfs has /var/tmp and /run, not /var/cache,
	 * which the sandbox then does not have either. */
	char *text = NULL;
	ck_assert_int_eq(sbx_workspace_instructions(ws, &text), 0);
	ck_assert_msg(strstr(text, " /tmp,") && strstr(text, " /var/tmp") && strstr(text, " /run"),
	              "%s", text);
	ck_assert_msg(!strstr(text, "/var/cache"), "%s", text);
	sbx_free(text);
	assert_fails(ws, "[ -d /var/cache ]", "no /var/cache");
	sbx_workspace_close(ws);
	test_rm_rf(root);
	free(root);
	free(extra);
}
END_TEST

START_TEST(test_hostname_with_landlock)
{
	char *extra = options("\"hostname\":\"layout-test-host\"");
	sbx_workspace *ws = bt_open_ok(NULL, extra);
	char *out = bt_shell_out(ws, "hostname");

	ck_assert_str_eq(out, "layout-test-host\n");
	free(out);
	/* The init writes /etc/hostname where it builds /etc itself (ns's direct mode). */
	out = bt_shell_out(ws, "cat /etc/hostname 2>/dev/null || echo layout-test-host");
	ck_assert_str_eq(out, "layout-test-host\n");
	assert_landlocked(ws);
	free(out);
	sbx_workspace_close(ws);
	free(extra);
}
END_TEST

/* The list replaces the defaults: what it names is read-only (and cannot be created), the
 * rest of the workspace is writable, and .git/hooks — a default no longer listed — too. */
START_TEST(test_protected_paths_with_landlock)
{
	char *dir = bt_mkdtemp();
	char *extra = options("\"protected_paths\":[\"keep.txt\",\"guard/\",\"absent\"]");
	sbx_workspace *ws;

	test_put_file(dir, "keep.txt", "host\n", 0644);
	ck_assert_int_eq(mkdir(test_path_at(dir, "guard"), 0755), 0);
	ws = bt_open_ok(dir, extra);
	assert_landlocked(ws);
	assert_fails(ws, "echo x > keep.txt", "keep.txt is protected");
	assert_fails(ws, "touch guard/new", "guard/ is protected");
	assert_fails(ws, "echo x > absent", "absent is protected where missing too");
	assert_runs(ws, "echo free > other.txt && mkdir -p .git/hooks && touch .git/hooks/h");
	ck_assert_str_eq(test_slurp(test_path_at(dir, "keep.txt")), "host\n");
	ck_assert_str_eq(test_slurp(test_path_at(dir, "other.txt")), "free\n");
	sbx_workspace_close(ws);
	free(extra);
}
END_TEST

/* A detached sandbox outlives its opener: the next open attaches to it (its /tmp and
 * /var/tmp are as they were) and Landlock and the writable bind hold there too. Its idle TTL
 * of 1 s stops it once nobody holds it. */
START_TEST(test_detached_with_landlock)
{
	char *dir = bt_mkdtemp(), *rw = bt_mkdtemp();
	char *extra = options(bt_tmp("\"detached\":true,\"idle_ttl_s\":1,\"binds\":[{\"source\":"
	                             "\"%s\",\"dest\":\"/data\",\"writable\":true}]", rw));
	sbx_workspace *ws = bt_open_ok(dir, extra);
	char *out;

	assert_runs(ws, "echo kept > /var/tmp/mark && touch /data/first");
	sbx_workspace_close(ws);
	ck_assert_int_gt(bt_count_sandbox_processes(dir), 0);
	ws = bt_open_ok(dir, extra);
	out = bt_shell_out(ws, "cat /var/tmp/mark");
	ck_assert_str_eq(out, "kept\n");
	free(out);
	assert_runs(ws, "touch /data/second");
	ck_assert(test_exists(test_path_at(rw, "first")) && test_exists(test_path_at(rw, "second")));
	assert_landlocked(ws);
	sbx_workspace_close(ws);
	ck_assert_int_eq(bt_wait_for_sandbox_gone(dir), 0);
	free(extra);
}
END_TEST

/* ns only: with prestart (the default) the second and later of several opens in a row are
 * served by a sandbox started before its workspace was known; off, each is built at its open.
 * Either way the binds, the layout and Landlock are the same. */
START_TEST(test_prestart_with_landlock)
{
	static const char *const settings[] = { "true", "false" };

	if (!is_ns())
		return;               /* bwrap's config object has no prestart (docs/config.md) */
	for (size_t s = 0; s < 2; s++) {
		char *rw = bt_mkdtemp();
		char *extra = options(bt_tmp("\"prestart\":%s,\"binds\":[{\"source\":\"%s\","
		                             "\"dest\":\"/data\",\"writable\":true}]", settings[s], rw));

		for (int i = 0; i < 3; i++) {
			sbx_workspace *ws = bt_open_ok(NULL, extra);

			assert_runs(ws, bt_tmp("touch /data/f%d && mktemp -p /var/tmp >/dev/null", i));
			assert_landlocked(ws);
			sbx_workspace_close(ws);
			ck_assert(test_exists(test_path_at(rw, bt_tmp("f%d", i))));
		}
		free(extra);
	}
}
END_TEST

/* ns only: "mode" picks how the sandbox is made; both give the same layout, binds and
 * Landlock. A value it does not know is refused, naming the key. */
START_TEST(test_mode_with_landlock)
{
	static const char *const modes[] = { "direct", "bwrap", "auto" };

	if (!is_ns()) {
		sbx_workspace *ws = NULL;
		char *extra = options("\"mode\":\"direct\"");

		ck_assert_int_eq(bt_open(NULL, extra, &ws), -SBX_ECONFIG);
		ck_assert_msg(strstr(sbx_last_error(), "bwrap.mode"), "%s", sbx_last_error());
		free(extra);
		return;
	}
	for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
		char *rw = bt_mkdtemp();
		char *extra = options(bt_tmp("\"mode\":\"%s\",\"binds\":[{\"source\":\"%s\",\"dest\":"
		                             "\"/data\",\"writable\":true}]", modes[m], rw));
		sbx_workspace *ws = bt_open_ok(NULL, extra);

		assert_runs(ws, "touch /data/f && mktemp -d /var/tmp/x.XXXXXX >/dev/null && "
		                "ls /home /run >/dev/null");
		assert_landlocked(ws);
		sbx_workspace_close(ws);
		ck_assert(test_exists(test_path_at(rw, "f")));
		free(extra);
	}
	sbx_workspace *ws = NULL;
	char *bad = options("\"mode\":\"sideways\"");
	ck_assert_int_eq(bt_open(NULL, bad, &ws), -SBX_ECONFIG);
	ck_assert_msg(strstr(sbx_last_error(), "ns.mode"), "%s", sbx_last_error());
	free(bad);
}
END_TEST

/* What only the mounts keep read-only, Landlock or not: the root itself and the layout's
 * empty directories (bubblewrap's root is a tmpfs its sandbox's uid owns). */
static void assert_root_read_only(sbx_workspace *ws)
{
	assert_fails(ws, "touch /rootfile", "/ is read-only");
	assert_fails(ws, "mkdir /newdir", "/ is read-only");
	assert_fails(ws, "touch /home/x", "/home is read-only");
	assert_fails(ws, "touch /var/lib/x", "/var/lib is read-only");
	assert_fails(ws, "mkdir /srv/x", "/srv is read-only");
}

/* Landlock off: the same writes work, and what only Landlock refused (a /proc file) is
 * allowed: the option turns the second wall off, not the mounts. */
START_TEST(test_landlock_off)
{
	char *rw = bt_mkdtemp();
	char *extra = options(bt_tmp("\"landlock\":false,\"binds\":[{\"source\":\"%s\",\"dest\":"
	                             "\"/data\",\"writable\":true}]", rw));
	sbx_workspace *ws = bt_open_ok(NULL, extra);

	assert_runs(ws, "touch /data/f /var/tmp/v && echo x > /proc/self/comm");
	ck_assert(test_exists(test_path_at(rw, "f")));
	assert_root_read_only(ws);
	sbx_workspace_close(ws);
	free(extra);
	/* With a capped /tmp the init makes mounts of its own below bubblewrap's (quota.c), in
	 * a root it must seal itself. */
	extra = options("\"landlock\":false");
	ws = bt_open_ok(NULL, bt_tmp("\"limits\":{\"tmp_bytes\":8388608},%s", extra));
	assert_runs(ws, "touch /tmp/t /var/tmp/v");
	assert_root_read_only(ws);
	sbx_workspace_close(ws);
	free(extra);
}
END_TEST

/* ---- workdir_mount "host" -------------------------------------------------------------- */

/* A workspace whose commands see the workdir at its own host path; *host receives that path
 * (links resolved, as the library names it). */
static sbx_workspace *open_at_host_path(char *host, size_t len, const char *more)
{
	char *dir = bt_mkdtemp(), *extra;
	sbx_workspace *ws;

	ck_assert_ptr_nonnull(realpath(dir, host));
	ck_assert_uint_lt(strlen(host), len);
	extra = options(bt_tmp("\"workdir_mount\":\"host\"%s", more ? more : ""));
	ws = bt_open_ok(dir, extra);
	free(extra);
	return ws;
}

/* The root, the cwd and $PWD are the host path; the workspace's protections hold there. */
START_TEST(test_workdir_at_host_path)
{
	char host[PATH_MAX];
	sbx_workspace *ws = open_at_host_path(host, sizeof host, NULL);
	char *out = bt_shell_out(ws, "pwd; echo \"$PWD\"; /bin/pwd -P");

	ck_assert_str_eq(sbx_workspace_root(ws), host);
	ck_assert_str_eq(out, bt_tmp("%s\n%s\n%s\n", host, host, host));
	free(out);
	assert_runs(ws, "echo made > made.txt && [ -f /workspace/made.txt ]");
	ck_assert_str_eq(test_slurp(test_path_at(host, "made.txt")), "made\n");
	/* The state folder and the default protected paths are read-only at the host path too. */
	assert_fails(ws, bt_tmp("touch %s/.agentsbx/forged", host), "the state folder");
	assert_fails(ws, "echo x > .bashrc", ".bashrc is protected");
	assert_landlocked(ws);
	/* A command started in a subfolder, by either name, gets the host form. */
	ck_assert_int_eq(sbx_file_mkdir(ws, "sub", 0755), 0);
	sbx_exec_opts o = SBX_EXEC_OPTS_INIT;
	o.cwd = bt_tmp("%s/sub", host);
	sbx_result *res = bt_shell(ws, "pwd", &o);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), bt_tmp("%s/sub\n", host));
	sbx_result_free(res);
	sbx_workspace_close(ws);
}
END_TEST

/* The git guard's binds in the running sandbox (a repository a command made) hold under both
 * names of the workspace. */
START_TEST(test_git_guard_at_host_path)
{
	char host[PATH_MAX];
	sbx_workspace *ws;

	TEST_NEED(TEST_CAP_TOOLS, access("/usr/bin/git", X_OK) == 0, "no git");
	ws = open_at_host_path(host, sizeof host, NULL);
	assert_runs(ws, "git init -q sub");
	assert_fails(ws, "echo x > sub/.git/hooks/pre-commit", "hooks are read-only (host path)");
	assert_fails(ws, "echo x > /workspace/sub/.git/hooks/pre-commit",
	             "hooks are read-only (/workspace)");
	assert_fails(ws, bt_tmp("echo '[core]' >> %s/sub/.git/config", host),
	             "the config is read-only");
	ck_assert(!test_exists(test_path_at(host, "sub/.git/hooks/pre-commit")));
	sbx_workspace_close(ws);
}
END_TEST

/* What the issue hit: a virtualenv made inside names its own path in every script; with the
 * workdir at its host path it runs on the host afterwards, pip included. */
START_TEST(test_venv_made_inside_runs_on_host)
{
	char host[PATH_MAX], *out;
	sbx_workspace *ws;

	TEST_NEED(TEST_CAP_TOOLS, access("/usr/bin/python3", X_OK) == 0, "no python3");
	ws = open_at_host_path(host, sizeof host, NULL);
	assert_runs(ws, "python3 -m venv .venv && .venv/bin/pip --version >/dev/null");
	sbx_workspace_close(ws);
	out = bt_fmt("cd / && %s/.venv/bin/python -c 'import sys; print(sys.prefix)' && "
	             "%s/.venv/bin/pip --version >/dev/null && echo pip-runs", host, host);
	FILE *p = popen(out, "r");
	char line[PATH_MAX + 64] = "", second[64] = "";
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(fgets(line, sizeof line, p));
	ck_assert_ptr_nonnull(fgets(second, sizeof second, p));
	ck_assert_int_eq(pclose(p), 0);
	ck_assert_str_eq(line, bt_tmp("%s/.venv\n", host));
	ck_assert_str_eq(second, "pip-runs\n");
	free(out);
}
END_TEST

/* A script built inside that embeds $PWD (as libtool's wrappers and build trees do) works on
 * the host. */
START_TEST(test_script_with_pwd_runs_on_host)
{
	char host[PATH_MAX], cmd[PATH_MAX + 64];
	sbx_workspace *ws = open_at_host_path(host, sizeof host, NULL);
	FILE *p;
	char line[256] = "";

	assert_runs(ws, "mkdir -p lib && printf 'echo the tool ran\\n' > lib/tool.sh && "
	                "printf '#!/bin/sh\\nexec sh %s/lib/tool.sh\\n' \"$PWD\" > run.sh && "
	                "chmod +x run.sh && ./run.sh");
	sbx_workspace_close(ws);
	snprintf(cmd, sizeof cmd, "cd / && %s/run.sh", host);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(fgets(line, sizeof line, p));
	ck_assert_int_eq(pclose(p), 0);
	ck_assert_str_eq(line, "the tool ran\n");
}
END_TEST

/* The tools and the file primitives take the host path (now the root), and a relative one. */
START_TEST(test_tools_at_host_path)
{
	char host[PATH_MAX], *res = NULL;
	sbx_workspace *ws = open_at_host_path(host, sizeof host, NULL);

	ck_assert_int_eq(sbx_tool_call(ws, "Write", bt_tmp("{\"file_path\":\"%s/w.txt\","
	                 "\"content\":\"written\\n\"}", host), &res), 0);
	ck_assert_msg(bt_tool_ok(res), "%s", res);
	sbx_free(res);
	ck_assert_int_eq(sbx_tool_call(ws, "Read", "{\"file_path\":\"w.txt\"}", &res), 0);
	ck_assert_msg(bt_tool_ok(res) && strstr(res, "written"), "%s", res);
	sbx_free(res);
	ck_assert_int_eq(sbx_tool_call(ws, "Grep", bt_tmp("{\"pattern\":\"writ\",\"path\":"
	                 "\"%s\"}", host), &res), 0);
	ck_assert_msg(bt_tool_ok(res) && strstr(res, "w.txt"), "%s", res);
	sbx_free(res);
	/* The Bash tool's session starts and stays at the host path. */
	ck_assert_int_eq(sbx_tool_call(ws, "Bash", "{\"command\":\"mkdir -p d && cd d && pwd\"}",
	                               &res), 0);
	ck_assert_msg(bt_tool_ok(res) && strstr(res, bt_tmp("%s/d", host)), "%s", res);
	sbx_free(res);
	sbx_workspace_close(ws);
}
END_TEST

/* Read-only workspaces, writable binds and a capped /tmp combine with it; a value it does not
 * know is refused naming the key. */
START_TEST(test_workdir_mount_settings)
{
	char host[PATH_MAX], *rw = bt_mkdtemp();
	sbx_workspace *ws = NULL;
	char *bad = options("\"workdir_mount\":\"elsewhere\"");

	ck_assert_int_eq(bt_open(NULL, bad, &ws), -SBX_ECONFIG);
	ck_assert_msg(strstr(sbx_last_error(), bt_tmp("%s.workdir_mount", bt_backend())), "%s",
	              sbx_last_error());
	free(bad);
	ws = open_at_host_path(host, sizeof host, bt_tmp(",\"binds\":[{\"source\":\"%s\","
	                       "\"dest\":\"/data\",\"writable\":true}]", rw));
	assert_runs(ws, "touch /data/f made && mktemp -p /var/tmp >/dev/null");
	ck_assert(test_exists(test_path_at(rw, "f")) && test_exists(test_path_at(host, "made")));
	sbx_workspace_close(ws);
	{
		char *dir = bt_mkdtemp(), real[PATH_MAX], *own = options("\"workdir_mount\":\"host\"");
		char *extra = bt_fmt("\"mode\":\"read-only\",\"limits\":{\"tmp_bytes\":8388608},%s",
		                     own);

		free(own);

		ck_assert_ptr_nonnull(realpath(dir, real));
		test_put_file(dir, "r.txt", "r\n", 0644);
		ws = bt_open_ok(dir, extra);
		assert_runs(ws, bt_tmp("[ \"$(pwd)\" = %s ] && cat r.txt", real));
		assert_fails(ws, "touch new", "the workspace is read-only");
		sbx_workspace_close(ws);
		free(extra);
	}
}
END_TEST

static Suite *layout_suite(void)
{
	Suite *s = suite_create(bt_tmp("layout-%s", bt_backend()));
	TCase *layout = tcase_create("layout"), *opts = tcase_create("options");

	tcase_set_timeout(layout, 120);
	tcase_add_test(layout, test_var_tmp_takes_mktemp);
	tcase_add_test(layout, test_writable_places_are_private);
	tcase_add_test(layout, test_standard_directories_are_there);
	tcase_add_test(layout, test_writable_places_share_the_tmp_cap);
	suite_add_tcase(s, layout);
	tcase_set_timeout(opts, 120);
	tcase_add_test(opts, test_binds_with_landlock);
	tcase_add_test(opts, test_writable_bind_in_read_only_workspace);
	tcase_add_test(opts, test_rootfs_with_landlock);
	tcase_add_test(opts, test_hostname_with_landlock);
	tcase_add_test(opts, test_protected_paths_with_landlock);
	tcase_add_test(opts, test_detached_with_landlock);
	tcase_add_test(opts, test_prestart_with_landlock);
	tcase_add_test(opts, test_mode_with_landlock);
	tcase_add_test(opts, test_landlock_off);
	suite_add_tcase(s, opts);
	TCase *host = tcase_create("workdir_mount");
	tcase_set_timeout(host, 180);
	tcase_add_test(host, test_workdir_at_host_path);
	tcase_add_test(host, test_git_guard_at_host_path);
	tcase_add_test(host, test_venv_made_inside_runs_on_host);
	tcase_add_test(host, test_script_with_pwd_runs_on_host);
	tcase_add_test(host, test_tools_at_host_path);
	tcase_add_test(host, test_workdir_mount_settings);
	suite_add_tcase(s, host);
	return s;
}

int main(void)
{
	return bt_main(layout_suite);
}
