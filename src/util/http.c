/* The library's HTTP client: libcurl for ordinary requests, a plain socket for upgrades (the
 * connection outlives the response head, which libcurl's connect-only mode would make us
 * re-implement around its handle anyway). */
/* The calls go through pointers (lazylib.h); curl's type-checking macros would shadow them. */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "error.h"
#include "http.h"
#include "lazylib.h"

#define DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define MAX_HEAD_BYTES (64u << 10)

static const char *who_of(const struct sbx_http_request *req)
{
	return req->who ? req->who : "http";
}

static size_t max_body_of(const struct sbx_http_request *req)
{
	return req->max_body ? req->max_body : SBX_HTTP_DEFAULT_MAX_BODY;
}

/* libcurl is loaded on the first request or URL to read (lazylib.h): most processes never
 * make one. Every entry point that reaches cu-> calls need_curl() first. */
#define CURL_FUNCS(X)                                                                      \
	X(curl_global_init) X(curl_easy_init) X(curl_easy_setopt) X(curl_easy_perform)     \
	X(curl_easy_getinfo) X(curl_easy_cleanup) X(curl_easy_strerror) X(curl_free)       \
	X(curl_slist_append) X(curl_slist_free_all) X(curl_url) X(curl_url_set)            \
	X(curl_url_get) X(curl_url_cleanup)
SBX_LAZY_API(curl_api, CURL_FUNCS);
static struct sbx_lazylib curl_lib =
	SBX_LAZYLIB("libcurl.so.4", "the docker backend and remote MCP servers", curl_api);
static const struct curl_api *const cu = &curl_api_slots;

static int need_curl(void)
{
	return sbx_lazylib_load(&curl_lib) ? 0 : SBX_LAZYLIB_ERR;
}

/* curl_global_init is not thread-safe on every libcurl the library may meet: once. */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

static void curl_init_once(void)
{
	curl_init_result = cu->curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- requests through libcurl ------------------------------------------------------------ */

struct transfer {
	const struct sbx_http_request *req;
	struct sbx_http_response *resp;
	size_t body_seen;
	int abort_code;               /* why we stopped the transfer, 0 if we did not */
	struct curl_slist *resolve;   /* req->resolve as libcurl takes it */
};

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct transfer *t = arg;
	size_t len = size * n;

	/* A new status line starts the headers of a later response (after 100 Continue or a
	 * redirect): keep only the final response's. */
	if (len >= 5 && memcmp(data, "HTTP/", 5) == 0)
		t->resp->headers.len = 0;
	sbx_buf_append(&t->resp->headers, data, len);
	return t->resp->headers.oom ? 0 : len;
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct transfer *t = arg;
	size_t len = size * n;

	if (len > max_body_of(t->req) - t->body_seen) {
		t->abort_code = sbx_fail(-SBX_EFBIG, "%s: %s: the response is larger than %zu bytes",
		                         who_of(t->req), t->req->url, max_body_of(t->req));
		return 0;
	}
	t->body_seen += len;
	if (t->req->on_body) {
		int r = t->req->on_body(t->req->on_body_arg, data, len);

		if (r < 0) {
			t->abort_code = r;
			return 0;
		}
		return len;
	}
	sbx_buf_append(&t->resp->body, data, len);
	if (t->resp->body.oom) {
		t->abort_code = sbx_fail(-SBX_ENOMEM, "%s: out of memory", who_of(t->req));
		return 0;
	}
	return len;
}

/* libcurl's progress meter, used as a clock for req->on_tick. */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
	struct transfer *t = arg;
	int r = t->req->on_tick(t->req->on_tick_arg);

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	if (r < 0) {
		t->abort_code = r;
		return 1;
	}
	return 0;
}

static int curl_failure(const struct sbx_http_request *req, CURLcode c, const char *detail)
{
	int code = c == CURLE_OPERATION_TIMEDOUT ? -SBX_ETIMEDOUT : -SBX_EIO;
	const char *where = req->unix_socket ? req->unix_socket : req->url;

	return sbx_fail(code, "%s: %s %s: %s", who_of(req), req->method ? req->method : "GET",
	                where, detail[0] ? detail : cu->curl_easy_strerror(c));
}

