/* Finding the workspace's gateway, and starting it when there is none.
 *
 * The gateway listens on .agentsbx/mcp/gateway.sock in the workspace's state folder (bound
 * writable into ns/bwrap sandboxes at SBX_MCP_RUN_VIEW, see binds.c). Any handle on the
 * workdir — a second one, or one opened after the host process restarted — finds it there.
 * A socket nobody listens on (its gateway died with its sandbox) is stale: a new gateway is
 * started, takes the lock the dead one released, and replaces it.
 *
 * Agents inside the sandbox can write that folder, so the socket path is never trusted: the
 * folder and the socket are opened without following symlinks, the object must be a socket,
 * and the connection goes through /proc/self/fd to that very inode. A planted link cannot
 * send the host to another socket of the host. An agent could still kill the gateway and
 * listen in its place; it then answers the host's MCP requests itself — no more than it can
 * do already by replacing the servers' code in the workspace, and replies are untrusted
 * model input either way.
 *
 * The stream transport (stream.c) needs no socket: the gateway is a process of this handle,
 * spoken to over its stdin and stdout. It is what backends without host files use, since
 * the host cannot reach their state folder; there the gateway binary is first uploaded into
 * the workspace with the backend's file API. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "mcp/client.h"
#include "mcp/mcp.h"
#include "proto/mcp_proto.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/statedir.h"
#include "util/fs.h"

#define GATEWAY_MAX_BYTES ((size_t)64 << 20)

#define START_TIMEOUT_MS 15000

/* The failure the state folder's helper reported, as MCP's. */
static int fail_prefixed(int r)
{
	char msg[512];

	snprintf(msg, sizeof msg, "%s", sbx_last_error());
	return sbx_fail(r, "mcp: %s", msg);
}

/* Does the gateway of this backend listen in a run folder the host reaches where the state
 * folder is? A HELPER_BINDS backend binds that folder into the sandbox; a HOST_VIEW backend
 * runs the gateway on the host itself. */
static bool gateway_on_host_view(const sbx_workspace *ws)
{
	return ws->caps & (SBX_BACKEND_CAP_HELPER_BINDS | SBX_BACKEND_CAP_HOST_VIEW);
}

/* A backend whose commands see the workdir but neither binds nor runs on the host (a plugin,
 * a container with the workdir bound) cannot see a state folder outside the workdir: its
 * gateway's run folder is the workdir's .agentsbx/mcp then, as before 1.7. */
static bool run_folder_in_workdir(const sbx_workspace *ws)
{
	return ws->state_outside && !ws->state_temporary && !gateway_on_host_view(ws);
}

/* The gateway's run folder on the host, made with mode (0: -SBX_ENOENT when missing), never
 * through a link. */
static int run_dir_fd(sbx_workspace *ws, mode_t mode, int *out)
{
	if (!run_folder_in_workdir(ws))
		return sbx_state_dir(ws, SBX_MCP_RUN_SUBDIR, mode, out);
	return sbx_statedir_open(ws->root_fd, SBX_MCP_RUN_SUBDIR, mode, out);
}

/* -SBX_ENOENT when no gateway listens (no socket, or a stale one). */
static int connect_gateway(sbx_workspace *ws, int *out)
{
	_cleanup_close_ int dir = -1, sock = -1;
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, r = run_dir_fd(ws, 0, &dir);

	if (r == -SBX_ENOENT)
		return r;
	if (r < 0)
		return fail_prefixed(r);
	sock = openat(dir, SBX_MCP_SOCKET_NAME, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (sock < 0 || fstat(sock, &st) < 0 || !S_ISSOCK(st.st_mode))
		return -SBX_ENOENT;
	snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d", sock);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return sbx_fail(sbx_errno_code(errno), "mcp: socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
		close(fd);
		return -SBX_ENOENT;
	}
	*out = fd;
	return 0;
}

bool sbx_mcp_use_stream(const sbx_workspace *ws)
{
	if (ws->cfg->mcp_stream >= 0)
		return ws->cfg->mcp_stream == 1;
	/* A capped workspace has no run folder on the host (mcp/binds.c); nor, for a container,
	 * has a workspace whose state folder is a temporary one, or whose workdir (where its run
	 * folder would be) the library may not write. */
	if (ws->cfg->disk_bytes || (ws->state_temporary && !gateway_on_host_view(ws)) ||
	    (run_folder_in_workdir(ws) && !ws->workdir_writable))
		return true;
	return !(ws->caps & SBX_BACKEND_CAP_HOST_FILES);
}

