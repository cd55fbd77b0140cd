/* Unit tests of the JSON parser (yajl events into sbx_json) and writer. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "support.h"
#include "util/buf.h"
#include "util/json.h"

static char err[256];

static sbx_json *parse_ok(const char *text)
{
	sbx_json *v = NULL;
	int rc = sbx_json_parse(text, strlen(text), &v, err, sizeof err);

	ck_assert_msg(rc == 0, "parse of '%s' failed: %s", text, err);
	ck_assert_ptr_nonnull(v);
	return v;
}

/* Parses text[0..len) expecting failure; returns the message. */
static const char *parse_fail_n(const char *text, size_t len)
{
	sbx_json *v = (sbx_json *)&v; /* must be reset to NULL */
	int rc = sbx_json_parse(text, len, &v, err, sizeof err);

	ck_assert_msg(rc == -SBX_EINVAL, "parse of '%.*s' gave %d", (int)len, text, rc);
	ck_assert_ptr_null(v);
	ck_assert_msg(strncmp(err, "invalid JSON at byte ", 21) == 0, "message: %s", err);
	return err;
}

static const char *parse_fail(const char *text)
{
	return parse_fail_n(text, strlen(text));
}

static char *write_json(const sbx_json *v)
{
	sbx_buf b = {0};

	sbx_json_write(&b, v);
	return sbx_buf_steal(&b, NULL);
}

/* Parses text and checks it serialises to want. */
static void assert_roundtrip(const char *text, const char *want)
{
	sbx_json *v = parse_ok(text);
	char *out = write_json(v);

	ck_assert_str_eq(out, want);
	sbx_json_free(v);
	free(out);
}

START_TEST(scalars)
{
	sbx_json *v;

	v = parse_ok("null");
	ck_assert_int_eq(v->type, SBX_JSON_NULL);
	sbx_json_free(v);
	v = parse_ok(" true ");
	ck_assert_int_eq(v->type, SBX_JSON_BOOL);
	ck_assert(v->b);
	sbx_json_free(v);
	v = parse_ok("false");
	ck_assert_int_eq(v->type, SBX_JSON_BOOL);
	ck_assert(!v->b);
	sbx_json_free(v);
	v = parse_ok("\"hi\"");
	ck_assert_int_eq(v->type, SBX_JSON_STRING);
	ck_assert_str_eq(v->str, "hi");
	ck_assert_uint_eq(v->len, 2);
	sbx_json_free(v);
}
END_TEST

static void assert_int(const char *text, int64_t want)
{
	sbx_json *v = parse_ok(text);

	ck_assert_msg(v->type == SBX_JSON_INT, "%s is not INT", text);
	ck_assert_int_eq(v->i, want);
	ck_assert_str_eq(v->str, text);
	ck_assert_uint_eq(v->len, strlen(text));
	sbx_json_free(v);
}

static void assert_number(const char *text, double want)
{
	sbx_json *v = parse_ok(text);

	ck_assert_msg(v->type == SBX_JSON_NUMBER, "%s is not NUMBER", text);
	ck_assert_msg(v->d == want, "%s gave %g", text, v->d);
	ck_assert_str_eq(v->str, text); /* the literal is kept as written */
	sbx_json_free(v);
}

START_TEST(numbers_are_classified)
{
	assert_int("0", 0);
	assert_int("-0", 0);
	assert_int("42", 42);
	assert_int("-17", -17);
	assert_int("9223372036854775807", INT64_MAX);
	assert_int("-9223372036854775808", INT64_MIN);
	assert_number("9223372036854775808", 9223372036854775808.0);
	assert_number("-9223372036854775809", -9223372036854775809.0);
	assert_number("99999999999999999999", 99999999999999999999.0);
	assert_number("1.5", 1.5);
	assert_number("-0.25", -0.25);
	assert_number("1e3", 1000.0);
	assert_number("1E+2", 100.0);
	assert_number("2.0", 2.0);
	assert_number("1e400", HUGE_VAL);
	assert_number("-1e400", -HUGE_VAL);
	assert_number("1e-400", 0.0);
}
END_TEST

