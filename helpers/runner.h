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

/* As sbx_runner_run, but leaves fd SBX_RUNNER_KEPT_FD open and says it is idle there (one
 * byte) once the command's tree is gone, before the report; after the report it forgets the
 * command: its limits and terminal are reset, fds 0-3 (the control socket included) are
 * /dev/null and the working directory is /. The caller may then read the next command. */
int sbx_runner_run_kept(char **argv);

#endif
