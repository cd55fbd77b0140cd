/* agentsbx bg: a long-running command (a dev server, a watcher, a long build) started by one
 * CLI run and read or stopped by later ones.
 *
 * The CLI process ends, so something else must hold the workspace and take the command's
 * output: `bg start` leaves a keeper behind, a process of its own session that opens the
 * workspace (or attaches to a detached or managed one), starts the command with the process
 * API and writes what it prints into the job's folder on the host, where every later run
 * finds it:
 *   <base>/bg/<job>/command    the command line, for `bg ls`
 *   <base>/bg/<job>/stdout     what it printed, up to LOG_MAX bytes per stream (the rest is
 *   <base>/bg/<job>/stderr     counted in status)
 *   <base>/bg/<job>/read       how far `bg output` has read each stream
 *   <base>/bg/<job>/lock       flocked by the keeper as long as it lives
 *   <base>/bg/<job>/pid        the keeper's pid, for `bg kill`
 *   <base>/bg/<job>/status     written once at the end: {"status", "exit_code", ...}
 * <base> is --base-dir, else $XDG_STATE_HOME/agentsbx, else ~/.local/state/agentsbx (the
 * workspace manager's default). The command lives exactly as long as the keeper: when it
 * ends, the keeper records it and closes the workspace; `bg kill` asks the keeper, which kills
 * the command's whole tree before it closes. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>

#include <agentsbx/agentsbx.h>
#include "cli/bg.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/json.h"

#define EXIT_LIBRARY_ERROR 125
#define LOG_MAX ((uint64_t)64 << 20)
#define READ_CHUNK 65536
#define KILL_WAIT_MS 10000
#define POLL_MS 200
#define DRAIN_GRACE_MS 2000
#define KILL_GRACE_MS 5000    /* under KILL_WAIT_MS: `bg kill` hears the end */

const char sbx_cli_bg_usage[] =
	"agentsbx bg start [--base-dir DIR] [--id ID | --config JSON|@FILE --backend NAME "
	"--workdir DIR] -- CMD [ARG...]\n"
	"       agentsbx bg output [--base-dir DIR] JOB\n"
	"       agentsbx bg kill [--base-dir DIR] JOB\n"
	"       agentsbx bg ls [--base-dir DIR]";

struct bg_options {
	const char *base_dir, *id, *config, *backend, *workdir;
};

enum { BG_BASE_DIR = 'd', BG_ID = 'I', BG_CONFIG = 'c', BG_BACKEND = 'b', BG_WORKDIR = 'w',
       BG_HELP = 'h' };

static const struct option bg_long_options[] = {
	{ "base-dir", required_argument, NULL, BG_BASE_DIR },
	{ "id", required_argument, NULL, BG_ID },
	{ "config", required_argument, NULL, BG_CONFIG },
	{ "backend", required_argument, NULL, BG_BACKEND },
	{ "workdir", required_argument, NULL, BG_WORKDIR },
	{ "help", no_argument, NULL, BG_HELP },
	{ NULL, 0, NULL, 0 },
};

__attribute__((format(printf, 1, 2)))
static int bg_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "agentsbx bg: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_LIBRARY_ERROR;
}

__attribute__((format(printf, 1, 2)))
static char *fmt(const char *f, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, f);
	n = vasprintf(&s, f, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}

/* Returns the index of the first operand, or -1 with *code set. */
static int parse_bg_options(int argc, char **argv, struct bg_options *o, int *code)
{
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+d:I:c:b:w:h", bg_long_options, NULL)) != -1) {
		switch (c) {
		case BG_BASE_DIR: o->base_dir = optarg; break;
		case BG_ID: o->id = optarg; break;
		case BG_CONFIG: o->config = optarg; break;
		case BG_BACKEND: o->backend = optarg; break;
		case BG_WORKDIR: o->workdir = optarg; break;
		case BG_HELP:
			printf("usage: %s\n", sbx_cli_bg_usage);
			*code = 0;
			return -1;
		default:
			fprintf(stderr, "agentsbx: unknown or incomplete option '%s'\nusage: %s\n",
			        argv[optind - 1], sbx_cli_bg_usage);
			*code = 2;
			return -1;
		}
	}
	return optind;
}

