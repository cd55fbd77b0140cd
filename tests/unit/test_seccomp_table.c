/* The seccomp baseline's table (helpers/init/seccomp_table.c) against the facts it must hold:
 * every system call libseccomp knows for this architecture has a row, whatever Docker's
 * default profile refuses we refuse, the calls issue 15 found reachable are refused, the
 * argument rules exist for every row that needs one, and doctor's counts add up. The filter's
 * behaviour is test_harden's: this is the data it is built from. */
#include <check.h>
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "init/seccomp_internal.h"
#include "init/seccomp_table.h"
#include "support.h"

static bool refuses(const struct sbx_syscall_row *row)
{
	return row->ours == SBX_OURS_REFUSE || row->ours == SBX_OURS_ENOSYS;
}

START_TEST(rows_are_sorted_and_unique)
{
	for (size_t i = 1; i < sbx_syscall_table_len; i++)
		ck_assert_msg(strcmp(sbx_syscall_table[i - 1].name, sbx_syscall_table[i].name) < 0,
		              "%s before %s", sbx_syscall_table[i - 1].name,
		              sbx_syscall_table[i].name);
	for (size_t i = 0; i < sbx_syscall_table_len; i++)
		ck_assert_ptr_eq(sbx_syscall_row_find(sbx_syscall_table[i].name), &sbx_syscall_table[i]);
	ck_assert_ptr_null(sbx_syscall_row_find("no_such_call"));
}
END_TEST

/* A name without a row would meet the default answer (refused): safe, but the table, the
 * walk and doctor's counts would not know it. */
START_TEST(every_call_libseccomp_knows_has_a_row)
{
	uint32_t arch = seccomp_arch_native();
	int missing = 0;

	for (int nr = 0; nr < 1024; nr++) {
		char *name = seccomp_syscall_resolve_num_arch(arch, nr);
		const struct sbx_syscall_row *row = name ? sbx_syscall_row_find(name) : NULL;

		if (name && !row) {
			fprintf(stderr, "no row for %s (%d)\n", name, nr);
			missing++;
		} else if (row) {
			ck_assert_int_eq(sbx_syscall_row_nr(row), nr);
		}
		free(name);
	}
	ck_assert_int_eq(missing, 0);
}
END_TEST

/* A row's own number is the one libseccomp gives, where libseccomp knows the name. */
START_TEST(own_numbers_agree_with_libseccomp)
{
	for (size_t i = 0; i < sbx_syscall_table_len; i++) {
		const struct sbx_syscall_row *row = &sbx_syscall_table[i];
		int nr = seccomp_syscall_resolve_name(row->name);

		if (row->nr > 0 && nr >= 0)
			ck_assert_msg(nr == row->nr, "%s: libseccomp says %d, the row %d", row->name, nr,
			              row->nr);
	}
}
END_TEST

START_TEST(we_refuse_whatever_docker_refuses)
{
	for (size_t i = 0; i < sbx_syscall_table_len; i++) {
		const struct sbx_syscall_row *row = &sbx_syscall_table[i];
		enum sbx_docker_verdict v = sbx_docker_verdict(row);

		if (sbx_syscall_row_nr(row) < 0)
			continue;
		if (row->ours == SBX_OURS_EXEMPT) {
			/* The kernel's own exception (kernel/seccomp.c): no filter sees these. */
			ck_assert_msg(!strcmp(row->name, "uprobe") || !strcmp(row->name, "uretprobe"),
			              "%s marked exempt", row->name);
			continue;
		}
		if (v == SBX_VERDICT_REFUSES)
			ck_assert_msg(refuses(row), "Docker refuses %s, we do not", row->name);
		if (v == SBX_VERDICT_ENOSYS)
			ck_assert_msg(row->ours == SBX_OURS_ENOSYS, "Docker answers %s with ENOSYS",
			              row->name);
		if (v == SBX_VERDICT_ARGS)
			ck_assert_msg(refuses(row) || row->ours == SBX_OURS_ARGS,
			              "Docker allows %s only with some arguments, we allow it whole",
			              row->name);
	}
}
END_TEST

/* Issue 15: reachable in ns, refused by Docker (or, clock_adjtime, by Docker's kernel: no
 * CAP_SYS_TIME). */
START_TEST(the_calls_issue_15_found_are_refused)
{
	static const char *const names[] = { "quotactl", "quotactl_fd", "settimeofday",
	                                     "clock_settime", "clock_adjtime", "adjtimex",
	                                     "process_madvise", "migrate_pages", "move_pages",
	                                     NULL };

	for (size_t i = 0; names[i]; i++) {
		const struct sbx_syscall_row *row = sbx_syscall_row_find(names[i]);

		ck_assert_msg(row && refuses(row), "%s is not refused", names[i]);
	}
	ck_assert_int_eq(sbx_syscall_row_find("personality")->ours, SBX_OURS_ARGS);
	ck_assert_int_eq(sbx_syscall_row_find("mknodat")->ours, SBX_OURS_ARGS);
	ck_assert_int_eq(sbx_syscall_row_find("socket")->ours, SBX_OURS_ARGS);
	ck_assert_int_eq(sbx_syscall_row_find("clone3")->ours, SBX_OURS_ENOSYS);
}
END_TEST

/* Every row marked SBX_OURS_ARGS has rules in seccomp_args.c (the filter builds), a name in
 * sbx_arg_rules, and every rule names a row marked so. */
