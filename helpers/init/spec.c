/* Reading the sandbox spec the backend wrote (see spec.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/init_proto.h"
#include "spec.h"
#include "util/json.h"

static int bad(char *err, size_t errlen, const char *key, const char *why)
{
	snprintf(err, errlen, "spec: key '%s': %s", key, why);
	return -1;
}

static int take_string(const sbx_json *v, const char *key, char **out, char *err, size_t errlen)
{
	if (v->type != SBX_JSON_STRING || strlen(v->str) != v->len)
		return bad(err, errlen, key, "expected a string without NUL bytes");
	if (!(*out = strdup(v->str)))
		return bad(err, errlen, key, "out of memory");
	return 0;
}

static int take_u64(const sbx_json *v, const char *key, uint64_t *out, char *err, size_t errlen)
{
	if (v->type != SBX_JSON_INT || v->i < 0)
		return bad(err, errlen, key, "expected a non-negative integer");
	*out = (uint64_t)v->i;
	return 0;
}

static int take_bool(const sbx_json *v, const char *key, bool *out, char *err, size_t errlen)
{
	if (v->type != SBX_JSON_BOOL)
		return bad(err, errlen, key, "expected true or false");
	*out = v->b;
	return 0;
}

static int take_tree_fd(const sbx_json *v, struct sbx_bind *b, char *err, size_t errlen);

static int take_binds(const sbx_json *v, struct sbx_init_spec *spec, char *err, size_t errlen)
{
	if (v->type != SBX_JSON_ARRAY)
		return bad(err, errlen, "binds", "expected an array");
	spec->binds = calloc(v->n + 1, sizeof *spec->binds);
	if (!spec->binds)
		return bad(err, errlen, "binds", "out of memory");
	for (size_t i = 0; i < v->n; i++) {
		const sbx_json *b = v->items[i];
		const sbx_json *src = sbx_json_get(b, "source"), *dst = sbx_json_get(b, "dest");
		const sbx_json *ws_src = sbx_json_get(b, "workspace_source");
		const sbx_json *st_src = sbx_json_get(b, "state_source");
		const sbx_json *rw = sbx_json_get(b, "writable");
		char *s = NULL, *d = NULL;

		if (b->type != SBX_JSON_OBJECT || !dst || !!src + !!ws_src + !!st_src != 1)
			return bad(err, errlen, "binds", "each entry needs dest and one of source, "
			           "workspace_source and state_source");
		if (!src)
			src = ws_src ? ws_src : st_src;
		if (take_string(src, "binds.source", &s, err, errlen) < 0)
			return -1;
		if (take_string(dst, "binds.dest", &d, err, errlen) < 0) {
			free(s);
			return -1;
		}
		spec->binds[i] = (struct sbx_bind){ .source = s, .dest = d, .writable = false,
		                                    .in_workspace = src == ws_src,
		                                    .in_state = src == st_src };
		spec->state_binds += src == st_src;
		spec->n_binds = i + 1;
		if (rw && take_bool(rw, "binds.writable", &spec->binds[i].writable, err, errlen) < 0)
			return -1;
		if (take_tree_fd(sbx_json_get(b, "tree_fd"), &spec->binds[i], err, errlen) < 0)
			return -1;
		/* Its source comes with the activation, mount or not. */
		if (src == st_src && spec->binds[i].tree_fd)
			return bad(err, errlen, "binds.tree_fd", "not with state_source");
	}
	return 0;
}

static int take_tree_fd(const sbx_json *v, struct sbx_bind *b, char *err, size_t errlen)
{
	if (!v)
		return 0;
	if (v->type != SBX_JSON_INT || v->i < SBX_INIT_FIRST_TREE_FD ||
	    v->i >= SBX_INIT_FIRST_TREE_FD + SBX_INIT_MAX_TREES)
		return bad(err, errlen, "binds.tree_fd", "expected an fd number from 10 to 41");
	b->tree_fd = (int)v->i;
	return 0;
}

/* {"uid": n, "gid": n, "count": n}: ids that are not root's, a range that fits. */
static int take_users(const sbx_json *v, struct sbx_init_spec *spec, char *err, size_t errlen)
{
	const char *const keys[3] = { "uid", "gid", "count" };
	uint64_t n[3];

	if (v->type != SBX_JSON_OBJECT || v->n != 3)
		return bad(err, errlen, "users", "expected {\"uid\", \"gid\", \"count\"}");
	for (int i = 0; i < 3; i++) {
		const sbx_json *x = sbx_json_get(v, keys[i]);

		if (!x || take_u64(x, "users", &n[i], err, errlen) < 0)
			return bad(err, errlen, "users", "expected {\"uid\", \"gid\", \"count\"}");
	}
	if (!n[0] || !n[1] || !n[2] || n[0] + n[2] > UINT32_MAX || n[1] + n[2] > UINT32_MAX)
		return bad(err, errlen, "users", "not a range of unprivileged ids");
	spec->users = (struct sbx_id_range){ (uint32_t)n[0], (uint32_t)n[1], (uint32_t)n[2] };
	spec->has_users = true;
	return 0;
}

static int take_protected(const sbx_json *v, struct sbx_init_spec *spec, char *err,
                          size_t errlen)
{
	if (v->type != SBX_JSON_ARRAY)
		return bad(err, errlen, "protected", "expected an array");
	spec->protected_paths = calloc(v->n + 1, sizeof *spec->protected_paths);
	if (!spec->protected_paths)
		return bad(err, errlen, "protected", "out of memory");
	for (size_t i = 0; i < v->n; i++)
		if (take_string(v->items[i], "protected", &spec->protected_paths[i], err, errlen) < 0)
			return -1;
	return 0;
}

