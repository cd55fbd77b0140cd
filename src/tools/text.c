/* UTF-8 repair and character counting for tool output. */
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
