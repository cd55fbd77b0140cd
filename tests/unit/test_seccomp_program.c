/* The seccomp program the library embeds (generated at build time by helpers/seccomp_gen.c,
 * backends/sandbox/seccomp_program.h) equals the one the init's builder makes with
 * libseccomp now, in both variants: the two can never drift apart. */
#include <check.h>
#include <seccomp.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "support.h"
#include "backends/sandbox/seccomp_program.h"
#include "init/sandbox.h"

static void assert_same_as_built(unsigned level, const struct sock_filter *embedded, size_t len)
{
	struct sock_filter built[BPF_MAXINSNS];
	char err[256] = "";
	int fd = memfd_create("test-seccomp", MFD_CLOEXEC);
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(seccomp_api_set(level), 0);
	ck_assert_msg(sbx_seccomp_export(fd, err, sizeof err) == 0, "%s", err);
	n = pread(fd, built, sizeof built, 0);
	close(fd);
	ck_assert_int_gt(n, 0);
	ck_assert_uint_eq((size_t)n / sizeof built[0], len);
	for (size_t i = 0; i < len; i++)
		ck_assert_msg(!memcmp(&built[i], &embedded[i], sizeof built[i]),
		              "API level %u: instruction %zu differs", level, i);
}

START_TEST(the_embedded_programs_equal_the_ones_libseccomp_builds)
{
	assert_same_as_built(3, sbx_seccomp_program_kill_process,
	                     sbx_seccomp_program_kill_process_len);
	assert_same_as_built(2, sbx_seccomp_program_kill_thread,
	                     sbx_seccomp_program_kill_thread_len);
}
END_TEST

/* The variants differ exactly in the bad-architecture action, the one thing that depends on
 * the kernel. */
START_TEST(the_variants_differ_only_in_the_bad_architecture_action)
{
	size_t diffs = 0;

	ck_assert_uint_eq(sbx_seccomp_program_kill_process_len, sbx_seccomp_program_kill_thread_len);
	for (size_t i = 0; i < sbx_seccomp_program_kill_process_len; i++) {
		const struct sock_filter *a = &sbx_seccomp_program_kill_process[i];
		const struct sock_filter *b = &sbx_seccomp_program_kill_thread[i];

		if (!memcmp(a, b, sizeof *a))
			continue;
		diffs++;
		ck_assert_uint_eq(a->code, BPF_RET | BPF_K);
		ck_assert_uint_eq(a->k, SCMP_ACT_KILL_PROCESS);
		ck_assert_uint_eq(b->k, SCMP_ACT_KILL_THREAD);
	}
	ck_assert_uint_gt(diffs, 0);
}
END_TEST

static Suite *seccomp_program_suite(void)
{
	Suite *s = suite_create("seccomp_program");
	TCase *tc = tcase_create("seccomp_program");

	tcase_add_test(tc, the_embedded_programs_equal_the_ones_libseccomp_builds);
	tcase_add_test(tc, the_variants_differ_only_in_the_bad_architecture_action);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(seccomp_program_suite());
}
