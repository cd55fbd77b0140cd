/* MCP servers inside the workspace, on the backend SBX_TEST_BACKEND names (local, ns, bwrap),
 * against real servers from npm (tests/mcp: server-filesystem, server-everything, installed
 * by tests/mcp/install.sh) and small misbehaving ones (tests/mcp: shell scripts, counter-server.js).
 * The servers' folder is bound read-only at /opt/mcp in sandboxes. SBX_TEST_MCP_TRANSPORT=stream
 * runs it all with the gateway on its process stream instead of its socket (proto.h). */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "backend_support.h"
#include "support.h"

static char *workdir;
static sbx_workspace *ws;
static char host_servers[4096];

/* Asked for, or the default: remoteplug (testplug without host files) has no socket path. */
static bool stream_transport(void)
{
	const char *t = getenv("SBX_TEST_MCP_TRANSPORT");

	return (t && strcmp(t, "stream") == 0) || !strcmp(bt_backend(), "remoteplug");
}

/* ns and bwrap; local and the test plugin (tests/plugins/testplug.c, a backend with host
 * files that is neither: the gateway is copied into its state folder) run on the host. */
static bool sandboxed(void)
{
	return !strcmp(bt_backend(), "ns") || !strcmp(bt_backend(), "bwrap");
}

/* The state folder is on this host, where declarations the library did not sign declare
 * nothing; remoteplug keeps it in its sandbox, where the file is taken as it is. */
static bool state_on_host(void)
{
	return strcmp(bt_backend(), "remoteplug") != 0;
}

/* The servers' folder as the workspace's commands see it. */
static const char *servers_dir(void)
{
	return sandboxed() ? "/opt/mcp" : host_servers;
}

static sbx_workspace *open_on(const char *dir)
{
	const char *transport = stream_transport() ? "\"mcp\":{\"transport\":\"stream\"}" : NULL;
	char *extra = sandboxed()
		? bt_fmt("\"%s\":{\"binds\":[{\"source\":\"%s\",\"dest\":\"/opt/mcp\"}]}%s%s",
		         bt_backend(), host_servers, transport ? "," : "", transport ? transport : "")
		: transport ? bt_fmt("%s", transport) : NULL;
	sbx_workspace *w = bt_open_ok(dir, extra);

	free(extra);
	return w;
}

static void setup(void)
{
	workdir = bt_mkdtemp();
	ws = open_on(workdir);
	bt_put(ws, "hello.txt", "hello from the workspace\n", 0);
}

static void teardown(void)
{
	bt_close_case_workspace(&ws);
}

static void add_ok(sbx_workspace *w, const char *agent, const char *session, const char *name,
                   const char *config)
{
	int r = sbx_mcp_add(w, agent, session, name, config);

	ck_assert_msg(r == 0, "add %s: %d %s", name, r, sbx_last_error());
}

static const char *node_server(const char *rel_script, const char *args)
{
	return bt_tmp("{\"command\":\"node\",\"args\":[\"%s/%s\"%s%s]}", servers_dir(), rel_script,
	          args ? "," : "", args ? args : "");
}

static void add_filesystem(sbx_workspace *w, const char *root)
{
	add_ok(w, NULL, NULL, "fs", node_server("node_modules/@modelcontextprotocol/server-filesystem/"
	                                        "dist/index.js", bt_tmp("\"%s\"", root)));
}

static void add_everything(sbx_workspace *w)
{
	add_ok(w, NULL, NULL, "ev", node_server("node_modules/@modelcontextprotocol/"
	                                        "server-everything/dist/index.js", "\"stdio\""));
}

static char *call_ok(sbx_workspace *w, const char *session, const char *name, const char *tool,
                     const char *args)
{
	char *res = NULL;
	int r = sbx_mcp_call(w, NULL, session, name, tool, args, &res);

	ck_assert_msg(r == 0, "%s/%s: %d %s", name, tool, r, sbx_last_error());
	return res;
}

/* ---- the done-when: the npm filesystem server lists the workspace's files ---- */

/* Where the library keeps the state of workdir (opened before): its state folder outside
 * the workdir, or, for a backend without host files, the workspace's own .agentsbx. */
static const char *state_folder(const char *dir)
{
	const char *state = test_state_dir(dir);

	return test_exists(state) ? state : test_path_at(dir, ".agentsbx");
}

START_TEST(filesystem_server_lists_the_workspace)
{
	char *tools = NULL, *res;

	add_filesystem(ws, sbx_workspace_root(ws));
	ck_assert_int_eq(sbx_mcp_tools(ws, NULL, NULL, "fs", &tools), 0);
	ck_assert_ptr_nonnull(strstr(tools, "\"list_directory\""));
	res = call_ok(ws, NULL, "fs", "list_directory",
	              bt_tmp("{\"path\":\"%s\"}", sbx_workspace_root(ws)));
	ck_assert_msg(strstr(res, "hello.txt"), "%s", res);
	sbx_free(res);
	res = call_ok(ws, NULL, "fs", "read_text_file",
	              bt_tmp("{\"path\":\"%s/hello.txt\"}", sbx_workspace_root(ws)));
	ck_assert_msg(strstr(res, "hello from the workspace"), "%s", res);
	sbx_free(res);
	sbx_free(tools);
	/* The transport is the one asked for: the stream gateway has no socket. */
	/* (In the state folder; for a backend that sees only the workdir, in its .agentsbx.) */
	ck_assert_int_eq(access(test_path_at(test_state_dir(workdir), "mcp/gateway.sock"), F_OK) == 0 ||
	                 access(test_path_at(workdir, ".agentsbx/mcp/gateway.sock"), F_OK) == 0,
	                 !stream_transport());
}
END_TEST

