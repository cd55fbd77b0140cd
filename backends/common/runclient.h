/* The host side of run_proto.h: a command seen through its runner's control socket, and the
 * set of live commands a workspace must stop on reset and close. The four proc functions
 * have the shapes of the backend ops, so backends put them straight into their tables. */
#ifndef SBX_UTIL_RUNCLIENT_H
#define SBX_UTIL_RUNCLIENT_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

/* How long releasing a command waits for its runner to kill the tree before killing the
 * runner itself (the runner gives up on unkillable processes after 20 s). */
#define SBX_RUNCLIENT_RELEASE_TIMEOUT_MS 30000

struct sbx_runclient_set;
struct sbx_backend_limits;

/* Channels straight to idle runners of a sandbox init (run_proto.h, SBX_RUN_EXITED with a
 * channel): a command sent on one skips the init's hop (its wake-up, the fds passed twice).
 * A runner offers its channel with a report and is its host's until the host closes it; the
 * host takes one per command and gives it back with the command's report. Shared by a set and
 * the commands it started (which may outlive it), so it is counted: the last unref frees it.
 * Every function is thread-safe; NULL is an empty pool. */
#define SBX_RUNCLIENT_POOL_MAX 32
struct sbx_runclient_pool;
struct sbx_runclient_pool *sbx_runclient_pool_new(void);
struct sbx_runclient_pool *sbx_runclient_pool_ref(struct sbx_runclient_pool *pool);
void sbx_runclient_pool_unref(struct sbx_runclient_pool *pool);
/* A channel, or -1 when none is idle. The caller sends one request on it and hands it to
 * the command's client (sbx_runclient_use_channel) or gives it back. */
int sbx_runclient_pool_take(struct sbx_runclient_pool *pool);
/* Keeps fd for the next command (closes it when the pool is full or closed). */
void sbx_runclient_pool_give(struct sbx_runclient_pool *pool, int fd);
/* Closes the channels it holds: their init is stopping (or restarting). */
void sbx_runclient_pool_clear(struct sbx_runclient_pool *pool);
/* The same, and keeps none from now on: its set is gone, the commands that outlive it are
 * the last of the sandbox's. */
void sbx_runclient_pool_close(struct sbx_runclient_pool *pool);

/* The runner limits (runner.h names) a workspace's limits turn into: fills text with
 * "name=value" strings for the limits that are set and returns how many. */
#define SBX_RUNCLIENT_MAX_RLIMITS 5
typedef char sbx_rlimit_text[48];
size_t sbx_runclient_rlimits(const struct sbx_backend_limits *limits,
                             sbx_rlimit_text text[SBX_RUNCLIENT_MAX_RLIMITS]);

struct sbx_runclient {
	struct sbx_runclient_set *set; /* NULL once untracked */
	struct sbx_runclient *prev, *next;
	const char *who;              /* "local", "ns": prefixes messages */
	pid_t pid;                    /* the runner if it is our child, else 0 (in a sandbox) */
	int pidfd;                    /* -1 where unknown */
	int ctrl;                     /* the control socket; also the wait fd */
	bool ended;                   /* outcome known and runner reaped */
	bool runner_killed;           /* we had to kill the runner */
	int exit_code, term_signal;
	int error;                    /* 0, or why the runner broke its protocol */
	int runner_status;            /* waitpid status, for the error message */
	struct sbx_runclient_pool *pool; /* where a runner's channel goes after the report */
	int channel;                  /* the runner's channel the command was sent on, or -1 */
};

struct sbx_runclient_set {
	pthread_mutex_t lock;
	struct sbx_runclient *live;
	struct sbx_runclient_pool *pool; /* the runners' channels (sandbox inits); may be NULL */
};

/* A new client for a runner (pid 0 when it is not our child) on control socket ctrl, which
 * it then owns. NULL when out of memory. */
struct sbx_runclient *sbx_runclient_new(pid_t pid, int ctrl, const char *who);

/* p's runner is a sandbox init's (sbx_runclient_pool): a channel its runner offers with the
 * report goes to pool, and so does channel, the runner's channel the command was sent on (-1:
 * it went through the init), which p takes; p closes it instead when the runner ends without
 * a report. */
void sbx_runclient_set_pool(struct sbx_runclient *p, struct sbx_runclient_pool *pool,
                            int channel);

/* A runner asked for a terminal (run_proto.h, --pty) sends its master before anything else:
 * waits up to timeout_ms for it and stores it in *fd (close-on-exec, the caller's). On
 * failure *fd is -1 and the message says why; the caller releases p. */
#define SBX_RUNCLIENT_PTY_TIMEOUT_MS 30000
int sbx_runclient_take_pty(struct sbx_runclient *p, int timeout_ms, int *fd);
/* The size of a terminal as the runner takes it: "ROWSxCOLS" (--pty, or "pty=" for the init). */
typedef char sbx_pty_text[24];
void sbx_runclient_pty_text(unsigned short rows, unsigned short cols, sbx_pty_text out);

int sbx_runclient_wait(void *proc, int timeout_ms, int *exit_code, int *term_signal);
int sbx_runclient_signal(void *proc, int sig);
int sbx_runclient_kill(void *proc);
void sbx_runclient_release(void *proc);
/* Kills the tree and waits up to timeout_ms for its end, killing the runner past that. */
void sbx_runclient_finish(struct sbx_runclient *p, int timeout_ms);

void sbx_runclient_set_init(struct sbx_runclient_set *set);
void sbx_runclient_set_destroy(struct sbx_runclient_set *set);
void sbx_runclient_track(struct sbx_runclient_set *set, struct sbx_runclient *p);
void sbx_runclient_untrack(struct sbx_runclient *p);
/* Kills every live command and waits for the trees; with forget the clients leave the set
 * (the core still owns and later releases them). */
void sbx_runclient_kill_all(struct sbx_runclient_set *set, bool forget);

#endif
