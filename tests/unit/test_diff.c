/* Unit tests of the unified diff: the exact text of difflib.unified_diff for known cases, for
 * random texts (with long common heads and tails) that applying the diff to the old text gives
 * the new one, and the limits that keep a diff of hostile texts cheap. */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "util/diff.h"

static char *diff_of(const char *a, const char *b)
{
	sbx_buf out = { 0 };

	ck_assert_int_eq(sbx_diff_unified(&out, "a/f", a, strlen(a), "b/f", b, strlen(b), NULL,
	                                  NULL, 0), 0);
	ck_assert(!out.oom);
	return sbx_buf_steal(&out, NULL);
}

static void expect_diff(const char *a, const char *b, const char *want)
{
	char *d = diff_of(a, b);

	ck_assert_str_eq(d, want);
	free(d);
}

/* Expected texts produced by Python's difflib.unified_diff(..., 'a/f', 'b/f'). */
START_TEST(matches_difflib)
{
	expect_diff("a\nb\nc\n", "a\nB\nc\n", "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
	expect_diff("", "x\n", "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+x\n");
	expect_diff("x\n", "", "--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-x\n");
	expect_diff("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n",
	            "1\n2\nX\n4\n5\n6\n7\n8\n9\n10\n11\n12\nY\n14\n15\n",
	            "--- a/f\n+++ b/f\n@@ -1,6 +1,6 @@\n 1\n 2\n-3\n+X\n 4\n 5\n 6\n"
	            "@@ -10,6 +10,6 @@\n 10\n 11\n 12\n-13\n+Y\n 14\n 15\n");
	expect_diff("1\n2\n3\n4\n5\n6\n7\n8\n", "1\n2\n3\nX\n5\n6\n7\nY\n",
	            "--- a/f\n+++ b/f\n@@ -1,8 +1,8 @@\n 1\n 2\n 3\n-4\n+X\n 5\n 6\n 7\n-8\n+Y\n");
	expect_diff("same\n", "same\n", "");
}
END_TEST

START_TEST(marks_a_missing_final_newline)
{
	expect_diff("a\nb", "a\nc",
	            "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n"
	            "+c\n\\ No newline at end of file\n");
	expect_diff("a", "a\n", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n");
}
END_TEST

/* ---- applying a diff, to check random cases ---- */

struct lines {
	char **v;
	size_t n;
};

static struct lines split(const char *s)
{
	struct lines l = { calloc(strlen(s) + 2, sizeof(char *)), 0 };

	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) + 1 : strlen(s);

		l.v[l.n++] = strndup(s, n);
		s += n;
	}
	return l;
}

