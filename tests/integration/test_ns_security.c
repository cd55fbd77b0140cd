/* Security tests of the sandbox backends (ns, and bwrap where the same claim holds): an
 * agent's command cannot see or touch the host beyond /workspace. Every test runs the attack
 * inside, through the public API, and asserts that it fails the expected way — and, where an
 * attack could have had an effect on the host, that the host shows none.
 *
 * Where an attack's failure could be an accident of the test (no route because the probe is
 * wrong, say), a positive control runs the same attack with the isolation switched off
 * (network "host") and shows that it then works.
 *
 * Nothing here is destructive if the isolation it tests were broken: writes go to new files
 * with unique names, "writes" to kernel knobs put back the value they read, and the fork bomb
 * is a bounded loop.
 *
 * The backend comes from SBX_TEST_BACKEND; the probe program (tests/probe/sbx-probe.c) from
 * SBX_TEST_PROBE. The sandbox sees only /workspace and the system directories, so the probe is
 * copied into the workspace through the file API. Runs as root and as an ordinary user
 * (tests/run-all.sh runs the integration suite again as one).
 *
 * A test marked KNOWN BUG fails because of a bug it found that is not fixed yet; its
 * assertions say what must hold, and stay as they are until the bug is fixed. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <agentsbx/agentsbx.h>
#include "backend_support.h"
#include "seccomp_walk.h"
#include "support.h"

#define SAFETY_TIMEOUT_MS 60000

static char *workdir;
static sbx_workspace *ws;

static void setup(void)
{
	bt_open_case_workspace(&workdir, &ws);
}

static void teardown(void)
{
	bt_close_case_workspace(&ws);
}

/* ---- helpers ------------------------------------------------------------------------------ */

/* Runs an attack; returns its result (caller frees). */
static sbx_result *attack(sbx_workspace *w, const char *cmd)
{
	sbx_exec_opts o = { .size = sizeof o, .timeout_ms = SAFETY_TIMEOUT_MS };

	return bt_shell(w, cmd, &o);
}

/* The attack must fail (non-zero exit, not a timeout), saying `why` on stderr. */
static void assert_attack_fails(sbx_workspace *w, const char *cmd, const char *why)
{
	sbx_result *res = attack(w, cmd);

	ck_assert_msg(sbx_result_timed_out(res) == 0, "`%s` hung", cmd);
	ck_assert_msg(sbx_result_exit_code(res) != 0, "`%s` succeeded inside the sandbox: %s",
	              cmd, sbx_result_stdout(res, NULL));
	ck_assert_msg(!why || strstr(sbx_result_stderr(res, NULL), why),
	              "`%s` failed, but not with \"%s\": %s", cmd, why,
	              sbx_result_stderr(res, NULL));
	sbx_result_free(res);
}

/* A copy (the caller frees it) of what the host sees at path, or NULL. */
static char *host_read(const char *path)
{
	const char *text = test_slurp(path);

	return text ? strdup(text) : NULL;
}

static void host_write(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	ck_assert_msg(fd >= 0, "create %s: %s", path, strerror(errno));
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static char *host_in(const char *dir, const char *rel)
{
	return bt_fmt("%s/%s", dir, rel);
}

/* ---- namespaces: processes, hostname, network -------------------------------------------- */

/* A host process with a marker, started by the test (killed by the caller). */
static pid_t start_host_sleep(const char *mark)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execlp("sleep", "sleep", mark, (char *)NULL);
		_exit(127);
	}
	ck_assert(bt_wait_for_process(mark, true));
	return pid;
}

static void stop_host_process(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

START_TEST(test_host_processes_invisible)
{
	const char *mark = bt_marker();
	pid_t host = start_host_sleep(mark);
	char *cmd, *out;
	sbx_result *res;

	/* Every process the sandbox can see is one of its own: its init, the command's runner,
	 * the shell and ps. The host has hundreds. */
	out = bt_shell_out(ws, "ps -e -o comm= | sort | uniq -c | awk '{print $2\":\"$1}'");
	for (char *save = NULL, *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		ck_assert_msg(!strncmp(l, "agentsbx-init:", 14) || !strncmp(l, "init:", 5) ||
		              !strncmp(l, "sh:", 3) || !strncmp(l, "ps:", 3) ||
		              !strncmp(l, "sort:", 5) || !strncmp(l, "uniq:", 5) ||
		              !strncmp(l, "awk:", 4) || !strncmp(l, "mawk:", 5),
		              "a process the sandbox did not start is visible: %s", l);
	free(out);
	/* Not by command line, not by its host pid: neither /proc nor kill reaches it. */
	out = bt_shell_out(ws, "cat /proc/[0-9]*/cmdline | tr '\\0' ' '");
	ck_assert_msg(!strstr(out, mark), "the host's process is listed inside: %s", out);
	free(out);
	cmd = bt_fmt("ls /proc/%d", (int)host);
	assert_attack_fails(ws, cmd, "No such file or directory");
	free(cmd);
	cmd = bt_fmt("kill -9 %d", (int)host);
	assert_attack_fails(ws, cmd, "No such process");
	free(cmd);
	ck_assert_msg(test_process_exists(mark), "the sandbox killed a host process");
	/* The sandbox numbers its own processes: the host's are in the thousands. */
	res = attack(ws, "echo $$");
	ck_assert_int_lt(atoi(sbx_result_stdout(res, NULL)), 100);
	sbx_result_free(res);
	stop_host_process(host);
}
END_TEST

START_TEST(test_hostname_is_the_sandboxs)
{
	char host_name[256] = "", now[256] = "", *extra, *out, *other = bt_mkdtemp();
	sbx_workspace *w;

	ck_assert_int_eq(gethostname(host_name, sizeof host_name), 0);
	out = bt_shell_out(ws, "hostname; cat /proc/sys/kernel/hostname");
	ck_assert_str_eq(out, "agentsbx\nagentsbx\n");
	ck_assert_str_ne(host_name, "agentsbx");
	free(out);
	extra = bt_fmt("\"%s\":{\"hostname\":\"sbx-test-box\"}", bt_backend());
	w = bt_open_ok(other, extra);
	out = bt_shell_out(w, "hostname");
	ck_assert_str_eq(out, "sbx-test-box\n");
	free(out);
	/* Renaming it needs CAP_SYS_ADMIN, and would rename only the sandbox anyway. */
	assert_attack_fails(w, "hostname evil-name", NULL);
	assert_attack_fails(w, "echo evil-name > /proc/sys/kernel/hostname", NULL);
	out = bt_shell_out(w, "hostname");
	ck_assert_str_eq(out, "sbx-test-box\n");
	free(out);
	ck_assert_int_eq(gethostname(now, sizeof now), 0);
	ck_assert_str_eq(now, host_name);
	sbx_workspace_close(w);
	free(extra);
}
END_TEST

/* A TCP server on all the host's addresses, and an abstract Unix socket (those belong to
 * the network namespace, not to the file system: the X11 escape). */
struct host_servers {
	int tcp, unix_fd;
	int port;
	char abstract_name[64];
	char address[INET_ADDRSTRLEN]; /* a non-loopback IPv4 address of the host, or "" */
};

static void first_external_ipv4(char *out, size_t len)
{
	struct ifaddrs *ifs = NULL;

	out[0] = '\0';
	if (getifaddrs(&ifs) != 0)
		return;
	for (struct ifaddrs *i = ifs; i && !out[0]; i = i->ifa_next) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)i->ifa_addr;

		if (a && a->sin_family == AF_INET && ntohl(a->sin_addr.s_addr) >> 24 != 127)
			inet_ntop(AF_INET, &a->sin_addr, out, (socklen_t)len);
	}
	freeifaddrs(ifs);
}

static struct host_servers start_host_servers(void)
{
	struct host_servers s = { .tcp = -1, .unix_fd = -1 };
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	socklen_t len = sizeof in;

	s.tcp = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s.tcp, 0);
	ck_assert_int_eq(bind(s.tcp, (struct sockaddr *)&in, sizeof in), 0);
	ck_assert_int_eq(listen(s.tcp, 16), 0);
	ck_assert_int_eq(getsockname(s.tcp, (struct sockaddr *)&in, &len), 0);
	s.port = ntohs(in.sin_port);
	snprintf(s.abstract_name, sizeof s.abstract_name, "agentsbx-test-%d", (int)getpid());
	memcpy(un.sun_path + 1, s.abstract_name, strlen(s.abstract_name));
	s.unix_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s.unix_fd, 0);
	ck_assert_int_eq(bind(s.unix_fd, (struct sockaddr *)&un,
	                      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
	                                  strlen(s.abstract_name))), 0);
	ck_assert_int_eq(listen(s.unix_fd, 16), 0);
	first_external_ipv4(s.address, sizeof s.address);
	return s;
}

