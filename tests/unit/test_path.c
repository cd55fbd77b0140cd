/* Path handling: caller paths to root-relative ones, and resolution beneath the root. Every
 * resolution case runs twice: with openat2 (_i == 0) and with the component-walk fallback
 * (_i == 1), which must agree. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "support.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/path.h"

static char *tmp;        /* holds root/ and outside/ */
static char rootdir[PATH_MAX / 2], outside[PATH_MAX / 2];
static int rootfd = -1;
static int fds_at_start;

static void write_text(const char *dir, const char *rel, const char *text)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof p, "%s/%s", dir, rel);
	f = fopen(p, "w");
	ck_assert_msg(f != NULL, "fopen %s: %s", p, strerror(errno));
	fputs(text, f);
	fclose(f);
}

static void make_dir(const char *dir, const char *rel)
{
	char p[PATH_MAX];

	snprintf(p, sizeof p, "%s/%s", dir, rel);
	ck_assert_msg(mkdir(p, 0755) == 0, "mkdir %s: %s", p, strerror(errno));
}

static void make_link(const char *target, const char *rel)
{
	char p[PATH_MAX];

	snprintf(p, sizeof p, "%s/%s", rootdir, rel);
	ck_assert_msg(symlink(target, p) == 0, "symlink %s: %s", p, strerror(errno));
}

