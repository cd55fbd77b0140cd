/* File-system helpers (atomic write, bounded read, tree removal, temp dirs), and the file API
 * of src/files.c on hand-made workspaces: one whose files are on the host (as a sandbox sees
 * them at "/workspace") and one whose backend moves files itself. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "internal.h"
#include "support.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/path.h"

static char *tmp;
static char dir[PATH_MAX / 2];     /* tmp/ws: the directory under test */
static char outside[PATH_MAX / 2]; /* tmp/outside: must never change */
static int dirfd_ = -1;
static int fds_at_start;

/* Are there leftovers of atomic writes (".name.sbx-XXXXXX") in d? */

static void setup(void)
{
	tmp = test_mkdtemp();
	snprintf(dir, sizeof dir, "%s/ws", tmp);
	snprintf(outside, sizeof outside, "%s/outside", tmp);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	ck_assert_int_eq(mkdir(outside, 0755), 0);
	test_put_file(outside, "secret", "secret", 0600);
	dirfd_ = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dirfd_, 0);
	fds_at_start = test_count_fds();
}

/* The same tests on a file system without O_TMPFILE: named temporary files from the start. */
static void named_setup(void)
{
	setup();
	sbx_fs_force_named_temp(true);
}

static void teardown(void)
{
	sbx_path_force_fallback(false);
	sbx_fs_force_named_temp(false);
	close(dirfd_);
	/* Tests leave unreadable directories behind on purpose. */
	char *cmd = NULL;
	if (asprintf(&cmd, "chmod -R u+rwx '%s' 2>/dev/null", tmp) >= 0) {
		if (system(cmd) != 0) {
			/* nothing to fix */
		}
		free(cmd);
	}
	test_rm_rf(tmp);
	free(tmp);
}

/* Lowers the soft fd limit so a walk that kept one fd per level would fail. Valgrind keeps
 * the hard limit for itself, so only the soft one is touched. */

static void expect_no_fd_leak(void)
{
	ck_assert_int_eq(test_count_fds(), fds_at_start);
}

/* ---------------------------------------------------------------------------------------
 * sbx_fs_read_fd
 * ------------------------------------------------------------------------------------- */

static int read_path(const char *rel, size_t max, char **data, size_t *len)
{
	int fd = open(test_path_at(dir, rel), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	int r;

	ck_assert_msg(fd >= 0, "open %s: %s", rel, strerror(errno));
	r = sbx_fs_read_fd(fd, max, data, len);
	close(fd);
	return r;
}

START_TEST(read_regular_files)
{
	char *data = NULL;
	size_t len = 0;

	test_put_file(dir, "f", "hello", 0644);
	ck_assert_int_eq(read_path("f", 100, &data, &len), 0);
	ck_assert_uint_eq(len, 5);
	ck_assert_str_eq(data, "hello");
	free(data);

	test_put_file(dir, "empty", "", 0644);
	ck_assert_int_eq(read_path("empty", 100, &data, &len), 0);
	ck_assert_uint_eq(len, 0);
	ck_assert_str_eq(data, "");
	free(data);

	/* Exactly at the limit is fine, one byte more is not. */
	ck_assert_int_eq(read_path("f", 5, &data, &len), 0);
	free(data);
	ck_assert_int_eq(read_path("f", 4, &data, &len), -SBX_EFBIG);
	ck_assert_ptr_null(data);
	ck_assert_uint_eq(len, 0);
	expect_no_fd_leak();
}
END_TEST

START_TEST(read_large_and_binary)
{
	size_t n = 3 * 1024 * 1024 + 17;
	char *big = malloc(n), *data = NULL;
	size_t len = 0;
	int fd;

	for (size_t k = 0; k < n; k++)
		big[k] = (char)(k * 7);
	fd = open(test_path_at(dir, "big"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ck_assert_int_eq(sbx_write_all(fd, big, n), 0);
	close(fd);
	ck_assert_int_eq(read_path("big", SBX_FILE_READ_MAX, &data, &len), 0);
	ck_assert_uint_eq(len, n);
	ck_assert(memcmp(data, big, n) == 0);
	ck_assert_int_eq(data[n], '\0');
	free(data);
	ck_assert_int_eq(read_path("big", n - 1, &data, &len), -SBX_EFBIG);
	free(big);
}
END_TEST

/* Files whose size stat() gets wrong (procfs says 0) are read to the end anyway. */
START_TEST(read_files_that_lie_about_size)
{
	char *data = NULL;
	size_t len = 0;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(sbx_fs_read_fd(fd, 1 << 20, &data, &len), 0);
	close(fd);
	ck_assert_uint_gt(len, 0);
	ck_assert_ptr_nonnull(strstr(data, "Pid:"));
	free(data);
	fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ck_assert_int_eq(sbx_fs_read_fd(fd, 10, &data, &len), -SBX_EFBIG);
	close(fd);
}
END_TEST

START_TEST(read_refuses_non_regular)
{
	char *data = NULL;
	size_t len = 0;
	int fd;

	ck_assert_int_eq(mkdir(test_path_at(dir, "d"), 0755), 0);
	fd = open(test_path_at(dir, "d"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_eq(sbx_fs_read_fd(fd, 100, &data, &len), -SBX_EISDIR);
	close(fd);

	ck_assert_int_eq(mkfifo(test_path_at(dir, "fifo"), 0644), 0);
	ck_assert_int_eq(read_path("fifo", 100, &data, &len), -SBX_EINVAL);
	ck_assert_str_eq(sbx_last_error(), "not a regular file");

	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ck_assert_int_eq(sbx_fs_read_fd(fd, 100, &data, &len), -SBX_EINVAL);
	close(fd);
	ck_assert_ptr_null(data);
	expect_no_fd_leak();
}
END_TEST

/* ---------------------------------------------------------------------------------------
 * sbx_fs_write_atomic
 * ------------------------------------------------------------------------------------- */

START_TEST(write_creates_and_replaces)
{
	umask(077); /* modes are exact, not filtered by the umask */
	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, "f", "one", 3, 0, 0), 0);
	ck_assert_str_eq(test_slurp(test_path_at(dir, "f")), "one");
	ck_assert_uint_eq(test_mode_of(test_path_at(dir, "f")), 0644);

	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, "f", "two!", 4, 0, 0), 0);
	ck_assert_str_eq(test_slurp(test_path_at(dir, "f")), "two!");

	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, "x", "#!/bin/sh\n", 10, 0755, 0), 0);
	ck_assert_uint_eq(test_mode_of(test_path_at(dir, "x")), 0755);
	/* mode 0 keeps what the file had. */
	ck_assert_int_eq(chmod(test_path_at(dir, "f"), 0600), 0);
	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, "f", "three", 5, 0, 0), 0);
	ck_assert_uint_eq(test_mode_of(test_path_at(dir, "f")), 0600);
	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, "f", "four", 4, 0640, 0), 0);
	ck_assert_uint_eq(test_mode_of(test_path_at(dir, "f")), 0640);

	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, "empty", NULL, 0, 0, 0), 0);
	ck_assert_str_eq(test_slurp(test_path_at(dir, "empty")), "");
	ck_assert(!test_has_temp_files(dir));
	expect_no_fd_leak();
}
END_TEST

