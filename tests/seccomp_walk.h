/* The check of sbx-probe's "baseline" walk (tests/probe/baseline.c) against the seccomp
 * baseline's table, shared by the unit test (a filter built with marker errnos) and the
 * security suite (the real filter, inside a sandbox). */
#ifndef SBX_TEST_SECCOMP_WALK_H
#define SBX_TEST_SECCOMP_WALK_H

/* Checks walk, the probe's output under the filter: every row we refuse answers deny (ENOSYS
 * for the rows that answer ENOSYS), every number without a row answers deny up to the
 * table's highest and newer above it, x32 numbers answer deny, every control answers what
 * the kernel answers for its bad arguments. With bare (the same walk without any filter),
 * also that each refused call reached the kernel there and got another answer, and that the
 * controls agree. Returns NULL when all holds, else a report of every call that did not
 * (the caller frees it). */
char *seccomp_walk_check(const char *walk, const char *deny, const char *newer,
                         const char *bare);

/* How many control lines walk holds. */
int seccomp_walk_controls(const char *walk);

#endif