static void setup(void)
{
	char target[PATH_MAX];

	tmp = test_mkdtemp();
	snprintf(rootdir, sizeof rootdir, "%s/root", tmp);
	snprintf(outside, sizeof outside, "%s/outside", tmp);
	ck_assert_int_eq(mkdir(rootdir, 0755), 0);
	ck_assert_int_eq(mkdir(outside, 0755), 0);
	write_text(outside, "secret", "secret");

	make_dir(rootdir, "a");
	make_dir(rootdir, "a/b");
	make_dir(rootdir, "dir");
	write_text(rootdir, "a/b/c.txt", "c");
	write_text(rootdir, "file.txt", "hello");
	make_link("a/b/c.txt", "link_in");
	make_link("a/b", "link_dir");
	make_link("../../file.txt", "a/b/up");
	snprintf(target, sizeof target, "%s", outside);
	make_link(target, "link_abs");
	make_link("/etc", "link_etc");
	make_link("../outside/secret", "link_out");
	make_link("../outside", "link_out_dir");
	make_link("../../etc", "a/link_up2");
	make_link("chain2", "chain1");
	make_link("a/chain3", "chain2");
	make_link("../../outside", "a/chain3");
	make_link("chain_in2", "chain_in1");
	make_link("a/b/up", "chain_in2");
	make_link("/proc/self/root", "proc_link");
	make_link("loop2", "loop1");
	make_link("loop1", "loop2");
	make_link("self", "self");
	make_link("nonexistent", "dangling");
	make_link("../outside/created", "dangling_out");

	rootfd = open(rootdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(rootfd, 0);
	fds_at_start = test_count_fds();
}

static void teardown(void)
{
	sbx_path_force_fallback(false);
	close(rootfd);
	rootfd = -1;
	test_rm_rf(tmp);
	free(tmp);
}

static void use_impl(int i)
{
	sbx_path_force_fallback(i == 1);
}

static const char *impl_name(int i)
{
	return i == 1 ? "fallback" : "openat2";
}

/* Opens rel and expects success; returns the fd. */
static int open_ok(int i, const char *rel, int flags)
{
	int fd = sbx_path_open(rootfd, rel, flags, 0644);

	ck_assert_msg(fd >= 0, "%s: open '%s' failed: %d %s", impl_name(i), rel, fd,
	              sbx_last_error());
	return fd;
}

static void expect_content(int i, const char *rel, const char *want)
{
	char buf[256];
	int fd = open_ok(i, rel, O_RDONLY);
	ssize_t n = read(fd, buf, sizeof buf - 1);

	close(fd);
	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	ck_assert_msg(strcmp(buf, want) == 0, "%s: '%s' read '%s', want '%s'", impl_name(i), rel,
	              buf, want);
}

static void expect_error(int i, const char *rel, int flags, int code)
{
	int fd = sbx_path_open(rootfd, rel, flags, 0644);

	if (fd >= 0)
		close(fd);
	ck_assert_msg(fd == code, "%s: open '%s' gave %d (%s), want %d", impl_name(i), rel, fd,
	              fd < 0 ? sbx_last_error() : "success", code);
}

/* A path the open must refuse, with the flags it is opened with and the error it must give. */
struct refused_open {
	const char *rel;
	int flags;
	int code;
};

static void expect_errors(int i, const struct refused_open *cases, size_t n)
{
	for (size_t k = 0; k < n; k++)
		expect_error(i, cases[k].rel, cases[k].flags, cases[k].code);
}

/* Lowers the soft fd limit so a walk that kept one fd per level would fail. Valgrind keeps
 * the hard limit for itself, so only the soft one is touched. */

static void expect_no_fd_leak(void)
{
	ck_assert_int_eq(test_count_fds(), fds_at_start);
}

/* ---------------------------------------------------------------------------------------
 * sbx_path_relative / sbx_path_normalize
 * ------------------------------------------------------------------------------------- */

static void relative_is(const char *root, const char *path, const char *want)
{
	char *rel = NULL;
	int r = sbx_path_relative(root, path, "path", &rel);

	ck_assert_msg(r == 0, "relative('%s', '%s') = %d: %s", root, path, r, sbx_last_error());
	ck_assert_str_eq(rel, want);
	free(rel);
}

static void relative_fails(const char *root, const char *path, int code)
{
	char *rel = NULL;
	int r = sbx_path_relative(root, path, "path", &rel);

	ck_assert_msg(r == code, "relative('%s', '%s') = %d, want %d", root, path, r, code);
	ck_assert_ptr_null(rel);
}

START_TEST(relative_accepts_paths_under_root)
{
	relative_is("/workspace", "a/b", "a/b");
	relative_is("/workspace", "", "");
	relative_is("/workspace", ".", ".");
	relative_is("/workspace", "/workspace", "");
	relative_is("/workspace", "/workspace/", "");
	relative_is("/workspace", "/workspace/a/b.txt", "a/b.txt");
	relative_is("/workspace", "//workspace//a", "a");
	relative_is("/workspace", "/./workspace/./a", "./a");
	relative_is("/workspace/", "/workspace/a", "a");
	relative_is("/workspace", "/workspace/a/../b", "a/../b");
	relative_is("/", "/etc/passwd", "etc/passwd");
	relative_is("/srv/ws one", "/srv/ws one/x", "x");
	/* ".." is kept: resolution decides, and refuses it. */
	relative_is("/workspace", "/workspace/../etc", "../etc");
	relative_is("/workspace", "../x", "../x");
}
END_TEST

START_TEST(relative_refuses_outside)
{
	char *rel = NULL;

	ck_assert_int_eq(sbx_path_relative("/workspace", "/etc/passwd", "path", &rel), -SBX_EESCAPE);
	ck_assert_str_eq(sbx_last_error(),
	                 "path '/etc/passwd' is outside the workspace root '/workspace'");
	relative_fails("/workspace", "/workspace2/x", -SBX_EESCAPE);
	relative_fails("/workspace", "/workspace2", -SBX_EESCAPE);
	relative_fails("/workspace", "/work", -SBX_EESCAPE);
	relative_fails("/workspace", "/", -SBX_EESCAPE);
	relative_fails("/workspace/sub", "/workspace", -SBX_EESCAPE);
	relative_fails("/workspace", "/../workspace/x", -SBX_EESCAPE);
	relative_fails(NULL, "/x", -SBX_EESCAPE);
	ck_assert_int_eq(sbx_path_relative("/workspace", "/etc", "cwd", &rel), -SBX_EESCAPE);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "cwd '/etc'"));
}
END_TEST

/* A workspace's files have two names: the root as commands see it and the host's name of
 * the same directory. Either works; nothing else does, and the message names both. */
