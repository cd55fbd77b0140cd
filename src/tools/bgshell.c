/* Background shells (see bgshell.h). The list hangs off the workspace handle (ws->bgshells,
 * under ws->bg_lock), so it lives exactly as long as the handle and its sandbox: a command
 * left running is killed with everything it started when the handle closes or resets.
 *
 * The process handle belongs to the shell's pump thread alone (a handle is one thread's at a
 * time): KillShell asks the thread, through an eventfd, to kill it. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "config.h"
#include "tools/bgshell.h"
#include "util/clock.h"
#include "util/error.h"

#define READ_CHUNK 65536
#define POLL_MS 200
/* After the main process ended, how long output still held in the pipes may trickle in. */
#define DRAIN_GRACE_MS 2000
/* After a kill, how long the end may take before the handle is freed (which kills again and
 * reaps). */
#define KILL_GRACE_MS 5000
/* Ended shells are remembered for BashOutput; beyond this many the oldest read ones go. */
#define REMEMBERED_MAX 64

struct sbx_bgshell {
	struct sbx_bgshell *next;
	sbx_workspace *ws;
	char id[SBX_BG_ID_MAX];
	char *command;
	sbx_process *proc;        /* the pump thread's; NULL once it ended and was freed */
	pthread_t thread;
	int wake_fd;              /* eventfd: a kill was asked for */
	pthread_cond_t ended_cond;
	bool ended, kill_requested, read_after_end;
	unsigned waiters;         /* KillShell calls waiting on ended_cond: not to be evicted */
	sbx_buf out, err;         /* unread output, the newest SBX_BG_KEEP_BYTES per stream */
	uint64_t out_dropped, err_dropped;
	int exit_code, term_signal;
};

const char *sbx_bg_status_name(enum sbx_bg_status s)
{
	static const char *const names[] = { "running", "completed", "failed", "killed" };

	return names[s];
}

/* Keeps the newest bytes: for a server's log, what it said last matters most. */
static void keep_newest(sbx_buf *b, uint64_t *dropped, const char *data, size_t len)
{
	if (len >= SBX_BG_KEEP_BYTES) {
		*dropped += b->len + (len - SBX_BG_KEEP_BYTES);
		b->len = 0;
		data += len - SBX_BG_KEEP_BYTES;
		len = SBX_BG_KEEP_BYTES;
	} else if (b->len + len > SBX_BG_KEEP_BYTES) {
		size_t cut = b->len + len - SBX_BG_KEEP_BYTES;

		memmove(b->data, b->data + cut, b->len - cut);
		b->len -= cut;
		*dropped += cut;
	}
	sbx_buf_append(b, data, len);
}

/* Reads what a ready stream has; false at its end (or an error: it is read no more). */
static bool pump_stream(struct sbx_bgshell *sh, int fd, bool is_err)
{
	char chunk[READ_CHUNK];
	ssize_t n;

	do
		n = read(fd, chunk, sizeof chunk);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return true;
	if (n <= 0)
		return false;
	pthread_mutex_lock(&sh->ws->bg_lock);
	keep_newest(is_err ? &sh->err : &sh->out, is_err ? &sh->err_dropped : &sh->out_dropped,
	            chunk, (size_t)n);
	pthread_mutex_unlock(&sh->ws->bg_lock);
	return true;
}

struct pump_state {
	int out, err;             /* the streams still read, or -1 */
	bool ended;
	int64_t grace_until, kill_until;
};

static void poll_once(struct sbx_bgshell *sh, struct pump_state *st)
{
	struct pollfd p[3] = { { .fd = sh->wake_fd, .events = POLLIN },
	                       { .fd = st->out, .events = POLLIN },
	                       { .fd = st->err, .events = POLLIN } };
	uint64_t v;

	if (poll(p, 3, st->ended ? 50 : POLL_MS) <= 0)
		return;
	if ((p[0].revents & POLLIN) && read(sh->wake_fd, &v, sizeof v) == (ssize_t)sizeof v &&
	    st->kill_until < 0) {
		sbx_process_kill(sh->proc);
		st->kill_until = sbx_now_ms() + KILL_GRACE_MS;
	}
	if (p[1].revents && !pump_stream(sh, st->out, false))
		st->out = -1;
	if (p[2].revents && !pump_stream(sh, st->err, true))
		st->err = -1;
}

