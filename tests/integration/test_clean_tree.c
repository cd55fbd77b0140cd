/* Nothing of the library's, nor of the tools' home, in the user's tree (issue 17, items 1 and
 * 7), with real git, npm and python3:
 *  - in a git repository, `git status --porcelain` inside is empty; the agent's
 *    `git add -A && git commit` commits only its own file, under the identity it set with
 *    `git config --global`; after close the host's `git status` shows only what it did, and
 *    the workdir holds no state folder, no placeholder, no dotfile of the tools;
 *  - `npm config set`, `git config --global` and a python history file land in the
 *    workspace's private HOME (in its state folder outside the workdir), which is the same
 *    after a close and reopen, /home/<user> inside a sandbox, as `id -un` and getent say;
 *  - a workdir with a .agentsbx from before 1.7 keeps its MCP declarations, its skills and
 *    its audit log, migrated into the new state folder;
 *  - while a sandbox runs, the placeholders of the missing protected files are sockets on
 *    the host (where its file system tells birth times), which the host's git neither
 *    shows nor adds;
 *  - in a repository that existed before the command, `git config user.name` still fails (the
 *    git guard keeps .git/config read-only) and the instructions say why and what works. */
#include <check.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "backend_support.h"
#include "support.h"

#define IDENTITY "Agent Smith <agent@example.invalid>"

static const char *home;   /* an empty HOME for the host's git: none of the user's config */

static bool sandboxed(void)
{
	return strcmp(bt_backend(), "local") != 0;
}

static void setup(void)
{
	home = bt_mkdtemp();
}

/* Runs a host shell command; returns its stdout (static buffer), failing unless it exits 0. */
static const char *host_out(const char *cmd)
{
	static char buf[8192];
	FILE *f = popen(cmd, "r");
	size_t n;
	int st;

	ck_assert_msg(f, "popen: %s", strerror(errno));
	n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	st = pclose(f);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "`%s` failed: %s", cmd, buf);
	return buf;
}

/* The host's git in dir, as a user with no config of their own runs it. */
static const char *host_git(const char *dir, const char *args)
{
	return host_out(bt_tmp("cd '%s' && HOME='%s' GIT_CONFIG_NOSYSTEM=1 git -c safe.directory='*' "
	                       "-c user.name=owner -c user.email=owner@example.invalid %s 2>&1",
	                       dir, home, args));
}

/* A repository with one tracked file, made on the host before the workspace opens. */
static char *make_repo(void)
{
	char *dir = bt_mkdtemp();

	test_put_file(dir, "README", "the user's project\n", 0644);
	host_git(dir, "init -q . && git add README && "
	              "git -c user.name=owner -c user.email=owner@example.invalid commit -qm init");
	return dir;
}

static const char *user_name(void)
{
	struct passwd *pw = getpwuid(geteuid());

	return pw ? pw->pw_name : "user";
}

/* Where the workspace's commands have their HOME. */
static const char *expected_home(const char *dir)
{
	if (sandboxed())
		return bt_tmp("/home/%s", user_name());
	return bt_tmp("%s/home", test_state_dir(dir));
}

static void assert_not_in_workdir(const char *dir, const char *rel)
{
	ck_assert_msg(!test_exists(test_path_at(dir, rel)), "%s is in the workdir", rel);
}

START_TEST(test_git_sees_only_the_agents_work)
{
	char *dir = make_repo(), *out;
	sbx_workspace *ws = bt_open_ok(dir, NULL);

	out = bt_shell_out(ws, "git status --porcelain --ignored=no");
	ck_assert_msg(!strcmp(out, ""), "git status inside shows: %s", out);
	free(out);
	out = bt_shell_out(ws, "git config --global user.name 'Agent Smith' && "
	                       "git config --global user.email agent@example.invalid && "
	                       "echo work > agent.txt && git add -A && git commit -qm 'agent work' && "
	                       "git show --name-only --format='%an <%ae>|%cn <%ce>' HEAD");
	ck_assert_str_eq(out, IDENTITY "|" IDENTITY "\n\nagent.txt\n");
	free(out);
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
	/* On the host: the agent's commit, nothing else changed, nothing else there. */
	ck_assert_str_eq(host_git(dir, "status --porcelain --ignored=no"), "");
	ck_assert_str_eq(host_git(dir, "log -1 --name-only --format=%an"), "Agent Smith\n\nagent.txt\n");
	ck_assert_str_eq(host_out(bt_tmp("ls -A '%s'", dir)), ".git\nREADME\nagent.txt\n");
}
END_TEST

