/* Which host directories may be a workspace's workdir (internal.h: sbx_workdir_check).
 *
 * A workdir is where commands write, as the caller: "workdir": "/" let a command write into
 * the host's / and read /etc/shadow as root. So / and the system trees are refused - the
 * top-level system folders themselves (/usr, /etc, /bin, /sbin, /lib*, /boot, /dev, /proc,
 * /sys, /run, /var) and anything below those whose every file is the system's (/proc, /sys,
 * /dev, /etc, /usr, /boot, /bin, /sbin, /lib*) - unless the config opts in with
 * "unsafe_allow_system_workdir": true. /var/... and /run/... below the top stay allowed
 * (/var/lib/agents/ws1, /run/user/1000/ws). The check is made on the path with every link
 * resolved, before anything is created (a workdir to be made below a link into /etc must not
 * make a folder in /etc first) and again once the workdir exists. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "util/cleanup.h"
#include "util/error.h"

#define OPT_IN "unsafe_allow_system_workdir"

/* Top-level folders that are refused themselves; the first ones also with all below. */
static const char *const top_level[] = {
	"proc", "sys", "dev", "etc", "usr", "boot", "bin", "sbin",
	"run", "var",
};
#define WHOLE_TREES 8       /* top_level[0..7]: refused below too */

/* /lib, /lib32, /lib64, /libx32, /libexec...: "lib*". */
static bool is_lib(const char *name, size_t n)
{
	return n >= 3 && !strncmp(name, "lib", 3);
}

/* The system tree resolved lies in ("/etc"), or NULL when it is an allowed place. */
static const char *system_tree(const char *resolved, char *tree, size_t len)
{
	const char *name = resolved + 1;
	size_t n = strcspn(name, "/");
	bool below = name[n] == '/' && name[n + 1];

	if (!n) {
		snprintf(tree, len, "/");
		return tree;
	}
	snprintf(tree, len, "/%.*s", (int)n, name);
	if (is_lib(name, n))
		return tree;
	for (size_t i = 0; i < SBX_ARRAY_SIZE(top_level); i++)
		if (strlen(top_level[i]) == n && !strncmp(name, top_level[i], n))
			return !below || i < WHOLE_TREES ? tree : NULL;
	return NULL;
}

/* path with every existing part resolved (realpath of its longest existing prefix, then the
 * rest as written: parse_workdir left no "." or ".." in it). */
static int resolve_planned(const char *path, char out[PATH_MAX])
{
	char prefix[PATH_MAX];
	size_t keep = strlen(path);

	if (keep >= sizeof prefix)
		return -ENAMETOOLONG;
	memcpy(prefix, path, keep + 1);
	for (;;) {
		char resolved[PATH_MAX];

		if (realpath(keep ? prefix : "/", resolved)) {
			const char *rest = path + keep;
			int n = snprintf(out, PATH_MAX, "%s%s", strcmp(resolved, "/") ? resolved : "",
			                 *rest ? rest : (strcmp(resolved, "/") ? "" : "/"));
			return n >= PATH_MAX ? -ENAMETOOLONG : 0;
		}
		if (errno != ENOENT)
			return -errno;
		char *slash = strrchr(prefix, '/');
		keep = slash ? (size_t)(slash - prefix) : 0;
		prefix[keep] = '\0';
	}
}

int sbx_workdir_check(const sbx_config *cfg, const char *path, bool exists)
{
	char resolved[PATH_MAX], tree[NAME_MAX + 2];
	const char *sys;
	int r;

	if (cfg->allow_system_workdir)
		return 0;
	if (exists)
		r = realpath(path, resolved) ? 0 : -errno;
	else
		r = resolve_planned(path, resolved);
	if (r < 0)
		return 0;     /* no such path yet: making it reports what is wrong */
	if (!(sys = system_tree(resolved, tree, sizeof tree)))
		return 0;
	return sbx_fail(-SBX_ECONFIG, "config: key 'workdir': %s%s%s is %s of the host's "
	                "system (%s): its commands would change the host's system files and read "
	                "its secrets; refused unless the config sets \"" OPT_IN "\": true",
	                path, strcmp(path, resolved) ? ", resolved " : "",
	                strcmp(path, resolved) ? resolved : "",
	                strcmp(resolved, sys) ? "inside a folder" : "a folder", sys);
}
