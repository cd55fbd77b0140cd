/* Opening, resetting and closing workspaces: the core's half of the lifecycle. The backend
 * builds its isolation; the core owns the configuration, the host directory and the base
 * environment, so no backend repeats them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "files_int.h"
#include "gitguard.h"
#include "internal.h"
#include "mcp/mcp.h"
#include "network.h"
#include "opts.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/journal.h"
#include "util/statedir.h"

#define STATE_DIR ".agentsbx"   /* the library's state folder in the workspace */

#define SBX_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static int random_id(char **out)
{
	unsigned char raw[8];
	char *id = malloc(2 * sizeof raw + 1);

	if (!id)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
		free(id);
		return sbx_fail(-SBX_EIO, "getrandom: %s", strerror(errno));
	}
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(id + 2 * i, 3, "%02x", raw[i]);
	*out = id;
	return 0;
}

/* mkdir -p for the host workdir the caller named (a trusted host path, not a workspace path). */
static int make_host_dir(const char *path)
{
	_cleanup_free_ char *copy = strdup(path);

	if (!copy)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	for (char *p = copy + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		if (mkdir(copy, 0755) < 0 && errno != EEXIST)
			return sbx_fail(sbx_errno_code(errno), "config: key 'workdir': mkdir %s: %s", copy,
			                strerror(errno));
		*p = saved;
		if (saved == '\0')
			break;
	}
	return 0;
}

static int prepare_workdir(sbx_workspace *ws)
{
	char resolved[PATH_MAX];
	struct stat st;
	int r;

	if (ws->cfg->workdir) {
		if ((r = sbx_workdir_check(ws->cfg, ws->cfg->workdir, false)) < 0 ||
		    (r = make_host_dir(ws->cfg->workdir)) < 0)
			return r;
		if (!realpath(ws->cfg->workdir, resolved))
			return sbx_fail(sbx_errno_code(errno), "config: key 'workdir': %s: %s",
			                ws->cfg->workdir, strerror(errno));
		if ((r = sbx_workdir_check(ws->cfg, resolved, true)) < 0)
			return r;
		if (!(ws->workdir = strdup(resolved)))
			return sbx_fail(-SBX_ENOMEM, "out of memory");
	} else {
		_cleanup_free_ char *prefix = NULL;
		if (asprintf(&prefix, "agentsbx-%s", ws->id) < 0)
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		if ((r = sbx_fs_make_temp_dir(prefix, &ws->workdir)) < 0)
			return r;
		ws->workdir_temporary = true;
	}
	ws->root_fd = open(ws->workdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (ws->root_fd < 0)
		return sbx_fail(sbx_errno_code(errno), "config: key 'workdir': %s: %s", ws->workdir,
		                strerror(errno));
	if (fstat(ws->root_fd, &st) < 0 || !S_ISDIR(st.st_mode))
		return sbx_fail(-SBX_ENOTDIR, "config: key 'workdir': %s is not a directory",
		                ws->workdir);
	return 0;
}


/* Removes a directory the core made, by path (its parent is trusted host space). */
static void remove_private_dir(const char *path)
{
	_cleanup_free_ char *parent = strdup(path);
	char *slash = parent ? strrchr(parent, '/') : NULL;

	if (!slash)
		return;
	*slash = '\0';
	_cleanup_close_ int dirfd = open(*parent ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd >= 0)
		sbx_fs_remove_tree(dirfd, slash + 1);
}

/* Removes everything at the root but the state folder (the audit log and the tool sessions
 * outlive a reset). */
static int empty_except_state(int root)
{
	int fd = openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	int r = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return sbx_fail(sbx_errno_code(errno), "reset: cannot list the workdir: %s",
		                strerror(errno));
	}
	while (r == 0 && (errno = 0, e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, STATE_DIR))
			r = sbx_fs_remove_tree(root, e->d_name);
	closedir(d);
	return r;
}

/* The journal of what the library makes in the workdir (util/journal.h), beside the state
 * folder: what an earlier host that died left noted there (placeholders, temporary files)
 * goes before anything new is made. A workdir the library cannot write (its state folder a
 * temporary one) gets nothing made in it, and so no journal. Nor does a temporary workdir:
 * nothing reopens it, so nothing would sweep it, and whatever a crash leaves in it is left
 * with the whole folder anyway; its temporary names of atomic writes go unnoted. */
