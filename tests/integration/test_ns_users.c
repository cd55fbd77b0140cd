/* Users of the sandbox backends (ns, bwrap): "never host root inside" (docs/security.md).
 *
 * When the caller is root, a process inside is uid 0 to itself but an unprivileged host uid to
 * the host: its /proc/<pid>/status, read from here, says so. Its workdir comes through an
 * idmapped mount, so what it creates there is the caller's and what the caller owns it may
 * write; what the host's root owns elsewhere (the system directories, a read-only bind) is
 * not its own. Where the workdir's file system has no idmapped mounts (a real ramfs, mounted
 * for the test in a private mount namespace of the test process, which the sandbox inherits),
 * the open is refused naming the reason and the key, and that key runs it as host root with a
 * warning in the audit log. Every start path is covered: a first open, a pre-started spare,
 * reset, a detached sandbox and its reattach, a capped workspace, writable binds, MCP's run
 * folder; and `agentsbx doctor` says what mapping is in use.
 *
 * As an ordinary user the same tests assert that nothing changes: the sandbox maps the
 * caller's own uid, whatever the new keys say. */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <agentsbx/agentsbx.h>
#include "backend_support.h"
#include "support.h"

#define FIXED_RANGE_START 1879048192u   /* util/idmap.h, SBX_IDMAP_FIXED_START */
#define SECOND_USER "sbxtest"           /* has a range in /etc/subuid on the CI machines */

static bool is_root(void)
{
	return geteuid() == 0;
}

/* The backend's own object: "\"ns\":{...}" or "\"bwrap\":{...}". */
static const char *backend_opts(const char *members)
{
	return bt_tmp("\"%s\":{%s}", bt_backend(), members);
}

/* The first id of user's range in the subuid(5) file path, or 0. */
static unsigned subid_start(const char *path, const char *user)
{
	FILE *f = fopen(path, "re");
	char line[256];
	unsigned start = 0, count;
	size_t n = strlen(user);

	while (f && !start && fgets(line, sizeof line, f))
		if (!strncmp(line, user, n) && line[n] == ':' &&
		    sscanf(line + n + 1, "%u:%u", &start, &count) != 2)
			start = 0;
	if (f)
		fclose(f);
	return start;
}

/* The host uid (or gid) a root-run sandbox's 0 has with subid_user user; the caller's own
 * id for anyone else. */
static unsigned expected_host_id(const char *user, bool gid)
{
	unsigned start;

	if (!is_root())
		return gid ? (unsigned)getegid() : (unsigned)geteuid();
	start = subid_start(gid ? "/etc/subgid" : "/etc/subuid", user ? user : "agentsbx");
	return start ? start : FIXED_RANGE_START;
}

/* The pid of the host process whose command line has mark (polling), or 0. */
static pid_t pid_with_marker(const char *mark)
{
	int64_t deadline = bt_now_ms() + 5000;

	do {
		DIR *d = opendir("/proc");
		struct dirent *e;
		pid_t found = 0;

		while (d && !found && (e = readdir(d)))
			if (e->d_name[0] >= '1' && e->d_name[0] <= '9' &&
			    atoi(e->d_name) != (int)getpid() && bt_pid_cmdline_has(e->d_name, mark))
				found = atoi(e->d_name);
		if (d)
			closedir(d);
		if (found)
			return found;
		usleep(10000);
	} while (bt_now_ms() < deadline);
	return 0;
}

/* "Uid:" or "Gid:" of /proc/<pid>/status: real, effective, saved, filesystem. */
static void host_ids_of(pid_t pid, const char *field, unsigned ids[4])
{
	char path[64], line[256];
	FILE *f;
	bool seen = false;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	ck_assert_msg(f, "open %s: %s", path, strerror(errno));
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, field, strlen(field)))
			seen = sscanf(line + strlen(field), "%u %u %u %u", &ids[0], &ids[1], &ids[2],
			              &ids[3]) == 4;
	fclose(f);
	ck_assert_msg(seen, "no %s line in %s", field, path);
}

