/* The backend glue: what the ns and bwrap ops tables (sandbox.h) call. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "backends/sandbox/sandbox_int.h"


struct sandbox_ws {
	struct sbx_sandbox_options opts;
	struct sbx_sandbox *sb;
	char *workdir;
	const char **writable;    /* writable_paths: NULL-terminated, strings borrowed */
};

static void free_ws(struct sandbox_ws *w)
{
	sbx_sandbox_free_options(&w->opts);
	free(w->workdir);
	free(w->writable);
	free(w);
}

/* Is dest in one of the places already listed, or in the workspace? Then naming it again
 * tells the model nothing (the MCP run folder under /tmp, say). */
static bool already_writable(const char *const *list, size_t n, const char *dest)
{
	if (!strcmp(dest, SBX_SANDBOX_ROOT) || sbx_path_below(dest, SBX_SANDBOX_ROOT))
		return true;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(dest, list[i]) || sbx_path_below(dest, list[i]))
			return true;
	return false;
}

/* Whether the sandbox has that place of the layout: under a caller's rootfs the init makes
 * /run, /var/tmp and /var/cache only where the rootfs has the directory (helpers/init/main.c
 * leaves the others out of its list too); /tmp and /dev/shm it always makes. */
static bool layout_place_made(const char *rootfs, const char *path)
{
	char full[PATH_MAX];
	struct stat st;

	if (!rootfs || !strcmp(path, "/tmp") || !strncmp(path, "/dev/", 5))
		return true;
	if (snprintf(full, sizeof full, "%s%s", rootfs, path) >= (int)sizeof full)
		return false;
	return lstat(full, &st) == 0 && S_ISDIR(st.st_mode);
}

/* What the model is told it may write besides the workspace (backend.h, writable_paths):
 * the layout's places Landlock leaves writable (init/sandbox.h), then the writable
 * binds of the config, borrowed from the options that outlive the list. */
static int list_writable(struct sandbox_ws *w)
{
	size_t n_private = 0, n = 0;

	while (sbx_layout_writable[n_private])
		n_private++;

	w->writable = calloc(n_private + w->opts.n_binds + 1, sizeof *w->writable);
	if (!w->writable)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	for (size_t i = 0; i < n_private; i++)
		if (layout_place_made(w->opts.rootfs, sbx_layout_writable[i]))
			w->writable[n++] = sbx_layout_writable[i];
	for (size_t i = 0; i < w->opts.n_binds; i++)
		if (w->opts.binds[i].writable &&
		    !already_writable(w->writable, n, w->opts.binds[i].dest))
			w->writable[n++] = w->opts.binds[i].dest;
	return 0;
}

const char *const *sbx_sandbox_backend_writable(void *state)
{
	return ((struct sandbox_ws *)state)->writable;
}

/* The binds the core made for the helpers (SBX_BACKEND_CAP_HELPER_BINDS: the MCP gateway's
 * folder and run folder), after the config's own, copied: the core's list lives only for
 * open(). */
