/* The per-command runner: runs one command and makes sure that nothing the command started
 * outlives it, speaking the protocol of run_proto.h. The local backend reaches it as the
 * agentsbx-run program; the sandbox init (ns, bwrap) forks and calls it directly, so a command
 * in a sandbox costs no extra exec.
 *
 * The runner is single-threaded and owns the command's whole process tree: it is a child
 * subreaper, so every process the command orphans (a double-forked `setsid` daemon included)
 * is reparented to it and can be found and killed.
 *
 * Where the kernel refuses that to anyone but PID 1 (gVisor before release-20230717, the
 * runsc of Debian 12, answers EINVAL), orphans go to the sandbox's PID 1 instead. The runner
 * then also kills every process of the command's session wherever it was reparented: what
 * it cannot find is an orphan that left the session with setsid(), which ends with the
 * sandbox (close, reset) rather than with the command (docs/security.md). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "proto/run_proto.h"
#include "runner.h"
#include "util/clock.h"
#include "util/fdpass.h"

#define NORETURN __attribute__((noreturn))

/* Killing a tree must converge even against a fork loop, but the runner must never hang:
 * give up after this long (a process stuck in uninterruptible sleep cannot be reaped). */
#define KILL_DEADLINE_MS 20000
#define KILL_ROUND_PAUSE_NS 1000000L

struct rlimit_opt {
	const char *name;
	int resource;
	bool set;
	rlim_t value;
};

static struct rlimit_opt rlimit_opts[] = {
	{ "cpu", RLIMIT_CPU, false, 0 },
	{ "fsize", RLIMIT_FSIZE, false, 0 },
	{ "nofile", RLIMIT_NOFILE, false, 0 },
	{ "nproc", RLIMIT_NPROC, false, 0 },
	{ "as", RLIMIT_AS, false, 0 },
};

enum ending { END_EXITED, END_KILLED, END_HOST_GONE };

/* --pty: the command's terminal (run_proto.h), or none. */
static struct {
	bool wanted;
	unsigned short rows, cols;
} pty_opt;

struct runner {
	char **argv;                  /* the command */
	pid_t self;
	int sigfd;
	int hostfd;                   /* pidfd of the host process, or -1 */
	pid_t cmd;                    /* the main process: also its session and process group id */
	bool cmd_ended;               /* its status is in report (it may still be a zombie) */
	bool cmd_reaped;              /* its pid, and so its process group id, may be reused */
	bool subreaper;               /* orphans come back to us (else: see the top) */
	struct sbx_run_report report;
};

static bool check_control_fd(void)
{
	struct stat st;

	if (fstat(SBX_RUN_CONTROL_FD, &st) < 0 || !S_ISSOCK(st.st_mode))
		return false;
	/* Only the runner may hold it: its closing is how the host learns the runner is gone. */
	fcntl(SBX_RUN_CONTROL_FD, F_SETFD, FD_CLOEXEC);
	return true;
}

bool sbx_runner_set_rlimit(const char *name, size_t name_len, unsigned long long value)
{
	for (size_t i = 0; i < sizeof rlimit_opts / sizeof rlimit_opts[0]; i++) {
		struct rlimit_opt *o = &rlimit_opts[i];

		if (strlen(o->name) == name_len && strncmp(o->name, name, name_len) == 0) {
			o->set = true;
			o->value = value;
			return true;
		}
	}
	return false;
}

bool sbx_runner_set_pty(const char *size)
{
	unsigned rows, cols;
	char end;

	if (sscanf(size, "%ux%u%c", &rows, &cols, &end) != 2 || rows > 65535 || cols > 65535)
		return false;
	pty_opt.wanted = true;
	pty_opt.rows = rows ? (unsigned short)rows : SBX_RUN_PTY_ROWS;
	pty_opt.cols = cols ? (unsigned short)cols : SBX_RUN_PTY_COLS;
	return true;
}

/* ---- reporting ------------------------------------------------------------------------- */

