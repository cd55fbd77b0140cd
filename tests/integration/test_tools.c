/* The agent tools through the public API, on the backend SBX_TEST_BACKEND names (registered
 * for local, ns and bwrap): the schemas, argument checking, Bash, Read, Write, Edit, Glob,
 * Grep, sessions that outlive the handle, the approval hook, the audit log and read-only
 * workspaces. Paths the model would write are built from sbx_workspace_root(). */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* ---- the workspace's files, behind the tools' back ---------------------------------------
 * On the host directory where the workspace has one, else through the file API and commands
 * (a docker workspace with its files in a volume). */

static void put_bytes(const char *rel, const void *data, size_t len, unsigned mode)
{
	if (bt_host_files()) {
		const char *path = test_path_at(workdir, rel);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

		ck_assert_msg(fd >= 0, "open %s", path);
		ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
		close(fd);
		return;
	}
	ck_assert_msg(sbx_file_write(ws, rel, data, len, mode, SBX_WRITE_MKDIRS) == 0, "put %s: %s",
	              rel, sbx_last_error());
}

static void put_file(const char *rel, const char *text, unsigned mode)
{
	if (bt_host_files())
		test_put_file(workdir, rel, text, mode);
	else
		put_bytes(rel, text, strlen(text), mode);
}

static const char *slurp(const char *rel)
{
	static char buf[1 << 16];
	char *data = NULL;
	size_t len;

	if (bt_host_files())
		return test_slurp(test_path_at(workdir, rel));
	ck_assert_msg(sbx_file_read(ws, rel, &data, &len) == 0, "read %s: %s", rel, sbx_last_error());
	snprintf(buf, sizeof buf, "%s", data);
	sbx_free(data);
	return buf;
}

static bool exists(const char *rel);

/* A file of the state folder: outside the workdir where the files are on the host. */
static bool audit_exists(const char *name)
{
	if (bt_host_files())
		return test_exists(test_path_at(test_state_dir(workdir), name));
	return exists(bt_tmp(".agentsbx/%s", name));
}

static bool exists(const char *rel)
{
	sbx_stat st = { .size = sizeof st };

	if (bt_host_files())
		return test_exists(test_path_at(workdir, rel));
	return sbx_file_stat(ws, rel, &st) == 0;
}

static int make_link(const char *target, const char *rel)
{
	const char *argv[] = { "ln", "-s", "--", target, rel, NULL };
	sbx_result *res;

	if (bt_host_files())
		return symlink(target, test_path_at(workdir, rel));
	res = bt_argv(ws, argv, NULL);
	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	sbx_result_free(res);
	return 0;
}

static int make_dir(const char *rel, unsigned mode)
{
	if (bt_host_files())
		return mkdir(test_path_at(workdir, rel), mode);
	return sbx_file_mkdir(ws, rel, mode);
}

/* Temporary files a write left: the host path's ".sbx-", the archive path's
 * ".agentsbx-write-". */
static bool has_temp_files(void)
{
	char *out;
	bool found;

	if (bt_host_files())
		return test_has_temp_files(workdir);
	out = bt_shell_out(ws, "find . -name '.sbx-*' -o -name '.agentsbx-write-*'");
	found = *out != '\0';
	free(out);
	return found;
}

static bool sandboxed(void)
{
	return strcmp(bt_backend(), "local") != 0;
}

/* ---- results ---------------------------------------------------------------------------- */

/* A tool call that must not fail as a library call; the result JSON (caller frees). */
static char *call_in(sbx_workspace *w, const char *session, const char *tool, const char *args)
{
	/* Static: gcc 12 at -O3 takes a pointer whose address was passed out for a pointer to
	 * that local (-Wdangling-pointer false positive); tests run one call at a time. */
	static char *res;
	int r;

	res = NULL;
	r = sbx_tool_call_session(w, session, tool, args, &res);
	ck_assert_msg(r == 0, "%s %s: %d %s", tool, args, r, sbx_last_error());
	ck_assert_ptr_nonnull(res);
	return res;
}

static char *call(const char *tool, const char *args)
{
	return call_in(ws, NULL, tool, args);
}

/* The value of the string member "key" of the result (the first occurrence), unescaped.
 * Static storage, rotating: nothing for a test to free. */
static const char *str_member(const char *res, const char *key)
{
	static char *kept[4];
	static int next;
	char *value = bt_string_member(res, key);

	free(kept[next % 4]);
	kept[next++ % 4] = value;
	return value;
}

static const char *output_of(const char *res)
{
	return str_member(res, "output");
}

/* Runs a tool, checks ok/failed, and checks the output contains want (if given). */
static void expect(const char *tool, const char *args, bool ok, const char *want)
{
	char *res = call(tool, args);

	ck_assert_msg(bt_tool_ok(res) == ok, "%s %s: expected ok=%d, got %s", tool, args, ok, res);
	if (want)
		ck_assert_msg(strstr(output_of(res), want), "%s %s: output lacks \"%s\": %s", tool,
		              args, want, res);
	free(res);
}

/* "<root>/<rel>" as the model writes it. */
static const char *model_path(const char *rel)
{
	return bt_tmp("%s/%s", sbx_workspace_root(ws), rel);
}

/* ---- schemas and argument checks --------------------------------------------------------- */

START_TEST(test_schemas)
{
	char *json = NULL;
	const char *names[] = { "Bash", "Read", "Write", "Edit", "Glob", "Grep" };

	ck_assert_int_eq(sbx_tools_json(ws, &json), 0);
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		const char *needle = bt_tmp("{\"name\":\"%s\",\"description\":\"", names[i]);
		ck_assert_msg(strstr(json, needle), "%s missing in %s", names[i], json);
	}
	ck_assert_ptr_null(strstr(json, "\"name\":\"Skill\""));
	ck_assert_ptr_nonnull(strstr(json, "\"input_schema\":{\"type\":\"object\""));
	ck_assert_ptr_nonnull(strstr(json, "\"additionalProperties\":false"));
	sbx_free(json);
	ck_assert_int_eq(sbx_tools_json(NULL, &json), -SBX_EINVAL);
	ck_assert_int_eq(sbx_tools_json(ws, NULL), -SBX_EINVAL);
}
END_TEST

