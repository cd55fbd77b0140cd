'use strict';
// The C declarations, for the threads that call the library (lib/worker.js). Every function is
// bound on first use: a library built before skills or offload existed lacks those symbols,
// and only a call to one of them should fail (with ENOSYS), not loading the binding.

const koffi = require('koffi');
const { bindingError } = require('./errors');

let typesDeclared = false;

/** The struct and callback types of agentsbx.h, declared once per thread's koffi instance. */
function declareTypes() {
  if (typesDeclared) return;
  koffi.opaque('sbx_workspace');
  koffi.opaque('sbx_result');
  koffi.opaque('sbx_process');
  koffi.opaque('sbx_manager');
  koffi.proto('void sbx_output_cb(int stream, const void *data, size_t len, void *userdata)');
  koffi.proto('int sbx_approval_fn(void *userdata, const char *request_json, void *reason, ' +
    'size_t reason_len)');
  // Since 1.5. The event arrives as a pointer, decoded with koffi.decode(.., 'sbx_open_progress').
  koffi.proto('void sbx_open_progress_fn(void *userdata, const void *event)');
  koffi.struct('sbx_open_progress', {
    size: 'size_t',
    phase: 'const char *',
    subject: 'const char *',
    item: 'const char *',
    status: 'const char *',
    current: 'uint64_t',
    total: 'uint64_t',
  });
  koffi.struct('sbx_open_opts', {
    size: 'size_t',
    progress: 'sbx_open_progress_fn *',
    progress_userdata: 'void *',
  });
  // Binary payloads (stdin) are `const void *` so koffi passes Buffers without re-encoding.
  koffi.struct('sbx_exec_opts', {
    size: 'size_t',
    cwd: 'const char *',
    env: 'const char **',
    stdin_data: 'const void *',
    stdin_len: 'size_t',
    timeout_ms: 'int64_t',
    max_output: 'size_t',
    flags: 'uint32_t',
    on_output: 'sbx_output_cb *',
    userdata: 'void *',
  });
  koffi.struct('sbx_spawn_opts', {
    size: 'size_t',
    cwd: 'const char *',
    env: 'const char **',
    flags: 'uint32_t',
    pty: 'int', // since 1.7: a terminal instead of pipes, of rows x cols (0: 24 x 80)
    rows: 'uint16_t',
    cols: 'uint16_t',
  });
  koffi.struct('sbx_stat', {
    size: 'size_t',
    type: 'int',
    mode: 'uint32_t',
    file_size: 'uint64_t',
    mtime_sec: 'int64_t',
    mtime_nsec: 'int64_t',
  });
  typesDeclared = true;
}

