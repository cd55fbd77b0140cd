/* See client.h. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "mcp/client.h"
#include "proto/mcp_proto.h"
#include "util/buf.h"
#include "util/error.h"

#define MAX_PAGES 1000

const char *const sbx_mcp_protocol_versions[] = { "2025-06-18", "2025-03-26", "2024-11-05", NULL };

/* ---- the socket transport: MCP's stdio framing on a connection to the gateway ---- */

static int fd_send(sbx_mcp_client *c, const char *line, size_t len);
static int fd_recv(sbx_mcp_client *c, int64_t deadline, char **line, size_t *len);

static void fd_close(sbx_mcp_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	sbx_linebuf_free(&c->in);
}

static const sbx_mcp_transport fd_transport = { fd_send, fd_recv, fd_close };

void sbx_mcp_client_init(sbx_mcp_client *c, int fd, const char *name, int timeout_ms)
{
	*c = (sbx_mcp_client){ .tp = &fd_transport, .fd = fd, .name = name,
	                       .timeout_ms = timeout_ms, .next_id = 1,
	                       .in = { .max = SBX_MCP_LINE_MAX } };
}

void sbx_mcp_client_init_transport(sbx_mcp_client *c, const sbx_mcp_transport *tp, void *data,
                                   const char *name, int timeout_ms)
{
	*c = (sbx_mcp_client){ .tp = tp, .tp_data = data, .fd = -1, .name = name,
	                       .timeout_ms = timeout_ms, .next_id = 1,
	                       .in = { .max = SBX_MCP_LINE_MAX } };
}

void sbx_mcp_client_close(sbx_mcp_client *c)
{
	if (c->tp)
		c->tp->close(c);
	c->tp = NULL;
	c->tp_data = NULL;
}

static int lost(sbx_mcp_client *c, const char *what)
{
	c->broken = true;
	return sbx_fail(-SBX_EIO, "MCP server '%s': the connection to the gateway was lost (%s)",
	                c->name, what);
}

int sbx_mcp_client_send_line(sbx_mcp_client *c, const char *line, size_t len)
{
	if (!c->tp)
		return lost(c, "closed earlier");
	return c->tp->send(c, line, len);
}

static int fd_send(sbx_mcp_client *c, const char *line, size_t len)
{
	struct iovec iov[2] = { { (void *)line, len }, { (void *)(uintptr_t)"\n", 1 } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };

	if (c->broken)
		return lost(c, "closed earlier");
	while (iov[1].iov_len) {
		ssize_t n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return lost(c, strerror(errno));
		while (n > 0 && msg.msg_iovlen) {
			size_t step = (size_t)n < msg.msg_iov->iov_len ? (size_t)n : msg.msg_iov->iov_len;

			msg.msg_iov->iov_base = (char *)msg.msg_iov->iov_base + step;
			msg.msg_iov->iov_len -= step;
			n -= (ssize_t)step;
			if (!msg.msg_iov->iov_len) {
				msg.msg_iov++;
				msg.msg_iovlen--;
			}
		}
		if (!msg.msg_iovlen)
			break;
	}
	return 0;
}