START_TEST(write_long_names)
{
	char name[NAME_MAX + 2];

	memset(name, 'n', NAME_MAX);
	name[NAME_MAX] = '\0';
	/* The temporary file's name is shortened to fit. */
	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, name, "x", 1, 0, 0), 0);
	ck_assert_str_eq(test_slurp(test_path_at(dir, name)), "x");
	name[NAME_MAX] = 'n';
	name[NAME_MAX + 1] = '\0';
	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, name, "x", 1, 0, 0), -SBX_ENAMETOOLONG);
	ck_assert(!test_has_temp_files(dir));
}
END_TEST

START_TEST(write_excl)
{
	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, "f", "one", 3, 0, SBX_WRITE_EXCL), 0);
	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, "f", "two", 3, 0, SBX_WRITE_EXCL),
	                 -SBX_EEXIST);
	ck_assert_str_eq(test_slurp(test_path_at(dir, "f")), "one");
	ck_assert_int_eq(symlink("nowhere", test_path_at(dir, "l")), 0);
	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, "l", "two", 3, 0, SBX_WRITE_EXCL),
	                 -SBX_EEXIST);
	ck_assert(!test_has_temp_files(dir));
}
END_TEST

START_TEST(write_replaces_symlinks_never_follows)
{
	struct stat st;

	ck_assert_int_eq(symlink(test_path_at(outside, "secret"), test_path_at(dir, "l")), 0);
	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, "l", "mine", 4, 0, 0), 0);
	ck_assert_int_eq(lstat(test_path_at(dir, "l"), &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0644);
	ck_assert_str_eq(test_slurp(test_path_at(dir, "l")), "mine");
	ck_assert_str_eq(test_slurp(test_path_at(outside, "secret")), "secret");
	ck_assert_uint_eq(test_mode_of(test_path_at(outside, "secret")), 0600);
}
END_TEST

START_TEST(write_refuses)
{
	ck_assert_int_eq(mkdir(test_path_at(dir, "d"), 0755), 0);
	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, "d", "x", 1, 0, 0), -SBX_EISDIR);
	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, "f", "x", 1, 04755, 0), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "mode"));
	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, "f", "x", 1, 02755, 0), -SBX_EINVAL);
	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, "f", "x", 1, 010644, 0), -SBX_EINVAL);
	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, "a/b", "x", 1, 0, 0), -SBX_EINVAL);
	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, "..", "x", 1, 0, 0), -SBX_EINVAL);
	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, "", "x", 1, 0, 0), -SBX_EINVAL);
	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, "f", NULL, 1, 0, 0), -SBX_EINVAL);
	ck_assert(!test_exists(test_path_at(dir, "f")));
	ck_assert(!test_has_temp_files(dir));
	expect_no_fd_leak();
}
END_TEST

START_TEST(write_failure_leaves_nothing)
{
	if (geteuid() == 0) {
		/* A tiny tmpfs fills up mid-write: the temporary file must go. */
		bool mounted = mount("tmpfs", dir, "tmpfs", 0, "size=64k") == 0;

		TEST_NEED(TEST_CAP_MOUNT, mounted, "the ENOSPC check mounts a tiny tmpfs");
		int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		size_t n = 1 << 20;
		char *big = calloc(1, n);
		int r1 = sbx_fs_write_atomic(fd, "big", big, n, 0, 0);
		bool temp_left = test_has_temp_files(dir), target = test_exists(test_path_at(dir, "big"));
		close(fd);
		free(big);
		umount2(dir, MNT_DETACH);
		ck_assert_int_eq(r1, -SBX_ENOSPC);
		ck_assert(!temp_left);
		ck_assert(!target);
	} else {
		/* A directory we may not write to. */
		ck_assert_int_eq(mkdir(test_path_at(dir, "ro"), 0555), 0);
		int fd = open(test_path_at(dir, "ro"), O_PATH | O_DIRECTORY | O_CLOEXEC);
		ck_assert_int_eq(sbx_fs_write_atomic(fd, "f", "x", 1, 0, 0), -SBX_EACCES);
		close(fd);
		ck_assert(!test_has_temp_files(test_path_at(dir, "ro")));
	}
}
END_TEST

/* What an atomic write tells its notes (util/journal.h keeps them): every temporary name,
 * before it exists, with the inode it will have; each note forgotten once the name is gone. */
struct note_log {
	int notes, with_inode, forgotten, existed_when_noted;
	char last[NAME_MAX + 1];
	ino_t last_ino;
};

static void *log_note(void *ctx, int dirfd, const char *name, int fd)
{
	struct note_log *l = ctx;
	struct stat now, fst;
	const struct stat *st = fd >= 0 && fstat(fd, &fst) == 0 ? &fst : NULL;

	l->notes++;
	l->with_inode += st != NULL;
	l->existed_when_noted += fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0;
	snprintf(l->last, sizeof l->last, "%s", name);
	l->last_ino = st ? st->st_ino : 0;
	return l;
}

static void log_forget(void *ctx, void *handle)
{
	struct note_log *l = ctx;

	ck_assert_ptr_eq(handle, l);
	l->forgotten++;
}

