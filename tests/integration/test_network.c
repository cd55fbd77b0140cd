/* Network policies of the sandbox backends (ns, bwrap, docker): mode "allowlist" lets a command
 * reach exactly what the allow list names, through the workspace's proxy, by every protocol
 * the proxy speaks — and nothing by any other path a process inside can try; every attempt
 * lands in the audit log with the rule that decided it. Mode "host" is recorded as an
 * exposure.
 *
 * The servers are the test's own: on the host's loopback (any user), and — as root — test
 * hosts in a network namespace the test makes with `ip netns add` and a veth pair, at
 * documentation addresses (203.0.113.0/24), with their names in a private /etc/hosts bound
 * in a mount namespace of the test process only. Without root those parts skip, saying so.
 *
 * On docker the image is agentsbx-test:net (tests/docker/build-image.sh with the clients the
 * suite runs: curl, bash, perl, getent, git), and the commands run through its exec server,
 * whose bridge hands connections to the host's proxy over the bound state folder.
 *
 * Inside, the probe tests/probe/sbx-netprobe.c makes the raw attempts. NO_PROXY keeps
 * "localhost" away from the proxy (a tool inside talking to a server inside); the tests
 * that reach the host's loopback through the proxy unset it. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <agentsbx/agentsbx.h>
#include "backend_support.h"
#include "support.h"

#define PROXY_PORT 3128
#define TIMEOUT_MS 60000
#define MAX_CLIENTS 2100

/* ---- the test's servers ------------------------------------------------------------------ */

/* A server process: answers "GET ..." with a page naming the address it was reached at,
 * echoes anything else. One poll loop, so it holds a thousand connections at once. */
struct server {
	pid_t pid;
	int port;
};

struct client {
	int fd;
	bool http;
	size_t len;
	char buf[1024];
};

static void answer_http(struct client *c)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	char addr[64] = "?", page[256];
	int n;

	getsockname(c->fd, (struct sockaddr *)&ss, &len);
	if (ss.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, addr, sizeof addr);
	n = snprintf(page, sizeof page, "hello from %s\n", addr);
	dprintf(c->fd, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n"
	        "%s", n, page);
}

/* Handles readable data; false when the connection is done. */
static bool serve_client(struct client *c)
{
	ssize_t n = read(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len);

	if (n <= 0)
		return false;
	if (!c->http && c->len == 0 && n >= 4 && !memcmp(c->buf, "GET ", 4))
		c->http = true;
	if (!c->http)
		return write(c->fd, c->buf, (size_t)n) == n;
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	if (!strstr(c->buf, "\r\n\r\n"))
		return c->len + 1 < sizeof c->buf;
	answer_http(c);
	return false;
}

static _Noreturn void server_loop(int listener)
{
	static struct client clients[MAX_CLIENTS];
	static struct pollfd p[MAX_CLIENTS + 1];
	size_t n = 0;

	for (;;) {
		p[0] = (struct pollfd){ .fd = listener, .events = POLLIN };
		for (size_t i = 0; i < n; i++)
			p[i + 1] = (struct pollfd){ .fd = clients[i].fd, .events = POLLIN };
		if (poll(p, n + 1, -1) < 0)
			continue;
		for (size_t i = n; i-- > 0;) {
			if (!p[i + 1].revents || serve_client(&clients[i]))
				continue;
			close(clients[i].fd);
			clients[i] = clients[--n];
		}
		if ((p[0].revents & POLLIN) && n < MAX_CLIENTS) {
			int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				clients[n++] = (struct client){ .fd = fd };
		}
	}
}

/* Starts a server on addr:port (port 0: any), inside the network namespace netns when it is
 * not NULL. It dies with the test. */
static struct server start_server(const char *netns, const char *addr, int port)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int pipefd[2], listener;
	struct server s = { 0 };

	ck_assert_int_eq(pipe(pipefd), 0);
	s.pid = fork();
	ck_assert_int_ge(s.pid, 0);
	if (s.pid == 0) {
		struct rlimit lim;
		socklen_t len = sizeof in;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
			lim.rlim_cur = lim.rlim_max;
			setrlimit(RLIMIT_NOFILE, &lim);
		}
		if (netns) {
			char *path = bt_fmt("/var/run/netns/%s", netns);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0 || setns(fd, CLONE_NEWNET) < 0)
				_exit(1);
		}
		inet_pton(AF_INET, addr, &in.sin_addr);
		listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (listener < 0 || bind(listener, (struct sockaddr *)&in, sizeof in) < 0 ||
		    listen(listener, 4096) < 0 ||
		    getsockname(listener, (struct sockaddr *)&in, &len) < 0)
			_exit(1);
		port = ntohs(in.sin_port);
		if (write(pipefd[1], &port, sizeof port) != sizeof port)
			_exit(1);
		server_loop(listener);
	}
	close(pipefd[1]);
	ck_assert_int_eq(read(pipefd[0], &s.port, sizeof s.port), (ssize_t)sizeof s.port);
	close(pipefd[0]);
	return s;
}