static int read_gateway_binary(char **data, size_t *len)
{
	_cleanup_free_ char *host_exe = NULL;
	_cleanup_close_ int fd = -1;
	int r;

	if ((r = sbx_helper_path(SBX_MCP_GATEWAY_NAME, &host_exe)) < 0)
		return r;
	if ((fd = open(host_exe, O_RDONLY | O_CLOEXEC)) < 0)
		return sbx_fail(sbx_errno_code(errno), "mcp: open %s: %s", host_exe, strerror(errno));
	if ((r = sbx_fs_read_fd(fd, GATEWAY_MAX_BYTES, data, len)) < 0)
		return sbx_fail(r, "mcp: reading %s: %s", host_exe, sbx_last_error());
	return 0;
}

/* root + "/" + rel, as the workspace's commands see it. */
static int in_root(sbx_workspace *ws, const char *rel, char **out)
{
	const char *root = sbx_workspace_root(ws);
	size_t n = strlen(root);

	if (asprintf(out, "%s%s%s", root, n && root[n - 1] == '/' ? "" : "/", rel) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	return 0;
}

/* 64-bit FNV-1a: names an uploaded binary by its content. */
static uint64_t content_hash(const char *data, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)data[i]) * 0x100000001b3ULL;
	return h;
}

/* Is rel already in the workspace with this size? (Then its content-derived name says the
 * content is the same too.) */
static bool already_there(sbx_workspace *ws, const char *rel, size_t len)
{
	sbx_stat st = { .size = sizeof st };

	if (!ws->ops->file_stat || ws->ops->file_stat(ws->state, rel, &st) < 0) {
		sbx_error_clear();
		return false;
	}
	return st.type == SBX_FILE_REGULAR && st.file_size == len;
}

/* Copies the gateway binary into a workspace whose files the host cannot see: its commands
 * run it from there. The name carries a hash of the content, so a copy a running gateway
 * executes is never rewritten (ETXTBSY), and one that is there already is not sent again.
 * No run folder (it logs nowhere). */
static int upload_gateway(sbx_workspace *ws, char **exe, char **run_dir)
{
	_cleanup_free_ char *data = NULL;
	char rel[64];
	size_t len;
	int r;

	if (!ws->ops->file_write)
		return sbx_fail(-SBX_ENOSYS, "mcp: backend '%s' has no file API to copy the MCP "
		                "gateway into the workspace with", ws->ops->name);
	if ((r = read_gateway_binary(&data, &len)) < 0)
		return r;
	snprintf(rel, sizeof rel, "%s-%016llx", SBX_MCP_UPLOAD_PATH,
	         (unsigned long long)content_hash(data, len));
	if (!already_there(ws, rel, len)) {
		if (ws->ops->file_mkdir &&
		    (r = ws->ops->file_mkdir(ws->state, SBX_MCP_UPLOAD_DIR, 0755)) < 0 &&
		    r != -SBX_EEXIST)
			return r;
		if ((r = ws->ops->file_write(ws->state, rel, data, len, 0755, 0)) < 0)
			return sbx_fail(r, "mcp: copying the gateway into the workspace: %s",
			                sbx_last_error());
	}
	*run_dir = NULL;
	return in_root(ws, rel, exe);
}

/* Another backend whose files the host sees (a plugin, a container with the workdir bound):
 * its commands see the state folder under their root, so the gateway is copied into its run
 * folder there and runs from it, and its socket is one the host reaches too. */
static int copy_gateway_into_state(sbx_workspace *ws, char **exe, char **run_dir)
{
	_cleanup_free_ char *data = NULL;
	_cleanup_close_ int dir = -1;
	size_t len;
	int r;

	if ((r = read_gateway_binary(&data, &len)) < 0)
		return r;
	if ((r = run_dir_fd(ws, 0700, &dir)) < 0)
		return fail_prefixed(r);
	if ((r = sbx_workspace_write_atomic(ws, dir, SBX_MCP_GATEWAY_NAME, data, len, 0755, 0)) < 0)
		return r;
	if ((r = in_root(ws, SBX_MCP_RUN_DIR, run_dir)) < 0)
		return r;
	return in_root(ws, SBX_MCP_RUN_DIR "/" SBX_MCP_GATEWAY_NAME, exe);
}