START_TEST(write_notes_its_temporary_names)
{
	struct note_log l = { 0 };
	const struct sbx_fs_temp_notes notes = { .note = log_note, .forget = log_forget, .ctx = &l };
	struct stat st;
	bool named = _i == 1;

	sbx_fs_force_named_temp(named);
	ck_assert_int_eq(sbx_fs_write_atomic_noted(&notes, dirfd_, "f", "one", 3, 0, 0), 0);
	ck_assert_str_eq(test_slurp(test_path_at(dir, "f")), "one");
	ck_assert_int_eq(stat(test_path_at(dir, "f"), &st), 0);
	/* Unnamed: one note, with the inode, before the link; named: before the create and again
	 * with the inode. Never after the name appeared, and all forgotten. */
	ck_assert_int_eq(l.notes, named ? 2 : 1);
	ck_assert_int_eq(l.with_inode, 1);
	ck_assert_int_eq(l.existed_when_noted, named ? 1 : 0);
	ck_assert_int_eq(l.forgotten, l.notes);
	ck_assert_uint_eq(l.last_ino, st.st_ino);
	ck_assert(strncmp(l.last, ".f.sbx-", 7) == 0 && strlen(l.last) == 13);
	ck_assert(!test_has_temp_files(dir));
	/* Exclusive and unnamed: linked as its own name, no temporary name to note. */
	memset(&l, 0, sizeof l);
	ck_assert_int_eq(sbx_fs_write_atomic_noted(&notes, dirfd_, "g", "two", 3, 0,
	                                           SBX_WRITE_EXCL), 0);
	ck_assert_int_eq(l.notes, named ? 2 : 0);
	ck_assert_int_eq(l.forgotten, l.notes);
	ck_assert_int_eq(sbx_fs_write_atomic_noted(&notes, dirfd_, "g", "two", 3, 0,
	                                           SBX_WRITE_EXCL), -SBX_EEXIST);
	ck_assert(!test_has_temp_files(dir));
	expect_no_fd_leak();
}
END_TEST

START_TEST(write_keeps_owner_as_root)
{
	struct stat st;

	TEST_NEED(TEST_CAP_ROOT, geteuid() == 0, "giving the file to another owner needs root");
	test_put_file(dir, "f", "old", 0640);
	ck_assert_int_eq(chown(test_path_at(dir, "f"), 4321, 4322), 0);
	ck_assert_int_eq(sbx_fs_write_atomic(dirfd_, "f", "new", 3, 0, 0), 0);
	ck_assert_int_eq(stat(test_path_at(dir, "f"), &st), 0);
	ck_assert_uint_eq(st.st_uid, 4321);
	ck_assert_uint_eq(st.st_gid, 4322);
	ck_assert_uint_eq(st.st_mode & 07777, 0640);
}
END_TEST

START_TEST(write_all_to_pipe)
{
	int p[2];
	char buf[8] = { 0 };

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(sbx_write_all(p[1], "abc", 3), 0);
	ck_assert_int_eq(read(p[0], buf, sizeof buf), 3);
	ck_assert_str_eq(buf, "abc");
	close(p[0]);
	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(sbx_write_all(p[1], "abc", 3), -SBX_EIO);
	close(p[1]);
}
END_TEST

/* ---------------------------------------------------------------------------------------
 * sbx_fs_remove_tree / sbx_fs_empty_dir
 * ------------------------------------------------------------------------------------- */

static void build_tree(void)
{
	ck_assert_int_eq(mkdir(test_path_at(dir, "t"), 0755), 0);
	ck_assert_int_eq(mkdir(test_path_at(dir, "t/a"), 0755), 0);
	ck_assert_int_eq(mkdir(test_path_at(dir, "t/a/b"), 0755), 0);
	ck_assert_int_eq(mkdir(test_path_at(dir, "t/empty"), 0755), 0);
	test_put_file(dir, "t/f1", "1", 0644);
	test_put_file(dir, "t/a/f2", "2", 0000);
	test_put_file(dir, "t/a/b/f3", "3", 0444);
	ck_assert_int_eq(mkfifo(test_path_at(dir, "t/a/fifo"), 0644), 0);
	/* Links out must be removed, their targets kept. */
	ck_assert_int_eq(symlink(outside, test_path_at(dir, "t/link_dir_out")), 0);
	ck_assert_int_eq(symlink(test_path_at(outside, "secret"), test_path_at(dir, "t/a/link_file_out")), 0);
	ck_assert_int_eq(symlink("../../..", test_path_at(dir, "t/a/b/link_up")), 0);
}

static void expect_outside_intact(void)
{
	ck_assert_str_eq(test_slurp(test_path_at(outside, "secret")), "secret");
	ck_assert(test_exists(outside));
}

START_TEST(remove_tree_removes_everything_inside_only)
{
	build_tree();
	ck_assert_int_eq(sbx_fs_remove_tree(dirfd_, "t"), 0);
	ck_assert(!test_exists(test_path_at(dir, "t")));
	expect_outside_intact();
	expect_no_fd_leak();
}
END_TEST

START_TEST(remove_tree_handles_locked_dirs)
{
	build_tree();
	/* Unlistable, unwritable and unsearchable directories: made u+rwx as needed. */
	ck_assert_int_eq(chmod(test_path_at(dir, "t/a/b"), 0500), 0);
	ck_assert_int_eq(chmod(test_path_at(dir, "t/a"), 0000), 0);
	ck_assert_int_eq(chmod(test_path_at(dir, "t/empty"), 0000), 0);
	ck_assert_int_eq(chmod(test_path_at(dir, "t"), 0300), 0);
	ck_assert_int_eq(sbx_fs_remove_tree(dirfd_, "t"), 0);
	ck_assert(!test_exists(test_path_at(dir, "t")));
	expect_outside_intact();
	expect_no_fd_leak();
}
END_TEST