static void stop_server(struct server *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
	}
	s->pid = 0;
}

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

/* ---- workspaces -------------------------------------------------------------------------- */

static bool is_docker(void)
{
	return !strcmp(bt_backend(), "docker");
}

static sbx_workspace *ws;
static char *workdir;
static struct server srv;

static sbx_workspace *open_allowlist(const char *dir, const char *lists)
{
	char *extra = bt_fmt("\"network\":{\"mode\":\"allowlist\"%s%s}", lists ? "," : "",
	                     lists ? lists : "");
	sbx_workspace *w = bt_open_ok(dir, extra);

	free(extra);
	bt_install_program(w, "SBX_TEST_NETPROBE", "sbx-netprobe");
	return w;
}

static void setup(void)
{
	workdir = bt_mkdtemp();
	srv = start_server(NULL, "127.0.0.1", 0);
}

static void teardown(void)
{
	sbx_workspace_close(ws);
	ws = NULL;
	stop_server(&srv);
}

static sbx_result *run(sbx_workspace *w, const char *cmd)
{
	sbx_exec_opts o = { .size = sizeof o, .timeout_ms = TIMEOUT_MS };

	return bt_shell(w, cmd, &o);
}

/* Runs cmd and returns its stdout (caller frees), whatever its exit code. */
static char *output_of(sbx_workspace *w, const char *cmd)
{
	sbx_result *res = run(w, cmd);
	char *out = bt_fmt("%s%s", sbx_result_stdout(res, NULL), sbx_result_stderr(res, NULL));

	ck_assert_msg(!sbx_result_timed_out(res), "`%s` hung", cmd);
	sbx_result_free(res);
	return out;
}

static void assert_output_has(sbx_workspace *w, const char *cmd, const char *expected)
{
	char *out = output_of(w, cmd);

	ck_assert_msg(strstr(out, expected), "`%s` printed [%s], not [%s]", cmd, out, expected);
	free(out);
}

/* The audit log's network records as one string (static, 1 MiB at most). */
static const char *network_records(sbx_workspace *w)
{
	static char all[1 << 20];
	const char *log = sbx_audit_path(w);
	FILE *f = log ? fopen(log, "r") : NULL;
	char line[8192];
	size_t len = 0;

	all[0] = '\0';
	while (f && fgets(line, sizeof line, f))
		if (strstr(line, "\"kind\":\"network\"") && len + strlen(line) < sizeof all) {
			memcpy(all + len, line, strlen(line) + 1);
			len += strlen(line);
		}
	if (f)
		fclose(f);
	return all;
}

