/* The MCP server processes and the JSON-RPC routing between them and the host.
 *
 * A server starts when a host attaches to it (lazily: nothing runs for a workspace that never
 * uses MCP). It stays up between connections. When it exits, every request in flight gets an
 * error response naming the exit and the end of its stderr; the next message restarts it, not
 * sooner than a backoff that doubles with each crash in a row (250 ms .. 30 s) and resets once
 * the server has stayed up for a minute. A restarted server is initialized again with the
 * first initialize's parameters, so the host's session survives the crash. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gateway.h"
#include "proto/mcp_proto.h"
#include "util/cleanup.h"

#define BACKOFF_MIN_MS 250
#define BACKOFF_MAX_MS 30000
#define HEALTHY_MS 60000
#define REPLAY_ID "\"agentsbx-gateway-init\""
#define DIAG_INTERVAL_MS 1000

extern char **environ;
struct gw_server *gw_servers;

struct gw_server *gw_server_get(const char *key, bool create)
{
	struct gw_server *s;

	for (s = gw_servers; s; s = s->next)
		if (strcmp(s->key, key) == 0)
			return s;
	if (!create || !(s = calloc(1, sizeof *s)))
		return NULL;
	if (!(s->key = strdup(key))) {
		free(s);
		return NULL;
	}
	s->in_fd = s->out_fd = s->err_fd = -1;
	s->from_child.max = SBX_MCP_LINE_MAX;
	s->next = gw_servers;
	gw_servers = s;
	return s;
}

static void forget_session(struct gw_server *s)
{
	free(s->init_params);
	free(s->init_result);
	s->init_params = s->init_result = NULL;
}

int gw_server_configure(struct gw_server *s, const char *spec)
{
	char *copy;

	if (s->spec && strcmp(s->spec, spec) == 0)
		return 0;
	if (!(copy = strdup(spec)))
		return -ENOMEM;
	if (s->pid)
		gw_server_stop(s, "its declaration changed");
	forget_session(s);
	s->crashes = 0;
	s->restart_after_ms = 0;
	free(s->spec);
	s->spec = copy;
	return 0;
}

/* ---- starting ---- */

static char **build_env(const sbx_json *env)
{
	size_t n = 0, k = 0;
	char **out;

	while (environ[n])
		n++;
	if (!(out = calloc(n + (env ? env->n : 0) + 1, sizeof *out)))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		bool overridden = false;
		size_t name_len = strcspn(environ[i], "=");

		for (size_t j = 0; env && j < env->n; j++)
			if (strlen(env->keys[j]) == name_len && !strncmp(env->keys[j], environ[i], name_len))
				overridden = true;
		if (!overridden && (out[k] = strdup(environ[i])))
			k++;
	}
	for (size_t j = 0; env && j < env->n; j++)
		if (env->items[j]->type == SBX_JSON_STRING &&
		    asprintf(&out[k], "%s=%s", env->keys[j], env->items[j]->str) >= 0)
			k++;
	out[k] = NULL;
	return out;
}

static char **build_argv(const sbx_json *command, const sbx_json *args)
{
	size_t n = args && args->type == SBX_JSON_ARRAY ? args->n : 0, k = 0;
	char **argv = calloc(n + 2, sizeof *argv);

	if (!argv)
		return NULL;
	argv[k++] = command->str;
	for (size_t i = 0; i < n; i++)
		if (args->items[i]->type == SBX_JSON_STRING)
			argv[k++] = args->items[i]->str;
	return argv;
}

/* In the child: own process group (so a stop takes its children too), die with the gateway,
 * default signals, the pipes on 0-2, then exec. The errno of a failed exec goes back through
 * report_fd (close-on-exec, so a successful exec closes it silently). */
static void exec_child(int in, int out, int err, int report_fd, const char *cwd, char **argv,
                       char **envp)
{
	sigset_t none;
	int e;

	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		goto fail;
	if (cwd && chdir(cwd) < 0)
		goto fail;
	execvpe(argv[0], argv, envp);
fail:
	e = errno;
	if (write(report_fd, &e, sizeof e) < 0) {
		/* nothing more to tell */
	}
	_exit(127);
}

