/* The host side of agentsbx-proxy (netproxy.h, src/proto/proxy_proto.h). */
#include <errno.h>
#include <stddef.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "internal.h"
#include "proto/proxy_proto.h"
#include "util/fdpass.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "backends/common/launch.h"
#include "backends/common/netproxy.h"

#define PROXY_NAME "agentsbx-proxy"
#define REPLY_TIMEOUT_MS 10000
#define STOP_TIMEOUT_MS 5000

#define PROXY_URL "http://127.0.0.1:3128"

struct sbx_netproxy {
	const char *who;
	int ctl;
	pid_t pid;
	pthread_mutex_t lock;         /* one request at a time on the control channel */
};

static const char *const proxy_env[] = {
	"HTTP_PROXY=" PROXY_URL, "HTTPS_PROXY=" PROXY_URL,
	"http_proxy=" PROXY_URL, "https_proxy=" PROXY_URL,
	/* The same port speaks SOCKS5; socks5h: the proxy resolves names, as it must. */
	"ALL_PROXY=socks5h://127.0.0.1:3128", "all_proxy=socks5h://127.0.0.1:3128",
	"NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1",
	"npm_config_proxy=" PROXY_URL, "npm_config_https_proxy=" PROXY_URL,
	"PIP_PROXY=" PROXY_URL,
	"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.proxy", "GIT_CONFIG_VALUE_0=" PROXY_URL,
	NULL,
};


void sbx_netproxy_settings_of(struct sbx_netproxy_settings *s, const char *workspace,
                              const sbx_backend_config *cfg)
{
	*s = (struct sbx_netproxy_settings){
		.workspace = workspace,
		.network_json = SBX_BACKEND_CONFIG_HAS(cfg, network_json) ? cfg->network_json : NULL,
		.audit_dir_fd = SBX_BACKEND_CONFIG_HAS(cfg, audit_keep) ? cfg->audit_dir_fd : -1,
		.audit_max_bytes = SBX_BACKEND_CONFIG_HAS(cfg, audit_keep) ? cfg->audit_max_bytes : 0,
		.audit_keep = SBX_BACKEND_CONFIG_HAS(cfg, audit_keep) ? cfg->audit_keep : 0,
	};
}

const char *const *sbx_netproxy_env(void)
{
	return proxy_env;
}

/* Waits for one reply; 0 for READY/OK, else the failure with the proxy's message. */
static int await_reply(struct sbx_netproxy *np, const char *what)
{
	struct pollfd pfd = { .fd = np->ctl, .events = POLLIN };
	struct sbx_proxy_reply r = { 0 };
	ssize_t n;

	if (poll(&pfd, 1, REPLY_TIMEOUT_MS) == 0)
		return sbx_fail(-SBX_ETIMEDOUT, "%s: the network proxy did not answer (%s)", np->who,
		                what);
	do
		n = recv(np->ctl, &r, sizeof r, 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof r)
		return sbx_fail(-SBX_EIO, "%s: the network proxy exited (%s)", np->who, what);
	r.message[sizeof r.message - 1] = '\0';
	if (r.kind == SBX_PROXY_READY || r.kind == SBX_PROXY_OK)
		return 0;
	if (r.kind == SBX_PROXY_ERROR)
		return sbx_fail(-SBX_ECONFIG, "%s: network proxy: %s", np->who, r.message);
	return sbx_fail(-SBX_EPROTO, "%s: the network proxy broke its protocol", np->who);
}

static int send_with_fd(struct sbx_netproxy *np, uint32_t kind, int fd)
{
	struct sbx_proxy_request req = { .kind = kind };
	int r = sbx_send_with_fds(np->ctl, &req, sizeof req, &fd, 1);

	if (r < 0)
		return sbx_fail(-SBX_EIO, "%s: the network proxy is gone: %s", np->who,
		                r == -EIO ? "short write" : strerror(-r));
	return 0;
}

/* A request with one fd, and its answer. */
static int request(struct sbx_netproxy *np, uint32_t kind, int fd, const char *what)
{
	int r;

	pthread_mutex_lock(&np->lock);
	r = send_with_fd(np, kind, fd);
	if (r == 0)
		r = await_reply(np, what);
	pthread_mutex_unlock(&np->lock);
	return r;
}

