/* Environment composition: base, overrides, removal, clearing and refusal of bad entries. */
#include <string.h>

#include "internal.h"
#include "support.h"

static char *base[] = { "PATH=/bin", "HOME=/w", "KEEP=1", NULL };

static size_t count(char **v)
{
	size_t n = 0;

	while (v[n])
		n++;
	return n;
}

START_TEST(test_override_add_and_remove)
{
	const char *over[] = { "HOME=/other", "NEW=x=y", "KEEP", "GONE", NULL };
	char **env = NULL;

	ck_assert_int_eq(sbx_env_compose(base, over, false, &env), 0);
	ck_assert_uint_eq(count(env), 3);
	ck_assert_str_eq(env[0], "PATH=/bin");
	ck_assert_str_eq(env[1], "HOME=/other");
	ck_assert_str_eq(env[2], "NEW=x=y");
	sbx_strv_free(env);
}
END_TEST

START_TEST(test_clear_keeps_only_overrides)
{
	const char *over[] = { "ONLY=1", NULL };
	char **env = NULL;

	ck_assert_int_eq(sbx_env_compose(base, over, true, &env), 0);
	ck_assert_uint_eq(count(env), 1);
	ck_assert_str_eq(env[0], "ONLY=1");
	sbx_strv_free(env);
	ck_assert_int_eq(sbx_env_compose(base, NULL, true, &env), 0);
	ck_assert_uint_eq(count(env), 0);
	sbx_strv_free(env);
}
END_TEST

START_TEST(test_duplicates_collapse_last_wins)
{
	const char *over[] = { "A=1", "A=2", NULL };
	char **env = NULL;

	ck_assert_int_eq(sbx_env_compose(NULL, over, false, &env), 0);
	ck_assert_uint_eq(count(env), 1);
	ck_assert_str_eq(env[0], "A=2");
	sbx_strv_free(env);
}
END_TEST

START_TEST(test_bad_names_refused)
{
	const char *bad[][2] = { { "=x", NULL }, { "1A=x", NULL }, { "A B=x", NULL },
	                         { "", NULL }, { "Ä=x", NULL } };
	char **env = NULL;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_int_eq(sbx_env_compose(base, bad[i], false, &env), -SBX_EINVAL);
		ck_assert_ptr_nonnull(strstr(sbx_last_error(), "env[0]"));
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("env");
	TCase *tc = tcase_create("env");

	tcase_add_test(tc, test_override_add_and_remove);
	tcase_add_test(tc, test_clear_keeps_only_overrides);
	tcase_add_test(tc, test_duplicates_collapse_last_wins);
	tcase_add_test(tc, test_bad_names_refused);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
