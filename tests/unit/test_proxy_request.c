/* The proxy's request parsers (helpers/proxy/request.c): what they accept, what they refuse
 * and with which status, and the plain request's rewritten head. */
#include <string.h>

#include "proxy/request.h"
#include "support.h"

static int parse(const char *text, struct sbx_http_request *r)
{
	return sbx_http_parse(text, strlen(text), r);
}

static void assert_refused(const char *text, int status, const char *why)
{
	struct sbx_http_request r;

	ck_assert_msg(parse(text, &r) == SBX_PARSE_BAD, "accepted: %s", text);
	ck_assert_int_eq(r.status, status);
	ck_assert_msg(strstr(r.error, why), "[%s] for %s", r.error, text);
}

START_TEST(test_connect)
{
	struct sbx_http_request r;

	ck_assert_int_eq(parse("CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n"
	                       "User-Agent: x\r\n\r\nEARLY", &r), SBX_PARSE_DONE);
	ck_assert(r.connect);
	ck_assert_str_eq(r.host, "pypi.org");
	ck_assert_uint_eq(r.port, 443);
	ck_assert_uint_eq(r.head_len, strlen("CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n"
	                                     "User-Agent: x\r\n\r\n"));
	ck_assert_int_eq(parse("CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n", &r), SBX_PARSE_DONE);
	ck_assert_str_eq(r.host, "2001:db8::1");
	ck_assert_int_eq(parse("CONNECT a.org:443 HTTP/1.1\r\nHost: A.ORG\r\n\r\n", &r),
	                 SBX_PARSE_DONE);
	ck_assert_int_eq(parse("CONNECT a.org:443 HTTP/1.1\r\nHost: a.org", &r), SBX_PARSE_MORE);
	assert_refused("CONNECT a.org HTTP/1.1\r\n\r\n", 400, "host:port");
	assert_refused("CONNECT a.org:443 HTTP/1.1\r\nHost: b.org:443\r\n\r\n", 400,
	               "does not match the request target");
	assert_refused("CONNECT a.org:443 HTTP/1.1\r\nHost: a.org:80\r\n\r\n", 400, "does not match");
	assert_refused("CONNECT a.org:443 HTTP/1.1\r\nHost: a.org\r\nHost: a.org\r\n\r\n", 400,
	               "more than one Host");
}
END_TEST

START_TEST(test_plain_request_rewritten)
{
	const char *head = "GET http://Example.org:8080/p?q=1 HTTP/1.1\r\nHost: example.org:8080\r\n"
	                   "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\n"
	                   "Connection: keep-alive\r\nAccept: */*\r\nContent-Length: 3\r\n\r\nabc";
	struct sbx_http_request r;
	char out[1024];
	size_t n;

	ck_assert_int_eq(parse(head, &r), SBX_PARSE_DONE);
	ck_assert(!r.connect);
	ck_assert_str_eq(r.method, "GET");
	ck_assert_str_eq(r.host, "Example.org");
	ck_assert_uint_eq(r.port, 8080);
	ck_assert_uint_eq(r.content_length, 3);
	n = sbx_http_rewrite(head, &r, out, sizeof out);
	out[n] = '\0';
	ck_assert_str_eq(out, "GET /p?q=1 HTTP/1.1\r\nHost: example.org:8080\r\nAccept: */*\r\n"
	                      "Content-Length: 3\r\nConnection: close\r\n\r\n");
	/* No Host: one is added; no path: "/". */
	ck_assert_int_eq(parse("HEAD http://a.org HTTP/1.0\r\n\r\n", &r), SBX_PARSE_DONE);
	n = sbx_http_rewrite("HEAD http://a.org HTTP/1.0\r\n\r\n", &r, out, sizeof out);
	out[n] = '\0';
	ck_assert_str_eq(out, "HEAD / HTTP/1.0\r\nHost: a.org\r\nConnection: close\r\n\r\n");
}
END_TEST

