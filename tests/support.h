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
/* The state folder the library keeps for the (existing) workdir by default: under the run's
 * $XDG_STATE_HOME (test_run_suite sets it), keyed by the canonical path. One of 8 rotating
 * static buffers. */
const char *test_state_dir(const char *workdir);
/* Points XDG_STATE_HOME at a folder of this run's (once; test_run_suite removes it): for
 * whatever opens a workspace before the suite runs (a probe). */
void test_private_state_home(void);
/* Creates or truncates base/rel with text and exactly mode. */
void test_put_file(const char *base, const char *rel, const char *text, mode_t mode);
/* The first 64 KiB of path (static buffer), or NULL. */
char *test_slurp(const char *path);
bool test_exists(const char *path);          /* lstat succeeds */
mode_t test_mode_of(const char *path);       /* permission bits, via lstat */
bool test_has_temp_files(const char *dir);   /* leftover ".sbx-" temporaries */
int test_count_fds(void);                    /* open fds of this process */
void test_limit_fds(unsigned long n);        /* lowers RLIMIT_NOFILE's soft limit */

/* Capabilities a case may need, named as SBX_TEST_REQUIRE names them. */
#define TEST_CAP_ROOT     "root"      /* euid 0 in the initial user namespace */
#define TEST_CAP_USERNS   "userns"    /* unshare(CLONE_NEWUSER) works */
#define TEST_CAP_LANDLOCK "landlock"  /* the kernel has Landlock enabled */
#define TEST_CAP_MOUNT    "mount"     /* mount(2) works here (root, not in a locked container) */
#define TEST_CAP_TOOLS    "tools"     /* a host program the case runs (node, python3, bwrap) */

/* Whether a case that needs cap may run. When have is false the case is recorded as skipped
 * with why (case name and loop pass in the report), and false is returned: the case must
 * end at once (TEST_NEED does). When SBX_TEST_REQUIRE (a comma-separated list) names cap,
 * a missing capability fails the case instead: CI says which ones the host must have. */
bool test_need(const char *cap, bool have, const char *case_name, int pass, const char *why);
/* The form a START_TEST body uses: ends the case when the capability is missing. */
#define TEST_NEED(cap, have, why)                                        \
	do {                                                             \
		if (!test_need((cap), (have), __func__, _i, (why)))      \
			return;                                          \
	} while (0)
/* Whether SBX_TEST_REQUIRE lists name. */
bool test_required(const char *name);

/* Exit code of a program none of whose cases could run here (meson reports a skip). */
#define TEST_EXIT_SKIP 77

/* Runs a Check suite and returns the process exit code: 1 when a case failed, else
 * TEST_EXIT_SKIP when a case was skipped (each skip and its reason are listed on stderr and
 * the last line says how many; capability cases sit in tagged tcases that meson runs as tests
 * of their own, so the other cases still count as passes), else 0. */
int test_run_suite(Suite *s);

#endif
