/* JSON values parsed with yajl's event API into a small tree of our own (yajl's tree API
 * leaks on malformed input). Used for configuration, tool arguments and protocol messages. */
#ifndef SBX_UTIL_JSON_H
#define SBX_UTIL_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum sbx_json_type {
	SBX_JSON_NULL,
	SBX_JSON_BOOL,
	SBX_JSON_INT,      /* an integer literal that fits int64_t */
	SBX_JSON_NUMBER,   /* any other number (fraction, exponent, or out of int64 range) */
	SBX_JSON_STRING,
	SBX_JSON_ARRAY,
	SBX_JSON_OBJECT
} sbx_json_type;

typedef struct sbx_json sbx_json;
struct sbx_json {
	sbx_json_type type;
	bool b;
	int64_t i;
	double d;
	char *str;          /* STRING: the bytes (NUL-terminated; may contain NUL, see len);
	                       NUMBER/INT: the literal as written */
	size_t len;
	size_t n;           /* ARRAY/OBJECT: number of items */
	sbx_json **items;   /* ARRAY/OBJECT: the values */
	char **keys;        /* OBJECT: the keys (NUL-terminated; key_lens for embedded NULs) */
	size_t *key_lens;
};

#define SBX_JSON_MAX_DEPTH 64

/* Parses text[0..len). On failure returns -SBX_EINVAL and writes a message ("invalid JSON at
 * byte 12: ...") into err. Duplicate object keys are refused (they hide values). */
int sbx_json_parse(const char *text, size_t len, sbx_json **out, char *err, size_t errlen);
void sbx_json_free(sbx_json *v);

/* Object member by key, or NULL. */
const sbx_json *sbx_json_get(const sbx_json *obj, const char *key);
/* The name of a type, for error messages ("string", "object", ...). */
const char *sbx_json_type_name(sbx_json_type t);
/* Serialises a value back to compact JSON (appends to b). */
struct sbx_buf;
void sbx_json_write(struct sbx_buf *b, const sbx_json *v);

#endif
