/* The git guard (src/gitguard.h, docs/security.md "Git repositories inside a workspace"):
 * whatever a command or a tool plants in a git repository of the workspace — hooks, config
 * keys that run programs, commondir, modules/<sub>, worktrees, "gitdir:" files, a .git link,
 * a bare repository — in a repository that existed at open or one made afterwards, at the
 * root or deep down, never runs when the user's git runs on the host afterwards.
 *
 * Every payload writes a marker file into a host directory outside the workspace if it ever
 * runs; after the workspace is closed the test runs the host's real git there (status,
 * commit, an alias, log) and asserts that no marker exists. Legitimate git use inside must
 * keep working, on the host too. Registered for ns, bwrap and docker (whose busybox image has
 * no git: its repositories are written by hand, as git lays them out), and for local, where
 * commands run on the host anyway, for the file tools' part only. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend_support.h"
#include "support.h"

static const char *markers;     /* host directory the payloads would write into */
static const char *home;        /* an empty HOME for the host's git */

static bool is_local(void)
{
	return !strcmp(bt_backend(), "local");
}

/* The backend has git inside and kernel binds (ns, bwrap). */
static bool has_git_inside(void)
{
	return !strcmp(bt_backend(), "ns") || !strcmp(bt_backend(), "bwrap");
}

static void setup(void)
{
	markers = bt_mkdtemp();
	home = bt_mkdtemp();
	/* The payloads run as the sandbox's user if they run at all: let anyone write here. */
	chmod(markers, 0777);
}

/* Runs a host shell command; returns its exit status. */
static int host_sh(const char *cmd)
{
	int st = system(cmd);

	ck_assert_msg(st != -1, "system: %s", strerror(errno));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The host's git in dir (relative to the workdir), as a user would run it, with no config of
 * the user's own; returns its exit status. */
static int host_git(const char *workdir, const char *dir, const char *args)
{
	return host_sh(bt_tmp("cd '%s/%s' && HOME='%s' GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 "
	                      "git -c safe.directory='*' -c user.name=t -c user.email=t@example.com "
	                      "-c protocol.file.allow=always %s >/dev/null 2>&1 </dev/null",
	                      workdir, dir, home, args));
}

/* What a user does in a repository: everything that would run a hook, fsmonitor or alias. */
static void use_on_host(const char *workdir, const char *dir)
{
	host_git(workdir, dir, "status");
	host_git(workdir, dir, "commit -q --allow-empty -m host");
	host_git(workdir, dir, "st");
	host_git(workdir, dir, "log -1");
}

/* Host command output (for messages). */
static char *host_out(const char *cmd)
{
	static char out[4096];
	FILE *p = popen(cmd, "r");
	size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;

	if (p)
		pclose(p);
	out[n] = '\0';
	return out;
}

static int count_markers(void)
{
	return host_sh(bt_tmp("n=$(ls -A '%s' | wc -l); exit $n", markers));
}

static void assert_no_marker(void)
{
	int n = count_markers();

	ck_assert_msg(n == 0, "%d payload(s) ran on the host: %s", n,
	              bt_tmp("%.2000s", host_out(bt_tmp("ls -A '%s'", markers))));
}

/* The shell that lays out a git dir at gd by hand (as git init does), with payloads whose
 * markers are named tag-*: hooks, core.fsmonitor, core.hooksPath, an alias. */
static const char *plant_git_dir(const char *gd, const char *tag)
{
	return bt_tmp(
		"mkdir -p '%1$s/objects' '%1$s/refs/heads' '%1$s/hooks' '%1$s/../hooksdir-%2$s' && "
		"printf 'ref: refs/heads/main\\n' > '%1$s/HEAD' && "
		"printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n"
		"\\tfsmonitor = \"touch %3$s/%2$s-fsmonitor; true\"\\n"
		"\\thooksPath = ../hooksdir-%2$s\\n[alias]\\n\\tst = \"!touch %3$s/%2$s-alias\"\\n"
		"[include]\\n\\tpath = ../inc-%2$s\\n' > '%1$s/config' && "
		"printf '[core]\\n\\tpager = touch %3$s/%2$s-include\\n' > '%1$s/../inc-%2$s' && "
		"for h in pre-commit commit-msg post-commit reference-transaction post-index-change; do "
		"printf '#!/bin/sh\\ntouch %3$s/%2$s-hook-'$h'\\n' > '%1$s/hooks/'$h; "
		"chmod +x '%1$s/hooks/'$h; "
		"cp '%1$s/hooks/'$h '%1$s/../hooksdir-%2$s/'$h; done",
		gd, tag, markers);
}

/* Runs a shell script in a host directory. */
static void host_script(const char *dir, const char *script)
{
	const char *path = bt_tmp("%s/.script.sh", dir);
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(script, f);
	fclose(f);
	ck_assert_int_eq(host_sh(bt_tmp("cd '%s' && sh .script.sh && rm .script.sh", dir)), 0);
}

static const char *quarantine_json(sbx_workspace *w)
{
	char *json = NULL;

	static char copies[4][1 << 18];
	static int next;
	char *copy = copies[next++ % 4];

	ck_assert_int_eq(sbx_workspace_git_quarantine(w, &json), 0);
	ck_assert_uint_lt(strlen(json), sizeof copies[0]);
	memcpy(copy, json, strlen(json) + 1);
	sbx_free(json);
	return copy;
}

/* The "path" and "when" of each item, for messages. */
static const char *item_paths(const char *json)
{
	static char out[8192];
	size_t n = 0;

	out[0] = '\0';
	for (const char *p = json; (p = strstr(p, "\"path\":\"")) && n + 300 < sizeof out;) {
		p += 8;
		const char *end = strchr(p, '"');
		const char *when = strstr(p, "\"when\":\"");
		if (!end)
			break;
		n += (size_t)snprintf(out + n, sizeof out - n, "%.*s@%.*s ", (int)(end - p), p,
		                      when ? (int)strcspn(when + 8, "\"") : 1, when ? when + 8 : "?");
		p = end;
	}
	return out;
}

/* Whether the workspace's report lists an item at path (quarantined when). */
static void expect_item(sbx_workspace *w, const char *path, const char *when)
{
	const char *json = quarantine_json(w);
	const char *want = bt_tmp("\"path\":\"%s\"", path);
	const char *at = strstr(json, want);

	ck_assert_msg(at, "no item %s in: %s", path, item_paths(json));
	if (when) {
		const char *w_at = strstr(at, "\"when\":\"");
		ck_assert_msg(w_at && !strncmp(w_at + 8, when, strlen(when)),
		              "%s not quarantined at %s: %s", path, when, item_paths(json));
	}
}

static void run_ok(sbx_workspace *w, const char *cmd)
{
	sbx_result *res = bt_shell(w, cmd, NULL);
	size_t n;

	ck_assert_msg(sbx_result_exit_code(res) == 0, "%s: exit %d: %s", cmd,
	              sbx_result_exit_code(res), sbx_result_stderr(res, &n));
	sbx_result_free(res);
}

/* ---- repositories made after the open ------------------------------------------------ */

START_TEST(planted_hooks_and_config_never_run_at_the_root_or_three_deep)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w = bt_open_ok(dir, NULL);

	run_ok(w, plant_git_dir(".git", "root"));
	run_ok(w, bt_tmp("mkdir -p a/b/c && %s", plant_git_dir("a/b/c/.git", "deep")));
	const char *json = quarantine_json(w);
	expect_item(w, "a/b/c/.git/hooks/pre-commit", NULL);
	expect_item(w, ".git/config", NULL);
	ck_assert_msg(strstr(json, "\"guarded\":true"), "%.1500s", json);
	ck_assert_int_eq(sbx_workspace_close(w), 0);

	use_on_host(dir, ".");
	use_on_host(dir, "a/b/c");
	assert_no_marker();
	/* In the state folder and the audit log; the repositories stay usable. */
	ck_assert_int_eq(host_sh(bt_tmp("test -f '%s'/quarantine/*/a/b/c/.git/hooks/"
	                                "pre-commit", test_state_dir(dir))), 0);
	ck_assert_int_eq(host_sh(bt_tmp("grep -q '\"kind\":\"git\".*\"path\":\"a/b/c/.git/config\"'"
	                                " '%s/audit.jsonl'", test_state_dir(dir))), 0);
	ck_assert_int_eq(host_git(dir, "a/b/c", "rev-parse --git-dir"), 0);
	ck_assert_int_eq(host_sh(bt_tmp("grep -qi 'fsmonitor\\|hookspath\\|alias\\|include' "
	                                "'%s/a/b/c/.git/config'", dir)), 1);
}
END_TEST

