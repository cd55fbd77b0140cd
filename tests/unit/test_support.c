/* The test support's skip mechanism: a case whose capability is missing is reported as a
 * skip with its reason (exit 77, meson's skip), and fails instead when SBX_TEST_REQUIRE names
 * the capability. Each inner suite runs in a child process of its own, as a test program
 * would, with its output in a file the case then reads. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support.h"

#define MISSING_CAP "sbx-test-missing-capability"

START_TEST(inner_passes)
{
	ck_assert_int_eq(1 + 1, 2);
}
END_TEST

START_TEST(inner_needs_the_missing_capability)
{
	TEST_NEED(MISSING_CAP, false, "the host lacks it on purpose");
	ck_abort_msg("reached past a missing capability");
}
END_TEST

START_TEST(inner_has_the_capability_and_fails)
{
	TEST_NEED(MISSING_CAP, true, "present");
	ck_abort_msg("ran past a capability it has");
}
END_TEST

/* The exit code of a program running a suite of the given cases, with SBX_TEST_REQUIRE set
 * to require (NULL: unset); its output (stdout and stderr) goes to *out (static). */
static int run_inner(const TTest *const *cases, const char *require, const char **out)
{
	static char text[16384];
	char path[] = "/tmp/sbx-test-support-XXXXXX";
	int fd = mkstemp(path), status;
	ssize_t n;
	pid_t pid;

	ck_assert_int_ge(fd, 0);
	unlink(path);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		Suite *s = suite_create("inner");
		TCase *tc = tcase_create("inner");

		if (dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(120);
		if (require)
			setenv("SBX_TEST_REQUIRE", require, 1);
		else
			unsetenv("SBX_TEST_REQUIRE");
		for (size_t i = 0; cases[i]; i++)
			tcase_add_test(tc, cases[i]);
		suite_add_tcase(s, tc);
		_exit(test_run_suite(s));
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	n = pread(fd, text, sizeof text - 1, 0);
	close(fd);
	text[n > 0 ? n : 0] = '\0';
	*out = text;
	return WEXITSTATUS(status);
}

START_TEST(missing_capability_is_a_skip_with_its_reason)
{
	const TTest *cases[] = { inner_passes, inner_needs_the_missing_capability, NULL };
	const char *out;

	ck_assert_int_eq(run_inner(cases, NULL, &out), TEST_EXIT_SKIP);
	ck_assert_msg(strstr(out, "SKIP inner_needs_the_missing_capability[0]: needs "
	                     MISSING_CAP ": the host lacks it on purpose"), "%s", out);
	ck_assert_msg(strstr(out, "SKIP: 1 of 2 cases could not run here"), "%s", out);
	ck_assert_ptr_null(strstr(out, "reached past"));
}
END_TEST

START_TEST(missing_capability_fails_when_required)
{
	const TTest *cases[] = { inner_passes, inner_needs_the_missing_capability, NULL };
	const char *out;

	ck_assert_int_eq(run_inner(cases, "docker," MISSING_CAP ",root", &out), 1);
	ck_assert_msg(strstr(out, "needs " MISSING_CAP ", which SBX_TEST_REQUIRE names"),
	              "%s", out);
	ck_assert_ptr_null(strstr(out, "reached past"));
}
END_TEST

/* A name that merely begins like the capability does not require it. */
START_TEST(require_matches_whole_names_only)
{
	const TTest *cases[] = { inner_needs_the_missing_capability, NULL };
	const char *out;

	ck_assert_int_eq(run_inner(cases, MISSING_CAP "-more,sbx-test", &out), TEST_EXIT_SKIP);
}
END_TEST

START_TEST(present_capability_runs_the_case)
{
	const TTest *cases[] = { inner_passes, inner_has_the_capability_and_fails, NULL };
	const char *out;

	ck_assert_int_eq(run_inner(cases, NULL, &out), 1);
	ck_assert_msg(strstr(out, "ran past a capability it has"), "%s", out);
}
END_TEST

START_TEST(all_passing_is_a_pass)
{
	const TTest *cases[] = { inner_passes, NULL };
	const char *out;

	ck_assert_int_eq(run_inner(cases, MISSING_CAP, &out), 0);
	ck_assert_ptr_null(strstr(out, "SKIP"));
}
END_TEST

static Suite *support_suite(void)
{
	Suite *s = suite_create("support");
	TCase *tc = tcase_create("skips");

	tcase_add_test(tc, missing_capability_is_a_skip_with_its_reason);
	tcase_add_test(tc, missing_capability_fails_when_required);
	tcase_add_test(tc, require_matches_whole_names_only);
	tcase_add_test(tc, present_capability_runs_the_case);
	tcase_add_test(tc, all_passing_is_a_pass);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(support_suite());
}
