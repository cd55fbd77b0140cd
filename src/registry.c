/* The backends this process knows: built-ins, ones registered at run time, and plugins loaded
 * with dlopen from the plugin directories the first time their name is asked for. */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "sbx-build-config.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/forksafe.h"

#define SBX_BUILTIN_BACKEND(n) extern const sbx_backend_ops sbx_backend_##n;
#include "sbx-builtin-backends.h"
#undef SBX_BUILTIN_BACKEND

static const sbx_backend_ops *const builtin_backends[] = {
#define SBX_BUILTIN_BACKEND(n) &sbx_backend_##n,
#include "sbx-builtin-backends.h"
#undef SBX_BUILTIN_BACKEND
};

/* Every backend the project documents; their names are valid config sections even where
 * this build lacks them, so one config file can carry options for several backends. */
static const char *const documented_backends[] = {
	"local", "ns", "bwrap", "docker", "k8s", "e2b", "daytona", "opensandbox",
};

#define SBX_MAX_BACKENDS 64

SBX_FORK_SAFE_MUTEX(registry_lock)
static sbx_backend_ops *registered[SBX_MAX_BACKENDS]; /* full-size copies; never freed */
static size_t n_registered;

/* The fields every ops table must have, whatever the size it was built with. */
#define SBX_OPS_MIN_SIZE (offsetof(sbx_backend_ops, proc_release) + sizeof(void (*)(void *)))

static const sbx_backend_ops *find_locked(const char *name)
{
	for (size_t i = 0; i < SBX_ARRAY_SIZE(builtin_backends); i++)
		if (strcmp(builtin_backends[i]->name, name) == 0)
			return builtin_backends[i];
	for (size_t i = 0; i < n_registered; i++)
		if (strcmp(registered[i]->name, name) == 0)
			return registered[i];
	return NULL;
}

static int check_ops(const sbx_backend_ops *ops, const char *origin)
{
	if (!ops)
		return sbx_fail(-SBX_EINVAL, "backend %s: no ops table", origin);
	if (ops->size < sizeof ops->size + sizeof ops->abi_version)
		return sbx_fail(-SBX_EINVAL, "backend %s: ops.size %zu is too small", origin, ops->size);
	if (ops->abi_version != SBX_BACKEND_ABI_VERSION)
		return sbx_fail(-SBX_EABI,
		                "backend %s was built for backend ABI version %u; this library "
		                "speaks version %d", origin, ops->abi_version, SBX_BACKEND_ABI_VERSION);
	if (ops->size < SBX_OPS_MIN_SIZE)
		return sbx_fail(-SBX_EINVAL, "backend %s: ops.size %zu is too small", origin, ops->size);
	if (!ops->name || !sbx_config_valid_backend_name(ops->name))
		return sbx_fail(-SBX_EINVAL, "backend %s: name must match [a-z0-9_]{1,32}", origin);
	if (!ops->open || !ops->close || !ops->root || !ops->spawn || !ops->proc_wait ||
	    !ops->proc_signal || !ops->proc_kill || !ops->proc_release)
		return sbx_fail(-SBX_EINVAL, "backend %s: a required operation is NULL", origin);
	if ((ops->caps & SBX_BACKEND_CAP_HOST_FILES) && !ops->host_dir)
		return sbx_fail(-SBX_EINVAL, "backend %s: HOST_FILES needs host_dir()", origin);
	return 0;
}

int sbx_backend_caps(const sbx_backend_ops *ops, const char *options_json, uint32_t *caps)
{
	uint32_t asked = ops->caps;
	int r;

	*caps = ops->caps;
	if (!ops->workspace_caps)
		return 0;
	if ((r = ops->workspace_caps(options_json ? options_json : "{}", &asked)) < 0)
		return r;
	*caps = asked & ops->caps;
	return 0;
}

/* Copies the table into one of our size, so fields a smaller (older) table lacks read NULL. */
static int register_locked(const sbx_backend_ops *ops, const char *origin)
{
	sbx_backend_ops *copy;
	int r = check_ops(ops, origin);

	if (r < 0)
		return r;
	if (find_locked(ops->name))
		return sbx_fail(-SBX_EEXIST, "backend '%s' is already registered", ops->name);
	if (n_registered == SBX_MAX_BACKENDS)
		return sbx_fail(-SBX_ENOSPC, "too many backends registered");
	copy = calloc(1, sizeof *copy);
	if (!copy)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	memcpy(copy, ops, ops->size < sizeof *copy ? ops->size : sizeof *copy);
	copy->size = sizeof *copy;
	registered[n_registered++] = copy;
	return 0;
}

