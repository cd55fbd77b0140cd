/* Network mode "allowlist" on docker: the container has no network but its loopback
 * (NetworkMode none), and the only way out is the workspace's proxy on the host
 * (backends/common/netproxy.h), as on ns. Inside, the exec server — the container's main process —
 * forks the bridge (helpers/init/bridge.c) that listens on 127.0.0.1:3128 and hands each
 * accepted socket to the proxy as an fd. The bridge channel reaches the server over its
 * control socket, which lives in the bound state folder: SCM_RIGHTS carries the fd across
 * the container's namespaces. The proxy lives with this host process, so only an ephemeral
 * container with the exec server can have it. */
#include <string.h>
#include <unistd.h>

#include "docker.h"
#include "proto/proxy_proto.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fdpass.h"
#include "util/json.h"
#include "backends/common/netproxy.h"

static int refuse(const char *key, const char *why)
{
	return sbx_fail(-SBX_ECONFIG, "config: key '%s': network mode 'allowlist' %s", key, why);
}

int docker_network_start(struct docker_ws *ws, const sbx_backend_config *cfg)
{
	struct sbx_netproxy_settings s;

	sbx_netproxy_settings_of(&s, ws->id, cfg);
	if (!ws->allowlist)
		return 0;
	if (!ws->server)
		return refuse("docker.exec", "needs the exec server (\"server\", the default): with "
		              "\"api\" nothing inside the container could hand connections to the "
		              "proxy");
	if (ws->opts.detached)
		return refuse("docker.detached", "cannot be used by a detached container (its proxy "
		              "lives with the host process)");
	if (!s.network_json)
		return sbx_fail(-SBX_ECONFIG, "docker: network mode 'allowlist' came without its "
		                "policy");
	return sbx_netproxy_start(DOCKER_WHO, &s, &ws->proxy);
}

/* Spec member of the exec server (helpers/init/spec.c): where its bridge listens. */
void docker_network_spec(const struct docker_ws *ws, sbx_buf *spec)
{
	if (ws->proxy)
		sbx_buf_printf(spec, ",\"proxy_port\":%d", SBX_PROXY_PORT);
}

/* Right after the spec: the server takes the bridge channel as its second message. */
int docker_network_hand_bridge(struct docker_ws *ws)
{
	_cleanup_close_ int bridge = -1;
	int r;

	if (!ws->proxy)
		return 0;
	if ((r = sbx_netproxy_bridge(ws->proxy, &bridge)) < 0)
		return r;
	if ((r = sbx_send_with_fds(ws->keepalive, "b", 1, &bridge, 1)) < 0)
		return sbx_fail(-SBX_EBACKEND, "docker: the exec server went away: %s", strerror(-r));
	return 0;
}

void docker_network_stop(struct docker_ws *ws)
{
	sbx_netproxy_stop(ws->proxy);
	ws->proxy = NULL;
}

/* Within the mode the workspace runs with, the proxy's lists change live; another mode
 * would need another container. */
int docker_set_network(void *state, const char *network_json)
{
	struct docker_ws *ws = state;
	const char *mode = ws->allowlist ? "allowlist" : ws->network;
	sbx_json *v = NULL;
	const sbx_json *m;
	char err[64];
	bool same;

	if (!strcmp(mode, "bridge"))
		mode = "host";
	if (sbx_json_parse(network_json, strlen(network_json), &v, err, sizeof err) < 0)
		return sbx_fail(-SBX_ECONFIG, "docker: network policy: %s", err);
	m = sbx_json_get(v, "mode");
	same = m && m->type == SBX_JSON_STRING && !strcmp(m->str, mode);
	sbx_json_free(v);
	if (!same)
		return sbx_fail(-SBX_ENOSYS, "docker: the container runs with network mode '%s', "
		                "which cannot change while it runs", mode);
	return ws->proxy ? sbx_netproxy_set_policy(ws->proxy, network_json) : 0;
}

const char *const *docker_base_env(void *state)
{
	return ((struct docker_ws *)state)->proxy ? sbx_netproxy_env() : NULL;
}