/* How many connections are waiting on a listening socket (accepts and closes them). */
static int drain_connections(int listener)
{
	int n = 0, c;

	while ((c = accept4(listener, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		close(c);
		n++;
	}
	return n;
}

static char *tcp_connect_cmd(const char *address, int port)
{
	return bt_fmt("bash -c 'exec 3<>/dev/tcp/%s/%d' && echo connected", address, port);
}

static char *abstract_connect_cmd(const char *name)
{
	return bt_fmt("perl -MSocket -e 'socket(S, AF_UNIX, SOCK_STREAM, 0) or die; "
	              "connect(S, pack_sockaddr_un(\"\\0%s\")) or die \"connect: $!\\n\"' "
	              "&& echo connected", name);
}

/* The attacks of the network test against w; returns how many connected. */
static int network_attacks(sbx_workspace *w, const struct host_servers *s, bool expect_refused)
{
	char *cmds[3] = { tcp_connect_cmd("127.0.0.1", s->port),
	                  s->address[0] ? tcp_connect_cmd(s->address, s->port) : NULL,
	                  abstract_connect_cmd(s->abstract_name) };
	int connected = 0;

	for (size_t i = 0; i < 3; i++) {
		sbx_result *res;

		if (!cmds[i])
			continue;
		res = attack(w, cmds[i]);
		ck_assert_int_eq(sbx_result_timed_out(res), 0);
		if (strcmp(sbx_result_stdout(res, NULL), "connected\n") == 0)
			connected++;
		else if (expect_refused)
			ck_assert_msg(strstr(sbx_result_stderr(res, NULL), "refused") ||
			              strstr(sbx_result_stderr(res, NULL), "unreachable"),
			              "`%s` failed in an unexpected way: %s", cmds[i],
			              sbx_result_stderr(res, NULL));
		sbx_result_free(res);
		free(cmds[i]);
	}
	return connected;
}

START_TEST(test_no_network_but_loopback)
{
	struct host_servers s = start_host_servers();
	char *other = bt_mkdtemp(), *out;
	sbx_workspace *shared;

	if (!s.address[0])
		fprintf(stderr, "note: the host has no non-loopback IPv4 address to try\n");
	out = bt_shell_out(ws, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
	ck_assert_str_eq(out, "lo\n");
	free(out);
	/* The sandbox's loopback is its own and up: a server inside is reachable inside. */
	out = bt_shell_out(ws, "perl -MSocket -e 'socket(L, AF_INET, SOCK_STREAM, 0) or die; "
	                       "bind(L, pack_sockaddr_in(0, inet_aton(\"127.0.0.1\"))) or die; "
	                       "listen(L, 1) or die; socket(C, AF_INET, SOCK_STREAM, 0) or die; "
	                       "connect(C, getsockname(L)) or die \"connect: $!\"; "
	                       "print \"loopback ok\\n\"'");
	ck_assert_str_eq(out, "loopback ok\n");
	free(out);
	ck_assert_int_eq(network_attacks(ws, &s, true), 0);
	ck_assert_int_eq(drain_connections(s.tcp), 0);
	ck_assert_int_eq(drain_connections(s.unix_fd), 0);

	/* Positive control: with the host's network the very same attacks get through. */
	shared = bt_open_ok(other, "\"network\":{\"mode\":\"host\"}");
	ck_assert_int_eq(network_attacks(shared, &s, false), s.address[0] ? 3 : 2);
	ck_assert_int_eq(drain_connections(s.tcp), s.address[0] ? 2 : 1);
	ck_assert_int_eq(drain_connections(s.unix_fd), 1);
	sbx_workspace_close(shared);
	close(s.tcp);
	close(s.unix_fd);
}
END_TEST

/* ---- the file system ---------------------------------------------------------------------- */

START_TEST(test_host_secrets_absent)
{
	char *secret_dir = bt_mkdtemp(), *secret = host_in(secret_dir, "secret.txt"), *cmd;
	const char *build = getenv("SBX_TEST_BUILD_ROOT");

	host_write(secret, "host secret\n");
	assert_attack_fails(ws, "cat /etc/shadow", "No such file or directory");
	assert_attack_fails(ws, "cat /etc/gshadow", "No such file or directory");
	assert_attack_fails(ws, "ls /etc/sudoers /etc/sudoers.d", "No such file or directory");
	assert_attack_fails(ws, "ls /etc/ssh", "No such file or directory");
	/* /root and /var are the sandbox's own, empty (issue 17): none of the host's dotfiles,
	 * homes, logs or package state. */
	assert_attack_fails(ws, "cat /root/.bashrc /root/.profile /root/.gitconfig",
	                    "No such file or directory");
	assert_attack_fails(ws, "ls /var/log /var/lib/dpkg /var/spool /var/run/docker.sock",
	                    "No such file or directory");
	{
		char *out = bt_shell_out(ws, "find /root /srv /mnt /var/lib -mindepth 1");

		ck_assert_msg(!*out, "host entries inside: %s", out);
		free(out);
	}
	/* /home holds only the workspace's private HOME (no host user's home): this user's name,
	 * its folder the state folder's home/, nothing of the host's in it. */
	struct passwd *pw = getpwuid(geteuid());
	char *home = bt_shell_out(ws, "ls -A /home; echo; ls -A \"$HOME\" | grep -v -e '^\\.config$' || true");
	ck_assert_str_eq(home, bt_tmp("%s\n\n", pw ? pw->pw_name : "user"));
	free(home);
	/* Host paths outside the workspace do not exist inside: not the test's temporary
	 * directory, not the build tree, not the real workdir path. */
	cmd = bt_fmt("cat %s", secret);
	assert_attack_fails(ws, cmd, "No such file or directory");
	free(cmd);
	if (build) {
		cmd = bt_fmt("ls %s", build);
		assert_attack_fails(ws, cmd, "No such file or directory");
		free(cmd);
	}
	cmd = bt_fmt("ls %s", workdir);
	assert_attack_fails(ws, cmd, "No such file or directory");
	free(cmd);
	free(secret);
}
END_TEST

/* New files with unique names: harmless if the attack worked, and visible on the host. */
START_TEST(test_system_dirs_read_only)
{
	static const char *const dirs[] = { "/usr", "/usr/bin", "/etc", "", "/bin", "/lib",
	                                    "/sbin", NULL };
	const char *mark = bt_marker();

	for (size_t i = 0; dirs[i]; i++) {
		char *path = bt_fmt("%s/agentsbx-escape-%s", dirs[i], mark);
		char *cmd = bt_fmt("echo x > %s", path);
		char *mk = bt_fmt("mkdir %s", path);

		if (dirs[i][0] && !test_exists(dirs[i])) {
			free(path);
			free(cmd);
			free(mk);
			continue;
		}
		assert_attack_fails(ws, cmd, NULL);
		assert_attack_fails(ws, mk, NULL);
		ck_assert_msg(!test_exists(path), "%s appeared on the host", path);
		free(path);
		free(cmd);
		free(mk);
	}
	/* Existing files: opened for writing (nothing written) must already fail. */
	assert_attack_fails(ws, ": >> /etc/passwd", NULL);
	assert_attack_fails(ws, ": >> /bin/sh", NULL);
	assert_attack_fails(ws, "touch -c -r /usr/bin/env /usr/bin/env", NULL); /* same mtime */
}
END_TEST

START_TEST(test_writes_land_only_in_the_workspace)
{
	const char *mark = bt_marker();
	char *cmd = bt_fmt("echo in-tmp > /tmp/agentsbx-%s && echo in-shm > /dev/shm/agentsbx-%s "
	                   "&& echo in-ws > %s/agentsbx-%s && cat /tmp/agentsbx-%s",
	                   mark, mark, sbx_workspace_root(ws), mark, mark);
	char *host_tmp = bt_fmt("/tmp/agentsbx-%s", mark);
	char *host_shm = bt_fmt("/dev/shm/agentsbx-%s", mark);
	char *in_ws = bt_fmt("%s/agentsbx-%s", workdir, mark), *out, *got;

	out = bt_shell_out(ws, cmd);
	ck_assert_str_eq(out, "in-tmp\n"); /* the sandbox has a /tmp: it is its own */
	ck_assert_msg(!test_exists(host_tmp), "a write to /tmp inside reached the host's");
	ck_assert_msg(!test_exists(host_shm), "a write to /dev/shm reached the host's");
	got = host_read(in_ws);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, "in-ws\n");
	free(got);
	free(out);
	free(cmd);
	free(host_tmp);
	free(host_shm);
	free(in_ws);
}
END_TEST

/* /dev holds only the fresh nodes; the kernel's global knobs in /proc stay shut. The knob
 * writes put back what they read, and the sysrq trigger is only opened: harmless either way. */
START_TEST(test_no_host_devices_or_kernel_knobs)
{
	char *out = bt_shell_out(ws, "ls /dev | sort | tr '\\n' ' '");
	static const char *const allowed[] = { "console", "core", "fd", "full", "null", "ptmx",
	                                       "pts", "random", "shm", "stderr", "stdin", "stdout",
	                                       "tty", "urandom", "zero", "mqueue", NULL };

	for (char *save = NULL, *n = strtok_r(out, " ", &save); n; n = strtok_r(NULL, " ", &save)) {
		bool ok = false;

		for (size_t i = 0; allowed[i] && !ok; i++)
			ok = strcmp(n, allowed[i]) == 0;
		ck_assert_msg(ok, "/dev/%s is visible in the sandbox", n);
	}
	free(out);
	assert_attack_fails(ws, "head -c 1 /dev/mem", NULL);
	assert_attack_fails(ws, "mknod /workspace/disk b 8 0", NULL);
	assert_attack_fails(ws, "mknod /tmp/null c 1 3", NULL);
	assert_attack_fails(ws, "cat /proc/sys/kernel/core_pattern > /tmp/cp && "
	                        "cat /tmp/cp > /proc/sys/kernel/core_pattern", NULL);
	assert_attack_fails(ws, ": > /proc/sysrq-trigger", NULL);
	assert_attack_fails(ws, "cat /proc/kmsg", NULL);
	assert_attack_fails(ws, "dmesg", NULL);
}
END_TEST

/* A .git with config and hooks, made on the host before the sandbox starts. */
static sbx_workspace *open_with_git(const char *dir, bool with_hooks, bool with_config)
{
	char *git = host_in(dir, ".git"), *hooks = host_in(dir, ".git/hooks");
	char *config = host_in(dir, ".git/config");

	ck_assert_int_eq(mkdir(git, 0755), 0);
	if (with_hooks)
		ck_assert_int_eq(mkdir(hooks, 0755), 0);
	if (with_config)
		host_write(config, "[core]\n\tbare = false\n");
	free(git);
	free(hooks);
	free(config);
	return bt_open_ok(dir, NULL);
}

/* What a host `git` would run or read: after the attacks, exactly as before. */
static void assert_git_untouched(const char *dir, bool had_config)
{
	char *config = host_in(dir, ".git/config"), *aside = host_in(dir, ".git-aside");
	char *hook = host_in(dir, ".git/hooks/pre-commit"), *got = host_read(config);

	if (had_config) {
		ck_assert_ptr_nonnull(got);
		ck_assert_str_eq(got, "[core]\n\tbare = false\n");
	}
	ck_assert_msg(!test_exists(hook), "a hook was planted in the host's .git");
	ck_assert_msg(!test_exists(aside), ".git was moved aside on the host");
	free(got);
	free(config);
	free(aside);
	free(hook);
}

START_TEST(test_protected_git_paths_read_only)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w = open_with_git(dir, true, true);

	assert_attack_fails(w, "echo '[core] hooksPath = /tmp' >> .git/config", NULL);
	assert_attack_fails(w, "echo evil > .git/hooks/pre-commit", NULL);
	assert_attack_fails(w, "rm -rf .git/hooks", NULL);
	assert_attack_fails(w, "rm -f .git/config", NULL);
	assert_attack_fails(w, "mv .git/hooks .git/hooks-old", NULL);
	assert_attack_fails(w, "mv .git/config .git/config-old", NULL);
	assert_attack_fails(w, "ln -sfn /tmp .git/hooks", NULL);
	/* The parent moved aside and a fresh one made in its place: what the host's git would
	 * find next time is the attacker's. */
	assert_attack_fails(w, "mv .git .git-aside && mkdir -p .git/hooks && "
	                       "echo evil > .git/hooks/pre-commit", NULL);
	assert_git_untouched(dir, true);
	/* The rest of .git stays writable: git inside still works. */
	free(bt_shell_out(w, "touch .git/index.lock && rm .git/index.lock"));
	sbx_workspace_close(w);
}
END_TEST

START_TEST(test_missing_git_hooks_cannot_be_created)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w = open_with_git(dir, false, true);

	assert_attack_fails(w, "mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit", NULL);
	assert_attack_fails(w, "mv .git .git-aside && mkdir -p .git/hooks && "
	                       "echo evil > .git/hooks/pre-commit", NULL);
	assert_git_untouched(dir, true);
	sbx_workspace_close(w);
}
END_TEST

/* In a git worktree .git is a file naming the real git directory: rewritten, it would point
 * the host's git at a directory the agent filled. */
START_TEST(test_worktree_git_file_read_only)
{
	char *dir = bt_mkdtemp(), *git = host_in(dir, ".git"), *got;
	sbx_workspace *w;

	host_write(git, "gitdir: /elsewhere/.git/worktrees/wt\n");
	w = bt_open_ok(dir, NULL);
	assert_attack_fails(w, "echo 'gitdir: /workspace/evil' > .git", NULL);
	assert_attack_fails(w, "rm -f .git", NULL);
	assert_attack_fails(w, "mv .git .git-aside && echo 'gitdir: /workspace/evil' > .git", NULL);
	got = host_read(git);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, "gitdir: /elsewhere/.git/worktrees/wt\n");
	free(got);
	sbx_workspace_close(w);
	free(git);
}
END_TEST

/* A .git that is a symlink out of the workspace (planted on the host, or by an earlier
 * session) must not make the sandbox's setup bind what it points to. */
START_TEST(test_symlinked_git_not_followed)
{
	char *dir = bt_mkdtemp(), *outside = bt_mkdtemp();
	char *hooks = host_in(outside, "hooks"), *secret = host_in(outside, "hooks/host-hook");
	char *config = host_in(outside, "config"), *link = host_in(dir, ".git");
	sbx_workspace *w;

	ck_assert_int_eq(mkdir(hooks, 0755), 0);
	host_write(secret, "HOST-HOOK-CONTENT\n");
	host_write(config, "HOST-CONFIG-CONTENT\n");
	ck_assert_int_eq(symlink(outside, link), 0);
	w = bt_open_ok(dir, NULL);
	assert_attack_fails(w, "cat .git/hooks/host-hook", NULL);
	assert_attack_fails(w, "cat .git/config", NULL);
	assert_attack_fails(w, "grep -r HOST- / --exclude-dir=proc --exclude-dir=sys "
	                       "--exclude-dir=usr 2>/dev/null", NULL);
	sbx_workspace_close(w);
	free(hooks);
	free(secret);
	free(config);
	free(link);
}
END_TEST