START_TEST(remove_tree_of_files_and_links)
{
	test_put_file(dir, "f", "x", 0644);
	ck_assert_int_eq(sbx_fs_remove_tree(dirfd_, "f"), 0);
	ck_assert(!test_exists(test_path_at(dir, "f")));
	ck_assert_int_eq(symlink(outside, test_path_at(dir, "l")), 0);
	ck_assert_int_eq(sbx_fs_remove_tree(dirfd_, "l"), 0);
	ck_assert(!test_exists(test_path_at(dir, "l")));
	expect_outside_intact();
	ck_assert_int_eq(sbx_fs_remove_tree(dirfd_, "missing"), -SBX_ENOENT);
	ck_assert_int_eq(sbx_fs_remove_tree(dirfd_, "."), -SBX_EINVAL);
	ck_assert_int_eq(sbx_fs_remove_tree(dirfd_, ".."), -SBX_EINVAL);
	ck_assert_int_eq(sbx_fs_remove_tree(dirfd_, "a/b"), -SBX_EINVAL);
	expect_no_fd_leak();
}
END_TEST

/* Deeper than any fd table or stack would allow for a recursive removal. */
START_TEST(remove_tree_deep)
{
	enum { DEPTH = 1000 };
	int fd;

	ck_assert_int_eq(mkdir(test_path_at(dir, "deep"), 0755), 0);
	fd = open(test_path_at(dir, "deep"), O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (int k = 0; k < DEPTH; k++) {
		ck_assert_int_eq(mkdirat(fd, "d", 0755), 0);
		int next = openat(fd, "d", O_PATH | O_DIRECTORY | O_CLOEXEC);
		ck_assert_int_ge(next, 0);
		if (k % 100 == 0) {
			int f = openat(next, "file", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
			close(f);
		}
		close(fd);
		fd = next;
	}
	close(fd);
	test_limit_fds(32);
	ck_assert_int_eq(sbx_fs_remove_tree(dirfd_, "deep"), 0);
	ck_assert(!test_exists(test_path_at(dir, "deep")));
}
END_TEST

START_TEST(remove_tree_stops_at_mounts)
{
	int r1, r2, r3;
	bool kept1, kept2;

	TEST_NEED(TEST_CAP_ROOT, geteuid() == 0, "the mounts the tree holds need root");
	ck_assert_int_eq(mkdir(test_path_at(dir, "t"), 0755), 0);
	ck_assert_int_eq(mkdir(test_path_at(dir, "t/mnt"), 0755), 0);
	ck_assert_int_eq(mkdir(test_path_at(dir, "t/bind"), 0755), 0);
	TEST_NEED(TEST_CAP_MOUNT, mount("tmpfs", test_path_at(dir, "t/mnt"), "tmpfs", 0,
	                                "size=64k") == 0, "mounting a tmpfs in the tree fails");
	test_put_file(dir, "t/mnt/precious", "p", 0644);
	/* A bind mount of the same file system: same st_dev, still a mount. */
	bool bound = mount(outside, test_path_at(dir, "t/bind"), "none", MS_BIND, NULL) == 0;

	if (!bound)
		umount2(test_path_at(dir, "t/mnt"), MNT_DETACH);
	TEST_NEED(TEST_CAP_MOUNT, bound, "a bind mount in the tree fails");
	r1 = sbx_fs_remove_tree(dirfd_, "t");
	kept1 = test_exists(test_path_at(dir, "t/mnt/precious"));
	kept2 = test_exists(test_path_at(dir, "t/bind/secret"));
	int tfd = open(test_path_at(dir, "t"), O_PATH | O_DIRECTORY | O_CLOEXEC);
	r2 = sbx_fs_remove_tree(tfd, "mnt");
	r3 = sbx_fs_empty_dir(tfd);
	close(tfd);
	umount2(test_path_at(dir, "t/bind"), MNT_DETACH);
	umount2(test_path_at(dir, "t/mnt"), MNT_DETACH);
	ck_assert_int_eq(r1, -SBX_EBUSY);
	ck_assert(kept1);
	ck_assert(kept2);
	ck_assert_int_eq(r2, -SBX_EBUSY);
	ck_assert_int_eq(r3, -SBX_EBUSY);
	expect_outside_intact();
}
END_TEST

START_TEST(empty_dir_keeps_the_dir)
{
	build_tree();
	ck_assert_int_eq(chmod(test_path_at(dir, "t/a"), 0000), 0);
	ck_assert_int_eq(sbx_fs_empty_dir(dirfd_), 0);
	ck_assert(test_exists(dir));
	ck_assert(!test_exists(test_path_at(dir, "t")));
	ck_assert_uint_eq(test_mode_of(dir), 0755);
	expect_outside_intact();
	/* Empty already: fine. */
	ck_assert_int_eq(sbx_fs_empty_dir(dirfd_), 0);
	expect_no_fd_leak();
}
END_TEST

/* sbx_fs_empty_dir(dirfd_) as an ordinary user, the directory's owner: root ignores the mode,
 * so a root test gives the directory to nobody and calls it in a child running as nobody. */
static int empty_dir_as_its_owner(void)
{
	const uid_t nobody = 65534;
	int status;
	pid_t pid;

	if (geteuid() != 0)
		return sbx_fs_empty_dir(dirfd_);
	ck_assert_int_eq(chown(dir, nobody, nobody), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(nobody, nobody, nobody) < 0 ||
		    setresuid(nobody, nobody, nobody) < 0)
			_exit(255);
		_exit(-sbx_fs_empty_dir(dirfd_));
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) != 255);
	return -WEXITSTATUS(status);
}

START_TEST(empty_dir_does_not_unlock_the_top)
{
	test_put_file(dir, "f", "x", 0644);
	ck_assert_int_eq(chmod(dir, 0555), 0);
	ck_assert_int_eq(empty_dir_as_its_owner(), -SBX_EACCES);
	ck_assert_uint_eq(test_mode_of(dir), 0555);
	ck_assert(test_exists(test_path_at(dir, "f")));
	ck_assert_int_eq(chmod(dir, 0755), 0);
}
END_TEST

/* ---------------------------------------------------------------------------------------
 * sbx_fs_make_temp_dir
 * ------------------------------------------------------------------------------------- */

