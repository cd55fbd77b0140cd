/* Exec latency side by side, in one run: a bare posix_spawn of /bin/true, the same through
 * bubblewrap (the agent profile), sbx_exec of true on a warm workspace and on a cold one
 * (open + exec + close) for each backend, and whole processes as a harness starts them: the
 * one-shot CLI (`agentsbx exec -- /bin/true`) against the bwrap run, and the cost of loading
 * the library (`agentsbx version`, a fresh process that only dlopens it). Prints medians
 * (wall, and CPU for whole processes) and the ratios issue 18 sets targets for, then the
 * throughput table (bench_throughput.c), the resident memory of open workspaces and how many
 * can be open at once, and ends with one RESULT line. Not a pass/fail test: numbers for
 * people. Usage: bench-exec ROUNDS MANY CLI BENCH_LOAD LIBRARY */
#include <dirent.h>
#include <ftw.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <limits.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <agentsbx/agentsbx.h>

#include "bench_throughput.h"

extern char **environ;

#define MAX_RUNS 2000
/* Rounds of each throughput row (bench_throughput.c): medians of so many. */
#define TPUT_ROUNDS 9

typedef int (*bench_fn)(void *ctx);

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One thing timed: every contender runs once per round, in turn, so that a load that comes
 * and goes on the machine falls on all of them alike and their ratios stay fair. */
struct contender {
	const char *what;
	bench_fn fn;
	void *ctx;
	int every;                    /* runs in every n-th round only (the slow cold ones) */
	double *samples;
	double *cpu;                  /* CPU of a whole child process (user + system), or none */
	int n;
	bool failed;
};

/* CPU time of the child that spawn_and_wait last reaped, for the contender being timed. */
static double last_child_cpu_ms = -1;

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* A cold start leaves work behind that the kernel and the library finish in the background
 * (a network namespace's teardown, the next pre-started sandbox): let it finish before the
 * next contender, which would otherwise pay for it. */
static void settle(void)
{
	struct timespec pause = { 0, 50 * 1000 * 1000 };

	nanosleep(&pause, NULL);
}

static void run_rounds(struct contender *c, size_t nc, int rounds)
{
	for (size_t i = 0; i < nc; i++) {       /* warm-up, and a check that each works */
		c[i].samples = calloc((size_t)rounds, sizeof *c[i].samples);
		c[i].cpu = calloc((size_t)rounds, sizeof *c[i].cpu);
		c[i].failed = !c[i].samples || !c[i].cpu || c[i].fn(c[i].ctx) < 0;
		if (c[i].failed)
			printf("%-44s   failed: %s\n", c[i].what, sbx_last_error());
	}
	for (int r = 0; r < rounds; r++)
		for (size_t i = 0; i < nc; i++) {
			if (c[i].failed || r % c[i].every)
				continue;
			double t0 = now_ms();
			last_child_cpu_ms = -1;
			if (c[i].fn(c[i].ctx) < 0) {
				c[i].failed = true;
				printf("%-44s   failed: %s\n", c[i].what, sbx_last_error());
				continue;
			}
			c[i].cpu[c[i].n] = last_child_cpu_ms;
			c[i].samples[c[i].n++] = now_ms() - t0;
			if (c[i].every > 1)
				settle();
		}
}

static double median_of(struct contender *c)
{
	if (c->failed || c->n == 0)
		return -1;
	qsort(c->samples, (size_t)c->n, sizeof c->samples[0], compare_double);
	return c->samples[c->n / 2];
}

/* The median CPU of a whole-process contender, or -1 when it runs in this process. */
static double median_cpu_of(struct contender *c)
{
	if (c->failed || c->n == 0 || c->cpu[0] < 0)
		return -1;
	qsort(c->cpu, (size_t)c->n, sizeof c->cpu[0], compare_double);
	return c->cpu[c->n / 2];
}

static double timeval_ms(struct timeval tv)
{
	return (double)tv.tv_sec * 1e3 + (double)tv.tv_usec / 1e3;
}

/* Runs argv (in directory `cwd` when given, its output to /dev/null when `quiet`) and waits;
 * the child's CPU, with that of its own reaped children, goes to last_child_cpu_ms. */
static int spawn_in_and_wait(const char *const argv[], const char *cwd, bool quiet)
{
	posix_spawn_file_actions_t fa;
	struct rusage ru;
	pid_t pid;
	int status, r;

	posix_spawn_file_actions_init(&fa);
	if (cwd)
		posix_spawn_file_actions_addchdir_np(&fa, cwd);
	if (quiet)
		posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	r = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0)
		return -1;
	if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	last_child_cpu_ms = timeval_ms(ru.ru_utime) + timeval_ms(ru.ru_stime);
	return 0;
}