START_TEST(strings_decode_escapes)
{
	sbx_json *v = parse_ok("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u00e9\\u20ac\\ud83d\\ude00\"");

	ck_assert_str_eq(v->str, "a\"b\\c/d\b\f\n\r\t\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
	ck_assert_uint_eq(v->len, strlen(v->str));
	sbx_json_free(v);
}
END_TEST

START_TEST(strings_keep_nul)
{
	sbx_json *v = parse_ok("{\"k\\u0000x\":\"a\\u0000b\"}");

	ck_assert_uint_eq(v->n, 1);
	ck_assert_uint_eq(v->key_lens[0], 3);
	ck_assert_mem_eq(v->keys[0], "k\0x", 4);
	ck_assert_uint_eq(v->items[0]->len, 3);
	ck_assert_mem_eq(v->items[0]->str, "a\0b", 4);
	/* A C-string key never matches a key with an embedded NUL. */
	ck_assert_ptr_null(sbx_json_get(v, "k"));
	sbx_json_free(v);
	assert_roundtrip("[\"a\\u0000b\"]", "[\"a\\u0000b\"]");
}
END_TEST

START_TEST(containers_and_get)
{
	sbx_json *v = parse_ok("{\"a\": [1, \"two\", {\"b\": null}], \"c\": {}, \"d\": []}");
	const sbx_json *a, *b;

	ck_assert_int_eq(v->type, SBX_JSON_OBJECT);
	ck_assert_uint_eq(v->n, 3);
	ck_assert_str_eq(v->keys[0], "a");
	ck_assert_str_eq(v->keys[2], "d");
	a = sbx_json_get(v, "a");
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(a->type, SBX_JSON_ARRAY);
	ck_assert_uint_eq(a->n, 3);
	ck_assert_int_eq(a->items[0]->i, 1);
	ck_assert_str_eq(a->items[1]->str, "two");
	b = sbx_json_get(a->items[2], "b");
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(b->type, SBX_JSON_NULL);
	ck_assert_uint_eq(sbx_json_get(v, "c")->n, 0);
	ck_assert_int_eq(sbx_json_get(v, "d")->type, SBX_JSON_ARRAY);
	ck_assert_ptr_null(sbx_json_get(v, "missing"));
	ck_assert_ptr_null(sbx_json_get(v, ""));
	ck_assert_ptr_null(sbx_json_get(a, "a"));     /* not an object */
	ck_assert_ptr_null(sbx_json_get(NULL, "a"));
	ck_assert_ptr_null(sbx_json_get(v, NULL));
	sbx_json_free(v);
}
END_TEST

START_TEST(large_containers)
{
	sbx_buf b = {0};
	sbx_json *v;
	char *text;

	sbx_buf_puts(&b, "{");
	for (int i = 0; i < 20000; i++)
		sbx_buf_printf(&b, "%s\"k%d\":[%d]", i ? "," : "", i, i);
	sbx_buf_puts(&b, "}");
	text = sbx_buf_steal(&b, NULL);
	v = parse_ok(text);
	ck_assert_uint_eq(v->n, 20000);
	ck_assert_int_eq(sbx_json_get(v, "k19999")->items[0]->i, 19999);
	sbx_json_free(v);
	free(text);
}
END_TEST

START_TEST(type_names)
{
	ck_assert_str_eq(sbx_json_type_name(SBX_JSON_NULL), "null");
	ck_assert_str_eq(sbx_json_type_name(SBX_JSON_BOOL), "boolean");
	ck_assert_str_eq(sbx_json_type_name(SBX_JSON_INT), "integer");
	ck_assert_str_eq(sbx_json_type_name(SBX_JSON_NUMBER), "number");
	ck_assert_str_eq(sbx_json_type_name(SBX_JSON_STRING), "string");
	ck_assert_str_eq(sbx_json_type_name(SBX_JSON_ARRAY), "array");
	ck_assert_str_eq(sbx_json_type_name(SBX_JSON_OBJECT), "object");
	ck_assert_str_eq(sbx_json_type_name((sbx_json_type)99), "unknown");
}
END_TEST

START_TEST(malformed_inputs_fail)
{
	static const char *const bad[] = {
		"", "   ", "{", "}", "[", "[1,]", "[,1]", "{\"a\":1,}", "{a:1}", "{\"a\" 1}",
		"{\"a\":}", "'x'", "NaN", "Infinity", "-", "1.", ".5", "+1", "1e", "[1 2]",
		"1 2", "{} x", "{}{}", "tru", "nul", "\"unterminated", "\"bad \\x escape\"",
		"\"\\u12\"", "\"\\u12G4\"", "\"raw\ncontrol\"", "\"tab\tinside\"", "/* c */ 1",
		"// c\n1", "[1]]", "{\"a\":1}}", "\xEF\xBB\xBF{}",
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		parse_fail(bad[i]);
	/* Bytes after the value, including a NUL, are garbage too. */
	parse_fail_n("{}\0", 3);
	parse_fail_n("\0", 1);
}
END_TEST

START_TEST(error_message_names_offset_and_reason)
{
	const char *m = parse_fail("{\"a\": 1, \"b\" 2}");

	ck_assert_msg(strstr(m, "byte 1") != NULL, "%s", m);   /* somewhere around byte 13 */
	ck_assert_msg(strchr(m, '\n') == NULL, "%s", m);
	ck_assert_msg(m[strlen(m) - 1] != '.', "%s", m);
	m = parse_fail("[1, 2");
	ck_assert_msg(strstr(m, "byte 5") != NULL, "%s", m);
	ck_assert_msg(strstr(m, "premature EOF") != NULL, "%s", m);
	m = parse_fail("{} garbage");
	ck_assert_msg(strstr(m, "trailing garbage") != NULL, "%s", m);
}
END_TEST

START_TEST(small_error_buffer_is_safe)
{
	char small[8];
	sbx_json *v = NULL;

	ck_assert_int_eq(sbx_json_parse("[", 1, &v, small, sizeof small), -SBX_EINVAL);
	ck_assert_str_eq(small, "invalid");
	ck_assert_int_eq(sbx_json_parse("[", 1, &v, NULL, 0), -SBX_EINVAL);
	ck_assert_int_eq(sbx_json_parse("[", 1, &v, small, 0), -SBX_EINVAL);
	ck_assert_ptr_null(v);
}
END_TEST

START_TEST(bad_arguments)
{
	sbx_json *v = NULL;

	ck_assert_int_eq(sbx_json_parse("1", 1, NULL, err, sizeof err), -SBX_EINVAL);
	ck_assert_int_eq(sbx_json_parse(NULL, 3, &v, err, sizeof err), -SBX_EINVAL);
	ck_assert_int_eq(sbx_json_parse(NULL, 0, &v, err, sizeof err), -SBX_EINVAL);
	ck_assert_ptr_null(v);
	/* The length, not the terminator, bounds the input. */
	v = parse_ok("[1]");
	sbx_json_free(v);
	ck_assert_int_eq(sbx_json_parse("[1]xyz", 3, &v, err, sizeof err), 0);
	ck_assert_uint_eq(v->n, 1);
	sbx_json_free(v);
	sbx_json_free(NULL);
}
END_TEST

START_TEST(invalid_utf8_refused)
{
	const char *m;

	parse_fail("\"\xFF\"");
	parse_fail("\"\xC3\"");
	parse_fail("{\"\xFF\":1}");
	/* yajl's own check lets these through; ours does not. */
	m = parse_fail("\"\xC0\xAF\"");                 /* overlong */
	ck_assert_msg(strstr(m, "UTF-8") != NULL, "%s", m);
	parse_fail("\"\xED\xA0\x80\"");                 /* encoded surrogate */
	parse_fail("\"\xF4\x90\x80\x80\"");             /* above U+10FFFF */
	parse_fail("{\"\xED\xBF\xBF\":1}");
	m = parse_fail("\"\\udc00\"");                  /* lone low surrogate escape */
	ck_assert_msg(strstr(m, "UTF-8") != NULL, "%s", m);
	parse_fail("[\"ok\", \"\\udfff\"]");
}
END_TEST

START_TEST(depth_limit)
{
	char text[2 * SBX_JSON_MAX_DEPTH + 8];
	sbx_json *v;
	const char *m;
	char *deep;
	size_t n;

	/* Exactly the limit parses... */
	memset(text, '[', SBX_JSON_MAX_DEPTH);
	memset(text + SBX_JSON_MAX_DEPTH, ']', SBX_JSON_MAX_DEPTH);
	text[2 * SBX_JSON_MAX_DEPTH] = '\0';
	v = parse_ok(text);
	sbx_json_free(v);
	/* ...one more level does not, for arrays and objects alike. */
	memset(text, '[', SBX_JSON_MAX_DEPTH + 1);
	memset(text + SBX_JSON_MAX_DEPTH + 1, ']', SBX_JSON_MAX_DEPTH + 1);
	text[2 * SBX_JSON_MAX_DEPTH + 2] = '\0';
	m = parse_fail(text);
	ck_assert_msg(strstr(m, "nested deeper than 64") != NULL, "%s", m);

	n = 100000;
	deep = malloc(n * 5 + 1);
	for (size_t i = 0; i < n; i++)
		memcpy(deep + i * 5, "{\"a\":", 5);
	deep[n * 5] = '\0';
	parse_fail(deep);
	memset(deep, '[', n * 5);
	parse_fail(deep);
	free(deep);
}
END_TEST

START_TEST(duplicate_keys_refused)
{
	const char *m;
	sbx_buf b = {0};
	char *text;

	m = parse_fail("{\"a\":1,\"a\":2}");
	ck_assert_msg(strstr(m, "duplicate object key \"a\"") != NULL, "%s", m);
	parse_fail("{\"x\":{\"b\":1,\"c\":2,\"b\":3}}");
	parse_fail("[{\"a\":1},{\"k\\u0000\":1,\"k\\u0000\":2}]");
	/* Same key in different objects, or differing after a NUL, is fine. */
	sbx_json_free(parse_ok("[{\"a\":1},{\"a\":2},{\"a\":{\"a\":3}}]"));
	sbx_json_free(parse_ok("{\"k\\u0000a\":1,\"k\\u0000b\":2,\"k\":3}"));
	sbx_json_free(parse_ok("{\"\\u00e9\":1,\"\xC3\xA9x\":2}"));
	/* Escaped and literal spellings of one key are the same key. */
	parse_fail("{\"\\u0061\":1,\"a\":2}");

	/* A duplicate hidden among many keys, and a long one shown cut short. */
	sbx_buf_puts(&b, "{");
	for (int i = 0; i < 5000; i++)
		sbx_buf_printf(&b, "\"key%d\":%d,", i, i);
	sbx_buf_puts(&b, "\"key4321\":0}");
	text = sbx_buf_steal(&b, NULL);
	m = parse_fail(text);
	ck_assert_msg(strstr(m, "\"key4321\"") != NULL, "%s", m);
	free(text);

	sbx_buf_puts(&b, "{\"");
	for (int i = 0; i < 300; i++)
		sbx_buf_puts(&b, "x");
	sbx_buf_puts(&b, "\":1,\"");
	for (int i = 0; i < 300; i++)
		sbx_buf_puts(&b, "x");
	sbx_buf_puts(&b, "\":2}");
	text = sbx_buf_steal(&b, NULL);
	m = parse_fail(text);
	ck_assert_msg(strstr(m, "...") != NULL && strlen(m) < 200, "%s", m);
	free(text);
}
END_TEST

START_TEST(write_is_compact_and_round_trips)
{
	sbx_json *v;
	char *once, *twice;

	assert_roundtrip(" { \"a\" : [ 1 , 2.50 , -0 , 1e400, true , false, null , \"x\\u0001\" ] ,"
	                 " \"b\" : { } , \"c\" : [ ] } ",
	                 "{\"a\":[1,2.50,-0,1e400,true,false,null,\"x\\u0001\"],\"b\":{},\"c\":[]}");
	assert_roundtrip("\"\\u00e9\\/\\ud83d\\ude00\"", "\"\xC3\xA9/\xF0\x9F\x98\x80\"");
	assert_roundtrip("\"\\u007f\\u001f\"", "\"\x7f\\u001f\"");

	v = parse_ok("{\"k\":[{\"n\":\"\\\"q\\\"\"}],\"z\":-12.5e-3}");
	once = write_json(v);
	sbx_json_free(v);
	v = parse_ok(once);
	twice = write_json(v);
	ck_assert_str_eq(once, twice);
	sbx_json_free(v);
	free(once);
	free(twice);
}
END_TEST

START_TEST(write_nodes_built_by_code)
{
	sbx_json i = { .type = SBX_JSON_INT, .i = -5 };
	sbx_json d = { .type = SBX_JSON_NUMBER, .d = 0.5 };
	sbx_json inf = { .type = SBX_JSON_NUMBER, .d = HUGE_VAL };
	sbx_json nan_ = { .type = SBX_JSON_NUMBER, .d = NAN };
	sbx_json s = { .type = SBX_JSON_STRING, .str = (char *)"bad\xFF", .len = 4 };
	sbx_json *items[] = { &i, &d, &inf, &nan_, &s, NULL };
	sbx_json arr = { .type = SBX_JSON_ARRAY, .n = 6, .items = items };
	char *out = write_json(&arr);

	ck_assert_str_eq(out, "[-5,0.5,null,null,\"bad\xEF\xBF\xBD\",null]");
	free(out);
}
END_TEST

START_TEST(unpaired_surrogate_escapes_refused)
{
	sbx_json *v;
	const char *m;

	m = parse_fail("\"\\ud800\"");
	ck_assert_msg(strstr(m, "byte 1: unpaired surrogate") != NULL, "%s", m);
	m = parse_fail("[\"ab\", \"x\\uD800y\"]");
	ck_assert_msg(strstr(m, "byte 9: unpaired surrogate") != NULL, "%s", m);
	parse_fail("\"\\ud800\\u0041\"");          /* yajl would make U+10041 of it */
	parse_fail("\"\\udbff\\ud800\"");
	parse_fail("{\"\\ud83d\":1}");
	parse_fail("\"\\ud83d\\n\"");
	/* A proper pair, and an escaped backslash before "ud800", are fine. */
	v = parse_ok("[\"\\udbff\\udfff\", \"\\\\ud800\"]");
	ck_assert_str_eq(v->items[0]->str, "\xF4\x8F\xBF\xBF");
	ck_assert_str_eq(v->items[1]->str, "\\ud800");
	sbx_json_free(v);
}
END_TEST

static Suite *json_suite(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, scalars);
	tcase_add_test(tc, numbers_are_classified);
	tcase_add_test(tc, strings_decode_escapes);
	tcase_add_test(tc, strings_keep_nul);
	tcase_add_test(tc, containers_and_get);
	tcase_add_test(tc, large_containers);
	tcase_add_test(tc, type_names);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, malformed_inputs_fail);
	tcase_add_test(tc, error_message_names_offset_and_reason);
	tcase_add_test(tc, small_error_buffer_is_safe);
	tcase_add_test(tc, bad_arguments);
	tcase_add_test(tc, invalid_utf8_refused);
	tcase_add_test(tc, unpaired_surrogate_escapes_refused);
	tcase_add_test(tc, depth_limit);
	tcase_add_test(tc, duplicate_keys_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("write");
	tcase_add_test(tc, write_is_compact_and_round_trips);
	tcase_add_test(tc, write_nodes_built_by_code);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(json_suite());
}
