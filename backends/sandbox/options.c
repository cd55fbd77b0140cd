/* The sandbox options of a backend's config object (sandbox.h lists the keys). */
#include "backends/sandbox/sandbox_int.h"


static int option_error(const char *backend, const char *key, const char *why)
{
	return sbx_fail(-SBX_ECONFIG, "config: key '%s.%s': %s", backend, key, why);
}

static int dup_string(const sbx_json *v, const char *backend, const char *key, char **out)
{
	if (v->type != SBX_JSON_STRING || strlen(v->str) != v->len || !v->len)
		return option_error(backend, key, "expected a non-empty string without NUL bytes");
	if (!(*out = strdup(v->str)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	return 0;
}

static int absolute_path(const sbx_json *v, const char *backend, const char *key, char **out)
{
	int r = dup_string(v, backend, key, out);

	if (r == 0 && ((*out)[0] != '/' || strlen(*out) >= PATH_MAX || strstr(*out, "/../") ||
	               !strcmp(*out + strlen(*out) - (strlen(*out) >= 3 ? 3 : 0), "/.."))) {
		free(*out);
		*out = NULL;
		return option_error(backend, key, "expected an absolute path without '..'");
	}
	return r;
}

static int parse_binds(const char *backend, const sbx_json *v, struct sbx_sandbox_options *o)
{
	if (v->type != SBX_JSON_ARRAY)
		return option_error(backend, "binds", "expected an array");
	if (!(o->binds = calloc(v->n + 1, sizeof *o->binds)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	for (size_t i = 0; i < v->n; i++) {
		const sbx_json *b = v->items[i], *src, *dst, *rw;
		char key[64];
		char *s = NULL, *d = NULL;
		int r;

		snprintf(key, sizeof key, "binds[%zu]", i);
		if (b->type != SBX_JSON_OBJECT)
			return option_error(backend, key, "expected an object");
		for (size_t k = 0; k < b->n; k++)
			if (strcmp(b->keys[k], "source") && strcmp(b->keys[k], "dest") &&
			    strcmp(b->keys[k], "writable"))
				return option_error(backend, key, "unknown key (source, dest, writable)");
		src = sbx_json_get(b, "source");
		dst = sbx_json_get(b, "dest");
		rw = sbx_json_get(b, "writable");
		if (!src || !dst)
			return option_error(backend, key, "needs source and dest");
		if (rw && rw->type != SBX_JSON_BOOL)
			return option_error(backend, key, "writable: expected true or false");
		if ((r = absolute_path(src, backend, key, &s)) < 0)
			return r;
		if ((r = absolute_path(dst, backend, key, &d)) < 0) {
			free(s);
			return r;
		}
		o->binds[i] = (struct sbx_bind){ .source = s, .dest = d, .writable = rw && rw->b };
		o->n_binds = i + 1;
		if (!strcmp(d, "/") || !strncmp(d, "/proc", 5) || !strncmp(d, "/dev", 4) ||
		    !strcmp(d, SBX_SANDBOX_ROOT))
			return option_error(backend, key, "dest may not be /, /proc, /dev or /workspace");
	}
	return 0;
}

/* The state folder stays read-only inside whatever the list says: the git guard's quarantine,
 * the record of trusted skills, the audit log and the journal the host's root acts on live
 * there, and the host trusts them only because no command can write them. */
static int keep_state_dir_protected(char **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], SBX_STATE_DIR "/") || !strcmp(list[i], SBX_STATE_DIR))
			return 0;
	if (!(list[n] = strdup(SBX_STATE_DIR "/")))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	return 0;
}

static int parse_protected(const char *backend, const sbx_json *v, struct sbx_sandbox_options *o)
{
	char why[128];

	if (v->type != SBX_JSON_ARRAY)
		return option_error(backend, "protected_paths", "expected an array");
	/* Each entry is a mount (and, under bubblewrap, a walk of the mount table): 20,000 took
	 * 36 s and then failed as a start timeout. Within the cap a sandbox starts in a fraction
	 * of a second. */
	if (v->n > SBX_PROTECTED_PATHS_MAX) {
		snprintf(why, sizeof why, "at most %d entries (this has %zu): each is a mount in the "
		         "sandbox", SBX_PROTECTED_PATHS_MAX, v->n);
		return option_error(backend, "protected_paths", why);
	}
	/* One more than listed: the state folder, which no list may leave out (below). */
	if (!(o->protected_paths = calloc(v->n + 2, sizeof *o->protected_paths)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	for (size_t i = 0; i < v->n; i++) {
		char **p = &o->protected_paths[i];
		int r = dup_string(v->items[i], backend, "protected_paths", p);

		if (r < 0)
			return r;
		if (strlen(*p) >= PATH_MAX)
			return option_error(backend, "protected_paths", "an entry is longer than 4095 "
			                    "bytes");
		if ((*p)[0] == '/' || !strcmp(*p, "..") || !strncmp(*p, "../", 3) || strstr(*p, "/../"))
			return option_error(backend, "protected_paths",
			                    "entries are relative to /workspace, without '..'");
	}
	return keep_state_dir_protected(o->protected_paths, v->n);
}

static int parse_mode(const char *backend, const sbx_json *v, struct sbx_sandbox_options *o)
{
	static const char *const names[] = { "auto", "direct", "bwrap" };

	for (size_t i = 0; v->type == SBX_JSON_STRING && i < SBX_ARRAY_SIZE(names); i++)
		if (!strcmp(v->str, names[i])) {
			o->mode = (enum sbx_sandbox_mode)i;
			return 0;
		}
	return option_error(backend, "mode", "expected \"auto\", \"direct\" or \"bwrap\"");
}

/* A user name as useradd(8) takes them (subuid(5) has no quoting): letters, digits, '_', '-'
 * and '.', not starting with '-', at most 32. */
static int parse_subid_user(const char *backend, const sbx_json *v, struct sbx_sandbox_options *o)
{
	int r = dup_string(v, backend, "subid_user", &o->subid_user);
	size_t n = r == 0 ? strlen(o->subid_user) : 0;

	if (r < 0)
		return r;
	if (n > 32 || o->subid_user[0] == '-' ||
	    strspn(o->subid_user, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                          "0123456789_-.") != n)
		return option_error(backend, "subid_user", "expected a user name (letters, digits, "
		                    "'_', '-', '.'; at most 32)");
	return 0;
}

static int parse_option(const char *backend, const char *key, const sbx_json *v,
                        bool allow_mode, struct sbx_sandbox_options *o)
{
	if (allow_mode && !strcmp(key, "mode"))
		return parse_mode(backend, v, o);
	if (!strcmp(key, "rootfs"))
		return absolute_path(v, backend, key, &o->rootfs);
	if (!strcmp(key, "binds"))
		return parse_binds(backend, v, o);
	if (!strcmp(key, "protected_paths"))
		return parse_protected(backend, v, o);
	if (!strcmp(key, "hostname")) {
		int r = dup_string(v, backend, key, &o->hostname);
		if (r == 0 && strlen(o->hostname) > 64)
			return option_error(backend, key, "longer than 64 characters");
		return r;
	}
	if (!strcmp(key, "detached")) {
		if (v->type != SBX_JSON_BOOL)
			return option_error(backend, key, "expected true or false");
		o->detached = v->b;
		return 0;
	}
	if (!strcmp(key, "idle_ttl_s")) {
		double secs = v->type == SBX_JSON_INT ? (double)v->i
		              : v->type == SBX_JSON_NUMBER ? v->d : -1;
		if (!(secs >= 0 && secs <= 1e9))
			return option_error(backend, key, "expected a number of seconds >= 0");
		o->idle_ttl_ms = (int64_t)(secs * 1000);
		o->idle_ttl_set = true;
		return 0;
	}
	if (allow_mode && !strcmp(key, "prestart")) {
		bool process_only = v->type == SBX_JSON_STRING && !strcmp(v->str, "process");

		if (v->type != SBX_JSON_BOOL && !process_only)
			return option_error(backend, key, "expected true, false or \"process\"");
		o->prestart = process_only || v->b;
		o->keeper = !process_only && v->b;
		return 0;
	}
	if (!strcmp(key, "landlock")) {
		if (v->type != SBX_JSON_BOOL)
			return option_error(backend, key, "expected true or false");
		o->landlock = v->b;
		return 0;
	}
	if (!strcmp(key, "workdir_mount")) {
		if (v->type != SBX_JSON_STRING || (strcmp(v->str, SBX_SANDBOX_ROOT) &&
		                                   strcmp(v->str, "host")))
			return option_error(backend, key, "expected \"" SBX_SANDBOX_ROOT "\" or \"host\"");
		o->workdir_at_host = !strcmp(v->str, "host");
		return 0;
	}
	if (!strcmp(key, "subid_user"))
		return parse_subid_user(backend, v, o);
	if (!strcmp(key, "root_inside")) {
		if (v->type != SBX_JSON_STRING || (strcmp(v->str, "unprivileged") &&
		                                   strcmp(v->str, "allow-host-root")))
			return option_error(backend, key, "expected \"unprivileged\" or "
			                    "\"allow-host-root\"");
		o->allow_host_root = !strcmp(v->str, "allow-host-root");
		return 0;
	}
	return sbx_fail(-SBX_ECONFIG, "config: unknown key '%s.%s'", backend, key);
}

int sbx_sandbox_parse_options(const char *backend, const char *options_json, bool allow_mode,
                              struct sbx_sandbox_options *o)
{
	const char *text = options_json ? options_json : "{}";
	sbx_json *root = NULL;
	char err[256];
	int r = 0;

	memset(o, 0, sizeof *o);
	o->mode = allow_mode ? SBX_SANDBOX_AUTO : SBX_SANDBOX_BWRAP;
	o->landlock = true;
	o->prestart = allow_mode;     /* ns only: bubblewrap builds its sandboxes itself */
	o->keeper = allow_mode;
	if (sbx_json_parse(text, strlen(text), &root, err, sizeof err) < 0)
		return sbx_fail(-SBX_ECONFIG, "config: key '%s': %s", backend, err);
	if (root->type != SBX_JSON_OBJECT)
		r = sbx_fail(-SBX_ECONFIG, "config: key '%s': expected an object", backend);
	for (size_t i = 0; r == 0 && i < root->n; i++)
		r = parse_option(backend, root->keys[i], root->items[i], allow_mode, o);
	sbx_json_free(root);
	if (r == 0 && o->idle_ttl_set && !o->detached)
		r = option_error(backend, "idle_ttl_s", "only a detached sandbox stops by itself (set "
		                 "'detached': true)");
	if (r == 0 && o->detached && !o->idle_ttl_set)
		o->idle_ttl_ms = SBX_SANDBOX_IDLE_TTL_MS;
	if (r == 0 && !o->hostname && !(o->hostname = strdup("agentsbx")))
		r = sbx_fail(-SBX_ENOMEM, "out of memory");
	if (r < 0)
		sbx_sandbox_free_options(o);
	return r;
}

void sbx_sandbox_free_options(struct sbx_sandbox_options *o)
{
	for (size_t i = 0; i < o->n_binds; i++) {
		free((char *)o->binds[i].source);
		free((char *)o->binds[i].dest);
	}
	free(o->binds);
	for (char **p = o->protected_paths; p && *p; p++)
		free(*p);
	free(o->protected_paths);
	free(o->rootfs);
	free(o->hostname);
	free(o->subid_user);
	memset(o, 0, sizeof *o);
}

/* The ops tables built on this archive, and whether their config object may choose the mode
 * (what each passes to sbx_sandbox_backend_open). */
static const struct {
	const sbx_backend_ops *ops;
	bool allow_mode;
} sandbox_tables[] = {
	{ &sbx_backend_ns, true },
	{ &sbx_backend_bwrap, false },
};

int sbx_sandbox_describe_users(const char *backend, const char *options_json, const char *dir,
                               char *line, size_t len, bool *ok)
{
	struct sbx_sandbox_options o = { 0 };
	int r;

	for (size_t i = 0; i < SBX_ARRAY_SIZE(sandbox_tables); i++) {
		if (strcmp(backend, sandbox_tables[i].ops->name) != 0)
			continue;
		if ((r = sbx_sandbox_parse_options(backend, options_json, sandbox_tables[i].allow_mode,
		                                   &o)) < 0)
			return r;
		*ok = sbx_idmap_describe(o.subid_user, dir, o.allow_host_root, line, len);
		sbx_sandbox_free_options(&o);
		return 0;
	}
	return 1;
}
