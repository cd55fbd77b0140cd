/* The docker backend's ops table and workspace lifecycle: one long-running container per
 * workspace, made with secure defaults (no network, read-only root, no capabilities,
 * no-new-privileges, a non-root user), the host workdir bound at /workspace. Commands run
 * through the Engine's exec API (exec.c); the core serves the files from the host workdir. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "docker.h"
#include "internal.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/statedir.h"

#define PROBE_TIMEOUT_MS 3000L
/* The user commands run as when neither the config nor the workdir names one: nobody. */
#define FALLBACK_USER "65534:65534"
#define FALLBACK_UID 65534

extern const char *const sbx_default_protected_paths[];

/* The engine, and the OCI runtimes it offers ("docker.runtime" takes one of them). */
static int docker_probe(char *detail, size_t len)
{
	struct docker_engine e;
	struct docker_runtimes rt = { 0 };
	sbx_buf runtimes = { 0 };
	int r = docker_engine_connect(&e, NULL, PROBE_TIMEOUT_MS);

	if (r < 0) {
		snprintf(detail, len, "%s", sbx_last_error());
		docker_engine_free(&e);
		return -SBX_EBACKEND;
	}
	e.timeout_ms = PROBE_TIMEOUT_MS;
	if (docker_runtimes_get(&e, &rt) == 0)
		docker_runtimes_describe(&rt, &runtimes);
	else
		sbx_buf_printf(&runtimes, "unknown (%s)", sbx_last_error());
	snprintf(detail, len, "Docker Engine API %s at %s; runtimes: %s", e.api + 1,
	         e.unix_socket ? e.unix_socket : e.base_url,
	         runtimes.data && !runtimes.oom ? runtimes.data : "?");
	sbx_buf_free(&runtimes);
	docker_runtimes_free(&rt);
	docker_engine_free(&e);
	return 0;
}

static void ws_free(struct docker_ws *ws)
{
	if (!ws)
		return;
	if (ws->keepalive >= 0)
		close(ws->keepalive);
	docker_network_stop(ws);
	docker_options_free(&ws->opts);
	docker_engine_free(&ws->engine);
	free(ws->id);
	free(ws->workdir);
	free(ws->control_dir);
	free(ws->runner);
	free(ws->init);
	free(ws->user);
	free(ws->container);
	free(ws->network);
	free(ws->volume);
	free(ws->state_dir);
	free(ws->runtime);
	free(ws->replaced_why);
	pthread_mutex_destroy(&ws->lock);
	free(ws);
}

/* Network mode "none" is the container's "none"; "host" is the host's network, or Docker's
 * bridge when the config asks for that (outbound access without the host's interfaces);
 * "allowlist" is "none" with the workspace's proxy as the only way out (network.c). */
static int pick_network(struct docker_ws *ws, const sbx_backend_config *cfg)
{
	const char *mode = cfg->network_mode ? cfg->network_mode : "none";

	ws->allowlist = !strcmp(mode, "allowlist");
	if (ws->allowlist)
		mode = "none";
	if (!strcmp(mode, "none") && ws->opts.bridge)
		return sbx_fail(-SBX_ECONFIG, "config: key 'docker.network': \"bridge\" needs network "
		                "mode \"host\" (modes \"none\" and \"allowlist\" keep the container "
		                "off every network)");
	if (strcmp(mode, "none") != 0 && strcmp(mode, "host") != 0)
		return sbx_fail(-SBX_ECONFIG, "docker: network mode '%s' is not supported (none, "
		                "allowlist, host)", mode);
	ws->network = strdup(!strcmp(mode, "none") ? "none" : ws->opts.bridge ? "bridge" : "host");
	return ws->network ? 0 : sbx_fail(-SBX_ENOMEM, "docker: out of memory");
}

/* Who commands run as. Files in /workspace belong to whoever creates them, so the default is
 * a user that can write the workdir: the caller when it is not root, else the workdir's owner
 * when that is not root, else nobody (and a temporary workdir of ours is handed to nobody).
 * Never root by default: root in a container is one kernel bug away from root on the host. */
