/* The journal of what the library makes in a workspace (util/journal.h): notes parsed back
 * strictly, owners told alive from ended, placeholders made and taken away, and a sweep that
 * removes only what is provably ours — the noted inode, still empty — and only once its
 * maker has ended. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/fs.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "support.h"
#include "util/buf.h"
#include "util/journal.h"

static char *dir;
static int root = -1;

__attribute__((format(printf, 1, 2)))
static char *fmt(const char *format, ...)
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

static const char *const paths[] = { ".bashrc", ".profile", "sub/.mcp.json", "missing/x",
                                     "hooks", ".zshrc", NULL };
static const enum sbx_placeholder_kind kinds[] = {
	SBX_PLACEHOLDER_FILE, SBX_PLACEHOLDER_SOCKET, SBX_PLACEHOLDER_FILE, SBX_PLACEHOLDER_FILE,
	SBX_PLACEHOLDER_DIR, SBX_PLACEHOLDER_SOCKET,
};

static void setup(void)
{
	dir = test_mkdtemp();
	ck_assert_int_eq(mkdir(test_path_at(dir, ".agentsbx"), 0755), 0);
	ck_assert_int_eq(mkdir(test_path_at(dir, "sub"), 0755), 0);
	root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(root, 0);
}

static void teardown(void)
{
	close(root);
	test_rm_rf(dir);
	free(dir);
}

/* The template with $O (the owner's JSON), $A and $I replaced: notes written by hand. */
static char *expand(const char *tpl, const char *owner, const char *at, unsigned long long ino)
{
	sbx_buf b = { 0 };
	char num[32];

	snprintf(num, sizeof num, "%llu", ino);
	for (const char *p = tpl; *p; p++) {
		if (p[0] == '$' && (p[1] == 'O' || p[1] == 'A' || p[1] == 'I')) {
			sbx_buf_puts(&b, p[1] == 'O' ? owner : p[1] == 'A' ? at : num);
			p++;
		} else {
			sbx_buf_append(&b, p, 1);
		}
	}
	ck_assert(!b.oom);
	return sbx_buf_steal(&b, NULL);
}

static int notes(void)
{
	char cmd[PATH_MAX + 64];
	FILE *f;
	int n = -1;

	snprintf(cmd, sizeof cmd, "ls -A '%s/.agentsbx/journal' | wc -l", dir);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%d", &n), 1);
	pclose(f);
	return n;
}

/* The owner of a process that has ended: a child, run and reaped. */
static void ended_owner(struct sbx_journal_owner *o)
{
	int p[2], status;
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	if ((pid = fork()) == 0) {
		struct sbx_journal_owner me;
		if (sbx_journal_self(&me) < 0 || write(p[1], &me, sizeof me) != sizeof me)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], o, sizeof *o), (ssize_t)sizeof *o);
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
}

static char *owner_json(const struct sbx_journal_owner *o)
{
	return fmt("{\"boot\":\"%s\",\"pidns\":%llu,\"pid\":%lld,\"start\":%llu}",
	                          o->boot, (unsigned long long)o->pidns, (long long)o->pid,
	                          (unsigned long long)o->start);
}

START_TEST(owners_alive_and_ended)
{
	struct sbx_journal_owner me, gone, other;

	ck_assert_int_eq(sbx_journal_self(&me), 0);
	ck_assert_int_eq(me.pid, getpid());
	ck_assert(sbx_journal_owner_alive(&me));
	ended_owner(&gone);
	ck_assert(!sbx_journal_owner_alive(&gone));
	/* A reused pid is not the owner: another start time. */
	other = me;
	other.start++;
	ck_assert(!sbx_journal_owner_alive(&other));
	/* Made before the last boot: ended. */
	other = me;
	other.boot[0] = other.boot[0] == 'a' ? 'b' : 'a';
	ck_assert(!sbx_journal_owner_alive(&other));
	/* Another PID namespace cannot be looked at: left alone. */
	other = gone;
	other.pidns++;
	ck_assert(sbx_journal_owner_alive(&other));
}
END_TEST

