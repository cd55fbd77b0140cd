/* Helpers shared by the Check test programs. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support.h"
#include "util/cleanup.h"

char *test_mkdtemp(void)
{
	const char *tmp = getenv("TMPDIR");
	char *path = NULL;

	if (asprintf(&path, "%s/sbx-test-XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0)
		abort();
	if (!mkdtemp(path))
		abort();
	return path;
}

void test_rm_rf(const char *path)
{
	_cleanup_free_ char *cmd = NULL;

	if (!path || !*path || strcmp(path, "/") == 0)
		return;
	if (asprintf(&cmd, "rm -rf -- '%s'", path) < 0)
		abort();
	if (system(cmd) != 0)
		fprintf(stderr, "warning: %s failed\n", cmd);
}

bool test_process_exists(const char *fragment)
{
	_cleanup_closedir_ DIR *d = opendir("/proc");
	struct dirent *e;
	bool found = false;
	char self[32];

	snprintf(self, sizeof self, "%d", (int)getpid());
	while (d && (e = readdir(d)) && !found) {
		char path[300], buf[4096];
		ssize_t n;
		int fd;

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || strcmp(e->d_name, self) == 0)
			continue;
		snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0)
			continue;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		buf[n] = '\0';
		if (strstr(buf, fragment))
			found = true;
	}
	return found;
}

bool test_required(const char *name)
{
	const char *req = getenv("SBX_TEST_REQUIRE");
	size_t n = strlen(name);

	for (const char *p = req; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] ? 1 : 0))
		if (strcspn(p, ",") == n && !strncmp(p, name, n))
			return true;
	return false;
}

/* Where the cases of this run record their skips: a file every forked case inherits, opened
 * for appending, which test_run_suite reads when the run is over. -1 outside a run. */
static int skip_log = -1;

/* START_TEST names the function of case x "x_fn": the report names the case. */
static int case_name_length(const char *fn)
{
	size_t n = strlen(fn);

	return (int)(n > 3 && !strcmp(fn + n - 3, "_fn") ? n - 3 : n);
}

bool test_need(const char *cap, bool have, const char *case_name, int pass, const char *why)
{
	char line[512];
	int len;

	if (have)
		return true;
	ck_assert_msg(!test_required(cap), "%.*s[%d] needs %s, which SBX_TEST_REQUIRE names: %s",
	              case_name_length(case_name), case_name, pass, cap, why);
	len = snprintf(line, sizeof line, "SKIP %.*s[%d]: needs %s: %s\n",
	               case_name_length(case_name), case_name, pass, cap, why);
	if (len >= (int)sizeof line)
		len = (int)sizeof line - 1;
	fputs(line, stderr);
	if (skip_log >= 0 && write(skip_log, line, (size_t)len) != len)
		fprintf(stderr, "warning: cannot record the skip: %s\n", strerror(errno));
	return false;
}

static int open_skip_log(void)
{
	const char *tmp = getenv("TMPDIR");
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof path, "%s/sbx-skips-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	fd = mkostemp(path, O_APPEND | O_CLOEXEC);
	if (fd < 0)
		abort();
	unlink(path);
	return fd;
}

/* The number of skips recorded in the log, and the first record (without "SKIP " and its
 * newline) in first. */
static int count_skips(int fd, char *first, size_t first_size)
{
	char buf[4096];
	size_t kept = 0;
	ssize_t n;
	int lines = 0;

	first[0] = '\0';
	if (lseek(fd, 0, SEEK_SET) < 0)
		abort();
	while ((n = read(fd, buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == '\n')
				lines++;
			else if (lines == 0 && kept + 1 < first_size)
				first[kept++] = buf[i];
		}
	first[kept] = '\0';
	return lines;
}

const char *test_state_dir(const char *workdir)
{
	static char bufs[8][PATH_MAX + 64];
	static int next;
	char real[PATH_MAX], hex[65] = "", *cmd = NULL, *out = bufs[next++ % 8];
	const char *base, *xdg = getenv("XDG_STATE_HOME");
	FILE *f;

	if (!realpath(workdir, real) || !xdg)
		abort();
	base = strrchr(real, '/') + 1;
	/* An independent computation of the key (src/state.c): sha256sum of the canonical path. */
	if (asprintf(&cmd, "printf %%s '%s' | sha256sum", real) < 0 || !(f = popen(cmd, "r")))
		abort();
	if (fscanf(f, "%64s", hex) != 1)
		abort();
	pclose(f);
	free(cmd);
	snprintf(out, sizeof bufs[0], "%s/agentsbx/workspaces/%s-%.16s", xdg, base, hex);
	return out;
}

/* The library keeps each workdir's state folder (and private HOME) below $XDG_STATE_HOME:
 * one of the run's own, removed after it (test_run_suite), so that tests leave nothing in
 * the user's. Made once, by the first call. */
static char *state_home;

void test_private_state_home(void)
{
	if (state_home)
		return;
	state_home = test_mkdtemp();
	setenv("XDG_STATE_HOME", state_home, 1);
}

int test_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed, ran, skipped;
	char first[512];
	const char *why;

	test_private_state_home();
	skip_log = open_skip_log();
	srunner_run_all(sr, CK_NORMAL);
	test_rm_rf(state_home);
	free(SBX_TAKE_PTR(state_home));
	failed = srunner_ntests_failed(sr);
	ran = srunner_ntests_run(sr);
	srunner_free(sr);
	skipped = count_skips(skip_log, first, sizeof first);
	close(skip_log);
	skip_log = -1;
	if (failed)
		return 1;
	if (!skipped)
		return 0;
	/* The last line is the reason meson's log and tests/run-all.sh show for the skip: on
	 * both streams, for a log may keep them apart. */
	why = strncmp(first, "SKIP ", 5) ? first : first + 5;
	fflush(stdout);
	fprintf(stderr, "SKIP: %d of %d cases could not run here, first %s\n", skipped, ran, why);
	printf("SKIP: %d of %d cases could not run here, first %s\n", skipped, ran, why);
	return TEST_EXIT_SKIP;
}

const char *test_path_at(const char *base, const char *rel)
{
	static char buf[8][PATH_MAX];
	static unsigned n;
	char *out = buf[n++ % 8];

	snprintf(out, PATH_MAX, "%s/%s", base, rel);
	return out;
}

void test_put_file(const char *base, const char *rel, const char *text, mode_t mode)
{
	int fd = open(test_path_at(base, rel), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	ck_assert_msg(fd >= 0, "create %s: %s", rel, strerror(errno));
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	ck_assert_int_eq(fchmod(fd, mode), 0);
	close(fd);
}

char *test_slurp(const char *path)
{
	static char buf[65536];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return buf;
}

bool test_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

mode_t test_mode_of(const char *path)
{
	struct stat st;

	ck_assert_int_eq(lstat(path, &st), 0);
	return st.st_mode & 07777;
}

int test_count_fds(void)
{
	_cleanup_closedir_ DIR *d = opendir("/proc/self/fd");
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while (readdir(d))
		n++;
	return n;
}

bool test_has_temp_files(const char *dir)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (strstr(e->d_name, ".sbx-"))
			found = true;
	return found;
}

void test_limit_fds(unsigned long n)
{
	struct rlimit rl;

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = n;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		fprintf(stderr, "note: cannot lower RLIMIT_NOFILE: %s\n", strerror(errno));
}
