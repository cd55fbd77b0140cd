/* The state folder's helpers (util/statedir.h) and host locks (util/hostlock.h): a link or a
 * file planted at any level is refused by name and nothing is made through it; files are
 * opened without blocking; a host lock excludes other holders (threads and processes alike),
 * gives up at its deadline, and lives outside the workspace. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "support.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/hostkey.h"
#include "util/hostlock.h"
#include "util/statedir.h"

static char *tmp;
static char ws[PATH_MAX / 2], outside[PATH_MAX / 2];
static int root = -1;

static void setup(void)
{
	tmp = test_mkdtemp();
	snprintf(ws, sizeof ws, "%s/ws", tmp);
	snprintf(outside, sizeof outside, "%s/outside", tmp);
	ck_assert_int_eq(mkdir(ws, 0755), 0);
	ck_assert_int_eq(mkdir(outside, 0755), 0);
	root = open(ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(root, 0);
}

static void teardown(void)
{
	close(root);
	test_rm_rf(tmp);
	free(tmp);
}

static bool outside_is_empty(void)
{
	char *out = NULL;
	bool empty;

	ck_assert_int_ge(asprintf(&out, "%s/mcp", outside), 0);
	empty = !test_exists(out);
	free(out);
	return empty && !test_exists(test_path_at(outside, "run"));
}

START_TEST(test_makes_and_opens_the_folders)
{
	int fd = -1;
	struct stat st;

	ck_assert_int_eq(sbx_statedir_open(root, NULL, 0, &fd), -SBX_ENOENT);
	ck_assert_int_eq(sbx_statedir_open(root, "mcp", 0700, &fd), 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	close(fd);
	ck_assert_int_eq(test_mode_of(test_path_at(ws, ".agentsbx")), 0755);
	ck_assert_int_eq(sbx_statedir_open(root, "a/b", 0700, &fd), 0);
	close(fd);
	ck_assert(test_exists(test_path_at(ws, ".agentsbx/a/b")));
	ck_assert_int_eq(sbx_statedir_open(root, "../x", 0700, &fd), -SBX_EINVAL);
	ck_assert_int_eq(sbx_statedir_open(root, "a/./b", 0700, &fd), -SBX_EINVAL);
}
END_TEST

START_TEST(test_a_link_at_the_top_is_refused_and_nothing_made_outside)
{
	int fd = -1;

	ck_assert_int_eq(symlink(outside, test_path_at(ws, ".agentsbx")), 0);
	ck_assert_int_eq(sbx_statedir_open(root, "mcp", 0700, &fd), -SBX_ELOOP);
	ck_assert_msg(strstr(sbx_last_error(), ".agentsbx is a symbolic link") &&
	              strstr(sbx_last_error(), outside), "%s", sbx_last_error());
	ck_assert_int_eq(fd, -1);
	ck_assert(outside_is_empty());
	ck_assert_int_eq(sbx_statedir_open(root, NULL, 0755, &fd), -SBX_ELOOP);
}
END_TEST

START_TEST(test_a_link_below_is_refused_and_nothing_made_outside)
{
	int fd = -1;

	ck_assert_int_eq(mkdir(test_path_at(ws, ".agentsbx"), 0755), 0);
	ck_assert_int_eq(symlink(outside, test_path_at(ws, ".agentsbx/mcp")), 0);
	ck_assert_int_eq(sbx_statedir_open(root, "mcp", 0700, &fd), -SBX_ELOOP);
	ck_assert_msg(strstr(sbx_last_error(), ".agentsbx/mcp is a symbolic link"), "%s",
	              sbx_last_error());
	/* A link inside the workspace is no better than one out of it. */
	ck_assert_int_eq(mkdir(test_path_at(ws, "sub"), 0755), 0);
	ck_assert_int_eq(symlink("../sub", test_path_at(ws, ".agentsbx/run")), 0);
	ck_assert_int_eq(sbx_statedir_open(root, "run/x", 0700, &fd), -SBX_ELOOP);
	ck_assert(!test_exists(test_path_at(ws, "sub/x")));
	ck_assert(outside_is_empty());
	/* A file where a folder belongs. */
	test_put_file(ws, ".agentsbx/tools", "", 0644);
	ck_assert_int_eq(sbx_statedir_open(root, "tools", 0700, &fd), -SBX_ENOTDIR);
	ck_assert_msg(strstr(sbx_last_error(), ".agentsbx/tools is not a directory"), "%s",
	              sbx_last_error());
}
END_TEST