START_TEST(transport_config_is_checked)
{
	sbx_workspace *w = NULL;

	ck_assert_int_eq(bt_open(NULL, "\"mcp\":{\"transport\":\"pigeon\"}", &w), -SBX_ECONFIG);
	ck_assert_msg(strstr(sbx_last_error(), "mcp.transport"), "%s", sbx_last_error());
	ck_assert_int_eq(bt_open(NULL, "\"mcp\":{\"transprot\":\"stream\"}", &w), -SBX_ECONFIG);
	ck_assert_msg(strstr(sbx_last_error(), "mcp.transprot"), "%s", sbx_last_error());
}
END_TEST

/* With the whole file system allowed, what the server can read is what the sandbox shows:
 * the host's files outside the workspace are not there. */
START_TEST(filesystem_server_runs_inside_the_sandbox)
{
	const char *outside = bt_mkdtemp();
	char *res;

	test_put_file(outside, "secret.txt", "host secret\n", 0644);
	add_filesystem(ws, "/");
	res = call_ok(ws, NULL, "fs", "read_text_file", bt_tmp("{\"path\":\"%s/secret.txt\"}", outside));
	ck_assert_msg(!strstr(res, "host secret") && strstr(res, "\"isError\":true"), "%s", res);
	sbx_free(res);
	res = call_ok(ws, NULL, "fs", "list_directory", "{\"path\":\"/workspace\"}");
	ck_assert_msg(strstr(res, "hello.txt"), "%s", res);
	sbx_free(res);
}
END_TEST

/* ---- server-everything: arguments, errors, large results, notifications ---- */

START_TEST(everything_server_arguments_errors_and_large_results)
{
	size_t big = 2 << 20;
	char *msg = malloc(big + 64), *res = NULL;
	int r;

	add_everything(ws);
	res = call_ok(ws, NULL, "ev", "get-sum", "{\"a\":2,\"b\":40}");
	ck_assert_msg(strstr(res, "42"), "%s", res);
	sbx_free(res);
	/* A bad argument: the server's validation error comes back as a tool error. */
	res = call_ok(ws, NULL, "ev", "get-sum", "{\"a\":\"two\"}");
	ck_assert_msg(strstr(res, "\"isError\":true"), "%s", res);
	sbx_free(res);
	r = sbx_mcp_call(ws, NULL, NULL, "ev", "no-such-tool", "{}", &res);
	if (r == 0) {
		ck_assert_msg(strstr(res, "\"isError\":true"), "%s", res);
		sbx_free(res);
	} else {
		ck_assert_int_eq(r, -SBX_EPROTO);
		ck_assert_ptr_nonnull(strstr(sbx_last_error(), "ev"));
	}
	/* 2 MiB each way. */
	memcpy(msg, "{\"message\":\"", 12);
	memset(msg + 12, 'x', big);
	strcpy(msg + 12 + big, "\"}");
	res = call_ok(ws, NULL, "ev", "echo", msg);
	ck_assert_uint_gt(strlen(res), big);
	sbx_free(res);
	free(msg);
	/* Log notifications arrive between the requests, a long operation reports progress. */
	sbx_free(call_ok(ws, NULL, "ev", "toggle-simulated-logging", "{}"));
	res = call_ok(ws, NULL, "ev", "trigger-long-running-operation", "{\"duration\":1,\"steps\":4}");
	ck_assert_msg(strstr(res, "completed"), "%s", res);
	sbx_free(res);
	/* Progress restarts the timeout: 6 s of work in 12 steps outlives a 3 s timeout (long
	 * enough for node to start the server and answer initialize). */
	add_ok(ws, NULL, NULL, "evp", bt_tmp("{\"command\":\"node\",\"args\":[\"%s/node_modules/"
	                                 "@modelcontextprotocol/server-everything/dist/index.js\","
	                                 "\"stdio\"],\"timeout\":3}", servers_dir()));
	res = call_ok(ws, NULL, "evp", "trigger-long-running-operation",
	              "{\"duration\":6,\"steps\":12}");
	ck_assert_msg(strstr(res, "completed"), "%s", res);
	sbx_free(res);
}
END_TEST

/* ---- misbehaving servers: a clear error each, the others keep working ---- */

static void expect_failure(const char *name, int code, const char *fragment)
{
	char *tools = NULL;
	int r = sbx_mcp_tools(ws, NULL, NULL, name, &tools);

	ck_assert_msg(r == code, "%s: %d (%s), expected %d", name, r, sbx_last_error(), code);
	ck_assert_msg(strstr(sbx_last_error(), fragment), "%s: %s", name, sbx_last_error());
	ck_assert_ptr_null(tools);
}

