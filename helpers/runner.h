/* The per-command runner (runner.c), shared by agentsbx-run and the sandbox init. */
#ifndef SBX_RUNNER_H
#define SBX_RUNNER_H

#include <stdbool.h>
#include <stddef.h>

/* Sets a limit for the command: name is one of cpu, fsize, nofile, nproc, as (name_len bytes
 * of it are compared). Returns false for an unknown name. */
bool sbx_runner_set_rlimit(const char *name, size_t name_len, unsigned long long value);

/* Gives the command a terminal of the given size ("ROWSxCOLS", 0 = the default) as
 * run_proto.h describes. Returns false for a malformed size. */
bool sbx_runner_set_pty(const char *size);

/* Runs argv as run_proto.h describes: the control socket on fd 3, the command's stdio on fds
 * 0-2, its working directory and environment already in place. Returns 0 once the command
 * and everything it started have ended and the report was sent, or -1 at once when fd 3 is
 * not a socket. Single-threaded callers only (it is a subreaper and blocks SIGCHLD). */
int sbx_runner_run(char **argv);

/* A runner that serves one command after another (the sandbox init's kept runners) holds its
 * own channel on this fd, close-on-exec, across the commands. */
#define SBX_RUNNER_KEPT_FD 4

/* As sbx_runner_run, but leaves fd SBX_RUNNER_KEPT_FD open and, once the command's tree is
 * gone, becomes idle: it offers the host a channel of its own with the report (run_proto.h),
 * kept on SBX_RUNNER_DIRECT_FD, when the host asked (sbx_runner_offer_channel); where it
 * holds one already it stays the host's; otherwise it says it is
 * idle on SBX_RUNNER_KEPT_FD (one byte) before the report, as ever. After the report it
 * forgets the command: its limits and terminal are reset, fds 0-3 (the control socket
 * included) are /dev/null and the working directory is /. The caller may then read the next
 * command: from the direct channel while the runner holds one, else from its own. */
int sbx_runner_run_kept(char **argv);

/* The host takes a channel (the "channel=1" runner setting): only then is one offered. */
void sbx_runner_offer_channel(void);

/* The host's channel to a kept runner, while it holds one (close-on-exec, never seen by a
 * command). */
#define SBX_RUNNER_DIRECT_FD 5
bool sbx_runner_has_direct(void);
/* Closes it: the host closed its end (the runner is the init's again: the caller says it is
 * idle), or the runner will exit (before its last report, so that the host's next request
 * fails to send rather than being lost). */
void sbx_runner_drop_direct(void);

#endif
