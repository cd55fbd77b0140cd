/* The host side of agentsbx-proxy (src/proto/proxy_proto.h): starting the proxy of a workspace
 * in mode "allowlist", handing it new policies and bridge channels, stopping it. Used by the
 * sandbox backends (sandbox.c); any backend whose commands sit in a network namespace of
 * their own can use it the same way. */
#ifndef SBX_UTIL_NETPROXY_H
#define SBX_UTIL_NETPROXY_H

#include <stdint.h>

struct sbx_netproxy;

struct sbx_netproxy_settings {
	const char *workspace;        /* id, for the audit records */
	const char *network_json;     /* the validated network object (mode "allowlist") */
	int audit_dir_fd;             /* the state folder, or -1: no records */
	uint64_t audit_max_bytes;
	int audit_keep;
};

/* The settings of workspace id from what the core handed a backend's open: the policy and
 * the audit log's place and limits, each only where the core's config struct has it. */
struct sbx_backend_config;
void sbx_netproxy_settings_of(struct sbx_netproxy_settings *s, const char *workspace,
                              const struct sbx_backend_config *cfg);

/* Starts the proxy and waits until it is ready. who prefixes messages. */
int sbx_netproxy_start(const char *who, const struct sbx_netproxy_settings *s,
                       struct sbx_netproxy **out);
/* Replaces the policy (new connections follow it; open ones it refuses are closed). */
int sbx_netproxy_set_policy(struct sbx_netproxy *np, const char *network_json);
/* A new bridge channel: *sandbox_end (close-on-exec; the caller passes it to the sandbox's
 * init and closes its copy) carries client sockets to the proxy. */
int sbx_netproxy_bridge(struct sbx_netproxy *np, int *sandbox_end);
/* Stops the proxy (it records the connections it closes) and frees np. NULL is ignored. */
void sbx_netproxy_stop(struct sbx_netproxy *np);

/* The environment that points a sandbox's programs at the proxy (the bridge's port on its
 * loopback): HTTP(S)_PROXY, ALL_PROXY, NO_PROXY in both cases, npm's, pip's and git's
 * settings. Static, NULL-terminated. */
const char *const *sbx_netproxy_env(void);

#endif
