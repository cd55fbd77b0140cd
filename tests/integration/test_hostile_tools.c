/* The agent tools against hostile input and a hostile workspace, through the public API, on
 * the backend SBX_TEST_BACKEND names (registered for local, ns and bwrap; CI runs it as root
 * and as an ordinary user, plain and under ASan). The model's arguments are untrusted, and so
 * is everything in the workspace: a command there can write catastrophic files, swap a file
 * for a sparse giant while a tool reads it, name files with newlines, and fill the disk. Each
 * test attacks the way issue 15 describes and checks that the host survives, answers in
 * bounded time and memory (measured in a forked child that makes the call), and says what
 * happened.
 *
 * Items of the issue covered: 1 (null and wrong arguments), 3 (Grep's deadline inside a file,
 * the page), 4 (unbounded diffs), 5 (caps on a stale stat), 9 (Grep and Glob under fd
 * pressure), 12 (names printed raw), 13 (Read, Write and Edit on a full disk). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "backend_support.h"
#include "support.h"

static char *workdir;
static sbx_workspace *ws;

static void setup(void)
{
	bt_open_case_workspace(&workdir, &ws);
}

static void teardown(void)
{
	bt_close_case_workspace(&ws);
}

/* ---- results ------------------------------------------------------------------------------ */

static char *call(const char *tool, const char *args)
{
	char *res = NULL;
	int r = sbx_tool_call(ws, tool, args, &res);

	ck_assert_msg(r == 0, "%s %.200s: %d %s", tool, args, r, sbx_last_error());
	ck_assert_ptr_nonnull(res);
	return res;
}

/* The output of a result, unescaped, in rotating static storage. */
static const char *output_of(const char *res)
{
	static char *kept[4];
	static int next;
	char *o = bt_string_member(res, "output");

	free(kept[next % 4]);
	kept[next++ % 4] = o;
	return o;
}

#define HAS(res, frag) ck_assert_msg(strstr(res, frag), "%.400s\nlacks: %s", res, frag)
#define LACKS(res, frag) ck_assert_msg(!strstr(res, frag), "%.400s\nhas: %s", res, frag)

/* Runs cmd inside, which must succeed. */
static void inside(const char *cmd)
{
	free(bt_shell_out(ws, cmd));
}

/* ---- calls measured in a child ------------------------------------------------------------
 * The call is made in a forked child, so that its peak memory is its own: the child reports
 * how far its resident memory grew (ru_maxrss after the call less VmRSS before) and sends the
 * result back through a pipe. fd_room >= 0 first lowers the child's RLIMIT_NOFILE so that
 * exactly that many more descriptors can be opened. */

/* When set (as root), the child making the call becomes this user first. */
static uid_t child_uid = (uid_t)-1;

struct measured {
	char *res;        /* the result JSON, or the library error as "ERROR <code> <message>" */
	long grew_kb;
	int64_t ms;
};

static long rss_kb(void)
{
	char line[256];
	long kb = 0;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

/* Lowers RLIMIT_NOFILE so that exactly `room` more descriptors fit (the lowest free numbers
 * are the ones handed out). */
static void leave_fd_room(int room)
{
	struct rlimit rl;
	int fd = 0;

	for (int free_seen = 0;; fd++)
		if (fcntl(fd, F_GETFD) < 0 && free_seen++ == room)
			break;
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = (rlim_t)fd;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		_exit(3);
}

static bool write_all_fd(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w <= 0)
			return false;
		s += w;
		n -= (size_t)w;
	}
	return true;
}

static struct measured call_in_child(const char *tool, const char *args, int fd_room)
{
	struct measured m = { 0 };
	int p[2];
	int64_t t0 = bt_now_ms();
	pid_t pid;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rusage ru;
		char *res = NULL, head[64];
		long before = rss_kb();
		int r;

		close(p[0]);
		if (child_uid != (uid_t)-1 && (setgroups(0, NULL) < 0 ||
		                               setresgid(child_uid, child_uid, child_uid) < 0 ||
		                               setresuid(child_uid, child_uid, child_uid) < 0))
			_exit(4);
		if (fd_room >= 0)
			leave_fd_room(fd_room);
		r = sbx_tool_call(ws, tool, args, &res);
		getrusage(RUSAGE_SELF, &ru);
		snprintf(head, sizeof head, "%ld\n", ru.ru_maxrss - before);
		if (!write_all_fd(p[1], head, strlen(head)))
			_exit(2);
		if (r < 0) {
			char err[1024];
			snprintf(err, sizeof err, "ERROR %d %s", r, sbx_last_error());
			_exit(write_all_fd(p[1], err, strlen(err)) ? 0 : 2);
		}
		_exit(write_all_fd(p[1], res, strlen(res)) ? 0 : 2);
	}
	close(p[1]);
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	ssize_t n;
	ck_assert_ptr_nonnull(buf);
	while ((n = read(p[0], buf + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (cap - len < 2) {
			buf = realloc(buf, cap *= 2);
			ck_assert_ptr_nonnull(buf);
		}
	}
	buf[len] = '\0';
	close(p[0]);
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	              "the child making the %s call died (status 0x%x): the host did not survive",
	              tool, status);
	m.ms = bt_now_ms() - t0;
	char *nl = strchr(buf, '\n');
	ck_assert_ptr_nonnull(nl);
	m.grew_kb = strtol(buf, NULL, 10);
	m.res = strdup(nl + 1);
	free(buf);
	ck_assert_msg(strncmp(m.res, "ERROR", 5) != 0, "%s failed as a library call: %s", tool,
	              m.res);
	return m;
}

/* ============================================================================================
 * Item 1: every field of every tool, sent as null, the wrong type, NUL bytes, bad UTF-8,
 * huge numbers
 * ========================================================================================= */

struct field {
	const char *tool, *name;
	char type;          /* 's'tring, 'i'nteger, 'b'oolean */
	bool required;
	const char *good;   /* a valid value (JSON) */
};

