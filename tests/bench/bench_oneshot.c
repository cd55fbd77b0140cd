/* The one-shot path side by side, in one run: the bubblewrap agent profile running /bin/true
 * (whole process), `agentsbx exec --backend ns -- /bin/true` (a whole CLI process per
 * command, as harnesses call bwrap), and in one process a cold open + exec + close of a new
 * workspace each time (a workdir and a state folder of its own), with the pre-started spare
 * and without. Wall time of each, and for the whole processes their CPU time (getrusage of
 * the reaped children: the CLI reaps its whole tree). Contenders take turns within each
 * round, so that a load that comes and goes falls on all of them alike; medians. Not a
 * pass/fail test: numbers for people, and a last line
 *   RESULT cli_vs_bwrap=... cli_cpu_vs_bwrap=... spare_vs_bwrap=... nospare_vs_bwrap=...
 * Usage: bench-oneshot [ROUNDS] [CLI] (the CLI defaults to $SBX_BENCH_CLI). */
#include <ftw.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <agentsbx/agentsbx.h>

extern char **environ;

#define MAX_ROUNDS 1000

struct sample {
	double wall_ms, cpu_ms;
};

struct ctx {
	const char *dir;              /* the bench directory: bwrap's bind, the CLI's workdir */
	const char *cli;
	int serial;                   /* names the next fresh workspace */
};

typedef int (*bench_fn)(struct ctx *c, struct sample *s);

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double tv_ms(struct timeval tv)
{
	return (double)tv.tv_sec * 1e3 + (double)tv.tv_usec / 1e3;
}

/* Spawns argv, waits, and notes its wall and CPU time (its own and its reaped children's). */
static int run_process(const char *const argv[], struct sample *s)
{
	struct rusage ru;
	int status;
	pid_t pid;
	double t0 = now_ms();

	if (posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ) != 0)
		return -1;
	if (wait4(pid, &status, 0, &ru) != pid)
		return -1;
	s->wall_ms = now_ms() - t0;
	s->cpu_ms = tv_ms(ru.ru_utime) + tv_ms(ru.ru_stime);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* The agent profile of bench_exec.c. */
static int bwrap_true(struct ctx *c, struct sample *s)
{
	const char *argv[] = {
		"/usr/bin/bwrap", "--unshare-all", "--die-with-parent", "--new-session",
		"--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc",
		"--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
		"--bind", c->dir, "/workspace", "--chdir", "/workspace", "/bin/true", NULL,
	};

	return run_process(argv, s);
}

static int cli_true(struct ctx *c, struct sample *s)
{
	const char *argv[] = { c->cli, "exec", "--backend", "ns", "--workdir", c->dir, "--",
	                       "/bin/true", NULL };

	return run_process(argv, s);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)type;
	(void)f;
	remove(path);
	return 0;
}

/* A new workspace (workdir and state folder of its own), opened, one exec, closed; the
 * folders are made and removed outside the time. */