START_TEST(misbehaving_servers_fail_alone)
{
	char *res;

	add_everything(ws);
	add_ok(ws, NULL, NULL, "hang", bt_tmp("{\"command\":\"%s/hang-server.sh\",\"timeout\":2}",
	                                  servers_dir()));
	add_ok(ws, NULL, NULL, "flood", bt_tmp("{\"command\":\"%s/flood-server.sh\",\"timeout\":2}",
	                                   servers_dir()));
	add_ok(ws, NULL, NULL, "garbage", bt_tmp("{\"command\":\"%s/garbage-server.sh\",\"timeout\":2}",
	                                     servers_dir()));
	add_ok(ws, NULL, NULL, "crash", bt_tmp("{\"command\":\"sh\",\"args\":[\"-c\",\"read x; echo "
	                                   "dying >&2; exit 3\"]}"));
	add_ok(ws, NULL, NULL, "missing", "{\"command\":\"no-such-mcp-server\"}");
	sbx_free(call_ok(ws, NULL, "ev", "echo", "{\"message\":\"before\"}"));
	expect_failure("hang", -SBX_ETIMEDOUT, "did not answer initialize within 2000 ms");
	expect_failure("flood", -SBX_ETIMEDOUT, "did not answer initialize");
	expect_failure("garbage", -SBX_ETIMEDOUT, "not a JSON-RPC message");
	expect_failure("crash", -SBX_EIO, "exited with status 3; its stderr ends with: dying");
	expect_failure("missing", -SBX_EIO, "cannot start 'no-such-mcp-server'");
	res = call_ok(ws, NULL, "ev", "echo", "{\"message\":\"after\"}");
	ck_assert_msg(strstr(res, "Echo: after"), "%s", res);
	sbx_free(res);
}
END_TEST

/* A server that dies on a call: the call fails naming the exit, the next one restarts it
 * (after the backoff) and the session goes on without a new initialize from the host. */
START_TEST(crashed_server_restarts)
{
	char *res = NULL;
	int r;

	add_ok(ws, NULL, NULL, "c", bt_tmp("{\"command\":\"node\",\"args\":[\"%s/counter-server.js\"],"
	                               "\"env\":{\"MODE\":\"crash-on-call\"}}", servers_dir()));
	r = sbx_mcp_call(ws, NULL, NULL, "c", "incr", "{}", &res);
	ck_assert_int_eq(r, -SBX_EIO);
	ck_assert_msg(strstr(sbx_last_error(), "exited with status 3"), "%s", sbx_last_error());
	ck_assert_msg(strstr(sbx_last_error(), "crashing as asked"), "%s", sbx_last_error());
	usleep(300 * 1000);
	r = sbx_mcp_call(ws, NULL, NULL, "c", "incr", "{}", &res);
	ck_assert_int_eq(r, -SBX_EIO);   /* restarted, initialized again, crashed again */
	ck_assert_msg(strstr(sbx_last_error(), "exited with status 3"), "%s", sbx_last_error());
}
END_TEST

/* ---- scoping and state ---- */

START_TEST(sessions_keep_separate_state)
{
	char *tools = NULL, *res;

	add_ok(ws, NULL, NULL, "count", node_server("counter-server.js", NULL));
	ck_assert_int_eq(sbx_mcp_tools(ws, NULL, "s1", "count", &tools), 0);
	ck_assert_msg(strstr(tools, "\"incr\"") && strstr(tools, "\"pid\""), "%s", tools);  /* 2 pages */
	sbx_free(tools);
	sbx_free(call_ok(ws, "s1", "count", "incr", "{}"));
	res = call_ok(ws, "s1", "count", "incr", "{}");
	ck_assert_msg(strstr(res, "\"text\":\"2\""), "%s", res);
	sbx_free(res);
	res = call_ok(ws, "s2", "count", "incr", "{}");
	ck_assert_msg(strstr(res, "\"text\":\"1\""), "%s", res);
	sbx_free(res);
}
END_TEST

