/* The file API through the public interface, on the local backend: reads and atomic writes,
 * stat, list, mkdir and remove, and every way out of the root an agent might try. The whole
 * suite runs twice: as is, and in a child whose seccomp filter hides openat2, so the library's
 * component-walk fallback answers the same questions. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "support.h"

static char *tmp;                       /* holds ws/, ws2/ and outside/ */
static char wsdir[PATH_MAX / 2], sibling[PATH_MAX / 2], outside[PATH_MAX / 2];
static char root[PATH_MAX / 2];         /* sbx_workspace_root() */
static sbx_workspace *ws;

/* ---- helpers ----------------------------------------------------------------------------- */

/* Reads path and expects exactly want. */
static void read_is(const char *path, const char *want)
{
	char *data = NULL;
	size_t len = 0;
	int r = sbx_file_read(ws, path, &data, &len);

	ck_assert_msg(r == 0, "read '%s': %d %s", path, r, sbx_last_error());
	ck_assert_uint_eq(len, strlen(want));
	ck_assert_str_eq(data, want);
	sbx_free(data);
}

/* Expects code, and a message that names the path. */
static void read_fails(const char *path, int code)
{
	char *data = NULL;
	size_t len = 7;
	int r = sbx_file_read(ws, path, &data, &len);

	ck_assert_msg(r == code, "read '%s' gave %d (%s), want %d", path, r,
	              r ? sbx_last_error() : "success", code);
	ck_assert_ptr_null(data);
	ck_assert_uint_eq(len, 0);
	ck_assert_str_ne(sbx_last_error(), "");
}

static void expect_outside_intact(void)
{
	ck_assert_str_eq(test_slurp(test_path_at(outside, "secret")), "secret");
	ck_assert_uint_eq(test_mode_of(test_path_at(outside, "secret")), 0600);
	ck_assert(!test_exists(test_path_at(outside, "new")));
	ck_assert(!test_exists(test_path_at(outside, "created")));
}

static void setup(void)
{
	char *cfg = NULL;

	tmp = test_mkdtemp();
	snprintf(wsdir, sizeof wsdir, "%s/ws", tmp);
	snprintf(sibling, sizeof sibling, "%s/ws2", tmp);
	snprintf(outside, sizeof outside, "%s/outside", tmp);
	ck_assert_int_eq(mkdir(wsdir, 0755), 0);
	ck_assert_int_eq(mkdir(sibling, 0755), 0);
	ck_assert_int_eq(mkdir(outside, 0755), 0);
	test_put_file(outside, "secret", "secret", 0600);
	test_put_file(sibling, "file", "sibling", 0644);
	ck_assert_int_ge(asprintf(&cfg, "{\"backend\":\"local\",\"workdir\":\"%s\"}", wsdir), 0);
	ck_assert_msg(sbx_workspace_open(cfg, &ws) == 0, "open: %s", sbx_last_error());
	free(cfg);
	snprintf(root, sizeof root, "%s", sbx_workspace_root(ws));
}

static void teardown(void)
{
	char *cmd = NULL;

	sbx_workspace_close(ws);
	ws = NULL;
	if (asprintf(&cmd, "chmod -R u+rwx '%s' 2>/dev/null", tmp) >= 0) {
		if (system(cmd) != 0) {
			/* nothing was locked */
		}
		free(cmd);
	}
	test_rm_rf(tmp);
	free(tmp);
}

/* ---- reading and writing ------------------------------------------------------------------- */

START_TEST(write_then_read)
{
	char *data = NULL;
	size_t len = 0;

	ck_assert_int_eq(sbx_file_write(ws, "a.txt", "hello", 5, 0, 0), 0);
	read_is("a.txt", "hello");
	read_is(test_path_at(root, "a.txt"), "hello");
	read_is("./a.txt", "hello");
	ck_assert_str_eq(test_slurp(test_path_at(wsdir, "a.txt")), "hello");

	/* Binary content with NULs; *data is NUL-terminated beyond len. */
	ck_assert_int_eq(sbx_file_write(ws, test_path_at(root, "bin"), "a\0b\0", 4, 0, 0), 0);
	ck_assert_int_eq(sbx_file_read(ws, "bin", &data, &len), 0);
	ck_assert_uint_eq(len, 4);
	ck_assert(memcmp(data, "a\0b\0", 5) == 0);
	sbx_free(data);

	ck_assert_int_eq(sbx_file_write(ws, "empty", NULL, 0, 0, 0), 0);
	read_is("empty", "");
	ck_assert(!test_has_temp_files(wsdir));
}
END_TEST