/* The "Groups:" line of /proc/<pid>/status, without the name. Static buffer. */
static const char *host_groups_of(pid_t pid)
{
	static char groups[256];
	char path[64], line[256];
	FILE *f;

	groups[0] = '\0';
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re")))
		return groups;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "Groups:", 7)) {
			snprintf(groups, sizeof groups, "%s", line + 7 + strspn(line + 7, " \t"));
			groups[strcspn(groups, "\n")] = '\0';
		}
	fclose(f);
	return groups;
}

/* Starts `sleep <marker>` inside, finds it on the host and asserts its ids there: want_uid and
 * want_gid in all four fields. For root's sandbox (unless it is the host-root fallback) also
 * that they are not 0 and that no supplementary group of the host's root stayed with it. */
static void assert_inside_is(sbx_workspace *w, unsigned want_uid, unsigned want_gid)
{
	const char *mark = bt_marker();
	const char *argv[] = { "sleep", mark, NULL };
	sbx_spawn_opts so = { .size = sizeof so };
	sbx_process *p = NULL;
	unsigned uid[4], gid[4];
	pid_t pid;

	ck_assert_int_eq(sbx_process_spawn(w, argv, &so, &p), 0);
	pid = pid_with_marker(mark);
	ck_assert_msg(pid > 0, "the command inside is not among the host's processes");
	host_ids_of(pid, "Uid:", uid);
	host_ids_of(pid, "Gid:", gid);
	for (int i = 0; i < 4; i++) {
		ck_assert_msg(uid[i] == want_uid, "host uid %u (field %d) of the process inside, "
		              "expected %u", uid[i], i, want_uid);
		ck_assert_msg(gid[i] == want_gid, "host gid %u (field %d) of the process inside, "
		              "expected %u", gid[i], i, want_gid);
	}
	if (is_root() && want_uid != 0) {
		ck_assert_uint_ne(uid[0], 0);
		ck_assert_uint_ne(gid[0], 0);
		ck_assert_msg(!strcmp(host_groups_of(pid), ""), "the process inside keeps host groups "
		              "'%s'", host_groups_of(pid));
	}
	sbx_process_kill(p);
	sbx_process_free(p);
}

static void assert_inside_is_expected(sbx_workspace *w, const char *user)
{
	assert_inside_is(w, expected_host_id(user, false), expected_host_id(user, true));
}

/* `id -u` inside: 0 for root's sandbox (what tools expect), the caller's uid otherwise. */
static void assert_uid_inside(sbx_workspace *w)
{
	char *out = bt_shell_out(w, "id -u; id -g");
	char want[32];

	snprintf(want, sizeof want, "%u\n%u\n", is_root() ? 0 : (unsigned)geteuid(),
	         is_root() ? 0 : (unsigned)getegid());
	ck_assert_str_eq(out, want);
	free(out);
}

static void assert_owned_by_caller(const char *path)
{
	struct stat st;

	ck_assert_msg(lstat(path, &st) == 0, "lstat %s: %s", path, strerror(errno));
	ck_assert_msg(st.st_uid == geteuid() && st.st_gid == getegid(),
	              "%s is owned by %u:%u on the host, not by the caller %u:%u", path,
	              (unsigned)st.st_uid, (unsigned)st.st_gid, (unsigned)geteuid(),
	              (unsigned)getegid());
}

static sbx_result *run(sbx_workspace *w, const char *cmd)
{
	sbx_exec_opts o = { .size = sizeof o, .timeout_ms = 60000 };

	return bt_shell(w, cmd, &o);
}

static void assert_fails(sbx_workspace *w, const char *cmd)
{
	sbx_result *res = run(w, cmd);

	ck_assert_msg(sbx_result_exit_code(res) != 0, "`%s` succeeded inside: %s", cmd,
	              sbx_result_stdout(res, NULL));
	sbx_result_free(res);
}

/* ---- the ids -------------------------------------------------------------------------- */

