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

/* Only the name, the probe and the open differ between the tables on the sandbox archive. */
const sbx_backend_ops sbx_backend_bwrap = {
	.size = sizeof(sbx_backend_ops),
	.abi_version = SBX_BACKEND_ABI_VERSION,
	.name = "bwrap",
	.caps = SBX_SANDBOX_CAPS,
	.probe = bwrap_probe,
	.open = bwrap_open,
	.close = sbx_sandbox_backend_close,
	.reset = sbx_sandbox_backend_reset,
	.root = sbx_sandbox_backend_root,
	.host_dir = sbx_sandbox_backend_host_dir,
	.spawn = sbx_sandbox_backend_spawn,
	.proc_wait = sbx_runclient_wait,
	.proc_signal = sbx_runclient_signal,
	.proc_kill = sbx_runclient_kill,
	.proc_release = sbx_runclient_release,
	.protected_paths = sbx_sandbox_backend_protected,
	.set_network = sbx_sandbox_backend_set_network,
	.base_env = sbx_sandbox_backend_env,
	.files_root_fd = sbx_sandbox_backend_files_root,
	.protect_now = sbx_sandbox_backend_protect_now,
	.description = "sandboxed (bubblewrap)",
	.detached_running = sbx_sandbox_backend_detached_running,
	.detached_stop = sbx_sandbox_backend_detached_stop,
	.writable_paths = sbx_sandbox_backend_writable,
};
