/* Unit tests of the library's own SHA-256, HMAC-SHA-256 and base64 encoder
 * (src/util/digest.c, base64.c): the published test vectors, then libcrypto (which this test
 * links, the library no longer does) as the reference over every length around the block
 * boundaries and over split updates. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <agentsbx/agentsbx.h>
#include "support.h"
#include "util/base64.h"
#include "util/digest.h"

static void openssl_hex(const void *data, size_t len, char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	ck_assert(EVP_Digest(data, len, md, &n, EVP_sha256(), NULL));
	ck_assert_uint_eq(n, 32);
	sbx_hex_of(md, n, hex);
}

static unsigned char *pattern(size_t len, unsigned seed)
{
	unsigned char *p = malloc(len + 1);

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (unsigned char)(seed >> 16);
	}
	return p;
}

/* FIPS 180-4 examples (and the empty message). */
START_TEST(sha256_matches_the_published_vectors)
{
	char hex[65];
	unsigned char *million = malloc(1000000);

	ck_assert_int_eq(sbx_sha256_hex("", 0, hex), 0);
	ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	ck_assert_int_eq(sbx_sha256_hex(NULL, 0, hex), 0); /* as offload hands empty data */
	ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sbx_sha256_hex("abc", 3, hex);
	ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sbx_sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, hex);
	ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	ck_assert_ptr_nonnull(million);
	memset(million, 'a', 1000000);
	sbx_sha256_hex(million, 1000000, hex);
	ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(million);
}
END_TEST

/* Every length from 0 to 300 (the padding's two cases, one and several blocks), hashed at
 * once and in uneven pieces, equals libcrypto's digest. */
START_TEST(sha256_equals_libcrypto_at_every_length_and_split)
{
	for (size_t len = 0; len <= 300; len++) {
		unsigned char *p = pattern(len, (unsigned)len), md[SBX_SHA256_LEN];
		char ours[65], split[65], theirs[65];
		sbx_sha256 c;

		sbx_sha256_hex(p, len, ours);
		sbx_sha256_init(&c);
		for (size_t off = 0, step = 1; off < len; off += step, step = step * 3 % 71 + 1)
			sbx_sha256_update(&c, p + off, step < len - off ? step : len - off);
		sbx_sha256_final(&c, md);
		sbx_hex_of(md, sizeof md, split);
		openssl_hex(p, len, theirs);
		ck_assert_msg(!strcmp(ours, theirs), "length %zu: %s, libcrypto %s", len, ours, theirs);
		ck_assert_msg(!strcmp(split, theirs), "length %zu split: %s", len, split);
		free(p);
	}
}
END_TEST

/* RFC 4231 test case 2, then keys shorter than, equal to and longer than the block. */
START_TEST(hmac_matches_rfc4231_and_libcrypto)
{
	char hex[65], theirs[65];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	sbx_hmac_sha256_hex("Jefe", 4, "what do ya want for nothing?", 28, hex);
	ck_assert_str_eq(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	for (size_t klen = 0; klen <= 140; klen += 7) {
		unsigned char *key = pattern(klen, 7), *data = pattern(200, (unsigned)klen);

		sbx_hmac_sha256_hex(key, klen, data, 200, hex);
		ck_assert_ptr_nonnull(HMAC(EVP_sha256(), key, (int)klen, data, 200, md, &n));
		sbx_hex_of(md, n, theirs);
		ck_assert_msg(!strcmp(hex, theirs), "key of %zu bytes", klen);
		free(key);
		free(data);
	}
}
END_TEST

/* RFC 4648 section 10, then every length to 100 against EVP_EncodeBlock, which Read used. */
START_TEST(base64_encodes_as_rfc4648_and_libcrypto)
{
	static const char *const want[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=",
	                                    "Zm9vYmFy" };
	char out[256], theirs[256];

	for (size_t i = 0; i < 7; i++) {
		sbx_base64_encode("foobar", i, out);
		ck_assert_str_eq(out, want[i]);
	}
	for (size_t len = 0; len <= 100; len++) {
		unsigned char *p = pattern(len, 3);

		sbx_base64_encode(p, len, out);
		EVP_EncodeBlock((unsigned char *)theirs, p, (int)len);
		ck_assert_str_eq(out, theirs);
		free(p);
	}
}
END_TEST

static Suite *digest_suite(void)
{
	Suite *s = suite_create("digest");
	TCase *tc = tcase_create("digest");

	tcase_add_test(tc, sha256_matches_the_published_vectors);
	tcase_add_test(tc, sha256_equals_libcrypto_at_every_length_and_split);
	tcase_add_test(tc, hmac_matches_rfc4231_and_libcrypto);
	tcase_add_test(tc, base64_encodes_as_rfc4648_and_libcrypto);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(digest_suite());
}
