/* The engine's path stat (the X-Docker-Container-Path-Stat header of the archive API), parsed
 * on its own so that the fuzzer reaches it without an engine. */
#ifndef SBX_DOCKER_PATHSTAT_H
#define SBX_DOCKER_PATHSTAT_H

#include <stddef.h>
#include <stdint.h>
#include <agentsbx/agentsbx.h>

struct docker_path_stat {
	char *name;                   /* the last component */
	int type;                     /* enum sbx_file_type */
	unsigned mode;                /* permission bits with setuid, setgid and sticky (07777) */
	uint64_t size;
	int64_t mtime_sec, mtime_nsec;
	char *link;                   /* a symlink's target, resolved by the engine in the
	                                 container's view (absolute); NULL for others */
};

/* Decodes the header's value (base64 of JSON). -SBX_EPROTO with a message for anything
 * malformed; st is then empty. Free with docker_path_stat_free(). */
int docker_path_stat_parse(const char *b64, size_t len, struct docker_path_stat *st);
void docker_path_stat_free(struct docker_path_stat *st);

/* "2006-01-02T15:04:05.999999999Z07:00" -> seconds and nanoseconds since the epoch; -1 when
 * it is not that. */
int docker_parse_rfc3339(const char *s, int64_t *sec, int64_t *nsec);

#endif