static const struct field fields[] = {
	{ "Bash", "command", 's', true, "\"true\"" },
	{ "Bash", "timeout", 'i', false, "1000" },
	{ "Bash", "description", 's', false, "\"d\"" },
	{ "Read", "file_path", 's', true, "\"f.txt\"" },
	{ "Read", "offset", 'i', false, "1" },
	{ "Read", "limit", 'i', false, "10" },
	{ "Write", "file_path", 's', true, "\"w.txt\"" },
	{ "Write", "content", 's', true, "\"x\"" },
	{ "Edit", "file_path", 's', true, "\"f.txt\"" },
	{ "Edit", "old_string", 's', true, "\"one\"" },
	{ "Edit", "new_string", 's', true, "\"two\"" },
	{ "Edit", "replace_all", 'b', false, "false" },
	{ "Glob", "pattern", 's', true, "\"*\"" },
	{ "Glob", "path", 's', false, "\".\"" },
	{ "Grep", "pattern", 's', true, "\"one\"" },
	{ "Grep", "path", 's', false, "\".\"" },
	{ "Grep", "glob", 's', false, "\"*.txt\"" },
	{ "Grep", "output_mode", 's', false, "\"content\"" },
	{ "Grep", "-B", 'i', false, "1" },
	{ "Grep", "-A", 'i', false, "1" },
	{ "Grep", "-C", 'i', false, "1" },
	{ "Grep", "context", 'i', false, "1" },
	{ "Grep", "-n", 'b', false, "true" },
	{ "Grep", "-i", 'b', false, "true" },
	{ "Grep", "type", 's', false, "\"txt\"" },
	{ "Grep", "head_limit", 'i', false, "5" },
	{ "Grep", "offset", 'i', false, "0" },
	{ "Grep", "multiline", 'b', false, "false" },
	{ "Bash", "run_in_background", 'b', false, "false" },
	{ "BashOutput", "bash_id", 's', true, "\"bash_1\"" },
	{ "BashOutput", "filter", 's', false, "\"x\"" },
	{ "KillShell", "shell_id", 's', true, "\"bash_1\"" },
	{ "Skill", "skill", 's', true, "\"demo\"" },
};

static const char *const tool_names[] = { "Bash", "Read", "Write", "Edit", "Glob", "Grep",
                                          "BashOutput", "KillShell", "Skill" };

/* The arguments of tool with the required fields valid and `name` set to value (NULL: left
 * out). */
static char *args_with(const char *tool, const char *name, const char *value)
{
	char *s = strdup("{"), *t;

	for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
		const struct field *f = &fields[i];
		if (strcmp(f->tool, tool) || !strcmp(f->name, name) || !f->required)
			continue;
		ck_assert_int_ge(asprintf(&t, "%s%s\"%s\":%s", s, s[1] ? "," : "", f->name, f->good), 0);
		free(s);
		s = t;
	}
	if (value) {
		ck_assert_int_ge(asprintf(&t, "%s%s\"%s\":%s", s, s[1] ? "," : "", name, value), 0);
		free(s);
		s = t;
	}
	ck_assert_int_ge(asprintf(&t, "%s}", s), 0);
	free(s);
	return t;
}

/* The call must come back (ok false) and name the field. */
static void refused(const char *tool, const char *name, const char *value, const char *why)
{
	char *args = args_with(tool, name, value), *res = call(tool, args);
	char quoted[96];

	ck_assert_msg(!bt_tool_ok(res), "%s %s: accepted: %s", tool, args, res);
	snprintf(quoted, sizeof quoted, "\"%s\"", name);
	if (why) {
		HAS(output_of(res), quoted);
		HAS(output_of(res), why);
	}
	free(res);
	free(args);
}

/* The call must come back; whether it succeeds depends on the value. */
static void survives(const char *tool, const char *name, const char *value)
{
	char *args = args_with(tool, name, value);

	free(call(tool, args));
	free(args);
}

static void add_demo_skill(void)
{
	char *dir = bt_mkdtemp();

	test_put_file(dir, "SKILL.md", "---\nname: demo\ndescription: a demo\n---\nbody\n", 0644);
	ck_assert_msg(sbx_skill_add(ws, dir, NULL) == 0, "%s", sbx_last_error());
}

/* The table must name every property each schema has: a new field gets tested too. */
static void table_covers_the_schemas(void)
{
	char *json = NULL;

	ck_assert_int_eq(sbx_tools_json(ws, &json), 0);
	for (size_t t = 0; t < sizeof tool_names / sizeof *tool_names; t++) {
		const char *start = strstr(json, bt_tmp("{\"name\":\"%s\"", tool_names[t]));
		const char *end;
		size_t props = 0, listed = 0;

		ck_assert_msg(start, "%s is not listed", tool_names[t]);
		start = strstr(start, "\"properties\":{");
		end = strstr(start, "\"required\"");
		for (const char *p = start; (p = strstr(p, ":{\"type\":\"")) && p < end; p++)
			props++;
		for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
			listed += !strcmp(fields[i].tool, tool_names[t]);
		ck_assert_msg(props == listed, "%s has %zu properties, the table %zu", tool_names[t],
		              props, listed);
	}
	sbx_free(json);
}

START_TEST(test_every_field_refuses_bad_values)
{
	bt_put(ws, "f.txt", "one\n", 0);
	add_demo_skill();
	table_covers_the_schemas();
	for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
		const struct field *f = &fields[i];
		const char *tool = f->tool, *name = f->name;

		/* null: a required field is missing; an optional one is left out. */
		if (f->required) {
			refused(tool, name, "null", "is required and must not be null");
			refused(tool, name, NULL, "is required");
		} else {
			survives(tool, name, "null");
		}
		/* The wrong type, any JSON value of it. */
		const char *want = f->type == 's' ? "must be a string" :
		                   f->type == 'i' ? "must be an integer" : "must be a boolean";
		const char *others[] = { f->type == 's' ? "12345" : "\"7\"", "[]", "{}",
		                         f->type == 'b' ? "1" : "true", "[null]", "{\"a\":null}" };
		for (size_t k = 0; k < sizeof others / sizeof *others; k++)
			refused(tool, name, others[k], want);
		if (f->type == 's') {
			refused(tool, name, "\"a\\u0000b\"", "must not contain NUL bytes");
			/* Bytes that are not UTF-8, raw and as a lone surrogate: refused by the
			 * parser or the check, without a crash. */
			refused(tool, name, "\"\xff\xfe\"", NULL);
			refused(tool, name, "\"\\ud800x\"", NULL);
			refused(tool, name, "\"\xc0\xaf\"", NULL);
		}
		if (f->type == 'i') {
			refused(tool, name, "1.5", want);
			refused(tool, name, "1e999", want);
			refused(tool, name, "-1e999", want);
			refused(tool, name, "99999999999999999999", want);
			/* The extremes of int64: a range check or the tool itself answers. */
			survives(tool, name, "9223372036854775807");
			survives(tool, name, "-9223372036854775808");
			survives(tool, name, "0");
		}
	}
}
END_TEST

