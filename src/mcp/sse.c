/* Server-Sent Events, read as they arrive (sse.h). */
#include <string.h>

#include "mcp/sse.h"
#include "util/error.h"

#define SSE_DEFAULT_MAX ((size_t)64 << 20)

static const char bom[] = "\xef\xbb\xbf";

void sbx_sse_init(sbx_sse *s, size_t max, sbx_sse_event_fn on_event, void *arg)
{
	memset(s, 0, sizeof *s);
	s->on_event = on_event;
	s->arg = arg;
	s->max = max ? max : SSE_DEFAULT_MAX;
	strcpy(s->event, "message");
}

/* A blank line: the event is complete. One without data lines is no event. */
static int dispatch(sbx_sse *s)
{
	int r = 0;

	if (s->has_data)
		r = s->on_event(s->arg, s->event, s->data.data ? s->data.data : "", s->data.len);
	s->data.len = 0;
	s->has_data = false;
	strcpy(s->event, "message");
	return r;
}

static int add_data(sbx_sse *s, const char *value, size_t len)
{
	if (s->data.len + len + 1 > s->max)
		return sbx_fail(-SBX_EPROTO, "event stream: an event of more than %zu bytes", s->max);
	if (s->has_data)
		sbx_buf_append(&s->data, "\n", 1);
	sbx_buf_append(&s->data, value, len);
	s->has_data = true;
	return s->data.oom ? sbx_fail(-SBX_ENOMEM, "out of memory") : 0;
}

/* An empty type is the default; a longer one than fits is cut, which cannot make it one the
 * library knows (those are short); one with a NUL byte is none, "". */
static void set_event(sbx_sse *s, const char *value, size_t len)
{
	if (len == 0) {
		strcpy(s->event, "message");
		return;
	}
	if (memchr(value, '\0', len)) {
		s->event[0] = '\0';
		return;
	}
	if (len >= sizeof s->event)
		len = sizeof s->event - 1;
	memcpy(s->event, value, len);
	s->event[len] = '\0';
}

/* One line without its end: "field: value", ":comment", or blank. */
static int take_line(sbx_sse *s, const char *line, size_t len)
{
	const char *colon = memchr(line, ':', len);
	size_t name_len = colon ? (size_t)(colon - line) : len;
	const char *value = colon ? colon + 1 : line + len;
	size_t value_len = len - (size_t)(value - line);

	if (len == 0)
		return dispatch(s);
	if (value_len && *value == ' ') {
		value++;
		value_len--;
	}
	if (name_len == 4 && !memcmp(line, "data", 4))
		return add_data(s, value, value_len);
	if (name_len == 5 && !memcmp(line, "event", 5))
		set_event(s, value, value_len);
	return 0;
}

static int end_line(sbx_sse *s)
{
	int r = s->line.oom ? sbx_fail(-SBX_ENOMEM, "out of memory")
	                    : take_line(s, s->line.data ? s->line.data : "", s->line.len);

	s->line.len = 0;
	return r;
}

/* Bytes of a byte order mark at the very start are held back until they are known to be one
 * (skipped) or not (fed as they came). Returns how many of bytes it consumed. */
static size_t skip_bom(sbx_sse *s, const char *bytes, size_t len)
{
	size_t used = 0;

	while (!s->started && used < len) {
		if (bytes[used] != bom[s->bom_seen]) {
			s->started = true;
			sbx_buf_append(&s->line, bom, s->bom_seen);   /* not a mark after all */
			break;
		}
		used++;
		if (++s->bom_seen == sizeof bom - 1)
			s->started = true;
	}
	return used;
}

int sbx_sse_feed(sbx_sse *s, const char *bytes, size_t len)
{
	size_t i = skip_bom(s, bytes, len);

	while (i < len) {
		const char *end = bytes + i;
		size_t run = 0;
		int r;

		if (s->after_cr && bytes[i] == '\n') {
			s->after_cr = false;
			i++;
			continue;
		}
		s->after_cr = false;
		while (i + run < len && end[run] != '\n' && end[run] != '\r')
			run++;
		if (s->line.len + run > s->max)
			return sbx_fail(-SBX_EPROTO, "event stream: a line of more than %zu bytes",
			                s->max);
		sbx_buf_append(&s->line, end, run);
		i += run;
		if (i == len)
			break;
		s->after_cr = bytes[i] == '\r';
		i++;
		if ((r = end_line(s)) < 0)
			return r;
	}
	return s->line.oom ? sbx_fail(-SBX_ENOMEM, "out of memory") : 0;
}

int sbx_sse_finish(sbx_sse *s)
{
	int r = 0;

	if (!s->started && s->bom_seen) {
		s->started = true;
		sbx_buf_append(&s->line, bom, s->bom_seen);
	}
	if (s->line.len)
		r = end_line(s);
	if (r == 0)
		r = dispatch(s);
	return r;
}

void sbx_sse_free(sbx_sse *s)
{
	sbx_buf_free(&s->line);
	sbx_buf_free(&s->data);
}