/* ---- the jobs folder --------------------------------------------------------------------- */

static int mkdir_private(const char *path)
{
	return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -errno;
}

/* <base>/bg, made (0700) when missing; malloc'ed, or NULL with the reason printed. */
static char *jobs_dir(const struct bg_options *o)
{
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	_cleanup_free_ char *base = NULL;
	char *dir = NULL;

	if (o->base_dir)
		base = strdup(o->base_dir);
	else if (xdg && *xdg == '/')
		base = fmt("%s/agentsbx", xdg);
	else if (home && *home == '/')
		base = fmt("%s/.local/state/agentsbx", home);
	if (!base) {
		bg_fail("no folder for the jobs: give --base-dir (HOME is not set)");
		return NULL;
	}
	if (!o->base_dir) {
		/* The default's parents, as the workspace manager makes them. */
		for (char *p = strchr(base + 1, '/'); p; p = strchr(p + 1, '/')) {
			*p = '\0';
			mkdir_private(base);
			*p = '/';
		}
	}
	dir = fmt("%s/bg", base);
	if (!dir || mkdir_private(base) < 0 || mkdir_private(dir) < 0) {
		bg_fail("cannot make %s: %s", dir ? dir : base, strerror(errno));
		free(dir);
		return NULL;
	}
	return dir;
}

/* A job's folder, after checking the name is one bg start made (no path tricks). */
static int open_job(const struct bg_options *o, const char *job, int *fd)
{
	_cleanup_free_ char *dir = NULL;

	if (strncmp(job, "bg-", 3) != 0 || strlen(job) > 32 || strpbrk(job, "/.") || !job[3])
		return bg_fail("'%s' is not a job id (bg start prints one, like bg-Ab12Cd)", job);
	if (!(dir = jobs_dir(o)))
		return EXIT_LIBRARY_ERROR;
	_cleanup_close_ int jobs = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (jobs < 0 || (*fd = openat(jobs, job, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	                                         O_CLOEXEC)) < 0)
		return bg_fail("no job %s in %s", job, dir);
	return 0;
}

static int write_file(int dir, const char *name, const char *text)
{
	return sbx_fs_write_atomic(dir, name, text, strlen(text), 0600, 0);
}

/* The whole small file, NUL-terminated (malloc'ed), or NULL. */
static char *read_small(int dir, const char *name)
{
	_cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char *data = NULL;
	size_t len;

	if (fd < 0 || sbx_fs_read_fd(fd, 1 << 20, &data, &len) < 0)
		return NULL;
	return data;
}