START_TEST(temp_dirs)
{
	char *p = NULL;
	char want[PATH_MAX];

	setenv("TMPDIR", dir, 1);
	ck_assert_int_eq(sbx_fs_make_temp_dir("sbx-ws", &p), 0);
	snprintf(want, sizeof want, "%s/sbx-ws-", dir);
	ck_assert_msg(strncmp(p, want, strlen(want)) == 0, "%s", p);
	ck_assert_uint_eq(strlen(p), strlen(want) + 6);
	ck_assert_uint_eq(test_mode_of(p), 0700);
	rmdir(p);
	free(p);

	setenv("TMPDIR", "relative/dir", 1);
	ck_assert_int_eq(sbx_fs_make_temp_dir("sbx-ws", &p), 0);
	ck_assert(strncmp(p, "/tmp/sbx-ws-", 12) == 0);
	rmdir(p);
	free(p);

	unsetenv("TMPDIR");
	ck_assert_int_eq(sbx_fs_make_temp_dir("sbx-ws", &p), 0);
	ck_assert(strncmp(p, "/tmp/sbx-ws-", 12) == 0);
	rmdir(p);
	free(p);

	setenv("TMPDIR", test_path_at(dir, "missing"), 1);
	ck_assert_int_eq(sbx_fs_make_temp_dir("sbx-ws", &p), -SBX_ENOENT);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(sbx_fs_make_temp_dir("a/b", &p), -SBX_EINVAL);
	ck_assert_int_eq(sbx_fs_make_temp_dir("", &p), -SBX_EINVAL);
}
END_TEST

/* ---------------------------------------------------------------------------------------
 * The file API on hand-made workspaces
 * ------------------------------------------------------------------------------------- */

static const char *view_root(void *state)
{
	return "/workspace";
}

static const sbx_backend_ops host_ops = {
	.size = sizeof(sbx_backend_ops),
	.abi_version = SBX_BACKEND_ABI_VERSION,
	.name = "fakehost",
	.caps = SBX_BACKEND_CAP_HOST_FILES,
	.root = view_root,
};

static sbx_workspace host_ws;

static void host_setup(void)
{
	setup();
	memset(&host_ws, 0, sizeof host_ws);
	host_ws.ops = &host_ops;
	host_ws.caps = host_ops.caps;
	host_ws.workdir = dir;
	host_ws.root_fd = dirfd_;
}

START_TEST(api_write_read_roundtrip)
{
	char *data = NULL;
	size_t len = 0;

	sbx_path_force_fallback(_i == 1);

	ck_assert_int_eq(sbx_file_write(&host_ws, "/workspace/a.txt", "hi\0there", 8, 0, 0), 0);
	ck_assert_int_eq(sbx_file_read(&host_ws, "a.txt", &data, &len), 0);
	ck_assert_uint_eq(len, 8);
	ck_assert(memcmp(data, "hi\0there", 9) == 0);
	sbx_free(data);

	ck_assert_int_eq(sbx_file_write(&host_ws, "sub/dir/b.txt", "b", 1, 0, 0), -SBX_ENOENT);
	ck_assert_int_eq(sbx_file_write(&host_ws, "sub/dir/b.txt", "b", 1, 0600, SBX_WRITE_MKDIRS),
	                 0);
	ck_assert_str_eq(test_slurp(test_path_at(dir, "sub/dir/b.txt")), "b");
	ck_assert_uint_eq(test_mode_of(test_path_at(dir, "sub/dir/b.txt")), 0600);
	ck_assert_int_eq(sbx_file_write(&host_ws, "sub/dir/b.txt", "c", 1, 0, SBX_WRITE_EXCL),
	                 -SBX_EEXIST);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "sub/dir/b.txt"));
	ck_assert_int_eq(sbx_file_write(&host_ws, "sub", "c", 1, 0, 0), -SBX_EISDIR);
	ck_assert_int_eq(sbx_file_write(&host_ws, "sub/", "c", 1, 0, 0), -SBX_EISDIR);
	ck_assert_int_eq(sbx_file_write(&host_ws, "/workspace", "c", 1, 0, 0), -SBX_EISDIR);
	ck_assert_int_eq(sbx_file_write(&host_ws, ".", "c", 1, 0, 0), -SBX_EISDIR);
	ck_assert_int_eq(sbx_file_write(&host_ws, "x", "c", 1, 04755, 0), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "mode"));
	ck_assert_int_eq(sbx_file_write(&host_ws, "x", "c", 1, 0, 0x80), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_write(&host_ws, "x", NULL, 1, 0, 0), -SBX_EINVAL);
	ck_assert(!test_has_temp_files(dir));
	expect_no_fd_leak();
}
END_TEST

START_TEST(api_paths_stay_inside)
{
	char *data = NULL;
	size_t len = 0;

	sbx_path_force_fallback(_i == 1);

	ck_assert_int_eq(symlink("../outside/secret", test_path_at(dir, "out")), 0);
	ck_assert_int_eq(symlink(outside, test_path_at(dir, "outdir")), 0);
	ck_assert_int_eq(sbx_file_read(&host_ws, "/etc/passwd", &data, &len), -SBX_EESCAPE);
	ck_assert_str_eq(sbx_last_error(),
	                 "path '/etc/passwd' is outside the workspace root '/workspace'");
	ck_assert_int_eq(sbx_file_read(&host_ws, "/workspace2/x", &data, &len), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_read(&host_ws, "../outside/secret", &data, &len), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_read(&host_ws, "/workspace/../outside/secret", &data, &len),
	                 -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_read(&host_ws, "out", &data, &len), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_read(&host_ws, "outdir/secret", &data, &len), -SBX_EESCAPE);
	ck_assert_ptr_null(data);
	ck_assert_int_eq(sbx_file_write(&host_ws, "outdir/new", "x", 1, 0, 0), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_write(&host_ws, "outdir/a/new", "x", 1, 0, SBX_WRITE_MKDIRS),
	                 -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_mkdir(&host_ws, "outdir/newdir", 0), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_list(&host_ws, "outdir", &data), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_remove(&host_ws, "outdir/secret", 0), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_read(&host_ws, "bad\xff", &data, &len), -SBX_EINVAL);
	ck_assert_str_eq(sbx_last_error(), "path: not valid UTF-8");
	/* Writing over the escaping link replaces the link. */
	ck_assert_int_eq(sbx_file_write(&host_ws, "out", "mine", 4, 0, 0), 0);
	ck_assert_str_eq(test_slurp(test_path_at(dir, "out")), "mine");
	/* Removing the dir link removes the link only. */
	ck_assert_int_eq(sbx_file_remove(&host_ws, "outdir", SBX_REMOVE_RECURSIVE), 0);
	ck_assert(!test_exists(test_path_at(dir, "outdir")));
	ck_assert(!test_exists(test_path_at(outside, "new")));
	expect_outside_intact();
	expect_no_fd_leak();
}
END_TEST

