/* Docker workspaces whose /workspace is a named volume ("docker": {"volume": ...}), against a
 * real engine: the files go through the Engine's archive API, so these tests try to leave
 * the workspace through it and check what the engine keeps:
 *
 *  - links planted inside that point out (to /etc, to /, through a directory) are refused
 *    for every file op, the ones that stay inside are followed; "..", absolute paths and NUL
 *    are refused before the engine is asked;
 *  - a read larger than the cap fails before anything is transferred;
 *  - a write that fails (a full volume) leaves the old file and no temporary one;
 *  - a detached volume workspace survives a SIGKILL of its host process, and a new process
 *    finds its files; an ephemeral one's volume goes at close; a named volume is the user's
 *    and stays;
 *  - commands and files work through the Engine's exec API too;
 *  - bad "volume" options name the key.
 * The conformance and tools suites run on volume workspaces too (tests/meson.build). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "backend_support.h"
#include "support.h"

/* A volume workspace ("volume": volume, JSON) with more docker options, and an id (NULL:
 * a random one, a temporary workspace). */
static sbx_workspace *open_volume_id(const char *volume, const char *more, const char *id)
{
	char *extra = bt_fmt("%s%s%s\"docker\":{\"image\":\"%s\",\"volume\":%s%s%s}",
	                     id ? "\"id\":\"" : "", id ? id : "", id ? "\"," : "",
	                     bt_docker_image(), volume, more ? "," : "", more ? more : "");
	sbx_workspace *w = bt_open_ok(NULL, extra);

	free(extra);
	return w;
}

static sbx_workspace *open_volume(const char *volume, const char *more)
{
	return open_volume_id(volume, more, NULL);
}

/* Whether the engine knows a volume of that name (through the CLI, which the test set-up
 * installs with the engine). */
static bool volume_exists(const char *name)
{
	return system(bt_tmp("docker volume inspect '%s' >/dev/null 2>&1", name)) == 0;
}

/* How many containers carry the workspace label id. */
static int containers_of(const char *id)
{
	FILE *f = popen(bt_tmp("docker ps -aq --filter label=io.agentsbx.workspace=%s", id), "r");
	int n = 0, c;

	ck_assert_ptr_nonnull(f);
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	ck_assert_int_eq(pclose(f), 0);
	return n;
}

/* Closes an ephemeral workspace of its own volume: neither the volume nor a container of
 * the id is left. */
static void close_leaves_nothing(sbx_workspace *w, const char *id, const char *volume)
{
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	ck_assert(!volume_exists(volume));
	ck_assert_int_eq(containers_of(id), 0);
}

static void expect_read(sbx_workspace *w, const char *rel, int code)
{
	char *data = NULL;
	size_t len = 0;
	int r = sbx_file_read(w, rel, &data, &len);

	ck_assert_msg(r == code, "read %s: got %d (%s), want %d", rel, r, sbx_last_error(), code);
	sbx_free(data);
}

/* ---- the ways out ------------------------------------------------------------------------ */

START_TEST(test_links_out_are_refused_for_every_op)
{
	sbx_workspace *w = open_volume("true", NULL);
	sbx_stat st = { .size = sizeof st };
	char *json = NULL, *data = NULL, *out;
	size_t len;

	free(bt_shell_out(w, "ln -s /etc etc && ln -s /etc/passwd pw && ln -s ../../.. up && "
	                     "mkdir d && ln -s /etc d/link && echo secret > real && "
	                     "ln -s /workspace/real abs && ln -s real rel && ln -s d dirlink"));
	expect_read(w, "etc/passwd", -SBX_EESCAPE);
	expect_read(w, "pw", -SBX_EESCAPE);
	expect_read(w, "up/etc/passwd", -SBX_EESCAPE);
	expect_read(w, "d/link/passwd", -SBX_EESCAPE);
	expect_read(w, "dirlink/link/passwd", -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_stat(w, "etc/passwd", &st), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_list(w, "etc", &json), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_list(w, "d/link", &json), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_write(w, "etc/agentsbx-x", "x", 1, 0, 0), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_write(w, "up/tmp/agentsbx-x", "x", 1, 0, SBX_WRITE_MKDIRS),
	                 -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_mkdir(w, "d/link/agentsbx-d", 0), -SBX_EESCAPE);
	ck_assert_int_eq(sbx_file_remove(w, "etc/passwd", 0), -SBX_EESCAPE);
	/* Before the engine is asked at all. */
	expect_read(w, "../etc/passwd", -SBX_EESCAPE);
	expect_read(w, "/etc/passwd", -SBX_EESCAPE);
	/* Links that stay inside are followed, absolute ones included (the container's view). */
	ck_assert_int_eq(sbx_file_read(w, "abs", &data, &len), 0);
	ck_assert_str_eq(data, "secret\n");
	sbx_free(data);
	ck_assert_int_eq(sbx_file_read(w, "rel", &data, &len), 0);
	ck_assert_str_eq(data, "secret\n");
	sbx_free(data);
	/* A stat or a list describes the link, and a remove removes it, never its target. */
	ck_assert_int_eq(sbx_file_stat(w, "etc", &st), 0);
	ck_assert_int_eq(st.type, SBX_FILE_SYMLINK);
	ck_assert_int_eq(sbx_file_list(w, "d", &json), 0);
	ck_assert_ptr_nonnull(strstr(json, "{\"name\":\"link\",\"type\":\"symlink\",\"size\":4,"));
	sbx_free(json);
	ck_assert_int_eq(sbx_file_remove(w, "pw", 0), 0);
	ck_assert_int_eq(sbx_file_write(w, "etc", "now a file", 10, 0, 0), 0);
	out = bt_shell_out(w, "test -L pw || echo gone; test -L etc || cat etc; test -f /etc/passwd "
	                      "&& echo intact");
	ck_assert_str_eq(out, "gone\nnow a fileintact\n");
	free(out);
	sbx_workspace_close(w);
}
END_TEST

