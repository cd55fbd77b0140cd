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

/* Names (of files and directories) as the tools print them: one line of valid UTF-8 that
 * says exactly which bytes the name has. Control characters (C0, DEL, C1), the Unicode line
 * and paragraph separators and bidirectional controls, bytes that are not UTF-8, and the
 * backslash itself are escaped: "\\n" "\\t" "\\r" "\\\\" and "\\xHH" for each other byte.
 * Everything else is copied. */
void sbx_tool_escape_append(sbx_buf *out, const char *s, size_t len);
/* The same into a new string (NULL when out of memory). */
char *sbx_tool_escape_name(const char *s, size_t len);
/* Would the name print differently from its bytes? */
bool sbx_tool_name_needs_escape(const char *s, size_t len);

/* The name an escaped form stands for. Returns 1 with *out (malloc'ed) when s is exactly what
 * sbx_tool_escape_append prints for another name, 0 when it is not (s then names only
 * itself), negative for out of memory. Never yields a NUL or a '/' byte: an escape cannot
 * make a new path component. */
int sbx_tool_unescape_name(const char *s, size_t len, char **out);

#endif
