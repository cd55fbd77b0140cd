/* The core's half of network policies (network.c). */
#ifndef SBX_NETWORK_H
#define SBX_NETWORK_H

#include "internal.h"

/* The mode the backend must enforce: the config's, or the backend's default ("none" where it
 * can, else "host"). A mode the backend's caps lack is refused, naming network.mode. */
int sbx_network_choose_mode(const sbx_workspace *ws, const char **mode);

/* The audit record of the mode a workspace opened with (and its lists, for "allowlist"; the
 * exposure, for "host"). */
void sbx_network_audit_open(sbx_workspace *ws, const char *mode);

#endif