START_TEST(notes_parse_strictly)
{
	struct sbx_journal_owner me;
	struct sbx_journal_note n;
	char *owner;

	ck_assert_int_eq(sbx_journal_self(&me), 0);
	owner = owner_json(&me);
	const char *good[] = {
		"{\"kind\":\"temp\",\"owner\":$O,\"items\":[{\"at\":\"a/b\",\"tmp\":\".f.sbx-Ab12Cd\","
		"\"dev\":1,\"ino\":2}]}",
		"{\"kind\":\"placeholders\",\"owner\":$O,\"detached\":true,\"items\":[{\"at\":\"\","
		"\"name\":\".bashrc\",\"tmp\":\"..bashrc.sbx-0a1b2c\",\"dir\":false,\"dev\":0,"
		"\"ino\":0}]}",
	};
	const char *bad[] = {
		"[]",
		"{\"kind\":\"other\",\"owner\":$O,\"items\":[]}",
		"{\"kind\":\"temp\",\"owner\":$O,\"items\":[]}",
		/* a name that is not one of our temporary names: never removed on its own */
		"{\"kind\":\"temp\",\"owner\":$O,\"items\":[{\"at\":\"\",\"tmp\":\".git\"}]}",
		"{\"kind\":\"temp\",\"owner\":$O,\"items\":[{\"at\":\"\",\"tmp\":\"config.sbx-abcdef\"}]}",
		"{\"kind\":\"temp\",\"owner\":$O,\"items\":[{\"at\":\"../x\",\"tmp\":\".f.sbx-abcdef\"}]}",
		"{\"kind\":\"temp\",\"owner\":$O,\"items\":[{\"at\":\"/etc\",\"tmp\":\".f.sbx-abcdef\"}]}",
		"{\"kind\":\"temp\",\"owner\":$O,\"items\":[{\"at\":\"a//b\",\"tmp\":\".f.sbx-abcdef\"}]}",
		"{\"kind\":\"temp\",\"owner\":$O,\"items\":[{\"at\":\"\",\"tmp\":\".f.sbx-ab/def\"}]}",
		"{\"kind\":\"temp\",\"owner\":$O,\"items\":[{\"at\":\"\",\"tmp\":\".f.sbx-abcdef\","
		"\"name\":\"f\"}]}",
		"{\"kind\":\"temp\",\"owner\":$O,\"items\":[{\"at\":\"\",\"tmp\":\".f.sbx-abcdef\","
		"\"ino\":-1}]}",
		"{\"kind\":\"temp\",\"owner\":$O,\"items\":[{\"at\":\"\",\"tmp\":\".f.sbx-abcdef\","
		"\"extra\":1}]}",
		"{\"kind\":\"placeholders\",\"owner\":$O,\"items\":[{\"at\":\"\",\"name\":\"a/b\","
		"\"tmp\":\".f.sbx-abcdef\"}]}",
		"{\"kind\":\"placeholders\",\"owner\":$O,\"items\":[{\"at\":\"\",\"name\":\"..\","
		"\"tmp\":\".f.sbx-abcdef\"}]}",
		"{\"kind\":\"temp\",\"owner\":{\"boot\":\"x\",\"pidns\":1,\"pid\":0,\"start\":1},"
		"\"items\":[{\"at\":\"\",\"tmp\":\".f.sbx-abcdef\"}]}$O",
	};

	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		char *text = expand(good[i], owner, "", 0);
		ck_assert_msg(sbx_journal_parse(text, strlen(text), &n) == 0, "%s: %s", text,
		              sbx_last_error());
		ck_assert_uint_eq(n.n_items, 1);
		sbx_journal_note_free(&n);
		free(text);
	}
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char *text = expand(bad[i], owner, "", 0);
		ck_assert_msg(sbx_journal_parse(text, strlen(text), &n) == -SBX_EINVAL, "%s", text);
		ck_assert_ptr_nonnull(strstr(sbx_last_error(), "journal note"));
		free(text);
	}
	free(owner);
}
END_TEST

