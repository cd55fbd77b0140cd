/* The sandbox's root filesystem, built in the caller's new mount namespace.
 *
 * Two phases. First every host object the root is made of is opened and pinned with O_PATH:
 * /usr, /bin, ... (or the entries of a caller-given rootfs), the allow-listed /etc entries,
 * the device nodes and the sources of extra binds. Only then is anything mounted, starting
 * with a tmpfs over /tmp that becomes the new root. From there on no host path string is
 * resolved again, so neither that tmpfs hiding the host's /tmp nor a symlink swapped in later
 * can change what gets bound (CVE-2024-42472). Second, the tree is assembled on the tmpfs,
 * sealed read-only and pivot_root'ed into, and the old root is detached: nothing of the host
 * is reachable by path any more.
 *
 * The new root lives at /tmp of our own private mount namespace, as in bubblewrap: invisible
 * to everyone else, never a predictable path in a shared directory (CVE-2019-12439).
 *
 * Flags: everything nosuid,nodev except the device nodes; the system directories, /etc, /dev
 * and the root itself read-only; /workspace, /tmp, /dev/shm, /run, /var/tmp and /var/cache
 * writable (rootfs_layout.c has the rest of the layout). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "util/error.h"
#include "init/mount_util.h"
#include "init/quota.h"
#include "init/rootfs_internal.h"
#include "init/sandbox.h"
#include "util/cleanup.h"

#define RO_FLAGS (MS_RDONLY | MS_NOSUID | MS_NODEV)
#define RW_FLAGS (MS_NOSUID | MS_NODEV)

/* Names of a caller-given rootfs that are not taken from it: the sandbox gets fresh ones
 * (/home: the layout's empty one, where the private HOME is mounted). */
static const char *const rootfs_skipped[] = { "proc", "dev", "tmp", "workspace", "home", NULL };

#define PINS_NONE { .workspace = -1, .host_root = -1, .host_tmp = -1, \
                    .dev = { -1, -1, -1, -1, -1, -1 } }

/* A host object pinned before anything is mounted. */
struct pin {
	char *rel;                /* where it goes, relative to the new root */
	int fd;                   /* O_PATH on the object (readable: an /etc file to copy), or
	                             -1 for a link */
	char *link;               /* the target of a link to recreate, or NULL */
};

struct pin_list {
	struct pin *v;
	size_t n;
};

struct pins {
	int workspace;            /* the workspace, as a mount of our own namespace */
	int host_root;            /* the host's / and /tmp, opened before the new root hides */
	int host_tmp;             /* /tmp: what the workspace's path is resolved from */
	struct pin_list top;      /* /usr, /bin, ... or the entries of spec->rootfs */
	struct pin_list etc;      /* allow-listed /etc entries (host system only) */
	struct pin_list opt;      /* the entries of the host's /opt (host system only) */
	int dev[SBX_DEV_NODES];
	int *binds;               /* spec->binds[i].source */
	size_t n_binds;
};

/* Takes ownership of fd, also on failure. */
static int pin_push(struct pin_list *l, const char *rel, int fd, const char *link)
{
	struct pin *nv = realloc(l->v, (l->n + 1) * sizeof *nv);
	struct pin p = { strdup(rel), fd, link ? strdup(link) : NULL };

	if (nv)
		l->v = nv;
	if (!nv || !p.rel || (link && !p.link)) {
		free(p.rel);
		free(p.link);
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	l->v[l->n++] = p;
	return 0;
}

static void pin_list_release(struct pin_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].rel);
		free(l->v[i].link);
		if (l->v[i].fd >= 0)
			close(l->v[i].fd);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* Closes every host fd: none may still be open when the sandbox's first process starts. */
static void pins_release(struct pins *p)
{
	if (p->workspace >= 0)
		close(p->workspace);
	if (p->host_root >= 0)
		close(p->host_root);
	if (p->host_tmp >= 0)
		close(p->host_tmp);
	pin_list_release(&p->top);
	pin_list_release(&p->etc);
	pin_list_release(&p->opt);
	for (size_t i = 0; i < SBX_DEV_NODES; i++)
		if (p->dev[i] >= 0)
			close(p->dev[i]);
	for (size_t i = 0; i < p->n_binds; i++)
		if (p->binds && p->binds[i] >= 0)
			close(p->binds[i]);
	free(p->binds);
	*p = (struct pins)PINS_NONE;
}

/* ---- validation: refuse bad input before anything is mounted ---- */

