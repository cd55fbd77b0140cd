/* What a sandbox with SBX_BACKEND_CAP_HELPER_BINDS needs for MCP: the gateway binary and a
 * folder it can listen in. The core makes and checks them and hands them to the backend's
 * open() as sbx_backend_config.binds; the backend only binds them.
 *
 * The helper directory is bound read-only at SBX_MCP_HELPERS_VIEW: the host's build or
 * libexec tree is not otherwise visible inside, and a read-only bind (unlike a copy into the
 * workspace) cannot be swapped by the agent. The run folder .agentsbx/mcp is bound writable
 * at SBX_MCP_RUN_VIEW, below /tmp where Landlock allows writes: the rest of .agentsbx stays
 * read-only inside, and the host reaches the gateway's socket through the same folder. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "mcp/mcp.h"
#include "proto/mcp_proto.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/statedir.h"

/* Takes source (malloc'd, freed on failure); dest is a constant of backend.h. */
static int append_bind(sbx_backend_bind **binds, size_t *n, char *source, const char *dest,
                       bool writable)
{
	sbx_backend_bind *grown = source ? realloc(*binds, (*n + 1) * sizeof *grown) : NULL;

	if (!grown) {
		free(source);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	*binds = grown;
	grown[(*n)++] = (sbx_backend_bind){ .source = source, .dest = dest, .writable = writable };
	return 0;
}

void sbx_mcp_helper_binds_free(sbx_backend_bind *binds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)binds[i].source);
	free(binds);
}

/* The state folder's mcp/, made private to the user, reached from the workdir's fd (or the
 * temporary state folder's) without following a link: a link planted there is refused, and
 * nothing is made outside the workspace. The bind names it by path; the init opens a source
 * in the workspace beneath the workspace, and bubblewrap gets an fd of it (sandbox.c). */
static int make_run_dir(const sbx_backend_config *cfg, char **out)
{
	const char *temp = SBX_BACKEND_CONFIG_HAS(cfg, state_dir) ? cfg->state_dir : NULL;
	_cleanup_close_ int root = -1, dir = -1;
	char msg[512];
	int r;

	if (temp)
		r = sbx_statedir_open_below(cfg->state_dir_fd, temp, SBX_MCP_RUN_SUBDIR, 0700, &dir);
	else if ((root = open(cfg->workdir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = sbx_fail(sbx_errno_code(errno), "open %s: %s", cfg->workdir, strerror(errno));
	else
		r = sbx_statedir_open(root, SBX_MCP_RUN_SUBDIR, 0700, &dir);
	if (r < 0) {
		snprintf(msg, sizeof msg, "%s", sbx_last_error());
		return sbx_fail(r, "mcp: the gateway's run folder: %s", msg);
	}
	if ((temp ? asprintf(out, "%s/%s", temp, SBX_MCP_RUN_SUBDIR)
	          : asprintf(out, "%s/%s", cfg->workdir, SBX_MCP_RUN_DIR)) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	return 0;
}

int sbx_mcp_helper_binds(const sbx_backend_config *cfg, bool run_folder,
                         sbx_backend_bind **binds, size_t *n)
{
	char *gateway = NULL, *run = NULL;
	int r;

	/* Without a gateway binary there is no MCP; the sandbox still works. */
	if (sbx_helper_path(SBX_MCP_GATEWAY_NAME, &gateway) < 0)
		return 0;
	*strrchr(gateway, '/') = '\0';
	if ((r = append_bind(binds, n, gateway, SBX_MCP_HELPERS_VIEW, false)) < 0 || !run_folder)
		return r;
	if ((r = make_run_dir(cfg, &run)) < 0)
		return r;
	return append_bind(binds, n, run, SBX_MCP_RUN_VIEW, true);
}
