/* A plugin built for a future backend ABI: the library must refuse it, not call into it. */
#include <stdlib.h>

#include <agentsbx/backend.h>

static int never_called(const sbx_backend_config *cfg, void **state)
{
	(void)cfg;
	(void)state;
	abort();
}

static const sbx_backend_ops badabi_ops = {
	.size = sizeof badabi_ops,
	.abi_version = SBX_BACKEND_ABI_VERSION + 1,
	.name = "badabi",
	.open = never_called,
};

__attribute__((visibility("default"))) const sbx_backend_ops *sbx_backend_plugin_entry(void);

const sbx_backend_ops *sbx_backend_plugin_entry(void)
{
	return &badabi_ops;
}