static bool bind_dest_ok(const char *dest)
{
	char first[NAME_MAX + 1];
	size_t n;

	if (!dest || dest[0] != '/' || !sbx_rel_path_ok(dest + 1))
		return false;
	n = strcspn(dest + 1, "/");
	if (n >= sizeof first)
		return false;
	memcpy(first, dest + 1, n);
	first[n] = '\0';
	/* Binds may go below /tmp and /workspace, but not hide them, nor touch /proc or /dev. */
	if (strcmp(first, "proc") == 0 || strcmp(first, "dev") == 0)
		return false;
	return strcmp(dest, "/tmp") != 0 && strcmp(dest, SBX_SANDBOX_ROOT) != 0;
}

static int validate_workspace_fd(int fd, char *err, size_t errlen)
{
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		return sbx_fail_buf(err, errlen, -EBADF, "rootfs: the workspace fd is not open");
	if (!S_ISDIR(st.st_mode))
		return sbx_fail_buf(err, errlen, -ENOTDIR, "rootfs: the workspace is not a directory");
	return 0;
}

static int validate_spec(const struct sbx_rootfs_spec *spec, char *err, size_t errlen)
{
	if (!spec)
		return sbx_fail_buf(err, errlen, -EINVAL, "rootfs: no spec");
	if (spec->hostname && (!*spec->hostname || strlen(spec->hostname) > HOST_NAME_MAX))
		return sbx_fail_buf(err, errlen, -EINVAL, "rootfs: bad hostname \"%s\"",
		                    spec->hostname);
	for (size_t i = 0; spec->protected_paths && spec->protected_paths[i]; i++)
		if (!sbx_rel_path_ok(spec->protected_paths[i]))
			return sbx_fail_buf(err, errlen, -EINVAL,
			                    "rootfs: protected path \"%s\" is not a plain relative path",
			                    spec->protected_paths[i]);
	for (size_t i = 0; i < spec->n_binds; i++) {
		const struct sbx_bind *b = &spec->binds[i];
		bool relative = b->in_workspace || b->in_state;

		if (!b->source || (relative ? !sbx_rel_path_ok(b->source) : b->source[0] != '/'))
			return sbx_fail_buf(err, errlen, -EINVAL,
			                    "rootfs: bind source \"%s\" is not an %s path",
			                    b->source ? b->source : "(null)",
			                    relative ? "plain relative" : "absolute");
		if (!bind_dest_ok(b->dest))
			return sbx_fail_buf(err, errlen, -EINVAL,
			                    "rootfs: bind destination \"%s\" is not allowed",
			                    b->dest ? b->dest : "(null)");
	}
	return 0;
}

/* ---- phase 1: pin the host objects ---- */

/* The host's / and /tmp, opened before the new root is mounted over /tmp: the workspace is
 * resolved from them later (a pre-started sandbox learns its workspace only then). */
static int pin_host_anchors(struct pins *p, char *err, size_t errlen)
{
	p->host_root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	p->host_tmp = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (p->host_root < 0 || p->host_tmp < 0)
		return sbx_fail_buf(err, errlen, -errno, "rootfs: open / and /tmp: %s",
		                    strerror(errno));
	return 0;
}

/* Opens the host path `path` (absolute, as the kernel names it) beneath the host anchors. The
 * only mount this namespace made on a host path is the new root over /tmp, so a path below
 * /tmp is walked from the /tmp pinned before it, and any other from /. */
static int open_host_path(const struct pins *p, const char *path, int *out)
{
	if (strcmp(path, "/tmp") == 0)
		return sbx_open_beneath(p->host_tmp, "", out);
	if (strncmp(path, "/tmp/", 5) == 0)
		return sbx_open_beneath(p->host_tmp, path + 5, out);
	return sbx_open_beneath(p->host_root, path + 1, out);
}

/* The workspace fd (and the sources of a spare's binds from the state folder) may come from
 * the mount namespace we left: the library opens it before the sandbox exists. The kernel
 * binds only mounts of our own namespace (EINVAL otherwise), so such an fd is reopened
 * through the path the kernel gives for it, walked without following any link, and accepted
 * only if it is the very same directory or file (device and inode). A rename or a swapped-in link
 * between the two opens fails the build instead of binding something else. (An fd of our own
 * namespace comes out of this as itself, without the cost of reading the mount table to tell
 * the two apart.) */