START_TEST(test_bad_arguments)
{
	char *res = NULL;

	expect("Read", "{\"file_path\":\"a\",\"limit\":\"x\"}", false,
	       "\"limit\" must be an integer (got string)");
	expect("Read", "{\"limit\":5}", false, "\"file_path\" is required");
	expect("Read", "{\"file_path\":\"a\",\"bogus\":1}", false, "unknown parameter \"bogus\"");
	expect("Read", "{\"file_path\":\"a\"", false, "not valid JSON");
	expect("Read", "[1,2]", false, "must be a JSON object");
	expect("Read", "{\"file_path\":\"a\\u0000b\"}", false, "NUL");
	expect("Read", "{\"file_path\":\"a\",\"limit\":5000}", false, "at most 2000");
	expect("Read", "{\"file_path\":\"a\",\"offset\":0}", false, "at least 1");
	expect("Read", "{\"file_path\":\"a\",\"limit\":1.5}", false, "must be an integer");
	expect("Grep", "{\"pattern\":\"x\",\"output_mode\":\"everything\"}", false, "one of");
	expect("Nope", "{}", false, "no tool named \"Nope\"");
	/* Non-UTF-8 in a string: the JSON parser or the schema check refuses it. */
	expect("Write", "{\"file_path\":\"a\",\"content\":\"\xff\xfe\"}", false, NULL);
	/* null stands for "not given". */
	expect("Bash", "{\"command\":\"echo hi\",\"timeout\":null}", true, "hi");
	ck_assert_int_eq(sbx_tool_call(ws, NULL, "{}", &res), -SBX_EINVAL);
	ck_assert_int_eq(sbx_tool_call(NULL, "Bash", "{}", &res), -SBX_EINVAL);
	ck_assert_int_eq(sbx_tool_call_session(ws, "../x", "Bash", "{}", &res), -SBX_EINVAL);
	ck_assert_int_eq(sbx_tool_call_session(ws, ".hidden", "Bash", "{}", &res), -SBX_EINVAL);
	ck_assert_ptr_null(res);
}
END_TEST

START_TEST(test_huge_arguments)
{
	size_t n = (size_t)17 << 20;
	char *big = malloc(n + 64);

	ck_assert_ptr_nonnull(big);
	memcpy(big, "{\"command\":\"", 12);
	memset(big + 12, 'a', n);
	strcpy(big + 12 + n, "\"}");
	expect("Bash", big, false, "too large");
	free(big);
}
END_TEST

/* ---- Bash ------------------------------------------------------------------------------ */

START_TEST(test_bash_output_and_failure)
{
	char *res;

	expect("Bash", "{\"command\":\"echo out; echo err >&2\"}", true, "out\n\nerr\n");
	res = call("Bash", "{\"command\":\"echo so; echo se >&2; exit 3\"}");
	ck_assert(!bt_tool_ok(res));
	ck_assert_str_eq(output_of(res),
	                 "Command failed: echo so; echo se >&2; exit 3\n\nStdout:\nso\n\nStderr:\nse\n");
	ck_assert_ptr_nonnull(strstr(res, "\"exit_code\":3"));
	free(res);
	expect("Bash", "{\"command\":\"printf 'a\\\\r\\\\nb\\\\r\\\\n'\"}", true, "a\nb\n");
	res = call("Bash", "{\"command\":\"printf '\\\\377ok'\"}");
	ck_assert_str_eq(output_of(res), "\xEF\xBF\xBDok");
	free(res);
	expect("Bash", "{\"command\":\"\"}", false, "must not be empty");
}
END_TEST

/* An integer member of the result's metadata, or -1 when it is absent. */
static long long int_member(const char *res, const char *key)
{
	const char *at = strstr(res, bt_tmp("\"%s\":", key));

	return at ? strtoll(at + strlen(key) + 3, NULL, 10) : -1;
}

/* The bytes `seq 1 n` prints. */
static size_t seq_bytes(int n)
{
	size_t total = 0;

	for (int i = 1; i <= n; i++)
		total += (size_t)snprintf(NULL, 0, "%d\n", i);
	return total;
}

/* ~1 MB of output: the result keeps 30000 characters, says how much was cut, and names a
 * file holding all of it, which Read opens. */
START_TEST(test_bash_truncation_says_what_was_cut)
{
	char *res = call("Bash", "{\"command\":\"seq 1 150000\"}"), *full = NULL;
	const char *out = output_of(res);
	size_t total = seq_bytes(150000), len;
	const char *cut = bt_tmp("%zu of %zu characters were cut", total - 30000, total);
	const char *path, *rel;

	ck_assert(bt_tool_ok(res));
	ck_assert_msg(strstr(out, "\n... (output truncated: "), "no truncation note: %.200s",
	              out + 29900);
	ck_assert_msg(strstr(out, cut), "no \"%s\" in %.400s", cut, out + 29900);
	ck_assert_ptr_nonnull(strstr(out, "lines shown)"));
	ck_assert_int_eq(int_member(res, "truncated_chars"), (long long)(total - 30000));
	ck_assert_int_eq(int_member(res, "truncated_bytes"), (long long)(total - 30000));
	ck_assert_ptr_nonnull(strstr(out, bt_tmp("(%zu bytes)", total - 30000)));
	ck_assert_int_gt(int_member(res, "truncated_lines"), 140000);
	path = str_member(res, "full_output_path");
	ck_assert_ptr_nonnull(path);
	ck_assert_msg(strstr(out, bt_tmp("'%s'", path)), "the text does not name %s", path);
	/* The file holds the whole output... */
	rel = path + strlen(sbx_workspace_root(ws)) + 1;
	ck_assert_int_eq(sbx_file_read(ws, rel, &full, &len), 0);
	ck_assert_uint_eq(len, total);
	ck_assert(strncmp(full, "1\n2\n3\n", 6) == 0);
	ck_assert(strcmp(full + len - 14, "149999\n150000\n") == 0);
	sbx_free(full);
	/* ...and Read opens it where the model was sent. */
	char *read = call("Read", bt_tmp("{\"file_path\":\"%s\",\"offset\":149999,\"limit\":2}",
	                                 path));
	ck_assert_msg(bt_tool_ok(read) && strstr(output_of(read), "150000"), "%s", read);
	free(read);
	free(res);
}
END_TEST

/* Output under the cap is left as it is, with no note. */
START_TEST(test_bash_short_output_is_whole)
{
	char *res = call("Bash", "{\"command\":\"head -c 29000 /dev/zero | tr '\\\\0' x\"}");

	ck_assert(bt_tool_ok(res));
	ck_assert_uint_eq(strlen(output_of(res)), 29000);
	ck_assert_ptr_null(strstr(res, "truncated"));
	free(res);
}
END_TEST

