/* A growable byte buffer and a small JSON writer on top of it. */
#ifndef SBX_UTIL_BUF_H
#define SBX_UTIL_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sbx_buf {
	char *data;     /* always NUL-terminated when non-NULL */
	size_t len;
	size_t cap;
	bool oom;       /* an append failed; the content is incomplete */
} sbx_buf;

void sbx_buf_append(sbx_buf *b, const void *data, size_t len);
void sbx_buf_puts(sbx_buf *b, const char *s);
void sbx_buf_printf(sbx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Returns the content (never NULL unless oom) and leaves b empty. Caller frees. */
char *sbx_buf_steal(sbx_buf *b, size_t *len);
void sbx_buf_free(sbx_buf *b);

/* JSON output: a quoted, escaped string. Invalid UTF-8 bytes become U+FFFD. */
void sbx_buf_json_string(sbx_buf *b, const char *s, size_t len);
/* Is s[0..len) valid UTF-8 (no overlongs, no surrogates)? */
bool sbx_utf8_valid(const char *s, size_t len);

#endif
