/* The docker backend's image pulls and its detached containers with a named user, against a
 * real engine (tests/run-all.sh starts dockerd and builds the test image):
 *
 *  - a missing image is pulled from a registry — the test's own (tests/docker/mini-registry.py,
 *    on 127.0.0.1: Docker Hub is out of reach here) — and the pull's progress reaches the
 *    caller of sbx_workspace_open_with, on its thread, layer by layer; a registry's refusal
 *    (an unknown image, a layer blob it does not have) is the open's error, in the
 *    registry's words;
 *  - the pull stream is read robustly: a fake engine (tests/docker/fake-engine.py) serves the
 *    recorded format cut into odd chunks with garbage, wrong types and a 2 MiB line between
 *    the lines, and exactly the recorded events arrive;
 *  - `agentsbx exec` shows that progress: a bar redrawn on a terminal, one line per layer
 *    otherwise;
 *  - a detached container whose docker.user is a name the image knows is reattached after
 *    the host process is killed (same container), and its commands run as that user (the
 *    suite is named for its larger part). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "backend_support.h"
#include "support.h"

/* ---- what a listener receives ------------------------------------------------------------- */

#define MAX_EVENTS 256

struct event {
	char phase[16], subject[128], item[80], status[160];
	uint64_t current, total;
};

struct events {
	pthread_t thread;             /* where sbx_workspace_open_with ran */
	bool wrong_thread, bad_size;
	size_t n;
	struct event ev[MAX_EVENTS];
};

static void collect(void *userdata, const sbx_open_progress *e)
{
	struct events *es = userdata;
	struct event *out;

	if (!pthread_equal(pthread_self(), es->thread))
		es->wrong_thread = true;
	if (e->size < sizeof *e || !e->phase || !e->subject || !e->item || !e->status)
		es->bad_size = true;
	if (es->n == MAX_EVENTS)
		return;
	out = &es->ev[es->n++];
	snprintf(out->phase, sizeof out->phase, "%s", e->phase);
	snprintf(out->subject, sizeof out->subject, "%s", e->subject);
	snprintf(out->item, sizeof out->item, "%s", e->item);
	snprintf(out->status, sizeof out->status, "%s", e->status);
	out->current = e->current;
	out->total = e->total;
}

static int open_collecting(const char *config, struct events *es, sbx_workspace **w)
{
	sbx_open_opts o = { .size = sizeof o, .progress = collect, .progress_userdata = es };

	es->thread = pthread_self();
	return sbx_workspace_open_with(config, &o, w);
}

/* Index of the first event from `from` on with this item and a status starting with status,
 * or -1. */
static int find(const struct events *es, int from, const char *item, const char *status)
{
	for (size_t i = (size_t)from; i < es->n; i++)
		if ((!item || !strcmp(es->ev[i].item, item)) &&
		    !strncmp(es->ev[i].status, status, strlen(status)))
			return (int)i;
	return -1;
}

static void assert_sane(const struct events *es, const char *subject)
{
	ck_assert_msg(!es->wrong_thread, "a progress event arrived on another thread");
	ck_assert_msg(!es->bad_size, "an event without its size or with a NULL string");
	for (size_t i = 0; i < es->n; i++) {
		ck_assert_str_eq(es->ev[i].phase, "pull");
		ck_assert_str_eq(es->ev[i].subject, subject);
		ck_assert_msg(!es->ev[i].total || es->ev[i].current <= es->ev[i].total,
		              "event %zu: %llu of %llu", i, (unsigned long long)es->ev[i].current,
		              (unsigned long long)es->ev[i].total);
	}
}

/* ---- the test's registry, and the engine's images ------------------------------------------ */

static pid_t registry_pid;
static int registry_port;

static const char *source_file(const char *rel)
{
	const char *src = getenv("SBX_TEST_SOURCE_ROOT");

	return bt_tmp("%s/%s", src ? src : ".", rel);
}