static int adopt_helper_binds(const sbx_backend_config *cfg, struct sbx_sandbox_options *o)
{
	size_t n = SBX_BACKEND_CONFIG_HAS(cfg, n_binds) && cfg->binds ? cfg->n_binds : 0;
	struct sbx_bind *grown;

	if (n == 0)
		return 0;
	if (!(grown = realloc(o->binds, (o->n_binds + n + 1) * sizeof *grown)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	o->binds = grown;
	for (size_t i = 0; i < n; i++) {
		char *source = strdup(cfg->binds[i].source), *dest = strdup(cfg->binds[i].dest);

		if (!source || !dest) {
			free(source);
			free(dest);
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		}
		o->binds[o->n_binds++] = (struct sbx_bind){ .source = source, .dest = dest,
		                                             .writable = cfg->binds[i].writable };
		o->binds[o->n_binds] = (struct sbx_bind){ 0 };
	}
	return 0;
}

/* workdir_mount "host": the workdir's path must be one the sandbox can make a mount point
 * at without touching what it shows: not below /proc or /dev (the kernel's), nor below
 * /workspace (that would be a directory made in the workspace itself). */
static int check_host_view(const char *name, const struct sandbox_ws *w)
{
	static const char *const refused[] = { "/proc", "/dev", SBX_SANDBOX_ROOT };
	const char *view = sbx_sandbox_view_root(&w->opts, w->workdir);

	for (size_t i = 0; i < SBX_ARRAY_SIZE(refused); i++)
		if (sbx_path_below(view, refused[i]))
			return sbx_fail(-SBX_ECONFIG, "config: key '%s.workdir_mount': the workdir %s is "
			                "below %s, where the sandbox cannot mount it at its own path",
			                name, view, refused[i]);
	return 0;
}

int sbx_sandbox_backend_open(const char *name, bool allow_mode, const sbx_backend_config *cfg,
                             void **state)
{
	struct sandbox_ws *w = calloc(1, sizeof *w);
	enum sbx_sandbox_mode mode;
	char detail[512];
	int r;

	*state = NULL;
	if (!w)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if (!cfg->workdir || !(w->workdir = strdup(cfg->workdir))) {
		free(w);
		return sbx_fail(-SBX_EINVAL, "%s: a host workdir is required", name);
	}
	if ((r = sbx_sandbox_parse_options(name, cfg->options_json, allow_mode, &w->opts)) < 0 ||
	    (r = sbx_quota_check(name, cfg, w->opts.detached)) < 0 ||
	    (r = adopt_helper_binds(cfg, &w->opts)) < 0 || (r = list_writable(w)) < 0) {
		free_ws(w);
		return r;
	}
	if (w->opts.detached && cfg->workdir_is_temporary) {
		free_ws(w);
		return sbx_fail(-SBX_ECONFIG, "config: key '%s.detached': a detached sandbox needs "
		                "a 'workdir' (a temporary one is removed at close)", name);
	}
	if (w->opts.detached && faccessat(AT_FDCWD, cfg->workdir, W_OK, AT_EACCESS) != 0) {
		free_ws(w);
		return sbx_fail(-SBX_ECONFIG, "config: key '%s.detached': a detached sandbox keeps "
		                "its socket in the workdir's .agentsbx/run, which this workdir cannot "
		                "hold (the library may not write it)", name);
	}
	if ((r = check_host_view(name, w)) < 0 || (r = sbx_sandbox_check_fds(name, &w->opts)) < 0) {
		free_ws(w);
		return r;
	}
	if (sbx_sandbox_start_as_probe(name, cfg, &w->opts, &w->sb)) {
		*state = w;
		return 0;
	}
	if ((r = sbx_sandbox_pick_mode(w->opts.mode, &mode, detail, sizeof detail)) < 0) {
		free_ws(w);
		return sbx_fail(-SBX_EBACKEND, "%s: no way to build a sandbox on this host (%s)",
		                name, detail);
	}
	if ((r = sbx_sandbox_start(name, cfg, &w->opts, mode, &w->sb)) < 0) {
		free_ws(w);
		return r;
	}
	*state = w;
	return 0;
}

int sbx_sandbox_backend_close(void *state)
{
	struct sandbox_ws *w = state;

	if (!w)
		return 0;
	sbx_sandbox_stop(w->sb);
	free_ws(w);
	return 0;
}

int sbx_sandbox_backend_reset(void *state)
{
	return sbx_sandbox_restart(((struct sandbox_ws *)state)->sb);
}

const char *sbx_sandbox_backend_root(void *state)
{
	struct sandbox_ws *w = state;

	return sbx_sandbox_view_root(&w->opts, w->workdir);
}

int sbx_sandbox_backend_files_root(void *state)
{
	return ((struct sandbox_ws *)state)->sb->files_root;
}

const char *const *sbx_sandbox_backend_protected(void *state)
{
	struct sandbox_ws *w = state;

	return w->opts.protected_paths ? (const char *const *)w->opts.protected_paths
	                               : sbx_default_protected_paths;
}

/* A pidfd (the caller's to close) of a process in the sandbox's mount namespace: in direct
 * mode the outer process (it made the namespaces, and the init shares them); under
 * bubblewrap, bwrap's child (the init, --as-pid-1), which stays ours while bwrap, our child,
 * is unreaped. As a host range with placeholders to tidy, our child is the tidier that stayed
 * root, and the outer process its child (helpers/init/main.c, drop_to_users). A detached
 * sandbox's outer process is no longer ours to name: none (-1). */
static int pidfd_in_sandbox(const struct sbx_sandbox *sb)
{
	pid_t init, outer = sb->pid;

	if (sb->opts->detached)
		return -1;
	if (sb->mode == SBX_SANDBOX_BWRAP) {
		if (outer > 0 && sb->idmap.on && sb->placeholders)
			outer = sbx_warden_first_child(outer);
		init = outer > 0 ? sbx_warden_first_child(sbx_warden_first_child(outer)) : -1;
		return init > 0 ? (int)syscall(SYS_pidfd_open, init, 0) : -1;
	}
	return sb->outer_pidfd >= 0 ? fcntl(sb->outer_pidfd, F_DUPFD_CLOEXEC, 3) : -1;
}

int sbx_sandbox_backend_protect_now(void *state, const char *const *rel_paths)
{
	struct sandbox_ws *w = state;
	const char *view;
	int target;

	if (!rel_paths || !rel_paths[0])
		return 0;
	if ((target = pidfd_in_sandbox(w->sb)) < 0)
		return sbx_fail(-SBX_ENOSYS, "%s: no process to bind through (detached sandbox)",
		                w->sb->who);
	view = sbx_sandbox_view_root(&w->opts, w->workdir);
	return sbx_warden_bind(w->sb->who, target, rel_paths,
	                       strcmp(view, SBX_SANDBOX_ROOT) ? view : NULL);
}

const char *sbx_sandbox_backend_host_dir(void *state)
{
	return ((struct sandbox_ws *)state)->workdir;
}

int sbx_sandbox_backend_spawn(void *state, const sbx_backend_spawn *req, void **proc,
                              int *wait_fd)
{
	return sbx_sandbox_spawn(((struct sandbox_ws *)state)->sb, req, proc, wait_fd);
}

/* The mode of a validated network object. */
static bool network_mode_is(const char *network_json, const char *mode)
{
	sbx_json *v = NULL;
	const sbx_json *m;
	char err[64];
	bool same;

	if (sbx_json_parse(network_json, strlen(network_json), &v, err, sizeof err) < 0)
		return false;
	m = sbx_json_get(v, "mode");
	same = m && m->type == SBX_JSON_STRING && !strcmp(m->str, mode);
	sbx_json_free(v);
	return same;
}

int sbx_sandbox_set_network(struct sbx_sandbox *sb, const char *network_json)
{
	if (!network_mode_is(network_json, sb->network_mode))
		return sbx_fail(-SBX_ENOSYS, "%s: the sandbox runs with network mode '%s', which "
		                "cannot change while it runs", sb->who, sb->network_mode);
	return sb->proxy ? sbx_netproxy_set_policy(sb->proxy, network_json) : 0;
}

int sbx_sandbox_backend_set_network(void *state, const char *network_json)
{
	return sbx_sandbox_set_network(((struct sandbox_ws *)state)->sb, network_json);
}

const char *const *sbx_sandbox_backend_env(void *state)
{
	return ((struct sandbox_ws *)state)->sb->proxy ? sbx_netproxy_env() : NULL;
}

int sbx_sandbox_backend_detached_running(const char *workdir, int *running)
{
	*running = sbx_sandbox_detached_running(workdir);
	return 0;
}

int sbx_sandbox_backend_detached_stop(const char *workdir, const char *id, int *stopped)
{
	bool done = false;
	int r = sbx_sandbox_destroy_detached(workdir, id, &done);

	*stopped = done;
	return r;
}
