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

/* Notes a start of this shape and says whether a spare of it should be started: when the
 * process started one of the same shape shortly before and no spare of it is parked (one of
 * another shape is then replaced). A process that opens one workspace never pays for a
 * spare. */
bool sbx_spare_wanted(const char *shape);

/* Starting a spare costs a few milliseconds of CPU (a static program's start, two forks,
 * namespaces, a root), which on a small machine slow down whatever the caller does meanwhile
 * -- typically the first commands of the workspace just opened. So the open that wants a
 * spare does not start it: a short-lived thread of its own does, when the caller is idle:
 * right after its next close (sbx_spare_nudge), or SBX_SPARE_DELAY_MS after the open when
 * no close comes first. While the caller opens faster than that (a take finds the spare not
 * started yet), spares are started at once. start(shape) starts and parks one, on that
 * thread; the spare's first process is a child of ours until that thread has reaped it, a
 * millisecond or two. Takes shape. */
#define SBX_SPARE_DELAY_MS 250
typedef void (*sbx_spare_starter)(char *shape);
void sbx_spare_schedule(char *shape, sbx_spare_starter start);

/* The caller is done with its work for now (a workspace closed): a scheduled spare starts. */
void sbx_spare_nudge(void);

/* Parks s (takes ownership); a spare already parked is discarded. */
void sbx_spare_park(struct sbx_spare *s);

/* Reads the spare's first message, the pidfd of its outer process, waiting up to
 * timeout_ms (0: only if it is there). 0, or a negative errno. */
int sbx_spare_receive_outer(struct sbx_spare *s, int timeout_ms);

/* Stops a spare: closing its channel ends the init; waits for the outer process to end. */
void sbx_spare_discard(struct sbx_spare *s);


#endif
