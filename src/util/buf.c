/* A growable byte buffer, printf-style appends, and the JSON string writer with its strict
 * UTF-8 decoder. Appends never fail loudly: an allocation failure sets b->oom and later
 * appends are ignored, so builders check once at the end instead of after every call. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

#define BUF_MIN_CAP 64

/* Makes room for `extra` more bytes plus the terminating NUL. */
static bool buf_reserve(sbx_buf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (b->oom)
		return false;
	if (extra > SIZE_MAX - b->len - 1)
		goto fail;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return true;
	cap = b->cap ? b->cap : BUF_MIN_CAP;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = realloc(b->data, cap);
	if (!p)
		goto fail;
	b->data = p;
	b->cap = cap;
	return true;
fail:
	b->oom = true;
	return false;
}

void sbx_buf_append(sbx_buf *b, const void *data, size_t len)
{
	if (!buf_reserve(b, len))
		return;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
}

void sbx_buf_puts(sbx_buf *b, const char *s)
{
	sbx_buf_append(b, s, strlen(s));
}

void sbx_buf_printf(sbx_buf *b, const char *fmt, ...)
{
	va_list ap, again;
	int n;

	/* Try the space we already have first: most appends are short and fit. */
	if (!buf_reserve(b, 0))
		return;
	va_start(ap, fmt);
	va_copy(again, ap);
	n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->data[b->len] = '\0';
		b->oom = true;
	} else if ((size_t)n < b->cap - b->len) {
		b->len += (size_t)n;
	} else if (buf_reserve(b, (size_t)n)) {
		vsnprintf(b->data + b->len, b->cap - b->len, fmt, again);
		b->len += (size_t)n;
	} else {
		/* The first attempt wrote a truncated tail; drop it. */
		b->data[b->len] = '\0';
	}
	va_end(again);
}

char *sbx_buf_steal(sbx_buf *b, size_t *len)
{
	char *data;

	if (b->oom) {
		sbx_buf_free(b);
		if (len)
			*len = 0;
		return NULL;
	}
	/* An untouched buffer still yields "", so callers need not special-case it. */
	data = b->data ? b->data : calloc(1, 1);
	if (len)
		*len = data ? b->len : 0;
	*b = (sbx_buf){0};
	return data;
}

void sbx_buf_free(sbx_buf *b)
{
	free(b->data);
	*b = (sbx_buf){0};
}

/*
 * Length of the UTF-8 sequence at s (at most len bytes), following Unicode's table of
 * well-formed byte sequences: no overlong forms, no surrogates (U+D800..U+DFFF), nothing above
 * U+10FFFF. Returns the length of a well-formed sequence with *ok = true, or the length of the
 * maximal ill-formed prefix (at least 1) with *ok = false, which is what one U+FFFD replaces.
 */
static size_t utf8_sequence(const unsigned char *s, size_t len, bool *ok)
{
	unsigned char lead = s[0], lo = 0x80, hi = 0xBF;
	size_t need, i;

	*ok = false;
	if (lead < 0x80) {
		*ok = true;
		return 1;
	}
	if (lead >= 0xC2 && lead <= 0xDF) {
		need = 2;
	} else if (lead >= 0xE0 && lead <= 0xEF) {
		need = 3;
		if (lead == 0xE0)
			lo = 0xA0;      /* below: overlong */
		else if (lead == 0xED)
			hi = 0x9F;      /* above: surrogates */
	} else if (lead >= 0xF0 && lead <= 0xF4) {
		need = 4;
		if (lead == 0xF0)
			lo = 0x90;      /* below: overlong */
		else if (lead == 0xF4)
			hi = 0x8F;      /* above: beyond U+10FFFF */
	} else {
		return 1;               /* continuation byte, C0/C1 (overlong) or F5..FF */
	}
	for (i = 1; i < need; i++) {
		if (i >= len || s[i] < lo || s[i] > hi)
			return i;
		lo = 0x80;
		hi = 0xBF;
	}
	*ok = true;
	return need;
}

bool sbx_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	bool ok;

	while (i < len) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		i += utf8_sequence(p + i, len - i, &ok);
		if (!ok)
			return false;
	}
	return true;
}

static void buf_json_escape(sbx_buf *b, unsigned char c)
{
	switch (c) {
	case '"': sbx_buf_append(b, "\\\"", 2); break;
	case '\\': sbx_buf_append(b, "\\\\", 2); break;
	case '\b': sbx_buf_append(b, "\\b", 2); break;
	case '\f': sbx_buf_append(b, "\\f", 2); break;
	case '\n': sbx_buf_append(b, "\\n", 2); break;
	case '\r': sbx_buf_append(b, "\\r", 2); break;
	case '\t': sbx_buf_append(b, "\\t", 2); break;
	default: sbx_buf_printf(b, "\\u%04x", c); break;
	}
}

static bool json_needs_escape(unsigned char c)
{
	return c < 0x20 || c == '"' || c == '\\';
}

void sbx_buf_json_string(sbx_buf *b, const char *s, size_t len)
{
	static const char replacement[] = "\xEF\xBF\xBD";
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run = 0;
	bool ok;

	sbx_buf_append(b, "\"", 1);
	while (i < len) {
		/* Copy plain stretches in one append; stop at anything that needs care. */
		for (run = i; run < len && p[run] < 0x80 && !json_needs_escape(p[run]); run++)
			;
		sbx_buf_append(b, p + i, run - i);
		i = run;
		if (i >= len)
			break;
		if (p[i] < 0x80) {
			buf_json_escape(b, p[i]);
			i++;
			continue;
		}
		run = utf8_sequence(p + i, len - i, &ok);
		if (ok)
			sbx_buf_append(b, p + i, run);
		else
			sbx_buf_append(b, replacement, sizeof replacement - 1);
		i += run;
	}
	sbx_buf_append(b, "\"", 1);
}
