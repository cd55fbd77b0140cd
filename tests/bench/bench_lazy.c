/* What loading the library costs a process: `agentsbx version` (the CLI loading everything it
 * links and printing one line) and a fresh process doing dlopen("libagentsbx.so.1") and
 * dlclose, wall and CPU time, and the shared objects the dlopen maps; for one or more build
 * folders, interleaved round by round so that a busy machine hurts each alike, medians.
 *
 *   bench-lazy ROUNDS BUILD_DIR [BUILD_DIR...]     (the first is "before", the last "after")
 *
 * The dlopen runs in a fresh exec of this program, so a row's time holds an exec of a small
 * program too: the "empty" row is that exec alone, and "net" subtracts it.
 * Last line: RESULT load_ms=<net dlopen, last dir> version_ms=... version_cpu_ms=...
 * maps=... and, with two dirs or more, the ratios last/first. */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_DIRS 4

struct sample {
	double wall_ms, cpu_ms;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Runs argv with stdout to /dev/null (or to out_fd), returns its wall and CPU time. */
static struct sample run(const char *const argv[], int out_fd)
{
	struct sample s = { 0 };
	struct rusage ru;
	int status;
	double t0 = now_ms();
	pid_t pid = fork();

	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		int fd = out_fd >= 0 ? out_fd : open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "%s failed\n", argv[0]);
		exit(1);
	}
	s.wall_ms = now_ms() - t0;
	s.cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
	return s;
}

static int count_objects(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096], seen[256][256];
	int n = 0;

	while (f && fgets(line, sizeof line, f)) {
		char *path = strchr(line, '/');
		if (!path || !strstr(path, ".so"))
			continue;
		path[strcspn(path, "\n")] = '\0';
		int dup = 0;
		for (int i = 0; i < n && !dup; i++)
			dup = !strcmp(seen[i], path);
		if (!dup && n < 256)
			snprintf(seen[n++], sizeof seen[0], "%s", path);
	}
	if (f)
		fclose(f);
	return n;
}

/* The child modes: "--dlopen PATH" (prints the objects it added), "--empty". */
static int child_mode(int argc, char **argv)
{
	if (!strcmp(argv[1], "--empty"))
		return 0;
	int before = count_objects();
	void *h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	printf("%d\n", count_objects() - before); /* the library and what it brought */
	dlclose(h);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof v[0], cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strncmp(argv[1], "--", 2))
		return child_mode(argc, argv);
	if (argc < 3 || argc - 2 > MAX_DIRS) {
		fprintf(stderr, "usage: %s ROUNDS BUILD_DIR [BUILD_DIR...]\n", argv[0]);
		return 2;
	}
	int rounds = atoi(argv[1]), ndirs = argc - 2;
	char self[PATH_MAX], cli[MAX_DIRS][PATH_MAX], lib[MAX_DIRS][PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	double *vw[MAX_DIRS], *vc[MAX_DIRS], *dw[MAX_DIRS], *dc[MAX_DIRS], *ew = calloc(rounds, 8);
	int maps[MAX_DIRS];

	if (n < 0 || rounds < 1)
		return 2;
	self[n] = '\0';
	for (int d = 0; d < ndirs; d++) {
		snprintf(cli[d], sizeof cli[d], "%s/agentsbx", argv[2 + d]);
		snprintf(lib[d], sizeof lib[d], "%s/libagentsbx.so.1", argv[2 + d]);
		vw[d] = calloc(rounds, 8), vc[d] = calloc(rounds, 8);
		dw[d] = calloc(rounds, 8), dc[d] = calloc(rounds, 8);
		int p[2];
		if (pipe(p) < 0)
			return 1;
		const char *dl[] = { self, "--dlopen", lib[d], NULL };
		run(dl, p[1]);
		close(p[1]);
		char buf[32] = "";
		if (read(p[0], buf, sizeof buf - 1) < 0)
			return 1;
		close(p[0]);
		maps[d] = atoi(buf);
	}
	for (int r = 0; r < rounds; r++) {
		const char *empty[] = { self, "--empty", NULL };
		ew[r] = run(empty, -1).wall_ms;
		for (int d = 0; d < ndirs; d++) {
			const char *version[] = { cli[d], "version", NULL };
			const char *dl[] = { self, "--dlopen", lib[d], NULL };
			struct sample v = run(version, -1), o = run(dl, -1);
			vw[d][r] = v.wall_ms, vc[d][r] = v.cpu_ms;
			dw[d][r] = o.wall_ms, dc[d][r] = o.cpu_ms;
		}
	}
	double empty_ms = median(ew, rounds), res[MAX_DIRS][5];
	printf("%d rounds, medians; the empty exec of this program: %.2f ms\n", rounds, empty_ms);
	printf("%-28s %12s %12s %12s %12s %14s %6s\n", "build", "version ms", "version cpu",
	       "dlopen ms", "dlopen cpu", "dlopen net ms", "maps");
	for (int d = 0; d < ndirs; d++) {
		res[d][0] = median(vw[d], rounds), res[d][1] = median(vc[d], rounds);
		res[d][2] = median(dw[d], rounds), res[d][3] = median(dc[d], rounds);
		res[d][4] = res[d][2] - empty_ms;
		printf("%-28s %12.2f %12.2f %12.2f %12.2f %14.2f %6d\n", argv[2 + d], res[d][0],
		       res[d][1], res[d][2], res[d][3], res[d][4], maps[d]);
	}
	int l = ndirs - 1;
	printf("RESULT load_ms=%.2f version_ms=%.2f version_cpu_ms=%.2f maps=%d", res[l][4],
	       res[l][0], res[l][1], maps[l]);
	if (ndirs > 1)
		printf(" version_ratio=%.2f load_ratio=%.2f maps_before=%d", res[l][0] / res[0][0],
		       res[l][4] / res[0][4], maps[0]);
	printf("\n");
	return 0;
}
