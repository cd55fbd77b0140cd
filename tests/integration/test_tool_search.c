/* Glob and Grep through sbx_tool_call on the backend SBX_TEST_BACKEND names: where they search
 * when the model names no path (the session's current working directory, as Claude Code's
 * tools do, not always the root), and Grep's one name per option in the schema the model
 * sees, with the reference's old spellings still accepted. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>

#include "backend_support.h"

static char *workdir;
static sbx_workspace *ws;

static void setup(void)
{
	bt_open_case_workspace(&workdir, &ws);
	bt_put(ws, "top.txt", "hello top\n", 0);
	ck_assert_int_eq(sbx_file_mkdir(ws, "a", 0), 0);
	ck_assert_int_eq(sbx_file_mkdir(ws, "b", 0), 0);
	bt_put(ws, "a/in-a.txt", "hello a\nBETA\n", 0);
	bt_put(ws, "b/in-b.txt", "hello b\n", 0);
}

static void teardown(void)
{
	bt_close_case_workspace(&ws);
}

/* The output of a tool call in session s that must succeed. Caller frees. */
static char *tool_out(const char *s, const char *tool, const char *args)
{
	char *res = NULL, *out;

	ck_assert_int_eq(sbx_tool_call_session(ws, s, tool, args, &res), 0);
	ck_assert_msg(bt_tool_ok(res), "%s %s: %s", tool, args, res);
	out = bt_string_member(res, "output");
	sbx_free(res);
	return out;
}

static const char *inside(const char *rel)
{
	return bt_tmp("%s/%s", sbx_workspace_root(ws), rel);
}

START_TEST(search_defaults_to_the_bash_cwd)
{
	char *out;

	free(tool_out("s1", "Bash", "{\"command\":\"cd a\"}"));
	out = tool_out("s1", "Glob", "{\"pattern\":\"*.txt\"}");
	ck_assert_str_eq(out, inside("a/in-a.txt"));
	free(out);
	out = tool_out("s1", "Grep", "{\"pattern\":\"hello\"}");
	ck_assert_str_eq(out, inside("a/in-a.txt"));
	free(out);
	out = tool_out("s1", "Grep", "{\"pattern\":\"hello\",\"path\":\"\"}");
	ck_assert_str_eq(out, inside("a/in-a.txt"));
	free(out);
	/* A relative path is the root's, as for the other tools; an absolute one is itself. */
	out = tool_out("s1", "Glob", "{\"pattern\":\"*.txt\",\"path\":\"b\"}");
	ck_assert_str_eq(out, inside("b/in-b.txt"));
	free(out);
	out = tool_out("s1", "Glob", bt_tmp("{\"pattern\":\"%s\"}", inside("b/*.txt")));
	ck_assert_str_eq(out, inside("b/in-b.txt"));
	free(out);
	out = tool_out("s1", "Grep", bt_tmp("{\"pattern\":\"hello\",\"path\":\"%s\"}",
	                                    sbx_workspace_root(ws)));
	ck_assert_str_eq(out, bt_tmp("%s\n%s\n%s", inside("a/in-a.txt"), inside("b/in-b.txt"),
	                             inside("top.txt")));
	free(out);
	/* Another session has its own directory: the root. */
	out = tool_out("s2", "Glob", "{\"pattern\":\"*.txt\"}");
	ck_assert_str_eq(out, inside("top.txt"));
	free(out);
	/* Back at the root, the root again. */
	free(tool_out("s1", "Bash", "{\"command\":\"cd ..\"}"));
	out = tool_out("s1", "Glob", "{\"pattern\":\"*.txt\"}");
	ck_assert_str_eq(out, inside("top.txt"));
	free(out);
}
END_TEST

/* A working directory removed since: the search falls back to the root, as Bash does. */
START_TEST(search_after_the_cwd_is_gone)
{
	char *out;

	free(tool_out("s1", "Bash", "{\"command\":\"cd b\"}"));
	ck_assert_int_eq(sbx_file_remove(ws, "b", SBX_REMOVE_RECURSIVE), 0);
	out = tool_out("s1", "Glob", "{\"pattern\":\"*.txt\"}");
	ck_assert_str_eq(out, inside("top.txt"));
	free(out);
	out = tool_out("s1", "Grep", "{\"pattern\":\"hello\",\"output_mode\":\"count\"}");
	ck_assert_str_eq(out, bt_tmp("%s:1\n%s:1", inside("a/in-a.txt"), inside("top.txt")));
	free(out);
}
END_TEST

/* The Grep definition in sbx_tools_json (its input_schema), as the model gets it. */
static char *grep_schema(void)
{
	char *all = NULL, *schema;
	const char *p, *end;

	ck_assert_int_eq(sbx_tools_json(ws, &all), 0);
	p = strstr(all, "{\"name\":\"Grep\"");
	ck_assert_ptr_nonnull(p);
	p = strstr(p, "\"input_schema\":");
	ck_assert_ptr_nonnull(p);
	end = strstr(p, "\"additionalProperties\"");
	ck_assert_ptr_nonnull(end);
	schema = strndup(p, (size_t)(end - p));
	sbx_free(all);
	return schema;
}

START_TEST(grep_offers_one_name_per_option)
{
	char *schema = grep_schema(), *out;

	ck_assert_msg(strstr(schema, "\"-i\":{"), "%s", schema);
	ck_assert_msg(strstr(schema, "\"-n\":{"), "%s", schema);
	ck_assert_msg(!strstr(schema, "\"i\":{"), "%s", schema);
	ck_assert_msg(!strstr(schema, "\"case_insensitive\":{"), "%s", schema);
	ck_assert_msg(!strstr(schema, "\"n\":{"), "%s", schema);
	ck_assert_msg(strstr(schema, "current working directory"), "%s", schema);
	free(schema);
	/* The old spellings still work for callers that send them. */
	out = tool_out(NULL, "Grep", "{\"pattern\":\"beta\",\"-i\":true}");
	ck_assert_str_eq(out, inside("a/in-a.txt"));
	free(out);
	out = tool_out(NULL, "Grep", "{\"pattern\":\"beta\",\"i\":true}");
	ck_assert_str_eq(out, inside("a/in-a.txt"));
	free(out);
	out = tool_out(NULL, "Grep", "{\"pattern\":\"beta\",\"case_insensitive\":true}");
	ck_assert_str_eq(out, inside("a/in-a.txt"));
	free(out);
	out = tool_out(NULL, "Grep", "{\"pattern\":\"BETA\",\"output_mode\":\"content\","
	                             "\"n\":false}");
	ck_assert_str_eq(out, bt_tmp("%s:BETA", inside("a/in-a.txt")));
	free(out);
	/* Given twice, the schema's name decides. */
	out = tool_out(NULL, "Grep", "{\"pattern\":\"beta\",\"-i\":false,\"i\":true}");
	ck_assert_str_eq(out, "No matches found for pattern: beta");
	free(out);
}
END_TEST

static Suite *tool_search_suite(void)
{
	Suite *s = suite_create(bt_tmp("tool-search-%s", bt_backend()));
	TCase *tc = tcase_create("search");

	tcase_set_timeout(tc, 300);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, search_defaults_to_the_bash_cwd);
	tcase_add_test(tc, search_after_the_cwd_is_gone);
	tcase_add_test(tc, grep_offers_one_name_per_option);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return bt_main(tool_search_suite);
}