/* The placeholders cost the host little and show nowhere: sockets, which git skips. Only the
 * library's own folder is there for the host's git while the sandbox runs. */
START_TEST(test_placeholders_are_sockets_git_skips)
{
	static const char *const files[] = { ".bashrc", ".bash_profile", ".profile", ".zshrc",
		                             ".mcp.json", NULL };
	char *dir = make_repo();
	sbx_workspace *ws = bt_open_ok(dir, NULL);
	struct statx stx;

	ck_assert_int_eq(statx(AT_FDCWD, dir, 0, STATX_BTIME, &stx), 0);
	for (size_t i = 0; files[i] && (stx.stx_mask & STATX_BTIME); i++) {
		struct stat st;
		ck_assert_int_eq(lstat(test_path_at(dir, files[i]), &st), 0);
		ck_assert_msg(S_ISSOCK(st.st_mode), "%s is no socket (mode %o)", files[i],
		              st.st_mode);
	}
	ck_assert_str_eq(host_git(dir, "status --porcelain --ignored=no"), "?? .agentsbx/\n");
	ck_assert_str_eq(host_git(dir, "add -A -n -- . ':!.agentsbx'"), "");
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
	ck_assert_str_eq(host_out(bt_tmp("ls -A '%s'", dir)), ".git\nREADME\n");
}
END_TEST

/* Item 7: the identity set with --global is the one the commit carries, and the global config
 * is the private HOME's, not the project's. */
START_TEST(test_identity_through_global_config)
{
	char *dir = make_repo(), *out;
	sbx_workspace *ws = bt_open_ok(dir, NULL);

	out = bt_shell_out(ws, "git config --global user.name 'Agent Smith' && "
	                       "git config --global user.email agent@example.invalid && "
	                       "git commit -q --allow-empty -m id && git log -1 --format='%an <%ae>' && "
	                       "git config --global --show-origin user.name | cut -f1");
	ck_assert_str_eq(out, bt_tmp(IDENTITY "\nfile:%s/.gitconfig\n", expected_home(dir)));
	free(out);
	/* The variables git documents work as well, per command. */
	const char *env[] = { "GIT_AUTHOR_NAME=Env Author", "GIT_AUTHOR_EMAIL=env@example.invalid",
	                      "GIT_COMMITTER_NAME=Env Committer",
	                      "GIT_COMMITTER_EMAIL=envc@example.invalid", NULL };
	const char *argv[] = { "sh", "-c", "git commit -q --allow-empty -m env && "
	                       "git log -1 --format='%an <%ae>|%cn <%ce>'", NULL };
	sbx_exec_opts o = { .size = sizeof o, .env = env };
	sbx_result *res = bt_argv(ws, argv, &o);
	ck_assert_msg(sbx_result_exit_code(res) == 0, "%s", sbx_result_stderr(res, NULL));
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "Env Author <env@example.invalid>|"
	                 "Env Committer <envc@example.invalid>\n");
	sbx_result_free(res);
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
	assert_not_in_workdir(dir, ".gitconfig");
	ck_assert_str_eq(host_git(dir, "status --porcelain --ignored=no"), "");
}
END_TEST

/* Item 7: the protected repository config still refuses `git config user.name`, and the model
 * is told why and what to do instead. */
START_TEST(test_local_identity_refused_with_reason)
{
	char *dir = make_repo(), *text = NULL;
	sbx_workspace *ws = bt_open_ok(dir, NULL);
	sbx_result *res = bt_shell(ws, "git config user.name X", NULL);

	ck_assert_int_ne(sbx_result_exit_code(res), 0);
	ck_assert_msg(strstr(sbx_result_stderr(res, NULL), "could not write config file"),
	              "%s", sbx_result_stderr(res, NULL));
	sbx_result_free(res);
	ck_assert_int_eq(sbx_workspace_instructions(ws, &text), 0);
	ck_assert_msg(strstr(text, "`git config user.name`/`user.email` fail there too") &&
	              strstr(text, "`git config --global`") && strstr(text, "GIT_AUTHOR_NAME") &&
	              strstr(text, "GIT_COMMITTER_EMAIL"), "%s", text);
	sbx_free(text);
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
	ck_assert_str_eq(host_git(dir, "config --local --get user.name || echo unset"), "unset\n");
}
END_TEST