START_TEST(relative_in_takes_either_root)
{
	static const char *const host = "/home/me/proj";
	char *rel = NULL;

	ck_assert_int_eq(sbx_path_relative_in("/workspace", host, "/home/me/proj/a/b.c", "path",
	                                      &rel), 0);
	ck_assert_str_eq(rel, "a/b.c");
	free(rel);
	ck_assert_int_eq(sbx_path_relative_in("/workspace", host, "/workspace/a", "path", &rel), 0);
	ck_assert_str_eq(rel, "a");
	free(rel);
	ck_assert_int_eq(sbx_path_relative_in("/workspace", host, "/home/me/proj", "path", &rel), 0);
	ck_assert_str_eq(rel, "");
	free(rel);
	ck_assert_int_eq(sbx_path_relative_in("/workspace", host, "x/y", "path", &rel), 0);
	ck_assert_str_eq(rel, "x/y");
	free(rel);
	rel = NULL;
	ck_assert_int_eq(sbx_path_relative_in("/workspace", host, "/home/me/project2/a", "path",
	                                      &rel), -SBX_EESCAPE);
	ck_assert_ptr_null(rel);
	ck_assert_str_eq(sbx_last_error(), "path '/home/me/project2/a' is outside the workspace "
	                 "root '/workspace' (on the host '/home/me/proj')");
	ck_assert_int_eq(sbx_path_relative_in("/workspace", host, "/etc", "cwd", &rel),
	                 -SBX_EESCAPE);
	/* No host name, or the same one: exactly sbx_path_relative. */
	ck_assert_int_eq(sbx_path_relative_in("/workspace", NULL, "/home/me/proj/a", "path", &rel),
	                 -SBX_EESCAPE);
	ck_assert_str_eq(sbx_last_error(), "path '/home/me/proj/a' is outside the workspace root "
	                 "'/workspace'");
	ck_assert_int_eq(sbx_path_relative_in(host, host, "/etc", "path", &rel), -SBX_EESCAPE);
	ck_assert_str_eq(sbx_last_error(), "path '/etc' is outside the workspace root "
	                 "'/home/me/proj'");
	/* Bad text is refused before either root is looked at. */
	ck_assert_int_eq(sbx_path_relative_in("/workspace", host, "/home/me/proj/\xff", "path",
	                                      &rel), -SBX_EINVAL);
}
END_TEST

START_TEST(relative_refuses_bad_text)
{
	char *rel = NULL;
	char *big = malloc(PATH_MAX + 1);

	ck_assert_int_eq(sbx_path_relative("/workspace", "a/\xff\xfe", "path", &rel), -SBX_EINVAL);
	ck_assert_str_eq(sbx_last_error(), "path: not valid UTF-8");
	relative_fails("/workspace", "\xc0\xaf", -SBX_EINVAL);          /* overlong "/" */
	relative_fails("/workspace", "\xed\xa0\x80", -SBX_EINVAL);      /* surrogate */
	relative_fails("/workspace", NULL, -SBX_EINVAL);
	relative_is("/workspace", "caf\xc3\xa9/\xe2\x82\xac", "caf\xc3\xa9/\xe2\x82\xac");

	memset(big, 'a', PATH_MAX);
	big[PATH_MAX] = '\0';
	relative_fails("/workspace", big, -SBX_ENAMETOOLONG);
	big[PATH_MAX - 1] = '\0';
	relative_is("/workspace", big, big);
	free(big);
}
END_TEST

static void normalized_is(const char *rel, const char *want)
{
	char *out = NULL;
	int r = sbx_path_normalize(rel, "path", &out);

	ck_assert_msg(r == 0, "normalize('%s') = %d: %s", rel, r, sbx_last_error());
	ck_assert_str_eq(out, want);
	free(out);
}

static void normalize_fails(const char *rel, int code)
{
	char *out = NULL;
	int r = sbx_path_normalize(rel, "path", &out);

	ck_assert_msg(r == code, "normalize('%s') = %d, want %d", rel, r, code);
	ck_assert_ptr_null(out);
}

START_TEST(normalize_cases)
{
	char name[NAME_MAX + 2];

	normalized_is("", "");
	normalized_is(".", "");
	normalized_is("./", "");
	normalized_is("a/./b//c/", "a/b/c");
	normalized_is("a/../b", "b");
	normalized_is("a/b/../../c/./d/..", "c");
	normalized_is("a/..", "");
	normalized_is("...", "...");
	normalized_is("..a/b..", "..a/b..");
	normalize_fails("..", -SBX_EESCAPE);
	normalize_fails("a/../../x", -SBX_EESCAPE);
	normalize_fails("a/../..", -SBX_EESCAPE);
	normalize_fails("/etc", -SBX_EESCAPE);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "escapes the workspace root"));
	normalize_fails(NULL, -SBX_EINVAL);
	memset(name, 'n', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	normalize_fails(name, -SBX_ENAMETOOLONG);
}
END_TEST