/* Is the job's keeper alive (it holds the lock as long as it lives)? */
static bool keeper_alive(int dir)
{
	_cleanup_close_ int fd = openat(dir, "lock", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return false;
	if (flock(fd, LOCK_SH | LOCK_NB) == 0)
		return false;
	return errno == EWOULDBLOCK;
}

/* ---- the keeper -------------------------------------------------------------------------- */

struct keeper {
	int dir;
	int log[2];               /* stdout, stderr files */
	uint64_t kept[2], dropped[2];
	sbx_process *proc;
	bool killed;
};

static void keep_output(struct keeper *k, int i, const char *data, size_t len)
{
	size_t room = k->kept[i] < LOG_MAX ? (size_t)(LOG_MAX - k->kept[i]) : 0;
	size_t n = len < room ? len : room;

	if (n && write(k->log[i], data, n) == (ssize_t)n)
		k->kept[i] += n;
	else
		n = 0;
	k->dropped[i] += len - n;
}

/* Reads a ready stream; false at its end. */
static bool pump(struct keeper *k, int fd, int i)
{
	char chunk[READ_CHUNK];
	ssize_t n;

	do
		n = read(fd, chunk, sizeof chunk);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return false;
	keep_output(k, i, chunk, (size_t)n);
	return true;
}

static void write_status(struct keeper *k, int code, int sig)
{
	const char *status = k->killed ? "killed" : code == 0 ? "completed" : "failed";
	char text[512];

	snprintf(text, sizeof text, "{\"status\":\"%s\",\"exit_code\":%d,\"signal\":%d,"
	         "\"stdout_dropped\":%llu,\"stderr_dropped\":%llu}\n", status, code, sig,
	         (unsigned long long)k->dropped[0], (unsigned long long)k->dropped[1]);
	write_file(k->dir, "status", text);
}

/* Any answer but "still running" is the end: an error says the runner (or the sandbox) died
 * without a report, and every later wait says so again; taken for "not yet", the keeper
 * kept a dead command for ever and the workspace never closed. */
static bool saw_end(sbx_process *proc, int *code, int *sig)
{
	int r = sbx_process_wait(proc, 0, code, sig);

	if (r == -SBX_ETIMEDOUT)
		return false;
	if (r < 0) {
		*code = -1;
		*sig = 0;
	}
	return true;
}

/* Until the command ends: its output into the files, a TERM/INT/HUP (bg kill) into a kill.
 * The end is polled for as well as the streams: a command may close its output and run on,
 * and a kill must still reach it. A kill that does not end it within KILL_GRACE_MS ends the
 * keeping anyway: closing the workspace then takes the command's whole tree down. */
static void keep(struct keeper *k, int sigfd)
{
	int fds[2] = { sbx_process_fd(k->proc, SBX_STDOUT), sbx_process_fd(k->proc, SBX_STDERR) };
	int code = -1, sig = 0;
	int64_t drain_until = -1, kill_until = -1;

	for (;;) {
		struct pollfd p[3] = { { .fd = sigfd, .events = POLLIN },
		                       { .fd = fds[0], .events = POLLIN },
		                       { .fd = fds[1], .events = POLLIN } };
		struct signalfd_siginfo si;

		if (poll(p, 3, drain_until >= 0 ? 50 : POLL_MS) < 0 && errno != EINTR)
			break;
		if ((p[0].revents & POLLIN) && read(sigfd, &si, sizeof si) == (ssize_t)sizeof si &&
		    !k->killed && drain_until < 0) {
			k->killed = true;
			sbx_process_kill(k->proc);
			kill_until = sbx_now_ms() + KILL_GRACE_MS;
		}
		for (int i = 0; i < 2; i++)
			if (p[i + 1].revents && !pump(k, fds[i], i))
				fds[i] = -1;
		if (drain_until < 0 && saw_end(k->proc, &code, &sig))
			drain_until = sbx_now_ms() + DRAIN_GRACE_MS;   /* what the pipes still hold */
		if (drain_until >= 0 && ((fds[0] < 0 && fds[1] < 0) || sbx_now_ms() > drain_until))
			break;
		if (drain_until < 0 && kill_until >= 0 && sbx_now_ms() > kill_until) {
			code = -1;
			sig = SIGKILL;
			break;
		}
	}
	write_status(k, code, sig);
}

struct ws_hold {
	sbx_manager *mgr;
	sbx_workspace *ws;
};

static int open_workspace(const struct bg_options *o, struct ws_hold *h, char *why, size_t len)
{
	_cleanup_free_ char *config = NULL;
	sbx_buf b = { 0 };
	int r;

	if (!o->id) {
		if (sbx_cli_build_config(o->config, o->backend, o->workdir, &config) != 0) {
			snprintf(why, len, "the workspace options are not valid (see above)");
			return -1;
		}
		if ((r = sbx_workspace_open(config, &h->ws)) < 0)
			snprintf(why, len, "open workspace: %s", sbx_last_error());
		return r;
	}
	sbx_buf_puts(&b, "{\"workspace\":{\"backend\":\"local\"},\"sweep_interval_s\":0");
	if (o->base_dir) {
		sbx_buf_puts(&b, ",\"base_dir\":");
		sbx_buf_json_string(&b, o->base_dir, strlen(o->base_dir));
	}
	sbx_buf_puts(&b, "}");
	r = b.oom ? -SBX_ENOMEM : sbx_manager_open(b.data, &h->mgr);
	sbx_buf_free(&b);
	if (r == 0 && (r = sbx_manager_get_by_id(h->mgr, o->id, &h->ws)) < 0) {
		sbx_manager_free(h->mgr);
		h->mgr = NULL;
	}
	if (r < 0)
		snprintf(why, len, "workspace %s: %s", o->id, sbx_last_error());
	return r;
}

static void close_workspace(struct ws_hold *h)
{
	if (h->mgr) {
		sbx_manager_release(h->mgr, h->ws);
		sbx_manager_free(h->mgr);   /* a detached sandbox runs on */
	} else {
		sbx_workspace_close(h->ws);
	}
}

static int open_logs(struct keeper *k)
{
	static const char *const names[] = { "stdout", "stderr" };

	for (int i = 0; i < 2; i++)
		if ((k->log[i] = openat(k->dir, names[i], O_WRONLY | O_CREAT | O_EXCL | O_APPEND |
		                                          O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
			return -errno;
	return 0;
}

/* The keeper: reports "ok" or why not on the pipe, then keeps the command. Never returns. */
static void run_keeper(const struct bg_options *o, int dir, char **cmd, int report)
{
	struct keeper k = { .dir = dir, .log = { -1, -1 } };
	struct ws_hold h = { 0 };
	_cleanup_close_ int lock = -1;
	char why[1024] = "", pid[32];
	sigset_t set;
	int sigfd;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sigfd = signalfd(-1, &set, SFD_CLOEXEC);
	lock = openat(dir, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	snprintf(pid, sizeof pid, "%d\n", (int)getpid());
	if (sigfd < 0 || lock < 0 || flock(lock, LOCK_EX) < 0 || write_file(dir, "pid", pid) < 0 ||
	    open_logs(&k) < 0)
		snprintf(why, sizeof why, "the job's folder: %s", strerror(errno));
	else if (open_workspace(o, &h, why, sizeof why) == 0 &&
	         sbx_process_spawn(h.ws, (const char *const *)cmd, NULL, &k.proc) < 0)
		snprintf(why, sizeof why, "start: %s", sbx_last_error());
	if (k.proc)
		sbx_process_close_stdin(k.proc);
	if (write(report, *why ? why : "ok", strlen(*why ? why : "ok")) < 0) {
		/* The starter is gone: the job runs on all the same. */
	}
	close(report);
	if (k.proc) {
		keep(&k, sigfd);
		sbx_process_free(k.proc);
	}
	if (h.ws)
		close_workspace(&h);
	_exit(*why ? 1 : 0);
}

/* Forks the keeper into a session of its own, detached from the terminal, and waits for its
 * word that the command runs (or why not). */
static int start_keeper(const struct bg_options *o, int dir, char **cmd, char *why, size_t len)
{
	int p[2];
	ssize_t n;
	pid_t kid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return snprintf(why, len, "pipe: %s", strerror(errno)), -1;
	fflush(NULL);
	if ((kid = fork()) < 0)
		return snprintf(why, len, "fork: %s", strerror(errno)), -1;
	if (kid == 0) {
		close(p[0]);
		setsid();
		if (fork() != 0)
			_exit(0);     /* the keeper is the grandchild: no one waits for it */
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		run_keeper(o, dir, cmd, p[1]);
	}
	close(p[1]);
	while (waitpid(kid, NULL, 0) < 0 && errno == EINTR)
		;
	n = read(p[0], why, len - 1);
	close(p[0]);
	why[n > 0 ? n : 0] = '\0';
	if (n <= 0)
		snprintf(why, len, "the keeper process ended before it started the command");
	return strcmp(why, "ok") == 0 ? 0 : -1;
}

static char *command_line(char **cmd)
{
	sbx_buf b = { 0 };

	for (size_t i = 0; cmd[i]; i++) {
		sbx_buf_puts(&b, i ? " " : "");
		sbx_buf_puts(&b, cmd[i]);
	}
	sbx_buf_puts(&b, "\n");
	return b.oom ? (sbx_buf_free(&b), NULL) : sbx_buf_steal(&b, NULL);
}

static int bg_start(int argc, char **argv)
{
	struct bg_options o = { 0 };
	_cleanup_free_ char *jobs = NULL, *path = NULL, *line = NULL;
	_cleanup_close_ int dir = -1;
	char why[1024];
	int code = 0, first;

	if ((first = parse_bg_options(argc, argv, &o, &code)) < 0)
		return code;
	if (first < argc && !strcmp(argv[first], "--"))
		first++;
	if (first >= argc)
		return bg_fail("start: expected a command\nusage: %s", sbx_cli_bg_usage);
	if (o.id && (o.config || o.backend || o.workdir))
		return bg_fail("start: --id names a managed workspace; it takes no --config, "
		               "--backend or --workdir");
	if (!(jobs = jobs_dir(&o)) || !(path = fmt("%s/bg-XXXXXX", jobs)))
		return EXIT_LIBRARY_ERROR;
	if (!mkdtemp(path) || (dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return bg_fail("cannot make a job folder in %s: %s", jobs, strerror(errno));
	if (!(line = command_line(argv + first)) || write_file(dir, "command", line) < 0 ||
	    start_keeper(&o, dir, argv + first, why, sizeof why) < 0) {
		sbx_fs_remove_tree(AT_FDCWD, path);
		return bg_fail("start: %s", line ? why : "out of memory");
	}
	printf("%s\n", strrchr(path, '/') + 1);
	return 0;
}

/* ---- reading and stopping ---------------------------------------------------------------- */

/* Copies the stream's bytes after *off to fd and advances *off. */
static void copy_new(int dir, const char *name, uint64_t *off, int fd)
{
	_cleanup_close_ int in = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char chunk[READ_CHUNK];
	ssize_t n;

	if (in < 0)
		return;
	while ((n = pread(in, chunk, sizeof chunk, (off_t)*off)) > 0) {
		if (write(fd, chunk, (size_t)n) != n)
			return;
		*off += (uint64_t)n;
	}
}

/* "completed, exit code 0" and the like, from the status file; running or lost without. */
static void describe(int dir, char *out, size_t len, bool *running)
{
	_cleanup_free_ char *text = read_small(dir, "status");
	sbx_json *st = NULL;
	char err[128];

	*running = false;
	if (!text) {
		*running = keeper_alive(dir);
		snprintf(out, len, "%s", *running ? "running" :
		         "failed: its keeper process ended without recording the end");
		return;
	}
	if (sbx_json_parse(text, strlen(text), &st, err, sizeof err) < 0) {
		snprintf(out, len, "unknown (bad status file: %s)", err);
		return;
	}
	const sbx_json *s = sbx_json_get(st, "status"), *c = sbx_json_get(st, "exit_code"),
	               *od = sbx_json_get(st, "stdout_dropped"), *ed = sbx_json_get(st, "stderr_dropped");
	size_t used = (size_t)snprintf(out, len, "%s, exit code %lld",
	                               s && s->type == SBX_JSON_STRING ? s->str : "?",
	                               c && c->type == SBX_JSON_INT ? (long long)c->i : -1LL);
	if (od && ed && od->type == SBX_JSON_INT && ed->type == SBX_JSON_INT && (od->i || ed->i) &&
	    used < len)
		snprintf(out + used, len - used, " (%lld bytes of stdout and %lld of stderr beyond "
		         "the %llu MiB kept were dropped)", (long long)od->i, (long long)ed->i,
		         (unsigned long long)(LOG_MAX >> 20));
	sbx_json_free(st);
}

static int bg_output(const struct bg_options *o, const char *job)
{
	_cleanup_close_ int dir = -1;
	_cleanup_free_ char *offsets = NULL;
	unsigned long long out_off = 0, err_off = 0;
	char state[256], text[64];
	bool running;
	int code;

	if ((code = open_job(o, job, &dir)) != 0)
		return code;
	/* The status first: output read after it is all there is when it says ended. */
	describe(dir, state, sizeof state, &running);
	if ((offsets = read_small(dir, "read")))
		sscanf(offsets, "%llu %llu", &out_off, &err_off);
	uint64_t oo = out_off, eo = err_off;
	fflush(stdout);
	copy_new(dir, "stdout", &oo, STDOUT_FILENO);
	copy_new(dir, "stderr", &eo, STDERR_FILENO);
	snprintf(text, sizeof text, "%llu %llu\n", (unsigned long long)oo, (unsigned long long)eo);
	if (write_file(dir, "read", text) < 0)
		return bg_fail("%s: cannot note how far it was read", job);
	fprintf(stderr, "agentsbx bg: %s %s\n", job, state);
	return 0;
}

static int bg_kill(const struct bg_options *o, const char *job)
{
	_cleanup_close_ int dir = -1;
	_cleanup_free_ char *pid = NULL;
	char state[256];
	bool running;
	int code;

	if ((code = open_job(o, job, &dir)) != 0)
		return code;
	describe(dir, state, sizeof state, &running);
	if (!running)
		return bg_fail("%s is not running (%s)", job, state);
	if (!(pid = read_small(dir, "pid")) || atoi(pid) <= 1 || kill(atoi(pid), SIGTERM) < 0)
		return bg_fail("%s: cannot signal its keeper: %s", job, strerror(errno));
	/* The keeper kills the command's tree, records it and closes the workspace. */
	for (int waited = 0; keeper_alive(dir) && waited < KILL_WAIT_MS; waited += 20)
		usleep(20000);
	describe(dir, state, sizeof state, &running);
	printf("%s %s\n", job, state);
	return running ? bg_fail("%s did not end within %d s", job, KILL_WAIT_MS / 1000) : 0;
}

static int bg_ls(const struct bg_options *o)
{
	_cleanup_free_ char *jobs = jobs_dir(o);
	_cleanup_closedir_ DIR *d = jobs ? opendir(jobs) : NULL;
	struct dirent *e;

	if (!d)
		return jobs ? bg_fail("cannot list %s: %s", jobs, strerror(errno)) : EXIT_LIBRARY_ERROR;
	while ((e = readdir(d))) {
		_cleanup_close_ int dir = -1;
		_cleanup_free_ char *cmd = NULL;
		char state[256];
		bool running;

		if (strncmp(e->d_name, "bg-", 3) != 0 ||
		    (dir = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		                                       O_CLOEXEC)) < 0)
			continue;
		describe(dir, state, sizeof state, &running);
		cmd = read_small(dir, "command");
		printf("%s\t%s\t%s", e->d_name, state, cmd ? cmd : "?\n");
	}
	return 0;
}

int sbx_cli_bg(int argc, char **argv)
{
	struct bg_options o = { 0 };
	int code = 0, first;

	if (argc < 2)
		return bg_fail("expected start, output, kill or ls\nusage: %s", sbx_cli_bg_usage);
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return printf("usage: %s\n", sbx_cli_bg_usage), 0;
	if (strcmp(argv[1], "start") && strcmp(argv[1], "output") && strcmp(argv[1], "kill") &&
	    strcmp(argv[1], "ls")) {
		fprintf(stderr, "agentsbx bg: unknown subcommand '%s'\nusage: %s\n", argv[1],
		        sbx_cli_bg_usage);
		return 2;
	}
	if (!strcmp(argv[1], "start"))
		return bg_start(argc - 1, argv + 1);
	if ((first = parse_bg_options(argc - 1, argv + 1, &o, &code)) < 0)
		return code;
	first++;   /* an index into argv again */
	if (!strcmp(argv[1], "ls"))
		return first == argc ? bg_ls(&o) : bg_fail("ls takes no operands");
	if (first + 1 != argc)
		return bg_fail("%s: expected one job id\nusage: %s", argv[1], sbx_cli_bg_usage);
	return !strcmp(argv[1], "output") ? bg_output(&o, argv[first]) : bg_kill(&o, argv[first]);
}
