/* The SKILL.md front matter parser: the YAML subset skills use, the name and description
 * rules, and hostile text (huge, NUL bytes, not UTF-8, unterminated, deep nesting, aliases). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "support.h"
#include "util/frontmatter.h"

/* Parses text and returns the value of key (static copy), failing the test on error. */
static const char *value_of(const char *text, const char *key)
{
	static char copy[4096];
	sbx_frontmatter fm;
	int r = sbx_frontmatter_parse(text, strlen(text), "SKILL.md", &fm);

	ck_assert_msg(r == 0, "parse failed: %s", sbx_last_error());
	const sbx_fm_field *f = sbx_frontmatter_get(&fm, key);
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(f->value);
	snprintf(copy, sizeof copy, "%s", f->value);
	sbx_frontmatter_free(&fm);
	return copy;
}

/* Parses text expecting failure with code and a message containing fragment. */
static void parse_fails(const char *text, size_t len, int code, const char *fragment)
{
	sbx_frontmatter fm;
	int r = sbx_frontmatter_parse(text, len, "SKILL.md", &fm);

	ck_assert_msg(r == code, "expected %d, got %d (%s) for:\n%s", code, r, sbx_last_error(),
	              text);
	ck_assert_msg(strstr(sbx_last_error(), fragment), "message '%s' lacks '%s'",
	              sbx_last_error(), fragment);
	ck_assert_uint_eq(fm.n, 0);
	ck_assert_ptr_null(fm.fields);
}

/* For literals, which may hold NUL bytes. */
#define FAILS(lit, code, fragment) parse_fails(lit, sizeof(lit) - 1, code, fragment)

START_TEST(plain_values_and_body)
{
	const char *text = "---\nname: pdf-tools\ndescription: Work with PDF files.\n---\n# PDF\n\n"
	                   "Body text.\n";
	sbx_skill_md md;

	ck_assert_int_eq(sbx_skill_md_parse(text, strlen(text), &md), 0);
	ck_assert_str_eq(md.name, "pdf-tools");
	ck_assert_str_eq(md.description, "Work with PDF files.");
	ck_assert_uint_eq(md.body_len, strlen("# PDF\n\nBody text.\n"));
	ck_assert_int_eq(memcmp(md.body, "# PDF\n\nBody text.\n", md.body_len), 0);
	sbx_skill_md_free(&md);
}
END_TEST

START_TEST(crlf_bom_comments_and_trailing_blanks)
{
	const char *text = "\xEF\xBB\xBF---  \r\n# a comment\r\nname: x   # trailing comment\r\n"
	                   "description: C# and F# are kept\r\n---\r\nbody";
	sbx_skill_md md;

	ck_assert_int_eq(sbx_skill_md_parse(text, strlen(text), &md), 0);
	ck_assert_str_eq(md.name, "x");
	ck_assert_str_eq(md.description, "C# and F# are kept");
	ck_assert_str_eq(md.body, "body");
	sbx_skill_md_free(&md);
}
END_TEST

START_TEST(plain_value_keeps_colons_and_continues)
{
	ck_assert_str_eq(value_of("---\nd: Use when: the user asks\n---\n", "d"),
	                 "Use when: the user asks");
	ck_assert_str_eq(value_of("---\nd: one\n  two\n\n  three\nx: y\n---\n", "d"),
	                 "one two\nthree");
	ck_assert_str_eq(value_of("---\nd:\n  on the next\n  lines\n---\n", "d"),
	                 "on the next lines");
	ck_assert_str_eq(value_of("---\nd:\n  \"quoted below\"\n---\n", "d"), "quoted below");
	ck_assert_str_eq(value_of("---\nd:\n---\n", "d"), "");
	/* Lenient where YAML is strict: an indented "b: 2" continues the plain scalar. */
	ck_assert_str_eq(value_of("---\na: 1\n  b: 2\n---\n", "a"), "1 b: 2");
}
END_TEST

