/* The one clock (clock.h). */
#include <time.h>

#include "clock.h"

static int64_t clock_ms(clockid_t which)
{
	struct timespec ts;

	/* Cannot fail for these two clocks on any kernel the library supports (both since 2.6.39). */
	clock_gettime(which, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t sbx_now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

int64_t sbx_boottime_ms(void)
{
	return clock_ms(CLOCK_BOOTTIME);
}