/* The library's own state: the sandbox must not forge what the library believes. */
START_TEST(test_state_dir_read_only)
{
	char *forged = host_in(workdir, ".agentsbx/forged");

	assert_attack_fails(ws, "touch .agentsbx/forged", NULL);
	assert_attack_fails(ws, "rm -rf .agentsbx", NULL);
	assert_attack_fails(ws, "mv .agentsbx .agentsbx-old && mkdir .agentsbx && "
	                        "touch .agentsbx/forged", NULL);
	ck_assert(!test_exists(forged));
	free(forged);
}
END_TEST

/* DESIGN.md §4 and issue 3: protected paths "cannot be created if missing". A missing
 * .git/config (with .git present), shell rc files and .mcp.json are files a host program
 * would later read and act on. */
START_TEST(test_missing_protected_files_cannot_be_created)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w = open_with_git(dir, true, false);
	static const char *const files[] = { ".git/config", ".bashrc", ".profile", ".mcp.json",
	                                     NULL };

	for (size_t i = 0; files[i]; i++) {
		char *cmd = bt_fmt("echo planted > %s && grep -q planted %s", files[i], files[i]);
		char *host = host_in(dir, files[i]), *got;

		assert_attack_fails(w, cmd, NULL);
		got = host_read(host);
		ck_assert_msg(!got || !strstr(got, "planted"), "%s planted on the host", files[i]);
		free(got);
		free(host);
		free(cmd);
	}
	sbx_workspace_close(w);
}
END_TEST

/* The protection holds for the whole life of the workspace, resets included. */
START_TEST(test_protection_survives_reset)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w = open_with_git(dir, true, true);

	ck_assert_int_eq(sbx_workspace_reset(w), 0);
	assert_attack_fails(w, "echo evil > .git/hooks/pre-commit", NULL);
	assert_attack_fails(w, "mv .git .git-aside && mkdir -p .git/hooks && "
	                       "echo evil > .git/hooks/pre-commit", NULL);
	assert_attack_fails(w, "touch .agentsbx/forged", NULL);
	assert_git_untouched(dir, true);
	sbx_workspace_close(w);
}
END_TEST

/* A temporary workspace is emptied by reset: its protection must come back with it (the
 * emptying once came after the restart and took the placeholders from under its mounts). */
START_TEST(test_protection_survives_reset_of_temporary_workspace)
{
	const char *cmd = "mkdir -p .agentsbx && touch .agentsbx/forged";
	sbx_workspace *temp = bt_open_ok(NULL, NULL);
	sbx_result *before = attack(temp, cmd), *after;

	ck_assert_int_eq(sbx_workspace_reset(temp), 0);
	after = attack(temp, cmd);
	/* Closed before the checks: its temporary workdir must not outlive a failure. */
	sbx_workspace_close(temp);
	ck_assert_msg(sbx_result_exit_code(before) != 0, "`%s` succeeded before the reset", cmd);
	ck_assert_msg(sbx_result_exit_code(after) != 0, "`%s` succeeded after the reset", cmd);
	sbx_result_free(before);
	sbx_result_free(after);
}
END_TEST

/* ---- process hardening -------------------------------------------------------------------- */

/* Copies the probe into the workspace (the sandbox sees nothing else of the host). */
static void install_probe(sbx_workspace *w)
{
	bt_install_program(w, "SBX_TEST_PROBE", "sbx-probe");
}

/* Runs the probe inside and returns its report (caller frees). A sanitizer build's probe
 * would have LeakSanitizer ptrace it at exit, which the sandbox refuses by design. */
static char *run_probe(sbx_workspace *w, const char *args)
{
	char *cmd = bt_fmt("ASAN_OPTIONS=detect_leaks=0 ./sbx-probe %s", args);
	sbx_result *res = attack(w, cmd);
	char *out;

	ck_assert_msg(sbx_result_exit_code(res) == 0, "sbx-probe %s: exit %d, signal %d: %s%s",
	              args, sbx_result_exit_code(res), sbx_result_signal(res),
	              sbx_result_stdout(res, NULL), sbx_result_stderr(res, NULL));
	out = strdup(sbx_result_stdout(res, NULL));
	sbx_result_free(res);
	free(cmd);
	return out;
}

/* The value the probe reported for key ("KEY value" lines), or NULL. Caller frees. */
static char *probe_value(const char *out, const char *key)
{
	size_t klen = strlen(key);

	for (const char *line = out; line && *line;) {
		const char *next = strchr(line, '\n');

		if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
			return strndup(line + klen + 1, strcspn(line + klen + 1, "\n"));
		line = next ? next + 1 : NULL;
	}
	return NULL;
}

static void assert_probe(const char *out, const char *key, const char *want)
{
	char *got = probe_value(out, key);

	ck_assert_msg(got, "no report for %s in:\n%s", key, out);
	ck_assert_msg(strcmp(got, want) == 0, "%s: got %s, want %s", key, got, want);
	free(got);
}

/* DESIGN.md §4's deny-list, each rule as sbx-probe names it. */
static const char *const refused_with_eperm[] = {
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "keyctl", "add_key",
	"request_key", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
	"io_uring_enter", "io_uring_register", "open_by_handle_at", "kexec_load",
	"kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon",
	"swapoff", "acct", "syslog", "mount", "umount", "umount2", "pivot_root", "chroot",
	"fsopen", "fsconfig", "fsmount", "move_mount", "open_tree", "fspick", "mount_setattr",
	"setns", "clone-newuser", "clone-newns", "clone-newpid", "clone-newnet", "clone-newipc",
	"clone-newuts", "clone-newcgroup", "unshare-newuser", "unshare-newns", "unshare-newpid",
	"unshare-newnet", "unshare-newipc", "unshare-newuts", "unshare-newcgroup",
	"unshare-newtime", "unshare-files",
	/* ioctl and socket compared on the low 32 bits: the high-bits bypass of CVE-2019-10063
	 * must be refused as well. */
	"tiocsti", "tiocsti-high", "tioclinux", "tioclinux-high", "vsock", "vsock-high",
	"family-vsock-high", "family-alg-high", NULL,
};
/* The 32-bit tables are refused whole, getpid too, where the kernel has them. */
static const char *const ia32_refused[] = {
	"ia32-getpid", "ia32-ptrace", "ia32-mount", "ia32-umount", "ia32-unshare-newuser",
	"ia32-clone-newuser", "ia32-tiocsti", "ia32-vsock", "ia32-socketcall-vsock", NULL,
};
/* What the filter must leave alone. */
static const char *const must_work[] = {
	"fork", "clone", "getpid", "socket-inet", "socket-unix", "ioctl-tiocgwinsz",
	"ioctl-fionread", "personality-query", "netlink-raw-0", NULL,
};

static char *join_names(const char *const *lists[], size_t n)
{
	size_t len = 1;
	char *s;

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; lists[i][j]; j++)
			len += strlen(lists[i][j]) + 1;
	s = calloc(1, len);
	ck_assert_ptr_nonnull(s);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; lists[i][j]; j++)
			strcat(strcat(s, " "), lists[i][j]);
	return s;
}

START_TEST(test_every_seccomp_rule_refused)
{
	static const char *const extra[] = { "clone3", "x32-ptrace", NULL };
	const char *const *lists[] = { refused_with_eperm, ia32_refused, must_work, extra };
	char *names = join_names(lists, 4), *args = bt_fmt("syscall%s", names);
	char *out, *v;
	bool ia32;

	install_probe(ws);
	out = run_probe(ws, args);
	for (size_t i = 0; refused_with_eperm[i]; i++) {
		v = probe_value(out, refused_with_eperm[i]);
		if (v && strcmp(v, "absent") == 0)
			fprintf(stderr, "note: %s does not exist on this architecture\n",
			        refused_with_eperm[i]);
		else
			assert_probe(out, refused_with_eperm[i], "EPERM");
		free(v);
	}
	/* clone3's flags live behind a pointer: ENOSYS sends libc back to clone. */
	assert_probe(out, "clone3", "ENOSYS");
	/* A kernel without ia32 emulation answers `int $0x80` with SIGSEGV before any filter. */
	v = probe_value(out, "ia32-getpid");
	ia32 = !v || strcmp(v, "signal-SIGSEGV") != 0;
	if (!ia32)
		fprintf(stderr, "note: no 32-bit system calls on this kernel (ia32-getpid: %s)\n", v);
	free(v);
	for (size_t i = 0; ia32 && ia32_refused[i]; i++)
		assert_probe(out, ia32_refused[i], "EPERM");
#if defined(__x86_64__)
	assert_probe(out, "x32-ptrace", "EPERM");
#endif
	for (size_t i = 0; must_work[i]; i++)
		assert_probe(out, must_work[i], "OK");
	free(out);
	free(args);
	free(names);
}
END_TEST

/* The whole Docker-profile table, syscall by syscall (tests/probe/baseline.c): every call
 * we refuse answers EPERM (clone3 ENOSYS), every number without a row EPERM up to the
 * table's highest and ENOSYS above it, and the allowed controls reach the kernel (EFAULT on
 * a bad pointer). Every call that got through is reported, not only the first. */
START_TEST(test_seccomp_baseline_walk)
{
	char *out, *report;

	install_probe(ws);
	out = run_probe(ws, "baseline");
	report = seccomp_walk_check(out, "EPERM", "ENOSYS", NULL);
	ck_assert_msg(!report, "the walk of the seccomp table:\n%s", report);
	ck_assert_int_ge(seccomp_walk_controls(out), 40);
	free(out);
}
END_TEST

/* The calls issue 15 found reachable in ns and refused by Docker, named here rather than
 * taken from the table: the walk's lines for them, and the argument probes. */
START_TEST(test_issue_15_calls_refused)
{
	static const char *const rows[] = { "quotactl", "quotactl_fd", "settimeofday",
	                                    "clock_settime", "clock_adjtime", "process_madvise",
	                                    "migrate_pages", NULL };
	static const char *const args[] = { "personality-addr-no-randomize",
	                                    "personality-read-implies-exec", "mknodat-chr",
	                                    "mknodat-blk", "mknod-chr", NULL };
	const char *const *lists[] = { args };
	char *names = join_names(lists, 1), *cmd = bt_fmt("syscall%s", names), *out;

	install_probe(ws);
	out = run_probe(ws, "baseline");
	for (size_t i = 0; rows[i]; i++) {
		char *key = bt_fmt("row %s", rows[i]);

		assert_probe(out, key, "EPERM");
		free(key);
	}
	free(out);
	out = run_probe(ws, cmd);
	for (size_t i = 0; args[i]; i++)
		assert_probe(out, args[i], "EPERM");
	free(out);
	/* As programs meet it: ASLR cannot be switched off for a child. */
	assert_attack_fails(ws, "setarch \"$(uname -m)\" -R true", "Operation not permitted");
	assert_attack_fails(ws, "mknod /tmp/null c 1 3", "Operation not permitted");
	free(bt_shell_out(ws, "mkfifo /tmp/fifo && test -p /tmp/fifo"));
	free(cmd);
	free(names);
}
END_TEST

/* socket(AF_NETLINK) for NETLINK_ROUTE only: every other protocol number is refused (with an
 * invalid type, so that a socket let through would load no module), the five the escape probe
 * opened are refused as real sockets too, and route works (ip, getaddrinfo). */
