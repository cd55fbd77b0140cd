/* The client side of the keeper (keeper.h): the caller's context, the socket's name, a take,
 * and starting a keeper when none runs. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <agentsbx/version.h>
#include "internal.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/fdpass.h"
#include "util/hostlock.h"
#include "backends/sandbox/keeper.h"

/* A keeper is busy for a few milliseconds while it starts a spare: a reply waits this long. */
#define REPLY_TIMEOUT_MS 500

/* The lines of /proc/self/status a spare inherits: ids and groups, capabilities, the seccomp
 * filters and no_new_privs (a CLI under a stricter filter must not get a spare without it),
 * the umask, and the CPUs and memory nodes it may use. */
static const char *const status_keys[] = {
	"Umask:", "Uid:", "Gid:", "Groups:", "CapInh:", "CapPrm:", "CapEff:", "CapBnd:",
	"CapAmb:", "NoNewPrivs:", "Seccomp:", "Seccomp_filters:", "Cpus_allowed_list:",
	"Mems_allowed_list:",
};

static const char *const namespaces[] = {
	"mnt", "net", "user", "pid", "pid_for_children", "ipc", "uts", "cgroup", "time",
	"time_for_children",
};

static void add_file(sbx_buf *b, const char *label, const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	char text[4096];
	ssize_t n = fd >= 0 ? read(fd, text, sizeof text) : -1;

	sbx_buf_printf(b, "%s=", label);
	if (n > 0)
		sbx_buf_append(b, text, (size_t)n);
	sbx_buf_puts(b, "\n");
}

static bool wanted_status_line(const char *line)
{
	for (size_t i = 0; i < sizeof status_keys / sizeof *status_keys; i++)
		if (!strncmp(line, status_keys[i], strlen(status_keys[i])))
			return true;
	return false;
}

static void add_status(sbx_buf *b)
{
	_cleanup_close_ int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	char text[8192];
	ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;

	if (n <= 0)
		return;
	text[n] = '\0';
	for (char *line = text, *end; *line; line = end) {
		end = line + strcspn(line, "\n");
		if (*end)
			end++;
		if (wanted_status_line(line))
			sbx_buf_append(b, line, (size_t)(end - line));
	}
}

static void add_namespaces(sbx_buf *b)
{
	for (size_t i = 0; i < sizeof namespaces / sizeof *namespaces; i++) {
		char path[64], target[64];
		ssize_t n;

		snprintf(path, sizeof path, "/proc/self/ns/%s", namespaces[i]);
		n = readlink(path, target, sizeof target - 1);
		target[n > 0 ? n : 0] = '\0';
		sbx_buf_printf(b, "ns.%s=%s\n", namespaces[i], target);
	}
}

static void add_limits(sbx_buf *b)
{
	for (int r = 0; r < RLIM_NLIMITS; r++) {
		struct rlimit l = { 0 };

		getrlimit(r, &l);
		sbx_buf_printf(b, "rlimit.%d=%llu:%llu\n", r, (unsigned long long)l.rlim_cur,
		               (unsigned long long)l.rlim_max);
	}
	errno = 0;
	sbx_buf_printf(b, "nice=%d\npersonality=%d\nsecurebits=%d\nsched=%d\n",
	               getpriority(PRIO_PROCESS, 0), personality(0xffffffff),
	               prctl(PR_GET_SECUREBITS), sched_getscheduler(0));
}

/* The helpers' build: an old keeper must not serve a new install, nor its spares a new init. */
static void add_build(sbx_buf *b, const char *label, const char *path)
{
	struct stat st = { 0 };

	stat(path, &st);
	sbx_buf_printf(b, "%s=%s %llu:%llu %lld.%09ld\n", label, path, (unsigned long long)st.st_dev,
	               (unsigned long long)st.st_ino, (long long)st.st_mtim.tv_sec,
	               st.st_mtim.tv_nsec);
}

