/* The host side of the sandbox's size caps (helpers/init/quota.c does the mounting): which
 * caps a workspace gets, what the init is told, and the workspace root it hands back. */
#include <errno.h>
#include <fcntl.h>
#include <linux/quota.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proto/init_proto.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fdpass.h"
#include "backends/sandbox/quota.h"

#define FILES_ROOT_TIMEOUT_MS 15000

/* QCMD of <linux/quota.h> shifts a signed int past its top bit (Q_GETINFO is 0x800005). */
#define QUOTA_CMD(cmd, type) ((int)(((unsigned)(cmd) << SUBCMDSHIFT) | ((type) & SUBCMDMASK)))


uint64_t sbx_quota_disk_bytes(const sbx_backend_config *cfg)
{
	return SBX_BACKEND_CONFIG_HAS(cfg, disk_bytes) ? cfg->disk_bytes : 0;
}

uint64_t sbx_quota_tmp_bytes(const sbx_backend_config *cfg)
{
	uint64_t v = SBX_BACKEND_CONFIG_HAS(cfg, tmp_bytes) ? cfg->tmp_bytes : 0;

	return v ? v : SBX_QUOTA_DEFAULT_TMP_BYTES;
}

bool sbx_quota_asked(const sbx_backend_config *cfg)
{
	return sbx_quota_disk_bytes(cfg) || (SBX_BACKEND_CONFIG_HAS(cfg, tmp_bytes) && cfg->tmp_bytes);
}

void sbx_quota_spec_keys(sbx_buf *b, const sbx_backend_config *cfg)
{
	uint64_t disk = sbx_quota_disk_bytes(cfg);

	if (disk)
		sbx_buf_printf(b, "\"workspace_bytes\":%llu,", (unsigned long long)disk);
	sbx_buf_printf(b, "\"tmp_bytes\":%llu,", (unsigned long long)sbx_quota_tmp_bytes(cfg));
	if (SBX_BACKEND_CONFIG_HAS(cfg, tmp_bytes) && cfg->tmp_bytes)
		sbx_buf_puts(b, "\"tmp_required\":true,");
}

/* Why a host directory cannot be capped here: a project quota is the only cap the kernel
 * keeps on a directory tree, and it is off, out of reach, or not one we set. Out of reach:
 * Q_SETQUOTA needs CAP_SYS_ADMIN in the initial user namespace, and the kernel refuses a new
 * project id or FS_XFLAG_PROJINHERIT from any other (fileattr_set_prepare, -EINVAL). */
static const char *why_no_project_quota(const char *workdir)
{
	_cleanup_close_ int fd = open(workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct if_dqinfo info;

	if (fd < 0)
		return "it cannot be opened";
	/* Q_GETINFO needs no privilege: it only says whether the quota is on. */
	if (syscall(SYS_quotactl_fd, fd, QUOTA_CMD(Q_GETINFO, PRJQUOTA), 0, &info) < 0)
		return "its file system has no project quota";
	if (geteuid() != 0)
		return "only root in the host's user namespace can set a project quota";
	return "its file system has project quotas, but this library does not set them yet";
}

int sbx_quota_check(const char *who, const sbx_backend_config *cfg, bool detached)
{
	if (!sbx_quota_disk_bytes(cfg))
		return 0;
	if (!cfg->workdir_is_temporary)
		return sbx_fail(-SBX_ECONFIG, "config: key 'limits.disk_bytes': the workdir %s cannot "
		                "be capped (%s); a quota is available for temporary workspaces (no "
		                "'workdir')", cfg->workdir, why_no_project_quota(cfg->workdir));
	if (cfg->read_only)
		return sbx_fail(-SBX_ECONFIG, "config: key 'limits.disk_bytes': a read-only workspace "
		                "takes no writes to cap");
	if (detached)
		return sbx_fail(-SBX_ECONFIG, "config: key 'limits.disk_bytes': %s: a detached "
		                "sandbox cannot have a capped workspace (its files would not outlive "
		                "it for the next process)", who);
	return 0;
}

int sbx_quota_receive_files_root(int ctl, const char *who, int *fd)
{
	struct sbx_init_spawn msg;
	struct pollfd pfd = { .fd = ctl, .events = POLLIN };
	size_t n = 0;
	int r;

	if (poll(&pfd, 1, FILES_ROOT_TIMEOUT_MS) <= 0)
		return sbx_fail(-SBX_ETIMEDOUT, "%s: the sandbox did not hand over its workspace",
		                who);
	r = sbx_recv_with_fds(ctl, &msg, sizeof msg, fd, 1, &n);
	if (r == 0 && (msg.kind != SBX_INIT_FILES_ROOT || n != 1)) {
		if (n)
			close(*fd);
		r = -EPROTO;
	}
	if (r < 0)
		return sbx_fail(-SBX_EBACKEND, "%s: the sandbox's workspace did not come: %s", who,
		                strerror(-r));
	return 0;
}
