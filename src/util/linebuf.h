/* A line buffer for any stream of lines (MCP's transports in the gateway and the host, the
 * Engine API's JSON-lines answers): bytes go in as they arrive, complete lines come out. A
 * line longer than the limit is dropped up to its newline and reported once, so a peer that
 * floods without newlines costs bounded memory. */
#ifndef SBX_UTIL_LINEBUF_H
#define SBX_UTIL_LINEBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sbx_linebuf {
	char *buf;
	size_t start;      /* first byte not yet returned */
	size_t len;        /* bytes held */
	size_t cap;
	size_t scanned;    /* bytes from start known to hold no newline */
	size_t max;        /* longest line kept (0 = SBX_LINEBUF_MAX) */
	bool discarding;   /* inside an over-long line: drop up to its newline */
} sbx_linebuf;

/* The limit of a buffer that sets none; a protocol with a limit of its own sets max. */
#define SBX_LINEBUF_MAX ((size_t)32 << 20)

enum { SBX_LINE_NONE = 0, SBX_LINE_OK = 1, SBX_LINE_DROPPED = 2 };

/* Appends bytes. Returns 0, or -1 when out of memory (the buffer stays consistent). */
int sbx_linebuf_feed(sbx_linebuf *lb, const char *data, size_t len);
/* The next complete line without its "\n" (and a "\r" before it): SBX_LINE_OK with *line
 * (NUL-terminated, valid until the next feed or next) and *len; SBX_LINE_DROPPED once for
 * an over-long line; SBX_LINE_NONE when no complete line is buffered. */
int sbx_linebuf_next(sbx_linebuf *lb, char **line, size_t *len);
void sbx_linebuf_free(sbx_linebuf *lb);

#endif