static void start_registry(void)
{
	char *port_file = bt_fmt("%s/port", bt_mkdtemp());
	const char *script = source_file("tests/docker/mini-registry.py");
	char buf[16] = "";
	FILE *f;

	const char *helpers = getenv("SBX_HELPER_DIR");
	char *init = bt_fmt("%s/agentsbx-init", helpers ? helpers : "."),
	     *run = bt_fmt("%s/agentsbx-run", helpers ? helpers : ".");

	registry_pid = fork();
	ck_assert_int_ge(registry_pid, 0);
	if (registry_pid == 0) {
		/* The helpers' libraries go into the image too, for a sanitizer build's. */
		execl("/usr/bin/python3", "python3", script, port_file, init, run, (char *)NULL);
		_exit(127);
	}
	free(init);
	free(run);
	for (int i = 0; i < 1000 && !test_exists(port_file); i++)
		usleep(10000);
	ck_assert_msg((f = fopen(port_file, "r")) != NULL, "the test registry did not start");
	ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
	fclose(f);
	registry_port = atoi(buf);
	ck_assert_int_gt(registry_port, 0);
	free(port_file);
}

/* The engine forgets an image (through its API with curl: the library has no call for it). */
static void remove_image(const char *image)
{
	char *cmd = bt_fmt("curl -s -o /dev/null --unix-socket /var/run/docker.sock -X DELETE "
	                   "'http://docker/images/%s?force=1'", image);

	if (system(cmd) != 0)
		fprintf(stderr, "note: could not remove %s\n", image);
	free(cmd);
}

static void registry_setup(void)
{
	start_registry();
}

static void registry_teardown(void)
{
	char *image;

	if (registry_pid > 0) {
		kill(registry_pid, SIGKILL);
		waitpid(registry_pid, NULL, 0);
	}
	image = bt_fmt("localhost:%d/agentsbx-pulltest:v1", registry_port);
	remove_image(image);
	free(image);
	registry_pid = 0;
}

static char *docker_config(const char *image, const char *more)
{
	return bt_fmt("{\"backend\":\"docker\",\"workdir\":\"%s\",\"docker\":{\"image\":\"%s\"%s%s}}",
	              bt_mkdtemp(), image, more ? "," : "", more ? more : "");
}

/* ---- pulls from a registry, through the real engine ---------------------------------------- */

START_TEST(test_pull_reports_progress_per_layer)
{
	char *image = bt_fmt("localhost:%d/agentsbx-pulltest:v1", registry_port);
	char *cfg = docker_config(image, NULL), *out;
	static struct events es;
	sbx_workspace *w = NULL;
	int first_layer, second_layer, i;
	char a[80], b[80];

	remove_image(image);
	ck_assert_msg(open_collecting(cfg, &es, &w) == 0, "%s", sbx_last_error());
	assert_sane(&es, image);
	/* "Pulling from" first (about the image), then two layers announced, each downloaded with
	 * its size known and completed; the digest and the verdict last, about the image. */
	ck_assert_int_eq(find(&es, 0, NULL, "Pulling from agentsbx-pulltest"), 0);
	first_layer = find(&es, 0, NULL, "Pulling fs layer");
	ck_assert_int_gt(first_layer, 0);
	snprintf(a, sizeof a, "%s", es.ev[first_layer].item);
	second_layer = find(&es, first_layer + 1, NULL, "Pulling fs layer");
	ck_assert_int_gt(second_layer, first_layer);
	snprintf(b, sizeof b, "%s", es.ev[second_layer].item);
	ck_assert_str_ne(a, b);
	ck_assert_int_eq((int)strlen(a), 12);
	for (int k = 0; k < 2; k++) {
		const char *layer = k ? b : a;

		/* The first layer (busybox, about a megabyte) is downloaded with its size known;
		 * the engine may report the second, a few hundred bytes, as downloaded in one go,
		 * without a "Downloading" line (seen under a loaded sanitizer run). */
		i = find(&es, 0, layer, "Downloading");
		if (k == 1 && i <= 0)
			i = find(&es, 0, layer, "Download complete");
		else
			ck_assert_msg(i > 0 && es.ev[i].total > 0, "layer %s: no download with a size",
			              layer);
		ck_assert_msg(i > 0, "layer %s: not downloaded", layer);
		i = find(&es, 0, layer, "Pull complete");
		ck_assert_msg(i > 0, "layer %s: not completed", layer);
	}
	/* The busybox layer is about a megabyte: its bytes were counted as they came. */
	i = find(&es, 0, NULL, "Downloading");
	ck_assert_int_gt(i, 0);
	i = find(&es, 0, NULL, "Digest: sha256:");
	ck_assert_int_gt(i, second_layer);
	ck_assert_str_eq(es.ev[i].item, "");
	ck_assert_int_eq(find(&es, i, "", "Status: Downloaded newer image for"), (int)es.n - 1);
	/* And the workspace runs in the image that arrived. */
	out = bt_shell_out(w, "cat /hello.txt");
	ck_assert_str_eq(out, "pulled\n");
	free(out);
	sbx_workspace_close(w);
	/* Present now: a second open pulls nothing and reports nothing. */
	es.n = 0;
	ck_assert_int_eq(open_collecting(cfg, &es, &w), 0);
	ck_assert_int_eq((int)es.n, 0);
	sbx_workspace_close(w);
	free(cfg);
	free(image);
}
END_TEST

