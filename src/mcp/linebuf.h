/* Line framing for MCP's stdio transport, shared by the gateway and the host's client: bytes
 * go in as they arrive, complete lines come out. A line longer than the limit is dropped up to
 * its newline and reported once, so a peer that floods without newlines costs bounded memory. */
#ifndef SBX_MCP_LINEBUF_H
#define SBX_MCP_LINEBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sbx_linebuf {
	char *buf;
	size_t start;      /* first byte not yet returned */
	size_t len;        /* bytes held */
	size_t cap;
	size_t scanned;    /* bytes from start known to hold no newline */
	size_t max;        /* longest line kept (0 = SBX_MCP_LINE_MAX) */
	bool discarding;   /* inside an over-long line: drop up to its newline */
} sbx_linebuf;

enum { SBX_LINE_NONE = 0, SBX_LINE_OK = 1, SBX_LINE_DROPPED = 2 };

/* Appends bytes. Returns 0, or -1 when out of memory (the buffer stays consistent). */
int sbx_linebuf_feed(sbx_linebuf *lb, const char *data, size_t len);
/* The next complete line without its "\n" (and a "\r" before it): SBX_LINE_OK with *line
 * (NUL-terminated, valid until the next feed or next) and *len; SBX_LINE_DROPPED once for
 * an over-long line; SBX_LINE_NONE when no complete line is buffered. */
int sbx_linebuf_next(sbx_linebuf *lb, char **line, size_t *len);
void sbx_linebuf_free(sbx_linebuf *lb);

/* A frame of the gateway's process-stream transport, one line: "<channel> <line>", or
 * "<channel>" alone (that channel ends). The channel is 1 to 10 decimal digits no larger
 * than UINT32_MAX, nothing before them. Returns 1 with *line and *line_len (the rest after the
 * one space), 0 for a channel alone, -1 for anything else. */
int sbx_mcp_frame_split(const char *frame, size_t len, uint32_t *channel, const char **line,
                        size_t *line_len);

#endif