static void finish(struct sbx_bgshell *sh, bool ended, int code, int sig)
{
	pthread_mutex_lock(&sh->ws->bg_lock);
	sh->ended = true;
	sh->exit_code = ended ? code : -1;
	sh->term_signal = ended ? sig : SIGKILL;
	pthread_cond_broadcast(&sh->ended_cond);
	pthread_mutex_unlock(&sh->ws->bg_lock);
}

/* Any answer but "still running" is the end (as in exec.c): an error says the runner, or the
 * whole sandbox, died without a report, and every later wait says so again. Taken for "not
 * yet", the shell stayed running for ever and held its slot. */
static bool saw_end(sbx_process *proc, int *code, int *sig)
{
	int r = sbx_process_wait(proc, 0, code, sig);

	if (r == -SBX_ETIMEDOUT)
		return false;
	if (r < 0) {
		*code = -1;   /* no report: "failed", with no exit status to give */
		*sig = 0;
		sbx_error_clear();
	}
	return true;
}

static void *pump(void *arg)
{
	struct sbx_bgshell *sh = arg;
	struct pump_state st = { .out = sbx_process_fd(sh->proc, SBX_STDOUT),
	                         .err = sbx_process_fd(sh->proc, SBX_STDERR),
	                         .grace_until = -1, .kill_until = -1 };
	int code = -1, sig = 0;

	for (;;) {
		poll_once(sh, &st);
		if (!st.ended && saw_end(sh->proc, &code, &sig)) {
			st.ended = true;
			st.grace_until = sbx_now_ms() + DRAIN_GRACE_MS;
		}
		if (st.ended && ((st.out < 0 && st.err < 0) || sbx_now_ms() > st.grace_until))
			break;
		if (!st.ended && st.kill_until >= 0 && sbx_now_ms() > st.kill_until)
			break;
	}
	/* Freeing kills and reaps whatever still runs: nothing of the shell outlives it. */
	sbx_process_free(sh->proc);
	sh->proc = NULL;
	finish(sh, st.ended, code, sig);
	return NULL;
}

static void shell_free(struct sbx_bgshell *sh)
{
	if (sh->wake_fd >= 0)
		close(sh->wake_fd);
	pthread_cond_destroy(&sh->ended_cond);
	sbx_buf_free(&sh->out);
	sbx_buf_free(&sh->err);
	free(sh->command);
	free(sh);
}

/* Caller holds bg_lock. */
static struct sbx_bgshell *find_shell(sbx_workspace *ws, const char *id)
{
	for (struct sbx_bgshell *sh = ws->bgshells; sh; sh = sh->next)
		if (strcmp(sh->id, id) == 0)
			return sh;
	return NULL;
}

/* Caller holds bg_lock. */
static void count_shells(sbx_workspace *ws, size_t *running, size_t *all)
{
	*running = *all = ws->bg_starting;
	for (struct sbx_bgshell *sh = ws->bgshells; sh; sh = sh->next) {
		(*all)++;
		*running += !sh->ended;
	}
}

/* Caller holds bg_lock. Unlinks the oldest ended shell whose end was read, or NULL. One a
 * KillShell still waits on is not taken: freeing it under the waiter destroyed the condvar
 * it sleeps on. */
static struct sbx_bgshell *unlink_oldest_read(sbx_workspace *ws)
{
	struct sbx_bgshell **victim = NULL;

	for (struct sbx_bgshell **at = &ws->bgshells; *at; at = &(*at)->next)
		if ((*at)->ended && (*at)->read_after_end && !(*at)->waiters)
			victim = at;   /* new shells go first: the last match is the oldest */
	if (!victim)
		return NULL;
	struct sbx_bgshell *sh = *victim;
	*victim = sh->next;
	return sh;
}

static size_t running_cap(const sbx_workspace *ws)
{
	return ws->cfg->background_shells ? (size_t)ws->cfg->background_shells
	                                  : SBX_BG_DEFAULT_RUNNING;
}

