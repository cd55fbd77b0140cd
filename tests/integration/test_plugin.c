/* Backend plugins through the public API: one loads from SBX_BACKEND_PATH and runs commands;
 * one built for another ABI and one that lies about its name are refused with clear errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include <agentsbx/backend.h>
#include "support.h"

static void use_test_plugins(void)
{
	setenv("SBX_BACKEND_PATH", getenv("SBX_TEST_PLUGIN_DIR"), 1);
}

START_TEST(test_plugin_runs_commands)
{
	sbx_workspace *ws = NULL;
	sbx_result *res = NULL;
	const char *argv[] = { "sh", "-c", "echo plugged; pwd", NULL };
	char *dir = test_mkdtemp(), *cfg = NULL, *expect = NULL;

	use_test_plugins();
	ck_assert_int_ge(asprintf(&cfg, "{\"backend\":\"testplug\",\"workdir\":\"%s\"}", dir), 0);
	ck_assert_int_eq(sbx_workspace_open(cfg, &ws), 0);
	ck_assert_str_eq(sbx_workspace_backend(ws), "testplug");
	ck_assert_int_eq(sbx_exec(ws, argv, NULL, &res), 0);
	ck_assert_int_eq(sbx_result_exit_code(res), 0);
	ck_assert_int_ge(asprintf(&expect, "plugged\n%s\n", dir), 0);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), expect);
	sbx_result_free(res);
	/* The core serves file operations for HOST_FILES plugins. */
	ck_assert_int_eq(sbx_file_write(ws, "note.txt", "hi", 2, 0, 0), 0);
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
	test_rm_rf(dir);
	free(dir);
	free(cfg);
	free(expect);
}
END_TEST

/* A backend without SBX_BACKEND_CAP_PTY (this plugin's table predates it) gets no terminal
 * request: the core refuses it, naming the option. */
START_TEST(test_pty_on_a_backend_without_terminals_is_refused)
{
	sbx_workspace *ws = NULL;
	sbx_process *p = NULL;
	const char *argv[] = { "sh", "-c", "tty", NULL };
	sbx_spawn_opts o = { .size = sizeof o, .pty = 1 };
	char *dir = test_mkdtemp(), *cfg = NULL;

	use_test_plugins();
	ck_assert_int_ge(asprintf(&cfg, "{\"backend\":\"testplug\",\"workdir\":\"%s\"}", dir), 0);
	ck_assert_int_eq(sbx_workspace_open(cfg, &ws), 0);
	ck_assert_int_eq(sbx_process_spawn(ws, argv, &o, &p), -SBX_ENOSYS);
	ck_assert_ptr_null(p);
	ck_assert_msg(strstr(sbx_last_error(), "opts.pty") &&
	              strstr(sbx_last_error(), "testplug"), "%s", sbx_last_error());
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
	test_rm_rf(dir);
	free(dir);
	free(cfg);
}
END_TEST

START_TEST(test_wrong_abi_is_refused)
{
	sbx_workspace *ws = NULL;

	use_test_plugins();
	ck_assert_int_eq(sbx_workspace_open("{\"backend\":\"badabi\"}", &ws), -SBX_EABI);
	ck_assert_ptr_null(ws);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "badabi.so"));
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "ABI version 2"));
}
END_TEST

START_TEST(test_misnamed_plugin_is_refused)
{
	sbx_workspace *ws = NULL;

	use_test_plugins();
	ck_assert_int_eq(sbx_workspace_open("{\"backend\":\"misnamed\"}", &ws), -SBX_EBACKEND);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "calls itself 'local'"));
}
END_TEST

START_TEST(test_unknown_backend)
{
	sbx_workspace *ws = NULL;

	use_test_plugins();
	ck_assert_int_eq(sbx_workspace_open("{\"backend\":\"nosuch\"}", &ws), -SBX_EBACKEND);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "unknown backend 'nosuch'"));
}
END_TEST

START_TEST(test_probe_lists_plugins_and_failures)
{
	char *json = NULL;

	use_test_plugins();
	ck_assert_int_eq(sbx_backends_probe(&json), 0);
	ck_assert_ptr_nonnull(strstr(json, "{\"backend\":\"local\""));
	ck_assert_ptr_nonnull(strstr(json, "{\"backend\":\"testplug\",\"available\":true"));
	ck_assert_ptr_nonnull(strstr(json, "{\"backend\":\"badabi\",\"available\":false"));
	sbx_free(json);
}
END_TEST

static int dummy_open(const sbx_backend_config *c, void **s)
{
	(void)c;
	(void)s;
	return -SBX_EIO;
}

START_TEST(test_register_validates_tables)
{
	sbx_backend_ops ops = { .size = sizeof ops, .abi_version = 7, .name = "inproc" };

	ck_assert_int_eq(sbx_backend_register(NULL), -SBX_EINVAL);
	ck_assert_int_eq(sbx_backend_register(&ops), -SBX_EABI);
	ops.abi_version = SBX_BACKEND_ABI_VERSION;
	ck_assert_int_eq(sbx_backend_register(&ops), -SBX_EINVAL);   /* no operations */
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "required operation"));
	ops.open = dummy_open;
	ops.name = "Bad Name";
	ck_assert_int_eq(sbx_backend_register(&ops), -SBX_EINVAL);
	ops.name = "local";
	ck_assert_int_eq(sbx_backend_register(&ops), -SBX_EINVAL);   /* still incomplete */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("plugin");
	TCase *tc = tcase_create("plugin");

	tcase_add_test(tc, test_plugin_runs_commands);
	tcase_add_test(tc, test_pty_on_a_backend_without_terminals_is_refused);
	tcase_add_test(tc, test_wrong_abi_is_refused);
	tcase_add_test(tc, test_misnamed_plugin_is_refused);
	tcase_add_test(tc, test_unknown_backend);
	tcase_add_test(tc, test_probe_lists_plugins_and_failures);
	tcase_add_test(tc, test_register_validates_tables);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
