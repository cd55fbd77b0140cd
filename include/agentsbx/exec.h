/*
 * libagentsbx — running commands (sbx_exec) and long-running processes (sbx_process).
 *
 * Part of the public API; <agentsbx/agentsbx.h> includes every part. The conventions in
 * <agentsbx/common.h> (return codes, sbx_last_error, sbx_free, option structs) hold here.
 */
#ifndef AGENTSBX_EXEC_H
#define AGENTSBX_EXEC_H

#include <agentsbx/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------
 * Running commands
 * ------------------------------------------------------------------------------------- */

/* Stream identifiers used by callbacks and the process API. */
enum sbx_stream { SBX_STDIN = 0, SBX_STDOUT = 1, SBX_STDERR = 2 };

/* sbx_exec_opts.flags */
#define SBX_EXEC_CLEAR_ENV     (1u << 0) /* start from an empty environment: only opts.env */
#define SBX_EXEC_MERGE_STDERR  (1u << 1) /* stderr goes to the stdout stream */
#define SBX_EXEC_NO_CAPTURE    (1u << 2) /* deliver output only to on_output, keep none in the
                                            result; max_output then does not apply */

/* Called with output as it arrives, on the thread that called sbx_exec. `data` is valid only
 * during the call. Delivery stops at the output cap, as storage does, unless
 * SBX_EXEC_NO_CAPTURE is set. */
typedef void (*sbx_output_cb)(int stream, const char *data, size_t len, void *userdata);

typedef struct sbx_exec_opts {
	size_t size;                /* sizeof(sbx_exec_opts) */
	const char *cwd;            /* working directory: relative to the root or absolute under it;
	                               NULL = the workspace root */
	const char *const *env;     /* NULL-terminated "NAME=value" entries added to (or replacing)
	                               the workspace environment; a bare "NAME" removes NAME */
	const char *stdin_data;     /* bytes written to the command's stdin, then closed; NULL =
	                               stdin reads end-of-file at once */
	size_t stdin_len;
	int64_t timeout_ms;         /* 0 = the workspace default; -1 = no timeout */
	size_t max_output;          /* bytes kept per stream; 0 = the workspace default. Output
	                               beyond it is read and dropped, and the result is marked
	                               truncated */
	uint32_t flags;             /* SBX_EXEC_* */
	sbx_output_cb on_output;    /* optional streaming callback */
	void *userdata;             /* passed to on_output */
} sbx_exec_opts;

/* An sbx_exec_opts with size set and every option at its default (since 1.6). */
#define SBX_EXEC_OPTS_INIT SBX_OPTS_INIT_(sbx_exec_opts)

typedef struct sbx_result sbx_result;

/* Runs argv[0] (looked up in the command's PATH) with the arguments argv[1..] (NULL-terminated)
 * in the workspace, waits for it and returns its result in *out (release with
 * sbx_result_free). The command runs in a new session and process group; when its main process
 * ends or its timeout passes, every process it started is killed. A command that cannot be
 * started is not an error: its result has exit code 127 (not found) or 126 (not executable)
 * and the reason on stderr, as a shell reports it. The environment is exactly: PATH (a
 * default) and HOME (the root), then the workspace's "env", then opts->env; with
 * SBX_EXEC_CLEAR_ENV only opts->env. */
SBX_API int sbx_exec(sbx_workspace *ws, const char *const argv[], const sbx_exec_opts *opts,
                     sbx_result **out);

/* sbx_exec of {"/bin/sh", "-c", command}. */
SBX_API int sbx_exec_shell(sbx_workspace *ws, const char *command, const sbx_exec_opts *opts,
                           sbx_result **out);

/* Exit code of the command (0..255), or -1 when it was killed by a signal. */
SBX_API int sbx_result_exit_code(const sbx_result *res);
/* The signal that killed the command, or 0. */
SBX_API int sbx_result_signal(const sbx_result *res);
/* 1 when the timeout killed the command, else 0. */
SBX_API int sbx_result_timed_out(const sbx_result *res);
/* 1 when some output was dropped at the cap, else 0. */
SBX_API int sbx_result_truncated(const sbx_result *res);
/* How many bytes of stream (SBX_STDOUT or SBX_STDERR) were read and dropped at the cap:
 * what the command printed beyond the captured output; 0 for another stream (since 1.7). */
SBX_API uint64_t sbx_result_dropped(const sbx_result *res, int stream);
/* The captured stdout (stderr): *len receives its length (may be NULL). The buffer is
 * NUL-terminated for convenience and owned by the result. Never NULL for a valid result. */
SBX_API const char *sbx_result_stdout(const sbx_result *res, size_t *len);
SBX_API const char *sbx_result_stderr(const sbx_result *res, size_t *len);
/* Wall-clock time from start to exit, in milliseconds. */
SBX_API int64_t sbx_result_duration_ms(const sbx_result *res);
/* Releases a result. NULL is ignored. */
SBX_API void sbx_result_free(sbx_result *res);

/* ---------------------------------------------------------------------------------------
 * Long-running processes (MCP servers, interactive tools)
 * ------------------------------------------------------------------------------------- */

typedef struct sbx_process sbx_process;

/* sbx_spawn_opts.flags */
#define SBX_SPAWN_CLEAR_ENV    SBX_EXEC_CLEAR_ENV
#define SBX_SPAWN_MERGE_STDERR SBX_EXEC_MERGE_STDERR

