/* The sandbox's root at a fresh start, alone: what the init spends building it when no spare
 * was waiting (every CLI process), without the rest of a start around it.
 *
 * Each round forks a process that enters new user, mount and PID namespaces (no network
 * namespace: its cost is the kernel's, not the root's, and bench-oneshot's CLI row has it),
 * forks PID 1 there, which builds the root over a fixed workspace with sbx_rootfs_build (the
 * host system, the default protected paths, as the ns backend asks for it) and exits. Timed:
 * the whole round, wall (fork to reap) and CPU (the children's rusage, the namespaces' teardown
 * included). Rounds alternate with a bare fork + unshare of the same namespaces that builds
 * nothing, so the ratio and the difference are the root's own cost in the same minute.
 *
 * Usage: bench_root ROUNDS [WORKDIR]. Prints the medians and ends with
 * RESULT root_ms=... root_cpu_ms=... bare_ms=... */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "init/sandbox.h"
#include "util/cleanup.h"

#define NS_FLAGS (CLONE_NEWNS | CLONE_NEWPID)

struct sample {
	double wall_ms, cpu_ms;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double cpu_ms_of(const struct rusage *ru)
{
	return (ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1e3 +
	       (ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e3;
}

/* PID 1 of the new namespaces: builds the root (or nothing) and exits. */
static int pid1(int ws_fd, bool build)
{
	struct sbx_rootfs_spec spec = {
		.workspace_fd = ws_fd,
		.protected_paths = sbx_default_protected_paths,
	};
	char err[512];

	if (build && sbx_rootfs_build(&spec, err, sizeof err) < 0) {
		fprintf(stderr, "bench_root: %s\n", err);
		return 1;
	}
	return 0;
}

static int round_child(int ws_fd, bool build)
{
	char err[512];
	int status;
	pid_t pid;

	if (sbx_userns_enter(getuid(), getgid(), NS_FLAGS, err, sizeof err) < 0) {
		fprintf(stderr, "bench_root: %s\n", err);
		return 1;
	}
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		_exit(pid1(ws_fd, build));
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}

static int one_round(int ws_fd, bool build, struct sample *out)
{
	struct rusage ru;
	double t0 = now_ms();
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(round_child(ws_fd, build));
	if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	out->wall_ms = now_ms() - t0;
	out->cpu_ms = cpu_ms_of(&ru);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 100;
	char tmpl[] = "/tmp/bench-root-XXXXXX";
	const char *ws = argc > 2 ? argv[2] : mkdtemp(tmpl);
	_cleanup_free_ double *rw = NULL, *rc = NULL, *bw = NULL, *bc = NULL;
	_cleanup_close_ int ws_fd = -1;
	int r = 0;

	if (rounds < 1 || !ws) {
		fprintf(stderr, "usage: bench_root ROUNDS [WORKDIR]\n");
		return 2;
	}
	ws_fd = open(ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
	rw = calloc((size_t)rounds, sizeof *rw);
	rc = calloc((size_t)rounds, sizeof *rc);
	bw = calloc((size_t)rounds, sizeof *bw);
	bc = calloc((size_t)rounds, sizeof *bc);
	if (ws_fd < 0 || !rw || !rc || !bw || !bc) {
		fprintf(stderr, "bench_root: %s: %s\n", ws, strerror(errno));
		return 1;
	}
	for (int i = 0; i < rounds && r == 0; i++) {
		struct sample root = { 0 }, bare = { 0 };

		r = one_round(ws_fd, true, &root);
		if (r == 0)
			r = one_round(ws_fd, false, &bare);
		rw[i] = root.wall_ms;
		rc[i] = root.cpu_ms;
		bw[i] = bare.wall_ms;
		bc[i] = bare.cpu_ms;
	}
	if (r < 0) {
		fprintf(stderr, "bench_root: a round failed\n");
		return 1;
	}
	double mrw = median(rw, rounds), mrc = median(rc, rounds);
	double mbw = median(bw, rounds), mbc = median(bc, rounds);

	printf("root build, fresh namespaces: %.3f ms wall, %.3f ms CPU (medians of %d)\n", mrw,
	       mrc, rounds);
	printf("the same namespaces, nothing built: %.3f ms wall, %.3f ms CPU\n", mbw, mbc);
	printf("the root's own cost: %.3f ms wall, %.3f ms CPU\n", mrw - mbw, mrc - mbc);
	printf("RESULT root_ms=%.3f root_cpu_ms=%.3f bare_ms=%.3f bare_cpu_ms=%.3f\n", mrw, mrc,
	       mbw, mbc);
	if (argc <= 2)
		rmdir(ws);
	return 0;
}
