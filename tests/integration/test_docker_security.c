/* The docker backend's security claims, each tried from inside a container by a process that
 * must fail (README "Secure defaults", docs/security.md). Registered as security-docker (the
 * engine's default runtime, runc here) and security-docker-runsc (gVisor):
 *
 *  - no network: nothing outside the container's loopback answers, the host's own listeners
 *    included (and the same command does reach them in network mode "host": the check works;
 *    on gVisor modes "host" and "allowlist" are refused);
 *  - the root file system is read-only even to uid 0 inside;
 *  - no capabilities: root inside cannot chown, mount, set the hostname, open raw sockets,
 *    read another user's file, or reach a host device through a node it makes;
 *  - no-new-privileges: a setuid binary on the (not nosuid) workspace does not raise the uid;
 *  - not root: commands run as a non-root user, and the host processes that run them are not
 *    host root;
 *  - limits: memory, pids (runc), processes (RLIMIT_NPROC) hold;
 *  - the workdir is all of the host's files a command can see;
 *  - the exec server: its channel to the host cannot be reopened through /proc, its memory
 *    not written, a detached server's socket refuses processes inside, and its seccomp
 *    filter binds every command;
 *  - no engine socket inside, and the protected paths read-only;
 *  - the runtime: commands run on the one configured (gVisor's kernel or the host's), and a
 *    container found by its labels that runs on another is replaced, not used.
 *
 * Where gVisor differs it is said at the check, with the reason: it emulates the kernel, so
 * some refusals come as another errno, and some of what Linux refuses it allows in its own
 * memory only (a device node in its tmpfs reaches no host device). The conformance suite runs
 * on gVisor too (tests/meson.build). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "backend_support.h"
#include "support.h"

/* A uid no other process of this host is likely to have: RLIMIT_NPROC counts per uid, and on
 * runc the container's uids are the host's. */
#define LONELY_UID "47123"

static bool gvisor(void)
{
	return bt_processes_hidden();
}

/* The "docker" object: the test image, this run's options (the runtime), and more. */
static char *docker_object(const char *more)
{
	const char *run = getenv("SBX_TEST_DOCKER_OPTIONS");

	return bt_fmt("\"docker\":{\"image\":\"%s\"%s%s%s%s}", bt_docker_image(),
	              run && *run ? "," : "", run && *run ? run : "", more ? "," : "",
	              more ? more : "");
}

static int open_with(const char *workdir, const char *more, const char *extra,
                     sbx_workspace **w)
{
	char *docker = docker_object(more);
	char *all = extra ? bt_fmt("%s,%s", docker, extra) : bt_fmt("%s", docker);
	int r = bt_open(workdir, all, w);

	free(docker);
	free(all);
	return r;
}

static sbx_workspace *open_ok(const char *workdir, const char *more, const char *extra)
{
	sbx_workspace *w = NULL;
	int r = open_with(workdir, more, extra, &w);

	ck_assert_msg(r == 0, "open (%s / %s): %d %s", more ? more : "-", extra ? extra : "-", r,
	              sbx_last_error());
	return w;
}

/* Root inside, without capabilities: the interesting case for what capabilities guard. */
static sbx_workspace *open_as_root(const char *workdir)
{
	/* Without CAP_DAC_OVERRIDE root enters and writes the workdir only as others may. */
	ck_assert_int_eq(chmod(workdir, 0777), 0);
	return open_ok(workdir, "\"user\":\"0:0\"", NULL);
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	ck_assert_msg(in >= 0, "open %s: %s", from, strerror(errno));
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	ck_assert_msg(out >= 0, "create %s: %s", to, strerror(errno));
	while ((n = read(in, buf, sizeof buf)) > 0)
		ck_assert_int_eq(write(out, buf, (size_t)n), n);
	ck_assert_int_eq(n, 0);
	close(in);
	ck_assert_int_eq(close(out), 0);
}

static char *out_of(sbx_workspace *w, const char *cmd)
{
	sbx_result *res = bt_shell(w, cmd, NULL);
	char *out = bt_fmt("%s%s", sbx_result_stdout(res, NULL), sbx_result_stderr(res, NULL));

	sbx_result_free(res);
	return out;
}

