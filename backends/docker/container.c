/* The workspace's container: found again by its labels, or created with the secure defaults,
 * started, and tied to this host process when it is ephemeral. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "docker.h"
#include "proto/init_proto.h"
#include "util/cleanup.h"
#include "util/digest.h"
#include "util/error.h"
#include "util/fdpass.h"
#include "backends/common/launch.h"
#include "backends/sandbox/attach.h"

/* Paths a command must not change even inside the writable workspace (the ns backend's list,
 * helpers/init/policy.c); those that exist when the container is made are bound read-only. */
extern const char *const sbx_default_protected_paths[];

#define KEEPALIVE_LOOP "while :; do sleep 86400; done"
#define START_TIMEOUT_MS 60000
#define REMOVE_WAIT_ROUNDS 300
#define REMOVE_WAIT_US 50000

static void json_str(sbx_buf *b, const char *s)
{
	sbx_buf_json_string(b, s, strlen(s));
}

static void add_mount(sbx_buf *b, bool *first, const char *source, const char *target, bool ro)
{
	sbx_buf_puts(b, *first ? "" : ",");
	*first = false;
	sbx_buf_puts(b, "{\"Type\":\"bind\",\"Source\":");
	json_str(b, source);
	sbx_buf_puts(b, ",\"Target\":");
	json_str(b, target);
	sbx_buf_printf(b, ",\"ReadOnly\":%s}", ro ? "true" : "false");
}

/* A protected path that exists on the host is bound read-only over itself; one that does not
 * exist cannot be bound (the engine would create it, as root, in the user's tree). */
