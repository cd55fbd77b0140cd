/* agentsbx-keeper: one parked spare for this user's processes of one context (keeper.h).
 *
 * Started by a take that found none (keeper_client.c), it forks away from its starter, takes
 * the context's lock (the loser of two starting at once exits), binds the socket, and starts
 * a spare of the shape it was started for at once. A take of that shape gets the spare (its
 * ctl, err_fd and outer pidfd; no copy stays here) and the next is started when the served
 * sandbox ends or REBUILD_DELAY_MS later, whichever is first: not while the caller's sandbox
 * starts beside it on a small machine. A take of another shape gets none, and the next spare
 * is of the latest shape. A spare older than SPARE_MAX_AGE_MS is replaced only while takes
 * come; without a take for the idle time the keeper exits, and its spare with it.
 *
 * It is the subreaper of what it starts: the spares' outer processes end as its children,
 * so their CPU (and a served sandbox's) shows in its own children's times. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "backends/sandbox/sandbox_int.h"
#include "backends/sandbox/keeper.h"
#include "util/clock.h"
#include "util/hostlock.h"

#define SPARE_MAX_AGE_MS 30000
#define REBUILD_DELAY_MS 250
#define REQUEST_TIMEOUT_MS 200
#define OUTER_TIMEOUT_MS 200
#define LOCK_ATTEMPTS 8
#define SPARE_NONE { .pidfd = -1, .ctl = -1, .err_fd = -1 }

struct keeper {
	const char *init;
	char *context;
	long long idle_ms;
	int dir, listen_fd, lock_fd;
	int signals;                  /* a signalfd: SIGCHLD (the spares end as our children), and
	                                 SIGTERM, SIGINT, SIGHUP */
	char sock[64], lock[64];
	struct sbx_spare parked;
	long long parked_at, last_take;
	char *wanted;                 /* the shape to start next */
	long long build_at;           /* when, at the latest (-1: nothing to start) */
	int wait_pidfd;               /* or as soon as this process ends */
};

/* The lock's file as it is linked now: one that an exiting keeper unlinked is no lock. */
static bool still_linked(int dir, const char *name, int fd)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && fstatat(dir, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* The context's lock, held for the keeper's life: false when another keeper has it. */
static bool take_lock(struct keeper *k)
{
	for (int i = 0; i < LOCK_ATTEMPTS; i++) {
		int fd = openat(k->dir, k->lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

		if (fd < 0)
			return false;
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			close(fd);
			return false;
		}
		if (still_linked(k->dir, k->lock, fd)) {
			k->lock_fd = fd;
			return true;
		}
		close(fd);
	}
	return false;
}

/* Under the lock: a socket file left by a keeper that was killed is replaced. */
static bool listen_on_socket(struct keeper *k)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };

	snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d/%s", k->dir, k->sock);
	if ((k->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
	                           0)) < 0)
		return false;
	unlinkat(k->dir, k->sock, 0);
	return bind(k->listen_fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
	       listen(k->listen_fd, 64) == 0;
}

static void discard_parked(struct keeper *k)
{
	sbx_spare_discard(&k->parked);
	k->parked = (struct sbx_spare)SPARE_NONE;
}

/* The next spare: of shape, at the latest after REBUILD_DELAY_MS, sooner when pidfd (ours
 * now; -1 for none) ends. */
static void schedule_build(struct keeper *k, const char *shape, int pidfd)
{
	char *copy = strdup(shape);
	long long at = sbx_now_ms() + REBUILD_DELAY_MS;

	if (!copy) {
		if (pidfd >= 0)
			close(pidfd);
		return;
	}
	free(k->wanted);
	k->wanted = copy;
	if (k->build_at < 0 || at < k->build_at)
		k->build_at = at;
	if (k->wait_pidfd >= 0)
		close(k->wait_pidfd);
	k->wait_pidfd = pidfd;
}

static void build_spare(struct keeper *k)
{
	char *shape = k->wanted;

	k->wanted = NULL;
	k->build_at = -1;
	if (k->wait_pidfd >= 0)
		close(SBX_TAKE_FD(k->wait_pidfd));
	if (!shape)
		return;
	if (k->parked.shape && !strcmp(k->parked.shape, shape)) {
		free(shape);      /* the parked one is of the latest shape already */
		return;
	}
	if (k->parked.shape)
		discard_parked(k);
	if (sbx_sandbox_prestart(k->init, shape, &k->parked) == 0)
		k->parked_at = sbx_now_ms();
	else
		k->parked = (struct sbx_spare)SPARE_NONE;
}

