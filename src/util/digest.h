/* SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), the one place the library hashes: content
 * named by its hash (offloaded data, skills), the state folder of a workdir, the git guard's
 * fingerprints, manager ids, the record of trusted skills. Its own code rather than libcrypto:
 * the state folder is hashed at every open, and libcrypto alone cost each process start more
 * than the rest of the library's loading (see lazylib.h for what stays lazily loaded). */
#ifndef SBX_UTIL_DIGEST_H
#define SBX_UTIL_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#define SBX_SHA256_LEN 32

typedef struct sbx_sha256 {
	uint32_t h[8];
	uint64_t bytes;          /* hashed so far */
	unsigned char block[64]; /* the partial block */
	size_t fill;
} sbx_sha256;

void sbx_sha256_init(sbx_sha256 *c);
void sbx_sha256_update(sbx_sha256 *c, const void *data, size_t len);
/* Writes the digest; c must be initialised again before reuse. */
void sbx_sha256_final(sbx_sha256 *c, unsigned char md[SBX_SHA256_LEN]);
/* All at once. */
void sbx_sha256_of(const void *data, size_t len, unsigned char md[SBX_SHA256_LEN]);

/* The first n bytes of md as lower-case hex: 2n digits and a NUL. */
void sbx_hex_of(const unsigned char *md, size_t n, char *out);

/* hex gets 64 digits and a NUL. Returns 0 (kept as int for the callers' error paths). */
int sbx_sha256_hex(const void *data, size_t len, char hex[65]);

/* HMAC-SHA-256 of data under key, as hex (64 digits and a NUL). Returns 0. */
int sbx_hmac_sha256_hex(const void *key, size_t key_len, const void *data, size_t len,
                        char hex[65]);

#endif