START_TEST(test_files_are_regular_and_never_block)
{
	int dir = -1, fd;
	char *data = NULL;
	size_t len = 0;

	ck_assert_int_eq(sbx_statedir_open(root, NULL, 0755, &dir), 0);
	ck_assert_int_eq(sbx_statedir_read(dir, "absent", 100, &data, &len), -SBX_ENOENT);
	ck_assert_int_eq(mkfifo(test_path_at(ws, ".agentsbx/fifo"), 0600), 0);
	/* Neither a reader nor a writer waits for the other end. */
	ck_assert_int_eq(sbx_statedir_read(dir, "fifo", 100, &data, &len), -SBX_EINVAL);
	fd = sbx_statedir_open_file(dir, "fifo", O_WRONLY | O_APPEND | O_CREAT, 0600);
	ck_assert_int_eq(fd, -SBX_EINVAL);
	ck_assert_int_eq(symlink(test_path_at(outside, "f"), test_path_at(ws, ".agentsbx/link")), 0);
	fd = sbx_statedir_open_file(dir, "link", O_WRONLY | O_CREAT, 0600);
	ck_assert_int_eq(fd, -SBX_ELOOP);
	ck_assert(!test_exists(test_path_at(outside, "f")));
	test_put_file(ws, ".agentsbx/big", "0123456789", 0600);
	ck_assert_int_eq(sbx_statedir_read(dir, "big", 4, &data, &len), -SBX_EFBIG);
	ck_assert_int_eq(sbx_statedir_read(dir, "big", 100, &data, &len), 0);
	ck_assert_str_eq(data, "0123456789");
	free(data);
	close(dir);
}
END_TEST

/* ---- host locks ---------------------------------------------------------------------- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

START_TEST(test_a_host_lock_excludes_and_gives_up_at_its_deadline)
{
	int a = -1, b = -1;
	_cleanup_close_ int obj = open(ws, O_PATH | O_CLOEXEC);

	ck_assert_int_eq(sbx_hostlock_take(obj, "test", 1000, &a), 0);
	int64_t t0 = now_ms();
	ck_assert_int_eq(sbx_hostlock_take(obj, "test", 200, &b), -SBX_ETIMEDOUT);
	ck_assert_int_ge(now_ms() - t0, 200);
	ck_assert_int_eq(b, -1);
	ck_assert_msg(strstr(sbx_last_error(), "more than 200 ms"), "%s", sbx_last_error());
	/* Another purpose of the same object is another lock. */
	ck_assert_int_eq(sbx_hostlock_take(obj, "other", 0, &b), 0);
	close(b);
	/* Released, it is free again; and another process meets the same lock. */
	pid_t child = fork();
	if (child == 0) {
		int c = -1;
		_exit(sbx_hostlock_take(obj, "test", 0, &c) == -SBX_ETIMEDOUT ? 0 : 1);
	}
	int status;
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	close(a);
	ck_assert_int_eq(sbx_hostlock_take(obj, "test", 0, &b), 0);
	close(b);
}
END_TEST

/* A process that forks while it holds a lock (another thread of a harness starts a worker)
 * gives the child a copy of the lock's fd: the same open file, which is what flock locks
 * belong to. Once the holder releases, nobody holds the lock, however long the child lives:
 * the holder takes it again at once, and so does another process. */