START_TEST(test_whole_arguments_that_are_not_objects)
{
	const char *bad[] = { "null", "[]", "\"Write\"", "5", "true", "{", "{\"file_path\":}",
	                      "{\"content\":null,\"content\":\"x\"}", "NaN",
	                      "{\"file_path\":\"a\",\"content\":\"x\",\"x\\u0000\":1}" };

	for (size_t t = 0; t < sizeof tool_names / sizeof *tool_names; t++)
		for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
			char *res = call(tool_names[t], bad[i]);
			ck_assert_msg(!bt_tool_ok(res), "%s %s accepted: %s", tool_names[t], bad[i], res);
			free(res);
		}
	/* Nesting deeper than the parser takes, inside a field. */
	char deep[4096] = "{\"file_path\":\"a\",\"content\":";
	size_t n = strlen(deep);
	for (int i = 0; i < 1000; i++)
		deep[n++] = '[';
	deep[n] = '\0';
	free(call("Write", deep));
}
END_TEST

/* Runs the CLI's tool command on dir; returns its exit status. */
static int cli_tool(const char *dir, const char *tool, const char *args)
{
	const char *root = getenv("SBX_TEST_BUILD_ROOT");
	char *cmd;
	int status;

	ck_assert_ptr_nonnull(root);
	ck_assert_int_ge(asprintf(&cmd, "'%s/agentsbx' tool --backend %s --workdir '%s' %s '%s' "
	                          ">/dev/null", root, bt_backend(), dir, tool, args), 0);
	status = system(cmd);
	free(cmd);
	return status;
}

#define CLI_EXITS(dir, tool, args, code) do { \
	int st_ = cli_tool(dir, tool, args); \
	ck_assert_msg(WIFEXITED(st_) && WEXITSTATUS(st_) == (code), "%s %s: status 0x%x " \
	              "(1 is a tool error; 139 was the crash)", tool, args, st_); \
} while (0)

/* The CLI makes the same calls: it used to die of SIGSEGV (exit 139). */
START_TEST(test_cli_survives_null_strings)
{
	char *dir = bt_mkdtemp();

	CLI_EXITS(dir, "Write", "{\"file_path\":\"a\",\"content\":null}", 1);
	ck_assert(!test_exists(test_path_at(dir, "a")));
	CLI_EXITS(dir, "Write", "{\"file_path\":\"a\",\"content\":\"x\"}", 0);
	CLI_EXITS(dir, "Read", "{\"file_path\":\"a\"}", 0);
	CLI_EXITS(dir, "Edit", "{\"file_path\":\"a\",\"old_string\":\"x\",\"new_string\":null}", 1);
	CLI_EXITS(dir, "Edit", "{\"file_path\":\"a\",\"old_string\":null,\"new_string\":\"y\"}", 1);
	ck_assert_str_eq(test_slurp(test_path_at(dir, "a")), "x");
}
END_TEST

/* ============================================================================================
 * Item 3: Grep's deadline inside one file, and the page
 * ========================================================================================= */

/* 64 MiB of lines of 18 a's and a '!': (a+)+$ costs about 2^18 steps at each position, below
 * PCRE2's per-position match limit, so only a bound on the whole file stops it (it ran 67 s
 * on a 528 KB file; this one would take hours). */
START_TEST(test_grep_catastrophic_pattern_is_cut_within_the_deadline)
{
	static const char *const modes[] = { "content", "count", "files_with_matches" };

	inside("yes 'aaaaaaaaaaaaaaaaaa!' | head -c 67108864 > evil.txt");
	for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
		char *args = bt_fmt("{\"pattern\":\"(a+)+$\",\"output_mode\":\"%s\"}", modes[i]);
		struct measured m = call_in_child("Grep", args, -1);

		/* The tool's deadline is 30 s; its budget per file ends this one far sooner. */
		ck_assert_msg(m.ms < 25000, "%s: %lld ms", modes[i], (long long)m.ms);
		ck_assert_msg(bt_tool_ok(m.res), "%s", m.res);
		HAS(m.res, "\"complete\":false");
		HAS(m.res, "\"cut_short\":1");
		HAS(m.res, "\"cut_files\":[{\"file\":\"");
		HAS(m.res, "/evil.txt\",\"line\":");
		HAS(output_of(m.res), "/evil.txt stopped at line ");
		HAS(output_of(m.res), "the pattern used up the time one file may take");
		/* The file's 64 MiB, and little besides. */
		ck_assert_msg(m.grew_kb < 160 * 1024, "%s: grew %ld KiB", modes[i], m.grew_kb);
		free(m.res);
		free(args);
	}
}
END_TEST

/* The deadline holds across files too, and a steeper pattern is cut by the engine's own
 * limit: each says so. */
START_TEST(test_grep_engine_limit_is_reported)
{
	struct measured m;

	inside("yes 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!' | head -c 1000000 > steep.txt");
	m = call_in_child("Grep", "{\"pattern\":\"(a+)+$\",\"path\":\"steep.txt\"}", -1);
	ck_assert_msg(bt_tool_ok(m.res), "%s", m.res);
	HAS(m.res, "\"complete\":false");
	HAS(output_of(m.res), "steep.txt stopped at line 1: the pattern needs too much "
	                      "backtracking");
	ck_assert_msg(m.ms < 25000, "%lld ms", (long long)m.ms);
	free(m.res);
}
END_TEST

/* A file where every line matches: the page (head_limit) bounds what is kept, and the search
 * stops there instead of printing 7 million lines nobody sees. */
