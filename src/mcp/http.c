/* MCP's Streamable HTTP transport, for remote servers ({"type": "http", "url", "headers"}).
 *
 * The host itself connects (through util/http.c, the library's one libcurl client), so the
 * connection is the workspace's to allow: before the first request, and again whenever the
 * workspace's network policy has changed, sbx_network_host_connect() decides and audits, and
 * the address it checked is pinned so curl connects to exactly that one.
 *
 * Every message the client sends is one POST (Accept: application/json, text/event-stream).
 * The answer is a JSON body, an SSE stream of messages (notifications and requests of the
 * server, then the response), or 202 for notifications and responses. What arrives is queued
 * and handed to the client one message at a time (recv), so the client handles it exactly as
 * it handles the gateway's lines. The server's Mcp-Session-Id from initialize goes on every
 * later request, with MCP-Protocol-Version once negotiated; a 404 to a request of a session
 * means the server forgot it: the client initializes again, once, and repeats the request.
 * Closing ends the session with DELETE. No GET stream is opened: this client declares no
 * capabilities that need server-initiated requests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mcp/client.h"
#include "mcp/mcp.h"
#include "proto/mcp_proto.h"
#include "mcp/sse.h"
#include "network.h"
#include "util/error.h"
#include "util/http.h"

#define STREAM_MAX ((size_t)64 << 20)   /* one POST's response, all its events together */
#define ERROR_BODY_MAX 4096             /* kept of an error response, for the message */
#define SESSION_ID_MAX 256
#define DELETE_TIMEOUT_MS 3000

struct http_conn {
	sbx_workspace *ws;
	char who[96];                /* "MCP server 'x'" */
	char *url;
	char host[SBX_MCP_URL_MAX];
	unsigned port;
	char **headers;              /* the declaration's, "Name: value" */
	size_t n_headers;
	bool decided;                /* the policy allowed it ... */
	char *policy_seen;           /* ... as it was then (mode + rules) */
	char pin[SBX_MCP_URL_MAX + 80];
	char session[SESSION_ID_MAX];
	int timeout_ms;              /* the client's, per request */
	bool reinitializing;
	char **inbox;                /* messages received, not yet taken */
	size_t in_head, in_n, in_cap;
	char *taken;                 /* the one recv returned last */
};

/* One POST's response as it arrives. */
struct post {
	struct http_conn *h;
	struct sbx_http_response *resp;
	const char *want_id;         /* the request's id (JSON text), or NULL */
	bool started, sse, failed_status, answered;   /* failed_status: not 2xx */
	sbx_buf body;                /* a JSON body, or an error body */
	sbx_sse events;              /* an SSE body */
	int error;                   /* set by the callback when it gives up */
	int64_t deadline;            /* moved on by progress on the request */
	int64_t hard_deadline;       /* never moved */
};

/* ---- the inbox ---- */

