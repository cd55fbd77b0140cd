/* The host's end of the stream transport (src/proto/mcp_proto.h): the gateway runs as an ordinary
 * workspace process started through the backend's spawn, and its stdin and stdout carry
 * frames "<channel> <line>", one channel per server connection. This is how the host reaches
 * a gateway it has no socket path to (remote backends), and it works on every backend.
 *
 * MCP calls on a handle run one at a time (sbx_mcp_state.lock), so whoever waits reads the
 * stream and files what it reads under its channel; lines for other channels (notifications
 * of idle servers) wait in their channel's queue, which is bounded. While a frame is written,
 * the stream is read too, so a gateway blocked on a full stdout cannot block the host. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp/client.h"
#include "mcp/frames.h"
#include "mcp/mcp.h"
#include "proto/mcp_proto.h"
#include "util/error.h"

#define START_TIMEOUT_MS 15000
#define STOP_WAIT_MS 2000
#define CHAN_QUEUE_MAX ((size_t)16 << 20)

struct chan {
	uint32_t id;
	struct sbx_mcp_mux *mux;
	sbx_buf q;                /* lines, each ending in "\n" */
	size_t q_off;
	bool closed;              /* the gateway closed it */
	bool overflowed;          /* lines were dropped: the queue was full */
	struct chan *next;
};

struct sbx_mcp_mux {
	int refs;                 /* the handle's, and one per open channel */
	sbx_workspace *ws;
	sbx_spawned proc;
	sbx_linebuf in;
	uint32_t next_id;
	struct chan *chans;
	bool ready;               /* past the "ready" line: what follows are frames */
	bool broken;
	char why[256];            /* what broke it */
};

static void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static void mux_break(sbx_mcp_mux *m, const char *why)
{
	if (!m->broken)
		snprintf(m->why, sizeof m->why, "%s", why);
	m->broken = true;
}

static struct chan *find_chan(sbx_mcp_mux *m, uint32_t id)
{
	for (struct chan *ch = m->chans; ch; ch = ch->next)
		if (ch->id == id)
			return ch;
	return NULL;
}

/* One frame from the gateway, filed under its channel. A channel the host closed already
 * gets nothing (its late lines are not wanted). */
static void file_frame(sbx_mcp_mux *m, const char *frame, size_t len)
{
	const char *line = NULL;
	size_t line_len = 0;
	uint32_t id;
	struct chan *ch;
	int kind = sbx_mcp_frame_split(frame, len, &id, &line, &line_len);

	if (kind < 0 || !(ch = find_chan(m, id)))
		return;
	if (kind == 0) {
		ch->closed = true;
		return;
	}
	if (ch->q.len - ch->q_off + len > CHAN_QUEUE_MAX) {
		ch->overflowed = true;
		return;
	}
	sbx_buf_append(&ch->q, line, line_len);
	sbx_buf_append(&ch->q, "\n", 1);
}

static void file_frames(sbx_mcp_mux *m)
{
	char *line;
	size_t len;
	int r;

	while ((r = sbx_linebuf_next(&m->in, &line, &len)) != SBX_LINE_NONE)
		if (r == SBX_LINE_OK)
			file_frame(m, line, len);
}

/* Reads what the gateway has written, waiting until deadline for the first bytes. */
static int pump(sbx_mcp_mux *m, int64_t deadline)
{
	struct pollfd p = { .fd = m->proc.out_fd, .events = POLLIN };
	char buf[65536];
	ssize_t n;
	int wait = (int)(deadline - sbx_now_ms()), r;

	if (m->broken)
		return -SBX_EIO;
	if (wait <= 0)
		return -SBX_ETIMEDOUT;
	if ((r = poll(&p, 1, wait)) < 0 && errno != EINTR) {
		mux_break(m, strerror(errno));
		return -SBX_EIO;
	}
	if (r <= 0)
		return 0;
	n = read(m->proc.out_fd, buf, sizeof buf);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		mux_break(m, n == 0 ? "the gateway process ended" : strerror(errno));
		return -SBX_EIO;
	}
	if (sbx_linebuf_feed(&m->in, buf, (size_t)n) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if (m->ready)
		file_frames(m);
	return 0;
}

