/* Helpers shared by the Check test programs. */
#ifndef SBX_TEST_SUPPORT_H
#define SBX_TEST_SUPPORT_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A fresh temporary directory (removed by the caller with test_rm_rf). Caller frees. */
char *test_mkdtemp(void);
/* rm -rf path (via the shell; test-only). */
void test_rm_rf(const char *path);
/* Does a process with this command line fragment exist on the host? (scans /proc) */
bool test_process_exists(const char *cmdline_fragment);
/* Files on the host, for tests that check what the library did to them. */
/* base/rel in one of 8 rotating static buffers. */
const char *test_path_at(const char *base, const char *rel);
/* Creates or truncates base/rel with text and exactly mode. */
void test_put_file(const char *base, const char *rel, const char *text, mode_t mode);
/* The first 64 KiB of path (static buffer), or NULL. */
char *test_slurp(const char *path);
bool test_exists(const char *path);          /* lstat succeeds */
mode_t test_mode_of(const char *path);       /* permission bits, via lstat */
bool test_has_temp_files(const char *dir);   /* leftover ".sbx-" temporaries */
int test_count_fds(void);                    /* open fds of this process */
void test_limit_fds(unsigned long n);        /* lowers RLIMIT_NOFILE's soft limit */

/* Runs a Check suite and returns the process exit code (0 when all passed). */
int test_run_suite(Suite *s);

#endif