static int inbox_push(struct http_conn *h, const char *msg, size_t len)
{
	char *copy;

	if (h->in_head + h->in_n == h->in_cap) {
		if (h->in_head) {
			memmove(h->inbox, h->inbox + h->in_head, h->in_n * sizeof *h->inbox);
			h->in_head = 0;
		} else {
			size_t cap = h->in_cap ? h->in_cap * 2 : 16;
			char **grown = realloc(h->inbox, cap * sizeof *grown);

			if (!grown)
				return sbx_fail(-SBX_ENOMEM, "out of memory");
			h->inbox = grown;
			h->in_cap = cap;
		}
	}
	if (!(copy = strndup(msg, len)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	h->inbox[h->in_head + h->in_n++] = copy;
	return 0;
}

static void inbox_clear(struct http_conn *h)
{
	for (size_t i = 0; i < h->in_n; i++)
		free(h->inbox[h->in_head + i]);
	h->in_head = h->in_n = 0;
}

/* ---- reading a response ---- */

static bool json_text_is(const sbx_json *v, const char *text)
{
	sbx_buf b = { 0 };
	bool same;

	if (!v)
		return false;
	sbx_json_write(&b, v);
	same = !b.oom && b.len == strlen(text) && memcmp(b.data, text, b.len) == 0;
	sbx_buf_free(&b);
	return same;
}

static bool json_id_is(const sbx_json *msg, const char *want_id)
{
	return !sbx_json_get(msg, "method") && json_text_is(sbx_json_get(msg, "id"), want_id);
}

/* Progress on the request (the client makes a call's progressToken its id): as on the
 * gateway's transports, the request's timeout starts again, up to the hard limit. */
static void note_progress(struct post *p, const sbx_json *msg, int timeout_ms)
{
	const sbx_json *m = sbx_json_get(msg, "method");
	int64_t next;

	if (!p->want_id || !m || m->type != SBX_JSON_STRING ||
	    strcmp(m->str, "notifications/progress") != 0 ||
	    !json_text_is(sbx_json_get(sbx_json_get(msg, "params"), "progressToken"), p->want_id))
		return;
	next = sbx_now_ms() + timeout_ms;
	p->deadline = next < p->hard_deadline ? next : p->hard_deadline;
}

/* A message of the response (a JSON body's, or an SSE event's data): queued, and noted when
 * it is the answer the POST waits for. A JSON array is a batch of messages. */
static int take_message(struct post *p, const char *text, size_t len)
{
	char perr[128];
	sbx_json *msg = NULL;
	int r = 0;

	if (sbx_json_parse(text, len, &msg, perr, sizeof perr) < 0)
		return sbx_fail(-SBX_EPROTO, "%s: the server sent a message that is not JSON (%s)",
		                p->h->who, perr);
	if (msg->type == SBX_JSON_ARRAY) {
		for (size_t i = 0; r == 0 && i < msg->n; i++) {
			sbx_buf b = { 0 };

			sbx_json_write(&b, msg->items[i]);
			r = b.oom ? sbx_fail(-SBX_ENOMEM, "out of memory") : inbox_push(p->h, b.data, b.len);
			if (p->want_id && json_id_is(msg->items[i], p->want_id))
				p->answered = true;
			sbx_buf_free(&b);
		}
	} else {
		r = inbox_push(p->h, text, len);
		if (p->want_id && json_id_is(msg, p->want_id))
			p->answered = true;
		note_progress(p, msg, p->h->timeout_ms);
	}
	sbx_json_free(msg);
	return r;
}

/* An SSE event: MCP sends its messages as "message" events (the default); others, and
 * events without data, are not for us. */
static int on_event(void *arg, const char *event, const char *data, size_t len)
{
	return strcmp(event, "message") == 0 && len ? take_message(arg, data, len) : 0;
}

static long status_of(const struct sbx_http_response *resp)
{
	const char *sp = resp->headers.data ? memchr(resp->headers.data, ' ', resp->headers.len)
	                                    : NULL;

	return sp ? strtol(sp + 1, NULL, 10) : 0;
}

static void begin_body(struct post *p)
{
	char type[128] = "";
	long status = status_of(p->resp);

	p->started = true;
	p->failed_status = status < 200 || status > 299;
	sbx_http_response_header(p->resp, "Content-Type", type, sizeof type);
	p->sse = !p->failed_status && !strncasecmp(type, "text/event-stream", 17);
}

/* util/http's body callback. The SSE stream is read as it comes: once the answer to the
 * request is in, the transfer stops, whether or not the server closes the stream. */
static int on_body(void *arg, const char *data, size_t len)
{
	struct post *p = arg;
	int r;

	if (!p->started)
		begin_body(p);
	if (p->failed_status) {
		if (p->body.len < ERROR_BODY_MAX)
			sbx_buf_append(&p->body, data, len < ERROR_BODY_MAX ? len : ERROR_BODY_MAX);
		return 0;
	}
	if (!p->sse) {
		sbx_buf_append(&p->body, data, len);
		return p->body.oom ? sbx_fail(-SBX_ENOMEM, "out of memory") : 0;
	}
	if ((r = sbx_sse_feed(&p->events, data, len)) < 0) {
		p->error = r;
		return r;
	}
	return p->answered ? -SBX_ESTATE : 0;   /* -SBX_ESTATE: stop, all is here */
}

/* util/http's clock: the request's own deadline, which progress moves. */
static int on_tick(void *arg)
{
	struct post *p = arg;

	if (sbx_now_ms() < p->deadline)
		return 0;
	return -SBX_ETIMEDOUT;
}

/* ---- sending ---- */

/* Is the policy the one this connection was allowed under? A change decides again. */
static int check_policy(struct http_conn *h)
{
	sbx_workspace *ws = h->ws;
	char *now;
	int r;

	pthread_mutex_lock(&ws->network_lock);
	r = asprintf(&now, "%s %s", ws->network_mode,
	             ws->cfg->network_json ? ws->cfg->network_json : "");
	pthread_mutex_unlock(&ws->network_lock);
	if (r < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if (h->decided && h->policy_seen && !strcmp(now, h->policy_seen)) {
		free(now);
		return 0;
	}
	free(h->policy_seen);
	h->policy_seen = now;
	h->decided = false;
	if ((r = sbx_network_host_connect(ws, h->who, h->host, h->port, h->pin, sizeof h->pin)) < 0)
		return r;
	h->decided = true;
	return 0;
}

/* The request's headers: ours, then the declaration's. */
static const char **build_headers(sbx_mcp_client *c, struct http_conn *h, char *session_hdr,
                                  char *version_hdr)
{
	const char **v = calloc(h->n_headers + 5, sizeof *v);
	size_t n = 0;

	if (!v)
		return NULL;
	v[n++] = "Content-Type: application/json";
	v[n++] = "Accept: application/json, text/event-stream";
	if (h->session[0]) {
		sprintf(session_hdr, "Mcp-Session-Id: %s", h->session);
		v[n++] = session_hdr;
	}
	if (c->protocol[0]) {
		sprintf(version_hdr, "MCP-Protocol-Version: %s", c->protocol);
		v[n++] = version_hdr;
	}
	for (size_t i = 0; i < h->n_headers; i++)
		v[n++] = h->headers[i];
	return (const char **)v;
}

/* The message's id as JSON text when it is a request (it has a method and an id). */
static char *request_id_of(const char *msg, size_t len)
{
	char perr[64];
	sbx_json *doc = NULL;
	const sbx_json *id;
	char *out = NULL;

	if (sbx_json_parse(msg, len, &doc, perr, sizeof perr) == 0 && sbx_json_get(doc, "method") &&
	    (id = sbx_json_get(doc, "id"))) {
		sbx_buf b = { 0 };

		sbx_json_write(&b, id);
		out = sbx_buf_steal(&b, NULL);
	}
	sbx_json_free(doc);
	return out;
}

static bool session_id_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= SESSION_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e)
			return false;
	return true;
}

static int status_error(sbx_mcp_client *c, struct http_conn *h, long status, const sbx_buf *body)
{
	int code = status == 401 || status == 403 ? -SBX_EACCES
	           : status >= 500 ? -SBX_EIO : -SBX_EPROTO;
	size_t shown = body->len < 300 ? body->len : 300;

	(void)c;
	return sbx_fail(code, "%s: HTTP %ld from %s%s%.*s", h->who, status, h->url,
	                shown ? ": " : "", (int)shown, shown ? body->data : "");
}

/* What a failed transfer means for the client. */
static int transfer_error(sbx_mcp_client *c, struct http_conn *h, int r)
{
	if (r == -SBX_ETIMEDOUT)
		return sbx_fail(r, "%s did not answer within %d ms (%s)", h->who, c->timeout_ms, h->url);
	if (r == -SBX_EIO)
		c->broken = true;   /* connection refused, reset, cut off: connect anew next time */
	return r;
}

static int post_once(sbx_mcp_client *c, struct http_conn *h, const char *msg, size_t len,
                     const char *want_id, long *status)
{
	char session_hdr[SESSION_ID_MAX + 20], version_hdr[sizeof c->protocol + 32], sid[512];
	struct sbx_http_response resp = { 0 };
	int64_t now = sbx_now_ms();
	struct post p = { .h = h, .resp = &resp, .want_id = want_id,
	                  .deadline = now + c->timeout_ms, .hard_deadline = now + SBX_MCP_CALL_MAX_MS };
	const char **headers = build_headers(c, h, session_hdr, version_hdr);
	struct sbx_http_request req = {
		.method = "POST", .url = h->url, .headers = headers, .body = msg, .body_len = len,
		.timeout_ms = SBX_MCP_CALL_MAX_MS, .max_body = STREAM_MAX, .on_body = on_body,
		.on_body_arg = &p, .who = h->who, .resolve = h->pin[0] ? h->pin : NULL,
		.on_tick = on_tick, .on_tick_arg = &p,
	};
	int r;

	if (!headers)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	sbx_sse_init(&p.events, STREAM_MAX, on_event, &p);
	r = sbx_http_request_do(&req, &resp);
	if (r == -SBX_ESTATE && p.answered)
		r = 0;   /* we stopped it: the answer is in */
	if (r < 0 && p.error)
		r = p.error;
	*status = resp.status;
	p.failed_status = resp.status < 200 || resp.status > 299;   /* also without a body */
	if (r == 0 && p.failed_status && !(resp.status == 404 && h->session[0]))
		r = status_error(c, h, resp.status, &p.body);
	if (r == 0 && !p.failed_status && !p.sse && p.body.len)
		r = take_message(&p, p.body.data, p.body.len);
	/* A stream that ended by itself may end in a line without its newline, or an event
	 * without its blank line; one we stopped holds only the start of what came next. */
	if (r == 0 && p.sse && !p.answered)
		r = sbx_sse_finish(&p.events);
	if (r == 0 && !p.failed_status &&
	    sbx_http_response_header(&resp, "Mcp-Session-Id", sid, sizeof sid)) {
		if (!session_id_ok(sid))
			r = sbx_fail(-SBX_EPROTO, "%s: the server's Mcp-Session-Id is not visible ASCII "
			             "of at most %d bytes", h->who, SESSION_ID_MAX - 1);
		else
			snprintf(h->session, sizeof h->session, "%s", sid);
	}
	sbx_http_response_free(&resp);
	sbx_buf_free(&p.body);
	sbx_sse_free(&p.events);
	free(headers);
	return r < 0 ? transfer_error(c, h, r) : 0;
}

static int http_send(sbx_mcp_client *c, const char *msg, size_t len)
{
	struct http_conn *h = c->tp_data;
	char *want_id = request_id_of(msg, len);
	long status = 0;
	int r = check_policy(h);

	if (r == 0)
		r = post_once(c, h, msg, len, want_id, &status);
	if (r == 0 && status == 404 && h->session[0]) {
		/* The server ended the session (restarted, expired): a new one, once. */
		h->session[0] = '\0';
		if (h->reinitializing) {
			r = sbx_fail(-SBX_EPROTO, "%s: HTTP 404 from %s for a new session", h->who,
			             h->url);
		} else {
			h->reinitializing = true;
			c->protocol[0] = '\0';
			inbox_clear(h);
			r = sbx_mcp_client_initialize(c);
			h->reinitializing = false;
			if (r == 0)
				r = post_once(c, h, msg, len, want_id, &status);
			if (r == 0 && status == 404)
				r = sbx_fail(-SBX_EPROTO, "%s: HTTP 404 from %s, in a new session too",
				             h->who, h->url);
		}
	}
	free(want_id);
	return r;
}

static int http_recv(sbx_mcp_client *c, int64_t deadline, char **msg, size_t *len)
{
	struct http_conn *h = c->tp_data;

	(void)deadline;   /* the POST that brought the messages had the timeout */
	free(h->taken);
	h->taken = NULL;
	if (!h->in_n)
		return sbx_fail(-SBX_EPROTO, "%s: the server's HTTP response ended without the "
		                "answer to the request", h->who);
	h->taken = h->inbox[h->in_head++];
	h->in_n--;
	*msg = h->taken;
	*len = strlen(h->taken);
	return 0;
}

/* Ends the session on the server (best effort: it may be gone). */
static void end_session(struct http_conn *h)
{
	char session_hdr[SESSION_ID_MAX + 20];
	const char *headers[] = { session_hdr, NULL };
	struct sbx_http_response resp;
	struct sbx_http_request req = {
		.method = "DELETE", .url = h->url, .headers = headers, .timeout_ms = DELETE_TIMEOUT_MS,
		.max_body = ERROR_BODY_MAX, .who = h->who, .resolve = h->pin[0] ? h->pin : NULL,
	};

	snprintf(session_hdr, sizeof session_hdr, "Mcp-Session-Id: %s", h->session);
	sbx_http_request_do(&req, &resp);
	sbx_http_response_free(&resp);
	sbx_error_clear();
}

static void http_close(sbx_mcp_client *c)
{
	struct http_conn *h = c->tp_data;

	if (!h)
		return;
	if (h->session[0] && h->decided)
		end_session(h);
	inbox_clear(h);
	free(h->inbox);
	free(h->taken);
	for (size_t i = 0; i < h->n_headers; i++)
		free(h->headers[i]);
	free(h->headers);
	free(h->policy_seen);
	free(h->url);
	free(h);
}

static const sbx_mcp_transport http_transport = { http_send, http_recv, http_close };

/* ---- opening ---- */

static int copy_headers(struct http_conn *h, const sbx_json *headers)
{
	if (!headers)
		return 0;
	if (!(h->headers = calloc(headers->n + 1, sizeof *h->headers)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	for (size_t i = 0; i < headers->n; i++) {
		if (asprintf(&h->headers[i], "%s: %s", headers->keys[i], headers->items[i]->str) < 0) {
			h->headers[i] = NULL;
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		}
		h->n_headers++;
	}
	return 0;
}

int sbx_mcp_http_open(sbx_workspace *ws, const sbx_json *config, const char *name,
                      int timeout_ms, sbx_mcp_client *c)
{
	struct http_conn *h = calloc(1, sizeof *h);
	const sbx_json *url = sbx_json_get(config, "url");
	char scheme[16], why[128];
	int r;

	if (!h)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	h->ws = ws;
	h->timeout_ms = timeout_ms;
	snprintf(h->who, sizeof h->who, "MCP server '%s'", name);
	sbx_mcp_client_init_transport(c, &http_transport, h, name, timeout_ms);
	/* The declaration was checked when added and when loaded; this cannot fail but on memory. */
	if (!(h->url = strdup(url->str)))
		r = sbx_fail(-SBX_ENOMEM, "out of memory");
	else if (sbx_http_url_split(h->url, scheme, sizeof scheme, h->host, sizeof h->host,
	                            &h->port, why, sizeof why) < 0)
		r = sbx_fail(-SBX_EINVAL, "%s: \"url\" %s", h->who, why);
	else
		r = copy_headers(h, sbx_json_get(config, "headers"));
	if (r == 0)
		r = check_policy(h);
	if (r < 0)
		sbx_mcp_client_close(c);
	return r;
}
