/* The docker backend's exec latency side by side, in one run: `docker exec` through the CLI
 * into the workspace's own container; our exec through the Engine's exec API, with stdio
 * "direct" (detached exec, the host's pipes handed to the runner) and "stream" (the hijacked
 * exec stream); our exec through the resident exec server in the container (the default);
 * and the ns backend's warm exec. Medians and ratios; not pass/fail. The docker rows run once
 * per OCI runtime named (docker.runtime: runc, runsc for gVisor...), the first the baseline
 * of the others' ratios, and the last line sums it up for scripts:
 *   RESULT ns_warm_ms=... <runtime>_cli_ms=... <runtime>_api_direct_ms=...
 *          <runtime>_api_stream_ms=... <runtime>_server_ms=... ("na": could not run)
 *
 *   bench-docker [RUNS [IMAGE [RUNTIME...]]]
 *       (defaults: 30, agentsbx-test:busybox, the engine's default runtime, named "default")
 *
 * Needs a running engine and the image (tests/docker/build-image.sh); the CLI row needs the
 * docker CLI on PATH. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include <agentsbx/agentsbx.h>

extern char **environ;

#define MAX_RUNS 1000
#define MAX_RUNTIMES 8

typedef int (*bench_fn)(void *ctx);

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of `runs` timed calls after three warm-up calls; -1 if a call failed. */
static double median_ms(bench_fn fn, void *ctx, int runs)
{
	static double samples[MAX_RUNS];

	for (int i = 0; i < 3; i++)
		if (fn(ctx) < 0)
			return -1;
	for (int i = 0; i < runs; i++) {
		double t0 = now_ms();

		if (fn(ctx) < 0)
			return -1;
		samples[i] = now_ms() - t0;
	}
	qsort(samples, (size_t)runs, sizeof samples[0], compare_double);
	return samples[runs / 2];
}

static int exec_true(void *ws)
{
	const char *argv[] = { "true", NULL };
	sbx_result *res = NULL;
	int r = sbx_exec(ws, argv, NULL, &res);

	if (r == 0 && sbx_result_exit_code(res) != 0)
		r = -1;
	sbx_result_free(res);
	return r;
}

/* `docker exec CONTAINER true`, output discarded, as a harness shelling out would do it. */
static int cli_exec_true(void *container)
{
	const char *argv[] = { "docker", "exec", container, "true", NULL };
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status, r;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 1, 0);
	r = posix_spawnp(&pid, "docker", &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return -1;
	return 0;
}

/* The container of workspace `id`, by the label the backend puts on it. */
static int container_of(const char *id, char *out, size_t len)
{
	char cmd[256];
	FILE *p;
	int ok;

	snprintf(cmd, sizeof cmd, "docker ps -q --no-trunc --filter label=io.agentsbx.workspace=%s",
	         id);
	if (!(p = popen(cmd, "r")))
		return -1;
	ok = fgets(out, (int)len, p) != NULL;
	pclose(p);
	if (!ok)
		return -1;
	out[strcspn(out, "\n")] = '\0';
	return out[0] ? 0 : -1;
}

static void line(const char *what, double ms, double base, const char *base_name)
{
	if (ms < 0) {
		printf("%-46s   failed: %s\n", what, sbx_last_error());
		return;
	}
	printf("%-46s %8.2f ms", what, ms);
	if (base > 0)
		printf("   %5.2fx %s", ms / base, base_name);
	printf("\n");
}

static sbx_workspace *open_docker(const char *id, const char *image, const char *options)
{
	char config[768];
	sbx_workspace *ws = NULL;

	snprintf(config, sizeof config, "{\"backend\":\"docker\",\"id\":\"%s\","
	         "\"docker\":{\"image\":\"%s\",%s}}", id, image, options);
	if (sbx_workspace_open(config, &ws) < 0) {
		printf("docker (%s): unavailable: %s\n", options, sbx_last_error());
		return NULL;
	}
	return ws;
}

/* Median of sbx_exec(true) in a docker workspace opened with options (-1 if it cannot open);
 * with cli non-NULL, also `docker exec` into the same container. */
static double docker_row(const char *image, const char *options, int runs, double *cli)
{
	char id[64], container[128];
	sbx_workspace *ws;
	static int n;
	double ms;

	snprintf(id, sizeof id, "bench-docker-%d-%d", (int)getpid(), n++);
	if (!(ws = open_docker(id, image, options)))
		return -1;
	if (cli && container_of(id, container, sizeof container) == 0)
		*cli = median_ms(cli_exec_true, container, runs);
	ms = median_ms(exec_true, ws, runs);
	sbx_workspace_close(ws);
	return ms;
}