START_TEST(write_modes_and_flags)
{
	umask(022);
	ck_assert_int_eq(sbx_file_write(ws, "f", "1", 1, 0, 0), 0);
	ck_assert_uint_eq(test_mode_of(test_path_at(wsdir, "f")), 0644);
	ck_assert_int_eq(chmod(test_path_at(wsdir, "f"), 0600), 0);
	ck_assert_int_eq(sbx_file_write(ws, "f", "2", 1, 0, 0), 0);
	ck_assert_uint_eq(test_mode_of(test_path_at(wsdir, "f")), 0600); /* mode 0 keeps it */
	umask(077);
	ck_assert_int_eq(sbx_file_write(ws, "run.sh", "#!/bin/sh\n", 10, 0755, 0), 0);
	ck_assert_uint_eq(test_mode_of(test_path_at(wsdir, "run.sh")), 0755); /* exact, whatever the umask */

	ck_assert_int_eq(sbx_file_write(ws, "f", "3", 1, 0, SBX_WRITE_EXCL), -SBX_EEXIST);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "'f'"));
	ck_assert_str_eq(test_slurp(test_path_at(wsdir, "f")), "2");
	ck_assert_int_eq(sbx_file_write(ws, "g", "3", 1, 0, SBX_WRITE_EXCL), 0);

	ck_assert_int_eq(sbx_file_write(ws, "d1/d2/f", "x", 1, 0, 0), -SBX_ENOENT);
	ck_assert(!test_exists(test_path_at(wsdir, "d1")));
	ck_assert_int_eq(sbx_file_write(ws, "d1/d2/f", "x", 1, 0, SBX_WRITE_MKDIRS), 0);
	ck_assert_str_eq(test_slurp(test_path_at(wsdir, "d1/d2/f")), "x");

	ck_assert_int_eq(sbx_file_write(ws, "s", "x", 1, 04755, 0), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "mode"));
	ck_assert_int_eq(sbx_file_write(ws, "s", "x", 1, 02755, 0), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_write(ws, "s", "x", 1, 0100644, 0), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_write(ws, "s", "x", 1, 0, 1u << 7), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_write(ws, "s", NULL, 1, 0, 0), -SBX_EINVAL);
	ck_assert(!test_exists(test_path_at(wsdir, "s")));
	ck_assert(!test_has_temp_files(wsdir));
}
END_TEST

START_TEST(write_refuses_directories)
{
	ck_assert_int_eq(mkdir(test_path_at(wsdir, "d"), 0755), 0);
	ck_assert_int_eq(sbx_file_write(ws, "d", "x", 1, 0, 0), -SBX_EISDIR);
	ck_assert_int_eq(sbx_file_write(ws, "d/", "x", 1, 0, 0), -SBX_EISDIR);
	ck_assert_int_eq(sbx_file_write(ws, "new/", "x", 1, 0, SBX_WRITE_MKDIRS), -SBX_EISDIR);
	ck_assert_int_eq(sbx_file_write(ws, "", "x", 1, 0, 0), -SBX_EISDIR);
	ck_assert_int_eq(sbx_file_write(ws, ".", "x", 1, 0, 0), -SBX_EISDIR);
	ck_assert_int_eq(sbx_file_write(ws, "d/..", "x", 1, 0, 0), -SBX_EISDIR);
	ck_assert_int_eq(sbx_file_write(ws, root, "x", 1, 0, 0), -SBX_EISDIR);
	ck_assert(!test_has_temp_files(wsdir));
}
END_TEST