START_TEST(api_read_special_files)
{
	char *data = NULL;
	size_t len = 0;

	sbx_path_force_fallback(_i == 1);

	ck_assert_int_eq(symlink("sub/f", test_path_at(dir, "in")), 0);
	ck_assert_int_eq(mkdir(test_path_at(dir, "sub"), 0755), 0);
	test_put_file(dir, "sub/f", "inside", 0644);
	ck_assert_int_eq(sbx_file_read(&host_ws, "in", &data, &len), 0);
	ck_assert_str_eq(data, "inside");
	sbx_free(data);
	data = NULL;
	/* A FIFO must not block the reader. */
	ck_assert_int_eq(mkfifo(test_path_at(dir, "fifo"), 0644), 0);
	alarm(5);
	ck_assert_int_eq(sbx_file_read(&host_ws, "fifo", &data, &len), -SBX_EINVAL);
	alarm(0);
	ck_assert_str_eq(sbx_last_error(), "read 'fifo': not a regular file");
	ck_assert_int_eq(sbx_file_read(&host_ws, "sub", &data, &len), -SBX_EISDIR);
	ck_assert_int_eq(sbx_file_read(&host_ws, "/workspace", &data, &len), -SBX_EISDIR);
	ck_assert_int_eq(sbx_file_read(&host_ws, "missing", &data, &len), -SBX_ENOENT);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "missing"));
	ck_assert_int_eq(sbx_file_read(&host_ws, "sub/f/x", &data, &len), -SBX_ENOTDIR);
	ck_assert_ptr_null(data);
	expect_no_fd_leak();
}
END_TEST

START_TEST(api_stat)
{
	sbx_stat st = { .size = sizeof st };
	struct { size_t size; int type; uint32_t mode; } small = { sizeof small, -1, 0 };

	sbx_path_force_fallback(_i == 1);

	test_put_file(dir, "f", "12345", 0640);
	ck_assert_int_eq(symlink("f", test_path_at(dir, "l")), 0);
	ck_assert_int_eq(sbx_file_stat(&host_ws, "f", &st), 0);
	ck_assert_int_eq(st.type, SBX_FILE_REGULAR);
	ck_assert_uint_eq(st.mode, 0640);
	ck_assert_uint_eq(st.file_size, 5);
	ck_assert_int_gt(st.mtime_sec, 0);
	ck_assert_int_eq(sbx_file_stat(&host_ws, "l", &st), 0);
	ck_assert_int_eq(st.type, SBX_FILE_SYMLINK);
	ck_assert_int_eq(sbx_file_stat(&host_ws, "", &st), 0);
	ck_assert_int_eq(st.type, SBX_FILE_DIRECTORY);
	ck_assert_int_eq(sbx_file_stat(&host_ws, "/workspace/", &st), 0);
	ck_assert_int_eq(st.type, SBX_FILE_DIRECTORY);

	/* An older caller's smaller struct: only its fields are written. */
	ck_assert_int_eq(sbx_file_stat(&host_ws, "f", (sbx_stat *)&small), 0);
	ck_assert_int_eq(small.type, SBX_FILE_REGULAR);
	ck_assert_uint_eq(small.mode, 0640);

	st.size = sizeof(size_t);
	ck_assert_int_eq(sbx_file_stat(&host_ws, "f", &st), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_stat(&host_ws, "f", NULL), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_stat(NULL, "f", &st), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "ws"));
	st.size = sizeof st;
	ck_assert_int_eq(sbx_file_stat(&host_ws, NULL, &st), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "path"));
	ck_assert_int_eq(sbx_file_stat(&host_ws, "missing", &st), -SBX_ENOENT);
}
END_TEST

START_TEST(api_list)
{
	char *json = NULL;

	sbx_path_force_fallback(_i == 1);

	test_put_file(dir, "b.txt", "12345", 0644);
	ck_assert_int_eq(mkdir(test_path_at(dir, "a"), 0755), 0);
	ck_assert_int_eq(symlink("b.txt", test_path_at(dir, "c")), 0);
	ck_assert_int_eq(mkfifo(test_path_at(dir, "d"), 0644), 0);
	test_put_file(dir, "a/q\"uote", "", 0644);
	ck_assert_int_eq(sbx_file_list(&host_ws, "/workspace", &json), 0);
	/* mtimes are checked by the integration test; here the shape and the order. */
	ck_assert_ptr_nonnull(strstr(json, "{\"name\":\"a\",\"type\":\"dir\",\"size\":0,"));
	ck_assert_ptr_nonnull(strstr(json, "{\"name\":\"b.txt\",\"type\":\"file\",\"size\":5,"));
	ck_assert_ptr_nonnull(strstr(json, "{\"name\":\"c\",\"type\":\"symlink\",\"size\":5,"));
	ck_assert_ptr_nonnull(strstr(json, "{\"name\":\"d\",\"type\":\"other\",\"size\":0,"));
	ck_assert(strstr(json, "\"a\"") < strstr(json, "\"b.txt\""));
	ck_assert(strstr(json, "\"b.txt\"") < strstr(json, "\"c\""));
	ck_assert_int_eq(json[0], '[');
	sbx_free(json);

	ck_assert_int_eq(sbx_file_list(&host_ws, "a", &json), 0);
	ck_assert_ptr_nonnull(strstr(json, "\"name\":\"q\\\"uote\""));
	sbx_free(json);
	ck_assert_int_eq(mkdir(test_path_at(dir, "e"), 0755), 0);
	ck_assert_int_eq(sbx_file_list(&host_ws, "e", &json), 0);
	ck_assert_str_eq(json, "[]");
	sbx_free(json);
	ck_assert_int_eq(sbx_file_list(&host_ws, "b.txt", &json), -SBX_ENOTDIR);
	ck_assert_ptr_null(json);
	ck_assert_int_eq(sbx_file_list(&host_ws, "missing", &json), -SBX_ENOENT);
	ck_assert_int_eq(sbx_file_list(&host_ws, "a", NULL), -SBX_EINVAL);
	expect_no_fd_leak();
}
END_TEST