START_TEST(test_bash_cwd_persists_per_session)
{
	char *res;

	expect("Bash", "{\"command\":\"mkdir -p sub/deeper && cd sub\"}", true, NULL);
	res = call("Bash", "{\"command\":\"pwd\"}");
	ck_assert_str_eq(output_of(res), bt_tmp("%s/sub\n", sbx_workspace_root(ws)));
	free(res);
	/* Another session starts at the root. */
	res = call_in(ws, "other", "Bash", "{\"command\":\"pwd\"}");
	ck_assert_str_eq(output_of(res), bt_tmp("%s\n", sbx_workspace_root(ws)));
	free(res);
	/* A failing command still moves. */
	free(call("Bash", "{\"command\":\"cd deeper && false\"}"));
	res = call("Bash", "{\"command\":\"pwd\"}");
	ck_assert_str_eq(output_of(res), bt_tmp("%s/sub/deeper\n", sbx_workspace_root(ws)));
	free(res);
	/* Leaving the workspace: the next command starts at the root. */
	free(call("Bash", "{\"command\":\"cd /\"}"));
	res = call("Bash", "{\"command\":\"pwd\"}");
	ck_assert_str_eq(output_of(res), bt_tmp("%s\n", sbx_workspace_root(ws)));
	free(res);
	/* The directory vanishing meanwhile: back to the root too. */
	free(call("Bash", "{\"command\":\"cd sub/deeper\"}"));
	ck_assert_int_eq(sbx_file_remove(ws, "sub", SBX_REMOVE_RECURSIVE), 0);
	res = call("Bash", "{\"command\":\"pwd\"}");
	ck_assert_str_eq(output_of(res), bt_tmp("%s\n", sbx_workspace_root(ws)));
	ck_assert_ptr_nonnull(strstr(res, "\"cwd_reset\":true"));
	free(res);
}
END_TEST

/* A new handle on the same workdir (a restarted harness) carries on with the session. */
START_TEST(test_session_survives_the_handle)
{
	char *res;

	expect("Bash", "{\"command\":\"mkdir kept && cd kept\"}", true, NULL);
	put_file("notes.txt", "v1\n", 0644);
	expect("Read", "{\"file_path\":\"notes.txt\"}", true, "v1");
	sbx_workspace_close(ws);
	ws = bt_open_ok(workdir, NULL);
	res = call("Bash", "{\"command\":\"pwd\"}");
	ck_assert_str_eq(output_of(res), bt_tmp("%s/kept\n", sbx_workspace_root(ws)));
	free(res);
	expect("Edit", "{\"file_path\":\"notes.txt\",\"old_string\":\"v1\",\"new_string\":\"v2\"}",
	       true, "Successfully replaced 1 occurrence");
	ck_assert_str_eq(slurp("notes.txt"), "v2\n");
}
END_TEST

START_TEST(test_bash_timeout_kills_the_tree)
{
	char *res = call("Bash", "{\"command\":\"sleep 30 & echo $! > bg.pid; sleep 30\","
	                         "\"timeout\":500}");

	ck_assert(!bt_tool_ok(res));
	ck_assert_ptr_nonnull(strstr(output_of(res), "Command timed out after 500ms: sleep 30 &"));
	ck_assert_ptr_nonnull(strstr(res, "\"timed_out\":true"));
	free(res);
	/* The background sleep is gone too. */
	expect("Bash", "{\"command\":\"kill -0 $(cat bg.pid) 2>/dev/null && echo alive || echo gone\"}",
	       true, "gone");
}
END_TEST

/* ---- background shells ----------------------------------------------------------------- */

/* Starts command with run_in_background and returns the shell id (static storage). */
static const char *start_bg(const char *command_json)
{
	char *res = call("Bash", bt_tmp("{\"command\":%s,\"run_in_background\":true}",
	                                command_json));
	const char *id;

	ck_assert_msg(bt_tool_ok(res), "%s", res);
	ck_assert_ptr_nonnull(strstr(output_of(res), "Command running in background with ID: "));
	id = str_member(res, "shell_id");
	ck_assert_ptr_nonnull(id);
	id = bt_tmp("%s", id);
	free(res);
	return id;
}

/* BashOutput until the shell is no longer running (20 s at most), the stdout of every read
 * joined into *all (caller frees); returns the last result. */
static char *bg_output_until_done(const char *id, const char *filter, char **all)
{
	int64_t until = bt_now_ms() + 20000;
	char *res = NULL, *joined = bt_fmt("%s", "");

	for (;;) {
		free(res);
		res = call("BashOutput", filter ? bt_tmp("{\"bash_id\":\"%s\",\"filter\":\"%s\"}", id,
		                                         filter)
		                                : bt_tmp("{\"bash_id\":\"%s\"}", id));
		ck_assert_msg(bt_tool_ok(res), "%s", res);
		char *next = bt_fmt("%s%s", joined, output_of(res));
		free(joined);
		joined = next;
		if (!strstr(res, "\"status\":\"running\""))
			break;
		ck_assert_msg(bt_now_ms() < until, "shell %s still running: %s", id, res);
		usleep(100 * 1000);
	}
	*all = joined;
	return res;
}

START_TEST(test_bash_background_schemas)
{
	char *json = NULL;

	ck_assert_int_eq(sbx_tools_json(ws, &json), 0);
	ck_assert_ptr_nonnull(strstr(json, "\"run_in_background\":{\"type\":\"boolean\""));
	ck_assert_ptr_nonnull(strstr(json, "killed when the command ends"));
	ck_assert_ptr_nonnull(strstr(json, "{\"name\":\"BashOutput\",\"description\":\""));
	ck_assert_ptr_nonnull(strstr(json, "\"bash_id\":{\"type\":\"string\""));
	ck_assert_ptr_nonnull(strstr(json, "\"filter\":{\"type\":\"string\""));
	ck_assert_ptr_nonnull(strstr(json, "{\"name\":\"KillShell\",\"description\":\""));
	ck_assert_ptr_nonnull(strstr(json, "\"shell_id\":{\"type\":\"string\""));
	sbx_free(json);
	expect("BashOutput", "{}", false, "\"bash_id\" is required");
	expect("BashOutput", "{\"bash_id\":\"bash_99\"}", false,
	       "no background shell with ID \"bash_99\"");
	expect("KillShell", "{\"shell_id\":\"bash_99\"}", false, "no background shell");
}
END_TEST