START_TEST(declarations_scope_persist_and_report_bad_entries)
{
	char *list = NULL, *res;
	sbx_workspace *again;

	add_ok(ws, NULL, NULL, "count", node_server("counter-server.js", NULL));
	add_ok(ws, "a1", "s9", "count", "{\"command\":\"no-such-command\"}");
	ck_assert_int_eq(sbx_mcp_add(ws, NULL, NULL, "count", "{\"command\":\"x\"}"), -SBX_EEXIST);
	ck_assert_int_eq(sbx_mcp_add(ws, NULL, NULL, "bad__name", "{\"command\":\"x\"}"), -SBX_EINVAL);
	ck_assert_int_eq(sbx_mcp_add(ws, NULL, NULL, "b", "{\"args\":[]}"), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "\"command\""));
	ck_assert_int_eq(sbx_mcp_add(ws, NULL, NULL, "b", "{\"type\":\"http\",\"url\":\"ftp://x\"}"),
	                 -SBX_EINVAL);
	/* The most specific declaration wins for a1/s9 only. */
	ck_assert_int_eq(sbx_mcp_call(ws, "a1", "s9", "count", "incr", "{}", &res), -SBX_EIO);
	res = call_ok(ws, "s9", "count", "incr", "{}");
	sbx_free(res);
	/* A file the library did not write here (by hand, or one the workdir came with: a
	 * cloned repository's) declares nothing: each entry is reported, none starts, and
	 * declaring one again works and drops the others. */
	sbx_workspace_close(ws);
	test_put_file(state_folder(workdir), "mcp.json", bt_tmp("{\"version\":1,\"servers\":["
	              "{\"agent\":null,\"session\":null,\"name\":\"broken\",\"config\":{\"args\":7}},"
	              "{\"agent\":null,\"session\":null,\"name\":\"count\",\"config\":%s}]}",
	              node_server("counter-server.js", NULL)), 0600);
	again = ws = open_on(workdir);
	ck_assert_int_eq(sbx_mcp_list(again, NULL, NULL, &list), 0);
	ck_assert_msg(strstr(list, "\"name\":\"broken\"") && strstr(list, "\"error\":"), "%s", list);
	sbx_free(list);
	ck_assert_int_eq(sbx_mcp_call(again, NULL, NULL, "broken", "x", "{}", &res), -SBX_EINVAL);
	if (state_on_host()) {
		ck_assert_int_eq(sbx_mcp_call(again, NULL, NULL, "count", "incr", "{}", &res),
		                 -SBX_EINVAL);
		ck_assert_msg(strstr(sbx_last_error(), "not declared through this host's library"),
		              "%s", sbx_last_error());
		add_ok(again, NULL, NULL, "count", node_server("counter-server.js", NULL));
	}
	res = call_ok(again, NULL, "count", "incr", "{}");
	ck_assert_msg(strstr(res, "\"text\":\"1\""), "%s", res);
	sbx_free(res);
	if (state_on_host()) {
		ck_assert_int_eq(sbx_mcp_list(again, NULL, NULL, &list), 0);
		ck_assert_msg(!strstr(list, "\"broken\"") && !strstr(list, "\"error\""), "%s", list);
		sbx_free(list);
	}
	/* Removing stops it; adding it again works (no stale registration). */
	ck_assert_int_eq(sbx_mcp_remove(again, NULL, NULL, "count"), 0);
	ck_assert_int_eq(sbx_mcp_remove(again, NULL, NULL, "count"), -SBX_ENOENT);
	ck_assert_int_eq(sbx_mcp_call(again, NULL, NULL, "count", "incr", "{}", &res), -SBX_ENOENT);
	add_ok(again, NULL, NULL, "count", node_server("counter-server.js", NULL));
	res = call_ok(again, NULL, "count", "incr", "{}");
	ck_assert_msg(strstr(res, "\"text\":\"1\""), "%s", res);
	sbx_free(res);
}
END_TEST

/* A second handle on the workdir finds the running gateway and its servers; when the first
 * handle's sandbox goes, the second starts a gateway of its own over the stale socket. On the
 * stream transport each handle has a gateway of its own from the start, which the other
 * handle's close leaves alone. */
START_TEST(second_handle_reconnects_to_the_gateway)
{
	sbx_workspace *second;
	char *res;

	add_ok(ws, NULL, NULL, "count", node_server("counter-server.js", NULL));
	sbx_free(call_ok(ws, NULL, "count", "incr", "{}"));
	second = open_on(workdir);
	res = call_ok(second, NULL, "count", "incr", "{}");
	/* the same server process, or (stream) the second handle's own */
	ck_assert_msg(strstr(res, stream_transport() ? "\"text\":\"1\"" : "\"text\":\"2\""), "%s",
	              res);
	sbx_free(res);
	sbx_workspace_close(ws);
	ws = second;
	res = call_ok(second, NULL, "count", "incr", "{}");
	/* a new one, in this sandbox, or (stream) the same one as before */
	ck_assert_msg(strstr(res, stream_transport() ? "\"text\":\"2\"" : "\"text\":\"1\""), "%s",
	              res);
	sbx_free(res);
}
END_TEST

/* ---- the agent toolbox ---- */

static int deny_mcp(void *ud, const char *req, char *reason, size_t len)
{
	(void)ud;
	if (strstr(req, "\"tool\":\"mcp__ev__echo\"") && strstr(req, "\"class\":\"exec\"")) {
		snprintf(reason, len, "no echoes today");
		return SBX_DENY;
	}
	return SBX_APPROVE;
}

START_TEST(mcp_tools_in_the_toolbox)
{
	char *tools = NULL, *res = NULL;

	add_everything(ws);
	add_ok(ws, NULL, NULL, "broken", "{\"command\":\"no-such-mcp-server\"}");
	ck_assert_int_eq(sbx_tools_json(ws, &tools), 0);
	ck_assert_msg(strstr(tools, "\"name\":\"Bash\"") && strstr(tools, "\"name\":\"mcp__ev__echo\""),
	              "%.2000s", tools);
	ck_assert_ptr_nonnull(strstr(tools, "\"Echoes back the input string\""));
	sbx_free(tools);
	ck_assert_int_eq(sbx_tool_call(ws, "mcp__ev__echo", "{\"message\":\"hi\"}", &res), 0);
	ck_assert_msg(strstr(res, "{\"ok\":true,\"output\":\"Echo: hi\""), "%s", res);
	sbx_free(res);
	ck_assert_int_eq(sbx_tool_call(ws, "mcp__ev__echo", "{}", &res), 0);
	ck_assert_msg(strstr(res, "\"ok\":false") && strstr(res, "\\\"message\\\" is required"), "%s",
	              res);
	sbx_free(res);
	ck_assert_int_eq(sbx_tool_call_session(ws, "s1", "mcp__broken__x", "{}", &res), 0);
	ck_assert_msg(strstr(res, "\"ok\":false") && strstr(res, "cannot start"), "%s", res);
	sbx_free(res);
	ck_assert_int_eq(sbx_set_approval_handler(ws, deny_mcp, NULL), 0);
	ck_assert_int_eq(sbx_tool_call(ws, "mcp__ev__echo", "{\"message\":\"hi\"}", &res), 0);
	ck_assert_msg(strstr(res, "Permission denied: no echoes today"), "%s", res);
	sbx_free(res);
}
END_TEST


