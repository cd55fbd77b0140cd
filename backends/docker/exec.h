/* The docker backend's commands: what exec.c (how a command starts, the process ops) and
 * stream.c (stdio through the Engine's hijacked exec stream) share. */
#ifndef SBX_DOCKER_EXEC_H
#define SBX_DOCKER_EXEC_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "docker.h"
#include "frames.h"
#include "backends/common/runclient.h"
#include "util/clock.h"

/* How long to wait for a runner's connection, and for a killed command's end. */
#define CONNECT_TIMEOUT_MS 30000
#define RELEASE_TIMEOUT_MS 15000

struct docker_proc {
	struct docker_ws *ws;             /* NULL once the workspace closed and forgot it */
	char container[16];               /* short id, for messages */
	struct sbx_runclient *rc;         /* stdio "direct": the runner's client does it all */
	bool runner_gone;                 /* direct: its control channel closed after the report */
	struct docker_proc *prev, *next;  /* the workspace's live list */
	int stream;                       /* the hijacked connection */
	int ctrl;                         /* the runner's control channel */
	int in_fd, out_fd, err_fd;        /* our copies of the command's stdio ends */
	int done_fd;                      /* eventfd: readable once the outcome is known */
	int wake_fd;                      /* eventfd: release wakes the pump */
	pthread_t pump;
	bool pump_started;
	_Atomic bool releasing;
	_Atomic bool kill_sent;
	/* Written by the pump before done_fd, read by others after it. */
	bool ended;
	int exit_code, term_signal;
	int error;
	char message[512];
	/* Pump-only state. */
	struct docker_frames frames;
	char *in_buf;
	size_t in_len, in_off;
	bool stream_done, report_done, in_closed;
};

/* exec.c */
/* Whether the core asked for a terminal (sbx_backend_spawn.pty, since 1.7). */
bool docker_wants_pty(const sbx_backend_spawn *req);
/* Creates an engine exec of the runner for req, its control socket named sock in
 * DOCKER_CONTROL_DIR; direct: stdio from the control channel, else attached. */
int docker_exec_create(struct docker_ws *ws, const sbx_backend_spawn *req, const char *sock,
                       bool direct, char **exec_id);
/* Whether an exec still runs, and its exit code (-1 unknown). */
void docker_exec_state(struct docker_ws *ws, const char *exec_id, bool *running, int *exit_code);

/* stream.c */
/* Starts req through the hijacked stream: the runner connects on lfd (listening as sock). */
int docker_stream_spawn(struct docker_ws *ws, const sbx_backend_spawn *req, int lfd,
                        const char *sock, struct docker_proc **out);
/* 0 once the outcome is known, -SBX_ETIMEDOUT before; then the outcome (or the error). */
int docker_stream_wait(const struct docker_proc *p, int timeout_ms);
int docker_stream_outcome(struct docker_proc *p, int timeout_ms, int *exit_code,
                          int *term_signal);
/* Sends a run_proto.h request (signal, kill) to the command's runner. */
int docker_stream_request(struct docker_proc *p, uint32_t op, int sig);
/* Kills (if needed), waits for the pump thread and frees p. */
void docker_stream_release(struct docker_proc *p);

#endif