START_TEST(test_a_forked_child_keeps_no_released_lock)
{
	_cleanup_close_ int obj = open(ws, O_PATH | O_CLOEXEC);
	int a = -1, b = -1, gate[2], status;
	char byte;

	ck_assert_int_ge(obj, 0);
	ck_assert_int_eq(pipe(gate), 0);
	ck_assert_int_eq(sbx_hostlock_take(obj, "fork", 1000, &a), 0);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		/* A worker that lives on with its copy of everything, the lock's fd included. */
		close(gate[1]);
		_exit(read(gate[0], &byte, 1) >= 0 ? 0 : 1);
	}
	close(gate[0]);
	sbx_hostlock_release(a);
	ck_assert_msg(sbx_hostlock_take(obj, "fork", 2000, &b) == 0, "after the release: %s",
	              sbx_last_error());
	sbx_hostlock_release(b);
	pid_t other = fork();
	ck_assert_int_ge(other, 0);
	if (other == 0)
		_exit(sbx_hostlock_take(obj, "fork", 2000, &b) == 0 ? 0 : 1);
	ck_assert_int_eq(waitpid(other, &status, 0), other);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "another process could not "
	              "take the released lock");
	close(gate[1]);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
}
END_TEST

/* The lock file of fd's object for tag (as hostlock.c names it). */
static const char *lock_file(int fd, const char *tag)
{
	static char path[2][PATH_MAX];
	static int k;
	struct stat st;
	char *p = path[k++ % 2];

	ck_assert_int_eq(fstat(fd, &st), 0);
	snprintf(p, PATH_MAX, "%s/%x-%x-%llx.%s.lock", sbx_hostlock_dir(), major(st.st_dev),
	         minor(st.st_dev), (unsigned long long)st.st_ino, tag);
	return p;
}

/* Lock files nobody holds are swept; a held one stays, and still excludes. */
START_TEST(test_unheld_lock_files_are_swept)
{
	_cleanup_close_ int obj = open(ws, O_PATH | O_CLOEXEC), other = open(tmp, O_PATH | O_CLOEXEC);
	int held = -1, b = -1;

	ck_assert_int_eq(sbx_hostlock_take(obj, "held", 0, &held), 0);
	ck_assert_int_eq(sbx_hostlock_take(other, "free", 0, &b), 0);
	close(b);
	ck_assert(test_exists(lock_file(obj, "held")) && test_exists(lock_file(other, "free")));
	sbx_hostlock_sweep();
	ck_assert(test_exists(lock_file(obj, "held")));
	ck_assert(!test_exists(lock_file(other, "free")));
	ck_assert_int_eq(sbx_hostlock_take(obj, "held", 0, &b), -SBX_ETIMEDOUT);
	close(held);
	ck_assert_int_eq(sbx_hostlock_take(obj, "held", 0, &b), 0);
	close(b);
}
END_TEST

START_TEST(test_host_locks_live_outside_the_workspace)
{
	const char *dir = sbx_hostlock_dir();
	struct stat st;

	ck_assert_ptr_nonnull(dir);
	ck_assert_int_eq(lstat(dir, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_uid, geteuid());
	ck_assert_int_eq(st.st_mode & 077, 0);
	ck_assert_ptr_null(strstr(dir, ws));
}
END_TEST

/* Root's lock folder is not a name in /tmp: any user could make /tmp/agentsbx-0 first, and
 * then every lock of root's (the audit log's, the detached sandboxes' attach lock) would
 * fail. Run in a private mount namespace with a /tmp and a /run of its own, where another
 * user has made that name. Root's case only: an ordinary user cannot play the other user. */
START_TEST(test_roots_locks_are_out_of_other_users_reach)
{
	int status;

	TEST_NEED(TEST_CAP_ROOT, geteuid() == 0,
	          "playing another user's /tmp/agentsbx-0 needs root");
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		int fd = -1, obj;

		if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("tmpfs", "/tmp", "tmpfs", 0, "mode=1777") < 0 ||
		    mount("tmpfs", "/run", "tmpfs", 0, "mode=0755") < 0)
			_exit(2);
		unsetenv("XDG_RUNTIME_DIR");
		if (mkdir("/tmp/agentsbx-0", 0700) < 0 || chown("/tmp/agentsbx-0", 65534, 65534) < 0)
			_exit(3);
		if ((obj = open("/tmp", O_PATH | O_CLOEXEC)) < 0)
			_exit(4);
		if (sbx_hostlock_take(obj, "squat", 1000, &fd) < 0) {
			fprintf(stderr, "take: %s\n", sbx_last_error());
			_exit(5);
		}
		sbx_hostlock_release(fd);
		_exit(strcmp(sbx_hostlock_dir(), "/run/agentsbx/locks") == 0 ? 0 : 6);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status 0x%x (5: no lock "
	              "while another user holds /tmp/agentsbx-0)", (unsigned)status);
}
END_TEST