/* Where the gateway binary and its folder are, as the workspace's commands see them. */
static int gateway_argv(sbx_workspace *ws, char **exe, char **run_dir)
{
	if (!(ws->caps & SBX_BACKEND_CAP_HOST_FILES))
		return upload_gateway(ws, exe, run_dir);
	if (ws->caps & SBX_BACKEND_CAP_HELPER_BINDS) {
		*exe = strdup(SBX_MCP_HELPERS_VIEW "/" SBX_MCP_GATEWAY_NAME);
		if (ws->cfg->disk_bytes)   /* no run folder: the stream needs none */
			return *exe ? 0 : sbx_fail(-SBX_ENOMEM, "out of memory");
		*run_dir = strdup(SBX_MCP_RUN_VIEW);
	} else if (ws->caps & SBX_BACKEND_CAP_HOST_VIEW) {
		_cleanup_close_ int dir = -1;
		int r = sbx_helper_path(SBX_MCP_GATEWAY_NAME, exe);

		/* The gateway runs on the host and is told the folder by path: made and checked
		 * here first (no link on the way), in the state folder wherever that is. */
		if (r < 0)
			return r;
		if ((r = sbx_state_dir(ws, SBX_MCP_RUN_SUBDIR, 0700, &dir)) < 0)
			return fail_prefixed(r);
		if (asprintf(run_dir, "%s/%s", sbx_state_path(ws), SBX_MCP_RUN_SUBDIR) < 0)
			*run_dir = NULL;
	} else {
		return copy_gateway_into_state(ws, exe, run_dir);
	}
	return *exe && *run_dir ? 0 : sbx_fail(-SBX_ENOMEM, "out of memory");
}

/* The first line the gateway prints: "ready", "busy" or "error: ...". */
static int read_status(int fd, char *line, size_t cap)
{
	size_t len = 0;
	int64_t deadline = sbx_now_ms() + START_TIMEOUT_MS;

	while (len + 1 < cap) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int wait = (int)(deadline - sbx_now_ms());
		ssize_t n;

		if (wait <= 0 || poll(&p, 1, wait) <= 0)
			return -SBX_ETIMEDOUT;
		if ((n = read(fd, line + len, cap - 1 - len)) <= 0)
			break;
		len += (size_t)n;
		if (memchr(line, '\n', len))
			break;
	}
	line[len] = '\0';
	line[strcspn(line, "\n")] = '\0';
	return 0;
}

static void release_spawned(sbx_workspace *ws, sbx_spawned *sp, bool kill_it)
{
	int code, sig;

	if (sp->out_fd >= 0)
		close(sp->out_fd);
	if (sp->err_fd >= 0)
		close(sp->err_fd);
	if (sp->in_fd >= 0)
		close(sp->in_fd);
	sp->in_fd = sp->out_fd = sp->err_fd = -1;
	if (!sp->proc)
		return;
	if (kill_it)
		ws->ops->proc_kill(sp->proc);
	ws->ops->proc_wait(sp->proc, -1, &code, &sig);
	ws->ops->proc_release(sp->proc);
	sp->proc = NULL;
}

static int start_gateway(sbx_workspace *ws, sbx_mcp_state *st)
{
	_cleanup_free_ char *exe = NULL, *run_dir = NULL;
	const char *argv[3];
	char status[512];
	sbx_spawned sp = { .in_fd = -1, .out_fd = -1, .err_fd = -1 };
	int r;

	if ((r = gateway_argv(ws, &exe, &run_dir)) < 0)
		return r;
	argv[0] = exe;
	argv[1] = run_dir;
	argv[2] = NULL;
	if ((r = sbx_spawn_command(ws, argv, NULL, NULL, SBX_EXEC_MERGE_STDERR, false, &sp)) < 0)
		return r;
	r = read_status(sp.out_fd, status, sizeof status);
	if (r == 0 && strcmp(status, "ready") == 0) {
		/* Its output goes to its log from now on. */
		close(sp.out_fd);
		sp.out_fd = -1;
		if (st->gateway_started)
			release_spawned(ws, &st->gateway, true);
		st->gateway = sp;
		st->gateway_started = true;
		return 0;
	}
	release_spawned(ws, &sp, true);
	if (r == 0 && strcmp(status, "busy") == 0)
		return 0;   /* another handle's gateway won the race: use it */
	return sbx_fail(-SBX_EIO, "mcp: the gateway (%s) did not start: %s", exe,
	                r < 0 ? "no answer within 15 s" : status[0] ? status : "it exited");
}

