/* Glob and Grep against find and grep on one generated tree: 50,000 files (sizes from a few
 * hundred bytes to 64 KiB, in 550 directories, some lines matching), each measurement the
 * median of several warm runs, side by side in the same process run.
 *
 *   bench-search [files] [runs]      (defaults: 50000 files, 5 runs) */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static double time_shell(const char *cmd, int runs)
{
	double t[MAX_RUNS];

	if (system(cmd) < 0)   /* warm-up */
		exit(1);
	for (int i = 0; i < runs; i++) {
		double t0 = now_s();
		if (system(cmd) < 0)
			exit(1);
		t[i] = now_s() - t0;
	}
	return median(t, runs);
}

static double time_tool(sbx_tool_ctx *ctx, const sbx_tool_def *tool, const char *json, int runs,
                        char *summary, size_t summary_len)
{
	double t[MAX_RUNS];
	sbx_json *args = NULL;
	char err[200];

	if (sbx_json_parse(json, strlen(json), &args, err, sizeof err) < 0) {
		fprintf(stderr, "%s: %s\n", json, err);
		exit(1);
	}
	for (int i = -1; i < runs; i++) {
		sbx_tool_out out = { .ok = true };
		double t0 = now_s();
		if (tool->run(ctx, args, &out) < 0 || !out.ok) {
			fprintf(stderr, "%s failed: %s\n", tool->name, out.text.data);
			exit(1);
		}
		if (i >= 0)
			t[i] = now_s() - t0;
		snprintf(summary, summary_len, "%s", out.meta.data ? out.meta.data : "");
		sbx_buf_free(&out.text);
		sbx_buf_free(&out.meta);
	}
	sbx_json_free(args);
	return median(t, runs);
}

static void row(const char *what, double ours, const char *other, double theirs,
                const char *meta)
{
	printf("%-34s %8.1f ms   %-24s %8.1f ms   ratio %.2f\n", what, ours * 1e3, other,
	       theirs * 1e3, ours / theirs);
	printf("    (%s)\n", meta);
}

int main(int argc, char **argv)
{
	size_t files = argc > 1 ? strtoul(argv[1], NULL, 10) : 50000;
	int runs = argc > 2 ? atoi(argv[2]) : 5;
	char root[] = "/tmp/sbx-bench-search-XXXXXX", cmd[PATH_MAX + 200], meta[512];
	double ours, theirs, t0;

	if (runs < 1 || runs > MAX_RUNS)
		runs = 5;
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	t0 = now_s();
	make_tree(root, files);
	printf("tree: %zu files under %s, made in %.1f s; median of %d warm runs\n\n", files, root,
	       now_s() - t0, runs);

	sbx_tool_ctx ctx = { .session_id = "default", .root_view = root,
	                     .root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC) };

	ours = time_tool(&ctx, &sbx_tool_grep, "{\"pattern\":\"" NEEDLE "\",\"head_limit\":0}",
	                 runs, meta, sizeof meta);
	snprintf(cmd, sizeof cmd, "grep -rl " NEEDLE " %s > /dev/null", root);
	theirs = time_shell(cmd, runs);
	row("Grep files_with_matches", ours, "grep -rl", theirs, meta);

	ours = time_tool(&ctx, &sbx_tool_grep, "{\"pattern\":\"" NEEDLE "\",\"output_mode\":"
	                 "\"content\",\"head_limit\":0}", runs, meta, sizeof meta);
	snprintf(cmd, sizeof cmd, "grep -rn " NEEDLE " %s > /dev/null", root);
	theirs = time_shell(cmd, runs);
	row("Grep content -n", ours, "grep -rn", theirs, meta);

	ours = time_tool(&ctx, &sbx_tool_grep, "{\"pattern\":\"struct\\\\s+\\\\w+_t\\\\b\","
	                 "\"output_mode\":\"count\",\"head_limit\":0}", runs, meta, sizeof meta);
	snprintf(cmd, sizeof cmd, "grep -rcP 'struct\\s+\\w+_t\\b' %s > /dev/null", root);
	theirs = time_shell(cmd, runs);
	row("Grep count (regex)", ours, "grep -rcP", theirs, meta);

	ours = time_tool(&ctx, &sbx_tool_grep, "{\"pattern\":\"" NEEDLE "\"}", runs, meta,
	                 sizeof meta);
	snprintf(cmd, sizeof cmd, "grep -rl " NEEDLE " %s > /dev/null", root);
	theirs = time_shell(cmd, runs);
	row("Grep default page (250)", ours, "grep -rl", theirs, meta);

	ours = time_tool(&ctx, &sbx_tool_glob, "{\"pattern\":\"**/*.py\"}", runs, meta, sizeof meta);
	snprintf(cmd, sizeof cmd, "find %s -name '*.py' > /dev/null", root);
	theirs = time_shell(cmd, runs);
	row("Glob **/*.py", ours, "find -name '*.py'", theirs, meta);

	ours = time_tool(&ctx, &sbx_tool_glob, "{\"pattern\":\"pkg07/**/file01?.{c,h}\"}", runs,
	                 meta, sizeof meta);
	snprintf(cmd, sizeof cmd, "find %s/pkg07 -name 'file01?.[ch]' > /dev/null", root);
	theirs = time_shell(cmd, runs);
	row("Glob pkg07/**/file01?.{c,h}", ours, "find pkg07 -name", theirs, meta);

	close(ctx.root_fd);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : 1;
}
