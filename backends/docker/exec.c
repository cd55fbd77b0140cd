/* Commands through the Engine's exec API. Each command runs under agentsbx-run (bound into
 * the container), which makes it a session of its own, kills whatever it leaves behind,
 * reports its exit and takes signal and kill requests over a control socket (control.c), so
 * a timeout ends the whole process tree inside the container. The exec's hijacked stream
 * carries stdin one way and multiplexed stdout/stderr frames the other; one pump thread per
 * command moves both and signals the end on an eventfd, the wait fd the core polls. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "docker.h"
#include "run_proto.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fdpass.h"
#include "util/http.h"
#include "util/runclient.h"
#include "util/sandbox.h"

#define CONNECT_TIMEOUT_MS 30000
/* After the stream ends the runner's report is already queued; if it is not there by then,
 * the engine dropped the stream while the command ran. */
#define REPORT_GRACE_MS 3000
/* How long a release waits for a killed command's stream to end before giving up on it. */
#define RELEASE_TIMEOUT_MS 15000
#define STDIN_CHUNK 65536
#define RUNNER_EXIT_MS 2000
#define FRAME_HEADER 8

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
	char header[FRAME_HEADER];
	size_t header_len, payload_left;
	int payload_fd;
	char *in_buf;
	size_t in_len, in_off;
	bool stream_done, report_done, in_closed;
};

/* ---- the exec request --------------------------------------------------------------------- */

static void json_str(sbx_buf *b, const char *s)
{
	sbx_buf_json_string(b, s, strlen(s));
}

static void add_runner_argv(sbx_buf *b, const char *sock, const sbx_backend_spawn *req,
                            bool direct)
{
	sbx_rlimit_text limits[SBX_RUNCLIENT_MAX_RLIMITS];
	size_t n = req->limits ? sbx_runclient_rlimits(req->limits, limits) : 0;

	sbx_buf_puts(b, "\"Cmd\":[\"" DOCKER_RUNNER "\",\"--control-socket\",");
	sbx_buf_printf(b, "\"%s/%s\",\"--proto\",\"1\",\"--env-only\"", DOCKER_CONTROL_DIR, sock);
	if (direct)
		sbx_buf_puts(b, ",\"--stdio-from-control\"");
	for (const char *const *e = req->envp; e && *e; e++) {
		sbx_buf_puts(b, ",\"--env-keep\",");
		sbx_buf_json_string(b, *e, strcspn(*e, "="));
	}
	for (size_t i = 0; i < n; i++) {
		sbx_buf_puts(b, ",\"--rlimit\",");
		json_str(b, limits[i]);
	}
	sbx_buf_puts(b, ",\"--\"");
	for (const char *const *a = req->argv; *a; a++) {
		sbx_buf_puts(b, ",");
		json_str(b, *a);
	}
	sbx_buf_puts(b, "]");
}

static int create_exec(struct docker_ws *ws, const sbx_backend_spawn *req, const char *sock,
                       bool direct, char **exec_id)
{
	sbx_buf body = { 0 }, path = { 0 };
	sbx_json *answer = NULL;
	const sbx_json *id;
	long status;
	int r;

	sbx_buf_printf(&body, "{\"AttachStdin\":%s,\"AttachStdout\":%s,\"AttachStderr\":%s,"
	               "\"Tty\":false,\"User\":", direct ? "false" : "true",
	               direct ? "false" : "true", direct ? "false" : "true");
	json_str(&body, ws->user);
	sbx_buf_puts(&body, ",\"WorkingDir\":");
	json_str(&body, req->cwd && *req->cwd ? req->cwd : DOCKER_WORKSPACE);
	sbx_buf_puts(&body, ",");
	add_runner_argv(&body, sock, req, direct);
	/* The values travel here; the runner keeps exactly these names (add_runner_argv). */
	sbx_buf_puts(&body, ",\"Env\":[");
	for (const char *const *e = req->envp; e && *e; e++) {
		sbx_buf_puts(&body, e == req->envp ? "" : ",");
		json_str(&body, *e);
	}
	sbx_buf_puts(&body, "]}");
	sbx_buf_printf(&path, "/containers/%s/exec", ws->container);
	r = body.oom || path.oom ? sbx_fail(-SBX_ENOMEM, "docker: out of memory")
	                         : docker_call(&ws->engine, "POST", path.data, &body,
	                                       "create an exec", &status, &answer);
	sbx_buf_free(&body);
	sbx_buf_free(&path);
	if (r < 0)
		return r;
	id = sbx_json_get(answer, "Id");
	*exec_id = id && id->type == SBX_JSON_STRING ? strdup(id->str) : NULL;
	sbx_json_free(answer);
	return *exec_id ? 0 : sbx_fail(-SBX_EPROTO, "docker: the engine made an exec without an Id");
}

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