static char *settings_json(const struct sbx_netproxy_settings *s)
{
	sbx_buf b = { 0 };

	sbx_buf_puts(&b, "{\"workspace\":");
	sbx_buf_json_string(&b, s->workspace, strlen(s->workspace));
	sbx_buf_printf(&b, ",\"network\":%s,\"audit\":{\"max_bytes\":%llu,\"keep\":%d}}",
	               s->network_json, (unsigned long long)s->audit_max_bytes, s->audit_keep);
	return b.oom ? (sbx_buf_free(&b), NULL) : sbx_buf_steal(&b, NULL);
}

static int launch(struct sbx_netproxy *np, const struct sbx_netproxy_settings *s)
{
	static const char *const argv[] = { PROXY_NAME, "--proto", "1", NULL };
	_cleanup_free_ char *path = NULL, *settings = NULL;
	_cleanup_close_ int settings_fd = -1, child_ctl = -1;
	int sv[2], r, err;

	if ((r = sbx_helper_path(PROXY_NAME, &path)) < 0) {
		char why[512];
		snprintf(why, sizeof why, "%s", sbx_last_error());
		return sbx_fail(-SBX_EBACKEND, "%s: network mode 'allowlist' needs its proxy: %s",
		                np->who, why);
	}
	if (!(settings = settings_json(s)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if ((settings_fd = sbx_memfd_with("agentsbx-proxy-settings", settings,
	                                  strlen(settings))) < 0)
		return settings_fd;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return sbx_fail(sbx_errno_code(errno), "%s: socketpair: %s", np->who, strerror(errno));
	np->ctl = sv[0];
	child_ctl = sv[1];
	const int fds[3] = { child_ctl, settings_fd, s->audit_dir_fd };
	err = sbx_spawn_with_fds(path, argv, fds, 3, -1, &np->pid);
	if (err) {
		np->pid = -1;
		return sbx_fail(-SBX_EBACKEND, "%s: start %s: %s", np->who, path, strerror(err));
	}
	/* Only the proxy may hold the other end: its closing is how the proxy learns the end. */
	close(SBX_TAKE_FD(child_ctl));
	return await_reply(np, "start");
}

int sbx_netproxy_start(const char *who, const struct sbx_netproxy_settings *s,
                       struct sbx_netproxy **out)
{
	struct sbx_netproxy *np = calloc(1, sizeof *np);
	int r;

	*out = NULL;
	if (!np)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	np->who = who;
	np->ctl = -1;
	np->pid = -1;
	pthread_mutex_init(&np->lock, NULL);
	if ((r = launch(np, s)) < 0) {
		char why[1024];
		snprintf(why, sizeof why, "%s", sbx_last_error());
		sbx_netproxy_stop(np);
		return sbx_fail(r, "%s", why);
	}
	*out = np;
	return 0;
}

int sbx_netproxy_set_policy(struct sbx_netproxy *np, const char *network_json)
{
	_cleanup_close_ int fd = sbx_memfd_with("agentsbx-proxy-policy", network_json,
	                                        strlen(network_json));

	if (fd < 0)
		return fd;
	return request(np, SBX_PROXY_POLICY, fd, "new policy");
}

int sbx_netproxy_bridge(struct sbx_netproxy *np, int *sandbox_end)
{
	_cleanup_close_ int proxy_end = -1;
	int sv[2], r;

	*sandbox_end = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return sbx_fail(sbx_errno_code(errno), "%s: socketpair: %s", np->who, strerror(errno));
	proxy_end = sv[0];
	if ((r = request(np, SBX_PROXY_BRIDGE, proxy_end, "bridge")) < 0) {
		close(sv[1]);
		return r;
	}
	*sandbox_end = sv[1];
	return 0;
}

void sbx_netproxy_stop(struct sbx_netproxy *np)
{
	if (!np)
		return;
	if (np->ctl >= 0)
		close(np->ctl);
	sbx_reap_or_kill(np->pid, STOP_TIMEOUT_MS);
	pthread_mutex_destroy(&np->lock);
	free(np);
}
