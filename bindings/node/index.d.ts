// Type declarations for the agentsbx Node binding (libagentsbx through koffi).
/// <reference types="node" />
import type { Readable, Writable } from 'node:stream';

/** Error codes of agentsbx.h (positive; errors carry the negation in `code`). */
export declare const errorCodes: Readonly<{
  EPERM: 1; ENOENT: 2; EIO: 5; E2BIG: 7; EBADF: 9; ENOMEM: 12; EACCES: 13; EBUSY: 16;
  EEXIST: 17; ENOTDIR: 20; EISDIR: 21; EINVAL: 22; EFBIG: 27; ENOSPC: 28; ENAMETOOLONG: 36;
  ENOSYS: 38; ENOTEMPTY: 39; ELOOP: 40; ETIMEDOUT: 110;
  ECONFIG: 1001; EBACKEND: 1002; EESCAPE: 1003; EABI: 1004; EPROTO: 1005; ESTATE: 1006;
}>;

export type ErrorCodeName = keyof typeof errorCodes;

/** 'ECONFIG' for -1001 or 1001; undefined for a code the library does not define. */
export declare function codeName(code: number): ErrorCodeName | undefined;

/** A failure reported by libagentsbx (or refused by the binding with the library's code). */
export declare class AgentSbxError extends Error {
  /** The negative code the C function returned (-1001 for ECONFIG). */
  readonly code: number;
  readonly codeName: ErrorCodeName | undefined;
  /** The C function (or binding method) that failed, when known. */
  readonly operation?: string;
  constructor(code: number, message: string, operation?: string);
}

/** The workspace configuration of sbx_workspace_open (an object, or its JSON text). */
/** One item the git guard moved out of a repository of the workspace. */
export interface GitQuarantineItem {
  path: string;
  what: string;
  reason: string;
  moved_to: string | null;
  when: string;
  time: number;
}

/** The git guard's report (Workspace.gitQuarantine). */
export interface GitQuarantine {
  guarded: boolean;
  kernel_binds?: boolean;
  repositories?: number;
  bound?: number;
  full_walks?: boolean;
  items: GitQuarantineItem[];
}

export interface WorkspaceConfig {
  backend?: string;
  workdir?: string;
  id?: string;
  env?: Record<string, string>;
  timeout_ms?: number;
  limits?: {
    max_output?: number; cpu_seconds?: number; memory_bytes?: number;
    file_size_bytes?: number; open_files?: number; processes?: number; pids?: number;
  };
  network?: { mode: 'none' | 'host' };
  baseline?: 'empty' | 'keep' | 'snapshot';
  /** Options of a backend, under its own name. */
  [backendOptions: string]: unknown;
}

/** Bytes the binding accepts: strings are UTF-8. */
export type Data = string | Buffer | ArrayBufferView | ArrayBuffer;

/** Environment additions: {NAME: value}, null/undefined removing NAME; or "NAME=value" / "NAME". */
export type EnvOption = Record<string, string | null | undefined> | string[];

export type OutputStream = 'stdout' | 'stderr';

export interface ExecOptions {
  /** Working directory, relative to the root or absolute under it. */
  cwd?: string;
  env?: EnvOption;
  /** Start from an empty environment: only `env`. */
  clearEnv?: boolean;
  /** Bytes written to stdin, then closed. */
  stdin?: Data;
  /** undefined: the workspace default; null or Infinity: none. */
  timeoutMs?: number | null;
  /** Bytes kept per stream (0: the workspace default). */
  maxOutput?: number;
  /** stderr goes to the stdout stream. */
  mergeStderr?: boolean;
  /** false: keep no output in the result, deliver it only to onOutput. */
  capture?: boolean;
  /** Output as it arrives (up to the cap unless capture is false). */
  onOutput?: (stream: OutputStream, chunk: Buffer) => void;
}

export interface ExecResult {
  /** 0..255, or -1 when a signal killed the command. */
  exitCode: number;
  /** The signal that killed it, or 0. */
  signal: number;
  timedOut: boolean;
  truncated: boolean;
  /** Bytes of stdout (stderr) read and dropped at the output cap: what `truncated` cut. */
  stdoutDropped: number;
  stderrDropped: number;
  durationMs: number;
  stdout: Buffer;
  stderr: Buffer;
}

export interface SpawnOptions {
  cwd?: string;
  env?: EnvOption;
  clearEnv?: boolean;
  mergeStderr?: boolean;
  /** Since 1.7: run on a new terminal (stdout reads it, stderr is merged on it and null). */
  pty?: boolean;
  /** The terminal's size; 0 or absent: 24 rows, 80 columns. */
  rows?: number;
  cols?: number;
}