typedef struct sbx_spawn_opts {
	size_t size;                /* sizeof(sbx_spawn_opts) */
	const char *cwd;            /* as in sbx_exec_opts */
	const char *const *env;     /* as in sbx_exec_opts */
	uint32_t flags;             /* SBX_SPAWN_* */
	/* Since 1.7 (read only when size covers them): */
	int pty;                    /* 1: the command runs on a new pseudo-terminal (see below) */
	unsigned short rows, cols;  /* the terminal's size; 0 = 24 rows, 80 columns */
} sbx_spawn_opts;

/* An sbx_spawn_opts with size set and every option at its default (since 1.6). */
#define SBX_SPAWN_OPTS_INIT SBX_OPTS_INIT_(sbx_spawn_opts)

/* Starts argv in the workspace with pipes on stdin, stdout and stderr and returns at once.
 * The same rules as sbx_exec apply (session, environment, exit codes 126/127). Release with
 * sbx_process_free(), which kills the process tree if it still runs.
 *
 * With opts.pty (since 1.7) the command gets a terminal instead of pipes, for programs that
 * need one (shells, REPLs, pagers, full-screen tools): a new pseudo-terminal made where the
 * command runs — in a sandbox (backends ns, bwrap, docker) in its own devpts instance, so
 * no terminal of the host is reachable from it — which is the controlling terminal of the
 * command's new session and its stdin, stdout and stderr. Then:
 *  - stdout and stderr are merged on the terminal (SBX_STDERR is -SBX_EBADF), and what the
 *    command prints arrives with the terminal's line discipline applied ("\r\n");
 *  - what sbx_process_write sends is typed at the terminal: echoed, line-edited, ^C sends
 *    SIGINT to the foreground process group, as at a keyboard;
 *  - sbx_process_close_stdin types the end-of-file character (^D): a program reading lines
 *    sees end-of-file; a raw-mode program sees the byte;
 *  - sbx_process_read of SBX_STDOUT reads the terminal and gives end-of-file once every
 *    process of the command has closed it;
 *  - sbx_process_resize changes its size.
 * Backends: local (a terminal of the host's /dev/pts: local isolates nothing), ns, bwrap,
 * and docker with exec "server" or stdio "direct" on runc (gVisor keeps its terminals in its
 * own kernel). Elsewhere spawning with opts.pty fails with -SBX_ENOSYS and a message naming
 * the option or the reason. */
SBX_API int sbx_process_spawn(sbx_workspace *ws, const char *const argv[],
                              const sbx_spawn_opts *opts, sbx_process **out);

/* The host-side file descriptor of a stream (SBX_STDIN: the write end; SBX_STDOUT/SBX_STDERR:
 * the read ends), for poll/epoll/event loops, or -SBX_EBADF if it is closed (stderr when
 * merged). The fd stays owned by the process handle; it is close-on-exec and blocking (set
 * O_NONBLOCK yourself if your loop needs it). With opts.pty, SBX_STDIN and SBX_STDOUT are two
 * fds of the terminal's master (one open file: O_NONBLOCK on one is on both), and a read of
 * it fails with EIO where a pipe would read end-of-file. */
SBX_API int sbx_process_fd(const sbx_process *proc, int stream);

/* Writes all of data to the command's stdin. A command that has closed its stdin gives
 * -SBX_EIO ("broken pipe"); the host never receives SIGPIPE. */
SBX_API int sbx_process_write(sbx_process *proc, const void *data, size_t len);

/* Closes the command's stdin so it reads end-of-file. */
SBX_API int sbx_process_close_stdin(sbx_process *proc);

/* Reads up to cap bytes of stdout or stderr into buf, waiting at most timeout_ms (-1 = no
 * limit, 0 = do not wait). *nread is 0 at end-of-file. No data in time: -SBX_ETIMEDOUT. */
SBX_API int sbx_process_read(sbx_process *proc, int stream, void *buf, size_t cap,
                             int timeout_ms, size_t *nread);

/* Waits up to timeout_ms (-1 = no limit, 0 = poll) for the command to end. On success stores
 * its exit code (-1 if signalled) and signal (0 if exited) where the pointers are not NULL.
 * Still running: -SBX_ETIMEDOUT. May be called again after it succeeded. */
SBX_API int sbx_process_wait(sbx_process *proc, int timeout_ms, int *exit_code, int *term_signal);

/* Since 1.7: sets the size of the terminal of a process spawned with opts.pty (rows and
 * cols 1..65535); the command's foreground process group receives SIGWINCH. A process
 * without a terminal: -SBX_EINVAL. */
SBX_API int sbx_process_resize(sbx_process *proc, unsigned short rows, unsigned short cols);

/* Sends a signal to the command's process group. */
SBX_API int sbx_process_signal(sbx_process *proc, int sig);

/* Kills the command and every process it started. Does not wait; call sbx_process_wait. */
SBX_API int sbx_process_kill(sbx_process *proc);

/* Kills the process tree if it still runs, reaps it, closes the fds and frees the handle.
 * NULL is ignored. */
SBX_API void sbx_process_free(sbx_process *proc);

#ifdef __cplusplus
}
#endif

#endif /* AGENTSBX_EXEC_H */