START_TEST(test_netlink_only_route)
{
	static const char *const five[] = { "netlink-raw-12", "netlink-raw-9", "netlink-raw-15",
	                                    "netlink-raw-4", "netlink-raw-16", NULL };
	char *cmd = strdup("syscall netlink-raw-0 netlink-route-high netlink-netfilter-high"), *out;

	for (int p = 0; p < 32; p++) {
		char *longer = bt_fmt("%s netlink-%d", cmd, p);

		free(cmd);
		cmd = longer;
	}
	for (size_t i = 0; five[i]; i++) {
		char *longer = bt_fmt("%s %s", cmd, five[i]);

		free(cmd);
		cmd = longer;
	}
	install_probe(ws);
	out = run_probe(ws, cmd);
	assert_probe(out, "netlink-raw-0", "OK");
	assert_probe(out, "netlink-0", "EINVAL");            /* allowed: the kernel's answer */
	assert_probe(out, "netlink-route-high", "EINVAL");
	assert_probe(out, "netlink-netfilter-high", "EPERM");
	for (int p = 1; p < 32; p++) {
		char *key = bt_fmt("netlink-%d", p);

		assert_probe(out, key, "EPERM");
		free(key);
	}
	for (size_t i = 0; five[i]; i++)
		assert_probe(out, five[i], "EPERM");
	free(out);
	free(cmd);
	if (test_exists("/usr/sbin/ip") || test_exists("/sbin/ip") || test_exists("/usr/bin/ip")) {
		out = bt_shell_out(ws, "ip -o link show lo | cut -d: -f2 | tr -d ' '");
		ck_assert_str_eq(out, "lo\n");
		free(out);
	} else {
		fprintf(stderr, "note: no ip(8) here: getaddrinfo shows route instead\n");
	}
	out = bt_shell_out(ws, "getent ahosts localhost | head -1 | cut -d' ' -f1");
	ck_assert_msg(!strcmp(out, "127.0.0.1\n") || !strcmp(out, "::1\n"), "getent: %s", out);
	free(out);
}
END_TEST

/* Socket families: unix, inet, inet6 and netlink reach the kernel; every other family number
 * (AF_PACKET, AF_ALG, AF_VSOCK, AF_XDP, ... and numbers past AF_MAX) is refused. */
START_TEST(test_socket_families_refused)
{
	char *cmd = strdup("syscall"), *out;

	for (int f = 0; f < 64; f++) {
		char *longer = bt_fmt("%s family-%d", cmd, f);

		free(cmd);
		cmd = longer;
	}
	install_probe(ws);
	out = run_probe(ws, cmd);
	for (int f = 0; f < 64; f++) {
		char *key = bt_fmt("family-%d", f);
		bool allowed = f == AF_UNIX || f == AF_INET || f == AF_INET6 || f == AF_NETLINK;

		assert_probe(out, key, allowed ? "EINVAL" : "EPERM");
		free(key);
	}
	free(out);
	free(cmd);
}
END_TEST

START_TEST(test_no_capabilities_nnp_seccomp)
{
	char *out, *v;
	unsigned bits;

	install_probe(ws);
	out = run_probe(ws, "caps nnp securebits");
	assert_probe(out, "CapInh", "0000000000000000");
	assert_probe(out, "CapPrm", "0000000000000000");
	assert_probe(out, "CapEff", "0000000000000000");
	assert_probe(out, "CapBnd", "0000000000000000");
	assert_probe(out, "CapAmb", "0000000000000000");
	assert_probe(out, "nnp", "1");
	/* The empty bounding set already means no exec can grant a capability. Where the sandbox
	 * has a uid 0 (the caller is root: ids map to themselves), SECBIT_NOROOT and its lock
	 * say so a second time. (Without CAP_SETPCAP — an ordinary user under bubblewrap — the
	 * init cannot set securebits, and there is no uid 0 inside to need them.) */
	v = probe_value(out, "securebits");
	ck_assert_ptr_nonnull(v);
	bits = (unsigned)strtoul(v, NULL, 16);
	if (geteuid() == 0)
		ck_assert_msg((bits & 0x3) == 0x3, "securebits %s: NOROOT not set and locked", v);
	free(v);
	free(out);
	out = bt_shell_out(ws, "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status | tr -d '\\t'");
	ck_assert_str_eq(out, "NoNewPrivs:1\nSeccomp:2\n");
	free(out);
}
END_TEST

static bool is_setuid_root(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && (st.st_mode & S_ISUID) && st.st_uid == 0;
}

START_TEST(test_no_setuid_escalation)
{
	char *want, *out;

	/* A setuid copy we own: as root it would regain capabilities but for NOROOT. A root-run
	 * sandbox may not set the bit itself (docs/security.md, "No set-id files"): the host
	 * sets it there, and the sandbox's root owns the copy all the same. */
	install_probe(ws);
	out = bt_shell_out(ws, "cp sbx-probe suid-probe && echo copied");
	free(out);
	char *copy = host_in(workdir, "suid-probe");
	ck_assert_int_eq(chmod(copy, 04755), 0);
	free(copy);
	out = bt_shell_out(ws, "test -u suid-probe && "
	                       "ASAN_OPTIONS=detect_leaks=0 ./suid-probe caps nnp");
	assert_probe(out, "CapEff", "0000000000000000");
	assert_probe(out, "CapPrm", "0000000000000000");
	assert_probe(out, "nnp", "1");
	free(out);
	/* su: refused whoever asks. */
	assert_attack_fails(ws, "su root -c 'id -u'", NULL);
	/* A host setuid-root program runs as the caller, without capabilities: mount, stopped
	 * at its first write (newgrp, which waited on stdin for that before, now ends at once:
	 * its audit socket, NETLINK_AUDIT, is refused). */
	TEST_NEED(TEST_CAP_TOOLS, is_setuid_root("/usr/bin/mount"),
	          "the last part runs the host's setuid-root /usr/bin/mount, which is not here");
	out = run_probe(ws, "setuid-status /usr/bin/mount");
	assert_probe(out, "setuid-state", "T (stopped)");
	want = bt_fmt("%u %u %u %u", (unsigned)getuid(), (unsigned)getuid(), (unsigned)getuid(),
	              (unsigned)getuid());
	assert_probe(out, "setuid-Uid", want);
	assert_probe(out, "setuid-CapEff", "0000000000000000");
	free(want);
	free(out);
}
END_TEST

/* A careless host holds fds without O_CLOEXEC: a secret file, a directory outside the
 * workspace, a socket. None may reach any process in the sandbox — not the command, and not
 * the sandbox's own init, whose /proc/1/fd a command could otherwise open. */
START_TEST(test_no_host_fd_reaches_the_sandbox)
{
	char *secret_dir = bt_mkdtemp(), *secret = host_in(secret_dir, "host-secret-file");
	char *other = bt_mkdtemp(), *out;
	int file, dirfd, sv[2];
	sbx_workspace *w;

	host_write(secret, "TOP-SECRET-HOST-DATA\n");
	file = open(secret, O_RDONLY);
	dirfd = open(secret_dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(file, 0);
	ck_assert_int_ge(dirfd, 0);
	ck_assert_int_eq(dup2(file, 40), 40);
	ck_assert_int_eq(dup2(dirfd, 41), 41);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	w = bt_open_ok(other, NULL);
	out = bt_shell_out(w, "ls /proc/self/fd | tr '\\n' ' '");
	ck_assert_str_eq(out, "0 1 2 3 "); /* 3: the directory ls reads */
	free(out);
	/* Every fd of every process the sandbox can see, followed where it leads. */
	out = bt_shell_out(w, "for f in /proc/[0-9]*/fd/*; do t=$(readlink $f) || continue; "
	                      "echo \"$f -> $t\"; "
	                      "case $t in pipe:*|socket:*|anon_inode:*) continue;; esac; "
	                      "head -c 100 $f 2>/dev/null; ls $f/ 2>/dev/null; done; true");
	ck_assert_msg(!strstr(out, "TOP-SECRET"), "a host file is readable inside:\n%s", out);
	ck_assert_msg(!strstr(out, "host-secret-file"), "a host directory is listable inside:\n%s",
	              out);
	ck_assert_msg(!strstr(out, secret_dir), "a host fd is visible inside:\n%s", out);
	free(out);
	sbx_workspace_close(w);
	close(file);
	close(dirfd);
	close(40);
	close(41);
	close(sv[0]);
	close(sv[1]);
	free(secret);
}
END_TEST

/* The sandbox's init (PID 1) and the runner of each command run as the commands' uid; they
 * hold the channel to the host library and every command's stdio. A command must not reach
 * into them through /proc: not their fds, not their environment or memory map, and above all
 * not their memory for writing — Landlock happens to refuse that open, so the test also runs
 * without it ("landlock": false, as on a kernel that has none). */
static void assert_init_unreachable(sbx_workspace *w)
{
	static const char *const attacks[] = {
		/* (As root inside, the fd numbers can be listed — the directory is root's — but
		 * not followed.) */
		"readlink /proc/1/fd/3", "head -c 1 /proc/1/fd/0", "cat /proc/1/environ",
		"cat /proc/1/maps",
		"perl -e 'open(M, \"+<\", \"/proc/1/mem\") or die \"open: $!\\n\"'",
		"perl -e 'open(M, \"<\", \"/proc/1/mem\") or die \"open: $!\\n\"'",
		"readlink /proc/$PPID/fd/3", /* the command's own runner */
		"perl -e 'open(M, \"+<\", $ARGV[0]) or die \"$!\\n\"' /proc/$PPID/mem",
		NULL,
	};

	for (size_t i = 0; attacks[i]; i++)
		assert_attack_fails(w, attacks[i], NULL);
}

START_TEST(test_init_unreachable_from_commands)
{
	char *other = bt_mkdtemp(), *extra = bt_fmt("\"%s\":{\"landlock\":false}", bt_backend());
	sbx_workspace *w;

	assert_init_unreachable(ws);
	w = bt_open_ok(other, extra);
	assert_init_unreachable(w);
	sbx_workspace_close(w);
	free(extra);
}
END_TEST

/* ---- resources ---------------------------------------------------------------------------- */

#define BOMB_LIMIT 32
#define BOMB_TRIES 300

/* A bounded fork bomb: far more processes than allowed, none of which would hurt the host if
 * the limit failed. perl, not sh: a shell gives up at the first fork refused.
 *
 * The limit that binds differs by who runs it: RLIMIT_NPROC ("processes") holds for an
 * ordinary user, never for uid 0 (the kernel exempts the root user), so as root the test asks
 * for the cgroup's "pids". Where no cgroup can be made (under bubblewrap), the library must
 * refuse that limit at open rather than run without it. */
START_TEST(test_fork_bomb_contained)
{
	char *other = bt_mkdtemp();
	bool root = geteuid() == 0;
	char *extra = bt_fmt("\"limits\":{\"%s\":%d}", root ? "pids" : "processes", BOMB_LIMIT);
	sbx_workspace *w = NULL;
	int r = bt_open(other, extra, &w);

	if (root && r == -SBX_ECONFIG) {
		ck_assert_msg(strstr(sbx_last_error(), "'limits.pids'") != NULL,
		              "refused for another reason: %s", sbx_last_error());
		fprintf(stderr, "note: %s as root: limits.pids refused without a cgroup: %s\n",
		        bt_backend(), sbx_last_error());
		free(extra);
		return;
	}
	ck_assert_msg(r == 0, "open (%s): %d %s", extra, r, sbx_last_error());
	const char *mark = bt_marker();
	char *cmd = bt_fmt("$| = 1; my $refused = 0; for (1 .. %d) { my $pid = fork; "
	                   "if (!defined $pid) { $refused++; next } "
	                   "if (!$pid) { exec \"sleep\", $ENV{M1}; exit 1 } } "
	                   "print \"refused=$refused\\n\"; 1 while wait != -1", BOMB_TRIES);
	const char *argv[] = { "perl", "-e", cmd, NULL };
	sbx_spawn_opts o = { .size = sizeof o, .env = bt_marker_env(mark, NULL, NULL, NULL) };
	char buf[64] = "";
	size_t n = 0;
	sbx_process *p = NULL;
	int forked, running, code, sig;

	ck_assert_int_eq(sbx_process_spawn(w, argv, &o, &p), 0);
	ck_assert_int_eq(sbx_process_read(p, SBX_STDOUT, buf, sizeof buf - 1, SAFETY_TIMEOUT_MS,
	                                  &n), 0);
	ck_assert_msg(strncmp(buf, "refused=", 8) == 0, "the bomb said: %s", buf);
	forked = BOMB_TRIES - atoi(buf + 8);
	ck_assert_msg(forked < BOMB_LIMIT, "%d of %d forks got through a limit of %d", forked,
	              BOMB_TRIES, BOMB_LIMIT);
	/* And the host sees exactly those, each running its sleep. */
	running = bt_wait_for_process_count(mark, forked);
	ck_assert_msg(running == forked, "%d forks reported, %d running", forked, running);
	ck_assert_msg(running > 0, "the bomb did not start at all");
	ck_assert_int_eq(sbx_process_kill(p), 0);
	ck_assert_int_eq(sbx_process_wait(p, SAFETY_TIMEOUT_MS, &code, &sig), 0);
	sbx_process_free(p);
	ck_assert(!test_process_exists(mark));
	/* The workspace is usable again once the bomb is gone. */
	free(bt_shell_out(w, "true"));
	sbx_workspace_close(w);
	free(extra);
	free(cmd);
}
END_TEST

#define MEMORY_LIMIT (64u << 20)

static int count_lines(const char *text, const char *prefix)
{
	int n = 0;

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, prefix, strlen(prefix)) == 0)
			n++;
	return n;
}