/* Writes all of data to the gateway's stdin, reading its stdout meanwhile. */
static int write_all(sbx_mcp_mux *m, const char *data, size_t len, int64_t deadline)
{
	size_t off = 0;

	while (off < len) {
		struct pollfd p[2] = { { .fd = m->proc.in_fd, .events = POLLOUT },
		                       { .fd = m->proc.out_fd, .events = POLLIN } };
		int wait = (int)(deadline - sbx_now_ms());
		ssize_t n;

		if (m->broken)
			return -SBX_EIO;
		if (wait <= 0)
			return -SBX_ETIMEDOUT;
		if (poll(p, 2, wait) < 0 && errno != EINTR) {
			mux_break(m, strerror(errno));
			return -SBX_EIO;
		}
		if (p[1].revents && pump(m, sbx_now_ms() + 1) < 0 && m->broken)
			return -SBX_EIO;
		if (!p[0].revents)
			continue;
		n = sbx_pipe_write(m->proc.in_fd, data + off, len - off);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0) {
			mux_break(m, n < 0 ? strerror(errno) : "its stdin is closed");
			return -SBX_EIO;
		}
		off += (size_t)n;
	}
	return 0;
}

static int send_frame(sbx_mcp_mux *m, uint32_t id, const char *line, size_t len,
                      int64_t deadline)
{
	sbx_buf b = { 0 };
	int r;

	sbx_buf_printf(&b, line ? "%u " : "%u", id);
	if (line)
		sbx_buf_append(&b, line, len);
	sbx_buf_append(&b, "\n", 1);
	r = b.oom ? sbx_fail(-SBX_ENOMEM, "out of memory") : write_all(m, b.data, b.len, deadline);
	sbx_buf_free(&b);
	return r;
}

/* ---- the channel transport, for sbx_mcp_client ---- */

static int chan_lost(sbx_mcp_client *c, const char *what)
{
	c->broken = true;
	return sbx_fail(-SBX_EIO, "MCP server '%s': the stream to the gateway was lost (%s)",
	                c->name, what);
}

static int chan_send(sbx_mcp_client *c, const char *msg, size_t len)
{
	struct chan *ch = c->tp_data;
	int r;

	if (ch->closed)
		return chan_lost(c, "the gateway closed the connection");
	r = send_frame(ch->mux, ch->id, msg, len, sbx_now_ms() + c->timeout_ms);
	if (r == -SBX_ETIMEDOUT)
		return chan_lost(c, "the gateway did not read its input in time");
	return r < 0 && ch->mux->broken ? chan_lost(c, ch->mux->why) : r;
}

/* The next line of ch's queue, NUL-terminated in place, or NULL. */
static char *pop_line(struct chan *ch, size_t *len)
{
	char *start, *nl;

	if (ch->q_off && ch->q_off * 2 > ch->q.len) {
		/* compact: keeps the queue from growing with lines already taken */
		memmove(ch->q.data, ch->q.data + ch->q_off, ch->q.len - ch->q_off);
		ch->q.len -= ch->q_off;
		ch->q_off = 0;
	}
	if (ch->q_off == ch->q.len)
		return NULL;
	start = ch->q.data + ch->q_off;
	nl = memchr(start, '\n', ch->q.len - ch->q_off);
	*nl = '\0';
	*len = (size_t)(nl - start);
	ch->q_off += *len + 1;
	return start;
}

static int chan_recv(sbx_mcp_client *c, int64_t deadline, char **msg, size_t *len)
{
	struct chan *ch = c->tp_data;

	for (;;) {
		int r;

		if (ch->overflowed) {
			ch->overflowed = false;
			snprintf(c->diag, sizeof c->diag, "messages of this server were dropped while "
			         "nobody read them (more than 16 MiB waiting)");
		}
		if ((*msg = pop_line(ch, len)))
			return 0;
		if (ch->closed)
			return chan_lost(c, "the gateway closed the connection");
		if ((r = pump(ch->mux, deadline)) < 0)
			return ch->mux->broken ? chan_lost(c, ch->mux->why) : r;
	}
}

static void chan_close(sbx_mcp_client *c)
{
	struct chan *ch = c->tp_data;
	sbx_mcp_mux *m;

	if (!ch)
		return;
	m = ch->mux;
	if (!ch->closed && !m->broken)
		send_frame(m, ch->id, NULL, 0, sbx_now_ms() + 1000);   /* best effort */
	for (struct chan **at = &m->chans; *at; at = &(*at)->next)
		if (*at == ch) {
			*at = ch->next;
			break;
		}
	sbx_buf_free(&ch->q);
	free(ch);
	sbx_mcp_mux_release(m);
}

static const sbx_mcp_transport chan_transport = { chan_send, chan_recv, chan_close };

/* ---- the gateway process ---- */

static void stop_process(sbx_mcp_mux *m)
{
	sbx_workspace *ws = m->ws;
	int code, sig;

	/* Closing its stdin asks it to stop its servers and end; killing is the fallback. */
	if (m->proc.in_fd >= 0)
		close(m->proc.in_fd);
	if (m->proc.out_fd >= 0)
		close(m->proc.out_fd);
	if (m->proc.err_fd >= 0)
		close(m->proc.err_fd);
	m->proc.in_fd = m->proc.out_fd = m->proc.err_fd = -1;
	if (!m->proc.proc)
		return;
	if (ws->ops->proc_wait(m->proc.proc, STOP_WAIT_MS, &code, &sig) == -SBX_ETIMEDOUT)
		ws->ops->proc_kill(m->proc.proc);
	ws->ops->proc_release(m->proc.proc);
	m->proc.proc = NULL;
}

