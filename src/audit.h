/* The audit log and the approval hook: what every exec and tool call passes through. */
#ifndef SBX_AUDIT_H
#define SBX_AUDIT_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "util/buf.h"
#include "util/json.h"

/* Decides where the workspace's log goes (its state folder, when the files are on this host
 * and the config has not turned the log off). Called once the workspace is open. */
int sbx_audit_setup(sbx_workspace *ws);
void sbx_audit_teardown(sbx_workspace *ws);
/* A new fd of the state folder the log lives in (for helpers that append to it), or -1 when
 * the log is off. The caller closes it. */
int sbx_audit_dir_fd(sbx_workspace *ws);

/* One record under construction: a JSON object the helpers below add members to. */
typedef struct sbx_audit_rec {
	sbx_workspace *ws;
	sbx_buf b;
	int64_t start_ms;
} sbx_audit_rec;

/* Starts a record ("time", "kind") if the log is on; otherwise the other calls do nothing. */
void sbx_audit_begin(sbx_audit_rec *rec, sbx_workspace *ws, const char *kind);
void sbx_audit_str(sbx_audit_rec *rec, const char *key, const char *value);
void sbx_audit_int(sbx_audit_rec *rec, const char *key, int64_t value);
/* A JSON value with secrets redacted (values of secret-looking keys, configured secrets,
 * token-shaped strings). */
void sbx_audit_json(sbx_audit_rec *rec, const char *key, const sbx_json *value);
/* argv and env entries ("NAME=value": the value is redacted for secret-looking names). */
void sbx_audit_strv(sbx_audit_rec *rec, const char *key, const char *const *v);
/* Adds "duration_ms", writes the record as one line and frees it. */
void sbx_audit_end(sbx_audit_rec *rec);

/* Appends to out a copy of s with secrets replaced by "[REDACTED]". */
void sbx_audit_redact_text(const sbx_workspace *ws, sbx_buf *out, const char *s, size_t len);

/* Asks the approval handler, if any, about a request (a JSON object). Returns true when
 * allowed; false with the handler's reason in reason otherwise. */
bool sbx_approval_allows(sbx_workspace *ws, const char *request_json, char *reason,
                         size_t reason_len);

/* The approval request and audit record of an exec or spawn (argv, cwd), asked and begun
 * together: returns 0 when allowed, -SBX_EPERM (with the reason as the error) when not. */
int sbx_exec_approve(sbx_workspace *ws, const char *kind, const char *const argv[],
                     const char *cwd, sbx_audit_rec *rec);

#endif