// `const char *` results the library keeps come back as JS strings. Strings and buffers it
// allocates come back through `void **` (BigInt pointers) so they can be copied out and then
// released with sbx_free.
const PROTOTYPES = {
  sbx_version: 'const char *sbx_version(void)',
  sbx_abi_version: 'int sbx_abi_version(void)',
  // Since 1.6: 0xMMmmpp, as SBX_VERSION_NUMBER encodes it.
  sbx_version_number: 'int sbx_version_number(void)',
  sbx_last_error: 'const char *sbx_last_error(void)',
  sbx_free: 'void sbx_free(void *ptr)',
  sbx_backends_probe: 'int sbx_backends_probe(_Out_ void **json_out)',

  sbx_workspace_open: 'int sbx_workspace_open(const char *config_json, _Out_ sbx_workspace **out)',
  sbx_workspace_open_with: 'int sbx_workspace_open_with(const char *config_json, ' +
    'const sbx_open_opts *opts, _Out_ sbx_workspace **out)',
  sbx_workspace_close: 'int sbx_workspace_close(sbx_workspace *ws)',
  sbx_workspace_reset: 'int sbx_workspace_reset(sbx_workspace *ws)',
  sbx_workspace_id: 'const char *sbx_workspace_id(const sbx_workspace *ws)',
  sbx_workspace_root: 'const char *sbx_workspace_root(const sbx_workspace *ws)',
  sbx_workspace_backend: 'const char *sbx_workspace_backend(const sbx_workspace *ws)',
  sbx_audit_path: 'const char *sbx_audit_path(const sbx_workspace *ws)',

  sbx_exec: 'int sbx_exec(sbx_workspace *ws, const char **argv, const sbx_exec_opts *opts, ' +
    '_Out_ sbx_result **out)',
  sbx_exec_shell: 'int sbx_exec_shell(sbx_workspace *ws, const char *command, ' +
    'const sbx_exec_opts *opts, _Out_ sbx_result **out)',
  sbx_result_exit_code: 'int sbx_result_exit_code(const sbx_result *res)',
  sbx_result_signal: 'int sbx_result_signal(const sbx_result *res)',
  sbx_result_timed_out: 'int sbx_result_timed_out(const sbx_result *res)',
  sbx_result_truncated: 'int sbx_result_truncated(const sbx_result *res)',
  sbx_result_dropped: 'uint64_t sbx_result_dropped(const sbx_result *res, int stream)',
  sbx_result_stdout: 'void *sbx_result_stdout(const sbx_result *res, _Out_ size_t *len)',
  sbx_result_stderr: 'void *sbx_result_stderr(const sbx_result *res, _Out_ size_t *len)',
  sbx_result_duration_ms: 'int64_t sbx_result_duration_ms(const sbx_result *res)',
  sbx_result_free: 'void sbx_result_free(sbx_result *res)',

  sbx_process_spawn: 'int sbx_process_spawn(sbx_workspace *ws, const char **argv, ' +
    'const sbx_spawn_opts *opts, _Out_ sbx_process **out)',
  sbx_process_fd: 'int sbx_process_fd(const sbx_process *proc, int stream)',
  sbx_process_close_stdin: 'int sbx_process_close_stdin(sbx_process *proc)',
  sbx_process_wait: 'int sbx_process_wait(sbx_process *proc, int timeout_ms, ' +
    '_Out_ int *exit_code, _Out_ int *term_signal)',
  sbx_process_signal: 'int sbx_process_signal(sbx_process *proc, int sig)',
  sbx_process_kill: 'int sbx_process_kill(sbx_process *proc)',
  sbx_process_resize: 'int sbx_process_resize(sbx_process *proc, uint16_t rows, uint16_t cols)',
  sbx_process_free: 'void sbx_process_free(sbx_process *proc)',

  sbx_file_read: 'int sbx_file_read(sbx_workspace *ws, const char *path, _Out_ void **data, ' +
    '_Out_ size_t *len)',
  sbx_file_write: 'int sbx_file_write(sbx_workspace *ws, const char *path, const void *data, ' +
    'size_t len, unsigned int mode, uint32_t flags)',
  sbx_file_stat: 'int sbx_file_stat(sbx_workspace *ws, const char *path, _Inout_ sbx_stat *st)',
  sbx_file_list: 'int sbx_file_list(sbx_workspace *ws, const char *path, _Out_ void **json_out)',
  sbx_file_mkdir: 'int sbx_file_mkdir(sbx_workspace *ws, const char *path, unsigned int mode)',
  sbx_file_remove: 'int sbx_file_remove(sbx_workspace *ws, const char *path, uint32_t flags)',

  sbx_tools_json: 'int sbx_tools_json(sbx_workspace *ws, _Out_ void **json_out)',
  sbx_tool_call_session: 'int sbx_tool_call_session(sbx_workspace *ws, const char *session_id, ' +
    'const char *name, const char *args_json, _Out_ void **result_json)',
  sbx_workspace_instructions:
    'int sbx_workspace_instructions(sbx_workspace *ws, _Out_ void **text_out)',

  sbx_skill_add: 'int sbx_skill_add(sbx_workspace *ws, const char *host_path, ' +
    '_Out_ void **name_out)',
  sbx_skill_add_archive: 'int sbx_skill_add_archive(sbx_workspace *ws, const void *data, ' +
    'size_t len, const char *format, _Out_ void **name_out)',
  sbx_skill_remove: 'int sbx_skill_remove(sbx_workspace *ws, const char *name)',
  sbx_skills_json: 'int sbx_skills_json(sbx_workspace *ws, _Out_ void **json_out)',

  sbx_offload_context: 'int sbx_offload_context(sbx_workspace *ws, const char *session_id, ' +
    'const char *messages_json, _Out_ void **path_out)',
  sbx_offload_tool_result: 'int sbx_offload_tool_result(sbx_workspace *ws, ' +
    'const char *session_id, const char *tool_call_id, const void *data, size_t len, ' +
    '_Out_ void **path_out)',
  sbx_offload_data: 'int sbx_offload_data(sbx_workspace *ws, const char *media_type, ' +
    'const void *data, size_t len, _Out_ void **url_out)',

  sbx_workspace_git_quarantine:
    'int sbx_workspace_git_quarantine(sbx_workspace *ws, _Out_ void **json_out)',
  sbx_workspace_set_network:
    'int sbx_workspace_set_network(sbx_workspace *ws, const char *network_json)',
  sbx_manager_open: 'int sbx_manager_open(const char *config_json, _Out_ sbx_manager **out)',
  sbx_manager_get: 'int sbx_manager_get(sbx_manager *mgr, const char *user_id, ' +
    'const char *agent_id, const char *session_id, const char *workspace_id, ' +
    '_Out_ sbx_workspace **out)',
  sbx_manager_get_by_id: 'int sbx_manager_get_by_id(sbx_manager *mgr, const char *id, ' +
    '_Out_ sbx_workspace **out)',
  sbx_manager_release: 'int sbx_manager_release(sbx_manager *mgr, sbx_workspace *ws)',
  sbx_manager_close: 'int sbx_manager_close(sbx_manager *mgr, const char *id)',
  sbx_manager_list: 'int sbx_manager_list(sbx_manager *mgr, _Out_ void **json_out)',
  sbx_manager_gc: 'int sbx_manager_gc(sbx_manager *mgr, _Out_ int *closed)',
  sbx_manager_free: 'void sbx_manager_free(sbx_manager *mgr)',

  sbx_mcp_add: 'int sbx_mcp_add(sbx_workspace *ws, const char *agent_id, ' +
    'const char *session_id, const char *name, const char *config_json)',
  sbx_mcp_remove: 'int sbx_mcp_remove(sbx_workspace *ws, const char *agent_id, ' +
    'const char *session_id, const char *name)',
  sbx_mcp_list: 'int sbx_mcp_list(sbx_workspace *ws, const char *agent_id, ' +
    'const char *session_id, _Out_ void **json_out)',
  sbx_mcp_tools: 'int sbx_mcp_tools(sbx_workspace *ws, const char *agent_id, ' +
    'const char *session_id, const char *name, _Out_ void **json_out)',
  sbx_mcp_call: 'int sbx_mcp_call(sbx_workspace *ws, const char *agent_id, ' +
    'const char *session_id, const char *name, const char *tool, const char *args_json, ' +
    '_Out_ void **result_json)',

  sbx_set_approval_handler: 'int sbx_set_approval_handler(sbx_workspace *ws, ' +
    'sbx_approval_fn *fn, void *userdata)',
};