/* ---- remote servers: Streamable HTTP, through the workspace's network policy ---- */

static pid_t http_pid;
static int http_port;

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static bool port_answers(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	bool ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;

	close(fd);
	return ok;
}

/* Runs node <tests/mcp>/<script> [arg] on the host, on http_port (kept when set), and waits
 * until it listens. It dies with the test process, whatever ends that. */
static void start_http(const char *script, const char *arg)
{
	int64_t until;

	if (!http_port)
		http_port = free_port();
	http_pid = fork();
	ck_assert_int_ge(http_pid, 0);
	if (http_pid == 0) {
		char port[16];
		int null = open("/dev/null", O_RDWR);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		snprintf(port, sizeof port, "%d", http_port);
		setenv("PORT", port, 1);
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		execl("/usr/bin/node", "node", test_path_at(host_servers, script), arg, (char *)NULL);
		_exit(127);
	}
	for (until = bt_now_ms() + 20000; !port_answers(http_port); usleep(50 * 1000))
		ck_assert_msg(bt_now_ms() < until, "%s did not listen on port %d", script, http_port);
}

static void stop_http(void)
{
	if (http_pid > 0) {
		kill(http_pid, SIGKILL);
		waitpid(http_pid, NULL, 0);
	}
	http_pid = 0;
}

static void start_everything_http(void)
{
	start_http("node_modules/@modelcontextprotocol/server-everything/dist/index.js",
	           "streamableHttp");
}

static void http_teardown(void)
{
	teardown();
	stop_http();
	http_port = 0;
}

/* A workspace whose network lets the host reach the test server: mode "host" where the
 * backend has no other, else an allowlist naming the port. */
static sbx_workspace *open_reaching_server(void)
{
	sbx_workspace *w = NULL;
	int r;

	workdir = bt_mkdtemp();
	r = bt_open(workdir, bt_tmp("\"network\":{\"mode\":\"allowlist\",\"allow\":"
	                            "[\"127.0.0.1:%d\"]}", http_port), &w);
	if (r == -SBX_ECONFIG)
		return bt_open_ok(workdir, "\"network\":{\"mode\":\"host\"}");
	ck_assert_msg(r == 0, "%d %s", r, sbx_last_error());
	return w;
}

static const char *http_entry(const char *path)
{
	return bt_tmp("{\"type\":\"http\",\"url\":\"http://127.0.0.1:%d%s\"}", http_port, path);
}

START_TEST(http_server_tools_calls_and_results)
{
	size_t big = 2 << 20;
	char *tools = NULL, *res = NULL, *msg = malloc(big + 64);
	sbx_workspace *w;

	start_everything_http();
	sbx_workspace_close(ws);
	ws = w = open_reaching_server();
	add_ok(w, NULL, NULL, "web", http_entry("/mcp"));
	ck_assert_int_eq(sbx_mcp_tools(w, NULL, NULL, "web", &tools), 0);
	ck_assert_msg(strstr(tools, "\"get-sum\"") && strstr(tools, "\"echo\""), "%.500s", tools);
	sbx_free(tools);
	res = call_ok(w, NULL, "web", "get-sum", "{\"a\":2,\"b\":40}");
	ck_assert_msg(strstr(res, "42"), "%s", res);
	sbx_free(res);
	res = call_ok(w, NULL, "web", "get-sum", "{\"a\":\"two\"}");
	ck_assert_msg(strstr(res, "\"isError\":true"), "%s", res);
	sbx_free(res);
	memcpy(msg, "{\"message\":\"", 12);
	memset(msg + 12, 'y', big);
	strcpy(msg + 12 + big, "\"}");
	res = call_ok(w, NULL, "web", "echo", msg);
	ck_assert_uint_gt(strlen(res), big);
	sbx_free(res);
	free(msg);
	/* Progress notifications on the call's SSE stream, then its answer. */
	res = call_ok(w, NULL, "web", "trigger-long-running-operation",
	              "{\"duration\":1,\"steps\":4}");
	ck_assert_msg(strstr(res, "completed"), "%s", res);
	sbx_free(res);
	/* Progress on the stream restarts the timeout, as on the gateway. */
	add_ok(w, NULL, NULL, "webp", bt_tmp("{\"url\":\"http://127.0.0.1:%d/mcp\",\"timeout\":3}",
	                                     http_port));
	res = call_ok(w, NULL, "webp", "trigger-long-running-operation",
	              "{\"duration\":6,\"steps\":12}");
	ck_assert_msg(strstr(res, "completed"), "%s", res);
	sbx_free(res);
	/* Sessions are per (agent, session), as for stdio servers. */
	sbx_free(call_ok(w, "s2", "web", "echo", "{\"message\":\"other session\"}"));
	/* In the agent toolbox. */
	ck_assert_int_eq(sbx_tools_json(w, &tools), 0);
	ck_assert_msg(strstr(tools, "\"name\":\"mcp__web__echo\""), "%.2000s", tools);
	sbx_free(tools);
	ck_assert_int_eq(sbx_tool_call(w, "mcp__web__echo", "{\"message\":\"hi\"}", &res), 0);
	ck_assert_msg(strstr(res, "{\"ok\":true,\"output\":\"Echo: hi\""), "%s", res);
	sbx_free(res);
}
END_TEST