/* ---------------------------------------------------------------------------------------
 * sbx_path_open: legitimate paths
 * ------------------------------------------------------------------------------------- */

START_TEST(open_plain_and_dotted)
{
	use_impl(_i);
	expect_content(_i, "file.txt", "hello");
	expect_content(_i, "a/b/c.txt", "c");
	expect_content(_i, "a/../file.txt", "hello");
	expect_content(_i, "./a/./b/c.txt", "c");
	expect_content(_i, "a//b///c.txt", "c");
	expect_content(_i, "a/b/../../a/b/c.txt", "c");
	expect_content(_i, "dir/../a/b/../b/c.txt", "c");
	expect_no_fd_leak();
}
END_TEST

START_TEST(open_directories)
{
	struct stat st, want;

	use_impl(_i);
	ck_assert_int_eq(fstat(rootfd, &want), 0);
	const char *roots[] = { "", ".", "./", "a/..", "a/b/../..", "dir/" "..", "dir/../" };
	for (size_t k = 0; k < sizeof roots / sizeof roots[0]; k++) {
		int fd = open_ok(_i, roots[k], O_RDONLY | O_DIRECTORY);
		ck_assert_int_eq(fstat(fd, &st), 0);
		ck_assert_msg(st.st_ino == want.st_ino, "%s: '%s' is not the root", impl_name(_i),
		              roots[k]);
		close(fd);
	}
	close(open_ok(_i, "a/b/", O_RDONLY | O_DIRECTORY));
	close(open_ok(_i, "a/b//", O_PATH));
	close(open_ok(_i, "a/b/.", O_PATH | O_DIRECTORY));
	expect_error(_i, "file.txt", O_RDONLY | O_DIRECTORY, -SBX_ENOTDIR);
	expect_error(_i, "a/b", O_WRONLY, -SBX_EISDIR);
	expect_no_fd_leak();
}
END_TEST

START_TEST(open_symlinks_inside)
{
	struct stat st;
	int fd;

	use_impl(_i);
	expect_content(_i, "link_in", "c");
	expect_content(_i, "link_dir/c.txt", "c");
	expect_content(_i, "a/b/up", "hello");          /* ../../file.txt from a/b */
	expect_content(_i, "chain_in1", "hello");       /* chain of three, ends inside */
	close(open_ok(_i, "link_dir/", O_RDONLY | O_DIRECTORY));
	/* ".." after a symlink is physical, as in the kernel: link_dir is a/b, so ".." is a. */
	expect_content(_i, "link_dir/../b/c.txt", "c");
	expect_error(_i, "link_dir/../file.txt", O_RDONLY, -SBX_ENOENT);

	/* O_NOFOLLOW: the link itself with O_PATH, ELOOP otherwise (kernel semantics). */
	fd = open_ok(_i, "link_in", O_PATH | O_NOFOLLOW);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	close(fd);
	expect_error(_i, "link_in", O_RDONLY | O_NOFOLLOW, -SBX_ELOOP);
	/* Not following an escaping link is harmless: we get the link, not its target. */
	fd = open_ok(_i, "link_etc", O_PATH | O_NOFOLLOW);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	close(fd);
	/* A trailing slash follows even with O_NOFOLLOW. */
	close(open_ok(_i, "link_dir/", O_PATH | O_NOFOLLOW | O_DIRECTORY));
	expect_no_fd_leak();
}
END_TEST