START_TEST(test_process_inside_is_not_host_root)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w = bt_open_ok(dir, NULL);

	assert_uid_inside(w);
	assert_inside_is_expected(w, NULL);
	sbx_workspace_close(w);
}
END_TEST

/* The subordinate range of the user the config names (root); ignored for anyone else. */
START_TEST(test_subid_user_picks_the_range)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w = bt_open_ok(dir, backend_opts("\"subid_user\":\"" SECOND_USER "\""));

	if (is_root())
		ck_assert_msg(subid_start("/etc/subuid", SECOND_USER) &&
		              subid_start("/etc/subgid", SECOND_USER),
		              "this test needs a range of " SECOND_USER " in /etc/subuid and "
		              "/etc/subgid (useradd gives one)");
	assert_uid_inside(w);
	assert_inside_is_expected(w, SECOND_USER);
	sbx_workspace_close(w);
}
END_TEST

START_TEST(test_bad_user_keys_are_refused)
{
	sbx_workspace *w = NULL;

	ck_assert_int_eq(bt_open(NULL, backend_opts("\"subid_user\":\"no such user!\""), &w),
	                 -SBX_ECONFIG);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "subid_user"));
	ck_assert_int_eq(bt_open(NULL, backend_opts("\"root_inside\":\"sometimes\""), &w),
	                 -SBX_ECONFIG);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "root_inside"));
	ck_assert_int_eq(bt_open(NULL, backend_opts("\"subid_user\":7"), &w), -SBX_ECONFIG);
	ck_assert_ptr_null(w);
}
END_TEST

/* ---- the workdir ---------------------------------------------------------------------- */

START_TEST(test_created_files_are_the_callers)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w = bt_open_ok(dir, NULL);
	char *out = bt_shell_out(w, "echo made > made && mkdir -p d/e && touch d/e/f && "
	                         "ln -s made link && echo ok");

	ck_assert_str_eq(out, "ok\n");
	free(out);
	assert_owned_by_caller(test_path_at(dir, "made"));
	assert_owned_by_caller(test_path_at(dir, "d"));
	assert_owned_by_caller(test_path_at(dir, "d/e/f"));
	assert_owned_by_caller(test_path_at(dir, "link"));
	sbx_workspace_close(w);
}
END_TEST

START_TEST(test_callers_files_are_writable_inside)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w;
	char *out, want[32];

	test_put_file(dir, "mine", "host\n", 0644);
	test_put_file(dir, "private", "host\n", 0600);
	ck_assert_int_eq(mkdir(test_path_at(dir, "mydir"), 0755), 0);
	w = bt_open_ok(dir, NULL);
	/* Through the idmapped mount the caller's files are the sandbox's own (uid 0 for root). */
	out = bt_shell_out(w, "stat -c %u mine && echo more >> mine && cat private && "
	                   "touch mydir/new && echo ok");
	snprintf(want, sizeof want, "%u\nhost\nok\n", is_root() ? 0 : (unsigned)geteuid());
	ck_assert_str_eq(out, want);
	free(out);
	ck_assert_str_eq(test_slurp(test_path_at(dir, "mine")), "host\nmore\n");
	assert_owned_by_caller(test_path_at(dir, "mine"));
	assert_owned_by_caller(test_path_at(dir, "mydir/new"));
	sbx_workspace_close(w);
}
END_TEST

/* A file of another host user: the sandbox's root is not its owner and has no capability to
 * override that. */
START_TEST(test_other_users_files_stay_theirs)
{
	char *dir = bt_mkdtemp();
	const char *theirs = test_path_at(dir, "theirs");
	sbx_workspace *w;

	test_put_file(dir, "theirs", "theirs\n", 0644);
	if (is_root())
		ck_assert_int_eq(chown(theirs, 4321, 4321), 0);
	else
		ck_assert_int_eq(chmod(theirs, 0444), 0);   /* ours, but read-only to everyone */
	w = bt_open_ok(dir, NULL);
	assert_fails(w, "echo x >> theirs");
	if (is_root())
		assert_fails(w, "chmod 666 theirs");
	assert_fails(w, "chown 0 theirs");
	ck_assert_str_eq(test_slurp(theirs), "theirs\n");
	sbx_workspace_close(w);
}
END_TEST