export interface ProcessStatus {
  /** 0..255, or -1 when a signal killed the command. */
  exitCode: number;
  /** The signal that killed it, or 0. */
  signal: number;
}

/** A command started with Workspace#spawn. */
export declare class Process implements AsyncDisposable {
  private constructor();
  /** The write end of its stdin (null once closeStdin() was called). */
  stdin: Writable | null;
  /** Its stdout; async-iterable. */
  readonly stdout: Readable;
  /** Its stderr, or null when merged into stdout. */
  readonly stderr: Readable | null;
  /** Writes to stdin; rejects with EIO when the command closed its stdin. */
  write(data: string | Uint8Array): Promise<void>;
  /** Closes stdin so the command reads end-of-file. */
  closeStdin(): Promise<void>;
  /** Waits for the end; rejects with ETIMEDOUT after timeoutMs. */
  wait(options?: { timeoutMs?: number }): Promise<ProcessStatus>;
  /** Sends a signal (number, 'SIGTERM' or 'TERM') to the process group. */
  signal(sig: number | string): Promise<void>;
  /** Kills the command and every process it started. */
  kill(): Promise<void>;
  /** Since 1.7: whether the process runs on a terminal (spawn with pty). */
  readonly pty: boolean;
  /** Since 1.7: sets the terminal's size; the command's foreground group gets SIGWINCH. */
  resize(rows: number, cols: number): Promise<void>;
  /** Kills it if it runs and releases the handle and streams. Idempotent. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export interface FileStat {
  type: 'file' | 'dir' | 'symlink' | 'other';
  /** Permission bits. */
  mode: number;
  size: number;
  mtimeMs: number;
  mtime: Date;
}

export interface DirEntry {
  name: string;
  type: 'file' | 'dir' | 'symlink' | 'other';
  size: number;
  /** Seconds since the epoch. */
  mtime: number;
}

export interface WriteFileOptions {
  /** 0: keep the existing file's mode, or 0644 for a new file. */
  mode?: number;
  /** Create missing parent directories. */
  mkdirs?: boolean;
  /** Fail with EEXIST if the file exists. */
  exclusive?: boolean;
}

export interface ToolDefinition {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

export interface ToolResult {
  /** false: a tool error the model should read. */
  ok: boolean;
  output: string;
  metadata: Record<string, unknown>;
}

export interface Skill {
  name: string;
  description: string;
  /** "skills/<dir>" */
  dir: string;
  /** Added by addSkill/addSkillArchive and unchanged since; an untrusted skill (one a command
   * wrote) reaches neither instructions() nor the Skill tool. */
  trusted: boolean;
}

/** What the approval handler is asked (sbx_approval_fn's request). */
export interface ApprovalRequest {
  kind: 'tool' | 'exec';
  class: 'read' | 'write' | 'exec';
  tool?: string;
  session_id?: string;
  arguments?: Record<string, unknown>;
  argv?: string[];
  cwd?: string;
  [key: string]: unknown;
}

/** true/undefined/null: allow; false: deny; a string: deny with that reason for the model. */
export type ApprovalVerdict =
  | boolean | string | undefined | null | { allow: boolean; reason?: string };

export type ApprovalHandler =
  (request: ApprovalRequest) => ApprovalVerdict | Promise<ApprovalVerdict>;

export interface McpScope {
  agentId?: string | null;
  sessionId?: string | null;
}

export interface McpDeclaration {
  name: string;
  agent: string | null;
  session: string | null;
  config: Record<string, unknown>;
  error?: string;
}

/** One progress event of an open (sbx_open_progress): the docker backend's image pull. */
export interface OpenProgress {
  /** "pull": a missing image is being fetched. */
  phase: string;
  /** The image reference. */
  subject: string;
  /** A layer id, or "" for the image as a whole. */
  item: string;
  /** The engine's words: "Pulling fs layer", "Downloading", "Pull complete", ... */
  status: string;
  /** Bytes done and the size; 0 when not known. */
  current: number;
  total: number;
}

export declare class Workspace implements AsyncDisposable {
  private constructor();
  /** Opens a workspace; a bad config rejects with ECONFIG naming the key. */
  static open(config?: WorkspaceConfig | string | null,
    options?: { onProgress?: (event: OpenProgress) => void }): Promise<Workspace>;

  readonly id: string;
  /** The root as commands see it ("/workspace" in a sandbox, the host dir for local). */
  readonly root: string;
  readonly backend: string;
  /** The host path of the audit log, or null. */
  readonly auditPath: string | null;
  /** True once close() was called. */
  readonly closed: boolean;

