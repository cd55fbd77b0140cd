/* sbx_workspace_instructions() against the workspace it describes, on the backend
 * SBX_TEST_BACKEND names: the text is parsed and every claim it makes is tried by running
 * commands in that same workspace. The root exists and is where commands and the Bash tool
 * start; each place said writable takes a new file and no other standard place does; HOME is
 * what commands get; the network mode is what a connection to a server on this host meets;
 * each protected path refuses a write; each listed skill's folder holds its SKILL.md. And
 * what the text used to say falsely (data/, skills/ and sessions/ that do not exist, that no
 * host file is visible, a dated project folder) is gone. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>

#include "backend_support.h"
#include "../support.h"

/* ---- reading the text -------------------------------------------------------------------- */

/* The rest of the line after the first occurrence of lead, up to (not including) stop or the
 * line's end; NULL when the text has no such line. Caller frees. */
static char *claim_after(const char *text, const char *lead, const char *stop)
{
	const char *p = strstr(text, lead), *end;

	if (!p)
		return NULL;
	p += strlen(lead);
	end = strchr(p, '\n');
	if (!end)
		end = p + strlen(p);
	if (stop) {
		const char *s = strstr(p, stop);
		if (s && s < end)
			end = s;
	}
	return strndup(p, (size_t)(end - p));
}

/* Splits "a, b, c" into a NULL-terminated array of strings (caller frees each and it). */
static char **split_list(const char *list)
{
	char **v = calloc(64, sizeof *v), *copy = strdup(list), *save = NULL;
	size_t n = 0;

	for (char *t = strtok_r(copy, ",", &save); t && n < 63; t = strtok_r(NULL, ",", &save)) {
		while (*t == ' ')
			t++;
		v[n++] = strdup(t);
	}
	free(copy);
	return v;
}