static int send_reply(int fd, uint32_t kind, const struct sbx_spare *s)
{
	struct sbx_keeper_reply reply = { .magic = SBX_KEEPER_MAGIC, .kind = kind };
	int fds[3];

	if (kind != SBX_KEEPER_SPARE)
		return send(fd, &reply, sizeof reply, MSG_NOSIGNAL) == sizeof reply ? 0 : -1;
	fds[0] = s->ctl;
	fds[1] = s->pidfd;
	fds[2] = s->err_fd;
	reply.has_err_fd = s->err_fd >= 0;
	return sbx_send_with_fds(fd, &reply, sizeof reply, fds, reply.has_err_fd ? 3 : 2);
}

/* The parked spare, if it can serve shape now: of that shape, young enough, its outer
 * process known. */
static bool spare_ready_for(struct keeper *k, const char *shape)
{
	if (!k->parked.shape || strcmp(k->parked.shape, shape) != 0)
		return false;
	if (sbx_now_ms() - k->parked_at > SPARE_MAX_AGE_MS ||
	    sbx_spare_receive_outer(&k->parked, OUTER_TIMEOUT_MS) < 0) {
		discard_parked(k);
		return false;
	}
	return true;
}

/* Hands the parked spare to the client on fd; on success the keeper keeps only a pidfd to
 * wait for, to start the next one when it ends. */
static bool hand_over(struct keeper *k, int fd)
{
	int watch = fcntl(k->parked.pidfd, F_DUPFD_CLOEXEC, 3);

	if (send_reply(fd, SBX_KEEPER_SPARE, &k->parked) < 0) {
		if (watch >= 0)
			close(watch);
		return false;
	}
	schedule_build(k, k->parked.shape, watch);
	close(k->parked.ctl);
	close(k->parked.pidfd);
	if (k->parked.err_fd >= 0)
		close(k->parked.err_fd);
	free(k->parked.shape);
	k->parked = (struct sbx_spare)SPARE_NONE;
	return true;
}

/* One take: the peer must be of our uid and context. */
static void serve(struct keeper *k, int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct ucred cred;
	socklen_t clen = sizeof cred;
	_cleanup_free_ char *msg = NULL, *shape = NULL;
	ssize_t n;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.uid != geteuid() ||
	    poll(&pfd, 1, REQUEST_TIMEOUT_MS) <= 0 || !(msg = malloc(SBX_KEEPER_MAX_REQUEST)) ||
	    (n = recv(fd, msg, SBX_KEEPER_MAX_REQUEST, MSG_DONTWAIT)) <= 0 ||
	    !(shape = sbx_keeper_parse_take(msg, (size_t)n, k->context)))
		return;
	k->last_take = sbx_now_ms();
	if (spare_ready_for(k, shape) && hand_over(k, fd))
		return;
	send_reply(fd, SBX_KEEPER_NONE, NULL);
	/* The caller starts a sandbox of its own now: the next spare waits for it. */
	schedule_build(k, shape, (int)syscall(SYS_pidfd_open, cred.pid, 0));
}

