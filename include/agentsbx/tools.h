/*
 * libagentsbx — agent tools, skills and context offload.
 *
 * Part of the public API; <agentsbx/agentsbx.h> includes every part. The conventions in
 * <agentsbx/common.h> (return codes, sbx_last_error, sbx_free, option structs) hold here.
 */
#ifndef AGENTSBX_TOOLS_H
#define AGENTSBX_TOOLS_H

#include <agentsbx/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------
 * Agent tools: Bash, Read, Write, Edit, Glob, Grep and Skill
 *
 * Three calls give a model a toolbox: sbx_tools_json() for the schemas, hand them to the
 * model, sbx_tool_call() for each call it makes. Tool results are JSON objects
 *   {"ok": true|false, "output": "text for the model", "metadata": {...}}
 * where ok=false is a tool error the model should read (bad arguments, file not found, a
 * denied approval): the call itself still returns 0. Only a library failure (bad handle, out
 * of memory, the backend gone) returns a negative code.
 * Tool state (the Bash working directory, which files were read and in what state) belongs to
 * a session and is kept in the workspace's state folder, so it outlives the handle.
 * ------------------------------------------------------------------------------------- */

/* The tool definitions as a JSON array: [{"name", "description", "input_schema"}, ...].
 * "Skill" is listed only while the workspace has skills. Release with sbx_free(). */
SBX_API int sbx_tools_json(sbx_workspace *ws, char **json_out);

/* Runs one tool call of the default session. args_json is the object the model produced.
 * *result_json (release with sbx_free) is the result object described above. */
SBX_API int sbx_tool_call(sbx_workspace *ws, const char *name, const char *args_json,
                          char **result_json);

/* The same for the session session_id ([A-Za-z0-9_.-], 1..128 characters, not starting with
 * '.'; NULL = the default session). */
SBX_API int sbx_tool_call_session(sbx_workspace *ws, const char *session_id, const char *name,
                                  const char *args_json, char **result_json);

/* The workspace block of a system prompt, stating only what holds for this workspace: its
 * root (the project, where commands start), where commands may write, HOME, the network
 * mode, the protected paths, the git rules, and the skills it has. Release with sbx_free(). */
SBX_API int sbx_workspace_instructions(sbx_workspace *ws, char **text_out);

/* ---------------------------------------------------------------------------------------
 * Skills: skills/<dir>/SKILL.md in the workspace, with YAML front matter naming it
 * ("name" and "description" are required).
 * ------------------------------------------------------------------------------------- */

/* Copies the skill in the host directory host_path (which holds SKILL.md) into the workspace,
 * as skills/<dir> with <dir> made from the name ([A-Za-z0-9_-] kept, other characters "_",
 * then "_1", "_2"... if taken). Regular files, directories and symlinks that stay inside the
 * folder are copied (symlinks as symlinks, which backends whose files are not on the host
 * refuse with -SBX_ENOSYS); anything else is refused (-SBX_EINVAL naming the file). The same
 * limits as for archives apply. The skill appears whole or not at all. *name_out (may be
 * NULL; release with sbx_free) receives the skill's name. A skill of that name already
 * there: -SBX_EEXIST. A name is 1..64 characters without '/', control characters or white
 * space at either end. */
SBX_API int sbx_skill_add(sbx_workspace *ws, const char *host_path, char **name_out);

/* Adds a skill from a tar, tar.gz, tar.xz, tar.zst or zip archive in memory (format "tar",
 * "tar.gz", "tar.xz", "tar.zst", "zip", or NULL to tell from the content; 7z is refused).
 * The archive holds SKILL.md at its top or inside one
 * top-level folder (a "__MACOSX" folder beside it is ignored). Entries that would land
 * outside the skill's folder, links pointing out of it, device files, and archives expanding
 * beyond 256 MiB, holding a file over 64 MiB or more than 10000 entries are refused
 * (-SBX_EINVAL naming the entry) and nothing is left behind. Otherwise as sbx_skill_add. */
