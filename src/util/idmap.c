/* The users a sandbox runs as, host side; see idmap.h. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "cleanup.h"
#include "error.h"
#include "fs.h"
#include "idmap.h"
#include "subid.h"

/* The mount API's constants, for C libraries older than glibc 2.36. */
#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif
#ifndef MOUNT_ATTR_NOSUID
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
struct mount_attr {
	__u64 attr_set, attr_clr, propagation, userns_fd;
};
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef FSCONFIG_CMD_CREATE
#define FSCONFIG_CMD_CREATE 6
#endif

#define SUBID_FILE_MAX (1u << 20)

/* ---- the range ----------------------------------------------------------------------- */

static int read_small_file(const char *path, char **text)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	size_t len;

	*text = NULL;
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	return sbx_fs_read_fd(fd, SUBID_FILE_MAX, text, &len) < 0 ? -EIO : 0;
}

static void fixed_range(struct sbx_idmap *m, const char *user)
{
	m->uid = m->gid = SBX_IDMAP_FIXED_START;
	m->count = SBX_IDMAP_MAX_COUNT;
	snprintf(m->source, sizeof m->source, "fixed range: %s has no range in /etc/subuid and "
	         "/etc/subgid", user);
}

int sbx_idmap_resolve_text(const char *who, const char *user, const char *uid_text,
                           const char *subuid, const char *subgid, struct sbx_idmap *m)
{
	struct sbx_subid_range u, g;
	size_t ulen = subuid ? strlen(subuid) : 0, glen = subgid ? strlen(subgid) : 0;

	memset(m, 0, sizeof *m);
	m->on = true;
	if (!user)
		user = SBX_IDMAP_DEFAULT_USER;
	if (sbx_subid_find(subuid, ulen, user, uid_text, &u) &&
	    sbx_subid_find(subgid, glen, user, uid_text, &g)) {
		m->uid = u.start;
		m->gid = g.start;
		m->count = u.count < g.count ? u.count : g.count;
		if (m->count > SBX_IDMAP_MAX_COUNT)
			m->count = SBX_IDMAP_MAX_COUNT;
		snprintf(m->source, sizeof m->source, "subordinate ids of %s", user);
		return 0;
	}
	fixed_range(m, user);
	if (sbx_subid_overlaps(subuid, ulen, m->uid, m->count) ||
	    sbx_subid_overlaps(subgid, glen, m->gid, m->count))
		return sbx_fail(-SBX_ECONFIG, "config: key '%s.subid_user': %s has no range in "
		                "/etc/subuid and /etc/subgid, and the fixed range %u..%u is given to "
		                "another user there; give %s a range of its own or name a user that "
		                "has one", who, user, m->uid, m->uid + m->count - 1, user);
	return 0;
}

/* The uid of user in the passwd text ("name:x:uid:..."), as text, or "" — read from the file
 * rather than through NSS, whose locks a child forked from a threaded host may find held. */
static void uid_of(const char *passwd, const char *user, char *out, size_t len)
{
	size_t n = strlen(user);

	out[0] = '\0';
	for (const char *p = passwd; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		const char *pw = strncmp(p, user, n) == 0 && p[n] == ':' ? strchr(p + n + 1, ':')
		                                                          : NULL;
		size_t digits = pw ? strspn(pw + 1, "0123456789") : 0;

		if (digits && digits < len && pw[1 + digits] == ':') {
			memcpy(out, pw + 1, digits);
			out[digits] = '\0';
			return;
		}
	}
}

static int resolve_from_files(const char *who, const char *user, struct sbx_idmap *m)
{
	_cleanup_free_ char *subuid = NULL, *subgid = NULL, *passwd = NULL;
	char uid_text[16];
	int r;

	if ((r = read_small_file("/etc/subuid", &subuid)) < 0 ||
	    (r = read_small_file("/etc/subgid", &subgid)) < 0)
		return sbx_fail(sbx_errno_code(-r), "%s: read /etc/subuid and /etc/subgid: %s", who,
		                strerror(-r));
	/* subuid(5) also names owners by uid. */
	if (read_small_file("/etc/passwd", &passwd) < 0)
		passwd = NULL;
	uid_of(passwd, user, uid_text, sizeof uid_text);
	return sbx_idmap_resolve_text(who, user, uid_text[0] ? uid_text : NULL, subuid, subgid, m);
}