static struct curl_slist *header_list(const struct sbx_http_request *req, bool *ok)
{
	struct curl_slist *list = NULL, *next;

	*ok = true;
	for (const char *const *h = req->headers; h && *h; h++) {
		if (!(next = cu->curl_slist_append(list, *h))) {
			*ok = false;
			break;
		}
		list = next;
	}
	/* Without this libcurl sends "Expect: 100-continue" for larger bodies and waits. */
	if (*ok && req->body) {
		if (!(next = cu->curl_slist_append(list, "Expect:")))
			*ok = false;
		else
			list = next;
	}
	return list;
}

static void set_options(CURL *c, const struct sbx_http_request *req, struct transfer *t,
                        struct curl_slist *headers, char *errbuf)
{
	const char *method = req->method ? req->method : req->body ? "POST" : "GET";

	cu->curl_easy_setopt(c, CURLOPT_URL, req->url);
	if (req->unix_socket)
		cu->curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, req->unix_socket);
	cu->curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  /* never raise SIGALRM in a host process */
	cu->curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	cu->curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	cu->curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	cu->curl_easy_setopt(c, CURLOPT_HEADERDATA, t);
	cu->curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	cu->curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
	cu->curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
	                 req->connect_timeout_ms > 0 ? req->connect_timeout_ms
	                                             : DEFAULT_CONNECT_TIMEOUT_MS);
	if (req->timeout_ms > 0)
		cu->curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, req->timeout_ms);
	cu->curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	if (strcmp(method, "HEAD") == 0)
		cu->curl_easy_setopt(c, CURLOPT_NOBODY, 1L);  /* a HEAD answer's length has no body */
	else if (strcmp(method, "GET") != 0)
		cu->curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (req->body) {
		cu->curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body);
		cu->curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	}
	if (req->on_tick) {
		cu->curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
		cu->curl_easy_setopt(c, CURLOPT_XFERINFODATA, t);
		cu->curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	}
	if (t->resolve) {
		cu->curl_easy_setopt(c, CURLOPT_RESOLVE, t->resolve);
		cu->curl_easy_setopt(c, CURLOPT_PROXY, "");   /* "" = no proxy, whatever the env says */
	}
}

int sbx_http_request_do(const struct sbx_http_request *req, struct sbx_http_response *resp)
{
	struct transfer t = { .req = req, .resp = resp };
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *headers;
	CURLcode rc;
	CURL *c;
	bool ok;

	*resp = (struct sbx_http_response){ 0 };
	if (need_curl() < 0)
		return SBX_LAZYLIB_ERR;
	pthread_once(&curl_once, curl_init_once);
	if (curl_init_result != CURLE_OK)
		return sbx_fail(-SBX_EIO, "%s: libcurl: %s", who_of(req),
		                cu->curl_easy_strerror(curl_init_result));
	if (!(c = cu->curl_easy_init()))
		return sbx_fail(-SBX_ENOMEM, "%s: out of memory", who_of(req));
	headers = header_list(req, &ok);
	if (ok && req->resolve && !(t.resolve = cu->curl_slist_append(NULL, req->resolve)))
		ok = false;
	if (!ok) {
		cu->curl_slist_free_all(headers);
		cu->curl_easy_cleanup(c);
		return sbx_fail(-SBX_ENOMEM, "%s: out of memory", who_of(req));
	}
	set_options(c, req, &t, headers, errbuf);
	rc = cu->curl_easy_perform(c);
	cu->curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
	cu->curl_slist_free_all(headers);
	cu->curl_slist_free_all(t.resolve);
	cu->curl_easy_cleanup(c);
	if (t.abort_code)
		return t.abort_code;
	if (rc != CURLE_OK)
		return curl_failure(req, rc, errbuf);
	if (resp->headers.oom)
		return sbx_fail(-SBX_ENOMEM, "%s: out of memory", who_of(req));
	return 0;
}

static int url_part(CURLU *u, CURLUPart part, char *out, size_t len)
{
	char *v = NULL;
	int r = cu->curl_url_get(u, part, &v, 0) == CURLUE_OK && strlen(v) < len ? 0 : -1;

	if (r == 0)
		snprintf(out, len, "%s", v);
	cu->curl_free(v);
	return r;
}