START_TEST(test_grep_stops_when_the_page_is_full)
{
	struct measured m;
	const char *out;

	inside("yes 'match me' | head -c 67108864 > all.txt");
	m = call_in_child("Grep", "{\"pattern\":\"match\",\"output_mode\":\"content\","
	                  "\"head_limit\":5}", -1);
	/* The file is read (64 MiB); its output is a page, not gigabytes. */
	ck_assert_msg(m.grew_kb < 120 * 1024, "grew %ld KiB", m.grew_kb);
	ck_assert_msg(bt_tool_ok(m.res), "%s", m.res);
	out = output_of(m.res);
	HAS(out, "/all.txt:5:match me\n\n[Showing results with pagination = limit: 5]");
	LACKS(out, ":6:");
	HAS(m.res, "\"truncated\":true");
	HAS(m.res, "\"cut_short\":0");
	free(m.res);

	/* Count mode over many files: once the page is full, the 64 MiB file after them is not
	 * read at all. */
	inside("mkdir many && cd many && for i in $(seq 100 399); do echo match > f$i.txt; done && "
	       "mv ../all.txt zz.txt");
	m = call_in_child("Grep", "{\"pattern\":\"match\",\"output_mode\":\"count\",\"path\":"
	                  "\"many\",\"head_limit\":3}", -1);
	ck_assert_msg(m.grew_kb < 48 * 1024, "grew %ld KiB: the big file was read", m.grew_kb);
	ck_assert_msg(bt_tool_ok(m.res), "%s", m.res);
	out = output_of(m.res);
	HAS(out, "/many/f102.txt:1\n\n[Showing results with pagination = limit: 3]");
	LACKS(out, "zz.txt");
	free(m.res);
}
END_TEST

/* ============================================================================================
 * Item 4: diffs of hostile sizes
 * ========================================================================================= */

START_TEST(test_write_over_a_huge_file_omits_the_diff)
{
	struct measured m;
	char *res, *diff;

	/* The case: 40 MiB of newlines, read, then overwritten by a Write. */
	inside("head -c 41943040 /dev/zero | tr '\\000' '\\n' > nl.txt");
	res = call("Read", "{\"file_path\":\"nl.txt\",\"limit\":1}");
	HAS(res, "\"total_lines\":41943040");
	free(res);
	m = call_in_child("Write", "{\"file_path\":\"nl.txt\",\"content\":\"x\\n\"}", -1);
	ck_assert_msg(m.grew_kb < 64 * 1024, "grew %ld KiB", m.grew_kb);   /* it was 2 GB */
	ck_assert_uint_lt(strlen(m.res), 4096);                           /* it was 126 MB */
	ck_assert_msg(bt_tool_ok(m.res), "%.500s", m.res);
	HAS(m.res, "\"diff_omitted\":true");
	diff = bt_string_member(m.res, "diff");
	ck_assert_msg(strncmp(diff, "diff omitted: ", 14) == 0, "%s", diff);
	free(diff);
	free(m.res);
	ck_assert_str_eq(test_slurp(test_path_at(workdir, "nl.txt")), "x\n");
}
END_TEST

START_TEST(test_edit_of_a_huge_file_bounds_its_diff)
{
	struct measured m;
	char *res, *diff;

	/* Every line changes: 8 runs of 5 MiB of newlines become "y". The diff is omitted,
	 * with the sizes. */
	size_t run = (size_t)5 << 20, at;
	char *args = malloc(2 * run + 128);
	ck_assert_ptr_nonnull(args);
	at = (size_t)sprintf(args, "{\"file_path\":\"nl.txt\",\"old_string\":\"");
	for (size_t i = 0; i < run; i++, at += 2)
		memcpy(args + at, "\\n", 2);
	strcpy(args + at, "\",\"new_string\":\"y\\n\",\"replace_all\":true}");
	inside("head -c 41943040 /dev/zero | tr '\\000' '\\n' > nl.txt");
	free(call("Read", "{\"file_path\":\"nl.txt\",\"limit\":1}"));
	m = call_in_child("Edit", args, -1);
	free(args);
	ck_assert_msg(m.grew_kb < 200 * 1024, "grew %ld KiB", m.grew_kb);
	ck_assert_uint_lt(strlen(m.res), 4096);
	ck_assert_msg(bt_tool_ok(m.res), "%.500s", m.res);
	HAS(m.res, "\"diff_omitted\":true");
	diff = bt_string_member(m.res, "diff");
	HAS(diff, "diff omitted: the change spans 41943040 bytes of the old text");
	free(diff);
	free(m.res);

	/* One line changed deep in a big file: the diff is kept, with its real line numbers. */
	inside("seq 1 2000000 > big.txt");
	free(call("Read", "{\"file_path\":\"big.txt\",\"limit\":1}"));
	m = call_in_child("Edit", "{\"file_path\":\"big.txt\",\"old_string\":\"\\n1500000\\n\","
	                  "\"new_string\":\"\\nfifteen hundred thousand\\n\"}", -1);
	ck_assert_msg(bt_tool_ok(m.res), "%.500s", m.res);
	LACKS(m.res, "diff_omitted");
	diff = bt_string_member(m.res, "diff");
	ck_assert_str_eq(diff, "--- a/big.txt\n+++ b/big.txt\n@@ -1499997,7 +1499997,7 @@\n"
	                       " 1499997\n 1499998\n 1499999\n-1500000\n+fifteen hundred thousand\n"
	                       " 1500001\n 1500002\n 1500003\n");
	free(diff);
	ck_assert_msg(m.grew_kb < 100 * 1024, "grew %ld KiB", m.grew_kb);
	free(m.res);
	res = call("Bash", "{\"command\":\"sed -n 1500000p big.txt\"}");
	HAS(output_of(res), "fifteen hundred thousand");
	free(res);
}
END_TEST

/* ============================================================================================
 * Item 5: size caps on the file opened, not on a stale stat
 * ========================================================================================= */

/* A command inside flips f between a small file and a 1 GiB sparse one as fast as it can
 * (ftruncate on one open file, in a loop of its own) while the tools read it, so that the
 * stat a tool takes first is often stale by the time it reads. Each call sees one or the
 * other, the small text or "too large"; none reads the giant (it made one Read take 2 GiB). */