START_TEST(test_memory_balloon_in_one_process)
{
	char *other = bt_mkdtemp();
	char *extra = bt_fmt("\"limits\":{\"memory_bytes\":%u}", MEMORY_LIMIT);
	sbx_workspace *w = bt_open_ok(other, extra);
	sbx_result *res = attack(w, "perl -e '$n = 256 << 20; $x = \"x\" x $n; "
	                            "print \"survived\\n\"'");

	ck_assert_int_eq(sbx_result_timed_out(res), 0);
	ck_assert_int_ne(sbx_result_exit_code(res), 0);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "");
	sbx_result_free(res);
	sbx_workspace_close(w);
	free(extra);
}
END_TEST

/* Six processes of 16 MB each under a 64 MiB limit: each is within its own address-space
 * limit, together they are not. Only a per-workspace cgroup can stop them; each holds its
 * memory until all six have theirs (a bounded wait), so that they are alive together. */
START_TEST(test_memory_balloon_across_processes)
{
	char *other = bt_mkdtemp();
	char *extra = bt_fmt("\"limits\":{\"memory_bytes\":%u}", MEMORY_LIMIT);
	sbx_workspace *w = bt_open_ok(other, extra);
	const char *cmd =
		"for i in 1 2 3 4 5 6; do (perl -e '$n = 16000000; $x = \"x\" x $n; "
		"open F, \">ready.$ARGV[0]\"; close F; "
		"for (1..1000) { last if (() = glob(\"ready.*\")) >= 6; "
		"select(undef, undef, undef, 0.01) } print \"held\\n\"' $i; echo status=$?) & "
		"done; wait";
	sbx_result *res = bt_shell(w, cmd, NULL);
	bool cgroup_expected = strcmp(bt_backend(), "ns") == 0 && geteuid() == 0;
	const char *out = sbx_result_stdout(res, NULL);

	ck_assert_int_eq(sbx_result_timed_out(res), 0);
	ck_assert_int_eq(count_lines(out, "status="), 6);
	if (count_lines(out, "status=137") == 0) {
		/* All six held their memory together: nothing limits the workspace as a whole. */
		ck_assert_msg(!cgroup_expected, "no process was killed: the workspace has no "
		              "memory limit as a whole:\n%s", out);
		fprintf(stderr, "note: %s as uid %u: no per-workspace cgroup, so "
		        "limits.memory_bytes bounds each process only (its address space). The "
		        "sandbox's note on why is not in the public API.\n", bt_backend(),
		        (unsigned)geteuid());
	}
	sbx_result_free(res);
	sbx_workspace_close(w);
	free(extra);
}
END_TEST

/* `yes` never stops: the cap keeps the host's memory bounded, the timeout ends it. */
START_TEST(test_output_flood_bounded)
{
	const size_t cap = 1u << 20;
	sbx_exec_opts o = { .size = sizeof o, .max_output = cap, .timeout_ms = 3000 };
	long before = bt_memory_kb(true), after;
	size_t out_len, err_len;
	sbx_result *res = bt_shell(ws, "yes stderr-flood >&2 & exec yes stdout-flood", &o);

	after = bt_memory_kb(false);
	ck_assert_int_eq(sbx_result_timed_out(res), 1);
	ck_assert_int_eq(sbx_result_truncated(res), 1);
	sbx_result_stdout(res, &out_len);
	sbx_result_stderr(res, &err_len);
	ck_assert_uint_eq(out_len, cap);
	ck_assert_uint_eq(err_len, cap);
	ck_assert_msg(after - before < 64 * 1024, "host memory grew by %ld KiB", after - before);
	sbx_result_free(res);
}
END_TEST

/* Daemons that try every way to outlive the command: setsid, a second fork, ignoring the
 * polite signals, leaving the process group. */
START_TEST(test_timeout_kills_stubborn_daemons)
{
	const char *m1 = bt_marker(), *m2 = bt_marker(), *m3 = bt_marker(), *m4 = bt_marker();
	const char *cmd = "setsid sh -c 'trap \"\" TERM HUP INT; sleep $M1' & "
	                  "setsid sh -c 'setsid sleep $M2 & :' & "
	                  "(trap '' TERM HUP; exec sleep $M3) & "
	                  "sleep $M4";
	sbx_exec_opts o = { .size = sizeof o, .timeout_ms = 500,
	                    .env = bt_marker_env(m1, m2, m3, m4) };
	sbx_result *res = bt_shell(ws, cmd, &o);

	ck_assert_int_eq(sbx_result_timed_out(res), 1);
	ck_assert_int_eq(sbx_result_signal(res), SIGKILL);
	ck_assert_msg(!test_process_exists(m1), "a setsid daemon ignoring TERM survived");
	ck_assert_msg(!test_process_exists(m2), "a double-forked setsid daemon survived");
	ck_assert(!test_process_exists(m3));
	ck_assert(!test_process_exists(m4));
	sbx_result_free(res);
}
END_TEST

/* ---- nothing outlives the workspace, or its host ------------------------------------------ */

/* A daemon deaf to the polite signals ($M1) and the command's own sleep ($M2). */
#define DAEMON_CMD "setsid sh -c 'trap \"\" TERM HUP; sleep $M1' & exec sleep $M2"

START_TEST(test_close_leaves_no_process)
{
	const char *m1 = bt_marker(), *m2 = bt_marker();
	char *other = bt_mkdtemp();
	const char *argv[] = { "sh", "-c", DAEMON_CMD, NULL };
	sbx_spawn_opts o = { .size = sizeof o, .env = bt_marker_env(m1, m2, NULL, NULL) };
	sbx_workspace *w = bt_open_ok(other, NULL);
	sbx_process *p = NULL;

	ck_assert_int_eq(sbx_process_spawn(w, argv, &o, &p), 0);
	ck_assert(bt_wait_for_process(m1, true));
	ck_assert(bt_wait_for_process(m2, true));
	/* The sandbox's processes are found by the workspace in their mount table. */
	ck_assert_int_gt(bt_count_sandbox_processes(other), 0);
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	ck_assert_msg(!test_process_exists(m1), "a daemon survived close");
	ck_assert(!test_process_exists(m2));
	ck_assert_msg(bt_count_sandbox_processes(other) == 0,
	              "%d process(es) of the sandbox left after close",
	              bt_count_sandbox_processes(other));
	sbx_process_free(p);
}
END_TEST

/* nftw has no user data: the name looked for and whether it was found. */
static const char *cgroup_name;
static bool cgroup_found;

static int match_cgroup(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	if (type == FTW_D && strcmp(path + ftw->base, cgroup_name) == 0) {
		cgroup_found = true;
		return 1;
	}
	return 0;
}

/* Is there a cgroup directory with this name anywhere under /sys/fs/cgroup? */
static bool cgroup_exists(const char *name)
{
	cgroup_name = name;
	cgroup_found = false;
	nftw("/sys/fs/cgroup", match_cgroup, 32, FTW_PHYS);
	return cgroup_found;
}

/* A workspace with limits may get a cgroup on the host, named after it; closing the
 * workspace must take it away again, or every workspace ever opened leaves one behind.
 *
 * (The library removes the cgroup once the sandbox's outer process has exited: that process
 * made it and sits in it until then.) */
START_TEST(test_close_leaves_no_cgroup)
{
	char *id = bt_fmt("sbx-test-cg-%d", (int)getpid()), *other = bt_mkdtemp();
	char *extra = bt_fmt("\"id\":\"%s\",\"limits\":{\"memory_bytes\":268435456}", id);
	sbx_workspace *w = bt_open_ok(other, extra);
	bool had = cgroup_exists(id);

	free(bt_shell_out(w, "true"));
	ck_assert_int_eq(sbx_workspace_close(w), 0);
	if (!had) {
		fprintf(stderr, "note: %s as uid %u: no per-workspace cgroup to look for\n",
		        bt_backend(), (unsigned)geteuid());
	} else {
		/* The kernel lets go of an emptied cgroup shortly after its last process. */
		for (int64_t until = bt_now_ms() + 5000; cgroup_exists(id) && bt_now_ms() < until;)
			usleep(10000);
		ck_assert_msg(!cgroup_exists(id), "the cgroup of workspace %s is left on the host "
		              "after close", id);
	}
	free(extra);
	free(id);
}
END_TEST

/* Probing the backends starts a sandbox on a scratch directory: nothing of it may stay. */
START_TEST(test_probe_leaves_nothing_behind)
{
	char *tmp = bt_mkdtemp(), *json = NULL, *out;

	setenv("TMPDIR", tmp, 1);
	ck_assert_int_eq(sbx_backends_probe(&json), 0);
	ck_assert_msg(strstr(json, "\"available\":true"), "%s", json);
	sbx_free(json);
	out = bt_fmt("ls -A %s", tmp);
	FILE *ls = popen(out, "r");
	char line[256] = "";

	ck_assert_ptr_nonnull(ls);
	if (!fgets(line, sizeof line, ls))
		line[0] = '\0';
	pclose(ls);
	ck_assert_msg(line[0] == '\0', "the probe left %s in $TMPDIR", line);
	free(out);
}
END_TEST

/* In a child: opens a workspace on dir, starts the daemons, optionally forks an heir that
 * keeps a copy of every fd (the control channel included), reports ready (and the heir's
 * pid) on the pipe, and waits to be killed. */
static void __attribute__((noreturn))
host_to_be_killed(const char *dir, const char *const *env, bool with_heir, int ready)
{
	const char *argv[] = { "sh", "-c", DAEMON_CMD, NULL };
	sbx_spawn_opts o = { .size = sizeof o, .env = env };
	sbx_workspace *w = NULL;
	sbx_process *p = NULL;
	pid_t heir = 0;

	if (bt_open(dir, NULL, &w) != 0 || sbx_process_spawn(w, argv, &o, &p) != 0)
		_exit(1);
	if (with_heir) {
		heir = fork();
		if (heir == 0) {
			pause();
			_exit(0);
		}
	}
	if (write(ready, &heir, sizeof heir) != sizeof heir)
		_exit(1);
	pause();
	_exit(0);
}

static void assert_host_death_kills_sandbox(bool with_heir)
{
	const char *m1 = bt_marker(), *m2 = bt_marker();
	char *dir = bt_mkdtemp();
	int ready[2], left;
	pid_t host, heir = 0;
	bool gone;

	ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	host = fork();
	ck_assert_int_ge(host, 0);
	if (host == 0)
		host_to_be_killed(dir, bt_marker_env(m1, m2, NULL, NULL), with_heir, ready[1]);
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], &heir, sizeof heir), (ssize_t)sizeof heir);
	close(ready[0]);
	ck_assert(bt_wait_for_process(m1, true));
	ck_assert(bt_wait_for_process(m2, true));
	ck_assert_int_gt(bt_count_sandbox_processes(dir), 0);
	kill(host, SIGKILL);
	waitpid(host, NULL, 0);
	gone = bt_wait_for_process(m1, false) && bt_wait_for_process(m2, false);
	left = bt_wait_for_sandbox_gone(dir);
	if (heir > 0)
		kill(heir, SIGKILL); /* not our child: reaped by whoever adopted it */
	ck_assert_msg(gone, "a command outlived its host%s", with_heir ? " (an heir kept its fds)"
	                                                               : "");
	ck_assert_msg(left == 0, "%d sandbox process(es) outlived the host%s", left,
	              with_heir ? " (an heir kept its fds)" : "");
}