static int count_of(const char *haystack, const char *needle)
{
	int n = 0;

	for (const char *p = haystack; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* How many network records hold needle, once that is n: the proxy writes a connection's
 * record when the connection ends, which may be a moment after the client has exited. Polls
 * for up to 5 s; returns the count seen last. */
static int records_with(sbx_workspace *w, const char *needle, int n)
{
	int64_t until = bt_now_ms() + 5000;
	int seen;

	while ((seen = count_of(network_records(w), needle)) != n && bt_now_ms() < until)
		usleep(20000);
	return seen;
}

/* curl through the proxy as the environment sets it, the host's loopback included. */
#define CURL "unset no_proxy NO_PROXY; curl -sS -m 20 "

/* ---- what is allowed is reachable, by every protocol ------------------------------------- */

START_TEST(test_allowed_host_reachable)
{
	char *lists = bt_fmt("\"allow\":[\"localhost:%d\"]", srv.port);
	char *cmd, *rule;

	ws = open_allowlist(workdir, lists);
	/* Plain HTTP through HTTP_PROXY, CONNECT (-p), SOCKS5 with the name resolved by the proxy,
	 * and a plain socket program speaking CONNECT itself. */
	cmd = bt_fmt(CURL "http://localhost:%d/", srv.port);
	assert_output_has(ws, cmd, "hello from 127.0.0.1");
	free(cmd);
	cmd = bt_fmt(CURL "-p http://localhost:%d/", srv.port);
	assert_output_has(ws, cmd, "hello from 127.0.0.1");
	free(cmd);
	cmd = bt_fmt(CURL "-x \"$ALL_PROXY\" http://localhost:%d/", srv.port);
	assert_output_has(ws, cmd, "hello from 127.0.0.1");
	free(cmd);
	cmd = bt_fmt("./sbx-netprobe get %d localhost %d", PROXY_PORT, srv.port);
	assert_output_has(ws, cmd, "connect HTTP/1.1 200");
	assert_output_has(ws, cmd, "body hello from 127.0.0.1");
	free(cmd);
	/* SOCKS5 with the greeting and the request in one write. */
	cmd = bt_fmt("./sbx-netprobe socks %d localhost %d", PROXY_PORT, srv.port);
	assert_output_has(ws, cmd, "socks method 00 reply 00\nget HTTP/1.0 200 OK");
	free(cmd);
	/* Each one is in the audit log: allowed, by which rule, how much it moved. */
	rule = bt_fmt("\"decision\":\"allow\",\"rule\":\"network.allow[0] localhost:%d\"",
	              srv.port);
	ck_assert_int_eq(records_with(ws, rule, 6), 6);
	ck_assert_int_eq(records_with(ws, "\"protocol\":\"http\"", 1), 1);
	ck_assert_int_eq(records_with(ws, "\"protocol\":\"connect\"", 3), 3);
	ck_assert_int_eq(records_with(ws, "\"protocol\":\"socks5\"", 2), 2);
	ck_assert_int_eq(records_with(ws, "\"bytes_down\":0", 0), 0);
	ck_assert_ptr_nonnull(strstr(network_records(ws), "\"event\":\"open\",\"mode\":\"allowlist\""));
	free(rule);
	free(lists);
}
END_TEST

START_TEST(test_environment_points_at_the_proxy)
{
	char *out;

	ws = open_allowlist(workdir, NULL);
	out = bt_shell_out(ws, "echo $HTTP_PROXY $https_proxy $ALL_PROXY $NO_PROXY $npm_config_proxy "
	                       "$PIP_PROXY; git config --get http.proxy");
	ck_assert_str_eq(out, "http://127.0.0.1:3128 http://127.0.0.1:3128 socks5h://127.0.0.1:3128 "
	                      "localhost,127.0.0.1,::1 http://127.0.0.1:3128 http://127.0.0.1:3128\n"
	                      "http://127.0.0.1:3128\n");
	free(out);
}
END_TEST

/* ---- what is not allowed is refused, saying by which rule -------------------------------- */

START_TEST(test_denied_host_refused_with_rule)
{
	char *lists = bt_fmt("\"allow\":[\"localhost:%d\",\"*.example.com\"],"
	                     "\"deny\":[\"*.internal.example.com\"]", srv.port);

	ws = open_allowlist(workdir, lists);
	assert_output_has(ws, CURL "-i http://db.internal.example.com/",
	                  "HTTP/1.1 403 Forbidden");
	assert_output_has(ws, CURL "-i http://db.internal.example.com/",
	                  "X-Agentsbx-Rule: network.deny[0] *.internal.example.com");
	assert_output_has(ws, CURL "http://db.internal.example.com/",
	                  "db.internal.example.com:80 is denied by network.deny[0]");
	assert_output_has(ws, "./sbx-netprobe get 3128 other.test 443",
	                  "other.test:443 matches no entry of network.allow");
	/* SOCKS5 has only a reply code for it: 2, "not allowed by ruleset" (after the method
	 * reply, also when the client sent both messages at once). */
	assert_output_has(ws, CURL "-x \"$ALL_PROXY\" http://db.internal.example.com/",
	                  "(2)");
	assert_output_has(ws, "./sbx-netprobe socks 3128 db.internal.example.com 80",
	                  "socks method 00 reply 02");
	ck_assert_int_eq(records_with(ws, "\"decision\":\"deny\",\"rule\":\"network."
	                                               "deny[0] *.internal.example.com\"", 5), 5);
	ck_assert_int_eq(records_with(ws, "\"decision\":\"deny\",\"rule\":\"default\"", 1), 1);
	free(lists);
}
END_TEST

START_TEST(test_ip_literal_of_allowed_name_refused)
{
	char *lists = bt_fmt("\"allow\":[\"localhost:%d\"]", srv.port);
	char *cmd;

	ws = open_allowlist(workdir, lists);
	cmd = bt_fmt("./sbx-netprobe get 3128 127.0.0.1 %d", srv.port);
	assert_output_has(ws, cmd, "connect HTTP/1.1 403");
	assert_output_has(ws, cmd, "name entries do not cover addresses");
	free(cmd);
	/* socks5 (not socks5h): curl resolves inside and asks for the address. */
	cmd = bt_fmt(CURL "-x socks5://127.0.0.1:3128 http://localhost:%d/", srv.port);
	assert_output_has(ws, cmd, "(2)");
	free(cmd);
	free(lists);
}
END_TEST

START_TEST(test_host_header_mismatch_refused)
{
	char *lists = bt_fmt("\"allow\":[\"localhost:%d\"]", srv.port);
	char *cmd;

	ws = open_allowlist(workdir, lists);
	cmd = bt_fmt("bash -c \"exec 3<>/dev/tcp/127.0.0.1/3128; printf 'CONNECT localhost:%d "
	             "HTTP/1.1\\r\\nHost: evil.example:%d\\r\\n\\r\\n' >&3; cat <&3\"", srv.port,
	             srv.port);
	assert_output_has(ws, cmd, "HTTP/1.1 400 Bad Request");
	free(cmd);
	cmd = bt_fmt("bash -c \"exec 3<>/dev/tcp/127.0.0.1/3128; printf 'GET http://localhost:%d/ "
	             "HTTP/1.1\\r\\nHost: evil.example\\r\\n\\r\\n' >&3; cat <&3\"", srv.port);
	assert_output_has(ws, cmd, "does not match the request target");
	free(cmd);
	ck_assert_int_eq(records_with(ws, "\"rule\":\"host-mismatch\"", 2), 2);
	free(lists);
}
END_TEST

/* ---- no other way out --------------------------------------------------------------------- */

START_TEST(test_direct_connections_fail)
{
	char ext[INET_ADDRSTRLEN], *cmd;
	int udp = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
	socklen_t len = sizeof in;
	char byte;

	ck_assert_int_eq(bind(udp, (struct sockaddr *)&in, sizeof in), 0);
	ck_assert_int_eq(getsockname(udp, (struct sockaddr *)&in, &len), 0);
	first_external_ipv4(ext, sizeof ext);
	ws = open_allowlist(workdir, "\"allow\":[\"localhost\"]");
	/* The host's loopback is not the sandbox's: nothing listens there. */
	cmd = bt_fmt("./sbx-netprobe tcp 127.0.0.1 %d", srv.port);
	assert_output_has(ws, cmd, "tcp ECONNREFUSED");
	free(cmd);
	cmd = bt_fmt("curl -sS -m 5 --noproxy '*' http://localhost:%d/", srv.port);
	assert_output_has(ws, cmd, "Couldn't connect");
	free(cmd);
	if (ext[0]) {
		cmd = bt_fmt("./sbx-netprobe tcp %s %d", ext, srv.port);
		assert_output_has(ws, cmd, "tcp ENETUNREACH");
		free(cmd);
		cmd = bt_fmt("./sbx-netprobe udp %s %d", ext, ntohs(in.sin_port));
		assert_output_has(ws, cmd, "udp ENETUNREACH");
		free(cmd);
	} else {
		fprintf(stderr, "note: the host has no non-loopback IPv4 address to try\n");
	}
	/* UDP to the loopback reaches only the sandbox's own. */
	cmd = bt_fmt("./sbx-netprobe udp 127.0.0.1 %d", ntohs(in.sin_port));
	assert_output_has(ws, cmd, "udp OK");
	free(cmd);
	ck_assert_int_eq(recv(udp, &byte, 1, MSG_DONTWAIT), -1);
	close(udp);
	/* Raw and packet sockets: no capability for them. ICMP datagram sockets: none on ns;
	 * Docker's default ping_group_range lets any group open one in a container, where it
	 * has only the container's own loopback to reach. */
	assert_output_has(ws, "./sbx-netprobe raw", "raw EPERM");
	assert_output_has(ws, "./sbx-netprobe packet", "packet EPERM");
	assert_output_has(ws, "./sbx-netprobe ping", is_docker() ? "ping OK" : "ping EACCES");
	if (is_docker() && ext[0]) {
		cmd = bt_fmt("./sbx-netprobe tcp %s 80", ext);
		assert_output_has(ws, cmd, "tcp ENETUNREACH");
		free(cmd);
	}
	/* And no name service: the resolver the host uses is out of reach. */
	assert_output_has(ws, "getent hosts example.com || echo no-dns", "no-dns");
}
END_TEST

/* ---- load ---------------------------------------------------------------------------------- */

START_TEST(test_thousand_concurrent_connections)
{
	char *lists = bt_fmt("\"allow\":[\"localhost:%d\"]", srv.port);
	char *cmd, *expect;

	ws = open_allowlist(workdir, lists);
	cmd = bt_fmt("./sbx-netprobe flood 1000 3128 localhost %d", srv.port);
	assert_output_has(ws, cmd, "flood 1000 connected 1000 echoed 1000");
	free(cmd);
	/* Still serving afterwards, and every one was recorded. */
	cmd = bt_fmt(CURL "http://localhost:%d/", srv.port);
	assert_output_has(ws, cmd, "hello from 127.0.0.1");
	free(cmd);
	expect = bt_fmt("\"rule\":\"network.allow[0] localhost:%d\"", srv.port);
	ck_assert_int_eq(records_with(ws, expect, 1001), 1001);
	free(expect);
	free(lists);
}
END_TEST

/* A client that sends its request one byte a second holds only its own connection, and is
 * cut off when the head has not arrived within the proxy's limit (10 s). */
START_TEST(test_slow_client_stalls_nobody)
{
	char *lists = bt_fmt("\"allow\":[\"localhost:%d\"]", srv.port);
	const char *slow[] = { "perl", "-MIO::Socket::INET", "-MIO::Select", "-e",
		"$s = IO::Socket::INET->new('127.0.0.1:3128') or die; $sel = IO::Select->new($s);"
		"for $c (split //, \"CONNECT localhost:1 HTTP/1.1\\r\\nHost: localhost:1\\r\\n\\r\\n\") {"
		"  print $s $c; $s->flush; if ($sel->can_read(1)) { $_ = <$s>; print; exit } }", NULL };
	sbx_process *p;
	char buf[256] = "";
	size_t n = 0;
	int64_t start;

	ws = open_allowlist(workdir, lists);
	ck_assert_int_eq(sbx_process_spawn(ws, slow, NULL, &p), 0);
	sleep(2);
	for (int i = 0; i < 10; i++) {
		char *cmd = bt_fmt(CURL "-o /dev/null -w '%%{time_total}' http://localhost:%d/", srv.port);
		sbx_result *res;

		start = bt_now_ms();
		res = run(ws, cmd);
		ck_assert_msg(bt_now_ms() - start < 2000, "a request took %lld ms beside a slow client",
		              (long long)(bt_now_ms() - start));
		ck_assert_int_eq(sbx_result_exit_code(res), 0);
		sbx_result_free(res);
		free(cmd);
	}
	ck_assert_int_eq(sbx_process_read(p, SBX_STDOUT, buf, sizeof buf - 1, 20000, &n), 0);
	ck_assert_msg(strstr(buf, "HTTP/1.1 408"), "the slow client got [%s]", buf);
	ck_assert_int_eq(sbx_process_wait(p, 10000, NULL, NULL), 0);
	sbx_process_free(p);
	ck_assert_int_eq(records_with(ws, "\"rule\":\"head-timeout\"", 1), 1);
	free(lists);
}
END_TEST

/* ---- changing the policy of an open workspace --------------------------------------------- */

START_TEST(test_policy_change_takes_effect)
{
	char *allow = bt_fmt("{\"mode\":\"allowlist\",\"allow\":[\"localhost:%d\"]}", srv.port);
	char *cmd = bt_fmt(CURL "http://localhost:%d/", srv.port);
	const char *hold[] = { "bash", "-c", NULL, NULL };
	char *hold_cmd = bt_fmt("exec 3<>/dev/tcp/127.0.0.1/3128; printf 'CONNECT localhost:%d "
	                        "HTTP/1.1\\r\\n\\r\\n' >&3; head -c 39 <&3; echo; cat <&3; "
	                        "echo closed", srv.port);
	sbx_process *p;
	char buf[256] = "";
	size_t n = 0;

	ws = open_allowlist(workdir, NULL);
	assert_output_has(ws, cmd, "matches no entry of network.allow");
	ck_assert_int_eq(sbx_workspace_set_network(ws, allow), 0);
	assert_output_has(ws, cmd, "hello from 127.0.0.1");
	/* An open tunnel the new policy refuses is closed. */
	hold[2] = hold_cmd;
	ck_assert_int_eq(sbx_process_spawn(ws, (const char *const *)hold, NULL, &p), 0);
	ck_assert_int_eq(sbx_process_read(p, SBX_STDOUT, buf, sizeof buf - 1, 10000, &n), 0);
	ck_assert_msg(strstr(buf, "200 Connection established"), "[%s]", buf);
	ck_assert_int_eq(sbx_workspace_set_network(ws, "{\"mode\":\"allowlist\"}"), 0);
	ck_assert_int_eq(sbx_process_wait(p, 10000, NULL, NULL), 0);
	sbx_process_free(p);
	assert_output_has(ws, cmd, "matches no entry of network.allow");
	ck_assert_ptr_nonnull(strstr(network_records(ws), "\"error\":\"closed by a policy change\""));
	/* Another mode cannot take effect in a running sandbox; a bad object changes nothing. */
	ck_assert_int_eq(sbx_workspace_set_network(ws, "{\"mode\":\"host\"}"), -SBX_ENOSYS);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "runs with 'allowlist'"));
	ck_assert_int_eq(sbx_workspace_set_network(ws, "{\"mode\":\"allowlist\",\"allow\":"
	                                               "[\"ok.test\",\"bad test\"]}"), -SBX_ECONFIG);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "key 'network.allow[1]'"));
	ck_assert_int_eq(sbx_workspace_set_network(ws, "{\"allow\":[]}"), -SBX_ECONFIG);
	ck_assert_int_eq(records_with(ws, "\"event\":\"set\"", 3), 3);
	ck_assert_int_eq(records_with(ws, "\"result\":\"refused\"", 1), 1);
	/* The policy outlives a reset. */
	ck_assert_int_eq(sbx_workspace_set_network(ws, allow), 0);
	ck_assert_int_eq(sbx_workspace_reset(ws), 0);
	bt_install_program(ws, "SBX_TEST_NETPROBE", "sbx-netprobe");
	assert_output_has(ws, cmd, "hello from 127.0.0.1");
	free(hold_cmd);
	free(cmd);
	free(allow);
}
END_TEST

