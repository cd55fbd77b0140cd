/* The Glob and Grep tools, run directly (no dispatch) over a temporary directory seen by the
 * model as "/workspace": every parameter, paging and caps, order, symlinks inside and out of
 * the root, escaping paths, binary, CRLF, non-UTF-8 and large files, .gitignore files. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "support.h"
#include "tools/grep_filter.h"
#include "tools/tool.h"
#include "util/json.h"

#define VIEW "/workspace"

static char *tmp;        /* holds root/ and outside/ */
static char root[PATH_MAX / 2], outside[PATH_MAX / 2];
static int root_fd = -1;
static sbx_tool_ctx ctx;
static sbx_tool_out out;
static int fds_at_start;

/* ---------------------------------------------------------------------------------------
 * Files
 * ------------------------------------------------------------------------------------- */

static void mkdirs_for(const char *base, const char *rel)
{
	char p[PATH_MAX];

	snprintf(p, sizeof p, "%s/%s", base, rel);
	for (char *s = p + strlen(base) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		if (mkdir(p, 0755) < 0)
			ck_assert_msg(errno == EEXIST, "mkdir %s: %s", p, strerror(errno));
		*s = '/';
	}
}

static void put_bytes(const char *base, const char *rel, const char *data, size_t len)
{
	char p[PATH_MAX];
	int fd;

	mkdirs_for(base, rel);
	snprintf(p, sizeof p, "%s/%s", base, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_msg(fd >= 0, "create %s: %s", p, strerror(errno));
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static void put(const char *rel, const char *text)
{
	put_bytes(root, rel, text, strlen(text));
}

static void mkdir_in_root(const char *rel)
{
	char p[PATH_MAX];

	mkdirs_for(root, rel);
	snprintf(p, sizeof p, "%s/%s", root, rel);
	ck_assert_int_eq(mkdir(p, 0755), 0);
}

static void link_in_root(const char *target, const char *rel)
{
	char p[PATH_MAX];

	mkdirs_for(root, rel);
	snprintf(p, sizeof p, "%s/%s", root, rel);
	ck_assert_msg(symlink(target, p) == 0, "symlink %s: %s", p, strerror(errno));
}

/* Sets rel's modification time to base + secs seconds. */
static void set_mtime(const char *rel, time_t secs)
{
	char p[PATH_MAX];
	struct timespec ts[2] = { { 1600000000 + secs, 0 }, { 1600000000 + secs, 0 } };

	snprintf(p, sizeof p, "%s/%s", root, rel);
	ck_assert_int_eq(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
}

/* ---------------------------------------------------------------------------------------
 * Running a tool
 * ------------------------------------------------------------------------------------- */

static void reset_out(void)
{
	sbx_buf_free(&out.text);
	sbx_buf_free(&out.meta);
	out.ok = true;
	sbx_buf_puts(&out.text, "");
	sbx_buf_puts(&out.meta, "");
}

/* Runs tool with the JSON arguments; returns the output text. */
static const char *run(const sbx_tool_def *tool, const char *json)
{
	sbx_json *args = NULL;
	char err[256];

	ck_assert_msg(sbx_json_parse(json, strlen(json), &args, err, sizeof err) == 0, "%s: %s",
	              json, err);
	reset_out();
	ck_assert_int_eq(tool->run(&ctx, args, &out), 0);
	sbx_json_free(args);
	ck_assert(!out.text.oom && !out.meta.oom);
	return out.text.data;
}

static const char *glob_ok(const char *json)
{
	const char *t = run(&sbx_tool_glob, json);

	ck_assert_msg(out.ok, "Glob %s failed: %s", json, t);
	return t;
}

static const char *grep_ok(const char *json)
{
	const char *t = run(&sbx_tool_grep, json);

	ck_assert_msg(out.ok, "Grep %s failed: %s", json, t);
	return t;
}

/* Runs tool and expects a tool error containing `want`. */
static void tool_fails(const sbx_tool_def *tool, const char *json, const char *want)
{
	const char *t = run(tool, json);

	ck_assert_msg(!out.ok, "%s %s should fail, said: %s", tool->name, json, t);
	ck_assert_msg(strstr(t, want), "%s %s: '%s' lacks '%s'", tool->name, json, t, want);
}

#define TEXT_IS(got, want) ck_assert_str_eq(got, want)
#define META_HAS(frag) \
	ck_assert_msg(strstr(out.meta.data, frag), "metadata '%s' lacks '%s'", out.meta.data, frag)

static void setup(void)
{
	tmp = test_mkdtemp();
	snprintf(root, sizeof root, "%s/root", tmp);
	snprintf(outside, sizeof outside, "%s/outside", tmp);
	ck_assert_int_eq(mkdir(root, 0755), 0);
	ck_assert_int_eq(mkdir(outside, 0755), 0);
	root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(root_fd, 0);
	ctx = (sbx_tool_ctx){ .ws = NULL, .session_id = "default", .session = NULL,
	                      .root_view = VIEW, .root_fd = root_fd };
	unsetenv("SBX_GREP_THREADS");
	fds_at_start = test_count_fds();
}

static void teardown(void)
{
	ck_assert_int_eq(test_count_fds(), fds_at_start);   /* nothing leaked */
	sbx_buf_free(&out.text);
	sbx_buf_free(&out.meta);
	close(root_fd);
	test_rm_rf(tmp);
	free(tmp);
}

/* ---------------------------------------------------------------------------------------
 * Glob
 * ------------------------------------------------------------------------------------- */

static void small_tree(void)
{
	put("main.c", "int main(void) { return 0; }\n");
	put("util.h", "#define UTIL 1\n");
	put("src/a.c", "a\n");
	put("src/b.h", "b\n");
	put("src/deep/x/y.c", "y\n");
	put("docs/readme.md", "# readme\n");
	put("test_one.py", "one\n");
	put("test_two.py", "two\n");
	put(".hidden.c", "hidden\n");
	/* The same mtime everywhere: ties go by path. */
	const char *all[] = { "main.c", "util.h", "src/a.c", "src/b.h", "src/deep/x/y.c",
		"docs/readme.md", "test_one.py", "test_two.py", ".hidden.c" };
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		set_mtime(all[i], 0);
}

START_TEST(glob_patterns)
{
	small_tree();
	TEXT_IS(glob_ok("{\"pattern\":\"**/*.c\"}"),
	        VIEW "/.hidden.c\n" VIEW "/main.c\n" VIEW "/src/a.c\n" VIEW "/src/deep/x/y.c");
	META_HAS("\"count\":4");
	META_HAS("\"total\":4");
	META_HAS("\"truncated\":false");
	/* No "**": the top level only. */
	TEXT_IS(glob_ok("{\"pattern\":\"*.c\"}"), VIEW "/.hidden.c\n" VIEW "/main.c");
	TEXT_IS(glob_ok("{\"pattern\":\"*.{c,h}\"}"),
	        VIEW "/.hidden.c\n" VIEW "/main.c\n" VIEW "/util.h");
	TEXT_IS(glob_ok("{\"pattern\":\"test_[a-o]*.py\"}"), VIEW "/test_one.py");
	TEXT_IS(glob_ok("{\"pattern\":\"src/**\"}"),
	        VIEW "/src/a.c\n" VIEW "/src/b.h\n" VIEW "/src/deep/x/y.c");
	TEXT_IS(glob_ok("{\"pattern\":\"**/x/?.c\"}"), VIEW "/src/deep/x/y.c");
	/* Directories are not listed. */
	TEXT_IS(glob_ok("{\"pattern\":\"src\"}"), "No files found matching pattern: src");
	TEXT_IS(glob_ok("{\"pattern\":\"**/*.rs\"}"), "No files found matching pattern: **/*.rs");
	META_HAS("\"total\":0");
}
END_TEST

START_TEST(glob_path_argument)
{
	small_tree();
	TEXT_IS(glob_ok("{\"pattern\":\"*.c\",\"path\":\"src\"}"), VIEW "/src/a.c");
	TEXT_IS(glob_ok("{\"pattern\":\"**/*.c\",\"path\":\"/workspace/src\"}"),
	        VIEW "/src/a.c\n" VIEW "/src/deep/x/y.c");
	TEXT_IS(glob_ok("{\"pattern\":\"*.c\",\"path\":\"/workspace\"}"),
	        VIEW "/.hidden.c\n" VIEW "/main.c");
	TEXT_IS(glob_ok("{\"pattern\":\"*.c\",\"path\":\"src/deep/../deep/x\"}"),
	        VIEW "/src/deep/x/y.c");
	/* Absolute patterns under the root view. */
	TEXT_IS(glob_ok("{\"pattern\":\"/workspace/src/*.c\"}"), VIEW "/src/a.c");
	TEXT_IS(glob_ok("{\"pattern\":\"/workspace/src/**/*.c\",\"path\":\"src\"}"),
	        VIEW "/src/a.c\n" VIEW "/src/deep/x/y.c");
	tool_fails(&sbx_tool_glob, "{\"pattern\":\"/workspace/docs/*\",\"path\":\"src\"}",
	           "not under path src");
	tool_fails(&sbx_tool_glob, "{\"pattern\":\"/etc/*\"}", "outside the workspace root");
	tool_fails(&sbx_tool_glob, "{\"pattern\":\"../*\"}", "'..'");
	tool_fails(&sbx_tool_glob, "{\"pattern\":\"src/../../x\"}", "'..'");
	/* Bad directories. */
	tool_fails(&sbx_tool_glob, "{\"pattern\":\"*\",\"path\":\"nope\"}",
	           "Directory not found: nope");
	tool_fails(&sbx_tool_glob, "{\"pattern\":\"*\",\"path\":\"main.c\"}",
	           "Directory not found: main.c");
	tool_fails(&sbx_tool_glob, "{\"pattern\":\"*\",\"path\":\"/etc\"}",
	           "outside the workspace root");
	tool_fails(&sbx_tool_glob, "{\"pattern\":\"*\",\"path\":\"../outside\"}", "Error:");
	tool_fails(&sbx_tool_glob, "{\"pattern\":\"*\",\"path\":\"/workspace/..\"}", "Error:");
	tool_fails(&sbx_tool_glob, "{\"pattern\":\"a[bc\"}", "unclosed '['");
	tool_fails(&sbx_tool_glob, "{\"pattern\":\"{a,b\"}", "unclosed '{'");
	tool_fails(&sbx_tool_glob, "{\"pattern\":\"\"}", "empty");
}
END_TEST

START_TEST(glob_newest_first)
{
	put("old.txt", "");
	put("new.txt", "");
	put("mid.txt", "");
	put("b_same.txt", "");
	put("a_same.txt", "");
	set_mtime("old.txt", 10);
	set_mtime("new.txt", 30);
	set_mtime("mid.txt", 20);
	set_mtime("b_same.txt", 25);
	set_mtime("a_same.txt", 25);
	TEXT_IS(glob_ok("{\"pattern\":\"*.txt\"}"),
	        VIEW "/new.txt\n" VIEW "/a_same.txt\n" VIEW "/b_same.txt\n" VIEW "/mid.txt\n"
	        VIEW "/old.txt");
}
END_TEST

START_TEST(glob_caps_at_100)
{
	char name[64];
	const char *t;

	for (int i = 0; i < 150; i++) {
		snprintf(name, sizeof name, "d%d/f%03d.txt", i % 3, i);
		put(name, "x");
		set_mtime(name, i);
	}
	t = glob_ok("{\"pattern\":\"**/*.txt\"}");
	ck_assert(strncmp(t, VIEW "/d2/f149.txt\n" VIEW "/d1/f148.txt\n", 30) == 0);
	ck_assert_ptr_nonnull(strstr(t, VIEW "/d2/f050.txt\n(Results are truncated: showing the "
	                                "first 100 of 150 matches. Use a more specific path or "
	                                "pattern.)"));
	ck_assert_ptr_null(strstr(t, "f049"));
	META_HAS("\"count\":100");
	META_HAS("\"total\":150");
	META_HAS("\"truncated\":true");
}
END_TEST

START_TEST(glob_symlinks_and_skipped_folders)
{
	put("real/file.c", "x");
	put_bytes(outside, "secret.c", "secret", 6);
	put_bytes(outside, "sub/deep.c", "deep", 4);
	link_in_root("real/file.c", "link_file.c");
	link_in_root("real", "link_dir");
	link_in_root(outside, "out_dir");
	link_in_root("../outside/secret.c", "out_file.c");
	link_in_root("/etc/passwd", "passwd.c");
	put(".git/config.c", "x");
	put(".hg/x.c", "x");
	put("sub/.git", "gitdir: elsewhere");   /* a .git file (worktrees) */
	put(".agentsbx/state.c", "x");
	put("sub/.agentsbx/kept.c", "x");        /* only the root's state folder is skipped */
	mkfifo(test_path_at(root, "fifo.c"), 0644);
	mkdir_in_root("empty.c");
	set_mtime("real/file.c", 0);
	set_mtime("sub/.agentsbx/kept.c", 0);
	TEXT_IS(glob_ok("{\"pattern\":\"**/*\"}"),
	        VIEW "/real/file.c\n" VIEW "/sub/.agentsbx/kept.c");
	tool_fails(&sbx_tool_glob, "{\"pattern\":\"*\",\"path\":\"link_dir\"}",
	           "Directory not found: link_dir");
	tool_fails(&sbx_tool_glob, "{\"pattern\":\"*\",\"path\":\"out_dir\"}", "out_dir");
	TEXT_IS(glob_ok("{\"pattern\":\"*\",\"path\":\".agentsbx\"}"), VIEW "/.agentsbx/state.c");
}
END_TEST

START_TEST(glob_real_root_view)
{
	char want[PATH_MAX];

	put("a.c", "x");
	ctx.root_view = root;
	snprintf(want, sizeof want, "%s/a.c", root);
	TEXT_IS(glob_ok("{\"pattern\":\"*.c\"}"), want);
	snprintf(want, sizeof want, "{\"pattern\":\"%s/*.c\"}", root);
	ck_assert_ptr_nonnull(strstr(glob_ok(want), "/a.c"));
}
END_TEST

START_TEST(tools_need_host_files)
{
	ctx.root_fd = -1;
	tool_fails(&sbx_tool_glob, "{\"pattern\":\"*\"}", "needs the workspace's files on this host");
	tool_fails(&sbx_tool_grep, "{\"pattern\":\"x\"}", "needs the workspace's files on this host");
}
END_TEST

/* ---------------------------------------------------------------------------------------
 * Grep
 * ------------------------------------------------------------------------------------- */

static void code_tree(void)
{
	put("a.c", "int alpha;\nint beta;\n/* TODO: gamma */\nint delta;\n");
	put("b.h", "#define BETA 2\n");
	put("src/c.py", "def beta():\n    return 'Beta'\n");
	put("src/d.js", "const x = 1;\n");
	put("notes.txt", "nothing here\n");
}

START_TEST(grep_files_with_matches)
{
	code_tree();
	TEXT_IS(grep_ok("{\"pattern\":\"beta\"}"), VIEW "/a.c\n" VIEW "/src/c.py");
	META_HAS("\"files\":2");
	META_HAS("\"truncated\":false");
	META_HAS("\"complete\":true");
	TEXT_IS(grep_ok("{\"pattern\":\"beta\",\"output_mode\":\"files_with_matches\"}"),
	        VIEW "/a.c\n" VIEW "/src/c.py");
	TEXT_IS(grep_ok("{\"pattern\":\"beta\",\"-i\":true}"),
	        VIEW "/a.c\n" VIEW "/b.h\n" VIEW "/src/c.py");
	TEXT_IS(grep_ok("{\"pattern\":\"zzz\"}"), "No matches found for pattern: zzz");
	META_HAS("\"files\":0");
	TEXT_IS(grep_ok("{\"pattern\":\"beta\",\"path\":\"src\"}"), VIEW "/src/c.py");
	TEXT_IS(grep_ok("{\"pattern\":\"beta\",\"path\":\"/workspace/src/\"}"), VIEW "/src/c.py");
	/* A file as the path. */
	TEXT_IS(grep_ok("{\"pattern\":\"beta\",\"path\":\"a.c\",\"output_mode\":\"content\"}"),
	        VIEW "/a.c:2:int beta;");
	/* A pattern starting with '-' is a pattern. */
	put("dash.txt", "x -v y\n");
	TEXT_IS(grep_ok("{\"pattern\":\"-v\"}"), VIEW "/dash.txt");
}
END_TEST

START_TEST(grep_content_and_count)
{
	code_tree();
	TEXT_IS(grep_ok("{\"pattern\":\"beta\",\"output_mode\":\"content\",\"-i\":true}"),
	        VIEW "/a.c:2:int beta;\n" VIEW "/b.h:1:#define BETA 2\n"
	        VIEW "/src/c.py:1:def beta():\n" VIEW "/src/c.py:2:    return 'Beta'");
	META_HAS("\"matches\":4");
	META_HAS("\"files\":3");
	TEXT_IS(grep_ok("{\"pattern\":\"int\",\"output_mode\":\"content\",\"-n\":false}"),
	        VIEW "/a.c:int alpha;\n" VIEW "/a.c:int beta;\n" VIEW "/a.c:int delta;");
	TEXT_IS(grep_ok("{\"pattern\":\"int|beta\",\"output_mode\":\"count\"}"),
	        VIEW "/a.c:3\n" VIEW "/src/c.py:1");
	META_HAS("\"matches\":4");
	/* -n only matters in content mode. */
	TEXT_IS(grep_ok("{\"pattern\":\"int\",\"output_mode\":\"count\",\"-n\":true}"),
	        VIEW "/a.c:3");
	/* Anchors work per line. */
	TEXT_IS(grep_ok("{\"pattern\":\"^int (a|d)\",\"output_mode\":\"content\"}"),
	        VIEW "/a.c:1:int alpha;\n" VIEW "/a.c:4:int delta;");
	TEXT_IS(grep_ok("{\"pattern\":\"a;$\",\"output_mode\":\"content\"}"),
	        VIEW "/a.c:1:int alpha;\n" VIEW "/a.c:2:int beta;\n" VIEW "/a.c:4:int delta;");
}
END_TEST

static void context_tree(void)
{
	put("ctx.txt", "l1\nl2 hit\nl3\nl4\nl5\nl6\nl7 hit\nl8\nl9 hit\nl10\n");
	put("ctx2.txt", "m1 hit\nm2\n");
}

START_TEST(grep_context)
{
	context_tree();
	TEXT_IS(grep_ok("{\"pattern\":\"hit\",\"output_mode\":\"content\",\"-A\":1}"),
	        VIEW "/ctx.txt:2:l2 hit\n" VIEW "/ctx.txt-3-l3\n--\n"
	        VIEW "/ctx.txt:7:l7 hit\n" VIEW "/ctx.txt-8-l8\n" VIEW "/ctx.txt:9:l9 hit\n"
	        VIEW "/ctx.txt-10-l10\n--\n"
	        VIEW "/ctx2.txt:1:m1 hit\n" VIEW "/ctx2.txt-2-m2");
	TEXT_IS(grep_ok("{\"pattern\":\"hit\",\"output_mode\":\"content\",\"-B\":2,"
	                "\"path\":\"ctx.txt\"}"),
	        VIEW "/ctx.txt-1-l1\n" VIEW "/ctx.txt:2:l2 hit\n--\n"
	        VIEW "/ctx.txt-5-l5\n" VIEW "/ctx.txt-6-l6\n" VIEW "/ctx.txt:7:l7 hit\n"
	        VIEW "/ctx.txt-8-l8\n" VIEW "/ctx.txt:9:l9 hit");
	/* -C both ways; groups that touch merge. */
	TEXT_IS(grep_ok("{\"pattern\":\"hit\",\"output_mode\":\"content\",\"-C\":2,"
	                "\"path\":\"ctx.txt\",\"-n\":false}"),
	        VIEW "/ctx.txt-l1\n" VIEW "/ctx.txt:l2 hit\n" VIEW "/ctx.txt-l3\n"
	        VIEW "/ctx.txt-l4\n" VIEW "/ctx.txt-l5\n" VIEW "/ctx.txt-l6\n"
	        VIEW "/ctx.txt:l7 hit\n" VIEW "/ctx.txt-l8\n" VIEW "/ctx.txt:l9 hit\n"
	        VIEW "/ctx.txt-l10");
	/* context wins over -C, which wins over -A/-B. */
	TEXT_IS(grep_ok("{\"pattern\":\"l2 \",\"output_mode\":\"content\",\"context\":1,"
	                "\"-C\":3,\"-A\":5,\"path\":\"ctx.txt\"}"),
	        VIEW "/ctx.txt-1-l1\n" VIEW "/ctx.txt:2:l2 hit\n" VIEW "/ctx.txt-3-l3");
	TEXT_IS(grep_ok("{\"pattern\":\"l2 \",\"output_mode\":\"content\",\"-C\":1,\"-A\":5,"
	                "\"path\":\"ctx.txt\"}"),
	        VIEW "/ctx.txt-1-l1\n" VIEW "/ctx.txt:2:l2 hit\n" VIEW "/ctx.txt-3-l3");
	/* Context is ignored outside content mode. */
	TEXT_IS(grep_ok("{\"pattern\":\"hit\",\"-C\":3}"), VIEW "/ctx.txt\n" VIEW "/ctx2.txt");
	/* At the ends of a file. */
	TEXT_IS(grep_ok("{\"pattern\":\"l1$|l10\",\"output_mode\":\"content\",\"-C\":5,"
	                "\"path\":\"ctx.txt\",\"head_limit\":0}"),
	        VIEW "/ctx.txt:1:l1\n" VIEW "/ctx.txt-2-l2 hit\n" VIEW "/ctx.txt-3-l3\n"
	        VIEW "/ctx.txt-4-l4\n" VIEW "/ctx.txt-5-l5\n" VIEW "/ctx.txt-6-l6\n"
	        VIEW "/ctx.txt-7-l7 hit\n" VIEW "/ctx.txt-8-l8\n" VIEW "/ctx.txt-9-l9 hit\n"
	        VIEW "/ctx.txt:10:l10");
	tool_fails(&sbx_tool_grep, "{\"pattern\":\"x\",\"-A\":-1}", "non-negative");
}
END_TEST

START_TEST(grep_pagination)
{
	char name[64];

	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof name, "f%03d.txt", i);
		put(name, "match\n");
	}
	const char *t = grep_ok("{\"pattern\":\"match\"}");
	ck_assert_ptr_nonnull(strstr(t, VIEW "/f249.txt\n\n[Showing results with pagination = "
	                                "limit: 250]"));
	ck_assert_ptr_null(strstr(t, "f250"));
	META_HAS("\"truncated\":true");
	META_HAS("\"complete\":false");
	TEXT_IS(grep_ok("{\"pattern\":\"match\",\"head_limit\":2}"),
	        VIEW "/f000.txt\n" VIEW "/f001.txt\n\n[Showing results with pagination = limit: 2]");
	TEXT_IS(grep_ok("{\"pattern\":\"match\",\"head_limit\":2,\"offset\":5}"),
	        VIEW "/f005.txt\n" VIEW "/f006.txt\n\n"
	        "[Showing results with pagination = limit: 2, offset: 5]");
	/* The last page: offset shown, no limit because nothing was cut. */
	TEXT_IS(grep_ok("{\"pattern\":\"match\",\"head_limit\":5,\"offset\":298}"),
	        VIEW "/f298.txt\n" VIEW "/f299.txt\n\n[Showing results with pagination = offset: 298]");
	META_HAS("\"truncated\":false");
	/* 0 = unlimited. */
	t = grep_ok("{\"pattern\":\"match\",\"head_limit\":0}");
	ck_assert_ptr_nonnull(strstr(t, VIEW "/f299.txt"));
	ck_assert_ptr_null(strstr(t, "[Showing"));
	META_HAS("\"files\":300");
	/* Content lines are paged too, exactly at the limit no suffix. */
	TEXT_IS(grep_ok("{\"pattern\":\"match\",\"output_mode\":\"content\",\"head_limit\":1,"
	                "\"path\":\"f007.txt\"}"), VIEW "/f007.txt:1:match");
	t = grep_ok("{\"pattern\":\"match\",\"offset\":400}");
	ck_assert_ptr_nonnull(strstr(t, "No results at offset 400"));
	tool_fails(&sbx_tool_grep, "{\"pattern\":\"x\",\"head_limit\":-1}",
	           "Error: head_limit must be non-negative.");
	tool_fails(&sbx_tool_grep, "{\"pattern\":\"x\",\"offset\":-3}",
	           "Error: offset must be non-negative.");
}
END_TEST

START_TEST(grep_glob_and_type)
{
	code_tree();
	put("src/e.ts", "beta\n");
	put("vendor/v.c", "int beta;\n");
	TEXT_IS(grep_ok("{\"pattern\":\"beta\",\"glob\":\"*.c\"}"),
	        VIEW "/a.c\n" VIEW "/vendor/v.c");
	TEXT_IS(grep_ok("{\"pattern\":\"beta\",\"glob\":\"*.{py,ts}\"}"),
	        VIEW "/src/c.py\n" VIEW "/src/e.ts");
	TEXT_IS(grep_ok("{\"pattern\":\"beta\",\"glob\":\"*.py,*.ts\"}"),
	        VIEW "/src/c.py\n" VIEW "/src/e.ts");
	TEXT_IS(grep_ok("{\"pattern\":\"beta\",\"glob\":\"*.py *.c\"}"),
	        VIEW "/a.c\n" VIEW "/src/c.py\n" VIEW "/vendor/v.c");
	TEXT_IS(grep_ok("{\"pattern\":\"beta\",\"glob\":\"!vendor\"}"),
	        VIEW "/a.c\n" VIEW "/src/c.py\n" VIEW "/src/e.ts");
	TEXT_IS(grep_ok("{\"pattern\":\"beta\",\"glob\":\"!*.py\"}"),
	        VIEW "/a.c\n" VIEW "/src/e.ts\n" VIEW "/vendor/v.c");
	TEXT_IS(grep_ok("{\"pattern\":\"beta\",\"glob\":\"src/**\"}"),
	        VIEW "/src/c.py\n" VIEW "/src/e.ts");
	TEXT_IS(grep_ok("{\"pattern\":\"beta\",\"glob\":\"*.c !vendor/**\"}"), VIEW "/a.c");
	/* The last glob that matches decides. */
	TEXT_IS(grep_ok("{\"pattern\":\"beta\",\"glob\":\"!*.c a.c\"}"), VIEW "/a.c");
	TEXT_IS(grep_ok("{\"pattern\":\"beta\",\"type\":\"py\"}"), VIEW "/src/c.py");
	TEXT_IS(grep_ok("{\"pattern\":\"beta\",\"type\":\"c\"}"), VIEW "/a.c\n" VIEW "/vendor/v.c");
	TEXT_IS(grep_ok("{\"pattern\":\"beta\",\"type\":\"typescript\"}"), VIEW "/src/e.ts");
	TEXT_IS(grep_ok("{\"pattern\":\"beta\",\"type\":\"c\",\"glob\":\"!vendor\"}"),
	        VIEW "/a.c");
	tool_fails(&sbx_tool_grep, "{\"pattern\":\"beta\",\"type\":\"cobol\"}",
	           "unknown file type 'cobol'. Known types: c, cmake, cpp");
	tool_fails(&sbx_tool_grep, "{\"pattern\":\"beta\",\"glob\":\"[x\"}", "unclosed '['");
}
END_TEST

START_TEST(grep_multiline)
{
	put("m.c", "struct s {\n  int a;\n  int field;\n};\nstruct t {\n};\n");
	TEXT_IS(grep_ok("{\"pattern\":\"struct s \\\\{.*?field\",\"output_mode\":\"content\"}"),
	        "No matches found for pattern: struct s \\{.*?field");
	TEXT_IS(grep_ok("{\"pattern\":\"struct s \\\\{.*?field\",\"output_mode\":\"content\","
	                "\"multiline\":true}"),
	        VIEW "/m.c:1:struct s {\n" VIEW "/m.c:2:  int a;\n" VIEW "/m.c:3:  int field;");
	TEXT_IS(grep_ok("{\"pattern\":\"\\\\{\\\\n\\\\}\",\"output_mode\":\"count\","
	                "\"multiline\":true}"), VIEW "/m.c:2");
	/* Without multiline a pattern that could cross lines still matches within one. */
	TEXT_IS(grep_ok("{\"pattern\":\"int\\\\s+\\\\w+;\\\\s*\",\"output_mode\":\"content\"}"),
	        VIEW "/m.c:2:  int a;\n" VIEW "/m.c:3:  int field;");
	TEXT_IS(grep_ok("{\"pattern\":\"a;\\\\s+int\",\"output_mode\":\"content\"}"),
	        "No matches found for pattern: a;\\s+int");
}
END_TEST

START_TEST(grep_binary_crlf_utf8)
{
	static const char bin[] = "match\0\x01\x02 binary";
	char big[10000];

	put_bytes(root, "bin.dat", bin, sizeof bin);
	memset(big, 'x', sizeof big);
	memcpy(big + 9000, "\0", 1);
	memcpy(big + 9500, "match", 5);
	put_bytes(root, "late_nul.txt", big, sizeof big);   /* NUL past 8 KiB: text */
	put("crlf.txt", "first match\r\nsecond\r\nmatch\r\n");
	put_bytes(root, "latin1.txt", "caf\xe9 match\n\xff\xfe\n", 14);
	TEXT_IS(grep_ok("{\"pattern\":\"match\"}"),
	        VIEW "/crlf.txt\n" VIEW "/late_nul.txt\n" VIEW "/latin1.txt");
	META_HAS("\"skipped_binary\":1");
	/* Named explicitly, a binary file is searched and reported as such. */
	TEXT_IS(grep_ok("{\"pattern\":\"match\",\"path\":\"bin.dat\",\"output_mode\":\"content\"}"),
	        VIEW "/bin.dat: binary file matches");
	TEXT_IS(grep_ok("{\"pattern\":\"match\",\"path\":\"bin.dat\"}"), VIEW "/bin.dat");
	/* CRLF: '$' before "\r\n", and no '\r' in the output. */
	TEXT_IS(grep_ok("{\"pattern\":\"match$\",\"output_mode\":\"content\",\"glob\":\"crlf*\"}"),
	        VIEW "/crlf.txt:1:first match\n" VIEW "/crlf.txt:3:match");
	TEXT_IS(grep_ok("{\"pattern\":\"^second$\",\"output_mode\":\"content\"}"),
	        VIEW "/crlf.txt:2:second");
	/* Invalid UTF-8 is searched; as in rg, its bytes match no pattern item (not even '.'). */
	TEXT_IS(grep_ok("{\"pattern\":\"match\",\"output_mode\":\"content\","
	                "\"path\":\"latin1.txt\"}"), VIEW "/latin1.txt:1:caf\xe9 match");
	TEXT_IS(grep_ok("{\"pattern\":\"caf. match\",\"path\":\"latin1.txt\"}"),
	        "No matches found for pattern: caf. match");
	TEXT_IS(grep_ok("{\"pattern\":\"^caf|match$\",\"output_mode\":\"count\","
	                "\"path\":\"latin1.txt\"}"), VIEW "/latin1.txt:1");
	/* UTF-8 patterns and caseless matching of non-ASCII letters. */
	put("u.txt", "ÉCOLE\n");
	TEXT_IS(grep_ok("{\"pattern\":\"école\",\"-i\":true,\"output_mode\":\"content\"}"),
	        VIEW "/u.txt:1:ÉCOLE");
}
END_TEST

START_TEST(grep_long_lines)
{
	char line[1200];

	memset(line, 'y', sizeof line);
	memcpy(line + 10, "needle", 6);
	memcpy(line + 900, "needle", 6);
	line[sizeof line - 2] = '\n';
	line[sizeof line - 1] = '\0';
	put("long.txt", line);
	put("ok.txt", "needle\n");
	TEXT_IS(grep_ok("{\"pattern\":\"needle\",\"output_mode\":\"content\"}"),
	        VIEW "/long.txt:1:[Omitted long line with 2 matches]\n" VIEW "/ok.txt:1:needle");
	char both[1300];
	snprintf(both, sizeof both, "needle\n%s", line);
	put("ctxlong.txt", both);
	TEXT_IS(grep_ok("{\"pattern\":\"^needle$\",\"output_mode\":\"content\",\"-A\":1,"
	                "\"path\":\"ctxlong.txt\"}"),
	        VIEW "/ctxlong.txt:1:needle\n" VIEW "/ctxlong.txt-2-[Omitted long context line]");
}
END_TEST

START_TEST(grep_large_files)
{
	const size_t size = 10u << 20;
	char *data = malloc(size);
	size_t lines = 0;
	int fd;

	/* 10 MB of short lines; matches near the start and at the very end. */
	for (size_t i = 0; i < size; i++) {
		data[i] = (i % 64 == 63) ? '\n' : 'a' + (char)(i % 26);
		lines += data[i] == '\n';
	}
	memcpy(data + 64 * 3, "NEEDLE", 6);
	memcpy(data + size - 7, "NEEDLE", 6);
	put_bytes(root, "big.txt", data, size);
	free(data);
	char want[64];
	const char *t = grep_ok("{\"pattern\":\"NEEDLE\",\"output_mode\":\"content\"}");
	ck_assert_msg(strncmp(t, VIEW "/big.txt:4:NEEDLE", 27) == 0, "got %.100s", t);
	snprintf(want, sizeof want, "\n" VIEW "/big.txt:%zu:", lines);
	ck_assert_msg(strstr(t, want), "no '%s' in %.200s", want, t);
	META_HAS("\"matches\":2");

	/* Over 64 MiB (sparse, cheap): skipped and counted. */
	fd = open(test_path_at(root, "huge.txt"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "NEEDLE\n", 7, 0), 7);
	ck_assert_int_eq(ftruncate(fd, (65 << 20)), 0);
	close(fd);
	grep_ok("{\"pattern\":\"NEEDLE\"}");
	META_HAS("\"skipped_large\":1");
	META_HAS("\"files\":1");
}
END_TEST

START_TEST(grep_output_cap)
{
	const size_t lines = 800000;
	char *data = malloc(lines * 2);

	for (size_t i = 0; i < lines; i++)
		memcpy(data + 2 * i, "x\n", 2);
	put_bytes(root, "many.txt", data, lines * 2);
	free(data);
	const char *t = grep_ok("{\"pattern\":\"x\",\"output_mode\":\"content\","
	                        "\"head_limit\":0}");
	ck_assert_ptr_nonnull(strstr(t, "\n\n(Output stopped at 16 MiB. Use head_limit and offset"));
	ck_assert_ptr_null(strstr(t, "[Showing"));
	ck_assert_uint_lt(strlen(t), (16u << 20) + 200);
	META_HAS("\"truncated\":true");
}
END_TEST

START_TEST(walk_depth_is_bounded)
{
	char rel[PATH_MAX] = "";
	size_t len = 0;

	for (int i = 0; i < 300; i++) {
		memcpy(rel + len, "d/", 2);
		len += 2;
		if (i == 249 || i == 299) {
			memcpy(rel + len, "f.txt", 6);
			put(rel, "deep\n");
			rel[len] = '\0';
		}
	}
	/* 250 directories down is walked, 300 is not, and the results say so. */
	const char *t = grep_ok("{\"pattern\":\"deep\",\"output_mode\":\"count\"}");
	ck_assert_ptr_nonnull(strstr(t, "/d/f.txt:1\n\n(1 directory(ies) nested deeper than 256 "
	                                "levels, or with paths over 4095 bytes, were not searched.)"));
	ck_assert_ptr_eq(strchr(t, '\n'), strstr(t, "\n\n("));   /* one result line */
	META_HAS("\"complete\":false");
	META_HAS("\"too_deep_dirs\":1");
	t = glob_ok("{\"pattern\":\"**/f.txt\"}");
	ck_assert_ptr_nonnull(strstr(t, "\n\n(1 directory(ies) nested deeper than 256 levels, or "
	                                "with paths over 4095 bytes, were not searched.)"));
	ck_assert_uint_eq((size_t)(strchr(t, '\n') - t), strlen(VIEW) + 250 * 2 + 6);
	META_HAS("\"complete\":false");
}
END_TEST

START_TEST(grep_gitignore)
{
	put(".gitignore", "*.log\nbuild/\n/top.txt\n!keep.log\n");
	put("a.log", "needle\n");
	put("keep.log", "needle\n");
	put("top.txt", "needle\n");
	put("sub/top.txt", "needle\n");
	put("build/out.txt", "needle\n");
	put("sub/build/out.txt", "needle\n");
	put("sub/.gitignore", "local.txt\n!a2.log\n");
	put("sub/local.txt", "needle\n");
	put("sub/a2.log", "needle\n");
	put("local.txt", "needle\n");
	put(".git/HEAD.txt", "needle\n");
	put(".hidden/x.txt", "needle\n");   /* hidden files are searched (rg --hidden) */
	TEXT_IS(grep_ok("{\"pattern\":\"needle\"}"),
	        VIEW "/.hidden/x.txt\n" VIEW "/keep.log\n" VIEW "/local.txt\n" VIEW "/sub/a2.log\n"
	        VIEW "/sub/top.txt");
	/* The root's rules apply when searching below it; a named directory is searched. */
	TEXT_IS(grep_ok("{\"pattern\":\"needle\",\"path\":\"sub\"}"),
	        VIEW "/sub/a2.log\n" VIEW "/sub/top.txt");
	TEXT_IS(grep_ok("{\"pattern\":\"needle\",\"path\":\"build\"}"), VIEW "/build/out.txt");
	TEXT_IS(grep_ok("{\"pattern\":\"needle\",\"path\":\"a.log\"}"), VIEW "/a.log");
	/* A positive glob overrides .gitignore for files. */
	TEXT_IS(grep_ok("{\"pattern\":\"needle\",\"glob\":\"*.log\"}"),
	        VIEW "/a.log\n" VIEW "/keep.log\n" VIEW "/sub/a2.log");
}
END_TEST

START_TEST(grep_symlinks_and_escapes)
{
	put_bytes(outside, "secret.txt", "needle\n", 7);
	put_bytes(outside, "dir/inner.txt", "needle\n", 7);
	put("real/file.txt", "needle\n");
	link_in_root("real/file.txt", "link_file.txt");
	link_in_root("real", "link_dir");
	link_in_root("../outside/secret.txt", "out_file.txt");
	link_in_root(outside, "out_dir");
	link_in_root("/etc", "etc");
	TEXT_IS(grep_ok("{\"pattern\":\"needle\"}"), VIEW "/real/file.txt");
	TEXT_IS(grep_ok("{\"pattern\":\"root\",\"path\":\"real\"}"),
	        "No matches found for pattern: root");
	tool_fails(&sbx_tool_grep, "{\"pattern\":\"needle\",\"path\":\"out_file.txt\"}",
	           "Error:");
	tool_fails(&sbx_tool_grep, "{\"pattern\":\"needle\",\"path\":\"link_file.txt\"}",
	           "symbolic link");
	tool_fails(&sbx_tool_grep, "{\"pattern\":\"needle\",\"path\":\"out_dir\"}", "Error:");
	tool_fails(&sbx_tool_grep, "{\"pattern\":\"needle\",\"path\":\"out_dir/inner.txt\"}",
	           "Error:");
	tool_fails(&sbx_tool_grep, "{\"pattern\":\"needle\",\"path\":\"etc/passwd\"}", "Error:");
	tool_fails(&sbx_tool_grep, "{\"pattern\":\"needle\",\"path\":\"..\"}", "Error:");
	tool_fails(&sbx_tool_grep, "{\"pattern\":\"needle\",\"path\":\"../outside\"}", "Error:");
	tool_fails(&sbx_tool_grep, "{\"pattern\":\"needle\",\"path\":\"/etc\"}",
	           "outside the workspace root");
	tool_fails(&sbx_tool_grep, "{\"pattern\":\"needle\",\"path\":\"missing\"}",
	           "Error: Path does not exist: missing");
}
END_TEST

START_TEST(grep_bad_patterns)
{
	put("a.txt", "x\n");
	tool_fails(&sbx_tool_grep, "{\"pattern\":\"(unclosed\"}", "invalid regex: missing closing "
	           "parenthesis at offset 9");
	tool_fails(&sbx_tool_grep, "{\"pattern\":\"a{2,1}\"}", "invalid regex");
	tool_fails(&sbx_tool_grep, "{\"pattern\":\"\"}", "empty");
	tool_fails(&sbx_tool_grep, "{\"pattern\":\"x\",\"output_mode\":\"lines\"}", "output_mode");
	/* Catastrophic backtracking is cut off per file, not the process. */
	char evil[5000];
	memset(evil, 'a', 4000);
	strcpy(evil + 4000, "!\n");
	put("evil.txt", evil);
	grep_ok("{\"pattern\":\"(a+)+$\",\"path\":\"evil.txt\"}");
}
END_TEST

START_TEST(grep_threads_agree)
{
	char name[64], text[128];
	sbx_buf one = { 0 };

	for (int i = 0; i < 400; i++) {
		snprintf(name, sizeof name, "d%d/e%d/f%03d.txt", i % 7, i % 3, i);
		snprintf(text, sizeof text, "line\n%s\nline\n", i % 5 ? "miss" : "hit here");
		put(name, text);
	}
	setenv("SBX_GREP_THREADS", "1", 1);
	sbx_buf_puts(&one, grep_ok("{\"pattern\":\"hit\",\"output_mode\":\"content\",\"-C\":1,"
	                           "\"head_limit\":0}"));
	setenv("SBX_GREP_THREADS", "4", 1);
	TEXT_IS(grep_ok("{\"pattern\":\"hit\",\"output_mode\":\"content\",\"-C\":1,"
	                "\"head_limit\":0}"), one.data);
	META_HAS("\"files\":80");
	/* An early stop leaves no fd or thread behind (teardown counts the fds). */
	grep_ok("{\"pattern\":\"line\",\"head_limit\":3}");
	META_HAS("\"complete\":false");
	sbx_buf_free(&one);
}
END_TEST

/* ---------------------------------------------------------------------------------------
 * The definitions
 * ------------------------------------------------------------------------------------- */

static void check_schema(const sbx_tool_def *t)
{
	sbx_json *s = NULL;
	char err[256];
	const sbx_json *props, *req, *extra;

	ck_assert_msg(sbx_json_parse(t->input_schema, strlen(t->input_schema), &s, err,
	                             sizeof err) == 0, "%s: %s", t->name, err);
	ck_assert_str_eq(sbx_json_get(s, "type")->str, "object");
	props = sbx_json_get(s, "properties");
	req = sbx_json_get(s, "required");
	extra = sbx_json_get(s, "additionalProperties");
	ck_assert(props && props->type == SBX_JSON_OBJECT);
	ck_assert(req && req->type == SBX_JSON_ARRAY && req->n == 1);
	ck_assert_str_eq(req->items[0]->str, "pattern");
	ck_assert(extra && extra->type == SBX_JSON_BOOL && !extra->b);
	for (size_t i = 0; i < props->n; i++) {
		const sbx_json *d = sbx_json_get(props->items[i], "description");
		ck_assert_msg(d && d->type == SBX_JSON_STRING && d->len > 5, "%s.%s lacks a "
		              "description", t->name, props->keys[i]);
		ck_assert(sbx_json_get(props->items[i], "type"));
	}
	ck_assert_str_eq(t->cls, "read");
	ck_assert(strlen(t->description) > 200);
	sbx_json_free(s);
}

START_TEST(definitions)
{
	static const char *const grep_params[] = { "pattern", "path", "glob", "output_mode", "-B",
		"-A", "-C", "context", "-n", "-i", "type", "head_limit",
		"offset", "multiline" };
	char *names, *save = NULL;
	sbx_json *s = NULL;
	char err[128];

	check_schema(&sbx_tool_glob);
	check_schema(&sbx_tool_grep);
	ck_assert_str_eq(sbx_tool_glob.name, "Glob");
	ck_assert_str_eq(sbx_tool_grep.name, "Grep");
	ck_assert_int_eq(sbx_json_parse(sbx_tool_grep.input_schema,
	                                strlen(sbx_tool_grep.input_schema), &s, err, sizeof err), 0);
	const sbx_json *props = sbx_json_get(s, "properties");
	ck_assert_uint_eq(props->n, sizeof grep_params / sizeof *grep_params);
	for (size_t i = 0; i < props->n; i++)
		ck_assert_msg(sbx_json_get(props, grep_params[i]), "no %s", grep_params[i]);
	/* The type description lists exactly the table's names. */
	const char *desc = sbx_json_get(sbx_json_get(props, "type"), "description")->str;
	names = strdup(sbx_grep_type_names());
	for (char *n = strtok_r(names, ", ", &save); n; n = strtok_r(NULL, ", ", &save)) {
		char needle[64];
		snprintf(needle, sizeof needle, " %s,", n);
		ck_assert_msg(strstr(desc, needle) || (snprintf(needle, sizeof needle, " %s.", n),
		                                       strstr(desc, needle)),
		              "type %s is not in the schema's description", n);
	}
	free(names);
	sbx_json_free(s);
}
END_TEST

static Suite *search_suite(void)
{
	Suite *s = suite_create("search");
	TCase *tc = tcase_create("glob");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, glob_patterns);
	tcase_add_test(tc, glob_path_argument);
	tcase_add_test(tc, glob_newest_first);
	tcase_add_test(tc, glob_caps_at_100);
	tcase_add_test(tc, glob_symlinks_and_skipped_folders);
	tcase_add_test(tc, glob_real_root_view);
	tcase_add_test(tc, tools_need_host_files);
	suite_add_tcase(s, tc);

	tc = tcase_create("grep");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, grep_files_with_matches);
	tcase_add_test(tc, grep_content_and_count);
	tcase_add_test(tc, grep_context);
	tcase_add_test(tc, grep_pagination);
	tcase_add_test(tc, grep_glob_and_type);
	tcase_add_test(tc, grep_multiline);
	tcase_add_test(tc, grep_binary_crlf_utf8);
	tcase_add_test(tc, grep_long_lines);
	tcase_add_test(tc, grep_large_files);
	tcase_add_test(tc, grep_gitignore);
	tcase_add_test(tc, grep_output_cap);
	tcase_add_test(tc, walk_depth_is_bounded);
	tcase_add_test(tc, grep_symlinks_and_escapes);
	tcase_add_test(tc, grep_bad_patterns);
	tcase_add_test(tc, grep_threads_agree);
	tcase_add_test(tc, definitions);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(search_suite());
}