/* A symlink at the target is replaced by the new file; what it pointed to is untouched. */
START_TEST(write_replaces_symlinks)
{
	ck_assert_int_eq(symlink(test_path_at(outside, "secret"), test_path_at(wsdir, "abs")), 0);
	ck_assert_int_eq(symlink("../outside/secret", test_path_at(wsdir, "rel")), 0);
	ck_assert_int_eq(symlink("inside.txt", test_path_at(wsdir, "in")), 0);
	test_put_file(wsdir, "inside.txt", "inside", 0644);
	ck_assert_int_eq(sbx_file_write(ws, "abs", "A", 1, 0, 0), 0);
	ck_assert_int_eq(sbx_file_write(ws, "rel", "R", 1, 0, 0), 0);
	ck_assert_int_eq(sbx_file_write(ws, "in", "I", 1, 0, 0), 0);
	ck_assert_str_eq(test_slurp(test_path_at(wsdir, "abs")), "A");
	ck_assert_str_eq(test_slurp(test_path_at(wsdir, "rel")), "R");
	ck_assert_str_eq(test_slurp(test_path_at(wsdir, "inside.txt")), "inside");
	ck_assert_uint_eq(test_mode_of(test_path_at(wsdir, "abs")), 0644);
	expect_outside_intact();
}
END_TEST

struct flip {
	volatile bool stop;
	size_t size;
	int torn;
	int reads;
};

static void *writer(void *arg)
{
	struct flip *f = arg;
	char *buf = malloc(f->size);

	for (int k = 0; !f->stop; k++) {
		memset(buf, k % 2 ? 'B' : 'A', f->size);
		if (sbx_file_write(ws, "flip", buf, f->size, 0, 0) != 0)
			break;
	}
	free(buf);
	return NULL;
}

/* Readers see the old content or the new, never a mix or a short file. */
START_TEST(writes_are_atomic)
{
	struct flip f = { .size = 256 * 1024 };
	pthread_t t;
	char *a = malloc(f.size);

	memset(a, 'A', f.size);
	ck_assert_int_eq(sbx_file_write(ws, "flip", a, f.size, 0, 0), 0);
	free(a);
	ck_assert_int_eq(pthread_create(&t, NULL, writer, &f), 0);
	for (int k = 0; k < 300; k++) {
		char *data = NULL;
		size_t len = 0;
		if (sbx_file_read(ws, "flip", &data, &len) != 0) {
			f.torn++;
			continue;
		}
		f.reads++;
		if (len != f.size || memchr(data, data[0] == 'A' ? 'B' : 'A', len))
			f.torn++;
		sbx_free(data);
	}
	f.stop = true;
	pthread_join(t, NULL);
	ck_assert_int_eq(f.torn, 0);
	ck_assert_int_eq(f.reads, 300);
	ck_assert(!test_has_temp_files(wsdir));
}
END_TEST

START_TEST(read_special_files)
{
	int fd;

	ck_assert_int_eq(mkdir(test_path_at(wsdir, "d"), 0755), 0);
	read_fails("d", -SBX_EISDIR);
	read_fails("", -SBX_EISDIR);
	read_fails(root, -SBX_EISDIR);
	read_fails("missing", -SBX_ENOENT);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "missing"));

	/* A FIFO must neither block the host nor be opened. */
	ck_assert_int_eq(mkfifo(test_path_at(wsdir, "fifo"), 0644), 0);
	alarm(10);
	read_fails("fifo", -SBX_EINVAL);
	alarm(0);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "not a regular file"));

	/* Past SBX_FILE_READ_MAX: refused before anything is read (a sparse file). */
	fd = open(test_path_at(wsdir, "huge"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)SBX_FILE_READ_MAX + 1), 0);
	close(fd);
	read_fails("huge", -SBX_EFBIG);
}
END_TEST

/* ---- staying inside the root ----------------------------------------------------------------- */

