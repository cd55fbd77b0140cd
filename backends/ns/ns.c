/* The ns backend: our own Linux-namespace sandbox, the embedded default. One resident
 * sandbox per workspace (backends/sandbox, helpers/init/): built directly with user, mount,
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

/* Only the name, the probe and the open differ between the tables on the sandbox archive. */
const sbx_backend_ops sbx_backend_ns = {
	.size = sizeof(sbx_backend_ops),
	.abi_version = SBX_BACKEND_ABI_VERSION,
	.name = "ns",
	.caps = SBX_SANDBOX_CAPS,
	.probe = ns_probe,
	.open = ns_open,
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
	.description = "sandboxed (Linux namespaces)",
	.detached_running = sbx_sandbox_backend_detached_running,
	.detached_stop = sbx_sandbox_backend_detached_stop,
	.writable_paths = sbx_sandbox_backend_writable,
};
