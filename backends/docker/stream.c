/* stdio "stream": the command's stdin and output through the exec's hijacked connection
 * (Upgrade: tcp). stdout and stderr come as frames with an 8-byte header [type, 0, 0, 0,
 * big-endian size]; one pump thread per command demultiplexes them into the core's pipes,
 * forwards stdin (half-closing the connection at its end, which the engine passes on as the
 * command's end-of-file), reads the runner's report from its control channel and signals the
 * end on an eventfd, the wait fd the core polls. The protocol has no end-of-stream per
 * stream, so the core sees end-of-file only when the whole exec ends. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "exec.h"
#include "proto/run_proto.h"
#include "util/cleanup.h"
#include "util/error.h"

/* After the stream ends the runner's report is already queued; if it is not there by then,
 * the engine dropped the stream while the command ran. */
#define REPORT_GRACE_MS 3000
#define STDIN_CHUNK 65536

static int start_exec(struct docker_ws *ws, const char *exec_id, int *stream, sbx_buf *early)
{
	sbx_buf path = { 0 }, body = { 0 };
	int r;

	sbx_buf_printf(&path, "/exec/%s/start", exec_id);
	sbx_buf_puts(&body, "{\"Detach\":false,\"Tty\":false}");
	r = path.oom || body.oom ? sbx_fail(-SBX_ENOMEM, "docker: out of memory")
	                         : docker_call_upgrade(&ws->engine, path.data, &body,
	                                               "start the exec", stream, early);
	sbx_buf_free(&path);
	sbx_buf_free(&body);
	return r;
}

static int exec_exit_code(struct docker_ws *ws, const char *exec_id)
{
	bool running;
	int code;

	docker_exec_state(ws, exec_id, &running, &code);
	return code;
}

/* Writes all of data to fd (a pipe the core reads); a reader that went away (EPIPE) simply
 * gets no more, and the stream is still read to its end. */
static void deliver(int *fd, const char *data, size_t len)
{
	while (*fd >= 0 && len) {
		ssize_t n = write(*fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(*fd);
			*fd = -1;
			return;
		}
		data += n;
		len -= (size_t)n;
	}
}

/* A frame's payload: stdout's to the core's stdout pipe, the rest (stderr, the engine's own
 * errors) to its stderr pipe. */
static void deliver_frame(void *arg, int type, const char *data, size_t len)
{
	struct docker_proc *p = arg;

	deliver(type == 1 ? &p->out_fd : &p->err_fd, data, len);
}

/* Every frame's payload, whatever its type, for a message. */
static void collect_frame(void *arg, int type, const char *data, size_t len)
{
	(void)type;
	sbx_buf_append(arg, data, len);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void read_stream(struct docker_proc *p)
{
	char chunk[65536];
	ssize_t n = recv(p->stream, chunk, sizeof chunk, MSG_DONTWAIT);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		p->stream_done = true;
		/* End of file for the core, now that every byte the command wrote is through. */
		close_fd(&p->out_fd);
		close_fd(&p->err_fd);
		close_fd(&p->in_fd);
		return;
	}
	docker_frames_feed(&p->frames, chunk, (size_t)n, deliver_frame, p);
}

static void read_stdin(struct docker_proc *p)
{
	ssize_t n = read(p->in_fd, p->in_buf, STDIN_CHUNK);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		close_fd(&p->in_fd);
		p->in_closed = true;
		return;
	}
	p->in_len = (size_t)n;
	p->in_off = 0;
}

static void send_stdin(struct docker_proc *p)
{
	ssize_t n = send(p->stream, p->in_buf + p->in_off, p->in_len - p->in_off,
	                 MSG_DONTWAIT | MSG_NOSIGNAL);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n < 0) {
		/* The command stopped reading: it does not get the rest. */
		p->in_len = p->in_off = 0;
		close_fd(&p->in_fd);
		p->in_closed = true;
		return;
	}
	p->in_off += (size_t)n;
	if (p->in_off == p->in_len)
		p->in_len = p->in_off = 0;
}

static void read_report(struct docker_proc *p)
{
	struct sbx_run_report rep;
	ssize_t n = recv(p->ctrl, &rep, sizeof rep, MSG_DONTWAIT);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	p->report_done = true;
	if (n == (ssize_t)sizeof rep && rep.kind == SBX_RUN_EXITED) {
		p->exit_code = rep.exit_code;
		p->term_signal = rep.term_signal;
		return;
	}
	/* The runner went away without a report: only a kill of ours explains that. */
	if (p->kill_sent) {
		p->exit_code = -1;
		p->term_signal = SIGKILL;
		return;
	}
	p->error = -SBX_EPROTO;
	snprintf(p->message, sizeof p->message, "docker: the command's runner in container %s "
	         "ended without a report (was the container stopped?)", p->container);
}

static void give_up(struct docker_proc *p, const char *why)
{
	p->report_done = p->stream_done = true;
	if (!p->error) {
		p->error = -SBX_EIO;
		snprintf(p->message, sizeof p->message, "docker: %s", why);
	}
	send(p->ctrl, &(struct sbx_run_request){ SBX_RUN_KILL, SIGKILL },
	     sizeof(struct sbx_run_request), MSG_NOSIGNAL | MSG_DONTWAIT);
	p->kill_sent = true;
}