/* A web server and a client the workspace has: Python's where there is a python3 (every
 * host backend), else busybox's (the docker suite's image). */
struct dev_server {
	const char *serve, *fetch, *logged, *noise;
};

static struct dev_server dev_server(int port)
{
	char *res = call("Bash", "{\"command\":\"command -v python3 >/dev/null && echo py || echo bb\"}");
	bool py = strstr(output_of(res), "py") != NULL;

	free(res);
	put_file("index.html", "hello-bg\n", 0644);
	if (py)
		return (struct dev_server){
			bt_tmp("\"exec python3 -u -m http.server %d --bind 127.0.0.1\"", port),
			bt_tmp("python3 -c 'import urllib.request as u; print(u.urlopen(\\\"http://"
			       "127.0.0.1:%d/index.html\\\").read().decode())'", port),
			"\"GET /index.html HTTP/1.1\" 200", "Serving HTTP" };
	return (struct dev_server){
		bt_tmp("\"exec busybox httpd -f -vv -p 127.0.0.1:%d -h .\"", port),
		bt_tmp("busybox wget -q -O - http://127.0.0.1:%d/index.html", port),
		"url:/index.html", "response:200" };
}

/* The case: a dev server started in the background answers a later Bash call; its
 * log is read with a filter; KillShell stops it. */
START_TEST(test_bash_background_dev_server)
{
	int port = 20000 + (int)(getpid() % 20000);
	struct dev_server srv = dev_server(port);
	char *fetch = bt_fmt("%s", srv.fetch);   /* bt_tmp's buffers go round below */
	const char *id = start_bg(srv.serve);
	const char *filter = strstr(srv.logged, "GET") ? "GET /" : "url:";
	char *res, *all;

	expect("Bash", bt_tmp("{\"command\":\"for i in $(seq 200); do %s 2>/dev/null && exit 0; "
	                      "sleep 0.1; done; exit 1\"}", fetch), true, "hello-bg");
	/* The request's log line, and only lines matching the filter. */
	int64_t until = bt_now_ms() + 20000;
	all = bt_fmt("%s", "");
	while (!strstr(all, srv.logged)) {
		res = call("BashOutput", bt_tmp("{\"bash_id\":\"%s\",\"filter\":\"%s\"}", id, filter));
		ck_assert_msg(bt_tool_ok(res) && strstr(res, "\"status\":\"running\""), "%s", res);
		ck_assert_msg(strstr(output_of(res), "<status>running</status>"), "%s", res);
		char *next = bt_fmt("%s%s", all, output_of(res));
		free(all);
		all = next;
		free(res);
		ck_assert_msg(bt_now_ms() < until, "no request in the log: %s", all);
		usleep(100 * 1000);
	}
	ck_assert_msg(!strstr(all, srv.noise), "the filter let through: %s", all);
	free(all);
	res = call("KillShell", bt_tmp("{\"shell_id\":\"%s\"}", id));
	ck_assert_msg(bt_tool_ok(res), "%s", res);
	ck_assert_ptr_nonnull(strstr(output_of(res), bt_tmp("Successfully killed shell: %s", id)));
	free(res);
	res = call("BashOutput", bt_tmp("{\"bash_id\":\"%s\"}", id));
	ck_assert_msg(strstr(output_of(res), "<status>killed</status>"), "%s", res);
	free(res);
	expect("KillShell", bt_tmp("{\"shell_id\":\"%s\"}", id), false, "is not running");
	/* Nothing listens any more. */
	expect("Bash", bt_tmp("{\"command\":\"%s 2>/dev/null && echo up || echo down\"}", fetch),
	       true, "down");
	free(fetch);
}
END_TEST

START_TEST(test_bash_background_output_and_filter)
{
	const char *id = start_bg("\"printf 'a1\\\\nb2\\\\na3\\\\n'; echo oops >&2; exit 3\"");
	char *res, *all;

	res = bg_output_until_done(id, "^a|oops", &all);
	ck_assert_msg(strstr(all, "a1\n") && strstr(all, "a3\n"), "%s", all);
	ck_assert_msg(!strstr(all, "b2"), "a line the filter drops: %s", all);
	ck_assert_msg(strstr(all, "<stderr>\noops\n</stderr>"), "%s", all);
	ck_assert_msg(strstr(res, "\"status\":\"failed\"") && strstr(res, "\"exit_code\":3"), "%s",
	              res);
	ck_assert_ptr_nonnull(strstr(output_of(res), "<exit_code>3</exit_code>"));
	free(all);
	free(res);
	/* Read once: nothing new, not even the dropped line. */
	res = call("BashOutput", bt_tmp("{\"bash_id\":\"%s\"}", id));
	ck_assert_msg(!strstr(output_of(res), "<stdout>"), "%s", res);
	free(res);
	expect("BashOutput", bt_tmp("{\"bash_id\":\"%s\",\"filter\":\"(\"}", id), false,
	       "filter: invalid regular expression");
	/* A command that succeeds: completed, and it started in the session's directory. */
	expect("Bash", "{\"command\":\"mkdir -p bgdir && cd bgdir\"}", true, NULL);
	id = start_bg("\"pwd\"");
	res = bg_output_until_done(id, NULL, &all);
	ck_assert_msg(strstr(res, "\"status\":\"completed\"") && strstr(res, "\"exit_code\":0"),
	              "%s", res);
	ck_assert_msg(strstr(all, bt_tmp("%s/bgdir\n", sbx_workspace_root(ws))), "%s", all);
	free(all);
	free(res);
}
END_TEST

/* Output beyond what a shell keeps is counted, and a long read is cut and offloaded. */
START_TEST(test_bash_background_output_is_bounded)
{
	const char *id = start_bg("\"head -c 3000000 /dev/zero | tr '\\\\0' x; echo; "
	                          "touch bg.done\"");
	char *res;

	expect("Bash", "{\"command\":\"while [ ! -e bg.done ]; do sleep 0.1; done\","
	               "\"timeout\":60000}", true, NULL);
	res = call("BashOutput", bt_tmp("{\"bash_id\":\"%s\"}", id));
	ck_assert_msg(bt_tool_ok(res), "%s", res);
	ck_assert_msg(int_member(res, "dropped_stdout_bytes") > 3000001 - (1 << 20) - (1 << 18),
	              "%s", res + strlen(res) - 300);
	ck_assert_ptr_nonnull(strstr(output_of(res), "bytes of stdout were dropped before this "
	                                             "read"));
	ck_assert_ptr_nonnull(strstr(output_of(res), "... (output truncated: "));
	ck_assert_ptr_nonnull(str_member(res, "full_output_path"));
	free(res);
}
END_TEST

