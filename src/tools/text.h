/* Text for the model: valid UTF-8 with LF line ends, cut to a number of characters. */
#ifndef SBX_TOOLS_TEXT_H
#define SBX_TOOLS_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

/* Appends data with CRLF and lone CR turned into LF and each invalid UTF-8 sequence replaced
 * by U+FFFD. */
void sbx_tool_text_append(sbx_buf *out, const char *data, size_t len);

/* Cuts b after max_chars characters (code points) and appends marker; true if it cut. */
bool sbx_tool_text_cut(sbx_buf *b, size_t max_chars, const char *marker);

/* The byte length of the longest prefix of s (valid UTF-8) holding at most max_chars
 * characters. */
size_t sbx_tool_text_prefix(const char *s, size_t len, size_t max_chars);

#endif