static int open_journal(sbx_workspace *ws)
{
	_cleanup_close_ int dir = -1;
	char msg[512];
	int r;

	if (!ws->workdir_writable || ws->workdir_temporary)
		return 0;
	/* The journal's folder, <workdir>/.agentsbx, by the state folder's rules: a link or a
	 * file planted there fails the open, naming it. */
	if ((r = sbx_statedir_open(ws->root_fd, NULL, 0755, &dir)) < 0) {
		snprintf(msg, sizeof msg, "%s", sbx_last_error());
		return sbx_fail(r, "state folder of %s: %s", ws->workdir, msg);
	}
	sbx_journal_sweep(ws->root_fd, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_ENDED);
	return sbx_journal_open(ws->root_fd, SBX_JOURNAL_WORKSPACE, &ws->journal);
}

int sbx_workspace_write_atomic(sbx_workspace *ws, int dirfd, const char *name, const void *data,
                               size_t len, mode_t mode, uint32_t flags)
{
	return sbx_fs_write_atomic_noted(sbx_journal_temp_notes(ws ? ws->journal : NULL), dirfd,
	                                 name, data, len, mode, flags);
}

/* The workdir the open verified, for listing: through root_fd, never its path again. The
 * path may lead elsewhere by now: where it lies inside another workspace, a command there can
 * rename the folder and put a link in its place (to /etc, say), and a reset that emptied the
 * path would empty whatever the link names, as the caller. */
int sbx_workspace_open_root(const sbx_workspace *ws, int *fd)
{
	*fd = openat(ws->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*fd < 0)
		return sbx_fail(sbx_errno_code(errno), "open %s: %s", ws->workdir, strerror(errno));
	return 0;
}

/* Returns the files to the configured baseline (reset). */
static int restore_baseline(sbx_workspace *ws)
{
	enum sbx_baseline b = ws->cfg->baseline;
	_cleanup_close_ int root = -1;
	int r;

	if (b == SBX_BASELINE_DEFAULT)
		b = ws->workdir_temporary ? SBX_BASELINE_EMPTY : SBX_BASELINE_KEEP;
	/* A capped workspace gets a new, empty file system with the restart (the state folder
	 * stays on the host); its snapshot, of a temporary workdir, holds no files. */
	if (b == SBX_BASELINE_KEEP || ws->root_fd < 0 || ws->files_in_sandbox)
		return 0;
	if ((r = sbx_workspace_open_root(ws, &root)) < 0 || (r = empty_except_state(root)) < 0)
		return r;
	if (b != SBX_BASELINE_SNAPSHOT)
		return 0;
	return sbx_snapshot_restore(ws, root);
}

/* The backend's additions to every command's environment (the proxy settings of an
 * allowlist workspace), where its table has the operation. */
static const char *const *backend_env(const sbx_workspace *ws)
{
	const sbx_backend_ops *ops = ws->ops;

	if (!ops->base_env)
		return NULL;
	return ops->base_env(ws->state);
}

/* The user's name as the sandbox shows it: the sandbox backends keep the host's uid and
 * bind the host's /etc/passwd, so `id -un` inside says this name. A name that could not be
 * one path component falls back to "user". */
static void sandbox_user_name(char *out, size_t len)
{
	struct passwd pw, *found = NULL;
	char buf[4096];

	if (getpwuid_r(geteuid(), &pw, buf, sizeof buf, &found) != 0 || !found ||
	    !found->pw_name[0] || strchr(found->pw_name, '/') || found->pw_name[0] == '.' ||
	    strlen(found->pw_name) >= len)
		snprintf(out, len, "user");
	else
		snprintf(out, len, "%s", found->pw_name);
}

/* A capped workspace (limits.disk_bytes) of a sandbox that binds what the core names gets
 * no bind of the private HOME: that is a folder on the host's disk, and writable it carried
 * any amount past the cap onto it (the MCP run folder is left out for the same reason). Its
 * commands keep their HOME in the sandbox's /tmp, a tmpfs of limits.tmp_bytes: it lasts as
 * long as the sandbox, as the temporary state folder of such a workspace does. */