START_TEST(open_creates)
{
	char p[PATH_MAX];
	struct stat st;

	use_impl(_i);
	close(open_ok(_i, "newfile", O_WRONLY | O_CREAT | O_EXCL));
	close(open_ok(_i, "link_dir/new_in_b", O_WRONLY | O_CREAT));
	snprintf(p, sizeof p, "%s/a/b/new_in_b", rootdir);
	ck_assert_int_eq(stat(p, &st), 0);
	expect_error(_i, "newfile", O_WRONLY | O_CREAT | O_EXCL, -SBX_EEXIST);
	/* O_CREAT|O_EXCL never follows a final symlink, even a dangling one. */
	expect_error(_i, "dangling", O_WRONLY | O_CREAT | O_EXCL, -SBX_EEXIST);
	expect_error(_i, "link_in", O_WRONLY | O_CREAT | O_EXCL, -SBX_EEXIST);
	/* O_CREAT through a dangling link inside creates its target, inside. */
	close(open_ok(_i, "dangling", O_WRONLY | O_CREAT));
	snprintf(p, sizeof p, "%s/nonexistent", rootdir);
	ck_assert_int_eq(stat(p, &st), 0);
	/* ... and one pointing outside creates nothing. */
	expect_error(_i, "dangling_out", O_WRONLY | O_CREAT, -SBX_EESCAPE);
	snprintf(p, sizeof p, "%s/created", outside);
	ck_assert_int_eq(stat(p, &st), -1);
	expect_error(_i, "missing_dir/x", O_WRONLY | O_CREAT, -SBX_ENOENT);
	expect_error(_i, "newdir/", O_WRONLY | O_CREAT, -SBX_EISDIR);
	expect_no_fd_leak();
}
END_TEST

/* ---------------------------------------------------------------------------------------
 * sbx_path_open: escapes and malformed paths
 * ------------------------------------------------------------------------------------- */

START_TEST(open_refuses_dotdot_escapes)
{
	static const struct refused_open cases[] = {
		{ "../outside/secret", O_RDONLY, -SBX_EESCAPE },
		{ "a/../../x", O_RDONLY, -SBX_EESCAPE },
		{ "a/b/../../../root/file.txt", O_RDONLY, -SBX_EESCAPE },
		{ "../root", O_PATH, -SBX_EESCAPE },
		{ "/etc/passwd", O_RDONLY, -SBX_EESCAPE },
		{ "/", O_PATH, -SBX_EESCAPE },
		{ "..", O_WRONLY | O_CREAT, -SBX_EESCAPE },
		{ "../created", O_WRONLY | O_CREAT, -SBX_EESCAPE },
	};

	use_impl(_i);
	expect_error(_i, "..", O_RDONLY, -SBX_EESCAPE);
	ck_assert_str_eq(sbx_last_error(), "path '..': escapes the workspace root");
	expect_errors(_i, cases, SBX_ARRAY_SIZE(cases));
	expect_no_fd_leak();
}
END_TEST

START_TEST(open_refuses_symlink_escapes)
{
	static const struct refused_open cases[] = {
		{ "link_abs", O_RDONLY | O_DIRECTORY, -SBX_EESCAPE },
		{ "link_abs/secret", O_RDONLY, -SBX_EESCAPE },
		{ "link_etc/passwd", O_RDONLY, -SBX_EESCAPE },
		{ "link_etc", O_PATH, -SBX_EESCAPE },
		{ "link_out", O_RDONLY, -SBX_EESCAPE },
		{ "link_out_dir/secret", O_RDONLY, -SBX_EESCAPE },
		{ "link_out_dir/new", O_WRONLY | O_CREAT, -SBX_EESCAPE },
		{ "a/link_up2", O_PATH, -SBX_EESCAPE },
		{ "a/link_up2/passwd", O_RDONLY, -SBX_EESCAPE },
		{ "chain1", O_PATH, -SBX_EESCAPE },
		{ "chain1/secret", O_RDONLY, -SBX_EESCAPE },
	};

	use_impl(_i);
	expect_errors(_i, cases, SBX_ARRAY_SIZE(cases));
	expect_no_fd_leak();
}
END_TEST

START_TEST(open_refuses_magic_links)
{
	char p[PATH_MAX];

	use_impl(_i);
	expect_error(_i, "proc_link", O_PATH, -SBX_EESCAPE);
	expect_error(_i, "proc_link/etc/passwd", O_RDONLY, -SBX_EESCAPE);
	/* A magic link reached beneath the root (procfs bound inside) is refused too. */
	snprintf(p, sizeof p, "%s/dir/fdlink", rootdir);
	ck_assert_int_eq(symlink("/proc/self/fd", p), 0);
	expect_error(_i, "dir/fdlink/0", O_RDONLY, -SBX_EESCAPE);
	expect_no_fd_leak();
}
END_TEST