static void assert_has(const char *text, const char *want)
{
	ck_assert_msg(strstr(text, want), "expected \"%s\" in:\n%s", want, text);
}

static void assert_lacks(const char *text, const char *unwanted)
{
	ck_assert_msg(!strstr(text, unwanted), "did not expect \"%s\" in:\n%s", unwanted, text);
}

/* ---- network ------------------------------------------------------------------------------ */

/* A TCP listener on every host address, port chosen by the kernel. */
static int host_listener(int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
	socklen_t len = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	ck_assert_int_eq(listen(fd, 16), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

static bool listener_was_reached(int fd)
{
	int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

	if (c >= 0)
		close(c);
	return c >= 0;
}

/* Connects with nc to each of the host's IPv4 addresses (loopback, the docker bridge, the
 * uplink) and one on the internet: every line "ADDR rc=N". A connection that succeeds is
 * held open (nothing accepts it) until timeout kills nc: rc=137; one that fails ends nc at
 * once, or after its 3 s connect timeout: rc=1. */
static char *try_every_address(int port)
{
	struct ifaddrs *ifs = NULL, *i;
	char *cmd = bt_fmt("for a in 1.1.1.1"), *more;

	ck_assert_int_eq(getifaddrs(&ifs), 0);
	for (i = ifs; i; i = i->ifa_next) {
		char addr[INET_ADDRSTRLEN];

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, addr, sizeof addr);
		more = bt_fmt("%s %s", cmd, addr);
		free(cmd);
		cmd = more;
	}
	freeifaddrs(ifs);
	more = bt_fmt("%s; do timeout -s KILL 5 nc -w 3 $a %d </dev/null >/dev/null 2>&1; "
	              "echo \"$a rc=$?\"; done", cmd, port);
	free(cmd);
	return more;
}

START_TEST(test_no_network_reaches_the_host_or_beyond)
{
	int port, fd = host_listener(&port);
	char *cmd = try_every_address(port);
	sbx_workspace *w = open_ok(bt_mkdtemp(), NULL, NULL);
	char *out = out_of(w, cmd), *nets = out_of(w, "ls /sys/class/net");

	ck_assert_str_eq(nets, "lo\n");
	assert_has(out, "127.0.0.1 rc=1\n");
	assert_lacks(out, "rc=137");
	ck_assert_msg(!listener_was_reached(fd), "a host listener was reached from inside");
	sbx_workspace_close(w);
	free(out);
	/* The same command reaches the host's loopback listener from the host's network: what
	 * failed above failed for the network mode. gVisor registered with --network=none has no
	 * host network to give (tests/docker/start-engine.sh), and its netstack's sockets cannot
	 * go to the allowlist proxy: both modes are refused there, naming the key. */
	if (gvisor()) {
		for (const char *const *m = (const char *const[]){ "host", "allowlist", NULL }; *m; m++) {
			char *net = bt_fmt("\"network\":{\"mode\":\"%s\"}", *m);

			w = NULL;
			ck_assert_int_eq(open_with(bt_mkdtemp(), NULL, net, &w), -SBX_ECONFIG);
			assert_has(sbx_last_error(), "network.mode");
			free(net);
		}
	} else {
		w = open_ok(bt_mkdtemp(), NULL, "\"network\":{\"mode\":\"host\"}");
		out = out_of(w, cmd);
		assert_has(out, "127.0.0.1 rc=137\n");
		ck_assert(listener_was_reached(fd));
		sbx_workspace_close(w);
		free(out);
	}
	free(nets);
	free(cmd);
	close(fd);
}
END_TEST

/* ---- the root file system ------------------------------------------------------------------ */

START_TEST(test_root_is_read_only_even_to_root)
{
	sbx_workspace *w = open_as_root(bt_mkdtemp());
	char *out = out_of(w, "id -u; echo x >> /etc/passwd; touch /new; mkdir /usr/new; "
	                      "cp /bin/busybox /bin/new; mount -o remount,rw / 2>&1; "
	                      "echo ok > /tmp/t && cat /tmp/t; echo ok > w && cat w");

	assert_has(out, "0\n");   /* root: the owner of every file above */
	assert_has(out, "/etc/passwd: Read-only file system");
	assert_has(out, "/new: Read-only file system");
	assert_has(out, "/usr/new': Read-only file system");
	assert_has(out, "/bin/new': Read-only file system");
	assert_has(out, "mount: permission denied");
	assert_has(out, "ok\nok\n");   /* /tmp and the workspace are what is writable */
	free(out);
	sbx_workspace_close(w);
}
END_TEST

/* ---- capabilities -------------------------------------------------------------------------- */

START_TEST(test_no_capabilities_even_as_root)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w;
	char *out;

	/* Another user's private file: only CAP_DAC_OVERRIDE would let root read it. */
	test_put_file(dir, "private", "secret\n", 0600);
	ck_assert_int_eq(chown(bt_tmp("%s/private", dir), 65534, 65534), 0);
	w = open_as_root(dir);
	bt_install_program(w, "SBX_TEST_PROBE", "sbx-probe");
	out = out_of(w, "./sbx-probe caps; touch /tmp/f; chown 1234 /tmp/f; hostname other; "
	                "mount -t tmpfs none /tmp; ping -c 1 -W 1 127.0.0.1; cat private; "
	                "mknod /workspace/node c 1 3; echo done");
	assert_has(out, "CapPrm 0000000000000000\n");
	assert_has(out, "CapEff 0000000000000000\n");
	assert_has(out, "CapBnd 0000000000000000\n");
	assert_has(out, "CapInh 0000000000000000\n");
	/* gVisor has no ambient set to show; where there is one, it is empty. */
	ck_assert(!strstr(out, "CapAmb ") || strstr(out, "CapAmb 0000000000000000\n"));
	assert_has(out, "chown: /tmp/f: Operation not permitted");
	assert_has(out, "sethostname: Operation not permitted");
	assert_has(out, "mount: permission denied");
	assert_has(out, "ping: permission denied");
	assert_has(out, "cat: can't open 'private': Permission denied");
	assert_has(out, "mknod: /workspace/node: Operation not permitted");
	assert_lacks(out, "secret");
	assert_has(out, "done\n");
	free(out);
	/* A device node in the container's own /tmp: Linux refuses it without CAP_MKNOD. gVisor
	 * (release 20221219) would let anyone make one in its in-memory tmpfs (reaching only the
	 * devices it emulates); the exec server's seccomp baseline (helpers/init/seccomp_table.c:
	 * mknod of devices refused) stops it first on every runtime. */
	out = out_of(w, "mknod /tmp/mem c 1 1 && echo made; head -c 1 /tmp/mem; "
	                "mknod /tmp/disk b 8 0 && echo made; echo done");
	assert_has(out, "mknod: /tmp/mem: Operation not permitted");
	assert_has(out, "mknod: /tmp/disk: Operation not permitted");
	assert_lacks(out, "made");
	assert_has(out, "done\n");
	free(out);
	sbx_workspace_close(w);
}
END_TEST

