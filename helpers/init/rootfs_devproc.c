/* The sandbox's /dev and /proc.
 *
 * /dev is never the host's: a fresh tmpfs gets exactly six nodes bound in from the host (mknod
 * is impossible in a user namespace, and a tmpfs made there is nodev anyway), a private devpts
 * instance, a tmpfs /dev/shm and a few links. Binding a node needs it to be the expected
 * character device, checked on the very fd that is bound.
 *
 * /proc is a new instance, which only shows the sandbox's PID namespace. The kernel's writable
 * knobs (/proc/sys, sysrq-trigger, ...) are bound read-only over themselves, and files that
 * leak host state are masked, as container runtimes do. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util/error.h"
#include "init/mount_util.h"
#include "init/rootfs_internal.h"
#include "util/cleanup.h"

struct dev_node {
	const char *name;
	unsigned int major, minor;
};

static const struct dev_node dev_nodes[SBX_DEV_NODES] = {
	{ "null", 1, 3 }, { "zero", 1, 5 }, { "full", 1, 7 },
	{ "random", 1, 8 }, { "urandom", 1, 9 }, { "tty", 5, 0 },
};

/* The tty group on Debian, Ubuntu and Fedora. */
#define TTY_GID 5

static int pin_node(int devfd, const struct dev_node *n, int *out, char *err, size_t errlen)
{
	_cleanup_close_ int fd = openat(devfd, n->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return sbx_fail_buf(err, errlen, -errno, "open /dev/%s: %s", n->name,
		                    strerror(errno));
	if (fstat(fd, &st) < 0)
		return sbx_fail_buf(err, errlen, -errno, "fstat /dev/%s: %s", n->name,
		                    strerror(errno));
	if (!S_ISCHR(st.st_mode) || major(st.st_rdev) != n->major ||
	    minor(st.st_rdev) != n->minor)
		return sbx_fail_buf(err, errlen, -ENODEV,
		                    "/dev/%s on the host is not character device %u:%u", n->name,
		                    n->major, n->minor);
	*out = SBX_TAKE_FD(fd);
	return 0;
}

int sbx_dev_pin_nodes(int fds[SBX_DEV_NODES], char *err, size_t errlen)
{
	_cleanup_close_ int devfd = open("/dev", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (devfd < 0)
		return sbx_fail_buf(err, errlen, -errno, "open /dev: %s", strerror(errno));
	for (size_t i = 0; i < SBX_DEV_NODES; i++) {
		int r = pin_node(devfd, &dev_nodes[i], &fds[i], err, errlen);

		if (r < 0)
			return r;
	}
	return 0;
}

/* gid= on devpts must name a gid mapped in our user namespace; with the single-id maps the
 * sandbox uses, the tty group usually is not, and the ptys then belong to our own group. */
static bool gid_is_mapped(unsigned long gid)
{
	FILE *f = fopen("/proc/self/gid_map", "re");
	unsigned long inside, outside, count;
	bool mapped = false;

	if (!f)
		return false;
	while (!mapped && fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3)
		mapped = gid >= inside && gid - inside < count;
	fclose(f);
	return mapped;
}

static int mount_devpts(int basefd, char *err, size_t errlen)
{
	char opts[96];

	snprintf(opts, sizeof opts, "newinstance,ptmxmode=0666,mode=0620");
	if (gid_is_mapped(TTY_GID))
		snprintf(opts, sizeof opts, "newinstance,ptmxmode=0666,mode=0620,gid=%d", TTY_GID);
	return sbx_mount_new_at(basefd, "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, opts, err,
	                        errlen);
}

static int dev_links(int devfd, char *err, size_t errlen)
{
	static const char *const links[][2] = {
		{ "ptmx", "pts/ptmx" }, { "fd", "/proc/self/fd" }, { "stdin", "/proc/self/fd/0" },
		{ "stdout", "/proc/self/fd/1" }, { "stderr", "/proc/self/fd/2" },
	};

	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
		if (symlinkat(links[i][1], devfd, links[i][0]) < 0)
			return sbx_fail_buf(err, errlen, -errno, "symlink /dev/%s: %s", links[i][0],
			                    strerror(errno));
	return 0;
}

int sbx_dev_mount(int basefd, const int fds[SBX_DEV_NODES], char *err, size_t errlen)
{
	_cleanup_close_ int devfd = -1;
	char rel[32];
	int r;

	r = sbx_mount_new_at(basefd, "dev", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	                     "mode=0755", err, errlen);
	for (size_t i = 0; r == 0 && i < SBX_DEV_NODES; i++) {
		snprintf(rel, sizeof rel, "dev/%s", dev_nodes[i].name);
		r = sbx_bind_at(basefd, fds[i], rel, MS_NOSUID | MS_NOEXEC, err, errlen);
	}
	if (r == 0)
		r = mount_devpts(basefd, err, errlen);
	if (r == 0)
		r = sbx_mount_new_at(basefd, "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		                     "mode=1777", err, errlen);
	if (r < 0)
		return r;
	r = sbx_open_beneath(basefd, "dev", &devfd);
	if (r < 0)
		return sbx_fail_buf(err, errlen, r, "open /dev: %s", strerror(-r));
	return dev_links(devfd, err, errlen);
}

/* Knobs a process with capabilities in its own namespaces could otherwise turn: the ones
 * runc and Docker make read-only. */
static const char *const proc_readonly[] = { "sys", "sysrq-trigger", "irq", "bus", "fs", NULL };
/* Files that tell about the host (kernel memory, keys, timers, scheduler): read as empty. */
static const char *const proc_masked_files[] = {
	"kcore", "keys", "timer_list", "timer_stats", "sched_debug", "latency_stats", NULL,
};
/* Directories of host hardware: shown empty. */
static const char *const proc_masked_dirs[] = { "acpi", "scsi", "asound", NULL };

static bool proc_has(int basefd, const char *rel, bool *is_dir)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (sbx_open_beneath(basefd, rel, &fd) < 0 || fstat(fd, &st) < 0)
		return false;
	*is_dir = S_ISDIR(st.st_mode);
	return true;
}

static int proc_make_readonly(int basefd, char *err, size_t errlen)
{
	for (size_t i = 0; proc_readonly[i]; i++) {
		_cleanup_close_ int fd = -1;
		char rel[64];
		int r;

		snprintf(rel, sizeof rel, "proc/%s", proc_readonly[i]);
		if (sbx_open_beneath(basefd, rel, &fd) < 0)
			continue;                 /* not in this kernel */
		r = sbx_bind_at(basefd, fd, rel, MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, err,
		                errlen);
		if (r < 0)
			return r;
	}
	return 0;
}

static int proc_mask(int basefd, int dev_null_fd, char *err, size_t errlen)
{
	char rel[64];
	bool dir;
	int r;

	for (size_t i = 0; proc_masked_files[i]; i++) {
		snprintf(rel, sizeof rel, "proc/%s", proc_masked_files[i]);
		if (!proc_has(basefd, rel, &dir) || dir)
			continue;
		r = sbx_bind_at(basefd, dev_null_fd, rel, MS_RDONLY | MS_NOSUID | MS_NOEXEC, err,
		                errlen);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; proc_masked_dirs[i]; i++) {
		snprintf(rel, sizeof rel, "proc/%s", proc_masked_dirs[i]);
		if (!proc_has(basefd, rel, &dir) || !dir)
			continue;
		r = sbx_mount_new_at(basefd, rel, "tmpfs",
		                     MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0555", err,
		                     errlen);
		if (r < 0)
			return r;
	}
	return 0;
}

int sbx_proc_mount(int basefd, int dev_null_fd, char *err, size_t errlen)
{
	int r = sbx_mount_new_at(basefd, "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL,
	                         err, errlen);

	if (r == -EPERM)
		return sbx_fail_buf(err, errlen, r,
		                    "mount proc on /proc: %s (the caller must be PID 1 of a PID "
		                    "namespace owned by its user namespace, and the host's /proc "
		                    "must not be partly masked, as it is in most containers)",
		                    strerror(-r));
	if (r < 0)
		return r;
	r = proc_make_readonly(basefd, err, errlen);
	if (r < 0)
		return r;
	return proc_mask(basefd, dev_null_fd, err, errlen);
}
