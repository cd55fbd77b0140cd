'use strict';
// A thread that makes the library's blocking calls. Each job runs one operation from start to
// end synchronously on this thread, so a failing call's sbx_last_error() — thread-local in C —
// is read right after it, on the same thread, before anything else can overwrite it. Callbacks
// the library makes during a call (exec output) come back on this thread too, and are
// forwarded to the main thread as messages while the call goes on.

const { parentPort, workerData } = require('node:worker_threads');
const { openLibrary, copyBytes, readCString, koffi } = require('./native');

const lib = openLibrary(workerData.libPath);
const libc = koffi.load('libc.so.6');
const fcntl = libc.func('int fcntl(int fd, int cmd, ...)');
const closeFd = libc.func('int close(int fd)');
const F_DUPFD_CLOEXEC = 1030;

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;

/** A failed C call: its code and sbx_last_error(), read now, on the calling thread. */
class CallFailed extends Error {
  constructor(code, fnName) {
    super(lib.fn('sbx_last_error')() || '');
    this.code = code;
    this.fnName = fnName;
  }
}

/** Calls a library function returning 0 or -SBX_E..., throwing CallFailed on failure. */
function call(name, ...args) {
  const r = lib.fn(name)(...args);
  if (r < 0) throw new CallFailed(r, name);
  return r;
}

/** Calls a function whose last argument is a `char **` out-string; returns it as text. */
function callForString(name, ...args) {
  const out = [null];
  call(name, ...args, out);
  try {
    return readCString(out[0]);
  } finally {
    lib.fn('sbx_free')(out[0]);
  }
}

// ---- exec ----

// One output callback per thread, registered once: a thread runs one job at a time, so it
// forwards to whichever job is current.
let forwardOutput = null;
let outputCallback = null;

function outputCallbackPointer() {
  if (!outputCallback) {
    outputCallback = koffi.register((stream, data, len) => {
      if (forwardOutput) forwardOutput(stream, copyBytes(data, len));
    }, 'sbx_output_cb *');
  }
  return outputCallback;
}

function execOptions(opts, ctx) {
  const stdin = opts.stdin || null;
  const streaming = Boolean(opts.stream);
  if (streaming) {
    forwardOutput = (stream, bytes) => ctx.emit({ stream, data: bytes }, [bytes.buffer]);
  }
  return {
    size: koffi.sizeof('sbx_exec_opts'),
    cwd: opts.cwd ?? null,
    env: opts.env ? [...opts.env, null] : null,
    stdin_data: stdin,
    stdin_len: stdin ? stdin.length : 0,
    timeout_ms: opts.timeoutMs ?? 0,
    max_output: opts.maxOutput ?? 0,
    flags: opts.flags ?? 0,
    on_output: streaming ? outputCallbackPointer() : null,
    userdata: null,
  };
}

function resultStream(name, res) {
  const len = [0];
  const ptr = lib.fn(name)(res, len);
  return copyBytes(ptr, len[0]);
}

function collectResult(res) {
  return {
    exitCode: lib.fn('sbx_result_exit_code')(res),
    signal: lib.fn('sbx_result_signal')(res),
    timedOut: lib.fn('sbx_result_timed_out')(res) === 1,
    truncated: lib.fn('sbx_result_truncated')(res) === 1,
    stdoutDropped: Number(lib.fn('sbx_result_dropped')(res, 1)),
    stderrDropped: Number(lib.fn('sbx_result_dropped')(res, 2)),
    durationMs: Number(lib.fn('sbx_result_duration_ms')(res)),
    stdout: resultStream('sbx_result_stdout', res),
    stderr: resultStream('sbx_result_stderr', res),
  };
}

/** argv is an array (sbx_exec) or a shell command string (sbx_exec_shell). */
function exec(ws, command, opts, ctx) {
  const out = [null];
  try {
    const o = execOptions(opts, ctx);
    if (typeof command === 'string') call('sbx_exec_shell', ws, command, o, out);
    else call('sbx_exec', ws, [...command, null], o, out);
  } finally {
    forwardOutput = null;
  }
  try {
    const result = collectResult(out[0]);
    ctx.transfer.push(result.stdout.buffer, result.stderr.buffer);
    return result;
  } finally {
    lib.fn('sbx_result_free')(out[0]);
  }
}

// ---- processes ----

/** A close-on-exec duplicate of fd for the main thread's event loop to own and close. */
function dupForEventLoop(fd) {
  const copy = fcntl(fd, F_DUPFD_CLOEXEC, 'int', 3);
  if (copy < 0) {
    const err = new Error(`fcntl(F_DUPFD_CLOEXEC): errno ${koffi.errno()}`);
    err.code = -5; // SBX_EIO
    throw err;
  }
  return copy;
}

