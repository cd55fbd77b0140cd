/* Size-prefixed option structs: old callers (smaller structs) get defaults for what they lack,
 * new callers (larger structs) are refused only when they set something this library cannot
 * honour. */
#include <string.h>

#include "opts.h"
#include "util/error.h"

/* The offset of the first non-zero byte in [from, to) of p, or `to` when all are zero. */
static size_t first_set_byte(const unsigned char *p, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (p[i])
			return i;
	return to;
}

int sbx_opts_read(const void *in, void *out, size_t known, const char *type)
{
	size_t size, set;

	memset(out, 0, known);
	if (!in) {
		memcpy(out, &known, sizeof known);
		return 0;
	}
	memcpy(&size, in, sizeof size);
	if (size < sizeof size || size > SBX_OPTS_MAX_SIZE)
		return sbx_fail(-SBX_EINVAL, "%s.size is %zu: set it to sizeof(%s) (%zu here)", type,
		                size, type, known);
	memcpy(out, in, size < known ? size : known);
	memcpy(out, &known, sizeof known);
	if (size <= known)
		return 0;
	set = first_set_byte(in, known, size);
	if (set < size)
		return sbx_fail(-SBX_EINVAL, "%s: byte %zu of the caller's %zu-byte struct is set, "
		                "but this library's %s ends at byte %zu (built against newer headers "
		                "than libagentsbx %s? leave the newer fields zero, or upgrade)",
		                type, set, size, type, known, SBX_VERSION_STRING);
	return 0;
}