/* The set-id bits of the files named setid-* in dir, on the host: "" when none has one, else
 * the names that do. */
static const char *setid_files_in(const char *dir)
{
	static char found[4096];
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;

	found[0] = '\0';
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "setid-", 6) && fstatat(dirfd(d), e->d_name, &st,
		                                                 AT_SYMLINK_NOFOLLOW) == 0 &&
		    (st.st_mode & (S_ISUID | S_ISGID)) && strlen(found) + strlen(e->d_name) + 2 <
		                                          sizeof found)
			strcat(strcat(found, e->d_name), " ");
	closedir(d);
	return found;
}

/* A root-run sandbox's files land on the host as root's (the idmapped workdir): a set-user-ID
 * bit on one would be a root program for any host user who runs it, so no way of setting one
 * works inside. The probe tries each (chmod, fchmod, fchmodat, fchmodat2, creat, open, openat,
 * openat2, mknod, mknodat, O_TMPFILE) on a file of its own; a plain chmod still works. An
 * ordinary user's sandbox makes the caller's own files, as the caller may: unchanged. */
START_TEST(test_no_setid_file_reaches_the_host)
{
	static const char *const refused[] = { "chmod-setuid", "chmod-setgid", "fchmod", "fchmodat",
	                                       "fchmodat2", "creat", "open", "openat", "mknod",
	                                       "mknodat", "tmpfile" };
	char *dir = bt_mkdtemp(), *out;
	sbx_workspace *w = bt_open_ok(dir, NULL);

	bt_install_program(w, "SBX_TEST_PROBE", "probe");
	/* Under ASan the leak check at exit needs ptrace, which no sandbox allows. */
	out = bt_shell_out(w, "ASAN_OPTIONS=detect_leaks=0 ./probe setid .");
	ck_assert_msg(strstr(out, "setid-plain OK\n"), "%s", out);
	if (is_root()) {
		for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
			ck_assert_msg(strstr(out, bt_tmp("setid-%s EPERM\n", refused[i])),
			              "setid-%s not refused: %s", refused[i], out);
		ck_assert_msg(strstr(out, "setid-openat2 ENOSYS\n"), "%s", out);
		ck_assert_msg(!*setid_files_in(dir), "set-id files on the host: %s",
		              setid_files_in(dir));
		/* and in the sandbox a reset starts */
		ck_assert_int_eq(sbx_workspace_reset(w), 0);
		assert_fails(w, "touch setid-after-reset && chmod 4755 setid-after-reset");
		ck_assert_msg(!*setid_files_in(dir), "set-id files on the host: %s",
		              setid_files_in(dir));
	} else {
		ck_assert_msg(strstr(out, "setid-chmod-setuid OK\n"), "%s", out);
	}
	free(out);
	sbx_workspace_close(w);
}
END_TEST

/* ---- outside the workdir ---------------------------------------------------------------- */

/* The uid the kernel shows for one a user namespace does not map (/proc/sys/kernel). */
static unsigned overflow_uid(void)
{
	const char *text = test_slurp("/proc/sys/kernel/overflowuid");

	return text ? (unsigned)atoi(text) : 65534u;
}

/* The host's root owns the system directories; to root's sandbox they belong to nobody. And a
 * root-owned file it can reach through a read-only bind stays unwritable. */