int sbx_backend_register(const sbx_backend_ops *ops)
{
	int r;

	pthread_mutex_lock(&registry_lock);
	r = register_locked(ops, ops && ops->name ? ops->name : "(unnamed)");
	pthread_mutex_unlock(&registry_lock);
	return r;
}

/* Calls fn for each plugin directory: $SBX_BACKEND_PATH entries first, then the install dir. */
static int for_each_plugin_dir(int (*fn)(const char *dir, void *ctx), void *ctx)
{
	const char *env = secure_getenv("SBX_BACKEND_PATH");
	_cleanup_free_ char *copy = env ? strdup(env) : NULL;
	char *save = NULL;
	int r;

	for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir;
	     dir = strtok_r(NULL, ":", &save))
		if (*dir == '/' && (r = fn(dir, ctx)) != 0)
			return r;
	return fn(SBX_PLUGINDIR, ctx);
}

struct load_ctx {
	const char *name;
	int result;       /* 0 = not found yet */
};

static int load_plugin_file(const char *path, const char *expected_name)
{
	const sbx_backend_ops *(*entry)(void);
	const sbx_backend_ops *ops;
	void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	int r;

	if (!handle)
		return sbx_fail(-SBX_EBACKEND, "backend plugin %s: %s", path, dlerror());
	*(void **)&entry = dlsym(handle, SBX_BACKEND_ENTRY_SYMBOL);
	if (!entry) {
		dlclose(handle);
		return sbx_fail(-SBX_EBACKEND, "backend plugin %s: no symbol %s", path,
		                SBX_BACKEND_ENTRY_SYMBOL);
	}
	ops = entry();
	/* A file must not impersonate another backend: compare names before anything else. */
	if (ops && ops->size >= SBX_OPS_MIN_SIZE && ops->abi_version == SBX_BACKEND_ABI_VERSION &&
	    ops->name && strcmp(ops->name, expected_name) != 0)
		r = sbx_fail(-SBX_EBACKEND, "backend plugin %s calls itself '%s', not '%s'", path,
		             ops->name, expected_name);
	else
		r = check_ops(ops, path);
	if (r == 0)
		r = register_locked(ops, path);
	if (r < 0)
		dlclose(handle);
	/* On success the handle stays open for the life of the process: the ops point into it. */
	return r;
}

static int try_plugin_dir(const char *dir, void *opaque)
{
	struct load_ctx *ctx = opaque;
	_cleanup_free_ char *path = NULL;

	if (asprintf(&path, "%s/%s.so", dir, ctx->name) < 0)
		return 0;
	if (access(path, R_OK) != 0)
		return 0;
	ctx->result = load_plugin_file(path, ctx->name);
	return 1;
}

int sbx_registry_find(const char *name, const sbx_backend_ops **ops)
{
	struct load_ctx ctx = { .name = name, .result = 0 };
	int r = 0;

	if (!name || !sbx_config_valid_backend_name(name))
		return sbx_fail(-SBX_EBACKEND, "backend name '%s' is not valid", name ? name : "");
	pthread_mutex_lock(&registry_lock);
	*ops = find_locked(name);
	if (!*ops && for_each_plugin_dir(try_plugin_dir, &ctx) != 0) {
		r = ctx.result;
		if (r == 0)
			*ops = find_locked(name);
	}
	pthread_mutex_unlock(&registry_lock);
	if (r < 0)
		return r;
	if (!*ops)
		return sbx_fail(-SBX_EBACKEND,
		                "unknown backend '%s': not built in and no %s.so in $SBX_BACKEND_PATH "
		                "or %s", name, name, SBX_PLUGINDIR);
	return 0;
}

bool sbx_registry_is_backend_name(const char *name)
{
	bool known = false;

	for (size_t i = 0; i < SBX_ARRAY_SIZE(documented_backends); i++)
		if (strcmp(documented_backends[i], name) == 0)
			return true;
	pthread_mutex_lock(&registry_lock);
	known = find_locked(name) != NULL;
	pthread_mutex_unlock(&registry_lock);
	return known;
}

