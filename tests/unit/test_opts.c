/* The option-struct reader: old (smaller) structs get defaults, newer (larger) ones are
 * accepted only with an all-zero tail, and bad sizes are refused naming the struct. */
#include <check.h>
#include <string.h>

#include <agentsbx/common.h>

#include "opts.h"
#include "support.h"

/* What "this library" knows, and what a caller built against newer headers has. */
typedef struct known_opts {
	size_t size;
	int a;
	const char *b;
	int c;
} known_opts;

typedef struct newer_opts {
	known_opts old;
	int added;
} newer_opts;

static known_opts filled(void)
{
	known_opts o;

	memset(&o, 0x5a, sizeof o);
	return o;
}

START_TEST(null_gives_defaults)
{
	known_opts o = filled();

	ck_assert_int_eq(SBX_OPTS_READ(NULL, &o, known_opts), 0);
	ck_assert_uint_eq(o.size, sizeof o);
	ck_assert_int_eq(o.a, 0);
	ck_assert_ptr_null(o.b);
	ck_assert_int_eq(o.c, 0);
}
END_TEST

START_TEST(smaller_struct_zero_fills_the_rest)
{
	known_opts in = { .size = offsetof(known_opts, b), .a = 7, .b = "ignored", .c = 9 };
	known_opts o = filled();

	ck_assert_int_eq(SBX_OPTS_READ(&in, &o, known_opts), 0);
	ck_assert_uint_eq(o.size, sizeof o);
	ck_assert_int_eq(o.a, 7);
	ck_assert_ptr_null(o.b);  /* beyond the caller's size: a default, not what is there */
	ck_assert_int_eq(o.c, 0);
}
END_TEST

START_TEST(equal_struct_copies_everything)
{
	known_opts in = { .size = sizeof in, .a = 1, .b = "x", .c = 3 };
	known_opts o = filled();

	ck_assert_int_eq(SBX_OPTS_READ(&in, &o, known_opts), 0);
	ck_assert_int_eq(o.a, 1);
	ck_assert_str_eq(o.b, "x");
	ck_assert_int_eq(o.c, 3);
}
END_TEST

START_TEST(larger_struct_with_zero_tail_is_read)
{
	newer_opts in;
	known_opts o = filled();

	memset(&in, 0, sizeof in);
	in.old.size = sizeof in;
	in.old.a = 4;
	in.old.c = 5;
	ck_assert_int_eq(SBX_OPTS_READ(&in, &o, known_opts), 0);
	ck_assert_uint_eq(o.size, sizeof o);
	ck_assert_int_eq(o.a, 4);
	ck_assert_int_eq(o.c, 5);
}
END_TEST

START_TEST(larger_struct_with_set_tail_is_refused)
{
	newer_opts in;
	known_opts o;

	memset(&in, 0, sizeof in);
	in.old.size = sizeof in;
	in.added = 1;
	ck_assert_int_eq(SBX_OPTS_READ(&in, &o, known_opts), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "known_opts"));
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "is set"));
}
END_TEST

START_TEST(bad_sizes_are_refused)
{
	static const size_t sizes[] = { 0, 1, sizeof(size_t) - 1, SBX_OPTS_MAX_SIZE + 1,
	                                (size_t)-1 };
	known_opts in = { .a = 1 }, o;

	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		in.size = sizes[i];
		ck_assert_int_eq(SBX_OPTS_READ(&in, &o, known_opts), -SBX_EINVAL);
		ck_assert_ptr_nonnull(strstr(sbx_last_error(), "known_opts.size"));
	}
}
END_TEST

START_TEST(just_the_size_field_is_enough)
{
	known_opts in = { .size = sizeof(size_t), .a = 3 };
	known_opts o = filled();

	ck_assert_int_eq(SBX_OPTS_READ(&in, &o, known_opts), 0);
	ck_assert_int_eq(o.a, 0);
}
END_TEST

static Suite *opts_suite(void)
{
	Suite *s = suite_create("opts");
	TCase *tc = tcase_create("read");

	tcase_add_test(tc, null_gives_defaults);
	tcase_add_test(tc, smaller_struct_zero_fills_the_rest);
	tcase_add_test(tc, equal_struct_copies_everything);
	tcase_add_test(tc, larger_struct_with_zero_tail_is_read);
	tcase_add_test(tc, larger_struct_with_set_tail_is_refused);
	tcase_add_test(tc, bad_sizes_are_refused);
	tcase_add_test(tc, just_the_size_field_is_enough);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(opts_suite());
}
