/* Wire protocol between the local backend and its per-command runner, agentsbx-run.
 *
 * The backend starts `agentsbx-run --proto 1 [--rlimit NAME=VALUE]... -- ARGV...` with the
 * command's environment, its working directory already set, the command's stdio on fds 0-2
 * and one end of a SOCK_SEQPACKET socketpair on fd 3 (the control channel).
 *
 * Where the host cannot pass a socketpair end (the docker backend, through the Engine's exec
 * API), it listens on a SOCK_SEQPACKET Unix socket the runner can reach and starts
 * `agentsbx-run --control-socket PATH --proto 1 ...`: the runner connects and uses that
 * connection as fd 3. `--env-only` with `--env-keep NAME`... keeps only the named variables
 * of the runner's environment, where the host cannot set it exactly. `--stdio-from-control`
 * (after --control-socket) makes the runner take the command's stdin, stdout and stderr from
 * the first control message (one byte with three SCM_RIGHTS fds) instead of its own fds 0-2.
 *
 * The backend starts the runner in a session of its own (the sandbox init's children have
 * one). The runner becomes a child subreaper, starts the command in a new session, and from
 * then on:
 *  - on a SBX_RUN_SIGNAL request, sends the signal to the command's process group;
 *  - on SBX_RUN_KILL, or when the control channel closes (the host died), kills every
 *    process below it and exits;
 *  - when the command's main process ends, kills whatever the command left behind, reaps it,
 *    sends one SBX_RUN_EXITED report and exits 0. (A runner of the sandbox init may instead
 *    stay for the init's next command: it closes the control socket after the report, so
 *    the host sees the same end-of-file, and holds nothing of the command's.)
 * A command that cannot be executed ends with code 127 (not found) or 126 (other errors) after
 * the runner wrote the reason to the command's stderr.
 *
 * Since 1.7, a terminal: `--pty ROWSxCOLS` (or, from the sandbox init, the runner setting
 * "pty=ROWSxCOLS" among its limits) makes the runner open a new pseudo-terminal where it runs
 * (the sandbox's own devpts instance), before anything else: it sends one SBX_RUN_PTY report
 * carrying the master fd (SCM_RIGHTS; exit_code 0, or an errno value and no fd when no
 * terminal could be made, after which the command is refused with 126), then starts the
 * command with the terminal's slave as its controlling terminal and as fds 0-2, the fds it
 * was given being unused. The host talks to the command through the master, and resizes it
 * there (TIOCSWINSZ, which signals SIGWINCH to the command's foreground process group).
 *
 * A runner the sandbox init keeps, asked with the runner setting "channel=1" (init_proto.h),
 * may carry one fd (SCM_RIGHTS) with its SBX_RUN_EXITED report: one end of a SOCK_SEQPACKET
 * channel of the runner's own. The host may then send its next SBX_INIT_SPAWN request
 * (init_proto.h: the same message, fds included) there instead of to the init, which spares
 * the init's wake-up and the fds' second passing; the runner serves it as if the init had
 * handed it over and reports on the request's own control socket as ever. The runner stays
 * the host's, busy in the init's eyes, until the host closes the channel (then it is the
 * init's again), and offers no second one. A host that reads the report without the fd has
 * closed it, which gives the runner back at once. A runner that will exit closes its channel
 * before its last report, so a request sent after that report fails to send (EPIPE) and goes
 * to the init instead.
 */
#ifndef SBX_RUN_PROTO_H
#define SBX_RUN_PROTO_H

#include <stdint.h>

#define SBX_RUN_PROTO_VERSION 1
#define SBX_RUN_CONTROL_FD 3
/* A terminal's size when the host gives none. */
#define SBX_RUN_PTY_ROWS 24
#define SBX_RUN_PTY_COLS 80

enum sbx_run_op { SBX_RUN_SIGNAL = 1, SBX_RUN_KILL = 2 };

struct sbx_run_request {
	uint32_t op;
	int32_t sig;
};

enum sbx_run_report_kind { SBX_RUN_EXITED = 1, SBX_RUN_PTY = 2 };

struct sbx_run_report {
	uint32_t kind;
	int32_t exit_code;   /* -1 when signalled */
	int32_t term_signal; /* 0 when exited */
};

#endif