/* ---- no new privileges, not root ----------------------------------------------------------- */

START_TEST(test_setuid_binary_does_not_raise_the_uid)
{
	const char *probe = getenv("SBX_TEST_PROBE");
	char *dir = bt_mkdtemp(), *suid = bt_fmt("%s/suid-probe", dir), *out;
	char *want = bt_fmt("ids " LONELY_UID " " LONELY_UID "\n");
	sbx_workspace *w;

	/* The probe, setuid to this test's user (root in CI); the commands run as another uid,
	 * and the workspace's mount is not nosuid: only no_new_privs keeps the uid. */
	ck_assert_msg(probe, "SBX_TEST_PROBE is not set");
	copy_file(probe, suid);
	ck_assert_int_eq(chmod(suid, 04755), 0);
	ck_assert_int_eq(chmod(dir, 0755), 0);
	w = open_ok(dir, "\"user\":\"" LONELY_UID ":" LONELY_UID "\"", NULL);
	out = out_of(w, "ls -l suid-probe; grep ' /workspace ' /proc/mounts; ./suid-probe ids nnp");
	assert_has(out, "-rwsr-xr-x");
	ck_assert_msg(!strstr(strstr(out, " /workspace ") ? strstr(out, " /workspace ") : "",
	                      "nosuid"), "the workspace is mounted nosuid: %s", out);
	assert_has(out, want);
	assert_has(out, "nnp 1\n");
	free(out);
	free(want);
	free(suid);
	sbx_workspace_close(w);
}
END_TEST