/* What Bash's description says: a job left with '&' is killed when the command ends. */
START_TEST(test_bash_ampersand_job_dies_with_the_command)
{
	const char *mark = bt_marker();

	expect("Bash", bt_tmp("{\"command\":\"sleep %s & echo left\"}", mark), true, "left");
	ck_assert_msg(bt_ws_wait_for_process(ws, mark, false), "sleep %s outlived its command",
	              mark);
}
END_TEST

/* Background shells count against a cap, and closing the workspace kills them. */
START_TEST(test_bash_background_cap_and_close)
{
	const char *m1 = bt_marker(), *m2 = bt_marker();
	sbx_workspace *capped;
	char *res;

	sbx_workspace_close(ws);
	ws = capped = bt_open_ok(workdir, "\"limits\":{\"background_shells\":2}");
	const char *a = start_bg(bt_tmp("\"sleep %s\"", m1));
	start_bg(bt_tmp("\"sleep %s & sleep %s; wait\"", m2, m2));
	res = call("Bash", "{\"command\":\"sleep 1\",\"run_in_background\":true}");
	ck_assert(!bt_tool_ok(res));
	ck_assert_msg(strstr(output_of(res), "2 background shells are running already") &&
	              strstr(output_of(res), "limits.background_shells"), "%s", res);
	free(res);
	ck_assert(bt_ws_wait_for_process(ws, m1, true));
	ck_assert(bt_ws_wait_for_process(ws, m2, true));
	expect("KillShell", bt_tmp("{\"shell_id\":\"%s\"}", a), true, "Successfully killed");
	ck_assert(bt_ws_wait_for_process(ws, m1, false));
	start_bg("\"sleep 0.1\"");
	/* The close takes the rest down: the sleeps, also the one in the background of the
	 * background shell, are gone from the host. */
	sbx_workspace_close(ws);
	ws = NULL;
	if (!bt_processes_hidden())
		ck_assert_msg(bt_wait_for_process(m2, false), "sleep %s outlived the close", m2);
	(void)capped;
}
END_TEST

/* A background command that kills its runner: the runner ends without a report, which is an
 * end (the shell was "running" for ever before and held its slot): BashOutput says it
 * failed, and the one slot there is takes the next shell. */
START_TEST(test_bash_background_runner_killed)
{
	char *all = NULL, *res;

	sbx_workspace_close(ws);
	ws = bt_open_ok(workdir, "\"limits\":{\"background_shells\":1}");
	char *id = bt_fmt("%s", start_bg("\"kill -9 $PPID\""));
	res = bg_output_until_done(id, NULL, &all);
	ck_assert_msg(strstr(res, "\"status\":\"failed\"") &&
	              strstr(res, "\"exit_code\":-1"), "%s", res);
	free(res);
	free(all);
	free(id);
	id = bt_fmt("%s", start_bg("\"echo next\""));
	res = bg_output_until_done(id, NULL, &all);
	free(id);
	ck_assert_msg(strstr(res, "\"status\":\"completed\""), "%s", res);
	ck_assert_msg(strstr(all, "<stdout>\nnext\n</stdout>"), "%s", all);
	free(res);
	free(all);
}
END_TEST

/* ---- Read ------------------------------------------------------------------------------ */

START_TEST(test_read_numbering_and_window)
{
	char *res;

	put_file("f.txt", "one\ntwo\nthree\nfour\n", 0644);
	res = call("Read", bt_tmp("{\"file_path\":\"%s\"}", model_path("f.txt")));
	ck_assert(bt_tool_ok(res));
	ck_assert_str_eq(output_of(res), "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour");
	ck_assert_ptr_nonnull(strstr(res, "\"total_lines\":4"));
	free(res);
	res = call("Read", "{\"file_path\":\"f.txt\",\"offset\":2,\"limit\":2}");
	ck_assert_str_eq(output_of(res), "     2\ttwo\n     3\tthree");
	ck_assert_ptr_nonnull(strstr(res, "\"truncated\":true"));
	free(res);
	expect("Read", "{\"file_path\":\"f.txt\",\"offset\":9}", true,
	       "shorter than the provided offset (9). The file has 4 lines.");
	put_file("empty", "", 0644);
	expect("Read", "{\"file_path\":\"empty\"}", true, "the contents are empty");
	put_file("crlf", "a\r\nb\r\n", 0644);
	res = call("Read", "{\"file_path\":\"crlf\"}");
	ck_assert_str_eq(output_of(res), "     1\ta\n     2\tb");
	free(res);
	put_file("latin1", "caf\xe9\n", 0644);
	res = call("Read", "{\"file_path\":\"latin1\"}");
	ck_assert_str_eq(output_of(res), "     1\tcaf\xEF\xBF\xBD");
	free(res);
}
END_TEST

START_TEST(test_read_long_lines_and_big_files)
{
	char *line = malloc(5001), *res;
	char *big;

	memset(line, 'x', 5000);
	line[5000] = '\0';
	put_file("long", line, 0644);
	res = call("Read", "{\"file_path\":\"long\"}");
	ck_assert_uint_eq(strlen(output_of(res)), 7 + 2000 + strlen("[truncated]"));
	ck_assert_ptr_nonnull(strstr(output_of(res), "x[truncated]"));
	free(res);
	free(line);
	/* 10 MB: the first 2000 lines, and the total. */
	big = malloc(200000 * 52 + 1);
	ck_assert_ptr_nonnull(big);
	for (int i = 1; i <= 200000; i++) {
		char one[64];
		ck_assert_int_eq(snprintf(one, sizeof one, "line %06d of the big file, padded to "
		                          "fifty bytes.\n", i), 52);
		memcpy(big + (size_t)(i - 1) * 52, one, 52);
	}
	put_bytes("big", big, 200000 * 52, 0644);
	free(big);
	res = call("Read", "{\"file_path\":\"big\"}");
	ck_assert(bt_tool_ok(res));
	ck_assert_ptr_nonnull(strstr(res, "\"total_lines\":200000"));
	ck_assert_ptr_nonnull(strstr(res, "\"num_lines\":2000"));
	ck_assert_ptr_nonnull(strstr(output_of(res), "  2000\tline 002000"));
	ck_assert_ptr_null(strstr(output_of(res), "line 002001"));
	free(res);
	expect("Read", "{\"file_path\":\"big\",\"offset\":199999}", true, "200000\tline 200000");
}
END_TEST

