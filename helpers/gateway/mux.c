/* The stream transport (src/proto/mcp_proto.h): the host speaks to the gateway over the gateway's
 * own stdin and stdout instead of its socket, because on a remote backend the host cannot
 * reach a socket inside the workspace but always has the process stream of a command it
 * started. Frames "<channel> <line>" carry what would be one socket connection each, so every
 * channel is an ordinary gw_conn (fd -1) and conn.c and server.c do not know the difference. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway.h"
#include "mcp/frames.h"
#include "proto/mcp_proto.h"

static struct {
	bool active;
	int in_fd, out_fd;
	sbx_linebuf in;
	sbx_buf out;
	size_t out_off;
} mux = { .in_fd = -1, .out_fd = -1 };

void gw_mux_start(int in_fd, int out_fd)
{
	mux.active = true;
	mux.in.max = SBX_MCP_LINE_MAX + 16;   /* a longest line and its channel number */
	mux.in_fd = in_fd;
	mux.out_fd = out_fd;
	fcntl(in_fd, F_SETFL, fcntl(in_fd, F_GETFL) | O_NONBLOCK);
	fcntl(out_fd, F_SETFL, fcntl(out_fd, F_GETFL) | O_NONBLOCK);
}

bool gw_mux_active(void)
{
	return mux.active;
}

int gw_mux_in_fd(void)
{
	return mux.in_fd;
}

int gw_mux_out_fd(void)
{
	return mux.out_fd;
}

size_t gw_mux_backlog(void)
{
	return mux.out.len - mux.out_off;
}

bool gw_mux_want_input(void)
{
	for (struct gw_conn *c = gw_conns; c; c = c->next)
		if (c->mux && c->server &&
		    c->server->to_child.len - c->server->to_child_off > GW_QUEUE_MAX)
			return false;
	return true;
}

void gw_mux_send(uint32_t ch, const char *line, size_t len)
{
	sbx_buf_printf(&mux.out, line ? "%u " : "%u", ch);
	if (line)
		sbx_buf_append(&mux.out, line, len);
	sbx_buf_append(&mux.out, "\n", 1);
}

/* The host closed its end: nobody is left to use the servers, and a stream gateway is never
 * found again by another handle, so it stops them and ends (the sandbox's reaper or the
 * backend collects what remains). */
static void host_gone(void)
{
	gw_log("the host closed the stream; stopping %s servers", gw_servers ? "the" : "no");
	while (gw_servers)
		gw_server_remove(gw_servers);
	exit(0);
}

static struct gw_conn *channel(uint32_t ch, bool create)
{
	struct gw_conn *c;

	for (c = gw_conns; c; c = c->next)
		if (c->mux && c->ch == ch && !c->closing)
			return c;
	if (!create || !(c = calloc(1, sizeof *c)))
		return NULL;
	c->fd = -1;
	c->in.max = SBX_MCP_LINE_MAX;
	c->mux = true;
	c->ch = ch;
	c->next = gw_conns;
	gw_conns = c;
	return c;
}

/* "<channel> <line>" or "<channel>". Anything else cannot be answered on any channel: it
 * is logged and dropped. */
static void on_frame(const char *frame, size_t len)
{
	const char *line = NULL;
	size_t line_len = 0;
	uint32_t ch;
	struct gw_conn *c;
	int kind = sbx_mcp_frame_split(frame, len, &ch, &line, &line_len);

	if (kind < 0) {
		gw_log("stream: dropped a frame without a channel number (%.40s)", frame);
		return;
	}
	if (kind == 0) {
		if ((c = channel(ch, false)))
			c->closing = true;   /* as a socket closed by the host: nothing more to send */
		return;
	}
	if ((c = channel(ch, true)))
		gw_conn_on_line(c, line, line_len);
}

void gw_mux_on_input(void)
{
	char buf[65536], *line;
	ssize_t n = read(mux.in_fd, buf, sizeof buf);
	size_t len;
	int r;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0)
		host_gone();
	if (sbx_linebuf_feed(&mux.in, buf, (size_t)n) < 0) {
		gw_log("stream: out of memory");
		host_gone();
	}
	while ((r = sbx_linebuf_next(&mux.in, &line, &len)) != SBX_LINE_NONE) {
		if (r == SBX_LINE_DROPPED)
			gw_log("stream: dropped a frame longer than 32 MiB");
		else
			on_frame(line, len);
	}
}

void gw_mux_flush(void)
{
	while (mux.out_off < mux.out.len) {
		ssize_t n = write(mux.out_fd, mux.out.data + mux.out_off, mux.out.len - mux.out_off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0)
			host_gone();
		mux.out_off += (size_t)n;
	}
	sbx_buf_free(&mux.out);
	mux.out_off = 0;
}
