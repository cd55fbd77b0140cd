/* Unit tests of the growable buffer, the JSON string writer and the UTF-8 validator. */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "util/buf.h"

#define FFFD "\xEF\xBF\xBD"

START_TEST(append_and_puts)
{
	sbx_buf b = {0};

	sbx_buf_append(&b, "ab", 2);
	sbx_buf_puts(&b, "cd");
	sbx_buf_append(&b, "", 0);
	sbx_buf_append(&b, "e\0f", 3);
	ck_assert_uint_eq(b.len, 7);
	ck_assert_mem_eq(b.data, "abcde\0f", 8); /* NUL-terminated after the content */
	ck_assert(!b.oom);
	sbx_buf_free(&b);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
}
END_TEST

START_TEST(append_grows_past_many_doublings)
{
	sbx_buf b = {0};
	char chunk[1000];

	memset(chunk, 'x', sizeof chunk);
	for (int i = 0; i < 1000; i++)
		sbx_buf_append(&b, chunk, sizeof chunk);
	ck_assert_uint_eq(b.len, 1000000);
	ck_assert_uint_ge(b.cap, b.len + 1);
	ck_assert_int_eq(b.data[b.len], '\0');
	ck_assert_int_eq(b.data[999999], 'x');
	sbx_buf_free(&b);
}
END_TEST

START_TEST(printf_short_and_long)
{
	sbx_buf b = {0};
	char big[5001];

	sbx_buf_printf(&b, "%d-%s", 42, "x");
	ck_assert_str_eq(b.data, "42-x");
	memset(big, 'y', 5000);
	big[5000] = '\0';
	/* Longer than the space left: the append must grow and retry with a fresh va_list. */
	sbx_buf_printf(&b, "[%s]%d", big, 7);
	ck_assert_uint_eq(b.len, 4 + 5002 + 1);
	ck_assert_int_eq(b.data[4], '[');
	ck_assert_int_eq(b.data[5005], ']');
	ck_assert_int_eq(b.data[5006], '7');
	ck_assert_int_eq(b.data[5007], '\0');
	sbx_buf_printf(&b, "%s", "");
	ck_assert_uint_eq(b.len, 5007);
	sbx_buf_free(&b);
}
END_TEST

START_TEST(printf_many_appends)
{
	sbx_buf b = {0};

	for (int i = 0; i < 10000; i++)
		sbx_buf_printf(&b, "%d,", i % 10);
	ck_assert_uint_eq(b.len, 20000);
	ck_assert_int_eq(strncmp(b.data, "0,1,2,", 6), 0);
	ck_assert_int_eq(strcmp(b.data + 19996, "8,9,"), 0);
	sbx_buf_free(&b);
}
END_TEST

START_TEST(steal_returns_content_and_empties)
{
	sbx_buf b = {0};
	size_t len = 99;
	char *s;

	sbx_buf_puts(&b, "hello");
	s = sbx_buf_steal(&b, &len);
	ck_assert_str_eq(s, "hello");
	ck_assert_uint_eq(len, 5);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.cap, 0);
	free(s);

	/* Nothing appended: still a string, never NULL. */
	s = sbx_buf_steal(&b, &len);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "");
	ck_assert_uint_eq(len, 0);
	free(s);

	s = sbx_buf_steal(&b, NULL);
	ck_assert_str_eq(s, "");
	free(s);
}
END_TEST

START_TEST(oom_flag_stops_appends_and_steal_fails)
{
	sbx_buf b = {0};
	size_t len = 5;

	sbx_buf_puts(&b, "abc");
	/* A length no allocator can satisfy sets the flag instead of crashing. */
	sbx_buf_append(&b, "x", SIZE_MAX - 1);
	ck_assert(b.oom);
	ck_assert_uint_eq(b.len, 3);
	sbx_buf_puts(&b, "more");
	ck_assert_uint_eq(b.len, 3);
	ck_assert_ptr_null(sbx_buf_steal(&b, &len));
	ck_assert_uint_eq(len, 0);
	ck_assert(!b.oom);
	ck_assert_ptr_null(b.data);
}
END_TEST

static char *json_string(const char *s, size_t len)
{
	sbx_buf b = {0};

	sbx_buf_json_string(&b, s, len);
	return sbx_buf_steal(&b, NULL);
}

