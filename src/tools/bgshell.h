/* The Bash tool's background shells (run_in_background, BashOutput, KillShell): commands
 * started through the process API that keep running between tool calls of one workspace
 * handle and die with it (close and reset stop them).
 *
 * Each shell has a thread that reads its output as it comes, so a chatty server never
 * blocks on a full pipe, into bounded buffers: per stream the newest BG_KEEP_BYTES not yet
 * read are kept, and what had to go is counted. */
#ifndef SBX_TOOLS_BGSHELL_H
#define SBX_TOOLS_BGSHELL_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "util/buf.h"

#define SBX_BG_ID_MAX 24
#define SBX_BG_KEEP_BYTES ((size_t)1 << 20)
#define SBX_BG_DEFAULT_RUNNING 8

enum sbx_bg_status { SBX_BG_RUNNING, SBX_BG_COMPLETED, SBX_BG_FAILED, SBX_BG_KILLED };

/* What a read takes from a shell: the output since the last read, and where it stands. */
typedef struct sbx_bg_report {
	char *command;            /* as given (malloc'ed) */
	sbx_buf out, err;         /* new output since the last read */
	uint64_t out_dropped;     /* bytes that came since the last read but were not kept */
	uint64_t err_dropped;
	enum sbx_bg_status status;
	int exit_code;            /* when ended: 0..255, or -1 when signalled */
	int term_signal;
} sbx_bg_report;

/* "running", "completed", "failed", "killed". */
const char *sbx_bg_status_name(enum sbx_bg_status s);

/* Starts command with /bin/sh -c in cwd (root-relative, "" = the root) and writes its id
 * ("bash_1", ...) to id. The number running at once is capped (limits.background_shells):
 * beyond it, returns 1 with the reason in why, as for an unknown id below. */
int sbx_bg_start(sbx_workspace *ws, const char *command, const char *cwd,
                 char id[SBX_BG_ID_MAX], char *why, size_t why_len);

/* Takes the new output of shell id into *rep (free with sbx_bg_report_free). Returns 1 when
 * there is no such shell (why says so and lists the ones there are). */
int sbx_bg_take(sbx_workspace *ws, const char *id, sbx_bg_report *rep, char *why,
                size_t why_len);

/* Kills shell id and every process it started and waits (a few seconds at most) for its
 * end. rep gets the command and status; the output stays for sbx_bg_take. 1 when there is
 * no such shell; 2 when it had ended already (rep is filled all the same); 3 when it still
 * runs after the wait (rep says so). */
int sbx_bg_kill(sbx_workspace *ws, const char *id, sbx_bg_report *rep, char *why,
                size_t why_len);

void sbx_bg_report_free(sbx_bg_report *rep);

#endif
