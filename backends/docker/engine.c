/* The Docker Engine API: where the engine is, which API version both sides speak, and one
 * call that turns an HTTP exchange into a parsed answer or a sentence naming what failed. */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "docker.h"
#include "util/error.h"
#include "util/http.h"

#define DEFAULT_SOCKET "/var/run/docker.sock"
/* The oldest API with everything we use (Mounts, exec Env/WorkingDir, PidsLimit: 1.25+;
 * exec WorkingDir: 1.35) and the newest we have read the documentation of. */
#define API_MIN_MINOR 35
#define API_MAX_MINOR 43
#define MAX_ANSWER_BYTES (8u << 20)
#define CALL_TIMEOUT_MS 120000L

static int parse_host(struct docker_engine *e, const char *host)
{
	if (!strncmp(host, "unix://", 7)) {
		if (host[7] != '/')
			return sbx_fail(-SBX_ECONFIG, "docker: host '%s': expected unix:///absolute/path",
			                host);
		e->unix_socket = strdup(host + 7);
		e->base_url = strdup("http://docker");
	} else if (!strncmp(host, "tcp://", 6)) {
		const char *hp = host + 6;
		size_t n = strcspn(hp, "/");

		if (n == 0 || hp[n] != '\0')
			return sbx_fail(-SBX_ECONFIG, "docker: host '%s': expected tcp://host:port", host);
		if (asprintf(&e->base_url, "http://%s", hp) < 0)
			e->base_url = NULL;
	} else {
		return sbx_fail(-SBX_ECONFIG, "docker: host '%s': only unix:// and tcp:// engines "
		                "are supported", host);
	}
	if (!e->base_url || (!strncmp(host, "unix://", 7) && !e->unix_socket))
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	return 0;
}

/* "1.41" → 41; -1 when it is not "1.<number>". */
static int api_minor(const char *v)
{
	char *end;
	long minor;

	if (strncmp(v, "1.", 2) != 0)
		return -1;
	minor = strtol(v + 2, &end, 10);
	return *end || minor < 0 || minor > 1000 ? -1 : (int)minor;
}

static int negotiate_version(struct docker_engine *e, long timeout_ms)
{
	sbx_json *answer = NULL;
	const sbx_json *v;
	long status;
	int minor, r;

	e->api[0] = '\0'; /* GET /version is answered unversioned */
	e->timeout_ms = timeout_ms;
	r = docker_call(e, "GET", "/version", NULL, "ask the engine its version", &status, &answer);
	e->timeout_ms = 0;
	if (r < 0)
		return r;
	v = sbx_json_get(answer, "ApiVersion");
	minor = v && v->type == SBX_JSON_STRING ? api_minor(v->str) : -1;
	sbx_json_free(answer);
	if (minor < 0)
		return sbx_fail(-SBX_EPROTO, "docker: the engine's /version has no usable ApiVersion");
	if (minor < API_MIN_MINOR)
		return sbx_fail(-SBX_EBACKEND, "docker: the engine speaks API 1.%d; 1.%d or newer is "
		                "needed (Docker 17.06+)", minor, API_MIN_MINOR);
	snprintf(e->api, sizeof e->api, "/v1.%d", minor < API_MAX_MINOR ? minor : API_MAX_MINOR);
	return 0;
}

int docker_engine_connect(struct docker_engine *e, const char *host, long timeout_ms)
{
	const char *env = getenv("DOCKER_HOST");
	int r;

	*e = (struct docker_engine){ 0 };
	if (!host)
		host = env && *env ? env : "unix://" DEFAULT_SOCKET;
	if ((r = parse_host(e, host)) < 0)
		return r;
	return negotiate_version(e, timeout_ms);
}

void docker_engine_free(struct docker_engine *e)
{
	free(e->unix_socket);
	free(e->base_url);
	*e = (struct docker_engine){ 0 };
}

void docker_url_escape(sbx_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~')
			sbx_buf_append(b, s, 1);
		else
			sbx_buf_printf(b, "%%%c%c", hex[c >> 4], hex[c & 15]);
	}
}

/* The engine explains failures as {"message": "..."}. */
static int engine_error(const char *what, long status, const sbx_buf *body)
{
	sbx_json *j = NULL;
	const sbx_json *m;
	char err[64];
	int code = status == 404 ? -SBX_ENOENT : status == 409 ? -SBX_EEXIST : -SBX_EBACKEND, r;

	if (body->data && sbx_json_parse(body->data, body->len, &j, err, sizeof err) == 0 &&
	    (m = sbx_json_get(j, "message")) && m->type == SBX_JSON_STRING) {
		r = sbx_fail(code, "docker: %s: %s (HTTP %ld)", what, m->str, status);
		sbx_json_free(j);
		return r;
	}
	sbx_json_free(j);
	return sbx_fail(code, "docker: %s: HTTP %ld", what, status);
}