START_TEST(api_mkdir)
{
	sbx_path_force_fallback(_i == 1);
	ck_assert_int_eq(sbx_file_mkdir(&host_ws, "x/y/z", 0), 0);
	ck_assert_uint_eq(test_mode_of(test_path_at(dir, "x/y/z")) & 0700, 0700);
	ck_assert_int_eq(sbx_file_mkdir(&host_ws, "x/y/z", 0), 0); /* exists: fine */
	ck_assert_int_eq(sbx_file_mkdir(&host_ws, "/workspace/x/y/w/", 0700), 0);
	ck_assert_uint_eq(test_mode_of(test_path_at(dir, "x/y/w")) & 0077, 0);
	ck_assert_int_eq(sbx_file_mkdir(&host_ws, "", 0), 0);
	ck_assert_int_eq(sbx_file_mkdir(&host_ws, ".", 0), 0);
	ck_assert_int_eq(symlink("x/y", test_path_at(dir, "ly")), 0);
	ck_assert_int_eq(sbx_file_mkdir(&host_ws, "ly", 0), 0);
	ck_assert_int_eq(sbx_file_mkdir(&host_ws, "ly/new", 0), 0);
	ck_assert(test_exists(test_path_at(dir, "x/y/new")));
	test_put_file(dir, "f", "", 0644);
	ck_assert_int_eq(sbx_file_mkdir(&host_ws, "f", 0), -SBX_EEXIST);
	ck_assert_int_eq(sbx_file_mkdir(&host_ws, "f/sub", 0), -SBX_ENOTDIR);
	ck_assert_int_eq(sbx_file_mkdir(&host_ws, "..", 0), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_mkdir(&host_ws, "q", 02755), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_mkdir(&host_ws, "q", 0100755), -SBX_EINVAL);
	ck_assert_int_eq(symlink("nowhere", test_path_at(dir, "dangling")), 0);
	ck_assert_int_ne(sbx_file_mkdir(&host_ws, "dangling", 0), 0);
	expect_no_fd_leak();
}
END_TEST

START_TEST(api_remove)
{
	sbx_path_force_fallback(_i == 1);
	ck_assert_int_eq(sbx_file_remove(&host_ws, "", 0), -SBX_EPERM);
	ck_assert_int_eq(sbx_file_remove(&host_ws, ".", SBX_REMOVE_RECURSIVE), -SBX_EPERM);
	ck_assert_int_eq(sbx_file_remove(&host_ws, "/workspace", SBX_REMOVE_RECURSIVE),
	                 -SBX_EPERM);
	ck_assert_int_eq(sbx_file_remove(&host_ws, "/workspace/", 0), -SBX_EPERM);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "root"));
	ck_assert_int_eq(sbx_file_remove(&host_ws, "..", 0), -SBX_EESCAPE);
	ck_assert(test_exists(dir));

	ck_assert_int_eq(mkdir(test_path_at(dir, "d"), 0755), 0);
	test_put_file(dir, "d/f", "x", 0644);
	ck_assert_int_eq(sbx_file_remove(&host_ws, "d", 0), -SBX_ENOTEMPTY);
	ck_assert_int_eq(sbx_file_remove(&host_ws, "d/f/", 0), -SBX_ENOTDIR);
	ck_assert_int_eq(sbx_file_remove(&host_ws, "d/f", 0), 0);
	ck_assert_int_eq(sbx_file_remove(&host_ws, "d/f", 0), -SBX_ENOENT);
	ck_assert_int_eq(sbx_file_remove(&host_ws, "d/", 0), 0);
	ck_assert(!test_exists(test_path_at(dir, "d")));

	ck_assert_int_eq(mkdir(test_path_at(dir, "t"), 0755), 0);
	ck_assert_int_eq(mkdir(test_path_at(dir, "t/u"), 0755), 0);
	test_put_file(dir, "t/u/f", "x", 0644);
	ck_assert_int_eq(sbx_file_remove(&host_ws, "t", SBX_REMOVE_RECURSIVE), 0);
	ck_assert(!test_exists(test_path_at(dir, "t")));
	ck_assert_int_eq(sbx_file_remove(&host_ws, "t", 0x10), -SBX_EINVAL);
	expect_no_fd_leak();
}
END_TEST

START_TEST(api_argument_checks)
{
	char *data = (char *)"junk";
	size_t len = 9;

	ck_assert_int_eq(sbx_file_read(NULL, "a", &data, &len), -SBX_EINVAL);
	ck_assert_ptr_null(data);
	ck_assert_uint_eq(len, 0);
	ck_assert_int_eq(sbx_file_read(&host_ws, NULL, &data, &len), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_read(&host_ws, "a", NULL, &len), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "data"));
	ck_assert_int_eq(sbx_file_read(&host_ws, "a", &data, NULL), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "len"));
	ck_assert_int_eq(sbx_file_write(NULL, "a", "x", 1, 0, 0), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_write(&host_ws, NULL, "x", 1, 0, 0), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_list(NULL, "a", &data), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_list(&host_ws, NULL, &data), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_mkdir(NULL, "a", 0), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_mkdir(&host_ws, NULL, 0), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_remove(NULL, "a", 0), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_remove(&host_ws, NULL, 0), -SBX_EINVAL);
}
END_TEST

/* A backend that moves files itself: it sees only normalised paths. */
static char last_rel[PATH_MAX];
static int remote_calls;

static int remote_read(void *state, const char *rel, char **data, size_t *len)
{
	snprintf(last_rel, sizeof last_rel, "%s", rel);
	remote_calls++;
	*data = strdup("remote");
	*len = 6;
	return 0;
}

static int remote_write(void *state, const char *rel, const void *data, size_t len,
                        unsigned mode, uint32_t flags)
{
	snprintf(last_rel, sizeof last_rel, "%s", rel);
	remote_calls++;
	return 0;
}

