/* Unit tests of the stream transport's frames (src/mcp/frames.c): "<channel> <line>", as
 * the gateway's multiplexer and the host's end read them. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "support.h"
#include "mcp/frames.h"

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

static Suite *frames_suite(void)
{
	Suite *s = suite_create("mcp_frames");
	TCase *tc = tcase_create("frames");

	tcase_add_test(tc, frames_name_their_channel);
	tcase_add_test(tc, anything_else_is_no_frame);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(frames_suite());
}
