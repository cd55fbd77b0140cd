/* Helpers for the test programs that run one suite on whichever backend SBX_TEST_BACKEND
 * names (tests/meson.build registers each program once per backend). Everything goes through
 * the public API; the host is only looked at, through /proc, to see what is left running. */
#ifndef SBX_TEST_BACKEND_SUPPORT_H
#define SBX_TEST_BACKEND_SUPPORT_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <agentsbx/agentsbx.h>

/* The backend under test: $SBX_TEST_BACKEND, "local" when unset. */
const char *bt_backend(void);

/* Opens a workspace of the backend under test. workdir may be NULL (a temporary one); extra
 * is more JSON members ("\"env\":{...}") or NULL. Returns sbx_workspace_open's result. */
int bt_open(const char *workdir, const char *extra, sbx_workspace **out);
/* The same, failing the current test when the workspace does not open. */
sbx_workspace *bt_open_ok(const char *workdir, const char *extra);

/* Whether the workspaces of this run keep their files in a host directory: false for the
 * docker backend with "volume" in SBX_TEST_DOCKER_OPTIONS (then bt_open passes no workdir
 * but an id made from it). */
bool bt_host_files(void);

/* Whether the backend can open a workspace on this host at all. When it cannot
 * (-SBX_EBACKEND), prints why on stderr and returns false: main then exits with 77, which
 * meson reports as a skipped test. Any other failure is an error of the test, not a skip. */
bool bt_backend_usable(void);
/* Whether SBX_TEST_REQUIRE (comma-separated backend names) lists the backend under test:
 * then a backend that cannot work fails the program (exit 1) instead of skipping it. */
bool bt_backend_required(void);

/* The docker backend's test image ($SBX_TEST_DOCKER_IMAGE, else agentsbx-test:busybox, made
 * by tests/docker/build-image.sh) and the user its commands run as in a root-run test. */
const char *bt_docker_image(void);
#define BT_DOCKER_UID 65534
#define BT_EXIT_SKIP 77

/* The directory every bt_mkdtemp directory of this run goes into: main makes it before the
 * suite runs (bt_begin_run) and removes it with all it holds afterwards (bt_end_run). A
 * failed check ends its forked test with _exit, past any teardown or atexit handler: only
 * the parent can clean up after it. */
void bt_begin_run(void);
/* main() of a per-backend suite: skips (77) when the backend cannot work here, else runs the
 * suite between bt_begin_run and bt_end_run and returns the exit code. */
int bt_main(Suite *(*make_suite)(void));
void bt_end_run(void);

/* A fresh temporary directory inside the run's, in static storage (16 per test process).
 * Removed by bt_end_run; do not free. */
char *bt_mkdtemp(void);

