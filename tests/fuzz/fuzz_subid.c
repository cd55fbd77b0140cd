/* libFuzzer target for the subuid(5)/subgid(5) reader (src/util/subid.c). Beyond "no crash,
 * no hang", it checks what a root-run sandbox relies on: a range it is given never contains
 * id 0 (the host's root) nor runs past the last valid id, and is one the same text says
 * overlaps itself. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/subid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s\n", #cond); \
	abort(); } } while (0)

static void check_user(const char *text, size_t len, const char *user, const char *uid)
{
	struct sbx_subid_range r;

	if (!sbx_subid_find(text, len, user, uid, &r))
		return;
	CHECK(r.start > 0);
	CHECK(r.count > 0);
	CHECK((uint64_t)r.start + r.count - 1 <= SBX_SUBID_MAX_ID);
	CHECK(sbx_subid_overlaps(text, len, r.start, 1));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct sbx_subid_range first;

	check_user(text, size, "agentsbx", NULL);
	check_user(text, size, "a", "0");
	/* Whatever the first line names, as the owner: its range, when usable, is found. */
	if (size && memchr(text, ':', size)) {
		size_t n = (size_t)((const char *)memchr(text, ':', size) - text);
		char owner[64];

		if (n > 0 && n < sizeof owner && !memchr(text, '\n', n) && !memchr(text, '\0', n)) {
			memcpy(owner, text, n);
			owner[n] = '\0';
			check_user(text, size, owner, NULL);
			(void)sbx_subid_find(text, size, owner, owner, &first);
		}
	}
	(void)sbx_subid_overlaps(text, size, 0, UINT32_MAX);
	return 0;
}