/* The tools reach the files the same way: a model's path through a link out is an error. */
START_TEST(test_tools_refuse_links_out_and_nul)
{
	sbx_workspace *w = open_volume("true", NULL);
	char *res = NULL;

	free(bt_shell_out(w, "ln -s /etc etc"));
	ck_assert_int_eq(sbx_tool_call(w, "Read", "{\"file_path\":\"/workspace/etc/passwd\"}",
	                               &res), 0);
	ck_assert_msg(strncmp(res, "{\"ok\":false", 11) == 0, "%s", res);
	ck_assert_ptr_null(strstr(res, "root:x:0:0"));
	sbx_free(res);
	ck_assert_int_eq(sbx_tool_call(w, "Write", "{\"file_path\":\"/workspace/a\\u0000b\","
	                               "\"content\":\"x\"}", &res), 0);
	ck_assert_msg(strncmp(res, "{\"ok\":false", 11) == 0, "%s", res);
	sbx_free(res);
	sbx_workspace_close(w);
}
END_TEST

START_TEST(test_huge_read_is_refused_before_transfer)
{
	sbx_workspace *w = open_volume("true", NULL);
	int64_t start;

	free(bt_shell_out(w, "dd if=/dev/zero of=big bs=1 count=0 seek=2147483648 2>/dev/null"));
	start = bt_now_ms();
	expect_read(w, "big", -SBX_EFBIG);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "2147483648 bytes"));
	ck_assert_int_lt(bt_now_ms() - start, 5000);
	sbx_workspace_close(w);
}
END_TEST

/* A volume of 1 MiB (a tmpfs, the workspace user's): a write that does not fit fails, and the
 * old file is what was there, with no temporary file left beside it. */
START_TEST(test_failed_write_keeps_the_old_file)
{
	const char *name = bt_tmp("agentsbx-test-full-%d", (int)getpid());
	unsigned uid = geteuid() == 0 ? BT_DOCKER_UID : (unsigned)getuid();
	unsigned gid = geteuid() == 0 ? BT_DOCKER_UID : (unsigned)getgid();
	size_t small = 100 << 10, big = 2 << 20;
	char *old = malloc(small), *new = malloc(big), *data = NULL, *out;
	sbx_workspace *w;
	size_t len;
	int r;

	ck_assert_int_eq(system(bt_tmp("docker volume create --driver local --opt type=tmpfs "
	                               "--opt device=tmpfs --opt o=size=1m,uid=%u,gid=%u "
	                               "--label io.agentsbx.backend=docker '%s' >/dev/null",
	                               uid, gid, name)), 0);
	w = open_volume(bt_tmp("\"%s\"", name), NULL);
	memset(old, 'o', small);
	memset(new, 'n', big);
	ck_assert_int_eq(sbx_file_write(w, "f", old, small, 0, 0), 0);
	r = sbx_file_write(w, "f", new, big, 0, 0);
	ck_assert_msg(r < 0, "a 2 MiB write into a 1 MiB volume succeeded");
	ck_assert_int_eq(sbx_file_read(w, "f", &data, &len), 0);
	ck_assert_uint_eq(len, small);
	ck_assert(memcmp(data, old, small) == 0);
	sbx_free(data);
	out = bt_shell_out(w, "ls -A");
	ck_assert_str_eq(out, "f\n");
	free(out);
	sbx_workspace_close(w);
	ck_assert_int_eq(system(bt_tmp("docker volume rm '%s' >/dev/null", name)), 0);
	free(old);
	free(new);
}
END_TEST