/* What the gateway said on stderr when it could not start (the backend's reason for a
 * command that cannot run, say). */
static void read_stderr(sbx_mcp_mux *m, char *out, size_t cap)
{
	size_t len = 0;
	int64_t deadline = sbx_now_ms() + 1000;

	out[0] = '\0';
	while (m->proc.err_fd >= 0 && len + 1 < cap) {
		struct pollfd p = { .fd = m->proc.err_fd, .events = POLLIN };
		int wait = (int)(deadline - sbx_now_ms());
		ssize_t n;

		if (wait <= 0 || poll(&p, 1, wait) <= 0)
			break;
		if ((n = read(m->proc.err_fd, out + len, cap - 1 - len)) <= 0)
			break;
		len += (size_t)n;
	}
	out[len] = '\0';
	out[strcspn(out, "\n")] = '\0';
}

/* The first line: "ready" or "error: ...". */
static int await_ready(sbx_mcp_mux *m, const char *exe)
{
	int64_t deadline = sbx_now_ms() + START_TIMEOUT_MS;
	char *line, err[512];
	size_t len;
	int r;

	for (;;) {
		r = sbx_linebuf_next(&m->in, &line, &len);
		if (r == SBX_LINE_OK)
			break;
		if (r == SBX_LINE_DROPPED)
			continue;
		if ((r = pump(m, deadline)) < 0) {
			read_stderr(m, err, sizeof err);
			return sbx_fail(-SBX_EIO, "mcp: the gateway (%s) did not start: %s", exe,
			                r == -SBX_ETIMEDOUT ? "no answer within 15 s"
			                : err[0] ? err : m->why);
		}
	}
	if (strcmp(line, "ready") != 0)
		return sbx_fail(-SBX_EIO, "mcp: the gateway (%s) did not start: %.300s", exe, line);
	m->ready = true;
	file_frames(m);
	return 0;
}

int sbx_mcp_mux_start(sbx_workspace *ws, const char *exe, const char *run_dir,
                      sbx_mcp_mux **out)
{
	const char *argv[] = { exe, SBX_MCP_STDIO_FLAG, run_dir ? run_dir : "-", NULL };
	sbx_mcp_mux *m = calloc(1, sizeof *m);
	int r;

	if (!m)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	m->refs = 1;
	m->ws = ws;
	m->in.max = SBX_MCP_LINE_MAX + 16;   /* a longest line and its channel number */
	m->next_id = 1;
	if ((r = sbx_spawn_command(ws, argv, NULL, NULL, 0, true, &m->proc)) < 0) {
		free(m);
		return r;
	}
	set_nonblock(m->proc.in_fd);
	set_nonblock(m->proc.out_fd);
	if ((r = await_ready(m, exe)) < 0) {
		sbx_mcp_mux_release(m);
		return r;
	}
	/* From now on it writes its diagnostics to its log, not to this pipe. */
	close(m->proc.err_fd);
	m->proc.err_fd = -1;
	*out = m;
	return 0;
}

bool sbx_mcp_mux_alive(const sbx_mcp_mux *m)
{
	return !m->broken;
}

void sbx_mcp_mux_release(sbx_mcp_mux *m)
{
	if (!m || --m->refs > 0)
		return;
	stop_process(m);
	sbx_linebuf_free(&m->in);
	free(m);
}

int sbx_mcp_mux_open(sbx_mcp_mux *m, const char *hello, int timeout_ms, const char *name,
                     int client_timeout_ms, sbx_mcp_client *c, char **reply)
{
	struct chan *ch = calloc(1, sizeof *ch);
	char *line;
	size_t len;
	int r;

	if (!ch)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	ch->id = m->next_id++;
	ch->mux = m;
	ch->next = m->chans;
	m->chans = ch;
	m->refs++;
	sbx_mcp_client_init_transport(c, &chan_transport, ch, name, client_timeout_ms);
	r = chan_send(c, hello, strlen(hello));
	if (r == 0) {
		r = chan_recv(c, sbx_now_ms() + timeout_ms, &line, &len);
		if (r == -SBX_ETIMEDOUT)
			r = sbx_fail(r, "mcp: the gateway did not answer within %d ms", timeout_ms);
	}
	if (r == 0 && !(*reply = strdup(line)))
		r = sbx_fail(-SBX_ENOMEM, "out of memory");
	if (r < 0)
		sbx_mcp_client_close(c);
	return r;
}