START_TEST(real_git_inside_plants_nothing_that_runs_on_the_host)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w = bt_open_ok(dir, NULL);

	run_ok(w, bt_tmp("G='git -c user.name=t -c user.email=t@e -c init.defaultBranch=main' && "
	                 "mkdir -p x/y/z && $G init -q x/y/z && "
	                 "$G -C x/y/z config core.fsmonitor 'touch %1$s/git-fsmonitor; true' && "
	                 "$G -C x/y/z config alias.st '!touch %1$s/git-alias' && "
	                 "printf '#!/bin/sh\\ntouch %1$s/git-hook\\n' > x/y/z/.git/hooks/pre-commit && "
	                 "chmod +x x/y/z/.git/hooks/pre-commit && "
	                 "$G init -q src && $G -C src commit -q --allow-empty -m s && "
	                 "$G clone -q src clone && "
	                 "printf '#!/bin/sh\\ntouch %1$s/clone-hook\\n' > clone/.git/hooks/post-commit && "
	                 "chmod +x clone/.git/hooks/post-commit", markers));
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	use_on_host(dir, "x/y/z");
	use_on_host(dir, "clone");
	assert_no_marker();
	ck_assert_int_eq(host_git(dir, "clone", "log -1"), 0);
	/* its remote survived the check (the URL is the sandbox's path, as git wrote it) */
	ck_assert_int_eq(host_sh(bt_tmp("grep -q 'url = ' '%s/clone/.git/config'", dir)), 0);
}
END_TEST

/* A command that makes a git dir unreadable or unwritable for its own user (which is the
 * host user the guard runs as, when that is not root) must not hide what git still runs. */
START_TEST(permission_games_do_not_hide_a_hook)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w = bt_open_ok(dir, NULL);

	run_ok(w, bt_tmp("mkdir p && %s && chmod 100 p/.git/hooks && chmod 500 p/.git && "
	                 "mkdir -p q/r && %s && chmod 100 q", plant_git_dir("p/.git", "perm"),
	                 plant_git_dir("q/r/.git", "perm2")));
	expect_item(w, "p/.git/hooks/pre-commit", "exec");
	expect_item(w, "p/.git/config", "exec");
	expect_item(w, "q/r/.git/hooks/pre-commit", "exec");
	/* What the guard opened up to look (as the caller's own user: root needs no such step)
	 * has its mode back: a folder someone closed stays closed. */
	const char *modes = host_out(bt_tmp("cd '%s' && stat -c %%a p/.git/hooks p/.git q 2>&1", dir));
	ck_assert_msg(!strcmp(modes, "100\n500\n100\n"), "modes after the check: %s", modes);
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	use_on_host(dir, "p");
	use_on_host(dir, "q/r");
	assert_no_marker();
}
END_TEST

/* More changes in one command than the kernel queues (fs.inotify.max_queued_events): the
 * events of the repository planted last are lost, and the overflow makes the check walk
 * the whole tree instead. */
START_TEST(a_flood_of_changes_falls_back_to_a_full_walk)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w = bt_open_ok(dir, NULL);
	int queued = 16384;
	FILE *f = fopen("/proc/sys/fs/inotify/max_queued_events", "r");

	if (f) {
		ck_assert_int_eq(fscanf(f, "%d", &queued), 1);
		fclose(f);
	}
	run_ok(w, "mkdir flood");    /* watched from the next check on */
	run_ok(w, bt_tmp("cd flood && i=0; while [ $i -lt %d ]; do : > f$i; "
	                 "i=$((i+1)); done; cd .. && mkdir -p late/x/y && %s", queued + 1000,
	                 plant_git_dir("late/x/y/.git", "flood")));
	expect_item(w, "late/x/y/.git/hooks/pre-commit", "exec");
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	use_on_host(dir, "late/x/y");
	assert_no_marker();
}
END_TEST