START_TEST(test_host_sigkill_leaves_no_process)
{
	assert_host_death_kills_sandbox(false);
}
END_TEST

/* The host forked before dying, and the child keeps every fd, the control socket included:
 * the sandbox must go with the host regardless. */
START_TEST(test_host_sigkill_with_heir_leaves_no_process)
{
	assert_host_death_kills_sandbox(true);
}
END_TEST

/* The sandbox dies under a running command (the OOM killer, an operator, a crash): the
 * call returns with an error or the command's death, it does not hang. */
struct killer {
	const char *dir, *mark;
	int killed;
};

static void *kill_sandbox_when_running(void *arg)
{
	struct killer *k = arg;

	if (bt_wait_for_process(k->mark, true))
		k->killed = bt_kill_sandbox_processes(k->dir);
	return NULL;
}

START_TEST(test_exec_returns_when_the_sandbox_dies)
{
	struct killer k = { .dir = bt_mkdtemp(), .mark = bt_marker() };
	sbx_workspace *w = bt_open_ok(k.dir, NULL);
	sbx_exec_opts o = { .size = sizeof o, .timeout_ms = SAFETY_TIMEOUT_MS,
	                    .env = bt_marker_env(k.mark, NULL, NULL, NULL) };
	sbx_result *res = NULL;
	pthread_t t;
	int r;

	ck_assert_int_eq(pthread_create(&t, NULL, kill_sandbox_when_running, &k), 0);
	r = sbx_exec_shell(w, "exec sleep $M1", &o, &res);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_gt(k.killed, 0);
	if (r == 0) {
		/* A result is fine if it says the command was killed — not by its timeout. */
		ck_assert_msg(!sbx_result_timed_out(res), "sbx_exec only returned at its timeout");
		ck_assert_int_eq(sbx_result_signal(res), SIGKILL);
	} else {
		ck_assert_msg(r == -SBX_EIO, "sbx_exec: %d %s", r, sbx_last_error());
	}
	sbx_result_free(res);
	/* The workspace says so from now on, rather than hang. */
	r = sbx_exec_shell(w, "true", &o, &res);
	ck_assert_msg(r < 0 || !sbx_result_timed_out(res), "a later exec hung");
	sbx_result_free(res);
	sbx_workspace_close(w);
}
END_TEST

/* ---- concurrency -------------------------------------------------------------------------- */

#define THREADS 8
#define RUNS_PER_THREAD 10
#define PATTERN_LEN (64u << 10)

/* Each thread sends its own bytes through cat, and between runs looks at the fds its command
 * got: commands started at the same moment must neither see each other's output nor hold
 * each other's pipes. */
static void *exec_apart(void *arg)
{
	long id = (long)arg;
	char *data = malloc(PATTERN_LEN);
	const char *cat[] = { "cat", NULL };
	const char *fds[] = { "ls", "/proc/self/fd", NULL }; /* 3: the directory ls reads */
	sbx_exec_opts o = { .size = sizeof o, .stdin_data = data, .stdin_len = PATTERN_LEN };
	bool ok = data != NULL;

	for (size_t i = 0; ok && i < PATTERN_LEN; i++)
		data[i] = (char)('A' + (id * 7 + (long)i) % 26);
	for (int i = 0; i < RUNS_PER_THREAD && ok; i++) {
		sbx_result *res = NULL;
		size_t len = 0;

		ok = sbx_exec(ws, cat, &o, &res) == 0 && sbx_result_exit_code(res) == 0;
		ok = ok && sbx_result_stdout(res, &len) && len == PATTERN_LEN &&
		     memcmp(sbx_result_stdout(res, NULL), data, len) == 0;
		sbx_result_free(res);
		res = NULL;
		ok = ok && sbx_exec(ws, fds, NULL, &res) == 0 &&
		     strcmp(sbx_result_stdout(res, NULL), "0\n1\n2\n3\n") == 0;
		if (!ok)
			fprintf(stderr, "thread %ld run %d: %s\n", id, i,
			        res ? sbx_result_stdout(res, NULL) : sbx_last_error());
		sbx_result_free(res);
	}
	free(data);
	return (void *)(long)ok;
}

START_TEST(test_concurrent_execs_stay_apart)
{
	pthread_t t[THREADS];
	void *ok;

	for (long i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, exec_apart, (void *)i), 0);
	for (int i = 0; i < THREADS; i++) {
		ck_assert_int_eq(pthread_join(t[i], &ok), 0);
		ck_assert_msg(ok, "thread %d saw another command's output or fds", i);
	}
}
END_TEST

/* ---- pre-started sandboxes ("ns": {"prestart": ...}) ------------------------------------ */

/* Options that make this test's sandboxes (and spares) recognisable among all others on the
 * host: a bind of a fresh directory, which every process of theirs has in its mount table.
 * bt_count_sandbox_processes(marker) then counts them: two per sandbox (outer and init).
 * These cases count the spares of this process's own slot: "process" keeps the keeper's
 * (which would be counted too) out; tests/cli/test_keeper.sh covers the keeper's. */
static const char *prestart_options(const char *marker, bool prestart)
{
	/* The old layout ("state_dir": "workdir"): HOME is the workspace's root. A state folder
	 * outside the workdir: test_spare_serves_other_state_folders. */
	return bt_tmp("\"state_dir\":\"workdir\",\"ns\":{\"prestart\":%s,\"binds\":[{\"source\":"
	              "\"%s\",\"dest\":\"/opt/sbx-marker\"}]}", prestart ? "\"process\"" : "false",
	              marker);
}

/* The same with a state folder of its own outside the workdir (the default layout). */
static const char *prestart_state_options(const char *marker, const char *state_dir)
{
	return bt_tmp("\"state_dir\":\"%s\",\"ns\":{\"prestart\":\"process\",\"binds\":[{"
	              "\"source\":\"%s\",\"dest\":\"/opt/sbx-marker\"}]}", state_dir, marker);
}

/* A workspace made outside /tmp: a pre-started init resolves /tmp paths differently. */
static char *mkdtemp_outside_tmp(void)
{
	char *dir = bt_fmt("%s/prestart-XXXXXX", getenv("SBX_TEST_BUILD_ROOT"));

	ck_assert_ptr_nonnull(mkdtemp(dir));
	return dir;
}

/* Children of ours in state Z, or (any_first_half) also a spare's first process that has not
 * ended yet ("--prestarted" in its command line; the library's starter thread reaps it). */
static int count_children_where(bool any_first_half)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		char path[300], buf[512], *paren;
		int ppid = 0;
		char state = 0;
		FILE *f;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		if (!(f = fopen(path, "re")))
			continue;
		buf[0] = '\0';
		if (!fgets(buf, sizeof buf, f))
			buf[0] = '\0';
		fclose(f);
		paren = strrchr(buf, ')');
		if (!paren || sscanf(paren + 1, " %c %d", &state, &ppid) != 2 || ppid != getpid())
			continue;
		if (state == 'Z')
			n++;
		else if (any_first_half)
			n += bt_pid_cmdline_has(e->d_name, "--prestarted");
	}
	if (d)
		closedir(d);
	return n;
}

static int count_zombie_children(void)
{
	return count_children_where(false);
}

static int wait_for_marked(const char *marker, int n)
{
	int64_t deadline = bt_now_ms() + 10000;
	int have;

	while ((have = bt_count_sandbox_processes(marker)) != n && bt_now_ms() < deadline)
		usleep(10000);
	return have;
}

/* See bt_wait_for_children: a spare being started has a child of ours for a moment. */
static int wait_for_no_zombies(void)
{
	int64_t deadline = bt_now_ms() + 5000;
	int have;

	while ((have = count_zombie_children()) != 0 && bt_now_ms() < deadline)
		usleep(10000);
	return have;
}

/* Each workspace opened one after another (from the third on, served by the sandbox the one
 * before left half-built) sees its own files and nothing of the others, with every rule in
 * place; a workspace of another shape (read-only) gets a sandbox of its own. */
START_TEST(test_prestarted_sandboxes_stay_apart)
{
	const char *marker = bt_mkdtemp();
	/* The fixture's sandbox (not the first process of a spare being started, which the
	 * library reaps). */
	int children = bt_count_children() - count_children_where(true);
	char *dirs[5];
	char *out;

	for (int i = 0; i < 5; i++) {
		bool read_only = i == 4;
		const char *opts = prestart_options(marker, true);
		sbx_workspace *w;

		dirs[i] = i % 2 ? mkdtemp_outside_tmp() : bt_fmt("%s", bt_mkdtemp());
		test_put_file(dirs[i], bt_tmp("mine-%d", i), "x", 0644);
		w = bt_open_ok(dirs[i], read_only ? bt_tmp("%s,\"mode\":\"read-only\"", opts) : opts);
		out = bt_shell_out(w, "ls /workspace; hostname; "
		                   "(echo x >> .bashrc) 2>/dev/null && echo bashrc-written; "
		                   "(echo x > new) 2>/dev/null && echo new-written; "
		                   "grep NoNewPrivs /proc/self/status | tr -d '\\t'");
		ck_assert_str_eq(out, bt_tmp("mine-%d\nagentsbx\n%sNoNewPrivs:1\n", i,
		                             read_only ? "" : "new-written\n"));
		free(out);
		/* From the second open on, a spare waits besides the open sandbox, which keeps the
		 * runner of the command above for the next (helpers/init/server.c). */
		if (i >= 1) {
			int have = wait_for_marked(marker, 5);
			ck_assert_msg(have == 5, "open #%d: %d processes of ours, not 5", i + 1, have);
		}
		sbx_workspace_close(w);
		ck_assert_msg(!test_exists(test_path_at(dirs[i], ".bashrc")),
		              "a placeholder stayed behind in %s", dirs[i]);
		ck_assert_int_eq(bt_wait_for_children(children), children);
		ck_assert_int_eq(wait_for_no_zombies(), 0);
	}
	for (int i = 0; i < 5; i++) {
		test_rm_rf(dirs[i]);
		free(dirs[i]);
	}
}
END_TEST

/* Whether process pid has a mount of dir's last component (the whole table: a sandbox's is
 * long, and its workspace comes late in it). */
static bool pid_mounts(const char *pid, const char *dir)
{
	char path[300], *line = NULL;
	size_t cap = 0;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%s/mountinfo", pid);
	if (!(f = fopen(path, "re")))
		return false;
	while (!found && getline(&line, &cap, f) > 0)
		found = strstr(line, strrchr(dir, '/')) != NULL;
	free(line);
	fclose(f);
	return found;
}

/* The host processes with a mount of dir, in ascending order (as /proc lists them). */
static int sorted_pids(const char *dir, int *pids, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)) && n < max)
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && atoi(e->d_name) != getpid() &&
		    pid_mounts(e->d_name, dir))
			pids[n++] = atoi(e->d_name);
	if (d)
		closedir(d);
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && pids[j - 1] > pids[j]; j--) {
			int t = pids[j];
			pids[j] = pids[j - 1];
			pids[j - 1] = t;
		}
	return n;
}

/* The private HOME and MCP's run folder are binds from each workspace's own state folder: a
 * spare still serves the next workspace, whatever its workdir and state folder, and that
 * workspace gets its own HOME, run folder and workdir, and nothing of the one before. The
 * sign that it was the spare: the very processes that waited as the spare now hold the new
 * workspace's mounts. */
