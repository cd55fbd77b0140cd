/* Glob and Grep against find and grep on one generated tree: 50,000 files (sizes from a few
 * hundred bytes to 64 KiB, in 550 directories, some lines matching), each measurement the
 * median of several warm runs, side by side in the same process run.
 *
 *   bench-search [files] [runs] [dir]   (defaults: 50000 files, 5 runs, a temporary dir)
 *
 * With dir, the tree is made there unless it exists already, and kept: handy when tuning. */
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tools/tool.h"
#include "util/json.h"

#define NEEDLE "frobnicate_widget"
#define MAX_RUNS 15

static const char *const words[] = { "alpha", "beta", "gamma", "delta", "return", "static",
	"int", "value", "buffer", "length", "count", "index", "struct", "void", "const", "if",
	"else", "while", "for", "size_t", "error", "result", "node", "list" };
static const char *const exts[] = { "py", "c", "h", "txt", "md", "js", "py", "c", "json", "rs" };

static unsigned long long rng = 88172645463325252ull;

static unsigned next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng >> 11);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One file of roughly `size` bytes of code-like lines; every 50th file has a needle line. */
static void write_file(const char *path, size_t size, bool needle)
{
	static char buf[70000];
	size_t len = 0;
	size_t needle_at = needle ? next_rand() % (size + 1) : SIZE_MAX;
	int fd;

	while (len < size) {
		size_t words_in_line = 3 + next_rand() % 9;
		if (len >= needle_at) {
			len += (size_t)snprintf(buf + len, sizeof buf - len, "    call(" NEEDLE ");\n");
			needle_at = SIZE_MAX;
			continue;
		}
		for (size_t w = 0; w < words_in_line && len < sizeof buf - 64; w++)
			len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", w ? " " : "    ",
			                        words[next_rand() % (sizeof words / sizeof *words)]);
		buf[len++] = '\n';
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
		perror(path);
		exit(1);
	}
	close(fd);
}

static size_t file_size(void)
{
	unsigned r = next_rand() % 100;

	if (r < 60)
		return 300 + next_rand() % 2000;
	if (r < 95)
		return 2000 + next_rand() % 14000;
	return 16000 + next_rand() % 48000;
}