SBX_API int sbx_skill_add_archive(sbx_workspace *ws, const void *data, size_t len,
                                  const char *format, char **name_out);

/* Removes the skill named name, not its dir (-SBX_ENOENT if there is none). */
SBX_API int sbx_skill_remove(sbx_workspace *ws, const char *name);

/* The skills as a JSON array sorted by name:
 *   [{"name", "description", "dir": "skills/<dir>"}, ...]
 * Folders without a valid SKILL.md, and names starting with '.', are skipped. Release with
 * sbx_free(). */
SBX_API int sbx_skills_json(sbx_workspace *ws, char **json_out);

/* ---------------------------------------------------------------------------------------
 * Context offload: what a harness moves out of the model's context stays in the workspace,
 * where the model can read it back.
 *   sessions/<session_id>/context.jsonl           one JSON message per line
 *   sessions/<session_id>/tool_result-<id>.txt    "(1)", "(2)"... appended on a name clash
 *   data/<sha256 of the bytes><ext>               written once, content-addressed
 * Session and tool-call ids: [A-Za-z0-9_.-], 1..128 characters, not starting with '.'.
 * Paths returned are workspace-relative. Release every out string with sbx_free().
 * ------------------------------------------------------------------------------------- */

/* Appends messages_json (one message object, or an array of them) to the session's
 * context.jsonl, one line per message; each top-level data block with a base64 source in a
 * message's "content" is first stored with sbx_offload_data and replaced by its URL. The
 * lines are appended in one piece: concurrent writers never interleave within a line and a
 * crash never leaves half a line. An item that is not an object, or a data block with bad
 * base64 or media type, fails with -SBX_EINVAL naming the item and block; then nothing is
 * appended (data already stored stays, as it is content-addressed). */
SBX_API int sbx_offload_context(sbx_workspace *ws, const char *session_id,
                                const char *messages_json, char **path_out);

/* Stores a tool result as sessions/<session_id>/tool_result-<tool_call_id>.txt, or under the
 * first free name of tool_result-<tool_call_id>(1).txt, (2)...: an existing file is never
 * overwritten, also not by a concurrent writer. */
SBX_API int sbx_offload_tool_result(sbx_workspace *ws, const char *session_id,
                                    const char *tool_call_id, const void *data, size_t len,
                                    char **path_out);

/* Stores bytes as data/<sha256><ext> (ext from a fixed media-type table, ".bin" otherwise)
 * unless already there, and returns "workspace:///data/<sha256><ext>". media_type must look
 * like "type/subtype" (parameters after ';' are ignored; -SBX_EINVAL otherwise). The table
 * (case does not matter):
 *   image/png .png, image/jpeg and image/jpg .jpg, image/gif .gif, image/webp .webp,
 *   image/svg+xml .svg, image/bmp .bmp, image/tiff .tiff, image/x-icon .ico, image/avif .avif,
 *   image/heic .heic, application/pdf .pdf, application/json .json, application/xml .xml,
 *   application/zip .zip, application/gzip .gz, application/x-tar .tar,
 *   application/javascript .js, text/plain .txt, text/markdown .md, text/html .html,
 *   text/csv .csv, text/css .css, text/xml .xml, text/javascript .js, audio/mpeg and
 *   audio/mp3 .mp3, audio/wav and audio/x-wav .wav, audio/ogg .ogg, audio/flac .flac,
 *   audio/aac .aac, audio/mp4 .m4a, audio/webm .weba, video/mp4 .mp4, video/webm .webm,
 *   video/quicktime .mov, video/mpeg .mpeg, video/ogg .ogv. */
SBX_API int sbx_offload_data(sbx_workspace *ws, const char *media_type, const void *data,
                             size_t len, char **url_out);

#ifdef __cplusplus
}
#endif

#endif /* AGENTSBX_TOOLS_H */
