/* agentsbx-proxy: start, the event loop and the end (proxy.h, proxy_proto.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "peer.h"
#include "proxy.h"
#include "proto/proxy_proto.h"
#include "util/buf.h"
#include "util/json.h"

#define RESOLVER_THREADS 4
#define FDS_PER_CONN 2
#define FDS_SPARE 64

int sbx_watch_add(struct sbx_proxy *px, struct sbx_watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	w->events = events;
	return epoll_ctl(px->epfd, EPOLL_CTL_ADD, w->fd, &ev);
}

void sbx_watch_set(struct sbx_proxy *px, struct sbx_watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	if (w->events == events)
		return;
	w->events = events;
	epoll_ctl(px->epfd, EPOLL_CTL_MOD, w->fd, &ev);
}

void sbx_watch_del(struct sbx_proxy *px, struct sbx_watch *w)
{
	epoll_ctl(px->epfd, EPOLL_CTL_DEL, w->fd, NULL);
}

static void send_reply(int kind, const char *message)
{
	struct sbx_proxy_reply r = { .kind = (uint32_t)kind };

	snprintf(r.message, sizeof r.message, "%s", message ? message : "");
	send(SBX_PROXY_CONTROL_FD, &r, sizeof r, MSG_NOSIGNAL);
}

/* The connection limit fits the fds this process may open: each connection takes two. */
static size_t fit_fd_limit(size_t wanted)
{
	struct rlimit lim;
	rlim_t need = (rlim_t)(wanted * FDS_PER_CONN + FDS_SPARE);

	if (getrlimit(RLIMIT_NOFILE, &lim) < 0)
		return 128;
	if (lim.rlim_cur < need) {
		lim.rlim_cur = lim.rlim_max < need ? lim.rlim_max : need;
		setrlimit(RLIMIT_NOFILE, &lim);
		getrlimit(RLIMIT_NOFILE, &lim);
	}
	if (lim.rlim_cur < need)
		return lim.rlim_cur > FDS_SPARE * 2 ? (size_t)(lim.rlim_cur - FDS_SPARE) / FDS_PER_CONN
		                                    : 32;
	return wanted;
}

static int take_settings(struct sbx_proxy *px, const sbx_json *root, char *err, size_t errlen)
{
	const sbx_json *ws = sbx_json_get(root, "workspace"), *net = sbx_json_get(root, "network");
	const sbx_json *audit = sbx_json_get(root, "audit");
	const sbx_json *max = audit ? sbx_json_get(audit, "max_bytes") : NULL;
	const sbx_json *keep = audit ? sbx_json_get(audit, "keep") : NULL;
	sbx_buf b = { 0 };
	int r;

	if (!ws || ws->type != SBX_JSON_STRING || !net) {
		snprintf(err, errlen, "settings: need \"workspace\" and \"network\"");
		return -1;
	}
	snprintf(px->workspace, sizeof px->workspace, "%s", ws->str);
	px->audit_max_bytes = max && max->type == SBX_JSON_INT && max->i > 0 ? (uint64_t)max->i
	                                                                     : 10u << 20;
	px->audit_keep = keep && keep->type == SBX_JSON_INT && keep->i >= 0 ? (int)keep->i : 3;
	sbx_json_write(&b, net);
	r = b.oom ? -1 : sbx_proxy_set_policy(px, b.data, b.len, err, errlen);
	sbx_buf_free(&b);
	return r;
}

static int read_settings(struct sbx_proxy *px, char *err, size_t errlen)
{
	char *text = malloc(SBX_PROXY_SETTINGS_MAX);
	sbx_json *root = NULL;
	ssize_t n = text ? pread(SBX_PROXY_SETTINGS_FD, text, SBX_PROXY_SETTINGS_MAX, 0) : -1;
	int r = -1;

	if (n <= 0 || n == SBX_PROXY_SETTINGS_MAX)
		snprintf(err, errlen, "settings: cannot read fd %d", SBX_PROXY_SETTINGS_FD);
	else if (sbx_json_parse(text, (size_t)n, &root, err, errlen) == 0)
		r = root->type == SBX_JSON_OBJECT ? take_settings(px, root, err, errlen) : -1;
	sbx_json_free(root);
	free(text);
	close(SBX_PROXY_SETTINGS_FD);
	return r;
}