int sbx_http_url_split(const char *url, char *scheme, size_t scheme_len, char *host,
                       size_t host_len, unsigned *port, char *why, size_t why_len)
{
	CURLU *u;
	char *user = NULL, *port_text = NULL;
	int r = -SBX_EINVAL;

	if (need_curl() < 0) {
		snprintf(why, why_len, "cannot be read: %s", curl_lib.why);
		return SBX_LAZYLIB_ERR;
	}
	if (!(u = cu->curl_url()))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if (cu->curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK)
		snprintf(why, why_len, "is not a URL libcurl can read");
	else if (url_part(u, CURLUPART_SCHEME, scheme, scheme_len) < 0 ||
	         (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0))
		snprintf(why, why_len, "must start with http:// or https://");
	else if (cu->curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK)
		snprintf(why, why_len, "must not hold a user name or password (use \"headers\")");
	else if (url_part(u, CURLUPART_HOST, host, host_len) < 0 || !host[0])
		snprintf(why, why_len, "has no host, or one that is too long");
	else if (cu->curl_url_get(u, CURLUPART_PORT, &port_text, CURLU_DEFAULT_PORT) != CURLUE_OK)
		snprintf(why, why_len, "has a port that is not valid");
	else
		r = 0;
	if (r == 0) {
		*port = (unsigned)strtoul(port_text, NULL, 10);
		if (host[0] == '[') {   /* an IPv6 literal comes back in brackets */
			size_t n = strlen(host);

			memmove(host, host + 1, n - 2);
			host[n - 2] = '\0';
		}
		if (*port == 0 || *port > 65535) {
			snprintf(why, why_len, "has a port that is not valid");
			r = -SBX_EINVAL;
		}
	}
	cu->curl_free(user);
	cu->curl_free(port_text);
	cu->curl_url_cleanup(u);
	return r;
}

void sbx_http_response_free(struct sbx_http_response *resp)
{
	sbx_buf_free(&resp->headers);
	sbx_buf_free(&resp->body);
	resp->status = 0;
}

/* Finds header `name` in a block of "Name: value\r\n" lines. */
static bool find_header(const char *head, size_t head_len, const char *name, const char **value,
                        size_t *value_len)
{
	size_t name_len = strlen(name);
	const char *p = head, *end = head + head_len;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = eol ? eol : end;

		if ((size_t)(line_end - p) > name_len && p[name_len] == ':' &&
		    strncasecmp(p, name, name_len) == 0) {
			const char *v = p + name_len + 1;

			while (v < line_end && (*v == ' ' || *v == '\t'))
				v++;
			while (line_end > v && (line_end[-1] == '\r' || line_end[-1] == ' '))
				line_end--;
			*value = v;
			*value_len = (size_t)(line_end - v);
			return true;
		}
		p = eol ? eol + 1 : end;
	}
	return false;
}

bool sbx_http_response_header(const struct sbx_http_response *resp, const char *name,
                              char *out, size_t len)
{
	const char *v;
	size_t n;

	if (!resp->headers.data || !find_header(resp->headers.data, resp->headers.len, name, &v, &n))
		return false;
	if (len) {
		if (n >= len)
			n = len - 1;
		memcpy(out, v, n);
		out[n] = '\0';
	}
	return true;
}

/* ---- upgrades on a plain socket ---------------------------------------------------------- */

struct url_parts {
	char host[256];
	char port[8];
	const char *path;             /* points into the URL; "/" when it has none */
};

static int parse_http_url(const struct sbx_http_request *req, struct url_parts *u)
{
	const char *p = req->url, *host, *host_end, *colon;
	size_t host_len;

	if (strncmp(p, "http://", 7) != 0)
		return sbx_fail(-SBX_EINVAL, "%s: %s: an upgraded connection needs an http:// URL",
		                who_of(req), req->url);
	host = p + 7;
	host_end = host + strcspn(host, "/");
	u->path = *host_end ? host_end : "/";
	colon = memchr(host, ':', (size_t)(host_end - host));
	host_len = (size_t)((colon ? colon : host_end) - host);
	if (host_len == 0 || host_len >= sizeof u->host)
		return sbx_fail(-SBX_EINVAL, "%s: %s: bad host in URL", who_of(req), req->url);
	memcpy(u->host, host, host_len);
	u->host[host_len] = '\0';
	if (colon) {
		size_t port_len = (size_t)(host_end - colon - 1);

		if (port_len == 0 || port_len >= sizeof u->port ||
		    strspn(colon + 1, "0123456789") < port_len)
			return sbx_fail(-SBX_EINVAL, "%s: %s: bad port in URL", who_of(req), req->url);
		memcpy(u->port, colon + 1, port_len);
		u->port[port_len] = '\0';
	} else {
		strcpy(u->port, "80");
	}
	return 0;
}