START_TEST(test_not_root_inside_nor_on_the_host)
{
	char *dir = bt_mkdtemp();
	const char *mark = bt_marker();
	sbx_workspace *w = open_ok(dir, NULL, NULL);
	const char *argv[] = { "sleep", mark, NULL };
	sbx_process *p = NULL;
	int pids[64], n, runners = 0;
	char *uid = out_of(w, "id -u");

	ck_assert_str_ne(uid, "0\n");
	ck_assert_int_eq(sbx_process_spawn(w, argv, NULL, &p), 0);
	ck_assert(bt_ws_wait_for_process(w, mark, true));
	/* runc: every process of the container is a host process of that uid. gVisor: the host
	 * sees the Sentry (runsc-sandbox), which runs every task, as an unprivileged user, and
	 * its gofer as root; the gofer runs none of the workspace's code, only file requests. */
	n = bt_sandbox_pids(dir, pids, 64);
	ck_assert_int_gt(n, 0);
	for (int i = 0; i < n; i++) {
		char *pid = bt_fmt("%d", pids[i]);
		const char *status = test_slurp(bt_tmp("/proc/%d/status", pids[i]));
		bool sentry = bt_pid_cmdline_has(pid, "runsc-sandbox");

		if (status && (!gvisor() || sentry)) {
			ck_assert_msg(!strstr(status, "\nUid:\t0\t"), "host process %d (%s) is root",
			              pids[i], sentry ? "runsc-sandbox" : "of the container");
			runners++;
		}
		free(pid);
	}
	ck_assert_int_gt(runners, 0);
	sbx_process_free(p);
	free(uid);
	sbx_workspace_close(w);
}
END_TEST

/* ---- limits -------------------------------------------------------------------------------- */

/* One 200 MB string: a single allocation, no pipe (gVisor's ptrace platform makes moving
 * 200 MB through a pipe take a minute and a half). */
#define ALLOC_200MB "awk 'BEGIN { s = sprintf(\"%200000000s\", \"\"); print \"len=\" length(s) }'"

/* 128 MiB, not less: on gVisor the limit holds the Sentry, the gofer and the runner too, and a
 * sanitizer-built runner is big enough that under 64 MiB the host's OOM killer ended the
 * Sentry (the whole container) before gVisor refused the allocation. */
START_TEST(test_memory_limit_holds)
{
	sbx_workspace *w = open_ok(bt_mkdtemp(), NULL, "\"limits\":{\"memory_bytes\":134217728}");
	sbx_result *res = bt_shell(w, ALLOC_200MB, NULL);
	char *out;

	/* The allocation fails and the workspace goes on, on runc and on gVisor alike (whose
	 * Sentry holds every process's memory in the container's cgroup). */
	assert_lacks(sbx_result_stdout(res, NULL), "len=");
	assert_has(sbx_result_stderr(res, NULL), "out of memory");
	ck_assert_int_ne(sbx_result_exit_code(res), 0);
	sbx_result_free(res);
	out = out_of(w, "echo alive");
	ck_assert_str_eq(out, "alive\n");
	free(out);
	sbx_workspace_close(w);
	/* The same allocation under a limit it fits in: the limit was what refused it. */
	w = open_ok(bt_mkdtemp(), NULL, "\"limits\":{\"memory_bytes\":536870912}");
	res = bt_shell(w, ALLOC_200MB, NULL);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "len=200000000\n");
	sbx_result_free(res);
	sbx_workspace_close(w);
}
END_TEST