START_TEST(test_host_root_files_are_not_the_sandboxs)
{
	char *dir = bt_mkdtemp(), *outside = bt_mkdtemp();
	const char *bind = bt_tmp("\"binds\":[{\"source\":\"%s\",\"dest\":\"/opt/ro\"}]", outside);
	sbx_workspace *w;
	char *out, want[32];

	test_put_file(outside, "root-file", "root\n", 0666);
	w = bt_open_ok(dir, backend_opts(bind));
	out = bt_shell_out(w, "stat -c %u /usr/bin; cat /opt/ro/root-file");
	snprintf(want, sizeof want, "%u\nroot\n", overflow_uid());
	ck_assert_str_eq(out, want);
	free(out);
	assert_fails(w, "echo x >> /opt/ro/root-file");
	assert_fails(w, "rm /opt/ro/root-file");
	assert_fails(w, "touch /usr/agentsbx-users-test");
	ck_assert_str_eq(test_slurp(test_path_at(outside, "root-file")), "root\n");
	ck_assert(!test_exists("/usr/agentsbx-users-test"));
	sbx_workspace_close(w);
}
END_TEST

/* A writable bind from outside the workdir comes idmapped too: the sandbox writes it as the
 * caller, even where only the caller may (a 0700 directory). Below /tmp: Landlock allows
 * writes only there and in /workspace. */
START_TEST(test_writable_bind_is_idmapped)
{
	char *dir = bt_mkdtemp(), *outside = bt_mkdtemp();
	const char *bind = bt_tmp("\"binds\":[{\"source\":\"%s\",\"dest\":\"/tmp/rw\","
	                          "\"writable\":true}]", outside);
	sbx_workspace *w;
	char *out;

	ck_assert_int_eq(chmod(outside, 0700), 0);
	w = bt_open_ok(dir, backend_opts(bind));
	out = bt_shell_out(w, "echo new > /tmp/rw/new && stat -c %u /tmp/rw/new");
	ck_assert_uint_eq((unsigned)atoi(out), is_root() ? 0 : (unsigned)geteuid());
	free(out);
	assert_owned_by_caller(test_path_at(outside, "new"));
	sbx_workspace_close(w);
}
END_TEST

/* ---- every start path ---------------------------------------------------------------------- */

/* One after another within seconds: the later ones start from pre-started spares (ns). */
START_TEST(test_spares_and_reset_keep_the_mapping)
{
	for (int i = 0; i < 4; i++) {
		char *dir = bt_mkdtemp();
		sbx_workspace *w = bt_open_ok(dir, NULL);
		char *out = bt_shell_out(w, "echo x > f; echo ok");

		ck_assert_str_eq(out, "ok\n");
		free(out);
		assert_owned_by_caller(test_path_at(dir, "f"));
		assert_inside_is_expected(w, NULL);
		if (i == 3) {
			ck_assert_int_eq(sbx_workspace_reset(w), 0);
			assert_uid_inside(w);
			assert_inside_is_expected(w, NULL);
		}
		sbx_workspace_close(w);
	}
}
END_TEST

START_TEST(test_detached_sandbox_and_reattach)
{
	char *dir = bt_mkdtemp();
	const char *opts = backend_opts("\"detached\":true");
	sbx_workspace *w = bt_open_ok(dir, opts);
	char *out;

	assert_inside_is_expected(w, NULL);
	sbx_workspace_close(w);                 /* detaches: the sandbox runs on */
	ck_assert_int_gt(bt_count_sandbox_processes(dir), 0);
	w = bt_open_ok(dir, opts);              /* attaches to it */
	out = bt_shell_out(w, "echo again > again; id -u");
	ck_assert_uint_eq((unsigned)atoi(out), is_root() ? 0 : (unsigned)geteuid());
	free(out);
	assert_owned_by_caller(test_path_at(dir, "again"));
	assert_inside_is_expected(w, NULL);
	ck_assert_int_eq(sbx_workspace_reset(w), 0);   /* stops it and starts another */
	assert_inside_is_expected(w, NULL);
	sbx_workspace_close(w);
	bt_kill_sandbox_processes(dir);
	ck_assert_int_eq(bt_wait_for_sandbox_gone(dir), 0);
}
END_TEST

