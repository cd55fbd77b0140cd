/* Glob patterns (every syntax element, edge cases, bad patterns) and .gitignore rules
 * (negation, anchoring, directory-only rules, nested files). */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "support.h"
#include "util/gitignore.h"
#include "util/glob.h"

static bool gm_flags(const char *pattern, unsigned flags, const char *path)
{
	sbx_glob *g = NULL;
	int r = sbx_glob_compile(pattern, flags, &g);
	bool m;

	ck_assert_msg(r == 0, "compile '%s': %s", pattern, sbx_last_error());
	m = sbx_glob_match(g, path, strlen(path));
	sbx_glob_free(g);
	return m;
}

static bool gm(const char *pattern, const char *path)
{
	return gm_flags(pattern, 0, path);
}

#define MATCH(p, s) ck_assert_msg(gm(p, s), "'%s' should match '%s'", p, s)
#define NO_MATCH(p, s) ck_assert_msg(!gm(p, s), "'%s' should not match '%s'", p, s)

/* The error message of a pattern that must not compile. */
static const char *bad(const char *pattern, unsigned flags)
{
	static char msg[512];
	sbx_glob *g = NULL;
	int r = sbx_glob_compile(pattern, flags, &g);

	ck_assert_msg(r == -SBX_EINVAL, "'%s' compiled (r=%d)", pattern, r);
	ck_assert_ptr_null(g);
	snprintf(msg, sizeof msg, "%s", sbx_last_error());
	return msg;
}

START_TEST(literal_and_components)
{
	MATCH("a.c", "a.c");
	NO_MATCH("a.c", "b/a.c");
	NO_MATCH("a.c", "a.cc");
	NO_MATCH("a.c", "a");
	MATCH("src/a.c", "src/a.c");
	NO_MATCH("src/a.c", "src");
	MATCH("./src//a.c", "src/a.c");   /* "." and empty components are dropped */
	MATCH("src/", "src");
	NO_MATCH("a", "");
	MATCH("é/ü.txt", "é/ü.txt");
	NO_MATCH(".", "a");               /* no components left: matches nothing */
	NO_MATCH("/", "a");
}
END_TEST