START_TEST(test_refusals)
{
	char big[SBX_HTTP_HEAD_MAX + 64];
	struct sbx_http_request r;

	assert_refused("GET / HTTP/1.1\r\nHost: a.org\r\n\r\n", 400, "not a proxy request");
	assert_refused("GET https://a.org/ HTTP/1.1\r\n\r\n", 400, "CONNECT");
	assert_refused("GET http://u:p@a.org/ HTTP/1.1\r\n\r\n", 400, "user@");
	assert_refused("GET http://a.org/ HTTP/2\r\n\r\n", 400, "HTTP/1.0 and HTTP/1.1");
	assert_refused("GET http://a.org/ HTTP/1.1\n\n", 400, "CRLF");
	assert_refused("GET http://a.org/ HTTP/1.1\r\nX: a\rb\r\n\r\n", 400, "CRLF");
	assert_refused("GET http://a.org/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n", 400, "folded");
	assert_refused("GET http://a.org/ HTTP/1.1\r\nBad Name: a\r\n\r\n", 400, "header name");
	assert_refused("POST http://a.org/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501,
	               "Transfer-Encoding");
	assert_refused("POST http://a.org/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n"
	               "\r\n", 400, "conflicting");
	assert_refused("POST http://a.org/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400,
	               "Content-Length");
	assert_refused("GET http://a.org/ HTTP/1.1\r\nHost: evil.org\r\n\r\n", 400, "does not match");
	memset(big, 'a', sizeof big);
	memcpy(big, "GET http://a.org/ HTTP/1.1\r\nX: ", 31);
	ck_assert_int_eq(sbx_http_parse(big, sizeof big, &r), SBX_PARSE_BAD);
	ck_assert_int_eq(r.status, 431);
}
END_TEST

START_TEST(test_socks5)
{
	const uint8_t greeting[] = { 5, 2, 2, 0 };
	const uint8_t by_name[] = { 5, 1, 0, 3, 8, 'p', 'y', 'p', 'i', '.', 'o', 'r', 'g', 1, 187 };
	const uint8_t by_v4[] = { 5, 1, 0, 1, 192, 0, 2, 1, 0, 80 };
	const uint8_t bind_cmd[] = { 5, 2, 0, 1, 192, 0, 2, 1, 0, 80 };
	const uint8_t bad_type[] = { 5, 1, 0, 9 };
	struct sbx_socks_request r;

	ck_assert_int_eq(sbx_socks_parse_greeting(greeting, 3, &r), SBX_PARSE_MORE);
	ck_assert_int_eq(sbx_socks_parse_greeting(greeting, sizeof greeting, &r), SBX_PARSE_DONE);
	ck_assert(r.no_auth_offered);
	ck_assert_uint_eq(r.used, 4);
	ck_assert_int_eq(sbx_socks_parse_request(by_name, sizeof by_name - 1, &r), SBX_PARSE_MORE);
	ck_assert_int_eq(sbx_socks_parse_request(by_name, sizeof by_name, &r), SBX_PARSE_DONE);
	ck_assert(r.is_name);
	ck_assert_str_eq(r.host, "pypi.org");
	ck_assert_uint_eq(r.port, 443);
	ck_assert_int_eq(sbx_socks_parse_request(by_v4, sizeof by_v4, &r), SBX_PARSE_DONE);
	ck_assert(!r.is_name);
	ck_assert_str_eq(r.host, "192.0.2.1");
	ck_assert_int_eq(sbx_socks_parse_request(bind_cmd, sizeof bind_cmd, &r), SBX_PARSE_BAD);
	ck_assert_int_eq(r.reply, SBX_SOCKS_COMMAND_UNSUPPORTED);
	ck_assert_int_eq(sbx_socks_parse_request(bad_type, sizeof bad_type, &r), SBX_PARSE_BAD);
	ck_assert_int_eq(r.reply, SBX_SOCKS_ADDRESS_UNSUPPORTED);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("proxy_request");
	TCase *tc = tcase_create("proxy_request");

	tcase_add_test(tc, test_connect);
	tcase_add_test(tc, test_plain_request_rewritten);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_socks5);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