static void accept_all(struct keeper *k)
{
	int fd;

	while ((fd = accept4(k->listen_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		serve(k, fd);
		close(fd);
	}
}

static void reap_children(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/* SIGCHLD, blocked and read from a signalfd: a served sandbox that ends is reaped at once;
 * and the signals that ask it to stop, so that it stops as after its idle time, tidily. */
static int watch_signals(void)
{
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigaddset(&chld, SIGTERM);
	sigaddset(&chld, SIGINT);
	sigaddset(&chld, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &chld, NULL) < 0)
		return -1;
	return signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* False when asked to stop. */
static bool drain_signals(struct keeper *k)
{
	struct signalfd_siginfo si;
	bool go_on = true;

	while (read(k->signals, &si, sizeof si) == sizeof si)
		if (si.ssi_signo != SIGCHLD)
			go_on = false;
	return go_on;
}

/* A parked spare that aged, or ended by itself: gone; replaced while takes keep coming. */
static void check_parked(struct keeper *k, bool hung_up)
{
	long long now = sbx_now_ms();
	char *shape;

	if (!k->parked.shape || (!hung_up && now - k->parked_at <= SPARE_MAX_AGE_MS))
		return;
	shape = strdup(k->parked.shape);
	discard_parked(k);
	if (shape && now - k->last_take < SPARE_MAX_AGE_MS)
		schedule_build(k, shape, -1);
	free(shape);
}

static int next_timeout(const struct keeper *k)
{
	long long now = sbx_now_ms(), until = k->last_take + k->idle_ms;

	if (k->parked.shape && k->parked_at + SPARE_MAX_AGE_MS + 1 < until)
		until = k->parked_at + SPARE_MAX_AGE_MS + 1;
	if (k->build_at >= 0 && k->build_at < until)
		until = k->build_at;
	return until <= now ? 0 : until - now > INT_MAX ? INT_MAX : (int)(until - now);
}

static void run(struct keeper *k)
{
	for (;;) {
		struct pollfd pfd[4] = {
			{ .fd = k->listen_fd, .events = POLLIN },
			{ .fd = k->wait_pidfd, .events = POLLIN },
			/* Its first message (the outer's pidfd), then only its end. */
			{ .fd = k->parked.ctl, .events = k->parked.pidfd < 0 ? POLLIN : 0 },
			{ .fd = k->signals, .events = POLLIN },
		};

		reap_children();
		if (sbx_now_ms() - k->last_take >= k->idle_ms)
			return;
		if (k->wanted && k->build_at >= 0 && k->build_at <= sbx_now_ms())
			build_spare(k);
		check_parked(k, false);
		if (poll(pfd, 4, next_timeout(k)) < 0 && errno != EINTR)
			return;
		if (pfd[3].revents && !drain_signals(k))
			return;
		if (pfd[0].revents)
			accept_all(k);
		if (pfd[1].revents && k->wanted)
			k->build_at = sbx_now_ms();
		if (pfd[2].revents & POLLIN && k->parked.pidfd < 0 &&
		    sbx_spare_receive_outer(&k->parked, 0) < 0)
			check_parked(k, true);
		else if (pfd[2].revents & (POLLHUP | POLLERR))
			check_parked(k, true);
	}
}

static void leave(struct keeper *k)
{
	/* The names first: a take from now on starts a new keeper rather than wait for us. */
	unlinkat(k->dir, k->sock, 0);
	unlinkat(k->dir, k->lock, 0);
	close(k->listen_fd);
	discard_parked(k);
	reap_children();
	close(k->lock_fd);
}

static int usage(void)
{
	fprintf(stderr, "usage: " SBX_KEEPER_NAME " --init PATH --idle-ms N --shape SHAPE "
	        "--expect NAME (started by the library, not by hand)\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct keeper k = { .dir = -1, .listen_fd = -1, .lock_fd = -1, .signals = -1,
	                    .parked = SPARE_NONE,
	                    .build_at = -1, .wait_pidfd = -1 };
	const char *shape = NULL, *expect = NULL;
	char path[PATH_MAX];
	pid_t pid;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--init"))
			k.init = argv[i + 1];
		else if (!strcmp(argv[i], "--idle-ms"))
			k.idle_ms = atoll(argv[i + 1]);
		else if (!strcmp(argv[i], "--shape"))
			shape = argv[i + 1];
		else if (!strcmp(argv[i], "--expect"))
			expect = argv[i + 1];
	}
	if (!k.init || !shape || !expect || k.idle_ms <= 0)
		return usage();
	/* Away from the starter, which waits only for this first process. */
	if ((pid = fork()) != 0)
		_exit(pid < 0);
	/* Serve only the context it was started for, computed here, by itself; in the runtime
	 * folder its starter named (the only variable it was given), and then with none. */
	if (!(k.context = sbx_keeper_context(k.init)))
		return 1;
	sbx_keeper_names(k.context, k.sock, k.lock, sizeof k.sock);
	if (strcmp(k.sock, expect) != 0 || sbx_runtime_dir(&k.dir, path, sizeof path) < 0 ||
	    chdir("/") < 0 || clearenv() != 0 || !take_lock(&k))
		return 0;
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	k.signals = watch_signals();
	if (!listen_on_socket(&k)) {
		unlinkat(k.dir, k.lock, 0);
		return 1;
	}
	k.last_take = sbx_now_ms();
	k.wanted = strdup(shape);
	k.build_at = sbx_now_ms();
	run(&k);
	leave(&k);
	free(k.wanted);
	free(k.context);
	return 0;
}