START_TEST(star_and_question)
{
	MATCH("*", "abc");
	MATCH("*", ".hidden");           /* dotfiles are not special */
	NO_MATCH("*", "a/b");             /* '*' stays inside one component */
	MATCH("*.py", "x.py");
	MATCH("*.py", ".py");
	NO_MATCH("*.py", "dir/x.py");
	MATCH("a*b*c", "abc");
	MATCH("a*b*c", "aXbYbZc");
	NO_MATCH("a*b*c", "aXbYcZ");
	MATCH("*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaab");
	NO_MATCH("*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	MATCH("?.c", "a.c");
	MATCH("?.c", "é.c");              /* one character, not one byte */
	NO_MATCH("?.c", "ab.c");
	NO_MATCH("a?b", "a/b");
	MATCH("a**b", "aXYb");            /* "**" inside a component is '*' */
	NO_MATCH("a**b", "a/b");
	MATCH("x/*/z", "x/y/z");
	NO_MATCH("x/*/z", "x/z");
}
END_TEST

START_TEST(globstar)
{
	MATCH("**/*.py", "a.py");
	MATCH("**/*.py", "a/b/c.py");
	NO_MATCH("**/*.py", "a/b/c.pyc");
	MATCH("src/**/*.c", "src/a.c");
	MATCH("src/**/*.c", "src/x/y/a.c");
	NO_MATCH("src/**/*.c", "lib/src/a.c");
	MATCH("**/test/**/*.c", "a/test/b/c.c");
	MATCH("**/test/**/*.c", "test/c.c");
	MATCH("a/**", "a/b");
	MATCH("a/**", "a/b/c");
	NO_MATCH("a/**", "a");            /* below a, not a itself */
	MATCH("**", "a/b/c");
	MATCH("a/**/**/b", "a/b");
	MATCH("a/**/b", "a/x/y/b");
	NO_MATCH("a/**/b", "a/x/y/c");
	MATCH("**/a/**/b/**/c", "x/a/y/b/z/c");
	NO_MATCH("**/a/**/b/**/c", "x/a/y/c/z/b");
}
END_TEST

START_TEST(classes)
{
	MATCH("[abc].c", "b.c");
	NO_MATCH("[abc].c", "d.c");
	MATCH("[a-z]1", "q1");
	NO_MATCH("[a-z]1", "Q1");
	MATCH("[!a-z]1", "Q1");
	MATCH("[^a-z]1", "Q1");
	NO_MATCH("[^a-z]1", "q1");
	MATCH("[]]", "]");
	MATCH("[!]]", "x");
	NO_MATCH("[!]]", "]");
	MATCH("[a-]", "-");
	MATCH("[\\]x]", "]");
	MATCH("[[:digit:]][[:upper:]]", "7Q");
	NO_MATCH("[[:digit:]]", "x");
	MATCH("[[:alpha:]_]*", "_x");
	MATCH("[é-ú]", "ö");
	NO_MATCH("[é-ú]", "a");
	NO_MATCH("a[/]b", "a/b");         /* a class never matches '/' */
	MATCH("[{]", "{");                /* braces inside classes are literal */
	MATCH("*.[ch]", "x.h");
}
END_TEST

START_TEST(braces)
{
	MATCH("*.{c,h}", "a.c");
	MATCH("*.{c,h}", "a.h");
	NO_MATCH("*.{c,h}", "a.o");
	MATCH("{src,lib}/**/*.{c,h}", "lib/x/y.h");
	NO_MATCH("{src,lib}/**/*.{c,h}", "doc/y.h");
	MATCH("a{b,c{d,e}}f", "acef");
	MATCH("a{b,c{d,e}}f", "abf");
	NO_MATCH("a{b,c{d,e}}f", "acf");
	MATCH("a{,x}b", "ab");
	MATCH("{single}", "single");
	MATCH("a}b", "a}b");              /* a stray '}' is literal */
	MATCH("a,b", "a,b");
	MATCH("{a\\,b,c}", "a,b");
	MATCH("{[,]x,y}", ",x");          /* a comma inside a class does not split */
	MATCH("{a/b,c}/d", "a/b/d");      /* alternatives may span components */
	/* Without braces (gitignore) they are literal characters. */
	ck_assert(gm_flags("{a,b}", SBX_GLOB_NO_BRACES, "{a,b}"));
	ck_assert(!gm_flags("{a,b}", SBX_GLOB_NO_BRACES, "a"));
	ck_assert(gm_flags("x{", SBX_GLOB_NO_BRACES, "x{"));
}
END_TEST

START_TEST(escapes)
{
	MATCH("\\*", "*");
	NO_MATCH("\\*", "a");
	MATCH("\\?\\[\\{", "?[{");
	MATCH("a\\\\b", "a\\b");
	MATCH("\\#x", "#x");
}
END_TEST

START_TEST(invalid_utf8)
{
	MATCH("\xff*", "\xff" "abc");
	MATCH("?", "\xff");
	NO_MATCH("\xfe", "\xff");
	MATCH("*", "a\xc3");              /* a truncated sequence is a byte of its own */
}
END_TEST

START_TEST(bad_patterns)
{
	ck_assert_ptr_nonnull(strstr(bad("a[bc", 0), "unclosed '['"));
	ck_assert_ptr_nonnull(strstr(bad("a[bc", 0), "at byte 1"));
	ck_assert_ptr_nonnull(strstr(bad("x{a,b", 0), "unclosed '{' at byte 1"));
	ck_assert_ptr_nonnull(strstr(bad("{a,{b}", 0), "unclosed '{' at byte 0"));
	ck_assert_ptr_nonnull(strstr(bad("a\\", 0), "backslash"));
	ck_assert_ptr_nonnull(strstr(bad("[z-a]", 0), "reversed range"));
	ck_assert_ptr_nonnull(strstr(bad("[[:nope:]]", 0), "unknown character class"));
	ck_assert_ptr_nonnull(strstr(bad("[[:alpha", 0), "unclosed"));
	ck_assert_ptr_nonnull(strstr(bad("[", SBX_GLOB_NO_BRACES), "unclosed '['"));

	char *big = malloc(SBX_GLOB_MAX_PATTERN + 2);
	memset(big, 'a', SBX_GLOB_MAX_PATTERN + 1);
	big[SBX_GLOB_MAX_PATTERN + 1] = '\0';
	ck_assert_ptr_nonnull(strstr(bad(big, 0), "the limit is 4096"));
	big[SBX_GLOB_MAX_PATTERN] = '\0';
	MATCH(big, big);                  /* exactly at the limit is fine */
	free(big);

	/* 2^9 = 512 alternatives: over the cap of 256. 2^8 is fine. */
	ck_assert_ptr_nonnull(strstr(bad("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}", 0),
	                             "more than 256 alternatives"));
	MATCH("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}", "abababab");

	char groups[400] = "";
	for (int i = 0; i < 70; i++)
		strcat(groups, "{a}");
	ck_assert_ptr_nonnull(strstr(bad(groups, 0), "too many '{' groups"));
}
END_TEST

START_TEST(may_match_below)
{
	sbx_glob *g = NULL;

	ck_assert_int_eq(sbx_glob_compile("src/*/x/*.c", 0, &g), 0);
	ck_assert(sbx_glob_may_match_below(g, "", 0));
	ck_assert(sbx_glob_may_match_below(g, "src", 3));
	ck_assert(sbx_glob_may_match_below(g, "src/a", 5));
	ck_assert(sbx_glob_may_match_below(g, "src/a/x", 7));
	ck_assert(!sbx_glob_may_match_below(g, "src/a/x/y", 9));
	ck_assert(!sbx_glob_may_match_below(g, "lib", 3));
	ck_assert(!sbx_glob_may_match_below(g, "src/a/y", 7));
	sbx_glob_free(g);

	ck_assert_int_eq(sbx_glob_compile("{docs,src/**}/*.md", 0, &g), 0);
	ck_assert(sbx_glob_may_match_below(g, "docs", 4));
	ck_assert(!sbx_glob_may_match_below(g, "docs/a", 6));
	ck_assert(sbx_glob_may_match_below(g, "src/a/b/c", 9));
	ck_assert(!sbx_glob_may_match_below(g, "node_modules", 12));
	sbx_glob_free(g);

	ck_assert_int_eq(sbx_glob_compile("*.py", 0, &g), 0);
	ck_assert(sbx_glob_may_match_below(g, "", 0));
	ck_assert(!sbx_glob_may_match_below(g, "a", 1));
	sbx_glob_free(g);
}
END_TEST

/* ---------------------------------------------------------------------------------------
 * .gitignore
 * ------------------------------------------------------------------------------------- */

static sbx_gitignore *gi(const char *text)
{
	sbx_gitignore *g = NULL;

	ck_assert_int_eq(sbx_gitignore_parse(text, strlen(text), &g), 0);
	return g;
}

static enum sbx_ignore_verdict verdict(const sbx_gitignore *g, const char *path, bool dir)
{
	return sbx_gitignore_match(g, path, strlen(path), dir);
}

START_TEST(gitignore_basics)
{
	sbx_gitignore *g = gi("# a comment\n\n*.log\n   \nbuild/\n/root.txt\ndocs/*.html\n"
	                      "\\#hash\n\\!bang\ntrail   \nkeep\\ \n**/deep/**\nx/**/y\r\n");

	ck_assert_int_eq(verdict(g, "a.log", false), SBX_IGNORE_EXCLUDE);
	ck_assert_int_eq(verdict(g, "x/y/a.log", false), SBX_IGNORE_EXCLUDE);
	ck_assert_int_eq(verdict(g, "a.txt", false), SBX_IGNORE_NONE);
	ck_assert_int_eq(verdict(g, "# a comment", false), SBX_IGNORE_NONE);
	/* Directory-only. */
	ck_assert_int_eq(verdict(g, "build", true), SBX_IGNORE_EXCLUDE);
	ck_assert_int_eq(verdict(g, "src/build", true), SBX_IGNORE_EXCLUDE);
	ck_assert_int_eq(verdict(g, "build", false), SBX_IGNORE_NONE);
	/* Anchored by a leading or a middle slash. */
	ck_assert_int_eq(verdict(g, "root.txt", false), SBX_IGNORE_EXCLUDE);
	ck_assert_int_eq(verdict(g, "sub/root.txt", false), SBX_IGNORE_NONE);
	ck_assert_int_eq(verdict(g, "docs/a.html", false), SBX_IGNORE_EXCLUDE);
	ck_assert_int_eq(verdict(g, "x/docs/a.html", false), SBX_IGNORE_NONE);
	ck_assert_int_eq(verdict(g, "docs/sub/a.html", false), SBX_IGNORE_NONE);
	/* Escapes and trailing spaces. */
	ck_assert_int_eq(verdict(g, "#hash", false), SBX_IGNORE_EXCLUDE);
	ck_assert_int_eq(verdict(g, "!bang", false), SBX_IGNORE_EXCLUDE);
	ck_assert_int_eq(verdict(g, "trail", false), SBX_IGNORE_EXCLUDE);
	ck_assert_int_eq(verdict(g, "keep ", false), SBX_IGNORE_EXCLUDE);
	ck_assert_int_eq(verdict(g, "keep", false), SBX_IGNORE_NONE);
	/* "**" forms; a CRLF line. */
	ck_assert_int_eq(verdict(g, "a/deep/b/c", false), SBX_IGNORE_EXCLUDE);
	ck_assert_int_eq(verdict(g, "deep", true), SBX_IGNORE_NONE);
	ck_assert_int_eq(verdict(g, "x/y", false), SBX_IGNORE_EXCLUDE);
	ck_assert_int_eq(verdict(g, "x/a/b/y", false), SBX_IGNORE_EXCLUDE);
	sbx_gitignore_free(g);
}
END_TEST

START_TEST(gitignore_negation)
{
	sbx_gitignore *g = gi("*.log\n!important.log\nimportant.log.d/\n!/keep/\n");

	ck_assert_int_eq(verdict(g, "a.log", false), SBX_IGNORE_EXCLUDE);
	ck_assert_int_eq(verdict(g, "important.log", false), SBX_IGNORE_INCLUDE);
	ck_assert_int_eq(verdict(g, "sub/important.log", false), SBX_IGNORE_INCLUDE);
	ck_assert_int_eq(verdict(g, "keep", true), SBX_IGNORE_INCLUDE);
	sbx_gitignore_free(g);

	/* The last matching rule wins. */
	g = gi("!a.txt\n*.txt\n");
	ck_assert_int_eq(verdict(g, "a.txt", false), SBX_IGNORE_EXCLUDE);
	sbx_gitignore_free(g);
}
END_TEST

START_TEST(gitignore_empty_and_invalid)
{
	sbx_gitignore *g = NULL;

	ck_assert_int_eq(sbx_gitignore_parse("# only\n\n  \n!\n/\n", 15, &g), 0);
	ck_assert_ptr_null(g);
	ck_assert_int_eq(verdict(NULL, "a", false), SBX_IGNORE_NONE);
	/* A bad line is skipped, the others still work; braces are literal. */
	g = gi("[oops\n*.o\n{a,b}\n");
	ck_assert_int_eq(verdict(g, "x.o", false), SBX_IGNORE_EXCLUDE);
	ck_assert_int_eq(verdict(g, "[oops", false), SBX_IGNORE_NONE);
	ck_assert_int_eq(verdict(g, "{a,b}", false), SBX_IGNORE_EXCLUDE);
	ck_assert_int_eq(verdict(g, "a", false), SBX_IGNORE_NONE);
	sbx_gitignore_free(g);
}
END_TEST

START_TEST(gitignore_nested_stack)
{
	sbx_ignore_stack s = { 0 };

	/* The root ignores *.txt and gen/; src/.gitignore re-includes notes.txt and ignores
	 * tmp; src/a/.gitignore ignores notes.txt again below it. */
	ck_assert_int_eq(sbx_ignore_stack_push(&s, gi("*.txt\ngen/\n"), 0), 0);
	ck_assert_int_eq(sbx_ignore_stack_push(&s, NULL, 0), 0);   /* nothing pushed */
	ck_assert_uint_eq(s.n, 1);
	ck_assert_int_eq(sbx_ignore_stack_push(&s, gi("!notes.txt\n/tmp\n"), 4), 0);
	ck_assert(sbx_ignore_stack_ignored(&s, "x.txt", 5, false));
	ck_assert(sbx_ignore_stack_ignored(&s, "src/x.txt", 9, false));
	ck_assert(!sbx_ignore_stack_ignored(&s, "src/notes.txt", 13, false));
	ck_assert(!sbx_ignore_stack_ignored(&s, "src/b/notes.txt", 15, false));
	ck_assert(sbx_ignore_stack_ignored(&s, "src/tmp", 7, true));
	ck_assert(!sbx_ignore_stack_ignored(&s, "tmp", 3, true));   /* anchored to src/ */
	ck_assert(!sbx_ignore_stack_ignored(&s, "src/c/tmp", 9, true));
	ck_assert(sbx_ignore_stack_ignored(&s, "src/gen", 7, true));
	ck_assert(!sbx_ignore_stack_ignored(&s, "src", 3, true));
	ck_assert_int_eq(sbx_ignore_stack_push(&s, gi("notes.txt\n"), 6), 0);
	ck_assert(sbx_ignore_stack_ignored(&s, "src/a/notes.txt", 15, false));
	sbx_ignore_stack_truncate(&s, 2);
	ck_assert(!sbx_ignore_stack_ignored(&s, "src/a/notes.txt", 15, false));
	sbx_ignore_stack_free(&s);
	ck_assert_uint_eq(s.n, 0);
}
END_TEST

static Suite *glob_suite(void)
{
	Suite *s = suite_create("glob");
	TCase *tc = tcase_create("glob");

	tcase_add_test(tc, literal_and_components);
	tcase_add_test(tc, star_and_question);
	tcase_add_test(tc, globstar);
	tcase_add_test(tc, classes);
	tcase_add_test(tc, braces);
	tcase_add_test(tc, escapes);
	tcase_add_test(tc, invalid_utf8);
	tcase_add_test(tc, bad_patterns);
	tcase_add_test(tc, may_match_below);
	suite_add_tcase(s, tc);
	tc = tcase_create("gitignore");
	tcase_add_test(tc, gitignore_basics);
	tcase_add_test(tc, gitignore_negation);
	tcase_add_test(tc, gitignore_empty_and_invalid);
	tcase_add_test(tc, gitignore_nested_stack);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(glob_suite());
}