/* Waits for and returns the next line (in the buffer, valid until the next read). */
static int fd_recv(sbx_mcp_client *c, int64_t deadline, char **line, size_t *len)
{
	for (;;) {
		char buf[65536];
		int r = sbx_linebuf_next(&c->in, line, len), wait;
		ssize_t n;

		if (r == SBX_LINE_OK)
			return 0;
		if (r == SBX_LINE_DROPPED) {
			snprintf(c->diag, sizeof c->diag, "the gateway sent a line over 32 MiB");
			continue;
		}
		if (c->broken)
			return lost(c, "closed earlier");
		wait = (int)(deadline - sbx_now_ms());
		if (wait <= 0)
			return -SBX_ETIMEDOUT;
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		if ((r = poll(&p, 1, wait)) < 0 && errno != EINTR)
			return lost(c, strerror(errno));
		if (r <= 0)
			continue;
		n = read(c->fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return lost(c, n == 0 ? "it closed the connection" : strerror(errno));
		if (sbx_linebuf_feed(&c->in, buf, (size_t)n) < 0)
			return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
}

static int next_line(sbx_mcp_client *c, int64_t deadline, char **line, size_t *len)
{
	if (!c->tp)
		return lost(c, "closed earlier");
	return c->tp->recv(c, deadline, line, len);
}

int sbx_mcp_client_read_line(sbx_mcp_client *c, int timeout_ms, char **out)
{
	char *line;
	size_t len;
	int r = next_line(c, sbx_now_ms() + timeout_ms, &line, &len);

	if (r == -SBX_ETIMEDOUT)
		return sbx_fail(r, "MCP server '%s': the gateway did not answer within %d ms", c->name,
		                timeout_ms);
	if (r < 0)
		return r;
	if (!(*out = strdup(line)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	return 0;
}

static bool is_string(const sbx_json *v, const char *s)
{
	return v && v->type == SBX_JSON_STRING && strcmp(v->str, s) == 0;
}

static void answer_server_request(sbx_mcp_client *c, const sbx_json *method, const sbx_json *id)
{
	sbx_buf b = { 0 };

	sbx_buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
	sbx_json_write(&b, id);
	sbx_buf_puts(&b, is_string(method, "ping") ? ",\"result\":{}}"
	             : ",\"error\":{\"code\":-32601,\"message\":\"method not supported\"}}");
	if (!b.oom)
		sbx_mcp_client_send_line(c, b.data, b.len);
	sbx_buf_free(&b);
}

/* Returns true for progress on request id: the request is alive, its timeout starts again. */
static bool handle_notification(sbx_mcp_client *c, const sbx_json *method, const sbx_json *msg,
                                int64_t id)
{
	const sbx_json *params = sbx_json_get(msg, "params");
	const sbx_json *text = sbx_json_get(params, "text"), *token;

	if (is_string(method, "notifications/progress")) {
		token = sbx_json_get(params, "progressToken");
		c->progress_seen++;
		return token && token->type == SBX_JSON_INT && token->i == id;
	}
	if (is_string(method, "notifications/tools/list_changed"))
		c->tools_changed = true;
	else if (is_string(method, SBX_MCP_DIAG_METHOD) && text && text->type == SBX_JSON_STRING)
		snprintf(c->diag, sizeof c->diag, "%s", text->str);
	/* logging and resource notifications carry nothing this client keeps */
	return false;
}

static int error_response(sbx_mcp_client *c, const char *method, const sbx_json *err)
{
	const sbx_json *code = sbx_json_get(err, "code"), *msg = sbx_json_get(err, "message");
	int64_t n = code && code->type == SBX_JSON_INT ? code->i : 0;
	const char *text = msg && msg->type == SBX_JSON_STRING ? msg->str : "(no message)";

	if (n == SBX_MCP_ERR_SERVER_GONE)
		return sbx_fail(-SBX_EIO, "MCP server '%s': %s: %s", c->name, method, text);
	return sbx_fail(-SBX_EPROTO, "MCP server '%s': %s failed: %s (JSON-RPC error %lld)",
	                c->name, method, text, (long long)n);
}

static void cancel(sbx_mcp_client *c, int64_t id)
{
	char line[200];
	int n = snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
	                 "cancelled\",\"params\":{\"requestId\":%lld,\"reason\":\"timeout\"}}",
	                 (long long)id);

	sbx_mcp_client_send_line(c, line, (size_t)n);
}

/* Reads until the response to id, handling everything else that arrives meanwhile. */
static int await_response(sbx_mcp_client *c, const char *method, int64_t id, sbx_json **result)
{
	int64_t deadline = sbx_now_ms() + c->timeout_ms;
	int64_t hard_deadline = sbx_now_ms() + SBX_MCP_CALL_MAX_MS;

	for (;;) {
		char perr[128], *line;
		size_t len;
		sbx_json *msg = NULL;
		const sbx_json *m, *idv;
		int r = next_line(c, deadline, &line, &len);

		if (r == -SBX_ETIMEDOUT) {
			cancel(c, id);
			return sbx_fail(r, "MCP server '%s' did not answer %s within %d ms%s%s", c->name,
			                method, c->timeout_ms, c->diag[0] ? "; " : "", c->diag);
		}
		if (r < 0)
			return r;
		if (sbx_json_parse(line, len, &msg, perr, sizeof perr) < 0 ||
		    msg->type != SBX_JSON_OBJECT) {
			snprintf(c->diag, sizeof c->diag, "the gateway sent a line that is not JSON-RPC");
			sbx_json_free(msg);
			continue;
		}
		m = sbx_json_get(msg, "method");
		idv = sbx_json_get(msg, "id");
		if (m && idv)
			answer_server_request(c, m, idv);
		else if (m && handle_notification(c, m, msg, id))
			deadline = sbx_now_ms() + c->timeout_ms < hard_deadline
			           ? sbx_now_ms() + c->timeout_ms : hard_deadline;
		else if (idv && idv->type == SBX_JSON_INT && idv->i == id) {
			const sbx_json *err = sbx_json_get(msg, "error");

			r = err ? error_response(c, method, err) : 0;
			if (r == 0) {
				sbx_json *res = NULL;
				sbx_buf b = { 0 };

				/* Detach "result" by round trip: the tree has no unlink operation. */
				sbx_json_write(&b, sbx_json_get(msg, "result"));
				r = b.oom ? sbx_fail(-SBX_ENOMEM, "out of memory")
				          : sbx_json_parse(b.data, b.len, &res, perr, sizeof perr);
				sbx_buf_free(&b);
				if (r == 0 && !sbx_json_get(msg, "result"))
					r = sbx_fail(-SBX_EPROTO, "MCP server '%s': %s: a response with neither "
					             "result nor error", c->name, method);
				if (r == 0)
					*result = res;
				else
					sbx_json_free(res);
			}
			sbx_json_free(msg);
			return r;
		}
		sbx_json_free(msg);   /* a late answer to a cancelled request, or noise */
	}
}

int sbx_mcp_client_request(sbx_mcp_client *c, const char *method, const char *params_json,
                           sbx_json **result)
{
	int64_t id = c->next_id++;
	sbx_buf b = { 0 };
	int r;

	*result = NULL;
	sbx_buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":", (long long)id);
	sbx_buf_json_string(&b, method, strlen(method));
	if (params_json)
		sbx_buf_printf(&b, ",\"params\":%s", params_json);
	sbx_buf_puts(&b, "}");
	r = b.oom ? sbx_fail(-SBX_ENOMEM, "out of memory") : sbx_mcp_client_send_line(c, b.data, b.len);
	sbx_buf_free(&b);
	return r < 0 ? r : await_response(c, method, id, result);
}

static bool version_supported(const char *v)
{
	for (size_t i = 0; sbx_mcp_protocol_versions[i]; i++)
		if (strcmp(v, sbx_mcp_protocol_versions[i]) == 0)
			return true;
	return false;
}

int sbx_mcp_client_initialize(sbx_mcp_client *c)
{
	static const char initialized[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
	char params[256];
	const sbx_json *v;
	sbx_json *res = NULL;
	int r;

	snprintf(params, sizeof params, "{\"protocolVersion\":\"%s\",\"capabilities\":{},"
	         "\"clientInfo\":{\"name\":\"libagentsbx\",\"version\":\"%s\"}}",
	         sbx_mcp_protocol_versions[0], sbx_version());
	if ((r = sbx_mcp_client_request(c, "initialize", params, &res)) < 0)
		return r;
	v = sbx_json_get(res, "protocolVersion");
	/* The server answers with our version or one it prefers; we must speak it, or stop. */
	if (!v || v->type != SBX_JSON_STRING || !version_supported(v->str)) {
		r = sbx_fail(-SBX_EPROTO, "MCP server '%s' speaks protocol version %s, which this "
		             "client does not (it speaks %s, %s and %s)", c->name,
		             v && v->type == SBX_JSON_STRING ? v->str : "(none)",
		             sbx_mcp_protocol_versions[0], sbx_mcp_protocol_versions[1],
		             sbx_mcp_protocol_versions[2]);
		sbx_json_free(res);
		return r;
	}
	snprintf(c->protocol, sizeof c->protocol, "%s", v->str);
	sbx_json_free(res);
	return sbx_mcp_client_send_line(c, initialized, sizeof initialized - 1);
}

static int append_page(sbx_mcp_client *c, const sbx_json *res, sbx_buf *out, size_t *count)
{
	const sbx_json *tools = sbx_json_get(res, "tools");

	if (!tools || tools->type != SBX_JSON_ARRAY)
		return sbx_fail(-SBX_EPROTO, "MCP server '%s': tools/list: no \"tools\" array", c->name);
	for (size_t i = 0; i < tools->n; i++) {
		sbx_buf_puts(out, (*count)++ ? "," : "");
		sbx_json_write(out, tools->items[i]);
	}
	return 0;
}

int sbx_mcp_client_list_tools(sbx_mcp_client *c, char **tools_json)
{
	sbx_buf out = { 0 };
	char *cursor = NULL;
	size_t count = 0;
	int r = 0;

	c->tools_changed = false;
	sbx_buf_puts(&out, "[");
	for (int page = 0; r == 0; page++) {
		sbx_buf params = { 0 };
		sbx_json *res = NULL;
		const sbx_json *next;

		if (page == MAX_PAGES) {
			r = sbx_fail(-SBX_EPROTO, "MCP server '%s': tools/list has more than %d pages",
			             c->name, MAX_PAGES);
			break;
		}
		if (cursor) {
			sbx_buf_puts(&params, "{\"cursor\":");
			sbx_buf_json_string(&params, cursor, strlen(cursor));
			sbx_buf_puts(&params, "}");
		}
		r = sbx_mcp_client_request(c, "tools/list", cursor ? params.data : "{}", &res);
		sbx_buf_free(&params);
		if (r == 0)
			r = append_page(c, res, &out, &count);
		free(cursor);
		cursor = NULL;
		next = sbx_json_get(res, "nextCursor");
		if (r == 0 && next && next->type == SBX_JSON_STRING && next->len &&
		    !(cursor = strdup(next->str)))
			r = sbx_fail(-SBX_ENOMEM, "out of memory");
		sbx_json_free(res);
		if (!cursor)
			break;
	}
	free(cursor);
	sbx_buf_puts(&out, "]");
	if (r == 0 && out.oom)
		r = sbx_fail(-SBX_ENOMEM, "out of memory");
	if (r == 0)
		*tools_json = sbx_buf_steal(&out, NULL);
	sbx_buf_free(&out);
	return r;
}

int sbx_mcp_client_call_tool(sbx_mcp_client *c, const char *tool, const char *args_json,
                             char **result_json)
{
	sbx_buf params = { 0 }, out = { 0 };
	sbx_json *res = NULL;
	int r;

	/* The progress token is the request's id (the next one): a server that reports progress
	 * keeps a long call from timing out. */
	sbx_buf_puts(&params, "{\"name\":");
	sbx_buf_json_string(&params, tool, strlen(tool));
	sbx_buf_printf(&params, ",\"arguments\":%s,\"_meta\":{\"progressToken\":%lld}}",
	               args_json && *args_json ? args_json : "{}", (long long)c->next_id);
	r = params.oom ? sbx_fail(-SBX_ENOMEM, "out of memory")
	               : sbx_mcp_client_request(c, "tools/call", params.data, &res);
	sbx_buf_free(&params);
	if (r < 0)
		return r;
	sbx_json_write(&out, res);
	sbx_json_free(res);
	if (out.oom) {
		sbx_buf_free(&out);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	*result_json = sbx_buf_steal(&out, NULL);
	return 0;
}
