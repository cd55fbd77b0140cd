/* A reader of Server-Sent Events (the WHATWG "text/event-stream" format), as MCP's
 * Streamable HTTP transport sends its messages: bytes go in as they arrive, in pieces of any
 * size, and each complete event comes out through a callback. Lines end in LF, CRLF or a lone
 * CR; a UTF-8 byte order mark at the start is skipped; "data" lines of one event are joined
 * with LF; "event" names the event (the default is "message"); comments, "id" and "retry"
 * carry nothing this library uses (no resumption). A line or event longer than the limit
 * makes feed fail, so a peer without line ends costs bounded memory. */
#ifndef SBX_MCP_SSE_H
#define SBX_MCP_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

/* Called once per event with data (event "" for a type with a NUL byte in it); a negative
 * return stops the reader and is returned. */
typedef int (*sbx_sse_event_fn)(void *arg, const char *event, const char *data, size_t len);

typedef struct sbx_sse {
	sbx_sse_event_fn on_event;
	void *arg;
	size_t max;                   /* the longest line, and event data, accepted */
	sbx_buf line;                 /* the line being read */
	sbx_buf data;                 /* the event's data lines */
	char event[64];               /* its type; a longer one is no type this library knows */
	bool has_data;                /* a data line came (an empty one counts) */
	bool after_cr;                /* the last byte ended a line with CR: an LF now is its end */
	size_t bom_seen;              /* bytes of a leading byte order mark matched so far */
	bool started;                 /* past where a byte order mark can be */
} sbx_sse;

/* max 0 means 64 MiB. */
void sbx_sse_init(sbx_sse *s, size_t max, sbx_sse_event_fn on_event, void *arg);

/* Reads bytes. 0, the callback's negative return, -SBX_ENOMEM, or -SBX_EPROTO for a line or
 * an event over the limit (with sbx_last_error set). */
int sbx_sse_feed(sbx_sse *s, const char *bytes, size_t len);

/* The stream ended: a last line without its end, and an event without its blank line, are
 * taken as if they had them. Same returns as feed. */
int sbx_sse_finish(sbx_sse *s);

void sbx_sse_free(sbx_sse *s);

#endif