static void assert_json_string(const char *in, size_t len, const char *want)
{
	char *got = json_string(in, len);

	ck_assert_str_eq(got, want);
	free(got);
}

START_TEST(json_string_escapes)
{
	assert_json_string("", 0, "\"\"");
	assert_json_string("plain text", 10, "\"plain text\"");
	assert_json_string("a\"b\\c/d", 7, "\"a\\\"b\\\\c/d\"");
	assert_json_string("\b\f\n\r\t", 5, "\"\\b\\f\\n\\r\\t\"");
	assert_json_string("\x01\x1f\x7f", 3, "\"\\u0001\\u001f\x7f\"");
	assert_json_string("a\0b", 3, "\"a\\u0000b\"");
}
END_TEST

START_TEST(json_string_keeps_valid_utf8)
{
	const char *s = "\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF \xEF\xBF\xBF";
	char want[64];

	snprintf(want, sizeof want, "\"%s\"", s);
	assert_json_string(s, strlen(s), want);
}
END_TEST

START_TEST(json_string_replaces_invalid_utf8)
{
	/* One U+FFFD per maximal ill-formed subsequence, as Unicode recommends. */
	assert_json_string("\xFF", 1, "\"" FFFD "\"");
	assert_json_string("a\x80z", 3, "\"a" FFFD "z\"");
	assert_json_string("\xE2\x82", 2, "\"" FFFD "\"");            /* truncated */
	assert_json_string("\xE2\x82z", 3, "\"" FFFD "z\"");
	assert_json_string("\xC0\xAF", 2, "\"" FFFD FFFD "\"");       /* overlong '/' */
	assert_json_string("\xE0\x80\xAF", 3, "\"" FFFD FFFD FFFD "\"");
	assert_json_string("\xED\xA0\x80", 3, "\"" FFFD FFFD FFFD "\""); /* surrogate */
	assert_json_string("\xF4\x90\x80\x80", 4, "\"" FFFD FFFD FFFD FFFD "\""); /* > 10FFFF */
	assert_json_string("\xF0\x9F\x98", 3, "\"" FFFD "\"");
	assert_json_string("\xF0\x9F\x98\"", 4, "\"" FFFD "\\\"\"");
	assert_json_string("\xC3\xA9\xC3", 3, "\"\xC3\xA9" FFFD "\"");
}
END_TEST

START_TEST(json_string_output_is_valid_utf8)
{
	unsigned char in[256];
	char *out;

	for (int i = 0; i < 256; i++)
		in[i] = (unsigned char)(255 - i);
	out = json_string((const char *)in, sizeof in);
	ck_assert(sbx_utf8_valid(out, strlen(out)));
	free(out);
}
END_TEST

typedef struct utf8_case {
	const char *s;
	bool valid;
} utf8_case;