static int pick_user(struct docker_ws *ws, const sbx_backend_config *cfg)
{
	struct stat st;

	if (ws->opts.user)
		ws->user = strdup(ws->opts.user);
	else if (getuid() != 0)
		(void)!asprintf(&ws->user, "%u:%u", (unsigned)getuid(), (unsigned)getgid());
	else if (ws->workdir && stat(ws->workdir, &st) == 0 && st.st_uid != 0)
		(void)!asprintf(&ws->user, "%u:%u", (unsigned)st.st_uid, (unsigned)st.st_gid);
	else {
		if (cfg->workdir_is_temporary &&
		    chown(ws->workdir, FALLBACK_UID, FALLBACK_UID) < 0)
			return sbx_fail(-sbx_errno_code(errno), "docker: chown %s: %s", ws->workdir,
			                strerror(errno));
		ws->user = strdup(FALLBACK_USER);
	}
	return ws->user ? 0 : sbx_fail(-SBX_ENOMEM, "docker: out of memory");
}

/* The host path of a helper program the container gets bound in read-only. */
static int find_helper(const char *name, char **path)
{
	_cleanup_free_ char *found = NULL;
	char err[256];
	int r = sbx_helper_path(name, &found);

	if (r < 0) {
		snprintf(err, sizeof err, "%s", sbx_last_error());
		return sbx_fail(-SBX_EBACKEND, "docker: %s", err);
	}
	if (!(*path = realpath(found, NULL)))
		return sbx_fail(-SBX_EBACKEND, "docker: %s: %s", found, strerror(errno));
	return 0;
}

static int find_helpers(struct docker_ws *ws)
{
	int r = find_helper("agentsbx-run", &ws->runner);

	ws->server = ws->opts.exec == DOCKER_EXEC_SERVER ||
	             (ws->opts.exec == DOCKER_EXEC_AUTO && !ws->opts.stream);
	if (r == 0 && ws->server)
		r = find_helper("agentsbx-init", &ws->init);
	return r;
}

/* The host folder the control sockets live in, bound into the container. Anyone may pass
 * through it (0711) because the container's user is often not ours; the names are random.
 * It is the state folder's docker/, made and checked without following a link (a link
 * planted in the workdir must not make the host create folders elsewhere), or, when the
 * state folder is a temporary one (a workdir the library cannot write), that one's. */