START_TEST(test_other_modes_cannot_switch)
{
	sbx_workspace *none = bt_open_ok(workdir, NULL);

	ck_assert_int_eq(sbx_workspace_set_network(none, "{\"mode\":\"allowlist\"}"), -SBX_ENOSYS);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "runs with 'none'"));
	ck_assert_int_eq(sbx_workspace_set_network(none, "{\"mode\":\"none\"}"), 0);
	sbx_workspace_close(none);
}
END_TEST

/* ---- the proxy's lifetime, host mode, backends that cannot ----------------------------- */

START_TEST(test_proxy_lives_with_the_workspace)
{
	int before = bt_count_processes("agentsbx-proxy");

	ws = open_allowlist(workdir, NULL);
	ck_assert_int_eq(bt_count_processes("agentsbx-proxy"), before + 1);
	sbx_workspace_close(ws);
	ws = NULL;
	ck_assert_int_eq(bt_wait_for_process_count("agentsbx-proxy", before), before);
}
END_TEST

/* The host process dies (SIGKILL, no close): its proxy goes too, as its sandbox does. */
START_TEST(test_proxy_dies_with_the_host)
{
	int before = bt_count_processes("agentsbx-proxy"), ready[2];
	char byte = 0;
	pid_t host;

	ck_assert_int_eq(pipe(ready), 0);
	host = fork();
	ck_assert_int_ge(host, 0);
	if (host == 0) {
		sbx_workspace *w = NULL;

		if (bt_open(workdir, "\"network\":{\"mode\":\"allowlist\"}", &w) != 0 ||
		    write(ready[1], &byte, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	ck_assert_int_eq(read(ready[0], &byte, 1), 1);
	ck_assert_int_eq(bt_count_processes("agentsbx-proxy"), before + 1);
	kill(host, SIGKILL);
	waitpid(host, NULL, 0);
	ck_assert_int_eq(bt_wait_for_process_count("agentsbx-proxy", before), before);
	ck_assert_int_eq(bt_wait_for_sandbox_gone(workdir), 0);
	close(ready[0]);
	close(ready[1]);
}
END_TEST

START_TEST(test_host_mode_recorded_as_exposure)
{
	ws = bt_open_ok(workdir, "\"network\":{\"mode\":\"host\"}");
	ck_assert_ptr_nonnull(strstr(network_records(ws), "\"mode\":\"host\",\"exposure\":"
	                                                  "\"commands share the host's network"));
}
END_TEST

START_TEST(test_local_backend_refuses_allowlist)
{
	char *cfg = bt_fmt("{\"backend\":\"local\",\"workdir\":\"%s\",\"network\":"
	                   "{\"mode\":\"allowlist\"}}", workdir);
	sbx_workspace *w = NULL;

	ck_assert_int_eq(sbx_workspace_open(cfg, &w), -SBX_ECONFIG);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "backend 'local' cannot enforce 'allowlist'"));
	free(cfg);
}
END_TEST

/* The docker backend's proxy lives with the host process, and only its exec server can run
 * the bridge: the cases where that cannot be are refused, naming the key. */
START_TEST(test_docker_allowlist_needs_server_and_host)
{
	sbx_workspace *w = NULL;
	char *extra = bt_fmt("\"network\":{\"mode\":\"allowlist\"},\"docker\":{\"image\":\"%s\","
	                     "\"exec\":\"api\"}", bt_docker_image());

	ck_assert_int_eq(bt_open(workdir, extra, &w), -SBX_ECONFIG);
	ck_assert_msg(strstr(sbx_last_error(), "key 'docker.exec': network mode 'allowlist' needs "
	                     "the exec server"), "%s", sbx_last_error());
	free(extra);
	extra = bt_fmt("\"network\":{\"mode\":\"allowlist\"},\"docker\":{\"image\":\"%s\","
	               "\"detached\":true}", bt_docker_image());
	ck_assert_int_eq(bt_open(workdir, extra, &w), -SBX_ECONFIG);
	ck_assert_msg(strstr(sbx_last_error(), "key 'docker.detached': network mode 'allowlist' "
	                     "cannot be used by a detached container"), "%s", sbx_last_error());
	ck_assert_ptr_null(w);
	free(extra);
}
END_TEST

/* ---- as root: named test hosts in a network namespace ------------------------------------- */

static char netns[32], veth[16];
static struct server hosts;

static bool run_ok(const char *cmd)
{
	return system(cmd) == 0;
}

/* /etc/hosts of this test process only: a private mount namespace with a file bound over it.
 * The proxy, started by this process, resolves through it. */
static void private_hosts_file(const char *entries)
{
	const char *dir = bt_mkdtemp();

	test_put_file(dir, "hosts", entries, 0644);
	ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	ck_assert_int_eq(mount(test_path_at(dir, "hosts"), "/etc/hosts", NULL, MS_BIND, NULL), 0);
}

/* The test hosts: 203.0.113.10-13 on the far side of a veth pair, one server for all. */
static bool make_test_hosts(void)
{
	char *cmd;
	bool ok;

	snprintf(netns, sizeof netns, "sbxnet%d", (int)getpid());
	snprintf(veth, sizeof veth, "sbxv%d", (int)getpid() % 100000);
	cmd = bt_fmt("ip netns add %s && ip link add %s type veth peer name eth0 netns %s && "
	             "ip addr add 203.0.113.1/24 dev %s && ip link set %s up && "
	             "ip -n %s addr add 203.0.113.10/24 dev eth0 && "
	             "ip -n %s addr add 203.0.113.11/24 dev eth0 && "
	             "ip -n %s addr add 203.0.113.12/24 dev eth0 && "
	             "ip -n %s addr add 203.0.113.13/24 dev eth0 && "
	             "ip -n %s link set eth0 up && ip -n %s link set lo up",
	             netns, veth, netns, veth, veth, netns, netns, netns, netns, netns, netns);
	ok = run_ok(cmd);
	free(cmd);
	if (ok)
		hosts = start_server(netns, "0.0.0.0", 80);
	return ok;
}

static void remove_test_hosts(void)
{
	char *cmd = bt_fmt("ip netns del %s 2>/dev/null; ip link del %s 2>/dev/null", netns, veth);

	stop_server(&hosts);
	if (netns[0] && system(cmd) != 0) {
		/* already gone */
	}
	free(cmd);
}

/* The cases of the tcase tagged 'root' (a meson test of its own): an ordinary user sees them
 * skipped with this reason. */
#define NEED_ROOT()                                                                        \
	TEST_NEED(TEST_CAP_ROOT, geteuid() == 0,                                           \
	          "named test hosts need root (ip netns, veth, a private /etc/hosts)")

START_TEST(test_name_resolving_to_loopback_refused_unless_allowed)
{
	char *lists, *cmd;
	sbx_workspace *ranged;

	NEED_ROOT();
	private_hosts_file("127.0.0.1 localhost\n127.0.0.1 rebind.example.com\n"
	                   "127.0.0.1 exact.example.com\n");
	lists = bt_fmt("\"allow\":[\"*.example.com\",\"exact.example.com:%d\"]", srv.port);
	ws = open_allowlist(workdir, lists);
	cmd = bt_fmt("./sbx-netprobe get 3128 rebind.example.com %d", srv.port);
	assert_output_has(ws, cmd, "connect HTTP/1.1 403");
	assert_output_has(ws, cmd, "resolves to 127.0.0.1, a loopback (127.0.0.0/8) address");
	free(cmd);
	cmd = bt_fmt("./sbx-netprobe get 3128 exact.example.com %d", srv.port);
	assert_output_has(ws, cmd, "body hello from 127.0.0.1");
	free(cmd);
	ck_assert_ptr_nonnull(strstr(network_records(ws), "\"rule\":\"internal-address\""));
	free(lists);
	/* An allowed range lets a wildcard name resolve into it. */
	ranged = open_allowlist(bt_mkdtemp(), "\"allow\":[\"*.example.com\",\"127.0.0.0/8\"]");
	cmd = bt_fmt("./sbx-netprobe get 3128 rebind.example.com %d", srv.port);
	assert_output_has(ranged, cmd, "body hello from 127.0.0.1");
	free(cmd);
	sbx_workspace_close(ranged);
}
END_TEST

/* The measure of done: allow pypi.org and *.github.com, and exactly those are reached,
 * by any path a process inside can try, every attempt in the audit log. */
START_TEST(test_reaches_exactly_the_allowed_hosts)
{
	static const char *const refused[] = {
		"github.com", "evil.example", "203.0.113.10", "rebind.github.com",
		"internal.github.com",
	};
	char *cmd;

	NEED_ROOT();
	ck_assert_msg(make_test_hosts(), "could not make the test hosts");
	private_hosts_file("127.0.0.1 localhost\n203.0.113.10 pypi.org\n"
	                   "203.0.113.11 api.github.com\n203.0.113.12 github.com\n"
	                   "203.0.113.13 evil.example\n127.0.0.1 rebind.github.com\n"
	                   "10.99.0.1 internal.github.com\n");
	ws = open_allowlist(workdir, "\"allow\":[\"pypi.org\",\"*.github.com\"]");
	assert_output_has(ws, "curl -sS -m 20 http://pypi.org/", "hello from 203.0.113.10");
	assert_output_has(ws, "curl -sS -m 20 -p http://api.github.com/", "hello from 203.0.113.11");
	assert_output_has(ws, "curl -sS -m 20 -x \"$ALL_PROXY\" http://api.github.com/",
	                  "hello from 203.0.113.11");
	assert_output_has(ws, "./sbx-netprobe get 3128 pypi.org 80", "body hello from 203.0.113.10");
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		cmd = bt_fmt("./sbx-netprobe get 3128 %s 80", refused[i]);
		assert_output_has(ws, cmd, "connect HTTP/1.1 403");
		free(cmd);
		cmd = bt_fmt("curl -sS -m 20 -x \"$ALL_PROXY\" http://%s/", refused[i]);
		assert_output_has(ws, cmd, "(2)");
		free(cmd);
	}
	/* Around the proxy: the names resolve inside on ns (the hosts file is bound in), not in
	 * a container (the engine writes its own); the addresses have no route either way. */
	assert_output_has(ws, "curl -sS -m 5 --noproxy '*' http://pypi.org/",
	                  is_docker() ? "curl: (6)" : "curl: (7)");
	assert_output_has(ws, "./sbx-netprobe tcp 203.0.113.10 80", "tcp ENETUNREACH");
	assert_output_has(ws, "./sbx-netprobe udp 203.0.113.11 53", "udp ENETUNREACH");
	assert_output_has(ws, "./sbx-netprobe tcp 203.0.113.1 80", "tcp ENETUNREACH");
	/* Every attempt through the proxy is recorded: 4 allowed, 10 refused. */
	ck_assert_int_eq(records_with(ws, "\"decision\":\"allow\"", 4), 4);
	ck_assert_int_eq(records_with(ws, "\"decision\":\"deny\"", 10), 10);
	ck_assert_int_eq(records_with(ws, "\"host\":\"rebind.github.com\"", 2), 2);
	ck_assert_int_eq(records_with(ws, "\"rule\":\"internal-address\"", 4), 4);
	remove_test_hosts();
}
END_TEST

