/* Throughput of warm execs: N threads run /bin/true back to back, through sbx_exec in one
 * open ns workspace (or each in its own), against N threads doing bare posix_spawn + wait.
 * Each round times a burst of both sides, one right after the other, so a load that comes
 * and goes on the machine falls on both alike; the table shows medians of the rounds'
 * commands per second and their ratio. Not a pass/fail test: numbers for people. */
#include <pthread.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/wait.h>

#include <agentsbx/agentsbx.h>

#include "bench_throughput.h"

extern char **environ;

#define MAX_THREADS 32
/* Commands per burst in all, split between the threads: enough that a burst outlasts the
 * threads' start, few enough that a round stays short on a small machine. */
#define BURST_COMMANDS 128

static const char *const true_argv[] = { "/bin/true", NULL };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int bare_true(void)
{
	pid_t pid;
	int status;

	if (posix_spawn(&pid, true_argv[0], NULL, NULL, (char *const *)true_argv, environ) != 0)
		return -1;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	return 0;
}

static int exec_true(sbx_workspace *ws)
{
	sbx_result *res = NULL;
	int r = sbx_exec(ws, true_argv, NULL, &res);

	if (r == 0 && sbx_result_exit_code(res) != 0)
		r = -1;
	sbx_result_free(res);
	return r;
}

struct burst {
	pthread_barrier_t start;
	sbx_workspace **ws;           /* NULL: bare spawns; else one per thread (maybe the same) */
	int per_thread;
	int failures;                 /* under lock */
	pthread_mutex_t lock;
};

struct worker {
	struct burst *b;
	int index;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct burst *b = w->b;
	int failed = 0;

	pthread_barrier_wait(&b->start);
	for (int i = 0; i < b->per_thread; i++)
		failed += (b->ws ? exec_true(b->ws[w->index]) : bare_true()) < 0;
	pthread_mutex_lock(&b->lock);
	b->failures += failed;
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

/* Commands per second of one burst with n threads, or -1 when a command failed. */
static double run_burst(int n, sbx_workspace **ws)
{
	struct burst b = { .ws = ws, .per_thread = (BURST_COMMANDS + n - 1) / n };
	struct worker w[MAX_THREADS];
	pthread_t t[MAX_THREADS];
	int started = 0;
	double t0;

	pthread_mutex_init(&b.lock, NULL);
	pthread_barrier_init(&b.start, NULL, (unsigned)n + 1);
	for (; started < n; started++) {
		w[started] = (struct worker){ &b, started };
		if (pthread_create(&t[started], NULL, work, &w[started]) != 0)
			break;
	}
	if (started < n)
		abort(); /* the barrier would wait for ever: a benchmark cannot go on short */
	pthread_barrier_wait(&b.start);
	t0 = now_s();
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	t0 = now_s() - t0;
	pthread_barrier_destroy(&b.start);
	pthread_mutex_destroy(&b.lock);
	if (b.failures)
		return -1;
	return (double)(b.per_thread * n) / t0;
}

struct row {
	const char *what;
	int threads;
	sbx_workspace **ws;
	double *bare, *sbx;
	int n;
	bool failed;
};

static void run_row_round(struct row *r)
{
	double bare, sbx;

	if (r->failed)
		return;
	bare = run_burst(r->threads, NULL);
	sbx = run_burst(r->threads, r->ws);
	if (bare < 0 || sbx < 0) {
		r->failed = true;
		printf("%-36s failed: %s\n", r->what, sbx_last_error());
		return;
	}
	r->bare[r->n] = bare;
	r->sbx[r->n++] = sbx;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, compare_double);
	return v[n / 2];
}

/* Prints the row and returns its ratio, or -1. */
static double report_row(struct row *r)
{
	double bare, sbx;

	if (r->failed || r->n == 0)
		return -1;
	bare = median(r->bare, r->n);
	sbx = median(r->sbx, r->n);
	printf("%-36s %9.0f/s %9.0f/s   %5.2fx\n", r->what, sbx, bare, sbx / bare);
	return sbx / bare;
}

static int open_ns(sbx_workspace **ws)
{
	int r = sbx_workspace_open("{\"backend\":\"ns\"}", ws);

	if (r < 0)
		printf("ns workspace unavailable: %s\n", sbx_last_error());
	return r;
}

int bench_throughput(int rounds, struct bench_tput *out)
{
	sbx_workspace *shared[MAX_THREADS] = { 0 }, *own[MAX_THREADS] = { 0 };
	struct row rows[] = {
		{ "1 thread, one workspace", 1, shared },
		{ "2 threads, one workspace", 2, shared },
		{ "8 threads, one workspace", 8, shared },
		{ "32 threads, one workspace", 32, shared },
		{ "32 threads, 32 workspaces", 32, own },
	};
	const size_t nrows = sizeof rows / sizeof rows[0];
	double ratio[sizeof rows / sizeof rows[0]];
	int opened = 0;

	*out = (struct bench_tput){ -1, -1, -1, -1, -1 };
	if (open_ns(&shared[0]) < 0)
		return -1;
	for (int i = 1; i < MAX_THREADS; i++)
		shared[i] = shared[0];
	for (; opened < MAX_THREADS; opened++)
		if (open_ns(&own[opened]) < 0)
			break;
	rows[nrows - 1].failed = opened < MAX_THREADS;
	for (size_t i = 0; i < nrows; i++) {
		rows[i].bare = calloc((size_t)rounds, sizeof(double));
		rows[i].sbx = calloc((size_t)rounds, sizeof(double));
		rows[i].failed |= !rows[i].bare || !rows[i].sbx || exec_true(shared[0]) < 0;
	}
	printf("warm exec throughput: %d rounds of %d commands per row, sbx_exec(/bin/true) "
	       "and bare posix_spawn + wait in turn, medians\n\n", rounds, BURST_COMMANDS);
	printf("%-36s %11s %11s   %s\n", "", "sbx_exec", "bare spawn", "ratio");
	for (int k = 0; k < rounds; k++)
		for (size_t i = 0; i < nrows; i++)
			run_row_round(&rows[i]);
	for (size_t i = 0; i < nrows; i++) {
		ratio[i] = report_row(&rows[i]);
		free(rows[i].bare);
		free(rows[i].sbx);
	}
	*out = (struct bench_tput){ ratio[0], ratio[1], ratio[2], ratio[3], ratio[4] };
	sbx_workspace_close(shared[0]);
	for (int i = 0; i < opened; i++)
		sbx_workspace_close(own[i]);
	return 0;
}