static void send_report(const struct runner *r)
{
	send(SBX_RUN_CONTROL_FD, &r->report, sizeof r->report, MSG_NOSIGNAL);
}

/* Writes "agentsbx: cannot run 'NAME': [WHAT: ]REASON" to fd 2. Async-signal-safe enough for
 * the forked child: the runner is single-threaded, so no lock can be held. */
static void write_cannot_run(const char *name, const char *what, int err)
{
	char msg[1024];
	int n;

	if (what)
		n = snprintf(msg, sizeof msg, "agentsbx: cannot run '%s': %s: %s\n", name, what,
		             strerror(err));
	else
		n = snprintf(msg, sizeof msg, "agentsbx: cannot run '%s': %s\n", name,
		             strerror(err));
	if (n > (int)sizeof msg - 1)
		n = sizeof msg - 1;
	if (n > 0 && write(STDERR_FILENO, msg, n) < 0) {
		/* nobody to tell */
	}
}

/* The command could not be started: say why on its stderr and report it as a command that
 * ended with `code` (127 not found, 126 anything else), as the protocol asks. */
static NORETURN void refuse_to_start(const struct runner *r, const char *what, int err, int code)
{
	struct sbx_run_report rep = { SBX_RUN_EXITED, code, 0 };

	write_cannot_run(r->argv[0], what, err);
	sbx_runner_drop_direct();   /* before the report: this runner takes no next command */
	send(SBX_RUN_CONTROL_FD, &rep, sizeof rep, MSG_NOSIGNAL);
	/* _exit: fd 2 is still the command's stderr, and whatever runs at exit (a sanitizer
	 * build's leak check, which cannot ptrace inside the sandbox and says so) would write
	 * into it after our message. */
	_exit(0);
}

static void note_status_code(struct runner *r, bool signalled, int value)
{
	r->report.exit_code = signalled ? -1 : value;
	r->report.term_signal = signalled ? value : 0;
	r->cmd_ended = true;
}

/* ---- the command ----------------------------------------------------------------------- */

/* In the child, before exec: limits, which must bind the command and not the runner (a
 * sanitizer build of the runner needs far more address space than any command limit). */
static int apply_rlimits(void)
{
	for (size_t i = 0; i < sizeof rlimit_opts / sizeof rlimit_opts[0]; i++) {
		const struct rlimit_opt *o = &rlimit_opts[i];
		struct rlimit cur, lim;

		if (!o->set || getrlimit(o->resource, &cur) < 0)
			continue;
		/* A limit only ever lowers what the runner has. */
		lim.rlim_max = o->value < cur.rlim_max ? o->value : cur.rlim_max;
		lim.rlim_cur = lim.rlim_max;
		/* With soft == hard the kernel sends SIGKILL at the CPU limit; one second of slack
		 * lets the command see SIGXCPU, which says why it died. */
		if (o->resource == RLIMIT_CPU && lim.rlim_max < cur.rlim_max)
			lim.rlim_max++;
		if (setrlimit(o->resource, &lim) < 0)
			return -1;
	}
	return 0;
}

static void close_fds_from(unsigned first)
{
	struct rlimit lim;

	/* INT_MAX, not ~0U: fds are ints, and gVisor refuses a last fd beyond INT_MAX (EINVAL),
	 * which sent every command through the loop below, 20,000 closes at ~400 ms. */
	if (close_range(first, INT_MAX, 0) == 0)
		return;
	/* Kernels before 5.9: close what the fd limit allows. */
	if (getrlimit(RLIMIT_NOFILE, &lim) < 0 || lim.rlim_cur == RLIM_INFINITY ||
	    lim.rlim_cur > (1u << 20))
		lim.rlim_cur = 1u << 20;
	for (unsigned fd = first; fd < lim.rlim_cur; fd++)
		close(fd);
}

#define CHILD_STACK_SIZE (256 * 1024)

struct launch {
	char **argv;
	const char *failed;       /* the step that failed in the child, or NULL */
	int err;
};

