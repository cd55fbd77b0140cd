/* See warden.h. The warden is a fresh agentsbx-init, so that setns() into the
 * sandbox's user namespace happens in a single-threaded process that runs nothing else. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "backends/common/launch.h"
#include "backends/sandbox/warden.h"

#define WARDEN_TIMEOUT_MS 15000

pid_t sbx_warden_first_child(pid_t pid)
{
	char path[64];
	long child = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
	if (!(f = fopen(path, "re")))
		return -1;
	if (fscanf(f, "%ld", &child) != 1)
		child = -1;
	fclose(f);
	return (pid_t)child;
}

/* The entries, NUL-separated, in a memfd. */
static int list_fd(const char *const *paths)
{
	sbx_buf b = { 0 };
	int fd;

	for (size_t i = 0; paths[i]; i++)
		sbx_buf_append(&b, paths[i], strlen(paths[i]) + 1);
	if (b.oom) {
		sbx_buf_free(&b);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	fd = sbx_memfd_with("agentsbx-warden", b.data ? b.data : "", b.len);
	sbx_buf_free(&b);
	return fd;
}

/* The warden's stderr until it closes or the deadline passes. */
static void read_words(int fd, int64_t until, char *out, size_t cap)
{
	size_t len = 0;

	out[0] = '\0';
	for (;;) {
		int64_t left = until - sbx_now_ms();
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return;
		ssize_t n = read(fd, out + len, cap - 1 - len);
		if (n <= 0)
			return;
		len += (size_t)n;
		out[len] = '\0';
		if (len + 1 >= cap)
			return;
	}
}

int sbx_warden_bind(const char *who, int target, const char *const *paths, const char *view)
{
	_cleanup_free_ char *init = NULL;
	_cleanup_close_ int pidfd = target, list = -1, err_read = -1, err_write = -1;
	const char *const argv[] = { "agentsbx-init", "--warden", view, NULL };
	char words[1024];
	int p[2], status = 0, r;
	pid_t pid;

	if (pidfd < 0)
		return sbx_fail(-SBX_ENOSYS, "%s: no process of the sandbox to bind through", who);
	if ((r = sbx_helper_path("agentsbx-init", &init)) < 0)
		return r;
	if ((list = list_fd(paths)) < 0)
		return list;
	if (pipe2(p, O_CLOEXEC) < 0)
		return sbx_fail(sbx_errno_code(errno), "%s: pipe: %s", who, strerror(errno));
	err_read = p[0];
	err_write = p[1];
	const int fds[2] = { pidfd, list };
	if ((r = sbx_spawn_with_fds(init, argv, fds, 2, err_write, &pid)) != 0)
		return sbx_fail(-SBX_EBACKEND, "%s: start the warden: %s", who, strerror(r));
	close(SBX_TAKE_FD(err_write));
	read_words(err_read, sbx_now_ms() + WARDEN_TIMEOUT_MS, words, sizeof words);
	sbx_reap_or_kill_status(pid, WARDEN_TIMEOUT_MS, &status);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	words[strcspn(words, "\n")] = '\0';
	return sbx_fail(-SBX_EIO, "%s: read-only binds in the running sandbox failed: %s", who,
	                words[0] ? words : "the warden was killed");
}