char *sbx_keeper_context(const char *init)
{
	sbx_buf b = { 0 };

	sbx_buf_puts(&b, "agentsbx " SBX_VERSION_STRING "\n");
	add_build(&b, "init", init);
	add_status(&b);
	add_namespaces(&b);
	add_file(&b, "cgroup", "/proc/self/cgroup");
	add_file(&b, "oom_score_adj", "/proc/self/oom_score_adj");
	add_limits(&b);
	if (b.oom) {
		sbx_buf_free(&b);
		return NULL;
	}
	return sbx_buf_steal(&b, NULL);
}

/* FNV-1a: the name only finds the keeper; the full context in each take is what decides. */
static uint64_t context_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

void sbx_keeper_names(const char *context, char *sock, char *lock, size_t len)
{
	uint64_t h = context_hash(context);

	snprintf(sock, len, "keeper-%016llx.sock", (unsigned long long)h);
	snprintf(lock, len, "keeper-%016llx.lock", (unsigned long long)h);
}

bool sbx_keeper_allowed(void)
{
	const char *v = getenv("AGENTSBX_KEEPER");

	return !v || !(strcmp(v, "0") == 0 || strcmp(v, "off") == 0 || strcmp(v, "false") == 0);
}

/* Connected to the keeper of this context, checked to run as our euid; or -1. */
static int connect_keeper(int dir, const char *sock_name, bool *none)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t clen = sizeof cred;
	int fd;

	*none = false;
	/* Through the checked folder's fd: no path can be swapped under us, and none is too long. */
	snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d/%s", dir, sock_name);
	if ((fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
		*none = errno == ENOENT || errno == ECONNREFUSED;
		close(fd);
		return -1;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.uid != geteuid()) {
		close(fd);
		return -1;
	}
	return fd;
}

static int send_request(int fd, const char *context, const char *shape)
{
	struct sbx_keeper_request req = { .magic = SBX_KEEPER_MAGIC, .kind = SBX_KEEPER_TAKE,
	                                  .context_len = (uint32_t)strlen(context),
	                                  .shape_len = (uint32_t)strlen(shape) };
	sbx_buf b = { 0 };
	ssize_t n;

	sbx_buf_append(&b, &req, sizeof req);
	sbx_buf_append(&b, context, req.context_len + 1);
	sbx_buf_append(&b, shape, req.shape_len);
	n = b.oom || b.len > SBX_KEEPER_MAX_REQUEST ? -1 : send(fd, b.data, b.len, MSG_NOSIGNAL);
	sbx_buf_free(&b);
	return n == (ssize_t)(sizeof req + req.context_len + 1 + req.shape_len) ? 0 : -1;
}

static bool receive_spare(int fd, const char *shape, struct sbx_spare *out)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct sbx_keeper_reply reply;
	int fds[3] = { -1, -1, -1 };
	size_t nfds = 0;

	if (poll(&pfd, 1, REPLY_TIMEOUT_MS) <= 0 ||
	    sbx_recv_with_fds(fd, &reply, sizeof reply, fds, 3, &nfds) < 0)
		return false;
	if (reply.magic != SBX_KEEPER_MAGIC || reply.kind != SBX_KEEPER_SPARE ||
	    nfds != (reply.has_err_fd ? 3u : 2u) || !(out->shape = strdup(shape))) {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		return false;
	}
	out->ctl = fds[0];
	out->pidfd = fds[1];
	out->err_fd = reply.has_err_fd ? fds[2] : -1;
	return true;
}

static const char *idle_ms_arg(char *buf, size_t len)
{
	const char *v = getenv("AGENTSBX_KEEPER_IDLE_MS");
	char *end;
	long long ms = v ? strtoll(v, &end, 10) : -1;

	if (!v || *end || ms <= 0)
		ms = SBX_KEEPER_IDLE_MS;
	snprintf(buf, len, "%lld", ms);
	return buf;
}

/* Starts a keeper for this context, detached: a session of its own, stdio on /dev/null and
 * no other fd of ours (one holding our stdout would keep `$(agentsbx exec ...)` waiting).
 * It forks away at once, so it is never our child for longer than that. */