/**
 * The library at libPath with lazily bound functions: `lib.fn('sbx_exec')` returns the koffi
 * function, or throws an ENOSYS AgentSbxError when this build of the library lacks it.
 */
function openLibrary(libPath) {
  declareTypes();
  const handle = koffi.load(libPath);
  const bound = new Map();
  return {
    path: libPath,
    fn(name) {
      let f = bound.get(name);
      if (f) return f;
      try {
        f = handle.func(PROTOTYPES[name]);
      } catch (err) {
        throw bindingError('ENOSYS', `${name} is not in ${libPath}: this build of libagentsbx ` +
          `predates it (${err.message})`, name);
      }
      bound.set(name, f);
      return f;
    },
    has(name) {
      try {
        this.fn(name);
        return true;
      } catch {
        return false;
      }
    },
  };
}

/** A copy of len bytes at ptr in an ArrayBuffer of its own, so it can be transferred. */
function copyBytes(ptr, len) {
  const n = Number(len);
  const out = new Uint8Array(n);
  if (n) out.set(new Uint8Array(koffi.view(ptr, n)));
  return out;
}

/** The NUL-terminated UTF-8 string at pointer ptr (null for a NULL pointer). */
function readCString(ptr) {
  return ptr ? koffi.decode.string(ptr) : null;
}

module.exports = { openLibrary, copyBytes, readCString, koffi };
