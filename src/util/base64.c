/* Standard base64 (RFC 4648 section 4): decoding offloaded data blocks and the Docker
 * Engine's X-Docker-Container-Path-Stat header, encoding the images Read returns. */
#include <stdint.h>
#include <stdlib.h>

#include <agentsbx/agentsbx.h>
#include "base64.h"

void sbx_base64_encode(const void *data, size_t len, char *out)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = data;

	for (; len >= 3; p += 3, len -= 3) {
		uint32_t v = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
		for (int i = 0; i < 4; i++)
			*out++ = alphabet[(v >> (18 - 6 * i)) & 63];
	}
	if (len) {
		uint32_t v = (uint32_t)p[0] << 16 | (len == 2 ? (uint32_t)p[1] << 8 : 0);
		*out++ = alphabet[v >> 18];
		*out++ = alphabet[(v >> 12) & 63];
		*out++ = len == 2 ? alphabet[(v >> 6) & 63] : '=';
		*out++ = '=';
	}
	*out = '\0';
}

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Standard base64; line breaks and blanks are skipped, the '=' padding may be left out. */
int sbx_base64_decode(const char *s, size_t n, unsigned char **out, size_t *outlen)
{
	unsigned char *o = malloc(n / 4 * 3 + 3);
	size_t chars = 0, pad = 0, len = 0;
	uint32_t acc = 0;

	if (!o)
		return -SBX_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '\n' || c == '\r' || c == ' ' || c == '\t')
			continue;
		if (c == '=') {
			pad++;
			continue;
		}
		int v = b64_value(c);
		if (v < 0 || pad) {
			free(o);
			return -SBX_EINVAL;
		}
		acc = acc << 6 | (uint32_t)v;
		if (++chars % 4 == 0) {
			o[len++] = (unsigned char)(acc >> 16);
			o[len++] = (unsigned char)(acc >> 8);
			o[len++] = (unsigned char)acc;
			acc = 0;
		}
	}
	size_t rest = chars % 4;
	if (rest == 1 || pad > 2 || (pad && (rest + pad) % 4 != 0)) {
		free(o);
		return -SBX_EINVAL;
	}
	if (rest == 2)
		o[len++] = (unsigned char)(acc >> 4);
	if (rest == 3) {
		o[len++] = (unsigned char)(acc >> 10);
		o[len++] = (unsigned char)(acc >> 2);
	}
	*out = o;
	*outlen = len;
	return 0;
}