static int spawn_and_wait(const char *const argv[])
{
	return spawn_in_and_wait(argv, NULL, false);
}

static int bare_true(void *ctx)
{
	const char *argv[] = { "/bin/true", NULL };

	(void)ctx;
	return spawn_and_wait(argv);
}

/* The agent profile measured in the anchors: --unshare-all, --die-with-parent,
 * --new-session, read-only /usr and /etc, merged-/usr symlinks, /proc, /dev, /tmp and a
 * workspace bind. */
static int bwrap_true(void *ctx)
{
	const char *argv[] = {
		"/usr/bin/bwrap", "--unshare-all", "--die-with-parent", "--new-session",
		"--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc",
		"--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
		"--bind", (const char *)ctx, "/workspace", "--chdir", "/workspace", "/bin/true", NULL,
	};

	return spawn_and_wait(argv);
}

static int exec_true(void *ctx)
{
	/* The same path as the bare spawn's: no PATH search on one side only. */
	const char *argv[] = { "/bin/true", NULL };
	sbx_result *res = NULL;
	int r = sbx_exec(ctx, argv, NULL, &res);

	if (r == 0 && sbx_result_exit_code(res) != 0)
		r = -1;
	sbx_result_free(res);
	return r;
}

struct cold_ctx {
	const char *config;
	const char *fresh_in;   /* when set: a new ns workdir below it at each open (so a new
	                         * state folder too), config then being the rest of the config */
};

/* A whole process, as a harness starts one per command: argv run in `cwd`. */
struct process_ctx {
	const char *argv[12];
	const char *cwd;
	bool keeper;                  /* served by the keeper: its CPU is counted (keeper_cpu) */
};

/* The bench's own runtime folder (XDG_RUNTIME_DIR): the keeper there is the bench's. */
static char runtime_dir[] = "/tmp/sbx-bench-run-XXXXXX";

/* Whether process pid holds a file in the bench's runtime folder (the keeper its lock). */
static bool holds_runtime_file(const char *pid)
{
	char path[300], target[PATH_MAX];
	struct dirent *e;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof path, "/proc/%s/fd", pid);
	if (!(d = opendir(path)))
		return false;
	while (!found && (e = readdir(d))) {
		ssize_t n;

		snprintf(path, sizeof path, "/proc/%s/fd/%s", pid, e->d_name);
		n = readlink(path, target, sizeof target - 1);
		found = n > 0 && (target[n] = '\0', strncmp(target, runtime_dir,
		                                            strlen(runtime_dir)) == 0);
	}
	closedir(d);
	return found;
}

/* The bench's keeper goes with the bench (SIGTERM: it stops as after its idle time). */
static void stop_keeper(void)
{
	DIR *proc = opendir("/proc");
	struct dirent *e;

	while (proc && (e = readdir(proc))) {
		char path[300], comm[64] = "";
		FILE *f;

		snprintf(path, sizeof path, "/proc/%s/comm", e->d_name);
		if (e->d_name[0] < '1' || e->d_name[0] > '9' || !(f = fopen(path, "r")))
			continue;
		if (fgets(comm, sizeof comm, f) && !strcmp(comm, "agentsbx-keeper\n") &&
		    holds_runtime_file(e->d_name))
			kill(atoi(e->d_name), SIGTERM);
		fclose(f);
	}
	if (proc)
		closedir(proc);
}

