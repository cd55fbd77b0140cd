/* The sandbox's tidier (tidy.c): a process outside every namespace of the sandbox that
 * outlives it just long enough to remove its cgroup and placeholders. */
#ifndef SBX_INIT_TIDY_H
#define SBX_INIT_TIDY_H

#include <sys/types.h>

struct sbx_tidy {
	pid_t tidier;             /* the tidier's pid (the host's view): what to wait for */
	int report;               /* the child's end of the pipe to the tidier, or -1 */
};

/* Splits the calling process: the parent becomes the tidier and never returns from here (it
 * waits for the child, removes the cgroup named id if told it was made, and the placeholders
 * of the journal note `note` (may be NULL) beneath fd 5, the workspace, then exits with the
 * child's status); the child returns 0 and goes on as the outer process. -errno when the
 * split fails (nothing forked). */
int sbx_tidy_split(const char *note, const char *id, struct sbx_tidy *t);
/* The child joined the workspace's cgroup: the tidier removes it at the end. */
void sbx_tidy_report_cgroup(struct sbx_tidy *t);
/* Nothing more to report: closes the child's end, so nothing forked later holds it. */
void sbx_tidy_done_reporting(struct sbx_tidy *t);

/* The placeholders of the note beneath root_fd, for a tidier of its own (bubblewrap mode's
 * outer process). Nothing without a note or root. */
void sbx_tidy_remove(int root_fd, const char *note);

#endif
