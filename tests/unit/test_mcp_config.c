/* Unit tests of what a remote MCP server's declaration must be (src/mcp/registry.c) and of
 * the URL reading it relies on (sbx_http_url_split in src/util/http.c). */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "support.h"
#include "agentsbx/agentsbx.h"
#include "mcp/mcp.h"
#include "util/http.h"
#include "util/json.h"

static int check_text(const char *text, char *err, size_t len)
{
	char perr[128];
	sbx_json *v = NULL;
	int r;

	ck_assert_msg(sbx_json_parse(text, strlen(text), &v, perr, sizeof perr) == 0, "%s", perr);
	r = sbx_mcp_config_check(v, err, len);
	sbx_json_free(v);
	return r;
}

START_TEST(url_split_reads_what_curl_reads)
{
	char scheme[16], host[300], why[128];
	unsigned port;

	ck_assert_int_eq(sbx_http_url_split("https://Example.com/mcp", scheme, sizeof scheme, host,
	                                    sizeof host, &port, why, sizeof why), 0);
	ck_assert_str_eq(scheme, "https");
	ck_assert_uint_eq(port, 443);
	ck_assert_int_eq(sbx_http_url_split("http://127.0.0.1:8123/x?y=1", scheme, sizeof scheme,
	                                    host, sizeof host, &port, why, sizeof why), 0);
	ck_assert_str_eq(host, "127.0.0.1");
	ck_assert_uint_eq(port, 8123);
	ck_assert_int_eq(sbx_http_url_split("http://[::1]:9/", scheme, sizeof scheme, host,
	                                    sizeof host, &port, why, sizeof why), 0);
	ck_assert_str_eq(host, "::1");   /* without its brackets, as the policy reads hosts */
	ck_assert_uint_eq(port, 9);
	ck_assert_int_eq(sbx_http_url_split("ftp://example.com/", scheme, sizeof scheme, host,
	                                    sizeof host, &port, why, sizeof why), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "http://"));
	ck_assert_int_eq(sbx_http_url_split("http://u:p@example.com/", scheme, sizeof scheme, host,
	                                    sizeof host, &port, why, sizeof why), -SBX_EINVAL);
	ck_assert_int_eq(sbx_http_url_split("http://example.com:99999/", scheme, sizeof scheme,
	                                    host, sizeof host, &port, why, sizeof why), -SBX_EINVAL);
	ck_assert_int_eq(sbx_http_url_split("not a url", scheme, sizeof scheme, host, sizeof host,
	                                    &port, why, sizeof why), -SBX_EINVAL);
}
END_TEST

START_TEST(remote_entries_and_their_spellings)
{
	char err[256];

	for (const char *const *t = (const char *const[]){ "http", "streamable-http",
	                                                   "streamableHttp", "streamable_http",
	                                                   NULL }; *t; t++) {
		char text[128];

		snprintf(text, sizeof text, "{\"type\":\"%s\",\"url\":\"https://example.com/mcp\"}", *t);
		ck_assert_msg(check_text(text, err, sizeof err) == 0, "%s: %s", *t, err);
	}
	ck_assert_int_eq(check_text("{\"url\":\"http://example.com/\",\"headers\":{\"A\":\"b\"},"
	                            "\"timeout\":5}", err, sizeof err), 0);
	ck_assert_int_eq(check_text("{\"type\":\"websocket\",\"url\":\"http://x/\"}", err,
	                            sizeof err), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "\"type\""));
	ck_assert_int_eq(check_text("{\"type\":\"http\",\"url\":7}", err, sizeof err), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "\"url\""));
	ck_assert_int_eq(check_text("{\"type\":\"http\",\"url\":\"http://example.com/\",\"headers\":"
	                            "{\"A\":7}}", err, sizeof err), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "\"headers\": \"A\" must be a string"));
	ck_assert_int_eq(check_text("{\"type\":\"http\",\"url\":\"http://example.com/\",\"headers\":"
	                            "{\"Accept\":\"x\"}}", err, sizeof err), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "set by the MCP client"));
}
END_TEST

START_TEST(long_urls_and_headers_are_refused)
{
	static char text[20000], err[256];
	int n = snprintf(text, sizeof text, "{\"type\":\"http\",\"url\":\"http://example.com/");

	memset(text + n, 'a', 3000);
	strcpy(text + n + 3000, "\"}");
	ck_assert_int_eq(check_text(text, err, sizeof err), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "\"url\" is longer than 2048"));
	n = snprintf(text, sizeof text, "{\"type\":\"http\",\"url\":\"http://e.com/\",\"headers\":"
	             "{\"X-Big\":\"");
	memset(text + n, 'b', 9000);
	strcpy(text + n + 9000, "\"}}");
	ck_assert_int_eq(check_text(text, err, sizeof err), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "\"X-Big\" is longer than 8192"));
}
END_TEST

static Suite *mcp_config_suite(void)
{
	Suite *s = suite_create("mcp_config");
	TCase *tc = tcase_create("remote");

	tcase_add_test(tc, url_split_reads_what_curl_reads);
	tcase_add_test(tc, remote_entries_and_their_spellings);
	tcase_add_test(tc, long_urls_and_headers_are_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(mcp_config_suite());
}
