/* A tool session's state: the Bash working directory and which files the model has read, in
 * what state. Kept in the workspace's state folder (.agentsbx/tools/<session>.json: through
 * sbx_state_dir where the files are on the host, else through the file API), so it survives
 * the handle, a restarted harness and separate CLI runs, and works the same on every
 * backend. */
#ifndef SBX_TOOLS_SESSION_H
#define SBX_TOOLS_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* The state a file was read in, as the workspace itself reports it (sbx_file_stat through
 * the backend, never the host's view of a path). */
struct sbx_tool_read {
	char *rel;                /* root-relative path */
	int64_t mtime_sec, mtime_nsec;
	uint64_t size;
	int64_t seq;              /* when it was noted: the oldest entries go first */
};

struct sbx_tool_session {
	char *id;
	char *cwd;                /* root-relative; "" = the root */
	bool cwd_changed;
	struct sbx_tool_read *reads;
	size_t n_reads;
	char **touched;           /* paths whose entries this call changed (to merge on save) */
	size_t n_touched;
	int64_t next_seq;
};

/* Is id a valid session id ([A-Za-z0-9_.-], 1..128, not starting with '.')? */
bool sbx_tool_session_id_ok(const char *id);

int sbx_tool_session_load(sbx_workspace *ws, const char *id, struct sbx_tool_session **out);
/* Merges this call's changes into the stored state (other handles may have saved meanwhile)
 * and writes it back atomically. */
int sbx_tool_session_save(sbx_workspace *ws, struct sbx_tool_session *s);
void sbx_tool_session_free(struct sbx_tool_session *s);

const struct sbx_tool_read *sbx_tool_session_read_of(const struct sbx_tool_session *s,
                                                     const char *rel);
int sbx_tool_session_note_read(struct sbx_tool_session *s, const char *rel, const sbx_stat *st);
int sbx_tool_session_set_cwd(struct sbx_tool_session *s, const char *rel);

#endif
