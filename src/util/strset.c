/* See strset.h. The table doubles at 50% load, so a probe sequence stays short. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "strset.h"

static uint64_t hash_of(const char *key, size_t len)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)key[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static struct sbx_strset_slot *find(const sbx_strset *s, const char *key, size_t len)
{
	size_t i = (size_t)hash_of(key, len) & (s->cap - 1);

	for (;; i = (i + 1) & (s->cap - 1)) {
		struct sbx_strset_slot *slot = &s->slots[i];
		if (!slot->key || (slot->len == len && memcmp(slot->key, key, len) == 0))
			return slot;
	}
}

bool sbx_strset_has(const sbx_strset *s, const char *key, size_t len)
{
	return s->cap && find(s, key, len)->key != NULL;
}

static int grow(sbx_strset *s)
{
	sbx_strset bigger = { .cap = s->cap ? 2 * s->cap : 16 };

	if (!(bigger.slots = calloc(bigger.cap, sizeof *bigger.slots)))
		return -SBX_ENOMEM;
	for (size_t i = 0; i < s->cap; i++)
		if (s->slots[i].key)
			*find(&bigger, s->slots[i].key, s->slots[i].len) = s->slots[i];
	bigger.n = s->n;
	free(s->slots);
	*s = bigger;
	return 0;
}

int sbx_strset_add(sbx_strset *s, const char *key, size_t len)
{
	struct sbx_strset_slot *slot;

	if ((s->n + 1) * 2 > s->cap && grow(s) < 0)
		return -SBX_ENOMEM;
	slot = find(s, key, len);
	if (slot->key)
		return 0;
	if (!(slot->key = malloc(len + 1)))
		return -SBX_ENOMEM;
	memcpy(slot->key, key, len);
	slot->key[len] = '\0';
	slot->len = len;
	s->n++;
	return 1;
}

int sbx_strset_each(const sbx_strset *s, int (*fn)(const char *key, size_t len, void *ud),
                    void *ud)
{
	for (size_t i = 0; i < s->cap; i++)
		if (s->slots[i].key) {
			int r = fn(s->slots[i].key, s->slots[i].len, ud);
			if (r)
				return r;
		}
	return 0;
}

void sbx_strset_clear(sbx_strset *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->slots[i].key);
	free(s->slots);
	memset(s, 0, sizeof *s);
}

int sbx_strset_take(sbx_strset *to, sbx_strset *from)
{
	int r = 0;

	if (!to->n) {
		sbx_strset_clear(to);
		*to = *from;
		memset(from, 0, sizeof *from);
		return 0;
	}
	for (size_t i = 0; i < from->cap; i++)
		if (from->slots[i].key && sbx_strset_add(to, from->slots[i].key,
		                                          from->slots[i].len) < 0)
			r = -SBX_ENOMEM;
	sbx_strset_clear(from);
	return r;
}