static void make_links(void)
{
	ck_assert_int_eq(mkdir(test_path_at(wsdir, "a"), 0755), 0);
	ck_assert_int_eq(mkdir(test_path_at(wsdir, "a/b"), 0755), 0);
	test_put_file(wsdir, "a/b/c.txt", "c", 0644);
	test_put_file(wsdir, "file.txt", "hello", 0644);
	ck_assert_int_eq(symlink("a/b/c.txt", test_path_at(wsdir, "link_in")), 0);
	ck_assert_int_eq(symlink("a/b", test_path_at(wsdir, "link_dir")), 0);
	ck_assert_int_eq(symlink("../../file.txt", test_path_at(wsdir, "a/b/up")), 0);
	ck_assert_int_eq(symlink(outside, test_path_at(wsdir, "abs")), 0);
	ck_assert_int_eq(symlink("/etc", test_path_at(wsdir, "etc")), 0);
	ck_assert_int_eq(symlink("../../etc", test_path_at(wsdir, "a/up2")), 0);
	ck_assert_int_eq(symlink("../outside", test_path_at(wsdir, "rel_out")), 0);
	ck_assert_int_eq(symlink("c2", test_path_at(wsdir, "c1")), 0);
	ck_assert_int_eq(symlink("a/c3", test_path_at(wsdir, "c2")), 0);
	ck_assert_int_eq(symlink("../../outside", test_path_at(wsdir, "a/c3")), 0);
	ck_assert_int_eq(symlink("/proc/self/root", test_path_at(wsdir, "proc_root")), 0);
	ck_assert_int_eq(symlink("/proc/self/cwd", test_path_at(wsdir, "proc_cwd")), 0);
	ck_assert_int_eq(symlink("loop2", test_path_at(wsdir, "loop1")), 0);
	ck_assert_int_eq(symlink("loop1", test_path_at(wsdir, "loop2")), 0);
	ck_assert_int_eq(symlink("../outside/created", test_path_at(wsdir, "dangling_out")), 0);
}

START_TEST(inside_paths_work)
{
	make_links();
	read_is("a/../file.txt", "hello");
	read_is("a/./b//c.txt", "c");
	read_is("link_in", "c");
	read_is("link_dir/c.txt", "c");
	read_is("a/b/up", "hello");
	read_is(test_path_at(root, "link_dir/../b/c.txt"), "c"); /* ".." after a link is physical */
	read_is(test_path_at(root, "a/b/../../file.txt"), "hello");
}
END_TEST

START_TEST(escapes_are_refused)
{
	char *p = NULL;

	make_links();
	read_fails("..", -SBX_EESCAPE);
	read_fails("../outside/secret", -SBX_EESCAPE);
	read_fails("a/../../outside/secret", -SBX_EESCAPE);
	read_fails("a/b/../../../outside/secret", -SBX_EESCAPE);
	read_fails(test_path_at(root, "../outside/secret"), -SBX_EESCAPE);
	read_fails("/etc/passwd", -SBX_EESCAPE);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "'/etc/passwd' is outside the workspace"));
	/* A sibling whose name starts with the root's is not inside it. */
	read_fails(test_path_at(sibling, "file"), -SBX_EESCAPE);
	ck_assert_int_ge(asprintf(&p, "%s2/file", root), 0);
	read_fails(p, -SBX_EESCAPE);
	free(p);

	read_fails("abs/secret", -SBX_EESCAPE);
	read_fails("etc/passwd", -SBX_EESCAPE);
	read_fails("a/up2/passwd", -SBX_EESCAPE);
	read_fails("rel_out/secret", -SBX_EESCAPE);
	read_fails("c1/secret", -SBX_EESCAPE);
	read_fails("proc_root/etc/passwd", -SBX_EESCAPE);
	read_fails("proc_cwd/file.txt", -SBX_EESCAPE);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "escapes the workspace root"));

	ck_assert_int_eq(sbx_file_write(ws, "abs/new", "x", 1, 0, 0), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_write(ws, "rel_out/new/f", "x", 1, 0, SBX_WRITE_MKDIRS),
	                 -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_write(ws, "../outside/new", "x", 1, 0, 0), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_mkdir(ws, "c1/new", 0), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_mkdir(ws, "../outside/new", 0), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_remove(ws, "abs/secret", 0), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_remove(ws, "../outside/secret", 0), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_remove(ws, "rel_out/", SBX_REMOVE_RECURSIVE), -SBX_ENOTDIR);
	char *json = NULL;
	ck_assert_int_eq(sbx_file_list(ws, "abs", &json), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_list(ws, "..", &json), -SBX_EESCAPE);
	ck_assert_ptr_null(json);
	sbx_stat st = { .size = sizeof st };
	ck_assert_int_eq(sbx_file_stat(ws, "abs/secret", &st), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_stat(ws, "abs", &st), 0); /* the link itself */
	ck_assert_int_eq(st.type, SBX_FILE_SYMLINK);
	expect_outside_intact();
}
END_TEST