static void root_teardown(void)
{
	remove_test_hosts();
}

static Suite *network_suite(void)
{
	static char name[64];
	Suite *s;
	TCase *reach, *refuse, *load, *policy, *root;

	snprintf(name, sizeof name, "network-%s", bt_backend());
	s = suite_create(name);
	reach = tcase_create("reach");
	tcase_add_checked_fixture(reach, setup, teardown);
	tcase_add_test(reach, test_allowed_host_reachable);
	tcase_add_test(reach, test_environment_points_at_the_proxy);
	suite_add_tcase(s, reach);

	refuse = tcase_create("refuse");
	tcase_add_checked_fixture(refuse, setup, teardown);
	tcase_add_test(refuse, test_denied_host_refused_with_rule);
	tcase_add_test(refuse, test_ip_literal_of_allowed_name_refused);
	tcase_add_test(refuse, test_host_header_mismatch_refused);
	tcase_add_test(refuse, test_direct_connections_fail);
	suite_add_tcase(s, refuse);

	load = tcase_create("load");
	tcase_add_checked_fixture(load, setup, teardown);
	tcase_set_timeout(load, 300);
	tcase_add_test(load, test_thousand_concurrent_connections);
	tcase_add_test(load, test_slow_client_stalls_nobody);
	suite_add_tcase(s, load);

	policy = tcase_create("policy");
	tcase_add_checked_fixture(policy, setup, teardown);
	tcase_add_test(policy, test_policy_change_takes_effect);
	tcase_add_test(policy, test_other_modes_cannot_switch);
	tcase_add_test(policy, test_proxy_lives_with_the_workspace);
	tcase_add_test(policy, test_proxy_dies_with_the_host);
	tcase_add_test(policy, test_host_mode_recorded_as_exposure);
	tcase_add_test(policy, test_local_backend_refuses_allowlist);
	if (is_docker())
		tcase_add_test(policy, test_docker_allowlist_needs_server_and_host);
	suite_add_tcase(s, policy);

	root = tcase_create("root");
	tcase_set_tags(root, "root");
	tcase_add_checked_fixture(root, setup, teardown);
	tcase_add_checked_fixture(root, NULL, root_teardown);
	tcase_add_test(root, test_name_resolving_to_loopback_refused_unless_allowed);
	tcase_add_test(root, test_reaches_exactly_the_allowed_hosts);
	suite_add_tcase(s, root);
	return s;
}

int main(void)
{
	return bt_main(network_suite);
}