  /** Runs argv (array) or a /bin/sh -c string and waits for it. */
  exec(command: string | string[], options?: ExecOptions): Promise<ExecResult>;
  /** Starts a long-running command with pipes. */
  spawn(command: string | string[], options?: SpawnOptions): Promise<Process>;

  readFile(path: string): Promise<Buffer>;
  writeFile(path: string, data: Data, options?: WriteFileOptions): Promise<void>;
  stat(path: string): Promise<FileStat>;
  listDir(path?: string): Promise<DirEntry[]>;
  mkdir(path: string, options?: { mode?: number }): Promise<void>;
  remove(path: string, options?: { recursive?: boolean }): Promise<void>;

  tools(): Promise<ToolDefinition[]>;
  /** args: the model's object, or its JSON text (passed verbatim). */
  toolCall(name: string, args?: Record<string, unknown> | string,
    options?: { sessionId?: string | null }): Promise<ToolResult>;
  instructions(): Promise<string>;
  /** What the git guard quarantined so far (since library 1.6). */
  gitQuarantine(): Promise<GitQuarantine>;

  /** Resolves to the skill's name. */
  addSkill(hostPath: string): Promise<string>;
  addSkillArchive(data: Data, format?: 'tar' | 'tar.gz' | 'zip' | null): Promise<string>;
  removeSkill(name: string): Promise<void>;
  skills(): Promise<Skill[]>;

  /** Resolves to "sessions/<sessionId>/context.jsonl". */
  offloadContext(sessionId: string, messages: object | object[] | string): Promise<string>;
  /** Resolves to "sessions/<sessionId>/tool_result-<toolCallId>.txt". */
  offloadToolResult(sessionId: string, toolCallId: string, data: Data): Promise<string>;
  /** Resolves to "workspace:///data/<sha256><ext>". */
  offloadData(mediaType: string, data: Data): Promise<string>;

  /** Replaces the allow/deny lists of an "allowlist" workspace; new connections follow. */
  setNetwork(network: { mode?: string; allow?: string[]; deny?: string[] } | string):
    Promise<void>;
  /** MCP servers, run inside the workspace. agentId/sessionId null: every (add/remove) or
   *  the defaults (list/tools/call). */
  mcpAdd(name: string, config: Record<string, unknown> | string, scope?: McpScope): Promise<void>;
  mcpRemove(name: string, scope?: McpScope): Promise<void>;
  mcpList(scope?: McpScope): Promise<McpDeclaration[]>;
  mcpTools(name: string, scope?: McpScope): Promise<Record<string, unknown>[]>;
  mcpCall(name: string, tool: string, args?: Record<string, unknown> | string,
    scope?: McpScope): Promise<Record<string, unknown>>;

  /**
   * Installs (null: removes) the handler; later calls wait until it took effect. Requests are
   * answered one at a time: the handler must not await an exec, spawn or tool call on a
   * workspace that has a handler.
   */
  setApprovalHandler(handler: ApprovalHandler | null): Promise<void>;

  /** Kills every process and returns the files to the baseline. */
  reset(): Promise<void>;
  /** Ends its processes, waits for running calls, releases the handle. Idempotent. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Every backend the library can reach. */
export declare function probeBackends():
  Promise<Array<{ backend: string; available: boolean; detail: string }>>;

/** The loaded library. */
export declare function libraryInfo(): Promise<{
  version: string;
  /** 0xMMmmpp (1.6.0 is 0x010600); null from a library before 1.6. */
  number: number | null;
  abi: number;
  path: string;
}>;

/** Whether the loaded library has the C function (newer versions add some). */
export declare function hasFunction(name: string): Promise<boolean>;

declare const binding: {
  Workspace: typeof Workspace;
  Process: typeof Process;
  AgentSbxError: typeof AgentSbxError;
  errorCodes: typeof errorCodes;
  codeName: typeof codeName;
  probeBackends: typeof probeBackends;
  libraryInfo: typeof libraryInfo;
  hasFunction: typeof hasFunction;
};
export default binding;

export interface ManagerConfig {
  workspace?: Record<string, unknown>;
  base_dir?: string;
  policy?: 'per_agent' | 'per_session' | 'per_user';
  ttl_s?: number;
  sweep_interval_s?: number;
  max_workspaces?: number;
}

/** Hands out shared workspaces by (user, agent, session); a workspace's close() gives it back. */
export declare class Manager implements AsyncDisposable {
  static open(config?: ManagerConfig | string | null): Promise<Manager>;
  get(userId: string, options?: { agentId?: string | null; sessionId?: string | null;
    workspaceId?: string | null }): Promise<Workspace>;
  getById(id: string): Promise<Workspace>;
  closeWorkspace(id: string): Promise<void>;
  list(): Promise<Record<string, unknown>[]>;
  gc(): Promise<number>;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}