/* A folder shaped like a git dir (HEAD, objects/, refs/) is still a folder the user's git
 * may run in below: git looks for a ".git" in the directory it runs in first, so a repository
 * in a subfolder of a bare-shaped folder is used as any other. One command makes both. */
START_TEST(a_repository_below_a_git_shaped_folder_is_found)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w = bt_open_ok(dir, NULL);

	run_ok(w, bt_tmp("mkdir -p x/objects x/refs x/proj && echo 'ref: refs/heads/main' > x/HEAD "
	                 "&& %s", plant_git_dir("x/proj/.git", "shaped")));
	expect_item(w, "x/proj/.git/hooks/pre-commit", "exec");
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	use_on_host(dir, "x/proj");
	assert_no_marker();
}
END_TEST

/* The workspace root made git-shaped, then a full walk (a renamed folder forces one): the
 * root is a git dir to the guard from then on, and must stay an ordinary folder too, whose
 * new subfolders are walked. */
START_TEST(a_git_shaped_root_still_has_its_new_folders_walked)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w = bt_open_ok(dir, NULL);

	run_ok(w, "mkdir -p objects refs a && echo 'ref: refs/heads/main' > HEAD && mv a b");
	run_ok(w, bt_tmp("mkdir -p later/on && %s", plant_git_dir("later/on/.git", "root-shaped")));
	expect_item(w, "later/on/.git/hooks/pre-commit", "exec");
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	use_on_host(dir, "later/on");
	assert_no_marker();
}
END_TEST

/* The workspace root made a bare repository by one command (HEAD, objects/, refs/, a config
 * and hooks at the top): the host's git run at the root, finding no .git, takes the root
 * itself for its git dir, and would run its alias. */
START_TEST(the_root_made_a_bare_repository_is_checked)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w = bt_open_ok(dir, NULL);

	run_ok(w, bt_tmp("mkdir -p objects refs/heads hooks && echo 'ref: refs/heads/main' > HEAD "
	                 "&& printf '[core]\\n\\tbare = true\\n[alias]\\n\\tst = \"!touch %1$s/bare-root-alias\"\\n' "
	                 "> config && printf '#!/bin/sh\\ntouch %1$s/bare-root-hook\\n' > "
	                 "hooks/pre-receive && chmod +x hooks/pre-receive", markers));
	expect_item(w, "config", "exec");
	expect_item(w, "hooks/pre-receive", "exec");
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	use_on_host(dir, ".");
	assert_no_marker();
}
END_TEST

/* git takes a folder for a git dir when it has a HEAD and its common dir — its own, or the
 * one its commondir names — has objects/ and refs/: a worktree's git dir has neither of its
 * own. Such a folder, made by a command, is used by the host's git run below it, with its
 * config.worktree (the common dir's config turns that on with a key the guard allows), whose
 * core.worktree makes the folder below a work tree for the fsmonitor. */
START_TEST(a_git_dir_by_its_commondir_alone_is_checked)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w = bt_open_ok(dir, NULL);

	run_ok(w, bt_tmp("mkdir -p y/objects y/refs/heads x/sub && echo 'ref: refs/heads/main' > y/HEAD "
	                 "&& printf '[core]\\n\\trepositoryformatversion = 1\\n"
	                 "[extensions]\\n\\tworktreeConfig = true\\n' > y/config && "
	                 "echo 'ref: refs/heads/main' > x/HEAD && echo ../y > x/commondir && "
	                 "printf '[core]\\n\\tbare = false\\n\\tworktree = sub\\n\\tfsmonitor = "
	                 "\"touch %1$s/commondir-only-fsmonitor; true\"\\n' > x/config.worktree",
	                 markers));
	expect_item(w, "x/config.worktree", "exec");
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	use_on_host(dir, "x");
	use_on_host(dir, "x/sub");
	assert_no_marker();
}
END_TEST

/* A user's config may include a file of the work tree (include.path = ../.gitconfig, the
 * usual way to share a project's aliases): that key is the user's and stays, but the file it
 * names is the work tree's, which any command can write. What a command puts there must not
 * run on the host either. */
START_TEST(a_work_tree_file_the_users_config_includes_is_checked)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w;

	ck_assert_int_eq(host_sh(bt_tmp("git init -q '%1$s/p' && git -C '%1$s/p' config include.path "
	                                "../.gitconfig && printf '[alias]\\n\\tl = log -1\\n' > "
	                                "'%1$s/p/.gitconfig' && git -C '%1$s/p' config --add "
	                                "includeIf.onbranch:main.path ../.branch.gitconfig", dir)), 0);
	/* and one whose included file nobody touches */
	ck_assert_int_eq(host_sh(bt_tmp("git init -q '%1$s/q' && git -C '%1$s/q' config include.path "
	                                "../.gitconfig && printf '[alias]\\n\\tl = log -1\\n' > "
	                                "'%1$s/q/.gitconfig'", dir)), 0);
	if (!strcmp(bt_backend(), "docker") && geteuid() == 0)
		ck_assert_int_eq(host_sh(bt_tmp("chown -R %d:%d '%s'", BT_DOCKER_UID, BT_DOCKER_UID,
		                                dir)), 0);
	w = bt_open_ok(dir, NULL);
	run_ok(w, bt_tmp("printf '[core]\\n\\tfsmonitor = \"touch %1$s/include-fsmonitor; true\"\\n"
	                 "[alias]\\n\\tl = log -1\\n\\tst = \"!touch %1$s/include-alias\"\\n' > "
	                 "p/.gitconfig && printf '[alias]\\n\\tst = \"!touch %1$s/includeif-alias\"\\n' > "
	                 "p/.branch.gitconfig", markers));
	expect_item(w, "p/.gitconfig", "exec");
	expect_item(w, "p/.branch.gitconfig", "exec");
	ck_assert_msg(!strstr(quarantine_json(w), "\"path\":\"q/"), "%.1500s", quarantine_json(w));
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	use_on_host(dir, "p");
	assert_no_marker();
	/* what the user had in the included files still works */
	ck_assert_int_eq(host_git(dir, "p", "config alias.l"), 0);
	ck_assert_int_eq(host_git(dir, "q", "config alias.l"), 0);
	ck_assert_int_eq(host_git(dir, "p", "config alias.st"), 1);
}
END_TEST

