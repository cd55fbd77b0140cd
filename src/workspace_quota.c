/* Workspaces with limits.disk_bytes or limits.tmp_bytes: which backends may have them, and
 * the root of a capped workspace, which lives in the sandbox's own file system rather than
 * in the host directory (the backend hands its fd over: files_root_fd in backend.h). */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "util/error.h"

int sbx_workspace_check_disk_limits(const sbx_workspace *ws)
{
	const sbx_config *cfg = ws->cfg;
	const char *key = cfg->disk_bytes ? "limits.disk_bytes" : "limits.tmp_bytes";

	if (!cfg->disk_bytes && !cfg->tmp_bytes)
		return 0;
	if (!(ws->caps & SBX_BACKEND_CAP_DISK_LIMITS))
		return sbx_fail(-SBX_ECONFIG, "config: key '%s': backend '%s' cannot enforce it%s",
		                key, ws->ops->name, ws->caps & SBX_BACKEND_CAP_HOST_VIEW
		                ? " (it has no sandbox: commands write the host's disk directly)" : "");
	if (!cfg->disk_bytes)
		return 0;
	if (cfg->baseline == SBX_BASELINE_KEEP)
		return sbx_fail(-SBX_ECONFIG, "config: key 'baseline': \"keep\" cannot keep the files "
		                "of a capped workspace (limits.disk_bytes) across a reset: its file "
		                "system is made anew");
	if (cfg->mcp_stream == 0)
		return sbx_fail(-SBX_ECONFIG, "config: key 'mcp.transport': \"socket\" needs a run "
		                "folder on the host, which a capped workspace (limits.disk_bytes) does "
		                "not have; use \"stream\"");
	return 0;
}

static int backend_files_root(const sbx_workspace *ws)
{
	const sbx_backend_ops *ops = ws->ops;

	if (!ops->files_root_fd)
		return -1;
	return ops->files_root_fd(ws->state);
}

int sbx_workspace_adopt_files_root(sbx_workspace *ws)
{
	int fd = backend_files_root(ws), own;

	if (fd < 0)
		return 0;
	if ((own = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0)
		return sbx_fail(sbx_errno_code(errno), "workspace: dup its root: %s", strerror(errno));
	if (ws->root_fd >= 0)
		close(ws->root_fd);
	ws->root_fd = own;
	ws->files_in_sandbox = true;
	return 0;
}