START_TEST(test_tools_home_is_private_and_kept)
{
	char *dir = make_repo(), *out;
	const char *state_home = bt_tmp("%s/home", test_state_dir(dir));
	sbx_workspace *ws = bt_open_ok(dir, NULL);

	out = bt_shell_out(ws, "echo \"$HOME\"; npm config set init-author-name sbx-author && "
	                       "git config --global user.name X && "
	                       "python3 -c \"import os, readline; readline.add_history('print(1)'); "
	                       "readline.write_history_file(os.path.expanduser('~/.python_history'))\" "
	                       "&& mkdir -p ~/.cache/sbx && echo cached > ~/.cache/sbx/c && "
	                       "id -un && getent passwd \"$(id -u)\" | cut -d: -f1");
	if (sandboxed())
		ck_assert_str_eq(out, bt_tmp("/home/%s\n%s\n%s\n", user_name(), user_name(),
		                             user_name()));
	else
		ck_assert_str_eq(out, bt_tmp("%s\n%s\n%s\n", state_home, user_name(), user_name()));
	free(out);
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
	/* Not in the project... */
	static const char *const dotfiles[] = { ".npmrc", ".npm", ".gitconfig", ".python_history",
	                                        ".cache", ".config", NULL };
	for (const char *const *p = dotfiles; *p; p++)
		assert_not_in_workdir(dir, *p);
	ck_assert_str_eq(host_git(dir, "status --porcelain --ignored=no"), "");
	/* ... but in the private HOME, 0700 in the state folder. */
	ck_assert_msg(strstr(test_slurp(test_path_at(state_home, ".npmrc")),
	                     "init-author-name=sbx-author"),
	              "%s/.npmrc", state_home);
	ck_assert_msg(strstr(test_slurp(test_path_at(state_home, ".gitconfig")), "name = X"),
	              "%s/.gitconfig", state_home);
	ck_assert_msg(strstr(test_slurp(test_path_at(state_home, ".python_history")), "print(1)"),
	              "%s/.python_history", state_home);
	ck_assert_str_eq(host_out(bt_tmp("stat -c %%a '%s' '%s'", test_state_dir(dir), state_home)),
	                 "700\n700\n");
	/* The same HOME at the next open of the workdir. */
	ws = bt_open_ok(dir, NULL);
	out = bt_shell_out(ws, "npm config get init-author-name; git config --global user.name; "
	                       "cat ~/.cache/sbx/c");
	ck_assert_str_eq(out, "sbx-author\nX\ncached\n");
	free(out);
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
}
END_TEST

/* The one folder the core made for this workspace under TMPDIR with this prefix, or NULL. */
static char *temporary_folder(const char *prefix, const sbx_workspace *ws)
{
	const char *tmp = getenv("TMPDIR");
	const char *found = host_out(bt_tmp("ls -d '%s'/%s-%s-* 2>/dev/null || true",
	                                    tmp && tmp[0] == '/' ? tmp : "/tmp", prefix,
	                                    sbx_workspace_id(ws)));
	size_t n = strcspn(found, "\n");

	return n ? strndup(found, n) : NULL;
}

/* A temporary workdir is never reopened and goes whole at close: while its command runs it
 * holds no journal, no placeholder of the shell rc files or .mcp.json (in a sandbox only the
 * library's own folder, empty and guarded), and its HOME no git excludes file for the journal:
 * 14 host folders per one-shot run were 5 (issue 18). Nothing stays after close. */
