/* Helpers shared by the Check test programs. */
#ifndef SBX_TEST_SUPPORT_H
#define SBX_TEST_SUPPORT_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>

/* A fresh temporary directory (removed by the caller with test_rm_rf). Caller frees. */
char *test_mkdtemp(void);
/* rm -rf path (via the shell; test-only). */
void test_rm_rf(const char *path);
/* Does a process with this command line fragment exist on the host? (scans /proc) */
bool test_process_exists(const char *cmdline_fragment);
/* Runs a Check suite and returns the process exit code (0 when all passed). */
int test_run_suite(Suite *s);

#endif
