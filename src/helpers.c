/* Finding the helper programs the library starts. The search order lets the build tree work
 * without installing (tests and `meson devenv` set SBX_HELPER_DIR; a library or CLI in the
 * build root finds build/helpers beside it) while an installed library uses libexecdir. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "sbx-build-config.h"
#include "util/error.h"

static char *helper_in_dir(const char *dir, const char *name)
{
	char *path = NULL;

	if (!dir || !*dir)
		return NULL;
	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return NULL;
	if (access(path, X_OK) == 0)
		return path;
	free(path);
	return NULL;
}

/* The directory holding the object this code was linked into: the shared library, or the
 * executable when the core is linked statically. */
static char *own_object_dir(void)
{
	Dl_info info;
	char *dir, *slash;

	if (dladdr((void *)own_object_dir, &info) == 0 || !info.dli_fname || info.dli_fname[0] != '/')
		return NULL;
	dir = strdup(info.dli_fname);
	if (!dir)
		return NULL;
	slash = strrchr(dir, '/');
	*slash = '\0';
	return dir;
}

int sbx_helper_path(const char *name, char **out)
{
	char *found = helper_in_dir(secure_getenv("SBX_HELPER_DIR"), name);
	char *own = NULL, *beside = NULL;

	if (!found && (own = own_object_dir()) && asprintf(&beside, "%s/helpers", own) >= 0)
		found = helper_in_dir(beside, name);
	free(own);
	free(beside);
	if (!found)
		found = helper_in_dir(SBX_LIBEXECDIR, name);
	if (!found)
		return sbx_fail(-SBX_ENOENT,
		                "helper program '%s' not found in $SBX_HELPER_DIR, beside the library "
		                "or in %s", name, SBX_LIBEXECDIR);
	*out = found;
	return 0;
}