/* A failed exchange with the engine, as one sentence: a missing or unreachable socket said
 * plainly ("cannot reach /var/run/docker.sock: No such file or directory"), else what the
 * HTTP client said, without its own "docker: " prefix. */
static int transport_error(const struct docker_engine *e, int code, const char *what)
{
	const char *msg = sbx_last_error();
	char err[300];
	struct stat st;

	if (e->unix_socket && stat(e->unix_socket, &st) < 0)
		return sbx_fail(-SBX_EBACKEND, "docker: cannot reach %s: %s", e->unix_socket,
		                strerror(errno));
	if (!strncmp(msg, DOCKER_WHO ": ", strlen(DOCKER_WHO ": ")))
		msg += strlen(DOCKER_WHO ": ");
	snprintf(err, sizeof err, "%s", msg);
	return sbx_fail(code == -SBX_ENOENT || code == -SBX_EIO ? -SBX_EBACKEND : code,
	                "docker: %s: %s", what, err);
}

static void request_for(const struct docker_engine *e, struct sbx_http_request *req,
                        const char *url, const sbx_buf *body, const char *const *headers)
{
	*req = (struct sbx_http_request){
		.method = NULL, .url = url, .unix_socket = e->unix_socket, .headers = headers,
		.body = body ? (body->data ? body->data : "") : NULL, .body_len = body ? body->len : 0,
		.timeout_ms = e->timeout_ms > 0 ? e->timeout_ms : CALL_TIMEOUT_MS,
		.connect_timeout_ms = e->timeout_ms > 0 ? e->timeout_ms : 0,
		.max_body = MAX_ANSWER_BYTES, .who = DOCKER_WHO,
	};
}

int docker_call(const struct docker_engine *e, const char *method, const char *path,
                const sbx_buf *body, const char *what, long *status, sbx_json **out)
{
	static const char *const json_headers[] = { "Content-Type: application/json", NULL };
	struct sbx_http_request req;
	struct sbx_http_response resp;
	char *url = NULL, err[160];
	int r;

	if (out)
		*out = NULL;
	if (asprintf(&url, "%s%s%s", e->base_url, e->api, path) < 0)
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	request_for(e, &req, url, body, body ? json_headers : NULL);
	req.method = method;
	r = sbx_http_request_do(&req, &resp);
	*status = resp.status;
	if (r < 0) {
		r = transport_error(e, r, what);
	} else if (resp.status >= 400) {
		r = engine_error(what, resp.status, &resp.body);
	} else if (out && resp.body.len &&
	           sbx_json_parse(resp.body.data, resp.body.len, out, err, sizeof err) < 0) {
		r = sbx_fail(-SBX_EPROTO, "docker: %s: the engine's answer is not JSON: %s", what, err);
	}
	sbx_http_response_free(&resp);
	free(url);
	return r;
}

int docker_call_upgrade(const struct docker_engine *e, const char *path, const sbx_buf *body,
                        const char *what, int *fd, sbx_buf *early)
{
	static const char *const headers[] = { "Content-Type: application/json",
	                                       "Connection: Upgrade", "Upgrade: tcp", NULL };
	struct sbx_http_request req;
	char *url = NULL;
	long status;
	int r;

	if (asprintf(&url, "%s%s%s", e->base_url, e->api, path) < 0)
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	request_for(e, &req, url, body, headers);
	req.method = "POST";
	req.timeout_ms = 30000;
	r = sbx_http_upgrade(&req, fd, &status, early);
	free(url);
	if (r < 0) {
		return transport_error(e, r, what);
	}
	if (status != 101 && (status < 200 || status > 299)) {
		close(*fd);
		*fd = -1;
		r = engine_error(what, status, early);
		early->len = 0;
		return r;
	}
	return 0;
}

int docker_call_raw(const struct docker_engine *e, const struct docker_raw_call *c,
                    struct sbx_http_response *resp)
{
	static const char *const tar_headers[] = { "Content-Type: application/x-tar", NULL };
	struct sbx_http_request req;
	char *url = NULL;
	int r;