/* Loads every plugin in a directory so that probing lists them. Errors are recorded per
 * plugin in the report rather than failing the whole probe. */
struct scan_ctx {
	sbx_buf *report;
	bool *first;
};

/* "network": the modes the backend can enforce. "host" is there so that a harness (and
 * doctor) can see which backends would share the host's network, and that "local" always does. */
static void network_modes(sbx_buf *out, uint32_t caps)
{
	static const struct { uint32_t cap; const char *mode; } modes[] = {
		{ SBX_BACKEND_CAP_NETWORK_NONE, "none" },
		{ SBX_BACKEND_CAP_NETWORK_ALLOWLIST, "allowlist" },
		{ SBX_BACKEND_CAP_NETWORK_HOST, "host" },
	};
	bool any = false;

	sbx_buf_puts(out, ",\"network\":[");
	for (size_t i = 0; i < SBX_ARRAY_SIZE(modes); i++)
		if (caps & modes[i].cap) {
			sbx_buf_printf(out, "%s\"%s\"", any ? "," : "", modes[i].mode);
			any = true;
		}
	sbx_buf_puts(out, "]");
}

static void probe_one(sbx_buf *out, bool *first, const char *name, const sbx_backend_ops *ops,
                      const char *load_error)
{
	char detail[512] = "";
	int r;

	if (ops && ops->probe) {
		r = ops->probe(detail, sizeof detail);
		detail[sizeof detail - 1] = '\0';
	} else {
		r = ops ? 0 : -SBX_EBACKEND;
		snprintf(detail, sizeof detail, "%s", ops ? "no probe; assumed available" : load_error);
	}
	sbx_buf_puts(out, *first ? "{\"backend\":" : ",{\"backend\":");
	*first = false;
	sbx_buf_json_string(out, name, strlen(name));
	sbx_buf_printf(out, ",\"available\":%s,\"detail\":", r == 0 ? "true" : "false");
	sbx_buf_json_string(out, detail, strlen(detail));
	if (ops)
		network_modes(out, ops->caps);
	sbx_buf_puts(out, "}");
}

static int scan_plugin_dir(const char *dir, void *opaque)
{
	struct scan_ctx *ctx = opaque;
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char name[64];
		const sbx_backend_ops *ops;
		struct load_ctx load;

		if (len < 4 || len - 3 >= sizeof name || strcmp(e->d_name + len - 3, ".so") != 0)
			continue;
		memcpy(name, e->d_name, len - 3);
		name[len - 3] = '\0';
		if (!sbx_config_valid_backend_name(name))
			continue;
		pthread_mutex_lock(&registry_lock);
		ops = find_locked(name);
		pthread_mutex_unlock(&registry_lock);
		if (ops)
			continue;     /* already listed (built in, or found earlier in the path) */
		load = (struct load_ctx){ .name = name };
		pthread_mutex_lock(&registry_lock);
		try_plugin_dir(dir, &load);
		ops = load.result == 0 ? find_locked(name) : NULL;
		pthread_mutex_unlock(&registry_lock);
		if (!ops)
			probe_one(ctx->report, ctx->first, name, NULL, sbx_last_error());
	}
	if (d)
		closedir(d);
	return 0;
}

int sbx_backends_probe(char **json_out)
{
	sbx_buf out = { 0 };
	bool first = true;
	struct scan_ctx scan = { .report = &out, .first = &first };

	if (!json_out)
		return sbx_fail(-SBX_EINVAL, "json_out is NULL");
	*json_out = NULL;
	sbx_buf_puts(&out, "[");
	for (size_t i = 0; i < SBX_ARRAY_SIZE(builtin_backends); i++)
		probe_one(&out, &first, builtin_backends[i]->name, builtin_backends[i], NULL);
	/* Plugins that failed to load are reported inline; loaded ones join `registered`. */
	for_each_plugin_dir(scan_plugin_dir, &scan);
	pthread_mutex_lock(&registry_lock);
	size_t n = n_registered;
	pthread_mutex_unlock(&registry_lock);
	for (size_t i = 0; i < n; i++)
		probe_one(&out, &first, registered[i]->name, registered[i], NULL);
	sbx_buf_puts(&out, "]");
	if (out.oom) {
		sbx_buf_free(&out);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	*json_out = sbx_buf_steal(&out, NULL);
	return 0;
}
