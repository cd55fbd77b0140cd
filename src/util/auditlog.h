/* The audit log's file: JSON lines in the workspace's state folder, rotated by size. Every
 * writer — the library for execs and tool calls, agentsbx-proxy for network decisions —
 * appends through these, so records of several processes never interleave or get lost in a
 * rotation. */
#ifndef SBX_UTIL_AUDITLOG_H
#define SBX_UTIL_AUDITLOG_H

#include <stddef.h>
#include <stdint.h>

#define SBX_AUDIT_LOG_NAME "audit.jsonl"

/* Appends line (one record with its '\n') to the log in the state folder dirfd, with one
 * write(2) under flock(dirfd): first rotating audit.jsonl -> .1 -> ... -> .<keep> when the
 * line would take it past max_bytes. Failures are silent: a full disk must not fail the
 * command being logged. */
void sbx_auditlog_append(int dirfd, const char *line, size_t len, uint64_t max_bytes, int keep);

/* The current time as the log writes it: "2026-01-02T03:04:05.678Z". */
void sbx_auditlog_time(char *out, size_t len);

#endif