static int make_pipes(int p[3][2])
{
	for (int i = 0; i < 3; i++)
		p[i][0] = p[i][1] = -1;
	for (int i = 0; i < 3; i++)
		if (pipe2(p[i], O_CLOEXEC) < 0)
			return -errno;
	return 0;
}

static void close_pipes(int p[3][2])
{
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 2; j++)
			if (p[i][j] >= 0)
				close(p[i][j]);
}

/* Forks and execs; returns the errno of a failed start, 0 when it runs. */
static int spawn(struct gw_server *s, const sbx_json *spec, char **argv, char **envp)
{
	const sbx_json *cwd = sbx_json_get(spec, "cwd");
	int p[3][2], report[2], e = 0, r;
	pid_t pid;

	if ((r = make_pipes(p)) < 0 || pipe2(report, O_CLOEXEC) < 0) {
		close_pipes(p);
		return r < 0 ? -r : errno;
	}
	if ((pid = fork()) < 0) {
		e = errno;
	} else if (pid == 0) {
		close(report[0]);
		exec_child(p[0][0], p[1][1], p[2][1], report[1],
		           cwd && cwd->type == SBX_JSON_STRING ? cwd->str : NULL, argv, envp);
	}
	close(report[1]);
	if (pid > 0 && read(report[0], &e, sizeof e) == (ssize_t)sizeof e)
		waitpid(pid, NULL, 0);   /* the exec failed: the child exits at once */
	close(report[0]);
	if (pid > 0 && e == 0) {
		s->pid = pid;
		s->in_fd = SBX_TAKE_FD(p[0][1]);
		s->out_fd = SBX_TAKE_FD(p[1][0]);
		s->err_fd = SBX_TAKE_FD(p[2][0]);
		fcntl(s->in_fd, F_SETFL, O_NONBLOCK);
		fcntl(s->out_fd, F_SETFL, O_NONBLOCK);
		fcntl(s->err_fd, F_SETFL, O_NONBLOCK);
	}
	close_pipes(p);
	return e;
}

static void queue_to_child(struct gw_server *s, const char *line, size_t len)
{
	sbx_buf_append(&s->to_child, line, len);
	sbx_buf_append(&s->to_child, "\n", 1);
}

/* A restarted server must be initialized again before the host's next message reaches it. */
static void replay_initialize(struct gw_server *s)
{
	sbx_buf b = { 0 };
	static const char initialized[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";

	sbx_buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":" REPLAY_ID ",\"method\":\"initialize\","
	               "\"params\":%s}", s->init_params);
	queue_to_child(s, b.data, b.len);
	sbx_buf_free(&b);
	queue_to_child(s, initialized, sizeof initialized - 1);
}

int gw_server_ensure(struct gw_server *s, char *err, size_t errlen)
{
	char perr[256];
	sbx_json *spec = NULL;
	const sbx_json *command;
	char **argv = NULL, **envp = NULL;
	int64_t now = sbx_now_ms();
	int e;

	if (s->pid)
		return 0;
	if (now < s->restart_after_ms) {
		snprintf(err, errlen, "%s; restarting it in %lld ms", s->last_exit,
		         (long long)(s->restart_after_ms - now));
		return -EAGAIN;
	}
	if (!s->spec || sbx_json_parse(s->spec, strlen(s->spec), &spec, perr, sizeof perr) < 0 ||
	    !(command = sbx_json_get(spec, "command")) || command->type != SBX_JSON_STRING) {
		snprintf(err, errlen, "no valid command declared");
		sbx_json_free(spec);
		return -EINVAL;
	}
	argv = build_argv(command, sbx_json_get(spec, "args"));
	envp = build_env(sbx_json_get(spec, "env"));
	e = argv && envp ? spawn(s, spec, argv, envp) : ENOMEM;
	for (size_t i = 0; envp && envp[i]; i++)
		free(envp[i]);
	free(envp);
	free(argv);
	if (e) {
		snprintf(err, errlen, "cannot start '%s': %s", command->str, strerror(e));
		sbx_json_free(spec);
		return -e;
	}
	gw_log("started %s (pid %d): %s", s->key, (int)s->pid, command->str);
	sbx_json_free(spec);
	s->started_ms = now;
	s->err_len = 0;
	if (s->init_params)
		replay_initialize(s);
	return 0;
}

