/* Host connections: the hello line that says what the connection is for, then MCP lines to
 * and from one server (see src/proto/mcp_proto.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway.h"

void gw_conn_send(struct gw_conn *c, const char *line, size_t len)
{
	if (c->mux) {
		gw_mux_send(c->ch, line, len);
		return;
	}
	sbx_buf_append(&c->out, line, len);
	sbx_buf_append(&c->out, "\n", 1);
}

void gw_conn_sendf(struct gw_conn *c, const char *fmt, ...)
{
	va_list ap;
	char *line = NULL;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n >= 0)
		gw_conn_send(c, line, (size_t)n);
	free(line);
}

static void reply_error(struct gw_conn *c, const char *msg)
{
	sbx_buf b = { 0 };

	sbx_buf_puts(&b, "{\"ok\":false,\"error\":");
	sbx_buf_json_string(&b, msg, strlen(msg));
	sbx_buf_puts(&b, "}");
	if (!b.oom)
		gw_conn_send(c, b.data, b.len);
	sbx_buf_free(&b);
	c->closing = true;
}

static const char *string_member(const sbx_json *obj, const char *key)
{
	const sbx_json *v = sbx_json_get(obj, key);

	return v && v->type == SBX_JSON_STRING && strlen(v->str) == v->len ? v->str : NULL;
}

static void attach(struct gw_conn *c, const char *key, const sbx_json *spec)
{
	struct gw_server *s = gw_server_get(key, true);
	sbx_buf text = { 0 };
	char err[512];
	int r;

	if (!s || !spec || spec->type != SBX_JSON_OBJECT) {
		reply_error(c, s ? "attach: \"server\" must be an object" : "out of memory");
		return;
	}
	sbx_json_write(&text, spec);
	r = text.oom ? -ENOMEM : gw_server_configure(s, text.data);
	sbx_buf_free(&text);
	/* In its restart backoff the attach still succeeds: the next request says why. */
	if (r == 0 && (r = gw_server_ensure(s, err, sizeof err)) == -EAGAIN)
		r = 0;
	if (r < 0) {
		reply_error(c, r == -ENOMEM ? "out of memory" : err);
		return;
	}
	if (s->conn && s->conn != c) {
		/* A newer host connection (a reattached host) takes the server over. */
		s->conn->server = NULL;
		s->conn->closing = true;
	}
	s->conn = c;
	c->server = s;
	gw_conn_sendf(c, "{\"ok\":true,\"pid\":%d,\"crashes\":%d,\"initialized\":%s}", (int)s->pid,
	              s->crashes, s->init_result ? "true" : "false");
}

static void handle_hello(struct gw_conn *c, const char *line, size_t len)
{
	char perr[128];
	sbx_json *hello = NULL;
	const char *op, *key;

	c->greeted = true;
	if (sbx_json_parse(line, len, &hello, perr, sizeof perr) < 0 ||
	    hello->type != SBX_JSON_OBJECT || !(op = string_member(hello, "op"))) {
		reply_error(c, "the first line must be a JSON object with \"op\"");
	} else if (strcmp(op, "ping") == 0) {
		gw_conn_sendf(c, "{\"ok\":true,\"pid\":%d}", (int)getpid());
		c->closing = true;
	} else if (!(key = string_member(hello, "key"))) {
		reply_error(c, "\"key\" is required");
	} else if (strcmp(op, "attach") == 0) {
		attach(c, key, sbx_json_get(hello, "server"));
	} else if (strcmp(op, "stop") == 0) {
		struct gw_server *s = gw_server_get(key, false);

		if (s)
			gw_server_remove(s);
		gw_conn_sendf(c, "{\"ok\":true,\"was_running\":%s}", s ? "true" : "false");
		c->closing = true;
	} else {
		reply_error(c, "unknown op (attach, stop, ping)");
	}
	sbx_json_free(hello);
}

void gw_conn_on_line(struct gw_conn *c, const char *line, size_t len)
{
	if (c->closing)
		return;
	if (!c->greeted)
		handle_hello(c, line, len);
	else if (c->server && len)
		gw_server_from_host(c->server, line, len);
}

size_t gw_conn_backlog(const struct gw_conn *c)
{
	return c->mux ? gw_mux_backlog() : c->out.len - c->out_off;
}

void gw_conn_on_input(struct gw_conn *c)
{
	char buf[65536], *line;
	ssize_t n = read(c->fd, buf, sizeof buf);
	size_t len;
	int r;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0 || sbx_linebuf_feed(&c->in, buf, (size_t)n) < 0) {
		c->closing = true;
		c->out.len = c->out_off = 0;   /* the host is gone: nothing to flush */
		return;
	}
	while (!c->closing && (r = sbx_linebuf_next(&c->in, &line, &len)) != SBX_LINE_NONE) {
		if (r == SBX_LINE_DROPPED)
			gw_send_error(c, "null", -32600, "the message is longer than 32 MiB");
		else
			gw_conn_on_line(c, line, len);
	}
}

void gw_conn_flush(struct gw_conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t n = write(c->fd, c->out.data + c->out_off, c->out.len - c->out_off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			c->closing = true;
			c->out_off = c->out.len;
			break;
		}
		c->out_off += (size_t)n;
	}
	sbx_buf_free(&c->out);
	c->out_off = 0;
}

void gw_conn_free(struct gw_conn *c)
{
	if (c->server && c->server->conn == c)
		c->server->conn = NULL;
	if (c->mux)
		gw_mux_send(c->ch, NULL, 0);   /* tells the host the channel is closed */
	else
		close(c->fd);
	sbx_linebuf_free(&c->in);
	sbx_buf_free(&c->out);
	free(c);
}