/* Runs in the child, which shares the runner's memory until it execs (CLONE_VFORK: the runner
 * waits meanwhile), so it only makes system calls and writes its outcome into l. Not
 * instrumented by AddressSanitizer: on its own small stack, its _exit would make ASan print a
 * warning into the command's stderr. */
__attribute__((no_sanitize_address))
static int command_child(void *arg)
{
	struct launch *l = arg;
	sigset_t none;

	/* Handlers fall back to the default at exec by themselves; the mask and ignored
	 * signals do not. The runner ignores only SIGPIPE (its parents start it with every
	 * disposition at its default). */
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid(); /* new session and process group: no controlling terminal of the host */
	/* With --pty, fds 0-2 are the terminal made for it: it becomes the session's. */
	if (pty_opt.wanted && ioctl(STDIN_FILENO, TIOCSCTTY, 0) < 0) {
		l->failed = "ioctl(TIOCSCTTY)";
		l->err = errno;
		_exit(126);
	}
	if (apply_rlimits() < 0) {
		l->failed = "setrlimit";
		l->err = errno;
		_exit(126);
	}
	execvp(l->argv[0], l->argv);
	l->failed = "";
	l->err = errno;
	_exit(127);
}

/* Starts the command the way posix_spawn would (a clone that shares the runner's memory
 * instead of copying it), with its own limits. Every fd the runner opened is close-on-exec,
 * so the command gets exactly fds 0-2. Returns 0, or an errno value with *failed naming the
 * step ("" for exec itself); a child that got as far as failing has been reaped. */
static int spawn_command(struct runner *r, const char **failed)
{
	/* A runner starts one command, so one static stack serves: mapping and unmapping one per
	 * command cost a TLB shootdown across CPUs each time. */
	static char stack[CHILD_STACK_SIZE] __attribute__((aligned(64)));
	struct launch l = { .argv = r->argv };
	pid_t pid;

	*failed = "clone";
	pid = clone(command_child, stack + CHILD_STACK_SIZE, CLONE_VM | CLONE_VFORK | SIGCHLD, &l);
	if (pid < 0)
		return errno;
	if (l.failed) {
		waitpid(pid, NULL, 0);
		*failed = l.failed;
		return l.err;
	}
	r->cmd = pid;
	return 0;
}

/* ---- the runner ------------------------------------------------------------------------ */

/* Signals are read from a signalfd in the poll loop instead of handlers: SIGCHLD for the
 * command's end, the terminating ones to kill the tree before going. */
static int watch_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -1;
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* The control socket reads end-of-file when the host dies, unless a child the host forked
 * holds a copy; a pidfd of the host tells regardless. The host is whoever made the
 * socketpair, which SO_PEERCRED names. Returns the pidfd or -1 (kernels before 5.3 have only
 * the socket); *gone when the host has already died. */
static int watch_host(bool *gone)
{
	struct ucred cred;
	socklen_t len = sizeof cred;
	int fd = -1;

	*gone = false;
	if (getsockopt(SBX_RUN_CONTROL_FD, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    cred.pid <= 0)
		return -1;
#ifdef SYS_pidfd_open
	fd = (int)syscall(SYS_pidfd_open, cred.pid, 0);
	*gone = fd < 0 && errno == ESRCH;
#endif
	return fd;
}

/* The runner keeps no copy of the command's stdio: the host must see end-of-file and broken
 * pipes exactly when the command's processes close theirs. */
static void detach_stdio(void)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	for (int fd = 0; fd <= 2; fd++) {
		if (null >= 0)
			dup2(null, fd);
		else
			close(fd);
	}
	if (null > 2)
		close(null);
}

/* The slave of a new master: by the master itself where the kernel can (4.13+), so it is
 * surely the peer in this devpts instance, else by its name. */
static int open_slave(int master)
{
	char name[64];
	int fd = -1;

#ifdef TIOCGPTPEER
	/* EINVAL before 4.13, ENOTTY on gVisor: then by name, as ever. */
	fd = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
#endif
	if (ptsname_r(master, name, sizeof name) != 0)
		return -1;
	return open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
}

