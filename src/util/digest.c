/* See digest.h. The compression function follows FIPS 180-4, section 6.2.2. */
#include <string.h>

#include "digest.h"

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

static uint32_t ror(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static uint32_t load_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void compress(uint32_t h[8], const unsigned char block[64])
{
	uint32_t w[64], s[8];

	for (int i = 0; i < 16; i++)
		w[i] = load_be32(block + 4 * i);
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	memcpy(s, h, sizeof s);
	for (int i = 0; i < 64; i++) {
		uint32_t S1 = ror(s[4], 6) ^ ror(s[4], 11) ^ ror(s[4], 25);
		uint32_t ch = (s[4] & s[5]) ^ (~s[4] & s[6]);
		uint32_t t1 = s[7] + S1 + ch + K[i] + w[i];
		uint32_t S0 = ror(s[0], 2) ^ ror(s[0], 13) ^ ror(s[0], 22);
		uint32_t maj = (s[0] & s[1]) ^ (s[0] & s[2]) ^ (s[1] & s[2]);
		uint32_t t2 = S0 + maj;

		memmove(s + 1, s, 7 * sizeof s[0]);
		s[4] += t1;
		s[0] = t1 + t2;
	}
	for (int i = 0; i < 8; i++)
		h[i] += s[i];
}

void sbx_sha256_init(sbx_sha256 *c)
{
	static const uint32_t iv[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	                                0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };

	memcpy(c->h, iv, sizeof iv);
	c->bytes = 0;
	c->fill = 0;
}

void sbx_sha256_update(sbx_sha256 *c, const void *data, size_t len)
{
	const unsigned char *p = data;

	if (len == 0) /* data may then be NULL, which memcpy must not see */
		return;
	c->bytes += len;
	if (c->fill) {
		size_t take = 64 - c->fill < len ? 64 - c->fill : len;
		memcpy(c->block + c->fill, p, take);
		c->fill += take;
		p += take;
		len -= take;
		if (c->fill < 64)
			return;
		compress(c->h, c->block);
		c->fill = 0;
	}
	for (; len >= 64; p += 64, len -= 64)
		compress(c->h, p);
	memcpy(c->block, p, len);
	c->fill = len;
}

void sbx_sha256_final(sbx_sha256 *c, unsigned char md[SBX_SHA256_LEN])
{
	uint64_t bits = c->bytes * 8;
	unsigned char pad[72] = { 0x80 };
	/* 0x80, zeros up to 56 mod 64, then the length in bits, big-endian. */
	size_t padlen = (c->fill < 56 ? 56 : 120) - c->fill;

	for (int i = 0; i < 8; i++)
		pad[padlen + i] = (unsigned char)(bits >> (56 - 8 * i));
	sbx_sha256_update(c, pad, padlen + 8);
	for (int i = 0; i < 8; i++)
		for (int b = 0; b < 4; b++)
			md[4 * i + b] = (unsigned char)(c->h[i] >> (24 - 8 * b));
}

void sbx_sha256_of(const void *data, size_t len, unsigned char md[SBX_SHA256_LEN])
{
	sbx_sha256 c;

	sbx_sha256_init(&c);
	sbx_sha256_update(&c, data, len);
	sbx_sha256_final(&c, md);
}

void sbx_hex_of(const unsigned char *md, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[md[i] >> 4];
		out[2 * i + 1] = digits[md[i] & 15];
	}
	out[2 * n] = '\0';
}

int sbx_sha256_hex(const void *data, size_t len, char hex[65])
{
	unsigned char md[SBX_SHA256_LEN];

	sbx_sha256_of(data, len, md);
	sbx_hex_of(md, sizeof md, hex);
	return 0;
}

int sbx_hmac_sha256_hex(const void *key, size_t key_len, const void *data, size_t len,
                        char hex[65])
{
	unsigned char k[64] = { 0 }, pad[64], md[SBX_SHA256_LEN];
	sbx_sha256 c;

	if (key_len > sizeof k) /* a long key is hashed first (RFC 2104, section 2) */
		sbx_sha256_of(key, key_len, k);
	else if (key_len)
		memcpy(k, key, key_len);
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	sbx_sha256_init(&c);
	sbx_sha256_update(&c, pad, sizeof pad);
	sbx_sha256_update(&c, data, len);
	sbx_sha256_final(&c, md);
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	sbx_sha256_init(&c);
	sbx_sha256_update(&c, pad, sizeof pad);
	sbx_sha256_update(&c, md, sizeof md);
	sbx_sha256_final(&c, md);
	sbx_hex_of(md, sizeof md, hex);
	return 0;
}