static int fresh_open_exec_close(struct ctx *c, struct sample *s, bool prestart)
{
	char work[512], state[512], config[1400];
	const char *argv[] = { "/bin/true", NULL };
	sbx_exec_opts opts = { .size = sizeof opts };
	sbx_workspace *ws = NULL;
	sbx_result *res = NULL;
	double t0;
	int r;

	snprintf(work, sizeof work, "%s/w%d", c->dir, c->serial);
	snprintf(state, sizeof state, "%s/s%d", c->dir, c->serial++);
	if (mkdir(work, 0755) < 0)
		return -1;
	snprintf(config, sizeof config, "{\"backend\":\"ns\",\"workdir\":\"%s\",\"state_dir\":"
	         "\"%s\",\"ns\":{\"prestart\":%s}}", work, state, prestart ? "true" : "false");
	t0 = now_ms();
	r = sbx_workspace_open(config, &ws);
	if (r == 0)
		r = sbx_exec(ws, argv, &opts, &res);
	if (r == 0 && sbx_result_exit_code(res) != 0)
		r = -1;
	sbx_result_free(res);
	sbx_workspace_close(ws);
	s->wall_ms = now_ms() - t0;
	s->cpu_ms = -1;
	nftw(work, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	nftw(state, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	return r;
}

static int spare_cold(struct ctx *c, struct sample *s)
{
	return fresh_open_exec_close(c, s, true);
}

static int nospare_cold(struct ctx *c, struct sample *s)
{
	return fresh_open_exec_close(c, s, false);
}

struct contender {
	const char *what;
	bench_fn fn;
	struct sample *v;
	int n;
	bool failed;
};

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const struct contender *c, bool cpu)
{
	double *v = malloc((size_t)c->n * sizeof *v), m;

	if (!v || c->n == 0 || (cpu && c->v[0].cpu_ms < 0)) {
		free(v);
		return -1;
	}
	for (int i = 0; i < c->n; i++)
		v[i] = cpu ? c->v[i].cpu_ms : c->v[i].wall_ms;
	qsort(v, (size_t)c->n, sizeof *v, compare_double);
	m = c->n % 2 ? v[c->n / 2] : (v[c->n / 2 - 1] + v[c->n / 2]) / 2;
	free(v);
	return m;
}

/* A cold start leaves work behind that the kernel and the library finish in the background
 * (a network namespace's teardown, the next spare): it settles before the next contender. */
static void settle(void)
{
	struct timespec pause = { 0, 15 * 1000 * 1000 };

	nanosleep(&pause, NULL);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 30;
	const char *cli = argc > 2 ? argv[2] : getenv("SBX_BENCH_CLI");
	char dir[] = "/tmp/sbx-bench-oneshot-XXXXXX";
	struct contender c[] = {
		{ "bwrap agent profile /bin/true", bwrap_true },
		{ "agentsbx exec --backend ns (CLI process)", cli_true },
		{ "open+exec+close, new workspace, spare", spare_cold },
		{ "  the same, \"prestart\": false", nospare_cold },
	};
	const size_t nc = sizeof c / sizeof c[0];
	struct ctx ctx = { .dir = dir, .cli = cli };
	double bw, bc, ratio[4];

	if (rounds < 1 || rounds > MAX_ROUNDS || !cli || !mkdtemp(dir)) {
		fprintf(stderr, "usage: bench-oneshot [ROUNDS (1-%d)] [CLI] (or $SBX_BENCH_CLI)\n",
		        MAX_ROUNDS);
		return 2;
	}
	for (size_t i = 0; i < nc; i++)
		c[i].v = calloc((size_t)rounds, sizeof *c[i].v);
	printf("libagentsbx %s one-shot benchmark: %d rounds, each contender once per round in "
	       "turn, 15 ms apart, medians\n\n", sbx_version(), rounds);
	/* One round first, untimed: page cache, the first open's sweeps. */
	for (int round = -1; round < rounds; round++)
		for (size_t i = 0; i < nc; i++) {
			struct sample s;

			if (c[i].failed || !c[i].v)
				continue;
			if (c[i].fn(&ctx, &s) < 0) {
				printf("%-44s   failed: %s\n", c[i].what, sbx_last_error());
				c[i].failed = true;
			} else if (round >= 0) {
				c[i].v[c[i].n++] = s;
			}
			settle();
		}
	bw = median(&c[0], false);
	bc = median(&c[0], true);
	for (size_t i = 0; i < nc; i++) {
		double w = median(&c[i], false), cpu = median(&c[i], true);

		ratio[i] = w > 0 && bw > 0 ? w / bw : -1;
		if (w < 0)
			continue;
		printf("%-44s %8.2f ms wall", c[i].what, w);
		if (cpu >= 0)
			printf(" %7.2f ms CPU", cpu);
		else
			printf("%15s", "");
		if (i > 0)
			printf("   %5.2fx bwrap's wall", ratio[i]);
		printf("\n");
	}
	printf("\nRESULT cli_vs_bwrap=%.2f cli_cpu_vs_bwrap=%.2f spare_vs_bwrap=%.2f "
	       "nospare_vs_bwrap=%.2f\n", ratio[1],
	       bc > 0 && median(&c[1], true) > 0 ? median(&c[1], true) / bc : -1, ratio[2],
	       ratio[3]);
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	for (size_t i = 0; i < nc; i++)
		free(c[i].v);
	return 0;
}
