/* Unit tests of the HTTP client against a one-connection server on a Unix socket in a thread:
 * an ordinary request through libcurl, the body cap, streaming, and an upgrade that hands the
 * raw connection over with the bytes that followed the head. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "support.h"
#include "agentsbx/agentsbx.h"
#include "util/http.h"

struct server {
	int listen_fd;
	const char *reply;            /* written once the request head has arrived */
	char request[4096];           /* what the client sent */
	char path[108];
	pthread_t thread;
};

static void *serve_one(void *arg)
{
	struct server *s = arg;
	int fd = accept(s->listen_fd, NULL, NULL);
	size_t len = 0;

	if (fd < 0)
		return NULL;
	while (len < sizeof s->request - 1 && !strstr(s->request, "\r\n\r\n")) {
		ssize_t n = read(fd, s->request + len, sizeof s->request - 1 - len);

		if (n <= 0)
			break;
		len += (size_t)n;
		s->request[len] = '\0';
	}
	if (write(fd, s->reply, strlen(s->reply)) < 0)
		perror("write");
	close(fd);
	return NULL;
}

static void server_start(struct server *s, const char *dir, const char *reply)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(s, 0, sizeof *s);
	s->reply = reply;
	snprintf(s->path, sizeof s->path, "%s/s", dir);
	strcpy(sa.sun_path, s->path);
	s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s->listen_fd, 0);
	ck_assert_int_eq(bind(s->listen_fd, (struct sockaddr *)&sa, sizeof sa), 0);
	ck_assert_int_eq(listen(s->listen_fd, 1), 0);
	ck_assert_int_eq(pthread_create(&s->thread, NULL, serve_one, s), 0);
}

static void server_stop(struct server *s)
{
	pthread_join(s->thread, NULL);
	close(s->listen_fd);
	unlink(s->path);
}

#define OK_REPLY "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Thing:  v a l \r\n" \
                 "Content-Length: 5\r\nConnection: close\r\n\r\nhello"

START_TEST(get_over_unix_socket)
{
	char *dir = test_mkdtemp(), value[32];
	struct server s;
	const char *headers[] = { "X-Test: 1", NULL };
	struct sbx_http_request req = { .url = "http://engine/v1.41/version", .headers = headers };
	struct sbx_http_response resp;

	server_start(&s, dir, OK_REPLY);
	req.unix_socket = s.path;
	ck_assert_int_eq(sbx_http_request_do(&req, &resp), 0);
	server_stop(&s);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_str_eq(resp.body.data, "hello");
	ck_assert(sbx_http_response_header(&resp, "x-thing", value, sizeof value));
	ck_assert_str_eq(value, "v a l");
	ck_assert(!sbx_http_response_header(&resp, "X-Missing", value, sizeof value));
	ck_assert_ptr_nonnull(strstr(s.request, "GET /v1.41/version HTTP/1.1\r\n"));
	ck_assert_ptr_nonnull(strstr(s.request, "X-Test: 1\r\n"));
	sbx_http_response_free(&resp);
	test_rm_rf(dir);
	free(dir);
}
END_TEST

START_TEST(body_cap_is_an_error)
{
	char *dir = test_mkdtemp();
	struct server s;
	struct sbx_http_request req = { .url = "http://engine/x", .max_body = 3 };
	struct sbx_http_response resp;

	server_start(&s, dir, OK_REPLY);
	req.unix_socket = s.path;
	ck_assert_int_eq(sbx_http_request_do(&req, &resp), -SBX_EFBIG);
	server_stop(&s);
	sbx_http_response_free(&resp);
	test_rm_rf(dir);
	free(dir);
}
END_TEST

static int collect(void *arg, const char *data, size_t len)
{
	sbx_buf_append(arg, data, len);
	return 0;
}

START_TEST(streaming_body_and_post)
{
	char *dir = test_mkdtemp();
	struct server s;
	sbx_buf got = { 0 };
	struct sbx_http_request req = { .url = "http://engine/p", .body = "{}", .body_len = 2,
	                                .on_body = collect, .on_body_arg = &got };
	struct sbx_http_response resp;

	server_start(&s, dir, OK_REPLY);
	req.unix_socket = s.path;
	ck_assert_int_eq(sbx_http_request_do(&req, &resp), 0);
	server_stop(&s);
	ck_assert_str_eq(got.data, "hello");
	ck_assert_uint_eq(resp.body.len, 0);
	ck_assert_ptr_nonnull(strstr(s.request, "POST /p HTTP/1.1\r\n"));
	sbx_buf_free(&got);
	sbx_http_response_free(&resp);
	test_rm_rf(dir);
	free(dir);
}
END_TEST

START_TEST(upgrade_hands_over_the_stream)
{
	char *dir = test_mkdtemp(), rest[64] = "";
	struct server s;
	struct sbx_http_request req = { .method = "POST", .url = "http://engine/exec/1/start",
	                                .body = "{}", .body_len = 2 };
	sbx_buf early = { 0 };
	long status;
	int fd;
	ssize_t n;

	server_start(&s, dir, "HTTP/1.1 101 UPGRADED\r\nUpgrade: tcp\r\n\r\nraw-one raw-two");
	req.unix_socket = s.path;
	ck_assert_int_eq(sbx_http_upgrade(&req, &fd, &status, &early), 0);
	ck_assert_int_eq(status, 101);
	/* The stream's first bytes may have come with the head or may follow it. */
	n = read(fd, rest, sizeof rest - 1);
	ck_assert_int_ge(n, 0);
	sbx_buf_append(&early, rest, (size_t)n);
	ck_assert_str_eq(early.data, "raw-one raw-two");
	ck_assert_ptr_nonnull(strstr(s.request, "Content-Length: 2\r\n"));
	close(fd);
	server_stop(&s);
	sbx_buf_free(&early);
	test_rm_rf(dir);
	free(dir);
}
END_TEST

START_TEST(unreachable_socket_names_it)
{
	struct sbx_http_request req = { .url = "http://engine/x",
	                                .unix_socket = "/nonexistent/engine.sock", .who = "docker" };
	struct sbx_http_response resp;
	sbx_buf early = { 0 };
	long status;
	int fd;

	ck_assert_int_lt(sbx_http_request_do(&req, &resp), 0);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "/nonexistent/engine.sock"));
	sbx_http_response_free(&resp);
	ck_assert_int_eq(sbx_http_upgrade(&req, &fd, &status, &early), -SBX_ENOENT);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "docker: cannot reach"));
	sbx_buf_free(&early);
}
END_TEST

static Suite *http_suite(void)
{
	Suite *s = suite_create("http");
	TCase *tc = tcase_create("http");

	tcase_add_test(tc, get_over_unix_socket);
	tcase_add_test(tc, body_cap_is_an_error);
	tcase_add_test(tc, streaming_body_and_post);
	tcase_add_test(tc, upgrade_hands_over_the_stream);
	tcase_add_test(tc, unreachable_socket_names_it);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(http_suite());
}
