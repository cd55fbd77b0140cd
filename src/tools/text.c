/* UTF-8 repair and character counting for tool output, and names escaped for printing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/text.h"

static const char replacement[] = "\xEF\xBF\xBD";

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one. Overlong forms,
 * surrogates and code points above U+10FFFF are invalid. */
static size_t utf8_seq(const unsigned char *s, size_t len)
{
	unsigned c = s[0];
	size_t n;
	unsigned min;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		n = 2, min = 0x80;
	else if (c >= 0xE0 && c <= 0xEF)
		n = 3, min = 0x800;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4, min = 0x10000;
	else
		return 0;
	if (len < n)
		return 0;
	unsigned cp = c & (0x7F >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

void sbx_tool_text_append(sbx_buf *out, const char *data, size_t len)
{
	const unsigned char *s = (const unsigned char *)data;
	size_t i = 0, run = 0;

	while (i < len) {
		size_t n = s[i] == '\r' ? 0 : utf8_seq(s + i, len - i);

		if (n) {
			i += n;
			run += n;
			continue;
		}
		sbx_buf_append(out, data + i - run, run);
		run = 0;
		if (s[i] == '\r') {
			sbx_buf_append(out, "\n", 1);
			i += (i + 1 < len && s[i + 1] == '\n') ? 2 : 1;
		} else {
			sbx_buf_append(out, replacement, 3);
			i++;
		}
	}
	sbx_buf_append(out, data + i - run, run);
}

size_t sbx_tool_text_prefix(const char *s, size_t len, size_t max_chars)
{
	size_t i = 0, chars = 0;

	while (i < len && chars < max_chars) {
		size_t n = utf8_seq((const unsigned char *)s + i, len - i);

		i += n ? n : 1;
		chars++;
	}
	return i;
}

bool sbx_tool_text_cut(sbx_buf *b, size_t max_chars, const char *marker)
{
	size_t keep;

	if (!b->data)
		return false;
	keep = sbx_tool_text_prefix(b->data, b->len, max_chars);
	if (keep >= b->len)
		return false;
	b->len = keep;
	b->data[keep] = '\0';
	sbx_buf_puts(b, marker);
	return true;
}

/* ---------------------------------------------------------------------------------------
 * Names
 * ------------------------------------------------------------------------------------- */

/* A valid UTF-8 sequence of n bytes at s that still changes how a listing reads: C1
 * controls, U+061C, U+200E/F, U+2028..U+202E and U+2066..U+2069. */
static bool is_invisible_control(const unsigned char *s, size_t n)
{
	if (n == 2)
		return (s[0] == 0xC2 && s[1] >= 0x80 && s[1] <= 0x9F) || (s[0] == 0xD8 && s[1] == 0x9C);
	if (n != 3 || s[0] != 0xE2)
		return false;
	if (s[1] == 0x80)
		return s[2] == 0x8E || s[2] == 0x8F || (s[2] >= 0xA8 && s[2] <= 0xAE);
	return s[1] == 0x81 && s[2] >= 0xA6 && s[2] <= 0xA9;
}

static void put_hex(sbx_buf *out, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	char e[4] = { '\\', 'x', hex[c >> 4], hex[c & 15] };

	sbx_buf_append(out, e, 4);
}

static void put_escaped_byte(sbx_buf *out, unsigned char c)
{
	switch (c) {
	case '\n': sbx_buf_append(out, "\\n", 2); break;
	case '\t': sbx_buf_append(out, "\\t", 2); break;
	case '\r': sbx_buf_append(out, "\\r", 2); break;
	case '\\': sbx_buf_append(out, "\\\\", 2); break;
	default: put_hex(out, c); break;
	}
}

/* How many bytes at s print as themselves (0: the byte at s is escaped). */
static size_t plain_run(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		size_t n;

		if (s[i] < 0x80) {
			if (s[i] < 0x20 || s[i] == 0x7F || s[i] == '\\')
				break;
			i++;
			continue;
		}
		n = utf8_seq(s + i, len - i);
		if (!n || is_invisible_control(s + i, n))
			break;
		i += n;
	}
	return i;
}

void sbx_tool_escape_append(sbx_buf *out, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		size_t run = plain_run(p + i, len - i), n;

		sbx_buf_append(out, s + i, run);
		i += run;
		if (i >= len)
			break;
		/* An escaped UTF-8 control goes out byte by byte, like an invalid byte. */
		n = p[i] < 0x80 ? 1 : utf8_seq(p + i, len - i);
		for (size_t k = 0; k < (n ? n : 1); k++)
			put_escaped_byte(out, p[i + k]);
		i += n ? n : 1;
	}
}

char *sbx_tool_escape_name(const char *s, size_t len)
{
	sbx_buf b = { 0 };

	sbx_tool_escape_append(&b, s, len);
	return sbx_buf_steal(&b, NULL);
}

bool sbx_tool_name_needs_escape(const char *s, size_t len)
{
	return plain_run((const unsigned char *)s, len) < len;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;   /* the printer writes lower case only */
}

/* Undoes the escapes of s; false when s has a backslash that starts none. */
static bool undo_escapes(const char *s, size_t len, sbx_buf *out)
{
	for (size_t i = 0; i < len; i++) {
		if (s[i] != '\\') {
			sbx_buf_append(out, s + i, 1);
			continue;
		}
		if (++i >= len)
			return false;
		char c = s[i];
		if (c == 'n' || c == 't' || c == 'r' || c == '\\') {
			sbx_buf_append(out, c == 'n' ? "\n" : c == 't' ? "\t" : c == 'r' ? "\r" : "\\", 1);
			continue;
		}
		int hi, lo;
		if (c != 'x' || i + 2 >= len || (hi = hex_digit(s[i + 1])) < 0 ||
		    (lo = hex_digit(s[i + 2])) < 0)
			return false;
		char byte = (char)(hi << 4 | lo);
		if (byte == '\0' || byte == '/')
			return false;
		sbx_buf_append(out, &byte, 1);
		i += 2;
	}
	return true;
}

int sbx_tool_unescape_name(const char *s, size_t len, char **out)
{
	sbx_buf raw = { 0 }, again = { 0 };
	int r = 0;

	*out = NULL;
	if (!memchr(s, '\\', len))
		return 0;
	if (undo_escapes(s, len, &raw)) {
		/* Only the form the printer gives: "\x41" is not another name for "A", and no
		 * escape can spell "." or "/". */
		sbx_tool_escape_append(&again, raw.data ? raw.data : "", raw.len);
		if (raw.oom || again.oom)
			r = -1;
		else if (again.len == len && memcmp(again.data, s, len) == 0)
			r = 1;
	}
	sbx_buf_free(&again);
	if (r == 1) {
		*out = sbx_buf_steal(&raw, NULL);
		return *out ? 1 : -1;
	}
	sbx_buf_free(&raw);
	return r;
}
