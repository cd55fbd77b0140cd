/* A set of byte strings (open addressing, FNV-1a): membership tests in O(1) for the git
 * guard's baselines and dirty lists. Keys may hold NUL bytes (they are length-counted). */
#ifndef SBX_UTIL_STRSET_H
#define SBX_UTIL_STRSET_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sbx_strset {
	struct sbx_strset_slot { char *key; size_t len; } *slots;
	size_t n, cap;
} sbx_strset;

bool sbx_strset_has(const sbx_strset *s, const char *key, size_t len);
/* 1 when added, 0 when it was there already, -SBX_ENOMEM. */
int sbx_strset_add(sbx_strset *s, const char *key, size_t len);
/* Calls fn for each key (in no particular order); a non-zero return stops the walk. */
int sbx_strset_each(const sbx_strset *s, int (*fn)(const char *key, size_t len, void *ud),
                    void *ud);
/* Empties the set, keeping nothing. */
void sbx_strset_clear(sbx_strset *s);
/* Moves everything of from into to (from ends empty); -SBX_ENOMEM if some key was lost. */
int sbx_strset_take(sbx_strset *to, sbx_strset *from);

#endif