START_TEST(test_reads_survive_a_file_flipped_to_a_sparse_giant)
{
	const char *argv[] = { "python3", "-c",
		"import os\n"
		"fd = os.open('f', os.O_RDWR | os.O_CREAT, 0o644)\n"
		"for i in range(100000000):\n"
		"    os.ftruncate(fd, 1 << 30)\n"
		"    os.ftruncate(fd, 0)\n"
		"    os.pwrite(fd, b'small\\n', 0)\n", NULL };
	static const char *const calls[][2] = {
		{ "Read", "{\"file_path\":\"f\"}" },
		{ "Grep", "{\"pattern\":\"small\",\"path\":\"f\",\"output_mode\":\"content\"}" },
		{ "Grep", "{\"pattern\":\"small\",\"output_mode\":\"count\"}" },
		{ "Edit", "{\"file_path\":\"f\",\"old_string\":\"small\",\"new_string\":\"small\\n\"}" },
		{ "Write", "{\"file_path\":\"f\",\"content\":\"small\\n\"}" },
	};
	sbx_process *proc = NULL;

	free(bt_shell_out(ws, "command -v python3 || { echo 'the test needs python3 inside' >&2; "
	                      "exit 1; }"));
	ck_assert_int_eq(sbx_process_spawn(ws, argv, NULL, &proc), 0);
	for (int64_t until = bt_now_ms() + 20000; !test_exists(test_path_at(workdir, "f"));) {
		ck_assert_msg(bt_now_ms() < until, "the flipping command did not start");
		usleep(10000);
	}
	for (int round = 0; round < 20; round++)
		for (size_t c = 0; c < sizeof calls / sizeof *calls; c++) {
			struct measured m = call_in_child(calls[c][0], calls[c][1], -1);

			ck_assert_msg(m.grew_kb < 300 * 1024, "%s grew %ld KiB: %.300s", calls[c][0],
			              m.grew_kb, m.res);
			if (!bt_tool_ok(m.res) && !strcmp(calls[c][0], "Read"))
				HAS(output_of(m.res), "too large to read");
			free(m.res);
			/* A Read now and then lets Edit and Write get as far as reading. */
			if (c == 0 || c == 3)
				free(call("Read", "{\"file_path\":\"f\"}"));
		}
	ck_assert_int_eq(sbx_process_wait(proc, 0, NULL, NULL), -SBX_ETIMEDOUT);   /* it ran */
	sbx_process_kill(proc);
	sbx_process_wait(proc, -1, NULL, NULL);
	sbx_process_free(proc);
}
END_TEST

/* The giant as it is, for every reader: refused on the opened file's size, without reading
 * it. sbx_file_read keeps its own 1 GiB cap the same way. */
START_TEST(test_sparse_giants_cost_nothing)
{
	struct measured m;
	char *data = NULL;
	size_t len = 7;

	inside("truncate -s 2G giant && truncate -s 200M big.txt && echo text > small.txt && "
	       "truncate -s 600M linked && ln -s linked link");
	/* The stat taken before opening is of the link (a few bytes): only the file opened
	 * tells its size. It made Read take twice the target's size in memory. */
	m = call_in_child("Read", "{\"file_path\":\"link\"}", -1);
	ck_assert_msg(m.grew_kb < 16 * 1024, "grew %ld KiB", m.grew_kb);
	ck_assert(!bt_tool_ok(m.res));
	HAS(output_of(m.res), "too large to read");
	free(m.res);
	m = call_in_child("Read", "{\"file_path\":\"giant\"}", -1);
	ck_assert(!bt_tool_ok(m.res));
	HAS(output_of(m.res), "too large to read");
	ck_assert_msg(m.grew_kb < 16 * 1024, "grew %ld KiB", m.grew_kb);
	free(m.res);
	m = call_in_child("Grep", "{\"pattern\":\"text\"}", -1);
	ck_assert_msg(bt_tool_ok(m.res), "%s", m.res);
	HAS(m.res, "\"skipped_large\":3");
	ck_assert_msg(m.grew_kb < 16 * 1024, "grew %ld KiB", m.grew_kb);
	free(m.res);
	ck_assert_int_eq(sbx_file_read(ws, "giant", &data, &len), -SBX_EFBIG);
	ck_assert_ptr_null(data);
	ck_assert_uint_eq(len, 0);
}
END_TEST

/* ============================================================================================
 * Item 9: Grep and Glob under file-descriptor pressure
 * ========================================================================================= */

static void many_files(void)
{
	inside("mkdir -p tree && cd tree && for d in 0 1 2 3 4 5 6 7 8 9; do mkdir -p d$d/e/f; "
	       "for i in $(seq 1 100); do echo needle > d$d/e/f/n$i.txt; done; done");
}

/* What a search under pressure may answer: all of it, or an error that says why. Never a
 * result that calls itself complete with files missing (it said "No matches found", complete,
 * with 976 unreadable). */
static void whole_or_error(const char *res, const char *count_field, int want)
{
	if (!bt_tool_ok(res)) {
		ck_assert_msg(strstr(res, "file descriptors") || strstr(res, "Too many open files"),
		              "%s", res);
		return;
	}
	HAS(res, "\"complete\":true");
	HAS(res, bt_tmp("\"%s\":%d", count_field, want));
}

START_TEST(test_grep_under_fd_pressure)
{
	static const char grep[] = "{\"pattern\":\"needle\",\"output_mode\":\"count\","
	                           "\"head_limit\":0}";
	struct measured m;

	many_files();
	/* Room for a few: the search gives back its own and goes on with fewer. */
	for (int threads = 0; threads < 2; threads++) {
		if (threads)
			setenv("SBX_GREP_THREADS", "1", 1);
		/* The walk itself holds a descriptor per level (5 here) and one for a .gitignore;
		 * the rest is for the files it searches. */
		for (int room = 8; room <= 32; room += 12) {
			m = call_in_child("Grep", grep, room);
			whole_or_error(m.res, "files", 1000);
			ck_assert_msg(bt_tool_ok(m.res), "room %d, threads %d: %s", room, threads, m.res);
			free(m.res);
		}
		unsetenv("SBX_GREP_THREADS");
	}
	/* No room at all: an error, not "No matches found". */
	m = call_in_child("Grep", grep, 0);
	ck_assert_msg(!bt_tool_ok(m.res), "%s", m.res);
	whole_or_error(m.res, "files", 1000);
	free(m.res);
	m = call_in_child("Grep", "{\"pattern\":\"needle\",\"path\":\"tree\"}", 1);
	whole_or_error(m.res, "files", 1000);
	free(m.res);
}
END_TEST

START_TEST(test_glob_under_fd_pressure)
{
	struct measured m;

	many_files();
	for (int room = 0; room <= 12; room++) {
		m = call_in_child("Glob", "{\"pattern\":\"**/*.txt\"}", room);
		whole_or_error(m.res, "total", 1000);
		if (room == 0)
			ck_assert_msg(!bt_tool_ok(m.res), "%s", m.res);
		if (room == 12)
			ck_assert_msg(bt_tool_ok(m.res), "%s", m.res);
		free(m.res);
	}
}
END_TEST

/* A directory the search cannot read makes it incomplete, and says so. Root reads every
 * directory, so as root the calls are made by a child that became nobody; and a path longer
 * than PATH_MAX, which no one can open by name, is left out and said to be. */
