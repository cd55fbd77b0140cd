/* Commands: the spawn message the init reads and the runclient that follows one. */
#include "backends/sandbox/sandbox_int.h"


static bool wants_pty(const sbx_backend_spawn *req)
{
	return SBX_BACKEND_SPAWN_HAS(req, pty_fd) && req->pty && req->pty_fd;
}

/* The spawn message: the header, then the payload (init_proto.h); *len counts both. */
static char *build_message(const sbx_backend_spawn *req, const sbx_backend_limits *limits,
                           bool takes_channel, size_t *len)
{
	sbx_rlimit_text rl[SBX_RUNCLIENT_MAX_RLIMITS];
	size_t nrl = sbx_runclient_rlimits(limits, rl);
	struct sbx_init_spawn head = { .kind = SBX_INIT_SPAWN, .nlimits = (uint32_t)nrl };
	sbx_buf b = { 0 };

	sbx_buf_append(&b, &head, sizeof head);
	sbx_buf_append(&b, req->cwd, strlen(req->cwd) + 1);
	for (; req->argv[head.argc]; head.argc++)
		sbx_buf_append(&b, req->argv[head.argc], strlen(req->argv[head.argc]) + 1);
	for (; req->envp && req->envp[head.envc]; head.envc++)
		sbx_buf_append(&b, req->envp[head.envc], strlen(req->envp[head.envc]) + 1);
	for (size_t i = 0; i < nrl; i++)
		sbx_buf_append(&b, rl[i], strlen(rl[i]) + 1);
	if (wants_pty(req)) {
		sbx_pty_text size;

		sbx_runclient_pty_text(req->rows, req->cols, size);
		sbx_buf_printf(&b, "pty=%s", size);
		sbx_buf_append(&b, "", 1);
		head.nlimits++;
	}
	if (takes_channel) {
		/* A runner setting as "pty=" is: a kept runner may offer its own channel. */
		sbx_buf_append(&b, "channel=1", sizeof "channel=1");
		head.nlimits++;
	}
	if (b.oom || b.len - sizeof head > SBX_INIT_PAYLOAD_MAX) {
		sbx_buf_free(&b);
		return NULL;
	}
	head.payload_len = (uint32_t)(b.len - sizeof head);
	memcpy(b.data, &head, sizeof head);
	return sbx_buf_steal(&b, len);
}

/* The payload travels in the message itself, or in a memfd when it is larger than the inline
 * limit (a memfd per command costs an inode, and few commands need one). */
static int send_spawn(int ctl, const char *msg, size_t len,
                      const int stdio_and_runner[SBX_INIT_SPAWN_FDS - 1])
{
	const size_t head_len = sizeof(struct sbx_init_spawn);
	_cleanup_close_ int payload_fd = -1;
	int fds[SBX_INIT_SPAWN_FDS];

	memcpy(fds, stdio_and_runner, sizeof *fds * (SBX_INIT_SPAWN_FDS - 1));
	if (len - head_len <= SBX_INIT_INLINE_MAX)
		return sbx_send_with_fds(ctl, msg, len, fds, SBX_INIT_SPAWN_FDS - 1);
	payload_fd = sbx_memfd_with("agentsbx-spawn", msg + head_len, len - head_len);
	if (payload_fd < 0)
		return -EIO;
	fds[SBX_INIT_SPAWN_FDS - 1] = payload_fd;
	return sbx_send_with_fds(ctl, msg, head_len, fds, SBX_INIT_SPAWN_FDS);
}

/* An idle runner's own channel (run_proto.h) takes the request where one is kept: a warm
 * command then costs the init nothing. A channel whose runner has gone fails to send (its
 * runner closed it before its last report) and the next is tried; the init takes the request
 * when none is left. *channel: the one used, or -1. */
static int send_to_runner_or_init(int ctl, struct sbx_runclient_pool *pool, const char *msg,
                                  size_t len, const int fds[SBX_INIT_SPAWN_FDS - 1],
                                  int *channel)
{
	int fd;

	while ((fd = sbx_runclient_pool_take(pool)) >= 0) {
		if (send_spawn(fd, msg, len, fds) == 0) {
			*channel = fd;
			return 0;
		}
		close(fd);
	}
	return send_spawn(ctl, msg, len, fds);
}

int sbx_init_channel_spawn(int ctl, const char *who, const sbx_backend_spawn *req,
                           const sbx_backend_limits *limits, struct sbx_runclient_set *live,
                           void **proc, int *wait_fd)
{
	_cleanup_free_ char *msg = NULL;
	_cleanup_close_ int host_end = -1, runner_end = -1;
	struct sbx_runclient *p;
	size_t len = 0;
	int sv[2], r, channel = -1;

	if (ctl < 0)
		return sbx_fail(-SBX_ESTATE, "%s: the sandbox is not running", who);
	/* A command limited in processes goes to the init, which gives it a runner of its own
	 * that leaves with it (helpers/init/server.c): it neither takes nor offers a channel. */
	struct sbx_runclient_pool *pool = live && !(limits && limits->processes) ? live->pool
	                                                                          : NULL;

	if (!(msg = build_message(req, limits, pool != NULL, &len)))
		return sbx_fail(-SBX_E2BIG, "%s: command, environment and cwd exceed %u bytes",
		                who, SBX_INIT_PAYLOAD_MAX);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return sbx_fail(sbx_errno_code(errno), "%s: socketpair: %s", who, strerror(errno));
	host_end = sv[0];
	runner_end = sv[1];
	const int fds[SBX_INIT_SPAWN_FDS - 1] = { req->stdin_fd, req->stdout_fd, req->stderr_fd,
	                                          runner_end };
	if ((r = send_to_runner_or_init(ctl, pool, msg, len, fds, &channel)) < 0)
		return sbx_fail(-SBX_EIO, "%s: the sandbox init does not answer: %s", who,
		                strerror(-r));
	/* The runner's end is on its way (the message holds it): ours would keep the channel
	 * open, so that a runner that ends before its first report (a refusal before the
	 * terminal) could only be seen by a timeout. */
	close(SBX_TAKE_FD(runner_end));
	if (!(p = sbx_runclient_new(0, host_end, who))) {
		if (channel >= 0)
			close(channel);   /* the runner serves the request and ends with its host */
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	host_end = -1;
	sbx_runclient_set_pool(p, pool, channel);
	if (live)
		sbx_runclient_track(live, p);
	if (wants_pty(req) &&
	    (r = sbx_runclient_take_pty(p, SBX_RUNCLIENT_PTY_TIMEOUT_MS, req->pty_fd)) < 0) {
		sbx_runclient_release(p);
		return r;
	}
	*proc = p;
	*wait_fd = p->ctrl;
	return 0;
}

int sbx_sandbox_spawn(struct sbx_sandbox *sb, const sbx_backend_spawn *req, void **proc,
                      int *wait_fd)
{
	const sbx_backend_limits *limits = req->size >= offsetof(sbx_backend_spawn, limits) +
	                                   sizeof req->limits && req->limits ? req->limits
	                                                                      : &sb->cfg.limits;

	return sbx_init_channel_spawn(sb->ctl, sb->who, req, limits, &sb->live, proc, wait_fd);
}
