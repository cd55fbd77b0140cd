/* libFuzzer target for the JSON parser and writer, and the JSON string writer of buf.c.
 *
 * Beyond "no crash, no leak", it checks the properties callers rely on:
 *  - a parsed value serialises to valid UTF-8 JSON that parses again and serialises to the
 *    same text (the writer is a fixed point after one round);
 *  - any byte string written with sbx_buf_json_string parses back as a string, equal to the
 *    input whenever the input was valid UTF-8 without unpaired surrogates;
 *  - a failed parse leaves no tree and a message in the documented form. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "util/buf.h"
#include "util/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s\n", #cond); \
	abort(); } } while (0)

static char *write_json(const sbx_json *v, size_t *len)
{
	sbx_buf b = {0};
	char *out;

	sbx_json_write(&b, v);
	out = sbx_buf_steal(&b, len);
	CHECK(out != NULL);
	return out;
}

static void check_round_trip(const sbx_json *v)
{
	char err[256];
	sbx_json *again = NULL;
	size_t len1, len2;
	char *once = write_json(v, &len1), *twice;

	CHECK(sbx_utf8_valid(once, len1));
	CHECK(sbx_json_parse(once, len1, &again, err, sizeof err) == 0);
	CHECK(again != NULL && again->type == v->type && again->n == v->n);
	twice = write_json(again, &len2);
	CHECK(len1 == len2 && memcmp(once, twice, len1) == 0);
	sbx_json_free(again);
	free(once);
	free(twice);
}

static void check_parse(const uint8_t *data, size_t size)
{
	char err[256];
	sbx_json *v = NULL;
	int rc = sbx_json_parse((const char *)data, size, &v, err, sizeof err);

	if (rc < 0) {
		CHECK(v == NULL);
		CHECK(rc == -SBX_EINVAL || rc == -SBX_ENOMEM);
		CHECK(rc == -SBX_ENOMEM || strncmp(err, "invalid JSON at byte ", 21) == 0);
		return;
	}
	CHECK(rc == 0 && v != NULL);
	check_round_trip(v);
	sbx_json_free(v);
}

static void check_string_writer(const uint8_t *data, size_t size)
{
	char err[256];
	sbx_buf b = {0};
	sbx_json *v = NULL;
	size_t len;
	char *text;

	sbx_buf_json_string(&b, (const char *)data, size);
	text = sbx_buf_steal(&b, &len);
	CHECK(text != NULL);
	CHECK(sbx_utf8_valid(text, len));
	CHECK(sbx_json_parse(text, len, &v, err, sizeof err) == 0);
	CHECK(v->type == SBX_JSON_STRING);
	if (sbx_utf8_valid((const char *)data, size))
		CHECK(v->len == size && memcmp(v->str, data, size) == 0);
	sbx_json_free(v);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_parse(data, size);
	check_string_writer(data, size);
	return 0;
}
