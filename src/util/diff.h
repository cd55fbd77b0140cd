/* Unified diffs of two texts (what the Write and Edit tools report). */
#ifndef SBX_UTIL_DIFF_H
#define SBX_UTIL_DIFF_H

#include <stddef.h>

#include "util/buf.h"

/* Appends to out the unified diff (3 lines of context) from a to b, with the headers
 * "--- <from_name>" and "+++ <to_name>". Identical texts give no output. A last line without
 * a newline is marked "\ No newline at end of file", as git does. Texts whose difference is too
 * large to compute in bounded time get one hunk replacing everything that differs. */
void sbx_diff_unified(sbx_buf *out, const char *from_name, const char *a, size_t alen,
                      const char *to_name, const char *b, size_t blen);

#endif
