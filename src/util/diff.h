/* Unified diffs of two texts (what the Write and Edit tools report). */
#ifndef SBX_UTIL_DIFF_H
#define SBX_UTIL_DIFF_H

#include <stddef.h>

#include "buf.h"

/* What a diff may cost. The bytes and lines counted are those of the part that differs
 * (from the first changed line to the last, plus the context), in either text: the common
 * head and tail are skipped at the cost of comparing them, so an Edit of a few lines of a
 * large file still gets its diff. */
typedef struct sbx_diff_limits {
	size_t max_bytes;    /* of the differing part of either text */
	size_t max_lines;    /* lines in the differing part of either text */
	size_t max_output;   /* bytes of diff text */
} sbx_diff_limits;

#define SBX_DIFF_MAX_BYTES ((size_t)4 << 20)
#define SBX_DIFF_MAX_LINES 50000
#define SBX_DIFF_MAX_OUTPUT ((size_t)1 << 20)

/* Appends to out the unified diff (3 lines of context) from a to b, with the headers
 * "--- <from_name>" and "+++ <to_name>". Identical texts give no output. A last line without
 * a newline is marked "\ No newline at end of file", as git does. Texts whose difference is
 * too large to compute in bounded time get one hunk replacing everything that differs.
 * lim NULL means the SBX_DIFF_MAX_* defaults. Returns 0 when the diff is in out, 1 when it
 * was omitted because it would pass a limit: then out is left as it was and why (when not
 * NULL) says which limit and the sizes. Out of memory sets out->oom. */
int sbx_diff_unified(sbx_buf *out, const char *from_name, const char *a, size_t alen,
                     const char *to_name, const char *b, size_t blen, const sbx_diff_limits *lim,
                     char *why, size_t why_len);

#endif
