/* libFuzzer target for what clients inside a sandbox send the proxy: the HTTP request head
 * parser and rewriter, the SOCKS5 parsers, and the host reader the policy is applied to
 * (helpers/proxy/request.c, src/util/netpolicy.c).
 *
 * Beyond "no crash, no leak", it checks what the proxy relies on:
 *  - a parse consumes no more than it was given, and a parsed head ends in a blank line;
 *  - the rewritten head of a plain request fits head_len + 300 bytes, ends in one blank
 *    line, carries "Connection: close" and no Proxy-* header;
 *  - a head that parses parses the same when more bytes follow it (the answer does not
 *    depend on how reads split the stream);
 *  - a host that parses as a target formats to text that parses to the same target. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/request.h"
#include "util/netpolicy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s\n", #cond); \
	abort(); } } while (0)

static void check_target(const char *host, uint16_t port)
{
	struct sbx_nettarget t, again;
	char text[SBX_NET_NAME_MAX + 1];

	if (sbx_nettarget_parse(host, strlen(host), port, &t) < 0)
		return;
	sbx_nettarget_host(&t, text, sizeof text);
	CHECK(sbx_nettarget_parse(text, strlen(text), port, &again) == 0);
	CHECK(again.is_name == t.is_name);
	CHECK(t.is_name ? !strcmp(again.name, t.name) : !memcmp(&again.addr, &t.addr, sizeof t.addr));
}

static void check_rewrite(const char *head, const struct sbx_http_request *r)
{
	size_t cap = r->head_len + 300;
	char *out = malloc(cap + 1);
	size_t n = sbx_http_rewrite(head, r, out, cap);

	CHECK(n > 0 && n <= cap);
	out[n] = '\0';
	CHECK(n >= 4 && !memcmp(out + n - 4, "\r\n\r\n", 4));
	CHECK(strstr(out, "\r\n\r\n") == out + n - 4);
	CHECK(strstr(out, "\r\nConnection: close\r\n"));
	for (const char *p = strstr(out, "\r\n"); p; p = strstr(p + 2, "\r\n"))
		CHECK(strncasecmp(p + 2, "proxy-", 6) != 0);
	free(out);
}

static void fuzz_http(const char *buf, size_t size)
{
	struct sbx_http_request r, longer;
	char *more;

	if (sbx_http_parse(buf, size, &r) != SBX_PARSE_DONE)
		return;
	CHECK(r.head_len <= size && r.head_len >= 4);
	CHECK(!memcmp(buf + r.head_len - 4, "\r\n\r\n", 4));
	check_target(r.host, r.port);
	if (!r.connect)
		check_rewrite(buf, &r);
	more = malloc(size + 7);
	memcpy(more, buf, size);
	memcpy(more + size, "GARBAGE", 7);
	CHECK(sbx_http_parse(more, size + 7, &longer) == SBX_PARSE_DONE);
	CHECK(longer.head_len == r.head_len && longer.port == r.port && !strcmp(longer.host, r.host));
	free(more);
}

static void fuzz_socks(const uint8_t *data, size_t size)
{
	struct sbx_socks_request g, r;
	int rc = sbx_socks_parse_greeting(data, size, &g);

	if (rc != SBX_PARSE_DONE)
		return;
	CHECK(g.used <= size);
	rc = sbx_socks_parse_request(data + g.used, size - g.used, &r);
	if (rc == SBX_PARSE_DONE) {
		CHECK(r.used <= size - g.used && r.port != 0);
		check_target(r.host, r.port);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly size bytes: reads past it are ASan's to find. */
	char *buf = malloc(size ? size : 1);

	memcpy(buf, data, size);
	fuzz_http(buf, size);
	fuzz_socks((const uint8_t *)buf, size);
	free(buf);
	return 0;
}
