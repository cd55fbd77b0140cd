/* The one reader of the size-prefixed option structs public calls take. */
#ifndef SBX_OPTS_H
#define SBX_OPTS_H

#include <stddef.h>

/* The largest size a caller's option struct may claim: far above any struct the API will
 * grow to, low enough that a garbage size is caught instead of read past. */
#define SBX_OPTS_MAX_SIZE 4096

/* Reads the caller's struct `in` (NULL: every option at its default) into `out`, the
 * library's struct of `known` bytes: copies the prefix both know and zero-fills the rest, so
 * fields an older caller's smaller struct lacks read as defaults. A larger struct (built
 * against newer headers) is accepted only when every byte this library does not know is
 * zero; a field set there would otherwise be dropped silently. A size below sizeof(size_t) or
 * above SBX_OPTS_MAX_SIZE, or a set unknown field, fails with -SBX_EINVAL naming `type`.
 * out->size is `known` on success. */
int sbx_opts_read(const void *in, void *out, size_t known, const char *type);

/* sbx_opts_read for a struct type the caller names once. */
#define SBX_OPTS_READ(in, out, type) sbx_opts_read((in), (out), sizeof(type), #type)

#endif
