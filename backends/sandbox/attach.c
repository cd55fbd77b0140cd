/* Detached sandboxes, host side (see attach.h and helpers/init/listen.c).
 *
 * The socket lives in the workspace's state folder, which every sandbox binds read-only by
 * default: commands inside can see it but not replace it, and the init refuses their
 * connections. Its directory is checked like any private directory (ours, 0700, no symlink
 * anywhere on the way: util/statedir.h) and reached by fd: the socket's path is
 * /proc/self/fd/N/sock, which also keeps it under the 108 bytes a Unix socket address
 * allows, however deep the workdir. The lock that decides between attaching and launching
 * is a host lock (util/hostlock.h) of the run folder: a lock file in it, which commands
 * inside could open and flock, would let a command stop every process that attaches. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include "init/sandbox.h"
#include "internal.h"
#include "util/fdpass.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/journal.h"
#include "util/hostlock.h"
#include "backends/sandbox/attach.h"
#include "util/statedir.h"

#define RUN_DIR "run"
#define SOCKET_NAME "sock"
/* A holder starts a sandbox meanwhile (15 s at most for READY, then its socket). */
#define LOCK_TIMEOUT_MS 30000
#define ANSWER_TIMEOUT_MS 5000
#define STOP_TIMEOUT_MS 5000

int sbx_attach_open_run_dir(int root_fd, bool create, int *run_fd)
{
	_cleanup_close_ int run = -1;
	struct stat st;
	char msg[512];
	int r;

	*run_fd = -1;
	r = sbx_statedir_open(root_fd, RUN_DIR, create ? 0700 : 0, &run);
	if (r == -SBX_ENOENT && !create)
		return r;
	if (r < 0) {
		snprintf(msg, sizeof msg, "%s", sbx_last_error());
		return sbx_fail(r, "detached sandbox: %s", msg);
	}
	if (fstat(run, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077))
		return sbx_fail(-SBX_EACCES, "detached sandbox: %s/%s must be a directory of uid %u "
		                "closed to others (mode 0700)", SBX_STATE_DIR, RUN_DIR,
		                (unsigned)geteuid());
	*run_fd = SBX_TAKE_FD(run);
	return 0;
}

int sbx_attach_lock(int run_fd, int *lock_fd)
{
	char msg[512];
	int r = sbx_hostlock_take(run_fd, "attach", LOCK_TIMEOUT_MS, lock_fd);

	if (r < 0) {
		snprintf(msg, sizeof msg, "%s", sbx_last_error());
		return sbx_fail(r, "detached sandbox: the lock of its run folder: %s", msg);
	}
	return 0;
}

static void socket_address(int run_fd, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	snprintf(sa->sun_path, sizeof sa->sun_path, "/proc/self/fd/%d/" SOCKET_NAME, run_fd);
}

/* Waits for one message of exactly len bytes on fd. */
static int receive_answer(int fd, void *msg, size_t len, const char *who)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&pfd, 1, ANSWER_TIMEOUT_MS) <= 0)
		return sbx_fail(-SBX_ETIMEDOUT, "%s: the detached sandbox does not answer", who);
	do
		n = recv(fd, msg, len, 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)len)
		return sbx_fail(-SBX_EPROTO, "%s: the detached sandbox's socket does not speak the "
		                "init protocol", who);
	return 0;
}

/* Root's sandboxes run as unprivileged host ids (util/idmap.h): which ones depends on the
 * config of the process that started them, so root takes the init of any uid. What proves the
 * socket root's is that it lives in this 0700 directory of root's, which the sandbox sees
 * only through a read-only mount (the state folder is protected). */
#define ANY_UID ((uid_t)-1)

int sbx_attach_connect(int run_fd, const char *who, struct sbx_init_ready *ready,
                       pid_t *init_pid, int *fd)
{
	return sbx_attach_connect_as(run_fd, who, geteuid() == 0 ? ANY_UID : geteuid(), ready,
	                             init_pid, fd);
}

int sbx_attach_connect_as(int run_fd, const char *who, uid_t server_uid,
                          struct sbx_init_ready *ready, pid_t *init_pid, int *fd)
{
	_cleanup_close_ int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa;
	struct ucred cred;
	socklen_t len = sizeof cred;
	int r;

	*fd = -1;
	if (s < 0)
		return sbx_fail(sbx_errno_code(errno), "%s: socket: %s", who, strerror(errno));
	socket_address(run_fd, &sa);
	if (connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) {
		/* A stale socket (its init is gone) stays until a launcher, under the lock,
		 * replaces it: removed here, it might be one a launcher just bound. */
		if (errno == ECONNREFUSED || errno == ENOENT)
			return -SBX_ENOENT;
		return sbx_fail(sbx_errno_code(errno), "%s: connect to the detached sandbox: %s",
		                who, strerror(errno));
	}
	/* Only a process of our own uid can have bound in our 0700 directory; the check costs
	 * nothing and names the init, whose end tells when the sandbox is gone. */
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    (server_uid != ANY_UID && cred.uid != server_uid) || cred.pid <= 0)
		return sbx_fail(-SBX_EPERM, "%s: the detached sandbox's socket belongs to another "
		                "user", who);
	/* The init closes a connection it refuses (too many clients) without a word. */
	if ((r = receive_answer(s, ready, sizeof *ready, who)) < 0)
		return r;
	if (ready->kind != SBX_INIT_READY)
		return sbx_fail(-SBX_EPROTO, "%s: unexpected greeting from the detached sandbox", who);
	ready->cgroup_note[sizeof ready->cgroup_note - 1] = '\0';
	if (init_pid)
		*init_pid = cred.pid;
	*fd = SBX_TAKE_FD(s);
	return 0;
}

