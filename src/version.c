/* Version information and the library's own free function. */
#include <stdlib.h>

#include <agentsbx/agentsbx.h>
#include "sbx-build-config.h"

const char *sbx_version(void)
{
	return SBX_VERSION;
}

int sbx_abi_version(void)
{
	return SBX_ABI_VERSION;
}

void sbx_free(void *ptr)
{
	free(ptr);
}