/* ---- lifecycle --------------------------------------------------------------------------- */

static void child_writes_and_waits(const char *id, int ready)
{
	sbx_workspace *w = open_volume_id("true", "\"detached\":true", id);
	char *out;

	bt_put(w, "from-api.txt", "api\n", 0);
	out = bt_shell_out(w, "echo cmd > from-cmd.txt && echo ok");
	if (write(ready, out, strlen(out)) < 0)
		_exit(3);
	for (;;)
		pause();
}

START_TEST(test_detached_volume_survives_sigkill_and_keeps_files)
{
	const char *id = bt_tmp("vol-reattach-%d", (int)getpid());
	char *volume = bt_fmt("agentsbx-%s", id), *data = NULL, *out, buf[8] = "";
	sbx_workspace *w;
	int p[2];
	size_t len;
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(p[0]);
		child_writes_and_waits(id, p[1]);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], buf, sizeof buf - 1), 3);
	close(p[0]);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	ck_assert(volume_exists(volume));

	w = open_volume_id("true", "\"detached\":true", id);
	ck_assert_int_eq(sbx_file_read(w, "from-api.txt", &data, &len), 0);
	ck_assert_str_eq(data, "api\n");
	sbx_free(data);
	out = bt_shell_out(w, "cat from-cmd.txt");
	ck_assert_str_eq(out, "cmd\n");
	free(out);
	sbx_workspace_close(w);
	ck_assert(volume_exists(volume));
	ck_assert_int_eq(containers_of(id), 1);

	/* Opened ephemeral, the same id replaces the container and keeps the volume (its own),
	 * and its close removes both. */
	w = open_volume_id("true", NULL, id);
	out = bt_shell_out(w, "cat from-cmd.txt");
	ck_assert_str_eq(out, "cmd\n");
	free(out);
	close_leaves_nothing(w, id, volume);
	free(volume);
}
END_TEST

START_TEST(test_ephemeral_close_removes_its_volume)
{
	const char *id = bt_tmp("vol-close-%d", (int)getpid());
	char *volume = bt_fmt("agentsbx-%s", id);
	sbx_workspace *w = open_volume_id("true", NULL, id);

	bt_put(w, "f", "x", 0);
	ck_assert(volume_exists(volume));
	ck_assert_int_eq(containers_of(id), 1);
	close_leaves_nothing(w, id, volume);
	free(volume);
}
END_TEST

/* A volume the user names is theirs: made when missing, kept at close, found again. */
START_TEST(test_named_volume_stays)
{
	const char *name = bt_tmp("agentsbx-test-named-%d", (int)getpid());
	char *quoted = bt_fmt("\"%s\"", name), *data = NULL;
	sbx_workspace *w = open_volume(quoted, NULL);
	size_t len;

	bt_put(w, "kept.txt", "kept", 0);
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	ck_assert(volume_exists(name));
	w = open_volume(quoted, NULL);
	ck_assert_int_eq(sbx_file_read(w, "kept.txt", &data, &len), 0);
	ck_assert_str_eq(data, "kept");
	sbx_free(data);
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	ck_assert_int_eq(system(bt_tmp("docker volume rm '%s' >/dev/null", name)), 0);
	free(quoted);
}
END_TEST

/* A reset of a temporary workspace (no id) empties its volume; with an id the files stay. */
START_TEST(test_reset_empties_only_a_temporary_volume)
{
	sbx_workspace *w = open_volume("true", NULL);
	sbx_stat st = { .size = sizeof st };

	bt_put(w, "f", "x", 0);
	ck_assert_int_eq(sbx_workspace_reset(w), 0);
	ck_assert_int_eq(sbx_file_stat(w, "f", &st), -SBX_ENOENT);
	bt_put(w, "g", "y", 0);
	free(bt_shell_out(w, "test -f g"));
	sbx_workspace_close(w);

	w = open_volume_id("true", NULL, bt_tmp("vol-reset-%d", (int)getpid()));
	bt_put(w, "f", "x", 0);
	ck_assert_int_eq(sbx_workspace_reset(w), 0);
	ck_assert_int_eq(sbx_file_stat(w, "f", &st), 0);
	sbx_workspace_close(w);
}
END_TEST

