/* Wire protocol between the library (backends/common/netproxy.c) and agentsbx-proxy, the network
 * proxy of one workspace in mode "allowlist" (helpers/proxy/).
 *
 * The library starts `agentsbx-proxy --proto 1` (posix_spawn, never fork) with
 *   fd 3: one end of a SOCK_SEQPACKET socketpair, the control channel;
 *   fd 4: a memfd holding the start settings as JSON:
 *           {"workspace": id, "network": {the validated network object},
 *            "audit": {"max_bytes": n, "keep": n}}
 *   fd 5: (optional) the workspace's state folder, where the proxy appends its audit records
 *         to audit.jsonl exactly as the library does (src/util/auditlog.h).
 * It answers one SBX_PROXY_READY, or one SBX_PROXY_ERROR with the reason and exits. Then
 * each request the library sends is answered with SBX_PROXY_OK or SBX_PROXY_ERROR:
 *   SBX_PROXY_POLICY  carries a memfd (SCM_RIGHTS) with a new network object: the lists of
 *                     mode "allowlist" it replaces apply to every new connection, and open
 *                     connections they would refuse are closed;
 *   SBX_PROXY_BRIDGE  carries one end of a SOCK_STREAM socketpair: a bridge channel. The other
 *                     end goes to the sandbox's init (init_proto.h, SBX_INIT_BRIDGE_FD), whose
 *                     bridge accepts TCP connections on 127.0.0.1:SBX_PROXY_PORT inside the
 *                     sandbox and hands each one over as an SCM_RIGHTS fd attached to one byte.
 *                     The proxy then serves the client's socket itself: no byte of any
 *                     connection passes through a process inside the sandbox.
 * When the control channel closes, or the process that made it dies (seen through a pidfd,
 * in case a child it forked still holds the channel), the proxy closes every connection,
 * records each, and exits. */
#ifndef SBX_PROXY_PROTO_H
#define SBX_PROXY_PROTO_H

#include <stdint.h>

#define SBX_PROXY_PROTO_VERSION 1
#define SBX_PROXY_CONTROL_FD 3
#define SBX_PROXY_SETTINGS_FD 4
#define SBX_PROXY_STATE_DIR_FD 5

/* The loopback port inside the sandbox where the bridge listens (squid's customary port). */
#define SBX_PROXY_PORT 3128

#define SBX_PROXY_SETTINGS_MAX (4u << 20)

enum sbx_proxy_kind {
	SBX_PROXY_READY = 1,
	SBX_PROXY_ERROR = 2,
	SBX_PROXY_OK = 3,
	SBX_PROXY_POLICY = 4,
	SBX_PROXY_BRIDGE = 5,
};

struct sbx_proxy_request {
	uint32_t kind;                /* SBX_PROXY_POLICY or SBX_PROXY_BRIDGE, with one fd */
};

struct sbx_proxy_reply {
	uint32_t kind;                /* SBX_PROXY_READY, SBX_PROXY_OK or SBX_PROXY_ERROR */
	char message[508];            /* SBX_PROXY_ERROR: why */
};

#endif