START_TEST(open_refuses_magic_links_beneath)
{
	char p[PATH_MAX];
	int fd;

	/* A /proc mounted beneath the root: its magic links must not be followed. */
	TEST_NEED(TEST_CAP_ROOT, geteuid() == 0, "mounting a /proc beneath the root needs root");
	use_impl(_i);
	snprintf(p, sizeof p, "%s/proc", rootdir);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	TEST_NEED(TEST_CAP_MOUNT, mount("proc", p, "proc", 0, NULL) == 0,
	          "mounting a /proc beneath the root fails");
	/* Unmount before asserting: a failed check must not leave /proc under a temp dir. */
	fd = sbx_path_open(rootfd, "proc/self/root/etc/passwd", O_RDONLY, 0);
	int fd2 = sbx_path_open(rootfd, "proc/self/cwd", O_PATH, 0);
	int fd3 = sbx_path_open(rootfd, "proc/self/fd/0", O_RDONLY, 0);
	umount2(p, MNT_DETACH);
	for (int k = 0; k < 3; k++) {
		int got = k == 0 ? fd : k == 1 ? fd2 : fd3;
		if (got >= 0)
			close(got);
		ck_assert_msg(got == -SBX_ELOOP || got == -SBX_EESCAPE, "%s: magic link %d gave %d",
		              impl_name(_i), k, got);
	}
}
END_TEST

START_TEST(open_refuses_loops)
{
	char p[PATH_MAX], link[64], target[64];

	use_impl(_i);
	expect_error(_i, "loop1", O_RDONLY, -SBX_ELOOP);
	expect_error(_i, "self", O_PATH, -SBX_ELOOP);
	expect_error(_i, "self/x", O_RDONLY, -SBX_ELOOP);
	/* The kernel follows 40 links in one lookup and refuses the 41st; so do we. */
	for (int k = 0; k < 41; k++) {
		snprintf(link, sizeof link, "dir/l%d", k);
		if (k == 0)
			snprintf(target, sizeof target, "../file.txt");
		else
			snprintf(target, sizeof target, "l%d", k - 1);
		snprintf(p, sizeof p, "%s/%s", rootdir, link);
		ck_assert_int_eq(symlink(target, p), 0);
	}
	expect_content(_i, "dir/l39", "hello");
	expect_error(_i, "dir/l40", O_RDONLY, -SBX_ELOOP);
	expect_no_fd_leak();
}
END_TEST

START_TEST(open_refuses_through_files)
{
	static const struct refused_open cases[] = {
		{ "file.txt/x", O_RDONLY, -SBX_ENOTDIR },
		{ "file.txt/", O_RDONLY, -SBX_ENOTDIR },
		{ "file.txt/..", O_PATH, -SBX_ENOTDIR },
		{ "link_in/x", O_RDONLY, -SBX_ENOTDIR },
		{ "missing/x", O_RDONLY, -SBX_ENOENT },
		{ "dangling/x", O_RDONLY, -SBX_ENOENT },
	};

	use_impl(_i);
	expect_errors(_i, cases, SBX_ARRAY_SIZE(cases));
	expect_no_fd_leak();
}
END_TEST