/* A user's core.hooksPath may name a folder of the work tree (.githooks, to share a
 * project's hooks): the key is the user's and stays, and that folder is a hooks folder like
 * .git/hooks, whose hooks a command adds or changes. */
START_TEST(a_hooks_path_in_the_work_tree_is_a_hooks_folder)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w;

	ck_assert_int_eq(host_sh(bt_tmp("git init -q '%1$s/h' && git -C '%1$s/h' config core.hooksPath "
	                                ".githooks && mkdir '%1$s/h/.githooks' && printf "
	                                "'#!/bin/sh\\ntrue\\n' > '%1$s/h/.githooks/post-commit' && "
	                                "chmod +x '%1$s/h/.githooks/post-commit'", dir)), 0);
	if (!strcmp(bt_backend(), "docker") && geteuid() == 0)
		ck_assert_int_eq(host_sh(bt_tmp("chown -R %d:%d '%s'", BT_DOCKER_UID, BT_DOCKER_UID,
		                                dir)), 0);
	w = bt_open_ok(dir, NULL);
	ck_assert_msg(strstr(quarantine_json(w), "\"items\":[]"), "%.1500s", quarantine_json(w));
	run_ok(w, bt_tmp("for h in pre-commit post-commit; do printf '#!/bin/sh\\ntouch %1$s/hooks-path-'$h'\\n'"
	                 " > h/.githooks/$h && chmod +x h/.githooks/$h; done && echo notes > "
	                 "h/.githooks/README", markers));
	expect_item(w, "h/.githooks/pre-commit", "exec");
	expect_item(w, "h/.githooks/post-commit", "exec");
	/* the user's other files there are the work tree's */
	ck_assert_msg(!strstr(quarantine_json(w), "h/.githooks/README"), "%.1500s",
	              quarantine_json(w));
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	use_on_host(dir, "h");
	assert_no_marker();
	ck_assert_int_eq(host_git(dir, "h", "config core.hooksPath"), 0);
}
END_TEST

/* The walk goes 256 folders deep; a repository 40 folders down is within that, made in one
 * command below a new folder, or found by the full walk at the next open. */
START_TEST(a_repository_forty_folders_down_is_found)
{
	char *dir = bt_mkdtemp();
	const char *deep = "d/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17/18/19/20/21/22/23/24/25/26/"
	                   "27/28/29/30/31/32/33/34/35/36/37/38/39";
	sbx_workspace *w = bt_open_ok(dir, NULL);

	run_ok(w, bt_tmp("mkdir -p %s && %s", deep, plant_git_dir(bt_tmp("%s/.git", deep), "deep40")));
	expect_item(w, bt_tmp("%s/.git/hooks/pre-commit", deep), "exec");
	/* a gitdir: file that deep, to a git dir of the command's making inside another's .git
	 * (which the walk does not search: only the pointer leads there); 41 levels up: e/ and
	 * the 40 of deep */
	char up[41 * 3 + 1] = "";
	for (int i = 0; i < 41; i++)
		strcat(up, "../");
	run_ok(w, bt_tmp("mkdir -p r/.git/objects r/.git/refs e/%s && "
	                 "echo 'ref: refs/heads/main' > r/.git/HEAD && %s && "
	                 "printf 'gitdir: %sr/.git/hide\\n' > e/%s/.git", deep,
	                 plant_git_dir("r/.git/hide", "deep40-file"), up, deep));
	expect_item(w, "r/.git/hide/hooks/pre-commit", "exec");
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	use_on_host(dir, deep);
	use_on_host(dir, bt_tmp("e/%s", deep));
	assert_no_marker();
}
END_TEST

/* ---- pointers ------------------------------------------------------------------------- */

START_TEST(commondir_modules_worktrees_gitdir_files_links_and_bare_repos)
{
	char *dir = bt_mkdtemp(), *outside = bt_mkdtemp();
	sbx_workspace *w;
	const char *view;

	/* A repository of the user's from before the open, and a git dir outside the workspace
	 * with payloads (as another workspace of the host might hold). */
	ck_assert_int_eq(host_sh(bt_tmp("git init -q '%s/r'", dir)), 0);
	host_script(outside, plant_git_dir("out", "outside"));
	if (!strcmp(bt_backend(), "docker") && geteuid() == 0)
		ck_assert_int_eq(host_sh(bt_tmp("chown -R %d:%d '%s'", BT_DOCKER_UID, BT_DOCKER_UID,
		                                dir)), 0);
	w = bt_open_ok(dir, NULL);
	view = sbx_workspace_root(w);
	/* commondir into a folder of the command's making; one out of the workspace */
	run_ok(w, bt_tmp("mkdir evil && %s && echo ../../evil/g > r/.git/commondir",
	                 plant_git_dir("evil/g", "commondir")));
	run_ok(w, bt_tmp("mkdir -p r2 && %s && echo /etc > r2/.git/commondir",
	                 plant_git_dir("r2/.git", "commondir2")));
	/* modules/<sub> of a superproject, reached through the submodule's gitdir: file */
	run_ok(w, bt_tmp("mkdir -p sup/sub && %s && %s && "
	                 "printf 'gitdir: ../.git/modules/sub\\n' > sup/sub/.git",
	                 plant_git_dir("sup/.git", "super"), plant_git_dir("sup/.git/modules/sub",
	                                                                   "module")));
	/* worktrees/<wt> with its config.worktree, and the worktree's gitdir: file written with
	 * the sandbox's absolute path */
	run_ok(w, bt_tmp("mkdir -p main wt && %s && mkdir -p main/.git/worktrees/wt && "
	                 "printf 'ref: refs/heads/main\\n' > main/.git/worktrees/wt/HEAD && "
	                 "printf '../..\\n' > main/.git/worktrees/wt/commondir && "
	                 "printf '%s/wt/.git\\n' > main/.git/worktrees/wt/gitdir && "
	                 "printf '[core]\\n\\tfsmonitor = \"touch %s/wt-fsmonitor; true\"\\n' > "
	                 "main/.git/worktrees/wt/config.worktree && "
	                 "printf '[extensions]\\n\\tworktreeConfig = true\\n' >> main/.git/config && "
	                 "printf 'gitdir: %s/main/.git/worktrees/wt\\n' > wt/.git",
	                 plant_git_dir("main/.git", "main"), view, markers, view));
	/* a gitdir: file to a git dir elsewhere, one out of the workspace; .git links */
	run_ok(w, bt_tmp("mkdir -p x y z l && %s && printf 'gitdir: ../planted\\n' > x/.git && "
	                 "printf 'gitdir: %s/out\\n' > y/.git && %s && ln -s ../planted2 z/.git && "
	                 "ln -s '%s/out' l/.git",
	                 plant_git_dir("planted", "planted"), outside, plant_git_dir("planted2",
	                                                                             "planted2"),
	                 outside));
	/* a bare repository in a subfolder */
	run_ok(w, bt_tmp("mkdir -p deep/er && %s", plant_git_dir("deep/er/bare.git", "bare")));
	expect_item(w, "r2/.git/commondir", NULL);
	expect_item(w, "y/.git", NULL);
	expect_item(w, "l/.git", NULL);
	expect_item(w, "main/.git/worktrees/wt/config.worktree", NULL);
	expect_item(w, "sup/.git/modules/sub/config", NULL);
	expect_item(w, "evil/g/config", NULL);
	ck_assert_int_eq(sbx_workspace_close(w), 0);

	static const char *const dirs[] = { "r", "r2", "sup", "sup/sub", "wt", "main", "x", "y",
	                                    "z", "l", "deep/er/bare.git", "evil/g", "planted" };
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		use_on_host(dir, dirs[i]);
	assert_no_marker();
	/* The worktree's pointer now reads the same on the host as inside. */
	ck_assert_int_eq(host_sh(bt_tmp("grep -qx 'gitdir: ../main/.git/worktrees/wt' '%s/wt/.git'",
	                                dir)), 0);
}
END_TEST

