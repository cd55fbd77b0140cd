/* sbx_exec: run a command to completion. One loop serves every backend: it feeds stdin,
 * drains stdout and stderr as they arrive (so a chatty command never blocks on a full pipe),
 * keeps at most the cap per stream, streams to the callback, and enforces the timeout by
 * asking the backend to kill the whole process tree. */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "gitguard.h"
#include "internal.h"
#include "opts.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"

#define SBX_READ_CHUNK 65536
/* After the main process ended, how long its output may still trickle in (the backend killed
 * the tree, so the pipes close at once unless something else holds them). */
#define SBX_DRAIN_GRACE_MS 2000
/* After a kill, how long to wait for the end before giving up on the output. */
#define SBX_KILL_GRACE_MS 5000

struct sbx_result {
	int exit_code;
	int term_signal;
	int timed_out;
	int truncated;
	uint64_t dropped[2];   /* bytes read and dropped at the cap: stdout, stderr */
	int64_t duration_ms;
	sbx_buf out;
	sbx_buf err;
	/* What the command wrote to each stream, kept, streamed or dropped (the audit record's
	 * stdout_bytes and stderr_bytes): a streamed exec keeps none of it in out and err. */
	uint64_t out_bytes, err_bytes;
};

struct exec_run {
	sbx_workspace *ws;
	sbx_spawned sp;
	struct sbx_result *res;
	const char *in_data;
	size_t in_len, in_off;
	int src_fd;          /* sbx_exec_from_fd: stdin comes from here as it arrives, or -1 */
	char *src_chunk;     /* what was read from it and not yet written (in_data) */
	size_t cap;
	sbx_output_cb cb;
	void *userdata;
	bool capture;        /* keep output in the result (and cap it) */
	bool ended;          /* the backend reported the end */
	bool killed;
	bool interrupted;    /* the interrupt fd fired: killed, not timed out */
	int64_t deadline;    /* -1 = none */
	int64_t grace_until; /* -1 = not yet in a grace period */
};

/* The CLI's signalfd (sbx_exec_set_interrupt_fd), or -1. */
static atomic_int interrupt_fd = -1;

void sbx_exec_set_interrupt_fd(int fd)
{
	atomic_store(&interrupt_fd, fd);
}