START_TEST(double_quoted_escapes)
{
	ck_assert_str_eq(value_of("---\nd: \"a\\tb\\n\\\"q\\\" \\\\ \\x41\\u00e9"
	                          "\\U0001F600\"\n---\n", "d"),
	                 "a\tb\n\"q\" \\ A\xC3\xA9\xF0\x9F\x98\x80");
	ck_assert_str_eq(value_of("---\nd: \"x\" # comment\n---\n", "d"), "x");
	ck_assert_str_eq(value_of("---\nd: \"folded\n  over   \n\n  lines\"\n---\n", "d"),
	                 "folded over\nlines");
	ck_assert_str_eq(value_of("---\nd: \"joined\\\n  here\"\n---\n", "d"), "joinedhere");
	ck_assert_str_eq(value_of("---\nd: \"kept \\ \"\n---\n", "d"), "kept  ");
	FAILS("---\nd: \"bad \\q\"\n---\n", -SBX_EINVAL, "invalid escape");
	FAILS("---\nd: \"\\ud800\"\n---\n", -SBX_EINVAL, "invalid escape");
	FAILS("---\nd: \"\\x4\"\n---\n", -SBX_EINVAL, "invalid escape");
	FAILS("---\nd: \"nul \\0\"\n---\n", -SBX_EINVAL, "NUL character");
	FAILS("---\nd: \"x\" y\n---\n", -SBX_EINVAL, "after the closing quote");
	FAILS("---\nd: \"open\nname: x\n---\nbody\n", -SBX_EINVAL, "no closing \"");
	FAILS("---\nd: \"open\\", -SBX_EINVAL, "no closing");
}
END_TEST

START_TEST(single_quoted)
{
	ck_assert_str_eq(value_of("---\nd: 'it''s \\n raw'\n---\n", "d"), "it's \\n raw");
	ck_assert_str_eq(value_of("---\nd: 'two\n   lines'\n---\n", "d"), "two lines");
	ck_assert_str_eq(value_of("---\nd: ''\n---\n", "d"), "");
	FAILS("---\nd: 'open\n---\n", -SBX_EINVAL, "no closing '");
}
END_TEST

START_TEST(block_scalars)
{
	ck_assert_str_eq(value_of("---\nd: |\n  line 1\n    indented\n\n  line 3\nx: y\n---\n",
	                          "d"), "line 1\n  indented\n\nline 3\n");
	ck_assert_str_eq(value_of("---\nd: |-\n  a\n  b\n\n---\n", "d"), "a\nb");
	ck_assert_str_eq(value_of("---\nd: |+\n  a\n\n\nx: y\n---\n", "d"), "a\n\n\n");
	ck_assert_str_eq(value_of("---\nd: >\n  folded\n  text\n\n  para\n    more\n  end\n"
	                          "---\n", "d"), "folded text\npara\n  more\nend\n");
	ck_assert_str_eq(value_of("---\nd: >-\n  a\n  b\n---\n", "d"), "a b");
	ck_assert_str_eq(value_of("---\nd: |2 # comment\n    four\n---\n", "d"), "  four\n");
	ck_assert_str_eq(value_of("---\nd: |\n---\n", "d"), "");
	FAILS("---\nd: |x\n  a\n---\n", -SBX_EINVAL, "block scalar header");
	FAILS("---\nd: | text\n  a\n---\n", -SBX_EINVAL, "after the block scalar");
}
END_TEST

START_TEST(nested_values_are_skipped)
{
	const char *text = "---\nname: n\nmetadata:\n  version: 1\n  deep:\n    deeper: [1, 2]\n"
	                   "allowed-tools: [Read, Grep]\nlist:\n- a\n- b\ndescription: d\n---\n";
	sbx_frontmatter fm;

	ck_assert_int_eq(sbx_frontmatter_parse(text, strlen(text), "SKILL.md", &fm), 0);
	ck_assert_uint_eq(fm.n, 5);
	ck_assert_ptr_null(sbx_frontmatter_get(&fm, "metadata")->value);
	ck_assert_ptr_null(sbx_frontmatter_get(&fm, "allowed-tools")->value);
	ck_assert_ptr_null(sbx_frontmatter_get(&fm, "list")->value);
	ck_assert_str_eq(sbx_frontmatter_get(&fm, "description")->value, "d");
	ck_assert_uint_eq(sbx_frontmatter_get(&fm, "description")->line, 11);
	sbx_frontmatter_free(&fm);

	sbx_skill_md md;
	const char *bad = "---\nname:\n  a: b\ndescription: d\n---\n";
	ck_assert_int_eq(sbx_skill_md_parse(bad, strlen(bad), &md), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "key 'name': must be a string"));
}
END_TEST

START_TEST(structure_errors)
{
	FAILS("name: x\n", -SBX_EINVAL, "no front matter");
	FAILS("", -SBX_EINVAL, "no front matter");
	FAILS("---\nname: x\n", -SBX_EINVAL, "no closing '---'");
	FAILS("---\nname x\n---\n", -SBX_EINVAL, "line 2: expected 'key: value'");
	FAILS("---\n- item\n---\n", -SBX_EINVAL, "line 2: expected 'key: value'");
	FAILS("---\n: [a, b]\n---\n", -SBX_EINVAL, "line 2: expected 'key: value'");
	FAILS("---\nd: \"x\"\n  more\n---\n", -SBX_EINVAL, "unexpected indentation");
	FAILS("---\nname: a\nname: b\n---\n", -SBX_EINVAL, "given twice (first on line 2)");
}
END_TEST