/* Waits until fd is ready for events or the deadline passes (-SBX_ETIMEDOUT). */
static int wait_ready(int fd, short events, long long deadline)
{
	for (;;) {
		long long left = deadline - sbx_now_ms();
		struct pollfd p = { .fd = fd, .events = events };
		int n;

		if (left <= 0)
			return -SBX_ETIMEDOUT;
		n = poll(&p, 1, left > 60000 ? 60000 : (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -sbx_errno_code(errno);
	}
}

/* Non-blocking connect with a deadline, then back to blocking. */
static int connect_with_deadline(int fd, const struct sockaddr *sa, socklen_t len,
                                 long long deadline)
{
	int flags = fcntl(fd, F_GETFL), err = 0, r;
	socklen_t err_len = sizeof err;

	fcntl(fd, F_SETFL, flags | O_NONBLOCK);
	if (connect(fd, sa, len) < 0) {
		if (errno != EINPROGRESS && errno != EAGAIN)
			return -errno;
		if ((r = wait_ready(fd, POLLOUT, deadline)) < 0)
			return r == -SBX_ETIMEDOUT ? -ETIMEDOUT : -EIO;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len) < 0)
			return -errno;
		if (err)
			return -err;
	}
	fcntl(fd, F_SETFL, flags);
	return 0;
}

static int connect_unix(const struct sbx_http_request *req, long long deadline)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, r;

	if (strlen(req->unix_socket) >= sizeof sa.sun_path)
		return sbx_fail(-SBX_ENAMETOOLONG, "%s: socket path too long: %s", who_of(req),
		                req->unix_socket);
	strcpy(sa.sun_path, req->unix_socket);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return sbx_fail(-sbx_errno_code(errno), "%s: socket: %s", who_of(req), strerror(errno));
	if ((r = connect_with_deadline(fd, (struct sockaddr *)&sa, sizeof sa, deadline)) < 0) {
		close(fd);
		return sbx_fail(-sbx_errno_code(-r), "%s: cannot reach %s: %s", who_of(req),
		                req->unix_socket, strerror(-r));
	}
	return fd;
}

static int connect_tcp(const struct sbx_http_request *req, const struct url_parts *u,
                       long long deadline)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	int fd = -1, r = -ECONNREFUSED, g;

	if ((g = getaddrinfo(u->host, u->port, &hints, &res)) != 0)
		return sbx_fail(-SBX_EIO, "%s: %s: %s", who_of(req), u->host, gai_strerror(g));
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			r = -errno;
			continue;
		}
		if ((r = connect_with_deadline(fd, ai->ai_addr, ai->ai_addrlen, deadline)) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return sbx_fail(-sbx_errno_code(-r), "%s: cannot reach %s:%s: %s", who_of(req),
		                u->host, u->port, strerror(-r));
	return fd;
}

static void build_request_head(const struct sbx_http_request *req, const struct url_parts *u,
                               sbx_buf *b)
{
	const char *method = req->method ? req->method : req->body ? "POST" : "GET";

	sbx_buf_printf(b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, u->path, u->host);
	for (const char *const *h = req->headers; h && *h; h++)
		sbx_buf_printf(b, "%s\r\n", *h);
	if (req->body)
		sbx_buf_printf(b, "Content-Length: %zu\r\n", req->body_len);
	sbx_buf_puts(b, "\r\n");
	if (req->body)
		sbx_buf_append(b, req->body, req->body_len);
}