/* The key that signs the skills record (util/hostkey.h): made once, the same for every
 * process that races to make it, kept 0600 in a 0700 folder, and refused when the file is
 * not ours alone. */
START_TEST(test_host_keys_are_private_and_agreed_on)
{
	unsigned char k1[SBX_HOSTKEY_LEN], k2[SBX_HOSTKEY_LEN];
	char *state = NULL;
	int status;

	ck_assert_int_ge(asprintf(&state, "%s/state", tmp), 0);
	ck_assert_int_eq(setenv("XDG_STATE_HOME", state, 1), 0);
	for (int i = 0; i < 4; i++)
		if (fork() == 0)
			_exit(sbx_hostkey_get("race", k1) == 0 ? 0 : 1);
	ck_assert_int_eq(sbx_hostkey_get("race", k1), 0);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_gt(wait(&status), 0);
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	ck_assert_int_eq(sbx_hostkey_get("race", k2), 0);
	ck_assert_int_eq(memcmp(k1, k2, sizeof k1), 0);
	ck_assert_int_eq(test_mode_of(test_path_at(state, "agentsbx")), 0700);
	ck_assert_int_eq(test_mode_of(test_path_at(state, "agentsbx/race.key")), 0600);
	/* Another purpose, another key. */
	ck_assert_int_eq(sbx_hostkey_get("other", k2), 0);
	ck_assert_int_ne(memcmp(k1, k2, sizeof k1), 0);
	/* A key others may read is no secret: refused, and left as it is. */
	ck_assert_int_eq(chmod(test_path_at(state, "agentsbx/race.key"), 0644), 0);
	ck_assert_int_lt(sbx_hostkey_get("race", k2), 0);
	ck_assert_int_eq(test_mode_of(test_path_at(state, "agentsbx/race.key")), 0644);
	unsetenv("XDG_STATE_HOME");
	free(state);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("statedir");
	TCase *tc = tcase_create("statedir");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_makes_and_opens_the_folders);
	tcase_add_test(tc, test_a_link_at_the_top_is_refused_and_nothing_made_outside);
	tcase_add_test(tc, test_a_link_below_is_refused_and_nothing_made_outside);
	tcase_add_test(tc, test_files_are_regular_and_never_block);
	tcase_add_test(tc, test_a_host_lock_excludes_and_gives_up_at_its_deadline);
	tcase_add_test(tc, test_a_forked_child_keeps_no_released_lock);
	tcase_add_test(tc, test_unheld_lock_files_are_swept);
	tcase_add_test(tc, test_host_locks_live_outside_the_workspace);
	tcase_add_test(tc, test_host_keys_are_private_and_agreed_on);
	suite_add_tcase(s, tc);

	/* Root's own case; tagged 'root', a meson test of its own. */
	tc = tcase_create("statedir-as-root");
	tcase_set_tags(tc, "root");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_roots_locks_are_out_of_other_users_reach);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(make_suite());
}