START_TEST(test_read_errors_and_escapes)
{
	expect("Read", "{\"file_path\":\"missing\"}", false, "File does not exist");
	ck_assert_int_eq(make_dir("d", 0755), 0);
	expect("Read", "{\"file_path\":\"d\"}", false, "Path is a directory, not a file");
	expect("Read", bt_tmp("{\"file_path\":\"%s\"}", sbx_workspace_root(ws)), false,
	       "Path is a directory");
	expect("Read", "{\"file_path\":\"../../etc/passwd\"}", false, "Error:");
	expect("Read", "{\"file_path\":\"/etc/passwd\"}", false, "outside the workspace");
	ck_assert_int_eq(make_link("/etc/passwd", "out"), 0);
	expect("Read", "{\"file_path\":\"out\"}", false, "Error");
	ck_assert_int_eq(make_link("../../../../../../etc/passwd", "up"), 0);
	expect("Read", "{\"file_path\":\"up\"}", false, "Error");
	/* A link inside the workspace is fine. */
	put_file("real.txt", "inside\n", 0644);
	ck_assert_int_eq(make_link("real.txt", "alias"), 0);
	expect("Read", "{\"file_path\":\"alias\"}", true, "inside");
}
END_TEST

START_TEST(test_read_image)
{
	static const unsigned char png[] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0 };
	char *res;

	put_bytes("pic.png", png, sizeof png, 0644);
	res = call("Read", "{\"file_path\":\"pic.png\"}");
	ck_assert(bt_tool_ok(res));
	ck_assert_str_eq(str_member(res, "media_type"), "image/png");
	ck_assert_str_eq(str_member(res, "data"), "iVBORw0KGgoAAA==");
	free(res);
}
END_TEST

/* ---- Write and Edit --------------------------------------------------------------------- */

START_TEST(test_write_new_and_read_before_write)
{
	char *res = call("Write", "{\"file_path\":\"dir/new.txt\",\"content\":\"a\\nb\\n\"}");

	ck_assert(bt_tool_ok(res));
	ck_assert_str_eq(output_of(res), bt_tmp("The file %s has been written successfully "
	                                        "(3 lines).", model_path("dir/new.txt")));
	ck_assert_str_eq(str_member(res, "diff"),
	                 "--- /dev/null\n+++ b/dir/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n");
	free(res);
	ck_assert_str_eq(slurp("dir/new.txt"), "a\nb\n");
	/* Its own write counts as seen: a second Write goes through. */
	expect("Write", "{\"file_path\":\"dir/new.txt\",\"content\":\"c\\n\"}", true, NULL);
	/* A file the model never read. */
	put_file("theirs.txt", "x\n", 0644);
	expect("Write", "{\"file_path\":\"theirs.txt\",\"content\":\"y\"}", false,
	       "has not been read yet");
	expect("Read", "{\"file_path\":\"theirs.txt\"}", true, NULL);
	/* Changed behind the model's back after the Read (size differs). */
	put_file("theirs.txt", "changed\n", 0644);
	expect("Write", "{\"file_path\":\"theirs.txt\",\"content\":\"y\"}", false,
	       "modified since it was last read");
	expect("Read", "{\"file_path\":\"theirs.txt\"}", true, NULL);
	expect("Write", "{\"file_path\":\"theirs.txt\",\"content\":\"y\"}", true, NULL);
	ck_assert_str_eq(slurp("theirs.txt"), "y");
	ck_assert(!has_temp_files());
	/* Reads of one session do not count for another. */
	expect("Read", "{\"file_path\":\"theirs.txt\"}", true, NULL);
	res = call_in(ws, "s2", "Write", "{\"file_path\":\"theirs.txt\",\"content\":\"z\"}");
	ck_assert(!bt_tool_ok(res));
	free(res);
	expect("Write", "{\"file_path\":\"dir\",\"content\":\"z\"}", false, "is a directory");
}
END_TEST

START_TEST(test_edit_rules)
{
	char *res;

	put_file("e.txt", "alpha beta\nalpha gamma\n", 0644);
	expect("Edit", "{\"file_path\":\"e.txt\",\"old_string\":\"beta\",\"new_string\":\"B\"}",
	       false, "you must first read it");
	expect("Read", "{\"file_path\":\"e.txt\"}", true, NULL);
	expect("Edit", "{\"file_path\":\"e.txt\",\"old_string\":\"x\",\"new_string\":\"x\"}",
	       false, "identical");
	expect("Edit", "{\"file_path\":\"e.txt\",\"old_string\":\"delta\",\"new_string\":\"D\"}",
	       false, "old_string not found in");
	expect("Edit", "{\"file_path\":\"e.txt\",\"old_string\":\"alpha\",\"new_string\":\"A\"}",
	       false, "old_string appears 2 times");
	res = call("Edit", "{\"file_path\":\"e.txt\",\"old_string\":\"beta\",\"new_string\":\"B\"}");
	ck_assert(bt_tool_ok(res));
	ck_assert_str_eq(str_member(res, "diff"), "--- a/e.txt\n+++ b/e.txt\n@@ -1,2 +1,2 @@\n"
	                 "-alpha beta\n+alpha B\n alpha gamma\n");
	free(res);
	/* Edit after Edit needs no new Read. */
	expect("Edit", "{\"file_path\":\"e.txt\",\"old_string\":\"alpha\",\"new_string\":\"A\","
	       "\"replace_all\":true}", true, "Successfully replaced all 2 occurrences");
	ck_assert_str_eq(slurp("e.txt"), "A B\nA gamma\n");
	expect("Edit", "{\"file_path\":\"missing\",\"old_string\":\"a\",\"new_string\":\"b\"}",
	       false, "File not found");
	/* A change from outside between Read and Edit. */
	sleep(0);
	put_file("e.txt", "A B\nA gamma\nmore\n", 0644);
	expect("Edit", "{\"file_path\":\"e.txt\",\"old_string\":\"more\",\"new_string\":\"m\"}",
	       false, "modified since it was last read");
}
END_TEST