/* ---- legitimate work ------------------------------------------------------------------ */

START_TEST(ordinary_git_work_inside_keeps_working_on_the_host)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w = bt_open_ok(dir, NULL);

	run_ok(w, "G='git -c user.name=t -c user.email=t@e -c init.defaultBranch=main "
	          "-c protocol.file.allow=always' && "
	          "$G init -q lib && echo l > lib/f && $G -C lib add f && $G -C lib commit -qm lib && "
	          "$G init -q proj && cd proj && echo a > a && $G add a && $G commit -qm one && "
	          "$G branch feature && $G submodule -q add ../lib sub && $G commit -qm sub && "
	          "$G worktree add -q ../proj-wt feature && cd .. && $G clone -q proj copy");
	ck_assert_msg(strstr(quarantine_json(w), "\"items\":[]"), "%.1500s", quarantine_json(w));
	/* and the next command still works in them (reads; commits go to objects and refs) */
	run_ok(w, "cd proj && echo b > b && git add b && git -c user.name=t -c user.email=t@e "
	          "commit -qm two && git -C ../proj-wt status --short && git submodule status");
	ck_assert_msg(strstr(quarantine_json(w), "\"items\":[]"), "%.1500s", quarantine_json(w));
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	ck_assert_int_eq(host_git(dir, "proj", "status"), 0);
	ck_assert_int_eq(host_git(dir, "proj", "log -1 --format=%s"), 0);
	ck_assert_int_eq(host_git(dir, "proj", "submodule status"), 0);
	ck_assert_int_eq(host_git(dir, "proj/sub", "status"), 0);
	ck_assert_int_eq(host_git(dir, "proj-wt", "status"), 0);
	ck_assert_int_eq(host_git(dir, "copy", "status"), 0);
	ck_assert_int_eq(host_git(dir, "proj", "commit -q --allow-empty -m host"), 0);
}
END_TEST

/* ---- kernel enforcement --------------------------------------------------------------- */

static void expect_read_only(sbx_workspace *w, const char *cmd)
{
	sbx_result *res = bt_shell(w, bt_tmp("{ %s; } 2>&1", cmd), NULL);
	size_t n;
	const char *out = sbx_result_stdout(res, &n);

	ck_assert_msg(sbx_result_exit_code(res) != 0 && (strstr(out, "Read-only file system") ||
	                                                 strstr(out, "busy")),
	              "%s: exit %d: %s", cmd, sbx_result_exit_code(res), out);
	sbx_result_free(res);
}

START_TEST(existing_and_earlier_repositories_are_read_only_inside)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w;

	ck_assert_int_eq(host_sh(bt_tmp("mkdir -p '%s/a/b' && git init -q '%s/a/b/r'", dir, dir)),
	                 0);
	w = bt_open_ok(dir, NULL);
	ck_assert_msg(strstr(quarantine_json(w), "\"kernel_binds\":true"), "%s",
	              quarantine_json(w));
	expect_read_only(w, "echo '[core] fsmonitor = x' >> a/b/r/.git/config");
	expect_read_only(w, "echo x > a/b/r/.git/hooks/pre-commit");
	expect_read_only(w, "mv a/b/r/.git a/b/r/moved");
	/* a repository one command makes is read-only for the next */
	run_ok(w, "git init -q fresh");
	expect_read_only(w, "git -C fresh config core.fsmonitor x");
	expect_read_only(w, "touch fresh/.git/hooks/pre-commit");
	/* and after a reset, in the new sandbox, again */
	ck_assert_int_eq(sbx_workspace_reset(w), 0);
	expect_read_only(w, "echo x >> fresh/.git/config");
	ck_assert_int_eq(sbx_workspace_close(w), 0);
}
END_TEST

