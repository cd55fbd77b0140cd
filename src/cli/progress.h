/* What `agentsbx` shows on stderr while a workspace opens slowly (an image pull): on a
 * terminal one bar redrawn in place, else one line per layer when it is done, and the
 * pull's own closing lines. */
#ifndef SBX_CLI_PROGRESS_H
#define SBX_CLI_PROGRESS_H

#include <stdio.h>
#include <agentsbx/agentsbx.h>

struct cli_progress;

/* A reporter writing to out (a bar when tty is set). NULL when out of memory: then nothing
 * is shown. */
struct cli_progress *cli_progress_new(FILE *out, int tty);
/* The sbx_open_progress_fn; userdata is the reporter. */
void cli_progress_event(void *userdata, const sbx_open_progress *ev);
/* Ends the bar's line (if one was drawn) and frees the reporter. NULL is ignored. */
void cli_progress_end(struct cli_progress *p);

#endif
