/* The standard places of a root that are not the host's system directories: what programs
 * take for granted on any Linux machine (mktemp -p /var/tmp, caches in /var/cache, sockets and
 * pid files in /run, `ls /home`), so that third-party build and test suites run unchanged.
 *
 *  - /run, /var/tmp and /var/cache are writable, private and empty at every start. They are
 *    three directories of one tmpfs of limits.tmp_bytes (like /tmp's own), so together they
 *    cannot hold more than one /tmp may: the cap stays one number per place the sandbox owns.
 *  - /home, /root, /srv, /mnt and /var/lib are empty directories of the sealed, read-only
 *    root: nothing of the host's /home or /var (logs, mail, spools, databases, the docker
 *    socket, package manager state) is shown.
 *  - /opt is a directory of the root holding the host's /opt entries, each read-only
 *    (rootfs.c), or empty where the host has none.
 *
 * Under a caller's rootfs the entries it has are its own, bound read-only: a place is made
 * only where its mount point exists or can be made, never by writing into the rootfs. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "init/mount_util.h"
#include "init/quota.h"
#include "init/rootfs_internal.h"
#include "init/sandbox.h"
#include "util/cleanup.h"
#include "util/error.h"

#define LAYOUT_FLAGS (MS_NOSUID | MS_NODEV)
/* The temporary mount point of the shared tmpfs: in our private mount namespace only, and
 * gone (detached and removed) before any command runs. */
#define SCRATCH_NAME ".agentsbx-layout"

/* The empty read-only directories, parents first. */
static const char *const empty_dirs[] = { "home", "root", "srv", "mnt", "opt", "var", "var/lib",
	                                    NULL };

/* The writable places on the shared tmpfs: where they go, their directory there, the mode. */
static const struct {
	const char *dest;
	const char *dir;
	mode_t mode;
} scratch_places[] = {
	{ "run", "run", 0755 },
	{ "var/tmp", "var-tmp", 01777 },      /* sticky and world-writable, like /tmp */
	{ "var/cache", "var-cache", 0755 },
};

/* mkdir rel beneath basefd unless it is there: 0 made or present, 1 when it cannot be made
 * because its parent is read-only (a rootfs's own directory) or missing, else -errno. */
static int make_dir(int basefd, const char *rel, mode_t mode)
{
	_cleanup_close_ int parent = -1;
	const char *slash = strrchr(rel, '/');
	char up[64];
	int r = 0;

	if (slash) {
		snprintf(up, sizeof up, "%.*s", (int)(slash - rel), rel);
		r = sbx_open_beneath(basefd, up, &parent);
	} else if ((parent = fcntl(basefd, F_DUPFD_CLOEXEC, 3)) < 0) {
		r = -errno;
	}
	if (r == -ENOENT || r == -ENOTDIR)
		return 1;
	if (r < 0)
		return r;
	if (mkdirat(parent, slash ? slash + 1 : rel, mode) == 0)
		return fchmodat(parent, slash ? slash + 1 : rel, mode, 0) < 0 ? -errno : 0;
	if (errno == EEXIST) {
		_cleanup_close_ int fd = -1;
		struct stat st;

		r = sbx_open_beneath(basefd, rel, &fd);
		if (r == -ELOOP || (r == 0 && fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)))
			return 1;              /* a rootfs's link or file: its layout, not ours */
		return r;
	}
	return errno == EROFS || errno == EACCES || errno == EPERM ? 1 : -errno;
}

int sbx_layout_make_dirs(int basefd, char *err, size_t errlen)
{
	for (size_t i = 0; empty_dirs[i]; i++) {
		int r = make_dir(basefd, empty_dirs[i], 0755);

		if (r < 0)
			return sbx_fail_buf(err, errlen, r, "layout: mkdir /%s: %s", empty_dirs[i],
			                    strerror(-r));
	}
	return 0;
}