static void free_list(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static char *instructions_of(sbx_workspace *ws)
{
	char *text = NULL;

	ck_assert_int_eq(sbx_workspace_instructions(ws, &text), 0);
	ck_assert_ptr_nonnull(text);
	return text;
}

/* The root the first sentence names ("... workspace at <root>."). */
static char *claimed_root(const char *text)
{
	char *root = claim_after(text, " workspace at ", NULL);

	ck_assert_msg(root && *root, "no root in:\n%s", text);
	root[strlen(root) - 1] = '\0';   /* the sentence's full stop */
	return root;
}

/* ---- trying the claims ------------------------------------------------------------------- */

static int shell_status(sbx_workspace *ws, const char *cmd)
{
	sbx_result *res = bt_shell(ws, cmd, NULL);
	int code = sbx_result_exit_code(res);

	sbx_result_free(res);
	return code;
}

/* Can a command make a new file in dir (and take it away again)? */
static bool can_create_in(sbx_workspace *ws, const char *dir)
{
	return shell_status(ws, bt_tmp("f='%s/.sbx-instr-probe'; : > \"$f\" 2>/dev/null && "
	                               "rm -f \"$f\"", dir)) == 0;
}

static bool below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (!strcmp(dir, "/"))
		return true;
	return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

static bool below_any(const char *path, char *const *dirs)
{
	for (size_t i = 0; dirs[i]; i++)
		if (below(path, dirs[i]))
			return true;
	return false;
}

/* Places any Linux system has or may have: none may take a file unless the text said so. */
static const char *const standard_places[] = {
	"/", "/usr", "/usr/local", "/etc", "/bin", "/var", "/var/tmp", "/var/cache", "/run",
	"/home", "/root", "/opt", "/srv", "/mnt", "/dev", "/dev/shm", "/tmp", NULL,
};

static void check_writable_claims(sbx_workspace *ws, const char *text, const char *root,
                                  bool read_only)
{
	char *list = claim_after(text, "- Commands can write only in ", ". Everything else");
	char *home = claim_after(text, "(HOME) is ", NULL);
	char **places;

	ck_assert_msg(list, "an isolated workspace says where commands may write:\n%s", text);
	places = split_list(list);
	ck_assert_msg(places[0], "no writable place listed in: %s", list);
	ck_assert_msg(read_only != below_any(root, places),
	              "the root is %s listed as writable in a %s workspace: %s",
	              read_only ? "" : "not", read_only ? "read-only" : "writable", list);
	for (size_t i = 0; places[i]; i++)
		ck_assert_msg(can_create_in(ws, places[i]), "%s is said writable but a command "
		              "cannot create a file there", places[i]);
	for (size_t i = 0; standard_places[i]; i++)
		if (!below_any(standard_places[i], places))
			ck_assert_msg(!can_create_in(ws, standard_places[i]), "%s takes a new file, "
			              "but the instructions do not list it as writable: %s",
			              standard_places[i], list);
	if (read_only)
		ck_assert_msg(!can_create_in(ws, root), "the read-only root takes a new file");
	if (home) {
		home[strlen(home) - 1] = '\0';
		if (!below_any(home, places))
			ck_assert_msg(!can_create_in(ws, home), "HOME (%s) takes a new file, but "
			              "the instructions do not list it as writable", home);
	}
	ck_assert_msg(shell_status(ws, "echo x > /usr/.sbx-instr-probe 2>/dev/null") != 0,
	              "the system is said read-only, but /usr took a file");
	free_list(places);
	free(list);
	free(home);
}

/* The "no sandbox" claim: a command can change files outside the root. */
static void check_unsandboxed_claim(sbx_workspace *ws, const char *text)
{
	char *outside = bt_mkdtemp();

	ck_assert_msg(strstr(text, "There is no sandbox"), "%s", text);
	ck_assert_int_eq(shell_status(ws, bt_tmp("echo x > '%s/made-inside'", outside)), 0);
	ck_assert(test_exists(test_path_at(outside, "made-inside")));
}

static void check_root_claims(sbx_workspace *ws, const char *text, const char *root)
{
	char *pwd = bt_shell_out(ws, "pwd");
	char *res = NULL, *out;

	ck_assert_str_eq(pwd, bt_tmp("%s\n", root));
	ck_assert_int_eq(shell_status(ws, bt_tmp("test -d '%s'", root)), 0);
	ck_assert_int_eq(sbx_tool_call_session(ws, "instr", "Bash", "{\"command\":\"pwd\"}", &res),
	                 0);
	out = bt_string_member(res, "output");
	ck_assert_str_eq(out, bt_tmp("%s\n", root));
	ck_assert_msg(strstr(text, bt_tmp("- %s is the project you work on.", root)), "%s", text);
	free(out);
	sbx_free(res);
	free(pwd);
}

static void check_home_claim(sbx_workspace *ws, const char *text)
{
	char *home = claim_after(text, "(HOME) is ", NULL), *seen;

	/* On docker the library sets no HOME (the image's user keeps its own, never the workdir),
	 * so there is nothing it could truthfully claim; everywhere else it sets one. */
	if (!home && strcmp(bt_backend(), "docker") == 0) {
		seen = bt_shell_out(ws, "printf %s \"$HOME\"");
		ck_assert_msg(strcmp(seen, sbx_workspace_root(ws)) != 0, "HOME is the workdir");
		free(seen);
		return;
	}
	ck_assert_msg(home, "no HOME line in:\n%s", text);
	home[strlen(home) - 1] = '\0';
	seen = bt_shell_out(ws, "printf '%s' \"$HOME\"; test -d \"$HOME\"");
	ck_assert_str_eq(seen, home);
	free(seen);
	free(home);
}

/* A command that tries a TCP connection to 127.0.0.1:port and prints what it reads; busybox
 * images have wget, the others python3. */
static const char *connect_cmd(int port)
{
	return bt_tmp("if command -v python3 >/dev/null; then python3 -c \"import socket,sys\n"
	              "s = socket.create_connection(('127.0.0.1', %d), 5)\n"
	              "s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n')\n"
	              "sys.stdout.write(s.recv(200).decode())\"; "
	              "else wget -q -T 5 -O - http://127.0.0.1:%d/; fi 2>/dev/null", port, port);
}

/* A server on this host's loopback that answers every connection with one HTTP reply. */
struct server {
	int fd, port;
	pthread_t thread;
};

static void *serve(void *arg)
{
	struct server *s = arg;
	static const char reply[] = "HTTP/1.0 200 OK\r\nContent-Length: 15\r\n\r\nhello-from-host";

	for (;;) {
		char buf[1024];
		int c = accept(s->fd, NULL, NULL);
		if (c < 0)
			return NULL;
		(void)!read(c, buf, sizeof buf);
		(void)!write(c, reply, sizeof reply - 1);
		close(c);
	}
}

static void start_server(struct server *s)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;

	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s->fd, 0);
	ck_assert_int_eq(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
	ck_assert_int_eq(listen(s->fd, 16), 0);
	ck_assert_int_eq(getsockname(s->fd, (struct sockaddr *)&a, &len), 0);
	s->port = ntohs(a.sin_port);
	ck_assert_int_eq(pthread_create(&s->thread, NULL, serve, s), 0);
	pthread_detach(s->thread);
}