START_TEST(hostile_bytes)
{
	static const char nul[] = "---\nname: a\0b\ndescription: d\n---\n";
	FAILS(nul, -SBX_EINVAL, "line 2: contains a NUL byte");
	FAILS("---\nname: ok\ndescription: \xff\xfe\n---\n", -SBX_EINVAL,
	            "line 3: key 'description': not valid UTF-8");
	FAILS("---\nname: ok\n---\nbody \xc0\xaf\n", -SBX_EINVAL,
	            "line 4: the body is not valid UTF-8");

	size_t big = SBX_FRONTMATTER_MAX + 1;
	char *huge = malloc(big);
	memset(huge, 'a', big);
	memcpy(huge, "---\n", 4);
	parse_fails(huge, big, -SBX_EFBIG, "more than the limit");

	/* Keys cost a look at each earlier one: their number is capped. */
	size_t len = (size_t)sprintf(huge, "---\n");
	for (int i = 0; i <= SBX_FRONTMATTER_KEYS_MAX; i++)
		len += (size_t)sprintf(huge + len, "k%d: v\n", i);
	len += (size_t)sprintf(huge + len, "---\n");
	parse_fails(huge, len, -SBX_EINVAL, "line 1002: more than 1000 keys");
	free(huge);
}
END_TEST

START_TEST(deep_nesting_is_cheap)
{
	/* Ever deeper lines under one key (1..500 levels, as far as 700 KB go): libyaml's event
	 * parser does not recurse, and nested values are read, checked and not kept. */
	size_t n = 100000, cap = n * 7 + 64, len = 0;
	char *text = malloc(cap);
	len += (size_t)sprintf(text, "---\nmeta:\n");
	for (size_t i = 0; i < n; i++) {
		size_t depth = 1 + i % 500;
		if (len + depth + 8 > cap)
			break;
		memset(text + len, ' ', depth);
		len += depth;
		len += (size_t)sprintf(text + len, "k:\n");
	}
	len += (size_t)sprintf(text + len, "---\n");
	sbx_frontmatter fm;
	ck_assert_int_eq(sbx_frontmatter_parse(text, len, "SKILL.md", &fm), 0);
	ck_assert_uint_eq(fm.n, 1);
	ck_assert_ptr_null(fm.fields[0].value);
	sbx_frontmatter_free(&fm);

	/* The same lines as unclosed flow collections ("- [{") are not YAML: refused at the
	 * first line libyaml cannot take, without reading the rest. */
	len = (size_t)sprintf(text, "---\nmeta:\n");
	for (size_t i = 0; i < n && len + 512 < cap; i++) {
		memset(text + len, ' ', 1 + i % 500);
		len += 1 + i % 500;
		len += (size_t)sprintf(text + len, "- [{\n");
	}
	len += (size_t)sprintf(text + len, "---\n");
	parse_fails(text, len, -SBX_EINVAL, "line 4: key 'meta': ");

	/* Past 1000 levels nesting is refused: it would only grow libyaml's stacks. */
	len = (size_t)sprintf(text, "---\nmeta: ");
	for (int i = 0; i < 1001; i++)
		text[len++] = '[';
	len += (size_t)sprintf(text + len, "\n---\n");
	parse_fails(text, len, -SBX_EINVAL, "key 'meta': nested deeper than 1000 levels");
	free(text);
}
END_TEST

START_TEST(yaml_rules)
{
	/* Lenient where YAML is strict: values with ": " (and '@', '`', '%' at the start) are
	 * quoted before libyaml reads them, in nested mappings too; quotes in them are kept. */
	ck_assert_str_eq(value_of("---\nd: it's: 'quoted' # c\n  on: two\n---\n", "d"),
	                 "it's: 'quoted' on: two");
	ck_assert_str_eq(value_of("---\nd: @mention `code` 50%\n---\n", "d"),
	                 "@mention `code` 50%");
	ck_assert_str_eq(value_of("---\nd: - a\n\tb\n---\n", "d"), "- a b");
	ck_assert_str_eq(value_of("---\nm:\n  k: use when: x\nd: |\n  a: b: c\n---\n", "d"),
	                 "a: b: c\n");
	/* Scalars are text as written: no tag resolution; tags and anchors are ignored. */
	ck_assert_str_eq(value_of("---\nd: null\n---\n", "d"), "null");
	ck_assert_str_eq(value_of("---\nd: !!str &a x\n---\n", "d"), "x");
	ck_assert_str_eq(value_of("---\n\"d\": 'q'\n---\n", "d"), "q");
	/* Aliases are refused: they are how "billion laughs" documents grow. */
	FAILS("---\na: &x [1]\nb: *x\n---\n", -SBX_EINVAL, "line 3: aliases");
	FAILS("---\nm: {a: &x 1, b: *x}\n---\n", -SBX_EINVAL, "key 'm': aliases");
	/* Keys: readable scalars only; libyaml's own messages name the line and key. */
	FAILS("---\n? [a]\n: b\n---\n", -SBX_EINVAL, "line 2: expected 'key: value'");
	FAILS("---\n\"a\\0b\": c\n---\n", -SBX_EINVAL, "a key contains a NUL");
	FAILS("---\nm: [a, b\nx: y\n---\n", -SBX_EINVAL, "line 3: key 'x': ");
	FAILS("---\nd: \x01\n---\n", -SBX_EINVAL, "line 2: key 'd': control characters");
	FAILS("---\nd: x\n--- y\n---\n", -SBX_EINVAL, "line 3: a second YAML document");
	FAILS("---\nd: |0\n  a\n---\n", -SBX_EINVAL, "line 2: key 'd': invalid block scalar");
}
END_TEST

