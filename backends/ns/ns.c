/* The ns backend: our own Linux-namespace sandbox, the embedded default. One resident
 * sandbox per workspace (src/util/sandbox.c, helpers/init/): built directly with user, mount,
 * PID, network, IPC, UTS and cgroup namespaces where the host allows it, or through the
 * system bubblewrap where only that is allowed (Ubuntu's AppArmor rule). */
#include <stdio.h>

#include "backends/sandbox/sandbox.h"

static int ns_probe(char *detail, size_t len)
{
	enum sbx_sandbox_mode mode;
	char why[400];
	int r = sbx_sandbox_pick_mode(SBX_SANDBOX_AUTO, &mode, why, sizeof why);

	(void)mode;
	snprintf(detail, len, "%s", why);
	return r;
}

static int ns_open(const sbx_backend_config *cfg, void **state)
{
	return sbx_sandbox_backend_open("ns", true, cfg, state);
}

const sbx_backend_ops sbx_backend_ns =
	SBX_SANDBOX_BACKEND_OPS("ns", "sandboxed (Linux namespaces)", ns_probe, ns_open);