/* An agent plants the link with a command; the host's file call must still refuse it. */
START_TEST(links_made_by_commands_are_refused)
{
	const char *argv[] = { "/bin/sh", "-c", "ln -s / escape && ln -s ../.. up", NULL };
	sbx_result *res = NULL;

	ck_assert_msg(sbx_exec(ws, argv, NULL, &res) == 0, "exec: %s", sbx_last_error());
	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	sbx_result_free(res);
	read_fails("escape/etc/passwd", -SBX_EESCAPE);
	read_fails("up/etc/passwd", -SBX_EESCAPE);
}
END_TEST

START_TEST(malformed_paths)
{
	char *big = malloc(PATH_MAX + 8);
	char name[NAME_MAX + 2];

	make_links();
	read_fails("loop1", -SBX_ELOOP);
	read_fails("file.txt/x", -SBX_ENOTDIR);
	read_fails("file.txt/", -SBX_ENOTDIR);
	read_fails("bad\xff.txt", -SBX_EINVAL);
	ck_assert_str_eq(sbx_last_error(), "path: not valid UTF-8");
	ck_assert_int_eq(sbx_file_write(ws, "bad\xc0\xaf", "x", 1, 0, 0), -SBX_EINVAL);

	memset(big, 'a', PATH_MAX + 1);
	big[PATH_MAX + 1] = '\0';
	read_fails(big, -SBX_ENAMETOOLONG);
	ck_assert_int_eq(sbx_file_write(ws, big, "x", 1, 0, SBX_WRITE_MKDIRS), -SBX_ENAMETOOLONG);
	memset(name, 'n', NAME_MAX + 1);
	name[NAME_MAX + 1] = '\0';
	read_fails(name, -SBX_ENAMETOOLONG);
	ck_assert_int_eq(sbx_file_write(ws, name, "x", 1, 0, 0), -SBX_ENAMETOOLONG);
	name[NAME_MAX] = '\0';
	ck_assert_int_eq(sbx_file_write(ws, name, "x", 1, 0, 0), 0);
	read_is(name, "x");
	free(big);
}
END_TEST

/* ---- stat and list --------------------------------------------------------------------------- */

START_TEST(stat_entries)
{
	sbx_stat st = { .size = sizeof st };
	struct stat hst;
	struct { size_t size; int type; } tiny = { sizeof tiny, -1 };

	test_put_file(wsdir, "f", "12345", 0640);
	ck_assert_int_eq(stat(test_path_at(wsdir, "f"), &hst), 0);
	ck_assert_int_eq(sbx_file_stat(ws, "f", &st), 0);
	ck_assert_int_eq(st.type, SBX_FILE_REGULAR);
	ck_assert_uint_eq(st.mode, 0640);
	ck_assert_uint_eq(st.file_size, 5);
	ck_assert_int_eq(st.mtime_sec, hst.st_mtim.tv_sec);
	ck_assert_int_eq(st.mtime_nsec, hst.st_mtim.tv_nsec);

	ck_assert_int_eq(symlink("f", test_path_at(wsdir, "l")), 0);
	ck_assert_int_eq(sbx_file_stat(ws, "l", &st), 0);
	ck_assert_int_eq(st.type, SBX_FILE_SYMLINK);
	ck_assert_int_eq(sbx_file_stat(ws, root, &st), 0);
	ck_assert_int_eq(st.type, SBX_FILE_DIRECTORY);
	ck_assert_int_eq(mkfifo(test_path_at(wsdir, "p"), 0600), 0);
	ck_assert_int_eq(sbx_file_stat(ws, "p", &st), 0);
	ck_assert_int_eq(st.type, SBX_FILE_OTHER);

	ck_assert_int_eq(sbx_file_stat(ws, "f", (sbx_stat *)&tiny), 0);
	ck_assert_int_eq(tiny.type, SBX_FILE_REGULAR);
	st.size = 0;
	ck_assert_int_eq(sbx_file_stat(ws, "f", &st), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_stat(ws, "f", NULL), -SBX_EINVAL);
	st.size = sizeof st;
	ck_assert_int_eq(sbx_file_stat(ws, "nope", &st), -SBX_ENOENT);
}
END_TEST

