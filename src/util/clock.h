/* The one clock of the library and the helpers. Every timeout, deadline and age is measured in
 * milliseconds on CLOCK_MONOTONIC through sbx_now_ms(), so two parts that compare stamps (a
 * helper's deadline and the host's, a manager's idle age and a spawn's stamp) read the same
 * clock. */
#ifndef SBX_UTIL_CLOCK_H
#define SBX_UTIL_CLOCK_H

#include <stdint.h>

/* Milliseconds on CLOCK_MONOTONIC: untouched by changes to the wall clock. */
int64_t sbx_now_ms(void);

/* Milliseconds on CLOCK_BOOTTIME: like sbx_now_ms() but it also advances while the machine is
 * suspended, for a time-to-live that is real time (the sandbox init's idle TTL). */
int64_t sbx_boottime_ms(void);

#endif