static int remote_stat(void *state, const char *rel, sbx_stat *st)
{
	snprintf(last_rel, sizeof last_rel, "%s", rel);
	remote_calls++;
	st->type = SBX_FILE_REGULAR;
	st->mode = 0600;
	st->file_size = 42;
	st->mtime_sec = 7;
	st->mtime_nsec = 8;
	return 0;
}

static int remote_remove(void *state, const char *rel, uint32_t flags)
{
	snprintf(last_rel, sizeof last_rel, "%s", rel);
	remote_calls++;
	return 0;
}

static const sbx_backend_ops remote_ops = {
	.size = sizeof(sbx_backend_ops),
	.abi_version = SBX_BACKEND_ABI_VERSION,
	.name = "fakeremote",
	.caps = 0,
	.root = view_root,
	.file_read = remote_read,
	.file_write = remote_write,
	.file_stat = remote_stat,
	.file_remove = remote_remove,
	/* no file_list, no file_mkdir */
};

static sbx_workspace remote_ws = {
	.ops = &remote_ops,
	.root_fd = -1,
	.state_fd = -1,
	.state_root_fd = -1,
};

START_TEST(api_remote_backend_gets_normalised_paths)
{
	char *data = NULL;
	size_t len = 0;
	sbx_stat st = { .size = sizeof st };

	ck_assert_int_eq(sbx_file_read(&remote_ws, "/workspace/a/./b/../c", &data, &len), 0);
	ck_assert_str_eq(last_rel, "a/c");
	ck_assert_str_eq(data, "remote");
	sbx_free(data);
	ck_assert_int_eq(sbx_file_write(&remote_ws, "x//y/", "d", 1, 0, 0), 0);
	ck_assert_str_eq(last_rel, "x/y");
	ck_assert_int_eq(sbx_file_stat(&remote_ws, ".", &st), 0);
	ck_assert_str_eq(last_rel, "");
	ck_assert_uint_eq(st.file_size, 42);
	ck_assert_int_eq(st.mtime_nsec, 8);

	remote_calls = 0;
	ck_assert_int_eq(sbx_file_read(&remote_ws, "a/../../etc/passwd", &data, &len),
	                 -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_read(&remote_ws, "/etc/passwd", &data, &len), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_write(&remote_ws, "..", "d", 1, 0, 0), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_write(&remote_ws, "/workspace", "d", 1, 0, 0), -SBX_EISDIR);
	ck_assert_int_eq(sbx_file_remove(&remote_ws, "a/..", SBX_REMOVE_RECURSIVE), -SBX_EPERM);
	ck_assert_int_eq(remote_calls, 0);

	ck_assert_int_eq(sbx_file_list(&remote_ws, "a", &data), -SBX_ENOSYS);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "fakeremote"));
	ck_assert_int_eq(sbx_file_mkdir(&remote_ws, "a", 0), -SBX_ENOSYS);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "fakeremote"));
	ck_assert_int_eq(sbx_file_mkdir(&remote_ws, "", 0), -SBX_ENOSYS);
}
END_TEST

static Suite *fs_suite(void)
{
	Suite *s = suite_create("fs");
	TCase *tc = tcase_create("fs");
	TCase *as_root = tcase_create("fs-as-root");

	tcase_set_tags(as_root, "root");
	tcase_add_checked_fixture(as_root, setup, teardown);
	/* Deep trees are slow to remove on some disks (rm -rf too). */
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, read_regular_files);
	tcase_add_test(tc, read_large_and_binary);
	tcase_add_test(tc, read_files_that_lie_about_size);
	tcase_add_test(tc, read_refuses_non_regular);
	tcase_add_test(tc, write_creates_and_replaces);
	tcase_add_test(tc, write_long_names);
	tcase_add_test(tc, write_excl);
	tcase_add_test(tc, write_replaces_symlinks_never_follows);
	tcase_add_test(tc, write_refuses);
	tcase_add_test(tc, write_failure_leaves_nothing);
	tcase_add_test(as_root, write_keeps_owner_as_root);
	tcase_add_test(tc, write_all_to_pipe);
	tcase_add_test(tc, remove_tree_removes_everything_inside_only);
	tcase_add_test(tc, remove_tree_handles_locked_dirs);
	tcase_add_test(tc, remove_tree_of_files_and_links);
	tcase_add_test(tc, remove_tree_deep);
	tcase_add_test(as_root, remove_tree_stops_at_mounts);
	tcase_add_test(tc, empty_dir_keeps_the_dir);
	tcase_add_test(tc, empty_dir_does_not_unlock_the_top);
	tcase_add_test(tc, temp_dirs);
	tcase_add_loop_test(tc, write_notes_its_temporary_names, 0, 2);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, as_root);

	tc = tcase_create("named_temp");
	tcase_add_checked_fixture(tc, named_setup, teardown);
	tcase_add_test(tc, write_creates_and_replaces);
	tcase_add_test(tc, write_long_names);
	tcase_add_test(tc, write_excl);
	tcase_add_test(tc, write_replaces_symlinks_never_follows);
	tcase_add_test(tc, write_refuses);
	tcase_add_test(tc, write_failure_leaves_nothing);
	suite_add_tcase(s, tc);

	/* What only root can set up; tagged 'root', a meson test of its own. */
	tc = tcase_create("named_temp-as-root");
	tcase_set_tags(tc, "root");
	tcase_add_checked_fixture(tc, named_setup, teardown);
	tcase_add_test(tc, write_keeps_owner_as_root);
	suite_add_tcase(s, tc);

	tc = tcase_create("file_api");
	tcase_add_checked_fixture(tc, host_setup, teardown);
	tcase_add_loop_test(tc, api_write_read_roundtrip, 0, 2);
	tcase_add_loop_test(tc, api_paths_stay_inside, 0, 2);
	tcase_add_loop_test(tc, api_read_special_files, 0, 2);
	tcase_add_loop_test(tc, api_stat, 0, 2);
	tcase_add_loop_test(tc, api_list, 0, 2);
	tcase_add_loop_test(tc, api_mkdir, 0, 2);
	tcase_add_loop_test(tc, api_remove, 0, 2);
	tcase_add_test(tc, api_argument_checks);
	tcase_add_test(tc, api_remote_backend_gets_normalised_paths);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(fs_suite());
}