static int send_listener(int ctl, int listener)
{
	struct sbx_init_spawn head = { .kind = SBX_INIT_LISTEN };

	return sbx_send_with_fds(ctl, &head, sizeof head, &listener, 1);
}

int sbx_attach_hand_listener(int run_fd, int ctl, const char *who)
{
	_cleanup_close_ int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct sbx_init_spawn answer;
	struct sockaddr_un sa;
	int r;

	if (s < 0)
		return sbx_fail(sbx_errno_code(errno), "%s: socket: %s", who, strerror(errno));
	socket_address(run_fd, &sa);
	unlinkat(run_fd, SOCKET_NAME, 0);   /* a stale one: the caller holds the lock */
	if (bind(s, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    fchmodat(run_fd, SOCKET_NAME, 0600, 0) < 0)
		return sbx_fail(sbx_errno_code(errno), "%s: bind the detached sandbox's socket: %s",
		                who, strerror(errno));
	if ((r = send_listener(ctl, s)) < 0)
		return sbx_fail(-SBX_EIO, "%s: the sandbox init does not answer: %s", who,
		                strerror(-r));
	/* The init listens, then says so: until then a second process would find the socket
	 * refusing and take it for a stale one. */
	if ((r = receive_answer(ctl, &answer, sizeof answer, who)) < 0)
		return r;
	if (answer.kind != SBX_INIT_LISTEN)
		return sbx_fail(-SBX_EPROTO, "%s: the sandbox init cannot listen (too old?)", who);
	return 0;
}

static int pidfd_of(pid_t pid)
{
	return pid > 1 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
}

/* Waits until the process behind pidfd has exited; SIGKILL after the timeout. */
static void wait_gone(int pidfd, int timeout_ms)
{
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };

	if (pidfd < 0)
		return;
	if (poll(&pfd, 1, timeout_ms) == 0) {
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		poll(&pfd, 1, timeout_ms);
	}
}

int sbx_attach_shutdown(int fd, pid_t init_pid, const struct sbx_init_ready *ready,
                        const char *who)
{
	struct sbx_init_spawn head = { .kind = SBX_INIT_SHUTDOWN };
	/* Opened while the connection proves them alive, so no pid can have been reused. The
	 * init (PID 1 of the sandbox) exits only once every process of the sandbox is gone; the
	 * outer process (direct mode: READY's init_pid) right after it. */
	_cleanup_close_ int init = pidfd_of(init_pid);
	_cleanup_close_ int outer = ready->init_pid != init_pid ? pidfd_of(ready->init_pid) : -1;
	ssize_t n = send(fd, &head, sizeof head, MSG_NOSIGNAL);

	close(fd);
	if (n != (ssize_t)sizeof head)
		return sbx_fail(-SBX_EIO, "%s: cannot ask the detached sandbox to stop: %s", who,
		                strerror(errno));
	wait_gone(init, STOP_TIMEOUT_MS);
	wait_gone(outer, STOP_TIMEOUT_MS);
	return 0;
}

int sbx_sandbox_destroy_detached(const char *workdir, const char *id, bool *stopped)
{
	_cleanup_close_ int root = -1, run = -1, fd = -1;
	_cleanup_hostlock_ int lock = -1;
	struct sbx_init_ready ready;
	pid_t init_pid = 0;
	int r;

	if (stopped)
		*stopped = false;
	root = open(workdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return errno == ENOENT ? 0 : sbx_fail(sbx_errno_code(errno), "open %s: %s", workdir,
		                                      strerror(errno));
	r = sbx_attach_open_run_dir(root, false, &run);
	if (r == -SBX_ENOENT)
		return 0;
	if (r < 0 || (r = sbx_attach_lock(run, &lock)) < 0)
		return r;
	r = sbx_attach_connect(run, "detached sandbox", &ready, &init_pid, &fd);
	if (r == -SBX_ENOENT)
		return 0;
	if (r < 0 || (r = sbx_attach_shutdown(SBX_TAKE_FD(fd), init_pid, &ready,
	                                      "detached sandbox")) < 0)
		return r;
	unlinkat(run, SOCKET_NAME, 0);
	if ((ready.flags & SBX_INIT_HAS_CGROUP) && id)
		sbx_cgroup_cleanup(id);
	/* Its tidier removed its placeholders on its way out; this is for one killed first. */
	sbx_journal_sweep(root, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_DETACHED);
	if (stopped)
		*stopped = true;
	return 0;
}

bool sbx_sandbox_detached_running(const char *workdir)
{
	_cleanup_close_ int root = open(workdir, O_PATH | O_DIRECTORY | O_CLOEXEC), run = -1;
	_cleanup_close_ int fd = -1;
	struct sbx_init_ready ready;

	if (root < 0 || sbx_attach_open_run_dir(root, false, &run) < 0)
		return false;
	return sbx_attach_connect(run, "detached sandbox", &ready, NULL, &fd) == 0;
}