static int reopen_here(const struct pins *pins, int host_fd, const char *what, int *out,
                       char *err, size_t errlen)
{
	_cleanup_close_ int fd = -1;
	struct sbx_fd_path p;
	char path[PATH_MAX];
	struct stat a, b;
	ssize_t n;
	int r;

	n = readlink(sbx_fd_path(&p, host_fd), path, sizeof path - 1);
	if (n <= 0)
		return sbx_fail_buf(err, errlen, n < 0 ? -errno : -EIO, "%s: readlink %s: %s", what,
		                    p.s, n < 0 ? strerror(errno) : "empty");
	path[n] = '\0';
	if (path[0] != '/' || (n > 10 && strcmp(path + n - 10, " (deleted)") == 0))
		return sbx_fail_buf(err, errlen, -ENOENT, "%s: %s is gone", what, path);
	r = open_host_path(pins, path, &fd);
	if (r < 0)
		return sbx_fail_buf(err, errlen, r, "%s: reopen %s in the new mount namespace: %s",
		                    what, path, strerror(-r));
	if (fstat(host_fd, &a) < 0 || fstat(fd, &b) < 0)
		return sbx_fail_buf(err, errlen, -errno, "%s: fstat: %s", what, strerror(errno));
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return sbx_fail_buf(err, errlen, -ESTALE,
		                    "%s: %s is no longer the directory the host's fd names", what,
		                    path);
	*out = SBX_TAKE_FD(fd);
	return 0;
}

static int pin_workspace(struct pins *pins, int ws_fd, bool tree, char *err, size_t errlen)
{
	/* A detached mount the host made (idmapped: init_proto.h) is attached as it is: it names
	 * no path, and moving it needs none. */
	if (tree) {
		if ((pins->workspace = fcntl(ws_fd, F_DUPFD_CLOEXEC, 3)) < 0)
			return sbx_fail_buf(err, errlen, -errno, "workspace: dup: %s", strerror(errno));
		return 0;
	}
	return reopen_here(pins, ws_fd, "workspace", &pins->workspace, err, errlen);
}

/* One entry of a root directory: a link to recreate, or a directory or file to bind. It goes
 * at prefix + name in the new root. */
static int pin_top_entry(int dirfd, const char *where, const char *prefix, const char *name,
                         struct pin_list *l, char *err, size_t errlen)
{
	int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	char target[PATH_MAX], rel[PATH_MAX];
	struct stat st;
	ssize_t n;

	if (snprintf(rel, sizeof rel, "%s%s", prefix, name) >= (int)sizeof rel) {
		if (fd >= 0)
			close(fd);
		return sbx_fail_buf(err, errlen, -ENAMETOOLONG, "%s/%s: name too long", where, name);
	}

	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int r = -errno;

		if (fd >= 0)
			close(fd);
		return sbx_fail_buf(err, errlen, r, "open %s/%s: %s", where, name, strerror(-r));
	}
	if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))
		return pin_push(l, rel, fd, NULL);
	if (!S_ISLNK(st.st_mode)) {
		close(fd);
		return 0;
	}
	n = readlinkat(fd, "", target, sizeof target - 1);
	close(fd);
	if (n < 0)
		return sbx_fail_buf(err, errlen, -errno, "readlink %s/%s: %s", where, name,
		                    strerror(errno));
	target[n] = '\0';
	return pin_push(l, rel, -1, target);
}

static int pin_system_dirs(struct pin_list *l, char *err, size_t errlen)
{
	_cleanup_close_ int rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int r = 0;

	if (rootfd < 0)
		return sbx_fail_buf(err, errlen, -errno, "open /: %s", strerror(errno));
	for (size_t i = 0; sbx_system_dirs[i] && r == 0; i++)
		r = pin_top_entry(rootfd, "", "", sbx_system_dirs[i], l, err, errlen);
	return r;
}

static bool in_list(const char *const *list, const char *name)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(list[i], name) == 0)
			return true;
	return false;
}

