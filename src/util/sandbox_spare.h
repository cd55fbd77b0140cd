/* A pre-started sandbox ("spare"): a process that opens sandboxes one after another gets the
 * next one half-built. The init of a spare has made its namespaces and every part of the root
 * but the workspace, and waits for SBX_INIT_ACTIVATE (init_proto.h); handing it the workspace
 * and waiting for READY is all that is left of a start. sandbox.c starts and activates
 * spares; this module only keeps the one parked spare of the process and decides when one is
 * worth starting. */
#ifndef SBX_UTIL_SANDBOX_SPARE_H
#define SBX_UTIL_SANDBOX_SPARE_H

#include <stdbool.h>

struct sbx_spare {
	char *shape;                  /* "uid:gid spec" it was started with: what it can serve */
	int pidfd;                    /* its outer init process (no child of ours: see
	                                 SBX_INIT_OUTER in init_proto.h) */
	int ctl;                      /* the control channel */
	int err_fd;                   /* what it says on stderr before the protocol runs */
};

/* Takes the parked spare if it was started with exactly this shape (and is not too old to
 * trust its copy of /etc); returns true and fills *out, which the caller then owns. */
bool sbx_spare_take(const char *shape, struct sbx_spare *out);

/* Notes an ordinary start of this shape and says whether a spare of it should be started
 * now: when the process started one of the same shape shortly before and no spare is
 * parked. A process that opens one workspace never pays for a spare. */
bool sbx_spare_wanted(const char *shape);

/* Parks s (takes ownership); a spare already parked is discarded. */
void sbx_spare_park(struct sbx_spare *s);

/* Stops a spare: closing its channel ends the init; waits for the outer process to end. */
void sbx_spare_discard(struct sbx_spare *s);

/* Waits up to timeout_ms for the process of pidfd to end, kills it if it has not, and closes
 * pidfd. For processes that are not our children (nothing to reap). */
void sbx_pidfd_wait_or_kill(int pidfd, int timeout_ms);

#endif