/* Caller holds bg_lock. 0 when another may start, else 1 with the reason. */
static int room_for_one(sbx_workspace *ws, char *why, size_t why_len, struct sbx_bgshell **old)
{
	size_t running, all;

	*old = NULL;
	count_shells(ws, &running, &all);
	if (running >= running_cap(ws)) {
		snprintf(why, why_len, "Error: %zu background shells are running already, the most "
		         "this workspace allows (limits.background_shells); stop one with KillShell "
		         "or wait for one to finish", running);
		return 1;
	}
	if (all >= REMEMBERED_MAX && !(*old = unlink_oldest_read(ws))) {
		snprintf(why, why_len, "Error: %d background shells have ended without their output "
		         "being read; read it with BashOutput first", REMEMBERED_MAX);
		return 1;
	}
	return 0;
}

static int spawn_shell(sbx_workspace *ws, struct sbx_bgshell *sh, const char *cwd)
{
	const char *argv[] = { "/bin/sh", "-c", sh->command, NULL };
	sbx_spawn_opts o = { .size = sizeof o, .cwd = *cwd ? cwd : NULL };
	int r;

	if ((r = sbx_process_spawn_unhooked(ws, argv, &o, &sh->proc)) < 0)
		return r;
	/* Nobody will type into it: a command that reads stdin gets end-of-file at once. */
	sbx_process_close_stdin(sh->proc);
	return 0;
}

static struct sbx_bgshell *shell_new(sbx_workspace *ws, const char *command)
{
	struct sbx_bgshell *sh = calloc(1, sizeof *sh);

	if (!sh)
		return NULL;
	sh->ws = ws;
	sh->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_cond_init(&sh->ended_cond, NULL);
	if (sh->wake_fd < 0 || !(sh->command = strdup(command))) {
		shell_free(sh);
		return NULL;
	}
	return sh;
}

static void forget_shell(struct sbx_bgshell *sh)
{
	if (!sh)
		return;
	pthread_join(sh->thread, NULL);
	shell_free(sh);
}

int sbx_bg_start(sbx_workspace *ws, const char *command, const char *cwd,
                 char id[SBX_BG_ID_MAX], char *why, size_t why_len)
{
	struct sbx_bgshell *sh = shell_new(ws, command), *old = NULL;
	int r;

	if (!sh)
		return sbx_fail(-SBX_ENOMEM, "background shell: out of memory or no eventfd");
	/* The slot is taken under the lock, the sandbox's spawn made without it: the pumps of the
	 * other shells need the lock to empty their pipes, and BashOutput and KillShell from other
	 * threads to answer. */
	pthread_mutex_lock(&ws->bg_lock);
	if ((r = room_for_one(ws, why, why_len, &old)) == 0)
		ws->bg_starting++;
	pthread_mutex_unlock(&ws->bg_lock);
	if (r != 0) {
		shell_free(sh);
		return r;
	}
	forget_shell(old);
	r = spawn_shell(ws, sh, cwd);
	pthread_mutex_lock(&ws->bg_lock);
	ws->bg_starting--;
	if (r == 0) {
		snprintf(sh->id, sizeof sh->id, "bash_%u", ++ws->bg_next_id);
		r = pthread_create(&sh->thread, NULL, pump, sh);
		if (r != 0) {
			sbx_process_free(sh->proc);
			r = sbx_fail(-SBX_ENOMEM, "background shell: no thread: %s", strerror(r));
		} else {
			sh->next = ws->bgshells;
			ws->bgshells = sh;
			memcpy(id, sh->id, sizeof sh->id);
		}
	}
	pthread_mutex_unlock(&ws->bg_lock);
	if (r != 0)
		shell_free(sh);   /* never linked: nobody else saw it */
	return r;
}

/* Caller holds bg_lock. */
static void list_ids(sbx_workspace *ws, char *why, size_t why_len, const char *id)
{
	size_t used = (size_t)snprintf(why, why_len, "Error: no background shell with ID \"%.40s\"",
	                               id);
	const char *sep = "; the shells are: ";

	if (!ws->bgshells && used < why_len)
		snprintf(why + used, why_len - used, " (none was started in this workspace: "
		         "run a command with Bash and run_in_background set to start one)");
	for (struct sbx_bgshell *sh = ws->bgshells; sh && used < why_len; sh = sh->next, sep = ", ")
		used += (size_t)snprintf(why + used, why_len - used, "%s%s", sep, sh->id);
}