/* ---- stopping and crashing ---- */

void gw_send_error(struct gw_conn *c, const char *id, int code, const char *msg)
{
	sbx_buf b = { 0 };

	if (!c)
		return;
	sbx_buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,\"message\":",
	               id ? id : "null", code);
	sbx_buf_json_string(&b, msg, strlen(msg));
	sbx_buf_puts(&b, "}}");
	if (!b.oom)
		gw_conn_send(c, b.data, b.len);
	sbx_buf_free(&b);
}

static void add_pending(struct gw_server *s, const char *id)
{
	char **grown, *copy;

	if (s->n_pending >= GW_PENDING_MAX || !(copy = strdup(id)))
		return;
	if (!(grown = realloc(s->pending, (s->n_pending + 1) * sizeof *grown))) {
		free(copy);
		return;
	}
	s->pending = grown;
	s->pending[s->n_pending++] = copy;
}

static bool take_pending(struct gw_server *s, const char *id)
{
	for (size_t i = 0; i < s->n_pending; i++)
		if (strcmp(s->pending[i], id) == 0) {
			free(s->pending[i]);
			s->pending[i] = s->pending[--s->n_pending];
			return true;
		}
	return false;
}

/* Every request in flight gets an error: the host learns at once instead of timing out. */
static void fail_pending(struct gw_server *s, const char *why)
{
	char msg[sizeof s->last_exit + sizeof s->err_tail + 64];
	size_t tail = s->err_len;

	while (tail && (s->err_tail[tail - 1] == '\n' || s->err_tail[tail - 1] == '\r'))
		tail--;
	snprintf(msg, sizeof msg, "%s%s%.*s", why, tail ? "; its stderr ends with: " : "",
	         (int)tail, s->err_tail);
	for (size_t i = 0; i < s->n_pending; i++) {
		gw_send_error(s->conn, s->pending[i], SBX_MCP_ERR_SERVER_GONE, msg);
		free(s->pending[i]);
	}
	s->n_pending = 0;
	free(s->init_id);
	s->init_id = NULL;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void release_process(struct gw_server *s)
{
	close_fd(&s->in_fd);
	close_fd(&s->out_fd);
	close_fd(&s->err_fd);
	sbx_buf_free(&s->to_child);
	s->to_child_off = 0;
	sbx_linebuf_free(&s->from_child);
	s->pid = 0;
}

void gw_server_stop(struct gw_server *s, const char *why)
{
	if (!s->pid)
		return;
	kill(-s->pid, SIGKILL);
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
	gw_log("stopped %s: %s", s->key, why);
	snprintf(s->last_exit, sizeof s->last_exit, "MCP server was stopped: %s", why);
	fail_pending(s, s->last_exit);
	release_process(s);
}

static void describe_exit(struct gw_server *s, int status)
{
	if (WIFEXITED(status))
		snprintf(s->last_exit, sizeof s->last_exit, "MCP server exited with status %d",
		         WEXITSTATUS(status));
	else
		snprintf(s->last_exit, sizeof s->last_exit, "MCP server was killed by signal %d",
		         WTERMSIG(status));
}

static void on_exit_status(struct gw_server *s, int status)
{
	int64_t now = sbx_now_ms(), backoff = BACKOFF_MIN_MS;

	/* What it wrote before dying may hold the answer or the reason. */
	while (s->out_fd >= 0)
		gw_server_on_stdout(s);
	while (s->err_fd >= 0)
		gw_server_on_stderr(s);
	describe_exit(s, status);
	s->crashes = now - s->started_ms > HEALTHY_MS ? 1 : s->crashes + 1;
	for (int i = 1; i < s->crashes && backoff < BACKOFF_MAX_MS; i++)
		backoff *= 2;
	s->restart_after_ms = now + (backoff < BACKOFF_MAX_MS ? backoff : BACKOFF_MAX_MS);
	gw_log("%s: %s (crash %d in a row)", s->key, s->last_exit, s->crashes);
	fail_pending(s, s->last_exit);
	release_process(s);
}

/* One wait for any child, matched to its server: a server and the grandchildren that are
 * re-parented to the gateway (a subreaper) are reaped by the same call, so a server that
 * exits between a wait for it and a wait for the others cannot be taken for a grandchild
 * and its end lost (its requests would wait for their timeout). */
void gw_servers_reap(void)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		for (struct gw_server *s = gw_servers; s; s = s->next)
			if (s->pid == pid) {
				on_exit_status(s, status);
				break;
			}
}

