/* The docker backend's exec latency side by side, in one run: `docker exec` through the CLI
 * into the workspace's own container; our exec through the Engine's exec API, with stdio
 * "direct" (detached exec, the host's pipes handed to the runner) and "stream" (the hijacked
 * exec stream); our exec through the resident exec server in the container (the default);
 * and the ns backend's warm exec. Medians and ratios; not pass/fail.
 *
 *   bench-docker [RUNS [IMAGE]]     (defaults: 30, agentsbx-test:busybox)
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
	char config[512];
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

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 30;
	const char *image = argc > 2 ? argv[2] : "agentsbx-test:busybox";
	double cli = -1, direct, stream, server, ns = -1;
	sbx_workspace *nsws = NULL;

	if (runs < 1 || runs > MAX_RUNS)
		return 2;
	printf("libagentsbx %s docker exec benchmark: %d runs each (servers: %d), medians\n\n",
	       sbx_version(), runs, runs * 10);
	direct = docker_row(image, "\"exec\":\"api\",\"stdio\":\"direct\"", runs, &cli);
	stream = docker_row(image, "\"exec\":\"api\",\"stdio\":\"stream\"", runs, NULL);
	server = docker_row(image, "\"exec\":\"server\"", runs * 10, NULL);
	if (sbx_workspace_open("{\"backend\":\"ns\"}", &nsws) == 0) {
		ns = median_ms(exec_true, nsws, runs * 10);
		sbx_workspace_close(nsws);
	}
	line("docker exec CONTAINER true (CLI)", cli, 0, "");
	line("sbx_exec(true), docker, Engine API, direct", direct, cli, "CLI");
	line("sbx_exec(true), docker, Engine API, stream", stream, cli, "CLI");
	line("sbx_exec(true), docker, exec server (default)", server, cli, "CLI");
	line("sbx_exec(true) warm, ns", ns, 0, "");
	if (ns > 0 && server > 0)
		printf("\ndocker exec server / ns warm exec: %.2fx\n", server / ns);
	printf("\ntargets: the API path <= 0.8x the CLI; the exec server <= 2x ns warm exec and "
	       "(being the default) <= 0.5x the CLI\n");
	return 0;
}
