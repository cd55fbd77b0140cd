/* /etc/subuid and /etc/subgid: the subordinate id ranges (subuid(5)) a sandbox started by
 * root maps its users to. Pure text functions, so that tests and the fuzzer reach them. */
#ifndef SBX_UTIL_SUBID_H
#define SBX_UTIL_SUBID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The highest valid id: (uid_t)-1 means "no id" to the kernel. */
#define SBX_SUBID_MAX_ID 4294967294u

struct sbx_subid_range {
	uint32_t start;
	uint32_t count;
};

/* The first range of `user` (its name, or its uid written in decimal as uid_text; either may
 * be NULL) in text, a subuid(5) file: lines "owner:start:count", '#' comments and blank lines
 * skipped, malformed lines ignored as the shadow tools ignore them. A range that contains id
 * 0 (it would make the sandbox host root again) or runs past SBX_SUBID_MAX_ID does not count.
 * Returns true and fills *out when one is found. */
bool sbx_subid_find(const char *text, size_t len, const char *user, const char *uid_text,
                    struct sbx_subid_range *out);

/* Whether any well-formed line of text, whoever it belongs to, overlaps [start, start+count). */
bool sbx_subid_overlaps(const char *text, size_t len, uint32_t start, uint32_t count);

#endif
