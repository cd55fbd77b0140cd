/* Disk caps of the sandbox backends: limits.disk_bytes (a temporary workspace that is a
 * size-capped tmpfs of the sandbox's own) and limits.tmp_bytes (/tmp and /dev/shm). A process
 * inside writes past each cap and must get ENOSPC; what it wrote before stays readable
 * through the file API; the library's own writers (the file primitives, the Write tool) meet
 * the same cap and leave nothing half-written; what cannot be capped is refused, naming the
 * key. Runs on ns and bwrap, as root and as an ordinary user (tests/run-all.sh). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "backend_support.h"
#include "support.h"

#define MIB (1024 * 1024)
#define DISK_CAP (2 * MIB)
#define CAPPED "\"limits\":{\"disk_bytes\":2097152}"

static sbx_workspace *open_capped(const char *extra)
{
	return bt_open_ok(NULL, extra ? extra : CAPPED);
}

/* The exit code of cmd, its stderr copied to err (may be NULL). */
static int run(sbx_workspace *ws, const char *cmd, char *err, size_t errlen)
{
	sbx_result *res = bt_shell(ws, cmd, NULL);
	int code = sbx_result_exit_code(res);

	if (err)
		snprintf(err, errlen, "%s", sbx_result_stderr(res, NULL));
	sbx_result_free(res);
	return code;
}

static long df_kib(sbx_workspace *ws, const char *dir)
{
	char *out = bt_shell_out(ws, bt_tmp("df -k %s | tail -n 1 | awk '{print $2}'", dir));
	long kib = atol(out);

	free(out);
	return kib;
}

static void assert_file_is(sbx_workspace *ws, const char *rel, const char *want)
{
	char *data = NULL;
	size_t len = 0;
	int r = sbx_file_read(ws, rel, &data, &len);

	ck_assert_msg(r == 0, "read %s: %d %s", rel, r, sbx_last_error());
	ck_assert_uint_eq(len, strlen(want));
	ck_assert(memcmp(data, want, len) == 0);
	sbx_free(data);
}

static void assert_absent(sbx_workspace *ws, const char *rel)
{
	sbx_stat st = { .size = sizeof st };
	int r = sbx_file_stat(ws, rel, &st);

	ck_assert_msg(r == -SBX_ENOENT, "%s exists (%d): a write past the cap left it", rel, r);
}

/* Names in the workspace root other than the state folder and the protection's
 * placeholders: no temporary file of an atomic write may stay behind. */
static void assert_root_holds_only(sbx_workspace *ws, const char *names)
{
	char *out = bt_shell_out(ws, "ls -A /workspace | grep -v -e '^\\.agentsbx$' -e '^\\.bash' "
	                             "-e '^\\.profile$' -e '^\\.zshrc$' -e '^\\.mcp\\.json$' "
	                             "| tr '\\n' ' '");

	ck_assert_msg(!strcmp(out, names), "the workspace holds \"%s\", not \"%s\"", out, names);
	free(out);
}

START_TEST(test_writes_past_the_disk_cap_fail)
{
	sbx_workspace *ws = open_capped(NULL);
	char err[4096];
	int code;

	ck_assert_int_eq(run(ws, "printf 'before the flood' > kept", NULL, 0), 0);
	/* One big file. */
	code = run(ws, "dd if=/dev/zero of=big bs=64k count=100", err, sizeof err);
	ck_assert_msg(code != 0 && strstr(err, "No space left on device"),
	              "a 6.4 MB file in a 2 MiB workspace: exit %d, %s", code, err);
	ck_assert_int_le(df_kib(ws, "/workspace"), DISK_CAP / 1024);
	ck_assert_int_eq(run(ws, "rm big", NULL, 0), 0);
	/* Many files of 64 KiB. */
	code = run(ws, "mkdir many && i=0; while [ $i -lt 100 ]; do "
	               "head -c 65536 /dev/zero > many/$i || exit 7; i=$((i+1)); done", err,
	           sizeof err);
	ck_assert_msg(code == 7 && strstr(err, "No space left on device"),
	              "100 files of 64 KiB: exit %d, %s", code, err);
	/* What came before is intact, on the host's side too. */
	assert_file_is(ws, "kept", "before the flood");
	/* Freed space is usable again. */
	ck_assert_int_eq(run(ws, "rm -r many && head -c 1048576 /dev/zero > again", NULL, 0), 0);
	sbx_workspace_close(ws);
}
END_TEST

