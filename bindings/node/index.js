'use strict';
// Node binding for libagentsbx: isolated workspaces for AI-agent harnesses.
//
// Every call into the library runs on a worker thread (see lib/threads.js for why), so the
// event loop stays free while commands run; results and errors come back as promises.

const koffi = require('koffi');
const { AgentSbxError, CODES, codeName, bindingError } = require('./lib/errors');
const { locateLibrary } = require('./lib/locate');
const { WorkerPool, ApprovalBridge } = require('./lib/threads');
const { Gate } = require('./lib/gate');
const { Process } = require('./lib/process');

const asyncDispose = Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose');

// Flag values from agentsbx.h.
const EXEC_CLEAR_ENV = 1 << 0;
const EXEC_MERGE_STDERR = 1 << 1;
const EXEC_NO_CAPTURE = 1 << 2;
const WRITE_MKDIRS = 1 << 0;
const WRITE_EXCL = 1 << 1;
const REMOVE_RECURSIVE = 1 << 0;
const STREAM_NAMES = { 1: 'stdout', 2: 'stderr' };
const FILE_TYPES = ['other', 'file', 'dir', 'symlink'];

let pool = null;
let approvals = null;

/** The process-wide pool of call threads, started on first use. */
function threads() {
  if (!pool) {
    const libPath = locateLibrary((name) => {
      try {
        koffi.load(name);
        return true;
      } catch {
        return false;
      }
    });
    try {
      koffi.load(libPath); // here, so a bad path fails with its name and not in a thread
    } catch (err) {
      throw new Error(`cannot load ${libPath}: ${err.message}`);
    }
    pool = new WorkerPool(libPath);
  }
  return pool;
}

function approvalBridge() {
  if (!approvals) approvals = new ApprovalBridge();
  return approvals;
}

// ---- argument conversion ----

/** Strings become C strings: a NUL inside would silently cut them, so it is refused. */
function cString(value, what) {
  if (typeof value !== 'string') throw new TypeError(`${what} must be a string`);
  if (value.includes('\0')) throw bindingError('EINVAL', `${what} contains a NUL character`, what);
  return value;
}

/** Bytes for the library: Buffer or typed array as is, strings as UTF-8. */
function optString(value, what) {
  return value === null || value === undefined ? null : cString(value, what);
}

function bytes(data, what) {
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  throw new TypeError(`${what} must be a string, Buffer or typed array`);
}

const asBuffer = (u8) => Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);

/**
 * env for exec/spawn: {NAME: value} (null or undefined removes NAME) or an array of
 * "NAME=value" / "NAME" entries, as sbx_exec_opts.env takes them.
 */
function envEntries(env) {
  if (env === undefined || env === null) return undefined;
  if (Array.isArray(env)) return env.map((e) => cString(e, 'env entry'));
  return Object.entries(env).map(([name, value]) =>
    cString(value === null || value === undefined ? name : `${name}=${value}`, 'env entry'));
}

/** The command: an argv array for sbx_exec, or a string run by /bin/sh -c. */
function command(argvOrString) {
  if (typeof argvOrString === 'string') return cString(argvOrString, 'command');
  if (!Array.isArray(argvOrString) || argvOrString.length === 0) {
    throw new TypeError('the command must be a non-empty argv array or a shell string');
  }
  return argvOrString.map((a) => cString(String(a), 'argv entry'));
}

function timeoutOption(timeoutMs) {
  if (timeoutMs === undefined) return 0;             // the workspace's default
  if (timeoutMs === null || timeoutMs === Infinity) return -1; // none
  return timeoutMs;
}