/* Binds are bounded: the first 256 repositories get them, the rest detection (audited). */
START_TEST(binds_stop_at_256_repositories_and_detection_covers_the_rest)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w;

	ck_assert_int_eq(host_sh(bt_tmp("cd '%s' && for i in $(seq 300); do mkdir -p r$i/.git/objects "
	                                "r$i/.git/refs r$i/.git/hooks && echo 'ref: refs/heads/main' "
	                                "> r$i/.git/HEAD && printf '[core]\n\tbare = false\n' > "
	                                "r$i/.git/config; done", dir)), 0);
	w = bt_open_ok(dir, NULL);
	const char *json = quarantine_json(w);
	ck_assert_msg(strstr(json, "\"repositories\":300,\"bound\":256"), "%.300s", json);
	ck_assert_int_eq(host_sh(bt_tmp("grep -q '\"event\":\"binds\",\"detail\":\"more than 256' "
	                                "'%s/audit.jsonl'", test_state_dir(dir))), 0);
	/* bound or not, a hook planted in any of them is gone when the command ends */
	run_ok(w, bt_tmp("for i in 1 300; do %s; done", "printf '#!/bin/sh\\ntouch MARK\\n' > "
	                                                "r$i/.git/hooks/pre-commit 2>/dev/null; true"));
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	ck_assert_int_eq(host_sh(bt_tmp("test ! -e '%s/r300/.git/hooks/pre-commit' && "
	                                "test ! -e '%s/r1/.git/hooks/pre-commit'", dir, dir)), 0);
}
END_TEST

/* ---- every end of a command ----------------------------------------------------------- */

/* A process that plants a git dir at gd once the host writes go<n>, says done<n>, and runs
 * on. */
static sbx_process *spawn_planter(sbx_workspace *w, const char *n, const char *gd,
                                  const char *dir)
{
	const char *argv[] = { "/bin/sh", bt_tmp("plant%s.sh", n), NULL };
	sbx_process *p = NULL;

	bt_put(w, bt_tmp("plant%s.sh", n),
	       bt_tmp("while [ ! -e go%s ]; do sleep 0.05; done\n%s\ntouch done%s\nexec sleep 1000\n",
	              n, plant_git_dir(gd, bt_tmp("planter%s", n)), n), 0);
	ck_assert_int_eq(sbx_process_spawn(w, argv, NULL, &p), 0);
	bt_put(w, bt_tmp("go%s", n), "", 0);
	ck_assert_int_eq(host_sh(bt_tmp("for i in $(seq 400); do [ -e '%s/done%s' ] && exit 0; "
	                                "sleep 0.05; done; exit 1", dir, n)), 0);
	return p;
}

START_TEST(spawned_processes_the_bash_tool_reset_and_close_are_checked)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w = bt_open_ok(dir, NULL);
	const char *argv[] = { "/bin/sh", "-c", plant_git_dir("s/.git", "spawn"), NULL };
	sbx_process *p = NULL;
	char *res = NULL, *args;

	/* a spawned process, waited for */
	ck_assert_int_eq(sbx_process_spawn(w, argv, NULL, &p), 0);
	ck_assert_int_eq(sbx_process_wait(p, -1, NULL, NULL), 0);
	expect_item(w, "s/.git/hooks/pre-commit", "spawn");
	sbx_process_free(p);
	/* the Bash tool says so to the model */
	args = bt_fmt("{\"command\":\"%s\"}", "mkdir t && mkdir -p t/.git/hooks && "
	              "printf x > t/.git/hooks/pre-push");
	ck_assert_int_eq(sbx_tool_call(w, "Bash", args, &res), 0);
	ck_assert_msg(strstr(res, "\"git_quarantined\":1") && strstr(res, "moved to quarantine"),
	              "%.1500s", res);
	sbx_free(res);
	free(args);
	/* A command still running (nothing of a command outlives it, but a spawned process runs
	 * until it is waited for): what it plants is found at reset ... */
	sbx_process *p1 = spawn_planter(w, "1", "d1/.git", dir);
	ck_assert_int_eq(sbx_workspace_reset(w), 0);
	expect_item(w, "d1/.git/config", "reset");
	/* ... and at close, after the sandbox stopped */
	sbx_process *p2 = spawn_planter(w, "2", "d2/.git", dir);
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	sbx_process_free(p1);
	sbx_process_free(p2);
	ck_assert_int_eq(host_sh(bt_tmp("grep -q '\"path\":\"d2/.git/config\".*\"when\":\"close\"' "
	                                "'%s/audit.jsonl' && "
	                                "test -f '%s'/quarantine/*/d2/.git/config",
	                                test_state_dir(dir), test_state_dir(dir))), 0);
	use_on_host(dir, "s");
	use_on_host(dir, "t");
	use_on_host(dir, "d1");
	use_on_host(dir, "d2");
	assert_no_marker();
}
END_TEST

/* The quarantine, the journal the host's root acts on, the record of trusted skills: the host
 * trusts the state folder because no command can write it, so a config whose protected_paths
 * leaves it out must not make it writable (nor a hiding place the guard does not walk). */
START_TEST(the_state_folder_stays_read_only_whatever_protected_paths_says)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w;
	static const char *const attempts[] = {
		"echo '{}' > .agentsbx/skills.json", "echo x > .agentsbx/journal/p-0123456789ab",
		"mkdir -p .agentsbx/quarantine/x", "mkdir -p .agentsbx/r/.git/hooks",
		"mv .agentsbx .agentsbx-moved",
	};

	ck_assert_int_eq(host_sh(bt_tmp("git init -q '%s'", dir)), 0);
	w = bt_open_ok(dir, bt_tmp("\"%s\":{\"protected_paths\":[\".git/hooks/\"]}", bt_backend()));
	for (size_t i = 0; i < sizeof attempts / sizeof attempts[0]; i++) {
		sbx_result *res = bt_shell(w, attempts[i], NULL);
		ck_assert_msg(sbx_result_exit_code(res) != 0, "`%s` succeeded inside", attempts[i]);
		sbx_result_free(res);
	}
	/* the list's own entries still hold, and what it left out is writable */
	expect_read_only(w, "echo x > .git/hooks/pre-commit");
	run_ok(w, "echo x > .bashrc");
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	ck_assert_int_eq(host_sh(bt_tmp("test ! -e '%1$s/.agentsbx/r' && "
	                                "test ! -e '%1$s/.agentsbx/journal/p-0123456789ab'", dir)), 0);
}
END_TEST

/* ---- a capped workspace ----------------------------------------------------------------- */