/* limits.disk_bytes: a tmpfs the init mounts itself. The host still writes it (the library's
 * own file operations and its audit log) and reads what the sandbox made there. */
START_TEST(test_capped_workspace)
{
	sbx_workspace *w = bt_open_ok(NULL, "\"limits\":{\"disk_bytes\":16777216}");
	char *data = NULL, *out, want[32];
	size_t len = 0;

	ck_assert_int_eq(sbx_file_write(w, "from-host", "host\n", 5, 0, 0), 0);
	out = bt_shell_out(w, "stat -c %u from-host; cat from-host; echo inside > from-inside");
	snprintf(want, sizeof want, "%u\nhost\n", is_root() ? 0 : (unsigned)geteuid());
	ck_assert_str_eq(out, want);
	free(out);
	ck_assert_int_eq(sbx_file_read(w, "from-inside", &data, &len), 0);
	ck_assert_str_eq(data, "inside\n");
	sbx_free(data);
	assert_inside_is_expected(w, NULL);
	ck_assert_ptr_nonnull(sbx_audit_path(w));
	ck_assert_ptr_nonnull(strstr(test_slurp(sbx_audit_path(w)), "\"kind\":\"exec\""));
	sbx_workspace_close(w);
}
END_TEST

/* ---- file systems without idmapped mounts ---------------------------------------------------- */

/* A ramfs (no idmapped mounts in any kernel) at dir, in a mount namespace of this test
 * process alone: the sandbox starts from here and sees it; nothing is left on the host. */
static void mount_ramfs(const char *dir)
{
	ck_assert_msg(unshare(CLONE_NEWNS) == 0, "unshare(CLONE_NEWNS): %s", strerror(errno));
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	ck_assert_msg(mount("ramfs", dir, "ramfs", 0, "mode=0755") == 0, "mount ramfs: %s",
	              strerror(errno));
}

START_TEST(test_unsupported_file_system_is_refused_or_falls_back)
{
	char *dir = bt_mkdtemp(), *out;
	sbx_workspace *w = NULL;
	const char *log;
	int r;

	if (!is_root()) {
		/* No mapping to fall back from: the key changes nothing, and nothing is audited. */
		w = bt_open_ok(dir, backend_opts("\"root_inside\":\"allow-host-root\""));
		assert_inside_is_expected(w, NULL);
		ck_assert_ptr_null(strstr(test_slurp(sbx_audit_path(w)) ?: "", "host-root"));
		sbx_workspace_close(w);
		return;
	}
	mount_ramfs(dir);
	r = bt_open(dir, NULL, &w);
	ck_assert_msg(r == -SBX_ENOSYS, "open on ramfs: %d %s", r, sbx_last_error());
	ck_assert_msg(strstr(sbx_last_error(), "ramfs") && strstr(sbx_last_error(), "idmapped") &&
	              strstr(sbx_last_error(), "root_inside") &&
	              strstr(sbx_last_error(), "allow-host-root"),
	              "the refusal does not name the reason and the key: %s", sbx_last_error());
	ck_assert_ptr_null(w);

	w = bt_open_ok(dir, backend_opts("\"root_inside\":\"allow-host-root\""));
	assert_inside_is(w, 0, 0);              /* today's mapping: host root */
	out = bt_shell_out(w, "echo x > made; id -u");
	ck_assert_str_eq(out, "0\n");
	free(out);
	assert_owned_by_caller(test_path_at(dir, "made"));
	/* host root outright, and still no set-id file (a root program on the host) */
	assert_fails(w, "chmod 4755 made");
	ck_assert_msg(!(test_mode_of(test_path_at(dir, "made")) & (S_ISUID | S_ISGID)),
	              "a set-id file on the host");
	log = test_slurp(sbx_audit_path(w));
	ck_assert_msg(log && strstr(log, "\"kind\":\"users\"") && strstr(log, "\"level\":\"warning\"")
	              && strstr(log, "\"event\":\"host-root\"") && strstr(log, "ramfs"),
	              "no warning in the audit log: %s", log ? log : "(none)");
	sbx_workspace_close(w);
	/* Each open warns again. */
	w = bt_open_ok(dir, backend_opts("\"root_inside\":\"allow-host-root\""));
	log = test_slurp(sbx_audit_path(w));
	ck_assert_ptr_nonnull(log);
	ck_assert_ptr_nonnull(strstr(strstr(log, "\"event\":\"host-root\"") + 1,
	                             "\"event\":\"host-root\""));
	sbx_workspace_close(w);
}
END_TEST