/* What the engine knows of an exec: whether it runs, and its exit code (-1 unknown). */
static void exec_state(struct docker_ws *ws, const char *exec_id, bool *running, int *exit_code)
{
	sbx_buf path = { 0 };
	sbx_json *answer = NULL;
	const sbx_json *v;
	long status;

	*running = true;
	*exit_code = -1;
	sbx_buf_printf(&path, "/exec/%s/json", exec_id);
	if (!path.oom && docker_call(&ws->engine, "GET", path.data, NULL, "inspect the exec",
	                             &status, &answer) == 0) {
		if ((v = sbx_json_get(answer, "Running")) && v->type == SBX_JSON_BOOL)
			*running = v->b;
		if ((v = sbx_json_get(answer, "ExitCode")) && v->type == SBX_JSON_INT)
			*exit_code = (int)v->i;
	}
	sbx_json_free(answer);
	sbx_buf_free(&path);
}

static int exec_exit_code(struct docker_ws *ws, const char *exec_id)
{
	bool running;
	int code;

	exec_state(ws, exec_id, &running, &code);
	return code;
}

/* ---- demultiplexing ------------------------------------------------------------------------ */

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

/* Frames of the multiplexed stream: a header [type, 0, 0, 0, size (big-endian u32)], then
 * size bytes for stdout (1) or stderr (2). */
static void demux(struct docker_proc *p, const char *data, size_t len, sbx_buf *sink)
{
	while (len) {
		if (p->payload_left == 0) {
			size_t take = FRAME_HEADER - p->header_len;

			take = take < len ? take : len;
			memcpy(p->header + p->header_len, data, take);
			p->header_len += take;
			data += take;
			len -= take;
			if (p->header_len < FRAME_HEADER)
				return;
			p->header_len = 0;
			p->payload_left = (size_t)(unsigned char)p->header[4] << 24 |
			                  (size_t)(unsigned char)p->header[5] << 16 |
			                  (size_t)(unsigned char)p->header[6] << 8 |
			                  (size_t)(unsigned char)p->header[7];
			p->payload_fd = p->header[0] == 1 ? 1 : 2;
			continue;
		}
		size_t take = p->payload_left < len ? p->payload_left : len;

		if (sink)
			sbx_buf_append(sink, data, take);
		else
			deliver(p->payload_fd == 1 ? &p->out_fd : &p->err_fd, data, take);
		p->payload_left -= take;
		data += take;
		len -= take;
	}
}

