/* Between sbx-probe's files: the outcome of a probe and how it is printed (sbx-probe.c), the
 * walk of the seccomp baseline's table and the argument probes (baseline.c). */
#ifndef SBX_PROBE_H
#define SBX_PROBE_H

/* Outcomes that are not an errno. */
#define PR_OK 0
#define PR_ABSENT (-1)
#define PR_UNSUPPORTED (-2)
#define PR_SIGNAL_BASE (-1000)   /* PR_SIGNAL_BASE - signo */

/* 0 when the raw call returned >= 0, else its errno. */
int probe_result_of(long ret);

/* "OK", "EPERM", "absent", "signal-SIGSEGV", ... (a static buffer for unnamed errnos). */
const char *probe_outcome_name(int outcome);

/* Prints "name outcome". */
void probe_print(const char *name, int outcome);

/* Runs fn in a child and returns its outcome, so that a call the kernel unexpectedly honours
 * only affects the child. */
int probe_in_child(int (*fn)(void));

/* "baseline": the walk of seccomp_table.c (see baseline.c). Returns 0. */
int probe_baseline(void);

/* The argument probes ("personality-addr-no-randomize", "netlink-12", ...): the function
 * for name, or NULL. */
int (*probe_arg_probe(const char *name))(void);

/* "setid DIR": each way to give a new file in DIR a set-id bit (see setid.c). Returns 0. */
int probe_setid(const char *dir);

#endif
