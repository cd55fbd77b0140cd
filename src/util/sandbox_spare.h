/* A pre-started sandbox ("spare"): a process that opens sandboxes one after another gets the
 * next one half-built. The init of a spare has made its namespaces and every part of the root
 * but the workspace, and waits for SBX_INIT_ACTIVATE (init_proto.h); handing it the workspace
 * and waiting for READY is all that is left of a start. sandbox.c starts and activates
 * spares; this module only keeps the one parked spare of the process and decides when one is
 * worth starting. */
#ifndef SBX_UTIL_SANDBOX_SPARE_H
#define SBX_UTIL_SANDBOX_SPARE_H

#include <stdbool.h>
#include <sys/types.h>

struct sbx_spare {
	char *shape;                  /* "uid:gid spec" it was started with: what it can serve */
	int pidfd;                    /* its outer init process (no child of ours: see
	                                 SBX_INIT_OUTER in init_proto.h), once received */
	int ctl;                      /* the control channel */
	int err_fd;                   /* what it says on stderr before the protocol runs */
};

/* Takes the parked spare if it was started with exactly this shape (and is not too old to
 * trust its copy of /etc); returns true and fills *out, which the caller then owns. */
bool sbx_spare_take(const char *shape, struct sbx_spare *out);

/* Notes a start of this shape and says whether a spare of it should be started now: when the
 * process started one of the same shape shortly before and no spare of it is parked (one of
 * another shape is then replaced). A process that opens one workspace never pays for a
 * spare. */
bool sbx_spare_wanted(const char *shape);

/* A spare's first process only forks the outer one and exits (SBX_INIT_OUTER). Rather than
 * wait for that while the caller's open is still going, it is noted here and reaped later:
 * when a sandbox stops, or before the next spare starts. */
void sbx_spare_note_first_half(pid_t pid);
void sbx_spare_reap_first_half(void);

/* Parks s (takes ownership); a spare already parked is discarded. */
void sbx_spare_park(struct sbx_spare *s);

/* Reads the spare's first message, the pidfd of its outer process, waiting up to
 * timeout_ms (0: only if it is there). 0, or a negative errno. */
int sbx_spare_receive_outer(struct sbx_spare *s, int timeout_ms);

/* Stops a spare: closing its channel ends the init; waits for the outer process to end. */
void sbx_spare_discard(struct sbx_spare *s);


#endif