static void make_tree(const char *root, size_t files)
{
	char path[PATH_MAX];
	size_t made = 0;

	for (int top = 0; made < files; top++) {
		snprintf(path, sizeof path, "%s/pkg%02d", root, top);
		mkdir(path, 0755);
		for (int sub = 0; sub < 10 && made < files; sub++) {
			snprintf(path, sizeof path, "%s/pkg%02d/mod%d", root, top, sub);
			mkdir(path, 0755);
			for (int f = 0; f < 100 && made < files; f++, made++) {
				snprintf(path, sizeof path, "%s/pkg%02d/mod%d/file%03d.%s", root, top, sub, f,
				         exts[made % (sizeof exts / sizeof *exts)]);
				write_file(path, file_size(), made % 50 == 7);
			}
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return v[n / 2];
}

static double cpu_s(int who)
{
	struct rusage ru;

	getrusage(who, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

typedef struct timing {
	double wall, cpu;
} timing;

static timing run_shell(const char *cmd)
{
	double t0 = now_s(), c0 = cpu_s(RUSAGE_CHILDREN);

	if (system(cmd) < 0)
		exit(1);
	return (timing){ now_s() - t0, cpu_s(RUSAGE_CHILDREN) - c0 };
}

static timing run_tool(sbx_tool_ctx *ctx, const sbx_tool_def *tool, const sbx_json *args,
                       char *summary, size_t summary_len)
{
	sbx_tool_out out = { .ok = true };
	double t0 = now_s(), c0 = cpu_s(RUSAGE_SELF);
	timing t;

	if (tool->run(ctx, args, &out) < 0 || !out.ok) {
		fprintf(stderr, "%s failed: %s\n", tool->name, out.text.data);
		exit(1);
	}
	t = (timing){ now_s() - t0, cpu_s(RUSAGE_SELF) - c0 };
	snprintf(summary, summary_len, "%s", out.meta.data ? out.meta.data : "");
	sbx_buf_free(&out.text);
	sbx_buf_free(&out.meta);
	return t;
}

/* Times the tool and the shell command alternately (a warm-up of each first), so load from
 * elsewhere on the machine hits both alike, and prints the medians side by side. */
static void compare(sbx_tool_ctx *ctx, const char *what, const sbx_tool_def *tool,
                    const char *json, const char *other, const char *cmd, int runs)
{
	double ow[MAX_RUNS], oc[MAX_RUNS], tw[MAX_RUNS], tc[MAX_RUNS];
	sbx_json *args = NULL;
	char err[200], meta[512];

	if (sbx_json_parse(json, strlen(json), &args, err, sizeof err) < 0) {
		fprintf(stderr, "%s: %s\n", json, err);
		exit(1);
	}
	run_tool(ctx, tool, args, meta, sizeof meta);
	run_shell(cmd);
	for (int i = 0; i < runs; i++) {
		timing o = run_tool(ctx, tool, args, meta, sizeof meta);
		timing t = run_shell(cmd);
		ow[i] = o.wall;
		oc[i] = o.cpu;
		tw[i] = t.wall;
		tc[i] = t.cpu;
	}
	sbx_json_free(args);
	double a = median(ow, runs), b = median(tw, runs);
	printf("%-30s %7.1f ms (cpu %6.1f)  %-20s %7.1f ms (cpu %6.1f)  ratio %.2f\n", what,
	       a * 1e3, median(oc, runs) * 1e3, other, b * 1e3, median(tc, runs) * 1e3, a / b);
	printf("    (%s)\n", meta);
}

int main(int argc, char **argv)
{
	size_t files = argc > 1 ? strtoul(argv[1], NULL, 10) : 50000;
	int runs = argc > 2 ? atoi(argv[2]) : 5;
	char root[PATH_MAX / 2] = "/tmp/sbx-bench-search-XXXXXX", cmd[PATH_MAX + 200];
	bool keep = false, reuse = false;
	double t0;

	if (runs < 1 || runs > MAX_RUNS)
		runs = 5;
	if (argc > 3) {
		snprintf(root, sizeof root, "%s", argv[3]);
		keep = true;
		reuse = mkdir(root, 0755) < 0;
	} else if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	t0 = now_s();
	if (!reuse) {
		make_tree(root, files);
		sync();   /* writeback of the new files would disturb the first timings */
	}
	printf("tree: %zu files under %s, %s in %.1f s; median of %d warm runs\n\n", files, root,
	       reuse ? "reused" : "made", now_s() - t0, runs);

	sbx_tool_ctx ctx = { .session_id = "default", .root_view = root,
	                     .root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC) };

	snprintf(cmd, sizeof cmd, "grep -rl " NEEDLE " %s > /dev/null", root);
	compare(&ctx, "Grep files_with_matches", &sbx_tool_grep,
	        "{\"pattern\":\"" NEEDLE "\",\"head_limit\":0}", "grep -rl", cmd, runs);
	snprintf(cmd, sizeof cmd, "grep -rn " NEEDLE " %s > /dev/null", root);
	compare(&ctx, "Grep content -n", &sbx_tool_grep, "{\"pattern\":\"" NEEDLE "\","
	        "\"output_mode\":\"content\",\"head_limit\":0}", "grep -rn", cmd, runs);
	snprintf(cmd, sizeof cmd, "grep -rcP 'struct\\s+\\w+_t\\b' %s > /dev/null", root);
	compare(&ctx, "Grep count (regex)", &sbx_tool_grep, "{\"pattern\":"
	        "\"struct\\\\s+\\\\w+_t\\\\b\",\"output_mode\":\"count\",\"head_limit\":0}",
	        "grep -rcP", cmd, runs);
	snprintf(cmd, sizeof cmd, "grep -rl " NEEDLE " %s > /dev/null", root);
	compare(&ctx, "Grep default page (250)", &sbx_tool_grep, "{\"pattern\":\"" NEEDLE "\"}",
	        "grep -rl", cmd, runs);
	snprintf(cmd, sizeof cmd, "find %s -name '*.py' > /dev/null", root);
	compare(&ctx, "Glob **/*.py", &sbx_tool_glob, "{\"pattern\":\"**/*.py\"}",
	        "find -name '*.py'", cmd, runs);
	snprintf(cmd, sizeof cmd, "find %s/pkg07 -name 'file01?.[ch]' > /dev/null", root);
	compare(&ctx, "Glob pkg07/**/file01?.{c,h}", &sbx_tool_glob,
	        "{\"pattern\":\"pkg07/**/file01?.{c,h}\"}", "find pkg07 -name", cmd, runs);

	close(ctx.root_fd);
	if (keep)
		return 0;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : 1;
}