/* JSON bodies, the declaration's headers, an awkward SSE stream, and a session the server
 * forgot (404: initialize again, once, and repeat the request). */
START_TEST(http_json_bodies_headers_sse_and_lost_sessions)
{
	char *res;
	sbx_workspace *w;

	start_http("http-counter-server.js", NULL);
	sbx_workspace_close(ws);
	ws = w = open_reaching_server();
	add_ok(w, NULL, NULL, "hc", bt_tmp("{\"type\":\"streamableHttp\",\"url\":\"http://127.0.0.1:"
	                                   "%d/\",\"headers\":{\"Authorization\":\"Bearer t0k\","
	                                   "\"X-Extra\":\"1\"},\"timeout\":5}", http_port));
	res = call_ok(w, NULL, "hc", "headers", "{}");
	ck_assert_msg(strstr(res, "Bearer t0k") && strstr(res, "x-extra") &&
	              strstr(res, "mcp-protocol-version") && strstr(res, "mcp-session-id") &&
	              strstr(res, "text/event-stream"), "%s", res);
	sbx_free(res);
	res = call_ok(w, NULL, "hc", "tricky-sse", "{}");
	ck_assert_msg(strstr(res, "tricky ok"), "%s", res);
	sbx_free(res);
	sbx_free(call_ok(w, NULL, "hc", "incr", "{}"));
	res = call_ok(w, NULL, "hc", "incr", "{}");
	ck_assert_msg(strstr(res, "\"text\":\"2\""), "%s", res);
	sbx_free(res);
	sbx_free(call_ok(w, NULL, "hc", "forget", "{}"));
	res = call_ok(w, NULL, "hc", "incr", "{}");
	ck_assert_msg(strstr(res, "\"text\":\"1\""), "%s", res);   /* a new session */
	sbx_free(res);
	res = call_ok(w, NULL, "hc", "nothing-like-it", "{}");
	ck_assert_msg(strstr(res, "\"isError\":true"), "%s", res);
	sbx_free(res);
	/* A server error is reported with its status and body. */
	add_ok(w, NULL, NULL, "broken", http_entry("/broken"));
	ck_assert_int_eq(sbx_mcp_call(w, NULL, NULL, "broken", "incr", "{}", &res), -SBX_EIO);
	ck_assert_msg(strstr(sbx_last_error(), "MCP server 'broken': HTTP 500") &&
	              strstr(sbx_last_error(), "internal trouble"), "%s", sbx_last_error());
	/* A call slower than the declared timeout. */
	add_ok(w, NULL, NULL, "impatient", bt_tmp("{\"url\":\"http://127.0.0.1:%d/\",\"timeout\":1}",
	                                          http_port));
	ck_assert_int_eq(sbx_mcp_call(w, NULL, NULL, "impatient", "slow", "{}", &res),
	                 -SBX_ETIMEDOUT);
	ck_assert_msg(strstr(sbx_last_error(), "MCP server 'impatient' did not answer within 1000 ms"),
	              "%s", sbx_last_error());
	res = call_ok(w, NULL, "impatient", "incr", "{}");   /* the session goes on */
	ck_assert_msg(strstr(res, "\"text\":\"1\""), "%s", res);
	sbx_free(res);
}
END_TEST

/* A backend with the host's network only refuses a network policy at open, naming the key:
 * that is what such a backend must do, and the rest of the case is not for it. */
static bool refused_network_policy(int r)
{
	if (r != -SBX_ECONFIG)
		return false;
	ck_assert_msg(strstr(sbx_last_error(), "network"), "refused without naming the key: %s",
	              sbx_last_error());
	return true;
}

/* The audit log's network records of the library's own connections. */
/* (test_slurp's buffer: not to be freed) */
static char *host_connect_records(const char *dir)
{
	return test_slurp(test_path_at(state_folder(dir), "audit.jsonl"));
}

