/* The agent tools' shared interface. Each tool is one definition (name, description, JSON
 * Schema of its input, class, run function) in its own file; tools.c lists them, validates
 * the model's arguments against the schema before run() sees them, asks the approval hook,
 * writes the audit record and builds the result object.
 *
 * A tool reports problems the model should read (file not found, old_string not unique, a
 * path outside the workspace) with sbx_tool_error(): the call succeeds and the result says
 * ok=false. Only library failures (out of memory, the backend gone) return a negative code. */
#ifndef SBX_TOOLS_TOOL_H
#define SBX_TOOLS_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "util/buf.h"
#include "util/json.h"

struct sbx_tool_session;

typedef struct sbx_tool_ctx {
	sbx_workspace *ws;
	const char *session_id;             /* never NULL ("default") */
	struct sbx_tool_session *session;   /* the session's state: see session.h */
	const char *root_view;              /* the root as commands see it (sbx_workspace_root) */
	int root_fd;                        /* O_PATH fd of the root when the files are on this
	                                       host (HOST_FILES backends), else -1 */
	const char *tool_name;              /* the name called (MCP tools share one run()) */
	const char *host_view;              /* the same directory as the host names it, or NULL
	                                       (sbx_workspace_host_view): paths under either are
	                                       the workspace's */
} sbx_tool_ctx;

typedef struct sbx_tool_out {
	sbx_buf text;   /* the output for the model */
	sbx_buf meta;   /* members of the "metadata" object, comma-separated, without braces */
	bool ok;        /* starts true; sbx_tool_error() clears it */
} sbx_tool_out;

typedef struct sbx_tool_def {
	const char *name;
	const char *description;
	const char *input_schema;   /* JSON Schema (object); see tools.c for the subset checked */
	const char *cls;            /* "read", "write" or "exec": what the approval hook is told */
	/* args is the validated input object. Returns 0 (also for tool errors) or -SBX_E... */
	int (*run)(sbx_tool_ctx *ctx, const sbx_json *args, sbx_tool_out *out);
	/* Old parameter names still accepted but not in the schema, as pairs (old, schema name)
	 * ending with NULL: the dispatcher renames them before the schema check (the schema
	 * wins when a call gives both). NULL: none. */
	const char *const *aliases;
} sbx_tool_def;

/* The built-in tools (one file each). */
extern const sbx_tool_def sbx_tool_bash, sbx_tool_read, sbx_tool_write, sbx_tool_edit,
	sbx_tool_glob, sbx_tool_grep, sbx_tool_skill, sbx_tool_bash_output, sbx_tool_kill_shell;

/* Text longer than max_chars characters: keeps its start, stores the whole text as a
 * tool-result file (sbx_offload_tool_result) and says in the text how much was cut and
 * where the full output is (metadata: truncated, truncated_chars, truncated_bytes,
 * truncated_lines, full_output_path). Shorter text is left alone. Negative only for out of
 * memory. */
int sbx_tool_cut_long_output(sbx_tool_ctx *ctx, sbx_buf *text, size_t max_chars,
                             sbx_tool_out *out);

/* Replaces the output with a message for the model and marks the result failed. Returns 0. */
int sbx_tool_error(sbx_tool_out *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Metadata members ("key": value). */
void sbx_tool_meta_str(sbx_tool_out *out, const char *key, const char *value, size_t len);
void sbx_tool_meta_int(sbx_tool_out *out, const char *key, int64_t value);
void sbx_tool_meta_bool(sbx_tool_out *out, const char *key, bool value);

/* Argument accessors for validated args: absent optional members give the default. */
const char *sbx_tool_arg_str(const sbx_json *args, const char *key, const char *dflt);
int64_t sbx_tool_arg_int(const sbx_json *args, const char *key, int64_t dflt);
bool sbx_tool_arg_bool(const sbx_json *args, const char *key, bool dflt);

/* Maps a path the model wrote (absolute under the root view, or relative to the root) to a
 * normalised root-relative path ("" = the root). On a bad path (outside the root, NUL-free
 * but not UTF-8, "..", too long) it writes a tool error naming field and returns 1; 0 on
 * success (*rel malloc'ed); negative only for out of memory.
 * A path with a backslash may be a name as the tools print it (sbx_tool_display_path): then
 * it also stands for the name with the escapes undone, which is taken where it names an
 * existing entry, or leads further into existing directories than the path as written; a
 * new name is taken as written. *rel may then hold bytes that are not UTF-8: use the _rel
 * file functions of internal.h on it. */
int sbx_tool_resolve_path(sbx_tool_ctx *ctx, const char *field, const char *path, char **rel,
                          sbx_tool_out *out);

/* The directory Glob and Grep search when the model names none: the session's working
 * directory (Claude Code's choice, where the Bash tool's commands run now), or the root ("")
 * when it has none or it is gone. Root-relative, normalised; valid while ctx->session is. */
const char *sbx_tool_default_dir(const sbx_tool_ctx *ctx);

/* sbx_tool_resolve_path for the "path" of Glob and Grep: absent or empty, the default
 * directory above. Same returns. */
int sbx_tool_resolve_search_path(sbx_tool_ctx *ctx, const char *path, char **rel,
                                 sbx_tool_out *out);

/* The path as the model sees it: root view + "/" + rel (rel "" gives the root view), each
 * name escaped as sbx_tool_escape_append does (text.h), so that no name can pass for
 * another or break a listing's lines. NULL when out of memory. */
char *sbx_tool_display_path(const sbx_tool_ctx *ctx, const char *rel);

/* sbx_last_error() with the control characters a path in it may carry escaped: for tool
 * errors that quote it. Thread-local storage, valid until the next call. */
const char *sbx_tool_last_error(void);

/* The backend's protected paths (NULL-terminated), or NULL when it has none. */
const char *const *sbx_tool_protected_list(sbx_workspace *ws);

/* Is rel (normalised, root-relative) one the tools must not write: the library's state folder,
 * or a path the backend protects from commands (.git/hooks, .git/config, ...)? */
bool sbx_tool_path_protected(const sbx_tool_ctx *ctx, const char *rel);

#endif