START_TEST(test_spare_serves_other_state_folders)
{
	const char *marker = bt_mkdtemp();
	char *state_a = bt_fmt("%s", bt_mkdtemp()), *state_b = bt_fmt("%s", bt_mkdtemp());
	char *dir_a = bt_fmt("%s", bt_mkdtemp()), *dir_b = bt_fmt("%s", bt_mkdtemp());
	int spare[8], serving[8], n_spare, n_serving;
	sbx_workspace *w;
	char *out;

	/* The first open of the shape wants no spare; the second does, and its close starts it. */
	sbx_workspace_close(bt_open_ok(bt_mkdtemp(), prestart_state_options(marker, bt_mkdtemp())));
	w = bt_open_ok(dir_a, prestart_state_options(marker, state_a));
	free(bt_shell_out(w, "echo a-secret > \"$HOME/a-secret\"; echo a > /tmp/.agentsbx-mcp/a"));
	sbx_workspace_close(w);
	ck_assert_int_eq(wait_for_marked(marker, 2), 2);   /* the spare: outer and init */
	n_spare = sorted_pids(marker, spare, 8);
	ck_assert_int_eq(bt_count_sandbox_processes(dir_a), 0);

	test_put_file(dir_b, "mine-b", "x", 0644);
	w = bt_open_ok(dir_b, prestart_state_options(marker, state_b));
	n_serving = sorted_pids(dir_b, serving, 8);
	ck_assert_int_eq(n_serving, 2);
	ck_assert_msg(n_spare == 2 && serving[0] == spare[0] && serving[1] == spare[1],
	              "B was not served by the spare (pids %d %d, the spare's %d %d)", serving[0],
	              serving[1], spare[0], n_spare > 1 ? spare[1] : 0);

	out = bt_shell_out(w, bt_tmp("ls /workspace; ls -A \"$HOME\" | grep -vx .config; echo b > \"$HOME/b-file\"; "
	                             "echo b > /tmp/.agentsbx-mcp/b; ls /tmp/.agentsbx-mcp; "
	                             "cat %s/home/a-secret 2>/dev/null || echo no-a-home; "
	                             "ls %s 2>/dev/null || echo no-a-state",
	                             state_a, state_a));
	ck_assert_str_eq(out, "mine-b\nb\nno-a-home\nno-a-state\n");
	free(out);
	ck_assert(test_exists(test_path_at(state_b, "home/b-file")));
	ck_assert(test_exists(test_path_at(state_b, "mcp/b")));
	ck_assert(!test_exists(test_path_at(state_a, "home/b-file")));
	ck_assert(!test_exists(test_path_at(state_a, "mcp/b")));
	sbx_workspace_close(w);
	ck_assert_int_eq(wait_for_no_zombies(), 0);
	for (char **d = (char *[]){ state_a, state_b, dir_a, dir_b, NULL }; *d; d++) {
		test_rm_rf(*d);
		free(*d);
	}
}
END_TEST

static bool ends_within(pid_t pid, int ms)
{
	int64_t deadline = bt_now_ms() + ms;

	while (kill(pid, 0) == 0 && bt_now_ms() < deadline)
		usleep(10000);
	return kill(pid, 0) != 0;
}

/* A temporary workdir guards only .agentsbx/ (backends/sandbox/bwrap_argv.c). The spare that
 * the close of one starts has that list in its shape (spec.c): it serves the next temporary
 * workdir, which holds nothing but .agentsbx then either, and no persistent workdir, which
 * guards the whole default list: its .bashrc and .mcp.json cannot be created. */
START_TEST(test_spare_after_a_temporary_workspace_guards_the_defaults)
{
	const char *marker = bt_mkdtemp();
	char *dir = bt_fmt("%s", bt_mkdtemp());
	int spare[8], n_spare;
	sbx_workspace *w;
	char *out;

	/* The first open of the shape wants no spare; the second does, and its close starts it. */
	sbx_workspace_close(bt_open_ok(NULL, prestart_state_options(marker, bt_mkdtemp())));
	w = bt_open_ok(NULL, prestart_state_options(marker, bt_mkdtemp()));
	out = bt_shell_out(w, "ls -A");
	ck_assert_str_eq(out, ".agentsbx\n");
	free(out);
	sbx_workspace_close(w);
	ck_assert_int_eq(wait_for_marked(marker, 2), 2);   /* the spare: outer and init */
	n_spare = sorted_pids(marker, spare, 8);
	ck_assert_int_eq(n_spare, 2);

	w = bt_open_ok(NULL, prestart_state_options(marker, bt_mkdtemp()));
	out = bt_shell_out(w, "ls -A");
	ck_assert_str_eq(out, ".agentsbx\n");
	free(out);
	sbx_workspace_close(w);
	ck_assert_msg(ends_within(spare[0], 5000), "the temporary workspace was not served by "
	              "the spare (it lives on after the close)");

	ck_assert_int_eq(wait_for_marked(marker, 2), 2);   /* the next spare, of the same shape */
	n_spare = sorted_pids(marker, spare, 8);
	w = bt_open_ok(dir, prestart_state_options(marker, bt_mkdtemp()));
	out = bt_shell_out(w, "for f in .bashrc .mcp.json .agentsbx/x; do "
	                      "(echo planted > $f) 2>/dev/null && echo $f-written; done; true");
	ck_assert_str_eq(out, "");
	free(out);
	ck_assert_msg(n_spare == 2 && kill(spare[0], 0) == 0, "a temporary workdir's spare served "
	              "a persistent workdir");
	sbx_workspace_close(w);
	ck_assert(!test_exists(test_path_at(dir, ".bashrc")));
	ck_assert_int_eq(wait_for_no_zombies(), 0);
	test_rm_rf(dir);
	free(dir);
}
END_TEST

/* The spare is no child of the host, yet it dies with it like any sandbox. */
START_TEST(test_prestarted_sandbox_dies_with_host)
{
	const char *marker = bt_mkdtemp(), *opts = prestart_options(marker, true);
	const char *dirs[3] = { bt_mkdtemp(), bt_mkdtemp(), bt_mkdtemp() };
	int ready[2];
	pid_t child;
	char c;

	ck_assert_int_eq(pipe(ready), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		for (int i = 0; i < 3; i++) {
			sbx_workspace *w = NULL;
			if (bt_open(dirs[i], opts, &w) != 0)
				_exit(1);
			sbx_workspace_close(w);
		}
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	ck_assert_int_eq(wait_for_marked(marker, 2), 2);   /* the spare: outer and init */
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	ck_assert_int_eq(wait_for_marked(marker, 0), 0);
	close(ready[0]);
}
END_TEST

/* Runs body(opts) in a child that is a child subreaper, as a host such as systemd --user or
 * a container's init is; body's result is the child's exit status, which must be 0. */
static void run_as_subreaper(int (*body)(const char *opts), const char *opts)
{
	int status;
	pid_t child = fork();

	ck_assert_int_ge(child, 0);
	if (child == 0) {
		if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
			_exit(2);
		_exit(body(opts));
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x",
	              (unsigned)status);
}

static int open_four_leaving_no_zombie(const char *opts)
{
	for (int i = 0; i < 4; i++) {
		sbx_workspace *w = NULL;
		sbx_result *res = NULL;
		const char *argv[] = { "true", NULL };

		if (bt_open(bt_mkdtemp(), opts, &w) != 0 || sbx_exec(w, argv, NULL, &res) != 0)
			return 3;
		sbx_result_free(res);
		sbx_workspace_close(w);
		if (wait_for_no_zombies() != 0)
			return 4;
	}
	return 0;
}

/* A host that is a child subreaper gets the spare's orphaned processes as children: the
 * library reaps them as it reaps its own, no zombie stays. */
START_TEST(test_prestarted_sandbox_reaped_by_subreaper_host)
{
	const char *marker = bt_mkdtemp();

	run_as_subreaper(open_four_leaving_no_zombie, prestart_options(marker, true));
}
END_TEST

/* The open that wants a spare does not start it (that would slow the workspace it opens):
 * the next close does, or the spare starts by itself after a short while when the
 * workspace stays open. Opens in a burst, faster than closes, get spares at once, each
 * workspace with its own files. */
START_TEST(test_spares_start_when_the_caller_is_idle)
{
	const char *marker = bt_mkdtemp(), *opts = prestart_options(marker, true);
	sbx_workspace *w, *burst[5];
	int64_t opened;

	w = bt_open_ok(bt_mkdtemp(), opts);
	sbx_workspace_close(w);
	w = bt_open_ok(bt_mkdtemp(), opts);   /* the second of its shape: a spare is wanted */
	opened = bt_now_ms();
	/* Kept open, the spare comes by itself, but not before the delay (a slow machine can only
	 * make it later). */
	ck_assert_int_eq(wait_for_marked(marker, 4), 4);
	ck_assert_msg(bt_now_ms() - opened >= 200, "the spare was there %lld ms after the open",
	              (long long)(bt_now_ms() - opened));
	sbx_workspace_close(w);
	w = bt_open_ok(bt_mkdtemp(), opts);   /* takes the spare; the next waits for the close */
	sbx_workspace_close(w);
	ck_assert_int_eq(wait_for_marked(marker, 2), 2);   /* the close started it */
	for (int i = 0; i < 5; i++) {
		const char *dir = bt_mkdtemp();

		test_put_file(dir, bt_tmp("burst-%d", i), "x", 0644);
		burst[i] = bt_open_ok(dir, opts);
	}
	for (int i = 0; i < 5; i++) {
		char *out = bt_shell_out(burst[i], "ls /workspace");

		ck_assert_str_eq(out, bt_tmp("burst-%d\n", i));
		free(out);
		sbx_workspace_close(burst[i]);
	}
	ck_assert_int_eq(wait_for_no_zombies(), 0);
}
END_TEST

/* In a forked child: opens workspaces on fresh directories, each must see only its own file;
 * exits 0 when all did. */
static void open_in_child(const char *opts, int n)
{
	for (int i = 0; i < n; i++) {
		const char *dir = bt_mkdtemp();
		sbx_workspace *w = NULL;
		sbx_result *res = NULL;
		const char *argv[] = { "ls", "/workspace", NULL };

		test_put_file(dir, "child-file", "x", 0644);
		if (bt_open(dir, opts, &w) != 0 || sbx_exec(w, argv, NULL, &res) != 0 ||
		    strcmp(sbx_result_stdout(res, NULL), "child-file\n") != 0)
			_exit(1);
		sbx_result_free(res);
		sbx_workspace_close(w);
	}
	_exit(0);
}

/* A forked child does not use its parent's spare (its channel is the parent's), nor wait for
 * the parent's starter thread, whether the spare is parked or still to start; both go on
 * with sandboxes of their own. */
START_TEST(test_fork_keeps_spares_apart)
{
	const char *marker = bt_mkdtemp(), *opts = prestart_options(marker, true);
	int status;

	for (int round = 0; round < 2; round++) {
		sbx_workspace *w;
		pid_t child;
		char *out;

		sbx_workspace_close(bt_open_ok(bt_mkdtemp(), opts));
		w = bt_open_ok(bt_mkdtemp(), opts);   /* a spare is scheduled: still to start */
		if (round == 1) {
			sbx_workspace_close(w);          /* now it starts, and is parked */
			ck_assert_int_eq(wait_for_marked(marker, 2), 2);
			w = NULL;
		}
		child = fork();
		ck_assert_int_ge(child, 0);
		if (child == 0)
			open_in_child(opts, 3);
		ck_assert_int_eq(waitpid(child, &status, 0), child);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		              "round %d: the child's workspaces failed (status 0x%x)", round,
		              (unsigned)status);
		if (w)
			sbx_workspace_close(w);
		w = bt_open_ok(bt_mkdtemp(), opts);
		out = bt_shell_out(w, "ls /workspace | wc -l");
		ck_assert_str_eq(out, "0\n");
		free(out);
		sbx_workspace_close(w);
	}
}
END_TEST

/* ---- many threads, forks among them ---- */

