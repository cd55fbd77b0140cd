/* The local backend: commands run directly on the host, in the workspace directory, each
 * under its own agentsbx-run process that owns the command's process tree. */
#ifndef SBX_BACKEND_LOCAL_H
#define SBX_BACKEND_LOCAL_H

#include <agentsbx/backend.h>
#include "backends/common/runclient.h"

struct local_ws {
	char *workdir;                /* the root, as commands and the host both see it */
	char *runner;                 /* absolute path of agentsbx-run */
	sbx_backend_limits limits;    /* the workspace's limits, when a spawn brings none */
	struct sbx_runclient_set live; /* processes not yet released, for reset and close */
};

extern const sbx_backend_ops sbx_backend_local;

/* launch.c */
int local_spawn(void *state, const sbx_backend_spawn *req, void **proc, int *wait_fd);


#endif