/* asprintf that fails the test instead of returning NULL. Caller frees. */
char *bt_fmt(const char *format, ...) __attribute__((format(printf, 1, 2)));
/* printf into one of 8 rotating static buffers of 8 KiB: nothing for a test to free. */
const char *bt_tmp(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* `path` inside the workspace as its commands see it: sbx_workspace_root(ws) + "/" + rel.
 * Caller frees. */
char *bt_inside(sbx_workspace *ws, const char *rel);

/* A `sleep` argument no other process on the host has: GNU sleep takes fractions, so
 * "1000.<pid><n>" sleeps 1000 s and doubles as a marker for test_process_exists. Fixed
 * widths, so that no marker is a prefix of another. Valid until eight more are made. */
const char *bt_marker(void);

/* "M1=<m1>" ... "M4=<m4>" (a NULL marker ends the list), NULL-terminated, for a command that
 * names its markers $M1..$M4: then only the processes that use them (sleep $M1) carry them on
 * their command line, not the shell that starts them, and a marker seen on the host means
 * that very process runs. Valid until the next call. */
const char *const *bt_marker_env(const char *m1, const char *m2, const char *m3, const char *m4);

/* CLOCK_MONOTONIC in milliseconds, for deadlines of polling loops. */
int64_t bt_now_ms(void);

/* Polls the host's /proc until a process with the marker in its command line exists
 * (present) or none does, for at most 5 s. Returns whether that state was reached. */
bool bt_wait_for_process(const char *mark, bool present);

/* Number of processes whose parent is this process, zombies included. */
int bt_count_children(void);

/* Polls until this process has n children, for at most 5 s; returns how many it has. A close
 * may leave the first process of a pre-started sandbox for a moment (the library's starter
 * thread reaps it): what must hold is that no child *stays*. */
int bt_wait_for_children(int n);

/* Number of host processes with the fragment in their command line (this one excluded). */
int bt_count_processes(const char *cmdline_fragment);
/* Does process pid's command line (NULs read as spaces) contain fragment? */
bool bt_pid_cmdline_has(const char *pid, const char *fragment);
/* Polls until exactly n such processes exist, for at most 5 s; returns how many there are. */
int bt_wait_for_process_count(const char *cmdline_fragment, int n);

/* Number of host processes whose mount table mentions host_dir: the processes of a sandbox
 * that has host_dir bound as its workspace, whatever their command line. Use a directory
 * with a unique name (test_mkdtemp). */
int bt_count_sandbox_processes(const char *host_dir);
/* Polls until no such process is left, for at most 5 s; returns how many are left. */
int bt_wait_for_sandbox_gone(const char *host_dir);
/* SIGKILLs every such process: the sandbox dies as if the kernel or an operator killed it.
 * Returns how many were signalled. */
int bt_kill_sandbox_processes(const char *host_dir);

/* sbx_exec_shell / sbx_exec that fail the test when the call itself fails. */
sbx_result *bt_shell(sbx_workspace *ws, const char *cmd, const sbx_exec_opts *opts);
sbx_result *bt_argv(sbx_workspace *ws, const char *const *argv, const sbx_exec_opts *opts);

/* Runs cmd, requires exit code 0 and returns its stdout (caller frees). */
char *bt_shell_out(sbx_workspace *ws, const char *cmd);

/* Writes a file into the workspace through the API (mode 0 = default), failing the test on
 * error. */
void bt_put(sbx_workspace *ws, const char *rel, const char *text, unsigned mode);

/* Copies the host file at the path in environment variable env_name (a test program meson
 * built, such as SBX_TEST_PROBE) into the workspace as rel, executable: the sandbox sees
 * nothing else of the host. Fails the test when the variable is unset. */
void bt_install_program(sbx_workspace *ws, const char *env_name, const char *rel);

/* ---- backend_procs.c: a workspace's processes, wherever they run ---------------------- */

/* The docker runtime of this run ("runtime" in SBX_TEST_DOCKER_OPTIONS), or NULL for the
 * engine's default. Static storage. */
const char *bt_docker_runtime(void);
/* Whether the host's /proc cannot show the workspace's processes: gVisor (runtime "runsc")
 * runs them as tasks of its own kernel. */
bool bt_processes_hidden(void);
/* test_process_exists for the processes of ws: the host's /proc, and where they are hidden
 * the workspace's own /proc, through a command. */
bool bt_ws_process_exists(sbx_workspace *ws, const char *mark);
/* Polls that until present, for at most 5 s; returns whether it was reached. */
bool bt_ws_wait_for_process(sbx_workspace *ws, const char *mark, bool present);
/* Whether the kernel under ws grants PR_SET_CHILD_SUBREAPER to PID 1 only (gVisor before
 * release-20230717): then an orphan that left its command's session with setsid() ends with
 * the workspace rather than with the command (helpers/runner.c). Asked with sbx-probe. */
bool bt_ws_orphans_escape(sbx_workspace *ws);
/* The host pids of the processes that make up the sandbox of host_dir (at most max): those
 * whose mounts mention it, or, where processes are hidden, those in the cgroup of one of
 * them (gVisor's runsc-sandbox with its gofer; at least those two, or the test fails). */
int bt_sandbox_pids(const char *host_dir, int *pids, int max);
/* pidfds of the host processes that make up the sandbox of host_dir (at most max): those
 * whose mounts mention it, or, where processes are hidden, those in the cgroup of one of
 * them (gVisor's runsc-sandbox with its gofer; at least those two, or the test fails). */
int bt_sandbox_pidfds(const char *host_dir, int *fds, int max);
/* Waits until every one has ended (60 s at most), closes them, and returns how many had not
 * ended. */
int bt_wait_pidfds_ended(int *fds, int n);

/* Peak resident memory of this process since the last reset (VmHWM), or VmRSS where peaks
 * cannot be reset, in KiB. */
long bt_memory_kb(bool reset_peak);

/* Whether a tool call's result (its JSON text) reports success. */
bool bt_tool_ok(const char *res);
/* The string member "key" of a tool call's result (its first occurrence), unescaped; fails
 * the test when there is none. Caller frees. */
char *bt_string_member(const char *res, const char *key);

/* The checked fixture most suites share, called from their setup and teardown: each case
 * gets a fresh folder (bt_mkdtemp) in *workdir and a workspace opened on it in *ws
 * (bt_open_ok); the teardown closes it and clears *ws, so that a case may close it first. */
void bt_open_case_workspace(char **workdir, sbx_workspace **ws);
void bt_close_case_workspace(sbx_workspace **ws);

#endif
