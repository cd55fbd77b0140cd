/* The workspace lifecycle through the public API: open, id, root, reset, close, and the
 * errors a caller sees for bad configurations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "support.h"

START_TEST(test_versions)
{
	ck_assert_int_eq(sbx_abi_version(), SBX_ABI_VERSION);
	/* One version: the library this program runs with is the one its headers describe. */
	ck_assert_str_eq(sbx_version(), SBX_VERSION_STRING);
	ck_assert_int_eq(sbx_version_number(), SBX_VERSION_NUMBER);
	ck_assert(SBX_VERSION_CHECK(1, 6, 0));
	ck_assert(SBX_VERSION_CHECK(SBX_VERSION_MAJOR, SBX_VERSION_MINOR, SBX_VERSION_PATCH));
	ck_assert(!SBX_VERSION_CHECK(SBX_VERSION_MAJOR, SBX_VERSION_MINOR, SBX_VERSION_PATCH + 1));
	ck_assert_str_eq(sbx_strerror(-SBX_EESCAPE), "path escapes the workspace");
	ck_assert_str_eq(sbx_strerror(SBX_ENOENT), "no such file, backend or object");
}
END_TEST

/* A caller built against newer headers that sets a field this library does not know is
 * refused naming the struct, not opened with the setting dropped; left zero, it is fine. */
START_TEST(test_open_opts_from_newer_headers)
{
	struct newer_open_opts {
		sbx_open_opts known;
		int added_later;
	} opts;
	sbx_workspace *ws = NULL;

	memset(&opts, 0, sizeof opts);
	opts.known.size = sizeof opts;
	opts.added_later = 1;
	ck_assert_int_eq(sbx_workspace_open_with("{\"backend\":\"local\"}", &opts.known, &ws),
	                 -SBX_EINVAL);
	ck_assert_ptr_null(ws);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "sbx_open_opts"));
	opts.added_later = 0;
	ck_assert_int_eq(sbx_workspace_open_with("{\"backend\":\"local\"}", &opts.known, &ws), 0);
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
}
END_TEST

START_TEST(test_temporary_workdir_lives_until_close)
{
	sbx_workspace *ws = NULL;
	struct stat st;
	char *root;

	ck_assert_int_eq(sbx_workspace_open("{\"backend\":\"local\"}", &ws), 0);
	ck_assert_str_eq(sbx_workspace_backend(ws), "local");
	ck_assert_uint_eq(strlen(sbx_workspace_id(ws)), 16);
	root = strdup(sbx_workspace_root(ws));
	ck_assert_int_eq(stat(root, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	ck_assert_int_eq(sbx_file_write(ws, "a/b.txt", "x", 1, 0, SBX_WRITE_MKDIRS), 0);
	ck_assert_int_eq(sbx_workspace_reset(ws), 0);
	ck_assert_int_eq(access(root, F_OK), 0);
	ck_assert_int_eq(sbx_file_stat(ws, "a", &(sbx_stat){ .size = sizeof(sbx_stat) }),
	                 -SBX_ENOENT);
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
	ck_assert_int_eq(access(root, F_OK), -1);
	free(root);
}
END_TEST

START_TEST(test_host_workdir_persists)
{
	char *dir = test_mkdtemp(), *cfg = NULL, *data = NULL;
	sbx_workspace *ws = NULL;
	size_t len;

	ck_assert_int_ge(asprintf(&cfg, "{\"backend\":\"local\",\"workdir\":\"%s/sub/dir\","
	                                "\"id\":\"keep-me\"}", dir), 0);
	ck_assert_int_eq(sbx_workspace_open(cfg, &ws), 0);
	ck_assert_str_eq(sbx_workspace_id(ws), "keep-me");
	ck_assert_int_eq(sbx_file_write(ws, "f", "persist", 7, 0, 0), 0);
	ck_assert_int_eq(sbx_workspace_reset(ws), 0);
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
	ck_assert_int_eq(sbx_workspace_open(cfg, &ws), 0);
	ck_assert_int_eq(sbx_file_read(ws, "f", &data, &len), 0);
	ck_assert_str_eq(data, "persist");
	sbx_free(data);
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
	test_rm_rf(dir);
	free(dir);
	free(cfg);
}
END_TEST

struct bad_config {
	const char *json;
	int code;
	const char *message;   /* a fragment the error must contain */
};

static const struct bad_config bad_configs[] = {
	{ "{", -SBX_ECONFIG, "invalid JSON" },
	{ "[]", -SBX_ECONFIG, "object" },
	{ "{\"bogus\":1}", -SBX_ECONFIG, "unknown key 'bogus'" },
	{ "{\"timeout_ms\":\"5\"}", -SBX_ECONFIG, "'timeout_ms'" },
	{ "{\"timeout_ms\":-1}", -SBX_ECONFIG, "'timeout_ms'" },
	{ "{\"timeout_ms\":1e400}", -SBX_ECONFIG, "'timeout_ms'" },
	{ "{\"limits\":{\"pids\":0}}", -SBX_ECONFIG, "'limits.pids'" },
	{ "{\"env\":{\"A\":\"x\\u0000y\"}}", -SBX_ECONFIG, "'env.A'" },
	{ "{\"id\":\"../x\"}", -SBX_ECONFIG, "'id'" },
	{ "{\"backend\":\"local\",\"network\":{\"mode\":\"none\"}}", -SBX_ECONFIG, "'none'" },
	{ "{\"network\":{\"mode\":\"sometimes\"}}", -SBX_ECONFIG, "'network.mode'" },
	{ "{\"docker\":5}", -SBX_ECONFIG, "'docker'" },
	{ "{\"backend\":\"nosuch\"}", -SBX_EBACKEND, "unknown backend" },
};

START_TEST(test_bad_configs_name_the_key)
{
	const struct bad_config *bc = &bad_configs[_i];
	sbx_workspace *ws = (sbx_workspace *)0x1;

	ck_assert_int_eq(sbx_workspace_open(bc->json, &ws), bc->code);
	ck_assert_ptr_null(ws);
	if (!strstr(sbx_last_error(), bc->message))
		ck_abort_msg("config %s: message '%s' lacks '%s'", bc->json, sbx_last_error(),
		             bc->message);
}
END_TEST

START_TEST(test_null_arguments)
{
	ck_assert_int_eq(sbx_workspace_open("{}", NULL), -SBX_EINVAL);
	ck_assert_int_eq(sbx_workspace_close(NULL), 0);
	ck_assert_int_eq(sbx_workspace_reset(NULL), -SBX_EINVAL);
	ck_assert_ptr_null(sbx_workspace_id(NULL));
	ck_assert_ptr_null(sbx_workspace_root(NULL));
	sbx_free(NULL);
	sbx_result_free(NULL);
	sbx_process_free(NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("workspace");
	TCase *tc = tcase_create("workspace");

	tcase_add_test(tc, test_versions);
	tcase_add_test(tc, test_open_opts_from_newer_headers);
	tcase_add_test(tc, test_temporary_workdir_lives_until_close);
	tcase_add_test(tc, test_host_workdir_persists);
	tcase_add_loop_test(tc, test_bad_configs_name_the_key, 0,
	                    (int)(sizeof bad_configs / sizeof bad_configs[0]));
	tcase_add_test(tc, test_null_arguments);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