void gw_server_remove(struct gw_server *s)
{
	gw_server_stop(s, "removed");
	for (struct gw_server **at = &gw_servers; *at; at = &(*at)->next)
		if (*at == s) {
			*at = s->next;
			break;
		}
	if (s->conn) {
		s->conn->server = NULL;
		s->conn->closing = true;
	}
	forget_session(s);
	free(s->pending);
	free(s->init_id);
	free(s->spec);
	free(s->key);
	free(s);
}

/* ---- routing ---- */

static char *json_text(const sbx_json *v)
{
	sbx_buf b = { 0 };

	sbx_json_write(&b, v);
	return sbx_buf_steal(&b, NULL);
}

static void send_diagnostic(struct gw_server *s, const char *what, const char *line, size_t len)
{
	sbx_buf b = { 0 }, text = { 0 };
	int64_t now = sbx_now_ms();

	if (now - s->last_diag_ms < DIAG_INTERVAL_MS)
		return;   /* a flood gets one notice a second, not one per line */
	s->last_diag_ms = now;
	sbx_buf_printf(&text, "%s", what);
	if (len)
		sbx_buf_printf(&text, ": %.*s", (int)(len < 200 ? len : 200), line);
	sbx_buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"method\":\"" SBX_MCP_DIAG_METHOD "\",\"params\":{\"text\":");
	sbx_buf_json_string(&b, text.data ? text.data : "", text.len);
	sbx_buf_puts(&b, "}}");
	gw_log("%s: %s", s->key, text.data ? text.data : "");
	if (!b.oom && s->conn)
		gw_conn_send(s->conn, b.data, b.len);
	sbx_buf_free(&b);
	sbx_buf_free(&text);
}

static bool is_string(const sbx_json *v, const char *s)
{
	return v && v->type == SBX_JSON_STRING && strcmp(v->str, s) == 0;
}

/* The host's initialize when the server already has a session: answered from the cache, so
 * a reconnecting host never re-initializes a live server. Returns true when answered. */
static bool answer_initialize(struct gw_server *s, const sbx_json *msg, const char *id)
{
	const sbx_json *params = sbx_json_get(msg, "params");
	sbx_buf b = { 0 };

	if (s->init_result) {
		sbx_buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}", id, s->init_result);
		if (!b.oom && s->conn)
			gw_conn_send(s->conn, b.data, b.len);
		sbx_buf_free(&b);
		s->swallow_initialized = true;
		return true;
	}
	free(s->init_params);
	s->init_params = params ? json_text(params) : strdup("{}");
	free(s->init_id);
	s->init_id = strdup(id);
	return false;
}

static void route_host_message(struct gw_server *s, const sbx_json *msg, const char *line,
                               size_t len)
{
	const sbx_json *method = sbx_json_get(msg, "method"), *idv = sbx_json_get(msg, "id");
	char *id = idv && method ? json_text(idv) : NULL;
	char err[sizeof s->last_exit + 64];

	if (is_string(method, "notifications/initialized") && s->swallow_initialized) {
		s->swallow_initialized = false;
		return;
	}
	if (id && is_string(method, "initialize") && answer_initialize(s, msg, id)) {
		free(id);
		return;
	}
	if (gw_server_ensure(s, err, sizeof err) < 0) {
		if (id)
			gw_send_error(s->conn, id, SBX_MCP_ERR_SERVER_GONE, err);
		free(id);
		return;
	}
	if (id)
		add_pending(s, id);
	queue_to_child(s, line, len);
	free(id);
}

void gw_server_from_host(struct gw_server *s, const char *line, size_t len)
{
	char perr[128];
	sbx_json *msg = NULL;

	if (sbx_json_parse(line, len, &msg, perr, sizeof perr) < 0) {
		gw_send_error(s->conn, "null", -32700, "parse error: the line is not JSON");
		return;
	}
	route_host_message(s, msg, line, len);
	sbx_json_free(msg);
}