/* The CPU the bench's keeper used so far, its own and its reaped children's (the spares it
 * built, and the sandboxes it served: it is their subreaper); -1 when none runs. */
static double keeper_cpu_ms(void)
{
	DIR *proc = opendir("/proc");
	struct dirent *e;
	double ms = -1;

	while (proc && ms < 0 && (e = readdir(proc))) {
		char path[300], stat[1024], comm[64] = "";
		unsigned long long ut, st;
		long long cut, cst;
		FILE *f;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/comm", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		if (!fgets(comm, sizeof comm, f))
			comm[0] = '\0';
		fclose(f);
		if (strcmp(comm, "agentsbx-keeper\n") != 0 || !holds_runtime_file(e->d_name))
			continue;
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		char *p = fgets(stat, sizeof stat, f) ? strrchr(stat, ')') : NULL;
		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld",
		                &ut, &st, &cut, &cst) == 4)
			ms = (double)(ut + st + (unsigned long long)cut + (unsigned long long)cst) *
			     1e3 / (double)sysconf(_SC_CLK_TCK);
		fclose(f);
	}
	if (proc)
		closedir(proc);
	return ms;
}

/* The keeper's CPU between one served CLI run and the next goes to the run: it builds the
 * next spare once the served sandbox ends, after the CLI returned. */
static double keeper_last = -1, keeper_sum;
static int keeper_runs;

static void count_keeper_cpu(void)
{
	double now = keeper_cpu_ms();

	if (now >= 0 && keeper_last >= 0 && now >= keeper_last) {
		keeper_sum += now - keeper_last;
		keeper_runs++;
	}
	keeper_last = now;
}

static int run_process(void *ctx)
{
	struct process_ctx *p = ctx;

	if (p->keeper)
		count_keeper_cpu();
	return spawn_in_and_wait(p->argv, p->cwd, true);
}

/* How many shared objects a fresh process has mapped once it has loaded `library`. */
static int mapped_objects(const char *bench_load, const char *library)
{
	char cmd[2048];
	FILE *f;
	int n = -1;

	snprintf(cmd, sizeof cmd, "BENCH_LOAD_COUNT=1 '%s' '%s'", bench_load, library);
	if (!(f = popen(cmd, "r")))
		return -1;
	if (fscanf(f, "%d", &n) != 1)
		n = -1;
	pclose(f);
	return n;
}

static int open_exec_close(void *ctx)
{
	struct cold_ctx *c = ctx;
	sbx_workspace *ws = NULL;
	char config[512], workdir[300];
	int r;

	/* A harness that opens one workspace per task: a spare must serve any workdir. */
	if (c->fresh_in) {
		snprintf(workdir, sizeof workdir, "%s/w-XXXXXX", c->fresh_in);
		if (!mkdtemp(workdir))
			return -1;
		snprintf(config, sizeof config, "{\"backend\":\"ns\",\"workdir\":\"%s\"%s}", workdir,
		         c->config);
	}
	r = sbx_workspace_open(c->fresh_in ? config : c->config, &ws);

	if (r == 0)
		r = exec_true(ws);
	sbx_workspace_close(ws);
	return r;
}

/* Proportional resident memory (kB, shared pages split between their users) of every process
 * whose command line starts with `prefix`, and how many there are. */