/* Starts up to 64 sleeps, saying after each how many run (a builtin: no fork). The shell
 * ends at the first fork that fails; the sleeps end with the command. */
#define START_64 "n=0; while [ $n -lt 64 ]; do sleep 60 & n=$((n+1)); echo started=$n; done"

static int started_count(const char *out)
{
	const char *p = out, *last = NULL;

	while ((p = strstr(p, "started=")))
		last = p++;
	ck_assert_msg(last, "no count in: %s", out);
	return atoi(last + strlen("started="));
}

START_TEST(test_pids_limit_holds)
{
	sbx_workspace *w = NULL;
	char *out;
	int r;

	/* gVisor: the engine's pids limit counts the Sentry's own host threads (several per
	 * process inside with the ptrace platform), and reaching it stops the whole sandbox, even
	 * its start: the backend refuses the key there and names limits.processes. */
	if (gvisor()) {
		r = open_with(bt_mkdtemp(), NULL, "\"limits\":{\"pids\":64}", &w);
		ck_assert_int_eq(r, -SBX_ECONFIG);
		assert_has(sbx_last_error(), "limits.pids");
		assert_has(sbx_last_error(), "limits.processes");
		return;
	}
	w = open_ok(bt_mkdtemp(), NULL, "\"limits\":{\"pids\":32}");
	out = out_of(w, START_64);
	ck_assert_int_lt(started_count(out), 32);   /* the server, runner and shell count too */
	free(out);
	sbx_workspace_close(w);
}
END_TEST

START_TEST(test_process_limit_holds)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w;
	char *out;

	ck_assert_int_eq(chmod(dir, 0755), 0);   /* the lonely user's way in */
	w = open_ok(dir, "\"user\":\"" LONELY_UID ":" LONELY_UID "\"",
	            "\"limits\":{\"processes\":16}");
	out = out_of(w, START_64);
	ck_assert_int_lt(started_count(out), 16);   /* likewise */
	free(out);
	sbx_workspace_close(w);
}
END_TEST

/* ---- the workdir is all a command sees of the host ----------------------------------------- */

START_TEST(test_only_the_workdir_of_the_host_is_visible)
{
	char *dir = bt_mkdtemp(), *parent = strdup(dir), *name = bt_fmt("outside-%d", getpid());
	char *cmd = bt_fmt("cat /workspace/../%s; find / \\( -path /proc -o -path /sys \\) -prune "
	                   "-o -name '%s*' -print 2>/dev/null; echo done", name, name);
	sbx_workspace *w;
	char *out;

	*strrchr(parent, '/') = '\0';
	test_put_file(parent, name, "host\n", 0644);
	test_put_file(dir, bt_tmp("%s-inside", name), "inside\n", 0644);
	w = open_ok(dir, NULL, NULL);
	out = out_of(w, cmd);
	/* The one found is the copy in the workspace: the search works, and sees no further. */
	assert_has(out, bt_tmp("/workspace/%s-inside\n", name));
	assert_lacks(out, "host\n");
	assert_lacks(out, bt_tmp("%s\n", name));
	assert_has(out, "done\n");
	free(out);
	sbx_workspace_close(w);
	unlink(bt_tmp("%s/%s", parent, name));
	free(cmd);
	free(name);
	free(parent);
}
END_TEST

START_TEST(test_no_engine_socket_inside)
{
	sbx_workspace *w = open_as_root(bt_mkdtemp());
	char *out;

	bt_install_program(w, "SBX_TEST_PROBE", "sbx-probe");
	out = out_of(w, "for s in /var/run/docker.sock /run/docker.sock /run/containerd/containerd.sock"
	                " /var/run/docker/containerd/containerd.sock; do ./sbx-probe connect $s; "
	                "done; echo sockets:; find / \\( -path /proc -o -path /sys \\) -prune -o "
	                "-type s -print 2>/dev/null; echo done");
	assert_has(out, "connect /var/run/docker.sock ENOENT\n");
	assert_has(out, "connect /run/docker.sock ENOENT\n");
	assert_has(out, "connect /run/containerd/containerd.sock ENOENT\n");
	assert_has(out, "connect /var/run/docker/containerd/containerd.sock ENOENT\n");
	assert_has(out, "sockets:\ndone\n");   /* and no socket file anywhere inside */
	free(out);
	sbx_workspace_close(w);
}
END_TEST

