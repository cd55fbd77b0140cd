/* The environment of a command: the workspace's base plus the call's overrides. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "util/error.h"

#define SBX_ENV_MAX_ENTRIES 4096

void sbx_strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

static size_t name_length(const char *entry)
{
	const char *eq = strchr(entry, '=');

	return eq ? (size_t)(eq - entry) : strlen(entry);
}

static bool valid_env_name(const char *entry, size_t len)
{
	if (len == 0 || (entry[0] >= '0' && entry[0] <= '9'))
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = entry[i];
		if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

/* Index of the entry named like `entry` in v[0..n), or n. */
static size_t find_entry(char **v, size_t n, const char *entry)
{
	size_t len = name_length(entry);

	for (size_t i = 0; i < n; i++)
		if (name_length(v[i]) == len && strncmp(v[i], entry, len) == 0)
			return i;
	return n;
}

static int apply_override(char **v, size_t *n, const char *entry)
{
	size_t at = find_entry(v, *n, entry);
	char *copy;

	if (!strchr(entry, '=')) {        /* a bare NAME removes NAME */
		if (at < *n) {
			free(v[at]);
			memmove(&v[at], &v[at + 1], (*n - at) * sizeof *v);
			(*n)--;
		}
		return 0;
	}
	copy = strdup(entry);
	if (!copy)
		return sbx_fail(-SBX_ENOMEM, "env: out of memory");
	if (at < *n) {
		free(v[at]);
		v[at] = copy;
	} else {
		v[(*n)++] = copy;
		v[*n] = NULL;
	}
	return 0;
}

int sbx_env_compose(char *const *base, const char *const *overrides, bool clear, char ***out)
{
	size_t nbase = 0, nover = 0, n = 0;
	char **v;
	int r;

	for (; base && !clear && base[nbase]; nbase++)
		;
	for (; overrides && overrides[nover]; nover++) {
		if (!valid_env_name(overrides[nover], name_length(overrides[nover])))
			return sbx_fail(-SBX_EINVAL, "env[%zu]: '%.64s' is not NAME=value or NAME",
			                nover, overrides[nover]);
		if (nover >= SBX_ENV_MAX_ENTRIES)
			return sbx_fail(-SBX_E2BIG, "env: more than %d entries", SBX_ENV_MAX_ENTRIES);
	}
	v = calloc(nbase + nover + 1, sizeof *v);
	if (!v)
		return sbx_fail(-SBX_ENOMEM, "env: out of memory");
	for (size_t i = 0; i < nbase; i++) {
		if ((r = apply_override(v, &n, base[i])) < 0)
			goto fail;
	}
	for (size_t i = 0; i < nover; i++) {
		if ((r = apply_override(v, &n, overrides[i])) < 0)
			goto fail;
	}
	*out = v;
	return 0;
fail:
	sbx_strv_free(v);
	return r;
}