/* Reads until the end of the response head; what came after it stays in `early`. */
static int read_head(const struct sbx_http_request *req, int fd, long long deadline,
                     sbx_buf *head, sbx_buf *early)
{
	char chunk[4096];

	for (;;) {
		const char *end = head->data ? strstr(head->data, "\r\n\r\n") : NULL;
		ssize_t n;
		int r;

		if (end) {
			size_t head_len = (size_t)(end - head->data) + 4;

			sbx_buf_append(early, head->data + head_len, head->len - head_len);
			head->len = head_len;
			head->data[head_len] = '\0';
			return 0;
		}
		if (head->len > MAX_HEAD_BYTES)
			return sbx_fail(-SBX_EPROTO, "%s: %s: response head too large", who_of(req),
			                req->url);
		if ((r = wait_ready(fd, POLLIN, deadline)) < 0)
			return sbx_fail(r, "%s: %s: no response: %s", who_of(req), req->url,
			                r == -SBX_ETIMEDOUT ? "timed out" : strerror(-r));
		n = recv(fd, chunk, sizeof chunk, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return sbx_fail(-SBX_EIO, "%s: %s: the connection closed before a response",
			                who_of(req), req->url);
		sbx_buf_append(head, chunk, (size_t)n);
		if (head->oom)
			return sbx_fail(-SBX_ENOMEM, "%s: out of memory", who_of(req));
	}
}

static int parse_status(const struct sbx_http_request *req, const char *head, long *status)
{
	char *end;

	if (strncmp(head, "HTTP/1.", 7) != 0 || !head[7] || head[8] != ' ')
		return sbx_fail(-SBX_EPROTO, "%s: %s: not an HTTP response", who_of(req), req->url);
	*status = strtol(head + 9, &end, 10);
	if (end != head + 12 || *status < 100 || *status > 599)
		return sbx_fail(-SBX_EPROTO, "%s: %s: bad status line", who_of(req), req->url);
	return 0;
}

/* An error response's body: by Content-Length when given, else up to the end or the cap. */
static void read_error_body(const struct sbx_http_request *req, int fd, const sbx_buf *head,
                            long long deadline, sbx_buf *early)
{
	const char *v;
	size_t vlen, want = max_body_of(req);
	char chunk[4096];

	if (find_header(head->data, head->len, "Content-Length", &v, &vlen))
		want = (size_t)strtoull(v, NULL, 10);
	if (want > max_body_of(req))
		want = max_body_of(req);
	while (early->len < want && !early->oom && wait_ready(fd, POLLIN, deadline) == 0) {
		ssize_t n = recv(fd, chunk, sizeof chunk, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		sbx_buf_append(early, chunk, (size_t)n);
	}
}

int sbx_http_send_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int sbx_http_upgrade(const struct sbx_http_request *req, int *fd_out, long *status, sbx_buf *early)
{
	long timeout = req->connect_timeout_ms > 0 ? req->connect_timeout_ms
	                                           : DEFAULT_CONNECT_TIMEOUT_MS;
	long long deadline = sbx_now_ms() + (req->timeout_ms > 0 ? req->timeout_ms : timeout);
	sbx_buf out = { 0 }, head = { 0 };
	struct url_parts u;
	int fd, r;

	*fd_out = -1;
	*status = 0;
	if ((r = parse_http_url(req, &u)) < 0)
		return r;
	fd = req->unix_socket ? connect_unix(req, sbx_now_ms() + timeout)
	                      : connect_tcp(req, &u, sbx_now_ms() + timeout);
	if (fd < 0)
		return fd;
	build_request_head(req, &u, &out);
	r = out.oom ? sbx_fail(-SBX_ENOMEM, "%s: out of memory", who_of(req))
	            : sbx_http_send_all(fd, out.data, out.len);
	if (r < 0 && !out.oom)
		r = sbx_fail(-SBX_EIO, "%s: %s: sending the request: %s", who_of(req), req->url,
		             strerror(-r));
	sbx_buf_free(&out);
	if (r == 0)
		r = read_head(req, fd, deadline, &head, early);
	if (r == 0)
		r = parse_status(req, head.data, status);
	if (r == 0 && *status != 101 && (*status < 200 || *status > 299))
		read_error_body(req, fd, &head, deadline, early);
	sbx_buf_free(&head);
	if (r < 0) {
		close(fd);
		return r;
	}
	*fd_out = fd;
	return 0;
}