START_TEST(utf8_table)
{
	static const utf8_case cases[] = {
		{ "", true },
		{ "ascii only", true },
		{ "\xC2\x80", true },                 /* U+0080, smallest 2-byte */
		{ "\xDF\xBF", true },
		{ "\xE0\xA0\x80", true },             /* U+0800, smallest 3-byte */
		{ "\xED\x9F\xBF", true },             /* U+D7FF, just below surrogates */
		{ "\xEE\x80\x80", true },             /* U+E000, just above */
		{ "\xEF\xBF\xBF", true },             /* U+FFFF */
		{ "\xF0\x90\x80\x80", true },         /* U+10000 */
		{ "\xF4\x8F\xBF\xBF", true },         /* U+10FFFF */
		{ "\x80", false },                    /* lone continuation */
		{ "\xBF", false },
		{ "\xC0\x80", false },                /* overlong NUL */
		{ "\xC1\xBF", false },
		{ "\xC2", false },                    /* truncated */
		{ "\xC2\x41", false },
		{ "\xE0\x80\x80", false },            /* overlong */
		{ "\xE0\x9F\xBF", false },
		{ "\xED\xA0\x80", false },            /* U+D800 */
		{ "\xED\xBF\xBF", false },            /* U+DFFF */
		{ "\xED\xA0\x80\xED\xB0\x80", false }, /* CESU-8 pair */
		{ "\xE2\x82", false },
		{ "\xF0\x80\x80\x80", false },        /* overlong */
		{ "\xF0\x8F\xBF\xBF", false },
		{ "\xF4\x90\x80\x80", false },        /* U+110000 */
		{ "\xF5\x80\x80\x80", false },
		{ "\xF8\x88\x80\x80\x80", false },    /* 5-byte form */
		{ "\xFE", false },
		{ "\xFF", false },
		{ "ok\xC3\xA9then\xFF", false },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ck_assert_msg(sbx_utf8_valid(cases[i].s, strlen(cases[i].s)) == cases[i].valid,
		              "case %zu", i);
	/* Embedded NUL is valid UTF-8 (U+0000); length, not the terminator, counts. */
	ck_assert(sbx_utf8_valid("a\0b", 3));
	ck_assert(!sbx_utf8_valid("\xC3\xA9", 1));
}
END_TEST

/* An independent decoder: compute the code point, then apply the rules. */
static bool reference_valid(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned c = s[i], n, cp, min;

		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xE0) == 0xC0) {
			n = 2, cp = c & 0x1F, min = 0x80;
		} else if ((c & 0xF0) == 0xE0) {
			n = 3, cp = c & 0x0F, min = 0x800;
		} else if ((c & 0xF8) == 0xF0) {
			n = 4, cp = c & 0x07, min = 0x10000;
		} else {
			return false;
		}
		if (i + n > len)
			return false;
		for (unsigned k = 1; k < n; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		i += n;
	}
	return true;
}

START_TEST(utf8_matches_reference_exhaustively)
{
	unsigned char s[4];

	for (unsigned a = 0; a < 256; a++) {
		s[0] = (unsigned char)a;
		ck_assert(sbx_utf8_valid((char *)s, 1) == reference_valid(s, 1));
		for (unsigned b = 0; b < 256; b++) {
			s[1] = (unsigned char)b;
			ck_assert(sbx_utf8_valid((char *)s, 2) == reference_valid(s, 2));
			for (unsigned c = 0; c < 256; c++) {
				s[2] = (unsigned char)c;
				if (sbx_utf8_valid((char *)s, 3) != reference_valid(s, 3))
					ck_abort_msg("mismatch at %02x %02x %02x", a, b, c);
			}
		}
	}
	/* Four bytes: every lead with all continuation-range tails plus boundary bytes. */
	static const unsigned char tails[] = { 0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0,
	                                       0xBF, 0xC0, 0xFF };
	for (unsigned a = 0xE0; a < 256; a++) {
		s[0] = (unsigned char)a;
		for (unsigned b = 0; b < 256; b++) {
			s[1] = (unsigned char)b;
			for (size_t c = 0; c < sizeof tails; c++) {
				s[2] = tails[c];
				for (size_t d = 0; d < sizeof tails; d++) {
					s[3] = tails[d];
					if (sbx_utf8_valid((char *)s, 4) != reference_valid(s, 4))
						ck_abort_msg("mismatch at %02x %02x %02x %02x", a, b,
						             s[2], s[3]);
				}
			}
		}
	}
}
END_TEST

static Suite *buf_suite(void)
{
	Suite *s = suite_create("buf");
	TCase *tc = tcase_create("buffer");

	tcase_add_test(tc, append_and_puts);
	tcase_add_test(tc, append_grows_past_many_doublings);
	tcase_add_test(tc, printf_short_and_long);
	tcase_add_test(tc, printf_many_appends);
	tcase_add_test(tc, steal_returns_content_and_empties);
	tcase_add_test(tc, oom_flag_stops_appends_and_steal_fails);
	suite_add_tcase(s, tc);

	tc = tcase_create("json_string");
	tcase_add_test(tc, json_string_escapes);
	tcase_add_test(tc, json_string_keeps_valid_utf8);
	tcase_add_test(tc, json_string_replaces_invalid_utf8);
	tcase_add_test(tc, json_string_output_is_valid_utf8);
	suite_add_tcase(s, tc);

	tc = tcase_create("utf8");
	tcase_add_test(tc, utf8_table);
	tcase_add_test(tc, utf8_matches_reference_exhaustively);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(buf_suite());
}