START_TEST(test_unreadable_parts_make_results_incomplete)
{
	struct measured m;
	char *deep;

	inside("mkdir -p open shut && echo needle > open/a.txt && echo needle > shut/b.txt && "
	       "chmod 000 shut");
	if (geteuid() == 0) {
		child_uid = 65534;
		ck_assert_int_eq(chmod(workdir, 0755), 0);   /* the rest of it nobody may read */
	}
	m = call_in_child("Grep", "{\"pattern\":\"needle\"}", -1);
	ck_assert_msg(bt_tool_ok(m.res), "%s", m.res);
	HAS(m.res, "\"complete\":false");
	HAS(m.res, "\"unreadable_dirs\":1");
	HAS(output_of(m.res), "0 file(s) and 1 directory(ies) could not be read");
	HAS(output_of(m.res), "/open/a.txt");
	free(m.res);
	m = call_in_child("Glob", "{\"pattern\":\"**/*.txt\"}", -1);
	ck_assert_msg(bt_tool_ok(m.res), "%s", m.res);
	HAS(m.res, "\"complete\":false");
	HAS(output_of(m.res), "1 directory(ies) could not be read");
	free(m.res);
	child_uid = (uid_t)-1;
	inside("chmod 755 shut && rm -r shut");

	/* 20 levels of 250-byte names: the file at the bottom has a path of 5 KB (made step by
	 * step: sh's cd gives up past PATH_MAX). */
	deep = bt_fmt("python3 -c \"import os\nfor i in range(20):\n    os.mkdir('0' * 250)\n"
	              "    os.chdir('0' * 250)\nopen('x.txt', 'w').write('needle')\n\"");
	free(bt_shell_out(ws, deep));
	free(deep);
	m = call_in_child("Grep", "{\"pattern\":\"needle\"}", -1);
	ck_assert_msg(bt_tool_ok(m.res), "%s", m.res);
	HAS(m.res, "\"complete\":false");
	HAS(output_of(m.res), "/open/a.txt");
	HAS(output_of(m.res), "or with paths over 4095 bytes, were not searched");
	free(m.res);
}
END_TEST

/* ============================================================================================
 * Item 12: names printed escaped, and read back
 * ========================================================================================= */

/* Names a command makes (printf escapes for sh), and how the tools print them. */
static const struct {
	const char *sh, *shown;
} names[] = {
	{ "a\\nfake.txt:1:needle", "a\\nfake.txt:1:needle" },
	{ "tab\\there", "tab\\there" },
	{ "esc\\033[31mred", "esc\\x1b[31mred" },
	{ "cr\\rname", "cr\\rname" },
	{ "bad\\377", "bad\\xff" },
	{ "rlo\\342\\200\\256txt.exe", "rlo\\xe2\\x80\\xaetxt.exe" },
	{ "nel\\302\\205x", "nel\\xc2\\x85x" },
	{ "back\\\\slash", "back\\\\slash" },
	/* A look-alike of the first: a backslash and an n, not a newline. */
	{ "a\\\\nfake.txt:1:needle", "a\\\\nfake.txt:1:needle" },
};
#define N_NAMES (sizeof names / sizeof *names)

static void make_names(void)
{
	char *cmd = strdup("mkdir names && cd names");

	for (size_t i = 0; i < N_NAMES; i++) {
		char *next;
		ck_assert_int_ge(asprintf(&next, "%s && printf 'needle %zu\\n' > \"$(printf '%s')\"", cmd,
		                          i, names[i].sh), 0);
		free(cmd);
		cmd = next;
	}
	inside(cmd);
	free(cmd);
}

/* The model's path to name i: root view, names/, the name as printed. */
static char *shown_path(size_t i)
{
	return bt_fmt("%s/names/%s", sbx_workspace_root(ws), names[i].shown);
}

/* A JSON string of s (backslashes doubled: the printed names hold them). */
static char *json_str(const char *s)
{
	size_t n = 0;
	char *o = malloc(2 * strlen(s) + 3);

	ck_assert_ptr_nonnull(o);
	o[n++] = '"';
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			o[n++] = '\\';
		o[n++] = *s;
	}
	o[n++] = '"';
	o[n] = '\0';
	return o;
}

enum listing { NAMES, COUNTS, LINES, LINES_NO_NUMBERS };

/* The line listing name i in each kind of output. */
static char *listed_line(enum listing kind, size_t i)
{
	char *p = shown_path(i), *line;

	switch (kind) {
	case COUNTS: line = bt_fmt("%s:1", p); break;
	case LINES: line = bt_fmt("%s:1:needle %zu", p, i); break;
	case LINES_NO_NUMBERS: line = bt_fmt("%s:needle %zu", p, i); break;
	case NAMES:
	default: line = bt_fmt("%s", p); break;
	}
	free(p);
	return line;
}

/* Every line of out is one of the printed names' lines, each once, and nothing else; no raw
 * control byte anywhere (extra: lines out may hold besides, such as context separators). */
static void lists_each_name_once(const char *out, enum listing kind, size_t extra)
{
	size_t lines = 1;

	for (const unsigned char *p = (const unsigned char *)out; *p; p++) {
		ck_assert_msg(*p >= 0x20 || *p == '\n', "raw control byte 0x%02x in %s", *p, out);
		lines += *p == '\n';
	}
	ck_assert_msg(lines == N_NAMES + extra, "%zu lines, not %zu:\n%s", lines, N_NAMES + extra,
	              out);
	char *hay = bt_fmt("\n%s\n", out);
	for (size_t i = 0; i < N_NAMES; i++) {
		char *line = listed_line(kind, i), *want = bt_fmt("\n%s\n", line);
		char *first = strstr(hay, want);

		ck_assert_msg(first, "%s not listed in:\n%s", line, out);
		ck_assert_msg(!strstr(first + 1, want), "%s listed twice in:\n%s", line, out);
		free(line);
		free(want);
	}
	free(hay);
}

START_TEST(test_names_are_printed_escaped)
{
	char *res;

	make_names();
	res = call("Glob", "{\"pattern\":\"*\",\"path\":\"names\"}");
	lists_each_name_once(output_of(res), NAMES, 0);
	free(res);
	res = call("Grep", "{\"pattern\":\"needle\",\"path\":\"names\"}");
	lists_each_name_once(output_of(res), NAMES, 0);
	free(res);
	res = call("Grep", "{\"pattern\":\"needle\",\"path\":\"names\",\"output_mode\":\"count\"}");
	lists_each_name_once(output_of(res), COUNTS, 0);
	free(res);
	res = call("Grep", "{\"pattern\":\"needle\",\"path\":\"names\",\"output_mode\":\"content\"}");
	lists_each_name_once(output_of(res), LINES, 0);
	free(res);
	/* With context, files are separated by "--" lines. */
	res = call("Grep", "{\"pattern\":\"needle\",\"path\":\"names\",\"output_mode\":\"content\","
	           "\"-n\":false,\"-C\":1}");
	lists_each_name_once(output_of(res), LINES_NO_NUMBERS, N_NAMES - 1);
	free(res);
}
END_TEST