static void skill_fails(const char *text, const char *fragment)
{
	sbx_skill_md md;
	int r = sbx_skill_md_parse(text, strlen(text), &md);

	ck_assert_msg(r == -SBX_EINVAL, "expected -SBX_EINVAL for %s, got %d", text, r);
	ck_assert_msg(strstr(sbx_last_error(), fragment), "message '%s' lacks '%s'",
	              sbx_last_error(), fragment);
	ck_assert_ptr_null(md.name);
}

START_TEST(skill_required_fields)
{
	skill_fails("---\ndescription: d\n---\n", "has no 'name'");
	skill_fails("---\nname: n\n---\n", "has no 'description'");
	skill_fails("---\nname: ''\ndescription: d\n---\n", "key 'name': must not be empty");
	skill_fails("---\nname: n\ndescription: '  '\n---\n", "key 'description': must not be "
	            "empty");
	skill_fails("---\nname: n\ndescription: \"a\\x07\"\n---\n", "control character U+0007");
	skill_fails("---\nname: a/b\ndescription: d\n---\n", "must not contain '/'");
	skill_fails("---\nname: \"a\\tb\"\ndescription: d\n---\n", "control characters");
	skill_fails("---\nname: \"a\\u2028\"\ndescription: d\n---\n", "control characters");
	skill_fails("---\nname: \" a\"\ndescription: d\n---\n", "white space");
	skill_fails("---\nname: "
	            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"
	            "description: d\n---\n", "longer than 64");

	/* 64 characters of two bytes each are fine; descriptions keep newlines and tabs. */
	char text[512];
	char name[200] = "";
	for (int i = 0; i < 64; i++)
		strcat(name, "\xC3\xA9");
	snprintf(text, sizeof text, "---\nname: %s\ndescription: |\n  a\tb\n  c\n---\n", name);
	sbx_skill_md md;
	ck_assert_int_eq(sbx_skill_md_parse(text, strlen(text), &md), 0);
	ck_assert_str_eq(md.name, name);
	ck_assert_str_eq(md.description, "a\tb\nc\n");
	ck_assert_uint_eq(md.body_len, 0);
	sbx_skill_md_free(&md);
}
END_TEST

START_TEST(name_rules)
{
	const char *why = NULL;

	ck_assert(sbx_skill_name_valid("pdf tools (v2)", &why));
	ck_assert(sbx_skill_name_valid("\xe6\x97\xa5\xe6\x9c\xac", NULL));
	ck_assert(!sbx_skill_name_valid("", &why));
	ck_assert(!sbx_skill_name_valid("a\x7f", &why));
	ck_assert(!sbx_skill_name_valid("a\xc2\x85", &why));
	ck_assert(!sbx_skill_name_valid("\xff", &why));
	ck_assert_str_eq(why, "is not valid UTF-8");
}
END_TEST

static Suite *frontmatter_suite(void)
{
	Suite *s = suite_create("frontmatter");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, plain_values_and_body);
	tcase_add_test(tc, crlf_bom_comments_and_trailing_blanks);
	tcase_add_test(tc, plain_value_keeps_colons_and_continues);
	tcase_add_test(tc, double_quoted_escapes);
	tcase_add_test(tc, single_quoted);
	tcase_add_test(tc, block_scalars);
	tcase_add_test(tc, nested_values_are_skipped);
	tcase_add_test(tc, structure_errors);
	tcase_add_test(tc, hostile_bytes);
	tcase_add_test(tc, deep_nesting_is_cheap);
	tcase_add_test(tc, yaml_rules);
	tcase_add_test(tc, skill_required_fields);
	tcase_add_test(tc, name_rules);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(frontmatter_suite());
}