START_TEST(list_directories)
{
	char *json = NULL, want[1024];
	struct stat sa, sb, sc, ss;

	ck_assert_int_eq(mkdir(test_path_at(wsdir, "sub"), 0755), 0);
	test_put_file(wsdir, "b.txt", "12345", 0644);
	ck_assert_int_eq(symlink("b.txt", test_path_at(wsdir, "c")), 0);
	test_put_file(wsdir, "sub/x\"y", "", 0644);
	ck_assert_int_eq(lstat(test_path_at(wsdir, "b.txt"), &sa), 0);
	ck_assert_int_eq(lstat(test_path_at(wsdir, "c"), &sb), 0);
	ck_assert_int_eq(lstat(test_path_at(wsdir, "sub"), &sc), 0);
	/* The library's state folder is there from the start. */
	ck_assert_int_eq(lstat(test_path_at(wsdir, ".agentsbx"), &ss), 0);
	snprintf(want, sizeof want,
	         "[{\"name\":\".agentsbx\",\"type\":\"dir\",\"size\":0,\"mtime\":%lld},"
	         "{\"name\":\"b.txt\",\"type\":\"file\",\"size\":5,\"mtime\":%lld},"
	         "{\"name\":\"c\",\"type\":\"symlink\",\"size\":5,\"mtime\":%lld},"
	         "{\"name\":\"sub\",\"type\":\"dir\",\"size\":0,\"mtime\":%lld}]",
	         (long long)ss.st_mtime, (long long)sa.st_mtime, (long long)sb.st_mtime,
	         (long long)sc.st_mtime);
	ck_assert_int_eq(sbx_file_list(ws, "", &json), 0);
	ck_assert_str_eq(json, want);
	sbx_free(json);
	ck_assert_int_eq(sbx_file_list(ws, root, &json), 0);
	ck_assert_str_eq(json, want);
	sbx_free(json);

	ck_assert_int_eq(sbx_file_list(ws, "sub", &json), 0);
	ck_assert_ptr_nonnull(strstr(json, "\"name\":\"x\\\"y\""));
	sbx_free(json);
	ck_assert_int_eq(sbx_file_list(ws, "b.txt", &json), -SBX_ENOTDIR);
	ck_assert_int_eq(sbx_file_list(ws, "nope", &json), -SBX_ENOENT);
	ck_assert_ptr_null(json);
}
END_TEST

/* Names that are not UTF-8 (an agent can make them) still give valid JSON. */
START_TEST(list_odd_names)
{
	char *json = NULL;

	test_put_file(wsdir, "caf\xc3\xa9", "", 0644);
	test_put_file(wsdir, "raw\xff", "", 0644);
	test_put_file(wsdir, "tab\tnl\n", "", 0644);
	ck_assert_int_eq(sbx_file_list(ws, "", &json), 0);
	ck_assert_ptr_nonnull(strstr(json, "\"caf\xc3\xa9\""));
	ck_assert_ptr_null(strstr(json, "\xff"));
	ck_assert_ptr_nonnull(strstr(json, "tab\\tnl\\n"));
	sbx_free(json);
}
END_TEST

/* ---- mkdir and remove ------------------------------------------------------------------------ */

START_TEST(mkdir_p)
{
	umask(022);
	ck_assert_int_eq(sbx_file_mkdir(ws, "a/b/c", 0), 0);
	ck_assert_uint_eq(test_mode_of(test_path_at(wsdir, "a/b/c")), 0755);
	ck_assert_int_eq(sbx_file_mkdir(ws, "a/b/c", 0), 0);
	ck_assert_int_eq(sbx_file_mkdir(ws, test_path_at(root, "a/b/d/"), 0700), 0);
	ck_assert_uint_eq(test_mode_of(test_path_at(wsdir, "a/b/d")), 0700);
	ck_assert_int_eq(sbx_file_mkdir(ws, "", 0), 0);
	ck_assert_int_eq(sbx_file_mkdir(ws, root, 0), 0);
	ck_assert_int_eq(symlink("a/b", test_path_at(wsdir, "lb")), 0);
	ck_assert_int_eq(sbx_file_mkdir(ws, "lb", 0), 0);
	ck_assert_int_eq(sbx_file_mkdir(ws, "lb/e", 0), 0);
	ck_assert(test_exists(test_path_at(wsdir, "a/b/e")));
	test_put_file(wsdir, "f", "", 0644);
	ck_assert_int_eq(sbx_file_mkdir(ws, "f", 0), -SBX_EEXIST);
	ck_assert_int_eq(sbx_file_mkdir(ws, "f/g", 0), -SBX_ENOTDIR);
	ck_assert_int_eq(sbx_file_mkdir(ws, "x", 04755), -SBX_EINVAL);
	ck_assert(!test_exists(test_path_at(wsdir, "x")));
}
END_TEST

