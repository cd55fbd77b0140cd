/* Exec latency side by side, in one run: a bare posix_spawn of /bin/true, the same through
 * bubblewrap (the agent profile), and sbx_exec of true on a warm workspace and on a cold one
 * (open + exec + close), for each backend asked for. Prints medians and the ratios the ns
 * issue sets targets for, then the resident memory of open workspaces and how many can be
 * open at once. Not a pass/fail test: numbers for people. */
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
#include <sys/wait.h>

#include <agentsbx/agentsbx.h>

extern char **environ;

#define MAX_RUNS 2000

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
	int n;
	bool failed;
};

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
	struct timespec pause = { 0, 15 * 1000 * 1000 };

	nanosleep(&pause, NULL);
}

static void run_rounds(struct contender *c, size_t nc, int rounds)
{
	for (size_t i = 0; i < nc; i++) {       /* warm-up, and a check that each works */
		c[i].samples = calloc((size_t)rounds, sizeof *c[i].samples);
		c[i].failed = !c[i].samples || c[i].fn(c[i].ctx) < 0;
		if (c[i].failed)
			printf("%-44s   failed: %s\n", c[i].what, sbx_last_error());
	}
	for (int r = 0; r < rounds; r++)
		for (size_t i = 0; i < nc; i++) {
			if (c[i].failed || r % c[i].every)
				continue;
			double t0 = now_ms();
			if (c[i].fn(c[i].ctx) < 0) {
				c[i].failed = true;
				printf("%-44s   failed: %s\n", c[i].what, sbx_last_error());
				continue;
			}
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

static int spawn_and_wait(const char *const argv[])
{
	pid_t pid;
	int status;

	if (posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ) != 0)
		return -1;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	return 0;
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
	const char *argv[] = { "true", NULL };
	sbx_result *res = NULL;
	int r = sbx_exec(ctx, argv, NULL, &res);

	if (r == 0 && sbx_result_exit_code(res) != 0)
		r = -1;
	sbx_result_free(res);
	return r;
}

struct cold_ctx {
	const char *config;
};

static int open_exec_close(void *ctx)
{
	struct cold_ctx *c = ctx;
	sbx_workspace *ws = NULL;
	int r = sbx_workspace_open(c->config, &ws);

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

static void line(const char *what, double ms, double base, const char *base_name)
{
	if (ms < 0)
		return;
	printf("%-44s %8.3f ms", what, ms);
	if (base > 0)
		printf("   %5.2fx %s", ms / base, base_name);
	printf("\n");
}

#define MAX_CONTENDERS 16

/* The cold workspaces leave their state folder in the bench directory. */
static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)type;
	(void)f;
	remove(path);
	return 0;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 200;
	int many = argc > 2 ? atoi(argv[2]) : 200;
	const char *backends[] = { "local", "ns", "bwrap" };
	char dir[] = "/tmp/sbx-bench-XXXXXX";
	struct contender c[MAX_CONTENDERS];
	struct cold_ctx cold[MAX_CONTENDERS];
	char names[MAX_CONTENDERS][64], configs[MAX_CONTENDERS][256];
	sbx_workspace *open_ws[4] = { 0 };
	size_t nc = 0, nws = 0;

	if (runs < 1 || runs > MAX_RUNS || !mkdtemp(dir))
		return 2;
	printf("libagentsbx %s exec benchmark: %d rounds, each contender once per round in turn "
	       "(cold ones every 4th, 15 ms apart from the next), medians\n\n", sbx_version(),
	       runs);
	c[nc++] = (struct contender){ "posix_spawn(/bin/true) + wait", bare_true, NULL, 1 };
	c[nc++] = (struct contender){ "bwrap agent profile /bin/true", bwrap_true, dir, 1 };
	for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
		sbx_workspace *ws = NULL;

		snprintf(configs[nc], sizeof configs[nc], "{\"backend\":\"%s\"}", backends[i]);
		if (sbx_workspace_open(configs[nc], &ws) < 0) {
			printf("%-44s   unavailable: %s\n", backends[i], sbx_last_error());
			continue;
		}
		open_ws[nws++] = ws;
		snprintf(names[nc], sizeof names[nc], "sbx_exec(true) warm, %s", backends[i]);
		c[nc] = (struct contender){ names[nc], exec_true, ws, 1 };
		nc++;
		/* The same bound directory as the bwrap run, for a like-for-like cold start. */
		snprintf(configs[nc], sizeof configs[nc], "{\"backend\":\"%s\",\"workdir\":\"%s\"}",
		         backends[i], dir);
		snprintf(names[nc], sizeof names[nc], "open + exec + close (cold), %s", backends[i]);
		cold[nc].config = configs[nc];
		c[nc] = (struct contender){ names[nc], open_exec_close, &cold[nc], 4 };
		nc++;
		if (strcmp(backends[i], "ns") == 0) {
			snprintf(configs[nc], sizeof configs[nc], "{\"backend\":\"ns\",\"workdir\":\"%s\","
			         "\"ns\":{\"prestart\":false}}", dir);
			snprintf(names[nc], sizeof names[nc], "  the same, \"prestart\": false");
			cold[nc].config = configs[nc];
			c[nc] = (struct contender){ names[nc], open_exec_close, &cold[nc], 4 };
			nc++;
		}
	}
	run_rounds(c, nc, runs);
	for (size_t i = 0; i < nc; i++) {
		bool is_cold = c[i].fn == open_exec_close;

		line(c[i].what, median_of(&c[i]), i == 0 ? 0 : median_of(&c[is_cold ? 1 : 0]),
		     is_cold ? "bwrap run" : "bare spawn");
	}
	for (size_t i = 0; i < nws; i++)
		sbx_workspace_close(open_ws[i]);
	for (size_t i = 0; i < nc; i++)
		free(c[i].samples);
	printf("\n");
	many_workspaces("ns", many);
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	printf("\ntargets (ns): warm exec <= 1.5x bare spawn; cold open+exec+close <= 1.0x bwrap; "
	       "<= 2 MiB resident per workspace; 200 workspaces at once\n");
	return 0;
}