static long pss_of(const char *prefix, int *count)
{
	DIR *proc = opendir("/proc");
	struct dirent *e;
	long total = 0;

	*count = 0;
	while (proc && (e = readdir(proc))) {
		char path[300], buf[4096];
		FILE *f;
		size_t n;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = '\0';
		if (strncmp(buf, prefix, strlen(prefix)) != 0 && !strstr(buf, "/agentsbx-init"))
			continue;
		snprintf(path, sizeof path, "/proc/%s/smaps_rollup", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		while (fgets(buf, sizeof buf, f))
			if (!strncmp(buf, "Pss:", 4))
				total += strtol(buf + 4, NULL, 10);
		fclose(f);
		(*count)++;
	}
	if (proc)
		closedir(proc);
	return total;
}

static void many_workspaces(const char *backend, int count)
{
	sbx_workspace **ws = calloc((size_t)count, sizeof *ws);
	char config[256];
	int opened = 0;
	double t0 = now_ms();
	int procs;
	long pss;

	snprintf(config, sizeof config, "{\"backend\":\"%s\"}", backend);
	for (; ws && opened < count; opened++)
		if (sbx_workspace_open(config, &ws[opened]) < 0) {
			printf("  open #%d failed: %s\n", opened + 1, sbx_last_error());
			break;
		}
	pss = pss_of("agentsbx-init", &procs);
	printf("%-8s %d workspaces open at once in %.0f ms; %d sandbox processes, PSS %.2f MiB "
	       "in all, %.2f MiB per workspace\n", backend, opened, now_ms() - t0, procs,
	       (double)pss / 1024, opened ? (double)pss / 1024 / opened : 0);
	for (int i = 0; i < opened; i++)
		sbx_workspace_close(ws[i]);
	free(ws);
}

static void line(const char *what, double ms, double base, const char *base_name, double cpu)
{
	if (ms < 0)
		return;
	printf("%-44s %8.3f ms", what, ms);
	if (base > 0)
		printf("   %5.2fx %-11s", ms / base, base_name);
	else
		printf("   %18s", "");
	if (cpu >= 0)
		printf("   CPU %6.3f ms", cpu);
	printf("\n");
}

static double ratio(double a, double b)
{
	return a > 0 && b > 0 ? a / b : -1;
}

#define MAX_CONTENDERS 24

/* The cold workspaces leave their state folder in the bench directory. */
static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)type;
	(void)f;
	remove(path);
	return 0;
}

/* Whole processes a harness starts, added to the same interleaved rounds as the rest: the
 * one-shot CLI on ns and local (run in the bwrap run's directory, which it opens as its
 * workdir), `agentsbx version`, and a fresh process with and without a dlopen of the
 * library. They run every 4th round, like the cold starts, so they get the same settling. */
struct process_set {
	struct process_ctx cli_ns, cli_ns_process, cli_local, version, empty, dlopen;
};

static size_t add_processes(struct contender *c, size_t nc, struct process_set *p,
                            const char *cli, const char *bench_load, const char *library,
                            const char *dir)
{
	*p = (struct process_set){
		.cli_ns = { { cli, "exec", "--backend", "ns", "--", "/bin/true", NULL }, dir, true },
		.cli_ns_process = { { cli, "exec", "--backend", "ns", "--config",
		                      "{\"ns\":{\"prestart\":\"process\"}}", "--", "/bin/true",
		                      NULL }, dir, false },
		.cli_local = { { cli, "exec", "--backend", "local", "--", "/bin/true", NULL }, dir },
		.version = { { cli, "version", NULL }, NULL },
		.empty = { { bench_load, NULL }, NULL },
		.dlopen = { { bench_load, library, NULL }, NULL },
	};
	c[nc++] = (struct contender){ "agentsbx exec --backend ns -- /bin/true", run_process,
	                              &p->cli_ns, 4 };
	c[nc++] = (struct contender){ "  the same, no keeper (prestart \"process\")", run_process,
	                              &p->cli_ns_process, 4 };
	c[nc++] = (struct contender){ "agentsbx exec --backend local -- /bin/true", run_process,
	                              &p->cli_local, 4 };
	c[nc++] = (struct contender){ "agentsbx version", run_process, &p->version, 4 };
	c[nc++] = (struct contender){ "fresh process, nothing loaded", run_process, &p->empty, 4 };
	c[nc++] = (struct contender){ "fresh process, dlopen(libagentsbx.so.1)", run_process,
	                              &p->dlopen, 4 };
	return nc;
}