/* Bytes below the host directory dir (du's apparent size). */
static long long host_bytes(const char *dir)
{
	const char *out = host_out(bt_tmp("du -sb --apparent-size '%s' 2>/dev/null | cut -f1", dir));

	return atoll(out);
}

/* A capped workspace's files are a tmpfs of the sandbox's, its state folder (and so the
 * quarantine) on the host's disk: a quarantine across that boundary is a copy, and what it
 * copies must not let a command write past limits.disk_bytes onto the host, one cap a
 * command, without end. */
START_TEST(the_quarantine_of_a_capped_workspace_stays_bounded)
{
	sbx_workspace *w = bt_open_ok(NULL, "\"limits\":{\"disk_bytes\":33554432}");
	char *state = strdup(sbx_audit_path(w));

	ck_assert_ptr_nonnull(state);
	*strrchr(state, '/') = '\0';
	/* a new repository each time: the ones made before are read-only by then */
	for (int i = 0; i < 6; i++)
		run_ok(w, bt_tmp("mkdir -p r%1$d/.git/objects r%1$d/.git/refs r%1$d/.git/hooks/big && "
		                 "echo 'ref: refs/heads/main' > r%1$d/.git/HEAD && "
		                 "head -c 20000000 /dev/zero > r%1$d/.git/hooks/big/blob && "
		                 "head -c 5000000 /dev/zero > r%1$d/.git/hooks/post-commit", i));
	for (int i = 0; i < 6; i++) {
		expect_item(w, bt_tmp("r%d/.git/hooks/big", i), "exec");
		expect_item(w, bt_tmp("r%d/.git/hooks/post-commit", i), "exec");
	}
	long long kept = host_bytes(bt_tmp("%s/quarantine", state));
	ck_assert_msg(kept <= 32ll << 20, "the quarantine holds %lld bytes on the host's disk "
	              "for a workspace capped at 32 MiB", kept);
	/* what it did not keep it says it deleted, and nothing of it is left inside */
	ck_assert_msg(strstr(quarantine_json(w), "deleted: a folder"), "%.2000s",
	              quarantine_json(w));
	run_ok(w, "for i in 0 1 2 3 4 5; do test ! -e r$i/.git/hooks/big && "
	          "test ! -e r$i/.git/hooks/post-commit || exit 1; done");
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	free(state);
}
END_TEST

/* ---- a host that forks ------------------------------------------------------------------ */

/* A forked child (a worker pool, a test runner) has a copy of the library's one inotify
 * instance, the same open file as its parent's: a read of it in the child would take the
 * events that the parent's next check needs, and the parent would miss what a command
 * planted. The child here opens a workspace of its own and runs a command (a check) while the
 * parent's spawned process has planted a repository the parent has not yet checked. */
START_TEST(a_forked_child_using_the_library_takes_no_event_from_its_parent)
{
	char *dir = bt_mkdtemp(), *child_dir = bt_mkdtemp();
	sbx_workspace *w = bt_open_ok(dir, NULL);
	const char *argv[] = { "/bin/sh", "-c", plant_git_dir("f/.git", "fork"), NULL };
	sbx_process *p = NULL;
	int status = 0;
	pid_t child;

	ck_assert_int_eq(sbx_process_spawn(w, argv, NULL, &p), 0);
	ck_assert_int_eq(host_sh(bt_tmp("for i in $(seq 400); do "
	                                "[ -e '%s/f/.git/hooks/post-index-change' ] && exit 0; "
	                                "sleep 0.05; done; exit 1", dir)), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		const char *t[] = { "true", NULL };
		sbx_workspace *cw = NULL;
		sbx_result *res = NULL;

		if (bt_open(child_dir, NULL, &cw) != 0)
			_exit(1);
		if (sbx_exec(cw, t, NULL, &res) != 0)
			_exit(2);
		sbx_result_free(res);
		_exit(sbx_workspace_close(cw) == 0 ? 0 : 3);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed: 0x%x",
	              (unsigned)status);
	ck_assert_int_eq(sbx_process_wait(p, -1, NULL, NULL), 0);
	expect_item(w, "f/.git/hooks/pre-commit", "spawn");
	sbx_process_free(p);
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	use_on_host(dir, "f");
	assert_no_marker();
}
END_TEST

/* ---- the inotify instance outlives the last workspace ---------------------------------- */

struct inotify_count {
	int instances, watches;
};

/* This process's inotify instances (/proc/self/fd) and their watches (one "inotify wd:" line
 * each in the fd's fdinfo). */
static struct inotify_count count_inotify(void)
{
	struct inotify_count c = { 0, 0 };
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char link[PATH_MAX], target[64], line[512];

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		ssize_t n;
		FILE *f;

		snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
		if ((n = readlink(link, target, sizeof target - 1)) < 0)
			continue;
		target[n] = '\0';
		if (strcmp(target, "anon_inode:inotify"))
			continue;
		c.instances++;
		snprintf(link, sizeof link, "/proc/self/fdinfo/%s", e->d_name);
		if (!(f = fopen(link, "r")))
			continue;
		while (fgets(line, sizeof line, f))
			c.watches += !strncmp(line, "inotify wd:", 11);
		fclose(f);
	}
	closedir(d);
	return c;
}

/* Closing an inotify instance that had watches waits for a kernel grace period (10-20 ms of
 * every close on a loaded host): the one instance stays when the last workspace closes, with
 * no watch left in it (nothing of a closed workspace stays pinned), and the next workspace
 * uses it instead of making another. */
START_TEST(the_inotify_instance_stays_empty_for_the_next_workspace)
{
	struct inotify_count open_c, after_first, after_second;
	sbx_workspace *w;

	for (int round = 0; round < 2; round++) {
		char *dir = bt_mkdtemp();

		ck_assert_int_eq(host_sh(bt_tmp("mkdir -p '%s/a/b' '%s/c'", dir, dir)), 0);
		w = bt_open_ok(dir, NULL);
		run_ok(w, "mkdir -p d/e");
		open_c = count_inotify();
		ck_assert_int_eq(open_c.instances, 1);
		ck_assert_int_ge(open_c.watches, 4);       /* the root, a, a/b, c (and d, d/e) */
		ck_assert_int_eq(sbx_workspace_close(w), 0);
		*(round ? &after_second : &after_first) = count_inotify();
	}
	ck_assert_int_eq(after_first.instances, 1);
	ck_assert_int_eq(after_first.watches, 0);
	ck_assert_int_eq(after_second.instances, 1);
	ck_assert_int_eq(after_second.watches, 0);
}
END_TEST