/* Makes the terminal --pty asked for, here, in the sandbox's own /dev/pts: hands its master
 * to the host (one SBX_RUN_PTY report) and puts its slave on fds 0-2 for the command. A
 * failure is reported the same way, with the errno value, and refuses the command. */
static void open_terminal(struct runner *r)
{
	struct sbx_run_report rep = { SBX_RUN_PTY, 0, 0 };
	struct winsize size = { .ws_row = pty_opt.rows, .ws_col = pty_opt.cols };
	const char *step = "open /dev/ptmx";
	int master, slave = -1, err = 0;

	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master >= 0 && (step = "unlockpt", unlockpt(master) == 0) &&
	    (step = "open the terminal's slave", (slave = open_slave(master)) >= 0) &&
	    (step = "ioctl(TIOCSWINSZ)", ioctl(master, TIOCSWINSZ, &size) == 0))
		step = NULL;
	if (step) {
		err = errno;
		rep.exit_code = err;
		send(SBX_RUN_CONTROL_FD, &rep, sizeof rep, MSG_NOSIGNAL);
		if (master >= 0)
			close(master);
		if (slave >= 0)
			close(slave);
		refuse_to_start(r, step, err, 126);
	}
	if ((err = -sbx_send_with_fds(SBX_RUN_CONTROL_FD, &rep, sizeof rep, &master, 1)) > 0) {
		/* Where a terminal cannot leave (gVisor's are its kernel's own): say why. */
		rep.exit_code = err;
		send(SBX_RUN_CONTROL_FD, &rep, sizeof rep, MSG_NOSIGNAL);
		close(master);
		close(slave);
		refuse_to_start(r, "sending the terminal to the host", err, 126);
	}
	/* The host holds the master now; ours would keep the terminal from ever hanging up. */
	close(master);
	for (int fd = 0; fd <= 2; fd++)
		dup2(slave, fd);
	close(slave);
}

static void start_command(struct runner *r)
{
	const char *failed = NULL;
	int err = spawn_command(r, &failed);

	if (err)
		refuse_to_start(r, *failed ? failed : NULL, err,
		                !*failed && (err == ENOENT || err == ENOTDIR) ? 127 : 126);
	detach_stdio();
}

/* Notes whether the main process has ended, reaping other children that ended meanwhile.
 * The main process stays a zombie, so its pid, which is also the process group the runner
 * signals, cannot be reused until the tree is dead. */
static void check_command(struct runner *r)
{
	for (;;) {
		siginfo_t si;

		si.si_pid = 0;
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (si.si_pid == 0)
			return;
		if (si.si_pid == r->cmd) {
			note_status_code(r, si.si_code != CLD_EXITED, si.si_status);
			return;
		}
		waitpid(si.si_pid, NULL, 0); /* an orphan the command left: already a zombie */
	}
}

/* Returns true when a terminating signal asks the runner to go. */
static bool drain_signals(int sigfd)
{
	struct signalfd_siginfo si;
	bool terminate = false;

	while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si)
		if (si.ssi_signo != SIGCHLD)
			terminate = true;
	return terminate;
}

static void signal_command(const struct runner *r, int sig)
{
	if (sig < 0 || sig >= NSIG || r->cmd_reaped)
		return;
	kill(-r->cmd, sig);
}

/* Handles one request; returns false when the runner must end (how says why). */
static bool handle_request(const struct runner *r, enum ending *how)
{
	struct sbx_run_request req;
	ssize_t n = recv(SBX_RUN_CONTROL_FD, &req, sizeof req, MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0) {
		*how = END_HOST_GONE;
		return false;
	}
	if (n != (ssize_t)sizeof req)
		return true; /* not ours to guess at */
	if (req.op == SBX_RUN_KILL) {
		*how = END_KILLED;
		return false;
	}
	if (req.op == SBX_RUN_SIGNAL)
		signal_command(r, req.sig);
	return true;
}

