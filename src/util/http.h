/* One small HTTP/1.1 client for the library's own uses (the Docker Engine API, remote MCP
 * servers): requests through libcurl over TCP or a Unix socket, the response kept in a buffer
 * with a size cap or handed to a callback as it arrives, and, for protocols that take the
 * connection over after the response head (Docker's hijacked exec stream), an upgrade that
 * returns the raw socket. Thread-safe: every call uses its own handle. */
#ifndef SBX_UTIL_HTTP_H
#define SBX_UTIL_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/* The response body cap when a request sets none. */
#define SBX_HTTP_DEFAULT_MAX_BODY (16u << 20)

/* Called with each piece of the response body; a negative return aborts the transfer and
 * becomes the result of sbx_http_request_do(). */
typedef int (*sbx_http_body_fn)(void *arg, const char *data, size_t len);

struct sbx_http_request {
	const char *method;           /* "GET", "POST", ...; NULL = GET, or POST with a body */
	const char *url;              /* http:// or https:// (https only without unix_socket) */
	const char *unix_socket;      /* connect to this socket instead of the URL's host; NULL */
	const char *const *headers;   /* "Name: value" strings, NULL-terminated; or NULL */
	const void *body;             /* request body (sent with Content-Length), or NULL */
	size_t body_len;
	long timeout_ms;              /* whole transfer; 0 = none */
	long connect_timeout_ms;      /* 0 = 10 s */
	size_t max_body;              /* response body cap; 0 = SBX_HTTP_DEFAULT_MAX_BODY */
	sbx_http_body_fn on_body;     /* streaming: the body goes here instead of into the buffer */
	void *on_body_arg;
	const char *who;              /* prefixes messages ("docker"); NULL = "http" */
	/* Added for remote MCP servers (src/mcp/http.c): */
	const char *resolve;          /* "host:port:address": connect to exactly this address for
	                                 that host and port (CURLOPT_RESOLVE), the one a policy
	                                 checked; also bypasses any proxy from the environment,
	                                 which would make the connection go elsewhere. NULL: none */
	int (*on_tick)(void *arg);    /* called now and then during the transfer (at least once a
	                                 second, with or without data): a negative return aborts
	                                 it and becomes the result — a deadline the caller moves */
	void *on_tick_arg;
};

struct sbx_http_response {
	long status;                  /* the final response's status code */
	sbx_buf headers;              /* the final response's header lines, "\r\n"-separated */
	sbx_buf body;                 /* the body unless on_body took it */
};

/* Performs the request. 0 once a response arrived, whatever its status (the caller judges
 * it); a negative code when the connection failed, timed out, the body passed max_body
 * (-SBX_EFBIG) or on_body aborted. The response is filled in either way; free it with
 * sbx_http_response_free(). */
int sbx_http_request_do(const struct sbx_http_request *req, struct sbx_http_response *resp);
void sbx_http_response_free(struct sbx_http_response *resp);

/* The value of header `name` (case-insensitive) of a response, copied into out
 * (NUL-terminated, truncated to len). Returns false when the response has no such header. */
bool sbx_http_response_header(const struct sbx_http_response *resp, const char *name,
                              char *out, size_t len);

/* Splits an http:// or https:// URL as libcurl reads it: scheme ("http"/"https"), host
 * (without IPv6 brackets) and port (the scheme's default when absent). -SBX_EINVAL with a
 * reason in why for anything else (another scheme, no host, user:password@, bad port). */
int sbx_http_url_split(const char *url, char *scheme, size_t scheme_len, char *host,
                       size_t host_len, unsigned *port, char *why, size_t why_len);

/* Sends the request on a connection of its own, reads the response head and hands the
 * connection over: *fd is the connected socket (blocking, O_CLOEXEC, the caller closes it),
 * *status the response's status code, and `early` receives any bytes that arrived after the
 * head (the start of the raw stream). http:// only (no TLS). For a status other than 101 or
 * 2xx the body that follows is read into `early` (up to max_body) and *fd is still returned.
 * The timeouts apply to the head only. */
int sbx_http_upgrade(const struct sbx_http_request *req, int *fd, long *status, sbx_buf *early);

/* send(2) of all of data on a socket, retried on EINTR and short counts, without SIGPIPE (a
 * peer that went away must not kill the host process). 0, or -errno. */
int sbx_http_send_all(int fd, const void *data, size_t len);

#endif