/* Calls fn for each name in the directory dirfd is open on (O_PATH is enough). */
static int for_each_name(int dirfd, int (*fn)(const char *name, void *ctx), void *ctx)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *e;
	DIR *d;
	int r = 0;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		return r;
	}
	while (r == 0 && (errno = 0, e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			r = fn(e->d_name, ctx);
	if (r == 0 && errno)
		r = -errno;
	closedir(d);
	return r;
}

struct rootfs_walk {
	int dirfd;
	const char *where;
	const char *prefix;       /* where the entries go in the new root: "" or "opt/" */
	struct pin_list *l;
	char *err;
	size_t errlen;
};

static int pin_rootfs_name(const char *name, void *ctx)
{
	struct rootfs_walk *w = ctx;

	if (!*w->prefix && in_list(rootfs_skipped, name))
		return 0;
	return pin_top_entry(w->dirfd, w->where, w->prefix, name, w->l, w->err, w->errlen);
}

static int pin_rootfs_top(const char *rootfs, struct pin_list *l, char *err, size_t errlen)
{
	_cleanup_close_ int fd = open(rootfs, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct rootfs_walk w = { fd, rootfs, "", l, err, errlen };
	int r;

	if (fd < 0)
		return sbx_fail_buf(err, errlen, -errno, "open the rootfs %s: %s", rootfs,
		                    strerror(errno));
	err[0] = '\0';
	r = for_each_name(fd, pin_rootfs_name, &w);
	if (r < 0 && !err[0])
		return sbx_fail_buf(err, errlen, r, "read the rootfs %s: %s", rootfs, strerror(-r));
	return r;
}

/* The entries of the host's /opt (policy.c), where it is a directory: a link there is not
 * followed, a missing one leaves the sandbox's /opt empty. */
static int pin_opt(struct pin_list *l, char *err, size_t errlen)
{
	_cleanup_close_ int rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int fd = -1;
	struct rootfs_walk w = { -1, "/opt", "opt/", l, err, errlen };
	int r;

	if (rootfd >= 0)
		fd = openat(rootfd, sbx_opt_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? 0
		       : sbx_fail_buf(err, errlen, -errno, "open /opt: %s", strerror(errno));
	w.dirfd = fd;
	err[0] = '\0';
	r = for_each_name(fd, pin_rootfs_name, &w);
	if (r < 0 && !err[0])
		return sbx_fail_buf(err, errlen, r, "read /opt: %s", strerror(-r));
	return r;
}

/* Small /etc files are copied into the sandbox's /etc rather than bound: a bind costs a mount
 * (and a remount) each, and a sandbox starts with some thirty of them. The copy is what the
 * host had when the sandbox started, read-only once /etc is sealed. */
#define ETC_COPY_MAX (256 * 1024)

static bool etc_entry_is_copied(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_size <= ETC_COPY_MAX;
}

/* A file to copy is read through a second open by name, kept only if it is the very file the
 * O_PATH pin holds (device and inode): reopening the pin through /proc/self/fd would walk
 * procfs, which makes its inodes anew, once per file. Where the name no longer leads to that
 * file, the O_PATH pin stays and the copy reopens it through /proc as before. (O_NONBLOCK and
 * O_NOCTTY: should the name lead to a FIFO or a terminal by then, the open neither waits nor
 * takes it, and the check drops it.) */
static int readable_pin(int etcfd, const char *name, int path_fd, const struct stat *st)
{
	int fd = openat(etcfd, name, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	struct stat now;

	if (fd < 0)
		return path_fd;
	if (fstat(fd, &now) < 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
		close(fd);
		return path_fd;
	}
	close(path_fd);
	return fd;
}

static int pin_etc_entry(int etcfd, const char *name, struct pin_list *l)
{
	int fd = openat(etcfd, name, O_PATH | O_CLOEXEC);   /* following links: see sbx_etc_allowlist */
	char rel[PATH_MAX];
	struct stat st;

	if (fd < 0)
		return (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) ? 0 : -errno;
	if (fstat(fd, &st) < 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) {
		close(fd);
		return 0;
	}
	if (etc_entry_is_copied(&st))
		fd = readable_pin(etcfd, name, fd, &st);
	snprintf(rel, sizeof rel, "etc/%s", name);
	return pin_push(l, rel, fd, NULL);
}

struct etc_prefix {
	int etcfd;
	const char *prefix;
	size_t len;
	struct pin_list *l;
};

static int pin_etc_if_prefixed(const char *name, void *ctx)
{
	struct etc_prefix *p = ctx;

	if (strncmp(name, p->prefix, p->len) != 0)
		return 0;
	return pin_etc_entry(p->etcfd, name, p->l);
}

static int pin_etc(struct pin_list *l, char *err, size_t errlen)
{
	_cleanup_close_ int etcfd = open("/etc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int r = 0;

	if (etcfd < 0)
		return sbx_fail_buf(err, errlen, -errno, "open /etc: %s", strerror(errno));
	for (size_t i = 0; sbx_etc_allowlist[i] && r == 0; i++) {
		size_t len = strlen(sbx_etc_allowlist[i]);

		if (sbx_etc_allowlist[i][len - 1] == '*') {
			struct etc_prefix p = { etcfd, sbx_etc_allowlist[i], len - 1, l };

			r = for_each_name(etcfd, pin_etc_if_prefixed, &p);
		} else {
			r = pin_etc_entry(etcfd, sbx_etc_allowlist[i], l);
		}
		if (r < 0)
			return sbx_fail_buf(err, errlen, r, "open /etc/%s: %s", sbx_etc_allowlist[i],
			                    strerror(-r));
	}
	return 0;
}

/* Extra bind sources: never a link (O_NOFOLLOW plus a type check, as O_PATH|O_NOFOLLOW opens
 * the link itself), never a device node. A source inside the workspace is opened beneath it. */
static int pin_bind_source(const struct pins *p, const struct sbx_bind *b, int *out,
                           char *err, size_t errlen)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r = 0;

	if (b->tree_fd > 2)
		r = (fd = fcntl(b->tree_fd, F_DUPFD_CLOEXEC, 3)) < 0 ? -errno : 0;
	else if (b->in_workspace)
		r = sbx_open_beneath(p->workspace, b->source, &fd);
	else if (b->in_state && b->source_fd > 2)
		r = reopen_here(p, b->source_fd, b->dest, &fd, err, errlen);
	else if (b->in_state)
		r = -EBADF;   /* the activation brought no source */
	else if ((fd = open(b->source, O_PATH | O_NOFOLLOW | O_CLOEXEC)) < 0)
		r = -errno;
	if (r == 0 && fstat(fd, &st) < 0)
		r = -errno;
	if (r < 0)
		return sbx_fail_buf(err, errlen, r, "open bind source %s%s: %s",
		                    b->in_workspace ? "/workspace/" : b->in_state ? "<state>/" : "",
		                    b->source, strerror(-r));
	if (S_ISLNK(st.st_mode))
		return sbx_fail_buf(err, errlen, -ELOOP,
		                    "bind source %s is a symbolic link; give its target", b->source);
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
		return sbx_fail_buf(err, errlen, -EPERM,
		                    "bind source %s is a device node: not allowed", b->source);
	*out = SBX_TAKE_FD(fd);
	return 0;
}

/* Whether a bind's source is known only once the workspace is: one in the workspace, or in
 * the state folder a spare's activation brings. */
static bool pinned_late(const struct sbx_bind *b)
{
	return b->in_workspace || b->in_state;
}

/* The sources of the binds from the host (late false) or from the workspace and its state
 * folder, which can only be pinned once they are known. */
static int pin_binds(const struct sbx_rootfs_spec *spec, struct pins *p, bool late,
                     char *err, size_t errlen)
{
	if (spec->n_binds == 0)
		return 0;
	if (!p->binds) {
		p->binds = malloc(spec->n_binds * sizeof *p->binds);
		if (!p->binds)
			return sbx_fail_buf(err, errlen, -ENOMEM, "rootfs: out of memory");
		for (size_t i = 0; i < spec->n_binds; i++)
			p->binds[i] = -1;
		p->n_binds = spec->n_binds;
	}
	for (size_t i = 0; i < spec->n_binds; i++) {
		if (pinned_late(&spec->binds[i]) != late)
			continue;
		int r = pin_bind_source(p, &spec->binds[i], &p->binds[i], err, errlen);

		if (r < 0)
			return r;
	}
	return 0;
}

static int pin_all(const struct sbx_rootfs_spec *spec, struct pins *p, char *err,
                   size_t errlen)
{
	int r = pin_host_anchors(p, err, errlen);

	if (r == 0)
		r = spec->rootfs ? pin_rootfs_top(spec->rootfs, &p->top, err, errlen)
		                 : pin_system_dirs(&p->top, err, errlen);
	if (r == 0 && !spec->rootfs)
		r = pin_etc(&p->etc, err, errlen);
	if (r == 0 && !spec->rootfs)
		r = pin_opt(&p->opt, err, errlen);
	if (r == 0)
		r = sbx_dev_pin_nodes(p->dev, err, errlen);
	if (r == 0)
		r = pin_binds(spec, p, false, err, errlen);
	return r;
}

/* ---- phase 2: assemble the new root ---- */

/* Nothing we mount may propagate back to the host, and nothing of the host's later mounts
 * into the sandbox. */
static int make_mounts_private(char *err, size_t errlen)
{
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return sbx_fail_buf(err, errlen, -errno, "make / private: %s", strerror(errno));
	return 0;
}

static int mount_base(int *basefd, char *err, size_t errlen)
{
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
		return sbx_fail_buf(err, errlen, -errno, "mount tmpfs on /tmp (the new root): %s",
		                    strerror(errno));
	*basefd = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*basefd < 0)
		return sbx_fail_buf(err, errlen, -errno, "open the new root: %s", strerror(errno));
	return 0;
}

static int place_pins(int basefd, const struct pin_list *l, char *err, size_t errlen)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct pin *p = &l->v[i];
		int r;

		if (p->link) {
			if (symlinkat(p->link, basefd, p->rel) < 0)
				return sbx_fail_buf(err, errlen, -errno, "symlink /%s -> %s: %s", p->rel,
				                    p->link, strerror(errno));
			continue;
		}
		r = sbx_bind_at(basefd, p->fd, p->rel, RO_FLAGS, err, errlen);
		if (r < 0)
			return r;
	}
	return 0;
}

static int write_etc_hostname(int basefd, const char *hostname, char *err, size_t errlen)
{
	_cleanup_close_ int etcfd = -1, fd = -1;
	struct utsname u;
	char line[HOST_NAME_MAX + 2];
	int r, n;

	if (!hostname) {
		uname(&u);
		hostname = u.nodename;
	}
	n = snprintf(line, sizeof line, "%s\n", hostname);
	r = sbx_open_beneath(basefd, "etc", &etcfd);
	if (r == 0) {
		fd = openat(etcfd, "hostname", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		            0644);
		if (fd < 0)
			r = -errno;
		else if (write(fd, line, (size_t)n) != n)
			r = errno ? -errno : -EIO;
	}
	if (r == 0 && symlinkat("/proc/self/mounts", etcfd, "mtab") < 0)
		r = -errno;
	if (r < 0)
		return sbx_fail_buf(err, errlen, r, "write /etc/hostname and /etc/mtab: %s",
		                    strerror(-r));
	return 0;
}

/* Copies one pinned regular file into the directory etcdir (writable, in our tmpfs) under the
 * name below "etc/". The pinned fd is readable (readable_pin), or O_PATH, whose magic link
 * reopens exactly what was pinned. */
static int copy_pinned_file(int basefd, int etcdir, const struct pin *p, const struct stat *st)
{
	const char *name = p->rel + strlen("etc/");
	const char *slash = strrchr(name, '/');
	_cleanup_close_ int reopened = -1, out = -1, sub = -1, subw = -1;
	struct sbx_fd_path path;
	int dir = etcdir, in = p->fd, r;
	off_t off = 0;

	if (slash) {          /* a nested entry such as ssl/openssl.cnf: make its parents */
		_cleanup_free_ char *parent = strndup(p->rel, (size_t)(slash - p->rel));

		if (!parent)
			return -ENOMEM;
		if ((r = sbx_mkdirs_beneath(basefd, parent, &sub)) < 0)
			return r;
		subw = open(sbx_fd_path(&path, sub), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (subw < 0)
			return -errno;
		dir = subw;
		name = slash + 1;
	}
	if (fcntl(p->fd, F_GETFL) & O_PATH) {    /* not readable_pin's: reopen what was pinned */
		reopened = open(sbx_fd_path(&path, p->fd), O_RDONLY | O_CLOEXEC);
		if (reopened < 0)
			return -errno;
		in = reopened;
	}
	out = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	             st->st_mode & 0644);
	if (out < 0)
		return -errno;
	/* sendfile: one system call per file, the data never passes through user space. From an
	 * offset of our own, as the pin's file position is not ours to move. */
	for (off_t left = st->st_size; left > 0;) {
		ssize_t n = sendfile(out, in, &off, (size_t)left);

		if (n < 0)
			return -errno;
		if (n == 0)
			break;              /* the file shrank meanwhile: keep what there was */
		left -= n;
	}
	return 0;
}

static int place_etc_pins(int basefd, const struct pin_list *l, char *err, size_t errlen)
{
	_cleanup_close_ int etc = -1, etcw = -1;
	struct sbx_fd_path path;
	int r = sbx_open_beneath(basefd, "etc", &etc);

	if (r == 0 && (etcw = open(sbx_fd_path(&path, etc), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = -errno;
	if (r < 0)
		return sbx_fail_buf(err, errlen, r, "open the new /etc: %s", strerror(-r));
	for (size_t i = 0; i < l->n; i++) {
		const struct pin *p = &l->v[i];
		struct stat st;

		if (!p->link && fstat(p->fd, &st) == 0 && etc_entry_is_copied(&st)) {
			r = copy_pinned_file(basefd, etcw, p, &st);
			if (r < 0)
				return sbx_fail_buf(err, errlen, r, "copy /%s: %s", p->rel, strerror(-r));
			continue;
		}
		struct pin_list one = { (struct pin *)p, 1 };
		if ((r = place_pins(basefd, &one, err, errlen)) < 0)
			return r;
	}
	return 0;
}

static int populate_etc(int basefd, const struct pin_list *etc, const char *hostname,
                        char *err, size_t errlen)
{
	int r = sbx_mount_new_at(basefd, "etc", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	                         "mode=0755", err, errlen);

	if (r == 0)
		r = place_etc_pins(basefd, etc, err, errlen);
	if (r == 0)
		r = write_etc_hostname(basefd, hostname, err, errlen);
	return r;
}

static bool under_workspace(const char *dest)
{
	size_t n = strlen(SBX_SANDBOX_ROOT);

	return strncmp(dest, SBX_SANDBOX_ROOT, n) == 0 && dest[n] == '/';
}

/* Binds that wait for the workspace: from it (or its state folder), or onto a place in it. */
static bool bind_is_late(const struct sbx_bind *b)
{
	return pinned_late(b) || under_workspace(b->dest);
}

/* The extra binds that do not wait for the workspace (late false), or those that do. */
static int mount_extra_binds(int basefd, const struct sbx_rootfs_spec *spec,
                             const struct pins *p, bool late, char *err, size_t errlen)
{
	for (size_t i = 0; i < spec->n_binds; i++) {
		const struct sbx_bind *b = &spec->binds[i];

		if (bind_is_late(b) != late)
			continue;
		int r = (b->tree_fd > 2 ? sbx_attach_at : sbx_bind_at)(basefd, p->binds[i],
		        b->dest + 1, b->writable ? RW_FLAGS : RO_FLAGS, err, errlen);

		if (r < 0)
			return r;
	}
	return 0;
}

/* Everything but the workspace. */
static int build_tree(int basefd, const struct sbx_rootfs_spec *spec, const struct pins *p,
                      char *err, size_t errlen)
{
	int r = place_pins(basefd, &p->top, err, errlen);

	if (r == 0 && !spec->rootfs)
		r = populate_etc(basefd, &p->etc, spec->hostname, err, errlen);
	if (r == 0)
		r = sbx_layout_make_dirs(basefd, err, errlen);
	if (r == 0)
		r = place_pins(basefd, &p->opt, err, errlen);
	if (r == 0)
		r = sbx_layout_mount_scratch(basefd, basefd, spec->tmp_bytes, err, errlen);
	if (r == 0)
		r = sbx_quota_mount_tmpfs(basefd, "tmp", "1777", MS_NOSUID | MS_NODEV, spec->tmp_bytes,
		                          err, errlen);
	if (r == 0)
		r = sbx_proc_mount(basefd, p->dev[0], err, errlen);
	if (r == 0)
		r = sbx_dev_mount(basefd, p->dev, err, errlen);
	/* A capped /dev/shm over the one sbx_dev_mount made. */
	if (r == 0 && spec->tmp_bytes)
		r = sbx_quota_mount_tmpfs(basefd, "dev/shm", "1777", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		                          spec->tmp_bytes, err, errlen);
	if (r == 0)
		r = mount_extra_binds(basefd, spec, p, false, err, errlen);
	return r;
}

static int place_workspace(int basefd, const struct sbx_rootfs_spec *spec,
                           const struct pins *p, char *err, size_t errlen)
{
	unsigned long flags = spec->workspace_readonly ? RO_FLAGS : RW_FLAGS;
	int r = spec->workspace_bytes
	        ? sbx_quota_make_workspace(basefd, p->workspace, spec->state_fd,
	                                   spec->workspace_bytes, spec->files_root, err, errlen)
	        : (spec->workspace_tree ? sbx_attach_at : sbx_bind_at)(basefd, p->workspace,
	                                                                SBX_SANDBOX_ROOT + 1, flags,
	                                                                err, errlen);

	if (r == 0)
		r = mount_extra_binds(basefd, spec, p, true, err, errlen);
	if (r == 0)
		r = sbx_protect_paths(basefd, spec->protected_paths, err, errlen);
	if (r == 0 && spec->workspace_view)
		r = sbx_layout_workspace_view(basefd, spec->workspace_view, spec->workspace_readonly,
		                              err, errlen);
	return r;
}

/* The root, /etc and /dev are tmpfs we filled; once filled, nothing may be added to them.
 * Done last so that extra binds could still make their mount points in / and /etc. */
static int seal(int basefd, const char *rel, char *err, size_t errlen)
{
	_cleanup_close_ int fd = -1;
	int r = sbx_open_beneath(basefd, rel, &fd);

	if (r == -ENOENT && *rel)
		return 0;
	if (r == 0)
		r = sbx_remount_top(fd, MS_RDONLY);
	if (r < 0)
		return sbx_fail_buf(err, errlen, r, "remount /%s read-only: %s", rel, strerror(-r));
	return 0;
}

static int seal_all(int basefd, char *err, size_t errlen)
{
	int r = seal(basefd, "etc", err, errlen);

	if (r == 0)
		r = seal(basefd, "dev", err, errlen);
	if (r == 0)
		r = seal(basefd, "", err, errlen);
	return r;
}

/* pivot_root(".", ".") stacks the old root on top of the new one at "/", and the detach then
 * drops it: no directory of the old root remains to pivot into or to reach it through. */
static int pivot_into(int basefd, char *err, size_t errlen)
{
	if (fchdir(basefd) < 0)
		return sbx_fail_buf(err, errlen, -errno, "chdir to the new root: %s", strerror(errno));
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return sbx_fail_buf(err, errlen, -errno, "pivot_root: %s", strerror(errno));
	if (umount2(".", MNT_DETACH) < 0)
		return sbx_fail_buf(err, errlen, -errno, "detach the old root: %s", strerror(errno));
	if (chdir("/") < 0)
		return sbx_fail_buf(err, errlen, -errno, "chdir /: %s", strerror(errno));
	return 0;
}

/* The cwd must be inside the new root (runc CVE-2024-21626 left it outside): the workspace
 * where commands see it. */
static int enter_workspace(const char *view, char *err, size_t errlen)
{
	char cwd[PATH_MAX];

	if (chdir(view) < 0)
		return sbx_fail_buf(err, errlen, -errno, "chdir %s: %s", view, strerror(errno));
	if (!getcwd(cwd, sizeof cwd) || strcmp(cwd, view) != 0)
		return sbx_fail_buf(err, errlen, -EIO, "chdir %s: the cwd is not %s", view, view);
	return 0;
}

/* Only a new UTS namespace may be renamed; in the initial user namespace (real root without
 * unshare) sethostname would rename the host, so refuse there. */
static bool in_initial_user_namespace(void)
{
	FILE *f = fopen("/proc/self/uid_map", "re");
	unsigned long inside, outside, count;
	bool initial = false;

	if (f && fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3)
		initial = inside == 0 && outside == 0 && count == 4294967295UL;
	if (f)
		fclose(f);
	return initial;
}

static int set_hostname(const char *hostname, char *err, size_t errlen)
{
	if (!hostname)
		return 0;
	if (in_initial_user_namespace())
		return sbx_fail_buf(err, errlen, -EPERM,
		                    "sethostname %s: not in a new user namespace, refusing to rename "
		                    "the host", hostname);
	if (sethostname(hostname, strlen(hostname)) < 0)
		return sbx_fail_buf(err, errlen, -errno, "sethostname %s: %s", hostname,
		                    strerror(errno));
	return 0;
}

struct sbx_rootfs_stage {
	struct pins pins;
	int basefd;
};

void sbx_rootfs_stage_free(struct sbx_rootfs_stage *st)
{
	if (!st)
		return;
	pins_release(&st->pins);
	if (st->basefd >= 0)
		close(st->basefd);
	free(st);
}

int sbx_rootfs_prepare(const struct sbx_rootfs_spec *spec, struct sbx_rootfs_stage **out,
                       char *err, size_t errlen)
{
	struct sbx_rootfs_stage *st = malloc(sizeof *st);
	int r;

	*out = NULL;
	if (!st)
		return sbx_fail_buf(err, errlen, -ENOMEM, "rootfs: out of memory");
	*st = (struct sbx_rootfs_stage){ .pins = PINS_NONE, .basefd = -1 };
	r = validate_spec(spec, err, errlen);
	if (r == 0)
		r = pin_all(spec, &st->pins, err, errlen);
	if (r == 0)
		r = make_mounts_private(err, errlen);
	if (r == 0)
		r = mount_base(&st->basefd, err, errlen);
	if (r == 0)
		r = build_tree(st->basefd, spec, &st->pins, err, errlen);
	if (r < 0) {
		sbx_rootfs_stage_free(st);
		return r;
	}
	*out = st;
	return 0;
}

int sbx_rootfs_finish(const struct sbx_rootfs_spec *spec, struct sbx_rootfs_stage *st,
                      int workspace_fd, char *err, size_t errlen)
{
	int r = validate_workspace_fd(workspace_fd, err, errlen);

	if (r == 0)
		r = pin_workspace(&st->pins, workspace_fd, spec->workspace_tree, err, errlen);
	if (r == 0)
		r = pin_binds(spec, &st->pins, true, err, errlen);
	if (r == 0)
		r = place_workspace(st->basefd, spec, &st->pins, err, errlen);
	if (r == 0)
		r = seal_all(st->basefd, err, errlen);
	pins_release(&st->pins);
	if (r == 0)
		r = pivot_into(st->basefd, err, errlen);
	if (r == 0)
		r = enter_workspace(spec->workspace_view ? spec->workspace_view : SBX_SANDBOX_ROOT,
		                    err, errlen);
	if (r == 0)
		r = set_hostname(spec->hostname, err, errlen);
	return r;
}

int sbx_rootfs_build(const struct sbx_rootfs_spec *spec, char *err, size_t errlen)
{
	struct sbx_rootfs_stage *st = NULL;
	char scratch[8];
	int r;

	if (!err || !errlen) {
		err = scratch;
		errlen = sizeof scratch;
	}
	r = sbx_rootfs_prepare(spec, &st, err, errlen);
	if (r == 0)
		r = sbx_rootfs_finish(spec, st, spec->workspace_fd, err, errlen);
	sbx_rootfs_stage_free(st);
	return r;
}
