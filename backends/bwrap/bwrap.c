/* The bwrap backend: the ns sandbox always started through the system /usr/bin/bwrap, for
 * hosts that allow user namespaces only to that path (Ubuntu 23.10+ AppArmor). bubblewrap
 * builds the namespaces and the root; agentsbx-init runs inside as PID 1 and serves. */
#include <stdio.h>

#include "backends/sandbox/sandbox.h"

static int bwrap_probe(char *detail, size_t len)
{
	return sbx_sandbox_probe(SBX_SANDBOX_BWRAP, detail, len);
}

static int bwrap_open(const sbx_backend_config *cfg, void **state)
{
	return sbx_sandbox_backend_open("bwrap", false, cfg, state);
}

const sbx_backend_ops sbx_backend_bwrap =
	SBX_SANDBOX_BACKEND_OPS("bwrap", "sandboxed (bubblewrap)", bwrap_probe, bwrap_open);