START_TEST(test_protected_paths_read_only)
{
	char *dir = bt_mkdtemp();
	sbx_workspace *w;
	sbx_result *res;

	ck_assert_int_eq(mkdir(bt_tmp("%s/.git", dir), 0755), 0);
	ck_assert_int_eq(mkdir(bt_tmp("%s/.git/hooks", dir), 0755), 0);
	test_put_file(dir, ".git/config", "[core]\n", 0644);
	test_put_file(dir, ".git/hooks/pre-commit", "#!/bin/sh\n", 0755);
	/* Owned by the container's user: only the read-only binds stop the writes. */
	if (geteuid() == 0)
		for (const char *const *p = (const char *const[]){ ".git", ".git/config",
		                                                  ".git/hooks", NULL }; *p; p++)
			ck_assert_int_eq(chown(bt_tmp("%s/%s", dir, *p), BT_DOCKER_UID, BT_DOCKER_UID), 0);
	w = open_ok(dir, NULL, NULL);
	res = bt_shell(w, "echo x >> .git/config; echo x > .git/hooks/post-commit; "
	                  "echo x > .agentsbx/planted; echo done", NULL);
	ck_assert_str_eq(sbx_result_stdout(res, NULL), "done\n");
	ck_assert_int_eq(test_exists(bt_tmp("%s/.git/hooks/post-commit", dir)), 0);
	ck_assert_int_eq(test_exists(bt_tmp("%s/.agentsbx/planted", dir)), 0);
	ck_assert_str_eq(test_slurp(bt_tmp("%s/.git/config", dir)), "[core]\n");
	sbx_result_free(res);
	sbx_workspace_close(w);
}
END_TEST

/* ---- the exec server ----------------------------------------------------------------------- */

START_TEST(test_exec_server_cannot_be_taken_over)
{
	sbx_workspace *w = open_ok(bt_mkdtemp(), NULL, NULL);
	char *out;

	/* The server (PID 1) holds the channel to the host on fd 3. Linux closes its /proc
	 * entries to commands (it is not dumpable). gVisor 20221219 checks that for mem only and
	 * lists the fds, but never reopens a socket through /proc (ENXIO): either way no command
	 * gets the channel, or the server's memory. */
	out = out_of(w, "ls /proc/1/fd >/dev/null && echo listed; echo x > /proc/1/fd/3; "
	                "cat /proc/1/fd/3; printf x | dd of=/proc/1/mem bs=1 seek=4194304 2>&1; "
	                "echo done");
	assert_has(out, gvisor() ? "/proc/1/fd/3: No such device or address"
	                         : "/proc/1/fd/3: Permission denied");
	assert_has(out, "can't open '/proc/1/mem': Permission denied");
	if (!gvisor())
		assert_lacks(out, "listed");
	assert_has(out, "done\n");
	free(out);
	sbx_workspace_close(w);
}
END_TEST

START_TEST(test_exec_server_seccomp_binds_commands)
{
	sbx_workspace *w = open_ok(bt_mkdtemp(), NULL, NULL);
	char *out;

	/* The server's own filter (the ns backend's), on top of the engine's profile on runc and
	 * the only one on gVisor, whose Sentry enforces it: without it gVisor answers these
	 * ESRCH, ENOSYS, ENODEV, EINVAL (docs/security.md). */
	bt_install_program(w, "SBX_TEST_PROBE", "sbx-probe");
	out = out_of(w, "./sbx-probe syscall ptrace process_vm_readv userfaultfd perf_event_open "
	                "io_uring_setup bpf keyctl; grep '^Seccomp:' /proc/self/status");
	assert_has(out, "ptrace EPERM\n");
	assert_has(out, "process_vm_readv EPERM\n");
	assert_has(out, "userfaultfd EPERM\n");
	assert_has(out, "perf_event_open EPERM\n");
	assert_has(out, "io_uring_setup EPERM\n");
	assert_has(out, "bpf EPERM\n");
	assert_has(out, "keyctl EPERM\n");
	assert_has(out, "Seccomp:\t2\n");
	free(out);
	sbx_workspace_close(w);
}
END_TEST

