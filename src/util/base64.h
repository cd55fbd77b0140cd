/* Base64 decoding, shared by the core and the backends. */
#ifndef SBX_UTIL_BASE64_H
#define SBX_UTIL_BASE64_H

#include <stddef.h>

/* Decodes s[0..n) into *out (malloc'd, *outlen bytes; free()). Standard alphabet; line breaks
 * and blanks are skipped, the '=' padding may be left out. -SBX_EINVAL for anything else,
 * -SBX_ENOMEM. */
int sbx_base64_decode(const char *s, size_t n, unsigned char **out, size_t *outlen);

/* Encodes data[0..len) with padding into out, which has room for 4 * ((len + 2) / 3) + 1
 * bytes (the last one a NUL). */
void sbx_base64_encode(const void *data, size_t len, char *out);

#endif