#define CAPPED_HOME "/tmp"

static bool home_in_sandbox_tmp(const sbx_workspace *ws)
{
	return (ws->caps & SBX_BACKEND_CAP_HELPER_BINDS) && ws->cfg->disk_bytes;
}

/* Where the workspace's private HOME is for its commands: bound at /home/<user> by a sandbox
 * that binds what the core names (its /tmp for a capped workspace); the host folder itself
 * where commands see the host's paths (local); nothing for another backend (docker: the
 * container user's own home, which is not the workdir). With the state folder in the
 * workdir (the old layout) it is the workspace's root, as before 1.7. */
static int home_for_commands(sbx_workspace *ws, char **out)
{
	const char *host = sbx_state_home(ws);

	bool old_layout = ws->cfg->state_dir && !strcmp(ws->cfg->state_dir, "workdir");

	*out = NULL;
	/* A backend without host files (a docker volume) keeps no state folder on the host:
	 * its commands keep their user's own HOME too. */
	if (!host && !old_layout && !(ws->caps & SBX_BACKEND_CAP_HOST_FILES))
		return 0;
	if (!host)
		return asprintf(out, "HOME=%s", ws->ops->root(ws->state)) < 0 ? -SBX_ENOMEM : 0;
	if (home_in_sandbox_tmp(ws))
		return (*out = strdup("HOME=" CAPPED_HOME)) ? 0 : -SBX_ENOMEM;
	if (ws->caps & SBX_BACKEND_CAP_HELPER_BINDS)
		return asprintf(out, "HOME=%s", ws->home_view) < 0 ? -SBX_ENOMEM : 0;
	if (ws->caps & SBX_BACKEND_CAP_HOST_VIEW)
		return asprintf(out, "HOME=%s", host) < 0 ? -SBX_ENOMEM : 0;
	return 0;
}

/* PATH and HOME, then what the backend adds, then the config's env: each layer may override
 * the ones before it. */