static void start_keeper(const char *init, const char *shape, const char *sock)
{
	_cleanup_free_ char *keeper = NULL, *runtime = NULL;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	char ttl[32];
	pid_t pid;
	int err, status;

	const char *xdg = getenv("XDG_RUNTIME_DIR");

	/* Of our environment only what names the runtime folder: the keeper's must be ours. */
	if (sbx_helper_path(SBX_KEEPER_NAME, &keeper) < 0 ||
	    (xdg && asprintf(&runtime, "XDG_RUNTIME_DIR=%s", xdg) < 0))
		return;
	char *const env[] = { runtime, NULL };
	char *const argv[] = { (char *)SBX_KEEPER_NAME, (char *)"--init", (char *)init,
	                       (char *)"--idle-ms", (char *)idle_ms_arg(ttl, sizeof ttl),
	                       (char *)"--shape", (char *)shape, (char *)"--expect", (char *)sock,
	                       NULL };

	if (posix_spawn_file_actions_init(&fa) != 0)
		return;
	if (posix_spawnattr_init(&attr) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return;
	}
	err = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
	for (int i = 0; i < 3 && err == 0; i++)
		err = posix_spawn_file_actions_addopen(&fa, i, "/dev/null", O_RDWR, 0);
	if (err == 0)
		err = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	if (err == 0 && posix_spawn(&pid, keeper, &fa, &attr, argv, env) == 0)
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
}

bool sbx_keeper_take(const char *init, const char *shape, struct sbx_spare *out)
{
	_cleanup_free_ char *context = sbx_keeper_context(init);
	_cleanup_close_ int dir = -1, fd = -1;
	char path[PATH_MAX], sock[64], lock[64];
	bool none;

	if (!context || sbx_runtime_dir(&dir, path, sizeof path) < 0)
		return false;
	sbx_keeper_names(context, sock, lock, sizeof sock);
	if ((fd = connect_keeper(dir, sock, &none)) < 0) {
		if (none)
			start_keeper(init, shape, sock);
		return false;
	}
	return send_request(fd, context, shape) == 0 && receive_spare(fd, shape, out);
}

/* Whether a process holds the flock of the file at fd: /proc/locks names it by inode, so the
 * question takes no lock (which would make a keeper starting just then give up). */
static bool lock_held(int fd)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/locks", "re");
	char line[256];
	struct stat st;

	if (!f || fstat(fd, &st) < 0)
		return false;
	while (fgets(line, sizeof line, f)) {
		unsigned long long ino;
		unsigned maj, min;

		/* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a waiter's line has "->". */
		if (strstr(line, "FLOCK") && !strstr(line, "->") &&
		    sscanf(line, "%*s %*s %*s %*s %*d %x:%x:%llu", &maj, &min, &ino) == 3 &&
		    ino == (unsigned long long)st.st_ino && makedev(maj, min) == st.st_dev)
			return true;
	}
	return false;
}

int sbx_keeper_describe(char *out, size_t len)
{
	_cleanup_free_ char *init = NULL, *context = NULL;
	_cleanup_close_ int dir = -1, lock_fd = -1;
	char path[PATH_MAX], sock[64], lock[64];

	if (!sbx_keeper_allowed())
		return snprintf(out, len, "off (AGENTSBX_KEEPER)"), 0;
	if (sbx_helper_path(SBX_KEEPER_INIT_NAME, &init) < 0 || !(context = sbx_keeper_context(init)) ||
	    sbx_runtime_dir(&dir, path, sizeof path) < 0)
		return snprintf(out, len, "unusable here: %s", sbx_last_error()), -1;
	sbx_keeper_names(context, sock, lock, sizeof sock);
	lock_fd = openat(dir, lock, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (lock_fd >= 0 && lock_held(lock_fd))
		snprintf(out, len, "running for this process's context (%s/%s)", path, sock);
	else
		snprintf(out, len, "none running for this process's context (an ns exec with a "
		         "temporary workdir starts one in %s)", path);
	return 0;
}
