/* JSON parsing with yajl's event API into sbx_json trees, and the compact writer.
 *
 * The parser owns every node from the moment it is created: each node is attached to its
 * parent (or becomes the root) before the callback returns, so on any failure freeing the
 * root frees everything. That is why the event API is used instead of yajl_tree, which leaks
 * on malformed input. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "buf.h"
#include "cleanup.h"
#include "error.h"
#include "json.h"

#define JSON_MIN_ITEMS 4
#define JSON_STR_(x) #x
#define JSON_STR(x) JSON_STR_(x)

typedef struct json_parser {
	sbx_json *root;
	sbx_json *open[SBX_JSON_MAX_DEPTH];   /* containers being filled, outermost first */
	size_t cap[SBX_JSON_MAX_DEPTH];       /* allocated slots of each open container */
	size_t depth;
	char *key;                            /* the key of the next object member */
	size_t key_len;
	const char *error;                    /* why a callback stopped the parse */
	char *error_detail;                   /* optional text appended to error (allocated) */
	bool oom;
} json_parser;

static void json_free_children(sbx_json *v)
{
	for (size_t i = 0; i < v->n; i++) {
		sbx_json_free(v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->key_lens);
}

void sbx_json_free(sbx_json *v)
{
	if (!v)
		return;
	json_free_children(v);
	free(v->str);
	free(v);
}

static int parser_fail(json_parser *p, const char *why)
{
	p->error = why;
	return 0;
}

static int parser_oom(json_parser *p)
{
	p->oom = true;
	return parser_fail(p, "out of memory");
}

/* A copy of s[0..len) with a NUL after it, since yajl hands out unterminated slices. */
static char *copy_bytes(const void *s, size_t len)
{
	char *c;

	if (len == SIZE_MAX)
		return NULL;
	c = malloc(len + 1);
	if (!c)
		return NULL;
	if (len)
		memcpy(c, s, len);
	c[len] = '\0';
	return c;
}

/* Grows the open container's arrays so one more member fits. */
static bool container_reserve(json_parser *p, sbx_json *c)
{
	size_t *cap = &p->cap[p->depth - 1];
	size_t ncap;
	void *items, *keys, *lens;

	if (c->n < *cap)
		return true;
	ncap = *cap ? *cap * 2 : JSON_MIN_ITEMS;
	if (ncap > SIZE_MAX / sizeof(void *))
		return false;
	/* Each array is replaced as soon as its realloc succeeds, so a failure halfway never
	 * leaves a dangling pointer; the capacity grows only once all of them did. */
	items = realloc(c->items, ncap * sizeof *c->items);
	if (!items)
		return false;
	c->items = items;
	if (c->type == SBX_JSON_OBJECT) {
		keys = realloc(c->keys, ncap * sizeof *c->keys);
		if (!keys)
			return false;
		c->keys = keys;
		lens = realloc(c->key_lens, ncap * sizeof *c->key_lens);
		if (!lens)
			return false;
		c->key_lens = lens;
	}
	*cap = ncap;
	return true;
}

/* Creates a node and hands it to its parent (or makes it the root) at once. */
static sbx_json *parser_add(json_parser *p, sbx_json_type type)
{
	sbx_json *v, *parent;

	if (p->depth && !container_reserve(p, p->open[p->depth - 1]))
		return NULL;
	v = calloc(1, sizeof *v);
	if (!v)
		return NULL;
	v->type = type;
	if (!p->depth) {
		/* yajl refuses a second top-level value, so the root is set once. */
		p->root = v;
		return v;
	}
	parent = p->open[p->depth - 1];
	if (parent->type == SBX_JSON_OBJECT) {
		/* yajl always reports the key first; an empty one keeps the tree sound anyway. */
		if (!p->key) {
			p->key = copy_bytes("", 0);
			p->key_len = 0;
			if (!p->key) {
				free(v);
				return NULL;
			}
		}
		parent->keys[parent->n] = SBX_TAKE_PTR(p->key);
		parent->key_lens[parent->n] = p->key_len;
	}
	parent->items[parent->n++] = v;
	return v;
}

static int on_null(void *ctx)
{
	json_parser *p = ctx;

	return parser_add(p, SBX_JSON_NULL) ? 1 : parser_oom(p);
}

static int on_boolean(void *ctx, int value)
{
	json_parser *p = ctx;
	sbx_json *v = parser_add(p, SBX_JSON_BOOL);

	if (!v)
		return parser_oom(p);
	v->b = value != 0;
	return 1;
}

static bool literal_is_integer(const char *s)
{
	return !strpbrk(s, ".eE");
}

/* Integers that fit int64_t become INT; everything else NUMBER, with d = ±HUGE_VAL (or 0)
 * where strtod overflows (underflows): the literal is kept either way. */
static int on_number(void *ctx, const char *s, size_t len)
{
	json_parser *p = ctx;
	sbx_json *v = parser_add(p, SBX_JSON_NUMBER);
	long long i;
	char *end;

	if (!v)
		return parser_oom(p);
	v->str = copy_bytes(s, len);
	if (!v->str)
		return parser_oom(p);
	v->len = len;
	if (literal_is_integer(v->str)) {
		errno = 0;
		i = strtoll(v->str, &end, 10);
		if (errno == 0 && *end == '\0') {
			v->type = SBX_JSON_INT;
			v->i = i;
			v->d = (double)i;
			return 1;
		}
	}
	v->d = strtod(v->str, NULL);
	return 1;
}

/* yajl's own UTF-8 check lets overlong forms, surrogates and code points above U+10FFFF
 * through, and decodes a lone "\udc00" escape into a surrogate. Values we keep must be
 * strict UTF-8, so every decoded string is checked again. */
static int on_string(void *ctx, const unsigned char *s, size_t len)
{
	json_parser *p = ctx;
	sbx_json *v;

	if (!sbx_utf8_valid((const char *)s, len))
		return parser_fail(p, "invalid UTF-8 in string");
	v = parser_add(p, SBX_JSON_STRING);
	if (!v)
		return parser_oom(p);
	v->str = copy_bytes(s, len);
	if (!v->str)
		return parser_oom(p);
	v->len = len;
	return 1;
}

static int on_map_key(void *ctx, const unsigned char *s, size_t len)
{
	json_parser *p = ctx;

	if (!sbx_utf8_valid((const char *)s, len))
		return parser_fail(p, "invalid UTF-8 in object key");
	free(p->key);
	p->key = copy_bytes(s, len);
	if (!p->key)
		return parser_oom(p);
	p->key_len = len;
	return 1;
}

static int on_start(json_parser *p, sbx_json_type type)
{
	sbx_json *v;

	if (p->depth >= SBX_JSON_MAX_DEPTH)
		return parser_fail(p, "nested deeper than " JSON_STR(SBX_JSON_MAX_DEPTH)
		                      " levels");
	v = parser_add(p, type);
	if (!v)
		return parser_oom(p);
	p->open[p->depth] = v;
	p->cap[p->depth] = 0;
	p->depth++;
	return 1;
}

static int on_start_map(void *ctx)
{
	return on_start(ctx, SBX_JSON_OBJECT);
}

static int on_start_array(void *ctx)
{
	return on_start(ctx, SBX_JSON_ARRAY);
}

typedef struct key_ref {
	const char *key;
	size_t len;
} key_ref;

static int key_ref_cmp(const void *a, const void *b)
{
	const key_ref *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->key, y->key, n);

	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

/* Finds a key that occurs twice. Sorting copies keeps this O(n log n) however many members
 * an object has, where comparing each new key with all earlier ones would be quadratic. */
static int object_find_duplicate(const sbx_json *obj, const key_ref **dup, key_ref **refs)
{
	key_ref *r;

	*dup = NULL;
	*refs = NULL;
	if (obj->n < 2)
		return 0;
	r = calloc(obj->n, sizeof *r);
	if (!r)
		return -SBX_ENOMEM;
	for (size_t i = 0; i < obj->n; i++)
		r[i] = (key_ref){obj->keys[i], obj->key_lens[i]};
	qsort(r, obj->n, sizeof *r, key_ref_cmp);
	*refs = r;
	for (size_t i = 1; i < obj->n; i++) {
		if (key_ref_cmp(&r[i - 1], &r[i]) == 0) {
			*dup = &r[i];
			break;
		}
	}
	return 0;
}

/* The key, JSON-quoted and cut short, for the message about it. */
static char *describe_key(const char *key, size_t len)
{
	sbx_buf b = {0};
	size_t shown = len > 64 ? 64 : len;

	sbx_buf_json_string(&b, key, shown);
	if (shown < len)
		sbx_buf_puts(&b, "...");
	return sbx_buf_steal(&b, NULL);
}

static int on_end_map(void *ctx)
{
	json_parser *p = ctx;
	sbx_json *obj = p->open[p->depth - 1];
	_cleanup_free_ key_ref *refs = NULL;
	const key_ref *dup;

	if (object_find_duplicate(obj, &dup, &refs) < 0)
		return parser_oom(p);
	if (dup) {
		p->error_detail = describe_key(dup->key, dup->len);
		return parser_fail(p, "duplicate object key");
	}
	p->depth--;
	return 1;
}

static int on_end_array(void *ctx)
{
	json_parser *p = ctx;

	p->depth--;
	return 1;
}

static const yajl_callbacks json_callbacks = {
	.yajl_null = on_null,
	.yajl_boolean = on_boolean,
	.yajl_number = on_number,
	.yajl_string = on_string,
	.yajl_start_map = on_start_map,
	.yajl_map_key = on_map_key,
	.yajl_end_map = on_end_map,
	.yajl_start_array = on_start_array,
	.yajl_end_array = on_end_array,
};

static void yajl_freep(yajl_handle *h)
{
	if (*h)
		yajl_free(*h);
}

static void copy_error(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void copy_error(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* yajl's message without its "parse error: " / "lexical error: " prefix and the trailing
 * period and newline, so it reads as the end of our own sentence. */
static void yajl_reason(yajl_handle h, const unsigned char *text, size_t len, char *out,
                        size_t outlen)
{
	unsigned char *msg = yajl_get_error(h, 0, text, len);
	const char *s = msg ? (const char *)msg : "malformed input";
	const char *colon = strstr(s, "error: ");
	size_t n;

	if (colon)
		s = colon + strlen("error: ");
	n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '.' || s[n - 1] == ' '))
		n--;
	snprintf(out, outlen, "%.*s", (int)n, s);
	if (msg)
		yajl_free_error(h, msg);
}

static int hex4(const unsigned char *s)
{
	int v = 0;

	for (int i = 0; i < 4; i++) {
		unsigned char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* yajl decodes a high-surrogate escape that is not followed by a low one into "?", or pairs
 * it with whatever \u escape follows into an unrelated character, without a word. Both hide
 * what the text said, so such escapes are refused. Runs on text yajl accepted, where every
 * backslash sits inside a string and starts a complete escape. Returns the offset or -1. */
static ptrdiff_t find_unpaired_surrogate(const unsigned char *text, size_t len)
{
	const unsigned char *p = text, *end = text + len;

	while ((p = memchr(p, '\\', (size_t)(end - p))) && end - p >= 2) {
		int cp, low;

		if (p[1] != 'u' || end - p < 6) {
			p += 2;
			continue;
		}
		cp = hex4(p + 2);
		if (cp >= 0xDC00 && cp <= 0xDFFF)
			return p - text;
		if (cp < 0xD800 || cp > 0xDBFF) {
			p += 6;
			continue;
		}
		low = end - p >= 12 && p[6] == '\\' && p[7] == 'u' ? hex4(p + 8) : -1;
		if (low < 0xDC00 || low > 0xDFFF)
			return p - text;
		p += 12;
	}
	return -1;
}

/* Feeds the whole text to yajl. On failure *at is about where parsing stopped. */
static yajl_status json_run(yajl_handle h, json_parser *p, const unsigned char *text,
                            size_t len, size_t *at)
{
	yajl_status st;
	ptrdiff_t bad;

	st = yajl_parse(h, text, len);
	*at = yajl_get_bytes_consumed(h);
	if (st != yajl_status_ok)
		return st;
	/* A number at the very end is only reported here, so callbacks may still fail. Finishing
	 * feeds yajl a byte of its own: any error lies at the end of the input. */
	st = yajl_complete_parse(h);
	*at = len;
	if (st != yajl_status_ok)
		return st;
	if (!p->root) {
		parser_fail(p, "no value");
		return yajl_status_error;
	}
	bad = find_unpaired_surrogate(text, len);
	if (bad >= 0) {
		*at = (size_t)bad;
		parser_fail(p, "unpaired surrogate in \\u escape");
		return yajl_status_error;
	}
	return yajl_status_ok;
}

static int json_failure(yajl_handle h, const json_parser *p, const unsigned char *text,
                        size_t len, size_t at, char *err, size_t errlen)
{
	char reason[256];

	if (p->oom) {
		copy_error(err, errlen, "out of memory");
		return -SBX_ENOMEM;
	}
	if (p->error)
		snprintf(reason, sizeof reason, "%s%s%s", p->error, p->error_detail ? " " : "",
		         p->error_detail ? p->error_detail : "");
	else
		yajl_reason(h, text, len, reason, sizeof reason);
	copy_error(err, errlen, "invalid JSON at byte %zu: %s", at, reason);
	return -SBX_EINVAL;
}

int sbx_json_parse(const char *text, size_t len, sbx_json **out, char *err, size_t errlen)
{
	__attribute__((cleanup(yajl_freep))) yajl_handle h = NULL;
	json_parser p = {0};
	const unsigned char *u = (const unsigned char *)(text ? text : "");
	size_t at = 0;
	int rc = 0;

	if (err && errlen)
		err[0] = '\0';
	if (!out || (!text && len)) {
		copy_error(err, errlen, "invalid JSON: no input");
		return -SBX_EINVAL;
	}
	*out = NULL;
	/* yajl's defaults are what we want (strings validated, no comments, no trailing garbage,
	 * one value), so nothing is configured that could loosen them. */
	h = yajl_alloc(&json_callbacks, NULL, &p);
	if (!h) {
		copy_error(err, errlen, "out of memory");
		return -SBX_ENOMEM;
	}
	if (json_run(h, &p, u, len, &at) != yajl_status_ok) {
		rc = json_failure(h, &p, u, len, at, err, errlen);
		sbx_json_free(p.root);
		p.root = NULL;
	}
	free(p.key);
	free(p.error_detail);
	*out = p.root;
	return rc;
}

const sbx_json *sbx_json_get(const sbx_json *obj, const char *key)
{
	size_t len;

	if (!obj || obj->type != SBX_JSON_OBJECT || !key)
		return NULL;
	len = strlen(key);
	for (size_t i = 0; i < obj->n; i++)
		if (obj->key_lens[i] == len && memcmp(obj->keys[i], key, len) == 0)
			return obj->items[i];
	return NULL;
}

const char *sbx_json_type_name(sbx_json_type t)
{
	switch (t) {
	case SBX_JSON_NULL: return "null";
	case SBX_JSON_BOOL: return "boolean";
	case SBX_JSON_INT: return "integer";
	case SBX_JSON_NUMBER: return "number";
	case SBX_JSON_STRING: return "string";
	case SBX_JSON_ARRAY: return "array";
	case SBX_JSON_OBJECT: return "object";
	default: return "unknown";
	}
}

/* Numbers from the parser keep their literal, so they round-trip exactly; values built by
 * code have none. JSON has no infinities or NaN, so those become null. */
static void json_write_number(sbx_buf *b, const sbx_json *v)
{
	if (v->str && v->len) {
		sbx_buf_append(b, v->str, v->len);
	} else if (v->type == SBX_JSON_INT) {
		sbx_buf_printf(b, "%" PRId64, v->i);
	} else if (isfinite(v->d)) {
		sbx_buf_printf(b, "%.17g", v->d);
	} else {
		sbx_buf_puts(b, "null");
	}
}

void sbx_json_write(sbx_buf *b, const sbx_json *v)
{
	if (!v) {
		sbx_buf_puts(b, "null");
		return;
	}
	switch (v->type) {
	case SBX_JSON_NULL:
		sbx_buf_puts(b, "null");
		break;
	case SBX_JSON_BOOL:
		sbx_buf_puts(b, v->b ? "true" : "false");
		break;
	case SBX_JSON_INT:
	case SBX_JSON_NUMBER:
		json_write_number(b, v);
		break;
	case SBX_JSON_STRING:
		sbx_buf_json_string(b, v->str ? v->str : "", v->str ? v->len : 0);
		break;
	case SBX_JSON_ARRAY:
		sbx_buf_append(b, "[", 1);
		for (size_t i = 0; i < v->n; i++) {
			if (i)
				sbx_buf_append(b, ",", 1);
			sbx_json_write(b, v->items[i]);
		}
		sbx_buf_append(b, "]", 1);
		break;
	case SBX_JSON_OBJECT:
		sbx_buf_append(b, "{", 1);
		for (size_t i = 0; i < v->n; i++) {
			if (i)
				sbx_buf_append(b, ",", 1);
			sbx_buf_json_string(b, v->keys[i], v->key_lens[i]);
			sbx_buf_append(b, ":", 1);
			sbx_json_write(b, v->items[i]);
		}
		sbx_buf_append(b, "}", 1);
		break;
	default:
		sbx_buf_puts(b, "null");
		break;
	}
}
