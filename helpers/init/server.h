/* The sandbox init's exec server (server.c). */
#ifndef SBX_INIT_SERVER_H
#define SBX_INIT_SERVER_H

#include <stdbool.h>
#include <stdint.h>

/* Serves spawn requests on the control channel until it closes (returns 0) or fails
 * (negative errno). A detached sandbox (one that got a listener) serves until SHUTDOWN, or,
 * with idle_ttl_ms > 0, until no client has been connected for that long (returns 0).
 * may_keep_runners false: every command gets a runner that leaves with it (server.c). */
int sbx_init_serve(int ctl, uint64_t idle_ttl_ms, bool may_keep_runners);

/* A pre-started sandbox: waits up to timeout_ms for the SBX_INIT_ACTIVATE message, which
 * must carry exactly nfds fds (1 to SBX_INIT_ACTIVATE_FDS: the workspace, then what the spec announced,
 * init_proto.h), and returns them in fds[]. Malformed messages are skipped; -EPIPE when the
 * channel closed first, -ETIMEDOUT, or -EPROTO for another request or another count. */
int sbx_init_await_activation(int ctl, int timeout_ms, int nfds, int *fds);

#endif
