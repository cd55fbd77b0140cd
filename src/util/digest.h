/* SHA-256 as lower-case hex, the form the library writes wherever it names content by its
 * hash (offloaded data, the record of trusted skills). */
#ifndef SBX_UTIL_DIGEST_H
#define SBX_UTIL_DIGEST_H

#include <stddef.h>

/* hex gets 64 digits and a NUL. Returns 0, or -SBX_EIO (with a message) when the digest
 * cannot be computed. */
int sbx_sha256_hex(const void *data, size_t len, char hex[65]);

/* HMAC-SHA-256 of data under key, as hex (64 digits and a NUL). 0 or -SBX_EIO. */
int sbx_hmac_sha256_hex(const void *key, size_t key_len, const void *data, size_t len,
                        char hex[65]);

#endif