/* One poll round. Returns false when the outcome is known and every byte went through. */
static bool pump_step(struct docker_proc *p, long long *stream_end, long long *release_end)
{
	struct pollfd f[4];
	int n = 0, s = -1, in = -1, c = -1, w, timeout = -1;

	if (p->stream_done && p->report_done)
		return false;
	if (!p->stream_done) {
		f[s = n++] = (struct pollfd){ .fd = p->stream,
		                              .events = POLLIN | (p->in_len ? POLLOUT : 0) };
		if (!p->in_len && p->in_fd >= 0)
			f[in = n++] = (struct pollfd){ .fd = p->in_fd, .events = POLLIN };
	}
	if (!p->report_done)
		f[c = n++] = (struct pollfd){ .fd = p->ctrl, .events = POLLIN };
	f[w = n++] = (struct pollfd){ .fd = p->wake_fd, .events = POLLIN };
	if (p->stream_done && *stream_end < 0)
		*stream_end = sbx_now_ms() + REPORT_GRACE_MS;
	if (*stream_end >= 0)
		timeout = (int)(*stream_end - sbx_now_ms());
	if (*release_end >= 0 && (timeout < 0 || *release_end - sbx_now_ms() < timeout))
		timeout = (int)(*release_end - sbx_now_ms());
	if (timeout < -1 || (timeout == 0 && (*stream_end >= 0 || *release_end >= 0)))
		timeout = 0;
	if (poll(f, (nfds_t)n, timeout) < 0 && errno != EINTR)
		return give_up(p, "poll failed"), false;
	if (*stream_end >= 0 && !p->report_done && sbx_now_ms() >= *stream_end) {
		give_up(p, "the engine closed the exec stream while the command was running "
		           "(did the engine stop or restart?)");
		return false;
	}
	if (*release_end >= 0 && sbx_now_ms() >= *release_end) {
		give_up(p, "the killed command's exec stream did not end");
		return false;
	}
	if (w >= 0 && f[w].revents) {
		uint64_t v;

		if (read(p->wake_fd, &v, sizeof v) == sizeof v && p->releasing && *release_end < 0)
			*release_end = sbx_now_ms() + RELEASE_TIMEOUT_MS;
	}
	if (s >= 0 && (f[s].revents & POLLOUT))
		send_stdin(p);
	if (in >= 0 && f[in].revents)
		read_stdin(p);
	/* All of stdin is through: the engine closes the command's stdin on our half-close. */
	if (p->in_closed && !p->in_len && !p->stream_done) {
		shutdown(p->stream, SHUT_WR);
		p->in_closed = false;
	}
	if (s >= 0 && (f[s].revents & (POLLIN | POLLHUP | POLLERR)))
		read_stream(p);
	if (c >= 0 && f[c].revents)
		read_report(p);
	return true;
}

static void *pump_main(void *arg)
{
	struct docker_proc *p = arg;
	long long stream_end = -1, release_end = -1;
	sigset_t pipe_only;
	uint64_t one = 1;

	/* Writing to a pipe the core closed must fail with EPIPE here, not signal the host. */
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_only, NULL);
	while (pump_step(p, &stream_end, &release_end))
		;
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
	close_fd(&p->in_fd);
	p->ended = true;
	if (write(p->done_fd, &one, sizeof one) < 0)
		p->error = p->error ? p->error : -SBX_EIO;
	return NULL;
}

static void free_proc(struct docker_proc *p)
{
	close_fd(&p->stream);
	close_fd(&p->ctrl);
	close_fd(&p->in_fd);
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
	close_fd(&p->done_fd);
	close_fd(&p->wake_fd);
	free(p->in_buf);
	free(p);
}

static struct docker_proc *new_proc(struct docker_ws *ws, const sbx_backend_spawn *req)
{
	struct docker_proc *p = calloc(1, sizeof *p);

	if (!p)
		return NULL;
	*p = (struct docker_proc){ .ws = ws, .stream = -1, .ctrl = -1, .in_fd = -1, .out_fd = -1,
	                           .err_fd = -1, .done_fd = -1, .wake_fd = -1 };
	snprintf(p->container, sizeof p->container, "%.12s", ws->container);
	p->in_buf = malloc(STDIN_CHUNK);
	p->done_fd = eventfd(0, EFD_CLOEXEC);
	p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p->in_fd = req->stdin_fd >= 0 ? fcntl(req->stdin_fd, F_DUPFD_CLOEXEC, 3) : -1;
	p->out_fd = fcntl(req->stdout_fd, F_DUPFD_CLOEXEC, 3);
	p->err_fd = fcntl(req->stderr_fd, F_DUPFD_CLOEXEC, 3);
	if (!p->in_buf || p->done_fd < 0 || p->wake_fd < 0 || p->out_fd < 0 || p->err_fd < 0 ||
	    (req->stdin_fd >= 0 && p->in_fd < 0)) {
		free_proc(p);
		return NULL;
	}
	if (p->in_fd < 0)
		p->in_closed = true;
	return p;
}

