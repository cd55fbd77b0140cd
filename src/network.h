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

/* Connections the library itself makes on the workspace's behalf (a remote MCP server's URL):
 * may the host connect to host:port? Decided by the workspace's network policy with the rules
 * its proxy applies (util/netpolicy.c): mode "none" refuses, "host" allows, "allowlist" checks
 * the target and then each resolved address (the DNS rebinding rule). Every decision is an
 * audit record (kind "network", "for": who). On success *pin is "host:port:address" of the
 * address that passed, for the caller to connect to exactly that (CURLOPT_RESOLVE), or ""
 * when there is nothing to pin (mode "host", an IP literal). Refusals are -SBX_EPERM with a
 * message naming who and the policy. */
int sbx_network_host_connect(sbx_workspace *ws, const char *who, const char *host,
                             unsigned port, char *pin, size_t pin_len);

#endif
