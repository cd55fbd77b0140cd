/* What a client of the proxy asks for: the head of an HTTP request (CONNECT, or a plain
 * request in absolute form) or a SOCKS5 greeting and request. Pure functions over bytes from
 * inside the sandbox — untrusted and fuzzed (tests/fuzz/fuzz_proxy_request.c). Strict where
 * leniency lets one request mean two things to two parsers (request smuggling): CRLF only,
 * no header folding, one Host, one Content-Length, no Transfer-Encoding on plain requests. */
#ifndef SBX_PROXY_REQUEST_H
#define SBX_PROXY_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SBX_HTTP_HEAD_MAX (16u << 10)   /* request line and headers */

enum sbx_parse { SBX_PARSE_MORE = 0, SBX_PARSE_DONE = 1, SBX_PARSE_BAD = -1 };

struct sbx_http_request {
	bool connect;                 /* CONNECT host:port; else a plain request, http:// only */
	char method[16];
	char host[256];               /* as written, brackets of an IPv6 literal removed */
	uint16_t port;
	size_t head_len;              /* bytes of the head, the blank line included */
	/* Plain requests: */
	size_t target_off, target_len;   /* the origin form ("/path?q") within the head; 0 len:
	                                    "/" */
	size_t version_off;           /* "HTTP/1.x" within the head */
	bool has_host_header;
	uint64_t content_length;      /* body bytes that follow the head */
	/* SBX_PARSE_BAD: */
	int status;                   /* the status to answer: 400, 405, 431, 501 */
	char error[160];              /* why, for the client and the audit log */
};

/* Parses buf[0..len): SBX_PARSE_MORE until the blank line (or SBX_HTTP_HEAD_MAX) arrives. */
int sbx_http_parse(const char *buf, size_t len, struct sbx_http_request *r);

/* The head of a plain request as sent to the server: origin form, hop-by-hop headers (and
 * the proxy's own) dropped, Host added when absent, "Connection: close". Writes at most cap
 * bytes to out and returns the length, or 0 when cap is too small (cap = head_len + 300
 * always suffices). */
size_t sbx_http_rewrite(const char *head, const struct sbx_http_request *r, char *out,
                        size_t cap);

/* SOCKS5 (RFC 1928), no authentication, CONNECT only. */
#define SBX_SOCKS_VERSION 5
enum sbx_socks_reply {
	SBX_SOCKS_OK = 0,
	SBX_SOCKS_GENERAL_FAILURE = 1,
	SBX_SOCKS_NOT_ALLOWED = 2,
	SBX_SOCKS_NETWORK_UNREACHABLE = 3,
	SBX_SOCKS_HOST_UNREACHABLE = 4,
	SBX_SOCKS_REFUSED = 5,
	SBX_SOCKS_TTL_EXPIRED = 6,
	SBX_SOCKS_COMMAND_UNSUPPORTED = 7,
	SBX_SOCKS_ADDRESS_UNSUPPORTED = 8,
};

struct sbx_socks_request {
	size_t used;                  /* bytes consumed */
	bool no_auth_offered;         /* greeting: method 0 was among the client's */
	bool is_name;                 /* request: ATYP 3 (a name) */
	char host[256];               /* the name, or the address in text form */
	uint16_t port;
	uint8_t reply;                /* SBX_PARSE_BAD: the reply code to send */
	char error[160];
};

int sbx_socks_parse_greeting(const uint8_t *buf, size_t len, struct sbx_socks_request *r);
int sbx_socks_parse_request(const uint8_t *buf, size_t len, struct sbx_socks_request *r);

#endif
