/* Unit tests of the loader of libraries needed only by some features (src/util/lazylib.c):
 * a table fills all at once from a library present on every host (libm), a missing library
 * or symbol is an error naming it and what needs it and leaves the table empty, the failure
 * is remembered, and threads racing to load see one load. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "support.h"
#include "util/error.h"
#include "util/lazylib.h"

#define M_FUNCS(X) X(cos) X(sqrt)
SBX_LAZY_API(m_api, M_FUNCS);
static struct sbx_lazylib m_lib = SBX_LAZYLIB("libm.so.6", "the test", m_api);

#define GONE_FUNCS(X) X(cos)
SBX_LAZY_API(gone_api, GONE_FUNCS);
static struct sbx_lazylib gone_lib =
	SBX_LAZYLIB("libagentsbx-no-such-library.so.9", "the imaginary feature", gone_api);

/* libc has strlen but not sqrt (libm does): the table must not keep the strlen it found. */
#define HALF_FUNCS(X) X(strlen) X(sqrt)
SBX_LAZY_API(half_api, HALF_FUNCS);
static struct sbx_lazylib half_lib = SBX_LAZYLIB("libc.so.6", "the half test", half_api);

START_TEST(a_present_library_fills_its_table)
{
	const struct m_api *m = sbx_lazylib_load(&m_lib);

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_eq(m, &m_api_slots);
	ck_assert(m->cos(0.0) == 1.0);
	ck_assert(m->sqrt(16.0) == 4.0);
	ck_assert_ptr_eq(sbx_lazylib_load(&m_lib), m);
}
END_TEST

START_TEST(a_missing_library_is_an_error_naming_it_and_its_users)
{
	for (int i = 0; i < 2; i++) { /* the second time from the remembered failure */
		sbx_error_clear();
		ck_assert_ptr_null(sbx_lazylib_load(&gone_lib));
		ck_assert_msg(strstr(sbx_last_error(), "libagentsbx-no-such-library.so.9 could not "
		                     "be loaded, which the imaginary feature need: "),
		              "%s", sbx_last_error());
		ck_assert_ptr_null(gone_api_slots.cos);
	}
	ck_assert_int_eq(SBX_LAZYLIB_ERR, -SBX_ENOSYS);
}
END_TEST

START_TEST(a_missing_symbol_leaves_the_whole_table_empty)
{
	ck_assert_ptr_null(sbx_lazylib_load(&half_lib));
	ck_assert_msg(strstr(sbx_last_error(), "libc.so.6 could not be loaded, which the half test "
	                     "need: it has no sqrt"), "%s", sbx_last_error());
	ck_assert_ptr_null(half_api_slots.strlen);
	ck_assert_ptr_null(half_api_slots.sqrt);
}
END_TEST

static struct sbx_lazylib race_lib = SBX_LAZYLIB("libm.so.6", "the race", m_api);

static void *load_in_thread(void *arg)
{
	return (void *)sbx_lazylib_load(&race_lib);
}

START_TEST(threads_racing_to_load_all_get_the_table)
{
	pthread_t t[8];
	void *got;

	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, load_in_thread, NULL), 0);
	for (int i = 0; i < 8; i++) {
		ck_assert_int_eq(pthread_join(t[i], &got), 0);
		ck_assert_ptr_eq(got, &m_api_slots);
	}
}
END_TEST

static Suite *lazylib_suite(void)
{
	Suite *s = suite_create("lazylib");
	TCase *tc = tcase_create("lazylib");

	tcase_add_test(tc, a_present_library_fills_its_table);
	tcase_add_test(tc, a_missing_library_is_an_error_naming_it_and_its_users);
	tcase_add_test(tc, a_missing_symbol_leaves_the_whole_table_empty);
	tcase_add_test(tc, threads_racing_to_load_all_get_the_table);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(lazylib_suite());
}