START_TEST(argument_rules_match_the_rows)
{
	scmp_filter_ctx ctx = NULL;
	char err[256] = "";

	ck_assert_msg(sbx_seccomp_build(EPERM, &ctx, err, sizeof err) == 0, "%s", err);
	seccomp_release(ctx);
	ck_assert_int_eq(sbx_seccomp_add_arg_rules(NULL, "read", 0, err, sizeof err), -EINVAL);
	for (size_t i = 0; i < sbx_syscall_table_len; i++) {
		const struct sbx_syscall_row *row = &sbx_syscall_table[i];
		bool named = false;

		for (size_t j = 0; j < sbx_arg_rules_len; j++)
			named |= !strcmp(sbx_arg_rules[j].syscall, row->name);
		ck_assert_msg(named == (row->ours == SBX_OURS_ARGS), "%s: argument rules and row "
		              "disagree", row->name);
	}
}
END_TEST

START_TEST(counts_add_up)
{
	struct sbx_seccomp_counts c;
	int known = 0, refused = 0, docker = 0, ours_only = 0, exempt = 0, max = -1;

	for (size_t i = 0; i < sbx_syscall_table_len; i++) {
		const struct sbx_syscall_row *row = &sbx_syscall_table[i];
		enum sbx_docker_verdict v = sbx_docker_verdict(row);
		int nr = sbx_syscall_row_nr(row);

		if (nr < 0)
			continue;
		max = nr > max ? nr : max;
		if (row->ours == SBX_OURS_EXEMPT) {
			exempt++;
			continue;
		}
		known++;
		refused += refuses(row);
		docker += v == SBX_VERDICT_REFUSES || v == SBX_VERDICT_ENOSYS;
		ours_only += v == SBX_VERDICT_ALLOWS && refuses(row);
	}
	sbx_seccomp_count(&c);
	ck_assert_int_eq(c.known, known);
	ck_assert_int_eq(c.exempt, exempt);
	ck_assert_int_eq(c.refused, refused);
	ck_assert_int_eq(c.docker_refused, docker);
	ck_assert_int_eq(c.docker_refused_here, docker);
	ck_assert_int_eq(c.ours_only, ours_only);
	ck_assert_int_eq(c.refused, c.docker_refused + c.ours_only);
	ck_assert_int_eq(c.docker_arg_rules_here, c.docker_arg_rules);
	ck_assert_int_eq(c.max_nr, max);
	ck_assert_int_eq(sbx_syscall_table_max_nr(), max);
	ck_assert_int_gt(c.docker_refused, 50);
	ck_assert_int_gt(c.arg_rules, c.docker_arg_rules);
	/* On x86-64 (the table as of moby/profiles seccomp/v0.2.3, kernel 6.18's calls): */
	if (!strcmp(sbx_docker_native_arch(), "amd64"))
		ck_assert_int_eq(c.max_nr, 470);
}
END_TEST

START_TEST(docker_facts_are_derived)
{
	ck_assert(sbx_docker_default_cap("CAP_SYS_CHROOT", 14));
	ck_assert(!sbx_docker_default_cap("CAP_SYS_ADMIN", 13));
	ck_assert(!sbx_docker_default_cap("CAP_SYS_CHROO", 13));
	ck_assert_int_eq(sbx_docker_verdict(sbx_syscall_row_find("chroot")), SBX_VERDICT_ALLOWS);
	ck_assert_int_eq(sbx_docker_verdict(sbx_syscall_row_find("mount")), SBX_VERDICT_REFUSES);
	ck_assert_int_eq(sbx_docker_verdict(sbx_syscall_row_find("keyctl")), SBX_VERDICT_REFUSES);
	/* ptrace: from kernel 4.8 on, which every kernel this runs on is. */
	ck_assert_int_eq(sbx_docker_verdict(sbx_syscall_row_find("ptrace")), SBX_VERDICT_ALLOWS);
	ck_assert_int_eq(sbx_docker_verdict(sbx_syscall_row_find("clone3")), SBX_VERDICT_ENOSYS);
	ck_assert_int_eq(sbx_docker_verdict(sbx_syscall_row_find("socket")), SBX_VERDICT_ARGS);
	if (!strcmp(sbx_docker_native_arch(), "amd64")) {
		ck_assert_int_eq(sbx_docker_verdict(sbx_syscall_row_find("arch_prctl")),
		                 SBX_VERDICT_ALLOWS);
		ck_assert_int_eq(sbx_docker_verdict(sbx_syscall_row_find("set_tls")),
		                 SBX_VERDICT_REFUSES);
	}
	ck_assert_str_eq(sbx_docker_profile_source + strlen(sbx_docker_profile_source) - 40,
	                 "3c28324314729dbade8287e868eef6338c42807a");
}
END_TEST

static Suite *table_suite(void)
{
	Suite *s = suite_create("seccomp_table");
	TCase *t = tcase_create("table");

	tcase_add_test(t, rows_are_sorted_and_unique);
	tcase_add_test(t, every_call_libseccomp_knows_has_a_row);
	tcase_add_test(t, own_numbers_agree_with_libseccomp);
	tcase_add_test(t, we_refuse_whatever_docker_refuses);
	tcase_add_test(t, the_calls_issue_15_found_are_refused);
	tcase_add_test(t, argument_rules_match_the_rows);
	tcase_add_test(t, counts_add_up);
	tcase_add_test(t, docker_facts_are_derived);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return test_run_suite(table_suite());
}