/* Opens a workspace of the registry's image name, which must fail with code; returns the
 * error message (static) and leaves the events in *es, checked for sanity. */
static const char *failed_pull(const char *name, int code, struct events *es)
{
	static char msg[1024];
	char *image = bt_fmt("localhost:%d/%s", registry_port, name);
	char *cfg = docker_config(image, NULL);
	sbx_workspace *w = NULL;

	ck_assert_int_eq(open_collecting(cfg, es, &w), code);
	ck_assert_ptr_null(w);
	snprintf(msg, sizeof msg, "%s", sbx_last_error());
	assert_sane(es, image);
	remove_image(image);
	free(cfg);
	free(image);
	return msg;
}

/* The engine refuses before its stream starts (HTTP 404) with the registry's words. */
START_TEST(test_pull_of_unknown_image_says_what_the_registry_said)
{
	static struct events es;
	const char *msg = failed_pull("agentsbx-missing:v1", -SBX_ENOENT, &es);

	ck_assert_msg(strstr(msg, bt_tmp("docker: pull image 'localhost:%d/agentsbx-missing:v1': "
	                                 "manifest for", registry_port)) &&
	              strstr(msg, "manifest unknown"), "%s", msg);
}
END_TEST

/* The engine reports a failure in the middle of a pull inside its 200 answer: the progress
 * so far reaches the listener, then the registry's words are the open's error. */
START_TEST(test_pull_failing_mid_stream_reports_the_error)
{
	static struct events es;
	const char *msg = failed_pull("agentsbx-brokenlayer:v1", -SBX_EBACKEND, &es);

	ck_assert_str_eq(msg, bt_tmp("docker: pull image 'localhost:%d/agentsbx-brokenlayer:v1': "
	                             "unknown blob", registry_port));
	ck_assert_int_ge(find(&es, 0, NULL, "Pulling fs layer"), 0);
	ck_assert_int_lt(find(&es, 0, NULL, "Status:"), 0);
}
END_TEST

/* ---- the pull stream's reading, with a fake engine ------------------------------------------ */

static pid_t fake_pid;
static char *fake_sock;