static enum ending serve(struct runner *r)
{
	struct pollfd fds[3] = {
		{ .fd = SBX_RUN_CONTROL_FD, .events = POLLIN },
		{ .fd = r->sigfd, .events = POLLIN },
		{ .fd = r->hostfd, .events = POLLIN }, /* ignored by poll when -1 */
	};
	enum ending how;

	for (;;) {
		if (poll(fds, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			return END_KILLED; /* cannot wait any more: end it rather than hang */
		}
		if (fds[2].revents)
			return END_HOST_GONE;
		if (fds[1].revents) {
			if (drain_signals(r->sigfd))
				return END_KILLED;
			check_command(r);
			if (r->cmd_ended)
				return END_EXITED;
		}
		if (fds[0].revents && !handle_request(r, &how))
			return how;
	}
}

/* ---- killing the tree ------------------------------------------------------------------ */

struct proc_entry {
	pid_t pid, ppid, sid;
	bool zombie;
	ssize_t parent;               /* index of the parent in the table, or -1 */
	bool ours;
};

/* The parent, session and state of a process from /proc/<pid>/stat; false when it is gone. */
static bool read_stat(int procfd, const char *pid, struct proc_entry *e)
{
	char path[64], buf[512], *p;
	int fd, ppid, pgrp, sid;
	ssize_t n;
	char state;

	snprintf(path, sizeof path, "%s/stat", pid);
	fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* "pid (comm) state ppid pgrp session ...": comm may hold spaces and ')', so its end is
	 * the last ')' */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %d %d %d", &state, &ppid, &pgrp, &sid) != 4)
		return false;
	*e = (struct proc_entry){ atoi(pid), ppid, sid, state == 'Z', -1, false };
	return true;
}

/* Every process's pid and parent, from /proc. */
static size_t read_process_table(struct proc_entry **out)
{
	DIR *dir = opendir("/proc");
	struct proc_entry *table = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;

	while (dir && (e = readdir(dir))) {
		struct proc_entry entry;

		if (e->d_name[0] < '1' || e->d_name[0] > '9' || !read_stat(dirfd(dir), e->d_name, &entry))
			continue;
		if (n == cap) {
			size_t bigger_cap = cap ? 2 * cap : 256;
			struct proc_entry *bigger = realloc(table, bigger_cap * sizeof *table);

			if (!bigger)
				break; /* kill what we have seen; the next round sees more */
			table = bigger;
			cap = bigger_cap;
		}
		table[n++] = entry;
	}
	if (dir)
		closedir(dir);
	*out = table;
	return n;
}

static int compare_pid(const void *a, const void *b)
{
	pid_t x = ((const struct proc_entry *)a)->pid, y = ((const struct proc_entry *)b)->pid;

	return (x > y) - (x < y);
}

/* Marks the processes whose parent chain leads to root. */
static void mark_descendants(struct proc_entry *table, size_t n, pid_t root)
{
	bool grew = true;

	qsort(table, n, sizeof *table, compare_pid);
	for (size_t i = 0; i < n; i++) {
		struct proc_entry key = { .pid = table[i].ppid };
		struct proc_entry *parent = bsearch(&key, table, n, sizeof *table, compare_pid);

		table[i].parent = parent ? parent - table : -1;
	}
	/* Children may come before their parents in pid order: propagate until stable. */
	while (grew) {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			struct proc_entry *p = &table[i];

			if (!p->ours && p->pid != root &&
			    (p->ppid == root || (p->parent >= 0 && table[p->parent].ours))) {
				p->ours = true;
				grew = true;
			}
		}
	}
}

/* Kills the runner's descendants and, without a subreaper, the live members of the
 * command's session that were reparented away. Returns how many of those it found: they are
 * nobody's children here, so only another look tells when they are gone. */