START_TEST(test_many_small_files_meet_the_inode_cap)
{
	/* 1 MiB: 1024 inodes at least (helpers/init/quota.h), far below what 1 MiB of empty
	 * files would take without an inode cap. */
	sbx_workspace *ws = open_capped("\"limits\":{\"disk_bytes\":1048576}");
	char err[4096];
	int code = run(ws, "mkdir f && i=0; while [ $i -lt 5000 ]; do touch f/$i || exit 7; "
	                   "i=$((i+1)); done", err, sizeof err);
	char *made;

	ck_assert_msg(code == 7 && strstr(err, "No space left on device"),
	              "5000 empty files: exit %d, %s", code, err);
	made = bt_shell_out(ws, "ls f | wc -l");
	ck_assert_int_lt(atoi(made), 1100);
	ck_assert_int_gt(atoi(made), 900);
	free(made);
	sbx_workspace_close(ws);
}
END_TEST

START_TEST(test_file_api_meets_the_same_cap)
{
	sbx_workspace *ws = open_capped(NULL);
	size_t big_len = 3 * MIB;
	char *big = malloc(big_len);
	int r;

	memset(big, 'x', big_len);
	bt_put(ws, "small.txt", "from the host\n", 0);
	ck_assert_int_eq(run(ws, "grep -q 'from the host' small.txt", NULL, 0), 0);
	r = sbx_file_write(ws, "big.bin", big, big_len, 0, 0);
	ck_assert_msg(r == -SBX_ENOSPC, "a 3 MiB write into 2 MiB: %d %s", r, sbx_last_error());
	assert_absent(ws, "big.bin");
	assert_root_holds_only(ws, "small.txt ");
	/* The sandbox's writes and the host's share one cap. */
	ck_assert_int_eq(run(ws, "head -c 1500000 /dev/zero > inside.bin", NULL, 0), 0);
	r = sbx_file_write(ws, "more.bin", big, MIB, 0, 0);
	ck_assert_msg(r == -SBX_ENOSPC, "1 MiB on top of 1.5 MB: %d %s", r, sbx_last_error());
	assert_absent(ws, "more.bin");
	/* Overwriting a file that exists keeps it whole when the new content does not fit. */
	r = sbx_file_write(ws, "small.txt", big, MIB, 0, 0);
	ck_assert_int_eq(r, -SBX_ENOSPC);
	assert_file_is(ws, "small.txt", "from the host\n");
	free(big);
	sbx_workspace_close(ws);
}
END_TEST

START_TEST(test_write_tool_meets_the_same_cap)
{
	sbx_workspace *ws = open_capped(NULL);
	size_t n = 3 * MIB;
	char *content = malloc(n + 1), *args, *result = NULL;
	int r;

	memset(content, 'y', n);
	content[n] = '\0';
	args = bt_fmt("{\"file_path\":\"/workspace/huge.txt\",\"content\":\"%s\"}", content);
	r = sbx_tool_call(ws, "Write", args, &result);
	ck_assert_msg(r == 0, "Write: %d %s", r, sbx_last_error());
	ck_assert_msg(strstr(result, "\"ok\":false"), "a 3 MiB Write into 2 MiB: %.300s", result);
	assert_absent(ws, "huge.txt");
	assert_root_holds_only(ws, "");
	sbx_free(result);
	free(args);
	/* A Write that fits works, and the sandbox sees it. */
	r = sbx_tool_call(ws, "Write", "{\"file_path\":\"/workspace/fits.txt\",\"content\":\"ok\\n\"}",
	                  &result);
	ck_assert_int_eq(r, 0);
	ck_assert_msg(strstr(result, "\"ok\":true"), "%s", result);
	sbx_free(result);
	ck_assert_int_eq(run(ws, "grep -qx ok fits.txt", NULL, 0), 0);
	free(content);
	sbx_workspace_close(ws);
}
END_TEST

START_TEST(test_tmp_and_shm_are_capped)
{
	sbx_workspace *ws = bt_open_ok(NULL, "\"limits\":{\"tmp_bytes\":2097152}");
	char err[4096];
	int code;

	for (int i = 0; i < 2; i++) {
		const char *dir = i ? "/dev/shm" : "/tmp";

		ck_assert_int_eq(df_kib(ws, dir), 2048);
		code = run(ws, bt_tmp("dd if=/dev/zero of=%s/fill bs=64k count=100", dir), err,
		           sizeof err);
		ck_assert_msg(code != 0 && strstr(err, "No space left on device"),
		              "6.4 MB into a 2 MiB %s: exit %d, %s", dir, code, err);
	}
	sbx_workspace_close(ws);
	/* Without the key: the default cap, 1 GiB, not half the host's memory -- except under
	 * bubblewrap, which then keeps its --disable-userns and its own /tmp (README). */
	if (strcmp(bt_backend(), "bwrap") != 0) {
		ws = bt_open_ok(NULL, NULL);
		ck_assert_int_eq(df_kib(ws, "/tmp"), 1024 * 1024);
		ck_assert_int_eq(df_kib(ws, "/dev/shm"), 1024 * 1024);
		sbx_workspace_close(ws);
	}
}
END_TEST

