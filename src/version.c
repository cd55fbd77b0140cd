/* Version information and the library's own free function. */
#include <stdlib.h>

#include <agentsbx/agentsbx.h>

/* Both come from the generated <agentsbx/version.h>, that is from meson.build's version. */
const char *sbx_version(void)
{
	return SBX_VERSION_STRING;
}

int sbx_version_number(void)
{
	return SBX_VERSION_NUMBER;
}

int sbx_abi_version(void)
{
	return SBX_ABI_VERSION;
}

void sbx_free(void *ptr)
{
	free(ptr);
}
