/* The two names of a workspace's files (issue 17): the file primitives (sbx_file_*) and the
 * tools (Read, Write, Edit, Glob, Grep) take a path as the workspace's commands see it
 * (sbx_workspace_root(): "/workspace/a.txt" in a sandbox) and as the host sees it (the
 * workdir: "/home/me/proj/a.txt") alike, on every backend whose files live in a host
 * directory; anything else is still outside the workspace. Runs on local, ns, bwrap and
 * docker. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "backend_support.h"
#include "support.h"

static char *workdir;
static char host[PATH_MAX];     /* the workdir as the host names it (links resolved) */
static sbx_workspace *ws;

static void setup(void)
{
	bt_open_case_workspace(&workdir, &ws);
	ck_assert_ptr_nonnull(realpath(workdir, host));
}

static void teardown(void)
{
	bt_close_case_workspace(&ws);
}

static const char *in_root(const char *rel)
{
	return bt_tmp("%s/%s", sbx_workspace_root(ws), rel);
}

static const char *on_host(const char *rel)
{
	return bt_tmp("%s/%s", host, rel);
}

static char *read_all(const char *path)
{
	char *data = NULL, *copy;
	size_t len = 0;
	int r = sbx_file_read(ws, path, &data, &len);

	ck_assert_msg(r == 0, "read %s: %d %s", path, r, sbx_last_error());
	copy = strndup(data, len);
	sbx_free(data);
	return copy;
}

START_TEST(test_file_api_takes_both_forms)
{
	sbx_stat st = SBX_STAT_INIT;
	char *text, *list = NULL;

	ck_assert_msg(sbx_file_write(ws, on_host("a.txt"), "host form\n", 10, 0, 0) == 0, "%s",
	              sbx_last_error());
	text = read_all(in_root("a.txt"));
	ck_assert_str_eq(text, "host form\n");
	free(text);
	text = read_all("a.txt");
	ck_assert_str_eq(text, "host form\n");
	free(text);
	ck_assert_int_eq(sbx_file_mkdir(ws, on_host("dir"), 0755), 0);
	ck_assert_int_eq(sbx_file_write(ws, in_root("dir/b.txt"), "b", 1, 0, 0), 0);
	ck_assert_int_eq(sbx_file_stat(ws, on_host("dir/b.txt"), &st), 0);
	ck_assert_int_eq(st.file_size, 1);
	ck_assert_int_eq(sbx_file_list(ws, on_host("dir"), &list), 0);
	ck_assert_msg(strstr(list, "b.txt"), "%s", list);
	sbx_free(list);
	ck_assert_int_eq(sbx_file_remove(ws, on_host("dir/b.txt"), 0), 0);
	ck_assert(!test_exists(test_path_at(host, "dir/b.txt")));
	/* The host file is the one the command sees. */
	text = bt_shell_out(ws, "cat a.txt");
	ck_assert_str_eq(text, "host form\n");
	free(text);
}
END_TEST

/* A path in neither form is refused as before, and the message names both roots. */
START_TEST(test_other_paths_stay_outside)
{
	char *data = NULL;
	size_t len = 0;
	int r = sbx_file_read(ws, "/etc/passwd", &data, &len);

	ck_assert_int_eq(r, -SBX_EESCAPE);
	ck_assert_msg(strstr(sbx_last_error(), "outside the workspace"), "%s", sbx_last_error());
	/* A sibling whose name starts like the workdir's is not inside it. */
	r = sbx_file_read(ws, bt_tmp("%s-other/x", host), &data, &len);
	ck_assert_int_eq(r, -SBX_EESCAPE);
}
END_TEST

static char *tool(const char *name, const char *args)
{
	char *res = NULL;
	int r = sbx_tool_call(ws, name, args, &res);

	ck_assert_msg(r == 0, "%s %s: %d %s", name, args, r, sbx_last_error());
	ck_assert_msg(bt_tool_ok(res), "%s %s failed: %s", name, args, res);
	return res;
}

START_TEST(test_tools_take_both_forms)
{
	char *res, *out;

	free(tool("Write", bt_tmp("{\"file_path\":\"%s\",\"content\":\"alpha\\nbeta\\n\"}",
	                          on_host("src/t.txt"))));
	res = tool("Read", bt_tmp("{\"file_path\":\"%s\"}", in_root("src/t.txt")));
	ck_assert_msg(strstr(res, "alpha"), "%s", res);
	free(res);
	res = tool("Read", bt_tmp("{\"file_path\":\"%s\"}", on_host("src/t.txt")));
	ck_assert_msg(strstr(res, "beta"), "%s", res);
	free(res);
	free(tool("Edit", bt_tmp("{\"file_path\":\"%s\",\"old_string\":\"beta\","
	                         "\"new_string\":\"gamma\"}", on_host("src/t.txt"))));
	ck_assert_str_eq(test_slurp(test_path_at(host, "src/t.txt")), "alpha\ngamma\n");
	res = tool("Glob", bt_tmp("{\"pattern\":\"*.txt\",\"path\":\"%s\"}", on_host("src")));
	out = bt_string_member(res, "output");
	ck_assert_msg(strstr(out, "t.txt"), "%s", res);
	free(out);
	free(res);
	res = tool("Glob", bt_tmp("{\"pattern\":\"%s\"}", on_host("src/*.txt")));
	ck_assert_msg(strstr(res, "t.txt"), "%s", res);
	free(res);
	res = tool("Grep", bt_tmp("{\"pattern\":\"gam+a\",\"path\":\"%s\"}", on_host("src")));
	ck_assert_msg(strstr(res, "t.txt"), "%s", res);
	free(res);
	res = tool("Grep", bt_tmp("{\"pattern\":\"alpha\",\"path\":\"%s\","
	                          "\"output_mode\":\"content\"}", in_root("src/t.txt")));
	ck_assert_msg(strstr(res, "alpha"), "%s", res);
	free(res);
	/* Outside both: a tool error for the model, naming the path. */
	res = NULL;
	ck_assert_int_eq(sbx_tool_call(ws, "Read", "{\"file_path\":\"/etc/hostname\"}", &res), 0);
	ck_assert_msg(!bt_tool_ok(res) && strstr(res, "outside the workspace"), "%s", res);
	sbx_free(res);
}
END_TEST

/* workdir_mount is the sandbox backends' (ns, bwrap: test_ns_layout.c); docker, whose
 * /workspace is the container's, refuses it naming the key rather than ignore it. */
START_TEST(test_docker_refuses_workdir_mount)
{
	sbx_workspace *w = NULL;
	char *cfg;

	if (strcmp(bt_backend(), "docker"))
		return;
	cfg = bt_fmt("{\"backend\":\"docker\",\"workdir\":\"%s\",\"docker\":{\"image\":"
	             "\"%s\",\"workdir_mount\":\"host\"}}", host, bt_docker_image());
	ck_assert_int_eq(sbx_workspace_open(cfg, &w), -SBX_ECONFIG);
	ck_assert_msg(strstr(sbx_last_error(), "docker.workdir_mount"), "%s", sbx_last_error());
	free(cfg);
}
END_TEST

static Suite *paths_suite(void)
{
	Suite *s = suite_create(bt_tmp("paths-%s", bt_backend()));
	TCase *tc = tcase_create("forms");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_file_api_takes_both_forms);
	tcase_add_test(tc, test_other_paths_stay_outside);
	tcase_add_test(tc, test_tools_take_both_forms);
	tcase_add_test(tc, test_docker_refuses_workdir_mount);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return bt_main(paths_suite);
}
