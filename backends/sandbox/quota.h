/* The host side of the sandbox's size caps (quota.c; the init mounts them,
 * helpers/init/quota.c): /tmp and /dev/shm always, the workspace itself with
 * limits.disk_bytes. */
#ifndef SBX_UTIL_QUOTA_H
#define SBX_UTIL_QUOTA_H

#include <stdbool.h>
#include <stdint.h>
#include <agentsbx/backend.h>

#include "util/buf.h"

/* /tmp and /dev/shm of a sandbox without limits.tmp_bytes: each may take this much of the
 * host's memory, not the half of it an uncapped tmpfs allows. */
#define SBX_QUOTA_DEFAULT_TMP_BYTES ((uint64_t)1 << 30)

/* limits.disk_bytes (0 = none) and the /tmp size (the default where not given). */
uint64_t sbx_quota_disk_bytes(const sbx_backend_config *cfg);
uint64_t sbx_quota_tmp_bytes(const sbx_backend_config *cfg);
/* Whether the config asks for a cap itself (limits.disk_bytes, or limits.tmp_bytes). */
bool sbx_quota_asked(const sbx_backend_config *cfg);

/* The init's spec keys for them ("workspace_bytes", "tmp_bytes"), each followed by ','. */
void sbx_quota_spec_keys(sbx_buf *b, const sbx_backend_config *cfg);

/* Refuses a disk cap the sandbox cannot keep (-SBX_ECONFIG naming limits.disk_bytes): on a
 * host workdir (only a project quota could cap that), on a read-only or detached one. */
int sbx_quota_check(const char *who, const sbx_backend_config *cfg, bool detached);

/* After READY of a sandbox with a capped workspace: its SBX_INIT_FILES_ROOT, the fd in *fd. */
int sbx_quota_receive_files_root(int ctl, const char *who, int *fd);

#endif
