/* Starting and stopping helper programs (launch.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "internal.h"
#include "util/error.h"
#include "util/fs.h"
#include "backends/common/launch.h"

/* The file actions: the sources (stderr's too) were first moved above every target, since
 * dup2 actions run in order and a source that is also a target would be overwritten before
 * its turn. */
static int add_fd_actions(posix_spawn_file_actions_t *fa, const int *copies, const int *fds,
                          size_t nfds, int err_copy)
{
	int err = 0;

	for (size_t i = 0; i < nfds && !err; i++)
		if (fds[i] >= 0)
			err = copies[i] < 0 ? EBADF
			                    : posix_spawn_file_actions_adddup2(fa, copies[i], 3 + (int)i);
	if (!err)
		err = posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDONLY, 0);
	if (!err)
		err = posix_spawn_file_actions_addopen(fa, 1, "/dev/null", O_WRONLY, 0);
	if (!err)
		err = err_copy >= 0 ? posix_spawn_file_actions_adddup2(fa, err_copy, 2)
		                    : posix_spawn_file_actions_addopen(fa, 2, "/dev/null", O_WRONLY, 0);
	return err;
}

int sbx_spawn_with_fds(const char *path, const char *const *argv, const int *fds, size_t nfds,
                       int err_fd, pid_t *pid)
{
	static const char *const env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	int *copies = malloc((nfds + 1) * sizeof *copies), above = 10 + (int)nfds, err;

	if (!copies)
		return ENOMEM;
	for (size_t i = 0; i < nfds; i++)
		copies[i] = fds[i] >= 0 ? fcntl(fds[i], F_DUPFD_CLOEXEC, above) : -1;
	copies[nfds] = err_fd >= 0 ? fcntl(err_fd, F_DUPFD_CLOEXEC, above) : -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	memset(&all, 0xff, sizeof all);
	err = add_fd_actions(&fa, copies, fds, nfds, copies[nfds]);
	if (!err)
		err = posix_spawnattr_setsigmask(&attr, &none);
	if (!err)
		err = posix_spawnattr_setsigdefault(&attr, &all);
	if (!err)
		err = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
		                                      POSIX_SPAWN_SETSID);
	if (!err)
		err = posix_spawn(pid, path, &fa, &attr, (char *const *)argv, (char *const *)env);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	for (size_t i = 0; i <= nfds; i++)
		if (copies[i] >= 0)
			close(copies[i]);
	free(copies);
	return err;
}

int sbx_memfd_with(const char *name, const void *data, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0)
		return sbx_fail(sbx_errno_code(errno), "memfd_create: %s", strerror(errno));
	if (sbx_write_all(fd, data, len) < 0) {
		close(fd);
		return sbx_fail(-SBX_EIO, "write the %s: %s", name, strerror(errno));
	}
	return fd;
}

void sbx_reap_or_kill(pid_t pid, int timeout_ms)
{
	int status;

	sbx_reap_or_kill_status(pid, timeout_ms, &status);
}

void sbx_reap_or_kill_status(pid_t pid, int timeout_ms, int *statusp)
{
	int status = 0, pidfd;

	*statusp = 0;
	if (pid <= 0)
		return;
	/* Wait for the exit itself (a pidfd polls readable then), not in sleeps. */
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd >= 0) {
		struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
		if (poll(&pfd, 1, timeout_ms) == 0)
			kill(pid, SIGKILL);
		close(pidfd);
	} else {
		for (int64_t until = sbx_now_ms() + timeout_ms;
		     waitpid(pid, &status, WNOHANG) == 0; usleep(1000))
			if (sbx_now_ms() > until) {
				kill(pid, SIGKILL);
				break;
			}
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	*statusp = status;
}

/* idtype_t P_PIDFD (Linux 5.4); older headers lack it. */
#define SBX_P_PIDFD 3

void sbx_pidfd_wait_or_kill(int pidfd, int timeout_ms)
{
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
	siginfo_t info;

	if (pidfd < 0)
		return;
	if (poll(&pfd, 1, timeout_ms) == 0) {
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		poll(&pfd, 1, timeout_ms);
	}
	/* Were we a child subreaper, the orphaned process was reparented to us: reap it (for
	 * anyone else's child this fails with ECHILD and does nothing). */
	waitid(SBX_P_PIDFD, (id_t)pidfd, &info, WEXITED | WNOHANG);
	close(pidfd);
}