/* What the model copies from the output leads to that very file, for Read, Edit and Write,
 * and their messages and diff headers print the name escaped too. */
START_TEST(test_printed_names_lead_back_to_their_files)
{
	make_names();
	for (size_t i = 0; i < N_NAMES; i++) {
		char *p = shown_path(i), *jp = json_str(p), *res, *args, *fp;
		char *rel_shown = bt_fmt("names/%s", names[i].shown);

		res = call("Read", bt_tmp("{\"file_path\":%s}", jp));
		ck_assert_msg(bt_tool_ok(res), "Read %s: %s", p, res);
		HAS(output_of(res), bt_tmp("needle %zu", i));
		fp = bt_string_member(res, "file_path");
		ck_assert_str_eq(fp, p);
		free(fp);
		free(res);

		args = bt_fmt("{\"file_path\":%s,\"old_string\":\"needle %zu\",\"new_string\":"
		              "\"edited %zu\"}", jp, i, i);
		res = call("Edit", args);
		ck_assert_msg(bt_tool_ok(res), "Edit %s: %s", p, res);
		HAS(output_of(res), bt_tmp("Successfully replaced 1 occurrence in %s", p));
		fp = bt_string_member(res, "diff");
		HAS(fp, bt_tmp("--- a/%s\n+++ b/%s\n@@ -1 +1 @@\n-needle %zu\n+edited %zu\n",
		               rel_shown, rel_shown, i, i));
		free(fp);
		free(res);
		free(args);

		args = bt_fmt("{\"file_path\":%s,\"content\":\"written %zu\\n\"}", jp, i);
		res = call("Write", args);
		ck_assert_msg(bt_tool_ok(res), "Write %s: %s", p, res);
		HAS(output_of(res), bt_tmp("The file %s has been written", p));
		free(res);
		free(args);
		/* The right file changed, seen from inside. */
		char *got = bt_shell_out(ws, bt_tmp("cat \"names/$(printf '%s')\"", names[i].sh));
		ck_assert_str_eq(got, bt_tmp("written %zu\n", i));
		free(got);
		free(rel_shown);
		free(jp);
		free(p);
	}
	/* Nothing else was made: the names as written (with backslashes) do not exist. */
	char *res = call("Glob", "{\"pattern\":\"*\",\"path\":\"names\"}");
	HAS(res, bt_tmp("\"total\":%zu", N_NAMES));
	free(res);
}
END_TEST

START_TEST(test_errors_quote_names_escaped)
{
	char *res;

	res = call("Read", "{\"file_path\":\"no\\nsuch\\u001b[2Jfile\"}");
	ck_assert(!bt_tool_ok(res));
	ck_assert_ptr_null(strchr(output_of(res), '\n'));
	ck_assert_ptr_null(strchr(output_of(res), '\x1b'));
	HAS(output_of(res), "no\\nsuch\\x1b[2Jfile");
	free(res);
	res = call("Read", "{\"file_path\":\"x\",\"bo\\ngus\\u0007\":1}");
	ck_assert(!bt_tool_ok(res));
	HAS(output_of(res), "unknown parameter \"bo\\ngus\\x07\"");
	free(res);
	/* A new file is made with the name as written. */
	res = call("Write", "{\"file_path\":\"new\\\\nname\",\"content\":\"n\\n\"}");
	ck_assert_msg(bt_tool_ok(res), "%s", res);
	free(res);
	free(bt_shell_out(ws, "test -f 'new\\nname'"));
}
END_TEST

/* ============================================================================================
 * Item 13: a full disk
 * ========================================================================================= */

static void write_id_map(const char *file, unsigned id)
{
	int fd = open(file, O_WRONLY | O_CLOEXEC);
	char line[64];

	ck_assert_msg(fd >= 0, "open %s: %s", file, strerror(errno));
	snprintf(line, sizeof line, "%u %u 1\n", id, id);
	ck_assert_int_eq(write(fd, line, strlen(line)), (ssize_t)strlen(line));
	close(fd);
}

/* A 4 MiB tmpfs on dir, in a mount namespace of this test process (and, for an ordinary user,
 * a user namespace mapping only the user itself, so the library still runs unprivileged). */
static void mount_small_disk(const char *dir)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();

	if (uid == 0) {
		ck_assert_msg(unshare(CLONE_NEWNS) == 0, "unshare: %s", strerror(errno));
	} else {
		ck_assert_msg(unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0, "unshare: %s",
		              strerror(errno));
		int fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, "deny", 4), 4);
		close(fd);
		write_id_map("/proc/self/uid_map", uid);
		write_id_map("/proc/self/gid_map", gid);
	}
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	ck_assert_msg(mount("sbx-full", dir, "tmpfs", 0, "size=4m,mode=0755") == 0, "mount: %s",
	              strerror(errno));
}