START_TEST(http_server_through_the_network_policy)
{
	sbx_workspace *w = NULL;
	char *res = NULL, *log, *dir = bt_mkdtemp();
	int r;

	start_everything_http();
	/* Mode "none": refused, naming the server and the policy. */
	r = bt_open(dir, "\"network\":{\"mode\":\"none\"}", &w);
	if (refused_network_policy(r))
		return;
	ck_assert_int_eq(r, 0);
	add_ok(w, NULL, NULL, "web", http_entry("/mcp"));
	ck_assert_int_eq(sbx_mcp_call(w, NULL, NULL, "web", "echo", "{\"message\":\"x\"}", &res),
	                 -SBX_EPERM);
	ck_assert_msg(strstr(sbx_last_error(), "MCP server 'web'") &&
	              strstr(sbx_last_error(), "mode \"none\""), "%s", sbx_last_error());
	log = host_connect_records(dir);
	ck_assert_msg(log && strstr(log, "\"event\":\"host-connect\",\"for\":\"MCP server 'web'\","
	                            "\"decision\":\"deny\",\"rule\":\"mode none\""), "%s", log);
	sbx_workspace_close(w);
	/* An allowlist without the port: refused by the rules. */
	dir = bt_mkdtemp();
	r = bt_open(dir, bt_tmp("\"network\":{\"mode\":\"allowlist\",\"allow\":"
	                        "[\"127.0.0.1:%d\"]}", http_port == 1 ? 2 : 1), &w);
	if (refused_network_policy(r))
		return;
	ck_assert_int_eq(r, 0);
	add_ok(w, NULL, NULL, "web", http_entry("/mcp"));
	ck_assert_int_eq(sbx_mcp_call(w, NULL, NULL, "web", "echo", "{\"message\":\"x\"}", &res),
	                 -SBX_EPERM);
	ck_assert_msg(strstr(sbx_last_error(), "allowlist"), "%s", sbx_last_error());
	log = host_connect_records(dir);
	ck_assert_msg(log && strstr(log, "\"decision\":\"deny\""), "%s", log);
	/* The same workspace, the port allowed by name: "localhost" resolves to loopback, which
	 * an exact name rule lets through; the checked address is the one connected to. */
	ck_assert_int_eq(sbx_workspace_set_network(w, bt_tmp("{\"mode\":\"allowlist\",\"allow\":"
	                                                     "[\"localhost:%d\"]}", http_port)), 0);
	ck_assert_int_eq(sbx_mcp_add(w, NULL, NULL, "byname", bt_tmp("{\"url\":\"http://localhost:"
	                                                      "%d/mcp\"}", http_port)), 0);
	res = call_ok(w, NULL, "byname", "echo", "{\"message\":\"by name\"}");
	ck_assert_msg(strstr(res, "Echo: by name"), "%s", res);
	sbx_free(res);
	log = host_connect_records(dir);
	ck_assert_msg(log && strstr(log, bt_tmp("\"decision\":\"allow\",\"rule\":\"network.allow[0] "
	                                        "localhost:%d\"", http_port)) &&
	              strstr(log, "\"address\":\"127.0.0.1\""), "%s", log);
	/* The literal address is not allowed by the name rule. */
	ck_assert_int_eq(sbx_mcp_call(w, NULL, NULL, "web", "echo", "{}", &res), -SBX_EPERM);
	sbx_workspace_close(w);
}
END_TEST

START_TEST(http_bad_declarations_name_the_field)
{
	static const struct { const char *config, *fragment; } bad[] = {
		{ "{\"type\":\"http\",\"url\":\"ftp://example.com/mcp\"}", "\"url\" must start with http" },
		{ "{\"type\":\"http\",\"url\":\"http://exa\\u0000mple.com/\"}", "\"url\" holds a NUL" },
		{ "{\"type\":\"http\"}", "\"url\" must be a non-empty string" },
		{ "{\"type\":\"http\",\"url\":\"http://user:pw@example.com/\"}", "\"url\" must not hold" },
		{ "{\"type\":\"http\",\"url\":\"http://example.com/\",\"headers\":{\"X-A\":\"1\\r\\n"
		  "Evil: 2\"}}", "\"headers\": \"X-A\" holds a line break" },
		{ "{\"type\":\"http\",\"url\":\"http://example.com/\",\"headers\":{\"X-A\":\"a\\u0000b\"}}",
		  "\"headers\": \"X-A\" holds a NUL" },
		{ "{\"type\":\"http\",\"url\":\"http://example.com/\",\"headers\":{\"Bad Name\":\"1\"}}",
		  "\"headers\": \"Bad Name\" is not a valid header name" },
		{ "{\"type\":\"http\",\"url\":\"http://example.com/\",\"headers\":{\"Mcp-Session-Id\":\"1\"}}",
		  "is set by the MCP client itself" },
		{ "{\"type\":\"http\",\"url\":\"http://example.com/\",\"headers\":[]}",
		  "\"headers\" must be an object" },
		{ "{\"type\":\"http\",\"url\":\"http://example.com/\",\"command\":\"x\"}",
		  "\"command\" belongs to stdio servers" },
		{ "{\"type\":\"sse\",\"url\":\"http://example.com/sse\"}", "older HTTP+SSE transport" },
	};
	char *res;

	add_everything(ws);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int r = sbx_mcp_add(ws, NULL, NULL, "remote", bad[i].config);

		ck_assert_msg(r == -SBX_EINVAL, "%s: %d", bad[i].config, r);
		ck_assert_msg(strstr(sbx_last_error(), bad[i].fragment) &&
		              strstr(sbx_last_error(), "'remote'"), "%s: %s", bad[i].config,
		              sbx_last_error());
	}
	/* A remote entry the library did not write here is reported by what is wrong with it
	 * first, and never reached (nor is anything else of that file). */
	sbx_workspace_close(ws);
	test_put_file(state_folder(workdir), "mcp.json", bt_tmp("{\"version\":1,\"servers\":["
	              "{\"agent\":null,\"session\":null,\"name\":\"remote\",\"config\":{\"type\":"
	              "\"http\",\"url\":\"gopher://x\"}},{\"agent\":null,\"session\":null,\"name\":"
	              "\"ev\",\"config\":%s}]}", node_server("node_modules/@modelcontextprotocol/"
	              "server-everything/dist/index.js", "\"stdio\"")), 0600);
	ws = open_on(workdir);
	ck_assert_int_eq(sbx_mcp_call(ws, NULL, NULL, "remote", "x", "{}", &res), -SBX_EINVAL);
	ck_assert_msg(strstr(sbx_last_error(), "\"url\" must start with http"), "%s",
	              sbx_last_error());
	if (state_on_host()) {
		ck_assert_int_eq(sbx_mcp_call(ws, NULL, NULL, "ev", "echo", "{\"message\":\"x\"}",
		                              &res), -SBX_EINVAL);
		ck_assert_msg(strstr(sbx_last_error(), "not declared through this host's library"),
		              "%s", sbx_last_error());
		add_everything(ws);
	}
	res = call_ok(ws, NULL, "ev", "echo", "{\"message\":\"still here\"}");
	ck_assert_msg(strstr(res, "Echo: still here"), "%s", res);
	sbx_free(res);
}
END_TEST