static void free_lines(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

/* Applies d to a; the diff's " " and "-" lines must match a exactly. */
static char *apply(const char *a, const char *d)
{
	struct lines old = split(a), patch = split(d);
	sbx_buf out = { 0 };
	size_t at = 0, i = 2;

	while (i < patch.n) {
		unsigned long a_start;
		ck_assert_int_eq(strncmp(patch.v[i], "@@ -", 4), 0);
		a_start = strtoul(patch.v[i] + 4, NULL, 10);
		/* "-0,0" means: insert before line 1. */
		size_t first = a_start == 0 ? 0 : a_start - 1;
		if (strstr(patch.v[i], ",0 +") && a_start > 0)
			first = a_start;
		while (at < first)
			sbx_buf_puts(&out, old.v[at++]);
		for (i++; i < patch.n && patch.v[i][0] != '@'; i++) {
			const char *l = patch.v[i];
			bool no_nl = i + 1 < patch.n && patch.v[i + 1][0] == '\\';
			size_t len = strlen(l + 1) - (no_nl ? 1 : 0);

			if (l[0] == '\\')
				continue;
			if (l[0] == ' ' || l[0] == '-') {
				ck_assert_uint_lt(at, old.n);
				ck_assert_mem_eq(old.v[at], l + 1, len);
				at++;
			}
			if (l[0] == ' ' || l[0] == '+')
				sbx_buf_append(&out, l + 1, len);
		}
	}
	while (at < old.n)
		sbx_buf_puts(&out, old.v[at++]);
	free_lines(&old);
	free_lines(&patch);
	return sbx_buf_steal(&out, NULL);
}

static char *random_text(unsigned *seed, int lines)
{
	sbx_buf b = { 0 };

	for (int i = 0; i < lines; i++)
		sbx_buf_printf(&b, "l%d\n", rand_r(seed) % 8);
	if (rand_r(seed) % 4 == 0)
		sbx_buf_puts(&b, "tail");
	return sbx_buf_steal(&b, NULL);
}

/* head + middle + tail, where only the middles of two texts differ. */
static char *framed(const char *head, const char *middle, const char *tail)
{
	char *s;

	ck_assert_int_ge(asprintf(&s, "%s%s%s", head, middle, tail), 0);
	return s;
}

START_TEST(random_diffs_apply)
{
	unsigned seed = 12345;

	for (int round = 0; round < 500; round++) {
		/* Every other round the texts share a head and a tail, which the diff skips as
		 * bytes before it splits lines: the line numbers must still be right. */
		bool frame = round % 2;
		char *head = random_text(&seed, frame ? rand_r(&seed) % 30 : 0);
		char *tail = random_text(&seed, frame ? rand_r(&seed) % 30 : 0);
		char *ma = random_text(&seed, rand_r(&seed) % 40);
		char *mb = random_text(&seed, rand_r(&seed) % 40);
		char *a, *b, *d;

		/* A middle may end without a newline ("tail"): only at the very end of a text. */
		if (frame && (strstr(ma, "tail") || strstr(mb, "tail") || strstr(head, "tail"))) {
			free(tail);
			tail = strdup("");
		}
		if (frame && strstr(head, "tail")) {
			free(head);
			head = strdup("");
		}
		a = framed(head, ma, tail);
		b = framed(head, mb, tail);
		d = diff_of(a, b);
		free(head);
		free(tail);
		free(ma);
		free(mb);
		char *back = *d ? apply(a, d) : strdup(a);

		ck_assert_msg(strcmp(back, b) == 0, "round %d:\na=%s\nb=%s\ndiff=%s\ngot=%s", round, a,
		              b, d, back);
		free(a);
		free(b);
		free(d);
		free(back);
	}
}
END_TEST

/* Too different to search within the bound: still a correct diff. */
START_TEST(large_rewrites_stay_correct)
{
	sbx_buf a = { 0 }, b = { 0 };
	char *d, *back;

	for (int i = 0; i < 5000; i++) {
		sbx_buf_printf(&a, "old %d\n", i);
		sbx_buf_printf(&b, "new %d\n", i);
	}
	d = diff_of(a.data, b.data);
	back = apply(a.data, d);
	ck_assert_str_eq(back, b.data);
	free(d);
	free(back);
	sbx_buf_free(&a);
	sbx_buf_free(&b);
}
END_TEST

/* A text of n numbered lines, line `changed` (1-based, 0 = none) written differently. */
static char *numbered(size_t n, size_t changed)
{
	sbx_buf b = { 0 };

	for (size_t i = 1; i <= n; i++)
		sbx_buf_printf(&b, i == changed ? "line %zu, changed\n" : "line %zu\n", i);
	ck_assert(!b.oom);
	return sbx_buf_steal(&b, NULL);
}

/* A one-line edit deep in an 18 MB text: far past the limits as a whole, yet only the part
 * that differs counts, so the diff is made, with the right line numbers. */
START_TEST(an_edit_of_a_huge_text_keeps_its_diff)
{
	char *a = numbered(1500000, 0), *b = numbered(1500000, 1000000), *d;

	ck_assert_uint_gt(strlen(a), (size_t)16 << 20);
	d = diff_of(a, b);
	ck_assert_str_eq(d, "--- a/f\n+++ b/f\n@@ -999997,7 +999997,7 @@\n line 999997\n"
	                    " line 999998\n line 999999\n-line 1000000\n+line 1000000, changed\n"
	                    " line 1000001\n line 1000002\n line 1000003\n");
	free(d);
	free(a);
	free(b);
}
END_TEST

/* The case: a Write of a few bytes over 40 MiB of newlines. The diff is omitted, says
 * why with the sizes, and leaves the output as it was. */
START_TEST(a_huge_change_is_omitted)
{
	size_t n = (size_t)40 << 20;
	char *nl = malloc(n), why[256] = "";
	sbx_buf out = { 0 };

	ck_assert_ptr_nonnull(nl);
	memset(nl, '\n', n);
	sbx_buf_puts(&out, "kept");
	ck_assert_int_eq(sbx_diff_unified(&out, "a/f", nl, n, "b/f", "x\n", 2, NULL, why,
	                                  sizeof why), 1);
	ck_assert_str_eq(out.data, "kept");
	ck_assert_msg(strstr(why, "41943040 bytes of the old text"), "%s", why);
	/* The other way round too. */
	ck_assert_int_eq(sbx_diff_unified(&out, "a/f", "x\n", 2, "b/f", nl, n, NULL, why,
	                                  sizeof why), 1);
	ck_assert_str_eq(out.data, "kept");
	sbx_buf_free(&out);
	free(nl);
}
END_TEST

START_TEST(each_limit_is_kept)
{
	const sbx_diff_limits lines = { SBX_DIFF_MAX_BYTES, 100, SBX_DIFF_MAX_OUTPUT };
	const sbx_diff_limits output = { SBX_DIFF_MAX_BYTES, SBX_DIFF_MAX_LINES, 200 };
	char *a = numbered(1000, 0), *b = numbered(1000, 0), why[256];
	sbx_buf out = { 0 };

	/* 101 changed lines: over a line limit of 100, not over one of 101 lines of context. */
	for (char *p = b; (p = strstr(p, "line 5")); p += 5)
		p[0] = 'L';
	ck_assert_int_eq(sbx_diff_unified(&out, "a", a, strlen(a), "b", b, strlen(b), &lines, why,
	                                  sizeof why), 1);
	ck_assert_msg(strstr(why, "diffs are made up to 100 lines"), "%s", why);
	ck_assert_uint_eq(out.len, 0);
	ck_assert_int_eq(sbx_diff_unified(&out, "a", a, strlen(a), "b", b, strlen(b), &output, why,
	                                  sizeof why), 1);
	ck_assert_msg(strstr(why, "longer than 200 bytes"), "%s", why);
	ck_assert_uint_eq(out.len, 0);
	ck_assert_int_eq(sbx_diff_unified(&out, "a", a, strlen(a), "b", b, strlen(b), NULL, why,
	                                  sizeof why), 0);
	ck_assert_uint_gt(out.len, 200);
	sbx_buf_free(&out);
	free(a);
	free(b);
}
END_TEST

static Suite *diff_suite(void)
{
	Suite *s = suite_create("diff");
	TCase *t = tcase_create("diff");

	tcase_add_test(t, matches_difflib);
	tcase_add_test(t, marks_a_missing_final_newline);
	tcase_add_test(t, random_diffs_apply);
	tcase_add_test(t, large_rewrites_stay_correct);
	tcase_add_test(t, an_edit_of_a_huge_text_keeps_its_diff);
	tcase_add_test(t, a_huge_change_is_omitted);
	tcase_add_test(t, each_limit_is_kept);
	tcase_set_timeout(t, 120);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return test_run_suite(diff_suite());
}
