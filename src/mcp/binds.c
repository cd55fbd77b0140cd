/* What an ns/bwrap sandbox needs for MCP: the gateway binary and a folder it can listen in.
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
#include "init/sandbox.h"
#include "mcp/mcp.h"
#include "mcp/proto.h"
#include "util/error.h"

static int append_bind(struct sbx_bind **binds, size_t *n, char *source, const char *dest,
                       bool writable)
{
	struct sbx_bind *grown = realloc(*binds, (*n + 2) * sizeof *grown);
	char *d = strdup(dest);

	if (!grown || !d || !source) {
		if (grown)
			*binds = grown;
		free(d);
		free(source);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	*binds = grown;
	grown[*n] = (struct sbx_bind){ .source = source, .dest = d, .writable = writable };
	grown[++*n] = (struct sbx_bind){ 0 };
	return 0;
}

/* .agentsbx/mcp, made private to the user; a symlink there is refused, not followed. */
static int make_run_dir(const char *workdir, char **out)
{
	struct stat st;
	char *path = NULL;

	if (asprintf(&path, "%s/%s", workdir, SBX_MCP_RUN_DIR) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if ((mkdir(path, 0700) < 0 && errno != EEXIST) || lstat(path, &st) < 0 ||
	    !S_ISDIR(st.st_mode)) {
		int e = errno ? errno : ENOTDIR;

		free(path);
		return sbx_fail(sbx_errno_code(e), "mcp: %s/%s is not a usable directory", workdir,
		                SBX_MCP_RUN_DIR);
	}
	*out = path;
	return 0;
}

int sbx_mcp_sandbox_binds(const char *workdir, bool run_folder, struct sbx_bind **binds,
                          size_t *n)
{
	char *gateway = NULL, *run = NULL;
	int r;

	/* Without a gateway binary there is no MCP; the sandbox still works. */
	if (sbx_helper_path(SBX_MCP_GATEWAY_NAME, &gateway) < 0)
		return 0;
	*strrchr(gateway, '/') = '\0';
	if ((r = append_bind(binds, n, gateway, SBX_MCP_HELPERS_VIEW, false)) < 0 || !run_folder)
		return r;
	if ((r = make_run_dir(workdir, &run)) < 0)
		return r;
	return append_bind(binds, n, run, SBX_MCP_RUN_VIEW, true);
}