static void add_protected_mounts(const struct docker_ws *ws, sbx_buf *b, bool *first)
{
	for (const char *const *p = sbx_default_protected_paths; *p; p++) {
		_cleanup_free_ char *rel = strdup(*p), *src = NULL, *dst = NULL;
		size_t len = rel ? strlen(rel) : 0;
		struct stat st;

		if (!rel)
			continue;
		if (len && rel[len - 1] == '/')
			rel[len - 1] = '\0';
		if (asprintf(&src, "%s/%s", ws->workdir, rel) < 0 ||
		    asprintf(&dst, "%s/%s", DOCKER_WORKSPACE, rel) < 0) {
			b->oom = true;
			return;
		}
		/* Symlinks are left alone: the engine would follow them on the host. */
		if (lstat(src, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
			add_mount(b, first, src, dst, true);
	}
}

static void add_mounts(const struct docker_ws *ws, sbx_buf *b)
{
	_cleanup_free_ char *state = NULL;
	bool first = true;

	if (asprintf(&state, "%s/.agentsbx", ws->workdir) < 0) {
		b->oom = true;
		return;
	}
	sbx_buf_puts(b, "\"Mounts\":[");
	if (ws->volume) {
		docker_add_volume_mount(ws, b);
		first = false;
	} else {
		add_mount(b, &first, ws->workdir, DOCKER_WORKSPACE, ws->read_only);
		add_protected_mounts(ws, b, &first);
	}
	add_mount(b, &first, ws->runner, DOCKER_RUNNER, true);
	if (ws->server)
		add_mount(b, &first, ws->init, DOCKER_INIT, true);
	add_mount(b, &first, ws->control_dir, DOCKER_CONTROL_DIR, true);
	sbx_buf_puts(b, "]");
}

static void add_host_config(const struct docker_ws *ws, sbx_buf *b)
{
	sbx_buf_puts(b, "\"HostConfig\":{\"NetworkMode\":");
	json_str(b, ws->network);
	sbx_buf_printf(b, ",\"ReadonlyRootfs\":true,\"CapDrop\":[\"ALL\"],"
	               "\"SecurityOpt\":[\"no-new-privileges\"],\"IpcMode\":\"private\","
	               "\"Tmpfs\":{\"/tmp\":\"rw,nosuid,nodev,size=%llu,mode=1777\"},"
	               "\"AutoRemove\":%s",
	               (unsigned long long)ws->opts.tmp_bytes,
	               ws->opts.detached && !ws->server ? "false" : "true");
	if (ws->limits.memory_bytes)
		/* Swap equal to memory: no swap on top of the limit. */
		sbx_buf_printf(b, ",\"Memory\":%llu,\"MemorySwap\":%llu",
		               (unsigned long long)ws->limits.memory_bytes,
		               (unsigned long long)ws->limits.memory_bytes);
	if (ws->limits.pids)
		sbx_buf_printf(b, ",\"PidsLimit\":%llu", (unsigned long long)ws->limits.pids);
	if (ws->opts.nano_cpus)
		sbx_buf_printf(b, ",\"NanoCpus\":%llu", (unsigned long long)ws->opts.nano_cpus);
	/* Only when configured: the engine fills in its default, and a body without the key
	 * keeps the spec label of containers made before the key existed. */
	if (ws->opts.runtime) {
		sbx_buf_puts(b, ",\"Runtime\":");
		json_str(b, ws->opts.runtime);
	}
	sbx_buf_puts(b, ",");
	add_mounts(ws, b);
	sbx_buf_puts(b, "}");
}

/* The container's main process. An ephemeral container runs a process whose control channel
 * is this host process: the exec server (agentsbx-init, which then starts every command), or
 * a runner that only keeps the container up. When this process dies, even by SIGKILL, that
 * channel closes, the container ends and the engine removes it (AutoRemove). A detached one
 * outlives us on purpose and just sleeps. */
static void add_entrypoint(const struct docker_ws *ws, sbx_buf *b, const char *keepalive_sock)
{
	sbx_buf_puts(b, "\"Entrypoint\":[");
	if (ws->server) {
		/* A detached server outlives its first channel and serves later host processes on
		 * the socket it gets handed (serve_later). */
		sbx_buf_printf(b, "\"" DOCKER_INIT "\",\"--control-socket\",\"%s/%s\",%s"
		               "\"--proto\",\"1\",\"--mode\",\"inside\"],\"Cmd\":null",
		               DOCKER_CONTROL_DIR, keepalive_sock,
		               ws->opts.detached ? "\"--detached\"," : "");
		return;
	}
	if (!ws->opts.detached) {
		sbx_buf_puts(b, "\"" DOCKER_RUNNER "\",\"--control-socket\",");
		sbx_buf_printf(b, "\"%s/%s\",\"--proto\",\"1\",\"--\",", DOCKER_CONTROL_DIR,
		               keepalive_sock);
	}
	sbx_buf_puts(b, "\"/bin/sh\",\"-c\",\"" KEEPALIVE_LOOP "\"],\"Cmd\":null");
}

static void add_labels(const struct docker_ws *ws, sbx_buf *b, const char *spec)
{
	sbx_buf_puts(b, "\"Labels\":{\"" DOCKER_LABEL_BACKEND "\":\"docker\",\""
	                DOCKER_LABEL_WORKSPACE "\":");
	json_str(b, ws->id);
	sbx_buf_puts(b, ",\"" DOCKER_LABEL_WORKDIR "\":");
	json_str(b, docker_files_label(ws));
	if (spec) {
		sbx_buf_puts(b, ",\"" DOCKER_LABEL_SPEC "\":");
		json_str(b, spec);
	}
	sbx_buf_puts(b, "}");
}

static void build_create_body(const struct docker_ws *ws, sbx_buf *b, const char *keepalive,
                              const char *spec)
{
	sbx_buf_puts(b, "{\"Image\":");
	json_str(b, ws->opts.image);
	sbx_buf_puts(b, ",\"User\":");
	json_str(b, ws->user);
	sbx_buf_puts(b, ",\"WorkingDir\":\"" DOCKER_WORKSPACE "\",\"AttachStdin\":false,"
	                "\"AttachStdout\":false,\"AttachStderr\":false,\"Tty\":false,");
	add_entrypoint(ws, b, keepalive);
	sbx_buf_puts(b, ",");
	add_labels(ws, b, spec);
	sbx_buf_puts(b, ",");
	add_host_config(ws, b);
	sbx_buf_puts(b, "}");
}

/* A digest of everything the container was made with, as a label: a later open with another
 * configuration makes a new container instead of reattaching to a different one. */
static int spec_digest(const struct docker_ws *ws, char out[33])
{
	unsigned char md[SBX_SHA256_LEN];
	sbx_buf b = { 0 };

	build_create_body(ws, &b, "keepalive", NULL);
	if (b.oom) {
		sbx_buf_free(&b);
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	}
	sbx_sha256_of(b.data, b.len, md);
	sbx_buf_free(&b);
	sbx_hex_of(md, 16, out);
	return 0;
}

/* The container with our workspace label, if any: *id (caller frees), whether it runs, and
 * whether its workdir and spec labels match ours. */
static int find_container(struct docker_ws *ws, const char *spec, char **id, bool *running,
                          bool *matches)
{
	sbx_buf path = { 0 }, filter = { 0 }, label = { 0 };
	sbx_json *list = NULL;
	long status;
	int r;

	*id = NULL;
	sbx_buf_printf(&label, "%s=%s", DOCKER_LABEL_WORKSPACE, ws->id);
	sbx_buf_puts(&filter, "{\"label\":[");
	sbx_buf_json_string(&filter, label.data ? label.data : "", label.len);
	sbx_buf_puts(&filter, "]}");
	sbx_buf_free(&label);
	sbx_buf_puts(&path, "/containers/json?all=1&filters=");
	docker_url_escape(&path, filter.data ? filter.data : "");
	sbx_buf_free(&filter);
	r = path.oom ? sbx_fail(-SBX_ENOMEM, "docker: out of memory")
	             : docker_call(&ws->engine, "GET", path.data, NULL, "list containers", &status,
	                           &list);
	sbx_buf_free(&path);
	if (r < 0)
		return r;
	for (size_t i = 0; list && list->type == SBX_JSON_ARRAY && i < list->n; i++) {
		const sbx_json *c = list->items[i], *cid = sbx_json_get(c, "Id"),
		               *state = sbx_json_get(c, "State"), *labels = sbx_json_get(c, "Labels");
		const sbx_json *wd = labels ? sbx_json_get(labels, DOCKER_LABEL_WORKDIR) : NULL,
		               *sp = labels ? sbx_json_get(labels, DOCKER_LABEL_SPEC) : NULL;

		if (!cid || cid->type != SBX_JSON_STRING)
			continue;
		free(*id);
		*id = strdup(cid->str);
		*running = state && state->type == SBX_JSON_STRING && !strcmp(state->str, "running");
		*matches = wd && wd->type == SBX_JSON_STRING && !strcmp(wd->str, docker_files_label(ws)) && sp &&
		           sp->type == SBX_JSON_STRING && !strcmp(sp->str, spec);
		/* One on its way out is not one to reattach to. */
		if (state && state->type == SBX_JSON_STRING &&
		    (!strcmp(state->str, "removing") || !strcmp(state->str, "dead")))
			*matches = false;
	}
	sbx_json_free(list);
	return 0;
}

/* Polls until the engine no longer knows the container: a reset must not find the old one
 * again, and a close must leave nothing behind. */
static int wait_until_gone(struct docker_ws *ws, const char *id)
{
	sbx_buf path = { 0 };
	long status = 0;
	int r = 0;

	sbx_buf_puts(&path, "/containers/");
	docker_url_escape(&path, id);
	sbx_buf_puts(&path, "/json");
	for (int i = 0; i < REMOVE_WAIT_ROUNDS && !path.oom; i++) {
		r = docker_call(&ws->engine, "GET", path.data, NULL, "inspect the container", &status,
		                NULL);
		if (r == -SBX_ENOENT || status == 404) {
			r = 0;
			break;
		}
		r = sbx_fail(-SBX_EBUSY, "docker: container %.12s is still being removed", id);
		usleep(REMOVE_WAIT_US);
	}
	sbx_buf_free(&path);
	return r;
}

static int remove_by_id(struct docker_ws *ws, const char *id)
{
	sbx_buf path = { 0 };
	long status;
	int r;

	sbx_buf_puts(&path, "/containers/");
	docker_url_escape(&path, id);
	sbx_buf_puts(&path, "?force=1&v=1");
	r = path.oom ? -SBX_ENOMEM
	             : docker_call(&ws->engine, "DELETE", path.data, NULL, "remove the container",
	                           &status, NULL);
	sbx_buf_free(&path);
	if (r == -SBX_ENOENT)
		return 0;
	/* 409: the engine is removing it already (AutoRemove); done once it is gone. */
	if (r < 0 && status == 409)
		return wait_until_gone(ws, id);
	return r;
}

/* Removes a container that failed to come up, keeping the failure's message: the removal's
 * own (often "No such container": AutoRemove was quicker) would hide why. */
static int remove_failed(struct docker_ws *ws, int r)
{
	char why[1024];

	snprintf(why, sizeof why, "%s", sbx_last_error());
	remove_by_id(ws, ws->container);
	return sbx_fail(r, "%s", why);
}

static int create_container(struct docker_ws *ws, const char *keepalive, const char *spec)
{
	sbx_buf body = { 0 };
	sbx_json *answer = NULL;
	const sbx_json *id;
	char what[300];
	long status;
	int r;

	build_create_body(ws, &body, keepalive, spec);
	if (body.oom)
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	snprintf(what, sizeof what, "create a container from '%s'", ws->opts.image);
	r = docker_call(&ws->engine, "POST", "/containers/create", &body, what, &status, &answer);
	if (r == -SBX_ENOENT && ws->opts.pull && strstr(sbx_last_error(), "image")) {
		if ((r = docker_pull_image(ws)) == 0)
			r = docker_call(&ws->engine, "POST", "/containers/create", &body, what, &status,
			                &answer);
	}
	sbx_buf_free(&body);
	if (r < 0)
		return r;
	id = sbx_json_get(answer, "Id");
	if (!id || id->type != SBX_JSON_STRING) {
		sbx_json_free(answer);
		return sbx_fail(-SBX_EPROTO, "docker: the engine created a container without an Id");
	}
	free(ws->container);
	ws->container = strdup(id->str);
	sbx_json_free(answer);
	return ws->container ? 0 : sbx_fail(-SBX_ENOMEM, "docker: out of memory");
}

static int start_container(struct docker_ws *ws)
{
	sbx_buf path = { 0 };
	long status;
	int r;

	sbx_buf_printf(&path, "/containers/%s/start", ws->container);
	r = path.oom ? -SBX_ENOMEM
	             : docker_call(&ws->engine, "POST", path.data, NULL, "start the container",
	                           &status, NULL);
	sbx_buf_free(&path);
	return r;
}

/* The run folder of the workspace's state folder, where a detached server listens
 * (backends/sandbox/attach.h, as for a detached ns sandbox). */
static int open_run_dir(struct docker_ws *ws, bool create, int *run_fd)
{
	const char *dir = docker_attach_root(ws);
	_cleanup_close_ int root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (root < 0)
		return sbx_fail(sbx_errno_code(errno), "docker: %s: %s", dir, strerror(errno));
	return sbx_attach_open_run_dir(root, create, run_fd);
}

/* A detached server gets a socket to serve later host processes on. */
static int serve_later(struct docker_ws *ws)
{
	_cleanup_close_ int run_fd = -1;
	_cleanup_hostlock_ int lock = -1;
	int r;

	if ((r = open_run_dir(ws, true, &run_fd)) < 0 || (r = sbx_attach_lock(run_fd, &lock)) < 0)
		return r;
	return sbx_attach_hand_listener(run_fd, ws->keepalive, DOCKER_WHO);
}

/* Reaches the detached server of a container found running. */
static int reach_server(struct docker_ws *ws)
{
	_cleanup_close_ int run_fd = -1;
	struct sbx_init_ready ready;
	uid_t uid;
	pid_t pid;
	int r;

	if ((r = open_run_dir(ws, false, &run_fd)) < 0 || (r = docker_container_uid(ws, &uid)) < 0)
		return r;
	return sbx_attach_connect_as(run_fd, DOCKER_WHO, uid, &ready, &pid, &ws->keepalive);
}

/* The exec server's spec (helpers/init/spec.c) and its READY. The container already is the
 * sandbox, so the server only hardens itself (no new privileges, seccomp) and serves; no
 * Landlock: the engine's seccomp profile may refuse its system calls. */
static int start_exec_server(struct docker_ws *ws)
{
	union {
		struct sbx_init_ready ready;
		struct sbx_init_error error;
		char raw[512];
	} msg;
	sbx_buf spec = { 0 };
	_cleanup_close_ int spec_fd = -1;
	struct pollfd p = { .fd = ws->keepalive, .events = POLLIN };
	ssize_t n;
	int r;

	sbx_buf_puts(&spec, "{\"id\":");
	sbx_buf_json_string(&spec, ws->id, strlen(ws->id));
	sbx_buf_printf(&spec, ",\"landlock\":false,\"seccomp_program\":false,"
	               "\"workspace_readonly\":%s", ws->read_only ? "true" : "false");
	/* The server runs as the container's user; later host processes are ours. At its idle
	 * TTL it stops, and with it the container, which the engine then removes (AutoRemove:
	 * a stopped server container is never reattached anyway). */
	if (ws->opts.detached)
		sbx_buf_printf(&spec, ",\"host_uid\":%u,\"idle_ttl_ms\":%lld", (unsigned)geteuid(),
		               (long long)ws->opts.idle_ttl_ms);
	docker_network_spec(ws, &spec);
	sbx_buf_puts(&spec, "}");
	if (spec.oom)
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	spec_fd = sbx_memfd_with("agentsbx-spec", spec.data, spec.len);
	sbx_buf_free(&spec);
	if (spec_fd < 0)
		return spec_fd;
	if ((r = sbx_send_with_fds(ws->keepalive, "s", 1, &spec_fd, 1)) < 0)
		return sbx_fail(-SBX_EBACKEND, "docker: the exec server went away: %s", strerror(-r));
	if ((r = docker_network_hand_bridge(ws)) < 0)
		return r;
	if (poll(&p, 1, START_TIMEOUT_MS) <= 0)
		return sbx_fail(-SBX_EBACKEND, "docker: the exec server did not get ready in time");
	n = recv(ws->keepalive, &msg, sizeof msg, 0);
	if (n >= (ssize_t)sizeof msg.ready && msg.ready.kind == SBX_INIT_READY)
		return ws->opts.detached ? serve_later(ws) : 0;
	if (n >= (ssize_t)sizeof msg.error && msg.error.kind == SBX_INIT_ERROR) {
		msg.error.message[sizeof msg.error.message - 1] = '\0';
		return sbx_fail(-SBX_EBACKEND, "docker: the exec server failed: %s",
		                msg.error.message);
	}
	return sbx_fail(-SBX_EBACKEND, "docker: the exec server ended before it was ready (set "
	                "docker.exec to \"api\" where it cannot run)");
}

/* Creates and starts a container; an ephemeral one is up once its main process has connected
 * (before that, a crash of ours could not stop it). */
static int create_and_start(struct docker_ws *ws, const char *spec)
{
	_cleanup_close_ int lfd = -1;
	_cleanup_free_ char *name = NULL, *sock = NULL;
	int r;

	/* Every main process but a detached container's sleep loop connects to us first. */
	bool connects = ws->server || !ws->opts.detached;

	if (connects && (r = docker_control_listen(ws->control_dir, &lfd, &name)) < 0)
		return r;
	if (name && asprintf(&sock, "%s/%s", ws->control_dir, name) < 0)
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	r = create_container(ws, name ? name : "", spec);
	if (r == 0 && (r = start_container(ws)) < 0)
		r = remove_failed(ws, r);
	if (r == 0 && lfd >= 0) {
		r = docker_control_accept(lfd, -1, START_TIMEOUT_MS, &ws->keepalive);
		if (r < 0) {
			char hint[600];

			docker_runtime_hint(ws, hint, sizeof hint);
			r = sbx_fail(-SBX_EBACKEND, "docker: the container's main process did not "
			             "connect to %s (can the container's user run %s?)%s", sock,
			             ws->server ? ws->init : ws->runner, hint);
		}
		else if (ws->server)
			r = start_exec_server(ws);
		if (r < 0) {
			close(ws->keepalive);
			ws->keepalive = -1;
			r = remove_failed(ws, r);
		}
	}
	if (sock)
		unlink(sock);
	return r;
}

int docker_container_up(struct docker_ws *ws)
{
	_cleanup_free_ char *found = NULL;
	char spec[33];
	bool running = false, matches = false;
	int r;

	if ((r = spec_digest(ws, spec)) < 0 ||
	    (r = find_container(ws, spec, &found, &running, &matches)) < 0)
		return r;
	/* The labels say what we made, not what runs: a container on another runtime (made
	 * by another hand, or before the engine's default changed) is not ours to use. */
	if (found && matches && (r = docker_runtime_matches(ws, found, &matches)) < 0)
		return r;
	/* A server container can only be reattached while its server runs: a stopped one would
	 * start its server against a channel that is long gone. */
	if (found && matches && ws->server && running) {
		ws->container = SBX_TAKE_PTR(found);
		if (reach_server(ws) == 0)
			return 0;
		found = SBX_TAKE_PTR(ws->container);
	} else if (found && matches && !ws->server) {
		ws->container = SBX_TAKE_PTR(found);
		return running ? 0 : start_container(ws);
	}
	/* Made for another workdir or with other settings: this workspace's container is the
	 * one we make now. */
	if (found && (r = remove_by_id(ws, found)) < 0)
		return r;
	return create_and_start(ws, spec);
}

int docker_container_remove(struct docker_ws *ws)
{
	int r = 0;

	/* Removed first, then the main process's channel closed: the other order would race
	 * AutoRemove. */
	if (ws->container)
		r = remove_by_id(ws, ws->container);
	if (ws->keepalive >= 0) {
		close(ws->keepalive);
		ws->keepalive = -1;
	}
	free(ws->container);
	ws->container = NULL;
	return r;
}