static size_t kill_descendants(const struct runner *r)
{
	struct proc_entry *table;
	size_t n = read_process_table(&table), strays = 0;

	if (!table)
		return 0;
	mark_descendants(table, n, r->self);
	for (size_t i = 0; i < n; i++) {
		bool stray = !r->subreaper && !table[i].ours && !table[i].zombie &&
		             table[i].sid == r->cmd && table[i].pid != r->self;

		if (table[i].ours || stray)
			kill(table[i].pid, SIGKILL);
		strays += stray;
	}
	free(table);
	return strays;
}

/* Reaps every child that has ended; true once the runner has no child left at all, which
 * means the whole tree is gone (every descendant has a parent chain through a child). */
static bool reap_all(struct runner *r)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid > 0) {
			if (pid == r->cmd) {
				if (!r->cmd_ended)
					note_status_code(r, WIFSIGNALED(status),
					                 WIFSIGNALED(status) ? WTERMSIG(status)
					                                     : WEXITSTATUS(status));
				r->cmd_reaped = true;
			}
			continue;
		}
		if (pid < 0 && errno == EINTR)
			continue;
		return pid < 0 && errno == ECHILD;
	}
}

static void kill_tree(struct runner *r)
{
	const struct timespec pause = { 0, KILL_ROUND_PAUSE_NS };
	int64_t start;

	/* The main process may not have reached setsid() yet, so signal it by pid as well. */
	signal_command(r, SIGKILL);
	kill(r->cmd, SIGKILL);
	start = sbx_now_ms();
	/* Processes may fork while being found; each round kills all it sees, and a killed
	 * process forks no more, so the rounds converge. */
	for (;;) {
		bool children_gone = reap_all(r);
		size_t strays = children_gone && r->subreaper ? 0 : kill_descendants(r);

		if ((children_gone && strays == 0) || sbx_now_ms() - start >= KILL_DEADLINE_MS)
			break;
		nanosleep(&pause, NULL);
	}
}

/* A kept runner tells its init it is idle (one byte on idle_fd; -1: a one-shot runner) as
 * soon as the command's tree is gone, before the report: the host sends its next request
 * only once it has the report, and the init, which reads the byte first, then hands that
 * request to this runner instead of forking another because this one still looked busy. */
static void tell_idle(int idle_fd)
{
	if (idle_fd >= 0)
		send(idle_fd, "", 1, MSG_NOSIGNAL);   /* the init gone: the next read ends the runner */
}

static bool direct_open, channel_wanted;

void sbx_runner_offer_channel(void)
{
	channel_wanted = true;
}

bool sbx_runner_has_direct(void)
{
	return direct_open;
}

void sbx_runner_drop_direct(void)
{
	if (direct_open)
		close(SBX_RUNNER_DIRECT_FD);
	direct_open = false;
}

/* The fixed fd of a channel the runner may offer stays taken while the command runs (by
 * /dev/null until then), so that nothing the runner opens meanwhile (its signalfd) lands
 * there and is replaced by the channel later. */