START_TEST(test_detached_server_refuses_processes_inside)
{
	char *dir = bt_mkdtemp();
	const char *id = bt_tmp("sec-detached-%d", (int)getpid());
	char *extra = bt_fmt("\"id\":\"%s\"", id), *out;
	sbx_workspace *w = NULL;
	int r;

	/* gVisor cannot listen on the socket a detached server is handed by the host: the
	 * combination is refused, naming the key, and detached gVisor workspaces use the exec
	 * API, which has no socket of the server's at all. */
	if (gvisor()) {
		r = open_with(dir, "\"detached\":true", extra, &w);
		ck_assert_int_eq(r, -SBX_ECONFIG);
		assert_has(sbx_last_error(), "docker.detached");
		w = open_ok(dir, "\"detached\":true,\"exec\":\"api\",\"idle_ttl_s\":0", extra);
		ck_assert_int_eq(test_exists(bt_tmp("%s/.agentsbx/run/sock", dir)), 0);
		out = out_of(w, "echo ran");
		ck_assert_str_eq(out, "ran\n");
		free(out);
	} else {
		/* As root inside, the same uid as this (root) host process: only the server's check
		 * that its peer is outside its PID namespace keeps commands out. */
		ck_assert_int_eq(chmod(dir, 0777), 0);
		w = open_ok(dir, "\"detached\":true,\"user\":\"0:0\"", extra);
		bt_install_program(w, "SBX_TEST_PROBE", "sbx-probe");
		out = out_of(w, "./sbx-probe connect /workspace/.agentsbx/run/sock");
		assert_has(out, "connect /workspace/.agentsbx/run/sock ");
		assert_lacks(out, "answered");
		assert_lacks(out, "silent");
		free(out);
	}
	sbx_workspace_close(w);
	/* Detached: close leaves it; an ephemeral open of the id replaces it and goes at close. */
	w = open_ok(dir, gvisor() ? "\"exec\":\"api\"" : NULL, extra);
	sbx_workspace_close(w);
	ck_assert_int_eq(bt_wait_for_sandbox_gone(dir), 0);
	free(extra);
}
END_TEST

/* ---- the runtime -------------------------------------------------------------------------- */

START_TEST(test_commands_run_on_the_configured_runtime)
{
	sbx_workspace *w = open_ok(bt_mkdtemp(), NULL, NULL);
	char *release = out_of(w, "uname -r");
	struct utsname host;

	/* gVisor's kernel says it is Linux 4.4.0 (release 20221219), whatever the host runs. */
	ck_assert_int_eq(uname(&host), 0);
	if (gvisor())
		ck_assert_str_eq(release, "4.4.0\n");
	else
		ck_assert_str_eq(release, bt_tmp("%s\n", host.release));
	free(release);
	sbx_workspace_close(w);
}
END_TEST

/* The runtime a copy of the container is made on: another than this run's. */
static const char *other_runtime(void)
{
	char *probe = NULL;
	bool has_runsc;

	if (gvisor())
		return "runc";
	ck_assert_int_eq(sbx_backends_probe(&probe), 0);
	has_runsc = strstr(probe, "runsc (") != NULL;
	sbx_free(probe);
	return has_runsc ? "runsc" : NULL;
}

static void run_or_fail(const char *cmd)
{
	ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
}

/* Someone with the engine's socket makes a container with the workspace's labels (spec digest
 * included) on another runtime. The open must not use it: a gVisor workspace would run on
 * runc otherwise. It replaces it and says so in the audit log. */