START_TEST(test_temporary_workdir_holds_no_notes)
{
	sbx_workspace *ws = bt_open_ok(NULL, NULL);
	char *workdir = temporary_folder("agentsbx", ws);
	char *state = temporary_folder("agentsbx-state", ws);
	char *inside = bt_shell_out(ws, "ls -A; echo agent > agent.txt");
	char *forged = bt_shell_out(ws, "(touch .agentsbx/forged) 2>/dev/null && echo written; true");
	char *listing = NULL, *journal = NULL, *tools_home = NULL;

	if (workdir && state) {
		listing = strdup(host_out(bt_tmp("ls -A '%s'", workdir)));
		journal = strdup(host_out(bt_tmp("ls -A '%s/.agentsbx' 2>/dev/null || true", workdir)));
		tools_home = strdup(host_out(bt_tmp("ls -A '%s/home'", state)));
	}
	/* Closed before the checks: its temporary folders must not outlive a failure. */
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
	ck_assert_msg(workdir && state, "no temporary workdir or state folder");
	ck_assert_str_eq(inside, sandboxed() ? ".agentsbx\n" : "");
	ck_assert_str_eq(listing, sandboxed() ? ".agentsbx\nagent.txt\n" : "agent.txt\n");
	ck_assert_str_eq(journal, "");
	ck_assert_str_eq(forged, "");
	ck_assert_msg(!strstr(tools_home, ".config"), "the temporary HOME has %s", tools_home);
	ck_assert_msg(!test_exists(workdir) && !test_exists(state), "left after close: %s, %s",
	              workdir, state);
	free(inside);
	free(forged);
	free(listing);
	free(journal);
	free(tools_home);
	free(workdir);
	free(state);
}
END_TEST

/* A workspace from before 1.7: state in <workdir>/.agentsbx (made here by the old layout,
 * "state_dir": "workdir", with real records: an MCP declaration, a skill, the audit log).
 * The next open with the default layout migrates it and keeps all of it. */
START_TEST(test_legacy_state_folder_is_migrated)
{
	char *dir = make_repo(), *src = bt_mkdtemp(), *name = NULL, *json = NULL, *text = NULL;
	bool skill = sandboxed();   /* local keeps no skills record (as in hostile_state) */
	sbx_workspace *ws = bt_open_ok(dir, "\"state_dir\":\"workdir\"");
	const char *audit;

	ck_assert_int_eq(sbx_mcp_add(ws, NULL, NULL, "legacy-srv", "{\"command\":\"true\"}"), 0);
	if (skill) {
		test_put_file(src, "SKILL.md", "---\nname: legacy-skill\ndescription: From before.\n"
		              "---\n", 0644);
		ck_assert_msg(sbx_skill_add(ws, src, &name) == 0, "%s", sbx_last_error());
		sbx_free(name);
	}
	free(bt_shell_out(ws, "echo legacy-marker"));
	ck_assert_str_eq(sbx_audit_path(ws), bt_tmp("%s/.agentsbx/audit.jsonl", dir));
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
	ck_assert(test_exists(test_path_at(dir, ".agentsbx/mcp.json")));
	ck_assert(!test_exists(test_state_dir(dir)));

	ws = bt_open_ok(dir, NULL);
	audit = sbx_audit_path(ws);
	ck_assert_str_eq(audit, bt_tmp("%s/audit.jsonl", test_state_dir(dir)));
	ck_assert_msg(strstr(test_slurp(audit), "legacy-marker"), "%s", test_slurp(audit));
	ck_assert_int_eq(sbx_mcp_list(ws, NULL, NULL, &json), 0);
	ck_assert_msg(strstr(json, "\"name\":\"legacy-srv\"") &&
	              !strstr(json, "not declared through this host's library"), "%s", json);
	sbx_free(json);
	ck_assert_int_eq(sbx_workspace_instructions(ws, &text), 0);
	ck_assert_msg(!skill || strstr(text, "<name>legacy-skill</name>"), "%s", text);
	sbx_free(text);
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
	/* Nothing of it is left in the workdir. */
	assert_not_in_workdir(dir, ".agentsbx");
	ck_assert(test_exists(test_path_at(test_state_dir(dir), "mcp.json")));
}
END_TEST

static Suite *clean_tree_suite(void)
{
	Suite *s = suite_create("clean_tree");
	TCase *tc = tcase_create("tree");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_git_sees_only_the_agents_work);
	tcase_add_test(tc, test_identity_through_global_config);
	tcase_add_test(tc, test_tools_home_is_private_and_kept);
	tcase_add_test(tc, test_legacy_state_folder_is_migrated);
	tcase_add_test(tc, test_temporary_workdir_holds_no_notes);
	if (sandboxed())
		tcase_add_test(tc, test_placeholders_are_sockets_git_skips);
	/* Only where the git guard keeps existing repositories' config read-only. */
	if (sandboxed())
		tcase_add_test(tc, test_local_identity_refused_with_reason);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return bt_main(clean_tree_suite);
}