START_TEST(remove_entries)
{
	ck_assert_int_eq(sbx_file_remove(ws, "", 0), -SBX_EPERM);
	ck_assert_int_eq(sbx_file_remove(ws, ".", SBX_REMOVE_RECURSIVE), -SBX_EPERM);
	ck_assert_int_eq(sbx_file_remove(ws, root, SBX_REMOVE_RECURSIVE), -SBX_EPERM);
	ck_assert_int_eq(sbx_file_remove(ws, test_path_at(root, ""), SBX_REMOVE_RECURSIVE), -SBX_EPERM);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "root"));
	ck_assert(test_exists(wsdir));

	test_put_file(wsdir, "f", "", 0644);
	ck_assert_int_eq(sbx_file_remove(ws, "f", 0), 0);
	ck_assert(!test_exists(test_path_at(wsdir, "f")));
	ck_assert_int_eq(sbx_file_remove(ws, "f", 0), -SBX_ENOENT);

	ck_assert_int_eq(symlink(outside, test_path_at(wsdir, "lo")), 0);
	ck_assert_int_eq(sbx_file_remove(ws, "lo", SBX_REMOVE_RECURSIVE), 0);
	ck_assert(!test_exists(test_path_at(wsdir, "lo")));

	ck_assert_int_eq(mkdir(test_path_at(wsdir, "d"), 0755), 0);
	test_put_file(wsdir, "d/x", "", 0644);
	ck_assert_int_eq(sbx_file_remove(ws, "d", 0), -SBX_ENOTEMPTY);
	ck_assert_int_eq(sbx_file_remove(ws, "d/x/", 0), -SBX_ENOTDIR);
	ck_assert_int_eq(sbx_file_remove(ws, "d/x", 0), 0);
	ck_assert_int_eq(sbx_file_remove(ws, "d", 0), 0);

	/* A tree with locked directories and links out. */
	ck_assert_int_eq(mkdir(test_path_at(wsdir, "t"), 0755), 0);
	ck_assert_int_eq(mkdir(test_path_at(wsdir, "t/u"), 0755), 0);
	ck_assert_int_eq(mkdir(test_path_at(wsdir, "t/u/v"), 0755), 0);
	test_put_file(wsdir, "t/u/v/f", "x", 0000);
	ck_assert_int_eq(symlink(outside, test_path_at(wsdir, "t/u/out")), 0);
	ck_assert_int_eq(symlink(test_path_at(outside, "secret"), test_path_at(wsdir, "t/secret")), 0);
	ck_assert_int_eq(chmod(test_path_at(wsdir, "t/u/v"), 0500), 0);
	ck_assert_int_eq(chmod(test_path_at(wsdir, "t/u"), 0000), 0);
	ck_assert_int_eq(sbx_file_remove(ws, "t", SBX_REMOVE_RECURSIVE), 0);
	ck_assert(!test_exists(test_path_at(wsdir, "t")));
	ck_assert_int_eq(sbx_file_remove(ws, "t", 1u << 5), -SBX_EINVAL);
	expect_outside_intact();
}
END_TEST

/* ---- arguments and resources ----------------------------------------------------------------- */

START_TEST(null_arguments)
{
	char *data = NULL;
	size_t len = 0;
	sbx_stat st = { .size = sizeof st };

	ck_assert_int_eq(sbx_file_read(NULL, "f", &data, &len), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "ws"));
	ck_assert_int_eq(sbx_file_read(ws, NULL, &data, &len), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "path"));
	ck_assert_int_eq(sbx_file_read(ws, "f", NULL, &len), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_read(ws, "f", &data, NULL), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_write(NULL, "f", "x", 1, 0, 0), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_write(ws, NULL, "x", 1, 0, 0), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_stat(NULL, "f", &st), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_stat(ws, NULL, &st), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_list(NULL, "", &data), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_list(ws, NULL, &data), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_list(ws, "", NULL), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_mkdir(NULL, "d", 0), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_mkdir(ws, NULL, 0), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_remove(NULL, "d", 0), -SBX_EINVAL);
	ck_assert_int_eq(sbx_file_remove(ws, NULL, 0), -SBX_EINVAL);
}
END_TEST