START_TEST(test_edit_keeps_crlf)
{
	put_file("w.txt", "one\r\ntwo\r\n", 0644);
	expect("Read", "{\"file_path\":\"w.txt\"}", true, NULL);
	expect("Edit", "{\"file_path\":\"w.txt\",\"old_string\":\"one\\ntwo\",\"new_string\":"
	       "\"1\\n2\"}", true, NULL);
	ck_assert_str_eq(slurp("w.txt"), "1\r\n2\r\n");
}
END_TEST

START_TEST(test_writes_refused_where_protected)
{
	expect("Write", "{\"file_path\":\".agentsbx/tools/default.json\",\"content\":\"{}\"}", false,
	       "is protected");
	/* Through a link into the state folder (seen through only where the files are on the
	 * host: elsewhere the rule goes by the name, backends/docker/README.md). */
	if (bt_host_files()) {
		ck_assert_int_eq(make_link(".agentsbx", "st"), 0);
		expect("Write", "{\"file_path\":\"st/x\",\"content\":\"x\"}", false,
		       "is protected");
		ck_assert(!exists(".agentsbx/x"));
	}
	/* A link that leads out of the workspace. */
	ck_assert_int_eq(make_link("/tmp", "tmplink"), 0);
	expect("Write", "{\"file_path\":\"tmplink/sbx-escape\",\"content\":\"x\"}", false, NULL);
	ck_assert(!test_exists("/tmp/sbx-escape"));
	if (!sandboxed())
		return;
	/* The sandbox's protected paths: .git/hooks and .git/config. */
	ck_assert_int_eq(make_dir(".git", 0755), 0);
	expect("Write", "{\"file_path\":\".git/hooks/pre-commit\",\"content\":\"x\"}", false,
	       "is protected");
	expect("Write", "{\"file_path\":\".git/config\",\"content\":\"x\"}", false, "is protected");
	if (!bt_host_files())
		return;
	ck_assert_int_eq(make_link(".git", "g"), 0);
	expect("Write", "{\"file_path\":\"g/hooks/post-checkout\",\"content\":\"x\"}", false,
	       "is protected");
	ck_assert(!exists(".git/hooks/post-checkout"));
}
END_TEST

/* ---- Glob and Grep through the dispatcher ------------------------------------------------ */

START_TEST(test_glob_and_grep)
{
	ck_assert_int_eq(make_dir("src", 0755), 0);
	put_file("src/a.py", "import os\nprint('needle')\n", 0644);
	put_file("src/b.txt", "no match here\n", 0644);
	expect("Glob", "{\"pattern\":\"**/*.py\"}", true, model_path("src/a.py"));
	expect("Glob", "{\"pattern\":\"*.none\"}", true, "No files found");
	expect("Grep", "{\"pattern\":\"needle\"}", true, model_path("src/a.py"));
	expect("Grep", "{\"pattern\":\"needle\",\"output_mode\":\"content\"}", true,
	       ":2:print('needle')");
	expect("Grep", "{\"pattern\":\"(\"}", false, NULL);
	expect("Glob", "{\"pattern\":\"*\",\"path\":\"/etc\"}", false, NULL);
}
END_TEST

/* ---- approval and audit ------------------------------------------------------------------ */

struct verdicts {
	int calls;
	char last[4096];
};

static int deny_exec(void *ud, const char *request, char *reason, size_t len)
{
	struct verdicts *v = ud;

	v->calls++;
	snprintf(v->last, sizeof v->last, "%s", request);
	if (strstr(request, "\"class\":\"exec\"")) {
		snprintf(reason, len, "no commands today");
		return SBX_DENY;
	}
	return SBX_APPROVE;
}

START_TEST(test_approval_hook)
{
	struct verdicts v = { 0 };
	const char *argv[] = { "true", NULL };
	sbx_result *r = NULL;
	char *res;

	ck_assert_int_eq(sbx_set_approval_handler(ws, deny_exec, &v), 0);
	res = call("Bash", "{\"command\":\"touch made-it\"}");
	ck_assert(!bt_tool_ok(res));
	ck_assert_str_eq(output_of(res), "Permission denied: no commands today");
	free(res);
	ck_assert(!exists("made-it"));
	ck_assert_ptr_nonnull(strstr(v.last, "\"kind\":\"tool\",\"tool\":\"Bash\""));
	ck_assert_ptr_nonnull(strstr(v.last, "\"arguments\":{\"command\":\"touch made-it\"}"));
	ck_assert_int_eq(sbx_exec(ws, argv, NULL, &r), -SBX_EPERM);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "no commands today"));
	ck_assert_ptr_null(r);
	/* Reads are allowed by this handler. */
	put_file("r.txt", "fine\n", 0644);
	expect("Read", "{\"file_path\":\"r.txt\"}", true, "fine");
	ck_assert_ptr_nonnull(strstr(v.last, "\"class\":\"read\""));
	ck_assert_int_eq(sbx_set_approval_handler(ws, NULL, NULL), 0);
	ck_assert_int_eq(sbx_exec(ws, argv, NULL, &r), 0);
	sbx_result_free(r);
}
END_TEST

START_TEST(test_audit_log_redacts)
{
	const char *path = sbx_audit_path(ws);
	const char *argv[] = { "env", NULL };
	const char *env[] = { "OPENAI_API_KEY=hunter2hunter2", NULL };
	sbx_exec_opts o = { .size = sizeof o, .env = env };
	sbx_result *r = NULL;
	char *log;

	ck_assert_ptr_nonnull(path);
	/* In the state folder outside the workdir where the files are on the host; in the
	 * workspace's own .agentsbx elsewhere (a docker volume). */
	if (bt_host_files())
		ck_assert_str_eq(path, bt_tmp("%s/audit.jsonl", test_state_dir(workdir)));
	else
		ck_assert_str_eq(path, bt_tmp("%s/.agentsbx/audit.jsonl", workdir));
	expect("Bash", "{\"command\":\"echo sk-abcdefghijklmnopqrstuvwx; echo password=swordfish\"}",
	       true, NULL);
	ck_assert_int_eq(sbx_exec(ws, argv, &o, &r), 0);
	sbx_result_free(r);
	log = test_slurp(path);
	ck_assert_ptr_nonnull(log);
	ck_assert_ptr_nonnull(strstr(log, "\"kind\":\"tool\",\"tool\":\"Bash\""));
	ck_assert_ptr_nonnull(strstr(log, "\"kind\":\"exec\",\"argv\":[\"env\"]"));
	ck_assert_ptr_nonnull(strstr(log, "\"result\":\"ok\""));
	ck_assert_ptr_null(strstr(log, "abcdefghijklmnopqrstuvwx"));
	ck_assert_ptr_null(strstr(log, "swordfish"));
	ck_assert_ptr_null(strstr(log, "hunter2"));
	ck_assert_ptr_nonnull(strstr(log, "[REDACTED]"));
}
END_TEST