/* ---- the file tools (every backend, local included) ----------------------------------- */

static char *tool(sbx_workspace *w, const char *name, const char *args)
{
	char *res = NULL;

	ck_assert_int_eq(sbx_tool_call(w, name, args, &res), 0);
	return res;
}

static void expect_refused(sbx_workspace *w, const char *rel)
{
	char *args = bt_fmt("{\"file_path\":\"%s/%s\",\"content\":\"#!/bin/sh\\ntouch %s/tool\\n\"}",
	                    sbx_workspace_root(w), rel, markers);
	char *res = tool(w, "Write", args);

	ck_assert_msg(strstr(res, "\"ok\":false") && strstr(res, "inside a git directory"),
	              "Write %s: %s", rel, res);
	sbx_free(res);
	free(args);
}

START_TEST(write_and_edit_refuse_git_dirs_at_any_depth)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w;
	char *res, *args;

	ck_assert_int_eq(host_sh(bt_tmp("git init -q '%s' && mkdir -p '%s/bare/objects' "
	                                "'%s/bare/refs' && echo 'ref: refs/heads/main' > "
	                                "'%s/bare/HEAD'", dir, dir, dir, dir)), 0);
	if (!strcmp(bt_backend(), "docker") && geteuid() == 0)
		ck_assert_int_eq(host_sh(bt_tmp("chown -R %d:%d '%s'", BT_DOCKER_UID, BT_DOCKER_UID,
		                                dir)), 0);
	w = bt_open_ok(dir, NULL);
	expect_refused(w, ".git/hooks/pre-commit");
	expect_refused(w, ".git/config");
	expect_refused(w, "not/yet/there/.git/hooks/pre-commit");
	expect_refused(w, "a/B/.GiT/config");
	expect_refused(w, "bare/hooks/post-receive");
	expect_refused(w, "bare/config");
	/* Edit of a file it may read, inside a git dir */
	args = bt_fmt("{\"file_path\":\"%s/.git/HEAD\"}", sbx_workspace_root(w));
	res = tool(w, "Read", args);
	ck_assert_msg(strstr(res, "\"ok\":true"), "Read: %s", res);
	sbx_free(res);
	free(args);
	args = bt_fmt("{\"file_path\":\"%s/.git/HEAD\",\"old_string\":\"ref\",\"new_string\":"
	              "\"xx\"}", sbx_workspace_root(w));
	res = tool(w, "Edit", args);
	ck_assert_msg(strstr(res, "\"ok\":false") && strstr(res, "inside a git directory"),
	              "Edit: %s", res);
	sbx_free(res);
	free(args);
	/* ordinary files still can be written */
	args = bt_fmt("{\"file_path\":\"%s/src/git.c\",\"content\":\"x\"}", sbx_workspace_root(w));
	res = tool(w, "Write", args);
	ck_assert_msg(strstr(res, "\"ok\":true"), "Write: %s", res);
	sbx_free(res);
	free(args);
	/* the report: guarded where commands are isolated */
	ck_assert_msg(strstr(quarantine_json(w), is_local() ? "\"guarded\":false"
	                                                    : "\"guarded\":true"),
	              "%.1500s", quarantine_json(w));
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	ck_assert_int_eq(host_sh(bt_tmp("test ! -e '%s/.git/hooks/pre-commit' && "
	                                "test ! -e '%s/bare/config'", dir, dir)), 0);
}
END_TEST

/* One case per test, so that CK_RUN_CASE=<name> runs one. */
static void add(Suite *s, const char *name, const TTest *test)
{
	TCase *t = tcase_create(name);

	tcase_add_checked_fixture(t, setup, NULL);
	tcase_set_timeout(t, 240);
	tcase_add_test(t, test);
	suite_add_tcase(s, t);
}

#define ADD(s, name) add(s, #name, name)

static Suite *git_guard_suite(void)
{
	Suite *s = suite_create("git_guard");

	ADD(s, write_and_edit_refuse_git_dirs_at_any_depth);
	if (!is_local()) {
		ADD(s, planted_hooks_and_config_never_run_at_the_root_or_three_deep);
		ADD(s, permission_games_do_not_hide_a_hook);
		ADD(s, a_flood_of_changes_falls_back_to_a_full_walk);
		ADD(s, a_repository_below_a_git_shaped_folder_is_found);
		ADD(s, a_git_shaped_root_still_has_its_new_folders_walked);
		ADD(s, the_root_made_a_bare_repository_is_checked);
		ADD(s, a_repository_forty_folders_down_is_found);
		ADD(s, a_git_dir_by_its_commondir_alone_is_checked);
		ADD(s, a_work_tree_file_the_users_config_includes_is_checked);
		ADD(s, a_hooks_path_in_the_work_tree_is_a_hooks_folder);
		ADD(s, commondir_modules_worktrees_gitdir_files_links_and_bare_repos);
		ADD(s, spawned_processes_the_bash_tool_reset_and_close_are_checked);
		ADD(s, a_forked_child_using_the_library_takes_no_event_from_its_parent);
	}
	/* The docker image has no git (the tests above lay repositories out by hand), and its
	 * container may not mount: detection only there, which the tests above prove. */
	if (has_git_inside()) {
		ADD(s, real_git_inside_plants_nothing_that_runs_on_the_host);
		ADD(s, ordinary_git_work_inside_keeps_working_on_the_host);
		ADD(s, existing_and_earlier_repositories_are_read_only_inside);
		ADD(s, binds_stop_at_256_repositories_and_detection_covers_the_rest);
		ADD(s, the_quarantine_of_a_capped_workspace_stays_bounded);
		ADD(s, the_state_folder_stays_read_only_whatever_protected_paths_says);
		ADD(s, the_inotify_instance_stays_empty_for_the_next_workspace);
	}
	return s;
}

int main(void)
{
	return bt_main(git_guard_suite);
}
