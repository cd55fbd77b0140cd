/* See digest.h. */
#include <stdio.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <agentsbx/agentsbx.h>
#include "digest.h"
#include "error.h"

int sbx_sha256_hex(const void *data, size_t len, char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
		return sbx_fail(-SBX_EIO, "SHA-256 failed");
	for (unsigned i = 0; i < mdlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return 0;
}

int sbx_hmac_sha256_hex(const void *key, size_t key_len, const void *data, size_t len,
                        char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (!HMAC(EVP_sha256(), key, (int)key_len, data, len, md, &mdlen) || mdlen != 32)
		return sbx_fail(-SBX_EIO, "HMAC-SHA-256 failed");
	for (unsigned i = 0; i < mdlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return 0;
}