START_TEST(test_audit_configured_secret_and_rotation)
{
	sbx_workspace_close(ws);
	ws = bt_open_ok(workdir, "\"audit\":{\"max_bytes\":4096,\"keep\":2,"
	                         "\"redact\":[\"corp-internal-42\"]}");
	for (int i = 0; i < 40; i++)
		expect("Bash", "{\"command\":\"echo corp-internal-42 > /dev/null\"}", true, NULL);
	ck_assert(audit_exists("audit.jsonl"));
	ck_assert(audit_exists("audit.jsonl.1"));
	ck_assert(audit_exists("audit.jsonl.2"));
	ck_assert(!audit_exists("audit.jsonl.3"));
	ck_assert_ptr_null(strstr(bt_host_files()
	                          ? test_slurp(test_path_at(test_state_dir(workdir), "audit.jsonl"))
	                          : slurp(".agentsbx/audit.jsonl"), "corp-internal-42"));
	sbx_workspace_close(ws);
	ws = bt_open_ok(workdir, "\"audit\":{\"enabled\":false}");
	ck_assert_ptr_null(sbx_audit_path(ws));
}
END_TEST

START_TEST(test_read_only_workspace)
{
	sbx_workspace *ro = NULL;
	char *res;
	int r;

	put_file("keep.txt", "original\n", 0644);
	r = bt_open(workdir, "\"mode\":\"read-only\"", &ro);
	if (!sandboxed()) {
		ck_assert_int_eq(r, -SBX_ECONFIG);
		ck_assert_ptr_nonnull(strstr(sbx_last_error(), "'mode'"));
		return;
	}
	ck_assert_msg(r == 0, "%s", sbx_last_error());
	res = call_in(ro, NULL, "Read", "{\"file_path\":\"keep.txt\"}");
	ck_assert(bt_tool_ok(res));
	free(res);
	res = call_in(ro, NULL, "Write", "{\"file_path\":\"keep.txt\",\"content\":\"x\"}");
	ck_assert(!bt_tool_ok(res));
	ck_assert_ptr_nonnull(strstr(output_of(res), "read-only"));
	free(res);
	res = call_in(ro, NULL, "Bash", "{\"command\":\"echo x > keep.txt\"}");
	ck_assert(!bt_tool_ok(res));
	free(res);
	/* Long output: nowhere to offload it, and the result says so. */
	res = call_in(ro, NULL, "Bash", "{\"command\":\"seq 1 20000\"}");
	ck_assert(bt_tool_ok(res));
	ck_assert_msg(strstr(output_of(res), "... (output truncated: ") &&
	              strstr(output_of(res), "The full output could not be kept in a file"), "%s",
	              output_of(res) + 29000);
	ck_assert_ptr_null(strstr(res, "full_output_path"));
	free(res);
	ck_assert_int_eq(sbx_file_write(ro, "new.txt", "x", 1, 0, 0), -SBX_EPERM);
	ck_assert_int_eq(sbx_file_remove(ro, "keep.txt", 0), -SBX_EPERM);
	ck_assert_int_eq(sbx_file_mkdir(ro, "d", 0), -SBX_EPERM);
	ck_assert_str_eq(slurp("keep.txt"), "original\n");
	sbx_workspace_close(ro);
}
END_TEST

START_TEST(test_instructions)
{
	char *text = NULL;

	ck_assert_int_eq(sbx_workspace_instructions(ws, &text), 0);
	ck_assert_ptr_nonnull(strstr(text, "<workspace>"));
	ck_assert_ptr_nonnull(strstr(text, bt_tmp("workspace at %s.", sbx_workspace_root(ws))));
	ck_assert_ptr_null(strstr(text, "<agent-skills>"));
	sbx_free(text);
}
END_TEST

static Suite *tools_suite(void)
{
	Suite *s = suite_create("tools");
	TCase *t = tcase_create("tools");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 120);
	tcase_add_test(t, test_schemas);
	tcase_add_test(t, test_bad_arguments);
	tcase_add_test(t, test_huge_arguments);
	tcase_add_test(t, test_bash_output_and_failure);
	tcase_add_test(t, test_bash_truncation_says_what_was_cut);
	tcase_add_test(t, test_bash_short_output_is_whole);
	tcase_add_test(t, test_bash_cwd_persists_per_session);
	/* Where the files are not on the host (a docker volume workspace): the audit log and
	 * a session outliving an ephemeral handle need a host directory, a second handle on
	 * the same id would replace the first one's container (backends/docker/README.md). */
	if (bt_host_files())
		tcase_add_test(t, test_session_survives_the_handle);
	tcase_add_test(t, test_bash_timeout_kills_the_tree);
	tcase_add_test(t, test_bash_background_schemas);
	tcase_add_test(t, test_bash_ampersand_job_dies_with_the_command);
	tcase_add_test(t, test_bash_background_dev_server);
	tcase_add_test(t, test_bash_background_output_and_filter);
	tcase_add_test(t, test_bash_background_output_is_bounded);
	if (bt_host_files())
		tcase_add_test(t, test_bash_background_cap_and_close);
	tcase_add_test(t, test_bash_background_runner_killed);
	tcase_add_test(t, test_read_numbering_and_window);
	tcase_add_test(t, test_read_long_lines_and_big_files);
	tcase_add_test(t, test_read_errors_and_escapes);
	tcase_add_test(t, test_read_image);
	tcase_add_test(t, test_write_new_and_read_before_write);
	tcase_add_test(t, test_edit_rules);
	tcase_add_test(t, test_edit_keeps_crlf);
	tcase_add_test(t, test_writes_refused_where_protected);
	tcase_add_test(t, test_glob_and_grep);
	tcase_add_test(t, test_approval_hook);
	if (bt_host_files())
		tcase_add_test(t, test_audit_log_redacts);
	if (bt_host_files())
		tcase_add_test(t, test_audit_configured_secret_and_rotation);
	if (bt_host_files())
		tcase_add_test(t, test_read_only_workspace);
	tcase_add_test(t, test_instructions);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return bt_main(tools_suite);
}