static int take_key(const char *key, const sbx_json *v, struct sbx_init_spec *spec, char *err,
                    size_t errlen)
{
	if (!strcmp(key, "id"))
		return take_string(v, key, &spec->id, err, errlen);
	if (!strcmp(key, "hostname"))
		return take_string(v, key, &spec->hostname, err, errlen);
	if (!strcmp(key, "rootfs"))
		return v->type == SBX_JSON_NULL ? 0 : take_string(v, key, &spec->rootfs, err, errlen);
	if (!strcmp(key, "network")) {
		if (v->type != SBX_JSON_STRING || (strcmp(v->str, "none") && strcmp(v->str, "host") &&
		                                   strcmp(v->str, "allowlist")))
			return bad(err, errlen, key, "expected \"none\", \"allowlist\" or \"host\"");
		spec->share_network = !strcmp(v->str, "host");
		return 0;
	}
	if (!strcmp(key, "proxy_port")) {
		if (v->type != SBX_JSON_INT || v->i < 1 || v->i > 65535)
			return bad(err, errlen, key, "expected a port number");
		spec->proxy_port = (uint16_t)v->i;
		return 0;
	}
	if (!strcmp(key, "binds"))
		return take_binds(v, spec, err, errlen);
	if (!strcmp(key, "protected"))
		return take_protected(v, spec, err, errlen);
	if (!strcmp(key, "landlock"))
		return take_bool(v, key, &spec->landlock, err, errlen);
	if (!strcmp(key, "workspace_readonly"))
		return take_bool(v, key, &spec->workspace_readonly, err, errlen);
	if (!strcmp(key, "memory_bytes"))
		return take_u64(v, key, &spec->memory_bytes, err, errlen);
	if (!strcmp(key, "pids"))
		return take_u64(v, key, &spec->pids, err, errlen);
	if (!strcmp(key, "workspace_bytes"))
		return take_u64(v, key, &spec->workspace_bytes, err, errlen);
	if (!strcmp(key, "tmp_bytes"))
		return take_u64(v, key, &spec->tmp_bytes, err, errlen);
	if (!strcmp(key, "tmp_required"))
		return take_bool(v, key, &spec->tmp_required, err, errlen);
	if (!strcmp(key, "host_uid")) {
		if (take_u64(v, key, &spec->host_uid, err, errlen) < 0)
			return -1;
		if (spec->host_uid > UINT32_MAX - 1)
			return bad(err, errlen, key, "not a uid");
		spec->has_host_uid = true;
		return 0;
	}
	if (!strcmp(key, "seccomp_program"))
		return take_bool(v, key, &spec->seccomp_program, err, errlen);
	if (!strcmp(key, "prestart"))
		return take_bool(v, key, &spec->prestart, err, errlen);
	if (!strcmp(key, "users"))
		return take_users(v, spec, err, errlen);
	if (!strcmp(key, "state_mount"))
		return take_bool(v, key, &spec->state_mount, err, errlen);
	if (!strcmp(key, "idle_ttl_ms"))
		return take_u64(v, key, &spec->idle_ttl_ms, err, errlen);
	if (!strcmp(key, "workspace_view")) {
		if (take_string(v, key, &spec->workspace_view, err, errlen) < 0)
			return -1;
		if (spec->workspace_view[0] != '/' || strstr(spec->workspace_view, "/../") ||
		    strlen(spec->workspace_view) >= 4096)
			return bad(err, errlen, key, "expected an absolute path without '..'");
		return 0;
	}
	if (!strcmp(key, "refuse_setid"))
		return take_bool(v, key, &spec->refuse_setid, err, errlen);
	return bad(err, errlen, key, "unknown key");
}

int sbx_init_spec_parse(const char *text, size_t len, struct sbx_init_spec *spec, char *err,
                        size_t errlen)
{
	sbx_json *root = NULL;
	int r = 0;

	memset(spec, 0, sizeof *spec);
	if (sbx_json_parse(text, len, &root, err, errlen) < 0)
		return -1;
	if (root->type != SBX_JSON_OBJECT)
		r = bad(err, errlen, "(top)", "expected an object");
	for (size_t i = 0; r == 0 && i < root->n; i++)
		r = take_key(root->keys[i], root->items[i], spec, err, errlen);
	sbx_json_free(root);
	if (r == 0 && !spec->id)
		r = bad(err, errlen, "id", "missing");
	/* Only an activation brings the state folder (init_proto.h). */
	if (r == 0 && spec->state_binds && !spec->prestart)
		r = bad(err, errlen, "binds.state_source", "only a pre-started sandbox has one");
	if (r == 0 && 1 + spec->state_mount + spec->state_binds > SBX_INIT_ACTIVATE_FDS)
		r = bad(err, errlen, "binds.state_source", "more than an activation carries");
	if (r < 0)
		sbx_init_spec_free(spec);
	return r;
}

void sbx_init_spec_free(struct sbx_init_spec *spec)
{
	for (size_t i = 0; i < spec->n_binds; i++) {
		free((char *)spec->binds[i].source);
		free((char *)spec->binds[i].dest);
	}
	free(spec->binds);
	for (char **p = spec->protected_paths; p && *p; p++)
		free(*p);
	free(spec->protected_paths);
	free(spec->id);
	free(spec->hostname);
	free(spec->rootfs);
	free(spec->workspace_view);
	memset(spec, 0, sizeof *spec);
}
