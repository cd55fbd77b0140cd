/* See linebuf.h. */
#include <stdlib.h>
#include <string.h>

#include "linebuf.h"

static size_t limit(const sbx_linebuf *lb)
{
	return lb->max ? lb->max : SBX_LINEBUF_MAX;
}

/* Moves the unread bytes to the front so that appending does not grow without bound. */
static void compact(sbx_linebuf *lb)
{
	if (lb->start == 0)
		return;
	memmove(lb->buf, lb->buf + lb->start, lb->len - lb->start);
	lb->len -= lb->start;
	lb->start = 0;
}

static int reserve(sbx_linebuf *lb, size_t extra)
{
	size_t want = lb->len + extra + 1, cap = lb->cap ? lb->cap : 4096;
	char *p;

	if (want <= lb->cap)
		return 0;
	while (cap < want)
		cap *= 2;
	if (!(p = realloc(lb->buf, cap)))
		return -1;
	lb->buf = p;
	lb->cap = cap;
	return 0;
}

/* In a dropped line: skips to just past its newline. Returns how many bytes were consumed. */
static size_t skip_dropped(sbx_linebuf *lb, const char *data, size_t len)
{
	const char *nl = memchr(data, '\n', len);

	if (!nl)
		return len;
	lb->discarding = false;
	return (size_t)(nl - data) + 1;
}

int sbx_linebuf_feed(sbx_linebuf *lb, const char *data, size_t len)
{
	size_t used;

	if (lb->discarding) {
		used = skip_dropped(lb, data, len);
		data += used;
		len -= used;
	}
	if (len == 0)
		return 0;
	compact(lb);
	if (reserve(lb, len) < 0)
		return -1;
	memcpy(lb->buf + lb->len, data, len);
	lb->len += len;
	lb->buf[lb->len] = '\0';
	return 0;
}

int sbx_linebuf_next(sbx_linebuf *lb, char **line, size_t *len)
{
	char *from, *nl;
	size_t n;

	if (!lb->buf)
		return SBX_LINE_NONE;
	from = lb->buf + lb->start;
	n = lb->len - lb->start;
	nl = n > lb->scanned ? memchr(from + lb->scanned, '\n', n - lb->scanned) : NULL;
	if (!nl) {
		lb->scanned = n;
		if (n > limit(lb)) {
			/* Too long and still no end: forget it, drop the rest when it comes. */
			lb->start = lb->len = lb->scanned = 0;
			lb->discarding = true;
			return SBX_LINE_DROPPED;
		}
		return SBX_LINE_NONE;
	}
	*nl = '\0';
	*len = (size_t)(nl - from);
	lb->start += *len + 1;
	lb->scanned = 0;
	if (*len > limit(lb))
		return SBX_LINE_DROPPED;
	if (*len && from[*len - 1] == '\r')
		from[--*len] = '\0';
	*line = from;
	return SBX_LINE_OK;
}

void sbx_linebuf_free(sbx_linebuf *lb)
{
	free(lb->buf);
	*lb = (sbx_linebuf){ 0 };
}