static void *kill_server_soon(void *arg)
{
	(void)arg;
	usleep(700 * 1000);
	kill(http_pid, SIGKILL);
	return NULL;
}

/* The server dies during a call: a clear error; later calls say it cannot be reached; once
 * it is back the client starts a new session by itself. */
START_TEST(http_server_killed_mid_call)
{
	pthread_t t;
	char *res = NULL;
	int64_t start;
	int r;
	sbx_workspace *w;

	start_everything_http();
	sbx_workspace_close(ws);
	ws = w = open_reaching_server();
	add_ok(w, NULL, NULL, "web", http_entry("/mcp"));
	sbx_free(call_ok(w, NULL, "web", "echo", "{\"message\":\"alive\"}"));
	pthread_create(&t, NULL, kill_server_soon, NULL);
	start = bt_now_ms();
	r = sbx_mcp_call(w, NULL, NULL, "web", "trigger-long-running-operation",
	                 "{\"duration\":10,\"steps\":10}", &res);
	pthread_join(t, NULL);
	waitpid(http_pid, NULL, 0);
	http_pid = 0;
	ck_assert_int_eq(r, -SBX_EIO);
	ck_assert_msg(strstr(sbx_last_error(), "MCP server 'web'"), "%s", sbx_last_error());
	ck_assert_int_lt(bt_now_ms() - start, 8000);
	r = sbx_mcp_call(w, NULL, NULL, "web", "echo", "{\"message\":\"x\"}", &res);
	ck_assert_int_eq(r, -SBX_EIO);
	ck_assert_msg(strstr(sbx_last_error(), "MCP server 'web'") &&
	              strstr(sbx_last_error(), "127.0.0.1"), "%s", sbx_last_error());
	start_everything_http();   /* on the same port */
	res = call_ok(w, NULL, "web", "echo", "{\"message\":\"back\"}");
	ck_assert_msg(strstr(res, "Echo: back"), "%s", res);
	sbx_free(res);
}
END_TEST

static Suite *mcp_suite(void)
{
	Suite *s = suite_create(bt_tmp("mcp-%s%s", getenv("SBX_TEST_MCP_TRANSPORT") ? "stream-" : "",
	                               bt_backend()));
	TCase *tc = tcase_create("mcp");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, filesystem_server_lists_the_workspace);
	/* Only a sandboxing backend has an outside to hide. */
	if (sandboxed())
		tcase_add_test(tc, filesystem_server_runs_inside_the_sandbox);
	tcase_add_test(tc, transport_config_is_checked);
	tcase_add_test(tc, everything_server_arguments_errors_and_large_results);
	tcase_add_test(tc, misbehaving_servers_fail_alone);
	tcase_add_test(tc, crashed_server_restarts);
	tcase_add_test(tc, sessions_keep_separate_state);
	tcase_add_test(tc, declarations_scope_persist_and_report_bad_entries);
	tcase_add_test(tc, second_handle_reconnects_to_the_gateway);
	tcase_add_test(tc, mcp_tools_in_the_toolbox);
	suite_add_tcase(s, tc);
	/* Remote servers do not go through the gateway: once per backend is enough. */
	if (!getenv("SBX_TEST_MCP_TRANSPORT")) {
		tc = tcase_create("http");
		tcase_add_checked_fixture(tc, setup, http_teardown);
		tcase_set_timeout(tc, 120);
		tcase_add_test(tc, http_server_tools_calls_and_results);
		tcase_add_test(tc, http_json_bodies_headers_sse_and_lost_sessions);
		tcase_add_test(tc, http_server_through_the_network_policy);
		tcase_add_test(tc, http_bad_declarations_name_the_field);
		tcase_add_test(tc, http_server_killed_mid_call);
		suite_add_tcase(s, tc);
	}
	return s;
}

int main(void)
{
	const char *src = getenv("SBX_TEST_SOURCE_ROOT");
	int r;

	snprintf(host_servers, sizeof host_servers, "%s/tests/mcp", src ? src : ".");
	if (strstr(bt_backend(), "plug") && getenv("SBX_TEST_PLUGIN_DIR"))
		setenv("SBX_BACKEND_PATH", getenv("SBX_TEST_PLUGIN_DIR"), 1);
	if (access(test_path_at(host_servers, "node_modules/@modelcontextprotocol/server-filesystem"),
	           R_OK) != 0 || access("/usr/bin/node", X_OK) != 0) {
		fprintf(stderr, "skipped: the MCP test servers are not installed (run "
		        "tests/mcp/install.sh; needs node and npm)\n");
		return BT_EXIT_SKIP;
	}
	if (!bt_backend_usable())
		return BT_EXIT_SKIP;
	bt_begin_run();
	r = test_run_suite(mcp_suite());
	bt_end_run();
	return r;
}