static void check_network_claim(sbx_workspace *ws, const char *text, int port)
{
	sbx_result *res = bt_shell(ws, connect_cmd(port), NULL);
	bool reached = strstr(sbx_result_stdout(res, NULL), "hello-from-host") != NULL;

	if (strstr(text, "- There is no network access"))
		ck_assert_msg(!reached, "the text says no network, but a server on the host "
		              "answered");
	else if (strstr(text, "- Network: the same access as this machine has."))
		ck_assert_msg(reached, "the text says the host's network, but a server on the "
		              "host's loopback did not answer");
	else
		ck_abort_msg("no network line in:\n%s", text);
	sbx_result_free(res);
}

/* Each protected path refuses a write: a new file in a directory entry, an append to a file
 * entry (or its creation, where it is missing). */
static void check_protected_claims(sbx_workspace *ws, const char *text)
{
	char *list = claim_after(text, "change, create or remove them: ", NULL);
	char **paths;

	ck_assert_msg(list, "no protected paths in:\n%s", text);
	paths = split_list(list);
	for (size_t i = 0; paths[i]; i++) {
		const char *p = paths[i];
		size_t n = strlen(p);
		const char *cmd = p[n - 1] == '/'
			? bt_tmp("echo x > '%s.sbx-instr-probe' 2>/dev/null", p)
			: bt_tmp("echo x >> '%s' 2>/dev/null", p);
		ck_assert_msg(shell_status(ws, cmd) != 0, "%s is said protected, but a command "
		              "wrote it", p);
	}
	free_list(paths);
	free(list);
}

static void check_falsehoods_gone(const char *text)
{
	static const char *const gone[] = { "data/", "sessions/", "├──", "dated project",
		"scratch/", "nothing of the host", "git worktree", NULL };

	for (size_t i = 0; gone[i]; i++)
		ck_assert_msg(!strstr(text, gone[i]), "the instructions still say \"%s\":\n%s",
		              gone[i], text);
}

/* ---- the cases --------------------------------------------------------------------------- */

/* A git repository as the project, so that the .git entries of the protected list exist. */
static char *project_dir(void)
{
	char *dir = bt_mkdtemp();

	ck_assert_int_eq(system(bt_tmp("git init -q '%s' && echo hi > '%s/README'", dir, dir)), 0);
	return dir;
}

START_TEST(every_claim_holds)
{
	char *dir = project_dir();
	struct server srv;
	sbx_workspace *ws;
	char *text, *root;

	start_server(&srv);
	ws = bt_open_ok(dir, NULL);
	text = instructions_of(ws);
	root = claimed_root(text);
	ck_assert_str_eq(root, sbx_workspace_root(ws));
	check_root_claims(ws, text, root);
	check_home_claim(ws, text);
	if (strstr(text, "- Commands can write only in "))
		check_writable_claims(ws, text, root, false);
	else
		check_unsandboxed_claim(ws, text);
	check_network_claim(ws, text, srv.port);
	if (strcmp(bt_backend(), "local") != 0)
		check_protected_claims(ws, text);
	check_falsehoods_gone(text);
	free(root);
	sbx_free(text);
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
}
END_TEST

/* The same workspace on the host's network, where the backend offers it. */
START_TEST(host_network_claim_holds)
{
	struct server srv;
	sbx_workspace *ws;
	char *text;

	if (strcmp(bt_backend(), "docker") == 0)
		return;   /* the container's host mode is the engine's host, tested elsewhere */
	start_server(&srv);
	ws = bt_open_ok(bt_mkdtemp(), "\"network\":{\"mode\":\"host\"}");
	text = instructions_of(ws);
	check_network_claim(ws, text, srv.port);
	sbx_free(text);
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
}
END_TEST

/* Mode allowlist: the proxy the text names reaches what the allow list it prints allows, and
 * a direct connection does not. */