/* The contender named `what`, or NULL. */
static struct contender *find(struct contender *c, size_t nc, const char *what)
{
	for (size_t i = 0; i < nc; i++)
		if (strcmp(c[i].what, what) == 0)
			return &c[i];
	return NULL;
}

static double median_named(struct contender *c, size_t nc, const char *what)
{
	struct contender *x = find(c, nc, what);

	return x ? median_of(x) : -1;
}

/* Prints every contender against its peer: in-process execs against the bare spawn, cold
 * starts and whole CLI processes against the bwrap run, the loads against a fresh process. */
static void print_table(struct contender *c, size_t nc)
{
	double bare = median_of(&c[0]), bwrap = median_of(&c[1]);
	double empty = median_named(c, nc, "fresh process, nothing loaded");

	for (size_t i = 0; i < nc; i++) {
		double base = i == 0 ? 0 : bare;
		const char *base_name = "bare spawn";

		if (c[i].fn == open_exec_close || (c[i].fn == run_process && strstr(c[i].what, "exec"))) {
			base = bwrap;
			base_name = "bwrap run";
		} else if (c[i].fn == run_process) {
			base = strstr(c[i].what, "dlopen") ? empty : 0;
			base_name = "fresh proc";
		}
		line(c[i].what, median_of(&c[i]), base, base_name, median_cpu_of(&c[i]));
	}
	if (keeper_runs > 0)
		printf("%-44s %8.3f ms   (its own and its children's: the spares it built, the "
		       "sandboxes it served; %d runs)\n", "  the keeper's CPU per served CLI run",
		       keeper_sum / keeper_runs, keeper_runs);
	if (empty > 0)
		printf("%-44s %8.3f ms\n", "  the load alone (dlopen - nothing loaded)",
		       median_named(c, nc, "fresh process, dlopen(libagentsbx.so.1)") - empty);
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 200;
	int many = argc > 2 ? atoi(argv[2]) : 200;
	const char *cli = argc > 3 ? argv[3] : NULL;
	const char *bench_load = argc > 4 ? argv[4] : NULL;
	const char *library = argc > 5 ? argv[5] : NULL;
	const char *backends[] = { "local", "ns", "bwrap" };
	char dir[] = "/tmp/sbx-bench-XXXXXX", state[] = "/tmp/sbx-bench-state-XXXXXX";
	char fresh[] = "/tmp/sbx-bench-fresh-XXXXXX";
	struct contender c[MAX_CONTENDERS];
	struct cold_ctx cold[MAX_CONTENDERS];
	char names[MAX_CONTENDERS][64], configs[MAX_CONTENDERS][256];
	sbx_workspace *open_ws[4] = { 0 };
	struct process_set procs;
	size_t nc = 0, nws = 0;

	if (runs < 1 || runs > MAX_RUNS || !mkdtemp(dir) || !mkdtemp(state) || !mkdtemp(fresh) ||
	    !mkdtemp(runtime_dir))
		return 2;
	/* A keeper of the bench's own, whose CPU it can find and count. */
	setenv("XDG_RUNTIME_DIR", runtime_dir, 1);
	/* Every workspace's state folder, the CLI's included, goes where the bench removes it. */
	setenv("XDG_STATE_HOME", state, 1);
	printf("libagentsbx %s exec benchmark: %d rounds, each contender once per round in turn "
	       "(cold ones and whole processes every 4th, 50 ms apart from the next), medians\n\n",
	       sbx_version(), runs);
	c[nc++] = (struct contender){ "posix_spawn(/bin/true) + wait", bare_true, NULL, 1 };
	c[nc++] = (struct contender){ "bwrap agent profile /bin/true", bwrap_true, dir, 1 };
	if (cli && bench_load && library)
		nc = add_processes(c, nc, &procs, cli, bench_load, library, dir);
	for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
		sbx_workspace *ws = NULL;

		snprintf(configs[nc], sizeof configs[nc], "{\"backend\":\"%s\"}", backends[i]);
		if (sbx_workspace_open(configs[nc], &ws) < 0) {
			printf("%-44s   unavailable: %s\n", backends[i], sbx_last_error());
			continue;
		}
		open_ws[nws++] = ws;
		snprintf(names[nc], sizeof names[nc], "sbx_exec(/bin/true) warm, %s", backends[i]);
		c[nc] = (struct contender){ names[nc], exec_true, ws, 1 };
		nc++;
		/* The same bound directory as the bwrap run, for a like-for-like cold start. */
		snprintf(configs[nc], sizeof configs[nc], "{\"backend\":\"%s\",\"workdir\":\"%s\"}",
		         backends[i], dir);
		snprintf(names[nc], sizeof names[nc], "open + exec + close (cold), %s", backends[i]);
		cold[nc] = (struct cold_ctx){ configs[nc], NULL };
		c[nc] = (struct contender){ names[nc], open_exec_close, &cold[nc], 4 };
		nc++;
		if (strcmp(backends[i], "ns") == 0) {
			snprintf(configs[nc], sizeof configs[nc], "{\"backend\":\"ns\",\"workdir\":\"%s\","
			         "\"ns\":{\"prestart\":false}}", dir);
			snprintf(names[nc], sizeof names[nc], "  the same, \"prestart\": false");
			cold[nc] = (struct cold_ctx){ configs[nc], NULL };
			c[nc] = (struct contender){ names[nc], open_exec_close, &cold[nc], 4 };
			nc++;
			cold[nc] = (struct cold_ctx){ "", fresh };
			c[nc] = (struct contender){ "  a new workdir at each open", open_exec_close,
			                            &cold[nc], 4 };
			nc++;
			cold[nc] = (struct cold_ctx){ ",\"ns\":{\"prestart\":false}", fresh };
			c[nc] = (struct contender){ "  a new workdir at each open, no spare",
			                            open_exec_close, &cold[nc], 4 };
			nc++;
		}
	}
	run_rounds(c, nc, runs);
	print_table(c, nc);
	if (library && bench_load)
		printf("%-44s %5d\n", "shared objects mapped by a process that loads it",
		       mapped_objects(bench_load, library));
	for (size_t i = 0; i < nws; i++)
		sbx_workspace_close(open_ws[i]);

	double bare = median_of(&c[0]), bwrap = median_of(&c[1]);
	double cli_ns = median_named(c, nc, "agentsbx exec --backend ns -- /bin/true");
	double load = median_named(c, nc, "agentsbx version");
	double warm = median_named(c, nc, "sbx_exec(/bin/true) warm, ns");
	double cold_ns = median_named(c, nc, "open + exec + close (cold), ns");
	double cold_new = median_named(c, nc, "  a new workdir at each open");

	for (size_t i = 0; i < nc; i++) {
		free(c[i].samples);
		free(c[i].cpu);
	}
	printf("\n");
	struct bench_tput tput = { -1, -1, -1, -1, -1 };

	if (bench_throughput(TPUT_ROUNDS, &tput) < 0)
		printf("throughput: no ns workspace: %s\n", sbx_last_error());
	printf("\n");
	many_workspaces("ns", many);
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	nftw(state, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	nftw(fresh, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	stop_keeper();
	nftw(runtime_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	printf("\ntargets (ns): one-shot CLI <= 1.0x bwrap; load <= 3 ms; warm exec <= 1.2x bare "
	       "spawn; cold open+exec+close <= 0.5x bwrap; concurrent throughput >= 0.8x bare "
	       "spawns at 8 and 32; <= 2 MiB resident per workspace\n");
	printf("RESULT cli_vs_bwrap=%.2f load_ms=%.2f warm_vs_spawn=%.2f cold_vs_bwrap=%.2f "
	       "cold_new_vs_bwrap=%.2f tput1=%.2f tput8=%.2f tput32=%.2f tput32ws=%.2f\n",
	       ratio(cli_ns, bwrap), load, ratio(warm, bare), ratio(cold_ns, bwrap),
	       ratio(cold_new, bwrap), tput.tput1, tput.tput8, tput.tput32, tput.tput32ws);
	return 0;
}