/* Caller holds bg_lock. The command and where it stands, its output left unread. */
static void describe_locked(struct sbx_bgshell *sh, sbx_bg_report *rep)
{
	rep->command = strdup(sh->command);
	rep->exit_code = sh->exit_code;
	rep->term_signal = sh->term_signal;
	if (!sh->ended)
		rep->status = SBX_BG_RUNNING;
	else if (sh->kill_requested)
		rep->status = SBX_BG_KILLED;
	else
		rep->status = sh->exit_code == 0 ? SBX_BG_COMPLETED : SBX_BG_FAILED;
}

/* Caller holds bg_lock. */
static void take_locked(struct sbx_bgshell *sh, sbx_bg_report *rep)
{
	describe_locked(sh, rep);
	rep->out = sh->out;
	rep->err = sh->err;
	sh->out = (sbx_buf){ 0 };
	sh->err = (sbx_buf){ 0 };
	rep->out_dropped = sh->out_dropped;
	rep->err_dropped = sh->err_dropped;
	sh->out_dropped = sh->err_dropped = 0;
	if (sh->ended)
		sh->read_after_end = true;
}

int sbx_bg_take(sbx_workspace *ws, const char *id, sbx_bg_report *rep, char *why,
                size_t why_len)
{
	struct sbx_bgshell *sh;

	*rep = (sbx_bg_report){ 0 };
	pthread_mutex_lock(&ws->bg_lock);
	if (!(sh = find_shell(ws, id))) {
		list_ids(ws, why, why_len, id);
		pthread_mutex_unlock(&ws->bg_lock);
		return 1;
	}
	take_locked(sh, rep);
	pthread_mutex_unlock(&ws->bg_lock);
	return rep->command ? 0 : sbx_fail(-SBX_ENOMEM, "out of memory");
}

/* Caller holds bg_lock; waits for the pump to see the end, KILL_GRACE_MS and a bit at most. */
static void wait_end_locked(sbx_workspace *ws, struct sbx_bgshell *sh)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += KILL_GRACE_MS / 1000 + 2;
	while (!sh->ended)
		if (pthread_cond_timedwait(&sh->ended_cond, &ws->bg_lock, &until) == ETIMEDOUT)
			break;
}

int sbx_bg_kill(sbx_workspace *ws, const char *id, sbx_bg_report *rep, char *why,
                size_t why_len)
{
	struct sbx_bgshell *sh;
	uint64_t one = 1;
	bool had_ended;

	*rep = (sbx_bg_report){ 0 };
	pthread_mutex_lock(&ws->bg_lock);
	if (!(sh = find_shell(ws, id))) {
		list_ids(ws, why, why_len, id);
		pthread_mutex_unlock(&ws->bg_lock);
		return 1;
	}
	had_ended = sh->ended;
	if (!had_ended) {
		sh->kill_requested = true;
		if (write(sh->wake_fd, &one, sizeof one) < 0) {
			/* A full eventfd already holds a request. */
		}
		sh->waiters++;
		wait_end_locked(ws, sh);
		sh->waiters--;
	}
	describe_locked(sh, rep);   /* its output stays for BashOutput */
	pthread_mutex_unlock(&ws->bg_lock);
	if (!rep->command)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if (had_ended)
		return 2;
	return rep->status == SBX_BG_RUNNING ? 3 : 0;
}

void sbx_bg_report_free(sbx_bg_report *rep)
{
	free(rep->command);
	sbx_buf_free(&rep->out);
	sbx_buf_free(&rep->err);
	*rep = (sbx_bg_report){ 0 };
}

void sbx_bgshells_stop(sbx_workspace *ws)
{
	struct sbx_bgshell *list, *sh;
	uint64_t one = 1;

	pthread_mutex_lock(&ws->bg_lock);
	list = ws->bgshells;
	ws->bgshells = NULL;
	/* Every shell gets its kill first, so they die in parallel rather than one by one. */
	for (sh = list; sh; sh = sh->next)
		if (!sh->ended && write(sh->wake_fd, &one, sizeof one) < 0) {
			/* A full eventfd already holds a request. */
		}
	pthread_mutex_unlock(&ws->bg_lock);
	while ((sh = list)) {
		list = sh->next;
		forget_shell(sh);
	}
}