/* Through the Engine's exec API instead of the exec server (the host's pipes passed to the
 * runner, and the hijacked exec stream): commands, and the file ops' own commands (rename,
 * remove). */
START_TEST(test_volume_with_the_exec_api)
{
	static const char *const modes[] = { "\"exec\":\"api\"",
	                                     "\"exec\":\"api\",\"stdio\":\"stream\"" };
	sbx_workspace *w = open_volume("true", modes[_i]);
	char *data = NULL, *out;
	size_t len;

	bt_put(w, "a/b.txt", "one", 0);
	ck_assert_int_eq(sbx_file_write(w, "a/b.txt", "two", 3, 0, 0), 0);
	ck_assert_int_eq(sbx_file_read(w, "a/b.txt", &data, &len), 0);
	ck_assert_str_eq(data, "two");
	sbx_free(data);
	out = bt_shell_out(w, "cat a/b.txt; id -u");
	ck_assert_str_eq(out, geteuid() == 0 ? "two65534\n" : bt_tmp("two%u\n", (unsigned)getuid()));
	free(out);
	ck_assert_int_eq(sbx_file_remove(w, "a", SBX_REMOVE_RECURSIVE), 0);
	out = bt_shell_out(w, "test -e a || echo gone");
	ck_assert_str_eq(out, "gone\n");
	free(out);
	sbx_workspace_close(w);
}
END_TEST

/* ---- options ----------------------------------------------------------------------------- */

static void expect_config_error(const char *extra, const char *key)
{
	sbx_workspace *w = NULL;
	int r = bt_open(NULL, extra, &w);

	ck_assert_msg(r == -SBX_ECONFIG, "%s: got %d (%s)", extra, r, sbx_last_error());
	ck_assert_msg(strstr(sbx_last_error(), key), "%s: message '%s' does not name %s", extra,
	              sbx_last_error(), key);
}

START_TEST(test_bad_volume_options_name_the_key)
{
	const char *img = bt_docker_image();

	expect_config_error(bt_tmp("\"docker\":{\"image\":\"%s\",\"volume\":5}", img),
	                    "'docker.volume'");
	expect_config_error(bt_tmp("\"docker\":{\"image\":\"%s\",\"volume\":\"../x\"}", img),
	                    "'docker.volume'");
	expect_config_error(bt_tmp("\"docker\":{\"image\":\"%s\",\"volume\":\"a/b\"}", img),
	                    "'docker.volume'");
	expect_config_error(bt_tmp("\"docker\":{\"image\":\"%s\",\"volume\":true,"
	                           "\"user\":\"nobody\"}", img), "'docker.user'");
	expect_config_error(bt_tmp("\"workdir\":\"%s\",\"docker\":{\"image\":\"%s\","
	                           "\"volume\":true}", bt_mkdtemp(), img), "'workdir'");
	/* The library's own state lives in the volume: a read-only one would refuse it. */
	expect_config_error(bt_tmp("\"mode\":\"read-only\",\"docker\":{\"image\":\"%s\","
	                           "\"volume\":true}", img), "'mode'");
}
END_TEST

static Suite *volume_suite(void)
{
	Suite *s = suite_create("docker-volume");
	TCase *out = tcase_create("ways-out"), *life = tcase_create("lifecycle"),
	      *opts = tcase_create("options");

	tcase_set_timeout(out, 300);
	tcase_set_timeout(life, 300);
	tcase_add_test(out, test_links_out_are_refused_for_every_op);
	tcase_add_test(out, test_tools_refuse_links_out_and_nul);
	tcase_add_test(out, test_huge_read_is_refused_before_transfer);
	tcase_add_test(out, test_failed_write_keeps_the_old_file);
	tcase_add_test(life, test_detached_volume_survives_sigkill_and_keeps_files);
	tcase_add_test(life, test_ephemeral_close_removes_its_volume);
	tcase_add_test(life, test_named_volume_stays);
	tcase_add_test(life, test_reset_empties_only_a_temporary_volume);
	tcase_add_loop_test(life, test_volume_with_the_exec_api, 0, 2);
	tcase_add_test(opts, test_bad_volume_options_name_the_key);
	suite_add_tcase(s, out);
	suite_add_tcase(s, life);
	suite_add_tcase(s, opts);
	return s;
}

int main(void)
{
	return bt_main(volume_suite);
}