static int setup(struct sbx_proxy *px, char *err, size_t errlen)
{
	struct stat st;
	int host_fd, resolver_fd;

	px->state_dir_fd = fstat(SBX_PROXY_STATE_DIR_FD, &st) == 0 && S_ISDIR(st.st_mode)
	                       ? SBX_PROXY_STATE_DIR_FD : -1;
	if (read_settings(px, err, errlen) < 0)
		return -1;
	px->max_conns = fit_fd_limit(SBX_PROXY_MAX_CONNS);
	px->conns = calloc(px->max_conns, sizeof *px->conns);
	px->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!px->conns || px->epfd < 0 ||
	    sbx_resolver_start(RESOLVER_THREADS, px->max_conns, &px->resolver, &resolver_fd) < 0) {
		snprintf(err, errlen, "setup: %s", strerror(errno ? errno : ENOMEM));
		return -1;
	}
	px->control = (struct sbx_watch){ .kind = W_CONTROL, .fd = SBX_PROXY_CONTROL_FD };
	px->resolver_watch = (struct sbx_watch){ .kind = W_RESOLVER, .fd = resolver_fd };
	if (sbx_watch_add(px, &px->control, EPOLLIN) < 0 ||
	    sbx_watch_add(px, &px->resolver_watch, EPOLLIN) < 0) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		return -1;
	}
	host_fd = sbx_pidfd_of_peer(SBX_PROXY_CONTROL_FD);
	px->host = (struct sbx_watch){ .kind = W_HOST, .fd = host_fd };
	if (host_fd >= 0)
		sbx_watch_add(px, &px->host, EPOLLIN);
	return 0;
}

static void collect_resolutions(struct sbx_proxy *px)
{
	struct sbx_resolution res[32];
	size_t n = sbx_resolver_collect(px->resolver, res, 32);

	for (size_t i = 0; i < n; i++)
		sbx_conn_resolved(px, &res[i]);
}

/* One epoll event; false when the proxy should stop. */
static bool dispatch(struct sbx_proxy *px, struct sbx_watch *w, uint32_t events)
{
	switch (w->kind) {
	case W_CONTROL:
		return sbx_control_event(px);
	case W_HOST:
		return false;             /* the library's process is gone */
	case W_RESOLVER:
		collect_resolutions(px);
		return true;
	case W_BRIDGE:
		sbx_bridge_event(px, w);
		return true;
	case W_CLIENT:
	case W_UPSTREAM:
	default:
		sbx_conn_event(px, w, events);
		return true;
	}
}

/* A handler may close a connection that still has an event further on in the batch (its
 * other socket, or any connection a policy change cuts): closed connections are only marked
 * during a batch and freed after it. */
static void run(struct sbx_proxy *px)
{
	struct epoll_event ev[256];
	int64_t next_sweep = sbx_now_ms() + 1000;

	while (!px->stopping) {
		int n = epoll_wait(px->epfd, ev, 256, 1000), i;

		if (n < 0 && errno != EINTR)
			break;
		for (i = 0; i < n && !px->stopping; i++)
			if (!dispatch(px, ev[i].data.ptr, ev[i].events))
				px->stopping = true;
		sbx_conn_reap(px);
		if (sbx_now_ms() >= next_sweep) {
			sbx_conn_sweep(px, sbx_now_ms());
			next_sweep = sbx_now_ms() + 1000;
		}
	}
}

int main(int argc, char **argv)
{
	struct sbx_proxy px = { .state_dir_fd = -1 };
	char err[480] = "";
	struct stat st;

	if (argc != 3 || strcmp(argv[1], "--proto") || strcmp(argv[2], "1") ||
	    fstat(SBX_PROXY_CONTROL_FD, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "agentsbx-proxy: started by libagentsbx (see src/proto/proxy_proto.h)\n"
		        "usage: agentsbx-proxy --proto %d\n", SBX_PROXY_PROTO_VERSION);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L);
	prctl(PR_SET_DUMPABLE, 0L, 0L, 0L, 0L);
	if (setup(&px, err, sizeof err) < 0) {
		send_reply(SBX_PROXY_ERROR, err);
		return 1;
	}
	send_reply(SBX_PROXY_READY, NULL);
	run(&px);
	sbx_conn_close_all(&px, "the workspace closed");
	sbx_conn_reap(&px);
	sbx_control_close_bridges(&px);
	sbx_network_free(&px.net);
	free(px.conns);
	return 0;
}