/* Fills the file system holding dir until nothing more fits. */
static void fill_disk(const char *dir)
{
	int fd = open(test_path_at(dir, "filler"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	static char block[65536];

	ck_assert_int_ge(fd, 0);
	for (;;) {
		ssize_t n = write(fd, block, sizeof block);
		if (n < 0) {
			ck_assert_int_eq(errno, ENOSPC);
			break;
		}
	}
	/* Partial pages too. */
	while (write(fd, block, 1) == 1)
		;
	close(fd);
}

static void no_space(const char *res)
{
	ck_assert_msg(!bt_tool_ok(res), "%s", res);
	ck_assert_msg(strcasestr(output_of(res), "no space left"), "%s", res);
}

START_TEST(test_tools_on_a_full_disk)
{
	char *dir = bt_mkdtemp(), *work, *res;
	struct stat st_dir, st_state;

	mount_small_disk(dir);
	/* The state folder (the tool sessions) on the same full disk, as it was in the workdir
	 * before 1.7: a save that fails must still be said. Beside the workdir, not in it (a
	 * sandbox would see it there: refused). */
	work = bt_fmt("%s/w", dir);
	ck_assert_int_eq(mkdir(work, 0755), 0);
	ws = bt_open_ok(work, bt_tmp("\"state_dir\":\"%s/state\"", dir));
	bt_put(ws, "keep.txt", "original\n", 0);
	bt_put(ws, "other.txt", "read me\n", 0);
	free(call("Read", "{\"file_path\":\"keep.txt\"}"));
	fill_disk(dir);

	/* Read still reads, and says when what it learned could not be kept. */
	res = call("Read", "{\"file_path\":\"other.txt\"}");
	ck_assert_msg(bt_tool_ok(res), "%s", res);
	HAS(output_of(res), "read me");
	if (stat(work, &st_dir) == 0 && stat(test_path_at(dir, "state"), &st_state) == 0 &&
	    st_dir.st_dev == st_state.st_dev) {
		/* The session lives on the full disk: its save failed, and the result says so. */
		HAS(res, "\"session_saved\":false");
		HAS(output_of(res), "must be read again before Write or Edit");
	}
	free(res);

	/* Write and Edit fail with the reason, and leave nothing half-written. */
	no_space(res = call("Write", "{\"file_path\":\"keep.txt\",\"content\":\"replaced\\n\"}"));
	free(res);
	no_space(res = call("Edit", "{\"file_path\":\"keep.txt\",\"old_string\":\"original\","
	                    "\"new_string\":\"edited\"}"));
	free(res);
	no_space(res = call("Write", "{\"file_path\":\"sub/new.txt\",\"content\":\"new\\n\"}"));
	free(res);
	ck_assert_str_eq(test_slurp(test_path_at(work, "keep.txt")), "original\n");
	ck_assert(!test_exists(test_path_at(work, "sub/new.txt")));
	ck_assert(!test_has_temp_files(work));

	/* Space again: the file can be changed after a fresh Read. */
	ck_assert_int_eq(unlink(test_path_at(dir, "filler")), 0);
	free(call("Read", "{\"file_path\":\"keep.txt\"}"));
	res = call("Edit", "{\"file_path\":\"keep.txt\",\"old_string\":\"original\","
	           "\"new_string\":\"edited\"}");
	ck_assert_msg(bt_tool_ok(res), "%s", res);
	free(res);
	sbx_workspace_close(ws);
	ws = NULL;
	ck_assert_int_eq(umount2(dir, MNT_DETACH), 0);
	free(work);
}
END_TEST

/* The same as any user where the workspace itself is capped (limits.disk_bytes): the state
 * folder is outside the cap there, so only Write and Edit meet it. */
START_TEST(test_tools_on_a_full_capped_workspace)
{
	char *res;

	if (strcmp(bt_backend(), "local") == 0) {
		/* local has no sandbox to keep a cap: it refuses the key (the tmpfs test above is
		 * its full disk). */
		ck_assert_int_eq(bt_open(NULL, "\"limits\":{\"disk_bytes\":2097152}", &ws),
		                 -SBX_ECONFIG);
		HAS(sbx_last_error(), "limits.disk_bytes");
		ws = NULL;
		return;
	}
	ws = bt_open_ok(NULL, "\"limits\":{\"disk_bytes\":2097152}");
	bt_put(ws, "keep.txt", "original\n", 0);
	free(call("Read", "{\"file_path\":\"keep.txt\"}"));
	free(bt_shell_out(ws, "head -c 4194304 /dev/zero > filler 2>/dev/null; "
	                      "while echo x >> filler 2>/dev/null; do :; done; true"));
	no_space(res = call("Edit", "{\"file_path\":\"keep.txt\",\"old_string\":\"original\","
	                    "\"new_string\":\"edited, and longer than the original was\"}"));
	free(res);
	no_space(res = call("Write", "{\"file_path\":\"new.txt\",\"content\":\"new\\n\"}"));
	free(res);
	res = call("Read", "{\"file_path\":\"keep.txt\"}");
	ck_assert_msg(bt_tool_ok(res), "%s", res);
	HAS(output_of(res), "original");
	free(res);
	char *left = bt_shell_out(ws, "ls -a; cat keep.txt");
	HAS(left, "original");
	LACKS(left, "new.txt");
	LACKS(left, ".sbx-");
	free(left);
	sbx_workspace_close(ws);
	ws = NULL;
}
END_TEST

/* ============================================================================================ */

static Suite *hostile_tools_suite(void)
{
	Suite *s = suite_create("hostile_tools");
	TCase *args = tcase_create("arguments");
	TCase *files = tcase_create("workspace");
	TCase *disk = tcase_create("disk");

	tcase_add_checked_fixture(args, setup, teardown);
	tcase_add_test(args, test_every_field_refuses_bad_values);
	tcase_add_test(args, test_whole_arguments_that_are_not_objects);
	tcase_add_test(args, test_cli_survives_null_strings);
	tcase_add_test(args, test_errors_quote_names_escaped);
	tcase_set_timeout(args, 600);
	suite_add_tcase(s, args);

	tcase_add_checked_fixture(files, setup, teardown);
	tcase_add_test(files, test_grep_catastrophic_pattern_is_cut_within_the_deadline);
	tcase_add_test(files, test_grep_engine_limit_is_reported);
	tcase_add_test(files, test_grep_stops_when_the_page_is_full);
	tcase_add_test(files, test_write_over_a_huge_file_omits_the_diff);
	tcase_add_test(files, test_edit_of_a_huge_file_bounds_its_diff);
	tcase_add_test(files, test_reads_survive_a_file_flipped_to_a_sparse_giant);
	tcase_add_test(files, test_sparse_giants_cost_nothing);
	tcase_add_test(files, test_grep_under_fd_pressure);
	tcase_add_test(files, test_glob_under_fd_pressure);
	tcase_add_test(files, test_unreadable_parts_make_results_incomplete);
	tcase_add_test(files, test_names_are_printed_escaped);
	tcase_add_test(files, test_printed_names_lead_back_to_their_files);
	tcase_set_timeout(files, 600);
	suite_add_tcase(s, files);

	/* No fixture: the namespaces must be made before any workspace starts a thread. */
	tcase_add_test(disk, test_tools_on_a_full_disk);
	tcase_add_test(disk, test_tools_on_a_full_capped_workspace);
	tcase_set_timeout(disk, 300);
	suite_add_tcase(s, disk);
	return s;
}

int main(void)
{
	return bt_main(hostile_tools_suite);
}