static void fake_setup(void)
{
	const char *script = source_file("tests/docker/fake-engine.py");

	fake_sock = bt_fmt("%s/engine.sock", bt_mkdtemp());
	fake_pid = fork();
	ck_assert_int_ge(fake_pid, 0);
	if (fake_pid == 0) {
		execl("/usr/bin/python3", "python3", script, fake_sock, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500 && !test_exists(fake_sock); i++)
		usleep(10000);
	ck_assert_msg(test_exists(fake_sock), "the fake engine did not start");
}

static void fake_teardown(void)
{
	if (fake_pid > 0) {
		kill(fake_pid, SIGKILL);
		waitpid(fake_pid, NULL, 0);
	}
	fake_pid = 0;
	free(fake_sock);
}

static char *fake_config(const char *image)
{
	char *more = bt_fmt("\"host\":\"unix://%s\",\"exec\":\"api\"", fake_sock);
	char *cfg = docker_config(image, more);

	free(more);
	return cfg;
}

START_TEST(test_recorded_stream_with_garbage_gives_exactly_its_events)
{
	static const struct { const char *item, *status; uint64_t current, total; } want[] = {
		{ "v1", "Pulling from fakepull/image", 0, 0 },
		{ "56f0be66f5a3", "Pulling fs layer", 0, 0 },
		{ "2335174eaf5d", "Pulling fs layer", 0, 0 },
		{ "2335174eaf5d", "Downloading", 108, 108 },
		{ "2335174eaf5d", "Download complete", 0, 0 },
		{ "56f0be66f5a3", "Downloading", 36564, 1027922 },
		{ "56f0be66f5a3", "Downloading", 1027922, 1027922 },
		{ "56f0be66f5a3", "Download complete", 0, 0 },
		{ "56f0be66f5a3", "Extracting", 1027922, 1027922 },
		{ "56f0be66f5a3", "Pull complete", 0, 0 },
		{ "2335174eaf5d", "Pull complete", 0, 0 },
		{ "", "Digest: sha256:827ee9e164123c11442c7048acd8b1c80e561e305b20cfda6efe643f56eeb7da",
		  0, 0 },
		{ "", "Status: Downloaded newer image for fakepull/image:v1", 0, 0 },
	};
	char *cfg = fake_config("fakepull/image:v1");
	static struct events es;
	sbx_workspace *w = NULL;
	size_t k = 0;

	ck_assert_msg(open_collecting(cfg, &es, &w) == 0, "%s", sbx_last_error());
	assert_sane(&es, "fakepull/image:v1");
	/* The garbage line with a string status (and a detail that is not an object) is an
	 * event too, with its counts unknown; everything else between is skipped. */
	for (size_t i = 0; i < es.n; i++) {
		if (!strcmp(es.ev[i].status, "Waiting \033[2J")) {
			ck_assert_str_eq(es.ev[i].item, "");
			ck_assert(es.ev[i].current == 0 && es.ev[i].total == 0);
			continue;
		}
		ck_assert_msg(k < sizeof want / sizeof want[0], "event %zu [%s] is one too many", i,
		              es.ev[i].status);
		ck_assert_str_eq(es.ev[i].item, want[k].item);
		ck_assert_str_eq(es.ev[i].status, want[k].status);
		ck_assert_msg(es.ev[i].current == want[k].current && es.ev[i].total == want[k].total,
		              "event %zu: %llu/%llu", i, (unsigned long long)es.ev[i].current,
		              (unsigned long long)es.ev[i].total);
		k++;
	}
	ck_assert_uint_eq(k, sizeof want / sizeof want[0]);
	sbx_workspace_close(w);
	free(cfg);
}
END_TEST

START_TEST(test_error_line_of_fake_engine_fails_the_open)
{
	char *cfg = fake_config("fakepull/error:v1");
	static struct events es;
	sbx_workspace *w = NULL;

	ck_assert_int_eq(open_collecting(cfg, &es, &w), -SBX_EBACKEND);
	ck_assert_str_eq(sbx_last_error(), "docker: pull image 'fakepull/error:v1': unknown blob");
	ck_assert_int_ge(find(&es, 0, "56f0be66f5a3", "Pulling fs layer"), 0);
	/* Without a listener the same open fails the same way. */
	ck_assert_int_eq(sbx_workspace_open(cfg, &w), -SBX_EBACKEND);
	ck_assert_str_eq(sbx_last_error(), "docker: pull image 'fakepull/error:v1': unknown blob");
	free(cfg);
}
END_TEST

static int count_of(const char *haystack, const char *needle)
{
	int n = 0;

	for (const char *p = haystack; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* ---- the CLI's display --------------------------------------------------------------------- */

static const char *cli_path(void)
{
	const char *root = getenv("SBX_TEST_BUILD_ROOT");

	return bt_tmp("%s/agentsbx", root ? root : ".");
}

/* Runs `agentsbx tools --config @cfg` (it opens the workspace and runs nothing: the fake
 * engine runs no commands) with stderr on a pipe or, with tty, on a
 * terminal; returns what it wrote there (caller frees) and its exit code. */
static char *cli_stderr(const char *cfg, bool tty, int *code)
{
	char *dir = bt_mkdtemp(), *at = bt_fmt("@%s/config.json", dir);
	const char *cli = cli_path();
	int fds[2], master = -1, status;
	char buf[8192];
	size_t len = 0;
	ssize_t n;
	pid_t pid;

	test_put_file(dir, "config.json", cfg, 0644);
	if (tty) {
		pid = forkpty(&master, NULL, NULL, NULL);
	} else {
		ck_assert_int_eq(pipe(fds), 0);
		pid = fork();
	}
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (!tty)
			dup2(fds[1], 2);
		dup2(open("/dev/null", O_WRONLY), 1);   /* the tool definitions */
		execl(cli, cli, "tools", "--config", at, (char *)NULL);
		_exit(127);
	}
	if (!tty)
		close(fds[1]);
	/* A pty's master reads EIO once the child has gone. */
	while (len < sizeof buf - 1 &&
	       (n = read(tty ? master : fds[0], buf + len, sizeof buf - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(tty ? master : fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	*code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	free(at);
	return strdup(buf);
}

START_TEST(test_cli_prints_a_line_per_layer_without_a_terminal)
{
	char *cfg = fake_config("fakepull/image:v1");
	int code;
	char *err = cli_stderr(cfg, false, &code);
	static const char *const lines[] = {
		"agentsbx: pull fakepull/image:v1: Pulling from fakepull/image\n",
		"agentsbx: pull fakepull/image:v1: layer 56f0be66f5a3: Pull complete (1.0 MB)\n",
		"agentsbx: pull fakepull/image:v1: layer 2335174eaf5d: Pull complete (108 B)\n",
		"agentsbx: pull fakepull/image:v1: Digest: sha256:827ee9e1",
		"agentsbx: pull fakepull/image:v1: Status: Downloaded newer image for "
		"fakepull/image:v1\n",
	};
	const char *at = err;

	ck_assert_msg(code == 0, "exit %d: %s", code, err);
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
		ck_assert_msg((at = strstr(at, lines[i])) != NULL, "no [%s] in order in [%s]",
		              lines[i], err);
		at += strlen(lines[i]);
	}
	/* Exactly one line per layer, no bar, and no terminal control from the engine's words:
	 * the garbage status's escape is shown as '?'. */
	ck_assert_int_eq(count_of(err, "layer "), 2);
	ck_assert_ptr_nonnull(strstr(err, "pull fakepull/image:v1: Waiting ?[2J\n"));
	ck_assert_ptr_null(strchr(err, '\r'));
	ck_assert_ptr_null(strchr(err, '\033'));
	free(err);
	free(cfg);
}
END_TEST

START_TEST(test_cli_draws_a_bar_on_a_terminal)
{
	char *cfg = fake_config("fakepull/image:v1");
	int code;
	char *err = cli_stderr(cfg, true, &code);

	ck_assert_msg(code == 0, "exit %d: %s", code, err);
	ck_assert_msg(strstr(err, "\r\033[Kpulling fakepull/image:v1 [........................] "
	                          "0 B / 0 B, 0/1 layers"), "[%s]", err);
	ck_assert_msg(strstr(err, "[########################] 1.0 MB / 1.0 MB, 2/2 layers"), "[%s]",
	              err);
	/* The engine's words reach the terminal with their escape sequence defused. */
	ck_assert_ptr_nonnull(strstr(err, "Waiting ?[2J"));
	ck_assert_ptr_null(strstr(err, "\033[2J"));
	ck_assert_ptr_nonnull(strstr(err, "agentsbx: pull fakepull/image:v1: Status: Downloaded "
	                                  "newer image"));
	free(err);
	free(cfg);
}
END_TEST

/* ---- a detached container with a named user ------------------------------------------------ */

static char *named_config(const char *dir, const char *id)
{
	return bt_fmt("{\"backend\":\"docker\",\"workdir\":\"%s\",\"id\":\"%s\",\"docker\":"
	              "{\"image\":\"%s\",\"user\":\"nobody\",\"detached\":true}}", dir, id,
	              bt_docker_image());
}

/* A host process that opens the workspace, leaves a mark in the container's /tmp, reports
 * the container's hostname (its short id) and waits to be killed. */
static _Noreturn void open_and_wait(const char *cfg, int ready)
{
	sbx_workspace *w = NULL;
	char *out;

	if (sbx_workspace_open(cfg, &w) < 0)
		_exit(2);
	out = bt_shell_out(w, "echo alive > /tmp/mark && hostname");
	if (write(ready, out, strlen(out)) < 0)
		_exit(3);
	for (;;)
		pause();
}

START_TEST(test_detached_named_user_is_reattached)
{
	char *dir = bt_mkdtemp(), *cfg = named_config(dir, bt_tmp("named-%d", (int)getpid()));
	char first[64] = "", *out;
	sbx_workspace *w;
	int p[2];
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(p[0]);
		open_and_wait(cfg, p[1]);
	}
	close(p[1]);
	ck_assert_int_gt(read(p[0], first, sizeof first - 1), 0);
	close(p[0]);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	/* The same container (its hostname, its /tmp), its commands still as the named user. */
	ck_assert_int_eq(sbx_workspace_open(cfg, &w), 0);
	out = bt_shell_out(w, "hostname; cat /tmp/mark; id -un; id -u");
	ck_assert_str_eq(out, bt_tmp("%salive\nnobody\n65534\n", first));
	free(out);
	/* Another handle beside it attaches to the same server too. */
	sbx_workspace *second = NULL;
	ck_assert_int_eq(sbx_workspace_open(cfg, &second), 0);
	out = bt_shell_out(second, "hostname");
	ck_assert_str_eq(out, first);
	free(out);
	sbx_workspace_close(second);
	sbx_workspace_close(w);
	/* Detached: it stays after close; an ephemeral open replaces it, and that one goes. */
	ck_assert_int_gt(bt_count_sandbox_processes(dir), 0);
	free(cfg);
	cfg = bt_fmt("{\"backend\":\"docker\",\"workdir\":\"%s\",\"id\":\"named-%d\","
	             "\"docker\":{\"image\":\"%s\",\"user\":\"nobody\"}}", dir, (int)getpid(),
	             bt_docker_image());
	ck_assert_int_eq(sbx_workspace_open(cfg, &w), 0);
	out = bt_shell_out(w, "hostname");
	ck_assert_str_ne(out, first);
	free(out);
	sbx_workspace_close(w);
	ck_assert_int_eq(bt_wait_for_sandbox_gone(dir), 0);
	free(cfg);
}
END_TEST

static Suite *pull_suite(void)
{
	Suite *s = suite_create("docker-pull");
	TCase *reg = tcase_create("registry"), *fake = tcase_create("fake-engine");

	tcase_add_checked_fixture(reg, registry_setup, registry_teardown);
	tcase_set_timeout(reg, 300);
	tcase_add_test(reg, test_pull_reports_progress_per_layer);
	tcase_add_test(reg, test_pull_of_unknown_image_says_what_the_registry_said);
	tcase_add_test(reg, test_pull_failing_mid_stream_reports_the_error);
	suite_add_tcase(s, reg);

	tcase_add_checked_fixture(fake, fake_setup, fake_teardown);
	tcase_add_test(fake, test_recorded_stream_with_garbage_gives_exactly_its_events);
	tcase_add_test(fake, test_error_line_of_fake_engine_fails_the_open);
	tcase_add_test(fake, test_cli_prints_a_line_per_layer_without_a_terminal);
	tcase_add_test(fake, test_cli_draws_a_bar_on_a_terminal);
	suite_add_tcase(s, fake);

	TCase *named = tcase_create("named-user");
	tcase_add_test(named, test_detached_named_user_is_reattached);
	suite_add_tcase(s, named);
	return s;
}

int main(void)
{
	return bt_main(pull_suite);
}