/* ---- throw-away user namespaces ---------------------------------------------------------- */

static int write_file(const char *path, const char *text)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	size_t len = strlen(text);

	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		return errno ? -errno : -EIO;
	return 0;
}

/* A child in a new user namespace, made with the raw clone system call: a fork() would run
 * the host's fork handlers, and this process may have many threads. The child only waits for
 * the end of a pipe and exits, which is safe in the copy of one thread that it is. Its parent
 * writes the maps, keeps an fd of the namespace and lets it go. */
static int make_userns(uint32_t inside, uint32_t uid, uint32_t gid, uint32_t count, int *out)
{
	char path[64], map[64];
	int p[2], r = 0, status;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid == 0) {
		char c;

		close(p[1]);
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(p[0]);
	if (pid < 0) {
		r = -errno;
		close(p[1]);
		return r;
	}
	snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
	snprintf(map, sizeof map, "%u %u %u\n", inside, uid, count);
	r = write_file(path, map);
	snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
	snprintf(map, sizeof map, "%u %u %u\n", inside, gid, count);
	if (r == 0)
		r = write_file(path, map);
	snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
	if (r == 0 && (*out = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		r = -errno;
	close(p[1]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return r;
}

/* One namespace per map, for the life of the process: a process rarely uses more than one. */
#define USERNS_SLOTS 4

struct userns_slot {
	uint32_t inside, uid, gid, count;
	int fd;
};

static pthread_mutex_t userns_lock = PTHREAD_MUTEX_INITIALIZER;
static struct userns_slot userns_slots[USERNS_SLOTS];
static size_t userns_used;

/* A fork while another thread holds the lock would leave the child a lock nobody unlocks
 * (a harness that forks workers while its threads open workspaces): forks wait for it, and
 * the child starts with it free. The namespaces the slots name are the child's too. */
static void lock_for_fork(void)
{
	pthread_mutex_lock(&userns_lock);
}

static void unlock_after_fork(void)
{
	pthread_mutex_unlock(&userns_lock);
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void watch_forks(void)
{
	pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork);
}

static int cached_userns(uint32_t inside, uint32_t uid, uint32_t gid, uint32_t count, int *fd)
{
	int r = 0;

	pthread_once(&fork_once, watch_forks);
	pthread_mutex_lock(&userns_lock);
	for (size_t i = 0; i < userns_used; i++) {
		const struct userns_slot *s = &userns_slots[i];

		if (s->inside == inside && s->uid == uid && s->gid == gid && s->count == count) {
			*fd = s->fd;
			pthread_mutex_unlock(&userns_lock);
			return 0;
		}
	}
	r = make_userns(inside, uid, gid, count, fd);
	if (r == 0 && userns_used < USERNS_SLOTS)
		userns_slots[userns_used++] = (struct userns_slot){ inside, uid, gid, count, *fd };
	else if (r == 0) {
		/* Full (a caller cycling through maps): the oldest gives way. */
		close(userns_slots[0].fd);
		memmove(userns_slots, userns_slots + 1, (USERNS_SLOTS - 1) * sizeof *userns_slots);
		userns_slots[USERNS_SLOTS - 1] = (struct userns_slot){ inside, uid, gid, count, *fd };
	}
	pthread_mutex_unlock(&userns_lock);
	return r;
}

/* ---- the range, kept -------------------------------------------------------------------- */

/* The files a range is read from, as stat(2) sees them: an open whose files are unchanged
 * since the last costs three stats instead of three reads (and allocations, which a forked
 * child of a threaded host had better not find a lock of held). */
static const char *const range_files[3] = { "/etc/subuid", "/etc/subgid", "/etc/passwd" };

struct file_stamp {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
};

static struct {
	bool valid;
	char user[64];
	struct file_stamp files[3];
	struct sbx_idmap m;
} last_range;

static void stamp_files(struct file_stamp out[3])
{
	for (int i = 0; i < 3; i++) {
		struct stat st;

		memset(&out[i], 0, sizeof out[i]);
		if (stat(range_files[i], &st) == 0)
			out[i] = (struct file_stamp){ st.st_dev, st.st_ino, st.st_size, st.st_mtim,
			                              st.st_ctim };
	}
}

int sbx_idmap_resolve(const char *who, const char *user, struct sbx_idmap *m)
{
	struct file_stamp now[3];
	bool hit;
	int r;

	memset(m, 0, sizeof *m);
	if (geteuid() != 0)
		return 0;
	if (!user)
		user = SBX_IDMAP_DEFAULT_USER;
	stamp_files(now);
	pthread_once(&fork_once, watch_forks);
	pthread_mutex_lock(&userns_lock);
	hit = last_range.valid && !strcmp(last_range.user, user) &&
	      !memcmp(last_range.files, now, sizeof now);
	if (hit)
		*m = last_range.m;
	pthread_mutex_unlock(&userns_lock);
	if (hit)
		return 0;
	if ((r = resolve_from_files(who, user, m)) < 0 || strlen(user) >= sizeof last_range.user)
		return r;
	pthread_mutex_lock(&userns_lock);
	last_range.valid = true;
	snprintf(last_range.user, sizeof last_range.user, "%s", user);
	memcpy(last_range.files, now, sizeof now);
	last_range.m = *m;
	pthread_mutex_unlock(&userns_lock);
	return 0;
}

/* ---- idmapped mounts --------------------------------------------------------------------- */

static int set_attrs(int tree, unsigned flags, __u64 attrs, int userns)
{
	struct mount_attr attr = { .attr_set = attrs, .userns_fd = (__u64)userns };

	if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | flags, &attr, sizeof attr) < 0)
		return -errno;
	return 0;
}

static int clone_tree(int dir_fd, const char *rel, int *out)
{
	int fd = (int)syscall(SYS_open_tree, dir_fd, rel, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
	                      AT_RECURSIVE | (*rel ? AT_SYMLINK_NOFOLLOW : AT_EMPTY_PATH));

	if (fd < 0)
		return -errno;
	*out = fd;
	return 0;
}

int sbx_idmap_tree(const struct sbx_idmap *m, int dir_fd, int *out)
{
	_cleanup_close_ int tree = -1;
	int userns, r;

	if ((r = cached_userns(0, m->uid, m->gid, m->count, &userns)) < 0 ||
	    (r = clone_tree(dir_fd, "", &tree)) < 0 ||
	    (r = set_attrs(tree, AT_RECURSIVE, MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID |
	                   MOUNT_ATTR_NODEV, userns)) < 0)
		return r;
	*out = SBX_TAKE_FD(tree);
	return 0;
}

int sbx_idmap_plain_tree(int dir_fd, const char *rel, int *out)
{
	return clone_tree(dir_fd, rel, out);
}

int sbx_idmap_host_view(int tree_fd)
{
	int userns, r = cached_userns(0, 0, 0, 1, &userns);

	/* Only the top mount: anything below it (the state folder) is a host directory already. */
	return r < 0 ? r : set_attrs(tree_fd, 0, MOUNT_ATTR_IDMAP, userns);
}

bool sbx_idmap_unsupported(int err)
{
	return err == -EINVAL || err == -EPERM || err == -EOPNOTSUPP || err == -ENOSYS;
}

/* The file systems one meets as workdirs, by statfs(2) magic. */
static const char *fs_name(int fd, char *buf, size_t len)
{
	static const struct { long magic; const char *name; } known[] = {
		{ 0xEF53, "ext4" }, { 0x58465342, "xfs" }, { 0x9123683E, "btrfs" },
		{ 0x01021994, "tmpfs" }, { (long)0x858458f6, "ramfs" }, { 0x6969, "nfs" },
		{ 0x65735546, "fuse" }, { 0x01021997, "9p" }, { (long)0xFF534D42, "cifs" },
		{ 0xFE534D42, "smb2" }, { 0x794c7630, "overlay" }, { 0x4d44, "vfat" },
		{ 0x2fc12fc1, "zfs" }, { 0x73717368, "squashfs" }, { (long)0xE0F5E1E2, "erofs" },
		{ 0x5346544e, "ntfs" }, { (long)0xf2f52010, "f2fs" },
	};
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return "its file system";
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if ((long)(unsigned)sf.f_type == (long)(unsigned)known[i].magic)
			return known[i].name;
	snprintf(buf, len, "file system type 0x%lx", (unsigned long)sf.f_type);
	return buf;
}

void sbx_idmap_why(int dir_fd, int err, char *out, size_t len)
{
	char fsbuf[48];

	snprintf(out, len, "%s: %s: %s", fs_name(dir_fd, fsbuf, sizeof fsbuf),
	         err == -ENOSYS ? "no mount_setattr (Linux 5.12 or later has it)" : "mount_setattr",
	         strerror(-err));
}

/* A tmpfs of our own, detached, idmapped and dropped. */
static int probe_tmpfs(void)
{
	_cleanup_close_ int fsfd = (int)syscall(SYS_fsopen, "tmpfs", 1 /* FSOPEN_CLOEXEC */);
	_cleanup_close_ int mnt = -1;
	int userns, r;

	if (fsfd < 0)
		return -errno;
	if (syscall(SYS_fsconfig, fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -errno;
	mnt = (int)syscall(SYS_fsmount, fsfd, 1 /* FSMOUNT_CLOEXEC */, 0);
	if (mnt < 0)
		return -errno;
	if ((r = cached_userns(0, 0, 0, 1, &userns)) < 0)
		return r;
	return set_attrs(mnt, 0, MOUNT_ATTR_IDMAP, userns);
}

static pthread_once_t tmpfs_once = PTHREAD_ONCE_INIT;
static int tmpfs_probe = -EAGAIN;

static void run_tmpfs_probe(void)
{
	tmpfs_probe = probe_tmpfs();
}

bool sbx_idmap_tmpfs_ok(char *why, size_t len)
{
	pthread_once(&tmpfs_once, run_tmpfs_probe);
	if (tmpfs_probe < 0)
		snprintf(why, len, "tmpfs: mount_setattr: %s (idmapped tmpfs mounts need Linux 6.3 "
		         "or later)", strerror(-tmpfs_probe));
	return tmpfs_probe == 0;
}

/* ---- doctor ---------------------------------------------------------------------------- */

bool sbx_idmap_describe(const char *user, const char *dir, bool allow_host_root, char *out,
                        size_t len)
{
	_cleanup_close_ int dirfd = -1, tree = -1;
	struct sbx_idmap m;
	char why[256];
	int r;

	if (geteuid() != 0) {
		snprintf(out, len, "inside %u -> host %u (your own uid and gid %u; only root's "
		         "sandboxes are mapped to another range)", (unsigned)geteuid(),
		         (unsigned)geteuid(), (unsigned)getegid());
		return true;
	}
	if (sbx_idmap_resolve("ns", user, &m) < 0) {
		snprintf(out, len, "REFUSED: %s", sbx_last_error());
		return false;
	}
	if (!dir) {
		snprintf(out, len, "inside 0 -> host %u, gid 0 -> %u, %u ids (%s); workdirs "
		         "through idmapped mounts", m.uid, m.gid, m.count, m.source);
		return true;
	}
	dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	r = dirfd < 0 ? -errno : sbx_idmap_tree(&m, dirfd, &tree);
	if (r == 0) {
		snprintf(out, len, "inside 0 -> host %u, gid 0 -> %u, %u ids (%s); workdir %s "
		         "idmapped", m.uid, m.gid, m.count, m.source, dir);
		return true;
	}
	if (dirfd < 0)
		snprintf(why, sizeof why, "open: %s", strerror(-r));
	else
		sbx_idmap_why(dirfd, r, why, sizeof why);
	snprintf(out, len, "inside 0 -> host %u (%s), but workdir %s cannot be idmapped (%s): %s",
	         m.uid, m.source, dir, why, allow_host_root
	         ? "its sandboxes FALL BACK to host root (ns.root_inside \"allow-host-root\"), "
	           "with a warning in the audit log"
	         : "opens are refused; \"ns\": {\"root_inside\": \"allow-host-root\"} would run "
	           "them as host root instead");
	return allow_host_root;
}