function jsonText(value) {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

// ---- the workspace ----

/** A terminal size option: undefined is 0 (the default), else an integer 0..65535. */
function terminalSize(v, name) {
  if (v === undefined || v === null) return 0;
  if (!Number.isInteger(v) || v < 0 || v > 65535) {
    throw bindingError('EINVAL', `${name}: expected an integer 0..65535, got ${v}`, 'spawn');
  }
  return v;
}

class Workspace {
  #handle;
  #info;
  #gate = new Gate();
  #closing = null;
  #approvalKey = 0;
  #configured = Promise.resolve(); // settles once earlier setApprovalHandler calls took effect
  #processes = new Set();

  #release = null; // for a workspace a Manager handed out: gives it back instead of closing

  /** @internal — use Workspace.open() or Manager.get(). */
  constructor(opened, release = null) {
    const { handle, ...info } = opened;
    this.#handle = handle;
    this.#info = info;
    this.#release = release;
  }

  /**
   * Opens a workspace. config is an object or a JSON string (see sbx_workspace_open); an
   * invalid one fails with an AgentSbxError ECONFIG naming the key. options.onProgress, when
   * given, receives each progress event of the open (sbx_workspace_open_with: the docker
   * backend's image pull) as { phase, subject, item, status, current, total }, in order,
   * before the promise settles. It cannot stop the open; if it throws, the workspace is
   * closed again and the open rejects with that error.
   */
  static async open(config = {}, options = {}) {
    const text = config === null ? '' : cString(jsonText(config), 'config');
    const { onProgress } = options ?? {};
    if (onProgress !== undefined && typeof onProgress !== 'function') {
      throw new TypeError('options.onProgress must be a function');
    }
    let callbackError = null;
    const onEvent = onProgress ? ({ progress }) => {
      if (callbackError || !progress) return;
      try {
        onProgress(progress);
      } catch (err) {
        callbackError = err;
      }
    } : undefined;
    const ws = new Workspace(await threads().run('open', [text, Boolean(onProgress)],
      { onEvent }));
    if (callbackError) {
      await ws.close();
      throw callbackError;
    }
    return ws;
  }

  /** The workspace id. */
  get id() { return this.#info.id; }
  /** The workspace root as commands inside see it ("/workspace", or the host dir for local). */
  get root() { return this.#info.root; }
  /** The backend's name. */
  get backend() { return this.#info.backend; }
  /** The host path of the audit log, or null when there is none. */
  get auditPath() { return this.#info.auditPath; }
  /** True once close() was called. */
  get closed() { return this.#closing !== null; }

  /** Runs op(handle, ...args) on a call thread, sharing the workspace with other calls. */
  async #run(op, args = [], options) {
    if (this.#closing) throw bindingError('ESTATE', 'the workspace is closed', op);
    // Outside the gate: a pending reset or close must not wait on a call that waits on this.
    await this.#configured;
    return this.#gate.shared(() => {
      if (!this.#handle) throw bindingError('ESTATE', 'the workspace is closed', op);
      return threads().run(op, [this.#handle, ...args], options);
    });
  }

  // ---- commands ----

  /**
   * Runs a command (argv array, or a string for /bin/sh -c) and resolves to its result, with
   * stdout and stderr as Buffers. onOutput(stream, chunk) receives output as it arrives.
   */
  async exec(argvOrString, opts = {}) {
    const { cwd, env, stdin, timeoutMs, maxOutput, mergeStderr, clearEnv, onOutput } = opts;
    const capture = opts.capture ?? true;
    const cmd = command(argvOrString);
    const input = stdin === undefined || stdin === null ? null : bytes(stdin, 'stdin');
    const options = {
      cwd: cwd === undefined ? undefined : cString(cwd, 'cwd'),
      env: envEntries(env),
      stdin: input,
      timeoutMs: timeoutOption(timeoutMs),
      maxOutput: maxOutput ?? 0,
      flags: (clearEnv ? EXEC_CLEAR_ENV : 0) | (mergeStderr ? EXEC_MERGE_STDERR : 0) |
        (capture ? 0 : EXEC_NO_CAPTURE),
      stream: typeof onOutput === 'function',
    };
    // The command cannot be stopped from here: a callback that throws fails the exec once
    // it has ended, instead of escaping as an uncaught exception.
    let callbackError = null;
    const onEvent = options.stream ? ({ stream, data }) => {
      if (callbackError) return;
      try {
        onOutput(STREAM_NAMES[stream] ?? stream, asBuffer(data));
      } catch (err) {
        callbackError = err;
      }
    } : undefined;
    const r = await this.#run('exec', [cmd, options], { onEvent });
    if (callbackError) throw callbackError;
    return { ...r, stdout: asBuffer(r.stdout), stderr: asBuffer(r.stderr) };
  }

  /**
   * Starts a long-running command with pipes and resolves to a Process: stdout and stderr are
   * Readable streams (stderr is null with mergeStderr), stdin a Writable. With pty: true
   * (library 1.7+) it runs on a new terminal of rows x cols (0: 24 x 80) made where it runs,
   * its controlling terminal: stdout reads the terminal (stderr merged on it, null), stdin
   * types at it, Process#resize changes its size.
   */
  async spawn(argvOrString, opts = {}) {
    const cmd = command(argvOrString);
    const argv = typeof cmd === 'string' ? ['/bin/sh', '-c', cmd] : cmd;
    const options = {
      cwd: opts.cwd === undefined ? undefined : cString(opts.cwd, 'cwd'),
      env: envEntries(opts.env),
      flags: (opts.clearEnv ? EXEC_CLEAR_ENV : 0) | (opts.mergeStderr ? EXEC_MERGE_STDERR : 0),
      pty: Boolean(opts.pty),
      rows: terminalSize(opts.rows, 'rows'),
      cols: terminalSize(opts.cols, 'cols'),
    };
    const spawned = await this.#run('spawn', [argv, options]);
    const proc = new Process(threads(), this.#gate, spawned, (p) => this.#processes.delete(p),
      { pty: options.pty });
    this.#processes.add(proc);
    return proc;
  }

  // ---- files ----

  /** The whole file as a Buffer. */
  async readFile(path) {
    return asBuffer(await this.#run('readFile', [cString(path, 'path')]));
  }

  /**
   * Replaces or creates a file atomically. mode 0 keeps the old mode (0644 for a new file);
   * mkdirs creates missing parents; exclusive fails with EEXIST if the file exists.
   */
  async writeFile(path, data, { mode = 0, mkdirs = false, exclusive = false } = {}) {
    const flags = (mkdirs ? WRITE_MKDIRS : 0) | (exclusive ? WRITE_EXCL : 0);
    await this.#run('writeFile', [cString(path, 'path'), bytes(data, 'data'), mode, flags]);
  }

  /** { type: 'file'|'dir'|'symlink'|'other', mode, size, mtimeMs, mtime } without following a
   * final symlink. */
  async stat(path) {
    const st = await this.#run('stat', [cString(path, 'path')]);
    const mtimeMs = Number(st.mtime_sec) * 1000 + Number(st.mtime_nsec) / 1e6;
    return {
      type: FILE_TYPES[st.type] ?? 'other',
      mode: st.mode,
      size: Number(st.file_size),
      mtimeMs,
      mtime: new Date(mtimeMs),
    };
  }

  /** The directory's entries sorted by name: [{ name, type, size, mtime }]. */
  async listDir(path = '.') {
    return JSON.parse(await this.#run('listDir', [cString(path, 'path')]));
  }

  /** Creates a directory and its missing parents (mode 0 = 0755). */
  async mkdir(path, { mode = 0 } = {}) {
    await this.#run('mkdir', [cString(path, 'path'), mode]);
  }

  /** Removes a file, symlink or empty directory; with recursive, any directory. */
  async remove(path, { recursive = false } = {}) {
    await this.#run('remove', [cString(path, 'path'), recursive ? REMOVE_RECURSIVE : 0]);
  }

  // ---- agent tools ----

  /** The tool definitions for the model: [{ name, description, input_schema }]. */
  async tools() {
    return JSON.parse(await this.#run('tools'));
  }

  /**
   * Runs one tool call. args is the object the model produced (or its JSON text, passed on
   * verbatim). Resolves to { ok, output, metadata }; ok=false is a tool error for the model.
   */
  async toolCall(name, args = {}, { sessionId = null } = {}) {
    const session = sessionId === null || sessionId === undefined
      ? null : cString(sessionId, 'sessionId');
    const text = await this.#run('toolCall',
      [session, cString(name, 'name'), cString(jsonText(args), 'args')]);
    return JSON.parse(text);
  }

  /** The workspace block of a system prompt. */
  async instructions() {
    return this.#run('instructions');
  }

  /** What the git guard moved out of the workspace's git repositories so far (since 1.6):
   * { guarded, kernel_binds, repositories, bound, full_walks, items: [{ path, what, reason,
   * moved_to, when, time }] }. */
  async gitQuarantine() {
    return JSON.parse(await this.#run('gitQuarantine'));
  }

  // ---- skills ----

  /** Copies the skill in host directory hostPath (holding SKILL.md); resolves to its name. */
  async addSkill(hostPath) {
    return this.#run('addSkill', [cString(hostPath, 'hostPath')]);
  }

  /** Adds a skill from a tar, tar.gz or zip archive in memory; format null = guess. */
  async addSkillArchive(data, format = null) {
    const fmt = format === null || format === undefined ? null : cString(format, 'format');
    return this.#run('addSkillArchive', [bytes(data, 'data'), fmt]);
  }

  async removeSkill(name) {
    await this.#run('removeSkill', [cString(name, 'name')]);
  }

  /** [{ name, description, dir }] sorted by name. */
  async skills() {
    return JSON.parse(await this.#run('skills'));
  }

  // ---- context offload ----

  /** Appends messages (one object or an array) to the session's context.jsonl; resolves to
   * its workspace-relative path. */
  async offloadContext(sessionId, messages) {
    return this.#run('offloadContext',
      [cString(sessionId, 'sessionId'), cString(jsonText(messages), 'messages')]);
  }

  /** Stores a tool result; resolves to its workspace-relative path. */
  async offloadToolResult(sessionId, toolCallId, data) {
    return this.#run('offloadToolResult', [cString(sessionId, 'sessionId'),
      cString(toolCallId, 'toolCallId'), bytes(data, 'data')]);
  }

  /** Stores bytes content-addressed; resolves to "workspace:///data/<sha256><ext>". */
  async offloadData(mediaType, data) {
    return this.#run('offloadData', [cString(mediaType, 'mediaType'), bytes(data, 'data')]);
  }

  // ---- network ----

  /**
   * Replaces the allow/deny lists of an "allowlist" workspace (the config's network object);
   * new connections follow them at once, open ones they refuse are closed.
   */
  async setNetwork(network) {
    await this.#run('setNetwork', [cString(jsonText(network), 'network')]);
  }

  // ---- MCP servers (run inside the workspace behind its gateway) ----
  // agentId / sessionId null: for add/remove "every agent / session"; for list, tools and
  // call the default agent and session.

  /** Declares an MCP server: { command, args, env } as MCP clients write it. */
  async mcpAdd(name, config, { agentId = null, sessionId = null } = {}) {
    await this.#run('mcpAdd', [optString(agentId, 'agentId'), optString(sessionId, 'sessionId'),
      cString(name, 'name'), cString(jsonText(config), 'config')]);
  }

  async mcpRemove(name, { agentId = null, sessionId = null } = {}) {
    await this.#run('mcpRemove', [optString(agentId, 'agentId'),
      optString(sessionId, 'sessionId'), cString(name, 'name')]);
  }

  /** [{ name, agent, session, config, error? }] */
  async mcpList({ agentId = null, sessionId = null } = {}) {
    return JSON.parse(await this.#run('mcpList', [optString(agentId, 'agentId'),
      optString(sessionId, 'sessionId')]));
  }

  /** The server's MCP Tool objects (starting it if needed). */
  async mcpTools(name, { agentId = null, sessionId = null } = {}) {
    return JSON.parse(await this.#run('mcpTools', [optString(agentId, 'agentId'),
      optString(sessionId, 'sessionId'), cString(name, 'name')]));
  }

  /** Calls a tool of the server; resolves to the MCP CallToolResult. */
  async mcpCall(name, tool, args = {}, { agentId = null, sessionId = null } = {}) {
    return JSON.parse(await this.#run('mcpCall', [optString(agentId, 'agentId'),
      optString(sessionId, 'sessionId'), cString(name, 'name'), cString(tool, 'tool'),
      cString(jsonText(args), 'args')]));
  }

  // ---- approval ----

  /**
   * Installs handler(request) to approve every tool call, exec and spawn (null removes it).
   * It answers true or undefined to allow, false or a reason string to deny, or
   * { allow, reason }; it may be async. Calls made after this one wait until it took effect.
   */
  setApprovalHandler(handler) {
    if (handler !== null && typeof handler !== 'function') {
      throw new TypeError('the approval handler must be a function or null');
    }
    const previous = this.#configured;
    const apply = (async () => {
      await previous.catch(() => {});
      const bridge = approvalBridge();
      if (this.#approvalKey) bridge.unregister(this.#approvalKey);
      this.#approvalKey = handler ? bridge.register(handler) : 0;
      const pointer = handler ? await bridge.pointer() : null;
      const userdata = handler ? BigInt(this.#approvalKey) : null;
      if (this.#closing) return;
      await this.#gate.shared(() =>
        threads().run('setApprovalHandler', [this.#handle, pointer, userdata]));
    })();
    this.#configured = apply.catch(() => {});
    return apply;
  }

  // ---- lifecycle ----

  /** Kills every process, restarts the sandbox and returns the files to the baseline. */
  async reset() {
    if (this.#closing) throw bindingError('ESTATE', 'the workspace is closed', 'reset');
    await this.#configured;
    this.#info = await this.#gate.exclusive(() => threads().run('reset', [this.#handle]));
  }

  /**
   * Closes the workspace: its processes are killed and released, then the handle. Waits for
   * calls still running (an exec ends at its timeout). Idempotent.
   */
  close() {
    if (!this.#closing) this.#closing = this.#close();
    return this.#closing;
  }

  async #close() {
    await this.#configured;
    await Promise.allSettled([...this.#processes].map((p) => p.close()));
    try {
      await this.#gate.exclusive(() => (this.#release
        ? this.#release(this.#handle) : threads().run('close', [this.#handle])));
    } finally {
      if (this.#approvalKey) approvalBridge().unregister(this.#approvalKey);
      this.#handle = null;
    }
  }

  [asyncDispose]() {
    return this.close();
  }
}

/** Every backend the library can reach: [{ backend, available, detail }]. */
async function probeBackends() {
  return JSON.parse(await threads().run('probe', []));
}

/** The loaded library: { version, number (0xMMmmpp, null before 1.6), abi, path }. */
async function libraryInfo() {
  const info = await threads().run('version', []);
  return { ...info, path: threads().libPath };
}

/** Whether the loaded library has the C function `name` (newer ones add functions). */
async function hasFunction(name) {
  return threads().run('has', [cString(name, 'name')]);
}

/**
 * The workspace manager: hands out workspaces by (user, agent, session) under an isolation
 * policy, with an idle TTL and reattach across processes (sbx_manager_*). A workspace get()
 * returns is shared: its close() gives it back to the manager, whose idle TTL then starts.
 */
class Manager {
  #handle;

  /** @internal — use Manager.open(). */
  constructor(handle) {
    this.#handle = handle;
  }

  /** config: { workspace, base_dir, policy, ttl_s, sweep_interval_s, max_workspaces }. */
  static async open(config = {}) {
    const text = config === null ? '' : cString(jsonText(config), 'config');
    return new Manager(await threads().run('managerOpen', [text]));
  }

  #live(op) {
    if (!this.#handle) throw bindingError('ESTATE', 'the manager is closed', op);
    return this.#handle;
  }

  #borrowed(opened) {
    const mgr = this.#handle;
    return new Workspace(opened, (ws) => threads().run('managerRelease', [mgr, ws]));
  }

  /** The workspace for this conversation, opened (or attached to) once and shared. */
  async get(userId, { agentId = null, sessionId = null, workspaceId = null } = {}) {
    return this.#borrowed(await threads().run('managerGet', [this.#live('get'),
      cString(userId, 'userId'), optString(agentId, 'agentId'),
      optString(sessionId, 'sessionId'), optString(workspaceId, 'workspaceId')]));
  }

  /** A workspace by its full id (for operators: bypasses the per-user scoping). */
  async getById(id) {
    return this.#borrowed(await threads().run('managerGetById', [this.#live('getById'),
      cString(id, 'id')]));
  }

  /** Closes a workspace now and stops its sandbox unless another process holds it. */
  async closeWorkspace(id) {
    await threads().run('managerClose', [this.#live('closeWorkspace'), cString(id, 'id')]);
  }

  /** Every workspace base_dir knows. */
  async list() {
    return JSON.parse(await threads().run('managerList', [this.#live('list')]));
  }

  /** Sweeps now; resolves to how many workspaces it closed. */
  async gc() {
    return threads().run('managerGc', [this.#live('gc')]);
  }

  /** Stops the sweeper and closes this manager's workspaces. Idempotent. */
  async close() {
    const handle = this.#handle;
    this.#handle = null;
    if (handle) await threads().run('managerFree', [handle]);
  }

  [asyncDispose]() {
    return this.close();
  }
}

module.exports = {
  Workspace,
  Manager,
  Process,
  AgentSbxError,
  errorCodes: CODES,
  codeName,
  probeBackends,
  libraryInfo,
  hasFunction,
};