/* Successes and failures of every call leave no fd behind. */
START_TEST(no_fd_leaks)
{
	int before;
	char *data = NULL, *json = NULL;
	size_t len;
	sbx_stat st = { .size = sizeof st };

	make_links();
	ck_assert_int_eq(mkfifo(test_path_at(wsdir, "fifo"), 0644), 0);
	before = test_count_fds();
	for (int k = 0; k < 20; k++) {
		ck_assert_int_eq(sbx_file_write(ws, "w/f", "x", 1, 0, SBX_WRITE_MKDIRS), 0);
		ck_assert_int_eq(sbx_file_read(ws, "w/f", &data, &len), 0);
		sbx_free(data);
		ck_assert_int_eq(sbx_file_list(ws, "", &json), 0);
		sbx_free(json);
		ck_assert_int_eq(sbx_file_stat(ws, "link_in", &st), 0);
		ck_assert_int_eq(sbx_file_mkdir(ws, "m/n", 0), 0);
		ck_assert_int_eq(sbx_file_remove(ws, "m", SBX_REMOVE_RECURSIVE), 0);
		ck_assert_int_ne(sbx_file_read(ws, "c1/secret", &data, &len), 0);
		ck_assert_int_ne(sbx_file_read(ws, "loop1", &data, &len), 0);
		ck_assert_int_ne(sbx_file_read(ws, "fifo", &data, &len), 0);
		ck_assert_int_ne(sbx_file_write(ws, "abs/x", "x", 1, 0, 0), 0);
		ck_assert_int_ne(sbx_file_write(ws, "w/f", "x", 1, 0, SBX_WRITE_EXCL), 0);
		ck_assert_int_ne(sbx_file_list(ws, "file.txt", &json), 0);
		ck_assert_int_ne(sbx_file_remove(ws, "w", 0), 0);
		ck_assert_int_ne(sbx_file_mkdir(ws, "file.txt", 0), 0);
	}
	ck_assert_int_eq(test_count_fds(), before);
}
END_TEST

static Suite *files_suite(const char *name)
{
	Suite *s = suite_create(name);
	TCase *tc = tcase_create("files");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, write_then_read);
	tcase_add_test(tc, write_modes_and_flags);
	tcase_add_test(tc, write_refuses_directories);
	tcase_add_test(tc, write_replaces_symlinks);
	tcase_add_test(tc, writes_are_atomic);
	tcase_add_test(tc, read_special_files);
	tcase_add_test(tc, inside_paths_work);
	tcase_add_test(tc, escapes_are_refused);
	tcase_add_test(tc, links_made_by_commands_are_refused);
	tcase_add_test(tc, malformed_paths);
	tcase_add_test(tc, stat_entries);
	tcase_add_test(tc, list_directories);
	tcase_add_test(tc, list_odd_names);
	tcase_add_test(tc, mkdir_p);
	tcase_add_test(tc, remove_entries);
	tcase_add_test(tc, null_arguments);
	tcase_add_test(tc, no_fd_leaks);
	suite_add_tcase(s, tc);
	return s;
}

/* ---- running without openat2 ----------------------------------------------------------------- */

#if defined(__x86_64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/* A seccomp filter that answers openat2 with ENOSYS, as old kernels and some container
 * profiles do. Returns false where this test does not know the architecture. */
static bool hide_openat2(void)
{
#if defined(TEST_AUDIT_ARCH) && defined(SYS_openat2)
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TEST_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof filter / sizeof filter[0], .filter = filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return false;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
#else
	return false;
#endif
}

int main(void)
{
	int status, failed = test_run_suite(files_suite("files"));
	pid_t pid = fork();

	if (pid == 0) {
		if (!hide_openat2()) {
			fprintf(stderr, "skipping the run without openat2: no seccomp filter here\n");
			_exit(0);
		}
		_exit(test_run_suite(files_suite("files-without-openat2")));
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		failed = 1;
	return failed;
}
