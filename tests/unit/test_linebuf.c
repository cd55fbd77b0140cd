/* Unit tests of the line buffer (src/util/linebuf.c) that MCP's transports and the docker
 * backend's JSON-lines answers are read with. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "util/linebuf.h"

START_TEST(lines_come_out_whole_and_long_ones_are_dropped)
{
	sbx_linebuf lb = { .max = 8 };
	char *line;
	size_t len;

	ck_assert_int_eq(sbx_linebuf_feed(&lb, "ab\r\ncd", 6), 0);
	ck_assert_int_eq(sbx_linebuf_next(&lb, &line, &len), SBX_LINE_OK);
	ck_assert_str_eq(line, "ab");
	ck_assert_int_eq(sbx_linebuf_next(&lb, &line, &len), SBX_LINE_NONE);
	ck_assert_int_eq(sbx_linebuf_feed(&lb, "\n0123456789abc\nok\n", 18), 0);
	ck_assert_int_eq(sbx_linebuf_next(&lb, &line, &len), SBX_LINE_OK);
	ck_assert_str_eq(line, "cd");
	ck_assert_int_eq(sbx_linebuf_next(&lb, &line, &len), SBX_LINE_DROPPED);
	ck_assert_int_eq(sbx_linebuf_next(&lb, &line, &len), SBX_LINE_OK);
	ck_assert_str_eq(line, "ok");
	sbx_linebuf_free(&lb);
}
END_TEST

/* An over-long line that comes in pieces, none with its newline, is reported once and its
 * rest is skipped up to the newline, however it is cut; the buffer does not grow with it. */
START_TEST(a_flood_without_newlines_costs_bounded_memory)
{
	sbx_linebuf lb = { .max = 8 };
	char *line;
	size_t len;

	ck_assert_int_eq(sbx_linebuf_feed(&lb, "0123456789", 10), 0);
	ck_assert_int_eq(sbx_linebuf_next(&lb, &line, &len), SBX_LINE_DROPPED);
	for (int i = 0; i < 1000; i++) {
		ck_assert_int_eq(sbx_linebuf_feed(&lb, "xxxxxxxxxxxxxxxx", 16), 0);
		ck_assert_int_eq(sbx_linebuf_next(&lb, &line, &len), SBX_LINE_NONE);
	}
	ck_assert_uint_le(lb.cap, 4096);
	ck_assert_int_eq(sbx_linebuf_feed(&lb, "xx\nnext\n", 8), 0);
	ck_assert_int_eq(sbx_linebuf_next(&lb, &line, &len), SBX_LINE_OK);
	ck_assert_str_eq(line, "next");
	ck_assert_int_eq(sbx_linebuf_next(&lb, &line, &len), SBX_LINE_NONE);
	sbx_linebuf_free(&lb);
}
END_TEST

/* A buffer that sets no limit keeps lines up to SBX_LINEBUF_MAX, and no longer. */
START_TEST(no_limit_set_means_the_default)
{
	sbx_linebuf lb = { 0 };
	size_t n = SBX_LINEBUF_MAX;
	char *big = malloc(n + 2), *line;
	size_t len;

	ck_assert_ptr_nonnull(big);
	memset(big, 'a', n + 1);
	big[n] = '\n';
	ck_assert_int_eq(sbx_linebuf_feed(&lb, big, n + 1), 0);
	ck_assert_int_eq(sbx_linebuf_next(&lb, &line, &len), SBX_LINE_OK);
	ck_assert_uint_eq(len, n);
	big[n] = 'a';
	big[n + 1] = '\n';
	ck_assert_int_eq(sbx_linebuf_feed(&lb, big, n + 2), 0);
	ck_assert_int_eq(sbx_linebuf_next(&lb, &line, &len), SBX_LINE_DROPPED);
	free(big);
	sbx_linebuf_free(&lb);
}
END_TEST

static Suite *linebuf_suite(void)
{
	Suite *s = suite_create("linebuf");
	TCase *tc = tcase_create("lines");

	tcase_add_test(tc, lines_come_out_whole_and_long_ones_are_dropped);
	tcase_add_test(tc, a_flood_without_newlines_costs_bounded_memory);
	tcase_add_test(tc, no_limit_set_means_the_default);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(linebuf_suite());
}