/* Binds the directory dir of the shared tmpfs (scratch) at rel beneath rootfd. */
static int bind_place(int rootfd, int scratch, const char *dir, const char *rel, mode_t mode,
                      char *err, size_t errlen)
{
	_cleanup_close_ int src = -1;
	int r = make_dir(rootfd, rel, 0755);

	if (r == 1)
		return 0;
	if (r == 0 && mkdirat(scratch, dir, mode) < 0 && errno != EEXIST)
		r = -errno;
	if (r == 0 && fchmodat(scratch, dir, mode, 0) < 0)      /* past the umask */
		r = -errno;
	if (r == 0)
		r = sbx_open_beneath(scratch, dir, &src);
	if (r < 0)
		return sbx_fail_buf(err, errlen, r, "layout: /%s: %s", rel, strerror(-r));
	return sbx_bind_at(rootfd, src, rel, LAYOUT_FLAGS, err, errlen);
}

/* Drops the temporary mount point: the binds keep the tmpfs alive, nothing names it any more. */
static void drop_scratch(int stagefd)
{
	struct sbx_fd_path p;
	char path[64];

	snprintf(path, sizeof path, "%s/" SCRATCH_NAME, sbx_fd_path(&p, stagefd));
	umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW);
	unlinkat(stagefd, SCRATCH_NAME, AT_REMOVEDIR);
}

int sbx_layout_mount_scratch(int stagefd, int rootfd, uint64_t bytes, char *err, size_t errlen)
{
	_cleanup_close_ int scratch = -1, dir = -1;
	struct sbx_fd_path p;
	int r = sbx_quota_mount_tmpfs(stagefd, SCRATCH_NAME, "0755", LAYOUT_FLAGS, bytes, err,
	                              errlen);

	if (r < 0)
		return r;
	if ((r = sbx_open_beneath(stagefd, SCRATCH_NAME, &scratch)) == 0 &&
	    (dir = open(sbx_fd_path(&p, scratch), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = -errno;
	if (r < 0)
		r = sbx_fail_buf(err, errlen, r, "layout: open the tmpfs of /run: %s", strerror(-r));
	for (size_t i = 0; r == 0 && i < sizeof scratch_places / sizeof scratch_places[0]; i++)
		r = bind_place(rootfd, dir, scratch_places[i].dir, scratch_places[i].dest,
		               scratch_places[i].mode, err, errlen);
	drop_scratch(stagefd);
	return r;
}

/* workdir_mount "host" (init_proto.h's "workspace_view"): the workspace, as built at
 * /workspace with its protections and binds, also at its host path. A virtualenv, a libtool
 * wrapper or a build tree made inside then names paths that hold on the host too. The copy
 * is private, as everything here: the git guard's binds while commands run go to both
 * (warden.c), each made read-only where it lands (a remount would not propagate anyway). */
int sbx_layout_workspace_view(int rootfd, const char *view, bool readonly, char *err,
                              size_t errlen)
{
	_cleanup_close_ int ws = -1;
	int r;

	if (!view || view[0] != '/' || !sbx_rel_path_ok(view + 1))
		return sbx_fail_buf(err, errlen, -EINVAL, "workdir_mount: \"%s\" is not a plain "
		                    "absolute path", view ? view : "(null)");
	if ((r = sbx_open_beneath(rootfd, SBX_SANDBOX_ROOT + 1, &ws)) < 0)
		return sbx_fail_buf(err, errlen, r, "workdir_mount: open %s: %s", SBX_SANDBOX_ROOT,
		                    strerror(-r));
	r = sbx_bind_at(rootfd, ws, view + 1, readonly ? LAYOUT_FLAGS | MS_RDONLY : LAYOUT_FLAGS,
	                err, errlen);
	if (r < 0) {
		char why[300];

		snprintf(why, sizeof why, "%s", err);
		return sbx_fail_buf(err, errlen, r, "workdir_mount: mount the workspace at %s: %s",
		                    view, why);
	}
	return 0;
}