/* The runner never connected: say what the stream and the engine know about why. */
static int runner_failed(struct docker_ws *ws, const char *exec_id, int stream, sbx_buf *early,
                         int why)
{
	struct docker_frames frames = { 0 };
	sbx_buf text = { 0 };
	long long until = sbx_now_ms() + 2000;
	char chunk[4096];
	int code, r;

	docker_frames_feed(&frames, early->data ? early->data : "", early->len, collect_frame,
	                   &text);
	while (text.len < 2048 && sbx_now_ms() < until) {
		struct pollfd f = { .fd = stream, .events = POLLIN };
		ssize_t n;

		if (poll(&f, 1, (int)(until - sbx_now_ms())) <= 0)
			break;
		if ((n = recv(stream, chunk, sizeof chunk, 0)) <= 0)
			break;
		docker_frames_feed(&frames, chunk, (size_t)n, collect_frame, &text);
	}
	while (text.len && (text.data[text.len - 1] == '\n' || text.data[text.len - 1] == '\r'))
		text.data[--text.len] = '\0';
	code = exec_exit_code(ws, exec_id);
	r = sbx_fail(-SBX_EBACKEND, "docker: the command's runner did not start in container "
	             "%.12s (%s%s%d)%s%s", ws->container,
	             why == -SBX_ETIMEDOUT ? "no connection in 30 s" : "the exec stream ended",
	             code >= 0 ? ", exit code " : "", code >= 0 ? code : 0, text.len ? ": " : "",
	             text.len ? text.data : "");
	sbx_buf_free(&text);
	return r;
}

static int connect_runner(struct docker_ws *ws, const sbx_backend_spawn *req, int lfd,
                          const char *sock, int *stream, int *ctrl)
{
	_cleanup_free_ char *exec_id = NULL;
	sbx_buf early = { 0 };
	int r;

	if ((r = docker_exec_create(ws, req, sock, false, &exec_id)) < 0)
		return r;
	if ((r = start_exec(ws, exec_id, stream, &early)) < 0) {
		sbx_buf_free(&early);
		return r;
	}
	/* Bytes with the head come from something other than our command (which starts only
	 * after the runner connects): an error, most likely; give the runner a moment anyway. */
	r = docker_control_accept(lfd, early.len ? -1 : *stream,
	                          early.len ? 2000 : CONNECT_TIMEOUT_MS, ctrl);
	if (r < 0) {
		r = runner_failed(ws, exec_id, *stream, &early, r);
		close_fd(stream);
	}
	sbx_buf_free(&early);
	return r;
}

/* stdio "stream": everything through the exec's hijacked connection and the pump thread. */
int docker_stream_spawn(struct docker_ws *ws, const sbx_backend_spawn *req, int lfd,
                        const char *sock, struct docker_proc **out)
{
	struct docker_proc *p;
	int r;

	if (!(p = new_proc(ws, req)))
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory or file descriptors");
	if ((r = connect_runner(ws, req, lfd, sock, &p->stream, &p->ctrl)) < 0) {
		free_proc(p);
		return r;
	}
	if ((r = pthread_create(&p->pump, NULL, pump_main, p)) != 0) {
		free_proc(p);
		return sbx_fail(-SBX_ENOMEM, "docker: cannot start a thread: %s", strerror(r));
	}
	p->pump_started = true;
	*out = p;
	return 0;
}

int docker_stream_request(struct docker_proc *p, uint32_t op, int sig)
{
	struct sbx_run_request req = { op, sig };

	if (op == SBX_RUN_KILL)
		p->kill_sent = true;
	if (docker_stream_wait(p, 0) == 0)
		return 0; /* over: nothing left to signal */
	if (send(p->ctrl, &req, sizeof req, MSG_NOSIGNAL) != (ssize_t)sizeof req)
		return sbx_fail(-SBX_EIO, "docker: the command's runner is gone: %s", strerror(errno));
	return 0;
}

int docker_stream_wait(const struct docker_proc *p, int timeout_ms)
{
	struct pollfd f = { .fd = p->done_fd, .events = POLLIN };
	int n;

	do
		n = poll(&f, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	return n > 0 ? 0 : -SBX_ETIMEDOUT;
}

int docker_stream_outcome(struct docker_proc *p, int timeout_ms, int *exit_code,
                          int *term_signal)
{
	if (docker_stream_wait(p, timeout_ms) < 0)
		return -SBX_ETIMEDOUT;
	if (p->error)
		return sbx_fail(p->error, "%s", p->message);
	*exit_code = p->exit_code;
	*term_signal = p->term_signal;
	return 0;
}

void docker_stream_release(struct docker_proc *p)
{
	uint64_t one = 1;

	if (docker_stream_wait(p, 0) < 0)
		docker_stream_request(p, SBX_RUN_KILL, SIGKILL);
	p->releasing = true;
	if (write(p->wake_fd, &one, sizeof one) < 0)
		p->releasing = true; /* the pump still ends: the kill closes the stream */
	if (p->pump_started)
		pthread_join(p->pump, NULL);
	free_proc(p);
}