static void reserve_direct_fd(void)
{
	int fd;

	if (direct_open || !channel_wanted || (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
		return;
	if (fd != SBX_RUNNER_DIRECT_FD) {
		if (dup3(fd, SBX_RUNNER_DIRECT_FD, O_CLOEXEC) < 0)
			channel_wanted = false;   /* nothing reserved: no channel is offered */
		close(fd);
	}
}

/* Sends the report with one end of a new channel of the runner's own (run_proto.h), the other
 * kept on SBX_RUNNER_DIRECT_FD. False when none could be made or sent: the report is still
 * to be sent then. */
static bool report_offering_channel(const struct runner *r)
{
	int sv[2], host;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return false;
	/* Either end may have come out on the fixed fd (it was free): the host's moves above
	 * it first. */
	host = fcntl(sv[0], F_DUPFD_CLOEXEC, SBX_RUNNER_DIRECT_FD + 1);
	close(sv[0]);
	if (host < 0 || (sv[1] != SBX_RUNNER_DIRECT_FD &&
	                 dup3(sv[1], SBX_RUNNER_DIRECT_FD, O_CLOEXEC) < 0)) {
		if (host >= 0)
			close(host);
		close(sv[1]);
		return false;
	}
	if (sv[1] != SBX_RUNNER_DIRECT_FD)
		close(sv[1]);
	direct_open = true;
	if (sbx_send_with_fds(SBX_RUN_CONTROL_FD, &r->report, sizeof r->report, &host, 1) < 0) {
		close(host);
		sbx_runner_drop_direct();
		return false;
	}
	close(host);
	return true;
}

/* The end of a command: the report (unless the host is gone), and a kept runner becomes idle
 * -- the host's through a channel of its own where it can, else the init's (runner.h). One
 * that is its host's already stays so: the host takes it back with the report, or closes
 * the channel, which the caller reads as the runner being the init's again. */
static void end_command(const struct runner *r, int idle_fd, bool report)
{
	bool offered = false;

	if (idle_fd >= 0 && !direct_open && report && channel_wanted)
		offered = report_offering_channel(r);
	if (idle_fd >= 0 && !direct_open)
		tell_idle(idle_fd);
	if (report && !offered)
		send_report(r);
}

/* Runs one command; fds from first_to_close up are closed before (fds between the control
 * socket and it are the caller's, close-on-exec). */
static int run_command(char **argv, unsigned first_to_close, int idle_fd)
{
	struct runner r = { .argv = argv, .report = { SBX_RUN_EXITED, -1, SIGKILL } };
	enum ending how;
	bool host_gone;

	if (!check_control_fd())
		return -1;
	/* A host may leak fds without close-on-exec; holding them would keep its pipes open. */
	close_fds_from(first_to_close);
	if (idle_fd >= 0)
		reserve_direct_fd();
	r.subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
	/* EINVAL: a kernel that keeps the role for PID 1 (see the top); anything else is not
	 * a kernel we know how to run under. */
	if (!r.subreaper && errno != EINVAL)
		refuse_to_start(&r, "prctl(PR_SET_CHILD_SUBREAPER)", errno, 126);
	/* No setsid here: whoever starts the runner puts it out of the host's session (the local
	 * backend with posix_spawn's SETSID, the sandbox init by having none), and a new session
	 * per runner would cost the kernel a scheduling group per command. */
	r.self = getpid();
	r.sigfd = watch_signals();
	if (r.sigfd < 0)
		refuse_to_start(&r, "signalfd", errno, 126);
	r.hostfd = watch_host(&host_gone);
	if (host_gone) {
		detach_stdio(); /* nobody to run it for */
		end_command(&r, idle_fd, false);
	} else {
		if (pty_opt.wanted)
			open_terminal(&r);
		start_command(&r);
		how = serve(&r);
		kill_tree(&r);
		end_command(&r, idle_fd, how != END_HOST_GONE);
	}
	close(r.sigfd);
	if (r.hostfd >= 0)
		close(r.hostfd);
	return 0;
}

int sbx_runner_run(char **argv)
{
	return run_command(argv, SBX_RUN_CONTROL_FD + 1, -1);
}

/* What one command set leaves nothing for the next: its limits, its terminal, and the fds
 * its host gave (the command's stdio is /dev/null by now, the control socket goes). */
static void forget_command(void)
{
	for (size_t i = 0; i < sizeof rlimit_opts / sizeof rlimit_opts[0]; i++)
		rlimit_opts[i].set = false;
	pty_opt.wanted = false;
	channel_wanted = false;
	/* fd 3 stays taken (by /dev/null, which fds 0-2 are now), so that the next command's
	 * fds, received meanwhile, land above the runner's fixed ones. */
	dup2(STDIN_FILENO, SBX_RUN_CONTROL_FD);
	/* Holding no directory of the last command's. */
	if (chdir("/") < 0) {
		/* the next command changes it anyway */
	}
}

int sbx_runner_run_kept(char **argv)
{
	int r = run_command(argv, (direct_open ? SBX_RUNNER_DIRECT_FD : SBX_RUNNER_KEPT_FD) + 1,
	                    SBX_RUNNER_KEPT_FD);

	forget_command();
	return r;
}