/**
 * Starts a process and hands the main thread duplicates of its pipe fds: the handle keeps
 * owning (and eventually closing) its own fds, while Node's event loop reads and writes the
 * copies and closes them whenever its streams end.
 */
function spawn(ws, argv, opts) {
  const out = [null];
  const o = {
    size: koffi.sizeof('sbx_spawn_opts'),
    cwd: opts.cwd ?? null,
    env: opts.env ? [...opts.env, null] : null,
    flags: opts.flags ?? 0,
    pty: opts.pty ? 1 : 0,
    rows: opts.rows ?? 0,
    cols: opts.cols ?? 0,
  };
  // A library before 1.7 would not know the field: binding its resize fails with ENOSYS.
  if (opts.pty) lib.fn('sbx_process_resize');
  call('sbx_process_spawn', ws, [...argv, null], o, out);
  const proc = out[0];
  const fds = [];
  try {
    for (const stream of [STDIN, STDOUT, STDERR]) {
      const fd = lib.fn('sbx_process_fd')(proc, stream);
      fds.push(fd < 0 ? -1 : dupForEventLoop(fd));
    }
  } catch (err) {
    fds.filter((fd) => fd >= 0).forEach((fd) => closeFd(fd));
    lib.fn('sbx_process_free')(proc);
    throw err;
  }
  return { proc, fds };
}

function processWait(proc, timeoutMs) {
  const exitCode = [0];
  const signal = [0];
  call('sbx_process_wait', proc, timeoutMs, exitCode, signal);
  return { exitCode: exitCode[0], signal: signal[0] };
}

// ---- files ----

function readFile(ws, path, ctx) {
  const data = [null];
  const len = [0];
  call('sbx_file_read', ws, path, data, len);
  try {
    const bytes = copyBytes(data[0], len[0]);
    ctx.transfer.push(bytes.buffer);
    return bytes;
  } finally {
    lib.fn('sbx_free')(data[0]);
  }
}

function stat(ws, path) {
  const st = { size: koffi.sizeof('sbx_stat'), type: 0, mode: 0, file_size: 0, mtime_sec: 0,
    mtime_nsec: 0 };
  call('sbx_file_stat', ws, path, st);
  return st;
}

// ---- workspaces ----

function describe(ws) {
  return {
    id: lib.fn('sbx_workspace_id')(ws),
    root: lib.fn('sbx_workspace_root')(ws),
    backend: lib.fn('sbx_workspace_backend')(ws),
    auditPath: lib.fn('sbx_audit_path')(ws),
  };
}

// The open's progress callback, registered once per thread like the output callback: it
// forwards each event to the main thread while the open goes on.
let forwardProgress = null;
let progressCallback = null;

function progressCallbackPointer() {
  if (!progressCallback) {
    progressCallback = koffi.register((userdata, event) => {
      if (!forwardProgress) return;
      const e = koffi.decode(event, 'sbx_open_progress');
      forwardProgress({ phase: e.phase, subject: e.subject, item: e.item, status: e.status,
        current: Number(e.current), total: Number(e.total) });
    }, 'sbx_open_progress_fn *');
  }
  return progressCallback;
}

function open(config, reportProgress, ctx) {
  const out = [null];
  if (!reportProgress) {
    call('sbx_workspace_open', config, out);
    return { handle: out[0], ...describe(out[0]) };
  }
  forwardProgress = (event) => ctx.emit({ progress: event });
  try {
    call('sbx_workspace_open_with', config, {
      size: koffi.sizeof('sbx_open_opts'), progress: progressCallbackPointer(),
      progress_userdata: null,
    }, out);
  } finally {
    forwardProgress = null;
  }
  return { handle: out[0], ...describe(out[0]) };
}

const dataLength = (data) => (data ? data.length : 0);

function managerOpen(config) {
  const out = [null];
  call('sbx_manager_open', config, out);
  return out[0];
}

function managerGet(mgr, userId, agentId, sessionId, workspaceId) {
  const out = [null];
  call('sbx_manager_get', mgr, userId, agentId, sessionId, workspaceId, out);
  return { handle: out[0], ...describe(out[0]) };
}

function managerGetById(mgr, id) {
  const out = [null];
  call('sbx_manager_get_by_id', mgr, id, out);
  return { handle: out[0], ...describe(out[0]) };
}

function managerGc(mgr) {
  const closed = [0];
  call('sbx_manager_gc', mgr, closed);
  return closed[0];
}