/* A request from the server: the gateway is its client, and answers ping; it offers no
 * other client capability (roots, sampling, elicitation), so anything else is refused. */
static void answer_server_request(struct gw_server *s, const sbx_json *method, const char *id)
{
	sbx_buf b = { 0 };

	if (is_string(method, "ping"))
		sbx_buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}", id);
	else
		sbx_buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32601,"
		               "\"message\":\"method not supported by the client\"}}", id);
	if (!b.oom)
		queue_to_child(s, b.data, b.len);
	sbx_buf_free(&b);
}

static void route_server_message(struct gw_server *s, const sbx_json *msg, const char *line,
                                 size_t len)
{
	const sbx_json *method = sbx_json_get(msg, "method"), *idv = sbx_json_get(msg, "id");
	char *id = idv ? json_text(idv) : NULL;

	if (id && method) {
		answer_server_request(s, method, id);
	} else if (id && strcmp(id, REPLAY_ID) == 0) {
		/* the replayed initialize: the host already has its answer */
	} else {
		if (id && take_pending(s, id) && s->init_id && strcmp(id, s->init_id) == 0) {
			const sbx_json *result = sbx_json_get(msg, "result");

			if (result)
				s->init_result = json_text(result);
			free(s->init_id);
			s->init_id = NULL;
		}
		if (s->conn)
			gw_conn_send(s->conn, line, len);
	}
	free(id);
}

static void on_child_line(struct gw_server *s, const char *line, size_t len)
{
	char perr[128];
	sbx_json *msg = NULL;

	if (len == 0)
		return;
	if (sbx_json_parse(line, len, &msg, perr, sizeof perr) < 0 || msg->type != SBX_JSON_OBJECT) {
		send_diagnostic(s, "MCP server wrote a line that is not a JSON-RPC message to stdout",
		                line, len);
		sbx_json_free(msg);
		return;
	}
	route_server_message(s, msg, line, len);
	sbx_json_free(msg);
}

void gw_server_on_stdout(struct gw_server *s)
{
	char buf[65536], *line;
	ssize_t n = read(s->out_fd, buf, sizeof buf);
	size_t len;
	int r;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		close_fd(&s->out_fd);
		return;
	}
	if (sbx_linebuf_feed(&s->from_child, buf, (size_t)n) < 0) {
		send_diagnostic(s, "the gateway ran out of memory reading the server", NULL, 0);
		return;
	}
	while ((r = sbx_linebuf_next(&s->from_child, &line, &len)) != SBX_LINE_NONE) {
		if (r == SBX_LINE_DROPPED)
			send_diagnostic(s, "MCP server wrote a line longer than 32 MiB; it was dropped",
			                NULL, 0);
		else
			on_child_line(s, line, len);
	}
}

void gw_server_on_stderr(struct gw_server *s)
{
	char buf[4096];
	ssize_t n = read(s->err_fd, buf, sizeof buf);
	size_t keep = sizeof s->err_tail - 1;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		close_fd(&s->err_fd);
		return;
	}
	/* Keep the last bytes only: the end of stderr says why a server died. */
	if ((size_t)n >= keep) {
		memcpy(s->err_tail, buf + (size_t)n - keep, keep);
		s->err_len = keep;
	} else {
		size_t drop = s->err_len + (size_t)n > keep ? s->err_len + (size_t)n - keep : 0;

		memmove(s->err_tail, s->err_tail + drop, s->err_len - drop);
		memcpy(s->err_tail + s->err_len - drop, buf, (size_t)n);
		s->err_len += (size_t)n - drop;
	}
	s->err_tail[s->err_len] = '\0';
}

void gw_server_flush_stdin(struct gw_server *s)
{
	while (s->in_fd >= 0 && s->to_child_off < s->to_child.len) {
		ssize_t n = write(s->in_fd, s->to_child.data + s->to_child_off,
		                  s->to_child.len - s->to_child_off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			close_fd(&s->in_fd);   /* it closed its stdin: its exit will tell the rest */
			break;
		}
		s->to_child_off += (size_t)n;
	}
	sbx_buf_free(&s->to_child);
	s->to_child_off = 0;
}