/* ---- doctor -------------------------------------------------------------------------------- */

static char *doctor(const char *config)
{
	const char *build = getenv("SBX_TEST_BUILD_ROOT");
	char *cmd = bt_fmt("'%s/agentsbx' doctor --config '%s' 2>&1", build ? build : ".", config);
	FILE *f = popen(cmd, "r");
	char *text = calloc(1, 1 << 16);
	size_t n = 0, got;

	ck_assert_ptr_nonnull(f);
	while ((got = fread(text + n, 1, (1 << 16) - 1 - n, f)) > 0)
		n += got;
	pclose(f);
	free(cmd);
	return text;
}

START_TEST(test_doctor_prints_the_mapping)
{
	char *dir = bt_mkdtemp(), *out, want[96];
	const char *cfg = bt_tmp("{\"backend\":\"%s\",\"workdir\":\"%s\"}", bt_backend(), dir);

	out = doctor(cfg);
	if (is_root())
		snprintf(want, sizeof want, "users: inside 0 -> host %u", expected_host_id(NULL, false));
	else
		snprintf(want, sizeof want, "users: inside %u -> host %u", (unsigned)geteuid(),
		         (unsigned)geteuid());
	ck_assert_msg(strstr(out, want), "doctor does not say \"%s\":\n%s", want, out);
	if (is_root())
		ck_assert_msg(strstr(out, "idmapped"), "doctor does not say the workdir is "
		              "idmapped:\n%s", out);
	free(out);
	if (!is_root())
		return;
	mount_ramfs(dir);
	out = doctor(cfg);
	ck_assert_msg(strstr(out, "cannot be idmapped") && strstr(out, "ramfs") &&
	              strstr(out, "root_inside"), "doctor does not say the workdir on ramfs "
	              "cannot be idmapped:\n%s", out);
	free(out);
}
END_TEST

static Suite *users_suite(void)
{
	Suite *s = suite_create(bt_tmp("users-%s", bt_backend()));
	TCase *ids = tcase_create("ids"), *files = tcase_create("workdir");
	TCase *outside = tcase_create("outside"), *paths = tcase_create("start paths");
	TCase *fs = tcase_create("file systems");

	tcase_add_test(ids, test_process_inside_is_not_host_root);
	tcase_add_test(ids, test_subid_user_picks_the_range);
	tcase_add_test(ids, test_bad_user_keys_are_refused);
	tcase_add_test(files, test_created_files_are_the_callers);
	tcase_add_test(files, test_callers_files_are_writable_inside);
	tcase_add_test(files, test_other_users_files_stay_theirs);
	tcase_add_test(files, test_no_setid_file_reaches_the_host);
	tcase_add_test(outside, test_host_root_files_are_not_the_sandboxs);
	tcase_add_test(outside, test_writable_bind_is_idmapped);
	tcase_add_test(paths, test_spares_and_reset_keep_the_mapping);
	tcase_add_test(paths, test_detached_sandbox_and_reattach);
	tcase_add_test(paths, test_capped_workspace);
	tcase_add_test(fs, test_unsupported_file_system_is_refused_or_falls_back);
	tcase_add_test(fs, test_doctor_prints_the_mapping);
	suite_add_tcase(s, ids);
	suite_add_tcase(s, files);
	suite_add_tcase(s, outside);
	suite_add_tcase(s, paths);
	suite_add_tcase(s, fs);
	return s;
}

int main(void)
{
	return bt_main(users_suite);
}