const operations = {
  open,
  managerOpen,
  managerGet,
  managerGetById,
  managerRelease: (mgr, ws) => call('sbx_manager_release', mgr, ws),
  managerClose: (mgr, id) => call('sbx_manager_close', mgr, id),
  managerList: (mgr) => callForString('sbx_manager_list', mgr),
  managerGc,
  managerFree: (mgr) => lib.fn('sbx_manager_free')(mgr),
  close: (ws) => call('sbx_workspace_close', ws),
  reset: (ws) => {
    call('sbx_workspace_reset', ws);
    return describe(ws);
  },
  probe: () => callForString('sbx_backends_probe'),
  // number: null from a library before 1.6, which has no sbx_version_number.
  version: () => ({ version: lib.fn('sbx_version')(),
    number: lib.has('sbx_version_number') ? lib.fn('sbx_version_number')() : null,
    abi: lib.fn('sbx_abi_version')() }),
  has: (name) => lib.has(name),

  exec,
  spawn,
  processWait,
  processCloseStdin: (proc) => call('sbx_process_close_stdin', proc),
  processSignal: (proc, sig) => call('sbx_process_signal', proc, sig),
  processKill: (proc) => call('sbx_process_kill', proc),
  processResize: (proc, rows, cols) => call('sbx_process_resize', proc, rows, cols),
  processFree: (proc) => lib.fn('sbx_process_free')(proc),

  readFile,
  writeFile: (ws, path, data, mode, flags) =>
    call('sbx_file_write', ws, path, data, dataLength(data), mode, flags),
  stat,
  listDir: (ws, path) => callForString('sbx_file_list', ws, path),
  mkdir: (ws, path, mode) => call('sbx_file_mkdir', ws, path, mode),
  remove: (ws, path, flags) => call('sbx_file_remove', ws, path, flags),

  tools: (ws) => callForString('sbx_tools_json', ws),
  toolCall: (ws, sessionId, name, args) =>
    callForString('sbx_tool_call_session', ws, sessionId, name, args),
  instructions: (ws) => callForString('sbx_workspace_instructions', ws),
  gitQuarantine: (ws) => callForString('sbx_workspace_git_quarantine', ws),

  addSkill: (ws, hostPath) => callForString('sbx_skill_add', ws, hostPath),
  addSkillArchive: (ws, data, format) =>
    callForString('sbx_skill_add_archive', ws, data, dataLength(data), format),
  removeSkill: (ws, name) => call('sbx_skill_remove', ws, name),
  skills: (ws) => callForString('sbx_skills_json', ws),

  offloadContext: (ws, sessionId, messages) =>
    callForString('sbx_offload_context', ws, sessionId, messages),
  offloadToolResult: (ws, sessionId, toolCallId, data) =>
    callForString('sbx_offload_tool_result', ws, sessionId, toolCallId, data,
      dataLength(data)),
  offloadData: (ws, mediaType, data) =>
    callForString('sbx_offload_data', ws, mediaType, data, dataLength(data)),

  setNetwork: (ws, network) => call('sbx_workspace_set_network', ws, network),
  mcpAdd: (ws, agentId, sessionId, name, config) =>
    call('sbx_mcp_add', ws, agentId, sessionId, name, config),
  mcpRemove: (ws, agentId, sessionId, name) =>
    call('sbx_mcp_remove', ws, agentId, sessionId, name),
  mcpList: (ws, agentId, sessionId) => callForString('sbx_mcp_list', ws, agentId, sessionId),
  mcpTools: (ws, agentId, sessionId, name) =>
    callForString('sbx_mcp_tools', ws, agentId, sessionId, name),
  mcpCall: (ws, agentId, sessionId, name, tool, args) =>
    callForString('sbx_mcp_call', ws, agentId, sessionId, name, tool, args),

  setApprovalHandler: (ws, fnPointer, userdata) =>
    call('sbx_set_approval_handler', ws, fnPointer, userdata),
};

function runJob({ id, op, args }) {
  const ctx = {
    transfer: [],
    emit: (payload, transfer) => parentPort.postMessage({ id, event: payload }, transfer),
  };
  try {
    const value = operations[op](...args, ctx);
    parentPort.postMessage({ id, value }, ctx.transfer);
  } catch (err) {
    const failure = { message: err.message, code: err.code, fnName: err.fnName || err.operation };
    if (typeof err.code !== 'number') failure.stack = err.stack;
    parentPort.postMessage({ id, error: failure });
  }
}

parentPort.on('message', runJob);
