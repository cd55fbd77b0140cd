/* How a command starts, and the process ops. Every command runs under agentsbx-run, which
 * makes it a session of its own, kills whatever it leaves behind, reports its exit and takes
 * signal and kill requests over a control channel, so a timeout ends the whole process tree
 * inside the container. Three ways to start it:
 *  - exec "server": the exec server in the container (the ns backend's init) starts it;
 *  - exec "api", stdio "direct": a detached engine exec starts the runner, which connects to
 *    a control socket of ours (control.c) and receives the core's pipes over it;
 *  - exec "api", stdio "stream": the same with stdio through the exec's hijacked connection
 *    (stream.c). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "exec.h"
#include "proto/run_proto.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fdpass.h"
#include "backends/common/runclient.h"
#include "backends/sandbox/sandbox.h"

#define RUNNER_EXIT_MS 2000

/* ---- the exec request --------------------------------------------------------------------- */

static void json_str(sbx_buf *b, const char *s)
{
	sbx_buf_json_string(b, s, strlen(s));
}

bool docker_wants_pty(const sbx_backend_spawn *req)
{
	return SBX_BACKEND_SPAWN_HAS(req, pty_fd) && req->pty && req->pty_fd;
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
	if (docker_wants_pty(req)) {
		sbx_pty_text size;

		sbx_runclient_pty_text(req->rows, req->cols, size);
		sbx_buf_printf(b, ",\"--pty\",\"%s\"", size);
	}
	sbx_buf_puts(b, ",\"--\"");
	for (const char *const *a = req->argv; *a; a++) {
		sbx_buf_puts(b, ",");
		json_str(b, *a);
	}
	sbx_buf_puts(b, "]");
}

int docker_exec_create(struct docker_ws *ws, const sbx_backend_spawn *req, const char *sock,
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

/* What the engine knows of an exec: whether it runs, and its exit code (-1 unknown). */
void docker_exec_state(struct docker_ws *ws, const char *exec_id, bool *running, int *exit_code)
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
	int code, sig;

	if (p->rc)
		return sbx_runclient_wait(p->rc, timeout_ms, &code, &sig) == -SBX_ETIMEDOUT
		       ? -SBX_ETIMEDOUT : 0;
	return docker_stream_wait(p, timeout_ms);
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
	long long deadline = sbx_now_ms() + CONNECT_TIMEOUT_MS;
	bool running = true;
	int code = -1, r;

	while (sbx_now_ms() < deadline) {
		r = docker_control_accept(lfd, -1, 250, ctrl);
		if (r != -SBX_ETIMEDOUT)
			return r < 0 ? sbx_fail(r, "docker: accepting the runner: %s", strerror(-r)) : 0;
		docker_exec_state(ws, exec_id, &running, &code);
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

	if ((r = docker_exec_create(ws, req, sock, true, &exec_id)) < 0 ||
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
	if (docker_wants_pty(req) &&
	    (r = sbx_runclient_take_pty(p->rc, SBX_RUNCLIENT_PTY_TIMEOUT_MS, req->pty_fd)) < 0) {
		sbx_runclient_release(p->rc);
		free(p);
		return r;
	}
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

	/* The exec stream carries bytes, not the terminal's master. */
	if (ws->opts.stream && docker_wants_pty(req))
		return sbx_fail(-SBX_ENOSYS, "docker: pty: not with docker.stdio \"stream\" (use "
		                "\"direct\", or exec \"server\")");
	if ((r = docker_control_listen(ws->control_dir, &lfd, &sock)) < 0)
		return r;
	if (asprintf(&sock_path, "%s/%s", ws->control_dir, sock) < 0) {
		sock_path = NULL;
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	}
	r = ws->opts.stream ? docker_stream_spawn(ws, req, lfd, sock, p)
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

	for (long long until = sbx_now_ms() + RUNNER_EXIT_MS; sbx_now_ms() < until;) {
		if (poll(&f, 1, (int)(until - sbx_now_ms())) < 0 && errno != EINTR)
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
	return docker_stream_outcome(p, timeout_ms, exit_code, term_signal);
}

int docker_proc_signal(void *proc, int sig)
{
	struct docker_proc *p = proc;

	if (p->rc)
		return sbx_runclient_signal(p->rc, sig);
	return docker_stream_request(p, SBX_RUN_SIGNAL, sig);
}

int docker_proc_kill(void *proc)
{
	struct docker_proc *p = proc;

	if (p->rc)
		return sbx_runclient_kill(p->rc);
	return docker_stream_request(p, SBX_RUN_KILL, SIGKILL);
}

void docker_proc_release(void *proc)
{
	struct docker_proc *p = proc;

	if (!p)
		return;
	untrack(p);
	if (p->rc) {
		sbx_runclient_release(p->rc);
		free(p);
		return;
	}
	docker_stream_release(p);
}
