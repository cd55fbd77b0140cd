/* The subordinate id ranges a root-run sandbox maps to (util/subid.c, util/idmap.c): the
 * subuid(5) lines and the choices made from them, from text — no user namespace is made. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "support.h"
#include "util/idmap.h"
#include "util/subid.h"

static bool find(const char *text, const char *user, const char *uid, uint32_t *start,
                 uint32_t *count)
{
	struct sbx_subid_range r = { 0, 0 };
	bool found = sbx_subid_find(text, strlen(text), user, uid, &r);

	*start = r.start;
	*count = r.count;
	return found;
}

START_TEST(test_first_entry_of_the_user)
{
	uint32_t start, count;

	ck_assert(find("alice:100000:65536\nagentsbx:200000:65536\nagentsbx:300000:10\n",
	               "agentsbx", NULL, &start, &count));
	ck_assert_uint_eq(start, 200000);
	ck_assert_uint_eq(count, 65536);
	/* By uid, as subuid(5) allows; a comment and a blank line on the way. */
	ck_assert(find("# ranges\n\n1005:400000:1000\r\n", "nobody-by-name", "1005", &start, &count));
	ck_assert_uint_eq(start, 400000);
	ck_assert_uint_eq(count, 1000);
	/* A prefix of a name is not the name. */
	ck_assert(!find("agentsbx2:100000:65536\n", "agentsbx", NULL, &start, &count));
	ck_assert(!find("xagentsbx:100000:65536\n", "agentsbx", NULL, &start, &count));
}
END_TEST

START_TEST(test_unusable_lines_are_skipped)
{
	uint32_t start, count;

	/* Root's own id, an empty range, a range past the last id, junk: none counts. */
	ck_assert(!find("agentsbx:0:65536\n", "agentsbx", NULL, &start, &count));
	ck_assert(!find("agentsbx:100000:0\n", "agentsbx", NULL, &start, &count));
	ck_assert(!find("agentsbx:4294967290:10\n", "agentsbx", NULL, &start, &count));
	ck_assert(!find("agentsbx:100000\nagentsbx:1:2:3\nagentsbx:-5:10\nagentsbx: 5:10\n"
	                "agentsbx:99999999999:1\n:100000:65536\n", "agentsbx", NULL, &start, &count));
	/* ... and the next good one is taken. */
	ck_assert(find("agentsbx:0:10\nagentsbx:500000:65536", "agentsbx", NULL, &start, &count));
	ck_assert_uint_eq(start, 500000);
	ck_assert(!find("", "agentsbx", NULL, &start, &count));
	ck_assert(!sbx_subid_find(NULL, 0, "agentsbx", NULL, &(struct sbx_subid_range){ 0, 0 }));
}
END_TEST

START_TEST(test_overlaps)
{
	const char *text = "a:100000:65536\nb:200000:10\nbad line\n";

	ck_assert(sbx_subid_overlaps(text, strlen(text), 165535, 1));
	ck_assert(!sbx_subid_overlaps(text, strlen(text), 165536, 1000));
	ck_assert(sbx_subid_overlaps(text, strlen(text), 199000, 1001));
	ck_assert(!sbx_subid_overlaps(text, strlen(text), 199000, 1000));
	ck_assert(!sbx_subid_overlaps(text, strlen(text), 1, 0));
}
END_TEST

START_TEST(test_resolve_uses_both_files_or_the_fixed_range)
{
	struct sbx_idmap m;

	ck_assert_int_eq(sbx_idmap_resolve_text("ns", NULL, NULL, "agentsbx:300000:100000\n",
	                                        "agentsbx:400000:5000\n", &m), 0);
	ck_assert(m.on);
	ck_assert_uint_eq(m.uid, 300000);
	ck_assert_uint_eq(m.gid, 400000);
	ck_assert_uint_eq(m.count, 5000);           /* the smaller of the two, at most 65536 */
	ck_assert_ptr_nonnull(strstr(m.source, "agentsbx"));
	/* A uid range without a gid range is no range. */
	ck_assert_int_eq(sbx_idmap_resolve_text("ns", "bob", NULL, "bob:300000:65536\n", "",
	                                        &m), 0);
	ck_assert_uint_eq(m.uid, SBX_IDMAP_FIXED_START);
	ck_assert_uint_eq(m.gid, SBX_IDMAP_FIXED_START);
	ck_assert_uint_eq(m.count, SBX_IDMAP_MAX_COUNT);
	ck_assert_ptr_nonnull(strstr(m.source, "fixed range"));
	ck_assert_int_eq(sbx_idmap_resolve_text("ns", "big", NULL, "big:300000:1000000\n",
	                                        "big:300000:1000000\n", &m), 0);
	ck_assert_uint_eq(m.count, SBX_IDMAP_MAX_COUNT);
}
END_TEST

START_TEST(test_fixed_range_given_to_another_user_is_refused)
{
	struct sbx_idmap m;
	char line[64];

	snprintf(line, sizeof line, "carol:%u:10\n", SBX_IDMAP_FIXED_START + 100);
	ck_assert_int_eq(sbx_idmap_resolve_text("bwrap", NULL, NULL, line, "", &m), -SBX_ECONFIG);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "bwrap.subid_user"));
	ck_assert_int_eq(sbx_idmap_resolve_text("ns", NULL, NULL, "", line, &m), -SBX_ECONFIG);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("idmap");
	TCase *tc = tcase_create("subid");

	tcase_add_test(tc, test_first_entry_of_the_user);
	tcase_add_test(tc, test_unusable_lines_are_skipped);
	tcase_add_test(tc, test_overlaps);
	tcase_add_test(tc, test_resolve_uses_both_files_or_the_fixed_range);
	tcase_add_test(tc, test_fixed_range_given_to_another_user_is_refused);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