static int make_control_dir(struct docker_ws *ws, const sbx_backend_config *cfg)
{
	const char *temp = SBX_BACKEND_CONFIG_HAS(cfg, state_dir) ? cfg->state_dir : NULL;
	const char *base = temp ? temp : docker_attach_root(ws);
	_cleanup_close_ int root = -1, dir = -1;
	char msg[512];
	int r;

	if (temp)
		r = sbx_statedir_open_below(cfg->state_dir_fd, temp, "docker", 0711, &dir);
	else if ((root = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = sbx_fail(sbx_errno_code(errno), "open %s: %s", base, strerror(errno));
	else
		r = sbx_statedir_open(root, "docker", 0711, &dir);
	if (r < 0) {
		snprintf(msg, sizeof msg, "%s", sbx_last_error());
		return sbx_fail(r, "docker: the control folder: %s", msg);
	}
	if ((temp ? asprintf(&ws->control_dir, "%s/docker", temp)
	          : asprintf(&ws->control_dir, "%s/" DOCKER_STATE_SUBDIR, base)) < 0)
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	if (fchmod(dir, 0711) < 0)
		return sbx_fail(-sbx_errno_code(errno), "docker: chmod %s: %s", ws->control_dir,
		                strerror(errno));
	return 0;
}

static int setup(struct docker_ws *ws, const sbx_backend_config *cfg)
{
	int r;

	if ((r = docker_options_parse(cfg->options_json, &ws->opts)) < 0 ||
	    (r = pick_network(ws, cfg)) < 0)
		return r;
	bool volume = ws->opts.volume || ws->opts.volume_own;

	if (!cfg->workdir && !volume)
		return sbx_fail(-SBX_EINVAL, "docker: a host workdir is required");
	if (!(ws->id = strdup(cfg->id)) ||
	    (!volume && !(ws->workdir = strdup(cfg->workdir))))
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	if (SBX_BACKEND_CONFIG_HAS(cfg, limits))
		ws->limits = cfg->limits;
	if (SBX_BACKEND_CONFIG_HAS(cfg, read_only))
		ws->read_only = cfg->read_only != 0;
	if (SBX_BACKEND_CONFIG_HAS(cfg, progress_userdata)) {
		ws->progress = cfg->progress;
		ws->progress_userdata = cfg->progress_userdata;
	}
	if ((r = docker_engine_connect(&ws->engine, ws->opts.host, 0)) < 0 ||
	    (r = find_helpers(ws)) < 0 || (r = docker_runtime_check(ws)) < 0 ||
	    (r = pick_user(ws, cfg)) < 0 || (volume && (r = docker_volume_setup(ws, cfg)) < 0) ||
	    (r = make_control_dir(ws, cfg)) < 0 || (r = docker_network_start(ws, cfg)) < 0 ||
	    (r = docker_container_up(ws)) < 0)
		return r;
	docker_audit_replaced(ws, cfg);
	return 0;
}

static int docker_open(const sbx_backend_config *cfg, void **state)
{
	struct docker_ws *ws = calloc(1, sizeof *ws);
	int r;

	*state = NULL;
	if (!ws)
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	ws->keepalive = -1;
	pthread_mutex_init(&ws->lock, NULL);
	r = setup(ws, cfg);
	/* Reports belong to the open: a later reset has nobody listening. */
	ws->progress = NULL;
	ws->progress_userdata = NULL;
	if (r < 0) {
		ws_free(ws);
		return r;
	}
	*state = ws;
	return 0;
}

static int docker_close(void *state)
{
	struct docker_ws *ws = state;
	int r = 0;

	if (!ws)
		return 0;
	docker_kill_all(ws, true);
	if (!ws->opts.detached)
		r = docker_container_remove(ws);
	if (r == 0)
		r = docker_volume_close(ws);
	ws_free(ws);
	return r;
}

static int docker_reset(void *state)
{
	struct docker_ws *ws = state;
	int r;

	docker_kill_all(ws, false);
	if ((r = docker_container_remove(ws)) < 0 || (r = docker_volume_reset(ws)) < 0)
		return r;
	return docker_container_up(ws);
}

static const char *docker_root(void *state)
{
	return DOCKER_WORKSPACE;
}

static const char *docker_host_dir(void *state)
{
	return ((struct docker_ws *)state)->workdir;
}

static const char *const *docker_protected(void *state)
{
	return sbx_default_protected_paths;
}

/* The container's writable places besides /workspace: its /tmp tmpfs (container.c) and the
 * engine's /dev/shm; the root file system is read-only (ReadonlyRootfs). */
static const char *const *docker_writable(void *state)
{
	static const char *const places[] = { "/tmp", "/dev/shm", NULL };

	(void)state;
	return places;
}

const sbx_backend_ops sbx_backend_docker = {
	.size = sizeof(sbx_backend_ops),
	.abi_version = SBX_BACKEND_ABI_VERSION,
	.name = "docker",
	.caps = SBX_BACKEND_CAP_HOST_FILES | SBX_BACKEND_CAP_ISOLATED |
	        SBX_BACKEND_CAP_NETWORK_NONE | SBX_BACKEND_CAP_NETWORK_HOST |
	        SBX_BACKEND_CAP_NETWORK_ALLOWLIST | SBX_BACKEND_CAP_PTY,
	.probe = docker_probe,
	.open = docker_open,
	.close = docker_close,
	.reset = docker_reset,
	.root = docker_root,
	.host_dir = docker_host_dir,
	.spawn = docker_volume_spawn,
	.proc_wait = docker_proc_wait,
	.proc_signal = docker_proc_signal,
	.proc_kill = docker_proc_kill,
	.proc_release = docker_proc_release,
	.file_read = docker_file_read,
	.file_write = docker_file_write,
	.file_stat = docker_file_stat,
	.file_list = docker_file_list,
	.file_mkdir = docker_file_mkdir,
	.file_remove = docker_file_remove,
	.protected_paths = docker_protected,
	.set_network = docker_set_network,
	.base_env = docker_base_env,
	.workspace_caps = docker_workspace_caps,
	.file_tree = docker_file_tree,
	.description = "Docker-based",
	.writable_paths = docker_writable,
};