/* ---- the pump thread ---------------------------------------------------------------------- */

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
	demux(p, chunk, (size_t)n, NULL);
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

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
		*stream_end = now_ms() + REPORT_GRACE_MS;
	if (*stream_end >= 0)
		timeout = (int)(*stream_end - now_ms());
	if (*release_end >= 0 && (timeout < 0 || *release_end - now_ms() < timeout))
		timeout = (int)(*release_end - now_ms());
	if (timeout < -1 || (timeout == 0 && (*stream_end >= 0 || *release_end >= 0)))
		timeout = 0;
	if (poll(f, (nfds_t)n, timeout) < 0 && errno != EINTR)
		return give_up(p, "poll failed"), false;
	if (*stream_end >= 0 && !p->report_done && now_ms() >= *stream_end) {
		give_up(p, "the engine closed the exec stream while the command was running "
		           "(did the engine stop or restart?)");
		return false;
	}
	if (*release_end >= 0 && now_ms() >= *release_end) {
		give_up(p, "the killed command's exec stream did not end");
		return false;
	}
	if (w >= 0 && f[w].revents) {
		uint64_t v;

		if (read(p->wake_fd, &v, sizeof v) == sizeof v && p->releasing && *release_end < 0)
			*release_end = now_ms() + RELEASE_TIMEOUT_MS;
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

/* ---- the live list ----------------------------------------------------------------------- */

static void track(struct docker_ws *ws, struct docker_proc *p)
{
	pthread_mutex_lock(&ws->lock);
	p->next = ws->live;
	if (ws->live)
		ws->live->prev = p;
	ws->live = p;
	pthread_mutex_unlock(&ws->lock);
}

static void untrack(struct docker_proc *p)
{
	struct docker_ws *ws = p->ws;

	if (!ws)
		return;
	pthread_mutex_lock(&ws->lock);
	if (p->prev)
		p->prev->next = p->next;
	else if (ws->live == p)
		ws->live = p->next;
	if (p->next)
		p->next->prev = p->prev;
	p->prev = p->next = NULL;
	pthread_mutex_unlock(&ws->lock);
}

static int wait_done(const struct docker_proc *p, int timeout_ms)
{
	struct pollfd f = { .fd = p->done_fd, .events = POLLIN };
	int n, code, sig;

	if (p->rc)
		return sbx_runclient_wait(p->rc, timeout_ms, &code, &sig) == -SBX_ETIMEDOUT
		       ? -SBX_ETIMEDOUT : 0;

	do
		n = poll(&f, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	return n > 0 ? 0 : -SBX_ETIMEDOUT;
}

void docker_kill_all(struct docker_ws *ws, bool forget)
{
	struct docker_proc *next;

	pthread_mutex_lock(&ws->lock);
	for (struct docker_proc *p = ws->live; p; p = p->next)
		docker_proc_kill(p);
	for (struct docker_proc *p = ws->live; p; p = next) {
		next = p->next;
		wait_done(p, RELEASE_TIMEOUT_MS);
		/* The core releases its processes later, maybe after the workspace is gone. */
		if (forget) {
			p->ws = NULL;
			p->prev = p->next = NULL;
		}
	}
	if (forget)
		ws->live = NULL;
	pthread_mutex_unlock(&ws->lock);
}

/* ---- spawn ------------------------------------------------------------------------------- */

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
	struct docker_proc scratch = { .payload_fd = 2 };
	sbx_buf text = { 0 };
	long long until = now_ms() + 2000;
	char chunk[4096];
	int code, r;

	demux(&scratch, early->data ? early->data : "", early->len, &text);
	while (text.len < 2048 && now_ms() < until) {
		struct pollfd f = { .fd = stream, .events = POLLIN };
		ssize_t n;

		if (poll(&f, 1, (int)(until - now_ms())) <= 0)
			break;
		if ((n = recv(stream, chunk, sizeof chunk, 0)) <= 0)
			break;
		demux(&scratch, chunk, (size_t)n, &text);
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

	if ((r = create_exec(ws, req, sock, false, &exec_id)) < 0)
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

/* stdio "direct": the engine only starts the runner (detached exec); the command's stdio are
 * the core's own pipes, passed over the control socket, so end-of-file, broken pipes and the
 * order of merged output are exactly what the command does. */
static int start_exec_detached(struct docker_ws *ws, const char *exec_id)
{
	sbx_buf path = { 0 }, body = { 0 };
	long status;
	int r;

	sbx_buf_printf(&path, "/exec/%s/start", exec_id);
	sbx_buf_puts(&body, "{\"Detach\":true,\"Tty\":false}");
	r = path.oom || body.oom ? sbx_fail(-SBX_ENOMEM, "docker: out of memory")
	                         : docker_call(&ws->engine, "POST", path.data, &body,
	                                       "start the exec", &status, NULL);
	sbx_buf_free(&path);
	sbx_buf_free(&body);
	return r;
}

/* Waits for the runner's connection, asking the engine now and then whether the exec still
 * runs: a runner that failed before connecting ends its exec. */
static int accept_direct_runner(struct docker_ws *ws, const char *exec_id, int lfd, int *ctrl)
{
	long long deadline = now_ms() + CONNECT_TIMEOUT_MS;
	bool running = true;
	int code = -1, r;

	while (now_ms() < deadline) {
		r = docker_control_accept(lfd, -1, 250, ctrl);
		if (r != -SBX_ETIMEDOUT)
			return r < 0 ? sbx_fail(r, "docker: accepting the runner: %s", strerror(-r)) : 0;
		exec_state(ws, exec_id, &running, &code);
		if (!running)
			break;
	}
	return sbx_fail(-SBX_EBACKEND, "docker: the command's runner did not start in container "
	                "%.12s (%s, exit code %d)", ws->container,
	                running ? "no connection in 30 s" : "the exec ended", code);
}

static int send_stdio(const sbx_backend_spawn *req, int ctrl)
{
	_cleanup_close_ int null_fd = -1;
	int fds[3] = { req->stdin_fd, req->stdout_fd, req->stderr_fd }, r;

	if (fds[0] < 0) {
		if ((null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
			return sbx_fail(-SBX_EIO, "docker: /dev/null: %s", strerror(errno));
		fds[0] = null_fd;
	}
	if ((r = sbx_send_with_fds(ctrl, "s", 1, fds, 3)) < 0)
		return sbx_fail(-SBX_EIO, "docker: handing the stdio to the runner: %s", strerror(-r));
	return 0;
}

static int spawn_direct(struct docker_ws *ws, const sbx_backend_spawn *req, int lfd,
                        const char *sock, struct docker_proc **out)
{
	_cleanup_free_ char *exec_id = NULL;
	_cleanup_close_ int ctrl = -1;
	struct docker_proc *p;
	int r;

	if ((r = create_exec(ws, req, sock, true, &exec_id)) < 0 ||
	    (r = start_exec_detached(ws, exec_id)) < 0 ||
	    (r = accept_direct_runner(ws, exec_id, lfd, &ctrl)) < 0 ||
	    (r = send_stdio(req, ctrl)) < 0)
		return r;
	if (!(p = calloc(1, sizeof *p)))
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	p->ws = ws;
	snprintf(p->container, sizeof p->container, "%.12s", ws->container);
	if (!(p->rc = sbx_runclient_new(0, ctrl, DOCKER_WHO))) {
		free(p);
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	}
	ctrl = -1; /* the client owns it now */
	*out = p;
	return 0;
}

/* stdio "stream": everything through the exec's hijacked connection and the pump thread. */
static int spawn_stream(struct docker_ws *ws, const sbx_backend_spawn *req, int lfd,
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

/* exec "server": the resident exec server in the container starts the command, as the ns
 * backend's init does; no engine round trip at all. */
static int spawn_server(struct docker_ws *ws, const sbx_backend_spawn *req,
                        struct docker_proc **out)
{
	const sbx_backend_limits *limits = req->limits ? req->limits : &ws->limits;
	struct docker_proc *p = calloc(1, sizeof *p);
	void *rc = NULL;
	int wait_fd, r;

	if (!p)
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	r = sbx_init_channel_spawn(ws->keepalive, DOCKER_WHO, req, limits, NULL, &rc, &wait_fd);
	if (r < 0) {
		free(p);
		return r;
	}
	p->ws = ws;
	p->rc = rc;
	/* The server reaps its runners itself: nothing of ours to wait for past the report. */
	p->runner_gone = true;
	snprintf(p->container, sizeof p->container, "%.12s", ws->container);
	*out = p;
	return 0;
}

/* exec "api": one engine exec per command, the runner reached through a control socket. */
static int spawn_through_api(struct docker_ws *ws, const sbx_backend_spawn *req,
                             struct docker_proc **p)
{
	_cleanup_close_ int lfd = -1;
	_cleanup_free_ char *sock = NULL, *sock_path = NULL;
	int r;

	if ((r = docker_control_listen(ws->control_dir, &lfd, &sock)) < 0)
		return r;
	if (asprintf(&sock_path, "%s/%s", ws->control_dir, sock) < 0) {
		sock_path = NULL;
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	}
	r = ws->opts.stream ? spawn_stream(ws, req, lfd, sock, p)
	                    : spawn_direct(ws, req, lfd, sock, p);
	unlink(sock_path);
	return r;
}

int docker_spawn(void *state, const sbx_backend_spawn *req, void **proc, int *wait_fd)
{
	struct docker_ws *ws = state;
	struct docker_proc *p = NULL;
	int r;

	*proc = NULL;
	*wait_fd = -1;
	r = ws->server ? spawn_server(ws, req, &p) : spawn_through_api(ws, req, &p);
	if (r < 0 || !p)
		return r < 0 ? r : sbx_fail(-SBX_EIO, "docker: no process");
	track(ws, p);
	*proc = p;
	*wait_fd = p->rc ? p->rc->ctrl : p->done_fd;
	return 0;
}

/* ---- the process ops --------------------------------------------------------------------- */

/* The runner reports before it exits; the control channel closes when it has. A command
 * counts as over once nothing of it runs, the runner included (its command line holds the
 * command's), so wait a moment for that. */
static void wait_runner_exit(struct docker_proc *p)
{
	struct pollfd f = { .fd = p->rc->ctrl, .events = POLLIN };
	char byte;

	for (long long until = now_ms() + RUNNER_EXIT_MS; now_ms() < until;) {
		if (poll(&f, 1, (int)(until - now_ms())) < 0 && errno != EINTR)
			break;
		if (f.revents & (POLLHUP | POLLERR) ||
		    ((f.revents & POLLIN) && recv(p->rc->ctrl, &byte, 1, MSG_DONTWAIT) <= 0))
			break;
	}
	p->runner_gone = true;
}

int docker_proc_wait(void *proc, int timeout_ms, int *exit_code, int *term_signal)
{
	struct docker_proc *p = proc;

	if (p->rc) {
		int r = sbx_runclient_wait(p->rc, timeout_ms, exit_code, term_signal);

		if (r == 0 && !p->runner_gone)
			wait_runner_exit(p);
		return r;
	}

	if (wait_done(p, timeout_ms) < 0)
		return -SBX_ETIMEDOUT;
	if (p->error)
		return sbx_fail(p->error, "%s", p->message);
	*exit_code = p->exit_code;
	*term_signal = p->term_signal;
	return 0;
}

static int send_request(struct docker_proc *p, uint32_t op, int sig)
{
	struct sbx_run_request req = { op, sig };

	if (wait_done(p, 0) == 0)
		return 0; /* over: nothing left to signal */
	if (send(p->ctrl, &req, sizeof req, MSG_NOSIGNAL) != (ssize_t)sizeof req)
		return sbx_fail(-SBX_EIO, "docker: the command's runner is gone: %s", strerror(errno));
	return 0;
}

int docker_proc_signal(void *proc, int sig)
{
	struct docker_proc *p = proc;

	if (p->rc)
		return sbx_runclient_signal(p->rc, sig);
	return send_request(proc, SBX_RUN_SIGNAL, sig);
}

int docker_proc_kill(void *proc)
{
	struct docker_proc *p = proc;

	if (p->rc)
		return sbx_runclient_kill(p->rc);

	p->kill_sent = true;
	return send_request(p, SBX_RUN_KILL, SIGKILL);
}

void docker_proc_release(void *proc)
{
	struct docker_proc *p = proc;
	uint64_t one = 1;

	if (!p)
		return;
	if (p->rc) {
		sbx_runclient_release(p->rc);
		untrack(p);
		free(p);
		return;
	}
	if (wait_done(p, 0) < 0)
		docker_proc_kill(p);
	p->releasing = true;
	if (write(p->wake_fd, &one, sizeof one) < 0)
		p->releasing = true; /* the pump still ends: the kill closes the stream */
	if (p->pump_started)
		pthread_join(p->pump, NULL);
	untrack(p);
	free_proc(p);
}
