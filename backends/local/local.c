/* The local backend's ops table and workspace lifecycle. There is no isolation: the root is
 * the host directory itself, and the core serves the file operations on it. What the backend
 * adds is process hygiene: every command runs under agentsbx-run, which kills whatever the
 * command leaves behind, and the workspace kills every live command on reset and close. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "local.h"

#define RUNNER_NAME "agentsbx-run"

/* The runner is started after the chdir into the command's cwd, so its path must be
 * absolute even when $SBX_HELPER_DIR was given relative. */
static int find_runner(char **path)
{
	_cleanup_free_ char *found = NULL;
	char err[256];
	int r = sbx_helper_path(RUNNER_NAME, &found);

	if (r < 0) {
		snprintf(err, sizeof err, "%s", sbx_last_error());
		return sbx_fail(-SBX_EBACKEND, "local: %s", err);
	}
	*path = realpath(found, NULL);
	if (!*path)
		return sbx_fail(-SBX_EBACKEND, "local: %s: %s", found, strerror(errno));
	return 0;
}

static int local_probe(char *detail, size_t len)
{
	_cleanup_free_ char *path = NULL;
	int r = find_runner(&path);

	if (r < 0) {
		if (detail && len)
			snprintf(detail, len, "%s", sbx_last_error());
		return r;
	}
	if (detail && len)
		snprintf(detail, len, "no isolation: commands run on the host through %s", path);
	return 0;
}

static void local_ws_free(struct local_ws *ws)
{
	if (!ws)
		return;
	sbx_runclient_set_destroy(&ws->live);
	free(ws->workdir);
	free(ws->runner);
	free(ws);
}

static int local_open(const sbx_backend_config *cfg, void **state)
{
	struct local_ws *ws;
	int r;

	*state = NULL;
	if (!cfg->workdir)
		return sbx_fail(-SBX_EINVAL, "local: a workdir is required");
	/* Refuse rather than silently hand out the host's network to someone who asked for none. */
	if (cfg->network_mode && strcmp(cfg->network_mode, "host") != 0)
		return sbx_fail(-SBX_ECONFIG, "local: network mode '%s' cannot be enforced: "
		                "commands share the host's network (use an isolating backend)",
		                cfg->network_mode);
	if (SBX_BACKEND_CONFIG_HAS(cfg, limits) &&
	    cfg->limits.pids)
		return sbx_fail(-SBX_ECONFIG, "config: key 'limits.pids': the local backend has no "
		                "cgroup to enforce it (limits.processes sets RLIMIT_NPROC)");
	if (SBX_BACKEND_CONFIG_HAS(cfg, read_only) &&
	    cfg->read_only)
		return sbx_fail(-SBX_ECONFIG, "config: key 'mode': the local backend cannot keep "
		                "commands from writing the workspace (use an isolating backend such as "
		                "ns for \"read-only\")");
	ws = calloc(1, sizeof *ws);
	if (!ws)
		return sbx_fail(-SBX_ENOMEM, "local: out of memory");
	sbx_runclient_set_init(&ws->live);
	r = find_runner(&ws->runner);
	if (r < 0) {
		local_ws_free(ws);
		return r;
	}
	ws->workdir = strdup(cfg->workdir);
	if (!ws->workdir) {
		local_ws_free(ws);
		return sbx_fail(-SBX_ENOMEM, "local: out of memory");
	}
	if (SBX_BACKEND_CONFIG_HAS(cfg, limits))
		ws->limits = cfg->limits;
	*state = ws;
	return 0;
}

static int local_reset(void *state)
{
	sbx_runclient_kill_all(&((struct local_ws *)state)->live, false);
	return 0;
}

static int local_close(void *state)
{
	struct local_ws *ws = state;

	if (!ws)
		return 0;
	sbx_runclient_kill_all(&ws->live, true);
	local_ws_free(ws);
	return 0;
}

static const char *local_root(void *state)
{
	return ((struct local_ws *)state)->workdir;
}

const sbx_backend_ops sbx_backend_local = {
	.size = sizeof(sbx_backend_ops),
	.abi_version = SBX_BACKEND_ABI_VERSION,
	.name = "local",
	/* No isolation, so neither ISOLATED nor NETWORK_NONE: commands see the host as it is. */
	.caps = SBX_BACKEND_CAP_HOST_FILES | SBX_BACKEND_CAP_NETWORK_HOST |
	        SBX_BACKEND_CAP_HOST_VIEW | SBX_BACKEND_CAP_PTY,
	.probe = local_probe,
	.open = local_open,
	.close = local_close,
	.reset = local_reset,
	.root = local_root,
	.host_dir = local_root,
	.spawn = local_spawn,
	.proc_wait = sbx_runclient_wait,
	.proc_signal = sbx_runclient_signal,
	.proc_kill = sbx_runclient_kill,
	.proc_release = sbx_runclient_release,
	.description = "local",
};
