/* subuid(5)/subgid(5) lines; see subid.h. */
#include <string.h>

#include "subid.h"

struct subid_line {
	const char *owner;
	size_t owner_len;
	struct sbx_subid_range range;
};

/* A decimal number without sign or leading junk, in [0, 2^32); false otherwise. */
static bool parse_u32(const char *s, size_t len, uint32_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > 10)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* "owner:start:count" (with no further field), owner non-empty. */
static bool parse_line(const char *s, size_t len, struct subid_line *out)
{
	const char *c1 = memchr(s, ':', len);
	const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - s)) : NULL;
	const char *end = s + len;

	if (!c1 || !c2 || c1 == s || memchr(c2 + 1, ':', (size_t)(end - c2 - 1)))
		return false;
	out->owner = s;
	out->owner_len = (size_t)(c1 - s);
	return parse_u32(c1 + 1, (size_t)(c2 - c1 - 1), &out->range.start) &&
	       parse_u32(c2 + 1, (size_t)(end - c2 - 1), &out->range.count);
}

/* A range a sandbox may map to: not empty, not id 0, not past the last valid id. */
static bool usable(const struct sbx_subid_range *r)
{
	return r->count > 0 && r->start > 0 &&
	       (uint64_t)r->start + r->count - 1 <= SBX_SUBID_MAX_ID;
}

static bool owner_is(const struct subid_line *l, const char *name)
{
	return name && *name && strlen(name) == l->owner_len &&
	       memcmp(l->owner, name, l->owner_len) == 0;
}

/* Calls fn for each well-formed line until it returns true; returns whether one did. */
static bool each_line(const char *text, size_t len,
                      bool (*fn)(const struct subid_line *l, void *ctx), void *ctx)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		struct subid_line l;

		if (n && p[n - 1] == '\r')
			n--;
		if (n && p[0] != '#' && parse_line(p, n, &l) && fn(&l, ctx))
			return true;
		p = nl ? nl + 1 : end;
	}
	return false;
}

struct find_ctx {
	const char *user, *uid_text;
	struct sbx_subid_range *out;
};

static bool matches_user(const struct subid_line *l, void *ctx)
{
	struct find_ctx *f = ctx;

	if (!(owner_is(l, f->user) || owner_is(l, f->uid_text)) || !usable(&l->range))
		return false;
	*f->out = l->range;
	return true;
}

bool sbx_subid_find(const char *text, size_t len, const char *user, const char *uid_text,
                    struct sbx_subid_range *out)
{
	struct find_ctx f = { user, uid_text, out };

	return text && each_line(text, len, matches_user, &f);
}

static bool overlaps(const struct subid_line *l, void *ctx)
{
	const struct sbx_subid_range *r = ctx;
	uint64_t a0 = l->range.start, a1 = a0 + l->range.count;
	uint64_t b0 = r->start, b1 = b0 + r->count;

	return l->range.count > 0 && a0 < b1 && b0 < a1;
}

bool sbx_subid_overlaps(const char *text, size_t len, uint32_t start, uint32_t count)
{
	struct sbx_subid_range r = { start, count };

	return text && count && each_line(text, len, overlaps, &r);
}
