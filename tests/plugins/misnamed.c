/* A plugin whose file name and self-declared name disagree: refused, so a file can't
 * impersonate another backend. */
#include <agentsbx/backend.h>

static const sbx_backend_ops misnamed_ops = {
	.size = sizeof misnamed_ops,
	.abi_version = SBX_BACKEND_ABI_VERSION,
	.name = "local",
};

__attribute__((visibility("default"))) const sbx_backend_ops *sbx_backend_plugin_entry(void);

const sbx_backend_ops *sbx_backend_plugin_entry(void)
{
	return &misnamed_ops;
}