	*resp = (struct sbx_http_response){ 0 };
	if (asprintf(&url, "%s%s%s", e->base_url, e->api, c->path) < 0)
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	request_for(e, &req, url, c->body, c->body ? tar_headers : NULL);
	req.method = c->method;
	if (c->max_body)
		req.max_body = c->max_body;
	r = sbx_http_request_do(&req, resp);
	free(url);
	if (r == -SBX_EFBIG)
		return r;
	if (r < 0)
		return transport_error(e, r, c->what);
	if (resp->status >= 400 && !c->keep_errors)
		return engine_error(c->what, resp->status, &resp->body);
	return 0;
}

/* ---- answers that are a stream of JSON lines (image pulls) ------------------------------- */

/* Hands every complete line to fn; lines that are not JSON objects, or too long, say nothing
 * we act on (the status decides). */
static int dispatch(struct docker_lines *dl)
{
	char *line;
	size_t len;
	int kind;

	while (!dl->stopped && (kind = sbx_linebuf_next(&dl->lines, &line, &len)) != SBX_LINE_NONE) {
		sbx_json *v = NULL;
		char err[64];

		if (kind != SBX_LINE_OK || len == 0 ||
		    sbx_json_parse(line, len, &v, err, sizeof err) < 0)
			continue;
		if (v->type == SBX_JSON_OBJECT)
			dl->stopped = dl->fn(dl->arg, v);
		sbx_json_free(v);
	}
	return dl->stopped;
}

void docker_lines_init(struct docker_lines *dl, docker_line_fn fn, void *arg)
{
	*dl = (struct docker_lines){ .fn = fn, .arg = arg, .lines = { .max = DOCKER_LINE_MAX } };
}

int docker_lines_feed(struct docker_lines *dl, const char *data, size_t len)
{
	if (dl->stopped)
		return dl->stopped;
	if (sbx_linebuf_feed(&dl->lines, data, len) < 0)
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	return dispatch(dl);
}

int docker_lines_finish(struct docker_lines *dl)
{
	return docker_lines_feed(dl, "\n", 1);   /* the last line may lack its newline */
}

void docker_lines_free(struct docker_lines *dl)
{
	sbx_linebuf_free(&dl->lines);
}

struct line_reader {
	struct docker_lines lines;
	sbx_buf start;                /* the answer's first bytes: an error answer's message */
};

static int on_stream_body(void *arg, const char *data, size_t len)
{
	struct line_reader *lr = arg;

	if (lr->start.len < 4096)
		sbx_buf_append(&lr->start, data, len < 4096 - lr->start.len ? len : 4096 - lr->start.len);
	return docker_lines_feed(&lr->lines, data, len);
}

int docker_call_lines(const struct docker_engine *e, const char *method, const char *path,
                      const char *what, long timeout_ms, docker_line_fn fn, void *arg)
{
	struct line_reader lr = { 0 };
	struct sbx_http_request req;
	struct sbx_http_response resp;
	char *url = NULL;
	int r;

	if (asprintf(&url, "%s%s%s", e->base_url, e->api, path) < 0)
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	docker_lines_init(&lr.lines, fn, arg);
	request_for(e, &req, url, NULL, NULL);
	req.method = method;
	req.timeout_ms = timeout_ms;
	req.max_body = (size_t)1 << 40; /* progress lines of a big image; nothing is kept */
	req.on_body = on_stream_body;
	req.on_body_arg = &lr;
	r = sbx_http_request_do(&req, &resp);
	if (r == 0 && resp.status < 400)
		r = docker_lines_finish(&lr.lines);
	if (resp.status >= 400)
		r = engine_error(what, resp.status, &lr.start);
	else if (lr.lines.stopped)
		r = lr.lines.stopped;   /* fn's verdict, with its message */
	else if (r < 0)
		r = transport_error(e, r, what);
	docker_lines_free(&lr.lines);
	sbx_buf_free(&lr.start);
	sbx_http_response_free(&resp);
	free(url);
	return r;
}

int docker_inspect_container(const struct docker_engine *e, const char *id, long *status,
                             sbx_json **info)
{
	sbx_buf path = { 0 };
	int r;

	*info = NULL;
	sbx_buf_puts(&path, "/containers/");
	docker_url_escape(&path, id);
	sbx_buf_puts(&path, "/json");
	r = path.oom ? sbx_fail(-SBX_ENOMEM, "docker: out of memory")
	             : docker_call(e, "GET", path.data, NULL, "inspect the container", status, info);
	sbx_buf_free(&path);
	return r;
}

bool docker_name_ok(const char *s, size_t len, size_t min, size_t max)
{
	if (len < min || len > max || strlen(s) != len)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');

		if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-')))
			return false;
	}
	return true;
}