static int read_exec_opts(const sbx_exec_opts *in, sbx_exec_opts *o)
{
	int r = SBX_OPTS_READ(in, o, sbx_exec_opts);

	if (r < 0)
		return r;
	if (o->flags & ~(SBX_EXEC_CLEAR_ENV | SBX_EXEC_MERGE_STDERR | SBX_EXEC_NO_CAPTURE))
		return sbx_fail(-SBX_EINVAL, "opts.flags: unknown bits 0x%x", o->flags);
	if (o->timeout_ms < -1)
		return sbx_fail(-SBX_EINVAL, "opts.timeout_ms: %lld is negative (use -1 for none)",
		                (long long)o->timeout_ms);
	if (!o->stdin_data && o->stdin_len)
		return sbx_fail(-SBX_EINVAL, "opts.stdin_data is NULL but opts.stdin_len is %zu",
		                o->stdin_len);
	return 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Keeps what fits under the cap and drops the rest; the callback sees exactly what is kept. */
static void take_output(struct exec_run *run, int stream, const char *data, size_t len)
{
	sbx_buf *b = stream == SBX_STDERR ? &run->res->err : &run->res->out;
	size_t room = b->len < run->cap ? run->cap - b->len : 0;
	size_t keep = len < room ? len : room;

	if (stream == SBX_STDERR)
		run->res->err_bytes += len;
	else
		run->res->out_bytes += len;
	if (!run->capture) {
		if (run->cb)
			run->cb(stream, data, len, run->userdata);
		return;
	}
	if (keep < len) {
		run->res->truncated = 1;
		run->res->dropped[stream == SBX_STDERR] += len - keep;
	}
	if (!keep)
		return;
	sbx_buf_append(b, data, keep);
	if (run->cb)
		run->cb(stream, data, keep, run->userdata);
}

static void drain_stream(struct exec_run *run, int *fd, int stream)
{
	char chunk[SBX_READ_CHUNK];
	ssize_t n;

	do
		n = read(*fd, chunk, sizeof chunk);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		take_output(run, stream, chunk, (size_t)n);
	else if (n == 0 || errno != EAGAIN)
		close_fd(fd);
}

/* Whether stdin has bytes read and not yet written (else it waits for the source). */
static bool stdin_pending(const struct exec_run *run)
{
	return run->in_off < run->in_len || run->src_fd < 0;
}

static void feed_stdin(struct exec_run *run)
{
	size_t left = run->in_len - run->in_off;
	ssize_t n = left ? sbx_pipe_write(run->sp.in_fd, run->in_data + run->in_off,
	                                  left < SBX_READ_CHUNK ? left : SBX_READ_CHUNK) : 0;

	if (n > 0)
		run->in_off += (size_t)n;
	/* A command that stopped reading (EPIPE) simply does not get the rest. */
	if (n < 0 && n != -EAGAIN) {
		run->src_fd = -1;
		close_fd(&run->sp.in_fd);
	} else if (run->in_off == run->in_len && run->src_fd < 0) {
		close_fd(&run->sp.in_fd);
	}
}

/* The source is readable: the next piece of stdin, or its end, which the command then reads
 * as end-of-file. The source stays blocking (it is the caller's, shared with others), which
 * poll makes safe: one read after POLLIN does not wait. */
static void pull_source(struct exec_run *run)
{
	ssize_t n;

	do
		n = read(run->src_fd, run->src_chunk, SBX_READ_CHUNK);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return;
	if (n > 0) {
		run->in_data = run->src_chunk;
		run->in_len = (size_t)n;
		run->in_off = 0;
		return;
	}
	run->src_fd = -1;
	close_fd(&run->sp.in_fd);
}

/* Any answer but "still running" ends the run. An error — the runner, or the whole sandbox,
 * died without a report — is an end too, and finish() returns it: taken for "not yet", it
 * left the wait fd hung up and ready for ever, and the loop spun without end. */
static void note_end(struct exec_run *run)
{
	int code, sig;

	if (run->ws->ops->proc_wait(run->sp.proc, 0, &code, &sig) != -SBX_ETIMEDOUT) {
		run->ended = true;
		run->grace_until = sbx_now_ms() + SBX_DRAIN_GRACE_MS;
	}
}

static void kill_on_deadline(struct exec_run *run)
{
	run->ws->ops->proc_kill(run->sp.proc);
	run->killed = true;
	run->res->timed_out = 1;
	run->grace_until = sbx_now_ms() + SBX_KILL_GRACE_MS;
}

/* The process is ending (a signal the CLI handles): the command goes, the run ends as a kill. */
static void kill_on_interrupt(struct exec_run *run)
{
	if (!run->killed)
		run->ws->ops->proc_kill(run->sp.proc);
	run->killed = true;
	run->interrupted = true;
	run->grace_until = sbx_now_ms() + SBX_KILL_GRACE_MS;
}

static int poll_timeout(const struct exec_run *run)
{
	int64_t now = sbx_now_ms(), until = -1;

	if (run->grace_until >= 0)
		until = run->grace_until;
	else if (run->deadline >= 0 && !run->killed)
		until = run->deadline;
	if (until < 0)
		return -1;
	return until <= now ? 0 : (int)(until - now > 60000 ? 60000 : until - now);
}

/* One round of poll; returns false when the run is over. */
static bool exec_step(struct exec_run *run)
{
	struct pollfd p[5];
	int n = 0, in = -1, src = -1, out = -1, err = -1, wait = -1, intr = -1, ifd = atomic_load(&interrupt_fd);

	if (run->sp.in_fd >= 0 && stdin_pending(run))
		p[in = n++] = (struct pollfd){ .fd = run->sp.in_fd, .events = POLLOUT };
	else if (run->sp.in_fd >= 0 && !run->ended)
		p[src = n++] = (struct pollfd){ .fd = run->src_fd, .events = POLLIN };
	if (run->sp.out_fd >= 0)
		p[out = n++] = (struct pollfd){ .fd = run->sp.out_fd, .events = POLLIN };
	if (run->sp.err_fd >= 0)
		p[err = n++] = (struct pollfd){ .fd = run->sp.err_fd, .events = POLLIN };
	if (!run->ended)
		p[wait = n++] = (struct pollfd){ .fd = run->sp.wait_fd, .events = POLLIN };
	if (ifd >= 0 && !run->interrupted && !run->ended)
		p[intr = n++] = (struct pollfd){ .fd = ifd, .events = POLLIN };
	if (run->ended && out < 0 && err < 0)
		return false;

	int ready = poll(p, (nfds_t)n, poll_timeout(run));
	if (ready < 0 && errno != EINTR)
		return false;
	if (ready == 0) {
		if (run->grace_until >= 0 && sbx_now_ms() >= run->grace_until)
			return false;      /* stop waiting for output nobody will finish */
		if (run->deadline >= 0 && !run->killed && sbx_now_ms() >= run->deadline)
			kill_on_deadline(run);
		return true;
	}
	if (in >= 0 && p[in].revents)
		feed_stdin(run);
	if (src >= 0 && p[src].revents)
		pull_source(run);
	if (out >= 0 && p[out].revents)
		drain_stream(run, &run->sp.out_fd, SBX_STDOUT);
	if (err >= 0 && p[err].revents)
		drain_stream(run, &run->sp.err_fd, SBX_STDERR);
	if (wait >= 0 && p[wait].revents)
		note_end(run);
	if (intr >= 0 && p[intr].revents && !run->ended)
		kill_on_interrupt(run);
	if (run->deadline >= 0 && !run->killed && !run->ended && sbx_now_ms() >= run->deadline)
		kill_on_deadline(run);
	return true;
}

static void set_nonblocking(int fd)
{
	if (fd >= 0)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static int finish(struct exec_run *run)
{
	const sbx_backend_ops *ops = run->ws->ops;
	int r = ops->proc_wait(run->sp.proc, run->ended ? 0 : -1, &run->res->exit_code,
	                       &run->res->term_signal);

	close_fd(&run->sp.in_fd);
	close_fd(&run->sp.out_fd);
	close_fd(&run->sp.err_fd);
	ops->proc_release(run->sp.proc);
	if (r == 0 && (run->res->out.oom || run->res->err.oom))
		r = sbx_fail(-SBX_ENOMEM, "exec: out of memory while keeping output");
	return r;
}

static struct sbx_result *new_result(void)
{
	struct sbx_result *res = calloc(1, sizeof *res);

	if (res) {
		/* Getters promise a non-NULL, NUL-terminated buffer even for no output. */
		sbx_buf_append(&res->out, "", 0);
		sbx_buf_append(&res->err, "", 0);
	}
	return res;
}

static int run_exec(sbx_workspace *ws, const char *const argv[], const sbx_exec_opts *opts,
                    int src_fd, sbx_result **out)
{
	struct exec_run run = { .ws = ws, .deadline = -1, .grace_until = -1, .src_fd = src_fd };
	_cleanup_free_ char *chunk = NULL;
	sbx_exec_opts o;
	int64_t start = sbx_now_ms(), timeout;
	int r;

	if (!out)
		return sbx_fail(-SBX_EINVAL, "out is NULL");
	*out = NULL;
	if (!ws)
		return sbx_fail(-SBX_EINVAL, "workspace is NULL");
	if ((r = read_exec_opts(opts, &o)) < 0)
		return r;
	timeout = o.timeout_ms == 0 ? ws->cfg->timeout_ms : o.timeout_ms;
	run.deadline = timeout > 0 ? start + timeout : -1;
	run.cap = o.max_output ? o.max_output : ws->cfg->max_output;
	run.cb = o.on_output;
	run.userdata = o.userdata;
	run.capture = !(o.flags & SBX_EXEC_NO_CAPTURE);
	run.in_data = o.stdin_data;
	run.in_len = o.stdin_data ? o.stdin_len : 0;
	if (src_fd >= 0 && (o.stdin_data || !(run.src_chunk = chunk = malloc(SBX_READ_CHUNK))))
		return o.stdin_data ? sbx_fail(-SBX_EINVAL, "opts.stdin_data: not with a stdin fd")
		                    : sbx_fail(-SBX_ENOMEM, "out of memory");
	if (!(run.res = new_result()))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	r = sbx_spawn_command(ws, argv, o.cwd, o.env, o.flags & ~SBX_EXEC_NO_CAPTURE,
	                      o.stdin_data != NULL || src_fd >= 0, &run.sp);
	if (r < 0) {
		sbx_result_free(run.res);
		return r;
	}
	set_nonblocking(run.sp.in_fd);
	set_nonblocking(run.sp.out_fd);
	set_nonblocking(run.sp.err_fd);
	while (exec_step(&run))
		;
	r = finish(&run);
	/* Before the caller sees the result: nothing the command planted for git survives. */
	sbx_gitguard_check(ws, "exec");
	run.res->duration_ms = sbx_now_ms() - start;
	if (r < 0) {
		sbx_result_free(run.res);
		return r;
	}
	*out = run.res;
	return 0;
}

int sbx_exec_unhooked(sbx_workspace *ws, const char *const argv[], const sbx_exec_opts *opts,
                      sbx_result **out)
{
	return run_exec(ws, argv, opts, -1, out);
}

static const char *end_of(const sbx_result *res)
{
	if (res->timed_out)
		return "timeout";
	if (res->term_signal)
		return "signal";
	return res->exit_code == 0 ? "ok" : "failed";
}

/* Asks the approval handler, then runs and logs the command. */
static int exec_logged(sbx_workspace *ws, const char *const argv[], const sbx_exec_opts *opts,
                       int src_fd, sbx_result **out)
{
	sbx_audit_rec rec;
	sbx_exec_opts o;
	int r;

	if (!out)
		return sbx_fail(-SBX_EINVAL, "out is NULL");
	*out = NULL;
	if (!ws)
		return sbx_fail(-SBX_EINVAL, "workspace is NULL");
	if (!argv || !argv[0])
		return sbx_fail(-SBX_EINVAL, "argv: must hold at least the program");
	/* Read (and refuse) the options before the approval hook sees their cwd. */
	if ((r = read_exec_opts(opts, &o)) < 0)
		return r;
	if ((r = sbx_exec_approve(ws, "exec", argv, o.cwd, &rec)) < 0)
		return r;
	r = run_exec(ws, argv, &o, src_fd, out);
	if (r < 0) {
		sbx_audit_str(&rec, "result", "error");
		sbx_audit_str(&rec, "error", sbx_last_error());
	} else {
		sbx_audit_str(&rec, "result", end_of(*out));
		sbx_audit_int(&rec, "exit_code", (*out)->exit_code);
		sbx_audit_int(&rec, "signal", (*out)->term_signal);
		sbx_audit_int(&rec, "stdout_bytes", (int64_t)(*out)->out_bytes);
		sbx_audit_int(&rec, "stderr_bytes", (int64_t)(*out)->err_bytes);
	}
	sbx_audit_end(&rec);
	return r;
}

int sbx_exec(sbx_workspace *ws, const char *const argv[], const sbx_exec_opts *opts,
             sbx_result **out)
{
	return exec_logged(ws, argv, opts, -1, out);
}

int sbx_exec_from_fd(sbx_workspace *ws, const char *const argv[], const sbx_exec_opts *opts,
                     int stdin_fd, sbx_result **out)
{
	if (stdin_fd < 0) {
		if (out)
			*out = NULL;
		return sbx_fail(-SBX_EINVAL, "stdin_fd: %d is not a file descriptor", stdin_fd);
	}
	return exec_logged(ws, argv, opts, stdin_fd, out);
}

int sbx_exec_shell(sbx_workspace *ws, const char *command, const sbx_exec_opts *opts,
                   sbx_result **out)
{
	const char *argv[] = { "/bin/sh", "-c", command, NULL };

	if (!command) {
		if (out)
			*out = NULL;
		return sbx_fail(-SBX_EINVAL, "command is NULL");
	}
	return sbx_exec(ws, argv, opts, out);
}

int sbx_result_exit_code(const sbx_result *res)
{
	return res ? res->exit_code : -1;
}

int sbx_result_signal(const sbx_result *res)
{
	return res ? res->term_signal : 0;
}

int sbx_result_timed_out(const sbx_result *res)
{
	return res ? res->timed_out : 0;
}

int sbx_result_truncated(const sbx_result *res)
{
	return res ? res->truncated : 0;
}

uint64_t sbx_result_dropped(const sbx_result *res, int stream)
{
	if (!res || (stream != SBX_STDOUT && stream != SBX_STDERR))
		return 0;
	return res->dropped[stream == SBX_STDERR];
}

static const char *stream_data(const sbx_buf *b, size_t *len)
{
	if (len)
		*len = b->len;
	return b->data ? b->data : "";
}

const char *sbx_result_stdout(const sbx_result *res, size_t *len)
{
	static const sbx_buf empty;

	return stream_data(res ? &res->out : &empty, len);
}

const char *sbx_result_stderr(const sbx_result *res, size_t *len)
{
	static const sbx_buf empty;

	return stream_data(res ? &res->err : &empty, len);
}

int64_t sbx_result_duration_ms(const sbx_result *res)
{
	return res ? res->duration_ms : 0;
}

void sbx_result_free(sbx_result *res)
{
	if (!res)
		return;
	sbx_buf_free(&res->out);
	sbx_buf_free(&res->err);
	free(res);
}