START_TEST(test_host_workdir_cannot_be_capped)
{
	const char *dir = bt_mkdtemp();
	sbx_workspace *ws = NULL;
	int r;

	r = bt_open(dir, CAPPED, &ws);
	ck_assert_int_eq(r, -SBX_ECONFIG);
	ck_assert_ptr_null(ws);
	ck_assert_msg(strstr(sbx_last_error(), "limits.disk_bytes") &&
	              strstr(sbx_last_error(), "temporary workspaces"), "%s", sbx_last_error());
	/* Nothing was started, and the directory keeps nothing of the attempt but the state
	 * folder the core makes before any backend runs. */
	ck_assert_int_eq(bt_count_sandbox_processes(dir), 0);
}
END_TEST

START_TEST(test_settings_a_capped_workspace_cannot_have)
{
	static const struct { const char *extra, *key; } cases[] = {
		{ CAPPED ",\"baseline\":\"keep\"", "'baseline'" },
		{ CAPPED ",\"mode\":\"read-only\"", "'limits.disk_bytes'" },
		{ CAPPED ",\"mcp\":{\"transport\":\"socket\"}", "'mcp.transport'" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		sbx_workspace *ws = NULL;
		int r = bt_open(NULL, cases[i].extra, &ws);

		ck_assert_msg(r == -SBX_ECONFIG && strstr(sbx_last_error(), cases[i].key),
		              "%s: %d %s", cases[i].extra, r, sbx_last_error());
		ck_assert_ptr_null(ws);
	}
}
END_TEST

/* A copy of the host file at path (caller frees), its length in *len. */
static char *host_file(const char *path, size_t *len)
{
	const char *text = path ? test_slurp(path) : NULL;

	*len = text ? strlen(text) : 0;
	return text ? strdup(text) : NULL;
}

START_TEST(test_reset_gives_a_fresh_capped_workspace)
{
	sbx_workspace *ws = open_capped(NULL);
	char *audit_before = NULL, *audit_after = NULL;
	size_t before_len = 0, after_len = 0;
	int r;

	ck_assert_int_eq(run(ws, "head -c 1500000 /dev/zero > old.bin", NULL, 0), 0);
	/* The state folder is the host's, outside the workspace. */
	ck_assert_ptr_nonnull((audit_before = host_file(sbx_audit_path(ws), &before_len)));
	r = sbx_workspace_reset(ws);
	ck_assert_msg(r == 0, "reset: %d %s", r, sbx_last_error());
	/* The files are gone (baseline "empty"), the state folder is not. */
	assert_absent(ws, "old.bin");
	ck_assert_ptr_nonnull((audit_after = host_file(sbx_audit_path(ws), &after_len)));
	ck_assert_uint_ge(after_len, before_len);
	/* The new file system is capped as the old one was, for the host and the sandbox. */
	ck_assert_int_le(df_kib(ws, "/workspace"), DISK_CAP / 1024);
	bt_put(ws, "after.txt", "after the reset\n", 0);
	ck_assert_int_eq(run(ws, "grep -q 'after the reset' after.txt", NULL, 0), 0);
	ck_assert_int_ne(run(ws, "dd if=/dev/zero of=big bs=64k count=100", NULL, 0), 0);
	sbx_free(audit_before);
	sbx_free(audit_after);
	sbx_workspace_close(ws);
}
END_TEST

START_TEST(test_capped_workspaces_stay_apart)
{
	/* Opened one after another, the second and third may come from a pre-started spare:
	 * each must get a file system of its own, and a workspace of another shape no spare of
	 * this one. */
	sbx_workspace *a = open_capped(NULL), *b = open_capped(NULL), *c;

	ck_assert_int_eq(run(a, "echo a > mine", NULL, 0), 0);
	ck_assert_int_ne(run(b, "test -e mine", NULL, 0), 0);
	ck_assert_int_le(df_kib(b, "/workspace"), DISK_CAP / 1024);
	sbx_workspace_close(a);
	sbx_workspace_close(b);
	c = bt_open_ok(NULL, NULL);
	ck_assert_int_gt(df_kib(c, "/workspace"), DISK_CAP / 1024);
	sbx_workspace_close(c);
	a = open_capped(NULL);
	ck_assert_int_le(df_kib(a, "/workspace"), DISK_CAP / 1024);
	sbx_workspace_close(a);
}
END_TEST

START_TEST(test_no_way_past_the_cap_to_the_host_disk)
{
	sbx_workspace *ws = open_capped(NULL);

	/* The host's state folder is bound in read-only; MCP's run folder, a writable folder on
	 * the host disk in an uncapped workspace, is not there at all. */
	ck_assert_int_ne(run(ws, "echo x > /workspace/.agentsbx/fill", NULL, 0), 0);
	ck_assert_int_ne(run(ws, "test -e /tmp/.agentsbx-mcp", NULL, 0), 0);
	/* The host directory under the tmpfs is out of reach (the cwd is the tmpfs). */
	ck_assert_int_eq(run(ws, "test \"$(stat -f -c %T /workspace)\" = tmpfs && "
	                         "test \"$(stat -f -c %T .)\" = tmpfs", NULL, 0), 0);
	ck_assert_int_ne(run(ws, "umount /workspace", NULL, 0), 0);
	sbx_workspace_close(ws);
	/* Also when the configured protected paths leave the state folder out. */
	ws = bt_open_ok(NULL, bt_tmp(CAPPED ",\"%s\":{\"protected_paths\":[\".git/hooks/\"]}",
	                             bt_backend()));
	ck_assert_int_ne(run(ws, "echo x > /workspace/.agentsbx/fill", NULL, 0), 0);
	ck_assert_int_eq(run(ws, "echo x > /workspace/.bashrc", NULL, 0), 0);
	sbx_workspace_close(ws);
}
END_TEST

/* HOME is no way past the cap either: the private HOME, a host folder, is not bound in; HOME
 * is in the capped /tmp, and a write past that cap there fails too. */
START_TEST(test_home_is_inside_a_cap)
{
	sbx_workspace *ws = open_capped("\"limits\":{\"disk_bytes\":2097152,"
	                                "\"tmp_bytes\":2097152}");
	char err[4096];
	int code;

	code = run(ws, "cd && head -c 8388608 /dev/zero > big", err, sizeof err);
	ck_assert_msg(code != 0 && strstr(err, "No space left on device"),
	              "8 MiB into HOME of a capped workspace: exit %d, %s", code, err);
	ck_assert_int_eq(run(ws, "test \"$(stat -f -c %T \"$HOME\")\" = tmpfs", NULL, 0), 0);
	ck_assert_int_le(df_kib(ws, "\"$HOME\""), 2 * MIB / 1024);
	/* It is still a HOME: tools keep their settings in it. */
	ck_assert_int_eq(run(ws, "rm -f ~/big && git config --global user.name capped && "
	                         "test \"$(git config --global user.name)\" = capped", err,
	                     sizeof err), 0);
	sbx_workspace_close(ws);
}
END_TEST

/* MCP without its host run folder: the gateway speaks over its stream. The server is the
 * suite's counter (tests/mcp/counter-server.js), copied into the workspace. */
START_TEST(test_mcp_works_in_a_capped_workspace)
{
	const char *src = getenv("SBX_TEST_SOURCE_ROOT");
	char *script, *res = NULL;
	sbx_workspace *ws;
	int r;

	TEST_NEED(TEST_CAP_TOOLS, access("/usr/bin/node", X_OK) == 0,
	          "the MCP test server needs /usr/bin/node");
	ck_assert_ptr_nonnull(src);
	script = test_slurp(bt_tmp("%s/tests/mcp/counter-server.js", src));
	ck_assert_ptr_nonnull(script);
	ws = open_capped(NULL);
	bt_put(ws, "counter.js", script, 0);
	r = sbx_mcp_add(ws, NULL, NULL, "c", "{\"command\":\"node\",\"args\":[\"/workspace/counter.js\"]}");
	ck_assert_msg(r == 0, "mcp add: %d %s", r, sbx_last_error());
	for (int i = 1; i <= 2; i++) {
		r = sbx_mcp_call(ws, NULL, NULL, "c", "incr", "{}", &res);
		ck_assert_msg(r == 0, "mcp call: %d %s", r, sbx_last_error());
		ck_assert_msg(strstr(res, bt_tmp("\"text\":\"%d\"", i)), "%s", res);
		sbx_free(res);
	}
	sbx_workspace_close(ws);
}
END_TEST

static Suite *quota_suite(void)
{
	Suite *s = suite_create(bt_tmp("quota-%s", bt_backend()));
	TCase *tc = tcase_create("disk");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_writes_past_the_disk_cap_fail);
	tcase_add_test(tc, test_many_small_files_meet_the_inode_cap);
	tcase_add_test(tc, test_file_api_meets_the_same_cap);
	tcase_add_test(tc, test_write_tool_meets_the_same_cap);
	tcase_add_test(tc, test_tmp_and_shm_are_capped);
	tcase_add_test(tc, test_host_workdir_cannot_be_capped);
	tcase_add_test(tc, test_settings_a_capped_workspace_cannot_have);
	tcase_add_test(tc, test_reset_gives_a_fresh_capped_workspace);
	tcase_add_test(tc, test_capped_workspaces_stay_apart);
	tcase_add_test(tc, test_no_way_past_the_cap_to_the_host_disk);
	tcase_add_test(tc, test_home_is_inside_a_cap);
	tcase_add_test(tc, test_mcp_works_in_a_capped_workspace);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return bt_main(quota_suite);
}
