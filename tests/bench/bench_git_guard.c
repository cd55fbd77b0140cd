/* What the git guard costs (src/gitguard.h), side by side in one run on one backend (ns by
 * default): sbx_workspace_open of an empty workdir and of a tree of N files (with a few
 * repositories in it, where the guard's walk at open is O(tree)); warm sbx_exec of true in
 * both (the check after a command must cost what changed, not the tree); and a command that
 * creates a repository each time (the check then inspects it and binds it). Medians in ms.
 * Usage: bench-git-guard [FILES] [RUNS] [BACKEND]. Not a pass/fail test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>

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

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, compare_double);
	return n ? v[n / 2] : 0;
}

/* files files in directories of 10, one repository (git init) every 1000 files. */
static void make_tree(const char *root, int files)
{
	char cmd[4200];

	for (int d = 0; d * 10 < files; d++) {
		char dir[2048];
		snprintf(dir, sizeof dir, "%s/d%03d/e%03d", root, d / 100, d % 100);
		snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
		if (system(cmd) != 0)
			exit(1);
		for (int f = 0; f < 10 && d * 10 + f < files; f++) {
			char path[4200];
			snprintf(path, sizeof path, "%s/f%d.txt", dir, f);
			FILE *fp = fopen(path, "w");
			if (!fp)
				exit(1);
			fputs("content\n", fp);
			fclose(fp);
		}
		if (d % 100 == 0) {
			snprintf(cmd, sizeof cmd, "git init -q '%s'", dir);
			if (system(cmd) != 0)
				exit(1);
		}
	}
}

static sbx_workspace *open_ws(const char *backend, const char *dir, double *ms)
{
	char cfg[4200];
	sbx_workspace *w = NULL;
	double t0 = now_ms();

	snprintf(cfg, sizeof cfg, "{\"backend\":\"%s\",\"workdir\":\"%s\"}", backend, dir);
	if (sbx_workspace_open(cfg, &w) < 0) {
		fprintf(stderr, "open: %s\n", sbx_last_error());
		exit(1);
	}
	*ms = now_ms() - t0;
	return w;
}

static double exec_ms(sbx_workspace *w, const char *cmd)
{
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	sbx_result *r = NULL;
	double t0 = now_ms();

	if (sbx_exec(w, argv, NULL, &r) < 0 || sbx_result_exit_code(r) != 0) {
		fprintf(stderr, "exec %s: %s\n", cmd, sbx_last_error());
		exit(1);
	}
	sbx_result_free(r);
	return now_ms() - t0;
}

int main(int argc, char **argv)
{
	int files = argc > 1 ? atoi(argv[1]) : 10000, runs = argc > 2 ? atoi(argv[2]) : 200;
	const char *backend = argc > 3 ? argv[3] : "ns";
	char empty[] = "/tmp/bench-gitguard-empty-XXXXXX", tree[] = "/tmp/bench-gitguard-tree-XXXXXX";
	double open_empty[5], open_tree[5], *warm_empty, *warm_tree, *new_repo, ms;
	const char *const true_argv[] = { "/bin/true", NULL };
	char cmd[512];

	if (!mkdtemp(empty) || !mkdtemp(tree) || runs < 1)
		return 1;
	warm_empty = calloc((size_t)runs, sizeof *warm_empty);
	warm_tree = calloc((size_t)runs, sizeof *warm_tree);
	new_repo = calloc((size_t)runs, sizeof *new_repo);
	make_tree(tree, files);
	for (int i = 0; i < 5; i++) {
		sbx_workspace_close(open_ws(backend, empty, &open_empty[i]));
		sbx_workspace_close(open_ws(backend, tree, &open_tree[i]));
	}
	sbx_workspace *we = open_ws(backend, empty, &ms), *wt = open_ws(backend, tree, &ms);
	for (int i = 0; i < runs; i++) {
		sbx_result *r = NULL;
		double t0 = now_ms();
		sbx_exec(we, true_argv, NULL, &r);
		warm_empty[i] = now_ms() - t0;
		sbx_result_free(r);
		t0 = now_ms();
		sbx_exec(wt, true_argv, NULL, &r);
		warm_tree[i] = now_ms() - t0;
		sbx_result_free(r);
	}
	int n_new = runs < 50 ? runs : 50;
	for (int i = 0; i < n_new; i++) {
		snprintf(cmd, sizeof cmd, "mkdir -p new/r%d/.git/objects new/r%d/.git/refs && "
		         "echo 'ref: refs/heads/main' > new/r%d/.git/HEAD", i, i, i);
		new_repo[i] = exec_ms(wt, cmd);
	}
	double sh_ms[50];
	for (int i = 0; i < n_new; i++)
		sh_ms[i] = exec_ms(wt, "true");
	char *json = NULL;
	sbx_workspace_git_quarantine(wt, &json);
	printf("git guard on %s, %d files in %d directories, %d repositories:\n", backend, files,
	       (files + 9) / 10, (files / 10 + 99) / 100);
	printf("  open, empty workdir       %8.2f ms\n", median(open_empty, 5));
	printf("  open, the tree            %8.2f ms  (the walk at open: +%.2f ms)\n",
	       median(open_tree, 5), median(open_tree, 5) - median(open_empty, 5));
	printf("  warm exec true, empty     %8.3f ms\n", median(warm_empty, runs));
	printf("  warm exec true, the tree  %8.3f ms\n", median(warm_tree, runs));
	printf("  sh -c true, the tree      %8.3f ms\n", median(sh_ms, n_new));
	printf("  sh making a repository    %8.3f ms  (check, inspect and bind included)\n",
	       median(new_repo, n_new));
	printf("  report: %.160s\n", json ? json : "");
	sbx_free(json);
	sbx_workspace_close(we);
	sbx_workspace_close(wt);
	snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", empty, tree);
	return system(cmd) == 0 ? 0 : 1;
}
