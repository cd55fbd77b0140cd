/* The workspace configuration: a JSON object validated key by key. */
#ifndef SBX_CONFIG_H
#define SBX_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <agentsbx/backend.h>

#define SBX_CONFIG_MAX_BYTES   (1u << 20)  /* a config larger than 1 MiB is refused */
#define SBX_DEFAULT_MAX_OUTPUT ((size_t)16 << 20)
#define SBX_DEFAULT_BACKEND    "ns"   /* the embedded default: our own sandbox */
#define SBX_AUDIT_DEFAULT_MAX_BYTES ((uint64_t)10 << 20)
#define SBX_AUDIT_DEFAULT_KEEP 3
#define SBX_AUDIT_MAX_SECRETS 256

/* What sbx_workspace_reset returns the files to. DEFAULT: EMPTY for a temporary workdir,
 * KEEP for a host workdir. SNAPSHOT: the workdir as it was at open. */
enum sbx_baseline { SBX_BASELINE_DEFAULT, SBX_BASELINE_KEEP, SBX_BASELINE_EMPTY,
                    SBX_BASELINE_SNAPSHOT };

typedef struct sbx_config {
	char *backend;            /* backend name, validated [a-z0-9_]{1,32} */
	char *workdir;            /* absolute host path, or NULL */
	char *id;                 /* validated id, or NULL (the core picks one) */
	char *state_dir;          /* "state_dir": an absolute path, "workdir", or NULL (default) */
	char **env;               /* NULL-terminated "NAME=value" (never NULL) */
	int64_t timeout_ms;       /* 0 = none */
	size_t max_output;        /* per stream */
	sbx_backend_limits limits;
	uint64_t disk_bytes;      /* limits.disk_bytes, 0 = not set */
	uint64_t tmp_bytes;       /* limits.tmp_bytes, 0 = the backend's default */
	uint64_t background_shells; /* limits.background_shells, 0 = the default (8) */
	char *network_mode;       /* "none", "allowlist", "host", or NULL when absent */
	char *network_json;       /* the "network" object as compact JSON, or NULL when absent */
	enum sbx_baseline baseline;
	bool read_only;           /* "mode": "read-only" */
	bool allow_system_workdir; /* "unsafe_allow_system_workdir": true (workdir_policy.c) */
	bool audit_enabled;       /* "audit.enabled", default true */
	uint64_t audit_max_bytes; /* rotate the log beyond this size */
	int audit_keep;           /* rotated logs kept */
	char **audit_redact;      /* secrets never written to the log, or NULL */
	int mcp_stream;           /* "mcp.transport": 1 stream, 0 socket, -1 not given */
	char *backend_options;    /* JSON text of the object under the backend's name, or "{}" */
	char *json;               /* the whole config as given (or "{}") */
} sbx_config;

/* Parses and validates config text (NULL or "" = "{}"). Failures return -SBX_ECONFIG with a
 * message naming the key: "config: key 'limits.pids': expected a positive integer". */
int sbx_config_parse(const char *text, sbx_config **out);
void sbx_config_free(sbx_config *cfg);

/* Parses a "network" object given on its own (sbx_workspace_set_network): *mode is its
 * mode, required here, *json its compact JSON. Messages start with who. */
int sbx_config_parse_network(const char *text, const char *who, char **mode, char **json);

/* Is name an acceptable id / backend name? (exposed for the manager and CLI) */
bool sbx_config_valid_id(const char *id);
bool sbx_config_valid_backend_name(const char *name);

#endif