START_TEST(open_refuses_long_paths)
{
	char *big = malloc(PATH_MAX + 1);
	char name[NAME_MAX + 2];

	use_impl(_i);
	memset(big, 'a', PATH_MAX);
	big[PATH_MAX] = '\0';
	expect_error(_i, big, O_RDONLY, -SBX_ENAMETOOLONG);
	/* Many short components, just below PATH_MAX: "a/../a/../...". */
	size_t n = 0;
	while (n + 6 < PATH_MAX - 10) {
		memcpy(big + n, "a/../", 5);
		n += 5;
	}
	strcpy(big + n, "file.txt");
	expect_content(_i, big, "hello");
	memset(name, 'n', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	expect_error(_i, name, O_RDONLY, -SBX_ENAMETOOLONG);
	expect_error(_i, name, O_WRONLY | O_CREAT, -SBX_ENAMETOOLONG);
	name[NAME_MAX] = '\0'; /* exactly NAME_MAX is fine, just missing */
	expect_error(_i, name, O_RDONLY, -SBX_ENOENT);
	free(big);
	expect_no_fd_leak();
}
END_TEST

/* Deeper than the fallback's fd window: ".." must come back by reopening from the root. */
START_TEST(open_deep_trees)
{
	enum { DEPTH = 100 };
	char *path = malloc(DEPTH * 8 + 64);
	char dir[PATH_MAX];
	size_t n = 0;
	int fd;

	use_impl(_i);
	snprintf(dir, sizeof dir, "%s", rootdir);
	for (int k = 0; k < DEPTH; k++) {
		strcat(dir, "/d");
		ck_assert_int_eq(mkdir(dir, 0755), 0);
	}
	/* Prove the walk does not keep one fd per level. */
	test_limit_fds(48);
	for (int k = 0; k < DEPTH; k++)
		n += (size_t)sprintf(path + n, "d/");
	for (int k = 0; k < DEPTH; k++)
		n += (size_t)sprintf(path + n, "../");
	strcpy(path + n, "file.txt");
	expect_content(_i, path, "hello");
	strcpy(path + n, "../x");
	expect_error(_i, path, O_RDONLY, -SBX_EESCAPE);
	/* Half way down, up three, down again. */
	n = 0;
	for (int k = 0; k < DEPTH / 2; k++)
		n += (size_t)sprintf(path + n, "d/");
	strcpy(path + n, "../../../d/d/d/d");
	fd = open_ok(_i, path, O_RDONLY | O_DIRECTORY);
	close(fd);
	free(path);
	expect_no_fd_leak();
}
END_TEST

/* A host that closed stdout gets fd 1 back from the library: it is an fd, not a code. */
START_TEST(open_with_stdout_closed)
{
	int saved = dup(1);
	char buf[16] = { 0 };
	ssize_t n = -1;
	int fd;

	use_impl(_i);
	close(1);
	fd = sbx_path_open(rootfd, "file.txt", O_RDONLY, 0);
	if (fd >= 0) {
		n = read(fd, buf, sizeof buf - 1);
		close(fd);
	}
	dup2(saved, 1);
	close(saved);
	ck_assert_msg(fd == 1, "%s: got %d", impl_name(_i), fd);
	ck_assert_int_eq(n, 5);
	ck_assert_str_eq(buf, "hello");
	expect_no_fd_leak();
}
END_TEST

/* ---------------------------------------------------------------------------------------
 * sbx_path_open_parent
 * ------------------------------------------------------------------------------------- */

static void parent_is(int i, const char *rel, bool mkdirs, const char *want_dir,
                      const char *want_name)
{
	char p[PATH_MAX];
	struct stat got, want;
	char *name = NULL;
	int dirfd = -1;
	int r = sbx_path_open_parent(rootfd, rel, mkdirs, &dirfd, &name);

	ck_assert_msg(r == 0, "%s: parent of '%s': %d %s", impl_name(i), rel, r, sbx_last_error());
	ck_assert_str_eq(name, want_name);
	snprintf(p, sizeof p, "%s/%s", rootdir, want_dir);
	ck_assert_int_eq(stat(p, &want), 0);
	ck_assert_int_eq(fstat(dirfd, &got), 0);
	ck_assert_msg(got.st_ino == want.st_ino, "%s: parent of '%s' is not '%s'", impl_name(i),
	              rel, want_dir);
	close(dirfd);
	free(name);
}

static void parent_fails(int i, const char *rel, bool mkdirs, int code)
{
	char *name = NULL;
	int dirfd = -1;
	int r = sbx_path_open_parent(rootfd, rel, mkdirs, &dirfd, &name);

	ck_assert_msg(r == code, "%s: parent of '%s' gave %d (%s), want %d", impl_name(i), rel, r,
	              sbx_last_error(), code);
	ck_assert_int_eq(dirfd, -1);
	ck_assert_ptr_null(name);
}

START_TEST(parent_cases)
{
	use_impl(_i);
	parent_is(_i, "a/b/c.txt", false, "a/b", "c.txt");
	parent_is(_i, "x", false, ".", "x");
	parent_is(_i, "dir/", false, ".", "dir");
	parent_is(_i, "link_dir/f", false, "a/b", "f");
	parent_is(_i, "a/b/../f", false, "a", "f");
	parent_fails(_i, "", false, -SBX_EINVAL);
	parent_fails(_i, "/", false, -SBX_EESCAPE);
	parent_fails(_i, "a/..", false, -SBX_EINVAL);
	parent_fails(_i, "a/.", false, -SBX_EINVAL);
	parent_fails(_i, "..", false, -SBX_EINVAL);
	parent_fails(_i, "../x", false, -SBX_EESCAPE);
	parent_fails(_i, "link_abs/x", false, -SBX_EESCAPE);
	parent_fails(_i, "link_out_dir/x", true, -SBX_EESCAPE);
	parent_fails(_i, "missing/x", false, -SBX_ENOENT);
	parent_fails(_i, "file.txt/x", true, -SBX_ENOTDIR);
	expect_no_fd_leak();
}
END_TEST

START_TEST(parent_mkdirs)
{
	char p[PATH_MAX];
	struct stat st;

	use_impl(_i);
	umask(077); /* the created parents are 0755 & ~umask, like mkdir -p */
	parent_is(_i, "n1/n2/n3/f", true, "n1/n2/n3", "f");
	snprintf(p, sizeof p, "%s/n1/n2", rootdir);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	parent_is(_i, "a/b/../m1/./m2//f", true, "a/m1/m2", "f");
	parent_is(_i, "link_dir/m3/f", true, "a/b/m3", "f");
	/* A dangling link in the way is not replaced by a directory. */
	parent_fails(_i, "dangling/x/f", true, -SBX_ENOENT);
	/* Nothing may be created outside through an escaping link. */
	parent_fails(_i, "link_out_dir/new/f", true, -SBX_EESCAPE);
	parent_fails(_i, "chain1/new/f", true, -SBX_EESCAPE);
	parent_fails(_i, "../outside/new/f", true, -SBX_EESCAPE);
	snprintf(p, sizeof p, "%s/new", outside);
	ck_assert_int_eq(stat(p, &st), -1);
	expect_no_fd_leak();
}
END_TEST

START_TEST(forcing_fallback_keeps_probe)
{
	/* The probe's answer is cached; forcing the fallback and back must not disturb it. */
	sbx_path_force_fallback(true);
	expect_content(1, "file.txt", "hello");
	sbx_path_force_fallback(false);
	expect_content(0, "file.txt", "hello");
	expect_content(0, "file.txt", "hello");
}
END_TEST

static Suite *path_suite(void)
{
	Suite *s = suite_create("path");
	TCase *tc = tcase_create("relative");

	tcase_add_test(tc, relative_accepts_paths_under_root);
	tcase_add_test(tc, relative_refuses_outside);
	tcase_add_test(tc, relative_in_takes_either_root);
	tcase_add_test(tc, relative_refuses_bad_text);
	tcase_add_test(tc, normalize_cases);
	suite_add_tcase(s, tc);

	tc = tcase_create("resolve");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, open_plain_and_dotted, 0, 2);
	tcase_add_loop_test(tc, open_directories, 0, 2);
	tcase_add_loop_test(tc, open_symlinks_inside, 0, 2);
	tcase_add_loop_test(tc, open_creates, 0, 2);
	tcase_add_loop_test(tc, open_refuses_dotdot_escapes, 0, 2);
	tcase_add_loop_test(tc, open_refuses_symlink_escapes, 0, 2);
	tcase_add_loop_test(tc, open_refuses_magic_links, 0, 2);
	tcase_add_loop_test(tc, open_refuses_loops, 0, 2);
	tcase_add_loop_test(tc, open_refuses_through_files, 0, 2);
	tcase_add_loop_test(tc, open_refuses_long_paths, 0, 2);
	tcase_add_loop_test(tc, open_deep_trees, 0, 2);
	tcase_add_loop_test(tc, open_with_stdout_closed, 0, 2);
	tcase_add_loop_test(tc, parent_cases, 0, 2);
	tcase_add_loop_test(tc, parent_mkdirs, 0, 2);
	tcase_add_test(tc, forcing_fallback_keeps_probe);
	suite_add_tcase(s, tc);

	/* What only root can set up; tagged 'root', a meson test of its own. */
	tc = tcase_create("resolve-as-root");
	tcase_set_tags(tc, "root");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, open_refuses_magic_links_beneath, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(path_suite());
}
