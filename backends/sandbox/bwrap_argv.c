/* bubblewrap's command line for a sandbox started through /usr/bin/bwrap, and the
 * placeholders the protected paths need on the host. */
#include "backends/sandbox/sandbox_int.h"



static void arg(struct argv_builder *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 64;
		const char **v = realloc(a->v, cap * sizeof *v);
		if (!v) {
			a->oom = true;
			return;
		}
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

static void args3(struct argv_builder *a, const char *x, const char *y, const char *z)
{
	arg(a, x);
	arg(a, y);
	if (z)
		arg(a, z);
}


static const char *pooled(struct string_pool *p, char *s)
{
	char **v = s ? realloc(p->v, (p->n + 1) * sizeof *v) : NULL;

	if (!v) {
		free(s);
		return "";  /* bwrap then fails on an empty path, and the start reports it */
	}
	p->v = v;
	p->v[p->n++] = s;
	return s;
}

void sbx_sandbox_pool_free(struct string_pool *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
}

static char *path_join(const char *a, const char *b)
{
	char *s = NULL;

	return asprintf(&s, "%s/%s", a, b) < 0 ? NULL : s;
}

/* "a/b/" → "a/b": with the mark, lstat would follow a symlink. */
static char *without_dir_mark(const char *p)
{
	size_t n = strlen(p);

	return strndup(p, n && p[n - 1] == '/' ? n - 1 : n);
}

/* What the sandbox guards. Of the default list, only the library's own folder guards
 * anything in a temporary workdir: the folder is empty when the sandbox starts (so the
 * entries inside .git have no parent, and protect nothing), nothing on the host ever reads
 * its shell rc files or .mcp.json, and the whole folder goes at close. Placeholders for
 * them would be 5 directories made and removed per run, each a synchronous discard on
 * some disks.
 * A list the caller gave is kept as given. */
static const char *const temporary_workdir_list[] = { SBX_STATE_DIR "/", NULL };

static bool guards_temporary_defaults(const struct sbx_sandbox *sb)
{
	return !sb->opts->protected_paths && sb->cfg.workdir_is_temporary;
}

const char *const *sbx_sandbox_protected_list(const struct sbx_sandbox *sb)
{
	if (sb->opts->protected_paths)
		return (const char *const *)sb->opts->protected_paths;
	return guards_temporary_defaults(sb) ? temporary_workdir_list : sbx_default_protected_paths;
}

/* Protected entries missing when the sandbox starts get empty read-only placeholders, which
 * the init or bubblewrap binds read-only onto themselves, so they can't be created from
 * inside. They are made here, for both, and noted in the workspace's journal before they
 * exist (util/journal.h): they go when the sandbox stops — here at close, by the sandbox's
 * tidier when it ends otherwise (its host killed, its idle TTL), or, when both died, at the
 * next open — and only while they are still the empty entries made here. They are sockets
 * or empty directories (sbx_placeholder_kind_of), which git neither shows nor commits. */
void sbx_sandbox_make_placeholders(struct sbx_sandbox *sb)
{
	const char *const *list = sbx_sandbox_protected_list(sb);
	size_t n = 0;
	sbx_journal *j = NULL;

	free(SBX_TAKE_PTR(sb->placeholders));
	/* A temporary workdir's own folder needs no note: nothing of the user's can have its
	 * name (the folder is the core's, and nothing in it is trusted), and it goes with the
	 * folder, however the host ends. It is made whatever the list: with no journal in a
	 * temporary workdir nothing else makes it, and a disk-capped sandbox binds the state
	 * folder there (init/quota.c). mkdirat follows no link at the name. */
	if (sb->cfg.workdir_is_temporary)
		(void)mkdirat(sb->root_fd, SBX_STATE_DIR, 0755);
	if (guards_temporary_defaults(sb))
		return;
	while (list[n])
		n++;
	_cleanup_free_ char **paths = calloc(n + 1, sizeof *paths);
	_cleanup_free_ enum sbx_placeholder_kind *kinds = calloc(n + 1, sizeof *kinds);
	if (!paths || !kinds || sbx_journal_open(sb->root_fd, SBX_JOURNAL_WORKSPACE, &j) < 0) {
		sbx_error_clear();    /* best effort: the sandbox makes them itself then */
		return;
	}
	for (size_t i = 0; i < n; i++) {
		paths[i] = without_dir_mark(list[i]);
		kinds[i] = sbx_placeholder_kind_of(list[i]);
		if (!paths[i])
			break;
	}
	if (sbx_journal_make_placeholders(j, (const char *const *)paths, kinds, sb->opts->detached,
	                                  &sb->placeholders) < 0)
		sbx_error_clear();
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	sbx_journal_free(j);
}

void sbx_sandbox_remove_placeholders(struct sbx_sandbox *sb)
{
	sbx_journal_undo(sb->root_fd, SBX_JOURNAL_WORKSPACE, sb->placeholders);
	free(SBX_TAKE_PTR(sb->placeholders));
}

static void bwrap_system_dirs(struct argv_builder *a, struct string_pool *pool,
                              const char *rootfs)
{
	if (rootfs) {
		args3(a, "--ro-bind", rootfs, "/");
		return;
	}
	for (const char *const *d = sbx_system_dirs; *d; d++) {
		const char *path = pooled(pool, path_join("", *d));
		char target[PATH_MAX];
		struct stat st;
		ssize_t n;

		if (lstat(path, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode) && (n = readlink(path, target, sizeof target - 1)) > 0) {
			target[n] = '\0';
			args3(a, "--symlink", pooled(pool, strdup(target)), path);
		} else if (S_ISDIR(st.st_mode)) {
			args3(a, "--ro-bind", path, path);
		}
	}
}

static void bwrap_etc_entry(struct argv_builder *a, struct string_pool *pool, const char *name)
{
	const char *path = pooled(pool, path_join("/etc", name));

	args3(a, "--ro-bind-try", path, path);
}

/* The allow-list, with "name*" entries expanded against the host's /etc. */
static void bwrap_etc(struct argv_builder *a, struct string_pool *pool, bool have_rootfs)
{
	if (have_rootfs)
		return;
	args3(a, "--tmpfs", "/etc", NULL);
	for (const char *const *e = sbx_etc_allowlist; *e; e++) {
		size_t len = strlen(*e);
		DIR *d;
		struct dirent *de;

		if ((*e)[len - 1] != '*') {
			bwrap_etc_entry(a, pool, *e);
			continue;
		}
		if (!(d = opendir("/etc")))
			continue;
		while ((de = readdir(d)))
			if (!strncmp(de->d_name, *e, len - 1) && de->d_name[0] != '.')
				bwrap_etc_entry(a, pool, pooled(pool, strdup(de->d_name)));
		closedir(d);
	}
}

/* Whether a layout place may be made at path: always on bubblewrap's own root, and under a
 * caller's rootfs (bound read-only at /) only where the rootfs has that directory. */
static bool layout_point_ok(const char *rootfs, const char *path)
{
	char full[PATH_MAX];
	struct stat st;

	if (!rootfs)
		return true;
	snprintf(full, sizeof full, "%s%s", rootfs, path);
	return lstat(full, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The host's /opt entries, each read-only in a directory of bubblewrap's root (as the init
 * does it: helpers/init/rootfs.c), so that a bind below /opt still gets its mount point. */
static void bwrap_opt(struct argv_builder *a, struct string_pool *pool)
{
	DIR *d = opendir("/opt");
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		const char *path;
		char target[PATH_MAX];
		struct stat st;
		ssize_t n;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		path = pooled(pool, path_join("/opt", de->d_name));
		if (lstat(path, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode) && (n = readlink(path, target, sizeof target - 1)) > 0) {
			target[n] = '\0';
			args3(a, "--symlink", pooled(pool, strdup(target)), path);
		} else if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) {
			args3(a, "--ro-bind", path, path);
		}
	}
	closedir(d);
}

/* The rest of a normal root, as the init makes it in direct mode (helpers/init/rootfs_layout.c):
 * empty /home, /root, /srv, /mnt and /var/lib, /opt, and writable private /run, /var/tmp and
 * /var/cache. bubblewrap 0.8 cannot size a tmpfs: with limits.tmp_bytes the init mounts the
 * capped ones over these (helpers/init/quota.c). */
static void bwrap_layout(struct argv_builder *a, struct string_pool *pool, const char *rootfs)
{
	static const char *const dirs[] = { "/home", "/root", "/srv", "/mnt", "/opt", "/var",
	                                    "/var/lib", NULL };
	static const char *const places[][2] = {
		{ "/run", "0755" }, { "/var/tmp", "1777" }, { "/var/cache", "0755" },
	};

	for (size_t i = 0; !rootfs && dirs[i]; i++)
		args3(a, "--dir", dirs[i], NULL);
	/* A caller's /home gets a private tmpfs, where the private HOME's mount point can be
	 * made: the rootfs itself is read-only. */
	if (rootfs && layout_point_ok(rootfs, "/home"))
		args3(a, "--tmpfs", "/home", NULL);
	if (!rootfs)
		bwrap_opt(a, pool);
	for (size_t i = 0; i < SBX_ARRAY_SIZE(places); i++)
		if (layout_point_ok(rootfs, places[i][0])) {
			args3(a, "--perms", places[i][1], NULL);
			args3(a, "--tmpfs", places[i][0], NULL);
		}
}

/* The fds bubblewrap binds (--bind-fd, --ro-bind-fd): the child gets v[i] as fd
 * BWRAP_FIRST_BIND_FD + i, after the init's own (init_proto.h). Closed by the caller after
 * the start. */
#define BWRAP_FIRST_BIND_FD SBX_INIT_FIRST_TREE_FD


/* Takes fd; returns its number in bubblewrap as a string, or NULL (fd closed) when out of
 * memory — the path is then left out, and bwrap_argv reports the shortage. */
static const char *fd_list_take(struct fd_list *l, struct string_pool *pool, int fd)
{
	int *v = realloc(l->v, (l->n + 1) * sizeof *v);
	char *num = NULL;

	if (!v || asprintf(&num, "%d", BWRAP_FIRST_BIND_FD + (int)l->n) < 0) {
		if (v)
			l->v = v;
		close(fd);
		return NULL;
	}
	l->v = v;
	l->v[l->n++] = fd;
	return pooled(pool, num);
}

/* Takes fd (closed on failure). */
int sbx_sandbox_fd_list_push(struct fd_list *l, int fd)
{
	int *v = realloc(l->v, (l->n + 1) * sizeof *v);

	if (!v) {
		close(fd);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	l->v = v;
	l->v[l->n++] = fd;
	return 0;
}

void sbx_sandbox_fd_list_close(struct fd_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		close(l->v[i]);
	free(l->v);
	*l = (struct fd_list){ 0 };
}

static bool already_bound(const struct argv_builder *a, const char *dest)
{
	for (size_t i = 0; i + 2 < a->n; i++)
		if (!strcmp(a->v[i], "--bind-fd") && !strcmp(a->v[i + 2], dest))
			return true;
	return false;
}

static void bind_fd(struct argv_builder *a, struct string_pool *pool, struct fd_list *fds,
                    const char *option, int fd, const char *dest)
{
	const char *num = fd_list_take(fds, pool, fd);

	if (num)
		args3(a, option, num, dest);
	else
		a->oom = true;
}

/* One protected path under bubblewrap, treated as protect.c treats it in direct mode. It is
 * walked from the workspace one component at a time without following a link, and each
 * step is handed to bubblewrap as an open fd: nothing can be swapped in between the look and
 * the bind.
 *  - a directory on the way is bound onto itself, writable as before: a mount point cannot
 *    be renamed, so ".git" cannot be moved aside and replaced by a fresh one with new hooks;
 *  - a regular file on the way (a worktree's ".git" file, which names the real git
 *    directory) decides where the rest resolves: it is bound read-only, and the walk ends;
 *  - the path itself, when it exists (make_placeholders made what was missing), is
 *    bound read-only;
 *  - a symlink ends the walk: binding over it would follow it. */
static void bwrap_protect_one(struct argv_builder *a, struct string_pool *pool,
                              struct fd_list *fds, int root_fd, const char *entry)
{
	_cleanup_free_ char *rel = without_dir_mark(entry), *prefix = NULL;
	_cleanup_close_ int cur = fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
	char *save = NULL, *name, *next;

	if (!rel || !(prefix = calloc(1, strlen(rel) + 1)) || cur < 0) {
		a->oom = a->oom || !rel || !prefix;
		return;
	}
	for (name = strtok_r(rel, "/", &save); name; name = next) {
		int fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		const char *dest;
		struct stat st;

		next = strtok_r(NULL, "/", &save);
		if (fd >= 0 && (fstat(fd, &st) < 0 || S_ISLNK(st.st_mode))) {
			close(fd);
			fd = -1;
		}
		if (fd < 0)
			return;   /* missing, or a link: nothing to bind */
		strcat(strcat(prefix, *prefix ? "/" : ""), name);
		dest = pooled(pool, path_join(SBX_SANDBOX_ROOT, prefix));
		if (!next || !S_ISDIR(st.st_mode)) {
			bind_fd(a, pool, fds, "--ro-bind-fd", fd, dest);
			return;
		}
		if (!already_bound(a, dest)) {
			int pin = fcntl(fd, F_DUPFD_CLOEXEC, 3);

			if (pin < 0) {
				close(fd);
				return;
			}
			bind_fd(a, pool, fds, "--bind-fd", pin, dest);
		}
		close(cur);
		cur = fd;
	}
}

static void bwrap_protected(struct argv_builder *a, struct string_pool *pool,
                            struct fd_list *fds, const struct sbx_sandbox *sb)
{
	for (const char *const *p = sbx_sandbox_protected_list(sb); *p; p++)
		bwrap_protect_one(a, pool, fds, sb->root_fd, *p);
}

/* Binds the init makes itself when the sandbox runs as a host range (helpers/init/quota.c):
 * from the idmapped workspace, or idmapped mounts of their own. */
static bool init_makes_bind(const struct sbx_sandbox *sb, size_t i)
{
	return sb->idmap.on && (sbx_path_below(sb->opts->binds[i].source, sb->workdir) ||
	                        sbx_sandbox_bind_needs_tree(sb, i));
}

/* Such a bind's mount point, where the init cannot make one: outside its own /tmp and
 * workspace, in bubblewrap's read-only root. A directory, or a file for a file. */
static void bwrap_mount_point(struct argv_builder *a, const struct sbx_sandbox *sb, size_t i)
{
	const struct sbx_bind *b = &sb->opts->binds[i];
	const char *in_ws = sbx_path_below(b->source, sb->workdir);
	struct stat st;
	bool dir = true;

	if (!strncmp(b->dest, "/tmp/", 5) || sbx_path_below(b->dest, SBX_SANDBOX_ROOT))
		return;
	if (in_ws ? fstatat(sb->root_fd, in_ws, &st, AT_SYMLINK_NOFOLLOW) == 0
	          : lstat(b->source, &st) == 0)
		dir = S_ISDIR(st.st_mode);
	if (dir)
		args3(a, "--dir", b->dest, NULL);
	else
		args3(a, "--ro-bind", "/dev/null", b->dest);
}

/* The workspace: by fd, not by path (the host path can't be swapped under us), with its
 * protected paths; or, as a host range, only its mount point, for the init's idmapped one. */
static void bwrap_workspace(struct argv_builder *a, struct string_pool *pool,
                            struct fd_list *fds, const struct sbx_sandbox *sb)
{
	if (sb->idmap.on) {
		args3(a, "--dir", SBX_SANDBOX_ROOT, NULL);
		return;
	}
	args3(a, sb->cfg.read_only ? "--ro-bind-fd" : "--bind-fd", "5", SBX_SANDBOX_ROOT);
	/* A capped workspace hides this one; the init protects its paths on the tmpfs. */
	if (!sbx_quota_disk_bytes(&sb->cfg))
		bwrap_protected(a, pool, fds, sb);
}

/* A bind source inside the workspace (the MCP run folder, a caller's bind below the workdir)
 * goes to bubblewrap as an fd opened beneath the workspace, as the init opens it in direct
 * mode: bubblewrap would follow a link in the path anywhere on the host. */
static int bwrap_workspace_bind(struct argv_builder *a, struct string_pool *pool,
                                struct fd_list *fds, const struct sbx_sandbox *sb,
                                const struct sbx_bind *b, const char *rel)
{
	int fd = sbx_path_open(sb->root_fd, rel, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
	struct stat st;
	char msg[512];

	if (fd >= 0 && (fstat(fd, &st) < 0 || S_ISLNK(st.st_mode) || S_ISCHR(st.st_mode) ||
	                S_ISBLK(st.st_mode))) {
		close(fd);
		return sbx_fail(-SBX_EINVAL, "%s: bind source %s: a link or a device node is not "
		                "allowed", sb->who, b->source);
	}
	if (fd < 0) {
		snprintf(msg, sizeof msg, "%s", sbx_last_error());
		return sbx_fail(fd, "%s: bind source %s: %s", sb->who, b->source, msg);
	}
	bind_fd(a, pool, fds, b->writable ? "--bind-fd" : "--ro-bind-fd", fd, b->dest);
	return 0;
}

/* Under a caller's rootfs, bubblewrap can make a bind's mount point only below a directory the
 * rootfs has (it is bound read-only): say which one is missing rather than let bubblewrap fail
 * with "Can't mkdir parents". */
static int check_rootfs_parent(const char *rootfs, const char *dest)
{
	char top[PATH_MAX];
	size_t len = strcspn(dest + 1, "/") + 1;

	if (!rootfs || len >= sizeof top || !dest[len])
		return 0;
	memcpy(top, dest, len);
	top[len] = '\0';
	if (layout_point_ok(rootfs, top))
		return 0;
	return sbx_fail(-SBX_EINVAL, "rootfs: %s has no %s directory, where the mount point of %s "
	                "must be made (bubblewrap cannot make it in the read-only rootfs); add an "
	                "empty %s to the rootfs", rootfs, top, dest, top);
}

static int bwrap_binds(struct argv_builder *a, struct string_pool *pool, struct fd_list *fds,
                       const struct sbx_sandbox *sb)
{
	const struct sbx_sandbox_options *o = sb->opts;
	int r;

	for (size_t i = 0; i < o->n_binds; i++) {
		const char *in_ws = sbx_path_below(o->binds[i].source, sb->workdir);

		if ((r = check_rootfs_parent(o->rootfs, o->binds[i].dest)) < 0)
			return r;

		if (init_makes_bind(sb, i)) {
			bwrap_mount_point(a, sb, i);
			continue;
		}
		if (in_ws && (r = bwrap_workspace_bind(a, pool, fds, sb, &o->binds[i], in_ws)) < 0)
			return r;
		if (!in_ws)
			args3(a, o->binds[i].writable ? "--bind" : "--ro-bind", o->binds[i].source,
			      o->binds[i].dest);
	}
	return 0;
}

/* bubblewrap's command line in *out (caller frees), or a negative code with the message. */
int sbx_sandbox_bwrap_argv(const struct sbx_sandbox *sb, const char *init, struct string_pool *pool,
                           struct fd_list *fds, const char ***out)
{
	struct argv_builder a = { 0 };
	const struct sbx_sandbox_options *o = sb->opts;
	int r;

	/* --unshare-all only tries the user namespace; --disable-userns needs one for sure. */
	/* The outer process that starts bwrap and watches the host (helpers/init/main.c). */
	arg(&a, init);
	if (o->detached)
		arg(&a, "--detached");
	if (sb->placeholders)
		args3(&a, "--tidy", sb->placeholders, NULL);   /* its outer process tidies */
	/* As root: the outer process starts bubblewrap as the range's first host ids. */
	if (sb->idmap.on) {
		char *ids = NULL;

		if (asprintf(&ids, "%u:%u", sb->idmap.uid, sb->idmap.gid) < 0)
			ids = NULL;
		args3(&a, "--users", pooled(pool, ids), NULL);
	}
	args3(&a, "--proto", "1", NULL);
	args3(&a, "--mode", "bwrap", "--");
	args3(&a, SBX_BWRAP_PATH, "--unshare-all", "--unshare-user");
	if (!strcmp(sb->network_mode, "host"))
		arg(&a, "--share-net");
	/* bwrap's parent is agentsbx-init's single-threaded outer process ("--mode bwrap"), so
	 * --die-with-parent (PR_SET_PDEATHSIG, which fires when the parent *thread* ends) holds. */
	args3(&a, "--die-with-parent", "--new-session", NULL);
	arg(&a, "--as-pid-1");
	/* Unprivileged, it runs the init as that user; the init attaches the workspace in a
	 * user and mount namespace of its own (helpers/init/quota.c), as for a capped /tmp, and
	 * is uid 0 there. (Not "--uid 0": bubblewrap drops CAP_SETFCAP, and without it no
	 * namespace below may map its parent's uid 0.) */
	if (!sbx_sandbox_bwrap_own_mounts(sb) && !sb->idmap.on)
		arg(&a, "--disable-userns");
	args3(&a, "--hostname", o->hostname, NULL);
	bwrap_system_dirs(&a, pool, o->rootfs);
	bwrap_etc(&a, pool, o->rootfs != NULL);
	args3(&a, "--proc", "/proc", NULL);
	args3(&a, "--dev", "/dev", NULL);
	args3(&a, "--tmpfs", "/tmp", NULL);
	bwrap_layout(&a, pool, o->rootfs);
	bwrap_workspace(&a, pool, fds, sb);
	if ((r = bwrap_binds(&a, pool, fds, sb)) < 0) {
		free(a.v);
		return r;
	}
	args3(&a, "--ro-bind", init, BWRAP_INIT_PATH);
	/* bubblewrap's root is a tmpfs the sandbox's uid owns, writable wherever Landlock is
	 * off or missing: sealed here, last, once every mount point in it is made. An init that
	 * mounts below bubblewrap's namespace needs it writable for its mount points and seals
	 * it itself when done (quota.c). */
	if (!sbx_sandbox_bwrap_own_mounts(sb))
		args3(&a, "--remount-ro", "/", NULL);
	args3(&a, "--chdir", SBX_SANDBOX_ROOT, NULL);
	args3(&a, "--", BWRAP_INIT_PATH, "--proto");
	args3(&a, "1", "--mode", "inside");
	if (a.oom) {
		free(a.v);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	*out = a.v;
	return 0;
}
