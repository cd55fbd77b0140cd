/* Unit tests of the two conventions util gives the library and the helpers alike: the one
 * clock (src/util/clock.c) and the one error convention (src/util/error.c). */
#include <check.h>
#include <errno.h>
#include <string.h>
#include <time.h>

#include "support.h"
#include "util/clock.h"
#include "util/error.h"

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Deadlines are sums of sbx_now_ms() and a timeout: the clock must advance by at least the
 * time slept and never step back. */
START_TEST(the_clock_advances_with_time_and_never_back)
{
	int64_t start = sbx_now_ms(), prev = start;

	for (int i = 0; i < 1000; i++) {
		int64_t now = sbx_now_ms();

		ck_assert_int_ge(now, prev);
		prev = now;
	}
	sleep_ms(30);
	ck_assert_int_ge(sbx_now_ms() - start, 30);
	/* Not the wall clock: milliseconds since the epoch would be past 2020 (1.5e12). */
	ck_assert_int_lt(start, 1500000000000LL);
}
END_TEST

/* The boot-time clock (the init's idle TTL) advances with time slept, and is not the wall
 * clock either. Not compared with the monotonic one: a time namespace offsets each alone. */
START_TEST(the_boottime_clock_advances_with_time)
{
	int64_t boot = sbx_boottime_ms();

	ck_assert_int_lt(boot, 1500000000000LL);
	sleep_ms(20);
	ck_assert_int_ge(sbx_boottime_ms() - boot, 20);
}
END_TEST

START_TEST(fail_buf_formats_the_reason_and_returns_the_negative_code)
{
	char err[64] = "stale";

	errno = EAGAIN;
	ck_assert_int_eq(sbx_fail_buf(err, sizeof err, -ENOENT, "open %s: %s", "/x", "gone"),
	                 -ENOENT);
	ck_assert_str_eq(err, "open /x: gone");
	ck_assert_int_eq(errno, EAGAIN);
	/* A positive code is made negative, as sbx_fail does. */
	ck_assert_int_eq(sbx_fail_buf(err, sizeof err, SBX_EINVAL, "field %s", "mode"),
	                 -SBX_EINVAL);
	ck_assert_str_eq(err, "field mode");
}
END_TEST

/* A caller that passes -errno after errno was clobbered to 0 still reports a failure. */
START_TEST(fail_buf_never_returns_success)
{
	char err[16];

	ck_assert_int_eq(sbx_fail_buf(err, sizeof err, 0, "lost errno"), -SBX_EIO);
	ck_assert_str_eq(err, "lost errno");
}
END_TEST

/* Without a buffer (a caller that does not want the reason) only the code comes back, and a
 * reason longer than the buffer is cut, terminated. */
START_TEST(fail_buf_without_or_with_a_short_buffer)
{
	char small[6];

	ck_assert_int_eq(sbx_fail_buf(NULL, 0, -EPERM, "ignored %d", 1), -EPERM);
	ck_assert_int_eq(sbx_fail_buf(small, sizeof small, -EPERM, "%s", "too long a reason"),
	                 -EPERM);
	ck_assert_str_eq(small, "too l");
}
END_TEST

/* The buffer form leaves the thread's message alone: the helpers' building blocks also run
 * inside the library, where a caller may still need the message of an earlier failure. */
START_TEST(fail_buf_leaves_the_threads_message_alone)
{
	char err[32];

	ck_assert_int_eq(sbx_fail(-SBX_EBUSY, "workspace %s busy", "w1"), -SBX_EBUSY);
	sbx_fail_buf(err, sizeof err, -EIO, "inner step");
	ck_assert_str_eq(sbx_last_error(), "workspace w1 busy");
	ck_assert_str_eq(err, "inner step");
}
END_TEST

static Suite *util_base_suite(void)
{
	Suite *s = suite_create("util_base");
	TCase *clock = tcase_create("clock");
	TCase *error = tcase_create("error");

	tcase_add_test(clock, the_clock_advances_with_time_and_never_back);
	tcase_add_test(clock, the_boottime_clock_advances_with_time);
	tcase_add_test(error, fail_buf_formats_the_reason_and_returns_the_negative_code);
	tcase_add_test(error, fail_buf_never_returns_success);
	tcase_add_test(error, fail_buf_without_or_with_a_short_buffer);
	tcase_add_test(error, fail_buf_leaves_the_threads_message_alone);
	suite_add_tcase(s, clock);
	suite_add_tcase(s, error);
	return s;
}

int main(void)
{
	return test_run_suite(util_base_suite());
}