#define STORM_THREADS 4
#define FORK_STORM_TAG "fork-storm"
#define STORM_MS 2500

struct storm_worker {
	const char *opts;
	const char *dir;              /* holds one file, the worker's name: all it may see */
	const char *expect;           /* "<name>\n" */
	int64_t until;
	int rounds;
	char failed[256];
};

/* Opens, lists and closes workspaces of one shape until the deadline; records the first
 * failure instead of checking (a check on another thread cannot end the test). */
static void *storm_worker_main(void *arg)
{
	struct storm_worker *sw = arg;
	const char *argv[] = { "ls", "/workspace", NULL };

	while (bt_now_ms() < sw->until && !sw->failed[0]) {
		sbx_workspace *w = NULL;
		sbx_result *res = NULL;
		int r = bt_open(sw->dir, sw->opts, &w);

		if (r != 0)
			snprintf(sw->failed, sizeof sw->failed, "open: %d %s", r, sbx_last_error());
		else if ((r = sbx_exec(w, argv, NULL, &res)) != 0)
			snprintf(sw->failed, sizeof sw->failed, "exec: %d %s", r, sbx_last_error());
		else if (strcmp(sbx_result_stdout(res, NULL), sw->expect) != 0)
			snprintf(sw->failed, sizeof sw->failed, "saw '%s', not '%s'",
			         sbx_result_stdout(res, NULL), sw->expect);
		sbx_result_free(res);
		sbx_workspace_close(w);
		sw->rounds++;
	}
	return NULL;
}

/* A forked child (its parent's other threads in the middle of opens and closes) opens and
 * closes one workspace and exits at once, its spare perhaps being started: 0 when it could.
 * A child stuck on a lock its parent's threads held is killed after 10 s and reported. */
static int fork_one_opener(const char *opts, const char *dir)
{
	int64_t deadline;
	int status = 0;
	pid_t child = fork();

	if (child < 0)
		return -1;
	if (child == 0) {
		sbx_workspace *w = NULL;

		if (bt_open(dir, opts, &w) != 0)
			_exit(1);
		sbx_workspace_close(w);
		_exit(0);
	}
	deadline = bt_now_ms() + 10000;
	while (waitpid(child, &status, WNOHANG) == 0) {
		if (bt_now_ms() > deadline) {
			kill(child, SIGKILL);
			waitpid(child, &status, 0);
			return -2;
		}
		usleep(5000);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -3;
}

/* Runs STORM_THREADS workers on workspaces of one shape (the workers' directories from
 * bt_mkdtemp), faster than spares start (so the starter runs eagerly, and several may be
 * under way at once), while this thread forks a child that opens a workspace now and then
 * (with_forks). Returns how many children it forked; a failure fails the test. */
static int run_storm(const char *opts, bool with_forks)
{
	const char *child_dir = with_forks ? bt_mkdtemp() : NULL;
	struct storm_worker sw[STORM_THREADS];
	pthread_t t[STORM_THREADS];
	int64_t until = bt_now_ms() + STORM_MS;
	int forks = 0;

	for (int i = 0; i < STORM_THREADS; i++) {
		sw[i] = (struct storm_worker){ .opts = opts, .dir = bt_mkdtemp(), .until = until };
		test_put_file(sw[i].dir, bt_tmp("worker-%d", i), "x", 0644);
		sw[i].expect = bt_fmt("worker-%d\n", i);
		ck_assert_int_eq(pthread_create(&t[i], NULL, storm_worker_main, &sw[i]), 0);
	}
	while (with_forks && bt_now_ms() < until) {
		int r = fork_one_opener(opts, child_dir);

		ck_assert_msg(r == 0, "fork %d: the child's workspace %s (%d)", forks,
		              r == -2 ? "hung" : "failed", r);
		forks++;
		usleep(50000);
	}
	for (int i = 0; i < STORM_THREADS; i++) {
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
		ck_assert_msg(!sw[i].failed[0], "worker %d, round %d: %s", i, sw[i].rounds,
		              sw[i].failed);
		ck_assert_int_gt(sw[i].rounds, 0);
		free((char *)sw[i].expect);
	}
	return forks;
}

/* Every workspace of the storm sees only its own files and no forked child hangs; afterwards
 * nothing is left: no zombie, no child, at most the one parked spare (its two processes; the
 * children's spares end with them). */
START_TEST(test_spares_under_concurrent_opens_and_forks)
{
	const char *marker = bt_mkdtemp(), *opts = prestart_options(marker, true);
	int children = bt_count_children() - count_children_where(true), left;
	int64_t deadline;

	ck_assert_int_gt(run_storm(opts, true), 0);
	ck_assert_int_eq(wait_for_no_zombies(), 0);
	ck_assert_int_eq(bt_wait_for_children(children), children);
	deadline = bt_now_ms() + 10000;
	while ((left = bt_count_sandbox_processes(marker)) > 2 && bt_now_ms() < deadline)
		usleep(20000);
	ck_assert_msg(left == 0 || left == 2, "%d processes of spares are left", left);
}
END_TEST

/* A subreaper host inherits every spare it discards: concurrent opens, whose spares replace
 * one another, must leave it no zombie (a spare discarded before its pidfd came was one). */
static int storm_leaving_no_zombie(const char *opts)
{
	run_storm(opts, false);
	return wait_for_no_zombies() == 0 ? 0 : 4;
}

START_TEST(test_concurrent_spares_reaped_by_subreaper_host)
{
	const char *marker = bt_mkdtemp();

	run_as_subreaper(storm_leaving_no_zombie, prestart_options(marker, true));
}
END_TEST

/* "prestart": false: one workspace after another, and never a spare beside them. */
START_TEST(test_no_spare_when_prestart_is_off)
{
	const char *marker = bt_mkdtemp(), *opts = prestart_options(marker, false);

	for (int i = 0; i < 3; i++) {
		sbx_workspace *w = bt_open_ok(bt_mkdtemp(), opts);

		ck_assert_int_eq(wait_for_marked(marker, 2), 2);
		sbx_workspace_close(w);
		ck_assert_int_eq(bt_count_sandbox_processes(marker), 0);
	}
	usleep(100000);
	ck_assert_int_eq(bt_count_sandbox_processes(marker), 0);
}
END_TEST

static Suite *security_suite(void)
{
	static char name[64];
	Suite *s;
	TCase *ns, *fsys, *hard, *res, *life, *pre, *storm;

	/* Not bt_fmt: its check fails only inside a test. */
	snprintf(name, sizeof name, "security-%s", bt_backend());
	s = suite_create(name);
	ns = tcase_create("namespaces");
	tcase_add_checked_fixture(ns, setup, teardown);
	tcase_add_test(ns, test_host_processes_invisible);
	tcase_add_test(ns, test_hostname_is_the_sandboxs);
	tcase_add_test(ns, test_no_network_but_loopback);
	suite_add_tcase(s, ns);

	fsys = tcase_create("filesystem");
	tcase_add_checked_fixture(fsys, setup, teardown);
	tcase_add_test(fsys, test_host_secrets_absent);
	tcase_add_test(fsys, test_system_dirs_read_only);
	tcase_add_test(fsys, test_writes_land_only_in_the_workspace);
	tcase_add_test(fsys, test_no_host_devices_or_kernel_knobs);
	tcase_add_test(fsys, test_protected_git_paths_read_only);
	tcase_add_test(fsys, test_missing_git_hooks_cannot_be_created);
	tcase_add_test(fsys, test_worktree_git_file_read_only);
	tcase_add_test(fsys, test_symlinked_git_not_followed);
	tcase_add_test(fsys, test_state_dir_read_only);
	tcase_add_test(fsys, test_missing_protected_files_cannot_be_created);
	tcase_add_test(fsys, test_protection_survives_reset);
	tcase_add_test(fsys, test_protection_survives_reset_of_temporary_workspace);
	suite_add_tcase(s, fsys);

	hard = tcase_create("hardening");
	tcase_add_checked_fixture(hard, setup, teardown);
	tcase_add_test(hard, test_every_seccomp_rule_refused);
	tcase_add_test(hard, test_seccomp_baseline_walk);
	tcase_add_test(hard, test_issue_15_calls_refused);
	tcase_add_test(hard, test_netlink_only_route);
	tcase_add_test(hard, test_socket_families_refused);
	tcase_add_test(hard, test_no_capabilities_nnp_seccomp);
	tcase_add_test(hard, test_no_setuid_escalation);
	tcase_add_test(hard, test_no_host_fd_reaches_the_sandbox);
	tcase_add_test(hard, test_init_unreachable_from_commands);
	suite_add_tcase(s, hard);

	res = tcase_create("resources");
	tcase_add_checked_fixture(res, setup, teardown);
	tcase_add_test(res, test_fork_bomb_contained);
	tcase_add_test(res, test_memory_balloon_in_one_process);
	tcase_add_test(res, test_memory_balloon_across_processes);
	tcase_add_test(res, test_output_flood_bounded);
	tcase_add_test(res, test_timeout_kills_stubborn_daemons);
	suite_add_tcase(s, res);

	life = tcase_create("lifecycle");
	tcase_add_checked_fixture(life, setup, teardown);
	tcase_add_test(life, test_close_leaves_no_process);
	tcase_add_test(life, test_close_leaves_no_cgroup);
	tcase_add_test(life, test_probe_leaves_nothing_behind);
	tcase_add_test(life, test_exec_returns_when_the_sandbox_dies);
	tcase_add_test(life, test_host_sigkill_leaves_no_process);
	tcase_add_test(life, test_host_sigkill_with_heir_leaves_no_process);
	tcase_add_test(life, test_concurrent_execs_stay_apart);
	suite_add_tcase(s, life);

	/* Only ns builds its own root; bubblewrap's sandboxes cannot be pre-started. */
	if (!strcmp(bt_backend(), "ns")) {
		pre = tcase_create("prestart");
		tcase_add_checked_fixture(pre, setup, teardown);
		tcase_add_test(pre, test_prestarted_sandboxes_stay_apart);
		tcase_add_test(pre, test_spare_serves_other_state_folders);
		tcase_add_test(pre, test_spare_after_a_temporary_workspace_guards_the_defaults);
		tcase_add_test(pre, test_prestarted_sandbox_dies_with_host);
		tcase_add_test(pre, test_no_spare_when_prestart_is_off);
		tcase_add_test(pre, test_spares_start_when_the_caller_is_idle);
		tcase_add_test(pre, test_fork_keeps_spares_apart);
		tcase_add_test(pre, test_prestarted_sandbox_reaped_by_subreaper_host);
		tcase_add_test(pre, test_concurrent_spares_reaped_by_subreaper_host);
		suite_add_tcase(s, pre);
		/* Its own meson test (security-forks-ns), by its tag: see fork_storm_unsupported. */
		storm = tcase_create("fork-storm");
		tcase_set_tags(storm, FORK_STORM_TAG);
		tcase_add_checked_fixture(storm, setup, teardown);
		tcase_add_test(storm, test_spares_under_concurrent_opens_and_forks);
		suite_add_tcase(s, storm);
	}
	return s;
}

/* GCC 12's AddressSanitizer takes none of its allocator's locks around fork() (compiler-rt
 * gained that in LLVM 18): a child forked while another thread refills its allocation cache
 * waits forever in its first malloc, whatever the library does. The storm forks while four
 * threads allocate, so under ASan it tests the sanitizer; the strict build and the ordinary
 * user's run of it still run it. */
static bool fork_storm_unsupported(void)
{
#if defined(__SANITIZE_ADDRESS__)
	const char *tags = getenv("CK_INCLUDE_TAGS");

	return tags && !strcmp(tags, FORK_STORM_TAG);
#else
	return false;
#endif
}

int main(void)
{
	if (fork_storm_unsupported()) {
		fputs("skip: the fork storm under ASan: its allocator is not fork-safe in a "
		      "threaded process (GCC 12's libasan)\n", stderr);
		return BT_EXIT_SKIP;
	}
	return bt_main(security_suite);
}
