/* Helpers for the test programs that run one suite on the backend SBX_TEST_BACKEND names. */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend_support.h"
#include "support.h"

#define PROCESS_WAIT_MS 5000

const char *bt_backend(void)
{
	const char *b = getenv("SBX_TEST_BACKEND");

	return b && *b ? b : "local";
}

char *bt_fmt(const char *format, ...)
{
	va_list ap;
	char *s = NULL;
	int n;

	va_start(ap, format);
	n = vasprintf(&s, format, ap);
	va_end(ap);
	ck_assert_int_ge(n, 0);
	return s;
}

int bt_open(const char *workdir, const char *extra, sbx_workspace **out)
{
	char *cfg = NULL;
	int r;

	*out = NULL;
	if (asprintf(&cfg, "{\"backend\":\"%s\"%s%s%s%s%s}", bt_backend(),
	             workdir ? ",\"workdir\":\"" : "", workdir ? workdir : "", workdir ? "\"" : "",
	             extra ? "," : "", extra ? extra : "") < 0)
		return -SBX_ENOMEM;
	r = sbx_workspace_open(cfg, out);
	free(cfg);
	return r;
}

sbx_workspace *bt_open_ok(const char *workdir, const char *extra)
{
	sbx_workspace *w = NULL;
	int r = bt_open(workdir, extra, &w);

	ck_assert_msg(r == 0, "open a %s workspace (%s): %d %s", bt_backend(),
	              extra ? extra : "no options", r, sbx_last_error());
	return w;
}

bool bt_backend_usable(void)
{
	sbx_workspace *w = NULL;
	int r = bt_open(NULL, NULL, &w);

	if (r == -SBX_EBACKEND) {
		fprintf(stderr, "SKIP: backend %s cannot work on this host: %s\n", bt_backend(),
		        sbx_last_error());
		return false;
	}
	if (r < 0) {
		/* Not a skip: let the tests fail and show it. */
		fprintf(stderr, "warning: backend %s: open failed: %d %s\n", bt_backend(), r,
		        sbx_last_error());
		return true;
	}
	sbx_workspace_close(w);
	return true;
}

char *bt_inside(sbx_workspace *ws, const char *rel)
{
	return bt_fmt("%s/%s", sbx_workspace_root(ws), rel);
}

const char *bt_marker(void)
{
	static char buf[8][64];
	static unsigned n;
	char *m = buf[n % 8];

	snprintf(m, sizeof buf[0], "1000.%07d%04u", (int)getpid(), ++n);
	return m;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool bt_wait_for_process(const char *mark, bool present)
{
	int64_t deadline = now_ms() + PROCESS_WAIT_MS;

	for (;;) {
		if (test_process_exists(mark) == present)
			return true;
		if (now_ms() > deadline)
			return false;
		usleep(10000);
	}
}

/* The parent pid in /proc/<pid>/stat: "pid (comm) state ppid ...", comm may hold anything,
 * so the fields are counted from the last ')'. */
static int parent_of(const char *pid)
{
	char path[300], buf[1024], *close_paren;
	int fd, ppid = -1;
	ssize_t n;

	snprintf(path, sizeof path, "/proc/%s/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	close_paren = strrchr(buf, ')');
	if (!close_paren || sscanf(close_paren + 1, " %*c %d", &ppid) != 1)
		return -1;
	return ppid;
}

int bt_count_children(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && parent_of(e->d_name) == getpid())
			n++;
	closedir(d);
	return n;
}

sbx_result *bt_shell(sbx_workspace *ws, const char *cmd, const sbx_exec_opts *opts)
{
	sbx_result *res = NULL;
	int r = sbx_exec_shell(ws, cmd, opts, &res);

	ck_assert_msg(r == 0, "exec %s: %d %s", cmd, r, sbx_last_error());
	return res;
}

sbx_result *bt_argv(sbx_workspace *ws, const char *const *argv, const sbx_exec_opts *opts)
{
	sbx_result *res = NULL;
	int r = sbx_exec(ws, argv, opts, &res);

	ck_assert_msg(r == 0, "exec %s: %d %s", argv[0], r, sbx_last_error());
	return res;
}

char *bt_shell_out(sbx_workspace *ws, const char *cmd)
{
	sbx_result *res = bt_shell(ws, cmd, NULL);
	char *out;

	ck_assert_msg(sbx_result_exit_code(res) == 0, "`%s` exited %d (signal %d): %s", cmd,
	              sbx_result_exit_code(res), sbx_result_signal(res),
	              sbx_result_stderr(res, NULL));
	out = strdup(sbx_result_stdout(res, NULL));
	ck_assert_ptr_nonnull(out);
	sbx_result_free(res);
	return out;
}

void bt_put(sbx_workspace *ws, const char *rel, const char *text, unsigned mode)
{
	int r = sbx_file_write(ws, rel, text, strlen(text), mode, SBX_WRITE_MKDIRS);

	ck_assert_msg(r == 0, "write %s: %d %s", rel, r, sbx_last_error());
}

long bt_memory_kb(bool reset_peak)
{
	static bool peak_resettable;
	char line[256];
	long kb = -1;
	FILE *f;

	if (reset_peak) {
		f = fopen("/proc/self/clear_refs", "w");
		peak_resettable = false;
		if (f) {
			bool wrote = fputs("5", f) >= 0;

			peak_resettable = fclose(f) == 0 && wrote;
		}
	}
	f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, peak_resettable ? "VmHWM:" : "VmRSS:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}
