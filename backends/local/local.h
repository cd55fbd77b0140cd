/* The local backend: commands run directly on the host, in the workspace directory, each
 * under its own agentsbx-run process that owns the command's process tree. */
#ifndef SBX_BACKEND_LOCAL_H
#define SBX_BACKEND_LOCAL_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>
#include <agentsbx/backend.h>

/* How long closing a process waits for its runner to kill the tree before killing the runner
 * itself (the runner gives up on unkillable processes after 20 s). */
#define LOCAL_RELEASE_TIMEOUT_MS 30000

struct local_proc;

struct local_ws {
	char *workdir;                /* the root, as commands and the host both see it */
	char *runner;                 /* absolute path of agentsbx-run */
	sbx_backend_limits limits;    /* the workspace's limits, when a spawn brings none */
	pthread_mutex_t lock;         /* guards live */
	struct local_proc *live;      /* processes not yet released, for reset and close */
};

struct local_proc {
	struct local_ws *ws;          /* NULL once the workspace has closed */
	struct local_proc *prev, *next;
	pid_t pid;                    /* the runner; reaped only when the outcome is known */
	int pidfd;                    /* -1 where the kernel has no pidfds */
	int ctrl;                     /* the control socket; also the wait fd */
	bool ended;                   /* outcome known and runner reaped */
	bool runner_killed;           /* we had to SIGKILL the runner */
	int exit_code, term_signal;
	int error;                    /* 0, or why the runner broke its protocol */
	int runner_status;            /* waitpid status, for the error message */
};

extern const sbx_backend_ops sbx_backend_local;

/* launch.c */
int local_spawn(void *state, const sbx_backend_spawn *req, void **proc, int *wait_fd);

/* proc.c */
int local_proc_wait(void *proc, int timeout_ms, int *exit_code, int *term_signal);
int local_proc_signal(void *proc, int sig);
int local_proc_kill(void *proc);
void local_proc_release(void *proc);
/* Kills the tree and waits up to timeout_ms for its end, killing the runner past that. */
void local_proc_finish(struct local_proc *p, int timeout_ms);

/* local.c: the workspace's list of live processes. */
void local_track(struct local_ws *ws, struct local_proc *p);
void local_untrack(struct local_proc *p);

#endif