static int build_base_env(sbx_workspace *ws)
{
	_cleanup_free_ char *path = strdup("PATH=" SBX_DEFAULT_PATH);
	_cleanup_free_ char *home = NULL;
	const char *defaults[3] = { NULL };
	char **layer = NULL, **next = NULL;
	int r;

	if (!path || home_for_commands(ws, &home) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	defaults[0] = path;
	defaults[1] = home;
	if ((r = sbx_env_compose(NULL, defaults, false, &layer)) < 0)
		return r;
	r = sbx_env_compose(layer, backend_env(ws), false, &next);
	sbx_strv_free(layer);
	if (r < 0)
		return r;
	r = sbx_env_compose(next, (const char *const *)ws->cfg->env, false, &ws->base_env);
	sbx_strv_free(next);
	return r;
}

/* The private HOME, writable at /home/<user> (ws->home_view). */
static int append_home_bind(sbx_workspace *ws, sbx_backend_bind **binds, size_t *n)
{
	char user[64];
	char *source = strdup(sbx_state_home(ws));
	sbx_backend_bind *grown = source ? realloc(*binds, (*n + 1) * sizeof *grown) : NULL;

	if (!grown) {
		free(source);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	sandbox_user_name(user, sizeof user);
	snprintf(ws->home_view, sizeof ws->home_view, "/home/%s", user);
	*binds = grown;
	grown[(*n)++] = (sbx_backend_bind){ .source = source, .dest = ws->home_view,
	                                    .writable = 1 };
	return 0;
}

/* open() with the host paths a HELPER_BINDS backend binds (the MCP gateway's, which only
 * the core knows how to find and check), valid for the call. A capped workspace gets no
 * run folder and no private HOME: neither may be a way past the cap (its MCP speaks over a
 * stream, its HOME is in /tmp). */
static int open_with_binds(sbx_workspace *ws, sbx_backend_config *bc)
{
	sbx_backend_bind *binds = NULL;
	size_t n = 0;
	int r = 0;

	if (ws->caps & SBX_BACKEND_CAP_HELPER_BINDS)
		r = sbx_mcp_helper_binds(bc, !ws->cfg->disk_bytes, &binds, &n);
	if (r == 0 && (ws->caps & SBX_BACKEND_CAP_HELPER_BINDS) && sbx_state_home(ws) &&
	    !home_in_sandbox_tmp(ws))
		r = append_home_bind(ws, &binds, &n);
	bc->binds = binds;
	bc->n_binds = n;
	if (r == 0)
		r = ws->ops->open(bc, &ws->state);
	sbx_mcp_helper_binds_free(binds, n);
	return r;
}

static int open_backend(sbx_workspace *ws, const sbx_open_opts *opts)
{
	const char *network_mode = NULL;
	_cleanup_close_ int audit_dir = -1;
	int r = sbx_network_choose_mode(ws, &network_mode);

	if (r < 0)
		return r;
	snprintf(ws->network_mode, sizeof ws->network_mode, "%s", network_mode);
	audit_dir = sbx_audit_dir_fd(ws);
	sbx_backend_config bc = {
		.size = sizeof bc,
		.id = ws->id,
		.workdir = ws->workdir,
		.workdir_is_temporary = ws->workdir_temporary,
		.network_mode = ws->network_mode,
		.default_timeout_ms = ws->cfg->timeout_ms,
		.limits = ws->cfg->limits,
		.options_json = ws->cfg->backend_options,
		.config_json = ws->cfg->json,
		.read_only = ws->cfg->read_only,
		.network_json = ws->cfg->network_json,
		.audit_dir_fd = audit_dir,
		.audit_max_bytes = ws->cfg->audit_max_bytes,
		.audit_keep = ws->cfg->audit_keep,
		.disk_bytes = ws->cfg->disk_bytes,
		.tmp_bytes = ws->cfg->tmp_bytes,
		.state_dir = ws->state_outside ? ws->state_path : NULL,
		.state_dir_fd = ws->state_outside ? ws->state_fd : -1,
	};
	bc.progress = opts->progress;
	bc.progress_userdata = opts->progress_userdata;
	if ((r = open_with_binds(ws, &bc)) < 0)
		return r;
	if ((r = sbx_workspace_adopt_files_root(ws)) < 0)
		ws->ops->close(ws->state);
	return r;
}

static void free_workspace(sbx_workspace *ws)
{
	if (ws->workdir_temporary && ws->workdir)
		remove_private_dir(ws->workdir);
	sbx_snapshot_release(ws);
	sbx_gitguard_free(ws);
	sbx_strv_free(ws->base_env);
	sbx_config_free(ws->cfg);
	free(ws->id);
	free(ws->workdir);
	sbx_audit_teardown(ws);
	sbx_journal_free(ws->journal);
	sbx_state_tidy_workdir(ws);
	sbx_state_teardown(ws);
	if (ws->root_fd >= 0)
		close(ws->root_fd);
	pthread_mutex_destroy(&ws->state_lock);
	pthread_mutex_destroy(&ws->procs_lock);
	pthread_mutex_destroy(&ws->bg_lock);
	pthread_mutex_destroy(&ws->hooks_lock);
	pthread_mutex_destroy(&ws->audit_lock);
	pthread_mutex_destroy(&ws->network_lock);
	free(ws);
}

int sbx_workspace_open(const char *config_json, sbx_workspace **out)
{
	return sbx_workspace_open_with(config_json, NULL, out);
}

int sbx_workspace_open_with(const char *config_json, const sbx_open_opts *opts,
                            sbx_workspace **out)
{
	sbx_open_opts o;
	sbx_workspace *ws;
	int r;

	if (!out)
		return sbx_fail(-SBX_EINVAL, "out is NULL");
	*out = NULL;
	if ((r = SBX_OPTS_READ(opts, &o, sbx_open_opts)) < 0)
		return r;
	ws = calloc(1, sizeof *ws);
	if (!ws)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	ws->root_fd = -1;
	ws->state_fd = -1;
	ws->state_root_fd = -1;
	ws->snapshot_lock_fd = -1;
	pthread_mutex_init(&ws->state_lock, NULL);
	pthread_mutex_init(&ws->procs_lock, NULL);
	pthread_mutex_init(&ws->bg_lock, NULL);
	pthread_mutex_init(&ws->hooks_lock, NULL);
	pthread_mutex_init(&ws->audit_lock, NULL);
	pthread_mutex_init(&ws->network_lock, NULL);
	if ((r = sbx_config_parse(config_json, &ws->cfg)) < 0 ||
	    (r = sbx_registry_find(ws->cfg->backend, &ws->ops)) < 0 ||
	    (r = sbx_backend_caps(ws->ops, ws->cfg->backend_options, &ws->caps)) < 0 ||
	    (r = sbx_workspace_check_disk_limits(ws)) < 0)
		goto fail;
	ws->files = sbx_files_ops_for(ws->caps);
	r = ws->cfg->id ? ((ws->id = strdup(ws->cfg->id)) ? 0 : sbx_fail(-SBX_ENOMEM, "out of memory"))
	                : random_id(&ws->id);
	if (r < 0)
		goto fail;
	if ((ws->caps & SBX_BACKEND_CAP_HOST_FILES) &&
	    ((r = prepare_workdir(ws)) < 0 || (r = sbx_state_setup(ws)) < 0 ||
	     (r = open_journal(ws)) < 0))
		goto fail;
	if (!(ws->caps & SBX_BACKEND_CAP_HOST_FILES) && ws->cfg->workdir &&
	    !(ws->workdir = strdup(ws->cfg->workdir))) {
		r = sbx_fail(-SBX_ENOMEM, "out of memory");
		goto fail;
	}
	if (ws->cfg->baseline == SBX_BASELINE_SNAPSHOT && (r = sbx_snapshot_take(ws)) < 0)
		goto fail;
	if ((r = sbx_audit_setup(ws)) < 0 || (r = open_backend(ws, &o)) < 0)
		goto fail;
	if ((r = build_base_env(ws)) < 0 || (r = sbx_gitguard_open(ws)) < 0) {
		ws->ops->close(ws->state);
		goto fail;
	}
	sbx_workspace_touch(ws);
	sbx_network_audit_open(ws, ws->network_mode);
	*out = ws;
	return 0;
fail:
	free_workspace(ws);
	return r;
}

int sbx_workspace_close(sbx_workspace *ws)
{
	int r;

	if (!ws)
		return 0;
	sbx_mcp_shutdown(ws);
	sbx_bgshells_stop(ws);
	sbx_process_detach_all(ws);
	sbx_gitguard_backend_closing(ws);
	r = ws->ops->close(ws->state);
	/* The sandbox is gone: nothing can change the files any more. The last check runs
	 * before the caller (and the user's git) gets the workspace back. */
	sbx_gitguard_check(ws, "close");
	free_workspace(ws);
	return r;
}

int sbx_workspace_reset(sbx_workspace *ws)
{
	int r;

	if (!ws)
		return sbx_fail(-SBX_EINVAL, "workspace is NULL");
	if (!ws->ops->reset)
		return sbx_fail(-SBX_ENOSYS, "backend '%s' cannot reset a workspace", ws->ops->name);
	/* Nothing runs now (no call may overlap a reset, and every command's runner took its
	 * tree down with it), so the files can be restored before the sandbox restarts and
	 * protects them afresh. */
	sbx_mcp_shutdown(ws);   /* the gateway dies with the sandbox; the next call starts one */
	sbx_bgshells_stop(ws);
	sbx_process_detach_all(ws);
	sbx_gitguard_check(ws, "reset");
	if ((r = restore_baseline(ws)) < 0 || (r = ws->ops->reset(ws->state)) < 0)
		return r;
	r = sbx_workspace_adopt_files_root(ws);
	sbx_gitguard_after_reset(ws);
	return r;
}

void sbx_workspace_touch(sbx_workspace *ws)
{
	if (ws)
		atomic_store(&ws->last_used_ms, sbx_now_ms());
}

const char *sbx_workspace_id(const sbx_workspace *ws)
{
	return ws ? ws->id : NULL;
}

const char *sbx_workspace_root(const sbx_workspace *ws)
{
	return ws ? ws->ops->root(ws->state) : NULL;
}

const char *sbx_workspace_backend(const sbx_workspace *ws)
{
	return ws ? ws->ops->name : NULL;
}