START_TEST(test_labelled_container_of_another_runtime_is_replaced)
{
	const char *other = other_runtime();
	char *dir = bt_mkdtemp(), *audit, *out;
	const char *id = bt_tmp("sec-runtime-%d", (int)getpid());
	const char *filter = bt_tmp("label=io.agentsbx.workspace=%s", id);
	char *extra;
	sbx_workspace *w;

	/* CI (SBX_TEST_REQUIRE names docker) registers runsc: there a missing one fails. */
	ck_assert_msg(other || !bt_backend_required(), "runsc is not registered with the engine "
	              "(tests/docker/start-engine.sh)");
	TEST_NEED("runsc", other != NULL, "runsc is not registered with the engine");
	extra = bt_fmt("\"id\":\"%s\"", id);
	/* Detached through the exec API: the container's main process is a plain sleep loop,
	 * which a copy can run as well. */
	w = open_ok(dir, "\"detached\":true,\"exec\":\"api\",\"idle_ttl_s\":0", extra);
	sbx_workspace_close(w);
	run_or_fail(bt_tmp("set -e; c=$(docker ps -q --filter %s); "
	                   "labels=$(docker inspect -f '{{range $k, $v := .Config.Labels}}--label "
	                   "{{$k}}={{$v}} {{end}}' $c); docker rm -f $c >/dev/null; "
	                   "docker create --runtime %s --network none $labels %s /bin/sh -c "
	                   "'while :; do sleep 86400; done' >/dev/null; "
	                   "docker start $(docker ps -aq --filter %s) >/dev/null",
	                   filter, other, bt_docker_image(), filter));
	w = open_ok(dir, "\"detached\":true,\"exec\":\"api\",\"idle_ttl_s\":0", extra);
	/* The copy runs no agentsbx-run: a command on it could not even start. */
	out = out_of(w, "echo ran");
	ck_assert_str_eq(out, "ran\n");
	free(out);
	audit = test_slurp(sbx_audit_path(w));
	ck_assert_ptr_nonnull(audit);
	assert_has(audit, "\"event\":\"container-replaced\"");
	assert_has(audit, bt_tmp("runs on runtime '%s', not on '%s'", other,
	                         gvisor() ? "runsc" : "runc"));
	sbx_workspace_close(w);
	/* An ephemeral open replaces the detached container and takes it along at close. */
	w = open_ok(dir, "\"exec\":\"api\"", extra);
	sbx_workspace_close(w);
	ck_assert_int_eq(bt_wait_for_sandbox_gone(dir), 0);
	free(extra);
}
END_TEST

static Suite *docker_security_suite(void)
{
	Suite *s = suite_create("docker-security");
	TCase *tc = tcase_create("walls");

	tcase_add_test(tc, test_no_network_reaches_the_host_or_beyond);
	tcase_add_test(tc, test_root_is_read_only_even_to_root);
	tcase_add_test(tc, test_no_capabilities_even_as_root);
	tcase_add_test(tc, test_setuid_binary_does_not_raise_the_uid);
	tcase_add_test(tc, test_not_root_inside_nor_on_the_host);
	tcase_add_test(tc, test_only_the_workdir_of_the_host_is_visible);
	tcase_add_test(tc, test_no_engine_socket_inside);
	tcase_add_test(tc, test_protected_paths_read_only);
	suite_add_tcase(s, tc);
	tc = tcase_create("limits");
	tcase_add_test(tc, test_memory_limit_holds);
	tcase_add_test(tc, test_pids_limit_holds);
	tcase_add_test(tc, test_process_limit_holds);
	suite_add_tcase(s, tc);
	tc = tcase_create("exec-server");
	tcase_add_test(tc, test_exec_server_cannot_be_taken_over);
	tcase_add_test(tc, test_exec_server_seccomp_binds_commands);
	tcase_add_test(tc, test_detached_server_refuses_processes_inside);
	suite_add_tcase(s, tc);
	tc = tcase_create("runtime");
	tcase_add_test(tc, test_commands_run_on_the_configured_runtime);
	tcase_add_test(tc, test_labelled_container_of_another_runtime_is_replaced);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return bt_main(docker_security_suite);
}
