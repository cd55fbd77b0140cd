/* The control channel of a runner inside the container. The Engine API cannot carry a file
 * descriptor, so the host listens on a SOCK_SEQPACKET Unix socket in a folder bound into the
 * container and agentsbx-run --control-socket connects to it: from then on it is the same
 * channel the local backend gets from a socketpair (src/proto/run_proto.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "docker.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/error.h"

static int random_name(char *out, size_t len)
{
	unsigned char raw[12];

	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return sbx_fail(-SBX_EIO, "docker: getrandom: %s", strerror(errno));
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(out + 2 * i, len - 2 * i, "%02x", raw[i]);
	snprintf(out + 2 * sizeof raw, len - 2 * sizeof raw, ".sock");
	return 0;
}

int docker_control_listen(const char *dir, int *fd_out, char **name_out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int dfd = -1;
	char name[40];
	int fd, r;

	*fd_out = -1;
	if ((r = random_name(name, sizeof name)) < 0)
		return r;
	/* Bound through the folder's fd: the address stays short however deep the folder (the
	 * state folder, outside the workdir) lies; the engine binds the folder by its path. */
	if ((dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return sbx_fail(sbx_errno_code(errno), "docker: open %s: %s", dir, strerror(errno));
	snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/%s", dfd, name);
	if ((fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) < 0)
		return sbx_fail(-sbx_errno_code(errno), "docker: socket: %s", strerror(errno));
	/* The container's user is often not ours: the random name, not the mode, keeps other
	 * host users out, and a stranger could only pose as a runner, never reach a command. */
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || chmod(sa.sun_path, 0666) < 0 ||
	    listen(fd, 1) < 0) {
		r = sbx_fail(-sbx_errno_code(errno), "docker: listen on %s: %s", sa.sun_path,
		             strerror(errno));
		unlink(sa.sun_path);
		close(fd);
		return r;
	}
	if (!(*name_out = strdup(name))) {
		unlink(sa.sun_path);
		close(fd);
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	}
	*fd_out = fd;
	return 0;
}

int docker_control_accept(int lfd, int stop_fd, int timeout_ms, int *conn)
{
	int64_t start = sbx_now_ms();

	*conn = -1;
	for (;;) {
		struct pollfd p[2] = { { .fd = lfd, .events = POLLIN },
		                       { .fd = stop_fd, .events = POLLIN } };
		int64_t waited = sbx_now_ms() - start;
		int n;

		if (waited >= timeout_ms)
			return -SBX_ETIMEDOUT;
		n = poll(p, stop_fd >= 0 ? 2 : 1, (int)(timeout_ms - waited));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -sbx_errno_code(errno);
		if (p[0].revents) {
			*conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (*conn >= 0)
				return 0;
			if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
				return -sbx_errno_code(errno);
			continue;
		}
		if (n > 0 && stop_fd >= 0 && p[1].revents)
			return -SBX_EIO;
	}
}