START_TEST(allowlist_claim_holds)
{
	struct server srv;
	sbx_workspace *ws;
	sbx_result *res;
	char *text, *allowed, *proxy;

	if (strcmp(bt_backend(), "ns") != 0 && strcmp(bt_backend(), "bwrap") != 0)
		return;   /* local has no proxy; docker's needs the clients image (network suite) */
	start_server(&srv);
	ws = bt_open_ok(bt_mkdtemp(), bt_tmp("\"network\":{\"mode\":\"allowlist\","
	                                     "\"allow\":[\"127.0.0.1:%d\"]}", srv.port));
	text = instructions_of(ws);
	allowed = claim_after(text, "only to the allowed hosts: ", ". Other connections fail.");
	ck_assert_msg(allowed, "%s", text);
	ck_assert_str_eq(allowed, bt_tmp("127.0.0.1:%d", srv.port));
	proxy = claim_after(text, "only through the proxy at ", " (HTTP_PROXY");
	ck_assert_ptr_nonnull(proxy);
	/* NO_PROXY lists 127.0.0.1, which urllib would honour even with a proxy given. */
	res = bt_shell(ws, bt_tmp("env -u NO_PROXY -u no_proxy python3 -c \"import urllib.request as u\n"
	                          "o = u.build_opener(u.ProxyHandler({'http': '%s'}))\n"
	                          "print(o.open('http://127.0.0.1:%d/', timeout=10).read().decode())\"",
	                          proxy, srv.port), NULL);
	ck_assert_msg(strstr(sbx_result_stdout(res, NULL), "hello-from-host"),
	              "the allowed server is not reached through %s: %s", proxy,
	              sbx_result_stderr(res, NULL));
	sbx_result_free(res);
	res = bt_shell(ws, connect_cmd(srv.port), NULL);
	ck_assert_msg(!strstr(sbx_result_stdout(res, NULL), "hello-from-host"),
	              "a direct connection got through");
	sbx_result_free(res);
	free(allowed);
	free(proxy);
	sbx_free(text);
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
}
END_TEST

START_TEST(read_only_claims_hold)
{
	char *dir = project_dir();
	sbx_workspace *ws;
	char *text, *root;

	if (strcmp(bt_backend(), "local") == 0)
		return;   /* local cannot keep commands from writing: it refuses the mode */
	ws = bt_open_ok(dir, "\"mode\":\"read-only\"");
	text = instructions_of(ws);
	root = claimed_root(text);
	ck_assert_msg(strstr(text, "- The workspace is read-only"), "%s", text);
	check_writable_claims(ws, text, root, true);
	free(root);
	sbx_free(text);
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
}
END_TEST

/* A temporary workspace is not called the user's project. */
START_TEST(temporary_root_claim_holds)
{
	sbx_workspace *ws;
	char *text;

	if (!bt_host_files())
		return;
	ws = bt_open_ok(NULL, NULL);
	text = instructions_of(ws);
	ck_assert_msg(strstr(text, "is a temporary folder made for this workspace"), "%s", text);
	ck_assert_msg(!strstr(text, "the project you work on"), "%s", text);
	ck_assert_msg(!strstr(text, ".git/hooks/"), "a workspace without a repository has no "
	              "protected .git/hooks/:\n%s", text);
	sbx_free(text);
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
}
END_TEST

START_TEST(listed_skills_exist)
{
	char *dir = project_dir(), *src = bt_mkdtemp(), *text, *name = NULL;
	sbx_workspace *ws = bt_open_ok(dir, NULL);
	size_t listed = 0;

	test_put_file(src, "SKILL.md", "---\nname: pdf-tools\ndescription: Fill PDF forms\n---\n"
	              "Use pdftk.\n", 0644);
	ck_assert_int_eq(sbx_skill_add(ws, src, &name), 0);
	text = instructions_of(ws);
	for (const char *p = text; (p = strstr(p, "<dir>")); listed++) {
		const char *end = strstr(p, "</dir>");
		ck_assert_ptr_nonnull(end);
		char *skill_dir = strndup(p + 5, (size_t)(end - p - 5));
		ck_assert_msg(shell_status(ws, bt_tmp("test -f '%s/SKILL.md'", skill_dir)) == 0,
		              "the listed skill folder %s has no SKILL.md", skill_dir);
		free(skill_dir);
		p = end;
	}
	ck_assert_uint_eq(listed, 1);
	ck_assert_msg(strstr(text, "<name>pdf-tools</name>"), "%s", text);
	sbx_free(name);
	sbx_free(text);
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
}
END_TEST

static Suite *instructions_suite(void)
{
	Suite *s = suite_create(bt_tmp("instructions-%s", bt_backend()));
	TCase *tc = tcase_create("claims");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, every_claim_holds);
	tcase_add_test(tc, host_network_claim_holds);
	tcase_add_test(tc, allowlist_claim_holds);
	tcase_add_test(tc, read_only_claims_hold);
	tcase_add_test(tc, temporary_root_claim_holds);
	tcase_add_test(tc, listed_skills_exist);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return bt_main(instructions_suite);
}