START_TEST(placeholders_made_and_undone)
{
	sbx_journal *j = NULL;
	char *record = NULL;
	struct stat st;

	test_put_file(dir, ".profile", "mine\n", 0644);
	ck_assert_int_eq(sbx_journal_open(root, SBX_JOURNAL_WORKSPACE, &j), 0);
	ck_assert_int_eq(sbx_journal_make_placeholders(j, paths, kinds, false, &record), 0);
	ck_assert_ptr_nonnull(record);
	/* Made: the missing ones whose parent exists; left: the user's .profile. */
	ck_assert_int_eq(stat(test_path_at(dir, ".bashrc"), &st), 0);
	ck_assert(S_ISREG(st.st_mode) && st.st_size == 0 && (st.st_mode & 0777) == 0444);
	ck_assert_int_eq(stat(test_path_at(dir, "sub/.mcp.json"), &st), 0);
	ck_assert_int_eq(stat(test_path_at(dir, "hooks"), &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(lstat(test_path_at(dir, ".zshrc"), &st), 0);
	ck_assert(S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0444);
	ck_assert(!test_exists(test_path_at(dir, "missing")));
	ck_assert_str_eq(test_slurp(test_path_at(dir, ".profile")), "mine\n");
	ck_assert(!test_has_temp_files(dir));
	ck_assert_int_eq(notes(), 1);
	/* What changed meanwhile is not ours any more: written to, or replaced. */
	ck_assert_int_eq(unlink(test_path_at(dir, "sub/.mcp.json")), 0);
	test_put_file(dir, "sub/.mcp.json", "", 0644);
	ck_assert_int_eq(chmod(test_path_at(dir, "hooks"), 0755), 0);
	test_put_file(dir, "hooks/pre-commit", "#!/bin/sh\n", 0755);
	sbx_journal_undo(root, SBX_JOURNAL_WORKSPACE, record);
	ck_assert(!test_exists(test_path_at(dir, ".bashrc")));
	ck_assert(!test_exists(test_path_at(dir, ".zshrc")));
	ck_assert(test_exists(test_path_at(dir, "sub/.mcp.json")));
	ck_assert(test_exists(test_path_at(dir, "hooks/pre-commit")));
	ck_assert_str_eq(test_slurp(test_path_at(dir, ".profile")), "mine\n");
	ck_assert_int_eq(notes(), 0);
	/* Nothing missing: no note. */
	free(record);
	const char *none[] = { ".profile", NULL };
	ck_assert_int_eq(sbx_journal_make_placeholders(j, none, kinds, false, &record), 0);
	ck_assert_ptr_null(record);
	sbx_journal_free(j);
}
END_TEST

/* Writes a note by hand, as a process that has ended would have left it. */
static void put_note(const char *name, const char *format, const struct sbx_journal_owner *o,
                     const char *a, unsigned long long ino)
{
	char *owner = owner_json(o), *path = fmt(".agentsbx/journal/%s", name);
	char *text = NULL;

	text = expand(format, owner, a, ino);
	test_put_file(dir, path, text, 0600);
	free(text);
	free(path);
	free(owner);
}

START_TEST(sweep_takes_only_what_is_provably_ours)
{
	struct sbx_journal_owner me, gone;
	sbx_journal *j = NULL;
	struct stat st;

	ck_assert_int_eq(sbx_journal_open(root, SBX_JOURNAL_WORKSPACE, &j), 0);
	sbx_journal_free(j);
	ck_assert_int_eq(sbx_journal_self(&me), 0);
	ended_owner(&gone);
	test_put_file(dir, "sub/.f.sbx-abcdef", "a killed write's data", 0600);
	ck_assert_int_eq(stat(test_path_at(dir, "sub/.f.sbx-abcdef"), &st), 0);
	char *dev = fmt("%llu", (unsigned long long)st.st_dev);
	char *note = fmt("{\"kind\":\"temp\",\"owner\":$O,\"items\":[{\"at\":\"$A\","
	                 "\"tmp\":\".f.sbx-abcdef\",\"dev\":%s,\"ino\":$I}]}", dev);
	/* Its writer still runs: left alone. */
	put_note("t-1", note, &me, "sub", (unsigned long long)st.st_ino);
	ck_assert_int_eq(sbx_journal_sweep(root, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_ENDED), 0);
	ck_assert(test_exists(test_path_at(dir, "sub/.f.sbx-abcdef")));
	ck_assert_int_eq(notes(), 1);
	/* Ended, but another inode there now: the note goes, the file stays. */
	put_note("t-1", note, &gone, "sub", (unsigned long long)st.st_ino + 1);
	ck_assert_int_eq(sbx_journal_sweep(root, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_ENDED), 0);
	ck_assert(test_exists(test_path_at(dir, "sub/.f.sbx-abcdef")));
	ck_assert_int_eq(notes(), 0);
	/* Ended, the noted inode number but another generation (a number freed and reused): the
	 * file stays. Where the file system keeps generations. */
	long gen = 0;
	int gfd = open(test_path_at(dir, "sub/.f.sbx-abcdef"), O_RDONLY | O_CLOEXEC);
	if (gfd >= 0 && ioctl(gfd, FS_IOC_GETVERSION, &gen) == 0) {
		char *wrong = fmt("{\"kind\":\"temp\",\"owner\":$O,\"items\":[{\"at\":\"$A\","
		                  "\"tmp\":\".f.sbx-abcdef\",\"dev\":%s,\"ino\":$I,\"gen\":%llu}]}",
		                  dev, (unsigned long long)((gen + 1) & 0xffffffff));
		put_note("t-g", wrong, &gone, "sub", (unsigned long long)st.st_ino);
		ck_assert_int_eq(sbx_journal_sweep(root, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_ENDED), 0);
		ck_assert(test_exists(test_path_at(dir, "sub/.f.sbx-abcdef")));
		free(wrong);
	}
	if (gfd >= 0)
		close(gfd);
	/* Ended, the noted inode: swept. */
	put_note("t-2", note, &gone, "sub", (unsigned long long)st.st_ino);
	ck_assert_int_eq(sbx_journal_sweep(root, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_ENDED), 1);
	ck_assert(!test_exists(test_path_at(dir, "sub/.f.sbx-abcdef")));
	ck_assert_int_eq(notes(), 0);
	/* Noted before its inode was known: only while still empty. */
	test_put_file(dir, ".f.sbx-abcdef", "data", 0600);
	put_note("t-3", note, &gone, "", 0);
	ck_assert_int_eq(sbx_journal_sweep(root, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_ENDED), 0);
	ck_assert(test_exists(test_path_at(dir, ".f.sbx-abcdef")));
	test_put_file(dir, ".f.sbx-abcdef", "", 0600);
	put_note("t-3", note, &gone, "", 0);
	ck_assert_int_eq(sbx_journal_sweep(root, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_ENDED), 1);
	ck_assert(!test_exists(test_path_at(dir, ".f.sbx-abcdef")));
	/* A note that cannot be read back is junk, once it is old. */
	test_put_file(dir, ".agentsbx/journal/t-junk", "{\"kind\":", 0600);
	ck_assert_int_eq(sbx_journal_sweep(root, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_ENDED), 0);
	ck_assert_int_eq(notes(), 1);
	struct timespec old[2] = { { .tv_sec = 1000 }, { .tv_sec = 1000 } };
	ck_assert_int_eq(utimensat(AT_FDCWD, test_path_at(dir, ".agentsbx/journal/t-junk"), old, 0), 0);
	ck_assert_int_eq(sbx_journal_sweep(root, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_ENDED), 0);
	ck_assert_int_eq(notes(), 0);
	free(dev);
	free(note);
}
END_TEST

START_TEST(sweep_leaves_detached_placeholders_to_their_lock_holder)
{
	sbx_journal *j = NULL;
	char *record = NULL;

	/* Made by this process: in a child, which then ends. */
	pid_t pid = fork();
	if (pid == 0) {
		if (sbx_journal_open(root, SBX_JOURNAL_WORKSPACE, &j) < 0 ||
		    sbx_journal_make_placeholders(j, paths, kinds, true, &record) < 0)
			_exit(1);
		_exit(0);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert(test_exists(test_path_at(dir, ".bashrc")));
	/* A detached sandbox outlives its maker: an ordinary sweep keeps its placeholders... */
	ck_assert_int_eq(sbx_journal_sweep(root, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_ENDED), 0);
	ck_assert(test_exists(test_path_at(dir, ".bashrc")));
	/* ...until the caller knows that none runs. */
	ck_assert_int_eq(sbx_journal_sweep(root, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_DETACHED), 5);
	ck_assert(!test_exists(test_path_at(dir, ".bashrc")));
	ck_assert(!test_exists(test_path_at(dir, ".zshrc")));
	ck_assert(!test_exists(test_path_at(dir, "hooks")));
	ck_assert(!test_exists(test_path_at(dir, "sub/.mcp.json")));
	ck_assert_int_eq(notes(), 0);
}
END_TEST

/* Makes the placeholders of paths in a child that then ends: a crashed host's note. */
static void placeholders_of_an_ended_maker(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		sbx_journal *j = NULL;
		char *record = NULL;
		_exit(sbx_journal_open(root, SBX_JOURNAL_WORKSPACE, &j) < 0 ||
		      sbx_journal_make_placeholders(j, paths, kinds, false, &record) < 0 || !record);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static bool is_socket(const char *rel)
{
	struct stat st;

	return lstat(test_path_at(dir, rel), &st) == 0 && S_ISSOCK(st.st_mode);
}

static void make_socket(const char *rel)
{
	ck_assert_int_eq(mknod(test_path_at(dir, rel), S_IFSOCK | 0644, 0), 0);
}

/* Socket placeholders left by a crash go at the next sweep; a socket the user made under
 * the same name afterwards (it may even get the freed inode number) stays. */
START_TEST(sweep_takes_socket_placeholders_and_no_user_socket)
{
	placeholders_of_an_ended_maker();
	ck_assert(is_socket(".zshrc") && is_socket(".profile"));
	ck_assert_int_eq(sbx_journal_sweep(root, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_ENDED), 5);
	ck_assert(!test_exists(test_path_at(dir, ".zshrc")));
	ck_assert(!test_exists(test_path_at(dir, ".profile")));
	ck_assert_int_eq(notes(), 0);

	placeholders_of_an_ended_maker();
	ck_assert_int_eq(unlink(test_path_at(dir, ".zshrc")), 0);
	make_socket(".zshrc");
	ck_assert_int_eq(sbx_journal_sweep(root, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_ENDED), 4);
	ck_assert(is_socket(".zshrc"));
	ck_assert_int_eq(notes(), 0);
}
END_TEST

/* A note naming a socket's inode must also give its birth time, and a socket is removed
 * only where the note says socket and the birth time matches. A note of 1.7.0 (directory
 * placeholders, no birth times) is still swept. */
START_TEST(sweep_checks_a_socket_by_type_and_birth)
{
	struct sbx_journal_owner gone;
	struct sbx_journal_note n;
	struct statx stx;
	sbx_journal *j = NULL;

	ck_assert_int_eq(sbx_journal_open(root, SBX_JOURNAL_WORKSPACE, &j), 0);
	sbx_journal_free(j);
	ended_owner(&gone);
	make_socket(".mcp.json");
	ck_assert_int_eq(statx(AT_FDCWD, test_path_at(dir, ".mcp.json"), AT_SYMLINK_NOFOLLOW,
	                       STATX_BTIME | STATX_INO, &stx), 0);
	if (!(stx.stx_mask & STATX_BTIME))
		return;           /* no birth times here: no socket placeholders either */
	unsigned long long born = (unsigned long long)stx.stx_btime.tv_sec * 1000000000ull +
	                          stx.stx_btime.tv_nsec;
	char *dev = fmt("%llu", (unsigned long long)makedev(stx.stx_dev_major, stx.stx_dev_minor));
#define ITEM "{\"kind\":\"placeholders\",\"owner\":$O,\"items\":[{\"at\":\"$A\"," \
	     "\"name\":\".mcp.json\",\"tmp\":\"..mcp.json.sbx-abcdef\",%s\"dev\":%s,\"ino\":$I%s}]}"
	char *no_born = fmt(ITEM, "\"sock\":true,", dev, "");
	char *owner = owner_json(&gone);
	char *text = expand(no_born, owner, "", 1);
	ck_assert_int_lt(sbx_journal_parse(text, strlen(text), &n), 0);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "items.born"));
	free(text);
	free(owner);
	char *born_s = fmt(",\"born\":%llu", born), *born_wrong = fmt(",\"born\":%llu", born + 1);
	char *not_sock = fmt(ITEM, "", dev, born_s);
	char *wrong = fmt(ITEM, "\"sock\":true,", dev, born_wrong);
	char *right = fmt(ITEM, "\"sock\":true,", dev, born_s);
#undef ITEM
	/* Not noted as a socket, or born at another time: the user's. */
	put_note("p-1", not_sock, &gone, "", (unsigned long long)stx.stx_ino);
	ck_assert_int_eq(sbx_journal_sweep(root, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_ENDED), 0);
	ck_assert(is_socket(".mcp.json"));
	put_note("p-2", wrong, &gone, "", (unsigned long long)stx.stx_ino);
	ck_assert_int_eq(sbx_journal_sweep(root, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_ENDED), 0);
	ck_assert(is_socket(".mcp.json"));
	put_note("p-3", right, &gone, "", (unsigned long long)stx.stx_ino);
	ck_assert_int_eq(sbx_journal_sweep(root, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_ENDED), 1);
	ck_assert(!test_exists(test_path_at(dir, ".mcp.json")));
	/* 1.7.0's note of an empty directory placeholder. */
	struct stat st;
	ck_assert_int_eq(mkdir(test_path_at(dir, ".bashrc"), 0755), 0);
	ck_assert_int_eq(stat(test_path_at(dir, ".bashrc"), &st), 0);
	char *old = fmt("{\"kind\":\"placeholders\",\"owner\":$O,\"detached\":false,\"items\":["
	                "{\"at\":\"$A\",\"name\":\".bashrc\",\"tmp\":\"..bashrc.sbx-abcdef\","
	                "\"dir\":true,\"dev\":%llu,\"ino\":$I}]}", (unsigned long long)st.st_dev);
	put_note("p-4", old, &gone, "", (unsigned long long)st.st_ino);
	ck_assert_int_eq(sbx_journal_sweep(root, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_ENDED), 1);
	ck_assert(!test_exists(test_path_at(dir, ".bashrc")));
	ck_assert_int_eq(notes(), 0);
	free(old);
	free(dev);
	free(no_born);
	free(born_s);
	free(born_wrong);
	free(not_sock);
	free(wrong);
	free(right);
}
END_TEST

/* The fastest of 20 inotify_add_watch calls with a child event on rel: the kernel walks the
 * directory's dentries, negative ones included. */
static double fastest_watch_ms(const char *rel)
{
	double best = 1e9;

	for (int i = 0; i < 20; i++) {
		int fd = inotify_init1(IN_CLOEXEC);
		struct timespec a, b;

		ck_assert_int_ge(fd, 0);
		clock_gettime(CLOCK_MONOTONIC, &a);
		ck_assert_int_ge(inotify_add_watch(fd, test_path_at(dir, rel), IN_CLOSE_WRITE), 0);
		clock_gettime(CLOCK_MONOTONIC, &b);
		close(fd);
		double ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
		best = ms < best ? ms : best;
	}
	return best;
}

/* Sessions that make and undo placeholders leave nothing behind in the directory's dentry
 * cache: the undo does not look up the random temporary names its placeholders no longer
 * have (each lookup of a missing name would stay as a negative dentry, and the git guard's
 * watch at every open walks them all). */
START_TEST(undo_leaves_no_dentries_behind)
{
	static const char *const five[] = { "many/.bashrc", "many/.profile", "many/.zshrc",
		                            "many/.mcp.json", "many/hooks", NULL };
	static const enum sbx_placeholder_kind five_kinds[] = {
		SBX_PLACEHOLDER_SOCKET, SBX_PLACEHOLDER_SOCKET, SBX_PLACEHOLDER_FILE,
		SBX_PLACEHOLDER_SOCKET, SBX_PLACEHOLDER_DIR,
	};
	sbx_journal *j = NULL;

	ck_assert_int_eq(mkdir(test_path_at(dir, "many"), 0755), 0);
	ck_assert_int_eq(mkdir(test_path_at(dir, "control"), 0755), 0);
	ck_assert_int_eq(sbx_journal_open(root, SBX_JOURNAL_WORKSPACE, &j), 0);
	for (int i = 0; i < 2000; i++) {
		char *record = NULL;
		ck_assert_int_eq(sbx_journal_make_placeholders(j, five, five_kinds, false, &record), 0);
		ck_assert_ptr_nonnull(record);
		sbx_journal_undo(root, SBX_JOURNAL_WORKSPACE, record);
		free(record);
	}
	sbx_journal_free(j);
	ck_assert_int_eq(notes(), 0);
	double many = fastest_watch_ms("many"), control = fastest_watch_ms("control");
	ck_assert_msg(many < 5 * control + 0.05, "a watch on the directory takes %.3f ms, on an "
	              "empty one %.3f ms", many, control);
}
END_TEST

START_TEST(journal_refuses_a_link)
{
	sbx_journal *j = NULL;

	ck_assert_int_eq(symlink("/tmp", test_path_at(dir, ".agentsbx/journal")), 0);
	ck_assert_int_lt(sbx_journal_open(root, SBX_JOURNAL_WORKSPACE, &j), 0);
	ck_assert_ptr_null(j);
	ck_assert_int_eq(sbx_journal_sweep(root, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_ENDED |
	                                   SBX_SWEEP_DETACHED), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("journal");
	TCase *tc = tcase_create("journal");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, owners_alive_and_ended);
	tcase_add_test(tc, notes_parse_strictly);
	tcase_add_test(tc, placeholders_made_and_undone);
	tcase_add_test(tc, sweep_takes_only_what_is_provably_ours);
	tcase_add_test(tc, sweep_leaves_detached_placeholders_to_their_lock_holder);
	tcase_add_test(tc, sweep_takes_socket_placeholders_and_no_user_socket);
	tcase_add_test(tc, sweep_checks_a_socket_by_type_and_birth);
	tcase_add_test(tc, undo_leaves_no_dentries_behind);
	tcase_add_test(tc, journal_refuses_a_link);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