/* The medians of one runtime's rows. */
struct runtime_rows {
	const char *name;             /* as given, or "default" */
	double cli, direct, stream, server;
};

static void measure_runtime(const char *image, const char *runtime, int runs,
                            struct runtime_rows *m)
{
	char opts[3][160], rt[96] = "";
	const char *modes[3] = { "\"exec\":\"api\",\"stdio\":\"direct\"",
	                         "\"exec\":\"api\",\"stdio\":\"stream\"", "\"exec\":\"server\"" };

	if (runtime)
		snprintf(rt, sizeof rt, ",\"runtime\":\"%s\"", runtime);
	for (int i = 0; i < 3; i++)
		snprintf(opts[i], sizeof opts[i], "%s%s", modes[i], rt);
	*m = (struct runtime_rows){ .name = runtime ? runtime : "default", .cli = -1 };
	m->direct = docker_row(image, opts[0], runs, &m->cli);
	m->stream = docker_row(image, opts[1], runs, NULL);
	m->server = docker_row(image, opts[2], runs * 10, NULL);
}

static void print_runtime(const struct runtime_rows *m, const struct runtime_rows *base)
{
	char what[96];

	printf("\nruntime %s%s\n", m->name, base ? "" : " (the baseline of the ratios below it)");
	line("docker exec CONTAINER true (CLI)", m->cli, 0, "");
	line("sbx_exec(true), docker, Engine API, direct", m->direct, m->cli, "CLI");
	line("sbx_exec(true), docker, Engine API, stream", m->stream, m->cli, "CLI");
	line("sbx_exec(true), docker, exec server (default)", m->server, m->cli, "CLI");
	if (!base)
		return;
	snprintf(what, sizeof what, "  exec server vs %s", base->name);
	line(what, m->server, base->server, base->name);
	snprintf(what, sizeof what, "  Engine API (direct) vs %s", base->name);
	line(what, m->direct, base->direct, base->name);
}

static void result_value(const char *key, const char *prefix, double ms)
{
	if (ms < 0)
		printf(" %s%s_ms=na", prefix, key);
	else
		printf(" %s%s_ms=%.3f", prefix, key, ms);
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 30;
	const char *image = argc > 2 ? argv[2] : "agentsbx-test:busybox";
	struct runtime_rows rows[MAX_RUNTIMES];
	int n_runtimes = argc > 3 ? argc - 3 : 1;
	double ns = -1;
	sbx_workspace *nsws = NULL;

	if (runs < 1 || runs > MAX_RUNS || n_runtimes > MAX_RUNTIMES)
		return 2;
	printf("libagentsbx %s docker exec benchmark: %d runs each (servers: %d), medians\n",
	       sbx_version(), runs, runs * 10);
	for (int i = 0; i < n_runtimes; i++)
		measure_runtime(image, argc > 3 ? argv[3 + i] : NULL, runs, &rows[i]);
	if (sbx_workspace_open("{\"backend\":\"ns\"}", &nsws) == 0) {
		ns = median_ms(exec_true, nsws, runs * 10);
		sbx_workspace_close(nsws);
	}
	for (int i = 0; i < n_runtimes; i++)
		print_runtime(&rows[i], i ? &rows[0] : NULL);
	printf("\n");
	line("sbx_exec(true) warm, ns", ns, 0, "");
	if (ns > 0 && rows[0].server > 0)
		printf("\ndocker exec server (%s) / ns warm exec: %.2fx\n", rows[0].name,
		       rows[0].server / ns);
	printf("\ntargets: the API path <= 0.8x the CLI; the exec server <= 2x ns warm exec and "
	       "(being the default) <= 0.5x the CLI\n");
	printf("RESULT");
	result_value("ns_warm", "", ns);
	for (int i = 0; i < n_runtimes; i++) {
		char prefix[128];

		snprintf(prefix, sizeof prefix, "%s_", rows[i].name);
		result_value("cli", prefix, rows[i].cli);
		result_value("api_direct", prefix, rows[i].direct);
		result_value("api_stream", prefix, rows[i].stream);
		result_value("server", prefix, rows[i].server);
	}
	printf("\n");
	return 0;
}
