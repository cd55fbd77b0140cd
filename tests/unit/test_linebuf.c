/* Unit tests of MCP's line framing (src/mcp/linebuf.c): the line buffer the gateway and the
 * host read with, and the "<channel> <line>" frames of the process-stream transport. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "support.h"
#include "mcp/linebuf.h"

static int split(const char *frame, uint32_t *ch, const char **line, size_t *len)
{
	return sbx_mcp_frame_split(frame, strlen(frame), ch, line, len);
}

START_TEST(frames_name_their_channel)
{
	const char *line = NULL;
	size_t len = 0;
	uint32_t ch = 0;

	ck_assert_int_eq(split("7 {\"id\":1}", &ch, &line, &len), 1);
	ck_assert_uint_eq(ch, 7);
	ck_assert_int_eq(len, 8);
	ck_assert_int_eq(memcmp(line, "{\"id\":1}", 8), 0);
	ck_assert_int_eq(split("4294967295 x", &ch, &line, &len), 1);
	ck_assert_uint_eq(ch, UINT32_MAX);
	ck_assert_int_eq(split("12", &ch, &line, &len), 0);   /* the channel ends */
	ck_assert_uint_eq(ch, 12);
	ck_assert_int_eq(split("3 ", &ch, &line, &len), 1);   /* an empty line is a line */
	ck_assert_int_eq(len, 0);
	ck_assert_int_eq(split("3  two", &ch, &line, &len), 1);   /* only one space is taken */
	ck_assert_int_eq(len, 4);
}
END_TEST

START_TEST(anything_else_is_no_frame)
{
	static const char *const bad[] = { "", " 1 x", "+1 x", "-1 x", "x 1", "1x", "1\tx",
	                                   "4294967296 x", "99999999999 x", "00000000001 x",
	                                   NULL };
	const char *line;
	size_t len;
	uint32_t ch;

	for (const char *const *b = bad; *b; b++)
		ck_assert_msg(split(*b, &ch, &line, &len) == -1, "'%s' was taken for a frame", *b);
	/* A NUL byte after the number is not the end of the frame. */
	ck_assert_int_eq(sbx_mcp_frame_split("5\0x", 3, &ch, &line, &len), -1);
}
END_TEST

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

static Suite *linebuf_suite(void)
{
	Suite *s = suite_create("linebuf");
	TCase *tc = tcase_create("framing");

	tcase_add_test(tc, frames_name_their_channel);
	tcase_add_test(tc, anything_else_is_no_frame);
	tcase_add_test(tc, lines_come_out_whole_and_long_ones_are_dropped);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(linebuf_suite());
}