static int send_hello(int fd, const char *hello, int timeout_ms, char **reply)
{
	size_t len = strlen(hello), cap = 4096, got = 0;
	char *buf = malloc(cap);
	int64_t deadline = sbx_now_ms() + timeout_ms;

	if (!buf)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if (send(fd, hello, len, MSG_NOSIGNAL) != (ssize_t)len || send(fd, "\n", 1, MSG_NOSIGNAL) != 1) {
		free(buf);
		return sbx_fail(-SBX_EIO, "mcp: writing to the gateway: %s", strerror(errno));
	}
	/* Byte by byte: what follows the reply line belongs to the MCP client. */
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int wait = (int)(deadline - sbx_now_ms());
		ssize_t n;

		if (wait <= 0 || poll(&p, 1, wait) <= 0) {
			free(buf);
			return sbx_fail(-SBX_ETIMEDOUT, "mcp: the gateway did not answer within %d ms",
			                timeout_ms);
		}
		if ((n = read(fd, buf + got, 1)) <= 0) {
			free(buf);
			return sbx_fail(-SBX_EIO, "mcp: the gateway closed the connection");
		}
		if (buf[got] == '\n' || ++got == cap - 1)
			break;
	}
	buf[got] = '\0';
	*reply = buf;
	return 0;
}

/* The handle's stream gateway, started (again, when the last one died) as needed. */
static int stream_gateway(sbx_workspace *ws, sbx_mcp_state *st, sbx_mcp_mux **out)
{
	_cleanup_free_ char *exe = NULL, *run_dir = NULL;
	int r;

	if (st->mux && sbx_mcp_mux_alive(st->mux)) {
		*out = st->mux;
		return 0;
	}
	/* Channels still open on a dead one keep it until they close. */
	sbx_mcp_mux_release(st->mux);
	st->mux = NULL;
	if ((r = gateway_argv(ws, &exe, &run_dir)) < 0 ||
	    (r = sbx_mcp_mux_start(ws, exe, run_dir, &st->mux)) < 0)
		return r;
	*out = st->mux;
	return 0;
}

static int open_socket(sbx_workspace *ws, sbx_mcp_state *st, const char *hello, int timeout_ms,
                       int *fd, char **reply)
{
	int r = connect_gateway(ws, fd);

	if (r == -SBX_ENOENT) {
		if ((r = start_gateway(ws, st)) < 0)
			return r;
		if ((r = connect_gateway(ws, fd)) == -SBX_ENOENT)
			return sbx_fail(-SBX_EIO, "mcp: the gateway started but its socket does not "
			                "answer");
	}
	if (r < 0)
		return r;
	if ((r = send_hello(*fd, hello, timeout_ms, reply)) < 0) {
		close(*fd);
		*fd = -1;
	}
	return r;
}

int sbx_mcp_gateway_open(sbx_workspace *ws, sbx_mcp_state *st, const char *hello,
                         int timeout_ms, const char *name, int client_timeout_ms,
                         sbx_mcp_client *c, char **reply)
{
	sbx_mcp_mux *m;
	int fd = -1, r;

	if (sbx_mcp_use_stream(ws)) {
		if ((r = stream_gateway(ws, st, &m)) < 0)
			return r;
		return sbx_mcp_mux_open(m, hello, timeout_ms, name, client_timeout_ms, c, reply);
	}
	if ((r = open_socket(ws, st, hello, timeout_ms, &fd, reply)) < 0)
		return r;
	sbx_mcp_client_init(c, fd, name, client_timeout_ms);
	return 0;
}

void sbx_mcp_gateway_stop(sbx_workspace *ws, sbx_mcp_state *st)
{
	if (st->gateway_started)
		release_spawned(ws, &st->gateway, true);
	st->gateway_started = false;
	sbx_mcp_mux_release(st->mux);
	st->mux = NULL;
}
